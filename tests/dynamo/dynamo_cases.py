"""Tiny functions, each traced by tinydynamo and checked against eager PyTorch.

``@case(*inputs)`` registers a function with a description of its inputs: ``T(2, 3)`` is a
random float tensor of that shape (seeded by position, rebuilt for every run), anything else
is deep-copied. ``kwargs=`` gives keyword arguments, ``dynamo=False`` excludes a case from the
comparison with torch._dynamo's graphs (see test_vs_torch_dynamo.py for why).
"""
import collections
import copy
import dataclasses
import enum
import functools
import itertools
import keyword
import logging
import math
import operator
import sys
import typing

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = []


@dataclasses.dataclass
class Case:
    fn: object
    inputs: tuple
    kwargs: dict
    dynamo: bool  # also compared op by op with torch._dynamo's graph

    @property
    def name(self):
        return self.fn.__name__

    def make_inputs(self):
        return build(self.inputs, 0), build(self.kwargs, 100)


class T:
    """A deterministic tensor input: randn for floats, randint(low, high) for ints, bools."""

    def __init__(self, *shape, dtype=torch.float32, requires_grad=False, low=0, high=5):
        self.shape, self.dtype, self.requires_grad, self.low, self.high = shape, dtype, requires_grad, low, high

    def build(self, seed):
        g = torch.Generator().manual_seed(seed)
        if self.dtype.is_floating_point:
            t = torch.randn(self.shape, generator=g).to(self.dtype)
        elif self.dtype == torch.bool:
            t = torch.randint(0, 2, self.shape, generator=g).bool()
        else:
            t = torch.randint(self.low, self.high, self.shape, generator=g).to(self.dtype)
        return t.requires_grad_(self.requires_grad)


def build(spec, seed):
    if isinstance(spec, T):
        return spec.build(seed)
    if hasattr(spec, "_fields"):  # a namedtuple
        return type(spec)(*(build(s, seed + i) for i, s in enumerate(spec)))
    if isinstance(spec, (list, tuple)):
        return type(spec)(build(s, seed + i) for i, s in enumerate(spec))
    if isinstance(spec, dict):
        return type(spec)((k, build(v, seed + i)) for i, (k, v) in enumerate(spec.items()))
    return copy.deepcopy(spec)


