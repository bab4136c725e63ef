"""OpInfo-style samples for every decomposed aten op: SAMPLES[op] is a list of Sample.

Samples cover broadcasting, 0-d, empty and non-contiguous inputs, negative dims, keepdim, and
float32 / float64 / bfloat16 / integer / bool dtypes where the op takes them. A sample whose op
fills memory it leaves uninitialized, or draws random numbers, compares only shapes and dtypes
(``values=False``); test_prims_random.py checks the random ops' values.
"""
import dataclasses
import math

import torch

from prims_helpers import make_tensor as T

aten = torch.ops.aten
f32, f64, bf16, i64, i32, b8 = torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32, torch.bool
BF16_TOL = dict(atol=2e-2, rtol=2e-2)


@dataclasses.dataclass
class Sample:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    tolerance: dict = dataclasses.field(default_factory=dict)
    values: bool = True


def S(*args, tol=None, values=True, **kwargs):
    return Sample(args, kwargs, tol or {}, values)


SAMPLES: dict = {}


def add(ops, samples):
    for op in ops:
        assert op not in SAMPLES, op
        SAMPLES[op] = samples


def specials(dtype=f32):
    return torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.5, 0.5, -0.5, 2.5],
                        dtype=dtype)


def positive(*shape, dtype=f32, noncontiguous=False):
    return T(*shape, dtype=dtype, low=0.1, high=4.0, noncontiguous=noncontiguous)


# --------------------------------------------------------------------------- unary pointwise

def unary_samples(float_only=False, domain=None, ints=True, bools=False):
    make = domain or T
    samples = [S(make(3, 4)), S(specials()), S(make(3, 4, dtype=bf16), tol=BF16_TOL),
               S(make(2, 3, dtype=f64)), S(make()), S(make(0, 3)), S(make(4, 3, noncontiguous=True))]
    if ints:
        samples.append(S(T(3, 4, dtype=i64, low=1, high=9) if domain else T(3, 4, dtype=i64)))
    if bools:
        samples.append(S(T(5, dtype=b8)))
    return samples


add([aten.abs.default, aten.neg.default, aten.floor.default, aten.ceil.default,
     aten.round.default, aten.trunc.default], unary_samples())
add([aten.sign.default, aten.sgn.default], unary_samples(bools=True))
add([aten.exp.default, aten.expm1.default, aten.sin.default, aten.cos.default, aten.tanh.default,
     aten.erf.default, aten.sigmoid.default, aten.reciprocal.default], unary_samples())
add([aten.log.default, aten.log1p.default, aten.sqrt.default, aten.rsqrt.default],
    unary_samples(domain=positive) + [S(specials())])
add([aten.relu.default], [S(specials()), S(T(3, 4)), S(T(3, 4, dtype=bf16)), S(T(3, 4, dtype=i64)),
                          S(T(4, 3, noncontiguous=True)), S(T())])
add([aten.bitwise_not.default], [S(T(3, 4, dtype=i64)), S(T(5, dtype=b8)), S(T(3, dtype=i32))])
add([aten.logical_not.default], [S(specials()), S(T(3, 4, dtype=i64)), S(T(5, dtype=b8))])
add([aten.isnan.default, aten.isinf.default], [S(specials()), S(T(3, dtype=i64)), S(specials(bf16))])


# --------------------------------------------------------------------------- binary pointwise

def binary_samples(low=-3.0, high=3.0, ints=True, nonzero=False, scalar=2.5, int_scalar=3):
    def t(*shape, dtype=f32, **kw):
        lo = 1.0 if nonzero and not dtype.is_floating_point else low
        return T(*shape, dtype=dtype, low=lo, high=high, **kw)

    samples = [
        S(t(3, 4), t(3, 4)),
        S(t(3, 1, 4), t(2, 4)),  # broadcasting
        S(t(), t(2, 3)),  # 0-d with n-d
        S(t(0, 3), t(3)),  # empty
        S(t(4, 3, noncontiguous=True), t(4, 3)),
        S(t(2, 3, dtype=bf16), t(2, 3, dtype=bf16), tol=BF16_TOL),
        S(t(2, 3, dtype=f64), t(2, 3)),  # float64 wins
        S(t(2, 3, dtype=bf16), t(dtype=f32), tol=BF16_TOL),  # a 0-d float32 does not promote bf16
        S(t(3, 4), scalar),
    ]
    if ints:
        samples += [S(t(3, 4, dtype=i64), t(3, 4, dtype=i64)),
                    S(t(3, 4, dtype=i64), t(4)),  # int and float tensors: float
                    S(t(3, dtype=i32), t(dtype=i64)),  # 0-d int64 does not promote int32
                    S(t(3, 4, dtype=i64), int_scalar)]
    return samples


add([aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor], binary_samples() + [S(specials(), specials().flip(0))])
add([aten.maximum.default, aten.minimum.default],
    [s for s in binary_samples() if isinstance(s.args[1], torch.Tensor)] + [S(specials(), specials().flip(0))])
SAMPLES[aten.add.Tensor] = SAMPLES[aten.add.Tensor] + [
    S(T(3, 4), T(3, 4), alpha=2), S(T(3, 4, dtype=bf16), T(4, dtype=bf16), alpha=0.5, tol=BF16_TOL),
    S(T(4, dtype=b8), T(4, dtype=b8)), S(T(3, dtype=i64), 2, alpha=3)]
SAMPLES[aten.sub.Tensor] = SAMPLES[aten.sub.Tensor] + [S(T(3, 4), T(3, 4), alpha=-1.5)]
SAMPLES[aten.mul.Tensor] = SAMPLES[aten.mul.Tensor] + [S(T(4, dtype=b8), T(4)), S(T(4, dtype=b8), T(4, dtype=b8))]
add([aten.add.Scalar, aten.sub.Scalar, aten.mul.Scalar],
    [S(T(3, 4), 2), S(T(3, 4, dtype=i64), 2.5), S(T(3, dtype=i64), 2), S(T(2, dtype=bf16), 0.1, tol=BF16_TOL)])
