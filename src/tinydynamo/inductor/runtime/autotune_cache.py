"""The autotuner's choices on disk (chapter 11), as TorchInductor's ``autotune_cache.py``.

Timing a kernel's candidate configurations costs far more than compiling it, so the winner is
saved in ``<cache_dir>/triton/autotune/<key>.json``. The key hashes what decides the winner: the
kernel's source (which fixes its sizes), the GPU model, and the list of candidates (a wider
search, ``mode="max-autotune"``, may find another winner).
"""
import hashlib
import json
import os
import tempfile

from ... import config


def cache_key(source, device_name, configs):
    text = "\n".join([source, device_name, repr(sorted(configs))])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_path(key):
    return os.path.join(config.cache_dir, "triton", "autotune", f"{key}.json")


def load(key):
    """The saved choice for ``key``: a dict of the winning config's fields, or None."""
    try:
        with open(cache_path(key)) as f:
            return json.load(f)["best"]
    except (OSError, ValueError, KeyError):
        return None


def save(key, best, timings, device_name):
    """Record the winner (a dict) and every candidate's time, for whoever reads the file."""
    path = cache_path(key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record = {"device": device_name, "best": best,
              "timings_ms": [{"config": c, "ms": ms} for c, ms in timings]}
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, path)
