"""decompose() as a graph transformation: errors, metadata, logging, constants, externs."""
import itertools

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import tinydynamo
from tinydynamo import config
from prims_helpers import assert_prims_only, assert_same, make_tensor as T, one_op_graph
from tinydynamo.prims import EXTERN_FALLBACKS, DecompositionError, decomp_eager, decompose, decomposition_table
from tinydynamo.prims.refs import result_type

aten = torch.ops.aten


def _graph_of(fn, *inputs):
    return make_fx(fn)(*inputs), list(inputs)


def test_unsupported_ops_are_all_listed_with_their_nodes():
    def fn(x):
        return torch.cumsum(x, 0), torch.sort(x).values, torch.exp(x)

    gm, inputs = _graph_of(fn, T(5))
    cumsum = next(n for n in gm.graph.nodes if n.target is aten.cumsum.default)
    cumsum.meta["stack_trace"] = '  File "model.py", line 7, in forward\n    return torch.cumsum(x, 0)\n'
    with config.patch(implicit_fallbacks=False), pytest.raises(DecompositionError) as error:
        decompose(gm, inputs)
    message = str(error.value)
    assert 'from File "model.py", line 7, in forward' in message
    assert "cumsum: aten.cumsum.default has no decomposition" in message
    assert "sort: aten.sort.default has no decomposition" in message
    assert message.count("has no decomposition") == 2  # exp decomposes


def test_ops_without_a_decomposition_become_implicit_extern_fallbacks(capsys):
    def fn(x):
        return torch.cumsum(x, 0), torch.sort(x).values, torch.exp(x)

    gm, inputs = _graph_of(fn, T(5))
    before = tinydynamo.stats()["implicit_fallbacks"]
    tinydynamo.set_logs("prims")
    try:
        prim_gm = decompose(gm, inputs)
    finally:
        tinydynamo.set_logs("")
    assert tinydynamo.stats()["implicit_fallbacks"] == before + 2
    log = capsys.readouterr().err
    assert "implicit fallback: aten.cumsum.default has no decomposition" in log
    assert "implicit fallback: aten.sort.default has no decomposition" in log
    aten_ops = {n.target for n in prim_gm.graph.nodes if isinstance(n.target, torch._ops.OpOverload)}
    assert aten_ops == {aten.cumsum.default, aten.sort.default}  # exp still became prims
    assert_same(prim_gm(*inputs), fn(*inputs))


def test_a_view_op_without_a_decomposition_falls_back_as_its_copy_variant():
    gm, inputs = one_op_graph(aten.view.dtype, (T(4), torch.int32), {})  # a bitcast view
    prim_gm = decompose(gm, inputs)
    assert {n.target for n in prim_gm.graph.nodes if isinstance(n.target, torch._ops.OpOverload)} == {
        aten.view_copy.dtype}
    assert_same(prim_gm(*inputs), inputs[0].view(torch.int32))
    with config.patch(implicit_fallbacks=False), pytest.raises(DecompositionError, match="has no decomposition"):
        decompose(gm, inputs)


def test_ops_on_complex_tensors_are_externs_and_views_their_copy_variants():
    """The prims have no complex dtypes: LLaMA's rotary embedding runs its complex ops as aten
    kernels, a view (view_as_complex, a slice of the complex frequencies) as its copy variant."""
    def rotary(x, freqs):
        pairs = torch.view_as_complex(x.reshape(2, 3, 2))
        return torch.view_as_real(pairs * freqs[1:4]).flatten(1) * 2

    inputs = [T(2, 6), torch.polar(torch.ones(5), T(5))]
    prim_gm = decompose(make_fx(rotary)(*inputs), inputs)
    externs = {n.target for n in prim_gm.graph.nodes if isinstance(n.target, torch._ops.OpOverload)}
    assert externs == {aten.view_as_complex_copy.default, aten.slice_copy.Tensor, aten.mul.Tensor,
                       aten.view_as_real_copy.default}
    assert_same(prim_gm(*inputs), rotary(*inputs))


