"""Checking a learner's work: the three rules every assignment's tests follow, in one place.

Every assignment (``course/aNN.py`` and the test cells of ``solutions/aNN_*``) uses this module,
and ``tests/course/test_mutants.py`` uses it to check the tests themselves.

**No delegation.** ``with no_delegation(fn, ...):`` makes reference functions unreachable from the
learner's code while it is graded. A call into one of them from the learner's code raises
``ForbiddenCallError``, which names the function and says that the learner must write it. The function's
own code is swapped for a trampoline while the block runs, so a function the learner imported
before grading (``from tinydynamo.aot import default_partition``) is caught too; builtins
(``dis.stack_effect``) are refused by a profile hook. The reference's own pipeline still calls
them freely: the innermost caller that is either tinydynamo or the learner decides
(torch, installed packages and the standard library in between are looked through). A learner
who catches the error gains nothing: the block raises again when it ends.

A grader calls the learner's callables through ``call_learner``, a frame that counts as the learner's,
so a callable that *is* a reference function, or reaches one without Python code of its own (a method
inherited from a reference class, ``functools.partial``), is refused too. The reference's original
function, which the trampoline serves tinydynamo with, refuses the learner's direct calls as well
(the learner could find it with ``gc.get_objects()``).

**Complete feedback.** A test cell evaluates every case and then fails once, listing every failure
in full: ``report(check_a(...), check_b(...))`` for checkers that return lists of failures, and
``Failures`` (``with failures.case("name"): ...``) for cases written as plain asserts. Nothing is
truncated; nbgrader's feedback page wraps long lines (``templates/feedback_wrapped``).

**Mutation check.** The hidden tests must catch plausible mistakes, so each assignment keeps a
catalogue of mistakes, ``tests/course/mutants/aNN.py``: each ``Mutant`` is a small textual edit of
a solution cell. ``check_mutant`` applies it to the solution notebook, runs the notebook's code
cells in-process in a fresh namespace (the cells nbgrader runs, hidden tests included) and proves
that the grade drops and that a failing test's message names the case. ``python -m
tinydynamo.course.checking tests/course/mutants/a01.py`` checks one catalogue; ``make test-mutants``
checks them all (``tests/course/test_mutants.py``).

Adding a mutant
---------------
1. Make the mistake by hand in ``solutions/<assignment>/*.ipynb`` and run ``make grade``, or the
   command above with the new entry, to see which test catches it and what it says.
2. Add ``Mutant(name, old, new, names)`` to the catalogue: ``old`` is text that occurs exactly
   once in the notebook's solution cells (an edit of a solution that no longer contains it fails
   loudly as a stale catalogue), ``new`` replaces it, and ``names`` is a substring that the
   failure message must contain: the case that exposes the mistake (a function, a model, an
   opcode), not just "failed".
3. If no test loses points, the hidden tests have a hole: add the case that exposes the mistake
   to the assignment's checkers, not an exception to the catalogue. ``zero=`` lists tests that
   must score nothing at all (use it for "delegates to the reference").
4. A mistake in a rule of one Python version's bytecode (3.13's ``CALL_KW``) shows only there:
   ``versions=((3, 13),)`` checks it on that version and skips it on the others.
"""
import collections
import contextlib
import copy
import dataclasses
import gc
import importlib.util
import inspect
import io
import json
import linecache
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import torch

import tinydynamo

from .feedback import GENERATED_CODE, LEARNER_CALL_FILE, NOT_LEARNER_CODE, learner_location

REFERENCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # src/tinydynamo
COURSE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")  # the graders: src/tinydynamo/course/
TORCH_INDUCTOR_DIR = os.path.join(os.path.dirname(torch.__file__), "_inductor", "")
SOLUTIONS = Path(__file__).resolve().parents[3] / "solutions"
RELEASES = SOLUTIONS.parent / "assignments"
# The Pythons whose bytecode the assignments about bytecode know: a learner's own is the one graded.
SUPPORTED_VERSIONS = ((3, 11), (3, 12), (3, 13))


# --------------------------------------------------------------------------- no delegation

class ForbiddenCallError(RuntimeError):
    """The learner's code called a function that it is meant to replace."""