add([aten.rsub.Tensor], [S(T(3, 4), T(4)), S(T(3, 4), T(3, 4), alpha=2), S(T(3, dtype=i64), T(dtype=i64))])
add([aten.rsub.Scalar], [S(T(3, 4), 1), S(T(3, dtype=i64), 1.5), S(T(3, 4), 2, alpha=3)])
add([aten.div.Tensor], binary_samples(nonzero=True) + [S(specials(), T(10))])
add([aten.div.Scalar], [S(T(3, 4), 3), S(T(3, dtype=i64), 2), S(T(3, 4), 0.0)])
_div_mode = [S(T(3, 4, dtype=i64, low=-9, high=9), T(3, 4, dtype=i64, low=1, high=4)),
             S(T(3, 4, dtype=i64, low=-9, high=9), T(3, 4, dtype=i64, low=-4, high=-1)),
             S(T(3, 4, low=-9, high=9), T(3, 4, low=-4, high=4)),
             S(torch.tensor([-7.0, 7.0, -0.0, 1.0, 5.0]), torch.tensor([2.0, -2.0, 3.0, 0.0, -0.0])),
             S(T(2, 3, dtype=bf16), T(3, dtype=bf16, low=0.5, high=2), tol=BF16_TOL)]
add([aten.div.Tensor_mode], [S(*s.args, rounding_mode=m, tol=s.tolerance) for m in ("trunc", "floor", None)
                             for s in _div_mode])
add([aten.div.Scalar_mode], [S(T(3, 4, low=-9, high=9), 2.5, rounding_mode="floor"),
                             S(T(3, 4, dtype=i64, low=-9, high=9), 3, rounding_mode="trunc"),
                             S(T(3, 4, dtype=i64, low=-9, high=9), -2, rounding_mode="floor")])
add([aten.floor_divide.default], [s for s in _div_mode])
add([aten.floor_divide.Scalar], [S(T(3, 4, dtype=i64, low=-9, high=9), 4), S(T(3, 4), -1.5)])
_mod = [S(T(3, 4, dtype=i64, low=-9, high=9), T(3, 4, dtype=i64, low=1, high=4)),
        S(T(3, 4, dtype=i64, low=-9, high=9), T(4, dtype=i64, low=-4, high=-1)),
        S(T(3, 4, low=-9, high=9), T(3, 4, low=0.5, high=4)),
        S(T(3, 4, low=-9, high=9), T(3, 4, low=-4, high=-0.5))]
add([aten.remainder.Tensor, aten.fmod.Tensor], _mod)
add([aten.remainder.Scalar, aten.fmod.Scalar], [S(T(3, 4, low=-9, high=9), 2.5),
                                                 S(T(3, 4, dtype=i64, low=-9, high=9), -4)])
add([aten.remainder.Scalar_Tensor], [S(7, T(3, 4, dtype=i64, low=1, high=5)), S(-3.5, T(4, low=0.5, high=3))])
add([aten.pow.Tensor_Tensor], [S(positive(3, 4), T(3, 4)), S(positive(3, 1), T(4)),
                               S(T(3, dtype=i64, low=0, high=4), T(3, dtype=i64, low=0, high=3)),
                               S(positive(3, dtype=bf16), T(3, dtype=bf16), tol=BF16_TOL)])
add([aten.pow.Tensor_Scalar], [S(T(3, 4), 2), S(positive(3, 4), 0.5), S(positive(3, 4), -1), S(T(3, 4), 3),
                               S(T(3, dtype=i64), 2), S(T(3, dtype=i64, low=1, high=4), 0.5),
                               S(T(4, dtype=bf16), 2, tol=BF16_TOL)])
add([aten.pow.Scalar], [S(2.0, T(3, 4)), S(2, T(3, dtype=i64, low=0, high=5)), S(0.5, T(3))])
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    add([getattr(aten, _name).Tensor], [S(T(3, 4, dtype=i64, low=-9, high=9), T(4, dtype=i64, low=-9, high=9)),
                                         S(T(4, dtype=b8), T(4, dtype=b8)), S(T(3, dtype=i32), T(dtype=i64))])
    add([getattr(aten, _name).Scalar], [S(T(3, 4, dtype=i64, low=-9, high=9), 5), S(T(4, dtype=b8), True)])
add([aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default],
    [S(specials(), T(10)), S(T(3, 4, dtype=i64, low=-1, high=2), T(4, dtype=b8)), S(T(4, dtype=b8), T(4, dtype=b8))])
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _ints = T(3, 4, dtype=i64, low=-2, high=2)
    add([getattr(aten, _name).Tensor], [S(_ints, T(4, dtype=i64, low=-2, high=2)), S(specials(), specials().flip(0)),
                                         S(_ints, T(4, low=-2, high=2).round()), S(T(4, dtype=b8), T(4, dtype=b8)),
                                         S(T(2, 3, dtype=bf16), T(dtype=f32)), S(T(0, 2), T(2))])
    add([getattr(aten, _name).Scalar], [S(_ints, 1), S(_ints, 0.5), S(specials(), 0.5), S(T(3, dtype=b8), True)])
add([aten.clamp.default], [S(specials(), -1.0, 1.0), S(T(3, 4), None, 0.5), S(T(3, 4), -0.5),
                           S(T(3, 4, dtype=i64), 0.5, 2.5), S(T(3, 4, dtype=i64), -1, 1),
                           S(T(3, 4, dtype=bf16), -1, 1, tol=BF16_TOL)])
add([aten.clamp.Tensor], [S(T(3, 4), T(4), T(3, 1) + 3), S(specials(), T(10), None)])
add([aten.clamp_min.default], [S(specials(), 0.0), S(T(3, dtype=i64), 1)])
add([aten.clamp_min.Tensor], [S(T(3, 4), T(4))])
add([aten.clamp_max.default], [S(specials(), 0.0), S(T(3, dtype=i64), 1.5)])
add([aten.clamp_max.Tensor], [S(T(3, 4), T(3, 1))])
add([aten.where.self], [S(T(3, 4, dtype=b8), T(3, 4), T(3, 4)), S(T(3, 1, dtype=b8), T(4), T(2, 1, 1, dtype=i64)),
                        S(T(4, dtype=b8), T(4, dtype=bf16), T(dtype=f32)), S(T(dtype=b8), T(2, 3), T(2, 3))])
add([aten.where.ScalarSelf], [S(T(3, 4, dtype=b8), 0.0, T(3, 4)), S(T(3, 4, dtype=b8), 2.5, T(4, dtype=i64))])
add([aten.where.ScalarOther], [S(T(3, 4, dtype=b8), T(3, 4), -math.inf), S(T(4, dtype=b8), T(4, dtype=i64), 1)])
add([aten.where.Scalar], [S(T(3, 4, dtype=b8), 1.0, 0.0), S(T(3, dtype=b8), 1, 0), S(T(3, dtype=b8), 1, 0.5)])
add([aten.masked_fill.Scalar], [S(T(2, 3, 4), T(3, 1, dtype=b8), -math.inf), S(T(3, 4, dtype=i64), T(3, 4, dtype=b8), 7),
                                S(T(3, 4, dtype=bf16), T(4, dtype=b8), 0.5)])
