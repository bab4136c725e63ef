"""ConvertFrame: what happens on a cache miss (book chapter 4,
"Guards and the transformed code").

The frame hook calls a ``ConvertFrame`` object (one per compiled wrapper) with the function and
the frame's argument values when no cache entry of this callback accepts the frame. It

1. skips code that must never be compiled (torch, tinydynamo, the standard library,
   FX-generated code, generators, comprehension bodies): ``set_skip`` makes the hook ignore it;
2. translates the frame (``translate``): trace, compile the graph, build guards and new code;
3. appends ``(self, guard, new_code)`` to the code object's cache and returns ``new_code``,
   which the hook runs in place of the frame.

If the frame cannot be captured (``Unsupported``) it runs eagerly; a cache entry holding the
*original* bytecode, guarded by what tracing had checked so far, keeps it from being
retranslated on every call. With ``fullgraph=True`` the error goes to the user instead.
Past ``config.cache_size_limit`` entries per code object, the frame runs eagerly (with a warning).
"""
import dataclasses
import dis
import inspect
import io
import os
import sysconfig
import warnings
import weakref

import torch

import tinydynamo

from .. import config
from .._logging import trace_artifact
from ..utils import counters
from . import eval_frame
from .bytecode import assemble
from .exc import Unsupported
from .guards import GuardBuilder, watch_ids
from .output_graph import OutputGraph
from .symbolic_convert import InstructionTranslator

GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | \
    inspect.CO_ITERABLE_COROUTINE
SKIPPED_NAMES = ("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<module>")
SKIPPED_PREFIXES = ("<eval_with_key>", "<tinydynamo", "<frozen")
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
TORCH_MODULES_DIR = os.path.join(TORCH_DIR, "nn", "modules") + os.sep
TINYDYNAMO_DIR = os.path.dirname(tinydynamo.__file__) + os.sep
# tinydynamo's own user-level code: the model zoo, benchmark workloads, assignment corpora.
USER_CODE_DIRS = tuple(os.path.join(TINYDYNAMO_DIR, d) + os.sep for d in ("testing", "bench", "course"))
STDLIB_DIRS = tuple({sysconfig.get_paths()["stdlib"] + os.sep, sysconfig.get_paths()["platstdlib"] + os.sep})

touched_codes = weakref.WeakSet()  # every code object whose co_extra we wrote (for reset)


def skip_reason(code):
    """Why frames of ``code`` are never compiled, or None."""
    file = code.co_filename
    if code.co_flags & GENERATOR_FLAGS:
        return "generators and coroutines are not compiled"
    if code.co_name in SKIPPED_NAMES:
        return f"{code.co_name} code"
    if file.startswith(SKIPPED_PREFIXES):
        return "generated code"
    if file.startswith(TORCH_DIR):
        return None if file.startswith(TORCH_MODULES_DIR) and code.co_name == "forward" else "torch"
    if file.startswith(TINYDYNAMO_DIR) and not file.startswith(USER_CODE_DIRS):
        return "tinydynamo"
    if file.startswith(STDLIB_DIRS) and "site-packages" not in file:
        return "the standard library"
    return None


def num_args(code):
    """How many values the hook passes: positional, keyword-only, *args, **kwargs."""
    return code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)


def positional_signature(code, n):
    """``code.replace`` arguments making every one of the n parameters plain positional."""
    flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    return dict(co_argcount=n, co_posonlyargcount=0, co_kwonlyargcount=0, co_flags=flags)


def eager_code(code):
    """The original bytecode with the hook's calling convention: "run this frame as it is"."""
    return code.replace(**positional_signature(code, num_args(code)))


def describe(code):
    return f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"


@dataclasses.dataclass
class CompiledFrame:
    """One successful translation: what the hook runs, when, and what it was made from."""

    code: object  # the transformed code object
    guard: object  # the guard function (with .source)


def dis_text(code):
    out = io.StringIO()
    dis.dis(code, file=out, depth=0)
    return out.getvalue()


def translate(func, args, backend):
    """Trace ``func`` called with the frame's ``args``; return a CompiledFrame.

    On Unsupported, the exception carries ``.guard``: the guards checked before tracing
    stopped (the same inputs would stop it again)."""
    code = func.__code__
    trace_artifact("bytecode", lambda: f"original bytecode of {describe(code)}\n{dis_text(code)}")
    output = OutputGraph(code, func.__globals__, backend)
    tracer = InstructionTranslator(func, args, output)
    builder = GuardBuilder(code.co_varnames[:len(args)], code.co_freevars, func.__globals__)
    grad_mode = torch.is_grad_enabled()
    try:
        tracer.run()
        if torch.is_grad_enabled() != grad_mode:
            raise Unsupported("the frame changes grad mode and does not restore it")
    except Unsupported as e:
        e.guard = builder.build(output.guards)
        raise
    finally:
        torch.set_grad_enabled(grad_mode)  # `with torch.no_grad()` switched it while tracing
    new_code = assemble(tracer.output_instructions, code, co_varnames=code.co_varnames + ("___graph_outputs",),
                        co_cellvars=(), **positional_signature(code, len(args)))
    guard = builder.build(output.guards)
    trace_artifact("bytecode", lambda: f"transformed bytecode of {describe(code)}\n{dis_text(new_code)}")
    trace_artifact("guards", lambda: f"guards of {describe(code)}\n{guard.source}")
    return CompiledFrame(new_code, guard)


