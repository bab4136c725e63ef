"""Mutations of the caller's objects are recorded while tracing and replayed after the graph
(side_effects.py), and the Python semantics real models lean on (zero-argument super() in resume
functions, objects that override attribute lookup, dataclasses built in the frame). Every case
runs eagerly and compiled on fresh inputs, and compares results, mutated inputs and graph breaks
with eager and with torch._dynamo."""
import collections
import contextlib
import copy
import functools
import itertools
import logging
import dataclasses
import warnings

import pytest
import torch
import torch._dynamo

import tinydynamo
import tinydynamo.dynamo as dynamo
from tinydynamo import config
from tinydynamo.dynamo import convert_frame

from dynamo_cases import assert_same


class Box:
    def __init__(self, scale=2.0):
        self.scale = scale


def appends_to_an_input_list(x, out):
    y = x.sin()
    out.append(y)
    return y.cos()


def writes_a_dict(x, d):
    d["new"] = x.sum()
    return x + d["old"]


def writes_an_attribute(x, box):
    box.result = x * box.scale
    return box.result + 1


def pops_then_reads(x, d):
    a = d.pop("a")
    d["b"] = d["b"] * 2
    return x + a + d["b"]


def mutates_then_breaks(x, xs, d):
    xs.append(x * 2)
    d["seen"] = len(xs)
    print("break")
    return xs[-1] + d["seen"]


def pops_its_kwargs(x, **kwargs):
    scale = kwargs.pop("scale", 1.0)
    return x * scale, kwargs


def slices_a_list(x, xs):
    xs[1:] = [x, x + 1]
    xs.insert(0, x * 3)
    del xs[1]
    return sum(xs)


def reads_back_its_write(x, box):
    box.scale = box.scale + 1
    box.scale = box.scale * 2
    return x * box.scale


CASES = [
    (appends_to_an_input_list, lambda: (torch.randn(3), [])),
    (writes_a_dict, lambda: (torch.randn(3), {"old": 1})),
    (writes_an_attribute, lambda: (torch.randn(3), Box())),
    (pops_then_reads, lambda: (torch.randn(3), {"a": 1.5, "b": torch.ones(3)})),
    (slices_a_list, lambda: (torch.randn(3), [torch.ones(3), torch.zeros(3)])),
    (reads_back_its_write, lambda: (torch.randn(3), Box(3.0))),
]


def run_twice(fn, make_inputs, **kwargs):
    """(result, inputs after the call) for two fresh calls, seeded alike."""
    runs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        inputs = make_inputs()
        runs.append((fn(*inputs, **kwargs), inputs))
    return runs


def state(inputs):
    return [vars(i) if isinstance(i, Box) else i for i in inputs]


