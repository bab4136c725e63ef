"""Every tiny function of cases.py, captured whole (fullgraph=True), matches eager PyTorch:
results, and the inputs afterwards (in-place ops must mutate them as eager does)."""
import collections.abc

import pytest
import torch
import torch._dynamo

import tinydynamo
import tinydynamo.dynamo as dynamo
from tinydynamo.dynamo import eval_frame

from dynamo_cases import CASES, assert_same


def test_there_are_at_least_200_cases():
    assert len(CASES) >= 200


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_eager(case):
    expected_args, expected_kwargs = case.make_inputs()
    expected = case.fn(*expected_args, **expected_kwargs)

    compiled = dynamo.compile(case.fn, backend="eager", fullgraph=True)
    for call in range(2):  # the second call runs the cached code
        args, kwargs = case.make_inputs()
        actual = compiled(*args, **kwargs)
        assert_same(actual, expected)
        assert_same((args, kwargs), (expected_args, expected_kwargs))
    stats = tinydynamo.stats()
    if eval_frame.is_skipped(case.fn.__code__):
        # nothing to compile (no tensor computation): skipped, as torch._dynamo skips it
        assert stats["frames_compiled"] == 0 and torch_dynamo_graph_count(case) == 0
    elif any(isinstance(a, torch.nn.Module) for a in args):
        # each call got a fresh copy of the module: modules are guarded by identity (ID_MATCH).
        # (Whether that counts as a recompile depends on whether the first copy was already
        # garbage-collected, which drops the entries guarding its id.)
        assert stats["frames_compiled"] == 2
    else:
        assert stats["frames_compiled"] == 1 and stats["recompiles"] == 0 and stats["cache_hits"] == 1


def torch_dynamo_graph_count(case):
    torch._dynamo.reset()
    args, kwargs = case.make_inputs()
    return torch._dynamo.explain(case.fn)(*args, **kwargs).graph_count


@pytest.fixture
def python_hook():
    """The Python model of the frame hook instead of the C extension."""
    previous = eval_frame.HOOK
    eval_frame.use_hook(eval_frame.PythonHook())
    yield
    eval_frame.use_hook(previous)


@pytest.mark.parametrize("case", CASES[::4], ids=lambda c: c.name)
def test_matches_eager_with_the_python_model_of_the_hook(case, python_hook):
    expected_args, expected_kwargs = case.make_inputs()
    expected = case.fn(*expected_args, **expected_kwargs)
    args, kwargs = case.make_inputs()
    assert_same(dynamo.compile(case.fn, backend="eager", fullgraph=True)(*args, **kwargs), expected)
    assert_same((args, kwargs), (expected_args, expected_kwargs))
    assert tinydynamo.stats()["frames_compiled"] == (0 if eval_frame.is_skipped(case.fn.__code__) else 1)


class Registry(collections.abc.MutableMapping):
    """A mapping written as the abc asks: no keys() of its own."""

    def __init__(self, **items):
        self._items = dict(items)

    def __getitem__(self, key):
        return self._items[key]

    def __setitem__(self, key, value):
        self._items[key] = value

    def __delitem__(self, key):
        del self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


def test_dict_of_a_users_mapping_reads_its_keys_then_its_items():
    """``dict(mapping)`` iterated a MutableMapping as pairs (an internal ValueError, then a graph
    break); Python asks for keys, then each item. The globals of ``collections.abc``'s methods
    (module ``_collections_abc``, which calls itself ``collections.abc``) are found too."""
    registry = Registry(scale=torch.full((4,), 2.0), shift=torch.ones(4))

    def f(x):
        table = dict(registry)
        return x * table["scale"] + table["shift"], sorted(table)

    x = torch.randn(4)
    explained = tinydynamo.explain(f)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    (actual, keys), (expected, expected_keys) = tinydynamo.compile(f)(x), f(x)
    torch.testing.assert_close(actual, expected)
    assert keys == expected_keys


def test_silent_differences_found_in_pytorchs_dynamo_tests():
    """Four programs of PyTorch's dynamo test suite that gave other values than eager:
    ``list.extend`` of a generator that reads the list (it ran the generator first); a
    StopIteration raised in a generator (PEP 479 makes it a RuntimeError); ``hasattr`` of a partial
    (it saw the class's ``__name__``); and a tensor made with ``requires_grad=True`` (it lost it:
    now it is made outside the graph, as torch.compile does)."""
    import functools

    def extend(x):
        ys = [1]
        ys.extend(ys[-1] + z for z in range(3))
        return x + 1, ys

    def pep_479(x):
        def gen():
            yield x + 1
            raise StopIteration("inside")

        g = gen()
        next(g)
        try:
            next(g)
        except RuntimeError as e:
            return x * 2, str(e)
        except StopIteration:
            return x * 3, "StopIteration"

    scaled = functools.partial(torch.mul, other=2)

    def partial_attrs(x):
        return scaled(x), hasattr(scaled, "__name__"), hasattr(scaled, "func"), hasattr(scaled, "__doc__")

    def new_leaf(x):
        w = torch.ones(2, requires_grad=True)
        return w * x

    x = torch.ones(2)
    for fn in (extend, pep_479, partial_attrs, new_leaf):
        tinydynamo.reset()
        actual, expected = tinydynamo.compile(fn)(x), fn(x)
        assert_same(actual, expected)
    assert new_leaf(x).requires_grad and tinydynamo.compile(new_leaf)(x).requires_grad


class StaticGate(torch.nn.Module):
    @staticmethod
    def forward(x):
        return x * torch.sigmoid(x)


class OptionalActivation(torch.nn.Module):
    def __init__(self, activation):
        super().__init__()
        self.activation, self.gate = activation, StaticGate()

    def forward(self, x):
        x = self.gate(x * 2)
        if self.activation:
            x = self.activation(x)
        return x


@pytest.mark.parametrize("activation", [torch.nn.functional.relu, torch.tanh, None])
def test_a_function_attribute_is_true_and_a_static_forward_takes_no_self(activation):
    """``if self.activation:`` on a torch function broke the graph (its truth was asked of its value
    as a constant), and a submodule whose forward is a staticmethod was called with self (a
    TypeError at trace time, then a break). PyTorch's dynamo tests: mod_FnMember and
    mod_ModuleCallModuleWithStaticForward."""
    model, x = OptionalActivation(activation), torch.randn(4)
    explained = tinydynamo.explain(model)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    torch.testing.assert_close(tinydynamo.compile(model)(x), model(x))
