"""Capturing the forward or joint graph of a program, with its metadata (chapter 6).

``capture(fn, inputs, with_backward=...)`` runs ``fn`` once under the ``DispatchTracer`` on
copies of the inputs (copies, because the program may mutate them: think BatchNorm's running
statistics). Then it

1. analyses the outputs and mutations (``ViewAndMutationMeta``), which decides the forward
   graph's outputs: new values of mutated inputs, then the outputs that are not aliases, then
   the bases of outputs that are views of intermediates;
2. for training, calls ``torch.autograd.grad(outputs, inputs, grad_outputs=tangents)`` under
   the same tracer. The ops the autograd engine runs are recorded too, so the graph becomes
   the **joint graph**: ``(primals..., tangents...) -> (forward outputs..., gradients...)``.

PyTorch does the same in two passes (``collect_metadata_analysis.py`` then
``graph_capture.py``) on fake tensors; tinydynamo traces real tensors in one pass.

With ``symbolic_inputs`` (some input has symbolic sizes), it traces meta tensors with those
sizes instead (``symbolic_meta_inputs``): the graphs then compute for every size.
"""
import contextlib
import dataclasses
import functools

import torch
import torch.fx as fx
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from ..symbolic_shapes import SymbolicShapeError
from ..utils import unseen_by_saved_tensors_hooks
from .schemas import InputInfo, OutputInfo, OutputType, ViewAndMutationMeta
from .tracer import DispatchTracer, onednn, to_meta


@dataclasses.dataclass
class CapturedGraph:
    graph_module: fx.GraphModule
    meta: ViewAndMutationMeta
    is_joint: bool  # joint graph (with tangents and gradients) or a forward-only graph


def clone_inputs(inputs, requires_grad):
    """Copies to trace on: same sizes, strides and offsets; inputs sharing memory still do."""
    storages = {}
    clones = []
    with torch.no_grad():
        for x in inputs:
            if not isinstance(x, torch.Tensor):
                clones.append(x)
                continue
            key = (x.device, x.untyped_storage().data_ptr())
            if key not in storages:
                storages[key] = x.untyped_storage().clone()
            clone = torch.empty(0, dtype=x.dtype, device=x.device)
            clone.set_(storages[key], x.storage_offset(), x.shape, x.stride())
            clones.append(clone.requires_grad_(requires_grad and x.requires_grad))
    return clones


def symbolic_meta_inputs(inputs, symbolic_inputs, requires_grad):
    """What a symbolic trace runs on: a meta tensor per tensor input, with the symbolic sizes
    and strides where ``symbolic_inputs`` has them (else the input's own), and SymInts."""
    traced = []
    for x, symbolic in zip(inputs, symbolic_inputs):
        if not isinstance(x, torch.Tensor):
            traced.append(symbolic if symbolic is not None else x)
            continue
        like = symbolic if isinstance(symbolic, torch.Tensor) else x
        meta = torch.empty_strided(like.shape, like.stride(), dtype=x.dtype, device="meta")
        traced.append(meta.requires_grad_(requires_grad and x.requires_grad))
    return traced


def _view_steps(info, base=None):
    """The (func, args, kwargs, index) steps that re-make a view from ``base`` (by default its
    storage's base)."""
    steps = []
    while info.view is not None and info is not base:
        view = info.view
        steps.append((view.func, view.args, view.kwargs, view.index))
        info = view.parent
    return tuple(reversed(steps))


def _detached_ancestor(info):
    """The nearest of ``info`` and the tensors it views that ``detach`` made, or None.

    Python's binding of a factory function (``torch.zeros_like``) hands the program a detached
    alias of the result when anything else holds the result, as the tracer does. Writes that
    make that alias require grad leave the tracer's tensor without grad: the alias is where the
    output's autograd history starts."""
    while info.view is not None:
        if info.view.func is torch.ops.aten.detach.default:
            return info
        info = info.view.parent
    return None


