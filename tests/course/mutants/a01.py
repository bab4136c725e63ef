"""a01_bytecode: plausible mistakes in the four tools over straight-line bytecode."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a01_bytecode"

MUTANTS = [
    # part 1: stack_effect
    Mutant("LOAD_GLOBAL forgets the NULL bit", "return 1 + (arg & 1)", "return 1", "LOAD_GLOBAL"),
    Mutant("BUILD_MAP pops one value per entry", "return 1 - 2 * arg", "return 1 - arg", "BUILD_MAP"),
    Mutant("BUILD_SLICE always pops two", '"BUILD_STRING", "BUILD_SLICE")', '"BUILD_STRING")', "BUILD_SLICE"),
    Mutant("FORMAT_VALUE ignores the format spec", "return -1 if arg & 0x04 else 0", "return 0", "FORMAT_VALUE"),
    Mutant("CALL_FUNCTION_EX ignores the keyword flag", "return -2 - (arg & 1)", "return -2", "CALL_FUNCTION_EX"),
    Mutant("MAKE_FUNCTION pops one value for any flags", 'return -bin(arg & 0x0F).count("1")',
           "return -1 if arg & 0x0F else 0", "MAKE_FUNCTION"),
    Mutant("UNPACK_SEQUENCE off by one", "return arg - 1", "return arg", "UNPACK_SEQUENCE"),
    Mutant("CALL pops its arguments again (PRECALL already did)", '"RETURN_VALUE", "CALL"],', '"RETURN_VALUE"],',
           "CALL"),
    Mutant("an unknown opcode gets 0 instead of ValueError",
           '    raise ValueError(f"no stack effect known for {op}")', "    return 0", "must raise ValueError"),
    Mutant("delegates to dis.stack_effect, grabbed under another name",
           "    op, arg = instr.opname, instr.arg\n",
           "    import _opcode\n"
           "    return _opcode.stack_effect(instr.opcode, instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None)\n",
           "dis.stack_effect", zero=("test_stack_effect_example", "test_stack_effect_stdlib")),
    # part 2: max_stack_depth
    Mutant("max_stack_depth starts at depth 1", "depth = deepest = 0", "depth = deepest = 1", "expected co_stacksize"),
    Mutant("max_stack_depth returns the depth at the end", "    return deepest\n", "    return depth\n",
           "expected co_stacksize"),
    Mutant("max_stack_depth adds pushes but not pops", "depth += stack_effect(instr)",
           "depth += max(stack_effect(instr), 0)", "expected co_stacksize"),
    Mutant("max_stack_depth reads co_stacksize", "    depth = deepest = 0\n",
           "    return code.co_stacksize\n", "expected co_stacksize",
           zero=("test_max_stack_depth_example", "test_max_stack_depth_stdlib")),
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
    # part 4: symbolic_return
    Mutant("symbolic_return keeps the '=' of augmented operators", "instr.argrepr.rstrip('=')", "instr.argrepr",
           "case 10"),
    Mutant("symbolic_return pops the operands in the wrong order", "right, left = stack.pop(), stack.pop()",
           "left, right = stack.pop(), stack.pop()", "case "),
    Mutant("symbolic_return drops the parentheses", 'stack.append(f"({left} {instr.argrepr.rstrip(\'=\')} {right})")',
           'stack.append(f"{left} {instr.argrepr.rstrip(\'=\')} {right}")', "case "),
    Mutant("symbolic_return stores the name, not the expression", "env[instr.argval] = stack.pop()",
           "stack.pop()\n            env[instr.argval] = instr.argval", "case "),
]
