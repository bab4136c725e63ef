"""a08's checkers: the solution passes them, the swap really runs the learner's C++, and typical
mistakes fail with a message that names the case and what went wrong."""
import contextlib
import json
import re
import types

import pytest
import torch

from tinydynamo import config
from tinydynamo.course import a08
from tinydynamo.course import nbgrader_tools as nbt
from tinydynamo.inductor import codecache
from tinydynamo.inductor.codegen import cpp
from tinydynamo.utils import counters

NOTEBOOK = nbt.REPO / "solutions" / "a08_cpp_codegen" / "a08_cpp_codegen.ipynb"
PART_PIECES = {"ops": ("ops",), "pointwise": ("loop", "pointwise_body"),
               "reductions": ("loop", "reduction_init", "reduction_body")}


@pytest.fixture(scope="module")
def solution():
    """The solution notebook's setup and solution cells, run: the learner's namespace."""
    namespace = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        nbgrader = cell["metadata"]["nbgrader"]
        if cell["cell_type"] == "code" and not nbgrader["grade"]:
            exec(compile("".join(cell["source"]), f"<a08 {nbgrader['grade_id']}>", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def pieces(solution):
    return {"ops": solution["CppOps"], "loop": solution["loop"], "pointwise_body": solution["pointwise_body"],
            "reduction_init": solution["reduction_init"], "reduction_body": solution["reduction_body"]}


def _part(pieces, part):
    return {name: pieces[name] for name in PART_PIECES[part]}


@pytest.mark.parametrize("extra", [False, True], ids=["basic", "extra"])
@pytest.mark.parametrize("part", sorted(PART_PIECES))
def test_solution_passes_each_part(pieces, part, extra):
    assert a08.cases(part, extra)
    assert a08.check_part(part, extra, **_part(pieces, part)) == []


def test_solution_passes_random_programs(pieces):
    assert a08.check_programs(range(12), **pieces) == []
    assert a08.check_programs(range(1000, 1030), max_steps=9, **pieces) == []


@pytest.mark.parametrize("name", ["norm_act", "mlp", "cnn", "gpt_block", "tiny_gpt"])
def test_solution_trains_the_zoo(pieces, name):
    assert a08.check_training(name, **pieces) == []


def test_the_learners_cpp_is_compiled_and_run(pieces, tmp_path):
    """The reference has compiled this graph's kernel before; inside the swap it is compiled
    again from the learner's source, in a new cache directory, and every piece was called."""
    case = a08.cases("reductions")[0]
    with config.patch(cache_dir=str(tmp_path)):
        assert a08.compile_and_run(case.fn, case.make_inputs()) is not None  # the reference, cached
    compiles = counters["cpp_compiles"]
    with a08.swapped_codegen(**pieces) as swap:
        assert a08.run_case(case, swap) is None
    assert counters["cpp_compiles"] == compiles + 1
    assert len(swap.sources) == 1 and "reduction(max:" in swap.sources[0]
    for label in ("loop", "pointwise_body", "reduction_body", "exp", "sub", "reciprocal", "mul"):
        assert swap.calls[label] > 0, label


def test_swap_restores_the_reference_even_on_error(pieces):
    before = {name: cpp.CppOverrides.__dict__[name] for name in a08.LEARNER_OPS}
    methods = {name: cpp.CppKernel.__dict__[name] for name in ("_loop", "_pointwise_body", "_reduction_body")}
    init, load, loaded = cpp.reduction_init, codecache.load, dict(codecache._loaded)
    with pytest.raises(RuntimeError, match="inside"):
        with a08.swapped_codegen(**pieces):
            assert cpp.CppKernel.__dict__["_pointwise_body"] is not methods["_pointwise_body"]
            raise RuntimeError("inside")
    assert {name: cpp.CppOverrides.__dict__[name] for name in a08.LEARNER_OPS} == before
    assert {name: cpp.CppKernel.__dict__[name] for name in methods} == methods
    assert (cpp.reduction_init, codecache.load, codecache._loaded) == (init, load, loaded)


def test_compile_errors_are_never_hidden_by_suppress_errors(pieces):
    class Typo(pieces["ops"]):
        @staticmethod
        def exp(x):
            return f"expf({x}"

    with config.patch(suppress_errors=True):
        failures = a08.check_part("ops", ops=Typo)
    assert failures and all("the C++ compiler rejected the generated code" in f for f in failures)
    assert "error: expected ‘)’" in failures[0] or "error: expected ')'" in failures[0]
    assert "expf(tmp" in failures[0]  # the offending line of generated code
    assert failures[0].startswith("sigmoid(x) * tanh(y) f32[5, 8]: ")


def test_learner_exceptions_name_the_method_and_line(pieces):
    class Unfinished(pieces["ops"]):
        @staticmethod
        def tanh(x):
            raise NotImplementedError("not yet")

    failures = a08.check_part("ops", ops=Unfinished)
    assert failures[0].startswith("gelu_tanh f32[4, 33]: raised NotImplementedError: not yet (in tanh, line")
    assert 'raise NotImplementedError("not yet")' in failures[0]


def test_missing_ops_are_named():
    class Partial:
        @staticmethod
        def exp(x):
            return f"expf({x})"

    failures = a08.check_part("ops", ops=Partial)
    assert len(failures) == 1 and failures[0].startswith("your CppOps has no method(s) neg, abs, log,")


def test_std_max_fails_on_nan_and_on_an_integer_literal(pieces):
    class StdMax(pieces["ops"]):
        @staticmethod
        def maximum(a, b):
            return f"std::max({a}, {b})"

    assert a08.check_part("ops", ops=StdMax) == []  # the basic cases have no nan
    failures = a08.check_part("ops", extra=True, ops=StdMax)
    assert len(failures) == 3
    assert failures[0].startswith("maximum and minimum with nan and ±inf f32[2, 8]: output 0 differs from eager")
    assert "no matching function for call to" in failures[1] and "std::max(tmp" in failures[1]
    assert failures[2].startswith("integer clamp and minimum with a constant") and "std::max(tmp" in failures[2]


def _pointwise_body_with(solution, pragma, scoped):
    def pointwise_body(kernel, body):
        node = body.node
        with (kernel.cse_scope() if scoped else contextlib.nullcontext()), contextlib.ExitStack() as loops:
            for var in body.inner_vars:
                loops.enter_context(solution["loop"](kernel, var, pragma))
            with solution["V"].set_ops_handler(kernel):
                value = node.buffer.data.inner_fn(body.index)
            kernel.store(node.name, node.buffer.layout.index(body.index), value)

    return pointwise_body


def test_a_body_without_a_cse_scope_reuses_a_dead_temporary(solution):
    body = _pointwise_body_with(solution, "#pragma omp simd", scoped=False)
    failures = a08.check_part("pointwise", loop=solution["loop"], pointwise_body=body)
    assert len(failures) == 1
    assert failures[0].startswith("x - rowmax(x) and 2 * x f32[5, 12] (two bodies load the same elements): "
                                  "the C++ compiler rejected")
    assert "was not declared in this scope" in failures[0]


def test_a_pointwise_loop_without_simd_is_refused(solution):
    body = _pointwise_body_with(solution, None, scoped=True)
    failures = a08.check_part("pointwise", loop=solution["loop"], pointwise_body=body)
    assert failures == ["softmax rows f32[6, 40] (two pointwise bodies in one kernel): correct values, but "
                        "the row loop (x1) of a pointwise body inside the outer loop must carry "
                        "`#pragma omp simd`"]


NESTED_SIMD_LOOP = """// kernel0
for (int64_t x0 = 0; x0 < 3; ++x0) {{
    float acc0 = -std::numeric_limits<float>::infinity();
    {pragma}
    for (int64_t r0 = 0; r0 < 4; ++r0) {{
        for (int64_t r1 = 0; r1 < 4; ++r1) {{
            acc0 = std::max(acc0, in_ptr0[20 * x0 + 5 * r0 + r1]);
        }}
    }}
}}
"""


@pytest.mark.parametrize("pragma", ["#pragma omp simd reduction(max:acc0)",
                                    "#pragma omp parallel for simd reduction(max:acc0)",
                                    "#pragma omp for simd reduction(max:acc0)"])
def test_simd_innermost_only_sees_every_simd_pragma(pragma):
    pattern = a08.SIMD_INNERMOST_ONLY[0]
    assert not re.search(pattern, NESTED_SIMD_LOOP.format(pragma=pragma))
    innermost = NESTED_SIMD_LOOP.format(pragma="").replace("        for (int64_t r1",
                                                             f"        {pragma}\n        for (int64_t r1")
    assert re.search(pattern, innermost)
    assert re.search(pattern, NESTED_SIMD_LOOP.format(pragma="#pragma omp parallel for"))  # no simd


def test_a_parallel_simd_loop_with_a_loop_inside_is_refused(solution):
    """`#pragma omp parallel for simd` on the outer of two reduction loops inside the outer loop
    computes the right values, but it is a simd loop with a loop inside, as `#pragma omp simd`
    there would be."""

    def on_the_outermost_loop(body, acc, full_reduction, tracks_nan):
        pragmas = solution["reduction_pragmas"](body, acc, full_reduction, tracks_nan)
        if len(pragmas) > 1 and pragmas[-1]:
            return [pragmas[-1].replace("omp simd", "omp parallel for simd")] + [None] * (len(pragmas) - 1)
        return pragmas

    body = solution["reduction_body"]  # it calls reduction_pragmas by its global name: give it ours
    body = types.FunctionType(body.__code__, {**solution, "reduction_pragmas": on_the_outermost_loop})
    (case,) = [case for case in a08.cases("reductions", extra=True) if a08.SIMD_INNERMOST_ONLY in case.source_checks]
    failures = a08.check_cases([case], loop=solution["loop"], reduction_init=solution["reduction_init"],
                               reduction_body=body)
    assert failures == [f"{case.name}: correct values, but {a08.SIMD_INNERMOST_ONLY[1]}"]
    assert "`#pragma omp parallel for simd`" in failures[0]


def test_a_max_that_starts_from_zero_fails_on_negative_rows(solution):
    def starts_from_zero(reduction_type, dtype):
        return "0"

    body = solution["reduction_body"]  # it calls reduction_init by its global name: give it ours
    body = types.FunctionType(body.__code__, {**solution, "reduction_init": starts_from_zero})
    failures = a08.check_part("reductions", reduction_init=starts_from_zero, reduction_body=body)
    assert len(failures) == 1
    assert failures[0].startswith("amax of negative rows, amin of positive rows, with nan f32[4, 9]: "
                                  "output 0 differs from eager: max abs error")


def test_random_programs_are_deterministic_and_listed_on_failure(pieces):
    assert repr(a08.random_program(5)) == repr(a08.random_program(5))
    assert repr(a08.random_program(5)) != repr(a08.random_program(6))

    class WrongSub(pieces["ops"]):
        @staticmethod
        def sub(a, b):
            return f"{b} - {a}"

    failures = a08.check_programs(range(12), **{**pieces, "ops": WrongSub})
    assert failures
    seed = int(failures[0].split(":")[0].removeprefix("random program "))
    assert f"\n    {repr(a08.random_program(seed)).splitlines()[0]}" in failures[0]


def test_random_programs_compute_something():
    """A program's outputs are computed by kernels, never only views of its inputs."""
    for seed in range(50):
        program = a08.random_program(seed)
        inputs = program.make_inputs()
        for output in program(*inputs):
            assert all(output.data_ptr() != x.data_ptr() or output.numel() == 0 for x in inputs), program


def test_a_training_failure_names_the_step_and_the_gradient(pieces):
    def sums_start_from_one(reduction_type, dtype):
        return "1" if reduction_type == "sum" else pieces["reduction_init"](reduction_type, dtype)

    failures = a08.check_training("mlp", reduction_init=sums_start_from_one)
    assert failures[0].startswith("mlp, training step 1: the gradient of fc1.bias differs from eager")


def test_show_kernels_prints_the_kernels_or_the_error(pieces, capsys):
    a08.show_kernels(lambda x: torch.softmax(x, -1), torch.randn(4, 8), **pieces)
    printed = capsys.readouterr().out
    assert printed.startswith("// kernel0: buf0 (max reduction [4] over [8])")
    assert "td_maximum" not in printed  # the prelude is left out
    a08.show_kernels(lambda x: x.exp(), torch.randn(3), ops=pieces["ops"], loop=pieces["loop"],
                     pointwise_body=lambda kernel, body: 1 / 0)
    assert "raised ZeroDivisionError: division by zero (in <lambda>" in capsys.readouterr().out


def test_the_reference_pieces_are_refused(pieces):
    failures = a08.check_part("pointwise", loop=cpp.CppKernel._loop, pointwise_body=pieces["pointwise_body"])
    assert failures and all("your loop is the reference's own CppKernel._loop: write it yourself" in f
                            for f in failures)


def test_a_piece_that_delegates_is_refused(pieces):
    class Delegates(pieces["ops"]):
        @staticmethod
        def exp(x):
            return cpp.CppOverrides.exp(x)  # during the swap, the learner's own wrapped piece

    [failure] = a08.check_cases([a08.cases("ops")[4]], ops=Delegates)  # exp(-x) + 1 / x
    assert "your code called" in failure and "the reference's own answer" in failure
