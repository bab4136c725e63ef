"""Driving nbgrader from Python: generate a release, autograde a submission, read the scores.

Every command runs in a scratch copy of the course (``nbgrader_config.py`` + ``solutions/``), so
the gradebook, ``submitted/`` and ``autograded/`` never touch the learner's working tree.
"""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HIDDEN_MARKERS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN SOLUTION", "END SOLUTION")
# A learner's repository (``make student-repo``) has no solutions/: its untouched release
# notebooks, with the visible tests only, are the source that grading records the tests from.
RELEASE_COPY = "course_release"


@dataclasses.dataclass
class TestScore:
    notebook: str
    test: str
    score: float
    max_score: float
    message: str  # why it failed ("" when it passed)


def course_source(root=REPO):
    """solutions/ in the instructor's repository, the untouched releases in a learner's."""
    solutions = Path(root) / "solutions"
    return solutions if solutions.is_dir() else Path(root) / RELEASE_COPY


def assignment_names(root=REPO):
    return sorted(p.name for p in course_source(root).iterdir() if p.is_dir())


def scratch_course(tmp, root=REPO):
    """A copy of the course source in ``tmp`` where nbgrader may write freely. From a learner's
    repository, test cells that are hidden tests only are left ungraded (``hidden_only_tests``)."""
    tmp = Path(tmp)
    shutil.copy(Path(root) / "nbgrader_config.py", tmp / "nbgrader_config.py")
    shutil.copytree(course_source(root), tmp / "solutions")
    if course_source(root).name == RELEASE_COPY:
        for notebook in (tmp / "solutions").glob("*/*.ipynb"):
            ungrade_hidden_only_tests(notebook)
    return tmp


def _is_hidden_only(cell):
    """A release's test cell whose tests were all hidden: comments at most, nothing that checks."""
    code = [line for line in "".join(cell["source"]).splitlines() if line.strip() and not line.strip().startswith("#")]
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade") and not code


def hidden_only_tests(assignment, root=REPO):
    """In a learner's repository, the test cells that only the instructor's grading runs."""
    if course_source(root).name != RELEASE_COPY:
        return []
    return [cell["metadata"]["nbgrader"]["grade_id"]
            for notebook in sorted((course_source(root) / assignment).glob("*.ipynb"))
            for cell in json.loads(notebook.read_text())["cells"] if _is_hidden_only(cell)]


def ungrade_hidden_only_tests(notebook):
    """Make the hidden-only test cells of a notebook file read-only cells without points."""
    content = json.loads(notebook.read_text())
    for cell in content["cells"]:
        if _is_hidden_only(cell):
            meta = cell["metadata"]["nbgrader"]
            meta.update(grade=False, locked=True)
            meta.pop("points", None)
    notebook.write_text(json.dumps(content, indent=1))


def nbgrader(course, *args, timeout=None):
    """Run one nbgrader command in ``course``; its own tools (alembic, jupyter) come from this venv."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    extra = [f"--Execute.timeout={timeout}"] if timeout else []
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, *extra],
        cwd=course, env=env, capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def generate(course, assignment):
    """Generate the release of ``assignment``; returns its directory."""
    nbgrader(course, "generate_assignment", assignment, "--force")
    return Path(course) / "assignments" / assignment


def autograde(course, assignment, student, notebooks, timeout=None):
    """Submit ``notebooks`` (paths) as ``student`` and autograde them; returns the per-test scores."""
    submitted = Path(course) / "submitted" / student / assignment
    submitted.mkdir(parents=True, exist_ok=True)
    for nb in notebooks:
        shutil.copy(nb, submitted / Path(nb).name)
    nbgrader(course, "autograde", assignment, "--student", student, "--force", timeout=timeout)
    return read_scores(course, assignment, student)


def read_scores(course, assignment, student):
    from nbgrader.api import Gradebook

    messages = _failure_messages(Path(course) / "autograded" / student / assignment)
    with Gradebook(f"sqlite:///{Path(course) / 'gradebook.db'}") as gb:
        submission = gb.find_submission(assignment, student)
        return [
            TestScore(nb.name, g.name, g.score, g.max_score, messages.get((nb.name, g.name), ""))
            for nb in submission.notebooks
            for g in nb.grades
            if g.max_score > 0
        ]


def _failure_messages(autograded_dir):
    """(notebook, grade_id) -> the error text shown by the failing test cell."""
    messages = {}
    for path in Path(autograded_dir).glob("*.ipynb"):
        cells = json.loads(path.read_text())["cells"]
        for cell in cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if grade_id and errors:
                messages[(path.stem, grade_id)] = _explain(errors[0])
    return messages


def _explain(error):
    if error["ename"] == "KeyboardInterrupt":
        return "the test ran past the per-cell time limit and was interrupted (an infinite loop?)"
    return f"{error['ename']}: {error['evalue']}"


def format_table(scores):
    width = max([len(s.test) for s in scores] + [4])
    lines = [f"{'test':<{width}}  score", f"{'-' * width}  -----"]
    for s in scores:
        lines.append(f"{s.test:<{width}}  {s.score:g}/{s.max_score:g}")
        if s.message:
            lines.extend("    " + line for line in s.message.splitlines())
    total, best = sum(s.score for s in scores), sum(s.max_score for s in scores)
    lines.append(f"{'TOTAL':<{width}}  {total:g}/{best:g}")
    return "\n".join(lines)
