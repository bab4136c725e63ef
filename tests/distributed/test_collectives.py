"""Collectives inside compiled functions (chapter 14): captured as functional collectives, equal
to eager on every rank, issued early and waited for late by the inductor Scheduler.

Each test launches its ranks once and checks many cases inside them; a rank returns the list
of what failed, so one launch reports every failure.
"""
import contextlib
import io
import warnings

import torch
import torch.distributed as dist

import tinydynamo
from tinydynamo import prims
from tinydynamo.collectives import WAIT, c10d
from tinydynamo.inductor.compile_fx import generate_code
from tinydynamo.prims.prim_tracer import PrimTracer
from tinydynamo.testing.distributed import run_ranks

BACKENDS = ("eager", "aot_eager", "decomp_eager", "inductor")
STEPS = 3


def all_reduce_sum(x):
    t = x * 2
    dist.all_reduce(t)
    return t + 1


def all_reduce_max(x):
    t = x.sin()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t


def all_reduce_input(x):  # mutates the caller's tensor, as eager does
    dist.all_reduce(x)
    return x * 3


def all_gather(x):
    out = torch.empty(x.shape[0] * dist.get_world_size(), *x.shape[1:])
    dist.all_gather_into_tensor(out, x + 1)
    return out.cos()


def reduce_scatter(x):
    out = torch.empty(x.shape[0] // dist.get_world_size(), *x.shape[1:])
    dist.reduce_scatter_tensor(out, x * x)
    return out - 1


def broadcast(x):
    t = x + 0.5
    dist.broadcast(t, 1)
    return t, x.exp()


def several(x, w):
    a = x.relu()
    dist.all_reduce(a)
    b = torch.empty(x.shape[0] * dist.get_world_size(), x.shape[1])
    dist.all_gather_into_tensor(b, x)
    y = torch.tanh(x) @ w  # independent of both collectives
    return a + y, b.sum(0)


def on_group(x, group):
    t = x * 4
    dist.all_reduce(t, group=group)
    return t


def _data(rank, step, shape=(4, 3)):
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape) * (rank + 1) + step


def _check_program(fn, make_args, backend, name):
    """Run ``fn`` compiled with ``backend`` for STEPS steps against eager; return the failures."""
    failures = []
    tinydynamo.reset()
    before = tinydynamo.stats()["frames_compiled"]
    compiled = tinydynamo.compile(fn, backend=backend)
    for step in range(STEPS):
        eager_args, compiled_args = make_args(step), make_args(step)
        expected, actual = fn(*eager_args), compiled(*compiled_args)
        pairs = list(zip(torch.utils._pytree.tree_leaves((expected, eager_args)),
                         torch.utils._pytree.tree_leaves((actual, compiled_args))))
        if not all(not isinstance(e, torch.Tensor) or torch.allclose(e, a) for e, a in pairs):
            failures.append(f"{name}/{backend} step {step}: differs from eager")
    compiles = tinydynamo.stats()["frames_compiled"] - before
    if compiles != 1:
        failures.append(f"{name}/{backend}: compiled {compiles} times")
    return failures


def check_against_eager(rank, world_size):
    warnings.simplefilter("ignore", FutureWarning)  # all_gather_into_tensor's new name
    tinydynamo.config.strict = True
    group = dist.new_group(list(range(world_size)))
    programs = {
        "all_reduce_sum": (all_reduce_sum, lambda step: [_data(rank, step)]),
        "all_reduce_max": (all_reduce_max, lambda step: [_data(rank, step)]),
        "all_reduce_input": (all_reduce_input, lambda step: [_data(rank, step)]),
        "all_gather": (all_gather, lambda step: [_data(rank, step)]),
        "reduce_scatter": (reduce_scatter, lambda step: [_data(rank, step)]),
        "broadcast": (broadcast, lambda step: [_data(rank, step)]),
        "several": (several, lambda step: [_data(rank, step), torch.eye(3) + step]),
        "on_group": (on_group, lambda step: [_data(rank, step), group]),
    }
    failures = []
    for backend in BACKENDS:
        for name, (fn, make_args) in programs.items():
            failures += _check_program(fn, make_args, backend, name)
    return failures


