"""torch functions, and grad-mode context managers (book chapter 3).

``TorchFunctionVariable`` is any callable of the torch namespace (``torch.relu``,
``torch.nn.functional.gelu``, ``torch.cat``...). Calling it records ONE graph node, whether it
is written in C or in Python (``F.softmax`` is not inlined: the node calls it at run time).
A few torch functions touch state outside the graph (the RNG seed, default dtype, autograd
itself): those are Unsupported. The in-place collectives of ``torch.distributed`` become
functional collectives (``distributed.py``, chapter 14).

``torch.jit.fork`` and ``torch.jit.wait`` are traced by ``futures.py``.

``GradModeVariable`` is ``torch.no_grad()`` / ``torch.enable_grad()`` /
``torch.set_grad_enabled(mode)`` / ``torch.inference_mode()`` (as ``no_grad``): entering or leaving it records
``torch._C._set_grad_enabled(mode)`` in the graph, and switches grad mode while tracing too.
A graph break inside such a ``with`` block hands its ``__exit__`` to the resume function as a
``GradModeExit`` (chapter 5).

``ProfilerRangeVariable`` is ``torch.profiler.record_function(name)``: a range in a profiler's
trace, which the graph leaves out, as Dynamo does.
"""
import functools
import inspect
import types

import numpy as np
import torch
import torch.fx
import torch.utils.checkpoint

from ..exc import raise_at_trace_time, unsupported
from ...symbolic_shapes import is_symbolic
from ..guards import Guard
from ..trace_rules import inline_refusal
from .base import GetAttrVariable, VariableTracker
from .constant import ConstantVariable, fold, is_constant_value, wrap_constant
from .distributed import IN_PLACE_COLLECTIVES, trace_collective
from .futures import FutureVariable, trace_fork
from .lists import BaseListVariable, ListVariable
from .ndarray import NumpyNdarrayVariable
from .nn_module import trace_functional_call
from .tensor import TensorVariable, trace_op

SIDE_EFFECT_FUNCTIONS = {
    "manual_seed", "seed", "initial_seed", "set_rng_state", "get_rng_state", "set_default_dtype",
    "set_default_device", "set_default_tensor_type", "use_deterministic_algorithms",
    "set_printoptions", "save", "load", "compile", "backward", "grad",
}
HAS_TORCH_FUNCTION = (torch._C._has_torch_function, torch._C._has_torch_function_unary,
                      torch._C._has_torch_function_variadic)
SIDE_EFFECT_MODULES = ("torch.autograd", "torch.cuda", "torch.random", "torch.distributed",
                       "torch._dynamo", "torch.compiler", "torch.utils.data")


# Questions with a fixed answer while a compiler traces, answered as torch._dynamo answers them:
# libraries ask them to choose a traceable code path (transformers' is_torchdynamo_compiling).
# Queries of global state that the trace answers now, guarded on the same answer next time.
STATE_QUERIES = (torch.distributed.is_initialized, torch.distributed.get_world_size, torch.distributed.get_rank,
                 torch.autograd._is_checkpoint_valid, torch.cuda.is_available, torch.cuda.device_count)
# Checks of a condition (torchvision's and timm's torch._assert(x.dim() == 4, ...)): nothing to do
# when the condition is a true constant.
CONDITION_CHECKS = (torch._assert, torch._check)
# The recurrent networks' aten ops: their kernels unroll the network over the sequence, so that a
# trace over a symbolic length would pin the length (one compile per length, up to the cache limit).
RECURRENT_OPS = (torch._VF.lstm, torch._VF.gru, torch._VF.rnn_tanh, torch._VF.rnn_relu)
TRACING_ANSWERS = {
    torch.compiler.is_compiling: True,
    torch.compiler.is_dynamo_compiling: True,
    torch.compiler.is_exporting: False,
    torch._utils.is_compiling: True,
    torch.jit.is_scripting: False,
    torch.jit.is_tracing: False,
    torch.cuda.graphs.is_current_stream_capturing: False,
    torch._C._get_tracing_state: None,
    torch.distributed.is_available: torch.distributed.is_available(),  # fixed by how torch was built
}
# torch._dynamo.is_compiling(), the older spelling that libraries still call: known by its name,
# so that tinydynamo does not import torch._dynamo.
TRACING_ANSWERS_BY_NAME = {("torch._dynamo.external_utils", "is_compiling"): True}


