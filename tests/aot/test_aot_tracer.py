"""The dispatch tracer and functionalization, checked against make_fx and aot_autograd."""
import collections
import copy
import operator
import warnings

import pytest
import torch
import torch._dynamo
from functorch.compile import make_boxed_func
from torch._functorch.aot_autograd import aot_module_simplified
from torch._functorch.partitioners import default_partition as torch_default_partition
from torch.fx.experimental.proxy_tensor import make_fx

import tinydynamo
from tinydynamo.aot import aot_autograd, aot_eager, default_partition
from tinydynamo.aot.aot_autograd import _lift_parameters_and_buffers
from tinydynamo.aot.graph_capture import capture
from tinydynamo.testing.models import ZOO, make

aten = torch.ops.aten


# ---------------------------------------------------------------- same ops as PyTorch's graphs
def op_multiset(gm):
    """Ops of a graph, up to two documented differences from PyTorch's aot_autograd:

    * tinydynamo records no node for identity views (detach, alias): a functional graph
      does not need them;
    * PyTorch's functionalization records some ``_unsafe_view``s as ``view``.
    """
    ops = collections.Counter()
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target in (aten.detach.default, aten.alias.default):
            continue
        target = aten.view.default if node.target is aten._unsafe_view.default else node.target
        ops[str(target)] += 1
    return ops


def graphs_seen_by(aot, model_name, training):
    """The joint and forward graphs ``aot`` (PyTorch's or ours) builds for a zoo model."""
    is_torch = aot is aot_module_simplified
    seen = {}

    def partition(joint, *args, **kwargs):
        seen["joint"] = joint
        return (torch_default_partition if is_torch else default_partition)(joint, *args, **kwargs)

    def fw_compiler(gm, example_inputs):
        seen.setdefault("forward", gm)
        return make_boxed_func(gm.forward) if is_torch else gm.forward

    def backend(gm, example_inputs):
        return aot(gm, example_inputs, fw_compiler=fw_compiler, partition_fn=partition)

    torch._dynamo.reset()
    model, inputs = make(model_name)
    with torch.set_grad_enabled(training):
        torch.compile(model, backend=backend, fullgraph=True)(*inputs)
    return seen


@pytest.mark.parametrize("training", [False, True], ids=["inference", "joint"])
@pytest.mark.parametrize("name", list(ZOO))
def test_same_aten_ops_as_pytorch_aot_autograd(name, training):
    graph = "joint" if training else "forward"
    ours = graphs_seen_by(aot_autograd, name, training)[graph]
    theirs = graphs_seen_by(aot_module_simplified, name, training)[graph]
    assert op_multiset(ours) == op_multiset(theirs)


# make_fx records the same ops, but does not functionalize them.
FUNCTIONALIZED = {
    aten.add_.Tensor: aten.add.Tensor,  # BatchNorm's num_batches_tracked += 1
    aten.native_batch_norm.default: aten._native_batch_norm_legit_functional.default,
}


def functionalized_op_multiset(gm):
    gm.graph.eliminate_dead_code()
    ops = collections.Counter()
    for node in gm.graph.nodes:
        # getitems are left out: the functional batch norm has two more results to take apart.
        if node.op != "call_function" or node.target in (aten.detach.default, aten.alias.default,
                                                          operator.getitem):
            continue
        ops[str(FUNCTIONALIZED.get(node.target, node.target))] += 1
    return ops


