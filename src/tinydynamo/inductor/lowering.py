"""Lowerings: each prim becomes loop IR (chapter 8, "The loop IR").

``lowerings[prim_name](*args)`` takes the prim's arguments, with every tensor replaced by its IR
value, and returns the IR value of the result: a Pointwise for pointwise prims and creation, a
Reduction for reductions, a view (ReinterpretView or GenericView) for views. As in TorchInductor's
``lowering.py``, most lowerings are made by two factories, :func:`make_pointwise` and
:func:`make_reduction`.

Prims in ``EXTERN_PRIMS`` have no lowering on purpose: the wrapper calls their eager ``impl``
as an extern kernel (``graph.py`` builds those).
"""
import sympy
import torch

from ..prims.primitives import view_strides
from . import ir
from .indexing import Expr, flatten, unflatten
from .sizevars import known
from .virtualized import ops

lowerings = {}

# Prims run by their eager implementation (``Prim.impl``), and why.
EXTERN_PRIMS = {
    "mm": "a BLAS library kernel beats a generated loop nest",
    "bmm": "a BLAS library kernel beats a generated loop nest",
    "convolution": "a oneDNN library kernel",
    "convolution_backward": "a oneDNN library kernel",
    "uniform": "random numbers come from torch's generator, so results match eager exactly",
    "scatter_add": "repeated indices accumulate into one element: not a parallel loop",
}


def register_lowering(*names):
    def register(fn):
        for name in names:
            assert name not in lowerings, name
            lowerings[name] = fn
        return fn

    return register


def _loader(arg, dtype):
    """A loader for a tensor argument, or one that makes a Python scalar a constant of dtype."""
    if isinstance(arg, ir.IRNode):
        return arg.make_loader()
    return lambda index: ops.constant(arg, dtype)


# --------------------------------------------------------------------------- pointwise


def make_pointwise(op_name, result_dtype=None):
    """The lowering of a pointwise prim: ``out[i] = ops.<op_name>(arg0[i], arg1[i], ...)``."""

    def lower(*args):
        tensors = [a for a in args if isinstance(a, ir.IRNode)]
        dtype = tensors[0].get_dtype()  # all tensor arguments share it (the prims' contract)
        loaders = [_loader(a, dtype) for a in args]

        def inner_fn(index):
            return getattr(ops, op_name)(*[load(index) for load in loaders])

        return ir.Pointwise(tensors[0].get_size(), result_dtype or dtype, inner_fn)

    return lower


_UNARY = ("abs", "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf",
          "floor", "ceil", "round", "trunc", "sign", "reciprocal", "bitwise_not")
_BINARY = ("add", "sub", "mul", "div", "fmod", "pow", "maximum", "minimum", "bitwise_and",
           "bitwise_or", "bitwise_xor")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")

for _name in _UNARY + _BINARY:
    register_lowering(_name)(make_pointwise(_name))
for _name in _COMPARISONS:
    register_lowering(_name)(make_pointwise(_name, result_dtype=torch.bool))


@register_lowering("where")
def where(pred, a, b):
    values = [v for v in (a, b) if isinstance(v, ir.IRNode)]
    dtype = values[0].get_dtype()
    loaders = [_loader(v, dtype) for v in (pred, a, b)]

    def inner_fn(index):
        return ops.where(*[load(index) for load in loaders])

    return ir.Pointwise(pred.get_size(), dtype, inner_fn)


@register_lowering("convert_element_type")
def convert_element_type(a, dtype):
    load = a.make_loader()
    return ir.Pointwise(a.get_size(), dtype, lambda index: ops.to_dtype(load(index), dtype))


# --------------------------------------------------------------------------- reductions


def make_reduction(reduction_type):
    """The lowering of ``prim(a, dims)``: kept dims become ``index``, reduced dims ``rindex``."""

    def lower(a, dims):
        dims = [dims] if isinstance(dims, int) else sorted(dims)
        size = a.get_size()
        kept = [d for d in range(len(size)) if d not in dims]
        if not dims:  # reducing no dims is a copy
            return ir.Pointwise(size, a.get_dtype(), a.make_loader())
        if reduction_type not in ("sum", "prod") and any(size[d] == 0 for d in dims):
            raise ValueError(f"inductor: {reduction_type} over an empty dimension has no identity")
        load = a.make_loader()

        def inner_fn(index, rindex):
            full = [None] * len(size)
            for d, i in zip(kept, index):
                full[d] = i
            for d, r in zip(dims, rindex):
                full[d] = r
            return load(full)

        dtype = torch.int64 if reduction_type.startswith("arg") else a.get_dtype()
        return ir.Reduction([size[d] for d in kept], [size[d] for d in dims], dtype,
                            a.get_dtype(), inner_fn, reduction_type)

    return lower


register_lowering("sum")(make_reduction("sum"))
register_lowering("prod")(make_reduction("prod"))
register_lowering("amax")(make_reduction("max"))
register_lowering("amin")(make_reduction("min"))
register_lowering("argmax")(make_reduction("argmax"))
register_lowering("argmin")(make_reduction("argmin"))


