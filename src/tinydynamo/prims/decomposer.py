"""decompose(): rewrite an aten graph into a prim graph (book chapter 7, "Prims").

The aten graph (from AOT autograd: flat tensor inputs, a flat tuple of outputs, no in-place ops)
is run by a :class:`DecompositionInterpreter` on ProxyTensors instead of real tensors. Each aten
node runs its decomposition, whose prim calls the PrimTracer records into a new graph, with a
meta tensor in every node's ``meta["val"]``. What comes out is an ordinary GraphModule whose
call_function targets are prims, plus the ``EXTERN_FALLBACKS`` and the implicit fallbacks: aten
ops without a decomposition, which backends call as library kernels (``TINYDYNAMO_LOGS=prims``
names them, and ``stats()["implicit_fallbacks"]`` counts them).

A graph with symbolic sizes (from AOT autograd, see ``aot/symbolic.py``) decomposes the same
way. Its size nodes (``sym_size``, ``operator.mul``...) are evaluated, not decomposed: with
symbolic example inputs the prim graph computes the same sizes; with concrete example inputs
they become ints and the prim graph is static (inductor specialises graphs that way).

``decomp_eager`` is the backend that stops here and runs the prims' eager implementations.
"""
import operator

import torch
import torch.fx
from torch.utils._pytree import tree_leaves

from .. import config
from .._logging import trace_artifact
from ..aot.symbolic import SIZE_OPS, bind_symbols, evaluate, is_symbolic
from ..utils import counters
from .primitives import Prim, suggest_memory_format
from .prim_tracer import PrimTracer, ProxyTensor
from .registry import (EXTERN_FALLBACKS, DecompositionDeclined, DecompositionError, copy_variant, decomposition_table,
                       implicit_fallback_problem, involves_complex, is_view_op, run_decomposition)


def _source(node):
    """The user's source line a node came from, when the tracer recorded one."""
    lines = [line.strip() for line in node.meta.get("stack_trace", "").splitlines()
             if line.strip().startswith("File")]
    return f" from {lines[-1]}" if lines else ""


def _problem(node):
    """Why decompose() cannot handle this node, or None if it can."""
    if node.op in ("call_method", "call_module"):
        return f"{node.op} {node.target!r}: decompose() takes aten-level graphs"
    if node.op != "call_function":
        return None
    target = node.target
    if target is operator.getitem or isinstance(target, Prim) or target in EXTERN_FALLBACKS or target in SIZE_OPS:
        return None
    if not isinstance(target, torch._ops.OpOverload):
        return f"{target!r} is not an aten op"
    if target._schema.is_mutable:
        return f"{target} mutates its inputs (the graph must be functionalized)"
    if _node_involves_complex(node):
        return complex_fallback_problem(target)
    if target not in decomposition_table:
        return implicit_fallback_problem(target)
    return None


def _node_involves_complex(node):
    values = [node.meta.get("val"), *(a.meta.get("val") for a in node.all_input_nodes)]
    return involves_complex((node.args, node.kwargs, values))


def check_supported(gm):
    """Raise one error listing every node of gm that cannot be decomposed, with its source."""
    problems = [f"{node.name}: {problem}{_source(node)}"
                for node in gm.graph.nodes if (problem := _problem(node))]
    if problems:
        raise DecompositionError("cannot decompose to prims:\n  " + "\n  ".join(problems))


