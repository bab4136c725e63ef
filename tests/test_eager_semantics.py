"""Eager's semantics, op by op, through the default pipeline (dynamo → aot → prims → inductor).

Each case is a tiny function that a new user wrote and that once came back different from eager:
a wrong dtype, a wrong NaN, a layout ``.view`` rejects, a lost ``requires_grad``, or an error
where eager works. The compiled function must give eager's outputs (values, dtype, shape,
strides, requires_grad), leave its inputs as eager does, give eager's gradients, and raise where
eager raises. Where tinydynamo cannot match eager it must fall back (a graph break or an extern
kernel), never compute something else.
"""
import contextlib
import warnings

import pytest
import torch

import tinydynamo

pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
FLOAT_TOLERANCE = dict(rtol=1e-5, atol=1e-6)


def _tensors(value):
    """The tensors of a (nested) output, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _others(value):
    """Everything else that a (nested) output holds, in order: sizes, strides, flags."""
    if isinstance(value, (tuple, list)):
        return [o for v in value for o in _others(v)]
    return [] if isinstance(value, torch.Tensor) else [value]


def _strides(t):
    """Strides that matter: a dim of size 1 can have any stride."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def assert_like_eager_tensor(actual, expected, what):
    assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape), \
        f"{what}: {actual.dtype}{list(actual.shape)}, eager {expected.dtype}{list(expected.shape)}"
    assert actual.requires_grad == expected.requires_grad, f"{what}: requires_grad {actual.requires_grad}"
    torch.testing.assert_close(actual, expected, equal_nan=True, **FLOAT_TOLERANCE, msg=lambda m: f"{what}: {m}")
    assert _strides(actual) == _strides(expected), f"{what}: strides {actual.stride()}, eager {expected.stride()}"


def _run(fn, inputs, context):
    """(outputs, None) or (None, the exception); gradients of the inputs land in their .grad."""
    try:
        with context():
            out = fn(*inputs)
    except Exception as error:
        return None, error
    differentiable = [t for t in _tensors(out) if t.requires_grad and t.is_floating_point()]
    if differentiable:
        sum(t.sum() for t in differentiable).backward()
    return out, None


def assert_like_eager(fn, make_inputs, context=contextlib.nullcontext, falls_back=False):
    """Run fn eagerly and compiled (default inductor backend) on fresh inputs and compare.
    Unless eager raises, the frame must be compiled, or, if ``falls_back``, run eagerly."""
    tinydynamo.reset()
    torch.manual_seed(0)
    expected_inputs = make_inputs()
    torch.manual_seed(0)
    inputs = make_inputs()
    expected, expected_error = _run(fn, expected_inputs, context)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        actual, error = _run(tinydynamo.compile(fn), inputs, context)
    fallbacks = [str(w.message) for w in caught if "runs eagerly" in str(w.message)]
    if expected_error is None:
        assert bool(fallbacks) == falls_back, f"the whole frame ran eagerly: {fallbacks}" if fallbacks else "compiled"
    if expected_error is not None:
        assert error is not None, f"eager raised {expected_error!r}; compiled returned {actual}"
        return
    assert error is None, f"eager returned {expected}; compiled raised {error!r}"
    assert len(_tensors(actual)) == len(_tensors(expected))
    assert _others(actual) == _others(expected), f"outputs other than tensors: {_others(actual)}, eager {_others(expected)}"
    for i, (a, e) in enumerate(zip(_tensors(actual), _tensors(expected))):
        assert_like_eager_tensor(a, e, f"output {i}")
    for i, (a, e) in enumerate(zip(_tensors(inputs), _tensors(expected_inputs))):
        assert_like_eager_tensor(a.detach(), e.detach(), f"input {i} after the call")
        assert (a.grad is None) == (e.grad is None), f"input {i}: grad {a.grad}, eager {e.grad}"
        if e.grad is not None:
            assert_like_eager_tensor(a.grad, e.grad, f"grad of input {i}")


def randn(*shape, dtype=torch.float32, requires_grad=False):
    return lambda: torch.randn(shape, dtype=dtype, requires_grad=requires_grad)


def channels_last(*shape, requires_grad=False):
    return lambda: torch.randn(shape).to(memory_format=torch.channels_last).requires_grad_(requires_grad)


def inputs(*makers):
    return lambda: tuple(make() for make in makers)


CASES = {}


def case(make_inputs, context=contextlib.nullcontext, falls_back=False):
    def register(fn):
        CASES[fn.__name__] = (fn, make_inputs, context, falls_back)
        return fn
    return register


