"""tinydynamo: PyTorch 2's compiler stack, rebuilt small enough to read (Introduction chapter).

The pipeline, in the order data flows (each package is one part of the book):

    _C        the PEP 523 frame hook                      chapter 2
    dynamo    bytecode → FX graph + guards, graph breaks    chapters 3–5
    aot       joint graph, functionalization, partitioning  chapter 6
    prims     aten → a small closed set of prims            chapter 7
    inductor  loop IR, fusion, C++ and Triton codegen       chapters 8–11

``backends.py`` wires them together; read it first.
"""
from . import config
from ._logging import set_logs
from .utils import stats

# The dynamo API is imported on first use: importing dynamo imports torch, and the frame hook's
# own tests import tinydynamo._C on Pythons that have no torch.
_DYNAMO_API = ("OptimizedModule", "Unsupported", "compile", "explain", "mark_dynamic", "mark_static")


def reset():
    """Clear every cache: compiled frames, guards and resume functions (dynamo), the kernels loaded
    in this process (inductor; the on-disk cache stays), and the counters behind ``stats()``."""
    from .dynamo import reset as reset_dynamo
    from .inductor import codecache

    reset_dynamo()
    codecache.clear()


def __getattr__(name):
    """tinydynamo.compile, explain, reset, ...: loaded from tinydynamo.dynamo when first used."""
    if name in _DYNAMO_API:
        from . import dynamo

        return getattr(dynamo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["config", "reset", "set_logs", "stats", *_DYNAMO_API]
