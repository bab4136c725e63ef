"""Assignment a01 (chapter 1, "Python frames and bytecode"): corpora and checkers.

The learner writes a stack-effect table, a maximum-stack-depth simulator, a load/store
scanner and a tiny symbolic executor for straight-line bytecode. The checkers below run the
learner's functions on real code objects (the standard library's functions, module and class
bodies, generated functions) and on every straight-line opcode with a spread of arguments, and
compare with what CPython itself reports. ``dis.stack_effect`` (CPython's own answer to part 1) is
hidden from the notebook by ``hide_stack_effect``, which also refuses for the rest of the session
the checkers' handle on it and ctypes' access to CPython's C function; both are refused while grading.
Each call of the learner's code is stopped after TIME_LIMIT seconds, and reported with its case.
"""
import dis
import importlib
import opcode
import random
import sys
import types
import warnings

import _opcode

from .checking import (  # noqa: F401 (SUPPORTED_VERSIONS: the notebook's)
    SUPPORTED_VERSIONS, TimedCalls, _is_learners, _refuse, _start_refusing, no_delegation, not_run,
)

TIME_LIMIT = 5  # seconds per call of the learner's function (they take milliseconds)


def _timed(fn):
    return TimedCalls(fn, TIME_LIMIT)

VERSION = sys.version_info[:2]  # the learner's interpreter: its bytecode is the one graded

# Opcodes of straight-line code that the learner's table must cover: those of every supported version,
# then each version's own (3.12 drops PRECALL, adds RETURN_CONST...; 3.13 adds superinstructions...).
_SHARED_OPCODES = """RESUME NOP POP_TOP PUSH_NULL COPY SWAP LOAD_CONST LOAD_FAST STORE_FAST
    DELETE_FAST LOAD_GLOBAL STORE_GLOBAL LOAD_NAME STORE_NAME LOAD_DEREF STORE_DEREF LOAD_CLOSURE
    MAKE_CELL COPY_FREE_VARS LOAD_ATTR STORE_ATTR CALL BINARY_OP UNARY_NEGATIVE UNARY_NOT UNARY_INVERT
    COMPARE_OP IS_OP CONTAINS_OP BINARY_SUBSCR STORE_SUBSCR BUILD_TUPLE BUILD_LIST BUILD_SET BUILD_MAP
    BUILD_CONST_KEY_MAP BUILD_SLICE BUILD_STRING LIST_APPEND LIST_EXTEND DICT_UPDATE DICT_MERGE
    SET_UPDATE UNPACK_SEQUENCE MAKE_FUNCTION RETURN_VALUE CALL_FUNCTION_EX"""
_3_12_AND_LATER = "RETURN_CONST LOAD_FAST_CHECK BINARY_SLICE STORE_SLICE LOAD_SUPER_ATTR CALL_INTRINSIC_1"
_VERSION_OPCODES = {
    (3, 11): "LOAD_METHOD PRECALL KW_NAMES LIST_TO_TUPLE FORMAT_VALUE",
    (3, 12): f"KW_NAMES FORMAT_VALUE {_3_12_AND_LATER}",
    (3, 13): f"""{_3_12_AND_LATER} TO_BOOL CALL_KW LOAD_FAST_LOAD_FAST STORE_FAST_LOAD_FAST
        STORE_FAST_STORE_FAST SET_FUNCTION_ATTRIBUTE FORMAT_SIMPLE FORMAT_WITH_SPEC CONVERT_VALUE""",
}
STRAIGHT_LINE_OPCODES = frozenset(_SHARED_OPCODES.split() + _VERSION_OPCODES.get(VERSION, "").split())

STDLIB_MODULES = (
    "json", "os", "collections", "textwrap", "argparse", "difflib", "re", "typing",
    "inspect", "ast", "pathlib", "dataclasses", "email.message", "string", "calendar",
)


def _walk_codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _walk_codes(const)


def _functions_of(module):
    for obj in vars(module).values():
        members = vars(obj).values() if isinstance(obj, type) else ()
        for fn in (obj, *members):
            if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
                yield fn


