"""Assignment a10 (chapter 12, "Dynamic shapes"): range analysis and automatic dynamic, graded inside dynamo.

The learner writes two pieces of tinydynamo's dynamic shapes:

- the **range analysis** of the ShapeEnv: ``bounds(expr)``, an interval that holds a size
  expression for every size (each symbol is at least 2), and ``static_value(condition)``, which
  decides a condition on sizes for every size (True, False) or leaves it to a guard (None);
- the **automatic-dynamic policy**: ``SizeHistory``, what a code object remembers of the sizes its
  compiles saw (``update`` and ``dynamic_dims``), and ``dims_to_trace``, which dimensions of an
  input tensor the next trace makes symbols.

``swapped`` puts them into the real pipeline: ``ShapeEnv.bounds`` and ``ShapeEnv.static_value``
call the learner's functions, ``automatic_dynamic.FrameState`` is the learner's class, and
``output_graph.dynamic_dims`` asks the learner's ``dims_to_trace``. The checkers compile functions,
zoo models and a transformers GPT-2 with ``tinydynamo.compile``, call them over changing sizes,
compare every result with eager PyTorch, and compare every compile, every symbolic graph input
and every guard on sizes with what the reference does on the same calls. What the learner's range
analysis decides is also checked directly, by evaluating the expression at many sizes.

While the learner's pieces are graded, the reference's own (``ShapeEnv.bounds``,
``ShapeEnv.static_value`` and its helpers, ``FrameState``'s methods, ``dynamic_dims``) refuse the
learner's calls.
"""
import contextlib
import dataclasses
import itertools
import os
import random
import re
import sys
import textwrap

import sympy
import torch

import tinydynamo

from .. import config
from ..backends import DYNAMIC_SHAPE_BACKENDS, lookup_backend
from ..dynamo import automatic_dynamic, output_graph
from ..dynamo.automatic_dynamic import DYNAMIC_DIMS, STATIC_DIMS, FrameState
from ..symbolic_shapes import FloorDiv, ShapeEnv, multiply_intervals, to_python
from ..testing.models import make
from .a02 import difference, learner_location, user_module
from .checking import _is_learners, _refuse, call_learner, no_calls_into, no_delegation, time_limit

s0, s1, s2 = (sympy.Symbol(f"s{i}", integer=True, positive=True) for i in range(3))
oo = sympy.oo
RELATIONS = (sympy.Eq, sympy.Ne, sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge)


# Seconds one call of a learner's piece may run (they take milliseconds): past it, an infinite loop
# is reported as a failure of the expression, condition or case that ran it.
TIME_LIMIT = 10


def _timed(fn, *args):
    """``fn(*args)``, the learner's, stopped by a LearnerTimeout past TIME_LIMIT."""
    with time_limit(TIME_LIMIT, "the call"):
        return call_learner(fn, *args)


def marked_dynamic(tensor):
    """The dimensions ``tinydynamo.mark_dynamic`` marked on ``tensor``."""
    return set(getattr(tensor, DYNAMIC_DIMS, set()))


def marked_static(tensor):
    """The dimensions ``tinydynamo.mark_static`` marked on ``tensor``."""
    return set(getattr(tensor, STATIC_DIMS, set()))


def show(expr):
    """A size expression as the guards print it (``s0 // 2``, ``s0 % 4``)."""
    return to_python(sympy.sympify(expr), str)


# --------------------------------------------------------------------------- checking by evaluation
VALUES = (2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 31, 64, 1000)


def assignments(symbols):
    """Values of ``symbols`` (each >= 2) to evaluate an expression at: all combinations for one or two
    symbols, a fixed sample for more."""
    symbols = sorted(symbols, key=str)
    if len(symbols) <= 2:
        return [dict(zip(symbols, values)) for values in itertools.product(VALUES, repeat=len(symbols))]
    rng = random.Random(0)
    corners = [dict.fromkeys(symbols, v) for v in (2, 3, 1000)]
    return corners + [{s: rng.choice(VALUES) for s in symbols} for _ in range(300)]


def value_at(expr, values):
    return expr.xreplace({s: sympy.Integer(v) for s, v in values.items()})


def described(values):
    return ", ".join(f"{s} = {v}" for s, v in sorted(values.items(), key=lambda item: str(item[0])))


def bounds_counterexample(expr, lo, hi):
    """Sizes at which ``expr`` is outside [lo, hi], described, or None."""
    for values in assignments(expr.free_symbols):
        value = value_at(expr, values)
        if value.is_number and (value < lo or value > hi):
            return f"{described(values)} makes it {value}"
    return None


def decision_counterexample(condition, answer):
    """Sizes at which ``condition`` is not ``answer``, described, or None."""
    for values in assignments(condition.free_symbols):
        value = value_at(condition, values)
        if value in (sympy.true, sympy.false) and bool(value) != answer:
            return f"{described(values)} makes it {bool(value)}"
    return None


