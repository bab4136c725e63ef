"""PyCodegen: emit the bytecode of the transformed frame (book chapter 4,
"Guards and the transformed code").

After tracing, the frame is replaced by code that

    1. loads the compiled graph from the frame's globals (``__compiled_fn_0``),
    2. loads every graph input from its Source (``x``, ``self.fc1.weight``...),
    3. calls it, and keeps the tuple of graph outputs in a fresh local,
    4. rebuilds the return value: tensors come from the graph outputs, input tensors from
       their source, constants are LOAD_CONST, tuples/lists/dicts are rebuilt around them.

``codegen(var)`` emits the instructions that push ``var``; trackers know how to reconstruct
themselves (``VariableTracker.reconstruct``) using the small helpers below. At a graph break
(chapter 5) the same helpers rebuild the value stack and the locals, and ``make_function``
creates the resume function that continues the frame.
"""
import sys

from .bytecode import create_instruction
from .variables import ConstDictVariable, DataClassVariable, ListVariable, NewObjectVariable

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)


class PyCodegen:
    def __init__(self, positions=None, f_globals=None):
        self.instructions = []
        self.f_globals = f_globals  # the globals of the transformed frame
        self.positions = positions  # source position given to every emitted instruction
        self.graph_outputs = {}  # TensorVariable -> index in the graph's output tuple
        self.graph_output_local = "___graph_outputs"  # the local holding the graph's output tuple
        self.rebuilt = {}  # list or dict built by the frame -> the local that holds it once rebuilt
        self.temporaries = 0  # how many ___tmp locals new_local has handed out
        self.saved_arguments = {}  # argument name -> the temporary holding its value on entry

    def __call__(self, var):
        """Emit code that pushes the value ``var`` stands for."""
        if var in self.graph_outputs:
            self.load_fast(self.graph_output_local)
            self.load_const(self.graph_outputs[var])
            self.append("BINARY_SUBSCR")
            if hasattr(var, "from_graph_output"):  # a NumPy array the graph computed as a tensor
                var.from_graph_output(self)
        elif var in self.rebuilt:
            self.load_fast(self.rebuilt[var])
        else:
            var.reconstruct(self)
            if has_identity(var):  # rebuilt once, so that `ys = xs` still names one list
                self.rebuilt[var] = f"___rebuilt{len(self.rebuilt)}"
                self.append("COPY", arg=1)
                self.store_fast(self.rebuilt[var])

    def append(self, opname, **kwargs):
        self.instructions.append(create_instruction(opname, positions=self.positions, **kwargs))

    def load_const(self, value, push_null=False):
        """Push ``value``; with ``push_null``, as a callable (with the NULL that CALL expects)."""
        if push_null:
            self.add_push_null(lambda: self.load_const(value))
        else:
            self.append("LOAD_CONST", argval=value)

    def add_push_null(self, gen_fn):
        """Run ``gen_fn`` (which pushes a callable) with a NULL next to it, as CALL expects: below
        the callable on 3.11 and 3.12, above it on 3.13."""
        if not PY313:
            self.push_null()
        gen_fn()
        if PY313:
            self.push_null()

    def new_local(self):
        """A fresh local of the transformed frame, for a value kept between two steps."""
        self.temporaries += 1
        return f"___tmp{self.temporaries}"

    def save_argument(self, name):
        """Keep the frame's argument ``name`` in a temporary before the code stores a new value in
        it; ``load_argument`` then reads the kept value."""
        self.saved_arguments[name] = self.new_local()
        self.load_fast(name)
        self.store_fast(self.saved_arguments[name])

    def load_argument(self, name):
        """The value the frame's argument ``name`` had on entry (what a LocalSource names)."""
        self.load_fast(self.saved_arguments.get(name, name))

    def load_fast(self, name):
        self.append("LOAD_FAST", argval=name)

    def store_fast(self, name):
        self.append("STORE_FAST", argval=name)

    def load_deref(self, name):
        self.append("LOAD_DEREF", argval=name)

    def load_closure(self, name):
        """Push the cell ``name`` itself (3.13 has no LOAD_CLOSURE: LOAD_FAST of a cell does it)."""
        self.append("LOAD_FAST" if PY313 else "LOAD_CLOSURE", argval=name)

    def load_global(self, name, push_null=False):
        self.append("LOAD_GLOBAL", argval=name, arg=int(push_null))  # low bit: push NULL first

    def load_attr(self, name):
        self.append("LOAD_ATTR", argval=name, arg=0)

    def push_null(self):
        self.append("PUSH_NULL")

    def call_constant(self, fn, *args):
        """Call ``fn(*args)`` (all known now, stored as constants); its result stays pushed."""
        self.load_const(fn, push_null=True)
        for arg in args:
            self.load_const(arg)
        self.call(len(args))

    def make_function(self, code):
        """Push a new function running ``code``, with this frame's globals and, if ``code`` has
        free variables, this frame's closure cells (they have the same names)."""
        for name in code.co_freevars:
            self.load_closure(name)
        if code.co_freevars:
            self.append("BUILD_TUPLE", arg=len(code.co_freevars))
        self.load_const(code)
        self.make_function_with_flags(0x08 if code.co_freevars else 0)

    def make_function_with_flags(self, flags):
        """MAKE_FUNCTION from the code object on top of the stack and, below it, the extras that
        ``flags`` names (0x01 defaults, 0x02 kwdefaults, 0x04 annotations, 0x08 closure; pushed
        in that order). On 3.13 MAKE_FUNCTION takes only the code; SET_FUNCTION_ATTRIBUTE adds
        each extra, the last pushed first."""
        if not PY313:
            self.append("MAKE_FUNCTION", arg=flags)
            return
        self.append("MAKE_FUNCTION")
        for flag in (0x08, 0x04, 0x02, 0x01):
            if flags & flag:
                self.append("SET_FUNCTION_ATTRIBUTE", arg=flag)

    def call(self, nargs):
        """Call with the [NULL, callable, args...] stack layout of 3.11 and 3.12, or 3.13's
        [callable, NULL, args...] (``add_push_null`` puts the NULL where it belongs)."""
        if not PY312:
            self.append("PRECALL", arg=nargs)
        self.append("CALL", arg=nargs)

    def call_kw(self, nargs, kw_names):
        """A call whose last ``len(kw_names)`` arguments are keywords: KW_NAMES before CALL on
        3.11 and 3.12; on 3.13 the names are pushed last, as a tuple, for CALL_KW."""
        if PY313:
            self.load_const(tuple(kw_names))
            self.append("CALL_KW", arg=nargs)
            return
        if kw_names:
            self.append("KW_NAMES", argval=tuple(kw_names))
        self.call(nargs)

    def prologue(self, code):
        """What every function starts with: copy the closure cells in, then RESUME."""
        if code.co_freevars:
            self.append("COPY_FREE_VARS", arg=len(code.co_freevars))
        self.append("RESUME", arg=0)


def has_identity(var):
    """A list, dict or object that the frame built: two references to it must stay one object."""
    return isinstance(var, (ListVariable, ConstDictVariable, DataClassVariable, NewObjectVariable)) \
        and var.source is None
