"""Assignment a08 (chapters 8-10, "Generating C++"): the C++ code generator, graded in place.

The learner writes three pieces of ``tinydynamo.inductor.codegen.cpp``:

1. ``CppOps``: the C++ expression of each pointwise op in ``LEARNER_OPS``, given operands that
   are CSEVariables (the reference's ``CppOverrides``);
2. ``loop(kernel, var, pragma=None)``, which writes one ``for`` loop, and
   ``pointwise_body(kernel, body)``, the loop nest that computes one pointwise buffer inside a
   kernel (``CppKernel._loop`` and ``CppKernel._pointwise_body``);
3. ``reduction_init(reduction_type, dtype)``, the accumulator's start value, and
   ``reduction_body(kernel, body, full_reduction)``, the loops that accumulate one reduction and
   store its result (``reduction_init`` and ``CppKernel._reduction_body``).

``swapped_codegen`` puts any of them into the real code generator and restores the reference on
exit, even on error. While a body piece is graded, every body gets loops of its own (no loop
groups, which the reference writes itself), so all of them are the learner's. Inside it, kernels
compile into a fresh cache directory (so the learner's
C++ is really compiled and run, never a cached library), a compile error is raised instead of
being hidden by ``config.suppress_errors``, and every C++ source compiled is recorded.

The checkers run real programs through the whole ``inductor`` backend (AOT autograd, prims,
lowering, scheduling, then the learner's codegen and g++): named cases for each part, seeded
random programs (the generator of ``tests/inductor/test_inductor_fuzz.py``, rewritten without
hypothesis), and training steps of zoo models. Every result is compared with eager PyTorch. A
failure names the case and says what went wrong: the largest error, the learner's exception and
line, the C++ compiler's first errors, or a pragma that the generated kernel lacks. Each call of a
learner's piece is stopped after TIME_LIMIT seconds (an infinite loop), and torch._inductor's own
C++ ops (``CppOverrides``) are refused to the learner's ``CppOps``, as the reference's are.
"""
import collections
import contextlib
import dataclasses
import inspect
import math
import os
import random
import re
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import config
from ..backends import lookup_backend
from ..inductor import codecache
from ..inductor.codegen import cpp
from ..testing.programs import BF16_TOL, F32_TOL, F64_TOL, FLOATS, REDUCE, UNARY_NUMBER, VIEWS, Program
from . import codegen_checks
from .a07 import as_graph_module, compare, error_text
from .checking import (  # noqa: F401 (report: for notebooks)
    TORCH_INDUCTOR_DIR, ForbiddenCallError, call_learner, no_calls_into, no_delegation, report, time_limit,
)
from .execute import running_case
from .feedback import learner_location

# The pointwise ops whose C++ the learner writes; every other op keeps the reference's.
LEARNER_OPS = ("neg", "abs", "exp", "log", "tanh", "sqrt", "rsqrt", "reciprocal", "add", "sub", "mul",
               "div", "maximum", "minimum", "lt", "where", "to_dtype")

TIME_LIMIT = 10  # seconds per call of a learner's piece (they take milliseconds)

f32, f64, bf16 = torch.float32, torch.float64, torch.bfloat16
i32, i64, b8 = torch.int32, torch.int64, torch.bool


# --------------------------------------------------------------------------- the swap


@dataclasses.dataclass
class Swap:
    """What happened inside ``swapped_codegen``: the C++ sources compiled, calls of each piece."""

    sources: list = dataclasses.field(default_factory=list)
    calls: collections.Counter = dataclasses.field(default_factory=collections.Counter)


@contextlib.contextmanager
def _replaced(owner, name, value):
    """``owner.name = value`` for the duration (owner: a class or a module)."""
    original = owner.__dict__[name]
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _reference_pieces():
    """The reference's own versions of every piece the learner writes."""
    ops = [cpp.CppOverrides.__dict__[name].__func__ for name in LEARNER_OPS]
    return (*ops, cpp.CppKernel._loop, cpp.CppKernel._pointwise_body, cpp.reduction_init,
            cpp.CppKernel._reduction_body)


REFERENCE_PIECES = _reference_pieces()


def _counted(swap, label, fn):
    """The learner's piece, counting its calls; the reference's pieces are out of its reach."""
    if fn in REFERENCE_PIECES or inspect.unwrap(fn) in REFERENCE_PIECES:
        raise ForbiddenCallError(f"your {label} is the reference's own {fn.__qualname__}: "
                                 "write it yourself")

    if label == "loop":
        return _counted_loop(swap, fn)

    def piece(*args, **kwargs):
        swap.calls[label] += 1
        # piece: what the reference's names now hold
        with no_delegation(*REFERENCE_PIECES, piece), time_limit(TIME_LIMIT, f"your {label}"):
            return call_learner(fn, *args, **kwargs)

    return piece


def _counted_loop(swap, loop):
    """The learner's ``loop``, a context manager: it writes the loop when the block is entered,
    not when it is called, so that is when the reference's pieces must be out of its reach."""

    @contextlib.contextmanager
    def piece(*args, **kwargs):
        swap.calls["loop"] += 1
        with no_delegation(*REFERENCE_PIECES, piece), time_limit(TIME_LIMIT, "your loop"), loop(*args, **kwargs):
            yield

    return piece