def test_collectives_match_eager_on_every_rank_over_several_steps():
    assert run_ranks(check_against_eager, 2, timeout=240) == [[], []]


def issued_then_waited(x, w):
    t = x * 2
    dist.all_reduce(t)
    y = torch.sin(x) @ w  # independent compute, which can run while the all_reduce is in flight
    return t + y


def async_all_reduce(x):
    work = dist.all_reduce(x, async_op=True)
    work.wait()
    return x + 1


def all_reduce_of_grad(x):
    t = x * 2
    dist.all_reduce(t)
    return t


def all_reduce_band(x):
    dist.all_reduce(x, op=dist.ReduceOp.BAND)
    return x


def functional_all_reduce(x, group_name):  # torch's functional collective, called directly
    issued = c10d.all_reduce(x * 2, "sum", group_name)
    return WAIT(issued)


def _check_functional_collective_gradient(rank):
    """torch gives the functional all_reduce a backward (an all_reduce of the gradient): the
    joint graph traces it, and the gradients equal eager's."""
    failures = []
    for backend in ("aot_eager", "inductor"):
        x1, x2 = _data(rank, 0).requires_grad_(), _data(rank, 0).requires_grad_()
        name = dist.group.WORLD.group_name
        tinydynamo.compile(functional_all_reduce, backend=backend)(x1, name).sum().backward()
        functional_all_reduce(x2, name).sum().backward()
        if not torch.equal(x1.grad, x2.grad):
            failures.append(f"functional_all_reduce/{backend}: gradient differs from eager")
    return failures


def check_schedule_logs_and_breaks(rank, world_size):
    tinydynamo.config.strict = True
    failures = []
    logs = io.StringIO()
    tinydynamo.set_logs("graph,ir,schedule,kernels")
    try:
        with contextlib.redirect_stderr(logs):
            x, w = _data(rank, 0), torch.eye(3)
            if not torch.allclose(tinydynamo.compile(issued_then_waited)(x, w), issued_then_waited(x, w)):
                failures.append("issued_then_waited differs from eager")
    finally:
        tinydynamo.set_logs("")
    failures += _check_log(logs.getvalue())
    x = _data(rank, 0)
    for fn, arg, reason in [(async_all_reduce, x, "async_op=True"), (all_reduce_band, x.long(), "op=RedOpType.BAND"),
                            (all_reduce_of_grad, x.requires_grad_(), "requires grad")]:
        explanation = tinydynamo.explain(fn)(arg)
        if not any(reason in str(r) for r in explanation.break_reasons):
            failures.append(f"{fn.__name__}: no graph break naming {reason!r}: {explanation.break_reasons}")
    return failures + _check_functional_collective_gradient(rank)


def _check_log(text):
    """The graph, the IR and the schedule show the collective and its wait; the wrapper issues
    it, then runs the matmul, then waits."""
    failures = [f"{what} not in the logs" for what in
                ("_c10d_functional.all_reduce.default", "_c10d_functional.wait_tensor.default",
                 "CollectiveKernel", "WaitKernel") if what not in text]
    schedule = text.split("[tinydynamo:schedule]")[1].split("[tinydynamo:")[0]
    steps = [line for line in schedule.splitlines() if line.strip().startswith("[")]
    kinds = ["issue" if "(issue" in s else "wait" if "(wait" in s else "mm" if "extern mm" in s else "kernel"
             for s in steps]
    if kinds != ["kernel", "issue", "mm", "wait", "kernel"]:
        failures.append(f"scheduled {kinds}: the matmul is not between the issue and the wait")
    wrapper = text.split("def call(args):")[1]
    order = [wrapper.index(s) for s in ("all_reduce.default", "# mm", "wait_tensor.default")]
    if order != sorted(order):
        failures.append(f"the wrapper does not issue, multiply, then wait:\n{wrapper}")
    return failures


def test_collective_is_issued_early_waited_late_logged_and_breaks_explained():
    assert run_ranks(check_schedule_logs_and_breaks, 2, timeout=180) == [[], []]


