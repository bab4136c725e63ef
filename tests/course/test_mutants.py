"""Every plausible mistake in an assignment's catalogue costs points, with a message naming the case.

Each catalogue (``tests/course/mutants/aNN.py``, see ``tinydynamo.course.checking`` for how to add a
mutant) runs in its own process, two at a time: the in-process grader runs the solution notebook's
cells with one edit applied and stops once the mutant is proven caught. Grading every catalogue
takes about 18 minutes on two cores (a08, which compiles C++ for each mutant, about 10), so it is
its own target, ``make test-mutants``; ``make test`` checks that each catalogue is complete.
"""
import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tinydynamo
from tinydynamo.course.checking import load_catalogue

CATALOGUES = sorted((Path(__file__).parent / "mutants").glob("a*.py"))
SOURCE = str(Path(tinydynamo.__file__).parents[1])


def _check(catalogue):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SOURCE, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "tinydynamo.course.checking", str(catalogue)],
                          capture_output=True, text=True, env=env, timeout=1800)


@pytest.fixture(scope="module")
def checked(request):
    """The catalogues selected in this session, checked two at a time: catalogue -> future."""
    selected = {item.callspec.params["catalogue"] for item in request.session.items
                if getattr(item, "function", None) is test_every_mutant_is_caught}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    yield {catalogue: pool.submit(_check, catalogue) for catalogue in sorted(selected)}
    pool.shutdown(cancel_futures=True)


@pytest.mark.mutants
@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda path: path.stem)
def test_every_mutant_is_caught(checked, catalogue):
    result = checked[catalogue].result()
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-5000:]}"


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda path: path.stem)
def test_catalogue_is_large_and_covers_delegation(catalogue):
    assignment, mutants = load_catalogue(catalogue)
    assert (Path(__file__).parents[2] / "solutions" / assignment).is_dir()
    assert len(mutants) >= 8, f"{catalogue.name} has {len(mutants)} mutants; the course asks for at least 8"
    assert any(m.zero for m in mutants), f"{catalogue.name} has no mutant that delegates to the reference"
    assert len({m.name for m in mutants}) == len(mutants), "mutant names must be unique"
