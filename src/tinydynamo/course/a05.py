"""Assignment a05 (chapter 5, "Graph breaks and resume functions"): the learner builds resume
functions, graded inside tinydynamo's real frontend.

The learner writes ``resume_prologue`` (the instructions a resume function starts with) and
``create_resume(code, target, stack_size, nulls, argnames)``, the function that
``ContinueExecutionCache`` calls to build a resume function. ``swapped_create_resume`` installs
the learner's ``create_resume`` in tinydynamo for the duration of a block (clearing tinydynamo's
caches before and after, so that no resume function built by someone else is reused). The
checkers

* check the prologue, and then the whole code object, of every resume function that the corpus
  below needs: its parameters, how its prologue rebuilds the value stack (NULLs included), where
  it jumps in, and that it keeps every instruction and exception handler of the original;
* compile the corpus functions (prints, logging, ``.item()``, branches on tensors, mutations of
  input lists, ``with torch.no_grad()`` blocks, closures, loops...) with the learner's resume
  functions, and compare two calls of each with eager PyTorch: the result or the exception, what
  it printed, the inputs afterwards, and the grad mode it leaves.

Each checker returns a list of human-readable failures naming the function; an exception raised
by the learner's code is reported with its line, never raised. While the learner's functions run,
the reference's ``create_resume`` and ``resume_prologue`` are out of reach
(``checking.no_delegation``), and a checker handed one of them refuses it. ``report``
(``checking.report``) turns the lists into one AssertionError for a notebook test.
"""
import contextlib
import dataclasses
import inspect
import io
import traceback
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

import tinydynamo

from .. import config
from ..dynamo import bytecode, resume_execution
from ..dynamo.bytecode import decode, is_jump
from ..dynamo.resume_execution import create_resume, resume_prologue, stack_names
from ..testing.graph_breaks import (
    and_of_tensors, cell_used_after_the_break, early_return, gradients_through_a_break,
    helper_that_prints, in_place_then_print, item_in_a_while_loop, nested_grad_modes, print_first,
    print_in_the_middle, print_inside_no_grad, returns_containers, three_prints, varargs_and_kwargs,
)
from .checking import ForbiddenCallError, no_delegation, report, time_limit  # noqa: F401 (report: for notebooks)
from .feedback import learner_location

# Seconds one call of the learner's resume_prologue or create_resume may run (they take
# milliseconds): past it, an infinite loop is reported as a failure of the function whose resume
# function was being built, and the checker names the functions it then leaves out (each would wait
# as long) instead of running past nbgrader's limit on the whole test.
TIME_LIMIT = 10
TIMED_OUT = "ran past its time limit"

# ------------------------------------------------------------------ the corpus
# The functions imported above are shared with tests/dynamo/graph_break_cases.py; these are a05's.


def _randn(*shape, seed=0, requires_grad=False):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).requires_grad_(requires_grad)


def item_in_the_middle(x):
    scale = x.abs().max().item()
    return x / scale


def appends_to_a_list(x, out):
    y = x.relu()
    out.append(y.sum().item())  # .item() breaks the graph; the list is live across the break
    return y * out[-1]


def branch_on_a_tensor(x):
    x = x * 2
    if x.sum() > 0:
        x = x + 1
    else:
        x = x - 1
    return x.cos()


def print_inside_a_call(x, y):
    return torch.add(x, y * len(str(print("inside") or "ab")))


def method_across_the_break(x):
    return (x + 1).mul(len(str(print("argument") or "xyz")))


def keyword_call_across_the_break(x):
    return F.softmax(x, dim=len(str(print("dim next") or "a")))


def list_on_the_stack(x, y):
    return torch.cat([x, y * int(print("in the list") is None), x + y])


def break_in_a_helper(x):
    y = x + 1
    z = helper_that_prints(y)
    return z.sigmoid()


