"""Output tensors backed by transparent huge pages (chapter 10, "Generating C++").

A graph's outputs are fresh tensors on every call. torch's CPU allocator gets a large block
straight from the kernel with ``mmap``, untouched, so the first kernel that writes it takes a
page fault every 4 KiB: for a 64 MiB output that is 16,384 faults, which cost more than the
kernel's own arithmetic. Asking for transparent huge pages (``madvise(MADV_HUGEPAGE)``) before the
first write makes that 32 faults of 2 MiB. PyTorch does the same for its own allocations when the
environment variable ``THP_MEM_ALLOC_ENABLE=1`` is set; we do it for the outputs we allocate.

Only the 2 MiB-aligned middle of a block can become huge pages, so small outputs are left alone.
Where ``madvise`` is missing (not Linux), :func:`empty_output` is ``torch.empty_strided``.
"""
import ctypes
import functools
import sys

import torch

HUGE_PAGE = 2 << 20
MADV_HUGEPAGE = 14  # Linux's value, from <sys/mman.h>
MIN_BYTES = 4 * HUGE_PAGE  # below this most of a block would be in its unaligned ends


@functools.lru_cache(None)
def _madvise():
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (AttributeError, OSError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


def advise_huge_pages(tensor):
    """Ask for huge pages under the 2 MiB-aligned part of ``tensor``'s memory (a hint: a kernel
    without transparent huge pages ignores it, and the result is the same either way)."""
    madvise = _madvise()
    start = -(-tensor.data_ptr() // HUGE_PAGE) * HUGE_PAGE
    end = (tensor.data_ptr() + tensor.untyped_storage().nbytes()) // HUGE_PAGE * HUGE_PAGE
    if madvise is not None and end > start:
        madvise(start, end - start, MADV_HUGEPAGE)


def may_need_huge_pages(size, stride, dtype):
    """False when the output is known, from its static layout, to be too small for huge pages:
    the wrapper then calls ``torch.empty_strided`` itself and skips :func:`empty_output`'s check."""
    if not all(isinstance(n, int) for n in (*size, *stride)):
        return True
    if 0 in size:
        return False
    elements = 1 + sum((n - 1) * s for n, s in zip(size, stride))
    return elements * dtype.itemsize >= MIN_BYTES


def empty_output(size, stride, dtype):
    """``torch.empty_strided`` for a graph output, with huge pages when it is large."""
    tensor = torch.empty_strided(size, stride, dtype=dtype)
    if tensor.untyped_storage().nbytes() >= MIN_BYTES:
        advise_huge_pages(tensor)
    return tensor