def zoo_joint_fn(name):
    """(fn, inputs): fn(params..., inputs..., tangents...) -> (outputs, parameter gradients)."""
    model, inputs = make(name)
    lifted, forward = _lift_parameters_and_buffers(model)
    num_inputs = len(lifted) + len(inputs)

    def joint(*args):
        outputs = forward(*args[:num_inputs])
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        wrt = [p for p in args[: len(lifted)] if p.requires_grad]
        grads = torch.autograd.grad([o for o in outputs if o.requires_grad], wrt, args[num_inputs:])
        return outputs, grads

    outputs = forward(*lifted, *inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    tangents = [torch.ones_like(o) for o in outputs if o.requires_grad]
    return joint, [*lifted, *inputs, *tangents]


@pytest.mark.parametrize("name", list(ZOO))
def test_same_aten_ops_as_make_fx(name):
    model, inputs = make(name)
    lifted, forward = _lift_parameters_and_buffers(model)
    with torch.no_grad():
        reference = make_fx(forward)(*lifted, *inputs)
        ours = capture(forward, [*lifted, *inputs], with_backward=False).graph_module
    assert functionalized_op_multiset(ours) == functionalized_op_multiset(reference)

    joint, joint_inputs = zoo_joint_fn(name)
    reference = make_fx(joint)(*joint_inputs)
    model, inputs = make(name)
    lifted, forward = _lift_parameters_and_buffers(model)
    ours = capture(forward, [*lifted, *inputs], with_backward=True).graph_module
    assert functionalized_op_multiset(ours) == functionalized_op_multiset(reference)


def test_joint_graph_signature():
    seen = graphs_seen_by(aot_autograd, "mlp", training=True)
    placeholders = [n.name for n in seen["joint"].graph.find_nodes(op="placeholder")]
    # 6 parameters then the input, then one tangent for the one output.
    assert placeholders == [f"primals_{i}" for i in range(1, 8)] + ["tangents_1"]
    outputs = seen["joint"].graph.output_node().args[0]
    assert len(outputs) == 1 + 6  # forward output, then the gradient of each parameter


def test_graph_nodes_carry_meta_values():
    seen = graphs_seen_by(aot_autograd, "cnn", training=True)
    for node in seen["joint"].graph.nodes:
        if node.op in ("placeholder", "call_function", "get_attr"):
            assert "val" in node.meta and node.meta["device"] == torch.device("cpu"), node


# ---------------------------------------------------------------- functionalization
def traced_graph(fn, *inputs):
    with torch.no_grad():
        return capture(fn, list(inputs), with_backward=False).graph_module


def assert_functional(gm):
    for node in gm.graph.nodes:
        if isinstance(node.target, torch._ops.OpOverload):
            assert not node.target._schema.is_mutable, f"mutating op {node.target} in graph"


def compiled(fn, inputs):
    return aot_eager(torch.fx.symbolic_trace(fn), list(inputs))


def check_against_eager(fn, *inputs):
    """Run fn eagerly and compiled on copies of inputs; outputs and input mutations must agree."""
    eager_inputs = [x.clone() for x in inputs]
    compiled_inputs = [x.clone() for x in inputs]
    expected = fn(*eager_inputs)
    actual = compiled(fn, compiled_inputs)(*compiled_inputs)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(compiled_inputs, eager_inputs)
    assert_functional(traced_graph(fn, *[x.clone() for x in inputs]))


def add_inplace(x):
    y = x * 2
    y.add_(1)
    return y


def mutate_through_views(x):
    y = x.clone()
    y[0].mul_(2)
    y[:, 1].add_(1)
    y.t()[2].fill_(3.0)
    y.view(-1)[2:5].zero_()
    return y


def read_view_after_base_changed(x):
    y = x.clone()
    v = y.t()
    y.add_(1)
    return v * 1


def mutate_split_and_unbind(x):
    y = x.clone()
    a, b = y.split(2)
    a.mul_(10)
    y.unbind(1)[0].sub_(5)
    return y, b + 0


def out_variant(x):
    out = torch.empty_like(x)
    torch.add(x, 1, out=out)
    return out


def index_put(x):
    y = x.clone()
    y.index_put_((torch.arange(0, 4, 2),), x[0, 0] * 7)
    return y


def mutate_through_as_strided(x):
    y = x[1:] * 1  # a contiguous intermediate
    column = y.as_strided([3], [6], 2)
    column.mul_(10)
    y.as_strided([2, 2], [1, 6], 7).add_(1)
    return y, column * 1, (x * 2).as_strided([2, 3], [3, 1], 4).exp()


def mutate_transposed_through_as_strided(x):
    y = x.t() * 1  # transposed intermediate: memory order (1, 0)
    y.as_strided([2, 3], [1, 6], 1).mul_(10)  # row 0, columns 1..3 of x's layout
    return y, y.as_strided([4], [1], 5).exp()


def mutate_input(x, buf):
    x.add_(1)
    buf[1].copy_(x[0] * 3)
    return x * 2


@pytest.mark.parametrize(
    "fn",
    [add_inplace, mutate_through_views, read_view_after_base_changed, mutate_split_and_unbind,
     out_variant, index_put, mutate_through_as_strided, mutate_transposed_through_as_strided, mutate_input],
)
def test_functionalized_graph_matches_eager(fn):
    inputs = [torch.randn(4, 6), torch.zeros(4, 6)][: fn.__code__.co_argcount]
    check_against_eager(fn, *inputs)


def test_view_mutation_becomes_scatter_ops():
    ops = {n.target for n in traced_graph(mutate_through_views, torch.randn(4, 6)).graph.nodes}
    assert {aten.select_scatter.default, aten.slice_scatter.default} <= ops
    ops = {n.target for n in traced_graph(mutate_through_as_strided, torch.randn(4, 6)).graph.nodes}
    assert aten.as_strided_scatter.default in ops


def test_input_mutation_is_a_graph_output_applied_by_the_runtime():
    x, buf = torch.randn(3, 5), torch.zeros(3, 5)
    gm = traced_graph(mutate_input, x, buf)
    assert len(gm.graph.output_node().args[0]) == 3  # new x, new buf, the user output
    fn = compiled(mutate_input, [x, buf])
    expected_x = x + 1
    fn(x, buf)
    torch.testing.assert_close(x, expected_x)
    torch.testing.assert_close(buf[1], expected_x[0] * 3)


def test_tensor_literal_becomes_a_constant():
    def fn(x):
        return x + torch.tensor([1.0, 2.0, 3.0])

    gm = traced_graph(fn, torch.randn(2, 3))
    assert [n.op for n in gm.graph.nodes].count("get_attr") == 1
    x = torch.randn(2, 3)
    torch.testing.assert_close(compiled(fn, [x])(x), fn(x))


class Literal(torch.nn.Module):
    def forward(self, x):
        c = torch.tensor([1.0, 2.0, 3.0])
        return x + c, c


def test_tensor_literal_is_a_fresh_tensor_each_call():
    torch._dynamo.reset()
    fn = torch.compile(Literal(), backend=aot_eager, fullgraph=True)
    x = torch.randn(3)
    (_, first), (_, second) = fn(x), fn(x)
    assert first is not second
    first.add_(1)  # must not change what later calls see
    torch.testing.assert_close(fn(x), Literal()(x))


def test_mutating_a_tensor_constant_raises_before_running_it():
    calls = torch.zeros(())  # neither an input nor computed by the program: a constant

    def fn(x):
        calls.add_(1)
        return x * 2

    with pytest.raises(NotImplementedError, match="mutates a tensor constant"):
        traced_graph(fn, torch.randn(3))
    assert calls == 0


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda x: x + x.sum().item(), "depends on tensor data"),
        (lambda x: x[x > 0], "depends on tensor data"),
        (lambda x: x.t_(), "t_.default on an input"),
        (lambda x: x.resize_(20), "resizes"),
        (lambda x: (x * 1)[:, ::2].as_strided([2], [1]) * 2, "as_strided of a non-contiguous tensor"),
        (lambda x: (x * 1)[1:].as_strided([2], [1], 0) * 2, "as_strided reaching outside"),
        (lambda x: x[1:].as_strided([2], [1], 4) * 2, "as_strided of a graph input"),
    ],
    ids=["item", "boolean_mask", "t_", "resize_", "as_strided_non_contiguous", "as_strided_outside",
         "as_strided_of_an_input"],
)
def test_unsupported_ops_raise(fn, message):
    with pytest.raises(NotImplementedError, match=message):
        traced_graph(fn, torch.randn(4, 3))


