"""Partitioners: split the joint graph into a forward graph and a backward graph (chapter 6).

The joint graph maps ``(primals..., tangents...)`` to ``(forward outputs..., gradients...)``.
A partitioner decides which values the forward saves for the backward, and returns

* the forward graph: ``primals -> (forward outputs..., saved values...)``
* the backward graph: ``(saved values..., tangents...) -> gradients``

``default_partition`` keeps the program's own split: the forward computes what the forward
outputs need, and saves every forward value the backward reads.
``min_cut_rematerialization_partition`` instead lets the backward *recompute* cheap forward
ops (views, pointwise ops) and chooses what to save with a minimum cut over the joint graph,
each value weighted by its size in bytes. PyTorch: ``torch/_functorch/partitioners.py``.

With symbolic sizes, the joint graph also computes sizes (``sym_size``, ``operator.mul``
... nodes, see ``symbolic.py``). Both partitioners compute them in the forward and save the
ones the backward reads, as ints after the saved tensors; they cost nothing to keep. Byte
sizes that weigh the cut are estimated from the sizes' hints (their example values).
"""
import math
import operator

import networkx as nx
import torch
import torch.fx as fx

from .symbolic import hint

aten = torch.ops.aten


def is_primal(node):
    """A joint graph input that the forward receives: a parameter, a buffer or a user input."""
    return node.op == "placeholder" and node.name.startswith("primals")


def is_tangent(node):
    """A joint graph input that the backward receives: the gradient of one forward output."""
    return node.op == "placeholder" and node.name.startswith("tangents")


def is_size(node):
    """A node computing a symbolic size (an int at run time, or a float made from sizes)."""
    return isinstance(node.meta.get("val"), (torch.SymInt, torch.SymFloat))


def joint_outputs(joint_gm, num_fwd_outputs):
    """(forward outputs, gradients): the joint graph's output nodes, split in two lists."""
    outputs = list(joint_gm.graph.output_node().args[0])
    return outputs[:num_fwd_outputs], outputs[num_fwd_outputs:]


def _ancestors(nodes, boundary=frozenset()):
    """``nodes`` and everything they depend on, without crossing ``boundary`` nodes."""
    seen = set()
    stack = [n for n in nodes if n not in boundary]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(n for n in node.all_input_nodes if n not in boundary)
    return seen


def _descendants(nodes):
    seen = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.users)
    return seen


def _extract_graph(joint_gm, inputs, outputs):
    """A GraphModule computing ``outputs`` from ``inputs``, copying the joint graph's nodes."""
    graph = fx.Graph()
    env = {}
    for node in inputs:
        env[node] = graph.placeholder(node.name)
        env[node].meta = dict(node.meta)
    needed = _ancestors(outputs, boundary=set(inputs))
    for node in joint_gm.graph.nodes:
        if node not in needed or node in env:
            continue
        if node.op == "placeholder":
            raise RuntimeError(f"tinydynamo.aot: {node.name} is needed but not an input")
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in outputs))
    return fx.GraphModule(joint_gm, graph)


def split_joint_graph(joint_gm, num_fwd_outputs, saved):
    """Build the forward and backward graphs once the saved values are chosen."""
    primals = [n for n in joint_gm.graph.nodes if is_primal(n)]
    tangents = [n for n in joint_gm.graph.nodes if is_tangent(n)]
    fw_outputs, grads = joint_outputs(joint_gm, num_fwd_outputs)
    order = {node: i for i, node in enumerate(joint_gm.graph.nodes)}
    saved = sorted(saved, key=lambda node: (is_size(node), order[node]))  # tensors, then sizes
    forward = _extract_graph(joint_gm, primals, fw_outputs + saved)
    backward = _extract_graph(joint_gm, saved + tangents, grads)
    return forward, backward


def default_partition(joint_gm, num_fwd_outputs):
    """Forward = what the forward outputs need; save every forward value the backward reads."""
    fw_outputs, grads = joint_outputs(joint_gm, num_fwd_outputs)
    forward = _ancestors(fw_outputs) | {n for n in joint_gm.graph.nodes if is_primal(n)}
    forward |= _sizes_of_primals(joint_gm)
    # Items of a multi-output op are free once the op ran; keep them with it so the
    # backward never needs the (unsaveable) tuple itself.
    forward |= {
        n for n in joint_gm.graph.nodes if n.target is operator.getitem and n.args[0] in forward
    }
    # Constants are part of the module: the backward can read them without saving them.
    boundary = {n for n in forward if n.op != "get_attr"}
    backward = _ancestors(grads, boundary=boundary)
    saved = {n for n in boundary if n in grads or any(u in backward for u in n.users)}
    return split_joint_graph(joint_gm, num_fwd_outputs, saved)


def _sizes_of_primals(joint_gm):
    """The size nodes computed from primals only: the forward computes them (the backward
    does not receive the primals to compute them from)."""
    tangent_closure = _descendants(n for n in joint_gm.graph.nodes if is_tangent(n))
    return {n for n in joint_gm.graph.nodes if is_size(n) and n not in tangent_closure}


# ------------------------------------------------------------------ the min-cut partitioner
# Cheap ops the backward may recompute, besides views and ops tagged pointwise.
RECOMPUTABLE_OPS = frozenset({
    aten.sum.default, aten.sum.dim_IntList, aten.mean.default, aten.mean.dim, aten.amax.default,
    aten._to_copy.default, aten.clone.default, aten._unsafe_view.default, aten.expand.default,
    aten.full.default, aten.zeros.default, aten.ones.default, aten.arange.start,
    aten.arange.default, aten.zeros_like.default, aten.full_like.default, aten.ones_like.default,
    aten.scalar_tensor.default, aten.empty.memory_format,
})


