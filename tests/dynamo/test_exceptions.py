"""Exceptions that the program raises at trace time and catches itself are traced as CPython runs
them: the exception table of the frame (or of an inlined caller) sends it to the handler. An
exception no block of the traced frames catches is a graph break, and eager raises it."""
import collections.abc
import contextlib

import pytest
import torch

import tinydynamo
import tinydynamo.dynamo as dynamo

from dynamo_cases import assert_same, boxes_area


def check(fn, *args, breaks=0):
    expected = fn(*args)
    assert_same(dynamo.compile(fn, backend="eager")(*args), expected)
    assert tinydynamo.explain(fn)(*args).graph_break_count == breaks


class Registry(collections.abc.MutableMapping):
    """transformers' AttentionInterface: a global mapping with local overrides."""

    _global_mapping = {"sdpa": torch.sin}

    def __init__(self):
        self._local_mapping = {}

    def __getitem__(self, key):
        if key in self._local_mapping:
            return self._local_mapping[key]
        return self._global_mapping[key]

    def __setitem__(self, key, value):
        self._local_mapping[key] = value

    def __delitem__(self, key):
        del self._local_mapping[key]

    def __iter__(self):
        return iter(self._global_mapping)

    def __len__(self):
        return len(self._global_mapping)


REGISTRY = Registry()


def mapping_get_with_a_missing_key(x):
    return REGISTRY.get("eager", torch.cos)(x) + REGISTRY.get("sdpa", torch.cos)(x)


def catches_key_and_attribute_errors(x, table):
    try:
        scale = table["missing"]
    except KeyError as error:
        scale = len(error.args) + 1.0
    try:
        shift = x.no_such_attribute
    except (AttributeError, TypeError):
        shift = 2.0
    try:
        bias = table["bias"]
    except KeyError:
        bias = None
    return x * scale + shift + bias


def nested_handlers(x, table):
    try:
        try:
            y = table["a"]
        except ValueError:
            y = 0.0
    except LookupError:
        y = x + 3
    finally:
        y = y * 2
    return y


@pytest.mark.parametrize("fn, args", [
    (mapping_get_with_a_missing_key, (torch.randn(3),)),
    (catches_key_and_attribute_errors, (torch.randn(3), {"bias": torch.ones(3)})),
    (nested_handlers, (torch.randn(3), {})),
], ids=lambda v: getattr(v, "__name__", ""))
def test_caught_exceptions_are_traced(fn, args):
    check(fn, *args)


def raises_past_its_handler(x, table):
    try:
        return x + table["missing"]
    except ValueError:
        return x


def test_an_exception_no_handler_catches_is_raised_as_in_eager():
    with pytest.raises(KeyError):
        dynamo.compile(raises_past_its_handler, backend="eager")(torch.randn(3), {})


def next_past_the_end_is_caught(x):
    items = iter([x])
    first = next(items)
    try:
        next(items)
    except StopIteration:
        return first - 1
    return first


def test_the_stop_iteration_of_next_can_be_caught():
    check(next_past_the_end_is_caught, torch.randn(3))


class ShapeError(Exception):
    pass


def check_positive(v):
    if v < 0:
        raise ValueError("negative")
    return v


def raises_and_catches_in_the_frame(x):
    try:
        raise ValueError("bad")
    except ValueError as e:
        x = x + len(str(e))
    try:
        raise ShapeError
    except ShapeError:
        x = x * 2
    try:
        return x * check_positive(-1)  # raised in an inlined call
    except ValueError:
        return x - 1


def raise_from_and_reraise(x):
    try:
        try:
            {}["key"]
        except KeyError as e:
            raise ValueError("v") from e
    except ValueError as e:
        x = x + isinstance(e.__cause__, KeyError) + 2 * isinstance(e.__context__, KeyError)
    try:
        try:
            raise ShapeError("a")
        except ShapeError:
            raise
    except Exception as e:
        return x + len(e.args)


@pytest.mark.parametrize("fn", [raises_and_catches_in_the_frame, raise_from_and_reraise])
def test_raise_statements_caught_in_the_traced_frames_are_traced(fn):
    check(fn, torch.randn(3))


class Recorder:
    """A context manager written in Python that swallows the ValueErrors of its block, and records
    what its ``__exit__`` saw."""

    def __init__(self):
        self.seen = []

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.seen.append(None if kind is None else kind.__name__)
        return kind is not None and issubclass(kind, ValueError)


def suppresses_a_missing_key(x, table):
    with contextlib.suppress(KeyError):
        x = x + table["missing"]
    return x * 2