# --------------------------------------------------------------------------- the swap-in
class LearnerError(Exception):
    """The learner's function raised, or returned something the pipeline cannot use."""


@dataclasses.dataclass
class Record:
    """What the learner's range analysis answered while a case ran."""

    bounds: dict = dataclasses.field(default_factory=dict)  # expr -> (lo, hi)
    decisions: dict = dataclasses.field(default_factory=dict)  # condition -> True/False/None
    errors: list = dataclasses.field(default_factory=list)  # LearnerError messages


def _number(value):
    value = sympy.sympify(value)
    if not (value.is_number and (value.is_real or value in (oo, -oo))):
        raise TypeError
    return value


def call_bounds(bounds, expr, record=None):
    """``bounds(expr)``, checked: a pair of numbers (or ±sympy.oo) with lo <= hi."""
    where = f"bounds({show(expr)})"
    try:
        result = _timed(bounds, expr)
    except LearnerError:
        raise
    except Exception as e:  # noqa: BLE001 - reported with the expression that triggered it
        raise _error(record, f"{where} raised {type(e).__name__}{learner_location(e)}: {e}") from None
    try:
        lo, hi = (_number(v) for v in result)
    except Exception:  # noqa: BLE001
        raise _error(record, f"{where} returned {result!r}: return (lo, hi), two numbers or "
                             "-sympy.oo / sympy.oo") from None
    if lo == sympy.nan or hi == sympy.nan or lo > hi:
        raise _error(record, f"{where} returned ({lo}, {hi}): not an interval (lo > hi or nan)")
    if record is not None:
        record.bounds.setdefault(expr, (lo, hi))
    return lo, hi


def call_static_value(static_value, condition, record=None):
    """``static_value(condition)``, checked: True, False or None."""
    where = f"static_value({show(condition)})"
    try:
        result = _timed(static_value, condition)
    except LearnerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise _error(record, f"{where} raised {type(e).__name__}{learner_location(e)}: {e}") from None
    if not isinstance(result, (bool, type(None), sympy.logic.boolalg.BooleanAtom)):
        raise _error(record, f"{where} returned {result!r}: return True, False or None")
    result = None if result is None else bool(result)
    if record is not None:
        record.decisions.setdefault(condition, result)
    return result


def _error(record, message):
    if record is not None:
        record.errors.append(message)
    return LearnerError(message)


class CheckedHistory:
    """Wraps the learner's SizeHistory class: every call checked, errors named."""

    def __init__(self, history_class, record):
        self.record = record
        try:
            self.history = _timed(history_class)
        except Exception as e:  # noqa: BLE001
            raise _error(record, f"SizeHistory() raised {type(e).__name__}{learner_location(e)}: {e}") from None

    def update(self, source_name, shape):
        where = f"SizeHistory.update({source_name!r}, {tuple(shape)})"
        try:
            changed = _timed(self.history.update, source_name, tuple(shape))
        except Exception as e:  # noqa: BLE001
            raise _error(self.record, f"{where} raised {type(e).__name__}{learner_location(e)}: {e}") from None
        try:
            return [int(d) for d in changed]
        except Exception:  # noqa: BLE001
            raise _error(self.record, f"{where} returned {changed!r}: return the list of the dimensions "
                                      "that changed size") from None

    def dynamic_dims(self, source_name):
        where = f"SizeHistory.dynamic_dims({source_name!r})"
        try:
            dims = _timed(self.history.dynamic_dims, source_name)
        except Exception as e:  # noqa: BLE001
            raise _error(self.record, f"{where} raised {type(e).__name__}{learner_location(e)}: {e}") from None
        try:
            return {int(d) for d in dims}
        except Exception:  # noqa: BLE001
            raise _error(self.record, f"{where} returned {dims!r}: return a set of dimensions (ints)") from None


def checked_dims(dims_to_trace, record):
    """``output_graph.dynamic_dims`` that asks the learner's ``dims_to_trace``."""
    def dynamic_dims(policy, code, source, tensor, is_module_state):
        history = automatic_dynamic.frame_state(code)
        where = (f"dims_to_trace({policy!r}, history, {source.name()!r}, <tensor of shape {tuple(tensor.shape)}>, "
                 f"is_module_state={is_module_state})")
        try:
            result = _timed(dims_to_trace, policy, history, source.name(), tensor, is_module_state)
        except Exception as e:  # noqa: BLE001
            raise _error(record, f"{where} raised {type(e).__name__}{learner_location(e)}: {e}") from None
        try:
            dims = {int(d) for d in result}
        except Exception:  # noqa: BLE001
            raise _error(record, f"{where} returned {result!r}: return a set of dimensions (ints)") from None
        bad = sorted(d for d in dims if not 0 <= d < tensor.dim())
        if bad:
            raise _error(record, f"{where} returned {sorted(dims)}: dimension(s) {bad} do not exist "
                                 f"(give dimensions as 0 .. {tensor.dim() - 1})")
        small = sorted(d for d in dims if tensor.shape[d] < 2)
        if small:
            raise _error(record, f"{where} returned {sorted(dims)}: dimension(s) {small} have size "
                                 f"{[tensor.shape[d] for d in small]}; sizes 0 and 1 are never symbols")
        return dims
    return dynamic_dims


