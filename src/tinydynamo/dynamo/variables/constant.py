"""ConstantVariable: immutable Python values known at trace time (book chapter 3).

Ints, floats, strings, None, dtypes, devices, ``torch.Size``... Anything the bytecode computes
from constants alone is computed right away ("constant folding"), so ``x.shape[0] * 2`` or
``if self.training:`` never reach the graph. ``RangeVariable`` and ``SliceVariable`` are the
constant ``range`` and ``slice`` objects.
"""
import inspect
import sys
import types
import typing

import numpy as np
import torch

from ..exc import raise_at_trace_time, unsupported
from .base import GetAttrVariable, VariableTracker

CONSTANT_TYPES = (
    int, float, bool, complex, str, bytes, type(None), type(Ellipsis), type(NotImplemented),
    torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format, range, slice,
    torch.finfo, torch.iinfo,
    types.CodeType,  # LOAD_CONST of a nested function's code, before MAKE_FUNCTION
    inspect.Signature, inspect.Parameter, inspect._ParameterKind,  # inspect.signature(fn) of a known fn
)


# NumPy's dtypes, their limits (np.finfo) and its scalars (np.float32(1.5)); a scalar passed to a
# torch op acts as the Python number it holds (see tensor.map_trackers).
NUMPY_CONSTANT_TYPES = (np.dtype, np.iinfo, np.finfo, np.number, np.bool_)


VERSION_INFO = type(sys.version_info)  # sys.version_info >= (3, 12) is a constant comparison


def is_constant_value(value):
    if isinstance(value, (tuple, frozenset)) and type(value) in (tuple, frozenset, torch.Size, VERSION_INFO):
        return all(is_constant_value(v) for v in value)
    if type(value) is slice:  # a graph break can hand a resume function slice(tensor, tensor)
        return all(is_constant_value(v) for v in (value.start, value.stop, value.step))
    return type(value) in CONSTANT_TYPES or isinstance(value, NUMPY_CONSTANT_TYPES) or is_type_hint(value)


def is_type_hint(value):
    """``list[int]``, ``int | None``, ``typing.Callable[..., T]``: what a nested function's
    annotations evaluate to when it is defined (immutable, and never used while tracing). A class
    is not one, even when its metaclass is typing's (a Protocol), nor is a NewType, which is
    called (``UserId(5)``)."""
    if isinstance(value, (type, typing.NewType)):
        return False
    return type(value) in (types.GenericAlias, types.UnionType) or type(value).__module__ == "typing"


def fold(fn, *args, **kwargs):
    """Run ``fn`` on constants now; if it raises, eager code would too, so do not capture it."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        raise_at_trace_time(e, f"{getattr(fn, '__qualname__', fn)} raised {type(e).__name__}: {e} at trace time")


class ConstantVariable(VariableTracker):
    def __init__(self, value, source=None):
        super().__init__(source)
        assert is_constant_value(value), value
        self.value = value

    def python_type(self):
        return type(self.value)

    def as_python_constant(self):
        return self.value

    def var_getattr(self, tx, name):
        attr = fold(getattr, self.value, name)
        if callable(attr) and not is_type_hint(attr):  # typing.Optional[int].__origin__ is typing.Union
            return GetAttrVariable(self, name)
        return wrap_constant(attr)

    def call_method(self, tx, name, args, kwargs):
        if name == "join" and len(args) == 1 and not args[0].is_python_constant():
            args = [self.joined_items(tx, args[0])]  # ", ".join(f"{k}={v}" for k, v in ...)
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unsupported(f"{type(self.value).__name__}.{name} with non-constant arguments")
        method = fold(getattr, self.value, name)
        consts = [a.as_python_constant() for a in args]
        kwconsts = {k: v.as_python_constant() for k, v in kwargs.items()}
        return wrap_constant(fold(method, *consts, **kwconsts))

    @staticmethod
    def joined_items(tx, iterable):
        """What ``str.join`` joins, from any iterable the translator can unpack (a generator)."""
        items = iterable.unpack_var_sequence(tx)
        if not all(item.is_python_constant() for item in items):
            unsupported("str.join of items that are not constants")
        return ConstantVariable(tuple(item.as_python_constant() for item in items))

    def unpack_var_sequence(self, tx):
        if not isinstance(self.value, (tuple, str, range, bytes, frozenset)):
            unsupported(f"iterating over {type(self.value).__name__}")
        return [wrap_constant(v) for v in self.value]

    def reconstruct(self, codegen):
        codegen.load_const(self.value)

    def __repr__(self):
        return f"ConstantVariable({self.value!r})"


class FakeIdVariable(ConstantVariable):
    """``id()`` of an object made in the frame: the id of its tracker, which stands for the object
    while tracing (one tracker per object; two trackers alive at once have two ids, as two live
    objects do). Good for what ``copy.deepcopy`` does with it (a memo key, an ``is`` test); the
    number means nothing outside the trace, so it may not leave the frame."""

    def reconstruct(self, codegen):
        unsupported("id() of an object made in the frame, leaving the frame (its number exists only while tracing)")


class RangeVariable(ConstantVariable):
    """A ``range`` with constant bounds; iterating over it unrolls the loop."""


class SliceVariable(ConstantVariable):
    """A ``slice`` with constant bounds, as in ``x[1:-1]``."""


# {container type: function making its tracker from a constant value}. Each container module
# (lists, dicts, sets) registers its own, so this module needs none of them; misc registers
# ``type``, for the classes in a constant (``typing.get_args(int | None)`` is ``(int, NoneType)``).
CONTAINER_TRACKERS = {}


def wrap_constant(value):
    """The tracker for a constant computed at trace time (containers get container trackers)."""
    if type(value) in CONTAINER_TRACKERS:
        return CONTAINER_TRACKERS[type(value)](value)
    if type(value) is range:
        return RangeVariable(value)
    if type(value) is slice:
        return SliceVariable(value)
    if not is_constant_value(value):
        unsupported(f"a value of type {type(value).__name__} computed at trace time")
    return ConstantVariable(value)


def is_none(var):
    return isinstance(var, ConstantVariable) and var.value is None