def a_helper_with_a_suppressed_index_error(x):
    with contextlib.suppress(IndexError, KeyError):
        return x + [1][5]
    return x - 1


def calls_a_helper_that_suppresses(x):
    return a_helper_with_a_suppressed_index_error(x) * 3


def records_what_exit_sees(x):
    recorder = Recorder()
    with recorder:
        x = x + 1
    with recorder:
        raise ValueError("swallowed")
    return x, recorder.seen


@pytest.mark.parametrize("fn, args", [
    (suppresses_a_missing_key, (torch.randn(3), {})),
    (calls_a_helper_that_suppresses, (torch.randn(3),)),
    (records_what_exit_sees, (torch.randn(3),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_an_exit_written_in_python_sees_the_exception_of_its_block(fn, args):
    """``__exit__(type, exception, traceback)`` is traced; returning true swallows the exception
    (one graph, no break, as torch.compile)."""
    check(fn, *args)


def suppresses_another_error(x, table):
    with contextlib.suppress(IndexError):
        x = x + table["missing"]
    return x


def test_an_exception_its_exit_does_not_swallow_is_raised_as_in_eager():
    with pytest.raises(KeyError):
        dynamo.compile(suppresses_another_error, backend="eager")(torch.randn(3), {})


@contextlib.contextmanager
def swallowing(log):
    try:
        yield
    except ValueError as error:
        log.append(str(error))


def a_generator_context_manager_swallows(x):
    log = []
    with swallowing(log):
        x = x * 2
        raise ValueError("inside")
    return x + len(log), log


def test_an_exit_that_cannot_be_traced_runs_the_block_as_python():
    """contextmanager's __exit__ throws into the generator: the graph breaks before the block."""
    x = torch.randn(3)
    assert_same(dynamo.compile(a_generator_context_manager_swallows, backend="eager")(x),
                a_generator_context_manager_swallows(x))


def rewritten_assert_then_break(x):
    # pytest rewrites this assert: its values live in locals named @py_assert..., and the branch on
    # the tensor breaks the graph, so the resume function takes them as arguments
    assert (x[:, 2:] >= x[:, :2]).all(), "degenerate boxes"
    return x * 2


def test_a_frame_whose_asserts_pytest_rewrote_compiles():
    """The guard function of the resume function named its parameters after the frame's locals,
    and ``@py_assert1`` is no identifier: a SyntaxError, for every test module that compiles code."""
    x = torch.tensor([[0., 0., 1., 2.], [1., 1., 3., 3.]])
    compiled = tinydynamo.compile(rewritten_assert_then_break, backend="eager")
    torch.testing.assert_close(compiled(x), x * 2)
    with pytest.raises(AssertionError, match="degenerate boxes"):
        compiled(torch.tensor([[0., 0., -1., 2.]]))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_an_assert_on_a_tensor_is_checked_by_the_graph(backend):
    """DETR's ``assert (boxes[:, 2:] >= boxes[:, :2]).all()``: one graph with torch._assert_async, as
    in torch.compile (a branch on the tensor broke the graph). A failed check raises RuntimeError,
    naming the line, where eager raises AssertionError (torch.compile does the same)."""
    good = torch.tensor([[0., 0., 1., 2.], [1., 1., 3., 3.]])
    compiled = tinydynamo.compile(boxes_area, backend=backend)
    torch.testing.assert_close(compiled(good), boxes_area(good))
    with pytest.raises(RuntimeError, match=r"degenerate boxes \(.*dynamo_cases.py:\d+\)"):
        compiled(torch.tensor([[0., 0., -1., 2.], [1., 1., 3., 3.]]))
    assert tinydynamo.explain(boxes_area)(good).graph_break_count == 0


def test_a_caught_exception_is_the_object_that_was_raised():
    """``except E as e`` got a tracker of its own for the exception, and ``is`` answered False for
    two trackers of one exception (PyTorch's dynamo tests: ``caught is raised`` and ``__context__``
    chains): a silent wrong answer."""
    def f(x):
        raised = ValueError(1)
        try:
            raise raised
        except ValueError as e:
            caught = e
        try:
            try:
                raise TypeError(2)
            finally:
                second = KeyError(3)
                raise second
        except Exception as e:
            chained = e
        return x + 1, caught is raised, chained is second, chained.__context__ is caught

    x = torch.randn(3)
    explained = tinydynamo.explain(f)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    actual, expected = tinydynamo.compile(f)(x), f(x)
    torch.testing.assert_close(actual[0], expected[0])
    assert actual[1:] == expected[1:] == (True, True, False)
