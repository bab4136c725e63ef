"""The grader survives a learner's broken notebook and says what went wrong.

A learner's notebook may raise, loop forever, print megabytes or kill its kernel. None of that may
crash grading: the affected tests score zero with a message, and the other tests are still graded.
"""
import json

import pytest

from tinydynamo.course import nbgrader_tools as nbt

ASSIGNMENT = "a01_bytecode"


def _cells_by_id(nb):
    return {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in nb["cells"]}


def _learner_notebook(tmp_path, replacements):
    """The release notebook with some solution cells replaced; part 1 is solved correctly."""
    release = json.loads((nbt.REPO / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    solution = json.loads((nbt.REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    cells = _cells_by_id(release)
    cells["stack_effect"]["source"] = _cells_by_id(solution)["stack_effect"]["source"]
    for grade_id, source in replacements.items():
        cells[grade_id]["source"] = source
    path = tmp_path / "learner" / f"{ASSIGNMENT}.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(release))
    return path


def _grade(tmp_path, notebook):
    (tmp_path / "course").mkdir()
    course = nbt.scratch_course(tmp_path / "course")
    nbt.generate(course, ASSIGNMENT)
    return {s.test: s for s in nbt.autograde(course, ASSIGNMENT, "learner", [notebook], timeout=8)}


def test_raising_looping_and_flooding_cells_are_contained(tmp_path):
    notebook = _learner_notebook(tmp_path, {
        "max_stack_depth": "def max_stack_depth(code):\n    raise RuntimeError('my own bug')\n",
        "loads_and_stores": "print('x' * 10_000_000)\ndef loads_and_stores(code):\n    return set(), set()\n",
        "symbolic_return": "def symbolic_return(fn):\n    while True:\n        pass\n",
    })
    scores = _grade(tmp_path, notebook)
    assert scores["test_stack_effect_example"].score == 1
    assert scores["test_stack_effect_stdlib"].score == 2, "a correct part still gets its points"
    assert scores["test_max_stack_depth_example"].score == 0
    assert "my own bug" in scores["test_max_stack_depth_example"].message
    assert scores["test_loads_and_stores_example"].score == 0
    assert "expected" in scores["test_loads_and_stores_example"].message
    assert scores["test_symbolic_return_examples"].score == 0
    assert "time limit" in scores["test_symbolic_return_examples"].message


def test_a_dead_kernel_costs_only_the_remaining_tests(tmp_path):
    notebook = _learner_notebook(tmp_path, {
        "symbolic_return": "import os\nos._exit(1)\n",
    })
    scores = _grade(tmp_path, notebook)
    assert scores["test_stack_effect_stdlib"].score == 2, "cells before and after the crash are graded"
    assert scores["test_loads_and_stores_example"].score == 0
    assert scores["test_symbolic_return_examples"].score == 0


def test_failure_message_names_the_case(tmp_path):
    notebook = _learner_notebook(tmp_path, {
        "max_stack_depth": "def max_stack_depth(code):\n    return 1\n",
    })
    message = _grade(tmp_path, notebook)["test_max_stack_depth_example"].message
    assert "_example" in message and "expected co_stacksize = 5" in message