def test_a_fallback_needs_a_meta_kernel():
    library = torch.library.Library("tinydynamo_test_prims", "FRAGMENT")  # noqa: TOR901
    library.define("no_meta(Tensor x) -> Tensor")
    library.impl("no_meta", lambda x: x * 2, "CPU")
    op = torch.ops.tinydynamo_test_prims.no_meta.default
    gm, inputs = one_op_graph(op, (T(3),), {})
    with pytest.raises(DecompositionError, match="no_meta.default has no decomposition, and no meta kernel"):
        decompose(gm, inputs)


def test_as_strided_scatter_declines_a_view_that_writes_an_element_twice():
    gm, inputs = one_op_graph(aten.as_strided_scatter.default, (T(6), T(2, 2), [2, 2], [0, 1], 0), {})
    with config.patch(implicit_fallbacks=False), pytest.raises(DecompositionError, match="writes some elements twice"):
        decompose(gm, inputs)
    prim_gm = decompose(gm, inputs)  # aten's own kernel decides: it refuses, as in eager
    assert [n.target for n in prim_gm.graph.nodes if n.op == "call_function"] == [aten.as_strided_scatter.default]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        prim_gm(*inputs)


def test_as_strided_of_a_non_contiguous_tensor_is_refused():
    gm, inputs = one_op_graph(aten.as_strided.default, (T(4, 3, noncontiguous=True), [3], [1], 0), {})
    with pytest.raises(DecompositionError, match="as_strided of a non-contiguous tensor"):
        decompose(gm, inputs)


def test_in_place_ops_are_refused():
    def fn(x):
        return (x.clone().add_(1),)

    gm, inputs = _graph_of(fn, T(3))
    with pytest.raises(DecompositionError, match="add_.Tensor mutates its inputs"):
        decompose(gm, inputs)


def test_batch_norm_running_stat_update_is_refused():
    x, stats = T(4, 3, 2, 2), T(3)
    gm, inputs = one_op_graph(aten.native_batch_norm.default, (x, None, None, stats, stats.abs(), True, 0.1, 1e-5), {})
    with pytest.raises(DecompositionError, match="_native_batch_norm_legit_functional"):
        decompose(gm, inputs)


def test_declined_arguments_are_named_and_fall_back(capsys):
    gm, inputs = one_op_graph(aten.index.Tensor, (T(3, 4), [torch.tensor([0, 1]), torch.tensor([1, 2])]), {})
    with config.patch(implicit_fallbacks=False), pytest.raises(DecompositionError, match="2 index tensors"):
        decompose(gm, inputs)
    tinydynamo.set_logs("prims")
    try:
        prim_gm = decompose(gm, inputs)
    finally:
        tinydynamo.set_logs("")
    assert "implicit fallback: aten.index.Tensor declined these arguments (aten.index with 2" in capsys.readouterr().err
    # the prims the decomposition recorded before it declined are gone
    assert [n.target for n in prim_gm.graph.nodes if n.op == "call_function"] == [aten.index.Tensor]
    assert_same(prim_gm(*inputs), gm(*inputs))


def test_real_tensor_constants_inside_decompositions_are_refused(monkeypatch):
    monkeypatch.setitem(decomposition_table, aten.exp.default, lambda a: a + torch.ones(3))
    gm, inputs = one_op_graph(aten.exp.default, (T(3),), {})
    with pytest.raises(DecompositionError, match="real tensor"):
        decompose(gm, inputs)


def test_every_node_has_meta_and_provenance():
    def fn(x, w):
        return (F.layer_norm(x @ w, [4]).relu().sum(),)

    gm, inputs = _graph_of(fn, T(3, 5), T(5, 4))
    prim_gm = decompose(gm, inputs)
    assert_prims_only(prim_gm)
    for node in prim_gm.graph.nodes:
        if node.op == "call_function":
            assert node.meta["original_aten"] in decomposition_table
            assert node.meta["aten_node"] in {n.name for n in gm.graph.nodes}
    output_meta = prim_gm.graph.output_node().meta["val"]
    assert output_meta[0].shape == () and output_meta[0].device.type == "meta"


