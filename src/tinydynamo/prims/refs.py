"""References: the basic aten ops written with prims (book chapter 7, "Prims").

Like PyTorch's ``torch/_refs``, this is where type promotion and broadcasting become explicit:
an aten op such as ``add.Tensor`` accepts mixed dtypes and shapes, so its decomposition first
computes the result dtype (``result_type``), converts (``convert_element_type``), broadcasts
(``broadcast_in_dim``) and only then calls ``prims.add`` on operands of one shape and dtype.

Also here: reductions (with ``keepdim`` and fp32 accumulation made explicit), views, tensor
creation, random numbers and indexing. The composite nn ops built on top are in
``decompositions.py``.

Sizes may be symbolic (``torch.SymInt``, see ``aot/symbolic.py``). Arithmetic on them stays
symbolic, and a scalar made from sizes stays a SymInt or SymFloat (``scalar_of``). A comparison
(``if a.shape[d] == 1``) asks the size's ShapeEnv, which answers from what it knows about the
symbols or records a guard that dynamo checks on later calls. The few decompositions that need a
concrete number of things (``unbind`` loops over ``range(size)``) specialise that size the same
way, through ``guard_int``: the graph is then valid for that size only, and a guard says so.
"""
import functools
import math

import torch

from .primitives import prims
from .registry import DecompositionDeclined, DecompositionError, register_decomposition

aten = torch.ops.aten

LOW_PRECISION = (torch.float16, torch.bfloat16)


# --------------------------------------------------------------------------- type promotion

def _category(dtype):
    """bool < integer < floating point: the order in which kinds of numbers win promotion."""
    if dtype.is_complex:
        raise DecompositionDeclined(f"complex dtypes ({dtype}) are not supported")
    if dtype == torch.bool:
        return 0
    return 2 if dtype.is_floating_point else 1


def _scalar_dtype(value):
    if isinstance(value, (bool, torch.SymBool)):
        return torch.bool
    if isinstance(value, (int, torch.SymInt)):  # a symbolic size is an int
        return torch.int64
    return torch.get_default_dtype()


def result_type(*args):
    """torch's type promotion for tensors and Python scalars.

    Three groups, in order: tensors with dims, 0-d tensors, Python scalars. The first group
    present decides the dtype; a later group only takes over when its kind of number is higher
    (bool < integer < float), so ``int32_tensor * 2`` stays int32 but ``int32_tensor * 2.5`` is
    float32 (the default dtype).
    """
    groups = ([], [], [])
    for a in args:
        if isinstance(a, torch.Tensor):
            groups[0 if a.ndim else 1].append(a.dtype)
        elif a is not None:
            groups[2].append(_scalar_dtype(a))
    result = None
    for dtypes in groups:
        if dtypes:
            dtype = functools.reduce(torch.promote_types, dtypes)
            if result is None or _category(dtype) > _category(result):
                result = dtype
    return result


def opmath_dtype(dtype):
    """The dtype to compute in: float32 for float16/bfloat16, as aten's kernels do."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


def to_dtype(x, dtype):
    return x if x.dtype == dtype else prims.convert_element_type(x, dtype)


def scalar_of(value, dtype):
    """A Python scalar of the kind ``dtype`` holds (aten casts scalar arguments the same way).
    A symbolic size stays a SymInt (a SymFloat made from sizes stays one too): ``int()`` or
    ``float()`` of it would fix its value, and an int scalar computes like the float it stands
    for (prims take both)."""
    if isinstance(value, torch.SymInt) and dtype != torch.bool:
        return value
    if isinstance(value, torch.SymFloat) and dtype.is_floating_point:
        return value
    if dtype == torch.bool:
        return bool(value)
    return float(value) if dtype.is_floating_point else int(value)


# --------------------------------------------------------------------------- broadcasting

def canonical_dim(dim, ndim):
    """A dim in [0, ndim); negative dims count from the end. 0-d tensors accept 0 and -1."""
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise DecompositionError(f"dim {dim} out of range for a {ndim}-d tensor")
    return dim % size


def canonical_dims(dims, ndim):
    """A sorted list of distinct dims in [0, ndim); None or [] mean every dim (aten's convention
    for reductions). A 0-d tensor has no dims, though aten accepts 0 and -1 for it."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(ndim))
    dims = sorted({canonical_dim(d, ndim) for d in ([dims] if isinstance(dims, int) else dims)})
    return dims if ndim else []


def broadcast_shapes(*shapes):
    ndim = max(len(s) for s in shapes)
    result = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size != 1:
                if result[i] not in (1, size):
                    raise DecompositionError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
                result[i] = size
    return result


def broadcast_to(x, shape):
    """Broadcast x to shape, aligning trailing dims (numpy rules) with prims.broadcast_in_dim."""
    shape = list(shape)
    if list(x.shape) == shape:
        return x
    first = len(shape) - x.ndim
    return prims.broadcast_in_dim(x, shape, list(range(first, len(shape))))


def promote_and_broadcast(*args, dtype, shape=None):
    """Convert tensor args to dtype and broadcast them to one shape; scalars are cast to dtype."""
    shape = shape or broadcast_shapes(*[a.shape for a in args if isinstance(a, torch.Tensor)])
    return [broadcast_to(to_dtype(a, dtype), shape) if isinstance(a, torch.Tensor)
            else scalar_of(a, dtype) for a in args]


def as_tensors(*args, dtype):
    """Like promote_and_broadcast, but scalars become full tensors too."""
    args = promote_and_broadcast(*args, dtype=dtype)
    like = next(a for a in args if isinstance(a, torch.Tensor))
    return [a if isinstance(a, torch.Tensor) else constant_like(like, a) for a in args]