# --------------------------------------------------------------------------- type promotion

@case(inputs(randn(3), randn(3, dtype=torch.float64)))
def in_place_op_keeps_self_dtype(x, y):
    t = x * 2
    t.add_(y)  # a float64 operand, a float32 self: the result stays float32
    return t + 1


@case(inputs(randn(2, 3), randn(3, dtype=torch.float64), randn(dtype=torch.float64)))
def other_in_place_ops_keep_self_dtype(x, y, z):
    t, u, v = x * 1, x * 2, x * 3
    t.mul_(y)
    u.sub_(z).div_(y)
    v.clamp_(min=-0.5).addcmul_(y, y)
    return t, u, v


@case(inputs(lambda: torch.tensor(1.5, dtype=torch.bfloat16), lambda: torch.tensor(2.0, dtype=torch.float16)))
def in_place_mul_of_0d_bfloat16_by_0d_float16(x, y):
    t = x * 1
    t.mul_(y)
    return t


@case(inputs(lambda: torch.randint(-5, 5, (4,)), randn(4)))
def in_place_op_on_an_input_keeps_its_dtype(i, x):
    x.add_(i)
    return x * 2


@case(inputs(lambda: torch.zeros(0, dtype=torch.bool), lambda: torch.zeros(0)))
def cat_of_empty_bool_and_empty_float(a, b):
    return torch.cat([a, b])


@case(inputs(lambda: torch.zeros(0, 3, dtype=torch.int64), randn(2, 3, dtype=torch.bfloat16),
             lambda: torch.ones(2, 3, dtype=torch.int32)))
def cat_promotes_over_every_input(a, b, c):
    return torch.cat([a, b]), torch.cat([a, c]), torch.stack([b, c])


# --------------------------------------------------------------------------- NaN and Inf

@case(inputs(randn(3, 1), randn(1, 1, dtype=torch.float64), randn(4, 1, 5, dtype=torch.bfloat16)))
def variance_over_a_size_1_dim_is_nan(x, y, z):
    return x.var(1), x.std(1, keepdim=True), torch.var_mean(y, 0), z.var(1), x.var(1, correction=0)


@case(inputs(randn(0, 3), randn(2, 0)))
def variance_and_mean_over_a_0_size_dim(x, y):
    return x.var(0), x.mean(0), y.std(1), torch.var_mean(x, 0, correction=0)


@case(inputs(randn(1, 4), randn(1, 33, dtype=torch.float64)))
def zero_over_zero_is_nan(y, z):
    return (y - y.sum(0)) / 0, (z - z.mean(0)) / 0, torch.zeros_like(y) / torch.zeros_like(y), y / 0


@case(inputs(randn(3, 1), randn(1, 1, 40), randn(2, 1, dtype=torch.bfloat16)))
def log_softmax_over_a_size_1_dim_is_0(x, y, z):
    return torch.log_softmax(x, 1), torch.log_softmax(y, 1), torch.softmax(y, 1), torch.log_softmax(z, 1)


@case(inputs(randn(3, 1, requires_grad=True)))
def log_softmax_over_a_size_1_dim_and_its_gradient(x):
    return torch.log_softmax(x * 2, 1)


@case(inputs(lambda: torch.tensor([[float("nan"), 1.0, float("inf")], [-float("inf"), 0.0, -0.0]])))
def nan_and_inf_propagate(x):
    return (x.amax(1), x.amin(0), x.sum(1), torch.maximum(x, x.flip(0)), torch.clamp(x, -1, 1),
            torch.relu(x), x.max(1).values, torch.exp(x), x * 0, torch.where(x > 0, x, -x))


@case(inputs(lambda: torch.tensor([-90.0, -100.0, -103.9, -104.5, -80.0, -float("inf"), float("nan")] * 5),
             lambda: torch.tensor([-720.0, -740.0, -746.0, -float("inf")], dtype=torch.float64)))
def exp_with_a_subnormal_result_is_not_flushed_to_zero(x, y):
    """Found by reading the C++ prelude: exp flushed results below float's smallest normal
    number to 0, so log(exp(-90)) was -inf (eager: -90)."""
    return torch.log(torch.exp(x)), torch.exp(x) > 0, torch.exp(y) > 0, torch.log(torch.exp(y))


# --------------------------------------------------------------------------- autograd state

@case(inputs(randn(3), randn(3)))
def requires_grad_on_an_input(x, w):
    w.requires_grad_(True)
    return x * w


