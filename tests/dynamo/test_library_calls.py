"""Calls into the standard library, NumPy and torch's own Python that PyTorch's test_functions.py
exercises, traced without a graph break where torch._dynamo takes none: deques, dict subclasses,
``@torch.jit.script_if_tracing``, NumPy dtypes and scalars, ``max``/``min`` of one-element
tensors, queries of global state, torch.backends flags, and ``@torch.no_grad()`` on a nested
function. Each case runs eagerly and compiled and compares results and graph breaks."""
import collections
import dataclasses
import enum
import functools
import types
import typing

import numpy as np
import pytest
import torch
import torch.distributed as dist

import tinydynamo
import tinydynamo.dynamo as dynamo

from dynamo_cases import assert_same


def check(fn, *args, breaks=0, backend="eager"):
    """fn compiled matches fn eager, with ``breaks`` graph breaks."""
    expected = fn(*args)
    result = dynamo.compile(fn, backend=backend)(*args)
    assert_same(result, expected)
    assert tinydynamo.explain(fn)(*args).graph_break_count == breaks
    return result


def deque_operations(a, b):
    d = collections.deque([a, b])
    d.append(a + 1)
    d.extend([a, b])
    d.insert(0, "foo")
    tmp = d.pop()
    other = collections.deque([tmp])
    d.extendleft(other)
    other.clear()
    d[2] = "setitem"
    d = d.copy()
    d.append(d.popleft())
    d.rotate(2)
    bounded = collections.deque([a, b, a * 3], maxlen=2)
    bounded.appendleft(b * 5)
    return list(d), list(bounded), bounded.maxlen, len(d)


def returns_a_deque(a):
    d = collections.deque([a], maxlen=3)
    d.extend([a + 1, a + 2, a + 3])
    return d


def starts_shorter_than_its_maxlen(a):
    """A deque made from fewer items than its maxlen kept only the last one (a silent wrong
    answer, found by probing outside code)."""
    d = collections.deque([1, 2], maxlen=3)
    d.append(3)
    d.appendleft(0)
    return a * d[0] + d[-1], list(d), len(collections.deque([a], maxlen=5))


def test_deques_are_traced():
    a, b = torch.randn(3), torch.randn(3)
    check(deque_operations, a, b)
    check(starts_shorter_than_its_maxlen, a)
    result = check(returns_a_deque, a)
    assert type(result) is collections.deque and result.maxlen == 3


def slices_a_deque(a):
    return collections.deque([a, a])[0:1]


def test_slicing_a_deque_fails_as_in_eager():
    with pytest.raises(TypeError):
        dynamo.compile(slices_a_deque, backend="eager")(torch.randn(2))


class PlainOrderedDict(collections.OrderedDict):
    pass


class CountingDict(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value + 1)


def builds_dict_subclasses(x):
    return PlainOrderedDict(sample=x + 1), PlainOrderedDict([("a", x)])


def builds_a_dict_with_its_own_setitem(x):
    return CountingDict(a=x)


def test_plain_dict_subclasses_are_dicts():
    x = torch.randn(3)
    first, second = check(builds_dict_subclasses, x)
    assert type(first) is PlainOrderedDict and type(second) is PlainOrderedDict
    check(builds_a_dict_with_its_own_setitem, x, breaks=0)  # no op before the break: nothing cut
    (reason,) = tinydynamo.explain(builds_a_dict_with_its_own_setitem)(x).break_reasons
    assert "CountingDict" in reason.reason and not reason.counted  # overrides a method: not a plain dict


@torch.jit.script_if_tracing
def scripted_if_tracing(x, y, c=1.2):
    return torch.cos(x * y) + c


def calls_a_script_if_tracing_function(a, b):
    return scripted_if_tracing(a, b)


def test_script_if_tracing_functions_are_traced():
    check(calls_a_script_if_tracing_function, torch.randn(3), torch.randn(3))


def numpy_limits_and_dtypes(a):
    big = np.iinfo(np.int16).max
    low = np.finfo(np.float32).min
    dt = np.dtype("float")
    return a + big, a * 0 + low, torch.from_numpy(np.full_like(a.numpy(), 2.4, dtype=dt)), a + np.float64(0.5)


def makes_a_tensor_from_a_numpy_scalar(a):
    return a + 1, torch.tensor(np.float64(1.5))


def test_numpy_dtypes_limits_and_scalars_are_constants():
    a = torch.randn(3)
    check(numpy_limits_and_dtypes, a)
    _, made = check(makes_a_tensor_from_a_numpy_scalar, a, breaks=1)
    assert made.dtype is torch.float64  # NumPy's dtype, where torch.tensor(1.5) is float32


