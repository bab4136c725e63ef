"""Every prim, compiled to C++ (or run as an extern kernel), against the prim's eager impl."""
import pytest
import torch

from inductor_helpers import assert_same, check_prims, check_torch, prim_graph
from tinydynamo import prims
from tinydynamo.inductor import compile_fx_inner
from tinydynamo.inductor.lowering import EXTERN_PRIMS, lowerings

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I64, I32, I8, U8, BOOL = torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool
FLOATS = [F32, F64, BF16, F16]
NUMBERS = [F32, F64, BF16, I64, I32, I8, U8]
INTEGRALS = [BOOL, I64, I32, U8]
ANY = [F32, F64, BF16, I64, I32, BOOL]


def sample(dtype, shape=(3, 7), low=-3, high=3, seed=0, specials=True):
    """Random values of dtype; floats also get nan, inf, -inf, 0 and -0 in the first row."""
    g = torch.Generator().manual_seed(seed)
    if dtype == BOOL:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        low = max(low, 0) if dtype == U8 else low
        return torch.randint(low, high + 1, shape, generator=g).to(dtype)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low
    if specials and x.numel() >= 5:
        x.view(-1)[:5] = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, -0.0])
    return x.to(dtype)


def test_every_prim_is_lowered_or_an_explicit_extern():
    assert set(prims.PRIMS) == set(lowerings) | set(EXTERN_PRIMS)
    assert not set(lowerings) & set(EXTERN_PRIMS)


UNARY = {**{n: FLOATS for n in ("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos",
                                "tanh", "erf", "reciprocal")},
         **{n: NUMBERS for n in ("abs", "neg", "floor", "ceil", "round", "trunc", "sign")},
         "bitwise_not": INTEGRALS}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_prim(name):
    prim = prims.PRIMS[name]
    check_prims(lambda *xs: tuple(prim(x) for x in xs), [sample(d) for d in UNARY[name]])


