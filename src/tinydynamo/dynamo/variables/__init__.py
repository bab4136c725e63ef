"""VariableTrackers: the values the symbolic interpreter works with (book chapter 3).

Reading order, which is also the order of imports (each module imports only the ones before
it): ``base`` (the interface), ``constant``, ``lists``/``dicts``/``sets``, ``functions``
(inlining), ``tensor`` (how ops become graph nodes), ``ndarray``, ``distributed`` (collectives,
chapter 14), ``futures`` (``torch.jit.fork``, chapter 14), ``torch``, ``nn_module``, ``misc``
(classes, objects, ``super()``), ``builtin`` (operators and builtins), and ``builder`` (wrapping
real values, installing guards). A tracker that must wrap a real value it reached (an attribute, a
global, a default) asks the translator, ``tx.build(value, source)``, and the builder picks the
tracker type: so no tracker module imports the builder or a later module.
"""
from .base import GetAttrVariable, NullVariable, UnboundVariable, VariableTracker
from .builder import VariableBuilder
from .builtin import BuiltinVariable
from .constant import ConstantVariable, RangeVariable, SliceVariable, wrap_constant
from .dicts import ConstDictVariable
from .futures import FutureVariable
from .functions import (
    BaseUserFunctionVariable,
    CellVariable,
    FunctoolsPartialVariable,
    LruCacheVariable,
    NestedUserFunctionVariable,
    UserFunctionVariable,
    UserMethodVariable,
)
from .lists import BaseListVariable, GeneratorVariable, ListIteratorVariable, ListVariable, TupleVariable
from .misc import (
    DataClassVariable,
    ExceptionVariable,
    NewObjectVariable,
    PythonModuleVariable,
    SuperVariable,
    TypeVariable,
    UserDefinedObjectVariable,
)
from .nn_module import NNModuleVariable
from .sets import SetVariable
from .tensor import SymNodeVariable, SymSliceVariable, TensorVariable
from .torch import AutocastVariable, GradModeVariable, ProfilerRangeVariable, TorchFunctionVariable

__all__ = [
    "AutocastVariable", "BaseListVariable", "BaseUserFunctionVariable", "BuiltinVariable", "CellVariable",
    "ConstDictVariable", "ConstantVariable", "DataClassVariable", "ExceptionVariable", "FunctoolsPartialVariable",
    "FutureVariable", "GeneratorVariable",
    "GetAttrVariable", "GradModeVariable", "ProfilerRangeVariable", "ListIteratorVariable", "ListVariable",
    "LruCacheVariable", "NNModuleVariable", "NestedUserFunctionVariable", "NewObjectVariable",
    "NullVariable", "PythonModuleVariable", "RangeVariable", "SetVariable", "SliceVariable", "SuperVariable",
    "SymNodeVariable", "SymSliceVariable", "TensorVariable", "TorchFunctionVariable", "TupleVariable",
    "TypeVariable", "UnboundVariable",
    "UserDefinedObjectVariable", "UserFunctionVariable", "UserMethodVariable", "VariableBuilder",
    "VariableTracker", "wrap_constant",
]
