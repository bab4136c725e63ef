"""TensorVariable, and how a torch call becomes a graph node (book chapter 3,
"Symbolic execution").

A ``TensorVariable`` holds three things:

- ``proxy``: the ``torch.fx.Proxy`` of the graph node that computes it (a placeholder for inputs);
- ``example_value``: a *meta* tensor with the same shape, stride, dtype and requires_grad.
  Meta tensors have metadata but no data, so running an op on them costs nothing and tells us
  the result's shape without computing it. This is how shapes become Python constants
  (``x.shape[0]``) that the rest of the frame can branch on;
- ``device``: the real device (the example lives on "meta").

``trace_op`` is the one place a torch function, Tensor method or operator is recorded: run it on
the example values, add the FX node, and wrap the result (Dynamo calls this ``wrap_fx_proxy``).
"""
import inspect
import operator
from contextlib import nullcontext

import numpy as np
import torch
from torch._dispatch.python import enable_python_dispatcher
from torch.utils._pytree import tree_leaves, tree_map

from ...symbolic_shapes import is_symbolic, to_python
from ...utils import convolution_layout
from .. import eval_frame
from ..exc import raise_at_trace_time, unsupported
from ..fork_join import EffectRecorder
from ..guards import AUTOCAST_DEVICES
from ..source import AttrSource, SizeSource
from .base import GetAttrVariable, VariableTracker
from .constant import ConstantVariable, fold, is_constant_value, wrap_constant
from .dicts import ConstDictVariable
from .lists import BaseListVariable, ListVariable, TupleVariable

# Tensor methods whose result depends on the data, or that act outside the graph.
UNSUPPORTED_METHODS = {
    "item": "Tensor.item() reads a value out of the tensor (data-dependent)",
    "tolist": "Tensor.tolist() reads values out of the tensor (data-dependent)",
    "numpy": "Tensor.numpy(force=...)",
    "__bool__": "a data-dependent branch on a tensor (Tensor.__bool__)",
    "__int__": "int() of a tensor (data-dependent)",
    "__float__": "float() of a tensor (data-dependent)",
    "__index__": "using a tensor as an index (data-dependent)",
    "data_ptr": "Tensor.data_ptr()",
    "backward": "Tensor.backward() inside the compiled region",
    "register_hook": "Tensor.register_hook()",
    "retain_grad": "Tensor.retain_grad()",
    "untyped_storage": "Tensor.untyped_storage()",
    "storage": "Tensor.storage()",
    # They change a tensor's autograd metadata, which a graph of values cannot carry: the call
    # runs eagerly between two graphs, and the next graph is traced with the new metadata.
    "requires_grad_": "Tensor.requires_grad_() changes autograd state",
    "detach_": "Tensor.detach_() changes autograd state",
}
UNSUPPORTED_ATTRIBUTES = ("grad", "data", "grad_fn", "is_leaf", "_base", "_version")
TENSOR_VALUED_ATTRIBUTES = ("T", "mT", "H", "mH", "real", "imag")
DEVICE_METHODS = ("to", "cuda", "cpu")
TENSOR_FROM_DATA = (torch.tensor, torch.as_tensor, torch.asarray)
INPLACE_OPERATORS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, operator.setitem,
}

INPLACE_TO_BINARY = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
    operator.ipow: operator.pow, operator.imatmul: operator.matmul, operator.iand: operator.and_,
    operator.ior: operator.or_, operator.ixor: operator.xor, operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift,
}