def _recording_load(swap, load):
    def recording_load(source):
        swap.sources.append(source)
        return load(source)

    return recording_load


def _replacements(swap, ops, loop, pointwise_body, reduction_init, reduction_body):
    """(owner, attribute, new value) for every piece given."""
    found = []
    if ops is not None:
        found += [(cpp.CppOverrides, name, staticmethod(_counted(swap, name, getattr(ops, name))))
                  for name in LEARNER_OPS]
    pieces = [(cpp.CppKernel, "_loop", "loop", loop),
              (cpp.CppKernel, "_pointwise_body", "pointwise_body", pointwise_body),
              (cpp, "reduction_init", "reduction_init", reduction_init),
              (cpp.CppKernel, "_reduction_body", "reduction_body", reduction_body)]
    found += [(owner, name, _counted(swap, label, fn)) for owner, name, label, fn in pieces if fn is not None]
    if pointwise_body is not None or reduction_body is not None:
        found.append((cpp, "loop_groups", _one_body_per_loop_nest))
    found.append((codecache, "load", _recording_load(swap, codecache.load)))
    return found


def _one_body_per_loop_nest(bodies):
    """Every body in loops of its own, none in a loop group (``cpp.loop_groups``): so every
    pointwise and reduction body of a graded kernel is written by the learner's pieces."""
    return [[body] for body in bodies]


@contextlib.contextmanager
def swapped_codegen(ops=None, loop=None, pointwise_body=None, reduction_init=None, reduction_body=None):
    """The C++ code generator with the given learner pieces in place of the reference's.

    Yields a :class:`Swap`. Kernels compile into a new, empty cache directory.
    """
    swap = Swap()
    loaded = dict(codecache._loaded)
    codecache._loaded.clear()  # libraries this process loaded before: not the learner's
    try:
        with codegen_checks.fresh_cache_dir(prefix="tinydynamo-a08-") as cache_dir, \
                config.patch(cache_dir=cache_dir, suppress_errors=False, triton_on_cpu=False), \
                contextlib.ExitStack() as stack:
            for owner, name, value in _replacements(swap, ops, loop, pointwise_body, reduction_init,
                                                    reduction_body):
                stack.enter_context(_replaced(owner, name, value))
            if ops is not None:
                stack.enter_context(no_calls_into(TORCH_INDUCTOR_DIR))  # its CppOverrides
            yield swap
    finally:
        codecache._loaded.clear()
        codecache._loaded.update(loaded)


def missing_ops(ops):
    """The LEARNER_OPS that ``ops`` does not define."""
    return [name for name in LEARNER_OPS if not callable(getattr(ops, name, None))]


# --------------------------------------------------------------------------- running a program