# The reference functions the learner's replace: they refuse the learner's calls while graded.
_REFUSED = (ShapeEnv.bounds, ShapeEnv.static_value, ShapeEnv.difference_bounds, ShapeEnv.drop_trivial_mods,
             multiply_intervals, FrameState.update, FrameState.dynamic_dims, automatic_dynamic.dynamic_dims,
             # the ShapeEnv's ways to ask its static_value and bounds (a learner's pieces need none of them)
             ShapeEnv._maybe_evaluate_static, ShapeEnv.evaluate_condition, ShapeEnv.simplify_condition,
             ShapeEnv.specialize, ShapeEnv.add_guard, ShapeEnv.evaluate_sym_node, ShapeEnv._implies)
# torch's own range analysis (torch.utils._sympy.value_ranges), which part 1 asks the learner to write
TORCH_SYMPY_DIR = os.path.join(os.path.dirname(torch.__file__), "utils", "_sympy", "")


@contextlib.contextmanager
def swapped(bounds=None, static_value=None, history=None, dims_to_trace=None, record=None):
    """Use the learner's pieces (those not None) inside tinydynamo while the block runs; the
    reference's for the others. Caches are cleared on entry and exit, and the reference comes
    back even if the block raises."""
    record = record if record is not None else Record()
    saved = (ShapeEnv.bounds, ShapeEnv.static_value, automatic_dynamic.FrameState, output_graph.dynamic_dims)
    tinydynamo.reset()
    try:
        with config.patch(suppress_errors=False, strict=True), no_delegation(*_REFUSED), \
                no_calls_into(TORCH_SYMPY_DIR):
            if bounds is not None:
                ShapeEnv.bounds = lambda self, expr: call_bounds(bounds, expr, record)
            if static_value is not None:
                ShapeEnv.static_value = lambda self, condition: call_static_value(static_value, condition, record)
            if history is not None:
                automatic_dynamic.FrameState = lambda: CheckedHistory(history, record)
                automatic_dynamic.reset()
            if dims_to_trace is not None:
                output_graph.dynamic_dims = checked_dims(dims_to_trace, record)
            yield record
    finally:
        ShapeEnv.bounds, ShapeEnv.static_value, automatic_dynamic.FrameState, output_graph.dynamic_dims = saved
        automatic_dynamic.reset()
        tinydynamo.reset()


# --------------------------------------------------------------------------- direct cases
BOUNDS_EXAMPLES = [s0, 3 * s0 + 1, s0 - 1, s0 * s1, sympy.Mod(s0, 4), FloorDiv(s0, 2), sympy.Integer(7)]
BOUNDS_CASES = [
    -s0, 2 - s0, -2 * s0 * s1, s0 * s1 - 5, 4 * s0 - 3 * s1, FloorDiv(s0 + 1, 4), FloorDiv(3 * s0, 2) - 1,
    sympy.Mod(2 * s0 + 1, 3), s1 * sympy.Mod(s0, 4), sympy.Mod(s0, 4) - 3, sympy.Max(s0, 5), sympy.Min(s0, 5),
    sympy.Min(s0, s1) - 2, sympy.Max(s0 - 10, 1), FloorDiv(s0, 2) * s2, 64 * s0 * s1 * s2, sympy.Integer(-3),
    s0 ** 2, sympy.Mod(s0, s1), sympy.floor(-sympy.Rational(7, 5) * s0), sympy.Mod(2, s0), FloorDiv(s0, s1),
    sympy.Max(s0 - 5, s1 - 10, s2 + 1), FloorDiv(s0, -2), sympy.Mod(-s0, s1), FloorDiv(sympy.Mod(s0, 4), 2),
    FloorDiv(sympy.Min(s0, 5), 2), sympy.Rational(3, 2) * s0 - 1, s0 ** -1, sympy.Mod(s0, -3),
]