class TensorVariable(VariableTracker):
    def __init__(self, proxy, example_value, device, source=None, python_cls=torch.Tensor):
        super().__init__(source)
        self.proxy = proxy
        self.example_value = example_value
        self.device = device
        self.python_cls = python_cls
        proxy.node.meta["device"] = device  # the node's real device (its example is on meta)

    def python_type(self):
        return self.python_cls

    def python_object(self):
        unsupported("the identity of a tensor")

    def var_getattr(self, tx, name):
        if name == "device":
            return ConstantVariable(self.device)
        if name == "__class__":
            return tx.build(self.python_cls)
        if name in ("is_cuda", "is_cpu", "is_meta"):
            return ConstantVariable(self.device.type == name[3:])
        assigned = tx.output.side_effects.pending_attr(self, name) if name == "grad" else None
        if assigned is not None:  # p.grad = ... earlier in the frame
            return assigned
        if name == "grad" and self.source is not None:  # an input's .grad: an input too (or None)
            return tx.build(tx.output.real_value(self).grad, AttrSource(self.source, "grad"))
        if name == "data":  # the same values, cut from autograd (a detach), as torch._dynamo records it
            return trace_op(tx, "call_function", torch._C._autograd._get_data_attr, [self], {})
        if name == "grad_fn" and not self.example_value.requires_grad:  # fixed by TENSOR_MATCH and grad mode
            return ConstantVariable(None)
        if name in UNSUPPORTED_ATTRIBUTES:
            unsupported(f"Tensor.{name}")
        if name == "shape":  # a torch.Size, whose symbolic sizes the graph computes
            return self.call_method(tx, "size", [], {})
        if name in TENSOR_VALUED_ATTRIBUTES:
            return trace_op(tx, "call_function", getattr, [self, ConstantVariable(name)], {})
        if callable(getattr(torch.Tensor, name, None)):
            return GetAttrVariable(self, name)
        if not hasattr(self.example_value, name):
            raise_at_trace_time(AttributeError(f"'Tensor' object has no attribute {name!r}"))
        value = getattr(self.example_value, name)
        if not is_constant_value(value):
            unsupported(f"Tensor attribute {name!r}")
        return wrap_constant(value)

    def already_requires_grad(self, args, kwargs):
        """Whether ``requires_grad_(flag)`` asks for the flag the tensor already has."""
        flags = [*args, *kwargs.values()]
        if len(flags) > 1 or not all(f.is_python_constant() for f in flags):
            return False
        return self.example_value.requires_grad == (flags[0].as_python_constant() if flags else True)

    def store_attr(self, tx, name, value):
        """``p.grad = None`` (gradients zeroed by hand) or ``p.grad = g`` on an input: replayed
        after the graph; later reads in the frame see the new value."""
        if name == "data":
            return self.assign_data(tx, value)
        if name != "grad" or self.source is None:
            unsupported(f"assigning attribute {name!r} of {self} (a side effect)")
        tx.output.side_effects.store_attr(self, name, value)

    def assign_data(self, tx, value):
        """``p.data = new`` (MoCo's and BYOL's momentum update of a parameter): traced as
        ``p.data.copy_(new)``, the same values in ``p`` with autograd not told. Eager makes ``p``
        share ``new``'s memory instead, which no one can tell from a copy when ``new`` was made
        in the frame, of the same shape, dtype and device."""
        if not isinstance(value, TensorVariable) or value.source is not None:
            unsupported(f"assigning {value} to the data of {self}: only a tensor computed in the frame "
                        "is copied in")
        mine, new = self.example_value, value.example_value
        if (mine.shape, mine.dtype, self.device) != (new.shape, new.dtype, value.device):
            unsupported(f"assigning a {new.dtype} tensor of shape {tuple(new.shape)} to the data of a "
                        f"{mine.dtype} tensor of shape {tuple(mine.shape)} (it changes the tensor's metadata)")
        self.var_getattr(tx, "data").call_method(tx, "copy_", [value], {})

    def call_method(self, tx, name, args, kwargs):
        if name == "numpy" and not args and not kwargs:  # torch.Tensor.numpy(x), which torch.py answers
            return tx.build(torch.Tensor.numpy).call_function(tx, [self], {})
        if name == "requires_grad_" and self.already_requires_grad(args, kwargs):
            return self  # a no-op: the hook transformers installs for gradient checkpointing
        if name in UNSUPPORTED_METHODS:
            unsupported(UNSUPPORTED_METHODS[name])
        if name == "__len__" and self.example_value.dim() > 0:  # symbolic when dim 0 is
            return self.call_method(tx, "size", [ConstantVariable(0)], {})
        if name == "__len__":
            return ConstantVariable(len(self.example_value))
        if name == "get_device":
            return ConstantVariable(self.device.index if self.device.type != "cpu" else -1)
        if name == "type" and not args and not kwargs:  # "torch.HalfTensor": from dtype and device
            return ConstantVariable(torch.empty(0, dtype=self.example_value.dtype, device=self.device).type())
        if name == "type" and len(args) == 1 and not kwargs and args[0].is_python_constant():
            dtype = tensor_type_dtype(args[0].as_python_constant())
            return self.call_method(tx, "to", [ConstantVariable(dtype)], {})
        if name == "new_tensor" and len(args) == 1 and args[0].is_python_constant():
            return self.new_tensor(tx, args[0], kwargs)
        if name == "__deepcopy__":
            return self.deepcopy(tx)
        if name == "as_subclass":
            return self.as_subclass(tx, *args, **kwargs)
        if name == "__getitem__":
            return trace_op(tx, "call_function", operator.getitem, [self, *args], kwargs)
        if name == "__setitem__":
            return trace_op(tx, "call_function", operator.setitem, [self, *args], kwargs)
        return trace_op(tx, "call_method", name, [self, *args], kwargs)

    def new_tensor(self, tx, data, kwargs):
        """``x.new_tensor([...])``: ``torch.tensor`` with x's dtype and device unless given. A
        constant made by ``torch.tensor`` is a graph constant; one made by ``new_tensor`` on the
        meta tensors that AOT autograd traces symbolic sizes with would lose its values."""
        kwargs = {"dtype": ConstantVariable(self.example_value.dtype), "device": ConstantVariable(self.device),
                  **kwargs}
        return trace_op(tx, "call_function", torch.tensor, [data], kwargs)

    def deepcopy(self, tx):
        """``copy.deepcopy(x)`` (``dataclasses.asdict`` makes one of every field): a clone, as
        eager's ``Tensor.__deepcopy__`` makes for a tensor that does not require grad. copy's own
        code, traced, records the copy in the memo."""
        if self.example_value.requires_grad:
            unsupported("copy.deepcopy of a tensor that requires grad (a new leaf, or an error)")
        return self.call_method(tx, "clone", [], {})

    def as_subclass(self, tx, cls):
        """``x.as_subclass(torch.Tensor)``: the same values, in the same memory, so the graph's value
        is x's (as in torch._dynamo). Tensor subclasses are not traced."""
        if not (cls.is_python_constant() and cls.as_python_constant() is torch.Tensor):
            unsupported(f"Tensor.as_subclass({cls}): tensor subclasses are not traced")
        return self

    def unpack_var_sequence(self, tx):  # a symbolic first size is specialised (a guard)
        return [self.call_method(tx, "__getitem__", [ConstantVariable(i)], {})
                for i in range(len(self.example_value))]

    def truthy(self, tx):
        unsupported(UNSUPPORTED_METHODS["__bool__"])

    def __repr__(self):
        name = self.source.name() if self.source else self.proxy.node.name
        return f"TensorVariable({name}, {tuple(self.example_value.shape)}, {self.example_value.dtype})"


