"""Smaller trackers: method wrappers, classes, Python modules, super(), plain objects (chapter 3).

- ``GetAttrVariable``: ``obj.method`` before it is called (``x.view``, ``xs.append``).
- ``TypeVariable``: a class (``torch.Tensor`` in ``isinstance``, a namedtuple class, ``MyConfig``).
- ``PythonModuleVariable``: a module object (``torch``, ``math``, ``F``, a user module).
- ``SuperVariable``: ``super()`` inside an inlined method.
- ``UserDefinedObjectVariable``: an instance of a user class that is not an nn.Module.
"""
import abc
import collections
import collections.abc
import copyreg
import dataclasses
import enum
import functools
import inspect
import logging
import os
import sys
import types
import weakref

import torch

from ..exc import TracedException, raise_at_trace_time, unsupported
from ..guards import Guard
from ..source import AttrSource, DictGetItemSource, WeakRefCallSource
from .base import GetAttrVariable, VariableTracker
from .constant import CONTAINER_TRACKERS, ConstantVariable, fold, is_none, wrap_constant
from .dicts import ConstDictVariable, dict_from, is_plain_dict_subclass
from .functions import FunctoolsPartialVariable, UserFunctionVariable, UserMethodVariable, static_attribute
from .lists import BaseListVariable, DequeVariable, ListIteratorVariable, ListVariable, TupleVariable
from .nn_module import NewModuleVariable, NNModuleVariable
from .tensor import TensorVariable
from .torch import (AutocastVariable, GradModeVariable, ProfilerRangeVariable, TorchFunctionVariable,
                    constant_constructor, is_constant_class)


def bind_with_defaults(tx, cls, args, kwargs):
    """The values of ``cls(*args, **kwargs)``'s parameters in order, defaults filled in."""

    signature = inspect.signature(cls)
    bound = fold(signature.bind, *args, **kwargs).arguments
    return [bound[name] if name in bound else tx.build(parameter.default)
            for name, parameter in signature.parameters.items()]


def has_plain_instances(cls):
    """A Python class whose instances are a ``__dict__`` and nothing else (no builtin base, no
    ``__slots__``) and whose attribute writes are ``object``'s or a Python ``__setattr__``: such an
    instance made while tracing is a NewObjectVariable, rebuilt afterwards from its attributes."""
    return (type(cls) in (type, abc.ABCMeta) and cls.__new__ is object.__new__
            and (cls.__setattr__ is object.__setattr__ or isinstance(cls.__setattr__, types.FunctionType))
            and cls.__dictoffset__ != 0 and all(k.__module__ != "builtins" and not vars(k).get("__slots__")
                                                for k in cls.__mro__[:-1])
            and not issubclass(cls, torch.nn.Module))


def is_plain_class(cls):
    """A class whose instances ``object.__new__`` makes and ``__init__`` (Python) fills."""
    return has_plain_instances(cls) and (
        isinstance(cls.__init__, types.FunctionType) or cls.__init__ is object.__init__)


def reduces_as_plain_object(cls):
    """Whether ``obj.__reduce_ex__(protocol)`` (what ``copy.copy``, ``copy.deepcopy`` and pickle
    call) is ``object``'s own for an instance of ``cls``, which returns
    ``(copyreg.__newobj__, (cls,), obj.__dict__ or None, None, None)``."""
    return has_plain_instances(cls) and all(
        getattr(cls, name) is getattr(object, name) for name in ("__reduce_ex__", "__reduce__", "__getstate__")
    ) and not hasattr(cls, "__getnewargs_ex__") and not hasattr(cls, "__getnewargs__")


def overrides_construction(cls):
    """Whether a class of the user's (not Python's) defines ``__init__`` or ``__new__``."""
    return any("__init__" in vars(k) or "__new__" in vars(k) for k in cls.__mro__ if k.__module__ != "builtins")


# The legacy tensor types, which build a CPU tensor of their dtype from a list of data (None: the
# default dtype).
LEGACY_TENSOR_TYPES = {torch.FloatTensor: torch.float32, torch.DoubleTensor: torch.float64,
                       torch.HalfTensor: torch.float16, torch.BFloat16Tensor: torch.bfloat16,
                       torch.ByteTensor: torch.uint8, torch.CharTensor: torch.int8, torch.ShortTensor: torch.int16,
                       torch.IntTensor: torch.int32, torch.LongTensor: torch.int64, torch.BoolTensor: torch.bool,
                       torch.Tensor: None}


