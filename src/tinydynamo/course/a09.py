"""Assignment a09 (chapter 11, "Generating Triton"): Triton code for reductions, graded in place.

The learner writes four functions of ``tinydynamo.inductor.codegen.triton``:

1. ``reduction_identity(reduction_type, dtype)``: the value a reduction starts from, as Triton
   source (the lanes past the end of a row hold it);
2. ``persistent_reduction(kernel, body)``: the code of a reduction whose whole row is one tile;
3. ``looped_reduction(kernel, body)``: the code of a reduction that loops over its row in
   chunks of RBLOCK, with a tile of partial results;
4. ``arg_reduction(kernel, body)``: argmax and argmin, persistent and looped.

``swapped_codegen`` puts any of them into the real code generator in place of the reference's
(and restores the reference on exit, even on error). Inside it, graphs go to the Triton code
generator and run in Triton's CPU interpreter (``config.triton_on_cpu``), kernel files go to a
fresh cache directory, errors are raised instead of hidden, and every kernel source generated is
recorded. ``looped=True`` makes rows longer than ``LOOPED_ROW_LIMIT`` elements loop, so that
small tensors exercise looped reductions.

The checkers run real programs through the whole ``inductor`` backend (AOT autograd, prims,
lowering, scheduling, then Triton with the learner's functions): named cases for each part,
seeded random programs (assignment a08's generator), and training steps of zoo models, each
compared with eager PyTorch. A failure names the case and says what went wrong: the largest
error, or the exception with the line of the learner's code or of the generated kernel; and a
looped reduction that reduces across lanes inside its loop. Each call of a learner's function is
stopped after TIME_LIMIT seconds (an infinite loop), and torch._inductor's own reduction
identities (``Reduction.default_value``) are refused to it, as the reference's pieces are.
"""
import contextlib
import dataclasses
import inspect
import math
import re
from typing import Callable

import torch
import torch.nn.functional as F
from triton.runtime.errors import InterpreterError

from .. import config
from ..inductor.codegen import triton as triton_codegen
from . import codegen_checks
from .a07 import compare, error_text
from .checking import (  # noqa: F401 (report: for notebooks)
    TORCH_INDUCTOR_DIR, ForbiddenCallError, call_learner, no_calls_into, no_delegation, report, time_limit,
)
from .a08 import compile_and_run, inputs_of, learner_location, random_program

PIECES = ("reduction_identity", "persistent_reduction", "looped_reduction", "arg_reduction")
# With looped=True, rows longer than this are looped over, in chunks of this many elements.
LOOPED_ROW_LIMIT = 16
TIME_LIMIT = 10  # seconds per call of a learner's function (they take milliseconds)

f16, f32, f64, bf16 = torch.float16, torch.float32, torch.float64, torch.bfloat16
i8, i32, i64, b8 = torch.int8, torch.int32, torch.int64, torch.bool
F32_TOL = dict(atol=1e-4, rtol=1e-4)
F64_TOL = dict(atol=1e-9, rtol=1e-9)
LOW_TOL = dict(atol=3e-2, rtol=3e-2)  # bfloat16 and float16
EXACT = dict(atol=0, rtol=0)


# --------------------------------------------------------------------------- the swap


@dataclasses.dataclass
class Swap:
    """What happened inside ``swapped_codegen``: the Triton kernel files generated."""

    sources: list = dataclasses.field(default_factory=list)


def _recording(swap, codegen):
    def record(self):
        kernels = codegen(self)
        swap.sources += [k.source for pos in sorted(kernels) for k in kernels[pos]]
        return kernels

    return record


# The reference's own pieces, and the helpers they are made of: out of the learner's reach.
REFERENCE_PIECES = tuple(getattr(triton_codegen, name) for name in PIECES + (
    "codegen_reduction", "_reduction_input", "_combine", "_reduce_tile"))


