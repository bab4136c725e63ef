"""Assignment a03 (chapter 3, "Symbolic execution"): opcode handlers, graded inside the real
InstructionTranslator.

The learner writes the handlers of about ten opcodes of their Python, 3.11 to 3.13 (``HANDLERS``:
loads and stores, ``BINARY_OP``, attribute access, the call sequence, the returns) as functions with the
reference's signature, ``def LOAD_FAST(self, inst)``. ``swapped_handlers`` installs them on
tinydynamo's real translator classes for the duration of a block. The checkers then compile the
functions of the corpus below, and zoo models, with ``fullgraph=True`` under a recording backend,
and compare each case

* with eager PyTorch: the result, and the inputs after the call (in-place ops must mutate them);
* with the reference handlers: the same number of graphs, the same graph inputs (placeholders
  named by their Source), and the same multiset of ops.

Each checker returns a list of human-readable failures that name the case. An exception raised
while tracing is reported with the handler that raised it (yours or the reference's), the
instruction and line of the traced function it was running, and the line of the learner's code;
it never escapes the checker; when the handler that raised used values that the learner's
handlers pushed, the report names those handlers too. While the learner's handlers are graded,
the reference handlers they replace (and the reference's table of binary operators) refuse to
be called from the learner's code.
"""
import collections
import contextlib
import copy
import dataclasses
import functools
import linecache
import math
import os
import reprlib
import sys
import traceback
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F

import tinydynamo

from .. import config
from ..dynamo import symbolic_convert
from ..dynamo.exc import Unsupported
from ..dynamo.symbolic_convert import (
    InliningInstructionTranslator,
    InstructionTranslator,
    InstructionTranslatorBase,
)
from ..dynamo.variables import VariableTracker
from ..testing.models import ZOO, make
from .checking import (  # noqa: F401 (SUPPORTED_VERSIONS is the notebook's)
    SUPPORTED_VERSIONS, LearnerTimeout, hidden_table, no_delegation, time_limit,
)
from .feedback import NOT_LEARNER_CODE
from .feedback import learner_location as learner_line

# The handlers the learner writes, by part of the assignment: the opcodes of the learner's Python.
# 3.12 drops PRECALL and LOAD_METHOD (LOAD_ATTR's low bit) and adds RETURN_CONST; 3.13's CALL_KW
# takes over KW_NAMES.
VERSION = sys.version_info[:2]
CALL_HANDLERS = {
    (3, 11): ("LOAD_ATTR", "LOAD_METHOD", "KW_NAMES", "PRECALL", "CALL"),
    (3, 12): ("LOAD_ATTR", "KW_NAMES", "CALL"),
    (3, 13): ("LOAD_ATTR", "CALL", "CALL_KW"),
}
PARTS = {
    1: ("LOAD_FAST", "STORE_FAST", "LOAD_CONST", "LOAD_GLOBAL"),
    2: ("BINARY_OP",),
    3: CALL_HANDLERS.get(VERSION, ()),
    4: ("RETURN_VALUE",) + (("RETURN_CONST",) if VERSION >= (3, 12) else ()),
}
HANDLERS = tuple(name for names in PARTS.values() for name in names)
# Where handlers live: most on the base class; RETURN_VALUE on the translator of the compiled
# frame and on the one of inlined calls (the generator translator keeps its own).
TRANSLATORS = (InstructionTranslatorBase, InstructionTranslator, InliningInstructionTranslator)


# ------------------------------------------------------------------ swapping the handlers in
class HandlerError(Exception):
    """An exception raised while the translator ran one instruction, with where and whose."""


def handlers_in(namespace, part=None):
    """{name: function} for the handlers of ``part`` (of every part if None), taken from
    ``namespace`` (a notebook's ``globals()``)."""
    names = PARTS[part] if part else HANDLERS
    missing = [name for name in names if not callable(namespace.get(name))]
    if missing:
        raise NameError(f"define the handler(s) {missing} first, e.g. `def {missing[0]}(self, inst): ...`")
    return {name: namespace[name] for name in names}


def handler_classes(name):
    """The translator classes whose own ``name`` handler the learner's replaces."""
    return [cls for cls in TRANSLATORS if name in vars(cls)]


