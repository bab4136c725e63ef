"""ConvertFrame: what happens on a cache miss (book chapter 4,
"Guards and the transformed code").

The frame hook calls a ``ConvertFrame`` object (one per backend and settings of ``compile``,
shared by the wrappers it made) with the function and the frame's argument values when no cache
entry of this callback accepts the frame. It

1. skips code that must never be compiled (``trace_rules.skip_reason``: torch, tinydynamo, the
   standard library, generators...; the user's own code run by exec or ``python -c`` is
   compiled): ``set_skip`` makes the hook ignore it;
2. translates the frame (``translate``): trace, compile the graph, build guards and new code;
3. appends ``(self, guard, new_code)`` to the code object's cache and returns ``new_code``,
   which the hook runs in place of the frame.

Where an instruction cannot be captured, the translator breaks the graph there (chapter 5).
If a frame cannot be captured at all (``Unsupported``: a break inside a loop or a try block) it
runs eagerly; a cache entry holding the *original* bytecode, guarded by what tracing had checked
so far, keeps it from being retranslated on every call. With ``fullgraph=True`` the error goes
to the user instead.
Past ``config.cache_size_limit`` entries per code object, the frame runs eagerly (with a warning).
As in Dynamo, only the entries made for the same objects that the guards check by id() count:
a layer's ``forward`` breaks its graph and compiles once for each of the model's 12 layers, with an
ID_MATCH guard on its ``self``, and that is no recompile. ``config.accumulated_cache_size_limit``
bounds all entries of a code object.

Threads: the callback runs under ``compile_lock``, so when several threads make a first call at
once, one compiles and the others, once they have the lock, find its new entry and run it.
"""
import dataclasses
import dis
import inspect
import io
import threading
import types
import warnings
import weakref

import torch

from .. import config
from ..backends import lookup_backend
from .._logging import trace_artifact
from ..symbolic_shapes import ConstraintViolationError
from ..utils import clear_counters, compile_lock, counters, unseen_by_saved_tensors_hooks
from . import automatic_dynamic, eval_frame, trace_rules
from .bytecode import assemble
from .ddp_optimizer import DDPOptimizer, active_ddp_module
from .exc import BackendCompilerFailed, RestartAnalysis, SkipFrame, Unsupported
from .guards import Guard, GuardBuilder, same_id_matched_args, watch_ids
from .output_graph import OutputGraph, installed_globals
from .resume_execution import ContinueExecutionCache
from .symbolic_convert import InstructionTranslator, decoded

touched_codes = weakref.WeakSet()  # every code object whose co_extra we wrote (for reset)


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
    graph_break: Unsupported | None = None  # why the graph was broken, if it was (chapter 5)
    graph_cut: bool = False  # whether a graph was compiled at the break: ops came before it


def dis_text(code):
    out = io.StringIO()
    dis.dis(code, file=out, depth=0)
    return out.getvalue()


def translate(func, args, backend, one_graph=False, dynamic=None, nested=False):
    """Trace ``func`` called with the frame's ``args``; return a CompiledFrame. ``nested``: the
    frame is not a compiled function's own, but one that an eager part of it calls.

    If the trace meets an instruction it cannot capture, it starts again from the top and this
    time breaks the graph just before that instruction (chapter 5); with ``one_graph`` the
    Unsupported error is raised instead. On Unsupported, the exception carries ``.guard``: the
    guards checked before tracing stopped (the same inputs would stop it again)."""
    code = func.__code__
    trace_artifact("bytecode", lambda: f"original bytecode of {describe(code)}\n{dis_text(code)}")
    try:
        output, tracer = trace(func, args, backend, one_graph, dynamic, nested)
    except RestartAnalysis as restart:
        output, tracer = trace(func, args, backend, one_graph, dynamic, nested, break_at=restart)
    instructions = tracer.output_instructions
    new_code = assemble(instructions, code, co_varnames=local_names(code, instructions), co_cellvars=(),
                        **positional_signature(code, len(args)))
    guard = GuardBuilder(code.co_varnames[:len(args)], code.co_freevars, func.__globals__).build(output.guards)
    trace_artifact("bytecode", lambda: f"transformed bytecode of {describe(code)}\n{dis_text(new_code)}")
    trace_artifact("guards", lambda: f"guards of {describe(code)}\n{guard.source}")
    return CompiledFrame(new_code, guard, tracer.graph_break, tracer.graph_cut)


