"""Resume functions: the rest of a function after a graph break (book chapter 5,
"Graph breaks and resume functions").

When the translator meets something it cannot put in a graph, the transformed frame runs the
graph recorded so far, runs the unsupported instruction as ordinary Python, and then calls a
*resume function*: a new code object holding the rest of the original function. Its parameters
are everything that is live at that point:

    def resume_in_f_at_12(___stack0, ___stack1, x, y):   # the value stack, then the locals
        MAKE_CELL / COPY_FREE_VARS / RESUME                 # as any function starts
        LOAD_FAST ___stack0; PUSH_NULL; LOAD_FAST ___stack1 # rebuild the value stack
        JUMP_FORWARD  -> the instruction after the break
        ...every instruction of the original function, unchanged...

The original instructions keep their jump targets and exception-table entries, so loops, ``with``
blocks and ``try`` handlers after the break work as in the original. NULLs (the marker below a
callable that CALL expects) cannot be passed as arguments: the prologue pushes them itself.

The frame hook sees a call of the resume function like any other call, so the rest of the
function becomes graphs too (and may break again). ``ContinueExecutionCache`` keeps one resume
function per (original code, instruction, stack layout, locals): every pass through a graph
break, and every recompilation, reuses it. A resume function of a resume function is built from
the *original* code, so prologues do not pile up.
"""
import inspect
import weakref

from .bytecode import TERMINATORS, assemble, copy_instructions, create_instruction, decode, is_jump

# Instructions that read or write a local variable (or the contents of a cell), for liveness.
READS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST", "LOAD_DEREF",
         "LOAD_CLOSURE", "DELETE_DEREF", "LOAD_CLASSDEREF"}
WRITES = {"STORE_FAST", "DELETE_FAST", "LOAD_FAST_AND_CLEAR", "STORE_DEREF", "DELETE_DEREF"}


def stack_names(count):
    """The parameters that carry the value stack into a resume function."""
    return tuple(f"___stack{i}" for i in range(count))


def resume_prologue(code, target, stack_size, nulls):
    """The instructions a resume function of ``code`` starts with: make its cells, copy its free
    variables and RESUME, as every function does; then push the value stack (``stack_size``
    items, bottom first: NULL at the positions in ``nulls``, the parameters ``___stack0``,
    ``___stack1``... elsewhere) and jump to the instruction ``target``."""
    prologue = [create_instruction("MAKE_CELL", argval=name) for name in code.co_cellvars]
    if code.co_freevars:
        prologue.append(create_instruction("COPY_FREE_VARS", arg=len(code.co_freevars)))
    prologue.append(create_instruction("RESUME", arg=0))
    values = iter(stack_names(stack_size - len(nulls)))
    for position in range(stack_size):
        if position in nulls:
            prologue.append(create_instruction("PUSH_NULL"))
        else:
            prologue.append(create_instruction("LOAD_FAST", argval=next(values)))
    prologue.append(create_instruction("JUMP_FORWARD", target=target))
    return prologue


def create_resume(code, target, stack_size, nulls, argnames):
    """A code object that runs ``code`` from its instruction number ``target`` on.

    Its positional parameters are the non-NULL values of the value stack at ``target`` (named
    ``___stack0``, ``___stack1``..., bottom first; the stack holds ``stack_size`` items, and the
    positions in ``nulls`` are NULL), followed by the locals named in ``argnames``.
    """
    instructions = copy_instructions(decode(code))
    params = stack_names(stack_size - len(nulls)) + tuple(argnames)
    prologue = resume_prologue(code, instructions[target], stack_size, nulls)
    name = f"resume_in_{code.co_name}_at_{line_of(instructions, target, code)}"
    return assemble(
        prologue + instructions, code,
        co_varnames=params + tuple(v for v in code.co_varnames if v not in params),
        co_argcount=len(params), co_posonlyargcount=0, co_kwonlyargcount=0,
        co_flags=code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS),
        co_name=name, co_qualname=code.co_qualname.rpartition(code.co_name)[0] + name,
    )


