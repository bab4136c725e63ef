"""The Scheduler: dependencies, fusion, dead buffers and buffer reuse (chapter 9, "Scheduling").

Input: the buffers of a lowered graph, in program order. Output: a list of *kernels*, each a
:class:`FusedSchedulerNode` (loop bodies that run inside one shared set of parallel outer loops)
or an :class:`ExternKernelSchedulerNode` (a library call), plus a memory plan.

How fusion works here (a small version of TorchInductor's ``scheduler.py``):

* Every SchedulerNode has loop ranges: a pointwise buffer of shape ``[4096, 1024]`` has ranges
  ``[4096, 1024]``, a row reduction of it has ranges ``[4096]`` and reduction ranges ``[1024]``.
* A kernel has *outer loops* shared by all its bodies: a common prefix of their ranges. Softmax
  over rows is one kernel: outer loop over the 4096 rows, then inside each row a max loop, a sum
  loop and the output loop.
* A node may join a kernel only if every buffer it reads from that kernel was written in the
  *same* outer iteration: the read's index, as a function of the outer variables, equals the
  write's. Otherwise (a column read across rows, a gather) the producer must finish first, in an
  earlier kernel. That check is what keeps fusion from changing results.
* A node joins the earliest kernel, at or after all its producers, that shares a buffer with it.
* A collective is issued as early as its inputs allow and waited for as late as its readers
  allow (chapter 14), so that the kernels in between overlap with the communication.

After fusion, buffers written and read only inside one kernel (like softmax's row max) do not
need memory at all: they become a scalar or a small per-row array in the generated C++
("local buffers"). The remaining intermediates share one workspace, reusing freed space.
"""
import math

import sympy

from .._logging import trace_artifact
from . import ir
from .dependencies import StarDep, extern_read_writes, extract_read_writes
from .sizevars import known

# A local buffer lives on the stack of each thread; larger ones stay in the workspace.
LOCAL_BUFFER_MAX_BYTES = 64 * 1024
ALIGNMENT = 64


class SchedulerNode:
    """A ComputedBuffer: its loop variables and what its body reads and writes."""

    def __init__(self, buffer):
        self.buffer = buffer
        self.name = buffer.name
        self.ranges = buffer.data.ranges
        self.reduction_ranges = buffer.data.reduction_ranges if buffer.is_reduction() else ()
        self.index = ir.index_vars("x", self.ranges)
        self.rindex = ir.index_vars("r", self.reduction_ranges)
        self.read_writes = extract_read_writes(buffer, self.index, self.rindex)

    def is_reduction(self):
        return self.buffer.is_reduction()

    def read_names(self):
        return {dep.name for dep in self.read_writes.reads}

    def output_names(self):
        return [self.name]

    def describe(self):
        if self.is_reduction():
            data = self.buffer.data
            return (f"{self.name} ({data.reduction_type} reduction {list(self.ranges)} "
                    f"over {list(self.reduction_ranges)})")
        return f"{self.name} (pointwise {list(self.ranges)})"


class ExternKernelSchedulerNode:
    """An extern kernel call; it cannot fuse with anything."""

    def __init__(self, kernel, output_names):
        self.kernel = kernel
        self.name = kernel.name
        self._output_names = output_names
        self.read_writes = extern_read_writes(kernel, output_names)

    def read_names(self):
        return {dep.name for dep in self.read_writes.reads}

    def output_names(self):
        return list(self._output_names)

    def describe(self):
        if isinstance(self.kernel, ir.CollectiveKernel):
            return f"{self.name} (issue {self.kernel.kernel_name()})"
        if isinstance(self.kernel, ir.WaitKernel):
            return f"{self.name} (wait for {self.kernel.collective.name})"
        return f"{self.name} (extern {self.kernel.kernel_name()})"


class FusedSchedulerNode:
    """Bodies that share ``outer`` loops: one generated kernel."""

    def __init__(self, node):
        self.nodes = [node]
        self.outer = tuple(node.ranges)
        self.local_buffers = {}  # name -> elements per outer iteration (1: a scalar)

    def read_names(self):
        return set().union(*(n.read_names() for n in self.nodes))

    def output_names(self):
        return [n.name for n in self.nodes]

    def node(self, name):
        return next((n for n in self.nodes if n.name == name), None)

    def describe(self):
        lines = [f"outer loops {list(self.outer)}: " + ", ".join(n.describe() for n in self.nodes)]
        if self.local_buffers:
            lines.append(f"    local buffers: {', '.join(self.local_buffers)}")
        return "\n".join(lines)


def common_prefix_length(a, b):
    n = 0
    while n < min(len(a), len(b)) and known(sympy.Eq, a[n], b[n]):
        n += 1
    return n


