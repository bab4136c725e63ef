"""A hypothesis fuzzer: random small programs through make_fx -> decompose -> compile_fx_inner,
against eager PyTorch. Zero mismatches are tolerated; each bug it finds becomes a named
regression test (test_inductor_regressions.py).

Programs are chains of pointwise ops, reductions (with keepdim), broadcasting, views, permutes,
slices, concatenation and dtype conversions over a pool of values that starts with the inputs
(``tinydynamo.testing.programs``, shared with assignments a08 and a09).
The default profile runs 40 derandomized examples (CI); for a longer hunt:

    TINYDYNAMO_FUZZ_EXAMPLES=1000 .venv/bin/python -m pytest tests/inductor/test_inductor_fuzz.py
"""
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inductor_helpers import assert_same, torch_graph
from tinydynamo.inductor import compile_fx_inner
from tinydynamo.testing.programs import (
    BF16_TOL, F32_TOL, F64_TOL, FLOATS, REDUCE, REDUCE_ALL, REDUCE_FLOAT, UNARY_NUMBER, Program,
)

EXAMPLES = int(os.environ.get("TINYDYNAMO_FUZZ_EXAMPLES", "40"))
DTYPES = (torch.float32, torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.bfloat16)
# The ops this fuzzer draws, by name, from tinydynamo.testing.programs.OPS
UNARY_FLOAT = ("exp", "tanh", "sin", "sigmoid", "relu", "gelu", "sqrt_abs", "log1p_abs", "reciprocal",
               "floor", "round")
BINARY = ("add", "mul", "maximum", "minimum", "div", "gt", "eq", "le")


@st.composite
def programs(draw):
    rank = draw(st.integers(1, 3))
    base = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    inputs = []
    for seed in range(draw(st.integers(1, 3))):
        shape = [s if draw(st.booleans()) else 1 for s in base] if seed else list(base)
        inputs.append((tuple(shape), draw(st.sampled_from(DTYPES)), seed))
    program = Program(inputs)
    metas = [torch.empty(shape, dtype=dtype, device="meta") for shape, dtype, _ in inputs]
    for _ in range(draw(st.integers(1, 8))):
        step = None
        for _attempt in range(4):  # some ops do not apply to the value drawn; draw again
            step = step or draw(_step(metas, len(inputs)))
        if step is None:
            continue
        program.add_step(metas, step)
    program.dtypes_inside = {m.dtype for m in metas}
    produced = list(range(len(inputs), len(metas))) or [0]
    extra = draw(st.sampled_from(produced))
    program.outputs = sorted({produced[-1], extra})
    return program


