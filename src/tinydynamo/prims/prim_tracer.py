"""ProxyTensor and PrimTracer: how running a decomposition records a prim graph (chapter 7).

Decompositions run on stand-in tensors that hold no data. A :class:`ProxyTensor` has the shape,
dtype, strides and device of the value it stands for, keeps that metadata as a meta tensor, and
knows the FX node (in the prim graph being built) that produces it. While a decomposition runs:

* a call of a prim finds the active :class:`PrimTracer`, which appends a node to the prim graph
  and asks the prim's meta rule for the output's metadata;
* a call of an aten op, written directly (``aten.sum.dim_IntList(x, [1])``) or through tensor
  syntax (``x * 2``), reaches ``ProxyTensor.__torch_dispatch__``, which runs that op's own
  decomposition.

This is PyTorch's ``make_fx`` idea (``torch/fx/experimental/proxy_tensor.py``), reduced to what
decomposition needs.

Symbolic sizes: a ProxyTensor's sizes may be SymInts, and so may graph inputs. Decompositions
compute with them as with ints; a SymInt passed to a prim becomes a graph value, as in the AOT
tracer (``aot/symbolic.py``).
"""
import operator
import threading

import torch
import torch.fx

from ..aot.symbolic import SYM_TYPES, SymbolicValues
from .registry import DecompositionError, run_decomposition


class _ActiveTracers(threading.local):
    """The stack of PrimTracers being recorded into: one per thread, since threads may decompose
    graphs at the same time (a thread-local's ``__init__`` runs once in each thread)."""

    def __init__(self):
        self.stack = []


_active_tracers = _ActiveTracers()


def current_tracer():
    """The PrimTracer that prim calls record into, or None outside decompose()."""
    return _active_tracers.stack[-1] if _active_tracers.stack else None


def meta_like(tensor):
    """A meta tensor with the shape, strides and dtype of ``tensor``."""
    return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device="meta")


class ProxyTensor(torch.Tensor):
    """A tensor without data standing for an FX node of the prim graph."""

    @staticmethod
    def __new__(cls, node, meta_tensor, device):
        proxy = torch.Tensor._make_wrapper_subclass(
            cls, meta_tensor.shape, strides=meta_tensor.stride(),
            storage_offset=meta_tensor.storage_offset(), dtype=meta_tensor.dtype, device=device)
        proxy.node = node
        proxy.meta_tensor = meta_tensor
        return proxy

    # Tensor methods and operators go straight to the dispatcher, then to __torch_dispatch__.
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        result = run_decomposition(func, _map(_unwrap_number, args), kwargs or {})
        # The dispatcher wants a new tensor object from every op, even from a view that changes
        # nothing (the decomposition then returns its input): hand back fresh ProxyTensors.
        return _map(_fresh, result)

    def __repr__(self):
        return f"ProxyTensor({self.node.name}, {tuple(self.shape)}, {self.dtype})"


