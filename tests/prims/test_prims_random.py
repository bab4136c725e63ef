"""Random ops: prims.uniform draws differently from aten's kernels, so compare properties."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from prims_helpers import make_tensor as T, run_decomposed
from tinydynamo.prims import decompose

aten = torch.ops.aten


def test_rand_is_uniform_on_unit_interval():
    values, _ = run_decomposed(aten.rand.default, ([20000],), {})
    assert values.dtype == torch.float32 and 0 <= values.min() and values.max() < 1
    assert abs(values.mean().item() - 0.5) < 0.02 and abs(values.var().item() - 1 / 12) < 0.01


def test_bernoulli_frequency():
    ones, _ = run_decomposed(aten.bernoulli.p, (T(20000), 0.3), {})
    assert set(ones.unique().tolist()) <= {0.0, 1.0}
    assert abs(ones.mean().item() - 0.3) < 0.02


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_native_dropout_keeps_and_scales(p):
    x = T(200, 100)
    (out, mask), _ = run_decomposed(aten.native_dropout.default, (x, p, True), {})
    assert mask.dtype == torch.bool and abs(mask.float().mean().item() - (1 - p)) < 0.02
    torch.testing.assert_close(out, x * mask / (1 - p))


def test_dropout_backward_uses_the_forward_mask():
    def fn(x):
        y, _ = aten.native_dropout.default(x, 0.5, True)
        return y, torch.autograd.grad(y.sum(), x)[0]

    x = T(50, 40).requires_grad_()
    gm = make_fx(fn)(x)
    with torch.no_grad():
        out, grad = decompose(gm, [x])(x)
    kept = out != 0
    assert 0.4 < kept.float().mean().item() < 0.6
    torch.testing.assert_close(grad, kept.float() * 2.0)
    torch.testing.assert_close(out[kept], x.detach()[kept] * 2.0)


def test_functional_dropout_from_torch_function():
    """F.dropout on CPU is bernoulli_ then div_ and mul; functionalized: bernoulli.p, div, mul."""
    x = T(100, 100)
    gm = make_fx(torch.func.functionalize(lambda x: torch.nn.functional.dropout(x, 0.25, True)))(x)
    assert any(n.target is aten.bernoulli.p for n in gm.graph.nodes)
    out = decompose(gm, [x])(x)
    kept = out != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.02
    torch.testing.assert_close(out[kept], x[kept] / 0.75)


def test_random_prims_read_torch_global_generator():
    torch.manual_seed(123)
    first, prim_gm = run_decomposed(aten.rand.default, ([5],), {})
    torch.manual_seed(123)
    torch.testing.assert_close(prim_gm(), first)