@contextlib.contextmanager
def swapped_handlers(handlers):
    """Install ``handlers`` ({opcode name: function(self, inst)}) on the real translator classes
    for the block, and locate every error raised while tracing (``HandlerError``). The reference
    handlers they replace are refused to the learner's code meanwhile.

    tinydynamo's caches are cleared before and after, so nothing compiled with one set of
    handlers is reused with another; the reference handlers come back even if the block raises.
    """
    unknown = sorted(set(handlers) - set(HANDLERS))
    if unknown:
        raise ValueError(f"a03 grades the handlers {HANDLERS}, not {unknown}")
    installed = {name: checked_handler(name, fn) for name, fn in handlers.items()}
    replaced = [(cls, name, vars(cls)[name]) for name in installed for cls in handler_classes(name)]
    original_step = InstructionTranslatorBase.step
    tinydynamo.reset()
    try:
        for cls, name, _ in replaced:
            setattr(cls, name, installed[name])
        InstructionTranslatorBase.step = located_step(original_step, set(installed.values()))
        with config.patch(suppress_errors=False, strict=True), refused_references(replaced):
            yield
    finally:
        for cls, name, original in replaced:
            setattr(cls, name, original)
        InstructionTranslatorBase.step = original_step
        PUSHED_BY.clear()
        tinydynamo.reset()


# The translator's helpers that do the very work of a handler the learner writes: refused with it.
HANDLER_HELPERS = {
    "CALL": (InstructionTranslatorBase.call_function_with_kw_names, InstructionTranslatorBase.pop_callable),
    "CALL_KW": (InstructionTranslatorBase.call_function_with_kw_names, InstructionTranslatorBase.pop_callable),
    "LOAD_GLOBAL": (InstructionTranslatorBase.push_with_null,),
    "LOAD_ATTR": (InstructionTranslatorBase.push_with_null,),
}


@contextlib.contextmanager
def refused_references(replaced):
    """The reference handlers in ``replaced``, the helpers that do their work (HANDLER_HELPERS)
    and, for BINARY_OP, its table of operators refuse the learner's calls during the block."""
    helpers = {helper for _, name, _ in replaced for helper in HANDLER_HELPERS.get(name, ())}
    with contextlib.ExitStack() as stack:
        stack.enter_context(no_delegation(*{original for _, _, original in replaced}, *helpers))
        if any(name == "BINARY_OP" for _, name, _ in replaced):
            stack.enter_context(hidden_table(symbolic_convert, "BINARY_OPS"))
        yield


# id(tracker) -> (tracker, "your LOAD_GLOBAL (`LOAD_GLOBAL 1 (torch)` at line 3)") for each tracker
# that one of the learner's handlers pushed, while they are swapped in.
PUSHED_BY = {}


def kept(before, after):
    """How many values at the bottom of the stack ``before`` an instruction are still there ``after``."""
    n = 0
    while n < min(len(before), len(after)) and before[n] is after[n]:
        n += 1
    return n


HANDLER_TIME_LIMIT = 5  # seconds per run of a learner's handler (they take microseconds): past it, an infinite loop
_HUNG = weakref.WeakKeyDictionary()  # a learner's handler that ran past its limit -> the instruction it ran


def checked_handler(name, fn):
    """``fn``, remembering which trackers it pushed, followed by a check that the stack and the
    locals still hold only trackers. A run past HANDLER_TIME_LIMIT fails the case, and later runs
    of the same function fail at once, so that an infinite loop costs one limit, not one per case."""

    def handler(self, inst):
        if fn in _HUNG:
            raise LearnerTimeout(f"your {name} ran past its time limit of {HANDLER_TIME_LIMIT} s before "
                                 f"(on {_HUNG[fn]}): it is not run again")
        before = list(self.stack)
        try:
            with time_limit(HANDLER_TIME_LIMIT, f"your {name} on `{describe_instruction(inst)}`"):
                fn(self, inst)
        except LearnerTimeout:
            _HUNG[fn] = f"`{describe_instruction(inst)}`"
            raise
        for var in self.stack[kept(before, self.stack):]:
            PUSHED_BY[id(var)] = (var, f"your {name} (`{describe_instruction(inst)}` at line "
                                       f"{inst.positions.lineno})")
        problem = non_tracker(self)
        if problem:
            raise TypeError(f"after it ran, {problem}; the translator only holds VariableTrackers "
                            "(wrap_constant(value), NullVariable(), what a helper returned...)")

    return handler


