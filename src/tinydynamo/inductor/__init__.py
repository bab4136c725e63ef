"""inductor: the loop-IR compiler backend: C++/OpenMP for CPU tensors, Triton for CUDA tensors
(chapters 8-11).

Reading order, in the order data flows:

    indexing.py       index expressions (x0*1024 + r0) with range-aware simplification
    virtualized.py    ops / V: the swappable handler every loop body computes through
    ir.py             the loop IR: Pointwise, Reduction, buffers, views, extern kernels
    lowering.py       one lowering per prim
    graph.py          GraphLowering: runs a prim graph to build the IR; decides what to realize
    dependencies.py   what each loop body reads and writes
    scheduler.py      fusion, local buffers, dead buffers, the memory plan
    codegen/cpp.py    one C++ function per fused kernel, entry points per segment
    codecache.py      compile once with g++, cache on disk, load with ctypes
    codegen/wrapper.py  the Python function that allocates, calls kernels and externs
    codegen/triton.py   for CUDA tensors instead: one Triton kernel per fused group (chapter 11)
    runtime/            Triton kernel files, block sizes, autotuning; codegen/triton_wrapper.py
    compile_fx.py     compile_fx_inner: all of the above
"""
from .compile_fx import compile_fx_inner

__all__ = ["compile_fx_inner"]