class DecompositionInterpreter(torch.fx.Interpreter):
    """Runs an aten graph on ProxyTensors; each aten node runs its decomposition."""

    def __init__(self, gm, tracer, bindings, concrete):
        super().__init__(gm)
        self.tracer = tracer
        self.bindings = bindings  # {size symbol: int} when decomposing for concrete inputs
        self.concrete = concrete  # the example inputs have no symbolic size

    def run_node(self, node):
        self.node = node
        # Every prim node recorded while decomposing this aten node remembers where it came from.
        self.tracer.origin = {"aten_node": node.name,
                              "original_aten": node.target if node.op == "call_function" else None}
        if "stack_trace" in node.meta:
            self.tracer.origin["stack_trace"] = node.meta["stack_trace"]
        result = super().run_node(node)
        _record_memory_format(result, node.meta.get("val"))
        return result

    def placeholder(self, target, args, kwargs):
        example = super().placeholder(target, args, kwargs)
        # A symbolic example is a meta tensor; the node knows the real device.
        return self.tracer.placeholder(target, example, self.node.meta.get("device"))

    def get_attr(self, target, args, kwargs):
        return self.tracer.constant(target.replace(".", "_"), super().get_attr(target, args, kwargs))

    def call_function(self, target, args, kwargs):
        if target is operator.getitem:
            return args[0][args[1]]
        if target in SIZE_OPS:
            return compute_size(target, args)
        if isinstance(target, Prim):
            return target(*args, **kwargs)
        if target in EXTERN_FALLBACKS:
            return self.tracer.record_extern(target, args, kwargs, self.traced_val())
        if involves_complex((args, kwargs, self.node.meta.get("val"))):
            return self.complex_fallback(target, args, kwargs)
        if target not in decomposition_table:  # check_supported() allowed it as an implicit fallback
            return self.implicit_fallback(target, args, kwargs, "has no decomposition")
        recorded_before = len(self.tracer.graph.nodes)
        try:
            return run_decomposition(target, args, kwargs)
        except DecompositionDeclined as declined:
            if implicit_fallback_problem(target) is not None:
                raise
            self.tracer.erase_nodes_after(recorded_before)  # what it recorded before declining
            return self.implicit_fallback(target, args, kwargs, f"declined these arguments ({declined})")

    def complex_fallback(self, target, args, kwargs):
        """The prims have no complex dtypes, so an op on complex tensors (LLaMA's rotary embedding:
        view_as_complex, a complex product, view_as_real) runs as an extern aten kernel, a view op
        as its copy variant."""
        problem = complex_fallback_problem(target)
        if problem is not None:
            raise DecompositionError(problem)
        return self.implicit_fallback(target, args, kwargs, "works on complex tensors")

    def implicit_fallback(self, target, args, kwargs, why):
        """``target`` as an extern kernel; a view op as its copy variant, whose output is new,
        contiguous memory of the view's shape. (Aten's meta kernels cannot run on the prim graph's
        symbolic sizes, so the traced value describes the output wherever there is one.)"""
        counters["implicit_fallbacks"] += 1
        view = is_view_op(target)
        extern = copy_variant(target) if view else target
        trace_artifact("prims", lambda: f"implicit fallback: {target} {why}; it runs as the extern (aten) kernel {extern}")
        traced = self.traced_val()
        if view and traced is not None:
            traced = _map_tensors(lambda v: torch.empty(v.shape, dtype=v.dtype, device="meta"), traced)
        return self.tracer.record_extern(extern, args, kwargs, traced)

    def traced_val(self):
        """The node's traced value, with the sizes of this decomposition's inputs; None (the op's
        meta kernel then computes it) when those inputs do not determine all its symbols (a
        backward graph whose inputs carry ``s0 // 9`` but not ``s0``)."""
        val = self.node.meta.get("val")
        if self.concrete and not _free_symbols(val) <= set(self.bindings):
            return None
        return _map_tensors(lambda v: concrete_layout(v, self.bindings), val)

    def output(self, target, args, kwargs):
        self.tracer.output(args[0])


def _record_memory_format(result, val):
    """Prims compute values, not layouts. Where eager lays a value out channels-last (the ReLU
    after a channels-last convolution), its prim node says so, and the backend keeps that layout
    for the buffer it stores the value in. The first aten node that yields a prim node decides."""
    if isinstance(result, ProxyTensor) and isinstance(val, torch.Tensor):
        memory_format = suggest_memory_format(val)
        if memory_format is not torch.contiguous_format:
            result.node.meta.setdefault("memory_format", memory_format)


