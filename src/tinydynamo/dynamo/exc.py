"""Errors raised while translating a frame (book chapter 3, "Symbolic execution").

``Unsupported`` means "tinydynamo cannot capture this construct": the translator then breaks
the graph there (chapter 5), or, where it cannot, the frame runs eagerly (with
``fullgraph=True``, the user gets the error). Its message names the construct and the user's
``file:line``, and ``user_stack`` lists the inlined calls that led there.

``SkipFrame`` means the frame has nothing to compile.

An error of any other type raised while translating is a bug of the translator (or a user
error that eager would raise too). ``internal_error`` turns it into an Unsupported that names the
instruction and the original error, so that it becomes a graph break like any other (unless
``config.strict``). ``BackendCompilerFailed`` carries an error of the backend through the
translator untouched: backend failures follow ``config.suppress_errors``, not that rule.

``RestartAnalysis`` is how a graph break starts: tracing stops, and the frame is traced again
from the top, this time stopping cleanly just before the instruction that failed.
"""


class Unsupported(RuntimeError):
    """A construct tinydynamo does not trace; ``reason`` says which, ``user_stack`` where."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason
        self.user_stack = []  # [(filename, lineno, function name)], outermost call first
        # translator -> the instruction of its frame where the graph breaks for this error, when
        # that is not the one being traced (an exception caught and re-raised, a future that escapes)
        self.first_seen = {}

    def add_frame(self, filename, lineno, name):
        """Record one more (outer) frame; the innermost is added first."""
        self.user_stack.insert(0, (filename, lineno, name))

    @property
    def filename(self):
        return self.user_stack[-1][0] if self.user_stack else None

    @property
    def lineno(self):
        return self.user_stack[-1][1] if self.user_stack else None

    def __str__(self):
        if not self.user_stack:
            return self.reason
        where = "\n".join(f"  {name} at {file}:{line}" for file, line, name in self.user_stack)
        return f"{self.reason}\n  (at {self.filename}:{self.lineno})\nuser stack, outermost first:\n{where}"


def unsupported(reason):
    """Raise :class:`Unsupported` (a function, so handlers read ``unsupported("...")``)."""
    raise Unsupported(reason)


class TracedException(Unsupported):
    """An exception that the program raises at trace time (a missing key, a missing attribute).
    A ``try`` block of the frame, or of a caller being inlined, that catches it runs its handler,
    as Python would (``Mapping.get`` catching the KeyError of ``__getitem__``); uncaught, it is
    an Unsupported like any other."""

    def __init__(self, exception, reason=None):
        super().__init__(reason or f"{type(exception).__name__}: {exception} at trace time")
        self.exception = exception  # first_seen: for each frame, the instruction where it was raised


def raise_at_trace_time(exception, reason=None):
    """Raise :class:`TracedException` for the real ``exception`` the program raises here."""
    raise TracedException(exception, reason)


def internal_error(inst, error):
    """The Unsupported for an unexpected ``error`` raised by the handler of ``inst``."""
    message = str(error).splitlines()[0] if str(error) else ""
    return Unsupported(f"internal error while tracing {inst.opname} "
                       f"({type(error).__name__}: {message[:200]})")


class BackendCompilerFailed(Exception):
    """The backend raised ``inner`` while compiling a graph."""

    def __init__(self, inner):
        super().__init__(f"backend failed: {type(inner).__name__}: {inner}")
        self.inner = inner


class SkipFrame(Exception):
    """The frame computes nothing with tensors (no node in its graph, and no graph break): its
    code is marked SKIP, and the hook runs it as it is from now on, as Dynamo does."""


class RestartAnalysis(Exception):
    """Trace the frame again, and break the graph at instruction ``index`` because of ``reason``
    (the Unsupported error that the first attempt met there)."""

    def __init__(self, index, reason):
        super().__init__(f"restart, to break the graph at instruction {index}: {reason.reason}")
        self.index = index
        self.reason = reason