def test_the_value_of_a_tensor_computed_from_python_numbers_is_read_while_tracing():
    """Longformer's ``view(b, torch.div(n, 2 * w, rounding_mode="trunc"), ...)``: a size held in a
    0-d tensor made from Python numbers is the same on every call, so it may be read and baked in;
    the value of a tensor held by the graph may not."""
    def chunks(x):
        return x.view(x.size(0), torch.div(12, 4, rounding_mode="trunc"), 4).sum(-1)

    x = torch.randn(2, 12)
    gm = traced_graph(chunks, x)
    assert torch.ops.aten._local_scalar_dense.default not in {n.target for n in gm.graph.nodes}
    torch.testing.assert_close(gm(x)[0], chunks(x))
    scale = torch.tensor(3)
    with pytest.raises(NotImplementedError, match="depends on tensor data"):
        traced_graph(lambda x: x.view(x.size(0), (scale * 1).item(), 4), x)


def test_mutating_inputs_that_share_memory_raises():
    def fn(a, b):
        a.add_(1)
        return a + b

    base = torch.randn(4)
    with pytest.raises(NotImplementedError, match="shares memory"):
        traced_graph(fn, base, base[:2].view(2))


class MovingCenter(torch.nn.Module):
    """An update hidden from autograd (an EMA of the batch mean, a weight clip through .data) of
    parameters that require grad; the uses after it are uses of the parameter."""

    def __init__(self):
        super().__init__()
        self.linear, self.center = torch.nn.Linear(8, 8), torch.nn.Parameter(torch.zeros(8))

    def forward(self, x):
        self.linear.weight.data.clamp_(-0.2, 0.2)
        y = self.linear(x)
        with torch.no_grad():
            self.center.mul_(0.9).add_(y.mean(0), alpha=0.1)
        return (y - self.center) * self.center


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_writes_to_inputs_that_require_grad_hidden_from_autograd_compile(backend):
    torch.manual_seed(0)
    model, x = MovingCenter(), torch.randn(4, 8)
    compiled_copy = copy.deepcopy(model)
    compiled = tinydynamo.compile(compiled_copy, backend=backend, fullgraph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        for _ in range(2):
            model(x).square().sum().backward()
            compiled(x).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), compiled_copy.parameters()):
        torch.testing.assert_close(q, p, msg=name)
        torch.testing.assert_close(q.grad, p.grad, msg=name)


