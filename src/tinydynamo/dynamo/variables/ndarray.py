"""NumPy arrays computed with tensors (book chapter 3).

A model sometimes leaves torch for NumPy (``x.numpy()``, ``np.linalg.norm(...)``) and comes back
(``torch.from_numpy``). As PyTorch's Dynamo does, the translator keeps such code in the graph: an
array is a tensor that Python sees as an ``np.ndarray`` (``NumpyNdarrayVariable``), and each NumPy
call, method, attribute or operator on arrays becomes one graph node (``NumpyOp``) that runs the
same function of ``torch._numpy``, NumPy's API written with torch ops, on those tensors. An array
that leaves the graph is turned back into a NumPy array (``tensor.numpy()``), sharing its memory
as ``x.numpy()`` does in eager. ``np.random`` stays out: its generator is not torch's.
"""
import operator

import numpy as np
import torch
import torch._numpy as tnp
from torch.utils._pytree import tree_map

from ..bytecode import PY313
from ..exc import unsupported
from .base import GetAttrVariable, VariableTracker
from .constant import ConstantVariable, fold, is_constant_value, wrap_constant
from .lists import BaseListVariable
from .tensor import TensorVariable, trace_op

NUMPY_SUBMODULES = ("linalg", "fft")


def numpy_names():
    """{id(numpy function): its name in torch._numpy ("sin", "linalg.norm")}, for the functions
    that torch._numpy implements."""
    names = {}
    for prefix, module, tmodule in [("", np, tnp)] + [
            (f"{sub}.", getattr(np, sub), getattr(tnp, sub)) for sub in NUMPY_SUBMODULES]:
        for name in dir(tmodule):
            value = getattr(module, name, None)
            if callable(value) and not isinstance(value, type) and not name.startswith("_"):
                names[id(value)] = prefix + name
    return names


NUMPY_NAMES = numpy_names()


def to_ndarray(value):
    return tnp.ndarray(value) if isinstance(value, torch.Tensor) else value


def dtype_by_name(var):
    """A NumPy dtype argument (``dtype=np.float64``) as its name, which torch._numpy accepts and
    a graph node can hold."""
    if not var.is_python_constant():
        return var
    value = var.as_python_constant()
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return ConstantVariable(np.dtype(value).name)
    return var


def to_tensor(value):
    return value.tensor if isinstance(value, tnp.ndarray) else value


class NumpyOp:
    """The target of a graph node: a NumPy function (or ``ndarray`` method, attribute, operator)
    run by ``torch._numpy`` on the tensors behind the arrays; arrays it returns become tensors."""

    def __init__(self, name, kind="function"):
        self.name = name  # "linalg.norm", a method or attribute name, or an operator function
        self.kind = kind  # "function", "method", "attribute" or "operator"
        self.__name__ = f"numpy_{getattr(name, '__name__', name)}".replace(".", "_")

    def __call__(self, *args, **kwargs):
        args, kwargs = tree_map(to_ndarray, (args, kwargs))
        if self.kind == "function":
            fn = tnp
            for part in self.name.split("."):
                fn = getattr(fn, part)
            result = fn(*args, **kwargs)
        elif self.kind == "method":
            result = getattr(args[0], self.name)(*args[1:], **kwargs)
        elif self.kind == "attribute":
            result = getattr(args[0], self.name)
        else:
            result = self.name(*args)
        return tree_map(to_tensor, result)


# Ops whose 0-d result is an array; NumPy's other functions, methods and operators give a scalar
# (np.float32...) where torch._numpy gives a 0-d array.
ARRAY_MAKERS = {"asarray", "array", "ascontiguousarray", "asanyarray", "copy", "reshape", "atleast_1d",
                "atleast_2d", "atleast_3d", "T", "real", "imag", "transpose", "squeeze", "view"}


def numpy_op(tx, op, args, kwargs):
    """Record ``op`` on the trackers ``args``; tensors it returns are arrays."""
    args, kwargs = [dtype_by_name(a) for a in args], {k: dtype_by_name(v) for k, v in kwargs.items()}
    result = trace_op(tx, "call_function", op, args, kwargs)
    return as_arrays(result, scalar_if_0d=op.name not in ARRAY_MAKERS)


