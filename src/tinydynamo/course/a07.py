"""Assignment a07 (chapter 7, "PrimTorch: a small closed op set"): decompositions, graded in place.

The learner writes decompositions of seven aten ops in terms of tinydynamo's prims. The
checkers put them into the real ``decomposition_table`` (``swapped_decompositions``), then

* run ``decompose()`` on a one-op graph per OpInfo-style sample (broadcasting, 0-d, empty and
  non-contiguous tensors, negative dims, float32 / float64 / bfloat16 / float16 / integers) and
  compare the prim graph's result with aten's, checking the graph and the rules of the game;
* train models under the ``decomp_eager`` backend with all the learner's entries in place and
  compare every loss and gradient with eager PyTorch.

The rules: a decomposition calls prims (``prims.exp``, ``prims.broadcast_in_dim``...), its own
Python helpers and the three reference helpers in ``ALLOWED_HELPERS``. It may not call aten ops
on the traced tensors (``torch.exp(x)``, ``x.sum()``, ``x * 2``), nor the reference
decompositions in ``tinydynamo.prims.refs`` / ``decompositions``. And it sums float16/bfloat16
values in float32, as the prims' contract asks.

Each checker returns a list of human-readable failures naming the op, the sample and the error;
``report`` turns them into one AssertionError for a notebook test.
"""
import collections
import contextlib
import copy
import dataclasses
import functools
import inspect
import math
import operator

import torch
import torch.fx as fx
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

from .. import config
from ..backends import lookup_backend
from ..prims import EXTERN_FALLBACKS, Prim, decompose, decomposition_table, decompositions, refs
from ..prims.primitives import PRIMS
from ..prims.prim_tracer import ProxyTensor
from ..testing.models import ZOO, make
from .checking import ForbiddenCallError, no_delegation, report, time_limit  # noqa: F401 (report: for notebooks)
from .feedback import learner_location

aten = torch.ops.aten
f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
i32, i64, b8 = torch.int32, torch.int64, torch.bool

# The ops of the assignment, in the order of its parts.
OPS = (
    aten.relu.default,
    aten.sigmoid.default,
    aten.addcmul.default,
    aten._softmax.default,
    aten._softmax_backward_data.default,
    aten.native_layer_norm.default,
    aten.native_layer_norm_backward.default,
)

# Reference helpers a decomposition may call; every other function of refs.py and
# decompositions.py is the reference's own answer.
ALLOWED_HELPERS = ("result_type", "opmath_dtype", "broadcast_shapes")
LOW_PRECISION = (f16, bf16)
TIME_LIMIT = 5  # seconds per call of a decomposition (they take milliseconds): past it, an infinite loop


# --------------------------------------------------------------------------- samples