class FunctionModule(nn.Module):
    """An nn.Module whose forward is ``fn``: what ``as_graph_module`` calls."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def compile_and_run(fn, inputs, call_inputs=None):
    """``fn(*inputs)`` through the inductor backend (AOT autograd, prims, loop IR, C++); compiled
    for ``inputs`` and called with ``call_inputs`` (of the same shapes and dtypes) when given."""
    gm = as_graph_module(FunctionModule(fn), len(inputs))
    with torch.no_grad():
        compiled = lookup_backend("inductor")(gm, list(inputs))
        return compiled(*(inputs if call_inputs is None else call_inputs))


def compiler_errors(error, limit=2):
    """The source path and the first ``limit`` errors (each with its source line) of g++."""
    message = str(error)
    path = message.split("generated kernel ", 1)[1].split(" failed:", 1)[0]
    lines = message.splitlines()
    shown = []
    for i, line in enumerate(lines):
        if ": error:" in line and len(shown) < 2 * limit:
            shown += [line.replace(path, os.path.basename(path)).strip()]
            if i + 1 < len(lines) and "|" in lines[i + 1]:
                shown.append(lines[i + 1].strip())
    return path, shown


def describe_error(error):
    """What an exception raised while compiling or running a program says, for feedback."""
    if isinstance(error, codecache.CppCompileError):
        path, errors = compiler_errors(error)
        return "the C++ compiler rejected the generated code (" + path + "):\n    " + "\n    ".join(errors)
    return f"raised {error_text(error)}{learner_location(error)}"


# --------------------------------------------------------------------------- named cases


@dataclasses.dataclass
class Case:
    """A function of torch ops, its inputs, and what its generated C++ must contain."""

    name: str
    fn: Callable
    make_inputs: Callable  # () -> list of tensors, the same on every call
    tolerance: dict = dataclasses.field(default_factory=lambda: dict(F32_TOL))
    source_checks: tuple = ()  # (regular expression, what it means), searched in the C++ source
    details: str = ""  # shown after a failure (a random program's listing)
    call_inputs: Callable = None  # () -> the inputs of the call, if not those compiled for


def tensors(seed, *specs):
    """Seeded inputs: each spec is (shape, dtype); integers in [-4, 4], bools half true."""
    generator = torch.Generator().manual_seed(seed)
    made = []
    for shape, dtype in specs:
        if dtype == b8:
            made.append(torch.rand(shape, generator=generator) > 0.5)
        elif dtype.is_floating_point:
            made.append(torch.randn(shape, generator=generator, dtype=f64).to(dtype))
        else:
            made.append(torch.randint(-4, 5, shape, generator=generator, dtype=dtype))
    return made


def inputs_of(*specs, seed=0, edit=None):
    """A ``make_inputs`` for specs; ``edit(list)`` may change the tensors (put nans in...)."""

    def make():
        made = tensors(seed, *specs)
        if edit is not None:
            edit(made)
        return made

    return make


def _with_specials(made):
    """Put nan, ±inf and ±0 in the first row of each tensor, shifted by one from tensor to tensor."""
    specials = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.5, 40.0])
    for k, tensor in enumerate(made):
        row = tensor[0]
        n = min(len(row), len(specials))
        row[:n] = specials.roll(k)[:n].to(row.dtype)


def _positive_divisors(made):
    made[1].abs_().add_(1)


def _a_zero_divisor(made):
    made[1].abs_().add_(1)
    made[1][0, 2] = 0


# In a float32 kernel, no double: no double literal (1.0 for 1.0f), no double math function (exp for
# expf, sqrt(x) for std::sqrt's float overload), no cast to double.
FLOAT_ONLY = (r"// kernel0(?![\s\S]*(?:(?<![\w.])\d+\.\d*(?:e[-+]?\d+)?(?![\w.])|\bdouble\b"
              r"|(?<![\w:])(?:exp|log|tanh|sqrt)\())",
              "the float32 kernel computes in double somewhere (a double literal such as 1.0 for 1.0f, "
              "a double math function such as exp or sqrt for expf or std::sqrt, or a cast to double), "
              "which is slower and, rounded back, not float32's result")


# In a float64 kernel, no float math function: expf for exp rounds to float32.
DOUBLE_ONLY = (r"// kernel0(?![\s\S]*\b(?:exp|log|tanh|sqrt)f\()",
               "the float64 kernel calls a float math function (expf, logf, tanhf, sqrtf): float64 math "
               "must stay in double (std::sqrt, exp, log...)")


SIMD_INNER_LOOP = (r"#pragma omp simd\s*\n\s*for \(int64_t x1 ", "the row loop (x1) of a pointwise body "
                   "inside the outer loop must carry `#pragma omp simd`")
SIMD_LAST_DIM = (r"#pragma omp simd\s*\n\s*for \(int64_t x2 ", "the innermost of the body's own loops must be "
                 "that of its last dim (x2), the one that walks memory contiguously, and carry `#pragma omp simd`")
SIMD_MAX = (r"#pragma omp simd reduction\(max:\w+\)", "a max reduction must carry `#pragma omp simd "
            "reduction(max:<accumulator>)` (with a reduction(|:...) for the nan flag)")
SIMD_SUM = (r"#pragma omp simd reduction\(\+:\w+\)", "a sum must carry `#pragma omp simd reduction(+:<accumulator>)`")
SIMD_MAX_NAN = (r"#pragma omp simd reduction\(max:(\w+)\) reduction\(\|:\1_nan\)",
                "a float max reduction must also reduce its nan flag: `#pragma omp simd reduction(max:<acc>) "
                "reduction(|:<acc>_nan)` (without it, the lanes race on the flag)")
PARALLEL_OUTERMOST = (r"#pragma omp parallel for simd reduction\(\+:\w+\)\s*\n\s*for \([^\n]*\{\n\s*for \(",
                      "a large reduction of all elements over two reduction loops must carry its threads on the "
                      "outermost reduction loop, not start a thread team for each of its iterations")
PARALLEL_SUM = (r"#pragma omp parallel for simd reduction\(\+:\w+\)",
                "a large reduction of all elements must be split over threads: `#pragma omp parallel for "
                "simd reduction(+:<accumulator>)`")

# Only the innermost loop of a nest is a simd loop: no simd loop has another loop inside. A simd
# loop is one whose pragma has `simd` in it: `#pragma omp simd` and `#pragma omp parallel for simd`.
SIMD_INNERMOST_ONLY = (r"// kernel0(?![\s\S]*#pragma omp\b[^\n]*\bsimd\b[^\n]*\n\s*for \([^\n]*\{\n\s*"
                       r"(?:#pragma[^\n]*\n\s*)?for \()",
                       "a simd loop (`#pragma omp simd` or `#pragma omp parallel for simd`) has another loop "
                       "inside: only the innermost loop of the "
                       "body's own loops (or of the reduction loops) may be a simd loop")
NO_PRAGMA_OWN_LOOP = (r"// kernel0(?![\s\S]*#pragma[^\n]*\n\s*for \(int64_t x1 )",
                      "a reduction's own loop (x1) carries a pragma: it gets none, only the reduction loop "
                      "inside it is a simd loop")
NO_SIMD = (r"// kernel0(?![\s\S]*#pragma omp[^\n]*simd)",
           "an arg-reduction's loop carries a simd pragma: its result depends on the order of the "
           "elements (the first largest), so its elements cannot be split between lanes")
NO_PARALLEL = (r"// kernel0(?![\s\S]*#pragma omp parallel)",
               "a reduction of all elements too small for threads (fewer than PARALLEL_MIN_ELEMENTS) "
               "opens a parallel region: a thread team costs more than the work")
NO_PARALLEL_REDUCTION_LOOP = (r"// kernel0(?![\s\S]*#pragma omp parallel[^\n]*\n\s*for \(int64_t r)",
                              "a reduction loop inside the outer loop opens a parallel region: the "
                              "outer loop already carries the threads, and each of its iterations "
                              "would start a thread team")


def _extreme_integer_rows(made):
    info = torch.iinfo(made[0].dtype)
    made[0][0] = info.min
    made[0][1] = info.max


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def _ops_cases():
    basic = [
        Case("gelu_tanh f32[4, 33]", gelu_tanh, inputs_of(((4, 33), f32))),
        Case("sigmoid(x) * tanh(y) f32[5, 8]", lambda x, y: torch.sigmoid(x) * torch.tanh(y),
             inputs_of(((5, 8), f32), ((5, 8), f32))),
        Case("relu(x) - min(x, y) / (|y| + 1) f32[6, 7]",
             lambda x, y: torch.relu(x) - torch.minimum(x, y) / (y.abs() + 1),
             inputs_of(((6, 7), f32), ((6, 7), f32))),
        Case("where(x < y, log(|x| + 1), sqrt(|y|) * rsqrt(|x| + 2)) f32[3, 9]",
             lambda x, y: torch.where(x < y, torch.log(x.abs() + 1), torch.sqrt(y.abs()) * torch.rsqrt(x.abs() + 2)),
             inputs_of(((3, 9), f32), ((3, 9), f32))),
        Case("exp(-x) + 1 / x f32[4, 4]", lambda x: torch.exp(-x) + torch.reciprocal(x), inputs_of(((4, 4), f32))),
    ]
    extra = [
        Case("gelu_tanh f64[3, 17]", gelu_tanh, inputs_of(((3, 17), f64)), F64_TOL),
        Case("sigmoid(x) * tanh(y) bf16[5, 8]", lambda x, y: torch.sigmoid(x) * torch.tanh(y),
             inputs_of(((5, 8), bf16), ((5, 8), bf16)), BF16_TOL),
        Case("maximum and minimum with nan and ±inf f32[2, 8]",
             lambda x, y: (torch.maximum(x, y), torch.minimum(x, y), torch.relu(x)),
             inputs_of(((2, 8), f32), ((2, 8), f32), edit=_with_specials)),
        Case("integer ops i64[4, 6]: -a + |b| * a - max(a, b) + relu(b)",
             lambda a, b: -a + b.abs() * a - torch.maximum(a, b) + torch.relu(b),
             inputs_of(((4, 6), i64), ((4, 6), i64))),
        Case("integer ops i32[4, 6]: min(a, b) - (a < b)", lambda a, b: torch.minimum(a, b) - (a < b).int(),
             inputs_of(((4, 6), i32), ((4, 6), i32))),
        Case("int64 values beyond 32 bits i64[3, 5]: max, min and trunc division of a * 3e9",
             lambda a, b: (torch.maximum(a * 3_000_000_000, b), torch.minimum(a * -3_000_000_000, b),
                           torch.div(a * 3_000_000_000, b, rounding_mode="trunc")),
             inputs_of(((3, 5), i64), ((3, 5), i64), edit=_positive_divisors)),
        Case("integer division by zero i64[3, 5]: trunc (eager raises ZeroDivisionError)",
             lambda a, b: torch.div(a, b, rounding_mode="trunc"),
             inputs_of(((3, 5), i64), ((3, 5), i64), edit=_positive_divisors),  # compiled for these,
             call_inputs=inputs_of(((3, 5), i64), ((3, 5), i64), edit=_a_zero_divisor)),  # called with these
        Case("float32 math stays in float f32[4, 4]: 1 / x, rsqrt, exp, log, tanh, sqrt",
             lambda x: (torch.reciprocal(x), torch.rsqrt(x.abs()), x.exp(), x.abs().log(), x.tanh(),
                        x.abs().sqrt()),
             inputs_of(((4, 4), f32)), source_checks=(FLOAT_ONLY,)),
        Case("integer division i64[3, 5]: trunc and floor",
             lambda a, b: (torch.div(a, b, rounding_mode="trunc"), a // b),
             inputs_of(((3, 5), i64), ((3, 5), i64), edit=_positive_divisors)),
        Case("bool ops b8[4, 5]: max(a, b), a + b, a * b, where",
             lambda a, b: (torch.maximum(a, b), a + b, a * b, torch.where(a, b, ~b)),
             inputs_of(((4, 5), b8), ((4, 5), b8))),
        Case("conversions f32[3, 8] -> i64, bool, f64, bf16",
             lambda x: ((x * 3).long(), x.round().bool(), x.double() * 0.1, (x * 3).bfloat16() + 1),
             inputs_of(((3, 8), f32), edit=_with_specials), dict(atol=1e-6, rtol=1e-6)),
        Case("conversions i32[3, 8] -> f32, bool", lambda a: (a.float() / 3, a.bool(), a.sqrt()),
             inputs_of(((3, 8), i32))),
        Case("exp, log, sqrt of nan, ±inf, ±0 f32[2, 8]", lambda x: (x.exp(), x.log(), x.sqrt(), torch.rsqrt(x), -x),
             inputs_of(((2, 8), f32), edit=_with_specials)),
        Case("a negated negative constant f32[3, 5]: -full_like(x, -2.0) * x",
             lambda x: -torch.full_like(x, -2.0) * x, inputs_of(((3, 5), f32))),
        Case("rounding error of bfloat16 and float16 f32[4, 8]: x.bfloat16().float() - x, "
             "x.half().float() - x", lambda x: (x.bfloat16().float() - x, x.half().float() - x),
             inputs_of(((4, 8), f32))),
        Case("scalar constants f32[3, 5]: 2.5 - x, x * -1.5, x / -0.25, where(x < 0, -3.0, x)",
             lambda x: (2.5 - x, x * -1.5, x / -0.25, torch.where(x < 0, -3.0, x)), inputs_of(((3, 5), f32))),
        Case("|x| of int64 values beyond 2^53 i64[3, 5]: |a * 3e15 + 1|", lambda a: (a * 3_000_000_000_000_000 + 1).abs(),
             inputs_of(((3, 5), i64)), dict(atol=0, rtol=0)),
        Case("float64 math stays in double f64[4, 4]: exp, log, tanh, sqrt, rsqrt",
             lambda x: (x.exp(), x.abs().log(), x.tanh(), x.abs().sqrt(), torch.rsqrt(x.abs())),
             inputs_of(((4, 4), f64)), F64_TOL, source_checks=(DOUBLE_ONLY,)),
        Case("integer clamp and minimum with a constant i64[4, 6]: a.clamp(-1, 2), minimum(a, 3)",
             lambda a: (a.clamp(-1, 2), torch.minimum(a, torch.full_like(a, 3))), inputs_of(((4, 6), i64))),
        Case("x minus a negative constant f32[3, 5]: x - full_like(x, -2.0)", lambda x: x - torch.full_like(x, -2.0),
             inputs_of(((3, 5), f32))),
    ]
    return basic, extra


def _pointwise_cases():
    basic = [
        Case("bias + relu f32[8, 33] + f32[33]", lambda x, b: torch.relu(x + b),
             inputs_of(((8, 33), f32), ((33,), f32))),
        Case("x + x.T f32[12, 12]", lambda x: x + x.t(), inputs_of(((12, 12), f32))),
        Case("a 3-d tensor f32[3, 4, 5] * f32[4, 1]", lambda x, y: torch.tanh(x * y),
             inputs_of(((3, 4, 5), f32), ((4, 1), f32))),
        Case("softmax rows f32[6, 40] (two pointwise bodies in one kernel)", lambda x: torch.softmax(x, -1),
             inputs_of(((6, 40), f32)), source_checks=(SIMD_INNER_LOOP,)),
        Case("x - rowmax(x) and 2 * x f32[5, 12] (two bodies load the same elements)",
             lambda x: (x - x.amax(1, keepdim=True), 2 * x), inputs_of(((5, 12), f32))),
    ]
    extra = [
        Case("bias + gelu f32[256, 300] (parallel)", lambda x, b: gelu_tanh(x + b),
             inputs_of(((256, 300), f32), ((300,), f32))),
        Case("concatenation f32[4, 3] | f32[4, 5]", lambda x, y: torch.cat([x, y * 2], 1),
             inputs_of(((4, 3), f32), ((4, 5), f32))),
        Case("gather f32[5, 6] by i64[5, 3]", lambda x, i: x.gather(1, i) * 2,
             lambda: [tensors(0, ((5, 6), f32))[0], torch.tensor([[0, 5, 2]] * 5)]),
        Case("a strided slice x[:, 1::2] f32[6, 9]", lambda x: x[:, 1::2].exp(), inputs_of(((6, 9), f32))),
        Case("size-1 dims f32[1, 7, 1] + f32[5, 1, 3]", lambda x, y: x + y,
             inputs_of(((1, 7, 1), f32), ((5, 1, 3), f32))),
        Case("layer_norm f32[2, 3, 16]", lambda x, w, b: F.layer_norm(x, (16,), w, b),
             inputs_of(((2, 3, 16), f32), ((16,), f32), ((16,), f32)), source_checks=(SIMD_INNER_LOOP,)),
        Case("a 0-d tensor", lambda x: x * 2 + 1, lambda: [torch.tensor(1.5)]),
        Case("a slice minus its max over two dims f32[3, 4, 5][:, :, :4] (two loops of its own)",
             lambda x: x[:, :, :4] - x[:, :, :4].amax((1, 2), keepdim=True), inputs_of(((3, 4, 5), f32)),
             source_checks=(SIMD_INNERMOST_ONLY, SIMD_LAST_DIM)),
    ]
    return basic, extra


def _centered_column_reductions(x):
    """Fused under one outer loop over the slabs: the slab's mean, then per column a sum and a max."""
    centered = x - x.mean((1, 2), keepdim=True)
    return centered.sum(1), centered.amax(1)


