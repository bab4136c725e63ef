"""The scheduler: what fuses, what must not, dead buffers, local buffers and buffer reuse."""
import re

import pytest
import torch
import torch.nn.functional as F

from inductor_helpers import check_prims, check_torch, generated, prim_graph, torch_graph
from tinydynamo import prims, set_logs
from tinydynamo.inductor.scheduler import ExternKernelSchedulerNode, FusedSchedulerNode


def kernels_of(fn, inputs, graph=torch_graph):
    scheduler, module = generated(graph(fn, inputs), inputs)
    return scheduler, module.kernel_count


def test_a_pointwise_chain_is_one_kernel_with_no_intermediate_buffers():
    x = torch.randn(64, 32)
    scheduler, count = kernels_of(lambda x: torch.sigmoid(torch.tanh(x) * 2 + 1).relu(), [x])
    assert count == 1
    assert scheduler.workspace_size == 0
    check_torch(lambda x: torch.sigmoid(torch.tanh(x) * 2 + 1).relu(), [x])


def test_softmax_over_rows_is_one_kernel_with_row_local_statistics():
    x = torch.randn(16, 128)
    scheduler, count = kernels_of(lambda x: torch.softmax(x, -1), [x])
    assert count <= 2
    (kernel,) = scheduler.kernels
    # row max, exp(x - max) (computed once, read by the sum and the output) and row sum
    assert kernel.outer == (16,) and len(kernel.local_buffers) == 3
    check_torch(lambda x: torch.softmax(x, -1), [x])


def test_softmax_multiplies_each_row_by_one_reciprocal_of_its_sum():
    """The row's last pass is a multiplication by 1 / sum, computed once per row (as aten's CPU
    kernel does): a vector division costs several multiplications."""
    x = torch.randn(16, 128)
    _, module = generated(torch_graph(lambda x: torch.softmax(x, -1), [x]), [x])
    last_pass = module.kernels_source.split("for (int64_t x1")[-1]
    assert "1.0f / buf" in last_pass and " * " in last_pass


def test_softmax_computes_exponentials_and_their_sum_in_one_pass():
    """exp(x - max) and its sum share one loop over the row (a loop group): the sum reads each
    exponential in the iteration that stores it."""
    x = torch.randn(16, 128)
    _, module = generated(torch_graph(lambda x: torch.softmax(x, -1), [x]), [x])
    loops = module.kernels_source.split("for (int64_t ")[1:]
    assert len(loops) == 4  # the rows; the max; exp and sum together; the output
    assert "expf(" in loops[2] and "acc" in loops[2]


def _rotated_sum(x):
    y = (x - x.amax(-1, keepdim=True)).exp()  # read by the sum at the next column too: no loop sharing
    return y, (y * torch.cat([y[:, 1:], y[:, :1]], -1)).sum(-1)


def _sum_then_scale(x):
    s = x.sum(-1, keepdim=True)
    return x * 2, (x * 2).amax(-1), x / s  # the scale reads a reduction: a loop of its own


@pytest.mark.parametrize("fn", [_rotated_sum, _sum_then_scale], ids=["rotated", "after_reduction"])
def test_bodies_share_a_loop_only_when_each_reads_values_of_its_own_iteration(fn):
    x = torch.rand(8, 33, generator=torch.Generator().manual_seed(0)) + 0.5
    x[3, 5] = float("nan")  # max's nan flag inside a shared loop
    check_torch(fn, [x])


def _masked_rows(x):
    x = x.clone()
    x[0] = float("-inf")  # fully masked: nan, as eager
    x[1, ::2] = float("-inf")  # half masked
    x[2, 1:] = -95.0  # exp(x - max) in float's subnormal range
    return x


SOFTMAX_CASES = {
    "odd_sizes": (lambda: torch.randn(5, 1023), -1),
    "masked_rows": (lambda: _masked_rows(torch.randn(6, 37)), -1),
    "not_the_last_dim": (lambda: torch.randn(7, 33, 5), 1),
    "not_contiguous": (lambda: torch.randn(40, 24).t(), -1),
    "float64": (lambda: _masked_rows(torch.randn(6, 37, dtype=torch.float64)), -1),
    "bfloat16": (lambda: torch.randn(9, 70).to(torch.bfloat16), -1),
}