@st.composite
def _step(draw, metas, n_inputs):
    i = draw(st.integers(0, len(metas) - 1))
    x = metas[i]
    kind = draw(st.sampled_from(["unary", "unary", "binary", "binary", "reduce", "view", "view",
                                 "to", "where", "cat", "scalar", "norm", "matmul", "reduce_all"]))
    is_float = x.dtype in FLOATS
    if kind == "unary":
        table = UNARY_FLOAT if is_float else UNARY_NUMBER if x.dtype != torch.bool else ()
        if not table:
            return None
        return draw(st.sampled_from(sorted(table))), [i], {}
    if kind in ("binary", "where"):
        partners = [j for j, m in enumerate(metas) if _broadcasts(x.shape, m.shape)
                    and (m.dtype == torch.bool) == (x.dtype == torch.bool)]
        j = draw(st.sampled_from(partners))
        if kind == "where":
            shape = torch.broadcast_shapes(x.shape, metas[j].shape)
            c = draw(st.sampled_from([k for k, m in enumerate(metas) if m.dtype == torch.bool
                                      and _broadcasts(shape, m.shape)] or [None]))
            return None if c is None else ("where", [c, i, j], {})
        table = BINARY + (("sub",) if x.dtype != torch.bool else ())
        return draw(st.sampled_from(sorted(table))), [i, j], {}
    if kind == "reduce":
        if x.ndim == 0:
            return None
        dim = draw(st.integers(0, x.ndim - 1))
        if i < n_inputs and x.dtype != torch.bool and draw(st.booleans()):
            return "argmax", [i], {"dim": dim}  # on inputs only: computed values may tie differently
        table = {**REDUCE, **(REDUCE_FLOAT if is_float else {})}
        if x.dtype == torch.bool:
            table = {"amax": None, "amin": None}
        return draw(st.sampled_from(sorted(table))), [i], {"dim": dim, "keepdim": draw(st.booleans())}
    if kind == "view":
        return _view_step(draw, x, i)
    if kind == "to":
        targets = [d for d in DTYPES if i < n_inputs or not x.dtype.is_floating_point or d in FLOATS]
        return "to", [i], {"dtype": draw(st.sampled_from(targets))}
    if kind == "cat":
        if x.ndim == 0:
            return None
        dim = draw(st.integers(0, x.ndim - 1))
        partners = [j for j, m in enumerate(metas) if m.dtype == x.dtype and m.ndim == x.ndim
                    and all(m.shape[d] == x.shape[d] for d in range(x.ndim) if d != dim)]
        return "cat", [i, draw(st.sampled_from(partners))], {"dim": dim}
    if kind == "matmul":
        partners = [j for j, m in enumerate(metas) if x.ndim == 2 and m.ndim == 2 and m.dtype == x.dtype
                    and is_float and m.shape[0] == x.shape[1]]
        return ("matmul", [i, draw(st.sampled_from(partners))], {}) if partners else None
    if kind == "reduce_all":
        if x.dtype == torch.bool:
            return None
        return draw(st.sampled_from(sorted(REDUCE_ALL))), [i], {}
    if kind == "scalar":
        value = {torch.bool: True}.get(x.dtype, draw(st.sampled_from([2, -1, 0.5, 3.25])))
        if not is_float and isinstance(value, float):
            value = 2
        return draw(st.sampled_from(["scalar_add", "scalar_mul"])), [i], {"s": value}
    if is_float and x.ndim:
        return "layer_norm", [i], {}
    return None


def _view_step(draw, x, i):
    if x.ndim == 0:
        return None
    kind = draw(st.sampled_from(["permute", "flatten", "unflatten", "slice", "expand",
                                 "transpose_contiguous"]))
    if kind == "permute":
        return "permute", [i], {"dims": draw(st.permutations(range(x.ndim)))}
    if kind == "flatten" and x.ndim >= 2:
        return "flatten", [i], {"start": draw(st.integers(0, x.ndim - 2))}
    if kind == "unflatten":
        dim = draw(st.integers(0, x.ndim - 1))
        size = x.shape[dim]
        factor = draw(st.sampled_from([f for f in range(1, size + 1) if size % f == 0]))
        return "unflatten", [i], {"dim": dim, "sizes": (factor, size // factor)}
    if kind == "slice":
        dim = draw(st.integers(0, x.ndim - 1))
        start = draw(st.integers(0, x.shape[dim] - 1))
        return "slice", [i], {"dim": dim, "start": start, "step": draw(st.integers(1, 2))}
    if kind == "expand" and x.ndim < 4:
        return "expand", [i], {"dim": draw(st.integers(0, x.ndim)), "size": draw(st.integers(1, 3))}
    return "transpose_contiguous", [i], {}


def _broadcasts(a, b):
    try:
        torch.broadcast_shapes(a, b)
        return True
    except RuntimeError:
        return False


def check_program(program):
    inputs = program.make_inputs()
    expected = program(*inputs)
    compiled = compile_fx_inner(torch_graph(program, inputs), inputs)
    actual = compiled(*inputs)
    for k, (a, e) in enumerate(zip(actual, expected)):
        tolerance = {}
        if torch.bfloat16 in program.dtypes_inside:
            tolerance = BF16_TOL
        elif e.dtype.is_floating_point:
            tolerance = F32_TOL if torch.float32 in program.dtypes_inside else F64_TOL
        assert_same(a, e, msg=f"output {k} of\n{program}", **tolerance)


@pytest.mark.filterwarnings(r"ignore:var\(\)")  # var over a dim of size 1 is nan, in both
@settings(max_examples=EXAMPLES, deadline=None, derandomize="TINYDYNAMO_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(programs())
def test_random_programs_match_eager(program):
    check_program(program)
