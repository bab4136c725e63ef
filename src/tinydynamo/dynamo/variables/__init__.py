"""VariableTrackers: the values the symbolic interpreter works with (book chapter 3).

Reading order: ``base`` (the interface), ``constant``, ``tensor`` (how ops become graph
nodes), ``lists``/``dicts``/``sets``, ``builtin`` (operators and builtins), ``functions`` (inlining),
``nn_module``, ``torch``, ``misc``, and ``builder`` (wrapping inputs, installing guards).
"""
from .base import NullVariable, UnboundVariable, VariableTracker
from .builder import VariableBuilder
from .builtin import BuiltinVariable
from .constant import ConstantVariable, RangeVariable, SliceVariable, wrap_constant
from .dicts import ConstDictVariable
from .functions import (
    BaseUserFunctionVariable,
    CellVariable,
    FunctoolsPartialVariable,
    LruCacheVariable,
    NestedUserFunctionVariable,
    UserFunctionVariable,
    UserMethodVariable,
)
from .lists import BaseListVariable, ListIteratorVariable, ListVariable, TupleVariable
from .misc import (
    DataClassVariable,
    GetAttrVariable,
    NewObjectVariable,
    PythonModuleVariable,
    SuperVariable,
    TypeVariable,
    UserDefinedObjectVariable,
)
from .nn_module import NNModuleVariable
from .sets import SetVariable
from .tensor import TensorVariable
from .torch import GradModeVariable, TorchFunctionVariable

__all__ = [
    "BaseListVariable", "BaseUserFunctionVariable", "BuiltinVariable", "CellVariable",
    "ConstDictVariable", "ConstantVariable", "DataClassVariable", "FunctoolsPartialVariable",
    "GetAttrVariable", "GradModeVariable", "ListIteratorVariable", "ListVariable",
    "LruCacheVariable", "NNModuleVariable", "NestedUserFunctionVariable", "NewObjectVariable",
    "NullVariable", "PythonModuleVariable", "RangeVariable", "SetVariable", "SliceVariable", "SuperVariable",
    "TensorVariable", "TorchFunctionVariable", "TupleVariable", "TypeVariable", "UnboundVariable",
    "UserDefinedObjectVariable", "UserFunctionVariable", "UserMethodVariable", "VariableBuilder",
    "VariableTracker", "wrap_constant",
]