@dataclasses.dataclass
class Sample:
    """One call of an op: its arguments, and how to compare the result with aten's."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    note: str = ""  # what is special about it, shown in feedback
    tolerance: dict = dataclasses.field(default_factory=dict)  # rtol/atol when not the dtype's
    expected: object = None  # () -> the expected result, where aten cannot run the sample on CPU


class TensorMaker:
    """Random tensors from one seeded generator, so every sample is the same on every run."""

    def __init__(self, seed):
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, *shape, dtype=f32, low=-3.0, high=3.0, noncontiguous=False):
        if noncontiguous:  # a transposed view with the requested shape
            reverse = list(reversed(range(len(shape))))
            return self(*reversed(shape), dtype=dtype, low=low, high=high).permute(reverse)
        if dtype == b8:
            return torch.rand(shape, generator=self.generator) > 0.5
        values = low + (high - low) * torch.rand(shape, generator=self.generator, dtype=f64)
        return (values if dtype.is_floating_point else values.floor()).to(dtype)


def specials(dtype=f32):
    return torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.5, 0.5, -0.5, 40.0], dtype=dtype)


S = Sample
HALF_TOL = dict(atol=2e-3, rtol=2e-3)
BF16_TOL = dict(atol=2e-2, rtol=2e-2)
BACKWARD_TOL = dict(atol=1e-4, rtol=1e-4)
F64_TIGHT = dict(atol=1e-12, rtol=1e-12)  # float64 computed in float32 is off by 1e-8 and more
# A low-precision pointwise result computed in float32 and rounded once is within one unit in the
# last place of aten's; one computed in its own dtype (rounded at every step) is not.
ONE_ULP = dict(ulps=1)


def _unary_samples(t):
    basic = [S((t(3, 4),)), S((specials(),), note="nan, ±inf, ±0")]
    extra = [S((t(64, 64, dtype=bf16, low=-8, high=8),), tolerance=ONE_ULP), S((t(3, 4, dtype=i64),)),
             S((t(4, 3, noncontiguous=True),)), S((t(),)), S((t(0, 3),)), S((t(2, 3, dtype=f64),)),
             S((specials(f16),), note="nan, ±inf, ±0", tolerance=ONE_ULP),
             S((t(3, 4, dtype=f64),), note="float64 computed in float64", tolerance=F64_TIGHT)]
    return basic, extra


def _addcmul_samples(t):
    basic = [S((t(3, 4), t(3, 4), t(3, 4))),
             S((t(3, 1, 4), t(2, 4), t(4)), {"value": 0.5}, "broadcasting"),
             S((t(2, 3), t(2, 3, dtype=f64), t(3, dtype=i64)), {"value": 2}, "mixed dtypes")]
    extra = [S((t(2, 3, dtype=bf16), t(dtype=f32), t(3, dtype=bf16)), note="a 0-d float32 does not promote",
               tolerance=BF16_TOL),
             S((t(3, 4, dtype=i64), t(4, dtype=i64), t(3, 1, dtype=i64)), {"value": 3}),
             S((t(3, dtype=i32), t(dtype=i64), t(3, dtype=i32)), {"value": -2},
               "a 0-d int64 does not promote"),
             S((t(4, dtype=f16), t(4, dtype=bf16), t(dtype=f32)), note="float16 with bfloat16 gives float32"),
             S((t(4, dtype=b8), t(4), t(1)), {"value": 1.5}),
             S((t(0, 3), t(3), t(1)),),
             S((t(4, 3, noncontiguous=True), t(3), t(4, 1)), {"value": -1.5}),
             S((t(), t(), t()),),
             S((t(2, 1), t(2, 3, dtype=i64), t(3, dtype=b8)), {"value": 0.25}),
             S((t(3, dtype=i64), t(3, dtype=i64), t(3, dtype=i64)), {"value": 2.5},
               "an integer result: value is truncated to 2"),
             S((t(64, 64, dtype=bf16), t(64, 64, dtype=bf16), t(64, 64, dtype=bf16)), {"value": 0.7},
               "bfloat16: computed in float32, rounded once", tolerance=ONE_ULP),
             S((t(64, 64, dtype=f16), t(64, dtype=f16), t(64, 1, dtype=f16)), {"value": -1.3},
               "float16: computed in float32, rounded once", tolerance=ONE_ULP),
             S((t(3, 4, dtype=f64), t(3, 4, dtype=f64), t(4, dtype=f64)), {"value": 0.3},
               "float64 computed in float64", F64_TIGHT),
             S((t(3), t(1, 3), t(1, 3)), note="self of 3 elements broadcast to [1, 3]"),
             S((t(4, dtype=f16), t(4, dtype=f16), torch.tensor(0.5)), note="a 0-d float32 tensor2 does not promote",
               tolerance=ONE_ULP)]
    return basic, extra


def _softmax_samples(t):
    rows_of_minus_inf = torch.tensor([[0.0, -math.inf, 1.0], [-math.inf] * 3])
    basic = [S((t(3, 5), 1, False)), S((t(2, 3, 4), -1, False)),
             S((t(3, 5) * 100, 1, False), note="values up to ±300: exp overflows float32")]
    extra = [S((t(2, 3, 4), 0, False)), S((t(), 0, False)),
             S((t(3, 5, dtype=bf16), 1, False), tolerance=BF16_TOL),
             S((t(3, 5, dtype=f16) * 20, -1, False), note="values up to ±60", tolerance=HALF_TOL),
             S((t(4, 3, noncontiguous=True), 0, False)),
             S((rows_of_minus_inf, 1, False), note="rows of -inf"),
             S((t(0, 3), 1, False)), S((t(2, 0), 1, False), note="a reduced dim of size 0"),
             S((t(3, 5, dtype=f64) * 1000, -1, False), note="values up to ±3000: exp overflows float64"),
             _half_to_float_sample(t(3, 5, dtype=f16)),
             S((t(3, 5, dtype=f64), 1, False), note="float64 computed in float64", tolerance=F64_TIGHT),
             S((t(), -1, False), note="a 0-d tensor with dim -1")]
    return basic, extra


def _half_to_float_sample(x):
    """half_to_float=True: a float32 softmax of float16 values (aten has it on CUDA only)."""
    return S((x, 1, True), note="half_to_float: the result is float32", tolerance=HALF_TOL,
             expected=lambda: aten._softmax.default(x.float(), 1, False))


def _softmax_backward(t, shape, dim, dtype=f32):
    output = aten._softmax.default(t(*shape, dtype=dtype), dim, False)
    tolerance = BF16_TOL if dtype == bf16 else BACKWARD_TOL
    return S((t(*shape, dtype=dtype), output, dim, dtype), tolerance=tolerance)


def _half_to_float_backward(t):
    """The backward of a half_to_float softmax: a float32 gradient and output, and input_dtype
    float16 (aten has it on CUDA only): the float32 backward, rounded to float16."""
    grad, output = t(3, 5), aten._softmax.default(t(3, 5), 1, False)
    return Sample((grad, output, 1, f16), note="input_dtype float16 with a float32 output (half_to_float)",
                  tolerance=HALF_TOL,
                  expected=lambda: aten._softmax_backward_data.default(grad, output, 1, f32).to(f16))


def _softmax_backward_samples(t):
    basic = [_softmax_backward(t, (3, 5), 1)]
    extra = [_softmax_backward(t, (2, 3, 4), 0), _softmax_backward(t, (3, 5), -1, bf16),
             _softmax_backward(t, (4,), 0), _softmax_backward(t, (2, 5), 1, f64), _half_to_float_backward(t),
             dataclasses.replace(_softmax_backward(t, (2, 5), 1, f64), note="float64 computed in float64",
                                 tolerance=F64_TIGHT)]
    return basic, extra


def _layer_norm_samples(t):
    basic = [S((t(4, 8), [8], t(8), t(8), 1e-5)), S((t(2, 3, 4), [3, 4], None, None, 1e-5))]
    extra = [S((t(2, 3, 8), [8], t(8), None, 1e-3)), S((t(4, 8), [8], None, t(8), 1e-5)),
             S((t(4, 8, dtype=bf16), [8], t(8, dtype=bf16), t(8, dtype=bf16), 1e-5), tolerance=BF16_TOL),
             S((t(4, 8, dtype=f16), [8], None, None, 1e-5), tolerance=HALF_TOL),
             S((t(4, 16) + 200, [16], None, None, 1e-5), note="values 200 ± 3", tolerance=BACKWARD_TOL),
             S((t(3, 6, dtype=f64), [6], t(6, dtype=f64), t(6, dtype=f64), 1e-5)),
             S((t(2, 3, 4, noncontiguous=True), [4], t(4), t(4), 1e-5))]
    return basic, extra


def _layer_norm_backward(t, shape, normalized, weight=True, bias=True, mask=(True, True, True), dtype=f32,
                         weight_dtype=None, eps=1e-5):
    x = t(*shape, dtype=dtype)
    w = t(*normalized, dtype=weight_dtype or dtype) if weight else None
    b = t(*normalized, dtype=weight_dtype or dtype) if bias else None
    _, mean, rstd = aten.native_layer_norm.default(x, normalized, w, b, eps)
    tolerance = dict(atol=5e-2, rtol=5e-2) if dtype == bf16 else BACKWARD_TOL
    return S((t(*shape, dtype=dtype), x, normalized, mean, rstd, w, b, list(mask)), tolerance=tolerance)


def _no_weight_asked_for_its_gradient(t):
    """No weight or bias, but the mask asks for their gradients: aten fails on CPU, the answer is None."""
    sample = _layer_norm_backward(t, (4, 8), [8], weight=False, bias=False)
    grad_input = aten.native_layer_norm_backward.default(*sample.args[:7], [True, False, False])[0]
    return dataclasses.replace(sample, note="no weight and bias, but output_mask asks for their gradients",
                               expected=lambda: (grad_input, None, None))


def _layer_norm_backward_samples(t):
    basic = [_layer_norm_backward(t, (4, 8), [8])]
    extra = [_layer_norm_backward(t, (2, 3, 4), [3, 4]),
             _layer_norm_backward(t, (4, 8), [8], weight=False, bias=False, mask=(True, False, False)),
             _layer_norm_backward(t, (4, 8), [8], mask=(False, True, True)),
             _layer_norm_backward(t, (2, 3, 8), [8], mask=(True, True, False)),
             _layer_norm_backward(t, (4, 8), [8], mask=(True, False, True)),
             _layer_norm_backward(t, (4, 8), [8], dtype=bf16, weight_dtype=f32),
             _layer_norm_backward(t, (4, 8), [8], dtype=bf16),
             _layer_norm_backward(t, (3, 6), [6], dtype=f64),
             dataclasses.replace(_layer_norm_backward(t, (3, 6), [6], dtype=f64), note="float64 computed in float64",
                                 tolerance=F64_TIGHT),
             dataclasses.replace(_layer_norm_backward(t, (4, 8), [8], eps=0.1), note="mean and rstd of eps 0.1"),
             _no_weight_asked_for_its_gradient(t)]
    return basic, extra


_SAMPLE_BUILDERS = {
    aten.relu.default: _unary_samples,
    aten.sigmoid.default: _unary_samples,
    aten.addcmul.default: _addcmul_samples,
    aten._softmax.default: _softmax_samples,
    aten._softmax_backward_data.default: _softmax_backward_samples,
    aten.native_layer_norm.default: _layer_norm_samples,
    aten.native_layer_norm_backward.default: _layer_norm_backward_samples,
}


@functools.cache
def _samples(op):
    return _SAMPLE_BUILDERS[op](TensorMaker(seed=OPS.index(op)))


def samples(op, extra=False):
    """The basic samples of op (the visible tests), or the extra ones (the hidden tests)."""
    basic, more = _samples(op)
    return more if extra else basic


_DTYPE_NAMES = {f16: "f16", bf16: "bf16", f32: "f32", f64: "f64", i32: "i32", i64: "i64", b8: "b8"}


def describe_value(value):
    """f32[3, 4], with 'non-contiguous' when it is; other values as repr."""
    if isinstance(value, torch.Tensor):
        layout = " non-contiguous" if not value.is_contiguous() else ""
        return f"{_DTYPE_NAMES.get(value.dtype, value.dtype)}{list(value.shape)}{layout}"
    return repr(value)


def describe(op, sample):
    args = [describe_value(a) for a in sample.args]
    args += [f"{k}={describe_value(v)}" for k, v in sample.kwargs.items()]
    note = f" [{sample.note}]" if sample.note else ""
    return f"{op}({', '.join(args)}){note}"


# --------------------------------------------------------------------------- the rules, enforced

def _leaves(value):
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, dict):
        return _leaves(list(value.values()))
    return [value]


class NoAtenOnProxies(TorchDispatchMode):
    """Refuses every aten op on a traced tensor while a learner's decomposition runs.

    Prim calls do not reach the dispatcher with ProxyTensors (their meta rules work on meta
    tensors), so whatever does came from torch functions, Tensor methods or operators.
    """

    def __init__(self, op):
        super().__init__()
        self.op = op

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(isinstance(leaf, ProxyTensor) for leaf in _leaves([args, kwargs])):
            raise ForbiddenCallError(
                f"your decomposition of {self.op} called {func} on a traced tensor (through a torch "
                "function, a Tensor method or an operator such as * or -): write it with prims.* calls")
        return func(*args, **kwargs)


def _reference_answers():
    """Every function of refs.py and decompositions.py but the allowed helpers."""
    return tuple(fn for module in (refs, decompositions) for name, fn in vars(module).items()
                 if inspect.isfunction(fn) and fn.__module__ == module.__name__
                 and name not in ALLOWED_HELPERS)


REFERENCE_ANSWERS = _reference_answers()


def error_text(error):
    """ "Type: message", without the node listing that torch.fx's Interpreter appends."""
    message = str(error).split("While executing")[0].strip()
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


