"""The backends registry and the torch_dynamo_backends entry point (torch.compile(backend="tinydynamo"))."""
import warnings
from importlib.metadata import entry_points

import pytest
import torch
import torch._dynamo

import tinydynamo
from tinydynamo import backends
from tinydynamo.testing.models import ZOO, make


def test_entry_point_is_registered():
    (ep,) = [ep for ep in entry_points(group="torch_dynamo_backends") if ep.name == "tinydynamo"]
    assert ep.load() is backends.torch_compile_backend


@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_gpt"])
def test_torch_compile_with_tinydynamo_backend_trains_like_eager(name):
    torch._dynamo.reset()
    model, inputs = make(name)
    reference, _ = make(name)
    compiled = torch.compile(model, backend="tinydynamo", fullgraph=True, dynamic=False)
    loss = ZOO[name].loss(compiled(*inputs))
    loss.backward()
    expected = ZOO[name].loss(reference(*inputs))
    expected.backward()
    torch.testing.assert_close(loss, expected)
    for (pname, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=lambda m: f"grad of {pname}: {m}")
    for (bname, b), c in zip(model.named_buffers(), reference.buffers()):
        torch.testing.assert_close(b, c, msg=lambda m: f"buffer {bname}: {m}")


def shifted_sum(x, y):
    return (x.sin() + y).sum(0)


@pytest.mark.parametrize("dynamic", [None, True])
def test_torch_compile_compiles_graphs_with_symbolic_shapes(dynamic):
    """After a size change (dynamic=None), or with dynamic=True, torch's Dynamo passes SymInt inputs:
    tinydynamo compiles that graph (no eager run, no warning), with kernels that take the sizes as
    arguments: no per-size variant."""
    torch._dynamo.reset()
    tinydynamo.reset()
    compiled = torch.compile(shifted_sum, backend="tinydynamo", dynamic=dynamic)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (3, 4, 5, 6):
            x, y = torch.randn(n, 2), torch.randn(n, 2)
            torch.testing.assert_close(compiled(x, y), shifted_sum(x, y))
    assert not [w for w in caught if "tinydynamo" in str(w.message)]
    assert tinydynamo.stats()["size_specializations"] == 0


@pytest.mark.parametrize("backend", ["aot_eager", "decomp_eager", "inductor"])
@pytest.mark.parametrize("name", sorted(ZOO))
def test_named_backends_behind_pytorch_dynamo(backend, name):
    """Each tinydynamo backend compiles graphs captured by PyTorch's Dynamo and trains like eager."""
    torch._dynamo.reset()
    model, inputs = make(name)
    reference, _ = make(name)
    compiled = torch.compile(model, backend=backends.lookup_backend(backend), fullgraph=True, dynamic=False)
    loss = ZOO[name].loss(compiled(*inputs))
    loss.backward()
    expected = ZOO[name].loss(reference(*inputs))
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-5)
    for (pname, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=lambda m: f"grad of {pname}: {m}")


def repeat_rows_by_argmax(x):
    """aten's repeat_interleave reads the repeats' values: the graph's output shape depends on them."""
    return x.repeat_interleave(x.argmax(-1), dim=0, output_size=5) * x.sum()


def test_torch_compile_graphs_tinydynamo_cannot_compile_run_eagerly_with_a_warning():
    torch._dynamo.reset()
    x = torch.tensor([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [2.0, 0.0, 0.0, 0.0]])  # repeats 2, 3, 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = torch.compile(repeat_rows_by_argmax, backend="tinydynamo", dynamic=False)(x)
    torch.testing.assert_close(result, repeat_rows_by_argmax(x))
    assert [str(w.message) for w in caught if "runs eagerly" in str(w.message)]


def relu_in_place_on_an_input(x):
    """torch_geometric's AttentiveFP after a graph break: ``x.relu_()`` on a graph input that
    requires grad (an intermediate of the caller, a leaf inside the trace)."""
    return x.relu_() * 2


def test_torch_compile_graphs_writing_an_activation_in_place_compile():
    """torch._dynamo's graph writes an input that requires grad (not a leaf): AOT traces it on a
    clone and copies the new value back where autograd sees it; no eager run."""
    torch._dynamo.reset()
    w = torch.randn(5, requires_grad=True)
    v = w.detach().clone().requires_grad_(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compile(relu_in_place_on_an_input, backend="tinydynamo", dynamic=False)(w * 1).sum().backward()
    relu_in_place_on_an_input(v * 1).sum().backward()
    torch.testing.assert_close(w.grad, v.grad)
    assert not [w for w in caught if "tinydynamo" in str(w.message)]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_dynamo_skips_the_backends_input_checks_and_its_guards_catch_every_new_layout(backend, monkeypatch):
    """Dynamo calls a compiled graph's ``without_input_checks``: the guards already checked every
    input. So each input that the RuntimeWrapper would have refused must fail a guard instead."""
    from tinydynamo.aot import schemas

    def refuse(self, index, arg):
        raise AssertionError("RuntimeWrapper checked an input that the guards had checked")

    def fn(x):
        return x * 2 + 1

    compiled = tinydynamo.compile(fn, backend=backend, dynamic=False)
    x = torch.randn(8, 6)
    compiled(x)
    monkeypatch.setattr(schemas.InputInfo, "check", refuse)
    compiled(x)
    monkeypatch.undo()
    recompiles = tinydynamo.stats()["recompiles"]
    others = [x.t(), x.double(), torch.randn(9, 6), torch.randn(8, 6, requires_grad=True), x[:, ::2]]
    for other in others:
        torch.testing.assert_close(compiled(other), fn(other))
    assert tinydynamo.stats()["recompiles"] - recompiles == len(others)
