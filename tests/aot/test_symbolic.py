"""Symbolic sizes through AOT autograd, prims and inductor, with PyTorch's Dynamo as the frontend.

Each tiny function is compiled once with ``dynamic=True`` and called with several sizes; its
outputs and gradients must equal eager's. Sizes are picked so that no two dims of the first call are
equal (Dynamo gives equal sizes one symbol, "duck sizing", and would recompile when they later
differ), and no size Dynamo slices down to 0 or 1 (it specialises those).
"""
import warnings

import pytest
import sympy
import torch
import torch._dynamo
import torch.nn.functional as F

import tinydynamo
from tinydynamo import backends
from tinydynamo.aot.symbolic import SymbolicValues
from tinydynamo.testing.models import ZOO, make
from tinydynamo.testing.real_models import REAL_MODELS, outputs_to_tensors

assert_close = torch.testing.assert_close

BACKENDS = {"aot_eager": backends.aot_eager, "decomp_eager": backends.decomp_eager,
            "inductor": backends.inductor}
BATCHES = [4, 5, 6, 8, 11]


class CountingBackend:
    """A torch.compile backend that counts the graphs it is given to compile."""

    def __init__(self, backend):
        self.backend = backend
        self.compiles = 0

    def __call__(self, gm, example_inputs):
        self.compiles += 1
        return self.backend(gm, example_inputs)


def _inputs(make, batch):
    torch.manual_seed(batch)
    return [t.requires_grad_() if t.is_floating_point() else t for t in make(batch)]


def _check_against_eager(fn, make, backend, dynamic=True, batches=BATCHES):
    """Compile ``fn`` once, call it with each batch size: outputs and gradients equal eager's."""
    torch._dynamo.reset()
    counting = CountingBackend(backend)
    compiled = torch.compile(fn, backend=counting, dynamic=dynamic)
    for batch in batches:
        inputs = _inputs(make, batch)
        expected = fn(*inputs)
        copies = [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]
        actual = compiled(*copies)
        assert_close(actual, expected)
        tensors = [x for x in inputs if x.requires_grad]
        if tensors:
            out = expected if isinstance(expected, torch.Tensor) else expected[0]
            grad_expected = torch.autograd.grad(out.sum(), tensors, allow_unused=True)
            out = actual if isinstance(actual, torch.Tensor) else actual[0]
            grad_actual = torch.autograd.grad(out.sum(), [x for x in copies if x.requires_grad], allow_unused=True)
            assert_close(grad_actual, grad_expected)
    return counting.compiles


def _pointwise(x, y):
    return torch.sin(x) * y + 2


def _reductions(x, w, b):
    return x.sum(1).softmax(-1) + F.layer_norm(x, x.shape[-1:], w, b).mean()


def _linear(x, w, b):
    return F.linear(torch.relu(x), w, b) @ w


def _view_computed(x):
    return x.view(x.shape[0], -1) * 2


def _reshape_computed(x):
    b = x.shape[0]
    return x.reshape(b * 2, -1).cos()


