"""TupleVariable, ListVariable and the iterator FOR_ITER walks (book chapter 3).

Their items are trackers, so a tuple may hold tensors (``q, k, v = x.split(C, dim=2)``).
Lists are mutated in place while tracing; a list that came from the frame's inputs (it has a
source) is also written back after the graph, since the caller sees it (``side_effects.py``).
"""
import collections
import functools
import inspect
import itertools
import operator
import types

import torch

from ..exc import raise_at_trace_time, unsupported
from .base import GetAttrVariable, VariableTracker, call_handler
from .constant import CONTAINER_TRACKERS, ConstantVariable, fold, is_none, wrap_constant


class NotComparable(BaseException):  # not an Exception: ``fold`` must let it through
    """Sorting compared a value that is not a constant (a tensor compares by its data)."""


class OpaqueKey:
    """A sort key's part that is not a constant. Tuples compare their items in order and stop at
    the first that differ, so ``sorted(d.items())`` with distinct constant keys never compares
    the tensors next to them; if sorting does compare one, we give up."""

    def __eq__(self, other):
        raise NotComparable

    __lt__ = __gt__ = __le__ = __ge__ = __eq__
    __hash__ = object.__hash__


def comparable(key):
    """The Python value that sorting ``key`` compares: a constant, a tuple or list of them, or
    an OpaqueKey."""
    if key.is_python_constant():
        return key.as_python_constant()
    if isinstance(key, BaseListVariable):
        return key.python_cls(comparable(item) for item in key.items)
    return OpaqueKey()


def sorted_items(tx, items, key=None, reverse=None):
    """The trackers ``items`` in the order ``sorted(..., key=key, reverse=reverse)`` puts them,
    with ``key`` traced on each item; what the sort compares must be constants."""
    keys = [comparable(key.call_function(tx, [item], {}) if key is not None else item) for item in items]
    try:
        order = fold(sorted, range(len(items)), key=keys.__getitem__,
                     reverse=bool(reverse.as_python_constant()) if reverse is not None else False)
    except NotComparable:
        unsupported("sorting by keys that are not constants (tensors compare by value)")
    return [items[i] for i in order]


