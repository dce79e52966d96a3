# dptutor: two commands do everything on a machine with python3 and make.
#   make book   -> create/refresh .venv, install pinned requirements, build the site into _build/html
#                  (the build also makes the dptutor wheel, _build/wheel/, and offers it on the site)
#   make test   -> the linter (ruff), unit tests, a full -W -n book build into a temporary folder, and the browser test
#   make lab    -> JupyterLab (installed into .venv on first use) on book/assignments;
#                  extra flags with LAB_ARGS, e.g. make lab LAB_ARGS="--port 8899 --no-browser"
#   make solutions -> the teaching assistants' edition (solutions + the assignments' instructor notebooks)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
JB_FLAGS := -W -n --keep-going
# One BLAS thread per process: the book's arrays are small, and on a loaded machine (the test suite runs a
# book build beside pytest workers) multithreaded OpenBLAS spin-waits and can slow a cell's least-squares
# solve by two orders of magnitude. Set the variables in the environment to override.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1

.PHONY: all book student solutions test lint venv clean lab lab-check

all: book

# The venv is (re)installed whenever requirements.txt or pyproject.toml is newer than the stamp.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

venv: $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . $(JB_FLAGS)

# The student edition: the same site without the exercises' solutions, into _build/student
# (-W -n too). It shares the Jupyter cache of `make book`, so after `make book` nothing re-executes.
student: $(STAMP)
	$(BIN)/python book/_ext/student_edition.py --out _build/student --cache _build/.jupyter_cache

# The teaching assistants' edition: the full site in which each assignment page is rendered from its
# instructor notebook (book/assignments/instructor/*.md, with the reference solutions), into
# _build/solutions/html (-W -n; its executed notebooks stay in _build/solutions/jupyter_execute, away from
# the other editions' downloads). Same Jupyter cache: only the instructor notebooks execute, once.
# Never publish it to students. `make solutions COURSE=FOLDER` shows a course folder's answers instead.
solutions: $(STAMP)
	$(BIN)/python book/_ext/student_edition.py --edition solutions --out _build/solutions/html --cache _build/.jupyter_cache $(if $(COURSE),--course $(COURSE))

# The assignments in JupyterLab (optional: JupyterLab is not in requirements.txt; this version
# installs beside the pins without changing any). `make lab-check` tests the setup without a browser.
JUPYTERLAB := jupyterlab==4.6.6
LAB_STAMP := $(VENV)/.lab-installed

$(LAB_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check $(JUPYTERLAB) jupytext
	@touch $(LAB_STAMP)

# Jupyter refuses to start as root without --allow-root (e.g. in a container): pass it only then.
LAB_ARGS ?=
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(LAB_STAMP)
	$(BIN)/jupyter lab --notebook-dir=book/assignments $(ALLOW_ROOT) $(LAB_ARGS)

lab-check: $(LAB_STAMP)
	$(BIN)/jupyter lab --version
	$(BIN)/jupytext --to ipynb book/assignments/sampler.md -o $(VENV)/lab-check.ipynb
	$(BIN)/jupyter-execute --inplace $(VENV)/lab-check.ipynb
	@echo "lab-check: JupyterLab is installed and the environment's kernel executed book/assignments/sampler.md"

# Three pytest-xdist workers on CI's two cores: many tests wait on kernels, sandboxes and time limits, and with
# two workers the cores were idle a third of the time. The book build and the tests that read it run on one
# worker, every other module on whichever is free (tests/conftest.py). Speed checks count CPU time, so the
# extra load does not change a verdict. TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 3
test: $(STAMP) lint
	$(BIN)/python -m pytest --durations=25 $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadscope)

# The linter (configured in pyproject.toml); `make test` runs it first.
lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf _build .jupyter_cache jupyter_execute .pytest_cache .hypothesis
	find . -path ./.venv -prune -o -name __pycache__ -type d -exec rm -rf {} +