class SymNodeVariable(VariableTracker):
    """A number computed from symbolic sizes: ``x.shape[0]``, ``n * 2``, ``x.numel()`` (chapter 12,
    "Dynamic shapes"). ``sym`` is its ``torch.SymInt`` (SymFloat, SymBool): an expression over
    the ShapeEnv's symbols with the value it had when traced; ``proxy`` is the graph node that
    computes it, so the graph works for every size.

    ``int(n)``, ``max(n, 2)``, ``math.sqrt(n)`` and the like stay symbolic (builtin.py). Python
    code that needs a plain number (``range(n)``, a list index) gets the traced value, and a guard
    that the expression keeps it: the size is *specialised*."""

    def __init__(self, proxy, sym, source=None):
        super().__init__(source)  # an int argument traced as a symbol has one
        self.proxy = proxy
        self.sym = sym

    def python_type(self):
        return self.sym.node.pytype

    def is_python_constant(self):
        return False  # it is symbolic; as_python_constant can still specialise it

    def as_python_constant(self):
        node = self.sym.node
        if node.pytype is bool:
            return node.guard_bool()
        return node.guard_float() if node.pytype is float else node.guard_int()

    def truthy(self, tx):
        return bool(self.sym)

    def reconstruct(self, codegen):
        """After the graph, Python computes the number again from the inputs' sizes and int
        arguments (a returned ``x.shape[0] * 2`` is ``L['x'].size()[0] * 2``), so the graph
        returns only tensors."""
        if self.source is not None:
            return self.source.reconstruct(codegen)
        shape_env, expr = self.sym.node.shape_env, self.sym.node.expr
        symbols = sorted(expr.free_symbols, key=str)
        sources = [shape_env.var_to_sources[symbol][0] for symbol in symbols]
        params = [f"t{i}" for i in range(len(symbols))]
        value_of = {symbol: source.child_expression(param) if isinstance(source, SizeSource) else param
                    for symbol, param, source in zip(symbols, params, sources)}
        compute = eval(f"lambda {', '.join(params)}: {to_python(expr, value_of.get)}")  # noqa: S307 (our text)
        eval_frame.set_skip(compute.__code__)  # plain Python: not a frame to compile
        codegen.load_const(compute, push_null=True)
        for source in sources:
            (source.base if isinstance(source, SizeSource) else source).reconstruct(codegen)
        codegen.call(len(sources))

    def __repr__(self):
        return f"SymNodeVariable({self.sym.node.expr}, hint={self.sym.node.hint})"


