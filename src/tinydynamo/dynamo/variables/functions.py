"""User functions: inlined, never called (book chapter 3,
"Symbolic execution").

When the frame calls a Python function, Dynamo does not call it: it binds the arguments
(trackers) to the callee's parameters and runs the callee's bytecode in an
``InliningInstructionTranslator`` that appends to the same graph. So ``helper(x)`` and
``self.fc1(x)`` disappear into one graph.

- ``UserFunctionVariable``: a real function object (a global ``helper``, a method's function).
- ``UserMethodVariable``: a function plus the ``self`` it is bound to.
- ``NestedUserFunctionVariable``: a function created by MAKE_FUNCTION while tracing (a closure,
  a lambda, 3.11's list comprehensions); its defaults and cells are trackers.
- ``CellVariable``: one closure cell.

``static_attribute`` is Python's attribute lookup on an object (instance dict, then the class's
functions, properties, static and class methods), done without running user code.
"""
import dataclasses
import functools
import inspect
import types

from ..exc import raise_at_trace_time, unsupported
from ..source import AttrSource, ClosureCellSource, ClosureSource, GetItemSource
from .base import GetAttrVariable, VariableTracker
from .constant import ConstantVariable, fold, is_constant_value, wrap_constant
from .dicts import ConstDictVariable
from .lists import TupleVariable


class CellVariable(VariableTracker):
    """A closure cell: made while tracing (holds a tracker), or a real cell read on first use.
    A real cell has one tracker per trace (``existing``), so that the functions closing over it
    see each other's ``nonlocal`` writes."""

    def __init__(self, contents=None, real_cell=None, source=None):
        super().__init__(source)
        self.contents = contents
        self.real_cell = real_cell

    @classmethod
    def existing(cls, tx, real_cell, source):
        known = tx.output.cells_by_id.get(id(real_cell))
        if known is None:
            known = tx.output.cells_by_id[id(real_cell)] = cls(real_cell=real_cell, source=source)
        return known

    def get(self, tx):
        if self.contents is None and self.real_cell is not None:
            try:
                value = self.real_cell.cell_contents
            except ValueError:
                unsupported("reading a free variable before it is assigned")

            self.contents = tx.build(value, self.source)
        if self.contents is None:
            unsupported("reading a free variable before it is assigned")
        return self.contents

    def set(self, tx, value):
        """A ``nonlocal`` write; to a real cell, replayed after the graph (``cell.cell_contents = value``)."""
        if self.real_cell is not None:
            tx.output.side_effects.store_attr(self.cell_object(), "cell_contents", value)
        self.contents = value

    def cell_object(self):
        """The real cell itself, as the transformed code reaches it: a free variable of the frame
        (LOAD_CLOSURE), or an item of a function's ``__closure__``."""
        if isinstance(self.source, ClosureSource):
            return VariableTracker(ClosureCellSource(self.source.local_name))
        if isinstance(self.source, AttrSource) and self.source.member == "cell_contents":
            return VariableTracker(self.source.base)
        unsupported("assigning to a nonlocal variable of a function that the frame cannot reload")


class BaseUserFunctionVariable(VariableTracker):
    """Something whose call is inlined: subclasses give its code, globals, defaults and cells."""

    def call_function(self, tx, args, kwargs):
        return tx.inline_user_function(self, args, kwargs)

    def python_type(self):
        return types.FunctionType

    def bind_args(self, tx, args, kwargs):
        return bind_args(self.get_code(), self.fn_name(), args, kwargs,
                         self.get_defaults(tx), self.get_kwdefaults(tx))