@dataclasses.dataclass
class Swap:
    """What happened to the swapped-in decompositions: calls per op, and the errors they raised
    (as text with the learner's line, recorded before torch.fx adds its own notes)."""

    calls: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    errors: list = dataclasses.field(default_factory=list)


def _watched(op, fn, swap):
    """fn, counting its calls, refusing calls of aten ops and of the reference, recording errors."""

    @functools.wraps(fn)
    def decomposition(*args, **kwargs):
        swap.calls[op] += 1
        try:
            return _run_watched(op, fn, args, kwargs)
        except Exception as error:
            swap.errors.append(error_text(error) + learner_location(error))
            raise

    return decomposition


def _run_watched(op, fn, args, kwargs):
    if inspect.unwrap(fn) in REFERENCE_ANSWERS:
        raise ForbiddenCallError(f"your decomposition of {op} is the reference's own "
                                 f"{fn.__module__}.{fn.__qualname__}: write it yourself")
    with no_delegation(*REFERENCE_ANSWERS), NoAtenOnProxies(op), time_limit(TIME_LIMIT, f"your decomposition of {op}"):
        return fn(*args, **kwargs)


_MISSING = object()


@contextlib.contextmanager
def swapped_decompositions(entries):
    """Put ``entries`` ({aten OpOverload: the learner's function}) into the real decomposition
    table for the duration of the block, each one watched by the rules above; yields a Swap.
    The previous entries (or their absence) come back even if the block raises."""
    for op, fn in entries.items():
        if not isinstance(op, torch._ops.OpOverload) or not callable(fn):
            raise TypeError(f"entries map aten OpOverloads to functions, got {op!r}: {fn!r}")
    swap = Swap()
    saved = {op: decomposition_table.get(op, _MISSING) for op in entries}
    try:
        for op, fn in entries.items():
            decomposition_table[op] = _watched(op, fn, swap)
        with config.patch(implicit_fallbacks=False):  # an op nobody decomposed is an error here
            yield swap
    finally:
        for op, previous in saved.items():
            if previous is _MISSING:
                decomposition_table.pop(op, None)
            else:
                decomposition_table[op] = previous