class TypeVariable(VariableTracker):
    """A class. Classes are constants: ``isinstance(x, torch.Tensor)`` folds at trace time."""

    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def as_python_constant(self):
        return self.cls

    def python_type(self):
        return type(self.cls)

    def call_function(self, tx, args, kwargs):
        if self.cls in GradModeVariable.CLASSES:
            return GradModeVariable.create(tx, self.cls, args)
        if issubclass(self.cls, torch.autocast):  # torch.cuda.amp.autocast too
            return AutocastVariable.create(self.cls, args, kwargs)
        if self.cls is functools.partial:
            return FunctoolsPartialVariable(args[0], args[1:], kwargs)
        if issubclass(self.cls, torch.autograd.profiler.record_function):
            return ProfilerRangeVariable()
        if issubclass(self.cls, tuple) and hasattr(self.cls, "_fields"):  # a namedtuple
            return TupleVariable(bind_with_defaults(tx, self.cls, args, kwargs), tuple_cls=self.cls)
        if self.cls in LEGACY_TENSOR_TYPES and len(args) == 1 and not kwargs and isinstance(args[0], BaseListVariable):
            # torch.IntTensor([n]) (VITS), torch.Tensor([1e10]) (NeRF): a CPU tensor of that data
            # and dtype (torch.Tensor's is the default dtype, which every frame's guards check)
            dtype = LEGACY_TENSOR_TYPES[self.cls] or torch.get_default_dtype()
            options = dict(dtype=ConstantVariable(dtype), device=ConstantVariable("cpu"))
            return TorchFunctionVariable(torch.tensor).call_function(tx, args, options)
        if is_constant_class(self.cls):
            return constant_constructor(self.cls, args, kwargs)
        if issubclass(self.cls, enum.Enum) and not kwargs and all(a.is_python_constant() for a in args):
            return tx.build(fold(self.cls, *[a.as_python_constant() for a in args]))  # Color(2): a lookup
        if issubclass(self.cls, BaseException) and not overrides_construction(self.cls):
            return ExceptionVariable.create(self.cls, args, kwargs)
        if is_traceable_dataclass(self.cls):
            return DataClassVariable.create(tx, self.cls, args, kwargs)
        if self.cls is collections.deque:
            return DequeVariable.create(tx, *args, **kwargs)
        if is_plain_dict_subclass(self.cls):
            return dict_from(tx, args[0] if args else None, kwargs, self.cls)
        if is_plain_class(self.cls):
            return NewObjectVariable.create(tx, self, args, kwargs)
        if issubclass(self.cls, torch.nn.Module):
            return NewModuleVariable.create(tx, self.cls, args, kwargs)
        unsupported(f"creating an instance of {self.cls.__qualname__} inside the compiled frame")

    def var_getattr(self, tx, name):
        source = AttrSource(self.source, name) if self.source else None
        pending = tx.output.side_effects.pending_class_attr(self.cls, name)
        if pending is not None:
            return pending
        try:
            attr = inspect.getattr_static(self.cls, name)
        except AttributeError:
            raise_at_trace_time(AttributeError(f"type object {self.cls.__qualname__!r} has no attribute {name!r}"))
        if isinstance(attr, staticmethod):
            return UserFunctionVariable(attr.__func__)
        if issubclass(self.cls, torch.autograd.Function) and name == "apply":
            return TorchFunctionVariable(self.cls.apply)  # one node; AOT traces its forward and backward
        if isinstance(attr, classmethod):
            return UserMethodVariable(attr.__func__, self)
        return tx.build(getattr(self.cls, name), source)

    def store_attr(self, tx, name, value):
        """``Cls.name = value`` on a class from outside the frame: replayed after the graph, and
        seen by later reads of the attribute through the class, its subclasses and instances."""
        if self.source is None or type(self.cls) is not type or self.is_enum():
            unsupported(f"assigning attribute {name!r} of {self} (a class made in the frame, an enum, "
                        "or a metaclass)")
        if isinstance(inspect.getattr_static(self.cls, name, None), (types.FunctionType, property)) or \
                not isinstance(value, (ConstantVariable, TensorVariable)):
            unsupported(f"assigning attribute {name!r} of {self}: only constants and tensors replace "
                        "a class attribute that is not a method")
        tracker = tx.output.side_effects.class_tracker(self.cls)
        tx.output.side_effects.store_attr(tracker if tracker is not None else self, name, value)

    def is_enum(self):
        return isinstance(self.cls, type) and issubclass(self.cls, enum.Enum)

    def unpack_var_sequence(self, tx):
        """``for member in Color``: an enum class, which the ID_MATCH on it fixes, is a constant."""
        if not self.is_enum():
            unsupported(f"iterating over {self}")
        return [tx.build(member) for member in self.cls]

    def call_method(self, tx, name, args, kwargs):
        if name == "__getitem__" and self.is_enum() and args[0].is_python_constant():  # Color["RED"]
            return tx.build(fold(self.cls.__getitem__, args[0].as_python_constant()))
        if name == "__len__" and self.is_enum():
            return ConstantVariable(len(self.cls))
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self):
        return f"TypeVariable({self.cls.__qualname__})"


CONTAINER_TRACKERS[type] = TypeVariable


class PythonModuleVariable(VariableTracker):
    """A module object. Attributes of torch and of the standard library are read without guards
    (nobody reassigns ``torch.relu``); attributes of other modules are guarded like globals."""

    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module

    def python_object(self):
        return self.module

    def python_type(self):
        return types.ModuleType

    def var_getattr(self, tx, name):

        value = fold(getattr, self.module, name)
        trusted = is_trusted_module(self.module.__name__)
        source = None if trusted or self.source is None else AttrSource(self.source, name)
        if not trusted and source is None:
            unsupported(f"attribute {name!r} of module {self.module.__name__} (no source to guard it)")
        return tx.build(value, source)

    def __repr__(self):
        return f"PythonModuleVariable({self.module.__name__})"


