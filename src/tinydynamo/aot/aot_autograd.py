"""aot_autograd: from a captured FX graph to a compiled, differentiable callable (chapter 6).

``aot_autograd(gm, example_inputs, fw_compiler=..., bw_compiler=..., partition_fn=...)``
follows PyTorch's ``torch/_functorch/aot_autograd.py`` step by step:

1. lift the graph module's parameters and buffers to graph inputs, so they are traced like
   any other input (and get gradients, and can be mutated);
2. capture: trace the program with the dispatch tracer, as a forward graph (inference) or as
   the joint forward + backward graph (training), plus the metadata the runtime needs;
3. partition the joint graph into a forward graph and a backward graph;
4. compile each with the given compiler, which has the backend signature;
5. return a ``RuntimeWrapper`` that runs them, through ``CompiledFunction`` when autograd
   is needed.

When the graph's inputs have symbolic sizes (``symbolic_inputs``), step 2 traces with them
and every graph computes for all sizes. The compilers then get, as example inputs, the
graph's placeholder values: meta tensors with symbolic sizes (each placeholder's
``meta["device"]`` says where the real tensor lives) and SymInts.

``aot_eager`` is the backend with compilers that run the aten graphs as they are.
``TINYDYNAMO_LOGS=aot`` prints the joint, forward and backward graphs.
"""
import contextlib
import functools

import torch
import torch.fx as fx

from .._logging import trace_artifact
from .graph_capture import capture
from .partitioners import default_partition
from .runtime_wrappers import RuntimeWrapper, ScalarSpecializedFunction
from .symbolic import is_symbolic
from .tracer import user_node_tags


@contextlib.contextmanager
def _swapped_module_tensors(module, tensors):
    """Temporarily make ``module.<name>`` return ``tensors[name]`` for parameters and buffers."""
    restore = []
    try:
        for name, tensor in tensors.items():
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name)
            slots = owner._parameters if attr in owner._parameters else owner._buffers
            restore.append((slots, attr, slots[attr]))
            slots[attr] = tensor
        yield
    finally:
        for slots, attr, tensor in reversed(restore):
            slots[attr] = tensor


class TaggingInterpreter(fx.Interpreter):
    """Runs the user's graph node by node; the aten nodes each node makes inherit its tags."""

    def run_node(self, n):
        with user_node_tags(n):
            return super().run_node(n)


def _lift_parameters_and_buffers(gm):
    """Return (tensors, fn): ``fn(*tensors, *inputs)`` runs ``gm(*inputs)`` with those tensors."""
    named = [
        *gm.named_parameters(remove_duplicate=False),
        *gm.named_buffers(remove_duplicate=False),
    ]
    lifted = list({id(t): t for _, t in named}.values())  # tied weights are lifted once
    position = {id(t): i for i, t in enumerate(lifted)}

    def flat_fn(*args):
        tensors = {name: args[position[id(t)]] for name, t in named}
        with _swapped_module_tensors(gm, tensors):
            if isinstance(gm, fx.GraphModule):  # node by node: an error names the node and its user line
                return TaggingInterpreter(gm).run(*args[len(lifted):])
            return gm(*args[len(lifted):])

    return lifted, flat_fn


def _log_graph(title, gm):
    trace_artifact("aot", lambda: f"{title}:\n{gm.print_readable(print_output=False)}")


def symbolic_inputs(gm, example_inputs):
    """Per input, its symbolic version (a tensor with SymInt sizes, a SymInt) or None; None
    if no input is symbolic. PyTorch's Dynamo passes SymInts among ``example_inputs``, and
    both Dynamos put the symbolic values in the placeholders' ``meta["example_value"]``."""
    placeholders = gm.graph.find_nodes(op="placeholder") if isinstance(gm, fx.GraphModule) else []
    recorded = [node.meta.get("example_value", node.meta.get("val")) for node in placeholders]
    recorded += [None] * (len(example_inputs) - len(recorded))
    symbolic = [example if is_symbolic(example) else value if is_symbolic(value) else None
                for example, value in zip(example_inputs, recorded)]
    return symbolic if any(v is not None for v in symbolic) else None


