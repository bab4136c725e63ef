"""The Python wrapper of a graph compiled to Triton kernels (chapter 11, "Generating Triton").

It does what the C++ path's wrapper does (``wrapper.py``), with Triton's launch model: each
kernel is launched from Python on a grid of program instances, and every intermediate buffer is
a tensor on the device, allocated when first written and freed (``del``) after its last reader,
as in TorchInductor's Triton wrapper. The CUDA caching allocator makes that cheap::

    def call(args):
        arg0_x_1, = args
        buf3 = empty_strided((32, 64), (64, 1), dtype=torch.float32, device=device)
        triton_per_0.run(arg0_x_1, buf3)  # grid: cdiv(32, XBLOCK) program instances
        return (buf3,)

Kernels that can find an error (a gather index out of bounds, an integer division by zero)
write its code into ``error_flag``; the wrapper checks it once, after the last kernel.
"""
import torch

from ... import config
from ..runtime import triton_heuristics
from ..runtime.triton_codecache import load_kernel
from ..scheduler import ExternKernelSchedulerNode
from . import triton as triton_codegen
from .common import IndentedBuffer
from .wrapper import WrapperCodeGen, raise_kernel_error, reinterpret, restride


def new_error_flag(device):
    return torch.zeros(1, dtype=torch.int32, device=device)


def check_error_flag(error_flag):
    code = int(error_flag.item())  # waits for the kernels (a GPU synchronization)
    if code:
        raise_kernel_error(code)


class TritonWrapperCodeGen(WrapperCodeGen):
    """Writes ``call(args)`` for a scheduled graph and its Triton kernels.

    ``kernels``: scheduler kernel position -> list of TritonKernelSource (TritonScheduling).
    The extern calls and the way arguments and outputs are written are the C++ wrapper's.
    """

    def __init__(self, graph, scheduler, kernels, device, timer=triton_heuristics.benchmark_on_gpu,
                 fallback=None):
        self.graph = graph
        self.fallback = fallback  # runs a call whose sizes fail the guards (symbolic graphs only)
        self.scheduler = scheduler
        self.kernels = kernels
        self.device = device
        self.code = IndentedBuffer(indent="    ")
        self.namespace = {"torch": torch, "empty_strided": torch.empty_strided, "device": device,
                          "reinterpret": reinterpret, "restride": restride,
                          "new_error_flag": new_error_flag, "check_error_flag": check_error_flag,
                          **graph.constants}
        self._buffers = {b.name: b for b in graph.buffers}
        self._constant_count = 0
        self.workspace_offsets = {}  # no workspace: intermediates here are tensors of their own
        self.uses_workspace = False
        self._load_kernels(timer)

    def _load_kernels(self, timer):
        interpret = self.device.type != "cuda"
        for kernel in self.all_kernels():
            def configs(xnumel, rnumel, kernel=kernel):
                return triton_heuristics.candidate_configs(
                    kernel._replace(xnumel=xnumel, rnumel=rnumel), interpret=interpret,
                    max_autotune=config.max_autotune, max_rblock=triton_codegen.PERSISTENT_REDUCTION_MAX)

            fn = load_kernel(kernel.source, kernel.name, interpret)
            if kernel.size_params:  # sizes as arguments: block sizes chosen per size bucket
                launcher = triton_heuristics.SizeBucketedLauncher(fn, kernel.source, configs, timer)
            else:
                launcher = triton_heuristics.TritonKernelLauncher(
                    fn, kernel.source, kernel.xnumel, configs(kernel.xnumel, kernel.rnumel), timer)
            self.namespace[kernel.name] = launcher

    def all_kernels(self):
        return [k for pos in sorted(self.kernels) for k in self.kernels[pos]]

    # ------------------------------------------------------------------ source

    def generate(self):
        self.code.writeline("def call(args):")
        with self.code.indent():
            names = self.graph.arg_names
            if names:
                self.code.writeline(f"{', '.join(names)}, = args")
            if self.fallback is not None:
                self._bind_sizes()
            checks_errors = any("error_flag" in k.args for k in self.all_kernels())
            if checks_errors:
                self.code.writeline("error_flag = new_error_flag(device)")
            self._steps()
            if checks_errors:
                self.code.writeline("check_error_flag(error_flag)")
            self.code.writeline(f"return {self._value(self.graph.graph_outputs)}")
        return self.code.getvalue()

    def _steps(self):
        """Kernel launches and extern calls in program order; frees each intermediate buffer
        after its last use."""
        last_use = self._last_uses()
        allocated = set()
        for pos, node in enumerate(self.scheduler.kernels):
            if isinstance(node, ExternKernelSchedulerNode):
                self._extern_call(node)
            for kernel in self.kernels.get(pos, ()):
                self._launch(kernel, allocated)
            for name in sorted(n for n in allocated if last_use.get(n) == pos):
                self.code.writeline(f"del {name}")

    def _launch(self, kernel, allocated):
        for name in kernel.written:
            if name not in allocated:
                layout = self._buffer(name).layout
                self.code.writeline(f"{name} = empty_strided({self._size(layout.size)}, "
                                    f"{self._size(layout.stride)}, dtype={layout.dtype}, device=device)")
                allocated.add(name)
        # the arguments are the wrapper's variables: inputs, constants, buffers, error_flag, sizes
        if kernel.size_params:
            sizes = f"{self._size(kernel.xnumel)}, {self._size(kernel.rnumel)}, "
            self.code.writeline(f"{kernel.name}.run({sizes}{', '.join(kernel.args + kernel.size_params)})")
        else:
            self.code.writeline(f"{kernel.name}.run({', '.join(kernel.args)})  "
                                f"# grid: cdiv({kernel.xnumel}, XBLOCK)")

    def _last_uses(self):
        """buffer name -> the scheduler position after which nothing reads it (intermediates)."""
        keep = set(self.graph.output_names())
        last = {}
        for pos, node in enumerate(self.scheduler.kernels):
            used = set(node.read_names()) | set(node.output_names())
            for kernel in self.kernels.get(pos, ()):
                used |= set(kernel.args)
            for name in used - keep:
                last[name] = pos
        return last
