"""The public API of the dynamo layer: compile (functions, modules, decorators, backends),
Unsupported handling, explain, reset, logs and counters."""
import collections
import contextlib
import copy
import dataclasses
import io
import pickle
import time

import pytest
import torch
import torch.nn as nn

import tinydynamo
import tinydynamo.dynamo as dynamo
from tinydynamo import config
from tinydynamo.dynamo import eval_frame
from tinydynamo.dynamo.convert_frame import ConvertFrame
from tinydynamo.dynamo.trace_rules import skip_reason


def f(x, y):
    return torch.sin(x) + y * 2


def stats():
    return tinydynamo.stats()


# --- compile -------------------------------------------------------------------------------------


def test_decorator_with_and_without_arguments():
    @dynamo.compile(backend="eager")
    def g(x):
        return x * 3

    @dynamo.compile
    def h(x):
        return x * 3

    x = torch.randn(3)
    torch.testing.assert_close(g(x), x * 3)
    assert h.__name__ == "h" and h.__wrapped__(x).shape == (3,)


def test_backend_names_are_resolved_at_the_first_call():
    compiled = dynamo.compile(f, backend="no_such_backend")  # no error yet
    with pytest.raises(ValueError, match="no_such_backend"):
        compiled(torch.randn(3), torch.randn(3))


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "cudagraphs-please"}, "cudagraphs-please"),
    ({"options": {"trace.enabled": True}}, "options"),
])
def test_unsupported_compile_arguments_raise(kwargs, message):
    with pytest.raises(NotImplementedError, match=message):
        dynamo.compile(f, backend="eager", **kwargs)


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune-no-cudagraphs"])
def test_torch_compiles_cuda_graph_modes_compile_without_cuda_graphs(mode):
    """torch.compile takes them on CPU too (CUDA graphs are for CUDA tensors only)."""
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(dynamo.compile(f, backend="eager", mode=mode)(x, y), f(x, y))


