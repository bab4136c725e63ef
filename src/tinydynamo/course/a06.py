"""Assignment a06 (chapter 6, "AOT autograd"): partitioners, graded inside aot_autograd.

The learner writes ``default_partition(joint_gm, num_fwd_outputs)`` and a min-cut
rematerialization partitioner with the same signature. The checkers plug the learner's
function into the reference ``tinydynamo.aot.aot_autograd`` as its ``partition_fn`` and train
zoo models through ``torch.compile(model, backend=..., dynamic=False)``: PyTorch's Dynamo
captures, tinydynamo's AOT autograd compiles. They compare every loss, gradient and buffer with
eager PyTorch, check that the two graphs are laid out as the runtime expects, and measure what
the forward saves for the backward against the reference partitioners on the same joint graph.
Small hand-built joint graphs (``tinydynamo.testing.joint_graphs``) cover the rules that no zoo
model exercises: constants, a gradient that depends on no tangent, a small view of a large
tensor, a matmul and an input that only the backward uses, an op that reads its inputs from a
list, and a bool mask of a float input.

The helpers a learner uses (``is_primal``, ``nbytes``, ``may_recompute``, ``split_joint_graph``,
...) are the reference partitioners' own, imported from ``tinydynamo.aot.partitioners``.

While a learner's partitioner runs, tinydynamo's own partitioners are out of reach
(``checking.no_delegation``), and a checker handed one of them refuses it. Each checker returns
a list of human-readable failures; ``report`` (``checking.report``) turns them into one
AssertionError for a notebook test.
"""
import copy
import inspect
import math

import torch
import torch.fx as fx
import torch.nn.functional as F

from ..aot import aot_autograd, nop, partitioners, saved_bytes
from ..aot.partitioners import (  # noqa: F401 (helpers for learners)
    is_primal, is_tangent, is_view, joint_outputs, may_recompute, nbytes, split_joint_graph,
)
from ..testing.joint_graphs import JOINT_GRAPHS
from ..testing.models import ZOO, make
from .checking import (  # noqa: F401 (report: for notebooks)
    ForbiddenCallError, call_learner, no_delegation, report, time_limit,
)
from .feedback import learner_location as _learner_location

# How many times the reference min-cut's saved bytes a learner's min-cut may save at most.
MIN_CUT_MARGIN = 1.10
# Seconds one call of a learner's partitioner may run (the reference's take a tenth of a second):
# past it, an infinite loop is reported as a failure of the model or graph it ran on.
TIME_LIMIT = 30

# The learner writes these: while the learner's partitioner runs, they are out of reach.
REFERENCE_PARTITIONERS = (partitioners.default_partition, partitioners.min_cut_rematerialization_partition,
                          partitioners._flow_graph, partitioners._capacity,  # _capacity: what saving a node costs
                          partitioners._ancestors, partitioners._descendants)


# ------------------------------------------------------------------ the graphs' layout
def _names(nodes):
    return [n.name if isinstance(n, fx.Node) else repr(n) for n in nodes]


def _placeholders(gm):
    return list(gm.graph.find_nodes(op="placeholder"))


def _output_nodes(gm):
    out = gm.graph.output_node().args[0]
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _is_graph_pair(result):
    return (isinstance(result, (tuple, list)) and len(result) == 2
            and all(isinstance(g, fx.GraphModule) for g in result))


def _lint_problems(name, fw, bw):
    problems = []
    for label, gm in (("forward", fw), ("backward", bw)):
        try:
            gm.graph.lint()
        except Exception as e:  # noqa: BLE001 - a malformed graph is a finding, not a crash
            problems.append(f"{name}: the {label} graph is malformed: {e}")
    return problems


