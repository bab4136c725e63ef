"""Global knobs of tinydynamo, read by every stage (introduced in the Introduction chapter).

Change them by assignment (``tinydynamo.config.cache_size_limit = 4``) or for a block of
code with ``tinydynamo.config.patch(cache_size_limit=4)``.
"""
import contextlib
import os
import sys

# Dynamo: how many guarded entries one code object may hold, for the same objects checked by id()
# (a module's ``self``), before its frames run eagerly; and how many it may hold in all.
cache_size_limit = 8
accumulated_cache_size_limit = 256
# When a backend fails to compile a graph, warn and run the frame eagerly instead of raising.
suppress_errors = os.environ.get("TINYDYNAMO_SUPPRESS_ERRORS", "0") == "1"
# An unexpected error while translating a frame (a bug in the tracer, not a construct it declines)
# raises. Off by default: such an error becomes a graph break, or an eager run with a warning.
# The tests run strict, so that tracer bugs are not hidden.
strict = os.environ.get("TINYDYNAMO_STRICT", "0") == "1"
# Where generated kernels and their compiled libraries are cached across processes.
cache_dir = os.environ.get(
    "TINYDYNAMO_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "tinydynamo")
)
# Where debug artifacts (graphs, generated source) are written when asked for.
debug_dir = os.environ.get("TINYDYNAMO_DEBUG_DIR", os.path.join(os.getcwd(), "tinydynamo_debug"))
# An aten op with no decomposition stays in the prim graph as an extern fallback that backends
# call as a library kernel (as TorchInductor's ``implicit_fallbacks``); False makes it an error.
implicit_fallbacks = os.environ.get("TINYDYNAMO_IMPLICIT_FALLBACKS", "1") == "1"
# Run the Triton code generator on CPU tensors too, through TRITON_INTERPRET=1.
triton_on_cpu = os.environ.get("TINYDYNAMO_TRITON_ON_CPU", "0") == "1"
# Autotune Triton kernels over more block sizes and num_warps (``mode="max-autotune"``).
max_autotune = os.environ.get("TINYDYNAMO_MAX_AUTOTUNE", "0") == "1"
# Split graphs captured inside DistributedDataParallel at its gradient buckets (DDPOptimizer),
# so that each bucket's all-reduce can start before the whole backward is done.
optimize_ddp = os.environ.get("TINYDYNAMO_OPTIMIZE_DDP", "1") == "1"

_OPTIONS = (
    "cache_size_limit",
    "accumulated_cache_size_limit",
    "suppress_errors",
    "strict",
    "cache_dir",
    "debug_dir",
    "implicit_fallbacks",
    "triton_on_cpu",
    "max_autotune",
    "optimize_ddp",
)


@contextlib.contextmanager
def patch(**changes):
    """Temporarily set config options: ``with config.patch(cache_size_limit=2): ...``."""
    module = sys.modules[__name__]
    unknown = sorted(set(changes) - set(_OPTIONS))
    if unknown:
        raise AttributeError(f"tinydynamo.config has no option(s) {unknown}; known: {list(_OPTIONS)}")
    saved = {name: getattr(module, name) for name in changes}
    for name, value in changes.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
