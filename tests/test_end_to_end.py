"""The whole pipeline through tinydynamo's own frontend: every zoo model trains like eager.

dynamo (frame hook, translator, guards) → aot (joint graph, partition) → prims → inductor (C++),
and each intermediate backend, compared with eager on the loss, every gradient and every buffer.
"""
import pytest
import torch

import tinydynamo
from tinydynamo.testing.models import ZOO, make

BACKENDS = ["eager", "aot_eager", "decomp_eager", "inductor"]
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


def _assert_same_state(model, reference, what):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **TOLERANCE, msg=lambda m: f"{what}: grad of {name}: {m}")
    for (name, b), c in zip(model.named_buffers(), reference.buffers()):
        torch.testing.assert_close(b, c, **TOLERANCE, msg=lambda m: f"{what}: buffer {name}: {m}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(ZOO))
def test_training_step_matches_eager(backend, name):
    tinydynamo.reset()
    model, inputs = make(name)
    reference, _ = make(name)
    compiled = tinydynamo.compile(model, backend=backend, fullgraph=True)
    for step in range(2):  # the second step runs from the cache
        for m in (model, reference):
            m.zero_grad(set_to_none=True)
        loss = ZOO[name].loss(compiled(*inputs))
        loss.backward()
        expected = ZOO[name].loss(reference(*inputs))
        expected.backward()
        torch.testing.assert_close(loss, expected, **TOLERANCE)
        _assert_same_state(model, reference, f"{name} under {backend}, step {step}")
    assert tinydynamo.stats()["graphs"] == 1 and tinydynamo.stats()["recompiles"] == 0


def test_inference_under_no_grad_is_a_forward_graph_only():
    tinydynamo.reset()
    model, inputs = make("gpt_block")
    compiled = tinydynamo.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs), **TOLERANCE)


OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-3),
}


# Adam divides by the running gradient magnitude, so on a gradient that is zero in exact
# arithmetic it amplifies rounding noise into lr-sized steps: the key bias of attention
# (tiny_gpt) and a conv bias followed by BatchNorm (cnn) have such gradients, so they use SGD.
@pytest.mark.parametrize("name, optimizer", [("tiny_gpt", "sgd"), ("cnn", "sgd"), ("mlp", "adam"), ("norm_act", "adam")])
def test_trajectory_under_inductor(name, optimizer):
    tinydynamo.reset()
    model, inputs = make(name)
    reference, _ = make(name)
    compiled = tinydynamo.compile(model)
    opt, ref_opt = OPTIMIZERS[optimizer](model.parameters()), OPTIMIZERS[optimizer](reference.parameters())
    for _ in range(10):
        for m, o in ((compiled, opt), (reference, ref_opt)):
            o.zero_grad()
            ZOO[name].loss(m(*inputs)).backward()
            o.step()
    for (pname, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-4, msg=lambda m: f"{pname} after 10 steps: {m}")
    assert tinydynamo.stats()["kernels_generated"] > 0