# --------------------------------------------------------------------------- op by op

def one_op_graph(op, args, kwargs):
    """A GraphModule calling op once, every tensor argument a placeholder; and its inputs."""
    graph, inputs = fx.Graph(), []

    def lift(value):
        if isinstance(value, torch.Tensor):
            inputs.append(value)
            return graph.placeholder(f"arg{len(inputs)}")
        return value

    node = graph.call_function(op, tuple(lift(a) for a in args), {k: lift(v) for k, v in kwargs.items()})
    graph.output(node)
    return fx.GraphModule({}, graph), inputs


def prim_graph(op, fn, *args, **kwargs):
    """The prim graph that decompose() builds for one call of op, with fn as op's decomposition."""
    gm, inputs = one_op_graph(op, args, kwargs)
    with swapped_decompositions({op: fn}):
        return decompose(gm, inputs)


def print_decomposition(op, fn, *args, **kwargs):
    """Print the prim graph of one call (or why it could not be built)."""
    try:
        print(prim_graph(op, fn, *args, **kwargs).code.strip())
    except Exception as error:  # noqa: BLE001 - the learner's error is shown, not raised
        print(f"decomposing {op} raised {error_text(error)}{learner_location(error)}")


def graph_problem(prim_gm):
    """A call of something other than a prim, a sum/prod of float16/bfloat16 values, or a
    conversion of a broadcast tensor (convert first: it has fewer elements then)."""
    for node in prim_gm.graph.nodes:
        if node.op != "call_function":
            continue
        source = node.args[0] if node.args else None
        if (node.target is PRIMS["convert_element_type"] and isinstance(source, torch.fx.Node)
                and source.target is PRIMS["broadcast_in_dim"]
                and source.meta["val"].numel() > source.args[0].meta["val"].numel()):
            return (f"node {node.name} converts {source.name}, a broadcast of {source.args[0].name} to "
                    f"{list(source.meta['val'].shape)}: convert {source.args[0].name} before broadcasting it, "
                    "while it has fewer elements")
        if not (isinstance(node.target, Prim) or node.target is operator.getitem
                or node.target in EXTERN_FALLBACKS):
            return f"node {node.name} calls {node.target}, which is not a prim"
        dtype = node.args[0].meta["val"].dtype if node.target in (PRIMS["sum"], PRIMS["prod"]) else None
        if dtype in LOW_PRECISION:
            return (f"node {node.name} sums {_DTYPE_NAMES[dtype]} values: accumulate float16/bfloat16 in "
                    "float32 (opmath_dtype) and convert the result back, as aten does")
    return None


