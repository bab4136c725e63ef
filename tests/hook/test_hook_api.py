"""The module API of the frame hook extension (book chapter 2)."""
import gc
import sys

import pytest
from hook_helpers import ef


def some_function(x):
    return x + 1


def test_python_version_hex_is_the_running_python():
    built = ef.python_version_hex()
    assert built >> 16 == sys.hexversion >> 16  # same major.minor: the ABI the frame structs follow
    assert built >= 0x030B0000


def test_set_eval_frame_returns_the_previous_callback():
    first, second = (lambda f, a: None), (lambda f, a: None)
    assert ef.set_eval_frame(first) is None
    assert ef.set_eval_frame(second) is first
    assert ef.set_eval_frame(None) is second
    assert ef.set_eval_frame(None) is None


def test_set_eval_frame_rejects_a_non_callable():
    with pytest.raises(TypeError, match="callable or None"):
        ef.set_eval_frame(42)
    assert ef.set_eval_frame(None) is None


def test_get_cache_entries_creates_and_keeps_one_list():
    code = some_function.__code__.replace()  # a fresh code object: no other test sees it
    entries = ef.get_cache_entries(code)
    assert entries == [] and type(entries) is list
    entries.append(("owner", "guard", "code"))
    assert ef.get_cache_entries(code) is entries
    ef.clear_code(code)
    assert ef.get_cache_entries(code) == []


def test_skip_marks():
    code = some_function.__code__.replace()
    assert not ef.is_skipped(code)
    ef.get_cache_entries(code)
    ef.set_skip(code)
    assert ef.is_skipped(code)
    with pytest.raises(RuntimeError, match="SKIP"):
        ef.get_cache_entries(code)
    ef.clear_code(code)
    assert not ef.is_skipped(code)
    assert ef.get_cache_entries(code) == []


def test_co_extra_holds_a_reference_to_the_list_and_frees_it_with_the_code():
    code = some_function.__code__.replace()
    entries = ef.get_cache_entries(code)
    base = sys.getrefcount(entries)
    ef.clear_code(code)
    assert sys.getrefcount(entries) == base - 1
    entries = ef.get_cache_entries(code)
    base = sys.getrefcount(entries)
    del code
    assert sys.getrefcount(entries) == base - 1


def test_a_code_object_dies_cleanly_after_clear_code():
    """clear_code leaves NULL in the slot, and CPython calls the slot's free function
    on NULL too when the code object dies (this used to crash)."""
    code = some_function.__code__.replace()
    ef.set_skip(code)
    ef.clear_code(code)
    del code
    code = some_function.__code__.replace()
    ef.get_cache_entries(code)
    ef.clear_code(code)
    del code
    gc.collect()


@pytest.mark.parametrize("function", [ef.get_cache_entries, ef.set_skip, ef.clear_code, ef.is_skipped])
def test_code_functions_reject_non_code(function):
    with pytest.raises(TypeError, match="code object"):
        function(some_function)
