"""ConstDictVariable: a dict whose keys are constants and whose values are trackers (chapter 3).

``{"logits": x @ w, "n": 3}``, or ``**kwargs``. As with lists, a dict built in the frame is
mutated in place and a dict from the caller is read-only.
"""
from ..exc import unsupported
from .base import VariableTracker
from .constant import ConstantVariable, wrap_constant
from .lists import ListVariable, TupleVariable


class ConstDictVariable(VariableTracker):
    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = dict(items)  # constant key -> tracker

    def python_type(self):
        return dict

    def as_python_constant(self):
        return {k: v.as_python_constant() for k, v in self.items.items()}

    def python_object(self):
        unsupported(f"the identity of {self}")

    def unpack_var_sequence(self, tx):
        return [wrap_constant(k) for k in self.items]

    def truthy(self, tx):
        return bool(self.items)

    def key(self, var):
        if not var.is_python_constant():
            unsupported(f"a dict key that is not a constant: {var}")
        return var.as_python_constant()

    def mutable(self, what):
        if self.source is not None:
            unsupported(f"mutating the dict {self.source.name()} that came from the caller ({what})")

    def call_method(self, tx, name, args, kwargs):
        handler = getattr(self, f"method_{name.strip('_')}", None)
        if handler is None:
            unsupported(f"dict.{name}")
        return handler(tx, *args, **kwargs)

    def method_getitem(self, tx, key):
        k = self.key(key)
        if k not in self.items:
            unsupported(f"KeyError: {k!r} at trace time")
        return self.items[k]

    def method_get(self, tx, key, default=None):
        return self.items.get(self.key(key), default or ConstantVariable(None))

    def method_contains(self, tx, key):
        return ConstantVariable(self.key(key) in self.items)

    def method_len(self, tx):
        return ConstantVariable(len(self.items))

    def method_keys(self, tx):
        return ListVariable(self.unpack_var_sequence(tx))

    def method_values(self, tx):
        return ListVariable(list(self.items.values()))

    def method_items(self, tx):
        return ListVariable([TupleVariable([wrap_constant(k), v]) for k, v in self.items.items()])

    def method_copy(self, tx):
        return ConstDictVariable(self.items)

    def method_setitem(self, tx, key, value):
        self.mutable("item assignment")
        self.items[self.key(key)] = value
        return ConstantVariable(None)

    def method_update(self, tx, other=None, **kwargs):
        self.mutable("update")
        if other is not None:
            if not isinstance(other, ConstDictVariable):
                unsupported(f"dict.update with {other}")
            self.items.update(other.items)
        self.items.update(kwargs)
        return ConstantVariable(None)

    def method_pop(self, tx, key, default=None):
        self.mutable("pop")
        k = self.key(key)
        if k not in self.items and default is None:
            unsupported(f"KeyError: {k!r} at trace time")
        return self.items.pop(k, default)

    def method_setdefault(self, tx, key, default=None):
        self.mutable("setdefault")
        return self.items.setdefault(self.key(key), default or ConstantVariable(None))

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        for k, v in self.items.items():
            codegen.load_const(k)
            codegen(v)
        codegen.append("BUILD_MAP", arg=len(self.items))

    def __repr__(self):
        return f"ConstDictVariable({self.items!r})"
