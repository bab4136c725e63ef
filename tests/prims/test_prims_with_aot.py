"""The prims layer behind tinydynamo's own AOT autograd: decomp_eager as its fw/bw compiler."""
import copy

import pytest
import torch
import torch.fx as fx

from tinydynamo.prims import decomp_eager
from tinydynamo.testing.models import ZOO, make

aot = pytest.importorskip("tinydynamo.aot")


def _as_graph_module(model, n_inputs):
    """A one-node torch-level graph calling the model, as a frontend would hand it over."""
    graph = fx.Graph()
    inputs = [graph.placeholder(f"x{i}") for i in range(n_inputs)]
    graph.output(graph.call_module("model", tuple(inputs)))
    root = torch.nn.Module()
    root.model = model
    return fx.GraphModule(root, graph)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_aot_with_decomp_eager_trains_like_eager(name):
    model, inputs = make(name)
    reference, loss_fn = copy.deepcopy(model), ZOO[name].loss
    compiled = aot.aot_autograd(_as_graph_module(model, len(inputs)), list(inputs),
                                fw_compiler=decomp_eager, bw_compiler=decomp_eager)
    for _ in range(2):
        loss, expected_loss = loss_fn(compiled(*inputs)), loss_fn(reference(*inputs))
        loss.backward()
        expected_loss.backward()
        torch.testing.assert_close(loss, expected_loss)
    for (_, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4)
    for (_, b), (_, c) in zip(model.named_buffers(), reference.named_buffers()):
        torch.testing.assert_close(b, c)
