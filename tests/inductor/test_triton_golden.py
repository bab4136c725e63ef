"""Golden files: the Triton kernels and wrapper generated for a few canonical graphs, committed
under golden/triton_*.py. A change to the Triton code generator (or to what feeds it) changes
these files, so it shows up as a diff to review. To accept the new code, regenerate them:

    TINYDYNAMO_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/inductor/test_triton_golden.py

Each case also runs its code in Triton's interpreter and compares the result with eager.
"""
import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from inductor_helpers import assert_same, torch_graph
from tinydynamo import config
from tinydynamo.inductor import compile_fx_inner
from tinydynamo.inductor.codegen import triton as triton_codegen
from tinydynamo.inductor.codegen.triton_wrapper import TritonWrapperCodeGen
from tinydynamo.inductor.compile_fx import generate_triton_code

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TINYDYNAMO_UPDATE_GOLDEN") == "1"


def _inputs(*shapes):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(*s, generator=g) for s in shapes]


# name -> (function, example inputs, largest persistent reduction)
CASES = {
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), _inputs((1024,)), 1024),
    "bias_relu": (lambda x, b: torch.relu(x + b), _inputs((32, 64), (64,)), 1024),
    "softmax": (lambda x: torch.softmax(x, -1), _inputs((32, 64)), 1024),
    "softmax_looped": (lambda x: torch.softmax(x, -1), _inputs((32, 64)), 16),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (64,), w, b), _inputs((16, 64), (64,), (64,)), 1024),
    "argmax_looped": (lambda x: x.argmax(-1), _inputs((8, 64)), 16),
    "embedding": (lambda w, i: F.embedding(i, w) * 2, [_inputs((10, 8))[0], torch.tensor([[1, 4, 9], [0, 0, 3]])],
                  1024),
}


def generated_source(fn, inputs):
    """Every kernel file, then the wrapper, as one text."""
    graph, scheduler, kernels = generate_triton_code(torch_graph(fn, inputs), inputs, torch.device("cpu"))
    _, wrapper = TritonWrapperCodeGen(graph, scheduler, kernels, torch.device("cpu")).compile()
    files = [f"# ---- {k.name}.py\n{k.source}" for pos in sorted(kernels) for k in kernels[pos]]
    return "\n".join(files + [f"# ---- wrapper\n{wrapper}"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_triton_matches_golden(name, monkeypatch):
    fn, inputs, persistent_max = CASES[name]
    monkeypatch.setattr(triton_codegen, "PERSISTENT_REDUCTION_MAX", persistent_max)
    source = generated_source(fn, inputs)
    path = GOLDEN / f"triton_{name}.py"
    if UPDATE:
        path.write_text(source)
    assert path.exists(), f"{path} is missing: run with TINYDYNAMO_UPDATE_GOLDEN=1 to create it"
    assert source == path.read_text(), (
        f"the generated Triton code for {name} changed; review the diff and regenerate the golden "
        "files with TINYDYNAMO_UPDATE_GOLDEN=1")
    with config.patch(triton_on_cpu=True):  # and the golden code computes the right thing
        compiled = compile_fx_inner(torch_graph(fn, inputs), inputs)
        assert_same(compiled(*inputs), fn(*inputs), atol=1e-5, rtol=1e-5)