add([aten.masked_fill.Tensor], [S(T(2, 3, 4), T(3, 1, dtype=b8), T()), S(T(3, dtype=i64), T(3, dtype=b8), T(dtype=i64))])


# --------------------------------------------------------------------------- reductions

_x = T(3, 4, 5)
add([aten.sum.dim_IntList], [S(_x, [1]), S(_x, [0, -1], True), S(_x, []), S(_x, None, True), S(_x, [1], dtype=f64),
                             S(T(3, 4, dtype=i64), [0]), S(T(3, 4, dtype=b8), [1]), S(T(4, 0), [1]), S(T(4, 0), [0]),
                             S(T(3, 4, dtype=bf16), [1], tol=BF16_TOL), S(T(), [0]), S(T(5, 4, noncontiguous=True), [0])])
add([aten.sum.default], [S(_x), S(T(3, 4, dtype=i32)), S(T(0, 3)), S(T(8, dtype=bf16), tol=BF16_TOL), S(T(3, dtype=b8)),
                         S(T(3, 4), dtype=f64)])
add([aten.mean.dim], [S(_x, [1]), S(_x, [-1, 0], True), S(_x, None), S(T(3, 4, dtype=bf16), [1], tol=BF16_TOL),
                      S(T(4, 3, noncontiguous=True), [0]), S(_x, [2], dtype=f64)])
add([aten.mean.default], [S(_x), S(T(0, 3)), S(T(6, dtype=bf16), tol=BF16_TOL), S(T())])
add([aten.prod.dim_int], [S(_x, 1), S(_x, -1, True), S(T(3, 4, dtype=i64), 0), S(T(3, 4, dtype=b8), 1)])
add([aten.prod.default], [S(T(3, 4, low=0.5, high=1.5)), S(T(3, dtype=i64)), S(T(0))])
_red = [S(specials().reshape(2, 5), [1]), S(_x, [0, 2], True), S(_x, []), S(T(3, 4, dtype=i64), [-1]),
        S(T(3, 4, dtype=bf16), [0]), S(T(3, 4, dtype=b8), [1]), S(T(4, 3, noncontiguous=True), [1])]
add([aten.amax.default, aten.amin.default], _red)
add([aten.max.default, aten.min.default], [S(_x), S(specials()), S(T(3, dtype=i64)), S(T())])
_ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [math.nan, 1.0, math.nan, 2.0], [-1.0, -1.0, -5.0, -1.0]])
add([aten.max.dim, aten.min.dim], [S(_ties, 1), S(_ties, 0, True), S(_x, -1), S(T(3, 4, dtype=i64, low=0, high=2), 1)])
add([aten.argmax.default, aten.argmin.default], [S(_ties, 1), S(_ties), S(_ties, 0, True), S(_ties, None, True),
                                                  S(T(3, 4, dtype=i64, low=0, high=2), -1), S(T(), 0)])
add([aten.any.default, aten.all.default], [S(T(3, 4, dtype=b8)), S(specials()), S(T(0, dtype=b8)), S(T(3, dtype=i64, low=0, high=2))])
add([aten.any.dim, aten.all.dim], [S(T(3, 4, dtype=b8), 1), S(T(3, 4, dtype=i64, low=0, high=2), 0, True)])
add([aten.any.dims, aten.all.dims], [S(T(3, 4, 2, dtype=b8), [0, 2]), S(T(3, 4, dtype=b8), None, True)])
_var = [S(_x, [1]), S(_x, [0, 2], correction=0, keepdim=True), S(_x, None), S(T(3, 8, dtype=bf16), [1], tol=BF16_TOL),
        S(T(8, 3) * 1000 + 1e4, [0]), S(T(4, 3, noncontiguous=True), [-1], correction=2)]
add([aten.var.correction, aten.var_mean.correction, aten.std.correction], _var)


# --------------------------------------------------------------------------- views and copies

_nc = T(4, 6, noncontiguous=True)
add([aten.view.default, aten._unsafe_view.default, aten.view_copy.default],
    [S(T(3, 4), [2, 6]), S(T(3, 4), [-1]), S(T(2, 3, 4), [6, -1]), S(T(), [1, 1]), S(T(0, 4), [2, 0, 2]),
     S(T(3, 4, dtype=i64), [4, 3]), S(T(3, 4)[:, 1:3], [3, 2, 1])])
add([aten.reshape.default], [S(_nc, [24]), S(_nc, [6, 2, 2]), S(T(3, 4), [-1, 2])])
add([aten.expand.default, aten.expand_copy.default],
    [S(T(3, 1), [3, 4]), S(T(3, 1), [2, -1, 4]), S(T(), [2, 3]), S(T(4), [3, 4]), S(_nc, [2, 4, 6])])
add([aten.permute.default, aten.permute_copy.default], [S(T(2, 3, 4), [2, 0, 1]), S(T(2, 3, 4), [-1, 0, -2]),
                                                        S(T(2, 3), [0, 1]), S(T(), [])])
add([aten.transpose.int, aten.transpose_copy.int], [S(T(2, 3, 4), 0, 2), S(T(2, 3, 4), -1, -2), S(_nc, 0, 1)])
add([aten.t.default, aten.t_copy.default], [S(T(2, 3)), S(T(3)), S(_nc)])
add([aten.squeeze.default], [S(T(1, 3, 1, 2)), S(T(1)), S(T(3, 2))])
add([aten.squeeze.dim, aten.squeeze_copy.dim], [S(T(1, 3, 1, 2), 2), S(T(1, 3, 1, 2), -4), S(T(3, 2), 0)])
add([aten.squeeze.dims, aten.squeeze_copy.dims], [S(T(1, 3, 1, 2), [0, 2]), S(T(1, 3, 1), [-1, 1])])
add([aten.unsqueeze.default, aten.unsqueeze_copy.default], [S(T(3, 4), 0), S(T(3, 4), -1), S(T(3, 4), 1), S(T(), 0)])
add([aten.slice.Tensor, aten.slice_copy.Tensor],
    [S(T(5, 6), 1, 1, 4), S(T(5, 6), 0, -3), S(T(5, 6), -1, 0, 100, 2), S(T(5, 6), 0, None, None, 3),
     S(T(5, 6), 1, 4, 2), S(_nc, 1, 1, 3), S(T(5, 6), 0, -100, -2)])
