"""``torch.func.functional_call(module, tensors, args)`` inside a compiled function: the module's
call is traced with the given tensors in place of its parameters and buffers, as eager swaps
them in for the call (one graph, no break, as torch.compile). Results and gradients are eager's."""
import pytest
import torch
import torch.nn as nn

import tinydynamo

BACKENDS = ["eager", "aot_eager", "inductor"]


class Net(nn.Module):
    """Two linears and a batch norm (buffers), and a third linear whose weight is the second's."""

    def __init__(self, tied=True):
        super().__init__()
        self.fc1, self.bn, self.fc2, self.fc3 = nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2), nn.Linear(8, 2)
        if tied:
            self.fc3.weight = self.fc2.weight

    def forward(self, x, scale=1.0):
        h = self.bn(self.fc1(x)).relu()
        return (self.fc2(h) + self.fc3(h)) * scale


class SumsItsParameters(Net):
    def forward(self, x):
        return super().forward(x) + sum(p.sum() for p in self.parameters())


def make(cls=Net, tied=True):
    torch.manual_seed(0)
    net = cls(tied).eval()
    doubled = {name: p.detach() * 2 for name, p in net.named_parameters()}
    shifted = {name: b + 1 for name, b in net.named_buffers()}
    return net, doubled, shifted


def counts(fn, *args):
    tinydynamo.reset()
    explain = tinydynamo.explain(fn)(*args)
    return explain.graph_count, explain.graph_break_count


def check(fn, x, backend, graphs=(1, 0)):
    expected = fn(x)
    tinydynamo.reset()
    torch.testing.assert_close(tinydynamo.compile(fn, backend=backend)(x), expected)
    assert counts(fn, x) == graphs


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_and_buffers_swapped_in(backend):
    net, doubled, shifted = make()
    check(lambda x: torch.func.functional_call(net, (doubled, shifted), x, {"scale": 3.0}), torch.randn(5, 4), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tied_weight_follows_its_twin_unless_told_not_to(backend):
    net, _, _ = make()
    zeros = {"fc2.weight": torch.zeros(2, 8)}
    check(lambda x: torch.func.functional_call(net, zeros, (x,)), torch.randn(5, 4), backend)
    check(lambda x: torch.func.functional_call(net, zeros, (x,), tie_weights=False), torch.randn(5, 4), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_deprecated_stateless_functional_call(backend):
    net, doubled, _ = make()
    with pytest.warns(FutureWarning):
        check(lambda x: torch.nn.utils.stateless.functional_call(net, doubled, (x,)), torch.randn(5, 4), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_swap_lasts_for_the_call_only(backend):
    net, doubled, _ = make()
    check(lambda x: net(x) + torch.func.functional_call(net, doubled, (x,)) + net.fc1.weight.sum(),
          torch.randn(5, 4), backend)


def test_parameters_inside_the_call_are_the_swapped_ones():
    net, doubled, _ = make(SumsItsParameters, tied=False)
    check(lambda x: torch.func.functional_call(net, doubled, (x,)), torch.randn(5, 4), "aot_eager")


def test_parameters_of_a_module_whose_swap_unties_a_weight_break_the_graph():
    """parameters() lists a tied tensor once; untied by the swap, eager lists both: a graph break,
    which runs the call as eager does."""
    net, _, _ = make(SumsItsParameters)
    zeros = {"fc2.weight": torch.zeros(2, 8)}
    fn = lambda x: torch.func.functional_call(net, zeros, (x,), tie_weights=False)  # noqa: E731
    x = torch.randn(5, 4)
    tinydynamo.reset()
    torch.testing.assert_close(tinydynamo.compile(fn, backend="eager")(x), fn(x))
    tinydynamo.reset()
    assert "unties" in str(tinydynamo.explain(fn)(x).break_reasons[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_reach_the_swapped_in_tensors(backend):
    net, _, _ = make()
    x = torch.randn(5, 4)

    def loss(params):
        return torch.func.functional_call(net, params, (x,)).square().sum()

    def grads(fn):
        params = {name: p.detach().clone().requires_grad_() for name, p in net.named_parameters()}
        fn(params).backward()
        return [p.grad for p in params.values()]

    expected = grads(loss)
    tinydynamo.reset()
    for got, want in zip(grads(tinydynamo.compile(loss, backend=backend)), expected, strict=True):
        torch.testing.assert_close(got, want)


def test_an_unknown_name_breaks_the_graph_and_runs_as_eager():
    net, _, _ = make()
    fn = lambda x: torch.func.functional_call(net, {"fc2.extra": torch.zeros(2, 8)}, (x,))  # noqa: E731
    x = torch.randn(5, 4)
    tinydynamo.reset()
    torch.testing.assert_close(tinydynamo.compile(fn, backend="eager")(x), fn(x))