def assert_same(actual, expected):
    """Equal results: tensors by assert_close, containers item by item, modules by state, the
    rest by == (or by their attributes, for plain objects)."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected)
    elif isinstance(expected, (list, tuple, collections.deque)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_same(actual[key], expected[key])
    elif isinstance(expected, nn.Module):
        assert_same(actual.state_dict(), expected.state_dict())
    elif hasattr(expected, "__dict__") and not isinstance(expected, type):
        assert_same(vars(actual), vars(expected))
    else:
        assert actual == expected


def case(*inputs, kwargs=None, dynamo=True):
    def register(fn):
        CASES.append(Case(fn, inputs, kwargs or {}, dynamo))
        return fn

    return register


X = T(4, 5)
Y = T(4, 5)
V = T(6)
M = T(3, 4, 5)

# --- pointwise ops ---------------------------------------------------------------------------


@case(X)
def relu(x):
    return torch.relu(x)


@case(X)
def sigmoid_tanh(x):
    return torch.sigmoid(x) * torch.tanh(x)


@case(X)
def exp_log(x):
    return torch.log(torch.exp(x) + 1)


@case(X)
def trig(x):
    return torch.sin(x) + torch.cos(x)


@case(X)
def sqrt_rsqrt(x):
    return torch.sqrt(x.abs() + 1) + torch.rsqrt(x.abs() + 1)


@case(X)
def neg_abs(x):
    return -x.abs()


@case(X)
def clamp(x):
    return torch.clamp(x, -0.5, 0.5)


@case(X)
def clamp_min_method(x):
    return x.clamp_min(0.1)


@case(X, Y)
def where(x, y):
    return torch.where(x > 0, x, y)


@case(X, Y)
def maximum_minimum(x, y):
    return torch.maximum(x, y) - torch.minimum(x, y)


@case(X)
def pow_scalar(x):
    return x ** 2


@case(X, Y)
def pow_tensor(x, y):
    return x.abs() ** y


@case(X)
def floor_ceil_round(x):
    return torch.floor(x) + torch.ceil(x) + torch.round(x)


@case(X)
def sign_erf(x):
    return torch.sign(x) * torch.erf(x)


@case(X)
def gelu(x):
    return F.gelu(x)


@case(X)
def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


@case(X)
def silu_softplus(x):
    return F.silu(x) + F.softplus(x)


@case(X)
def leaky_relu_elu(x):
    return F.leaky_relu(x, 0.2) + F.elu(x)


@case(X)
def hardtanh(x):
    return F.hardtanh(x, -0.3, 0.3)


@case(X, Y)
def lerp(x, y):
    return torch.lerp(x, y, 0.3)


@case(X, Y, T(4, 5))
def addcmul_addcdiv(x, y, z):
    return torch.addcmul(x, y, z, value=0.5) + torch.addcdiv(x, y, z.abs() + 1)


@case(X)
def reciprocal_square(x):
    return torch.reciprocal(x.abs() + 1) + torch.square(x)


@case(X)
def expm1_log1p(x):
    return torch.expm1(x) + torch.log1p(x.abs())


@case(X, Y)
def atan2(x, y):
    return torch.atan2(x, y)


@case(X, Y)
def fmod_remainder(x, y):
    return torch.fmod(x, y.abs() + 1) + torch.remainder(x, 2.0)


@case(X, Y)
def arithmetic(x, y):
    return (x + y) * (x - y) / (y.abs() + 1)


@case(X)
def scalar_left(x):
    return 2 - x * 3 + 1 / (x.abs() + 1)


@case(X, Y)
def floordiv_mod(x, y):
    return x // (y.abs() + 1) + x % 2


@case(T(4, 5, dtype=torch.int64), T(4, 5, dtype=torch.int64))
def bitwise_ints(a, b):
    return (a & b) | (a ^ b) | (a << 1) | (b >> 1)


@case(T(4, 5, dtype=torch.bool), T(4, 5, dtype=torch.bool))
def bool_logic(a, b):
    return ~a | (a & b)


@case(X)
def builtin_abs(x):
    return abs(x)


@case(X, Y)
def comparisons(x, y):
    return (x > y).float() + (x <= y).float() + (x == y).float() + (x != 0).float()


@case(X)
def sigmoid_method_chain(x):
    return x.sigmoid().mul(2).sub(1).abs()


@case(X)
def dropout_eval(x):
    return F.dropout(x, p=0.5, training=False)


@case(X)
def nan_to_num(x):
    return torch.nan_to_num(torch.log(x))


# --- reductions -------------------------------------------------------------------------------


@case(X)
def sum_all(x):
    return x.sum()


@case(M)
def sum_dim_keepdim(x):
    return x.sum(dim=1, keepdim=True)


@case(M)
def mean_dims(x):
    return x.mean(dim=(0, 2))


@case(X)
def max_dim_namedtuple(x):
    result = x.max(dim=1)
    return result.values, result.indices


@case(X)
def max_dim_unpack(x):
    values, indices = torch.max(x, 1)
    return values * 2, indices


@case(X)
def min_all_argmax(x):
    return x.min(), x.argmax(dim=0)


@case(X)
def amax_prod(x):
    return x.amax(dim=-1) + x.prod(dim=0).sum()


@case(X)
def var_std(x):
    return x.var(dim=1) + x.std()


@case(X)
def norm(x):
    return x.norm() + torch.linalg.vector_norm(x, dim=1).sum()


@case(X)
def logsumexp(x):
    return torch.logsumexp(x, dim=1)


@case(X)
def cumsum(x):
    return x.cumsum(dim=1)


@case(X)
def softmax(x):
    return F.softmax(x, dim=-1)


@case(X)
def log_softmax(x):
    return torch.log_softmax(x, dim=1)


@case(X)
def softmax_method(x):
    return x.softmax(-1)


@case(X)
def any_all(x):
    return (x > 0).any(), (x > -10).all()


@case(V)
def topk(x):
    return torch.topk(x, 3)


@case(V)
def sort_returns_namedtuple(x):
    return torch.sort(x, descending=True)


@case(X)
def count_nonzero_dim(x):
    return torch.count_nonzero(x > 0, dim=1)


# --- shapes and views --------------------------------------------------------------------------


@case(M)
def view_reshape(x):
    return x.view(3, 20).reshape(60)


@case(M)
def view_minus_one(x):
    return x.view(-1, 5)


@case(M)
def permute(x):
    return x.permute(2, 0, 1)


@case(M)
def transpose(x):
    return x.transpose(0, 1).contiguous()


@case(X)
def t_attributes(x):
    return x.T + 0, x.mT * 1


@case(X)
def unsqueeze_squeeze(x):
    return x.unsqueeze(0).unsqueeze(-1).squeeze(0)


@case(M)
def flatten(x):
    return torch.flatten(x, 1)


@case(T(4, 1))
def expand(x):
    return x.expand(4, 3)


@case(X)
def repeat(x):
    return x.repeat(2, 1)


@case(X, Y)
def cat(x, y):
    return torch.cat([x, y], dim=0)


@case(X, Y)
def stack(x, y):
    return torch.stack((x, y), dim=1)


@case(T(6, 4))
def split(x):
    a, b, c = x.split(2)
    return a + b + c


@case(T(6, 4))
def chunk(x):
    return torch.chunk(x, 3, dim=0)[1]


@case(X)
def unbind(x):
    rows = x.unbind(0)
    return rows[0] + rows[-1]


@case(X)
def narrow(x):
    return x.narrow(1, 1, 3)


@case(X)
def flip_roll(x):
    return torch.flip(x, [0]) + torch.roll(x, 1, dims=1)


@case(T(5, 5))
def tril_triu(x):
    return torch.tril(x) - torch.triu(x, 1)


@case(T(5, 5))
def diagonal(x):
    return x.diagonal() + torch.diag(x)


@case(M)
def movedim(x):
    return torch.movedim(x, 0, -1)


@case(X, T(3, dtype=torch.int64, high=4))
def index_select(x, idx):
    return torch.index_select(x, 0, idx)


@case(X, T(4, 2, dtype=torch.int64, high=5))
def gather(x, idx):
    return torch.gather(x, 1, idx)


@case(X)
def masked_fill(x):
    return x.masked_fill(x < 0, 0.0)


@case(M)
def reshape_from_shape(x):
    a, b, c = x.shape
    return x.reshape(a * b, c)


@case(M)
def size_args(x):
    return x.view(x.size(0), -1)


@case(X)
def expand_as_type_as(x):
    return x[:1].expand_as(x) + x.type_as(x)


@case(T(2, 3, 4, 5))
def view_with_shape_slicing(x):
    return x.view(*x.shape[:2], -1)


@case(X)
def new_shape_tuple(x):
    return x.reshape(x.shape + (1,))


@case(T(4, 6))
def swap_halves(x):
    half = x.shape[1] // 2
    return torch.cat([x[:, half:], x[:, :half]], dim=1)


# --- matmul and linear algebra ---------------------------------------------------------------


@case(T(3, 4), T(4, 5))
def matmul_operator(a, b):
    return a @ b


@case(T(3, 4), T(4, 5))
def mm(a, b):
    return torch.mm(a, b)


@case(T(2, 3, 4), T(2, 4, 5))
def bmm(a, b):
    return torch.bmm(a, b)


@case(T(2, 3, 4), T(4, 5))
def matmul_broadcast(a, b):
    return torch.matmul(a, b)


@case(T(3, 4), T(4, 5))
def einsum(a, b):
    return torch.einsum("ij,jk->ik", a, b)


@case(V, T(4))
def outer(a, b):
    return torch.outer(a, b)


@case(T(3, 4), T(5, 4), T(5))
def linear(x, w, b):
    return F.linear(x, w, b)


@case(T(5), T(3, 4), T(4, 5))
def addmm(b, x, w):
    return torch.addmm(b, x, w)


@case(T(3, 3))
def inverse_like(x):
    return torch.linalg.solve(x @ x.T + torch.eye(3), x)


# --- indexing --------------------------------------------------------------------------------------


@case(X)
def index_int(x):
    return x[0]


@case(X)
def index_column(x):
    return x[:, 1]


@case(X)
def index_slice(x):
    return x[1:-1]


@case(X)
def index_step(x):
    return x[::2, 1::2]


@case(X)
def index_none_ellipsis(x):
    return x[..., None].sum(-1) + x[None].sum(0)


@case(X, T(3, dtype=torch.int64, high=4))
def index_tensor(x, idx):
    return x[idx]


@case(X)
def index_list(x):
    return x[:, [0, 2]]


@case(X)
def index_from_shape(x):
    return x[x.shape[0] - 1]


@case(X)
def index_negative(x):
    return x[-1, -2]


@case(M)
def index_tuple_mixed(x):
    return x[1, :, 2:4]


@case(X)
def setitem_on_clone(x):
    y = x.clone()
    y[0] = 0.0
    y[:, 1] = y[:, 2]
    return y


@case(X)
def setitem_mask(x):
    y = x.clone()
    y[y < 0] = 0.0
    return y


# --- factories --------------------------------------------------------------------------------------


@case(X)
def zeros_ones_like(x):
    return torch.zeros_like(x) + torch.ones_like(x) * 2 + torch.full_like(x, 3.0)


@case(X)
def zeros_from_shape(x):
    return x + torch.zeros(x.shape)


@case(X)
def arange_from_size(x):
    return x + torch.arange(x.size(1))


@case(X)
def eye(x):
    return x[:4, :4] @ torch.eye(4)


@case(X)
def tensor_literal(x):
    return x[0, :2] * torch.tensor([1.0, 2.0])


@case(X)
def new_zeros_ones(x):
    return x.new_zeros(3) + x.new_ones((3,))


@case(X)
def linspace(x):
    return x[0] * torch.linspace(0, 1, 5)


@case(X)
def ones_dtype(x):
    return torch.ones(2, 3, dtype=torch.float64)


@case(X)
def arange_device(x):
    return torch.arange(0, 4, dtype=torch.long, device=x.device)


# --- dtypes and devices -------------------------------------------------------------------------------


@case(X)
def to_double(x):
    return x.to(torch.float64) + 1


@case(X)
def dtype_methods(x):
    return x.double(), x.int(), x.bool(), x.float()


@case(X)
def to_same_device(x):
    return x.to(x.device) * 2


@case(X)
def cpu_method(x):
    return x.cpu() + 1


@case(T(4, 5, dtype=torch.int64))
def int_to_float(x):
    return x.float() / 2


@case(X)
def to_dtype_kwarg(x):
    return x.to(dtype=torch.float16).float()


# --- control flow on constants and shapes ----------------------------------------------------------


@case(X)
def branch_on_shape(x):
    if x.shape[0] > 2:
        return x * 2
    return x * 3


@case(X)
def branch_on_dim(x):
    if x.dim() == 2:
        x = x.unsqueeze(0)
    return x.sum(0)


@case(X)
def branch_on_ndim_else(x):
    return x + 1 if x.ndim == 3 else x - 1


@case(X)
def for_range(x):
    for i in range(3):
        x = x + i
    return x


@case(X)
def while_counter(x):
    i = 0
    while i < 4:
        x = x * 1.5
        i += 1
    return x


@case(X, True)
def branch_on_bool_arg(x, flag):
    if flag:
        return x.relu()
    return x.sigmoid()


@case(X, False)
def branch_on_bool_arg_false(x, flag):
    if flag:
        return x.relu()
    return x.sigmoid()


@case(X, 3)
def nested_if(x, n):
    if n > 1:
        if n > 2:
            return x * n
        return x
    return -x


@case(X)
def and_or_constants(x):
    a = x.shape[0] > 1 and x.shape[1] > 1
    b = x.shape[0] > 100 or x.shape[1] > 100
    return x + int(a) + int(b)


@case(X)
def early_return(x):
    for i in range(10):
        if i == 2:
            return x * i
    return x


@case([T(3), T(3), T(3)])
def loop_over_list(xs):
    total = xs[0]
    for t in xs[1:]:
        total = total + t
    return total


@case([T(3), T(3)])
def enumerate_loop(xs):
    out = 0
    for i, t in enumerate(xs):
        out = out + t * (i + 1)
    return out


@case([T(3), T(3)], [T(3), T(3)])
def zip_loop(xs, ys):
    return [a * b for a, b in zip(xs, ys)]


@case(X)
def itertools_product_loop(x):
    out = x
    for a, b in itertools.product([1, 2], [3, 4]):
        out = out * a + b
    return out


@case(X)
def itertools_chain_loop(x):
    for k in itertools.chain([1, 2], (3,)):
        x = x * k
    return x


@case([T(3), T(3), T(3)])
def functools_reduce_over_tensors(xs):
    return functools.reduce(lambda a, b: a * 2 + b, xs), functools.reduce(operator.add, xs, 1.5)


@case([T(3), T(3), T(3)])
def reversed_loop(xs):
    out = []
    for t in reversed(xs):
        out.append(t + len(out))
    return out


@case(X)
def break_continue(x):
    for i in range(10):
        if i % 2:
            continue
        if i > 6:
            break
        x = x + i
    return x


@case(M)
def loop_over_shape(x):
    n = 1
    for d in x.shape:
        n *= d
    return x.reshape(n)


@case({"a": T(3), "b": T(3)})
def loop_over_dict_items(d):
    out = 0
    for key, value in d.items():
        out = out + value * len(key)
    return out


@case(X)
def range_with_step(x):
    cols = [x[:, i] for i in range(0, x.shape[1], 2)]
    return torch.stack(cols, dim=1)


@case(X)
def sum_of_generator(x):
    return sum(x * i for i in range(3))


@case(X)
def any_all_constants(x):
    if any(d > 4 for d in x.shape) and all(d > 0 for d in x.shape):
        return x + 1
    return x


@case(X)
def isinstance_checks(x):
    if isinstance(x, torch.Tensor) and not isinstance(x, (list, tuple)):
        return x * 2
    return x


@case(X)
def len_numel_size(x):
    return x * len(x) + x.numel() + x.size(1)


@case(X)
def dtype_branch(x):
    if x.dtype == torch.float32:
        return x.double()
    return x


@case(X)
def is_floating_point_branch(x):
    return x * 2 if x.is_floating_point() else x


@case(T(3, requires_grad=True))
def requires_grad_branch(x):
    return x * 2 if x.requires_grad else x


@case(X)
def device_type_branch(x):
    if x.device.type == "cpu":
        return x + 1
    return x


@case(X, None)
def none_argument(x, mask):
    if mask is None:
        return x
    return x * mask


@case(X, T(4, 5))
def not_none_argument(x, mask):
    if mask is not None:
        return x * mask
    return x


@case(X)
def not_operator(x):
    flag = not (x.shape[0] == 4)
    return x * 2 if not flag else x


@case(X)
def f_string_key(x):
    d = {f"layer{i}": x * i for i in range(2)}
    return d["layer1"]


@case(X)
def math_on_shape(x):
    return x / math.sqrt(x.shape[-1])


@case(X)
def float_int_of_shape(x):
    return x * float(x.shape[0]) + int(2.7)


@case(X)
def min_max_constants(x):
    return x * max(x.shape) + min(3, 4, 5)


@case(X)
def chained_comparison(x):
    if 0 < x.shape[0] < 10:
        return x + 1
    return x


@case(X)
def assert_on_shape(x):
    assert x.dim() == 2, "expected a matrix"
    return x.t()


@case(X)
def try_finally_normal_path(x):
    try:
        y = x + 1
    finally:
        y = y * 2
    return y


# --- containers ------------------------------------------------------------------------------


@case(X)
def return_tuple(x):
    return x + 1, x - 1


@case(X)
def return_list(x):
    return [x, x * 2]


@case(X)
def return_dict(x):
    return {"double": x * 2, "half": x / 2}


@case(X)
def return_nested(x):
    return {"pair": (x + 1, [x - 1, {"deep": x * 3}]), "n": 3}


@case(M)
def tuple_unpack(x):
    a, b, c = x.unbind(0)
    return a + b * c


@case(T(5, 3))
def star_unpack(x):
    first, *middle, last = x.unbind(0)
    return first + last + len(middle)


@case(X)
def list_methods(x):
    xs = [x]
    xs.append(x + 1)
    xs.extend([x + 2, x + 3])
    xs.insert(0, x - 1)
    last = xs.pop()
    return torch.stack(xs).sum(0) + last


@case(X)
def dict_methods(x):
    d = dict(a=x)
    d["b"] = x + 1
    d.update({"c": x + 2})
    return d.get("b") + d.get("missing", x) + len(d)


@case(X)
def dict_comprehension(x):
    d = {i: x * i for i in range(3)}
    return d[2] - d[1]


@case(X)
def list_comprehension(x):
    return torch.stack([x[i] * i for i in range(x.shape[0])])


@case(X)
def nested_comprehension(x):
    return [[x[i, j] for j in range(2)] for i in range(2)]


Point = collections.namedtuple("Point", ["x", "y"])
PointTuple = Point  # the name Point is taken by a class further down


@case(X)
def namedtuple_return(x):
    return Point(x + 1, x - 1)


@case(Point(T(3), T(3)))
def namedtuple_input(p):
    return p.x * p.y + p[0]


@case([T(3), T(3)])
def list_input(xs):
    return xs[0] + xs[1]


@case({"a": T(3), "b": T(3)})
def dict_input(d):
    return d["a"] * d["b"]


@case((T(3), (T(3), T(3))))
def nested_tuple_input(t):
    a, (b, c) = t
    return a + b + c


@case(X, kwargs={"scale": 3.0, "bias": T(4, 5)})
def keyword_arguments(x, scale=1.0, bias=None):
    return x * scale + bias


@case(T(3), T(3), T(3))
def star_args(*xs):
    return sum(xs)


@case(X, kwargs={"a": T(4, 5), "b": T(4, 5)})
def star_kwargs(x, **kw):
    return x + kw["a"] * kw["b"]


@case(X)
def defaults(x, scale=2.0, shift=1):
    return x * scale + shift


@case(X, kwargs={"factor": 4})
def keyword_only(x, *, factor=2):
    return x * factor


@case(X, 2, kwargs={"c": 3})
def positional_only(x, a, /, b=5, *, c):
    return x * a + b + c


@case([1, 2, 3, 4])
def list_of_constants(xs):
    return torch.tensor(xs[1:3] + [sum(xs)])


@case(X)
def tuple_multiply(x):
    return x.repeat(*((2,) * 2))


@case(X)
def in_constant_list(x):
    mode = "mean"
    if mode in ["mean", "sum"]:
        return x.mean()
    return x


@case(X)
def sorted_constants(x):
    dims = sorted([1, 0])
    return x.permute(*dims)


@case(X)
def slicing_lists(x):
    parts = [x * i for i in range(5)]
    return parts[1:4:2], parts[-1]


@case((T(3), T(3)))
def tuple_concat(pair):
    return torch.stack(pair + (pair[0] * 2,))


@case(X)
def dict_keys_values(x):
    d = {"a": x, "b": x * 2}
    return list(d.keys()), list(d.values())


@case(X)
def zip_dict(x):
    names = ["a", "b"]
    return dict(zip(names, [x, x + 1]))


# --- functions, closures, globals ----------------------------------------------------------------


def helper(x, scale):
    return x * scale + 1


def helper_kw(x, *, power=2):
    return x ** power


def recursive_sum(x, n):
    if n == 0:
        return x
    return recursive_sum(x + n, n - 1)


@case(X)
def call_helper(x):
    return helper(x, 3)


@case(X)
def call_helper_keyword(x):
    return helper_kw(x, power=3) + helper(scale=2, x=x)


@case(X)
def call_recursive(x):
    return recursive_sum(x, 3)


@case(X)
def closure_over_tensor(x):
    y = x * 2

    def inner(z):
        return z + y

    return inner(x)


@case(X)
def closure_over_constant(x):
    k = 5

    def inner(z):
        return z * k

    return inner(x)


@case(X)
def nested_def_with_default(x):
    def inner(z, shift=3):
        return z + shift

    return inner(x) + inner(x, shift=1)


@case(X)
def lambda_call(x):
    square = lambda t: t * t  # noqa: E731
    return square(x)


@case([T(3), T(3)])
def map_lambda(xs):
    return list(map(lambda t: t * 2, xs))


@case(X)
def nonlocal_counter(x):
    count = 0

    def bump(t):
        nonlocal count
        count += 1
        return t + count

    x = bump(x)
    x = bump(x)
    return x * count


SCALE = 3.0
OFFSETS = (1, 2)
ACTIVATION = torch.tanh
GLOBAL_TABLE = {"gain": 2.0}


@case(X)
def global_constant(x):
    return x * SCALE + OFFSETS[1]


@case(X)
def global_function(x):
    return ACTIVATION(x) + helper(x, SCALE)


@case(X)
def global_dict(x):
    return x * GLOBAL_TABLE["gain"]


GLOBAL_WEIGHT = torch.randn(5, 5, generator=torch.Generator().manual_seed(7))


@case(X)
def global_tensor(x):
    return x @ GLOBAL_WEIGHT


def make_scaler(factor):
    def scale(x):
        return x * factor

    return scale


triple = make_scaler(3)


@case(X)
def global_closure(x):
    return triple(x)


class Config:
    def __init__(self):
        self.hidden = 5
        self.alpha = 0.5

    @property
    def double_alpha(self):
        return self.alpha * 2

    def apply(self, x):
        return x * self.alpha

    @staticmethod
    def shift(x):
        return x + 1

    @classmethod
    def name(cls):
        return cls.__name__


CONFIG = Config()


@case(X, Config())
def user_object_attributes(x, cfg):
    return x.reshape(-1, cfg.hidden) * cfg.alpha


@case(X)
def user_object_methods(x):
    return CONFIG.apply(x) + CONFIG.shift(x) * CONFIG.double_alpha + len(CONFIG.name())


class Positive:
    """A data descriptor written in Python: it comes before the instance's ``__dict__``."""

    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, objtype=None):
        return self if obj is None else abs(getattr(obj, self.name))

    def __set__(self, obj, value):
        setattr(obj, self.name, value)


