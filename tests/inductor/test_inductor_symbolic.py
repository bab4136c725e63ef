"""Inductor with symbolic sizes (chapter 12): kernels that take the sizes as arguments, the guards
they rely on, and the per-size variant for a call that fails them. Every result against eager."""
import pytest
import sympy
import torch
import torch.nn.functional as F

import tinydynamo
from tinydynamo.inductor import indexing
from tinydynamo.inductor.codegen.cpp import branch_on_parallelism
from tinydynamo.inductor.sizevars import SizeVarAllocator, SymbolicSize
from tinydynamo.symbolic_shapes import SymbolicShapeError


@pytest.fixture(autouse=True)
def fresh():
    tinydynamo.reset()
    yield
    tinydynamo.reset()


def _sizes():
    sizevars = SizeVarAllocator()
    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    sizevars.shape_env.var_to_val.update({s0: 6, s1: 10})
    return sizevars, sizevars.wrap(s0), sizevars.wrap(s1)


def test_size_arithmetic_stays_symbolic_and_prints_as_c():
    _, s0, s1 = _sizes()
    assert str(s0 * s1 + 3) == "(3 + (s0*s1))"
    assert str((s0 + 3) // 4) == "((3 + s0) / 4)"
    assert (s1 - s1) == 0 and isinstance(s1 - s1, int)


def test_a_decision_is_static_when_every_size_agrees_else_a_guard():
    sizevars, s0, s1 = _sizes()
    assert s0 != 1 and s0 * s1 >= s0  # every symbol is >= 2: no guard
    assert sizevars.guards == []
    assert s0 < s1  # true for the hints (6 < 10), not for every size: a guard
    assert sizevars.guards == [sympy.Lt(s0.expr, s1.expr)]


def test_a_symbolic_size_is_never_silently_a_number():
    _, s0, _ = _sizes()
    with pytest.raises(SymbolicShapeError, match="s0"):
        range(s0)


def test_index_simplification_adds_no_guard():
    sizevars, s0, s1 = _sizes()
    x0, x1 = indexing.Var("x0", s0), indexing.Var("x1", s1)
    flat = indexing.flatten([x0, x1], [s0, s1])
    assert str(flat) == "s1*x0 + x1"
    assert indexing.unflatten(flat, [s0, s1]) == [indexing.Expr.of(x0), indexing.Expr.of(x1)]
    assert sizevars.guards == []


def test_parallel_and_serial_copies_of_a_kernel_for_a_symbolic_threshold():
    lines = ["#pragma omp parallel for simd if((s0*s1) >= 32768)", "for (;;) {", "}"]
    code = branch_on_parallelism(lines)
    assert code[0] == "if ((s0*s1) >= 32768) {"
    assert "  #pragma omp parallel for simd" in code and "  #pragma omp simd" in code


def _check(fn, make_args, sizes, **kwargs):
    compiled = tinydynamo.compile(fn, backend="inductor", dynamic=True, **kwargs)
    for n in sizes:
        args = make_args(n)
        leaves = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
        expected, actual = fn(*args), compiled(*leaves)
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-4, msg=lambda m: f"size {n}: {m}")
        if any(a.requires_grad for a in args):
            expected.sum().backward()
            actual.sum().backward()
            for a, b in zip(args, leaves):
                torch.testing.assert_close(b.grad, a.grad, atol=1e-5, rtol=1e-4, msg=lambda m: f"size {n}: {m}")
    return tinydynamo.stats()


CASES = {
    "softmax": (lambda x: torch.softmax(x, -1), lambda n: (torch.randn(n, 2 * n + 1, requires_grad=True),)),
    "layer_norm": (lambda x, w: F.layer_norm(x, x.shape[-1:], w),
                   lambda n: (torch.randn(n, 3, 16, requires_grad=True), torch.randn(16, requires_grad=True))),
    "mean_var": (lambda x: x.mean(0) + x.var(1).sum(), lambda n: (torch.randn(n, n + 2, requires_grad=True),)),
    "attention": (lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
                  lambda n: (torch.randn(2, 2, n, 8, requires_grad=True),)),
    "slices_and_cat": (lambda x: torch.cat([x[: x.shape[0] // 2], x * 2], 0).t() + 1,
                       lambda n: (torch.randn(n, 5, requires_grad=True),)),
    "column_sum": (lambda x: x.sum(0) * x.amax(1).sum(), lambda n: (torch.randn(n, n + 1, requires_grad=True),)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_one_kernel_for_every_size(name):
    fn, make_args = CASES[name]
    stats = _check(fn, make_args, [4, 5, 9, 16, 33])
    assert stats["frames_compiled"] == 1
    assert stats["size_specializations"] == 0, "a call failed the kernels' guards"
    assert stats.get("symbolic_fallbacks", 0) == 0


def test_a_call_that_fails_a_guard_gets_kernels_for_its_sizes():
    """Local buffers are per-row arrays on the stack, up to 64 KiB: a row of 20000 floats fails
    that guard, and runs kernels compiled for its own size (correctly)."""
    stats = _check(lambda x: torch.softmax(x * 2, -1) + x, lambda n: (torch.randn(3, n),), [100, 20000, 101])
    assert stats["size_specializations"] == 1


def test_the_kernel_takes_the_sizes_as_arguments(capsys):
    tinydynamo.set_logs("kernels")
    try:
        _check(lambda x: x.sin() * 2, lambda n: (torch.randn(n, 3),), [4, 6])
    finally:
        tinydynamo.set_logs("")
    source = capsys.readouterr().err
    assert "const int64_t s0" in source and "x0 < (s0*s1)" in source
    assert "s0 = arg0_" in source and "return fallback(args)" in source


def test_symbolic_size_keeps_hint():
    _, s0, s1 = _sizes()
    assert isinstance(s0 * s1, SymbolicSize) and (s0 * s1).hint == 60


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "column_sum"])
def test_triton_kernels_take_the_sizes_as_arguments(name, monkeypatch):
    """The Triton generator (run by its CPU interpreter here): one kernel per fused group for every
    size, with block sizes chosen per size bucket at launch."""
    monkeypatch.setattr(tinydynamo.config, "triton_on_cpu", True)
    fn, make_args = CASES[name]
    stats = _check(fn, make_args, [4, 5, 9])
    assert stats["size_specializations"] == 0 and stats.get("symbolic_fallbacks", 0) == 0


def test_the_disk_cache_key_names_the_symbols_not_their_values():
    """A kernel file holds `s0`, never the traced size: traced again for other sizes, the same
    file is found in the disk cache, and nothing is compiled."""
    fn, make_args = CASES["softmax"]
    _check(fn, make_args, [6, 7])
    tinydynamo.reset()
    stats = _check(fn, make_args, [11, 13])
    assert stats["cpp_compiles"] == 0 and stats["kernels_generated"] > 0
