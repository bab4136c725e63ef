"""Small Triton functions that generated kernels call (chapter 11, "Generating Triton").

TorchInductor keeps such functions in ``torch/_inductor/runtime/triton_helpers.py`` and every
kernel imports that module. Ours are written here as plain Python functions, and the code
generator copies the ones a kernel calls into the kernel's own file, under ``@triton.jit``. So a
generated file is complete on its own: it can be read top to bottom, and it is compiled for the
GPU, or run by Triton's CPU interpreter, together with its helpers (a function decorated for one
of the two cannot be called from a kernel decorated for the other).

Why these exist at all:

* ``tl.max``/``tl.min`` ignore nans and ``tl.argmax`` has no nan rule; torch propagates nans and
  its argmax returns the first nan. Our reductions therefore compute the nan case themselves.
* libdevice functions (``tanh``, ``log1p``, ``pow``...) do not run in the interpreter. The few
  math functions that Triton has no builtin for are built here from ``exp``, ``log``, ``floor``.
* Kernels cannot raise. Like the C++ kernels, they record an error code in a flag that the
  wrapper checks after the graph has run (1: an index out of bounds, 2: integer division by 0).
"""
import triton.language as tl

# --------------------------------------------------------------------------- bfloat16


def round_to_bfloat16(x):
    """A float32 rounded to bfloat16's precision (to nearest, ties to even), still a float32.
    GPUs round like this when they convert to bfloat16; Triton's interpreter truncates, so
    kernels round explicitly and the conversion that follows is exact on both."""
    bits = x.to(tl.uint32, bitcast=True)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return tl.where(x != x, x, rounded.to(tl.float32, bitcast=True))


# --------------------------------------------------------------------------- nan-aware max and min


def maximum(a, b):
    """Elementwise max that propagates nan, as torch.maximum does."""
    return tl.where((a > b) | (a != a), a, b)


def minimum(a, b):
    """Elementwise min that propagates nan, as torch.minimum does."""
    return tl.where((a < b) | (a != a), a, b)


def max_propagate_nan(values, axis: tl.constexpr):
    """Max along ``axis``; nan if any value is nan (tl.max skips nans)."""
    has_nan = tl.max((values != values).to(tl.int8), axis)
    return tl.where(has_nan != 0, float("nan"), tl.max(values, axis))


def min_propagate_nan(values, axis: tl.constexpr):
    """Min along ``axis``; nan if any value is nan (tl.min skips nans)."""
    has_nan = tl.max((values != values).to(tl.int8), axis)
    return tl.where(has_nan != 0, float("nan"), tl.min(values, axis))


# --------------------------------------------------------------------------- argmax and argmin


def argmax_update(acc, acc_index, value, index):
    """One step of a looped argmax, lane by lane: take ``value`` if it is larger, or the first nan.
    Each lane sees increasing indices, so a strict ``>`` keeps the first of equal values."""
    take = (value > acc) | ((value != value) & (acc == acc))
    return tl.where(take, value, acc), tl.where(take, index, acc_index)


def argmin_update(acc, acc_index, value, index):
    """One step of a looped argmin (see argmax_update)."""
    take = (value < acc) | ((value != value) & (acc == acc))
    return tl.where(take, value, acc), tl.where(take, index, acc_index)


def argmax_first(values, indices, axis: tl.constexpr):
    """The index of the first largest value along ``axis``, or of the first nan (torch.argmax)."""
    is_nan = values != values
    has_nan = tl.max(is_nan.to(tl.int8), axis, keep_dims=True) != 0
    best = tl.max(values, axis, keep_dims=True)
    candidate = tl.where(has_nan, is_nan, values == best)
    return tl.min(tl.where(candidate, indices, 9223372036854775807), axis)


def argmin_first(values, indices, axis: tl.constexpr):
    """The index of the first smallest value along ``axis``, or of the first nan (torch.argmin)."""
    is_nan = values != values
    has_nan = tl.max(is_nan.to(tl.int8), axis, keep_dims=True) != 0
    best = tl.min(values, axis, keep_dims=True)
    candidate = tl.where(has_nan, is_nan, values == best)
    return tl.min(tl.where(candidate, indices, 9223372036854775807), axis)


def multiply(a, b):
    """The combine function of a product reduction (``tl.reduce(values, axis, multiply)``)."""
    return a * b


# --------------------------------------------------------------------------- index arithmetic


def floordiv(a, b):
    """Python's ``a // b`` for integers (Triton's ``//`` rounds toward zero, like C)."""
    quotient = a // b
    return tl.where((a % b != 0) & ((a < 0) != (b < 0)), quotient - 1, quotient)


