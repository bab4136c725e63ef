"""InstructionTranslator: run bytecode over VariableTrackers (book chapter 3,
"Symbolic execution").

This is a Python interpreter whose values are trackers. It keeps the state a real frame has,
explicitly, so that tracing can stop at any instruction and hand that state over:

- ``stack``: the value stack;
- ``symbolic_locals``: local variables (name -> tracker); ``cells``: closure cells;
- ``instruction_pointer``: the index of the next instruction.

There is one handler method per opcode, named after it (``LOAD_FAST``, ``BINARY_OP``, ``CALL``,
``POP_JUMP_IF_FALSE``...), for Python 3.11, 3.12 and 3.13 (a handler says which version added
its opcode). A handler pops trackers, asks them to do the operation (which may add a node to
the graph) and pushes the result. On 3.13 a NULL goes *above* the callable it belongs to
([callable, NULL, args]), where 3.11 and 3.12 put it below ([NULL, callable, args]); the stack
holds NullVariables in the version's order, so few handlers look at the version. Branches on
constants are decided right here, so only one path is traced; a branch on a tensor's *value*
is Unsupported.

``InstructionTranslator`` traces the frame the hook gave us and, at RETURN_VALUE, asks the
OutputGraph for the transformed code. ``InliningInstructionTranslator`` runs a called Python
function inside the same trace and hands its return value back to the caller's CALL.
Where an instruction is Unsupported, ``InstructionTranslator`` breaks the graph (chapter 5,
"Graph breaks and resume functions": ``step``, ``break_graph`` and the methods after it).
"""
import builtins
import collections.abc
import functools
import importlib.util
import inspect
import linecache
import operator
import sys
import types

import torch

from .._logging import trace_artifact
from ..utils import counters
from .bytecode import TERMINATORS, ExceptionTableEntry, _stack_effect, decode, is_jump
from . import trace_rules
from .codegen import PyCodegen
from .. import config
from .exc import (BackendCompilerFailed, RestartAnalysis, SkipFrame, TracedException, Unsupported, internal_error,
                  raise_at_trace_time, unsupported)
from .resume_execution import ContinueExecutionCache, live_locals, successors, uses_zero_arg_super
from .source import AttrSource, ClosureSource, GlobalSource, LocalSource
from .variables import (
    AutocastVariable,
    BuiltinVariable,
    CellVariable,
    ConstantVariable,
    ConstDictVariable,
    ExceptionVariable,
    GeneratorVariable,
    GetAttrVariable,
    GradModeVariable,
    ListIteratorVariable,
    ListVariable,
    NestedUserFunctionVariable,
    NullVariable,
    ProfilerRangeVariable,
    SetVariable,
    SliceVariable,
    SuperVariable,
    SymNodeVariable,
    SymSliceVariable,
    TensorVariable,
    TupleVariable,
    TypeVariable,
    UnboundVariable,
    UserDefinedObjectVariable,
    VariableBuilder,
    wrap_constant,
)
from .variables.builtin import is_same
from .variables.misc import is_trusted_module

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)
MAX_INSTRUCTIONS = 500_000  # per traced frame, inlined calls and unrolled loops included
MAX_INLINE_DEPTH = 48

# BINARY_OP's argument, in the order of CPython's NB_* constants.
BINARY_OPS = [
    operator.add, operator.and_, operator.floordiv, operator.lshift, operator.matmul, operator.mul,
    operator.mod, operator.or_, operator.pow, operator.rshift, operator.sub, operator.truediv,
    operator.xor, operator.iadd, operator.iand, operator.ifloordiv, operator.ilshift,
    operator.imatmul, operator.imul, operator.imod, operator.ior, operator.ipow, operator.irshift,
    operator.isub, operator.itruediv, operator.ixor,
]
COMPARE_OPS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
               ">": operator.gt, ">=": operator.ge}
@functools.lru_cache(maxsize=1024)
def decoded(code):
    return tuple(decode(code))


def is_python_context_manager(cls):
    """Whether ``cls`` defines ``__enter__`` and ``__exit__`` as Python functions."""
    return all(isinstance(inspect.getattr_static(cls, name, None), types.FunctionType)
               for name in ("__enter__", "__exit__"))


