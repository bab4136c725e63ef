"""The dynamic-shape benchmark: each workload over a sweep of sizes (chapter 12, "Dynamic shapes").

``python -m tinydynamo.bench --dynamic`` calls every workload with six sizes of one dimension
(rows, or a sequence length) through four variants, interleaved in rounds:

- eager;
- torch.compile with ``dynamic=True``;
- tinydynamo with ``dynamic=False``: kernels specialised to each size, so one compile per size;
- tinydynamo with ``dynamic=True``: one compile, kernels that take the sizes as arguments.

For each variant it reports how often it compiled over the sweep, and the steady-state time of
one pass over all six sizes. The ratio that matters for inductor's kernels is specialised time
over size-generic time: what it costs to run one kernel for every size.
"""
import dataclasses
import statistics
import time

import torch

from ..testing.models import Block
from .harness import synchronizer
from .workloads import bias_gelu_residual_layernorm, gelu_tanh_chain, layer_norm_rows, softmax_rows

VARIANTS = ("eager", "torch.compile dynamic", "tinydynamo specialised", "tinydynamo dynamic")


@dataclasses.dataclass
class DynamicWorkload:
    name: str
    description: str
    build: object  # build(device) -> the function or module
    inputs: object  # inputs(size, device) -> args
    sizes: tuple
    quick_sizes: tuple


def _randn(*shape, device):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(device)


def _rows_and_vectors(columns, vectors):
    return lambda n, device: (_randn(n, columns, device=device), *[_randn(columns, device=device)] * vectors)


def _block(device):
    torch.manual_seed(0)
    return Block(n_embd=256, n_head=4, block_size=256).to(device).eval()


def _bias_gelu_ln_inputs(n, device):
    x, residual = _randn(n, 768, device=device), _randn(n, 768, device=device)
    return x, _randn(768, device=device), residual, _randn(768, device=device), _randn(768, device=device)


WORKLOADS = {
    w.name: w
    for w in (
        DynamicWorkload("gelu_chain", "(a) GELU-tanh chain, n elements", lambda d: gelu_tanh_chain,
                        lambda n, device: (_randn(n, device=device),),
                        (2**22, 2**22 + 3, 3 * 2**20, 5 * 2**20, 2**21 + 1, 2**23), (4096, 5000, 6001, 7777, 8192, 9999)),
        DynamicWorkload("softmax", "(b) softmax over (n, 1024)", lambda d: softmax_rows, _rows_and_vectors(1024, 0),
                        (1024, 1536, 2000, 2048, 3000, 4096), (64, 96, 100, 128, 150, 256)),
        DynamicWorkload("layer_norm", "(c) layer_norm over (n, 1024)", lambda d: layer_norm_rows,
                        _rows_and_vectors(1024, 2), (1024, 1536, 2000, 2048, 3000, 4096), (64, 96, 100, 128, 150, 256)),
        DynamicWorkload("bias_gelu_residual_ln", "(d) bias+GELU+residual+layernorm, (n, 768)",
                        lambda d: bias_gelu_residual_layernorm, _bias_gelu_ln_inputs,
                        (2048, 3000, 4096, 5000, 6144, 8192), (64, 96, 100, 128, 150, 256)),
        DynamicWorkload("block_forward", "(g) nanoGPT block forward, sequence length n (B=8)", _block,
                        lambda n, device: (_randn(8, n, 256, device=device),),
                        (64, 96, 128, 160, 200, 256), (16, 24, 32, 40, 50, 64)),
    )
}


def _compiler(variant, target):
    if variant == "eager":
        return target
    if variant == "torch.compile dynamic":
        return torch.compile(target, dynamic=True)
    import tinydynamo

    return tinydynamo.compile(target, dynamic=variant == "tinydynamo dynamic")


