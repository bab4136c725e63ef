"""``make check-assignments``: the release is regenerable, leak-free and graded as intended.

For every assignment in ``solutions/`` this proves that regenerating the release gives exactly the
committed ``assignments/``, that no hidden test or solution reaches the release, that the solution
notebook autogrades to full marks, and that the untouched release autogrades to zero.
"""
import concurrent.futures
import contextlib
import filecmp
import io
import json
import sys
import tempfile
from pathlib import Path

from . import nbgrader_tools as nbt


def compare_release(generated, committed):
    """Differences between the freshly generated release and the committed one."""
    problems = []
    if not committed.is_dir():
        return [f"{committed} is missing: run `make assignments`"]
    comparison = filecmp.dircmp(generated, committed)
    problems += [f"only in the regenerated release: {name}" for name in comparison.left_only]
    problems += [f"only in the committed release: {name}" for name in comparison.right_only]
    for name in comparison.common_files:
        if (generated / name).read_bytes() != (committed / name).read_bytes():
            problems.append(f"{committed / name} differs from what solutions/ generates: run `make assignments`")
    return problems


def hidden_test_lines(source_nb):
    """Every line inside a hidden-test block of the source notebook."""
    lines, inside = [], False
    for cell in json.loads(Path(source_nb).read_text())["cells"]:
        for line in "".join(cell["source"]).splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and line.strip():
                lines.append(line.strip())
    return lines


def find_leaks(source_dir, release_dir):
    problems = []
    for release_nb in sorted(release_dir.glob("*.ipynb")):
        text = release_nb.read_text()
        release_lines = {line.strip() for cell in json.loads(text)["cells"] for line in "".join(cell["source"]).splitlines()}
        problems += [f"{release_nb.name} contains the marker {m!r}" for m in nbt.HIDDEN_MARKERS if m in text]
        leaked = [line for line in hidden_test_lines(source_dir / release_nb.name) if line in release_lines]
        problems += [f"{release_nb.name} contains a hidden test line: {line!r}" for line in leaked]
    return problems


def check_assignment(name, tmp):
    course = nbt.scratch_course(tmp)
    generated = nbt.generate(course, name)
    problems = compare_release(generated, nbt.REPO / "assignments" / name)
    problems += find_leaks(course / "solutions" / name, generated)
    solution = nbt.autograde(course, name, "solution", sorted((course / "solutions" / name).glob("*.ipynb")))
    untouched = nbt.autograde(course, name, "untouched", sorted(generated.glob("*.ipynb")))
    print(f"{name}: solution notebook\n{nbt.format_table(solution)}")
    print(f"{name}: untouched release scores {sum(s.score for s in untouched):g}/"
          f"{sum(s.max_score for s in untouched):g}")
    problems += [f"solution loses points on {s.test}: {s.message}" for s in solution if s.score < s.max_score]
    problems += [f"untouched release scores on {s.test}" for s in untouched if s.score > 0]
    if not solution:
        problems.append("no graded tests found")
    return problems


def checked(name):
    """(what checking ``name`` printed, its problems): one assignment, in a scratch course of its own."""
    with tempfile.TemporaryDirectory(prefix=f"check-{name}-") as tmp, \
            contextlib.redirect_stdout(io.StringIO()) as printed:
        problems = check_assignment(name, tmp)
    return printed.getvalue(), problems


def main():
    if not (nbt.REPO / "solutions").is_dir():
        print("assignment checks: this is a learner's repository (no solutions/): nothing to check")
        return 0
    names, failures = nbt.assignment_names(), {}
    # Two assignments at a time: grading is mostly one process waiting on its notebook's kernel.
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        for name, (printed, problems) in zip(names, pool.map(checked, names)):
            print(printed, end="", flush=True)
            if problems:
                failures[name] = problems
    for name, problems in failures.items():
        print(f"\nFAILED {name}:", *problems, sep="\n  ")
    print("assignment checks:", "FAILED" if failures else f"all {len(names)} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