add([aten.select.int, aten.select_copy.int], [S(T(3, 4), 0, 1), S(T(3, 4), -1, -1), S(_nc, 1, 2), S(T(3), 0, 2)])
add([aten._reshape_alias.default], [S(T(3, 4), [2, 6], [6, 1]), S(T(2, 3, 4), [6, 4], [4, 1])])
add([aten.slice_scatter.default], [S(T(5, 6), T(5, 2), 1, 1, 3), S(T(5, 6), T(2, 6), 0, -2), S(T(5, 6), T(5, 3), 1, 0, None, 2),
                                   S(T(7, 4), T(2, 4), 0, 1, 6, 3), S(T(5, 6), T(5, 0), 1, 3, 3),
                                   S(T(5, 6, dtype=i64), T(5, 1, dtype=i64), -1, 5, 100), S(_nc, T(4, 2), 1, 2, 4)])
add([aten.select_scatter.default], [S(T(5, 6), T(6), 0, 2), S(T(5, 6), T(5), -1, -1), S(T(3, 4, dtype=b8), T(3, dtype=b8), 1, 0)])
# as_strided reads a contiguous input as its memory (the AOT tracer hands it a contiguous copy)
add([aten.as_strided.default, aten.as_strided_copy.default],
    [S(T(4, 4), [4], [4], 0), S(T(4, 4), [2, 2], [4, 1], 5), S(T(3, 4), [4, 3], [1, 4]), S(T(6), [2, 3], [0, 2]),
     S(T(5, dtype=i64), [0], [1], 2), S(T(4, 4, dtype=bf16), [3], [5], 0), S(T(2, 3, 4), [2, 2, 2], [12, 4, 2], 1)])
add([aten.as_strided_scatter.default],
    [S(T(4, 4), T(4), [4], [4], 0), S(T(4, 4), T(2, 2), [2, 2], [4, 1], 5), S(T(3, 4), T(4, 3), [4, 3], [1, 4], 0),
     S(T(6, dtype=i64), T(2, dtype=i64), [2], [3], 1), S(T(4, 4), T(0), [0], [1], 0), S(T(3, 2), T(3, 2, dtype=f64), [3, 2], [2, 1])])
add([aten.split.Tensor, aten.split_copy.Tensor, aten.unsafe_split.Tensor], [S(T(7, 4), 3), S(T(4, 6), 2, -1), S(T(4, 6), 6, 1), S(T(4, 6), 10, 1)])
add([aten.split_with_sizes.default, aten.split_with_sizes_copy.default, aten.unsafe_split_with_sizes.default], [S(T(7, 4), [3, 4]), S(T(4, 6), [1, 0, 5], -1)])
add([aten.unbind.int, aten.unbind_copy.int], [S(T(3, 4)), S(T(3, 4), -1)])
add([aten.alias.default, aten.alias_copy.default, aten.detach.default, aten.detach_copy.default,
     aten.clone.default, aten.lift_fresh_copy.default], [S(T(3, 4)), S(_nc), S(T(3, dtype=i64))])
SAMPLES[aten.clone.default] = SAMPLES[aten.clone.default] + [S(_nc, memory_format=torch.contiguous_format)]
add([aten._to_copy.default], [S(T(3, 4), dtype=f64), S(T(3, 4), dtype=i64), S(T(3, 4, dtype=i64), dtype=b8),
                              S(_nc, dtype=bf16), S(T(3, 4)), S(T(3), dtype=f32, device="cpu")])
add([aten.copy.default], [S(T(3, 4), T(4)), S(T(3, 4, dtype=i64), T(3, 4)), S(_nc, T(4, 6))])
add([aten._assert_tensor_metadata.default], [S(T(3, 4), None, None, f32), S(T(3, dtype=i64), [3], dtype=i64)])


# --------------------------------------------------------------------------- creation

add([aten.full.default], [S([2, 3], 1.5), S([2, 3], 7), S([2], True), S([2, 3], 2, dtype=f64), S([], -1.0),
                          S([0, 2], 1.0), S([2], math.inf, dtype=bf16)])
add([aten.scalar_tensor.default], [S(2.5), S(3), S(1, dtype=i64)])
add([aten.zeros.default, aten.ones.default], [S([2, 3]), S([2], dtype=i64), S([], dtype=b8)])
add([aten.empty.memory_format], [S([2, 3], values=False), S([4], dtype=i64, values=False)])
add([aten.empty_strided.default], [S([2, 3], [3, 1], values=False), S([2, 3], [1, 2], dtype=f64, values=False)])
add([aten.zeros_like.default, aten.ones_like.default], [S(T(2, 3)), S(T(3, dtype=i64)), S(T(2, 3), dtype=b8), S(_nc)])
add([aten.empty_like.default], [S(T(2, 3), values=False), S(T(3), dtype=i64, values=False)])
add([aten.full_like.default], [S(T(2, 3), 2.5), S(T(3, dtype=i64), 4), S(T(2), 1, dtype=f64)])
add([aten.new_zeros.default, aten.new_ones.default], [S(T(2, 3), [4]), S(T(2, dtype=i64), [2, 2]), S(T(2), [3], dtype=b8)])
add([aten.new_empty.default], [S(T(2, 3), [4], values=False)])
add([aten.new_full.default], [S(T(2, 3), [4], 1.5), S(T(2, dtype=i64), [2, 2], 3)])
add([aten.arange.default], [S(5), S(5, dtype=f32), S(2.5), S(0)])
add([aten.arange.start], [S(2, 7), S(-3, 3, dtype=f64), S(0.5, 3)])
add([aten.arange.start_step], [S(0, 10, 3), S(10, 0, -2), S(0.0, 1.0, 0.1), S(1, 2, 0.25, dtype=bf16), S(3, 3, 1)])
add([aten.tril.default, aten.triu.default], [S(T(4, 5)), S(T(4, 5), 1), S(T(4, 5), -2), S(T(2, 3, 3, dtype=i64)),
                                             S(T(3, 3, dtype=b8))])


# --------------------------------------------------------------------------- random (shapes only here)

add([aten.rand.default], [S([2, 3], values=False), S([4], dtype=f64, values=False)])
add([aten.rand_like.default], [S(T(2, 3), values=False), S(T(3, dtype=bf16), values=False)])
add([aten.bernoulli.p], [S(T(2, 3), 0.3, values=False)])
add([aten.bernoulli.default], [S(T(2, 3, low=0, high=1), values=False)])
add([aten.native_dropout.default], [S(T(4, 5), 0.5, True, values=False), S(T(4, 5), 0.5, False),
                                    S(T(4, 5), 0.0, True), S(T(4, 5), 1.0, True)])