@pytest.mark.parametrize("case", sorted(SOFTMAX_CASES))
@pytest.mark.parametrize("op", [torch.softmax, torch.log_softmax])
def test_softmax_edge_cases_match_eager(case, op):
    make, dim = SOFTMAX_CASES[case]
    check_torch(lambda x: op(x, dim), [make()])


def test_layer_norm_is_one_kernel():
    x, w, b = torch.randn(8, 4, 96), torch.randn(96), torch.randn(96)
    fn = lambda x, w, b: F.layer_norm(x, (96,), w, b)  # noqa: E731
    scheduler, count = kernels_of(fn, [x, w, b])
    assert count == 1 and scheduler.kernels[0].outer == (8, 4)
    check_torch(fn, [x, w, b], atol=1e-5, rtol=1e-5)


def test_a_costly_value_read_by_several_reductions_is_computed_once_in_a_row_buffer():
    x, bias, r, w, b = (torch.randn(32, 48), torch.randn(48), torch.randn(32, 48), torch.randn(48),
                        torch.randn(48))

    def fn(x, bias, r, w, b):
        return F.layer_norm(F.gelu(x + bias, approximate="tanh") + r, (48,), w, b)

    scheduler, count = kernels_of(fn, [x, bias, r, w, b])
    assert count == 1
    local = scheduler.kernels[0].local_buffers
    assert 48 in local.values()  # the gelu+residual row, computed once, kept per thread
    check_torch(fn, [x, bias, r, w, b], atol=1e-5, rtol=1e-5)


def _local_arrays(fn, inputs):
    """The local rows a kernel declares on the stack (``float buf1[128];``)."""
    _, module = generated(torch_graph(fn, inputs), inputs)
    return re.findall(r"(?:float|double) (buf\d+)\[", module.kernels_source)


def _two_outputs(x):
    """Two outputs read the exponentials: the row lives in the second, which the first reads."""
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True), e * 2


@pytest.mark.parametrize("fn", [
    lambda x: torch.softmax(x, -1),
    lambda x: torch.softmax(x.double(), -1),
    lambda x: F.layer_norm(F.gelu(x, approximate="tanh") + 1, (128,)),
    _two_outputs,
    lambda x: torch.roll(torch.softmax(x, -1), 3, -1),
], ids=["softmax", "softmax_double", "gelu_layer_norm", "two_outputs", "roll"])
def test_a_local_row_lives_in_the_row_of_the_output_that_reads_it_last(fn):
    """exp(x - max) is stored into the output's row and scaled there in place (as ATen does): the
    output's cache misses come in the exp pass, behind its arithmetic, not in a pass of stores."""
    x = torch.randn(16, 128)
    assert _local_arrays(fn, [x]) == []
    check_torch(fn, [x], atol=1e-5, rtol=1e-5)