def constant_like(x, value, dtype=None):
    """A tensor shaped like x, filled with value (in dtype, default x's)."""
    dtype = dtype or x.dtype
    return prims.full(list(x.shape), scalar_of(value, dtype), dtype=dtype, device=x.device)


# --------------------------------------------------------------------------- pointwise

def elementwise(prim, *args, int_to_float=False):
    """Promote, broadcast, call a pointwise prim: the shape of every pointwise reference."""
    dtype = result_type(*args)
    if int_to_float and not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    return prim(*promote_and_broadcast(*args, dtype=dtype))


def _register_unary(op, prim, int_to_float=False):
    register_decomposition(op)(lambda a: elementwise(prim, a, int_to_float=int_to_float))


for _op, _prim in ((aten.abs, prims.abs), (aten.neg, prims.neg), (aten.floor, prims.floor),
                   (aten.ceil, prims.ceil), (aten.round, prims.round), (aten.trunc, prims.trunc),
                   (aten.bitwise_not, prims.bitwise_not)):
    _register_unary(_op.default, _prim)
for _op, _prim in ((aten.exp, prims.exp), (aten.log, prims.log), (aten.log1p, prims.log1p),
                   (aten.expm1, prims.expm1), (aten.sqrt, prims.sqrt), (aten.rsqrt, prims.rsqrt),
                   (aten.sin, prims.sin), (aten.cos, prims.cos), (aten.tanh, prims.tanh),
                   (aten.erf, prims.erf), (aten.reciprocal, prims.reciprocal)):
    _register_unary(_op.default, _prim, int_to_float=True)


@register_decomposition(aten.sign.default, aten.sgn.default)
def sign(a):
    """-1, 0 or 1; a bool is its own sign (eager returns it as a bool)."""
    return prims.convert_element_type(a, a.dtype) if a.dtype == torch.bool else elementwise(prims.sign, a)


def _register_binary(overloads, prim, int_to_float=False):
    register_decomposition(*overloads)(lambda a, b: elementwise(prim, a, b, int_to_float=int_to_float))


_register_binary([aten.mul.Tensor, aten.mul.Scalar], prims.mul)
_register_binary([aten.div.Tensor, aten.div.Scalar], prims.div, int_to_float=True)
_register_binary([aten.fmod.Tensor, aten.fmod.Scalar], prims.fmod)
_register_binary([aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar], prims.pow)
_register_binary([aten.maximum.default], prims.maximum)
_register_binary([aten.minimum.default], prims.minimum)
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _packet = getattr(aten, _name)
    _register_binary([_packet.Tensor, _packet.Scalar], getattr(prims, _name))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _packet = getattr(aten, _name)
    _register_binary([_packet.Tensor, _packet.Scalar], getattr(prims, _name))


@register_decomposition(aten.add.Tensor, aten.add.Scalar)
def add(a, b, alpha=1):
    return _add_scaled(prims.add, a, b, alpha)


@register_decomposition(aten.sub.Tensor, aten.sub.Scalar)
def sub(a, b, alpha=1):
    return _add_scaled(prims.sub, a, b, alpha)


@register_decomposition(aten.rsub.Tensor, aten.rsub.Scalar)
def rsub(a, b, alpha=1):
    return _add_scaled(prims.sub, b, a, alpha)


def _add_scaled(prim, a, b, alpha):
    """a (+ or -) alpha * b, computed like aten: in float32 for low precision, rounded once."""
    if alpha == 1:
        return elementwise(prim, a, b)
    if not isinstance(b, torch.Tensor):
        return elementwise(prim, a, b * alpha)
    dtype = result_type(a, b)
    a, b = promote_and_broadcast(a, b, dtype=opmath_dtype(dtype))
    return to_dtype(prim(a, prims.mul(b, scalar_of(alpha, b.dtype))), dtype)  # bools: alpha=2 is True


@register_decomposition(aten.div.Tensor_mode, aten.div.Scalar_mode)
def div_mode(a, b, *, rounding_mode=None):
    if rounding_mode is None:
        return elementwise(prims.div, a, b, int_to_float=True)
    dtype = result_type(a, b)
    if rounding_mode == "trunc":
        if dtype.is_floating_point:
            return prims.trunc(elementwise(prims.div, a, b))
        return elementwise(prims.div, a, b)
    a, b = as_tensors(a, b, dtype=dtype)
    return floor_divide_float(a, b) if dtype.is_floating_point else floor_divide_int(a, b)


def _signs_differ(x, y):
    return prims.ne(prims.lt(x, 0), prims.lt(y, 0))


def floor_divide_int(a, b):
    """Floor division of integers: C's truncating division, minus one when signs differ."""
    quotient, remainder = prims.div(a, b), prims.fmod(a, b)
    adjust = prims.bitwise_and(prims.ne(remainder, 0), _signs_differ(remainder, b))
    return prims.where(adjust, prims.sub(quotient, 1), quotient)


def floor_divide_float(a, b):
    """Floor division of floats, as aten computes it (exact on quotients that are integers)."""
    mod = prims.fmod(a, b)
    quotient = prims.div(prims.sub(a, mod), b)
    adjust = prims.bitwise_and(prims.ne(mod, 0), _signs_differ(b, mod))
    quotient = prims.where(adjust, prims.sub(quotient, 1), quotient)
    floor = prims.floor(quotient)
    floor = prims.where(prims.gt(prims.sub(quotient, floor), 0.5), prims.add(floor, 1), floor)
    true_quotient = prims.div(a, b)
    signed_zero = prims.mul(prims.sign(true_quotient), 0.0)
    floor = prims.where(prims.eq(quotient, 0), signed_zero, floor)
    return prims.where(prims.eq(b, 0), true_quotient, floor)


@register_decomposition(aten.floor_divide.default, aten.floor_divide.Scalar)
def floor_divide(a, b):
    return div_mode(a, b, rounding_mode="floor")