class Holder:
    scale = Positive()

    def __init__(self):
        self.scale = -2.0
        self.__dict__["scale"] = 100.0  # shadowed: Python reads the descriptor


HOLDER = Holder()


@case(X)
def data_descriptor(x):
    return x * HOLDER.scale


class Scale:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


class Factory:
    """Classes kept as class attributes (transformers' time-series outputs keep
    ``distribution_class``): read through an instance, a class is not bound to it."""

    pair = collections.namedtuple("Pair", "a b")
    scale_class = Scale

    def make(self, x):
        return self.pair(x, x * 2), self.scale_class(3).apply(x)


FACTORY = Factory()


@case(X)
def classes_as_class_attributes(x):
    pair, y = FACTORY.make(x)
    return pair.a + pair.b + y


@case(X, dynamo=False)
def legacy_tensor_constructors(x):
    """VITS: ``torch.IntTensor([self.hidden_size])``."""
    return x * torch.IntTensor([x.size(-1)]) + torch.FloatTensor([1.5, 2.0]).sum() + torch.LongTensor([[1], [2]]).sum()


@dataclasses.dataclass
class Options:
    scale: float = 2.0
    use_bias: bool = True


@case(X, Options())
def dataclass_options(x, opts):
    y = x * opts.scale
    if opts.use_bias:
        y = y + 1
    return y


