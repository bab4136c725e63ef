"""fork_join: the bodies of ``torch.jit.fork`` compiled on their own and run concurrently
(book chapter 14, "Compiling distributed programs").

The translator (``variables/futures.py``) leaves ``fork`` and ``wait`` nodes in the frame's
graph: a fork node calls a body graph (a submodule) on values of the graph, and its wait node
hands back the body's results. Run as it is, that graph has eager's semantics: ``fork`` calls
the body then and there. This module makes the frame run it concurrently instead:

1. **Which forks may run concurrently** (``first_conflict``). A body runs from its fork to
   its wait while the calling thread goes on. That gives eager's results only if nothing that
   runs meanwhile (the graph's own nodes in between, other bodies) writes a tensor the body
   reads, or reads or writes one the body writes. What each op writes was recorded while it
   was traced, from the schemas of the aten ops it ran (``EffectRecorder``); an op that draws
   random numbers reads and writes the generator. A fork in conflict runs where eager runs
   it: its body is *inlined*, its nodes put in the graph at the fork (``inline_fork``). So is
   every fork of a graph traced with symbolic sizes: the pieces below would pass sizes to each
   other, which graphs here do not do.
2. **Cutting the graph** (``plan``). The graph is cut at every fork and wait into pieces,
   which run on the calling thread. The program is a list of steps in the graph's order:
   ``Piece`` (run a compiled piece), ``Fork`` (hand a compiled body to the thread pool),
   ``Wait`` (join it).
3. **Compiling** (``compile_graph_module``). Every piece and every body is a GraphModule of
   its own, compiled by the frame's backend. Its example inputs are the frame's real inputs
   where it reads one, and zeros laid out like the example value for a value another step
   computes (as AOT autograd does for a backward graph). A body that forks again is compiled
   the same way, recursively.

``ForkJoinProgram`` is what the transformed frame calls: it runs the steps, passing the values
that cross from step to step by node name.

Threads. A body runs on a pool of ``torch.get_num_interop_threads()`` threads, the size of the
pool on which TorchScript runs its forks, while the frame's thread runs its pieces and waits. A
body that forks and waits for a body no thread has started yet runs it itself, so bodies that
fork again cannot deadlock the pool. The concurrency is real because compiled code releases the GIL while
it computes: torch's kernels (the matmuls and convolutions inductor calls) release it, and so
does ctypes around every call of a generated C++ kernel.

Intra-op threads are left as they are. Each of those kernels may itself run in parallel on
``torch.get_num_threads()`` threads (OpenMP: ATen's loops over ``at::parallel_for``'s grain of
32768 elements, and inductor's loops over ``PARALLEL_MIN_ELEMENTS``, also 32768). The small
models that forks are for (an ensemble) have kernels below those sizes: they run on one thread,
so forks are what spreads them over the cores. A big kernel already uses every core, and forking
it beside another mostly oversubscribes them. Lowering the intra-op threads of the pool's
threads only was not an option: ``torch.set_num_threads`` sets the process's count (every
thread that starts later takes it), and the generated kernels read their OpenMP runtime's
per-thread default. The user keeps control of both counts (``torch.set_num_threads``,
``torch.set_num_interop_threads``), as with TorchScript.
"""
import concurrent.futures
import dataclasses
import operator
import re
import threading

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

from .._logging import trace_artifact

# Keys, besides tensor storages, in the sets of what an op reads and writes.
RNG = "the random number generator"
INPUTS = "the frame's inputs"  # they may share memory in ways the example values do not show


def fork(body, *args):
    """The target of a fork node. Run as traced, the graph forks as eager does: at once."""
    return body(*args)


def wait(results):
    """The target of a wait node: the forked body's results."""
    return results


def is_fork(node):
    return node.op == "call_function" and node.target is fork


def has_forks(gm):
    return any(is_fork(node) for node in gm.graph.nodes)


