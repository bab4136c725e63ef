"""Hand-built joint graphs, each made to exercise one rule of partitioning (chapter 6, a06).

A model's joint graph comes from ``aot_autograd``; these are written by hand, with aten ops, in
the same layout: ``(primals..., tangents...) -> (forward outputs..., gradients...)``. They hold
what no zoo model produces: a constant (``get_attr``) that both halves read, a gradient that
does not depend on a tangent, a small view of a large tensor, a matmul that only the backward
needs, an input that only the backward reads, a small value cheaply computed from a large input,
an op that reads its inputs from a list (``aten.cat``), a bool mask with more elements than
the float input it is computed from, but fewer bytes.
They are not the derivatives of anything: partitioning does not care whether the gradients are
right, only that the two graphs it returns compute the same values as the joint graph.

``JOINT_GRAPHS[name]()`` returns ``(joint_gm, num_fwd_outputs, example_inputs)``; every node
carries ``meta["val"]`` (a meta tensor) and ``meta["device"]``, as ``aot_autograd``'s do.
"""
import torch
import torch.fx as fx

aten = torch.ops.aten


class Constant(torch.nn.Module):
    """A constant scales the input in the forward and the tangent in the backward."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 16))

    def forward(self, primals_1, tangents_1):
        return aten.mul.Tensor(primals_1, self.scale), aten.mul.Tensor(tangents_1, self.scale)


class GradientWithoutTangent(torch.nn.Module):
    """The second gradient is a forward value, ``exp(x)``, that no backward op reads."""

    def forward(self, primals_1, primals_2, tangents_1):
        exp = aten.exp.default(primals_1)
        out = aten.mul.Tensor(exp, primals_2)
        return out, aten.mul.Tensor(tangents_1, primals_2), exp


class SmallGradientWithoutTangent(torch.nn.Module):
    """The second gradient, a (16,) column sum of a (64, 16) input, depends on no tangent: saving
    it costs 64 bytes; computing it in the backward needs the whole input (4096 bytes)."""

    def forward(self, primals_1, primals_2, tangents_1):
        out = aten.mul.Tensor(primals_1, primals_2)
        return out, aten.mul.Tensor(tangents_1, primals_2), aten.sum.dim_IntList(primals_1, [0])


class SmallViewOfLargeTensor(torch.nn.Module):
    """The backward reads one column of an (64, 8) broadcast sum: a small view, a large base."""

    def forward(self, primals_1, primals_2, tangents_1):
        wide = aten.add.Tensor(aten.view.default(primals_1, [64, 1]), primals_2)
        column = aten.slice.Tensor(wide, 1, 0, 1)
        out = aten.mul.Tensor(column, column)
        grad = aten.mul.Tensor(aten.mul.Tensor(tangents_1, column), 2)
        return out, aten.view.default(grad, [64])


class BackwardOnlyMatmul(torch.nn.Module):
    """An outer product ``x @ y`` (16 x 16) that only the backward needs; ``y`` only it reads."""

    def forward(self, primals_1, primals_2, tangents_1):
        out = aten.add.Tensor(primals_1, primals_1)
        outer = aten.mm.default(primals_1, primals_2)
        grad_1 = aten.mm.default(outer, tangents_1)
        grad_2 = aten.mm.default(aten.t.default(tangents_1), outer)
        return out, grad_1, grad_2


class SmallValueOfLargeInput(torch.nn.Module):
    """The backward reads a (64, 1) value computed cheaply from a (64, 16) input: saving the input
    instead, and recomputing, costs 16 times the bytes (an input saved is memory like any other)."""

    def forward(self, primals_1, tangents_1):
        small = aten.mul.Tensor(aten.slice.Tensor(primals_1, 1, 0, 1), 2)
        out = aten.mul.Tensor(small, small)
        return out, aten.mul.Tensor(tangents_1, small)


class Concatenated(torch.nn.Module):
    """The forward output concatenates two values, which ``aten.cat`` reads from a list (not from
    its own arguments); the backward reads one of them."""

    def forward(self, primals_1, tangents_1):
        exp = aten.exp.default(primals_1)
        out = aten.cat.default([exp, aten.mul.Tensor(primals_1, 2)])
        return out, aten.mul.Tensor(aten.slice.Tensor(tangents_1, 0, 0, 16), exp)


class MaskOfInput(torch.nn.Module):
    """The backward reads a bool mask of a (64, 8) float input broadcast to (64, 8, 2): the mask
    has twice the input's elements, but half its bytes."""

    def forward(self, primals_1, tangents_1):
        wide = aten.expand.default(aten.view.default(primals_1, [64, 8, 1]), [64, 8, 2])
        mask = aten.gt.Scalar(wide, 0)
        return aten.mul.Tensor(wide, mask), aten.mul.Tensor(tangents_1, mask)


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# name -> (module, num_fwd_outputs, input shapes in placeholder order)
_CASES = {
    "constant": (Constant, 1, [(16,), (16,)]),
    "gradient_without_tangent": (GradientWithoutTangent, 1, [(32,), (32,), (32,)]),
    "small_gradient_without_tangent": (SmallGradientWithoutTangent, 1, [(64, 16), (16,), (64, 16)]),
    "small_view_of_large_tensor": (SmallViewOfLargeTensor, 1, [(64,), (8,), (64, 1)]),
    "backward_only_matmul": (BackwardOnlyMatmul, 1, [(16, 1), (1, 16), (16, 1)]),
    "small_value_of_large_input": (SmallValueOfLargeInput, 1, [(64, 16), (64, 1)]),
    "concatenated": (Concatenated, 1, [(16,), (32,)]),
    "mask_of_input": (MaskOfInput, 1, [(64, 8), (64, 8, 2)]),
}


def _one_node_per_constant(gm):
    """fx's tracer reads a tensor attribute anew at each use; read each constant once."""
    first = {}
    for node in list(gm.graph.find_nodes(op="get_attr")):
        if node.target in first:
            node.replace_all_uses_with(first[node.target])
            gm.graph.erase_node(node)
        else:
            first[node.target] = node
    gm.recompile()


def _record_meta(gm, inputs):
    """Run ``gm`` once and give every node the ``meta`` that ``aot_autograd``'s nodes carry."""
    values = {}

    class Recorder(fx.Interpreter):
        def run_node(self, node):
            values[node] = super().run_node(node)
            return values[node]

    Recorder(gm).run(*inputs)
    for node, value in values.items():
        if isinstance(value, torch.Tensor):
            node.meta["val"] = torch.empty_like(value, device="meta")
            node.meta["device"] = value.device


def build(name):
    """``(joint_gm, num_fwd_outputs, example_inputs)`` of the hand-built joint graph ``name``."""
    module, num_fwd_outputs, shapes = _CASES[name]
    gm = fx.symbolic_trace(module())
    _one_node_per_constant(gm)
    inputs = [_randn(*shape, seed=i) for i, shape in enumerate(shapes)]
    _record_meta(gm, inputs)
    return gm, num_fwd_outputs, inputs


JOINT_GRAPHS = {name: (lambda name=name: build(name)) for name in _CASES}