def loop_calling_a_breaking_helper(x):
    for _ in range(20):
        x = helper_that_prints(x) * 0.5
    return x


def loop_after_the_break(x):
    print("loop next")
    for w in (0.5, 2.0, 3.0):
        x = x * w
    return x


def print_in_a_loop(x):
    for i in range(3):
        x = x + i
        print("iteration", i)
    return x


class Box:
    def __init__(self):
        self.scale = 2.0

    def __eq__(self, other):
        return type(other) is Box and vars(self).keys() == vars(other).keys() and all(
            torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
            for a, b in zip(vars(self).values(), vars(other).values()))


def writes_an_attribute(x, box):
    box.result = (x * box.scale).sum().item()  # .item() breaks the graph before the write
    return x + box.result


def raise_inside_no_grad(x):
    with torch.no_grad():
        y = x * 2
        raise_value_error(y.shape[0])
    return y


def raise_value_error(n):
    raise ValueError(f"rows: {n}")


def make_closure():
    offset, scale = torch.arange(5.0), 0.5

    def closure_that_prints(x):  # two free variables: offset and scale
        y = x + offset
        print("closure")
        return y * offset * scale

    return closure_that_prints


closure_that_prints = make_closure()


def make_closure_with_a_cell():
    scale = 0.5

    def closure_with_a_cell(x):  # a free variable (scale) and a cell (y, which shifted reads)
        y = x * scale
        print("closure with a cell")

        def shifted():
            return y + scale

        return shifted() * 2

    return closure_with_a_cell


closure_with_a_cell = make_closure_with_a_cell()


def positional_only_arguments(x, y, z, /):  # the resume function has other parameters
    w = x + y * z
    print("positional-only")
    return w * 2


class PrintingNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        print("hidden", tuple(h.shape))
        return self.fc2(h)


NET = PrintingNet()


def module_that_prints(x):
    return NET(x)


@dataclasses.dataclass
class Case:
    fn: object
    make_inputs: object  # () -> (args, kwargs), fresh for every call
    resumes: bool = True  # False: the break is inside a loop, the frame runs eagerly


def _x(*extra, **kwargs):
    return lambda: ((_randn(4, 5), *(e() if callable(e) else e for e in extra)), kwargs)


def _grad_x():
    return (_randn(4, 5, requires_grad=True),), {}


CASES = {case.fn.__name__: case for case in [
    Case(print_in_the_middle, _x()),
    Case(print_first, _x()),
    Case(item_in_the_middle, _x()),
    Case(appends_to_a_list, _x(list)),
    Case(branch_on_a_tensor, _x()),
    Case(print_inside_a_call, _x(lambda: _randn(4, 5, seed=1))),
    Case(method_across_the_break, _x()),
    Case(keyword_call_across_the_break, _x()),
    Case(list_on_the_stack, _x(lambda: _randn(4, 5, seed=1))),
    Case(three_prints, _x()),
    Case(break_in_a_helper, _x()),
    Case(loop_calling_a_breaking_helper, _x()),
    Case(loop_after_the_break, _x()),
    Case(print_in_a_loop, _x(), resumes=False),
    Case(in_place_then_print, _x()),
    Case(writes_an_attribute, _x(Box)),
    Case(print_inside_no_grad, _grad_x),
    Case(nested_grad_modes, _grad_x),
    Case(raise_inside_no_grad, _grad_x),
    Case(closure_that_prints, _x()),
    Case(closure_with_a_cell, _x()),
    Case(positional_only_arguments, _x(lambda: _randn(4, 5, seed=1), 3.0)),
    Case(cell_used_after_the_break, _x()),
    Case(varargs_and_kwargs, _x(1, 2, scale=3.0, shift=1.0)),
    Case(early_return, _x()),
    Case(and_of_tensors, _x(lambda: _randn(4, 5, seed=1))),
    Case(item_in_a_while_loop, _x()),
    Case(returns_containers, _x()),
    Case(gradients_through_a_break, _grad_x),
    Case(module_that_prints, _x()),
]}
BASIC = ["print_in_the_middle", "print_first", "item_in_the_middle", "appends_to_a_list",
         "branch_on_a_tensor"]