def non_tracker(tx):
    """What on the translator's stack or in its locals is not a VariableTracker, or None."""
    for depth, value in enumerate(reversed(tx.stack)):
        if not isinstance(value, VariableTracker):
            return f"the stack holds {short(value)} ({type(value).__name__}) at depth {depth} from the top"
    for local, value in tx.symbolic_locals.items():
        if not isinstance(value, VariableTracker):
            return f"the local {local!r} holds {short(value)} ({type(value).__name__})"
    return None


def located_step(step, learner_handlers):
    """``step``, turning an error of the instruction it runs into a HandlerError that says where.

    The innermost instruction wraps the error first (an inlined call runs its own steps), so the
    report names the handler that raised. dynamo's own exceptions (Unsupported...) pass as they are.
    """

    def step_and_locate_errors(self):
        if self.instruction_pointer >= len(self.instructions):
            raise HandlerError(f"the translator ran past the last instruction of {where(self)}: "
                               "nothing ended the interpreter loop (self.done)")
        before = list(self.stack)
        try:
            step(self)
        except HandlerError:
            raise
        except Exception as error:
            used = before[kept(before, self.stack):]
            if isinstance(error, Unsupported) or type(error).__module__.startswith("tinydynamo.dynamo"):
                if not getattr(error, "__notes__", None):  # the innermost instruction says where
                    error.add_note(culprits(self, learner_handlers, used))
                raise
            raise HandlerError(describe_handler_error(self, error, learner_handlers, used)) from error

    return step_and_locate_errors


def describe_handler_error(tx, error, learner_handlers, used):
    """Which handler raised what, on which instruction, and which of the learner's handlers
    pushed the values it was using (the likely culprits when the reference's handler raised)."""
    inst = tx.current_instruction
    whose = "your" if getattr(type(tx), inst.opname, None) in learner_handlers else "the reference's"
    return (f"{whose} {inst.opname} handler raised {error_text(error)}, "
            f"on `{describe_instruction(inst)}` in {where(tx)}{pushed_by(used, whose == 'your')}")


def culprits(tx, learner_handlers, used):
    """For dynamo's own errors (Unsupported): the learner's handler that was running, if it was
    one, and the learner's handlers that pushed the values it was using."""
    inst = tx.current_instruction
    yours = getattr(type(tx), inst.opname, None) in learner_handlers
    running = f"in your {inst.opname} handler, on `{describe_instruction(inst)}`" if yours else ""
    return (running + pushed_by(used, yours)).lstrip("; ")


def pushed_by(used, yours):
    """Which of the learner's handlers pushed the values ``used`` by an instruction that failed."""
    pushers = sorted({PUSHED_BY[id(var)][1] for var in used if id(var) in PUSHED_BY})
    if pushers:
        return f"; the values it used were pushed by {', '.join(pushers)}: do they push what they should?"
    return "" if yours else " (is something one of your handlers pushed or stored not what it should be?)"


def describe_instruction(inst):
    return inst.opname if inst.arg is None else f"{inst.opname} {inst.arg} ({short(inst.argval)})"


def where(tx):
    """``fn() at file:line: source`` for the instruction the translator is running."""
    line = tx.current_instruction.positions.lineno
    text = linecache.getline(tx.code.co_filename, line or 0).strip()
    return f"{tx.code.co_name}() at {os.path.basename(tx.code.co_filename)}:{line}: {text}"


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 60


def short(value):
    """``repr(value)``, cut to a readable length."""
    return _repr.repr(value)


def error_text(error):
    """``Type: first line of the message``, then where it was raised: the learner's line and,
    for an error without a message (a bare ``assert``) in other code, the line that raised it."""
    message = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {message[0]}" if message else type(error).__name__
    frame = traceback.extract_tb(error.__traceback__)[-1]
    if not message and frame.filename.startswith(NOT_LEARNER_CODE):
        text += f" (at {os.path.basename(frame.filename)}:{frame.lineno}: {frame.line})"
    return text + learner_line(error)


