"""Large graph outputs ask for transparent huge pages (runtime/allocation.py)."""
import sys

import pytest
import torch

import tinydynamo
from tinydynamo.inductor.runtime import allocation


def _recorded_madvise(monkeypatch):
    calls = []

    def fake(start, length, advice):
        calls.append((start, length, advice))
        return 0

    monkeypatch.setattr(allocation, "_madvise", lambda: fake)
    return calls


@pytest.mark.parametrize("numel", [3 * 2**20, 2**22 + 123])
def test_large_output_advises_the_aligned_middle_of_its_memory(monkeypatch, numel):
    calls = _recorded_madvise(monkeypatch)
    out = allocation.empty_output((numel,), (1,), torch.float32)
    assert out.shape == (numel,) and out.stride() == (1,) and out.dtype == torch.float32
    (start, length, advice), = calls
    assert advice == allocation.MADV_HUGEPAGE
    assert start % allocation.HUGE_PAGE == 0 and length % allocation.HUGE_PAGE == 0 and length > 0
    assert out.data_ptr() <= start and start + length <= out.data_ptr() + numel * 4


def test_small_output_is_left_alone(monkeypatch):
    calls = _recorded_madvise(monkeypatch)
    out = allocation.empty_output((64, 1024), (1, 64), torch.float64)
    assert out.stride() == (1, 64) and out.dtype == torch.float64
    assert calls == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_HUGEPAGE) is Linux's")
def test_the_real_madvise_accepts_the_advice():
    out = torch.empty(2**23)
    assert allocation._madvise() is not None
    allocation.advise_huge_pages(out)  # raises nothing, and the memory stays usable
    out.fill_(2.0)
    assert out.sum().item() == 2.0 * 2**23


def test_a_compiled_graph_with_a_large_output_matches_eager():
    def fn(x):
        return torch.tanh(x * 0.5) + x

    x = torch.randn(2**22 + 7)
    compiled = tinydynamo.compile(fn)
    torch.testing.assert_close(compiled(x), fn(x))
    torch.testing.assert_close(compiled(x), fn(x))


@pytest.mark.parametrize("size, stride, expected", [
    ((64, 1024), (1024, 1), False),  # 256 KiB
    ((4096, 1024), (1024, 1), True),  # 16 MiB
    ((2, 3), (1, 2**21), True),  # few elements, but a large block
    ((0, 2**24), (2**24, 1), False),
])
def test_the_wrapper_allocates_small_static_outputs_itself(size, stride, expected):
    """Outputs known to be too small for huge pages skip empty_output's check (a call's
    overhead is a few microseconds, and that check is a fraction of a microsecond of it)."""
    assert allocation.may_need_huge_pages(size, stride, torch.float32) is expected


def test_a_small_output_is_allocated_in_the_generated_wrapper(capsys):
    tinydynamo.set_logs("kernels")
    try:
        tinydynamo.compile(lambda x: x + 1)(torch.randn(10))
    finally:
        tinydynamo.set_logs("")
    captured = capsys.readouterr()
    wrapper = captured.out + captured.err
    assert "torch.empty_strided((10,), (1,), dtype=torch.float32)" in wrapper and "empty_output(" not in wrapper