MORE = [name for name in CASES if name not in BASIC]


# ------------------------------------------------------------------ swapping create_resume in


class LearnerError(Exception):
    """The learner's create_resume raised, or built a resume function that cannot be run."""


@dataclasses.dataclass
class Request:
    """One resume function that tinydynamo asked for: the arguments of create_resume."""

    code: types.CodeType
    target: int
    stack_size: int
    nulls: tuple
    argnames: tuple

    def describe(self):
        inst = decode(self.code)[self.target]
        return (f"the resume function of {self.code.co_name}() at instruction {self.target} "
                f"({inst.opname}, line {inst.positions.lineno}), stack_size={self.stack_size}, "
                f"nulls={self.nulls}, argnames={self.argnames}")


class ResumeRecorder:
    """What ContinueExecutionCache calls while the learner's create_resume is swapped in: it
    calls theirs, checks the code object before CPython runs it, and keeps what went wrong."""

    def __init__(self, create_resume):
        self.create_resume = create_resume
        self.requests = []
        self.failure = None

    def __call__(self, code, target, stack_size, nulls, argnames):
        request = Request(code, target, stack_size, nulls, argnames)
        self.requests.append(request)
        try:
            with no_delegation(*REFUSED), time_limit(TIME_LIMIT, "it"):
                resume = self.create_resume(code, target, stack_size, nulls, argnames)
        except Exception as e:  # noqa: BLE001 -- reported by the checker, with the function's name
            self.failure = (f"your create_resume raised {described(e)}"
                            f"\n    while building {request.describe()}")
            raise LearnerError(self.failure) from e
        problems = resume_problems(resume, request)
        if problems:
            self.failure = "\n    ".join([f"for {request.describe()}:"] + problems)
            raise LearnerError(self.failure)
        return resume


# The learner writes these: while the learner's code runs, they are out of reach (the recorder
# too, which stands in for tinydynamo's create_resume while the learner's is swapped in).
REFERENCE = (create_resume, resume_prologue, ResumeRecorder.__call__)
# ...and the cache that asks for them (a learner's call of it would be served the reference's).
REFUSED = (*REFERENCE, resume_execution.ContinueExecutionCache.lookup)


def refused(fn, names, what):
    """A failure per name if ``fn`` is the reference's own function rather than the learner's."""
    if inspect.unwrap(fn) not in REFERENCE:
        return []
    return [f"{name}: {fn.__qualname__} is tinydynamo's own {what}, not yours: write it yourself"
            for name in names]


@contextlib.contextmanager
def swapped_create_resume(create_resume):
    """Within the block, tinydynamo builds every resume function with ``create_resume``
    (errors are not suppressed: a broken resume function must not quietly run eagerly)."""
    tinydynamo.reset()
    recorder = ResumeRecorder(create_resume)
    previous = resume_execution.create_resume
    resume_execution.create_resume = recorder
    try:
        with config.patch(suppress_errors=False, strict=True):
            yield recorder
    finally:
        resume_execution.create_resume = previous
        tinydynamo.reset()


# ------------------------------------------------------------------ checking a resume function


def prologue_problems(prologue, target_inst, request):
    """What is wrong with the instructions a resume function starts with."""
    code = request.code
    names = [inst.opname for inst in prologue]
    if "RESUME" not in names:
        return ["the prologue has no RESUME instruction"]
    start = [f"{inst.opname} {inst.argval if inst.opname == 'MAKE_CELL' else inst.arg}"
             for inst in prologue[:names.index("RESUME")]]
    cells = [f"MAKE_CELL {name}" for name in code.co_cellvars]
    free = [f"COPY_FREE_VARS {len(code.co_freevars)}"] if code.co_freevars else []
    problems = []
    if sorted(start) != sorted(cells + free):  # in any order: each acts on slots of its own
        problems.append(f"before RESUME, a function makes its cells {list(code.co_cellvars)} and copies its "
                        f"{len(code.co_freevars)} free variables: expected {free + cells} (in any order), "
                        f"got {start}")
    return problems + stack_problems(prologue[names.index("RESUME") + 1:], target_inst, request)