def is_straight_line(code):
    """No jumps, no exception table, not a generator or coroutine, only STRAIGHT_LINE_OPCODES."""
    if code.co_exceptiontable or code.co_flags & (
        0x20 | 0x80 | 0x100 | 0x200  # GENERATOR, COROUTINE, ITERABLE_COROUTINE, ASYNC_GENERATOR
    ):
        return False
    return all(ins.opname in STRAIGHT_LINE_OPCODES for ins in dis.get_instructions(code))


def stdlib_codes(straight_line_only=True):
    """Code objects of the standard library's functions (nested ones included), deduplicated."""
    seen, codes = set(), []
    for name in STDLIB_MODULES:
        for fn in _functions_of(importlib.import_module(name)):
            for code in _walk_codes(fn.__code__):
                if id(code) in seen or (straight_line_only and not is_straight_line(code)):
                    continue
                seen.add(id(code))
                codes.append(code)
    return codes


def describe(code):
    return f"{code.co_name} ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})"


# --- generated straight-line arithmetic functions ------------------------------------------

_OPERATORS = ("+", "-", "*", "/")


def _random_expression(rng, names, depth):
    if depth == 0 or rng.random() < 0.3:
        if rng.random() < 0.75:
            return rng.choice(names)
        return str(rng.randint(1, 9))
    if rng.random() < 0.1:
        return f"(-{_random_expression(rng, names, depth - 1)})"
    left = _random_expression(rng, names, depth - 1)
    right = _random_expression(rng, names, depth - 1)
    return f"({left} {rng.choice(_OPERATORS)} {right})"


