"""Assignment a02 (chapters 2 and 4): the Python side of the frame hook, graded inside dynamo.

When the C hook (``tinydynamo._C``, chapter 2) meets a frame of a compiled call, three decisions
are made, and the learner writes each one:

1. ``skip_reason(code)``: should frames of this code ever be compiled? (generators, torch, the
   standard library, tinydynamo itself, generated code, tools like numpy or pytest... are not);
2. ``lookup(entries, owner, args)``: the cache lookup the hook does in ``co_extra``: the first
   entry of this callback whose guard passes gives the code to run;
3. ``on_cache_miss(callback, func, args)``: the callback, on a miss: skip, count a recompile,
   give up past ``config.cache_size_limit`` (a warning, then the frame runs eagerly), translate.

``swapped_in`` plugs them into the real pipeline. ``skip_reason`` replaces the reference's rule
inside ``ConvertFrame``; ``on_cache_miss`` replaces ``ConvertFrame.__call__``. The lookup is done
in C by the real hook, so to run the learner's, ``co_extra`` is kept in a Python dict instead
(``HookWithPythonCache``): the C hook then finds no entry and calls back on every frame, and the
callback starts with what the C hook does, the SKIP test and the lookup, in Python.

The checkers run scenarios (real functions, a zoo model, several wrappers of one function, a
small cache limit) twice: with the reference pieces and with the learner's. Every call must give
eager PyTorch's result and behave as in the reference pipeline: the same compiled graph runs (or
none), the hook answers the same frames without calling back, the same code objects are compiled,
and the recompile counter and the cache limit warnings agree. Each call of a learner's piece is
stopped after TIME_LIMIT seconds, and the infinite loop reported with its case.
"""
import atexit
import collections
import contextlib
import dataclasses
import inspect
import json
import os
import shutil
import sysconfig
import tempfile
import textwrap
import types
import warnings

import torch

import tinydynamo

from .. import config
from ..dynamo import convert_frame, eval_frame, trace_rules
from ..dynamo.convert_frame import ConvertFrame
from ..dynamo.api import OptimizedModule, with_callback
from ..dynamo.guards import GuardBuilder
from ..utils import counters
from .checking import TimedCalls, no_delegation, time_limit
from .feedback import learner_location

TIME_LIMIT = 10  # seconds per call of a learner's piece (on_cache_miss's includes the translation)

try:
    from .._C import _eval_frame as _C
except ImportError:  # the extension is not built
    _C = None


# --------------------------------------------------------------------------- shared helpers
_user_dir = None


def user_module(name, source):
    """Run ``source`` as module ``name`` of a learner's project: a real file outside torch,
    tinydynamo and the standard library, so that dynamo treats its functions as user code."""
    global _user_dir
    if _user_dir is None:
        _user_dir = tempfile.mkdtemp(prefix="tinydynamo-course-")
        atexit.register(shutil.rmtree, _user_dir, ignore_errors=True)
    path = os.path.join(_user_dir, f"{name}.py")
    text = textwrap.dedent(source)
    with open(path, "w") as file:
        file.write(text)
    module = types.ModuleType(name)
    module.__file__ = path
    exec(compile(text, path, "exec"), vars(module))
    return module


def describe(code):
    return f"{code.co_qualname} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def hook_source(section):
    """A section of the C hook's source (``lookup``, ``hook``...), as chapter 2 shows it."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "_C", "eval_frame.c")
    with open(path) as file:
        text = file.read()
    return text.split(f"/* [book:{section}] */\n")[1].split(f"/* [book:{section}-end] */")[0]


class LearnerError(Exception):
    """One of the learner's functions raised while the pipeline ran it."""


def reported(fn, name):
    """``fn``, with its exceptions turned into a LearnerError that names it and the line, and each
    call stopped after TIME_LIMIT seconds (an infinite loop)."""

    def call(*args):
        try:
            with time_limit(TIME_LIMIT, f"your {name}"):
                return fn(*args)
        except LearnerError:
            raise
        except Exception as e:  # noqa: BLE001 - reported with the scenario that triggered it
            raise LearnerError(f"your {name} raised {type(e).__name__}{learner_location(e)}: {e}") from None

    return call