@pytest.mark.parametrize("fn, make_inputs", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_mutations_of_inputs_are_replayed_without_a_break(fn, make_inputs):
    expected = run_twice(fn, make_inputs)
    compiled = run_twice(dynamo.compile(fn, backend="eager"), make_inputs)
    for (result, inputs), (want, want_inputs) in zip(compiled, expected):
        assert_same(result, want)
        assert_same(state(inputs), state(want_inputs))
    inputs = make_inputs()
    ours = tinydynamo.explain(fn)(*copy.deepcopy(inputs))
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(*copy.deepcopy(inputs))
    assert (ours.graph_count, ours.graph_break_count) == (1, 0) == (theirs.graph_count, theirs.graph_break_count)


def test_mutations_before_a_break_are_seen_by_the_resume_function(capsys):
    make = lambda: (torch.ones(2), [torch.zeros(2)], {})  # noqa: E731
    expected = run_twice(mutates_then_breaks, make)
    compiled = run_twice(dynamo.compile(mutates_then_breaks, backend="eager"), make)
    for (result, inputs), (want, want_inputs) in zip(compiled, expected):
        assert_same(result, want)
        assert_same(inputs, want_inputs)


def test_kwargs_are_popped_without_a_break():
    x = torch.randn(3)
    compiled = dynamo.compile(pops_its_kwargs, backend="eager")
    assert_same(compiled(x, scale=2.0, other=1), pops_its_kwargs(x, scale=2.0, other=1))
    assert tinydynamo.explain(pops_its_kwargs)(x, scale=2.0).graph_break_count == 0


# --- zero-argument super() ---------------------------------------------------------------------------


class Base:
    def scale(self, x):
        return x * 2


class Child(Base):
    def forward(self, x):
        y = x + 1
        print("break")  # the rest runs in a resume function whose first local is not `self`
        return super().scale(y) + super().scale(x)


def test_zero_argument_super_in_a_resume_function(capsys):
    x = torch.randn(3)
    compiled = dynamo.compile(Child().forward, backend="eager")
    assert_same(compiled(x), Child().forward(x))
    assert_same(compiled(x + 1), Child().forward(x + 1))


class Remapped:
    """Like transformers' configs: __getattribute__ maps aliases through super()."""

    aliases = {"width": "hidden"}

    def __init__(self):
        self.hidden = 3

    def __getattribute__(self, key):
        if key != "aliases" and key in super().__getattribute__("aliases"):
            key = super().__getattribute__("aliases")[key]
        return super().__getattribute__(key)


class Fallback:
    def __getattr__(self, name):
        return len(name)


def reads_remapped(x, cfg, fb):
    return x * cfg.width + cfg.hidden + fb.abc


def test_objects_that_override_attribute_lookup():
    x = torch.randn(3)
    compiled = dynamo.compile(reads_remapped, backend="eager")
    assert_same(compiled(x, Remapped(), Fallback()), reads_remapped(x, Remapped(), Fallback()))
    assert tinydynamo.explain(reads_remapped)(x, Remapped(), Fallback()).graph_break_count == 0


def test_compiling_a_getattribute_override_itself():
    compiled = dynamo.compile(Remapped.__getattribute__, backend="eager")
    assert compiled(Remapped(), "width") == 3


# --- dataclasses built in the frame ------------------------------------------------------------------


@dataclasses.dataclass
class Output:
    value: torch.Tensor
    extra: object = None


def builds_a_dataclass(x):
    out = Output(x.relu())
    out.extra = out.value.sum()
    return out


def test_a_dataclass_is_built_and_rebuilt():
    x = torch.randn(3)
    result = dynamo.compile(builds_a_dataclass, backend="eager")(x)
    assert type(result) is Output
    assert_same((result.value, result.extra), (x.relu(), x.relu().sum()))
    assert tinydynamo.explain(builds_a_dataclass)(x).graph_break_count == 0


# --- what the tracer answers, and what it does with its own errors ------------------------------------


def asks_if_compiling(x):
    return x + 1 if torch.compiler.is_compiling() else x - 1


def asks_torch_dynamo_if_compiling(x):  # the older spelling, which libraries still use
    return x + 1 if torch._dynamo.is_compiling() else x - 1


@pytest.mark.parametrize("fn", [asks_if_compiling, asks_torch_dynamo_if_compiling])
def test_is_compiling_is_true_while_tracing(fn):
    x = torch.zeros(2)
    assert_same(dynamo.compile(fn, backend="eager", fullgraph=True)(x), x + 1)
    assert_same(fn(x), x - 1)


def fails_inside_the_tracer(x):
    y = x * 2
    z = y + 1
    return z


@pytest.fixture
def broken_add(monkeypatch):
    """Make the handler of BINARY_OP raise an unexpected error, as a tracer bug would."""
    from tinydynamo.dynamo.symbolic_convert import InstructionTranslatorBase

    original = InstructionTranslatorBase.BINARY_OP

    def buggy(self, inst):
        if inst.arg == 0:  # NB_ADD
            raise KeyError("a bug")
        return original(self, inst)

    monkeypatch.setattr(InstructionTranslatorBase, "BINARY_OP", buggy)


def test_an_internal_error_becomes_a_graph_break(broken_add):
    x = torch.randn(3)
    with config.patch(strict=False):
        explanation = tinydynamo.explain(fails_inside_the_tracer)(x)
        result = dynamo.compile(fails_inside_the_tracer, backend="eager")(x)
    assert_same(result, x * 2 + 1)
    assert explanation.graph_break_count == 1
    assert "internal error while tracing BINARY_OP (KeyError" in explanation.break_reasons[0].reason
    assert tinydynamo.stats()["internal_errors"] >= 1


def test_strict_raises_internal_errors(broken_add):
    with config.patch(strict=True), pytest.raises(KeyError, match="a bug"):
        dynamo.compile(fails_inside_the_tracer, backend="eager")(torch.randn(3))


# --- views and containers that stay live ---------------------------------------------------------------


def views_see_later_writes(x):
    d = {"a": x}
    keys, values, items = d.keys(), d.values(), d.items()
    d["b"] = x * 2
    del d["a"]
    return list(keys), [v + 1 for v in values], [(k, v * 3) for k, v in items], len(keys), "b" in keys


def views_of_an_input_dict(x, d):
    keys = d.keys()
    d["new"] = x.sum()
    return sorted(keys), keys


def test_dict_views_are_live_as_in_cpython():
    x = torch.randn(3)
    assert_same(dynamo.compile(views_see_later_writes, backend="eager")(x), views_see_later_writes(x))
    expected_dict, actual_dict = {"old": 1}, {"old": 1}
    expected = views_of_an_input_dict(x, expected_dict)
    actual = dynamo.compile(views_of_an_input_dict, backend="eager")(x, actual_dict)
    assert actual[0] == expected[0] and list(actual[1]) == list(expected[1])
    assert_same(actual_dict, expected_dict)
    actual_dict["later"] = 1  # the returned view is a live view of the caller's dict
    assert "later" in actual[1]


def sets_like_cpython(x, names):
    seen = {n for n in names}
    seen.add("z")
    seen.discard("a")
    both = seen | {"q"}
    return x * len(both), sorted(both), "b" in seen, frozenset(seen)


def test_sets_are_traced():
    x = torch.randn(2)
    compiled = dynamo.compile(sets_like_cpython, backend="eager")
    assert_same(compiled(x, ["a", "b"]), sets_like_cpython(x, ["a", "b"]))
    assert tinydynamo.explain(sets_like_cpython)(x, ["a", "b"]).graph_break_count == 0


def augmented_assignment_on_an_int(x):
    total = 0
    for t in (x, x * 2):
        total += t
    return total


def test_augmented_assignment_on_a_python_number():
    x = torch.randn(3)
    assert_same(dynamo.compile(augmented_assignment_on_an_int, backend="eager")(x), augmented_assignment_on_an_int(x))


# --- what models call inside forward ------------------------------------------------------------------


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def uses_a_function_and_a_loss_module(x, target):
    loss_fn = torch.nn.MSELoss(reduction="sum")
    return loss_fn(Square.apply(x), target)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_autograd_function_and_a_module_made_in_the_frame(backend):
    x, target = torch.randn(4, requires_grad=True), torch.randn(4)
    x_eager = x.detach().clone().requires_grad_()
    loss = dynamo.compile(uses_a_function_and_a_loss_module, backend=backend)(x, target)
    expected = uses_a_function_and_a_loss_module(x_eager, target)
    loss.backward()
    expected.backward()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(x.grad, x_eager.grad)
    assert tinydynamo.explain(uses_a_function_and_a_loss_module)(x, target).graph_break_count == 0


@functools.lru_cache(maxsize=None)
def table_size(n):
    return n * 4


def uses_a_cached_function(x):
    return x.reshape(table_size(1), -1)


class Tracker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1  # an attribute write, replayed after the graph
        total = sum(p.sum() for p in self.parameters())
        names = [name for name, _ in self.named_modules()]
        return self.lin(x) + total, names


def test_lru_cache_and_module_walks():
    x = torch.randn(8)
    assert_same(dynamo.compile(uses_a_cached_function, backend="eager")(x), uses_a_cached_function(x))
    assert tinydynamo.explain(uses_a_cached_function)(x).graph_break_count == 0
    module, x = Tracker(), torch.randn(2, 3)
    compiled = dynamo.compile(module, backend="eager")
    expected = Tracker.forward(module, x)  # calls becomes 1
    assert_same(compiled(x), expected)
    assert module.calls == 2
    assert tinydynamo.explain(module)(x).graph_break_count == 0


def test_a_relative_import_inside_the_function(tmp_path, monkeypatch):
    package = tmp_path / "relpkg"
    package.mkdir()
    (package / "__init__.py").write_text("SCALE = 3\n")
    (package / "mod.py").write_text(
        "def uses_a_relative_import(x):\n    from . import SCALE\n    return x * SCALE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from relpkg import mod

    x = torch.randn(3)
    assert_same(dynamo.compile(mod.uses_a_relative_import, backend="eager")(x), x * 3)
    assert tinydynamo.explain(mod.uses_a_relative_import)(x).graph_break_count == 0


class Validated:
    """Like transformers' configs: __setattr__ validates and remaps every assignment."""
    attribute_map = {"num_labels": "width"}

    def __init__(self):
        self.mode = None
        self.width = 2

    def __setattr__(self, name, value):
        if name == "mode" and value not in (None, "sum", "mean"):
            raise ValueError(value)
        super().__setattr__(self.attribute_map.get(name, name), value)


def sets_a_validated_attribute(x, cfg):
    if cfg.mode is None:
        cfg.mode = "sum"
    return x.sum() if cfg.mode == "sum" else x.mean()


def remaps_an_attribute_then_reads_it(x, cfg):
    cfg.mode = "mean"
    cfg.num_labels = 3  # CvT's head: self.config.problem_type = ..., then self.config.num_labels
    return x * cfg.width


def test_a_python_setattr_is_traced_and_its_writes_replayed():
    x = torch.randn(3)
    cfg = Validated()
    assert_same(dynamo.compile(sets_a_validated_attribute, backend="eager")(x, cfg), x.sum())
    assert cfg.mode == "sum"
    assert tinydynamo.explain(sets_a_validated_attribute)(x, Validated()).graph_break_count == 0
    cfg = Validated()
    assert_same(dynamo.compile(remaps_an_attribute_then_reads_it, backend="eager")(x, cfg), x * 3)
    assert (cfg.mode, cfg.width, "num_labels" in vars(cfg)) == ("mean", 3, False)
    assert tinydynamo.explain(remaps_an_attribute_then_reads_it)(x, Validated()).graph_break_count == 0


def test_a_python_setattr_that_raises_raises_as_in_eager():
    def sets_an_invalid_mode(x, cfg):
        cfg.mode = "max"
        return x + 1

    with pytest.raises(ValueError, match="max"):
        dynamo.compile(sets_an_invalid_mode, backend="eager")(torch.randn(2), Validated())


def helper_without_tensors(name):
    return name.upper()


def calls_a_helper(x, name):
    return x + len(helper_without_tensors(name))


def test_frames_without_tensors_are_not_compiled():
    """Like Dynamo's has_tensor_in_frame: a frame called with no tensor (or module) in its
    arguments runs as it is; the function the user compiled is traced all the same."""
    x = torch.randn(2)
    compiled = dynamo.compile(helper_without_tensors, backend="eager")
    assert compiled("a") == "A"
    with config.patch(strict=True):
        assert_same(dynamo.compile(calls_a_helper, backend="eager")(x, "ab"), x + 2)
    holder = Box()
    holder.inner = {"t": [x]}
    assert convert_frame.has_tensor(holder, set()) and convert_frame.has_tensor(torch.nn.ReLU(), set())
    assert not convert_frame.has_tensor(Validated(), set()) and not convert_frame.has_tensor(("a", 1), set())


Point3 = collections.namedtuple("Point3", ["x", "y", "z"], defaults=(None, 1, None))


def builds_a_namedtuple_with_defaults(a, b):
    p = Point3(a, z=b)  # y takes its default, between two given fields
    return Point3(p.x, p[1], p.z + b)


def test_namedtuple_defaults_keep_the_field_order():
    a, b = torch.randn(2), torch.randn(2)
    result = dynamo.compile(builds_a_namedtuple_with_defaults, backend="eager")(a, b)
    assert type(result) is Point3 and result.y == 1
    assert_same(result, builds_a_namedtuple_with_defaults(a, b))


class Pair(collections.namedtuple("Pair", ["a", "b"])):
    def total(self):
        return self.a + self.b


def python_semantics_from_pytorchs_own_tests(x):
    d = collections.OrderedDict()
    d["x"] = x + 1
    d.update([("y", x * 2)])
    keys = dict.fromkeys(["p", "q"], 0)
    combos = list(itertools.combinations((1, 2, 3), 2))
    ranked = sorted([("b", 2), ("a", 3)], key=lambda item: item[1], reverse=True)
    return (d["x"] + d["y"], isinstance(d, collections.OrderedDict), keys, combos, ranked,
            Pair(x, 1).total(), x in [x], 4 * [1], x.__class__.__name__)


def test_python_semantics_from_pytorchs_own_tests():
    x = torch.randn(3)
    compiled = dynamo.compile(python_semantics_from_pytorchs_own_tests, backend="eager")
    result, expected = compiled(x), python_semantics_from_pytorchs_own_tests(x)
    assert type(result) is tuple and isinstance(result[0], torch.Tensor)
    assert_same(result, expected)
    assert tinydynamo.explain(python_semantics_from_pytorchs_own_tests)(x).graph_break_count == 0


def defaultdicts_and_tensor_types(a, b):
    counts = collections.defaultdict(list)
    counts["k"].append(a + 1)
    d = collections.defaultdict.fromkeys("a", "b")
    d["a"] = 1
    half = a.to(torch.float16)
    return counts, d, b.type(half.type()), half.type()


def test_defaultdicts_and_tensor_types():
    a, b = torch.randn(3), torch.randn(3)
    result = dynamo.compile(defaultdicts_and_tensor_types, backend="eager")(a, b)
    expected = defaultdicts_and_tensor_types(a, b)
    assert type(result[0]) is collections.defaultdict and result[0].default_factory is list
    assert_same(result, expected)
    assert tinydynamo.explain(defaultdicts_and_tensor_types)(a, b).graph_break_count == 0


def iterators_see_later_appends(x, inputs):
    xs = [x]
    for item in xs:  # the loop visits what the body appends, as in CPython
        if len(xs) < 3:
            xs.append(item * 2)
    it = iter(inputs)
    inputs.append(x + 5)  # a list from the caller: its iterator sees the append too
    return xs, list(it)


def test_list_iterators_are_live_as_in_cpython():
    x = torch.randn(2)
    expected = iterators_see_later_appends(x, [x - 1])
    assert_same(dynamo.compile(iterators_see_later_appends, backend="eager")(x, [x - 1]), expected)


class CachesATensor(torch.nn.Module):
    """transformers' Wav2Vec2ConformerRotaryPositionalEmbedding: a tensor cached on the module."""

    def __init__(self):
        super().__init__()
        self.cached_len = None
        self.cached = None

    def forward(self, x):
        if x.shape[1] == self.cached_len and self.cached is not None:
            return x * self.cached
        self.cached_len = x.shape[1]
        self.cached = torch.arange(x.shape[1]).float().cos()
        return x * self.cached


def test_a_tensor_cached_on_a_module_is_stored_and_read_back():
    compiled_model, eager = CachesATensor(), CachesATensor()
    compiled = dynamo.compile(compiled_model, backend="eager")
    for n in (6, 6, 4):
        x = torch.randn(2, n)
        torch.testing.assert_close(compiled(x), eager(x))
        assert compiled_model.cached_len == n
        torch.testing.assert_close(compiled_model.cached, eager.cached)
    assert tinydynamo.explain(CachesATensor())(torch.randn(2, 6)).graph_break_count == 0


class RotaryCache(torch.nn.Module):
    """Older rotary embeddings (GPT-NeoX's in transformers 4.x): the cos table is re-registered
    as a non-persistent buffer when a longer sequence comes."""

    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 8, 2).float() / 8), persistent=False)
        self.seq_len_cached = 0

    def forward(self, x):
        if x.shape[1] > self.seq_len_cached:
            self.seq_len_cached = x.shape[1]
            t = torch.arange(x.shape[1], dtype=self.inv_freq.dtype)
            self.register_buffer("cos_cached", torch.outer(t, self.inv_freq).cos(), persistent=False)
        return x[..., :4] * self.cos_cached[:x.shape[1]]


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_a_buffer_registered_in_forward_is_read_back(backend):
    compiled_model, eager = RotaryCache(), RotaryCache()
    compiled = dynamo.compile(compiled_model, backend=backend)
    for n in (5, 5, 7, 3):
        x = torch.randn(2, n, 8)
        torch.testing.assert_close(compiled(x), eager(x))
        torch.testing.assert_close(compiled_model.cos_cached, eager.cos_cached)
        assert compiled_model._non_persistent_buffers_set == eager._non_persistent_buffers_set
    assert tinydynamo.explain(RotaryCache())(torch.randn(2, 5, 8)).graph_break_count == 0


