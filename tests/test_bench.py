"""The benchmark harness runs, checks results against eager, and writes JSON and markdown."""
import json

import torch

from tinydynamo.bench import __main__ as bench
from tinydynamo.bench import harness, report, tuning, workloads


def test_quick_run_writes_results(tmp_path, capsys):
    assert bench.main(["--quick", "--workloads", "call_overhead,call_overhead_inductor", "--rounds", "1",
                       "--out", str(tmp_path)]) == 0
    (json_path,) = tmp_path.glob("bench-cpu-*.json")
    data = json.loads(json_path.read_text())
    workload, inductor = data["workloads"]
    assert (workload["name"], workload["backend"]) == ("call_overhead", "eager")
    assert (inductor["name"], inductor["backend"]) == ("call_overhead_inductor", "inductor")
    assert data["summary"]["call_overhead_inductor"]["tinydynamo_overhead_us"] is not None
    eager = workload["variants"]["eager"]
    assert eager["error"] is None and eager["median_s"] > 0 and eager["speedup"] == 1.0
    assert workload["variants"]["torch.compile"]["median_s"] > 0
    tinydynamo_result = workload["variants"]["tinydynamo"]
    assert tinydynamo_result["error"] is None, tinydynamo_result["error"]
    assert tinydynamo_result["median_s"] > 0
    assert data["summary"]["call_overhead"]["tinydynamo_over_torch_compile"] is not None
    assert data["copy_bandwidth_gbps"] > 0
    assert "| (h) call overhead" in capsys.readouterr().out
    assert (tmp_path / json_path.name.replace(".json", ".md")).exists()


def test_no_gpu_says_so_and_exits_zero(capsys):
    if torch.cuda.is_available():
        return
    assert bench.main(["--device", "cuda"]) == 0
    assert "No CUDA GPU" in capsys.readouterr().out


def test_a_wrong_result_is_reported_not_timed():
    reference = torch.ones(3)
    assert harness._check(reference, torch.ones(3)) is None
    assert "differs from eager" in harness._check(reference, torch.zeros(3))


def test_workloads_compute_what_they_say():
    x = torch.randn(100)
    torch.testing.assert_close(workloads.gelu_tanh_chain(x), torch.nn.functional.gelu(x, approximate="tanh"))


def test_dynamic_sweep_reports_compiles_and_the_generic_over_specialised_ratio():
    from tinydynamo.bench import dynamic

    (result,) = dynamic.run(["layer_norm"], quick=True, rounds=1)
    variants = result["variants"]
    assert all(v["error"] is None for v in variants.values()), variants
    assert variants["tinydynamo dynamic"]["compiles"] == 1  # one graph, kernels for every size
    assert variants["tinydynamo specialised"]["compiles"] == len(result["sizes"])
    assert "specialised / generic" in dynamic.to_markdown([result])


