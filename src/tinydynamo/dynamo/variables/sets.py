"""SetVariable: a set or frozenset of constants (book chapter 3).

``{field.name for field in fields(self)}``, ``if key in {"a", "b"}``, ``seen.add(n)``. The items
are hashable constants (strings, ints, classes...) held in a real set, changed by the same
operations in the same order as in eager, so iterating over it gives CPython's order. A set built
in the frame is mutated in place, and one from the caller (the module's set of non-persistent buffers,
which ``register_buffer`` adds to) is written back after the graph; sets of tensors are Unsupported (tensors hash by identity, and
the iteration order would depend on it).
"""
from ..exc import unsupported
from .base import VariableTracker
from .constant import CONTAINER_TRACKERS, ConstantVariable, fold, is_constant_value, wrap_constant


class SetVariable(VariableTracker):
    def __init__(self, items, frozen=False, source=None):
        super().__init__(source)
        self.frozen = frozen
        self.values = set()
        for item in items:
            fold(self.values.add, self.constant(item))

    @staticmethod
    def constant(item):
        if not item.is_python_constant():
            unsupported(f"a set of {item} (only sets of constants are traced)")
        return item.as_python_constant()

    def python_type(self):
        return frozenset if self.frozen else set

    def as_python_constant(self):
        return frozenset(self.values) if self.frozen else set(self.values)

    def python_object(self):
        unsupported(f"the identity of {self}")

    def unpack_var_sequence(self, tx):
        return [wrap_constant(v) for v in self.values]

    def truthy(self, tx):
        return bool(self.values)

    def mutable(self, tx):
        """About to change: a set from the caller is written back after the graph."""
        if self.frozen:
            unsupported(f"mutating {self}, a frozenset")
        if self.source is not None:
            tx.output.side_effects.track_mutation(self)

    def call_method(self, tx, name, args, kwargs):
        if kwargs or not all(a.is_python_constant() for a in args):
            unsupported(f"set.{name} with arguments {args}")
        consts = [a.as_python_constant() for a in args]
        if name in ("add", "discard", "remove", "update", "clear", "difference_update",
                    "intersection_update", "symmetric_difference_update"):
            self.mutable(tx)
            fold(getattr(self.values, name), *consts)
            return ConstantVariable(None)
        if name == "pop":
            unsupported("set.pop (which item depends on hashing)")
        result = fold(getattr(self.as_python_constant(), name), *consts)
        if isinstance(result, (set, frozenset)):
            return SetVariable([wrap_constant(v) for v in result], frozen=isinstance(result, frozenset))
        return wrap_constant(result)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        if self.frozen:
            return codegen.load_const(frozenset(self.values))
        for value in self.values:
            codegen.load_const(value)
        codegen.append("BUILD_SET", arg=len(self.values))

    def __repr__(self):
        return f"SetVariable({self.as_python_constant()!r})"


def wrap_constant_set(value):
    if is_constant_value(value):  # a frozenset of constants is itself a constant
        return ConstantVariable(value)
    return SetVariable([wrap_constant(v) for v in value], frozen=type(value) is frozenset)


CONTAINER_TRACKERS[set] = CONTAINER_TRACKERS[frozenset] = wrap_constant_set
