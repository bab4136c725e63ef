"""The grading rules of tinydynamo.course.checking: no delegation, complete feedback, mutants."""
import importlib
import types

import pytest

from tinydynamo.course.checking import (
    REFERENCE_DIR, Cell, Failures, ForbiddenCallError, LearnerTimeout, Mutant, StaleMutant, TimedCalls, call_learner,
    grade_cells, hidden_table, mutate, no_delegation, not_run, report, time_limit,
)
from tinydynamo.dynamo.bytecode import decode as grabbed_early


def learner_answer(code):
    return grabbed_early(code)  # delegates through a name imported before grading


def test_a_delegating_learner_is_refused_even_through_a_name_imported_early():
    with pytest.raises(ForbiddenCallError, match="bytecode.decode.*Write it yourself"):
        with no_delegation(grabbed_early):
            learner_answer(learner_answer.__code__)
    assert learner_answer(learner_answer.__code__), "outside the block the reference runs again"


def test_a_swallowed_refusal_is_raised_again_when_the_block_ends():
    def sneaky(code):
        try:
            return grabbed_early(code)
        except ForbiddenCallError:
            return grabbed_early(code)  # the hook is gone now, but the block remembers

    with pytest.raises(ForbiddenCallError), no_delegation(grabbed_early):
        sneaky(sneaky.__code__)


def test_a_second_copy_of_the_reference_module_is_refused_too():
    import importlib.util
    import sys

    import tinydynamo.dynamo.bytecode as bytecode

    spec = importlib.util.spec_from_file_location("tinydynamo.dynamo.bytecode_copy", bytecode.__file__)
    copy = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
    try:
        spec.loader.exec_module(copy)
    finally:
        del sys.modules[spec.name]
    with pytest.raises(ForbiddenCallError, match="bytecode.decode"), no_delegation(grabbed_early):
        copy.decode(learner_answer.__code__)
    assert copy.decode(learner_answer.__code__)


def test_the_original_behind_the_trampoline_is_refused_to_the_learner():
    import gc

    def find_original():  # the learner digs the reference's own function out of the grader's state
        return next(f for f in gc.get_objects() if isinstance(f, types.FunctionType) and f is not grabbed_early
                    and f.__code__.co_name == "decode" and f.__code__.co_filename == grabbed_early.__code__.co_filename)

    with pytest.raises(ForbiddenCallError, match="bytecode.decode"), no_delegation(grabbed_early):
        find_original()(learner_answer.__code__)


def test_a_callable_that_reaches_the_reference_without_code_of_its_own_is_refused():
    import functools

    class Inherited(types.SimpleNamespace):
        decode = staticmethod(grabbed_early)

    for callable_ in (grabbed_early, functools.partial(grabbed_early), Inherited().decode):
        with pytest.raises(ForbiddenCallError, match="bytecode.decode"), no_delegation(grabbed_early):
            call_learner(callable_, learner_answer.__code__)
    with no_delegation(grabbed_early):
        assert call_learner(lambda code: code.co_name, learner_answer.__code__) == "learner_answer"


def test_a_refused_builtin_is_refused_in_a_thread_and_after_a_reload():
    import concurrent.futures
    import dis

    import _opcode

    def in_a_thread():
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(dis.stack_effect, dis.opmap["POP_TOP"]).result()

    with pytest.raises(ForbiddenCallError, match="stack_effect"), no_delegation(dis.stack_effect):
        in_a_thread()
    with pytest.raises(ForbiddenCallError, match="stack_effect"), no_delegation(dis.stack_effect):
        importlib.reload(_opcode).stack_effect(dis.opmap["POP_TOP"])
    assert in_a_thread() == -1


def test_not_run_refuses_to_run_a_function_or_a_copy_of_its_code():
    import types

    def f(x):
        return x * 2

    def reads(fn):
        return len(fn.__code__.co_code)

    def runs_a_copy(fn):
        return types.FunctionType(fn.__code__.replace(co_name="copy"), {})(3)

    with not_run(f, "(read it)"):
        assert reads(f)
    with pytest.raises(ForbiddenCallError, match="read it"), not_run(f, "(read it)"):
        runs_a_copy(f)
    assert runs_a_copy(f) == 6


def test_the_reference_pipeline_still_calls_the_function():
    import tinydynamo

    def f(x):
        return x + 1

    with no_delegation(grabbed_early):
        tinydynamo.reset()
        assert tinydynamo.compile(f, backend="eager")(1.0) == 2.0


def test_report_lists_every_failure_in_full():
    long = "x" * 500
    with pytest.raises(AssertionError) as info:
        report([f"case {i}: {long}" for i in range(20)], ["other: two\nlines"])
    message = str(info.value)
    assert message.startswith("21 case(s) failed")
    assert all(f"case {i}: {long}" in message for i in range(20)) and "..." not in message
    assert "- other: two\n  lines" in message
    report([], [])


def test_failures_go_on_after_a_failing_case():
    failures = Failures()
    for name in ("a", "b", "c"):
        with failures.case(name):
            assert name == "b", f"{name} is not b"
    with failures.case("d"):
        {}["missing"]
    with pytest.raises(AssertionError, match=r"(?s)3 case.*a: a is not b.*c: c is not b.*d: KeyError"):
        failures.report()