# ------------------------------------------------------------------ compiling and recording
@dataclasses.dataclass
class GraphSummary:
    """What the checkers compare between two captures: the inputs and the multiset of ops."""

    inputs: list  # placeholder names, in order (L_x_, L_self_fc1_weight...)
    ops: collections.Counter  # "torch.relu", "operator.add", "Tensor.sum"... -> count

    @classmethod
    def of(cls, gm):
        nodes = gm.graph.nodes
        return cls([n.target for n in nodes if n.op == "placeholder"],
                   collections.Counter(op_name(n) for n in nodes if n.op in ("call_function", "call_method")))


def op_name(node):
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    module = getattr(node.target, "__module__", None) or ""
    module = {"_operator": "operator"}.get(module, module)
    return f"{module}.{getattr(node.target, '__name__', node.target)}".lstrip(".")


@dataclasses.dataclass
class Run:
    """One call: what it returned, its arguments afterwards, and the graphs compiled for it."""

    result: object
    inputs: object
    graphs: list = dataclasses.field(default_factory=list)  # GraphSummary per compiled graph


def run_compiled(fn, args, kwargs, keep=None):
    """Call ``tinydynamo.compile(fn, fullgraph=True)`` once, recording every graph; the backend
    runs the graph as it is. ``keep`` (a list) also receives the GraphModules."""
    graphs = []

    def record(gm, example_inputs):
        graphs.append(GraphSummary.of(gm))
        if keep is not None:
            keep.append(gm)
        return gm.forward

    result = tinydynamo.compile(fn, backend=record, fullgraph=True)(*args, **kwargs)
    return Run(result, (args, kwargs), graphs)


def print_capture(handlers, fn, *args, **kwargs):
    """Compile ``fn`` with ``handlers`` swapped in, call it once, and print the graph(s) it
    captured, or the error that stopped it."""
    graphs = []
    try:
        with swapped_handlers(handlers):
            run = run_compiled(fn, args, kwargs, keep=graphs)
    except Exception as error:  # noqa: BLE001 - shown to the learner, not raised
        print(f"{fn.__name__}: {explain_error(error)}")
        return
    print(f"{fn.__name__}: {len(graphs)} graph(s); it returned {short(run.result)}")
    for gm in graphs:
        print(gm.print_readable(print_output=False))


def explain_error(error):
    if isinstance(error, HandlerError):
        return str(error)
    if isinstance(error, Unsupported):
        notes = "".join(f"; {note}" for note in getattr(error, "__notes__", ()) if note)
        return (f"tracing stopped with Unsupported: {error.reason} "
                f"(at {os.path.basename(error.filename)}:{error.lineno}){notes}; "
                "the reference handlers capture this case whole")
    return f"compiling or running it raised {error_text(error)}"


