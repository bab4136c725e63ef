"""Assignment a06's checkers: the solution's partitioners pass, each kind of broken one is caught.

A broken partitioner must lose its points with a message that names the model and what went
wrong (the parameter whose gradient differs, the op recomputed, the bytes saved), and a
learner's exception must be reported, never crash the checker.
"""
import math
import operator

import networkx as nx
import pytest
import torch

import tinydynamo.aot
from course_solutions import solution_functions
from tinydynamo.aot import saved_bytes
from tinydynamo.course import a06
from tinydynamo.testing.models import ZOO

SOLUTION = solution_functions("a06_partitioners")
default_partition = SOLUTION["default_partition"]
min_cut_rematerialization_partition = SOLUTION["min_cut_rematerialization_partition"]

aten = torch.ops.aten


def test_the_solution_passes_every_check():
    assert a06.check_default_partition(default_partition, list(ZOO)) == []
    assert a06.check_min_cut_partition(min_cut_rematerialization_partition, list(ZOO)) == []
    assert a06.check_random_ops(min_cut_rematerialization_partition) == []


def test_longer_training_with_batch_norm_passes():
    assert a06.check_default_partition(default_partition, ["cnn"], steps=3) == []


def test_the_joint_graph_helper_matches_the_mlp_layout():
    joint, num_fwd_outputs = a06.joint_graph("mlp")
    nodes = list(joint.graph.nodes)
    assert [n.name for n in nodes if a06.is_primal(n)] == [f"primals_{i}" for i in range(1, 8)]
    assert [n.name for n in nodes if a06.is_tangent(n)] == ["tangents_1"]
    fw_outputs, grads = a06.joint_outputs(joint, num_fwd_outputs)
    assert (len(fw_outputs), len(grads)) == (1, 6)


def scaled_bias_gradient(joint_gm, num_fwd_outputs):
    """The default partition, with the last gradient (fc3.bias for the MLP) a mean, not a sum."""
    fw, bw = default_partition(joint_gm, num_fwd_outputs)
    last_gradient = bw.graph.output_node().args[0][-1]
    reduction = last_gradient.args[0]
    assert reduction.target is aten.sum.dim_IntList
    reduction.target = aten.mean.dim
    bw.recompile()
    return fw, bw


def test_a_wrong_gradient_names_the_model_and_the_parameter():
    failures = a06.check_default_partition(scaled_bias_gradient, ["mlp"])
    assert len(failures) == 1
    assert failures[0].startswith("mlp: the gradient of fc3.bias differs from eager")


def test_exceptions_are_reported_per_model():
    def buggy(joint_gm, num_fwd_outputs):
        raise ValueError("my own bug")

    failures = a06.check_default_partition(buggy, ["mlp", "norm_act"])
    assert len(failures) == 2
    for name, failure in zip(["mlp", "norm_act"], failures):
        assert failure.startswith(f"{name}: your partitioner raised ValueError (in buggy, line ")
        assert failure.endswith('raise ValueError("my own bug")): my own bug')


def test_saving_too_little_is_reported():
    def saves_nothing(joint_gm, num_fwd_outputs):
        return a06.split_joint_graph(joint_gm, num_fwd_outputs, [])

    [failure] = a06.check_default_partition(saves_nothing, ["mlp"])
    assert "mlp: your partitioner raised" in failure and "is needed but not an input" in failure


@pytest.mark.parametrize("result, expected", [
    (None, "a pair of torch.fx.GraphModule, got NoneType"),
    ("swapped", "the forward's inputs: got ["),
])
def test_badly_laid_out_results_are_explained(result, expected):
    def partition(joint_gm, num_fwd_outputs):
        if result == "swapped":
            return tuple(reversed(default_partition(joint_gm, num_fwd_outputs)))
        return result

    failures = a06.check_default_partition(partition, ["mlp"])
    assert failures and failures[0].startswith("mlp: ") and expected in failures[0]