STATIC_EXAMPLES = [
    sympy.Ge(s0, 2), sympy.Eq(s0, 1), sympy.Gt(s0, 2), sympy.Lt(s0, s1), sympy.Ne(s0 * s1, s0),
    sympy.Eq(sympy.Mod(s0, 2), 0),
]
STATIC_CASES = [
    sympy.Gt(s0, 1), sympy.Lt(s0, 2), sympy.Le(s0, 2), sympy.Ge(s0, 3), sympy.Ne(s0, 1), sympy.Eq(2 * s0, 3),
    sympy.Ne(s0 * s1, s1), sympy.Gt(s0 * s1, s0), sympy.Le(s0, s0 * s1), sympy.Lt(s0 * s1 * s2, s0),
    sympy.Eq(s0 * s1 - s0, 0), sympy.Lt(sympy.Mod(s0, 4), 4), sympy.Ge(sympy.Mod(s0, 4), 1),
    sympy.Le(FloorDiv(s0, 2), s0), sympy.Eq(FloorDiv(s0, 2), 1), sympy.Ne(FloorDiv(s0, 2), 0),
    sympy.Gt(s0 - 2, 0), sympy.Ge(s0 - 2, 0), sympy.Lt(-s0, -1), sympy.Le(-s0, -3),
    sympy.Eq(sympy.Mod(1, s0), 1), sympy.Ne(sympy.Mod(1, s0), 0), sympy.Lt(2 - s0, 0),
    sympy.Ne(s0 * (s1 + 1), s0 * s1 + s0), sympy.Eq(sympy.Mod(1, s0), 0), sympy.Gt(2 - s0, 0),
    sympy.Ge(2 - s0, 0), sympy.Le(2, s0),
    sympy.And(sympy.Ge(s0, 2), sympy.Ge(s1, 2)), sympy.Or(sympy.Eq(s0, 2), sympy.Eq(sympy.Mod(s0, 2), 0)),
    sympy.true, sympy.false, sympy.And(sympy.Gt(s0, 2), sympy.Ge(s1, 2)), sympy.Eq(1, s0), sympy.Eq(s0, s0 * s1),
]


# The reference's own functions, taken before any swap. The checkers compare with them; a learner's
# call is refused, like a call of ShapeEnv.bounds itself.
_REFERENCE_BOUNDS, _REFERENCE_STATIC_VALUE = ShapeEnv.bounds, ShapeEnv.static_value


def _expected_bounds(expr):
    if _is_learners(sys._getframe(1)):
        _refuse("a10._expected_bounds")
    return _REFERENCE_BOUNDS(ShapeEnv(), expr)


def _expected_decision(condition):
    if _is_learners(sys._getframe(1)):
        _refuse("a10._expected_decision")
    return _REFERENCE_STATIC_VALUE(ShapeEnv(), condition)


def bounds_problems(bounds, expr, record=None):
    """What is wrong with ``bounds(expr)``: unsound (a size outside the interval), or looser than
    the range analysis this course asks for."""
    try:
        lo, hi = call_bounds(bounds, expr, record)
    except LearnerError as e:
        return [str(e)]
    counterexample = bounds_counterexample(expr, lo, hi)
    if counterexample:
        return [f"bounds({show(expr)}) returned ({lo}, {hi}), but {counterexample}: UNSOUND"]
    want_lo, want_hi = _expected_bounds(expr)
    if lo < want_lo or hi > want_hi:
        return [f"bounds({show(expr)}) returned ({lo}, {hi}): TOO LOOSE, expected an interval within "
                f"({want_lo}, {want_hi})"]
    return []


def static_problems(static_value, condition, record=None):
    try:
        answer = call_static_value(static_value, condition, record)
    except LearnerError as e:
        return [str(e)]
    return decision_problems(condition, answer)


def decision_problems(condition, answer):
    """A decision is wrong if some size contradicts it, and too weak if it leaves to a guard what
    the course's range analysis decides."""
    if answer is not None:
        counterexample = decision_counterexample(condition, answer)
        if counterexample:
            return [f"static_value({show(condition)}) returned {answer}, but {counterexample}: UNSOUND "
                    "(a graph traced for some sizes would run for others it is wrong for)"]
        return []
    expected = _expected_decision(condition)
    if expected is not None:
        return [f"static_value({show(condition)}) returned None: NEEDLESS GUARD, it is {expected} for "
                "every size (each symbol is at least 2)"]
    return []


def check_bounds(bounds, exprs=BOUNDS_EXAMPLES):
    with swapped():
        return [problem for expr in exprs for problem in bounds_problems(bounds, expr)]


def check_static_value(static_value, conditions=STATIC_EXAMPLES):
    with swapped():
        return [problem for condition in conditions for problem in static_problems(static_value, condition)]


# --------------------------------------------------------------------------- cases in the pipeline
PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport tinydynamo\n"


@dataclasses.dataclass
class Case:
    """A function (or model) of a learner's project, compiled with ``dynamic`` and called with the
    arguments that ``calls`` make, one after the other (each an expression evaluated in the module).

    ``source`` is the module's code, run after ``PRELUDE``; ``target`` names the function or model.
    """

    name: str
    source: str
    target: str
    calls: list
    dynamic: object = None
    backend: str = "eager"

    def __str__(self):
        calls = "\n".join(f"    {target}({call})" for target, call in zip([self.target] * len(self.calls), self.calls))
        return (f"case {self.name!r} (dynamic={self.dynamic}, backend={self.backend!r}):\n"
                f"{textwrap.indent(textwrap.dedent(self.source).strip(), '    ')}\n{calls}")


@dataclasses.dataclass
class Outcome:
    """What one call of the compiled target did."""

    call: str
    compiled: bool  # the frame was translated (again)
    inputs: list  # the graph's input shapes, as the backend saw them, for a compile ("f32[s0, 4]")
    shape_guards: list  # the guards on sizes of the graph compiled now
    mismatch: str  # how the result differs from eager ("" if it does not)