def _cat_slice_broadcast(x, y):
    z = torch.cat([x, y * 2], dim=0)
    return z[1:-1, :3] + z.mean(0, keepdim=True)[:, :3] + x[: x.shape[0] // 2].sum()


def _float_from_size(x):
    return x * (x.shape[0] / 2), x.shape[0] / 4


def _returns_view_and_size(x):
    return x.view(-1, 2).t(), x.shape[0] * 3


def _list_indices(x):
    y = x * 1
    y[[0, 2]] = 0.0  # a list index, written to
    return y[..., [-2], :] * 2 + x[[0, 1]].sum() + x[:, [[0, 1], [2, 0]]].mean()  # Falcon: [..., [-2], :]


CASES = {
    "pointwise": (_pointwise, lambda b: [torch.randn(b, 10), torch.randn(10)]),
    "reductions": (_reductions, lambda b: [torch.randn(b, 10), torch.randn(10), torch.randn(10)]),
    "linear": (_linear, lambda b: [torch.randn(b, 3), torch.randn(3, 3), torch.randn(3)]),
    "view_computed": (_view_computed, lambda b: [torch.randn(b, 3, 7)]),
    "reshape_computed": (_reshape_computed, lambda b: [torch.randn(b, 2, 7)]),
    "cat_slice_broadcast": (_cat_slice_broadcast, lambda b: [torch.randn(b, 10), torch.randn(b + 1, 10)]),
    "returns_view_and_size": (_returns_view_and_size, lambda b: [torch.randn(b, 10)]),
    "float_from_size": (_float_from_size, lambda b: [torch.randn(b, 3)]),
    "list_indices": (_list_indices, lambda b: [torch.randn(b, 3, 5)]),
}


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("case", list(CASES))
def test_dynamic_true_compiles_once(case, backend):
    fn, make = CASES[case]
    assert _check_against_eager(fn, make, BACKENDS[backend]) == 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_automatic_dynamic_compiles_at_most_twice(backend):
    fn, make = CASES["reductions"]
    assert _check_against_eager(fn, make, BACKENDS[backend], dynamic=None) <= 2


def test_inductor_compiles_kernels_once_for_every_size():
    tinydynamo.reset()
    fn, make = CASES["pointwise"]
    assert _check_against_eager(fn, make, backends.inductor, batches=[3, 5, 3, 7]) == 1
    # the forward's and the backward's kernels take the batch size as an argument: no variant per size
    assert tinydynamo.stats()["size_specializations"] == 0


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 16), torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def _loss(model, x, target):
    return F.cross_entropy(model(x), target)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_mlp_training_step(backend):
    """The loss inside the graph: nll_loss is a composite op whose backward must be traced."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = MLP()
    counting = CountingBackend(BACKENDS[backend])
    compiled = torch.compile(_loss, backend=counting, dynamic=True)
    for batch in BATCHES:
        x, target = torch.randn(batch, 6), torch.randint(0, 3, (batch,))
        expected_loss = _loss(model, x, target)
        expected = torch.autograd.grad(expected_loss, list(model.parameters()))
        loss = compiled(model, x, target)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        assert_close(loss, expected_loss)
        assert_close(grads, expected)
    assert counting.compiles == 1


def _resized(name, inputs, size):
    """The zoo model's inputs with batch (for tiny_gpt: sequence length) ``size``."""
    if name == "tiny_gpt":
        return tuple(t[:, :size].contiguous() for t in inputs)
    return tuple(torch.cat([t, t, t])[:size] for t in inputs)


@pytest.mark.parametrize("backend", ["decomp_eager", "inductor"])
@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_training_over_sizes(name, backend):
    """Zoo models (convolutions, batch norm, attention) train like eager over 4 sizes, compiled once."""
    torch._dynamo.reset()
    model, inputs = make(name)
    reference, _ = make(name)
    counting = CountingBackend(BACKENDS[backend])
    compiled = torch.compile(model, backend=counting, dynamic=True)
    for size in [5, 7, 10, 13]:
        sized = _resized(name, inputs, size)
        loss = ZOO[name].loss(compiled(*sized))
        loss.backward()
        expected = ZOO[name].loss(reference(*sized))
        expected.backward()
        assert_close(loss, expected, rtol=1e-4, atol=1e-5)
        for p, q in zip(model.parameters(), reference.parameters()):
            assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
            p.grad = q.grad = None
    assert counting.compiles == 1


def _with_concrete_example_inputs(backend):
    """Hand the backend real tensors and ints, the symbolic values only in the placeholders'
    meta["example_value"], as tinydynamo's own dynamo does."""
    def concrete(gm, example_inputs):
        ints = [x.node.hint if isinstance(x, torch.SymInt) else x for x in example_inputs]
        return backend(gm, ints)
    return concrete


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_symbolic_sizes_from_placeholder_metadata(backend):
    fn, make = CASES["reshape_computed"]
    assert _check_against_eager(fn, make, _with_concrete_example_inputs(BACKENDS[backend])) == 1


def _count_compiles(model, backend, lengths, ids):
    torch._dynamo.reset()
    counting = CountingBackend(backend)
    compiled = torch.compile(model, backend=counting)
    for length in lengths:
        compiled(input_ids=ids[:, :length])
    return counting.compiles


def test_gpt2_over_sequence_lengths():
    """torch.compile(model, backend="tinydynamo") with its default dynamic=None: equal to eager,
    and compiled as often as with torch's own "eager" backend (no recompiles of our making)."""
    model, _, kwargs = REAL_MODELS["gpt2"].build()
    lengths = [5, 8, 11, 13]
    assert _count_compiles(model, backends.torch_compile_backend, lengths, kwargs["input_ids"]) \
        <= _count_compiles(model, lambda gm, example_inputs: gm.forward, lengths, kwargs["input_ids"])
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="tinydynamo")
    for length in lengths:
        ids = kwargs["input_ids"][:, :length]
        expected = outputs_to_tensors(model(input_ids=ids, labels=ids))
        assert_close(outputs_to_tensors(compiled(input_ids=ids, labels=ids)), expected)
    model.train()
    ids = kwargs["input_ids"][:, :9]
    expected = torch.autograd.grad(model(input_ids=ids, labels=ids).loss, list(model.parameters()))
    actual = torch.autograd.grad(compiled(input_ids=ids, labels=ids).loss, list(model.parameters()))
    assert_close(actual, expected)


