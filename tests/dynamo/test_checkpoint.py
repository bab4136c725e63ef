"""Activation checkpointing (``torch.utils.checkpoint``) and other saved-tensor hooks around
compiled code: every gradient must be eager's.

A non-reentrant checkpoint runs its function twice: in the forward, where ``saved_tensors_hooks``
keep only a placeholder for each tensor saved for the backward, and again in the backward, where
it pairs the tensors that the second run saves with the placeholders, one by one. Both runs must
save the same tensors in the same order, so the compiled code and the original code must not be
mixed, and tracing must not be seen by the hooks.
"""
import pytest
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

import tinydynamo
from tinydynamo.aot import aot_autograd, min_cut_rematerialization_partition
from tinydynamo.aot.partitioners import saved_bytes

BACKENDS = ["eager", "aot_eager", "inductor"]


def make_layer():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))


def gradients(fn, layer, x):
    """The loss and the gradients of ``x`` and of the layer's parameters after ``fn(x).backward()``."""
    x = x.detach().requires_grad_()
    layer.zero_grad(set_to_none=True)
    loss = fn(x)
    loss.backward()
    return [loss.detach(), x.grad] + [p.grad for p in layer.parameters()]


def assert_same(actual, expected):
    for a, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_checkpoint_inside_a_compiled_function(backend):
    """The checkpointed function is traced into the graph, its nodes tagged for recomputation."""
    layer = make_layer()

    def step(x):
        h = torch.sin(x)
        return checkpoint(lambda t: torch.tanh(layer(t)), h, use_reentrant=False).square().sum()

    x = torch.randn(4, 8)
    expected = gradients(step, layer, x)
    compiled = tinydynamo.compile(step, backend=backend)
    for _ in range(2):
        assert_same(gradients(compiled, layer, x), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_frame_compiled_without_a_checkpoint_does_not_run_compiled_under_one(backend):
    """The layer's forward is compiled as a nested frame by a call without checkpointing; a call
    with checkpointing must then run it as its original code, in both runs."""
    layer = make_layer()

    def step(x, use_checkpoint):
        h = torch.sin(x)
        print("", end="")  # a graph break: the layer is called from an eager region
        h = checkpoint(layer, h, use_reentrant=False) if use_checkpoint else layer(h)
        return h.square().sum()

    x = torch.randn(4, 8)
    compiled = tinydynamo.compile(step, backend=backend)
    for use_checkpoint in (False, True, False, True):
        expected = gradients(lambda t: step(t, use_checkpoint), layer, x)
        assert_same(gradients(lambda t: compiled(t, use_checkpoint), layer, x), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_compiled_function_inside_a_checkpoint(backend):
    """A compiled function is what the checkpoint runs: both runs run its compiled code."""
    layer = make_layer()
    compiled_layer = tinydynamo.compile(layer, backend=backend)
    x = torch.randn(4, 8)
    expected = gradients(lambda t: checkpoint(layer, t, use_reentrant=False).sum(), layer, x)
    for _ in range(2):
        assert_same(gradients(lambda t: checkpoint(compiled_layer, t, use_reentrant=False).sum(), layer, x),
                    expected)
    assert tinydynamo.stats()["graphs"] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_compile_of_the_same_module_class_leaves_the_checkpointed_layers_nested(backend):
    """``compile(nn.Linear(...))`` makes Linear's forward the root of its own calls, not of the
    calls of a model that checkpoints Linear layers (compile shares one callback between them):
    those stay nested frames, which a checkpoint's runs do not compile."""
    tinydynamo.compile(nn.Linear(4, 4), backend=backend)(torch.randn(2, 4))
    layer = make_layer()

    class Checkpointed(nn.Module):
        def forward(self, x):
            return checkpoint(layer, x, use_reentrant=False)

    x = torch.randn(4, 8)
    expected = gradients(lambda t: Checkpointed()(t).square().sum(), layer, x)
    compiled = tinydynamo.compile(Checkpointed(), backend=backend)
    assert_same(gradients(lambda t: compiled(t).square().sum(), layer, x), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tracing_is_not_seen_by_saved_tensors_hooks(backend):
    """Hooks see what the compiled program saves, and nothing of the compile: the first call
    (which traces and compiles) saves as many tensors as the next one."""
    layer = make_layer()
    compiled = tinydynamo.compile(lambda t: torch.tanh(layer(t)).sum(), backend=backend)
    counts = []
    for _ in range(2):
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
            compiled(torch.randn(4, 8, requires_grad=True)).backward()
        counts.append(len(saved))
    assert counts[0] == counts[1] > 0


class TwoBlocks(nn.Module):
    """Two residual MLP blocks; the first one checkpointed when ``checkpointed``."""

    def __init__(self, checkpointed, p=0.0):
        super().__init__()
        torch.manual_seed(0)
        self.checkpointed, self.p = checkpointed, p
        self.up, self.down = nn.Linear(16, 64), nn.Linear(64, 16)
        self.up2, self.down2 = nn.Linear(16, 64), nn.Linear(64, 16)

    def first(self, x):
        return x + self.down(torch.dropout(torch.nn.functional.gelu(self.up(x)), self.p, True))

    def forward(self, x):
        h = checkpoint(self.first, x, use_reentrant=False) if self.checkpointed else self.first(x)
        return (h + self.down2(torch.relu(self.up2(h)))).square().mean()


def min_cut_eager(graphs):
    """AOT autograd with the min-cut partitioner (inductor's), its aten graphs run as they are and
    kept in ``graphs``."""
    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm

    def backend(gm, example_inputs):
        return aot_autograd(gm, example_inputs, fw_compiler=keep, partition_fn=min_cut_rematerialization_partition)

    return backend


def partition_of(model, x):
    """The forward and backward graphs that the min-cut partitioner makes for ``model``."""
    graphs = []
    tinydynamo.compile(model, backend=min_cut_eager(graphs))(x).backward()
    return graphs


def test_a_checkpointed_region_is_one_graph_and_its_activations_are_recomputed():
    """As in eager: the backward computes the region again from its input instead of keeping its
    activations (here the 64-wide hidden layer of the first block)."""
    x = torch.randn(32, 16, requires_grad=True)
    assert tinydynamo.explain(TwoBlocks(True))(x).graph_break_count == 0
    plain = saved_bytes(*partition_of(TwoBlocks(False), x), include_primals=False)
    forward, backward = partition_of(TwoBlocks(True), x)
    assert saved_bytes(forward, backward, include_primals=False) < plain
    assert "addmm" in {n.target.__name__.split(".")[0] for n in backward.graph.nodes if n.op == "call_function"}


def test_random_ops_in_a_checkpointed_region_are_saved_not_drawn_again():
    """Eager's checkpoint replays the random state to draw the same dropout mask again; the
    compiled backward reuses the mask of the forward instead."""
    x = torch.randn(32, 16)
    model, reference = TwoBlocks(True, p=0.5), TwoBlocks(True, p=0.5)
    compiled = tinydynamo.compile(model, backend=min_cut_eager([]))  # draws eager's random numbers
    for _ in range(2):
        torch.manual_seed(1)
        expected = gradients(reference, reference, x)
        torch.manual_seed(1)
        assert_same(gradients(compiled, model, x), expected)


def test_a_reentrant_checkpoint_of_inputs_that_need_no_grad_keeps_eager_semantics():
    """The reentrant variant's output needs no grad when none of its inputs does, even though the
    layer's parameters do: traced, it would. So that call breaks the graph and runs as eager's."""
    layer = make_layer()

    def step(x):
        return checkpoint(layer, torch.sin(x), use_reentrant=True) * 2

    x = torch.randn(4, 8)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        assert step(x).requires_grad is False
        assert tinydynamo.compile(step, backend="eager")(x).requires_grad is False
    assert "use_reentrant=True" in str(tinydynamo.explain(step)(x).break_reasons)
    assert tinydynamo.explain(step)(x.requires_grad_()).graph_break_count == 0  # now the same as non-reentrant
