"""What chapter 14 runs on each rank. ``run_ranks`` starts fresh processes, which import the
functions they run by name: so they live in this file, next to the chapter, not in its cells."""
import time

import torch
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

import tinydynamo


def mlp(width, depth, inputs=16, outputs=4):
    torch.manual_seed(0)
    layers = [nn.Linear(inputs, width), nn.ReLU()]
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, outputs))


def train_steps(model, rank, steps=3):
    """``steps`` SGD steps on this rank's own batches; the losses."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        torch.manual_seed(100 * step + rank)
        x, y = torch.randn(8, 16), torch.randn(8, 4)
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def ddp_buckets(rank, world_size, width, depth, bucket_cap_mb):
    """The bucket sizes eager DDP settles on (it rebuilds them in its second step), in the order it
    all-reduces them."""
    model = DDP(mlp(width, depth), bucket_cap_mb=bucket_cap_mb)
    train_steps(model, rank)
    return [int(size) for size in model._get_ddp_logging_data()["rebuilt_bucket_sizes"].split(", ")]


def both_orders(rank, world_size, width, depth, bucket_cap_mb):
    """Losses of eager DDP, tinydynamo.compile(DDP(m)) and DDP(tinydynamo.compile(m)), and how many
    graphs tinydynamo compiled for each."""
    results = {"eager DDP": (train_steps(DDP(mlp(width, depth), bucket_cap_mb=bucket_cap_mb), rank), 0)}
    for order in ("compile(DDP(m))", "DDP(compile(m))"):
        tinydynamo.reset()
        if order == "compile(DDP(m))":
            model = tinydynamo.compile(DDP(mlp(width, depth), bucket_cap_mb=bucket_cap_mb))
        else:
            model = DDP(tinydynamo.compile(mlp(width, depth)), bucket_cap_mb=bucket_cap_mb)
        results[order] = (train_steps(model, rank), tinydynamo.stats()["graphs"])
    graphs = []
    torch._dynamo.reset()
    model = torch.compile(DDP(mlp(width, depth), bucket_cap_mb=bucket_cap_mb),
                          backend=lambda gm, example_inputs: graphs.append(gm) or gm.forward)
    results["torch.compile(DDP(m))"] = (train_steps(model, rank), len(graphs))
    return results


def communication_timeline(rank, world_size, width, depth, bucket_cap_mb):
    """When each bucket's all-reduce is launched, and when the backward reaches the input, in ms
    from the start of the backward: eager DDP, and compiled DDP with and without the split."""
    timelines = {}
    for variant in ("eager DDP", "tinydynamo, split at buckets", "tinydynamo, one graph"):
        events = []

        def hook(state, bucket):
            events.append((f"all-reduce {bucket.index()}", time.perf_counter()))
            return allreduce_hook(state, bucket)

        model = DDP(mlp(width, depth, inputs=width), bucket_cap_mb=bucket_cap_mb)
        model.register_comm_hook(None, hook)
        if variant != "eager DDP":
            model = tinydynamo.compile(model)
        with tinydynamo.config.patch(optimize_ddp=variant != "tinydynamo, one graph"):
            for _ in range(4):  # compile, rebuild DDP's buckets, then measure the last step
                events.clear()
                x = torch.randn(64, width, requires_grad=True)
                x.register_hook(lambda grad: events.append(("input gradient", time.perf_counter())))
                loss = model(x).sum()
                start = time.perf_counter()
                loss.backward()
        timelines[variant] = [(label, 1000 * (t - start)) for label, t in events]
    return timelines


def fsdp2(rank, world_size, per_layer):
    """FSDP2 (``fully_shard``) eager and through tinydynamo: the losses, and what explain() says."""
    def sharded():
        model = mlp(64, 2)
        if per_layer:
            for layer in model:
                if isinstance(layer, nn.Linear):
                    fully_shard(layer)
        return fully_shard(model)

    tinydynamo.reset()
    eager = train_steps(sharded(), rank)
    compiled = train_steps(tinydynamo.compile(sharded()), rank)
    explained = tinydynamo.explain(sharded())(torch.randn(8, 16))
    return eager, compiled, explained.graph_count, [str(reason) for reason in explained.break_reasons]
