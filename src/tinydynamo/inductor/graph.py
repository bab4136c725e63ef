"""GraphLowering: run a prim graph to build its loop IR (chapter 8, "The loop IR").

Like TorchInductor's ``GraphLowering``, this is a ``torch.fx.Interpreter`` whose values are IR
nodes instead of tensors: placeholders become InputBuffers, each prim call runs its lowering,
and the output node realizes what the graph returns. It also decides where to *realize*: which
values get a buffer of their own instead of being recomputed inside each consumer.
"""
import operator
import re

import torch
import torch.fx
from torch.utils._pytree import tree_leaves

from .._logging import trace_artifact
from ..collectives import WAIT, is_collective
from ..prims.primitives import Prim
from . import ir, select_algorithm
from .indexing import contiguous_strides
from .lowering import lowerings
from .sizevars import SizeVarAllocator, is_size
from .virtualized import V

# Realize a value read by several consumers when recomputing it per element costs more than
# this (in cheap ops such as add; see OP_COST), or reads more than this many elements. Below
# that, recomputing is cheaper than a trip through memory. (When the consumers fuse with the
# producer, the trip is only to a small per-thread buffer, see scheduler.py.)
REALIZE_COST_THRESHOLD = 6
REALIZE_READS_THRESHOLD = 4
OP_COST = {**dict.fromkeys(["exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "erf", "pow"], 8),
           **dict.fromkeys(["div", "sqrt", "rsqrt", "reciprocal", "fmod"], 4)}


class GraphLowering(torch.fx.Interpreter):
    """Lower ``gm`` (a prim graph) for ``example_inputs`` (real, fake or meta tensors) on
    ``device_type`` ("cpu" for the C++ code generator, "cuda" or "cpu" for Triton's)."""

    def __init__(self, gm, device_type="cpu"):
        super().__init__(gm, garbage_collect_values=False)
        self.device_type = device_type
        self.sizevars = SizeVarAllocator()  # the size symbols, and the guards on them
        self.graph_inputs = []  # InputBuffers, in argument order
        self.arg_names = []  # every argument's name, in order: InputBuffers' and sizes'
        self.size_args = {}  # name -> the size (an int or a SymbolicSize) of each int argument
        self.buffers = []  # ComputedBuffers, ExternKernels and MultiOutputs, in program order
        self.constants = {}  # ConstantBuffer name -> tensor
        self.graph_outputs = None  # the output structure, with realized IR values
        self.output_buffers = set()  # names of ComputedBuffers that the caller receives
        self.current_node = None  # the FX node being lowered
        self._uses = _count_uses(gm.graph)
        self._needs_buffer = _needs_buffer(gm.graph)
        self._output_strides = _original_output_strides(gm.graph, self.sizevars.convert)

    def run(self, *example_inputs):
        for i, x in enumerate(example_inputs):
            if not is_size(self.sizevars.convert(x)):
                check_tensor(f"graph input {i}", x, self.device_type)
        super().run(*example_inputs)
        trace_artifact("ir", self.format_ir)
        return self

    def run_node(self, node):
        if node.op == "placeholder":
            return self._input(node, next(self.args_iter))
        self.current_node = node
        if node.op == "call_function" and _is_size_value(node.meta.get("val")):
            return self.sizevars.convert(node.meta["val"])  # sym_size, s0 * s1: a size, computed here
        value = super().run_node(node)
        if node.op != "call_function":
            return value
        if node in self._output_strides:
            return self.in_output_layout(value, self._output_strides[node])
        if isinstance(value, ir.Reduction):
            return self.realize(value)
        if isinstance(value, ir.Pointwise) and self._should_realize(node, value):
            return self.realize(value, _memory_format_strides(node, value.get_size()))
        return value

    # ------------------------------------------------------------------ node kinds

    def _input(self, node, example):
        name = f"arg{len(self.arg_names)}_{_c_identifier(node.name)}"
        self.arg_names.append(name)
        size = self.sizevars.convert(example)
        if is_size(size):
            self.size_args[name] = size
            return size
        buffer = ir.InputBuffer(name, self.layout_of(example))
        self.graph_inputs.append(buffer)
        return buffer

    def layout_of(self, tensor):
        """The Layout of a (meta) tensor, its symbolic sizes and strides as SymbolicSizes."""
        convert = self.sizevars.convert
        return ir.Layout(tensor.dtype, convert(tuple(tensor.shape)), convert(tuple(tensor.stride())))

    def get_attr(self, target, args, kwargs):
        value = self.fetch_attr(target)
        if not isinstance(value, torch.Tensor):
            return value
        check_tensor(f"constant {target}", value, self.device_type)
        name = f"const_{_c_identifier(target)}"
        self.constants[name] = value
        return ir.ConstantBuffer(name, ir.Layout(value.dtype, value.shape, value.stride()), value)

    def call_function(self, target, args, kwargs):
        if "device" in kwargs:  # creation prims: full, iota, uniform
            check_device(f"prims.{getattr(target, 'name', target)}", kwargs["device"], self.device_type)
        if target is operator.getitem:
            return args[0][args[1]]
        if isinstance(target, Prim) and target.name in lowerings:
            return lowerings[target.name](*args, **kwargs)
        if isinstance(target, Prim):
            return self.extern_kernel(target.impl, target.name, args, kwargs)
        if is_collective(target) or target is WAIT:
            return self.collective_kernel(target, args, kwargs)
        if isinstance(target, torch._ops.OpOverload) and not target._schema.is_mutable:
            return self.extern_kernel(target, str(target), args, kwargs)
        raise NotImplementedError(f"inductor: cannot lower call_function target {target!r}")

    def output(self, target, args, kwargs):
        self.graph_outputs = _map(self._realize_output, args[0])
        return self.graph_outputs

    # ------------------------------------------------------------------ realization

    def register_buffer(self, make):
        """Create a buffer with a fresh name: ``make(name)``."""
        buffer = make(f"buf{len(self.buffers)}")
        self.buffers.append(buffer)
        return buffer

    def realize(self, value, stride=None):
        """Give ``value`` memory: a buffer or a view of one is returned as it is. By default
        the memory is contiguous; ``stride`` (a permutation of contiguous strides) asks for
        another order of the dims in memory."""
        if isinstance(value, (ir.Buffer, ir.ReinterpretView)):
            return value
        if isinstance(value, ir.GenericView):
            value = ir.Pointwise(value.get_size(), value.get_dtype(), value.make_loader())
        if stride is None:
            return self.register_buffer(lambda name: ir.ComputedBuffer(name, value))
        layout = ir.Layout(value.get_dtype(), value.get_size(), stride)
        data = ir.in_memory_order(value, memory_order(stride))
        return self.register_buffer(lambda name: ir.ComputedBuffer(name, data, layout))

    def in_output_layout(self, value, stride):
        """A graph output, laid out in memory as eager lays it out (``stride``): computed in that
        order, or copied when it is a view of a buffer through other strides (``y.t().mul_(2)``
        leaves ``y`` a transpose of the product)."""
        contiguous = _same_strides(value.get_size(), stride, contiguous_strides(value.get_size()))
        if isinstance(value, ir.ReinterpretView) and not _same_strides(value.get_size(), value.layout.stride, stride):
            value = ir.Pointwise(value.get_size(), value.get_dtype(), value.make_loader())
        if isinstance(value, (ir.Loops, ir.GenericView)):
            return self.realize(value, None if contiguous else stride)
        return value

    def _should_realize(self, node, value):
        if self._needs_buffer[node]:
            return True
        if self._uses[node] <= 1:
            return False
        cost, loads = count_ops(value)
        return cost > REALIZE_COST_THRESHOLD or loads > REALIZE_READS_THRESHOLD

    def _realize_output(self, value):
        if value is None or is_size(value):  # a size the caller receives (for the backward)
            return value
        if not isinstance(value, ir.IRNode):
            raise NotImplementedError(f"inductor: graph output {value!r} is not a tensor")
        value = self.realize(value)
        storage = _storage(value)
        if isinstance(storage, ir.ComputedBuffer):
            self.output_buffers.add(storage.name)
        return value

    def output_names(self):
        """Names of the buffers that the graph's outputs are (or are views of)."""
        names = []
        _map(lambda v: names.append(_storage(v).name) if isinstance(v, ir.IRNode) else None,
             self.graph_outputs)
        return names

    def extern_kernel(self, kernel, name, args, kwargs):
        """A library call made by the wrapper; its tensor arguments must be in memory."""
        args = _map(lambda v: self.realize(v) if isinstance(v, ir.IRNode) else v, args)
        kwargs = {k: _map(lambda v: self.realize(v) if isinstance(v, ir.IRNode) else v, v)
                  for k, v in kwargs.items()}
        if name == "mm" and self.device_type == "cpu" and not kwargs and _mm_library(args) == "onednn":
            name, kernel = "onednn_mm", select_algorithm.onednn_mm
        meta = self.current_node.meta.get("val")
        if meta is None and _returns_nothing(self.current_node.target):  # a check that may raise
            self.register_buffer(lambda buf: ir.ExternKernel(buf, None, kernel, args, kwargs, name))
            return None
        if meta is None:
            raise NotImplementedError(f"inductor: node {self.current_node} has no meta['val']")
        if isinstance(meta, torch.Tensor):
            check_tensor(f"output of {name}", meta, self.device_type)
            return self.register_buffer(
                lambda buf: ir.ExternKernel(buf, self.layout_of(meta), kernel, args, kwargs, name))
        parent = self.register_buffer(lambda buf: ir.ExternKernel(buf, None, kernel, args, kwargs, name))
        return tuple(
            None if m is None else self.register_buffer(
                lambda buf, m=m, i=i: ir.MultiOutput(buf, self.layout_of(m), parent, i))
            for i, m in enumerate(meta))

    def collective_kernel(self, target, args, kwargs):
        """A collective becomes two extern calls: one that issues it, one that waits for it."""
        layout = self.layout_of(self.current_node.meta["val"])
        if target is WAIT:
            if not isinstance(args[0], ir.CollectiveKernel):
                raise NotImplementedError(f"inductor: wait_tensor of {args[0]}, which no collective returned")
            return self.register_buffer(lambda buf: ir.WaitKernel(buf, layout, target, args[0]))
        args = _map(lambda v: self.realize(v) if isinstance(v, ir.IRNode) else v, args)
        return self.register_buffer(lambda buf: ir.CollectiveKernel(buf, layout, target, args, kwargs, str(target)))

    def format_ir(self):
        lines = [f"{b}" for b in self.graph_inputs]
        lines += [f"{b}" for b in self.buffers]
        lines.append(f"outputs: {_map(lambda v: getattr(v, 'name', str(v)), self.graph_outputs)}")
        return "loop IR\n" + "\n".join(lines)


def _mm_library(args):
    """"aten" or "onednn" for a matrix product: measured for static operands (see
    select_algorithm.py), ATen's for symbolic ones."""
    layouts = [ir.as_storage_and_layout(a) for a in args]
    if len(args) != 2 or None in layouts or not all(layout.is_static() for _, layout in layouts):
        return "aten"
    return select_algorithm.mm_library(layouts[0][1], layouts[1][1])


# --------------------------------------------------------------------------- analysis of the FX graph


def _is_view(node):
    return node.op == "call_function" and isinstance(node.target, Prim) and node.target.kind == "view"


def _occurrences(node, user):
    found = []
    torch.fx.node.map_arg((user.args, user.kwargs), lambda n: found.append(n) if n is node else None)
    return len(found)


def _count_uses(graph):
    """How many times each node's value is read by non-view consumers (looking through views)."""
    uses = {}
    for node in reversed(graph.nodes):
        total = 0
        for user in node.users:
            count = _occurrences(node, user)
            total += count * uses[user] if _is_view(user) else count
        uses[node] = total
    return uses


def _needs_buffer(graph):
    """Nodes whose value (or a view of it) is a graph output or an extern kernel's input."""
    needs = {}
    for node in reversed(graph.nodes):
        needs[node] = any(
            user.op == "output"
            or (_is_view(user) and needs[user])
            or (user.op == "call_function" and _is_extern(user.target))
            for user in node.users)
    return needs


def _original_output_strides(graph, convert):
    """Output node -> the strides eager gives it, where they are a permutation of contiguous
    strides (``x.t() * 2`` is laid out like ``x.t()``): a caller can ``.view`` an output as it can
    eager's only if they are the same. ``decompose`` records
    eager's strides (from the aten graph) as the output node's ``original_output_strides``, the
    name TorchInductor uses."""
    output = next(iter(reversed(graph.nodes)))
    strides = output.meta.get("original_output_strides")
    if strides is None:
        return {}
    found = {}
    for node, stride in zip(tree_leaves(output.args[0]), strides):
        if not isinstance(node, torch.fx.Node) or stride is None:
            continue
        size, stride = convert(tuple(node.meta["val"].shape)), convert(tuple(stride))
        dense = dense_strides(size, memory_order(stride))
        if _same_strides(size, stride, dense):
            found[node] = dense
    return found


# the dims of a channels-last tensor from outermost to innermost in memory: channels innermost
CHANNELS_LAST_ORDER = {torch.channels_last: (0, 2, 3, 1), torch.channels_last_3d: (0, 2, 3, 4, 1)}


def _memory_format_strides(node, size):
    """The strides of a buffer laid out in the memory format that ``decompose`` recorded on the
    node (channels-last, as eager lays the value out), or None: contiguous."""
    order = CHANNELS_LAST_ORDER.get(node.meta.get("memory_format"))
    return None if order is None or len(order) != len(size) else dense_strides(size, order)


def memory_order(stride):
    """The dims from outermost to innermost in memory (ties keep their order)."""
    return sorted(range(len(stride)), key=lambda d: -stride[d])


def dense_strides(size, order):
    """The strides of a tensor whose dims lie in memory one after another, in ``order``."""
    stride, step = [0] * len(size), 1
    for dim in reversed(order):
        stride[dim] = step
        step *= max(size[dim], 1)
    return tuple(stride)


def _same_strides(size, a, b):
    return all(x == y for x, y, n in zip(a, b, size) if n > 1)  # a size-1 dim may have any stride


def _returns_nothing(target):
    return isinstance(target, torch._ops.OpOverload) and not target._schema.returns


def _is_extern(target):
    if isinstance(target, Prim):
        return target.name not in lowerings
    return isinstance(target, torch._ops.OpOverload)


class _OpCounter:
    """An ops handler that adds up what one element costs: compute (OP_COST) and loads."""

    def __init__(self):
        self.cost = 0
        self.loads = 0

    def load(self, name, index):
        self.loads += 1

    def constant(self, value, dtype):
        pass

    def index_expr(self, expr, dtype):
        pass

    def indirect_indexing(self, x, size):
        return ir.Var("indirect", size, indirect=True)

    def masked(self, mask, body, other):
        self.cost += 1
        return body()

    def __getattr__(self, name):
        def op(*args):
            self.cost += OP_COST.get(name, 1)

        return op


def count_ops(pointwise):
    """(compute cost, loads) of one element of ``pointwise``, counting inlined producers."""
    counter = _OpCounter()
    with V.set_ops_handler(counter):
        pointwise.inner_fn(ir.index_vars("x", pointwise.ranges))
    return counter.cost, counter.loads


# --------------------------------------------------------------------------- helpers


def check_tensor(what, x, device_type="cpu"):
    if not isinstance(x, torch.Tensor):
        raise NotImplementedError(f"inductor: {what} is a {type(x).__name__}; only tensors are supported")
    check_device(what, x.device, device_type)
    if x.dtype not in ir.SUPPORTED_DTYPES:
        raise NotImplementedError(f"inductor: {what} has unsupported dtype {x.dtype}")


def check_device(what, device, device_type):
    """A graph is compiled for one device type (meta tensors stand for any)."""
    if torch.device(device).type not in (device_type, "meta"):
        raise NotImplementedError(
            f"inductor: {what} is on {device}, but this graph is compiled for {device_type} "
            "tensors (the C++ code generator compiles CPU tensors, the Triton one CUDA tensors, "
            "or CPU tensors through its interpreter; one graph cannot mix devices)")


def _storage(value):
    return value.data if isinstance(value, ir.ReinterpretView) else value


def _is_size_value(value):
    return isinstance(value, (torch.SymInt, torch.SymFloat)) or (isinstance(value, int) and not isinstance(value, bool))


def _c_identifier(name):
    return re.sub(r"\W", "_", name)


def _map(fn, value):
    if isinstance(value, (list, tuple)):
        return type(value)(_map(fn, v) for v in value)
    return fn(value)
