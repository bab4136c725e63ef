"""Guards are sound in both directions, for every guard kind:

- change what a guard checks -> the frame is recompiled, never run with a stale graph;
- call again with equal inputs -> the cached code runs (a cache hit, no recompile).

Each test calls a compiled function several times and compares every result with eager.
"""
import contextlib
import copy
import gc
import io
import warnings

import pytest
import torch
import torch.nn as nn

import tinydynamo
import tinydynamo.dynamo as dynamo
from tinydynamo import config
from tinydynamo.dynamo import eval_frame


class Checker:
    """Calls ``fn`` compiled and eagerly, compares, and says whether it (re)compiled. Sizes are
    specialised (``dynamic=False``): these tests are about static guards; automatic dynamic
    has its own tests (test_dynamic_shapes.py)."""

    def __init__(self, fn, dynamic=False):
        self.fn = fn
        self.compiled = dynamo.compile(fn, backend="eager", dynamic=dynamic)

    def __call__(self, *args):
        before = tinydynamo.stats()["frames_compiled"]
        torch.testing.assert_close(self.compiled(*args), self.fn(*args))
        return tinydynamo.stats()["frames_compiled"] - before  # 1 if this call compiled


def stats():
    return tinydynamo.stats()


# --- TENSOR_MATCH ---------------------------------------------------------------------------------


def add_one(x):
    return x + 1


def test_equal_tensors_hit_the_cache():
    check = Checker(add_one)
    assert check(torch.randn(3)) == 1
    assert check(torch.randn(3)) == 0
    assert check(torch.randn(3)) == 0
    assert stats()["cache_hits"] == 2 and stats()["recompiles"] == 0


@pytest.mark.parametrize("changed", [
    torch.randn(4),  # shape
    torch.randn(3, dtype=torch.float64),  # dtype
    torch.randn(3, requires_grad=True),  # requires_grad
    torch.randn(6)[::2],  # stride
    torch.nn.Parameter(torch.randn(3)),  # type
], ids=["shape", "dtype", "requires_grad", "stride", "type"])
def test_tensor_property_change_recompiles(changed):
    check = Checker(add_one)
    assert check(torch.randn(3)) == 1
    assert check(changed) == 1
    assert stats()["recompiles"] == 1
    assert check(torch.randn(3)) == 0  # the first entry still serves the first kind


def guard_source(fn, *args):
    return "\n".join(tinydynamo.explain(fn)(*args).guards)


def test_a_contiguous_tensor_is_checked_with_is_contiguous_and_a_transposed_one_recompiles():
    check = Checker(add_one)
    assert "x.is_cpu and x.shape == (3, 4) and x.is_contiguous()" in guard_source(add_one, torch.randn(3, 4))
    assert check(torch.randn(3, 4)) == 1
    assert check(torch.randn(4, 3).t()) == 1  # shape (3, 4), strides (1, 3)
    assert check(torch.randn(3, 4)) == 0 and check(torch.randn(4, 3).t()) == 0


def test_strides_are_compared_exactly_when_a_size_is_1():
    # is_contiguous() ignores the stride of a size-1 dimension, so such a tensor's strides are
    # compared as a tuple: (4, 1, 6) with strides (6, 6, 1), then with (6, 99, 1), is a recompile
    check = Checker(add_one)
    assert "x.stride() == (6, 6, 1)" in guard_source(add_one, torch.randn(4, 1, 6))
    assert check(torch.randn(4, 1, 6)) == 1
    assert check(torch.randn(4, 1, 6).as_strided((4, 1, 6), (6, 99, 1))) == 1


def test_the_hook_counts_cache_hits_and_the_guard_does_not():
    assert "counters" not in guard_source(add_one, torch.randn(3))
    compiled = dynamo.compile(add_one, backend="eager")
    for _ in range(4):
        compiled(torch.randn(3))
    assert stats()["cache_hits"] == 3
    tinydynamo.reset()
    assert stats()["cache_hits"] == 0


def test_device_change_recompiles():
    compiled = dynamo.compile(add_one, backend="eager")
    compiled(torch.randn(3))
    out = compiled(torch.randn(3, device="meta"))
    assert out.device.type == "meta" and out.shape == (3,)
    assert stats()["recompiles"] == 1


def test_unused_input_is_not_guarded():
    def f(x, unused):
        return x + 1

    check = Checker(f)
    assert check(torch.randn(3), torch.randn(2)) == 1
    assert check(torch.randn(3), "anything at all") == 0