def _shape_text(value):
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).replace('torch.', '')}[{', '.join(str(s) for s in value.shape)}]"
    return repr(value) if not isinstance(value, torch.SymInt) else f"Sym({value})"


def run_case(case, **pieces):
    """Call the case's target, compiled (with the learner's ``pieces``, see ``swapped``) and
    eagerly; one Outcome per call. The Record of the learner's answers is returned too."""
    with swapped(**pieces) as record:
        module = user_module(f"a10_{case.name}", PRELUDE + textwrap.dedent(case.source))
        original = getattr(module, case.target)
        compiles = []

        def backend(gm, example_inputs):
            # the placeholders carry the traced (symbolic) example values; example_inputs are real
            traced = [node.meta.get("example_value") for node in gm.graph.find_nodes(op="placeholder")]
            shape_env = next((s.node.shape_env for v in traced
                              for s in ([v] if isinstance(v, torch.SymInt) else list(getattr(v, "shape", ())))
                              if isinstance(s, torch.SymInt)), None)
            compiles.append(([_shape_text(v) for v in traced],
                             sorted(show(g.expr) for g in shape_env.guards) if shape_env else []))
            return lookup_backend(case.backend)(gm, example_inputs)

        # the recorder compiles graphs with symbolic sizes as its backend does: once for every size
        DYNAMIC_SHAPE_BACKENDS.add(backend)
        try:
            return _calls(case, module, original, tinydynamo.compile(original, backend=backend, dynamic=case.dynamic),
                          compiles, record)
        finally:
            DYNAMIC_SHAPE_BACKENDS.discard(backend)


def _calls(case, module, original, compiled, compiles, record):
    """Make each call's arguments, call the compiled target and the original; one Outcome per call."""
    outcomes = []
    for call in case.calls:
        torch.manual_seed(0)
        args = eval(f"({call},)", vars(module))
        before, seen = tinydynamo.stats()["frames_compiled"], len(compiles)
        torch.manual_seed(0)
        try:
            got, mismatch = compiled(*args), ""
        except Exception as e:  # noqa: BLE001 - the learner's error, or a stale graph's
            if record.errors:
                return outcomes, record
            got, mismatch = None, f"the compiled call raised {type(e).__name__}: {one_line(e)}"
        if record.errors:
            return outcomes, record
        torch.manual_seed(0)
        args = eval(f"({call},)", vars(module))  # fresh arguments (and state: zeroed gradients) for eager
        torch.manual_seed(0)
        expected = original(*args)
        mismatch = mismatch or difference(got, expected)
        new = compiles[seen:]
        outcomes.append(Outcome(call, tinydynamo.stats()["frames_compiled"] > before,
                                [shape for shapes, _ in new for shape in shapes],
                                [guard for _, guards in new for guard in guards], mismatch))
    return outcomes, record


def one_line(error):
    return " ".join(str(error).strip().splitlines()) or type(error).__name__


_expected_outcomes = {}


def expected_outcomes(case):
    if case.name not in _expected_outcomes:
        _expected_outcomes[case.name] = run_case(case)[0]
    return _expected_outcomes[case.name]


def check_case(case, check_decisions=True, **pieces):
    """Every failure of the learner's pieces on one case, named by the case and the call."""
    wanted = expected_outcomes(case)
    outcomes, record = run_case(case, **pieces)
    problems = [f"{case.name}: {error}" for error in record.errors[:1]]
    if check_decisions:
        for expr, (lo, hi) in record.bounds.items():
            counterexample = bounds_counterexample(expr, lo, hi)
            if counterexample:
                problems.append(f"{case.name}: bounds({show(expr)}) returned ({lo}, {hi}), but {counterexample}: "
                                "UNSOUND")
        for condition, answer in record.decisions.items():
            if answer is not None:
                problems += [f"{case.name}: {p}" for p in decision_problems(condition, answer)]
    for got, want in zip(outcomes, wanted):
        when = f"{case.name}, call {case.target}({got.call})"
        if got.mismatch:
            problems.append(f"{when}: {got.mismatch}")
        if got.compiled != want.compiled:
            problems.append(f"{when}: {'NEEDLESS RECOMPILE' if got.compiled else 'NO RECOMPILE'}: the "
                            f"reference {'compiles' if want.compiled else 'does not compile'} here, yours "
                            f"{'does' if got.compiled else 'does not'}")
        elif got.inputs != want.inputs:
            differ = [f"input {i} is {g}, expected {w}" for i, (g, w) in enumerate(zip(got.inputs, want.inputs))
                      if g != w] or [f"{len(got.inputs)} inputs, expected {len(want.inputs)}"]
            problems.append(f"{when}: the graph's {'; '.join(differ)} (a symbol s0, s1... is a dynamic size)")
        needless = sorted(set(got.shape_guards) - set(want.shape_guards))
        if needless:
            problems.append(f"{when}: NEEDLESS GUARD(S) {'; '.join(needless)}: they hold for every size "
                            f"(the reference's guards on sizes: {'; '.join(want.shape_guards) or 'none'})")
    return problems