class BaseListVariable(VariableTracker):
    python_cls = None  # tuple or list

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def python_type(self):
        return self.python_cls

    def as_python_constant(self):
        return self.python_cls(item.as_python_constant() for item in self.items)

    def is_python_constant(self):  # asking must not specialise a symbolic size it holds
        return all(item.is_python_constant() for item in self.items)

    def python_object(self):
        unsupported(f"the identity of {self}")

    def unpack_var_sequence(self, tx):
        return list(self.items)

    def truthy(self, tx):
        return bool(self.items)

    def rebuilt(self, items):
        """A new container of the same kind (a slice of this one, a concatenation...)."""
        return type(self)(items)

    def call_method(self, tx, name, args, kwargs):
        handler = getattr(self, f"method_{name.strip('_')}", None)
        if handler is None:
            unsupported(f"{self.python_cls.__name__}.{name}")
        return call_handler(handler, f"{self.python_cls.__name__}.{name}", tx, args, kwargs)

    def method_getitem(self, tx, index):
        if not isinstance(index, ConstantVariable):
            unsupported(f"indexing a {self.python_cls.__name__} with {index}")
        key = index.as_python_constant()
        if isinstance(key, slice):
            return self.rebuilt(self.items[key])
        return fold(self.items.__getitem__, key)

    def method_len(self, tx):
        return ConstantVariable(len(self.items))

    def method_contains(self, tx, value):
        return ConstantVariable(self.position(value) is not None)

    def position(self, value):
        """Where ``value`` first is, or None: identity first, then ``==``, as CPython compares
        for ``in`` and ``list.remove`` (a tensor compared by ``==`` with something else would be
        data-dependent)."""
        for i, item in enumerate(self.items):
            if item is value:
                return i
            if item.is_python_constant() and value.is_python_constant():
                if fold(lambda: item.as_python_constant() == value.as_python_constant()):
                    return i
            elif all(is_number(v) for v in (item, value)):  # `-1 in x.shape` with symbolic sizes
                if bool(number(item) == number(value)):  # decided now, and guarded
                    return i
            elif item.python_type() is torch.Tensor or value.python_type() is torch.Tensor:
                unsupported(f"`in` comparing {value} with {item} (== on a tensor is data-dependent)")
            else:
                unsupported(f"`in` comparing {value} with {item}")
        return None

    def method_index(self, tx, value):
        return ConstantVariable(fold(self.as_python_constant().index, value.as_python_constant()))

    def method_count(self, tx, value):
        return ConstantVariable(self.as_python_constant().count(value.as_python_constant()))

    def reconstruct(self, codegen):
        if self.source is not None:  # the caller's very object, unchanged
            return self.source.reconstruct(codegen)
        for item in self.items:
            codegen(item)
        codegen.append(self.BUILD_OP, arg=len(self.items))

    def __repr__(self):
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(BaseListVariable):
    python_cls = tuple
    BUILD_OP = "BUILD_TUPLE"

    def __init__(self, items, source=None, tuple_cls=tuple):
        super().__init__(items, source)
        self.tuple_cls = tuple_cls  # a namedtuple or torch.return_types class, or tuple

    def python_type(self):
        return self.tuple_cls

    def as_python_constant(self):
        values = tuple(item.as_python_constant() for item in self.items)
        if self.tuple_cls is tuple:
            return values
        return getattr(self.tuple_cls, "_make", self.tuple_cls)(values)  # torch.Size, a namedtuple...

    def rebuilt(self, items):
        """A slice or concatenation: a torch.Size stays one, other tuples become plain ones."""
        return TupleVariable(items, tuple_cls=torch.Size if self.tuple_cls is torch.Size else tuple)

    def fields(self):
        return getattr(self.tuple_cls, "__match_args__", None) or getattr(self.tuple_cls, "_fields", ())

    def method_numel(self, tx):
        """``torch.Size.numel()``: the product of the sizes, symbolic ones included."""
        if self.tuple_cls is not torch.Size:
            unsupported(f"{self.tuple_cls.__name__}.numel")
        multiply = tx.build(operator.mul)
        return functools.reduce(lambda a, b: multiply.call_function(tx, [a, b], {}), self.items, ConstantVariable(1))

    def var_getattr(self, tx, name):
        if self.tuple_cls is torch.Size and name == "numel":
            return GetAttrVariable(self, name)  # answered by method_numel
        if name in self.fields():
            return self.items[self.fields().index(name)]
        attr = inspect.getattr_static(self.tuple_cls, name, None)
        if self.tuple_cls is not tuple and isinstance(attr, types.FunctionType):  # a NamedTuple's method
            return tx.build(attr).bind(self)
        if isinstance(attr, (staticmethod, classmethod)) or (self.tuple_cls is not tuple and attr is not None):
            return tx.build(self.tuple_cls).var_getattr(tx, name)  # Point._make, Point._fields
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen):
        if self.tuple_cls is tuple or self.source is not None:
            return super().reconstruct(codegen)
        # torch.return_types.max((values, indices)) / Point._make((x, y))
        make = self.tuple_cls._make if hasattr(self.tuple_cls, "_make") else self.tuple_cls
        codegen.load_const(make, push_null=True)
        super().reconstruct(codegen)
        codegen.call(1)


class ListVariable(BaseListVariable):
    python_cls = list
    BUILD_OP = "BUILD_LIST"

    def mutable(self, tx):
        """About to change: a list from the caller is written back after the graph."""
        if self.source is not None:
            tx.output.side_effects.track_mutation(self)

    def method_append(self, tx, value):
        self.mutable(tx)
        self.items.append(value)
        return ConstantVariable(None)

    def method_extend(self, tx, values):
        self.mutable(tx)
        for value in each_item(tx, values):  # appended as it comes: a generator reading the list sees it grow
            self.items.append(value)
        return ConstantVariable(None)

    def method_insert(self, tx, index, value):
        self.mutable(tx)
        self.items.insert(index.as_python_constant(), value)
        return ConstantVariable(None)

    def method_pop(self, tx, index=None):
        self.mutable(tx)
        return fold(self.items.pop, -1 if index is None else index.as_python_constant())

    def method_remove(self, tx, value):
        index = self.position(value)
        if index is None:
            raise_at_trace_time(ValueError("list.remove(x): x not in list"))
        self.mutable(tx)
        del self.items[index]
        return ConstantVariable(None)

    def method_sort(self, tx, key=None, reverse=None):
        self.mutable(tx)
        self.items[:] = sorted_items(tx, self.items, key, reverse)
        return ConstantVariable(None)

    def method_reverse(self, tx):
        self.mutable(tx)
        self.items.reverse()
        return ConstantVariable(None)

    def method_clear(self, tx):
        self.mutable(tx)
        self.items.clear()
        return ConstantVariable(None)

    def method_copy(self, tx):
        return ListVariable(self.items)

    def method_setitem(self, tx, index, value):
        self.mutable(tx)
        key = index.as_python_constant()
        if isinstance(key, slice):
            fold(self.items.__setitem__, key, value.unpack_var_sequence(tx))
        else:
            fold(self.items.__setitem__, key, value)
        return ConstantVariable(None)

    def method_delitem(self, tx, index):
        self.mutable(tx)
        fold(self.items.__delitem__, index.as_python_constant())
        return ConstantVariable(None)