def stack_problems(pushes, target_inst, request):
    """The instructions after RESUME must rebuild the value stack, then jump to the target."""
    if not pushes or pushes[-1].opname not in ("JUMP_FORWARD", "JUMP_BACKWARD"):
        return ["the prologue must end with a JUMP_FORWARD to the instruction after the break"]
    problems = []
    if pushes[-1].target is not target_inst:
        where = pushes[-1].target
        problems.append(f"the prologue jumps to {where.opname if where else None} "
                        f"(line {where.positions.lineno if where else None}), not to the target "
                        f"{target_inst.opname} (line {target_inst.positions.lineno})")
    values = iter(stack_names(request.stack_size - len(request.nulls)))
    expected = ["PUSH_NULL" if i in request.nulls else f"LOAD_FAST {next(values)}"
                for i in range(request.stack_size)]
    got = [inst.opname if inst.opname == "PUSH_NULL" else f"{inst.opname} {inst.argval}" for inst in pushes[:-1]]
    if got != expected:
        problems.append(f"after RESUME, the prologue should push {expected} (bottom of the stack "
                        f"first), then jump; it pushes {got}")
    return problems


def resume_problems(resume, request):
    """What is wrong with a resume function: signature, prologue, and the original's code."""
    code = request.code
    if not isinstance(resume, types.CodeType):
        return [f"create_resume must return a code object, not {type(resume).__name__}"]
    params = stack_names(request.stack_size - len(request.nulls)) + tuple(request.argnames)
    problems = []
    if resume.co_varnames[:resume.co_argcount] != params or resume.co_kwonlyargcount or \
            resume.co_flags & (0x04 | 0x08):
        extra = [what for what, present in (("CO_VARARGS (*args) in co_flags", resume.co_flags & 0x04),
                                            ("CO_VARKEYWORDS (**kwargs) in co_flags", resume.co_flags & 0x08),
                                            (f"co_kwonlyargcount {resume.co_kwonlyargcount}",
                                             resume.co_kwonlyargcount)) if present]
        problems.append(f"its parameters must be exactly {params}, all positional (no *args, **kwargs "
                        f"or keyword-only ones); they are {resume.co_varnames[:resume.co_argcount]}"
                        + (f", with {', '.join(extra)}" if extra else ""))
    repeated = sorted({name for name in resume.co_varnames if resume.co_varnames.count(name) > 1})
    if repeated:
        problems.append(f"its co_varnames name {repeated} more than once: each local has one slot, so a "
                        "parameter that is also one of the original's locals must not be added again")
    for field in ("co_freevars", "co_cellvars", "co_filename"):
        if getattr(resume, field) != getattr(code, field):
            problems.append(f"its {field} is {getattr(resume, field)!r}, but the original's is "
                            f"{getattr(code, field)!r}")
    instructions, original = decode(resume), decode(code)
    start = len(instructions) - len(original)
    if start < 1:
        return problems + [f"it has {len(instructions)} instructions, but the original alone has "
                           f"{len(original)}: keep all of them (a loop may jump back before the break)"]
    problems += copy_problems(instructions[start:], original)
    problems += prologue_problems(instructions[:start], instructions[start + request.target], request)
    return problems


