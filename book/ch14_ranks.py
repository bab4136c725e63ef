"""What chapter 14 runs on each rank. ``run_ranks`` starts fresh processes, which import the
functions they run by name: so they live in this file, next to the chapter, not in its cells."""
import contextlib
import io
import logging
import time

import torch
import torch.distributed as dist
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
    torch._logging.set_logs(dynamo=logging.ERROR)  # not its warning about DDP's record_function
    model = torch.compile(DDP(mlp(width, depth), bucket_cap_mb=bucket_cap_mb),
                          backend=lambda gm, example_inputs: graphs.append(gm) or gm.forward)
    try:
        results["torch.compile(DDP(m))"] = (train_steps(model, rank), len(graphs))
    except AssertionError as error:  # its DDPOptimizer's first bucket is 1 MiB, whatever the cap
        results["torch.compile(DDP(m))"] = (f"AssertionError: {error}", len(graphs))
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


def issued_then_waited(x, w):
    t = x * 2
    dist.all_reduce(t)
    y = torch.sin(x) @ w  # independent of the all-reduce
    return t + y


def collective_schedule(rank, world_size):
    """``issued_then_waited`` compiled by tinydynamo's inductor, against eager; the graph that
    dynamo captured and the order the Scheduler put the kernels in (the ``graph`` and
    ``schedule`` logs)."""
    torch.manual_seed(rank)
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    log = io.StringIO()
    with contextlib.redirect_stderr(log):
        tinydynamo.set_logs("graph,schedule")
        compiled = tinydynamo.compile(issued_then_waited)(x, w)
        tinydynamo.set_logs("")
    same = torch.allclose(compiled, issued_then_waited(x, w), rtol=1e-5, atol=1e-5)
    return same, log.getvalue()


def branch(x, weight):
    return torch.tanh(x @ weight)


def forked(x, w1, w2):
    first = torch.jit.fork(branch, x, w1)
    second = torch.jit.fork(branch, x, w2)
    y = x.relu()
    return torch.jit.wait(first) + torch.jit.wait(second) + y.sum()