class UserFunctionVariable(BaseUserFunctionVariable):
    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def python_object(self):
        return self.fn

    def get_code(self):
        return self.fn.__code__

    def get_globals(self):
        return self.fn.__globals__

    def fn_name(self):
        return self.fn.__qualname__

    def get_defaults(self, tx):
        return [wrap_default(tx, d, self.default_source("__defaults__", i))
                for i, d in enumerate(self.fn.__defaults__ or ())]

    def get_kwdefaults(self, tx):
        return {k: wrap_default(tx, d, self.default_source("__kwdefaults__", k))
                for k, d in (self.fn.__kwdefaults__ or {}).items()}

    def default_source(self, table, key):
        return GetItemSource(AttrSource(self.source, table), key) if self.source is not None else None

    def closure_cells(self, tx):
        cells = []
        for i, cell in enumerate(self.fn.__closure__ or ()):
            source = None
            if self.source is not None:
                source = AttrSource(GetItemSource(AttrSource(self.source, "__closure__"), i), "cell_contents")
            cells.append(CellVariable.existing(tx, cell, source))
        return cells

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__", "__module__", "__doc__", "__code__"):
            return ConstantVariable(getattr(self.fn, name))  # fixed for this (ID_MATCHed) function
        if self.source is not None and hasattr(self.fn, name):  # __defaults__, __wrapped__...
            return tx.build(getattr(self.fn, name), AttrSource(self.source, name))
        unsupported(f"attribute {name!r} of function {self.fn.__qualname__}")

    def bind(self, obj):
        """The function looked up on a class through an instance: a method bound to ``obj``."""
        return UserMethodVariable(self.fn, obj, self.source)

    def __repr__(self):
        return f"{type(self).__name__}({self.fn.__qualname__})"


class UserMethodVariable(UserFunctionVariable):
    """``obj.method``: calling it inlines ``method(obj, ...)``."""

    def __init__(self, fn, obj, source=None):
        super().__init__(fn, source)
        self.obj = obj

    def call_function(self, tx, args, kwargs):
        return tx.inline_user_function(self, [self.obj, *args], kwargs)

    def python_type(self):
        return types.MethodType

    def python_object(self):
        unsupported("the identity of a bound method")

    def reconstruct(self, codegen):
        """``types.MethodType(fn, obj)``: the very method, even one found through super()."""
        codegen.load_const(types.MethodType, push_null=True)
        codegen.load_const(self.fn)
        codegen(self.obj)
        codegen.call(2)


class NestedUserFunctionVariable(BaseUserFunctionVariable):
    """A function made by MAKE_FUNCTION during tracing."""

    def __init__(self, code, f_globals, defaults, kwdefaults, closure, annotations=None):
        super().__init__()
        self.code = code
        self.f_globals = f_globals
        self.defaults = defaults  # list of trackers
        self.kwdefaults = kwdefaults  # dict name -> tracker
        self.closure = closure  # list of CellVariable, in co_freevars order
        self.annotations = annotations  # the tuple (name, value, name, value...) that the bytecode built

    def var_getattr(self, tx, name):
        if name == "__name__":
            return ConstantVariable(self.code.co_name)
        if name == "__qualname__":
            return ConstantVariable(self.code.co_qualname)
        if name == "__annotations__":
            pairs = self.annotations.unpack_var_sequence(tx) if self.annotations is not None else []
            return ConstDictVariable({k.as_python_constant(): v for k, v in zip(pairs[::2], pairs[1::2])})
        unsupported(f"attribute {name!r} of a function made in the frame")

    def python_object(self):
        unsupported("the identity of a function created inside the compiled frame")

    def get_code(self):
        return self.code

    def get_globals(self):
        return self.f_globals

    def fn_name(self):
        return self.code.co_qualname

    def get_defaults(self, tx):
        return self.defaults

    def get_kwdefaults(self, tx):
        return self.kwdefaults

    def closure_cells(self, tx):
        return self.closure

    def reconstruct(self, codegen):
        """MAKE_FUNCTION again, at a graph break (chapter 5). Its cells must be free variables of
        the compiled frame (``codegen.load_closure`` finds them there), and it must share its globals."""
        if self.f_globals is not codegen.f_globals or not all(
                isinstance(cell.source, ClosureSource) for cell in self.closure):
            unsupported(f"rebuilding {self} in Python: it closes over cells made while tracing")
        flags = 0
        if self.defaults:
            for default in self.defaults:
                codegen(default)
            codegen.append("BUILD_TUPLE", arg=len(self.defaults))
            flags |= 0x01
        if self.kwdefaults:
            for name, default in self.kwdefaults.items():
                codegen.load_const(name)
                codegen(default)
            codegen.append("BUILD_MAP", arg=len(self.kwdefaults))
            flags |= 0x02
        if self.annotations is not None:
            codegen(self.annotations)
            flags |= 0x04
        if self.closure:
            for cell in self.closure:
                codegen.load_closure(cell.source.local_name)
            codegen.append("BUILD_TUPLE", arg=len(self.closure))
            flags |= 0x08
        codegen.load_const(self.code)
        codegen.make_function_with_flags(flags)

    def __repr__(self):
        return f"NestedUserFunctionVariable({self.code.co_qualname})"


