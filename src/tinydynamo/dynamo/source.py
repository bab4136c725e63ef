"""Sources: where a value of the frame came from (book chapter 4,
"Guards and the transformed code").

A ``Source`` is a recipe for finding an input again: "the local ``x``", "attribute ``weight`` of
attribute ``fc1`` of the local ``self``", "the global ``scale``". Dynamo attaches one to every
value it reads from the frame. Sources are used three ways:

- ``name()`` is a Python expression for the value, e.g. ``L['self'].fc1.weight`` or
  ``G['scale']``. Guards are written with it (``L`` is the frame's locals, ``G`` its globals),
  and FX placeholders are named after it.
- ``reconstruct(codegen)`` emits the bytecode that loads the value again in the transformed code
  (this is how graph inputs are fetched on every call).
- Sources are hashable, so the output graph can key its inputs by them.

Free variables of the compiled frame count as locals, as they do in ``frame.f_locals``.
"""
import dataclasses
import keyword
import re

import torch


@dataclasses.dataclass(frozen=True)
class Source:
    def name(self) -> str:
        raise NotImplementedError

    def reconstruct(self, codegen):
        raise NotImplementedError

    @property
    def depth(self):
        """How many steps from a local or global (guards on shallow sources run first)."""
        return 0

    def placeholder_name(self):
        """An identifier for FX, e.g. ``L['self'].fc1.weight`` -> ``L_self_fc1_weight``."""
        return re.sub(r"[^0-9a-zA-Z]+", "_", self.name()).strip("_")

    def __str__(self):
        return self.name()


@dataclasses.dataclass(frozen=True)
class LocalSource(Source):
    """An argument (or other local) of the compiled frame: ``L['x']``."""

    local_name: str

    def name(self):
        return f"L[{self.local_name!r}]"

    def reconstruct(self, codegen):
        codegen.load_argument(self.local_name)


@dataclasses.dataclass(frozen=True)
class ClosureSource(Source):
    """A free variable of the compiled frame (the contents of one of its closure cells)."""

    local_name: str

    def name(self):
        return f"L[{self.local_name!r}]"

    def reconstruct(self, codegen):
        codegen.load_deref(self.local_name)


@dataclasses.dataclass(frozen=True)
class ClosureCellSource(Source):
    """One of the compiled frame's closure cells itself (not its contents): where a ``nonlocal``
    write is replayed."""

    local_name: str

    def name(self):
        return f"cell L[{self.local_name!r}]"

    def reconstruct(self, codegen):
        codegen.load_closure(self.local_name)


@dataclasses.dataclass(frozen=True)
class GlobalSource(Source):
    """A global of the compiled frame's module: ``G['scale']``."""

    global_name: str

    def name(self):
        return f"G[{self.global_name!r}]"

    def reconstruct(self, codegen):
        codegen.load_global(self.global_name)


@dataclasses.dataclass(frozen=True)
class AttrSource(Source):
    """``base.member``, e.g. ``L['self'].fc1``."""

    base: Source
    member: str

    def name(self):
        return self.child_expression(self.base.name())

    def child_expression(self, base):
        if self.member.isidentifier() and not keyword.iskeyword(self.member):
            return f"{base}.{self.member}"
        return f"getattr({base}, {self.member!r})"  # nn.ParameterList's members are named "0", "1"...

    def reconstruct(self, codegen):
        self.base.reconstruct(codegen)
        codegen.load_attr(self.member)

    @property
    def depth(self):
        return self.base.depth + 1


@dataclasses.dataclass(frozen=True)
class GetItemSource(Source):
    """``base[index]`` for a constant index, e.g. ``L['xs'][0]`` or ``L['self'].blocks[1]``."""

    base: Source
    index: object

    def name(self):
        return self.child_expression(self.base.name())

    def child_expression(self, base, index=None):
        """The expression; ``index`` is how to write the key (default: its repr, a literal)."""
        return f"{base}[{index or repr(self.index)}]"

    def reconstruct(self, codegen):
        self.base.reconstruct(codegen)
        codegen.load_const(self.index)
        codegen.append("BINARY_SUBSCR")

    @property
    def depth(self):
        return self.base.depth + 1


@dataclasses.dataclass(frozen=True)
class DictGetItemSource(GetItemSource):
    """``dict.__getitem__(base, index)``: an item of a dict subclass read past its own
    ``__getitem__`` (transformers' ``ACT2FN`` builds a new module on each ``ACT2FN[key]``)."""

    def child_expression(self, base, index=None):
        return f"dict.__getitem__({base}, {index or repr(self.index)})"

    def reconstruct(self, codegen):
        codegen.load_const(dict.__getitem__, push_null=True)
        self.base.reconstruct(codegen)
        codegen.load_const(self.index)
        codegen.call(2)


@dataclasses.dataclass(frozen=True)
class NumpyTensorSource(Source):
    """``torch.from_numpy(base)``: the tensor sharing memory with the NumPy array at ``base``. An
    array argument is a graph input through it, and its guards check that tensor."""

    base: Source

    def name(self):
        return f"torch.from_numpy({self.base.name()})"

    def reconstruct(self, codegen):
        codegen.load_const(torch.from_numpy, push_null=True)
        self.base.reconstruct(codegen)
        codegen.call(1)

    @property
    def depth(self):
        return self.base.depth + 1


@dataclasses.dataclass(frozen=True)
class WeakRefCallSource(Source):
    """``base()`` for a weakref at ``base``: the object it refers to, or None once that died
    (``nn.RNN`` keeps weakrefs to its weights and compares them with the weights at each call)."""

    base: Source

    def name(self):
        return self.child_expression(self.base.name())

    def child_expression(self, base):
        return f"{base}()"

    def reconstruct(self, codegen):
        codegen.add_push_null(lambda: self.base.reconstruct(codegen))
        codegen.call(0)

    @property
    def depth(self):
        return self.base.depth + 1


@dataclasses.dataclass(frozen=True)
class SizeSource(Source):
    """``base.size()[dim]``: a tensor's size, which a size symbol stands for (chapter 12,
    "Dynamic shapes"). Guards read symbols' values from these sources."""

    base: Source
    dim: int

    def name(self):
        return self.child_expression(self.base.name())

    def child_expression(self, base):
        return f"{base}.size()[{self.dim}]"

    @property
    def depth(self):
        return self.base.depth + 1


@dataclasses.dataclass(frozen=True)
class StrideSource(SizeSource):
    """``base.stride()[dim]``: the stride of a tensor that is not dense (a slice), which a symbol
    of its own stands for when its sizes are dynamic."""

    def child_expression(self, base):
        return f"{base}.stride()[{self.dim}]"
