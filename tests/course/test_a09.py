"""a09's checkers: the solution passes them, the swap really runs the learner's functions, and
typical mistakes fail with a message that names the case and what went wrong."""
import json

import pytest
import torch

from tinydynamo.course import a09
from tinydynamo.course import nbgrader_tools as nbt
from tinydynamo.inductor.codegen import triton as triton_codegen

NOTEBOOK = nbt.REPO / "solutions" / "a09_triton_reductions" / "a09_triton_reductions.ipynb"
PART_PIECES = {"identity": "reduction_identity", "persistent": "persistent_reduction",
               "looped": "looped_reduction", "arg": "arg_reduction"}


@pytest.fixture(scope="module")
def solution():
    """The solution notebook's setup and solution cells, run: the learner's namespace."""
    namespace = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        nbgrader = cell["metadata"]["nbgrader"]
        if cell["cell_type"] == "code" and not nbgrader["grade"]:
            exec(compile("".join(cell["source"]), f"<a09 {nbgrader['grade_id']}>", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def pieces(solution):
    return {name: solution[name] for name in a09.PIECES}


@pytest.mark.parametrize("extra", [False, True], ids=["basic", "extra"])
@pytest.mark.parametrize("part", sorted(PART_PIECES))
def test_solution_passes_each_part(pieces, part, extra):
    assert a09.cases(part, extra)
    name = PART_PIECES[part]
    assert a09.check_part(part, extra, **{name: pieces[name]}) == []


def test_solution_passes_random_programs(pieces):
    assert a09.check_programs(range(10), **pieces) == []
    assert a09.check_programs(range(10), looped=True, **pieces) == []


@pytest.mark.parametrize("name", ["norm_act", "mlp", "gpt_block"])
def test_solution_trains_the_zoo(pieces, name):
    assert a09.check_training(name, **pieces) == []


def test_looped_cases_really_loop_and_persistent_ones_do_not(pieces):
    with a09.swapped_codegen(looped=True) as swap:
        a09.compile_and_run(lambda x: x.sum(1), [torch.randn(3, 40)])
    assert "for roffset in range(0, rnumel, RBLOCK):" in swap.sources[0]
    with a09.swapped_codegen() as swap:
        a09.compile_and_run(lambda x: x.sum(1), [torch.randn(3, 40)])
    assert "for roffset" not in swap.sources[0] and "triton_per_" in swap.sources[0]


def test_the_learners_functions_are_called(pieces):
    calls = []

    def persistent(kernel, body):
        calls.append(body.reduction_type)
        return pieces["persistent_reduction"](kernel, body)

    assert a09.check_part("persistent", persistent_reduction=persistent) == []
    assert {"sum", "max", "min"} <= set(calls)


def test_swap_restores_the_reference_even_on_error():
    def broken(kernel, body):
        raise RuntimeError("boom")

    reference = triton_codegen.persistent_reduction, triton_codegen.PERSISTENT_REDUCTION_MAX
    with pytest.raises(RuntimeError, match="boom"):
        with a09.swapped_codegen(looped=True, persistent_reduction=broken):
            a09.compile_and_run(lambda x: x.sum(1), [torch.randn(3, 4)])
    assert (triton_codegen.persistent_reduction, triton_codegen.PERSISTENT_REDUCTION_MAX) == reference


def test_an_identity_of_zero_fails_on_negative_rows():
    failures = a09.check_part("identity", reduction_identity=lambda rtype, dtype: "0")
    assert any(f.startswith("amax of a row of -inf") and "differs from eager" in f for f in failures)


def test_tl_max_of_floats_misses_nans(solution):
    """The mistake: tl.max for floats (it skips nans) instead of max_propagate_nan."""
    def persistent(kernel, body):
        if body.reduction_type in ("max", "min"):
            tile = solution["reduction_input"](kernel, body)
            return kernel.new_var(f"tl.{body.reduction_type}({tile}, 1)[:, None]", body.dtype, {"x"})
        return solution["persistent_reduction"](kernel, body)

    failures = a09.check_part("persistent", persistent_reduction=persistent)
    assert failures and all("nan" in f for f in failures), failures


def test_a_max_without_the_identity_past_the_row_sees_the_loads_zeros(solution):
    """The mistake: no ``tl.where(rmask, ..., identity)``; masked loads put 0 past the row."""
    def persistent(kernel, body):
        value = kernel.ensure_tensor(kernel.compute(body))
        tile = kernel.new_var(f"tl.broadcast_to({value}, [XBLOCK, RBLOCK])", body.src_dtype, {"x", "r"})
        return solution["reduce_tile"](kernel, body, tile)

    failures = a09.check_part("identity", persistent_reduction=persistent)
    assert any("-inf" in f for f in failures), failures


def test_a_loop_that_overwrites_its_accumulator_fails(solution):
    def looped(kernel, body):
        acc = kernel.new_name("acc")
        kernel.writeline(f"{acc} = tl.zeros([XBLOCK, RBLOCK], tl.float32)")
        with kernel.reduction_loop(body):
            kernel.writeline(f"{acc} = {solution['reduction_input'](kernel, body)}")
        return solution["reduce_tile"](kernel, body, a09.triton_codegen.TritonCSEVariable(acc, body.src_dtype, {"x", "r"}))

    failures = a09.check_part("looped", looped_reduction=looped)
    assert any(f.startswith("sum of rows f32[5, 100] (looped): the result differs") for f in failures), failures


def test_tl_argmax_fails_on_nan(solution):
    def arg(kernel, body):
        tile = solution["reduction_input"](kernel, body)
        return kernel.new_var(f"tl.{body.reduction_type}({tile}, 1)[:, None].to(tl.int64)", torch.int64, {"x"})

    failures = a09.check_part("arg", arg_reduction=arg)
    assert any("with nan" in f for f in failures), failures


def test_learner_exceptions_name_the_function_and_line():
    def persistent(kernel, body):
        return kernel.no_such_method(body)

    (first, *_) = a09.check_part("persistent", persistent_reduction=persistent)
    assert "raised AttributeError" in first and "in persistent, line" in first and "no_such_method" in first


def test_a_kernel_that_fails_in_the_interpreter_names_the_generated_line(solution):
    """The mistake: no ``[:, None]``, so the result is [XBLOCK], not [XBLOCK, 1]."""
    def persistent(kernel, body):
        tile = solution["reduction_input"](kernel, body)
        return kernel.new_var(f"tl.sum({tile}, 1)", body.dtype, {"x"})

    failures = a09.check_part("persistent", persistent_reduction=persistent)
    assert failures and "the generated Triton kernel failed" in failures[0]
    assert "(in triton_per_0, line" in failures[0] and ": tmp" in failures[0]


def test_invalid_python_in_a_kernel_is_reported():
    def persistent(kernel, body):
        return kernel.new_var("tl.sum(((", body.dtype, {"x"})

    failures = a09.check_part("persistent", persistent_reduction=persistent)
    assert failures and "the generated kernel is not valid Python" in failures[0]


def test_random_programs_are_deterministic_and_listed_on_failure():
    assert repr(a09.random_program(0)) == repr(a09.random_program(0))
    assert "mean(" in repr(a09.random_program(0))  # a reduction: it needs an identity
    (failure,) = a09.check_programs([0], reduction_identity=lambda rtype, dtype: 1 / 0)
    assert failure.startswith("random program 0: raised ZeroDivisionError") and "v0 = input" in failure


def test_show_kernels_prints_the_kernels_or_the_error(pieces, capsys):
    a09.show_kernels(lambda x: x.sum(1), torch.randn(3, 40), looped=True, **pieces)
    out = capsys.readouterr().out
    assert "def triton_red_0(" in out and "the result matches eager" in out
    a09.show_kernels(lambda x: x.sum(1), torch.randn(3, 4), persistent_reduction=lambda k, b: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_the_reference_pieces_are_refused():
    failures = a09.check_part("identity", reduction_identity=triton_codegen.reduction_identity)
    assert failures and all("your reduction_identity is the reference's own reduction_identity" in f
                            for f in failures)


def test_a_piece_that_delegates_is_refused():
    def delegates(kernel, body):
        return triton_codegen.codegen_reduction(kernel, body)

    [failure, *_] = a09.check_part("persistent", persistent_reduction=delegates)
    assert "your code called" in failure and "the reference's own answer" in failure
