"""Counters behind ``tinydynamo.stats()``, the compile lock (Introduction chapter), tracing unseen
by saved-tensor hooks, the row-major strides that dynamo's guards, the prims and inductor all
compute, and the layout of a convolution's result, which dynamo and AOT autograd both trace."""
import collections
import contextlib
import threading

import torch

counters: collections.Counter = collections.Counter()

# Counts kept outside ``counters`` because they change on every call, where a dict update costs:
# name -> a function returning the count since it last ran (the C hook's cache hits, eval_frame.py).
counted_elsewhere = {}

# Held while anything is compiled: dynamo translating a frame and adding its cache entry (with
# every stage the backend runs), inductor compiling a graph for new input strides. So threads
# that make a first call at once compile it once. Compiled code runs without it, concurrently.
# Re-entrant: compiling may call code that compiles (a compiled function called while tracing).
compile_lock = threading.RLock()



@contextlib.contextmanager
def unseen_by_saved_tensors_hooks():
    """Tracing, inside the block, is not seen by the user's ``saved_tensors_hooks``. They see
    every tensor that autograd saves for the backward, and activation checkpointing counts them:
    tracing runs ops (on meta tensors in dynamo, for real in AOT autograd) that the compiled
    program does not, so a checkpoint's recomputation would find another number of saved tensors.
    (This is autograd's own switch for tracers, which PyTorch's Dynamo flips too.)"""
    previous = torch._C._autograd._saved_tensors_hooks_set_tracing(True)
    try:
        yield
    finally:
        torch._C._autograd._saved_tensors_hooks_set_tracing(previous)


STAT_NAMES = (
    "frames_seen",
    "frames_compiled",
    "graphs",
    "graph_breaks",
    "recompiles",
    "cache_hits",
    "fallbacks",
    "internal_errors",
    "implicit_fallbacks",
    "kernels_generated",
    "cpp_compiles",
    "size_specializations",
)


def stats():
    """A snapshot of tinydynamo's counters; every name in STAT_NAMES is always present."""
    collect_counts()
    snapshot = {name: 0 for name in STAT_NAMES}
    snapshot.update(counters)
    return snapshot


def collect_counts():
    """Add the counts kept elsewhere to ``counters``."""
    for name, take in counted_elsewhere.items():
        counters[name] += take()


def clear_counters():
    collect_counts()
    counters.clear()


def contiguous_strides(sizes):
    """Row-major strides of a dense tensor of ``sizes`` (a size-0 dim counts as 1)."""
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


# Convolutions on CPU run through oneDNN, which returns a channels-last result when the input or
# the weight is laid out channels-last. Meta kernels, and a convolution traced with oneDNN off,
# return a contiguous one: dynamo and AOT autograd give their traced result eager's layout.
CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}


def convolution_layout(input, weight, result):
    """``result`` of a convolution of ``input`` by ``weight`` (or of its backward: a tuple), laid
    out as oneDNN lays it out."""
    memory_format = CHANNELS_LAST.get(input.ndim)
    if memory_format is None or not any(is_channels_last(t, memory_format) for t in (input, weight)):
        return result
    if isinstance(result, torch.Tensor):
        return result.contiguous(memory_format=memory_format) if result.ndim == input.ndim else result
    return type(result)(convolution_layout(input, weight, t) if isinstance(t, torch.Tensor) else t for t in result)


def is_channels_last(tensor, memory_format):
    """Laid out channels-last, and not row-major: a weight of one channel per group
    (``[C, 1, k, k]``) is both contiguous and channels-last, and its strides say which."""
    return tensor.is_contiguous(memory_format=memory_format) and tuple(tensor.stride()) != contiguous_strides(
        tensor.shape)
