"""The dynamo package's dependencies go one way (chapter 3's reading order of the trackers).

Each tracker module imports only the modules before it in ``READING_ORDER``, and only at the top
of the file: a tracker that must wrap a value it reached calls ``tx.build``, so no import inside
a function holds a cycle together.
"""
import ast
import pathlib

import pytest

import tinydynamo.dynamo

DYNAMO = pathlib.Path(tinydynamo.dynamo.__file__).parent
READING_ORDER = ["base", "constant", "lists", "dicts", "sets", "pytree", "functions", "tensor", "ndarray",
                 "distributed", "futures", "nn_module", "torch", "misc", "builtin", "builder"]


def relative_imports(tree):
    """(module name, node) of every ``from .x import ...`` in the tree."""
    return [(node.module, node) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module]


def test_reading_order_names_every_tracker_module():
    modules = {p.stem for p in (DYNAMO / "variables").glob("*.py")} - {"__init__"}
    assert modules == set(READING_ORDER)


@pytest.mark.parametrize("name", READING_ORDER)
def test_tracker_imports_only_earlier_modules(name):
    tree = ast.parse((DYNAMO / "variables" / f"{name}.py").read_text())
    for module, node in relative_imports(tree):
        assert READING_ORDER.index(module) < READING_ORDER.index(name), \
            f"variables/{name}.py imports .{module} (line {node.lineno}), which comes later"


@pytest.mark.parametrize("path", sorted(DYNAMO.rglob("*.py")), ids=lambda p: str(p.relative_to(DYNAMO)))
def test_no_imports_inside_functions(path):
    tree = ast.parse(path.read_text())
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = [n for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom))]
            assert not inner, f"{path.name}: {function.name} imports at line {inner[0].lineno}"
