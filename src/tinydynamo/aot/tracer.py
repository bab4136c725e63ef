"""The dispatch tracer: record the aten ops a program runs as a functional FX graph (chapter 6).

This is tinydynamo's version of ``make_fx`` (PyTorch: ``torch/fx/experimental/proxy_tensor.py``)
with functionalization built in (PyTorch: ``FunctionalTensorWrapper``). It is a
``TorchDispatchMode``: while it is active, every aten op that reaches the dispatcher, forward
*and* backward ops run by the autograd engine, calls ``__torch_dispatch__``, which

1. runs the op on the real tensors, so the program behaves exactly as it does in eager;
2. records it as a graph node whose arguments are the nodes holding the current values of
   the argument tensors. The tracer keeps a map from each real tensor to a ``TensorInfo``;
   tensors it has never seen (e.g. a ``torch.tensor([...])`` literal) become ``get_attr``
   constants, and plain Python values become literal arguments;
3. records a mutating op (``add_``, ``copy_``, ``out=``) as its functional variant, then
   points the mutated tensor at the new node. Views share a ``StorageInfo`` with the tensor
   they view: writing through a view rebuilds its base with an inverse view op
   (``slice_scatter``, ...), and a view whose base changed is re-made from the base the next
   time it is read. The graph therefore contains no mutation at all.

Every node gets ``meta["val"]`` (a meta-device tensor with the value's shape, strides and
dtype) and ``meta["device"]``.

**Symbolic sizes.** A graph whose inputs have symbolic sizes (``torch.SymInt``, see
``symbolic.py``) cannot be traced on real tensors: real tensors have one size each. The tracer
is then made with ``symbolic=True`` and the program runs on *meta* tensors whose sizes are the
SymInts, so every size it computes is an expression over the size symbols. Each op still runs,
on meta, with its arguments moved to meta and ``device=`` of factory ops rewritten to meta; the
graph records the real device. SymInt arguments become graph values (``SymbolicValues``).
"""
import contextlib
import contextvars
import dataclasses
import operator
import threading
from typing import Optional

import torch
import torch.fx as fx
from torch._dispatch.python import enable_python_dispatcher
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .functionalization import (
    IDENTITY_VIEWS,
    IN_PLACE_VIEWS,
    TRACED_AS,
    as_strided_arguments,
    functional_arguments,
    functional_variant,
    memory_order,
    mutated_arguments,
    num_fresh_results,
    view_inverse,
    without_unneeded_mutation,
)
from ..collectives import WAIT, is_collective, local_stand_in
from ..symbolic_shapes import SymbolicShapeError
from ..utils import convolution_layout
from .symbolic import SYM_TYPES, SymbolicValues

aten = torch.ops.aten

# The tags of the node of the user's graph that is running (``recompute``, from a
# torch.utils.checkpoint region): every aten node traced for it gets them too. Backward nodes,
# traced after the forward has run, get none.
PROPAGATED_TAGS = ("recompute",)
_user_node_tags = contextvars.ContextVar("user_node_tags", default={})


@contextlib.contextmanager
def user_node_tags(node):
    token = _user_node_tags.set({k: node.meta[k] for k in PROPAGATED_TAGS if k in node.meta})
    try:
        yield
    finally:
        _user_node_tags.reset(token)


@dataclasses.dataclass(eq=False)
class StorageInfo:
    """One real storage used by the program, and the node holding its base tensor's value."""

    base_node: fx.Node
    input_index: Optional[int] = None  # the graph input that owns this storage, if any
    is_constant: bool = False  # a tensor the program did not compute, stored on the graph module
    version: int = 0  # bumped by every mutation, through the base or through any view
    shared_with_other_inputs: bool = False
    self_overlapping: bool = False  # an expanded input: several of its elements share memory


@dataclasses.dataclass(eq=False)
class ViewInfo:
    """How a view was made from its parent tensor: ``func(parent, *args, **kwargs)[index]``."""

    parent: "TensorInfo"
    func: torch._ops.OpOverload
    args: tuple
    kwargs: dict
    index: Optional[int] = None