# --------------------------------------------------------------------------- the swap-in
class HookWithPythonCache:
    """The real C hook, with ``co_extra`` kept in a Python dict (an ``eval_frame.PythonHook``).

    Every frame of a compiled call still goes through the C hook; finding no entry and no SKIP
    mark in ``co_extra``, it calls back each time, and ``hook_in_python`` does the rest."""

    def __init__(self):
        cache = eval_frame.PythonHook()
        self.set_eval_frame = _C.set_eval_frame
        self.get_cache_entries, self.set_skip = cache.get_cache_entries, cache.set_skip
        self.clear_code, self.is_skipped = cache.clear_code, cache.is_skipped


def hook_in_python(lookup, miss):
    """What the C hook does with a frame (chapter 2), as the callback: the SKIP test, the cache
    lookup (with ``lookup``), then the miss path."""

    def on_frame(callback, func, args):
        code = func.__code__
        if eval_frame.is_skipped(code):
            return None
        cells = tuple(func.__closure__ or ())
        new_code = lookup(eval_frame.get_cache_entries(code), callback, (*args, *cells))
        if new_code is None:
            return miss(callback, func, args)
        counters["cache_hits"] += 1
        return new_code

    return on_frame


def learner_miss_path(on_cache_miss):
    """The learner's ``on_cache_miss``, with the bookkeeping the reference callback also does:
    counting frames, and remembering codes whose ``co_extra`` is written (for ``reset()``)."""

    def on_miss(callback, func, args):
        counters["frames_seen"] += 1
        convert_frame.touched_codes.add(func.__code__)
        callback.codes.add(func.__code__)
        return on_cache_miss(callback, func, args)

    return on_miss


def refusing_generators(convert):
    """``ConvertFrame.convert`` that refuses a generator's code: translated, it makes a wrong
    generator or crashes the interpreter, so a missed skip must end as a clear error."""

    def convert_unless_generator(callback, func, args, code, entries):
        if code.co_flags & trace_rules.GENERATOR_FLAGS:
            raise LearnerError(f"the callback went on to translate {describe(code)}, a generator "
                               "function: skip_reason must skip it, and on_cache_miss must not translate it")
        return convert(callback, func, args, code, entries)

    return convert_unless_generator


# The reference's answers to each part: unreachable from the learner's code while it is graded.
_SKIP_REFERENCES = (trace_rules.skip_reason, trace_rules.library_file, trace_rules.installed_package)
_LOOKUP_REFERENCES = (convert_frame.passing_entry,)
_MISS_REFERENCES = (ConvertFrame.__call__, ConvertFrame.give_up)


def references_of(skip_reason=None, lookup=None, on_cache_miss=None):
    """The reference functions that the given learner pieces replace."""
    return ((_SKIP_REFERENCES if skip_reason else ()) + (_LOOKUP_REFERENCES if lookup else ())
            + (_MISS_REFERENCES if on_cache_miss else ()))


@contextlib.contextmanager
def swapped_in(skip_reason=None, lookup=None, on_cache_miss=None):
    """Run the block with the learner's pieces in the pipeline (None: the reference's), and the
    reference functions they replace unreachable from the learner's code.

    Caches are cleared on entry and exit; the reference pieces and hook come back even if the
    block raises."""
    if lookup is not None and _C is None:
        raise RuntimeError("grading lookup needs the C extension: run `make install`")
    reference_call, reference_skip = ConvertFrame.__call__, trace_rules.skip_reason
    reference_convert = ConvertFrame.convert
    tinydynamo.reset()
    try:
        with config.patch(suppress_errors=False, strict=True), \
                no_delegation(*references_of(skip_reason, lookup, on_cache_miss)):
            ConvertFrame.convert = refusing_generators(reference_convert)
            if skip_reason is not None:
                trace_rules.skip_reason = reported(skip_reason, "skip_reason")
            if on_cache_miss is not None:
                ConvertFrame.__call__ = learner_miss_path(reported(on_cache_miss, "on_cache_miss"))
            if lookup is not None:
                eval_frame.use_hook(HookWithPythonCache())
                ConvertFrame.__call__ = hook_in_python(reported(lookup, "lookup"), ConvertFrame.__call__)
            yield
    finally:
        ConvertFrame.__call__, trace_rules.skip_reason = reference_call, reference_skip
        ConvertFrame.convert = reference_convert
        tinydynamo.reset()
        eval_frame.use_hook(eval_frame.HOOK)
        tinydynamo.reset()