# --- what an op writes, recorded while tracing ------------------------------------------------------


class EffectRecorder(TorchDispatchMode):
    """Active while the translator runs an op on meta tensors (``variables/tensor.trace_op``),
    when the op may run concurrently: records the tensors its aten ops write (arguments their
    schemas mark ``Tensor(a!)``: ``add_``'s self, an ``out=``) and whether they draw random numbers
    (the ``nondeterministic_seeded`` tag). ``annotate`` keeps that in the op's node."""

    def __init__(self):
        super().__init__()
        self.writes = []
        self.random = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.random |= torch.Tag.nondeterministic_seeded in func.tags
        for i, argument in enumerate(func._schema.arguments):
            if argument.alias_info is not None and argument.alias_info.is_write:
                value = args[i] if i < len(args) else kwargs.get(argument.name)
                self.writes += [t for t in (value if isinstance(value, (list, tuple)) else [value])
                                if isinstance(t, torch.Tensor)]
        return func(*args, **kwargs)

    def annotate(self, node):
        if self.writes:
            node.meta["writes"] = self.writes  # meta tensors: their storages say what is written
        if self.random:
            node.meta["random"] = True


def effects(gm, node, key):
    """(reads, writes) of ``node`` of ``gm``'s graph: sets of keys (``key(tensor)``). A fork
    reads and writes what its body's nodes do."""
    if is_fork(node):
        body = gm.get_submodule(node.args[0].target)
        reads, writes = set(), set()
        for inner in body.graph.nodes:
            inner_reads, inner_writes = effects(body, inner, key)
            reads |= inner_reads
            writes |= inner_writes
        return reads, writes
    if node.op not in ("call_function", "call_method"):
        return set(), set()
    values = [arg.meta.get("example_value") for arg in node.all_input_nodes]
    reads = {key(v) for v in values if isinstance(v, torch.Tensor)}
    writes = {key(t) for t in node.meta.get("writes", ())}
    if node.meta.get("random"):
        reads.add(RNG)
        writes.add(RNG)
    return reads, writes


def storage_key(gm):
    """``key(tensor)`` for ``effects``: its storage, or ``INPUTS`` for any of the frame's inputs
    (``gm``'s placeholders): two inputs may be views of one tensor that the trace saw apart."""
    inputs = {storage(node.meta["example_value"]) for node in gm.graph.find_nodes(op="placeholder")
              if isinstance(node.meta.get("example_value"), torch.Tensor)}

    def key(tensor):
        return INPUTS if storage(tensor) in inputs else storage(tensor)

    return key


def storage(tensor):
    return StorageWeakRef(tensor.untyped_storage())


def first_conflict(gm, key):
    """The first fork of ``gm``'s graph whose body may not run concurrently, and why; None if
    every body may. What runs while a body is outstanding: the nodes between its fork and its
    wait, and the bodies forked there (a body forked earlier and waited for later finds this
    one between its own fork and wait)."""
    nodes = list(gm.graph.nodes)
    for start, node in enumerate(nodes):
        if not is_fork(node):
            continue
        reads, writes = effects(gm, node, key)
        waits = [nodes.index(user) for user in node.users]
        for other in nodes[start + 1:min(waits, default=len(nodes))]:
            other_reads, other_writes = effects(gm, other, key)
            clash = (writes & (other_reads | other_writes)) | (reads & other_writes)
            if clash:
                what = "random numbers" if RNG in clash else "a tensor"
                return node, f"{describe(other)} uses {what} that the body writes, or writes {what} it reads"
    return None


def describe(node):
    if is_fork(node):
        return f"the fork at {user_line(node)}"
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", node.target)
    return f"{name} at {user_line(node)}"


