"""Assignment a01's checkers: the solution passes, and the rules they enforce hold."""
import dis
import json
import opcode
from pathlib import Path

import _opcode
import pytest

from tinydynamo.course import a01

SOLUTION = Path(a01.__file__).resolve().parents[3] / "solutions" / "a01_bytecode" / "a01_bytecode.ipynb"


@pytest.fixture(scope="module")
def solution():
    """The namespace of the solution notebook's cells other than tests; dis.stack_effect comes back."""
    saved = dis.stack_effect
    namespace = {}
    try:
        for cell in json.loads(SOLUTION.read_text())["cells"]:
            if cell["cell_type"] == "code" and not cell["metadata"]["nbgrader"]["grade"]:
                exec(compile("".join(cell["source"]), str(SOLUTION), "exec"), namespace)
        yield namespace
    finally:
        dis.stack_effect = opcode.stack_effect = _opcode.stack_effect = saved


def test_the_solution_passes_every_checker(solution):
    assert a01.check_stack_effect(solution["stack_effect"], a01.stdlib_codes(), a01.every_opcode_instructions()) == []
    assert a01.check_stack_effect(solution["stack_effect"], instructions=a01.other_opcode_instructions()) == []
    assert a01.check_max_stack_depth(solution["max_stack_depth"], a01.stdlib_codes() + a01.version_codes()) == []
    assert a01.check_rejects_jumps(solution["max_stack_depth"], a01.branching_codes()) == []
    assert a01.check_loads_and_stores(solution["loads_and_stores"], a01.namespace_codes() + a01.version_codes()) == []
    assert a01.check_symbolic_return(solution["symbolic_return"], range(50)) == []


def test_the_synthetic_instructions_cover_every_straight_line_opcode():
    assert {i.opname for i in a01.every_opcode_instructions()} == a01.STRAIGHT_LINE_OPCODES & set(dis.opmap)
    assert not {i.opname for i in a01.other_opcode_instructions()} & a01.STRAIGHT_LINE_OPCODES


# What sets each version's straight-line bytecode apart from the others'.
OWN_OPCODES = {
    (3, 11): {"PRECALL", "KW_NAMES", "LOAD_METHOD", "LIST_TO_TUPLE", "FORMAT_VALUE"},
    (3, 12): {"KW_NAMES", "FORMAT_VALUE", "RETURN_CONST", "BINARY_SLICE", "STORE_SLICE", "LOAD_SUPER_ATTR",
              "CALL_INTRINSIC_1"},
    (3, 13): {"CALL_KW", "LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "SET_FUNCTION_ATTRIBUTE", "CONVERT_VALUE",
              "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "TO_BOOL", "RETURN_CONST", "LOAD_SUPER_ATTR"},
}


def test_the_version_cases_are_straight_line_and_show_what_this_version_compiles_differently():
    codes = a01.version_codes()
    assert sorted(code.co_name for code in codes) == ["<lambda>", "m", "m", "set"]
    assert OWN_OPCODES[a01.VERSION] <= {ins.opname for code in codes for ins in dis.get_instructions(code)}


def test_rejected_code_is_described_by_what_it_has():
    reasons = {a01.why_not_straight_line(code) for code in a01.branching_codes()}
    assert "has an exception table" in reasons and any(r.startswith("jumps (") for r in reasons)
    assert a01.why_not_straight_line(a01.stdlib_codes()[0]) is None


def test_max_stack_depth_cannot_read_co_stacksize():
    code = a01.stdlib_codes()[0]
    [failure] = a01.check_max_stack_depth(lambda code: code.co_stacksize, [code])
    # The blanked copy's co_stacksize is 0 (3.13 raises it to 1), not the real one.
    assert failure.endswith(f"expected co_stacksize = {code.co_stacksize}") and code.co_stacksize > 1


def test_generated_functions_rebind_parameters_with_augmented_assignments():
    sources = [a01.random_function_source(seed) for seed in range(1000, 1300)]
    assert any(" p0 += " in s or " p0 -= " in s or " p0 *= " in s or " p0 /= " in s for s in sources)