_calls_refused = []  # messages, in order, of every refused call
# id(function) -> [a copy of it with its own code, its name, how many blocks refuse it, its _copies key]
_swapped = {}
_refused_builtins = {}  # id(builtin) -> (the builtin, its name, how many blocks refuse it)
_refused_builtin_names = {}  # (module, name) of a refused builtin -> its id in _refused_builtins
_running = {}  # id(code) -> (the code, its name, how many blocks refuse to run it): see not_run
# (file, first line, name) of a refused function's code -> its name: a second copy of the module
# that defines it (importlib.reload, spec_from_file_location) makes a new function of the same code
_copies = {}
_hidden_files = {}  # file of a module whose table is hidden (see hidden_table) -> [the table's name, how many blocks]
_refused_dirs = collections.Counter()  # directories of packages whose code the learner must not run (no_calls_into)
DISPATCH = "__tinydynamo_no_delegation__"  # the name of _dispatch in a refused function's globals


def _forbidden_message(name):
    return (f"your code called {name}, the reference's own answer: it is unreachable while your "
            "code is graded. Write it yourself.")


def _is_learners(frame):
    """Whether the innermost frame from ``frame`` outwards that is tinydynamo or the learner's
    code is the learner's (torch, installed packages and the standard library are looked through).
    While the learner's code runs (a ``call_learner`` frame further out), the graders' own helpers
    are looked through too: a grader that computes the reference's answer for itself
    (``a06._reference``) must not hand it to the learner's code that calls it. A thread that the
    learner started (``executor.submit(dis.stack_effect, ...)``) has neither outside the function
    it runs: it is the learner's, unless it is the main thread."""
    learner_running = learner_code_running(frame)
    while frame is not None:
        filename = frame.f_code.co_filename
        if learner_running and filename.startswith(COURSE_DIR):
            frame = frame.f_back
            continue
        if filename.startswith(REFERENCE_DIR):
            return False
        if not filename.startswith(NOT_LEARNER_CODE):
            return True
        frame = frame.f_back
    return threading.current_thread() is not threading.main_thread()


def learner_code_running(frame=None):
    """Whether a ``call_learner`` frame is on the stack from ``frame`` (the caller's) outwards."""
    frame = frame or sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == LEARNER_CALL_FILE:
            return True
        frame = frame.f_back
    return False


def _is_learners_own(frame):
    """Whether ``frame`` is the learner's code itself, or a grader's call of it (torch's own calls
    into its compiler while the learner's code runs are not the learner's, nor are those of the
    methods that dataclasses generate, file ``<string>``)."""
    filename = frame.f_code.co_filename
    return filename == LEARNER_CALL_FILE or (
        not filename.startswith((REFERENCE_DIR, "<string>", *NOT_LEARNER_CODE, *GENERATED_CODE)))


def _refuse(name, message=None):
    _calls_refused.append(message or _forbidden_message(name))
    raise ForbiddenCallError(_calls_refused[-1])


def _dispatch(key, args, kwargs):
    """What a refused function runs instead of its code: refuse the learner, serve tinydynamo."""
    original, name = _swapped[key][:2]
    if _is_learners(sys._getframe(2)):  # 1 is the trampoline, 2 its caller
        _refuse(name)
    return original(*args, **kwargs)


def _trampoline(fn, key):
    """A code object for ``fn`` that calls ``_dispatch(key, args, kwargs)``, with ``fn``'s free
    variables, so that it can be ``fn.__code__`` for a while."""
    code, free = fn.__code__, fn.__code__.co_freevars
    source = (f"def outer():\n    {' = '.join(free + ('None',))}\n"
              f"    def {code.co_name}(*args, **kwargs):\n"
              f"        if False:\n            {', '.join(free) or 'pass'}\n"
              f"        return {DISPATCH}({key}, args, kwargs)\n    return {code.co_name}\n")
    namespace = {}
    exec(compile(source, code.co_filename, "exec"), namespace)
    trampoline = namespace["outer"]().__code__
    assert trampoline.co_freevars == free, (trampoline.co_freevars, free)
    return trampoline.replace(co_qualname=code.co_qualname, co_firstlineno=code.co_firstlineno)


def _builtin_key(fn):
    """(module, name) of a builtin: a reloaded module (``importlib.reload(_opcode)``) makes new
    builtin objects, so a refused builtin is also recognised by its name."""
    return getattr(getattr(fn, "__self__", None), "__name__", None), getattr(fn, "__name__", None)