_DEFAULT_TOLERANCE = {f16: dict(rtol=1e-3, atol=1e-5), bf16: dict(rtol=1.6e-2, atol=1e-5),
                      f32: dict(rtol=1.3e-6, atol=1e-5), f64: dict(rtol=1e-7, atol=1e-7)}


def _exact(dtype):
    """Whether values of dtype are compared exactly: integers and bools (float64, which the float
    errors are computed in, rounds an int64 beyond 2**53)."""
    return not (dtype.is_floating_point or dtype.is_complex)


def max_error(actual, expected):
    """Largest |actual - expected|, where nan matches nan and inf matches inf (nan elsewhere: inf);
    for integers and bools, a Python int computed exactly."""
    if actual.numel() == 0:
        return 0.0
    if _exact(actual.dtype) and _exact(expected.dtype):
        wrong = actual != expected
        pairs = zip(actual[wrong].tolist(), expected[wrong].tolist())
        return max((abs(int(a) - int(e)) for a, e in pairs), default=0)
    a, e = actual.double(), expected.double()
    diff = torch.where((a == e) | (a.isnan() & e.isnan()), 0.0, (a - e).abs())
    return torch.where(diff.isnan(), math.inf, diff).max().item()


def ulp_error(actual, expected):
    """Largest |actual - expected| in units in the last place of expected (nan matching nan)."""
    if actual.numel() == 0:
        return 0.0
    a, e = actual.double(), expected.double()
    spacing = (torch.nextafter(expected, torch.full_like(expected, math.inf)).double() - e).abs()
    same = (a == e) | (a.isnan() & e.isnan())
    return torch.where(same, 0.0, (a - e).abs() / spacing).max().item()


