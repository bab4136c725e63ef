"""The performance tuning guide's advice, measured with and without a compiler (chapter 13).

PyTorch's performance tuning guide asks its readers to do by hand several things that a compiler
may do for them. ``python -m tinydynamo.bench --tuning`` takes six of them and measures each on a
small model, eagerly and compiled by tinydynamo, so that the chapter can say which advice
tinydynamo makes unnecessary and which still matters:

- ``fuse_pointwise``: fuse chains of pointwise operations (the guide suggests a compiler);
- ``no_grad``: run inference under ``torch.no_grad()``, which saves no activations;
- ``zero_grad``: ``optimizer.zero_grad(set_to_none=True)``, so the backward writes gradients
  instead of adding them to zeros;
- ``checkpointing``: activation checkpointing, recomputing activations in the backward instead of
  saving them, which the min-cut partitioner does for cheap operations on its own (chapter 6);
- ``channels_last``: the channels-last memory format for convolutions;
- ``mixed_precision``: ``torch.autocast`` with bfloat16, and a model converted to bfloat16.

Times are medians of calls interleaved in rounds, as in ``harness``. Activations are what autograd
saves for the backward (seen by ``torch.autograd.graph.saved_tensors_hooks``), which counts the
values that a compiled graph saves as well as eager's.
"""
import dataclasses
import statistics
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

import tinydynamo


@dataclasses.dataclass
class Finding:
    advice: str  # the guide's advice
    values: dict  # what was measured -> its value (times in ms, sizes in KiB)


def medians_ms(calls, rounds, number):
    """The median time of one call of each function, in ms, its calls interleaved in rounds
    after one warm-up call each (which compiles)."""
    samples = {name: [] for name in calls}
    for call in calls.values():
        call()
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(number):
                call()
            samples[name].append((time.perf_counter() - start) / number * 1e3)
    return {name: round(statistics.median(s), 3) for name, s in samples.items()}


def activations_kib(fn, model, x):
    """KiB of activations that autograd saves for the backward during a warm call ``fn(x)``:
    the saved tensors' storages, each counted once, other than ``model``'s parameters and ``x``
    (saved by reference, they cost no memory)."""
    fn(x)  # compiles: tracing saves tensors of its own
    existing = {t.untyped_storage().data_ptr() for t in [x, *model.parameters()]}
    saved = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in existing:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn(x)
    return round(sum(saved.values()) / 1024, 1)


def mlp(width, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                               torch.nn.Linear(4 * width, width), torch.nn.LayerNorm(width))


def pointwise_chain(x):
    return torch.tanh(torch.sigmoid(x * 0.5 + 1.0) * x - 0.25) * 3.0


def fuse_pointwise(quick, rounds):
    x = torch.randn(2**14 if quick else 2**22)
    compiled = tinydynamo.compile(pointwise_chain)
    before = tinydynamo.stats()["kernels_generated"]
    compiled(x)
    kernels = tinydynamo.stats()["kernels_generated"] - before
    (graph,) = tinydynamo.explain(pointwise_chain)(x).graphs
    ops = sum(node.op == "call_function" for node in graph.graph.nodes)
    times = medians_ms({"eager ms": lambda: pointwise_chain(x), "tinydynamo ms": lambda: compiled(x)},
                       rounds, 20)
    return Finding("fuse pointwise operations", {"eager ops": ops, "tinydynamo kernels": kernels, **times})


def no_grad(quick, rounds):
    model, x = mlp(64 if quick else 256), torch.randn(8 if quick else 64, 64 if quick else 256)
    compiled = tinydynamo.compile(model)

    def without_grad(fn):
        return lambda x: torch.no_grad()(fn)(x)

    values = {}
    for name, fn in (("eager", model), ("tinydynamo", compiled)):
        values[f"{name}, activations KiB"] = activations_kib(fn, model, x)
        values[f"{name}, activations KiB, no_grad"] = activations_kib(without_grad(fn), model, x)
    times = medians_ms({"eager ms": lambda: model(x), "eager ms, no_grad": lambda: without_grad(model)(x),
                        "tinydynamo ms": lambda: compiled(x), "tinydynamo ms, no_grad": lambda: without_grad(compiled)(x)},
                       rounds, 10)
    return Finding("inference under torch.no_grad()", {**values, **times})


def training_step(fn, x, model, set_to_none):
    model.zero_grad(set_to_none=set_to_none)
    fn(x).square().mean().backward()