def _refuse_builtins(frame, event, arg):
    """The profile hook that refuses the learner's calls of refused builtins, and the learner's
    runs of code that must not run (``not_run``)."""
    if event == "c_call":
        key = id(arg) if id(arg) in _refused_builtins else _refused_builtin_names.get(_builtin_key(arg))
        if key is not None and _is_learners(frame):
            _refuse(_refused_builtins[key][1])  # raising also uninstalls the hook
    elif event == "call" and _copies and _code_key(frame.f_code) in _copies:
        if _is_learners(frame.f_back):
            _refuse(_copies[_code_key(frame.f_code)][0])
    elif event == "call" and frame.f_code.co_name == "<module>" and frame.f_code.co_filename in _hidden_files:
        if _is_learners(frame.f_back):
            _refuse(_hidden_files[frame.f_code.co_filename][0], "your code loaded a second copy of the module that "
                    f"holds {_hidden_files[frame.f_code.co_filename][0]}, the reference's own answer. Write it yourself.")
    elif event == "call" and _refused_dirs and frame.f_code.co_filename.startswith(tuple(_refused_dirs)):
        if frame.f_code.co_name != "<module>" and _is_learners_own(frame.f_back):
            _refuse(frame.f_code.co_qualname, f"your code called {frame.f_code.co_qualname} ({frame.f_code.co_filename}), "
                    "the answer of the compiler this assignment rebuilds. Write it yourself.")
    elif event == "call" and _running:
        entry = _running.get(id(frame.f_code)) or next(
            (e for e in _running.values() if e[0].co_code == frame.f_code.co_code
             and e[0].co_consts == frame.f_code.co_consts), None)
        if entry is not None and _is_learners(frame.f_back):
            _refuse(entry[1], f"your code ran {entry[1]}: read its code instead of calling it")


def _code_key(code):
    return code.co_filename, code.co_firstlineno, code.co_name


def _name(fn):
    return f"{getattr(fn, '__module__', None) or 'builtins'}.{fn.__qualname__}"


def _start_refusing(fn):
    """Make ``fn`` (a Python function, or a builtin) refuse the learner's calls, and a second copy
    of its code (from a second copy of its module) too; returns its key."""
    if not hasattr(fn, "__code__"):
        entry = _refused_builtins.setdefault(id(fn), [fn, _name(fn), 0])
        entry[2] += 1
        _refused_builtin_names[_builtin_key(fn)] = id(fn)
        return id(fn)
    key = id(fn)
    if key not in _swapped:
        original = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        original.__kwdefaults__ = fn.__kwdefaults__
        _swapped[key] = [original, _name(fn), 0]
        fn.__globals__[DISPATCH] = _dispatch
        _swapped[key].append(_code_key(fn.__code__))
        _copies.setdefault(_code_key(fn.__code__), [_name(fn), 0])[1] += 1
        fn.__code__ = _trampoline(fn, key)
    _swapped[key][2] += 1
    return key


def _stop_refusing(fn, key):
    table = _swapped if key in _swapped else _refused_builtins
    table[key][2] -= 1
    if table[key][2] == 0:
        if table is _swapped:
            fn.__code__ = table[key][0].__code__
            copy_key = table[key][3]
            _copies[copy_key][1] -= 1
            if _copies[copy_key][1] == 0:
                del _copies[copy_key]
        else:
            _refused_builtin_names.pop(_builtin_key(fn), None)
        del table[key]


@contextlib.contextmanager
def no_delegation(*functions):
    """Refuse every call that the learner's code makes to ``functions`` during the block.

    ``functions`` are Python functions or methods, whose code is swapped for a trampoline that
    checks the caller (so every reference to the function object is covered), or builtins,
    refused by a profile hook. A refused call raises ForbiddenCallError where it is made; if the
    learner's code swallows it, the block raises it again when it ends. Blocks nest.

    A second copy of a refused function's code, made by loading its module again
    (``importlib.reload``, ``spec_from_file_location``), is refused too, by the same profile hook.
    """
    functions = [inspect.unwrap(getattr(fn, "__func__", fn)) for fn in functions]
    keys = [_start_refusing(fn) for fn in functions]
    refused_before = len(_calls_refused)
    try:
        with _profiled():
            yield
    finally:
        for fn, key in zip(functions, keys):
            _stop_refusing(fn, key)
    refused = _calls_refused[refused_before:]
    if refused:
        raise ForbiddenCallError(refused[0])