class Router(torch.nn.Module):
    """Switch Transformers' router: casts its classifier to its dtype on every call."""

    def __init__(self):
        super().__init__()
        self.classifier = torch.nn.Linear(4, 3)
        self.dtype = torch.float32

    def forward(self, x):
        self.classifier = self.classifier.to(self.dtype)
        return self.classifier(x.to(self.dtype))


def test_a_module_cast_to_its_own_dtype_is_the_same_module():
    router, x = Router(), torch.randn(2, 4)
    assert tinydynamo.explain(router)(x).graph_break_count == 0
    compiled = dynamo.compile(router, backend="eager")
    assert_same(compiled(x), router(x))
    router.dtype = torch.float64  # now .to() casts: the guards see it, and the cast runs eagerly
    assert_same(compiled(x), router(x))
    assert router.classifier.weight.dtype == torch.float64
    assert "casts its tensors" in tinydynamo.explain(Router().double())(x).break_reasons[0].reason


def writes_through_one_name_reads_through_the_other(x, a, b):
    a.scale = 5.0
    return x * b.scale


def test_an_object_passed_twice_is_one_object():
    x = torch.randn(3)
    box = Box()
    assert_same(dynamo.compile(writes_through_one_name_reads_through_the_other, backend="eager")(x, box, box), x * 5)
    assert box.scale == 5.0
    assert_same(dynamo.compile(writes_through_one_name_reads_through_the_other, backend="eager")(x, Box(), Box()), x * 2)


