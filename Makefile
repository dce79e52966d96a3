# dptutor: two commands do everything on a machine with python3 and make.
#   make book   -> create/refresh .venv, install pinned requirements, build the site into _build/html
#                  (the build also makes the dptutor wheel, _build/wheel/, and offers it on the site)
#   make test   -> unit tests, a full -W -n book build into a temporary folder, and the browser test
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
JB_FLAGS := -W -n --keep-going

.PHONY: all book student test venv clean

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

test: $(STAMP)
	$(BIN)/python -m pytest

clean:
	rm -rf _build .jupyter_cache jupyter_execute .pytest_cache .hypothesis
	find . -path ./.venv -prune -o -name __pycache__ -type d -exec rm -rf {} +