@functools.cache
def _torch_namespace():
    """{id: function} of the functions in torch's namespaces. The functions are held here: an id
    is unique only while its object lives, and reading a namespace makes some objects afresh
    (bound methods such as ``__subclasshook__``), whose ids later objects would reuse."""
    namespaces = [torch, torch.nn.functional, torch.linalg, torch.fft, torch.special, torch._C._nn,
                  torch._C._VariableFunctions]
    values = [getattr(ns, name, None) for ns in namespaces for name in dir(ns)]
    return {id(v): v for v in values if callable(v) and not isinstance(v, type)
            and v is not getattr(object, getattr(v, "__name__", ""), None)}  # not object.__new__ & co


CHECKPOINT_OPTIONS = ("use_reentrant", "preserve_rng_state", "determinism_check", "debug")


def trace_checkpoint(tx, fn, args, kwargs):
    """``torch.utils.checkpoint.checkpoint(fn, *args)``: ``fn`` is traced into this graph with its
    nodes tagged ``recompute``. The partitioner saves none of them for the backward, which computes
    them again from the region's inputs, as eager's checkpoint does (random ops excepted: their
    values are saved, which gives the same numbers as eager's replayed random state)."""
    reentrant = kwargs["use_reentrant"].as_python_constant() if "use_reentrant" in kwargs else None
    kwargs = {k: v for k, v in kwargs.items() if k not in CHECKPOINT_OPTIONS}
    if "context_fn" in kwargs:
        unsupported("torch.utils.checkpoint with a context_fn (selective checkpointing)")
    if reentrant is None:
        unsupported("torch.utils.checkpoint without use_reentrant (eager warns, then runs the reentrant variant)")
    if reentrant and (kwargs or not any(isinstance(a, TensorVariable) and a.example_value.requires_grad for a in args)):
        # the reentrant variant refuses keyword arguments, and without an input that requires
        # grad its output does not require grad either: not what the traced function computes
        unsupported("torch.utils.checkpoint(use_reentrant=True) with keyword arguments or no input requiring grad")
    with tx.output.tagging(recompute=True):
        return fn.call_function(tx, list(args), kwargs)


def trace_associative_scan(tx, combine_fn, xs, dim, reverse=None, combine_mode=None):
    """``associative_scan(combine_fn, xs, dim)`` (Mamba's selective scan, when transformers sees
    a compiler): the scan unrolled along ``dim``, ``combine_fn`` traced once per element on slices
    without that dimension (what torch's generic mode hands it, through vmap), and the results
    stacked. ``xs`` is a tensor or a tuple or list of tensors."""
    leaves = xs.unpack_var_sequence(tx) if isinstance(xs, BaseListVariable) else [xs]
    dim, reverse = dim.as_python_constant(), reverse is not None and reverse.as_python_constant()
    if not all(isinstance(leaf, TensorVariable) for leaf in leaves) or not isinstance(
            length := leaves[0].example_value.shape[dim], int):
        unsupported("associative_scan of something other than tensors of a static length")
    pointwise = combine_mode is None or combine_mode.as_python_constant() == "pointwise"
    if pointwise and not all(leaf.device.type in ("cuda", "xpu") for leaf in leaves):
        raise_at_trace_time(ValueError("For combine_mode='pointwise', all input tensors need to be on CUDA or XPU"))

    def pack(items):
        return type(xs)(items) if isinstance(xs, BaseListVariable) else items[0]

    def unpack(value):
        return value.unpack_var_sequence(tx) if isinstance(value, BaseListVariable) else [value]

    order = range(length - 1, -1, -1) if reverse else range(length)
    elements = [[trace_op(tx, "call_method", "select", [leaf, ConstantVariable(dim), ConstantVariable(i)], {})
                 for leaf in leaves] for i in order]
    scanned = [elements[0]]
    for element in elements[1:]:
        scanned.append(unpack(combine_fn.call_function(tx, [pack(scanned[-1]), pack(element)], {})))
    if reverse:
        scanned.reverse()
    return pack([trace_op(tx, "call_function", torch.stack, [ListVariable([s[k] for s in scanned]),
                                                              ConstantVariable(dim)], {})
                 for k in range(len(leaves))])


