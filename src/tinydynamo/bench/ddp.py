"""The DDP benchmark: training steps per second of compiled DistributedDataParallel (chapter 14,
"Compiling distributed programs").

``python -m tinydynamo.bench --ddp`` starts 2 gloo ranks on this machine (one thread each) and
trains an MLP under DDP in three variants, interleaved in rounds so that both ranks always run
the same variant together:

- eager DDP;
- DDP around tinydynamo (inductor), with the graph split at DDP's buckets (DDPOptimizer);
- the same without the split (``config.optimize_ddp=False``): one graph, so every bucket's
  all-reduce waits for the whole backward.

It reports the median steps per second of each variant over the rounds, on rank 0, and the
number of buckets DDP used.
"""
import statistics
import time

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tinydynamo

from ..testing.distributed import run_ranks

VARIANTS = ("eager DDP", "tinydynamo DDP, split at buckets", "tinydynamo DDP, one graph")


def mlp(width, depth):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(width, 8))


def build(variant, width, depth, bucket_cap_mb):
    model = DDP(mlp(width, depth), bucket_cap_mb=bucket_cap_mb)
    if variant != "eager DDP":
        model = tinydynamo.compile(model)
    return model, torch.optim.SGD(model.parameters(), lr=1e-3)


def step(model, opt, x, y, variant):
    with tinydynamo.config.patch(optimize_ddp=variant != "tinydynamo DDP, one graph"):
        opt.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def bench_rank(rank, world_size, width, depth, batch, bucket_cap_mb, steps, rounds):
    torch.manual_seed(rank)
    x, y = torch.randn(batch, width), torch.randn(batch, 8)
    built = {variant: build(variant, width, depth, bucket_cap_mb) for variant in VARIANTS}
    for variant, (model, opt) in built.items():
        for _ in range(3):  # compile, and let DDP rebuild its buckets
            step(model, opt, x, y, variant)
    times = {variant: [] for variant in VARIANTS}
    for _ in range(rounds):
        for variant, (model, opt) in built.items():
            start = time.perf_counter()
            for _ in range(steps):
                step(model, opt, x, y, variant)
            times[variant].append((time.perf_counter() - start) / steps)
    buckets = built["eager DDP"][0]._get_ddp_logging_data().get("rebuilt_bucket_sizes", "")
    return {"steps_per_s": {v: 1 / statistics.median(t) for v, t in times.items()},
            "buckets": len(buckets.split(",")) if buckets else 1}


def run(quick=False, rounds=None):
    """Rank 0's results, with the workload's description."""
    width, depth, batch = (256, 4, 32) if quick else (1024, 8, 64)
    bucket_cap_mb, steps = (0.3, 3) if quick else (4, 5)
    rounds = rounds or (3 if quick else 7)
    result = run_ranks(bench_rank, 2, width, depth, batch, bucket_cap_mb, steps, rounds, timeout=1800)[0]
    result["workload"] = (f"MLP of {depth} x (Linear {width}x{width}, LayerNorm, GELU), batch {batch} per rank, "
                          f"2 gloo ranks of 1 thread, bucket_cap_mb={bucket_cap_mb}")
    return result


def to_markdown(result):
    eager = result["steps_per_s"]["eager DDP"]
    lines = [result["workload"] + f"; DDP used {result['buckets']} buckets", "",
             "| variant | steps/s | vs eager DDP |", "|---|---|---|"]
    lines += [f"| {variant} | {rate:.1f} | {rate / eager:.2f}x |" for variant, rate in result["steps_per_s"].items()]
    return "\n".join(lines)