def test_graph_constants_are_kept():
    constant = torch.tensor([1.0, 2.0, 3.0])

    def fn(x):
        return (x * constant,)

    gm, inputs = _graph_of(fn, T(3))
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    prim_gm = decompose(gm, inputs)
    assert_same(prim_gm(*inputs), fn(*inputs))


def test_decomposing_a_prim_graph_again_changes_nothing():
    def fn(x):
        return (F.gelu(x).softmax(-1),)

    gm, inputs = _graph_of(fn, T(3, 4))
    once = decompose(gm, inputs)
    twice = decompose(once, inputs)
    assert [n.target for n in once.graph.nodes] == [n.target for n in twice.graph.nodes]
    assert_same(twice(*inputs), fn(*inputs))


def test_fused_attention_stays_an_extern_fallback():
    q, k, v = (T(2, 2, 8, 4).requires_grad_() for _ in range(3))

    def fn(q, k, v):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return (out, *torch.autograd.grad(out.sum(), (q, k, v)))

    gm, inputs = _graph_of(fn, q, k, v)
    prim_gm = decompose(gm, inputs)
    externs = [n.target for n in prim_gm.graph.nodes if n.target in EXTERN_FALLBACKS]
    assert len(externs) == 2
    with torch.no_grad():
        assert_same(prim_gm(*inputs), gm(*inputs), atol=1e-5, rtol=1e-4)


def test_decomp_eager_backend_and_prims_log(capsys):
    def fn(x):
        return (torch.tanh(x) * 2,)

    gm, inputs = _graph_of(fn, T(4))
    tinydynamo.set_logs("prims")
    try:
        compiled = decomp_eager(gm, inputs)
    finally:
        tinydynamo.set_logs("")
    log = capsys.readouterr().err
    assert "[tinydynamo:prims]" in log and "tinydynamo_prims_tanh" in log
    assert_same(compiled(*inputs), fn(*inputs))


_PROMOTION_CASES = [T(3), T(3, dtype=torch.float64), T(3, dtype=torch.bfloat16), T(3, dtype=torch.int32),
                    T(3, dtype=torch.int64), T(3, dtype=torch.bool), T(dtype=torch.float64), T(dtype=torch.int64),
                    T(dtype=torch.float16), 2, 2.5, True]


@pytest.mark.parametrize("a, b", [(a, b) for a, b in itertools.product(_PROMOTION_CASES, repeat=2)
                                  if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor)])
def test_result_type_agrees_with_torch(a, b):
    assert result_type(a, b) == torch.result_type(a, b)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_low_precision_matmul_with_a_bias_stays_atens_kernel(dtype):
    """addmm and baddbmm in bfloat16 or float16 are extern calls: aten's kernel rounds once, and is
    much faster than the same product computed in float32."""
    def fn(bias, a, b, bias3, a3, b3):
        return torch.addmm(bias, a, b), torch.baddbmm(bias3, a3, b3)

    inputs = [T(6, dtype=dtype), T(4, 5, dtype=dtype), T(5, 6, dtype=dtype),
              T(2, 4, 6, dtype=dtype), T(2, 4, 5, dtype=dtype), T(2, 5, 6, dtype=dtype)]
    gm, inputs = _graph_of(fn, *inputs)
    prim_gm = decompose(gm, inputs)
    aten_ops = {n.target for n in prim_gm.graph.nodes if isinstance(n.target, torch._ops.OpOverload)}
    assert aten_ops == {aten.addmm.default, aten.baddbmm.default}
    for got, expected in zip(prim_gm(*inputs), fn(*inputs)):
        assert torch.equal(got, expected)


def test_a_bfloat16_linear_compiles_to_atens_addmm_and_matches_eager_exactly():
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 32).to(torch.bfloat16)
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    with torch.no_grad():
        assert torch.equal(tinydynamo.compile(model)(x), model(x))


def test_complex_tensors_are_an_error_without_implicit_fallbacks():
    inputs = [torch.polar(torch.ones(3), T(3))]
    gm = make_fx(lambda c: torch.view_as_real(c * c))(*inputs)
    with config.patch(implicit_fallbacks=False):
        with pytest.raises(DecompositionError, match="works on complex tensors, which no prim takes"):
            decompose(gm, inputs)
