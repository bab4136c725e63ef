"""The Python wrapper: the function that runs a compiled graph (chapter 10).

Like TorchInductor's ``wrapper.py``, this writes Python source for a function ``call(args)``:
it allocates the output tensors, calls each C++ segment once with the data pointers it needs,
makes the extern kernel calls (matmul, convolution, random numbers) in between, and returns the
outputs. Reading it shows exactly what a compiled graph does at run time::

    def call(args):
        arg0_x, = args
        buf1 = empty_output((4096, 1024), (1024, 1), torch.float32)
        if (error := segment0(arg0_x.data_ptr(), buf1.data_ptr())):
            raise_kernel_error(error)
        return (buf1,)

Intermediate buffers live in a workspace: one uint8 tensor with the size the memory plan asks
for. A workspace belongs to one call at a time (``with workspaces.take() as workspace:``), so
calls from several threads at once each compute in their own, and later calls reuse the ones
that earlier calls gave back. Outputs are fresh tensors, from :func:`empty_output`, which gives
large ones huge pages (``runtime/allocation.py``); an output whose static layout is too small
for that is made by ``torch.empty_strided`` itself. The C++ segments report errors through their
return value, the error flag of that one call.
"""
import contextlib
import ctypes
import math
import typing

import sympy
import torch

from .. import ir
from ..runtime.allocation import empty_output, may_need_huge_pages
from ..scheduler import ExternKernelSchedulerNode, FusedSchedulerNode
from ..sizevars import SymbolicSize
from ...symbolic_shapes import SymbolicShapeError
from .common import IndentedBuffer


class KernelRuntimeError(RuntimeError):
    """A C++ kernel found an error in its inputs."""


def raise_kernel_error(code):
    if code == 1:
        raise IndexError("tinydynamo kernel: an index read from a tensor is out of bounds")
    if code == 2:  # an integer division by zero: eager's error, type and message
        raise KernelRuntimeError("ZeroDivisionError")
    raise KernelRuntimeError(f"tinydynamo kernel failed with error code {code}")


class Workspace(typing.NamedTuple):
    tensor: torch.Tensor  # the bytes
    address: int  # tensor.data_ptr(), for the C++ segments
    views: dict  # buffer name -> that buffer's view of the bytes, for the extern kernels


class WorkspacePool:
    """The workspaces of one compiled graph: a call takes a free one, or a new one if every
    workspace is in use by another call (in another thread), and gives it back when it ends."""

    def __init__(self, nbytes, layouts):
        self.nbytes = nbytes
        self.layouts = layouts  # buffer name -> (offset, Layout) of each buffer in the workspace
        self.free = []  # list.pop and list.append are atomic: no lock is needed

    def new_workspace(self):
        tensor = torch.empty(self.nbytes, dtype=torch.uint8)
        views = {}
        for name, (offset, layout) in self.layouts.items():
            nbytes = layout.storage_size() * layout.dtype.itemsize
            flat = tensor[offset:offset + nbytes].view(layout.dtype)
            views[name] = torch.as_strided(flat, layout.size, layout.stride)
        return Workspace(tensor, tensor.data_ptr(), views)

    @contextlib.contextmanager
    def take(self):
        try:
            workspace = self.free.pop()
        except IndexError:
            workspace = self.new_workspace()
        try:
            yield workspace
        finally:
            self.free.append(workspace)


def reinterpret(tensor, size, stride, offset):
    """The view ``(size, stride, offset)`` of the memory starting at ``tensor.data_ptr()``."""
    return torch.as_strided(tensor, size, stride, tensor.storage_offset() + offset)


def restride(tensor, size, stride, workspace=None):
    """An extern kernel's output as the generated kernels assume it: a copy if it has other
    strides, or if it is a view into the workspace. (Some ops return views of their input without
    saying so, ``unsafe_split`` for one, and later kernels reuse the workspace's space.) An output
    that the op left undefined (None, where its meta kernel promised a tensor) stays None."""
    if tensor is None:
        return None
    in_workspace = (workspace is not None and workspace.numel() > 0 and tensor.numel() > 0  # (empty:
                    # no memory to share, and an empty storage has no data pointer to compare)
                    and tensor.untyped_storage().data_ptr() == workspace.untyped_storage().data_ptr())
    if not in_workspace and all(a == b for a, b, n in zip(tensor.stride(), stride, size) if n > 1):
        return tensor  # size-1 dims may have any stride
    return torch.empty_strided(size, stride, dtype=tensor.dtype, device=tensor.device).copy_(tensor)