def user_line(node):
    """The user's file:line that a node was traced from (the innermost frame of its stack)."""
    found = re.findall(r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace", ""))
    return f"{found[-1][0]}:{found[-1][1]}" if found else "an unknown line"


# --- inlining a fork: running it where eager does --------------------------------------------------


def inline_fork(gm, node):
    """Put the body of the fork ``node`` into ``gm``'s graph at the fork, in place of the fork
    and its wait: the body then runs at the fork, as in eager."""
    graph, attr = gm.graph, node.args[0]
    body = gm.get_submodule(attr.target)
    env = dict(zip(body.graph.find_nodes(op="placeholder"), node.args[1:]))
    with graph.inserting_before(node):
        for inner in body.graph.nodes:
            if inner.op == "placeholder":
                continue
            if inner.op == "output":
                results = [env[result] for result in inner.args[0]]
            elif inner.op == "get_attr":  # the body forks again: that body moves up with it
                name = free_name(gm, "fork_body")
                gm.add_submodule(name, body.get_submodule(inner.target))
                env[inner] = graph.get_attr(name)
                env[inner].meta = dict(inner.meta)
            else:
                env[inner] = graph.node_copy(inner, env.__getitem__)
    for joined in list(node.users):  # the wait node, and its getitem nodes
        for item in list(joined.users):
            item.replace_all_uses_with(results[item.args[1]])
            graph.erase_node(item)
        graph.erase_node(joined)
    graph.erase_node(node)
    graph.erase_node(attr)
    gm.delete_submodule(attr.target)
    gm.recompile()


def inline_all_forks(gm):
    while has_forks(gm):
        inline_fork(gm, next(n for n in gm.graph.nodes if is_fork(n)))


def free_name(gm, prefix):
    i = 0
    while hasattr(gm, f"{prefix}_{i}"):
        i += 1
    return f"{prefix}_{i}"


# --- the program: pieces, forks and waits -------------------------------------------------------


@dataclasses.dataclass
class Piece:
    """Run a compiled piece of the graph on this thread."""

    fn: object
    inputs: list  # names of the values it takes
    outputs: list  # names of the values it returns
    grad_mode: bool  # the grad mode it starts in (it ends in it too)

    def run(self, values):
        if torch.is_grad_enabled() != self.grad_mode:
            torch._C._set_grad_enabled(self.grad_mode)
        values.update(zip(self.outputs, self.fn(*[values[name] for name in self.inputs])))


@dataclasses.dataclass
class Fork:
    """Hand a compiled body to the thread pool; its Task is the value ``name``."""

    fn: object
    inputs: list
    name: str
    grad_mode: bool  # grad mode is per thread: the body's is the one at the fork

    def run(self, values):
        values[self.name] = Task(self.fn, [values[name] for name in self.inputs], self.grad_mode)


@dataclasses.dataclass
class Wait:
    """Join the Task ``name``; its results are the values ``outputs`` ({index: name})."""

    name: str
    outputs: dict

    def run(self, values):
        results = values.pop(self.name).join()
        values.update((name, results[i]) for i, name in self.outputs.items())


class Task:
    """One run of a forked body on the thread pool, in the forking thread's grad mode and
    inference mode (both are per thread)."""

    def __init__(self, fn, args, grad_mode):
        self.fn, self.args, self.grad_mode = fn, args, grad_mode
        self.inference_mode = torch.is_inference_mode_enabled()
        self.future = thread_pool().submit(self.run)

    def run(self):
        outer, running.body = getattr(running, "body", False), True
        try:
            with torch.inference_mode(self.inference_mode), torch.set_grad_enabled(self.grad_mode):
                return self.fn(*self.args)
        finally:
            running.body = outer

    def join(self):
        """The body's results. A body waiting for one that no thread has started yet runs it
        itself: a pool whose threads all wait could never run it. The frame's own thread just
        waits: running bodies too, it would put one thread more than the pool's to work."""
        if getattr(running, "body", False) and self.future.cancel():
            return self.run()
        return self.future.result()


running = threading.local()  # .body: whether this thread is running a forked body


class ForkJoinProgram:
    """The compiled graph of a frame that forks: its steps, run in order on the calling thread,
    with the values that cross from step to step kept by node name."""

    def __init__(self, inputs, steps, outputs, grad_mode):
        self.inputs = inputs
        self.steps = steps
        self.outputs = outputs
        self.grad_mode = grad_mode  # the frame's, restored at the end

    def __call__(self, *args):
        values = dict(zip(self.inputs, args))
        try:
            for step in self.steps:
                step.run(values)
        except BaseException:
            for task in [v for v in values.values() if isinstance(v, Task)]:
                concurrent.futures.wait([task.future])  # no body outlives the call that forked it
            raise
        finally:
            torch._C._set_grad_enabled(self.grad_mode)
        return tuple(values[name] for name in self.outputs)

    def __str__(self):
        return "\n".join(describe_step(step) for step in self.steps)


def describe_step(step):
    if isinstance(step, Piece):
        return f"run a piece: ({', '.join(step.inputs)}) -> ({', '.join(step.outputs)})"
    if isinstance(step, Fork):
        return f"fork {step.name}: its body on the thread pool, on ({', '.join(step.inputs)})"
    return f"wait {step.name} -> ({', '.join(step.outputs.values())})"


_pool = None
_pool_lock = threading.Lock()


def thread_pool():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(torch.get_num_interop_threads(),
                                                          thread_name_prefix="tinydynamo-fork")
        return _pool


# --- compiling ------------------------------------------------------------------------------------


def compile_forks(gm, example_inputs, compile_graph, symbolic, grad_mode):
    """Compile ``gm``, the frame's graph with fork nodes, with ``compile_graph(gm, examples)``
    (the backend): as one graph if no fork may run concurrently, else as a ForkJoinProgram."""
    if symbolic:
        trace_artifact("graph", lambda: "every fork runs at its fork: the graph has symbolic sizes")
        inline_all_forks(gm)
        return compile_graph(gm, example_inputs)
    return compile_graph_module(gm, example_inputs, compile_graph, grad_mode, storage_key(gm))


def compile_graph_module(gm, example_inputs, compile_graph, grad_mode, key, body_of=None):
    """Compile ``gm`` (the frame's graph, or the body of the fork node ``body_of``) and the
    bodies it forks. Each graph the backend gets says in ``meta["fork_join"]`` what it is."""
    while (conflict := first_conflict(gm, key)) is not None:
        node, why = conflict
        trace_artifact("graph", lambda: f"{describe(node)} runs at the fork, as in eager: {why}")
        inline_fork(gm, node)
    label = f"the body forked at {user_line(body_of)}" if body_of is not None else "the frame's graph"
    steps = plan(gm, grad_mode)
    if steps is None:
        if has_forks(gm):
            trace_artifact("graph", lambda: "every fork runs at its fork: a value other than a tensor "
                           "would cross from piece to piece")
        inline_all_forks(gm)
        if body_of is not None:
            gm.meta["fork_join"] = label
        return compile_graph(gm, example_inputs)
    placeholders = gm.graph.find_nodes(op="placeholder")
    known = dict(zip(placeholders, example_inputs))
    pieces = sum(kind == "piece" for kind, *_ in steps)
    compiled = []
    for kind, what, mode in steps:
        if kind == "piece":
            inputs, outputs = piece_boundary(what)
            piece = extract(what, inputs, outputs, mode)
            count = sum(isinstance(step, Piece) for step in compiled) + 1
            piece.meta["fork_join"] = f"piece {count} of {pieces} of {label}, cut at its forks and waits"
            fn = compile_graph(piece, [example_input(n, known) for n in inputs])
            compiled.append(Piece(fn, names(inputs), names(outputs), mode))
        elif kind == "fork":
            body = gm.get_submodule(what.args[0].target)
            examples = [example_input(n, known) for n in what.args[1:]]
            fn = compile_graph_module(body, examples, compile_graph, mode, key, body_of=what)
            compiled.append(Fork(fn, names(what.args[1:]), what.name, mode))
        else:
            items = {item.args[1]: item.name for joined in what.users for item in joined.users}
            compiled.append(Wait(what.name, items))
    outputs = gm.graph.output_node().args[0]
    program = ForkJoinProgram(names(placeholders), compiled, names(outputs), grad_mode)
    trace_artifact("graph", lambda: f"the steps of {label}:\n{program}")
    return program


def plan(gm, grad_mode):
    """``gm``'s graph cut at its forks and waits: a list of ("piece", nodes, grad mode at its
    start), ("fork", fork node, its grad mode) and ("wait", fork node, None), in the graph's
    order, and a wait at the end for each fork never waited for. None if there is nothing to
    run concurrently, or if a value other than a tensor would cross between steps."""
    steps, piece, piece_mode, mode = [], [], grad_mode, grad_mode
    unjoined = []

    def end_piece():
        nonlocal piece
        while piece and is_grad_mode_switch(piece[-1]):
            piece.pop()  # the mode it sets is the next step's: the runtime sets it
        if piece:
            steps.append(("piece", piece, piece_mode))
        piece = []

    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        if is_fork(node):
            end_piece()
            steps.append(("fork", node, node.meta["grad_mode"]))
            unjoined.append(node)
        elif node.target is wait:
            end_piece()
            steps.append(("wait", node.args[0], None))
            unjoined.remove(node.args[0])
        elif node.target is operator.getitem and getattr(node.args[0], "target", None) is wait:
            continue  # an item of a wait's results: the Wait step gives it
        elif is_grad_mode_switch(node) and not piece:
            mode = node.args[0]  # a piece starts in the mode set before it, with no switch
        else:
            if not piece:
                piece_mode = mode
            piece.append(node)
            if is_grad_mode_switch(node):
                mode = node.args[0]
    end_piece()
    steps += [("wait", node, None) for node in unjoined]
    crossing = [n for _, what, _ in steps if isinstance(what, list) for n in piece_boundary(what)[0]]
    crossing += [n for kind, what, _ in steps if kind == "fork" for n in what.args[1:]]
    if not any(kind == "fork" for kind, *_ in steps) or not all(
            isinstance(n.meta.get("example_value"), torch.Tensor) for n in crossing):
        return None
    return steps


def is_grad_mode_switch(node):
    return node.op == "call_function" and node.target is torch._C._set_grad_enabled


def piece_boundary(nodes):
    """The values a piece reads from other steps, and those it computes for other steps."""
    inside = set(nodes)
    inputs = list(dict.fromkeys(arg for n in nodes for arg in n.all_input_nodes if arg not in inside))
    outputs = [n for n in nodes if any(user not in inside for user in n.users)]
    return inputs, outputs


def extract(nodes, inputs, outputs, grad_mode):
    """A GraphModule of the piece ``nodes``: ``inputs`` are its placeholders, ``outputs`` its
    results. It ends in the grad mode it starts in (``grad_mode``), as every graph does."""
    graph, env = torch.fx.Graph(), {}
    for node in inputs:
        env[node] = graph.placeholder(node.name)
        env[node].meta = dict(node.meta)
    mode = grad_mode
    for node in nodes:
        env[node] = graph.node_copy(node, env.__getitem__)
        if is_grad_mode_switch(node):
            mode = node.args[0]
    if mode != grad_mode:
        graph.call_function(torch._C._set_grad_enabled, (grad_mode,))
    graph.output(tuple(env[n] for n in outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def example_input(node, known):
    """The example input for the value of ``node``: the real one if the frame gets it as an
    input, else zeros laid out like its example value."""
    if node in known:
        return known[node]
    value = node.meta["example_value"]
    zeros = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=node.meta["device"]).zero_()
    return zeros.requires_grad_(value.requires_grad)


def names(nodes):
    return [node.name for node in nodes]
