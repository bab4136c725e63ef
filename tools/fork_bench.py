"""The fork/wait benchmark with TorchScript's forks as a baseline (book chapter 14).

``python tools/fork_bench.py --fork [options of python -m tinydynamo.bench]`` runs the benchmark
of ``tinydynamo.bench.fork`` with one more variant, interleaved with the others: the forked
ensemble compiled by TorchScript (``torch.jit.script``), whose forks run on ATen's inter-op thread
pool, as in the TorchScript tutorial on dynamic parallelism. src/tinydynamo may not call
torch.jit (DESIGN.md), so the baseline is added here, outside the package.
"""
import os
import sys

import torch

from tinydynamo.bench import __main__ as bench
from tinydynamo.bench import fork


def torchscript(models):
    return torch.jit.script(fork.Forked(models))


if __name__ == "__main__":
    code = bench.main(sys.argv[1:], fork_builders={**fork.BUILDERS, "TorchScript fork/wait": torchscript})
    # TorchScript's inter-op pool can abort the interpreter's exit in torch 2.13 ("terminate called
    # without an active exception"): end without running its teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