def _compile_count(variant):
    """Compiles so far: tinydynamo's graphs and per-size kernel variants. torch.compile's own count
    sits in torch._dynamo's internals, which the reference does not use: it is not reported."""
    if variant.startswith("tinydynamo"):
        import tinydynamo

        stats = tinydynamo.stats()
        return stats["graphs"] + stats.get("size_specializations", 0)
    return 0


@dataclasses.dataclass
class DynamicResult:
    variant: str
    compiles: int | None = 0  # None: not known (torch.compile's)
    first_pass_s: float | None = None
    median_s: float | None = None  # one pass over every size
    error: str | None = None


def _prepare(workload, variant, device, sizes, reference):
    """Compile the variant and run it once over every size; returns (pass, result, outputs)."""
    result = DynamicResult(variant)
    try:
        fn = _compiler(variant, workload.build(device))
        inputs = [workload.inputs(n, device) for n in sizes]
        before = _compile_count(variant)
        start = time.perf_counter()
        with torch.no_grad():
            outputs = [fn(*args) for args in inputs]
        synchronizer(device)()
        result.first_pass_s = time.perf_counter() - start
        result.compiles = _compile_count(variant) - before if variant != "torch.compile dynamic" else None
        if reference is not None:
            for out, ref in zip(outputs, reference):
                torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)
    except Exception as e:  # noqa: BLE001 - a failing variant is reported in the table, not hidden
        result.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return None, result, None

    def one_pass():
        with torch.no_grad():
            for args in inputs:
                fn(*args)

    return one_pass, result, outputs


def run_workload(workload, device, quick, rounds):
    sizes = workload.quick_sizes if quick else workload.sizes
    passes, results, reference = {}, {}, None
    for variant in VARIANTS:
        one_pass, result, outputs = _prepare(workload, variant, device, sizes, reference)
        reference = outputs if variant == "eager" else reference
        results[variant] = result
        if one_pass is not None:
            passes[variant] = one_pass
    sync, samples = synchronizer(device), {v: [] for v in passes}
    names = list(passes)
    for r in range(rounds):
        for variant in names[r % len(names):] + names[: r % len(names)]:
            sync()
            start = time.perf_counter()
            passes[variant]()
            sync()
            samples[variant].append(time.perf_counter() - start)
    for variant, times in samples.items():
        results[variant].median_s = statistics.median(times)
    return {"name": workload.name, "description": workload.description, "sizes": list(sizes),
            "variants": {v: dataclasses.asdict(r) for v, r in results.items()}}


def run(names, device="cpu", quick=False, rounds=None):
    import tinydynamo

    rounds = rounds or (5 if quick else 9)
    results = []
    for name in names:
        tinydynamo.reset()
        torch.compiler.reset()
        results.append(run_workload(WORKLOADS[name], device, quick, rounds))
    return results


def _cell(result, eager_s):
    if result["error"]:
        return f"failed: {result['error'][:60]}"
    compiles = "" if result["compiles"] is None else f", {result['compiles']} compiles"
    return f"{result['median_s'] * 1e3:.2f} ms ({eager_s / result['median_s']:.2f}×){compiles}"


def to_markdown(results):
    lines = ["Each cell: one pass over the six sizes, median of the rounds (speedup over eager), and the "
             "compiles over the sweep. Last column: tinydynamo's specialised time over its size-generic time.",
             "", "| workload | sizes | " + " | ".join(VARIANTS) + " | specialised / generic |",
             "|---|---|" + "---|" * len(VARIANTS) + "---|"]
    for w in results:
        v = w["variants"]
        eager_s = v["eager"]["median_s"]
        special, generic = v["tinydynamo specialised"]["median_s"], v["tinydynamo dynamic"]["median_s"]
        ratio = f"{special / generic:.2f}" if special and generic else "-"
        lines.append(f"| {w['description']} | {', '.join(map(str, w['sizes']))} | "
                     + " | ".join(_cell(v[name], eager_s) for name in VARIANTS) + f" | {ratio} |")
    return "\n".join(lines)