def _difference(actual, expected, tol, reference="aten"):
    """How far actual is from expected, in words."""
    allowed = f"{tol['atol']:g} + {tol['rtol']:g} * |expected|"
    if _exact(expected.dtype):
        return _integer_difference(actual, expected, reference, allowed)
    text = f"max abs error {max_error(actual, expected):.3g} (allowed: {allowed})"
    if actual.dtype.is_floating_point:
        stray_nans = (actual.isnan() & ~expected.isnan()).sum().item()
        if stray_nans:
            text = f"{stray_nans} nan where aten has numbers; {text}"
    return text


def _integer_difference(actual, expected, reference, allowed):
    """Integers and bools, exactly: how many elements differ, the first of them with both values,
    and the largest difference (never rounded: two int64 beyond 2**53 can be one float64)."""
    wrong = (actual != expected).nonzero()
    if len(wrong) == 0:
        return f"max abs error 0 (allowed: {allowed})"
    index = tuple(wrong[0].tolist())
    where = f" at index {list(index)}" if index else ""
    return (f"{len(wrong)} of {expected.numel()} element(s) differ, the first{where}: "
            f"{actual[index].item()} where {reference} has {expected[index].item()}; "
            f"max abs error {max_error(actual, expected)} (allowed: {allowed})")


def compare(actual, expected, tolerance, what="the result", reference="aten"):
    """Why actual does not match expected (tensors, None or nests of them), or None."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            return f"returned {_describe_result(actual)}, expected a tuple of {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            problem = compare(a, e, tolerance, f"output {i}", reference)
            if problem:
                return problem
        return None
    if expected is None or not isinstance(actual, torch.Tensor):
        if actual is None and expected is None:
            return None
        return f"{what} is {_describe_result(actual)}, expected {_describe_result(expected)}"
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return f"{what} is {describe_value(actual)}, expected {describe_value(expected)}"
    tol = tolerance or _DEFAULT_TOLERANCE.get(expected.dtype, dict(rtol=0, atol=0))
    if "ulps" in tol:
        error = ulp_error(actual, expected)
        if error <= tol["ulps"]:  # False for nan: a stray nan
            return None
        return (f"{what} differs from {reference} by {error:.3g} units in the last place of "
                f"{expected.dtype} (allowed: {tol['ulps']}): compute in float32, round once")
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, **tol)
    except AssertionError:
        return f"{what} differs from {reference}: {_difference(actual, expected, tol, reference)}"
    return None


def _describe_result(value):
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, torch.Tensor) or value is None:
        return describe_value(value)
    return f"a {type(value).__name__}"


def check_sample(op, fn, sample):
    """None if fn decomposes op correctly on this sample, else what went wrong."""
    if not callable(fn):
        return f"expected a function, got {fn!r}"
    gm, inputs = one_op_graph(op, sample.args, sample.kwargs)
    try:
        with swapped_decompositions({op: fn}) as swap:
            prim_gm = decompose(gm, inputs)
    except Exception as error:  # noqa: BLE001 - any learner error is reported, not raised
        return f"decomposing raised {swap.errors[0] if swap.errors else error_text(error)}"
    problem = graph_problem(prim_gm)
    if problem:
        return problem
    try:
        with torch.no_grad():
            actual = prim_gm(*inputs)
    except Exception as error:  # noqa: BLE001
        return f"running the prim graph raised {error_text(error)}"
    expected = sample.expected() if sample.expected else op(*sample.args, **sample.kwargs)
    return compare(actual, expected, sample.tolerance)


def _not_functions(entries):
    return [f"{op}: expected a function, got {fn!r}" for op, fn in entries.items() if not callable(fn)]


def check_decomposition(op, fn, extra=False):
    """fn against aten on op's basic samples (or the extra ones); one failure per bad sample."""
    if _not_functions({op: fn}):
        return _not_functions({op: fn})
    failures = []
    for sample in samples(op, extra):
        problem = check_sample(op, fn, sample)
        if problem:
            failures.append(f"{describe(op, sample)}: {problem}")
    return failures