def trace(func, args, backend, one_graph, dynamic, nested, break_at=None):
    """One attempt at tracing the frame: its OutputGraph and InstructionTranslator."""
    code = func.__code__
    # Under autocast, sizes stay static: AOT autograd traces symbolic sizes on meta tensors,
    # which autocast does not cast.
    output = OutputGraph(code, func.__globals__, backend, False if torch._C._is_any_autocast_enabled() else dynamic)
    if nested:  # its compiled code must not run under a checkpoint's hooks either
        output.add_guard(Guard(None, "STATE_QUERY", (under_saved_tensors_hooks, False)))
    tracer = InstructionTranslator(func, args, output, one_graph, break_at)
    grad_mode = torch.is_grad_enabled()
    try:
        with unseen_by_saved_tensors_hooks():
            tracer.run()
    except Unsupported as e:
        e.guard = GuardBuilder(code.co_varnames[:len(args)], code.co_freevars, func.__globals__).build(output.guards)
        raise
    finally:
        torch.set_grad_enabled(grad_mode)  # `with torch.no_grad()` switched it while tracing
        output.restore_autocast()  # and `with torch.autocast(...)` the autocast state
    return output, tracer


def under_saved_tensors_hooks():
    """Whether ``saved_tensors_hooks`` are on: torch.utils.checkpoint's, while it runs its function.

    A nested frame that runs under them is not compiled, nor is its compiled code run: the
    checkpoint runs the function again in the backward, outside the compiled call, so as its
    original code, and pairs what that run saves with what the first run saved, one by one. A
    compiled first run saves other tensors, and the gradients would silently be wrong."""
    return torch._C._autograd._top_saved_tensors_default_hooks(False) is not None


def local_names(code, instructions):
    """The transformed frame's locals: the original ones, then the ones its new code adds
    (``___graph_outputs``; at a graph break, ``___stack0``... and the contents of cells). On 3.13
    a LOAD_FAST may also push a closure cell (a free variable), which is no new local."""
    names = list(code.co_varnames)
    for inst in instructions:
        if inst.opname in ("LOAD_FAST", "STORE_FAST") and inst.argval not in names \
                and inst.argval not in code.co_freevars:
            names.append(inst.argval)
    return tuple(names)