class FunctoolsPartialVariable(VariableTracker):
    """``functools.partial(fn, *args, **keywords)``: calling it calls ``fn`` with them first."""

    def __init__(self, func, args, keywords, source=None):
        super().__init__(source)
        self.func = func
        self.args = args
        self.keywords = keywords

    def python_type(self):
        return functools.partial

    def call_function(self, tx, args, kwargs):
        return self.func.call_function(tx, [*self.args, *args], {**self.keywords, **kwargs})


class LruCacheVariable(VariableTracker):
    """A ``functools.lru_cache``-wrapped function. Called on constants, it is called for real
    now, and a constant result is folded in (what the cache would return: an lru_cache function
    is pure by contract); otherwise the function it wraps is traced."""

    def __init__(self, cached, wrapped):
        super().__init__()
        self.cached = cached
        self.wrapped = wrapped  # the tracker of cached.__wrapped__

    def python_object(self):
        return self.cached

    def call_function(self, tx, args, kwargs):
        if all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            result = fold(self.cached, *[a.as_python_constant() for a in args],
                          **{k: v.as_python_constant() for k, v in kwargs.items()})
            if is_constant_value(result):
                return wrap_constant(result)
        return self.wrapped.call_function(tx, args, kwargs)


def wrap_default(tx, value, source):
    """A default value: read from the function's ``__defaults__`` when the function has a source
    (a default that is an object, such as a registry, is then guarded like any input); constants
    need no source."""
    return tx.build(value, None if is_constant_value(value) else source)


def bind_args(code, fn_name, args, kwargs, defaults, kwdefaults):
    """Match call arguments to parameters the way CPython does: {parameter name: tracker}."""
    nargs, nkwonly = code.co_argcount, code.co_kwonlyargcount
    positional = code.co_varnames[:nargs]
    kwonly = code.co_varnames[nargs:nargs + nkwonly]
    rest = iter(code.co_varnames[nargs + nkwonly:])
    star_args = next(rest) if code.co_flags & inspect.CO_VARARGS else None
    star_kwargs = next(rest) if code.co_flags & inspect.CO_VARKEYWORDS else None

    bound = dict(zip(positional, args))
    extra = list(args[nargs:])
    if extra and star_args is None:
        unsupported(f"TypeError at trace time: {fn_name}() got {len(args)} positional arguments")
    extra_kwargs = {}
    for name, value in kwargs.items():
        if (name in positional[code.co_posonlyargcount:] or name in kwonly) and name not in bound:
            bound[name] = value
        elif star_kwargs is not None and name not in bound:
            extra_kwargs[name] = value
        else:
            unsupported(f"TypeError at trace time: {fn_name}() got an unexpected or repeated argument {name!r}")
    for name, default in zip(positional[nargs - len(defaults):], defaults):
        bound.setdefault(name, default)
    for name in kwonly:
        if name not in bound and name in kwdefaults:
            bound[name] = kwdefaults[name]
    missing = [n for n in positional + kwonly if n not in bound]
    if missing:
        unsupported(f"TypeError at trace time: {fn_name}() missing arguments {missing}")
    if star_args is not None:
        bound[star_args] = TupleVariable(extra)
    if star_kwargs is not None:
        bound[star_kwargs] = ConstDictVariable(extra_kwargs)
    return bound


