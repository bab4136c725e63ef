"""The grader names the case that killed the Python kernel (``execute.running_case``)."""
import os

import pytest

from tinydynamo.course.execute import RUNNING_CASE_FILE, crashed_case, running_case


def test_the_running_case_is_left_behind_only_while_it_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with running_case("softmax rows f32[6, 40]"):
        assert (tmp_path / RUNNING_CASE_FILE).read_text() == "softmax rows f32[6, 40]"
    assert not (tmp_path / RUNNING_CASE_FILE).exists()
    with pytest.raises(ValueError), running_case("a case that raises"):
        raise ValueError
    assert not (tmp_path / RUNNING_CASE_FILE).exists()


def test_after_a_crash_the_grader_reads_the_case_once(tmp_path):
    (tmp_path / RUNNING_CASE_FILE).write_text("training mlp")  # what a killed kernel leaves
    assert crashed_case(str(tmp_path)) == "training mlp"
    assert not os.path.exists(tmp_path / RUNNING_CASE_FILE) and crashed_case(str(tmp_path)) is None