def copy_problems(copied, original):
    """The resume function must hold every instruction of the original, with the same jumps
    and exception handlers (a with block or a loop after the break needs them)."""
    where, home = {inst: i for i, inst in enumerate(copied)}, {inst: i for i, inst in enumerate(original)}
    for i, (mine, theirs) in enumerate(zip(copied, original)):
        line = theirs.positions.lineno
        if (mine.opname, mine.argval) != (theirs.opname, theirs.argval) and not is_jump(theirs):
            return [f"after the prologue, instruction {i} is {mine.opname} {mine.argval!r} but the "
                    f"original's is {theirs.opname} {theirs.argval!r} (line {line})"]
        if is_jump(theirs) and (mine.opname != theirs.opname or where.get(mine.target) != home[theirs.target]):
            return [f"the jump {theirs.opname} of line {line} does not go where the original's goes"]
        if handler(mine, where) != handler(theirs, home):
            return [f"instruction {i} ({theirs.opname}, line {line}) has exception handler "
                    f"{handler(mine, where)}, the original's has {handler(theirs, home)}: keep "
                    "the exception table (with blocks and try blocks need it)"]
    return []


def handler(inst, index):
    entry = inst.exn_tab_entry
    return None if entry is None else (index.get(entry.target), entry.depth, entry.lasti)


# ------------------------------------------------------------------ running functions


def requests_of(names):
    """[(name, Request)]: the resume functions that the corpus functions ``names`` need, as
    the reference asks for them (one that an earlier function needed already is not repeated)."""
    found = []
    with swapped_create_resume(create_resume) as recorder, contextlib.redirect_stdout(io.StringIO()):
        for name in names:
            start = len(recorder.requests)
            observe(tinydynamo.compile(CASES[name].fn, backend="eager"), CASES[name])
            found += [(name, request) for request in recorder.requests[start:]]
    return found


@dataclasses.dataclass
class Observed:
    outcome: tuple
    printed: str
    inputs: tuple
    grad_mode: bool


def observe(fn, case):
    args, kwargs = case.make_inputs()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            outcome = ("returned", fn(*args, **kwargs))
        except (ValueError, AssertionError) as e:  # what the corpus raises on purpose
            outcome = ("raised", type(e).__name__, str(e))
    grad_mode = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    return Observed(outcome, out.getvalue(), (args, kwargs), grad_mode)


def differences(name, actual, expected):
    """How a compiled call differed from the eager one."""
    found = []
    if actual.outcome[0] != expected.outcome[0] or (expected.outcome[0] == "raised"
                                                    and actual.outcome != expected.outcome):
        found.append(f"{name}: eager {describe_outcome(expected.outcome)}, compiled {describe_outcome(actual.outcome)}")
    elif not same(actual.outcome[1], expected.outcome[1]):
        found.append(f"{name}: returned {short(actual.outcome[1])}, eager returns {short(expected.outcome[1])}")
    if actual.printed != expected.printed:
        found.append(f"{name}: printed {actual.printed!r}, eager prints {expected.printed!r}")
    if not same(actual.inputs, expected.inputs):
        found.append(f"{name}: the arguments after the call are {short(actual.inputs)}, after an eager call "
                     f"{short(expected.inputs)}")
    if actual.grad_mode != expected.grad_mode:
        found.append(f"{name}: left grad mode {actual.grad_mode}, eager leaves {expected.grad_mode}")
    return found


def describe_outcome(outcome):
    return f"returns {short(outcome[1])}" if outcome[0] == "returned" else f"raises {outcome[1]}: {outcome[2]}"


def same(a, b):
    if isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and \
            a.requires_grad == b.requires_grad and torch.allclose(a, b, equal_nan=True)
    if isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(b, dict):
        return type(a) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in b)
    return a == b