def is_trusted_module(name):
    """torch and the standard library: their attributes are not guarded."""
    root = name.split(".")[0]
    return root == "torch" or root in sys.stdlib_module_names


OBJECT_SLOTS = ("__getattribute__", "__init__")
DICT_READS = ("get", "__getitem__", "__contains__", "__len__", "keys", "values", "items")
SLOT_WRITES = ("__setattr__", "__setitem__")


class SuperVariable(VariableTracker):
    """``super()`` / ``super(cls, obj)``: attribute lookup starts after ``cls`` in the MRO."""

    def __init__(self, cls, obj):
        super().__init__()
        self.cls = cls
        self.obj = obj

    def var_getattr(self, tx, name):
        mro = self.obj.python_type().__mro__
        if self.cls not in mro:
            unsupported(f"super({self.cls.__qualname__}, obj): obj is not an instance of it (TypeError)")
        for klass in mro[mro.index(self.cls) + 1:]:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                if attr is torch.nn.Module.__call__ and isinstance(self.obj, NNModuleVariable):
                    return GetAttrVariable(self, name)  # hooks and forward: call_method
                if isinstance(attr, types.FunctionType):
                    return UserMethodVariable(attr, self.obj)
                if isinstance(attr, classmethod):
                    return UserMethodVariable(attr.__func__, TypeVariable(self.obj.python_type()))
                if isinstance(attr, staticmethod):
                    return UserFunctionVariable(attr.__func__)
                if (klass is object and name in OBJECT_SLOTS) or (
                        klass in (dict, collections.OrderedDict) and name in DICT_READS) or (
                        klass in (object, dict, collections.OrderedDict) and name in SLOT_WRITES):
                    return GetAttrVariable(self, name)
                unsupported(f"super().{name}, which is not a plain method")
        unsupported(f"AttributeError at trace time: super() has no attribute {name!r}")

    def next_definition(self, name):
        """The attribute ``name`` of the first class after ``cls`` in the MRO that defines it."""
        mro = self.obj.python_type().__mro__
        return next(k.__dict__[name] for k in mro[mro.index(self.cls) + 1:] if name in k.__dict__)

    def call_method(self, tx, name, args, kwargs):
        """``object``'s own ``__getattribute__`` and ``__init__``, and the dict methods, reached
        through super()."""
        if name == "__getattribute__" and len(args) == 1 and not kwargs \
                and isinstance(self.obj, UserDefinedObjectVariable):
            return self.obj.generic_getattr(tx, args[0].as_python_constant())
        if name == "__init__" and not args and not kwargs:
            return ConstantVariable(None)
        if name == "__call__" and isinstance(self.obj, NNModuleVariable):  # from an overriding __call__
            return self.obj.module_call(tx, args, kwargs)
        if name in DICT_READS and isinstance(self.obj, UserDefinedObjectVariable) \
                and isinstance(self.obj.value, dict):
            return self.obj.dict_contents(tx).call_method(tx, name, args, kwargs)
        if name in SLOT_WRITES and not kwargs and isinstance(self.obj, UserDefinedObjectVariable):
            return self.obj.slot_write(tx, self.next_definition(name), name, args)
        unsupported(f"super().{name}() on {self.obj}")


def has_custom_getattribute(cls):
    return isinstance(inspect.getattr_static(cls, "__getattribute__", None), types.FunctionType)


def is_method(cls, name):
    return isinstance(inspect.getattr_static(cls, name, None), (types.FunctionType, classmethod, staticmethod))


LOGGER_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
                 "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL}


def logger_is_enabled(tx, logger, method):
    """Whether ``logger.<method>(...)`` would emit anything (True for other methods). Off, the call
    is dropped, under a guard that the logger is still off for that level."""
    level = LOGGER_LEVELS.get(method)
    return level is None or logger.isEnabledFor(level) or enabled_for(tx, logger, level)


def is_log_once(cls, name, args, kwargs):
    """``logger.warning_once(...)`` (transformers': a Logger method under ``functools.lru_cache``)
    with constant arguments. It is called now, while tracing: it logs on its first call in the
    process and never again for these arguments, so the compiled code has nothing left to do."""
    method = inspect.getattr_static(cls, name, None)
    return isinstance(method, functools._lru_cache_wrapper) and all(
        a.is_python_constant() for a in [*args, *kwargs.values()])


def enabled_for(tx, logger, level):
    """``logger.isEnabledFor(level)``, answered now, under a guard that the answer stays the same."""

    def is_enabled():
        return logger.isEnabledFor(level)

    is_enabled.__qualname__ = f"logging.getLogger({logger.name!r}).isEnabledFor({level})"  # the guard's key
    answer = is_enabled()
    tx.output.add_guard(Guard(None, "STATE_QUERY", (is_enabled, answer)))
    return answer


