"""PyCodegen: emit the bytecode of the transformed frame (book chapter 4,
"Guards and the transformed code").

After tracing, the frame is replaced by code that

    1. loads the compiled graph from the frame's globals (``__compiled_fn_0``),
    2. loads every graph input from its Source (``x``, ``self.fc1.weight``...),
    3. calls it, and keeps the tuple of graph outputs in a fresh local,
    4. rebuilds the return value: tensors come from the graph outputs, input tensors from
       their source, constants are LOAD_CONST, tuples/lists/dicts are rebuilt around them.

``codegen(var)`` emits the instructions that push ``var``; trackers know how to reconstruct
themselves (``VariableTracker.reconstruct``) using the small helpers below.
"""
import sys

from .bytecode import create_instruction

PY312 = sys.version_info >= (3, 12)


class PyCodegen:
    def __init__(self, positions=None):
        self.instructions = []
        self.positions = positions  # source position given to every emitted instruction
        self.graph_outputs = {}  # TensorVariable -> index in the graph's output tuple
        self.graph_output_local = "___graph_outputs"  # the local holding the graph's output tuple

    def __call__(self, var):
        """Emit code that pushes the value ``var`` stands for."""
        if var in self.graph_outputs:
            self.load_fast(self.graph_output_local)
            self.load_const(self.graph_outputs[var])
            self.append("BINARY_SUBSCR")
        else:
            var.reconstruct(self)

    def append(self, opname, **kwargs):
        self.instructions.append(create_instruction(opname, positions=self.positions, **kwargs))

    def load_const(self, value, push_null=False):
        if push_null:
            self.append("PUSH_NULL")
        self.append("LOAD_CONST", argval=value)

    def load_fast(self, name):
        self.append("LOAD_FAST", argval=name)

    def store_fast(self, name):
        self.append("STORE_FAST", argval=name)

    def load_deref(self, name):
        self.append("LOAD_DEREF", argval=name)

    def load_global(self, name, push_null=False):
        self.append("LOAD_GLOBAL", argval=name, arg=int(push_null))  # low bit: push NULL first

    def load_attr(self, name):
        self.append("LOAD_ATTR", argval=name, arg=0)

    def call(self, nargs):
        """Call with the [NULL, callable, args...] stack layout of 3.11 and 3.12."""
        if not PY312:
            self.append("PRECALL", arg=nargs)
        self.append("CALL", arg=nargs)

    def prologue(self, code):
        """What every function starts with: copy the closure cells in, then RESUME."""
        if code.co_freevars:
            self.append("COPY_FREE_VARS", arg=len(code.co_freevars))
        self.append("RESUME", arg=0)