def test_a_mutant_must_match_exactly_once():
    cells = [Cell("x = 1\ny = 1\n", solution=True), Cell("assert x == 1, 'case x'", "t", points=2)]
    with pytest.raises(StaleMutant):
        mutate(cells, Mutant("twice", "= 1", "= 2", "case x"))
    with pytest.raises(StaleMutant):
        mutate(cells, Mutant("test cells are not mutated", "== 1", "== 2", "case x"))
    mutated, _ = mutate(cells, Mutant("wrong x", "x = 1", "x = 2", "case x"))
    [result] = grade_cells(mutated)
    assert (result.score, result.points) == (0, 2) and "case x" in result.message


def test_a_builtin_is_refused_under_any_name():
    import _opcode
    import dis

    with pytest.raises(ForbiddenCallError, match="stack_effect"), no_delegation(dis.stack_effect):
        _opcode.stack_effect(dis.opmap["POP_TOP"])
    assert dis.stack_effect(dis.opmap["POP_TOP"]) == -1


def test_blocks_nest_and_the_code_comes_back():
    code = grabbed_early.__code__
    with pytest.raises(ForbiddenCallError), no_delegation(grabbed_early):
        with pytest.raises(ForbiddenCallError), no_delegation(grabbed_early):
            learner_answer(learner_answer.__code__)
        assert grabbed_early.__code__ is not code, "the outer block still refuses it"
    assert grabbed_early.__code__ is code


def test_a_closure_is_refused_to_the_learner_and_served_to_the_reference():
    def make_counter(start):
        def count(step=1, *, twice=False):
            return start + step * (2 if twice else 1)
        return count

    count = make_counter(10)
    reference_caller = {}
    exec(compile("def call(f, *a, **k):\n    return f(*a, **k)\n", f"{REFERENCE_DIR}/pipeline.py", "exec"),
         reference_caller)
    with pytest.raises(ForbiddenCallError), no_delegation(count):
        assert reference_caller["call"](count, 2, twice=True) == 14
        count()
    assert count(3) == 13


def test_a_hidden_table_refuses_its_entries_in_every_copy_of_its_module_and_comes_back():
    import operator

    module = types.ModuleType("ops")
    module.__file__ = "/somewhere/ops.py"
    module.OPS, module.BY = [operator.add, operator.sub], {"+": operator.add}
    copy_ = types.ModuleType("ops_copy")  # what spec_from_file_location and exec_module make
    copy_.__file__, copy_.OPS = module.__file__, [operator.add, operator.sub]
    with pytest.raises(ForbiddenCallError, match=r"ops\.OPS\[1\]"), hidden_table(module, "OPS"), hidden_table(module, "BY"):
        copy_.OPS[1](2, 1)
    with pytest.raises(ForbiddenCallError, match=r"ops\.BY\['\+'\]"), hidden_table(module, "BY"):
        module.BY["+"](2, 1)
    assert module.OPS == copy_.OPS == [operator.add, operator.sub] and module.BY == {"+": operator.add}


@pytest.mark.parametrize("name", ["checking", "a01", "a02", "a03", "a04", "a05", "a06", "a07", "a08", "a09", "a10"])
def test_course_modules_export_no_reference_answers(name):
    module = importlib.import_module(f"tinydynamo.course.{name}")
    assert not [attr for attr in vars(module) if attr.startswith("reference_")]


def test_a_learner_time_limit_stops_a_loop_and_gives_back_the_enclosing_limit():
    with pytest.raises(LearnerTimeout, match="the call ran past its time limit of 0.2 s"):
        with time_limit(0.2, "the call"):
            while True:
                pass
    looping = Cell("while True:\n    pass\n", "test_loop", points=1)
    checked = Cell("from tinydynamo.course.checking import LearnerTimeout, time_limit\n"
                   "try:\n    with time_limit(0.2, 'it'):\n        while True:\n            pass\n"
                   "except LearnerTimeout:\n    pass\n"
                   "while True:\n    pass\n", "test_inner_then_loop", points=1)
    # a cell's limit still ends a loop that a checker's `except Exception` would swallow, and an inner
    # limit hands the cell's limit back when it ends
    [swallowed] = grade_cells([Cell("try:\n    while True:\n        pass\nexcept Exception:\n    pass\n",
                                    "test_swallow", points=1)], timeout=0.5)
    assert swallowed.score == 0 and "CellTimeout" in swallowed.message
    results = grade_cells([looping, checked], timeout=0.5)
    assert [r.score for r in results] == [0, 0] and all("CellTimeout" in r.message for r in results)


def test_timed_calls_stop_a_loop_then_run_no_more_calls():
    def loops_on_zero(n):
        while n == 0:
            pass
        return n

    timed = TimedCalls(loops_on_zero, 0.2)
    assert timed(1) == 1
    with pytest.raises(LearnerTimeout, match="it ran past its time limit of 0.2 s"):
        timed(0)
    with pytest.raises(LearnerTimeout, match="not run: an earlier call ran past its time limit"):
        timed(1)


def test_a_graders_helper_serves_the_grader_but_not_the_learners_code_that_calls_it():
    """The graders live in tinydynamo too, so a grader's helper that runs the reference for its own
    comparison (a06._reference) served the learner's code that called it: full marks for a learner
    who handed it the reference partitioner. While the learner's code runs, graders are looked
    through, so the call is the learner's."""
    from tinydynamo.aot.partitioners import default_partition
    from tinydynamo.course import a06

    recorder = types.SimpleNamespace(joint="not a graph", num_fwd_outputs=1)
    with no_delegation(default_partition), pytest.raises(AttributeError):  # served: it runs, on a str
        a06._reference(default_partition, recorder)
    with pytest.raises(ForbiddenCallError, match="default_partition"), no_delegation(default_partition):
        call_learner(lambda: a06._reference(default_partition, recorder))