def is_torch_callable(value):
    """A function (C or Python) that belongs to torch, not a class or a module; or an operator
    (``torch.ops.aten.relu``, a ``torch.library.custom_op``)."""
    if isinstance(value, type) or not callable(value):
        return False
    if isinstance(value, (torch._ops.OpOverload, torch._ops.OpOverloadPacket, torch.library.CustomOpDef)):
        return True
    module = getattr(value, "__module__", None) or ""
    if isinstance(value, types.FunctionType) and not (module == "torch" or module.startswith("torch.")):
        return False  # a library's Python function put in torch's namespace (torch_geometric's
        # index_select): traced as the user code it is, down to torch's own function
    if isinstance(value, types.FunctionType) and inline_refusal(value.__code__) is None:
        return False  # torch.nn.LayerNorm.forward called on a subclass's self: inlined like a method
    if _torch_namespace().get(id(value)) is value:
        return True
    if getattr(value, "__objclass__", None) is torch._C.TensorBase:  # torch.Tensor.add & co
        return True
    if isinstance(value, types.FunctionType) and closes_over_objects(value):
        return False
    is_function = isinstance(value, (types.FunctionType, types.BuiltinFunctionType,
                                     types.MethodDescriptorType, types.WrapperDescriptorType))
    return is_function and (module == "torch" or module.startswith("torch."))


def closes_over_objects(fn):
    """Whether ``fn`` is a wrapper made at run time around objects: an LR scheduler wraps
    ``optimizer.step`` in one that holds the optimizer (by a weakref), with the wrapped function's
    ``__module__``. Not an op: running it to compute its result would step the optimizer."""
    plain = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, functools.partial)
    for cell in fn.__closure__ or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if not (isinstance(contents, plain) or is_constant_value(contents)):
            return True
    return False


def is_autograd_function_apply(fn):
    """``MyFunction.apply`` of a ``torch.autograd.Function``: the graph calls it as one op."""
    owner = getattr(fn, "__self__", None)
    return isinstance(owner, type) and issubclass(owner, torch.autograd.Function) \
        and getattr(fn, "__name__", None) == "apply"


class AutogradFunctionApply:
    """The target of a graph node that calls ``MyFunction.apply`` (FX would look a bound
    ``apply`` up in ``torch.autograd.function``, where it was defined)."""

    def __init__(self, function_cls):
        self.function_cls = function_cls
        self.__name__ = f"{function_cls.__name__}_apply"

    def __call__(self, *args, **kwargs):
        return self.function_cls.apply(*args, **kwargs)


