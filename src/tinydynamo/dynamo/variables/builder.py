"""VariableBuilder: wrap a real value read from the frame, installing its guards (chapter 4).

``VariableBuilder(tx, source)(value)`` is called the first time the bytecode reads a value from
outside the frame (a LOAD_FAST of an argument, a LOAD_GLOBAL, ``self.fc1``...). It picks the
tracker for the value's type and records the guards under which the trace stays valid:

    tensor              -> TENSOR_MATCH, and a graph input (placeholder)
    int, float, str...  -> CONSTANT_MATCH (the value is baked into the graph)
    tuple, list, dict   -> TYPE_MATCH + LENGTH_CHECK / DICT_KEYS, items wrapped in turn
    nn.Module, function, module, class, enum member -> ID_MATCH
    GradModeExit        -> TYPE_MATCH, and CONSTANT_MATCH on its prior mode (chapter 5)
    other objects       -> TYPE_MATCH

Values read this way are cached by source, so a value read twice is one tracker with one set
of guards. With ``source=None`` (torch's own attributes, default arguments) no guard is
installed, and only values that need none are accepted.
"""
import collections
import enum
import functools
import os
import types
import warnings

import numpy as np
import torch

from .. import eval_frame
from ..exc import unsupported
from ..guards import Guard
from ..source import AttrSource, ClosureSource, GetItemSource, LocalSource, NumpyTensorSource
from .builtin import HANDLERS, BuiltinVariable, is_class_introspection, is_constant_method
from .constant import ConstantVariable, RangeVariable, SliceVariable, is_constant_value
from .dicts import ConstDictVariable, is_dict_key, key_tracker
from .functions import FunctoolsPartialVariable, LruCacheVariable, UserFunctionVariable, UserMethodVariable
from .lists import ListVariable, TupleVariable
from .misc import (
    EnvironVariable,
    GetAttrVariable,
    PythonModuleVariable,
    TypeVariable,
    UserDefinedObjectVariable,
)
from .ndarray import NUMPY_NAMES, NumpyFunctionVariable, NumpyNdarrayVariable
from .nn_module import NNModuleVariable
from .pytree import PytreeFunctionVariable
from .sets import SetVariable
from .torch import (AutocastVariable, GradModeExit, GradModeVariable, ProfilerRangeExit, ProfilerRangeVariable,
                    TorchFunctionVariable, is_torch_callable)


# Where a subclass a user meets is best compiled around (chapter 14 for DTensor).
SUBCLASS_HINTS = {
    "DTensor": "FSDP2's parameters are DTensors outside the module's forward: compile the module, "
               "whose forward sees the gathered plain tensors",
}


def original_function(value):
    """The attribute holding the function that a wrapper calls unchanged: a function compiled by
    tinydynamo (``_tinydynamo_orig``), or one under ``@torch.jit.script_if_tracing``, which runs
    it as it is when not tracing with TorchScript (``__original_fn``). None for other values."""
    attributes = getattr(value, "__dict__", {})
    if "_tinydynamo_orig" in attributes:
        return "_tinydynamo_orig"
    if attributes.get("__script_if_tracing_wrapper") and "__original_fn" in attributes:
        return "__original_fn"
    return None


def skip_disabled_function(wrapper):
    """``@torch.compiler.disable``: its wrapper is torch's code, so calling it breaks the graph, and
    the function it wraps is never compiled either (the hook skips its code), as torch.compile
    leaves it. (Functions that it calls may still be compiled: the skip is not recursive.)"""
    code = getattr(getattr(wrapper, "_torchdynamo_orig_callable", None), "__code__", None)
    if code is not None:
        eval_frame.set_skip(code)


def is_mutable_object(value):
    """A value whose changes the trace records on its tracker: a list, a dict, or an instance of
    a user's class (attribute stores). Modules, functions, classes and enum members are
    guarded by identity and never copied, so they need no such care."""
    if type(value) in (list, dict):
        return True
    return type(value).__module__ != "builtins" and not isinstance(value, IMMUTABLE_OR_BY_ID)


