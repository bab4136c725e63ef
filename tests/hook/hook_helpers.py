"""Helpers for the frame hook tests (book chapter 2): no torch, no tinydynamo Python code.

The extension is ``tinydynamo._C._eval_frame``, or, when TINYDYNAMO_HOOK_BUILD names a
build directory (tools/test_hook.sh builds one per Python version), the copy in it.
"""
import contextlib
import glob
import importlib.machinery
import importlib.util
import os
import sys

CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08


def load_extension():
    build_dir = os.environ.get("TINYDYNAMO_HOOK_BUILD")
    if not build_dir:
        from tinydynamo._C import _eval_frame

        return _eval_frame
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    paths = glob.glob(os.path.join(build_dir, "tinydynamo", "_C", "_eval_frame" + suffix))
    if not paths:
        raise ImportError(f"no _eval_frame{suffix} under {build_dir}")
    spec = importlib.util.spec_from_file_location("_eval_frame", paths[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ef = load_extension()


def num_args(code):
    """How many localsplus slots hold arguments: the n that the hook passes on."""
    return (
        code.co_argcount
        + code.co_kwonlyargcount
        + bool(code.co_flags & CO_VARARGS)
        + bool(code.co_flags & CO_VARKEYWORDS)
    )


def all_positional(code):
    """The same code, taking its n argument values as n positional parameters."""
    return code.replace(
        co_argcount=num_args(code),
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_flags=code.co_flags & ~(CO_VARARGS | CO_VARKEYWORDS),
    )


def replacement(code):
    """all_positional(code) with the string constant "original" turned into "replacement",
    so that a test function returning "original" tells which code ran."""
    consts = tuple("replacement" if c == "original" else c for c in code.co_consts)
    return all_positional(code).replace(co_consts=consts)


def untag(result):
    """A result with the marker put back to "original", to compare with eager."""
    if isinstance(result, tuple) and result and result[0] == "replacement":
        return ("original",) + result[1:]
    return result


def codes_of(*functions):
    """The code objects of functions, with every code object nested in them."""
    found = []
    todo = [f.__code__ for f in functions]
    while todo:
        code = todo.pop()
        found.append(code)
        todo.extend(c for c in code.co_consts if isinstance(c, type(code)))
    return found


class Compiler:
    """A callback that replaces the frames of chosen code objects.

    On a miss for a chosen code it records the call, stores a cache entry owned by
    itself (guarded by ``guard``, by default always true) and returns the replacement.
    Other frames run as they are (it returns None).
    """

    def __init__(self, *functions, guard=None, cache=True):
        self.codes = codes_of(*functions)
        self.guard = guard or (lambda *args: True)
        self.cache = cache
        self.misses = []

    def chosen(self, code):
        return any(code is c for c in self.codes)

    def __call__(self, func, args):
        if not self.chosen(func.__code__):
            return None
        self.misses.append((func.__code__.co_name, args))
        new_code = replacement(func.__code__)
        if self.cache:
            ef.get_cache_entries(func.__code__).append((self, self.guard, new_code))
        return new_code

    def forget(self):
        for code in self.codes:
            ef.clear_code(code)


@contextlib.contextmanager
def hooked(callback):
    """Run the body with ``callback`` as this thread's callback."""
    previous = ef.set_eval_frame(callback)
    try:
        yield callback
    finally:
        ef.set_eval_frame(previous)


@contextlib.contextmanager
def compiling(*functions, **options):
    """hooked(Compiler(*functions)), then forget the Compiler's cache entries."""
    compiler = Compiler(*functions, **options)
    try:
        with hooked(compiler):
            yield compiler
    finally:
        compiler.forget()


def python_at_least(major, minor):
    return sys.version_info[:2] >= (major, minor)