def test_saving_a_tuple_instead_of_its_items_is_explained():
    def saves_tuples(joint_gm, num_fwd_outputs):
        fw, _ = default_partition(joint_gm, num_fwd_outputs)
        names = set(a06.saved_names(fw, num_fwd_outputs))
        saved = {n.args[0] if n.target is operator.getitem else n
                 for n in joint_gm.graph.nodes if n.name in names}
        return a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)

    [failure] = a06.check_default_partition(saves_tuples, ["norm_act"])
    assert failure == (
        "norm_act: the saved values ['native_layer_norm'] are not tensors (the tuple of a "
        "multi-output op?): save the getitem nodes the backward reads instead"
    )


def test_saved_values_out_of_order_are_reported():
    def reversed_saved(joint_gm, num_fwd_outputs):
        fw, bw = default_partition(joint_gm, num_fwd_outputs)
        out = fw.graph.output_node()
        values = list(out.args[0])
        out.args = (tuple(values[:num_fwd_outputs] + values[num_fwd_outputs:][::-1]),)
        fw.recompile()
        return fw, bw

    [failure] = a06.check_default_partition(reversed_saved, ["mlp"])
    assert failure.startswith("mlp: the forward's other outputs")


def test_the_default_check_refuses_a_min_cut_partition():
    [failure] = a06.check_default_partition(min_cut_rematerialization_partition, ["mlp"])
    assert failure.startswith("mlp: the default partition saves") and "missing ['gelu'" in failure


def test_the_min_cut_check_refuses_the_default_partition():
    [failure] = a06.check_min_cut_partition(default_partition, ["gpt_block"])
    default = saved_bytes(*default_partition(*a06.joint_graph("gpt_block")))
    assert failure.startswith(f"gpt_block: your forward saves {default} bytes")


def test_recomputing_everything_from_the_primals_is_refused():
    """Saving only the inputs is small, but the backward would redo every matmul."""
    def primals_only(joint_gm, num_fwd_outputs):
        return a06.split_joint_graph(
            joint_gm, num_fwd_outputs, [n for n in joint_gm.graph.nodes if a06.is_primal(n)]
        )

    failures = a06.check_min_cut_partition(primals_only, ["gpt_block"])
    assert any("aten.addmm.default runs 7 times" in f for f in failures)
    assert any("aten._softmax.default runs 2 times" in f for f in failures)


# Dropout draws its mask with bernoulli_ on an empty_like: a policy that lets both be recomputed.
RANDOM_DROPOUT_OPS = (aten.bernoulli.p, aten.empty_like.default)


def min_cut_recomputing_random_ops(joint_gm, num_fwd_outputs):
    """A min-cut (as in the assignment) whose policy forgets that random ops must not rerun."""
    nodes = [n for n in joint_gm.graph.nodes if n.op != "output"]
    backward = {n for n in nodes if any(a06.is_tangent(a) for a in _ancestors(n))}
    flow = nx.DiGraph()
    for node in nodes:
        if node in backward:
            flow.add_edge((node, "in"), "sink", capacity=math.inf)
            continue
        cheap = a06.may_recompute(node) or node.target in RANDOM_DROPOUT_OPS
        if a06.is_primal(node) or not cheap:
            flow.add_edge("source", (node, "in"), capacity=math.inf)
        cost = math.inf if a06.is_view(node) or a06.nbytes(node) == 0 else a06.nbytes(node)
        flow.add_edge((node, "in"), (node, "out"), capacity=cost)
        for user in node.users:
            if user.op != "output":
                flow.add_edge((node, "out"), (user, "in"), capacity=math.inf)
    _, (source_side, _) = nx.minimum_cut(flow, "source", "sink")
    saved = [n for n in nodes if (n, "in") in source_side and (n, "out") not in source_side]
    return a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)


def _ancestors(node):
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(n.all_input_nodes)
    return seen


def test_recomputing_a_random_op_is_caught():
    failures = a06.check_random_ops(min_cut_recomputing_random_ops)
    assert any(f.startswith("dropout_branch: the gradient of fc1.weight differs") for f in failures)
    assert failures[-1].startswith("dropout_branch: the backward graph runs the random op(s) "
                                   "['aten.bernoulli.p']")