@register_decomposition(aten.remainder.Tensor, aten.remainder.Scalar, aten.remainder.Scalar_Tensor)
def remainder(a, b):
    """Python's %: fmod, moved by b when the result's sign differs from b's."""
    a, b = as_tensors(a, b, dtype=result_type(a, b))
    mod = prims.fmod(a, b)
    adjust = prims.bitwise_and(prims.ne(mod, 0), _signs_differ(mod, b))
    return prims.where(adjust, prims.add(mod, b), mod)


@register_decomposition(aten.sigmoid.default)
def sigmoid(a):
    dtype = a.dtype if a.dtype.is_floating_point else torch.get_default_dtype()
    x = to_dtype(a, opmath_dtype(dtype))
    return to_dtype(prims.reciprocal(prims.add(prims.exp(prims.neg(x)), 1)), dtype)


def _to_bool(a):
    return a if a.dtype == torch.bool else prims.ne(a, scalar_of(0, a.dtype))


@register_decomposition(aten.logical_not.default)
def logical_not(a):
    return prims.bitwise_not(_to_bool(a))


def _register_logical(op, prim):
    @register_decomposition(op)
    def logical(a, b):
        a, b = promote_and_broadcast(a, b, dtype=result_type(a, b))
        return prim(_to_bool(a), _to_bool(b))


_register_logical(aten.logical_and.default, prims.bitwise_and)
_register_logical(aten.logical_or.default, prims.bitwise_or)
_register_logical(aten.logical_xor.default, prims.bitwise_xor)


@register_decomposition(aten.isnan.default)
def isnan(a):
    return prims.ne(a, a) if a.dtype.is_floating_point else constant_like(a, False, torch.bool)


@register_decomposition(aten.isinf.default)
def isinf(a):
    if not a.dtype.is_floating_point:
        return constant_like(a, False, torch.bool)
    return prims.eq(prims.abs(a), math.inf)


@register_decomposition(aten.clamp.default, aten.clamp.Tensor)
def clamp(a, min=None, max=None):
    dtype = result_type(a, min, max)
    if min is not None:
        a = elementwise(prims.maximum, to_dtype(a, dtype), min)
    if max is not None:
        a = elementwise(prims.minimum, to_dtype(a, dtype), max)
    return to_dtype(a, dtype)


@register_decomposition(aten.clamp_min.default, aten.clamp_min.Tensor)
def clamp_min(a, min):
    return clamp(a, min=min)


@register_decomposition(aten.clamp_max.default, aten.clamp_max.Tensor)
def clamp_max(a, max):
    return clamp(a, max=max)


@register_decomposition(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther,
                        aten.where.Scalar)
def where(condition, a, b):
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        a = constant_like(condition, a, result_type(a, b))
    shape = broadcast_shapes(condition.shape, *[x.shape for x in (a, b) if isinstance(x, torch.Tensor)])
    a, b = promote_and_broadcast(a, b, dtype=result_type(a, b), shape=shape)
    return prims.where(broadcast_to(_to_bool(condition), shape), a, b)