def line_of(instructions, index, code):
    """The source line of ``instructions[index]`` (or of the closest instruction before it)."""
    for inst in reversed(instructions[:index + 1]):
        if inst.positions is not None and inst.positions.lineno is not None:
            return inst.positions.lineno
    return code.co_firstlineno


class ContinueExecutionCache:
    """One resume function per (original code, instruction, stack layout, locals)."""

    cache = weakref.WeakKeyDictionary()  # original code -> {key: resume code}
    origins = weakref.WeakKeyDictionary()  # resume code -> (original code, length of its prologue)

    @classmethod
    def lookup(cls, code, index, stack_size, nulls, argnames):
        """The resume function that continues ``code`` at its instruction number ``index``."""
        code, index = cls.original(code, index)
        key = (index, stack_size, tuple(nulls), tuple(argnames))
        resumes = cls.cache.setdefault(code, {})
        if key not in resumes:
            resume = self_first(create_resume(code, index, stack_size, tuple(nulls), tuple(argnames)), code)
            cls.origins[resume] = (code, len(decode(resume)) - len(decode(code)))
            resumes[key] = resume
        return resumes[key]

    @classmethod
    def original(cls, code, index):
        """Where instruction ``index`` of ``code`` comes from, if ``code`` is a resume function."""
        if code in cls.origins:
            original, prologue = cls.origins[code]
            return original, index - prologue
        return code, index

    @classmethod
    def count(cls):
        """How many resume functions exist (tests check that loops do not make new ones)."""
        return sum(len(resumes) for resumes in cls.cache.values())

    @classmethod
    def clear(cls):
        cls.cache.clear()
        cls.origins.clear()


def uses_zero_arg_super(code):
    """Whether ``code`` may call ``super()`` with no arguments: the compiler gives every method
    that mentions ``super`` a ``__class__`` cell; CPython then reads the frame's first local."""
    return "__class__" in code.co_freevars and code.co_argcount > 0


def self_first(resume, original):
    """``resume`` with the first parameter of ``original`` (``self``) moved to the front.

    Zero-argument ``super()`` binds the frame's first local. In a resume function that would be
    ``___stack0``, so a resume function of a method that uses it takes ``self`` first; the
    translator passes it first (``InstructionTranslator.resume_self``)."""
    if not uses_zero_arg_super(original):
        return resume
    first = original.co_varnames[0]
    params = resume.co_varnames[:resume.co_argcount]
    if first not in params or params[0] == first:
        return resume
    varnames = (first,) + tuple(v for v in resume.co_varnames if v != first)
    return assemble(decode(resume), resume, co_varnames=varnames)


# --- which locals the rest of the function needs ------------------------------------------------


def live_locals(instructions, start):
    """Names of the locals (and cells) that some path from ``instructions[start]`` reads before
    it assigns them: only those are passed to the resume function."""
    index = {inst: i for i, inst in enumerate(instructions)}
    live = [set() for _ in instructions]
    changed = True
    while changed:  # a backward data-flow analysis, iterated until nothing changes
        changed = False
        for i in reversed(range(len(instructions))):
            inst = instructions[i]
            after = set().union(*(live[j] for j in successors(instructions, index, i)))
            reads = {inst.argval} if inst.opname in READS else set()
            writes = {inst.argval} if inst.opname in WRITES else set()
            now = reads | (after - writes)
            if now != live[i]:
                live[i], changed = now, True
    return live[start]


def successors(instructions, index, i):
    """Where control can go after instruction ``i``: the next one, a jump target, a handler."""
    inst = instructions[i]
    found = []
    if inst.opname not in TERMINATORS and i + 1 < len(instructions):
        found.append(i + 1)
    if is_jump(inst):
        found.append(index[inst.target])
    if inst.exn_tab_entry is not None:
        found.append(index[inst.exn_tab_entry.target])
    return found