# --------------------------------------------------------------------------- part 1: skip rules
USER_SOURCE = """
    def scale(x):
        return x * 2

    def squares(xs):
        for x in xs:
            yield x * x

    async def fetch(x):
        return x

    async def stream(xs):
        for x in xs:
            yield x

    def with_comprehensions(xs):
        doubled = [x * 2 for x in xs]
        unique = {x for x in doubled}
        index = {x: i for i, x in enumerate(unique)}
        return sum(x for x in doubled) + len(index)

    class Model:
        def forward(self, x):
            return x + 1

        @staticmethod
        def helper(x):
            return x - 1

    add = lambda a, b: a + b  # noqa: E731

    def outer(x):
        def inner(y):
            return y * x
        return inner
"""


def nested_codes(code):
    return [c for c in code.co_consts if isinstance(c, types.CodeType)]


def nested_code(code, name):
    return next(c for c in nested_codes(code) if c.co_name == name)


def skip_examples():
    """A few code objects of each kind: the learner's own, a generator, torch, the standard
    library, tinydynamo."""
    user = user_module("a02_user", USER_SOURCE)
    return [user.scale.__code__, user.squares.__code__, torch.nn.functional.dropout.__code__,
            torch.nn.Linear.forward.__code__, json.dumps.__code__, tinydynamo.compile.__code__]


def skip_corpus():
    """Many more: coroutines, comprehensions, module code, notebook cells, FX, guard and exec'd
    code, frozen modules, torch's modules and their forwards, installed packages, the zoo."""
    import importlib._bootstrap

    import mpmath.libmp.libmpf
    import sympy
    import torch.ao.nn.quantized
    import torch.nn.parallel
    import typing_extensions

    from ..bench import harness
    from ..testing import models

    user = user_module("a02_user", USER_SOURCE)
    module_code = compile(textwrap.dedent(USER_SOURCE), user.__file__, "exec")
    cell = compile("def cell_function(x):\n    return x * 2\n", "/tmp/ipykernel_4242/2471203.py", "exec")
    traced = torch.fx.symbolic_trace(user.scale)
    guard = GuardBuilder(["x"], [], {}).build([])
    return [
        user.fetch.__code__, user.stream.__code__, user.Model.forward.__code__,
        user.Model.helper.__code__, user.add.__code__, user.with_comprehensions.__code__,
        *nested_codes(user.with_comprehensions.__code__),  # 3.12+ inlines all but the <genexpr>
        nested_code(user.outer.__code__, "inner"), module_code, nested_code(cell, "cell_function"),
        type(traced).forward.__code__, guard.__code__, importlib._bootstrap._find_and_load.__code__,
        torch.nn.Module.__call__.__code__, torch.nn.Module._call_impl.__code__,
        torch.nn.Linear.__init__.__code__, torch.nn.ReLU.forward.__code__,
        torch.nn.Sequential.forward.__code__, torch.nn.Conv2d._conv_forward.__code__, torch.functional.einsum.__code__,
        torch.nn.parallel.DataParallel.forward.__code__, torch.ao.nn.quantized.Linear.forward.__code__,
        GuardBuilder.build.__code__, eval_frame.disable.__code__, models.MLP.forward.__code__,
        models.make.__code__, user_module.__code__, harness.make_call.__code__,
        os.path.join.__code__, textwrap.dedent.__code__, collections.namedtuple.__code__,
        inspect.signature.__code__, sympy.sympify.__code__, typing_extensions.get_annotations.__code__,
        mpmath.libmp.libmpf.from_int.__code__, Point.__init__.__code__, Pair.__new__.__code__,
        code_in("<string>", "exec_by_the_user"), code_in("/home/user/torch/experiments/train.py", "forward"),
        *installed_codes(),
    ]


