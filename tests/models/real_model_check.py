"""Check tinydynamo against eager on the real models of ``real_models`` (book chapter 5's table).

    python tests/models/real_model_check.py [--models gpt2,bert] [--fast] [--jobs 2]
        [--out rows.json] [--markdown table.md] [--compile-time] [--strict] [--timeout 600]

For every model and every variant in ``VARIANTS`` (tinydynamo's frontend with each of its
backends, and PyTorch's Dynamo with the ``tinydynamo`` backend) it runs two cells:

- forward: eval mode under ``torch.no_grad()``, every output tensor compared with eager's;
- train: train mode (the tiny configs have no dropout), ``loss.backward()``, the loss and every
  parameter's ``.grad`` compared with eager's. Each run gets a fresh deep copy of the model.

A cell is ``pass``, ``wrong`` (it ran, but compared unequal) or ``error`` (it raised), and
records how many warnings tinydynamo gave (a frame that ran eagerly, an inductor graph that
fell back to eager prims). Each model also gets the graph and graph-break counts of
``tinydynamo.explain`` and of ``torch._dynamo.explain``. Each model runs in its own subprocess
with a timeout, so a crash or a hang costs one row, not the sweep.
"""
import argparse
import concurrent.futures
import contextlib
import copy
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
from torch.utils._pytree import tree_flatten, tree_map  # noqa: E402

import tinydynamo  # noqa: E402

from tinydynamo.testing.real_models import REAL_MODELS, outputs_to_tensors  # noqa: E402

VARIANTS = {  # name -> how to compile a module
    "eager": lambda m: tinydynamo.compile(m, backend="eager"),
    "aot_eager": lambda m: tinydynamo.compile(m, backend="aot_eager"),
    "decomp_eager": lambda m: tinydynamo.compile(m, backend="decomp_eager"),
    "inductor": lambda m: tinydynamo.compile(m, backend="inductor"),
    "torch.compile": lambda m: torch.compile(m, backend="tinydynamo", dynamic=False),
    # every dimension of every input a size symbol from the first compile (chapter 12)
    "eager dynamic": lambda m: tinydynamo.compile(m, backend="eager", dynamic=True),
    "aot_eager dynamic": lambda m: tinydynamo.compile(m, backend="aot_eager", dynamic=True),
    "decomp_eager dynamic": lambda m: tinydynamo.compile(m, backend="decomp_eager", dynamic=True),
    "inductor dynamic": lambda m: tinydynamo.compile(m, backend="inductor", dynamic=True),
    "torch.compile dynamic": lambda m: torch.compile(m, backend="tinydynamo", dynamic=True),
}
# In the sweep only (make test-models), not in the fast subset that make test runs.
SWEEP_ONLY_VARIANTS = {"aot_eager dynamic", "decomp_eager dynamic"}
RTOL = ATOL = 1e-4  # atol scaled by the tensor's largest magnitude, when that is above 1
MODEL_PACKAGES = ("transformers", "diffusers", "torch_geometric", "huggingface_hub")


class Mismatch(AssertionError):
    """A compiled run finished but its results differ from eager's."""


# ---- running one model: eager, compiled, compared ----

def run_forward(model, args, kwargs, compile_fn=None):
    """Every output tensor of one eval-mode, no-grad call on a fresh copy of ``model``."""
    model, args, kwargs = copy.deepcopy((model, args, kwargs))
    model = model.eval()
    with torch.no_grad():
        return outputs_to_tensors((compile_fn(model) if compile_fn else model)(*args, **kwargs))


def run_train(entry, model, args, kwargs, compile_fn=None):
    """(loss, {parameter name: grad}) of one training step on a fresh copy of ``model``."""
    model, args, kwargs = copy.deepcopy((model, args, kwargs))
    model = model.train()
    loss = entry.loss((compile_fn(model) if compile_fn else model)(*args, **kwargs))
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters()}