# ------------------------------------------------------------------ comparing
def difference(actual, expected, what):
    """Why ``actual`` is not ``expected`` (tensors within assert_close's tolerance), or None."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return f"{what} is {short(actual)}, expected a tensor"
        try:
            torch.testing.assert_close(actual, expected, equal_nan=True)
        except AssertionError as e:
            return f"{what} differs: " + " ".join(str(e).split())
        return None
    if type(actual) is not type(expected):
        return f"{what} is {short(actual)} ({type(actual).__name__}), expected {short(expected)}"
    if isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            return f"{what} has {len(actual)} items, expected {len(expected)}"
        return first(difference(a, e, f"{what}[{i}]") for i, (a, e) in enumerate(zip(actual, expected)))
    if isinstance(expected, dict):
        if list(actual) != list(expected):
            return f"{what} has the keys {list(actual)}, expected {list(expected)}"
        return first(difference(actual[k], expected[k], f"{what}[{k!r}]") for k in expected)
    if isinstance(expected, nn.Module):
        return difference(actual.state_dict(), expected.state_dict(), f"{what}.state_dict()")
    if hasattr(expected, "__dict__") and not callable(expected):  # a plain object: its attributes
        return difference(vars(actual), vars(expected), f"vars({what})")
    if actual != expected:
        return f"{what} is {short(actual)}, expected {short(expected)}"
    return None


def first(reasons):
    return next((r for r in reasons if r is not None), None)


def graph_differences(actual, expected):
    """How the graphs captured with the learner's handlers differ from the reference's."""
    if len(actual) != len(expected):
        return [f"{len(actual)} graph(s) were compiled, the reference handlers compile {len(expected)}"]
    problems = []
    for i, (mine, ref) in enumerate(zip(actual, expected)):
        if mine.inputs != ref.inputs:
            problems.append(f"graph {i} has the inputs {mine.inputs}, the reference's has {ref.inputs}")
        if mine.ops != ref.ops:
            missing, extra = dict(ref.ops - mine.ops), dict(mine.ops - ref.ops)
            problems.append(f"graph {i}'s ops differ from the reference's: missing {missing}, extra {extra}")
    return problems


def run_differences(label, actual, expected, inputs="the inputs after the call (args, kwargs)"):
    problems = graph_differences(actual.graphs, expected.graphs)
    problems.append(difference(actual.result, expected.result, "the result"))
    problems.append(difference(actual.inputs, expected.inputs, inputs))
    return [f"{label}: {p}" for p in problems if p is not None]


# ------------------------------------------------------------------ the corpus
class T:
    """A tensor input, rebuilt identically for every run: randn for floats, randint for ints."""

    def __init__(self, *shape, dtype=torch.float32):
        self.shape, self.dtype = shape, dtype

    def build(self, seed):
        g = torch.Generator().manual_seed(seed)
        if self.dtype.is_floating_point:
            return torch.randn(self.shape, generator=g, dtype=self.dtype)
        if self.dtype == torch.bool:
            return torch.randint(0, 2, self.shape, generator=g).bool()
        return torch.randint(0, 8, self.shape, generator=g).to(self.dtype)


class M:
    """An nn.Module input: ``M(cls, *args)`` is ``cls(*args)`` with seeded parameters."""

    def __init__(self, cls, *args):
        self.cls, self.args = cls, args

    def build(self, seed):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return self.cls(*self.args)


def build(spec, seed):
    """The value a spec stands for; containers are rebuilt item by item, the rest deep-copied."""
    if isinstance(spec, (T, M)):
        return spec.build(seed)
    if type(spec) in (list, tuple):
        return type(spec)(build(s, seed + i) for i, s in enumerate(spec))
    if type(spec) is dict:
        return {k: build(s, seed + i) for i, (k, s) in enumerate(spec.items())}
    return copy.deepcopy(spec)


@dataclasses.dataclass
class Case:
    fn: object
    inputs: tuple
    kwargs: dict

    @property
    def name(self):
        return self.fn.__name__

    @property
    def label(self):
        return f"{self.name} (a03.py:{self.fn.__code__.co_firstlineno})"

    def make_inputs(self):
        return build(self.inputs, 0), build(self.kwargs, 100)


CASES = {}


def case(*inputs, **kwargs):
    """Register the decorated function, called with these inputs (``T``/``M`` specs or values)."""

    def register(fn):
        CASES[fn.__name__] = Case(fn, inputs, kwargs)
        return fn

    return register


X, Y, V, W = T(4, 5), T(4, 5), T(6), T(5, 3)
SCALE, OFFSET = 2.5, -1
BIAS = torch.linspace(-1.0, 1.0, 5)
ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}


def double(t):
    return t * 2


def scale_shift(t, scale=1.0, *, shift=0.0):
    return t * scale + shift


def double_then_reduce(t):
    return double(t).sum(dim=0) + torch.sin(t).mean()


def clipped(t, limit):
    if t.shape[0] > limit:
        return t[:limit]
    return t


class Settings:
    """A plain Python object read by a traced function (not an nn.Module)."""

    def __init__(self, scale=3.0, activation="tanh"):
        self.scale, self.activation = scale, activation

    def apply(self, t):
        return ACTIVATIONS[self.activation](t * self.scale)


class TwoLayer(nn.Module):
    def __init__(self, d_in=5, d_hidden=8, d_out=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ScaledTwoLayer(TwoLayer):
    def __init__(self, scale=0.5):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = super().forward(x) * self.scale
        return out if self.training else out.detach()


class ResidualStack(nn.Module):
    def __init__(self, dim=5, depth=3):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.register_buffer("shift", torch.arange(dim, dtype=torch.float32) / dim)

    def forward(self, x):
        for layer in self.layers:
            x = x + F.gelu(layer(x), approximate="tanh")
        return self.norm(x) - self.shift


# --- locals, constants, globals -----------------------------------------------------------


@case(X, Y)
def add_relu(x, y):
    return torch.relu(x + y)


@case(X, Y)
def reassign_argument(x, y):
    y = x * 2  # y is stored before it is ever read
    return y + 1


@case(X, Y, V)
def unused_arguments(x, y, v):
    return x.sin()


@case(X, Y)
def swap_locals(x, y):
    x, y = y, x
    return x - y * 2


@case(X)
def many_locals(x):
    a = x + 1
    b = a * a
    c = b - a
    d = c / 2
    a = d.exp()
    return a + b


@case(X)
def constants_of_every_kind(x):
    return x * 2 + 0.5, None, "text", (1, (2.5, "a")), True, -7


@case(X)
def constant_tuple_plus_tensors(x):
    parts = (1.0, 2.0) + (x,)  # a constant tuple is a tuple of constants: + works on it
    return parts[2] * parts[1]


@case(X)
def global_constants(x):
    return x * SCALE + OFFSET


@case(X)
def global_tensor(x):
    return x + BIAS


@case(X)
def global_dict_of_functions(x):
    return ACTIVATIONS["tanh"](x) + ACTIVATIONS["relu"](x)


@case(X)
def builtins(x):
    return x * len(x.shape) + abs(-3) + max(2, 5) + min(x.shape)


@case(X)
def global_helper(x):
    return double(x) + 1


@case(X)
def global_module_attribute(x):
    return x * math.pi + math.sqrt(2.0)


@case(X)
def default_argument(x, scale=3):
    return x * scale


@case(X, kwargs_only=T(5))
def keyword_only_argument(x, *, kwargs_only):
    return x + kwargs_only


@case(X)
def loop_stores(x):
    for i in range(3):
        x = x * 2 + i
    return x


@case(X)
def branch_on_shape(x):
    if x.shape[0] > 2:
        y = x.cos()
    else:
        y = x.sin()
    return y


@case(X, None)
def branch_on_none(x, mask):
    if mask is None:
        mask = x > 0
    return torch.where(mask, x, -x)


@case(X)
def closure(x):
    scale = 2.0

    def inner(t):
        return t * scale

    return inner(x) + inner(1.0)


@case(X)
def lambda_local(x):
    f = lambda t: t.exp() - 1  # noqa: E731
    return f(x)


@case([T(3), T(3)], {"a": T(3), "b": 2.0})
def containers_as_arguments(items, table):
    first, second = items
    return first * second + table["a"] * table["b"]


# --- binary operators ----------------------------------------------------------------------


@case(X, Y)
def arithmetic(x, y):
    return (x + y) * (x - y) / (y.abs() + 1)


@case(X)
def scalar_on_the_left(x):
    return 2 - x * 3 + 1 / (x.abs() + 1)


@case(X, Y)
def floordiv_mod_pow(x, y):
    return x // (y.abs() + 1) + x % 2 + x ** 2 + 2 ** x


@case(T(4, 5, dtype=torch.int64), T(4, 5, dtype=torch.int64))
def bitwise_ints(a, b):
    return (a & b) | (a ^ b) | (a << 1) | (b >> 1)


@case(T(4, 5, dtype=torch.bool), T(4, 5, dtype=torch.bool))
def bool_logic(a, b):
    return ~a | (a & b) ^ b


@case(X, W)
def matmul(x, w):
    return x @ w


@case(X)
def inplace_on_input(x):
    x += 1
    x *= 2
    return x


@case(X, Y)
def inplace_on_local(x, y):
    z = x.clone()
    z -= y
    z /= 2
    z **= 2
    return z


@case(T(4, 5, dtype=torch.int64), T(4, 5, dtype=torch.int64))
def inplace_ints(a, b):
    c = a.clone()
    c //= 2
    c %= 3
    c |= b
    c &= 7
    c ^= a
    c <<= 1
    c >>= 1
    return c


@case(T(4, 5, dtype=torch.bool), T(4, 5, dtype=torch.bool))
def inplace_bool_on_input(a, b):
    a ^= b
    return a


@case(T(5, 5), T(5, 5))
def inplace_matmul(t, w):
    alias = t
    t @= w  # operator.imatmul; a tensor has no __imatmul__: t is a new tensor, alias still the input
    return t, alias


@case(X)
def python_number_arithmetic(x):
    n = x.shape[0] * 2 + x.shape[1] // 2 - 1
    f = 1.5
    f *= n
    f -= 0.25
    n **= 2
    n %= 7
    return x * f + n, n, f / 4


@case(X)
def string_and_tuple_operators(x):
    name = "ab" + "cd" * 2
    shape = (2,) * 2 + (1,)
    return x[:2, :2].reshape(shape) * len(name)


@case(X)
def list_concatenation(x):
    parts = [x] + [x * 2]
    parts += [x - 1]
    return torch.cat(parts, dim=0)


@case(X, Y)
def power_and_mixed_scalars(x, y):
    return x.abs() ** y + 0.5 ** x.abs() - x / 3 + 3 // 2


# --- attributes and calls --------------------------------------------------------------------


@case(X)
def shape_and_dtype(x):
    return x.to(x.dtype) * x.shape[1], x.dtype, x.ndim


@case(X)
def tensor_valued_attributes(x):
    return x.T.sum(0) + x.mT.mean(0)


@case(X)
def method_chain(x):
    return x.sigmoid().mul(2).sub(1).abs()


@case(T(3, 4, 5))
def method_keyword_arguments(x):
    return x.sum(dim=1, keepdim=True) + x.mean(dim=(0, 2), keepdim=True)


@case(X)
def function_keyword_arguments(x):
    return F.gelu(x, approximate="tanh") + F.softmax(x, dim=-1) + torch.clamp(x, min=-0.5, max=0.5)


@case(X)
def keywords_then_positional(x):
    a = torch.sum(x, dim=1, keepdim=True)
    b = torch.add(x, a)  # a CALL without KW_NAMES right after one with it
    return b.std(dim=0, unbiased=False) + torch.mul(b, 2).mean()


@case(X)
def namedtuple_attributes(x):
    result = x.max(dim=1)
    return result.values, result.indices


@case(X)
def unpack_call_result(x):
    a, b = x.chunk(2, dim=1)
    values, indices = torch.sort(x, dim=0)
    return a.sum() + b.sum(), values, indices


@case(M(TwoLayer), T(4, 5))
def call_a_module(model, x):
    return model(x)


@case(M(TwoLayer), T(4, 5))
def module_attributes(model, x):
    return x @ model.fc1.weight.T + model.fc1.bias, model.fc2.out_features


@case(M(ScaledTwoLayer), T(4, 5))
def module_with_super_and_python_attributes(model, x):
    return model(x)


@case(M(ResidualStack), T(2, 5))
def module_list_and_buffer(model, x):
    return model(x)


@case(Settings(), X)
def plain_object_method(settings, x):
    return settings.apply(x) + settings.scale


@case(X)
def helper_with_keywords(x):
    return scale_shift(x, shift=1.0) + scale_shift(x, 2.0, shift=-1.0) + scale_shift(x, scale=0.5)


@case(X)
def nested_helpers(x):
    return double_then_reduce(x)


@case(X)
def method_on_helper_result(x):
    return double(x).sum(dim=0)


@case(X)
def call_with_star_arguments(x):
    args = (x, 1)
    kwargs = {"alpha": 2}
    return torch.add(*args, **kwargs)


@case(X)
def isinstance_and_type(x):
    if isinstance(x, torch.Tensor) and type(3) is int:
        return x.neg()
    return x


@case(X)
def functools_partial(x):
    add_twice = functools.partial(torch.add, alpha=2)
    return add_twice(x, x)


@case(X)
def string_methods(x):
    mode = "Mean".lower()
    return x.mean() if mode.startswith("mean") else x.sum()


@case(X)
def generator_expression(x):
    return sum(x[i] * i for i in range(x.shape[0]))


@case(X)
def list_comprehension(x):
    return torch.stack([x * i for i in range(3)])


@case(X)
def list_and_dict_methods(x):
    parts = []
    parts.append(x)
    parts.extend([x + 1, x + 2])
    table = {"a": x}
    table.update(b=x * 2)
    return torch.stack(parts).sum(0) + table.get("b") + len(table.keys())


@case(X)
def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y + 1


@case(X)
def factory_with_keywords(x):
    return torch.zeros(x.shape[0], 1, dtype=x.dtype) + x.sum(1, keepdim=True) + torch.ones(1, 5).to(torch.float64)


@case(T(2, 3, 4))
def size_unpacking(x):
    B, S, D = x.size()
    return x.view(B * S, D).transpose(0, 1).reshape(D, B, S)


# --- return values ---------------------------------------------------------------------------------


@case(X)
def return_nothing(x):
    x.add_(1)


@case(X)
def return_the_input(x):
    return x


@case(X)
def return_a_number(x):
    return x.shape[0] + 1


@case(X)
def return_a_dict(x):
    return {"double": x * 2, "shape": x.shape, "input": x}


@case(X)
def return_a_list(x):
    return [x, x.cos(), 3]


@case(X, T(2, 5))
def early_returns_in_a_helper(x, y):
    return clipped(x, 2) + clipped(y, 3)


@case(X)
def return_from_a_loop(x):
    for i in range(5):
        if i == 2:
            return x * i
    return x


@case(V)
def return_a_namedtuple(v):
    return torch.sort(v, descending=True)


@case(X)
def return_one_tensor_twice(x):
    y = x * 2
    return y, y


@case(X)
def return_a_nested_structure(x):
    return (x.sum(), [x.mean(), {"max": x.max()}]), "done"


# ------------------------------------------------------------------ the checkers
_REFERENCE = {}  # case or model name -> the Run with the reference handlers, and eager's Run


def _reference_runs(name, call):
    """(eager run, reference run) for ``call(compiled_or_eager)``, computed once per name."""
    if name not in _REFERENCE:
        eager = call(lambda fn, args, kwargs: Run(fn(*args, **kwargs), (args, kwargs)))
        tinydynamo.reset()
        with config.patch(suppress_errors=False, strict=True):
            reference = call(run_compiled)
        tinydynamo.reset()
        _REFERENCE[name] = (eager, reference)
    return _REFERENCE[name]


def check_case(handlers, case):
    """The failures of one corpus case run with ``handlers``."""

    def call(run):
        args, kwargs = case.make_inputs()
        return run(case.fn, args, kwargs)

    eager, reference = _reference_runs(case.name, call)
    try:
        with swapped_handlers(handlers):
            actual = call(run_compiled)
    except Exception as error:  # noqa: BLE001 - a learner's bug is reported, never raised
        return [f"{case.label}: {explain_error(error)}"]
    expected = Run(eager.result, eager.inputs, reference.graphs)
    return run_differences(case.label, actual, expected)


def check_cases(handlers, names=None):
    """Every case of the corpus (or those named), compiled with ``handlers`` swapped in."""
    return [failure for name in (names or CASES) for failure in check_case(handlers, CASES[name])]


def check_model(handlers, name):
    """Zoo model ``name``, compiled with ``handlers``: its output, its buffers afterwards
    (batch-norm statistics), and its graph."""

    def call(run):
        model, inputs = make(name)
        result = run(model, inputs, {})
        return Run(result.result, dict(model.named_buffers()), result.graphs)

    eager, reference = _reference_runs(f"zoo model {name}", call)
    label = f"zoo model {name!r}"
    try:
        with swapped_handlers(handlers):
            actual = call(run_compiled)
    except Exception as error:  # noqa: BLE001 - a learner's bug is reported, never raised
        return [f"{label}: {explain_error(error)}"]
    expected = Run(eager.result, eager.inputs, reference.graphs)
    return run_differences(label, actual, expected, inputs="the buffers after the call")


def check_models(handlers, names=None):
    return [failure for name in (names or ZOO) for failure in check_model(handlers, name)]
