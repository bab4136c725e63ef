"""BuiltinVariable: ``len``, ``isinstance``, ``range``, operators... (book chapter 3).

Every operator the bytecode applies (BINARY_OP, COMPARE_OP, BINARY_SUBSCR...) is turned into a
call of the matching ``operator`` function on a BuiltinVariable, so there is one place that
decides what ``a + b`` means:

- if a tensor is involved, it is a graph node (``operator.add(x, y)``);
- if everything is constant, it is computed now (constant folding);
- containers have their own meaning (tuple + tuple, list * 2, ``x in d``).

The other builtins have a ``call_<name>`` method each. Builtins with side effects (``print``,
``open``...) are Unsupported.
"""
import collections
import functools
import inspect
import itertools
import math
import operator
import types
import warnings

import torch

from ..exc import Unsupported, raise_at_trace_time, unsupported
from ..guards import Guard
from .base import GetAttrVariable, NullVariable, VariableTracker, call_handler
from .constant import (ConstantVariable, FakeIdVariable, RangeVariable, SliceVariable, fold, is_constant_value, is_none,
                       wrap_constant)
from .dicts import ConstDictVariable, dict_from
from .functions import UserFunctionVariable, UserMethodVariable
from .lists import (BaseListVariable, CountIteratorVariable, CycleIteratorVariable, GroupByIteratorVariable,
                    IsliceIteratorVariable, ListIteratorVariable, ListVariable, MapIteratorVariable,
                    RepeatIteratorVariable, TupleVariable, ZipIteratorVariable, sorted_items)
from .misc import (DataClassVariable, ExceptionVariable, NewObjectVariable, SuperVariable, TypeVariable,
                   UserDefinedObjectVariable, has_plain_instances)
from .ndarray import NumpyNdarrayVariable, NumpyOp, numpy_op
from .sets import SetVariable
from .tensor import INPLACE_TO_BINARY, SymNodeVariable, TensorVariable, sym_operator, trace_op

BINARY_OPERATORS = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift,
    operator.rshift, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
    operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor, operator.ilshift,
    operator.irshift,
}
UNARY_OPERATORS = {operator.neg, operator.pos, operator.invert, operator.abs, abs}
# The methods a user's class defines an operator with: the left operand's, then the right one's.
DUNDER_METHODS = {
    operator.add: ("__add__", "__radd__"), operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"), operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__"), operator.mod: ("__mod__", "__rmod__"),
    operator.pow: ("__pow__", "__rpow__"), operator.matmul: ("__matmul__", "__rmatmul__"),
    operator.and_: ("__and__", "__rand__"), operator.or_: ("__or__", "__ror__"),
    operator.xor: ("__xor__", "__rxor__"), operator.lshift: ("__lshift__", "__rlshift__"),
    operator.rshift: ("__rshift__", "__rrshift__"), operator.lt: ("__lt__", "__gt__"),
    operator.le: ("__le__", "__ge__"), operator.gt: ("__gt__", "__lt__"), operator.ge: ("__ge__", "__le__"),
    operator.eq: ("__eq__", "__eq__"), operator.ne: ("__ne__", "__ne__"),
    operator.neg: ("__neg__", None), operator.pos: ("__pos__", None), operator.invert: ("__invert__", None),
    operator.abs: ("__abs__", None), abs: ("__abs__", None),
}
# Conversions of a symbolic size that stay symbolic: the function the graph node calls.
SYMBOLIC_CONVERSIONS = {int: math.trunc, float: torch.sym_float, math.floor: math.floor, math.ceil: math.ceil,
                        math.trunc: math.trunc, math.sqrt: torch._sym_sqrt}
# Builtins without side effects: called right away when all their arguments are constants.
PURE_BUILTINS = {
    abs, all, any, bin, bool, chr, complex, divmod, float, format, hash, hex, int, len, max, min, oct,
    ord, pow, repr, round, sorted, str, sum, tuple, list, dict, range, slice, isinstance, issubclass,
}
FOLDABLE_MODULES = ("math", "operator", "_operator", "cmath")
SIDE_EFFECT_BUILTINS = {print: "print() (a side effect)", open: "open()",
                        input: "input()",
                        globals: "globals()", locals: "locals()", exec: "exec()",
                        eval: "eval()"}


IMMUTABLE_TYPES = (str, bytes, int, float, complex, bool, tuple, frozenset)
BUILTIN_TYPES = (*IMMUTABLE_TYPES, list, set, dict)


def is_constant_method(fn):
    """A builtin method bound to an immutable constant (``keyword.iskeyword`` is
    ``frozenset(kwlist).__contains__``): pure on constants."""
    owner = getattr(fn, "__self__", None)
    return isinstance(fn, types.BuiltinMethodType) and type(owner) in IMMUTABLE_TYPES and is_constant_value(owner)