def random_function_source(seed):
    """Source of a straight-line function: parameters, local and augmented assignments, one return."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(rng.randint(1, 4))]
    lines = [f"def f{seed}({', '.join(names)}):"]
    for i in range(rng.randint(0, 4)):
        if rng.random() < 0.3:  # rebinds a parameter or a local: p1 *= (p0 - 2)
            target = rng.choice(names)
            lines.append(f"    {target} {rng.choice(_OPERATORS)}= {_random_expression(rng, names, 2)}")
            continue
        lines.append(f"    t{i} = {_random_expression(rng, names, 3)}")
        names.append(f"t{i}")
    lines.append(f"    return {_random_expression(rng, names, 3)}")
    return "\n".join(lines)


def random_function(seed):
    """(the generated function, its source)."""
    namespace = {}
    source = random_function_source(seed)
    exec(compile(source, f"<a01 case {seed}>", "exec"), namespace)
    return namespace[f"f{seed}"], source


# --- checkers: each returns a list of human-readable failures ------------------------------


def _call(fn, *args):
    """Run learner code (a ``_timed`` function); an exception, or an infinite loop, becomes part of
    the failure message, never a crash."""
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - any learner error is reported, not raised
        return None, f"raised {type(e).__name__}: {e}"


def _checkers_stack_effect(cpython_stack_effect):
    """(the expected effect of an instruction, a block that refuses the learner both it and
    CPython's function): CPython's function lives in their closure, not in a module attribute."""

    def expected_effect(ins):
        return cpython_stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None)

    expected_effect.__qualname__ = "_expected_effect"  # as the notebook sees it, a01._expected_effect

    def refusing_stack_effect():
        return no_delegation(cpython_stack_effect, expected_effect)

    return expected_effect, refusing_stack_effect


_expected_effect, _refusing_stack_effect = _checkers_stack_effect(dis.stack_effect)
_CPYTHON_SYMBOL = "PyCompile_OpcodeStackEffect"  # the C function behind dis.stack_effect


def _refuse_cpython_symbol(event, args):
    """An audit hook: the learner's code may not look up CPython's C stack effect through ctypes."""
    if event.startswith("ctypes.dlsym") and _CPYTHON_SYMBOL in str(args[1]) and _is_learners(sys._getframe(1)):
        _refuse(f"ctypes' {args[1]}")


def hide_stack_effect():
    """For the rest of the session, part 1's answer is out of the notebook's reach: ``dis.stack_effect``
    (and its aliases) is replaced, the checkers' ``_expected_effect`` refuses the learner's calls, and
    so does ctypes' lookup of CPython's C function."""

    def stack_effect(*args, **kwargs):
        raise RuntimeError("dis.stack_effect is CPython's answer to part 1, so this notebook hides it: "
                           "read the dis documentation and write your own table")

    if dis.stack_effect.__module__ == __name__:
        return  # hidden already
    dis.stack_effect = opcode.stack_effect = _opcode.stack_effect = stack_effect
    _start_refusing(_expected_effect)
    sys.addaudithook(_refuse_cpython_symbol)


# Arguments worth trying per opcode: every flag combination, counts 0 to 5, both method bits.
_FLAG_ARGS = {"MAKE_FUNCTION": range(16), "FORMAT_VALUE": range(8), "CALL_FUNCTION_EX": range(2),
              "LOAD_GLOBAL": range(8), "LOAD_ATTR": range(8), "LOAD_SUPER_ATTR": range(8), "BUILD_SLICE": (2, 3),
              "COPY": (1, 2, 3), "SWAP": (2, 3), "CONVERT_VALUE": (1, 2, 3), "SET_FUNCTION_ATTRIBUTE": (1, 2, 4, 8)}


def instruction(name, arg):
    """A synthetic ``dis.Instruction`` of opcode ``name`` (its fields differ between versions)."""
    values = {"opname": name, "opcode": dis.opmap[name], "arg": arg, "argval": arg, "argrepr": "",
              "offset": 0, "is_jump_target": False}
    return dis.Instruction(**{field: values.get(field) for field in dis.Instruction._fields})


def every_opcode_instructions():
    """A synthetic instruction for every straight-line opcode and a spread of its arguments,
    so the rare ones (BUILD_SLICE 3, FORMAT_VALUE with a format spec...) are tested too."""
    instructions = []
    for name in sorted(STRAIGHT_LINE_OPCODES & set(dis.opmap)):
        args = _FLAG_ARGS.get(name, range(6)) if dis.opmap[name] >= dis.HAVE_ARGUMENT else (None,)
        instructions += [instruction(name, arg) for arg in args]
    return instructions


def other_opcode_instructions():
    """One instruction of each opcode outside STRAIGHT_LINE_OPCODES: stack_effect raises ValueError."""
    names = sorted(set(dis.opmap) - STRAIGHT_LINE_OPCODES - {"CACHE", "EXTENDED_ARG"})
    return [instruction(name, 1) for name in names]


def check_stack_effect(stack_effect, codes=(), instructions=()):
    """Compare with CPython's ``dis.stack_effect`` on the instructions of ``codes`` and on
    ``instructions``; an instruction outside STRAIGHT_LINE_OPCODES must raise ValueError."""
    cases = [(f"in {describe(code)}", ins) for code in codes for ins in dis.get_instructions(code)
             if ins.opname in STRAIGHT_LINE_OPCODES]
    cases += [("", ins) for ins in instructions]
    failures, timed = [], _timed(stack_effect)
    with _refusing_stack_effect():
        for where, ins in cases:
            got, error = _call(timed, ins)
            call = f"stack_effect({ins.opname} arg={ins.arg}){' ' + where if where else ''}"
            if ins.opname not in STRAIGHT_LINE_OPCODES:
                if error is None or "ValueError" not in error:
                    failures.append(f"{call}: {error or f'returned {got!r}'}; {ins.opname} is not a "
                                    "straight-line opcode, so it must raise ValueError")
            elif error or got != _expected_effect(ins):
                failures.append(f"{call}: {error or f'returned {got!r}'}, expected {_expected_effect(ins)}")
    return failures


def anonymous(code):
    """A copy of ``code`` with its co_stacksize blanked, that does not say where it comes from (file,
    name, first line; nested code too): the depth must come from the simulation, not from
    recompiling the source the code came from and reading its co_stacksize."""
    consts = tuple(anonymous(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_stacksize=0, co_consts=consts, co_filename="<a01 case>", co_name="f",
                        co_qualname="f", co_firstlineno=1)


def check_max_stack_depth(max_stack_depth, codes):
    """The simulated depth must equal CPython's co_stacksize. The learner's function gets an
    ``anonymous`` copy of each code object."""
    failures, timed = [], _timed(max_stack_depth)
    for code in codes:
        with _refusing_stack_effect():
            got, error = _call(timed, anonymous(code))
        if error or got != code.co_stacksize:
            failures.append(f"max_stack_depth({describe(code)}): {error or f'returned {got!r}'}, "
                            f"expected co_stacksize = {code.co_stacksize}")
    return failures


# --- generated straight-line code for max_stack_depth: nested calls, containers, unpacking... -----

def _random_operand(rng, names, depth):
    """An expression over ``names`` whose evaluation goes ``depth`` levels deep on the stack."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(names + ["1", "'s'", "None"])
    sub = lambda: _random_operand(rng, names, depth - 1)  # noqa: E731
    forms = [
        lambda: f"({sub()} {rng.choice(['+', '*', '-', '%', '<<', '&', '@'])} {sub()})",
        lambda: f"{rng.choice(names)}({', '.join(sub() for _ in range(rng.randint(0, 3)))})",
        lambda: f"{rng.choice(names)}.m({sub()}, k={sub()})",
        lambda: f"g({sub()}, *{sub()}, **{sub()})",
        lambda: f"g(*{sub()})",
        lambda: f"({', '.join(sub() for _ in range(rng.randint(2, 4)))})",
        lambda: f"[{', '.join(sub() for _ in range(rng.randint(0, 4)))}]",
        lambda: f"[*{sub()}, {sub()}]",
        lambda: f"({sub()}, *{sub()})",
        lambda: f"{{{sub()}, {sub()}}}",
        lambda: f"{{{sub()}: {sub()}, 'k': {sub()}}}",
        lambda: f"{{{sub()}: {sub()}, **{sub()}}}",
        lambda: f"{sub()}[{sub()}]",
        lambda: f"{sub()}[{sub()}:{sub()}:{sub()}]",
        lambda: f"{sub()}[{sub()}:{sub()}]",
        lambda: f"f'{{{rng.choice(names)}!r:>{{{rng.choice(names)}}}}} {{{rng.choice(names)}.m()}}'",
        lambda: f"(-{sub()} + ~{sub()})",
        lambda: f"({sub()} is not {sub()})",
        lambda: f"({sub()} not in {sub()})",
        lambda: f"({sub()} < {sub()})",
        lambda: f"(not {sub()})",
        lambda: f"{{*{sub()}, {sub()}}}",
        lambda: f"(lambda: {rng.choice(names)})",
        lambda: f"(lambda u, v={sub()}, *, w={sub()}: u)",
        lambda: f"{rng.choice(names)}.attr",
    ]
    return rng.choice(forms)()


def random_straight_line_source(seed):
    """Source of a function whose body is straight-line code of every kind a01 covers."""
    rng = random.Random(seed)
    names = ["a", "b", "c"]
    lines = [f"def g{seed}(a, b, c):", "    global G"]
    for i in range(rng.randint(1, 5)):
        depth = rng.randint(1, 4)
        value = _random_operand(rng, names, depth)
        kind = rng.random()
        if kind < 0.15:
            lines.append(f"    x{i}, y{i} = {value}")
            names += [f"x{i}", f"y{i}"]
        elif kind < 0.25:
            lines.append(f"    {rng.choice(names)}.attr = {value}")
        elif kind < 0.35:
            lines.append(f"    {rng.choice(names)}[{_random_operand(rng, names, 1)}] = {value}")
        elif kind < 0.42:
            lines.append(f"    G = {value}")
        elif kind < 0.5:
            lines.append(f"    {value}")
        elif kind < 0.56:
            lines.append(rng.choice(["    a, b = b, a", f"    {rng.choice(names)}[b] += {value}"]))
        else:
            lines.append(f"    x{i} = {value}")
            names.append(f"x{i}")
    lines.append(f"    return {_random_operand(rng, names, rng.randint(0, 3))}")
    return "\n".join(lines)


def generated_stack_cases(seeds):
    """[(source, an ``anonymous`` copy of the code, its real co_stacksize)] for generated
    straight-line functions. Only the copy survives: no code object holds the answer."""
    cases = []
    for seed in seeds:
        source = random_straight_line_source(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # `1 is not x`
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+ folds `~(not 1)`
            module = compile(source, "<a01 stack case>", "exec")
        (code,) = [c for c in module.co_consts if isinstance(c, types.CodeType)]
        if is_straight_line(code):
            cases.append((source, anonymous(code), code.co_stacksize))
        del module, code
    return cases


def check_generated_stack_depth(max_stack_depth, cases):
    """max_stack_depth on generated functions (see generated_stack_cases)."""
    failures, timed = [], _timed(max_stack_depth)
    for source, code, expected in cases:
        with _refusing_stack_effect():
            got, error = _call(timed, code)
        if error or got != expected:
            failures.append(f"max_stack_depth(the generated function below):\n{source}\n  "
                            f"{error or f'returned {got!r}'}, expected co_stacksize = {expected}")
    return failures


def why_not_straight_line(code):
    """What makes ``code`` more than one path: its first jump, or its exception table; or None."""
    jumps = [ins for ins in dis.get_instructions(code) if ins.opcode in dis.hasjrel + dis.hasjabs]
    if jumps:
        return f"jumps ({jumps[0].opname} at offset {jumps[0].offset})"
    return "has an exception table" if code.co_exceptiontable else None


def check_rejects_jumps(max_stack_depth, codes):
    """Code with a jump or an exception table must raise ValueError."""
    failures, timed = [], _timed(max_stack_depth)
    for code in codes:
        with _refusing_stack_effect():
            got, error = _call(timed, code)
        if error is None or "ValueError" not in error:
            failures.append(f"max_stack_depth({describe(code)}) {why_not_straight_line(code)} and must raise "
                            f"ValueError, but {error or f'returned {got!r}'}")
    return failures


def branching_codes():
    """The standard library's code objects with a jump or an exception table."""
    return [c for c in stdlib_codes(straight_line_only=False) if why_not_straight_line(c)]


# Straight-line code whose bytecode differs most between the supported versions: the opcodes that
# 3.12 and 3.13 added (in the comments) next to what 3.11 compiles the same source to.
VERSION_SOURCE = """
class Base:
    def m(self, *args):
        return args

class Child(Base):
    def m(self, a, b, c, d):
        head, tail = a[b:c], d[:-1]                 # BINARY_SLICE
        a[1:b] = (c, *d)                            # STORE_SLICE, CALL_INTRINSIC_1 (LIST_TO_TUPLE)
        text = f"{a!r:>{b}} {c}"                    # CONVERT_VALUE, FORMAT_WITH_SPEC, FORMAT_SIMPLE
        flag = not a                                # TO_BOOL
        a, b = b, a                                 # STORE_FAST_STORE_FAST
        order = sorted(a, key=b, reverse=c)         # CALL_KW (KW_NAMES before 3.13)
        fn = lambda u, v=b, *, w=c: u               # SET_FUNCTION_ATTRIBUTE
        return super().m(head, tail, text, flag, order, fn)  # LOAD_SUPER_ATTR

    def set(self, value):
        self.value = value                          # RETURN_CONST
"""


def version_codes():
    """The straight-line code objects of VERSION_SOURCE, compiled by the learner's interpreter."""
    module = compile(VERSION_SOURCE, "<a01 version cases>", "exec")
    return [code for code in _walk_codes(module) if code.co_name in ("m", "set", "<lambda>") and is_straight_line(code)]


# Code where variables live in a namespace (module and class bodies) or are declared global.
NAMESPACE_SOURCE = """
import os as operating_system
SCALE = 2
def set_scale(value):
    global SCALE, LAST
    SCALE = value
    LAST = SCALE
class Settings:
    size = SCALE * 2
    def get(self):
        return self.size
del size_hint
"""


def namespace_codes():
    """The module body, function and class body of NAMESPACE_SOURCE (LOAD_NAME, STORE_NAME, STORE_GLOBAL)."""
    return list(_walk_codes(compile(NAMESPACE_SOURCE, "<a01 namespaces>", "exec")))


_VARIABLE_KINDS = ("FAST", "GLOBAL", "NAME", "DEREF", "CLOSURE")
# 3.12's LOAD_FAST_CHECK and LOAD_FAST_AND_CLEAR read a local too; 3.13's superinstructions do two
# accesses, on the pair of names in their argval.
_LOADS = {f"LOAD_{kind}" for kind in _VARIABLE_KINDS} | {"LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"}
_STORES = {f"STORE_{kind}" for kind in _VARIABLE_KINDS}
_PAIRS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"), "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
          "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST")}