BINARY = {**{n: ANY for n in ("add", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge")},
          **{n: [F32, F64, BF16, I64, I32, I8] for n in ("sub", "div", "fmod", "pow")},
          **{n: INTEGRALS for n in ("bitwise_and", "bitwise_or", "bitwise_xor")}}
SCALARS = {F32: 2.5, F64: -1.25, BF16: 0.5, I64: 3, I32: -2, I8: 2, U8: 3, BOOL: True}


def _binary_inputs(name, dtype):
    if name in ("div", "fmod") and not dtype.is_floating_point:  # no integer division by zero
        signs = torch.where(sample(BOOL, seed=3), -1, 1).to(dtype)
        return sample(dtype, seed=1), sample(dtype, low=1, high=4, seed=2) * signs
    if name == "pow" and not dtype.is_floating_point:
        return sample(dtype, low=-3, high=3, seed=1), sample(dtype, low=0, high=3, seed=2)
    if name == "pow":  # prims.pow(-inf, 0.5) is inf, torch.pow's is nan: test_pow_like_torch
        return sample(dtype, seed=1, specials=False), sample(dtype, seed=2)
    return sample(dtype, seed=1), sample(dtype, seed=2)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_prim(name):
    prim = prims.PRIMS[name]
    dtypes = BINARY[name]
    inputs = [x for d in dtypes for x in _binary_inputs(name, d)]
    scalar_ok = name not in ("div", "fmod")  # a scalar divisor may be 0 for some element

    def fn(*xs):
        outs = []
        for i, d in enumerate(dtypes):
            a, b = xs[2 * i], xs[2 * i + 1]
            outs.append(prim(a, b))
            if scalar_ok and not (name == "pow" and not d.is_floating_point):
                outs += [prim(a, SCALARS[d]), prim(SCALARS[d], b)]
        return tuple(outs)

    check_prims(fn, inputs)


@pytest.mark.parametrize("exponent", [0.5, -0.5, -1.0, 2.0, 3.0, -2.0, 1.7])
def test_pow_like_torch(exponent):
    x = sample(F32, specials=True)
    check_torch(lambda x: torch.pow(x, exponent), [x])


def test_integer_pow_with_negative_exponents():
    base = torch.tensor([2, -1, 1, 3, 0, -1], dtype=I64)
    exponent = torch.tensor([-1, -3, -2, 2, 5, 4], dtype=I64)
    check_prims(prims.pow, [base, exponent])


@pytest.mark.parametrize("dtype", [I64, I32])
def test_integer_division_by_zero_raises(dtype):
    a, b = torch.tensor([5, 7], dtype=dtype), torch.tensor([1, 0], dtype=dtype)
    compiled = compile_fx_inner(prim_graph(prims.div, [a, b]), [a, b])
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):  # eager's error
        compiled(a, b)
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        prims.div(a, b)


def test_integer_division_rounds_toward_zero():
    a = torch.tensor([7, -7, 7, -7, 6], dtype=I64)
    b = torch.tensor([2, 2, -2, -2, -1], dtype=I64)
    check_prims(lambda a, b: (prims.div(a, b), prims.fmod(a, b)), [a, b])


def test_most_negative_integer_divided_by_minus_one_wraps_instead_of_crashing():
    # eager torch dies of SIGFPE here; the kernel wraps, as two's complement arithmetic does
    a, b = torch.tensor([-2 ** 63, 5]), torch.tensor([-1, -1])
    compiled = compile_fx_inner(prim_graph(lambda a, b: (prims.div(a, b), prims.fmod(a, b)), [a, b]), [a, b])
    quotient, remainder = compiled(a, b)
    assert quotient.tolist() == [(2 ** 63 + 2 ** 63) % 2 ** 64 - 2 ** 63, -5]
    assert remainder.tolist() == [0, 0]


@pytest.mark.parametrize("dtype", [F32, I64, BOOL, BF16])
def test_where(dtype):
    pred, a, b = sample(BOOL, seed=4), sample(dtype, seed=5), sample(dtype, seed=6)
    s = SCALARS[dtype]
    check_prims(lambda p, a, b: (prims.where(p, a, b), prims.where(p, s, b), prims.where(p, a, s)),
                [pred, a, b])


CONVERSIONS = [(F32, I64), (F32, BOOL), (I64, F32), (BOOL, F32), (F32, BF16), (BF16, F32),
               (F64, F32), (F16, F64), (F32, F16), (I32, I8), (BOOL, I64), (I64, BOOL), (F32, F32)]


@pytest.mark.parametrize("source,target", CONVERSIONS, ids=lambda d: str(d).replace("torch.", ""))
def test_convert_element_type(source, target):
    x = sample(source, specials=target.is_floating_point or target == BOOL)
    check_prims(lambda x: prims.convert_element_type(x, target), [x])


REDUCTIONS = {"sum": [F32, F64, BF16, I64, I32], "prod": [F32, F64, I64, I32],
              "amax": [F32, F64, BF16, I64, I32, BOOL], "amin": [F32, F64, BF16, I64, I32, BOOL]}
DIMS = [[], [0], [2], [1, 2], [0, 2], [0, 1, 2]]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_prim(name):
    prim = prims.PRIMS[name]
    dtypes = REDUCTIONS[name]
    low, high = (-2, 2) if name == "prod" else (-3, 3)
    inputs = [sample(d, shape=(4, 3, 5), low=low, high=high, specials=False) for d in dtypes]
    inputs[0][1, 1, 1] = float("nan")  # one nan: it must reach the result (amax too)
    check_prims(lambda *xs: tuple(prim(x, dims) for x in xs for dims in DIMS), inputs,
                atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduction_takes_the_first_extreme_and_the_first_nan(name):
    prim = prims.PRIMS[name]
    ties = sample(I64, shape=(4, 6, 5), low=0, high=2)  # many ties: the first one wins
    floats = sample(F32, shape=(4, 6, 5), specials=False)
    floats[2, 3, :] = float("nan")
    floats[1, :, 2] = float("-inf")
    floats[0, 2, 1] = float("nan")
    check_prims(lambda a, b: tuple(prim(x, d) for x in (a, b) for d in range(3)), [ties, floats])


def test_sum_of_many_elements_runs_in_parallel_and_is_accurate():
    x = torch.rand(300_000, dtype=F32) + 0.5
    check_prims(lambda x: prims.sum(x, [0]), [x], rtol=1e-5, atol=0)


def test_reduction_over_an_empty_dimension():
    x = torch.ones(3, 0)
    check_prims(lambda x: (prims.sum(x, [1]), prims.prod(x, [1])), [x])


# --------------------------------------------------------------------------- views


def _view_cases(x):
    """Each view prim, of an input (a new layout) and of a computed value (an index rewrite)."""
    computed = prims.exp(x)
    outs = []
    for base in (x, computed):
        outs += [prims.permute(base, [2, 0, 1]),
                 prims.broadcast_in_dim(prims.slice(base, [0, 0, 0], [4, 1, 5]), [2, 4, 3, 5], [1, 2, 3]),
                 prims.slice(base, [1, 0, 1], [4, 3, 5], [2, 1, 3]),
                 prims.reshape(base, [12, 5]),
                 prims.reshape(prims.permute(base, [1, 0, 2]), [3, 20]),  # a copy, not a view
                 prims.neg(prims.reshape(prims.permute(base, [2, 1, 0]), [60]))]
    return tuple(outs)


def test_view_prims():
    check_prims(_view_cases, [sample(F32, shape=(4, 3, 5), specials=False)])


def test_views_of_an_input_are_returned_as_views_with_eager_strides():
    x = sample(F32, shape=(4, 6), specials=False)
    compiled = check_prims(lambda x: (prims.permute(x, [1, 0]), prims.slice(x, [1, 0], [3, 6])), [x])
    transposed, sliced = compiled(x)
    assert transposed.stride() == (1, 6) and transposed.data_ptr() == x.data_ptr()
    assert sliced.stride() == (6, 1) and sliced.data_ptr() == x[1:].data_ptr()


def test_view_of_a_computed_output_keeps_eager_strides():
    x = sample(F32, shape=(4, 6), specials=False)
    compiled = check_prims(lambda x: prims.permute(prims.exp(x), [1, 0]), [x])
    assert compiled(x).stride() == (1, 6)


# --------------------------------------------------------------------------- creation, random, indexing


@pytest.mark.parametrize("dtype,value", [(F32, 1.5), (I64, -7), (BOOL, True), (BF16, 0.1)])
def test_full(dtype, value):
    check_prims(lambda: prims.full([3, 4], value, dtype=dtype, device="cpu"), [])


def test_iota_and_full_feed_computations():
    x = sample(F32, shape=(5,), specials=False)

    def fn(x):
        i = prims.iota(5, start=3, step=-2, dtype=I64, device="cpu")
        return i, prims.add(x, prims.convert_element_type(i, F32))

    check_prims(fn, [x])


def test_uniform_draws_the_same_numbers_as_eager():
    gm = prim_graph(lambda: prims.uniform([3, 5], -1.0, 2.0, dtype=F32, device="cpu"), [])
    compiled = compile_fx_inner(gm, [])
    torch.manual_seed(123)
    actual = compiled()
    torch.manual_seed(123)
    assert_same(actual, gm())


def test_gather():
    a = sample(F32, shape=(4, 5), specials=False)
    index = torch.tensor([[3, 0, 1, 1, 2], [0, 0, 3, 2, 1]])
    check_prims(lambda a, i: (prims.gather(a, 0, i), prims.gather(a, 1, prims.slice(i, [0, 0], [2, 3]))),
                [a, index])


def test_gather_with_an_index_out_of_bounds_raises():
    a, index = torch.zeros(4, 5), torch.tensor([[4, 0, 0, 0, 0]])
    compiled = compile_fx_inner(prim_graph(lambda a, i: prims.gather(a, 0, i), [a, index]), [a, index])
    with pytest.raises(IndexError):
        compiled(a, index)


def test_scatter_add():
    a, src = sample(F32, shape=(4, 5), specials=False), sample(F32, shape=(3, 5), specials=False)
    index = torch.tensor([[3, 0, 1, 1, 2], [0, 0, 3, 2, 1], [3, 3, 3, 3, 3]])
    check_prims(lambda a, i, s: prims.scatter_add(a, 0, i, s), [a, index, src])


@pytest.mark.parametrize("dtype", [F32, I64, BOOL])
def test_cat(dtype):
    xs = [sample(dtype, shape=(2, 3), seed=1), sample(dtype, shape=(2, 0), seed=2),
          sample(dtype, shape=(2, 4), seed=3)]
    def fn(a, b, c):
        return prims.cat([a, b, c], 1), prims.cat([prims.permute(c, [1, 0]), prims.permute(a, [1, 0])], 0)

    check_prims(fn, xs)


# --------------------------------------------------------------------------- extern kernels


def test_matmul_externs_inside_a_graph():
    a, b = sample(F32, shape=(3, 4), specials=False), sample(F32, shape=(4, 5), specials=False)
    c = sample(F32, shape=(2, 3, 4), specials=False)

    def fn(a, b, c):
        ab = prims.mm(prims.exp(a), b)  # the extern reads a computed buffer
        batched = prims.bmm(c, prims.broadcast_in_dim(b, [2, 4, 5], [1, 2]))
        return prims.add(ab, 1.0), prims.permute(batched, [0, 2, 1])

    check_prims(fn, [a, b, c], atol=1e-5, rtol=1e-5)


def test_convolution_and_its_backward():
    x, w = sample(F32, shape=(2, 3, 6, 6), specials=False), sample(F32, shape=(4, 3, 3, 3), specials=False)
    bias = sample(F32, shape=(4,), specials=False)

    def fn(x, w, bias):
        y = prims.convolution(x, w, bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        grad_x, grad_w = prims.convolution_backward(prims.tanh(y), x, w, [1, 1], [1, 1], [1, 1], False,
                                                    [0, 0], 1, [True, True])
        return y, grad_x, grad_w

    check_prims(fn, [x, w, bias], atol=1e-4, rtol=1e-4)


def test_aten_extern_fallbacks_fused_attention_and_its_backward():
    q, k, v = (sample(F32, shape=(2, 3, 8, 16), seed=s, specials=False) for s in (1, 2, 3))

    def fn(q, k, v):
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return (out * 2, *torch.autograd.grad((out * out).sum(), (q, k, v)))

    assert prims.EXTERN_FALLBACKS  # the aten ops decompose() leaves as they are
    check_torch(fn, [q, k, v], atol=1e-4, rtol=1e-4)
