"""Running compiled graphs with eager semantics: the runtime wrapper (chapter 6).

``CompiledFunction`` is the ``torch.autograd.Function`` that hides the two compiled graphs
from autograd: its ``forward`` runs the forward graph and saves what the partitioner chose,
its ``backward`` runs the backward graph on those values and the incoming gradients.

``RuntimeWrapper`` is the callable ``aot_autograd`` returns. Around the graphs it restores
what functionalization took out (PyTorch: ``runtime_wrappers.py``): it checks the inputs
match what was traced (unless dynamo calls it, whose guards have checked them), copies new
values into mutated inputs, and re-makes outputs that alias an input or another output by
replaying their view ops.

With symbolic sizes, the graphs take and return plain ints for them: the forward returns the
sizes the backward needs after the saved tensors (``ctx`` keeps them), and the sizes of the
views and SymInt outputs the wrapper makes are computed from this call's inputs.
"""
import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from .schemas import OutputType
from .symbolic import SIZE_TYPES, bind_symbols, evaluate


class CompiledFunction(torch.autograd.Function):
    """Forward and backward of one compiled program; each call keeps its own saved values."""

    @staticmethod
    def forward(ctx, runtime, *args):
        meta = runtime.meta
        outputs = runtime.forward(*args)
        graph_outputs = [_not_a_view(out) for out in outputs[: meta.num_graph_outputs]]
        saved = outputs[meta.num_graph_outputs :]
        ctx.runtime = runtime
        ctx.differentiable_inputs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        ctx.set_materialize_grads(False)  # None gradients are turned into zeros below
        # The partitioner puts saved tensors first, then saved sizes (ints). An input the program
        # writes gets its new value after this call: the backward needs the value from before.
        written = [args[i] for i in meta.mutated_inputs]
        ctx.save_for_backward(*(s.clone() if any(_shares_memory(s, w) for w in written) else s
                                for s in saved if isinstance(s, torch.Tensor)))
        ctx.saved_sizes = [s for s in saved if not isinstance(s, torch.Tensor)]
        ctx.output_shapes = [out.shape for out in graph_outputs]
        ctx.mark_non_differentiable(
            *(out for out, rg in zip(graph_outputs, meta.graph_output_requires_grad) if not rg)
        )
        return tuple(graph_outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        meta = ctx.runtime.meta
        tangents = [_tangent(grad_outputs[i], ctx.output_shapes[i], meta, i) for i in meta.differentiable_outputs]
        backward_inputs = [*ctx.saved_tensors, *ctx.saved_sizes, *tangents]
        if torch.is_grad_enabled():  # create_graph=True
            grads = iter(CompiledBackward.apply(ctx.runtime, len(backward_inputs), *backward_inputs,
                                                *ctx.differentiable_inputs))
        else:
            grads = without_autocast(ctx.runtime.backward, *backward_inputs)
        present = {k for k, i in enumerate(meta.differentiable_outputs) if grad_outputs[i] is not None}
        by_input = {i: grad if tangents_used & present or not tangents_used else None
                    for i, grad, tangents_used in zip(meta.grad_inputs, grads, meta.grad_tangents)}
        return None, *(by_input.get(i) for i in range(len(meta.inputs)))


class CompiledBackward(torch.autograd.Function):
    """The backward graph run with ``create_graph=True`` (``torch.autograd.grad`` inside a
    compiled function). Its gradients cannot be differentiated again: the backward graph's ops
    are not recorded by autograd, so a second derivative would silently come out wrong. They
    are made to depend on the forward's differentiable inputs (passed after the backward
    graph's inputs, unused), so that they require grad as eager's do, and any use of them in a
    second backward raises, as in PyTorch's aot_autograd."""

    @staticmethod
    def forward(ctx, runtime, num_backward_inputs, *args):
        return tuple(runtime.backward(*args[:num_backward_inputs]))

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError("tinydynamo.aot: double backward through a compiled graph is unsupported")


def _shares_memory(a, b):
    return a.device == b.device and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _any_requires_grad(args):
    for arg in args:
        if isinstance(arg, torch.Tensor) and arg.requires_grad:
            return True
    return False


def _not_a_view(out):
    """``out``, or a tensor on the same memory that autograd does not know as a view.

    A compiled graph may return a view where the traced program computed a fresh tensor:
    inductor returns ``mm``'s buffer reshaped for a ``linear`` of a 3-d input. Autograd would
    then treat the output as a view made inside this Function and refuse any later in-place
    write to it (``out += residual``: "Output 0 of CompiledFunction is a view and is being
    modified inplace"). Outputs that really alias an input or another output are re-made
    outside the Function (``RuntimeWrapper._user_output``), so every graph output can be
    hidden from view tracking, as PyTorch's runtime wrapper does with ``aten._unsafe_view``.
    Without autograd too: a view made under ``no_grad`` may not be written in place with grad
    mode on (``out += bias`` with a bias that requires grad)."""
    if isinstance(out, torch.Tensor) and out._is_view():
        return torch.ops.aten._unsafe_view(out, out.shape)
    return out


def _tangent(grad, shape, meta, index):
    """The backward graph was traced with contiguous tangents: give it one, zeros if unused."""
    if grad is None:
        example = meta.graph_outputs[index]
        device = meta.graph_output_devices[index]
        return torch.zeros(shape, dtype=example.dtype, device=device)
    return grad.contiguous()


def without_grad(fn, *args):
    """``fn(*args)`` under ``torch.no_grad()``, which it is, without the cost of a context manager
    object (about 1.5 us, on every call of a compiled function)."""
    previous = torch.is_grad_enabled()
    torch._C._set_grad_enabled(False)
    try:
        return fn(*args)
    finally:
        torch._C._set_grad_enabled(previous)


def without_autocast(fn, *args):
    """``fn(*args)`` with autocast off: the graphs hold the casts that autocast made while they
    were traced, and the aten ops they call must not be cast again (in a block that switched
    autocast off inside the program, say)."""
    if not torch._C._is_any_autocast_enabled():
        return fn(*args)
    with torch._C._DisableAutocast():
        return fn(*args)


def _replay_views(base, steps, bindings):
    for func, args, kwargs, index in steps:
        args, kwargs = tree_map(lambda v: evaluate(v, bindings), (args, kwargs))
        base = func(base, *args, **kwargs)
        if index is not None:
            base = base[index]
    return base


class ScalarSpecializedFunction:
    """A compiled program that read 0-d tensor inputs with ``.item()`` (see the tracer's
    ``_read_scalar_input``): each variant has the values it read baked in, and a call with other
    values compiles another variant (``compile_fn(example_inputs)``). Checking costs one
    ``.item()`` per such input and call."""

    def __init__(self, compile_fn, example_inputs, first):
        self.compile_fn = compile_fn
        self.example_inputs = list(example_inputs)
        # positions among the user's inputs (the compiled wrapper prepends the lifted tensors)
        self.positions = [i - len(first.lifted) for i in first.meta.scalar_inputs]
        self.variants = {self._key(example_inputs): first}

    def _key(self, args):
        return tuple(args[i].item() for i in self.positions)

    def __call__(self, *args):
        key = self._key(args)
        if key not in self.variants:
            examples = list(self.example_inputs)
            for i in self.positions:
                examples[i] = args[i].detach().clone()
            self.variants[key] = self.compile_fn(examples)
        return self.variants[key](*args)


class RuntimeWrapper:
    """The compiled callable: same flat inputs as the original graph, same outputs."""

    def __init__(self, meta, forward, backward, lifted):
        self.meta = meta
        self.forward = forward  # compiled forward graph
        self.backward = backward  # compiled backward graph, None when compiled for inference
        self.lifted = lifted  # parameters and buffers, passed before the user's inputs
        # Outputs made here with symbolic sizes (views, SymInts) need each call's sizes.
        self.outputs_use_sizes = any(
            isinstance(v, SIZE_TYPES) for o in meta.outputs for v in tree_flatten((o.value, o.views))[0])
        spec = meta.output_spec  # a tensor or a tuple of tensors, the usual case, needs no tree_unflatten
        self.output_is_a_leaf = spec.is_leaf()
        self.outputs_are_a_flat_tuple = spec.type is tuple and all(c.is_leaf() for c in spec.children())
        # The usual case again: the graph's outputs are the user's, in order (no mutation, no alias).
        self.outputs_are_graph_outputs = not meta.mutated_inputs and not self.outputs_use_sizes and all(
            o.kind is OutputType.NON_ALIAS and o.index == i for i, o in enumerate(meta.outputs))
        self.forward_without_input_checks = getattr(forward, "without_input_checks", forward)
        # Inputs that get no gradient (used only through .detach(), or not differentiably): passed to
        # autograd detached, as eager records no edge to them (see ``_autograd_inputs``).
        self.inputs_without_grad = sorted(set(range(len(meta.inputs))) - set(meta.grad_inputs))

    def __call__(self, *args):
        args = [*self.lifted, *args]
        if len(args) != len(self.meta.inputs):
            expected = len(self.meta.inputs)
            raise TypeError(f"tinydynamo.aot: expected {expected} inputs, got {len(args)}")
        for i, (info, arg) in enumerate(zip(self.meta.inputs, args)):
            info.check(i, arg)
        return self._outputs(args, without_autocast(self._run_graphs, args, self.forward))

    def without_input_checks(self, *args):
        """``__call__`` for inputs known to be laid out as the traced ones: dynamo's guards have
        checked each input tensor's dtype, device, shape, strides and requires_grad before the call
        (PyTorch's runtime wrapper checks nothing either). The compiled forward is called the same
        way, when it offers it."""
        args = [*self.lifted, *args]
        return self._outputs(args, without_autocast(self._run_graphs, args, self.forward_without_input_checks))

    def _outputs(self, args, graph_outputs):
        if self.outputs_are_graph_outputs:
            outputs = graph_outputs
        else:
            outputs = self._user_outputs(args, graph_outputs)
        if self.output_is_a_leaf:
            return outputs[0]
        if self.outputs_are_a_flat_tuple:
            return tuple(outputs)
        return tree_unflatten(outputs, self.meta.output_spec)

    def _user_outputs(self, args, graph_outputs):
        if self.meta.mutated_inputs:
            self._copy_back_mutations(args, graph_outputs)
        bindings = bind_symbols([info.example for info in self.meta.inputs], args) if self.outputs_use_sizes else {}
        return [self._user_output(o, args, graph_outputs, bindings) for o in self.meta.outputs]

    def _copy_back_mutations(self, args, graph_outputs):
        """Write the new values into the inputs the program wrote. A value that requires grad is
        written where autograd sees it, as the program's own write was: into an activation, or into
        a buffer (a KV cache), which then requires grad as in eager. Later uses of it get their
        gradients through the graph. Other writes are not differentiable (a value computed under
        no_grad, a leaf parameter written under no_grad)."""
        for value, i in zip(graph_outputs, self.meta.mutated_inputs):
            seen = value.requires_grad and not (args[i].is_leaf and args[i].requires_grad)
            with torch.set_grad_enabled(seen and torch.is_grad_enabled()):
                args[i].copy_(value)

    def _run_graphs(self, args, forward):
        needs_grad = (torch.is_grad_enabled() or self.meta.enables_grad) and _any_requires_grad(args)
        if needs_grad and not self.meta.traced_with_grad:
            raise RuntimeError(
                "tinydynamo.aot: this graph was compiled for inference (grad mode off or no input "
                "requiring grad), but is now called with inputs that require grad; recompile"
            )
        if needs_grad and self.backward is not None:
            with torch.enable_grad():  # under an outer no_grad, for a program that enables grad
                return CompiledFunction.apply(self, *self._autograd_inputs(args))
        if needs_grad:  # grad mode on, and the graph was compiled for inference
            return without_grad(self._inference_outputs, args, forward)
        return self._inference_outputs(args, forward)  # no input requires grad: autograd records nothing

    def _autograd_inputs(self, args):
        """``args``, those that get no gradient detached: an edge to such an input would make the
        backward run through its history (raising if an earlier backward freed it, as a GAN's
        ``D(fake.detach())`` step does) and give the parameters behind it zero gradients where
        eager leaves None."""
        args = list(args)
        for i in self.inputs_without_grad:
            if isinstance(args[i], torch.Tensor) and args[i].requires_grad:
                args[i] = args[i].detach()
        return args

    def _inference_outputs(self, args, forward):
        outputs = forward(*args)
        if len(outputs) != self.meta.num_graph_outputs:
            outputs = outputs[: self.meta.num_graph_outputs]
        return [_not_a_view(out) for out in outputs]

    @staticmethod
    def _user_output(info, args, graph_outputs, bindings):
        if info.kind is OutputType.CONSTANT:
            return evaluate(info.value, bindings)
        if info.kind is OutputType.IS_INPUT:
            return args[info.index]
        if info.kind is OutputType.NON_ALIAS:
            return graph_outputs[info.index]
        if info.kind is OutputType.ALIAS_OF_INPUT:
            return _replay_views(args[info.index], info.views, bindings)
        return _replay_views(graph_outputs[info.index], info.views, bindings)