def _reduction_cases():
    basic = [
        Case("softmax rows f32[6, 40]", lambda x: torch.softmax(x, -1), inputs_of(((6, 40), f32)),
             source_checks=(SIMD_MAX, SIMD_SUM)),
        Case("layer_norm f32[5, 24]", lambda x: F.layer_norm(x, (24,)), inputs_of(((5, 24), f32))),
        Case("sum over columns f32[9, 7]", lambda x: x.sum(0), inputs_of(((9, 7), f32))),
        Case("amax of negative rows, amin of positive rows, with nan f32[4, 9]",
             lambda x: ((-x.abs() - 1).amax(1), (x.abs() + 1).amin(1), x.amax(1)),
             inputs_of(((4, 9), f32), edit=_with_specials)),
    ]
    extra = [
        Case("prod f64[3, 6]", lambda x: x.prod(1), inputs_of(((3, 6), f64)), F64_TOL),
        Case("argmax and argmin with ties i64[5, 8]", lambda x: (x.argmax(1), x.argmin(0)), inputs_of(((5, 8), i64))),
        Case("argmax and argmin with nan f32[4, 9]", lambda x: (x.argmax(1), x.argmin(1)),
             inputs_of(((4, 9), f32), edit=_with_specials)),
        Case("sum of int32 products that wrap around i32[3, 10] (an int64 result)",
             lambda x: (x * 1_000_000_000).sum(1),
             inputs_of(((3, 10), i32))),
        Case("any and all b8[4, 6]", lambda x: (x.any(1), x.all(1), x.any(0)), inputs_of(((4, 6), b8))),
        Case("sum of all 2^16 elements f32[256, 256] (parallel)", lambda x: x.sum(),
             inputs_of(((256, 256), f32)), dict(atol=1e-3, rtol=1e-4), source_checks=(PARALLEL_SUM,)),
        Case("mean and var over dims 0 and 2 of f32[4, 3, 5]",
             lambda x: (x.mean((0, 2)), x.var((0, 2), correction=0)), inputs_of(((4, 3, 5), f32))),
        Case("sum over the middle dim f32[3, 4, 5]", lambda x: x.sum(1).exp(), inputs_of(((3, 4, 5), f32))),
        Case("log_softmax bf16[4, 20]", lambda x: torch.log_softmax(x, -1), inputs_of(((4, 20), bf16)), BF16_TOL),
        Case("max over an all -inf row f32[2, 5]", lambda x: (x.amax(1), torch.softmax(x, 1)),
             lambda: [torch.tensor([[-math.inf] * 5, [1.0, 2.0, -math.inf, 0.0, 3.0]])]),
        Case("a reduction of an empty dim f32[3, 0]", lambda x: x.sum(1) + 1, lambda: [torch.zeros(3, 0)]),
        Case("reductions with loops of their own: sum and max over dim 1 of each centered slab "
             "f32[3, 4, 5] (outer loop x0, own loop x1)", _centered_column_reductions,
             inputs_of(((3, 4, 5), f32)), source_checks=(NO_PRAGMA_OWN_LOOP,)),
        Case("amax and amin of rows of the extreme integers i64[3, 5] and i32[3, 5]",
             lambda a, b: (a.amax(1), a.amin(1), b.amax(1), b.amin(1)),
             inputs_of(((3, 5), i64), ((3, 5), i32), edit=lambda made: [_extreme_integer_rows([t]) for t in made]),
             dict(atol=0, rtol=0)),
        Case("max over two dims of a slice, subtracted f32[3, 4, 5][:, :, :4] (two reduction loops, "
             "two loops of its own)", lambda x: x[:, :, :4] - x[:, :, :4].amax((1, 2), keepdim=True),
             inputs_of(((3, 4, 5), f32)), source_checks=(SIMD_INNERMOST_ONLY,)),
        Case("argmax of rows f32[6, 40] (no simd)", lambda x: x.argmax(1), inputs_of(((6, 40), f32)),
             source_checks=(NO_SIMD,)),
        Case("a small sum of all elements f32[4, 4] (no threads)", lambda x: x.sum(), inputs_of(((4, 4), f32)),
             source_checks=(NO_PARALLEL,)),
        Case("row sums f32[2, 32768] (threads on the outer loop only)", lambda x: x.sum(1),
             inputs_of(((2, 32768), f32)), dict(atol=1e-3, rtol=1e-4), source_checks=(NO_PARALLEL_REDUCTION_LOOP,)),
        Case("argmax and argmin with two nans in a row f32[2, 6]", lambda x: (x.argmax(1), x.argmin(1)),
             lambda: [torch.tensor([[1.0, math.nan, 2.0, math.nan, 0.0, 3.0],
                                    [math.nan, -1.0, 5.0, -2.0, math.nan, 0.5]])]),
        Case("amax of rows with nan f32[6, 40] (the nan flag in the simd clause)", lambda x: x.amax(1),
             inputs_of(((6, 40), f32), edit=_with_specials), source_checks=(SIMD_MAX_NAN,)),
        Case("a sum of exactly PARALLEL_MIN_ELEMENTS elements f32[128, 256] (parallel)", lambda x: x.sum(),
             inputs_of(((128, 256), f32)), dict(atol=1e-3, rtol=1e-4), source_checks=(PARALLEL_SUM,)),
        Case("a sum of all elements of a slice f32[256, 256][:, :200] (parallel, two reduction loops)",
             lambda x: x[:, :200].sum(), inputs_of(((256, 256), f32)), dict(atol=1e-3, rtol=1e-4),
             source_checks=(PARALLEL_OUTERMOST,)),
    ]
    return basic, extra


