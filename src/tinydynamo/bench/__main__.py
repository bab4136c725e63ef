"""``python -m tinydynamo.bench``: eager vs torch.compile vs tinydynamo, interleaved (chapter 13)."""
import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import sys
import tempfile
from unittest import mock

import torch

from tinydynamo import config

from . import ddp, dynamic, fork, harness, models, report, tuning
from .workloads import WORKLOADS


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tinydynamo.bench", description=__doc__)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--quick", action="store_true", help="small sizes and few rounds (for the book and CI)")
    parser.add_argument("--workloads", help="comma-separated names: " + ", ".join(WORKLOADS)
                        + "; with --dynamic: " + ", ".join(dynamic.WORKLOADS)
                        + "; with --fork: " + ", ".join(fork.WORKLOADS)
                        + "; with --models: " + ", ".join(models.WORKLOADS))
    parser.add_argument("--dynamic", action="store_true",
                        help="the dynamic-shape benchmark: each workload over a sweep of sizes")
    parser.add_argument("--ddp", action="store_true",
                        help="the DDP benchmark: training steps/s of compiled DDP on 2 gloo ranks")
    parser.add_argument("--fork", action="store_true",
                        help="the fork/wait benchmark: ensembles run sequentially and with torch.jit.fork")
    parser.add_argument("--tuning", action="store_true",
                        help="the performance tuning guide's advice, measured eagerly and compiled")
    parser.add_argument("--models", action="store_true",
                        help="real transformers models at realistic sizes, inference and a training step")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per workload (default 7, quick 3)")
    parser.add_argument("--out", default="bench_results", help="directory for the JSON and markdown results")
    parser.add_argument("--warm-caches", action="store_true",
                        help="keep compiler caches (by default both compilers start cold, in fresh cache dirs)")
    return parser.parse_args(argv)


@contextlib.contextmanager
def cold_caches():
    """Fresh cache directories while the benchmark runs, so first-call times are true compile times
    for both compilers; removed afterwards, and the caches the process had are restored."""
    with tempfile.TemporaryDirectory(prefix="tinydynamo-bench-", ignore_cleanup_errors=True) as root, \
            mock.patch.dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(root, "torchinductor")), \
            config.patch(cache_dir=os.path.join(root, "tinydynamo")):
        yield


def main(argv=None, fork_builders=fork.BUILDERS):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("No CUDA GPU is available on this machine: the GPU benchmark was not run.")
        return 0
    known = (dynamic.WORKLOADS if args.dynamic else fork.WORKLOADS if args.fork
             else models.WORKLOADS if args.models else WORKLOADS)
    names = [n for n in (args.workloads or ",".join(known)).split(",") if n]
    unknown = sorted(set(names) - set(known))
    if unknown:
        sys.exit(f"unknown workload(s) {unknown}; known: {', '.join(known)}")
    with contextlib.nullcontext() if args.warm_caches else cold_caches():
        return run(names, args, fork_builders)


def run(names, args, fork_builders):
    if args.ddp:
        return run_ddp(args)
    if args.tuning:
        return run_tuning(args)
    if args.dynamic:
        return run_dynamic(names, args)
    if args.fork:
        return run_fork(names, args, fork_builders)
    if args.models:
        return run_models(names, args)
    copy_gbps, results = harness.run(names, args.device, args.quick, args.rounds)
    data = report.to_json(report.environment(args.device, args.quick), copy_gbps, results)
    path = report.write(data, args.out)
    print(report.to_markdown(data))
    print(f"\nresults written to {path} (and .md)")
    return 0


def run_dynamic(names, args):
    results = dynamic.run(names, args.device, args.quick, args.rounds)
    data = {"environment": report.environment(args.device, args.quick), "workloads": results}
    return write_results(data, dynamic.to_markdown(results), f"bench-dynamic-{args.device}", args.out)


def run_ddp(args):
    result = ddp.run(args.quick, args.rounds)
    result["environment"] = report.environment(args.device, args.quick)
    return write_results(result, ddp.to_markdown(result), f"ddp-bench-{args.device}", args.out)


def run_tuning(args):
    findings = tuning.run(quick=args.quick, rounds=args.rounds)
    data = {"environment": report.environment(args.device, args.quick),
            "findings": [dataclasses.asdict(f) for f in findings]}
    return write_results(data, tuning.to_markdown(findings), f"tuning-bench-{args.device}", args.out)


def run_models(names, args):
    env = {**report.environment(args.device, args.quick), "load_average_1min": os.getloadavg()[0]}
    rows = models.run(names, args.quick, args.rounds)
    data = {"environment": env, "summary": models.summary(rows), "workloads": rows}
    return write_results(data, models.to_markdown(rows, env), f"models-bench-{args.device}", args.out)


def run_fork(names, args, builders):
    before = fork.threads()
    results = fork.run(names, args.quick, args.rounds, builders)
    after = fork.threads()
    data = {"environment": {**report.environment(args.device, args.quick), **before,
                            "load_average_1min_after": after["load_average_1min"],
                            "cores_free_after": after["cores_free"]}, "workloads": results}
    return write_results(data, fork.to_markdown(results), f"fork-bench-{args.device}", args.out)


def write_results(data, markdown, prefix, out_dir):
    """``prefix-<date>.json`` and ``.md`` in ``out_dir``; prints the markdown."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{prefix}-{datetime.date.today()}.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    with open(path[:-len(".json")] + ".md", "w") as f:
        f.write(markdown + "\n")
    print(markdown)
    print(f"\nresults written to {path} (and .md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