def test_tuning_findings_measure_what_chapter_13_says(tmp_path):
    """The facts chapter 13 states about the tuning guide's advice, from the same measurements."""
    assert bench.main(["--tuning", "--quick", "--rounds", "1", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("tuning-bench-cpu-*.json")
    findings = {f["advice"]: f["values"] for f in json.loads(path.read_text())["findings"]}
    assert len(findings) == len(tuning.FINDINGS)
    fused = findings["fuse pointwise operations"]
    assert (fused["eager ops"], fused["tinydynamo kernels"]) == (7, 1)
    no_grad = findings["inference under torch.no_grad()"]
    assert no_grad["eager, activations KiB, no_grad"] == no_grad["tinydynamo, activations KiB, no_grad"] == 0
    assert 0 < no_grad["tinydynamo, activations KiB"] < no_grad["eager, activations KiB"]  # GELU recomputed
    remat = findings["activation checkpointing"]
    assert remat["eager, checkpointed, activations KiB"] == 0
    assert remat["tinydynamo, checkpointed, activations KiB"] < remat["tinydynamo, activations KiB"]  # one graph, recomputed
    assert findings["channels_last memory format"]["tinydynamo output stays channels_last"] is True
    assert findings["mixed precision (torch.autocast, bfloat16)"]["tinydynamo compiles under autocast"] is True


def test_fork_benchmark_times_the_ensembles_sequential_and_forked():
    from tinydynamo.bench import fork

    (result,) = fork.run(["mlp_ensemble"], quick=True, rounds=1)
    assert all(r["error"] is None and r["median_s"] > 0 for r in result["variants"].values()), result
    assert result["ratios"]["tinydynamo fork/wait over tinydynamo sequential"] > 0
    assert "tinydynamo sequential / fork" in fork.to_markdown([result])


def test_fork_benchmark_command_with_torchscript_writes_results(tmp_path):
    """In a process of its own: TorchScript's inter-op pool may abort the exit of the process
    that used it (torch 2.13), which the command avoids with os._exit."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "tools/fork_bench.py", "--fork", "--quick", "--rounds", "1",
                           "--workloads", "mlp_ensemble", "--out", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = tmp_path.glob("fork-bench-cpu-*.json")
    data = json.loads(path.read_text())
    (workload,) = data["workloads"]
    assert workload["variants"]["TorchScript fork/wait"]["error"] is None
    assert data["environment"]["inter_op_threads"] >= 1


def test_models_benchmark_checks_every_compiled_model_against_eager(tmp_path, monkeypatch):
    """A real model, both modes: a compiler whose model is wrong (here a stand-in for
    torch.compile, one weight changed) is reported and not timed; tinydynamo's is timed."""
    compile_variant = harness.compile_variant

    def torch_compile_is_wrong(variant, model, backend):
        if variant != "torch.compile":
            return compile_variant(variant, model, backend)
        with torch.no_grad():
            next(model.parameters()).mul_(1.01)
        return model

    monkeypatch.setattr(harness, "compile_variant", torch_compile_is_wrong)
    assert bench.main(["--models", "--quick", "--rounds", "1", "--workloads", "bert", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("models-bench-cpu*.json")
    data = json.loads(path.read_text())
    assert [(r["name"], r["mode"]) for r in data["workloads"]] == [("bert", "inference"), ("bert", "training")]
    for row in data["workloads"]:
        wrong, ours = row["variants"]["torch.compile"], row["variants"]["tinydynamo"]
        assert "differs from eager" in wrong["error"] and wrong["median_s"] is None
        assert ours["error"] is None and ours["median_s"] > 0 and ours["first_call_s"] > 0
        assert row["tinydynamo_over_torch_compile"] is None
    assert data["environment"]["quick"] and "load_average_1min" in data["environment"]
    assert "| BERT-base shapes" in (tmp_path / path.name.replace(".json", ".md")).read_text()


def test_models_check_ignores_float32_noise_but_not_errors():
    from tinydynamo.bench import models

    grad = torch.randn(100) * 1e-4
    assert models.check([grad, torch.zeros(3)], [grad * (1 + 1e-5), torch.full((3,), 1e-12)]) is None
    assert "differs from eager" in models.check([grad], [grad * 1.01])
    assert "2 tensors, eager has 1" in models.check([grad], [grad, grad])


def test_bounds_compute_the_bytes_and_the_math_they_name():
    x, y = torch.randn(64), torch.randn(64)
    calls = workloads.WORKLOADS["gelu_chain"].bounds((x,))
    assert set(calls) == {"same bytes into a preallocated output", "copy into a fresh output", "tanh of each element"}
    torch.testing.assert_close(calls["same bytes into a preallocated output"](), x)
    torch.testing.assert_close(calls["copy into a fresh output"](), x)
    torch.testing.assert_close(calls["tanh of each element"](), torch.tanh(x))
    two_inputs = workloads.WORKLOADS["bias_gelu_residual_ln"].bounds((x, y))
    torch.testing.assert_close(two_inputs["copy into a fresh output"](), x + y)  # reads both, writes one
    torch.testing.assert_close(two_inputs["same bytes into a preallocated output"](), x + y)
    assert harness._bounds(workloads.WORKLOADS["softmax"], "cpu", quick=True) == {}  # cache-sized: no bounds


def test_the_report_sets_each_memory_bound_workload_beside_its_bounds():
    timed = {"median_s": 2e-3, "fraction_of_copy": 0.5, "variant": "tinydynamo"}
    bound = {"median_s": 1e-3, "fraction_of_copy": 1.0, "variant": "tanh of each element"}
    lines = report._bounds_table([{"description": "(a) chain", "variants": {"tinydynamo": timed},
                                   "bounds": {"tanh of each element": bound}}, {"description": "(e)", "bounds": {}}])
    assert lines[-1] == "| (a) chain | 2.000 ms, 50% of copy | tanh of each element: 1.000 ms, 100% of copy |"
    assert not report._bounds_table([{"description": "(e)"}])  # runs committed before bounds were measured