class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class (a config object, a helper). Read-only while tracing."""

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_object(self):
        return self.value

    def as_python_constant(self):
        if not isinstance(self.value, enum.Enum):  # a member is a singleton: usable as a dict key
            return super().as_python_constant()
        return self.value

    def python_type(self):
        return type(self.value)

    def var_getattr(self, tx, name):
        source = AttrSource(self.source, name) if self.source else None
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        if isinstance(self.value, enum.Enum) and name in ("name", "value"):
            return tx.build(getattr(self.value, name))  # fixed for a member, and the builder guarded which
        if name == "__reduce_ex__" and reduces_as_plain_object(type(self.value)):
            return GetAttrVariable(self, name)
        if source is None and name in getattr(self.value, "__dict__", {}) \
                and not type(self.value).__module__.startswith("torch."):  # torch's own: trusted, as torch's modules
            unsupported(f"attribute {name!r} of a {type(self.value).__name__} with no source to guard it")
        if name == "__dict__" and source is not None and isinstance(
                inspect.getattr_static(self.value, "__dict__", None), types.GetSetDescriptorType):
            return InstanceDictVariable(self, source)
        if type(self.value).__module__.startswith("torch.backends"):  # torch.backends.cuda.matmul.allow_tf32
            return tx.build(fold(getattr, self.value, name), source)  # a flag: read now (guarded if sourced)
        if isinstance(self.value, logging.Logger) and callable(getattr(type(self.value), name, None)):
            return GetAttrVariable(self, name)  # the call breaks the graph (see call_method)
        if has_custom_getattribute(type(self.value)) and not is_method(type(self.value), name):
            return self.dynamic_attribute(tx, name, source)
        return static_attribute(tx, self, self.value, name, source)

    def instance_dict(self, tx):
        """The items of ``__dict__``, as trackers, as they are at this point of the trace (its
        keys guarded)."""
        source = AttrSource(self.source, "__dict__")
        instance_dict = self.value.__dict__
        tx.output.add_guard(Guard(source, "DICT_KEYS", list(instance_dict)))
        pending = tx.output.side_effects.attr_values.get(self, {})
        items = {k: tx.build(v, DictGetItemSource(source, k)) for k, v in instance_dict.items()}
        return {**items, **pending}

    def store_attr(self, tx, name, value):
        """``obj.name = value`` on an object from the caller: replayed after the graph.

        If the class overrides ``__setattr__`` in Python (transformers' configs validate and
        remap names), that method is traced: the ``object.__setattr__`` it reaches through
        ``super()`` is the write that is replayed (see ``slot_write``)."""
        cls = type(self.value)
        if self.source is None:
            unsupported(f"assigning attribute {name!r} of a {cls.__name__} with no source")
        setattr_method = inspect.getattr_static(cls, "__setattr__")
        if isinstance(setattr_method, types.FunctionType):
            UserMethodVariable(setattr_method, self).call_function(tx, [ConstantVariable(name), value], {})
            return
        if setattr_method is not object.__setattr__ or inspect.isdatadescriptor(
                inspect.getattr_static(cls, name, None)):
            unsupported(f"assigning attribute {name!r} of a {cls.__name__} (__setattr__ or a descriptor)")
        tx.output.side_effects.store_attr(self, name, value)

    def call_method(self, tx, name, args, kwargs):
        """``dict``'s own read methods on a dict subclass from the caller; a logger's methods
        (a side effect: Python runs them after a graph break, as in Dynamo)."""
        cls = type(self.value)
        if isinstance(self.value, logging.Logger) and name == "isEnabledFor" and len(args) == 1 \
                and not kwargs and args[0].is_python_constant():
            return ConstantVariable(enabled_for(tx, self.value, args[0].as_python_constant()))
        if isinstance(self.value, logging.Logger) and not logger_is_enabled(tx, self.value, name):
            return ConstantVariable(None)  # log.debug(...) with debug logging off does nothing
        if isinstance(self.value, logging.Logger) and is_log_once(cls, name, args, kwargs):
            fold(getattr(self.value, name), *[a.as_python_constant() for a in args],
                 **{k: v.as_python_constant() for k, v in kwargs.items()})
            return ConstantVariable(None)
        if isinstance(self.value, logging.Logger):
            unsupported(f"logging.Logger.{name}() (a side effect)")
        if isinstance(self.value, dict) and name in DICT_READS and not isinstance(
                inspect.getattr_static(cls, name, None), types.FunctionType):
            return self.dict_contents(tx).call_method(tx, name, args, kwargs)
        if name == "__reduce_ex__" and reduces_as_plain_object(cls) and len(args) == 1 and not kwargs:
            return self.reduce_ex(tx)
        return super().call_method(tx, name, args, kwargs)

    def reduce_ex(self, tx):
        """``object.__reduce_ex__``, as ``copy`` calls it: the class, to be made again by
        ``copyreg.__newobj__``, and the instance dict as the state (None when it is empty)."""
        state = self.var_getattr(tx, "__dict__")
        if not state.truthy(tx):
            state = ConstantVariable(None)
        cls = type(self.value)
        return TupleVariable([tx.build(copyreg.__newobj__), TupleVariable([TypeVariable(cls, self.class_source())]),
                              state, ConstantVariable(None), ConstantVariable(None)])

    def write_instance_dict(self, tx, name, value):
        """``obj.__dict__[name] = value``: the attribute store ``obj.name = value`` replayed after
        the graph, where that store runs no Python code of the class's."""
        if inspect.getattr_static(type(self.value), "__setattr__") is not object.__setattr__:
            unsupported(f"writing {name!r} into the __dict__ of a {type(self.value).__name__} with a __setattr__")
        self.store_attr(tx, name, value)

    def dynamic_attribute(self, tx, name, source):
        """An attribute of an object whose class overrides ``__getattribute__`` (transformers'
        configs remap names): read it for real now, and guard the value read, as the guard reads
        it through the same ``__getattribute__``."""

        if source is None:
            unsupported(f"attribute {name!r} of a {type(self.value).__name__} with no source to guard it")
        return tx.build(fold(getattr, self.value, name), source)

    def slot_write(self, tx, slot, name, args):
        """``super().__setattr__(name, value)`` / ``super().__setitem__(key, value)`` from a class
        that overrides them: ``slot`` (``object``'s or ``dict``'s own write) is called after the
        graph, and reads later in the trace see the value."""
        if self.source is None or len(args) != 2:
            unsupported(f"super().{name}() on a {type(self.value).__name__} with no source")
        if name == "__setattr__":
            tx.output.side_effects.store_attr(self, args[0].as_python_constant(), args[1], replay=False)
        else:
            tx.output.side_effects.item_writes.add(self)
        tx.output.side_effects.replay_call(slot, [self, *args])
        return ConstantVariable(None)

    def dict_contents(self, tx):
        """What a dict subclass from the caller holds, as a dict read through ``dict``'s own
        methods (``super().get(key)`` in the subclass): guarded on its keys, read-only."""
        if self.source is None or self in tx.output.side_effects.item_writes:
            unsupported(f"the contents of a {type(self.value).__name__} with no source, or written to")
        keys = list(self.value)
        tx.output.add_guard(Guard(self.source, "DICT_KEYS", keys))
        items = {k: tx.build(dict.__getitem__(self.value, k), DictGetItemSource(self.source, k))
                 for k in keys}
        return ConstDictVariable(items)

    def generic_getattr(self, tx, name):
        """``object.__getattribute__(obj, name)``: the lookup without the class's override."""
        source = AttrSource(self.source, name) if self.source else None
        return static_attribute(tx, self, self.value, name, source)

    def call_function(self, tx, args, kwargs):
        if isinstance(self.value, weakref.ref) and self.source is not None and not args and not kwargs:
            return tx.build(self.value(), WeakRefCallSource(self.source))  # guarded as read through it
        call = inspect.getattr_static(type(self.value), "__call__", None)
        if not isinstance(call, types.FunctionType):
            unsupported(f"calling a {type(self.value).__name__}")
        return UserMethodVariable(call, self).call_function(tx, args, kwargs)

    def unpack_var_sequence(self, tx):
        """Iterate as Python would: a Python ``__iter__`` is traced; a sequence (``__len__`` and
        ``__getitem__``, with no ``__iter__`` or the one of ``collections.abc.Sequence``) is
        indexed from 0 to its length."""
        cls = type(self.value)
        iter_method = inspect.getattr_static(cls, "__iter__", None)
        methods = [inspect.getattr_static(cls, name, None) for name in ("__len__", "__getitem__")]
        if iter_method in (None, collections.abc.Sequence.__iter__) and all(
                isinstance(m, types.FunctionType) for m in methods):
            length = UserMethodVariable(methods[0], self).call_function(tx, [], {}).as_python_constant()
            return [UserMethodVariable(methods[1], self).call_function(tx, [ConstantVariable(i)], {})
                    for i in range(length)]
        if isinstance(iter_method, types.FunctionType):
            iterator = UserMethodVariable(iter_method, self).call_function(tx, [], {})
            return iterator.unpack_var_sequence(tx)
        unsupported(f"iterating over a {cls.__name__}")

    def truthy(self, tx):
        """``if obj:``: the class's ``__bool__``, else its ``__len__``, traced (a cache object that
        counts its layers); true without either."""
        cls = type(self.value)
        for name in ("__bool__", "__len__"):
            method = inspect.getattr_static(cls, name, None)
            if method is None:
                continue
            if not isinstance(method, types.FunctionType):
                unsupported(f"truth value of a {cls.__name__} (its {name} is not written in Python)")
            return UserMethodVariable(method, self).call_function(tx, [], {}).truthy(tx)
        return True

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.value).__name__})"


