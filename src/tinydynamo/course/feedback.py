"""Feedback helpers shared by the assignments' checkers: where in the learner's code an error was raised."""
import os
import sysconfig
import traceback

import torch

# Frames from these directories are not the learner's code: torch, tinydynamo, installed
# packages and the standard library.
NOT_LEARNER_CODE = (
    os.path.dirname(torch.__file__),
    os.path.dirname(os.path.dirname(__file__)),
    sysconfig.get_paths()["purelib"],
    sysconfig.get_paths()["stdlib"],
)


# The made-up file of the frame through which a grader calls the learner's callables (see
# checking.call_learner): it counts as the learner's code, but is not where an error is.
LEARNER_CALL_FILE = "<a call of your code>"
# Code that a library compiles at run time, with a made-up file name: networkx's argmap wrappers
# ("<class 'networkx.utils.decorators.argmap'> compilation 4"), torch.fx's graph code.
GENERATED_CODE = ("<class ", "<eval_with_key>", LEARNER_CALL_FILE)


def _is_learner_code(filename):
    return not filename.startswith(NOT_LEARNER_CODE + GENERATED_CODE)


def learner_location(error):
    """`` (in fn, line n: source)`` for the innermost frame of the learner's code, if any."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _is_learner_code(f.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    source = f": {frame.line.strip()}" if frame.line else ""
    return f" (in {frame.name}, line {frame.lineno}{source})"