class InstructionTranslatorBase:
    def __init__(self, code, f_globals, symbolic_locals, closure_cells, output, parent=None):
        self.code = code
        self.instructions = decoded(code)
        self.indexof = {inst: i for i, inst in enumerate(self.instructions)}
        self.f_globals = f_globals
        f_builtins = f_globals.get("__builtins__", builtins)
        self.f_builtins = vars(f_builtins) if isinstance(f_builtins, types.ModuleType) else f_builtins
        self.symbolic_locals = symbolic_locals
        self.unread_args = {}  # arguments not read yet (wrapped, and guarded, on first read)
        self.cells = dict(zip(code.co_freevars, closure_cells))
        self.output = output
        self.parent = parent
        self.depth = parent.depth + 1 if parent else 0
        self.stack = []
        self.instruction_pointer = 0
        self.current_instruction = None
        self.kw_names = ()
        self.exc_info = []  # the exceptions being handled (PUSH_EXC_INFO), innermost last
        self.user_with_blocks = {}  # id of the __exit__ of a Python context manager -> (it, its BEFORE_WITH)
        self.done = False

    # --- the interpreter loop --------------------------------------------------------------------

    def suspended(self):
        """Whether the frame paused before its end (a generator at a ``yield``)."""
        return False

    def run(self):
        outer, self.output.current_tx = self.output.current_tx, self
        try:
            while not self.done and not self.suspended():
                self.step()
        except Unsupported as e:
            inst = self.current_instruction
            e.add_frame(self.code.co_filename, inst.positions.lineno if inst else None, self.code.co_name)
            raise
        finally:
            self.output.current_tx = outer

    def step(self):
        inst = self.instructions[self.instruction_pointer]
        self.instruction_pointer += 1
        self.current_instruction = inst
        self.output.instruction_count += 1
        if self.output.instruction_count > MAX_INSTRUCTIONS:
            unsupported(f"more than {MAX_INSTRUCTIONS} instructions (a very long or infinite loop)")
        handler = getattr(self, inst.opname, None)
        if handler is None:
            unsupported(f"the {inst.opname} instruction")
        try:
            handler(inst)
        except TracedException as error:
            error.first_seen.setdefault(self, inst)
            if not self.catch(error, inst):
                raise
        except (Unsupported, RestartAnalysis, BackendCompilerFailed, SkipFrame):
            raise
        except Exception as error:  # a bug of the translator: a graph break, unless strict
            if config.strict:
                raise
            counters["internal_errors"] += 1
            raise internal_error(inst, error) from error

    def catch(self, error, inst):
        """Start the ``except`` (or ``finally``) handler of the try block around ``inst`` for the
        exception the program raised there, as CPython unwinds: truncate the stack to the block's
        depth, push the exception and jump to the handler. False if no such block is around
        ``inst`` in this frame (the exception goes on to the caller's frame, if it is inlined).
        Inside a ``with`` block, only a context manager written in Python sees the exception
        (its ``__exit__`` may swallow it: ``contextlib.suppress``); for the others it stays
        Unsupported."""
        entry = inst.exn_tab_entry
        if entry is None:
            return False
        if self.instructions[self.indexof[entry.target] + 1].opname == "WITH_EXCEPT_START" and not (
                0 < entry.depth <= len(self.stack) and id(self.stack[entry.depth - 1]) in self.user_with_blocks):
            return False
        del self.stack[entry.depth:]
        if entry.lasti:
            self.push(ConstantVariable(self.indexof[inst]))
        self.push(ExceptionVariable(error))
        self.instruction_pointer = self.indexof[entry.target]
        return True

    def format_stack(self):
        """The user's frames, outermost first, as in a traceback (kept in node.meta)."""
        lines, tx = [], self
        while tx is not None:
            line = tx.current_instruction.positions.lineno if tx.current_instruction else None
            text = linecache.getline(tx.code.co_filename, line or 0).strip()
            lines.append(f'  File "{tx.code.co_filename}", line {line}, in {tx.code.co_name}\n    {text}')
            tx = tx.parent
        return "\n".join(reversed(lines))

    # --- helpers -----------------------------------------------------------------------------------

    def push(self, var):
        assert var is not None
        self.stack.append(var)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        values = self.stack[-n:]
        del self.stack[-n:]
        return values

    def jump(self, inst):
        self.instruction_pointer = self.indexof[inst.target]

    def build(self, value, source=None):
        """The tracker for a real Python value, read from ``source`` (guarded) or, with no source,
        known at trace time. Trackers wrap the values they reach through here: only the builder
        knows every tracker type."""
        return VariableBuilder(self, source)(value)

    def call_builtin(self, fn, *args):
        return BuiltinVariable(fn).call_function(self, list(args), {})

    def load_local(self, name):
        if name in self.unread_args:
            source = LocalSource(name)
            self.symbolic_locals[name] = self.build(self.unread_args.pop(name), source)
        if name not in self.symbolic_locals:
            unsupported(f"UnboundLocalError at trace time: {name!r} is read before it is assigned")
        return self.symbolic_locals[name]

    def load_global(self, name):
        if self.f_globals is self.output.root_globals and name in self.output.global_writes:
            return self.output.global_writes[name]
        if name in self.f_globals:
            return self.build(self.f_globals[name], self.global_source(name))
        if name in self.f_builtins:
            return self.build(self.f_builtins[name])
        unsupported(f"NameError at trace time: name {name!r} is not defined")

    def global_source(self, name):
        """``G['name']`` in the frame's own module; through an installed import elsewhere."""
        if self.f_globals is self.output.root_globals:
            return GlobalSource(name)
        module_name = self.f_globals.get("__name__")
        module = sys.modules.get(module_name)
        if module is None or vars(module) is not self.f_globals:  # a module that renames itself
            module_name = module_named_by(self.f_globals)  # (_collections_abc: "collections.abc")
        if module_name is None:
            unsupported(f"globals of {self.code.co_qualname}, which belong to no importable module")
        if is_trusted_module(module_name):
            return None
        return AttrSource(self.output.import_source(module_name), name)

    def cell(self, name):
        if name not in self.cells:
            unsupported(f"closure variable {name!r}")
        return self.cells[name]

    def inline_user_function(self, fn, args, kwargs):
        """Trace a call of a Python function inside this graph; return its return value."""
        code = fn.get_code()
        if self.depth >= MAX_INLINE_DEPTH:
            unsupported(f"calls nested more than {MAX_INLINE_DEPTH} deep (recursion?)")
        if trace_rules.inline_refusal(code) is not None:
            unsupported(trace_rules.inline_refusal(code))
        bound = fn.bind_args(self, args, kwargs)
        translator = InliningGeneratorInstructionTranslator if code.co_flags & inspect.CO_GENERATOR \
            else InliningInstructionTranslator
        tracer = translator(code, fn.get_globals(), bound, fn.closure_cells(self), self.output, parent=self)
        if translator is InliningGeneratorInstructionTranslator:
            return GeneratorVariable(tracer)  # its body runs when items are asked for
        tracer.run()
        return tracer.return_value

    def zero_arg_super(self):
        if "__class__" not in self.cells or not self.code.co_argcount:
            unsupported("super() outside a method")
        cls = self.cells["__class__"].get(self).as_python_constant()
        first = self.code.co_varnames[0]
        obj = self.cells[first].get(self) if first in self.cells else self.load_local(first)
        return SuperVariable(cls, obj)

    # === opcode handlers, one per instruction ====================================================

    # --- locals, constants, globals, closures ---------------------------------------------------

    def LOAD_FAST(self, inst):
        if PY313 and (inst.argval in self.code.co_cellvars or inst.argval in self.code.co_freevars):
            return self.LOAD_CLOSURE(inst)  # 3.13 compiles LOAD_CLOSURE to LOAD_FAST of the cell
        self.push(self.load_local(inst.argval))

    LOAD_FAST_CHECK = LOAD_FAST  # 3.12: LOAD_FAST that may find the local unbound

    def LOAD_FAST_AND_CLEAR(self, inst):  # 3.12: saves a local around an inlined comprehension
        if inst.argval in self.unread_args:
            self.load_local(inst.argval)
        self.push(self.symbolic_locals.pop(inst.argval, UnboundVariable()))

    def STORE_FAST(self, inst):
        value = self.pop()
        self.unread_args.pop(inst.argval, None)
        if isinstance(value, UnboundVariable):
            self.symbolic_locals.pop(inst.argval, None)
        else:
            self.symbolic_locals[inst.argval] = value

    def DELETE_FAST(self, inst):
        self.load_local(inst.argval)
        del self.symbolic_locals[inst.argval]

    def LOAD_CONST(self, inst):
        self.push(wrap_constant(inst.argval))

    def RETURN_CONST(self, inst):  # 3.12
        self.push(wrap_constant(inst.argval))
        self.RETURN_VALUE(inst)

    def LOAD_GLOBAL(self, inst):
        """The low bit of the oparg asks for a NULL with the value (it is about to be called)."""
        self.push_with_null(self.load_global(inst.argval), inst.arg & 1)

    def push_with_null(self, value, null):
        """Push ``value``, with a NULL (if ``null``) where CALL expects it for this version."""
        if null and not PY313:
            self.push(NullVariable())
        self.push(value)
        if null and PY313:
            self.push(NullVariable())

    def STORE_GLOBAL(self, inst):
        """``global n; n = value``: a side effect, replayed by the transformed code once the
        graph has run (``OutputGraph.global_writes``); reads later in the trace see ``value``."""
        if self.f_globals is not self.output.root_globals:
            unsupported(f"assigning the global {inst.argval!r} of another module (a side effect)")
        self.output.global_writes[inst.argval] = self.pop()

    def LOAD_DEREF(self, inst):
        self.push(self.cell(inst.argval).get(self))

    def STORE_DEREF(self, inst):
        self.cell(inst.argval).set(self, self.pop())

    def LOAD_CLOSURE(self, inst):
        self.push(self.cell(inst.argval))

    def MAKE_CELL(self, inst):
        name = inst.argval
        has_value = name in self.symbolic_locals or name in self.unread_args
        self.cells[name] = CellVariable(contents=self.load_local(name) if has_value else None)
        self.symbolic_locals.pop(name, None)

    def COPY_FREE_VARS(self, inst):
        pass  # the closure's cells are in self.cells already

    # --- attributes and items ----------------------------------------------------------------------

    def LOAD_ATTR(self, inst):
        value = self.pop().var_getattr(self, inst.argval)
        # 3.12's method form; [NULL, bound method] (3.13: [bound method, NULL]) calls the same
        self.push_with_null(value, PY312 and inst.arg & 1)

    def LOAD_METHOD(self, inst):  # 3.11
        value = self.pop().var_getattr(self, inst.argval)
        self.push(NullVariable())
        self.push(value)

    def LOAD_SUPER_ATTR(self, inst):  # 3.12: super().name in one instruction
        obj, cls = self.pop(), self.pop()
        self.pop()  # the global super itself
        value = SuperVariable(cls.as_python_constant(), obj).var_getattr(self, inst.argval)
        self.push_with_null(value, inst.arg & 1)

    def STORE_ATTR(self, inst):
        obj, value = self.pop(), self.pop()
        if obj.source is not None and self.output.variable_cache.get(AttrSource(obj.source, inst.argval)) is value:
            return  # `self.count += 1` on a tensor: the in-place add already did it all
        if not hasattr(obj, "store_attr"):
            unsupported(f"assigning attribute {inst.argval!r} of {obj} (a side effect)")
        obj.store_attr(self, inst.argval, value)

    def DELETE_ATTR(self, inst):
        obj = self.pop()
        if not hasattr(obj, "delete_attr"):
            unsupported(f"deleting attribute {inst.argval!r} of {obj} (a side effect)")
        obj.delete_attr(self, inst.argval)

    def BINARY_SUBSCR(self, inst):
        index = self.pop()
        self.push(self.call_builtin(operator.getitem, self.pop(), index))

    def STORE_SUBSCR(self, inst):
        index, obj, value = self.pop(), self.pop(), self.pop()
        self.call_builtin(operator.setitem, obj, index, value)

    def DELETE_SUBSCR(self, inst):
        index, obj = self.pop(), self.pop()
        self.call_builtin(operator.delitem, obj, index)

    def BINARY_SLICE(self, inst):  # 3.12: container[start:end]
        end, start, container = self.pop(), self.pop(), self.pop()
        self.push(self.call_builtin(operator.getitem, container, make_slice([start, end])))

    def STORE_SLICE(self, inst):  # 3.12: container[start:end] = value
        end, start, container, value = self.pop(), self.pop(), self.pop(), self.pop()
        self.call_builtin(operator.setitem, container, make_slice([start, end]), value)

    # --- the stack -----------------------------------------------------------------------------------

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        self.push(NullVariable())

    def COPY(self, inst):
        self.push(self.stack[-inst.arg])

    def SWAP(self, inst):
        self.stack[-inst.arg], self.stack[-1] = self.stack[-1], self.stack[-inst.arg]

    def NOP(self, inst):
        pass

    RESUME = NOP
    PRECALL = NOP  # 3.11: prepares a CALL; nothing to do symbolically

    # --- operators -----------------------------------------------------------------------------------

    def BINARY_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(self.call_builtin(BINARY_OPS[inst.arg], a, b))

    def UNARY_NEGATIVE(self, inst):
        self.push(self.call_builtin(operator.neg, self.pop()))

    def UNARY_POSITIVE(self, inst):  # 3.11 (3.12: CALL_INTRINSIC_1)
        self.push(self.call_builtin(operator.pos, self.pop()))

    def UNARY_INVERT(self, inst):
        self.push(self.call_builtin(operator.invert, self.pop()))

    def UNARY_NOT(self, inst):
        self.push(ConstantVariable(not self.pop().truthy(self)))

    def COMPARE_OP(self, inst):
        """(3.13 sets bit 16 of the oparg to ask for a bool: the jump after it tests the result as
        TO_BOOL would, so the result is left as it is.)"""
        b, a = self.pop(), self.pop()
        self.push(self.call_builtin(COMPARE_OPS[inst.argval], a, b))

    def IS_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(ConstantVariable(is_same(self, a, b) != bool(inst.arg)))

    def CONTAINS_OP(self, inst):
        container, item = self.pop(), self.pop()
        found = self.call_builtin(operator.contains, container, item).as_python_constant()
        self.push(ConstantVariable(found != bool(inst.arg)))

    def TO_BOOL(self, inst):  # 3.13: before every jump on a value, and before `not`
        pass  # POP_JUMP_IF_* and UNARY_NOT ask the tracker for its truth value themselves

    def CALL_INTRINSIC_1(self, inst):  # 3.12
        intrinsic = inst.arg
        if intrinsic == 5:  # INTRINSIC_UNARY_POSITIVE
            return self.UNARY_POSITIVE(inst)
        if intrinsic == 6:  # INTRINSIC_LIST_TO_TUPLE
            return self.LIST_TO_TUPLE(inst)
        unsupported(f"CALL_INTRINSIC_1 {intrinsic}")

    # --- building containers -------------------------------------------------------------------

    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_MAP(self, inst):
        items = self.popn(2 * inst.arg)
        pairs = zip(items[::2], items[1::2])
        self.push(ConstDictVariable({k.as_python_constant(): v for k, v in pairs}))

    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.pop().as_python_constant()
        self.push(ConstDictVariable(dict(zip(keys, self.popn(inst.arg)))))

    def BUILD_SLICE(self, inst):
        self.push(make_slice(self.popn(inst.arg)))

    def BUILD_STRING(self, inst):
        self.push(ConstantVariable("".join(p.as_python_constant() for p in self.popn(inst.arg))))

    def FORMAT_VALUE(self, inst):
        spec = self.pop().as_python_constant() if inst.arg & 0x04 else ""
        value = self.pop().as_python_constant()
        convert = {0: lambda v: v, 1: str, 2: repr, 3: ascii}[inst.arg & 0x03]
        self.push(ConstantVariable(format(convert(value), spec)))

    def CONVERT_VALUE(self, inst):  # 3.13: the !s, !r, !a of an f-string
        convert = {1: str, 2: repr, 3: ascii}[inst.arg]
        self.push(ConstantVariable(convert(self.pop().as_python_constant())))

    def FORMAT_SIMPLE(self, inst):  # 3.13: f"{value}"
        self.push(ConstantVariable(format(self.pop().as_python_constant())))

    def FORMAT_WITH_SPEC(self, inst):  # 3.13: f"{value:spec}"
        spec = self.pop().as_python_constant()
        self.push(ConstantVariable(format(self.pop().as_python_constant(), spec)))

    def BUILD_SET(self, inst):
        self.push(SetVariable(self.popn(inst.arg)))

    def SET_ADD(self, inst):
        value = self.pop()
        self.stack[-inst.arg].call_method(self, "add", [value], {})

    def SET_UPDATE(self, inst):
        values = self.pop().unpack_var_sequence(self)
        for value in values:
            self.stack[-inst.arg].call_method(self, "add", [value], {})

    def LIST_APPEND(self, inst):
        value = self.pop()
        self.stack[-inst.arg].items.append(value)

    def LIST_EXTEND(self, inst):
        values = self.pop()
        self.stack[-inst.arg].items.extend(values.unpack_var_sequence(self))

    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().items))

    def MAP_ADD(self, inst):
        value, key = self.pop(), self.pop()
        self.stack[-inst.arg].items[key.as_python_constant()] = value

    def DICT_UPDATE(self, inst):
        other = self.pop()
        if not isinstance(other, ConstDictVariable):
            unsupported(f"** of {other}")
        self.stack[-inst.arg].items.update(other.items)

    def DICT_MERGE(self, inst):  # f(**a, **b): like DICT_UPDATE, but a repeated key is a TypeError
        other = self.stack[-1]
        if isinstance(other, ConstDictVariable) and set(other.items) & set(self.stack[-inst.arg - 1].items):
            unsupported("TypeError at trace time: a keyword argument given twice")
        self.DICT_UPDATE(inst)

    def UNPACK_SEQUENCE(self, inst):
        items = self.pop().unpack_var_sequence(self)
        if len(items) != inst.arg:
            unsupported(f"ValueError at trace time: unpacking {len(items)} values into {inst.arg}")
        for item in reversed(items):
            self.push(item)

    # --- match statements: the subject's kind and length, and a mapping's keys ----------------------

    def MATCH_SEQUENCE(self, inst):
        cls = self.stack[-1].python_type()
        self.push(ConstantVariable(issubclass(cls, collections.abc.Sequence)
                                   and not issubclass(cls, (str, bytes, bytearray))))

    def MATCH_MAPPING(self, inst):
        self.push(ConstantVariable(issubclass(self.stack[-1].python_type(), collections.abc.Mapping)))

    def GET_LEN(self, inst):
        self.push(self.call_builtin(len, self.stack[-1]))

    def MATCH_KEYS(self, inst):
        """The values of the pattern's keys (a constant tuple on top) in the subject, or None."""
        subject, keys = self.stack[-2], self.stack[-1].as_python_constant()
        present = [self.call_builtin(operator.contains, subject, ConstantVariable(k)).as_python_constant() for k in keys]
        values = [self.call_builtin(operator.getitem, subject, ConstantVariable(k)) for k in keys] if all(present) else None
        self.push(TupleVariable(values) if values is not None else ConstantVariable(None))

    def UNPACK_EX(self, inst):
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = self.pop().unpack_var_sequence(self)
        if len(items) < before + after:
            unsupported(f"ValueError at trace time: not enough values to unpack ({len(items)})")
        starred = ListVariable(items[before:len(items) - after])
        for item in reversed(items[:before] + [starred] + items[len(items) - after:]):
            self.push(item)

    # --- jumps and loops -----------------------------------------------------------------------

    def JUMP_FORWARD(self, inst):
        self.jump(inst)

    JUMP_BACKWARD = JUMP_FORWARD
    JUMP_BACKWARD_NO_INTERRUPT = JUMP_FORWARD

    def POP_JUMP_IF_TRUE(self, inst):
        condition = self.pop()
        if isinstance(condition, TensorVariable) and \
                self.instructions[self.indexof[inst] + 1].opname == "LOAD_ASSERTION_ERROR":
            self.assert_async(condition, self.instructions[self.indexof[inst] + 2])
            self.jump(inst)
        elif condition.truthy(self):
            self.jump(inst)

    def assert_async(self, condition, after):
        """``assert (boxes[:, 2:] >= boxes[:, :2]).all(), "degenerate"``: checked by the graph, as
        torch.compile does, where a branch on the tensor would break it. A failed check raises
        RuntimeError with the assert's message and line when the graph runs (eager raises
        AssertionError; a documented difference, torch.compile's too)."""
        message = after.argval if after.opname == "LOAD_CONST" and isinstance(after.argval, str) else "assertion failed"
        where = f"{self.code.co_filename}:{self.current_instruction.positions.lineno}"
        node = self.output.create_proxy("call_function", torch._assert_async, (condition.proxy, f"{message} ({where})"), {})
        node.node.meta["example_value"] = None

    def POP_JUMP_IF_FALSE(self, inst):
        if not self.pop().truthy(self):
            self.jump(inst)

    def POP_JUMP_IF_NONE(self, inst):
        if is_none(self.pop()):
            self.jump(inst)

    def POP_JUMP_IF_NOT_NONE(self, inst):
        if not is_none(self.pop()):
            self.jump(inst)

    # 3.11 spells the direction out; 3.12 only jumps forward.
    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_BACKWARD_IF_TRUE = POP_JUMP_IF_TRUE
    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_BACKWARD_IF_FALSE = POP_JUMP_IF_FALSE
    POP_JUMP_FORWARD_IF_NONE = POP_JUMP_BACKWARD_IF_NONE = POP_JUMP_IF_NONE
    POP_JUMP_FORWARD_IF_NOT_NONE = POP_JUMP_BACKWARD_IF_NOT_NONE = POP_JUMP_IF_NOT_NONE

    def JUMP_IF_TRUE_OR_POP(self, inst):  # 3.11: `a or b`
        if self.stack[-1].truthy(self):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_FALSE_OR_POP(self, inst):  # 3.11: `a and b`
        if not self.stack[-1].truthy(self):
            self.jump(inst)
        else:
            self.pop()

    def GET_ITER(self, inst):
        self.push(self.call_builtin(iter, self.pop()))

    def FOR_ITER(self, inst):
        item = self.stack[-1].next_item()
        if item is not None:
            self.push(item)
            return
        self.pop()
        self.jump(inst)
        # 3.12 jumps to the END_FOR at the target and past it, as CPython does; 3.13 past the
        # END_FOR and the POP_TOP after it.
        self.instruction_pointer += 2 if PY313 else 1 if PY312 else 0

    def END_FOR(self, inst):  # 3.12 (pops the iterator and the last item; 3.13: the item only)
        self.popn(1 if PY313 else 2)

    # --- calls and functions ---------------------------------------------------------------------

    def KW_NAMES(self, inst):
        self.kw_names = inst.argval

    def CALL(self, inst):
        kw_names, self.kw_names = self.kw_names, ()  # set by a KW_NAMES just before (3.11, 3.12)
        self.call_function_with_kw_names(inst.arg, kw_names)

    def CALL_KW(self, inst):  # 3.13: the keyword names are a tuple on top of the arguments
        self.call_function_with_kw_names(inst.arg, self.pop().as_python_constant())

    def call_function_with_kw_names(self, nargs, kw_names):
        """Pop a call's operands, call, push the result. The operands are [NULL, callable]
        (3.13: [callable, NULL]) or [callable, self], then ``nargs`` arguments, the last
        ``len(kw_names)`` of them passed by keyword."""
        args = self.popn(nargs)
        fn, self_or_null = self.pop_callable()
        if self_or_null is not None:
            args = [self_or_null] + args
        n_positional = len(args) - len(kw_names)
        kwargs = dict(zip(kw_names, args[n_positional:]))
        self.push(fn.call_function(self, args[:n_positional], kwargs))

    def pop_callable(self):
        """Pop the two stack items under a call's arguments: the callable, and the ``self`` it is
        called with (None where it is a NULL)."""
        first, second = self.popn(2)
        if isinstance(first, NullVariable):  # 3.11 / 3.12: [NULL, callable]
            return second, None
        if isinstance(second, NullVariable):  # 3.13: [callable, NULL]
            return first, None
        return first, second  # [method, self]

    def CALL_FUNCTION_EX(self, inst):
        kwargs = self.pop() if inst.arg & 1 else ConstDictVariable({})
        args = self.pop()
        fn, _ = self.pop_callable()  # the other item is a NULL
        if not isinstance(kwargs, ConstDictVariable):
            unsupported(f"** of {kwargs}")
        self.push(fn.call_function(self, args.unpack_var_sequence(self), dict(kwargs.items)))

    def MAKE_FUNCTION(self, inst):
        """3.11 and 3.12: the code, and below it what the flags in the oparg name (closure,
        annotations, keyword defaults, defaults). 3.13: the code only (SET_FUNCTION_ATTRIBUTE)."""
        code = self.pop().as_python_constant()
        flags = 0 if PY313 else inst.arg
        closure = self.pop().items if flags & 0x08 else []
        annotations = self.pop() if flags & 0x04 else None
        kwdefaults = self.pop().items if flags & 0x02 else {}
        defaults = self.pop().items if flags & 0x01 else []
        self.push(NestedUserFunctionVariable(code, self.f_globals, defaults, kwdefaults, closure, annotations))

    def SET_FUNCTION_ATTRIBUTE(self, inst):  # 3.13: one of MAKE_FUNCTION's old flags at a time
        fn, value = self.pop(), self.pop()
        if inst.arg == 0x08:
            fn.closure = value.items
        elif inst.arg == 0x02:
            fn.kwdefaults = value.items
        elif inst.arg == 0x04:
            fn.annotations = value
        elif inst.arg == 0x01:
            fn.defaults = value.items
        self.push(fn)

    # --- with blocks ----------------------------------------------------------------------------

    def BEFORE_WITH(self, inst):
        """Push the block's ``__exit__``, then what ``__enter__`` returns. A user's context
        manager (a class with Python ``__enter__``/``__exit__``, ``@contextlib.contextmanager``)
        is traced like any call: ``__enter__`` now, ``__exit__`` where the block ends."""
        ctx = self.pop()
        if isinstance(ctx, (GradModeVariable, AutocastVariable, ProfilerRangeVariable)):
            self.push(GetAttrVariable(ctx, "__exit__"))
            self.push(ctx.enter(self))
        elif isinstance(ctx, UserDefinedObjectVariable) and is_python_context_manager(ctx.python_type()):
            exit_fn = ctx.var_getattr(self, "__exit__")
            self.user_with_blocks[id(exit_fn)] = (exit_fn, inst)
            self.push(exit_fn)
            self.push(ctx.var_getattr(self, "__enter__").call_function(self, [], {}))
        else:
            unsupported(f"`with` on {ctx} (only torch.no_grad/enable_grad/set_grad_enabled and "
                        f"context managers written in Python)")

    # --- what only happens when something raises, or is not traced ----------------------------

    def PUSH_EXC_INFO(self, inst):
        exception = self.pop()
        self.push(self.exc_info[-1] if self.exc_info else ConstantVariable(None))
        self.push(exception)
        self.exc_info.append(exception)

    def WITH_EXCEPT_START(self, inst):
        """An exception left the ``with`` block of a context manager written in Python: push what
        its ``__exit__(type, exception, None)`` returns (true swallows the exception). If that call
        cannot be traced, the graph breaks before the block, which then runs as Python."""
        exit_fn, exception = self.stack[-4], self.stack[-1]
        try:
            self.push(exit_fn.call_function(
                self, [self.build(type(exception.exception)), exception, ConstantVariable(None)], {}))
        except Unsupported as error:  # an exception raised by __exit__ too: the break goes before the block
            error.first_seen.setdefault(self, self.user_with_blocks[id(exit_fn)][1])
            raise

    def CHECK_EXC_MATCH(self, inst):
        expected = self.pop().as_python_constant()
        self.push(ConstantVariable(isinstance(self.stack[-1].exception, expected)))

    def POP_EXCEPT(self, inst):
        self.pop()
        self.exc_info.pop()

    def RERAISE(self, inst):
        """The handler did not catch it (or a ``finally`` ran): on to the next block out."""
        raise self.pop().error

    def RAISE_VARARGS(self, inst):
        """``raise`` of an exception made in the frame: raised at trace time, so that a ``try``
        around it (in this frame or an inlining caller) runs its handler; uncaught, the graph
        breaks and Python raises it. ``raise`` alone re-raises the one being handled."""
        if inst.arg == 0:
            if not self.exc_info:
                unsupported("a bare raise with no exception being handled (RuntimeError)")
            raise self.exc_info[-1].error
        cause = self.pop() if inst.arg == 2 else None
        exception = self.pop()
        if isinstance(exception, BuiltinVariable) or (
                isinstance(exception, TypeVariable) and issubclass(exception.cls, BaseException)):
            exception = exception.call_function(self, [], {})  # `raise ValueError`
        if not isinstance(exception, ExceptionVariable):
            unsupported(f"raising {exception}")
        if self.exc_info and self.exc_info[-1].exception is not exception.exception:  # raised in a handler
            exception.exception.__context__ = self.exc_info[-1].exception
        if cause is not None:
            exception.exception.__cause__ = cause.exception if isinstance(cause, ExceptionVariable) else None
        raise_at_trace_time(exception.exception)

    def LOAD_ASSERTION_ERROR(self, inst):
        unsupported("an assert fails at trace time")

    def IMPORT_NAME(self, inst):
        """``import a.b`` pushes module ``a`` (``from a.b import c``: ``a.b``). A module (or a
        submodule named in ``from a import c``) not imported yet is imported now, while tracing,
        as PyTorch's Dynamo does: eager imports it at this point, and the compiled code then finds
        it in sys.modules."""
        fromlist, level = self.pop().as_python_constant(), self.pop().as_python_constant()
        full_name = resolve_import(inst.argval, level, self.f_globals)
        try:
            __import__(inst.argval, self.f_globals, None, fromlist, level)
        except ImportError as error:
            raise_at_trace_time(error)
        name = full_name if fromlist or level else full_name.partition(".")[0]
        source = None if is_trusted_module(name) else self.output.import_source(name)
        self.push(self.build(sys.modules[name], source))

    def IMPORT_FROM(self, inst):
        self.push(self.stack[-1].var_getattr(self, inst.argval))

    def LOAD_BUILD_CLASS(self, inst):
        unsupported("a class statement inside the compiled function")

    def RETURN_GENERATOR(self, inst):
        unsupported("a generator function")

    def YIELD_VALUE(self, inst):
        unsupported("yield")