class InstanceDictVariable(VariableTracker):
    """``obj.__dict__`` or ``vars(obj)`` of a plain object, from the caller (its keys guarded) or
    made in the frame. Each read sees the attributes as they are at that point of the trace,
    assignments to ``obj.name`` earlier in the frame included; ``obj.__dict__[name] = value`` is
    the attribute store ``obj.name = value``, where that runs no Python code."""

    def __init__(self, obj, source):
        super().__init__(source)
        self.obj = obj  # the UserDefinedObjectVariable

    def python_type(self):
        return dict

    def snapshot(self, tx):
        """The dict as it is now in the trace."""
        return ConstDictVariable(self.obj.instance_dict(tx))

    def call_method(self, tx, name, args, kwargs):
        if name == "__setitem__" and not kwargs:
            return self.store(tx, *args)
        if name == "update" and len(args) <= 1:  # what copy does to a copy: y.__dict__.update(state)
            items = [*dict_from(tx, args[0] if args else None, kwargs).items.items()]
            for key, value in items:
                self.store(tx, ConstantVariable(key), value)
            return ConstantVariable(None)
        if name not in DICT_READS + ("copy", "__iter__"):
            unsupported(f"dict.{name} on the __dict__ of a {type(self.obj.value).__name__} "
                        "(it would change the object's attributes)")
        return self.snapshot(tx).call_method(tx, name, args, kwargs)

    def store(self, tx, key, value):
        """``obj.__dict__[name] = value``, for a name that no data descriptor of the class owns."""
        cls, name = type(self.obj.value), key.as_python_constant()
        if not isinstance(name, str) or inspect.isdatadescriptor(inspect.getattr_static(cls, name, None)):
            unsupported(f"writing {name!r} into the __dict__ of a {cls.__name__} (not a name, or a descriptor's)")
        self.obj.write_instance_dict(tx, name, value)
        return ConstantVariable(None)

    def unpack_var_sequence(self, tx):
        return self.snapshot(tx).unpack_var_sequence(tx)

    def truthy(self, tx):
        return self.snapshot(tx).truthy(tx)

    def reconstruct(self, codegen):
        if self.source is None:
            unsupported(f"the __dict__ of a {type(self.obj.value).__name__} created inside the frame, "
                        "outside the frame")
        self.source.reconstruct(codegen)


