"""The loop IR: Pointwise, Reduction, buffers, views and extern kernels (chapter 8, "The loop IR").

Lowering turns every prim into one of these nodes, as TorchInductor's ``ir.py`` does:

* :class:`Pointwise` ``(ranges, inner_fn(index) -> value)``: one element per index, not yet
  stored anywhere. Consumers call its ``inner_fn`` again ("inlining"), so a chain of pointwise
  prims becomes one expression.
* :class:`Reduction` ``(ranges, reduction_ranges, inner_fn(index, rindex), reduction_type)``.
* :class:`ComputedBuffer`: a Pointwise or Reduction that is *realized*: computed into memory,
  because it is a graph output, a reduction result, an extern kernel's input, or is read by
  several consumers and would be costly to recompute.
* :class:`InputBuffer`, :class:`ConstantBuffer`: memory that the caller provides.
* :class:`ExternKernel` (and :class:`MultiOutput`): a library call (matmul, convolution,
  random numbers) that the wrapper makes in Python; its output is a buffer. A collective is two:
  :class:`CollectiveKernel` issues it, :class:`WaitKernel` waits for it (chapter 14).
* Views copy nothing. :class:`ReinterpretView` is a view of a buffer: new sizes, strides and
  offset (a new :class:`Layout`). :class:`GenericView` is a view of something not in memory yet:
  a function that rewrites the index before calling the viewed node's loader.

Every node has ``make_loader()``, a function from an index (a list of indexing.Expr) to a value
computed through ``ops``. ``inner_fn`` bodies only ever read their inputs through loaders.
"""
import itertools

import torch

from .indexing import Expr, Var, contiguous_strides
from .virtualized import V, ops


class Layout:
    """Where a tensor's elements sit in memory: element strides and offset, and the dtype."""

    def __init__(self, dtype, size, stride=None, offset=0):
        self.dtype = dtype
        self.size = tuple(size)
        self.stride = tuple(contiguous_strides(size) if stride is None else stride)
        self.offset = offset

    def index(self, index):
        """The memory position (in elements) of ``index``."""
        return sum((Expr.of(i) * s for i, s in zip(index, self.stride) if s != 0), Expr.of(self.offset))

    def is_contiguous(self):
        return self.offset == 0 and all(
            size == 1 or stride == expected
            for size, stride, expected in zip(self.size, self.stride, contiguous_strides(self.size)))

    def is_static(self):
        """Whether every size, stride and the offset are plain ints (no size symbols)."""
        return all(isinstance(v, int) for v in (*self.size, *self.stride, self.offset))

    def storage_size(self):
        """How many elements from the base pointer this layout may touch."""
        if any(s == 0 for s in self.size):
            return 0
        return self.offset + sum((size - 1) * stride for size, stride in zip(self.size, self.stride)) + 1

    def __repr__(self):
        return f"Layout({self.dtype}, size={list(self.size)}, stride={list(self.stride)}, offset={self.offset})"


class IRNode:
    """A value of the loop IR."""

    def get_size(self):
        raise NotImplementedError

    def get_dtype(self):
        raise NotImplementedError

    def make_loader(self):
        raise NotImplementedError


# --------------------------------------------------------------------------- computations


class Loops(IRNode):
    """A computation over ``ranges`` whose element is given by ``inner_fn``."""

    def __init__(self, ranges, dtype, inner_fn):
        self.ranges = tuple(ranges)
        self.dtype = dtype
        self.inner_fn = inner_fn

    def get_size(self):
        return self.ranges

    def get_dtype(self):
        return self.dtype


class Pointwise(Loops):
    """``out[index] = inner_fn(index)``, not stored anywhere until realized."""

    def make_loader(self):
        return self.inner_fn

    def __str__(self):
        return f"Pointwise({self.dtype}, ranges={list(self.ranges)})\n{format_body(self)}"


REDUCTION_TYPES = ("sum", "prod", "max", "min", "argmax", "argmin")


class Reduction(Loops):
    """``out[index] = reduce(inner_fn(index, rindex) for rindex in reduction_ranges)``."""

    def __init__(self, ranges, reduction_ranges, dtype, src_dtype, inner_fn, reduction_type):
        super().__init__(ranges, dtype, inner_fn)
        assert reduction_type in REDUCTION_TYPES, reduction_type
        self.reduction_ranges = tuple(reduction_ranges)
        self.src_dtype = src_dtype  # the dtype of the values reduced (argmax: dtype is int64)
        self.reduction_type = reduction_type

    def make_loader(self):
        raise AssertionError("a Reduction is read through the ComputedBuffer it is realized into")

    def __str__(self):
        return (f"Reduction({self.dtype}, ranges={list(self.ranges)}, "
                f"reduction_ranges={list(self.reduction_ranges)}, "
                f"reduction_type={self.reduction_type!r})\n{format_body(self)}")