class TorchFunctionVariable(VariableTracker):
    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def python_object(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def call_function(self, tx, args, kwargs):
        name = getattr(self.fn, "__name__", "")
        module = getattr(self.fn, "__module__", None) or ""
        if self.fn is torch.jit.fork and args:  # its function traced into a graph of its own
            return trace_fork(tx, args[0], args[1:], kwargs)
        if self.fn is torch.utils.checkpoint.checkpoint and args:
            return trace_checkpoint(tx, args[0], args[1:], kwargs)
        if self.fn is torch.func.functional_call or (module, name) == ("torch.nn.utils.stateless", "functional_call"):
            return trace_functional_call(tx, *args, **kwargs)
        if (module, name) == ("torch._higher_order_ops.associative_scan", "associative_scan"):
            return trace_associative_scan(tx, *args, **kwargs)
        if self.fn is torch.jit.wait and len(args) == 1 and not kwargs:
            if not isinstance(args[0], FutureVariable):
                unsupported(f"torch.jit.wait of {args[0]}: not a future this graph forked (a fork "
                            "that ran in Python, before a graph break, returns a real one)")
            return args[0].wait(tx)
        arrays = [a for a in [*args, *kwargs.values()] if isinstance(a, NumpyNdarrayVariable)]
        if arrays:
            return self.call_with_arrays(tx, args, kwargs, arrays)
        if self.fn is torch.Tensor.numpy and len(args) == 1 and not kwargs:
            return NumpyNdarrayVariable.of(args[0])  # x.numpy(): the same graph value, seen as an array
        if is_autograd_function_apply(self.fn):
            return trace_op(tx, "call_function", AutogradFunctionApply(self.fn.__self__), args, kwargs)
        if self.fn is torch.jit.annotate and len(args) == 2:
            return args[1]  # a type annotation for TorchScript: the value itself
        if self.fn in CONDITION_CHECKS and args and args[0].is_python_constant() and args[0].as_python_constant():
            return ConstantVariable(None)
        if self.fn in TRACING_ANSWERS and not args and not kwargs:
            return ConstantVariable(TRACING_ANSWERS[self.fn])
        if (module, name) in TRACING_ANSWERS_BY_NAME and not args and not kwargs:
            return ConstantVariable(TRACING_ANSWERS_BY_NAME[module, name])
        if self.fn in STATE_QUERIES and not args and not kwargs:
            answer = self.fn()
            tx.output.add_guard(Guard(None, "STATE_QUERY", (self.fn, answer)))
            return ConstantVariable(answer)
        if self.fn in IN_PLACE_COLLECTIVES:
            return trace_collective(tx, self.fn, args, kwargs)
        if name in SIDE_EFFECT_FUNCTIONS or module.startswith(SIDE_EFFECT_MODULES):
            unsupported(f"{module}.{name}: it acts on state outside the graph")
        if self.fn is torch.is_grad_enabled:
            tx.output.add_global_state_guard("GRAD_MODE")
            return ConstantVariable(torch.is_grad_enabled())
        if self.fn is torch._C._set_grad_enabled and len(args) == 1 and not kwargs and args[0].is_python_constant():
            GradModeVariable.switch(tx, bool(args[0].as_python_constant()))  # a context manager of the user's
            return ConstantVariable(None)
        if self.fn is torch.get_default_dtype:
            tx.output.add_global_state_guard("DEFAULT_DTYPE")
            return ConstantVariable(torch.get_default_dtype())
        if self.fn in HAS_TORCH_FUNCTION:  # the check at the top of torch.nn.functional's functions
            return ConstantVariable(False)  # (tensor subclasses with __torch_function__ are unsupported)
        if self.is_foldable_helper(args, kwargs):
            result = fold(self.fn, *[a.as_python_constant() for a in args],
                          **{k: v.as_python_constant() for k, v in kwargs.items()})
            if is_constant_value(result):
                return wrap_constant(result)
        self.refuse_eager_only(name, args, kwargs)
        result = trace_op(tx, "call_function", self.fn, args, kwargs)
        if not args and not kwargs and isinstance(result, ConstantVariable):
            # torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()...: global
            # state, read now and guarded, as STATE_QUERIES are
            tx.output.add_guard(Guard(None, "STATE_QUERY", (self.fn, result.value)))
        return result

    def refuse_eager_only(self, name, args, kwargs):
        """Unsupported for the calls that run eagerly, as in torch.compile: a new leaf of autograd
        (``torch.ones(2, requires_grad=True)``), whose .grad the graph would not give; an RNN over
        symbolic sizes, whose kernel unrolls it over the sequence (a trace would pin the length)."""
        requires_grad = kwargs.get("requires_grad")
        if requires_grad is not None and (not requires_grad.is_python_constant() or requires_grad.as_python_constant()):
            unsupported(f"{name}(..., requires_grad=True): a new leaf of autograd, made outside the graph (as "
                        "torch.compile does), so that its .grad is eager's")
        if self.fn in RECURRENT_OPS and isinstance(args[0], TensorVariable) and \
                any(is_symbolic(n) for n in args[0].example_value.shape):
            unsupported(f"torch._VF.{name} (nn.{name.split('_')[0].upper()}) over symbolic sizes: its kernel "
                        "unrolls it over the sequence, so it runs eagerly, as torch.compile runs every RNN")

    def call_with_arrays(self, tx, args, kwargs, arrays):
        """``torch.from_numpy(a)`` / ``torch.as_tensor(a)``: the tensor behind the array (shared
        memory, as in eager); ``torch.tensor(a)``: a copy of it; a ``dtype`` or ``device`` given to
        ``as_tensor`` or ``tensor`` converts it as ``Tensor.to`` does. Other torch functions refuse
        arrays in eager too."""
        converts = set(kwargs) <= {"dtype", "device"} and all(v.is_python_constant() for v in kwargs.values())
        shares = self.fn is torch.from_numpy and not kwargs
        if len(args) == 1 and (shares or (converts and self.fn in (torch.as_tensor, torch.asarray, torch.tensor))):
            tensor = args[0].as_tensor()
            if self.fn is torch.tensor:
                tensor = trace_op(tx, "call_method", "clone", [tensor], {})
            return trace_op(tx, "call_method", "to", [tensor], kwargs) if kwargs else tensor
        unsupported(f"passing a NumPy array to {getattr(self.fn, '__name__', self.fn)}")

    def is_foldable_helper(self, args, kwargs):
        """A Python helper of torch.nn.functional called on constants only (``_canonical_mask(None,
        ...)``, ``_none_or_dtype(None)``): it computes a constant, run now instead of recorded."""
        return (isinstance(self.fn, types.FunctionType) and self.fn.__module__ == "torch.nn.functional"
                and all(a.is_python_constant() for a in [*args, *kwargs.values()]))

    def __repr__(self):
        return f"TorchFunctionVariable({getattr(self.fn, '__qualname__', self.fn)})"


class GradModeVariable(VariableTracker):
    """``torch.no_grad()``, ``enable_grad()``, ``set_grad_enabled(mode)``, and ``inference_mode()``,
    which the graph treats as ``no_grad()``: the same values, without the inference-tensor flag
    (torch.compile's inductor backend does the same)."""

    CLASSES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode)

    def __init__(self, mode, prior):
        super().__init__()
        self.mode = mode  # grad mode inside the block
        self.prior = prior  # grad mode to restore on exit (known once switched)

    @staticmethod
    def create(tx, cls, args):
        prior = torch.is_grad_enabled()
        if cls is torch.set_grad_enabled:  # switches at construction, like the real one
            mode = args[0].as_python_constant()
            GradModeVariable.switch(tx, mode)
            return GradModeVariable(mode, prior)
        if cls is torch.inference_mode and args and not args[0].as_python_constant():
            unsupported("torch.inference_mode(False) inside the compiled frame")
        if args and cls is not torch.inference_mode:
            unsupported(f"{cls.__name__} with arguments")
        return GradModeVariable(cls is torch.enable_grad, None)

    @staticmethod
    def switch(tx, mode):
        tx.output.add_global_state_guard("GRAD_MODE")  # the code after a break depends on it
        tx.output.create_proxy("call_function", torch._C._set_grad_enabled, (mode,), {})
        torch._C._set_grad_enabled(mode)

    def enter(self, tx):
        if self.prior is None:  # no_grad() / enable_grad() switch on entry
            self.prior = torch.is_grad_enabled()
            GradModeVariable.switch(tx, self.mode)
        return ConstantVariable(None)

    def call_function(self, tx, args, kwargs):
        """``@torch.no_grad()`` on a function made in the frame."""
        if self.prior is not None or len(args) != 1 or kwargs:
            unsupported("calling a grad mode object other than as a decorator of one function")
        return GradModeFunctionVariable(self.mode, args[0])

    def call_method(self, tx, name, args, kwargs):
        if name == "__exit__":
            GradModeVariable.switch(tx, self.prior)
            return ConstantVariable(None)
        unsupported(f"grad mode {name}")

    def var_getattr(self, tx, name):
        if name == "__exit__":
            return GetAttrVariable(self, name)
        unsupported(f"attribute {name!r} of a grad mode context manager")

    def reconstruct_attribute(self, codegen, name):
        """The ``__exit__`` left on the stack by ``BEFORE_WITH``, rebuilt at a graph break."""
        if name != "__exit__":
            unsupported(f"rebuilding attribute {name!r} of a grad mode context manager")
        codegen.load_const(GradModeExit(self.prior))


