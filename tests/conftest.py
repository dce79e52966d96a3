"""Shared fixtures. The full book build is session-scoped: the build test and the browser test share it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class BookBuild:
    returncode: int
    log: str
    html: Path


def _jupyter_book() -> str:
    exe = Path(sys.executable).with_name("jupyter-book")
    return str(exe) if exe.exists() else (shutil.which("jupyter-book") or "jupyter-book")


def _build(cmd: list[str], html: Path) -> BookBuild:
    """Run a book build command from the repository root; the log keeps stdout and stderr."""
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONWARNINGS="default"),
                          capture_output=True, text=True, timeout=900)
    return BookBuild(proc.returncode, proc.stdout + proc.stderr, html)


@pytest.fixture(scope="session")
def book_build(tmp_path_factory: pytest.TempPathFactory) -> BookBuild:
    """Build the whole book from a clean cache, exactly like `make book`, into a temporary folder."""
    out = tmp_path_factory.mktemp("book")
    return _build([_jupyter_book(), "build", str(ROOT), "-W", "-n", "--keep-going", "--path-output", str(out)],
                  out / "_build" / "html")


@pytest.fixture(scope="session")
def student_build(book_build: BookBuild) -> BookBuild:
    """The student edition (``make student``), built from the Jupyter cache of ``book_build``.

    Every notebook was executed by ``book_build``, so this build only re-reads and re-writes pages.
    """
    out = book_build.html.parent / "student"
    cache = book_build.html.parent / ".jupyter_cache"
    return _build([sys.executable, str(ROOT / "book" / "_ext" / "student_edition.py"),
                   "--out", str(out), "--cache", str(cache)], out)


@pytest.fixture(scope="session")
def solutions_build(book_build: BookBuild) -> BookBuild:
    """The teaching assistants' edition (``make solutions``), built from the Jupyter cache of ``book_build``
    (only the four instructor notebooks execute)."""
    out = book_build.html.parent / "solutions" / "html"  # its own jupyter_execute, as `make solutions`
    cache = book_build.html.parent / ".jupyter_cache"
    return _build([sys.executable, str(ROOT / "book" / "_ext" / "student_edition.py"), "--edition", "solutions",
                   "--out", str(out), "--cache", str(cache)], out)
