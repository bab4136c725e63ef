"""Smaller trackers: method wrappers, classes, Python modules, super(), plain objects (chapter 3).

- ``GetAttrVariable``: ``obj.method`` before it is called (``x.view``, ``xs.append``).
- ``TypeVariable``: a class (``torch.Tensor`` in ``isinstance``, a namedtuple class, ``MyConfig``).
- ``PythonModuleVariable``: a module object (``torch``, ``math``, ``F``, a user module).
- ``SuperVariable``: ``super()`` inside an inlined method.
- ``UserDefinedObjectVariable``: an instance of a user class that is not an nn.Module.
"""
import enum
import functools
import inspect
import sys
import types

from ..exc import unsupported
from ..guards import Guard
from ..source import AttrSource
from .base import VariableTracker
from .constant import fold


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


def static_attribute(tx, obj_var, value, name, source):
    """Look ``name`` up on an object the way Python would, without running user code.

    ``inspect.getattr_static`` finds the raw class or instance attribute; functions become bound
    methods, properties are inlined, everything else is wrapped as a value read from ``source``.
    """
    from .builder import VariableBuilder
    from .functions import UserFunctionVariable, UserMethodVariable

    try:
        attr = inspect.getattr_static(value, name)
    except AttributeError:
        unsupported(f"AttributeError at trace time: {type(value).__name__} has no attribute {name!r}")
    instance_dict = getattr(value, "__dict__", {})
    if name in instance_dict and not isinstance(inspect.getattr_static(type(value), name, None), property):
        return VariableBuilder(tx, source)(instance_dict[name])
    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(attr, obj_var)
    if isinstance(attr, property):
        return UserFunctionVariable(attr.fget).call_function(tx, [obj_var], {})
    if isinstance(attr, staticmethod):
        return UserFunctionVariable(attr.__func__)
    if isinstance(attr, classmethod):
        return UserMethodVariable(attr.__func__, TypeVariable(type(value)))
    if inspect.ismethoddescriptor(attr) or inspect.isdatadescriptor(attr):
        unsupported(f"the descriptor {type(value).__name__}.{name}")
    return VariableBuilder(tx, source)(attr)


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
        from .lists import TupleVariable
        from .torch import GradModeVariable, constant_constructor

        if self.cls in GradModeVariable.CLASSES:
            return GradModeVariable.create(tx, self.cls, args)
        if self.cls is functools.partial:
            from .functions import FunctoolsPartialVariable

            return FunctoolsPartialVariable(args[0], args[1:], kwargs)
        if issubclass(self.cls, tuple) and hasattr(self.cls, "_fields"):  # a namedtuple
            values = fold(inspect.signature(self.cls).bind, *args, **kwargs).arguments
            return TupleVariable(list(values.values()), tuple_cls=self.cls)
        if self.cls in constant_constructor.CLASSES:
            return constant_constructor(self.cls, args, kwargs)
        unsupported(f"creating an instance of {self.cls.__qualname__} inside the compiled frame")

    def var_getattr(self, tx, name):
        source = AttrSource(self.source, name) if self.source else None
        try:
            attr = inspect.getattr_static(self.cls, name)
        except AttributeError:
            unsupported(f"AttributeError at trace time: {self.cls.__qualname__} has no attribute {name!r}")
        from .builder import VariableBuilder
        from .functions import UserFunctionVariable, UserMethodVariable

        if isinstance(attr, staticmethod):
            return UserFunctionVariable(attr.__func__)
        if isinstance(attr, classmethod):
            return UserMethodVariable(attr.__func__, self)
        return VariableBuilder(tx, source)(getattr(self.cls, name))

    def __repr__(self):
        return f"TypeVariable({self.cls.__qualname__})"


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
        from .builder import VariableBuilder

        value = fold(getattr, self.module, name)
        trusted = is_trusted_module(self.module.__name__)
        source = None if trusted or self.source is None else AttrSource(self.source, name)
        if not trusted and source is None:
            unsupported(f"attribute {name!r} of module {self.module.__name__} (no source to guard it)")
        return VariableBuilder(tx, source)(value)

    def __repr__(self):
        return f"PythonModuleVariable({self.module.__name__})"


def is_trusted_module(name):
    """torch and the standard library: their attributes are not guarded."""
    root = name.split(".")[0]
    return root == "torch" or root in sys.stdlib_module_names


class SuperVariable(VariableTracker):
    """``super()`` / ``super(cls, obj)``: attribute lookup starts after ``cls`` in the MRO."""

    def __init__(self, cls, obj):
        super().__init__()
        self.cls = cls
        self.obj = obj

    def var_getattr(self, tx, name):
        from .functions import UserMethodVariable

        mro = self.obj.python_type().__mro__
        for klass in mro[mro.index(self.cls) + 1:]:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                if isinstance(attr, types.FunctionType):
                    return UserMethodVariable(attr, self.obj)
                unsupported(f"super().{name}, which is not a plain method")
        unsupported(f"AttributeError at trace time: super() has no attribute {name!r}")


class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class (a config object, a helper). Read-only while tracing."""

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_object(self):
        return self.value

    def python_type(self):
        return type(self.value)

    def var_getattr(self, tx, name):
        source = AttrSource(self.source, name) if self.source else None
        if isinstance(self.value, enum.Enum) and name in ("name", "value"):
            return self.enum_attribute(tx, name)
        if source is None and name in getattr(self.value, "__dict__", {}):
            unsupported(f"attribute {name!r} of a {type(self.value).__name__} with no source to guard it")
        return static_attribute(tx, self, self.value, name, source)

    def enum_attribute(self, tx, name):
        """``Color.RED.value``: fixed for a given member, so guard which member it is."""
        from .builder import VariableBuilder

        if self.source is not None:
            tx.output.add_guard(Guard(self.source, "ID_MATCH", self.value))
        return VariableBuilder(tx, None)(getattr(self.value, name))

    def call_function(self, tx, args, kwargs):
        from .functions import UserMethodVariable

        call = inspect.getattr_static(type(self.value), "__call__", None)
        if not isinstance(call, types.FunctionType):
            unsupported(f"calling a {type(self.value).__name__}")
        return UserMethodVariable(call, self).call_function(tx, args, kwargs)

    def truthy(self, tx):
        if hasattr(type(self.value), "__bool__") or hasattr(type(self.value), "__len__"):
            unsupported(f"truth value of a {type(self.value).__name__} (user-defined __bool__/__len__)")
        return True

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.value).__name__})"
