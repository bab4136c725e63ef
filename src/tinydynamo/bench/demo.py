"""``make demo``: the tiny GPT's training step through the whole tinydynamo stack (chapter 13).

Prints what each stage produced (the captured graph, its guards, the number of generated kernels
and where their C++ source is), then times the training step against eager PyTorch, interleaved.
"""
import glob
import os
import statistics
import tempfile
import time

import torch

import tinydynamo
from tinydynamo.testing.models import ZOO, make


def training_step(model, inputs):
    model.zero_grad(set_to_none=True)
    loss = ZOO["tiny_gpt"].loss(model(*inputs))
    loss.backward()
    return loss.detach()


def show_capture(model, inputs):
    explanation = tinydynamo.explain(model)(*inputs)
    print(f"== dynamo: {explanation.graph_count} graph(s), {explanation.graph_break_count} graph break(s)")
    graph = explanation.graphs[0].graph
    ops = [n for n in graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    print(f"   the graph has {len(ops)} ops on {len(graph.find_nodes(op='placeholder'))} inputs "
          "(parameters are inputs); its first ops:")
    for node in ops[:8]:
        print(f"   {node.format_node()}")
    guard_lines = explanation.guards[0].strip().splitlines()
    print(f"== guards: one function of {len(guard_lines)} lines; its start:")
    print("   " + "\n   ".join(guard_lines[:10]))


def compile_and_check(model, reference, inputs):
    compiled = tinydynamo.compile(model)
    start = time.perf_counter()
    loss = training_step(compiled, inputs)
    print(f"== first call (capture, AOT, prims, C++ compile): {time.perf_counter() - start:.2f} s")
    expected = training_step(reference, inputs)
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-5)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    print(f"   loss {loss.item():.4f} and every gradient match eager")
    return compiled


def show_kernels():
    stats = tinydynamo.stats()
    sources = sorted(glob.glob(os.path.join(tinydynamo.config.cache_dir, "cpp", "*", "*.cpp")))
    print(f"== inductor: {stats['kernels_generated']} kernels in {len(sources)} C++ files "
          f"(one shared library per graph: forward and backward)")
    for path in sources:
        print(f"   {path}")


def time_steps(variants, inputs, rounds=15):
    samples = {name: [] for name in variants}
    for _ in range(rounds):
        for name, model in variants.items():
            start = time.perf_counter()
            training_step(model, inputs)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    tinydynamo.config.cache_dir = tempfile.mkdtemp(prefix="tinydynamo-demo-")
    model, inputs = make("tiny_gpt")
    reference, _ = make("tiny_gpt")
    show_capture(model, inputs)
    tinydynamo.reset()
    compiled = compile_and_check(model, reference, inputs)
    show_kernels()
    medians = time_steps({"eager": reference, "tinydynamo": compiled}, inputs)
    print(f"== training step, median of interleaved runs: eager {medians['eager'] * 1e3:.2f} ms, "
          f"tinydynamo {medians['tinydynamo'] * 1e3:.2f} ms: "
          f"{medians['eager'] / medians['tinydynamo']:.2f}x speedup over eager")


if __name__ == "__main__":
    main()