_CASES = {"ops": _ops_cases, "pointwise": _pointwise_cases, "reductions": _reduction_cases}


def cases(part, extra=False):
    """The named cases of a part ("ops", "pointwise", "reductions"): visible, or extra (hidden)."""
    basic, more = _CASES[part]()
    return more if extra else basic


def run_case(case, swap):
    """None if ``case`` gives eager's result through the swapped code generator, else why not."""
    inputs = case.make_inputs()
    call_inputs = inputs if case.call_inputs is None else case.call_inputs()
    try:
        expected = case.fn(*call_inputs)
    except RuntimeError as error:  # the case is an error that eager reports: yours must report it
        expected = error
    first = len(swap.sources)
    try:
        actual = compile_and_run(case.fn, inputs, call_inputs)
    except Exception as error:  # noqa: BLE001 - a learner's error is reported, not raised
        if isinstance(expected, RuntimeError) and str(expected) in (str(error), type(error).__name__):
            actual = expected
        else:
            return describe_error(error)
    if isinstance(expected, RuntimeError):
        if actual is not expected:
            return (f"eager raises {type(expected).__name__}: {expected}, but your kernel returned "
                    "values: the error must be reported through td_error")
        problem = None
    else:
        problem = compare(actual, expected, case.tolerance, reference="eager")
    if problem:
        return problem
    source = "\n".join(swap.sources[first:])
    for pattern, meaning in case.source_checks:
        if not re.search(pattern, source):
            return f"correct values, but {meaning}"
    return None