@case(inputs(randn(3)))
def requires_grad_on_a_detached_input(x):
    y = x.detach().requires_grad_(True)
    return y * 2


@case(inputs(randn(3, requires_grad=True)))
def requires_grad_on_an_intermediate(x):
    y = (x * 3).detach()
    y.requires_grad_()
    return y.sin(), x.cos()


@case(inputs(randn(3, requires_grad=True)), context=torch.no_grad)
def enable_grad_under_an_outer_no_grad(x):
    with torch.enable_grad():
        y = x * 2
    return y, x * 3


@case(inputs(randn(3, requires_grad=True)), context=torch.no_grad)
def set_grad_enabled_under_an_outer_no_grad(x):
    torch.set_grad_enabled(True)
    y = x.exp()
    torch.set_grad_enabled(False)
    return y


@case(inputs(randn(3, requires_grad=True)))
def autograd_grad_inside_the_function(x):
    y = (x * x).sum()
    grad, = torch.autograd.grad(y, x)
    return grad * 2


@case(inputs(randn(3)))
def autograd_grad_of_a_detached_input(x):
    x = x.detach().requires_grad_()
    grad, = torch.autograd.grad((x.sin()).sum(), x)
    return grad


@case(inputs(randn(3, requires_grad=True)), context=torch.no_grad)
def autograd_grad_under_an_outer_no_grad_raises(x):
    return torch.autograd.grad((x * x).sum(), x)


# --------------------------------------------------------------------------- integers and bools

def randint(*shape, dtype=torch.int64):
    return lambda: torch.randint(-9, 10, shape, dtype=dtype)


def randbool(*shape):
    return lambda: torch.rand(shape) > 0.5


@case(inputs(randint(3, 4), randint(4, 5), randint(2, 3, 4, dtype=torch.int32), randint(2, 4, 2, dtype=torch.int32)))
def integer_matmuls(a, b, c, d):
    return a @ b, torch.bmm(c, d), torch.mm(a, b) + 1, c @ d[0]


@case(inputs(randn(4), randn(4, 3, requires_grad=True), randint(4), randint(4, 2)))
def matmul_of_a_vector_squeezes_its_result_in_place(v, w, i, m):
    """torch.matmul of a vector calls squeeze_ on the mm's result: a view of it, not a fallback."""
    return v @ w, torch.matmul(i, m), w.t() @ v


@case(inputs(randn(2, 3, requires_grad=True)))
def in_place_view_ops_on_intermediates(x):
    y, z = x * 2, x + 1
    y.unsqueeze_(0).t_()
    y.add_(1)
    z.squeeze_().transpose_(0, 1)
    return y, z


@case(inputs(randn(1, 3)), falls_back=True)
def in_place_view_op_on_an_input_falls_back(x):
    x.squeeze_(0)
    return x * 2


@case(inputs(randn(1, 3)), falls_back=True)
def in_place_view_op_on_a_tensor_with_views_falls_back(x):
    y = x * 2
    row = y[0]
    y.unsqueeze_(0)
    y.add_(1)  # row sees it in eager
    return y, row


@case(inputs(randbool(3, 4), randbool(4, 2)))
def bool_matmul(a, b):
    return a.int() @ b.int(), torch.addmm(torch.ones(3, 2, dtype=torch.int64), a.long(), b.long())


@case(inputs(randint(3, 70), randint(5, 1, 9, dtype=torch.int32), randint(40, 3, dtype=torch.int16)))
def integer_max_and_min_reductions(a, b, c):
    return a.amax(1), a.amin(0), b.amax((0, 2)), c.amin(0), a.max(1).values, c.max(), b.min(), a.argmax(1)


@case(inputs(randbool(3, 33), randint(3, 33)))
def bool_reductions(a, i):
    return a.amax(1), a.amin(0), a.sum(1), a.any(1), a.all(0), i.sum(1), i.prod(0), a.max()


@case(inputs(randn(), randn(2, 7, dtype=torch.float64, requires_grad=True)))
def sign_of_a_bool(s, x):
    """Found by the random checker: prims.sign refused the bool that eager's sign returns as is."""
    y = torch.maximum(x, s)
    return torch.sign(y.any(0)), torch.sgn(y > 0), y.mean()


@case(inputs(randbool(3, 5)))
def unary_ops_of_bools(a):
    return torch.exp(a), torch.reciprocal(a), torch.square(a), ~a, torch.sigmoid(a), a.float().sign()


@case(inputs(randbool(4), randbool(4), randint(4)))
def add_of_bools_with_alpha(a, b, i):
    return torch.add(a, b, alpha=2), torch.add(a, b), a.sub(i, alpha=3), torch.add(i, a, alpha=2)


