"""Checking a learner's code generator (a08's C++ pieces, a09's Triton reductions; chapters 10, 11).

Both assignments swap the learner's functions into tinydynamo's real code generator and compare
what the whole ``inductor`` backend computes with eager PyTorch. What they share is here:
``fresh_cache_dir`` gives a swap an empty kernel cache, so that the kernels that run are the
learner's, and ``check_training`` trains a zoo model through the swapped code generator.
"""
import tempfile

from .a07 import training_problems
from .execute import running_case

TRAINING_TOL = dict(atol=2e-5, rtol=1e-4)


def fresh_cache_dir(prefix):
    """A context manager: a new, empty directory for compiled kernels, removed when the swap ends
    (errors name its files; a kernel already loaded keeps running after its file is gone)."""
    return tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True)


def check_training(name, swapped, describe_error, steps=2, lr=0.05):
    """Train zoo model ``name`` with SGD under the inductor backend inside ``swapped()`` (the
    learner's pieces in the code generator); every step's loss and gradients must match eager's.
    ``describe_error(error)`` says what an exception means, for the learner."""
    try:
        with swapped(), running_case(f"training {name}"):
            return training_problems(name, "inductor", steps, lr, TRAINING_TOL)
    except Exception as error:  # noqa: BLE001 - a learner's error is reported, not raised
        return [f"{name}: compiling or training under the inductor backend {describe_error(error)}"]