def in_memory_order(loops, order):
    """``loops`` computed over its dims taken in ``order`` (outermost in memory first): stored
    contiguously, it is laid out as eager lays out a tensor with that stride order."""
    def logical(index):
        result = [None] * len(order)
        for position, dim in enumerate(order):
            result[dim] = index[position]
        return result

    ranges = [loops.ranges[dim] for dim in order]
    if isinstance(loops, Reduction):
        return Reduction(ranges, loops.reduction_ranges, loops.dtype, loops.src_dtype,
                         lambda index, rindex: loops.inner_fn(logical(index), rindex), loops.reduction_type)
    return Pointwise(ranges, loops.dtype, lambda index: loops.inner_fn(logical(index)))


# --------------------------------------------------------------------------- buffers


class Buffer(IRNode):
    """Memory holding a tensor: a name (used in generated code) and a layout."""

    def __init__(self, name, layout):
        self.name = name
        self.layout = layout

    def get_size(self):
        return self.layout.size

    def get_dtype(self):
        return self.layout.dtype

    def make_loader(self):
        def loader(index):
            return ops.load(self.name, self.layout.index(index))

        return loader

    def __str__(self):
        return f"{type(self).__name__}({self.name}, {self.layout})"


class InputBuffer(Buffer):
    """A graph input."""


class ConstantBuffer(Buffer):
    """A tensor attribute of the graph module (get_attr)."""

    def __init__(self, name, layout, value):
        super().__init__(name, layout)
        self.value = value


class ComputedBuffer(Buffer):
    """A realized Pointwise or Reduction. Its loops run over its memory in order, so it is
    stored contiguously, and read through ``layout``: contiguous too, except for a graph output
    that keeps eager's strides (its ``data`` then runs over the dims permuted into memory
    order, see ``in_memory_order``)."""

    def __init__(self, name, data, layout=None):
        super().__init__(name, layout or Layout(data.dtype, data.get_size()))
        self.data = data

    def store_index(self, index):
        """The memory position of element ``index`` of ``data``."""
        return Layout(self.get_dtype(), self.data.get_size()).index(index)

    def is_reduction(self):
        return isinstance(self.data, Reduction)

    def __str__(self):
        return f"{self.name}: ComputedBuffer({self.layout})\n  = {self.data}"


# Extern kernels that can write their result into memory the wrapper gives them (``out=``), as
# TorchInductor's ``extern_kernels.mm(a, b, out=buf)``: their results then live in the workspace,
# instead of in a fresh allocation whose pages the kernel faults in on every call.
OUT_VARIANTS = {"mm": torch.mm, "bmm": torch.bmm}


class ExternKernel(Buffer):
    """A library call made by the Python wrapper: ``kernel(*args, **kwargs)``.

    Tensor arguments are realized IR values (buffers or views of buffers). A kernel with several
    outputs has no layout of its own; :class:`MultiOutput` buffers pick its results.
    """

    def __init__(self, name, layout, kernel, args, kwargs, kernel_name):
        super().__init__(name, layout)
        self.kernel = kernel
        self.args = args
        self.kwargs = kwargs
        self._kernel_name = kernel_name  # "mm" for a prim's impl, "aten.sort.default" for an aten op

    def kernel_name(self):
        return self._kernel_name

    def out_variant(self):
        """The library function that writes this kernel's (contiguous) result into a tensor it is
        given, ``f(*args, out=tensor)``; None if there is none, or if the layout has symbolic sizes or
        strides (the workspace holds static layouts only)."""
        if self.layout is None or not self.layout.is_contiguous() or not self.layout.is_static():
            return None
        return OUT_VARIANTS.get(self._kernel_name)

    def inputs(self):
        """The realized IR values among the arguments."""
        found = []
        _visit(lambda v: found.append(v) if isinstance(v, IRNode) else None, (self.args, self.kwargs))
        return found

    def __str__(self):
        return (f"{self.name}: {type(self).__name__}({self.kernel_name()}, args={_brief(self.args)}, "
                f"kwargs={_brief(self.kwargs)}, {self.layout})")


class CollectiveKernel(ExternKernel):
    """An extern call that *issues* a collective (``_c10d_functional.all_reduce``...) and returns
    at once: its output may be read only after the :class:`WaitKernel` of it (chapter 14)."""


class WaitKernel(ExternKernel):
    """``wait_tensor`` of a :class:`CollectiveKernel`'s output: the collective is complete after
    it. Until then the collective may still read its inputs, so the wait counts as reading them
    too: their memory is not reused before it."""

    def __init__(self, name, layout, kernel, collective):
        super().__init__(name, layout, kernel, [collective], {}, str(kernel))
        self.collective = collective

    def inputs(self):
        return [self.collective, *self.collective.inputs()]