def assert_same(expected, got, what):
    """Raise :class:`Mismatch` unless ``got`` equals ``expected`` within the tolerances.

    fp32 rounding error grows with the magnitudes summed, so the absolute tolerance is relative to
    the largest element. (MobileNetV2's gradients reach 160; there eager fp32 is 0.003 away from
    fp64, as far as compiled is from eager.)
    """
    if (expected is None) != (got is None):
        raise Mismatch(f"{what}: expected {_describe(expected)}, got {_describe(got)}")
    if expected is None:
        return
    try:
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL * _scale(expected))
    except AssertionError as error:
        raise Mismatch(f"{what}: {_one_line(error)}") from None


def _scale(tensor):
    if not tensor.is_floating_point() or tensor.numel() == 0:
        return 1.0
    return max(1.0, tensor.abs().max().item())


def _describe(x):
    return "None" if x is None else f"a tensor of shape {tuple(x.shape)}"


def check_forward(model, args, kwargs, variant, expected):
    got = run_forward(model, args, kwargs, VARIANTS[variant])
    if len(got) != len(expected):
        raise Mismatch(f"{len(got)} output tensors, eager has {len(expected)}")
    for i, (e, g) in enumerate(zip(expected, got)):
        assert_same(e, g, f"output {i}")


def check_train(entry, model, args, kwargs, variant, expected):
    """Loss and gradients as eager's; or, where they differ, no further from a float64 training
    step than eager's are (rounding, which eager does too: torch._dynamo's accuracy checker asks
    the same). Batch norm over a batch of 2 amplifies rounding: LeViT's first convolution's
    gradient differs from eager by 4x the tolerance, and is 5x closer to float64 than eager's."""
    expected_loss, expected_grads = expected
    loss, grads = run_train(entry, model, args, kwargs, VARIANTS[variant])
    try:
        assert_same(expected_loss, loss, "loss")
        for name, grad in expected_grads.items():
            assert_same(grad, grads[name], f"grad of {name}")
    except Mismatch:
        reference = run_train(entry, *float64_copy(model, args, kwargs))
        if not no_further_from_float64((expected_loss, expected_grads), (loss, grads), reference):
            raise


def float64_copy(model, args, kwargs):
    model, args, kwargs = copy.deepcopy((model, args, kwargs))
    widen = lambda t: t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
    return model.double(), tree_map(widen, args), tree_map(widen, kwargs)


def no_further_from_float64(expected, got, reference):
    """Each compiled tensor within twice eager's largest distance from float64 (plus a tenth of
    ATOL), as torch._dynamo's checker compares errors tensor by tensor, not element by element."""
    for e, g, r in zip(*(tree_flatten(v)[0] for v in (expected, got, reference))):
        if e is None or g is None or r is None:
            continue
        e, g, r = e.double(), g.double(), r.double()
        if _distance(g, r).max() > 2 * _distance(e, r).max() + ATOL / 10 * _scale(r):
            return False
    return True


def _distance(x, reference):
    """|x - reference|; 0 where both are nan or the same inf, inf where only one is nan."""
    same = (x == reference) | (x.isnan() & reference.isnan())
    return torch.where(same, 0.0, (x - reference).abs()).nan_to_num(nan=math.inf)


def explain_counts(explain, model, args, kwargs):
    """Graph and break counts (and the break reasons) of ``explain(model)(*args, **kwargs)``.

    torch._dynamo's ``graph_break_count`` is only ``graph_count - 1`` and its reasons are
    deduplicated, so its breaks are counted where Dynamo logs them instead (``log_graph_break``:
    once per break, the ones that make it skip a frame included), and tinydynamo's are all the
    breaks it lists (its ``graph_break_count`` leaves out the ones with no op before them)."""
    model, args, kwargs = copy.deepcopy((model, args, kwargs))
    logged = []
    with torch.no_grad(), counting_dynamo_breaks(logged):
        result = explain(model.eval())(*args, **kwargs)
    if explain is torch._dynamo.explain:
        return dict(graph_count=result.graph_count, graph_break_count=len(logged), break_reasons=logged)
    return dict(graph_count=result.graph_count, graph_break_count=len(result.break_reasons),
                break_reasons=[_break_reason(r) for r in result.break_reasons])


