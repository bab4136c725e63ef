"""Golden files: the generated C++ for a few canonical graphs, committed under golden/.

A change to the code generator (or to the decompositions feeding it) changes these files, so it
shows up as a diff to review. To accept the new code, regenerate them:

    TINYDYNAMO_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/inductor/test_inductor_golden.py
"""
import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from inductor_helpers import check_torch, generated, torch_graph

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TINYDYNAMO_UPDATE_GOLDEN") == "1"


def _inputs(*shapes):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(*s, generator=g) for s in shapes]


CASES = {
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [(1024,)]),
    "softmax": (lambda x: torch.softmax(x, -1), [(32, 64)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (64,), w, b), [(16, 64), (64,), (64,)]),
    "bias_relu": (lambda x, b: torch.relu(x + b), [(32, 64), (64,)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_cpp_matches_golden(name):
    fn, shapes = CASES[name]
    inputs = _inputs(*shapes)
    _, module = generated(torch_graph(fn, inputs), inputs)
    path = GOLDEN / f"{name}.cpp"
    if UPDATE:
        path.write_text(module.kernels_source)
    assert path.exists(), f"{path} is missing: run with TINYDYNAMO_UPDATE_GOLDEN=1 to create it"
    assert module.kernels_source == path.read_text(), (
        f"the generated C++ for {name} changed; review the diff and regenerate the golden files "
        "with TINYDYNAMO_UPDATE_GOLDEN=1")
    check_torch(fn, inputs, atol=1e-5, rtol=1e-5)  # and the golden code computes the right thing