def _variable_accesses(ins):
    """[(opname, name)], one per variable that ``ins`` reads or writes."""
    if ins.opname in _PAIRS:
        return list(zip(_PAIRS[ins.opname], ins.argval))
    return [(ins.opname, ins.argval)] if ins.opname in _LOADS | _STORES else []


def _expected_loads_and_stores(code):
    """Names read and written by LOAD_*/STORE_* of variables (not attributes, not constants)."""
    accesses = [access for ins in dis.get_instructions(code) for access in _variable_accesses(ins)]
    return ({name for op, name in accesses if op in _LOADS}, {name for op, name in accesses if op in _STORES})


def check_loads_and_stores(loads_and_stores, codes):
    failures, timed = [], _timed(loads_and_stores)
    for code in codes:
        expected = _expected_loads_and_stores(code)
        with no_delegation(_expected_loads_and_stores):
            got, error = _call(timed, code)
        if not error and not (isinstance(got, tuple) and len(got) == 2
                              and all(isinstance(names, (set, frozenset)) for names in got)):
            error = f"returned {got!r}, not a pair of sets"
        if error or got != expected:
            failures.append(f"loads_and_stores({describe(code)}): {error or f'returned {got!r}'}, "
                            f"expected loads={sorted(expected[0])}, stores={sorted(expected[1])}")
    return failures