# --------------------------------------------------------------------------- views
# A view of a buffer is a new layout over the same memory (ReinterpretView); a view of anything
# else rewrites the index before loading (GenericView).


def _view(x, size, layout_fn, reindex):
    """layout_fn(old_layout) -> new Layout (or None if no strides can express it)."""
    storage = ir.as_storage_and_layout(x)
    if storage is not None:
        buffer, layout = storage
        new_layout = layout_fn(layout)
        if new_layout is not None:
            return ir.ReinterpretView(buffer, new_layout)
    return ir.GenericView(x, size, reindex)


@register_lowering("permute")
def permute(x, dims):
    size = [x.get_size()[d] for d in dims]
    inverse = [dims.index(d) for d in range(len(dims))]

    def layout_fn(layout):
        return ir.Layout(layout.dtype, size, [layout.stride[d] for d in dims], layout.offset)

    return _view(x, size, layout_fn, lambda index: [index[i] for i in inverse])


def _is_broadcast(old_size, new_size):
    """An input dim is broadcast if it has size 1 and the output's has another (the prims
    guarantee that an input dim of another size is the output's size)."""
    return not known(sympy.Eq, old_size, new_size) and old_size == 1


@register_lowering("broadcast_in_dim")
def broadcast_in_dim(x, shape, broadcast_dimensions):
    old = x.get_size()
    # input dim k is read at output dim broadcast_dimensions[k], or at 0 where it is broadcast
    source = [None if _is_broadcast(old[k], shape[bd]) else bd for k, bd in enumerate(broadcast_dimensions)]

    def layout_fn(layout):
        stride = [0] * len(shape)
        for k, bd in enumerate(source):
            if bd is not None:
                stride[bd] = layout.stride[k]
        return ir.Layout(layout.dtype, shape, stride, layout.offset)

    def reindex(index):
        return [Expr() if bd is None else index[bd] for bd in source]

    return _view(x, shape, layout_fn, reindex)


@register_lowering("slice")
def slice_(x, start_indices, limit_indices, strides=None):
    steps = strides or [1] * len(start_indices)
    size = [(limit - start + step - 1) // step
            for start, limit, step in zip(start_indices, limit_indices, steps)]

    def layout_fn(layout):
        offset = layout.offset + sum(s * st for s, st in zip(start_indices, layout.stride))
        return ir.Layout(layout.dtype, size, [st * step for st, step in zip(layout.stride, steps)],
                         offset)

    def reindex(index):
        return [Expr.of(start) + Expr.of(i) * step for i, start, step in zip(index, start_indices, steps)]

    return _view(x, size, layout_fn, reindex)


@register_lowering("reshape")
def reshape(x, shape):
    old = x.get_size()

    def layout_fn(layout):
        stride = view_strides(layout.size, layout.stride, shape)
        return None if stride is None else ir.Layout(layout.dtype, shape, stride, layout.offset)

    return _view(x, shape, layout_fn, lambda index: unflatten(flatten(index, shape), old))


# --------------------------------------------------------------------------- creation


@register_lowering("full")
def full(shape, fill_value, *, dtype, device):  # GraphLowering checks the device
    return ir.Pointwise(shape, dtype, lambda index: ops.constant(fill_value, dtype))


@register_lowering("iota")
def iota(length, *, start, step, dtype, device):
    return ir.Pointwise([length], dtype,
                        lambda index: ops.index_expr(Expr.of(start) + Expr.of(index[0]) * step, dtype))


# --------------------------------------------------------------------------- indexing


@register_lowering("gather")
def gather(a, dim, index):
    load_a, load_index = a.make_loader(), index.make_loader()
    size = a.get_size()[dim]

    def inner_fn(idx):
        position = ops.indirect_indexing(load_index(idx), size)
        return load_a([position if d == dim else i for d, i in enumerate(idx)])

    return ir.Pointwise(index.get_size(), a.get_dtype(), inner_fn)


@register_lowering("cat")
def cat(tensors, dim):
    """Each output element loads from the one input that covers it; the loads of the other
    inputs are masked off, since their indices would be out of bounds."""
    dtype = tensors[0].get_dtype()
    size = list(tensors[0].get_size())
    offsets = [0]
    for t in tensors:
        offsets.append(offsets[-1] + t.get_size()[dim])
    size[dim] = offsets[-1]
    pieces = [(t.make_loader(), start, end) for t, start, end in zip(tensors, offsets, offsets[1:])
              if end > start]
    if not pieces:
        return ir.Pointwise(size, dtype, lambda index: ops.constant(0, dtype))

    def inner_fn(index):
        position = ops.index_expr(index[dim], torch.int64)
        result = None
        for load, start, end in pieces:
            mask = ops.lt(position, ops.constant(end, torch.int64))
            if start > 0:
                mask = ops.bitwise_and(ops.ge(position, ops.constant(start, torch.int64)), mask)
            local = [Expr.of(i) - start if d == dim else i for d, i in enumerate(index)]
            value = ops.masked(mask, lambda load=load, local=local: load(local), 0)
            result = value if result is None else ops.where(mask, value, result)
        return result

    return ir.Pointwise(size, dtype, inner_fn)