def code_in(filename, name="f"):
    """The code object of a function ``name`` as if it were defined in ``filename``."""
    return nested_code(compile(f"def {name}(x):\n    return x\n", filename, "exec"), name)


def installed_codes():
    """Functions in files where only the path decides: installed packages, skipped or not, in
    site-packages and dist-packages, one-file packages, and the neighbours of torch and tinydynamo
    whose names start the same."""
    site, stdlib = sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]
    torch_parent = os.path.dirname(os.path.dirname(torch.__file__))
    tinydynamo_parent = os.path.dirname(os.path.dirname(tinydynamo.__file__))
    files = [
        f"{site}/transformers/models/bert/modeling_bert.py", f"{site}/numpy/core/fromnumeric.py",
        "/usr/lib/python3/dist-packages/einops/einops.py", "/usr/lib/python3/dist-packages/sympy/core/basic.py",
        f"{site}/opt_einsum.py", f"{site}/tqdm/std.py", f"{stdlib}/site-packages/diffusers/models/unet.py",
        f"{stdlib}/site-packages/IPython/core/interactiveshell.py", f"{torch_parent}/torchvision/models/resnet.py",
        f"{tinydynamo_parent}/tinydynamo_extensions/layers.py",
    ]
    return [code_in(file, "forward") for file in files]


@dataclasses.dataclass
class Point:  # its __init__ is made with exec
    x: int
    y: int


Pair = collections.namedtuple("Pair", "first second")  # so is its __new__


def check_skip_decisions(skip_reason, codes):
    """The learner skips exactly the codes the reference skips (any reason text will do)."""
    failures, timed = [], TimedCalls(skip_reason, TIME_LIMIT)
    for code in codes:
        expected = trace_rules.skip_reason(code)
        try:
            with no_delegation(*_SKIP_REFERENCES):
                got = timed(code)
        except Exception as e:  # noqa: BLE001 - reported per code object
            failures.append(f"skip_reason({describe(code)}) raised {type(e).__name__}{learner_location(e)}: {e}")
            continue
        if got is not None and not isinstance(got, str):
            failures.append(f"skip_reason({describe(code)}) returned {got!r}: return a reason (a str) or None")
        elif (got is None) != (expected is None):
            wanted = f"a reason: it must be skipped ({expected})" if expected else "None: it must be compiled"
            failures.append(f"skip_reason({describe(code)} in {code.co_filename}) returned {got!r}; expected {wanted}")
    return failures


# --------------------------------------------------------------------------- part 2: the lookup
DROPS = "drops its entry"  # a guard verdict: False, and the guard removes its entry from the cache


class RecordingGuard:
    """A guard that answers ``verdict`` and logs its calls (DROPS: removes its entry, answers False,
    as a guard whose checked object died does)."""

    def __init__(self, name, verdict, log, entries=None):
        self.name, self.verdict, self.log, self.entries = name, verdict, log, entries

    def __call__(self, *args):
        self.log.append((self.name, args))
        if self.verdict == DROPS:
            self.entries[:] = [entry for entry in self.entries if entry[1] is not self]
            return False
        return self.verdict


@dataclasses.dataclass
class LookupExample:
    description: str
    entries: list  # [(owner is the caller's callback, guard's name, guard's answer)]
    args: tuple
    expected: str | None  # the name of the entry whose code must be returned
    expected_calls: list  # the names of the guards that must be called, in order


LOOKUP_EXAMPLES = [
    LookupExample("the first entry of this owner whose guard passes wins",
                  [(False, "a", True), (True, "b", False), (True, "c", True), (True, "d", True)],
                  (1,), "c", ["b", "c"]),
    LookupExample("no guard passes", [(True, "a", False), (False, "b", True), (True, "c", False)],
                  (1,), None, ["a", "c"]),
    LookupExample("an empty cache", [], (1,), None, []),
    LookupExample("entries of other owners only", [(False, "a", True), (False, "b", True)], (1,), None, []),
    LookupExample("guards answer with any true or false value", [(True, "a", 0), (True, "b", [1])],
                  (1,), "b", ["a", "b"]),
    LookupExample("a guard removes its own entry while the cache is scanned",
                  [(True, "a", DROPS), (True, "b", True)], (1,), "b", ["a", "b"]),
]