class SymSliceVariable(VariableTracker):
    """A slice with a symbolic bound, ``x[:, :n]``: a tensor is sliced by it in the graph; any
    other sequence specialises it."""

    def __init__(self, bounds):
        super().__init__()
        self.bounds = bounds

    def python_type(self):
        return slice

    def as_python_constant(self):
        return slice(*(bound.as_python_constant() for bound in self.bounds))

    def is_python_constant(self):
        return False


def sym_operator(tx, fn, args):
    """``fn`` (an operator) on numbers of which at least one is symbolic: a graph node. A
    comparison is decided now, with a guard: Python branches on it. ``n += s0`` rebinds n (ints are
    immutable): an ``add`` node (FX would write ``8 += s0`` for ``iadd(8, s0)``)."""
    fn = INPLACE_TO_BINARY.get(fn, fn)
    values = [a.sym if isinstance(a, SymNodeVariable) else a.as_python_constant() for a in args]
    result = fold(fn, *values)
    if isinstance(result, torch.SymBool):
        return ConstantVariable(bool(result))
    if not is_symbolic(result):  # s0 - s0
        return wrap_constant(concrete(result))
    proxy = tx.output.create_proxy("call_function", fn, tuple(map_trackers(list(args), as_proxy)), {})
    proxy.node.meta["example_value"] = result
    return SymNodeVariable(proxy, result)


def tensor_type_dtype(name):
    """The dtype that ``x.type(name)`` converts to: ``"torch.HalfTensor"``, a dtype, or a legacy
    CPU tensor type (``torch.HalfTensor``). A CUDA type name changes the device: Unsupported."""
    if isinstance(name, torch.dtype):
        return name
    if isinstance(name, str):
        text = name
    else:
        text = f"{getattr(name, '__module__', '')}.{getattr(name, '__name__', '')}"
    if "cuda" in text:
        unsupported(f"Tensor.type({text}) (it changes the device)")
    return fold(lambda: torch.empty(0).type(text).dtype)


# --- recording an op ---------------------------------------------------------------------------


PYTHON_TYPE_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


def as_dtype(var):
    """A Python number type passed to torch (``dtype=int``, ``x.to(float)``) as the dtype torch reads
    it as: the graph holds dtypes, not classes."""
    if not isinstance(var, (TensorVariable, SymNodeVariable)) and var.is_python_constant():
        value = var.as_python_constant()
        if isinstance(value, type) and value in PYTHON_TYPE_DTYPES:
            return ConstantVariable(PYTHON_TYPE_DTYPES[value])
    return var


