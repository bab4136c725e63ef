"""The decomposition table and the extern fallbacks (book chapter 7, "Prims").

``decomposition_table`` maps an aten ``OpOverload`` (``torch.ops.aten.addmm.default``) to a
Python function with the op's signature, written with prims and with other aten ops (which are
decomposed in turn). ``refs.py`` and ``decompositions.py`` fill it with
``@register_decomposition``.

``EXTERN_FALLBACKS`` are the few aten ops that are not decomposed at all: they stay in the prim
graph as they are, and backends call them as library kernels. With ``config.implicit_fallbacks``
(the default, as in TorchInductor), so does any other functional aten op that has no
decomposition, or whose decomposition declines the arguments it got (:func:`implicit_fallback_problem`
says which ops cannot); each is logged and counted.
"""
import torch
from torch.utils._pytree import tree_leaves

from .. import config
from ..collectives import COLLECTIVES, WAIT

aten = torch.ops.aten

decomposition_table: dict = {}

# Fused attention: a library kernel, as in PyTorch's inductor (the unfused form, bmm + softmax,
# is decomposed like any other graph). Collectives and their waits: torch.distributed's own
# calls (chapter 14).
EXTERN_FALLBACKS = frozenset({
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
    *COLLECTIVES,
    WAIT,
})


def implicit_fallback_problem(op):
    """Why ``op``, which has no decomposition, cannot be an implicit extern fallback (or None).

    An extern call returns new memory, so a view op (its output aliases its input) falls back as
    its copy variant (``aten.view_copy.dtype`` for ``aten.view.dtype``): the graph is functional,
    so nothing writes through the view, and AOT autograd makes an output that aliases an input
    from the input again. A view op without one must be decomposed; so must everything when
    ``config.implicit_fallbacks`` is off."""
    if not config.implicit_fallbacks:
        return f"{op} has no decomposition"
    if is_view_op(op) and copy_variant(op) is None:
        return f"{op} has no decomposition, and as a view op with no copy variant it cannot be an extern fallback"
    return None


def is_view_op(op):
    return isinstance(op, torch._ops.OpOverload) and any(r.alias_info is not None for r in op._schema.returns)


def copy_variant(op):
    """``aten.view_copy.dtype`` for ``aten.view.dtype``: the op that returns new memory."""
    packet = getattr(aten, f"{op._schema.name.split('::')[-1]}_copy", None)
    return getattr(packet, op._overloadname, None) if packet is not None else None


class DecompositionError(NotImplementedError):
    """An aten graph could not be rewritten into prims (the message says what is unsupported).
    A NotImplementedError: tinydynamo.compile then runs the frame eagerly, with a warning."""


class DecompositionDeclined(DecompositionError):
    """A decomposition does not handle these arguments, though aten's op does (two index tensors,
    a complex dtype...): with implicit fallbacks the node becomes an extern fallback instead."""


def register_decomposition(*ops):
    """Decorator: make ``fn`` the decomposition of each of the given ``OpOverload``s."""

    def register(fn):
        for op in ops:
            assert isinstance(op, torch._ops.OpOverload), f"register an overload, not {op}"
            assert op not in decomposition_table, f"two decompositions for {op}"
            decomposition_table[op] = fn
        return fn

    return register


def run_decomposition(op, args, kwargs):
    """Run the decomposition of aten ``op``; it records prim calls into the current PrimTracer."""
    if op._schema.is_mutable:
        raise DecompositionError(
            f"{op} mutates its inputs; decompose() needs a functional graph (AOT functionalizes it)")
    decomposition = decomposition_table.get(op)
    if decomposition is None:
        raise DecompositionError(f"no decomposition for {op}")
    if involves_complex((args, kwargs)):
        raise DecompositionDeclined("complex tensors: the prims have no complex dtypes")
    return decomposition(*args, **kwargs)


def involves_complex(values):
    """Whether a complex tensor or dtype is among ``values`` (nested in lists, tuples and dicts)."""
    return any((isinstance(v, torch.Tensor) and v.dtype.is_complex) or (isinstance(v, torch.dtype) and v.is_complex)
               for v in tree_leaves(values))
