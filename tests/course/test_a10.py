"""Assignment a10's checkers: the cases' expectations hold for the reference and agree with PyTorch's
own Dynamo, the solution passes, and each kind of unsound or imprecise range analysis or policy is
caught with a message naming the expression or the case.
"""
import textwrap

import pytest
import sympy
import torch
import torch._dynamo
from torch._dynamo.utils import counters as torch_counters

from tinydynamo.course import a10
from tinydynamo.course.checking import ForbiddenCallError
from tinydynamo.symbolic_shapes import ShapeEnv

from course_solutions import solution_functions

s0, s1 = a10.s0, a10.s1


@pytest.fixture(scope="module")
def solution():
    return solution_functions("a10_dynamic_shapes")


# --------------------------------------------------------------------------- the expectations
def test_the_reference_range_analysis_is_sound_on_every_case():
    env = ShapeEnv()
    for expr in a10.BOUNDS_EXAMPLES + a10.BOUNDS_CASES:
        assert a10.bounds_counterexample(expr, *env.bounds(expr)) is None, expr
    for condition in a10.STATIC_EXAMPLES + a10.STATIC_CASES:
        answer = env.static_value(condition)
        assert answer is None or a10.decision_counterexample(condition, answer) is None, condition


def test_the_cases_decide_something_and_leave_something_to_guards():
    answers = [ShapeEnv().static_value(c) for c in a10.STATIC_EXAMPLES + a10.STATIC_CASES]
    assert answers.count(True) >= 5 and answers.count(False) >= 5 and answers.count(None) >= 5


# Cases whose source uses no tinydynamo mark: PyTorch's Dynamo runs them as they are. Not "new_rank":
# after a change in the number of dimensions, PyTorch makes every dimension dynamic, where tinydynamo
# (and the assignment's spec) starts that source's history afresh.
TORCH_COMPARABLE = ["batch_sizes", "dynamic_true", "sequence_lengths", "one_dim_then_another",
                    "dynamic_false", "parameters_stay_static", "int_argument", "halves", "pairs", "chunks"]


def torch_compiles(case):
    """Per call of the case: did PyTorch's Dynamo convert the frame again?"""
    torch._dynamo.reset()
    module = a10.user_module(f"torch_{case.name}", a10.PRELUDE + textwrap.dedent(case.source))
    compiled = torch.compile(getattr(module, case.target), backend="eager", dynamic=case.dynamic)
    converted = []
    for call in case.calls:
        before = torch_counters["frames"]["ok"]
        compiled(*eval(f"({call},)", vars(module)))
        converted.append(torch_counters["frames"]["ok"] > before)
    torch._dynamo.reset()
    return converted


@pytest.mark.parametrize("name", TORCH_COMPARABLE)
def test_pytorch_dynamo_compiles_where_the_reference_does(name):
    case = a10.CASES[name]
    assert torch_compiles(case) == [o.compiled for o in a10.expected_outcomes(case)]


def test_gpt2_compiles_as_often_as_torch_compile():
    case = a10.CASES["gpt2_lengths"]
    assert sum(torch_compiles(case)) == sum(o.compiled for o in a10.expected_outcomes(case)) == 2


# --------------------------------------------------------------------------- the solution
def test_the_solution_passes_every_case(solution):
    bounds, static_value = solution["bounds"], solution["static_value"]
    history, dims = solution["SizeHistory"], solution["dims_to_trace"]
    assert a10.check_bounds(bounds, a10.BOUNDS_EXAMPLES + a10.BOUNDS_CASES) == []
    assert a10.check_static_value(static_value, a10.STATIC_EXAMPLES + a10.STATIC_CASES) == []
    assert a10.check_range_analysis(bounds, static_value, a10.RANGE_EXAMPLES + a10.RANGE_CASES) == []
    assert a10.check_policy(history, dims, a10.POLICY_EXAMPLES + a10.POLICY_CASES) == []
    assert a10.check_together(bounds, static_value, history, dims) == []


# --------------------------------------------------------------------------- mistakes
def test_an_unsound_interval_is_named_with_the_sizes_that_contradict_it():
    [failure] = a10.check_bounds(lambda expr: (sympy.Integer(3), sympy.oo), [s0])
    assert failure == "bounds(s0) returned (3, oo), but s0 = 2 makes it 2: UNSOUND"


def test_a_loose_interval_is_named():
    [failure] = a10.check_bounds(lambda expr: (-sympy.oo, sympy.oo), [s0 * s1])
    assert failure == "bounds(s0 * s1) returned (-oo, oo): TOO LOOSE, expected an interval within (4, oo)"


def test_an_unsound_decision_runs_a_stale_graph_and_is_named(solution):
    def always_greater(condition):
        return True if isinstance(condition, sympy.Gt) else solution["static_value"](condition)

    failures = a10.check_range_analysis(solution["bounds"], always_greater, [a10.CASES["branch_on_size"]])
    assert any("static_value(s0 > 2) returned True, but s0 = 2 makes it False: UNSOUND" in f for f in failures)
    assert any(f.startswith("branch_on_size, call branch_on_size(torch.randn(2))") for f in failures)


