"""The PEP 523 frame hook, written in C (book chapter 2, "The PEP 523 frame hook").

``_eval_frame`` is built from ``eval_frame.c``. Its functions:

- ``set_eval_frame(callback)``: set this thread's callback (a callable or None) and
  return the previous one. While any thread has a callback, every new frame in that
  thread is offered to the hook.
- ``get_cache_entries(code)``: the list of ``(owner, guard, new_code)`` cache entries
  stored in the code object's co_extra slot (created empty on first use). Append to it
  and remove from it in place.
- ``set_skip(code)``, ``is_skipped(code)``, ``clear_code(code)``: mark a code object
  SKIP (its frames always run as they are), test the mark, forget the mark or entries.
- ``python_version_hex()``: the ``PY_VERSION_HEX`` the extension was built against.

For each new frame of a thread with a callback, the hook calls
``guard(*args, *cells)`` for each entry owned by that callback; on the first that
passes it runs ``new_code`` in place of the frame, with the frame's arguments, all
positional. When none passes it calls ``callback(function, args)``, which returns a
code object to run in the same way, or None to run the frame as it is.
"""
from ._eval_frame import (
    clear_code,
    get_cache_entries,
    is_skipped,
    python_version_hex,
    set_eval_frame,
    set_skip,
)

__all__ = [
    "clear_code",
    "get_cache_entries",
    "is_skipped",
    "python_version_hex",
    "set_eval_frame",
    "set_skip",
]