def _guarded(name, fn):
    """The learner's piece, run with the reference's out of its reach (refused if it is one)."""
    if fn in REFERENCE_PIECES or inspect.unwrap(fn) in REFERENCE_PIECES:
        raise ForbiddenCallError(f"your {name} is the reference's own {fn.__qualname__}: "
                                 "write it yourself")

    def piece(*args, **kwargs):
        # piece: what the reference's names now hold
        with no_delegation(*REFERENCE_PIECES, piece), time_limit(TIME_LIMIT, f"your {name}"):
            return call_learner(fn, *args, **kwargs)

    return piece


@contextlib.contextmanager
def swapped_codegen(looped=False, **pieces):
    """The Triton code generator with the learner's functions (keyword arguments named as in
    ``PIECES``) in place of the reference's. Yields a :class:`Swap`."""
    unknown = sorted(set(pieces) - set(PIECES))
    if unknown:
        raise TypeError(f"swapped_codegen: unknown piece(s) {unknown}; the pieces are {PIECES}")
    swap = Swap()
    replaced = {name: _guarded(name, fn) for name, fn in pieces.items() if fn is not None}
    if looped:
        replaced["PERSISTENT_REDUCTION_MAX"] = LOOPED_ROW_LIMIT
    originals = {name: getattr(triton_codegen, name) for name in replaced}
    original_codegen = triton_codegen.TritonScheduling.codegen
    try:
        for name, value in replaced.items():
            setattr(triton_codegen, name, value)
        triton_codegen.TritonScheduling.codegen = _recording(swap, original_codegen)
        with codegen_checks.fresh_cache_dir(prefix="tinydynamo-a09-") as cache_dir, \
                config.patch(cache_dir=cache_dir, suppress_errors=False, triton_on_cpu=True), \
                (no_calls_into(TORCH_INDUCTOR_DIR) if replaced else contextlib.nullcontext()):  # its Reduction.default_value
            yield swap
    finally:
        for name, value in originals.items():
            setattr(triton_codegen, name, value)
        triton_codegen.TritonScheduling.codegen = original_codegen


def describe_error(error):
    """What an exception raised while generating or running a program says, for feedback."""
    if isinstance(error, SyntaxError) and error.filename and "triton" in error.filename:
        line = (error.text or "").strip()
        return f"the generated kernel is not valid Python: {error.msg} (line {error.lineno}: {line})"
    inner = error
    while isinstance(inner, InterpreterError) and inner.__cause__ is not None:
        inner = inner.__cause__  # the interpreter wraps the error that the kernel raised
    if inner is not error:
        return f"the generated Triton kernel failed: {error_text(inner)}{learner_location(inner)}"
    return f"raised {error_text(error)}{learner_location(error)}"


# --------------------------------------------------------------------------- named cases


@dataclasses.dataclass
class Case:
    """A function of torch ops, its inputs, and how to compare with eager."""

    name: str
    fn: Callable
    make_inputs: Callable  # () -> list of tensors, the same on every call
    tolerance: dict = dataclasses.field(default_factory=lambda: dict(F32_TOL))
    looped: bool = False  # run with rows longer than LOOPED_ROW_LIMIT looped over
    details: str = ""  # shown after a failure (a random program's listing)


def _edit(fn):
    """A make_inputs edit that changes the first tensor in place."""
    def edit(made):
        fn(made[0])

    return edit


def _nan_rows(x):
    x[1, 3] = math.nan
    x[-1, -1] = math.nan  # in the last chunk of a looped row


def _infinite_rows(x):
    x[0] = -math.inf
    x[1, ::2] = math.inf


def _ties(x):
    x[:, :] = x.round().clamp(-1, 1)


def _extremes(x):
    info = torch.iinfo(x.dtype)
    x[0] = info.max
    x[1] = info.min


def _large_int64(x):
    x[:] = 2 ** 40 + torch.arange(x.numel()).reshape(x.shape) * 7 + 1  # a float accumulator rounds these