@contextlib.contextmanager
def counting_dynamo_breaks(logged):
    """Collect the reason of every graph break torch._dynamo logs while the block runs."""
    translator = torch._dynamo.symbolic_convert.InstructionTranslatorBase
    log_graph_break = translator.log_graph_break

    def counting(self, code_options, reason, exc):
        if not exc.logged:
            where = exc.real_stack[-1] if getattr(exc, "real_stack", None) else None
            place = f" ({_short_path(f'{where.filename}:{where.lineno}')})" if where else ""
            logged.append(_one_line(reason) + place)
        return log_graph_break(self, code_options, reason, exc)

    translator.log_graph_break = counting
    try:
        yield
    finally:
        translator.log_graph_break = log_graph_break


def _break_reason(reason):
    where = getattr(reason, "filename", None) and f"{reason.filename}:{reason.lineno}"
    if not where and getattr(reason, "user_stack", None):  # torch._dynamo: traceback.FrameSummary list
        frame = reason.user_stack[-1]
        where = f"{frame.filename}:{frame.lineno}"
    return f"{_one_line(getattr(reason, 'reason', reason))} ({_short_path(where or '?')})"


def reset_compilers():
    tinydynamo.reset()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()


# ---- one cell: run, catch, record ----

def run_cell(check, *args):
    """Run ``check(*args)``; return its status, time, tinydynamo warnings, and any error."""
    reset_compilers()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check(*args)
            cell = dict(status="pass")
        except Mismatch as error:
            cell = dict(status="wrong", message=_one_line(error))
        except Exception as error:  # noqa: BLE001 - every failure is a result here
            cell = dict(status="error", error_type=type(error).__name__, message=_one_line(error),
                        where=user_location(error))
    ours = [_one_line(w.message) for w in caught if str(w.message).startswith("tinydynamo")]
    return dict(cell, seconds=round(time.perf_counter() - start, 2), warnings=len(ours),
                warning_messages=sorted(set(ours))[:3], graphs=graphs_compiled())


def graphs_compiled():
    """How many graphs the cell's compiler compiled: tinydynamo's or torch._dynamo's, whichever ran."""
    return tinydynamo.stats()["graphs"] or torch._dynamo.utils.counters["stats"]["unique_graphs"]


def user_location(error):
    """``package/file.py:line`` of the innermost model-library code (transformers, ...) involved:
    from tinydynamo's user stack, the traceback, or the "Original traceback" in torch's message."""
    for e in _error_chain(error):
        stack = [(f, line) for f, line, _ in getattr(e, "user_stack", [])]
        stack += [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)]
        stack += [(f, int(line)) for f, line in re.findall(r'File "([^"]+)", line (\d+)', str(e))]  # torch's
        inside = [(f, line) for f, line in stack if _short_path(f) != f]
        if inside:
            return f"{_short_path(inside[-1][0])}:{inside[-1][1]}"
    return None


def _error_chain(error):
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = getattr(error, "inner", None) or error.__cause__ or error.__context__


def _short_path(path):
    """A path inside a model package, from the package on (else unchanged)."""
    for package in MODEL_PACKAGES:
        marker = f"site-packages/{package}/"
        if marker in path:
            return package + "/" + path.split(marker, 1)[1]
    return path


def _one_line(text, limit=300):
    """``text``'s lines joined into one, cut at ``limit`` characters."""
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip())[:limit]


# ---- one model, in a worker process ----

