"""Every zoo model compiles whole (fullgraph=True) under the eager backend and matches eager:
the forward result and the gradient of every parameter."""
import copy

import pytest
import torch

import tinydynamo
import tinydynamo.dynamo as dynamo
from tinydynamo.testing.models import ZOO, make


def gradients(model, inputs, loss_fn):
    model.zero_grad()
    out = model(*inputs)
    loss_fn(out).backward()
    return out, {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_forward_and_gradients(name):
    model, inputs = make(name)
    reference = copy.deepcopy(model)
    compiled = dynamo.compile(model, backend="eager", fullgraph=True)

    out, grads = gradients(compiled, inputs, ZOO[name].loss)
    expected_out, expected_grads = gradients(reference, inputs, ZOO[name].loss)

    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(grads, expected_grads)
    torch.testing.assert_close(dict(model.named_buffers()), dict(reference.named_buffers()))
    assert tinydynamo.stats()["graphs"] == 1


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_is_one_graph_with_parameters_as_inputs(name):
    model, inputs = make(name)
    explanation = dynamo.explain(model)(*inputs)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    placeholders = [n for n in explanation.graphs[0].graph.nodes if n.op == "placeholder"]
    parameters = {id(p) for p in model.parameters()}  # tied weights count once
    assert len(placeholders) == len(parameters) + len(list(model.buffers())) + len(inputs)