def trace_op(tx, kind, target, args, kwargs):
    """Record ``target(*args, **kwargs)`` ("call_function") or ``args[0].target(...)``
    ("call_method") in the graph and return a tracker for its result."""
    if target in TENSOR_FROM_DATA and any(isinstance(v, ConstantVariable) and isinstance(v.value, np.generic)
                                          for v in flatten_trackers([args, kwargs])):
        unsupported(f"{describe(kind, target)} of a NumPy scalar (its dtype would be NumPy's)")
    if target in INPLACE_TO_BINARY and not isinstance(args[0], TensorVariable):
        target = INPLACE_TO_BINARY[target]  # `n += x` on an int: nothing is mutated, n is rebound
    args, kwargs = [as_dtype(a) for a in args], {k: as_dtype(v) for k, v in kwargs.items()}
    if kind == "call_function" and getattr(target, "__name__", None) in UNSUPPORTED_METHODS:
        unsupported(UNSUPPORTED_METHODS[target.__name__])  # torch.Tensor.requires_grad_(x)
    if reshapes_a_symbolic_input(tx, kind, target, args):
        unsupported(f"{describe(kind, target)} changes the sizes of an input whose sizes are symbolic "
                    "(Python reads them back from the input after the graph)")
    device = result_device(kind, target, args, kwargs)
    effects = EffectRecorder() if tx.output.records_effects() else nullcontext()  # it may run concurrently
    with effects:
        example = run_on_meta(kind, target, args, kwargs, symbolic=bool(tx.output.shape_env.var_to_val))
    mutates = is_inplace(kind, target, kwargs)
    if not contains_tensor(example) and not mutates:
        if example is None:
            unsupported(f"{describe(kind, target)} returns None: a side effect outside the graph")
        if not contains_symbolic(example):
            return wrap_constant(example)  # metadata (x.size(), x.dim()...) is a constant: no node
    proxy = tx.output.create_proxy(kind, target, tuple(map_trackers(args, as_proxy)),
                                   map_trackers(kwargs, as_proxy))
    proxy.node.meta["example_value"] = example
    if isinstance(effects, EffectRecorder):
        effects.annotate(proxy.node)
    tensors = [v for v in flatten_trackers([args, kwargs]) if isinstance(v, TensorVariable)]
    return wrap_result(tx, proxy, example, device, tensors)


class AutocastExample(torch.Tensor):
    """A meta tensor that says it lives on its real tensor's device. Autocast casts the inputs of
    ops on CPU and CUDA tensors, not on meta tensors: under autocast, an op runs on these, so
    that autocast makes the casts of the real run (and the result gets its dtype). Below autocast,
    ``__torch_dispatch__`` runs each aten op on the meta tensors inside."""

    @staticmethod
    def __new__(cls, meta, device):
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, meta.shape, meta.stride(), storage_offset=meta.storage_offset(), dtype=meta.dtype,
            device=device, requires_grad=meta.requires_grad)
        wrapper.meta = meta
        return wrapper

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        wrappers = {id(a.meta): a for a in tree_leaves((args, kwargs)) if isinstance(a, cls)}
        kwargs = {k: "meta" if k == "device" else v for k, v in (kwargs or {}).items()}
        result = func(*tree_map(unwrap_example, args), **tree_map(unwrap_example, kwargs))
        device = next(iter(wrappers.values())).device

        def wrap(value):  # an in-place op returns its input: the same wrapper, as autograd expects
            if not isinstance(value, torch.Tensor):
                return value
            return wrappers[id(value)] if id(value) in wrappers else cls(value, device)

        return tree_map(wrap, result)


def unwrap_example(value):
    return value.meta if isinstance(value, AutocastExample) else value


def autocast_example(var):
    """The example value of a tracker, wrapped as an AutocastExample when it is a tensor."""
    if isinstance(var, TensorVariable) and var.device.type in AUTOCAST_DEVICES:
        return AutocastExample(var.example_value, var.device)
    return as_example(var)


CONVOLUTIONS = {torch.conv1d, torch.conv2d, torch.conv3d, torch.conv_transpose1d, torch.conv_transpose2d,
                torch.conv_transpose3d, torch.convolution}


CLASSIFICATION_LOSSES = {torch.nn.functional.cross_entropy, torch.nn.functional.nll_loss}


def classification_loss_meta(loss, args, kwargs):
    """The result of ``F.cross_entropy`` or ``F.nll_loss`` on meta tensors, from its arguments.
    Torch's Python implementation of nll_loss indexes with ``torch.arange(batch)``, which it makes
    on the CPU: a symbolic batch size would be specialised (one compile per batch size)."""
    bound = inspect.signature(loss).bind(*args, **kwargs)
    bound.apply_defaults()
    arguments = bound.arguments
    input, target, reduction = arguments["input"], arguments["target"], arguments["reduction"]
    if arguments["size_average"] is not None or arguments["reduce"] is not None:
        reduction = torch.nn.functional._Reduction.legacy_get_string(arguments["size_average"], arguments["reduce"])
    if reduction != "none":
        return input.new_empty(())
    if target.is_floating_point():  # class probabilities, shaped like the input
        return input.new_empty(input.shape[:1] + input.shape[2:] if input.ndim > 1 else ())
    return input.new_empty(target.shape)


