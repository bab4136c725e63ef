"""Layers people put in their models, beyond the zoo, through the default pipeline (inductor).

Each case builds a module twice with the same weights, runs one copy eagerly and one compiled,
and compares outputs and every gradient (of the parameters and of inputs that require grad).
Ops that tinydynamo does not decompose run as implicit extern fallbacks; the point here is that
the compiled model computes what eager computes, whatever path each op takes.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch._dynamo

import tinydynamo

TOLERANCE = dict(atol=1e-4, rtol=1e-4)


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Rotary(nn.Module):
    """Rotary position embedding: strided slices, outer product, stack and flatten."""

    def forward(self, x):
        steps, dim = x.shape[1], x.shape[-1]
        frequencies = torch.outer(torch.arange(steps).float(), 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim))
        cos, sin = frequencies.cos(), frequencies.sin()
        even, odd = x[..., ::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)


class SortingAndScans(nn.Module):
    def forward(self, x):
        values, _ = x.topk(3, dim=-1)
        return values.sum() + x.sort(-1).values[..., 0].sum() + x.cumsum(-1).mean()


class CausalMask(nn.Module):
    def forward(self, x):
        mask = torch.triu(torch.ones(x.shape[-1], x.shape[-1], dtype=torch.bool), 1)
        return x.masked_fill(mask, float("-inf")).softmax(-1) @ x


class EinsumNormalize(nn.Module):
    def forward(self, a, b):
        return torch.einsum("bij,bjk->bik", a, b).tanh() + F.normalize(a, dim=-1).sum()


class FusedAttention(nn.Module):
    """scaled_dot_product_attention with a boolean mask (a tensor keyword argument of its aten op)."""

    def forward(self, q, k, v):
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask) + F.scaled_dot_product_attention(q, k, v, is_causal=True)


class CausalDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True)

    def forward(self, x, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.layer(x, memory, tgt_mask=mask, tgt_is_causal=True)


class WritesIntoSlices(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, index):
        y = self.linear(x)[index] * 2
        y[:, 0] = 0
        return y + x.index_select(0, index).clamp(-0.5, 0.5)


def randn(*shape, requires_grad=False):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)), requires_grad=requires_grad)


CASES = {
    "transformer_encoder_layer": (lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True),
                                  lambda: (randn(2, 10, 32),)),
    "transformer_decoder_layer": (CausalDecoder, lambda: (randn(2, 5, 16), randn(2, 6, 16))),
    "multihead_attention": (lambda: nn.MultiheadAttention(32, 4, batch_first=True),
                            lambda: (randn(2, 5, 32), randn(2, 6, 32), randn(2, 6, 32))),
    "lstm": (lambda: nn.LSTM(8, 16, batch_first=True), lambda: (randn(3, 5, 8),)),
    "gru": (lambda: nn.GRU(8, 16), lambda: (randn(5, 3, 8),)),
    "conv1d_groupnorm_silu": (lambda: nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU()),
                              lambda: (randn(2, 4, 16),)),
    "conv_transpose_upsample": (lambda: nn.Sequential(nn.ConvTranspose2d(3, 6, 2, stride=2), nn.Upsample(scale_factor=2),
                                                      nn.ReLU()), lambda: (randn(1, 3, 8, 8),)),
    "instance_norm_pixel_shuffle": (lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8),
                                                          nn.PixelShuffle(2)), lambda: (randn(2, 3, 8, 8),)),
    "embedding_bag": (lambda: nn.EmbeddingBag(20, 8, mode="mean"), lambda: (torch.tensor([[1, 4, 7], [0, 19, 3]]),)),
    "batch_norm_1d_leaky_relu": (lambda: nn.Sequential(nn.Linear(10, 20), nn.BatchNorm1d(20), nn.LeakyReLU(0.1),
                                                       nn.Linear(20, 3), nn.LogSoftmax(-1)), lambda: (randn(6, 10),)),
    "adaptive_avg_pool": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)),
                          lambda: (randn(2, 3, 9, 9),)),
    "activations": (lambda: nn.Sequential(nn.Linear(8, 8), nn.Hardswish(), nn.ELU(), nn.Softplus(), nn.Mish(),
                                          nn.Hardsigmoid(), nn.Hardtanh(-0.5, 0.5), nn.Linear(8, 8)),
                    lambda: (randn(4, 8),)),
    "rms_norm": (lambda: RMSNorm(16), lambda: (randn(3, 7, 16),)),
    "rotary_embedding": (Rotary, lambda: (randn(2, 6, 8, requires_grad=True),)),
    "topk_sort_cumsum": (SortingAndScans, lambda: (randn(4, 10, requires_grad=True),)),
    "causal_mask_attention": (CausalMask, lambda: (randn(2, 5, 5, requires_grad=True),)),
    "einsum_normalize": (EinsumNormalize, lambda: (randn(2, 3, 4, requires_grad=True), randn(2, 4, 5))),
    "sdpa_mask_and_causal": (FusedAttention, lambda: (randn(2, 2, 8, 4, requires_grad=True),
                                                      randn(2, 2, 8, 4).flip(-1).requires_grad_(), randn(2, 2, 8, 4).cos())),
    "writes_into_slices": (WritesIntoSlices, lambda: (randn(6, 4, requires_grad=True), torch.tensor([0, 2, 5, 1]))),
}


def _tensors(output):
    if isinstance(output, torch.Tensor):
        return [output]
    return [t for item in output for t in _tensors(item)] if isinstance(output, (tuple, list)) else []


def _run(model, inputs):
    """Outputs, then the gradients of every parameter and input that requires grad."""
    outputs = _tensors(model(*inputs))
    differentiable = [t for t in outputs if t.requires_grad]
    if differentiable:
        sum(t.float().sum() for t in differentiable).backward()
    grads = [p.grad for p in model.parameters()] + [x.grad for x in inputs if x.requires_grad]
    return outputs, grads


def _twins(make_model, make_inputs):
    """Two copies of a model with the same weights, and two copies of its inputs."""
    torch.manual_seed(0)
    eager_model = make_model()
    eager_inputs = make_inputs()
    compiled_inputs = tuple(x.detach().clone().requires_grad_(x.requires_grad) for x in eager_inputs)
    return eager_model, copy.deepcopy(eager_model), eager_inputs, compiled_inputs


def _compile(frontend, model):
    """tinydynamo's own frontend, or PyTorch's Dynamo handing its graphs to tinydynamo."""
    if frontend == "tinydynamo":
        tinydynamo.reset()
        return tinydynamo.compile(model)
    torch._dynamo.reset()
    return torch.compile(model, backend="tinydynamo", dynamic=False)


@pytest.mark.parametrize("frontend", ["tinydynamo", "torch.compile"])
@pytest.mark.parametrize("name", list(CASES))
def test_layer_forward_and_backward_match_eager(name, frontend):
    make_model, make_inputs = CASES[name]
    eager_model, compiled_model, eager_inputs, compiled_inputs = _twins(make_model, make_inputs)
    expected_outputs, expected_grads = _run(eager_model, eager_inputs)
    compiled = _compile(frontend, compiled_model)
    kernels_before = tinydynamo.stats()["kernels_generated"]
    outputs, grads = _run(compiled, compiled_inputs)
    # it was compiled, not run eagerly (PyTorch's Dynamo runs RNN modules eagerly: allow_rnn=False)
    if frontend == "tinydynamo" or not isinstance(eager_model, nn.RNNBase):
        assert tinydynamo.stats()["kernels_generated"] > kernels_before
    for i, (actual, expected) in enumerate(zip(outputs, expected_outputs, strict=True)):
        torch.testing.assert_close(actual, expected, **TOLERANCE, msg=lambda m: f"{name} output {i}: {m}")
    for i, (actual, expected) in enumerate(zip(grads, expected_grads, strict=True)):
        torch.testing.assert_close(actual, expected, **TOLERANCE, msg=lambda m: f"{name} gradient {i}: {m}")


@pytest.mark.parametrize("name", ["transformer_encoder_layer", "transformer_decoder_layer", "multihead_attention"])
def test_attention_layers_are_one_graph(name):
    # torch.nn.functional's helpers on constants (_canonical_mask(None, ...)) are folded, not breaks
    make_model, make_inputs = CASES[name]
    tinydynamo.reset()
    explanation = tinydynamo.explain(make_model())(*make_inputs())
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0), explanation.break_reasons


def test_a_custom_op_with_a_fake_kernel_is_an_extern_call_in_one_graph():
    @torch.library.custom_op("tinydynamo_test_layers::scale_shift", mutates_args=())
    def scale_shift(x: torch.Tensor, scale: float) -> torch.Tensor:
        return x * scale + 1

    scale_shift.register_fake(lambda x, scale: torch.empty_like(x))

    def fn(x):
        return torch.relu(scale_shift(x * 2, 3.0)).sum(-1)

    x = randn(4, 5)
    tinydynamo.reset()
    explanation = tinydynamo.explain(fn)(x)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)
    before = tinydynamo.stats()["implicit_fallbacks"]
    torch.testing.assert_close(tinydynamo.compile(fn)(x), fn(x))
    assert tinydynamo.stats()["implicit_fallbacks"] == before + 1


def test_a_custom_op_without_a_fake_kernel_is_a_graph_break_that_says_so():
    @torch.library.custom_op("tinydynamo_test_layers::no_fake", mutates_args=())
    def no_fake(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    def fn(x):
        return no_fake(x * 2) + 1

    x = randn(3)
    tinydynamo.reset()
    explanation = tinydynamo.explain(fn)(x)
    assert explanation.graph_break_count == 1
    assert "failed on meta tensors" in str(explanation.break_reasons[0])
    torch.testing.assert_close(tinydynamo.compile(fn)(x), fn(x))


def test_three_argument_type_is_a_graph_break():
    def fn(x):
        point = type("Point", (), {"scale": 2.0})
        return x * point.scale

    x = randn(3)
    tinydynamo.reset()
    explanation = tinydynamo.explain(fn)(x)
    assert "builtin type() with 3 positional" in str(explanation.break_reasons[0])
    torch.testing.assert_close(tinydynamo.compile(fn)(x), fn(x))


def _embedding_bag_with_weights(weight, indices):
    per_sample = torch.linspace(-1.0, 1.0, indices.numel())
    return F.embedding_bag(indices, weight, torch.tensor([0, 3]), mode="sum", per_sample_weights=per_sample)


OPS = {
    # a check op with no output: aten._linalg_check_errors must still run (and raise if singular)
    "linalg_inv": (lambda a: torch.linalg.inv(a) * 2, lambda: (torch.eye(4) * 2 + 0.1,)),
    # a real output shape that aten's meta kernel gets wrong (offset2bag): the traced one is used
    "embedding_bag_per_sample_weights": (_embedding_bag_with_weights,
                                         lambda: (randn(10, 5), torch.tensor([1, 4, 7, 0, 9]))),
    # complex tensors: no prims for them, the aten ops run as extern kernels (views as their copy variants)
    "complex_and_fft": (lambda x: torch.fft.rfft(x).abs() + x.to(torch.complex64).real.sum(), lambda: (randn(4, 8),)),
    # (the method: torch_geometric replaces torch.index_select with a wrapper that rejects 0-d input)
    "index_select_of_a_0d_tensor": (lambda x: x.index_select(0, torch.tensor([0])) * 3,
                                    lambda: (torch.tensor(2.5),)),
    "unfold_diagonal": (lambda x: x.unfold(1, 3, 2).sum(-1) + torch.diagonal(x, 1).sum(), lambda: (randn(4, 7),)),
}


@pytest.mark.parametrize("name", list(OPS))
def test_ops_outside_the_prims_match_eager(name):
    fn, make_inputs = OPS[name]
    inputs = make_inputs()
    tinydynamo.reset()
    torch.testing.assert_close(tinydynamo.compile(fn)(*inputs), fn(*inputs))
    assert tinydynamo.stats()["fallbacks"] == 0  # compiled, not run eagerly


def test_a_singular_matrix_raises_as_in_eager():
    compiled = tinydynamo.compile(OPS["linalg_inv"][0])
    compiled(torch.eye(3))
    with pytest.raises(torch.linalg.LinAlgError):
        compiled(torch.zeros(3, 3))


class FrozenBatchNorm(nn.Module):
    """Fine-tuning with batch norm in eval mode: its statistics stay, its affine weights learn."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.bn.eval()

    def forward(self, x):
        return self.bn(self.conv(x)).relu()


