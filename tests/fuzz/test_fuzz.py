"""A random-program fuzzer: straight-line programs (programs.py) through tinydynamo's default
pipeline, against eager. Outputs (values, dtype, shape, requires_grad), the inputs after the call
(in-place ops) and, in the training variant, the inputs' gradients must match eager's; the
compiled program must raise exactly when eager raises. A frame that tinydynamo runs eagerly (it
says so with a warning) is not a failure. Hypothesis shrinks a failing program and the failure
prints its source.

CI runs a fixed, derandomized budget; ``TINYDYNAMO_FUZZ_EXAMPLES=N`` runs N forward programs (and
N/2 training ones) with fresh randomness instead, and ``TINYDYNAMO_FUZZ_SURVEY=file`` records every
outcome (pass, fallback, both_raise, wrong, error) in that file instead of stopping at a failure.
"""
import json
import os
import sys
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings

import tinydynamo

sys.path.insert(0, os.path.dirname(__file__))
from programs import InputSpec, Program, programs  # noqa: E402

EXAMPLES = int(os.environ.get("TINYDYNAMO_FUZZ_EXAMPLES", "0"))
SURVEY = os.environ.get("TINYDYNAMO_FUZZ_SURVEY")  # a file: record every outcome there, fail nothing
TOLERANCE = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-7, atol=1e-7),
             torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def budget(ci_examples):
    return settings(max_examples=EXAMPLES * ci_examples // 60 if EXAMPLES else ci_examples,
                    derandomize=not EXAMPLES, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def run(fn, program, training):
    """(inputs after the call, outputs, gradients of the inputs) or the exception raised."""
    inputs = [spec.make() for spec in program.inputs]
    try:
        outputs = fn(*inputs)
        grads = None
        if training:
            loss = [(o.double() * torch.linspace(-1, 1, o.numel()).reshape(o.shape)).sum()
                    for o in outputs if o.requires_grad]
            if loss:
                grads = torch.autograd.grad(sum(loss), inputs, allow_unused=True)
        return inputs, outputs, grads
    except Exception as error:  # noqa: BLE001 - the error itself is compared
        return error


def assert_same(actual, expected, what):
    if expected is None or actual is None:
        assert actual is None and expected is None, f"{what}: {actual} vs eager {expected}"
        return
    assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape), \
        f"{what}: {actual.dtype}{list(actual.shape)} vs eager {expected.dtype}{list(expected.shape)}"
    assert actual.requires_grad == expected.requires_grad, f"{what}: requires_grad {actual.requires_grad}"
    torch.testing.assert_close(actual.detach(), expected.detach(), equal_nan=True,
                               **TOLERANCE.get(expected.dtype, {}), msg=lambda m: f"{what}: {m}")


def check(program, training):
    """Run ``program`` eagerly and compiled; fail (with its source) unless they agree. Returns
    ``"pass"``, ``"fallback"`` or ``"both_raise"``."""
    fn = program.function()
    expected = run(fn, program, training)
    tinydynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        actual = run(tinydynamo.compile(fn), program, training)
    fell_back = any("runs eagerly" in str(w.message) for w in caught)
    if compare(actual, expected, program) == "both_raise":
        return "both_raise"
    return "fallback" if fell_back else "pass"


def compare(actual, expected, program):
    """Fail, with the program's source, unless a compiled run agrees with eager's."""
    try:
        if isinstance(expected, Exception):
            assert isinstance(actual, Exception), f"eager raised {expected!r}; compiled did not"
            return "both_raise"
        assert not isinstance(actual, Exception), f"compiled raised {actual!r}; eager did not"
        for kind, a, e in zip(("input", "output", "grad"), actual, expected):
            for i, (x, y) in enumerate(zip(a or (), e or ())):
                assert_same(x, y, f"{kind} {i}")
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n--- program ---\n{program}") from None
    return "agree"


def resized(program, grow):
    """The program on inputs whose sizes of 2 and more are ``grow`` larger (0 and 1 are specialised
    by dynamic shapes, so they stay)."""
    specs = [InputSpec(tuple(n + grow if n >= 2 else n for n in spec.shape), spec.dtype, spec.layout, spec.seed,
                       spec.requires_grad) for spec in program.inputs]
    return Program(specs, program.lines, program.outputs, program.raises)


def check_symbolic_sizes(program, training):
    """``dynamic=True``: traced once with size symbols, then called at larger sizes too (which
    the guards may accept or send to a recompile): every call agrees with eager, or both raise."""
    fn = program.function()
    tinydynamo.reset()
    compiled = tinydynamo.compile(fn, dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for grow in (0, 2, 3):
            variant = resized(program, grow)
            compare(run(compiled, variant, training), run(fn, variant, training), variant)


def check_or_record(program, training):
    """``check``; in a survey (a long run), record the outcome and the failure instead of failing."""
    if not SURVEY:
        check(program, training)
        return
    try:
        outcome, detail = check(program, training), ""
    except AssertionError as failure:
        outcome, detail = ("error" if "raised" in str(failure).split("\n")[0] else "wrong"), str(failure)
    with open(SURVEY, "a") as f:
        f.write(json.dumps({"training": training, "outcome": outcome, "detail": detail}) + "\n")


@budget(60)
@given(programs(training=False))
def test_forward_programs(program):
    check_or_record(program, training=False)


@budget(30)
@given(programs(training=True))
def test_training_programs(program):
    check_or_record(program, training=True)


@budget(25)
@given(programs(training=False))
def test_forward_programs_with_symbolic_sizes(program):
    check_symbolic_sizes(program, training=False)


@budget(10)
@given(programs(training=True))
def test_training_programs_with_symbolic_sizes(program):
    check_symbolic_sizes(program, training=True)


def test_a_wrong_answer_fails(monkeypatch):
    """The checker itself: a compiled program that computes something else fails, with its source."""

    program = Program([InputSpec((3,), torch.float32, "strided", 0, False)], ["v1 = v0 + 1"], [1], False)
    monkeypatch.setattr(tinydynamo, "compile", lambda fn: lambda *xs: (xs[0] + 2,))
    with pytest.raises(AssertionError, match="(?s)v1 = v0 \\+ 1"):
        check(program, training=False)
