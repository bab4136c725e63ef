"""AOT autograd: joint graph, functionalization, partitioning, autograd.Function (chapter 6).

Reading order, as the data flows:

    tracer.py            a TorchDispatchMode that records aten ops into an FX graph
    symbolic.py          symbolic sizes (SymInts) as graph values, and their values per call
    functionalization.py the rules that make the recorded graph free of mutation
    graph_capture.py     the forward or joint (forward + backward) graph, and its metadata
    schemas.py           the metadata: input mutations, output aliases, traced layouts
    partitioners.py      joint graph -> forward graph + backward graph
    runtime_wrappers.py  the autograd.Function and the wrapper that restores eager semantics
    aot_autograd.py      aot_autograd() and the aot_eager backend, tying it all together
"""
from .aot_autograd import aot_autograd, aot_eager, nop
from .partitioners import default_partition, min_cut_rematerialization_partition, saved_bytes

__all__ = [
    "aot_autograd",
    "aot_eager",
    "nop",
    "default_partition",
    "min_cut_rematerialization_partition",
    "saved_bytes",
]