def check_cases(case_list, **pieces):
    """Run each case with the learner's pieces swapped in; one failure message per bad case."""
    if "ops" in pieces and missing_ops(pieces["ops"]):
        return [f"your CppOps has no method(s) {', '.join(missing_ops(pieces['ops']))}"]
    try:
        with swapped_codegen(**pieces) as swap:
            return [f"{case.name}: {problem}{case.details}" for case in case_list
                    for problem in [_run_named(case, swap)] if problem]
    except ForbiddenCallError as error:
        return [f"{case.name}: {error}" for case in case_list]


def _run_named(case, swap):
    """run_case, with the case's name left behind for the grader if the kernel crashes Python."""
    with running_case(case.name):
        return run_case(case, swap)


def check_part(part, extra=False, **pieces):
    """The cases of ``part`` with the learner's pieces; one failure per bad case."""
    return check_cases(cases(part, extra), **pieces)


def show_kernels(fn, *inputs, **pieces):
    """Print the C++ kernels that the swapped code generator writes for ``fn(*inputs)`` (without
    the prelude), or what went wrong."""
    if "ops" in pieces and missing_ops(pieces["ops"]):
        print(f"your CppOps has no method(s) {', '.join(missing_ops(pieces['ops']))}")
        return
    with swapped_codegen(**pieces) as swap:
        try:
            compile_and_run(fn, list(inputs))
        except Exception as error:  # noqa: BLE001 - shown, not raised
            print(describe_error(error))
        for source in swap.sources:
            print(source[source.index("// kernel0"):] if "// kernel0" in source else source)