def test_float_arguments_are_compiled_per_value():
    """With dynamic=True, Dynamo passes a float argument as a 0-d tensor that the graph reads with
    .item(): the value is baked in, and another value compiles another variant."""
    torch._dynamo.reset()
    counting = CountingBackend(backends.aot_eager)
    compiled = torch.compile(lambda x, scale: x * scale, backend=counting, dynamic=True)
    for batch, scale in [(4, 2.5), (5, 3.5), (6, 2.5)]:
        x = torch.randn(batch, 3)
        assert_close(compiled(x, scale), x * scale)
    assert counting.compiles == 1


def test_unsupported_size_expression_names_it():
    """A size expression the graph cannot compute raises, naming it (never a baked-in size)."""
    values = SymbolicValues(torch.fx.Graph())
    with pytest.raises(NotImplementedError, match=r"size expression log\(s0\)"):
        values._emit(sympy.log(sympy.Symbol("s0", integer=True, positive=True)))


def test_list_indices_are_traced_with_symbolic_sizes_not_run_eagerly():
    """Indexing a meta tensor with a list made its index tensor outside the dispatcher, so the
    AOT trace failed and Falcon's attention ran eagerly ("made a tensor outside the dispatcher")."""
    tinydynamo.reset()
    compiled = tinydynamo.compile(_list_indices, backend="aot_eager", dynamic=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="tinydynamo")
        for batch in (4, 6):
            x = torch.randn(batch, 3, 5)
            assert_close(compiled(x), _list_indices(x))
    assert tinydynamo.stats()["frames_compiled"] == 1


def writes_a_row_of_a_transposed_sum(bias, row, table):
    total = row + table  # strides of table.t(): autograd's backward of the write restrides a transposed view
    total[0] = 1
    return bias + total


def test_a_write_into_a_transposed_activation_trains_with_symbolic_sizes():
    """Found by the fuzzer: the tracer asked a symbolic meta tensor for its memory order by running
    permute inside its own dispatch, which torch rejects with an internal assert."""
    compiled = tinydynamo.compile(writes_a_row_of_a_transposed_sum, dynamic=True)
    for n in (2, 4, 5):
        inputs = [torch.tensor(-0.25), torch.tensor([-1.5]), torch.randn(n, n).t()]
        ours = [x.clone().requires_grad_() for x in inputs]
        theirs = [x.clone().requires_grad_() for x in inputs]
        compiled(*ours).sum().backward()
        writes_a_row_of_a_transposed_sum(*theirs).sum().backward()
        for a, b in zip(ours, theirs):
            assert_close(a.grad, b.grad)


def upsamples_by_a_fraction(x):
    return F.interpolate(x, scale_factor=2.5, mode="bilinear", recompute_scale_factor=True)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_op_that_takes_concrete_sizes_only_is_compiled_per_shape(backend):
    """F.interpolate(recompute_scale_factor=True) computes its output size as a float, which
    torch's composite kernel accepts only as a concrete int: after the recompile that made the
    height a symbol, the call raised. That graph is now compiled once per shape."""
    compiled = tinydynamo.compile(upsamples_by_a_fraction, backend=backend)
    for n in (4, 5, 6):
        x = torch.randn(1, 2, n, 5)
        assert_close(compiled(x), upsamples_by_a_fraction(x))


def picks_rows(x, i):
    return x[[0, i]]


def test_a_list_index_with_a_symbolic_int_gives_eagers_rows_on_inductor():
    """Compiling per shape, only for the ops that take concrete sizes, not for every failure: this
    graph's per-shape compile got an int input that inductor took for a tensor."""
    compiled = tinydynamo.compile(picks_rows, backend="inductor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recompile with a symbolic i may run eagerly, with a warning
        for i in (0, 1, 2):
            x = torch.randn(4, 3)
            assert_close(compiled(x, i), picks_rows(x, i))