class Entered:
    def __init__(self):
        self.depth = 0

    def __enter__(self):
        self.depth += 1
        return self

    def __exit__(self, *exc):
        self.depth -= 1
        return False


def writes_through_an_alias_after_a_break(x):
    box = Box()
    alias = box
    print("a graph break")  # the resume function receives `box` and `alias`: one object
    alias.scale = 5.0
    return x * box.scale


def test_an_object_is_one_object_across_a_graph_break():
    x = torch.randn(3)
    assert_same(dynamo.compile(writes_through_an_alias_after_a_break, backend="eager")(x), x * 5)


def hasattr_on_an_object_made_in_the_frame(x):
    box = Box(3.0)
    box.extra = 1.0
    return (x + hasattr(box, "scale") + 2 * hasattr(box, "missing") + getattr(box, "extra", 10.0)
            + getattr(box, "absent", 100.0))


def test_hasattr_and_getattr_see_the_attributes_of_an_object_made_in_the_frame():
    x = torch.randn(3)
    compiled = dynamo.compile(hasattr_on_an_object_made_in_the_frame, backend="eager", fullgraph=True)
    assert_same(compiled(x), hasattr_on_an_object_made_in_the_frame(x))


EVENTS = []


class Recorded:
    """A context manager with side effects on a global, and none on itself."""

    def __enter__(self):
        EVENTS.append("enter")
        return self

    def __exit__(self, *exc):
        EVENTS.append("exit")


