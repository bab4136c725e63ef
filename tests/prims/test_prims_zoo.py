"""Every zoo model's joint (forward + backward) graph, decomposed to prims, against eager."""
import copy

import pytest
import torch

from prims_helpers import (aot_flat_inputs, aot_joint, assert_prims_only, assert_same, make_fx_joint,
                           zoo_make)
from tinydynamo.prims import DecompositionError, decompose
from tinydynamo.testing.models import ZOO, training_step

# The cnn's batch norms update their running statistics in place; make_fx records that as is
# (see test_make_fx_graph_with_batch_norm_mutation_is_refused). AOT functionalizes it, as
# PyTorch's aot_export_module does in the other tests.
MAKE_FX_MODELS = sorted(set(ZOO) - {"cnn"})
TOLERANCE = dict(atol=2e-5, rtol=1e-4)


def _eager_loss_and_grads(model, inputs, loss_fn):
    model.zero_grad()
    loss = loss_fn(model(*inputs))
    loss.backward()
    return (loss.detach(), *[p.grad for p in model.parameters()])


@pytest.mark.parametrize("name", MAKE_FX_MODELS)
def test_make_fx_joint_graph_matches_eager(name):
    model, inputs, loss_fn = zoo_make(name)
    gm, flat = make_fx_joint(model, loss_fn, inputs)
    prim_gm = decompose(gm, flat)
    assert_prims_only(prim_gm)
    with torch.no_grad():
        actual = prim_gm(*flat)
    assert_same(actual, _eager_loss_and_grads(model, inputs, loss_fn), **TOLERANCE)


def test_make_fx_graph_with_batch_norm_mutation_is_refused():
    model, inputs, loss_fn = zoo_make("cnn")
    gm, flat = make_fx_joint(model, loss_fn, inputs)
    with pytest.raises(DecompositionError, match=r"aten.add_.Tensor mutates its inputs"):
        decompose(gm, flat)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_functionalized_joint_graph_matches_aten(name):
    model, inputs, loss_fn = zoo_make(name)
    gm, signature, state = aot_joint(model, loss_fn, inputs)
    flat = aot_flat_inputs(signature, state, inputs)
    prim_gm = decompose(gm, flat)
    assert_prims_only(prim_gm)
    with torch.no_grad():
        assert_same(prim_gm(*flat), gm(*flat), **TOLERANCE)


class FunctionalTrainer:
    """SGD on a functionalized joint graph: the graph returns new buffers, the loss and the
    gradients; parameters (tied ones once) and buffers live in a dict outside the graph."""

    def __init__(self, compiled, gm, signature, state, inputs, lr):
        self.compiled, self.signature, self.state, self.inputs, self.lr = compiled, signature, state, inputs, lr
        self.values = {id(t): t.detach().clone() for t in state.values()}
        outputs = gm.graph.output_node().args[0]
        self.n_buffers = len(signature.buffers_to_mutate)
        grads_to_params = signature.backward_signature.gradients_to_parameters
        self.grad_params = [grads_to_params[n.name] for n in outputs[self.n_buffers + 1:]]
        self.mutated = list(signature.buffers_to_mutate.values())

    def value(self, name):
        return self.values[id(self.state[name])]

    def step(self):
        names = self.signature.parameters + self.signature.buffers
        with torch.no_grad():
            outputs = self.compiled(*[self.value(n) for n in names], *self.inputs)
        new_buffers, loss, grads = outputs[:self.n_buffers], outputs[self.n_buffers], outputs[self.n_buffers + 1:]
        for name, value in zip(self.mutated, new_buffers):
            self.values[id(self.state[name])] = value
        summed = {}
        for name, grad in zip(self.grad_params, grads):  # a tied parameter gets several gradients
            key = id(self.state[name])
            summed[key] = summed[key] + grad if key in summed else grad
        for key, grad in summed.items():
            self.values[key] = self.values[key] - self.lr * grad
        return loss


@pytest.mark.parametrize("name", sorted(ZOO))
def test_ten_training_steps_match_eager(name):
    lr, steps = 0.05, 10
    model, inputs, loss_fn = zoo_make(name)
    reference = copy.deepcopy(model)
    gm, signature, state = aot_joint(model, loss_fn, inputs)
    prim_gm = decompose(gm, aot_flat_inputs(signature, state, inputs))
    trainer = FunctionalTrainer(prim_gm, gm, signature, state, inputs, lr)
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
    for _ in range(steps):
        expected_loss = training_step(reference, inputs, loss_fn, optimizer)
        torch.testing.assert_close(trainer.step(), expected_loss, **TOLERANCE)
    for name, tensor in {**dict(reference.named_parameters()), **dict(reference.named_buffers())}.items():
        torch.testing.assert_close(trainer.value(f"model.{name}"), tensor.detach(), atol=1e-4, rtol=1e-4)