def test_writing_a_leaf_that_requires_grad_is_eagers_error():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="leaf Variable that requires grad"):
        capture(lambda t: t.add_(1), [x], with_backward=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):  # as eager
        tinydynamo.compile(lambda t: t.add_(1) * 2, backend="aot_eager")(x)


def scales_its_activation(x):
    x.mul_(2)
    x[:, 0] += 1
    return x.sin()


def writes_after_a_recomputable_use(x, w):
    y = (x * 2).exp() * w  # eager saves exp's output; the partitioner may save x and recompute
    x.add_(1)
    return y + x


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [scales_its_activation, writes_after_a_recomputable_use])
def test_an_activation_written_in_place_is_traced(fn, backend):
    """An input that requires grad and is not a leaf may be written in place, as in eager: the
    graph writes a clone of it, and the new value is copied into it where autograd sees the copy.
    One graph, no break, no eager run; values, the written input and every gradient are eager's."""
    torch.manual_seed(0)
    leaf, w = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)

    def run(f):
        x = leaf * 1
        out = f(x, w) if fn is writes_after_a_recomputable_use else f(x)
        (out.sum() + 3 * x.sum()).backward()  # uses of the written input after the call
        grads = [leaf.grad, w.grad]
        leaf.grad = w.grad = None
        return out, x, grads

    expected = run(fn)
    tinydynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        actual = run(tinydynamo.compile(fn, backend=backend, fullgraph=True))
    torch.testing.assert_close(actual, expected)
