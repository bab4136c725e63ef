"""``make grade A=<assignment>``: autograde the learner's own notebooks in ``assignments/<A>/``.

Prints a score per test, with the reason for each failure, and writes the feedback HTML to
``feedback/<A>/``. Grading runs in a scratch copy, so the notebooks themselves are never changed.
"""
import shutil
import sys
import tempfile
from pathlib import Path

from . import nbgrader_tools as nbt


def grade(name):
    notebooks = sorted((nbt.REPO / "assignments" / name).glob("*.ipynb"))
    if not notebooks:
        print(f"no notebooks in assignments/{name}/; known assignments: {', '.join(nbt.assignment_names())}")
        return 2
    with tempfile.TemporaryDirectory(prefix=f"grade-{name}-") as tmp:
        course = nbt.scratch_course(tmp)
        nbt.generate(course, name)  # records the tests, hidden ones included, in the gradebook
        hidden = nbt.hidden_only_tests(name)
        if hidden:  # a learner's repository: grade copies with those cells ungraded, as the source
            notebooks = [shutil.copy(nb, Path(tmp) / nb.name) for nb in notebooks]
            for notebook in notebooks:
                nbt.ungrade_hidden_only_tests(Path(notebook))
        scores = nbt.autograde(course, name, "you", notebooks)
        nbt.nbgrader(course, "generate_feedback", name, "--student", "you", "--force")
        feedback = nbt.REPO / "feedback" / name
        shutil.rmtree(feedback, ignore_errors=True)
        shutil.copytree(course / "feedback" / "you" / name, feedback)
    print(nbt.format_table(scores))
    if hidden:
        print(f"not graded here (hidden tests, which your instructor's grading runs): {', '.join(hidden)}")
    for html in sorted(feedback.glob("*.html")):
        print(f"feedback: {html}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tinydynamo.course.grade <assignment>")
    sys.exit(grade(sys.argv[1]))