add([aten.native_dropout_backward.default], [S(T(4, 5), T(4, 5, dtype=b8), 2.0), S(T(3, dtype=bf16), T(3, dtype=b8), 1.25)])


# --------------------------------------------------------------------------- indexing

_idx = torch.tensor([[0, 2, 1], [3, 3, 0]])
add([aten.gather.default], [S(T(4, 3), 0, _idx), S(T(3, 4), -1, _idx[:, :2]), S(T(4, 3, dtype=i64), 0, _idx)])
add([aten.scatter_add.default], [S(T(4, 3), 0, _idx, T(2, 3)), S(T(4, 3), 0, _idx[:, :2], T(2, 3)),
                                 S(T(3, 5), 1, _idx, T(2, 4)), S(T(4, 3, dtype=i64), 0, _idx, T(2, 3, dtype=i64))])
add([aten.index_select.default], [S(T(5, 3), 0, torch.tensor([4, 0, 0, 2])), S(T(5, 3), -1, torch.tensor([2, 1])),
                                  S(T(5, 3), 1, torch.tensor(1)), S(T(5, 3), 0, torch.tensor([1, 3], dtype=i32))])
add([aten.index.Tensor], [S(T(5, 3), [torch.tensor([4, -1, 0])]), S(T(5, 3), [None, torch.tensor([[2, 0], [1, 1]])]),
                          S(T(2, 5, 3), [None, torch.tensor([0, 4])])])
add([aten.cat.default], [S([T(2, 3), T(4, 3)]), S([T(2, 3), T(2, 1)], 1), S([T(2, 3), T(2, 3, dtype=i64)], -1),
                         S([T(2, 3), T(0)]), S([T(3, dtype=bf16), T(2, dtype=f32)]), S([T(2, 3)])])
add([aten.stack.default], [S([T(2, 3), T(2, 3)]), S([T(2, 3), T(2, 3)], -1), S([T(), T()])])
add([aten.constant_pad_nd.default], [S(T(2, 3), [1, 2]), S(T(2, 3, 4), [1, 0, 0, 2], 1.5), S(T(4, 5), [-1, 2, 1, -2]),
                                     S(T(2, 3, dtype=i64), [1, 1], 9)])
add([aten.embedding.default], [S(T(10, 4), torch.tensor([[1, 3, 9], [0, 3, 3]])), S(T(10, 4), torch.tensor(5)),
                               S(T(10, 4, dtype=bf16), torch.tensor([1, 2]), 0)])
_emb_idx = torch.tensor([[1, 3, 9], [0, 3, 3]])
add([aten.embedding_dense_backward.default], [S(T(2, 3, 4), _emb_idx, 10, -1, False), S(T(2, 3, 4), _emb_idx, 10, 3, False),
                                              S(T(2, 3, 4), _emb_idx, 10, -1, True),
                                              S(T(2, 3, 4, dtype=bf16), _emb_idx, 10, 0, False, tol=BF16_TOL)])


# --------------------------------------------------------------------------- matmul and convolution

add([aten.mm.default], [S(T(3, 4), T(4, 5)), S(T(3, 4, noncontiguous=True), T(4, 2)), S(T(2, 3, dtype=f64), T(3, 2, dtype=f64)),
                        S(T(0, 3), T(3, 2))])
add([aten.bmm.default], [S(T(2, 3, 4), T(2, 4, 5)), S(T(2, 3, 4, dtype=bf16), T(2, 4, 2, dtype=bf16), tol=BF16_TOL)])
add([aten.addmm.default], [S(T(5), T(3, 4), T(4, 5)), S(T(3, 5), T(3, 4), T(4, 5), beta=0.5, alpha=2),
                           S(torch.full((5,), math.nan), T(3, 4), T(4, 5), beta=0)])
add([aten.baddbmm.default], [S(T(2, 3, 5), T(2, 3, 4), T(2, 4, 5)), S(T(1, 1, 5), T(2, 3, 4), T(2, 4, 5), beta=2, alpha=0.5)])
_conv = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1)


def conv_args(x, w, b, **changes):
    params = {**_conv, **changes}
    return (x, w, b, params["stride"], params["padding"], params["dilation"], params["transposed"],
            params["output_padding"], params["groups"])


add([aten.convolution.default], [S(*conv_args(T(2, 3, 6, 6), T(4, 3, 3, 3), T(4))),
                                 S(*conv_args(T(2, 4, 7, 7), T(4, 2, 3, 3), None, stride=[2, 2], groups=2)),
                                 S(*conv_args(T(2, 3, 5, 5), T(3, 2, 3, 3), T(2), transposed=True, padding=[0, 0]))])


def conv_backward(x, w, mask, **changes):
    args = conv_args(x, w, None, **changes)
    out = aten.convolution.default(*args)
    return S(T(*out.shape), x, w, [w.shape[0]], *args[3:], mask)


add([aten.convolution_backward.default], [conv_backward(T(2, 3, 6, 6), T(4, 3, 3, 3), [True, True, True]),
                                          conv_backward(T(2, 4, 7, 7), T(4, 2, 3, 3), [False, True, True], stride=[2, 2], groups=2),
                                          conv_backward(T(2, 3, 6, 6), T(4, 3, 3, 3), [True, False, False])])


# --------------------------------------------------------------------------- activations and softmax

_act = [S(T(3, 4)), S(specials()), S(T(3, 4, dtype=bf16), tol=BF16_TOL), S(T(4, 3, noncontiguous=True)), S(T(0, 2)),
        S(T(2, 3, dtype=f64))]
# Not specials(): eager's erf-gelu gives nan for +inf on CPU, where the decomposition gives inf.
_gelu = [S(torch.tensor([math.nan, 0.0, -0.0, 30.0, -30.0]))] + [s for s in _act if s.args[0].numel() != 10]
add([aten.gelu.default], _gelu + [S(*s.args, approximate="tanh", tol=s.tolerance) for s in _act])
add([aten.silu.default], _act)
_bwd = [S(T(3, 4), T(3, 4)), S(T(3, 4, dtype=bf16), T(3, 4, dtype=bf16), tol=BF16_TOL), S(T(4, 3, noncontiguous=True), T(4, 3))]
add([aten.gelu_backward.default], _bwd + [S(*s.args, approximate="tanh", tol=s.tolerance) for s in _bwd])
add([aten.silu_backward.default], _bwd)
add([aten.sigmoid_backward.default, aten.tanh_backward.default],
    [S(T(3, 4), T(3, 4, low=-1, high=1)), S(T(3, 4, dtype=bf16), T(3, 4, dtype=bf16, low=-1, high=1), tol=BF16_TOL)])
