"""The prims: a small, closed set of primitive operations (book chapter 7, "Prims").

Every aten graph is rewritten into calls of the prims defined here, as PyTorch's PrimTorch does
(``torch/_prims``). The loop-IR backend (inductor) only has to know how to lower these.

A :class:`Prim` bundles:

* ``impl``: an eager implementation made of plain torch calls (what ``decomp_eager`` runs);
* ``meta``: the shape rule, which checks the arguments and returns the output *meta tensor(s)*
  (shape, dtype and strides, but no data);
* ``kind``: what the backend must do with it (see ``KINDS``);
* ``doc``: its signature and semantics.

The contract that makes the backend simple:

* pointwise prims take tensors of identical shape and dtype, or Python scalars of a type the
  tensor dtype can hold; broadcasting (``broadcast_in_dim``) and type promotion
  (``convert_element_type``) are explicit calls made by the decompositions;
* reductions take explicit ``dims``, have no ``keepdim`` and keep the input dtype;
* every prim that is not a view returns a new contiguous tensor, except the convolutions, whose
  results are laid out as ATen's CPU kernels lay them out (channels-last for channels-last inputs).
"""
import inspect
import math
import types

import torch

from ..aot.symbolic import is_symbolic
from ..utils import contiguous_strides
from .prim_tracer import current_tracer

KINDS = ("pointwise", "reduction", "view", "creation", "random", "indexing", "extern")
# pointwise  out[i] = f(in1[i], in2[i], ...), same shape everywhere
# reduction  combines the elements along some dims into one
# view       reinterprets the input's storage (sizes, strides, offset); copies no data
# creation   makes a tensor from its arguments alone
# random     like creation, but reads the global random generator (the backend calls impl)
# indexing   moves data to or from positions computed from an index tensor or an offset
# extern     handed to a library kernel (BLAS, convolution) by the backend

PRIMS: dict = {}


class Prim:
    """A primitive operation; an ordinary callable that FX graphs can use as a target."""

    def __init__(self, name, kind, impl, meta, doc):
        assert kind in KINDS, kind
        self.name = self.__name__ = self.__qualname__ = name
        self.__module__ = "tinydynamo.prims"  # so FX prints ``tinydynamo_prims_add(...)``
        self.kind = kind
        self.impl = impl
        self.meta = meta
        self.doc = self.__doc__ = doc
        self.__signature__ = inspect.signature(impl)

    def __call__(self, *args, **kwargs):
        tracer = current_tracer()
        if tracer is not None:  # inside decompose(): record a node instead of computing
            return tracer.record(self, args, kwargs)
        return self.impl(*args, **kwargs)

    def __repr__(self):
        return f"prims.{self.name}"

    def __reduce__(self):
        # Pickled (and deep-copied) by reference, as ``tinydynamo.prims.<name>``.
        return self.name


def _register(name, kind, impl, meta, doc):
    assert name not in PRIMS, name
    PRIMS[name] = Prim(name, kind, impl, meta, doc)


# --------------------------------------------------------------------------- argument checks

FLOAT = "floating point"
NUMBER = "integer or floating point"
INTEGRAL = "integer or bool"
ANY = "bool, integer or floating point"

_SUPPORTED_DTYPES = {
    FLOAT: {torch.float16, torch.bfloat16, torch.float32, torch.float64},
    INTEGRAL: {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64},
}
_SUPPORTED_DTYPES[NUMBER] = (_SUPPORTED_DTYPES[FLOAT] | _SUPPORTED_DTYPES[INTEGRAL]) - {torch.bool}
_SUPPORTED_DTYPES[ANY] = _SUPPORTED_DTYPES[FLOAT] | _SUPPORTED_DTYPES[INTEGRAL]


def _check(condition, message):
    if not condition:
        raise ValueError(message)


def _check_dtype(name, dtype, allowed):
    _check(dtype in _SUPPORTED_DTYPES[allowed], f"prims.{name} takes {allowed} tensors, got {dtype}")


def _is_scalar(x):
    return isinstance(x, (bool, int, float, torch.SymInt, torch.SymFloat))


def _scalar_fits(value, dtype):
    """Can a Python scalar be used as a value of ``dtype`` without promoting it? (bool < int < float)
    A symbolic size (SymInt) is an int."""
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, torch.SymInt)):
        return dtype != torch.bool
    return dtype.is_floating_point