@case(X)
def generator_to_tuple(x):
    return tuple(x[i] for i in range(2))


@case(X)
def operator_module(x):
    return operator.add(x, 1) * operator.mul(2, 3)


@case(X)
def getattr_hasattr(x):
    fn = getattr(torch, "relu")
    if hasattr(x, "shape") and not hasattr(x, "not_an_attribute"):
        return fn(x)
    return x


@case(X)
def torch_function_variants(x):
    return torch.add(x, 1, alpha=2) + x.add(1) + torch.mul(x, x)


# --- nn.Modules ----------------------------------------------------------------------------------


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.arange(5.0))
        self.scale = nn.Parameter(torch.ones(5) * 2)
        self.eps = 0.1

    def forward(self, x):
        return (x - self.offset) * self.scale + self.eps


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(5, 5) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class Indexed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(5, 5), nn.Linear(5, 5)])

    def forward(self, x):
        return self.layers[-1](self.layers[0](x)) * len(self.layers)


class Named(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(5, 2), "b": nn.Linear(5, 3)})

    def forward(self, x):
        return {name: head(x) for name, head in self.heads.items()}


class WithParameterList(nn.Module):
    """nn.ParameterList names its parameters "0", "1"...: their guards say getattr(p, '0')."""

    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(5) * 2), nn.Parameter(torch.ones(5) / 2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(5, 5), "b": nn.Linear(5, 5)})

    def forward(self, x):
        for name, head in self.heads.items():
            x = head(x) * self.scales[0] + self.scales[-1]
        return x


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 5)

    def forward(self, x):
        return self.proj(x)


class Derived(Base):
    def forward(self, x):
        return super().forward(x) * 2 + self.extra(x)

    def extra(self, x):
        return x.sum(-1, keepdim=True)


class TrainingBranch(nn.Module):
    def forward(self, x):
        if self.training:
            return x * 2
        return x


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(5, 5)

    def forward(self, x):
        return self.block(self.block(x))


SEQUENTIAL = nn.Sequential(nn.Linear(5, 6), nn.GELU(), nn.Linear(6, 2))


def seeded(module_cls):
    torch.manual_seed(0)
    return module_cls()


@case(seeded(TwoLayer), X)
def module_two_layer(model, x):
    return model(x)


@case(seeded(WithBuffer), X)
def module_buffer_and_parameter(model, x):
    return model(x)


@case(seeded(Stack), X)
def module_list_loop(model, x):
    return model(x)


@case(seeded(Indexed), X)
def module_list_index(model, x):
    return model(x)


