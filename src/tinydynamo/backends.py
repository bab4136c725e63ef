"""The backends registry: the whole pipeline, readable in one place (Introduction chapter).

A backend has ``torch.compile``'s signature, ``backend(gm, example_inputs) -> callable``:
it receives the FX graph that dynamo captured plus example inputs, and returns a callable
that takes the same flat positional inputs and returns what ``gm`` returns.
"""
import copy
import warnings

import torch

from .aot import aot_autograd, min_cut_rematerialization_partition, nop
from .aot.symbolic import is_symbolic
from .inductor import compile_fx_inner
from .inductor.compile_fx import compile_fx_symbolic
from .prims import decomp_eager as run_prims_eagerly
from .prims import decompose
from ._logging import trace_artifact
from .symbolic_shapes import SizeSpecializations, SymbolicShapeError
from .utils import counters

_BACKENDS = {}


def register_backend(fn=None, *, name=None):
    """Register ``fn`` under ``name`` (default: its ``__name__``); usable as a decorator."""
    if fn is None:
        return lambda f: register_backend(f, name=name)
    _BACKENDS[name or fn.__name__] = fn
    return fn


def lookup_backend(backend):
    """Resolve a backend given by name or as a callable."""
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        raise ValueError(f"unknown tinydynamo backend {backend!r}; registered: {sorted(_BACKENDS)}")
    return _BACKENDS[backend]


def list_backends():
    return sorted(_BACKENDS)


@register_backend
def eager(gm: torch.fx.GraphModule, example_inputs):
    """Run the captured FX graph as it is (chapter 3)."""
    return gm.forward


@register_backend(name="aot_eager")
def aot_eager(gm: torch.fx.GraphModule, example_inputs):
    """AOT autograd: joint graph, functionalization, partition; aten ops run eagerly (chapter 6)."""
    return aot_autograd(gm, example_inputs, fw_compiler=nop, bw_compiler=nop)


@register_backend(name="decomp_eager")
def decomp_eager(gm: torch.fx.GraphModule, example_inputs):
    """AOT autograd, then every aten op decomposed into prims run by their eager impls (chapter 7)."""
    return aot_autograd(gm, example_inputs, fw_compiler=run_prims_eagerly, bw_compiler=run_prims_eagerly)


def inductor_compiler(gm: torch.fx.GraphModule, example_inputs):
    """One aten graph (forward or backward) → prims → loop IR → fused C++ kernels (chapters 7-10).

    A graph with symbolic sizes gets kernels that take the sizes as arguments
    (``compile_fx_symbolic``, chapter 12)."""
    if any(is_symbolic(value) for value in example_inputs):
        return compile_fx_symbolic(gm, example_inputs)
    return compile_fx_inner(decompose(gm, example_inputs), example_inputs)


@register_backend(name="inductor")
def inductor(gm: torch.fx.GraphModule, example_inputs):
    """The full stack: AOT autograd with the min-cut partitioner, then each graph compiled by
    ``inductor_compiler``: C++/OpenMP kernels for CPU tensors."""
    return aot_autograd(
        gm,
        example_inputs,
        fw_compiler=inductor_compiler,
        bw_compiler=inductor_compiler,
        partition_fn=min_cut_rematerialization_partition,
    )


# Backends whose compiled graph works for every size of a graph traced with symbolic sizes: AOT
# autograd traces such a graph once with symbolic meta tensors, and inductor compiles kernels that
# take the sizes as arguments (``inductor_compiler``).
DYNAMIC_SHAPE_BACKENDS = {eager, aot_eager, decomp_eager, inductor}


def compiler_for_symbolic_graph(backend):
    """The compiler for a graph traced with symbolic sizes: ``backend`` itself if it compiles such
    graphs (``DYNAMIC_SHAPE_BACKENDS``), else one that specialises the graph to each distinct set
    of input shapes it is called with."""
    if backend not in DYNAMIC_SHAPE_BACKENDS:
        return shape_specialized(backend)

    def compile_graph(gm, example_inputs):
        try:
            return backend(gm, example_inputs)
        except SymbolicShapeError as error:  # traced for every size where it can be, else per shape
            counters["symbolic_fallbacks"] += 1
            trace_artifact("dynamic", lambda: f"compiling the graph once per input shape: {error}")
            return shape_specialized(backend)(without_symbolic_examples(gm), example_inputs)

    return compile_graph


def shape_specialized(backend):
    """``backend`` as a compiler of graphs with symbolic sizes: the graph is compiled again, by
    ``backend`` with the call's own inputs as example inputs, for each distinct input shape.
    Dynamo's guards still admit every size with one translation of the frame."""
    def compile_graph(gm, example_inputs):
        variants = SizeSpecializations(lambda args: backend(gm, list(args)))
        variants.variant(example_inputs)  # the first call's shapes, compiled now, as any backend does
        return variants

    return compile_graph


def without_symbolic_examples(gm):
    """A copy of ``gm`` whose placeholders carry no symbolic example values: AOT autograd then
    traces it with the concrete inputs it is given."""
    gm = copy.deepcopy(gm)
    for node in gm.graph.find_nodes(op="placeholder"):
        if is_symbolic(node.meta.get("example_value")):
            del node.meta["example_value"]
    return gm


def torch_compile_backend(gm: torch.fx.GraphModule, example_inputs):
    """The ``torch_dynamo_backends`` entry point: ``torch.compile(model, backend="tinydynamo")``.

    PyTorch's own Dynamo captures the graph; tinydynamo's most complete stack compiles it.
    Graphs with symbolic shapes, which Dynamo makes once a size changes (or with
    ``dynamic=True``), are traced once by AOT autograd for every size; inductor then compiles
    kernels that take the sizes as arguments where it can (see ``inductor_compiler``). A graph that a layer cannot compile
    (``NotImplementedError``: complex tensors, an op whose aten composite reads a value) runs
    eagerly, with a warning that names it, as with tinydynamo's frontend.
    """
    try:
        return inductor(gm, example_inputs)
    except NotImplementedError as error:  # what tinydynamo's own frontend would run eagerly
        warnings.warn(f"tinydynamo: this graph from torch.compile runs eagerly: {error}", stacklevel=2)
        return gm.forward