def run_on_meta(kind, target, args, kwargs, symbolic=False):
    """Compute the result's metadata by running the op on meta tensors (``symbolic``: some
    have symbolic sizes); under autocast, wrapped as AutocastExamples."""
    autocast = torch._C._is_any_autocast_enabled()
    leaf = autocast_example if autocast else as_example
    margs, mkwargs = map_trackers(args, leaf), map_trackers(kwargs, leaf)
    if "device" in mkwargs:
        mkwargs["device"] = "meta"
    if kind == "call_method" and target in DEVICE_METHODS:
        target, margs = "to", [margs[0], *[a for a in margs[1:] if not is_device_like(a)]]
        mkwargs.pop("non_blocking", None)
        mkwargs.pop("device", None)
    if symbolic and not autocast and target in CLASSIFICATION_LOSSES:
        return classification_loss_meta(target, margs, mkwargs)
    try:
        # Symbolic sizes need torch's Python meta kernels (some C++ ones take only plain ints).
        with enable_python_dispatcher() if symbolic else nullcontext(), \
                torch.device("meta"):  # factory functions without device= create meta tensors too
            if kind == "call_method":
                result = getattr(margs[0], target)(*margs[1:], **mkwargs)
            else:
                result = target(*margs, **mkwargs)
    except Exception as e:
        unsupported(f"{describe(kind, target)} failed on meta tensors ({type(e).__name__}: {e}); "
                    "it is data-dependent, has no meta kernel, or fails in eager too")
    result = tree_map(unwrap_example, result) if autocast else result
    if target in CONVOLUTIONS:  # the meta kernel returns a contiguous result, eager may not
        input, weight = (unwrap_example(a) for a in margs[:2])
        return convolution_layout(input, weight, result)
    return result


def result_device(kind, target, args, kwargs):
    """The real device of the result: ``device=``, ``.to(...)``, else the inputs', else default."""
    if "device" in kwargs and kwargs["device"].as_python_constant() is not None:
        return torch.device(kwargs["device"].as_python_constant())
    if kind == "call_method" and target == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    if kind == "call_method" and target == "cpu":
        return torch.device("cpu")
    if kind == "call_method" and target == "to":
        for arg in args[1:]:
            if isinstance(arg, TensorVariable):
                return arg.device
            if arg.is_python_constant() and is_device_like(arg.as_python_constant()):
                return torch.device(arg.as_python_constant())
    devices = [v.device for v in flatten_trackers([args, kwargs]) if isinstance(v, TensorVariable)]
    if devices:
        return next((d for d in devices if d.type != "cpu"), devices[0])
    return torch.get_default_device()


def wrap_result(tx, proxy, example, device, inputs):
    if isinstance(example, torch.Tensor):
        if example.layout != torch.strided:  # torch_geometric's to_torch_csr_tensor
            unsupported(f"an op returning a tensor with layout {example.layout} (sparse tensors are not compiled)")
        for var in inputs:  # an in-place op (or x.contiguous(), x.to(x.dtype)) returns its input
            if var.example_value is example and var.device == device:
                return var
        if any(var.example_value is example for var in inputs):
            example = example.clone()  # a device change returns a new tensor in eager
        return TensorVariable(proxy, example, device)
    if is_symbolic(example):  # x.numel(), x.size(0)
        return SymNodeVariable(proxy, example)
    if isinstance(example, (torch.SymInt, torch.SymFloat, torch.SymBool)):  # a SymInt of a fixed value
        return wrap_constant(concrete(example))
    if isinstance(example, (tuple, list)):
        items = []
        for i, item in enumerate(example):
            item_proxy = None
            if isinstance(item, torch.Tensor) or is_symbolic(item):
                item_proxy = tx.output.create_proxy("call_function", operator.getitem, (proxy, i), {})
                item_proxy.node.meta["example_value"] = item
            items.append(wrap_result(tx, item_proxy, item, device, inputs))
        return ListVariable(items) if isinstance(example, list) else TupleVariable(items, tuple_cls=type(example))
    if is_constant_value(example):
        return wrap_constant(example)
    unsupported(f"an op returning {type(example).__name__}")


