"""A model sharded with FSDP2's ``fully_shard`` trains through tinydynamo exactly like eager FSDP2
(chapter 14). FSDP2's hooks run eagerly around the compiled forwards; a DTensor reaching a
compiled function is refused with a reason naming it, and that code runs eagerly."""
import pytest
import torch
import torch.nn as nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import tinydynamo
from tinydynamo.testing.distributed import run_ranks

from test_ddp import make_model, train


def sharded(layout, mp_policy=None):
    """The test model under fully_shard: the root only, or each linear layer and the root."""
    model = make_model()
    if layout == "per layer":
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mp_policy=mp_policy or MixedPrecisionPolicy())
    fully_shard(model, mp_policy=mp_policy or MixedPrecisionPolicy())
    return model


def full(tensor):
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def compare_with_eager_fsdp(rank, world_size, backend, layout, mixed):
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if mixed else None
    tinydynamo.reset()
    expected = train(sharded(layout, policy), rank)
    got = train(tinydynamo.compile(sharded(layout, policy), backend=backend), rank)
    # aot_eager runs the same aten ops as eager: bit for bit. Inductor's fused kernels round differently.
    same = torch.equal if backend == "aot_eager" else lambda a, b: torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    failures = [f"rank {rank}: {what} {i} differs by {(full(a) - full(b)).abs().max()}"
                for what, e, g in zip(("loss", "parameter", "gradient"), expected, got)
                for i, (a, b) in enumerate(zip(e, g)) if not same(full(a), full(b))]
    explained = tinydynamo.explain(sharded(layout, policy))(torch.randn(8, 32))
    return failures, explained.graph_count, [str(reason) for reason in explained.break_reasons]


@pytest.mark.parametrize("backend,layout,mixed", [("aot_eager", "root", False), ("inductor", "root", False),
                                                  ("aot_eager", "per layer", False), ("aot_eager", "root", True)])
def test_fsdp2_trains_like_eager(backend, layout, mixed):
    (failures, graphs, reasons), _ = run_ranks(compare_with_eager_fsdp, 2, backend, layout, mixed, timeout=300)
    assert failures == []
    if layout == "root":  # the root's hooks gather every parameter before its forward: one graph
        assert (graphs, reasons) == (1, [])
    else:  # each layer's forward pre-hook is inlined up to FSDP's own hook, which torch marks
        # torch._dynamo.disable: the Sequential's loop runs eagerly, and each of its 12 layers'
        # forwards is a graph of its own (counted and explained)
        assert graphs == 12 and len(reasons) == 1 and "_dynamo_disable" in reasons[0]


def explain_on_a_dtensor(rank, world_size):
    model = sharded("root")
    explained = tinydynamo.explain(lambda weight: weight * 2 + 1)(model[0].weight)
    out = tinydynamo.compile(lambda weight: weight * 2 + 1)(model[0].weight)
    return [str(reason) for reason in explained.break_reasons], torch.equal(full(out), full(model[0].weight * 2 + 1))


def test_a_dtensor_is_refused_with_its_name_and_runs_eagerly():
    reasons, equal = run_ranks(explain_on_a_dtensor, 2, timeout=120)[0]
    assert equal and reasons and "tensor subclass DTensor" in reasons[0] and "FSDP2" in reasons[0]