IMMUTABLE_OR_BY_ID = (torch.Tensor, torch.nn.Module, enum.Enum, type, types.ModuleType, types.FunctionType,
                      types.MethodType, types.BuiltinFunctionType, functools.partial, tuple, GradModeExit,
                      ProfilerRangeExit)


class VariableBuilder:
    def __init__(self, tx, source):
        self.tx = tx
        self.source = source

    def __call__(self, value):
        cache = self.tx.output.variable_cache
        if self.source is not None and self.source in cache:
            return cache[self.source]
        var = self.same_object(value) or self.wrap(value)
        if self.source is not None:
            cache[self.source] = var
        return var

    def same_object(self, value):
        """A list, dict or user object reached again through another source (``ys = xs`` before
        a graph break passed both to the resume function; ``f(o, o)``) is the same tracker,
        guarded to stay one object, so that a change made through one name is seen through the
        other."""
        if not is_mutable_object(value) or self.source is None:
            return None
        containers = self.tx.output.containers_by_id
        if id(value) not in containers:
            containers[id(value)] = (value, self.source)
            return None
        first_source = containers[id(value)][1]  # the tracker made there may have dropped it (a wrapped function)
        self.guard("DUPLICATE_INPUT", (first_source,))
        return self.tx.output.variable_cache[first_source]

    def guard(self, kind, value=None):
        if self.source is not None:
            self.tx.output.add_guard(Guard(self.source, kind, value))

    def wrap_builtin(self, value):
        """A builtin function, or a method bound to a class or a constant (``Backend.__subclasses__``,
        ``keyword.iskeyword``), guarded by what it is bound to: reading ``cls.__subclasses__``
        makes a new bound method each time."""
        owner = getattr(value, "__self__", None)
        if isinstance(owner, (types.ModuleType, type(None))) or value in (object.__new__, tuple.__new__):
            self.guard("ID_MATCH", value)
        elif is_class_introspection(value) or is_constant_method(value):
            if self.source is not None:
                self.tx.output.add_guard(Guard(AttrSource(self.source, "__self__"), "ID_MATCH", owner))
        else:
            unsupported(f"the bound builtin method {value.__qualname__}")
        return BuiltinVariable(value, self.source)

    def item(self, key, value):
        source = GetItemSource(self.source, key) if self.source is not None else None
        return VariableBuilder(self.tx, source)(value)

    def wrap(self, value):
        if isinstance(value, torch.Tensor):
            return self.wrap_tensor(value)
        # an int argument, or the int in a closure cell, may be a symbol (automatic dynamic)
        if type(value) is int and isinstance(self.source, (LocalSource, ClosureSource)):
            var = self.tx.output.add_int_input(self.source, value)
            if var is not None:
                return var
        if is_constant_value(value):
            self.guard("CONSTANT_MATCH", value)
            cls = {range: RangeVariable, slice: SliceVariable}.get(type(value), ConstantVariable)
            return cls(value, self.source)
        if type(value) in (tuple, list) or (isinstance(value, tuple) and hasattr(type(value), "_fields")):
            return self.wrap_sequence(value)
        if type(value) in (dict, collections.OrderedDict, collections.defaultdict):
            return self.wrap_dict(value)
        if type(value) in (set, frozenset) and all(is_dict_key(v) for v in value):
            self.guard("CONSTANT_MATCH", value)  # a set of constants (or classes) is compared as a whole
            return SetVariable([key_tracker(self.tx, v) for v in value], frozen=type(value) is frozenset,
                               source=self.source)
        if type(value) is torch.autocast:  # made outside the frame: @torch.autocast(...) on a function
            self.guard("ID_MATCH", value)
            return AutocastVariable(value.device, (value._enabled, value.fast_dtype, value._cache_enabled))
        if isinstance(value, GradModeExit):
            return self.wrap_grad_mode_exit(value)
        if isinstance(value, ProfilerRangeExit):
            self.guard("TYPE_MATCH", ProfilerRangeExit)
            return GetAttrVariable(ProfilerRangeVariable(), "__exit__")
        if value is os.environ:
            return EnvironVariable()
        if type(value) is np.ndarray and self.source is not None and self.is_shareable_array(value):
            return self.wrap_ndarray(value)
        if isinstance(value, torch.nn.Module):
            if self.source is None:
                unsupported(f"an nn.Module ({type(value).__name__}) reached without a source")
            self.guard("ID_MATCH", value)
            return NNModuleVariable(value, self.source)
        return self.wrap_callable_or_object(value)

    def wrap_tensor(self, value):
        if self.source is None:
            unsupported("a tensor that is not reachable from the frame's inputs "
                        "(e.g. a tensor default argument or a tensor stored in torch itself)")
        if type(value) not in (torch.Tensor, torch.nn.Parameter):
            unsupported(f"tensor subclass {type(value).__name__} (only plain tensors are traced; "
                        f"{SUBCLASS_HINTS.get(type(value).__name__, 'it runs eagerly')})")
        if value.is_sparse or value.layout != torch.strided:
            unsupported(f"tensors with layout {value.layout}")
        return self.tx.output.add_input(self.source, value)

    def wrap_ndarray(self, value):
        """A NumPy array argument: the graph takes ``torch.from_numpy`` of it (the same memory) as
        an input, guarded as that tensor is, and Python keeps seeing the array."""
        self.guard("TYPE_MATCH", np.ndarray)
        tensor_var = self.tx.output.add_input(NumpyTensorSource(self.source), torch.from_numpy(value))
        return NumpyNdarrayVariable(tensor_var.proxy, tensor_var.example_value, tensor_var.device,
                                    source=self.source, python_cls=np.ndarray)

    @staticmethod
    def is_shareable_array(value):
        """Whether ``torch.from_numpy`` shares the array's memory quietly: a dtype torch has, native
        byte order, and writable (for a read-only array it warns on every call)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                torch.from_numpy(value)
        except (TypeError, ValueError, UserWarning):
            return False
        return True

    def wrap_sequence(self, value):
        self.guard("TYPE_MATCH", type(value))
        self.guard("LENGTH_CHECK", len(value))
        items = [self.item(i, v) for i, v in enumerate(value)]
        if isinstance(value, list):
            return ListVariable(items, source=self.source)
        return TupleVariable(items, source=self.source, tuple_cls=type(value))

    def wrap_dict(self, value):
        if not all(is_dict_key(k) for k in value):
            unsupported("a dict with non-constant keys")
        self.guard("TYPE_MATCH", type(value))
        self.guard("DICT_KEYS", list(value))
        factory = getattr(value, "default_factory", None)  # a defaultdict's, called for a missing key
        if factory is not None:
            source = AttrSource(self.source, "default_factory") if self.source is not None else None
            factory = VariableBuilder(self.tx, source)(factory)
        unread = {k: functools.partial(self.item, k, v) for k, v in value.items()}  # built when read
        return ConstDictVariable({}, source=self.source, dict_cls=type(value), default_factory=factory,
                                 unread=unread)

    def wrap_callable_or_object(self, value):
        if isinstance(value, types.FunctionType) and value.__dict__.get("_torchdynamo_disable") is True:
            skip_disabled_function(value)  # (getattr could run __getattr__: torch.classes raises)
        if id(value) in NUMPY_NAMES and NUMPY_NAMES[id(value)] is not None:  # np.mean, np.linalg.norm
            self.guard("ID_MATCH", value)
            return NumpyFunctionVariable(value, NUMPY_NAMES[id(value)], self.source)
        if isinstance(value, types.FunctionType) and value in PytreeFunctionVariable.FUNCTIONS:
            self.guard("ID_MATCH", value)
            return PytreeFunctionVariable(value, self.source)
        if is_torch_callable(value):
            self.guard("ID_MATCH", value)
            if isinstance(value, torch.library.CustomOpDef):  # the graph calls its operator
                return TorchFunctionVariable(value._opoverload, self.source)
            return TorchFunctionVariable(value, self.source)
        if isinstance(value, types.ModuleType):
            self.guard("ID_MATCH", value)
            return PythonModuleVariable(value, self.source)
        if type(value) is functools.partial:
            return self.wrap_partial(value)
        if isinstance(value, functools._lru_cache_wrapper) and isinstance(value.__wrapped__, types.FunctionType):
            source = AttrSource(self.source, "__wrapped__") if self.source is not None else None
            return LruCacheVariable(value, VariableBuilder(self.tx, source)(value.__wrapped__))
        wrapped = original_function(value)
        if wrapped is not None:  # a compiled function, or @torch.jit.script_if_tracing: trace the original
            source = AttrSource(self.source, wrapped) if self.source is not None else None
            return VariableBuilder(self.tx, source)(getattr(value, wrapped))
        if isinstance(value, types.FunctionType) and value in HANDLERS:  # inspect.signature
            return BuiltinVariable(value)
        if isinstance(value, types.FunctionType):
            self.guard("ID_MATCH", value)
            return UserFunctionVariable(value, self.source)
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            if self.source is not None:  # a bound method is a new object at each access
                self.tx.output.add_guard(Guard(AttrSource(self.source, "__func__"), "ID_MATCH", value.__func__))
            return UserMethodVariable(value.__func__, self.wrap_bound_self(value))
        if isinstance(value, types.BuiltinMethodType) and isinstance(value.__self__, torch.Tensor):
            return self.wrap_tensor_method(value)
        if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            return self.wrap_builtin(value)
        if isinstance(value, type):
            self.guard("ID_MATCH", value)
            if value.__module__ == "builtins" or value in HANDLERS:  # int, list... itertools.product
                return BuiltinVariable(value)
            return TypeVariable(value, self.source)
        if isinstance(value, enum.Enum):  # a singleton the trace may use as a constant (a dict key, .value)
            self.guard("ID_MATCH", value)
        else:
            self.guard("TYPE_MATCH", type(value))
        return UserDefinedObjectVariable(value, self.source)

    def wrap_grad_mode_exit(self, value):
        """A resume function that starts inside a ``with torch.no_grad()`` block (chapter 5)."""
        if self.source is None:
            unsupported("a GradModeExit reached without a source")
        self.guard("TYPE_MATCH", GradModeExit)
        prior = VariableBuilder(self.tx, AttrSource(self.source, "prior"))(value.prior)
        return GetAttrVariable(GradModeVariable(torch.is_grad_enabled(), prior.as_python_constant()), "__exit__")

    def wrap_tensor_method(self, value):
        """``x.mul`` passed in as a value (a resume function gets one when a graph break cut
        ``x.mul(...)`` in two): the tensor, and the name of the method."""
        if self.source is None:
            unsupported(f"the bound method Tensor.{value.__name__} reached without a source")
        tensor = VariableBuilder(self.tx, AttrSource(self.source, "__self__"))(value.__self__)
        name = VariableBuilder(self.tx, AttrSource(self.source, "__name__"))(value.__name__)
        return GetAttrVariable(tensor, name.as_python_constant())

    def wrap_partial(self, value):
        self.guard("TYPE_MATCH", functools.partial)
        part = (lambda name: AttrSource(self.source, name)) if self.source is not None else (lambda name: None)
        func = VariableBuilder(self.tx, part("func"))(value.func)
        args = VariableBuilder(self.tx, part("args"))(value.args).unpack_var_sequence(self.tx)
        keywords = VariableBuilder(self.tx, part("keywords"))(value.keywords).items
        return FunctoolsPartialVariable(func, args, keywords, self.source)

    def wrap_bound_self(self, method):
        source = AttrSource(self.source, "__self__") if self.source is not None else None
        return VariableBuilder(self.tx, source)(method.__self__)
