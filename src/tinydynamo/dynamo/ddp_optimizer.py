"""DDPOptimizer: a graph captured under DistributedDataParallel is split at its gradient buckets
(book chapter 14, "Compiling distributed programs").

DDP overlaps gradient communication with the backward. It groups the parameters into buckets (in
the order their gradients become ready; the first bucket holds about 1 MiB, the others
``bucket_cap_mb``), and starts a bucket's all-reduce as soon as every gradient in it is ready,
while autograd goes on computing the rest. A compiled graph is a single autograd node, though:
all its gradients appear together at the end of its backward, so no all-reduce can start early.

As PyTorch 2's DDPOptimizer does, ``DDPOptimizer`` splits the graph into pieces that each hold
about one bucket of parameters, and compiles each piece with the backend on its own; each is then
its own autograd node. ``bucket_nodes`` walks the graph backwards (the order in which the backward
runs), adding each node to the current bucket and counting the bytes of the parameters it uses;
once a bucket is full, the next node starts a new one. In the backward, the last piece runs first
and produces the first bucket's gradients, and DDP all-reduces them while the earlier pieces
compute theirs.

``split_graph`` builds one GraphModule per bucket: a piece takes as inputs the values it uses from
the graph's inputs or from earlier pieces, and returns those that later pieces or the graph's
output need. ``SplitGraphRunner`` runs the pieces in order; each piece is compiled the first time it
runs, with the real tensors it receives as example inputs (they exist only then).
"""
import dataclasses
import threading

import torch
import torch.distributed as dist
import torch.fx
from torch.nn.parallel import DistributedDataParallel

from .._logging import trace_artifact
from ..utils import counters


def active_ddp_module():
    """The DistributedDataParallel module whose forward is running, if any: DDP sets it around the
    call of the module it wraps, which is where the compiled frames run."""
    return DistributedDataParallel._get_active_ddp_module()


@dataclasses.dataclass
class Bucket:
    nodes: list = dataclasses.field(default_factory=list)  # in reverse graph order
    params: list = dataclasses.field(default_factory=list)  # the placeholders of its parameters
    size: int = 0  # bytes of those parameters


class DDPOptimizer:
    """A backend that splits each graph at ``ddp``'s bucket boundaries and compiles the pieces
    with ``backend``."""

    def __init__(self, ddp, backend):
        self.backend = backend
        self.bucket_cap = ddp.bucket_bytes_cap
        # DDP's first bucket is small (1 MiB) unless the user set bucket_cap_mb, so that the
        # first all-reduce starts as early as possible.
        self.first_bucket_cap = dist._DEFAULT_FIRST_BUCKET_BYTES if ddp.bucket_bytes_cap_default \
            else ddp.bucket_bytes_cap
        self.ignored = {id(p) for name, p in ddp.module.named_parameters() if name in ddp.parameters_to_ignore}

    def __call__(self, gm, example_inputs):
        params = {node: value for node, value in zip(gm.graph.find_nodes(op="placeholder"), example_inputs)
                  if self.is_bucketed(value)}
        buckets = bucket_nodes(gm.graph, params, self.first_bucket_cap, self.bucket_cap)
        if switches_grad_mode(gm.graph):
            buckets = [Bucket(sum((b.nodes for b in buckets), []), sum((b.params for b in buckets), []),
                              sum(b.size for b in buckets))]
        trace_artifact("ddp_graphs", lambda: describe_buckets(buckets, params, self.bucket_cap))
        if len(buckets) == 1:
            return self.backend(gm, example_inputs)
        pieces = split_graph(gm, [bucket.nodes[::-1] for bucket in reversed(buckets)])
        counters["graphs"] += len(pieces) - 1  # each piece is a graph of its own
        for i, piece in enumerate(pieces):
            trace_artifact("ddp_graphs", lambda: f"piece {i}\n{piece.module.print_readable(print_output=False)}")
        return SplitGraphRunner(pieces, self.backend, gm.graph)

    def is_bucketed(self, value):
        return isinstance(value, torch.nn.Parameter) and value.requires_grad and id(value) not in self.ignored