def test_may_recompute_policy():
    joint, _ = a06.joint_graph("gpt_block")
    calls = [n for n in joint.graph.nodes if n.op == "call_function"]
    by_target = {n.target: a06.may_recompute(n) for n in calls}
    assert by_target[aten.gelu.default] and by_target[aten.view.default]
    assert by_target[operator.getitem]
    assert not by_target[aten.addmm.default] and not by_target[aten.bmm.default]
    assert not by_target[aten._softmax.default] and not by_target[aten.native_layer_norm.default]
    # A sum is cheap, but one that reads over four times the bytes it returns is saved instead.
    sums = [n for n in calls if n.target is aten.sum.dim_IntList]
    assert {a06.may_recompute(n) for n in sums} == {False}
    assert all(a06.nbytes(n) * 4 < sum(map(a06.nbytes, n.all_input_nodes)) for n in sums)


def test_the_solution_passes_the_hand_built_joint_graphs():
    assert a06.check_default_on_joint_graphs(default_partition) == []
    assert a06.check_min_cut_on_joint_graphs(min_cut_rematerialization_partition) == []


def test_saving_a_constant_is_reported():
    def saves_constants(joint_gm, num_fwd_outputs):
        fw, bw = default_partition(joint_gm, num_fwd_outputs)
        saved = set(a06.saved_names(fw, num_fwd_outputs))
        saved = [n for n in joint_gm.graph.nodes if n.name in saved or n.op == "get_attr"]
        return a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)

    assert a06.check_default_on_joint_graphs(saves_constants) == [
        "constant: the default partition saves []; yours saves ['scale'] (missing [], extra ['scale'])"
    ]


def test_an_error_inside_networkx_is_reported_at_the_learners_line():
    def no_sink(joint_gm, num_fwd_outputs):
        flow = nx.DiGraph()
        flow.add_edge("source", "a", capacity=1)
        nx.minimum_cut(flow, "source", "sink")

    [failure, *_] = a06.check_min_cut_on_joint_graphs(no_sink)
    assert failure.startswith("constant: your partitioner raised NetworkXError (in no_sink, line ")
    assert 'nx.minimum_cut(flow, "source", "sink")' in failure


def test_the_reference_partitioners_are_refused():
    [failure] = a06.check_default_partition(tinydynamo.aot.default_partition, ["mlp"])
    assert failure == ("mlp: default_partition is tinydynamo's own partitioner, not yours: "
                       "write it yourself")


def test_a_partitioner_that_delegates_is_refused():
    def delegates(joint_gm, num_fwd_outputs):
        return tinydynamo.aot.min_cut_rematerialization_partition(joint_gm, num_fwd_outputs)

    [failure] = a06.check_min_cut_partition(delegates, ["mlp"])
    assert failure.startswith("mlp: your partitioner raised ForbiddenCallError (in delegates, line ")
    assert "min_cut_rematerialization_partition, the reference's own answer" in failure


def min_cut_with_cheap_random_ops(joint_gm, num_fwd_outputs):
    """The solution's min-cut, with random ops left to the cut like cheap ones."""
    may_recompute = a06.may_recompute
    a06.may_recompute = lambda node: may_recompute(node) or (
        isinstance(node.target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in node.target.tags)
    try:
        return min_cut_rematerialization_partition(joint_gm, num_fwd_outputs)
    finally:
        a06.may_recompute = may_recompute


def test_a_random_op_recomputed_from_a_value_saved_anyway_is_caught():
    failures = a06.check_random_ops(min_cut_with_cheap_random_ops)
    assert failures and all(f.startswith("noise_branch: ") for f in failures)
    assert failures[-1].startswith("noise_branch: the backward graph runs the random op(s) ['aten.rand_like.default']")


def test_a_partitioner_that_loops_forever_is_stopped_and_named(monkeypatch):
    def loops(joint_gm, num_fwd_outputs):
        while True:
            pass

    monkeypatch.setattr(a06, "TIME_LIMIT", 0.5)
    failures = a06.check_default_partition(loops, ["mlp", "norm_act"])
    assert [f.split(":")[0] for f in failures] == ["mlp", "norm_act"]
    assert all("your partitioner raised LearnerTimeout (in loops, line " in f
               and f.endswith("your partitioner ran past its time limit of 0.5 s (an infinite loop?)") for f in failures)
