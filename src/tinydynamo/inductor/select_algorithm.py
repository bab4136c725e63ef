"""Choosing a matrix product's library by measuring it (chapter 10, "Which library multiplies").

A graph's ``mm`` is an extern call, and on a CPU there are two libraries to call: ATen's
``torch.mm``, which hands float32 to MKL's sgemm (eager's choice, and torch.compile's by
default), and oneDNN's matmul, which PyTorch ships too (``torch.ops.mkldnn._linear_pointwise``,
what TorchInductor calls for a linear layer when it freezes weights). Neither is faster
everywhere: it depends on the machine, the shapes and the strides. So, as TorchInductor's
max-autotune does with its ``select_algorithm``, each candidate is timed at compile time on
operands of the graph's sizes and strides, and the faster one is called.

- Only float32 products big enough to matter are measured (``MIN_MACS`` multiply-adds); the
  others call ``torch.mm``, as eager does.
- The two libraries add up the products in other orders, so their results differ by float32
  rounding (about 1e-6 of the result's magnitude, up to twice eager's own error against float64).
  ATen's ``mm`` stays unless oneDNN is faster by ``MARGIN``: where the two are close, the result
  keeps eager's rounding.
- A choice is remembered per machine, PyTorch version, thread count, sizes and strides: in this
  process, and as a small file in ``config.cache_dir``, so a second process measures nothing.
- oneDNN is called only while it is enabled and PyTorch's float32 matmul precision is "highest"
  (the defaults); a call made after ``torch.backends.mkldnn.flags(enabled=False)`` or under a
  lower precision goes to ``torch.mm``, as eager's does.
"""
import functools
import hashlib
import json
import os
import platform
import threading
import time

import torch

from .. import config

MIN_MACS = 1 << 23  # below 8 million multiply-adds (0.1 ms) either library will do
MARGIN = 0.95  # oneDNN is chosen when it takes less than this fraction of torch.mm's time
REPEATS = 2  # timed calls per candidate, after one warm-up call; the fastest counts
MAX_ROWS = 512  # a product of more rows is measured on its first 512

_choices = {}  # key -> "aten" or "onednn"
_lock = threading.Lock()


def onednn_mm(a, b):
    """``a @ b`` by oneDNN's matmul: a linear layer whose weight is ``b.t()``. Under settings made
    after compiling that rule oneDNN out (see ``_onednn_allowed``), ``torch.mm``."""
    if not _onednn_allowed():
        return torch.mm(a, b)
    return torch.ops.mkldnn._linear_pointwise(a, b.t(), None, "none", [], "")


def _onednn_allowed():
    """oneDNN is enabled (``torch.backends.mkldnn.flags``), and float32 stays float32: PyTorch's
    float32 matmul precision is "highest", and oneDNN's own is not lowered either."""
    mkldnn_precision = getattr(getattr(torch.backends.mkldnn, "matmul", None), "fp32_precision", "none")
    return (torch.backends.mkldnn.enabled and torch.get_float32_matmul_precision() == "highest"
            and mkldnn_precision in ("none", "ieee"))


def _onednn_available():
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def mm_library(a_layout, b_layout):
    """"aten" or "onednn": the library that computes ``a @ b`` faster, given the operands' static
    Layouts (CPU tensors)."""
    (m, k), n = a_layout.size, b_layout.size[1]
    if (a_layout.dtype != torch.float32 or b_layout.dtype != torch.float32 or m * n * k < MIN_MACS
            or not _onednn_available() or not _onednn_allowed()):
        return "aten"
    key = (_machine(), torch.__version__, torch.get_num_threads(),
           a_layout.size, a_layout.stride, b_layout.size, b_layout.stride)
    with _lock:  # threads compiling at once: one measures, and the others do not time alongside
        if key not in _choices:
            _choices[key] = _load(key) or _save(key, _measure(a_layout, b_layout))
        return _choices[key]


def _measure(a_layout, b_layout):
    times = time_libraries(a_layout, b_layout)
    return "onednn" if times["onednn"] < MARGIN * times["aten"] else "aten"


def time_libraries(a_layout, b_layout):
    """{"aten": seconds, "onednn": seconds}: each library's fastest call on operands of these
    layouts (with at most ``MAX_ROWS`` rows of ``a``: the measuring is part of the compile time).
    The calls are interleaved, so that a change in the machine's load hits both; the first round
    only warms up (oneDNN builds its kernel)."""
    rows = min(a_layout.size[0], MAX_ROWS)
    a = _operand((rows, a_layout.size[1]), a_layout.stride)
    b = _operand(b_layout.size, b_layout.stride)
    out = torch.empty(rows, b.shape[1])
    calls = {"aten": lambda: torch.mm(a, b, out=out),  # as the wrapper calls it: into the workspace
             "onednn": lambda: onednn_mm(a, b)}
    times = {name: [] for name in calls}
    for _ in range(1 + REPEATS):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: min(seconds[1:]) for name, seconds in times.items()}


def _operand(size, stride):
    """A tensor of these sizes and strides (its values do not change a product's speed)."""
    storage = 1 + sum((n - 1) * s for n, s in zip(size, stride))
    return torch.full((storage,), 0.5).as_strided(size, stride)


@functools.lru_cache(None)
def _machine():
    """The CPU's model name (Linux), else the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        return names[0] if names else platform.processor()
    except OSError:
        return platform.processor()


def _path(key):
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
    return os.path.join(config.cache_dir, "gemm", f"{digest}.json")


def _load(key):
    try:
        with open(_path(key)) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record.get("choice") if record.get("key") == repr(key) else None


def _save(key, choice):
    path = _path(key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        json.dump({"key": repr(key), "choice": choice}, f)
    os.replace(tmp, path)
    return choice
