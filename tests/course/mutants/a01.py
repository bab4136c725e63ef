"""a01_bytecode: plausible mistakes in the four tools over straight-line bytecode."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a01_bytecode"

_FIRST = "    op, arg = instr.opname, instr.arg\n"  # the first line of the solution of stack_effect

MUTANTS = [
    # part 1: stack_effect
    Mutant("LOAD_GLOBAL forgets the NULL bit", "return 1 + (arg & 1)", "return 1", "LOAD_GLOBAL"),
    Mutant("BUILD_MAP pops one value per entry", "return 1 - 2 * arg", "return 1 - arg", "BUILD_MAP"),
    Mutant("BUILD_SLICE always pops two", '"BUILD_STRING", "BUILD_SLICE")', '"BUILD_STRING")', "BUILD_SLICE"),
    Mutant("FORMAT_VALUE ignores the format spec", "return -1 if arg & 0x04 else 0", "return 0", "FORMAT_VALUE",
           versions=((3, 11), (3, 12))),
    Mutant("CALL_FUNCTION_EX ignores the keyword flag", "return -2 - (arg & 1)", "return -2", "CALL_FUNCTION_EX"),
    Mutant("MAKE_FUNCTION pops one value for any flags", 'return -bin(arg & 0x0F).count("1")',
           "return -1 if arg & 0x0F else 0", "MAKE_FUNCTION", versions=((3, 11), (3, 12))),
    Mutant("SET_FUNCTION_ATTRIBUTE pops nothing (3.13)", '"SET_FUNCTION_ATTRIBUTE": -1', '"SET_FUNCTION_ATTRIBUTE": 0',
           "SET_FUNCTION_ATTRIBUTE", versions=((3, 13),)),
    Mutant("FORMAT_WITH_SPEC pops only the value (3.13)", '"FORMAT_WITH_SPEC": -1', '"FORMAT_WITH_SPEC": 0',
           "FORMAT_WITH_SPEC", versions=((3, 13),)),
    Mutant("UNPACK_SEQUENCE off by one", "return arg - 1", "return arg", "UNPACK_SEQUENCE"),
    Mutant("CALL pops its arguments again (PRECALL already did)", '"LOAD_ATTR": 0, "CALL": -1}', '"LOAD_ATTR": 0}',
           "CALL", versions=((3, 11),)),
    Mutant("LOAD_ATTR ignores the method bit (3.12+)", "        return arg & 1\n", "        return 0\n", "LOAD_ATTR",
           versions=((3, 12), (3, 13))),
    Mutant("CALL forgets the arguments (3.12+: no PRECALL pops them)", "        return -1 - arg\n",
           "        return -1\n", "CALL", versions=((3, 12), (3, 13))),
    Mutant("CALL_KW forgets the tuple of keyword names (3.13)", "return -2 - arg", "return -1 - arg", "CALL_KW",
           versions=((3, 13),)),
    Mutant("LOAD_SUPER_ATTR pops only self (3.12+)", "return -2 + (arg & 1)", "return arg & 1", "LOAD_SUPER_ATTR",
           versions=((3, 12), (3, 13))),
    Mutant("the superinstructions count as one instruction (3.13)", '"LOAD_FAST_LOAD_FAST": 2, "STORE_FAST_LOAD_FAST": 0,\n'
           '              "STORE_FAST_STORE_FAST": -2,', '"LOAD_FAST_LOAD_FAST": 1, "STORE_FAST_LOAD_FAST": 0,\n'
           '              "STORE_FAST_STORE_FAST": -1,', "FAST_", versions=((3, 13),)),
    Mutant("an unknown opcode gets 0 instead of ValueError",
           '    raise ValueError(f"no stack effect known for {op}")', "    return 0", "must raise ValueError"),
    Mutant("delegates to dis.stack_effect, grabbed under another name",
           "    op, arg = instr.opname, instr.arg\n",
           "    import _opcode\n"
           "    return _opcode.stack_effect(instr.opcode, instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None)\n",
           "dis.stack_effect", zero=("test_stack_effect_example", "test_stack_effect_stdlib")),
    Mutant("delegates to the grader's own table (a01._expected_effect)", "    op, arg = instr.opname, instr.arg\n",
           "    if instr.opname not in a01.STRAIGHT_LINE_OPCODES:\n        raise ValueError(instr.opname)\n"
           "    return a01._expected_effect(instr)\n",
           "a01._expected_effect", zero=("test_stack_effect_example", "test_stack_effect_stdlib")),
    Mutant("delegates to CPython's table in a thread, from a reloaded _opcode",
           "    op, arg = instr.opname, instr.arg\n",
           "    import concurrent.futures, importlib, _opcode\n"
           "    if instr.opname not in a01.STRAIGHT_LINE_OPCODES:\n        raise ValueError(instr.opname)\n"
           "    with concurrent.futures.ThreadPoolExecutor(1) as pool:\n"
           "        return pool.submit(importlib.reload(_opcode).stack_effect, instr.opcode,\n"
           "                           instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None).result()\n",
           "stack_effect", zero=("test_stack_effect_example", "test_stack_effect_stdlib")),
    # part 2: max_stack_depth
    Mutant("max_stack_depth does not count RETURN_CONST's constant (3.13)", "deepest = max(deepest, depth + 1)",
           "deepest = max(deepest, depth)", "expected co_stacksize", versions=((3, 13),)),
    Mutant("max_stack_depth starts at depth 1", "depth = deepest = 0", "depth = deepest = 1", "expected co_stacksize"),
    Mutant("max_stack_depth returns the depth at the end", "    return deepest\n", "    return depth\n",
           "expected co_stacksize"),
    Mutant("max_stack_depth adds pushes but not pops", "depth += stack_effect(instr)",
           "depth += max(stack_effect(instr), 0)", "expected co_stacksize"),
    Mutant("max_stack_depth reads co_stacksize", "    depth = deepest = 0\n",
           "    return code.co_stacksize\n", "expected co_stacksize",
           zero=("test_max_stack_depth_example", "test_max_stack_depth_stdlib")),
    Mutant("max_stack_depth looks the code up in the notebook's copies of it",
           "    depth = deepest = 0\n",
           "    for known in STDLIB + [_example.__code__, _deep.__code__]:\n"
           "        if (known.co_name, known.co_code) == (code.co_name, code.co_code):\n"
           "            return known.co_stacksize\n"
           "    raise ValueError(f'{code.co_name} is not in STDLIB')\n",
           "generated", zero=("test_max_stack_depth_stdlib",)),
    Mutant("max_stack_depth copied from the book's stack_walk (chapter 1)",
           "        depth += stack_effect(instr)\n",
           "        depth += dis.stack_effect(instr.opcode, instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None)\n",
           "dis.stack_effect"),
    # part 3: loads_and_stores
    Mutant("loads_and_stores forgets cell variables", '"NAME", "DEREF", "CLOSURE")', '"NAME", "CLOSURE")',
           "loads_and_stores(inner"),
    Mutant("loads_and_stores forgets module and class namespaces", '("FAST", "GLOBAL", "NAME",', '("FAST", "GLOBAL",',
           "loads_and_stores(<module> (<a01 namespaces>"),
    Mutant("loads_and_stores counts DELETE_FAST as a store", '            elif kind == "STORE":',
           '            elif kind in ("STORE", "DELETE"):', "loads_and_stores("),
    Mutant("loads_and_stores reads only the first name of a superinstruction (3.13)",
           "(second, instr.argval[1])]", "]", "loads_and_stores(", versions=((3, 13),)),
    Mutant("loads_and_stores misses LOAD_FAST_CHECK (3.12+)", '.removesuffix("_CHECK")', "", "loads_and_stores(",
           versions=((3, 12), (3, 13))),
    # part 4: symbolic_return
    Mutant("symbolic_return keeps the '=' of augmented operators", "instr.argrepr.rstrip('=')", "instr.argrepr",
           "case 10"),
    Mutant("symbolic_return pops the operands in the wrong order", "right, left = stack.pop(), stack.pop()",
           "left, right = stack.pop(), stack.pop()", "case "),
    Mutant("symbolic_return drops the parentheses", 'stack.append(f"({left} {instr.argrepr.rstrip(\'=\')} {right})")',
           'stack.append(f"{left} {instr.argrepr.rstrip(\'=\')} {right}")', "case "),
    Mutant("symbolic_return calls a copy of fn with objects that record the operations",
           "    code = fn.__code__\n",
           "    class Recorder(str):\n"
           "        def __add__(a, b): return Recorder(f'({a} + {b})')\n"
           "        def __radd__(a, b): return Recorder(f'({b} + {a})')\n"
           "        def __sub__(a, b): return Recorder(f'({a} - {b})')\n"
           "        def __rsub__(a, b): return Recorder(f'({b} - {a})')\n"
           "        def __mul__(a, b): return Recorder(f'({a} * {b})')\n"
           "        def __rmul__(a, b): return Recorder(f'({b} * {a})')\n"
           "        def __truediv__(a, b): return Recorder(f'({a} / {b})')\n"
           "        def __rtruediv__(a, b): return Recorder(f'({b} / {a})')\n"
           "        def __neg__(a): return Recorder(f'(-{a})')\n"
           "    import types\n"
           "    copy = types.FunctionType(fn.__code__.replace(co_name='copy'), {})\n"
           "    return str(copy(*map(Recorder, fn.__code__.co_varnames[:fn.__code__.co_argcount])))\n",
           "read its code instead of calling it", zero=("test_symbolic_return_generated",)),
    Mutant("symbolic_return returns the constant's value, not its repr (3.12+)", "return repr(instr.argval)",
           "return instr.argval", "case ", versions=((3, 12), (3, 13))),
    Mutant("symbolic_return loads one name of LOAD_FAST_LOAD_FAST (3.13)",
           "stack += [env[name] for name in instr.argval]", "stack.append(env[instr.argval[0]])", "case ",
           versions=((3, 13),)),
    Mutant("symbolic_return stores the name, not the expression", "env[instr.argval] = stack.pop()",
           "stack.pop()\n            env[instr.argval] = instr.argval", "case "),
    # learner5's round
    # part 1: stack_effect
    Mutant("delegates to CPython's C API through ctypes (PyCompile_OpcodeStackEffect)", _FIRST,
           "    import ctypes\n"
           "    if instr.opname not in a01.STRAIGHT_LINE_OPCODES:\n        raise ValueError(instr.opname)\n"
           "    f = ctypes.pythonapi.PyCompile_OpcodeStackEffect\n"
           "    f.argtypes, f.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int\n"
           "    return f(instr.opcode, instr.arg or 0)\n",
           "PyCompile_OpcodeStackEffect", zero=("test_stack_effect_example", "test_stack_effect_stdlib")),
    Mutant("builds its table from the grader's a01._expected_effect when the cell runs (before grading)",
           "def stack_effect(instr):\n",
           "_TABLE = {(op, arg): a01._expected_effect(a01.instruction(op, arg if dis.opmap[op] >= dis.HAVE_ARGUMENT else None))\n"
           "          for op in a01.STRAIGHT_LINE_OPCODES for arg in (range(64) if dis.opmap[op] >= dis.HAVE_ARGUMENT else [None])}\n"
           "def stack_effect(instr):\n"
           "    if instr.opname not in a01.STRAIGHT_LINE_OPCODES:\n        raise ValueError(instr.opname)\n"
           "    return _TABLE[instr.opname, instr.arg]\n",
           "stack_effect", zero=("test_stack_effect_example", "test_stack_effect_stdlib")),
    Mutant("MAKE_FUNCTION forgets the closure flag", 'return -bin(arg & 0x0F).count("1")',
           'return -bin(arg & 0x07).count("1")', "MAKE_FUNCTION"),
    Mutant("BUILD_CONST_KEY_MAP forgets the keys tuple", "BUILD_CONST_KEY_MAP\":\n        return -arg\n",
           "BUILD_CONST_KEY_MAP\":\n        return 1 - arg\n", "BUILD_CONST_KEY_MAP"),
    Mutant("LOAD_GLOBAL reads the NULL bit from the high bit", "return 1 + (arg & 1)", "return 1 + (arg >> 7 & 1)",
           "LOAD_GLOBAL"),
    Mutant("KW_NAMES pops the names tuple", '"KW_NAMES": 0, "LIST_TO_TUPLE"', '"KW_NAMES": -1, "LIST_TO_TUPLE"',
           "KW_NAMES", versions=((3, 11),)),
    Mutant("SWAP counted as popping one", '["RESUME", "NOP", "MAKE_CELL", "COPY_FREE_VARS", "SWAP",',
           '["RESUME", "NOP", "MAKE_CELL", "COPY_FREE_VARS",', "SWAP"),
    Mutant("an unknown opcode raises KeyError, not ValueError",
           '    raise ValueError(f"no stack effect known for {op}")', '    raise KeyError(op)', "must raise ValueError"),
    # part 2: max_stack_depth
    Mutant("max_stack_depth recompiles the code's source and reads co_stacksize",
           "    depth = deepest = 0\n",
           "    import linecache, re, types\n"
           "    seed = re.fullmatch(r'<a01 stack case (\\d+)>', code.co_filename)\n"
           "    if seed:\n"
           "        source = a01.random_straight_line_source(int(seed.group(1)))\n"
           "    elif code.co_filename == '<a01 version cases>':\n"
           "        source = a01.VERSION_SOURCE\n"
           "    else:\n"
           "        source = ''.join(linecache.getlines(code.co_filename))\n"
           "    def walk(c):\n"
           "        yield c\n"
           "        for k in c.co_consts:\n"
           "            if isinstance(k, types.CodeType):\n"
           "                yield from walk(k)\n"
           "    for c in walk(compile(source, code.co_filename, 'exec')):\n"
           "        if c.co_code == code.co_code and c.co_name == code.co_name:\n"
           "            for instr in dis.get_instructions(code):\n"
           "                stack_effect(instr)\n"
           "            return c.co_stacksize\n"
           "    raise LookupError(f'no source found for {code.co_name}')\n",
           "expected co_stacksize", zero=("test_max_stack_depth_stdlib",)),
    Mutant("max_stack_depth returns the deepest push, not the depth", "        depth += stack_effect(instr)\n        deepest = max(deepest, depth)\n",
           "        deepest = max(deepest, stack_effect(instr))\n", "expected co_stacksize"),
    # part 3: loads_and_stores
    Mutant("loads_and_stores forgets LOAD_CLOSURE", '"NAME", "DEREF", "CLOSURE")', '"NAME", "DEREF")',
           "loads_and_stores("),
    Mutant("loads_and_stores counts attributes as variables", '            if where in ("FAST", "GLOBAL", "NAME", "DEREF", "CLOSURE"):\n',
           '            if where in ("FAST", "GLOBAL", "NAME", "DEREF", "CLOSURE", "ATTR", "METHOD"):\n', "loads_and_stores("),
    Mutant("loads_and_stores returns lists, not sets", "    return loads, stores\n",
           "    return sorted(loads), sorted(stores)\n", "not a pair of sets"),
    Mutant("loads_and_stores swaps the pair", "    return loads, stores\n", "    return stores, loads\n",
           "loads_and_stores("),
    Mutant("loads_and_stores only scans the top-level code, skipping STORE_GLOBAL", '("FAST", "GLOBAL", "NAME",',
           '("FAST", "NAME",', "loads_and_stores("),
    # part 4: symbolic_return
    Mutant("symbolic_return maps BINARY_OP args by number, forgetting the in-place ones",
           "stack.append(f\"({left} {instr.argrepr.rstrip('=')} {right})\")",
           "stack.append(f\"({left} {({0: '+', 10: '-', 5: '*', 11: '/'}).get(instr.arg, '+')} {right})\")", "case "),
    Mutant("LIST_TO_TUPLE counted as popping the list", '"KW_NAMES": 0, "LIST_TO_TUPLE": 0', '"KW_NAMES": 0, "LIST_TO_TUPLE": -1',
           "LIST_TO_TUPLE", versions=((3, 11),)),
    Mutant("LOAD_METHOD pushes two without popping the object", '{"LOAD_METHOD": 1,', '{"LOAD_METHOD": 2,',
           "LOAD_METHOD", versions=((3, 11),)),
    Mutant("COPY_FREE_VARS missing from the table", '"MAKE_CELL", "COPY_FREE_VARS", "SWAP",', '"MAKE_CELL", "SWAP",',
           "COPY_FREE_VARS"),
    Mutant("max_stack_depth follows jumps instead of refusing them (loops forever on a loop)",
           "    for instr in dis.get_instructions(code):\n        if instr.opcode in jumps:\n"
           "            raise ValueError(f\"{code.co_name} jumps at offset {instr.offset} ({instr.opname})\")\n",
           "    instrs = list(dis.get_instructions(code))\n    at = {i.offset: k for k, i in enumerate(instrs)}\n    k = 0\n"
           "    while k < len(instrs):\n        instr = instrs[k]\n        k += 1\n"
           "        if instr.opcode in jumps:\n            k = at[instr.argval]\n            continue\n",
           "ran past its time limit"),
    Mutant("loads_and_stores reads the names from argrepr", "        for opname, name in plain_accesses(instr):\n",
           "        for opname, name in [(instr.opname, instr.argrepr)]:\n", "loads_and_stores("),
    Mutant("loads_and_stores counts a deletion as a read", '                if kind == "LOAD":',
           '                if kind in ("LOAD", "DELETE"):', "loads_and_stores(<module>"),
    Mutant("symbolic_return never rebinds a parameter", "            env[instr.argval] = stack.pop()\n",
           "            value = stack.pop()\n            if instr.argval not in params:\n                env[instr.argval] = value\n",
           "case "),
]