def _negative_rows(x):
    x[:] = -(x.abs() + 1)


def _first_nan_after_the_max(x):
    x[0, 2] = 100.0
    x[0, -3] = math.nan
    x[1, -1] = 100.0  # the largest value at the very end
    x[2, 5] = x[2, -2] = 100.0  # equal largest values in different chunks


def _identity_cases():
    basic = [
        Case("sum of rows of 5 f32[4, 5]", lambda x: x.sum(1), inputs_of(((4, 5), f32))),
        Case("amax of a row of -inf f32[3, 7]", lambda x: x.amax(1), inputs_of(((3, 7), f32), edit=_edit(_infinite_rows))),
        Case("amin of rows with inf f32[3, 7]", lambda x: x.amin(1), inputs_of(((3, 7), f32), edit=_edit(_infinite_rows))),
        Case("prod of rows of 5 i64[3, 5]", lambda x: x.prod(1), inputs_of(((3, 5), i64))),
        Case("amax and amin i32[3, 5] with the extreme int32 values", lambda x: (x.amax(1), x.amin(1)),
             inputs_of(((3, 5), i32), edit=_edit(_extremes)), EXACT),
        Case("any and all (amax, amin) b8[4, 5]", lambda x: (x.amax(1), x.amin(1)), inputs_of(((4, 5), b8)), EXACT),
    ]
    extra = [
        Case("amax and amin i64[3, 6] with the extreme int64 values", lambda x: (x.amax(1), x.amin(1)),
             inputs_of(((3, 6), i64), edit=_edit(_extremes)), EXACT),
        Case("argmax and argmin of rows of ±inf f32[3, 7]", lambda x: (x.argmax(1), x.argmin(1)),
             inputs_of(((3, 7), f32), edit=_edit(_infinite_rows)), EXACT),
        Case("max of uint8 values u8[3, 5]", lambda x: (x.abs() * 60).to(torch.uint8).amax(1),
             inputs_of(((3, 5), f32)), EXACT),
        Case("amax of a row of -inf, looped f32[3, 37]", lambda x: x.amax(1),
             inputs_of(((3, 37), f32), edit=_edit(_infinite_rows)), looped=True),
        Case("amin and prod, looped i32[3, 37]", lambda x: (x.amin(1), (x.sign() + 2).prod(1)),
             inputs_of(((3, 37), i32)), EXACT, looped=True),
        Case("sum and any, looped bf16[2, 40] and b8[2, 40]", lambda x, m: (x.sum(1), m.amax(1)),
             inputs_of(((2, 40), bf16), ((2, 40), b8)), LOW_TOL, looped=True),
        Case("sum of large int64 values i64[3, 9]", lambda x: x.sum(1),
             inputs_of(((3, 9), i64), edit=_edit(_large_int64)), EXACT),
    ]
    return basic, extra


