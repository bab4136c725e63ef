"""The book never shows a function that an assignment asks learners to write.

Every function defined in a solution cell of ``solutions/`` is an answer. The book may explain it
with prose, figures and outputs, but must not include its source (``literalinclude :pyobject:``).
"""
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[2]
NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


def answers(notebook):
    """Names of the functions defined in the notebook's solution cells."""
    names = set()
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            names |= set(re.findall(r"^\s*def (\w+)", "".join(cell["source"]), re.M))
    return names


def shown_in_book():
    """(chapter, included object) for every ``:pyobject:`` in the book."""
    return [(md.name, m.group(1)) for md in sorted((ROOT / "book").glob("*.md"))
            for m in re.finditer(r":pyobject:\s*(\S+)", md.read_text())]


def test_there_are_answers_to_look_for():
    assert len(NOTEBOOKS) >= 9 and all(answers(nb) for nb in NOTEBOOKS)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda nb: nb.parent.name)
def test_book_does_not_include_an_answer(notebook):
    names = answers(notebook)
    shown = [f"{chapter} includes {obj}" for chapter, obj in shown_in_book() if obj.split(".")[-1] in names]
    assert not shown, f"{notebook.parent.name} asks learners to write these: " + "; ".join(shown)