def layout_problems(name, joint_gm, num_fwd_outputs, result):
    """What is wrong with ``result`` as the (forward, backward) pair the runtime expects.

    Node names are compared with the joint graph's: a partition copies nodes, keeping names.
    """
    if not _is_graph_pair(result):
        return [f"{name}: a partitioner must return a pair of torch.fx.GraphModule, "
                f"got {type(result).__name__}"]
    fw, bw = result
    problems = _lint_problems(name, fw, bw)
    if problems:
        return problems
    nodes = list(joint_gm.graph.nodes)
    primals, tangents = _names(filter(is_primal, nodes)), _names(filter(is_tangent, nodes))
    fw_outputs, grads = (_names(group) for group in joint_outputs(joint_gm, num_fwd_outputs))
    fw_inputs, bw_inputs = _names(_placeholders(fw)), _names(_placeholders(bw))
    fw_results, bw_results = _names(_output_nodes(fw)), _names(_output_nodes(bw))
    saved = bw_inputs[: len(bw_inputs) - len(tangents)]
    expectations = [
        ("the forward's inputs", fw_inputs, primals),
        ("the backward's last inputs", bw_inputs[len(saved):], tangents),
        (f"the forward's first {num_fwd_outputs} output(s)", fw_results[:num_fwd_outputs],
         fw_outputs),
        ("the forward's other outputs (they must be the backward's saved inputs, in order)",
         fw_results[num_fwd_outputs:], saved),
        ("the backward's outputs (the joint graph's gradients, in order)", bw_results, grads),
    ]
    problems = [f"{name}: {what}: got {got}, expected {wanted}"
                for what, got, wanted in expectations if got != wanted]
    missing = [n.name for n in _placeholders(bw) if not {"val", "device"} <= n.meta.keys()]
    if missing:
        problems.append(f"{name}: backward inputs {missing} lack meta['val'] and meta['device'] "
                        "(copy the joint graph's node.meta)")
    tuples = [n.name for n in _placeholders(bw)[: len(saved)]
              if "val" in n.meta and not isinstance(n.meta["val"], torch.Tensor)]
    if tuples:
        problems.append(f"{name}: the saved values {tuples} are not tensors (the tuple of a "
                        "multi-output op?): save the getitem nodes the backward reads instead")
    return problems


# ------------------------------------------------------------------ running a learner's partitioner
class PartitionRecorder:
    """A partition_fn that calls the learner's, keeps what it got and gave, checks the layout.

    A badly laid out result is refused here, with the reasons kept in ``problems``, rather than
    left to crash somewhere inside aot_autograd's runtime.
    """

    def __init__(self, partition_fn, name):
        self.partition_fn, self.name = partition_fn, name
        self.joint = self.num_fwd_outputs = self.result = self.error = None
        self.problems = []

    def __call__(self, joint_gm, num_fwd_outputs):
        self.joint = copy.deepcopy(joint_gm)  # untouched, whatever the learner does to theirs
        self.num_fwd_outputs = num_fwd_outputs
        try:
            with no_delegation(*REFERENCE_PARTITIONERS), time_limit(TIME_LIMIT, "your partitioner"):
                self.result = call_learner(self.partition_fn, joint_gm, num_fwd_outputs)
        except Exception as e:  # noqa: BLE001 - reported by the checker, with the model's name
            self.error = e
            raise
        self.problems = layout_problems(self.name, self.joint, num_fwd_outputs, self.result)
        if self.problems:
            raise ValueError("the partition is badly laid out")
        return self.result

    def describe_failure(self, error):
        """Why compiling or training failed, as the learner should hear it."""
        if self.error is not None:
            message = _indented(self.error) or "(no message)"
            return [f"{self.name}: your partitioner raised {type(self.error).__name__}"
                    f"{_learner_location(self.error)}: {message}"]
        if self.problems:
            return self.problems
        return [f"{self.name}: training through aot_autograd with your partition failed: "
                f"{type(error).__name__}: {_indented(error)}"]


def _backend(partition_fn):
    def backend(gm, example_inputs):
        return aot_autograd(gm, example_inputs, fw_compiler=nop, partition_fn=partition_fn)

    return backend


def joint_graph(name):
    """(joint_gm, num_fwd_outputs): the joint graph aot_autograd builds for zoo model ``name``."""
    seen = []

    def record(joint_gm, num_fwd_outputs):
        seen.append((copy.deepcopy(joint_gm), num_fwd_outputs))
        return partitioners.default_partition(joint_gm, num_fwd_outputs)

    model, inputs = make(name)
    torch.compiler.reset()
    torch.compile(model, backend=_backend(record), dynamic=False)(*inputs)
    torch.compiler.reset()
    return seen[0]


def _indented(text):
    """Every line of ``text``, the later ones indented under a failure's first line."""
    return "\n    ".join(str(text).strip().splitlines())


def _compare(name, what, actual, expected, failures):
    if actual is None:
        failures.append(f"{name}: {what} is None, but eager PyTorch computes it")
        return
    try:
        torch.testing.assert_close(actual, expected)
    except AssertionError as e:
        failures.append(f"{name}: {what} differs from eager:\n    {_indented(e)}")