def complex_fallback_problem(op):
    """Why ``op`` on complex tensors cannot run as an extern kernel (the prims have no complex
    dtypes), or None."""
    if not config.implicit_fallbacks:
        return f"{op} works on complex tensors, which no prim takes"
    if is_view_op(op) and copy_variant(op) is None:
        return f"{op} on complex tensors: a view op with no copy variant"
    return None


def compute_size(target, args):
    """Run a size node of a symbolic graph (``sym_size``, ``operator.mul``...) on its values."""
    if target is torch.ops.aten.sym_size.int:
        return args[0].shape[args[1]]
    if target is torch.ops.aten.sym_stride.int:
        return args[0].stride(args[1])
    if target is torch.ops.aten.sym_numel.default:
        return args[0].numel()
    return target(*args)


def concrete_layout(value, bindings):
    """A meta tensor like ``value`` with its symbolic sizes and strides computed from
    ``bindings``; ``value`` itself when there are no bindings (or nothing symbolic)."""
    if not bindings or not isinstance(value, torch.Tensor) or not is_symbolic(value):
        return value
    shape = [evaluate(s, bindings) for s in value.shape]
    strides = [evaluate(s, bindings) for s in value.stride()]
    return torch.empty_strided(shape, strides, dtype=value.dtype, device="meta")


def _free_symbols(value):
    """The size symbols in the shapes and strides of the tensors in ``value``."""
    sizes = [s for t in tree_leaves(value) if isinstance(t, torch.Tensor) for s in (*t.shape, *t.stride())]
    return set().union(*(s.node.expr.free_symbols for s in sizes if isinstance(s, torch.SymInt)))


def _map_tensors(fn, value):
    if isinstance(value, (tuple, list)):
        return type(value)(_map_tensors(fn, v) for v in value)
    return fn(value) if isinstance(value, torch.Tensor) else value


def decompose(gm: torch.fx.GraphModule, example_inputs) -> torch.fx.GraphModule:
    """The prim graph computing what the aten graph ``gm`` computes on inputs like example_inputs."""
    check_supported(gm)
    tracer = PrimTracer()
    placeholders = [node.meta.get("val") for node in gm.graph.find_nodes(op="placeholder")]
    bindings = bind_symbols(placeholders, example_inputs)
    with tracer:
        concrete = not any(is_symbolic(x) for x in example_inputs)
        DecompositionInterpreter(gm, tracer, bindings, concrete).run(*example_inputs, enable_io_processing=False)
    _keep_output_strides(gm.graph, tracer.graph, bindings, concrete)
    prim_gm = torch.fx.GraphModule(tracer.constants, tracer.graph, class_name="PrimGraph")
    trace_artifact("prims", lambda: prim_gm.print_readable(print_output=False))
    return prim_gm


def _keep_output_strides(aten_graph, prim_graph, bindings, concrete):
    """Prims compute values, not layouts: record the strides eager gives each output (the aten
    graph's ``meta["val"]``), for the backend to follow, as TorchInductor does."""
    aten_output = next(iter(reversed(aten_graph.nodes)))
    prim_output = next(iter(reversed(prim_graph.nodes)))
    prim_vals = [getattr(p, "meta", {}).get("val") for p in tree_leaves(prim_output.args[0])]
    vals = [getattr(a, "meta", {}).get("val") for a in tree_leaves(aten_output.args[0])]
    # an output whose symbols these inputs do not determine: the layout the prims computed
    vals = [prim if concrete and not _free_symbols(v) <= set(bindings) else concrete_layout(v, bindings)
            for v, prim in zip(vals, prim_vals)]
    prim_output.meta["original_output_strides"] = [
        tuple(v.stride()) if isinstance(v, torch.Tensor) else None for v in vals]


def decomp_eager(gm: torch.fx.GraphModule, example_inputs):
    """Backend: decompose to prims and run the prim graph with the prims' eager implementations."""
    return decompose(gm, example_inputs)
