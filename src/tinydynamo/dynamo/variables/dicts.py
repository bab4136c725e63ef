"""ConstDictVariable: a dict whose keys are constants and whose values are trackers (chapter 3).

``{"logits": x @ w, "n": 3}``, or ``**kwargs``. As with lists, a dict built in the frame is
mutated in place, and a dict from the caller is also written back after the graph.
"""
import collections
import collections.abc
import enum
import types

from ..exc import raise_at_trace_time, unsupported
from ..guards import Guard
from .base import VariableTracker
from .constant import CONTAINER_TRACKERS, ConstantVariable, fold, is_constant_value, wrap_constant
from .lists import TupleVariable


def hashed_by_identity(value):
    """Classes, ``typing.Union``, plain objects: equal only to themselves."""
    return type(value).__eq__ is object.__eq__ and type(value).__hash__ is object.__hash__


def is_dict_key(value):
    """A key a traced dict can hold: a constant, an enum member, an object compared by identity
    (huggingface_hub's validators are keyed by ``list``, ``typing.Union``...), or a tuple of them
    (torch.distributions' KL registry is keyed by pairs of classes)."""
    if type(value) is tuple:
        return all(is_dict_key(v) for v in value)
    return is_constant_value(value) or isinstance(value, enum.Enum) or hashed_by_identity(value)


def key_tracker(tx, key):
    return wrap_constant(key) if is_constant_value(key) else tx.build(key)