def run_lookup_example(lookup, example):
    """(the name of the entry whose code ``lookup`` (a ``TimedCalls``) returned, or None; the guards
    it called)."""
    me, someone_else, log = object(), object(), []
    codes = {}
    entries = []
    for mine, name, verdict in example.entries:
        codes[name] = compile("pass", f"<code of entry {name}>", "exec")
        entries.append((me if mine else someone_else, RecordingGuard(name, verdict, log, entries), codes[name]))
    with no_delegation(*_LOOKUP_REFERENCES):
        found = lookup(entries, me, example.args)
    names = [name for name, code in codes.items() if code is found]
    if found is not None and not names:
        raise ValueError(f"returned {found!r}, which is not the code of any entry")
    calls = [name for name, args in log]
    if any(args != example.args for _, args in log):
        raise ValueError(f"called a guard with {log[0][1]!r}; pass the arguments as guard(*args)")
    return (names[0] if names else None), calls


def check_lookup_examples(lookup, examples=LOOKUP_EXAMPLES):
    failures, timed = [], TimedCalls(lookup, TIME_LIMIT)
    for example in examples:
        layout = ", ".join(f"({'me' if mine else 'other'}, guard {name}: {verdict!r}, code {name})"
                           for mine, name, verdict in example.entries)
        where = f"lookup([{layout}], me, args) ({example.description})"
        try:
            found, calls = run_lookup_example(timed, example)
        except Exception as e:  # noqa: BLE001 - reported per example
            failures.append(f"{where}: {type(e).__name__}{learner_location(e)}: {e}")
            continue
        if found != example.expected:
            got = f"code {found}" if found else "None"
            want = f"code {example.expected}" if example.expected else "None"
            failures.append(f"{where}: returned {got}, expected {want}")
        elif calls != example.expected_calls:
            failures.append(f"{where}: called guards {calls}, expected {example.expected_calls} (only this "
                            "owner's guards, in order, stopping at the first that passes)")
    return failures


# --------------------------------------------------------------------------- scenarios
@dataclasses.dataclass
class Scenario:
    """Calls of compiled functions (or models) of a user's module.

    ``wrappers`` maps a label to the name of what it compiles; each wrapper has its own callback
    (owner) and backend. Each call is (label, a statement run in the module first, the arguments)."""

    name: str
    why: str  # what it exercises, for failure messages
    source: str
    wrappers: dict
    calls: list
    cache_size_limit: int = 8


def shapes(label, *sizes, dtype="torch.float32"):
    return [(label, f"x = torch.randn({n}, dtype={dtype})", "x") for n in sizes]


RELU_SOURCE = """
    import torch

    def scaled_relu(x):
        return torch.relu(x) * 2
"""

CNN_SOURCE = """
    from tinydynamo.testing.models import make

    model, (x,) = make("cnn")
"""

