"""The co_extra cache: guards, owners, SKIP, and the per-thread callback (book chapter 2)."""
import sys
import threading

import pytest
from hook_helpers import Compiler, compiling, ef, hooked, replacement


def scale(x, k=2):
    return "original", x * k


def make_counter_guard(result):
    calls = []

    def guard(*args):
        calls.append(args)
        return result

    return guard, calls


def test_a_passing_guard_runs_the_replacement_without_the_callback():
    guard, guard_calls = make_counter_guard(True)
    with compiling(scale, guard=guard) as compiler:
        results = [scale(i) for i in range(5)]
    assert results == [("replacement", 2 * i) for i in range(5)]
    assert len(compiler.misses) == 1  # the first call; the other four hit the cache
    assert guard_calls == [(i, 2) for i in range(1, 5)]


def test_a_failing_guard_sends_the_frame_to_the_callback():
    guard, guard_calls = make_counter_guard(False)
    with compiling(scale, guard=guard) as compiler:
        assert scale(3) == ("replacement", 6)
        assert scale(4) == ("replacement", 8)
    assert len(compiler.misses) == 2
    assert len(ef.get_cache_entries(scale.__code__)) == 0  # forgotten
    assert guard_calls == [(4, 2)]  # the second call found one entry, whose guard failed


def test_the_first_passing_guard_wins_and_any_truthy_value_passes():
    def run_with_entries(entries):
        ef.get_cache_entries(scale.__code__).extend(entries)
        try:
            with hooked(owner):
                return scale(5)
        finally:
            ef.clear_code(scale.__code__)

    def tagged(tag):
        consts = tuple(tag if c == "original" else c for c in scale.__code__.co_consts)
        return replacement(scale.__code__).replace(co_consts=consts)

    def owner(func, args):
        if func.__code__ is scale.__code__:
            raise AssertionError("the callback must not be called on a hit")

    never = lambda *args: 0  # noqa: E731
    assert run_with_entries([(owner, never, tagged("a")), (owner, lambda *a: [1], tagged("b")),
                             (owner, lambda *a: True, tagged("c"))]) == ("b", 10)


def test_guards_receive_the_arguments_then_the_closure_cells():
    offset = 7

    def shifted(x, *rest, **options):
        return "original", x + offset

    seen = []
    with compiling(shifted, guard=lambda *args: seen.append(args) or True):
        shifted(1, 2, a=3)
        shifted(4)
    [args] = seen
    assert args[:3] == (4, (), {})
    assert args[3] is shifted.__closure__[0] and args[3].cell_contents == 7


def test_entries_of_another_owner_are_ignored():
    first, second = Compiler(scale), Compiler(scale)
    try:
        with hooked(first):
            scale(1)
        with hooked(second):
            scale(2)
            scale(3)
        assert len(first.misses) == 1 and len(second.misses) == 1
        owners = [entry[0] for entry in ef.get_cache_entries(scale.__code__)]
        assert owners[0] is first and owners[1] is second
    finally:
        first.forget()


def test_a_callback_returning_none_runs_the_original_each_time():
    seen = []

    def callback(func, args):
        if func.__code__ is scale.__code__:
            seen.append(args)
        return None

    with hooked(callback):
        assert scale(2) == ("original", 4)
        assert scale(3, k=3) == ("original", 9)
    assert seen == [(2, 2), (3, 3)]


def test_skipped_code_never_reaches_the_callback_or_the_guards():
    def callback(func, args):
        if func.__code__ is scale.__code__:
            raise AssertionError("a SKIP code reached the callback")

    def guard(*args):
        raise AssertionError("a SKIP code's guard ran")

    ef.set_skip(scale.__code__)
    try:
        with hooked(callback):
            assert scale(3) == ("original", 6)
    finally:
        ef.clear_code(scale.__code__)
    ef.get_cache_entries(scale.__code__).append((callback, guard, replacement(scale.__code__)))
    ef.set_skip(scale.__code__)  # replaces the entries
    try:
        with hooked(callback):
            assert scale(3) == ("original", 6)
    finally:
        ef.clear_code(scale.__code__)