def _train(model, inputs, loss_fn, steps, seed):
    """The losses of ``steps`` SGD steps; the last step's gradients are left in ``.grad``."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        torch.manual_seed(seed + step)  # random ops draw the same numbers in eager and compiled
        optimizer.zero_grad()
        loss = loss_fn(model(*inputs))
        loss.backward()
        losses.append(loss.detach())
        if step < steps - 1:
            optimizer.step()
    return losses


def _zoo_builder(name):
    return lambda: (*make(name), ZOO[name].loss)


def run_model(partition_fn, name, steps=1, build=None, seed=0):
    """Train model ``name`` in eager and through aot_autograd with ``partition_fn``.

    ``build() -> (model, inputs, loss_fn)`` defaults to the zoo entry ``name``. Returns the
    ``PartitionRecorder`` and the failures: every step's loss, then the gradient of every
    parameter and the value of every buffer after the last step, compared with eager.
    """
    build = build or _zoo_builder(name)
    (eager_model, inputs, loss_fn), (model, _, _) = build(), build()
    recorder = PartitionRecorder(partition_fn, name)
    expected = _train(eager_model, inputs, loss_fn, steps, seed)
    torch.compiler.reset()
    try:
        compiled = torch.compile(model, backend=_backend(recorder), dynamic=False)
        actual = _train(compiled, inputs, loss_fn, steps, seed)
    except Exception as e:  # noqa: BLE001 - a learner's bug is reported, never raised
        return recorder, recorder.describe_failure(e)
    finally:
        torch.compiler.reset()
    if recorder.joint is None:
        return recorder, [f"{name}: the model never reached aot_autograd's partitioner"]
    failures = []
    for step, (a, e) in enumerate(zip(actual, expected)):
        _compare(name, f"the loss at step {step}", a, e, failures)
    for (param_name, e), a in zip(eager_model.named_parameters(), model.parameters()):
        _compare(name, f"the gradient of {param_name}", a.grad, e.grad, failures)
    for (buffer_name, e), a in zip(eager_model.named_buffers(), model.buffers()):
        _compare(name, f"buffer {buffer_name}", a, e, failures)
    return recorder, failures


# ------------------------------------------------------------------ what the partition chose
def saved_names(fw_gm, num_fwd_outputs):
    """Names of the values a forward graph saves: its outputs after the forward outputs."""
    return [n.name for n in _output_nodes(fw_gm)[num_fwd_outputs:]]


def _reference(partition_fn, recorder):
    return partition_fn(copy.deepcopy(recorder.joint), recorder.num_fwd_outputs)


def default_saved_set_problems(recorder):
    """The default partition saves exactly the forward values that the backward reads."""
    n = recorder.num_fwd_outputs
    got = set(saved_names(recorder.result[0], n))
    wanted = set(saved_names(_reference(partitioners.default_partition, recorder)[0], n))
    if got == wanted:
        return []
    return [f"{recorder.name}: the default partition saves {sorted(wanted)}; yours saves "
            f"{sorted(got)} (missing {sorted(wanted - got)}, extra {sorted(got - wanted)})"]


def _computed_ops(*gms):
    return [n.target for gm in gms for n in gm.graph.nodes if n.op == "call_function"]


def recompute_problems(recorder):
    """No op that ``may_recompute`` refuses runs more often in the two graphs than in the joint."""
    allowed = {n.target for n in recorder.joint.graph.nodes if may_recompute(n)}
    joint_ops, partition_ops = _computed_ops(recorder.joint), _computed_ops(*recorder.result)
    problems = []
    for target in dict.fromkeys(partition_ops):
        count, expected = partition_ops.count(target), joint_ops.count(target)
        if target not in allowed and count > expected:
            problems.append(
                f"{recorder.name}: {target} runs {count} times in your two graphs but {expected} "
                "in the joint graph: the backward recomputes an op that may_recompute() forbids"
            )
    return problems


def partition_bytes(recorder):
    """Bytes saved by the learner's partition and by both reference ones, on the same graph."""
    return {
        "yours": saved_bytes(*recorder.result),
        "default": saved_bytes(*_reference(partitioners.default_partition, recorder)),
        "reference min-cut": saved_bytes(
            *_reference(partitioners.min_cut_rematerialization_partition, recorder)),
    }


def saved_bytes_problems(recorder, margin=MIN_CUT_MARGIN):
    """Less than the default saves (unless nothing can be saved), at most margin x the reference."""
    sizes = partition_bytes(recorder)
    yours, default, reference = sizes["yours"], sizes["default"], sizes["reference min-cut"]
    limit = math.floor(margin * reference)
    beats_default = yours < default or (yours == default == reference)
    if beats_default and yours <= limit:
        return []
    if default == reference:
        return [f"{recorder.name}: your forward saves {yours} bytes for the backward; no partition "
                f"saves less than the default partition's {default} bytes here, so a min-cut "
                "partition must save just as much"]
    return [f"{recorder.name}: your forward saves {yours} bytes for the backward; a min-cut "
            f"partition must save less than the default partition ({default} bytes) and at "
            f"most {limit} bytes ({margin:.2f} x the reference min-cut's {reference} bytes)"]


def random_op_problems(recorder):
    """Random ops are drawn once, in the forward: never in the backward graph."""
    random_ops = [str(t) for t in _computed_ops(recorder.result[1])
                  if isinstance(t, torch._ops.OpOverload)
                  and torch.Tag.nondeterministic_seeded in t.tags]
    if not random_ops:
        return []
    return [f"{recorder.name}: the backward graph runs the random op(s) {random_ops}: they draw "
            "new numbers, not the ones the forward used"]


