"""Interleaved timing of eager, torch.compile and tinydynamo on the workloads (chapter 13).

Every variant of a workload is compiled and checked against eager first (the first call's time is
reported as compile time). Then the variants take turns: in each round every variant runs a batch
of calls, so slow phases of a shared machine hit all of them; the median over rounds is reported.
"""
import dataclasses
import functools
import math
import statistics
import time

import torch

from .workloads import WORKLOADS, Workload

VARIANTS = ("eager", "torch.compile", "tinydynamo")


@dataclasses.dataclass
class VariantResult:
    variant: str
    median_s: float | None = None
    samples: list = dataclasses.field(default_factory=list)
    first_call_s: float | None = None
    speedup: float | None = None  # eager median / this median
    gbps: float | None = None
    fraction_of_copy: float | None = None
    error: str | None = None  # compile or run failure, or a mismatch with eager


@dataclasses.dataclass
class WorkloadResult:
    name: str
    description: str
    backend: str
    variants: dict
    bounds: dict = dataclasses.field(default_factory=dict)  # what -> VariantResult of an eager call


def synchronizer(device):
    return torch.cuda.synchronize if device == "cuda" else (lambda: None)


def compile_variant(variant, target, backend):
    if variant == "eager":
        return target
    if variant == "torch.compile":
        return torch.compile(target, backend=backend)
    import tinydynamo

    return tinydynamo.compile(target, backend=backend)


def make_call(workload: Workload, fn, args):
    """The zero-argument call that is timed (an inference run of a module is under no_grad)."""
    if not workload.training:
        if not isinstance(fn, torch.nn.Module):
            return functools.partial(fn, *args)

        def forward():
            with torch.no_grad():
                return fn(*args)

        return forward
    params = list(fn.parameters())

    def training_step():
        for p in params:
            p.grad = None
        loss = fn(*args).square().mean()
        loss.backward()
        return loss.detach(), [p.grad for p in params]

    return training_step


def copy_bandwidth(device, quick, rounds):
    """STREAM-style copy: bytes read + written per second, in GB/s (median)."""
    src = torch.randn(2**22 if quick else 2**25, device=device)
    dst = torch.empty_like(src)
    sync = synchronizer(device)
    samples = []
    for _ in range(rounds):
        sync()
        start = time.perf_counter()
        for _ in range(5):
            dst.copy_(src)
        sync()
        samples.append((time.perf_counter() - start) / 5)
    return 2 * src.numel() * src.element_size() / statistics.median(samples) / 1e9


def _tinydynamo_graphs():
    import tinydynamo

    return tinydynamo.stats()["graphs"]


def _check(reference, result):
    try:
        torch.testing.assert_close(result, reference, rtol=1e-3, atol=1e-3)
        return None
    except AssertionError as e:
        return "result differs from eager: " + str(e).splitlines()[0]


def prepare(workload, variant, device, quick, reference):
    """Build, compile and call the variant once; returns (call, result)."""
    result = VariantResult(variant)
    try:
        target, args = workload.build(device, quick)
        call = make_call(workload, compile_variant(variant, target, workload.compile_backend), args)
        sync = synchronizer(device)
        graphs_before = _tinydynamo_graphs()
        start = time.perf_counter()
        out = call()
        sync()
        result.first_call_s = time.perf_counter() - start
        if reference is not None:
            result.error = _check(reference, out)
        if variant == "tinydynamo" and _tinydynamo_graphs() == graphs_before:
            result.error = "tinydynamo captured no graph: the function ran eagerly"
        return call, result, out
    except Exception as e:  # noqa: BLE001 - a failing variant is reported in the table, not hidden
        result.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return None, result, None


def run_workload(workload, device, quick, rounds, target_sample_s, copy_gbps):
    calls, results, reference = {}, {}, None
    for variant in VARIANTS:
        call, result, out = prepare(workload, variant, device, quick, reference)
        if variant == "eager":
            reference = out
        results[variant] = result
        if call is not None and result.error is None:
            calls[variant] = call
    if "eager" not in calls:
        raise RuntimeError(f"eager run of {workload.name} failed: {results['eager'].error}")
    bound_calls = _bounds(workload, device, quick)
    bounds = {what: VariantResult(what) for what in bound_calls}
    n = _calls_per_sample(calls["eager"], device, target_sample_s)
    _interleave({**calls, **bound_calls}, {**results, **bounds}, device, rounds, n)
    _derive(workload, {**results, **bounds}, copy_gbps, device, quick)
    return WorkloadResult(workload.name, workload.description, workload.compile_backend, results, bounds)


def _bounds(workload, device, quick):
    """The workload's bounds as calls on its own full-size inputs (none for quick runs, whose sizes
    fit in the caches)."""
    if workload.bounds is None or quick:
        return {}
    return workload.bounds(workload.build(device, quick)[1])


def _calls_per_sample(call, device, target_sample_s):
    sync = synchronizer(device)
    for _ in range(2):
        call()
    sync()
    start = time.perf_counter()
    call()
    sync()
    return max(1, int(target_sample_s / max(time.perf_counter() - start, 1e-7)))


def _interleave(calls, results, device, rounds, n):
    sync = synchronizer(device)
    for call in calls.values():  # warm-up
        call()
    names = list(calls)
    for r in range(rounds):
        for variant in names[r % len(names):] + names[: r % len(names)]:
            sync()
            start = time.perf_counter()
            for _ in range(n):
                calls[variant]()
            sync()
            results[variant].samples.append((time.perf_counter() - start) / n)
    for variant in names:
        results[variant].median_s = statistics.median(results[variant].samples)


def _derive(workload, results, copy_gbps, device, quick):
    eager = results["eager"].median_s
    # Quick sizes fit in the caches, so a bandwidth figure would compare cache speed with a copy
    # through main memory: it is only reported for full-size runs.
    args = workload.build(device, quick)[1] if workload.bytes_moved and not quick else None
    for result in results.values():
        if result.median_s is None:
            continue
        result.speedup = eager / result.median_s
        if args is not None:
            result.gbps = workload.bytes_moved(args) / result.median_s / 1e9
            result.fraction_of_copy = result.gbps / copy_gbps


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def run(names, device="cpu", quick=False, rounds=None, target_sample_s=None):
    rounds = rounds or (3 if quick else 7)
    target_sample_s = target_sample_s or (0.01 if quick else 0.05)
    copy_gbps = copy_bandwidth(device, quick, rounds)
    results = [run_workload(WORKLOADS[n], device, quick, rounds, target_sample_s, copy_gbps) for n in names]
    return copy_gbps, results
