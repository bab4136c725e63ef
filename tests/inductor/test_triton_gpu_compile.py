"""Generated Triton kernels compiled for a GPU, on a machine without one.

The interpreter runs the same source a GPU would compile, but not the GPU compiler. Triton can
compile ahead of time for a GPU it does not see: its front end, its MLIR passes, LLVM and the
bundled ``ptxas`` take a kernel down to a cubin for an H100 (sm_90). These tests do that for
kernels that use every kind of code the generator writes (pointwise math, 16-bit rounding,
masked and gathered loads, the error flag, persistent and looped reductions, argmax, barriers),
with the first and the last of the candidate configurations the autotuner would time. (The
kernels are generated for CPU example tensors: the code does not depend on the device.)
"""
import pytest
import torch
import torch.nn.functional as F
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from inductor_helpers import torch_graph
from tinydynamo.inductor.codegen import triton as triton_codegen
from tinydynamo.inductor.compile_fx import buffer_dtypes, generate_triton_code
from tinydynamo.inductor.runtime import triton_heuristics
from tinydynamo.inductor.runtime.triton_codecache import load_kernel

H100 = GPUTarget("cuda", 90, 32)
POINTER_TYPES = {torch.float32: "*fp32", torch.float64: "*fp64", torch.bfloat16: "*bf16", torch.float16: "*fp16",
                 torch.int64: "*i64", torch.int32: "*i32", torch.int16: "*i16", torch.int8: "*i8", torch.uint8: "*u8",
                 torch.bool: "*i1"}


def _randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(dtype)


CASES = {
    "gelu_tanh and erf": (lambda x: (F.gelu(x, approximate="tanh"), F.gelu(x)), [_randn(1000)]),
    "log1p expm1 round trunc sign": (lambda x: (x.log1p(), x.expm1(), x.round(), x.trunc(), x.sign()), [_randn(64)]),
    "pow, float and int": (lambda x, i: (x.abs() ** x, i ** (i.abs() % 3)), [_randn(64), torch.arange(64) - 32]),
    "integer division and fmod": (lambda a, b: (torch.div(a, b, rounding_mode="trunc"), torch.fmod(a, b)),
                                  [torch.arange(1, 65), torch.arange(64) % 5 + 1]),
    "bfloat16 and float16": (lambda x, h: (x * 3 + 1, (h.float() * 2).half()),
                             [_randn(128, dtype=torch.bfloat16), _randn(128, dtype=torch.float16)]),
    "bools and where": (lambda x: torch.where((x > 0) & ~(x > 1), x, -x), [_randn(8, 33)]),
    "concatenation": (lambda x, y: torch.cat([x, y.exp()], 1), [_randn(4, 3), _randn(4, 5)]),
    "gather": (lambda w, i: F.embedding(i, w) * 2, [_randn(10, 8), torch.tensor([[1, 4, 9], [0, 0, 3]])]),
    "softmax": (lambda x: torch.softmax(x, -1), [_randn(32, 100)]),
    "layer_norm": (lambda x, w: F.layer_norm(x, (48,), w), [_randn(16, 48), _randn(48)]),
    "reductions of every type": (lambda x, i: (x.sum(0), x.prod(1), x.amax(1), x.amin(0), x.argmax(1), x.argmin(0),
                                               i.sum(1), (i > 0).amax(1)), [_randn(12, 40), torch.arange(480).view(12, 40)]),
    "variance of a bfloat16 row": (lambda x: x.var(-1), [_randn(6, 70, dtype=torch.bfloat16)]),
}


def compile_for_gpu(kernel, dtypes, config):
    fn = load_kernel(kernel.source, kernel.name, interpret=False)
    signature = {a: "*i32" if a == "error_flag" else POINTER_TYPES[dtypes[a]] for a in kernel.args}
    constants = {"XBLOCK": config.XBLOCK, **({"RBLOCK": config.RBLOCK} if kernel.kind != "poi" else {})}
    signature.update(dict.fromkeys(constants, "constexpr"))
    aligned = {(i,): [["tt.divisibility", 16]] for i in range(len(kernel.args))}  # as most launches
    source = ASTSource(fn, signature, constexprs=constants, attrs=aligned)
    return triton.compile(source, target=H100, options={"num_warps": config.num_warps})


@pytest.fixture(autouse=True)
def triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")


@pytest.mark.parametrize("looped", [False, True], ids=["persistent", "looped"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_kernels_compile_for_an_h100(name, looped, monkeypatch):
    if looped:
        monkeypatch.setattr(triton_codegen, "PERSISTENT_REDUCTION_MAX", 16)
    fn, inputs = CASES[name]
    graph, _, kernels = generate_triton_code(torch_graph(fn, inputs), inputs, torch.device("cpu"))
    dtypes = buffer_dtypes(graph)
    for kernel in [k for pos in sorted(kernels) for k in kernels[pos]]:
        configs = triton_heuristics.candidate_configs(kernel, interpret=False, max_autotune=True,
                                                      max_rblock=triton_codegen.PERSISTENT_REDUCTION_MAX)
        for config in {configs[0], configs[-1]}:
            compiled = compile_for_gpu(kernel, dtypes, config)
            assert compiled.asm["cubin"] and f".entry {kernel.name}(" in compiled.asm["ptx"]


def test_looped_kernels_keep_a_barrier_in_the_gpu_code(monkeypatch):
    """The barrier between a row written to memory and its readers survives compilation."""
    monkeypatch.setattr(triton_codegen, "PERSISTENT_REDUCTION_MAX", 16)
    x = _randn(32, 100)
    graph, _, kernels = generate_triton_code(torch_graph(lambda x: torch.softmax(x, -1), [x]), [x],
                                             torch.device("cpu"))
    (kernel,) = kernels[0]
    assert "tl.debug_barrier()" in kernel.source
    without = kernel._replace(source=kernel.source.replace("    tl.debug_barrier()\n", ""))
    config = triton_heuristics.Config(8, 16, 4)
    barriers = [compile_for_gpu(k, buffer_dtypes(graph), config).asm["ptx"].count("bar.sync") for k in (kernel, without)]
    assert barriers[0] > barriers[1]