class UnboundMethodVariable(VariableTracker):
    """A method taken from a builtin class and called with the instance first:
    ``set.symmetric_difference(a, b)``, ``map(str.isalnum, names)``."""

    def __init__(self, cls, name):
        super().__init__()
        self.cls = cls
        self.name = name

    def call_function(self, tx, args, kwargs):
        if not args or not issubclass(args[0].python_type(), self.cls):
            unsupported(f"{self.cls.__name__}.{self.name} called without a {self.cls.__name__} first")
        return args[0].call_method(tx, self.name, args[1:], kwargs)

    def python_type(self):
        return type(getattr(self.cls, self.name))


def is_class_introspection(fn):
    """``cls.__subclasses__`` or ``cls.mro`` of a class: what it returns is read while tracing."""
    return isinstance(fn, types.BuiltinMethodType) and isinstance(fn.__self__, type) \
        and fn.__name__ in ("__subclasses__", "mro")


class BuiltinVariable(VariableTracker):
    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def as_python_constant(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def call_function(self, tx, args, kwargs):
        if self.fn in BINARY_OPERATORS or self.fn in UNARY_OPERATORS:
            return self.call_operator(tx, args)
        if self.fn in HANDLERS:
            handler = getattr(self, f"call_{self.fn.__name__}")
            return call_handler(handler, f"builtin {self.fn.__name__}()", tx, args, kwargs)
        if isinstance(self.fn, type) and issubclass(self.fn, BaseException):
            return ExceptionVariable.create(self.fn, args, kwargs)
        if self.fn is object.__new__ and len(args) == 1 and not kwargs:
            return self.call_object_new(tx, args[0])
        if self.fn is tuple.__new__ and len(args) == 2 and not kwargs:
            return self.call_tuple_new(tx, *args)
        if is_class_introspection(self.fn) and not args and not kwargs:
            return ListVariable([tx.build(cls) for cls in fold(self.fn)])  # einops: AbstractBackend.__subclasses__()
        if self.fn in (str, repr) and len(args) == 1 and isinstance(args[0], ExceptionVariable):
            return ConstantVariable(self.fn(args[0].exception))  # the message of a caught exception
        if self.fn is divmod and not kwargs and any(isinstance(a, SymNodeVariable) for a in args) and \
                all(a.is_python_constant() or isinstance(a, SymNodeVariable) for a in args):
            return TupleVariable([sym_operator(tx, operator.floordiv, args), sym_operator(tx, operator.mod, args)])
        if self.fn in SYMBOLIC_CONVERSIONS and len(args) == 1 and not kwargs and isinstance(args[0], SymNodeVariable):
            return self.call_symbolic_conversion(tx, args[0])
        if self.foldable(args, kwargs):
            return wrap_constant(fold(self.fn, *[a.as_python_constant() for a in args],
                                      **{k: v.as_python_constant() for k, v in kwargs.items()}))
        if self.fn in SIDE_EFFECT_BUILTINS:
            unsupported(SIDE_EFFECT_BUILTINS[self.fn])
        unsupported(f"builtin {getattr(self.fn, '__qualname__', self.fn)} with arguments {args}")

    def foldable(self, args, kwargs):
        """Pure, and every argument a constant or a symbolic size (which folding specialises:
        ``range(n)``, ``round(n / 3)`` need its value, and guard it)."""
        pure = self.fn in PURE_BUILTINS or getattr(self.fn, "__module__", None) in FOLDABLE_MODULES \
            or is_constant_method(self.fn)
        return pure and all(a.is_python_constant() or isinstance(a, SymNodeVariable)
                            for a in [*args, *kwargs.values()])

    def call_symbolic_conversion(self, tx, value):
        """``int(n)``, ``float(n)``, ``math.ceil(n / 2)``, ``math.sqrt(n)`` of a symbolic size: a
        graph node, the size kept symbolic (as torch.compile does). ``int()`` of a float truncates
        and the size expressions only floor, so it is guarded to be at least 0, where both agree."""
        if value.python_type() is int and self.fn in (int, math.floor, math.ceil, math.trunc):
            return value
        if self.fn in (int, math.trunc) and not bool(value.sym >= 0):
            return wrap_constant(self.fn(value.as_python_constant()))
        return sym_operator(tx, SYMBOLIC_CONVERSIONS[self.fn], [value])

    # --- operators ---------------------------------------------------------------------------

    def call_operator(self, tx, args):
        if any(isinstance(a, NumpyNdarrayVariable) for a in args):  # NumPy's operator, not torch's
            return numpy_op(tx, NumpyOp(self.fn, "operator"), args, {})
        if any(isinstance(a, TensorVariable) for a in args):
            return trace_op(tx, "call_function", self.fn, args, {})
        if any(isinstance(a, SymNodeVariable) for a in args) and \
                all(a.is_python_constant() or isinstance(a, SymNodeVariable) for a in args):
            return sym_operator(tx, self.fn, args)
        if len(args) == 2:
            result = sequence_operator(tx, self.fn, *args)
            if result is not None:
                return result
        if self.fn in INPLACE_TO_BINARY and is_mutable_container(args[0]):
            unsupported(f"operator {self.fn.__name__} on {args[0]} (it changes the container in place)")
        if all(a.is_python_constant() for a in args):  # after the in-place operators: `a += [2]` keeps a's identity
            return wrap_constant(fold(self.fn, *[a.as_python_constant() for a in args]))
        if len(args) == 2 and self.fn in (operator.eq, operator.ne) and all(compares_by_identity(a) for a in args):
            return ConstantVariable(is_same(tx, *args) == (self.fn is operator.eq))
        result = user_operator(tx, self.fn, args)
        if result is not None:
            return result
        if self.fn is operator.mod and isinstance(args[0], ConstantVariable) and isinstance(args[0].value, str):
            # "%s:%d" % (name, x.shape[-1]): formatted as an f-string is, a symbolic size specialised
            return ConstantVariable(fold(operator.mod, args[0].value, args[1].as_python_constant()))
        unsupported(f"operator {self.fn.__name__} on {args}")

    def call_getitem(self, tx, obj, index):
        return obj.call_method(tx, "__getitem__", [index], {})

    def call_setitem(self, tx, obj, index, value):
        return obj.call_method(tx, "__setitem__", [index, value], {})

    def call_delitem(self, tx, obj, index):
        return obj.call_method(tx, "__delitem__", [index], {})

    def call_contains(self, tx, container, item):
        if isinstance(container, TensorVariable):
            unsupported("`in` on a tensor (data-dependent)")
        if container.is_python_constant() and item.is_python_constant():
            return ConstantVariable(fold(operator.contains, container.as_python_constant(),
                                         item.as_python_constant()))
        return container.call_method(tx, "__contains__", [item], {})

    def call_not_(self, tx, value):
        return ConstantVariable(not value.truthy(tx))

    def call_truth(self, tx, value):
        return ConstantVariable(value.truthy(tx))

    def call_is_(self, tx, a, b):
        return ConstantVariable(is_same(tx, a, b))

    def call_is_not(self, tx, a, b):
        return ConstantVariable(not is_same(tx, a, b))

    # --- builtins ------------------------------------------------------------------------------

    def call_len(self, tx, obj):
        return obj.call_method(tx, "__len__", [], {})

    def call_isinstance(self, tx, obj, classes):
        cls = classes.as_python_constant()
        if isinstance(obj, SymNodeVariable):  # an int, whatever its value
            return ConstantVariable(issubclass(obj.python_type(), cls))
        try:
            return ConstantVariable(isinstance(obj.python_object(), cls))
        except Unsupported:
            return ConstantVariable(issubclass(obj.python_type(), cls))

    def call_getattr(self, tx, obj, name, default=None):
        if default is not None and not has_attr(tx, obj, name.as_python_constant()):
            return default
        return obj.var_getattr(tx, name.as_python_constant())

    def call_setattr(self, tx, obj, name, value):
        if not hasattr(obj, "store_attr"):
            unsupported(f"setattr() on {obj} (a side effect)")
        obj.store_attr(tx, name.as_python_constant(), value)
        return ConstantVariable(None)

    def call_warn(self, tx, message, category=None, stacklevel=None, source=None):
        """``warnings.warn(message, category, stacklevel)``: issued after the graph, as eager
        would have issued it, from the line that ``stacklevel`` names (a frame that the trace
        inlined) and with that module's registry, so the filters ("default", "once"...) see
        the same warning at the same place."""
        if isinstance(message, ExceptionVariable):  # warnings.warn(FutureWarning("..."))
            message, category = ConstantVariable(str(message.exception)), TypeVariable(type(message.exception))
        arguments = [message, category, stacklevel, source]
        if not all(a is None or a.is_python_constant() for a in arguments):
            unsupported("warnings.warn with arguments that are not constants")
        message, category, stacklevel, source = [a and a.as_python_constant() for a in arguments]
        frame = tx
        for _ in range((stacklevel or 1) - 1):
            frame = frame.parent
            if frame is None:
                unsupported("warnings.warn with a stacklevel that names a frame outside the compiled one")
        registry = frame.f_globals.setdefault("__warningregistry__", {})  # what warn() would use
        warn_explicit = functools.partial(warnings.warn_explicit, registry=registry,
                                          module_globals=frame.f_globals, source=source)
        location = [frame.code.co_filename, frame.current_instruction.positions.lineno or frame.code.co_firstlineno,
                    frame.f_globals.get("__name__", "<string>")]
        tx.output.side_effects.replay_call(warn_explicit, [tx.build(v) for v in
                                                           [message, category or UserWarning, *location]])
        return ConstantVariable(None)

    def call_delattr(self, tx, obj, name):
        if not hasattr(obj, "delete_attr"):
            unsupported(f"delattr() on {obj} (a side effect)")
        obj.delete_attr(tx, name.as_python_constant())
        return ConstantVariable(None)

    def call_hasattr(self, tx, obj, name):
        return ConstantVariable(has_attr(tx, obj, name.as_python_constant()))

    def call_id(self, tx, obj):
        """``id()`` of an object that the frame reads from outside (a config object, a module):
        a constant, under an ID_MATCH guard that it stays that object. An object that the frame
        makes has another id on every call: a FakeIdVariable, usable inside the frame only; so is
        the id of a value from outside that is not one object while tracing (``obj.__dict__``)."""
        if obj.source is not None:
            try:
                value = obj.python_object()
            except Unsupported:
                return FakeIdVariable(id(obj))
            tx.output.add_guard(Guard(obj.source, "ID_MATCH", value))
            return ConstantVariable(id(value))
        return FakeIdVariable(id(obj))

    def call_object_new(self, tx, cls_var):
        """``object.__new__(cls)`` (``copyreg.__newobj__``, as ``copy`` makes a copy): an empty
        instance, its ``__init__`` not run."""
        cls = cls_var.as_python_constant()
        if not has_plain_instances(cls):
            unsupported(f"object.__new__({cls.__qualname__}): not a plain Python class")
        return NewObjectVariable(cls, cls_var.source)

    def call_tuple_new(self, tx, cls_var, iterable):
        """``tuple.__new__(cls, iterable)``: how a namedtuple's ``_make`` (and so ``_replace``)
        builds its result."""
        cls = cls_var.as_python_constant()
        if not (cls is tuple or (issubclass(cls, tuple) and hasattr(cls, "_fields"))):
            unsupported(f"tuple.__new__({cls.__qualname__}): not a namedtuple")
        return TupleVariable(iterable.unpack_var_sequence(tx), tuple_cls=cls)

    def call_vars(self, tx, obj=None):
        """``vars(obj)``: ``obj.__dict__``; ``vars()`` is the frame's locals."""
        if obj is None:
            unsupported("vars() without an argument (the frame's locals)")
        return obj.var_getattr(tx, "__dict__")

    def call_callable(self, tx, obj):
        if isinstance(obj, SymNodeVariable):
            return ConstantVariable(False)
        try:
            return ConstantVariable(callable(obj.python_object()))
        except Unsupported:  # an instance is callable when its class defines __call__ (a tensor is not)
            return ConstantVariable(any("__call__" in vars(cls) for cls in obj.python_type().__mro__))

    def call_type(self, tx, obj):
        cls = obj.python_type()
        if cls in HANDLERS or cls in PURE_BUILTINS:  # type(xs)(...) builds a list, as list(...) does
            return BuiltinVariable(cls)
        return TypeVariable(cls, obj.class_source())  # ``type(obj).attr`` is guarded there

    def call_range(self, tx, *args):
        return RangeVariable(fold(range, *[a.as_python_constant() for a in args]))

    def call_slice(self, tx, *args):
        return SliceVariable(fold(slice, *[a.as_python_constant() for a in args]))

    def call_iter(self, tx, obj):
        if isinstance(obj, ListIteratorVariable):
            return obj
        if isinstance(obj, ListVariable):
            return ListIteratorVariable(obj.items, live=True)
        return ListIteratorVariable(obj.unpack_var_sequence(tx))

    def call_next(self, tx, iterator, default=None):
        if not isinstance(iterator, ListIteratorVariable):
            unsupported(f"next() of {iterator}")
        item = iterator.next_item()
        if item is None and default is None:
            raise_at_trace_time(StopIteration())  # a `try` around it may catch it
        return item if item is not None else default

    def call_enumerate(self, tx, seq, start=None):
        first = start.as_python_constant() if start is not None else 0
        return ZipIteratorVariable([self.call_iter(tx, seq)], start=first)

    def call_zip(self, tx, *seqs, strict=None):
        strict = strict is not None and strict.as_python_constant()
        return ZipIteratorVariable([self.call_iter(tx, s) for s in seqs], strict=strict)

    def call_reversed(self, tx, seq):
        return ListIteratorVariable(reversed(seq.unpack_var_sequence(tx)))

    def call_map(self, tx, fn, *seqs):
        return MapIteratorVariable(tx, fn, [self.call_iter(tx, s) for s in seqs])

    def call_filter(self, tx, fn, seq):
        keep = []
        for item in seq.unpack_var_sequence(tx):
            test = item if isinstance(fn, ConstantVariable) else fn.call_function(tx, [item], {})
            if test.truthy(tx):
                keep.append(item)
        return ListIteratorVariable(keep)

    def call_tuple(self, tx, seq=None):
        return TupleVariable(seq.unpack_var_sequence(tx) if seq is not None else [])

    def call_list(self, tx, seq=None):
        return ListVariable(seq.unpack_var_sequence(tx) if seq is not None else [])

    def call_dict(self, tx, mapping=None, **kwargs):
        return dict_from(tx, mapping, kwargs)

    def call_sorted(self, tx, seq, key=None, reverse=None):
        return ListVariable(sorted_items(tx, seq.unpack_var_sequence(tx), key, reverse))

    def call_combinations(self, tx, seq, r):
        """itertools.combinations (and permutations below) of the items, as tuples of trackers."""
        rows = itertools.combinations(seq.unpack_var_sequence(tx), r.as_python_constant())
        return ListIteratorVariable(TupleVariable(list(row)) for row in rows)

    def call_permutations(self, tx, seq, r=None):
        length = None if r is None else r.as_python_constant()
        rows = itertools.permutations(seq.unpack_var_sequence(tx), length)
        return ListIteratorVariable(TupleVariable(list(row)) for row in rows)

    def call_zip_longest(self, tx, *seqs, fillvalue=None):
        fill = fillvalue if fillvalue is not None else ConstantVariable(None)
        columns = [s.unpack_var_sequence(tx) for s in seqs]
        return ListIteratorVariable(TupleVariable(list(row))
                                    for row in itertools.zip_longest(*columns, fillvalue=fill))

    def call_accumulate(self, tx, seq, func=None, *, initial=None):
        """itertools.accumulate: the running totals, each step traced like any call of ``func``."""
        step = func if func is not None else BuiltinVariable(operator.add)
        totals = [] if initial is None else [initial]
        for item in seq.unpack_var_sequence(tx):
            totals.append(item if not totals else step.call_function(tx, [totals[-1], item], {}))
        return ListIteratorVariable(totals)

    def call_pairwise(self, tx, seq):
        items = seq.unpack_var_sequence(tx)
        return ListIteratorVariable(TupleVariable([a, b]) for a, b in zip(items, items[1:]))

    def call_starmap(self, tx, fn, seq):
        return ListIteratorVariable([fn.call_function(tx, row.unpack_var_sequence(tx), {})
                                     for row in seq.unpack_var_sequence(tx)])

    def call_takewhile(self, tx, predicate, seq):
        items = seq.unpack_var_sequence(tx)
        taken = next((i for i, item in enumerate(items) if not predicate.call_function(tx, [item], {}).truthy(tx)),
                     len(items))
        return ListIteratorVariable(items[:taken])

    def call_dropwhile(self, tx, predicate, seq):
        items = seq.unpack_var_sequence(tx)
        dropped = next((i for i, item in enumerate(items) if not predicate.call_function(tx, [item], {}).truthy(tx)),
                       len(items))
        return ListIteratorVariable(items[dropped:])

    def call_filterfalse(self, tx, predicate, seq):
        items = seq.unpack_var_sequence(tx)
        if predicate.is_python_constant() and predicate.as_python_constant() is None:
            return ListIteratorVariable(item for item in items if not item.truthy(tx))
        return ListIteratorVariable(item for item in items if not predicate.call_function(tx, [item], {}).truthy(tx))

    def call_repeat(self, tx, item, times=None):
        if times is None:
            return RepeatIteratorVariable(item)
        return ListIteratorVariable([item] * times.as_python_constant())

    def call_count(self, tx, start=None, step=None):
        start, step = (ConstantVariable(default) if v is None else v for v, default in ((start, 0), (step, 1)))
        if not (start.is_python_constant() and step.is_python_constant()):
            unsupported(f"itertools.count({start}, {step}) that does not count in constants")
        return CountIteratorVariable(start.as_python_constant(), step.as_python_constant())

    def call_cycle(self, tx, seq):
        return CycleIteratorVariable(self.call_iter(tx, seq))

    def call_groupby(self, tx, seq, key=None):
        return GroupByIteratorVariable(tx, self.call_iter(tx, seq), None if key is None or is_none(key) else key)

    def call_itemgetter(self, tx, *keys):
        return OperatorGetterVariable(operator.itemgetter, [k.as_python_constant() for k in keys])

    def call_attrgetter(self, tx, *names):
        return OperatorGetterVariable(operator.attrgetter, [n.as_python_constant() for n in names])

    def call_islice(self, tx, seq, *bounds):
        """Lazy, as ``itertools.islice(count(), 3)`` needs; its arguments are checked by slicing
        an empty list the same way."""
        bounds = [b.as_python_constant() for b in bounds]
        fold(itertools.islice, [], *bounds)
        bounds = slice(*bounds)
        return IsliceIteratorVariable(self.call_iter(tx, seq), bounds.start or 0, bounds.stop, bounds.step or 1)

    def call_method(self, tx, name, args, kwargs):
        """``dict.fromkeys`` / ``OrderedDict.fromkeys`` and ``itertools.chain.from_iterable``."""
        if name == "fromkeys" and self.fn in DICT_CLASSES:
            value = (args[1:] or list(kwargs.values()) or [ConstantVariable(None)])[0]
            keys = [k.as_python_constant() for k in args[0].unpack_var_sequence(tx)]
            return ConstDictVariable(dict.fromkeys(keys, value), dict_cls=self.fn)
        if name == "from_iterable" and self.fn is itertools.chain:
            return self.call_chain(tx, *args[0].unpack_var_sequence(tx))
        if name == "__getitem__" and isinstance(self.fn, type) and args[0].is_python_constant():
            return wrap_constant(fold(operator.getitem, self.fn, args[0].as_python_constant()))  # list[int]
        return super().call_method(tx, name, args, kwargs)

    def var_getattr(self, tx, name):
        if (name == "fromkeys" and self.fn in DICT_CLASSES) or (
                name == "from_iterable" and self.fn is itertools.chain) or (
                name == "__getitem__" and isinstance(self.fn, type)):
            return GetAttrVariable(self, name)
        if name in ("__name__", "__qualname__", "__module__"):
            return wrap_constant(getattr(self.fn, name, None))
        if self.fn in BUILTIN_TYPES and isinstance(inspect.getattr_static(self.fn, name, None),
                                                   (types.MethodDescriptorType, types.WrapperDescriptorType)):
            return UnboundMethodVariable(self.fn, name)
        return super().var_getattr(tx, name)

    def call_defaultdict(self, tx, default_factory=None, mapping=None, **kwargs):
        result = dict_from(tx, mapping, kwargs, collections.defaultdict)
        no_factory = default_factory is None or (
            default_factory.is_python_constant() and default_factory.as_python_constant() is None)
        result.default_factory = None if no_factory else default_factory
        return result

    def call_OrderedDict(self, tx, mapping=None, **kwargs):
        return dict_from(tx, mapping, kwargs, collections.OrderedDict)

    def call_set(self, tx, seq=None):
        return SetVariable(seq.unpack_var_sequence(tx) if seq is not None else [])

    def call_frozenset(self, tx, seq=None):
        return SetVariable(seq.unpack_var_sequence(tx) if seq is not None else [], frozen=True)

    def call_bool(self, tx, value=None):
        return ConstantVariable(False if value is None else value.truthy(tx))

    def call_product(self, tx, *seqs, repeat=None):
        """itertools.product over sequences the translator can unpack."""
        pools = [s.unpack_var_sequence(tx) for s in seqs] * (repeat.as_python_constant() if repeat else 1)
        return ListIteratorVariable(TupleVariable(list(row)) for row in itertools.product(*pools))

    def call_chain(self, tx, *seqs):
        """itertools.chain."""
        return ListIteratorVariable(item for seq in seqs for item in seq.unpack_var_sequence(tx))

    def call_reduce(self, tx, fn, seq, initial=None):
        """functools.reduce: fn applied left to right, traced like any call."""
        items = seq.unpack_var_sequence(tx)
        if initial is None and not items:
            unsupported("functools.reduce() of an empty sequence with no initial value (TypeError)")
        total, rest = (initial, items) if initial is not None else (items[0], items[1:])
        for item in rest:
            total = fn.call_function(tx, [total, item], {})
        return total

    def call_sum(self, tx, seq, start=None):
        total = start if start is not None else ConstantVariable(0)
        for item in seq.unpack_var_sequence(tx):
            total = BuiltinVariable(operator.add).call_function(tx, [total, item], {})
        return total

    def call_min(self, tx, *args, key=None, default=None):
        return self.min_max(tx, min, args, key, default)

    def call_max(self, tx, *args, key=None, default=None):
        return self.min_max(tx, max, args, key, default)

    def min_max(self, tx, fn, args, key=None, default=None):
        items = args[0].unpack_var_sequence(tx) if len(args) == 1 else list(args)
        if not items and default is not None:
            return default
        if key is not None:  # the first item whose traced key is the least (or greatest)
            keys = [key.call_function(tx, [item], {}) for item in items]
            if not all(k.is_python_constant() for k in keys):
                unsupported(f"{fn.__name__}() by keys that are not constants (tensors compare by value)")
            return items[fold(fn, range(len(items)), key=lambda i: keys[i].as_python_constant())]
        if any(isinstance(i, TensorVariable) for i in items):
            return self.tensor_min_max(tx, fn, items)
        if any(isinstance(i, SymNodeVariable) for i in items) and all(i.python_type() is int for i in items):
            symbolic = torch.sym_max if fn is max else torch.sym_min  # no comparison: the size stays symbolic
            return functools.reduce(lambda a, b: sym_operator(tx, symbolic, [a, b]), items)
        return wrap_constant(fold(fn, [i.as_python_constant() for i in items]))

    def tensor_min_max(self, tx, fn, items):
        """``max(a, b)`` with one-element tensors, as torch._dynamo records it: ``torch.maximum``
        of two tensors, ``torch.clamp`` of a tensor and a number (always a tensor, where Python
        would return whichever object wins)."""
        if len(items) != 2 or any(isinstance(i, TensorVariable) and i.example_value.numel() != 1 for i in items):
            unsupported(f"{fn.__name__}() of tensors (it compares values: data-dependent)")
        a, b = items if isinstance(items[0], TensorVariable) else items[::-1]
        if isinstance(b, TensorVariable):
            return trace_op(tx, "call_function", torch.maximum if fn is max else torch.minimum, [a, b], {})
        if not isinstance(b.as_python_constant(), (int, float)):
            unsupported(f"{fn.__name__}() of a tensor and {b}")
        bound = "min" if fn is max else "max"
        return trace_op(tx, "call_function", torch.clamp, [a], {bound: b})

    def call_all(self, tx, seq):
        return ConstantVariable(all(i.truthy(tx) for i in seq.unpack_var_sequence(tx)))

    def call_any(self, tx, seq):
        return ConstantVariable(any(i.truthy(tx) for i in seq.unpack_var_sequence(tx)))

    def call_namedtuple(self, tx, typename, field_names, **kwargs):
        """``collections.namedtuple(...)`` inside the frame: the class, made while tracing (its code
        runs ``exec``). Eager makes a new class at each call; compiled code reuses this one."""
        if not all(v.is_python_constant() for v in (typename, field_names, *kwargs.values())):
            unsupported("collections.namedtuple with arguments that are not constants")
        return tx.build(fold(collections.namedtuple, typename.as_python_constant(), field_names.as_python_constant(),
                             **{k: v.as_python_constant() for k, v in kwargs.items()}))

    def call_signature(self, tx, fn):
        """inspect.signature of a function known at trace time: a constant (a method's
        signature drops its first parameter, as a bound method's does)."""
        if isinstance(fn, UserMethodVariable):
            signature = fold(inspect.signature, fn.fn)
            return ConstantVariable(signature.replace(parameters=list(signature.parameters.values())[1:]))
        if isinstance(fn, UserFunctionVariable):
            return ConstantVariable(fold(inspect.signature, fn.fn))
        return ConstantVariable(fold(inspect.signature, fn.python_object()))

    def call_super(self, tx, *args):
        if not args:
            return tx.zero_arg_super()
        return SuperVariable(args[0].as_python_constant(), args[1])

    def __repr__(self):
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"


# The builtins and operators with a ``call_<name>`` method above.
HANDLERS = {
    len, isinstance, getattr, hasattr, setattr, delattr, callable, type, range, slice, iter, next, enumerate, zip,
    reversed, map, filter, tuple, list, dict, set, frozenset, bool, sum, min, max, all, any, super,
    operator.getitem, operator.setitem, operator.delitem, operator.contains, operator.not_,
    operator.truth, operator.is_, operator.is_not, itertools.product, itertools.chain, functools.reduce,
    inspect.signature, sorted, itertools.combinations, itertools.permutations, itertools.zip_longest,
    itertools.islice, collections.OrderedDict, collections.defaultdict, itertools.accumulate,
    itertools.pairwise, itertools.starmap, itertools.takewhile, itertools.dropwhile, itertools.filterfalse,
    itertools.repeat, operator.itemgetter, operator.attrgetter, id, itertools.count, itertools.cycle,
    itertools.groupby, vars, warnings.warn, collections.namedtuple,
}
DICT_CLASSES = (dict, collections.OrderedDict, collections.defaultdict)


SET_UPDATES = {operator.ior: "update", operator.iand: "intersection_update", operator.isub: "difference_update",
               operator.ixor: "symmetric_difference_update"}


def is_mutable_container(var):
    return isinstance(var, (ListVariable, ConstDictVariable)) or (isinstance(var, SetVariable) and not var.frozen)


def sequence_operator(tx, fn, a, b):
    """``+``, ``*``, ``+=`` and ``*=`` on tuples and lists, ``|`` and ``|=`` on dicts, ``|=`` and the
    like on sets; None if they do not apply. The in-place forms change the list, dict or set itself,
    which other names may hold too."""
    if fn is operator.iadd and isinstance(a, ListVariable):  # list += any iterable: list.extend
        a.method_extend(tx, b)
        return a
    if fn in (operator.add, operator.iadd) and isinstance(a, BaseListVariable) \
            and isinstance(b, BaseListVariable) and a.python_cls is b.python_cls:
        size = b if b.python_type() is torch.Size else a  # a torch.Size on either side makes one
        return size.rebuilt(a.items + b.items)
    if fn is operator.imul and type(a) is ListVariable and b.is_python_constant():
        a.mutable(tx)
        a.items[:] = a.items * b.as_python_constant()
        return a
    if fn in (operator.mul, operator.imul) and isinstance(a, BaseListVariable) and b.is_python_constant():
        return a.rebuilt(a.items * b.as_python_constant())
    if fn is operator.mul and isinstance(b, BaseListVariable) and a.is_python_constant():  # 4 * [x]
        return b.rebuilt(b.items * a.as_python_constant())
    if fn is operator.or_ and isinstance(a, ConstDictVariable):  # dict merge
        return a.merged(tx, b)
    if fn is operator.ior and isinstance(a, ConstDictVariable):
        a.method_update(tx, b)
        return a
    if fn in SET_UPDATES and isinstance(a, SetVariable) and not a.frozen and isinstance(b, SetVariable):
        a.call_method(tx, SET_UPDATES[fn], [b], {})
        return a
    if fn in (operator.eq, operator.ne) and isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable):
        return sequence_equality(tx, fn, a, b)
    return None