@register_decomposition(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def masked_fill(a, mask, value):
    """a with value wherever mask (broadcast to a's shape) is True; a's dtype is kept."""
    if isinstance(value, torch.Tensor):
        value = broadcast_to(to_dtype(value, a.dtype), a.shape)
    else:
        value = scalar_of(value, a.dtype)
    return prims.where(broadcast_to(mask, a.shape), value, a)


# --------------------------------------------------------------------------- reductions

def keepdim_shape(a, dims):
    return [1 if d in dims else s for d, s in enumerate(a.shape)]


def reduce(prim, a, dims, keepdim, dtype, accumulate_in_opmath=True):
    """Reduce a over dims with prim (sums accumulate in opmath_dtype(dtype)); returns dtype."""
    compute_dtype = opmath_dtype(dtype) if accumulate_in_opmath else dtype
    result = prim(to_dtype(a, compute_dtype), dims)
    if keepdim:
        result = prims.reshape(result, keepdim_shape(a, dims))
    return to_dtype(result, dtype)


def _sum_dtype(a, dtype):
    if dtype is not None:
        return dtype
    return a.dtype if a.dtype.is_floating_point else torch.int64


@register_decomposition(aten.sum.dim_IntList)
def sum_dim(a, dim=None, keepdim=False, *, dtype=None):
    return reduce(prims.sum, a, canonical_dims(dim, a.ndim), keepdim, _sum_dtype(a, dtype))


@register_decomposition(aten.sum.default)
def sum_all(a, *, dtype=None):
    return sum_dim(a, None, dtype=dtype)


@register_decomposition(aten.mean.dim)
def mean(a, dim=None, keepdim=False, *, dtype=None):
    dtype = dtype or a.dtype
    if not dtype.is_floating_point:
        raise DecompositionError(f"mean of a {dtype} tensor: aten needs a floating point dtype")
    dims = canonical_dims(dim, a.ndim)
    count = math.prod(a.shape[d] for d in dims)
    total = reduce(prims.sum, a, dims, keepdim, opmath_dtype(dtype))
    return to_dtype(prims.div(total, count), dtype)


@register_decomposition(aten.mean.default)
def mean_all(a, *, dtype=None):
    return mean(a, None, dtype=dtype)


@register_decomposition(aten.prod.dim_int)
def prod(a, dim, keepdim=False, *, dtype=None):
    return reduce(prims.prod, a, canonical_dims(dim, a.ndim), keepdim, _sum_dtype(a, dtype))


@register_decomposition(aten.prod.default)
def prod_all(a, *, dtype=None):
    return reduce(prims.prod, a, canonical_dims(None, a.ndim), False, _sum_dtype(a, dtype))


@register_decomposition(aten.amax.default)
def amax(a, dim=(), keepdim=False):
    return reduce(prims.amax, a, canonical_dims(dim, a.ndim), keepdim, a.dtype, False)


@register_decomposition(aten.amin.default)
def amin(a, dim=(), keepdim=False):
    return reduce(prims.amin, a, canonical_dims(dim, a.ndim), keepdim, a.dtype, False)


@register_decomposition(aten.max.default)
def max_all(a):
    return amax(a)


@register_decomposition(aten.min.default)
def min_all(a):
    return amin(a)


def _arg_reduce(prim, a, dim, keepdim):
    if a.dtype == torch.bool:  # the first True (or False): the same index among 0s and 1s
        a = to_dtype(a, torch.uint8)
    if dim is None:
        result = prim(prims.reshape(a, [a.numel()]), 0)
        return prims.reshape(result, [1] * a.ndim) if keepdim else result
    dim = canonical_dim(dim, a.ndim)
    if a.ndim == 0:
        return constant_like(a, 0, torch.int64)
    result = prim(a, dim)
    return prims.reshape(result, keepdim_shape(a, [dim])) if keepdim else result


@register_decomposition(aten.argmax.default)
def argmax(a, dim=None, keepdim=False):
    return _arg_reduce(prims.argmax, a, dim, keepdim)


@register_decomposition(aten.argmin.default)
def argmin(a, dim=None, keepdim=False):
    return _arg_reduce(prims.argmin, a, dim, keepdim)


@register_decomposition(aten.max.dim)
def max_dim(a, dim, keepdim=False):
    return amax(a, [dim], keepdim), argmax(a, dim, keepdim)


@register_decomposition(aten.min.dim)
def min_dim(a, dim, keepdim=False):
    return amin(a, [dim], keepdim), argmin(a, dim, keepdim)


def _logical_reduce(prim, a, dim, keepdim, value_if_empty):
    """any/all as the max/min of bools; over no elements they are False/True."""
    dims = canonical_dims(dim, a.ndim)
    if math.prod(a.shape[d] for d in dims) == 0:
        shape = keepdim_shape(a, dims) if keepdim else [s for d, s in enumerate(a.shape) if d not in dims]
        return prims.full(shape, value_if_empty, dtype=torch.bool, device=a.device)
    return reduce(prim, _to_bool(a), dims, keepdim, torch.bool, False)


@register_decomposition(aten.any.default, aten.any.dim, aten.any.dims)
def any_dims(a, dim=None, keepdim=False):
    return _logical_reduce(prims.amax, a, dim, keepdim, False)


@register_decomposition(aten.all.default, aten.all.dim, aten.all.dims)
def all_dims(a, dim=None, keepdim=False):
    return _logical_reduce(prims.amin, a, dim, keepdim, True)


def var_mean_two_pass(a, dims, correction, keepdim):
    """Variance and mean in two passes: mean first, then the mean squared deviation from it.

    Computed in opmath_dtype (float32 for low precision); returns (var, mean) in a's dtype.
    """
    dtype = a.dtype
    x = to_dtype(a, opmath_dtype(dtype))
    count = math.prod(a.shape[d] for d in dims)
    mean = prims.div(prims.sum(x, dims), count)
    centered = prims.sub(x, broadcast_to(prims.reshape(mean, keepdim_shape(a, dims)), a.shape))
    var = prims.div(prims.sum(prims.mul(centered, centered), dims), max(0, count - correction))
    if keepdim:
        var, mean = (prims.reshape(t, keepdim_shape(a, dims)) for t in (var, mean))
    return to_dtype(var, dtype), to_dtype(mean, dtype)



def _correction(correction):
    return 1 if correction is None else correction


@register_decomposition(aten.var.correction)
def var(a, dim=None, *, correction=None, keepdim=False):
    return var_mean_two_pass(a, canonical_dims(dim, a.ndim), _correction(correction), keepdim)[0]


@register_decomposition(aten.var_mean.correction)
def var_mean(a, dim=None, *, correction=None, keepdim=False):
    return var_mean_two_pass(a, canonical_dims(dim, a.ndim), _correction(correction), keepdim)


@register_decomposition(aten.std.correction)
def std(a, dim=None, *, correction=None, keepdim=False):
    return prims.sqrt(var(a, dim, correction=correction, keepdim=keepdim))


# --------------------------------------------------------------------------- views

def infer_size(shape, numel):
    """Replace a -1 in shape by the size that makes the element count numel."""
    shape = list(shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = numel // known if known else 0
    if math.prod(shape) != numel:
        raise DecompositionError(f"shape {shape} is invalid for {numel} elements")
    return shape


@register_decomposition(aten.view.default, aten._unsafe_view.default, aten.view_copy.default,
                        aten.reshape.default)
def reshape(a, shape):
    shape = infer_size(shape, a.numel())
    return a if list(a.shape) == shape else prims.reshape(a, shape)


@register_decomposition(aten._reshape_alias.default)
def _reshape_alias(a, shape, stride):
    """A view that reshape made; the strides it chose are the ones prims.reshape computes."""
    return reshape(a, shape)


@register_decomposition(aten.expand.default, aten.expand_copy.default)
def expand(a, shape, *, implicit=False):
    first = len(shape) - a.ndim
    shape = [a.shape[i - first] if s == -1 else s for i, s in enumerate(shape)]
    return broadcast_to(a, shape)


@register_decomposition(aten.permute.default, aten.permute_copy.default)
def permute(a, dims):
    dims = [canonical_dim(d, a.ndim) for d in dims]
    return a if dims == sorted(dims) else prims.permute(a, dims)


@register_decomposition(aten.transpose.int, aten.transpose_copy.int)
def transpose(a, dim0, dim1):
    dims = list(range(a.ndim))
    if a.ndim == 0:  # aten accepts dims 0 and -1 of a 0-d tensor: the transpose is a view of it
        return permute(a, dims)
    dim0, dim1 = canonical_dim(dim0, a.ndim), canonical_dim(dim1, a.ndim)
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute(a, dims)


@register_decomposition(aten.t.default, aten.t_copy.default)
def t(a):
    return transpose(a, 0, 1) if a.ndim == 2 else a


@register_decomposition(aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims,
                        aten.squeeze_copy.dim, aten.squeeze_copy.dims)
def squeeze(a, dim=None):
    if dim is None:
        dims = range(a.ndim)
    else:
        dims = [canonical_dim(d, a.ndim) for d in ([dim] if isinstance(dim, int) else dim)]
    return reshape(a, [s for d, s in enumerate(a.shape) if not (d in dims and s == 1)])


@register_decomposition(aten.unsqueeze.default, aten.unsqueeze_copy.default)
def unsqueeze(a, dim):
    dim = dim % (a.ndim + 1)
    return reshape(a, [*a.shape[:dim], 1, *a.shape[dim:]])


def slice_dim(a, dim, start, end, step=1):
    """prims.slice along one dim, other dims whole."""
    starts, limits, steps = [0] * a.ndim, list(a.shape), [1] * a.ndim
    starts[dim], limits[dim], steps[dim] = start, end, step
    return prims.slice(a, starts, limits, steps)


def _clamp_index(index, size, default):
    if index is None:
        return default
    if index < 0:
        index += size
    return min(max(index, 0), size)


@register_decomposition(aten.slice.Tensor, aten.slice_copy.Tensor)
def slice_tensor(a, dim=0, start=None, end=None, step=1):
    dim = canonical_dim(dim, a.ndim)
    size = a.shape[dim]
    start, end = _clamp_index(start, size, 0), _clamp_index(end, size, size)
    if (start, end, step) == (0, size, 1):
        return a
    return slice_dim(a, dim, start, max(start, end), step)


@register_decomposition(aten.select.int, aten.select_copy.int)
def select(a, dim, index):
    dim = canonical_dim(dim, a.ndim)
    if not -a.shape[dim] <= index < a.shape[dim]:
        raise DecompositionError(f"select: index {index} out of range for size {a.shape[dim]}")
    index = index % a.shape[dim]
    return squeeze(slice_dim(a, dim, index, index + 1), dim)


@register_decomposition(aten.slice_scatter.default)
def slice_scatter(a, src, dim=0, start=None, end=None, step=1):
    """a with a[start:end:step] along dim replaced by src (functionalization's inverse of slice).

    Position p of dim takes src[(p - start) // step] when it is in the slice: a gather and a
    where, both elementwise in the output.
    """
    dim = canonical_dim(dim, a.ndim)
    size = a.shape[dim]
    start, end = _clamp_index(start, size, 0), _clamp_index(end, size, size)
    if src.shape[dim] == 0:
        return clone(a)
    position = prims.iota(size, start=0, step=1, dtype=torch.int64, device=a.device)
    offset = prims.sub(position, start)
    in_slice = prims.bitwise_and(prims.bitwise_and(prims.ge(position, start), prims.lt(position, end)),
                                 prims.eq(prims.fmod(offset, step), 0))
    source = clamp(floor_divide_int(offset, prims.full([size], step, dtype=torch.int64, device=a.device)),
                   0, src.shape[dim] - 1)
    moved = index_select(to_dtype(src, a.dtype), dim, source)
    return prims.where(prims.broadcast_in_dim(in_slice, list(a.shape), [dim]), moved, a)


@register_decomposition(aten.select_scatter.default)
def select_scatter(a, src, dim, index):
    """a with a.select(dim, index) replaced by src."""
    dim = canonical_dim(dim, a.ndim)
    index = index % a.shape[dim]
    return slice_scatter(a, unsqueeze(src, dim), dim, index, index + 1)


def _strided_positions(size, stride, offset, device):
    """The flat position ``offset + sum(i_k * stride_k)`` of every element of an as_strided view,
    as a 1-d int64 tensor in the view's row-major order."""
    positions = prims.full(list(size), offset, dtype=torch.int64, device=device)
    for dim, (n, step) in enumerate(zip(size, stride)):
        along = prims.iota(n, start=0, step=step, dtype=torch.int64, device=device)
        positions = prims.add(positions, prims.broadcast_in_dim(along, list(size), [dim]))
    return reshape(positions, [-1])


def _check_strided_input(a, what):
    if not a.is_contiguous():
        raise DecompositionError(f"{what} of a non-contiguous tensor: only a contiguous input (whose "
                                 "memory is its values in row-major order) is supported")


@register_decomposition(aten.as_strided.default, aten.as_strided_copy.default)
def as_strided(a, size, stride, storage_offset=None):
    """The elements of contiguous ``a`` at flat positions offset + sum(i_k * stride_k): a gather.

    The AOT tracer hands as_strided a contiguous copy of its input, with the offset counted from
    the first element (``aot/functionalization.py``, ``as_strided_arguments``)."""
    _check_strided_input(a, "as_strided")
    positions = _strided_positions(size, stride, storage_offset or 0, a.device)
    return reshape(prims.gather(reshape(a, [-1]), 0, positions), list(size))


@register_decomposition(aten.as_strided_scatter.default)
def as_strided_scatter(a, src, size, stride, storage_offset=None):
    """A copy of contiguous ``a`` with its as_strided view replaced by src (the inverse of
    as_strided that functionalization needs): two scatters mark and fill the view's positions."""
    _check_strided_input(a, "as_strided_scatter")
    extents = sorted((step, n) for n, step in zip(size, stride) if n > 1)
    reach = 0  # a view that reaches one position twice has no single answer
    for step, n in extents:
        if step <= reach:
            raise DecompositionDeclined(f"as_strided_scatter with size {list(size)} and stride "
                                     f"{list(stride)} writes some elements twice: unsupported")
        reach += step * (n - 1)
    positions = _strided_positions(size, stride, storage_offset or 0, a.device)
    flat = reshape(a, [-1])
    zeros = prims.full([a.numel()], 0, dtype=torch.int64, device=a.device)
    ones = prims.full(list(positions.shape), 1, dtype=torch.int64, device=a.device)
    written = prims.gt(prims.scatter_add(zeros, 0, positions, ones), 0)
    dtype = torch.int64 if a.dtype == torch.bool else a.dtype  # scatter_add adds: not bools
    values = prims.scatter_add(prims.full([a.numel()], 0, dtype=dtype, device=a.device), 0, positions,
                               reshape(to_dtype(src, dtype), [-1]))
    return reshape(prims.where(written, to_dtype(values, a.dtype), flat), list(a.shape))


@register_decomposition(aten.unfold.default, aten.unfold_copy.default)
def unfold(a, dimension, size, step):
    """Windows of ``size`` elements every ``step`` along dim, in a new last dim: a gather of
    positions ``window * step + offset``, then the offset dim moved to the end."""
    if a.ndim == 0:
        return reshape(a, [1])
    dim = canonical_dim(dimension, a.ndim)
    windows = (a.shape[dim] - size) // step + 1
    starts = prims.broadcast_in_dim(prims.iota(windows, start=0, step=step, dtype=torch.int64, device=a.device),
                                    [windows, size], [0])
    offsets = prims.broadcast_in_dim(prims.iota(size, start=0, step=1, dtype=torch.int64, device=a.device),
                                     [windows, size], [1])
    picked = index_select(a, dim, reshape(prims.add(starts, offsets), [-1]))
    picked = reshape(picked, [*a.shape[:dim], windows, size, *a.shape[dim + 1:]])
    return permute(picked, [*range(dim + 1), *range(dim + 2, a.ndim + 1), dim + 1])


@register_decomposition(aten.diagonal.default, aten.diagonal_copy.default)
def diagonal(a, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes, in a new last dim: those two dims moved last and
    flattened, then a gather of the flat positions (i + row0) * columns + (i + column0)."""
    dim1, dim2 = canonical_dim(dim1, a.ndim), canonical_dim(dim2, a.ndim)
    rows, columns = a.shape[dim1], a.shape[dim2]
    row0, column0 = max(-offset, 0), max(offset, 0)
    length = max(0, min(rows - row0, columns - column0))
    rest = [d for d in range(a.ndim) if d not in (dim1, dim2)]
    planes = reshape(permute(a, [*rest, dim1, dim2]), [*(a.shape[d] for d in rest), rows * columns])
    positions = prims.iota(length, start=row0 * columns + column0, step=columns + 1, dtype=torch.int64,
                           device=a.device)
    return index_select(planes, len(rest), positions)


@register_decomposition(aten.split_with_sizes.default, aten.split_with_sizes_copy.default,
                        aten.unsafe_split_with_sizes.default)
def split_with_sizes(a, split_sizes, dim=0):
    dim = canonical_dim(dim, a.ndim)
    starts = [0]
    for size in split_sizes:
        starts.append(starts[-1] + size)
    return [slice_tensor(a, dim, s, e) for s, e in zip(starts, starts[1:])]


@register_decomposition(aten.split.Tensor, aten.split_copy.Tensor, aten.unsafe_split.Tensor)
def split(a, split_size, dim=0):
    size = a.shape[canonical_dim(dim, a.ndim)]
    chunks = max(1, -(-size // split_size)) if split_size else 1
    sizes = [split_size] * (chunks - 1) + [size - split_size * (chunks - 1)]
    return split_with_sizes(a, sizes, dim)


@register_decomposition(aten.unbind.int, aten.unbind_copy.int)
def unbind(a, dim=0):
    return [select(a, dim, i) for i in range(a.shape[canonical_dim(dim, a.ndim)])]


@register_decomposition(aten.alias.default, aten.alias_copy.default, aten.detach.default,
                        aten.detach_copy.default)
def alias(a):
    """Aliases carry no computation: the value itself."""
    return a


@register_decomposition(aten.clone.default, aten.lift_fresh_copy.default)
def clone(a, *, memory_format=None):
    return prims.convert_element_type(a, a.dtype)


def _check_same_device(a, device, what):
    if device is not None and torch.device(device) != a.device:
        raise DecompositionDeclined(f"{what} from {a.device} to {device}: device copies are not supported")


@register_decomposition(aten._to_copy.default)
def _to_copy(a, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    _check_same_device(a, device, "_to_copy")
    return prims.convert_element_type(a, dtype or a.dtype)


@register_decomposition(aten.copy.default)
def copy(a, src, non_blocking=False):
    """Functional copy_: src's values (a tensor or a Python number), broadcast to a's shape, in
    a's dtype."""
    if not isinstance(src, torch.Tensor):
        return constant_like(a, src)
    _check_same_device(src, a.device, "copy")
    return prims.convert_element_type(broadcast_to(src, a.shape), a.dtype)


@register_decomposition(aten._assert_tensor_metadata.default)
def _assert_tensor_metadata(a, size=None, stride=None, dtype=None, *, device=None, layout=None):
    """Checked now, against the metadata known while decomposing; nothing is left at run time."""
    if dtype is not None and a.dtype != dtype:
        raise DecompositionError(f"_assert_tensor_metadata: dtype is {a.dtype}, expected {dtype}")
    if size is not None and list(a.shape) != list(size):
        raise DecompositionError(f"_assert_tensor_metadata: size is {list(a.shape)}, expected {size}")


# --------------------------------------------------------------------------- creation

def _default_device(device):
    return torch.device(device if device is not None else "cpu")


@register_decomposition(aten.full.default)
def full(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or _scalar_dtype(fill_value)
    return prims.full(list(size), scalar_of(fill_value, dtype), dtype=dtype,
                      device=_default_device(device))


@register_decomposition(aten.scalar_tensor.default)
def scalar_tensor(value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full([], value, dtype=dtype or torch.get_default_dtype(), device=device)


def _register_constant(ops, value):
    @register_decomposition(*ops)
    def constant(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return full(size, value, dtype=dtype or torch.get_default_dtype(), device=device)


_register_constant([aten.zeros.default, aten.empty.memory_format], 0)
_register_constant([aten.ones.default], 1)


@register_decomposition(aten.empty_strided.default)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    """Uninitialized memory: zeros do. The result is contiguous whatever stride asks."""
    return full(size, 0, dtype=dtype or torch.get_default_dtype(), device=device)


def _register_like(ops, value):
    @register_decomposition(*ops)
    def like(a, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return full(a.shape, value, dtype=dtype or a.dtype, device=device or a.device)


_register_like([aten.zeros_like.default, aten.empty_like.default], 0)
_register_like([aten.ones_like.default], 1)


@register_decomposition(aten.full_like.default)
def full_like(a, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
              memory_format=None):
    return full(a.shape, fill_value, dtype=dtype or a.dtype, device=device or a.device)


def _register_new(ops, value):
    @register_decomposition(*ops)
    def new(a, size, *, dtype=None, layout=None, device=None, pin_memory=None):
        return full(size, value, dtype=dtype or a.dtype, device=device or a.device)


_register_new([aten.new_zeros.default, aten.new_empty.default], 0)


@register_decomposition(aten.new_empty_strided.default)
def new_empty_strided(a, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    """Uninitialized memory, like a (zeros do; the result is contiguous whatever stride asks)."""
    return full(size, 0, dtype=dtype or a.dtype, device=device or a.device)


@register_decomposition(aten.fill.Scalar, aten.fill.Tensor)
def fill(a, value):
    """A tensor like a, every element value (a number, or a 0-d tensor)."""
    if isinstance(value, torch.Tensor):
        return prims.broadcast_in_dim(to_dtype(value, a.dtype), list(a.shape), [])
    return full(a.shape, value, dtype=a.dtype, device=a.device)
_register_new([aten.new_ones.default], 1)


@register_decomposition(aten.new_full.default)
def new_full(a, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full(size, fill_value, dtype=dtype or a.dtype, device=device or a.device)


@register_decomposition(aten.arange.start_step)
def arange(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None):
    values = (start, end, step)
    if step == 0 or (end - start) * step < 0:
        raise DecompositionError(f"arange({start}, {end}, {step}): the step does not lead from start to end")
    dtype = dtype or result_type(*values)
    device = _default_device(device)
    if all(isinstance(v, (int, torch.SymInt)) for v in values):
        length = -((start - end) // step)  # ceil((end - start) / step) in ints: symbolic sizes stay ints
        return to_dtype(prims.iota(length, start=start, step=step, dtype=torch.int64, device=device),
                        dtype)
    # Float ranges: start + i * step, computed in float64 as aten does, then rounded to dtype.
    length = math.ceil((end - start) / step)
    index = prims.convert_element_type(
        prims.iota(length, start=0, step=1, dtype=torch.int64, device=device), torch.float64)
    return to_dtype(prims.add(prims.mul(index, float(step)), float(start)), dtype)


@register_decomposition(aten.arange.start)
def arange_start(start, end, *, dtype=None, layout=None, device=None, pin_memory=None):
    return arange(start, end, 1, dtype=dtype, device=device)


@register_decomposition(aten.arange.default)
def arange_end(end, *, dtype=None, layout=None, device=None, pin_memory=None):
    return arange(0, end, 1, dtype=dtype, device=device)


def _diagonal_mask(a, keep):
    """keep(col - row) for every [row, col] of a's last two dims, as a bool tensor."""
    rows, cols = a.shape[-2:]
    row = prims.iota(rows, start=0, step=1, dtype=torch.int64, device=a.device)
    col = prims.iota(cols, start=0, step=1, dtype=torch.int64, device=a.device)
    offset = prims.sub(prims.broadcast_in_dim(col, [rows, cols], [1]),
                       prims.broadcast_in_dim(row, [rows, cols], [0]))
    return broadcast_to(keep(offset), a.shape)


@register_decomposition(aten.tril.default)
def tril(a, diagonal=0):
    return prims.where(_diagonal_mask(a, lambda k: prims.le(k, diagonal)), a, scalar_of(0, a.dtype))


@register_decomposition(aten.triu.default)
def triu(a, diagonal=0):
    return prims.where(_diagonal_mask(a, lambda k: prims.ge(k, diagonal)), a, scalar_of(0, a.dtype))


# --------------------------------------------------------------------------- random

def _no_generator(generator):
    if generator is not None:
        raise DecompositionError("explicit torch.Generator arguments are not supported")


@register_decomposition(aten.rand.default)
def rand(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return prims.uniform(list(size), 0.0, 1.0, dtype=dtype or torch.get_default_dtype(),
                         device=_default_device(device))


@register_decomposition(aten.rand_like.default)
def rand_like(a, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return prims.uniform(list(a.shape), 0.0, 1.0, dtype=dtype or a.dtype, device=device or a.device)


@register_decomposition(aten.bernoulli.p)
def bernoulli_p(a, p=0.5, *, generator=None):
    """1 with probability p, else 0, in a's dtype and shape."""
    _no_generator(generator)
    return to_dtype(prims.lt(rand_like(a), p), a.dtype)


@register_decomposition(aten.bernoulli.default)
def bernoulli(a, *, generator=None):
    """1 with probability a[i] at each position i."""
    _no_generator(generator)
    return to_dtype(prims.lt(rand_like(a), a), a.dtype)


# --------------------------------------------------------------------------- indexing

def _check_index(index):
    if index.dtype not in (torch.int64, torch.int32):
        raise DecompositionError(f"index tensors of dtype {index.dtype} are not supported "
                                 "(bool masks give data-dependent shapes)")
    return to_dtype(index, torch.int64)


@register_decomposition(aten.gather.default)
def gather(a, dim, index, *, sparse_grad=False):
    if a.ndim == 0:  # aten treats a 0-d tensor as one element; the result has index's shape
        return reshape(gather(reshape(a, [1]), 0, reshape(index, [-1])), list(index.shape))
    return prims.gather(a, canonical_dim(dim, a.ndim), _check_index(index))


@register_decomposition(aten.scatter_add.default)
def scatter_add(a, dim, index, src):
    """aten allows an index smaller than src: only src's leading part is used."""
    if a.ndim == 0:  # aten treats a 0-d tensor as one element
        return reshape(scatter_add(reshape(a, [1]), 0, reshape(index, [-1]), reshape(src, [-1])), [])
    if src.shape != index.shape:
        src = prims.slice(src, [0] * src.ndim, list(index.shape), [1] * src.ndim)
    return prims.scatter_add(a, canonical_dim(dim, a.ndim), _check_index(index), to_dtype(src, a.dtype))


@register_decomposition(aten.index_select.default)
def index_select(a, dim, index):
    """Whole slices of a along dim, picked by a 1-d index: a gather with a broadcast index."""
    if a.ndim == 0:  # aten treats a 0-d tensor as one element, and returns 0-d
        return reshape(index_select(reshape(a, [1]), 0, index), [])
    dim = canonical_dim(dim, a.ndim)
    index = reshape(_check_index(index), [-1])
    shape = [*a.shape[:dim], index.shape[0], *a.shape[dim + 1:]]
    return prims.gather(a, dim, prims.broadcast_in_dim(index, shape, [dim]))


@register_decomposition(aten.index.Tensor)
def index(a, indices):
    """a[..., idx, ...] with a single integer index tensor (negative indices wrap)."""
    used = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(used) != 1:
        raise DecompositionDeclined(f"aten.index with {len(used)} index tensors: only one is supported")
    dim, idx = used[0]
    idx = _check_index(idx)
    flat = reshape(idx, [-1])
    flat = prims.where(prims.lt(flat, 0), prims.add(flat, a.shape[dim]), flat)
    picked = index_select(a, dim, flat)
    return reshape(picked, [*a.shape[:dim], *idx.shape, *a.shape[dim + 1:]])


@register_decomposition(aten.index_put.default)
def index_put(a, indices, values, accumulate=False):
    """a with values added at a[..., index, ...]: a scatter_add along the index's dim.

    Only accumulate=True with one index tensor is decomposed. Without accumulate, repeated
    indices leave one of their values, and which one is aten's business: that case is declined."""
    used = [(d, i) for d, i in enumerate(indices) if i is not None]
    if not accumulate or len(used) != 1 or used[0][1].dtype not in (torch.int64, torch.int32):
        raise DecompositionDeclined(f"index_put with accumulate={accumulate} and {len(used)} index "
                                    "tensor(s): only accumulate=True with one integer index tensor is decomposed")
    dim, idx = used[0]
    flat = reshape(_check_index(idx), [-1])
    flat = prims.where(prims.lt(flat, 0), prims.add(flat, a.shape[dim]), flat)
    shape = [*a.shape[:dim], flat.shape[0], *a.shape[dim + 1:]]
    values = broadcast_to(to_dtype(values, a.dtype), [*a.shape[:dim], *idx.shape, *a.shape[dim + 1:]])
    return prims.scatter_add(a, dim, prims.broadcast_in_dim(flat, shape, [dim]), reshape(values, shape))


@register_decomposition(aten.flip.default)
def flip(a, dims):
    """a with the order of elements reversed along each of dims: index_selects of reversed iotas."""
    for dim in {canonical_dim(d, a.ndim) for d in dims}:
        size = a.shape[dim]
        a = index_select(a, dim, prims.iota(size, start=size - 1, step=-1, dtype=torch.int64, device=a.device))
    return a


@register_decomposition(aten.cat.default)
def cat(tensors, dim=0):
    dtype = result_type(*tensors)  # over every tensor, the skipped ones too
    # aten skips legacy empty 1-d tensors (shape [0]) when the others have more dims
    tensors = [t for t in tensors if not (t.ndim == 1 and t.numel() == 0)] or list(tensors[:1])
    return prims.cat([to_dtype(t, dtype) for t in tensors], canonical_dim(dim, tensors[0].ndim))


@register_decomposition(aten.stack.default)
def stack(tensors, dim=0):
    dim = dim % (tensors[0].ndim + 1)
    return cat([unsqueeze(t, dim) for t in tensors], dim)


@register_decomposition(aten.constant_pad_nd.default)
def constant_pad_nd(a, pad, value=0):
    """pad = [left, right] for the last dim, then for the one before...; negative pads crop."""
    for i in range(len(pad) // 2):
        dim = a.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        a = slice_tensor(a, dim, max(0, -left), a.shape[dim] - max(0, -right))
        pieces = []
        for width in (left, right):
            shape = list(a.shape)
            shape[dim] = width
            pieces.append(prims.full(shape, scalar_of(value, a.dtype), dtype=a.dtype, device=a.device)
                          if width > 0 else None)
        parts = [p for p in (pieces[0], a, pieces[1]) if p is not None]
        a = prims.cat(parts, dim) if len(parts) > 1 else a
    return a

