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
_DYNAMO_API = ("OptimizedModule", "Unsupported", "compile", "explain", "reset")


def __getattr__(name):
    """tinydynamo.compile, explain, reset, ...: loaded from tinydynamo.dynamo when first used."""
    if name in _DYNAMO_API:
        from . import dynamo

        return getattr(dynamo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["config", "set_logs", "stats", *_DYNAMO_API]
