"""DistributedDataParallel around or inside tinydynamo.compile trains exactly like eager DDP, on
every rank, with the captured graph split at DDP's gradient buckets (chapter 14)."""
import pytest
import torch
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

import tinydynamo
from tinydynamo.testing.distributed import run_ranks

BUCKET_CAP_MB = 0.05  # a bucket closes at each 128x128 linear layer (64 KiB of weights)


def make_model():
    torch.manual_seed(0)
    layers = [nn.Linear(32, 128), nn.GELU()]
    for _ in range(3):
        layers += [nn.Linear(128, 128), nn.LayerNorm(128), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(128, 4))


def train(model, rank, steps=3):
    """Losses, then every parameter and gradient after ``steps`` SGD steps on this rank's data."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        torch.manual_seed(100 * step + rank)  # each rank sees its own batch
        x, y = torch.randn(8, 32), torch.randn(8, 4)
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    params = [p.detach().clone() for p in model.parameters()]
    grads = [p.grad.clone() for p in model.parameters()]
    return losses, params, grads


def wrapped(order, backend):
    ddp = lambda m: DDP(m, bucket_cap_mb=BUCKET_CAP_MB)
    if order == "eager":
        return ddp(make_model())
    if order == "compile(DDP)":
        return tinydynamo.compile(ddp(make_model()), backend=backend)
    return ddp(tinydynamo.compile(make_model(), backend=backend))


def compare_with_eager(rank, world_size, backend):
    tinydynamo.reset()
    expected = train(wrapped("eager", backend), rank)
    failures = []
    for order in ("compile(DDP)", "DDP(compile)"):
        tinydynamo.reset()
        got = train(wrapped(order, backend), rank)
        for what, e, g in zip(("loss", "parameter", "gradient"), expected, got):
            for i, (a, b) in enumerate(zip(e, g)):
                if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
                    failures.append(f"rank {rank} {order} {backend}: {what} {i} differs by {(a - b).abs().max()}")
        if tinydynamo.stats()["graphs"] < 2:
            failures.append(f"rank {rank} {order} {backend}: the graph was not split at buckets")
    return failures


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_ddp_trains_like_eager_ddp(backend):
    assert run_ranks(compare_with_eager, 2, backend, timeout=300) == [[], []]


def explain_under_ddp(rank, world_size):
    """explain() of the model alone and under DDP, the bytes of parameters in each piece, and the
    sizes of the buckets that eager DDP settles on after its first step (rebuilt buckets)."""
    model = make_model()
    # The Sequential's layers are read as L['self']._modules['0'], ...
    placeholder_of = {"l_self_modules_" + name.replace(".", "_"): p for name, p in model.named_parameters()}
    whole = tinydynamo.explain(model)(torch.randn(8, 32))
    split = tinydynamo.explain(DDP(model, bucket_cap_mb=BUCKET_CAP_MB))(torch.randn(8, 32))
    piece_bytes = [sum(placeholder_of[n.name].numel() * 4 for n in gm.graph.find_nodes(op="placeholder")
                       if n.name in placeholder_of) for gm in split.graphs]
    eager = DDP(make_model(), bucket_cap_mb=BUCKET_CAP_MB)
    train(eager, rank, steps=3)  # DDP rebuilds its buckets in the second step
    ddp_buckets = [int(size) for size in eager._get_ddp_logging_data()["rebuilt_bucket_sizes"].split(", ")]
    return whole.graph_count, split.graph_break_count, piece_bytes, ddp_buckets


def test_the_graph_is_split_where_ddp_puts_its_buckets():
    whole, breaks, piece_bytes, ddp_buckets = run_ranks(explain_under_ddp, 2, timeout=120)[0]
    assert (whole, breaks) == (1, 0)
    # Walking backwards, a bucket closes at each 128x128 layer (64 KiB, over the 0.05 MB cap); DDP's
    # buckets are listed in the order they are all-reduced, the pieces in the forward's order.
    assert piece_bytes[::-1] == ddp_buckets and len(ddp_buckets) == 4


def communication_order(rank, world_size, optimize_ddp):
    """The order of DDP's bucket all-reduces and of the input's gradient, in a third step (after
    DDP has rebuilt its buckets), eager and compiled."""
    orders = {}
    for kind in ("eager", "compiled"):
        events = []

        def hook(state, bucket):
            events.append(f"all-reduce {bucket.index()}")
            return allreduce_hook(state, bucket)

        ddp = DDP(make_model(), bucket_cap_mb=BUCKET_CAP_MB)
        ddp.register_comm_hook(None, hook)
        model = ddp if kind == "eager" else tinydynamo.compile(ddp, backend="aot_eager")
        with tinydynamo.config.patch(optimize_ddp=optimize_ddp):
            for _ in range(3):
                events.clear()
                x = torch.randn(8, 32, requires_grad=True)
                x.register_hook(lambda grad: events.append("input gradient"))
                model(x).sum().backward()
        orders[kind] = list(events)
    return orders


def test_each_bucket_is_all_reduced_while_the_backward_goes_on():
    split = run_ranks(communication_order, 2, True, timeout=120)[0]
    assert split["compiled"] == split["eager"]
    assert split["eager"][:4] == ["all-reduce 0", "all-reduce 1", "all-reduce 2", "input gradient"]
    whole = run_ranks(communication_order, 2, False, timeout=120)[0]
    assert whole["compiled"][0] == "input gradient"  # one graph: every all-reduce waits for its backward