def test_a_compiled_module_pickles_and_copies_as_the_module_compiled_again():
    """torch.compile's OptimizedModule pickles; ours failed on its local call wrapper."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    x = torch.randn(2, 4)
    for copied in (pickle.loads(pickle.dumps(dynamo.compile(model, backend="eager"))),
                   copy.deepcopy(dynamo.compile(model, backend="eager"))):
        assert isinstance(copied, type(dynamo.compile(model))) and copied._orig_mod is not model
        torch.testing.assert_close(copied(x), model(x))


def test_a_callable_backend_gets_the_graph_and_the_real_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, example_inputs))
        return gm.forward

    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(dynamo.compile(f, backend=backend)(x, y), f(x, y))
    (gm, example_inputs), = seen
    assert isinstance(gm, torch.fx.GraphModule)
    assert example_inputs[0] is x and example_inputs[1] is y  # real tensors, not meta ones
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.sin in targets


def test_pytorch_inductor_as_a_callable_backend():
    from torch._inductor.compile_fx import compile_fx

    def g(x):
        return torch.relu(x) * 2 + 1

    x = torch.randn(8)
    torch.testing.assert_close(dynamo.compile(g, backend=compile_fx)(x), g(x))


def test_compiled_function_inside_a_compiled_function_is_traced():
    inner = dynamo.compile(lambda t: t * 2, backend="eager")

    def outer(x):
        return inner(x) + 1

    x = torch.randn(3)
    torch.testing.assert_close(dynamo.compile(outer, backend="eager", fullgraph=True)(x), x * 2 + 1)
    assert stats()["graphs"] == 1


def test_transformed_code_keeps_the_users_file_name_and_lines():
    compiled = dynamo.compile(f, backend="eager")
    compiled(torch.randn(3), torch.randn(3))
    (_, _, new_code), = eval_frame.get_cache_entries(f.__code__)
    assert (new_code.co_filename, new_code.co_name, new_code.co_firstlineno) == \
        (f.__code__.co_filename, f.__code__.co_name, f.__code__.co_firstlineno)
    assert {line for _, _, line in new_code.co_lines()} <= {line for _, _, line in f.__code__.co_lines()}


def test_the_python_model_of_the_hook_runs_the_same_protocol():
    callback = ConvertFrame("eager")
    x, y = torch.randn(3), torch.randn(3)
    for _ in range(2):
        torch.testing.assert_close(eval_frame.run_frame_in_python(callback, f, (x,), {"y": y}), f(x, y))
    assert stats()["frames_compiled"] == 1 and stats()["cache_hits"] == 1


# --- OptimizedModule --------------------------------------------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)
        self.register_buffer("shift", torch.ones(2))
        self.note = "hello"

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) + self.shift

    def describe(self):
        return self.note


def test_optimized_module_shares_state_with_the_original():
    model = Net()
    compiled = dynamo.compile(model, backend="eager")
    assert isinstance(compiled, nn.Module) and isinstance(compiled, dynamo.OptimizedModule)
    assert list(compiled.state_dict()) == list(model.state_dict())
    assert [p is q for p, q in zip(compiled.parameters(), model.parameters())] == [True] * 4
    assert compiled.fc1 is model.fc1 and compiled.shift is model.shift
    assert compiled.note == "hello" and compiled.describe() == "hello"
    compiled.load_state_dict({k: torch.zeros_like(v) for k, v in model.state_dict().items()})
    assert model.fc1.weight.abs().sum() == 0


def test_optimized_module_trains_the_original_parameters():
    torch.manual_seed(0)
    model = Net()
    compiled = dynamo.compile(model, backend="eager", fullgraph=True)
    reference = Net()
    reference.load_state_dict(model.state_dict())
    x = torch.randn(5, 4)
    for m in (compiled, reference):
        optimizer = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(3):
            m(x).square().sum().backward()
            optimizer.step()
            optimizer.zero_grad()
    torch.testing.assert_close(model.state_dict(), reference.state_dict())
    assert stats()["frames_compiled"] == 1


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = 2.0

    def forward(self, x):
        y = self.fc(x) * self.scale
        if hasattr(self, "offset"):
            y = y + self.offset
        return y


def test_attribute_writes_on_the_compiled_module_reach_the_module_and_its_next_call():
    model = Scaled()
    compiled = dynamo.compile(model, backend="inductor")
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), model(x))
    compiled.scale = 5.0  # as torch.compile's OptimizedModule: the module's attribute changes
    assert model.scale == 5.0 and compiled.scale == 5.0 and "scale" not in vars(compiled)
    torch.testing.assert_close(compiled(x), model.fc(x) * 5.0)
    compiled.offset = torch.ones(4)  # a new attribute: the traced hasattr() was guarded
    assert model.offset is compiled.offset
    torch.testing.assert_close(compiled(x), model.fc(x) * 5.0 + 1)
    del compiled.offset
    assert not hasattr(model, "offset") and not hasattr(compiled, "offset")
    torch.testing.assert_close(compiled(x), model.fc(x) * 5.0)
    assert list(compiled.state_dict()) == list(model.state_dict()) == ["fc.weight", "fc.bias"]
    assert stats()["recompiles"] == 2  # scale 5.0, then offset; without offset again: a hit
    compiled.eval()  # `training`, a property of the wrapper's class, reaches the module too
    assert not model.training


def test_compiling_a_function_again_reuses_its_cache_entries():
    x = torch.randn(3)
    for _ in range(500):
        torch.testing.assert_close(dynamo.compile(f, backend="eager")(x, x), f(x, x))
    assert stats()["frames_compiled"] == 1 and len(eval_frame.get_cache_entries(f.__code__)) == 1
    dynamo.compile(f, backend="eager", fullgraph=True)(x, x)  # other settings: entries of their own
    dynamo.compile(f, backend="aot_eager")(x, x)
    assert stats()["frames_compiled"] == 3 and len(eval_frame.get_cache_entries(f.__code__)) == 3


def test_code_run_by_exec_is_compiled_but_dataclass_methods_are_not():
    namespace = {}
    exec("import torch\ndef double(x):\n    return torch.sin(x) * 2\n", namespace)  # python -c: the same
    double = namespace["double"]
    x = torch.randn(3)
    torch.testing.assert_close(dynamo.compile(double, backend="eager")(x), double(x))
    assert double.__code__.co_filename == "<string>" and stats()["frames_compiled"] == 1
    Pair = dataclasses.make_dataclass("Pair", ["a", "b"])
    Point = collections.namedtuple("Point", "a b")
    assert skip_reason(Pair.__init__.__code__) == skip_reason(Point.__new__.__code__) == "generated code"


def test_optimized_module_runs_forward_hooks_of_the_original():
    model = Net()
    calls = []
    model.register_forward_hook(lambda mod, args, out: calls.append(out.shape))
    compiled = dynamo.compile(model, backend="eager")
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), model(x))
    # (the hook, a lambda of this file, is compiled too: a graph break at calls.append)
    assert len(calls) == 2 and len(eval_frame.get_cache_entries(Net.forward.__code__)) == 1


# --- Unsupported --------------------------------------------------------------------------------


def uses_item(x):
    return x * x.sum().item()


def data_dependent_branch(x):
    if x.sum() > 0:
        return x
    return -x


def prints(x):
    print("hello")
    return x + 1


def calls_unknown_c_function(x):
    return x * time.time()


def imports_inside(x):
    import os

    return x + os.getpid()


def returns_closure(x):
    y = x + 1
    return lambda: y


@pytest.mark.parametrize("fn, message", [
    (uses_item, r"Tensor.item\(\)"),
    (data_dependent_branch, "data-dependent branch"),
    (prints, r"print\(\)"),
    (calls_unknown_c_function, "builtin time"),
    (imports_inside, "builtin getpid"),
    (returns_closure, "rebuilding NestedUserFunctionVariable"),
])
def test_fullgraph_raises_unsupported_naming_the_construct_and_line(fn, message):
    with pytest.raises(dynamo.Unsupported, match=message) as info:
        dynamo.compile(fn, backend="eager", fullgraph=True)(torch.randn(3))
    assert info.value.filename == __file__
    assert fn.__code__.co_firstlineno < info.value.lineno <= fn.__code__.co_firstlineno + 4
    assert f"{__file__}:{info.value.lineno}" in str(info.value)


def prints_in_a_loop(x):
    for _ in range(2):
        print(end="")
    return x * 2


def test_frames_that_cannot_break_run_eagerly_once_translated():
    compiled = dynamo.compile(prints_in_a_loop, backend="eager")
    for sign in (1, -1, 1):
        x = torch.ones(3) * sign
        torch.testing.assert_close(compiled(x), prints_in_a_loop(x))
    assert stats()["fallbacks"] == 1  # not retranslated: one entry runs the original bytecode
    assert len(eval_frame.get_cache_entries(prints_in_a_loop.__code__)) == 1


def test_frames_called_from_an_eager_fallback_are_compiled():
    def inner(x):
        return x * 2

    def outer(x):
        for _ in range(2):
            print(end="")
        return inner(x) + 1

    x = torch.randn(3)
    torch.testing.assert_close(dynamo.compile(outer, backend="eager")(x), outer(x))
    assert stats()["fallbacks"] == 1 and stats()["graphs"] == 1


def test_backend_errors_raise_unless_suppressed():
    def broken(gm, example_inputs):
        raise RuntimeError("backend exploded")

    x, y = torch.randn(3), torch.randn(3)
    with pytest.raises(RuntimeError, match="exploded"):
        dynamo.compile(f, backend=broken)(x, y)
    dynamo.reset()
    with config.patch(suppress_errors=True), pytest.warns(UserWarning, match="exploded"):
        torch.testing.assert_close(dynamo.compile(f, backend=broken)(x, y), f(x, y))


def test_generators_are_left_alone():
    def gen(x):
        yield x + 1

    assert list(dynamo.compile(gen, backend="eager")(torch.ones(1))) == [torch.full((1,), 2.0)]
    assert stats()["frames_compiled"] == 0


# --- explain, reset, logs ------------------------------------------------------------------------


def test_explain_reports_graphs_guards_and_breaks():
    x, y = torch.randn(3), torch.randn(3)
    good = dynamo.explain(f)(x, y)
    assert good.graph_count == 1 and good.graph_break_count == 0 and good.break_reasons == []
    assert "x.shape == (3,)" in good.guards[0] and "# TENSOR_MATCH L['x']" in good.guards[0]
    assert "Graph count: 1" in str(good) and "torch.sin" in str(good)

    bad = dynamo.explain(uses_item)(x)
    assert bad.graph_count == 2 and bad.graph_break_count == 1  # x.sum(), then x * item
    (reason,) = bad.break_reasons
    assert "item()" in reason.reason and reason.filename == __file__ and not reason.frame_ran_eagerly
    assert reason.lineno == uses_item.__code__.co_firstlineno + 1
    assert "Break reasons" in str(bad)

    eager = dynamo.explain(prints_in_a_loop)(x)
    assert eager.graph_count == 0 and eager.graph_break_count == 1
    assert eager.break_reasons[0].frame_ran_eagerly and "for/while loop" in eager.break_reasons[0].reason
    assert eval_frame.get_cache_entries(f.__code__) == []  # explain leaves no entries behind


def test_reset_forgets_everything():
    compiled = dynamo.compile(f, backend="eager")
    compiled(torch.randn(3), torch.randn(3))
    assert stats()["frames_compiled"] == 1
    dynamo.reset()
    assert stats()["frames_compiled"] == 0
    assert eval_frame.get_cache_entries(f.__code__) == []
    assert not any(name.startswith("__compiled_fn") for name in globals())
    compiled(torch.randn(3), torch.randn(3))
    assert stats()["frames_compiled"] == 1


@pytest.mark.parametrize("artifact, expected", [
    ("graph", "torch.sin"),
    ("guards", "TENSOR_MATCH"),
    ("bytecode", "__compiled_fn"),
    ("graph_breaks", "graph break in uses_item"),
])
def test_logs(artifact, expected):
    err = io.StringIO()
    tinydynamo.set_logs(artifact)
    try:
        with contextlib.redirect_stderr(err):
            dynamo.compile(f, backend="eager")(torch.randn(3), torch.randn(3))
            dynamo.compile(uses_item, backend="eager")(torch.randn(3))
    finally:
        tinydynamo.set_logs("")
    assert f"[tinydynamo:{artifact}]" in err.getvalue() and expected in err.getvalue()


def test_counters():
    compiled = dynamo.compile(f, backend="eager")
    compiled(torch.randn(3), torch.randn(3))
    compiled(torch.randn(3), torch.randn(3))
    compiled(torch.randn(4), torch.randn(4))
    s = stats()
    assert (s["frames_compiled"], s["graphs"], s["recompiles"], s["cache_hits"]) == (2, 2, 1, 1)
    # frames offered to the callback: f twice, and nothing else: the graphs run with the hook off
    # through a C function (eval_frame.disable), which has no frame of its own to offer
    assert s["frames_seen"] == 2


def repeat_rows_plus(x, repeats):
    h = x * 2
    return h.repeat_interleave(repeats, dim=0, output_size=3) + 1  # aten reads the repeats' values


def test_a_frame_the_backend_cannot_compile_runs_eagerly_with_a_warning_naming_the_line():
    x, repeats = torch.randn(2, 3), torch.tensor([1, 2])
    compiled = tinydynamo.compile(repeat_rows_plus)
    before = tinydynamo.stats()["fallbacks"]
    with pytest.warns(UserWarning, match=r"(?s)runs eagerly: tinydynamo cannot compile it.*depends on tensor data"
                                          r".*in repeat_rows_plus\n.*repeat_interleave\(repeats"):
        torch.testing.assert_close(compiled(x, repeats), repeat_rows_plus(x, repeats))
    assert tinydynamo.stats()["fallbacks"] == before + 1
    torch.testing.assert_close(compiled(x, repeats), repeat_rows_plus(x, repeats))  # no second warning
    with pytest.raises(NotImplementedError, match="depends on tensor data"):
        tinydynamo.compile(repeat_rows_plus, fullgraph=True)(x, repeats)


@torch.compiler.disable
def disabled_helper(x):
    return x.sin() * 3


def calls_a_disabled_helper(x):
    return disabled_helper(x * 2) + 1


def test_a_function_marked_torch_compiler_disable_is_not_compiled():
    graphs = []

    def record(gm, example_inputs):
        graphs.append([n.target for n in gm.graph.nodes if n.op == "call_function"])
        return gm.forward

    x = torch.randn(3)
    torch.testing.assert_close(tinydynamo.compile(calls_a_disabled_helper, backend=record)(x),
                               calls_a_disabled_helper(x))
    assert not any(torch.sin in targets or "sin" in map(str, targets) for targets in graphs), graphs
    assert len(graphs) == 2  # before the call and after it, as torch.compile
