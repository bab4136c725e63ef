"""Plausible mistakes in a05_resume_functions: each must cost points with a message naming the case."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a05_resume_functions"

PROLOGUE_DOC = ('    """The instructions that bring a fresh frame of the resume function to where the original\'s\n'
                '    frame was at ``target`` (an Instruction), and carry on there."""\n')
CREATE_DOC = '    """The rest of `code` from instruction number `target`, as a new code object."""\n'
PROLOGUE_TESTS = ("test_prologue_example", "test_prologue_corpus")
CREATE_TESTS = ("test_create_resume_basic", "test_create_resume_corpus")

MUTANTS = [
    Mutant("prologue: delegates to the reference resume_prologue", PROLOGUE_DOC,
           PROLOGUE_DOC + "    from tinydynamo.dynamo import resume_execution\n"
           "    return resume_execution.resume_prologue(code, target, stack_size, nulls)\n",
           "resume_prologue, the reference's own answer", zero=PROLOGUE_TESTS),
    Mutant("create_resume: delegates to the reference create_resume", CREATE_DOC,
           CREATE_DOC + "    from tinydynamo.dynamo.resume_execution import create_resume as ref\n"
           "    return ref(code, target, stack_size, nulls, argnames)\n",
           "the reference's own answer", zero=CREATE_TESTS),
    Mutant("prologue: copies the book's three-instruction example (no cells, free variables, NULLs)",
           "    prologue = [create_instruction(\"MAKE_CELL\", argval=name) for name in code.co_cellvars]\n"
           "    if code.co_freevars:\n"
           "        prologue.append(create_instruction(\"COPY_FREE_VARS\", arg=len(code.co_freevars)))\n"
           "    prologue.append(create_instruction(\"RESUME\", arg=0))\n"
           "    values = 0\n"
           "    for position in range(stack_size):\n"
           "        if position in nulls:\n"
           "            prologue.append(create_instruction(\"PUSH_NULL\"))\n"
           "        else:\n"
           "            prologue.append(create_instruction(\"LOAD_FAST\", argval=f\"___stack{values}\"))\n"
           "            values += 1\n",
           "    prologue = [create_instruction(\"RESUME\", arg=0)]\n"
           "    for position in range(stack_size):\n"
           "        prologue.append(create_instruction(\"LOAD_FAST\", argval=f\"___stack{position}\"))\n",
           "print_inside_a_call"),
    Mutant("prologue: no MAKE_CELL for the cells",
           '[create_instruction("MAKE_CELL", argval=name) for name in code.co_cellvars]', "[]",
           "closure_with_a_cell"),
    Mutant("prologue: no COPY_FREE_VARS for a closure",
           "    if code.co_freevars:\n        prologue.append(", "    if False:\n        prologue.append(",
           "closure_that_prints"),
    Mutant("prologue: COPY_FREE_VARS counts the cells, not the free variables",
           'arg=len(code.co_freevars)', "arg=len(code.co_cellvars) + 1", "closure_that_prints"),
    Mutant("prologue: a NULL on the stack is loaded as a parameter",
           "        if position in nulls:\n", "        if False:\n", "print_inside_a_call"),
    Mutant("prologue: the stack is rebuilt top first",
           'argval=f"___stack{values}"', 'argval=f"___stack{stack_size - len(nulls) - 1 - values}"',
           "list_on_the_stack"),
    Mutant("prologue: NULL positions counted from the top of the stack",
           "        if position in nulls:\n", "        if stack_size - 1 - position in nulls:\n",
           "print_inside_a_call"),
    Mutant("prologue: no jump to the target (runs the function from its start)",
           '    prologue.append(create_instruction("JUMP_FORWARD", target=target))\n', "",
           "print_in_the_middle"),
    Mutant("create_resume: drops the instructions before the target",
           "        prologue + instructions, code,", "        prologue + instructions[target:], code,",
           "loop_after_the_break"),
    Mutant("create_resume: keeps the *args/**kwargs flags",
           "co_flags=code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS),",
           "co_flags=code.co_flags,", "varargs_and_kwargs"),
    Mutant("create_resume: keeps the keyword-only parameter count",
           "co_kwonlyargcount=0,", "co_kwonlyargcount=code.co_kwonlyargcount,", "varargs_and_kwargs"),
    Mutant("create_resume: one ___stack parameter per stack slot, NULLs included",
           "range(stack_size - len(nulls))", "range(stack_size)", "print_inside_a_call"),
    Mutant("create_resume: the live locals come before the stack values",
           'params = tuple(f"___stack{i}" for i in range(stack_size - len(nulls))) + tuple(argnames)',
           'params = tuple(argnames) + tuple(f"___stack{i}" for i in range(stack_size - len(nulls)))',
           "print_in_the_middle"),
    Mutant("create_resume: the original's other locals lose their slots",
           "co_varnames=params + tuple(name for name in code.co_varnames if name not in params),",
           "co_varnames=params,", "print_in_the_middle"),
    # played as a learner (second round)
    Mutant("create_resume: keeps the original's positional-only count",
           "co_argcount=len(params), co_posonlyargcount=0,", "co_argcount=len(params),",
           "positional_only_arguments"),
    Mutant("prologue: no COPY_FREE_VARS when the function also has cells", "    if code.co_freevars:",
           "    if code.co_freevars and not code.co_cellvars:", "closure_with_a_cell"),
    Mutant("create_resume: co_varnames repeats the parameters that are also the original's locals",
           "co_varnames=params + tuple(name for name in code.co_varnames if name not in params),",
           "co_varnames=params + tuple(code.co_varnames),", "more than once"),
    # played as a learner (third round): new mistakes, each must cost points
    Mutant("prologue: RESUME before the cells and free variables",
           "    prologue = [create_instruction(\"MAKE_CELL\", argval=name) for name in code.co_cellvars]\n"
           "    if code.co_freevars:\n"
           "        prologue.append(create_instruction(\"COPY_FREE_VARS\", arg=len(code.co_freevars)))\n"
           "    prologue.append(create_instruction(\"RESUME\", arg=0))\n",
           "    prologue = [create_instruction(\"RESUME\", arg=0)]\n"
           "    prologue += [create_instruction(\"MAKE_CELL\", argval=name) for name in code.co_cellvars]\n"
           "    if code.co_freevars:\n"
           "        prologue.append(create_instruction(\"COPY_FREE_VARS\", arg=len(code.co_freevars)))\n",
           "closure_that_prints"),
    Mutant("prologue: COPY_FREE_VARS one short", "arg=len(code.co_freevars)", "arg=len(code.co_freevars) - 1",
           "closure_that_prints"),
    Mutant("prologue: MAKE_CELL for the free variables too", "for name in code.co_cellvars]",
           "for name in code.co_cellvars + code.co_freevars]", "closure_that_prints"),
    Mutant("prologue: a NULL pushed as None", 'create_instruction("PUSH_NULL")',
           'create_instruction("LOAD_CONST", argval=None)', "print_inside_a_call"),
    Mutant("prologue: stack_size taken to count the values only", "    for position in range(stack_size):\n",
           "    for position in range(stack_size - len(nulls)):\n", "print_inside_a_call"),
    Mutant("prologue: NULL positions compared with the number of values pushed", "        if position in nulls:\n",
           "        if values in nulls:\n", "print_inside_a_call"),
    Mutant("prologue: loops forever when a NULL lies below a value (forgot to step past it)",
           '            prologue.append(create_instruction("LOAD_FAST", argval=f"___stack{values}"))\n',
           "            below, p = 0, 0\n            while p < position:  # the values below this one\n"
           "                if p not in nulls:\n                    below += 1\n                    p += 1\n"
           '            prologue.append(create_instruction("LOAD_FAST", argval=f"___stack{below}"))\n',
           "appends_to_a_list: your resume_prologue raised LearnerTimeout"),
    Mutant("prologue: jumps with JUMP_BACKWARD", 'create_instruction("JUMP_FORWARD", target=target)',
           'create_instruction("JUMP_BACKWARD", target=target)', "print_in_the_middle"),
    Mutant("create_resume: jumps to the instruction after the target (the book's 'after the break')",
           "resume_prologue(code, instructions[target], stack_size, nulls)",
           "resume_prologue(code, instructions[target + 1], stack_size, nulls)", "print_in_the_middle"),
    Mutant("create_resume: the prologue jumps into a second decode of the code",
           "resume_prologue(code, instructions[target], stack_size, nulls)",
           "resume_prologue(code, decode(code)[target], stack_size, nulls)",
           "found no instruction for a jump's target"),
    Mutant("create_resume: passes the target's number, not its Instruction",
           "resume_prologue(code, instructions[target], stack_size, nulls)",
           "resume_prologue(code, target, stack_size, nulls)", "found no instruction for a jump's target"),
    Mutant("create_resume: clears CO_VARARGS but keeps CO_VARKEYWORDS",
           "~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)", "~inspect.CO_VARARGS", "varargs_and_kwargs"),
    Mutant("create_resume: stack parameters numbered from 1",
           'params = tuple(f"___stack{i}" for i in', 'params = tuple(f"___stack{i + 1}" for i in',
           "print_in_the_middle"),
    Mutant("create_resume: the live locals in reverse order", "+ tuple(argnames)\n", "+ tuple(reversed(argnames))\n",
           "its parameters must be exactly"),
    Mutant("create_resume: co_argcount counts the NULLs", "co_argcount=len(params),",
           "co_argcount=stack_size + len(argnames),", "print_inside_a_call"),
    Mutant("create_resume: forgets to return the code object", "    return assemble(\n", "    assemble(\n",
           "must return a code object, not NoneType"),
    Mutant("create_resume: returns the instructions, not a code object", "    return assemble(\n",
           "    return prologue + instructions or assemble(\n", "must return a code object, not list"),
    Mutant("create_resume: raises when the stack holds a NULL", CREATE_DOC,
           CREATE_DOC + "    if nulls:\n        raise NotImplementedError(\"NULLs on the stack\")\n",
           "print_inside_a_call"),
    Mutant("create_resume: the live locals sorted", "+ tuple(argnames)\n", "+ tuple(sorted(argnames))\n",
           "its parameters must be exactly"),
    Mutant("create_resume: leaves out the original's MAKE_CELL and COPY_FREE_VARS (the prologue has them)",
           "    instructions = decode(code)\n",
           "    instructions = [i for i in decode(code) if i.opname not in (\"MAKE_CELL\", \"COPY_FREE_VARS\")]\n",
           "closure_that_prints"),
    Mutant("create_resume: one stack value, as in the example",
           'params = tuple(f"___stack{i}" for i in range(stack_size - len(nulls))) + tuple(argnames)',
           'params = ("___stack0",) + tuple(argnames)', "appends_to_a_list"),
]