def module_named_by(f_globals):
    """The name under which ``sys.modules`` holds the module whose globals are ``f_globals``, or None."""
    return next((name for name, module in list(sys.modules.items())
                 if getattr(module, "__dict__", None) is f_globals), None)


def resolve_import(name, level, f_globals):
    """The absolute module name of ``import name`` (``from .. import name`` when level > 0)."""
    if level == 0:
        return name
    package = f_globals.get("__package__") or f_globals.get("__name__", "").rpartition(".")[0]
    try:
        return importlib.util.resolve_name("." * level + name, package)
    except (ImportError, ValueError) as error:
        unsupported(f"a relative import in a module without a package ({error})")


def make_slice(bounds):
    """The tracker of ``slice(*bounds)``: a size symbol among the bounds stays symbolic."""
    if any(isinstance(b, SymNodeVariable) for b in bounds):
        return SymSliceVariable(bounds)
    return SliceVariable(slice(*[b.as_python_constant() for b in bounds]))


def is_none(var):
    return isinstance(var, ConstantVariable) and var.value is None


class InstructionTranslator(InstructionTranslatorBase):
    """Traces the frame the hook handed over: ``func`` called with the frame's ``args``.

    When an instruction of the frame is unsupported (or a call inlined from it fails), the
    translator breaks the graph there (chapter 5): ``step`` raises ``RestartAnalysis``, the
    frame is traced again from the top, and this time ``break_graph`` runs at that instruction
    instead of its handler. The transformed frame then runs the graph recorded so far, the
    instruction as ordinary Python, and a resume function that continues the frame.
    ``one_graph=True`` (``fullgraph``) lets the Unsupported error through instead.
    """

    def __init__(self, func, args, output, one_graph=False, break_at=None):
        code = func.__code__
        super().__init__(code, func.__globals__, {}, [], output)
        self.cells = {name: CellVariable.existing(self, cell, ClosureSource(name))
                      for name, cell in zip(code.co_freevars, func.__closure__ or ())}
        self.unread_args = dict(zip(code.co_varnames, args))
        self.argnames = code.co_varnames[:len(args)]
        self.output_instructions = None
        self.one_graph = one_graph
        self.break_at = break_at  # the RestartAnalysis of the previous attempt, or None
        self.graph_break = None  # the Unsupported error this trace broke the graph for
        self.graph_cut = False  # whether a graph was compiled at that break (ops came before it)

    def RETURN_VALUE(self, inst):
        if not self.output.has_computation() and self.break_at is None:
            raise SkipFrame(f"{self.code.co_qualname} computes nothing with tensors")
        self.output_instructions = self.output.compile_subgraph(self, self.pop())
        self.done = True

    # === graph breaks (chapter 5) =================================================================

    def step(self):
        if self.break_at is not None and self.instruction_pointer == self.break_at.index:
            inst = self.instructions[self.instruction_pointer]
            self.instruction_pointer += 1
            self.current_instruction = inst
            return self.break_graph(inst, self.break_at.reason)
        try:
            super().step()
        except Unsupported as reason:
            if self.one_graph:
                raise
            # The break goes where the error was first raised, not where a handler re-raised it;
            # for a future that escapes, at its torch.jit.fork.
            inst = self.outside_user_with_blocks(reason.first_seen.get(self, self.current_instruction))
            reason.add_frame(self.code.co_filename, inst.positions.lineno, self.code.co_name)
            why_not = self.why_no_graph_break(inst)
            if why_not is not None:
                raise cannot_break(reason, why_not) from None
            raise RestartAnalysis(self.indexof[inst], reason) from None

    def outside_user_with_blocks(self, inst):
        """``inst``; or, inside the ``with`` block of a context manager written in Python, which a
        graph break cannot cut in two, the BEFORE_WITH of the outermost such block: the graph
        breaks before the block, which runs as Python."""
        for handler, depth in reversed(self.blocks(inst)):
            if handler.opname != "WITH_EXCEPT_START" or not 0 < depth <= len(self.stack):
                continue
            if id(self.stack[depth - 1]) in self.user_with_blocks:
                return self.user_with_blocks[id(self.stack[depth - 1])][1]
        return inst

    def why_no_graph_break(self, inst):
        """Why the graph cannot be broken at ``inst`` (the frame then runs eagerly), or None."""
        if inst.opname in ("RETURN_VALUE", "RETURN_CONST"):
            return "it is the frame's return"
        if is_jump(inst) and inst.opname not in CONDITIONAL_JUMPS:
            return f"{inst.opname} cannot be run on its own"
        if inst.opname in ("LOAD_SUPER_ATTR", "SEND", "YIELD_VALUE"):
            return f"{inst.opname} cannot be run on its own"
        if self.instructions[self.indexof[inst] + 1].opname == "BEFORE_WITH":
            return "what it computes enters a `with` block, which could not be traced after the break"
        if ContinueExecutionCache.original(self.code, self.indexof[inst])[1] < 0:
            return "it is in the prologue of a resume function (a value passed in cannot be traced)"
        if self.in_loop(self.indexof[inst]):
            return "it is inside a for/while loop (each iteration would nest one more resume call)"
        if any(handler.opname != "WITH_EXCEPT_START" for handler, _ in self.blocks(inst)):
            return "the graph cannot break inside a try block"
        return None

    def in_loop(self, index):
        """Whether instruction ``index`` can run again: some path from it leads back to it."""
        seen, todo = set(), successors(self.instructions, self.indexof, index)
        while todo:
            i = todo.pop()
            if i == index:
                return True
            if i not in seen:
                seen.add(i)
                todo.extend(successors(self.instructions, self.indexof, i))
        return False

    def blocks(self, inst):
        """The blocks around ``inst``, innermost first, read from the exception table: for each,
        the instruction its handler runs after PUSH_EXC_INFO (WITH_EXCEPT_START for a ``with``
        block), and the stack depth it unwinds to (a ``with`` keeps its ``__exit__`` just below)."""
        found, entry = [], inst.exn_tab_entry
        while entry is not None:
            found.append((self.instructions[self.indexof[entry.target] + 1], entry.depth))
            cleanup = entry.target.exn_tab_entry  # PUSH_EXC_INFO -> COPY 3; POP_EXCEPT; RERAISE
            entry = cleanup.target.exn_tab_entry if cleanup else None  # the block around this one
        return found

    def cuttable_blocks(self, inst):
        """The ``with`` blocks around ``inst`` (the stack as before it), outermost first. A graph
        break may cut grad-mode and ``record_function`` blocks in two (their ``__exit__`` goes to
        the resume function), no other block."""
        contexts = []
        for handler, depth in self.blocks(inst):
            exit_fn = self.stack[depth - 1]
            if handler.opname != "WITH_EXCEPT_START" or not (isinstance(exit_fn, GetAttrVariable) and isinstance(
                    exit_fn.obj, (GradModeVariable, ProfilerRangeVariable))):
                unsupported("the graph can break inside a `with` block only for torch.no_grad/"
                            "enable_grad/set_grad_enabled and torch.profiler.record_function")
            contexts.insert(0, exit_fn.obj)
        return contexts

    def break_graph(self, inst, reason):
        """Compile the graph recorded so far and end the transformed frame with ``inst`` run as
        Python, then a call of the resume function(s) that continue the frame."""
        try:
            if inst.opname in CONDITIONAL_JUMPS:
                instructions = self.break_at_jump(inst)
            else:
                instructions = self.break_at_instruction(inst)
        except Unsupported as e:  # a value that cannot be rebuilt, a block that cannot be cut
            raise cannot_break(reason, e.reason) from None
        counters["graph_breaks"] += 1
        self.graph_break = reason
        self.graph_cut = self.output.has_computation()
        trace_artifact("graph_breaks", lambda: f"graph break in {self.code.co_qualname} at "
                       f"{reason.filename}:{reason.lineno}: {reason.reason}")
        self.output_instructions = instructions
        self.done = True

    def break_at_instruction(self, inst):
        """The transformed frame for a break at any instruction but a conditional jump:

            graph call; the changed live locals stored back into the real locals
            NULL, resume function; the value stack; ``inst`` (a CALL, a STORE_ATTR...)
            the live locals; CALL the resume function; RETURN_VALUE
        """
        index = self.indexof[inst]
        operands = call_operands(inst)  # the stack items a call consumes, its NULL included
        kept, consumed = self.stack[:len(self.stack) - operands], self.stack[len(self.stack) - operands:]
        live = [] if inst.opname in TERMINATORS else self.live_argnames(index + 1)
        codegen = self.output.codegen_after_graph(self, self.stack + self.live_values(live))
        self.store_locals(codegen, live)
        if inst.opname not in TERMINATORS:
            size, nulls = self.stack_after(inst, kept)
            resume = ContinueExecutionCache.lookup(self.code, index + 1, size, nulls, live)
            codegen.add_push_null(lambda: codegen.make_function(resume))
            first, rest = self.resume_self(live)
            for name in first:
                codegen.load_fast(name)
        for var in kept:
            if not isinstance(var, NullVariable):  # the resume function pushes its own NULLs
                codegen(var)
        for var in consumed:
            if isinstance(var, NullVariable):
                codegen.push_null()
            else:
                codegen(var)
        self.output.codegen_global_writes(codegen)
        start = len(codegen.instructions)
        self.emit_plain(codegen, inst)
        unsafe = codegen.instructions[start:]
        if inst.opname not in TERMINATORS:
            self.call_resume(codegen, size - len(nulls) + len(first), rest)
        self.restore_grad_mode_on_error(codegen, inst, unsafe)
        return self.output.call_graph(self) + codegen.instructions

    def break_at_jump(self, inst):
        """The transformed frame for a break at a jump on a tensor's value (``if x.sum() > 0:``):
        the graph computes the condition, Python jumps on it, and each way continues in its own
        resume function. The stack below the condition is kept in locals ``___stack0``... ."""
        index, target = self.indexof[inst], self.indexof[inst.target]
        rest = self.stack[:-1]  # below the condition
        keeps = inst.opname.endswith("_OR_POP")  # 3.11's `a or b`: the jump keeps the value
        live_next, live_target = self.live_argnames(index + 1), self.live_argnames(target)
        live = live_next + [name for name in live_target if name not in live_next]
        codegen = self.output.codegen_after_graph(self, self.stack + self.live_values(live))
        self.store_locals(codegen, live)
        values = [var for var in self.stack if not isinstance(var, NullVariable)]
        for i, var in enumerate(values):
            codegen(var)
            codegen.store_fast(f"___stack{i}")
        nulls = tuple(i for i, var in enumerate(rest) if isinstance(var, NullVariable))
        if_next = self.resume_call_code(index + 1, len(rest), nulls, len(values) - 1, live_next)
        if_target = self.resume_call_code(target, len(rest) + keeps, nulls, len(values) - 1 + keeps, live_target)
        self.output.codegen_global_writes(codegen)
        codegen.load_fast(f"___stack{len(values) - 1}")
        if PY313:
            codegen.append("TO_BOOL")  # 3.13's jumps take only True or False
        sense = "TRUE" if "IF_TRUE" in inst.opname else "FALSE"
        jump = "POP_JUMP_IF_" + sense if PY312 else "POP_JUMP_FORWARD_IF_" + sense
        codegen.append(jump, target=if_target[0])
        unsafe = codegen.instructions[-2:] if PY313 else codegen.instructions[-1:]
        codegen.instructions += if_next + if_target
        self.restore_grad_mode_on_error(codegen, inst, unsafe)
        return self.output.call_graph(self) + codegen.instructions

    def resume_call_code(self, index, size, nulls, nvalues, live):
        """Call the resume function at ``index`` with ``___stack0``.. ``___stack{nvalues-1}``
        and the locals ``live``, and return what it returns."""
        resume = ContinueExecutionCache.lookup(self.code, index, size, nulls, live)
        codegen = PyCodegen(self.current_instruction.positions)
        codegen.add_push_null(lambda: codegen.make_function(resume))
        first, rest = self.resume_self(live)
        for name in first:
            codegen.load_fast(name)
        for i in range(nvalues):
            codegen.load_fast(f"___stack{i}")
        self.call_resume(codegen, nvalues + len(first), rest)
        return codegen.instructions

    def call_resume(self, codegen, nvalues, live):
        """The stack holds NULL, the resume function and ``nvalues`` stack values: add the live
        locals, call it, and return its result as the frame's."""
        for name in live:
            codegen.load_fast(name)
        codegen.call(nvalues + len(live))
        codegen.append("RETURN_VALUE")

    # --- what the resume function receives ------------------------------------------------------

    def live_argnames(self, index):
        """The locals (and cells made by this frame) that the rest of the frame, from instruction
        ``index`` on, may read and that hold a value now: the resume function's parameters."""
        live = live_locals(self.instructions, index)
        first = self.super_self()
        if first is not None:
            live.add(first)  # zero-argument super() reads it without a LOAD_FAST
        names = self.code.co_varnames + tuple(c for c in self.code.co_cellvars if c not in self.code.co_varnames)
        return [name for name in names if name in live and self.local_value(name) is not None]

    def super_self(self):
        """The local that zero-argument ``super()`` binds in this frame (its first parameter), if
        the frame may call it: a resume function takes it first (``self_first``)."""
        original = ContinueExecutionCache.original(self.code, 0)[0]
        return original.co_varnames[0] if uses_zero_arg_super(original) else None

    def resume_self(self, live):
        """Split ``live`` into the local passed before the stack values, if any, and the rest."""
        first = self.super_self()
        if first in live:
            return [first], [name for name in live if name != first]
        return [], live

    def local_value(self, name):
        """The tracker of a local or of the contents of a cell of this frame (None if unbound);
        ``UNREAD`` for an argument the frame never read (the real local still holds it)."""
        if name in self.code.co_cellvars and name in self.cells:
            return self.cells[name].contents
        if name in self.unread_args:
            return UNREAD
        return self.symbolic_locals.get(name)

    def live_values(self, names):
        return [v for v in map(self.local_value, names) if v is not UNREAD]

    def store_locals(self, codegen, names):
        """Store the live locals whose value changed into the real locals of the transformed
        frame (values reached twice, like ``ys = xs``, are rebuilt once: see PyCodegen). An
        argument about to be overwritten is first kept in a temporary: what the frame read from
        it (``residual = x`` before ``x = self.lin(x)``) is rebuilt from the value it had."""
        changed = [name for name in names
                   if self.local_value(name) is not UNREAD and self.local_value(name).source != LocalSource(name)]
        for name in changed:
            if name in self.argnames:
                codegen.save_argument(name)
        for name in changed:
            codegen(self.local_value(name))
            codegen.store_fast(name)

    def stack_after(self, inst, kept):
        """The size of the value stack after ``inst``, and where NULLs are on it."""
        if inst.opname == "CALL":
            effect = -inst.arg - 1
        else:
            effect = _stack_effect(inst, jump=False)
        size = len(self.stack) + effect
        nulls = [i for i, var in enumerate(kept) if isinstance(var, NullVariable)]
        if pushes_null(inst):  # the NULL with the value, pushed by the resume function
            nulls.append(size - 1 if PY313 else size - 2)
        return size, tuple(nulls)

    def emit_plain(self, codegen, inst):
        """``inst`` for the transformed frame: a call with its KW_NAMES (and 3.11's PRECALL);
        instructions that push a NULL and a value emit the value only; 3.13's UNARY_NOT gets the
        TO_BOOL it needs (its operand is whatever the TO_BOOL before it left, here unchanged)."""
        if inst.opname == "CALL":
            if self.kw_names:
                codegen.append("KW_NAMES", argval=self.kw_names)
            codegen.call(inst.arg)
        elif inst.opname == "LOAD_METHOD" or (inst.opname == "LOAD_ATTR" and pushes_null(inst)):
            codegen.load_attr(inst.argval)
        elif inst.opname == "LOAD_GLOBAL":
            codegen.load_global(inst.argval)
        elif inst.opname == "UNARY_NOT" and PY313:  # 3.13's UNARY_NOT takes only True or False
            codegen.append("TO_BOOL")
            codegen.append("UNARY_NOT")
        else:
            codegen.append(inst.opname, arg=inst.arg, argval=inst.argval)

    def restore_grad_mode_on_error(self, codegen, inst, unsafe):
        """Inside ``with torch.no_grad():``, if the instructions ``unsafe`` raise, restore the
        grad mode from before the outermost block, as the blocks' own handlers would."""
        blocks = [ctx for ctx in self.cuttable_blocks(inst) if isinstance(ctx, GradModeVariable)]
        if not blocks:
            return
        handler = PyCodegen(self.current_instruction.positions)
        handler.call_constant(torch._C._set_grad_enabled, blocks[0].prior)
        handler.append("POP_TOP")
        handler.append("RERAISE", arg=0)
        entry = ExceptionTableEntry(handler.instructions[0], depth=0, lasti=False)
        for unsafe_inst in unsafe:
            unsafe_inst.exn_tab_entry = entry
        codegen.instructions += handler.instructions


