"""Assignment a04's checkers: every declared expectation holds for the reference guards and for
PyTorch's own Dynamo, the solution passes and installs exactly the reference's guards, and each
kind of unsound or imprecise guard generation is caught with a message naming the case, the
change, and what went wrong.
"""
import textwrap
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters as torch_counters

import tinydynamo
from tinydynamo.course import a04
from tinydynamo.dynamo.guards import Guard
from tinydynamo.dynamo.variables.builder import VariableBuilder

from test_a02 import notebook_functions

SOLUTION = Path(a04.__file__).resolve().parents[3] / "solutions" / "a04_guards" / "a04_guards.ipynb"
FUNCTION_CASES = [case for name, case in a04.CASES.items() if not name.startswith("zoo_")]


@pytest.fixture(scope="module")
def solution():
    return notebook_functions(SOLUTION)


# --------------------------------------------------------------------------- the expectations
def test_the_reference_guards_meet_every_declared_expectation():
    assert a04.check_cases(None, FUNCTION_CASES) == []


def dynamo_recompiles(case):
    """Per call of the case: did PyTorch's Dynamo (dynamic=False) convert the frame again?"""
    torch._dynamo.reset()
    module = a04.user_module(f"torch_{case.name}", a04.PRELUDE + textwrap.dedent(case.source))
    converted = []
    with torch.set_grad_enabled(torch.is_grad_enabled()):  # a case may switch grad mode
        exec(case.setup, vars(module))
        compiled = torch.compile(getattr(module, case.target), backend="eager", dynamic=False)
        for statement in ["", *(statement for statement, _ in case.steps)]:
            exec(statement, vars(module))
            before = torch_counters["frames"]["ok"]
            compiled(*eval(f"({case.args},)", vars(module)))
            converted.append(torch_counters["frames"]["ok"] > before)
    torch._dynamo.reset()
    return converted


@pytest.mark.parametrize("case", FUNCTION_CASES, ids=lambda case: case.name)
def test_pytorch_dynamo_agrees_with_the_declared_expectations(case):
    expected = [a04.RECOMPILE] + [expect for _, expect in case.steps]
    for (statement, _), expect, converted in zip([("first call", None)] + case.steps, expected,
                                                 dynamo_recompiles(case)):
        if expect != a04.EITHER:
            assert converted == (expect == a04.RECOMPILE), f"{case.name}, after {statement}"


# --------------------------------------------------------------------------- the solution
def test_the_solution_passes_every_case(solution):
    assert a04.check_tensor_guards(solution["tensor_guards"], a04.TENSOR_EXAMPLES + a04.TENSOR_CASES) == []
    assert a04.check_constant_guards(solution["constant_guards"], a04.CONSTANT_EXAMPLES + a04.CONSTANT_CASES) == []
    assert a04.check_object_guards(solution["object_guards"], a04.OBJECT_EXAMPLES + a04.OBJECT_CASES) == []
    assert a04.check_zoo(solution["guards_for"]) == []


@pytest.mark.parametrize("name", ["cnn", "tiny_gpt"])
def test_the_solution_installs_exactly_the_reference_guards(solution, name):
    model, inputs = a04.make(name)
    with a04.swapped_guards(None):
        reference = tinydynamo.explain(model)(*inputs)
    with a04.swapped_guards(solution["guards_for"]):
        learner = tinydynamo.explain(model)(*inputs)
    assert set(reference.guards[0].splitlines()) == set(learner.guards[0].splitlines())


# --------------------------------------------------------------------------- unsound guards
def only(kind):
    return lambda source, value: [Guard(source, kind, type(value) if kind == "TYPE_MATCH" else value)]


def test_tensor_guards_on_the_type_alone_run_stale_graphs():
    failures = a04.check_tensor_guards(only("TYPE_MATCH"), a04.TENSOR_EXAMPLES + a04.TENSOR_CASES)
    assert failures[0] == ("add_one, after `x = torch.randn(4)`: STALE GRAPH: the cached graph ran although "
                           "the change matters (expected a recompile); its result equals eager here by luck, "
                           "but a graph specialised on the old inputs is not safe to run")
    assert any(f.startswith("flatten, after `x = torch.randn(3, 4)`: STALE GRAPH") and "the compiled call raised"
               in f for f in failures)
    assert any(f.startswith("branch_on_layout, after `x = torch.randn(3, 2).t()`: STALE GRAPH") and
               "differs from eager" in f for f in failures)


def test_constants_guarded_by_type_run_stale_graphs():
    failures = a04.check_constant_guards(only("TYPE_MATCH"))
    assert failures[0].startswith("scale_by, after `k = 3`: STALE GRAPH: the cached graph ran although the change "
                                  "matters (expected a recompile); the result differs from eager")


def test_a_tuple_of_constants_guarded_by_its_length_is_stale(solution):
    def by_length(source, value):
        if type(value) is tuple:
            return [Guard(source, "TYPE_MATCH", tuple), Guard(source, "LENGTH_CHECK", len(value))]
        return solution["constant_guards"](source, value)

    [failure] = a04.check_constant_guards(by_length, a04.CONSTANT_CASES)
    assert failure.startswith("reshape_to, after `shape = (4, 3)`: STALE GRAPH")


def test_dicts_without_their_keys_are_stale(solution):
    def without_keys(source, value):
        return solution["constant_guards"](source, value)[:1]

    failures = a04.check_constant_guards(without_keys, a04.CONSTANT_CASES)
    assert any(f.startswith("weighted_sum, after `weights['c'] = 3.0`: STALE GRAPH") for f in failures)