class DequeVariable(ListVariable):
    """A ``collections.deque`` made in the frame: a list with both ends open, and an optional
    ``maxlen`` past which adding at one end drops from the other."""

    python_cls = collections.deque

    def __init__(self, items, maxlen=None, source=None):
        super().__init__(items[max(len(items) - maxlen, 0):] if maxlen is not None else items, source)
        self.maxlen = maxlen

    @staticmethod
    def create(tx, iterable=None, maxlen=None):
        items = iterable.unpack_var_sequence(tx) if iterable is not None else []
        return DequeVariable(items, maxlen.as_python_constant() if maxlen is not None else None)

    def rebuilt(self, items):
        return DequeVariable(items, self.maxlen)

    def trim(self, keep_left):
        """Drop items past ``maxlen``: from the left after an append, the right after an appendleft."""
        excess = len(self.items) - self.maxlen if self.maxlen is not None else 0
        if excess > 0:
            del self.items[slice(-excess, None) if keep_left else slice(excess)]

    def method_append(self, tx, value):
        super().method_append(tx, value)
        self.trim(keep_left=False)
        return ConstantVariable(None)

    def method_extend(self, tx, values):
        super().method_extend(tx, values)
        self.trim(keep_left=False)
        return ConstantVariable(None)

    def method_appendleft(self, tx, value):
        self.items.insert(0, value)
        self.trim(keep_left=True)
        return ConstantVariable(None)

    def method_extendleft(self, tx, values):
        for value in each_item(tx, values):
            self.method_appendleft(tx, value)
        return ConstantVariable(None)

    def method_pop(self, tx):
        return fold(self.items.pop)

    def method_popleft(self, tx):
        return fold(self.items.pop, 0)

    def method_rotate(self, tx, n=None):
        steps = (n.as_python_constant() if n is not None else 1) % max(len(self.items), 1)
        if steps:
            self.items[:] = self.items[-steps:] + self.items[:-steps]
        return ConstantVariable(None)

    def method_copy(self, tx):
        return self.rebuilt(self.items)

    def method_getitem(self, tx, index):
        if isinstance(index.as_python_constant(), slice):
            unsupported("slicing a deque (TypeError in eager)")
        return super().method_getitem(tx, index)

    def var_getattr(self, tx, name):
        if name == "maxlen":
            return ConstantVariable(self.maxlen)
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen):
        codegen.load_const(collections.deque, push_null=True)
        for item in self.items:
            codegen(item)
        codegen.append("BUILD_LIST", arg=len(self.items))
        codegen.load_const(self.maxlen)
        codegen.call(2)


CONTAINER_TRACKERS[tuple] = lambda value: TupleVariable([wrap_constant(v) for v in value])
CONTAINER_TRACKERS[list] = lambda value: ListVariable([wrap_constant(v) for v in value])


class ListIteratorVariable(VariableTracker):
    """``iter(...)`` of anything iterable at trace time: the items are known, loops unroll.

    The iterator of a list made in the frame shares the list's items (``live``), so, as in
    CPython, it sees items appended after it was made (``for x in xs: xs.append(...)``)."""

    def __init__(self, items, live=False):
        super().__init__()
        self.items = items if live else list(items)
        self.live = live
        self.index = 0

    def reconstruct(self, codegen):
        """``iter([...])`` of the items not taken yet (``clip_grad_norm_(m.parameters())`` at a
        graph break). One over a list the frame made would no longer see that list grow: none."""
        if self.live:
            unsupported(f"rebuilding {self} in Python: it iterates over a list the frame made")
        codegen.load_const(iter, push_null=True)
        for item in self.items[self.index:]:
            codegen(item)
        codegen.append("BUILD_LIST", arg=len(self.items) - self.index)
        codegen.call(1)

    def next_item(self):
        """The next item, or None when exhausted (FOR_ITER then leaves the loop)."""
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def is_endless(self):
        """Whether it never runs out (``itertools.count()``): a loop over it must ``break``."""
        return False

    def send(self, value):
        """``iterator.send(value)`` as ``yield from`` makes it: the next item, or None at the end.
        Only a generator takes a value other than None."""
        if not is_none(value):
            unsupported(f"sending a value to {self}, which is not a generator")
        return self.next_item()

    def return_value(self):
        """The value that ``yield from`` of it gives once it is exhausted."""
        return ConstantVariable(None)

    def unpack_var_sequence(self, tx):
        rest, self.index = self.items[self.index:], len(self.items)
        return rest

    def python_type(self):
        return type(iter([]))


