"""Which dimensions are traced as symbols (book chapter 12, "Dynamic shapes").

torch.compile's policy, which tinydynamo follows:

- ``dynamic=None`` (the default), *automatic dynamic*: the first compile of a frame specialises
  every size (and every int argument or int in a closure cell, which is treated like a size).
  Each compile remembers the sizes of the frame's input tensors, by source, in the
  code object's ``FrameState``. When a later call fails a guard and the frame is compiled again,
  every dimension whose size differs from one remembered is traced as a symbol from then on, so
  a frame compiles at most twice over changing sizes.
- ``dynamic=True``: every dimension is a symbol from the first compile.
- ``dynamic=False``: every size is specialised.
- ``mark_dynamic(t, dim)`` makes a dimension of ``t`` a symbol whatever the policy, and
  ``mark_static(t, dim)`` makes it specialised.

Strides follow the same policy, per input tensor: a tensor that is not dense (a column
``tokens[:, -1]`` of a growing buffer) whose strides differ from those an earlier compile saw
gets a symbol for each stride from then on, as torch.compile's automatic dynamic gives it.

In every case sizes 0 and 1 are specialised (broadcasting treats them differently from all
others), and so are parameters and the tensors of ``nn.Module`` attributes (buffers), whose
sizes do not change from call to call.
"""
import dataclasses
import weakref

import torch

from .._logging import trace_artifact

DYNAMIC_DIMS = "_tinydynamo_dynamic_dims"
STATIC_DIMS = "_tinydynamo_static_dims"


def mark_dynamic(tensor, dim):
    """Trace dimension ``dim`` (an int or a list of ints) of ``tensor`` as a symbol."""
    _mark(tensor, dim, DYNAMIC_DIMS)


def mark_static(tensor, dim):
    """Specialise dimension ``dim`` (an int or a list of ints) of ``tensor``, whatever the policy."""
    _mark(tensor, dim, STATIC_DIMS)


def _mark(tensor, dim, attribute):
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        if not -tensor.dim() <= d < tensor.dim():
            raise IndexError(f"dimension {d} is out of range for a tensor of {tensor.dim()} dimensions")
    marked = getattr(tensor, attribute, set())
    setattr(tensor, attribute, marked | {d % tensor.dim() for d in dims})


@dataclasses.dataclass
class FrameState:
    """What earlier compiles of one code object saw: per source, the sizes of each dimension,
    with ``None`` for a dimension seen with different sizes (automatic dynamic)."""

    sizes: dict = dataclasses.field(default_factory=dict)

    def update(self, source_name, shape):
        """Remember ``shape``; return the dimensions that changed size just now."""
        seen = self.sizes.get(source_name)
        if seen is None or len(seen) != len(shape):
            self.sizes[source_name] = tuple(shape)
            return []
        changed = [d for d, (old, new) in enumerate(zip(seen, shape)) if old is not None and old != new]
        self.sizes[source_name] = tuple(None if old != new else old for old, new in zip(seen, shape))
        return changed

    def dynamic_dims(self, source_name):
        return {d for d, size in enumerate(self.sizes.get(source_name, ())) if size is None}


_frame_states = weakref.WeakKeyDictionary()  # code object -> FrameState
_frame_strides = weakref.WeakKeyDictionary()  # code object -> {source name: strides, or None once changed}


def frame_state(code):
    return _frame_states.setdefault(code, FrameState())


def reset():
    """Forget the sizes and strides earlier compiles saw (``tinydynamo.reset()``)."""
    _frame_states.clear()
    _frame_strides.clear()


def is_dynamic_int(policy, code, source, value):
    """Whether the int argument ``value`` (read at ``source`` by ``code``) is traced as a symbol:
    like a size, once it has changed (or from the start with ``dynamic=True``), if it is >= 2."""
    state = frame_state(code)
    if state.update(source.name(), (value,)):
        trace_artifact("dynamic", lambda: f"{source.name()} changed value (now {value}) in "
                       f"{code.co_qualname}: it is dynamic from now on")
    if value < 2 or policy is False:
        return False
    return policy is True or bool(state.dynamic_dims(source.name()))


def dynamic_dims(policy, code, source, tensor, is_module_state):
    """The dimensions of ``tensor`` (read at ``source`` by ``code``) to trace as symbols."""
    state = frame_state(code)
    changed = state.update(source.name(), tensor.shape)
    for d in changed:
        trace_artifact("dynamic", lambda: f"{source.name()} dimension {d} changed size "
                       f"(now {tensor.shape[d]}) in {code.co_qualname}: it is dynamic from now on")
    if isinstance(tensor, torch.nn.Parameter) or is_module_state:
        candidates = set()
    elif policy is True:
        candidates = set(range(tensor.dim()))
    elif policy is False:
        candidates = set()
    else:
        candidates = state.dynamic_dims(source.name())
    candidates |= getattr(tensor, DYNAMIC_DIMS, set())
    candidates -= getattr(tensor, STATIC_DIMS, set())
    return {d for d in candidates if tensor.shape[d] >= 2}


def dynamic_strides(policy, code, source, tensor, is_module_state):
    """Whether the strides of ``tensor`` (read at ``source`` by ``code``) are traced as symbols:
    under automatic dynamic, once they have differed from those an earlier compile saw."""
    seen = _frame_strides.setdefault(code, {})
    name, strides = source.name(), tensor.stride()
    if name in seen and seen[name] not in (None, strides):
        trace_artifact("dynamic", lambda: f"{name} changed strides (now {strides}) in "
                       f"{code.co_qualname}: they are dynamic from now on")
        seen[name] = None
    seen.setdefault(name, strides)
    if policy is not None or is_module_state or isinstance(tensor, torch.nn.Parameter):
        return False
    return seen[name] is None
