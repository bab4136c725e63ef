"""Kernel files: written once into the cache directory, then imported (chapter 11).

Like TorchInductor's ``PyCodeCache``: the file name is a hash of the source, so a second process
that generates the same kernel imports the file that is already there. Triton needs a real file:
both its compiler and its interpreter read the kernel's source back with ``inspect``.

``triton.jit`` decides when it runs whether it makes a GPU kernel or an interpreted one (Triton's
``TRITON_INTERPRET`` knob), so a kernel file is imported with that knob set the way its tensors
need: the interpreter for CPU tensors. Triton's own library functions written in Triton
(``tl.sum``, ``tl.max``, ``tl.zeros``...) were decorated once, when triton was imported; unless
``TRITON_INTERPRET=1`` was set then, they are GPU functions that an interpreted kernel cannot
call, and :func:`interpreted_library` stands in interpreted versions while such a kernel runs.
"""
import contextlib
import hashlib
import importlib.util
import os
import tempfile
import threading

import triton
import triton.language as tl

from ... import config
from ...utils import counters

_loaded = {}  # (source hash, interpret) -> module, for this process


def source_hash(source):
    return hashlib.sha256(source.encode()).hexdigest()[:32]


def kernel_path(source):
    key = source_hash(source)
    return os.path.join(config.cache_dir, "triton", key[:2], f"{key}.py")


def clear():
    """Forget the kernel modules imported in this process (the files on disk stay, as a cache)."""
    _loaded.clear()


def load_kernel(source, name, interpret):
    """The ``@triton.jit`` function ``name`` of the kernel file ``source``; run by the
    interpreter if ``interpret``."""
    key = (source_hash(source), interpret)
    if key not in _loaded:
        path = kernel_path(source)
        if not os.path.exists(path):
            _write_atomically(path, source)
        _loaded[key] = _import(path, f"tinydynamo_triton_{key[0]}{'_interpreted' if interpret else ''}",
                               interpret)
        counters["triton_kernels_loaded"] += 1
    return getattr(_loaded[key], name)


def _import(path, module_name, interpret):
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    with interpreter_mode(interpret):
        spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def interpreter_mode(interpret):
    """``@triton.jit`` inside this block makes interpreted functions if ``interpret``."""
    with triton.knobs.runtime.scope():
        triton.knobs.runtime.interpret = interpret
        yield


_interpreted_versions = {}  # Triton library JITFunction -> its InterpretedFunction
# interpreted_library patches modules, which every thread sees: one interpreted launch at a time.
_interpreter_lock = threading.RLock()


@contextlib.contextmanager
def interpreted_library():
    """Within this block, Triton's library functions written in Triton are interpreted ones.

    On exit, every attribute of ``triton.language`` and its submodules is put back as it was:
    the interpreter patches ``triton.language.core`` when a kernel calls a library function and
    does not undo it, which would break a later GPU compilation in the same process. (Names it
    adds stay: its rewritten functions, which it caches, use them.) Threads take turns: the
    modules are shared, so one thread's exit would otherwise undo another's patches.
    """
    import triton.experimental.gluon  # noqa: F401  (a launch imports it; it must see the originals)
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    modules = (tl, tl.core, tl.standard, tl.math)
    with _interpreter_lock:
        saved = [(module, dict(vars(module))) for module in modules]
        for module in modules:
            for name, value in list(vars(module).items()):
                if isinstance(value, JITFunction):
                    if value not in _interpreted_versions:
                        _interpreted_versions[value] = InterpretedFunction(value.fn)
                    setattr(module, name, _interpreted_versions[value])
        try:
            yield
        finally:
            for module, attributes in saved:
                for name, value in attributes.items():
                    if vars(module).get(name) is not value:
                        setattr(module, name, value)


def _write_atomically(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
