"""VariableTracker: what the symbolic interpreter knows about one Python value (book chapter 3).

The InstructionTranslator runs bytecode, but its stack and locals hold VariableTrackers instead
of real objects. Each subclass models one kind of Python value (``TensorVariable``,
``ConstantVariable``, ``ListVariable``, ``NNModuleVariable``...) and answers the questions the
bytecode asks of it: an attribute (``var_getattr``), a call (``call_function``), a method call
(``call_method``), iteration (``unpack_var_sequence``), truthiness (``truthy``).

A tracker that came from the frame's inputs carries its ``Source``; the guards on it were
installed when it was built (see ``builder.py``), that is, when the bytecode first read it.
Trackers are not frozen: a ``ListVariable`` built inside the frame is mutated in place by
``append``, exactly as the Python list would be, so aliasing behaves as it does in Python.
"""
import inspect
import types

from ..exc import Unsupported, unsupported
from ..source import AttrSource


def call_handler(handler, what, tx, args, kwargs):
    """``handler(tx, *args, **kwargs)``: the method that models ``what`` (``list.sort``, the builtin
    ``min()``); arguments that its signature does not take are Unsupported, as they would raise."""
    try:
        inspect.signature(handler).bind(tx, *args, **kwargs)
    except TypeError:
        unsupported(f"{what} with {len(args)} positional and {len(kwargs)} keyword argument(s)")
    return handler(tx, *args, **kwargs)


class VariableTracker:
    def __init__(self, source=None):
        self.source = source

    # --- what it is ---------------------------------------------------------------------------

    def python_type(self):
        unsupported(f"the type of {self} is not known")

    def as_python_constant(self):
        unsupported(f"{self} is not a Python constant")

    def is_python_constant(self):
        try:
            self.as_python_constant()
        except Exception:
            return False
        return True

    def python_object(self):
        """The real object this tracker stands for, when there is one (modules, functions...)."""
        return self.as_python_constant()

    # --- what the bytecode can do with it -----------------------------------------------------

    def var_getattr(self, tx, name):
        """Methods of the modelled type become a GetAttrVariable, called through call_method."""
        try:
            cls = self.python_type()
        except Unsupported:
            cls = None
        if cls is not None and callable(getattr(cls, name, None)):
            return GetAttrVariable(self, name)
        unsupported(f"attribute {name!r} of {self}")

    def call_function(self, tx, args, kwargs):
        unsupported(f"calling {self}")

    def call_method(self, tx, name, args, kwargs):
        method = self.var_getattr(tx, name)
        if isinstance(method, GetAttrVariable) and method.obj is self:
            # var_getattr only wrapped the name: no subclass knows how to run this method.
            unsupported(f"calling method {name!r} of {self}")
        return method.call_function(tx, args, kwargs)

    def unpack_var_sequence(self, tx):
        unsupported(f"iterating over {self}")

    def next_item(self):
        unsupported(f"next() of {self} (an iterator that was not made while tracing)")

    def truthy(self, tx):
        """``if value:``. An object whose class has neither ``__bool__`` nor ``__len__`` (a function,
        a class, a module) is true, as in Python, even where its value is not known as a constant."""
        try:
            return bool(self.as_python_constant())
        except Unsupported:
            cls = self.python_type()
            if not hasattr(cls, "__bool__") and not hasattr(cls, "__len__"):
                return True
            raise

    def reconstruct(self, codegen):
        """Emit bytecode that recreates this value in the transformed code: reload it from its
        source, or, for an object known while tracing (a function, a class...), load it as a
        constant of the new code object."""
        if self.source is not None:
            return self.source.reconstruct(codegen)
        try:
            value = self.python_object()
        except Unsupported:
            unsupported(f"rebuilding {self} in Python: it has no source to reload it from")
        codegen.load_const(value)

    def class_source(self):
        """Where this value's class is read from (``obj.__class__``), or None."""
        return AttrSource(self.source, "__class__") if self.source is not None else None

    def reconstruct_attribute(self, codegen, name):
        """Emit bytecode that pushes the attribute ``name`` of this value (a bound method)."""
        codegen(self)
        codegen.load_attr(name)

    def __repr__(self):
        return f"{type(self).__name__}()"


class NullVariable(VariableTracker):
    """The NULL that PUSH_NULL / LOAD_GLOBAL put below a callable (no self argument)."""


class UnboundVariable(VariableTracker):
    """What 3.12's LOAD_FAST_AND_CLEAR pushes for a local that had no value."""


class GetAttrVariable(VariableTracker):
    """A bound method not called yet: calling it is ``obj.call_method(name, ...)``."""

    def __init__(self, obj, name):
        super().__init__()
        self.obj = obj
        self.name = name

    def call_function(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def python_type(self):
        return types.MethodType

    def reconstruct(self, codegen):
        self.obj.reconstruct_attribute(codegen, self.name)

    def __repr__(self):
        return f"GetAttrVariable({self.obj!r}.{self.name})"