# ------------------------------------------------------------------ hand-built joint graphs
def run_joint_graph(partition_fn, name):
    """Partition the hand-built joint graph ``name`` and run both halves on its example inputs.

    Returns the ``PartitionRecorder`` and the failures: every forward output and gradient is
    compared with what the joint graph computes from the same inputs.
    """
    joint_gm, num_fwd_outputs, inputs = JOINT_GRAPHS[name]()
    recorder = PartitionRecorder(partition_fn, name)
    try:
        fw, bw = recorder(joint_gm, num_fwd_outputs)
    except Exception as e:  # noqa: BLE001 - a learner's bug is reported, never raised
        return recorder, recorder.describe_failure(e)
    num_primals = sum(map(is_primal, joint_gm.graph.nodes))
    primals, tangents = inputs[:num_primals], inputs[num_primals:]
    expected = joint_gm(*inputs)
    outputs = fw(*primals)
    grads = bw(*outputs[num_fwd_outputs:], *tangents)
    failures = []
    for i, (a, e) in enumerate(zip(outputs[:num_fwd_outputs], expected[:num_fwd_outputs])):
        _compare(name, f"forward output {i}", a, e, failures)
    for i, (a, e) in enumerate(zip(grads, expected[num_fwd_outputs:])):
        _compare(name, f"gradient {i}", a, e, failures)
    return recorder, failures


# ------------------------------------------------------------------ the checkers
def _check(run, partition_fn, names, graph_checks):
    if inspect.unwrap(partition_fn) in REFERENCE_PARTITIONERS:
        return [f"{name}: {partition_fn.__qualname__} is tinydynamo's own partitioner, not yours: "
                "write it yourself" for name in names]
    failures = []
    for name in names:
        recorder, run_failures = run(partition_fn, name)
        failures += run_failures
        if recorder.result is not None and not recorder.problems:
            for check in graph_checks:
                failures += check(recorder)
    return failures


def _models(steps=1, build=None):
    return lambda partition_fn, name: run_model(partition_fn, name, steps=steps, build=build)


DEFAULT_CHECKS = [default_saved_set_problems]
MIN_CUT_CHECKS = [recompute_problems, saved_bytes_problems]


def check_default_partition(partition_fn, names, steps=1):
    """Zoo models train as in eager, the graphs are well formed, the default's values are saved."""
    return _check(_models(steps), partition_fn, names, DEFAULT_CHECKS)


def check_min_cut_partition(partition_fn, names, steps=1):
    """Zoo models train as in eager; nothing expensive is recomputed; fewer bytes are saved."""
    return _check(_models(steps), partition_fn, names, MIN_CUT_CHECKS)


def check_default_on_joint_graphs(partition_fn, names=tuple(JOINT_GRAPHS)):
    """The hand-built joint graphs: right values, well-formed graphs, the default's saved set."""
    return _check(run_joint_graph, partition_fn, names, DEFAULT_CHECKS)


def check_min_cut_on_joint_graphs(partition_fn, names=tuple(JOINT_GRAPHS)):
    """The hand-built joint graphs: right values, nothing expensive recomputed, few bytes saved."""
    return _check(run_joint_graph, partition_fn, names, MIN_CUT_CHECKS)


class DropoutBranch(torch.nn.Module):
    """``h`` feeds both a GELU and a dropout: recomputing the dropout from ``h`` looks free."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(F.gelu(h) + F.dropout(h, p=0.5, training=True))


def build_dropout_branch():
    torch.manual_seed(0)
    inputs = (torch.randn(8, 16, generator=torch.Generator().manual_seed(6)),)
    return DropoutBranch(), inputs, lambda out: (out**2).mean()


class NoiseBranch(DropoutBranch):
    """The noise ``torch.rand_like(h)`` is drawn from ``h``, which the backward needs anyway (for
    the GELU): recomputing it looks free. (Dropout's ``bernoulli`` reads an ``empty_like``, which no
    partitioner recomputes, so ``DropoutBranch`` alone does not show a random op treated as cheap.)"""

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(F.gelu(h) * torch.rand_like(h))


def build_noise_branch():
    torch.manual_seed(0)
    inputs = (torch.randn(8, 16, generator=torch.Generator().manual_seed(6)),)
    return NoiseBranch(), inputs, lambda out: (out**2).mean()


RANDOM_MODELS = {"dropout_branch": build_dropout_branch, "noise_branch": build_noise_branch}


def check_random_ops(partition_fn):
    """Models that draw random numbers (dropout, ``torch.rand_like``) train as in eager, and their
    backward draws none."""
    return [failure for name, build in RANDOM_MODELS.items()
            for failure in _check(_models(build=build), partition_fn, [name], [random_op_problems])]