# --------------------------------------------------------------------------- training

class GatedMLP(nn.Module):
    """h = LayerNorm(x); x + 0.5 * sigmoid(gate(h)) * relu(up(h)) with torch.addcmul; softmax.
    One model that uses every op of a07."""

    def __init__(self, dim=32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.gate = nn.Linear(dim, dim)
        self.up = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.norm(x)
        y = torch.addcmul(x, torch.sigmoid(self.gate(h)), torch.relu(self.up(h)), value=0.5)
        return torch.softmax(y, dim=-1)


TRAINING_TOL = dict(atol=1e-5, rtol=1e-4)


def _mean_square(out):
    return (out.float() ** 2).mean()


def build_model(name):
    """(model, inputs, loss_fn) for a zoo model or "gated_mlp"."""
    if name == "gated_mlp":
        torch.manual_seed(0)
        return GatedMLP(), (torch.randn(8, 32, generator=torch.Generator().manual_seed(7)),), _mean_square
    model, inputs = make(name)
    return model, inputs, ZOO[name].loss


def as_graph_module(model, n_inputs):
    """A graph with one node calling the model: what a frontend hands the backend."""
    graph = fx.Graph()
    inputs = [graph.placeholder(f"x{i}") for i in range(n_inputs)]
    graph.output(graph.call_module("model", tuple(inputs)))
    root = nn.Module()
    root.model = model
    return fx.GraphModule(root, graph)


def _step(forward, model, inputs, loss_fn):
    """Loss and {parameter name: gradient} of one forward (through ``forward``) and backward."""
    model.zero_grad(set_to_none=True)
    loss = loss_fn(forward(*inputs))
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters()}


