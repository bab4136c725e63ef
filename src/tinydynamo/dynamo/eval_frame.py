"""The frame hook seen from Python (book chapters 2 and 4).

``set_eval_frame(callback)`` sets this thread's frame callback; ``get_cache_entries(code)``
is the list of ``(owner, guard, new_code)`` entries kept in a code object's ``co_extra``;
``set_skip``/``is_skipped``/``clear_code`` mark code that is never compiled. They come from the C
hook (``tinydynamo._C``, chapter 2). While a callback is set, the hook offers every new frame to
it: a cache entry of this callback whose guard passes runs its new code, otherwise the callback
translates the frame (``convert_frame.py``). ``api.py`` sets the callback around a compiled call,
and ``disable`` unsets it around the compiled graph.

If the C extension is not built, the same protocol runs in Python for the outermost frame
only (``run_frame_in_python``): a readable model of what the hook does.
"""
import functools
import inspect
import threading
import types

import torch

from ..utils import counted_elsewhere, counters

try:
    from .._C import _eval_frame as _C
except ImportError:  # the extension is not built
    _C = None


class PythonHook:
    """The C hook's API written in Python: co_extra is a dict here, and only the outermost frame
    of a compiled call is intercepted (by ``run_frame_in_python``)."""

    SKIP = object()

    def __init__(self):
        self.extra = {}  # code -> list of cache entries, or SKIP
        self.state = threading.local()

    def set_eval_frame(self, callback):
        previous = getattr(self.state, "callback", None)
        self.state.callback = callback
        return previous

    def call_with_callback(self, callback, fn, *args, **kwargs):
        previous = self.set_eval_frame(callback)
        try:
            return fn(*args, **kwargs)
        finally:
            self.set_eval_frame(previous)

    def get_cache_entries(self, code):
        if self.extra.get(code) is self.SKIP:
            raise RuntimeError(f"{code!r} is marked SKIP; clear_code() it first")
        return self.extra.setdefault(code, [])

    def set_skip(self, code):
        self.extra[code] = self.SKIP

    def clear_code(self, code):
        self.extra.pop(code, None)

    def is_skipped(self, code):
        return self.extra.get(code) is self.SKIP


def use_hook(hook):
    """Make ``hook`` (the C extension module, or a PythonHook) the one this package talks to."""
    global HAS_C_HOOK, set_eval_frame, get_cache_entries, set_skip, clear_code, is_skipped
    HAS_C_HOOK = not isinstance(hook, PythonHook)
    set_eval_frame, get_cache_entries = hook.set_eval_frame, hook.get_cache_entries
    set_skip, clear_code, is_skipped = hook.set_skip, hook.clear_code, hook.is_skipped
    return hook


HOOK = use_hook(_C if _C is not None and hasattr(_C, "take_cache_hits") else PythonHook())
if HAS_C_HOOK:
    counted_elsewhere["cache_hits"] = _C.take_cache_hits  # the hook counts its hits (stats())


def run_frame_in_python(callback, fn, args, kwargs):
    """What the C hook does with the frame of ``fn(*args, **kwargs)``, written in Python."""
    if isinstance(fn, torch.nn.Module):
        fn = fn.forward  # (module hooks do not run on this path)
    func, args = (fn.__func__, (fn.__self__, *args)) if isinstance(fn, types.MethodType) else (fn, args)
    if not isinstance(func, types.FunctionType) or is_skipped(func.__code__):
        return func(*args, **kwargs)
    code = func.__code__
    bound = inspect.signature(func, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    values = tuple(bound.arguments[name] for name in code.co_varnames[:len(bound.arguments)])
    cells = tuple(func.__closure__ or ())
    for owner, guard, new_code in list(get_cache_entries(code)):
        if owner is callback and guard(*values, *cells):
            counters["cache_hits"] += 1
            return run_code(func, new_code, values)
    new_code = callback(func, values)
    if new_code is None:
        return func(*args, **kwargs)
    return run_code(func, new_code, values)


def disable(fn):
    """``fn`` run with no frame callback: what the backend compiled runs as plain Python, so
    the hook never tries to translate the graph's own code (or a generated kernel's). It is the
    callback of ``HOOK`` (the C hook, when the extension is built) that is unset, even while
    another hook is in use: a learner's hook in Python may sit on top of it (``course/a02.py``)."""
    return functools.partial(HOOK.call_with_callback, None, fn)


def run_code(func, new_code, values):
    replacement = types.FunctionType(new_code, func.__globals__, func.__name__, None, func.__closure__)
    return replacement(*values)
