"""Functionalization: the rules that turn mutating aten ops into functional ones (chapter 6).

A compiler wants graphs without mutation: every node computes a fresh value. The tracer in
``tracer.py`` still runs each op for real (so the traced program behaves exactly as in
eager), but what it *records* follows the rules in this file:

* ``mutated_arguments``: which tensors an op writes to, read from its schema
  (``Tensor(a!) self``, ``*, Tensor(a!) out``), plus the few ops whose schema does not say so
  (``native_batch_norm`` updates its running statistics in training mode).
* ``functional_variant``: the op to record instead, ``add_`` → ``add``, ``add.out`` → ``add``,
  ``native_batch_norm`` → ``_native_batch_norm_legit_functional``. It returns the op's fresh
  results followed by the new value of every mutated argument.
* ``view_inverse``: when a *view* is mutated, how to compute the new value of the tensor it
  was viewed from (``slice`` → ``slice_scatter``, ``transpose`` → ``transpose`` back, ...).
  PyTorch keeps the same table in ``FunctionalInverses.cpp``.
"""
import math

import torch

aten = torch.ops.aten

# Views that return their input with unchanged metadata: the graph needs no node for them.
IDENTITY_VIEWS = frozenset({aten.detach.default, aten.alias.default})

# Ops traced as another op. ``torch.tensor([...])`` builds its data outside the dispatcher and
# then calls lift_fresh (an alias); as in make_fx, it becomes a copy of the graph constant, so
# each call gets a fresh tensor, as in eager.
TRACED_AS = {aten.lift_fresh.default: aten.lift_fresh_copy.default}

# In-place view ops change a tensor's metadata, not its values: the tensor's new value is the
# view op on the right applied to its old one. ``torch.matmul`` of a vector squeezes its result
# in place.
IN_PLACE_VIEWS = {
    aten.squeeze_.default: aten.squeeze.default, aten.squeeze_.dim: aten.squeeze.dim,
    aten.squeeze_.dims: aten.squeeze.dims, aten.unsqueeze_.default: aten.unsqueeze.default,
    aten.t_.default: aten.t.default, aten.transpose_.default: aten.transpose.int,
}

# Ops that mutate an argument although their schema does not say so.
_UNDECLARED_MUTATIONS = {
    # native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    # updates running_mean and running_var in training mode.
    aten.native_batch_norm.default: (
        aten._native_batch_norm_legit_functional.default,
        ("running_mean", "running_var"),
    ),
}


def without_unneeded_mutation(func, args, kwargs):
    """``_native_batch_norm_legit`` with ``training=False`` writes nothing, though its schema says
    it may write the running statistics: it is the functional ``_no_training`` variant then.
    (Recorded as a mutation, its write-back would bump the version of statistics that its
    backward saved, and autograd would refuse the backward.)"""
    if func is aten._native_batch_norm_legit.default:
        bound = bind_arguments(func, args, kwargs)
        if not bound["training"]:
            names = ("input", "weight", "bias", "running_mean", "running_var", "momentum", "eps")
            return aten._native_batch_norm_legit_no_training.default, tuple(bound[n] for n in names), {}
    return func, args, kwargs


def bind_arguments(func, args, kwargs):
    """Map each schema argument name of ``func`` to the value passed for it."""
    bound = {arg.name: value for arg, value in zip(func._schema.arguments, args)}
    bound.update(kwargs)
    return bound


def _is_written(arg):
    return arg.alias_info is not None and arg.alias_info.is_write


def _is_out_argument(arg):
    return _is_written(arg) and arg.kwarg_only


def mutated_arguments(func, args, kwargs):
    """The tensors that ``func`` writes to, in the order its functional variant returns them."""
    bound = bind_arguments(func, args, kwargs)
    if func in _UNDECLARED_MUTATIONS:
        _, names = _UNDECLARED_MUTATIONS[func]
        if not bound["training"] or bound["running_mean"] is None:
            return []
        return [bound[name] for name in names]
    written = [bound.get(arg.name) for arg in func._schema.arguments if _is_written(arg)]
    if any(isinstance(value, (list, tuple)) for value in written):
        raise NotImplementedError(f"tinydynamo.aot: {func} mutates a list of tensors; unsupported")
    return [value for value in written if value is not None]


def _signature(func, drop_out_arguments):
    return [
        (arg.name, str(arg.type))
        for arg in func._schema.arguments
        if not (drop_out_arguments and _is_out_argument(arg))
    ]


def _candidates(func):
    """Overloads that could be the functional form of ``func``, most likely first."""
    name = func._schema.name.split("::")[1]
    overload = func._overloadname
    stem = name[:-1] if name.endswith("_") else name
    for packet_name in dict.fromkeys([stem, stem + "_functional"]):
        packet = getattr(aten, packet_name, None)
        if packet is None:
            continue
        names = [overload] + [o for o in packet.overloads() if o != overload]
        yield from (getattr(packet, o) for o in names if hasattr(packet, o))


def num_fresh_results(func):
    """How many results of ``func`` are new tensors rather than its (mutated) arguments."""
    return sum(1 for ret in func._schema.returns if ret.alias_info is None)


def functional_variant(func):
    """The op that computes what ``func`` computes, returning mutated arguments' new values."""
    if func in _UNDECLARED_MUTATIONS:
        return _UNDECLARED_MUTATIONS[func][0]
    wanted = _signature(func, drop_out_arguments=True)
    num_mutated = sum(1 for arg in func._schema.arguments if _is_written(arg))
    for candidate in _candidates(func):
        if candidate._schema.is_mutable or _signature(candidate, False) != wanted:
            continue
        if candidate.is_view:
            raise NotImplementedError(
                f"tinydynamo.aot: {func} changes a tensor's metadata in place; unsupported"
            )
        if len(candidate._schema.returns) == num_fresh_results(func) + num_mutated:
            return candidate
    raise NotImplementedError(f"tinydynamo.aot: no functional variant found for mutating op {func}")