@dataclasses.dataclass(eq=False)
class TensorInfo:
    """What the tracer knows about one real tensor."""

    tensor: torch.Tensor
    storage: StorageInfo
    view: Optional[ViewInfo]  # None for the tensor that owns its storage (the base)
    node: fx.Node  # for a view: its value as of storage version ``version``
    version: int


def _layout(tensor):
    return tensor.shape, tensor.stride(), tensor.storage_offset()


def to_meta(value):
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    return value


def _device_of(value):
    tensors = [v for v in tree_flatten(value)[0] if isinstance(v, torch.Tensor)]
    return tensors[0].device if tensors else None


def _is_meta_device(device):
    return device is not None and torch.device(device).type == "meta"


def _has_device_argument(func):
    return any(arg.name == "device" for arg in func._schema.arguments)


class OneDNNSwitch:
    """oneDNN off while any thread traces (graph_capture), and the user's setting back when the
    last one is done. The setting is global to the process: if threads tracing at once each
    saved and restored it, one of them could leave it off for good. (``torch.backends.mkldnn.flags()`` would
    also reset TF32, with a warning, and refuses to change after
    ``torch.backends.disable_global_flags()``.)"""

    def __init__(self):
        self.lock = threading.Lock()
        self.tracing = 0
        self.saved = None

    @contextlib.contextmanager
    def off(self):
        with self.lock:
            if self.tracing == 0:
                self.saved = torch._C._get_mkldnn_enabled()
                torch._C._set_mkldnn_enabled(False)
            self.tracing += 1
        try:
            yield
        finally:
            with self.lock:
                self.tracing -= 1
                if self.tracing == 0:
                    torch._C._set_mkldnn_enabled(self.saved)


onednn = OneDNNSwitch()

CONVOLUTIONS = {aten.convolution.default, aten.convolution_backward.default}


def convolution_result_layout(func, args, result):
    """A convolution's (or its backward's) ``result``, laid out as eager's (``convolution_layout``)."""
    input, weight = (args[0], args[1]) if func is aten.convolution.default else (args[1], args[2])
    return convolution_layout(input, weight, result)


def _run_on_meta(func, args, kwargs):
    """Run ``func`` with its arguments moved to the meta device (symbolic tracing).

    Several C++ meta kernels (``aten.view``'s, for one) accept only concrete sizes; with the
    Python dispatcher on, torch's Python meta registrations run instead, and those compute with
    SymInts. (That is eager torch's own meta machinery; FakeTensor relies on it the same way.)
    It is on only here, for the one op: around the whole program it would also change how
    composite ops reach the tracer, and autograd would miss some (``nll_loss``)."""
    args, kwargs = tree_map(lambda v: to_meta(v) if isinstance(v, torch.Tensor) and not v.is_meta else v,
                            (args, kwargs))
    if _has_device_argument(func):
        kwargs = {**kwargs, "device": torch.device("meta")}
    try:
        with enable_python_dispatcher():
            result = func(*args, **kwargs)
            return convolution_result_layout(func, args, result) if func in CONVOLUTIONS else result
    except Exception as error:  # also when eager would raise: the per-shape compile then does
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise SymbolicShapeError(f"tinydynamo.aot: {func} failed on meta tensors with symbolic sizes "
                                 f"({type(error).__name__}: {first_line[:200]})") from error


def _check_traceable(func, args):
    """Refuse ops whose results depend on tensor *data*: a static graph cannot replay them."""
    if torch.Tag.data_dependent_output in func.tags:
        raise NotImplementedError(
            f"tinydynamo.aot: {func} returns a value that depends on tensor data (like .item()); "
            "a traced graph would bake it in"
        )
    integer_indexing = func is torch.ops.aten.index.Tensor and all(
        i is None or i.dtype not in (torch.bool, torch.uint8) for i in args[1]
    )
    if torch.Tag.dynamic_output_shape in func.tags and not integer_indexing:
        raise NotImplementedError(
            f"tinydynamo.aot: the output shape of {func} depends on tensor data; unsupported"
        )


