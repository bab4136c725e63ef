"""Block sizes, num_warps and autotuning: how a generated kernel is launched (chapter 11).

A Triton kernel leaves two things open until launch, and they decide its speed:

* its block sizes (``XBLOCK``, and ``RBLOCK`` in a looped reduction), compile-time constants
  that say how much of the problem one program instance computes, which also sets the grid:
  ``cdiv(xnumel, XBLOCK)`` instances;
* ``num_warps``: how many groups of 32 GPU threads run each instance.

As in TorchInductor's ``triton_heuristics.py``, each kind of kernel gets a short list of
candidate :class:`Config`\\ s. On a GPU the :class:`TritonKernelLauncher` times them at the first
call and keeps the fastest (``mode="max-autotune"`` tries a longer list), and the choice is saved
on disk (``autotune_cache.py``). Under the CPU interpreter timings mean nothing: the launcher
uses one configuration, with large blocks, since the interpreter's cost is per program instance.
"""
import typing

import numpy
import torch
from triton.runtime.interpreter import InterpretedFunction

from ...utils import compile_lock
from . import autotune_cache
from .triton_codecache import interpreted_library

INTERPRETER_DEVICE = "triton-interpreter"
# The interpreter's largest tile: bigger blocks mean fewer program instances (its main cost).
INTERPRETER_MAX_ELEMENTS = 4096


class Config(typing.NamedTuple):
    XBLOCK: int
    RBLOCK: int  # 0 in a pointwise kernel (which has no RBLOCK parameter)
    num_warps: int

    def kwargs(self):
        sizes = {"XBLOCK": self.XBLOCK, **({"RBLOCK": self.RBLOCK} if self.RBLOCK else {})}
        return {**sizes, "num_warps": self.num_warps}

    def as_dict(self):
        return self._asdict()


def next_power_of_2(n):
    return 1 << max(n - 1, 0).bit_length()


