"""The cohort workflow of appendix A, end to end on this machine: the learner repository that
``make student-repo`` exports, and nbgrader's exchange (release, fetch, submit, collect, autograde,
feedback) for two learners, one who hands in the solution and one who hands in the release."""
import os
import subprocess
import sys

from tinydynamo.course import nbgrader_tools as nbt
from tinydynamo.course.student_repo import export

ASSIGNMENT = "a01_bytecode"  # the quickest to autograde
COURSE = ["--course", "tinydynamo"]


def test_the_learner_repository_has_no_solutions_and_grades_the_visible_tests(tmp_path):
    dest = tmp_path / "learner"
    export(dest)
    assert not (dest / "solutions").exists() and not (dest / "tests" / "course").exists()
    for notebook in dest.rglob("*.ipynb"):
        text = notebook.read_text()
        assert not any(marker in text for marker in nbt.HIDDEN_MARKERS), notebook
    env = dict(os.environ, PYTHONPATH=str(dest / "src"))
    result = subprocess.run([sys.executable, "-m", "tinydynamo.course.grade", ASSIGNMENT], cwd=dest, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    total = next(line for line in result.stdout.splitlines() if line.startswith("TOTAL"))
    assert total.split()[-1].startswith("0/"), result.stdout  # the untouched release: no points
    assert "not graded here (hidden tests" in result.stdout


def test_two_learners_through_the_exchange(tmp_path):
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    root = [f"--Exchange.root={exchange}"]
    course = tmp_path / "instructor"
    course.mkdir()
    nbt.scratch_course(course)
    nbt.generate(course, ASSIGNMENT)
    nbt.nbgrader(course, "release_assignment", ASSIGNMENT, *root)
    solution = sorted((course / "solutions" / ASSIGNMENT).glob("*.ipynb"))
    for learner in ("ada", "alan"):
        home = tmp_path / learner
        home.mkdir()
        nbt.nbgrader(home, "fetch_assignment", ASSIGNMENT, *COURSE, *root)
        if learner == "ada":  # ada's answers are the solution's
            for notebook in solution:
                (home / ASSIGNMENT / notebook.name).write_bytes(notebook.read_bytes())
        nbt.nbgrader(home, "submit", ASSIGNMENT, *COURSE, "--student", learner, *root)
    nbt.nbgrader(course, "collect", ASSIGNMENT, *root)
    nbt.nbgrader(course, "autograde", ASSIGNMENT, "--force")
    scores = {learner: nbt.read_scores(course, ASSIGNMENT, learner) for learner in ("ada", "alan")}
    assert all(s.score == s.max_score for s in scores["ada"]) and scores["ada"], nbt.format_table(scores["ada"])
    assert sum(s.score for s in scores["alan"]) == 0, nbt.format_table(scores["alan"])
    nbt.nbgrader(course, "generate_feedback", ASSIGNMENT)
    nbt.nbgrader(course, "release_feedback", ASSIGNMENT, *root)
    for learner in ("ada", "alan"):
        nbt.nbgrader(tmp_path / learner, "fetch_feedback", ASSIGNMENT, *COURSE, "--student", learner, *root)
        assert list((tmp_path / learner / ASSIGNMENT / "feedback").rglob("*.html")), learner