class _OutputAnalysis:
    """Classifies user outputs and collects the forward graph's outputs (real tensors)."""

    def __init__(self, tracer, inputs, mutated_inputs):
        self.tracer = tracer
        self.inputs = inputs
        self.graph_outputs = [inputs[i] for i in mutated_inputs]

    def graph_output_index(self, tensor):
        for i, t in enumerate(self.graph_outputs):
            if t is tensor:
                return i
        self.graph_outputs.append(tensor)
        return len(self.graph_outputs) - 1

    def classify(self, value):
        info = self.tracer.info(value) if isinstance(value, torch.Tensor) else None
        if isinstance(value, torch.SymBool):
            raise NotImplementedError(f"tinydynamo.aot: the program returns a symbolic SymBool ({value}); "
                                      "unsupported")
        if info is None:  # not a tensor (a SymInt is computed at run time), or a tensor the program did not compute
            return OutputInfo(OutputType.CONSTANT, value=value)
        for i, x in enumerate(self.inputs):
            if x is value:
                return OutputInfo(OutputType.IS_INPUT, index=i)
        if info.storage.input_index is not None:
            index = info.storage.input_index
            return OutputInfo(OutputType.ALIAS_OF_INPUT, index, _view_steps(info))
        if info.storage.is_constant:
            raise NotImplementedError("tinydynamo.aot: returning a view of a tensor constant")
        if info.view is not None:
            base = info
            while base.view is not None:
                base = base.view.parent
            if value.requires_grad and not base.tensor.requires_grad:
                base = _detached_ancestor(info)
                if base is None or not base.tensor.requires_grad:
                    raise NotImplementedError(
                        "tinydynamo.aot: an output that requires grad through an in-place write is a "
                        "view of a tensor that does not; unsupported")
                if base is info:
                    return OutputInfo(OutputType.NON_ALIAS, self.graph_output_index(value))
            index = self.graph_output_index(base.tensor)
            return OutputInfo(OutputType.ALIAS_OF_INTERMEDIATE, index, _view_steps(info, base))
        return OutputInfo(OutputType.NON_ALIAS, self.graph_output_index(value))


def _mutated_inputs(tracer, inputs):
    """The inputs the program wrote in place (an activation's clone counts as the activation).
    A leaf that requires grad was written where autograd does not see it, under ``no_grad`` or
    through ``.data`` (an EMA update, a weight clip): with grad mode on, writing it raises. As in
    eager, the uses after the write are uses of the input, and its gradient flows from them."""
    return [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and tracer.info(x).storage.version > 0]


def _is_cuda_tensor(x):
    return isinstance(x, torch.Tensor) and x.device.type == "cuda"


