"""The DDPOptimizer's bucketing and graph split, in one process (chapter 14): the pieces compute
what the whole graph computes, gradients included, whatever crosses their boundaries (tied
weights, inputs returned as they are, several outputs). tests/distributed runs it under DDP."""
import types

import torch
import torch.nn as nn

import tinydynamo
from tinydynamo.backends import aot_eager
from tinydynamo.dynamo.ddp_optimizer import DDPOptimizer


def ddp_like(module, bucket_cap_mb, ignore=()):
    """What DDPOptimizer reads of a DistributedDataParallel module."""
    return types.SimpleNamespace(module=module, bucket_bytes_cap=int(bucket_cap_mb * 1024 * 1024),
                                 bucket_bytes_cap_default=False, parameters_to_ignore=set(ignore))


class TiedLM(nn.Module):
    """An embedding whose weight is also the output projection's, as in GPT-2."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 32)
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.Tanh()) for _ in range(4)])

    def forward(self, ids, extra):
        h = self.blocks(self.embed(ids))
        return h @ self.embed.weight.t(), extra, h.sum()


def pieces_and_results(model, args, bucket_cap_mb, ignore=()):
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return aot_eager(gm, example_inputs)

    compiled = tinydynamo.compile(model, backend=DDPOptimizer(ddp_like(model, bucket_cap_mb, ignore), record))
    return graphs, compiled(*args)


def test_split_pieces_compute_the_whole_graph_with_tied_weights():
    model = TiedLM()
    ids, extra = torch.randint(0, 50, (3, 5)), torch.randn(2)
    graphs, (logits, same, total) = pieces_and_results(model, (ids, extra), bucket_cap_mb=0.003)
    expected = model(ids, extra)
    assert len(graphs) >= 3
    assert torch.allclose(logits, expected[0], atol=1e-6) and same is extra and torch.allclose(total, expected[2])
    (logits.sum() + total).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    (expected[0].sum() + expected[2]).backward()
    assert all(torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(grads, model.parameters()))


def test_ignored_parameters_do_not_fill_buckets():
    model = TiedLM()
    ids, extra = torch.randint(0, 50, (3, 5)), torch.randn(2)
    ignored = [name for name, _ in model.named_parameters()]
    graphs, _ = pieces_and_results(model, (ids, extra), bucket_cap_mb=0.003, ignore=ignored)
    assert len(graphs) == 1


def test_a_graph_that_switches_grad_mode_stays_whole():
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(x):
        with torch.no_grad():
            x = model[0](x)
        return model[4](model[3](model[2](model[1](x))))

    graphs = []
    backend = DDPOptimizer(ddp_like(model, 0.0001), lambda gm, ex: graphs.append(gm) or gm.forward)
    x = torch.randn(2, 16)
    assert torch.allclose(tinydynamo.compile(forward, backend=backend)(x), forward(x))
    assert len(graphs) == 1