class SlicedSequential(nn.Module):
    """Slices of an nn.Sequential (a new Sequential each): prefix, suffix, stepped, nested."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 5))

    def forward(self, x):
        h = self.features[:2](x)
        return self.features[2:](h) + self.features[::2][1:](h) - self.features[1:][-1](h) * len(self.features[1:4])


# dynamo=False: torch._dynamo's graph also records each new Sequential's log_api_usage_once call
@case(seeded(SlicedSequential), X, dynamo=False)
def sequential_slices(model, x):
    return model(x)


@case(seeded(Named), X)
def module_dict(model, x):
    return model(x)


@case(seeded(WithParameterList), X)
def module_parameter_list_and_dict(model, x):
    return model(x)


@case(seeded(Derived), X)
def module_super_forward(model, x):
    return model(x)


@case(seeded(TrainingBranch), X)
def module_training_flag(model, x):
    return model(x)


@case(seeded(Shared), X)
def module_shared_submodule(model, x):
    return model(x)


@case(X)
def global_sequential(x):
    return SEQUENTIAL(x)


@case(nn.LayerNorm(5), X)
def layer_norm_module(norm, x):
    return norm(x)


@case(nn.Conv2d(2, 3, 3, padding=1), T(1, 2, 6, 6))
def conv2d_module(conv, x):
    return conv(x)


@case(nn.Embedding(10, 4), T(2, 3, dtype=torch.int64, high=10))
def embedding_module(emb, idx):
    return emb(idx)


@case(nn.BatchNorm1d(5), X)
def batchnorm_training_updates_buffers(bn, x):
    return bn(x)


@case(nn.BatchNorm1d(5).eval(), X)
def batchnorm_eval(bn, x):
    return bn(x)


@case(nn.Dropout(0.5).eval(), X)
def dropout_module_eval(drop, x):
    return drop(x)


@case(nn.MaxPool2d(2), T(1, 2, 6, 6))
def maxpool_module(pool, x):
    return pool(x)


@case(seeded(TwoLayer), X)
def module_method_forward_direct(model, x):
    return model.forward(x) + model.fc2.weight.sum()


@case(seeded(TwoLayer), X)
def module_parameter_attributes(model, x):
    return x @ model.fc1.weight.T + model.fc1.bias


# --- in-place ops on inputs ---------------------------------------------------------------------------


@case(X)
def inplace_add_(x):
    x.add_(1)
    return x


@case(X, Y)
def inplace_mul_(x, y):
    x.mul_(y)
    return x * 2


@case(X)
def inplace_setitem(x):
    x[0] = 0.0
    return x.sum()


@case(X)
def inplace_iadd(x):
    x += 1
    return x


@case(X)
def inplace_relu_method(x):
    return x.relu_()


@case(X)
def inplace_zero_(x):
    x.zero_()


@case(X)
def inplace_torch_relu_(x):
    torch.relu_(x)
    return x + 1


@case(X)
def inplace_clamp_(x):
    x.clamp_(-0.1, 0.1)
    return x


@case(X, Y)
def inplace_copy_(x, y):
    x.copy_(y * 2)
    return x


@case(X)
def inplace_functional(x):
    return F.relu(x, inplace=True)


@case(X)
def inplace_through_view(x):
    y = x.view(-1)
    y.add_(1)
    return x


@case(X)
def inplace_on_intermediate(x):
    y = x * 2
    y.sub_(1)
    return y


# --- non-tensor results -----------------------------------------------------------------------------


@case(X)
def return_int_from_shape(x):
    return x.shape[0] * 2


@case(X)
def return_none(x):
    return None


@case(X)
def return_string(x):
    return f"shape={tuple(x.shape)}"


@case(X)
def return_mixed(x):
    return x * 2, x.shape[1], "ok", None


@case(X)
def return_input(x):
    return x


@case(X)
def return_input_and_result(x):
    return x, x + 1


@case(X)
def return_dtype_and_size(x):
    return x.dtype, x.size()


@case(X)
def return_empty_tuple(x):
    return ()


@case(X)
def return_same_tensor_twice(x):
    y = x + 1
    return y, y


@case(seeded(TwoLayer), X)
def return_module_weight(model, x):
    return model.fc1.weight, model(x)


# --- grad mode -----------------------------------------------------------------------------------


@case(T(3, requires_grad=True))
def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y + x


@case(T(3, requires_grad=True))
def profiler_ranges(x):
    """Dropped from the graph, as Dynamo does."""
    with torch.profiler.record_function("block"):
        y = x.sin()
        with torch.autograd.profiler.record_function("inner"):
            y = y * 2
    return y + 1


@case(T(3, requires_grad=True))
def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
        z = x * 3
    return y, z


@case(T(3, requires_grad=True))
def set_grad_enabled_block(x):
    with torch.set_grad_enabled(False):
        y = x + 1
    return y


@case(X)
def is_grad_enabled_branch(x):
    if torch.is_grad_enabled():
        return x + 1
    return x - 1


# --- more ops -------------------------------------------------------------------------------------------


@case(T(2, 3, 8, 8))
def pooling(x):
    return F.max_pool2d(x, 2) + F.avg_pool2d(x, 2)


@case(T(2, 3, 8, 8), T(4, 3, 3, 3))
def conv2d_functional(x, w):
    return F.conv2d(x, w, padding=1)


@case(T(4, 10), T(4, dtype=torch.int64, high=10))
def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


@case(X, Y)
def mse_loss(x, y):
    return F.mse_loss(x, y)


@case(T(2, 4, 5))
def layer_norm_functional(x):
    return F.layer_norm(x, (5,))


@case(T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8))
def attention_by_hand(q, k, v):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    mask = torch.tril(torch.ones(4, 4)).view(1, 1, 4, 4)
    att = att.masked_fill(mask == 0, float("-inf"))
    return F.softmax(att, dim=-1) @ v


@case(T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8))
def scaled_dot_product_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@case(X)
def one_hot(x):
    return F.one_hot(torch.arange(4) % 3, num_classes=3).float() @ x[:3]


@case(X)
def normalize(x):
    return F.normalize(x, dim=-1)


@case(X)
def pad(x):
    return F.pad(x, (1, 1))


@case(T(1, 2, 4, 4))
def interpolate(x):
    return F.interpolate(x, scale_factor=2, mode="nearest")


@case(X)
def detach_and_clone(x):
    return x.detach() * 2 + x.clone()


@case(X)
def chained_inplace_results(x):
    y = x.clone()
    return y.add_(1).mul_(2)


@case(X, Y)
def matmul_inplace_operator(x, y):
    z = x.clone()
    z @= y.T[:, :4][:5]
    return z


@case(X)
def integer_tensor_ops(x):
    idx = (x > 0).long()
    return idx.sum(dim=1) * 2 + idx.argmax()


@case(X)
def cumulative_ops(x):
    return torch.cumprod(x, dim=1) + torch.cummax(x, dim=1).values


@case(X)
def einsum_batched(x):
    return torch.einsum("ij,ij->i", x, x)


@case(X)
def where_scalar(x):
    return torch.where(x > 0, x, 0.0)


@case(X)
def std_mean_tuple(x):
    std, mean = torch.std_mean(x, dim=0)
    return (x - mean) / (std + 1e-5)


@case(T(3, 4), T(3, 4))
def cosine_similarity(a, b):
    return F.cosine_similarity(a, b, dim=1)


@case(T(8))
def sort_values_only(x):
    return torch.sort(x).values[:3]


@case(X)
def tensor_iteration(x):
    return [row.sum() for row in x]


@case(X)
def tensor_unpack(x):
    a, b, c, d = x
    return a + b - c * d


@case(X)
def len_of_tensor(x):
    return x[: len(x) // 2]


@case(X)
def numel_scaling(x):
    return x.sum() / x.numel()


@case(X)
def stride_contiguous(x):
    y = x.t()
    return y.contiguous() if not y.is_contiguous() else y


@case(X)
def element_size(x):
    return x * x.element_size()


@case(X)
def clone_then_fill(x):
    return x.clone().fill_(3.0)


GELU_TANH = functools.partial(F.gelu, approximate="tanh")


@case(X)
def functools_partial(x):
    return GELU_TANH(x) + functools.partial(torch.add, alpha=2)(x, 1)


@case(X)
def tensor_method_from_class(x):
    return torch.Tensor.add(x, 1) * torch.Tensor.sum(x)


@case(X)
def finfo_min(x):
    return x.clamp(min=torch.finfo(x.dtype).min / 2)


class Color(enum.Enum):
    RED = 1
    BLUE = 2


@case(X, Color.BLUE)
def enum_branch(x, color):
    if color == Color.RED:
        return x + 1
    return x * color.value


class ByName(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(5, 5)
        self.fc1 = nn.Linear(5, 5)
        self.norms = nn.ModuleList([nn.LayerNorm(5), nn.LayerNorm(5)])

    def forward(self, x):
        layers = [getattr(self, f"fc{i}") for i in range(2)]
        for layer, norm in zip(layers, self.norms):
            x = norm(layer(x))
        return x


@case(seeded(ByName), X)
def module_getattr_and_zip(model, x):
    return model(x)


@case(X)
def optional_chain(x):
    cfg = {"dropout": None, "scale": 2}
    p = cfg.get("dropout")
    if p is not None and p > 0:
        x = F.dropout(x, p)
    return x * cfg["scale"]


class BaseScaler:
    def apply(self, x):
        return x * 2


class ChildScaler(BaseScaler):
    def apply(self, x):
        return super().apply(x) + 1


@case(X, ChildScaler())
def super_in_a_plain_class(x, scaler):
    return scaler.apply(x)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return x * self.calls


@case(Counter(), X)
def module_buffer_updated_in_place(counter, x):
    return counter(x)


# --- dict, list and builtin methods that programs from outside use -----------------------------


@case(X)
def dict_del_popitem_clear_and_merge(x):
    d = {"a": x, "b": x + 1, "c": 2}
    del d["a"]
    key, value = d.popitem()
    merged = d | {"z": 3}
    merged |= {"y": x * 2}
    first = collections.OrderedDict(p=x, q=1).popitem(last=False)
    d.clear()
    return key, value, merged, first, d


@case(X)
def list_sort_and_remove(x):
    order = [3, 1, 2]
    order.sort(reverse=True)
    order.remove(2)
    rows = [(2, x), (0, x * 3), (1, x * 2)]
    rows.sort(key=lambda row: row[0])
    return order, rows


@case(X)
def min_max_with_a_key(x):
    pairs = [(1, "b"), (3, "a"), (3, "c")]
    return x * max(pairs, key=lambda p: p[0])[0] + min(pairs, key=lambda p: p[1])[0] + max([], default=5)


class Box:
    def __init__(self, scale=2.0):
        self.scale = scale


@case(X, Box())
def setattr_builtin(x, box):
    setattr(box, "scale", 3.0)
    local = Box()
    setattr(local, "scale", 4.0)
    return x * box.scale + local.scale


# --- operators a user's class defines -----------------------------------------------------------


class Vector:
    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        return Vector(self.t + other.t)

    def __mul__(self, k):
        return Vector(self.t * k)

    def __rmul__(self, k):
        return Vector(self.t * k * 10)

    def __neg__(self):
        return Vector(-self.t)

    def __iadd__(self, other):
        self.t = self.t + other.t * 100
        return self

    def __eq__(self, other):
        return isinstance(other, Vector)


@case(X)
def operators_of_a_user_class(x):
    v = Vector(x) + Vector(x)
    u = 2 * v * 3  # __rmul__, then __mul__
    w = -u
    w += Vector(x)  # __iadd__, not __add__
    return w.t, v == u, v != 3  # != negates __eq__


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float

    def norm2(self):
        return self.x * self.x + self.y * self.y


@dataclasses.dataclass(order=True)
class Rank:
    level: int


@case(X)
def dataclass_methods_and_comparisons(x):
    p = Point(1.0, 2.0)
    return x * p.norm2(), p == Point(1.0, 2.0), p != Point(1.0, 3.0), Rank(1) < Rank(2)


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@case(X)
def enum_class_iterated_and_looked_up(x):
    return x + sum(level.value for level in Level) + Level(2).value * 10 + Level["LOW"].value * 100 + len(Level)


@case(X)
def itertools_finite_iterators(x):
    totals = list(itertools.accumulate([x, x, 2]))
    products = list(itertools.accumulate([1, 2, 3], operator.mul, initial=2))
    steps = [b - a for a, b in itertools.pairwise([x, x * 2, x * 4])]
    scaled = list(itertools.starmap(operator.mul, [(x, 2), (x, 3)]))
    prefix = list(itertools.takewhile(lambda v: v < 3, [1, 2, 3, 1])) + list(itertools.dropwhile(lambda v: v < 3, [1, 2, 3, 1]))
    evens = list(itertools.filterfalse(lambda v: v % 2, range(6)))
    return totals, products, steps, scaled, prefix, evens, [x * k for k in itertools.repeat(2, 3)]


@case(X, collections.OrderedDict(a=1, b=2, c=3))
def ordered_dict_move_to_end(x, caller_dict):
    d = collections.OrderedDict(p=x, q=1, r=x * 2)
    d.move_to_end("p")
    d.move_to_end("r", last=False)
    caller_dict.move_to_end("a")  # the caller sees the new order
    caller_dict.move_to_end("c", last=False)
    return list(d.items()), list(caller_dict), x * caller_dict["b"]


def inner_generator(x):
    sent = yield x + 1
    yield (x if sent is None else sent) * 2
    return x * 10


def delegating_generator(x):
    result = yield from inner_generator(x)
    yield result
    yield from [x - 1, x - 2]


def running_total():
    total = 0
    while True:
        total = total + (yield total)


def flattening_generator(x):
    yield from [x - 1, x - 2]
    yield from (x * k for k in range(3))


@case(X)
def generator_yield_from(x):
    return list(flattening_generator(x)), sum(flattening_generator(x))


# torch._dynamo 2.13 runs this frame eagerly: it does not trace generator.send (and it gives `None`
# for the value of a `yield from`, instead of the inner generator's return value)
@case(X, dynamo=False)
def generator_send_and_yield_from(x):
    g = delegating_generator(x)
    first = next(g)
    second = g.send(x * 3)  # passed through `yield from` to the inner generator
    totals = running_total()
    next(totals)
    totals.send(x)
    return first, second, list(g), totals.send(x * 2)


@case(X, Box())
def vars_and_instance_dict_see_the_attributes_assigned_before(x, box):
    before = dict(vars(box))
    box.scale = 5  # the dicts read afterwards hold the new value
    return x * vars(box)["scale"] + box.__dict__.get("scale"), sorted(vars(box)), before


@case(X, Box())
def write_through_the_instance_dict(x, box):
    vars(box)["scale"] = 7  # sets the attribute, which the caller sees
    box.__dict__["offset"] = 1
    return x * box.scale + box.offset


@case(X, {"scale": 2, "bias": 1})
def match_statements_on_shapes_and_mappings(x, options):
    match x.shape:
        case (rows, 5):
            x = x * rows
        case _:
            x = x - 1
    match options:
        case {"scale": scale, "bias": bias}:
            return x * scale + bias
        case _:
            return x


QUIET_LOG = logging.getLogger("tinydynamo.tests.quiet")


@case(X)
def library_checks_that_have_constant_answers(x):
    torch._assert(x.dim() == 2, "expects a matrix")  # torchvision's and timm's shape checks
    torch._check(x.shape[0] > 0)
    if sys.version_info >= (3, 8) and sys.version_info.major == 3:
        x = x + 1
    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = ", ".join(f"{k}={v}" for k, v in {"a": 1, "b": 2}.items())
    return x.to(device) * len(name)


@case(X, dynamo=False)  # torch._dynamo 2.13 breaks at Logger.isEnabledFor
def logger_is_enabled_for_is_answered_and_guarded(x):
    if QUIET_LOG.isEnabledFor(logging.DEBUG):
        x = x * 100
    return x + 1


@case(X, Y, dynamo=False)  # the same ops as torch._dynamo's graph, but it has three more getitem nodes
def distributions_of_a_policy(x, y):
    normal = torch.distributions.Normal(x, y.abs() + 0.1, validate_args=False)
    actions = torch.distributions.Categorical(logits=x, validate_args=False)
    joint = torch.distributions.Independent(torch.distributions.Normal(x, 1.0, validate_args=False), 1)
    return (normal.log_prob(y) + normal.entropy() + normal.stddev, actions.probs, actions.entropy(),
            joint.log_prob(y))


@case(X)
def itertools_endless_iterators(x):
    for i, step in zip(range(3), itertools.count(2, 0.5)):
        x = x + step * i
    weights = [w for _, w in zip(range(5), itertools.cycle([1, -1]))]
    firsts = list(itertools.islice(itertools.count(), 1, 7, 2))
    for n in itertools.count():
        if n * n > 10:
            break
    return x * sum(weights) + n, firsts, list(itertools.islice(itertools.repeat(x), 2)), list(itertools.islice([], 3))


@case(X)
def itertools_groupby_groups_share_the_iterable(x):
    sizes = [(key, len(list(group))) for key, group in itertools.groupby("aabccc")]
    by_parity = {k: sum(g) for k, g in itertools.groupby([1, 3, 2, 4, 5], key=lambda v: v % 2)}
    groups = list(itertools.groupby([x, x * 2], key=lambda t: t.dim()))
    stale = [list(g) for _, g in groups]  # the outer iterator moved on: every group is empty
    return sizes, by_parity, stale, [x * len(list(g)) for _, g in itertools.groupby([1, 1, 2])]


@case(X)
def sorted_items_compare_constant_keys_only(x):
    d = {"b": x, "a": x + 1, "c": x * 2}
    return [v for _, v in sorted(d.items())], [v for _, v in sorted(d.items(), reverse=True)]


@case(X)
def type_of_a_number_builds_one(x):
    return x * type(x.shape[0])(3.0) + type(1.5)("2")


@case(X, Box())
def operator_itemgetter_and_attrgetter(x, box):
    rows = sorted([(2, "b"), (1, "a")], key=operator.itemgetter(0))
    first_and_last = operator.itemgetter(0, -1)([x, 1, x * 2])
    return rows, first_and_last, operator.attrgetter("scale")(box) * x, operator.attrgetter("shape")(x)


class Scales(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([nn.Parameter(torch.randn(5)) for _ in range(3)])

    def forward(self, x):
        for scale in self.scales:
            x = x * scale
        return x + self.scales[-1] + len(self.scales)


@case(seeded(Scales), X)
def module_parameter_list(model, x):
    return model(x)


def add_one_to_the_input(module, args):
    return (args[0] + 1,)


def triple_the_input(module, args):
    return args[0] * 3  # not a tuple: the single argument


def double_the_output(module, args, output):
    return output * 2


def observe_only(module, args, output):
    return None


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 5)
        self.lin.register_forward_pre_hook(add_one_to_the_input)
        self.lin.register_forward_pre_hook(triple_the_input)
        self.lin.register_forward_hook(double_the_output)
        self.lin.register_forward_hook(observe_only)

    def forward(self, x):
        return self.lin(x)


@case(seeded(Hooked), X)
def module_forward_hooks(model, x):
    return model(x)


@case(X)
def zip_and_enumerate_pull_items_lazily(x):
    numbers = iter([1, 2, 3, 4])
    pairs = list(zip(numbers, numbers))  # consecutive items
    rows, out = [x, x], []
    for i, row in enumerate(rows):
        if i == 0:
            rows.append(row + 1)  # seen by the loop, as in CPython
        out.append(row * i)
    rest = iter([5, 6, 7])
    first = list(zip(rest, [0]))  # pulls 5 and 6, keeps (5, 0): 6 is lost
    return pairs, out, first, list(rest), list(enumerate("ab", 1))


@case(X)
def generators_and_map_run_when_items_are_asked_for(x):
    log = []

    def numbered():
        log.append("first")
        yield x
        log.append("second")  # not reached: only one item is taken
        yield x * 2

    first = next(numbered())
    mapped = map(lambda v: log.append(v) or x * v, [1, 2, 3])
    second = next(mapped)  # map calls its function for one item only

    def counting():  # endless: fine, since only three items are taken
        i = 0
        while True:
            yield x * i
            i += 1

    return first, second, list(log), [v for v, _ in zip(counting(), range(3))]


@case(X, Y)
def tensor_data_and_grad_fn(x, w):
    doubled = x.data * 2
    w.data.mul_(2)  # in place on the input, through .data
    return doubled, (x * 3).grad_fn is None, w.data.sum() + x


def apply_to_tensors(obj, fn):
    """A pytree map as libraries write it: ``type(obj)(...)`` rebuilds the container."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(apply_to_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return type(obj)({k: apply_to_tensors(v, fn) for k, v in obj.items()})
    return obj