# --------------------------------------------------------------------------- random programs


# The ops this generator draws, by name, from tinydynamo.testing.programs.OPS
UNARY_FLOAT = ("exp", "tanh", "sigmoid", "relu", "gelu", "sqrt_abs", "rsqrt_abs1", "log1p_abs", "reciprocal",
               "floor")
BINARY = ("add", "mul", "maximum", "minimum", "div", "gt", "eq", "lt")
REDUCE_FLOAT = ("mean", "softmax", "log_softmax")
PROGRAM_DTYPES = (f32, f32, f32, f64, i64, i32, b8, bf16)


def random_program(seed, max_steps=6):
    """A small random program, the same for the same seed."""
    rng = random.Random(seed)
    base = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
    inputs = [(tuple(base), rng.choice(PROGRAM_DTYPES), 1000 * seed)]
    for k in range(rng.randint(0, 2)):
        shape = tuple(s if rng.random() < 0.6 else 1 for s in base)
        inputs.append((shape, rng.choice(PROGRAM_DTYPES), 1000 * seed + k + 1))
    program = Program(inputs)
    metas = [torch.empty(shape, dtype=dtype, device="meta") for shape, dtype, _ in inputs]
    computed = []  # values that a kernel computes (the others are views of the inputs)
    for _ in range(rng.randint(2, max_steps)):
        _add_step(program, metas, computed, _random_step(rng, metas, len(inputs)))
    if not computed:  # a program of views only would compile no kernel: compute something
        _add_step(program, metas, computed, _scalar_step(rng, metas, len(metas) - 1, metas[-1], len(inputs)))
    program.dtypes_inside = {m.dtype for m in metas}
    program.outputs = sorted({computed[-1], rng.choice(computed)})
    return program


def _add_step(program, metas, computed, step):
    if step is None:
        return
    program.add_step(metas, step)
    op, operands, params = step
    aliases = op in VIEWS or (op == "to" and params["dtype"] == metas[operands[0]].dtype)
    if not aliases or operands[0] in computed:
        computed.append(len(metas) - 1)


def _broadcasts(a, b):
    try:
        torch.broadcast_shapes(a, b)
        return True
    except RuntimeError:
        return False


STEP_KINDS = ("unary", "unary", "unary", "binary", "binary", "binary", "reduce", "reduce", "view", "view", "to",
              "where", "cat", "scalar", "norm", "reduce_all")


def _random_step(rng, metas, n_inputs, attempts=4):
    """A step on a random value; some kinds do not apply to the value drawn, so draw again."""
    for _ in range(attempts):
        i = rng.randrange(len(metas))
        step = _STEP_MAKERS[rng.choice(STEP_KINDS)](rng, metas, i, metas[i], n_inputs)
        if step is not None:
            return step
    return None