def functional_arguments(func, functional, args, kwargs):
    """The (args, kwargs) to call ``functional`` with, for a call ``func(*args, **kwargs)``.

    Defaults are spelled out: ``bernoulli_.float`` has ``p=0.5`` but ``bernoulli.p`` no default.
    """
    bound = bind_arguments(func, args, kwargs)
    defaults = {a.name: a.default_value for a in func._schema.arguments if a.has_default_value()}
    new_args, new_kwargs = [], {}
    for arg in functional._schema.arguments:
        value = bound[arg.name] if arg.name in bound else defaults[arg.name]
        if arg.kwarg_only:
            new_kwargs[arg.name] = value
        else:
            new_args.append(value)
    return tuple(new_args), new_kwargs


def _split_starts(func, args, kwargs, parent):
    """Start offsets of the pieces made by split.Tensor / split_with_sizes."""
    bound = bind_arguments(func, (parent, *args), kwargs)
    dim = bound.get("dim", 0) % parent.dim()
    if func is aten.split.Tensor:
        sizes = [bound["split_size"]] * -(-parent.shape[dim] // bound["split_size"])
    else:
        sizes = bound["split_sizes"]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return dim, starts, [min(s + size, parent.shape[dim]) for s, size in zip(starts, sizes)]


def _same_layout(a, b):
    return (a.shape, a.stride(), a.storage_offset()) == (b.shape, b.stride(), b.storage_offset())


def memory_order(tensor):
    """``tensor``'s dims from outermost to innermost in memory: ``tensor.permute(order)`` is
    contiguous (for a transposed tensor, say). None when no order is: a tensor with gaps between
    its elements, or elements that share memory."""
    order = sorted(range(tensor.dim()), key=lambda d: -tensor.stride(d))
    expected = 1  # what permute(order).is_contiguous() checks, from the strides alone: no op is
    for d in reversed(order):  # run inside the tracer's dispatch (its sizes may be symbolic)
        if tensor.shape[d] != 1 and tensor.stride(d) != expected:
            return order if tensor.numel() == 0 else None
        expected *= tensor.shape[d]
    return order


def as_strided_arguments(tensor, size, stride, storage_offset=None):
    """``as_strided``'s size, stride and offset, the offset counted from ``tensor``'s first element.

    as_strided addresses memory, and graph values have none. But the memory of a contiguous
    tensor, from its first element on, holds its values in row-major order, so on such a tensor
    as_strided is a function of the value: the tracer applies it to a contiguous copy, with this
    offset. Any other case is refused (the tracer first permutes a tensor that is contiguous in
    another ``memory_order``, so that it is contiguous).
    """
    if not tensor.is_contiguous():
        raise NotImplementedError("tinydynamo.aot: as_strided of a non-contiguous tensor is unsupported")
    first = tensor.storage_offset()
    offset = (first if storage_offset is None else storage_offset) - first
    reach = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if math.prod(size) and (offset < 0 or min(stride, default=0) < 0 or reach >= tensor.numel()):
        raise NotImplementedError(
            "tinydynamo.aot: as_strided reaching outside its input's own elements is unsupported")
    return [list(size), list(stride), offset]


def view_inverse(view, parent, mutated):
    """How to rebuild ``parent`` once its view ``mutated`` (a real tensor) got a new value.

    ``view`` records how the view was made (``func``, extra ``args``/``kwargs``, output
    ``index``). Returns ``None`` when the new value of the parent *is* the new value of the
    view, else ``(op, args)`` where the strings "parent" and "new" stand for the parent's
    current value and the view's new value.
    """
    func, args, kwargs = view.func, view.args, view.kwargs
    bound = bind_arguments(func, (parent, *args), kwargs)
    if func in IDENTITY_VIEWS or _same_layout(mutated, parent):
        return None
    if func in (aten.view.default, aten._reshape_alias.default, aten.squeeze.default,
                aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default):
        return aten.view.default, ("new", list(parent.shape))
    if func is aten.t.default:
        return aten.t.default, ("new",)
    if func is aten.transpose.int:
        return aten.transpose.int, ("new", bound["dim0"], bound["dim1"])
    if func is aten.permute.default:
        dims = [d % parent.dim() for d in bound["dims"]]
        return aten.permute.default, ("new", sorted(range(len(dims)), key=dims.__getitem__))
    if func is aten.slice.Tensor:
        return aten.slice_scatter.default, ("parent", "new", *args)
    if func is aten.select.int:
        return aten.select_scatter.default, ("parent", "new", *args)
    if func is aten.diagonal.default:
        return aten.diagonal_scatter.default, ("parent", "new", *args)
    if func in (aten.split.Tensor, aten.split_with_sizes.default):
        dim, starts, ends = _split_starts(func, args, kwargs, parent)
        start, end = starts[view.index], ends[view.index]
        return aten.slice_scatter.default, ("parent", "new", dim, start, end)
    if func is aten.as_strided.default:  # view.args are as_strided_arguments(), on a contiguous copy
        return aten.as_strided_scatter.default, ("parent", "new", *args)
    if func is aten.unbind.int:
        return aten.select_scatter.default, ("parent", "new", bound.get("dim", 0), view.index)
    raise NotImplementedError(f"tinydynamo.aot: mutating a view made by {func} is unsupported")