@contextlib.contextmanager
def no_calls_into(directory):
    """Refuse every call that the learner's code makes itself into the Python functions of the
    files under ``directory`` during the block (``torch/_inductor/``: PyTorch's own compiler,
    which an assignment rebuilds). Nothing is imported from it: its files are recognised by path."""
    refused_before = len(_calls_refused)
    _refused_dirs[directory] += 1
    try:
        with _profiled():
            yield
    finally:
        _refused_dirs[directory] -= 1
        if not _refused_dirs[directory]:
            del _refused_dirs[directory]
    refused = _calls_refused[refused_before:]
    if refused:
        raise ForbiddenCallError(refused[0])


@contextlib.contextmanager
def _profiled():
    """The profile hook on this thread and on the threads started during the block, while
    builtins are refused or code must not run."""
    previous, previous_threads = sys.getprofile(), threading.getprofile()
    if _refused_builtins or _running or _copies or _hidden_files or _refused_dirs:
        sys.setprofile(_refuse_builtins)
        threading.setprofile(_refuse_builtins)
    try:
        yield
    finally:
        sys.setprofile(previous)
        threading.setprofile(previous_threads)


def _define_call_learner():
    namespace = {}
    exec(compile("def call_learner(fn, *args, **kwargs):\n    return fn(*args, **kwargs)\n",
                 LEARNER_CALL_FILE, "exec"), namespace)
    return namespace["call_learner"]


call_learner = _define_call_learner()
call_learner.__doc__ = """``fn(*args, **kwargs)`` from a frame that counts as the learner's code, so that a refused
function that ``fn`` is, or that it reaches with no Python frame of its own, refuses the call."""


@contextlib.contextmanager
def not_run(fn, why):
    """Refuse, for the block, to let the learner's code run ``fn`` (or a copy of its code): the
    learner must read it, not call it (``symbolic_return`` reads bytecode; calling the function
    with objects that record the operations would skip the lesson). ``why`` ends the message."""
    code = fn.__code__
    entry = _running.setdefault(id(code), [code, f"{fn.__qualname__} {why}", 0])
    entry[2] += 1
    refused_before = len(_calls_refused)
    try:
        with _profiled():
            yield
    finally:
        entry[2] -= 1
        if entry[2] == 0:
            del _running[id(code)]
    refused = _calls_refused[refused_before:]
    if refused:
        raise ForbiddenCallError(refused[0])


class Refused:
    """Stands in for an entry of a reference table while the learner is graded: calling it refuses."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        _refuse(self.name)

    def __repr__(self):
        return f"<{self.name}: the reference's, refused while you are graded>"


def _module_copies(module):
    """``module`` and every other module object loaded from its file (``importlib.reload``,
    ``spec_from_file_location``): each copy has its own copy of the module's tables."""
    # type(), not isinstance(): isinstance() of a dead weakref.proxy raises ReferenceError
    return [module] + [m for m in gc.get_objects() if issubclass(type(m), types.ModuleType)
                       and m is not module and getattr(m, "__file__", None) == module.__file__]


@contextlib.contextmanager
def hidden_table(module, attribute):
    """Replace every entry of ``module.attribute`` (a list, or a dict's values), in ``module`` and in
    every copy of it, by a ``Refused`` for the block: a reference table that is the answer (which
    function each opcode applies) the learner writes. Loading a new copy of ``module`` during the
    block is refused (by the profile hook), as its table would be whole."""
    name = f"{module.__name__}.{attribute}"
    entry = _hidden_files.setdefault(module.__file__, [name, 0])
    entry[1] += 1
    refused_before = len(_calls_refused)
    try:
        with contextlib.ExitStack() as stack:
            for copy_ in _module_copies(module):
                if hasattr(copy_, attribute):
                    stack.enter_context(_refused_entries(getattr(copy_, attribute), name))
            stack.enter_context(_profiled())
            yield
    finally:
        entry[1] -= 1
        if entry[1] == 0:
            del _hidden_files[module.__file__]
    refused = _calls_refused[refused_before:]
    if refused:
        raise ForbiddenCallError(refused[0])


