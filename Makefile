# tinydynamo: every target creates .venv and installs the project if needed.

# The first interpreter of a Python version that runs: pyenv's, then the one on PATH.
find-python = $(shell for p in $(HOME)/.pyenv/versions/$(1)*/bin/python$(1) python$(1); do \
	$$p -c '' 2>/dev/null && { echo $$p; break; }; done)

# .venv is made with the newest supported Python found (3.13, 3.12, then 3.11), unless PYTHON is given:
# `make test PYTHON=python3.11` (as CI does). An existing .venv keeps its version: remove it to switch.
ifeq ($(origin PYTHON),undefined)
PYTHON := $(firstword $(foreach version,3.13 3.12 3.11,$(call find-python,$(version))))
endif
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test test-models test-opinfo test-fuzz test-mutants test-py312 test-py313 pytest check-assignments book check-site check-workflows assignments grade student-repo test-hook bench demo clean

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,book,course,models]'
	touch $(STAMP)

# The C extension is rebuilt whenever its source changes.
EXT_STAMP := $(VENV)/.ext-built
$(EXT_STAMP): $(STAMP) $(wildcard src/tinydynamo/_C/*.c src/tinydynamo/_C/*.h)
	$(PY) setup.py -q build_ext --inplace
	touch $(EXT_STAMP)

install: $(EXT_STAMP)

test: install
	$(MAKE) pytest test-py312 test-py313 check-assignments check-workflows book check-site

pytest: install
	$(PY) -m pytest

# The whole real-model suite (transformers, diffusers, torch_geometric): every model through every
# backend and both frontends, against eager and torch._dynamo; `make test` runs its fast subset.
# Then the table that chapter 5 renders (book/data/real_models.json).
test-models: install
	HF_HUB_OFFLINE=1 $(PY) -m pytest -m slow_models tests/models
	HF_HUB_OFFLINE=1 $(PY) tests/models/real_model_check.py --out book/data/real_models.json

# The whole OpInfo sweep: every op of PyTorch's op_db, its first samples in float32 (with gradients),
# float64, bfloat16, int64 and bool, against eager; `make test` runs its fast slice. Writes
# build/opinfo.md (counts per status and dtype, every sample that did not pass) and build/opinfo.json.
test-opinfo: install
	TINYDYNAMO_OPINFO_REPORT=build/opinfo $(PY) -m pytest -m opinfo_full tests/opinfo

# Every assignment's catalogue of learner mistakes (tests/course/mutants), each graded: every mutant
# must lose points, with a message that names the case. About 18 minutes on two cores.
test-mutants: install
	$(PY) -m pytest -m mutants tests/course/test_mutants.py

# A long run of the random-program fuzzer (2000 forward and 1000 training programs, fresh randomness);
# `make test` runs a fixed budget. It stops at the first failure and prints the shrunk program.
test-fuzz: install
	TINYDYNAMO_FUZZ_EXAMPLES=2000 $(PY) -m pytest tests/fuzz

# The frame hook's own tests (no torch) under pyenv's CPython 3.12 and 3.13, without torch
# (test-py312 and test-py313, in `make test`, run them too).
test-hook: install
	tools/test_hook.sh

# The compiler under another CPython (pytest runs everything on .venv's), in a venv of its own: the
# dynamo and hook tests, a training step of every zoo model through each backend down to inductor's
# C++ kernels, and the assignments about bytecode and the hook graded in-process (solution full
# marks, release none), which add under a minute to the dynamo and hook tests. $(1) is the
# interpreter, $(2) the venv. torch for 3.12 and 3.13 is a large CUDA build from PyPI (4.7 GB in the
# venv with its CUDA libraries): about 2 minutes per version from scratch. pip keeps no copy of the
# downloads, and with DROP_VENVS=1 (as .ci/run sets) each venv is removed once its tests pass, so
# that a run never holds both builds on a disk that may have only a few GB free.
define test-python
	test -x $(2)/bin/python || $(firstword $(1)) -m venv $(2)
	$(2)/bin/python -m pip install -q --no-cache-dir -e . pytest pytest-timeout hypothesis  # torch brings its own triton
	$(2)/bin/python setup.py -q build_ext --inplace
	$(2)/bin/python -m pytest tests/dynamo tests/hook tests/test_end_to_end.py::test_training_step_matches_eager \
		tests/course/test_bytecode_assignments.py -p no:cacheprovider
	$(if $(DROP_VENVS),rm -rf $(2))
endef

PY312 ?= $(or $(call find-python,3.12),python3.12)
test-py312:
	$(call test-python,$(PY312),build/venv-3.12)

PY313 ?= $(or $(call find-python,3.13),python3.13)
test-py313:
	$(call test-python,$(PY313),build/venv-3.13)

# The published site as a reader's browser sees it: every page of _build/html (built by `make book`)
# opened in headless Chromium, failing on a JavaScript error, a broken internal link or image, or a
# code block that scrolls sideways. Chromium is Debian's package, installed here if missing (as root).
check-site: install
	command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)
	$(PY) tools/check_site.py _build/html

# The GitHub Actions workflows (.github/workflows), checked by actionlint.
check-workflows: install
	$(VENV)/bin/actionlint .github/workflows/*.yml

check-assignments: install
	$(PY) -m tinydynamo.course.check

book: install
	$(VENV)/bin/jupyter-book build . --warningiserror --keep-going --quiet
	@echo "Book built: $(CURDIR)/_build/html/index.html"

assignments: install
	$(PY) -m tinydynamo.course.release $(if $(FORCE),--force)

grade: install
	@test -n "$(A)" || (echo "usage: make grade A=<assignment>, e.g. make grade A=a01_bytecode"; exit 2)
	$(PY) -m tinydynamo.course.grade $(A)

# The repository a class's learners clone: no solutions/, no hidden tests, no tests/course/; its
# `make grade` grades the visible tests (book appendix A, "Teaching the course").
student-repo: install
	@test -n "$(DEST)" || (echo "usage: make student-repo DEST=<new directory>"; exit 2)
	$(PY) -m tinydynamo.course.student_repo $(DEST)

bench: install
	$(PY) -m tinydynamo.bench $(BENCH_ARGS)

demo: install
	$(PY) -m tinydynamo.bench.demo

clean:
	rm -rf _build