add([aten.threshold_backward.default], [S(T(3, 4), T(3, 4), 0), S(T(3, 4), T(3, 4), 0.5), S(T(3, 4, dtype=bf16), specials(bf16)[:4].repeat(3, 1), 0)])
_sm = [S(T(3, 5), 1, False), S(T(2, 3, 4), 0, False), S(T(2, 3, 4), -1, False), S(T(), 0, False),
       S(T(3, 5, dtype=bf16), 1, False, tol=BF16_TOL), S(T(4, 3, noncontiguous=True), 0, False),
       S(torch.tensor([[0.0, -math.inf, 1.0], [-math.inf] * 3]), 1, False), S(T(3, 5) * 100, 1, False),
       S(T(2, 0), 1, False), S(T(3, 5, dtype=torch.float16), 1, False, tol=dict(atol=2e-3, rtol=2e-3))]
add([aten._softmax.default, aten._log_softmax.default], _sm)


def softmax_backward(op, shape, dim, dtype=f32):
    y = op(T(*shape, dtype=dtype), dim, False)
    return S(T(*shape, dtype=dtype), y, dim, dtype, tol=BF16_TOL if dtype == bf16 else None)


add([aten._softmax_backward_data.default], [softmax_backward(aten._softmax.default, (3, 5), 1),
                                             softmax_backward(aten._softmax.default, (2, 3, 4), 0),
                                             softmax_backward(aten._softmax.default, (3, 5), -1, bf16)])
add([aten._log_softmax_backward_data.default], [softmax_backward(aten._log_softmax.default, (3, 5), 1),
                                                 softmax_backward(aten._log_softmax.default, (2, 3, 4), 0),
                                                 softmax_backward(aten._log_softmax.default, (3, 5), -1, bf16)])


# --------------------------------------------------------------------------- norms

add([aten.native_layer_norm.default], [S(T(4, 8), [8], T(8), T(8), 1e-5), S(T(2, 3, 4), [3, 4], None, None, 1e-5),
                                       S(T(2, 3, 8), [8], T(8), None, 1e-3), S(T(4, 8, dtype=bf16), [8], T(8, dtype=bf16),
                                                                                T(8, dtype=bf16), 1e-5, tol=BF16_TOL),
                                       S(T(4, 8) * 100 + 1000, [8], None, T(8), 1e-5),
                                       # bfloat16 input, float32 weight (autocast): float32 statistics on CPU
                                       S(T(4, 8, dtype=bf16), [8], T(8), T(8), 1e-5, tol=BF16_TOL),
                                       S(T(4, 8, dtype=torch.float16), [8], None, None, 1e-5, tol=dict(atol=2e-3, rtol=2e-3))])


def layer_norm_backward(shape, normalized, weight=True, bias=True, mask=(True, True, True), dtype=f32,
                        param_dtype=None):
    x = T(*shape, dtype=dtype)
    w = T(*normalized, dtype=param_dtype or dtype) if weight else None
    b = T(*normalized, dtype=param_dtype or dtype) if bias else None
    _, mean, rstd = aten.native_layer_norm.default(x, normalized, w, b, 1e-5)
    return S(T(*shape, dtype=dtype), x, normalized, mean, rstd, w, b, list(mask),
             tol=dict(atol=5e-2, rtol=5e-2) if dtype == bf16 else dict(atol=1e-4, rtol=1e-4))


add([aten.native_layer_norm_backward.default], [layer_norm_backward((4, 8), [8]), layer_norm_backward((2, 3, 4), [3, 4]),
                                                layer_norm_backward((4, 8), [8], weight=False, bias=False, mask=(True, False, False)),
                                                layer_norm_backward((4, 8), [8], mask=(False, True, True)),
                                                layer_norm_backward((4, 8), [8], dtype=bf16),
                                                layer_norm_backward((4, 8), [8], dtype=bf16, param_dtype=f32)])


def bn_inputs(c=3, dtype=f32, params=True):
    x = T(4, c, 5, 5, dtype=dtype)
    pd = f32 if dtype == bf16 else dtype
    w, b = (T(c, dtype=pd), T(c, dtype=pd)) if params else (None, None)
    return x, w, b, T(c, dtype=pd), positive(c, dtype=pd)


_bn_tol = dict(atol=1e-4, rtol=1e-4)
_x, _w, _b, _rm, _rv = bn_inputs()
_xb, _wb, _bb, _rmb, _rvb = bn_inputs(dtype=bf16)
add([aten.native_batch_norm.default], [S(_x, _w, _b, _rm, _rv, False, 0.1, 1e-5), S(_x, _w, _b, None, None, True, 0.1, 1e-5, tol=_bn_tol),
                                       S(T(6, 3), None, None, _rm, _rv, False, 0.1, 1e-5),
                                       S(_xb, None, None, None, None, True, 0.1, 1e-5, tol=BF16_TOL)])
add([aten._native_batch_norm_legit_functional.default], [S(_x, _w, _b, _rm, _rv, True, 0.1, 1e-5, tol=_bn_tol),
                                                         S(_x, None, None, _rm, _rv, False, 0.1, 1e-5),
                                                         S(T(6, 3), _w, _b, _rm, _rv, True, 0.3, 1e-3, tol=_bn_tol),
                                                         S(_xb, _wb, _bb, _rmb, _rvb, True, 0.1, 1e-5, tol=BF16_TOL)])
add([aten._native_batch_norm_legit_no_training.default], [S(_x, _w, _b, _rm, _rv, 0.1, 1e-5), S(_x, None, None, _rm, _rv, 0.1, 1e-3)])
add([aten._native_batch_norm_legit.no_stats], [S(_x, _w, _b, True, 0.1, 1e-5, tol=_bn_tol), S(T(6, 3, 4), None, None, True, 0.1, 1e-5, tol=_bn_tol)])


def bn_backward(train, mask=(True, True, True), params=True, shape=(4, 3, 5, 5)):
    x = T(*shape)
    w = T(shape[1]) if params else None
    rm, rv = T(shape[1]), positive(shape[1])
    _, save_mean, save_invstd = aten.native_batch_norm.default(x, w, None, None if train else rm,
                                                               None if train else rv, train, 0.1, 1e-5)
    return S(T(*shape), x, w, rm, rv, save_mean if train else None, save_invstd if train else None,
             train, 1e-5, list(mask), tol=_bn_tol)


add([aten.native_batch_norm_backward.default], [bn_backward(True), bn_backward(False), bn_backward(True, (True, False, False), params=False),
                                                bn_backward(True, shape=(6, 3)), bn_backward(False, (False, True, True))])