def clamps_with_max_and_min(a, b):
    c = a + b
    a, b = a.sum(), b.sum()
    a = min(max(a, 0), 1)
    b = max(0, min(1, b))
    return max(a, b) - min(a, b) + c


def max_of_vectors(a, b):
    return max(a, b)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_max_and_min_of_one_element_tensors(backend):
    torch.manual_seed(0)
    for _ in range(3):
        check(clamps_with_max_and_min, torch.randn(4), torch.randn(4), backend=backend)


def test_max_of_vectors_raises_as_in_eager():
    with pytest.raises(RuntimeError, match="ambiguous"):
        dynamo.compile(max_of_vectors, backend="eager")(torch.randn(3), torch.randn(3))


def branches_on_global_state(x):
    if dist.is_initialized():
        x = x + 1
    if torch.autograd._is_checkpoint_valid():
        x = x * 2
    if torch.backends.cuda.matmul.allow_tf32:
        x = x - 1
    return x


def test_global_state_queries_are_answered_and_guarded():
    x = torch.randn(3)
    check(branches_on_global_state, x)
    guards = "\n".join(tinydynamo.explain(branches_on_global_state)(x).guards)
    assert "STATE_QUERY" in guards and "is_initialized" in guards


def decorates_a_nested_function(x):
    @torch.no_grad()
    def augment(y):
        return (y + 1) * 2

    out = augment(x)
    return out, out.requires_grad, torch.is_grad_enabled()


def test_no_grad_decorator_on_a_nested_function():
    x = torch.randn(3, requires_grad=True)
    out, requires_grad, grad_enabled = check(decorates_a_nested_function, x)
    assert requires_grad is False and grad_enabled is True


class ChannelsFirstLayerNorm(torch.nn.LayerNorm):
    """transformers' SqueezeBertLayerNorm: the parent's forward called unbound on self."""

    def forward(self, x):
        return torch.nn.LayerNorm.forward(self, x.permute(0, 2, 1)).permute(0, 2, 1)


@dataclasses.dataclass
class Output:
    logits: torch.Tensor = None


class SubOutput(Output):  # not decorated again, as transformers' SegFormerImageClassifierOutput
    pass


def builds_a_subclassed_output(x):
    return SubOutput(logits=x + 1)


def test_a_parent_forward_and_an_inherited_dataclass_init_are_traced():
    x = torch.randn(2, 8, 5)
    norm = ChannelsFirstLayerNorm(8)
    torch.testing.assert_close(dynamo.compile(norm, backend="eager")(x), norm(x))
    assert tinydynamo.explain(norm)(x).graph_break_count == 0
    result = check(builds_a_subclassed_output, torch.randn(3))
    assert type(result) is SubOutput


def scales_by_a_numpy_constant(x):
    y = x / np.sqrt(16)  # transformers' Reformer: a numpy.float64 constant, not an array op
    print("a graph break")
    return torch.cat([y, y])


def calls_vmap(x):
    return torch.vmap(lambda row: row.sin() * 2)(x.exp())


def test_numpy_calls_on_constants_fold_and_vmap_frames_run_as_python(capsys):
    x = torch.randn(2, 3)
    result = dynamo.compile(scales_by_a_numpy_constant, backend="eager")(x)
    assert type(result) is torch.Tensor
    torch.testing.assert_close(result, scales_by_a_numpy_constant(x))
    torch.testing.assert_close(dynamo.compile(calls_vmap, backend="eager")(x), calls_vmap(x))  # strict: no error


class Backend(str, enum.Enum):  # diffusers' AttentionBackendName
    NATIVE = "native"
    MATH = "math"


class AttentionRegistry:  # diffusers' _AttentionBackendRegistry: a dict keyed by enum members
    _backends = {Backend.NATIVE: torch.softmax, Backend.MATH: torch.log_softmax}
    _active_backend = Backend.NATIVE

    @classmethod
    def get_active_backend(cls):
        return cls._active_backend, cls._backends[cls._active_backend]


def dispatches_on_an_enum_key(q):
    backend, fn = AttentionRegistry.get_active_backend()
    names = [member.value for member in AttentionRegistry._backends]
    return fn(q, -1), backend, names


