"""Choosing a matrix product's library by measuring it (select_algorithm.py): what is measured,
what is remembered, and that either library's result matches eager, gradients included."""
import pytest
import torch

import tinydynamo
from tinydynamo import config
from tinydynamo.inductor import select_algorithm
from tinydynamo.inductor.ir import Layout

pytestmark = pytest.mark.skipif(not select_algorithm._onednn_available(), reason="PyTorch built without oneDNN")


@pytest.fixture
def fresh_choices(monkeypatch, tmp_path):
    """No choice remembered, in this process or on disk; ``measured`` lists what gets timed.
    Products of any size are measured, so that the graphs stay small."""
    tinydynamo.reset()  # no graph compiled by an earlier test
    monkeypatch.setattr(select_algorithm, "_choices", {})
    monkeypatch.setattr(select_algorithm, "MIN_MACS", 1)
    measured = []

    def choose(library):
        def measure(a_layout, b_layout):
            measured.append((a_layout.size, b_layout.size))
            return library
        monkeypatch.setattr(select_algorithm, "_measure", measure)

    with config.patch(cache_dir=str(tmp_path)):
        yield choose, measured


def two_linears(x, w1, w2):
    return torch.relu(x @ w1.t()) @ w2.t()


def assert_close_to_scale(got, expected):
    """oneDNN adds up the products in another order than MKL: the results are float32 rounding
    of their magnitude apart (elements near 0 too, so the tolerance is the tensor's scale's)."""
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5 * e.abs().max().item())


def operands(requires_grad=False):
    g = torch.Generator().manual_seed(0)
    shapes = [(64, 128), (256, 128), (96, 256)]
    return [torch.randn(*s, generator=g).requires_grad_(requires_grad) for s in shapes]


@pytest.mark.parametrize("library", ["aten", "onednn"])
def test_either_library_matches_eager_with_gradients(fresh_choices, library):
    choose, measured = fresh_choices
    choose(library)
    args = operands(requires_grad=True)
    compiled = tinydynamo.compile(two_linears, backend="inductor")
    out = compiled(*args)
    expected = two_linears(*operands(requires_grad=True))
    assert_close_to_scale([out], [expected])
    grads = torch.autograd.grad(out.square().sum(), args)
    reference = operands(requires_grad=True)
    expected_grads = torch.autograd.grad(two_linears(*reference).square().sum(), reference)
    assert_close_to_scale(grads, expected_grads)
    # the forward's two products, and the backward's four (each with its own strides)
    assert len(measured) == 6, measured


def test_the_chosen_library_is_called(fresh_choices):
    choose, _ = fresh_choices
    choose("onednn")
    calls = []
    real = select_algorithm.onednn_mm

    def counting(a, b):
        calls.append(a.shape)
        return real(a, b)

    select_algorithm.onednn_mm = counting
    try:
        compiled = tinydynamo.compile(two_linears, backend="inductor")
        with torch.no_grad():
            assert_close_to_scale([compiled(*operands())], [two_linears(*operands())])
    finally:
        select_algorithm.onednn_mm = real
    assert calls == [torch.Size([64, 128]), torch.Size([64, 256])]


def test_a_choice_is_measured_once_and_remembered_on_disk(fresh_choices, monkeypatch):
    choose, measured = fresh_choices
    choose("onednn")
    a, b = Layout(torch.float32, (512, 256)), Layout(torch.float32, (256, 512), (1, 256))
    assert select_algorithm.mm_library(a, b) == "onednn"
    assert select_algorithm.mm_library(a, b) == "onednn"
    assert len(measured) == 1
    monkeypatch.setattr(select_algorithm, "_choices", {})  # a new process: only the file is left
    choose("aten")
    assert select_algorithm.mm_library(a, b) == "onednn"
    assert len(measured) == 1
    other_strides = Layout(torch.float32, (256, 512))
    assert select_algorithm.mm_library(a, other_strides) == "aten"
    assert len(measured) == 2


def test_small_products_and_other_dtypes_are_aten_without_measuring(fresh_choices, monkeypatch):
    choose, measured = fresh_choices
    choose("onednn")
    monkeypatch.setattr(select_algorithm, "MIN_MACS", 1 << 23)
    small = Layout(torch.float32, (128, 256)), Layout(torch.float32, (256, 255))
    double = Layout(torch.float64, (512, 512)), Layout(torch.float64, (512, 512))
    assert select_algorithm.mm_library(*small) == "aten"
    assert select_algorithm.mm_library(*double) == "aten"
    assert measured == []


def test_symbolic_sizes_call_aten(fresh_choices):
    choose, measured = fresh_choices
    choose("onednn")
    compiled = tinydynamo.compile(two_linears, backend="inductor", dynamic=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*operands()), two_linears(*operands()))
    assert measured == []


def test_a_lower_float32_precision_is_not_taken_by_onednn(monkeypatch):
    a, b = torch.randn(300, 500), torch.randn(500, 200)
    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", None)  # would raise if called
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        assert torch.equal(select_algorithm.onednn_mm(a, b), torch.mm(a, b))
        assert select_algorithm.mm_library(Layout(torch.float32, (300, 500)), Layout(torch.float32, (500, 200))) == "aten"
    finally:
        torch.set_float32_matmul_precision(previous)


@pytest.mark.filterwarnings("ignore:TF32 acceleration")  # torch's flags() on a build without XPU
def test_onednn_disabled_after_compiling_is_not_called(monkeypatch):
    a, b = torch.randn(300, 500), torch.randn(500, 200)
    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", None)  # would raise if called
    with torch.backends.mkldnn.flags(enabled=False):
        assert torch.equal(select_algorithm.onednn_mm(a, b), torch.mm(a, b))


def test_measuring_picks_the_faster_library(monkeypatch, tmp_path):
    monkeypatch.setattr(select_algorithm, "_choices", {})
    slow = select_algorithm.onednn_mm

    def slower(a, b):
        for _ in range(4):
            slow(a, b)
        return slow(a, b)

    monkeypatch.setattr(select_algorithm, "onednn_mm", slower)
    with config.patch(cache_dir=str(tmp_path)):
        assert select_algorithm.mm_library(Layout(torch.float32, (256, 256)),
                                           Layout(torch.float32, (256, 256))) == "aten"