# --- CONSTANT_MATCH -------------------------------------------------------------------------------


def scale_by(x, k):
    return x * k


@pytest.mark.parametrize("first, second", [(2, 3), (2, 2.0), (True, 1), ("a", "b"), (None, 0)])
def test_constant_argument_change_recompiles(first, second):
    def f(x, k):
        return x + (0 if k is None else len(k) if isinstance(k, str) else k)

    check = Checker(f)
    assert check(torch.randn(3), first) == 1
    assert check(torch.randn(3), first) == 0
    assert check(torch.randn(3), second) == 1


GAIN = 2.0


def uses_global(x):
    return x * GAIN


def test_global_constant_change_recompiles():
    global GAIN
    check = Checker(uses_global)
    assert check(torch.randn(3)) == 1
    GAIN = 5.0
    try:
        assert check(torch.randn(3)) == 1  # not the stale graph with 2.0 in it
        assert check(torch.randn(3)) == 0
    finally:
        GAIN = 2.0


def make_closure():
    k = 2

    def f(x):
        return x * k

    def set_k(value):
        nonlocal k
        k = value

    return f, set_k


def test_closure_cell_contents_change_recompiles():
    f, set_k = make_closure()
    check = Checker(f)
    assert check(torch.randn(3)) == 1
    set_k(7)
    assert check(torch.randn(3)) == 1
    assert check(torch.randn(3)) == 0


def test_two_closures_of_one_code_object_each_compile():
    f2, _ = make_closure()
    f3, set_k = make_closure()
    set_k(3)
    check2, check3 = Checker(f2), Checker(f3)
    assert check2(torch.randn(3)) == 1
    assert check3(torch.randn(3)) == 1


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
        self.scale = 2.0

    def forward(self, x):
        return self.act(x) * self.scale


def test_module_attribute_constant_change_recompiles():
    model = Gated()
    check = Checker(model)
    assert check(torch.randn(3)) == 1
    model.scale = 3.0
    assert check(torch.randn(3)) == 1


# --- the training flag --------------------------------------------------------------------------------


def test_training_flag_change_recompiles():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    check = Checker(model)
    x = torch.randn(8, 4)
    assert check(x) == 1
    model.eval()
    assert check(x) == 1  # batch norm reads self.training: eval uses the running statistics
    assert check(x) == 0
    model.train()
    assert check(x) == 0  # the first entry again


def test_compiled_module_eval_changes_the_original():
    model = nn.Dropout(0.5)
    compiled = dynamo.compile(model, backend="eager")
    compiled.eval()
    assert not model.training
    x = torch.randn(10)
    torch.testing.assert_close(compiled(x), x)


# --- ID_MATCH and TYPE_MATCH ---------------------------------------------------------------------------


def test_swapping_a_submodule_recompiles():
    model = Gated()
    check = Checker(model)
    assert check(torch.randn(3)) == 1
    model.act = nn.Tanh()
    assert check(torch.randn(3)) == 1
    model.act = nn.ReLU()  # a different ReLU object: ID_MATCH sees a new module
    assert check(torch.randn(3)) == 1


def helper(x):
    return x + 1


def uses_helper(x):
    return helper(x)


def test_swapping_a_global_function_recompiles():
    global helper
    original = helper
    check = Checker(uses_helper)
    assert check(torch.randn(3)) == 1
    helper = lambda x: x * 10  # noqa: E731
    try:
        assert check(torch.randn(3)) == 1
    finally:
        helper = original


class A:
    value = 1


class B:
    value = 1


def test_object_type_change_recompiles():
    def f(x, obj):
        return x + obj.value

    check = Checker(f)
    assert check(torch.randn(3), A()) == 1
    assert check(torch.randn(3), A()) == 0  # same type, same attribute values
    assert check(torch.randn(3), B()) == 1


class Scaled:
    gain = 1.0


@pytest.mark.parametrize("read", [lambda obj: type(obj).gain, lambda obj: obj.__class__.gain])
def test_a_class_attribute_read_through_type_of_an_object_is_guarded(read):
    obj = Scaled()
    check = Checker(lambda x: x * read(obj))
    try:
        assert check(torch.randn(3)) == 1
        Scaled.gain = 3.0
        assert check(torch.randn(3)) == 1  # not the stale graph with 1.0 in it
    finally:
        Scaled.gain = 1.0


