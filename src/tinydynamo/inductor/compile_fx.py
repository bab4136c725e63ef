"""compile_fx_inner: a prim graph in, a fast callable out (chapters 10, "Generating C++", and 11).

The stages, in order (each has its own module and book section):

    GraphLowering   prim graph -> loop IR (Pointwise, Reduction, buffers, views, externs)
    Scheduler       loop IR -> fused kernels, local buffers, a memory plan
    CppScheduling   kernels -> one C++ source file; codecache compiles and loads it
    WrapperCodeGen  -> the Python function ``call(args)`` that runs everything

CUDA tensors take the Triton path instead (``TritonScheduling``: one Triton kernel file per
kernel, ``TritonWrapperCodeGen``: launches them); ``config.triton_on_cpu`` sends CPU tensors
there too, run by Triton's interpreter.

The graph is specialized to the shapes, dtypes and strides of the example inputs. The callable
checks the strides of each call's inputs, and compiles a new variant when they differ (eager
code passes non-contiguous tensors freely, and the kernels index memory with the strides),
under the compile lock: threads may call it at once.
Outputs have eager's strides: an output is contiguous unless eager lays it out otherwise
(``x.t() * 2`` is laid out like ``x.t()``, see ``GraphLowering``), and an output which is a view
(of an input or of another output) is returned as that view.

Aten graphs with symbolic sizes (chapter 12) are compiled once for every size by
``compile_fx_symbolic``: the loop IR holds SymbolicSizes, and the C++ kernels take the size
symbols as arguments. Where that is not possible (Triton's generator is static still, or a stage
needs a concrete size), they are compiled once per distinct sizes (``size_specialized``).
"""
import warnings

import torch

from .. import config
from .._logging import trace_artifact
from ..prims import decompose
from ..symbolic_shapes import SizeSpecializations, SymbolicShapeError
from ..utils import compile_lock, counters
from . import codecache
from .codegen.cpp import CppScheduling
from .codegen.wrapper import WrapperCodeGen
from .graph import GraphLowering
from .scheduler import Scheduler


def compile_fx_inner(gm, example_inputs):
    """Compile a prim-level GraphModule; the result takes the same flat inputs as ``gm``.

    With ``config.suppress_errors``, a failure to compile (such as a C++ compiler error) warns
    and returns ``gm`` itself, which runs the prims eagerly.
    """
    try:
        return CompiledGraph(gm, example_inputs)
    except Exception as error:
        if not config.suppress_errors:
            raise
        warnings.warn(f"tinydynamo.inductor could not compile the graph; running its prims "
                      f"eagerly instead. The error was:\n{error}")
        counters["fallbacks"] += 1
        return gm


def generate_code(gm, example_inputs):
    """Lower, schedule and generate C++: returns (GraphLowering, Scheduler, CppModule)."""
    graph = GraphLowering(gm).run(*example_inputs)
    scheduler = Scheduler(graph)
    module = CppScheduling(scheduler, buffer_dtypes(graph), [s.name for s in graph.sizevars.symbols]).codegen()
    counters["kernels_generated"] += module.kernel_count
    trace_artifact("kernels", lambda: module.source)
    return graph, scheduler, module


def graph_device(gm, example_inputs):
    """The device a graph computes on: its inputs', else its constants' or creation prims'."""
    for x in example_inputs:
        if isinstance(x, torch.Tensor) and x.device.type != "meta":
            return x.device
    for node in gm.graph.nodes:
        if "device" in node.kwargs:
            return torch.device(node.kwargs["device"])
    constants = list(gm.state_dict().values())
    return constants[0].device if constants else torch.device("cpu")


def uses_triton(device):
    """CUDA tensors go to the Triton code generator; CPU tensors too with config.triton_on_cpu."""
    return device.type == "cuda" or config.triton_on_cpu


def generate_triton_code(gm, example_inputs, device):
    """Lower, schedule and generate Triton: returns (GraphLowering, Scheduler, kernels), where
    kernels maps a scheduler kernel position to its TritonKernelSources."""
    from .codegen.triton import TritonScheduling  # imports Triton: only when a graph needs it

    graph = GraphLowering(gm, device.type).run(*example_inputs)
    scheduler = Scheduler(graph)
    symbols = [s.name for s in graph.sizevars.symbols]
    kernels = TritonScheduling(scheduler, buffer_dtypes(graph), symbols).codegen()
    sources = [k.source for ks in kernels.values() for k in ks]
    counters["kernels_generated"] += len(sources)
    trace_artifact("kernels", lambda: "\n".join(sources))
    return graph, scheduler, kernels


def compile_graph_triton(gm, example_inputs, device, fallback=None):
    """compile_graph's Triton path: returns ``call(args)``, which launches Triton kernels."""
    from .codegen.triton_wrapper import TritonWrapperCodeGen

    graph, scheduler, kernels = generate_triton_code(gm, example_inputs, device)
    call, source = TritonWrapperCodeGen(graph, scheduler, kernels, device, fallback=fallback).compile()
    trace_artifact("kernels", lambda: source)
    return call


def buffer_dtypes(graph):
    """buffer name -> dtype, for every buffer, input and constant of a lowered graph."""
    dtypes = {b.name: b.get_dtype() for b in graph.graph_inputs + graph.buffers if b.layout is not None}
    dtypes.update({name: value.dtype for name, value in graph.constants.items()})
    return dtypes