UNREAD = object()  # a local_value: an argument the frame has not read yet
CONDITIONAL_JUMPS = {
    "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP",
}


def call_operands(inst):
    """How many stack items a call consumes, the NULL below its callable included (0 for other
    instructions: they never consume a NULL)."""
    if inst.opname == "CALL":
        return inst.arg + 2
    if inst.opname == "CALL_KW":  # 3.13: the tuple of keyword names too
        return inst.arg + 3
    if inst.opname == "CALL_FUNCTION_EX":
        return 3 + (inst.arg & 1)
    return 0


def pushes_null(inst):
    """LOAD_GLOBAL / LOAD_ATTR with the low bit set, and 3.11's LOAD_METHOD, push NULL + value
    (3.13: value + NULL)."""
    if inst.opname == "LOAD_METHOD":
        return True
    return (inst.opname == "LOAD_GLOBAL" or (PY312 and inst.opname == "LOAD_ATTR")) and bool(inst.arg & 1)


def cannot_break(reason, why_not):
    """The error that makes the frame run eagerly: the construct that needed a graph break, and
    why the graph cannot break there. It keeps the construct's user stack (less the compiled
    frame, which ``run`` adds again)."""
    error = Unsupported(f"{reason.reason}; {why_not}, so the frame runs eagerly")
    error.user_stack = reason.user_stack[1:]
    return error