def test_frames_that_a_profile_or_trace_function_runs_are_not_offered():
    """A debugger's, coverage's or profiler's own frames are tooling, not the user's computation."""
    offered = []

    def tool_helper(event):
        return event

    def profiler(frame, event, arg):
        tool_helper(event)

    def tracer(frame, event, arg):
        tool_helper(event)

    def callback(func, args):
        offered.append(func.__code__.co_name)

    with hooked(callback):
        sys.setprofile(profiler)
        try:
            scale(2)
        finally:
            sys.setprofile(None)
        sys.settrace(tracer)
        try:
            scale(3)
        finally:
            sys.settrace(None)
    assert offered.count("scale") == 2
    assert not {"profiler", "tracer", "tool_helper"} & set(offered), offered


def test_the_callback_and_guards_run_without_the_hook():
    def helper(x):
        return x

    offered = []

    def callback(func, args):
        offered.append(func.__code__.co_name)
        helper(1)  # a frame started inside the callback: not offered
        return Compiler(scale)(func, args) if func.__code__ is scale.__code__ else None

    def guard(*args):
        return helper(True)

    with hooked(callback):
        ef.get_cache_entries(scale.__code__).append((callback, guard, replacement(scale.__code__)))
        assert scale(2) == ("replacement", 4)
    ef.clear_code(scale.__code__)
    assert "helper" not in offered


def test_a_thread_without_a_callback_never_calls_another_threads_callback():
    seen_threads = []

    def callback(func, args):
        seen_threads.append(threading.get_ident())
        return None

    results = []
    with hooked(callback):
        worker = threading.Thread(target=lambda: results.append(scale(21)))
        worker.start()
        worker.join()
        scale(1)
    assert results == [("original", 42)]
    assert set(seen_threads) == {threading.get_ident()}


def test_the_hook_is_uninstalled_when_no_thread_has_a_callback():
    """Checked through the cache: with no callback anywhere, an entry never fires."""
    guard, guard_calls = make_counter_guard(True)
    with compiling(scale, guard=guard):
        scale(1)
        scale(2)
    ef.get_cache_entries(scale.__code__).append((None, guard, replacement(scale.__code__)))
    try:
        assert scale(3) == ("original", 6)
    finally:
        ef.clear_code(scale.__code__)
    assert len(guard_calls) == 1


def test_callback_returning_something_else_than_code_or_none_raises():
    with hooked(lambda func, args: 42 if func.__code__ is scale.__code__ else None):
        with pytest.raises(TypeError, match="replacement for <function .*scale.* must be a code object"):
            scale(1)


def test_replacement_with_the_wrong_signature_raises():
    def f(x, *rest):
        return x

    def wrong(func, args):
        return f.__code__ if func.__code__ is f.__code__ else None  # not all-positional

    with hooked(wrong):
        with pytest.raises(TypeError, match="exactly 2 positional parameters"):
            f(1)


def test_the_frames_own_code_may_be_returned_when_already_all_positional():
    def callback(func, args):
        return scale.__code__ if func.__code__ is scale.__code__ else None

    with hooked(callback):
        assert scale(1) == ("original", 2)
        assert scale(2) == ("original", 4)
    assert not ef.is_skipped(scale.__code__)


def test_replacement_with_the_wrong_free_variables_raises():
    def without_closure(x, k=2):
        return x

    def with_closure(func, args):
        if func.__code__ is not without_closure.__code__:
            return None
        return replacement(make_closure_code())

    with hooked(with_closure):
        with pytest.raises(TypeError, match="1 free variables, but the function has 0"):
            without_closure(1)


def make_closure_code():
    captured = 1

    def f(x, k):
        return x + captured

    return f.__code__


def test_a_malformed_cache_entry_raises():
    ef.get_cache_entries(scale.__code__).append(("not", "a triple"))
    try:
        with hooked(lambda func, args: None):
            with pytest.raises(TypeError, match=r"\(owner, guard, new_code\) tuple"):
                scale(1)
    finally:
        ef.clear_code(scale.__code__)


def test_entries_may_be_a_tuple_subclass():
    import collections

    Entry = collections.namedtuple("Entry", "owner guard new_code")

    def callback(func, args):
        if func.__code__ is not scale.__code__:
            return None
        new_code = replacement(scale.__code__)
        ef.get_cache_entries(scale.__code__).append(Entry(callback, lambda *a: True, new_code))
        return new_code

    try:
        with hooked(callback):
            assert scale(1) == ("replacement", 2)
            assert scale(2) == ("replacement", 4)
    finally:
        ef.clear_code(scale.__code__)