class ConstDictVariable(VariableTracker):
    """A dict of constant keys. A dict from the caller builds the tracker of a value (and guards
    it) when the frame first reads that value: ``batch["x"]`` reads no file names of the batch,
    whose changes then recompile nothing, as in PyTorch's Dynamo (its lazy variable trackers)."""

    def __init__(self, items, source=None, dict_cls=dict, default_factory=None, unread=None):
        super().__init__(source)
        self._items = {**dict(items), **dict.fromkeys(unread or ())}  # constant key -> tracker (None: unread)
        self.unread = dict(unread or {})  # key -> a function that builds its value's tracker
        self.dict_cls = dict_cls  # dict, collections.OrderedDict or collections.defaultdict
        self.default_factory = default_factory  # a defaultdict's: a tracker, or None
        self.attrs = {}  # attributes set in the frame on an OrderedDict made there: name -> tracker

    @property
    def items(self):
        """constant key -> tracker, every value read."""
        for key in list(self.unread):
            self.value_of(key)
        return self._items

    def value_of(self, key):
        """The tracker of the value at ``key`` (a key it holds), read now if it was not yet."""
        if key in self.unread:
            self._items[key] = self.unread.pop(key)()
        return self._items[key]

    def values_read(self):
        """The trackers of the values read so far (a caller's dict rebuilds the others from its source)."""
        return [v for k, v in self._items.items() if k not in self.unread]

    def python_type(self):
        return self.dict_cls

    def as_python_constant(self):
        return {k: v.as_python_constant() for k, v in self.items.items()}

    def is_python_constant(self):  # asking must not specialise a symbolic size it holds
        return not self.unread and all(v.is_python_constant() for v in self._items.values())

    def python_object(self):
        unsupported(f"the identity of {self}")

    def unpack_var_sequence(self, tx):
        return [key_tracker(tx, k) for k in self._items]

    def truthy(self, tx):
        return bool(self._items)

    def key(self, tx, var):
        """The real key ``var`` stands for; an object compared by identity is guarded to stay the same."""
        if var.is_python_constant():
            return var.as_python_constant()
        value = var.python_object()
        if not hashed_by_identity(value):
            unsupported(f"a dict key that is not a constant: {var}")
        if var.source is not None:
            tx.output.add_guard(Guard(var.source, "ID_MATCH", value))
        return value

    def mutable(self, tx):
        """About to change: a dict from the caller is written back after the graph."""
        if self.source is not None:
            tx.output.side_effects.track_mutation(self)

    def call_method(self, tx, name, args, kwargs):
        handler = getattr(self, f"method_{name.strip('_')}", None)
        if handler is None:
            unsupported(f"dict.{name}")
        return handler(tx, *args, **kwargs)

    def method_getitem(self, tx, key):
        k = self.key(tx, key)
        if k not in self._items and self.default_factory is not None:  # a defaultdict's missing key
            self.mutable(tx)
            self._items[k] = self.default_factory.call_function(tx, [], {})
        if k not in self._items:
            raise_at_trace_time(KeyError(k))
        return self.value_of(k)

    def method_get(self, tx, key, default=None):
        k = self.key(tx, key)
        return self.value_of(k) if k in self._items else default or ConstantVariable(None)

    def method_contains(self, tx, key):
        return ConstantVariable(self.key(tx, key) in self._items)

    def method_len(self, tx):
        return ConstantVariable(len(self._items))

    def method_keys(self, tx):
        return DictViewVariable(self, "keys")

    def method_values(self, tx):
        return DictViewVariable(self, "values")

    def method_items(self, tx):
        return DictViewVariable(self, "items")

    def method_copy(self, tx):
        return ConstDictVariable(self.items, dict_cls=self.dict_cls, default_factory=self.default_factory)

    def method_setitem(self, tx, key, value):
        self.mutable(tx)
        self.items[self.key(tx, key)] = value
        return ConstantVariable(None)

    def method_update(self, tx, other=None, **kwargs):
        self.mutable(tx)
        if isinstance(other, ConstDictVariable):
            self.items.update(other.items)
        elif other is not None:  # an iterable of (key, value) pairs
            for pair in other.unpack_var_sequence(tx):
                key, value = pair.unpack_var_sequence(tx)
                self.items[self.key(tx, key)] = value
        self.items.update(kwargs)
        return ConstantVariable(None)

    def method_pop(self, tx, key, default=None):
        self.mutable(tx)
        k = self.key(tx, key)
        if k not in self.items and default is None:
            raise_at_trace_time(KeyError(k))
        return self.items.pop(k, default)

    def method_delitem(self, tx, key):
        self.method_pop(tx, key)
        return ConstantVariable(None)

    def method_clear(self, tx):
        self.mutable(tx)
        self.items.clear()
        return ConstantVariable(None)

    def method_popitem(self, tx, last=None):
        """The last item (or, for ``OrderedDict.popitem(last=False)``, the first)."""
        self.mutable(tx)
        if not self.items:
            raise_at_trace_time(KeyError("popitem(): dictionary is empty"))
        from_end = last is None or last.as_python_constant()
        key = next(reversed(self.items)) if from_end else next(iter(self.items))
        return TupleVariable([key_tracker(tx, key), self.items.pop(key)])

    def method_move_to_end(self, tx, key, last=None):
        """``OrderedDict.move_to_end``: the item goes last (or, with ``last=False``, first)."""
        if not issubclass(self.dict_cls, collections.OrderedDict):
            raise_at_trace_time(AttributeError(f"'{self.dict_cls.__name__}' object has no attribute 'move_to_end'"))
        self.mutable(tx)
        k = self.key(tx, key)
        if k not in self.items:
            raise_at_trace_time(KeyError(k))
        value = self.items.pop(k)
        rest = {} if last is None or last.as_python_constant() else dict(self.items)
        for moved in rest:
            del self.items[moved]
        self.items[k] = value
        self.items.update(rest)
        return ConstantVariable(None)

    def merged(self, tx, other):
        """``self | other``: a new dict of self's class."""
        if not isinstance(other, ConstDictVariable):
            unsupported(f"dict | {other}")
        return ConstDictVariable({**self.items, **other.items}, dict_cls=self.dict_cls,
                                 default_factory=self.default_factory)

    def method_setdefault(self, tx, key, default=None):
        self.mutable(tx)
        return self.items.setdefault(self.key(tx, key), default or ConstantVariable(None))

    def var_getattr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        return super().var_getattr(tx, name)

    def store_attr(self, tx, name, value):
        """``destination._metadata = OrderedDict()`` (``nn.Module.state_dict``): an attribute of
        an OrderedDict or defaultdict made in the frame (a plain dict has none), set again when the
        dict is rebuilt."""
        if self.source is not None or self.dict_cls is dict:
            unsupported(f"assigning attribute {name!r} of {self} (a side effect)")
        self.attrs[name] = value

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        self.reconstruct_items(codegen)
        for name, value in self.attrs.items():  # the dict stays on the stack: dict.name = value
            codegen.append("COPY", arg=1)
            codegen(value)
            codegen.append("SWAP", arg=2)
            codegen.append("STORE_ATTR", argval=name)

    def reconstruct_items(self, codegen):
        if self.dict_cls is not dict:  # OrderedDict({...}), defaultdict(factory, {...})
            codegen.load_const(self.dict_cls, push_null=True)
        if self.dict_cls is collections.defaultdict:
            codegen(self.default_factory or ConstantVariable(None))
        for k, v in self.items.items():
            codegen.load_const(k)
            codegen(v)
        codegen.append("BUILD_MAP", arg=len(self.items))
        if self.dict_cls is not dict:
            codegen.call(2 if self.dict_cls is collections.defaultdict else 1)

    def __repr__(self):
        return f"ConstDictVariable({self.items!r})"


