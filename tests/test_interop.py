"""tinydynamo and PyTorch's own Dynamo in one process: each hook chains to the other."""
import torch
import torch._dynamo

import tinydynamo
from tinydynamo._C import _eval_frame


def _double(x):
    return x * 2


def test_torch_compile_inside_a_tinydynamo_frame_and_back():
    torch_compiled = torch.compile(_double, backend="eager")

    def outer(x):
        return torch_compiled(x) + 1  # unknown to tinydynamo's translator: the frame runs eagerly

    tinydynamo.reset()
    torch._dynamo.reset()
    compiled = tinydynamo.compile(outer, backend="eager")
    x = torch.randn(4)
    torch.testing.assert_close(compiled(x), x * 2 + 1)
    torch.testing.assert_close(compiled(x), x * 2 + 1)


def test_tinydynamo_works_while_another_evaluator_is_installed():
    seen = []

    def callback(func, args):
        seen.append(func.__name__)
        return None

    torch_compiled = torch.compile(lambda x: _probe_inside_torch(x, callback), backend="eager")
    torch._dynamo.reset()
    torch.testing.assert_close(torch_compiled(torch.ones(2)), torch.ones(2) * 2)
    assert "_double" in seen, "frames started under PyTorch's hook still reach tinydynamo's callback"


@torch._dynamo.disable
def _probe_inside_torch(x, callback):
    previous = _eval_frame.set_eval_frame(callback)
    try:
        return _double(x)
    finally:
        _eval_frame.set_eval_frame(previous)


def test_tinydynamo_after_torch_compile_and_explain():
    torch._dynamo.explain(_double)(torch.ones(2))
    torch.compile(_double, backend="eager")(torch.ones(2))
    tinydynamo.reset()
    compiled = tinydynamo.compile(_double, backend="eager")
    torch.testing.assert_close(compiled(torch.ones(3)), torch.full((3,), 2.0))
    assert tinydynamo.stats()["graphs"] == 1


LEAKED_HOOK_SCENARIO = """
import torch, tinydynamo

def bad_backend(gm, example_inputs):
    raise ValueError("boom")

try:  # a failing backend leaves PyTorch's frame evaluator installed (torch 2.13)
    torch.compile(lambda x: x + 1, backend=bad_backend)(torch.ones(2))
except Exception:
    pass

double = torch.compile(lambda x: x * 2, backend="eager")

def outer(x):
    return double(x) + 1

compiled = tinydynamo.compile(outer, backend="eager")
for _ in range(3):
    torch.testing.assert_close(compiled(torch.ones(3)), torch.full((3,), 3.0))
print("ok")
"""


def test_two_hooks_never_hand_frames_back_and_forth():
    """Regression: with PyTorch's hook left installed below ours and installed again above ours,
    each hook passed the frames it left alone to the other, forever. Run in a subprocess so that a
    hang is a timeout, not a stuck test run."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", LEAKED_HOOK_SCENARIO], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-2000:]