def _unary_step(rng, metas, i, x, n_inputs):
    table = UNARY_FLOAT if x.dtype in FLOATS else UNARY_NUMBER if x.dtype != b8 else {}
    return (rng.choice(sorted(table)), [i], {}) if table else None


def _partners(metas, x, shape=None):
    return [j for j, m in enumerate(metas) if _broadcasts(shape or x.shape, m.shape)
            and (m.dtype == b8) == (x.dtype == b8)]


def _binary_step(rng, metas, i, x, n_inputs):
    j = rng.choice(_partners(metas, x))
    ops = sorted(BINARY) + ([] if x.dtype == b8 else ["sub"])
    return rng.choice(ops), [i, j], {}


def _where_step(rng, metas, i, x, n_inputs):
    j = rng.choice(_partners(metas, x))
    shape = torch.broadcast_shapes(x.shape, metas[j].shape)
    conditions = [k for k, m in enumerate(metas) if m.dtype == b8 and _broadcasts(shape, m.shape)]
    return ("where", [rng.choice(conditions), i, j], {}) if conditions else None


def _reduce_step(rng, metas, i, x, n_inputs):
    if x.ndim == 0:
        return None
    dim = rng.randrange(x.ndim)
    if i < n_inputs and x.dtype != b8 and rng.random() < 0.3:
        return "argmax", [i], {"dim": dim}  # on inputs only: computed values may tie differently
    table = sorted(REDUCE) + (sorted(REDUCE_FLOAT) if x.dtype in FLOATS else [])
    if x.dtype == b8:
        table = ["amax", "amin"]
    return rng.choice(table), [i], {"dim": dim, "keepdim": rng.random() < 0.5}


def _view_step(rng, metas, i, x, n_inputs):
    if x.ndim == 0:
        return None
    kind = rng.choice(["permute", "flatten", "unflatten", "slice", "expand", "transpose_contiguous"])
    if kind == "permute":
        return "permute", [i], {"dims": rng.sample(range(x.ndim), x.ndim)}
    if kind == "flatten" and x.ndim >= 2:
        return "flatten", [i], {"start": rng.randrange(x.ndim - 1)}
    if kind == "unflatten":
        dim = rng.randrange(x.ndim)
        factor = rng.choice([f for f in range(1, x.shape[dim] + 1) if x.shape[dim] % f == 0] or [1])
        return "unflatten", [i], {"dim": dim, "sizes": (factor, x.shape[dim] // factor)}
    if kind == "slice" and all(x.shape):
        dim = rng.randrange(x.ndim)
        return "slice", [i], {"dim": dim, "start": rng.randrange(x.shape[dim]), "step": rng.randint(1, 2)}
    if kind == "expand" and x.ndim < 4:
        return "expand", [i], {"dim": rng.randint(0, x.ndim), "size": rng.randint(1, 3)}
    return "transpose_contiguous", [i], {}


def _to_step(rng, metas, i, x, n_inputs):
    targets = [d for d in PROGRAM_DTYPES if i < n_inputs or not x.dtype.is_floating_point or d in FLOATS]
    return "to", [i], {"dtype": rng.choice(targets)}


def _cat_step(rng, metas, i, x, n_inputs):
    if x.ndim == 0:
        return None
    dim = rng.randrange(x.ndim)
    partners = [j for j, m in enumerate(metas) if m.dtype == x.dtype and m.ndim == x.ndim
                and all(m.shape[d] == x.shape[d] for d in range(x.ndim) if d != dim)]
    return "cat", [i, rng.choice(partners)], {"dim": dim}


def _scalar_step(rng, metas, i, x, n_inputs):
    value = True if x.dtype == b8 else rng.choice([2, -1, 0.5, 3.25] if x.dtype in FLOATS else [2, -1, 3])
    return rng.choice(["scalar_add", "scalar_mul"]), [i], {"s": value}


def _norm_step(rng, metas, i, x, n_inputs):
    return ("layer_norm", [i], {}) if x.dtype in FLOATS and x.ndim else None


def _reduce_all_step(rng, metas, i, x, n_inputs):
    return None if x.dtype == b8 else ("sum_all", [i], {})


_STEP_MAKERS = {"unary": _unary_step, "binary": _binary_step, "where": _where_step, "reduce": _reduce_step,
                "view": _view_step, "to": _to_step, "cat": _cat_step, "scalar": _scalar_step,
                "norm": _norm_step, "reduce_all": _reduce_all_step}


def program_case(seed, max_steps=6):
    program = random_program(seed, max_steps)
    listing = "".join(f"\n    {line}" for line in repr(program).splitlines())
    return Case(f"random program {seed}", program, program.make_inputs, program.tolerance(), details=listing)


def check_programs(seeds, max_steps=6, **pieces):
    """Seeded random programs with the learner's pieces swapped in; one failure per bad program."""
    return check_cases([program_case(seed, max_steps) for seed in seeds], **pieces)


# --------------------------------------------------------------------------- training zoo models


def check_training(name, steps=2, lr=0.05, **pieces):
    """Train zoo model ``name`` with SGD under the inductor backend, with the learner's pieces in
    the code generator; every step's loss and gradients must match eager PyTorch's."""
    return codegen_checks.check_training(name, lambda: swapped_codegen(**pieces), describe_error,
                                         steps, lr)
