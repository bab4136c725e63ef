"""``make student-repo DEST=<dir>``: the repository a class's learners clone (book appendix A).

The instructor's repository holds the solutions (``solutions/``, with the hidden tests) and the
tests that prove the graders on them (``tests/course/``). A learner's copy must hold neither. The
export is every file git tracks, except those, plus ``course_release/``: an untouched copy of the
release notebooks. ``make grade A=...`` in the learner's repository grades against it, so it scores
the visible tests only (the hidden ones are run by the instructor, see the appendix), and a learner
who edits a visible test does not change what it checks.
"""
import shutil
import subprocess
import sys
from pathlib import Path

from . import nbgrader_tools as nbt

# What a learner's repository must not contain: the solutions and hidden tests, and the tests
# that run the solutions and the mutant catalogues.
EXCLUDED = ("solutions/", "tests/course/")
RELEASE_COPY = nbt.RELEASE_COPY


def tracked_files(root=nbt.REPO):
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True)
    return [name for name in listing.stdout.split("\0") if name]


def export(dest, root=nbt.REPO):
    """Write the learner repository into ``dest`` (which must not exist) and make it a git
    repository with one commit; returns the number of files exported."""
    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest} exists: choose a new directory")
    files = [f for f in tracked_files(root) if not f.startswith(EXCLUDED)]
    for name in files:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(root) / name, target)
    shutil.copytree(dest / "assignments", dest / RELEASE_COPY)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    subprocess.run(["git", "-c", "user.name=tinydynamo", "-c", "user.email=course@tinydynamo",
                    "commit", "-q", "-m", "The tinydynamo course, learner's repository"], cwd=dest, check=True)
    return len(files)


def main(argv):
    if len(argv) != 1:
        print("usage: python -m tinydynamo.course.student_repo <new directory>")
        return 2
    count = export(argv[0])
    print(f"exported {count} files to {argv[0]} (no solutions/, no tests/course/; "
          f"untouched releases in {RELEASE_COPY}/)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