def check_cases(cases, **pieces):
    return [problem for case in cases for problem in check_case(case, **pieces)]


def summary(cases, **pieces):
    """One line per case: calls, compiles, and each compile's graph inputs (the first, and those with
    symbolic sizes)."""
    lines = []
    for case in cases:
        outcomes, _ = run_case(case, **pieces)
        inputs = [[text for i, text in enumerate(o.inputs) if i == 0 or re.search(r"\bs\d", text)]
                  for o in outcomes if o.compiled]
        lines.append(f"{case.name}: {len(outcomes)} calls, {sum(o.compiled for o in outcomes)} compiles "
                     f"(graph inputs {' then '.join(', '.join(i) for i in inputs)}), "
                     f"{sum(not o.mismatch for o in outcomes)} results equal to eager")
    return "\n".join(lines)


# Cases for the range analysis: every dimension symbolic (dynamic=True), sizes chosen around the
# decisions each function takes (2 and 3 beside larger ones, odd and even).
RANGE_EXAMPLES = [
    Case("halves", """
        def halves(x):
            return x[: x.shape[0] // 2] * 2
    """, "halves", ["torch.randn(8, 3)", "torch.randn(9, 3)", "torch.randn(4, 3)", "torch.randn(3, 3)"], True),
    Case("broadcast_add", """
        def broadcast_add(x, y):
            return x + y
    """, "broadcast_add", ["torch.randn(4, 3), torch.randn(3)", "torch.randn(6, 5), torch.randn(5)"], True),
]
RANGE_CASES = [
    Case("pairs", """
        def pairs(x):
            return x.view(x.shape[0] // 2, -1).sum(1)
    """, "pairs", ["torch.randn(8, 3)", "torch.randn(10, 3)", "torch.randn(6, 3)"], True),
    Case("branch_on_size", """
        def branch_on_size(x):
            if x.shape[0] > 2:
                return x[1:] - x[:-1]
            return x * 2
    """, "branch_on_size", ["torch.randn(5)", "torch.randn(7)", "torch.randn(2)", "torch.randn(3)"], True),
    Case("last_two", """
        def last_two(x):
            return x[-2:] + x[:2]
    """, "last_two", ["torch.randn(5, 2)", "torch.randn(2, 2)", "torch.randn(9, 2)"], True),
    Case("grid", """
        def grid(x, y):
            return (x.unsqueeze(1) * y.unsqueeze(0)).reshape(-1)[: x.shape[0]]
    """, "grid", ["torch.randn(3), torch.randn(5)", "torch.randn(4), torch.randn(6)",
                  "torch.randn(2), torch.randn(9)"], True),
    Case("flatten_batch", """
        def flatten_batch(x):
            return x.flatten(0, 1).softmax(-1)
    """, "flatten_batch", ["torch.randn(3, 4, 5)", "torch.randn(2, 6, 5)", "torch.randn(4, 4, 7)"], True),
    Case("chunks", """
        def chunks(x):
            a, b = x.chunk(2)
            return torch.cat([b, a]) * 3
    """, "chunks", ["torch.randn(6, 2)", "torch.randn(8, 2)", "torch.randn(7, 2)", "torch.randn(9, 2)"], True),
    Case("matrix_power", """
        def matrix_power(x):
            return x @ x.t() @ x
    """, "matrix_power", ["torch.randn(4, 3)", "torch.randn(5, 7)", "torch.randn(2, 2)"], True),
    Case("every_other", """
        def every_other(x):
            n = x.shape[1]
            return x[:, : n - n % 2].reshape(x.shape[0], -1, 2).sum(-1)
    """, "every_other", ["torch.randn(3, 6)", "torch.randn(4, 7)", "torch.randn(2, 9)"], True),
    Case("zoo_mlp_batches", """
        from tinydynamo.testing.models import make
        model, inputs = make("mlp")
        def run(x):
            return model(x)
    """, "run", ["torch.randn(8, inputs[0].shape[1])", "torch.randn(3, inputs[0].shape[1])",
                 "torch.randn(2, inputs[0].shape[1])"], True),
    Case("zoo_gpt_lengths", """
        from tinydynamo.testing.models import make
        model, inputs = make("tiny_gpt")
    """, "model", [f"inputs[0][:, :{n}].contiguous(), inputs[1][:, :{n}].contiguous()" for n in (5, 8, 3)], True),
]

GPT2 = """
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tinydynamo.testing.real_models import REAL_MODELS

    gpt2 = REAL_MODELS["gpt2"].build()[0]

    def generate_logits(ids):
        with torch.no_grad():
            return gpt2(input_ids=ids).logits
"""
LENGTHS = [5, 7, 9, 11, 13, 16, 19, 23, 26, 30, 33, 40]

