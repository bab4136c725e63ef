"""The fork/wait benchmark: an ensemble of small models, one after the other or forked
(chapter 14, "Compiling distributed programs").

``python -m tinydynamo.bench --fork`` builds ensembles of small models, as the TorchScript
tutorial on dynamic parallelism does, and runs each through four variants, interleaved in rounds
in one process (``python tools/fork_bench.py`` adds a fifth, TorchScript's forks on ATen's
inter-op thread pool, the tutorial's parallel baseline):

- ``eager sequential``: ``torch.stack([m(x) for m in models]).mean(0)``;
- ``eager fork/wait``: the same with ``torch.jit.fork`` and ``torch.jit.wait``. Plain Python runs
  each fork at once, on the calling thread: this is the sequential run plus the futures;
- ``tinydynamo sequential``: the sequential ensemble compiled, one graph;
- ``tinydynamo fork/wait``: the forked ensemble compiled: each model a body of its own, run on
  tinydynamo's thread pool (``dynamo/fork_join.py``).

Every variant runs the same models (in eval mode, under ``no_grad``) and is checked against
eager first. The ratio that matters is tinydynamo's sequential time over its fork/wait time: what
running the bodies concurrently buys on this machine's cores. It is large where each model's
kernels are too small for intra-op parallelism (small MLPs, small conv nets) and gone where a
model's matmuls already use every core (the wide MLPs). A fork costs tens of microseconds (a
thread hand-off, and the compiled body's Python wrapper, which holds the GIL): bodies much
shorter than that gain nothing.
"""
import concurrent.futures
import dataclasses
import os
import statistics
import time
import warnings

import torch

import tinydynamo



class Sequential(torch.nn.Module):
    """The ensemble, one model after the other."""

    def __init__(self, models):
        super().__init__()
        self.models = torch.nn.ModuleList(models)

    def forward(self, x):
        return torch.stack([model(x) for model in self.models]).mean(0)


class Forked(Sequential):
    """The same ensemble, each model forked, then every result waited for."""

    def forward(self, x):
        futures = [torch.jit.fork(model, x) for model in self.models]
        return torch.stack([torch.jit.wait(future) for future in futures]).mean(0)


def mlp(width, layers=3, classes=16):
    blocks = []
    for _ in range(layers - 1):
        blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*blocks, torch.nn.Linear(width, classes))


def convnet(channels, classes=16):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, channels, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(channels, channels, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(channels, classes))


@dataclasses.dataclass
class ForkWorkload:
    name: str
    description: str
    model: object  # model(quick) -> one member of the ensemble
    input: object  # input(quick) -> x
    members: int


WORKLOADS = {
    w.name: w
    for w in (
        ForkWorkload("mlp_ensemble", "8 MLPs (3 layers, width 256), batch 64",
                     lambda quick: mlp(64 if quick else 256),
                     lambda quick: torch.randn(8 if quick else 64, 64 if quick else 256), 8),
        ForkWorkload("convnet_ensemble", "4 conv nets (2 conv layers, 32 channels), 16 images 3x32x32",
                     lambda quick: convnet(8 if quick else 32),
                     lambda quick: torch.randn(2 if quick else 16, 3, 16 if quick else 32, 16 if quick else 32), 4),
        # Matmuls big enough for intra-op parallelism to use every core already: little left for forks.
        ForkWorkload("wide_mlp_ensemble", "4 MLPs (3 layers, width 1024), batch 32",
                     lambda quick: mlp(64 if quick else 1024),
                     lambda quick: torch.randn(8 if quick else 32, 64 if quick else 1024), 4),
    )
}


# How each variant is built from the ensemble's models. ``tools/fork_bench.py`` adds TorchScript's
# forks (``torch.jit.script``), which src/tinydynamo may not call (DESIGN.md).
BUILDERS = {
    "eager sequential": Sequential,
    "eager fork/wait": Forked,
    "tinydynamo sequential": lambda models: tinydynamo.compile(Sequential(models)),
    "tinydynamo fork/wait": lambda models: tinydynamo.compile(Forked(models)),
}
VARIANTS = tuple(BUILDERS)


@dataclasses.dataclass
class ForkResult:
    variant: str
    first_call_s: float | None = None
    median_s: float | None = None
    samples: list = dataclasses.field(default_factory=list)
    error: str | None = None