@contextlib.contextmanager
def _refused_entries(table, name):
    saved = copy.copy(table)
    keys = table.keys() if isinstance(table, dict) else range(len(table))
    for key in list(keys):
        table[key] = Refused(f"{name}[{key!r}]")
    try:
        yield
    finally:
        if isinstance(table, dict):
            table.update(saved)
        else:
            table[:] = saved


# --------------------------------------------------------------------------- complete feedback

def _bullet(failure):
    first, _, rest = str(failure).partition("\n")
    return f"- {first}" + "".join(f"\n  {line}" for line in rest.splitlines())


def report(*failure_lists):
    """Raise one AssertionError listing, in full, every failure of every list; return if none.

    Pass every checker's result at once, ``report(check_a(...), check_b(...))``, so that all of
    them run before the cell fails.
    """
    failures = [failure for failures in failure_lists for failure in failures]
    if failures:
        raise AssertionError(f"{len(failures)} case(s) failed:\n" + "\n".join(map(_bullet, failures)))


def describe_error(error):
    """``Type: message (in fn, line n: source)``: an exception, placed in the learner's code."""
    return f"{type(error).__name__}: {error}{learner_location(error)}"


class Failures:
    """The failures of one test cell, gathered case by case; ``report()`` raises them all.

    ``with failures.case("mlp"):`` records an exception raised in the block (an assert, an error of
    the learner's code) as a failure of that case, and goes on with the next one.
    """

    def __init__(self):
        self.failures = []

    @contextlib.contextmanager
    def case(self, name):
        try:
            yield
        except AssertionError as error:
            self.failures.append(f"{name}: {error}")
        except Exception as error:  # noqa: BLE001 - any learner error is reported, not raised
            self.failures.append(f"{name}: {describe_error(error)}")

    def extend(self, failures):
        self.failures.extend(failures)

    def report(self):
        report(self.failures)


class LearnerTimeout(Exception):
    """A call of the learner's code ran past its time limit (see ``time_limit``)."""