def floormod(a, b):
    """Python's ``a % b`` for integers (Triton's ``%`` takes the sign of ``a``, like C)."""
    remainder = a % b
    return tl.where((remainder != 0) & ((remainder < 0) != (b < 0)), remainder + b, remainder)


# --------------------------------------------------------------------------- errors


def check_index(index, size, mask, error_flag):
    """An index loaded from a tensor (gather): where ``mask`` holds and it is outside
    ``[0, size)``, record error 1. Such an index is replaced by 0, so nothing is read out of
    bounds."""
    outside = (index < 0) | (index >= size)
    bad = outside & mask
    tl.store(error_flag + tl.zeros(bad.shape, tl.int32), 1, bad)
    return tl.where(outside, 0, index)


def div_trunc_int(a, b, mask, error_flag):
    """C's ``a / b`` for signed integers (rounds toward zero), as torch's integer division.
    Division by zero records error 2 (where ``mask`` holds) and gives 0; ``x / -1`` is ``-x``,
    which wraps for the most negative x instead of trapping."""
    zero = (b == 0) & mask
    tl.store(error_flag + tl.zeros(zero.shape, tl.int32), 2, zero)
    safe = tl.where((b == 0) | (b == -1), 1, b)
    return tl.where(b == -1, -a, tl.where(b == 0, 0, a // safe))


def fmod_int(a, b, mask, error_flag):
    """C's ``a % b`` for signed integers (the sign of ``a``), as torch.fmod; by zero: error 2."""
    zero = (b == 0) & mask
    tl.store(error_flag + tl.zeros(zero.shape, tl.int32), 2, zero)
    safe = tl.where((b == 0) | (b == -1), 1, b)
    return tl.where((b == 0) | (b == -1), 0, a % safe)


# --------------------------------------------------------------------------- math


def expm1(x):
    """exp(x) - 1, accurate near 0 (Kahan's trick: the rounding errors of exp and log cancel)."""
    u = tl.exp(x)
    um1 = u - 1.0
    ratio = um1 * x / tl.log(u)
    result = tl.where(u == 1.0, x, tl.where(um1 == -1.0, -1.0, ratio))
    return tl.where(u == float("inf"), float("inf"), result)


def log1p(x):
    """log(1 + x), accurate near 0 (Kahan's trick)."""
    u = 1.0 + x
    ratio = tl.log(u) * x / (u - 1.0)
    result = tl.where(u == 1.0, x, ratio)
    return tl.where(x == float("inf"), float("inf"), result)


def tanh(x):
    """tanh from expm1, accurate for small and large |x|."""
    e = expm1(-2.0 * tl.abs(x))
    magnitude = -e / (2.0 + e)
    return tl.where(x < 0, -magnitude, magnitude)


def trunc(x):
    """Round toward zero."""
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


def round_half_even(x):
    """Round to the nearest integer, halves to even (C's nearbyint, torch.round)."""
    below = tl.floor(x)
    fraction = x - below
    below_is_even = below - 2.0 * tl.floor(below * 0.5) == 0.0
    up = (fraction > 0.5) | ((fraction == 0.5) & ~below_is_even)
    return tl.where(up, below + 1.0, below)


def sign(x):
    """-1, 0 or 1; 0 for nan, as torch.sign."""
    return tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0)).to(x.dtype)


def pow_float(a, b):
    """``a ** b`` for floats with C's pow rules (negative bases, zeros, infinities, nans)."""
    magnitude = tl.exp2(b * tl.log2(tl.abs(a)))
    b_is_integer = tl.floor(b) == b
    b_is_odd = b_is_integer & (tl.abs(b - 2.0 * tl.floor(b * 0.5)) == 1.0)
    result = tl.where((a < 0) & b_is_odd, -magnitude, magnitude)
    result = tl.where((a < 0) & (a > float("-inf")) & ~b_is_integer, float("nan"), result)
    one = (b == 0) | (a == 1.0) | ((tl.abs(a) == 1.0) & (tl.abs(b) == float("inf")))
    return tl.where(one, 1.0, result)


def pow_int(base, exponent):
    """Integer power by squaring (wrapping like C); a negative exponent gives 0, except for the
    bases 1 and -1."""
    base, exponent = tl.broadcast(base, exponent)
    result = tl.full(base.shape, 1, base.dtype)
    square = base
    bits = exponent
    for _ in range(64):
        result = tl.where((bits & 1) != 0, result * square, result)
        square = square * square
        bits = bits >> 1
    negative = tl.where(base == 1, 1, tl.where(base == -1, 1 - 2 * (exponent & 1), 0))
    return tl.where(exponent < 0, negative, result)
