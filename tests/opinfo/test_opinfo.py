"""PyTorch's OpInfo database through tinydynamo's default pipeline, against eager (see sweep.py).

The fast slice (a fixed, diverse list of common ops, float32 with gradients plus one other dtype)
runs with every ``pytest``. The full sweep over all of ``op_db`` is marked ``opinfo_full``:
``make test-opinfo`` runs it and writes a summary. A sample may pass, fall back (tinydynamo says it
cannot compile it and runs eagerly) or raise where eager raises; a wrong answer or an error where
eager works fails the test.
"""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import sweep  # noqa: E402

OPS = sweep.ops_by_name()

# op name -> the second dtype it runs with (float32 always runs, with gradients)
FAST_SLICE = {
    "add": torch.int64, "sub": torch.bfloat16, "mul": torch.bool, "div.no_rounding_mode": torch.float64,
    "div.floor_rounding": torch.int64, "pow": torch.float64, "abs": torch.int64, "neg": torch.bfloat16,
    "exp": torch.float64, "log": torch.bfloat16, "sqrt": torch.float64, "rsqrt": torch.float64,
    "sigmoid": torch.bfloat16, "tanh": torch.float64, "sin": torch.bfloat16, "where": torch.int64,
    "clamp": torch.int64, "maximum": torch.bool, "eq": torch.int64, "lt": torch.bool,
    "logical_and": torch.bool, "nn.functional.relu": torch.int64, "nn.functional.gelu": torch.bfloat16,
    "nn.functional.silu": torch.float64, "sum": torch.int64, "mean": torch.bfloat16, "amax": torch.int64,
    "var": torch.float64, "prod": torch.int64, "argmax": torch.int64, "softmax": torch.bfloat16,
    "log_softmax": torch.float64, "logsumexp": torch.float64, "cumsum": torch.int64,
    "mm": torch.int64, "bmm": torch.float64, "baddbmm": torch.int64, "matmul": torch.bfloat16, "cat": torch.bool,
    "stack": torch.int64, "transpose": torch.bool, "permute": torch.int64, "reshape": torch.bool,
    "expand": torch.int64, "squeeze": torch.bfloat16, "index_select": torch.int64,
    "gather": torch.float64, "masked_fill": torch.bool, "nn.functional.layer_norm": torch.float64,
    "nn.functional.linear": torch.float64, "to": torch.int64,
}


def check(op_name, dtype, limit, record, dynamic=None):
    results = sweep.sweep_op(OPS[op_name], op_name, (dtype,), limit=limit, budget=120, dynamic=dynamic)
    record(results)
    bad = [r for r in results if r.status in ("wrong", "error", "timeout")]
    assert not bad, "\n".join(f"{r.op} {r.dtype} sample {r.sample}: {r.status}: {r.detail}" for r in bad)


@pytest.mark.parametrize("op_name", sorted(FAST_SLICE))
def test_fast_slice(op_name, record):
    check(op_name, torch.float32, 2, record)
    check(op_name, FAST_SLICE[op_name], 1, record)


@pytest.mark.parametrize("op_name", sorted(FAST_SLICE))
def test_fast_slice_with_symbolic_sizes(op_name, record):
    check(op_name, torch.float32, 2, record, dynamic=True)


@pytest.mark.opinfo_full
@pytest.mark.parametrize("op_name", sorted(OPS))
def test_full_sweep(op_name, record):
    op = OPS[op_name]
    limit = int(os.environ.get("TINYDYNAMO_OPINFO_SAMPLES", "3"))
    dynamic = os.environ.get("TINYDYNAMO_OPINFO_DYNAMIC") == "1" or None
    results = sweep.sweep_op(op, op_name, limit=limit, budget=float(os.environ.get("TINYDYNAMO_OPINFO_BUDGET", "60")),
                             dynamic=dynamic)
    record(results)
    bad = [r for r in results if r.status in ("wrong", "error", "timeout")]
    assert not bad, "\n".join(f"{r.dtype} sample {r.sample}: {r.status}: {r.detail}" for r in bad)


def test_a_difference_from_eager_passes_only_when_it_is_rounding():
    """Eager rounds too: a compiled result as close to float64 as eager's passes; others do not."""
    reference, eager = torch.tensor([0.0, 1.0], dtype=torch.float64), torch.tensor([2.4e-5, 1.0])
    assert sweep.closer_to_float64((torch.tensor([0.0, 1.0]),), (eager,), (reference,))
    assert not sweep.closer_to_float64((torch.tensor([1e-3, 1.0]),), (eager,), (reference,))
    assert not sweep.closer_to_float64((torch.tensor([float("nan"), 1.0]),), (eager,), (reference,))