def _placeholder_values(gm):
    """A symbolic graph's example inputs: its placeholders' values (see the module docstring)."""
    return [node.meta["val"] for node in gm.graph.find_nodes(op="placeholder")]


def _example_values(gm):
    """Zero tensors laid out like a graph's placeholders, for the compiler of the backward."""
    if any(is_symbolic(value) for value in _placeholder_values(gm)):
        return _placeholder_values(gm)
    examples = []
    for node in gm.graph.find_nodes(op="placeholder"):
        val, device = node.meta["val"], node.meta["device"]
        example = torch.empty_strided(val.shape, val.stride(), dtype=val.dtype, device=device)
        examples.append(example.zero_())
    return examples


def _switches_grad_on(gm):
    """Does the program turn grad mode on itself (``with torch.enable_grad():``, which Dynamo
    records as ``torch._C._set_grad_enabled(True)``)? Under an outer ``no_grad`` its outputs
    may then require grad."""
    return isinstance(gm, fx.GraphModule) and any(
        node.op == "call_function" and node.target is torch._C._set_grad_enabled and node.args[0]
        for node in gm.graph.nodes)


def aot_autograd(gm, example_inputs, *, fw_compiler, bw_compiler=None, partition_fn=None):
    """Compile ``gm`` ahead of time for autograd; returns a callable taking the same inputs."""
    compile_fn = functools.partial(_aot_autograd, gm, fw_compiler=fw_compiler,
                                   bw_compiler=bw_compiler or fw_compiler,
                                   partition_fn=partition_fn or default_partition)
    compiled = compile_fn(example_inputs)
    if compiled.meta.scalar_inputs:  # values read with .item() are baked in: one variant per value
        return ScalarSpecializedFunction(compile_fn, example_inputs, compiled)
    return compiled


def _aot_autograd(gm, example_inputs, *, fw_compiler, bw_compiler, partition_fn):
    lifted, flat_fn = _lift_parameters_and_buffers(gm)
    inputs = [*lifted, *example_inputs]
    with_backward = (torch.is_grad_enabled() or _switches_grad_on(gm)) and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in inputs
    )
    symbolic = symbolic_inputs(gm, example_inputs)
    if symbolic is not None:
        symbolic = [None] * len(lifted) + symbolic
    captured = capture(flat_fn, inputs, with_backward=with_backward, symbolic_inputs=symbolic)
    if symbolic is not None:  # the compilers get the traced values (primals come first)
        inputs = _placeholder_values(captured.graph_module)[:len(inputs)]
    if not captured.is_joint:
        _log_graph("forward graph (inference)", captured.graph_module)
        forward = fw_compiler(captured.graph_module, inputs)
        return RuntimeWrapper(captured.meta, forward, None, lifted)
    _log_graph("joint graph", captured.graph_module)
    fw_gm, bw_gm = partition_fn(captured.graph_module, captured.meta.num_graph_outputs)
    _log_graph("forward graph", fw_gm)
    _log_graph("backward graph", bw_gm)
    forward = fw_compiler(fw_gm, inputs)
    backward = bw_compiler(bw_gm, _example_values(bw_gm))
    return RuntimeWrapper(captured.meta, forward, backward, lifted)


def nop(gm: fx.GraphModule, example_inputs):
    """A compiler that does nothing: run the aten graph as it is."""
    return gm.forward


def aot_eager(gm: fx.GraphModule, example_inputs, partition_fn=None):
    """The "aot_eager" backend: AOT autograd with aten graphs run eagerly."""
    return aot_autograd(
        gm, example_inputs, fw_compiler=nop, bw_compiler=nop, partition_fn=partition_fn
    )