def _read_after_the_output(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    y = e / e.sum(-1, keepdim=True)
    return y, (e * y).sum(-1)


@pytest.mark.parametrize("fn", [
    _read_after_the_output,  # the row is read again after the output is written
    lambda x: torch.softmax(x, -1).to(torch.bfloat16),  # the output is narrower than the row
], ids=["read_after", "bfloat16"])
def test_a_local_row_stays_on_the_stack_when_the_output_cannot_hold_it(fn):
    x = torch.randn(16, 128)
    assert len(_local_arrays(fn, [x])) == 1
    check_torch(fn, [x], atol=1e-5, rtol=8e-3)  # bfloat16's rounding: one of its ulps


@pytest.mark.parametrize("shape, dim", [((4, 6, 32), -1), ((4, 6, 32), 1), ((3, 40), 0), ((2, 3, 4, 33), -1)])
def test_softmax_with_its_row_in_the_output_matches_eager_over_any_dim(shape, dim):
    x = torch.randn(shape) * 4
    check_torch(lambda x: torch.softmax(x, dim), [x], atol=1e-6, rtol=1e-5)
    check_torch(lambda x: torch.log_softmax(x, dim), [x], atol=1e-5, rtol=1e-5)


def test_a_column_reduction_is_not_fused_with_its_row_wise_consumer():
    """out[i, j] = x[i, j] * colsum[j] needs every row of x summed first: two kernels."""
    x = torch.randn(24, 24)
    fn = lambda x: x * x.sum(0, keepdim=True)  # noqa: E731
    scheduler, count = kernels_of(fn, [x])
    assert count == 2
    check_torch(fn, [x], atol=1e-5, rtol=1e-5)


def test_a_transposed_read_of_a_buffer_is_not_fused_with_its_producer():
    def fn(x):
        rowmax = prims.amax(x, [1])
        y = prims.sub(x, prims.broadcast_in_dim(rowmax, [16, 16], [0]))  # y is realized: an output
        return y, prims.add(y, prims.permute(y, [1, 0]))

    x = torch.randn(16, 16)
    scheduler, count = kernels_of(fn, [x], graph=prim_graph)
    assert count == 2
    check_prims(fn, [x])


def test_dead_buffers_are_removed():
    def fn(x):
        prims.amax(x, [1])  # realized (a reduction) but read by nobody
        return prims.exp(x)

    x = torch.randn(8, 8)
    scheduler, count = kernels_of(fn, [x], graph=prim_graph)
    assert count == 1 and [n.name for n in scheduler.nodes] == ["buf1"]
    check_prims(fn, [x])


def test_freed_workspace_buffers_are_reused():
    def fn(x, w):
        a = prims.mm(prims.exp(x), w)  # exp(x) lives in the workspace until the mm has read it
        b = prims.mm(prims.tanh(a), w)  # tanh(a) can take its place, and b the place of a
        return prims.add(b, 1.0)

    x, w = torch.randn(32, 32), torch.randn(32, 32)
    scheduler, count = kernels_of(fn, [x, w], graph=prim_graph)
    assert count == 3
    assert sum(isinstance(k, ExternKernelSchedulerNode) for k in scheduler.kernels) == 2
    # exp(x) and tanh(a) at 0; the two mm results (written with out=) after them
    assert scheduler.workspace_offsets == {"buf0": 0, "buf1": 4096, "buf2": 0, "buf3": 4096}
    assert scheduler.workspace_size == 2 * 32 * 32 * 4
    check_prims(fn, [x, w], atol=1e-4, rtol=1e-4)


def test_matmul_results_are_written_into_the_workspace():
    """mm and bmm write into workspace memory (``out=``): no allocation per call, whose pages
    the GEMM would fault in; the output of the graph is still a tensor of its own."""
    def fn(x, w, q, k):
        return prims.mm(prims.tanh(prims.mm(x, w)), w), prims.exp(prims.bmm(q, k))

    inputs = [torch.randn(8, 16), torch.randn(16, 16), torch.randn(2, 4, 8), torch.randn(2, 8, 4)]
    gm = prim_graph(fn, inputs)
    scheduler, _ = generated(gm, inputs)
    externs = [k.name for k in scheduler.kernels if isinstance(k, ExternKernelSchedulerNode)]
    assert len(externs) == 3
    outputs = set(scheduler.graph.output_names())
    assert all((name in scheduler.workspace_offsets) != (name in outputs) for name in externs)
    check_prims(fn, inputs, atol=1e-5, rtol=1e-5)


def test_independent_reductions_of_the_same_input_share_a_kernel():
    x = torch.randn(16, 40)
    fn = lambda x: (x.amax(1), x.sum(1), x.amin(1))  # noqa: E731
    scheduler, count = kernels_of(fn, [x])
    assert count == 1 and isinstance(scheduler.kernels[0], FusedSchedulerNode)
    check_torch(fn, [x], atol=1e-5, rtol=1e-5)


def test_schedule_log_explains_fusion_decisions(capsys):
    set_logs("schedule")
    try:
        kernels_of(lambda x: x * x.sum(0, keepdim=True), [torch.randn(8, 8)])
    finally:
        set_logs("")
    err = capsys.readouterr().err
    assert "[tinydynamo:schedule]" in err and "not fusing" in err and "outside the outer iteration" in err
