"""In-place ``torch.distributed`` collectives, traced as functional ones (book chapter 14,
"Compiling distributed programs").

``dist.all_reduce(t, op, group)`` becomes three graph nodes::

    issued = torch.ops._c10d_functional.all_reduce(t, "sum", group_name)  # starts the collective
    result = torch.ops._c10d_functional.wait_tensor(issued)               # waits for it
    t.copy_(result)                                                      # eager's in-place result

``all_gather_into_tensor(out, inp)`` and ``reduce_scatter_tensor(out, inp)`` (or their new
names, ``all_gather_single`` and ``reduce_scatter_single``) copy into ``out``; ``broadcast(t, src)``
into ``t``. The graph names its process group, so it is guarded: an explicit group by identity,
the default group by its name and size. ``async_op=True`` returns a Work handle, which lives
outside the graph: a graph break. So is a collective on a tensor that requires grad: a graph
does not differentiate collectives, and the collective then runs as eager runs it.
"""
import inspect

import torch
import torch.distributed as dist

from ...collectives import WAIT, c10d
from ..exc import unsupported
from ..guards import Guard
from .base import VariableTracker
from .constant import ConstantVariable
from .tensor import TensorVariable, run_on_meta, trace_op

REDUCE_OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.PRODUCT: "product",
              dist.ReduceOp.MIN: "min", dist.ReduceOp.MAX: "max"}


def default_group_key():
    """What a graph built for the default process group depends on: its name and size."""
    if not dist.is_initialized():
        return None
    group = dist.distributed_c10d._get_default_group()
    return group.group_name, group.size()


def trace_collective(tx, fn, args, kwargs):
    """Record ``fn(*args, **kwargs)``, an in-place collective of ``IN_PLACE_COLLECTIVES``."""
    name = f"torch.distributed.{fn.__name__}"
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as error:
        unsupported(f"{name} called with arguments it does not take ({error})")
    bound.apply_defaults()
    call = bound.arguments
    if _constant(call["async_op"], name, "async_op"):
        unsupported(f"{name}(async_op=True): the Work handle it returns lives outside the graph")
    group = _group(tx, call["group"], name)
    return IN_PLACE_COLLECTIVES[fn](tx, call, group, name)


def _constant(value, name, argument):
    """The Python value of argument ``argument`` (a tracker, or its default)."""
    if not isinstance(value, VariableTracker):
        return value
    if value.is_python_constant():
        return value.as_python_constant()
    unsupported(f"{name} with a non-constant {argument}")


def _object(tx, value):
    """An object argument (a process group, a ReduceOp): guarded by identity when read from the
    frame; without a source it is torch's own (``dist.ReduceOp.MAX``), which nobody reassigns."""
    if not isinstance(value, VariableTracker):
        return value
    if value.is_python_constant():
        return value.as_python_constant()
    obj = value.python_object()
    if value.source is not None:
        tx.output.add_guard(Guard(value.source, "ID_MATCH", obj))
    return obj


def _group(tx, value, name):
    group = _object(tx, value)
    if group is None:
        tx.output.add_guard(Guard(None, "STATE_QUERY", (default_group_key, default_group_key())))
        return dist.distributed_c10d._get_default_group()
    if not isinstance(group, dist.ProcessGroup):
        unsupported(f"{name} with group={type(group).__name__} (only a ProcessGroup or None)")
    return group


def _reduce_op(tx, value, name):
    op = _object(tx, value)
    if op not in REDUCE_OPS:
        unsupported(f"{name} with op={op} (tinydynamo compiles {', '.join(o.name for o in REDUCE_OPS)})")
    return REDUCE_OPS[op]


def _tensor(tx, value, name, argument):
    if not isinstance(value, TensorVariable):
        unsupported(f"{name} with a {argument} that is not a tensor")
    if value.example_value.requires_grad and torch.is_grad_enabled():
        unsupported(f"{name} of a tensor that requires grad: a graph does not differentiate collectives")
    tx.output.add_global_state_guard("GRAD_MODE")
    return value


def _issue_and_copy(tx, collective, args, destination, name):
    """``destination.copy_(wait_tensor(collective(*args)))``: issue, wait, write back."""
    result, expected = run_on_meta("call_function", collective, args, {}), destination.example_value
    if (result.shape, result.dtype) != (expected.shape, expected.dtype):
        unsupported(f"{name} into a tensor of shape {tuple(expected.shape)} and {expected.dtype}, "
                    f"where the result is {tuple(result.shape)} and {result.dtype}")
    issued = trace_op(tx, "call_function", collective, args, {})
    proxy = tx.output.create_proxy("call_function", WAIT, (issued.proxy,), {})
    proxy.node.meta["example_value"] = issued.example_value.clone()  # a value of its own: the waited result
    waited = TensorVariable(proxy, proxy.node.meta["example_value"], issued.device)
    trace_op(tx, "call_method", "copy_", [destination, waited], {})
    return ConstantVariable(None)


def _all_reduce(tx, call, group, name):
    tensor = _tensor(tx, call["tensor"], name, "tensor")
    op = _reduce_op(tx, call["op"], name)
    args = [tensor, ConstantVariable(op), ConstantVariable(group.group_name)]
    return _issue_and_copy(tx, c10d.all_reduce.default, args, tensor, name)


def _all_gather_into_tensor(tx, call, group, name):
    output = _tensor(tx, call["output_tensor"], name, "output_tensor")
    tensor = _tensor(tx, call["input_tensor"], name, "input_tensor")
    args = [tensor, ConstantVariable(group.size()), ConstantVariable(group.group_name)]
    return _issue_and_copy(tx, c10d.all_gather_into_tensor.default, args, output, name)


def _reduce_scatter_tensor(tx, call, group, name):
    output = _tensor(tx, call["output"], name, "output")
    tensor = _tensor(tx, call["input"], name, "input")
    op = _reduce_op(tx, call["op"], name)
    args = [tensor, ConstantVariable(op), ConstantVariable(group.size()), ConstantVariable(group.group_name)]
    return _issue_and_copy(tx, c10d.reduce_scatter_tensor.default, args, output, name)


def _broadcast(tx, call, group, name):
    tensor = _tensor(tx, call["tensor"], name, "tensor")
    src, group_src = _constant(call["src"], name, "src"), _constant(call["group_src"], name, "group_src")
    if (src is None) == (group_src is None):
        unsupported(f"{name} needs exactly one of src and group_src")
    if group_src is None:
        group_src = dist.get_group_rank(group, src)  # src is a global rank; the op takes the group's
    args = [tensor, ConstantVariable(group_src), ConstantVariable(group.group_name)]
    return _issue_and_copy(tx, c10d.broadcast.default, args, tensor, name)


IN_PLACE_COLLECTIVES = {
    dist.all_reduce: _all_reduce,
    dist.all_gather_into_tensor: _all_gather_into_tensor,
    dist.all_gather_single: _all_gather_into_tensor,  # its new name, in torch 2.13
    dist.reduce_scatter_tensor: _reduce_scatter_tensor,
    dist.reduce_scatter_single: _reduce_scatter_tensor,
    dist.broadcast: _broadcast,
}