def read_is_within_iteration(writer, dep, depth):
    """True if ``dep`` (a read by a node sharing ``depth`` outer loops with ``writer``) only reads
    elements that ``writer`` writes in the same outer iteration."""
    if isinstance(dep, StarDep):
        return False
    outer = writer.index[:depth]
    write = writer.read_writes.writes[0].index
    read = dep.index
    if read.vars_inside_atoms() & set(outer):
        return False
    if not all(known(sympy.Eq, read.coefficient(v), write.coefficient(v)) for v in outer):
        return False
    zero_outer = {v: 0 for v in outer}
    lo, hi = read.subs(zero_outer).bounds()
    w_lo, w_hi = write.subs(zero_outer).bounds()  # a contiguous write covers all of [w_lo, w_hi]
    return w_lo <= lo and hi <= w_hi


def _is_extern(kernel, kind):
    return isinstance(kernel, ExternKernelSchedulerNode) and isinstance(kernel.kernel, kind)


class Scheduler:
    def __init__(self, graph):
        self.graph = graph
        self.decisions = []  # why each fusion happened or did not (TINYDYNAMO_LOGS=schedule)
        self.nodes = self._create_nodes()
        self._remove_dead_nodes()
        self.kernels = self._fuse()
        self._place_collectives()
        self._find_local_buffers()
        self.workspace_offsets, self.workspace_size = self._plan_memory()
        trace_artifact("schedule", self.format)

    # ------------------------------------------------------------------ nodes

    def _create_nodes(self):
        nodes = []
        for buffer in self.graph.buffers:
            if isinstance(buffer, ir.ComputedBuffer):
                nodes.append(SchedulerNode(buffer))
            elif isinstance(buffer, ir.ExternKernel):
                outputs = [b.name for b in self.graph.buffers
                           if isinstance(b, ir.MultiOutput) and b.parent is buffer]
                if buffer.layout is not None:  # one output, the buffer itself (else: several, or none)
                    outputs = [buffer.name]
                nodes.append(ExternKernelSchedulerNode(buffer, outputs))
        return nodes

    def _remove_dead_nodes(self):
        """Drop computed buffers that nothing reads (extern calls stay: they may draw random
        numbers, which must happen as in eager)."""
        used = set(self.graph.output_names())
        alive = []
        for node in reversed(self.nodes):
            if isinstance(node, SchedulerNode) and node.name not in used:
                self.decisions.append(f"removed dead buffer {node.name}")
                continue
            used |= node.read_names()
            alive.append(node)
        self.nodes = alive[::-1]

    # ------------------------------------------------------------------ fusion

    def _fuse(self):
        kernels = []
        position = {}  # buffer name -> index of the kernel that writes it
        for node in self.nodes:
            chosen = None
            if isinstance(node, SchedulerNode):
                producers = [position[n] for n in node.read_names() if n in position]
                chosen = self._choose_kernel(kernels, node, max(producers, default=0))
            if chosen is None:
                kernels.append(FusedSchedulerNode(node) if isinstance(node, SchedulerNode) else node)
                chosen = len(kernels) - 1
            for name in node.output_names():
                position[name] = chosen
        return kernels

    def _choose_kernel(self, kernels, node, first):
        """Fuse node into the first kernel at or after ``first`` that shares a buffer with it."""
        for pos in range(first, len(kernels)):
            kernel = kernels[pos]
            if not isinstance(kernel, FusedSchedulerNode) or not self._shares_data(kernel, node):
                continue
            depth = self._can_fuse(kernel, node)
            if depth:
                self.decisions.append(f"fused {node.name} into kernel with {kernel.output_names()} "
                                      f"(outer loops {list(kernel.outer[:depth])})")
                kernel.nodes.append(node)
                kernel.outer = kernel.outer[:depth]
                return pos
        return None

    @staticmethod
    def _shares_data(kernel, node):
        reads = node.read_names()
        return bool(reads & set(kernel.output_names())) or bool(reads & kernel.read_names())

    def _can_fuse(self, kernel, node):
        """The number of outer loops the fused kernel would have, or 0 if fusion is not allowed."""
        depth = common_prefix_length(kernel.outer, node.ranges)
        single_iteration = math.prod(kernel.outer[:depth]) == 1
        if single_iteration and (math.prod(kernel.outer) > 1 or math.prod(node.ranges) > 1):
            depth = 0  # one outer iteration: the fused bodies would all run on one thread
        if depth == 0:
            self.decisions.append(f"not fusing {node.name} with {kernel.output_names()}: "
                                  f"no common outer loop ({list(kernel.outer)} vs {list(node.ranges)})")
            return 0
        members = {n.name: n for n in kernel.nodes}
        members[node.name] = node
        for reader in members.values():
            for dep in reader.read_writes.reads:
                writer = members.get(dep.name)
                if writer is not None and not read_is_within_iteration(writer, dep, depth):
                    self.decisions.append(
                        f"not fusing {node.name} with {kernel.output_names()}: {reader.name} reads "
                        f"{dep.name} outside the outer iteration that writes it")
                    return 0
        return depth

    # ------------------------------------------------------------------ collectives

    def _place_collectives(self):
        """Issue each collective as early as its inputs allow (in program order among
        collectives, the order every rank issues them in), and wait for it as late as the first
        kernel that reads its result allows: the kernels in between run while it is in flight."""
        issued_before = 0
        for kernel in [k for k in self.kernels if _is_extern(k, ir.CollectiveKernel)]:
            self.kernels.remove(kernel)
            pos = max(issued_before, self._after_producers(kernel))
            self.kernels.insert(pos, kernel)
            issued_before = pos + 1
            self.decisions.append(f"issued {kernel.name} at kernel {pos}")
        for kernel in [k for k in self.kernels if _is_extern(k, ir.WaitKernel)]:
            self.kernels.remove(kernel)
            pos = self._before_first_reader(kernel)
            self.kernels.insert(pos, kernel)
            self.decisions.append(f"waited for {kernel.kernel.collective.name} at kernel {pos}")

    def _after_producers(self, node):
        reads = node.read_names()
        return max((pos + 1 for pos, k in enumerate(self.kernels) if reads & set(k.output_names())), default=0)

    def _before_first_reader(self, node):
        outputs = set(node.output_names())
        return min((pos for pos, k in enumerate(self.kernels) if outputs & k.read_names()), default=len(self.kernels))

    # ------------------------------------------------------------------ memory

    def _readers(self):
        """buffer name -> set of kernel positions that read it."""
        readers = {}
        for pos, kernel in enumerate(self.kernels):
            for name in kernel.read_names():
                readers.setdefault(name, set()).add(pos)
        return readers

    def _find_local_buffers(self):
        readers = self._readers()
        outputs = set(self.graph.output_names())
        for pos, kernel in enumerate(self.kernels):
            if not isinstance(kernel, FusedSchedulerNode):
                continue
            for node in kernel.nodes:
                elements = math.prod(node.ranges[len(kernel.outer):])
                nbytes = elements * node.buffer.get_dtype().itemsize
                if (node.name not in outputs and readers.get(node.name, set()) <= {pos}
                        and nbytes <= LOCAL_BUFFER_MAX_BYTES):
                    kernel.local_buffers[node.name] = elements

    def _plan_memory(self):
        """Offsets in one workspace for the intermediate buffers; a buffer's space is reused once
        the last kernel reading it has run."""
        readers = self._readers()
        outputs = set(self.graph.output_names())
        allocator = _Allocator()
        offsets = {}
        for pos, kernel in enumerate(self.kernels):
            for buffer in _workspace_candidates(kernel):
                if buffer.name in outputs:
                    continue
                nbytes = buffer.layout.storage_size() * buffer.get_dtype().itemsize
                if not isinstance(nbytes, int):  # a symbolic size: the wrapper allocates it per call
                    continue
                offsets[buffer.name] = allocator.allocate(buffer.name, nbytes)
                allocator.free_after(buffer.name, max(readers.get(buffer.name, {pos})))
            allocator.release(pos)
        return offsets, allocator.size

    def format(self):
        lines = [f"scheduled {len(self.kernels)} kernel(s):"]
        for i, kernel in enumerate(self.kernels):
            lines.append(f"  [{i}] {kernel.describe()}")
        lines += [f"  {d}" for d in self.decisions]
        lines.append(f"  workspace: {self.workspace_size} bytes for {len(self.workspace_offsets)} buffer(s)")
        return "\n".join(lines)


