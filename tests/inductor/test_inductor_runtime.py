"""The compiled callable: strides and offsets of inputs, outputs, errors, logs and counters."""
import gc

import pytest
import torch

from inductor_helpers import assert_same, check_prims, check_torch, prim_graph, torch_graph
from tinydynamo import prims, set_logs
from tinydynamo.inductor import compile_fx_inner
from tinydynamo.utils import counters


def test_inputs_with_other_strides_get_their_own_compiled_variant():
    fn = lambda x, y: torch.exp(x) + y.sum(1, keepdim=True)  # noqa: E731
    x, y = torch.randn(6, 5), torch.randn(6, 4)
    compiled = check_torch(fn, [x, y])
    x_t = torch.randn(5, 6).t()  # same shape, transposed strides
    y_sliced = torch.randn(6, 8)[:, ::2]  # strided
    for args in ([x_t, y], [x, y_sliced], [x_t, y_sliced], [x, torch.randn(7, 4)[1:]]):
        assert_same(compiled(*args), fn(*args))
    assert len(compiled._variants) == 4  # the first call's, and 3 more (offsets do not count)


def test_the_stride_of_a_size_one_dim_does_not_matter():
    x = torch.randn(1, 5)
    compiled = check_torch(lambda x: x * 2, [x])
    other = torch.randn(5, 1).t()  # shape (1, 5), strides (1, 1)
    assert_same(compiled(other), other * 2)
    assert len(compiled._variants) == 1


def test_compiling_for_non_contiguous_and_offset_inputs():
    base = torch.randn(8, 10)
    x = base[1:7, ::2]  # offset 10, strides (10, 2)
    check_torch(lambda x: (x * 2).amax(0), [x])


def test_a_graph_input_returned_as_is_is_the_same_tensor():
    x = torch.randn(3)
    compiled = compile_fx_inner(prim_graph(lambda x: (x, prims.neg(x), x), [x]), [x])
    a, b, c = compiled(x)
    assert a is x and c is x
    assert_same(b, -x)


def test_zero_dim_and_empty_tensors():
    check_prims(lambda a, b: (prims.add(a, 1.0), prims.sum(b, [0]), prims.exp(b)),
                [torch.tensor(2.0), torch.randn(0, 3)])


def test_the_workspace_lives_as_long_as_the_compiled_graph():
    """Regression: the workspace tensor was freed after compiling, and kernels wrote into
    whatever reused its memory."""
    def fn(x):
        return prims.mul(x, prims.broadcast_in_dim(prims.sum(x, [0]), [512, 512], [1]))

    x = torch.randn(512, 512)
    compiled = compile_fx_inner(prim_graph(fn, [x]), [x])
    gc.collect()
    probes = [torch.full((512,), 7.0) for _ in range(64)]  # would land in a freed workspace
    for _ in range(3):
        assert_same(compiled(x), prim_graph(fn, [x])(x), atol=1e-4, rtol=1e-4)
    assert all(bool((p == 7.0).all()) for p in probes)


def test_a_graph_that_mixes_devices_is_refused_with_a_clear_error():
    """CPU inputs send the graph to the C++ code generator, which cannot place a CUDA tensor
    (CUDA graphs go to the Triton one: test_triton_runtime.py)."""
    x = torch.randn(2)
    gm = prim_graph(lambda x: prims.add(x, prims.full([2], 1.0, dtype=torch.float32, device="cuda")), [x])
    with pytest.raises(NotImplementedError, match="compiled for cpu tensors.*cannot mix devices"):
        compile_fx_inner(gm, [x])


def test_unsupported_dtypes_are_refused_with_a_clear_error():
    x = torch.zeros(3, dtype=torch.float8_e4m3fn)
    gm = torch.fx.symbolic_trace(lambda x: x)
    with pytest.raises(NotImplementedError, match="unsupported dtype torch.float8_e4m3fn"):
        compile_fx_inner(gm, [x])


def test_kernels_generated_counter_and_logs(capsys):
    x = torch.randn(4, 4)
    before = counters["kernels_generated"]
    set_logs("ir,kernels")
    try:
        compile_fx_inner(torch_graph(lambda x: torch.softmax(x, 0) + 1, [x]), [x])
    finally:
        set_logs("")
    err = capsys.readouterr().err
    assert "[tinydynamo:ir] loop IR" in err and "Reduction(" in err and "ops.exp(" in err
    assert "static void kernel0(" in err and "def call(args):" in err
    assert counters["kernels_generated"] - before == err.count("static void kernel") >= 2


def test_fake_and_meta_example_inputs():
    """Compiling needs only shapes, strides and dtypes, as when a frontend passes fake tensors."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    x = torch.randn(8, 8)
    fn = lambda x: torch.softmax(x, 0) * x.sum(1, keepdim=True)  # noqa: E731
    gm = torch_graph(fn, [x])
    with FakeTensorMode():
        fake = torch.empty(8, 8)
    for example in (fake, torch.empty(8, 8, device="meta")):
        assert_same(compile_fx_inner(gm, [example])(x), fn(x))


def test_an_extern_output_that_views_the_workspace_is_copied_out_of_it():
    # An op that returns a view of its input without saying so in its schema, as unsafe_split
    # does. Its input lives in the workspace, whose space the next kernel reuses.
    library = torch.library.Library("tinydynamo_test_runtime", "FRAGMENT")  # noqa: TOR901
    library.define("first_rows(Tensor x) -> Tensor")
    library.impl("first_rows", lambda x: x[:2], "CPU")
    library.impl("first_rows", lambda x: x[:2], "Meta")
    first_rows = torch.ops.tinydynamo_test_runtime.first_rows.default

    def fn(x):
        rows = first_rows(torch.exp(x))  # exp(x) is an intermediate, in the workspace
        other = torch.sin(x) * 3  # may take exp(x)'s space once first_rows has read it
        return rows.reshape(-1).cumsum(0)[-1] + other.sum(), rows * 2

    x = torch.randn(64, 32)
    compiled = check_torch(fn, [x])
    assert_same(compiled(x), fn(x))