@contextlib.contextmanager
def doubled(x):
    EVENTS.append("before")
    yield x * 2
    EVENTS.append("after")


def with_user_context_managers(x):
    with Entered() as ctx:
        y = x * (ctx.depth + 1)
    with Recorded():
        y = y.sin()
    with doubled(y) as z:
        y = z + 1
    with contextlib.nullcontext():
        return y + ctx.depth


def test_context_managers_written_in_python_are_traced_without_a_break():
    x = torch.randn(3)
    EVENTS.clear()
    expected = with_user_context_managers(x)
    assert EVENTS == ["enter", "exit", "before", "after"]
    EVENTS.clear()
    assert_same(dynamo.compile(with_user_context_managers, backend="eager", fullgraph=True)(x), expected)
    assert EVENTS == ["enter", "exit", "before", "after"]


def float32_inside_autocast_off(x):
    with torch.autocast(device_type="cpu", enabled=False):  # as Hugging Face's rotary embeddings
        return (x.float() @ x.float().t()).cos()


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_autocast_blocks_are_traced_whether_they_keep_or_switch_the_state(backend):
    x = torch.randn(4, 4)
    compiled = dynamo.compile(float32_inside_autocast_off, backend=backend, fullgraph=True)
    assert_same(compiled(x), float32_inside_autocast_off(x))  # a block that changes nothing
    with torch.autocast("cpu", dtype=torch.bfloat16):  # now the block switches autocast off
        expected = float32_inside_autocast_off(x)
        actual = compiled(x)
        assert torch.is_autocast_enabled("cpu")  # and back on after it
    assert actual.dtype == expected.dtype == torch.float32
    assert_same(actual, expected)