class ProfilerRangeVariable(VariableTracker):
    """``with torch.profiler.record_function("block"):``: the block is traced as if the ``with``
    were not there (Dynamo drops these ranges too). A graph break inside it hands the resume
    function a ``ProfilerRangeExit``, which does nothing."""

    def enter(self, tx):
        if tx.instructions[tx.indexof[tx.current_instruction] + 1].opname != "POP_TOP":
            unsupported("`with torch.profiler.record_function(...) as name`: the object is not traced")
        return ConstantVariable(None)

    def call_method(self, tx, name, args, kwargs):
        if name == "__exit__":
            return ConstantVariable(None)
        unsupported(f"record_function.{name}() inside the compiled frame")

    def var_getattr(self, tx, name):
        if name == "__exit__":
            return GetAttrVariable(self, name)
        unsupported(f"attribute {name!r} of a torch.profiler.record_function")

    def reconstruct_attribute(self, codegen, name):
        if name != "__exit__":
            unsupported(f"rebuilding attribute {name!r} of a torch.profiler.record_function")
        codegen.load_const(ProfilerRangeExit())


class ProfilerRangeExit:
    """The ``__exit__`` of a ``record_function`` block that a graph break cut in two."""

    def __call__(self, exc_type, exc_value, traceback):
        return None