def _warps(elements):
    """One warp per 256 elements of a tile, between 1 and 8, a power of 2."""
    return min(8, next_power_of_2(max(1, elements // 256)))


def _unique(configs):
    return list(dict.fromkeys(configs))


def pointwise_configs(xnumel, *, interpret, max_autotune=False):
    """Candidates for a kernel of 1-D tiles over ``xnumel`` elements."""
    largest = next_power_of_2(xnumel)
    if interpret:
        return [Config(min(largest, INTERPRETER_MAX_ELEMENTS), 0, 1)]
    sizes = (128, 256, 512, 1024, 2048) if max_autotune else (256, 1024)
    warps = (2, 4, 8) if max_autotune else (4,)
    return _unique(Config(min(x, largest), 0, min(w, max(1, min(x, largest) // 32)))
                   for x in sizes for w in warps)


def persistent_reduction_configs(xnumel, rnumel, *, interpret, max_autotune=False):
    """Candidates for a persistent reduction: RBLOCK covers a whole row; XBLOCK rows at once."""
    rblock = next_power_of_2(rnumel)
    largest = next_power_of_2(xnumel)
    if interpret:
        return [Config(max(1, min(largest, INTERPRETER_MAX_ELEMENTS // rblock)), rblock, 1)]
    limit = 16384 if max_autotune else 4096  # elements of a tile (registers are the limit)
    xblocks = (1, 2, 4, 8, 16, 32, 64) if max_autotune else (1, 8, 32)
    return _unique(Config(min(x, largest), rblock, _warps(min(x, largest) * rblock))
                   for x in xblocks if x == 1 or x * rblock <= limit)


def looped_reduction_configs(xnumel, rnumel, max_rblock, *, interpret, max_autotune=False):
    """Candidates for a looped reduction: chunks of RBLOCK (at most ``max_rblock``) per step."""
    largest_x, largest_r = next_power_of_2(xnumel), min(next_power_of_2(rnumel), max_rblock)
    if interpret:
        rblock = largest_r
        return [Config(max(1, min(largest_x, INTERPRETER_MAX_ELEMENTS // rblock)), rblock, 1)]
    shapes = [(1, 2048), (1, 1024), (8, 512), (8, 128), (32, 64), (64, 16), (64, 64)] if max_autotune \
        else [(1, 1024), (8, 128), (64, 16)]
    configs = []
    for x, r in shapes:
        x, r = min(x, largest_x), min(r, largest_r)
        configs.append(Config(x, r, _warps(x * r)))
    return _unique(configs)


def candidate_configs(kernel, *, interpret, max_autotune, max_rblock):
    """The candidates for a TritonKernelSource."""
    if kernel.kind == "poi":
        return pointwise_configs(kernel.xnumel, interpret=interpret, max_autotune=max_autotune)
    if kernel.kind == "per":
        return persistent_reduction_configs(kernel.xnumel, kernel.rnumel, interpret=interpret,
                                            max_autotune=max_autotune)
    return looped_reduction_configs(kernel.xnumel, kernel.rnumel, max_rblock, interpret=interpret,
                                    max_autotune=max_autotune)


def benchmark_on_gpu(config, launch):
    """Milliseconds per launch, measured by Triton's ``do_bench`` (CUDA only)."""
    from triton.testing import do_bench

    return do_bench(launch)


def device_name(args):
    """The GPU model the kernel runs on (part of the autotuning cache key)."""
    tensor = next(a for a in args if isinstance(a, torch.Tensor))
    if tensor.device.type == "cuda":
        return torch.cuda.get_device_name(tensor.device)
    return INTERPRETER_DEVICE


class TritonKernelLauncher:
    """Launches one generated kernel: ``launcher.run(*tensors)``. With several candidate configs
    it autotunes at the first call (TorchInductor's ``CachingAutotuner``).

    ``timer(config, launch) -> milliseconds`` measures a candidate; the default needs a GPU.
    """

    def __init__(self, fn, source, xnumel, configs, timer=benchmark_on_gpu):
        self.fn = fn
        self.source = source
        self.xnumel = xnumel
        self.configs = configs
        self.timer = timer
        self.config = configs[0] if len(configs) == 1 else None  # chosen at the first call
        self.interpret = isinstance(fn, InterpretedFunction)

    def grid(self, config, xnumel=None):
        return (-(-(xnumel or self.xnumel) // config.XBLOCK),)

    def launch(self, config, args, xnumel=None):
        grid = self.grid(config, xnumel)
        if self.interpret:  # numpy computes the tiles: no warnings for inf and nan lanes
            with interpreted_library(), numpy.errstate(all="ignore"):
                self.fn[grid](*args, **config.kwargs())
        else:
            self.fn[grid](*args, **config.kwargs())

    def run(self, *args, xnumel=None):
        """Launch on ``args``; ``xnumel``, when the kernel takes its sizes as arguments, is this
        call's number of x elements (else the one it was generated for)."""
        if self.config is None:
            with compile_lock:  # threads making the first call at once: one autotunes
                if self.config is None:
                    self.config = self.autotune(args, xnumel)
        self.launch(self.config, args, xnumel)

    def autotune(self, args, xnumel=None):
        """The fastest candidate, from the disk cache or by timing each one."""
        device = device_name(args)
        key = autotune_cache.cache_key(self.source, device, self.configs)
        saved = autotune_cache.load(key)
        if saved is not None:
            return Config(**saved)
        timings = [(config, self.timer(config, lambda config=config: self.launch(config, args, xnumel)))
                   for config in self.configs]
        best = min(timings, key=lambda item: item[1])[0]
        autotune_cache.save(key, best.as_dict(), [(c.as_dict(), ms) for c, ms in timings], device)
        return best


class SizeBucketedLauncher:
    """A kernel that takes its sizes as arguments (dynamic shapes, chapter 12): the best block
    sizes depend on the sizes, so it keeps one :class:`TritonKernelLauncher` per *size bucket*,
    the next powers of 2 of ``xnumel`` and ``rnumel``, each with candidates for that bucket (a
    persistent reduction's RBLOCK covers the bucket's rows) and its own autotuning.
    ``make_configs(xnumel, rnumel)`` gives a bucket's candidates."""

    def __init__(self, fn, source, make_configs, timer=benchmark_on_gpu):
        self.fn = fn
        self.source = source
        self.make_configs = make_configs
        self.timer = timer
        self.buckets = {}

    def run(self, xnumel, rnumel, *args):
        key = (next_power_of_2(xnumel), next_power_of_2(rnumel))
        if key not in self.buckets:
            with compile_lock:
                if key not in self.buckets:
                    self.buckets[key] = TritonKernelLauncher(self.fn, self.source, key[0],
                                                             self.make_configs(*key), self.timer)
        self.buckets[key].run(*args, xnumel=xnumel)