class MultiOutput(Buffer):
    """Output number ``index`` of an ExternKernel that returns a tuple."""

    def __init__(self, name, layout, parent, index):
        super().__init__(name, layout)
        self.parent = parent
        self.index = index

    def __str__(self):
        return f"{self.name}: MultiOutput({self.parent.name}[{self.index}], {self.layout})"


# --------------------------------------------------------------------------- views


class ReinterpretView(IRNode):
    """A view of a buffer's memory through another layout (as ``torch.as_strided``)."""

    def __init__(self, data, layout):
        assert isinstance(data, Buffer), data
        self.data = data
        self.layout = layout

    def get_size(self):
        return self.layout.size

    def get_dtype(self):
        return self.layout.dtype

    def make_loader(self):
        def loader(index):
            return ops.load(self.data.name, self.layout.index(index))

        return loader

    def __str__(self):
        return f"ReinterpretView({self.data.name}, {self.layout})"


class GenericView(IRNode):
    """A view of a value that is not in memory: ``loader(index) = data_loader(reindex(index))``."""

    def __init__(self, data, size, reindex):
        self.data = data
        self.size = tuple(size)
        self.reindex = reindex

    def get_size(self):
        return self.size

    def get_dtype(self):
        return self.data.get_dtype()

    def make_loader(self):
        inner = self.data.make_loader()

        def loader(index):
            return inner(self.reindex(index))

        return loader

    def __str__(self):
        return f"GenericView(size={list(self.size)}, of {self.data})"


def as_storage_and_layout(x):
    """(buffer, layout) when x is a buffer or a view of one, else None."""
    if isinstance(x, Buffer) and x.layout is not None:
        return x, x.layout
    if isinstance(x, ReinterpretView):
        return x.data, x.layout
    return None


# --------------------------------------------------------------------------- printing the IR


def index_vars(prefix, sizes):
    return [Var(f"{prefix}{i}", s) for i, s in enumerate(sizes)]


def format_body(loops):
    """The inner_fn of a Pointwise or Reduction, as it reads when run through a printing handler."""
    printer = IRPrinter()
    index = index_vars("x", loops.ranges)
    with V.set_ops_handler(printer):
        if isinstance(loops, Reduction):
            result = loops.inner_fn(index, index_vars("r", loops.reduction_ranges))
        else:
            result = loops.inner_fn(index)
    names = ", ".join(map(str, index)) or "()"
    header = f"    def inner_fn(index{', rindex' if isinstance(loops, Reduction) else ''}):\n"
    header += f"        {names} = index\n"
    if isinstance(loops, Reduction):
        header += f"        {', '.join(str(v) for v in index_vars('r', loops.reduction_ranges))} = rindex\n"
    return header + "".join(f"        {line}\n" for line in printer.lines) + f"        return {result}"


class IRPrinter:
    """An ops handler that writes each op as a line of Python: ``tmp2 = ops.exp(tmp1)``."""

    def __init__(self):
        self.lines = []
        self._counter = itertools.count()
        self._indent = ""

    def _emit(self, text):
        name = f"tmp{next(self._counter)}"
        self.lines.append(f"{self._indent}{name} = {text}")
        return name

    def load(self, name, index):
        return self._emit(f"ops.load({name}, {index})")

    def constant(self, value, dtype):
        return self._emit(f"ops.constant({value!r}, {dtype})")

    def index_expr(self, expr, dtype):
        return self._emit(f"ops.index_expr({expr}, {dtype})")

    def to_dtype(self, x, dtype):
        return self._emit(f"ops.to_dtype({x}, {dtype})")

    def indirect_indexing(self, x, size):
        name = self._emit(f"ops.indirect_indexing({x}, {size})")
        return Var(name, size, indirect=True)

    def masked(self, mask, body, other):
        self.lines.append(f"{self._indent}with ops.masked({mask}, other={other!r}):")
        saved, self._indent = self._indent, self._indent + "    "
        result = body()
        self._indent = saved
        return self._emit(f"ops.masked_result({result})")

    def __getattr__(self, name):
        def op(*args):
            return self._emit(f"ops.{name}({', '.join(map(str, args))})")

        return op


# --------------------------------------------------------------------------- helpers


def _visit(fn, value):
    if isinstance(value, (list, tuple)):
        for v in value:
            _visit(fn, v)
    elif isinstance(value, dict):
        for v in value.values():
            _visit(fn, v)
    else:
        fn(value)


def _brief(value):
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_brief(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_brief(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Buffer):
        return value.name
    if isinstance(value, ReinterpretView):
        return f"view({value.data.name})"
    return repr(value)


SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                    torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
                    torch.complex64, torch.complex128)  # complex: only extern kernels touch them (no prim takes them)