def sequence_equality(tx, fn, a, b):
    """``x.shape == (n, 4)`` with symbolic sizes: item by item, each comparison guarded as a
    branch on it is (a tuple never equals a list; a torch.Size is a tuple)."""
    items = [*a.items, *b.items]
    if not all(i.is_python_constant() or isinstance(i, SymNodeVariable) for i in items):
        return None
    same = issubclass(a.python_type(), tuple) == issubclass(b.python_type(), tuple) and len(a.items) == len(b.items) \
        and all(BuiltinVariable(operator.eq).call_function(tx, [x, y], {}).as_python_constant()
                for x, y in zip(a.items, b.items))
    return ConstantVariable(same == (fn is operator.eq))


class OperatorGetterVariable(VariableTracker):
    """``operator.itemgetter(1)`` or ``operator.attrgetter("a.b")`` made in the frame: constant
    keys; calling it traces the item or attribute reads."""

    def __init__(self, getter_cls, keys):
        super().__init__()
        self.getter_cls = getter_cls
        self.keys = keys

    def python_type(self):
        return self.getter_cls

    def as_python_constant(self):
        return self.getter_cls(*self.keys)

    def call_function(self, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            unsupported(f"calling {self.as_python_constant()!r} with {len(args)} arguments (TypeError)")
        values = [self.read(tx, args[0], key) for key in self.keys]
        return values[0] if len(values) == 1 else TupleVariable(values)

    def read(self, tx, obj, key):
        if self.getter_cls is operator.itemgetter:
            return BuiltinVariable(operator.getitem).call_function(tx, [obj, wrap_constant(key)], {})
        for name in key.split("."):
            obj = obj.var_getattr(tx, name)
        return obj


def user_operator(tx, fn, args):
    """``a + b`` (or ``-a``, ``a < b``, ``a += b``...) where an operand is an object of a user's
    class that defines the operator in Python: the method is traced, the left operand's first,
    then, if it is missing or returns NotImplemented, the right operand's reflected one. None if
    neither applies."""
    if fn in INPLACE_TO_BINARY:
        result = call_dunder(tx, args[0], f"__{fn.__name__}__", args[1:])
        if result is not None:
            return result
        fn = INPLACE_TO_BINARY[fn]
    if fn not in DUNDER_METHODS:
        return None
    name, reflected = DUNDER_METHODS[fn]
    result = call_dunder(tx, args[0], name, args[1:])
    if result is None and reflected is not None:
        result = call_dunder(tx, args[1], reflected, args[:1])
    if result is None and fn is operator.ne:  # object.__ne__ negates __eq__
        equal = user_operator(tx, operator.eq, args)
        result = None if equal is None else BuiltinVariable(operator.not_).call_function(tx, [equal], {})
    return result


def call_dunder(tx, obj, name, args):
    """``obj.name(*args)`` traced, if obj's class defines ``name`` as a Python function; None if
    it does not, or if the method returns NotImplemented."""
    if not isinstance(obj, (UserDefinedObjectVariable, DataClassVariable)):
        return None
    if not isinstance(inspect.getattr_static(obj.python_type(), name, None), types.FunctionType):
        return None
    result = obj.var_getattr(tx, name).call_function(tx, args, {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    return result


def is_same(tx, a, b):
    """``a is b`` for trackers: one tracker per object, or the same real object. The answer
    about a plain object from the frame's inputs is only valid for that object: ID_MATCH it."""
    if a is b:
        return True
    if isinstance(a, NullVariable) or isinstance(b, NullVariable):
        return False
    if isinstance(a, ExceptionVariable) and isinstance(b, ExceptionVariable):  # caught: a tracker of its own
        return a.exception is b.exception
    if all(isinstance(v, (BaseListVariable, ConstDictVariable)) and v.source is not None for v in (a, b)):
        # two lists or dicts from the caller, distinct objects now (else they would be one
        # tracker: see VariableBuilder.same_object): they must stay distinct
        tx.output.add_guard(Guard(a.source, "NO_ALIASING", (a.source, b.source)))
        return False
    try:
        same = a.python_object() is b.python_object()
    except Unsupported:
        return False
    for var in (a, b):
        if isinstance(var, UserDefinedObjectVariable) and var.source is not None:
            tx.output.add_guard(Guard(var.source, "ID_MATCH", var.value))
    return same


def compares_by_identity(var):
    """Objects without their own ``__eq__`` (modules, functions, enum members...): == is ``is``."""
    try:
        return var.python_type().__eq__ is object.__eq__
    except Unsupported:
        return False


def instances_see(cls, name):
    """Whether an instance of ``cls`` finds ``name`` in its class: in the __dict__ of a class of its
    MRO (``__name__`` of a class is the metaclass's, which instances do not see)."""
    return any(name in vars(klass) for klass in cls.__mro__)


def has_attr(tx, obj, name):
    """hasattr(obj, name) now; guarded, since an attribute may be added or deleted later."""
    if isinstance(obj, TensorVariable):
        return hasattr(obj.example_value, name)
    made_in_frame = isinstance(obj, (NewObjectVariable, DataClassVariable)) or \
        (isinstance(obj, ConstDictVariable) and obj.source is None)
    if made_in_frame:  # its own attributes too
        return name in obj.attrs or instances_see(obj.python_type(), name)
    try:
        present = hasattr(obj.python_object(), name)
    except Unsupported:
        return instances_see(obj.python_type(), name)
    if obj.source is not None:
        tx.output.add_guard(Guard(obj.source, "HASATTR", (name, present)))
    return present
