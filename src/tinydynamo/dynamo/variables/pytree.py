"""PytreeFunctionVariable: ``torch.utils._pytree``'s tree functions on traced containers (chapter 3).

``tree_map(fn, {"a": x, "b": [y, z]})`` walks nested tuples, lists, dicts and namedtuples and
calls ``fn`` on each leaf. Inlining pytree's Python code would need its ``TreeSpec`` (a slotted
dataclass) made inside the frame, so the tracer walks its own container trackers instead, with
pytree's rules: a tuple, list, dict, namedtuple or ``torch.return_types`` tuple is a node,
anything else (``None`` too) is a leaf. A tree holding an object of another type that pytree knows as a node
(a registered class such as transformers' ModelOutput) is a graph break, not a wrong walk.

``tree_flatten`` returns pytree's real ``TreeSpec``, computed from the tree's shape while tracing
(a constant of the compiled code), so that ``tree_unflatten`` in the frame or after it rebuilds the
same containers.
"""
import collections

import torch.utils._pytree as pytree

from ..exc import Unsupported, unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .dicts import ConstDictVariable
from .lists import ListVariable, TupleVariable

NODE_TYPES = (tuple, list, dict, collections.OrderedDict, collections.defaultdict)


class _Leaf:
    """Stands for one leaf in the skeleton of a tree whose TreeSpec pytree computes."""


def children(tree):
    """The trackers directly under ``tree`` (a node), or None when it is a leaf."""
    if isinstance(tree, TupleVariable) and (tree.tuple_cls is tuple or pytree.is_namedtuple_class(tree.tuple_cls)
                                            or pytree.is_structseq_class(tree.tuple_cls)):
        return list(tree.items)
    if isinstance(tree, ListVariable) and type(tree) is ListVariable:
        return list(tree.items)
    if isinstance(tree, ConstDictVariable) and tree.dict_cls in NODE_TYPES:
        return list(tree.items.values())
    if _is_registered_node(tree):
        unsupported(f"torch.utils._pytree on a tree holding a {tree.python_type().__qualname__}, "
                    "a pytree node the tracer does not walk")
    return None


def _is_registered_node(tree):
    try:
        cls = tree.python_type()
    except Unsupported:  # a tracker whose type the tracer does not know: not a container it models
        return False
    return cls in pytree.SUPPORTED_NODES or pytree.is_namedtuple_class(cls) or pytree.is_structseq_class(cls)


def rebuilt(tree, new_children):
    """A container like ``tree`` (a node) holding ``new_children``."""
    if isinstance(tree, TupleVariable):
        return TupleVariable(new_children, tuple_cls=tree.tuple_cls)
    if isinstance(tree, ListVariable):
        return ListVariable(new_children)
    return ConstDictVariable(zip(tree.items, new_children), dict_cls=tree.dict_cls,
                             default_factory=tree.default_factory)


def leaves(tree):
    nodes = children(tree)
    if nodes is None:
        return [tree]
    return [leaf for child in nodes for leaf in leaves(child)]


def tree_map(tx, fn, tree, rests):
    """Rebuild ``tree`` with ``fn(leaf, *leaves of rests at that place)`` at each leaf."""
    nodes = children(tree)
    if nodes is None:
        return fn.call_function(tx, [tree, *rests], {})
    rest_nodes = [children(rest) for rest in rests]
    if any(r is None or len(r) != len(nodes) for r in rest_nodes):
        unsupported("torch.utils._pytree.tree_map over trees of different structure (an error in eager)")
    return rebuilt(tree, [tree_map(tx, fn, child, [r[i] for r in rest_nodes]) for i, child in enumerate(nodes)])


def skeleton(tree):
    """The tree's shape as a Python value, each leaf a ``_Leaf``, for pytree to compute its TreeSpec."""
    nodes = children(tree)
    if nodes is None:
        return _Leaf()
    parts = [skeleton(child) for child in nodes]
    if isinstance(tree, TupleVariable):
        return tree.tuple_cls(*parts) if pytree.is_namedtuple_class(tree.tuple_cls) else tree.tuple_cls(parts)
    if isinstance(tree, ListVariable):
        return parts
    made = tree.dict_cls(tree.default_factory.as_python_constant()) if tree.default_factory else tree.dict_cls()
    made.update(zip(tree.items, parts))
    return made


def unflatten(tx, leaf_trackers, spec):
    """The containers that ``spec`` describes, holding ``leaf_trackers`` (``tree_unflatten``)."""
    if spec.num_leaves != len(leaf_trackers):
        unsupported(f"tree_unflatten of {len(leaf_trackers)} leaves with a TreeSpec of {spec.num_leaves}")
    markers = [_Leaf() for _ in leaf_trackers]
    by_marker = {id(m): t for m, t in zip(markers, leaf_trackers)}
    return _from_python(tx, pytree.tree_unflatten(markers, spec), by_marker)


def _from_python(tx, value, by_marker):
    if id(value) in by_marker:
        return by_marker[id(value)]
    if isinstance(value, tuple):
        return TupleVariable([_from_python(tx, v, by_marker) for v in value], tuple_cls=type(value))
    if isinstance(value, list):
        return ListVariable([_from_python(tx, v, by_marker) for v in value])
    default_factory = getattr(value, "default_factory", None)
    return ConstDictVariable({k: _from_python(tx, v, by_marker) for k, v in value.items()}, dict_cls=type(value),
                             default_factory=tx.build(default_factory) if default_factory else None)


class TreeSpecVariable(VariableTracker):
    """A ``TreeSpec`` computed while tracing: a constant of the compiled code."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec

    def python_type(self):
        return type(self.spec)

    def as_python_constant(self):
        return self.spec

    def is_python_constant(self):
        return True

    def var_getattr(self, tx, name):
        if name == "num_leaves":
            return ConstantVariable(self.spec.num_leaves)
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen):
        codegen.load_const(self.spec)


class PytreeFunctionVariable(VariableTracker):
    """``tree_map``, ``tree_leaves``, ``tree_flatten`` or ``tree_unflatten`` of torch.utils._pytree."""

    FUNCTIONS = (pytree.tree_map, pytree.tree_leaves, pytree.tree_flatten, pytree.tree_unflatten)

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def python_type(self):
        return type(self.fn)

    def as_python_constant(self):
        return self.fn

    def call_function(self, tx, args, kwargs):
        if kwargs.get("is_leaf", ConstantVariable(None)).as_python_constant() is not None:
            unsupported(f"torch.utils._pytree.{self.fn.__name__} with is_leaf")
        if self.fn is pytree.tree_map:
            return tree_map(tx, args[0], args[1], args[2:])
        if self.fn is pytree.tree_leaves:
            return ListVariable(leaves(args[0]))
        if self.fn is pytree.tree_flatten:
            return TupleVariable([ListVariable(leaves(args[0])),
                                  TreeSpecVariable(pytree.tree_flatten(skeleton(args[0]))[1])])
        return unflatten(tx, args[0].unpack_var_sequence(tx), args[1].as_python_constant())
