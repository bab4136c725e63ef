"""``tinydynamo.compile``: turning the frame hook on around a call (book chapter 4,
"Guards and the transformed code").

``compile(fn)`` returns a wrapper that installs a ``ConvertFrame`` callback with
``eval_frame.set_eval_frame`` for the duration of the call, and restores the previous callback
after. For an ``nn.Module``, ``compile`` returns an ``OptimizedModule`` that shares the module's
parameters and buffers and compiles ``forward`` through ``__call__``.
"""
import functools
import weakref

import torch

from .. import config
from ..backends import lookup_backend
from . import eval_frame
from .convert_frame import ConvertFrame

# compile() with the same backend and settings gives wrappers that share one ConvertFrame, so that
# compiling a function again reuses the cache entries of its first compile (the hook matches an
# entry by its owner), as torch.compile does. A callback that nothing uses any more goes away.
_callbacks = weakref.WeakValueDictionary()  # (backend, fullgraph, mode, dynamic) -> ConvertFrame
# torch.compile's modes -> tinydynamo's. "reduce-overhead" is CUDA graphs in torch.compile, which
# tinydynamo does not have (nor torch.compile on CPU): it compiles as the default mode does.
MODES = {None: None, "default": None, "reduce-overhead": None, "max-autotune": "max-autotune",
         "max-autotune-no-cudagraphs": "max-autotune"}


def compile(model=None, *, backend="inductor", fullgraph=False, dynamic=None, mode=None, options=None):
    """Compile a function or nn.Module, like ``torch.compile``; also a decorator, with or
    without arguments. The backend is a registered name or a callable ``(gm, example_inputs)``;
    names are looked up at the first call."""
    if model is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph, dynamic=dynamic,
                                 mode=mode, options=options)
    if mode not in MODES:
        raise NotImplementedError(f"tinydynamo has no compile mode {mode!r} (it has {sorted(MODES, key=str)})")
    mode = MODES[mode]
    if options:
        raise NotImplementedError(f"tinydynamo takes no compile options (got {sorted(options)})")
    if not callable(model):
        raise TypeError(f"tinydynamo.compile expects a function or an nn.Module, not {type(model).__name__}")
    # A backend given as a callable is known by its id(): the callback keeps it alive.
    key = (backend if isinstance(backend, str) else id(backend), fullgraph, mode or "default", dynamic)
    callback = _callbacks.get(key)
    if callback is None:
        compiler = with_max_autotune(backend) if mode == "max-autotune" else backend
        callback = _callbacks[key] = ConvertFrame(compiler, fullgraph, dynamic=dynamic)
    if isinstance(model, torch.nn.Module):
        recompile = functools.partial(compile, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode)
        return OptimizedModule(model, with_callback(model, callback), recompile)
    return functools.wraps(model)(with_callback(model, callback))


def root_codes(model):
    """The code objects of what the user compiled: traced even when called without tensors."""
    fn = type(model).forward if isinstance(model, torch.nn.Module) else model
    fn = getattr(fn, "__func__", fn)
    return [fn.__code__] if hasattr(fn, "__code__") else []


def with_max_autotune(backend):
    """``mode="max-autotune"``: the backend compiles with ``config.max_autotune`` set, so the
    Triton autotuner tries more block sizes and num_warps per kernel (chapter 11)."""
    def compile_with_max_autotune(gm, example_inputs):
        with config.patch(max_autotune=True):
            return lookup_backend(backend)(gm, example_inputs)

    return compile_with_max_autotune


def with_callback(fn, callback):
    """``fn`` wrapped so that its calls run with ``callback`` as this thread's frame callback, and
    ``fn``'s code as the callback's root (``ConvertFrame.is_root``) while they run."""
    roots, calls = frozenset(root_codes(fn)), callback.calls

    def compiled(*args, **kwargs):
        outer_roots, calls.roots = getattr(calls, "roots", ()), roots  # a compiled call may nest
        try:
            if not eval_frame.HAS_C_HOOK:
                return eval_frame.run_frame_in_python(callback, fn, args, kwargs)
            previous = eval_frame.set_eval_frame(callback)
            try:
                return fn(*args, **kwargs)
            finally:
                eval_frame.set_eval_frame(previous)
        finally:
            calls.roots = outer_roots

    compiled._tinydynamo_orig = fn  # traced instead of the wrapper when called while tracing
    return compiled


class OptimizedModule(torch.nn.Module):
    """A compiled view of ``mod``: the same parameters, buffers, submodules and state_dict keys,
    and attribute reads, writes and deletions go to ``mod``; calling it runs ``mod`` with the
    frame hook on, so ``mod.forward`` gets compiled."""

    def __init__(self, mod, compiled_call, recompile=None):
        super().__init__()
        # Shared, not copied: an optimizer step or load_state_dict on either one changes both.
        for table in ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"):
            self.__dict__[table] = mod.__dict__[table]
        self.__dict__["_orig_mod"] = mod
        self.__dict__["_compiled_call"] = compiled_call
        self.__dict__["_recompile"] = recompile  # compile(mod) with the same settings, if known

    def __reduce__(self):
        """Pickled (and deep-copied) as the module and the settings it was compiled with: it is
        compiled again when loaded."""
        if self.__dict__["_recompile"] is None:
            raise TypeError("this compiled module was made with its own frame callback: it cannot be pickled")
        return self.__dict__["_recompile"], (self._orig_mod,)

    @property
    def training(self):
        return self.__dict__["_orig_mod"].training if "_orig_mod" in self.__dict__ else True

    @training.setter
    def training(self, mode):
        if "_orig_mod" in self.__dict__:
            self._orig_mod.training = mode

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_orig_mod"], name)

    def __setattr__(self, name, value):
        """``compiled.scale = 5.0`` sets the module's attribute, which its forward reads (and its
        guards check), as torch.compile's OptimizedModule does; names the wrapper's class
        defines (``training``, ``forward``) stay the wrapper's own."""
        if hasattr(type(self), name):
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name):
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def state_dict(self, *args, **kwargs):
        return self._orig_mod.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self._orig_mod.load_state_dict(*args, **kwargs)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"
