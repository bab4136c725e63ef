"""The benchmark's workloads (chapter 13): each builds its function and inputs for a device.

``bytes_moved`` is the minimum memory traffic of a memory-bound workload (each input read once,
each output written once); dividing it by the time gives the effective bandwidth, which is compared
with a plain copy measured in the same run. ``bounds`` are eager calls timed in the same rounds:
the workload's roof (its own bytes copied into a preallocated output), and what may stand between
it and that roof: the same bytes written into a fresh output, and its transcendental function
(exp, tanh) alone.
"""
import dataclasses
import math
from typing import Callable

import torch
import torch.nn.functional as F

from ..testing.models import Block


@dataclasses.dataclass
class Workload:
    name: str
    description: str
    build: Callable  # build(device, quick) -> (fn or nn.Module to compile, args)
    bytes_moved: Callable | None = None  # bytes_moved(args) for memory-bound workloads
    bounds: Callable | None = None  # bounds(args) -> {what: zero-argument eager call} that bound it below
    compile_backend: str = "inductor"  # the backend used by the compiled variants
    training: bool = False  # time forward + mean-square loss + backward, instead of a no_grad forward


def gelu_tanh_chain(x):
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + torch.tanh(inner))


def bias_gelu_residual_layernorm(x, bias, residual, weight, ln_bias):
    h = F.gelu(x + bias, approximate="tanh") + residual
    return F.layer_norm(h, (h.shape[-1],), weight, ln_bias)


def softmax_rows(x):
    return torch.softmax(x, dim=-1)


def layer_norm_rows(x, weight, bias):
    return F.layer_norm(x, (x.shape[-1],), weight, bias)


def add_one(x):
    return x + 1


def _randn(*shape, device):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(device)


def _elementwise_bytes(n_inputs, n_outputs):
    return lambda args: (n_inputs + n_outputs) * args[0].numel() * args[0].element_size()


def _preallocated_copy(args):
    """The roof: the same bytes as the workload (its full-size inputs read, one output written),
    into an output allocated once."""
    out = torch.empty_like(args[0])
    if len(args) > 1 and args[1].shape == args[0].shape:
        return lambda: torch.add(args[0], args[1], out=out)
    return lambda: out.copy_(args[0])


def _fresh_output(args):
    """What any function that returns a new tensor pays: the same bytes as the workload, written
    into a tensor allocated by the call (the operating system maps and zeroes its pages)."""
    if len(args) > 1 and args[1].shape == args[0].shape:  # two full-size inputs: read both
        return lambda: torch.add(args[0], args[1])
    return lambda: torch.empty_like(args[0]).copy_(args[0])


def _once_per_element(op):
    """``op`` applied once to every element into a preallocated output (eager's vectorized math)."""
    def bound(args):
        out = torch.empty_like(args[0])
        return lambda: op(args[0], out=out)
    return bound


def _bounds(*extra):
    def bounds(args):
        return {"same bytes into a preallocated output": _preallocated_copy(args),
                "copy into a fresh output": _fresh_output(args),
                **{f"{op.__name__} of each element": _once_per_element(op)(args) for op in extra}}
    return bounds


def _build_gelu(device, quick):
    return gelu_tanh_chain, (_randn(2**20 if quick else 2**24, device=device),)


def _build_softmax(device, quick):
    return softmax_rows, (_randn(512 if quick else 4096, 1024, device=device),)


def _build_layer_norm(device, quick):
    rows = 512 if quick else 4096
    return layer_norm_rows, (_randn(rows, 1024, device=device), _randn(1024, device=device), _randn(1024, device=device))


def _build_bias_gelu_ln(device, quick):
    rows = 1024 if quick else 8192
    x, residual = _randn(rows, 768, device=device), _randn(rows, 768, device=device)
    return bias_gelu_residual_layernorm, (x, _randn(768, device=device), residual, _randn(768, device=device), _randn(768, device=device))


def _mlp(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(device)


def _build_mlp(device, quick):
    return _mlp(device), (_randn(64 if quick else 256, 1024, device=device),)


def _build_block(device, quick):
    torch.manual_seed(0)
    model = Block(n_embd=256, n_head=4, block_size=256).to(device)
    return model, (_randn(2 if quick else 8, 256, 256, device=device),)


def _build_call_overhead(device, quick):
    return add_one, (_randn(10, device=device),)


WORKLOADS = {
    w.name: w
    for w in (
        Workload("gelu_chain", "(a) GELU-tanh chain, 2^24 elements", _build_gelu, _elementwise_bytes(1, 1),
                 _bounds(torch.tanh)),
        Workload("softmax", "(b) softmax over (4096, 1024)", _build_softmax, _elementwise_bytes(1, 1),
                 _bounds(torch.exp)),
        Workload("layer_norm", "(c) layer_norm over (4096, 1024)", _build_layer_norm, _elementwise_bytes(1, 1),
                 _bounds()),
        Workload("bias_gelu_residual_ln", "(d) bias+GELU+residual+layernorm, (8192, 768)", _build_bias_gelu_ln,
                 _elementwise_bytes(2, 1), _bounds(torch.tanh)),
        Workload("mlp_forward", "(e) MLP 1024→4096→1024 forward, batch 256", _build_mlp),
        Workload("mlp_training", "(f) MLP training step", _build_mlp, training=True),
        Workload("block_forward", "(g) nanoGPT block forward (C=256, 4 heads, T=256, B=8)", _build_block),
        Workload("block_training", "(g) nanoGPT block training step", _build_block, training=True),
        Workload("call_overhead", "(h) call overhead: x + 1 on 10 elements", _build_call_overhead,
                 compile_backend="eager"),
        Workload("call_overhead_inductor", "(h) call overhead, inductor: x + 1 on 10 elements",
                 _build_call_overhead),
    )
}