# --------------------------------------------------------------------------- losses

_logits = torch.log_softmax(T(6, 5), 1)
_target = torch.tensor([0, 4, 2, -100, 1, 1])
_target_ignore_1 = torch.tensor([0, 4, 2, 3, 1, 1])
add([aten.nll_loss_forward.default], [S(_logits, _target, None, r, -100) for r in (0, 1, 2)]
    + [S(_logits, _target, positive(5), 1, -100), S(_logits, _target_ignore_1, positive(5), 0, 1), S(_logits[0], _target[0], None, 1, -100),
       S(_logits, torch.full((6,), -100), None, 1, -100), S(_logits.bfloat16(), _target, None, 1, -100, tol=BF16_TOL)])


def nll_backward(reduction, weight=None, ignore_index=-100, x=_logits, target=_target):
    _, total_weight = aten.nll_loss_forward.default(x, target, weight, reduction, ignore_index)
    grad = T(*target.shape) if reduction == 0 else T()
    return S(grad, x, target, weight, reduction, ignore_index, total_weight)


add([aten.nll_loss_backward.default], [nll_backward(r) for r in (0, 1, 2)]
    + [nll_backward(1, positive(5)), nll_backward(0, positive(5), 1, target=_target_ignore_1), nll_backward(2, x=_logits[0], target=_target[0])])
add([aten.mse_loss.default], [S(T(3, 4), T(3, 4)), S(T(3, 4), T(3, 4), 0), S(T(3, 4), T(3, 4), 2),
                              S(T(3, 4, dtype=bf16), T(3, 4, dtype=bf16), tol=BF16_TOL)])
add([aten.mse_loss_backward.default], [S(T(), T(3, 4), T(3, 4), 1), S(T(3, 4), T(3, 4), T(3, 4), 0), S(T(), T(3, 4), T(3, 4), 2)])


# --------------------------------------------------------------------------- pooling

_img = T(2, 3, 7, 7)
_nan_img = _img.clone()
_nan_img[0, 0, 1, 1] = math.nan
_nan_img[0, 0, 4, 4] = math.nan
_neg_inf_img = torch.full((1, 1, 4, 4), -math.inf)
_maxpool = [S(_img, [2, 2], [2, 2]), S(_img, [3, 3], [2, 2], [1, 1]), S(_img, [3], [], [1]), S(_img, [2, 2], [2, 2], [0, 0], [1, 1], True),
            S(_img, [3, 2], [2, 1], [1, 0], [2, 1]), S(_nan_img, [2, 2], [1, 1]), S(_neg_inf_img, [3, 3], [1, 1], [1, 1]),
            S(T(3, 6, 6), [2, 2]), S(T(2, 3, 6, 6, dtype=bf16), [2, 2], [2, 2]), S(T(1, 2, 5, 5, dtype=i64), [2, 2], [1, 1]),
            S(_img, [3, 3], [2, 2], [1, 1], [1, 1], True)]
add([aten.max_pool2d_with_indices.default], _maxpool)


def max_pool_backward(sample):
    x, *rest = sample.args
    rest = rest + [[], 0, 1, False][len(rest) - 1:]
    out, indices = aten.max_pool2d_with_indices.default(x, *rest)
    return S(T(*out.shape, dtype=x.dtype), x, *rest, indices, tol=sample.tolerance)


add([aten.max_pool2d_with_indices_backward.default], [max_pool_backward(s) for s in _maxpool if s.args[0].dtype.is_floating_point])
_avgpool = [S(_img, [2, 2], [2, 2]), S(_img, [3, 3], [2, 2], [1, 1]), S(_img, [3, 3], [2, 2], [1, 1], False, False),
            S(_img, [2, 2], [2, 2], [0, 0], True), S(_img, [3, 3], [2, 2], [1, 1], True, False), S(_img, [3, 3], [2, 2], [1, 1], True, True),
            S(_img, [2, 3], [1, 2], [1, 1], False, True, 5), S(T(3, 6, 6), [2, 2]),
            S(T(2, 3, 6, 6, dtype=bf16), [2, 2], [2, 2], tol=BF16_TOL),
            S(T(2, 3, 24, 24), [24, 24]), S(T(1, 2, 26, 26), [24, 24], [2, 2])]  # a global window; a large one
add([aten.avg_pool2d.default], _avgpool)


def avg_pool_backward(sample):
    x, *rest = sample.args
    rest = rest + [[], 0, False, True, None][len(rest) - 1:]
    out = aten.avg_pool2d.default(x, *rest)
    return S(T(*out.shape, dtype=x.dtype), x, *rest, tol=sample.tolerance)


add([aten.avg_pool2d_backward.default], [avg_pool_backward(s) for s in _avgpool])


# --------------------------------------------------------------------------- more activations

# values at and around each function's boundaries (-3, 0, 3), and far out
_edges = torch.tensor([-30.0, -4.0, -3.0, -2.9, -0.5, -0.0, 0.0, 0.5, 2.9, 3.0, 4.0, 30.0])
_pointwise = [S(T(3, 4)), S(_edges), S(T(3, 4, dtype=bf16), tol=BF16_TOL), S(T(4, 3, noncontiguous=True)), S(T(0, 2)),
              S(T(2, 3, dtype=f64))]
_pointwise_backward = [S(T(12), _edges), S(T(3, 4), T(3, 4)), S(T(3, 4, dtype=bf16), T(3, 4, dtype=bf16), tol=BF16_TOL),
                       S(T(4, 3, noncontiguous=True), T(4, 3))]
add([aten.hardsigmoid.default, aten.hardswish.default, aten.mish.default], _pointwise)
add([aten.hardsigmoid_backward.default, aten.hardswish_backward.default, aten.mish_backward.default], _pointwise_backward)
add([aten.leaky_relu.default], _pointwise + [S(_edges, 0.2), S(T(3, 4), 1.5)])
add([aten.leaky_relu_backward.default], [S(*s.args, 0.01, False, tol=s.tolerance) for s in _pointwise_backward]
    + [S(T(12), _edges, 0.3, True)])
add([aten.elu.default], _pointwise + [S(specials()), S(T(3, 4), 0.5, 2.0, 1.5)])
add([aten.elu_backward.default], [S(T(12), 1.0, 1.0, 1.0, False, _edges), S(T(3, 4), 0.5, 2.0, 1.5, False, T(3, 4)),
                                  S(T(3, 4), 1.0, 1.0, 1.0, True, torch.nn.functional.elu(T(3, 4))),
                                  S(T(3, 4, dtype=bf16), 1.0, 1.0, 1.0, False, T(3, 4, dtype=bf16), tol=BF16_TOL)])