SCENARIOS = {scenario.name: scenario for scenario in [
    Scenario("recompiles", "equal inputs hit the cache; a new shape or dtype recompiles; "
             "every entry keeps serving its inputs", RELU_SOURCE, {"a": "scaled_relu"},
             shapes("a", 3, 3, 4, 3, 4) + shapes("a", 5, dtype="torch.float64")),
    Scenario("cache_limit", "past config.cache_size_limit=3: one warning, then the frame runs eagerly "
             "without calling back; the entries made before still serve their inputs", RELU_SOURCE,
             {"a": "scaled_relu"}, shapes("a", 1, 2, 3, 4, 5, 1, 4), cache_size_limit=3),
    Scenario("two_wrappers", "two compiled wrappers of one function: each owns its entries, its "
             "recompiles and its cache limit (config.cache_size_limit=2)", RELU_SOURCE,
             {"a": "scaled_relu", "b": "scaled_relu"},
             shapes("a", 1, 2) + shapes("b", 1, 2) + shapes("a", 1) + shapes("b", 2, 3) + shapes("a", 3),
             cache_size_limit=2),
    Scenario("zoo_cnn", "a zoo model with BatchNorm: eval mode recompiles, train mode hits the "
             "first entry", CNN_SOURCE, {"a": "model"},
             [("a", "", "x"), ("a", "model.eval()", "x"), ("a", "model.train()", "x")]),
    Scenario("generator", "a generator function is never compiled: its frame is skipped once, "
             "then the hook leaves it alone", """
                def squares(xs):
                    for x in xs:
                        yield x * x
             """, {"a": "squares"}, [("a", "", "[1, 2, 3]"), ("a", "", "[4, 5]")]),
    Scenario("stdlib", "a standard library function is never compiled", """
                import textwrap

                dedent = textwrap.dedent
             """, {"a": "dedent"}, [("a", "", "'    a\\n    b'"), ("a", "", "'  c'")]),
    Scenario("fx_and_modules", "torch's own frames (nn.Module.__call__) and FX-generated code are "
             "skipped; a model's forward is compiled", """
                import torch
                import torch.fx
                from tinydynamo.testing.models import make

                def affine(x):
                    return x * 2 + 1

                traced = torch.fx.symbolic_trace(affine)
                model, (x,) = make("mlp")
             """, {"fx": "traced", "mlp": "model"},
             [("fx", "", "x"), ("mlp", "", "x"), ("fx", "", "x"), ("mlp", "", "x")]),
    Scenario("eager_frame", "a frame that cannot be captured runs eagerly, and each function it "
             "calls is offered to the callback: a generator, torch, the standard library (skipped), "
             "and a user function (compiled)", """
                import json

                import torch
                import torch.nn.functional as F

                def squares(xs):
                    for x in xs:
                        yield x * x

                def helper(x):
                    return torch.tanh(x) * 2

                def eager_frame(x):
                    parts = list(squares(x))
                    y = F.dropout(x, 0.0)
                    text = json.dumps({"n": len(parts)})
                    return helper(y) + len(text)
             """, {"a": "eager_frame"}, shapes("a", 3, 3, 4)),
]}


@dataclasses.dataclass
class Trace:
    """What the calls of a scenario did."""

    runs: list  # per call: the compiled graphs that ran, ((label, index), ...); () if none did
    callbacks: list  # per call: how many frames reached the callback's miss path
    mismatches: list  # per call: how the result differs from eager ("" if it does not)
    recompiles: int
    limit_warnings: list  # the warnings that mention cache_size_limit
    compiled_codes: set  # the codes the callbacks translated (or tried to)


def recording_backend(label, log):
    """A backend that numbers its graphs and logs (label, number) each time one runs."""
    count = [0]

    def backend(gm, example_inputs):
        index, count[0] = count[0], count[0] + 1

        def run(*args):
            log.append((label, index))
            return gm.forward(*args)

        return run

    return backend


def compile_with(target, callback):
    """``tinydynamo.compile(target)`` with this callback, so the checker can look inside it."""
    if isinstance(target, torch.nn.Module):
        return OptimizedModule(target, with_callback(target, callback))
    return with_callback(target, callback)


def materialize(value):
    return list(value) if inspect.isgenerator(value) else value


def run_scenario(scenario, **pieces):
    """Run the scenario with those pieces swapped in; a LearnerError propagates."""
    with swapped_in(**pieces), config.patch(cache_size_limit=scenario.cache_size_limit), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = user_module(f"a02_{scenario.name}", scenario.source)
        log, callbacks, compiled = [], {}, {}
        for label, target in scenario.wrappers.items():
            # dynamic=False: the scenarios show one cache entry per shape (no automatic dynamic)
            callbacks[label] = ConvertFrame(recording_backend(label, log), dynamic=False)
            compiled[label] = compile_with(getattr(module, target), callbacks[label])
        trace = Trace([], [], [], 0, [], set())
        for label, statement, args in scenario.calls:
            exec(statement, vars(module))
            call_and_record(trace, log, compiled[label], getattr(module, scenario.wrappers[label]),
                            eval(f"({args},)", vars(module)))
        trace.recompiles = counters["recompiles"]
        trace.limit_warnings = [str(w.message) for w in caught if "cache_size_limit" in str(w.message)]
        trace.compiled_codes = {describe(code) for callback in callbacks.values() for code in callback.codes
                                if not eval_frame.is_skipped(code)}
        return trace


