"""Assignment a01 (chapter 1, "Python frames and bytecode"): corpora and checkers.

The learner writes a stack-effect table, a maximum-stack-depth simulator, a load/store
scanner and a tiny symbolic executor for straight-line bytecode. The checkers below run the
learner's functions on real code objects (the standard library's straight-line functions
and generated ones) and compare with what CPython itself reports.
"""
import contextlib
import dis
import importlib
import random
import types

# Opcodes that appear in straight-line 3.11 code and that the learner's table must cover.
STRAIGHT_LINE_OPCODES = frozenset(
    """RESUME NOP POP_TOP PUSH_NULL COPY SWAP LOAD_CONST LOAD_FAST LOAD_FAST_CHECK STORE_FAST
    DELETE_FAST LOAD_GLOBAL STORE_GLOBAL LOAD_NAME STORE_NAME LOAD_DEREF STORE_DEREF LOAD_CLOSURE
    MAKE_CELL COPY_FREE_VARS LOAD_ATTR STORE_ATTR LOAD_METHOD PRECALL CALL KW_NAMES BINARY_OP
    UNARY_NEGATIVE UNARY_NOT UNARY_INVERT COMPARE_OP IS_OP CONTAINS_OP BINARY_SUBSCR STORE_SUBSCR
    BUILD_TUPLE BUILD_LIST BUILD_SET BUILD_MAP BUILD_CONST_KEY_MAP BUILD_SLICE BUILD_STRING
    LIST_APPEND LIST_EXTEND LIST_TO_TUPLE DICT_UPDATE DICT_MERGE SET_UPDATE UNPACK_SEQUENCE
    FORMAT_VALUE MAKE_FUNCTION RETURN_VALUE CALL_FUNCTION_EX""".split()
)

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
    """Source of a straight-line function: parameters, a few local assignments, one return."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(rng.randint(1, 4))]
    lines = [f"def f{seed}({', '.join(names)}):"]
    for i in range(rng.randint(0, 4)):
        local = f"t{i}"
        lines.append(f"    {local} = {_random_expression(rng, names, 3)}")
        names.append(local)
    lines.append(f"    return {_random_expression(rng, names, 3)}")
    return "\n".join(lines)


def random_function(seed):
    namespace = {}
    source = random_function_source(seed)
    exec(compile(source, f"<a01 case {seed}>", "exec"), namespace)
    fn = namespace[f"f{seed}"]
    fn.source = source
    return fn


# --- checkers: each returns a list of human-readable failures ------------------------------


def _call(fn, *args):
    """Run learner code; an exception becomes part of the failure message, never a crash."""
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - any learner error is reported, not raised
        return None, f"raised {type(e).__name__}: {e}"


def check_stack_effect(stack_effect, codes):
    """Compare with ``dis.stack_effect``, which is hidden while the learner's function runs."""
    cases = [
        (code, ins, dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None))
        for code in codes
        for ins in dis.get_instructions(code)
        if ins.opname in STRAIGHT_LINE_OPCODES
    ]
    failures = []
    with _hidden_stack_effect():
        for code, ins, expected in cases:
            got, error = _call(stack_effect, ins)
            if error or got != expected:
                failures.append(
                    f"stack_effect({ins.opname} arg={ins.arg} argrepr={ins.argrepr!r}) in {describe(code)}: "
                    f"{error or f'returned {got!r}'}, expected {expected}"
                )
    return failures


@contextlib.contextmanager
def _hidden_stack_effect():
    real = dis.stack_effect

    def hidden(*args, **kwargs):
        raise RuntimeError("write your own table: dis.stack_effect is hidden while grading")

    dis.stack_effect = hidden
    try:
        yield
    finally:
        dis.stack_effect = real


def check_max_stack_depth(max_stack_depth, codes):
    failures = []
    for code in codes:
        with _hidden_stack_effect():
            got, error = _call(max_stack_depth, code)
        if error or got != code.co_stacksize:
            failures.append(
                f"max_stack_depth({describe(code)}): {error or f'returned {got!r}'}, "
                f"expected co_stacksize = {code.co_stacksize}"
            )
    return failures


def check_rejects_jumps(max_stack_depth, codes):
    failures = []
    for code in codes:
        got, error = _call(max_stack_depth, code)
        if error is None or "ValueError" not in error:
            failures.append(
                f"max_stack_depth({describe(code)}) has jumps or an exception table and must raise "
                f"ValueError, but {error or f'returned {got!r}'}"
            )
    return failures


def expected_loads_and_stores(code):
    """Names read and written by LOAD_*/STORE_* of variables (not attributes, not constants)."""
    kinds = ("FAST", "FAST_CHECK", "GLOBAL", "NAME", "DEREF", "CLOSURE")
    loads = {i.argval for i in dis.get_instructions(code) if i.opname in {f"LOAD_{k}" for k in kinds}}
    stores = {i.argval for i in dis.get_instructions(code) if i.opname in {f"STORE_{k}" for k in kinds}}
    return loads, stores


def check_loads_and_stores(loads_and_stores, codes):
    failures = []
    for code in codes:
        expected = expected_loads_and_stores(code)
        got, error = _call(loads_and_stores, code)
        if error or tuple(map(set, got)) != expected:
            failures.append(
                f"loads_and_stores({describe(code)}): {error or f'returned {got!r}'}, "
                f"expected loads={sorted(expected[0])}, stores={sorted(expected[1])}"
            )
    return failures


def check_symbolic_return(symbolic_return, seeds, trials=5):
    """The returned expression, evaluated on random inputs, must equal calling the function."""
    failures = []
    for seed in seeds:
        fn = random_function(seed)
        expression, error = _call(symbolic_return, fn)
        if error or not isinstance(expression, str):
            failures.append(f"case {seed}:\n{fn.source}\n  symbolic_return {error or f'returned {expression!r}'}")
            continue
        failure = _compare_expression(fn, expression, random.Random(seed), trials)
        if failure:
            failures.append(f"case {seed}:\n{fn.source}\n  {failure}")
    return failures


def _compare_expression(fn, expression, rng, trials):
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


def report(failures, limit=5):
    """Raise an AssertionError that shows the first few failures, for notebook tests."""
    if failures:
        shown = "\n".join(failures[:limit])
        more = f"\n... and {len(failures) - limit} more" if len(failures) > limit else ""
        raise AssertionError(f"{len(failures)} case(s) failed:\n{shown}{more}")
