"""Exceptions from replacements, guards and callbacks propagate with tracebacks that
point at the user's code (book chapter 2)."""
import sys
import traceback

import pytest
from hook_helpers import Compiler, compiling, ef, hooked, replacement


def divide(a, b):
    quotient = a / b  # the line the traceback must point at
    return "original", quotient


DIVIDE_LINE = divide.__code__.co_firstlineno + 1


def frames_of(excinfo):
    return [(frame.name, frame.lineno) for frame in traceback.extract_tb(excinfo.value.__traceback__)]


def test_an_exception_in_a_replacement_points_at_the_users_line():
    with pytest.raises(ZeroDivisionError) as eager:
        divide(1, 0)
    with compiling(divide):
        assert divide(6, 3) == ("replacement", 2.0)
        with pytest.raises(ZeroDivisionError) as replaced:
            divide(1, 0)
    assert frames_of(replaced)[-1] == ("divide", DIVIDE_LINE) == frames_of(eager)[-1]
    assert replaced.value.__traceback__.tb_next.tb_frame.f_code is not divide.__code__


def test_an_exception_caught_inside_a_replacement_stays_there():
    def safe_divide(a, b):
        try:
            return "original", a / b
        except ZeroDivisionError as error:
            return "original", repr(error)

    with compiling(safe_divide):
        assert safe_divide(1, 0) == ("replacement", "ZeroDivisionError('division by zero')")


def test_an_exception_in_a_guard_propagates_from_the_call_and_the_hook_recovers():
    def bad_guard(a, b):
        raise LookupError("guard failed to evaluate")

    compiler = Compiler(divide, guard=bad_guard)
    try:
        with hooked(compiler):
            divide(4, 2)  # miss: stores the entry
            call_line = sys._getframe().f_lineno + 2
            with pytest.raises(LookupError, match="guard failed") as excinfo:
                divide(4, 2)
            ef.clear_code(divide.__code__)
            assert divide(9, 3) == ("replacement", 3.0)  # the hook still works
    finally:
        compiler.forget()
    names = frames_of(excinfo)
    assert names[0][0] == "test_an_exception_in_a_guard_propagates_from_the_call_and_the_hook_recovers"
    assert names[0][1] == call_line and names[-1][0] == "bad_guard"
    assert len(compiler.misses) == 2


def test_an_exception_in_the_callback_propagates_and_the_hook_recovers():
    calls = []

    def callback(func, args):
        if func.__code__ is divide.__code__:
            calls.append(args)
            if len(calls) == 1:
                raise KeyError("callback failed")
            return replacement(divide.__code__)
        return None

    with hooked(callback):
        with pytest.raises(KeyError, match="callback failed") as excinfo:
            divide(1, 1)
        assert divide(8, 2) == ("replacement", 4.0)
    assert frames_of(excinfo)[-1][0] == "callback"
    assert calls == [(1, 1), (8, 2)]


def test_a_keyboard_interrupt_like_base_exception_from_a_guard_propagates():
    class Stop(BaseException):
        pass

    def stopping(*args):
        raise Stop

    with compiling(divide, guard=stopping):
        divide(1, 1)
        with pytest.raises(Stop):
            divide(1, 1)