def compile_graph(gm, example_inputs, fallback=None):
    """Compile for one set of input strides; returns ``call(args)``. With symbolic sizes in the
    example inputs, ``call`` checks each call's sizes against its guards, and runs
    ``fallback(args)`` for those that fail them."""
    device = graph_device(gm, example_inputs)
    if uses_triton(device):
        return compile_graph_triton(gm, example_inputs, device, fallback)
    graph, scheduler, module = generate_code(gm, example_inputs)
    library = codecache.load(module.source) if module.segments else None
    call, source = WrapperCodeGen(graph, scheduler, module, library, fallback).compile()
    trace_artifact("kernels", lambda: source)
    return call


def _signature(tensors):
    """Shapes, dtypes and strides (the stride of a size-1 dim never matters: it is set to 0)."""
    return [(tuple(t.shape), tuple(s if n > 1 else 0 for s, n in zip(t.stride(), t.shape)), t.dtype)
            for t in tensors]


class CompiledGraph:
    """The callable compile_fx_inner returns: ``compiled(*inputs)`` returns what ``gm`` does."""

    def __init__(self, gm, example_inputs):
        self.gm = gm
        self.signature = _signature(example_inputs)
        self._strides = [tuple(x.stride()) for x in example_inputs]
        self.call = compile_graph(gm, example_inputs)
        self._variants = {tuple(s for _, s, _ in self.signature): self.call}  # strides -> call

    def __call__(self, *args):
        for arg, stride in zip(args, self._strides):
            if arg is not None and arg.stride() != stride:  # None: an undefined tensor an extern op made
                return self._variant(args)(list(args))
        return self.call(list(args))

    def without_input_checks(self, *args):
        """For inputs known to have the example inputs' strides (see RuntimeWrapper's)."""
        return self.call(list(args))

    def _variant(self, args):
        signature = _signature(args)
        if [(shape, dtype) for shape, _, dtype in signature] != [(s, d) for s, _, d in self.signature]:
            raise ValueError(f"compiled for inputs {self.signature}, called with {signature}")
        key = tuple(stride for _, stride, _ in signature)
        with compile_lock:  # two threads calling with the same new strides compile it once
            if key not in self._variants:
                self._variants[key] = compile_graph(self.gm, args)
        return self._variants[key]


def _zeros_like(value):
    """A zero tensor laid out like ``value`` (an int stays as it is)."""
    if not isinstance(value, torch.Tensor):
        return value
    return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=value.device).zero_()


def _without_int_inputs_and_outputs(prim_gm):
    """Take the numbers out of a static prim graph's signature: its int (float) inputs (sizes,
    which decomposing for concrete inputs made unused) and outputs (literals). Returns the
    number outputs by position; the kernels take and return tensors only."""
    for node in prim_gm.graph.find_nodes(op="placeholder"):
        if not isinstance(node.meta.get("val"), torch.Tensor):
            assert not node.users, f"{node} is a size, but the static graph still uses it"
            prim_gm.graph.erase_node(node)
    output = prim_gm.graph.output_node()
    values = output.args[0]
    int_outputs = {i: v for i, v in enumerate(values) if isinstance(v, (int, float))}
    output.args = (tuple(v for i, v in enumerate(values) if i not in int_outputs),)
    strides = output.meta["original_output_strides"]
    output.meta["original_output_strides"] = [s for i, s in enumerate(strides) if i not in int_outputs]
    prim_gm.recompile()
    return int_outputs


class _StaticVariant:
    """One size specialisation: the compiled kernels, plus the int outputs they were fixed to."""

    def __init__(self, gm, args):
        examples = [_zeros_like(a) for a in args]
        prim_gm = decompose(gm, examples)  # the sizes are ints now: a static prim graph
        self.int_outputs = _without_int_inputs_and_outputs(prim_gm)
        self.compiled = compile_fx_inner(prim_gm, [x for x in examples if isinstance(x, torch.Tensor)])
        self.num_outputs = len(prim_gm.graph.output_node().args[0]) + len(self.int_outputs)

    def __call__(self, *args):
        tensors = iter(self.compiled(*(a for a in args if isinstance(a, torch.Tensor))))
        return tuple(self.int_outputs[i] if i in self.int_outputs else next(tensors)
                     for i in range(self.num_outputs))


def size_specialized(gm):
    """An aten graph with symbolic sizes, compiled to one static variant per distinct input sizes.

    This is the interim step of dynamic shapes in inductor: the loop IR, the scheduler and the
    C++/Triton code generators know only concrete sizes, so a symbolic graph cannot be compiled
    once for all sizes yet. Instead each call with new sizes (strides, int arguments) decomposes
    the graph for zero tensors laid out like the call's arguments, which turns its sizes into
    ints, and compiles that static graph. Dynamo still compiles the frame once, and AOT autograd
    traces it once; only the kernels are specialised.
    """
    return SizeSpecializations(lambda args: _StaticVariant(gm, args))


def compile_fx_symbolic(gm, example_inputs):
    """An aten graph traced with symbolic sizes, compiled once for every size (chapter 12).

    It is decomposed with its symbolic example inputs, so the prim graph computes its sizes from
    the symbols, and lowered with sizes that are SymbolicSizes: the C++ kernels take the symbols
    as arguments. The guards that the generated code relies on are checked on each call, and a
    call that fails them, like a graph that cannot be compiled symbolically (SymbolicShapeError),
    gets kernels compiled for its own sizes (``size_specialized``). Triton kernels take the
    sizes as arguments too, and choose their block sizes per size bucket.
    """
    per_size = size_specialized(gm)
    try:
        call = compile_graph(decompose(gm, example_inputs), example_inputs,
                             fallback=lambda args: per_size(*args))
    except SymbolicShapeError as error:
        counters["symbolic_fallbacks"] += 1
        trace_artifact("dynamic", lambda: f"inductor compiles this graph once per size: {error}")
        return per_size
    return lambda *args: call(list(args))
