"""Instructor notebook -> student notebook: drop the solution blocks, keep the stubs.

The instructor notebooks (``book/assignments/instructor/``) hold the solutions between
``# BEGIN SOLUTION`` / ``# END SOLUTION`` lines (``<!-- BEGIN SOLUTION -->`` / ``<!-- END
SOLUTION -->`` in Markdown); :func:`student_version` turns one into the student notebook, and
:func:`release` (``python -m dptutor release``) rewrites ``book/assignments/*.md`` from them.
"""

from __future__ import annotations

import re
from pathlib import Path

from dptutor.assignments.registry import ASSIGNMENTS

__all__ = ["BEGIN_MARKER", "END_MARKER", "book_assignments_folder", "student_version", "release"]

#: A line that opens a solution block (in code or in Markdown).
BEGIN_MARKER = re.compile(r"^(\s*)(#|<!--)\s*BEGIN SOLUTION\s*(-->)?\s*$")
#: A line that closes a solution block.
END_MARKER = re.compile(r"^\s*(#|<!--)\s*END SOLUTION\s*(-->)?\s*$")
_STUB = re.compile(r"^(\s*)#\s?STUB:\s?(.*)$")


def student_version(text: str) -> str:
    """The student notebook: ``text`` with every solution block replaced by its stub lines.

    A block runs from a ``# BEGIN SOLUTION`` line to a ``# END SOLUTION`` line (in Markdown:
    ``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->``) and is dropped, markers included.  A
    comment line ``# STUB: <code>`` (a comment in the instructor version, usually right after a
    block) becomes ``<code>``, at the same indentation, in the student version.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out: list[str] = []
    inside = False
    start = 0
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if BEGIN_MARKER.match(line):
            if inside:
                raise ValueError(f"text: line {number}: BEGIN SOLUTION inside the block opened on line {start}")
            inside, start = True, number
            continue
        if END_MARKER.match(line):
            if not inside:
                raise ValueError(f"text: line {number}: END SOLUTION without BEGIN SOLUTION")
            inside = False
            continue
        stub = _STUB.match(line)
        if stub:
            out.append(stub[1] + stub[2] + "\n")
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"text: the solution block opened on line {start} is never closed")
    return "".join(out)


def book_assignments_folder() -> Path:
    """The book's `book/assignments` folder (student notebooks; solutions in `instructor/`)."""
    return Path(__file__).resolve().parents[2] / "book" / "assignments"


def release(folder: Path | str | None = None) -> list[Path]:
    """Rewrite each student notebook ``<folder>/<name>.md`` from ``<folder>/instructor/<name>.md``."""
    if folder is not None and not isinstance(folder, (str, Path)):
        raise TypeError(f"folder must be a path, got {type(folder).__name__}")
    folder = Path(folder) if folder is not None else book_assignments_folder()
    if not (folder / "instructor").is_dir():
        raise ValueError(f"folder: {folder} has no instructor/ subfolder")
    written = []
    for a in ASSIGNMENTS.values():
        source = folder / "instructor" / a.notebook
        target = folder / a.notebook
        target.write_text(student_version(source.read_text(encoding="utf-8")), encoding="utf-8")
        written.append(target)
    return written
