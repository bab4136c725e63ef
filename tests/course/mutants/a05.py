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
]