@torch.fx.node.has_side_effect
def enter_autocast(device_type, enabled, dtype, cache_enabled):
    """The graph node for the start of a ``with torch.autocast(...)`` block that switches
    autocast: what ``torch.autocast.__enter__`` does."""
    torch.set_autocast_enabled(device_type, enabled)
    torch.set_autocast_dtype(device_type, dtype)
    torch.autocast_increment_nesting()
    torch.set_autocast_cache_enabled(cache_enabled)


@torch.fx.node.has_side_effect
def exit_autocast(device_type, enabled, dtype, cache_enabled):
    """The graph node for the end of that block (``torch.autocast.__exit__``): back to the state
    before it, which the arguments give. Leaving the outermost block empties autocast's cache of
    cast weights."""
    if torch.autocast_decrement_nesting() == 0:
        torch.clear_autocast_cache()
    torch.set_autocast_enabled(device_type, enabled)
    torch.set_autocast_dtype(device_type, dtype)
    torch.set_autocast_cache_enabled(cache_enabled)


def autocast_state_of(device_type):
    return torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type), \
        torch.is_autocast_cache_enabled()


class AutocastVariable(VariableTracker):
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``. A block that
    changes the autocast state records ``enter_autocast`` and ``exit_autocast`` in the graph, and
    runs them while tracing too, so that the example values inside get the dtypes autocast gives
    (``AutocastExample``). AOT autograd then traces the casts that autocast makes. A block that
    changes nothing (Hugging Face's rotary embeddings turn autocast off, often where it is off)
    records nothing."""

    def __init__(self, device_type, state):
        super().__init__()
        self.device_type = device_type
        self.state = state  # (enabled, dtype, cache_enabled) inside the block
        self.prior = None  # the state it replaces, once entered

    @staticmethod
    def create(cls, args, kwargs):
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unsupported(f"{cls.__qualname__}() with arguments that are not constants")
        block = fold(cls, *[a.as_python_constant() for a in args],
                     **{k: v.as_python_constant() for k, v in kwargs.items()})  # torch checks the arguments
        return AutocastVariable(block.device, (block._enabled, block.fast_dtype, block._cache_enabled))

    def switches(self):
        return self.state != self.prior

    def enter(self, tx):
        self.prior = autocast_state_of(self.device_type)
        if self.switches():
            if tx.output.shape_env.var_to_val:
                unsupported("torch.autocast switching autocast in a frame traced with dynamic shapes "
                            "(AOT autograd traces those on meta tensors, which autocast does not cast)")
            tx.output.switch_autocast(enter_autocast, self.device_type, *self.state)
        return ConstantVariable(None)

    def call_method(self, tx, name, args, kwargs):
        if name != "__exit__":
            unsupported(f"torch.autocast.{name}")
        if self.switches():
            tx.output.switch_autocast(exit_autocast, self.device_type, *self.prior)
        return ConstantVariable(None)

    def var_getattr(self, tx, name):
        if name == "__exit__":
            return GetAttrVariable(self, name)
        unsupported(f"attribute {name!r} of torch.autocast")

    def reconstruct_attribute(self, codegen, name):
        """A graph break inside the block would need its ``__exit__`` rebuilt on the stack."""
        unsupported("a graph break inside a `with torch.autocast(...)` block")


class GradModeFunctionVariable(VariableTracker):
    """A function decorated with ``torch.no_grad()`` / ``torch.enable_grad()`` in the frame:
    a call runs it inside a ``with`` block of that mode."""

    def __init__(self, mode, fn):
        super().__init__()
        self.mode = mode
        self.fn = fn

    def python_type(self):
        return types.FunctionType

    def call_function(self, tx, args, kwargs):
        block = GradModeVariable(self.mode, None)
        block.enter(tx)
        result = self.fn.call_function(tx, args, kwargs)
        block.call_method(tx, "__exit__", [], {})
        return result


class GradModeExit:
    """The ``__exit__`` of a grad-mode ``with`` block that a graph break cut in two: a real
    callable that the resume function finds on its stack, and calls when the block ends
    (normally, or through the block's exception handler), to restore the grad mode from
    before the block."""

    def __init__(self, prior):
        self.prior = prior

    def __call__(self, exc_type, exc_value, traceback):
        torch._C._set_grad_enabled(self.prior)

    def __repr__(self):
        return f"GradModeExit(prior={self.prior})"


def constant_constructor(cls, args, kwargs):
    """``torch.device("cpu")``, ``torch.Size([2, 3])``: constants built from constants."""
    if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
        unsupported(f"{cls.__name__}(...) with non-constant arguments")
    value = fold(cls, *[a.as_python_constant() for a in args],
                 **{k: v.as_python_constant() for k, v in kwargs.items()})
    return wrap_constant(value)


CONSTANT_CLASSES = (torch.device, torch.Size, torch.dtype, torch.finfo, torch.iinfo, np.dtype, np.finfo, np.iinfo)


def is_constant_class(cls):
    """A class whose instances built from constants are constants (NumPy's scalar types too)."""
    return cls in CONSTANT_CLASSES or issubclass(cls, (np.number, np.bool_))