def test_an_undecided_condition_is_a_needless_guard(solution):
    failures = a10.check_range_analysis(solution["bounds"], lambda condition: None, [a10.CASES["halves"]])
    assert any("NEEDLESS GUARD(S)" in f and "s0 >= 2" not in f.split("NEEDLESS GUARD(S)")[1].split(":")[0]
               for f in failures)
    [direct] = a10.check_static_value(lambda condition: None, [sympy.Eq(s0, 1)])
    assert direct == "static_value(s0 == 1) returned None: NEEDLESS GUARD, it is False for every size (each symbol " \
                     "is at least 2)"


def test_a_policy_that_traces_nothing_recompiles_and_is_named(solution):
    failures = a10.check_policy(solution["SizeHistory"], lambda *args: set())
    assert failures[0] == ("batch_sizes, call scale_rows(torch.randn(6, 5)): the graph's input 0 is float32[6, 5], "
                           "expected float32[s0, 5] (a symbol s0, s1... is a dynamic size)")
    assert ("batch_sizes, call scale_rows(torch.randn(8, 5)): NEEDLESS RECOMPILE: the reference does not compile "
            "here, yours does") in failures


def test_a_symbol_for_a_size_one_is_refused(solution):
    [failure] = a10.check_policy(solution["SizeHistory"], lambda policy, history, name, t, state: set(range(t.dim())),
                                 [a10.CASES["dynamic_true_size_one"]])
    assert failure.startswith("dynamic_true_size_one: dims_to_trace(True, history, \"L['x']\", <tensor of shape "
                              "(3, 1)>, is_module_state=False) returned [0, 1]: dimension(s) [1] have size [1]")


def loop_forever():
    while True:
        pass


@pytest.mark.parametrize("bounds, message", [
    (lambda expr: 1 / 0, "bounds(s0) raised ZeroDivisionError (in <lambda>"),
    (lambda expr: None, "bounds(s0) returned None: return (lo, hi)"),
    (lambda expr: (5, 2), "bounds(s0) returned (5, 2): not an interval"),
    (lambda expr: loop_forever(), "bounds(s0) raised LearnerTimeout (in loop_forever, line "),
], ids=["raises", "none", "reversed", "loops"])
def test_errors_name_the_expression(bounds, message, monkeypatch):
    monkeypatch.setattr(a10, "TIME_LIMIT", 0.5)
    failures = a10.check_bounds(bounds, [s0])
    assert len(failures) == 1 and message in failures[0]
    [in_dynamo, *_] = a10.check_range_analysis(bounds, None, [a10.CASES["halves"]])
    assert in_dynamo.startswith("halves: bounds(")


def test_a_history_that_raises_is_named(solution):
    class Broken:
        def update(self, source_name, shape):
            raise KeyError(source_name)

        def dynamic_dims(self, source_name):
            return set()

    [failure] = a10.check_policy(Broken, solution["dims_to_trace"], [a10.CASES["batch_sizes"]])
    assert failure.startswith("batch_sizes: SizeHistory.update(\"L['x']\", (4, 5)) raised KeyError")


def test_a_policy_that_returns_none_is_told_what_to_return(solution):
    [failure] = a10.check_policy(solution["SizeHistory"], lambda *args: None, [a10.CASES["batch_sizes"]])
    assert failure == ("batch_sizes: dims_to_trace(None, history, \"L['x']\", <tensor of shape (4, 5)>, "
                       "is_module_state=False) returned None: return a set of dimensions (ints)")


def test_delegation_is_refused():
    with pytest.raises(ForbiddenCallError, match="ShapeEnv.bounds"):
        a10.check_bounds(lambda expr: ShapeEnv().bounds(expr), [s0])


def test_the_course_module_does_not_answer_for_the_learner():
    with pytest.raises(ForbiddenCallError, match="a10._expected_bounds"):
        a10.check_bounds(lambda expr: a10._expected_bounds(expr), [s0])


def test_the_reference_comes_back_even_when_the_block_raises():
    saved = ShapeEnv.bounds, ShapeEnv.static_value, a10.automatic_dynamic.FrameState, a10.output_graph.dynamic_dims
    with pytest.raises(ZeroDivisionError):
        with a10.swapped(bounds=lambda e: (0, 1), static_value=lambda c: None, history=dict,
                         dims_to_trace=lambda *a: set()):
            1 / 0
    assert (ShapeEnv.bounds, ShapeEnv.static_value, a10.automatic_dynamic.FrameState,
            a10.output_graph.dynamic_dims) == saved


def test_cases_print_their_code_and_calls():
    text = str(a10.CASES["one_dim_then_another"])
    assert "def total(x):" in text and "total(torch.randn(6, 7))" in text
