"""TINYDYNAMO_LOGS: print each stage's artifact, as TORCH_LOGS does (Introduction chapter).

``TINYDYNAMO_LOGS=graph,guards python my_script.py`` or ``tinydynamo.set_logs("graph,guards")``.
Each stage calls ``trace_artifact(name, text_fn)``; the text is only built when enabled.
"""
import os
import sys

ARTIFACTS = (
    "bytecode",
    "graph",
    "guards",
    "dynamic",
    "recompiles",
    "graph_breaks",
    "ddp_graphs",
    "aot",
    "prims",
    "ir",
    "schedule",
    "kernels",
)

_enabled: set[str] = set()


def set_logs(spec=""):
    """Enable the artifacts named in a comma-separated string (or an iterable); "" disables all."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = {n.strip() for n in names if n.strip()}
    if "all" in names:
        names = set(ARTIFACTS)
    unknown = sorted(names - set(ARTIFACTS))
    if unknown:
        raise ValueError(f"unknown TINYDYNAMO_LOGS artifact(s) {unknown}; known: {', '.join(ARTIFACTS)}")
    _enabled.clear()
    _enabled.update(names)


def is_enabled(artifact):
    return artifact in _enabled


def trace_artifact(artifact, text_fn):
    """Print ``text_fn()`` under a header if ``artifact`` is enabled."""
    assert artifact in ARTIFACTS, artifact
    if artifact in _enabled:
        print(f"[tinydynamo:{artifact}] {text_fn()}", file=sys.stderr, flush=True)


set_logs(os.environ.get("TINYDYNAMO_LOGS", ""))