# Cases for the automatic-dynamic policy: each call a new size, and the policy decides.
POLICY_EXAMPLES = [
    Case("batch_sizes", """
        def scale_rows(x):
            return x * x.sum(1, keepdim=True)
    """, "scale_rows", [f"torch.randn({n}, 5)" for n in (4, 6, 8, 10)]),
    Case("dynamic_true", """
        def scale_rows(x):
            return x * x.sum(1, keepdim=True)
    """, "scale_rows", [f"torch.randn({n}, 5)" for n in (4, 6, 8)], True),
]
POLICY_CASES = [
    Case("size_two_at_the_change", """
        def double(x):
            return x * 2
    """, "double", ["torch.randn(4, 3)", "torch.randn(2, 3)", "torch.randn(6, 3)", "torch.randn(9, 3)"]),
    Case("static_compile_first", """
        def double(x):
            return x * 2

        static = tinydynamo.compile(double, dynamic=False)

        def after_a_static_call(n, m):
            static(torch.randn(n, 3))
            return torch.randn(m, 3)
    """, "double", ["after_a_static_call(4, 6)", "torch.randn(8, 3)", "torch.randn(10, 3)"]),
    Case("sequence_lengths", """
        def attend(x):
            return torch.softmax(x @ x.transpose(1, 2), -1) @ x
    """, "attend", [f"torch.randn(2, {n}, 8)" for n in (5, 7, 9, 11)]),
    Case("one_dim_then_another", """
        def total(x):
            return x.sum(0) * 2
    """, "total", ["torch.randn(4, 5)", "torch.randn(6, 5)", "torch.randn(6, 7)", "torch.randn(8, 9)",
                   "torch.randn(3, 11)"]),
    Case("back_to_the_first_size", """
        def total(x):
            return x.sum(0) * 2
    """, "total", ["torch.randn(4, 5)", "torch.randn(6, 5)", "torch.randn(4, 5)", "torch.randn(9, 5)"]),
    Case("size_one_stays_special", """
        def centred(x):
            return x - x.mean(0)
    """, "centred", ["torch.randn(4, 3)", "torch.randn(6, 3)", "torch.randn(1, 3)", "torch.randn(7, 3)"]),
    Case("new_rank", """
        def double(x):
            return x * 2
    """, "double", ["torch.randn(4)", "torch.randn(4, 3)", "torch.randn(5, 3)", "torch.randn(6, 3)"]),
    Case("dynamic_false", """
        def double(x):
            return x * 2
    """, "double", [f"torch.randn({n}, 2)" for n in (3, 4, 5)], False),
    Case("dynamic_true_size_one", """
        def double(x):
            return x * 2
    """, "double", ["torch.randn(3, 1)", "torch.randn(5, 1)", "torch.randn(1, 4)"], True),
    Case("mark_dynamic", """
        def rows(x):
            return x.sum(1)

        def marked(n):
            x = torch.randn(n, 3)
            tinydynamo.mark_dynamic(x, 0)
            return x
    """, "rows", ["marked(3)", "marked(4)", "marked(5)", "marked(1)"], False),
    Case("mark_static", """
        def rows(x):
            return x.sum(1)

        def marked(n):
            x = torch.randn(n, 3)
            tinydynamo.mark_static(x, 0)
            return x
    """, "rows", ["marked(3)", "marked(4)", "marked(5)"], True),
    Case("mark_static_over_mark_dynamic", """
        def rows(x):
            return x.sum(1)

        def marked(n):
            x = torch.randn(n, 3)
            tinydynamo.mark_dynamic(x, 0)
            tinydynamo.mark_static(x, 0)
            return x
    """, "rows", ["marked(3)", "marked(4)", "marked(5)"]),
    Case("mark_static_after_a_change", """
        def rows(x):
            return x.sum(1)

        def marked(n, m):
            x = torch.randn(n, m)
            tinydynamo.mark_static(x, 1)
            return x
    """, "rows", ["marked(3, 4)", "marked(5, 6)", "marked(7, 6)", "marked(9, 8)"]),
    Case("parameters_stay_static", """
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    """, "model", [f"torch.randn({n}, 4)" for n in (3, 5, 7)], True),
    Case("input_requires_grad", """
        def scale(x):
            return (x * 2).sum(0)
    """, "scale", [f"torch.randn({n}, 3, requires_grad=True)" for n in (4, 6, 8)]),
    Case("parameter_argument", """
        weight = nn.Parameter(torch.randn(4, 3))

        def project(x, w):
            return x @ w
    """, "project", [f"torch.randn({n}, 4), weight" for n in (3, 5, 7)], True),
    Case("buffers_stay_static", """
        class Norm(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mean", torch.zeros(6))

            def forward(self, x):
                return x - self.mean[: x.shape[1]]

        model = Norm()

        def swap(n):
            model.mean = torch.zeros(n)
            return torch.randn(2, n)
    """, "model", ["swap(6)", "swap(5)", "swap(4)"]),
    Case("int_argument", """
        def repeat(x, n):
            return x.repeat(n, 1)
    """, "repeat", [f"torch.randn(2, 3), {n}" for n in (2, 3, 4, 5)]),
    Case("two_inputs", """
        def outer(x, y):
            return x.unsqueeze(1) * y
    """, "outer", ["torch.randn(3), torch.randn(4)", "torch.randn(3), torch.randn(6)",
                   "torch.randn(5), torch.randn(6)", "torch.randn(7), torch.randn(8)"]),
]
TOGETHER_CASES = [
    Case("zoo_cnn_batches", """
        from tinydynamo.testing.models import make
        model, inputs = make("cnn")
        model.eval()
    """, "model", ["inputs[0]", "inputs[0][:1].repeat(3, 1, 1, 1)", "inputs[0][:1].repeat(5, 1, 1, 1)",
                   "inputs[0][:1].repeat(7, 1, 1, 1)"]),
    Case("training_step", """
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))

        def step(x):
            loss = model(x).square().mean()
            loss.backward()
            return loss, model[0].weight.grad.clone()

        def batch(n):
            model.zero_grad()
            return torch.randn(n, 4)
    """, "step", ["batch(3)", "batch(5)", "batch(8)", "batch(13)"], None, "aot_eager"),
    Case("gpt2_lengths", GPT2, "generate_logits", [f"torch.randint(0, 1000, (2, {n}))" for n in LENGTHS]),
]
CASES = {case.name: case for case in RANGE_EXAMPLES + RANGE_CASES + POLICY_EXAMPLES + POLICY_CASES
         + TOGETHER_CASES}