def test_enum_members_are_dict_keys_guarded_by_identity(monkeypatch):
    q = torch.randn(3, 4)
    check(dispatches_on_an_enum_key, q)
    compiled = dynamo.compile(dispatches_on_an_enum_key, backend="eager")
    compiled(q)
    monkeypatch.setattr(AttentionRegistry, "_active_backend", Backend.MATH)  # the guard sees the change
    assert_same(compiled(q), dispatches_on_an_enum_key(q))


class SiLUActivation(torch.nn.Module):  # transformers.activations: no __init__ of its own
    def forward(self, input):
        return torch.nn.functional.silu(input)


class ClassInstantier(collections.OrderedDict):  # transformers' ACT2FN: each lookup builds a module
    def __getitem__(self, key):
        content = super().__getitem__(key)
        cls, kwargs = content if isinstance(content, tuple) else (content, {})
        return cls(**kwargs)


ACT2FN = ClassInstantier({"silu": SiLUActivation, "leaky": (torch.nn.LeakyReLU, {"negative_slope": 0.3})})


def builds_activations(x):
    return ACT2FN["silu"](x) * 2 + ACT2FN["leaky"](x)


class CountsInstances(torch.nn.Module):
    created = 0

    def __init__(self):
        super().__init__()
        CountsInstances.created += 1  # the user's own __init__: running it at trace time only is wrong

    def forward(self, x):
        return x + 1


def test_modules_built_by_a_dict_subclass_are_traced_and_guarded_once():
    x = torch.randn(5)
    check(builds_activations, x)
    compiled = dynamo.compile(builds_activations, backend="eager")
    compiled(x)
    compiled(x)
    assert tinydynamo.stats()["recompiles"] == 0  # the guard reads past ACT2FN's __getitem__


def test_a_module_whose_own_init_is_user_code_is_a_graph_break():
    def f(x):
        return CountsInstances()(x)

    x = torch.randn(3)
    before = CountsInstances.created
    assert_same(dynamo.compile(f, backend="eager")(x), f(x))
    assert CountsInstances.created - before == 2  # once per call, compiled or not
    assert "its __init__ is the user's own code" in tinydynamo.explain(f)(x).break_reasons[0].reason


class Registry(dict):
    def __getitem__(self, key):
        return super().__getitem__(key) * 2


SCALES = Registry(a=[1.5, 2.5])


def returns_an_item_read_past_getitem(x):
    items = super(Registry, SCALES).__getitem__("a")  # the list itself, returned to the caller
    return x * items[0], items


def test_an_item_read_past_getitem_is_rebuilt_from_its_source():
    result = check(returns_an_item_read_past_getitem, torch.randn(2))
    assert result[1] is dict.__getitem__(SCALES, "a")  # the very list, not a copy


VALIDATORS = {typing.Union: lambda x: x + 1, list: lambda x: x * 2, typing.ClassVar: lambda x: x - 3}
EXPECTED = {"kind": typing.Union, "field": typing.Optional[int]}  # huggingface_hub's @strict


def validates_by_type(x):
    return VALIDATORS[typing.get_origin(EXPECTED["field"])](x) + VALIDATORS.get(EXPECTED["kind"])(x)


def test_classes_and_typing_forms_are_dict_keys_guarded_by_identity(monkeypatch):
    x = torch.randn(3)
    check(validates_by_type, x)
    compiled = dynamo.compile(validates_by_type, backend="eager")
    compiled(x)
    monkeypatch.setitem(EXPECTED, "kind", typing.ClassVar)  # another _SpecialForm: the key's guard sees it
    assert_same(compiled(x), validates_by_type(x))


def multiplies_by_a_csr_matrix(values, crow, col):
    matrix = torch.sparse_csr_tensor(crow, col, values, size=(2, 2))  # torch_geometric's GraphUNet
    return (matrix @ torch.ones(2, 1)).sum() * 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_an_op_returning_a_sparse_tensor_is_a_graph_break(backend):
    args = torch.tensor([1.0, 2.0]), torch.tensor([0, 1, 2]), torch.tensor([0, 1])
    assert_same(dynamo.compile(multiplies_by_a_csr_matrix, backend=backend)(*args), multiplies_by_a_csr_matrix(*args))
    reasons = tinydynamo.explain(multiplies_by_a_csr_matrix)(*args).break_reasons
    assert "layout torch.sparse_csr" in reasons[0].reason


class Settings:
    scale = 2.0