def check_model(name, variants, compile_time=False, save=lambda row: None):
    """The row of one model; ``save(row)`` is called after every step, so a timeout keeps
    what finished."""
    entry = REAL_MODELS[name]
    row = dict(model=name, package=entry.package, category=entry.category, fast=entry.fast, cells={})
    model, args, kwargs = entry.build()
    expected_forward = run_forward(model, args, kwargs)
    expected_train = run_train(entry, model, args, kwargs)
    row["explain"] = {
        "tinydynamo": _explain_or_error(tinydynamo.explain, model, args, kwargs),
        "torch._dynamo": _explain_or_error(torch._dynamo.explain, model, args, kwargs),
    }
    save(row)
    for variant in variants:
        row["cells"][variant] = dict(
            forward=run_cell(check_forward, model, args, kwargs, variant, expected_forward),
            train=run_cell(check_train, entry, model, args, kwargs, variant, expected_train))
        save(row)
    if compile_time:
        row["torch_inductor_forward"] = run_cell(run_forward, model, args, kwargs, torch.compile)
    row["first_failure"] = first_failure(row)
    save(row)
    return row


def _explain_or_error(explain, model, args, kwargs):
    reset_compilers()
    try:
        return explain_counts(explain, model, args, kwargs)
    except Exception as error:  # noqa: BLE001
        return dict(error=f"{type(error).__name__}: {_one_line(error)}")


def first_failure(row):
    for variant, cells in row["cells"].items():
        for phase, cell in cells.items():
            if cell["status"] != "pass":
                return f"{variant} {phase}: {failure_reason(cell)}"
    return None


def failure_reason(cell):
    if cell["status"] == "wrong":
        return f"WRONG {cell['message']}"
    where = f" at {cell['where']}" if cell.get("where") else ""
    return f"{cell['error_type']}{where}: {cell['message']}"


# ---- the sweep: one subprocess per model ----

def run_in_subprocess(name, variants, compile_time, strict, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        row_file = os.path.join(tmp, "row.json")
        command = [sys.executable, os.path.abspath(__file__), "--worker", name, "--row-file", row_file,
                   "--variants", ",".join(variants)] + (["--compile-time"] if compile_time else [])
        env = dict(os.environ, TRANSFORMERS_VERBOSITY="error")
        if strict:
            env["TINYDYNAMO_STRICT"] = "1"
        if compile_time:  # cold kernel caches, so that the first call compiles everything
            env.update(TINYDYNAMO_CACHE_DIR=os.path.join(tmp, "tinydynamo"),
                       TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "torch"))
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
            problem = None if done.returncode == 0 else f"worker exited with {done.returncode}: " + \
                _one_line((done.stderr.strip().splitlines() or [""])[-1])
        except subprocess.TimeoutExpired:
            problem = f"timed out after {timeout} s"
        row = _read_row(row_file, name)
    if problem:
        _mark_unfinished(row, variants, problem)
    return row


def _read_row(row_file, name):
    entry = REAL_MODELS[name]
    if os.path.exists(row_file):
        with open(row_file) as f:
            return json.load(f)
    return dict(model=name, package=entry.package, category=entry.category, fast=entry.fast, cells={})


def _mark_unfinished(row, variants, problem):
    """Cells the worker did not reach get status ``error`` with ``problem`` as the message."""
    unfinished = dict(status="error", error_type="Worker", message=problem)
    for variant in variants:
        cells = row["cells"].setdefault(variant, {})
        for phase in ("forward", "train"):
            cells.setdefault(phase, unfinished)
    row["first_failure"] = first_failure(row)


def sweep(names, variants, jobs=1, compile_time=False, strict=False, timeout=600):
    """The rows of ``names``, in order; each model runs in a subprocess, ``jobs`` at a time."""
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(run_in_subprocess, n, variants, compile_time, strict, timeout) for n in names]
        for future in concurrent.futures.as_completed(futures):
            row = future.result()
            print(f"{row['model']:18s} {row.get('first_failure') or 'all pass'}", flush=True)
    return [f.result() for f in futures]


# ---- the report ----

MARKS = {"pass": "✓", "wrong": "✗", "error": "E"}