def call_and_record(trace, log, compiled, original, args):
    start, seen = len(log), counters["frames_seen"]
    torch.manual_seed(0)
    try:
        got, mismatch = materialize(compiled(*args)), ""
    except LearnerError:
        raise
    except Exception as e:  # noqa: BLE001 - a wrong cache entry may fail on inputs not made for it
        got, mismatch = None, f"the compiled call raised {type(e).__name__}: {e}"
    trace.runs.append(tuple(log[start:]))
    trace.callbacks.append(counters["frames_seen"] - seen)
    torch.manual_seed(0)
    expected = materialize(original(*args))
    trace.mismatches.append(mismatch or difference(got, expected))


def difference(got, expected):
    """How a compiled call's result differs from eager's ("" if it does not)."""
    if isinstance(expected, str):
        return "" if got == expected else f"the result differs from eager: {got!r} != {expected!r}"
    try:
        torch.testing.assert_close(got, expected)
    except AssertionError as e:
        return f"the result differs from eager: {' '.join(str(e).strip().splitlines()[:2])}"
    return ""


def describe_run(run):
    if not run:
        return "ran no compiled graph"
    return "ran " + ", ".join(f"graph {index} of wrapper {label!r}" for label, index in run)


def compare(scenario, reference, learner):
    """How the learner's trace differs from the reference pipeline's."""
    failures = []
    for i, ((label, statement, args), mismatch, run, want_run, calls, want_calls) in enumerate(zip(
            scenario.calls, learner.mismatches, learner.runs, reference.runs, learner.callbacks,
            reference.callbacks)):
        where = f"{scenario.name}, call {i + 1}: `{statement + '; ' if statement else ''}{label}({args})`"
        if mismatch:
            failures.append(f"{where}: {mismatch}")
        if run != want_run:
            failures.append(f"{where}: {describe_run(run)}; the reference pipeline {describe_run(want_run)}")
        if calls and not want_calls:
            failures.append(f"{where}: {calls} frame(s) reached the callback; the reference's hook answered "
                            "every frame by itself (from a SKIP mark or a cache entry)")
    failures += compare_totals(scenario, reference, learner)
    return [f"{failure} [{scenario.why}]" for failure in failures]


def compare_totals(scenario, reference, learner):
    failures = []
    if learner.recompiles != reference.recompiles:
        failures.append(f"{scenario.name}: counters['recompiles'] is {learner.recompiles}, "
                        f"{reference.recompiles} with the reference")
    warned, want = len(learner.limit_warnings), len(reference.limit_warnings)
    if warned != want:
        failures.append(f"{scenario.name}: {warned} warning(s) mentioning cache_size_limit; expected {want}: "
                        "one per wrapper and function that reaches the limit, not one per call")
    for code in sorted(learner.compiled_codes - reference.compiled_codes):
        failures.append(f"{scenario.name}: the callback translated {code}, which the reference skips")
    for code in sorted(reference.compiled_codes - learner.compiled_codes):
        failures.append(f"{scenario.name}: the callback never translated {code}, which the reference compiles")
    return failures


def check_scenarios(names, **pieces):
    """Run each scenario with the reference and with the learner's pieces; every difference."""
    failures = []
    for name in names:
        scenario = SCENARIOS[name]
        reference = run_scenario(scenario)
        try:
            learner = run_scenario(scenario, **pieces)
        except LearnerError as e:
            failures.append(f"{name}: {e}")
            continue
        failures += compare(scenario, reference, learner)
    return failures
