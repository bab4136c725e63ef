"""The backends registry: the whole pipeline, readable in one place (Introduction chapter).

A backend has ``torch.compile``'s signature, ``backend(gm, example_inputs) -> callable``:
it receives the FX graph that dynamo captured plus example inputs, and returns a callable
that takes the same flat positional inputs and returns what ``gm`` returns.
"""
import torch

_BACKENDS = {}


def register_backend(fn=None, *, name=None):
    """Register ``fn`` under ``name`` (default: its ``__name__``); usable as a decorator."""
    if fn is None:
        return lambda f: register_backend(f, name=name)
    _BACKENDS[name or fn.__name__] = fn
    return fn


def lookup_backend(backend):
    """Resolve a backend given by name or as a callable."""
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        raise ValueError(f"unknown tinydynamo backend {backend!r}; registered: {sorted(_BACKENDS)}")
    return _BACKENDS[backend]


def list_backends():
    return sorted(_BACKENDS)


@register_backend
def eager(gm: torch.fx.GraphModule, example_inputs):
    """Run the captured FX graph as it is (chapter 3)."""
    return gm.forward