@contextlib.contextmanager
def time_limit(seconds, what):
    """Raise LearnerTimeout in the block once it has run ``seconds``: a checker that wraps each call
    of the learner's code in it reports an infinite loop as a failure of the case that ran it (the
    message starts with ``what``, and the error's traceback places it in the learner's code), where
    nbgrader's per-cell limit would only say that the whole test cell ran too long.

    On the main thread only (signals are delivered there). An enclosing limit that would end first
    (a mutant check's cell limit, or an outer ``time_limit``) is left to fire; a later one is put
    back, less the time the block took, when the block ends.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = signal.getitimer(signal.ITIMER_REAL)[0]
    if outer and outer <= seconds:
        yield
        return

    started, message = time.monotonic(), f"{what} ran past its time limit of {seconds:g} s (an infinite loop?)"
    try:
        with _alarm(seconds, LearnerTimeout(message)):
            yield
    finally:
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))


class TimedCalls:
    """The learner's ``fn``, called case after case by one checker, each call stopped by
    ``time_limit(seconds, what)``. Once one call is stopped, the later ones are not run (each could
    loop as long, past the cell's own limit): they raise LearnerTimeout at once, saying so, so that
    every case is still reported."""

    def __init__(self, fn, seconds, what="it"):
        self.fn, self.seconds, self.what, self.stopped = fn, seconds, what, False

    def __call__(self, *args, **kwargs):
        if self.stopped:
            raise LearnerTimeout(f"not run: an earlier call ran past its time limit of {self.seconds:g} s")
        try:
            with time_limit(self.seconds, self.what):
                return call_learner(self.fn, *args, **kwargs)
        except LearnerTimeout:
            self.stopped = True
            raise


@contextlib.contextmanager
def _alarm(seconds, error):
    """Raise ``error`` in the block once it has run ``seconds`` (a SIGALRM timer)."""
    def interrupt(signum, frame):
        raise error

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- mutation check

@dataclasses.dataclass(frozen=True)
class Mutant:
    """A plausible mistake: ``old`` (once in the solution cells) replaced by ``new``."""

    name: str  # the mistake, in a few words
    old: str
    new: str
    names: str  # a substring of the failure message: the case that exposes the mistake
    zero: tuple = ()  # grade_ids that must score nothing (e.g. every test of a delegated function)
    versions: tuple = ()  # the Python versions (major, minor) whose bytecode shows the mistake; () = all


class StaleMutant(Exception):
    """The catalogue no longer matches the solution notebook."""


class CellTimeout(BaseException):
    """A cell ran past its time limit. Not an Exception, like the KeyboardInterrupt with which
    nbgrader stops a cell: a checker's ``except Exception`` around the learner's code must not
    take it for the learner's error and go on with the next case, whose loop nothing would stop."""


@dataclasses.dataclass
class Cell:
    source: str
    grade_id: str = ""
    points: float = 0  # > 0 for a graded test cell
    solution: bool = False


@dataclasses.dataclass
class TestResult:
    grade_id: str
    points: float
    score: float
    message: str  # "" when it passed


def _code_cells(directory):
    (notebook,) = sorted(directory.glob("*.ipynb"))
    cells = []
    for cell in json.loads(notebook.read_text())["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code":
            points = meta.get("points", 0) if meta.get("grade") else 0
            cells.append(Cell("".join(cell["source"]), meta.get("grade_id", ""), points, bool(meta.get("solution"))))
    return cells


def solution_cells(assignment):
    """The code cells of the assignment's solution notebook, in order."""
    return _code_cells(SOLUTIONS / assignment)


def release_cells(assignment):
    """The code cells of the untouched release notebook (assignments/), with the hidden tests put
    back into its test cells, as nbgrader's autograde does."""
    tests = {cell.grade_id: cell for cell in solution_cells(assignment) if cell.points}
    return [tests[cell.grade_id] if cell.points else cell for cell in _code_cells(RELEASES / assignment)]


def mutate(cells, mutant):
    """(the cells with the mutant's edit applied, the index of the edited cell); StaleMutant unless
    ``old`` occurs exactly once in the solution cells."""
    found = [i for i, cell in enumerate(cells) if cell.solution for _ in range(cell.source.count(mutant.old))]
    if len(found) != 1:
        raise StaleMutant(f"mutant {mutant.name!r}: its `old` text occurs {len(found)} times in the "
                          "solution cells, not once; update the catalogue")
    cells, index = list(cells), found[0]
    cells[index] = dataclasses.replace(cells[index], source=cells[index].source.replace(mutant.old, mutant.new))
    return cells, index


def _run_cell(cell, index, namespace, timeout):
    """Run one cell as nbgrader would; returns the error text, "" if it raised nothing."""
    filename = f"<cell {index}: {cell.grade_id or 'code'}>"
    linecache.cache[filename] = (len(cell.source), None, cell.source.splitlines(True), filename)
    try:
        with _alarm(timeout, CellTimeout(f"the cell ran past its time limit of {timeout} s")), \
                contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            exec(compile(cell.source, filename, "exec"), namespace)
    except (Exception, CellTimeout) as error:  # noqa: BLE001 - the notebook's errors are what we grade
        return f"{type(error).__name__}: {error}"
    return ""


def grade_cells(cells, until=lambda result: False, timeout=120):
    """Run the cells in a fresh namespace; the result of each graded test cell, in order.

    Stops after the first graded result for which ``until(result)`` is true.
    """
    namespace, results = {"__name__": "__main__"}, []
    for index, cell in enumerate(cells):
        message = _run_cell(cell, index, namespace, timeout)
        if cell.points:
            results.append(TestResult(cell.grade_id, cell.points, 0 if message else cell.points, message))
            if until(results[-1]):
                break
    return results


def _without_hidden_tests(source):
    return re.sub(r"### BEGIN HIDDEN TESTS\n.*?### END HIDDEN TESTS", "", source, flags=re.S)


def _caught(mutant, results):
    """Some test lost points with a message naming the case, and every ``zero`` test scored 0."""
    zeroed = {r.grade_id for r in results if r.score == 0}
    named = any(r.score < r.points and mutant.names in r.message for r in results)
    return named and zeroed.issuperset(mutant.zero)


def check_mutant(assignment, mutant, cells=None):
    """(results of the tests run, why the tests miss the mutant or None when they catch it).

    Grading stops as soon as the mutant is proven caught, so later tests are not run. The hidden
    tests before the mutated cell are not run either: they pass, since the mutant has not run yet
    (and later cells cannot depend on them, since the release notebook has none).
    """
    mutated, index = mutate(cells or solution_cells(assignment), mutant)
    mutated = [dataclasses.replace(cell, source=_without_hidden_tests(cell.source)) if i < index else cell
               for i, cell in enumerate(mutated)]
    results = []
    grade_cells(mutated, until=lambda result: results.append(result) or _caught(mutant, results))
    if _caught(mutant, results):
        return results, None
    lost = [f"  {r.grade_id}: {r.score:g}/{r.points:g} {r.message}" for r in results if r.score < r.points]
    why = [f"{test} does not score 0" for test in mutant.zero if not any(
        r.grade_id == test and r.score == 0 for r in results)]
    if not lost:
        why.append("no test loses points")
    elif not any(mutant.names in line for line in lost):
        why.append(f"no failure message contains {mutant.names!r}")
    return results, f"not caught: {'; '.join(why)}\n" + "\n".join(lost)


def check_catalogue(path, start=0, progress=None):
    """Check the mutants of a catalogue file from the ``start``-th on; prints one line per mutant,
    returns the misses. Before each mutant, [its index, the misses so far] is written to the file
    ``progress``, if given, as JSON."""
    assignment, mutants = load_catalogue(path)
    cells, missed = solution_cells(assignment), []
    for index, mutant in enumerate(mutants[start:], start):
        if progress:
            Path(progress).write_text(json.dumps([index, missed]))
        if mutant.versions and sys.version_info[:2] not in mutant.versions:
            mutate(cells, mutant)  # a stale entry fails on every version
            print(f"{assignment} skipped (not a mistake on this Python's bytecode) {mutant.name}", flush=True)
            continue
        tinydynamo.reset()
        started = time.perf_counter()
        results, problem = check_mutant(assignment, mutant, cells)
        lost = sum(r.points - r.score for r in results)
        print(f"{assignment} {'MISSED' if problem else 'caught'} (-{lost:g} points, "
              f"{time.perf_counter() - started:.1f} s) {mutant.name}", flush=True)
        if problem:
            print(problem, flush=True)
            missed.append(mutant.name)
    return missed


def load_catalogue(path):
    """(assignment, [Mutant]) from a catalogue file that defines ASSIGNMENT and MUTANTS."""
    spec = importlib.util.spec_from_file_location(f"mutants_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ASSIGNMENT, module.MUTANTS


def check_contained(path):
    """check_catalogue in a process of its own, in a directory of its own: a catalogue's setup (a01
    hides ``dis.stack_effect``) cannot reach the next one, and a mutant that kills Python (a08's C++
    dividing by zero) is judged as nbgrader's ``ContainedExecute`` would, from the case that was
    running; then a new process goes on with the next mutant. Returns the misses."""
    from .execute import crashed_case  # nbgrader's side, for the parent process only

    path, start, missed = os.path.abspath(path), 0, []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tinydynamo.__file__).parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory(prefix="tinydynamo-mutants-") as directory:
        progress = Path(directory) / "progress.json"
        while True:
            progress.unlink(missing_ok=True)
            child = subprocess.run([sys.executable, "-m", __spec__.name, "--child", path, str(start), str(progress)],
                                   cwd=directory, env=env)
            if not progress.exists():
                return missed + [f"{path}: the checker failed (exit status {child.returncode})"]
            index, missed_before = json.loads(progress.read_text())
            missed += missed_before
            if child.returncode == 0:
                return missed
            missed += _judge_crash(path, index, child.returncode, crashed_case(directory))
            start = index + 1


def _judge_crash(path, index, status, case):
    """[] if the mutant that killed the checker would be caught by nbgrader (the case that
    crashed names its mistake), else [its name]; prints one line, as check_catalogue does."""
    assignment, mutants = load_catalogue(path)
    mutant, message = mutants[index], f"Python died (exit status {status}) in the case: {case}"
    caught = case is not None and mutant.names in message
    print(f"{assignment} {'caught' if caught else 'MISSED'} ({message}) {mutant.name}", flush=True)
    if not caught:
        print(f"not caught: no failure message contains {mutant.names!r}", flush=True)
    return [] if caught else [mutant.name]


def main(arguments):
    if arguments[:1] == ["--child"]:  # check_contained's process
        path, start, progress = arguments[1:]
        Path(progress).write_text(json.dumps([None, check_catalogue(path, int(start), progress)]))
        return 0
    missed = [name for path in arguments for name in check_contained(path)]
    print(f"{len(missed)} mutant(s) not caught" + "".join(f"\n  {name}" for name in missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