# In-place ops that change a tensor's sizes or strides, not its values
RESHAPING_IN_PLACE = {"unsqueeze_", "squeeze_", "t_", "transpose_", "swapaxes_", "swapdims_", "resize_",
                      "resize_as_", "as_strided_", "set_"}


def reshapes_a_symbolic_input(tx, kind, target, args):
    """``x.unsqueeze_(0)`` on an input while sizes are symbols: the code after the graph rebuilds
    a size from the input (``x.size()[1]``), where it has moved."""
    name = target if kind == "call_method" else getattr(target, "__name__", "")
    if name not in RESHAPING_IN_PLACE or not args or not isinstance(args[0], TensorVariable):
        return False
    sources = [source for found in tx.output.shape_env.var_to_sources.values() for source in found]
    return any(isinstance(source, SizeSource) and source.base == args[0].source for source in sources)


def is_inplace(kind, target, kwargs):
    name = target if kind == "call_method" else getattr(target, "__name__", "")
    if target in INPLACE_OPERATORS:
        return True
    if "inplace" in kwargs and kwargs["inplace"].is_python_constant():
        return bool(kwargs["inplace"].as_python_constant())
    return name.endswith("_") and not name.startswith("_")


def is_device_like(value):
    if isinstance(value, torch.device):
        return True
    if isinstance(value, str):
        try:
            torch.device(value)
        except RuntimeError:
            return False
        return True
    return False


def describe(kind, target):
    if kind == "call_method":
        return f"Tensor.{target}"
    return f"{getattr(target, '__module__', None) or ''}.{getattr(target, '__name__', target)}".lstrip(".")


# --- walking nested arguments --------------------------------------------------------------------


def as_proxy(var):
    return var.proxy if isinstance(var, (TensorVariable, SymNodeVariable)) else None


def as_example(var):
    if isinstance(var, SymNodeVariable):
        return var.sym
    return var.example_value if isinstance(var, TensorVariable) else None


def map_trackers(value, leaf_fn):
    """Rebuild nested args (lists, tuples, dicts of trackers) with each tensor mapped by
    ``leaf_fn`` and every other leaf replaced by its Python constant."""
    if isinstance(value, (list, tuple)):
        return type(value)(map_trackers(v, leaf_fn) for v in value)
    if isinstance(value, dict):
        return {k: map_trackers(v, leaf_fn) for k, v in value.items()}
    if isinstance(value, (TensorVariable, SymNodeVariable)):
        return leaf_fn(value)
    if isinstance(value, SymSliceVariable):
        return slice(*(map_trackers(bound, leaf_fn) for bound in value.bounds))
    if isinstance(value, BaseListVariable):
        return value.python_cls(map_trackers(v, leaf_fn) for v in value.items)
    if isinstance(value, ConstDictVariable):
        return {k: map_trackers(v, leaf_fn) for k, v in value.items.items()}
    if value.is_python_constant():
        return without_numpy(value.as_python_constant())
    unsupported(f"passing {value} to a torch function")


def without_numpy(constant):
    """A NumPy scalar as the Python number torch reads it as (also as a slice bound: CutMix's
    ``x[:, np.clip(...):...]``); the graph holds Python values."""
    if isinstance(constant, slice):
        return slice(without_numpy(constant.start), without_numpy(constant.stop), without_numpy(constant.step))
    return constant.item() if isinstance(constant, (np.number, np.bool_)) else constant


def flatten_trackers(value):
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flatten_trackers(v)]
    if isinstance(value, dict):
        return flatten_trackers(list(value.values()))
    if isinstance(value, BaseListVariable):
        return flatten_trackers(value.items)
    if isinstance(value, ConstDictVariable):
        return flatten_trackers(list(value.items.values()))
    return [value]


def contains_symbolic(value):
    if isinstance(value, (list, tuple)):
        return any(contains_symbolic(v) for v in value)
    return is_symbolic(value)


def concrete(value):
    """A number, from a SymInt (SymFloat, SymBool) whose expression has no symbol left."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.pytype(value.node.hint)
    return value


def contains_tensor(value):
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(contains_tensor(v) for v in value)
    return False