def bucket_nodes(graph, params, first_bucket_cap, bucket_cap):
    """The graph's computation nodes grouped into buckets, walking backwards from the output:
    ``buckets[0]`` holds the last nodes of the graph. ``params`` maps the placeholders of
    DDP's parameters to their values; each is counted in the bucket of its last user."""
    buckets = [Bucket()]
    counted = set()
    for node in reversed(graph.nodes):
        if node.op in ("placeholder", "output"):
            continue
        cap = first_bucket_cap if len(buckets) == 1 else bucket_cap
        if buckets[-1].size >= cap and feeds_later_nodes(buckets[-1], buckets):
            buckets.append(Bucket())
        bucket = buckets[-1]
        bucket.nodes.append(node)
        for param in node.all_input_nodes:
            if param in params and param not in counted:
                counted.add(param)
                bucket.params.append(param)
                bucket.size += params[param].numel() * params[param].element_size()
    if len(buckets) > 1 and not buckets[-1].params:  # a preamble without parameters joins the next
        preamble = buckets.pop()
        buckets[-1].nodes += preamble.nodes
    return buckets


def switches_grad_mode(graph):
    """Whether the graph turns grad mode on or off (``with torch.no_grad()`` in the forward): such
    a graph stays whole, since a piece would leave the mode switched for the next one."""
    return any(node.target is torch._C._set_grad_enabled for node in graph.nodes)


def feeds_later_nodes(bucket, buckets):
    """Whether some node of ``bucket`` is used by the output or by a bucket already closed: a piece
    that returns nothing would be dead code, and could not be split off."""
    inside = set(bucket.nodes)
    return any(user.op == "output" or user not in inside for node in bucket.nodes for user in node.users)


@dataclasses.dataclass
class GraphPiece:
    module: torch.fx.GraphModule
    inputs: list  # nodes of the original graph whose values it takes, in placeholder order
    outputs: list  # nodes of the original graph whose values it returns


def split_graph(gm, groups):
    """One GraphPiece per group of nodes (the groups in graph order, each in graph order)."""
    group_of = {node: i for i, group in enumerate(groups) for node in group}
    later_users = {node: {group_of.get(user, len(groups)) for user in node.users} for node in group_of}
    return [make_piece(gm, group, i, group_of, later_users) for i, group in enumerate(groups)]


def make_piece(gm, group, index, group_of, later_users):
    graph = torch.fx.Graph()
    env = {}

    def value_of(node):
        if node not in env:  # a graph input, or a value an earlier piece returns
            env[node] = graph.placeholder(node.name)
            inputs.append(node)
        return env[node]

    inputs = []
    for node in group:
        env[node] = graph.node_copy(node, value_of)
    outputs = [node for node in group if any(user_group > index for user_group in later_users[node])]
    graph.output(tuple(env[node] for node in outputs))
    return GraphPiece(torch.fx.GraphModule(gm, graph), inputs, outputs)


class SplitGraphRunner:
    """Runs the pieces in order, passing each the values it needs; each piece is compiled by the
    backend the first time it runs."""

    def __init__(self, pieces, backend, graph):
        self.pieces = pieces
        self.backend = backend
        self.compiled = [None] * len(pieces)
        self.lock = threading.Lock()
        self.placeholders = list(graph.find_nodes(op="placeholder"))
        self.output = graph.output_node().args[0]

    def __call__(self, *args):
        env = dict(zip(self.placeholders, args))
        for i, piece in enumerate(self.pieces):
            values = [env[node] for node in piece.inputs]
            env.update(zip(piece.outputs, self.compiled_piece(i, values)(*values)))
        return torch.fx.node.map_arg(self.output, env.__getitem__)

    def compiled_piece(self, i, example_inputs):
        with self.lock:  # the first call may come from several threads at once
            if self.compiled[i] is None:
                self.compiled[i] = self.backend(self.pieces[i].module, list(example_inputs))
            return self.compiled[i]


def describe_buckets(buckets, params, bucket_cap):
    lines = [f"DDPOptimizer: {len(buckets)} bucket(s), bucket_cap {bucket_cap} bytes, "
             "listed in backward order (the first is all-reduced first)"]
    for i, bucket in enumerate(buckets):
        names = ", ".join(node.name for node in bucket.params) or "(no parameters)"
        lines.append(f"  bucket {i}: {bucket.size} bytes, {len(bucket.nodes)} nodes: {names}")
    return "\n".join(lines)