def zero_grad(quick, rounds):
    model, x = mlp(64 if quick else 256), torch.randn(8 if quick else 64, 64 if quick else 256)
    compiled = tinydynamo.compile(model)
    calls = {f"{name} ms, set_to_none={flag}": (lambda fn=fn, flag=flag: training_step(fn, x, model, flag))
             for name, fn in (("eager", model), ("tinydynamo", compiled)) for flag in (False, True)}
    return Finding("optimizer.zero_grad(set_to_none=True)", medians_ms(calls, rounds, 5))


def checkpointed(model):
    """``model``'s forward under activation checkpointing (recomputed in the backward)."""
    return lambda x: torch.utils.checkpoint.checkpoint(model, x, use_reentrant=False)


def checkpointing(quick, rounds):
    model, x = mlp(64 if quick else 256), torch.randn(8 if quick else 64, 64 if quick else 256)
    variants = {"eager": model, "eager, checkpointed": checkpointed(model), "tinydynamo": tinydynamo.compile(model),
                "tinydynamo, checkpointed": tinydynamo.compile(checkpointed(model))}
    values = {f"{name}, activations KiB": activations_kib(fn, model, x) for name, fn in variants.items()}
    times = medians_ms({f"{name} ms (step)": (lambda fn=fn: training_step(fn, x, model, True))
                        for name, fn in variants.items()}, rounds, 5)
    return Finding("activation checkpointing", {**values, **times})


def convnet(channels):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, channels, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(channels, channels, 3, padding=1), torch.nn.ReLU()).eval()


def channels_last(quick, rounds):
    model, x = convnet(8 if quick else 32), torch.randn(2 if quick else 16, 3, 16 if quick else 64, 16 if quick else 64)
    model_cl, x_cl = convnet(8 if quick else 32).to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    compiled, compiled_cl = tinydynamo.compile(model), tinydynamo.compile(model_cl)
    with torch.no_grad():
        keeps_format = compiled_cl(x_cl).is_contiguous(memory_format=torch.channels_last)
        times = medians_ms({"eager ms": lambda: model(x), "eager ms, channels_last": lambda: model_cl(x_cl),
                            "tinydynamo ms": lambda: compiled(x), "tinydynamo ms, channels_last": lambda: compiled_cl(x_cl)},
                           rounds, 5)
    return Finding("channels_last memory format", {**times, "tinydynamo output stays channels_last": keeps_format})


def mixed_precision(quick, rounds):
    model, x = mlp(64 if quick else 256).eval(), torch.randn(8 if quick else 64, 64 if quick else 256)
    model_bf16, x_bf16 = mlp(64 if quick else 256).eval().to(torch.bfloat16), x.to(torch.bfloat16)
    compiled, compiled_bf16 = tinydynamo.compile(model), tinydynamo.compile(model_bf16)

    def autocast(fn):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return fn(x)

    before = tinydynamo.stats()["frames_compiled"]
    with torch.no_grad():
        autocast(compiled)
        compiled_under_autocast = tinydynamo.stats()["frames_compiled"] > before
        times = medians_ms({"eager ms": lambda: model(x), "eager ms, autocast": lambda: autocast(model),
                            "eager ms, bfloat16 model": lambda: model_bf16(x_bf16),
                            "tinydynamo ms": lambda: compiled(x), "tinydynamo ms, autocast": lambda: autocast(compiled),
                            "tinydynamo ms, bfloat16 model": lambda: compiled_bf16(x_bf16)}, rounds, 10)
    return Finding("mixed precision (torch.autocast, bfloat16)",
                   {**times, "tinydynamo compiles under autocast": compiled_under_autocast})


FINDINGS = {f.__name__: f for f in (fuse_pointwise, no_grad, zero_grad, checkpointing, channels_last, mixed_precision)}


def run(names=None, quick=False, rounds=None):
    """Each named finding (all by default), measured; a list of ``Finding``."""
    rounds = rounds or (5 if quick else 9)
    findings = []
    for name in names or FINDINGS:
        tinydynamo.reset()
        findings.append(FINDINGS[name](quick, rounds))
    return findings


def to_markdown(findings):
    lines = ["| advice | measured | value |", "|---|---|---|"]
    for finding in findings:
        for i, (what, value) in enumerate(finding.values.items()):
            lines.append(f"| {finding.advice if i == 0 else ''} | {what} | {value} |")
    return "\n".join(lines)