def _persistent_cases():
    basic = [
        Case("softmax rows f32[6, 40]", lambda x: torch.softmax(x, -1), inputs_of(((6, 40), f32))),
        Case("layer_norm f32[5, 48]", lambda x: F.layer_norm(x, (48,)), inputs_of(((5, 48), f32))),
        Case("sum over columns f32[9, 7]", lambda x: x.sum(0), inputs_of(((9, 7), f32))),
        Case("amax and amin with nan f32[4, 9]", lambda x: (x.amax(1), x.amin(1)),
             inputs_of(((4, 9), f32), edit=_edit(_nan_rows))),
        Case("sum of int32 rows i32[4, 9]", lambda x: x.sum(1), inputs_of(((4, 9), i32)), EXACT),
        Case("sum of a value that is the same along the row f32[4, 1] -> [4, 6]",
             lambda x: x.expand(4, 6).sum(1), inputs_of(((4, 1), f32))),
    ]
    extra = [
        Case("prod f64[3, 6]", lambda x: x.prod(1), inputs_of(((3, 6), f64)), F64_TOL),
        Case("sum of a constant row plus x f32[4]", lambda x: torch.full((4, 7), 2.5).sum(1) + x,
             inputs_of(((4,), f32))),
        Case("any and all b8[5, 9]", lambda x: (x.amax(1), x.amin(1)), inputs_of(((5, 9), b8)), EXACT),
        Case("int8 sums that wrap around i8[3, 30]", lambda x: (x * 20).sum(1, dtype=torch.int8),
             inputs_of(((3, 30), i8)), EXACT),
        Case("int8 max fused with arithmetic that wraps around in int8 i8[4, 12]: (x.amax(1) * 100) // 7",
             lambda x: (x.amax(1) * 100) // 7, inputs_of(((4, 12), i8)), EXACT),
        Case("mean and var f64[4, 10]", lambda x: (x.mean(1), x.var(1)), inputs_of(((4, 10), f64)), F64_TOL),
        Case("log_softmax bf16[4, 20]", lambda x: torch.log_softmax(x, -1), inputs_of(((4, 20), bf16)), LOW_TOL),
        Case("mean of float16 rows f16[3, 17]", lambda x: x.mean(1), inputs_of(((3, 17), f16)), LOW_TOL),
        Case("sum over the middle dim f32[3, 5, 4]", lambda x: x.sum(1).exp(), inputs_of(((3, 5, 4), f32))),
        Case("the sum of all elements f32[37]", lambda x: x.sum(), inputs_of(((37,), f32))),
        Case("sum of a float64 constant row plus x f64[4]", lambda x: torch.full((4, 7), 0.1, dtype=f64).sum(1) + x,
             inputs_of(((4,), f64)), F64_TOL),
        Case("amax and amin with nan f64[4, 9]", lambda x: (x.amax(1), x.amin(1)),
             inputs_of(((4, 9), f64), edit=_edit(_nan_rows)), F64_TOL),
        Case("prod of integers i64[3, 5]", lambda x: x.prod(1), inputs_of(((3, 5), i64)), EXACT),
    ]
    return basic, extra


def _looped_cases():
    basic = [
        Case("softmax rows f32[6, 40]", lambda x: torch.softmax(x, -1), inputs_of(((6, 40), f32)), looped=True),
        Case("sum of rows f32[5, 100]", lambda x: x.sum(1), inputs_of(((5, 100), f32)), looped=True),
        Case("layer_norm f32[3, 50]", lambda x: F.layer_norm(x, (50,)), inputs_of(((3, 50), f32)), looped=True),
        Case("amax and amin with nan in the last chunk f32[4, 40]", lambda x: (x.amax(1), x.amin(1)),
             inputs_of(((4, 40), f32), edit=_edit(_nan_rows)), looped=True),
        Case("sum of int64 rows i64[3, 45]", lambda x: x.sum(1), inputs_of(((3, 45), i64)), EXACT, looped=True),
    ]
    extra = [
        Case("prod f64[3, 40]", lambda x: (1 + x / 20).prod(1), inputs_of(((3, 40), f64)), F64_TOL, looped=True),
        Case("amin of rows with -inf f32[3, 33]", lambda x: x.amin(1),
             inputs_of(((3, 33), f32), edit=_edit(_infinite_rows)), looped=True),
        Case("any and all b8[3, 40]", lambda x: (x.amax(1), x.amin(1)), inputs_of(((3, 40), b8)), EXACT, looped=True),
        Case("mean bf16[3, 40]", lambda x: x.mean(1), inputs_of(((3, 40), bf16)), LOW_TOL, looped=True),
        Case("sum over columns f32[50, 6]", lambda x: x.sum(0), inputs_of(((50, 6), f32)), looped=True),
        Case("rows of exactly two chunks f32[3, 32]", lambda x: (x.sum(1), x.amax(1)), inputs_of(((3, 32), f32)),
             looped=True),
        Case("sum of a value that is the same along the row f32[4, 1] -> [4, 40]",
             lambda x: x.expand(4, 40).sum(1), inputs_of(((4, 1), f32)), looped=True),
        Case("variance f32[2, 3, 30] over the last two dims", lambda x: x.var((1, 2)), inputs_of(((2, 3, 30), f32)),
             looped=True),
        Case("the sum of all elements f32[300]", lambda x: x.sum(), inputs_of(((300,), f32)), looped=True),
        Case("amax and amin with nan, looped bf16[4, 40]", lambda x: (x.amax(1), x.amin(1)),
             inputs_of(((4, 40), bf16), edit=_edit(_nan_rows)), LOW_TOL, looped=True),
        Case("prod of integers, looped i32[3, 37]", lambda x: (x.sign() + 2).prod(1), inputs_of(((3, 37), i32)),
             EXACT, looped=True),
    ]
    return basic, extra


def _arg_cases():
    basic = [
        Case("argmax and argmin with ties i64[5, 8]", lambda x: (x.argmax(1), x.argmin(0)),
             inputs_of(((5, 8), i64), edit=_edit(_ties)), EXACT),
        Case("argmax and argmin with nan f32[4, 9]", lambda x: (x.argmax(1), x.argmin(1)),
             inputs_of(((4, 9), f32), edit=_edit(_nan_rows)), EXACT),
        Case("argmax, looped, with equal maxima in two chunks f32[3, 40]", lambda x: x.argmax(1),
             inputs_of(((3, 40), f32), edit=_edit(_first_nan_after_the_max)), EXACT, looped=True),
        Case("argmin with ties, looped i32[4, 37]", lambda x: x.argmin(1),
             inputs_of(((4, 37), i32), edit=_edit(_ties)), EXACT, looped=True),
    ]
    extra = [
        Case("argmax of rows of -inf f32[3, 7]", lambda x: x.argmax(1),
             inputs_of(((3, 7), f32), edit=_edit(_infinite_rows)), EXACT),
        Case("argmax and argmin of uint8 values u8[4, 6]",
             lambda x: ((x > 0).to(torch.uint8).argmax(1), (x > 0).to(torch.uint8).argmin(1)),
             inputs_of(((4, 6), f32)), EXACT),
        Case("argmin of extreme int64 values i64[3, 5]", lambda x: x.argmin(1),
             inputs_of(((3, 5), i64), edit=_edit(_extremes)), EXACT),
        Case("argmax over dim 0 f32[9, 5]", lambda x: x.argmax(0), inputs_of(((9, 5), f32)), EXACT),
        Case("argmin with nan, looped f32[4, 40]", lambda x: x.argmin(1),
             inputs_of(((4, 40), f32), edit=_edit(_nan_rows)), EXACT, looped=True),
        Case("argmax of rows of -inf, looped f32[3, 35]", lambda x: x.argmax(1),
             inputs_of(((3, 35), f32), edit=_edit(_infinite_rows)), EXACT, looped=True),
        Case("argmax of int8 values, looped i8[3, 40]", lambda x: x.argmax(1), inputs_of(((3, 40), i8)), EXACT,
             looped=True),
        Case("argmax of a whole tensor bf16[50]", lambda x: x.argmax(), inputs_of(((50,), bf16)), EXACT,
             looped=True),
        Case("argmax of negative rows, looped f32[3, 40]", lambda x: x.argmax(1),
             inputs_of(((3, 40), f32), edit=_edit(_negative_rows)), EXACT, looped=True),
        Case("argmin of positive rows, looped f32[3, 40]", lambda x: x.argmin(1),
             inputs_of(((3, 40), f32), edit=_edit(lambda x: x.abs_().add_(1))), EXACT, looped=True),
    ]
    return basic, extra


_CASES = {"identity": _identity_cases, "persistent": _persistent_cases, "looped": _looped_cases,
          "arg": _arg_cases}


def cases(part, extra=False):
    """The named cases of a part ("identity", "persistent", "looped", "arg"): visible, or extra."""
    basic, more = _CASES[part]()
    return more if extra else basic


def run_case(case, **pieces):
    """None if ``case`` gives eager's result with the learner's pieces swapped in, else why not."""
    inputs = case.make_inputs()
    expected = case.fn(*inputs)
    with swapped_codegen(looped=case.looped, **pieces) as swap:
        try:
            actual = compile_and_run(case.fn, inputs)
        except Exception as error:  # noqa: BLE001 - a learner's error is reported, not raised
            return describe_error(error)
    problem = compare(actual, expected, case.tolerance, reference="eager")
    reducing = next(filter(None, map(reduced_inside_a_loop, swap.sources)), None)
    if problem or not reducing:
        return problem
    return (f"correct values, but a looped reduction reduces across lanes inside its loop (`{reducing}`): "
            "fold each chunk into the [XBLOCK, RBLOCK] accumulator lane by lane, and reduce the lanes "
            "once, after the loop")


CROSS_LANE = re.compile(r"\btl\.(?:sum|max|min|reduce)\(|\w+_propagate_nan\(|\w+_first\(")


def reduced_inside_a_loop(source):
    """The first line inside a ``for roffset`` loop of a kernel's source that reduces across lanes,
    or None."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("for roffset"):
            indent = len(line) - len(line.lstrip())
            for inner in lines[i + 1:]:
                if inner.strip() and len(inner) - len(inner.lstrip()) <= indent:
                    break
                if CROSS_LANE.search(inner):
                    return inner.strip()
    return None


def check_cases(case_list, **pieces):
    """Run each case with the learner's pieces swapped in; one failure message per bad case."""
    failures = []
    for case in case_list:
        try:
            problem = run_case(case, **pieces)
        except ForbiddenCallError as error:  # a reference piece handed over as the learner's
            problem = str(error)
        if problem:
            mode = " (looped)" if case.looped else ""
            failures.append(f"{case.name}{mode}: {problem}{case.details}")
    return failures


def check_part(part, extra=False, **pieces):
    """The cases of ``part`` with the learner's pieces; one failure per bad case."""
    return check_cases(cases(part, extra), **pieces)


def show_kernels(fn, *inputs, looped=False, **pieces):
    """Print the Triton kernels that the swapped code generator writes for ``fn(*inputs)``, with
    eager's and the compiled result's largest difference, or what went wrong."""
    with swapped_codegen(looped=looped, **pieces) as swap:
        try:
            actual = compile_and_run(fn, list(inputs))
            problem = compare(actual, fn(*inputs), None, reference="eager")
        except Exception as error:  # noqa: BLE001 - shown, not raised
            problem = describe_error(error)
    for source in swap.sources:
        print(source[source.index("@triton.jit\ndef triton_"):] if "\ndef triton_" in source else source)
    print(problem or "the result matches eager")


# --------------------------------------------------------------------------- random programs


def program_case(seed, looped):
    program = random_program(seed)
    listing = "".join(f"\n    {line}" for line in repr(program).splitlines())
    return Case(f"random program {seed}", program, program.make_inputs, program.tolerance(), looped, listing)


def check_programs(seeds, looped=False, **pieces):
    """Seeded random programs with the learner's pieces swapped in; one failure per bad program."""
    return check_cases([program_case(seed, looped) for seed in seeds], **pieces)


# --------------------------------------------------------------------------- training zoo models


def check_training(name, steps=2, lr=0.05, looped=False, **pieces):
    """Train zoo model ``name`` with SGD under the inductor backend, with the learner's pieces in
    the Triton code generator; every step's loss and gradients must match eager PyTorch's."""
    return codegen_checks.check_training(name, lambda: swapped_codegen(looped=looped, **pieces),
                                         describe_error, steps, lr)
