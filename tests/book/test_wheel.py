"""The wheel that the site offers installs into a fresh virtual environment and runs a downloaded chapter.

The environment is new and empty: no repository on ``sys.path`` (run from a temporary folder, no
``PYTHONPATH``), ``dptutor`` and its dependencies installed by pip from the wheel the book build offers,
with the ``[notebooks]`` extra that the install command in the intro names. The dependencies are pinned to
the versions of ``requirements.txt`` (as a constraints file), so pip can take them from its cache.
"""
from __future__ import annotations

import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, BookBuild

# A cheap chapter that imports dptutor's distributions, mechanisms and plotting.
CHAPTER = "laplace_mechanism"


def _run(cmd: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env["PATH"] = f"{cwd.parent / 'venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(book_build: BookBuild) -> Path:
    assert book_build.returncode == 0, "the book did not build"
    wheels = sorted((book_build.html / "_sources").glob("dptutor-*.whl"))
    assert len(wheels) == 1, f"the site offers {wheels}"
    return wheels[0]


def test_install_commands_name_the_offered_wheel(wheel: Path) -> None:
    for page in ("intro.md", "assignments/index.md"):
        text = (ROOT / "book" / page).read_text()
        commands = re.findall(r'pip install "([^"\[]+)\[notebooks\]"', text)
        assert commands == [wheel.name], f"{page}: {commands} (the build offers {wheel.name})"


def test_every_chapter_offers_the_wheel(book_build: BookBuild, wheel: Path) -> None:
    for page in sorted((book_build.html / "book").glob("*.html")):
        text = page.read_text()
        assert "download-wheel-button" in text and wheel.name in text, page.name


def test_wheel_runs_a_downloaded_notebook_in_a_fresh_environment(
        book_build: BookBuild, wheel: Path, tmp_path: Path) -> None:
    notebook = book_build.html / "_sources" / "book" / f"{CHAPTER}.ipynb"
    assert notebook.is_file(), "the site does not offer the chapter's notebook"
    work = tmp_path / "student"
    work.mkdir()
    (work / notebook.name).write_bytes(notebook.read_bytes())
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    proc = _run([base, "-m", "venv", str(venv)], work, 120)
    assert proc.returncode == 0, proc.stderr
    python = venv / "bin" / "python"
    pins = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if re.match(r"^[\w.-]+==", ln)]
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    proc = _run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check",
                 "-c", str(constraints), f"{wheel}[notebooks]"], work, 600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    # dptutor comes from the wheel, with every module of the repository's package and its package data.
    modules = sorted(m.name for m in pkgutil.walk_packages([str(ROOT / "dptutor")], "dptutor.")
                     if not m.name.endswith(".__main__"))  # importing a __main__ runs the CLI
    check = (f"import importlib, dptutor, dptutor.reference as r; [importlib.import_module(m) for m in {modules!r}]; "
             "print(dptutor.__file__); print(r.paper_loss('laplace', 1.0, 1))")
    proc = _run([str(python), "-c", check], work, 120)
    assert proc.returncode == 0, proc.stderr
    location, loss = proc.stdout.split()
    assert Path(location).is_relative_to(venv) and float(loss) > 0, proc.stdout

    # The downloaded notebook runs top to bottom in that environment's own kernel.
    execute = ("import nbclient, nbformat, sys; nb = nbformat.read(sys.argv[1], 4); "
               "nbclient.NotebookClient(nb, timeout=300, kernel_name='python3').execute(); "
               "print('executed', len(nb.cells))")
    proc = _run([str(python), "-c", execute, notebook.name], work, 600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith("executed"), proc.stdout
