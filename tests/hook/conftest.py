"""Every frame hook test must leave the thread without a callback (book chapter 2)."""
import pytest
from hook_helpers import ef


@pytest.fixture(autouse=True)
def no_callback_left():
    yield
    left = ef.set_eval_frame(None)
    assert left is None, f"a test left a frame hook callback set: {left!r}"
