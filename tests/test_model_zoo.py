"""The model zoo runs eagerly, forward and backward, with deterministic inputs."""
import pytest
import torch

from tinydynamo.testing.models import ZOO, make, training_step


@pytest.mark.parametrize("name", sorted(ZOO))
def test_forward_backward(name):
    model, inputs = make(name)
    loss = training_step(model, inputs, ZOO[name].loss)
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads), "every parameter gets a gradient"


@pytest.mark.parametrize("name", sorted(ZOO))
def test_deterministic(name):
    (m1, in1), (m2, in2) = make(name), make(name)
    for a, b in zip(in1, in2):
        assert torch.equal(a, b)
    torch.testing.assert_close(ZOO[name].loss(m1(*in1)), ZOO[name].loss(m2(*in2)))


def test_training_reduces_loss():
    model, inputs = make("tiny_gpt")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = [training_step(model, inputs, ZOO["tiny_gpt"].loss, optimizer) for _ in range(5)]
    assert losses[-1] < losses[0]