add([aten.softplus.default], _pointwise + [S(specials()), S(T(3, 4) * 10, 2.0, 5.0)])
add([aten.softplus_backward.default], [S(T(12), _edges, 1.0, 20.0), S(T(3, 4), T(3, 4) * 10, 2.0, 5.0),
                                       S(T(3, 4, dtype=bf16), T(3, 4, dtype=bf16), 1.0, 20.0, tol=BF16_TOL)])
add([aten.hardtanh.default], _pointwise + [S(_edges, -0.5, 0.5), S(_edges, 0.0, 6.0)])
add([aten.hardtanh_backward.default], [S(T(12), _edges, -1.0, 1.0), S(T(12), _edges, 0.0, 3.0),
                                       S(T(3, 4, dtype=bf16), T(3, 4, dtype=bf16), -1.0, 1.0)])


# --------------------------------------------------------------------------- view backwards

add([aten.slice_backward.default], [S(T(5, 2), [5, 6], 1, 1, 3, 1), S(T(2, 6), [5, 6], 0, 3, 5, 1),
                                    S(T(5, 3), [5, 6], 1, 0, 6, 2), S(T(5, 0), [5, 6], 1, 2, 2, 1),
                                    S(T(5, 2, dtype=bf16), [5, 6], -1, -2, 100, 1)])
add([aten.select_backward.default], [S(T(6), [5, 6], 0, 2), S(T(5), [5, 6], 1, -1), S(T(2, 3), [2, 4, 3], 1, 3)])


# --------------------------------------------------------------------------- group norm and vector norm

def group_norm_backward(x, weight, group, mask):
    n, c = x.shape[:2]
    hxw = x[0, 0].numel()
    _, mean, rstd = aten.native_group_norm(x, weight, None, n, c, hxw, group, 1e-5)
    return S(T(*x.shape, dtype=x.dtype), x, mean, rstd, weight, n, c, hxw, group, mask,
             tol=BF16_TOL if x.dtype == bf16 else None)


add([aten.native_group_norm.default], [S(T(2, 6, 3, 3), T(6), T(6), 2, 6, 9, 3, 1e-5),
                                       S(T(2, 4, 5), None, None, 2, 4, 5, 2, 1e-5),
                                       S(T(3, 4), T(4), T(4), 3, 4, 1, 4, 1e-3),
                                       S(T(2, 4, 3, dtype=bf16), T(4, dtype=bf16), T(4, dtype=bf16), 2, 4, 3, 2, 1e-5,
                                         tol=BF16_TOL),
                                       # bfloat16 input, float32 weight (autocast): float32 statistics on CPU
                                       S(T(2, 4, 3, dtype=bf16), T(4), T(4), 2, 4, 3, 2, 1e-5, tol=BF16_TOL)])
add([aten.native_group_norm_backward.default], [group_norm_backward(T(2, 6, 3, 3), T(6), 3, [True, True, True]),
                                                group_norm_backward(T(2, 4, 5), T(4), 2, [True, False, True]),
                                                group_norm_backward(T(3, 4), T(4), 1, [False, True, False]),
                                                group_norm_backward(T(2, 6, 3, 3, dtype=bf16), T(6), 3, [True, True, True])])
add([aten.linalg_vector_norm.default],
    [S(T(3, 4)), S(T(3, 4), 1), S(T(3, 4), math.inf, [1]), S(T(3, 4), -math.inf, [0], True), S(T(3, 4), 0),
     S(T(3, 4), 3.0, [-1]), S(T(2, 3, 4), 2, [0, 2], True), S(T(3, 4, dtype=bf16), tol=BF16_TOL),
     S(T(3, 4), 2, None, False, dtype=f64), S(specials()), S(T(4, 3, noncontiguous=True), 2, [1])])


# --------------------------------------------------------------------------- scatters, flips, fills

_index = torch.tensor([0, 2, -1, 2])
add([aten.index_put.default], [S(T(5, 3), [_index], T(4, 3), True), S(T(5, 3), [None, torch.tensor([1, 1])], T(5, 2), True),
                               S(T(5, 3), [_index], T(3), True), S(T(5, 3, dtype=i64), [_index], T(4, 3, dtype=i64), True),
                               S(T(4, 3, 2), [None, torch.tensor([[0, 2], [1, 1]])], T(4, 2, 2, 2), True)])
add([aten.flip.default], [S(T(3, 4), [0]), S(T(3, 4), [-1, 0]), S(T(2, 3, 4), [1]), S(T(3, 4, dtype=i64), [1]),
                          S(T(4, 3, noncontiguous=True), [0, 1]), S(T(3, 4), [])])
add([aten.fill.Scalar], [S(T(3, 4), 2.5), S(T(3, 4, dtype=i64), 7), S(T(0, 2), 1.0), S(T(3, dtype=b8), True)])
add([aten.fill.Tensor], [S(T(3, 4), torch.tensor(2.5)), S(T(3, 4, dtype=bf16), torch.tensor(1.5, dtype=f64)), S(T(2), T())])
add([aten.new_empty_strided.default], [S(T(3, 4), [2, 5], [5, 1], values=False), S(T(3, dtype=i64), [4], [1], values=False),
                                       S(T(3), [2, 2], [1, 2], dtype=f64, values=False)])
add([aten.unfold.default, aten.unfold_copy.default],
    [S(T(6, 4), 0, 2, 2), S(T(6, 4), 1, 3, 1), S(T(2, 7, 3), -2, 3, 2), S(T(5), 0, 5, 1), S(T(4, 3, noncontiguous=True), 0, 2, 1),
     S(T(3, 4, dtype=i64), 1, 1, 3), S(T(), 0, 1, 1)])
add([aten.diagonal.default, aten.diagonal_copy.default],
    [S(T(4, 4)), S(T(3, 5), 1), S(T(3, 5), -2), S(T(2, 3, 4), 0, 0, 2), S(T(2, 3, 4), 1, -1, 0), S(T(3, 3), 5),
     S(T(4, 3, noncontiguous=True), -1), S(T(3, 4, dtype=i64), 0, 1, 0)])
SAMPLES[aten.index_select.default].append(S(T(), 0, torch.tensor([0])))  # 0-d: one element, 0-d result
for _dim_op in (aten.max.dim, aten.min.dim):  # bools (aten's argmax refuses them, max.dim does not)
    SAMPLES[_dim_op] += [S(torch.tensor([[True, False], [False, False], [True, True]]), 1),
                         S(torch.tensor([False, True, True]), 0, True)]