def static_attribute(tx, obj_var, value, name, source):
    """Look ``name`` up on an object the way Python would, without running user code.

    ``inspect.getattr_static`` finds the raw class or instance attribute; functions become bound
    methods, properties are inlined, everything else is wrapped as a value read from ``source``.
    """
    if name == "__class__":  # read from ``obj.__class__``, so that its attributes are guarded there
        return tx.build(type(value), obj_var.class_source())
    try:
        attr = inspect.getattr_static(value, name)
    except AttributeError:
        getattr_hook = inspect.getattr_static(type(value), "__getattr__", None)
        if isinstance(getattr_hook, types.FunctionType):  # the class's fallback, traced
            return UserMethodVariable(getattr_hook, obj_var).call_function(tx, [ConstantVariable(name)], {})
        raise_at_trace_time(AttributeError(f"{type(value).__name__!r} object has no attribute {name!r}"))
    instance_dict = getattr(value, "__dict__", {})
    if name in instance_dict and not inspect.isdatadescriptor(inspect.getattr_static(type(value), name, None)):
        return tx.build(instance_dict[name], source)  # a data descriptor on the class comes first
    pending = tx.output.side_effects.pending_class_attr(type(value), name)
    if pending is not None:
        return pending  # ``Cls.name = value`` earlier in the trace
    on_class = class_attribute_source(obj_var, name)
    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(attr, obj_var, source=on_class)
    if isinstance(attr, property) and not isinstance(attr.fget, types.FunctionType):  # a C getter (pybind's)
        if source is None:
            unsupported(f"the C property {type(value).__name__}.{name} of an object with no source to guard it")
        return tx.build(fold(getattr, value, name), source)  # no user code
    if isinstance(attr, property):
        fget_source = AttrSource(on_class, "fget") if on_class is not None else None
        return UserFunctionVariable(attr.fget, fget_source).call_function(tx, [obj_var], {})
    if isinstance(attr, staticmethod):
        return UserFunctionVariable(attr.__func__)
    if isinstance(attr, classmethod):
        return UserMethodVariable(attr.__func__, tx.build(type(value)))
    if isinstance(attr, (types.MemberDescriptorType, types.GetSetDescriptorType)) and (
            source is not None or isinstance(value, dataclasses.Field)):  # a Field is fixed with its class
        return tx.build(fold(getattr, value, name), source)  # a slot or C field: no user code
    getter = inspect.getattr_static(type(attr), "__get__", None)
    if isinstance(getter, types.FunctionType):
        # a descriptor written in Python (torch.distributions' lazy_property): its __get__ traced
        descriptor = tx.build(attr, descriptor_source(obj_var, type(value), name))
        return UserMethodVariable(getter, descriptor).call_function(tx, [obj_var, tx.build(type(value))], {})
    if callable(attr) and not isinstance(attr, type) and obj_var.source is not None:
        return GetAttrVariable(obj_var, name)  # a C method, a cached function...: breaks when called
    if inspect.ismethoddescriptor(attr) or inspect.isdatadescriptor(attr):
        unsupported(f"the descriptor {type(value).__name__}.{name}")
    return tx.build(attr, source)


def descriptor_source(obj_var, cls, name):
    """Where the descriptor ``cls.name`` is read as it is, without running its ``__get__``:
    ``__dict__[name]`` of the class in ``cls``'s MRO that defines it."""
    class_source = obj_var.class_source()
    if class_source is None:
        return None
    position = next(i for i, k in enumerate(cls.__mro__) if name in vars(k))
    owner = class_source if position == 0 else GetItemSource(AttrSource(class_source, "__mro__"), position)
    return GetItemSource(AttrSource(owner, "__dict__"), name)


def class_attribute_source(obj_var, name):
    """Where a function defined on an object's class is found again: ``obj.__class__.name``
    (the sources of its closure cells and defaults hang from it)."""
    if obj_var.source is None:
        return None
    return AttrSource(AttrSource(obj_var.source, "__class__"), name)