def short(value, limit=120):
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def run_case(create_resume, name, calls=2):
    """Failures of ``name`` compiled with the learner's create_resume, against eager."""
    case = CASES[name]
    expected = observe(case.fn, case)
    with swapped_create_resume(create_resume) as recorder:
        compiled = tinydynamo.compile(case.fn, backend="eager")
        for call in range(calls):
            try:
                actual = observe(compiled, case)
            except LearnerError:
                return [f"{name}: {recorder.failure}"]
            except Exception as e:  # noqa: BLE001 -- a broken resume function is reported
                return [f"{name}: the compiled function raised {type(e).__name__}: {indented(e)}"
                        f" (call {call + 1}; resume functions built: {len(recorder.requests)})"]
            failures = differences(name, actual, expected)
            if failures:
                return failures
        if recorder.failure:
            return [f"{name}: {recorder.failure}"]
        if case.resumes and not recorder.requests:
            return [f"{name}: tinydynamo never asked for a resume function (was create_resume swapped in?)"]
    return []


# ------------------------------------------------------------------ the checkers


def check_prologues(resume_prologue, names):
    """The learner's prologue for every resume function that the functions ``names`` need."""
    failures = refused(resume_prologue, names, "resume_prologue")
    if failures:
        return failures
    for name, request in requests_of(names):
        instructions = decode(request.code)
        try:
            with no_delegation(*REFUSED), time_limit(TIME_LIMIT, "it"):
                prologue = list(resume_prologue(request.code, instructions[request.target],
                                                request.stack_size, request.nulls))
        except Exception as e:  # noqa: BLE001
            failures.append(f"{name}: your resume_prologue raised {described(e)}"
                            f"\n    for {request.describe()}")
            if TIMED_OUT in str(e):
                return failures + left_out(name, names)
            continue
        problems = prologue_problems(prologue, instructions[request.target], request)
        failures += [f"{name}, {request.describe()}: {problem}" for problem in problems]
    return failures


def check_resume_codes(create_resume, names):
    """The learner's code object for every resume function that the functions ``names`` need."""
    failures = refused(create_resume, names, "create_resume")
    if failures:
        return failures
    for name, request in requests_of(names):
        try:
            with no_delegation(*REFUSED), time_limit(TIME_LIMIT, "it"):
                resume = create_resume(request.code, request.target, request.stack_size,
                                       request.nulls, request.argnames)
        except Exception as e:  # noqa: BLE001
            failures.append(f"{name}: your create_resume raised {described(e)}"
                            f"\n    for {request.describe()}")
            if TIMED_OUT in str(e):
                return failures + left_out(name, names)
            continue
        failures += [f"{name}, {request.describe()}: {problem}" for problem in resume_problems(resume, request)]
    return failures


def check_functions(create_resume, names):
    """The functions ``names``, compiled with the learner's resume functions, behave as in eager."""
    failures = refused(create_resume, names, "create_resume")
    if failures:
        return failures
    for name in names:
        found = run_case(create_resume, name)
        failures += found
        if any(TIMED_OUT in failure for failure in found):
            return failures + left_out(name, names)
    return failures


def left_out(name, names):
    """The failure that names the functions after ``name`` that a checker leaves out after a time-out."""
    later = list(names)[list(names).index(name) + 1:]
    return [f"not run, after the time-out in {name}: {', '.join(later)}"] if later else []


# ------------------------------------------------------------------ reporting


def described(error):
    """``Type (in fn, line n: source): message`` for an error of the learner's code, with a hint when
    ``assemble`` could not place a jump's target (a KeyError that names the target)."""
    text = f"{type(error).__name__}{learner_location(error)}: {indented(error)}"
    frames = traceback.extract_tb(error.__traceback__)
    if isinstance(error, KeyError) and frames and frames[-1].filename == bytecode.__file__:
        text += ("\n    (assemble found no instruction for a jump's target among the instructions it was "
                 "given: a jump, the prologue's too, must target one of those very Instruction objects, "
                 "not an instruction's number, nor an instruction of another decode(code))")
    return text


def indented(text):
    """Every line of ``text``, the later ones indented under a failure's first line."""
    return "\n    ".join(str(text).strip().splitlines()) or "(no message)"