def test_a_collectives_inputs_stay_in_memory_until_its_wait():
    """The workspace space of a collective's input is not reused by a buffer computed while the
    collective is in flight (gloo may still be reading it). No process group is needed: the
    graph is only scheduled."""
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    tracer = PrimTracer()
    with tracer:
        px, pw = tracer.placeholder("x", x), tracer.placeholder("w", w)
        t = prims.mul(px, 2.0)
        issued = tracer.record_extern(c10d.all_reduce.default, (t, "sum", "0"), {}, traced=t)
        waited = tracer.record_extern(WAIT, (issued,), {}, traced=t)
        y = prims.mm(prims.sin(px), pw)
        y2 = prims.mm(prims.cos(y), pw)
        tracer.output((prims.add(waited, y2),))
    _, scheduler, _ = generate_code(torch.fx.GraphModule({}, tracer.graph), [x, w])
    kinds = [k.describe() for k in scheduler.kernels]
    issue = next(i for i, k in enumerate(kinds) if "(issue" in k)
    wait = next(i for i, k in enumerate(kinds) if "(wait" in k)
    assert issue < wait - 2, kinds  # both matmuls (and the cos) between them
    collective = scheduler.kernels[issue].kernel
    its_input = collective.args[0].name
    in_flight = [n for k in scheduler.kernels[issue + 1:wait] for n in k.output_names()]
    offsets = scheduler.workspace_offsets
    assert its_input in offsets
    assert all(offsets.get(n) != offsets[its_input] for n in in_flight), (offsets, in_flight)


def loss_with_reduced_statistics(x, w):
    s = x.sum(0)
    dist.all_reduce(s)  # on a tensor that needs no grad: the joint graph holds it in the forward
    return (torch.tanh(x @ w) * s).sum()


def _check_training(rank):
    failures = []
    for backend in ("aot_eager", "inductor"):
        tinydynamo.reset()
        compiled = tinydynamo.compile(loss_with_reduced_statistics, backend=backend)
        for step in range(STEPS):
            x, w = _data(rank, step) / 10, torch.eye(3) + step
            w1, w2 = w.clone().requires_grad_(), w.clone().requires_grad_()
            compiled(x, w1).backward()
            loss_with_reduced_statistics(x, w2).backward()
            if not torch.allclose(w1.grad, w2.grad, atol=1e-5):
                failures.append(f"training/{backend} step {step}: gradients differ from eager")
    return failures


def _check_group_guard(rank, world_size):
    group = dist.new_group(list(range(world_size)))
    tinydynamo.reset()
    before = tinydynamo.stats()["frames_compiled"]
    compiled = tinydynamo.compile(on_group, backend="eager")
    failures = []
    for g in (group, group, dist.group.WORLD):  # another group: the graph names the first one's
        if not torch.equal(compiled(_data(rank, 0), g), on_group(_data(rank, 0), g)):
            failures.append("on_group differs from eager")
    if tinydynamo.stats()["frames_compiled"] - before != 2:
        failures.append("a graph compiled for one process group ran with another")
    return failures


def _check_compiling_does_not_communicate(rank, world_size):
    """Rank 0 compiles (AOT traces the program on real tensors), rank 1 runs eagerly: both must
    issue the same collectives, or they would pair up wrongly."""
    failures = []
    for backend in ("aot_eager", "inductor"):
        tinydynamo.reset()
        fn = tinydynamo.compile(all_reduce_sum, backend=backend) if rank == 0 else all_reduce_sum
        for step in range(STEPS):
            expected = sum(_data(r, step) for r in range(world_size)) * 2 + 1
            if not torch.equal(fn(_data(rank, step)), expected):
                failures.append(f"{backend} step {step}: a compiling rank and an eager one disagree")
    return failures


def check_training_guards_and_compile_time(rank, world_size):
    tinydynamo.config.strict = True
    return (_check_training(rank) + _check_group_guard(rank, world_size)
            + _check_compiling_does_not_communicate(rank, world_size))


def test_training_group_guards_and_no_communication_while_compiling():
    assert run_ranks(check_training_guards_and_compile_time, 2, timeout=180) == [[], []]