def _meta(shape, dtype):
    """A new contiguous meta tensor."""
    return torch.empty(tuple(shape), dtype=dtype, device="meta")


def _check_dims(name, dims, ndim):
    _check(all(isinstance(d, int) and 0 <= d < ndim for d in dims),
           f"prims.{name}: dims {list(dims)} must be in [0, {ndim}) (decompositions canonicalize)")
    _check(len(set(dims)) == len(dims), f"prims.{name}: repeated dim in {list(dims)}")


# --------------------------------------------------------------------------- pointwise

def _pointwise_meta(name, allowed, result_dtype=None):
    """Meta rule shared by all pointwise prims: identical shapes and dtypes, scalars that fit."""

    def meta(*args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        _check(tensors, f"prims.{name} needs at least one tensor argument")
        shape, dtype = tensors[0].shape, tensors[0].dtype
        for t in tensors:
            _check(t.shape == shape, f"prims.{name}: shapes differ ({shape} vs {t.shape}); broadcast first")
            _check(t.dtype == dtype, f"prims.{name}: dtypes differ ({dtype} vs {t.dtype}); convert first")
        for a in args:
            _check(isinstance(a, torch.Tensor) or (_is_scalar(a) and _scalar_fits(a, dtype)),
                   f"prims.{name}: argument {a!r} is not a tensor or a scalar that fits {dtype}")
        _check_dtype(name, dtype, allowed)
        return _meta(shape, result_dtype or dtype)

    return meta


def _as_tensors(*args):
    """Turn Python scalars into 0-d tensors of the tensor arguments' dtype (for torch functions
    that accept a scalar in only some positions)."""
    like = next(a for a in args if isinstance(a, torch.Tensor))
    return [a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=like.dtype, device=like.device)
            for a in args]


def _unary(name, torch_fn, allowed, doc):
    def impl(a):
        return torch_fn(a).contiguous()

    _register(name, "pointwise", impl, _pointwise_meta(name, allowed), f"{name}(a) -> Tensor: {doc}")


def _binary(name, torch_fn, allowed, doc, result_dtype=None):
    def impl(a, b):
        return torch_fn(*_as_tensors(a, b)).contiguous()

    _register(name, "pointwise", impl, _pointwise_meta(name, allowed, result_dtype),
              f"{name}(a, b) -> Tensor: {doc}")


_unary("abs", torch.abs, NUMBER, "|a|.")
_unary("neg", torch.neg, NUMBER, "-a.")
_unary("exp", torch.exp, FLOAT, "e**a.")
_unary("log", torch.log, FLOAT, "natural logarithm (nan below 0, -inf at 0).")
_unary("log1p", torch.log1p, FLOAT, "log(1 + a), accurate for small a.")
_unary("expm1", torch.expm1, FLOAT, "e**a - 1, accurate for small a.")
_unary("sqrt", torch.sqrt, FLOAT, "square root.")
_unary("rsqrt", torch.rsqrt, FLOAT, "1 / sqrt(a).")
_unary("sin", torch.sin, FLOAT, "sine (radians).")
_unary("cos", torch.cos, FLOAT, "cosine (radians).")
_unary("tanh", torch.tanh, FLOAT, "hyperbolic tangent.")
_unary("erf", torch.erf, FLOAT, "the Gauss error function.")
_unary("floor", torch.floor, NUMBER, "largest integer <= a (identity on integers).")
_unary("ceil", torch.ceil, NUMBER, "smallest integer >= a (identity on integers).")
_unary("round", torch.round, NUMBER, "nearest integer, halves to even (identity on integers).")
_unary("trunc", torch.trunc, NUMBER, "rounds toward zero (identity on integers).")
_unary("sign", torch.sign, NUMBER, "-1, 0 or 1 by the sign of a (nan stays nan).")
_unary("reciprocal", torch.reciprocal, FLOAT, "1 / a.")
_unary("bitwise_not", torch.bitwise_not, INTEGRAL, "~a; logical not on bool.")