class ConvertFrame:
    """The callback given to ``set_eval_frame``; also the owner of the cache entries it makes."""

    def __init__(self, backend, fullgraph=False):
        self.backend = backend  # a name or a callable; names are resolved at the first compile
        self.fullgraph = fullgraph
        self.compiled = []  # CompiledFrame of every successful translation
        self.break_reasons = []  # Unsupported errors of frames that ran eagerly
        self.codes = weakref.WeakSet()  # codes holding entries of this callback
        self.warned = weakref.WeakSet()

    def resolve_backend(self):
        from ..backends import lookup_backend

        return lookup_backend(self.backend)

    def __call__(self, func, args):
        counters["frames_seen"] += 1
        code = func.__code__
        if skip_reason(code) is not None:
            eval_frame.set_skip(code)
            touched_codes.add(code)
            return None
        entries = eval_frame.get_cache_entries(code)
        touched_codes.add(code)
        self.codes.add(code)
        mine = [entry for entry in entries if entry[0] is self]
        if len(mine) >= config.cache_size_limit:
            self.give_up(code, entries, failed_guards(mine[-1], func, args))
            return None
        if mine:
            counters["recompiles"] += 1
            trace_artifact("recompiles", lambda: f"recompiling {describe(code)}; failed guards of its "
                           f"latest entry: {failed_guards(mine[-1], func, args)}")
        return self.convert(func, args, code, entries)

    def give_up(self, code, entries, failed):
        """Past the cache size limit: warn once, and run the frame eagerly from now on."""
        if code not in self.warned:
            self.warned.add(code)
            warnings.warn(f"tinydynamo: {describe(code)} reached config.cache_size_limit="
                          f"{config.cache_size_limit}; last failed guard: {failed[0] if failed else None}; "
                          "it runs eagerly from now on", stacklevel=2)
        entries.append((self, always, eager_code(code)))
        counters["fallbacks"] += 1

    def convert(self, func, args, code, entries):
        try:
            frame = translate(func, args, self.resolve_backend())
        except Unsupported as e:
            if self.fullgraph:
                raise
            self.break_reasons.append(e)
            counters["fallbacks"] += 1
            trace_artifact("graph_breaks", lambda: f"{describe(code)} runs eagerly: {e}")
            self.add_entry(entries, e.guard, eager_code(code))
            return None
        except Exception as e:
            if not config.suppress_errors:
                raise
            warnings.warn(f"tinydynamo: error while compiling {describe(code)}, running it eagerly: "
                          f"{type(e).__name__}: {e}")
            entries.append((self, always, eager_code(code)))
            counters["fallbacks"] += 1
            return None
        self.add_entry(entries, frame.guard, frame.code)
        counters["frames_compiled"] += 1
        self.compiled.append(frame)
        return frame.code

    def add_entry(self, entries, guard, new_code):
        entry = (self, guard, new_code)
        entries.append(entry)
        watch_ids(guard, lambda: remove_entry(entries, entry))

    def forget(self):
        """Remove every cache entry this callback made."""
        for code in list(self.codes):
            if not eval_frame.is_skipped(code):
                entries = eval_frame.get_cache_entries(code)
                entries[:] = [e for e in entries if e[0] is not self]


def failed_guards(entry, func, args):
    """Which checks of a cache entry's guard these arguments fail (for logs and warnings)."""
    guard = entry[1]
    return guard.failures(*args, *(func.__closure__ or ())) if hasattr(guard, "failures") else []


def always(*args):
    """The guard of "run it eagerly" entries that nothing can invalidate."""
    return True


def remove_entry(entries, entry):
    """An object a guard checks by id() died: its id may be reused, so drop the entry."""
    if entry in entries:
        entries.remove(entry)


def reset():
    """Forget every compiled frame, skip mark, installed global and counter."""
    from .output_graph import installed_globals
    from .symbolic_convert import decoded

    for code in list(touched_codes):
        eval_frame.clear_code(code)
    touched_codes.clear()
    for f_globals, name in installed_globals:
        f_globals.pop(name, None)
    installed_globals.clear()
    decoded.cache_clear()
    counters.clear()