# Classes whose instances behave as transformers' ModelOutput: a dataclass that is also an
# ordered dict of its fields that are not None, indexable by name or position.
MODEL_OUTPUT_CLASSES = {"transformers.utils.generic.ModelOutput", "diffusers.utils.outputs.BaseOutput"}


def is_diffusers_output(cls):
    return any(f"{k.__module__}.{k.__qualname__}" == "diffusers.utils.outputs.BaseOutput" for k in cls.__mro__)


def is_model_output(cls):
    return any(f"{k.__module__}.{k.__qualname__}" in MODEL_OUTPUT_CLASSES for k in cls.__mro__)


def is_traceable_dataclass(cls):
    """A dataclass whose ``__init__`` is the generated one and that we can build by its fields:
    no ``__post_init__`` (except ModelOutput's, modelled here), no factories, no kw_only fields."""
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        return False
    init = inspect.getattr_static(cls, "__init__")  # a subclass that is not decorated again inherits it
    if not isinstance(init, types.FunctionType) or init.__code__.co_filename != "<string>":
        return False
    if hasattr(cls, "__post_init__") and not is_model_output(cls):
        return False
    return all(f.init and not f.kw_only and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(cls))


def starts_with_a_pair(items):
    """Whether ModelOutput's __post_init__ reads a tuple or list given as its only field as
    (key, value) pairs: it does when the first item is a pair whose key is a string (or when
    there is no item to tell)."""
    if not items:
        return True
    pair = items[0]
    return isinstance(pair, BaseListVariable) and len(pair.items) == 2 and pair.items[0].is_python_constant() \
        and isinstance(pair.items[0].as_python_constant(), str)