def run_workload(workload, quick, rounds, builders):
    torch.manual_seed(0)
    models = [workload.model(quick).eval() for _ in range(workload.members)]
    x = workload.input(quick)
    with torch.no_grad():
        reference = Sequential(models)(x)
    calls, results = {}, {name: ForkResult(name) for name in builders}
    for name, result in results.items():
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.fork's and script's
                fn = builders[name](models)
                start = time.perf_counter()
                out = fn(x)
                result.first_call_s = time.perf_counter() - start
            torch.testing.assert_close(out, reference, rtol=1e-4, atol=1e-5)
            calls[name] = fn
        except Exception as e:  # noqa: BLE001 - a failing variant is reported in the table, not hidden
            result.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    _interleave(calls, results, x, rounds, calls_per_sample=3 if quick else 20)
    description = workload.description + (" (quick: smaller sizes)" if quick else "")
    return {"name": workload.name, "description": description,
            "variants": {name: dataclasses.asdict(r) for name, r in results.items()}, "ratios": ratios(results)}


def _interleave(calls, results, x, rounds, calls_per_sample):
    names = list(calls)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", DeprecationWarning)
        for fn in calls.values():  # warm-up
            fn(x)
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                start = time.perf_counter()
                for _ in range(calls_per_sample):
                    calls[name](x)
                results[name].samples.append((time.perf_counter() - start) / calls_per_sample)
    for name in names:
        results[name].median_s = statistics.median(results[name].samples)


def ratios(results):
    """Speedups that answer the benchmark's questions (None where a variant failed or did not run)."""
    def over(slow, fast):
        if slow not in results or fast not in results:
            return None
        a, b = results[slow].median_s, results[fast].median_s
        return a / b if a and b else None

    return {
        "tinydynamo fork/wait over tinydynamo sequential": over("tinydynamo sequential", "tinydynamo fork/wait"),
        "tinydynamo fork/wait over eager sequential": over("eager sequential", "tinydynamo fork/wait"),
        "tinydynamo fork/wait over TorchScript fork/wait": over("TorchScript fork/wait", "tinydynamo fork/wait"),
        "TorchScript fork/wait over eager sequential": over("eager sequential", "TorchScript fork/wait"),
    }


def run(names, quick=False, rounds=None, builders=BUILDERS):
    rounds = rounds or (3 if quick else 15)
    results = []
    for name in names:
        tinydynamo.reset()
        results.append(run_workload(WORKLOADS[name], quick, rounds, builders))
    return results


def threads():
    """The thread settings the run used (intra-op: per kernel; inter-op: the fork pools), and how
    much of the machine was free: its load average, and ``cores_free``, the speedup of two
    single-threaded matmuls run in two threads over one after the other (2.0 on two idle cores).
    On a shared machine other jobs take cores from the forks."""
    return {"intra_op_threads": torch.get_num_threads(), "inter_op_threads": torch.get_num_interop_threads(),
            "load_average_1min": os.getloadavg()[0], "cores_free": cores_free()}


def cores_free(size=384, repeat=20):
    a = torch.randn(size, size)

    def work():
        for _ in range(repeat):
            a @ a

    intra_op = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        work()
        start = time.perf_counter()
        work()
        work()
        one_thread = time.perf_counter() - start
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda _: work(), range(2)))
        return round(one_thread / (time.perf_counter() - start), 2)
    finally:
        torch.set_num_threads(intra_op)


def to_markdown(results):
    lines = ["Each cell: median time of one call of the ensemble (speedup over eager sequential).", "",
             "| workload | " + " | ".join(results[0]["variants"]) + " | tinydynamo sequential / fork |",
             "|---|" + "---|" * len(results[0]["variants"]) + "---|"]
    for w in results:
        v = w["variants"]
        eager = v["eager sequential"]["median_s"]

        def cell(name):
            r = v.get(name)
            if r is None:
                return "-"
            if r["error"]:
                return f"failed: {r['error'][:60]}"
            return f"{r['median_s'] * 1e3:.2f} ms ({eager / r['median_s']:.2f}×)"

        ratio = w["ratios"]["tinydynamo fork/wait over tinydynamo sequential"]
        lines.append(f"| {w['description']} | " + " | ".join(cell(n) for n in v)
                     + f" | {f'{ratio:.2f}' if ratio else '-'} |")
    return "\n".join(lines)