_binary("add", torch.add, ANY, "a + b (logical or on bool).")
_binary("sub", torch.sub, NUMBER, "a - b.")
_binary("mul", torch.mul, ANY, "a * b (logical and on bool).")
_binary("fmod", torch.fmod, NUMBER, "C fmod: a - b * trunc(a / b); the result has the sign of a.")
_binary("pow", torch.pow, NUMBER, "a ** b.")
_binary("maximum", torch.maximum, ANY, "the larger of a and b; nan if either is nan.")
_binary("minimum", torch.minimum, ANY, "the smaller of a and b; nan if either is nan.")
_binary("bitwise_and", torch.bitwise_and, INTEGRAL, "a & b.")
_binary("bitwise_or", torch.bitwise_or, INTEGRAL, "a | b.")
_binary("bitwise_xor", torch.bitwise_xor, INTEGRAL, "a ^ b.")
for _name, _fn, _op in (("eq", torch.eq, "=="), ("ne", torch.ne, "!="), ("lt", torch.lt, "<"),
                        ("le", torch.le, "<="), ("gt", torch.gt, ">"), ("ge", torch.ge, ">=")):
    _binary(_name, _fn, ANY, f"a {_op} b, a bool tensor.", result_dtype=torch.bool)


def _div(a, b):
    a, b = _as_tensors(a, b)
    rounding_mode = None if a.dtype.is_floating_point else "trunc"
    return torch.div(a, b, rounding_mode=rounding_mode).contiguous()


_register("div", "pointwise", _div, _pointwise_meta("div", NUMBER),
          "div(a, b) -> Tensor: a / b; on integers C division, rounding toward zero.")


def _where(pred, a, b):
    a, b = _as_tensors(a, b)
    return torch.where(pred, a, b).contiguous()


def _where_meta(pred, a, b):
    _check(isinstance(pred, torch.Tensor) and pred.dtype == torch.bool,
           "prims.where: pred must be a bool tensor")
    out = _pointwise_meta("where", ANY)(a, b)
    _check(pred.shape == out.shape, f"prims.where: pred shape {pred.shape} differs from {out.shape}")
    return out


_register("where", "pointwise", _where, _where_meta,
          "where(pred, a, b) -> Tensor: a where pred is True, else b. pred is a bool tensor of the "
          "same shape; a and b as for other pointwise prims.")


def _convert_element_type(a, dtype):
    return a.to(dtype=dtype, memory_format=torch.contiguous_format, copy=True)


def _convert_element_type_meta(a, dtype):
    _check_dtype("convert_element_type", a.dtype, ANY)
    _check_dtype("convert_element_type", dtype, ANY)
    return _meta(a.shape, dtype)


_register("convert_element_type", "pointwise", _convert_element_type, _convert_element_type_meta,
          "convert_element_type(a, dtype) -> Tensor: a copy of a converted to dtype (floats to "
          "integers truncate, nonzero to bool is True). Also the way to copy a tensor.")


# --------------------------------------------------------------------------- reductions

def _reduction_meta(name, allowed):
    def meta(a, dims):
        _check_dims(name, dims, a.ndim)
        _check_dtype(name, a.dtype, allowed)
        return _meta([s for d, s in enumerate(a.shape) if d not in dims], a.dtype)

    return meta


def _reduction(name, reduce_dims, allowed, doc):
    def impl(a, dims):
        if not dims:  # torch treats an empty dim list as "all dims"; a prim reduces none
            return _convert_element_type(a, a.dtype)
        return reduce_dims(a, list(dims)).contiguous()

    _register(name, "reduction", impl, _reduction_meta(name, allowed),
              f"{name}(a, dims) -> Tensor: {doc} over dims, which are removed from the shape "
              "(no keepdim). The result has a's dtype; decompositions upcast low precision first.")


def _prod_dims(a, dims):
    for d in sorted(dims, reverse=True):
        a = torch.prod(a, d, dtype=a.dtype)
    return a


_reduction("sum", lambda a, dims: torch.sum(a, dims, dtype=a.dtype), NUMBER, "the sum")
_reduction("prod", _prod_dims, NUMBER, "the product")
_reduction("amax", torch.amax, ANY, "the maximum (nan if any element is nan)")
_reduction("amin", torch.amin, ANY, "the minimum (nan if any element is nan)")


def _arg_reduction(name, torch_fn, what):
    def impl(a, dim):
        return torch_fn(a, dim).contiguous()

    def meta(a, dim):
        _check_dims(name, [dim], a.ndim)
        _check_dtype(name, a.dtype, NUMBER)
        return _meta([s for d, s in enumerate(a.shape) if d != dim], torch.int64)

    _register(name, "reduction", impl, meta,
              f"{name}(a, dim) -> Tensor: int64 index along dim of the first {what} "
              "(of the first nan if there is one); dim is removed from the shape.")