def _check_writable(storage, func):
    """Refuse mutations the runtime could not replay (checked before the op runs for real)."""
    if storage.shared_with_other_inputs:
        raise NotImplementedError(
            f"tinydynamo.aot: {func} mutates a graph input that shares memory with another input"
        )
    if storage.self_overlapping:  # eager writes every element that shares the memory
        raise NotImplementedError(
            f"tinydynamo.aot: {func} writes to an expanded graph input, whose elements share memory"
        )
    if storage.is_constant:
        raise NotImplementedError(
            f"tinydynamo.aot: {func} mutates a tensor constant; make it a buffer or an input"
        )


class DispatchTracer(TorchDispatchMode):
    """Records every aten op run while it is active into ``self.graph``, functionalized."""

    def __init__(self, symbolic=False):
        super().__init__()
        self.symbolic = symbolic  # run ops on meta tensors with symbolic sizes, not real ones
        self.graph = fx.Graph()
        self.sym_values = SymbolicValues(self.graph)
        self.root = torch.nn.Module()  # owns the graph's get_attr constants
        # Switched off for the backward: it may only use tensors the forward produced.
        self.constants_allowed = True
        self._infos: dict[int, TensorInfo] = {}  # id(tensor) -> info; infos keep tensors alive
        self._input_storages: dict[int, StorageInfo] = {}
        self._last_placeholder = None
        self._num_constants = 0
        self.scalar_examples = {}  # input index -> the real 0-d tensor, for _read_scalar_input
        self.scalars_read = {}  # input index -> the value the program read from it

    # ----------------------------------------------------------------- inputs and outputs
    def add_input(self, name, value, input_index=None, device=None):
        """Add a placeholder (after the existing ones) standing for ``value``; when tracing
        symbolically, ``value`` is a meta tensor and ``device`` is the real one."""
        if self._last_placeholder is None:
            where = self.graph.inserting_before(None)
        else:
            where = self.graph.inserting_after(self._last_placeholder)
        with where:
            node = self.graph.placeholder(name)
        self._last_placeholder = node
        self.sym_values.add_input(node, value)
        if isinstance(value, torch.Tensor):
            self._set_val(node, value, device or value.device)
            storage = self._track(value, node, view=None).storage
            storage.input_index = input_index
            # (A stride of 0 is a plain int; a SymInt size is never 0 or 1: those are specialised.)
            storage.self_overlapping = any(isinstance(st, int) and st == 0 and not (isinstance(n, int) and n <= 1)
                                           for n, st in zip(value.shape, value.stride()))
            if not self.symbolic:  # meta tensors share no memory
                self._note_shared_input_storage(value, storage)
        else:
            node.meta["val"] = value
            node.meta["device"] = None
        return node

    def _note_shared_input_storage(self, tensor, storage):
        key = tensor.untyped_storage().data_ptr()
        if tensor.untyped_storage().nbytes() == 0:
            return
        other = self._input_storages.setdefault(key, storage)
        if other is not storage:
            other.shared_with_other_inputs = storage.shared_with_other_inputs = True

    def info(self, tensor):
        """The TensorInfo of a real tensor, or None if the traced program never produced it."""
        return self._infos.get(id(tensor))

    def value_of(self, tensor):
        """The node holding ``tensor``'s current (functional) value."""
        info = self._infos.get(id(tensor)) or self._add_constant(tensor)
        return self._current(info)

    def graph_module(self, outputs):
        """Finish the graph with ``outputs`` (a list of nodes) and drop unused nodes."""
        self.graph.output(tuple(outputs))
        self.graph.eliminate_dead_code()
        self.graph.lint()
        return fx.GraphModule(self.root, self.graph)

    # ----------------------------------------------------------------- the dispatch hook
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        func = TRACED_AS.get(func, func)
        func, args, kwargs = without_unneeded_mutation(func, args, kwargs)
        if func is aten._local_scalar_dense.default and self.symbolic:
            return self._read_scalar_input(args[0])
        if func is aten._local_scalar_dense.default and self._computed_from_constants(args[0]):
            return self._run(func, args, kwargs)  # the same value on every call: baked into the graph
        _check_traceable(func, args)
        if func is aten._conj.default and not isinstance(args[0], torch.Tensor):
            # the backward of ``1j * x`` conjugates the Python number: a constant, not a view
            return self.__torch_dispatch__(aten.scalar_tensor.default, types, (args[0].conjugate(),),
                                           {"dtype": torch.complex128, "device": torch.device("cpu")})
        if func is WAIT:
            return self._trace_wait(args[0])
        if func is aten.as_strided_.default:
            return self._trace_restride(args, kwargs)
        if func in IN_PLACE_VIEWS:
            return self._trace_view_in_place(func, args, kwargs)
        if func is aten.copy_.default and args[0] is args[1]:
            return self._run(func, args, kwargs)  # aten returns at once: nothing is written (even to an expanded tensor)
        mutated = mutated_arguments(func, args, kwargs)
        if mutated:
            return self._trace_mutation(func, args, kwargs, mutated)
        if func is aten.as_strided.default:
            return self._trace_as_strided(args, kwargs)
        node_args, node_kwargs = self._graph_args((args, kwargs))
        out = self._run(func, args, kwargs)
        if func in IDENTITY_VIEWS:
            node = node_args[0]
        else:
            node = self._emit(func, node_args, node_kwargs, out)
        # (_unsafe_view shares memory with its input too, but by its contract that input is a
        # temporary nobody else sees, so its result can be treated as a fresh tensor.)
        parent = self._infos[id(args[0])] if func.is_view else None
        for index, tensor, value in self._results(out, node):
            view = ViewInfo(parent, func, args[1:], kwargs, index) if parent else None
            self._track(tensor, value, view)
        return out

    def _computed_from_constants(self, tensor):
        """Whether ``tensor`` was computed from Python numbers alone (``torch.div(16, 4)``, which
        Longformer passes to ``view`` as a size), not from a graph input or a tensor the graph
        holds: reading it while tracing reads what every call would."""
        seen, todo = set(), [self.value_of(tensor)]
        while todo:
            node = todo.pop()
            if node.op in ("placeholder", "get_attr"):
                return False
            seen.add(node)
            todo.extend(n for n in node.all_input_nodes if n not in seen)
        return True

    def _read_scalar_input(self, tensor):
        """``.item()`` of a 0-d graph input. With ``dynamic=True``, PyTorch's Dynamo passes a
        float argument (a LayerNorm's eps) as such a tensor, which the graph reads: a symbolic
        float, which tinydynamo does not trace. The value is read from the real example input
        and baked into the graph; ``scalars_read`` records it, and the runtime compiles again
        for another value (``ScalarSpecializedFunction``)."""
        info = self._infos.get(id(tensor))
        index = info.storage.input_index if info is not None and info.view is None else None
        if index not in self.scalar_examples or info.storage.version:
            raise SymbolicShapeError(
                "tinydynamo.aot: aten._local_scalar_dense (.item()) of a computed tensor while tracing "
                "with symbolic sizes: a value that depends on tensor data; unsupported")
        value = self.scalar_examples[index].item()
        self.scalars_read[index] = value
        return value

    def _run(self, func, args, kwargs):
        """Run the op: on the real tensors, or on meta when tracing symbolically. A collective
        does not communicate (see ``local_stand_in``)."""
        if self.symbolic:
            return _run_on_meta(func, args, kwargs)
        if is_collective(func):
            return local_stand_in(func, *args, **kwargs)
        result = func(*args, **kwargs)
        return convolution_result_layout(func, args, result) if func in CONVOLUTIONS else result

    def _trace_wait(self, tensor):
        """``wait_tensor`` hands back the very tensor a collective issued, now complete. From here
        on its value is the wait node's, so every op that reads it comes after the wait."""
        info = self._infos.get(id(tensor))
        if info is None or info.view is not None:
            raise NotImplementedError("tinydynamo.aot: wait_tensor of a tensor that no collective returned")
        node = self._emit(WAIT, (self._current(info),), {}, tensor)
        info.storage.base_node = node
        return tensor  # (what the collective returned was made here: nothing to wait for)

    def _trace_as_strided(self, args, kwargs):
        """as_strided, applied in the graph to a contiguous copy of its input (see
        ``as_strided_arguments``); writes through the view come back with as_strided_scatter.
        An input whose memory holds its dims in another order (a transposed tensor: autograd's
        backward of a write into a view of one) is first permuted into that order, a view too:
        as_strided reads the same memory through it."""
        func = aten.as_strided.default
        order = None if args[0].is_contiguous() else memory_order(args[0])
        if order is not None:
            args = (self.__torch_dispatch__(aten.permute.default, (), (args[0], order)), *args[1:])
        parent = self._infos.get(id(args[0])) or self._add_constant(args[0])
        if parent.storage.input_index is not None:
            raise NotImplementedError(
                "tinydynamo.aot: as_strided of a graph input (or of a view of one) addresses the "
                "input's memory, which the traced graph does not see; unsupported")
        view_args = as_strided_arguments(*args, **kwargs)
        out = self._run(func, args, kwargs)
        view = ViewInfo(parent, func, tuple(view_args), {})
        node = self._emit(func, (self._view_input(view, self._current(parent)), *view_args), {}, out)
        self._track(out, node, view)
        return out

    def _trace_restride(self, args, kwargs):
        """``as_strided_`` on a fresh, contiguous result (``adaptive_avg_pool2d`` restrides its
        output to the input's memory format): the tensor now reads its memory with other
        strides. It is recorded as ``as_strided`` of its value (see ``_rebase``)."""
        tensor = args[0]
        self._check_rebasable(tensor, aten.as_strided_.default)
        if not tensor.is_contiguous() or tensor.storage_offset() != 0:
            raise NotImplementedError("tinydynamo.aot: as_strided_ of a non-contiguous tensor; unsupported")
        view_args = as_strided_arguments(*args, **kwargs)
        node = self._emit_on_meta(aten.as_strided.default, (self.value_of(tensor), *view_args), {})
        out = self._run(aten.as_strided_.default, args, kwargs)
        self._rebase(tensor, node)
        return out

    def _trace_view_in_place(self, func, args, kwargs):
        """``squeeze_``, ``t_``... (``torch.matmul`` of a vector squeezes its result in place):
        recorded as the view op on the tensor's value (see ``_rebase``)."""
        tensor = args[0]
        self._check_rebasable(tensor, func)
        node = self._emit_on_meta(IN_PLACE_VIEWS[func], (self.value_of(tensor), *args[1:]), kwargs)
        out = self._run(func, args, kwargs)
        self._rebase(tensor, node)
        return out

    def _check_rebasable(self, tensor, func):
        """A tensor whose metadata changes in place gets a value of its own, unshared: refuse
        a tensor whose memory an input, a constant or another tensor (a view) shares, since
        writes through it would no longer reach them."""
        info = self._infos.get(id(tensor))
        if info is None or info.view is not None or info.storage.input_index is not None \
                or info.storage.is_constant \
                or any(other.storage is info.storage for other in self._infos.values() if other is not info):
            raise NotImplementedError(
                f"tinydynamo.aot: {func} on an input, a constant, a view or a tensor with views; unsupported")

    def _rebase(self, tensor, node):
        """``tensor`` (changed in place by an op on its metadata) now holds ``node``'s value."""
        del self._infos[id(tensor)]
        self._track(tensor, node, view=None)

    def _view_input(self, view, parent_node):
        """The node a view op reads: its parent, or for as_strided a contiguous copy of it."""
        if view.func is not aten.as_strided.default:
            return parent_node
        return self._emit_on_meta(aten.clone.default, (parent_node,), {"memory_format": torch.contiguous_format})

    def _trace_mutation(self, func, args, kwargs, mutated):
        """Run a mutating op for real; record its functional variant instead."""
        functional = functional_variant(func)
        infos = [self._infos.get(id(t)) or self._add_constant(t) for t in mutated]
        for info in infos:
            _check_writable(info.storage, func)
        functional_args = functional_arguments(func, functional, args, kwargs)
        node_args, node_kwargs = self._graph_args(functional_args)
        layouts = [_layout(t) for t in mutated]
        out = self._run(func, args, kwargs)
        if [_layout(t) for t in mutated] != layouts:
            raise NotImplementedError(
                f"tinydynamo.aot: {func} resizes or restrides a tensor in place; unsupported"
            )
        node = self._emit_on_meta(functional, node_args, node_kwargs)
        if len(functional._schema.returns) == 1:
            values = iter([node])
        else:
            values = iter(self._getitem(node, i) for i in range(len(functional._schema.returns)))
        results = out if isinstance(out, (tuple, list)) else (out,)
        for ret, result in zip(func._schema.returns, results):
            if ret.alias_info is None:
                self._track(result, next(values), view=None)
        assert num_fresh_results(func) + len(infos) == len(functional._schema.returns)
        for info, value in zip(infos, values):
            self._write(info, self._cast_to_dtype_of(info.tensor, value))
        return out

    def _cast_to_dtype_of(self, tensor, value):
        """An in-place op keeps its argument's dtype: ``add_`` of a float64 on a float32 tensor
        writes float32, where the functional ``add`` promotes to float64. As in PyTorch's
        ``FunctionalTensorWrapper::replace_``, the new value is cast back with ``_to_copy``."""
        if value.meta["val"].dtype == tensor.dtype:
            return value
        return self._emit_on_meta(aten._to_copy.default, (value,), {"dtype": tensor.dtype})

    # ----------------------------------------------------------------- tensors -> nodes
    def _graph_args(self, tree):
        return tree_map(self._graph_arg, tree)

    def _graph_arg(self, value):
        if isinstance(value, torch.Tensor):
            return self.value_of(value)
        if isinstance(value, torch.Generator):
            raise NotImplementedError(
                "tinydynamo.aot: explicit torch.Generator arguments are unsupported"
            )
        return value

    def _add_constant(self, tensor):
        """A tensor the program did not compute (e.g. a literal): store it on the graph module."""
        if not self.constants_allowed:
            raise RuntimeError(
                "tinydynamo.aot: the backward used a tensor that the traced forward did not produce"
            )
        if tensor.requires_grad and torch.is_grad_enabled():
            raise NotImplementedError(
                "tinydynamo.aot: a tensor that requires grad is used but is not a graph input"
            )
        if tensor.is_meta and self.symbolic:
            raise NotImplementedError(
                "tinydynamo.aot: while tracing with symbolic sizes, the program made a tensor outside "
                "the dispatcher; unsupported")
        name = f"_tensor_constant{self._num_constants}"
        self._num_constants += 1
        setattr(self.root, name, tensor.detach().clone())
        node = self.graph.get_attr(name)
        self._set_val(node, tensor, tensor.device)
        info = self._track(tensor, node, view=None)
        info.storage.is_constant = True
        return info

    def _track(self, tensor, node, view):
        if id(tensor) in self._infos:  # an op handed back a tensor we already know
            return self._infos[id(tensor)]
        storage = view.parent.storage if view else StorageInfo(base_node=node)
        info = TensorInfo(tensor, storage, view, node, storage.version)
        self._infos[id(tensor)] = info
        return info

    def _results(self, out, node):
        """(index, tensor, node) for each tensor an op returned; index is None for a lone tensor."""
        if isinstance(out, torch.Tensor):
            yield None, out, node
            return
        for i, item in enumerate(out if isinstance(out, (tuple, list)) else ()):
            if isinstance(item, (tuple, list)):
                raise NotImplementedError(
                    "tinydynamo.aot: ops returning nested lists are unsupported"
                )
            if isinstance(item, torch.Tensor):
                yield i, item, self._getitem(node, i)

    # ----------------------------------------------------------------- functionalization
    def _current(self, info):
        """The node for ``info``'s value now; a view whose storage changed is re-made."""
        if info.view is None:
            return info.storage.base_node
        if info.version != info.storage.version:
            info.node = self._replay_view(info)
            info.version = info.storage.version
        return info.node

    def _replay_view(self, info):
        view = info.view
        parent = self._view_input(view, self._current(view.parent))
        if view.func in IDENTITY_VIEWS:
            return parent
        if view.index is None:
            return self._emit(view.func, (parent, *view.args), view.kwargs, info.tensor)
        node = self._emit_on_meta(view.func, (parent, *view.args), view.kwargs)
        return self._getitem(node, view.index)

    def _write(self, info, value):
        """``info``'s tensor now holds ``value``: update its storage and every alias of it."""
        self._write_back(info, value)
        info.storage.version += 1
        if info.view is not None:
            info.node, info.version = value, info.storage.version

    def _write_back(self, info, value):
        """Propagate a view's new value up to its base, one inverse view op per level."""
        if info.view is None:
            info.storage.base_node = value
            return
        parent = info.view.parent
        inverse = view_inverse(info.view, parent.tensor, info.tensor)
        if inverse is None:
            new_parent = value
        else:
            op, template = inverse
            parent_value = self._view_input(info.view, self._current(parent))
            args = [parent_value if a == "parent" else value if a == "new" else a for a in template]
            new_parent = self._emit_on_meta(op, args, {})
        self._write_back(parent, new_parent)

    # ----------------------------------------------------------------- graph nodes
    def _emit(self, func, args, kwargs, val):
        """Add the node ``func(*args, **kwargs)``, whose real result was ``val``."""
        name = func.overloadpacket.__name__  # "mm", not "mm_default", as PyTorch names them
        args, kwargs = tree_map(self._sym_arg, (tuple(args), dict(kwargs)))
        if self.symbolic and _is_meta_device(kwargs.get("device")):
            # made by code that saw only meta tensors (a decomposition's scalar_tensor): the
            # program's real device, that of its tensor arguments or else of its inputs
            kwargs["device"] = self._program_device(args)
        node = self.graph.create_node("call_function", func, args, kwargs, name=name)
        node.meta.update(_user_node_tags.get())
        self._set_val(node, val, self._result_device(node, val))
        return node

    def _program_device(self, args):
        nodes = [a for a in tree_flatten(args)[0] if isinstance(a, fx.Node)]
        nodes += list(self.graph.find_nodes(op="placeholder"))
        devices = [n.meta["device"] for n in nodes if n.meta.get("device") is not None]
        return devices[0] if devices else torch.get_default_device()

    def _sym_arg(self, value):
        if isinstance(value, SYM_TYPES):
            return self.sym_values.node_of(value)
        return value

    def _result_device(self, node, val):
        """The device of an op's result. Traced symbolically, everything is on meta: the device
        is the op's ``device=`` argument, else its first tensor argument's real device."""
        if not self.symbolic:
            return _device_of(val)
        if node.kwargs.get("device") is not None:
            return torch.device(node.kwargs["device"])
        devices = [a.meta["device"] for a in node.all_input_nodes if a.meta.get("device") is not None]
        return devices[0] if devices else torch.get_default_device()

    def _emit_on_meta(self, func, args, kwargs):
        """Add a node that was not run for real; its ``val`` comes from running it on meta."""
        meta_args, meta_kwargs = tree_map(
            lambda a: a.meta["val"] if isinstance(a, fx.Node) else a, (tuple(args), dict(kwargs))
        )
        with enable_python_dispatcher() if self.symbolic else contextlib.nullcontext():
            val = func(*meta_args, **meta_kwargs)
        node = self._emit(func, args, kwargs, val)
        devices = [a.meta["device"] for a in node.all_input_nodes if a.meta["device"] is not None]
        node.meta["device"] = devices[0] if devices else None
        return node

    def _getitem(self, node, index):
        item = self.graph.call_function(operator.getitem, (node, index))
        item.meta["val"] = node.meta["val"][index]
        item.meta["device"] = node.meta["device"]
        return item

    @staticmethod
    def _set_val(node, value, device):
        node.meta["val"] = tree_map(to_meta, value)
        node.meta["device"] = device
