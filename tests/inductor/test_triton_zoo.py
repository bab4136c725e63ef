"""Zoo models through ``tinydynamo.compile(model, backend="inductor")`` with the Triton code
generator (``config.triton_on_cpu``: the interpreter), against eager PyTorch: the forward pass,
then training steps (the backward graph is compiled to Triton kernels too)."""
import copy

import pytest
import torch

import tinydynamo
from tinydynamo import config
from tinydynamo.inductor import compile_fx
from tinydynamo.testing.models import ZOO, make

TOLERANCE = dict(atol=2e-5, rtol=1e-4)


@pytest.fixture(autouse=True)
def triton_graphs(monkeypatch):
    """Run with config.triton_on_cpu; the list of graphs compiled to Triton kernels."""
    compiled = []
    original = compile_fx.compile_graph_triton
    monkeypatch.setattr(compile_fx, "compile_graph_triton",
                        lambda gm, *args: compiled.append(gm) or original(gm, *args))
    with config.patch(triton_on_cpu=True):
        yield compiled
    tinydynamo.reset()


@pytest.mark.parametrize("name", sorted(ZOO))
def test_forward_matches_eager(name, triton_graphs):
    model, inputs = make(name)
    model.eval()  # the cnn's batch norms would update their statistics in place
    compiled = tinydynamo.compile(model, backend="inductor")
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs), **TOLERANCE)
    assert triton_graphs, "nothing was compiled to Triton kernels"


@pytest.mark.parametrize("name", sorted(ZOO))
def test_training_steps_match_eager(name, triton_graphs):
    model, inputs = make(name)
    reference, loss_fn = copy.deepcopy(model), ZOO[name].loss
    compiled = tinydynamo.compile(model, backend="inductor")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(2):
        loss, expected = loss_fn(compiled(*inputs)), loss_fn(reference(*inputs))
        loss.backward()
        expected.backward()
        torch.testing.assert_close(loss, expected, **TOLERANCE)
        for (pname, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=lambda m: f"grad of {pname}: {m}", **TOLERANCE)
        optimizer.step()
        reference_optimizer.step()
        optimizer.zero_grad()
        reference_optimizer.zero_grad()
    for (bname, b), c in zip(model.named_buffers(), reference.buffers()):
        torch.testing.assert_close(b, c, msg=lambda m: f"buffer {bname}: {m}", **TOLERANCE)
    assert len(triton_graphs) >= 2, "the forward and backward graphs were not both compiled to Triton"