def test_id_of_an_object_read_from_outside_is_a_constant_under_a_guard():
    """Libraries key caches by id() (copy.deepcopy's memo, transformers' configs)."""
    settings = {"current": Settings()}
    seen = {id(settings["current"]): 3.0}

    def scaled(x):
        return x * seen.get(id(settings["current"]), 1.0)

    compiled = tinydynamo.compile(scaled, backend="eager")
    x = torch.randn(4)
    torch.testing.assert_close(compiled(x), x * 3.0)
    settings["current"] = Settings()  # another object: another id, the guard sends it to a recompile
    torch.testing.assert_close(compiled(x), x)
    assert tinydynamo.explain(scaled)(x).graph_break_count == 0


def test_id_of_an_object_made_in_the_frame_is_a_key_inside_the_frame():
    """copy.deepcopy keys its memo by id(): two objects, two ids, each stable."""
    def memo(x):
        a, b = Settings(), Settings()
        seen = {id(a): 10, id(b): 1}
        return x * seen[id(a)] + seen[id(b)] + (id(a) == id(b))

    x = torch.randn(3)
    assert tinydynamo.explain(memo)(x).graph_break_count == 0
    torch.testing.assert_close(tinydynamo.compile(memo, backend="eager")(x), memo(x))


def test_id_of_an_object_made_in_the_frame_does_not_leave_it():
    def leaks(x):
        return x + 1, id(Settings())

    explained = tinydynamo.explain(leaks)(torch.randn(3))
    assert "id() of an object made in the frame, leaving the frame" in str(explained.break_reasons)
    assert isinstance(tinydynamo.compile(leaks, backend="eager")(torch.randn(3))[1], int)


def scans_pointwise(x):
    from torch._higher_order_ops.associative_scan import associative_scan

    return associative_scan(lambda a, b: a + b, x, dim=0)


def test_associative_scan_refuses_pointwise_mode_on_cpu_as_eager_does():
    with pytest.raises(ValueError, match="combine_mode='pointwise'"):
        scans_pointwise(torch.randn(4))
    with pytest.raises(ValueError, match="combine_mode='pointwise'"):
        dynamo.compile(scans_pointwise, backend="eager")(torch.randn(4))


def test_a_fresh_bound_method_is_never_taken_for_a_torch_function():
    """Torch's namespaces were recognised by the ids of their functions, some of them bound methods
    made afresh when read (``__subclasshook__``) and freed: a later bound method at the same address
    (einops' ``AbstractBackend.__subclasses__``) was then traced as a torch function. The functions
    are now held, and compared by identity. (The old code failed this about once in 20,000.)"""
    from tinydynamo.dynamo.variables.torch import is_torch_callable

    class Backend:
        pass

    kinds = (lambda: Backend.__subclasses__, lambda: Backend.mro, lambda: "abc".upper, lambda: [].append)
    assert not any(is_torch_callable(make()) for make in kinds for _ in range(20000))


def test_a_frame_holding_a_module_object_reads_none_of_its_attributes():
    """einops' backend holds the torch module. Deciding whether a frame's arguments hold tensors
    walked the module's attributes and read deprecated ones, which warn (FutureWarning)."""
    import types
    import warnings

    from tinydynamo.dynamo.convert_frame import has_tensor

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not has_tensor(types.SimpleNamespace(torch=torch, name="backend"), set())


def test_an_import_inside_the_frame_of_a_module_not_imported_yet(tmp_path, monkeypatch):
    """``from package import submodule`` of a submodule not imported yet (einops imports its torch
    backend on its first call) runs while tracing, as the statement runs in eager: no break."""
    import importlib
    import sys

    package = tmp_path / "lazy_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scales.py").write_text("FACTOR = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("lazy_package")
    monkeypatch.delitem(sys.modules, "lazy_package.scales", raising=False)

    def fn(x):
        from lazy_package import scales
        return x * scales.FACTOR

    x = torch.randn(3)
    explained = tinydynamo.explain(fn)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons
    assert "lazy_package.scales" in sys.modules
    torch.testing.assert_close(dynamo.compile(fn)(x), x * 3)
    monkeypatch.delitem(sys.modules, "lazy_package")
    monkeypatch.delitem(sys.modules, "lazy_package.scales")


@functools.lru_cache
def distributed_available():  # transformers' is_torch_distributed_available
    return True


HELPERS = types.SimpleNamespace(distributed_available=distributed_available)


def asks_a_cached_function_by_two_names(x):
    if distributed_available() and HELPERS.distributed_available():
        return x + 1
    return x


def test_a_cached_function_reached_by_two_names():
    """The second name is guarded to be the first's object; the tracker of an lru_cache
    function keeps no source of its own (generate() raised an internal error in the guard)."""
    check(asks_a_cached_function_by_two_names, torch.randn(3))