GRAD_CASES = {
    "frozen_batch_norm": (FrozenBatchNorm, lambda: (randn(2, 3, 6, 6),)),
    # normalized over every dim: the weight's gradient sums over no dim at all
    "layer_norm_over_all_dims": (lambda: nn.LayerNorm([2, 3]), lambda: (randn(2, 3, requires_grad=True),)),
}
GRAD_FUNCTIONS = {
    "cumprod": lambda x: torch.cumprod(x, 1),  # its backward takes max.dim of a bool tensor
    "sgn": lambda x: torch.sgn(x) * x,  # a backward graph with no workspace at all
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_training_through_special_cases_matches_eager(name):
    make_model, make_inputs = GRAD_CASES[name]
    eager_model, compiled_model, eager_inputs, compiled_inputs = _twins(make_model, make_inputs)
    expected_outputs, expected_grads = _run(eager_model, eager_inputs)
    tinydynamo.reset()
    outputs, grads = _run(tinydynamo.compile(compiled_model), compiled_inputs)
    torch.testing.assert_close(outputs, expected_outputs, **TOLERANCE)
    torch.testing.assert_close(grads, expected_grads, **TOLERANCE)
    if isinstance(eager_model, FrozenBatchNorm):  # the statistics did not move
        torch.testing.assert_close(compiled_model.bn.running_mean, eager_model.bn.running_mean)


@pytest.mark.parametrize("name", list(GRAD_FUNCTIONS))
def test_gradients_of_special_functions_match_eager(name):
    fn = GRAD_FUNCTIONS[name]
    x = torch.tensor([[0.5, -2.0, 0.0, 1.5], [1.0, 3.0, -0.5, 0.0]], requires_grad=True)
    tinydynamo.reset()
    out = tinydynamo.compile(fn)(x)
    torch.testing.assert_close(out, fn(x))
    torch.testing.assert_close(torch.autograd.grad(out.sum(), x), torch.autograd.grad(fn(x).sum(), x))


@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_an_rnn_over_changing_lengths_runs_eagerly_inside_a_dynamic_graph(cls):
    """aten unrolls an RNN over the sequence, so the dynamic recompile pinned the length: one
    compile per length up to the cache limit, then the whole model ran eagerly. Over symbolic
    sizes the RNN runs eagerly now (torch.compile runs every RNN eagerly), the rest compiled."""
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding, self.rnn, self.out = nn.Embedding(20, 8), cls(8, 16, batch_first=True), nn.Linear(16, 5)

        def forward(self, tokens):
            hidden, _ = self.rnn(self.embedding(tokens))
            return self.out(hidden).log_softmax(-1)

    tinydynamo.reset()
    torch.manual_seed(0)
    model = Tagger()
    compiled = tinydynamo.compile(model)
    for length in range(5, 15):
        tokens = torch.randint(0, 20, (2, length))
        expected = model(tokens)
        expected.sum().backward()
        grads = [p.grad for p in model.parameters()]
        model.zero_grad()
        actual = compiled(tokens)
        actual.sum().backward()
        torch.testing.assert_close(actual, expected)
        torch.testing.assert_close([p.grad for p in model.parameters()], grads)
        model.zero_grad()
    stats = tinydynamo.stats()
    assert stats["fallbacks"] == 0 and stats["frames_compiled"] <= 6, stats