def _workspace_candidates(kernel):
    """The buffers a kernel writes that may live in the workspace: a generated kernel's (except
    its local buffers), and an extern kernel's result when the library can write it into memory it
    is given (``torch.mm(a, b, out=...)``)."""
    if isinstance(kernel, ExternKernelSchedulerNode):
        return [kernel.kernel] if kernel.kernel.out_variant() is not None else []
    return [node.buffer for node in kernel.nodes if node.name not in kernel.local_buffers]


class _Allocator:
    """First-fit allocation of workspace bytes with reuse of freed blocks."""

    def __init__(self):
        self.size = 0
        self.free_blocks = []  # (offset, nbytes)
        self.blocks = {}  # name -> (offset, nbytes)
        self.pending = {}  # kernel position -> names to free after it

    def allocate(self, name, nbytes):
        nbytes = max(ALIGNMENT, -(-nbytes // ALIGNMENT) * ALIGNMENT)
        for i, (offset, size) in enumerate(self.free_blocks):
            if size >= nbytes:
                self.free_blocks[i:i + 1] = [(offset + nbytes, size - nbytes)] if size > nbytes else []
                self.blocks[name] = (offset, nbytes)
                return offset
        offset = self.size
        self.size += nbytes
        self.blocks[name] = (offset, nbytes)
        return offset

    def free_after(self, name, position):
        self.pending.setdefault(position, []).append(name)

    def release(self, position):
        for name in self.pending.pop(position, []):
            self.free_blocks.append(self.blocks.pop(name))
        self.free_blocks.sort()
        merged = []
        for offset, size in self.free_blocks:
            if merged and merged[-1][0] + merged[-1][1] == offset:
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((offset, size))
        self.free_blocks = merged
