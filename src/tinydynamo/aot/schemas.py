"""What the runtime must know about a traced graph's inputs and outputs (chapter 6).

The graphs themselves are functional; the eager semantics they leave out live here
(PyTorch: ``ViewAndMutationMeta`` in ``torch/_functorch/_aot_autograd/schemas.py``):

* which inputs the program mutated: the graph returns their new values first, and the
  runtime copies them back into the inputs;
* for every user output, where it comes from: a graph output, an input returned as is, a
  view of an input or of a graph output (re-made at run time by replaying the view ops, so
  it really aliases its base), or a constant;
* what each input looked like when traced: graphs are specialized to shapes, strides,
  dtypes and devices, and a call with different inputs is refused. A symbolic size (a
  ``torch.SymInt``) accepts any size: dynamo's guards have checked it already.
"""
import dataclasses
import enum
from typing import Any, Optional

import torch
from torch.utils._pytree import TreeSpec

from .symbolic import is_symbolic


class OutputType(enum.Enum):
    NON_ALIAS = "a graph output"
    IS_INPUT = "an input, returned as is"
    ALIAS_OF_INPUT = "a view of an input"
    ALIAS_OF_INTERMEDIATE = "a view of a graph output"
    CONSTANT = "a constant"


@dataclasses.dataclass
class OutputInfo:
    """Where one (flattened) user output comes from at run time."""

    kind: OutputType
    index: Optional[int] = None  # the input or graph output it is, or is a view of
    views: tuple = ()  # (func, args, kwargs, index) steps re-making the view from its base
    value: Any = None  # for CONSTANT (a SymInt: computed from the call's sizes)


def describe(value):
    if isinstance(value, torch.Tensor):
        return (
            f"Tensor(shape={tuple(value.shape)}, stride={value.stride()}, "
            f"dtype={value.dtype}, device={value.device})"
        )
    return repr(value)


def _same_sizes(sizes, traced_sizes):
    """Do concrete sizes (or strides) match the traced ones? A symbolic one matches any."""
    return len(sizes) == len(traced_sizes) and all(
        isinstance(traced, torch.SymInt) or size == traced for size, traced in zip(sizes, traced_sizes))


def _same_strides(arg, example):
    """Do the strides match the traced ones, where they matter (not for a dimension of size 1)?"""
    strides = [stride for stride, size in zip(arg.stride(), arg.shape) if size != 1]
    traced = [stride for stride, size in zip(example.stride(), arg.shape) if size != 1]
    return _same_sizes(strides, traced)


@dataclasses.dataclass
class InputInfo:
    """One graph input as it was traced."""

    example: Any  # a meta tensor with the traced layout, or the non-tensor value itself
    device: Optional[torch.device]
    requires_grad: bool
    mutated: bool
    # (dtype, shape, strides) of a tensor traced with concrete sizes: an argument with exactly
    # these, on the device, passes without the slower checks below (run on every call)
    layout: Optional[tuple] = dataclasses.field(init=False, default=None)

    def __post_init__(self):
        example = self.example
        if isinstance(example, torch.Tensor) and not is_symbolic(example):
            self.layout = (example.dtype, tuple(example.shape), example.stride())

    def check(self, index, arg):
        """Refuse an argument the graph was not traced for."""
        if self.layout is not None and isinstance(arg, torch.Tensor) and (arg.dtype, arg.shape, arg.stride()) == \
                self.layout and arg.device == self.device:
            same = True
        elif isinstance(self.example, torch.Tensor):
            same = isinstance(arg, torch.Tensor) and (arg.dtype, arg.device) == (self.example.dtype, self.device) \
                and _same_sizes(arg.shape, self.example.shape) and _same_strides(arg, self.example)
        elif is_symbolic(self.example):
            same = isinstance(arg, int)
        else:
            same = not isinstance(arg, torch.Tensor) and arg == self.example
        if not same:
            traced = describe(self.example).replace("device=meta", f"device={self.device}")
            raise RuntimeError(
                f"tinydynamo.aot: input {index} was traced as {traced} but got {describe(arg)}; "
                "compiled graphs are specialized to their inputs, recompile for new ones"
            )
        if self.mutated and arg.requires_grad and not self.requires_grad and torch.is_grad_enabled():
            raise RuntimeError(
                f"tinydynamo.aot: input {index} is mutated by the graph and now requires grad; "
                "recompile"
            )


@dataclasses.dataclass
class ViewAndMutationMeta:
    """Everything about a traced program's inputs and outputs that its graph does not say."""

    inputs: list  # InputInfo per graph input
    outputs: list  # OutputInfo per flattened user output
    output_spec: TreeSpec  # to rebuild the user's output structure
    mutated_inputs: list  # graph outputs [0, len) are the new values of these inputs
    graph_outputs: list  # meta tensors for the forward graph's outputs
    graph_output_devices: list
    graph_output_requires_grad: list
    traced_with_grad: bool  # False: compiled for inference, calls must not need autograd
    enables_grad: bool  # traced under no_grad, the program switches grad mode on itself
    # 0-d tensor inputs the program read with .item(): input index -> the value baked in.
    scalar_inputs: dict = dataclasses.field(default_factory=dict)
    # The inputs whose gradients the backward graph returns, in order.
    grad_inputs: list = dataclasses.field(default_factory=list)
    # For each of those gradients, the tangents (positions) it is computed from.
    grad_tangents: list = dataclasses.field(default_factory=list)

    @property
    def num_graph_outputs(self):
        return len(self.graph_outputs)

    @property
    def differentiable_outputs(self):
        """Graph outputs that get a tangent: the backward graph's inputs after the saved values."""
        return [i for i, rg in enumerate(self.graph_output_requires_grad) if rg]