LIBRARY_LOG = logging.getLogger("tinydynamo.tests.library")


def logs_at_debug_level(x):
    LIBRARY_LOG.debug("input of shape %s", tuple(x.shape))
    return x * 2


def test_a_log_call_of_a_disabled_level_is_dropped_until_the_level_is_enabled(caplog):
    x = torch.randn(3)
    LIBRARY_LOG.setLevel(logging.WARNING)
    compiled = dynamo.compile(logs_at_debug_level, backend="eager")
    assert_same(compiled(x), x * 2)
    assert tinydynamo.explain(logs_at_debug_level)(x).graph_break_count == 0
    LIBRARY_LOG.setLevel(logging.DEBUG)  # the guard fails: the call is made again
    with caplog.at_level(logging.DEBUG, logger=LIBRARY_LOG.name):
        assert_same(compiled(x), x * 2)
    assert "input of shape (3,)" in caplog.text
    LIBRARY_LOG.setLevel(logging.NOTSET)


def deprecated_helper(x):
    warnings.warn("use the new helper", DeprecationWarning, stacklevel=2)
    return x * 2


def warns(x):
    warnings.warn("careful")
    y = deprecated_helper(x)
    warnings.warn(FutureWarning("an instance"))
    return y + 1


def issued(fn, calls=2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # once per place: the module's registry decides
        for _ in range(calls):
            fn(torch.ones(3))
    return [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


def test_warnings_are_issued_as_in_eager_without_a_break():
    """warnings.warn is replayed after the graph from the place that stacklevel names (a frame
    the trace inlined), with that module's registry, so the 'default' filter shows each once."""
    assert tinydynamo.explain(warns)(torch.ones(3)).graph_break_count == 0
    expected = issued(warns)
    assert [(m, c) for m, c, _, _ in expected] == [
        ("careful", UserWarning), ("use the new helper", DeprecationWarning), ("an instance", FutureWarning)]
    tinydynamo.reset()
    assert issued(tinydynamo.compile(warns, backend="eager")) == expected


def test_a_warning_about_the_caller_of_the_compiled_frame_breaks_the_graph():
    explained = tinydynamo.explain(deprecated_helper)(torch.ones(3))
    assert "stacklevel that names a frame outside the compiled one" in str(explained.break_reasons)


def make_recorder():
    """Closures that share cells, as a training loop's counters and hooks do."""
    calls, total = 0, None

    def record(t):
        nonlocal calls, total
        calls += 1
        total = t if total is None else total + t

    def count():
        return calls

    def step(x):
        nonlocal calls
        record(x)
        record(x * 2)
        y = x + count() + calls  # both see record's writes
        calls += 10
        return y

    return step, lambda: (calls, total)


def test_nonlocal_writes_to_cells_from_outside_are_replayed():
    step, state = make_recorder()
    expected = [step(torch.ones(2)) for _ in range(2)], state()
    step, state = make_recorder()
    assert tinydynamo.explain(step)(torch.ones(2)).graph_break_count == 0
    step, state = make_recorder()
    compiled = dynamo.compile(step, backend="eager")
    assert_same(([compiled(torch.ones(2)) for _ in range(2)], state()), expected)


class OnceLogger(logging.Logger):
    """transformers' loggers: ``warning_once`` is a method under ``functools.lru_cache``."""

    @functools.lru_cache(None)
    def warning_once(self, *args):
        self.warning(*args)


ONCE = OnceLogger("tinydynamo.tests.once")
ONCE.parent = logging.getLogger()  # made directly, not by getLogger: attach it where caplog listens


def warns_once(x):
    ONCE.warning_once("`use_cache=True` is incompatible with gradient checkpointing")
    return x + 1


def test_warning_once_is_issued_once_without_a_break(caplog):
    assert tinydynamo.explain(warns_once)(torch.ones(2)).graph_break_count == 0
    OnceLogger.warning_once.cache_clear()
    tinydynamo.reset()
    caplog.clear()
    compiled = dynamo.compile(warns_once, backend="eager")
    with caplog.at_level(logging.WARNING, logger="tinydynamo.tests.once"):
        for _ in range(3):
            compiled(torch.ones(2))
    assert [r.getMessage() for r in caplog.records if r.name == "tinydynamo.tests.once"] == [
        "`use_cache=True` is incompatible with gradient checkpointing"]


def marks_its_input(x):
    y = x * 2
    y.requires_grad_(True)  # the hook transformers installs on input embeddings
    return y + 1


def test_requires_grad_of_a_tensor_that_has_it_is_a_no_op():
    x = torch.randn(3, requires_grad=True)
    assert tinydynamo.explain(marks_its_input)(x).graph_break_count == 0
    assert tinydynamo.explain(marks_its_input)(x.detach()).graph_break_count == 1  # it would change the state
    assert_same(dynamo.compile(marks_its_input, backend="eager")(x), marks_its_input(x))


class ExtendsItsPositions(torch.nn.Module):
    """wav2vec2-conformer's relative positions: a buffer replaced by a longer tensor when an input
    is longer than it, then read back."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pe", torch.randn(1, 4), persistent=True)

    def forward(self, x):
        if self.pe.size(1) < x.size(1):
            self.pe = torch.arange(x.size(1), dtype=x.dtype)[None] * 0.5
        return x + self.pe[:, : x.size(1)]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_tensor_stored_under_a_buffers_name_replaces_the_buffer(backend):
    eager, compiled = ExtendsItsPositions(), ExtendsItsPositions()
    compiled.load_state_dict(eager.state_dict())
    step = tinydynamo.compile(compiled, backend=backend)
    for n in (3, 8, 8, 6):
        x = torch.randn(2, n)
        torch.testing.assert_close(step(x), eager(x))
        torch.testing.assert_close(compiled.pe, eager.pe)
        assert list(compiled._buffers) == ["pe"] and list(compiled.state_dict()) == ["pe"]
    assert tinydynamo.explain(ExtendsItsPositions())(torch.randn(2, 8)).graph_break_count == 0


def test_an_optimizer_step_wrapped_by_an_lr_scheduler_runs_once():
    """StepLR wraps optimizer.step in a closure over the optimizer (with the step's __module__,
    torch.optim.sgd); computing its result while tracing stepped the optimizer, and Python then
    stepped it again after the graph break."""
    results = []
    for compiled in (False, True):
        w = torch.nn.Parameter(torch.zeros(2))
        opt = torch.optim.SGD([w], lr=0.1)
        torch.optim.lr_scheduler.StepLR(opt, step_size=1)

        def step(g):
            w.grad = g
            opt.step()

        (dynamo.compile(step, backend="eager") if compiled else step)(torch.ones(2))
        results.append(w.detach().clone())
    torch.testing.assert_close(results[1], results[0])  # -0.1, not -0.2


def test_gradients_assigned_by_hand_are_replayed_in_one_graph():
    """``p.grad = None`` in a loop (zero_grad by hand) made the frame run eagerly; ``p.grad = g``
    broke the graph. Both are replayed after the graph, and a later read sees the new value."""
    def step(model, x):
        y = model(x) * 2
        for p in model.parameters():
            p.grad = None
        model.bias.grad = y.sum(0)
        return y, model.bias.grad + 1, model.weight.grad is None

    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        fn = dynamo.compile(step, backend="eager") if compiled else step
        results.append((fn(model, torch.ones(4, 3)), model.weight.grad, model.bias.grad))
    torch.testing.assert_close(results[1], results[0])
    explanation = tinydynamo.explain(step)(torch.nn.Linear(3, 2), torch.ones(4, 3))
    assert (explanation.graph_count, len(explanation.break_reasons)) == (1, 0)


class Counted:
    scale = 1.0
    calls = 0


class CountedChild(Counted):
    def scaled(self, x):
        return x * self.scale


def assign_class_attributes(x, obj):
    Counted.calls += 1
    Counted.scale = Counted.scale * 2
    y = obj.scaled(x) + type(obj).scale
    print("calls", Counted.calls)
    return y + CountedChild.scale


def shadow_a_class_attribute(x, obj):
    y = obj.scaled(x)
    CountedChild.scale = 10.0  # shadows Counted.scale for the subclass and its instances
    return y + obj.scaled(x) + Counted.scale


@pytest.mark.parametrize("fn", [assign_class_attributes, shadow_a_class_attribute])
def test_class_attributes_assigned_in_the_frame_are_seen_and_replayed(fn, capsys):
    def run(f):
        Counted.scale, Counted.calls = 1.0, 0
        vars(CountedChild).get("scale") and delattr(CountedChild, "scale")
        results = [f(torch.ones(2), CountedChild()) for _ in range(3)]
        return results, Counted.scale, Counted.calls, vars(CountedChild).get("scale")

    try:
        expected, compiled = run(fn), run(tinydynamo.compile(fn, backend="eager"))
        torch.testing.assert_close(compiled, expected)
        assert capsys.readouterr().out.count("calls") == (6 if fn is assign_class_attributes else 0)
        explained = tinydynamo.explain(fn)(torch.ones(2), CountedChild())
        assert explained.graph_count == (2 if fn is assign_class_attributes else 1)
    finally:
        run(lambda x, obj: None)


EMA_MODEL = torch.nn.Linear(4, 4)
EMA_WEIGHTS = [p.detach().clone() for p in EMA_MODEL.parameters()]


@torch.no_grad()
def update_ema(step):
    decay = min(0.99, (1 + step) / (10 + step))
    torch._foreach_lerp_(EMA_WEIGHTS, list(EMA_MODEL.parameters()), 1 - decay)
    return decay


def test_a_function_of_no_tensor_arguments_that_reads_a_global_model_is_compiled():
    """An EMA update under @torch.no_grad(), called with the step only: the decorated function is
    a nested frame (the decorator's wrapper is the root), and a nested frame whose arguments hold
    no tensor was never compiled; it reads a global model, as Dynamo's has_tensor_in_frame sees."""
    expected = [w.clone() for w in EMA_WEIGHTS]
    for step in (3, 4):
        torch._foreach_lerp_(expected, list(EMA_MODEL.parameters()), 1 - min(0.99, (1 + step) / (10 + step)))
        assert tinydynamo.compile(update_ema, backend="eager")(step) == min(0.99, (1 + step) / (10 + step))
    torch.testing.assert_close(EMA_WEIGHTS, expected)
    assert tinydynamo.stats()["frames_compiled"] >= 1


def test_assigning_a_parameters_data_in_a_loop_is_traced():
    """MoCo's and BYOL's momentum update, ``pk.data = pk.data * m + pq.data * (1 - m)`` over the
    parameters, broke the graph inside the loop, so the whole frame ran eagerly. It is a copy into
    ``pk.data`` now: no autograd history, the values of eager's, one graph."""
    torch.manual_seed(0)
    online, target = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    eager_target = copy.deepcopy(target)

    def momentum_update(online, target, x, m=0.9):
        for pq, pk in zip(online.parameters(), target.parameters()):
            pk.data = pk.data * m + pq.data * (1. - m)
        return target(x)

    x = torch.randn(2, 4, requires_grad=True)
    explained = tinydynamo.explain(momentum_update)(online, copy.deepcopy(target), x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled = tinydynamo.compile(momentum_update)
    for _ in range(3):
        expected, actual = momentum_update(online, eager_target, x), compiled(online, target, x)
        torch.testing.assert_close(actual, expected)
        torch.testing.assert_close(list(target.parameters()), list(eager_target.parameters()))
        torch.autograd.grad(actual.sum(), [x, target.weight])  # the parameter is still a leaf
    assert all(p.requires_grad and p.grad_fn is None for p in target.parameters())


def test_assigning_data_of_another_dtype_breaks_the_graph():
    def f(x, p):
        p.data = p.data.double()
        return x + 1

    p, x = torch.nn.Parameter(torch.randn(3)), torch.randn(3)
    explained = tinydynamo.explain(f)(x, p)
    assert explained.graph_break_count == 1 and "changes the tensor's metadata" in explained.break_reasons[0].reason
    assert p.dtype == torch.float64


def test_a_state_dict_taken_in_the_frame_is_traced():
    """timm's ModelEma, ``zip(ema.state_dict().values(), model.state_dict().values())``, broke at
    ``destination._metadata = OrderedDict()`` (an attribute of an OrderedDict made in the frame).
    Now one graph: the EMA updates the same buffers as eager, and a returned state dict has
    eager's keys, ``_metadata`` and memory."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    ema, eager_model = copy.deepcopy(model), copy.deepcopy(model)
    eager_ema = copy.deepcopy(model)

    def update(model, ema, x):
        with torch.no_grad():
            for e, v in zip(ema.state_dict().values(), model.state_dict().values()):
                if e.dtype.is_floating_point:
                    e.copy_(0.9 * e + 0.1 * v)
        return ema(x)

    explained = tinydynamo.explain(update)(model, copy.deepcopy(ema), torch.randn(4, 3))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled = tinydynamo.compile(update)
    for _ in range(3):
        x = torch.randn(4, 3)
        model(x), eager_model(x)  # new batch statistics
        torch.testing.assert_close(compiled(model, ema, x), update(eager_model, eager_ema, x))
        torch.testing.assert_close(ema.state_dict(), eager_ema.state_dict())

    state, expected = tinydynamo.compile(lambda m: m.state_dict())(model), model.state_dict()
    assert type(state) is type(expected) and list(state) == list(expected)
    assert state._metadata == expected._metadata
    assert [v.data_ptr() for v in state.values()] == [v.data_ptr() for v in expected.values()]


def test_a_defaultdict_from_the_caller_is_traced_and_written_back():
    """A defaultdict from outside the frame was an opaque object: its __setitem__ broke the graph
    (PyTorch's dynamo tests: fn_default_dict_*). It is a dict now, whose missing keys call its
    default_factory, written back after the graph."""
    counts = collections.defaultdict(list)

    def f(x):
        counts["seen"].append(x.shape[0])
        counts["last"] = x + 1
        return x * len(counts["never"]), len(counts)

    expected_counts = collections.defaultdict(list)

    def eager(x):
        expected_counts["seen"].append(x.shape[0])
        expected_counts["last"] = x + 1
        return x * len(expected_counts["never"]), len(expected_counts)

    x = torch.randn(3)
    explained = tinydynamo.explain(f)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    counts.clear()
    compiled = tinydynamo.compile(f)
    for _ in range(2):
        torch.testing.assert_close(compiled(x), eager(x))
    assert type(counts) is collections.defaultdict and counts.default_factory is list
    assert list(counts) == list(expected_counts) and counts["seen"] == [3, 3] and counts["never"] == []
    torch.testing.assert_close(counts["last"], expected_counts["last"])