def as_arrays(var, scalar_if_0d):
    if isinstance(var, NumpyNdarrayVariable) and not var.scalar:  # ``a += 1``, ``np.asarray(a)``: a itself
        return var
    if isinstance(var, TensorVariable):
        array = NumpyNdarrayVariable.of(var)
        array.scalar = scalar_if_0d and array.example_value.dim() == 0
        return array
    if isinstance(var, BaseListVariable):
        return type(var)([as_arrays(item, scalar_if_0d) for item in var.items])
    if isinstance(var, ConstantVariable) and not is_constant_value(var.value):
        unsupported(f"a NumPy result of type {type(var.value).__name__}")
    return var


class NumpyNdarrayVariable(TensorVariable):
    """An ``np.ndarray`` whose value the graph holds as a tensor."""

    scalar = False  # NumPy would give a scalar here (np.float32), not a 0-d array

    @classmethod
    def of(cls, tensor_var):
        """The array view of a tensor (``x.numpy()``): the same graph value."""
        if tensor_var.example_value.requires_grad:
            unsupported("Tensor.numpy() of a tensor that requires grad (RuntimeError in eager)")
        return cls(tensor_var.proxy, tensor_var.example_value, tensor_var.device, python_cls=np.ndarray)

    def from_graph_output(self, codegen):
        """The graph returns the tensor; Python gets ``tensor.numpy()`` (sharing its memory), or
        for a scalar ``tensor.numpy()[()]``."""
        codegen.load_attr("numpy")
        codegen.push_null()
        if not PY313:  # 3.11 and 3.12 want the NULL below the callable
            codegen.append("SWAP", arg=2)
        codegen.call(0)
        if self.scalar:
            codegen.load_const(())
            codegen.append("BINARY_SUBSCR")

    def as_tensor(self):
        """``torch.from_numpy(array)``: the tensor behind it."""
        if self.scalar:
            unsupported("torch.from_numpy of a NumPy scalar (TypeError in eager)")
        return self.tensor()

    def tensor(self):
        return TensorVariable(self.proxy, self.example_value, self.device)

    def var_getattr(self, tx, name):
        if name == "dtype":  # fixed while tracing: the tensor's, in NumPy's terms
            return ConstantVariable(torch.empty(0, dtype=self.example_value.dtype).numpy().dtype)
        if callable(getattr(tnp.ndarray, name, None)):
            return GetAttrVariable(self, name)
        if not hasattr(tnp.ndarray, name):
            unsupported(f"AttributeError at trace time: ndarray has no attribute {name!r}")
        return numpy_op(tx, NumpyOp(name, "attribute"), [self], {})

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__" and self.example_value.dim() > 0:  # its first size, symbolic or not
            return self.tensor().call_method(tx, "size", [ConstantVariable(0)], {})
        if name in ("__len__", "__bool__", "item", "tolist", "tobytes"):
            unsupported(f"ndarray.{name}() (it leaves the graph)")
        if name == "__getitem__":
            return numpy_op(tx, NumpyOp(operator.getitem, "operator"), [self, *args], {})
        return numpy_op(tx, NumpyOp(name, "method"), [self, *args], kwargs)

    def truthy(self, tx):
        unsupported("the truth value of an ndarray (data-dependent)")

    def __repr__(self):
        return f"NumpyNdarrayVariable({tuple(self.example_value.shape)}, {self.example_value.dtype})"


class NumpyFunctionVariable(VariableTracker):
    """A function of NumPy that torch._numpy implements (``np.mean``, ``np.linalg.norm``)."""

    def __init__(self, fn, name, source=None):
        super().__init__(source)
        self.fn = fn
        self.name = name

    def python_object(self):
        return self.fn

    def call_function(self, tx, args, kwargs):
        if all(a.is_python_constant() for a in [*args, *kwargs.values()]):  # np.sqrt(16): a constant
            result = fold(self.fn, *[a.as_python_constant() for a in args],
                          **{k: v.as_python_constant() for k, v in kwargs.items()})
            if is_constant_value(result):
                return wrap_constant(result)
        args = [NumpyNdarrayVariable.of(a) if type(a) is TensorVariable else a for a in args]
        return numpy_op(tx, NumpyOp(self.name), args, kwargs)

    def __repr__(self):
        return f"NumpyFunctionVariable(np.{self.name})"