def _mark(cell):
    """✓ pass, ~ pass with tinydynamo warnings (eager fallbacks), ✗ wrong result, E error."""
    if cell["status"] == "pass" and cell.get("warnings"):
        return "~"
    return MARKS[cell["status"]]


def _counts(explain):
    if "error" in explain:
        return "E"
    return f"{explain['graph_count']}/{explain['graph_break_count']}"


def _compile_seconds(row):
    ours = row["cells"].get("inductor", {}).get("forward", {}).get("seconds", "-")
    theirs = row.get("torch_inductor_forward", {})
    return f"{ours} / {theirs['seconds'] if theirs.get('status') == 'pass' else 'E'}"


def markdown(rows, variants):
    timed = any("torch_inductor_forward" in row for row in rows)
    header = ["model", "package", "category"] + [f"{v} fwd/train" for v in variants] + \
        ["tinydynamo graphs/breaks", "torch._dynamo graphs/breaks"] + \
        (["first forward s, inductor: ours / torch's"] if timed else []) + ["first failure"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [f"{_mark(row['cells'][v]['forward'])}/{_mark(row['cells'][v]['train'])}" for v in variants]
        explain = row.get("explain", {})
        counts = [_counts(explain.get(k, {"error": 1})) for k in ("tinydynamo", "torch._dynamo")]
        seconds = [_compile_seconds(row)] if timed else []
        failure = _one_line(row.get("first_failure") or "", 200).replace("|", "\\|")
        lines.append("| " + " | ".join([row["model"], row["package"], row["category"], *cells, *counts,
                                        *seconds, failure]) + " |")
    lines += ["", "Variants: `tinydynamo.compile(model, backend=...)` for eager, aot_eager, decomp_eager and "
              "inductor; `torch.compile(model, backend=\"tinydynamo\")` for torch.compile.",
              "✓ pass, ~ pass with tinydynamo warnings (a frame ran eagerly, or inductor fell back), "
              "✗ wrong result, E error."]
    return "\n".join(lines) + "\n" + failure_summary(rows)


def failure_summary(rows):
    """The distinct failure reasons over every cell, most frequent first."""
    groups = {}
    for row in rows:
        for variant, cells in row["cells"].items():
            for phase, cell in cells.items():
                if cell["status"] != "pass":
                    groups.setdefault(failure_reason(cell), []).append(f"{row['model']} {variant} {phase}")
    lines = ["", "## Failure reasons", ""] + ([] if groups else ["None."])
    for reason, where in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- **{len(where)}×** {reason.replace('|', '/')} — e.g. {', '.join(where[:3])}")
    return "\n".join(lines) + "\n"


# ---- command line ----

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--fast", action="store_true", help="only the models marked fast")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of " + ", ".join(VARIANTS))
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--markdown", help="write the table as Markdown here")
    parser.add_argument("--jobs", type=int, default=1, choices=(1, 2))
    parser.add_argument("--timeout", type=int, default=600, help="seconds per model")
    parser.add_argument("--compile-time", action="store_true",
                        help="also time torch.compile's first forward (default inductor; slow); cold caches")
    parser.add_argument("--strict", action="store_true", help="run the workers with TINYDYNAMO_STRICT=1")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: check one model
    parser.add_argument("--row-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = set((args.models or "").split(",")) - set(REAL_MODELS) - {""}
    unknown |= set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown models or variants: {', '.join(sorted(unknown))}")
    return args


def _save_to(path):
    def save(row):
        with open(path, "w") as f:
            json.dump(row, f)
    return save


def main(argv=None):
    args = parse_args(argv)
    variants = args.variants.split(",")
    if args.worker:
        check_model(args.worker, variants, args.compile_time, _save_to(args.row_file))
        return
    names = args.models.split(",") if args.models else [n for n, m in REAL_MODELS.items() if m.fast or not args.fast]
    rows = sweep(names, variants, args.jobs, args.compile_time, args.strict, args.timeout)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    table = markdown(rows, variants)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    print(table)


if __name__ == "__main__":
    main()