def each_item(tx, values):
    """The items of ``values`` one at a time, each made only when the one before has been used
    (``xs.extend(f(x) for x in xs)``, as CPython's list.extend iterates)."""
    if not isinstance(values, LazyIteratorVariable):
        yield from values.unpack_var_sequence(tx)
        return
    if values.is_endless():
        unsupported(f"unpacking all the items of the endless iterator {values}")
    while (item := values.next_item()) is not None:
        yield item


class LazyIteratorVariable(ListIteratorVariable):
    """An iterator whose items are made only when asked for (``next_item``), as CPython makes
    them: what making one does (a call, a side effect) happens in the program's order."""

    def __init__(self):
        super().__init__([])

    def reconstruct(self, codegen):
        VariableTracker.reconstruct(self, codegen)  # its items are not made yet: from its source only

    def unpack_var_sequence(self, tx):
        return list(each_item(tx, self))


class GeneratorVariable(LazyIteratorVariable):
    """A generator made by calling a generator function (or a generator expression) in the
    frame. Its body is traced a piece at a time, up to the next ``yield``, each time an item
    is asked for."""

    def __init__(self, frame):
        super().__init__()
        self.frame = frame  # the InliningGeneratorInstructionTranslator of its body

    def next_item(self):
        return self.frame.next_value()

    def send(self, value):
        return self.frame.next_value(None if is_none(value) else value)

    def return_value(self):
        return ConstantVariable(None) if self.frame.return_value is None else self.frame.return_value

    def call_method(self, tx, name, args, kwargs):
        if name != "send" or len(args) != 1 or kwargs:
            return super().call_method(tx, name, args, kwargs)
        item = self.send(args[0])
        if item is None:
            if not is_none(self.return_value()):
                unsupported("a generator's return value carried by the StopIteration of send()")
            raise_at_trace_time(StopIteration())
        return item

    def python_type(self):
        return types.GeneratorType


class ZipIteratorVariable(LazyIteratorVariable):
    """``zip(...)`` or ``enumerate(...)``: each item is made when asked for, from the next item
    of each iterator it pulls from, as in CPython, so that ``zip(it, it)`` pairs consecutive
    items and ``enumerate(xs)`` sees items appended to ``xs`` during the loop."""

    def __init__(self, iterators, start=None, strict=False):
        super().__init__()
        self.iterators = iterators
        self.count = start  # enumerate's next index; None for zip
        self.strict = strict

    def is_endless(self):
        return all(iterator.is_endless() for iterator in self.iterators)

    def next_item(self):
        row = []
        for position, iterator in enumerate(self.iterators):
            item = iterator.next_item()
            if item is None:
                if self.strict and (position > 0 or any(it.next_item() is not None for it in self.iterators[1:])):
                    unsupported("zip(strict=True) of iterables of different lengths (ValueError)")
                return None
            row.append(item)
        if self.count is not None:
            row.insert(0, ConstantVariable(self.count))
            self.count += 1
        return TupleVariable(row)


class CountIteratorVariable(LazyIteratorVariable):
    """``itertools.count(start, step)``: constants, each the previous one plus ``step``."""

    def __init__(self, start, step):
        super().__init__()
        self.value = start
        self.step = step

    def is_endless(self):
        return True

    def next_item(self):
        item, self.value = self.value, self.value + self.step
        return wrap_constant(item)

    def python_type(self):
        return itertools.count

    def __repr__(self):
        return f"count({self.value}, {self.step})"


