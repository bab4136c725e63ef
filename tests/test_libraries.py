"""Libraries that people's models call, compiled as torch.compile compiles them: einops.

einops parses its pattern strings in Python (cached with functools.lru_cache), finds its torch
backend among ``AbstractBackend.__subclasses__()`` and imports a submodule on its first call.
torch.compile captures each function below in one graph; so must tinydynamo, with eager's
results and gradients.
"""
import subprocess
import sys
import textwrap

import einops
import pytest
import torch
import torch._dynamo
from einops.layers.torch import Rearrange, Reduce

import tinydynamo


def patterns(x):
    heads = einops.rearrange(x, "b (h d) -> b h d", h=2)
    pooled = einops.reduce(heads, "b h d -> b d", "mean")
    tiled = einops.repeat(pooled, "b d -> b r d", r=3)
    packed, shapes = einops.pack([x, pooled], "b *")
    first, second = einops.unpack(packed, shapes, "b *")
    return tiled, einops.einsum(x, x, "b i, c i -> b c"), first * 2, second + 1


LAYERS = torch.nn.Sequential(Rearrange("b (h d) -> b h d", h=4), torch.nn.Linear(2, 2), Reduce("b h d -> b d", "max"))


def layers(x):
    return LAYERS(x)


@pytest.mark.parametrize("fn", [patterns, layers], ids=lambda f: f.__name__)
def test_einops_compiles_in_one_graph_like_torch_compile(fn):
    x = torch.randn(4, 8, requires_grad=True)
    tinydynamo.reset()
    explained = tinydynamo.explain(fn)(x)
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(x)
    assert (explained.graph_count, explained.graph_break_count) == (theirs.graph_count, theirs.graph_break_count) \
        == (1, 0), explained.break_reasons
    expected, actual = fn(x), tinydynamo.compile(fn)(x)
    torch.testing.assert_close(actual, expected)
    grads = [torch.autograd.grad(sum(t.sum() for t in out), x)[0] for out in (actual, expected)]
    torch.testing.assert_close(*grads)


def test_einops_first_call_inside_a_compiled_frame():
    """In a fresh process the first einops call makes its torch backend, which imports
    ``einops._torch_specific``: the import runs while tracing, as eager runs it there."""
    script = textwrap.dedent("""
        import torch, einops, tinydynamo
        fn = lambda x: einops.rearrange(x, "b (h d) -> b h d", h=2)
        x = torch.randn(4, 8)
        explained = tinydynamo.explain(fn)(x)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
        torch.testing.assert_close(tinydynamo.compile(fn)(x), fn(x))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env={"TINYDYNAMO_STRICT": "1", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
