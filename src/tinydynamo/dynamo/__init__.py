"""dynamo: Python bytecode -> FX graph + guards + new bytecode (book chapters 3 and 4;
graph breaks, chapter 5, build on them).

Reading order, following one call of a compiled function:

    api.py               compile(): set the frame hook's callback around a call
    eval_frame.py        the frame hook's Python API (the C extension, or its Python model)
    convert_frame.py     the callback: skip, translate, cache, recompile, fall back
    bytecode.py          code objects <-> editable instruction lists
    symbolic_convert.py  InstructionTranslator: one handler per opcode, over VariableTrackers
    variables/           the trackers (TensorVariable, ConstantVariable, NNModuleVariable...)
    source.py, guards.py where inputs come from, and when the result may be reused
    automatic_dynamic.py which sizes are traced as symbols (../symbolic_shapes.py: the ShapeEnv)
    output_graph.py      the FX graph, its inputs, calling the backend
    codegen.py           the transformed bytecode
    resume_execution.py  graph breaks: resume functions, the rest of a frame after a break
    explain.py           explain(): what was captured, and why not more
    ddp_optimizer.py     under DistributedDataParallel: the graph split at its buckets (chapter 14)
"""
from .convert_frame import reset
from .api import OptimizedModule, compile
from .automatic_dynamic import mark_dynamic, mark_static
from .exc import Unsupported
from .explain import explain

__all__ = ["OptimizedModule", "Unsupported", "compile", "explain", "mark_dynamic", "mark_static", "reset"]
