"""The Triton path's runtime and the code generator's decisions: which code generator a graph
goes to, kernel files in the cache directory, logs, persistent and looped reductions, row
buffers in registers or memory, kernels of their own, 64-bit indexing. CPU tests run Triton's
interpreter; the tests that need a GPU are skipped without one."""
import os

import pytest
import torch
import torch.nn.functional as F
import triton.language as tl
from torch._subclasses.fake_tensor import FakeTensorMode
from triton.runtime.jit import JITFunction

from inductor_helpers import assert_same, prim_graph, torch_graph
from tinydynamo import config, prims, set_logs
from tinydynamo.inductor import compile_fx, compile_fx_inner
from tinydynamo.inductor.codegen import triton as triton_codegen
from tinydynamo.inductor.runtime import triton_codecache
from tinydynamo.utils import counters

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="needs a CUDA GPU (Triton compiles kernels only for GPUs)")


def kernels_of(fn, inputs, device="cpu"):
    """The TritonKernelSources generated for fn, in order."""
    _, _, kernels = compile_fx.generate_triton_code(torch_graph(fn, inputs), inputs, torch.device(device))
    return [k for pos in sorted(kernels) for k in kernels[pos]]


def softmax(x):
    return torch.softmax(x, -1)


# --------------------------------------------------------------------------- which code generator


def test_cpu_tensors_take_the_cpp_path_unless_triton_on_cpu(monkeypatch):
    calls = []
    original = compile_fx.compile_graph_triton
    monkeypatch.setattr(compile_fx, "compile_graph_triton", lambda *a: calls.append(a) or original(*a))
    x = torch.randn(4, 8)
    gm = torch_graph(softmax, [x])
    compile_fx_inner(gm, [x])
    assert not calls
    with config.patch(triton_on_cpu=True):
        assert_same(compile_fx_inner(gm, [x])(x), softmax(x))
    assert len(calls) == 1


def test_fake_cuda_inputs_compile_to_triton_kernels_without_a_gpu():
    """A CUDA graph goes to the Triton code generator: generating (and even loading) its kernels
    needs no GPU, only running them does."""
    with FakeTensorMode():
        x = torch.empty(32, 64, device="cuda")
    gm = torch_graph(softmax, [torch.randn(32, 64)])
    assert compile_fx.graph_device(gm, [x]).type == "cuda"
    compiled = compile_fx_inner(gm, [x])
    launcher = compiled.call.__globals__["triton_per_0"]
    assert isinstance(launcher.fn, JITFunction) and not launcher.interpret
    assert len(launcher.configs) > 1 and launcher.config is None  # autotuned at the first call


def test_the_device_of_a_graph_without_inputs_comes_from_its_creation_prims():
    gm = prim_graph(lambda: prims.full([2], 1.0, dtype=torch.float32, device="cuda"), [])
    assert compile_fx.graph_device(gm, []) == torch.device("cuda")


# --------------------------------------------------------------------------- files and logs


def test_kernel_files_are_written_to_the_cache_dir_and_imported_once(kernel_cache):
    x = torch.randn(8, 16)
    with config.patch(triton_on_cpu=True):
        compile_fx_inner(torch_graph(softmax, [x]), [x])
        (kernel,) = kernels_of(softmax, [x])
        path = triton_codecache.kernel_path(kernel.source)
        assert path.startswith(os.path.join(str(kernel_cache), "triton"))
        with open(path) as f:
            assert f.read() == kernel.source
        loaded = counters["triton_kernels_loaded"]
        compile_fx_inner(torch_graph(softmax, [x]), [x])
        assert counters["triton_kernels_loaded"] == loaded  # this process imported it already


def test_reset_forgets_the_kernels_imported_in_this_process():
    import tinydynamo
    x = torch.randn(4, 8)
    with config.patch(triton_on_cpu=True):
        compile_fx_inner(torch_graph(softmax, [x]), [x])
    assert triton_codecache._loaded
    tinydynamo.reset()
    assert not triton_codecache._loaded


def test_logs_print_the_triton_kernels_and_the_wrapper(capsys):
    x = torch.randn(4, 8)
    set_logs("kernels")
    try:
        with config.patch(triton_on_cpu=True):
            compile_fx_inner(torch_graph(softmax, [x]), [x])
    finally:
        set_logs("")
    err = capsys.readouterr().err
    assert "@triton.jit\ndef triton_per_0(" in err and "tl.load(" in err
    assert "def call(args):" in err and "triton_per_0.run(" in err


def test_interpreted_kernels_leave_tritons_library_as_it_was():
    before = tl.standard.max
    x = torch.randn(4, 8)
    with config.patch(triton_on_cpu=True):
        compile_fx_inner(torch_graph(softmax, [x]), [x])(x)
    assert tl.standard.max is before and tl.max is before


# --------------------------------------------------------------------------- code generation decisions


def test_persistent_and_looped_reductions(monkeypatch):
    x = torch.randn(8, 64)
    assert [k.kind for k in kernels_of(softmax, [x])] == ["per"]
    assert [k.kind for k in kernels_of(lambda x: x * 2, [x])] == ["poi"]
    monkeypatch.setattr(triton_codegen, "PERSISTENT_REDUCTION_MAX", 32)
    (looped,) = kernels_of(softmax, [x])
    assert looped.kind == "red" and "for roffset in range(0, rnumel, RBLOCK):" in looped.source
    with config.patch(triton_on_cpu=True):
        assert_same(compile_fx_inner(torch_graph(softmax, [x]), [x])(x), softmax(x))


