"""The autotuner: candidate configurations, the cache key, and the choice saved on disk.

Timing needs a GPU, so these tests give the launcher a fake timer; the candidates still run, one
after the other, in Triton's interpreter (each must compute the right result), and the chosen
one is then launched for real. The GPU-only tests are skipped without a GPU.
"""
import json
import os

import pytest
import torch

import tinydynamo
from inductor_helpers import assert_same, torch_graph
from tinydynamo import config
from tinydynamo.inductor import compile_fx
from tinydynamo.inductor.runtime import autotune_cache, triton_heuristics
from tinydynamo.inductor.runtime.triton_codecache import load_kernel
from tinydynamo.inductor.runtime.triton_heuristics import Config, TritonKernelLauncher

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="needs a CUDA GPU: autotuning times kernels on the device")


def is_power_of_2(n):
    return n > 0 and n & (n - 1) == 0


# --------------------------------------------------------------------------- candidates


@pytest.mark.parametrize("xnumel", [1, 5, 100, 4096, 1 << 20])
def test_pointwise_candidates(xnumel):
    default = triton_heuristics.pointwise_configs(xnumel, interpret=False)
    wide = triton_heuristics.pointwise_configs(xnumel, interpret=False, max_autotune=True)
    for c in wide:
        assert is_power_of_2(c.XBLOCK) and c.XBLOCK <= max(1, 1 << (xnumel - 1).bit_length())
        assert c.RBLOCK == 0 and c.num_warps in (1, 2, 4, 8)
    assert set(default) <= set(wide) and (len(wide) > len(default) or len(default) == 1)
    assert len(triton_heuristics.pointwise_configs(xnumel, interpret=True)) == 1


@pytest.mark.parametrize("xnumel,rnumel", [(1, 10), (32, 64), (4096, 1000), (7, 1)])
def test_persistent_reduction_candidates_cover_the_whole_row(xnumel, rnumel):
    for max_autotune in (False, True):
        configs = triton_heuristics.persistent_reduction_configs(
            xnumel, rnumel, interpret=False, max_autotune=max_autotune)
        assert configs and all(c.RBLOCK >= rnumel and is_power_of_2(c.RBLOCK) for c in configs)
        assert all(is_power_of_2(c.XBLOCK) and c.num_warps in (1, 2, 4, 8) for c in configs)
    (only,) = triton_heuristics.persistent_reduction_configs(xnumel, rnumel, interpret=True)
    assert only.RBLOCK >= rnumel


@pytest.mark.parametrize("xnumel,rnumel", [(1, 100_000), (512, 4096), (3, 2000)])
def test_looped_reduction_candidates_respect_the_largest_rblock(xnumel, rnumel):
    default = triton_heuristics.looped_reduction_configs(xnumel, rnumel, 1024, interpret=False)
    wide = triton_heuristics.looped_reduction_configs(xnumel, rnumel, 1024, interpret=False, max_autotune=True)
    assert set(default) <= set(wide) and len(wide) > len(default)
    assert all(c.RBLOCK <= 1024 and is_power_of_2(c.RBLOCK) and is_power_of_2(c.XBLOCK) for c in wide)
    (only,) = triton_heuristics.looped_reduction_configs(xnumel, rnumel, 16, interpret=True)
    assert only.RBLOCK == 16


# --------------------------------------------------------------------------- the cache key


def test_cache_key_depends_on_source_device_and_candidates():
    configs = [Config(8, 64, 4), Config(32, 64, 8)]
    key = autotune_cache.cache_key("def kernel(): ...", "NVIDIA H100", configs)
    assert key == autotune_cache.cache_key("def kernel(): ...", "NVIDIA H100", list(reversed(configs)))
    assert key != autotune_cache.cache_key("def kernel(): pass", "NVIDIA H100", configs)
    assert key != autotune_cache.cache_key("def kernel(): ...", "NVIDIA A100", configs)
    assert key != autotune_cache.cache_key("def kernel(): ...", "NVIDIA H100", configs[:1])


# --------------------------------------------------------------------------- autotuning with a fake timer


@pytest.fixture
def autotune_dir(tmp_path):
    """A cache directory of the test's own, so that no other test's choice is found there."""
    with config.patch(cache_dir=str(tmp_path)):
        yield tmp_path


@pytest.fixture
def softmax_kernel(autotune_dir):
    """A persistent softmax kernel, loaded for the interpreter, and its inputs."""
    x = torch.randn(32, 64)
    gm = torch_graph(lambda x: torch.softmax(x, -1), [x])
    _, _, kernels = compile_fx.generate_triton_code(gm, [x], torch.device("cpu"))
    (kernel,) = kernels[0]
    return kernel, load_kernel(kernel.source, kernel.name, interpret=True), x


