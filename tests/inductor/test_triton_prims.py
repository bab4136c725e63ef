"""Every prim through the Triton code generator, run by Triton's CPU interpreter.

These are the C++ backend's prim tests (test_inductor_prims.py), imported as they are and run
with ``config.triton_on_cpu``: the same graphs, the same comparisons with eager, so each prim's
lowering, each op's Triton expression and each dtype rule is checked on both code generators.
"""
import pytest
import torch

from inductor_helpers import prim_graph
from tinydynamo import config, prims
from tinydynamo.inductor import compile_fx, compile_fx_inner
from test_inductor_prims import *  # noqa: F401,F403  (the test cases, collected again here)


@pytest.fixture(autouse=True)
def triton_on_cpu():
    with config.patch(triton_on_cpu=True):
        yield


def test_these_tests_run_the_triton_code_generator(monkeypatch):
    """Guard against the imported tests silently taking the C++ path."""
    calls = []
    original = compile_fx.generate_triton_code
    monkeypatch.setattr(compile_fx, "generate_triton_code",
                        lambda *args: calls.append(args) or original(*args))
    x = torch.randn(3)
    compile_fx_inner(prim_graph(prims.exp, [x]), [x])
    assert len(calls) == 1
