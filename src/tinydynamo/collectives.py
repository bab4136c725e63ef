"""The functional collectives every stage knows (book chapter 14, "Compiling distributed programs").

``dist.all_reduce(t)`` changes ``t`` in place and returns when the collective is done. A graph
cannot hold that, so Dynamo records it as PyTorch's *functional* collectives do
(``torch.ops._c10d_functional``): the collective op returns a new tensor and only *issues* the
communication; ``wait_tensor`` of that tensor waits for it; a ``copy_`` puts the result back
into ``t``. Splitting issue from wait is what lets the Scheduler start a collective early and
wait for it late, with independent compute in between.

torch.distributed is the engine: these ops are its own, run eagerly by every backend.
"""
import torch
import torch.distributed  # noqa: F401 (registers the _c10d_functional ops)

c10d = torch.ops._c10d_functional

# Ops that issue a collective: their result may be read only after wait_tensor of it.
COLLECTIVES = frozenset({
    c10d.all_reduce.default,
    c10d.all_gather_into_tensor.default,
    c10d.reduce_scatter_tensor.default,
    c10d.broadcast.default,
})
WAIT = c10d.wait_tensor.default


def is_collective(target):
    return target in COLLECTIVES


def local_stand_in(op, tensor, *args):
    """What the AOT tracer runs instead of collective ``op``: a result of the right shape, made
    from this rank's own data without communicating (the tensor itself, repeated for an
    all_gather, its first slice for a reduce_scatter). The trace's values are thrown away, and
    a real collective here would pair up with another rank's next one unless every rank traced
    at the same moment."""
    if op is c10d.all_gather_into_tensor.default:
        group_size = args[0]
        return torch.cat([tensor] * group_size)
    if op is c10d.reduce_scatter_tensor.default:
        group_size = args[1]
        return tensor[:tensor.shape[0] // group_size].clone(memory_format=torch.contiguous_format)
    return tensor.clone(memory_format=torch.contiguous_format)
