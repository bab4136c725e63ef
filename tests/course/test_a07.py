"""a07's checkers: the solution passes them, and typical mistakes fail with a message that names
the op, the sample and what went wrong."""
import json

import pytest
import torch

from tinydynamo.course import a07
from tinydynamo.course import nbgrader_tools as nbt
from tinydynamo.prims import decomposition_table
from tinydynamo.prims import decompositions, refs
from tinydynamo.prims.primitives import prims

aten = torch.ops.aten
NOTEBOOK = nbt.REPO / "solutions" / "a07_decompositions" / "a07_decompositions.ipynb"
FUNCTIONS = {
    aten.relu.default: "relu",
    aten.sigmoid.default: "sigmoid",
    aten.addcmul.default: "addcmul",
    aten._softmax.default: "softmax",
    aten._softmax_backward_data.default: "softmax_backward_data",
    aten.native_layer_norm.default: "native_layer_norm",
    aten.native_layer_norm_backward.default: "native_layer_norm_backward",
}


@pytest.fixture(scope="module")
def solution():
    """The solution notebook's setup and solution cells, run: the learner's namespace."""
    namespace = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        nbgrader = cell["metadata"]["nbgrader"]
        if cell["cell_type"] == "code" and not nbgrader["grade"]:
            exec(compile("".join(cell["source"]), f"<a07 {nbgrader['grade_id']}>", "exec"), namespace)
    return namespace


def _entries(solution):
    return {op: solution[name] for op, name in FUNCTIONS.items()}


def test_functions_cover_the_ops():
    assert set(FUNCTIONS) == set(a07.OPS)


@pytest.mark.parametrize("extra", [False, True], ids=["basic", "extra"])
@pytest.mark.parametrize("op", a07.OPS, ids=str)
def test_solution_passes(solution, op, extra):
    assert a07.samples(op, extra)
    assert a07.check_decomposition(op, solution[FUNCTIONS[op]], extra) == []


@pytest.mark.parametrize("name", ["norm_act", "gated_mlp"])
def test_solution_trains(solution, name):
    assert a07.check_training(_entries(solution), name) == []


def relu_with_torch(x):
    return torch.clamp_min(x, 0)


def test_aten_calls_are_refused_with_the_learners_line():
    failures = a07.check_decomposition(aten.relu.default, relu_with_torch)
    assert len(failures) == len(a07.samples(aten.relu.default))
    assert "called aten.clamp_min.default on a traced tensor" in failures[0]
    assert "in relu_with_torch" in failures[0] and "torch.clamp_min(x, 0)" in failures[0]


def test_reference_decompositions_are_refused(solution):
    def layer_norm_with_reference(x, normalized_shape, weight, bias, eps):
        refs.var_mean_two_pass(x, [x.ndim - 1], 0, True)
        return solution["native_layer_norm"](x, normalized_shape, weight, bias, eps)

    failures = a07.check_decomposition(aten.native_layer_norm.default, layer_norm_with_reference)
    assert failures and all("tinydynamo.prims.refs.var_mean_two_pass" in f for f in failures)


def _softmax_without_max(x, dim, half_to_float):
    dims = [dim % x.ndim] if x.ndim else []
    kept = [d for d in range(x.ndim) if d not in dims]
    unnormalized = prims.exp(x)
    return prims.div(unnormalized, prims.broadcast_in_dim(prims.sum(unnormalized, dims), list(x.shape), kept))


def test_softmax_without_the_max_fails_only_where_exp_overflows():
    failures = a07.check_decomposition(aten._softmax.default, _softmax_without_max)
    assert len(failures) == 1
    assert "exp overflows float32" in failures[0] and "nan where aten has numbers" in failures[0]


def test_low_precision_sums_are_refused():
    failures = a07.check_decomposition(aten._softmax.default, _softmax_without_max, extra=True)
    assert any("bf16[3, 5]" in f and "sums bf16 values" in f for f in failures)
    assert any("f16[3, 5]" in f and "sums f16 values" in f for f in failures)