class FakeTimer:
    """Pretends that the config with XBLOCK == fastest is the fastest; runs every candidate."""

    def __init__(self, fastest):
        self.fastest = fastest
        self.timed = []

    def __call__(self, config, launch):
        launch()
        self.timed.append(config)
        return 1.0 if config.XBLOCK == self.fastest else 2.0 + config.XBLOCK


def test_autotuning_picks_the_fastest_and_saves_it_on_disk(softmax_kernel, autotune_dir):
    kernel, fn, x = softmax_kernel
    configs = triton_heuristics.persistent_reduction_configs(32, 64, interpret=False)
    assert len(configs) > 1
    timer = FakeTimer(fastest=configs[1].XBLOCK)
    launcher = TritonKernelLauncher(fn, kernel.source, kernel.xnumel, configs, timer)
    out = torch.empty_like(x)
    launcher.run(x, out)
    assert launcher.config == configs[1] and timer.timed == configs
    assert_same(out, torch.softmax(x, -1))
    key = autotune_cache.cache_key(kernel.source, triton_heuristics.INTERPRETER_DEVICE, configs)
    with open(autotune_cache.cache_path(key)) as f:
        record = json.load(f)
    assert record["best"] == configs[1].as_dict() and len(record["timings_ms"]) == len(configs)
    assert autotune_cache.cache_path(key).startswith(str(autotune_dir))


def test_a_saved_choice_is_reused_without_timing(softmax_kernel):
    kernel, fn, x = softmax_kernel
    configs = triton_heuristics.persistent_reduction_configs(32, 64, interpret=False)
    TritonKernelLauncher(fn, kernel.source, kernel.xnumel, configs, FakeTimer(configs[-1].XBLOCK)).run(
        x, torch.empty_like(x))

    def no_timing(config, launch):
        raise AssertionError("the choice was on disk: nothing should be timed")

    second = TritonKernelLauncher(fn, kernel.source, kernel.xnumel, configs, no_timing)
    second.run(x, torch.empty_like(x))
    assert second.config == configs[-1]
    wider = triton_heuristics.persistent_reduction_configs(32, 64, interpret=False, max_autotune=True)
    timer = FakeTimer(wider[0].XBLOCK)
    TritonKernelLauncher(fn, kernel.source, kernel.xnumel, wider, timer).run(x, torch.empty_like(x))
    assert timer.timed == wider  # another search: its own entry


def test_the_interpreter_uses_one_configuration_and_times_nothing():
    x = torch.randn(16, 32)
    with config.patch(triton_on_cpu=True, max_autotune=True):
        compiled = compile_fx.compile_fx_inner(torch_graph(lambda x: torch.softmax(x, -1), [x]), [x])
    launcher = compiled.call.__globals__["triton_per_0"]
    assert len(launcher.configs) == 1 and launcher.config == launcher.configs[0]
    assert_same(compiled(x), torch.softmax(x, -1))


def test_max_autotune_widens_the_search_for_gpu_kernels():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x = torch.empty(4096, 1024, device="cuda")  # a fake CUDA tensor: no GPU needed
    gm = torch_graph(lambda x: torch.softmax(x, -1), [torch.empty(4096, 1024)])
    candidates = {}
    for wide in (False, True):
        with config.patch(max_autotune=wide):
            compiled = compile_fx.compile_fx_inner(gm, [x])
        candidates[wide] = compiled.call.__globals__["triton_per_0"].configs
    assert set(candidates[False]) < set(candidates[True])


def test_compile_mode_max_autotune_reaches_the_backend():
    seen = []

    def backend(gm, example_inputs):
        seen.append(config.max_autotune)
        return gm.forward

    tinydynamo.compile(lambda x: x * 2, backend=backend, mode="max-autotune")(torch.randn(3))
    tinydynamo.reset()
    assert seen == [True] and not config.max_autotune


# --------------------------------------------------------------------------- on a GPU


@needs_gpu
def test_autotuning_on_a_gpu(autotune_dir):
    x = torch.randn(256, 1000, device="cuda")
    compiled = compile_fx.compile_fx_inner(torch_graph(lambda x: torch.softmax(x, -1), [x]), [x])
    assert_same(compiled(x), torch.softmax(x, -1), atol=1e-6, rtol=1e-5)
    launcher = compiled.call.__globals__["triton_per_0"]
    assert launcher.config in launcher.configs
    saved = os.listdir(autotune_dir / "triton" / "autotune")
    assert len(saved) == 1