class ConvertFrame:
    """The callback given to ``set_eval_frame``; also the owner of the cache entries it makes."""

    def __init__(self, backend, fullgraph=False, dynamic=None):
        self.backend = backend  # a name or a callable; names are resolved at the first compile
        self.fullgraph = fullgraph
        self.dynamic = dynamic  # None (automatic dynamic), True or False: see automatic_dynamic
        self.calls = threading.local()  # .roots: the root codes of the compiled call this thread runs
        self.compiled = []  # CompiledFrame of every successful translation
        self.break_reasons = []  # Unsupported errors: of graph breaks, and of frames that ran eagerly
        self.codes = weakref.WeakSet()  # codes holding entries of this callback
        self.warned = weakref.WeakSet()

    def resolve_backend(self):
        return lookup_backend(self.backend)

    def frame_backend(self):
        """The backend for the frame being converted: inside DistributedDataParallel's forward,
        the DDPOptimizer splits its graphs at DDP's gradient buckets (chapter 14)."""
        ddp = active_ddp_module()
        if ddp is None or not config.optimize_ddp:
            return self.resolve_backend()
        return DDPOptimizer(ddp, self.resolve_backend())

    def __call__(self, func, args):
        with compile_lock:  # threads take turns here (see the module docstring)
            counters["frames_seen"] += 1
            code = func.__code__
            if trace_rules.skip_reason(code) is not None:
                eval_frame.set_skip(code)
                touched_codes.add(code)
                return None
            if trace_rules.inside_functorch_transform():
                return None  # vmap/grad call it with batched tensors: runs as it is (this call only)
            entries = eval_frame.get_cache_entries(code)
            touched_codes.add(code)
            self.codes.add(code)
            mine = [entry for entry in entries if entry[0] is self]
            added_meanwhile = passing_entry(mine, func, args)  # by another thread, while this one waited
            if added_meanwhile is not None:
                counters["cache_hits"] += 1
                return added_meanwhile[2]
            same_objects = [entry for entry in mine if same_id_matched_args(entry[1], args)]
            for limit, held in (("cache_size_limit", same_objects), ("accumulated_cache_size_limit", mine)):
                if len(held) >= getattr(config, limit):
                    self.give_up(code, entries, failed_guards(held[-1], func, args), limit)
                    return None
            if mine:
                counters["recompiles"] += 1
                trace_artifact("recompiles", lambda: f"recompiling {describe(code)}; failed guards of "
                               f"its latest entry: {failed_guards(mine[-1], func, args)}")
            return self.convert(func, args, code, entries)

    def is_root(self, code):
        """Whether ``code`` (or the function it resumes) is what the running call compiled: the
        function, or the module's ``forward``. The callback is shared by every ``compile`` with the
        same settings, and the roots are those of this call only: after ``compile(nn.Linear(...))``,
        the Linear layers inside another compiled model are still nested frames."""
        return ContinueExecutionCache.original(code, 0)[0] in getattr(self.calls, "roots", ())

    def give_up(self, code, entries, failed, limit="cache_size_limit"):
        """Past the cache size limit: warn once, and run the frame eagerly from now on."""
        if code not in self.warned:
            self.warned.add(code)
            warnings.warn(f"tinydynamo: {describe(code)} reached config.{limit}="
                          f"{getattr(config, limit)}; last failed guard: {failed[0] if failed else None}; "
                          "it runs eagerly from now on", stacklevel=2)
        entries.append((self, always, eager_code(code)))
        counters["fallbacks"] += 1

    def convert(self, func, args, code, entries):
        nested = not self.is_root(code)
        if nested and not any(has_tensor(arg, set()) for arg in args) and not reads_a_tensor_global(func):
            return None  # nothing to compile, as Dynamo's has_tensor_in_frame decides
        if nested and under_saved_tensors_hooks():
            return None
        try:
            frame = translate(func, args, self.frame_backend(), one_graph=self.fullgraph, dynamic=self.dynamic,
                              nested=nested)
        except Unsupported as e:
            if self.fullgraph:
                raise
            self.break_reasons.append(e)
            counters["graph_breaks"] += 1
            counters["fallbacks"] += 1
            trace_artifact("graph_breaks", lambda: f"{describe(code)} runs eagerly: {e}")
            self.add_entry(entries, e.guard, eager_code(code))
            return None
        except SkipFrame as e:
            trace_artifact("graph_breaks", lambda: f"{describe(code)} is skipped: {e}")
            eval_frame.set_skip(code)
            return None
        except BackendCompilerFailed as e:
            return self.backend_failed(code, entries, e.inner)
        except ConstraintViolationError:  # the user's mark_dynamic contradicts the code: their error
            raise
        except Exception as e:  # a bug of the translator, met outside an instruction's handler
            if config.strict or self.fullgraph:
                raise
            counters["internal_errors"] += 1
            self.run_eagerly(code, entries, f"internal error while translating it: {type(e).__name__}: {e}")
            return None
        self.add_entry(entries, frame.guard, frame.code)
        counters["frames_compiled"] += 1
        self.compiled.append(frame)
        if frame.graph_break is not None:
            self.break_reasons.append(frame.graph_break)
        return frame.code

    def backend_failed(self, code, entries, error):
        """The backend raised ``error``: a NotImplementedError (something it does not support)
        makes the frame run eagerly; another error does so with ``config.suppress_errors``."""
        if isinstance(error, NotImplementedError) and not self.fullgraph:
            message = "\n".join(line for line in str(error).splitlines() if not line.startswith("Use tlparse"))
            self.run_eagerly(code, entries, f"tinydynamo cannot compile it: {message}")
            return None
        if not config.suppress_errors:
            raise error
        self.run_eagerly(code, entries, f"error while compiling it: {type(error).__name__}: {error}")
        return None

    def run_eagerly(self, code, entries, reason):
        """From now on, run ``code`` eagerly; warn once, and let explain() report why."""
        warnings.warn(f"tinydynamo: {describe(code)} runs eagerly: {reason}", stacklevel=2)
        error = Unsupported(reason)
        error.add_frame(code.co_filename, code.co_firstlineno, code.co_name)
        self.break_reasons.append(error)
        entries.append((self, always, eager_code(code)))
        counters["fallbacks"] += 1
        trace_artifact("graph_breaks", lambda: f"{describe(code)} runs eagerly: {reason}")

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


def has_tensor(value, seen, depth=0):
    """Whether ``value`` holds a tensor or a module: itself, in a container, or in an object's
    attributes. A frame called with none (a config's ``__setattr__``, a helper on strings) is run
    as it is: nothing in it could become a graph."""
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return True
    if isinstance(value, (str, int, float, bool, type(None), type, types.ModuleType)) or id(value) in seen \
            or depth > 4:  # a module's attributes are the module's, not the call's (some warn when read)
        return False
    seen.add(id(value))
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(has_tensor(v, seen, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(has_tensor(v, seen, depth + 1) for v in value.values())
    attributes = getattr(value, "__dict__", None)
    return isinstance(attributes, dict) and any(has_tensor(v, seen, depth + 1) for v in attributes.values())


def reads_a_tensor_global(func):
    """Whether the code names a global that holds a tensor or a module: ``update_ema(step)`` under
    ``@torch.no_grad()`` works on a global model."""
    return any(has_tensor(func.__globals__[name], set()) for name in func.__code__.co_names
               if name in func.__globals__)


def passing_entry(entries, func, args):
    """The first of these cache entries whose guard passes for the frame, or None."""
    cells = func.__closure__ or ()
    return next((entry for entry in entries if entry[1](*args, *cells)), None)


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
    """Forget every compiled frame, skip mark, resume function, installed global and counter."""
    with compile_lock:
        for code in list(touched_codes):
            eval_frame.clear_code(code)
        touched_codes.clear()
        for f_globals, name in installed_globals:
            f_globals.pop(name, None)
        installed_globals.clear()
        decoded.cache_clear()
        ContinueExecutionCache.clear()
        automatic_dynamic.reset()
        clear_counters()
