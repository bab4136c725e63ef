"""Where torch._dynamo captures one graph, tinydynamo captures one graph with the same ops.

Ops are compared as multisets of ``call_function`` / ``call_method`` targets, spelled the same
way (see ``op_name``): ``operator.add`` and ``torch.add`` both count as ``add``, and
``torch._C._set_grad_enabled`` as ``set_grad_enabled``.
"""
import collections

import pytest
import torch._dynamo

import tinydynamo.dynamo as dynamo

from dynamo_cases import CASES


def op_name(node):
    """``add`` for operator.add / torch.add / Tensor.add ..., so spellings compare equal."""
    if node.op == "call_method":
        return node.target
    return getattr(node.target, "__name__", str(node.target)).strip("_")


def ops(graphs):
    return collections.Counter(op_name(n) for gm in graphs for n in gm.graph.nodes
                               if n.op in ("call_function", "call_method"))


@pytest.mark.parametrize("case", [c for c in CASES if c.dynamo], ids=lambda c: c.name)
def test_same_ops_as_torch_dynamo(case):
    args, kwargs = case.make_inputs()
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(case.fn)(*args, **kwargs)
    args, kwargs = case.make_inputs()
    ours = dynamo.explain(case.fn)(*args, **kwargs)
    assert ours.graph_break_count == 0, ours.break_reasons
    assert ours.graph_count == theirs.graph_count  # 0 when nothing is computed (return x.shape[0])
    assert ops(ours.graphs) == ops(theirs.graphs)