def test_functions_modules_and_classes_guarded_by_type_are_stale():
    failures = a04.check_object_guards(only("TYPE_MATCH"), a04.OBJECT_EXAMPLES + a04.OBJECT_CASES)
    stale = {f.split(",")[0] for f in failures if "STALE GRAPH" in f}
    assert {"global_function", "python_module", "class_argument", "builtin_argument", "partial"} <= stale


def test_modules_without_guards_are_stale():
    failures = a04.check_object_guards(lambda source, value: [])
    assert any(f.startswith("submodule, after `model.act = nn.Sigmoid()`: STALE GRAPH") for f in failures)


# --------------------------------------------------------------------------- imprecise guards
def test_tensors_guarded_by_identity_recompile_needlessly():
    failures = a04.check_tensor_guards(only("ID_MATCH"))
    assert failures[0].startswith("add_one, after `x = torch.randn(3)`: NEEDLESS RECOMPILE: nothing the graph "
                                  "depends on changed")


def test_the_failed_check_is_named():
    def no_grad_flag(source, value):
        properties = {"type": type(value), "dtype": value.dtype, "device": value.device, "shape": tuple(value.shape),
                      "stride": tuple(value.stride()), "requires_grad": False}
        return [Guard(source, "TENSOR_MATCH", properties)]

    failures = a04.check_tensor_guards(no_grad_flag, a04.TENSOR_CASES)
    assert any(f.startswith("branch_on_requires_grad, after `x = torch.randn(3, requires_grad=True)`: NEEDLESS "
                            "RECOMPILE") for f in failures)
    [failure] = [f for f in failures if f.startswith("module_parameters")]
    assert failure.startswith("module_parameters, after `model.fc.weight = nn.Parameter(torch.randn(4, 3))`: "
                              "NEEDLESS RECOMPILE")
    assert "failed check(s): type(L_self_fc_weight) is ___Parameter" in failure
    assert "# TENSOR_MATCH L['self'].fc.weight; " in failure


def test_objects_guarded_by_identity_recompile_needlessly():
    failures = a04.check_object_guards(only("ID_MATCH"), a04.OBJECT_EXAMPLES + a04.OBJECT_CASES)
    needless = {f.split(",")[0] for f in failures if "NEEDLESS RECOMPILE" in f}
    assert {"config_object", "partial", "bound_method"} <= needless


def test_tuples_of_tensors_compared_as_constants_recompile_needlessly():
    failures = a04.check_constant_guards(only("CONSTANT_MATCH"), a04.CONSTANT_CASES)
    assert any(f.startswith("tuple_of_tensors, after `pair = (torch.randn(3), torch.randn(3))`: NEEDLESS "
                            "RECOMPILE") for f in failures)


def test_the_zoo_catches_identity_guards_on_inputs(solution):
    def identity_for_tensors(source, value):
        if isinstance(value, torch.Tensor):
            return [Guard(source, "ID_MATCH", value)]
        return solution["guards_for"](source, value)

    [failure, *_] = a04.check_zoo(identity_for_tensors, ["mlp"])
    assert failure.startswith("zoo_mlp, after `inputs = tuple(t.clone() for t in inputs)`: NEEDLESS RECOMPILE")
    assert "# ID_MATCH L['x']" in failure


# --------------------------------------------------------------------------- learner errors
@pytest.mark.parametrize("guards_for, message", [
    (lambda source, value: 1 / 0, "guards_for(G['act'], <function value>) raised ZeroDivisionError (in <lambda>"),
    (lambda source, value: None, "guards_for(G['act'], <function value>) returned None: return a list of Guard objects"),
    (lambda source, value: [Guard(source, "SHAPE", value)], "the kind must be one of ID_MATCH, TYPE_MATCH"),
    (lambda source, value: [Guard(None, "ID_MATCH", value)], "it guards None, not G['act']"),
    (lambda source, value: ["ID_MATCH"], "'ID_MATCH': not a Guard"),
], ids=["raises", "none", "unknown_kind", "other_source", "not_a_guard"])
def test_errors_name_the_source_and_the_problem(guards_for, message):
    failures = a04.check_object_guards(guards_for)
    assert len(failures) == len(a04.OBJECT_EXAMPLES)
    assert failures[0].startswith("global_function: ") and message in failures[0]


def test_a_tensor_match_without_its_keys_is_refused():
    [failure] = a04.check_tensor_guards(lambda source, value: [Guard(source, "TENSOR_MATCH", {"shape": value.shape})])
    assert failure == ("add_one: guards_for(L['x'], <Tensor value>) returned Guard(L['x'], 'TENSOR_MATCH', <dict>): a "
                       "TENSOR_MATCH value is a dict with the keys type, dtype, device, shape, stride, requires_grad")


def test_the_reference_comes_back_even_when_the_block_raises():
    reference_wrap = VariableBuilder.wrap
    with pytest.raises(ZeroDivisionError):
        with a04.swapped_guards(only("ID_MATCH")):
            assert VariableBuilder.wrap is not reference_wrap
            1 / 0
    assert VariableBuilder.wrap is reference_wrap


def test_cases_print_their_code_and_changes():
    text = str(a04.CASES["global_constant"])
    assert "SCALE = 2.0" in text and "SCALE = 5.0" in text and "-> recompile" in text