class DataClassVariable(VariableTracker):
    """An instance of a dataclass created inside the frame (a ModelOutput, a user's result type).

    It is rebuilt after the graph as ``cls(*initial)``, then the attribute and item assignments
    made to it while tracing are replayed in order, so the real object goes through the same
    ``__init__``/``__post_init__``/``__setattr__`` as in eager. For a ModelOutput, ``items`` models
    the ordered dict: the fields that are not None, in the order they were set."""

    def __init__(self, cls, initial):
        super().__init__()
        self.cls = cls
        self.initial = initial  # field name -> tracker, as passed to the constructor
        self.attrs = dict(initial)  # the current attributes
        self.assignments = []  # ("attr" or "item", name, tracker), in program order
        self.items = {k: v for k, v in initial.items() if not is_none(v)} if is_model_output(cls) else None
        if self.items is not None and self.first_field_is_iterator():
            unsupported(f"{cls.__qualname__} built from an iterator of (key, value) pairs")

    @classmethod
    def create(cls, tx, klass, args, kwargs):

        bound = fold(inspect.signature(klass).bind, *args, **kwargs).arguments
        initial = {}
        for field in dataclasses.fields(klass):
            if field.name in bound:
                initial[field.name] = bound[field.name]
            else:
                initial[field.name] = tx.build(field.default)
        return cls(klass, initial)

    def first_field_is_iterator(self):
        """ModelOutput's __post_init__ unpacks a first field that holds (key, value) pairs when
        all the other fields are None: any iterable for transformers, a dict for diffusers."""
        first, *rest = self.initial.values()
        if not all(is_none(v) for v in rest):
            return False
        if isinstance(first, BaseListVariable) and not is_diffusers_output(self.cls):
            return starts_with_a_pair(first.items)  # else it is the field's value, as in eager
        iterables = (ConstDictVariable,) if is_diffusers_output(self.cls) else \
            (ConstDictVariable, ListIteratorVariable)
        custom_iterable = isinstance(first, UserDefinedObjectVariable) and hasattr(
            first.python_type(), "__iter__")
        return isinstance(first, iterables) or (custom_iterable and not is_diffusers_output(self.cls))

    def python_type(self):
        return self.cls

    def var_getattr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        if self.items is not None and name in MODEL_OUTPUT_METHODS:
            return GetAttrVariable(self, name)
        # looked up on an empty instance, so that a method comes out bound to this one
        return static_attribute(tx, self, object.__new__(self.cls), name, None)

    def store_attr(self, tx, name, value):
        if self.cls.__dataclass_params__.frozen:
            unsupported(f"assigning to a field of the frozen dataclass {self.cls.__qualname__}")
        if type(self.cls).__setattr__ is not type.__setattr__ or (
                self.items is None and "__setattr__" in vars(self.cls)):
            unsupported(f"assigning an attribute of {self.cls.__qualname__}, which overrides __setattr__")
        self.attrs[name] = value
        if self.items is not None and name in self.initial and not is_none(value):
            self.items[name] = value
        self.assignments.append(("attr", name, value))

    def call_method(self, tx, name, args, kwargs):
        if self.items is None or name not in MODEL_OUTPUT_METHODS or kwargs:
            return super().call_method(tx, name, args, kwargs)
        return getattr(self, "method_" + name.strip("_"))(tx, *args)

    def method_getitem(self, tx, key):
        key = key.as_python_constant()
        if isinstance(key, str):
            if key not in self.items:
                raise_at_trace_time(KeyError(key))
            return self.items[key]
        return wrap_sequence(fold(list(self.items.values()).__getitem__, key))

    def method_setitem(self, tx, key, value):
        name = key.as_python_constant()
        self.items[name] = value
        self.attrs[name] = value
        self.assignments.append(("item", name, value))
        return ConstantVariable(None)

    def method_to_tuple(self, tx):
        return TupleVariable(list(self.items.values()))

    def method_keys(self, tx):
        return ListVariable([ConstantVariable(k) for k in self.items])

    def method_values(self, tx):
        return ListVariable(list(self.items.values()))

    def method_items(self, tx):
        return ListVariable([TupleVariable([ConstantVariable(k), v]) for k, v in self.items.items()])

    def method_get(self, tx, key, default=None):
        return self.items.get(key.as_python_constant(), default or ConstantVariable(None))

    def method_contains(self, tx, key):
        return ConstantVariable(key.as_python_constant() in self.items)

    def method_len(self, tx):
        return ConstantVariable(len(self.items))

    def unpack_var_sequence(self, tx):
        if self.items is None:
            unsupported(f"iterating over a {self.cls.__qualname__}")
        return [ConstantVariable(k) for k in self.items]

    def truthy(self, tx):
        if self.items is not None:
            return bool(self.items)
        return super().truthy(tx) if hasattr(self.cls, "__bool__") or hasattr(self.cls, "__len__") else True

    def python_object(self):
        unsupported(f"the identity of a {self.cls.__qualname__} created inside the frame")

    def children(self):
        """The trackers it holds (the graph must output the tensors among them)."""
        return list(self.initial.values()) + [value for _, _, value in self.assignments]

    def reconstruct(self, codegen):
        codegen.load_const(self.cls, push_null=True)
        for value in self.initial.values():
            codegen(value)
        codegen.call(len(self.initial))
        for kind, name, value in self.assignments:
            codegen.append("COPY", arg=1)
            if kind == "attr":
                codegen(value)
                codegen.append("SWAP", arg=2)
                codegen.append("STORE_ATTR", argval=name)
            else:  # obj[name] = value: STORE_SUBSCR takes value, obj, key
                codegen(value)
                codegen.append("SWAP", arg=2)
                codegen.load_const(name)
                codegen.append("STORE_SUBSCR")

    def __repr__(self):
        return f"DataClassVariable({self.cls.__qualname__})"


MODEL_OUTPUT_METHODS = {"__getitem__", "__setitem__", "to_tuple", "keys", "values", "items", "get",
                        "__contains__", "__len__"}


def wrap_sequence(value):
    """A tracker, or a list of them (a slice), as a tracker."""
    return TupleVariable(value) if isinstance(value, list) else value