def _is_literal(value):
    if isinstance(value, (list, tuple)):
        return all(_is_literal(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (bool, int, str, torch.dtype, torch.memory_format))


class WrapperCodeGen:
    """Writes ``call(args)`` for a scheduled graph and its compiled C++ module."""

    def __init__(self, graph, scheduler, module, library, fallback=None):
        self.graph = graph
        self.fallback = fallback  # runs a call whose sizes fail the guards (symbolic graphs only)
        self.scheduler = scheduler
        self.module = module
        self.code = IndentedBuffer(indent="    ")
        self.namespace = {"torch": torch, "empty_output": empty_output,
                          "reinterpret": reinterpret, "restride": restride,
                          "raise_kernel_error": raise_kernel_error}
        self._buffers = {b.name: b for b in graph.buffers}
        self._constant_count = 0
        self.workspace_offsets = scheduler.workspace_offsets  # buffer name -> offset in the workspace
        self.uses_workspace = scheduler.workspace_size > 0
        self.namespace["workspaces"] = WorkspacePool(scheduler.workspace_size, {
            name: (offset, self._buffer(name).layout) for name, offset in self.workspace_offsets.items()})
        self._setup_library(library)
        self.namespace.update(graph.constants)

    def _setup_library(self, library):
        for segment in self.module.segments.values():
            function = getattr(library, segment.name)
            function.argtypes = ([ctypes.c_void_p] * (len(segment.params) + segment.uses_workspace)
                                 + [ctypes.c_int64] * len(segment.size_params))
            function.restype = ctypes.c_int
            self.namespace[segment.name] = function

    def _buffer(self, name):
        return self._buffers[name]

    # ------------------------------------------------------------------ source

    def generate(self):
        self.code.writeline("def call(args):")
        with self.code.indent():
            names = self.graph.arg_names
            if names:
                self.code.writeline(f"{', '.join(names)}, = args")
            if self.fallback is not None:
                self._bind_sizes()
            with contextlib.ExitStack() as stack:
                if self.uses_workspace:
                    self.code.writeline("with workspaces.take() as workspace:  # this call's own")
                    stack.enter_context(self.code.indent())
                self._steps()
                self.code.writeline(f"return {self._value(self.graph.graph_outputs)}")
        return self.code.getvalue()

    def _bind_sizes(self):
        """Read each size symbol from the arguments, then check that this call's sizes and
        strides are the ones the kernels were generated for, and every inductor guard; a call
        that fails runs ``fallback`` (kernels compiled for its own sizes) instead."""
        bound, checks = set(), []

        def bind(value, source):
            if isinstance(value, SymbolicSize) and isinstance(value.expr, sympy.Symbol) \
                    and value.expr not in bound:
                bound.add(value.expr)
                self.code.writeline(f"{value.expr.name} = {source}")
            else:
                checks.append(f"{source} == {self.graph.sizevars.to_python(value)}")

        for name, size in self.graph.size_args.items():
            bind(size, name)
        for buffer in self.graph.graph_inputs:
            for d, size in enumerate(buffer.layout.size):
                bind(size, f"{buffer.name}.size({d})")
            for d, (size, stride) in enumerate(zip(buffer.layout.size, buffer.layout.stride)):
                if not (isinstance(size, int) and size <= 1):  # a size-1 dim may have any stride
                    bind(stride, f"{buffer.name}.stride({d})")
        unbound = set(self.graph.sizevars.symbols) - bound
        if unbound:
            raise SymbolicShapeError(f"inductor: the sizes {sorted(map(str, unbound))} are not "
                                     "sizes, strides or int arguments of the graph's inputs")
        checks += [f"{s.name} >= 2" for s in self.graph.sizevars.symbols]
        checks += [self.graph.sizevars.condition_to_python(g) for g in self.graph.sizevars.guards]
        if checks:
            self.namespace["fallback"] = self.fallback
            self.code.writeline(f"if not ({' and '.join(checks)}):")
            self.code.writeline("    return fallback(args)  # sizes these kernels were not generated for")

    def _size(self, value):
        """Python source for a size, or a tuple of sizes."""
        if isinstance(value, (tuple, list)):
            items = [self._size(v) for v in value]
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        return self.graph.sizevars.to_python(value)

    def _steps(self):
        for pos, kernel in enumerate(self.scheduler.kernels):
            if isinstance(kernel, ExternKernelSchedulerNode):
                self._extern_call(kernel)
            elif pos in self.module.segments:
                self._segment_call(pos)

    def _workspace_tensor(self):
        """What ``restride`` compares an extern kernel's output with."""
        return "workspace.tensor" if self.uses_workspace else "None"

    def _segment_call(self, pos):
        segment = self.module.segments[pos]
        kernels = self.scheduler.kernels
        end = pos
        while end < len(kernels) and isinstance(kernels[end], FusedSchedulerNode):
            end += 1
        for kernel in kernels[pos:end]:
            for name in kernel.output_names():
                if name not in self.workspace_offsets and name not in kernel.local_buffers:
                    layout = self._buffer(name).layout  # an output, or a buffer of symbolic size
                    self.code.writeline(f"{name} = {self._allocation(layout)}")
        pointers = [f"{name}.data_ptr()" for name in segment.params]
        if segment.uses_workspace:
            pointers.append("workspace.address")
        pointers += segment.size_params
        self.code.writeline(f"if (error := {segment.name}({', '.join(pointers)})):")
        self.code.writeline("    raise_kernel_error(error)")

    def _allocation(self, layout):
        size, stride = self._size(layout.size), self._size(layout.stride)
        if may_need_huge_pages(layout.size, layout.stride, layout.dtype):
            return f"empty_output({size}, {stride}, {layout.dtype})"
        return f"torch.empty_strided({size}, {stride}, dtype={layout.dtype})"

    def _extern_call(self, node):
        kernel = node.kernel
        function = f"extern_{kernel.name}"
        args = [self._value(a) for a in kernel.args]
        args += [f"{k}={self._value(v)}" for k, v in kernel.kwargs.items()]
        self.code.writeline(f"# {kernel.kernel_name()}")
        if kernel.name in self.workspace_offsets:  # the library writes into the workspace
            self.namespace[function] = kernel.out_variant()
            self.code.writeline(f"{function}({', '.join(args)}, out={self._value(kernel)})")
            return
        self.namespace[function] = kernel.kernel
        call = f"{function}({', '.join(args)})"
        if isinstance(kernel, ir.CollectiveKernel):  # in flight: nothing touches it before its wait
            self.code.writeline(f"{kernel.name} = {call}")
            return
        if kernel.layout is not None:
            self.code.writeline(f"{kernel.name} = restride({call}, {self._size(kernel.layout.size)}, "
                                f"{self._size(kernel.layout.stride)}, {self._workspace_tensor()})")
            return
        self.code.writeline(f"{kernel.name} = {call}")
        for name in node.output_names():
            out = self._buffer(name)
            self.code.writeline(f"{name} = restride({kernel.name}[{out.index}], "
                                f"{self._size(out.layout.size)}, {self._size(out.layout.stride)}, "
                                f"{self._workspace_tensor()})")

    def _value(self, value):
        """Python source for an argument or output: a tensor expression or a constant."""
        if isinstance(value, (list, tuple)):
            items = ", ".join(self._value(v) for v in value)
            if isinstance(value, list):
                return f"[{items}]"
            return f"({items},)" if value else "()"  # "(,)" is not Python: a graph may have no outputs
        if isinstance(value, ir.ReinterpretView):
            layout = value.layout
            return (f"reinterpret({self._value(value.data)}, {self._size(layout.size)}, "
                    f"{self._size(layout.stride)}, {self._size(layout.offset)})")
        if isinstance(value, SymbolicSize):
            return self._size(value)
        if isinstance(value, ir.Buffer):
            if value.name in self.workspace_offsets:
                return f"workspace.views[{value.name!r}]"
            return value.name
        if _is_literal(value):
            return repr(value)
        name = f"constant{self._constant_count}"
        self._constant_count += 1
        self.namespace[name] = value
        return name

    def compile(self):
        """The ``call`` function (and its source, for logs)."""
        source = self.generate()
        exec(compile(source, "<tinydynamo wrapper>", "exec"), self.namespace)
        return self.namespace["call"], source