@case(inputs(randn(3), randint(3)))
def copy_of_a_python_number(x, i):
    y, j = x * 2, i * 2
    y.copy_(1.5)
    j.copy_(True)
    return y, j, x.fill_(2)


@case(inputs(randint(2, 3), randint(2, 3, dtype=torch.int32), randbool(2, 3)))
def integer_division_and_comparisons(a, b, m):
    return (a / b, a // 3, b % 4, a.div(b, rounding_mode="floor"), a.div(2, rounding_mode="trunc"), a > b, a == 2.5,
            m & (a > 0), a * 2.5, b * True, m + m, m * 3, ~m)


# --------------------------------------------------------------------------- empty tensors

@case(inputs(randn(0, 3), randint(3, 0)))
def reductions_over_a_0_size_dim(x, i):
    return x.sum(0), x.mean(0), x.prod(0), i.sum(1), x.sum(), x.mean(), x.amax(1), i.amin(0), x.any(0), x.all(0)


@case(inputs(lambda: torch.randint(-4, 5, (1, 0)).expand(2, 0), randn(2, 2, 0, dtype=torch.float64)))
def reductions_down_columns_of_no_columns(i, x):
    """Found by the random checker: a column reduction tiled its 0 columns (ZeroDivisionError)."""
    return i.prod(0), x.var(0), x.sum(1)


@case(inputs(randn(0, 3)))
def amax_over_an_empty_dim_raises(x):
    return x.amax(0)


@case(inputs(randn(0, 3), randn(2, 3)))
def pointwise_and_cat_on_empty_tensors(x, y):
    return x * 2, torch.cat([x, y]), torch.softmax(x, 1), (x @ y.t()).shape, x.t() @ x


# --------------------------------------------------------------------------- layouts

@case(inputs(randn(3, 4)))
def a_transposed_result_keeps_eager_strides(x):
    return x.t() * 2


@case(inputs(randn(3, 4)))
def a_result_mutated_through_its_transpose_keeps_eager_strides(x):
    y = x.clone()
    flat = y.view(-1)  # a view of it is an output too: replayed on it, which needs its strides
    y.t().mul_(2)
    return y, flat


@case(inputs(randn(3, 4, 5), randn(4, 3)))
def results_keep_eager_strides(x, y):
    return x.permute(2, 0, 1).exp(), x.transpose(0, 1) + 1, y.t() + x[:, :, 0], x[:, ::2].sin()


@case(inputs(channels_last(16, 3, 64, 64), channels_last(32, 3, 3, 3), randn(32)))
def a_channels_last_convolution_keeps_eager_strides(x, w, b):
    """oneDNN, which aten uses for convolutions this large, gives a channels-last result for
    channels-last inputs: the trace records that."""
    return torch.relu(torch.nn.functional.conv2d(x, w, b, padding=1)) * 2


@case(inputs(channels_last(16, 3, 64, 64, requires_grad=True), channels_last(32, 3, 3, 3, requires_grad=True),
             randn(32, requires_grad=True)))
def a_channels_last_convolution_and_its_gradients_keep_eager_strides(x, w, b):
    return torch.relu(torch.nn.functional.conv2d(x, w, b, padding=1)) * 2


@case(inputs(channels_last(2, 3, 5, 6), randn(4, 3, 3, 3), randn(2, 4, 5, 6),
             lambda: torch.randn(4, 1, 3, 3).to(memory_format=torch.channels_last)))
def a_convolutions_layout_is_eagers_inside_the_frame_too(x, w, y, depthwise):
    """Dynamo's meta kernels return contiguous results: the frame read another stride() than
    eager, and a view that only channels-last allows failed to trace. A weight of one channel
    per group is contiguous and channels-last at once; its strides say channels-last."""
    out = torch.nn.functional.conv2d(x, w, padding=1)
    grouped = torch.nn.functional.conv2d(y, depthwise, padding=1, groups=4)
    flat = out.permute(0, 2, 3, 1).view(2, 30, 4)
    return flat * 2, out.stride(), out.is_contiguous(memory_format=torch.channels_last), grouped.stride(), \
        torch.nn.functional.conv_transpose2d(x, w.transpose(0, 1)).stride()


@case(inputs(randn(1, 3)))
def a_write_through_an_expanded_input_raises(x):
    x.expand(4, 3).add_(1)
    return x


@case(inputs(lambda: torch.randn(1, 3).expand(4, 3)))
def a_write_to_an_expanded_input_raises(x):
    x.mul_(2)
    return x


