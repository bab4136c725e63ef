"""The benchmark harness (chapter 13, "Benchmarks"): ``python -m tinydynamo.bench``.

Eager PyTorch, ``torch.compile`` and tinydynamo run the same workloads, interleaved in one process
so that a noisy shared machine affects them alike; the report gives medians and ratios to eager.
"""
