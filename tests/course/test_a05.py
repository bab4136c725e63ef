"""Assignment a05's checkers: the reference resume functions pass, each kind of broken one is
caught before CPython runs it, with a message that names the function and what is wrong.
"""
import dataclasses

import pytest
import torch

import tinydynamo
from tinydynamo.course import a05
from tinydynamo.dynamo import resume_execution
from tinydynamo.dynamo.bytecode import assemble, copy_instructions, create_instruction, decode
from tinydynamo.dynamo.resume_execution import ContinueExecutionCache

from course_solutions import solution_functions

SOLUTION = solution_functions("a05_resume_functions")
create_resume, resume_prologue = SOLUTION["create_resume"], SOLUTION["resume_prologue"]


def test_the_reference_passes_every_check():
    names = list(a05.CASES)
    assert a05.check_prologues(resume_prologue, names) == []
    assert a05.check_resume_codes(create_resume, names) == []
    assert a05.check_functions(create_resume, names) == []


def test_the_corpus_needs_nulls_cells_free_variables_and_grad_mode_blocks():
    requests = [request for _, request in a05.requests_of(list(a05.CASES))]
    assert any(request.nulls for request in requests)
    assert any(request.code.co_cellvars for request in requests)
    assert any(request.code.co_freevars for request in requests)
    assert any(inst.exn_tab_entry for request in requests for inst in decode(request.code)[request.target:])


def test_the_swap_is_undone_and_caches_are_cleared():
    with a05.swapped_create_resume(create_resume) as recorder:
        assert resume_execution.create_resume is recorder
        tinydynamo.compile(a05.print_first, backend="eager")(torch.ones(2))
        assert ContinueExecutionCache.count() == 1
    assert resume_execution.create_resume is a05.create_resume and ContinueExecutionCache.count() == 0


def variant(change):
    """create_resume, with ``change(prologue, instructions, arguments)`` applied before assembly."""

    def create(code, target, stack_size, nulls, argnames):
        instructions = copy_instructions(decode(code))
        prologue = resume_prologue(code, instructions[target], stack_size, nulls)
        params = [f"___stack{i}" for i in range(stack_size - len(nulls))] + list(argnames)
        prologue, instructions, params = change(prologue, instructions, params)
        return assemble(prologue + instructions, code, co_argcount=len(params), co_posonlyargcount=0,
                        co_kwonlyargcount=0, co_flags=code.co_flags & ~0x0C,
                        co_varnames=tuple(params) + tuple(v for v in code.co_varnames if v not in params))

    return create


def no_nulls(prologue, instructions, params):
    return [inst for inst in prologue if inst.opname != "PUSH_NULL"], instructions, params


def locals_first(prologue, instructions, params):
    stack = [p for p in params if p.startswith("___stack")]
    return prologue, instructions, [p for p in params if p not in stack] + stack


def no_exception_table(prologue, instructions, params):
    for inst in instructions:
        inst.exn_tab_entry = None
    return prologue, instructions, params


def jumps_one_too_far(prologue, instructions, params):
    jump = prologue[-1]
    jump.target = instructions[instructions.index(jump.target) + 1]
    return prologue, instructions, params


def no_cells(prologue, instructions, params):
    return [inst for inst in prologue if inst.opname != "MAKE_CELL"], instructions, params


def drops_the_start(prologue, instructions, params):
    return prologue, instructions[instructions.index(prologue[-1].target):], params


@pytest.mark.parametrize("change, names, message", [
    (no_nulls, ["print_inside_a_call"], "PUSH_NULL"),
    (locals_first, ["print_in_the_middle"], "its parameters must be exactly"),
    (no_exception_table, ["print_inside_no_grad"], "exception handler"),
    (jumps_one_too_far, ["print_first"], "not to the target"),
    (no_cells, ["cell_used_after_the_break"], "MAKE_CELL"),
    (drops_the_start, ["print_in_the_middle"], "keep all of them"),
])
def test_each_kind_of_broken_resume_function_is_caught_and_named(change, names, message):
    broken = variant(change)
    for failures in (a05.check_resume_codes(broken, names), a05.check_functions(broken, names)):
        assert failures and all(f.startswith(f"{names[0]}") for f in failures)
        assert message in failures[0]


def test_a_learner_exception_names_the_line_and_the_resume_function():
    def create(code, target, stack_size, nulls, argnames):
        return {}["missing"]

    (failure,) = a05.check_functions(create, ["print_first"])
    assert "your create_resume raised KeyError (in create, line" in failure
    assert "the resume function of print_first() at instruction" in failure


def test_a_wrong_prologue_is_described():
    def prologue(code, target, stack_size, nulls):
        return [create_instruction("RESUME", arg=0), create_instruction("JUMP_FORWARD", target=target)]

    failures = a05.check_prologues(prologue, ["print_in_the_middle"])
    assert len(failures) == 1 and "should push ['LOAD_FAST ___stack0']" in failures[0]


def test_differences_name_what_differs():
    expected = a05.Observed(("returned", torch.ones(2)), "a\n", ((), {}), True)
    actual = dataclasses.replace(expected, printed="", grad_mode=False)
    assert a05.differences("f", actual, expected) == [
        "f: printed '', eager prints 'a\\n'", "f: left grad mode False, eager leaves True"]


def test_the_reference_is_refused():
    [failure] = a05.check_functions(resume_execution.create_resume, ["print_first"])
    assert failure == ("print_first: create_resume is tinydynamo's own create_resume, not yours: "
                       "write it yourself")


def test_a_create_resume_that_delegates_is_refused():
    def delegates(code, target, stack_size, nulls, argnames):
        return resume_execution.create_resume(code, target, stack_size, nulls, argnames)

    [failure] = a05.check_functions(delegates, ["print_first"])
    assert "your create_resume raised ForbiddenCallError (in delegates, line" in failure
    assert "the reference's own answer" in failure
