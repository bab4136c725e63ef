"""The partitioners: same gradients, fewer saved bytes with min-cut, PyTorch as the reference."""
import ast
import pathlib

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from functorch.compile import make_boxed_func
from torch._functorch.aot_autograd import aot_module_simplified
from torch._functorch.partitioners import default_partition as torch_default_partition

import tinydynamo.aot
from tinydynamo.aot import (
    aot_autograd,
    aot_eager,
    default_partition,
    min_cut_rematerialization_partition,
    nop,
    saved_bytes,
)
from tinydynamo.testing.models import ZOO, make

aten = torch.ops.aten


def boxed_nop(gm, example_inputs):
    return make_boxed_func(gm.forward)  # PyTorch's compilers take their inputs as one list


def partition_of(model_name, partition_fn, aot=aot_autograd):
    """(forward, backward) graphs that ``partition_fn`` makes for a zoo model's joint graph."""
    seen = {}

    def partition(joint, *args, **kwargs):
        seen["graphs"] = partition_fn(joint, *args, **kwargs)
        return seen["graphs"]

    def backend(gm, example_inputs):
        if aot is aot_module_simplified:
            return aot(gm, example_inputs, fw_compiler=boxed_nop, partition_fn=partition)
        return aot(gm, example_inputs, fw_compiler=nop, partition_fn=partition)

    torch._dynamo.reset()
    model, inputs = make(model_name)
    ZOO[model_name].loss(torch.compile(model, backend=backend, fullgraph=True)(*inputs)).backward()
    return seen["graphs"]


@pytest.mark.parametrize("name", list(ZOO))
def test_both_partitioners_give_eager_gradients(name):
    eager_model, inputs = make(name)
    ZOO[name].loss(eager_model(*inputs)).backward()
    for partition_fn in (default_partition, min_cut_rematerialization_partition):
        torch._dynamo.reset()
        model, _ = make(name)
        backend = lambda gm, ex: aot_eager(gm, ex, partition_fn=partition_fn)  # noqa: E731
        ZOO[name].loss(torch.compile(model, backend=backend)(*inputs)).backward()
        for expected, actual in zip(eager_model.parameters(), model.parameters()):
            torch.testing.assert_close(actual.grad, expected.grad)


def test_min_cut_saves_fewer_bytes_than_default_on_gpt_block():
    default = partition_of("gpt_block", default_partition)
    min_cut = partition_of("gpt_block", min_cut_rematerialization_partition)
    assert saved_bytes(*min_cut) < saved_bytes(*default)
    activations = saved_bytes(*min_cut, include_primals=False)
    assert activations < saved_bytes(*default, include_primals=False)


def test_default_partition_saves_what_pytorchs_default_partition_saves():
    ours = partition_of("gpt_block", default_partition)
    theirs = partition_of("gpt_block", torch_default_partition, aot=aot_module_simplified)
    assert saved_bytes(*ours) == saved_bytes(*theirs)
    assert saved_bytes(*ours, include_primals=False) == saved_bytes(*theirs, include_primals=False)


def targets(gm):
    return {n.target for n in gm.graph.nodes if n.op == "call_function"}


def test_min_cut_recomputes_pointwise_ops_but_not_matmuls():
    _, bw = partition_of("gpt_block", min_cut_rematerialization_partition)
    _, default_bw = partition_of("gpt_block", default_partition)
    assert aten.gelu.default in targets(bw)  # recomputed from the saved pre-activation
    assert aten.gelu.default not in targets(default_bw)
    # The gradients of addmm are mm's: an addmm in the backward would be a recomputed one.
    assert aten.addmm.default not in targets(bw)


def test_graph_signatures():
    for partition_fn in (default_partition, min_cut_rematerialization_partition):
        fw, bw = partition_of("mlp", partition_fn)
        fw_inputs = [n.name for n in fw.graph.find_nodes(op="placeholder")]
        bw_inputs = [n.name for n in bw.graph.find_nodes(op="placeholder")]
        assert fw_inputs == [f"primals_{i}" for i in range(1, 8)]
        saved = bw_inputs[:-1]
        assert bw_inputs[-1] == "tangents_1"
        fw_outputs = [n.name for n in fw.graph.output_node().args[0]]
        assert fw_outputs[1:] == saved  # the forward returns its output, then the saved values
        assert len(bw.graph.output_node().args[0]) == 6  # one gradient per parameter


class Dropout(torch.nn.Module):
    def forward(self, x):
        return F.dropout(x.sin(), p=0.5, training=True).cos()


def test_min_cut_never_recomputes_random_ops():
    torch._dynamo.reset()
    seen = {}

    def backend(gm, ex):
        def partition(joint, n):
            seen["graphs"] = min_cut_rematerialization_partition(joint, n)
            return seen["graphs"]

        return aot_eager(gm, ex, partition_fn=partition)

    x = torch.randn(8, 8, requires_grad=True)
    torch.compile(Dropout(), backend=backend)(x).sum().backward()
    fw, bw = seen["graphs"]
    random_ops = {t for t in targets(fw) if torch.Tag.nondeterministic_seeded in t.tags}
    assert random_ops  # dropout's mask, drawn in the forward ...
    assert random_ops.isdisjoint(targets(bw))  # ... and saved, never drawn again
    assert aten.sin.default in targets(bw)  # the cheap, deterministic op is recomputed


BANNED = (
    "torch._dynamo", "torch._inductor", "torch._functorch", "torch._decomp", "torch._refs",
    "torch._prims", "torch.fx.experimental.proxy_tensor", "torch.export", "torch.jit", "functorch",
)


def dotted_names(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or ""
        elif isinstance(node, ast.Attribute):
            parts = []
            while isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name):
                yield ".".join([node.id, *reversed(parts)])


def test_aot_package_uses_no_pytorch_compiler_internals():
    for path in pathlib.Path(tinydynamo.aot.__file__).parent.glob("*.py"):
        for name in dotted_names(ast.parse(path.read_text())):
            assert not name.startswith(BANNED), f"{path.name} uses {name}"