def test_list_becoming_tuple_recompiles():
    def f(xs):
        return xs[0] + xs[1]

    check = Checker(f)
    assert check([torch.randn(3), torch.randn(3)]) == 1
    assert check((torch.randn(3), torch.randn(3))) == 1


# --- LENGTH_CHECK and DICT_KEYS ------------------------------------------------------------------


def test_list_length_change_recompiles():
    def f(xs):
        return sum(xs)

    check = Checker(f)
    assert check([torch.randn(3)] * 2) == 1
    assert check([torch.randn(3)] * 3) == 1


def test_module_list_growing_recompiles():
    layers = nn.ModuleList([nn.Linear(3, 3)])

    def f(x):
        for layer in layers:
            x = layer(x)
        return x

    check = Checker(f)
    assert check(torch.randn(3)) == 1
    layers.append(nn.Linear(3, 3))
    assert check(torch.randn(3)) == 1


def test_a_sliced_sequential_recompiles_when_it_grows_and_is_rebuilt_when_it_escapes():
    features = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3))

    def f(x):
        return features[1:](x)

    def escapes(x):
        tail = features[1:]
        return tail(x), tail

    check = Checker(f)
    assert check(torch.randn(3)) == 1
    features.append(nn.Tanh())  # the slice gets longer: guarded by the Sequential's length
    assert check(torch.randn(3)) == 1
    x = torch.randn(3)
    out, tail = dynamo.compile(escapes, backend="eager")(x)
    assert type(tail) is nn.Sequential and list(tail) == list(features)[1:] and tail is not features
    torch.testing.assert_close(out, escapes(x)[0])


def test_dict_keys_change_recompiles():
    def f(d):
        return sum(d.values())

    check = Checker(f)
    assert check({"a": torch.randn(3)}) == 1
    assert check({"a": torch.randn(3)}) == 0
    assert check({"a": torch.randn(3), "b": torch.randn(3)}) == 1


# --- DUPLICATE_INPUT and NO_ALIASING -------------------------------------------------------------------


def test_untying_weights_recompiles():
    model = nn.Module()
    model.a = nn.Linear(3, 3)
    model.b = nn.Linear(3, 3)
    model.b.weight = model.a.weight

    def f(m, x):
        return m.a(x) + m.b(x)

    check = Checker(f)
    assert check(model, torch.randn(3)) == 1
    placeholders = len([n for n in dynamo.explain(f)(model, torch.randn(3)).graphs[0].graph.nodes
                        if n.op == "placeholder"])
    assert placeholders == 4  # a.weight (= b.weight), a.bias, b.bias, x
    model.b.weight = nn.Parameter(torch.randn(3, 3))
    assert check(model, torch.randn(3)) == 1


def test_aliased_inputs_of_a_mutating_graph_recompile():
    def f(a, b):
        a.add_(1)
        return a + b

    compiled = dynamo.compile(f, backend="eager")
    x, y = torch.zeros(3), torch.zeros(3)
    torch.testing.assert_close(compiled(x, y), torch.full((3,), 1.0))
    z = torch.zeros(3)
    torch.testing.assert_close(compiled(z, z), torch.full((3,), 2.0))  # eager: b sees the add_
    assert stats()["recompiles"] == 1


# --- GRAD_MODE and DEFAULT_DTYPE -----------------------------------------------------------------------


def test_grad_mode_change_recompiles():
    check = Checker(add_one)
    x = torch.randn(3, requires_grad=True)
    assert check(x) == 1
    with torch.no_grad():
        assert check(x) == 1
        assert not dynamo.compile(add_one, backend="eager")(x).requires_grad


def test_default_dtype_change_recompiles():
    def f(x):
        return x + torch.ones(3)  # ones' dtype is the default dtype

    check = Checker(f)
    assert check(torch.randn(3)) == 1
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert check(torch.randn(3, dtype=torch.float32)) == 1
    finally:
        torch.set_default_dtype(previous)


def test_reading_the_default_dtype_is_guarded():
    def f(x):
        return x * torch.get_default_dtype().itemsize

    check = Checker(f)
    assert check(torch.randn(3)) == 1
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert check(torch.randn(3, dtype=torch.float32)) == 1
    finally:
        torch.set_default_dtype(previous)


# --- AUTOCAST ----------------------------------------------------------------------------------------

