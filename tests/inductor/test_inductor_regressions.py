"""Named regression tests: each bug found while building the backend (by the fuzzer or by
other tests), reduced to the smallest graph that showed it."""
import pytest
import torch
import torch.nn.functional as F

from inductor_helpers import check_prims, check_torch, generated, prim_graph, torch_graph
import tinydynamo
from tinydynamo import prims


def test_gather_in_a_kernel_whose_loops_can_merge():
    """An indirect read (StarDep) was mistaken for an indexed one when merging loops: the
    NamedTuple's tuple.index method looked like its index expression. Seen first in tiny_gpt's
    embedding lookup."""
    weight, idx = torch.randn(10, 8), torch.tensor([[1, 4, 9], [0, 0, 3]])
    check_torch(lambda w, i: F.embedding(i, w) * 2, [weight, idx])


def test_float32_rounding_inside_a_float64_result_is_not_a_mismatch():
    """Found by the fuzzer: exp of a float32 value added to a float64 one. The vectorized expf
    may differ from eager's in the last float32 bit, which the float64 result keeps; the
    fuzzer now compares such results with float32 tolerances (this is not a kernel bug)."""
    a, b = torch.randn(1, 4, dtype=torch.float64), torch.randn(1, 4)
    check_torch(lambda a, b: torch.exp(b) + a, [a, b], atol=1e-6, rtol=1e-6)


def test_softmax_of_a_fully_masked_row_is_nan_like_eager():
    """A row of -inf: max is -inf, exp(-inf - -inf) is nan; the row-local buffers must give
    eager's nans, not zeros or garbage."""
    x = torch.randn(4, 8)
    x[2] = float("-inf")
    check_torch(lambda x: torch.softmax(x, -1), [x])


def test_one_outer_iteration_does_not_serialize_a_large_reduction():
    """Fusing a (1, N) pointwise into a full reduction left a single outer iteration; the
    scheduler now keeps them apart so the reduction runs in parallel."""
    def fn(x):
        y = prims.exp(x)
        return y, prims.sum(y, [0, 1])

    x = torch.rand(1, 50_000)
    _, module = generated(prim_graph(fn, [x]), [x])
    assert module.kernel_count == 2 and "parallel for simd reduction(+:" in module.kernels_source
    check_prims(fn, [x], rtol=1e-5, atol=1e-5)


def test_cat_then_gelu_after_a_bool_kernel():
    """Found by the fuzzer: GCC 12 (-O2 and up, -march=native) miscompiled the masked loads of
    a cat inside an ``omp simd`` loop when a kernel writing bools was inlined before it, under
    type-based alias analysis. The kernels are now compiled with -fno-strict-aliasing."""
    a, b = torch.randn(3), torch.randn(1, dtype=torch.float64)
    check_torch(lambda a, b: (torch.eq(a, b), F.gelu(torch.cat([b, b], 0))), [a, b])


def test_a_graph_whose_outputs_are_all_views_of_inputs():
    """AOT autograd moves every output that is a view of an input out of the graph, which can leave
    the compiled graph with no outputs at all; its wrapper used to return the invalid ``(,)``."""
    import torch._dynamo

    from tinydynamo.backends import lookup_backend

    torch._dynamo.reset()
    x = torch.randn(3, 4)
    compiled = torch.compile(lambda t: t.t(), backend=lookup_backend("inductor"), dynamic=False)
    out = compiled(x)
    torch.testing.assert_close(out, x.t())
    assert out._base is x or out.data_ptr() == x.data_ptr()


@pytest.mark.parametrize("shape, kernel, stride, ceil_mode", [
    ((1, 2, 24, 24), 24, None, False), ((1, 2, 26, 26), 24, 2, False), ((2, 3, 1, 1), 320, None, True)])
def test_avg_pool_with_a_large_window(shape, kernel, stride, ceil_mode):
    """Found on EfficientNet (AvgPool2d(320, ceil_mode=True) on a 1x1 map): a 24x24 window summed
    as a chain of 576 adds was an expression too deep for the loop IR (RecursionError), and a
    320x320 one had 102,400 terms; a window over the whole input is now a reduction, others a tree."""
    x = torch.randn(*shape)
    check_torch(lambda x: F.avg_pool2d(x, kernel, stride, ceil_mode=ceil_mode), [x], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, kernel, ceil_mode", [((2, 3, 1, 1), 320, True), ((1, 2, 24, 24), 24, False)])
def test_avg_pool_backward_of_one_window_over_the_input(shape, kernel, ceil_mode):
    """EfficientNet's training step: the backward of AvgPool2d(320, ceil_mode=True) scattered
    into 102,400 window positions (four minutes of decomposition); it is now a broadcast."""
    x = torch.randn(*shape, requires_grad=True)
    y = x.detach().clone().requires_grad_(True)
    pool = lambda t: F.avg_pool2d(t, kernel, ceil_mode=ceil_mode).sin().sum()  # noqa: E731
    tinydynamo.compile(pool)(x).backward()
    pool(y).backward()
    torch.testing.assert_close(x.grad, y.grad)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8])
