"""Assignment a02's checkers: the solution passes, the scenarios mean what they say, and each
kind of broken skip rule, lookup or miss path is caught with a message that names the scenario,
the call and what the reference pipeline did instead.
"""
import json
from pathlib import Path

import pytest
import torch

import tinydynamo
from tinydynamo.course import a02
from tinydynamo.dynamo import convert_frame, eval_frame, trace_rules
from tinydynamo.dynamo.convert_frame import ConvertFrame
from tinydynamo.testing.models import MLP
from tinydynamo.utils import counters

SOLUTION = Path(a02.__file__).resolve().parents[3] / "solutions" / "a02_frame_callback" / "a02_frame_callback.ipynb"


def notebook_functions(path):
    """The namespace left by the source notebook's code cells other than tests: its setup, its
    demos and its solutions (the reference solution)."""
    namespace = {}
    for cell in json.loads(path.read_text())["cells"]:
        meta = cell["metadata"]["nbgrader"]
        if cell["cell_type"] == "code" and not meta["grade"]:
            exec(compile("".join(cell["source"]), f"{path.name}:{meta['grade_id']}", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def solution():
    return notebook_functions(SOLUTION)


# --------------------------------------------------------------------------- the solution passes
def test_the_solution_makes_the_reference_skip_decisions(solution):
    codes = a02.skip_examples() + a02.skip_corpus()
    assert len(codes) > 35
    assert a02.check_skip_decisions(solution["skip_reason"], codes) == []
    decisions = {a02.describe(code): trace_rules.skip_reason(code) is None for code in codes}
    assert 10 < sum(decisions.values()) < len(codes) - 10, "both decisions are well represented"


def test_the_solution_lookup_passes_the_examples(solution):
    assert a02.check_lookup_examples(solution["lookup"]) == []


def test_the_solution_behaves_as_the_reference_in_every_scenario(solution):
    pieces = {name: solution[name] for name in ("skip_reason", "lookup", "on_cache_miss")}
    assert a02.check_scenarios(list(a02.SCENARIOS), **pieces) == []
    assert a02.check_scenarios(["recompiles", "two_wrappers"], lookup=pieces["lookup"]) == []
    assert a02.check_scenarios(["cache_limit", "generator"], on_cache_miss=pieces["on_cache_miss"]) == []


# --------------------------------------------------------------------------- the scenarios' meaning
def runs(trace):
    return [run[0] if run else None for run in trace.runs]


def test_recompiles_scenario():
    trace = a02.run_scenario(a02.SCENARIOS["recompiles"])
    assert runs(trace) == [("a", 0), ("a", 0), ("a", 1), ("a", 0), ("a", 1), ("a", 2)]
    assert trace.recompiles == 2 and not any(trace.mismatches)


def test_cache_limit_scenario():
    trace = a02.run_scenario(a02.SCENARIOS["cache_limit"])
    assert runs(trace) == [("a", 0), ("a", 1), ("a", 2), None, None, ("a", 0), None]
    assert len(trace.limit_warnings) == 1 and "scaled_relu" in trace.limit_warnings[0]
    assert trace.callbacks[4:] == [0, 0, 0], "past the limit, the hook answers by itself"


def test_two_wrappers_scenario():
    trace = a02.run_scenario(a02.SCENARIOS["two_wrappers"])
    assert runs(trace) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("a", 0), ("b", 1), None, None]
    assert len(trace.limit_warnings) == 2 and trace.recompiles == 2


def test_skip_scenarios():
    generator = a02.run_scenario(a02.SCENARIOS["generator"])
    assert runs(generator) == [None, None] and generator.callbacks == [1, 0]
    assert generator.compiled_codes == set()
    modules = a02.run_scenario(a02.SCENARIOS["fx_and_modules"])
    assert runs(modules) == [None, ("mlp", 0), None, ("mlp", 0)]
    assert modules.compiled_codes == {a02.describe(MLP.forward.__code__)}


# --------------------------------------------------------------------------- broken skip rules
def test_not_skipping_generators_is_caught(solution):
    def skip_reason(code):
        return None if code.co_flags & solution["GENERATOR_FLAGS"] else solution["skip_reason"](code)

    [failure] = a02.check_skip_decisions(skip_reason, a02.skip_examples())
    assert failure.startswith("skip_reason(squares (a02_user.py:5) in ")
    assert failure.endswith("returned None; expected a reason: it must be skipped (generators and coroutines "
                            "are not compiled)")
    failures = a02.check_scenarios(["generator"], skip_reason=skip_reason)
    assert failures == ["generator: the callback went on to translate squares (a02_generator.py:2), a "
                        "generator function: skip_reason must skip it, and on_cache_miss must not translate it"]


def test_compiling_torch_internals_is_caught(solution):
    def skip_reason(code):
        return None if "torch" in code.co_filename else solution["skip_reason"](code)

    failures = a02.check_scenarios(["zoo_cnn"], skip_reason=skip_reason)
    assert any("the callback translated Module._wrapped_call_impl" in f for f in failures)


def test_skipping_everything_is_caught():
    failures = a02.check_scenarios(["recompiles"], skip_reason=lambda code: "no")
    assert failures[0].startswith("recompiles, call 1: `x = torch.randn(3, dtype=torch.float32); a(x)`: "
                                  "ran no compiled graph; the reference pipeline ran graph 0 of wrapper 'a'")
    assert any("never translated scaled_relu" in f for f in failures)


# --------------------------------------------------------------------------- broken lookups
def lookup_ignoring_owners(entries, owner, args):
    return next((code for _, guard, code in entries if guard(*args)), None)


def lookup_last_match(entries, owner, args):
    found = [code for entry_owner, guard, code in entries if entry_owner is owner and guard(*args)]
    return found[-1] if found else None


def test_a_lookup_ignoring_owners_runs_another_wrappers_graph():
    failures = a02.check_scenarios(["two_wrappers"], lookup=lookup_ignoring_owners)
    assert failures[0].startswith("two_wrappers, call 3: `x = torch.randn(1, dtype=torch.float32); b(x)`: "
                                  "ran graph 0 of wrapper 'a'; the reference pipeline ran graph 0 of wrapper 'b'")
    assert "lookup([(other, guard a: True" in a02.check_lookup_examples(lookup_ignoring_owners)[0]


def test_a_lookup_taking_the_last_match_is_caught():
    failures = a02.check_scenarios(["cache_limit"], lookup=lookup_last_match)
    assert failures == ["cache_limit, call 6: `x = torch.randn(1, dtype=torch.float32); a(x)`: ran no compiled "
                        "graph; the reference pipeline ran graph 0 of wrapper 'a' [" + a02.SCENARIOS["cache_limit"].why + "]"]
    assert a02.check_lookup_examples(lookup_last_match)[0].endswith(
        "(the first entry of this owner whose guard passes wins): returned code d, expected code c")


def test_a_lookup_calling_every_guard_is_caught():
    def lookup(entries, owner, args):
        passing = [code for entry_owner, guard, code in entries if entry_owner is owner and guard(*args)]
        return passing[0] if passing else None

    failures = a02.check_lookup_examples(lookup)
    assert failures[0].endswith("called guards ['b', 'c', 'd'], expected ['b', 'c'] (only this owner's guards, "
                                "in order, stopping at the first that passes)")


def test_a_lookup_error_is_reported_not_raised():
    def lookup(entries, owner, args):
        return entries[5]

    [failure] = a02.check_scenarios(["recompiles"], lookup=lookup)
    assert failure == ("recompiles: your lookup raised IndexError (in lookup, line "
                       f"{lookup.__code__.co_firstlineno + 1}: return entries[5]): list index out of range")


# --------------------------------------------------------------------------- broken miss paths
def miss_path(solution, **changes):
    """The solution's on_cache_miss with one step changed: no_skip_mark, no_eager_entry,
    no_recompile_count or count_all_owners."""
    skip_reason = solution["skip_reason"]

    def on_cache_miss(callback, func, args):
        code = func.__code__
        if skip_reason(code) is not None:
            if not changes.get("no_skip_mark"):
                eval_frame.set_skip(code)
            return None
        entries = eval_frame.get_cache_entries(code)
        mine = entries if changes.get("count_all_owners") else [e for e in entries if e[0] is callback]
        if len(mine) >= tinydynamo.config.cache_size_limit:
            import warnings
            warnings.warn(f"{code.co_name} hit cache_size_limit")
            if not changes.get("no_eager_entry"):
                entries.append((callback, convert_frame.always, convert_frame.eager_code(code)))
            return None
        if mine and not changes.get("no_recompile_count"):
            counters["recompiles"] += 1
        return callback.convert(func, args, code, entries)

    return on_cache_miss


def test_without_the_eager_entry_every_call_reaches_the_callback(solution):
    failures = a02.check_scenarios(["cache_limit"], on_cache_miss=miss_path(solution, no_eager_entry=True))
    assert any(f.startswith("cache_limit, call 5: `x = torch.randn(5, dtype=torch.float32); a(x)`: 1 frame(s) "
                            "reached the callback; the reference's hook answered every frame by itself") for f in failures)
    assert any("3 warning(s) mentioning cache_size_limit" in f for f in failures)


def test_without_skip_marks_skipped_frames_keep_reaching_the_callback(solution):
    failures = a02.check_scenarios(["generator"], on_cache_miss=miss_path(solution, no_skip_mark=True))
    assert failures and failures[0].startswith("generator, call 2: `a([4, 5])`: 1 frame(s) reached the callback")


def test_uncounted_recompiles_are_caught(solution):
    failures = a02.check_scenarios(["recompiles"], on_cache_miss=miss_path(solution, no_recompile_count=True))
    assert failures == ["recompiles: counters['recompiles'] is 0, 2 with the reference ["
                        + a02.SCENARIOS["recompiles"].why + "]"]


def test_counting_other_owners_entries_gives_up_too_early(solution):
    failures = a02.check_scenarios(["two_wrappers"], on_cache_miss=miss_path(solution, count_all_owners=True))
    assert failures[0].startswith("two_wrappers, call 3: `x = torch.randn(1, dtype=torch.float32); b(x)`: "
                                  "ran no compiled graph; the reference pipeline ran graph 0 of wrapper 'b'")


# --------------------------------------------------------------------------- the swap-in
def test_the_reference_comes_back_even_when_the_block_raises(solution):
    reference_call, reference_skip = ConvertFrame.__call__, trace_rules.skip_reason
    with pytest.raises(ZeroDivisionError):
        with a02.swapped_in(solution["skip_reason"], solution["lookup"], solution["on_cache_miss"]):
            assert eval_frame.get_cache_entries is not eval_frame.HOOK.get_cache_entries
            1 / 0
    assert ConvertFrame.__call__ is reference_call and trace_rules.skip_reason is reference_skip
    assert ConvertFrame.convert.__name__ == "convert"
    assert eval_frame.HAS_C_HOOK and eval_frame.get_cache_entries is eval_frame.HOOK.get_cache_entries
    x = torch.randn(3)
    torch.testing.assert_close(tinydynamo.compile(torch.relu, backend="eager")(x), torch.relu(x))


def test_the_hook_source_helper_shows_the_c_lookup():
    source = a02.hook_source("lookup")
    assert "static PyObject *\nlookup(PyObject *entries, PyObject *owner" in source