_arg_reduction("argmax", torch.argmax, "maximum")
_arg_reduction("argmin", torch.argmin, "minimum")


# --------------------------------------------------------------------------- views

def _broadcast_in_dim(a, shape, broadcast_dimensions):
    for d in range(len(shape)):
        if d not in broadcast_dimensions:
            a = a.unsqueeze(d)
    return a.expand(shape)


def _broadcast_in_dim_meta(a, shape, broadcast_dimensions):
    name = "broadcast_in_dim"
    _check(len(broadcast_dimensions) == a.ndim,
           f"prims.{name}: need one broadcast dimension per input dim, got {broadcast_dimensions}")
    _check(list(broadcast_dimensions) == sorted(set(broadcast_dimensions)),
           f"prims.{name}: broadcast_dimensions {broadcast_dimensions} must be increasing")
    strides = [0] * len(shape)
    for in_dim, out_dim in enumerate(broadcast_dimensions):
        _check(0 <= out_dim < len(shape) and a.shape[in_dim] in (1, shape[out_dim]),
               f"prims.{name}: cannot broadcast {tuple(a.shape)} to {tuple(shape)} "
               f"along {broadcast_dimensions}")
        if a.shape[in_dim] == shape[out_dim]:
            strides[out_dim] = a.stride(in_dim)
    return a.as_strided(shape, strides, a.storage_offset())


_register("broadcast_in_dim", "view", _broadcast_in_dim, _broadcast_in_dim_meta,
          "broadcast_in_dim(a, shape, broadcast_dimensions) -> Tensor: a view of a with the given "
          "shape. Input dim i becomes output dim broadcast_dimensions[i] (increasing) and must have "
          "size 1 (then repeated, stride 0) or the output size; the other output dims are new and "
          "repeat a (stride 0).")


def view_strides(shape, strides, new_shape):
    """Strides that show a tensor of (shape, strides) as new_shape without copying, or None.

    Dims that are contiguous with each other (stride[i] == stride[i+1] * size[i+1]) form a chunk
    that behaves like one flat dim. A view exists when the new dims, read from the innermost,
    split each chunk exactly.
    """
    if math.prod(shape) == 0:
        return contiguous_strides(new_shape)
    chunks = []  # (number of elements, stride of the innermost dim), outermost chunk first
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        if chunks and chunks[-1][1] == stride * size:
            chunks[-1] = (chunks[-1][0] * size, stride)
        else:
            chunks.append((size, stride))
    new_strides = list(contiguous_strides(new_shape))  # kept for the leftover size-1 dims
    d = len(new_shape) - 1
    for numel, stride in reversed(chunks):
        covered = 1
        while covered < numel:
            new_strides[d] = stride * covered
            covered *= new_shape[d]
            d -= 1
        if covered != numel:
            return None
    return tuple(new_strides)


def _reshape_meta(a, shape):
    _check(all(isinstance(s, (int, torch.SymInt)) and s >= 0 for s in shape),
           f"prims.reshape: shape {shape} must be explicit (no -1)")
    _check(math.prod(shape) == a.numel(), f"prims.reshape: cannot reshape {tuple(a.shape)} to {shape}")
    strides = view_strides(a.shape, a.stride(), shape)
    if strides is None:
        return _meta(shape, a.dtype)
    return a.as_strided(shape, strides, a.storage_offset())


_register("reshape", "view", lambda a, shape: torch.reshape(a, shape), _reshape_meta,
          "reshape(a, shape) -> Tensor: a with the same elements in row-major order and the given "
          "shape (no -1). A view when a's strides allow it, otherwise a new contiguous tensor.")


def _permute_meta(a, dims):
    _check(sorted(dims) == list(range(a.ndim)), f"prims.permute: {dims} is not a permutation")
    return a.as_strided([a.shape[d] for d in dims], [a.stride(d) for d in dims], a.storage_offset())


_register("permute", "view", lambda a, dims: a.permute(dims), _permute_meta,
          "permute(a, dims) -> Tensor: a view whose dim i is a's dim dims[i].")


def _slice(a, start_indices, limit_indices, strides=None):
    strides = strides or [1] * a.ndim
    return a[tuple(slice(*args) for args in zip(start_indices, limit_indices, strides))]