@pytest.mark.parametrize("source", [torch.float32, torch.float64, torch.bfloat16])
def test_float_to_int_of_nan_inf_and_out_of_range_values_as_eager(source, dtype):
    """Found by the fuzzer: (int32 ** bfloat16).int() with an infinite power. C++ leaves such a
    conversion undefined; eager gives x86's most negative integer, and the narrow types keep the
    low bits of the int32 conversion (300.5 -> int8 44)."""
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e9, -3e9, 2.7, -2.7, 300.5, -129.5, 1e20] * 7)
    check_torch(lambda t: (t * 1).to(dtype), [x.to(source)])


class ComplexRotaryAttention(torch.nn.Module):
    """Attention with the rotary embedding of Meta's original LLaMA code: complex frequencies in a
    buffer, query and key pairs viewed as complex numbers and rotated by a complex product."""

    def __init__(self, dim=32, heads=2, max_len=16):
        super().__init__()
        self.heads = heads
        self.wq, self.wk = torch.nn.Linear(dim, dim, bias=False), torch.nn.Linear(dim, dim, bias=False)
        angles = torch.outer(torch.arange(max_len).float(), 1.0 / 10000 ** (torch.arange(0, dim // heads, 2) / (dim // heads)))
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles))

    def rotate(self, t, start):
        pairs = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
        freqs = self.freqs_cis[start:start + t.shape[1]].view(1, t.shape[1], 1, -1)
        return torch.view_as_real(pairs * freqs).flatten(3).type_as(t)

    def forward(self, x, start=0):
        b, n, d = x.shape
        q = self.rotate(self.wq(x).view(b, n, self.heads, -1), start)
        k = self.rotate(self.wk(x).view(b, n, self.heads, -1), start)
        return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), k.transpose(1, 2), is_causal=True)


@pytest.mark.parametrize("backend", ["decomp_eager", "inductor"])
def test_complex_rotary_embedding_compiles_and_trains_like_eager(backend, recwarn):
    tinydynamo.reset()
    torch.manual_seed(0)
    model = ComplexRotaryAttention()
    x = torch.randn(2, 8, 32, requires_grad=True)
    expected = model(x, 2)
    expected.square().mean().backward()
    grads = [x.grad, *(p.grad for p in model.parameters())]
    x.grad = None
    model.zero_grad()
    actual = tinydynamo.compile(model, backend=backend)(x, 2)
    actual.square().mean().backward()
    torch.testing.assert_close(actual, expected)
    for got, want in zip([x.grad, *(p.grad for p in model.parameters())], grads):
        torch.testing.assert_close(got, want)
    assert not [w for w in recwarn if "tinydynamo" in str(w.message)]  # compiled, not run eagerly
    assert tinydynamo.stats()["fallbacks"] == 0


def fft_long_convolution(u, k):
    """Hyena's and S4's long convolution: an FFT product, cut back to the input's length."""
    n = u.shape[-1]
    y = torch.fft.irfft(torch.fft.rfft(u, n=2 * n) * torch.fft.rfft(k, n=2 * n), n=2 * n)[..., :n]
    return y + u


def test_a_view_of_a_complex_tensor_with_symbolic_sizes_compiles_its_backward():
    """After the dynamic recompile, the backward's slice of a complex tensor (an extern copy of the
    view) ran aten's meta kernel on the prim graph's symbolic sizes: torch's internal assert
    "dispatch_on_subclass called with NO overloaded args". Its traced value describes it now."""
    tinydynamo.reset()
    compiled = tinydynamo.compile(fft_long_convolution, backend="inductor")
    for n in (8, 12, 16):
        u, k = torch.randn(2, 4, n, requires_grad=True), torch.randn(4, n, requires_grad=True)
        fft_long_convolution(u, k).square().sum().backward()
        expected = [u.grad, k.grad]
        u.grad = k.grad = None
        compiled(u, k).square().sum().backward()
        torch.testing.assert_close([u.grad, k.grad], expected, atol=1e-4, rtol=1e-4)
    assert tinydynamo.stats()["fallbacks"] == 0


def test_a_channels_last_network_keeps_every_buffer_channels_last():
    """Convolutions gave contiguous results and a ReLU between two channels-last convolutions was
    stored contiguously: a layout copy after each convolution, and a channels-last network ran
    at half eager's speed. Each buffer is now laid out as eager lays out its value."""
    cl = torch.channels_last
    inputs = [torch.randn(2, 3, 8, 8).to(memory_format=cl), torch.randn(4, 3, 3, 3).to(memory_format=cl),
              torch.randn(4, 4, 3, 3).to(memory_format=cl)]

    def fn(x, w1, w2):
        return F.conv2d(torch.relu(F.conv2d(x, w1, padding=1)) * 2, w2, padding=1).sigmoid()

    compiled = check_torch(fn, inputs)
    assert compiled(*inputs).is_contiguous(memory_format=cl)
    scheduler, _ = generated(torch_graph(fn, inputs), inputs)
    layouts = {b.name: b.layout.stride for b in scheduler.graph.buffers}
    assert layouts == {name: (256, 1, 32, 4) for name in layouts} and len(layouts) == 4, layouts