def check_range_analysis(bounds, static_value=None, cases=RANGE_EXAMPLES):
    """The learner's ``bounds`` (and ``static_value``, if given) inside dynamo on the cases."""
    return check_cases(cases, bounds=bounds, static_value=static_value)


# SizeHistory on its own: updates (source, shape), one after the other, in a fresh history.
HISTORY_EXAMPLES = {"batch_sizes": [("L['x']", (4, 5)), ("L['x']", (6, 5)), ("L['x']", (8, 5))]}
HISTORY_CASES = {
    "two_dims_at_once": [("L['x']", (3, 4)), ("L['x']", (5, 6)), ("L['x']", (7, 6))],
    "back_and_forth": [("L['x']", (4, 5)), ("L['x']", (6, 5)), ("L['x']", (4, 5)), ("L['x']", (4, 7))],
    "new_rank": [("L['x']", (4,)), ("L['x']", (4, 3)), ("L['x']", (5, 3)), ("L['x']", (5, 3, 2))],
    "two_sources": [("L['x']", (3,)), ("L['y']", (4,)), ("L['y']", (6,)), ("L['x']", (3,))],
    "int_value": [("L['n']", (2,)), ("L['n']", (3,)), ("L['n']", (2,))],
}


def check_history(history, sequences=HISTORY_EXAMPLES):
    """The learner's SizeHistory against the reference's FrameState on each sequence of updates:
    ``update`` returns every dimension that became dynamic just now (it may add others that changed
    size again) and no dimension that never changed; ``dynamic_dims`` is exact."""
    problems = []
    with swapped():
        for name, updates in sequences.items():
            problems += _history_problems(history, name, updates)
    return problems


def _history_problems(history, name, updates):
    record, reference = Record(), FrameState()
    try:
        checked = CheckedHistory(history, record)
        for i, (source, shape) in enumerate(updates):
            done = ", ".join(f"update({s!r}, {sh})" for s, sh in updates[: i + 1])
            got, became = checked.update(source, shape), reference.update(source, shape)
            dynamic = reference.dynamic_dims(source)
            if not set(became) <= set(got) <= dynamic:
                return [f"SizeHistory, {name}: after {done}, the last update returned {got}, expected the "
                        f"dimensions that became dynamic now, {became}"
                        + (f" (and perhaps some of {sorted(dynamic - set(became))}, dynamic before)"
                           if dynamic - set(became) else "")]
            for seen in dict.fromkeys(s for s, _ in updates[: i + 1]):
                if checked.dynamic_dims(seen) != reference.dynamic_dims(seen):
                    return [f"SizeHistory, {name}: after {done}, dynamic_dims({seen!r}) returned "
                            f"{checked.dynamic_dims(seen)}, expected {reference.dynamic_dims(seen)}"]
    except LearnerError as e:
        return [f"SizeHistory, {name}: {e}"]
    return []


def check_policy(history, dims_to_trace, cases=POLICY_EXAMPLES):
    return check_cases(cases, history=history, dims_to_trace=dims_to_trace)


def check_together(bounds, static_value, history, dims_to_trace, cases=TOGETHER_CASES):
    return check_cases(cases, bounds=bounds, static_value=static_value, history=history,
                       dims_to_trace=dims_to_trace)
