"""Collects the OpInfo sweep's results; with ``TINYDYNAMO_OPINFO_REPORT=path/stem`` set, the
session writes ``stem.json`` (every result) and ``stem.md`` (counts per status and dtype, and every
sample that did not pass)."""
import collections
import json
import os

import pytest

RESULTS = []


@pytest.fixture
def record():
    return RESULTS.extend


def summary(results):
    counts = collections.Counter(r.status for r in results)
    by_dtype = collections.defaultdict(collections.Counter)
    for r in results:
        by_dtype[r.dtype][r.status] += 1
    return {
        "ops": len({r.op for r in results}),
        "samples": len(results),
        "status": dict(counts),
        "by_dtype": {d: dict(c) for d, c in sorted(by_dtype.items())},
    }


def markdown(results, totals):
    from sweep import STATUSES

    lines = [f"# OpInfo sweep: {totals['ops']} ops, {totals['samples']} samples", "",
             "| dtype | " + " | ".join(STATUSES) + " |", "|---" * (len(STATUSES) + 1) + "|"]
    for dtype, counts in totals["by_dtype"].items():
        lines.append(f"| {dtype} | " + " | ".join(str(counts.get(s, 0)) for s in STATUSES) + " |")
    lines.append("| all | " + " | ".join(str(totals["status"].get(s, 0)) for s in STATUSES) + " |")
    lines += ["", "## Samples that did not pass", ""]
    lines += [f"- `{r.op}` {r.dtype} #{r.sample} **{r.status}**: {r.detail[:300]}"
              for r in results if r.status not in ("pass", "expected_error")]
    return "\n".join(lines) + "\n"


def pytest_sessionfinish(session):
    stem = os.environ.get("TINYDYNAMO_OPINFO_REPORT")
    if not stem or not RESULTS:
        return
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    totals = summary(RESULTS)
    with open(stem + ".json", "w") as f:
        json.dump({"summary": totals, "results": [vars(r) for r in RESULTS]}, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write(markdown(RESULTS, totals))