def test_one_pass_variance_fails_the_hidden_sample_far_from_zero(solution):
    def one_pass_layer_norm(x, normalized_shape, weight, bias, eps):
        dims, lead = [x.ndim - 1], list(range(x.ndim - 1))
        n, shape = x.shape[-1], list(x.shape)
        mean = prims.div(prims.sum(x, dims), n)
        variance = prims.sub(prims.div(prims.sum(prims.mul(x, x), dims), n), prims.mul(mean, mean))
        rstd = prims.rsqrt(prims.add(variance, eps))
        out = prims.mul(prims.sub(x, prims.broadcast_in_dim(mean, shape, lead)),
                        prims.broadcast_in_dim(rstd, shape, lead))
        return out, prims.reshape(mean, [*x.shape[:-1], 1]), prims.reshape(rstd, [*x.shape[:-1], 1])

    op = aten.native_layer_norm.default
    far_from_zero = [s for s in a07.samples(op, extra=True) if s.note == "values 200 ± 3"]
    assert len(far_from_zero) == 1
    failure = a07.check_sample(op, one_pass_layer_norm, far_from_zero[0])
    assert failure.startswith("output 0 differs from aten")
    assert a07.check_sample(op, solution["native_layer_norm"], far_from_zero[0]) is None


def test_wrong_values_name_the_sample_and_the_error():
    failures = a07.check_decomposition(aten.sigmoid.default, lambda x: prims.add(x, 1.0))
    assert failures[0].startswith("aten.sigmoid.default(f32[3, 4]): the result differs from aten: "
                                  "max abs error")


def test_integer_mismatches_are_reported_exactly():
    """2**60 and 2**60 + 1 are the same float64: through float64 the error would read 0."""
    expected = torch.tensor([[1, 2], [2**60, -5]])
    actual = expected.clone()
    actual[1, 0] += 1
    assert a07.compare(expected.clone(), expected, None) is None
    assert a07.compare(actual, expected, None, reference="eager") == (
        "the result differs from eager: 1 of 4 element(s) differ, the first at index [1, 0]: "
        "1152921504606846977 where eager has 1152921504606846976; max abs error 1 "
        "(allowed: 0 + 0 * |expected|)")
    actual[1, 1] = 5
    assert a07.max_error(actual, expected) == 10
    assert a07.compare(actual, expected, None).startswith("the result differs from aten: 2 of 4 element(s) differ")
    assert a07.compare(torch.tensor(True), torch.tensor(False), None) == (
        "the result differs from aten: 1 of 1 element(s) differ, the first: True where aten has False; "
        "max abs error 1 (allowed: 0 + 0 * |expected|)")


def test_wrong_dtype_is_named():
    def to_float64(x):
        return prims.convert_element_type(x, torch.float64)

    failures = a07.check_decomposition(aten.relu.default, to_float64)
    assert "the result is f64[3, 4], expected f32[3, 4]" in failures[0]


def test_learner_exceptions_are_reported_case_by_case():
    def unfinished(*args, **kwargs):
        raise NotImplementedError("not yet")

    failures = a07.check_decomposition(aten.addcmul.default, unfinished)
    assert len(failures) == len(a07.samples(aten.addcmul.default))
    assert all("decomposing raised NotImplementedError: not yet (in unfinished" in f for f in failures)
    assert "[broadcasting]" in failures[1]


def test_swap_restores_the_table_even_on_error():
    before = dict(decomposition_table)
    with pytest.raises(RuntimeError, match="inside"):
        entries = {aten.relu.default: relu_with_torch, aten.addcmul.default: relu_with_torch}
        with a07.swapped_decompositions(entries):
            assert decomposition_table[aten.relu.default] is not before[aten.relu.default]
            assert aten.addcmul.default in decomposition_table
            raise RuntimeError("inside")
    assert decomposition_table == before


def test_training_failure_names_the_step_and_the_gradient(solution):
    def bias_gradient_doubled(*args):
        grad_input, grad_weight, grad_bias = solution["native_layer_norm_backward"](*args)
        return grad_input, grad_weight, prims.mul(grad_bias, 2.0)

    entries = {**_entries(solution), aten.native_layer_norm_backward.default: bias_gradient_doubled}
    failures = a07.check_training(entries, "norm_act")
    assert len(failures) == 1
    assert failures[0].startswith("norm_act, training step 1: the gradient of norm.bias differs from eager")


def test_training_that_uses_no_entry_is_reported(solution):
    failures = a07.check_training({aten.sigmoid.default: solution["sigmoid"]}, "norm_act")
    assert failures == ["norm_act: none of your decompositions was used; it does not exercise them"]


def test_a_reference_decomposition_handed_over_is_refused():
    failures = a07.check_decomposition(aten.relu.default, decompositions.relu)
    assert failures and all("is the reference's own tinydynamo.prims.decompositions.relu" in f for f in failures)