def check_symbolic_return(symbolic_return, seeds, trials=5):
    """The returned expression, evaluated on random inputs, must equal calling the function."""
    failures, timed = [], _timed(symbolic_return)
    for seed in seeds:
        fn, source = random_function(seed)
        with _refusing_stack_effect(), not_run(fn, "(the function you must read)"):
            expression, error = _call(timed, fn)
        if error or not isinstance(expression, str):
            failures.append(f"case {seed}:\n{source}\n  symbolic_return {error or f'returned {expression!r}'}")
            continue
        failure = compare_expression(fn, expression, random.Random(seed), trials)
        if failure:
            failures.append(f"case {seed}:\n{source}\n  {failure}")
    return failures


def compare_expression(fn, expression, rng, trials=5):
    """Why ``expression`` (over fn's parameters) differs from calling ``fn``, or None."""
    params = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    for _ in range(trials):
        args = {p: rng.choice((-1, 1)) * rng.uniform(0.5, 4.0) for p in params}
        try:
            expected = fn(**args)
        except ZeroDivisionError:
            continue
        try:
            got = eval(expression, {"__builtins__": {}}, dict(args))
        except Exception as e:  # noqa: BLE001 - the learner's string may be any text
            return f"your expression {expression!r} cannot be evaluated: {type(e).__name__}: {e}"
        if abs(got - expected) > 1e-9 * max(1.0, abs(expected)):
            return f"your expression {expression!r} gives {got} for {args}, the function gives {expected}"
    return None
