"""Errors raised while translating a frame (book chapter 3, "Symbolic execution").

``Unsupported`` means "tinydynamo cannot capture this construct": the frame then runs eagerly
(or, with ``fullgraph=True``, the user gets the error). Its message names the construct and the
user's ``file:line``, and ``user_stack`` lists the inlined calls that led there.
"""


class Unsupported(RuntimeError):
    """A construct tinydynamo does not trace; ``reason`` says which, ``user_stack`` where."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason
        self.user_stack = []  # [(filename, lineno, function name)], outermost call first

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
