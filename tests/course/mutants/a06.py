"""Plausible mistakes in a06_partitioners: each must cost points with a message naming the case."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a06_partitioners"

DEFAULT_TESTS = ("test_default_partition_mlp", "test_default_partition_zoo")
MIN_CUT_TESTS = ("test_min_cut_gpt_block", "test_min_cut_zoo")
DEFAULT_DOC = '    """Forward: what the forward outputs need. Save every forward value the backward reads."""\n'
DEFAULT_END = ('        if n in forward and n.op != "get_attr" and (n in grads or read_by_backward(n))\n    ]\n'
               "    return a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)\n    ### END SOLUTION")
MIN_CUT_DOC = '    """Save the fewest bytes from which the backward can recompute what else it needs."""\n'

MIN_CUT_RETURN = ('    saved = [n for n in nodes if (n, "in") in source_side and (n, "out") not in source_side]\n'
                  "    return a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)\n")
ANCESTORS_LOOP = ("        node = stack.pop()\n        if node not in seen:\n            seen.add(node)\n"
                  "            stack.extend(node.all_input_nodes)")

MUTANTS = [
    Mutant("default: delegates to tinydynamo.aot.default_partition", DEFAULT_DOC,
           DEFAULT_DOC + "    import tinydynamo.aot\n"
           "    return tinydynamo.aot.default_partition(joint_gm, num_fwd_outputs)\n",
           "default_partition, the reference's own answer", zero=DEFAULT_TESTS),
    Mutant("min-cut: delegates to the reference min-cut", MIN_CUT_DOC,
           MIN_CUT_DOC + "    from tinydynamo.aot import min_cut_rematerialization_partition as ref\n"
           "    return ref(joint_gm, num_fwd_outputs)\n",
           "min_cut_rematerialization_partition, the reference's own answer", zero=MIN_CUT_TESTS),
    Mutant("min-cut: copies the book, which imports the reference partitioner",
           "def min_cut_rematerialization_partition(joint_gm, num_fwd_outputs):",
           "from tinydynamo.aot import min_cut_rematerialization_partition  # as chapter 6 does\n\n\n"
           "def _my_min_cut(joint_gm, num_fwd_outputs):",
           "tinydynamo's own partitioner, not yours", zero=MIN_CUT_TESTS),
    Mutant("default: saves get_attr constants",
           'n in forward and n.op != "get_attr" and', "n in forward and", "constant"),
    Mutant("default: does not save a gradient that depends on no tangent",
           "(n in grads or read_by_backward(n))", "read_by_backward(n)", "gradient_without_tangent"),
    Mutant("default: leaves getitem items of forward ops to the backward",
           "    forward |= {n for n in nodes if n.target is operator.getitem and n.args[0] in forward}\n",
           "", "norm_act"),
    Mutant("default: saves every forward value, read by the backward or not",
           "(n in grads or read_by_backward(n))", "True", "mlp"),
    Mutant("default: ancestors ignores the nodes' inputs past the first level",
           "            stack.extend(node.all_input_nodes)", "            stack.extend(())", "mlp"),
    Mutant("default: the forward runs everything that depends on no tangent",
           "    forward = ancestors(fw_outputs) | {n for n in nodes if a06.is_primal(n)}\n",
           "    tangent_free = set(nodes) - {u for t in nodes if a06.is_tangent(t) for u in t.users} - {t for t in nodes if a06.is_tangent(t)}\n"
           "    while True:\n"
           "        grown = {n for n in tangent_free if any(i not in tangent_free for i in n.all_input_nodes)}\n"
           "        if not grown:\n"
           "            break\n"
           "        tangent_free -= grown\n"
           "    forward = {n for n in tangent_free if n.op != 'output'}\n",
           "backward_only_matmul"),
    Mutant("min-cut: a view costs its own bytes, not infinity",
           "if a06.is_view(node) or cost == 0:", "if cost == 0:", "small_view_of_large_tensor"),
    Mutant("min-cut: a tuple costs nothing to save",
           "if a06.is_view(node) or cost == 0:", "if a06.is_view(node):", "gpt_block"),
    Mutant("min-cut: no edge from a gradient that depends on no tangent to the sink",
           '            flow.add_edge((node, "out"), "sink", capacity=math.inf)\n',
           "            pass\n", "gradient_without_tangent"),
    Mutant("min-cut: a source edge for every op that may not be recomputed, needed or not",
           "(node in needed_by_forward and not a06.may_recompute(node))",
           "not a06.may_recompute(node)", "backward_only_matmul"),
    Mutant("min-cut: an input costs (almost) nothing to save, since it stays alive anyway",
           "        cost = a06.nbytes(node)\n", "        cost = 1 if a06.is_primal(node) else a06.nbytes(node)\n",
           "small_value_of_large_input"),
    Mutant("min-cut: no source edge for the primals",
           "a06.is_primal(node) or (node in needed_by_forward", "(node in needed_by_forward",
           "backward_only_matmul"),
    Mutant("min-cut: ignores may_recompute (the backward recomputes matmuls)",
           " or (node in needed_by_forward and not a06.may_recompute(node))", "", "gpt_block"),
    Mutant("min-cut: the backward is what the tangents depend on, not what depends on them",
           "            stack.extend(node.users)", "            stack.extend(node.all_input_nodes)",
           "gpt_block"),
    Mutant("min-cut: data dependencies get a finite capacity",
           '                flow.add_edge((node, "out"), (user, "in"), capacity=math.inf)',
           '                flow.add_edge((node, "out"), (user, "in"), capacity=cost)', "gpt_block"),
    Mutant("min-cut: reads the saved nodes off the wrong side",
           'if (n, "in") in source_side and (n, "out") not in source_side]',
           'if (n, "out") in source_side and (n, "in") not in source_side]', "gpt_block"),
    Mutant("default: the forward has only what the forward outputs need, not every primal",
           "    forward = ancestors(fw_outputs) | {n for n in nodes if a06.is_primal(n)}\n",
           "    forward = ancestors(fw_outputs)\n", "backward_only_matmul"),
    Mutant("default: a forward output counts as read by the backward",
           'any(user not in forward and user.op != "output" for user in node.users)',
           "any(user not in forward for user in node.users)", "mlp: the default partition saves"),
    Mutant("default: primals never saved, as if the backward had them",
           'n in forward and n.op != "get_attr" and',
           'n in forward and n.op != "get_attr" and not a06.is_primal(n) and', "primals_3 is needed"),
    Mutant("default: ancestors follows node.args only (not a list's nodes, nor kwargs)",
           "            stack.extend(node.all_input_nodes)\n    return seen\n    ### END SOLUTION\n\n\n"
           "def default_partition",
           "            stack.extend(a for a in node.args if isinstance(a, torch.fx.Node))\n    return seen\n"
           "    ### END SOLUTION\n\n\ndef default_partition", "concatenated"),
    Mutant("default: every getitem runs in the forward, of a backward op too",
           "n.target is operator.getitem and n.args[0] in forward}", "n.target is operator.getitem}",
           "norm_act"),
    Mutant("default: a functools.partial of the reference's", DEFAULT_END,
           DEFAULT_END + "\nimport functools\nimport tinydynamo.aot\n"
           "default_partition = functools.partial(tinydynamo.aot.default_partition)",
           "default_partition, the reference's own answer", zero=DEFAULT_TESTS),
    Mutant("default: delegates to PyTorch's default_partition", DEFAULT_DOC,
           DEFAULT_DOC + "    from torch._functorch.partitioners import default_partition as torch_default\n"
           "    return torch_default(joint_gm, None, num_fwd_outputs=num_fwd_outputs)\n", "mlp", zero=DEFAULT_TESTS),
    Mutant("min-cut: delegates to PyTorch's min-cut", MIN_CUT_DOC,
           MIN_CUT_DOC + "    from torch._functorch.partitioners import min_cut_rematerialization_partition\n"
           "    return min_cut_rematerialization_partition(joint_gm, None, num_fwd_outputs=num_fwd_outputs)\n",
           "gpt_block", zero=MIN_CUT_TESTS),
    Mutant("min-cut: the default partition", MIN_CUT_DOC,
           MIN_CUT_DOC + "    return default_partition(joint_gm, num_fwd_outputs)\n", "gpt_block: your forward saves"),
    Mutant("min-cut: a tensor costs its number of elements", "        cost = a06.nbytes(node)\n",
           "        cost = node.meta['val'].numel() if isinstance(node.meta.get('val'), torch.Tensor) else 0\n",
           "mask_of_input"),
    Mutant("min-cut: a source edge for every node without inputs, constants included",
           "if a06.is_primal(node) or (node in needed_by_forward",
           "if not node.all_input_nodes or (node in needed_by_forward", "constant: your forward saves"),
    Mutant("min-cut: a gradient that depends on no tangent must be recomputed by the backward",
           '            flow.add_edge((node, "out"), "sink", capacity=math.inf)\n',
           '            flow.add_edge((node, "in"), "sink", capacity=math.inf)\n', "small_gradient_without_tangent"),
    # found by a learner's-mistakes sweep
    Mutant("default: a forward output is never saved (as if the backward received the forward's outputs)",
           "(n in grads or read_by_backward(n))", "(n in grads or (read_by_backward(n) and n not in fw_outputs))",
           "cnn"),
    Mutant("default: one forward output (the model's), running statistics forgotten",
           "a06.joint_outputs(joint_gm, num_fwd_outputs)\n    nodes = list(", "a06.joint_outputs(joint_gm, 1)\n    nodes = list(",
           "cnn"),
    Mutant("default: ancestors leaves out the nodes it starts from",
           "    seen, stack = set(), list(nodes)\n    while stack:\n" + ANCESTORS_LOOP,
           "    seen, stack = set(), [i for n in nodes for i in n.all_input_nodes]\n    while stack:\n" + ANCESTORS_LOOP,
           "gpt_block"),
    Mutant("default: every placeholder taken for a primal, tangents too",
           "{n for n in nodes if a06.is_primal(n)}\n    forward |=", "{n for n in nodes if n.op == 'placeholder'}\n    forward |=",
           "mlp"),
    Mutant("default: saves every primal, as if the backward needed all the weights",
           "(n in grads or read_by_backward(n))", "(n in grads or a06.is_primal(n) or read_by_backward(n))", "mlp"),
    Mutant("default: returns (backward, forward)", DEFAULT_END,
           DEFAULT_END.replace("    return a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)\n",
                               "    fw, bw = a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)\n    return bw, fw\n"),
           "mlp: the forward's inputs"),
    Mutant("default: forgets to return (returns None)", DEFAULT_END,
           DEFAULT_END.replace("    return a06.split_joint_graph(", "    a06.split_joint_graph("), "got NoneType"),
    Mutant("default: ancestors follows node.args, ints and bools included (raises)",
           ANCESTORS_LOOP, ANCESTORS_LOOP.replace("node.all_input_nodes", "node.args"), "norm_act: your partitioner raised AttributeError"),
    Mutant("min-cut: a backward node drains to the sink from its output, not its input",
           '            flow.add_edge((node, "in"), "sink", capacity=math.inf)\n            continue',
           '            flow.add_edge((node, "out"), "sink", capacity=math.inf)\n            continue', "gpt_block"),
    Mutant("default: ancestors looks at the top of the stack without popping it (loops forever)",
           ANCESTORS_LOOP, ANCESTORS_LOOP.replace("node = stack.pop()", "node = stack[-1]"),
           "mlp: your partitioner raised LearnerTimeout"),
    Mutant("min-cut: random ops taken for cheap pointwise ops",
           "(node in needed_by_forward and not a06.may_recompute(node))",
           "(node in needed_by_forward and not a06.may_recompute(node)"
           " and torch.Tag.nondeterministic_seeded not in getattr(node.target, 'tags', ()))", "noise_branch"),
    Mutant("min-cut: items of a multi-output op taken for views (never saved)",
           "if a06.is_view(node) or cost == 0:", "if a06.is_view(node) or node.target is operator.getitem or cost == 0:",
           "gpt_block"),
    Mutant("min-cut: the node's cost given as weight=, not capacity=",
           'flow.add_edge((node, "in"), (node, "out"), capacity=cost)', 'flow.add_edge((node, "in"), (node, "out"), weight=cost)',
           "gpt_block: your partitioner raised"),
    Mutant("min-cut: needed by the forward = what every joint output needs, gradients included",
           "    needed_by_forward = ancestors(fw_outputs)\n", "    needed_by_forward = ancestors(fw_outputs + grads)\n",
           "backward_only_matmul"),
    Mutant("min-cut: never recomputes what the forward outputs need",
           "(node in needed_by_forward and not a06.may_recompute(node))", "node in needed_by_forward", "gpt_block"),
    Mutant("min-cut: a view costs nothing to save",
           "        if a06.is_view(node) or cost == 0:\n            cost = math.inf\n",
           "        if cost == 0:\n            cost = math.inf\n        if a06.is_view(node):\n            cost = 0\n", "gpt_block"),
    Mutant("min-cut: saves every forward value on the sink side's edge, recomputed ones included",
           'if (n, "in") in source_side and (n, "out") not in source_side]',
           'if (n, "out") not in source_side and n not in backward and a06.nbytes(n) > 0]', "gpt_block"),
    Mutant("min-cut: returns the saved nodes, not the graphs", MIN_CUT_RETURN,
           MIN_CUT_RETURN.replace("    return a06.split_joint_graph(joint_gm, num_fwd_outputs, saved)", "    return saved"),
           "gpt_block: a partitioner must return a pair of torch.fx.GraphModule, got list"),
    Mutant("min-cut: a node's bytes read off meta['val'] (a tuple has none)", "        cost = a06.nbytes(node)\n",
           "        cost = node.meta['val'].nbytes\n", "gpt_block: your partitioner raised AttributeError"),
    Mutant("min-cut: only matmuls are too expensive to recompute",
           "(node in needed_by_forward and not a06.may_recompute(node))",
           "(node in needed_by_forward and node.target in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default,"
           " torch.ops.aten.bmm.default))", "gpt_block"),
]


# ----------------------------------------------------------------------------------------------
# Round 6 of adversarial learners (2026-11-30): delegation through the graders' own helpers and
# the reference's entry points, missing cases, and a hang that now fails its case.
DEFAULT_TESTS = ("test_default_partition_mlp", "test_default_partition_zoo")
MIN_CUT_TESTS = ("test_min_cut_gpt_block", "test_min_cut_zoo")
DEFAULT_DOC = '    """Forward: what the forward outputs need. Save every forward value the backward reads."""\n'
MIN_CUT_DOC = '    """Save the fewest bytes from which the backward can recompute what else it needs."""\n'
ANCESTORS_DOC = '    """The set of `nodes` themselves and every node they depend on, transitively."""\n'
COST = ("        cost = a06.nbytes(node)\n        if a06.is_view(node) or cost == 0:\n"
        "            cost = math.inf\n")
PARTITIONERS = '__import__("tinydynamo.aot.partitioners", fromlist=["_"])'

MUTANTS += [
    # ---------------------------------------------------------------- delegation
    Mutant("default: the reference's default_partition run through the grader's own a06._reference",
           DEFAULT_DOC,
           DEFAULT_DOC + "    import types as _types\n"
           f"    return a06._reference({PARTITIONERS}.default_partition,\n"
           "                          _types.SimpleNamespace(joint=joint_gm, num_fwd_outputs=num_fwd_outputs))\n",
           "default_partition", zero=DEFAULT_TESTS),
    Mutant("min-cut: the reference's min-cut run through the grader's own a06._reference",
           MIN_CUT_DOC,
           MIN_CUT_DOC + "    import types as _types\n"
           f"    return a06._reference({PARTITIONERS}.min_cut_rematerialization_partition,\n"
           "                          _types.SimpleNamespace(joint=joint_gm, num_fwd_outputs=num_fwd_outputs))\n",
           "min_cut_rematerialization_partition", zero=MIN_CUT_TESTS),
    Mutant("min-cut: a node's capacity from the reference's partitioners._capacity", COST,
           f"        cost = {PARTITIONERS}._capacity(node)\n", "_capacity", zero=MIN_CUT_TESTS),
    Mutant("ancestors is the reference's partitioners._ancestors", ANCESTORS_DOC,
           ANCESTORS_DOC + f"    return {PARTITIONERS}._ancestors(nodes)\n", "_ancestors",
           zero=DEFAULT_TESTS),
    Mutant("min-cut: the flow graph is the reference's _flow_graph, found with gc (a copy the trampoline serves)",
           "    _, (source_side, _) = nx.minimum_cut(flow, \"source\", \"sink\")\n",
           "    import gc\n"
           "    for _f in gc.get_objects():\n"
           "        if type(_f) is type(ancestors) and getattr(_f, '__qualname__', '') == '_flow_graph' "
           "and _f.__module__.startswith('tinydynamo'):\n"
           "            try:\n                flow = _f(joint_gm, num_fwd_outputs)\n                break\n"
           "            except Exception:\n                pass\n"
           "    _, (source_side, _) = nx.minimum_cut(flow, \"source\", \"sink\")\n",
           "_flow_graph", zero=MIN_CUT_TESTS),
    Mutant("default: a forward value counts as read by the backward only if a gradient reads it directly",
           "        return any(user not in forward and user.op != \"output\" for user in node.users)\n",
           "        return any(user in grads for user in node.users)\n", "saves"),
    Mutant("default: the forward outputs' getitems of forward ops left out",
           "    forward |= {n for n in nodes if n.target is operator.getitem and n.args[0] in forward}\n", "",
           "cnn"),
    Mutant("default: a primal read by the backward is not saved (the backward gets the inputs anyway)",
           "        if n in forward and n.op != \"get_attr\" and (n in grads or read_by_backward(n))\n",
           "        if n in forward and n.op not in (\"get_attr\", \"placeholder\") and (n in grads or read_by_backward(n))\n",
           "mlp"),
    Mutant("min-cut: source and sink swapped in nx.minimum_cut",
           "    _, (source_side, _) = nx.minimum_cut(flow, \"source\", \"sink\")\n",
           "    _, (_, source_side) = nx.minimum_cut(flow, \"sink\", \"source\")\n", "gpt_block"),
    Mutant("min-cut: falls back to the default partition on small graphs (the hand-built ones)",
           MIN_CUT_DOC,
           MIN_CUT_DOC + "    if len(joint_gm.graph.nodes) < 20:\n        return default_partition(joint_gm, num_fwd_outputs)\n",
           "your forward saves"),
    Mutant("min-cut: a gradient that depends on no tangent drains to the sink from its input",
           "            flow.add_edge((node, \"out\"), \"sink\", capacity=math.inf)\n        if a06.is_primal(node)",
           "            flow.add_edge((node, \"in\"), \"sink\", capacity=math.inf)\n        if a06.is_primal(node)",
           "saves"),
    Mutant("min-cut: a primal can never be saved (its capacity is infinite)", COST,
           COST + "        if a06.is_primal(node):\n            cost = math.inf\n", "saves"),
    Mutant("min-cut: everything the forward outputs need is pinned to the source, recomputable or not",
           "        if a06.is_primal(node) or (node in needed_by_forward and not a06.may_recompute(node)):\n",
           "        if a06.is_primal(node) or node in needed_by_forward:\n", "saves"),
    Mutant("min-cut: descendants follows the nodes' inputs (copy-paste of ancestors)",
           "            stack.extend(node.users)\n", "            stack.extend(node.all_input_nodes)\n", "gpt_block"),
    Mutant("min-cut: saved read off the cut edges of R (the sink side's nodes)",
           '    saved = [n for n in nodes if (n, "in") in source_side and (n, "out") not in source_side]\n',
           '    cut_value, (source_side, sink_side) = nx.minimum_cut(flow, "source", "sink")\n'
           '    saved = [n for n in nodes if (n, "in") in source_side and (n, "out") in sink_side and n in needed_by_forward]\n',
           'gpt_block'),
]