@case(X)
def type_of_a_builtin_container_builds_one(x):
    doubled = apply_to_tensors({"a": [x, (x + 1, 3)], "b": "s"}, lambda t: t * 2)
    return doubled, type([x]).__name__, type(collections.OrderedDict(a=x))(b=2)


@dataclasses.dataclass
class Settings:
    weight: torch.Tensor
    repeats: int = 3


@case(X)
def dataclasses_replace_and_fields(x):
    base = Settings(x, 2)
    more = dataclasses.replace(base, repeats=5)
    return more.weight * more.repeats - base.weight * base.repeats, [f.name for f in dataclasses.fields(Settings)]


class RemappedConfig:
    """A config as transformers writes them: names remapped on read and on write."""
    attribute_map = {"hidden_size": "d_model"}

    def __init__(self):
        self.d_model = 4
        self.layer_types = ["full", "sliding"]
        self.extra = {"window": (2, [3])}

    def __setattr__(self, key, value):
        if key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        super().__setattr__(key, value)

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


REMAPPED = RemappedConfig()


@case(X)
def deepcopy_of_a_config_from_outside(x):
    config = copy.deepcopy(REMAPPED)  # copy's own code, traced (object.__reduce_ex__, a memo keyed by id)
    config.hidden_size = 8
    config.layer_types.append("full")
    config.extra["window"][1].append(5)
    delattr(config, "extra")
    return x * config.hidden_size + REMAPPED.hidden_size, config, len(REMAPPED.layer_types), hasattr(config, "extra")


