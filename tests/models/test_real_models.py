"""Real models (``tinydynamo.testing.real_models``) compiled by every variant match eager.

One test per (model, variant): the eval-mode forward and a training step (loss and every
gradient) equal eager's, and tinydynamo breaks the model's graph no more often than
``torch._dynamo`` does. Models outside the fast subset are marked ``slow_models``, which the
default ``addopts`` deselects; run them with ``pytest -m slow_models tests/models``.
"""
import functools

import diffusers  # noqa: F401  the Makefile installs these: a missing one is an error, not a skip
import pytest
import torch
import torch_geometric  # noqa: F401
import transformers  # noqa: F401

import tinydynamo
from real_model_check import (SWEEP_ONLY_VARIANTS, VARIANTS, check_forward, check_train, explain_counts, no_further_from_float64,
                               reset_compilers, run_forward, run_train)
from tinydynamo.testing.real_models import REAL_MODELS


def _params():
    for name, entry in REAL_MODELS.items():
        for variant in VARIANTS:
            marks = [] if entry.fast and variant not in SWEEP_ONLY_VARIANTS else [pytest.mark.slow_models]
            yield pytest.param(name, variant, marks=marks, id=f"{name}-{variant}")


@functools.cache
def reference(name):
    """(model, args, kwargs, eager forward outputs, eager (loss, grads)), built once per model."""
    entry = REAL_MODELS[name]
    model, args, kwargs = entry.build()
    return model, args, kwargs, run_forward(model, args, kwargs), run_train(entry, model, args, kwargs)


@functools.cache
def graph_break_counts(name):
    """(tinydynamo's, torch._dynamo's) graph-break count on the model's forward."""
    model, args, kwargs, _, _ = reference(name)
    counts = []
    for explain in (tinydynamo.explain, torch._dynamo.explain):
        reset_compilers()
        counts.append(explain_counts(explain, model, args, kwargs)["graph_break_count"])
    return tuple(counts)


@pytest.mark.parametrize("name, variant", list(_params()))
def test_matches_eager(name, variant):
    model, args, kwargs, expected_forward, expected_train = reference(name)
    reset_compilers()
    check_forward(model, args, kwargs, variant, expected_forward)
    reset_compilers()
    check_train(REAL_MODELS[name], model, args, kwargs, variant, expected_train)
    ours, theirs = graph_break_counts(name)
    assert ours <= theirs, f"tinydynamo breaks {name}'s graph {ours} times, torch._dynamo {theirs} times"


FAST_MODELS = [name for name, entry in REAL_MODELS.items() if entry.fast]


@pytest.mark.parametrize("name", FAST_MODELS)
def test_compiles_under_autocast_as_torch_dynamo_does(name):
    """Under bfloat16 autocast the forward compiles (as many graph breaks as torch._dynamo, or
    fewer) and matches eager's to bfloat16's precision, with eager's dtypes."""
    model, args, kwargs, _, _ = reference(name)
    counts = []
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = run_forward(model, args, kwargs)
        reset_compilers()
        got = run_forward(model, args, kwargs, VARIANTS["inductor"])
        for explain in (tinydynamo.explain, torch._dynamo.explain):
            reset_compilers()
            counts.append(explain_counts(explain, model, args, kwargs)["graph_break_count"])
    assert [g.dtype for g in got] == [e.dtype for e in expected]
    for g, e in zip(got, expected):
        scale = e.float().abs().max().clamp(min=1)
        assert (g.float() - e.float()).abs().max() <= 2e-2 * scale, name
    assert counts[0] <= counts[1], f"tinydynamo breaks {name}'s graph {counts[0]} times, torch._dynamo {counts[1]}"


def test_a_difference_from_eager_passes_only_when_it_is_rounding():
    """A compiled gradient as close to float64 as eager's passes; a larger error or a nan does not."""
    reference, eager = {"w": torch.tensor([0.0, 10.0], dtype=torch.float64)}, {"w": torch.tensor([2e-3, 10.0])}
    assert no_further_from_float64(eager, {"w": torch.tensor([0.0, 10.0])}, reference)
    assert not no_further_from_float64(eager, {"w": torch.tensor([1e-2, 10.0])}, reference)
    assert not no_further_from_float64(eager, {"w": torch.tensor([float("nan"), 10.0])}, reference)


def test_a_model_output_rebuilt_from_its_items_is_one_graph():
    """DETR's backbone filters a BackboneOutput's items and builds the class again from them: its
    first field, a tuple of tensors, is that field's value, not (key, value) pairs to unpack."""
    from transformers.modeling_outputs import BackboneOutput

    def refilter(x):
        out = BackboneOutput(feature_maps=(x.relu(),), hidden_states=(x, x * 2))
        out = type(out)(**{k: v for k, v in out.items() if k != "hidden_states"})
        return out.feature_maps[0] + 1, list(out.keys())

    x = torch.randn(4, 4)
    assert tinydynamo.explain(refilter)(x).graph_break_count == torch._dynamo.explain(refilter)(x).graph_break_count == 0
    actual, expected = tinydynamo.compile(refilter, backend="eager")(x), refilter(x)
    torch.testing.assert_close(actual[0], expected[0])
    assert actual[1] == expected[1] == ["feature_maps"]