# ----------------------------------------------------------------------------------------------
# Round 6 of adversarial learners (2026-11-30): delegation through the graders' own helpers and
# the reference's entry points, missing cases, and a hang that now fails its case.
PARAMS = '    params = tuple(f"___stack{i}" for i in range(stack_size - len(nulls))) + tuple(argnames)\n'
CREATE_DOC = '    """The rest of `code` from instruction number `target`, as a new code object."""\n'
PROLOGUE_DOC = ('    """The instructions that bring a fresh frame of the resume function to where the original\'s\n'
                '    frame was at ``target`` (an Instruction), and carry on there."""\n')
CREATE_TESTS = ("test_create_resume_basic", "test_create_resume_corpus")
PROLOGUE_TESTS = ("test_prologue_example", "test_prologue_corpus")
LOAD = '            prologue.append(create_instruction("LOAD_FAST", argval=f"___stack{values}"))\n'

MUTANTS += [
    # part 1: the prologue
    Mutant("prologue: stack parameters named by their stack position (NULLs counted)", LOAD,
           '            prologue.append(create_instruction("LOAD_FAST", argval=f"___stack{position}"))\n',
           "print_inside_a_call"),
    Mutant("prologue: no RESUME", '    prologue.append(create_instruction("RESUME", arg=0))\n', "", "RESUME"),
    Mutant("prologue: MAKE_CELL only for the cells that arrive as parameters",
           '    prologue = [create_instruction("MAKE_CELL", argval=name) for name in code.co_cellvars]\n',
           '    prologue = [create_instruction("MAKE_CELL", argval=name) for name in code.co_cellvars\n'
           '                if name in code.co_varnames]\n', "closure_with_a_cell"),
    Mutant("prologue: the NULLs taken to be the lowest positions (only their number used)",
           "        if position in nulls:\n", "        if position < len(nulls):\n", "print_inside_a_call"),
    Mutant("prologue: COPY_FREE_VARS given its count as argval",
           '        prologue.append(create_instruction("COPY_FREE_VARS", arg=len(code.co_freevars)))\n',
           '        prologue.append(create_instruction("COPY_FREE_VARS", argval=len(code.co_freevars)))\n',
           "closure"),
    Mutant("prologue: a NOP jump target (JUMP_FORWARD to a NOP put before the target)",
           '    prologue.append(create_instruction("JUMP_FORWARD", target=target))\n',
           '    prologue.append(create_instruction("NOP"))\n', "print_in_the_middle"),
    Mutant("create_resume: the exception table entries dropped (assemble computes the table)",
           "    instructions = decode(code)\n    params",
           "    instructions = decode(code)\n    for inst in instructions:\n        inst.exn_tab_entry = None\n    params",
           "raise_inside_no_grad"),
    Mutant("create_resume: co_nlocals passed (the parameters only)",
           '        co_name=f"resume_in_{code.co_name}",\n',
           '        co_name=f"resume_in_{code.co_name}", co_nlocals=len(params),\n', "co_nlocals"),
    Mutant("create_resume: the prologue after the original instructions",
           "        prologue + instructions, code,", "        instructions + prologue, code,", "print_in_the_middle"),
    Mutant("create_resume: CO_VARARGS cleared with ^ (toggled on for a function without *args)",
           "        co_flags=code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS),\n",
           "        co_flags=code.co_flags ^ (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS),\n", 'CO_VARARGS (*args) in co_flags'),
    Mutant("create_resume: co_varnames without the original's other locals, co_nlocals left to assemble",
           "        co_varnames=params + tuple(name for name in code.co_varnames if name not in params),\n",
           "        co_varnames=params + tuple(name for name in code.co_varnames if name in code.co_cellvars and name not in params),\n",
           'print_in_the_middle'),
    Mutant("create_resume: co_cellvars cleared (the prologue's MAKE_CELL makes them)",
           '        co_name=f"resume_in_{code.co_name}",\n',
           '        co_name=f"resume_in_{code.co_name}", co_cellvars=(),\n', "cell"),
    Mutant("create_resume: hard-codes the visible example (one stack value, then the locals)", CREATE_DOC,
           CREATE_DOC + "    if stack_size == 1 and not nulls:\n"
           "        instructions = decode(code)\n"
           "        params = ('___stack0',) + tuple(argnames)\n"
           "        return assemble(resume_prologue(code, instructions[target], 1, ()) + instructions, code,\n"
           "                        co_argcount=len(params), co_posonlyargcount=0, co_kwonlyargcount=0,\n"
           "                        co_varnames=params + tuple(n for n in code.co_varnames if n not in params))\n",
           "args"),
    Mutant("create_resume: the live locals in the order of co_varnames", PARAMS,
           '    params = tuple(f"___stack{i}" for i in range(stack_size - len(nulls))) + tuple(\n'
           '        name for name in code.co_varnames + code.co_cellvars if name in argnames)\n', "argnames"),
    Mutant("create_resume: returns a function, not a code object", '        co_name=f"resume_in_{code.co_name}",\n    )\n',
           '        co_name=f"resume_in_{code.co_name}",\n    ) if False else __import__("types").FunctionType(assemble(\n'
           '        prologue + instructions, code, co_argcount=len(params), co_posonlyargcount=0, co_kwonlyargcount=0,\n'
           '        co_flags=code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS),\n'
           '        co_varnames=params + tuple(name for name in code.co_varnames if name not in params)), globals())\n',
           "create_resume"),
    Mutant("create_resume: the reference's, run by ContinueExecutionCache.lookup with the module global swapped back",
           CREATE_DOC,
           CREATE_DOC + "    from tinydynamo.dynamo import resume_execution as _rx\n"
           "    _saved, _rx.create_resume = _rx.create_resume, a05.REFERENCE[0]\n"
           "    try:\n"
           "        return _rx.ContinueExecutionCache.lookup(code, target, stack_size, nulls, argnames)\n"
           "    finally:\n"
           "        _rx.create_resume = _saved\n",
           "create_resume", zero=CREATE_TESTS),
    Mutant("prologue: cut out of the reference's resume function (made by ContinueExecutionCache.lookup)",
           PROLOGUE_DOC,
           PROLOGUE_DOC + "    from tinydynamo.dynamo import resume_execution as _rx\n"
           "    _index = next(i for i, inst in enumerate(decode(code)) if inst.offset == target.offset)\n"
           "    _argnames = tuple(n for n in code.co_varnames[:code.co_argcount])\n"
           "    _saved, _rx.create_resume = _rx.create_resume, a05.REFERENCE[0]\n"
           "    try:\n"
           "        _resume = a05.REFERENCE[0](code, _index, stack_size, tuple(nulls), ()) if False else "
           "_rx.ContinueExecutionCache.lookup(code, _index, stack_size, tuple(nulls), ())\n"
           "    finally:\n"
           "        _rx.create_resume = _saved\n"
           "    _prologue = decode(_resume)[:len(decode(_resume)) - len(decode(code))]\n"
           "    _prologue[-1].target = target\n"
           "    return _prologue\n",
           "resume_prologue", zero=PROLOGUE_TESTS),
]