def dict_from(tx, mapping, kwargs, dict_cls=dict):
    """``dict(mapping, **kwargs)`` (or an OrderedDict...): from a dict or from key-value pairs."""
    items = {}
    if isinstance(mapping, ConstDictVariable):
        items.update(mapping.items)
    elif mapping is not None and hasattr(mapping.python_type(), "keys"):  # a mapping, as Python: keys(), then items
        # collections.abc.Mapping's keys() is a view that iterates over the mapping itself
        keys = mapping if mapping.python_type().keys is collections.abc.Mapping.keys else \
            mapping.call_method(tx, "keys", [], {})
        for key in keys.unpack_var_sequence(tx):
            items[key.as_python_constant()] = mapping.call_method(tx, "__getitem__", [key], {})
    elif mapping is not None:
        for pair in mapping.unpack_var_sequence(tx):
            key, value = pair.unpack_var_sequence(tx)
            items[key.as_python_constant()] = value
    items.update(kwargs)
    return ConstDictVariable(items, dict_cls=dict_cls)


def is_plain_dict_subclass(cls):
    """``class Config(OrderedDict): pass``: a dict in all but its name."""
    own = set(vars(cls)) - {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                            "__firstlineno__", "__static_attributes__"}
    return cls.__bases__ in ((dict,), (collections.OrderedDict,)) and not own


def wrap_constant_dict(value):
    return ConstDictVariable({k: wrap_constant(v) for k, v in value.items()})


CONTAINER_TRACKERS[dict] = wrap_constant_dict
CONTAINER_TRACKERS[types.MappingProxyType] = wrap_constant_dict  # Signature.parameters


class DictViewVariable(VariableTracker):
    """``d.keys()``, ``d.values()``, ``d.items()``: a live view, as in Python. It reads the dict
    when it is used, so an assignment to ``d`` after the view was taken shows through it."""

    def __init__(self, dict_var, kind):
        super().__init__()
        self.dict_var = dict_var
        self.kind = kind  # "keys", "values" or "items"

    def python_type(self):
        return type(getattr({}, self.kind)())

    def python_object(self):
        unsupported(f"the identity of {self}")

    def unpack_var_sequence(self, tx):
        if self.kind == "keys":
            return [key_tracker(tx, k) for k in self.dict_var._items]
        items = self.dict_var.items
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_tracker(tx, k), v]) for k, v in items.items()]

    def as_python_constant(self):
        if self.kind == "keys":
            return dict.fromkeys(self.dict_var._items).keys()
        return getattr(self.dict_var.as_python_constant(), self.kind)()

    def truthy(self, tx):
        return bool(self.dict_var._items)

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return ConstantVariable(len(self.dict_var._items))
        if name == "__contains__" and self.kind == "keys":
            return ConstantVariable(self.dict_var.key(tx, args[0]) in self.dict_var._items)
        if name in ("__contains__", "isdisjoint", "__eq__", "__and__", "__or__", "__sub__") \
                and all(a.is_python_constant() for a in args):
            return wrap_constant(fold(getattr(self.as_python_constant(), name),
                                      *[a.as_python_constant() for a in args]))
        unsupported(f"dict_{self.kind}.{name}")

    def reconstruct(self, codegen):
        def load_method():
            codegen(self.dict_var)
            codegen.load_attr(self.kind)
        codegen.add_push_null(load_method)
        codegen.call(0)

    def __repr__(self):
        return f"DictViewVariable({self.kind} of {self.dict_var!r})"
