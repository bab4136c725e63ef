"""Helpers shared by the prims tests: inputs, one-op aten graphs, zoo joint graphs."""
import operator

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from tinydynamo.prims import EXTERN_FALLBACKS, Prim, decompose
from tinydynamo.testing.models import ZOO, make

_generator = torch.Generator().manual_seed(0)


def make_tensor(*shape, dtype=torch.float32, low=-3.0, high=3.0, noncontiguous=False):
    """A random tensor; noncontiguous=True gives a transposed view with the same shape."""
    if noncontiguous:
        return make_tensor(*reversed(shape), dtype=dtype, low=low, high=high).permute(
            *reversed(range(len(shape))))
    if dtype == torch.bool:
        return torch.rand(shape, generator=_generator) > 0.5
    values = low + (high - low) * torch.rand(shape, generator=_generator, dtype=torch.float64)
    if not dtype.is_floating_point:
        values = values.floor()
    return values.to(dtype)


def _map(fn, value):
    if isinstance(value, (list, tuple)):
        return type(value)(_map(fn, v) for v in value)
    return fn(value)


def one_op_graph(op, args, kwargs):
    """A GraphModule calling op once, with every tensor argument a placeholder; and its inputs."""
    graph, inputs = torch.fx.Graph(), []

    def lift(value):
        if isinstance(value, torch.Tensor):
            inputs.append(value)
            return graph.placeholder(f"arg{len(inputs)}")
        return value

    node = graph.call_function(op, _map(lift, tuple(args)), {k: _map(lift, v) for k, v in kwargs.items()})
    graph.output(node)
    return torch.fx.GraphModule({}, graph), inputs


def run_decomposed(op, args, kwargs):
    """Decompose a one-op graph of op and run it with the prims' eager impls."""
    gm, inputs = one_op_graph(op, args, kwargs)
    prim_gm = decompose(gm, inputs)
    return prim_gm(*inputs), prim_gm


def assert_prims_only(gm):
    for node in gm.graph.nodes:
        if node.op == "call_function":
            assert (isinstance(node.target, Prim) or node.target is operator.getitem
                    or node.target in EXTERN_FALLBACKS), f"{node.format_node()} is not a prim"
        if node.op != "output":
            assert "val" in node.meta, f"{node.name} has no meta['val']"


def assert_same(actual, expected, **tolerance):
    """assert_close over nests of tuples/lists that may hold None."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, **tolerance)
    elif expected is None:
        assert actual is None
    else:
        torch.testing.assert_close(actual, expected, equal_nan=True, **tolerance)


def assert_meta_matches(meta, value):
    """An output node's meta['val'] describes the value computed for it."""
    if isinstance(value, (tuple, list)):
        for m, v in zip(meta, value):
            assert_meta_matches(m, v)
    elif value is not None:
        assert meta.shape == value.shape and meta.dtype == value.dtype, (meta, value.shape, value.dtype)


# --------------------------------------------------------------------------- zoo joint graphs

def state_of(module):
    return {**dict(module.named_parameters(remove_duplicate=False)),
            **dict(module.named_buffers(remove_duplicate=False))}


def make_fx_joint(model, loss_fn, inputs):
    """make_fx of loss and gradients w.r.t. the parameters (torch.autograd.grad); flat inputs
    [*params, *buffers, *inputs]; outputs (loss, *grads)."""
    params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    n_params, n_buffers = len(params), len(buffers)

    def joint(*flat):
        p = dict(zip(params, flat[:n_params]))
        b = dict(zip(buffers, flat[n_params:n_params + n_buffers]))
        out = torch.func.functional_call(model, {**p, **b}, tuple(flat[n_params + n_buffers:]))
        loss = loss_fn(out)
        return (loss, *torch.autograd.grad(loss, list(p.values())))

    flat = [*params.values(), *buffers.values(), *inputs]
    return make_fx(joint)(*flat), flat


class _WithLoss(torch.nn.Module):
    def __init__(self, model, loss_fn):
        super().__init__()
        self.model, self.loss_fn = model, loss_fn

    def forward(self, *inputs):
        return (self.loss_fn(self.model(*inputs)),)


def aot_joint(model, loss_fn, inputs):
    """PyTorch's own functionalized joint graph (aot_export_module): what AOT autograd hands on.

    Returns (gm, signature, state): gm takes [*signature.parameters, *signature.buffers, *inputs]
    and returns (*updated buffers, loss, *gradients); state maps those names to tensors."""
    from torch._functorch.aot_autograd import aot_export_module

    wrapped = _WithLoss(model, loss_fn)
    gm, signature = aot_export_module(wrapped, inputs, trace_joint=True, output_loss_index=0)
    return gm, signature, state_of(wrapped)


def aot_flat_inputs(signature, state, inputs):
    return [state[n] for n in signature.parameters + signature.buffers] + list(inputs)


def zoo_make(name):
    model, inputs = make(name)
    return model, inputs, ZOO[name].loss
