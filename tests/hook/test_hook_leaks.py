"""A million hooked calls leak neither memory nor references (book chapter 2).

Every path through the hook frees the frame it was given: on 3.12 and 3.13 the hook
frees it itself, so a mistake there grows the thread's frame stack by a frame per call.
"""
import collections
import gc
import os
import sys

import pytest
from hook_helpers import ef, hooked, replacement

MIB = 1 << 20


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_target():
    offset = [3]

    def target(a, b, *rest, k=None, **kw):
        if a is None:
            raise ValueError("a replacement raised")
        return "original", b[0] + offset[0]

    return target


# name: (calls, guard result or exception, callback result or exception, what the call gives)
PATHS = {
    "hit": (1_000_000, True, None, "replacement"),
    "miss, callback returns code": (100_000, None, "code", "replacement"),
    "miss, callback returns None": (100_000, None, None, "original"),
    "guard fails, callback returns None": (100_000, False, None, "original"),
    "skip": (100_000, "skip", None, "original"),
    "guard raises": (50_000, LookupError, None, LookupError),
    "callback raises": (50_000, None, KeyError, KeyError),
    "replacement raises": (50_000, True, None, ValueError),
}


class Path:
    """One way through the hook, set up on a fresh target function."""

    def __init__(self, name):
        self.calls, self.guard_result, self.callback_result, self.outcome = PATHS[name]
        self.target = make_target()
        self.code = self.target.__code__
        self.new_code = replacement(self.code)
        self.counts = collections.Counter()
        self.guard, self.callback = self.make_guard(), self.make_callback()  # bound once
        if self.guard_result == "skip":
            ef.set_skip(self.code)
        elif self.guard_result is not None:
            ef.get_cache_entries(self.code).append((self.callback, self.guard, self.new_code))

    def make_guard(self):
        def guard(*args):
            self.counts["guard"] += 1
            if isinstance(self.guard_result, type):
                raise self.guard_result("a guard raised")
            return self.guard_result

        return guard

    def make_callback(self):
        def callback(func, args):
            if func.__code__ is not self.code:
                return None
            self.counts["callback"] += 1
            if isinstance(self.callback_result, type):
                raise self.callback_result("a callback raised")
            return self.new_code if self.callback_result == "code" else None

        return callback

    def run(self, calls, a, b, c):
        target, outcome = self.target, self.outcome
        if outcome is ValueError:
            a = None
        self.counts.clear()
        with hooked(self.callback):
            for _ in range(calls):
                try:
                    result = target(a, b, c, k=c)[0]
                except Exception as error:
                    result = type(error)
                if result is not outcome:
                    raise AssertionError(f"expected {outcome}, got {result}")

    def expected_counts(self, calls):
        guard = self.guard_result is not None and self.guard_result != "skip"
        callback = self.guard_result in (None, False)
        return {"guard": calls if guard else 0, "callback": calls if callback else 0}

    def watched(self):
        return [self.target, self.code, self.new_code, self.guard, self.callback,
                self.target.__closure__[0]]


@pytest.mark.parametrize("name", list(PATHS))
def test_no_growth(name):
    path = Path(name)
    a, b, c = object(), [1], (2,)
    watched = path.watched() + [a, b, c]
    path.run(2000, a, b, c)  # warm up caches and free lists
    gc.collect()
    refcounts = [sys.getrefcount(obj) for obj in watched]
    live_objects = len(gc.get_objects())
    rss = resident_bytes()

    path.run(path.calls, a, b, c)
    gc.collect()
    assert {key: path.counts[key] for key in ("guard", "callback")} == path.expected_counts(path.calls)
    assert [sys.getrefcount(obj) for obj in watched] == refcounts
    assert len(gc.get_objects()) - live_objects < 100
    growth = resident_bytes() - rss
    if growth >= 4 * MIB:  # a leak grows again; memory that other threads took once does not
        rss = resident_bytes()
        path.run(path.calls, a, b, c)
        gc.collect()
        growth = resident_bytes() - rss
    assert growth < 4 * MIB, f"{growth / MIB:.1f} MiB more after {path.calls} calls, twice"
    ef.clear_code(path.code)