class CycleIteratorVariable(LazyIteratorVariable):
    """``itertools.cycle(iterable)``: the iterable's items as it makes them, saved, then the saved
    items over and over. Endless unless the iterable is empty."""

    def __init__(self, iterator):
        super().__init__()
        self.iterator = iterator  # None once exhausted
        self.saved = []
        self.position = 0

    def is_endless(self):
        return bool(self.saved) or self.iterator is not None

    def next_item(self):
        if self.iterator is not None:
            item = self.iterator.next_item()
            if item is not None:
                self.saved.append(item)
                return item
            self.iterator = None
        if not self.saved:
            return None
        item = self.saved[self.position % len(self.saved)]
        self.position += 1
        return item

    def python_type(self):
        return itertools.cycle


class RepeatIteratorVariable(LazyIteratorVariable):
    """``itertools.repeat(item)`` without a count: the same item for ever."""

    def __init__(self, item):
        super().__init__()
        self.item = item

    def is_endless(self):
        return True

    def next_item(self):
        return self.item

    def python_type(self):
        return itertools.repeat


class IsliceIteratorVariable(LazyIteratorVariable):
    """``itertools.islice(iterable, start, stop, step)``: pulls from the iterable only as far as
    the item it returns, as CPython does, so it may slice an endless iterator."""

    def __init__(self, iterator, start, stop, step):
        super().__init__()
        self.iterator = iterator
        self.wanted = start  # the position in ``iterator`` of the next item to return
        self.pulled = 0  # how many items were taken from ``iterator``
        self.stop = stop
        self.step = step

    def next_item(self):
        if self.stop is not None and self.wanted >= self.stop:
            return None
        while self.pulled <= self.wanted:
            item = self.iterator.next_item()
            if item is None:
                self.stop = self.wanted  # exhausted: later calls return None without pulling
                return None
            self.pulled += 1
        self.wanted += self.step
        return item

    def python_type(self):
        return itertools.islice


class GroupByIteratorVariable(LazyIteratorVariable):
    """``itertools.groupby(iterable, key)``: pairs ``(key, group)`` of consecutive items with equal
    keys. As in CPython, the groups share the iterable: a group yields items only until the outer
    iterator moves on, which first skips what is left of the current group. The keys are compared
    by value, so they must be constants."""

    def __init__(self, tx, iterator, key):
        super().__init__()
        self.tx = tx  # the frame in which ``key`` is traced
        self.iterator = iterator
        self.key = key
        self.lookahead = None  # (item, key tracker) pulled but not yet given out
        self.group = None  # the current group

    def peek(self):
        """The next (item, key) of the iterable, without taking it; None at its end."""
        if self.lookahead is None:
            item = self.iterator.next_item()
            if item is None:
                return None
            key = item if self.key is None else self.key.call_function(self.tx, [item], {})
            if not key.is_python_constant():
                unsupported(f"itertools.groupby with a key that is not a constant ({key})")
            self.lookahead = (item, key)
        return self.lookahead

    def take(self, group):
        """The next item of ``group``, or None when the group has ended."""
        pair = self.peek() if group is self.group else None
        if pair is None or pair[1].as_python_constant() != group.key.as_python_constant():
            return None
        self.lookahead = None
        return pair[0]

    def next_item(self):
        if self.group is not None:
            while self.take(self.group) is not None:
                pass
        pair = self.peek()
        if pair is None:
            return None
        self.group = GroupIteratorVariable(self, pair[1])
        return TupleVariable([pair[1], self.group])

    def python_type(self):
        return itertools.groupby


class GroupIteratorVariable(LazyIteratorVariable):
    """One group of a :class:`GroupByIteratorVariable`."""

    def __init__(self, groupby, key):
        super().__init__()
        self.groupby = groupby
        self.key = key

    def next_item(self):
        return self.groupby.take(self)

    def python_type(self):
        return type(next(itertools.groupby([0]))[1])


class MapIteratorVariable(LazyIteratorVariable):
    """``map(fn, *iterables)``: ``fn`` is traced on the next items when an item is asked for."""

    def __init__(self, tx, fn, iterators):
        super().__init__()
        self.tx = tx  # the frame that made it, in which the calls are traced
        self.fn = fn
        self.rows = ZipIteratorVariable(iterators)

    def is_endless(self):
        return self.rows.is_endless()

    def next_item(self):
        row = self.rows.next_item()
        return None if row is None else self.fn.call_function(self.tx, row.items, {})


def is_number(var):
    """A constant number, or a symbolic one (a SymNodeVariable, which holds its SymInt in ``sym``)."""
    return hasattr(var, "sym") or (var.is_python_constant() and isinstance(var.as_python_constant(), (int, float)))


def number(var):
    return var.sym if hasattr(var, "sym") else var.as_python_constant()