def _map(fn, value):
    """Apply fn to every leaf of a nest of lists, tuples and dicts (the values of a dict)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_map(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    return fn(value)


def _unwrap_number(value):
    """Python numbers mixed with tensors (``torch.where(c, 0, x)``) reach the dispatcher wrapped
    as 0-d CPU tensors; turn them back into numbers."""
    if isinstance(value, torch.Tensor) and not isinstance(value, ProxyTensor) and value.ndim == 0:
        return value.item()
    return value


def _fresh(value):
    if isinstance(value, ProxyTensor):
        return ProxyTensor(value.node, value.meta_tensor, value.device)
    return value


def _to_meta(value):
    return value.meta_tensor if isinstance(value, ProxyTensor) else value


def _device_of(args, kwargs):
    if "device" in kwargs:
        return torch.device(kwargs["device"])
    devices = []
    _map(lambda v: devices.append(v.device) if isinstance(v, ProxyTensor) else None, args)
    return devices[0]


class PrimTracer:
    """Builds the prim graph: one FX node per prim call, each with ``meta["val"]``."""

    def __init__(self):
        self.graph = torch.fx.Graph()
        self.sym_values = SymbolicValues(self.graph)
        self.constants = {}  # get_attr name -> real tensor
        self.origin = {}  # stamped on every new node: the aten op being decomposed, its source

    def __enter__(self):
        _active_tracers.stack.append(self)
        return self

    def __exit__(self, *exc):
        _active_tracers.stack.pop()

    def placeholder(self, name, example, device=None):
        """A graph input: a tensor (on ``device``, by default its own: a tensor with symbolic
        sizes is a meta one) or a size."""
        if not isinstance(example, (torch.Tensor, int, float, torch.SymInt, torch.SymFloat)):
            raise DecompositionError(f"graph input {name} is a {type(example).__name__}; "
                                     "decompose() supports tensor and size inputs only")
        node = self.graph.placeholder(name)
        if not isinstance(example, torch.Tensor):
            node.meta["val"] = example
            self.sym_values.add_input(node, example)
            return example
        proxy = self._wrap(node, meta_like(example), device or example.device)
        self.sym_values.add_input(node, proxy.meta_tensor)
        return proxy

    def constant(self, name, value):
        self.constants[name] = value
        return self._wrap(self.graph.get_attr(name), meta_like(value), value.device)

    def record(self, prim, args, kwargs):
        """Append ``prim(*args, **kwargs)``; its meta rule gives the output metadata."""
        out_meta = prim.meta(*_map(_to_meta, args), **_map(_to_meta, kwargs))
        return self._call(prim, args, kwargs, out_meta)

    def record_extern(self, op, args, kwargs, traced=None):
        """Append an extern fallback aten op. The output metadata is ``traced``, what the aten graph
        recorded when the op ran for real, if given; else aten's meta kernel's. (Meta kernels do not
        always agree with the real kernel: _embedding_bag's offset2bag, for one.)"""
        if traced is not None:
            return self._call(op, args, kwargs, _map(lambda v: meta_like(v) if isinstance(v, torch.Tensor) else v,
                                                     traced))
        try:
            out_meta = op(*_map(_to_meta, args), **_map(_to_meta, kwargs))
        except NotImplementedError as error:
            raise DecompositionError(f"{op} has no decomposition, and no meta kernel to make it an "
                                     f"extern fallback: {str(error).splitlines()[0]}") from error
        return self._call(op, args, kwargs, out_meta)

    def erase_nodes_after(self, count):
        """Remove the nodes recorded after the first ``count`` (a decomposition that declined)."""
        for node in reversed(list(self.graph.nodes)[count:]):
            self.graph.erase_node(node)

    def output(self, value):
        node = self.graph.output(_map(self._to_arg, value))
        node.meta["val"] = _map(_to_meta, value)

    def _call(self, target, args, kwargs, out_meta):
        node_args = _map(self._to_arg, args)
        node_kwargs = {k: _map(self._to_arg, v) for k, v in kwargs.items()}
        node = self.graph.call_function(target, node_args, node_kwargs)
        return self._wrap(node, out_meta, _device_of(args, kwargs))

    def _wrap(self, node, out_meta, device):
        node.meta.update(self.origin)
        if isinstance(out_meta, (tuple, list)):
            node.meta["val"] = tuple(out_meta)
            return tuple(
                None if m is None else self._wrap(self.graph.call_function(operator.getitem, (node, i)),
                                                  m, device)
                for i, m in enumerate(out_meta))
        node.meta["val"] = out_meta
        if out_meta is None:  # an op that returns nothing (aten._linalg_check_errors raises or not)
            return None
        return ProxyTensor(node, out_meta, device)

    def _to_arg(self, value):
        if isinstance(value, ProxyTensor):
            return value.node
        if isinstance(value, SYM_TYPES):
            return self.sym_values.node_of(value)
        if isinstance(value, torch.Tensor):
            raise DecompositionError(
                f"a decomposition passed a real tensor {tuple(value.shape)} {value.dtype} to the "
                "prim graph; make constants with prims.full or prims.iota")
        return value