def nbytes(node):
    """Size in bytes of the tensor ``node`` computes; 0 for a non-tensor (e.g. a tuple)."""
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return hint(val.numel()) * val.element_size()
    return 0


def is_view(node):
    """True for an aten view op: its result shares memory with its first argument."""
    return isinstance(node.target, torch._ops.OpOverload) and node.target.is_view


def may_recompute(node):
    """May the backward compute ``node`` again instead of receiving it from the forward?

    Yes for constants, views, items of a multi-output op, and cheap ops (tagged pointwise, or
    in ``RECOMPUTABLE_OPS``), unless the op reads more than four times the bytes it returns:
    a reduction's small output is cheaper to save than its large input. No for graph inputs,
    for compute-bound ops (matmuls, convolutions, norms, softmax, ...) and for random ops,
    which would draw different numbers.
    """
    if node.op == "get_attr":
        return True
    if node.op != "call_function":
        return False
    if node.target is operator.getitem or is_view(node) or must_recompute(node):
        return True
    tags = node.target.tags
    if torch.Tag.nondeterministic_seeded in tags:
        return False
    if torch.Tag.pointwise not in tags and node.target not in RECOMPUTABLE_OPS:
        return False
    return nbytes(node) * 4 >= sum(nbytes(n) for n in node.all_input_nodes)


def must_recompute(node):
    """A node of a ``torch.utils.checkpoint`` region (tagged ``recompute``): never saved, so the
    backward computes it again, unless it is random (its value is saved: recomputing it would
    draw new numbers)."""
    if node.op == "call_function" and node.target is operator.getitem:
        return must_recompute(node.args[0])  # an item of a multi-output op: as random as the op
    return bool(node.meta.get("recompute")) and not (
        node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
        and torch.Tag.nondeterministic_seeded in node.target.tags)


def _capacity(node):
    """Cost of saving ``node``: its size in bytes.

    Views are never saved (their base is, and the view is re-made for free), and neither are
    non-tensors such as the tuple a multi-output op returns (its items are), nor the values of a
    checkpointed region. A symbolic size costs next to nothing.
    """
    if is_size(node):
        return 1
    if is_view(node) or not isinstance(node.meta.get("val"), torch.Tensor) or must_recompute(node):
        return math.inf
    return nbytes(node)


def _computations(gm):
    return [node for node in gm.graph.nodes if node.op != "output"]


def _flow_graph(joint_gm, num_fwd_outputs):
    """Each node is an edge in -> out of capacity = its size; cutting it means saving it.

    The source feeds the primals and every op that must run in the forward; the sink
    drains everything that depends on a tangent (it must run in the backward).
    """
    fw_outputs, grads = joint_outputs(joint_gm, num_fwd_outputs)
    required_fw = _ancestors(fw_outputs)
    tangent_closure = _descendants(n for n in joint_gm.graph.nodes if is_tangent(n))
    flow = nx.DiGraph()
    for node in _computations(joint_gm):
        if node in tangent_closure:
            flow.add_edge((node, "in"), "sink", capacity=math.inf)
            continue
        if node in grads:  # a gradient that does not depend on any tangent
            flow.add_edge((node, "out"), "sink", capacity=math.inf)
        if is_primal(node) or is_size(node) or (node in required_fw and not may_recompute(node)):
            flow.add_edge("source", (node, "in"), capacity=math.inf)
        flow.add_edge((node, "in"), (node, "out"), capacity=_capacity(node))
        for user in node.users:
            if user.op != "output":
                flow.add_edge((node, "out"), (user, "in"), capacity=math.inf)
    return flow


def min_cut_rematerialization_partition(joint_gm, num_fwd_outputs):
    """Save the cheapest set of values (in bytes) from which the backward can recompute the rest.

    PyTorch's version adds heuristics on top (distance to the backward, whether an op can be
    fused with its users); tinydynamo keeps the core: size weights and op categories.
    """
    flow = _flow_graph(joint_gm, num_fwd_outputs)
    _, (source_side, _) = nx.minimum_cut(flow, "source", "sink")
    saved = {
        node for node in _computations(joint_gm)
        if (node, "in") in source_side and (node, "out") not in source_side
    }
    return split_joint_graph(joint_gm, num_fwd_outputs, saved)


def _storage_base(node):
    """The node whose memory ``node`` lives in: follow view ops back to the viewed tensor."""
    while node.op == "call_function":
        if is_view(node):
            node = node.args[0]
        elif node.target is operator.getitem and is_view(node.args[0]):
            node = node.args[0].args[0]
        else:
            break
    return node


def saved_bytes(fw_gm, bw_gm, *, include_primals=True):
    """Bytes of memory the forward keeps alive for the backward (a partition's cost).

    The saved values are the backward graph's inputs other than tangents. A saved view
    keeps its base alive, so each distinct base counts once, at its full size. With
    ``include_primals=False`` the graph inputs (parameters, ...) that stay alive anyway
    do not count: what is left is the activation memory.
    """
    saved_names = {n.name for n in bw_gm.graph.find_nodes(op="placeholder") if not is_tangent(n)}
    saved = [n for n in fw_gm.graph.nodes if n.name in saved_names]
    bases = {_storage_base(n) for n in saved}
    return sum(nbytes(b) for b in bases if include_primals or not is_primal(b))
