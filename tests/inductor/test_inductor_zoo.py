"""Zoo models through the C++ backend: forward, the joint (training) graph, and training steps
through tinydynamo's own AOT autograd, all against eager PyTorch."""
import copy
import sys
from pathlib import Path

import pytest
import torch
import torch.fx as fx

from inductor_helpers import assert_same, torch_graph
from tinydynamo import aot
from tinydynamo.inductor import compile_fx_inner
from tinydynamo.prims import decompose
from tinydynamo.testing.models import ZOO, make

sys.path.insert(0, str(Path(__file__).parent.parent / "prims"))
from prims_helpers import aot_flat_inputs, aot_joint  # noqa: E402  (PyTorch's own AOT, for tests)

TOLERANCE = dict(atol=2e-5, rtol=1e-4)


def inductor(gm, example_inputs):
    """The fw/bw compiler of the "inductor" backend: prims, then C++."""
    return compile_fx_inner(decompose(gm, example_inputs), example_inputs)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_forward_matches_eager(name):
    model, inputs = make(name)
    model.eval()  # the cnn's batch norms would update their statistics in place
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}

    def forward(*inputs):
        return torch.func.functional_call(model, state, inputs)

    with torch.no_grad():
        gm = torch_graph(forward, list(inputs))
        compiled = compile_fx_inner(gm, list(inputs))
        assert_same(compiled(*inputs), forward(*inputs), **TOLERANCE)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_joint_graph_matches_aten(name):
    """PyTorch's functionalized joint graph (loss, gradients, new buffers), decomposed and
    compiled, against the same graph run eagerly."""
    model, inputs = make(name)
    gm, signature, state = aot_joint(model, ZOO[name].loss, inputs)
    flat = aot_flat_inputs(signature, state, inputs)
    compiled = inductor(gm, flat)
    with torch.no_grad():
        assert_same(compiled(*flat), gm(*flat), **TOLERANCE)


def _as_graph_module(model, n_inputs):
    """A one-node torch-level graph calling the model, as a frontend hands it to a backend."""
    graph = fx.Graph()
    inputs = [graph.placeholder(f"x{i}") for i in range(n_inputs)]
    graph.output(graph.call_module("model", tuple(inputs)))
    root = torch.nn.Module()
    root.model = model
    return fx.GraphModule(root, graph)


@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_gpt"])
def test_training_steps_through_tinydynamo_aot_match_eager(name):
    model, inputs = make(name)
    reference, loss_fn = copy.deepcopy(model), ZOO[name].loss
    compiled = aot.aot_autograd(_as_graph_module(model, len(inputs)), list(inputs),
                                fw_compiler=inductor, bw_compiler=inductor)
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