def _slice_meta(a, start_indices, limit_indices, strides=None):
    strides = strides or [1] * a.ndim
    _check(len(start_indices) == len(limit_indices) == len(strides) == a.ndim,
           "prims.slice: needs a start, limit and stride for every dim")
    shape, new_strides, offset = [], [], a.storage_offset()
    for d, (start, limit, step) in enumerate(zip(start_indices, limit_indices, strides)):
        _check(0 <= start <= limit <= a.shape[d] and step >= 1,
               f"prims.slice: bad range {start}:{limit}:{step} for dim {d} of size {a.shape[d]}")
        shape.append((limit - start + step - 1) // step)
        new_strides.append(a.stride(d) * step)
        offset += start * a.stride(d)
    return a.as_strided(shape, new_strides, offset)


_register("slice", "view", _slice, _slice_meta,
          "slice(a, start_indices, limit_indices, strides=None) -> Tensor: a view of "
          "a[start:limit:stride] in every dim, with 0 <= start <= limit <= size and stride >= 1.")


# --------------------------------------------------------------------------- creation and random

def _creation_meta(name, allowed):
    def meta(shape, *values, dtype, device):
        _check_dtype(name, dtype, allowed)
        _check(all(_scalar_fits(v, dtype) for v in values),
               f"prims.{name}: values {values} do not fit {dtype}")
        return _meta(shape, dtype)

    return meta


def _full(shape, fill_value, *, dtype, device):
    return torch.full(shape, fill_value, dtype=dtype, device=device)


_register("full", "creation", _full, _creation_meta("full", ANY),
          "full(shape, fill_value, *, dtype, device) -> Tensor: a tensor filled with fill_value.")


def _iota(length, *, start, step, dtype, device):
    return start + step * torch.arange(length, dtype=dtype, device=device)


def _iota_meta(length, *, start, step, dtype, device):
    _check_dtype("iota", dtype, NUMBER)
    _check(not dtype.is_floating_point and isinstance(start, (int, torch.SymInt))
           and isinstance(step, (int, torch.SymInt)),
           "prims.iota makes integer tensors; convert afterwards")
    return _meta([length], dtype)


_register("iota", "creation", _iota, _iota_meta,
          "iota(length, *, start, step, dtype, device) -> Tensor: the 1-d integer tensor "
          "[start, start + step, ..., start + (length - 1) * step].")


def _uniform(shape, low, high, *, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device).uniform_(low, high)


_register("uniform", "random", _uniform, _creation_meta("uniform", FLOAT),
          "uniform(shape, low, high, *, dtype, device) -> Tensor: floats drawn uniformly from "
          "[low, high) with torch's global generator. Backends call impl, which is the runtime.")


# --------------------------------------------------------------------------- indexing

def _gather_meta(a, dim, index):
    _check(index.dtype == torch.int64 and index.ndim == a.ndim,
           "prims.gather: index must be an int64 tensor with as many dims as a")
    _check_dims("gather", [dim], a.ndim)
    _check(all(index.shape[d] <= a.shape[d] for d in range(a.ndim) if d != dim),
           f"prims.gather: index shape {tuple(index.shape)} too large for {tuple(a.shape)}")
    return _meta(index.shape, a.dtype)


_register("gather", "indexing", lambda a, dim, index: torch.gather(a, dim, index).contiguous(),
          _gather_meta,
          "gather(a, dim, index) -> Tensor: out[i][j][k] = a[index[i][j][k]][j][k] for dim 0 "
          "(likewise for other dims). Shape of index, which must be in range.")


def _scatter_add_meta(a, dim, index, src):
    _check(index.dtype == torch.int64 and index.shape == src.shape and index.ndim == a.ndim,
           "prims.scatter_add: index (int64) and src must have one shape, with a's number of dims")
    _check(src.dtype == a.dtype, "prims.scatter_add: src and a must have one dtype")
    _check_dims("scatter_add", [dim], a.ndim)
    return _meta(a.shape, a.dtype)


_register("scatter_add", "indexing",
          lambda a, dim, index, src: a.scatter_add(dim, index, src).contiguous(), _scatter_add_meta,
          "scatter_add(a, dim, index, src) -> Tensor: a copy of a with out[index[i][j]][j] += "
          "src[i][j] for dim 0 (likewise for other dims); repeated indices accumulate.")


def _cat_meta(tensors, dim):
    _check(len(tensors) > 0, "prims.cat needs at least one tensor")
    first = tensors[0]
    _check_dims("cat", [dim], first.ndim)
    for t in tensors:
        _check(t.dtype == first.dtype and t.ndim == first.ndim, "prims.cat: dtypes and ranks must match")
        _check(all(t.shape[d] == first.shape[d] for d in range(t.ndim) if d != dim),
               "prims.cat: sizes must match except along dim")
    shape = list(first.shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return _meta(shape, first.dtype)


_register("cat", "indexing", lambda tensors, dim: torch.cat(tensors, dim).contiguous(), _cat_meta,
          "cat(tensors, dim) -> Tensor: the tensors (same dtype and rank, same sizes except along "
          "dim) joined along dim.")


# --------------------------------------------------------------------------- extern (library kernels)

def _matmul_meta(name, ndim):
    def meta(a, b):
        _check(a.ndim == b.ndim == ndim and a.dtype == b.dtype,
               f"prims.{name} takes two {ndim}-d tensors of one dtype")
        _check(a.shape[-1] == b.shape[-2] and a.shape[:-2] == b.shape[:-2],
               f"prims.{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} do not match")
        _check_dtype(name, a.dtype, NUMBER)
        return _meta([*a.shape[:-1], b.shape[-1]], a.dtype)

    return meta


_register("mm", "extern", lambda a, b: torch.mm(a, b).contiguous(), _matmul_meta("mm", 2),
          "mm(a, b) -> Tensor: the matrix product of an [n, k] and a [k, m] tensor.")
_register("bmm", "extern", lambda a, b: torch.bmm(a, b).contiguous(), _matmul_meta("bmm", 3),
          "bmm(a, b) -> Tensor: batched matrix product of [B, n, k] and [B, k, m] tensors.")


def suggest_memory_format(*tensors):
    """Channels-last when one of ``tensors`` is laid out channels-last (and not also contiguous),
    else contiguous: the layout of a tensor, and the one ATen's CPU convolution gives its result."""
    for t in tensors:
        if t.dim() in (4, 5) and not is_symbolic(t) and not t.is_contiguous():
            channels_last = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
            if t.is_contiguous(memory_format=channels_last):
                return channels_last
    return torch.contiguous_format


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    out = torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    return out.contiguous(memory_format=suggest_memory_format(input, weight))


def _convolution_meta(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                      groups):
    out = torch.ops.aten.convolution.default(input, weight, bias, stride, padding, dilation,
                                             transposed, output_padding, groups)
    return torch.empty(out.shape, dtype=out.dtype, device="meta",
                       memory_format=suggest_memory_format(input, weight))


_register("convolution", "extern", _convolution, _convolution_meta,
          "convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, "
          "groups) -> Tensor: aten.convolution (bias may be None), laid out channels-last when the "
          "input or the weight is, as ATen does on CPU (with convolution_backward, the prims whose layout is "
          "not always contiguous).")


def _convolution_backward(grad_output, input, weight, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    grads = torch.ops.aten.convolution_backward.default(
        grad_output, input, weight, None, stride, padding, dilation, transposed, output_padding,
        groups, [*output_mask, False])
    memory_format = suggest_memory_format(input, weight)
    return tuple(g.contiguous(memory_format=memory_format) if g is not None else None for g in grads[:2])


def _convolution_backward_meta(grad_output, input, weight, stride, padding, dilation, transposed,
                               output_padding, groups, output_mask):
    _check(len(output_mask) == 2, "prims.convolution_backward: output_mask is [input, weight]")
    memory_format = suggest_memory_format(input, weight)
    return tuple(torch.empty(t.shape, dtype=t.dtype, device="meta", memory_format=memory_format) if needed else None
                 for t, needed in zip((input, weight), output_mask))


_register("convolution_backward", "extern", _convolution_backward, _convolution_backward_meta,
          "convolution_backward(grad_output, input, weight, stride, padding, dilation, transposed, "
          "output_padding, groups, output_mask) -> (Tensor?, Tensor?): the gradients of "
          "convolution with respect to input and weight, laid out as convolution lays out its "
          "result; output_mask [bool, bool] says which to compute (the other is None). The bias "
          "gradient is a sum, left to decompositions.")


# Decompositions write ``prims.add(a, b)``; the package exposes the same as ``tinydynamo.prims.add``.
prims = types.SimpleNamespace(**PRIMS)