def _sgd(models, lr):
    with torch.no_grad():
        for model in models:
            for p in model.parameters():
                p -= lr * p.grad


def _step_problems(name, step, compiled_step, eager_step, tolerance):
    (loss, grads), (expected_loss, expected_grads) = compiled_step, eager_step
    problems = [compare(loss, expected_loss, tolerance, "the loss", "eager")]
    problems += [compare(grads[param], expected, tolerance, f"the gradient of {param}", "eager")
                 for param, expected in expected_grads.items()]
    return [f"{name}, training step {step}: {p}" for p in problems if p]


def training_problems(name, backend, steps, lr, tolerance=TRAINING_TOL):
    """Train ``name`` with SGD through ``backend`` beside an eager copy: the problems of the first
    step whose loss or gradients differ from eager's, or [] (shared with a08 and a09)."""
    model, inputs, loss_fn = build_model(name)
    reference = copy.deepcopy(model)
    compiled = lookup_backend(backend)(as_graph_module(model, len(inputs)), list(inputs))
    for step in range(1, steps + 1):
        problems = _step_problems(name, step, _step(compiled, model, inputs, loss_fn),
                                  _step(reference, reference, inputs, loss_fn), tolerance)
        if problems:
            return problems
        _sgd((model, reference), lr)
    return []


def check_training(entries, name, steps=3, lr=0.05):
    """Train ``name`` with SGD under the decomp_eager backend with ``entries`` swapped into the
    decomposition table; every step's loss and gradients must match eager PyTorch's."""
    if _not_functions(entries):
        return _not_functions(entries)
    try:
        with swapped_decompositions(entries) as swap:
            problems = training_problems(name, "decomp_eager", steps, lr)
    except Exception as error:  # noqa: BLE001 - any learner error is reported, not raised
        cause = swap.errors[0] if swap.errors else error_text(error)
        return [f"{name}: compiling or training under decomp_eager raised {cause}"]
    if problems:
        return problems
    if not swap.calls:
        return [f"{name}: none of your decompositions was used; it does not exercise them"]
    return []