class NewObjectVariable(UserDefinedObjectVariable):
    """An instance of a plain class created inside the frame (a KV cache, a helper object).

    Tracing runs its ``__init__`` on this tracker: attribute assignments land in ``attrs``. Its
    ``value`` is an empty instance (``object.__new__(cls)``), only used to look class attributes
    up. After the graph it is rebuilt as ``object.__new__(cls)`` plus one assignment per
    attribute, which is the state ``__init__`` and the later assignments left, as PyTorch's
    Dynamo rebuilds such objects."""

    def __init__(self, cls, class_source=None):
        super().__init__(object.__new__(cls))
        self.attrs = {}
        self.type_source = class_source  # where the class was read from: its attributes are guarded there

    @classmethod
    def create(cls, tx, type_var, args, kwargs):
        klass = type_var.cls
        obj = cls(klass, type_var.source)
        if klass.__init__ is object.__init__:
            if args or kwargs:
                unsupported(f"{klass.__qualname__}() takes no arguments (TypeError)")
            return obj
        UserMethodVariable(klass.__init__, obj).call_function(tx, args, kwargs)
        return obj

    def var_getattr(self, tx, name):
        cls = type(self.value)
        if has_custom_getattribute(cls) and not is_method(cls, name) and name != "__dict__":
            getattribute = inspect.getattr_static(cls, "__getattribute__")
            return UserMethodVariable(getattribute, self).call_function(tx, [ConstantVariable(name)], {})
        return self.generic_getattr(tx, name)

    def generic_getattr(self, tx, name):
        """``object.__getattribute__``: the instance's own attributes, then the class's."""
        if name in self.attrs:
            return self.attrs[name]
        if name == "__dict__":
            return InstanceDictVariable(self, None)
        if name == "__reduce_ex__" and reduces_as_plain_object(type(self.value)):
            return GetAttrVariable(self, name)
        source = AttrSource(self.type_source, name) if self.type_source is not None else None
        return static_attribute(tx, self, self.value, name, source)

    def instance_dict(self, tx):
        return dict(self.attrs)

    def class_source(self):
        return self.type_source

    def store_attr(self, tx, name, value):
        """``obj.name = value``: through the class's ``__setattr__`` if it has one in Python
        (whose ``super().__setattr__`` comes back to ``slot_write``)."""
        setattr_method = inspect.getattr_static(type(self.value), "__setattr__")
        if isinstance(setattr_method, types.FunctionType):
            UserMethodVariable(setattr_method, self).call_function(tx, [ConstantVariable(name), value], {})
            return
        self.write_instance_dict(tx, name, value)

    def write_instance_dict(self, tx, name, value):
        if inspect.isdatadescriptor(inspect.getattr_static(type(self.value), name, None)):
            unsupported(f"assigning {type(self.value).__name__}.{name}, a property or descriptor")
        self.attrs[name] = value

    def slot_write(self, tx, slot, name, args):
        if name != "__setattr__" or len(args) != 2:
            unsupported(f"super().{name}() on a {type(self.value).__name__} made in the frame")
        self.write_instance_dict(tx, args[0].as_python_constant(), args[1])
        return ConstantVariable(None)

    def delete_attr(self, tx, name):
        if name not in self.attrs or inspect.getattr_static(type(self.value), "__delattr__") is not object.__delattr__:
            unsupported(f"deleting {type(self.value).__name__}.{name}, which the object does not have "
                        "or whose class has a __delattr__")
        del self.attrs[name]

    def python_object(self):
        unsupported(f"the identity of a {type(self.value).__name__} created inside the frame")

    def children(self):
        return list(self.attrs.values())

    def reconstruct(self, codegen):
        codegen.load_const(object.__new__, push_null=True)
        codegen.load_const(type(self.value))
        codegen.call(1)
        plain_writes = type(self.value).__setattr__ is object.__setattr__
        for name, value in self.attrs.items():  # its __dict__, as the trace left it
            if plain_writes:
                codegen.append("COPY", arg=1)
                codegen(value)
                codegen.append("SWAP", arg=2)
                codegen.append("STORE_ATTR", argval=name)
            else:  # object.__setattr__(obj, name, value), not the class's own
                codegen.load_const(object.__setattr__, push_null=True)
                codegen.append("COPY", arg=3)  # the object, below the callable and its NULL
                codegen.load_const(name)
                codegen(value)
                codegen.call(3)
                codegen.append("POP_TOP")

    def __repr__(self):
        return f"NewObjectVariable({type(self.value).__name__})"


class ExceptionVariable(VariableTracker):
    """An exception that the program raised at trace time and a ``try`` block caught
    (``except KeyError as e``)."""

    def __init__(self, error):
        super().__init__()
        self.error = error  # the TracedException, re-raised as it is by RERAISE
        self.exception = error.exception

    @staticmethod
    def create(cls, args, kwargs):
        """``ValueError("bad")`` in the frame, with constant arguments, about to be raised."""
        if kwargs or not all(a.is_python_constant() for a in args):
            unsupported(f"{cls.__name__}() of values that are not constants")
        return ExceptionVariable(TracedException(cls(*[a.as_python_constant() for a in args])))

    def python_type(self):
        return type(self.exception)

    def python_object(self):
        unsupported(f"the exception object {self.exception!r} outside its handler")

    def var_getattr(self, tx, name):
        if name == "args":
            return wrap_constant(self.exception.args)
        if name in ("__cause__", "__context__"):
            linked = getattr(self.exception, name)
            return ExceptionVariable(TracedException(linked)) if linked is not None else ConstantVariable(None)
        unsupported(f"attribute {name!r} of a caught {type(self.exception).__name__}")

    def __repr__(self):
        return f"ExceptionVariable({self.exception!r})"


class EnvironVariable(VariableTracker):
    """``os.environ``, read at trace time. Environment variables configure libraries when a
    program starts (``TRANSFORMERS_SDPA_FORCE_GQA``); a read is folded into the graph without a
    guard, so changing one after compiling does not recompile. Writes are Unsupported."""

    READS = ("get", "__getitem__", "__contains__")

    def python_type(self):
        return type(os.environ)

    def var_getattr(self, tx, name):
        if name not in self.READS:
            unsupported(f"os.environ.{name}")
        return GetAttrVariable(self, name)

    def call_method(self, tx, name, args, kwargs):
        if name not in self.READS or kwargs:
            unsupported(f"os.environ.{name} (only reads are traced)")
        return wrap_constant(fold(getattr(os.environ, name), *[a.as_python_constant() for a in args]))