@case(inputs(lambda: torch.randn(1, 2, 5).expand(3, 2, 5)), falls_back=True)
def a_write_to_a_row_of_an_expanded_input_writes_every_row(x):
    """Found by the random checker: eager writes the memory that all rows share; a graph of
    values cannot, so the frame runs eagerly."""
    x[0] = 1
    return x.sigmoid()


@case(inputs(lambda: torch.randn(1, 3).expand(4, 3)))
def a_copy_of_an_expanded_input_into_itself_writes_nothing(x):
    """Found by the random checker: aten's copy_ returns at once when src is self; it was
    recorded as a mutation, whose write-back into the expanded input raised."""
    x.copy_(x)
    return x / 2


@case(inputs(lambda: torch.randn(1, 3).expand(4, 3)))
def an_expanded_input_read_and_written_elsewhere(x):
    y = x * 2
    y[1:] += x[:3]
    return y, x.sum(0)


# --------------------------------------------------------------------------- found by the fuzzer

@case(inputs(randn(requires_grad=True), randn(3, requires_grad=True)))
def gather_from_a_0d_tensor_and_its_gradient(x, y):
    """aten treats a 0-d tensor as one element; prims.gather (and the backward's scatter_add)
    wanted a dim in [0, 0)."""
    return torch.gather(x, 0, torch.zeros_like(x, dtype=torch.int64)) * 3, torch.gather(y, 0, torch.zeros(2, dtype=torch.int64))


@case(inputs(randn()))
def transpose_of_a_0d_tensor_then_written(x):
    """aten accepts transpose(0, -1) of a 0-d tensor; the decomposition indexed an empty dim list."""
    x.transpose(0, -1).fill_(1.5)
    return torch.relu(x)


@case(inputs(lambda: torch.zeros(0, 1, dtype=torch.bool), lambda: torch.zeros(2, 0, 3, dtype=torch.bool)))
def bool_matmul_of_empty_matrices(a, b):
    """Eager multiplies bool matrices only when one is empty; prims.mm refused bool."""
    return a @ a.mT, torch.bmm(b.mT, b)


@case(inputs(lambda: torch.ones(2, 2, dtype=torch.bool)))
def bool_matmul_raises(a):
    return a @ a


# --------------------------------------------------------------------------- found by the OpInfo sweep

@case(inputs(lambda: torch.arange(-3, 4).reshape(7, 1)))
def hardtanh_of_integers_keeps_their_dtype(i):
    """The decomposition was a clamp with float bounds: int64 in, float32 out."""
    return torch.nn.functional.hardtanh(i), torch.nn.functional.hardtanh(i, -0.5, 2.5)


@case(inputs(lambda: torch.tensor([True, False, True, False])))
def as_strided_scatter_of_bools(a):
    """Its zeros were prims.full(0) of dtype bool, which prims refuse."""
    return torch.as_strided_scatter(a, torch.tensor([False, True]), [2], [2], 1)


@case(inputs(randn(2, 5, 5, dtype=torch.bfloat16), randn(2, 5, 3, dtype=torch.bfloat16),
             randn(2, 3, 5, dtype=torch.bfloat16), randn(5, 5, dtype=torch.bfloat16)))
def baddbmm_and_addmm_in_bfloat16_round_once(bias, b1, b2, bias2):
    """aten scales and adds the product before it rounds to bfloat16; rounding the product, the
    scaled product and the sum gave errors of several bfloat16 ulps."""
    return (torch.baddbmm(bias, b1, b2, beta=0.6, alpha=0.2),
            torch.addmm(bias2, b1[0], b2[0], beta=0.6, alpha=0.2))


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_eager(name):
    assert_like_eager(*CASES[name])


def test_autograd_grad_with_create_graph_gives_eager_first_derivatives_and_refuses_a_second():
    """``torch.autograd.grad(..., create_graph=True)`` inside the function runs the compiled
    backward: its result is eager's and requires grad as eager's does, but differentiating it
    again raises (as with torch.compile) instead of giving a wrong second derivative."""
    def fn(x):
        grad, = torch.autograd.grad((x * x * x).sum(), x, create_graph=True)
        return grad * 2

    x = torch.randn(3, requires_grad=True)
    tinydynamo.reset()
    actual, expected = tinydynamo.compile(fn)(x), fn(x)
    assert_like_eager_tensor(actual, expected, "output")
    with pytest.raises(RuntimeError, match="double backward"):
        actual.sum().backward()
