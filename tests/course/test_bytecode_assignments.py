"""The assignments about bytecode and the frame hook, graded on the Python that runs the tests (3.11, 3.12 or 3.13):
the solution notebook gets full marks and the untouched release none.

They grade in-process (``tinydynamo.course.checking``), without nbgrader, which ``make
check-assignments`` runs on the main venv's Python; ``make test-py312`` and ``make test-py313`` run
this file under those versions.
"""
import dis
import opcode

import _opcode
import pytest

from tinydynamo.course.checking import grade_cells, release_cells, solution_cells

# The ones whose answers depend on the version: bytecode, the frame callback, resume functions.
BYTECODE_ASSIGNMENTS = ["a01_bytecode", "a02_frame_callback", "a03_opcodes", "a05_resume_functions"]


@pytest.fixture(autouse=True)
def stack_effect_restored():
    """a01's notebook hides dis.stack_effect for the rest of the process: it comes back after each test."""
    saved = dis.stack_effect
    yield
    dis.stack_effect = opcode.stack_effect = _opcode.stack_effect = saved


def _lost(results):
    return [f"{r.grade_id}: {r.score:g}/{r.points:g} {r.message[:2000]}" for r in results if r.score < r.points]


@pytest.mark.parametrize("assignment", BYTECODE_ASSIGNMENTS)
def test_the_solution_gets_full_marks(assignment):
    """Under nbgrader's own cell limit (300 s): a03's zoo cell takes about 80 s on two cores, and
    past the checker's 120 s default when the machine is busy."""
    results = grade_cells(solution_cells(assignment), timeout=300)
    assert results and not _lost(results), "\n".join(_lost(results))


@pytest.mark.parametrize("assignment", BYTECODE_ASSIGNMENTS)
def test_the_untouched_release_gets_nothing(assignment):
    scored = [r.grade_id for r in grade_cells(release_cells(assignment)) if r.score]
    assert not scored, f"the untouched release scores on {scored}"
