"""Replacements see exactly the arguments the original frame had (book chapter 2).

Each function returns the marker "original", which its replacement returns as
"replacement"; the rest of the result must equal an eager run's.
"""
import sys

import pytest
from hook_helpers import Compiler, compiling, ef, hooked, python_at_least, replacement, untag


def check_replaced(function, *args, **kwargs):
    """Run function eagerly and under a Compiler; the results must agree and the
    replacement must have run. Returns the Compiler."""
    expected = function(*args, **kwargs)
    with compiling(function) as compiler:
        got = function(*args, **kwargs)
    assert got[0] == "replacement", "the replacement did not run"
    assert untag(got) == expected
    return compiler


def test_positional_and_defaults():
    def f(a, b=10, c=(1, 2)):
        return "original", a, b, c

    compiler = check_replaced(f, 1, c=3)
    check_replaced(f, 1, 2, 3)
    [(name, args)] = compiler.misses
    assert name == "f" and args == (1, 10, 3)


def test_default_values_are_passed_as_the_same_objects():
    default = []

    def f(a, b=default):
        return "original", a, b is default

    compiler = check_replaced(f, 1)
    assert compiler.misses[0][1][1] is default


def test_varargs_and_varkw():
    def f(a, *args, **kwargs):
        return "original", a, args, kwargs

    compiler = check_replaced(f, 1, 2, 3, x=4, y=5)
    check_replaced(f, 1)
    assert compiler.misses[0][1] == (1, (2, 3), {"x": 4, "y": 5})


def test_keyword_only_and_positional_only():
    def f(a, b, /, c, *args, d, e=5, **kwargs):
        return "original", a, b, c, args, d, e, kwargs

    compiler = check_replaced(f, 1, 2, 3, 4, d=6, z=7)
    check_replaced(f, 1, 2, c=3, d=4)
    assert compiler.misses[0][1] == (1, 2, 3, 6, 5, (4,), {"z": 7})


def make_adder(k):
    def add(x):
        return "original", x + k

    return add


def test_closures_use_their_own_cells():
    add1, add10 = make_adder(1), make_adder(10)
    with compiling(add1):  # add1 and add10 share one code object
        assert add1(5) == ("replacement", 6)
        assert add10(5) == ("replacement", 15)


def test_closure_sees_later_changes_to_the_cell():
    def outer():
        counter = 0

        def bump(step):
            nonlocal counter
            counter += step
            return "original", counter

        return bump

    bump = outer()
    with compiling(bump):
        assert bump(2) == ("replacement", 2)
        assert bump(3) == ("replacement", 5)
    assert bump(1) == ("original", 6)


def test_arguments_captured_by_an_inner_function_are_cells():
    def f(a, b):
        def inner():
            return a * b

        a += 1
        return "original", inner(), a

    check_replaced(f, 3, 4)


def test_methods_and_super():
    class Base:
        def scale(self, x, factor=2):
            return x * factor

    class Child(Base):
        def scale(self, x, factor=3):
            return "original", super().scale(x, factor) + 1

        @classmethod
        def make(cls, k):
            return "original", cls.__name__, k

        @staticmethod
        def pure(a, *, b):
            return "original", a - b

    obj = Child()
    check_replaced(obj.scale, 5)
    check_replaced(Child.scale, obj, 5, factor=4)
    check_replaced(Child.make, 7)
    check_replaced(Child.pure, 7, b=2)


def test_class_bodies_run_as_they_are_and_their_methods_are_replaced():
    seen = []

    def callback(func, args):
        seen.append(func.__code__.co_name)
        if func.__code__.co_name == "method":
            return Compiler(func)(func, args)
        return None

    def define():
        class Widget:
            size = 3
            doubled = [size * 2]

            def method(self, x):
                return "original", x + self.size

        return Widget

    with hooked(callback):
        widget = define()
        result = widget().method(4)
    assert widget.doubled == [6] and result == ("replacement", 7)
    assert "define" in seen and "method" in seen
    assert "Widget" not in seen, "a class body (a frame with a locals mapping) reached the callback"
    ef.clear_code(widget.method.__code__)