def test_row_buffers_stay_in_registers_only_in_persistent_kernels(monkeypatch):
    """softmax's row of exp values (buf1) is a register tile in a persistent kernel; a looped
    kernel writes it to memory and reads it back after a barrier."""
    x = torch.randn(8, 64)
    (persistent,) = kernels_of(softmax, [x])
    assert "buf1" not in persistent.args and "debug_barrier" not in persistent.source
    monkeypatch.setattr(triton_codegen, "PERSISTENT_REDUCTION_MAX", 32)
    (looped,) = kernels_of(softmax, [x])
    assert "buf1" in looped.written and "tl.debug_barrier()" in looped.source


def test_a_row_read_in_another_order_goes_through_memory():
    """A row buffer read at another rindex than the one that wrote it (here: transposed within
    the row) cannot stay in registers, even in a persistent kernel: it is written, then read
    back after a barrier."""
    def fn(x, w):
        y = prims.exp(x)  # a row buffer of the fused kernel, read twice
        weighted = prims.mul(prims.permute(y, [0, 2, 1]), prims.broadcast_in_dim(w, [4, 4, 2], [1, 2]))
        return prims.sum(y, [1, 2]), prims.sum(weighted, [1, 2])

    x, w = torch.randn(4, 2, 4), torch.randn(4, 2)
    gm = prim_graph(fn, [x, w])
    _, scheduler, kernels = compile_fx.generate_triton_code(gm, [x, w], torch.device("cpu"))
    assert len(scheduler.kernels) == 1 and "buf0" in scheduler.kernels[0].local_buffers
    (kernel,) = kernels[0]
    assert kernel.kind == "per" and "buf0" in kernel.written and "tl.debug_barrier()" in kernel.source
    with config.patch(triton_on_cpu=True):
        assert_same(compile_fx_inner(gm, [x, w])(x, w), gm(x, w), atol=1e-5, rtol=1e-5)


def test_a_reduction_with_loops_of_its_own_gets_a_kernel_of_its_own():
    """Row sums of a [4, 8, 16] tensor fused (by the scheduler) with its [4] sums: the first has
    a loop over 8 inside the shared loop over 4, which [XBLOCK, RBLOCK] tiles cannot express."""
    def fn(x):
        return prims.sum(x, [2]), prims.sum(x, [1, 2])

    x = torch.randn(4, 8, 16)
    gm = prim_graph(fn, [x])
    graph, scheduler, kernels = compile_fx.generate_triton_code(gm, [x], torch.device("cpu"))
    assert len(scheduler.kernels) == 1 and len(kernels[0]) == 2
    with config.patch(triton_on_cpu=True):
        assert_same(compile_fx_inner(gm, [x])(x), gm(x), atol=1e-5, rtol=1e-5)


def test_indices_past_int32_use_int64_arithmetic():
    huge = torch.empty(2 ** 31 + 8, device="meta")  # shapes only: nothing is allocated
    (kernel,) = kernels_of(lambda x: x * 2, [huge])
    assert "tl.program_id(0).to(tl.int64)" in kernel.source
    (small,) = kernels_of(lambda x: x * 2, [torch.randn(8)])
    assert "tl.int64" not in small.source


def test_bfloat16_results_are_rounded_to_nearest_even():
    """Triton's interpreter truncates float32 -> bfloat16; the kernels round explicitly."""
    x = torch.randn(4096) * 10
    with config.patch(triton_on_cpu=True):
        compiled = compile_fx_inner(torch_graph(lambda x: x.to(torch.bfloat16), [x]), [x])
    assert torch.equal(compiled(x), x.to(torch.bfloat16))


def test_blocks_that_stick_out_of_the_tensor_are_masked(monkeypatch):
    """Tiny tiles: most program instances cover the end of a row or of the tensor."""
    from tinydynamo.inductor.runtime import triton_heuristics
    monkeypatch.setattr(triton_heuristics, "INTERPRETER_MAX_ELEMENTS", 8)
    monkeypatch.setattr(triton_codegen, "PERSISTENT_REDUCTION_MAX", 4)
    x, w = torch.randn(7, 13), torch.randn(13)
    fn = lambda x, w: (F.layer_norm(x, (13,), w), x.argmax(1), x.sum(0))  # noqa: E731
    with config.patch(triton_on_cpu=True):
        compiled = compile_fx_inner(torch_graph(fn, [x, w]), [x, w])
        assert_same(compiled(x, w), fn(x, w), atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------- on a GPU


@needs_gpu
def test_cuda_tensors_take_the_triton_path_automatically():
    x = torch.randn(64, 256, device="cuda")
    calls = []
    original = compile_fx.compile_graph_triton
    compile_fx.compile_graph_triton = lambda *a: calls.append(a) or original(*a)
    try:
        compiled = compile_fx_inner(torch_graph(softmax, [x]), [x])
    finally:
        compile_fx.compile_graph_triton = original
    assert calls
    assert_same(compiled(x), softmax(x), atol=1e-6, rtol=1e-5)


@needs_gpu
def test_zoo_training_step_on_gpu():
    import copy

    import tinydynamo
    from tinydynamo.testing.models import ZOO, make
    model, inputs = make("gpt_block")
    model, inputs = model.cuda(), [x.cuda() for x in inputs]
    reference = copy.deepcopy(model)
    loss = ZOO["gpt_block"].loss(tinydynamo.compile(model, backend="inductor")(*inputs))
    expected = ZOO["gpt_block"].loss(reference(*inputs))
    loss.backward()
    expected.backward()
    torch.testing.assert_close(loss, expected, atol=1e-4, rtol=1e-4)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-4, rtol=1e-4)
    tinydynamo.reset()