@case(X)
def shallow_copy_shares_what_the_object_holds(x):
    config = copy.copy(REMAPPED)
    config.d_model = 2
    return x * config.d_model, config.layer_types is REMAPPED.layer_types, config


@case(X)
def deepcopy_of_containers_made_in_the_frame(x):
    shared = [1, 2]
    spec = {"a": shared, "b": (shared, 3), "c": [x.shape[0]]}
    copied = copy.deepcopy(spec)
    copied["a"].append(7)
    return x * len(copied["b"][0]) + copied["c"][0], copied, spec


@dataclasses.dataclass
class Prediction:
    logits: torch.Tensor
    steps: int = 3


@case(X, dynamo=False)  # torch._dynamo breaks twice here (3 graphs)
def dataclass_helpers_copy_tensor_fields(x):
    """dataclasses.asdict and astuple deep-copy each field: a tensor's __deepcopy__ is a clone
    (it crashed the graph with the memo dict as an argument)."""
    prediction = Prediction(x * 2)
    fields = dataclasses.asdict(prediction)
    replaced = dataclasses.replace(prediction, steps=5)
    return fields["logits"] + 1, dataclasses.astuple(replaced)[1] * x, copy.deepcopy(x * 3)


@case(X)
def as_subclass_of_tensor_is_an_alias(x):
    y = x.as_subclass(torch.Tensor)  # an internal error while tracing
    return y * 2, y.shape[0]