class SequenceIndicesAsTensors(TorchFunctionMode):
    """Indexing a meta tensor with a list of ints (``x[..., [-2], :]``, Falcon's attention)
    builds the index tensor outside the dispatcher, directly on the meta device: its values
    never reach the tracer, which could not put them in the graph. For real tensors, aten makes
    the index on the CPU and lifts it (``lift_fresh``, a graph constant). While tracing with
    symbolic sizes, such a list becomes that CPU tensor before the indexing runs, with the same
    meaning: a list of ints or bools is a tensor index; a top-level list holding a slice, a
    list, None, ``...`` or a tensor is read as a tuple (aten's ``treatSequenceAsTuple``)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and args[0].is_meta:
            args = (args[0], _index_with_tensors(args[1]), *args[2:])
        return func(*args, **kwargs)


class OneHotWithoutChecks(TorchFunctionMode):
    """``F.one_hot(t, num_classes)`` checks that every class is in range: aten reads ``t``'s
    min and max with ``.item()``, which the tracer cannot record. The result does not depend
    on those reads, so the tracer records it as ``t.unsqueeze(-1) == arange(num_classes)``, as
    a long tensor. (PyTorch's fake tensors skip the checks too.) A class out of range gives a
    row of zeros, where eager raises."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.one_hot:
            tensor, num_classes = _one_hot_arguments(*args, **kwargs)
            if num_classes >= 0:
                classes = torch.arange(num_classes, device=tensor.device)
                return (tensor.unsqueeze(-1) == classes).long()
        return func(*args, **kwargs)


def _one_hot_arguments(tensor, num_classes=-1):
    return tensor, num_classes


def _index_with_tensors(index):
    if isinstance(index, list):
        if _is_data(index, nested=False):
            return torch.tensor(index)
        if not any(isinstance(i, (slice, list, tuple, torch.Tensor)) or i is None or i is Ellipsis for i in index):
            return index  # (SymInts, or empty): left to aten
        index = tuple(index)
    if isinstance(index, tuple):
        return tuple(torch.tensor(i) if isinstance(i, list) and _is_data(i) else i for i in index)
    return index


def _is_data(sequence, nested=True):
    """A non-empty (nested) list of plain ints or bools, which ``torch.tensor`` makes an index of."""
    return len(sequence) > 0 and all(
        _is_data(x) if nested and isinstance(x, list) else type(x) in (int, bool) for x in sequence)


def _activations(inputs, traced_inputs):
    """The traced inputs, except that an input which requires grad and is not a leaf (an
    activation, made by autograd ops before the call) is a clone of its traced leaf, made in the
    graph: eager lets a program write an activation in place, a leaf that requires grad it does
    not. Gradients reach the leaf through the clone."""
    return [x.clone() if isinstance(x, torch.Tensor) and original.requires_grad and not original.is_leaf else x
            for x, original in zip(traced_inputs, inputs)]


def _run_forward(tracer, fn, inputs, with_backward, prepare=list):
    """Run ``fn`` under the tracer on ``prepare(inputs)``; return those and what ``fn`` returned."""
    # Tracing runs the program for real: restore the random number generators afterwards, so
    # the compiled program draws the same random numbers as eager would have.
    cuda_devices = sorted({x.device.index or 0 for x in inputs if _is_cuda_tensor(x)})
    # cuDNN off: batch norm then runs as native_batch_norm, which functionalization knows.
    # oneDNN off: LSTM runs as aten's own matmuls and pointwise ops, not as mkldnn_rnn_layer,
    # whose outputs depend on the grad mode it runs under (its compiled forward runs without grad).
    # (The tracer gives convolutions oneDNN's layout: ``convolution_layout``.)
    with (torch.random.fork_rng(devices=cuda_devices), torch.backends.cudnn.flags(enabled=False),
          onednn.off(), unseen_by_saved_tensors_hooks()):
        # A program that switches grad on itself is traced from the grad mode it is called in.
        with (torch.set_grad_enabled(with_backward and torch.is_grad_enabled()), tracer, OneHotWithoutChecks(),
              SequenceIndicesAsTensors() if tracer.symbolic else contextlib.nullcontext()):
            inputs = prepare(inputs)
            return inputs, fn(*inputs)


def _writes_a_leaf(error):
    return isinstance(error, RuntimeError) and "leaf Variable that requires grad" in str(error)


def capture(fn, inputs, *, with_backward, symbolic_inputs=None, cloned_activations=False):
    """Trace ``fn(*inputs)`` into a forward graph, or a joint graph if ``with_backward``.

    ``symbolic_inputs``, if given, has per input its symbolic version (a tensor with SymInt
    sizes, a SymInt) or None, and the graph is traced symbolically. A program that writes an
    activation in place is traced again on clones of its activations (``_activations``): only
    then, since a clone the program does not write is a copy for nothing."""
    tracer = DispatchTracer(symbolic=symbolic_inputs is not None)
    if tracer.symbolic:
        traced_inputs = symbolic_meta_inputs(inputs, symbolic_inputs, requires_grad=with_backward)
        tracer.scalar_examples = {i: x for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.ndim == 0}
    else:
        traced_inputs = clone_inputs(inputs, requires_grad=with_backward)
    devices = [x.device if isinstance(x, torch.Tensor) else None for x in inputs]
    for i, (x, device) in enumerate(zip(traced_inputs, devices)):
        tracer.add_input(f"primals_{i + 1}", x, input_index=i, device=device)
    prepare = functools.partial(_activations, inputs) if cloned_activations else list
    try:
        current, outputs = _run_forward(tracer, fn, traced_inputs, with_backward, prepare)
    except RuntimeError as error:
        if tracer.symbolic and "expected to contain only concrete integers" in str(error):
            # a composite op of torch's that takes concrete sizes only (F.interpolate's
            # recompute_scale_factor): the graph is then compiled per shape
            raise SymbolicShapeError(f"tinydynamo.aot: the program failed with symbolic sizes "
                                     f"({str(error).strip().splitlines()[0][:200]})") from error
        if not _writes_a_leaf(error):
            raise
        if cloned_activations:  # a leaf of the caller's: eager raises the same error
            raise NotImplementedError(f"tinydynamo.aot: {error}") from error
        return capture(fn, inputs, with_backward=with_backward, symbolic_inputs=symbolic_inputs,
                       cloned_activations=True)
    flat_outputs, output_spec = tree_flatten(outputs)
    mutated = _mutated_inputs(tracer, current)
    analysis = _OutputAnalysis(tracer, current, mutated)
    output_infos = [analysis.classify(v) for v in flat_outputs]
    graph_outputs = analysis.graph_outputs
    input_infos = [
        _input_info(traced, original, i in mutated)
        for i, (traced, original) in enumerate(zip(traced_inputs, inputs))
    ]
    forward_nodes = [tracer.value_of(t) for t in graph_outputs]
    meta = ViewAndMutationMeta(
        inputs=input_infos,
        outputs=output_infos,
        output_spec=output_spec,
        mutated_inputs=mutated,
        graph_outputs=[to_meta(t) for t in graph_outputs],
        graph_output_devices=[node.meta["device"] for node in forward_nodes],
        graph_output_requires_grad=[t.requires_grad for t in graph_outputs],
        traced_with_grad=with_backward,
        enables_grad=with_backward and not torch.is_grad_enabled(),
        scalar_inputs=tracer.scalars_read,
    )
    if not (with_backward and meta.differentiable_outputs):
        return CapturedGraph(tracer.graph_module(forward_nodes), meta, is_joint=False)
    grad_nodes, meta.grad_inputs = _trace_backward(tracer, traced_inputs, graph_outputs, meta)
    joint = tracer.graph_module(forward_nodes + grad_nodes)
    meta.grad_tangents = _tangent_dependencies(joint, len(grad_nodes))
    return CapturedGraph(joint, meta, is_joint=True)


def _tangent_dependencies(joint, num_grads):
    """For each gradient output of the joint graph, the positions of the tangents it is computed
    from. At run time a gradient whose tangents are all absent (outputs that the loss does not
    use) is None, as in eager, not zeros: an optimizer skips a parameter whose .grad is None."""
    depends = {}
    for node in joint.graph.nodes:
        if node.op == "placeholder" and node.name.startswith("tangents_"):
            depends[node] = frozenset([int(node.name.removeprefix("tangents_")) - 1])
        else:
            depends[node] = frozenset().union(*(depends[n] for n in node.all_input_nodes))
    outputs = joint.graph.output_node().args[0]
    return [depends[g] for g in outputs[len(outputs) - num_grads:]]


def _input_info(traced, original, mutated):
    if not isinstance(traced, torch.Tensor):
        return InputInfo(traced, None, requires_grad=False, mutated=False)
    return InputInfo(to_meta(traced), original.device, original.requires_grad, mutated)


def _input_versions(tracer, inputs):
    return [tracer.info(x).storage.version if isinstance(x, torch.Tensor) else 0 for x in inputs]


def _trace_backward(tracer, inputs, graph_outputs, meta):
    """Record the backward: gradients of the differentiable outputs w.r.t. the inputs.

    Returns the gradient nodes and the indices of the inputs they are gradients of.
    """
    differentiable = [graph_outputs[i] for i in meta.differentiable_outputs]
    tangents = [torch.ones(t.shape, dtype=t.dtype, device=t.device) for t in differentiable]
    devices = [meta.graph_output_devices[i] for i in meta.differentiable_outputs]
    for k, (tangent, device) in enumerate(zip(tangents, devices)):
        tracer.add_input(f"tangents_{k + 1}", tangent, device=device)
    wants_grad = [
        i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad
    ]
    versions = _input_versions(tracer, inputs)
    tracer.constants_allowed = False
    # Without autocast: the backward ops compute in the dtypes of the forward's (autocast's
    # recommended use calls backward() outside the block; on CUDA autocast never reaches it).
    try:
        with tracer, torch._C._DisableAutocast():
            grads = torch.autograd.grad(
                differentiable, [inputs[i] for i in wants_grad], tangents, allow_unused=True
            )
    except RuntimeError as error:
        if "modified by an inplace operation" not in str(error):
            raise
        # the tracer's own writes through views (functionalization) touched a tensor that autograd
        # saved: torch.vander, an in-place op on a slice then a write through another view
        raise NotImplementedError("tinydynamo.aot: the backward of the program's in-place writes through "
                                  f"views could not be traced ({str(error).splitlines()[0][:160]})") from error
    if _input_versions(tracer, inputs) != versions:
        raise NotImplementedError("tinydynamo.aot: the backward mutates a graph input; unsupported")
    grad_inputs = [i for i, g in zip(wants_grad, grads) if g is not None]
    return [tracer.value_of(g) for g in grads if g is not None], grad_inputs
