"""nn.Module forward hooks and pre-hooks are inlined around ``forward``, in ``Module._call_impl``'s
order, with eager's results and gradients and no graph break (as PyTorch's Dynamo does); backward
hooks break the graph, and the module then runs eagerly with them."""
import pytest
import torch
import torch.nn as nn

import tinydynamo


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))


def graph_breaks_matching_eager(model, x):
    """The model's graph breaks, once its compiled outputs and gradients are checked against eager's."""
    compiled = tinydynamo.compile(model)
    x = x.detach().requires_grad_()
    out = compiled(x)
    out.square().sum().backward()
    compiled_grads = [x.grad] + [p.grad for p in model.parameters()]
    x.grad = None
    model.zero_grad(set_to_none=True)
    expected = model(x)
    expected.square().sum().backward()
    torch.testing.assert_close(out, expected)
    for actual, wanted in zip(compiled_grads, [x.grad] + [p.grad for p in model.parameters()], strict=True):
        torch.testing.assert_close(actual, wanted)
    model.zero_grad(set_to_none=True)
    tinydynamo.reset()
    return tinydynamo.explain(model)(x).graph_break_count


def test_pre_hooks_and_hooks_replace_arguments_and_results():
    model = make_model()
    model[0].register_forward_pre_hook(lambda module, args: args[0] * 2)  # a single value: the new args[0]
    model[0].register_forward_pre_hook(lambda module, args: None)  # nothing changes
    model[2].register_forward_pre_hook(lambda module, args: (args[0] + 1,))
    model[1].register_forward_hook(lambda module, args, out: out - args[0].mean())
    model.register_forward_hook(lambda module, args, out: out * 3)
    assert graph_breaks_matching_eager(model, torch.randn(5, 8)) == 0


def test_hooks_with_keyword_arguments():
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    model = nn.Sequential(nn.Linear(8, 8))
    scaled = Scaled()
    model.register_forward_hook(lambda module, args, out: scaled(out, scale=0.5))
    scaled.register_forward_pre_hook(lambda module, args, kwargs: (args, {"scale": kwargs["scale"] * 4}),
                                     with_kwargs=True)
    scaled.register_forward_hook(lambda module, args, kwargs, out: out + kwargs["scale"], with_kwargs=True)
    assert graph_breaks_matching_eager(model, torch.randn(5, 8)) == 0


def test_adding_or_removing_a_hook_recompiles():
    model = make_model()
    first = model[0].register_forward_hook(lambda module, args, out: out + 1)
    compiled = tinydynamo.compile(model)
    x = torch.randn(3, 8)
    torch.testing.assert_close(compiled(x), model(x))
    second = model[0].register_forward_hook(lambda module, args, out: out * -1)
    torch.testing.assert_close(compiled(x), model(x))
    first.remove()
    second.remove()
    torch.testing.assert_close(compiled(x), model(x))
    assert tinydynamo.stats()["recompiles"] == 2


def test_a_backward_hook_breaks_the_graph_and_runs():
    model = make_model()
    seen = []
    model[2].register_full_backward_hook(lambda module, grad_in, grad_out: seen.append(grad_out[0].shape))
    assert graph_breaks_matching_eager(model, torch.randn(5, 8)) >= 1
    assert seen


class ScalesByDefault(nn.Module):
    """torch_geometric's aggregations override __call__ to compute arguments for forward."""

    def __call__(self, x, scale=None):
        return super().__call__(x, scale=10.0 if scale is None else scale)

    def forward(self, x, scale=1.0):
        return x * scale


class CallsItsOwnWay(nn.Module):
    def __call__(self, x):  # never reaches forward
        return x - 1

    def forward(self, x):
        return x + 1


class UsesOverriddenCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.scaled, self.own = ScalesByDefault(), CallsItsOwnWay()
        self.scaled.register_forward_hook(lambda module, args, out: out + 0.5)

    def forward(self, x):
        return self.own(self.scaled(x + 1)) + self.scaled(x, scale=2.0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_submodule_whose_class_overrides_call_runs_it(backend):
    """The override is inlined; its super().__call__ runs the hooks and forward (the override was
    skipped: forward ran with its own defaults, a silent wrong answer)."""
    model, x = UsesOverriddenCalls(), torch.randn(3)
    torch.testing.assert_close(tinydynamo.compile(model, backend=backend)(x), model(x))
    explanation = tinydynamo.explain(model)(x)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)


class SumsAParameterDict(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = torch.nn.ParameterDict({"w": torch.nn.Parameter(torch.randn(3)),
                                              "v": torch.nn.Parameter(torch.ones(3))})

    def forward(self, x):
        for name in self.scales:
            x = x + self.scales[name]
        for name, p in self.scales.items():
            x = x * p if name == "v" else x
        return x * len(self.scales) + sum(self.scales.values()) * ("w" in self.scales)


def test_a_parameter_dict_is_iterated_indexed_and_viewed_in_one_graph():
    """Iterating over an nn.ParameterDict made the whole frame run eagerly."""
    torch.manual_seed(0)
    model, x = SumsAParameterDict(), torch.randn(2, 3)
    compiled = tinydynamo.compile(model, backend="aot_eager")
    ours, theirs = compiled(x), model(x)
    torch.testing.assert_close(ours, theirs)
    ours.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    torch.testing.assert_close(grads, [p.grad for p in model.parameters()])
    explanation = tinydynamo.explain(model)(x)
    assert (explanation.graph_count, len(explanation.break_reasons)) == (1, 0), explanation.break_reasons


class SlicesAParameterList(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(3)) for _ in range(3)])

    def forward(self, x):
        for w in self.weights[1:]:
            x = x * w
        return x


def test_a_sliced_parameter_list_is_traced_and_compiled_once():
    """The slice broke the graph, and the resume function, guarded on the new ParameterList the
    slice made, compiled again on every call."""
    torch.manual_seed(0)
    model, x = SlicesAParameterList(), torch.randn(2, 3)
    compiled = tinydynamo.compile(model, backend="eager")
    for _ in range(3):
        torch.testing.assert_close(compiled(x), model(x))
    assert tinydynamo.stats()["frames_compiled"] == 1 and tinydynamo.stats()["graph_breaks"] == 0