def matmul_then_float(q, k):
    return (q @ k).float() + 1


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_autocast_state_is_guarded_and_frames_compile_under_autocast(backend):
    compiled = dynamo.compile(matmul_then_float, backend=backend)
    q, k = torch.randn(4, 4), torch.randn(4, 4)
    before = stats()["frames_compiled"]
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the product in bfloat16, as eager's
        torch.testing.assert_close(compiled(q, k), matmul_then_float(q, k), rtol=0, atol=0)
    torch.testing.assert_close(compiled(q, k), matmul_then_float(q, k))  # float32 again: not stale
    assert stats()["frames_compiled"] == before + 2
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.testing.assert_close(compiled(q, k), matmul_then_float(q, k), rtol=0, atol=0)
    torch.testing.assert_close(compiled(q, k), matmul_then_float(q, k))
    assert stats()["frames_compiled"] == before + 2  # both entries are reused
    with torch.autocast("cpu", dtype=torch.bfloat16):
        explanation = tinydynamo.explain(matmul_then_float)(q, k)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)


def test_autocast_inside_the_function_matches_eager():
    def f(q, k):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            scores = (q @ k.transpose(-1, -2)).float()
        return scores.softmax(-1)

    q, k = torch.randn(2, 4, 4), torch.randn(2, 4, 4)
    out = dynamo.compile(f, backend="inductor", fullgraph=True)(q, k)
    assert out.dtype == f(q, k).dtype == torch.float32
    torch.testing.assert_close(out, f(q, k))
    assert not torch.is_autocast_enabled("cpu")


class AutocastHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    @torch.autocast("cpu", dtype=torch.bfloat16)
    def forward(self, x):
        return self.proj(x).relu()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_autocast_as_a_decorator_is_traced(backend):
    """``@torch.autocast(...)`` on a forward: its wrapper (torch/amp/autocast_mode.py) was not
    traced into, a graph break at every call (PyTorch's dynamo tests: ctx_autocast_decorator_cpu)."""
    torch.manual_seed(0)
    model, x = AutocastHead(), torch.randn(3, 4, requires_grad=True)
    explained = tinydynamo.explain(lambda x: model(x).float().sum())(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    expected = model(x)
    expected.float().sum().backward()
    grads = [x.grad, model.proj.weight.grad]
    x.grad = model.proj.weight.grad = None
    actual = dynamo.compile(model, backend=backend)(x)
    actual.float().sum().backward()
    assert actual.dtype == expected.dtype == torch.bfloat16 and not torch.is_autocast_enabled("cpu")
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close([x.grad, model.proj.weight.grad], grads)


def device_autocast_classes(x):
    with torch.cpu.amp.autocast(dtype=torch.bfloat16):  # subclasses of torch.autocast
        y = x @ x
    with torch.cuda.amp.autocast(enabled=False):  # off already: changes nothing
        return y * 2


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_the_device_autocast_classes_are_traced():
    x = torch.randn(4, 4)
    out = dynamo.compile(device_autocast_classes, backend="inductor", fullgraph=True)(x)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, device_autocast_classes(x))


class MixedPrecision(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x):
        h = torch.relu(self.up(x))
        with torch.autocast("cpu", enabled=False):  # a float32 region inside the autocast one
            gram = h.float() @ h.float().t()
        return self.down(h).float().sum(-1) + gram.sum(-1)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_training_step_under_autocast_matches_eager(backend):
    torch.manual_seed(0)
    model, x = MixedPrecision(), torch.randn(4, 16)
    copy = MixedPrecision()
    copy.load_state_dict(model.state_dict())
    compiled = dynamo.compile(copy, backend=backend, fullgraph=True)
    for m in (model, compiled):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = m(x).square().mean()
        loss.backward()  # outside the block, as autocast's documentation asks
    for p, q in zip(model.parameters(), copy.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["decomp_eager", "inductor"])
def test_a_bert_head_under_autocast_trains_like_eager(backend):
    """Under CPU autocast, layer_norm runs on the bfloat16 output of a linear layer with float32
    weights, and aten then keeps its statistics in float32 (they were bfloat16 in the
    decomposition, which the backward graph read as float32: nan gradients)."""
    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.LayerNorm(16, eps=1e-12))
    compiled_copy = copy.deepcopy(head)
    x = torch.randn(4, 16, requires_grad=True)
    grads = []
    for m in (head, dynamo.compile(compiled_copy, backend=backend)):
        x.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = m(x)
        out.float().sin().sum().backward()
        grads.append([x.grad, *(p.grad for p in m.parameters())])
    for expected, actual in zip(*grads):
        scale = expected.abs().max()
        assert torch.isfinite(actual).all() and (actual - expected).abs().max() <= 2e-2 * scale + 0.25


