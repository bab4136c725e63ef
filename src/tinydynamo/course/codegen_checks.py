"""Checking a learner's code generator (a08's C++ pieces, a09's Triton reductions; chapters 10, 11).

Both assignments swap the learner's functions into tinydynamo's real code generator and compare
what the whole ``inductor`` backend computes with eager PyTorch. What they share is here:
``fresh_cache_dir`` gives a swap an empty kernel cache, so that the kernels that run are the
learner's, and ``check_training`` trains a zoo model through the swapped code generator.
"""
import atexit
import copy
import shutil
import tempfile

import torch

from ..backends import lookup_backend
from .a07 import as_graph_module, build_model, compare
from .execute import running_case

TRAINING_TOL = dict(atol=2e-5, rtol=1e-4)


def fresh_cache_dir(prefix):
    """A new, empty directory for compiled kernels, removed when Python exits (errors name its files)."""
    cache_dir = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, cache_dir, ignore_errors=True)
    return cache_dir


def _step(forward, model, inputs, loss_fn):
    """Loss and {parameter name: gradient} of one forward (through ``forward``) and backward."""
    model.zero_grad(set_to_none=True)
    loss = loss_fn(forward(*inputs))
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters()}


def _step_problems(name, step, compiled_step, eager_step):
    (loss, grads), (expected_loss, expected_grads) = compiled_step, eager_step
    problems = [compare(loss, expected_loss, TRAINING_TOL, "the loss", "eager")]
    problems += [compare(grads[param], expected, TRAINING_TOL, f"the gradient of {param}", "eager")
                 for param, expected in expected_grads.items()]
    return [f"{name}, training step {step}: {p}" for p in problems if p]


def _sgd(models, lr):
    with torch.no_grad():
        for model in models:
            for p in model.parameters():
                p -= lr * p.grad


def check_training(name, swapped, describe_error, steps=2, lr=0.05):
    """Train zoo model ``name`` with SGD under the inductor backend inside ``swapped()`` (the
    learner's pieces in the code generator); every step's loss and gradients must match eager's.
    ``describe_error(error)`` says what an exception means, for the learner."""
    model, inputs, loss_fn = build_model(name)
    reference = copy.deepcopy(model)
    gm = as_graph_module(model, len(inputs))
    try:
        with swapped(), running_case(f"training {name}"):
            compiled = lookup_backend("inductor")(gm, list(inputs))
            for step in range(1, steps + 1):
                problems = _step_problems(name, step, _step(compiled, model, inputs, loss_fn),
                                          _step(reference, reference, inputs, loss_fn))
                if problems:
                    return problems
                _sgd((model, reference), lr)
    except Exception as error:  # noqa: BLE001 - a learner's error is reported, not raised
        return [f"{name}: compiling or training under the inductor backend {describe_error(error)}"]
    return []