class InliningInstructionTranslator(InstructionTranslatorBase):
    """Traces a called function; its RETURN_VALUE hands the value back to the caller."""

    def __init__(self, code, f_globals, bound_args, closure_cells, output, parent):
        super().__init__(code, f_globals, dict(bound_args), closure_cells, output, parent)
        self.return_value = None

    def RETURN_VALUE(self, inst):
        self.return_value = self.pop()
        self.done = True


class InliningGeneratorInstructionTranslator(InliningInstructionTranslator):
    """The body of a generator (``x * 2 for x in xs``), traced lazily: each ``next_value`` runs
    it from where it paused to its next ``yield``, as CPython resumes a generator."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.yielded = None  # what the last YIELD_VALUE gave, until the next resumption
        self.started = False  # whether it ran up to its first yield

    def next_value(self, sent=None):
        """Run to the next ``yield``: the value yielded, or None once the generator returned.
        ``sent`` is the value that ``generator.send`` gives the ``yield`` it resumes."""
        if self.done:
            return None
        if sent is not None:
            if not self.started:
                raise_at_trace_time(TypeError("can't send non-None value to a just-started generator"))
            self.stack[-1] = sent  # in place of the None that YIELD_VALUE left
        self.started = True
        self.yielded = None
        try:
            self.run()
        except TracedException as error:
            if isinstance(error.exception, StopIteration):  # PEP 479: out of a generator, a RuntimeError
                self.done = True
                replaced = RuntimeError("generator raised StopIteration")
                replaced.__cause__ = replaced.__context__ = error.exception
                raise_at_trace_time(replaced)
            raise
        return self.yielded

    def suspended(self):
        return self.yielded is not None

    def RETURN_GENERATOR(self, inst):
        self.push(ConstantVariable(None))  # what the first resumption finds on the stack

    def YIELD_VALUE(self, inst):
        self.yielded = self.pop()
        self.push(ConstantVariable(None))  # the value sent back in

    def RETURN_VALUE(self, inst):
        self.return_value = self.pop()  # the value of a ``yield from`` of this generator
        self.done = True

    def GET_YIELD_FROM_ITER(self, inst):
        self.push(self.call_builtin(iter, self.pop()))

    def SEND(self, inst):
        """``yield from``'s step: pass the value sent in on to the inner iterator; when that is
        exhausted, its return value replaces it (3.11) or goes above it (3.12, for END_SEND)."""
        value = self.pop()
        receiver = self.stack[-1]
        if not isinstance(receiver, ListIteratorVariable):
            unsupported(f"`yield from` {receiver}")
        item = receiver.send(value)
        if item is not None:
            self.push(item)
            return
        result = receiver.return_value()
        if PY312:
            self.push(result)
        else:
            self.stack[-1] = result
        self.jump(inst)

    def END_SEND(self, inst):  # 3.12
        del self.stack[-2]