@case(X)
def namedtuple_replace_make_and_asdict(x):
    """_make and _replace build their result with tuple.__new__ (a bound builtin: a break)."""
    point = PointTuple(x, 1)
    moved = point._replace(y=2)
    return moved, PointTuple._make([x * 2, 3]), moved._asdict()["y"] * x, point._fields


@case(X)
def namedtuple_class_made_in_the_frame(x):
    Pair = collections.namedtuple("Pair", "first second", defaults=[4])  # its code runs exec: made while tracing
    pair = Pair(x)
    return pair.first * pair.second, tuple(pair), type(pair).__name__


@case(X)
def pytree_tree_map_over_nested_containers(x):
    """torch.utils._pytree's tree functions were a break each (a function passed to torch)."""
    tree = {"a": x, "b": [x * 2, (x + 1, None)], "c": PointTuple(x, 3)}
    doubled = torch.utils._pytree.tree_map(lambda t: t * 2 if isinstance(t, torch.Tensor) else t, tree)
    summed = torch.utils._pytree.tree_map(lambda a, b: a + b, [x, (x, 1)], [x * 3, (x, 2)])
    negated = torch.utils._pytree.tree_map(torch.neg, torch.max(x, 1))  # a torch.return_types tuple
    return doubled, summed, len(torch.utils._pytree.tree_leaves(tree)), negated


@case(X)
def pytree_flatten_and_unflatten(x):
    leaves, spec = torch.utils._pytree.tree_flatten({"a": [x, x + 1], "b": (x * 2,), "n": None})
    rebuilt = torch.utils._pytree.tree_unflatten([leaf * 2 if leaf is not None else None for leaf in leaves], spec)
    return rebuilt, spec.num_leaves, spec


ATOMIC_TYPES = frozenset({int, float, str, type(None)})  # as dataclasses keeps one on 3.12


@case(X)
def membership_in_a_global_frozenset_of_classes(x):
    return x * (type(x) in ATOMIC_TYPES) + (type(2) in ATOMIC_TYPES) + len(ATOMIC_TYPES)


@case(X)
def in_place_operators_keep_the_container(x):
    """``a += [2]`` on a list of constants was folded into a new list, so ``b = a`` kept the old
    one (a silent wrong answer); the same for ``*=`` on lists, ``|=`` on dicts and sets."""
    items = [1]
    alias = items
    items += [2]
    items *= 2
    items += (3,)
    config = {"k": 1}
    same_config = config
    config |= {"j": 2}
    seen = {1, 2}
    same_seen = seen
    seen |= {3}
    seen -= {1}
    frozen = frozenset({1})
    old_frozen = frozen
    frozen |= {2}  # a new frozenset: old_frozen is unchanged
    return x * len(alias) + sum(alias), same_config, sorted(same_seen), len(old_frozen), len(frozen)


class Backend:
    pass


class TorchBackend(Backend):
    pass


@case(X)
def methods_taken_from_builtin_classes(x):
    """What einops' pattern parser calls: unbound methods of builtin classes, a frozenset's bound
    __contains__ (keyword.iskeyword), and a class's __subclasses__ (how it finds its backends)."""
    names = ["b", "h", "d"]
    valid = all(map(str.isidentifier, names)) and not any(keyword.iskeyword(n) for n in names)
    difference = set.symmetric_difference({"b", "h"}, {"h", "d"})
    backends = [cls.__name__ for cls in Backend.__subclasses__()]
    return x * valid + len(difference), sorted(difference), backends, dict.get({"a": 1}, "a")


@case(X, dynamo=False)  # torch._dynamo records _enter/_exit_inference_mode nodes, tinydynamo grad switches
def inference_mode_inside_the_frame(x):
    """Traced as no_grad (the values are the same; the graph's results are not inference
    tensors, as with torch.compile's inductor). It ran the whole frame eagerly."""
    with torch.inference_mode():
        y = x * 2

    @torch.inference_mode()
    def tripled(t):
        return t * 3

    return y + 1, tripled(x)


@case(X)
def nested_function_with_annotations(x):
    def scaled(t: torch.Tensor, names: list[str], scale: typing.Optional[float] = None,
               hook: typing.Callable[[int], int] | None = None) -> dict[str, torch.Tensor]:
        return {name: t * (scale or 1.0) for name in names}  # the annotations are evaluated, then unused

    return scaled(x, ["a", "b"], 2.0)["b"], scaled.__annotations__["names"]


class LayeredCache:
    def __init__(self, layers):
        self.layers = layers

    def __len__(self):
        return len(self.layers)


class Switch:
    def __init__(self, on):
        self.on = on

    def __bool__(self):
        return self.on


@case(X, LayeredCache([1]), LayeredCache([]), Switch(False))
def truth_of_objects_with_len_and_bool(x, full, empty, switch):
    """transformers' ``if past_key_values:`` on a Cache, which defines __len__."""
    y = x * 2
    if full:
        y = y + 1
    if empty or switch:
        y = y - 3
    return y, bool(full), not switch


@case(X, dynamo=False)  # torch._dynamo records torch.Tensor([...]) as it is; ours is torch.tensor
def python_types_as_dtypes(x):
    """``torch.tensor([-1], dtype=int)`` (transformers' sliding-window cache): torch reads int as int64."""
    index = torch.tensor([-1], dtype=int, device=x.device)
    return x.reshape(-1)[index] + torch.zeros(3, dtype=float).sum(), x.to(bool), torch.ones(2, dtype=bool), \
        torch.Tensor([1e10, 2])  # a legacy constructor (NeRF): the default dtype


@case(T(2, 8, 8), dynamo=False)  # torch._dynamo runs np.clip of the sizes as a NumPy op on tensors
def numpy_integers_as_slice_bounds(x):
    """CutMix's ``rand_bbox``: np.clip of sizes gives NumPy integers, which bound the slices."""
    width = x.size(2)
    low, high = np.clip(width // 2 - 2, 0, width), np.clip(width // 2 + 2, 0, width)
    y = x.clone()
    y[:, low:high] = 0
    return y, x[:, low:high].sum()


def boxes_area(boxes):
    """An assert on a tensor (DETR's generalized_box_iou); outside the test modules, whose asserts
    pytest rewrites."""
    assert (boxes[:, 2:] >= boxes[:, :2]).all(), "degenerate boxes"
    return (boxes[:, 2:] - boxes[:, :2]).prod(-1)


OPTIONAL_INT = int | None


@case(X)
def classes_read_from_a_type_hint(x):
    """huggingface_hub's strict dataclasses validate each field this way (transformers' configs)."""
    allowed = typing.get_args(OPTIONAL_INT)
    return x * 2 if any(isinstance(3, t) for t in allowed) else x, [t.__name__ for t in allowed]


@case(T(2, 6, 3), T(2, 6, 3), dynamo=False)  # torch._dynamo keeps one associative_scan node; ours is unrolled
def associative_scan_of_a_linear_recurrence(a, b):
    """Mamba's selective scan as transformers writes it when a compiler traces it."""
    from torch._higher_order_ops.associative_scan import associative_scan

    def combine(left, right):
        return left[0] * right[0], right[0] * left[1] + right[1]

    _, forward = associative_scan(combine, (a.sigmoid(), b), dim=1, combine_mode="generic")
    backward = associative_scan(lambda x, y: x + y, b, dim=1, reverse=True, combine_mode="generic")
    return forward, backward


@typing.runtime_checkable
class Scales(typing.Protocol):
    def scale(self) -> float: ...


class Doubling:
    def scale(self):
        return 2.0


DOUBLING = Doubling()


@case(X)
def protocol_class_stays_a_class(x):
    return x * DOUBLING.scale() if isinstance(DOUBLING, Scales) else x, Scales.__name__
