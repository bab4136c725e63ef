"""The C++ prelude's own math (cpp_prelude.h), where it does not call libm or libmvec: its results
against float64, every special value included. (The C++ code generator only: these tests are not
imported by the Triton ones.)"""
import torch

from inductor_helpers import assert_same, prim_graph
from tinydynamo.inductor import compile_fx_inner


def ulps_from_exact(got, exact):
    """|got - exact| in units of the float32 spacing at the exact result (float64 in, float32 got)."""
    rounded = exact.float()
    spacing = (torch.nextafter(rounded.abs(), torch.tensor(float("inf"))) - rounded.abs()).double()
    return (got.double() - exact).abs() / spacing


def test_float_exp_is_within_about_one_ulp_everywhere_subnormals_and_specials_included():
    """The prelude's td_expf is a polynomial of its own (no libmvec call): every float from -110
    to 95 in steps of 2^-10 (210,000 values), against exp in float64."""
    x = torch.arange(-110.0, 95.0, 2.0 ** -10, dtype=torch.float32)
    compiled = compile_fx_inner(prim_graph(torch.exp, [x]), [x])
    got = compiled(x)
    exact = torch.exp(x.double())
    finite = (exact.float() != 0) & torch.isfinite(exact.float())
    worst = ulps_from_exact(got[finite], exact[finite]).max().item()
    assert worst < 1.1, f"{worst:.3f} ulp"
    # where float32's exp is 0 or inf the result is exactly that, and a subnormal result (which
    # libmvec computed on a slow scalar path) is at most one step of the subnormals from eager's
    assert torch.equal(got[~finite], exact.float()[~finite])
    subnormal = finite & (exact.float().abs() < torch.finfo(torch.float32).tiny)
    step = torch.finfo(torch.float32).smallest_normal * 2.0 ** -23
    assert subnormal.sum() > 10_000
    assert (got[subnormal] - torch.exp(x[subnormal])).abs().max() <= step
    specials = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 88.72283, 88.7229])
    got = compile_fx_inner(prim_graph(torch.exp, [specials]), [specials])(specials)
    assert_same(got, torch.exp(specials))
