"""``make assignments``: regenerate ``assignments/`` from ``solutions/`` (the instructor's command).

It never destroys a learner's work: a release notebook that differs from the committed version
(someone has been working in it) is not overwritten unless ``--force`` (``FORCE=1``) is given.
"""
import argparse
import shutil
import subprocess
import sys
import tempfile

from . import nbgrader_tools as nbt


def committed_bytes(path):
    """The file's content in git's HEAD, or None if it is not committed."""
    rel = path.relative_to(nbt.REPO).as_posix()
    result = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=nbt.REPO, capture_output=True)
    return result.stdout if result.returncode == 0 else None


def locally_edited(path):
    return path.exists() and path.read_bytes() != committed_bytes(path)


def release(name, force):
    target = nbt.REPO / "assignments" / name
    with tempfile.TemporaryDirectory(prefix=f"release-{name}-") as tmp:
        generated = nbt.generate(nbt.scratch_course(tmp), name)
        edited = [p for p in sorted(target.glob("*")) if p.is_file() and locally_edited(p)]
        if edited and not force:
            names = ", ".join(str(p.relative_to(nbt.REPO)) for p in edited)
            print(f"refusing to overwrite {names}: it differs from the committed version "
                  f"(a learner's work?). Commit or move it, or run `make assignments FORCE=1`.")
            return False
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(generated, target)
    print(f"regenerated {target.relative_to(nbt.REPO)}")
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("assignments", nargs="*", help="default: every assignment in solutions/")
    parser.add_argument("--force", action="store_true", help="overwrite locally edited release notebooks")
    args = parser.parse_args(argv)
    results = [release(name, args.force) for name in args.assignments or nbt.assignment_names()]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