def switches_autocast_then_breaks(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ x
        print("inside the block")  # a graph break here would compile a graph that ends inside it
        return y.float() + 1


def test_a_graph_break_inside_a_block_that_switches_autocast_runs_the_frame_eagerly(capsys):
    x = torch.randn(4, 4)
    expected = switches_autocast_then_breaks(x)
    actual = dynamo.compile(switches_autocast_then_breaks, backend="inductor")(x)
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)
    assert not torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    reasons = tinydynamo.explain(switches_autocast_then_breaks)(x).break_reasons
    assert any("inside a `with torch.autocast(...)` block" in str(r) and r.frame_ran_eagerly for r in reasons), reasons


def test_under_autocast_sizes_stay_static():
    compiled = dynamo.compile(matmul_then_float, backend="inductor")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for n in (4, 6, 8):  # AOT autograd would trace symbolic sizes on meta tensors: no casts
            q, k = torch.randn(n, n), torch.randn(n, n)
            torch.testing.assert_close(compiled(q, k), matmul_then_float(q, k), rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_model_called_under_inference_mode_compiles(backend):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 4))
    compiled, x = dynamo.compile(model, backend=backend), torch.randn(3, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled, not run eagerly
        with torch.inference_mode():
            out, expected = compiled(x), model(x)
        assert out.is_inference()
        torch.testing.assert_close(out, expected)
        out = compiled(x)  # with grad: another graph
        out.sum().backward()
        torch.testing.assert_close(out, model(x))


class Mode:
    pass


TRAIN, EVAL = Mode(), Mode()


def test_identity_comparison_of_an_object_is_guarded():
    def f(x, mode):
        return x + 1 if mode is TRAIN else x - 1

    check = Checker(f)
    assert check(torch.randn(3), TRAIN) == 1
    assert check(torch.randn(3), TRAIN) == 0
    assert check(torch.randn(3), EVAL) == 1  # same type, but `is TRAIN` no longer holds


# --- values that are inputs, not constants ----------------------------------------------------------


def test_parameter_updates_are_seen_without_recompiling():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    check = Checker(model)
    x = torch.randn(3)
    assert check(x) == 1
    with torch.no_grad():
        model.weight.mul_(2)
    assert check(x) == 0  # same parameter object, new values: the graph reads it every call


def test_a_dead_module_drops_its_entries():
    def f(m, x):
        return m(x)

    compiled = dynamo.compile(f, backend="eager")
    model = nn.Linear(3, 3)
    compiled(model, torch.randn(3))
    entries = eval_frame.get_cache_entries(f.__code__)
    assert len(entries) == 1
    del model
    gc.collect()
    assert entries == []  # its id() may be reused by a new module: the entry must not match it


# --- the cache size limit ---------------------------------------------------------------------------


def test_cache_size_limit_falls_back_to_eager_with_a_warning():
    check = Checker(add_one)
    with config.patch(cache_size_limit=2):
        assert check(torch.randn(1)) == 1
        assert check(torch.randn(2)) == 1
        with pytest.warns(UserWarning, match=r"add_one.*cache_size_limit=2.*shape"):
            assert check(torch.randn(3)) == 0
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # warned once only
            assert check(torch.randn(4)) == 0
    assert check(torch.randn(1)) == 0  # earlier entries keep working
    assert stats()["fallbacks"] == 1


class BreakingLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        x = self.linear(x)
        print(end="")  # a graph break: each layer's forward is a frame of its own
        return x.relu()


class TenBreakingLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(BreakingLayer() for _ in range(10))

    def forward(self, x):
        for layer in self.layers:  # a break inside the loop: this frame runs eagerly
            x = layer(x)
        return x


def test_each_instance_of_a_module_gets_its_own_cache_size_limit():
    # every layer's frame has an entry guarded on id(self): ten instances are no recompiles
    model, x = TenBreakingLayers(), torch.randn(2, 4)
    with config.patch(cache_size_limit=2), warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*cache_size_limit")
        torch.testing.assert_close(tinydynamo.compile(model, backend="eager")(x), model(x))
    assert len(eval_frame.get_cache_entries(BreakingLayer.forward.__code__)) == 10
    tinydynamo.reset()
    with config.patch(accumulated_cache_size_limit=4), \
            pytest.warns(UserWarning, match=r"BreakingLayer.forward.*accumulated_cache_size_limit=4"):
        torch.testing.assert_close(tinydynamo.compile(model, backend="eager")(x), model(x))
    assert len(eval_frame.get_cache_entries(BreakingLayer.forward.__code__)) == 5  # 4, then run eagerly


def test_recompile_log_names_the_failed_guard():
    check = Checker(add_one)
    check(torch.randn(3))
    err = io.StringIO()
    tinydynamo.set_logs("recompiles")
    try:
        with contextlib.redirect_stderr(err):
            check(torch.randn(5))
    finally:
        tinydynamo.set_logs("")
    assert "recompiling add_one" in err.getvalue()
    assert "x.shape == (3,)" in err.getvalue() and "TENSOR_MATCH L['x']" in err.getvalue()


def test_a_forward_hook_registered_after_compiling_recompiles():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    compiled = tinydynamo.compile(model, backend="eager")
    x = torch.randn(2, 4)
    compiled(x)
    model[0].register_forward_hook(lambda module, args, output: output + 100)
    torch.testing.assert_close(compiled(x), model(x))


GLOBAL_STATE = {  # a query of torch's global state, and how to set it on (True) and back off
    "deterministic": (torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
    "anomaly": (torch.is_anomaly_enabled, torch.autograd.set_detect_anomaly),
    "matmul_precision": (torch.get_float32_matmul_precision,
                         lambda on: torch.set_float32_matmul_precision("high" if on else "highest")),
    "threads": (torch.get_num_threads, lambda on: torch.set_num_threads(2 if on else 1)),
    "warn_always": (torch.is_warn_always_enabled, torch.set_warn_always),
}


@pytest.mark.parametrize("name", GLOBAL_STATE)
def test_a_query_of_global_state_is_guarded(name):
    """Read while tracing, its answer is a constant of the graph: a guard checks it is still the
    answer, and a change compiles again (torch.compile gives eager's answer too)."""
    query, set_state = GLOBAL_STATE[name]
    threads = torch.get_num_threads()

    def branch(x):
        return x + 1 if query() in (True, "high", 2) else x - 1

    compiled = dynamo.compile(branch, backend="eager")
    try:
        for on in (False, True, False):
            set_state(on)
            assert compiled(torch.zeros(1)).item() == branch(torch.zeros(1)).item()
    finally:
        set_state(False)
        torch.set_num_threads(threads)


class Referent:
    pass


def test_calling_a_weakref_reads_what_it_refers_to_and_is_guarded():
    """``ref()`` broke the graph ("calling a ReferenceType"): every nn.RNN, GRU and LSTM calls its
    weight's weakref at each call (``_weights_have_changed``). It is traced through now, guarded
    on what it returns: a tensor as an input, an object by identity, None once the object died."""
    import weakref

    linear, holder = nn.Linear(3, 3), Referent()
    weight_ref, holder_ref = weakref.ref(linear.weight), weakref.ref(holder)

    def f(x):
        y = linear(x * 2)
        if weight_ref() is not linear.weight:
            y = y + 1
        return y - (1 if holder_ref() is None else 2)

    x = torch.randn(2, 3)
    explained = tinydynamo.explain(f)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    tinydynamo.reset()
    compiled = tinydynamo.compile(f)
    torch.testing.assert_close(compiled(x), f(x))
    del holder
    gc.collect()
    torch.testing.assert_close(compiled(x), f(x))  # the guard on holder_ref() fails: compiled again
    assert tinydynamo.stats()["frames_compiled"] == 2


def test_values_of_a_dict_argument_that_the_frame_never_reads_are_not_guarded():
    """A training step reads ``batch["x"]``; the batch also carries file names and an index that
    change at every step. Every value of the dict was guarded, so every step compiled again (then
    the cache limit, then eager); PyTorch's Dynamo guards only what the frame reads."""
    def step(batch):
        return (batch["x"] * 2).sum() + batch["scale"]

    compiled = tinydynamo.compile(step)
    for i in range(6):
        batch = {"x": torch.randn(4), "paths": [f"img{i}.png", f"img{i + 1}.png"], "index": i, "scale": 3}
        torch.testing.assert_close(compiled(batch), step(batch))
    assert tinydynamo.stats()["frames_compiled"] == 1
    batch["scale"] = 4  # a value the frame reads: guarded
    torch.testing.assert_close(compiled(batch), step(batch))
    assert tinydynamo.stats()["frames_compiled"] == 2
