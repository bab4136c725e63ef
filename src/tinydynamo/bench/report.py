"""Turning benchmark results into JSON and a markdown table (chapter 13)."""
import dataclasses
import datetime
import json
import os
import platform

import torch

from .harness import VARIANTS, geomean

COMPUTE_WORKLOADS = ("gelu_chain", "softmax", "layer_norm", "bias_gelu_residual_ln",
                     "mlp_forward", "mlp_training", "block_forward", "block_training")


def environment(device, quick):
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "quick": quick,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["cuda"] = torch.version.cuda
        env["driver"] = _nvidia_driver()
    return env


def _nvidia_driver():
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


OVERHEAD_WORKLOADS = ("call_overhead", "call_overhead_inductor")  # eager and inductor backends


def summary(results):
    by_name = {r.name: r for r in results}
    geo = {
        v: geomean([by_name[n].variants[v].speedup for n in COMPUTE_WORKLOADS if n in by_name])
        for v in VARIANTS
    }
    overheads = {name: _overhead(by_name[name]) if name in by_name else None for name in OVERHEAD_WORKLOADS}
    return {"geomean_speedup_over_eager": geo, **overheads}


def _overhead(result):
    """Microseconds each compiler adds to eager's call, and the ratio of the two."""
    variants = result.variants
    eager = variants["eager"].median_s
    extra = {v: variants[v].median_s - eager for v in ("torch.compile", "tinydynamo") if variants[v].median_s}
    overhead = {f"{v}_overhead_us": round(x * 1e6, 3) for v, x in extra.items()}
    if len(extra) == 2 and extra["torch.compile"] > 0:
        overhead["tinydynamo_over_torch_compile"] = round(extra["tinydynamo"] / extra["torch.compile"], 3)
    return overhead


def to_json(env, copy_gbps, results):
    return {
        "environment": env,
        "copy_bandwidth_gbps": copy_gbps,
        "summary": summary(results),
        "workloads": [dataclasses.asdict(r) for r in results],
    }


def _cell(result):
    if result.error:
        return f"failed: {result.error[:60]}"
    text = f"{result.median_s * 1e3:.3f} ms ({result.speedup:.2f}×)"
    if result.fraction_of_copy is not None:
        text += f", {result.fraction_of_copy:.0%} of copy"
    return text


def to_markdown(data):
    env = data["environment"]
    lines = [
        f"Benchmark on {env.get('gpu') or env['machine'] + ' CPU'} ({env['cpu_count']} cores), "
        f"{env['date']}; torch {env['torch']}, triton {env['triton']}, python {env['python']}."
        + (" Quick mode: sizes are smaller than the descriptions say, and no bandwidth is reported."
           if env["quick"] else ""),
        f"Copy bandwidth: {data['copy_bandwidth_gbps']:.1f} GB/s. Cells: median time (speedup over eager).",
        "",
        "| workload | backend | " + " | ".join(VARIANTS) + " | first call (s): " + ", ".join(VARIANTS) + " |",
        "|---|---|" + "---|" * len(VARIANTS) + "---|",
    ]
    for w in data["workloads"]:
        results = [_Result(**w["variants"][v]) for v in VARIANTS]
        first = ", ".join("-" if r.first_call_s is None else f"{r.first_call_s:.2f}" for r in results)
        lines.append(f"| {w['description']} | {w['backend']} | " + " | ".join(map(_cell, results)) + f" | {first} |")
    s = data["summary"]
    geo = ", ".join(f"{v} {x:.2f}×" for v, x in s["geomean_speedup_over_eager"].items() if x)
    lines += ["", f"Geomean speedup over eager (a–g): {geo or 'n/a'}."]
    for name, label in zip(OVERHEAD_WORKLOADS, ("Call overhead", "Call overhead, inductor")):
        if s.get(name):
            lines.append(f"{label}: " + ", ".join(f"{k} = {v}" for k, v in s[name].items()) + ".")
    return "\n".join(lines + _bounds_table(data["workloads"]))


def _bounds_table(workloads):
    """The memory-bound workloads beside their bounds (eager calls timed in the same rounds)."""
    bounded = [w for w in workloads if w.get("bounds")]
    if not bounded:
        return []
    lines = ["", "What stands between the memory-bound workloads and the copy: eager calls timed in the "
             "same rounds (median time, and bandwidth as a fraction of the copy's).", "",
             "| workload | tinydynamo | bounds |", "|---|---|---|"]
    for w in bounded:
        bounds = "; ".join(f"{what}: {_bound_cell(_Result(**b))}" for what, b in w["bounds"].items())
        lines.append(f"| {w['description']} | {_bound_cell(_Result(**w['variants']['tinydynamo']))} | {bounds} |")
    return lines


def _bound_cell(result):
    if result.median_s is None:
        return result.error or "-"
    return f"{result.median_s * 1e3:.3f} ms, {result.fraction_of_copy:.0%} of copy"


@dataclasses.dataclass
class _Result:
    variant: str
    median_s: float | None = None
    samples: list | None = None
    first_call_s: float | None = None
    speedup: float | None = None
    gbps: float | None = None
    fraction_of_copy: float | None = None
    error: str | None = None


def write(data, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    stem = f"bench-{data['environment']['device']}-{data['environment']['date'][:10]}"
    json_path = os.path.join(out_dir, stem + ".json")
    with open(json_path, "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        f.write(to_markdown(data) + "\n")
    return json_path