def test_exec_code_runs_as_it_is_and_functions_it_defines_are_replaced():
    source = "def f(x, y=2):\n    return 'original', x ** y\nresult = f(3)\n"
    expected = {}
    exec(source, expected)
    seen = []

    def callback(func, args):
        seen.append(func.__code__.co_name)
        return Compiler(func)(func, args) if func.__code__.co_name == "f" else None

    namespace = {}
    with hooked(callback):
        exec(source, namespace)
    assert namespace["result"] == ("replacement", 9)
    assert expected["result"] == ("original", 9)
    assert "f" in seen
    assert "<module>" not in seen, "module-level code reached the callback"
    ef.clear_code(namespace["f"].__code__)


def test_lambdas():
    f = lambda a, *rest, k=1: ("original", a, rest, k)  # noqa: E731
    check_replaced(f, 1, 2, k=3)


def test_comprehensions_and_generator_expressions():
    def f(xs, k):
        squares = [x * x + k for x in xs]
        table = {x: x + k for x in xs if x % 2}
        total = sum(x * k for x in xs)
        return "original", squares, table, total

    compiler = check_replaced(f, [1, 2, 3], 10)
    names = [name for name, _ in compiler.misses]
    assert "<genexpr>" in names
    if not python_at_least(3, 12):  # PEP 709 inlines list and dict comprehensions in 3.12
        assert "<listcomp>" in names and "<dictcomp>" in names


def test_generator_function_is_replaced_by_a_generator():
    def countdown(n, step=1):
        while n > 0:
            yield "original", n
            n -= step

    expected = list(countdown(5, 2))
    with compiling(countdown):
        got = list(countdown(5, 2))
    assert [untag(item) for item in got] == expected
    assert got[0][0] == "replacement"


def test_frames_of_unchosen_functions_still_reach_the_callback_and_run():
    def helper(x):
        return x * 2

    def f(x):
        return "original", helper(x) + 1

    seen = []

    def callback(func, args):
        seen.append(func.__code__.co_name)
        return None

    with hooked(callback):
        assert f(4) == ("original", 9)
    assert seen[:2] == ["f", "helper"]  # then the context manager's __exit__


def test_a_replacement_frame_is_not_offered_to_the_callback_but_its_calls_are():
    def helper(x):
        return x + 1

    def f(x):
        return "original", helper(x)

    offered = []

    def callback(func, args):
        offered.append(func.__code__.co_name)
        return replacement(f.__code__) if func.__code__ is f.__code__ else None

    with hooked(callback):
        assert f(1) == ("replacement", 2)
        assert f(2) == ("replacement", 3)
    # f's replacement (also named "f") would show up as a second "f" in a row
    assert offered[:4] == ["f", "helper", "f", "helper"]
    assert not ef.is_skipped(f.__code__)


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
        self.made_by = "original"


def make_points(n):
    return [Point(i, 2 * i) for i in range(n)]  # exact positional args: a specializable site


def test_init_through_a_class_call():
    """`Point(x, y)` runs __init__ in a new frame. On 3.11 and 3.12 the hook sees every
    one. CPython 3.13.0 specializes the call site (CALL_ALLOC_AND_ENTER_INIT) and then
    pushes the __init__ frame without asking the frame evaluator: those frames run the
    original __init__, never the replacement. The objects are right either way."""
    make_points(100)  # specialize the call site (without the hook)
    guard_calls = []
    with compiling(Point.__init__, guard=lambda *args: guard_calls.append(args) or True):
        points = make_points(50)
    assert [(p.x, p.y) for p in points] == [(i, 2 * i) for i in range(50)]
    replaced = sum(p.made_by == "replacement" for p in points)
    if sys.version_info[:3] == (3, 13, 0):
        assert replaced == 0 and guard_calls == []
    else:
        assert replaced == 50 and len(guard_calls) == 49
