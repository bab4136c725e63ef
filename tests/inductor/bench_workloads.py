"""Speed of the C++ backend on four memory-bound fp32 workloads (not a test; run it by hand).

    .venv/bin/python tests/inductor/bench_workloads.py [--no-torch-compile] [--repeat N]

For each workload it times eager PyTorch, torch.compile (Inductor, CPU) and tinydynamo's
make_fx -> decompose -> compile_fx_inner, interleaved round by round in one process, and reports
medians, the speedup over eager, and the bandwidth reached as a fraction of a STREAM-style copy
(``dst.copy_(src)``) of the same number of bytes, measured in the same rounds. It also reports
the first-call compile time of each compiler (tinydynamo's with an empty kernel cache).
"""
import argparse
import atexit
import math
import shutil
import statistics
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import tinydynamo.prims as prims
from tinydynamo import config
from tinydynamo.inductor import compile_fx_inner


def gelu_chain(x):
    return F.gelu(x, approximate="tanh")


def softmax(x):
    return torch.softmax(x, dim=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def bias_gelu_residual_layer_norm(x, bias, residual, w, b):
    return F.layer_norm(F.gelu(x + bias, approximate="tanh") + residual, (x.shape[-1],), w, b)


def workloads():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    return {
        "a gelu_tanh 2^24": (gelu_chain, (r(2 ** 24),), 2),
        "b softmax 4096x1024": (softmax, (r(4096, 1024),), 2),
        "c layer_norm 4096x1024": (layer_norm, (r(4096, 1024), r(1024), r(1024)), 2),
        "d bias+gelu+res+ln 8192x768": (bias_gelu_residual_layer_norm,
                                       (r(8192, 768), r(768), r(8192, 768), r(768), r(768)), 3),
    }


def tinydynamo_compile(fn, inputs):
    start = time.perf_counter()
    gm = prims.decompose(make_fx(fn)(*inputs), list(inputs))
    compiled = compile_fx_inner(gm, list(inputs))
    return compiled, time.perf_counter() - start


def timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--repeat", type=int, default=30)
    options = parser.parse_args()
    config.cache_dir = tempfile.mkdtemp(prefix="tinydynamo-bench-")  # cold kernel cache
    atexit.register(shutil.rmtree, config.cache_dir, ignore_errors=True)
    print(f"threads: {torch.get_num_threads()}")
    speedups = {"tinydynamo": [], "torch.compile": []}
    for name, (fn, inputs, tensors_moved) in workloads().items():
        candidates = {"eager": fn}
        compiled, compile_s = tinydynamo_compile(fn, inputs)
        candidates["tinydynamo"] = compiled
        torch.testing.assert_close(compiled(*inputs), fn(*inputs), atol=1e-4, rtol=1e-4)
        line = f"{name}: tinydynamo compile {compile_s:.2f}s"
        if not options.no_torch_compile:
            torch._dynamo.reset()
            tc = torch.compile(fn)
            line += f", torch.compile first call {timed(tc, *inputs):.2f}s"
            candidates["torch.compile"] = tc
        print(line)
        big = inputs[0]
        src, dst = torch.randn(big.numel()), torch.empty(big.numel())
        candidates["copy"] = lambda *_: dst.copy_(src)
        times = {k: [] for k in candidates}
        for _ in range(3):  # warm up
            for k, f in candidates.items():
                f(*inputs)
        for _ in range(options.repeat):
            for k, f in candidates.items():
                times[k].append(timed(f, *inputs))
        median = {k: statistics.median(v) for k, v in times.items()}
        nbytes = tensors_moved * big.numel() * big.element_size()
        copy_bw = 2 * big.numel() * big.element_size() / median["copy"] / 1e9
        for k in candidates:
            if k == "copy":
                continue
            bw = nbytes / median[k] / 1e9
            speedup = median["eager"] / median[k]
            if k in speedups:
                speedups[k].append(speedup)
            print(f"  {k:14s} {median[k] * 1e3:8.3f} ms  {speedup:5.2f}x eager  "
                  f"{bw:6.1f} GB/s = {bw / copy_bw:5.0%} of copy ({copy_bw:.1f} GB/s)")
    for k, v in speedups.items():
        if v:
            print(f"geomean speedup over eager, {k}: {math.prod(v) ** (1 / len(v)):.2f}x")


if __name__ == "__main__":
    main()
