"""A report: how small the prim set is, how many aten ops decompose, and where the zoo's aten ops
end up (prims, extern prims, extern fallbacks). Printed even without ``pytest -s``."""
import collections

import torch

from prims_helpers import aot_flat_inputs, aot_joint, zoo_make
from tinydynamo.prims import EXTERN_FALLBACKS, PRIMS, Prim, decompose, decomposition_table
from tinydynamo.testing.models import ZOO


def _fate(prim_targets, aten_target):
    """Where one aten node ended: 'prims', 'extern prims', 'extern fallback' or 'nothing' (an alias)."""
    if aten_target in EXTERN_FALLBACKS:
        return "extern fallback"
    if not prim_targets:
        return "nothing (alias/no-op)"
    if any(isinstance(t, Prim) and t.kind == "extern" for t in prim_targets):
        return "extern prims"
    return "prims"


def _zoo_fates():
    fates, ops = collections.Counter(), set()
    for name in sorted(ZOO):
        model, inputs, loss_fn = zoo_make(name)
        gm, signature, state = aot_joint(model, loss_fn, inputs)
        prim_gm = decompose(gm, aot_flat_inputs(signature, state, inputs))
        produced = collections.defaultdict(list)
        for node in prim_gm.graph.nodes:
            if node.op == "call_function":
                produced[node.meta["aten_node"]].append(node.target)
        for node in gm.graph.nodes:
            if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
                ops.add(node.target)
                fates[_fate(produced[node.name], node.target)] += 1
    return fates, ops


def _torch_counts():
    """(number of prims in torch._prims, number of entries in torch._decomp's table)."""
    import torch._decomp
    import torch._prims

    prims = sum(isinstance(getattr(torch._prims, n, None), torch._ops.OpOverload) for n in torch._prims.__all__)
    return prims, len(torch._decomp.decomposition_table)


def test_report(capsys):
    fates, zoo_ops = _zoo_fates()
    torch_prims, torch_decompositions = _torch_counts()
    total = sum(fates.values())
    kinds = collections.Counter(p.kind for p in PRIMS.values())
    lines = [
        f"prims: {len(PRIMS)} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}); "
        f"PyTorch's torch._prims: {torch_prims}",
        f"decompositions: {len(decomposition_table)} aten overloads; "
        f"PyTorch's torch._decomp table: {torch_decompositions}",
        f"extern fallbacks: {sorted(str(op) for op in EXTERN_FALLBACKS)}",
        f"zoo joint graphs (functionalized): {total} aten op nodes, {len(zoo_ops)} distinct ops",
        *(f"  {fate:24s} {count:5d}  {100 * count / total:5.1f}%" for fate, count in fates.most_common()),
    ]
    with capsys.disabled():
        print("\n[prims report]\n  " + "\n  ".join(lines))
    assert len(PRIMS) <= 60
    assert zoo_ops <= set(decomposition_table)
    assert fates["extern fallback"] == 0 and fates["prims"] > fates["extern prims"] > 0
