"""Counters behind ``tinydynamo.stats()`` (Introduction chapter)."""
import collections

counters: collections.Counter = collections.Counter()

STAT_NAMES = (
    "frames_seen",
    "frames_compiled",
    "graphs",
    "graph_breaks",
    "recompiles",
    "cache_hits",
    "fallbacks",
    "internal_errors",
    "implicit_fallbacks",
    "kernels_generated",
    "cpp_compiles",
)


def stats():
    """A snapshot of tinydynamo's counters; every name in STAT_NAMES is always present."""
    snapshot = {name: 0 for name in STAT_NAMES}
    snapshot.update(counters)
    return snapshot
