"""prims: aten graphs rewritten into a small closed set of primitives (book chapter 7, "Prims").

Reading order, as data flows:

    primitives.py      the Prim class and the prims: eager impl, meta (shape) rule, kind, doc
    prim_tracer.py     ProxyTensor and PrimTracer: running a decomposition records prim nodes
    registry.py        decomposition_table, register_decomposition, EXTERN_FALLBACKS
    refs.py            basic aten ops on prims: type promotion, broadcasting, reductions, views
    decompositions.py  composite nn ops (norms, softmax, losses, pooling, ...) on refs and prims
    decomposer.py      decompose(gm, example_inputs) and the decomp_eager backend

Each prim is also an attribute of this package: ``tinydynamo.prims.add``.
"""
from . import decompositions, refs  # noqa: F401  (importing them fills decomposition_table)
from .decomposer import check_supported, decomp_eager, decompose
from .primitives import KINDS, PRIMS, Prim
from .registry import EXTERN_FALLBACKS, DecompositionError, decomposition_table, register_decomposition

globals().update(PRIMS)

__all__ = [
    "KINDS",
    "PRIMS",
    "EXTERN_FALLBACKS",
    "DecompositionError",
    "Prim",
    "check_supported",
    "decomp_eager",
    "decompose",
    "decomposition_table",
    "register_decomposition",
    *PRIMS,
]
