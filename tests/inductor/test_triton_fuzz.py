"""The inductor fuzzer's random programs (test_inductor_fuzz.py) through the Triton code
generator, run by Triton's CPU interpreter, against eager PyTorch.

The fuzzer's tensors are tiny, so with the default block sizes every kernel is one program
instance and every reduction persistent. The second test makes blocks tiny as well: many
program instances per kernel (masks at the edge of every block) and looped reductions.
For a longer hunt:

    TINYDYNAMO_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/inductor/test_triton_fuzz.py
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings

from test_inductor_fuzz import check_program, programs
from tinydynamo import config
from tinydynamo.inductor.codegen import triton as triton_codegen
from tinydynamo.inductor.runtime import triton_heuristics

EXAMPLES = int(os.environ.get("TINYDYNAMO_FUZZ_EXAMPLES", "60"))
FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                         derandomize="TINYDYNAMO_FUZZ_EXAMPLES" not in os.environ,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                HealthCheck.data_too_large,
                                                HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def triton_on_cpu():
    with config.patch(triton_on_cpu=True):
        yield


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Rows longer than 2 elements are looped over; tiles hold at most 4 elements."""
    monkeypatch.setattr(triton_codegen, "PERSISTENT_REDUCTION_MAX", 2)
    monkeypatch.setattr(triton_heuristics, "INTERPRETER_MAX_ELEMENTS", 4)


@pytest.mark.filterwarnings(r"ignore:var\(\)")  # var over a dim of size 1 is nan, in both
@FUZZ_SETTINGS
@given(programs())
def test_random_programs_match_eager(program):
    check_program(program)


@pytest.mark.filterwarnings(r"ignore:var\(\)")
@FUZZ_SETTINGS
@given(programs())
def test_random_programs_with_tiny_blocks_match_eager(tiny_blocks, program):
    check_program(program)
