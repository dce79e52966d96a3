"""Instructor notebook -> student notebook: drop the solution blocks, keep the stubs.

The instructor notebooks (``book/assignments/instructor/``) hold the solutions between
``# BEGIN SOLUTION`` / ``# END SOLUTION`` lines (``<!-- BEGIN SOLUTION -->`` / ``<!-- END
SOLUTION -->`` in Markdown); :func:`student_version` turns one into the student notebook, and
:func:`release` (``python -m dptutor release``) rewrites ``book/assignments/*.md`` from them, each with a
banner (:func:`with_banner`) that names its instructor notebook and the command.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from dptutor._validate import check_str
from dptutor.assignments.registry import ASSIGNMENTS
from dptutor.course.intake import look_named, read_named
from dptutor.grid_files import atomic_write_text

__all__ = ["BEGIN_MARKER", "END_MARKER", "RELEASE_COMMAND", "book_assignments_folder", "student_version",
           "with_banner", "released_notebook", "release"]

#: The command that rewrites the book's student notebooks; their banners name it.
RELEASE_COMMAND = "python -m dptutor release"

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


def with_banner(text: str, source: str, command: str) -> str:
    """``text`` (a MyST notebook) with a banner right after its front matter, as a Markdown comment (it
    renders as nothing): generated from ``source`` by ``command`` (edit the source and run it again)."""
    check_str(text, "text")
    banner = (f"<!-- Generated from {check_str(source, 'source')} by `{check_str(command, 'command')}`: to change "
              "it for every copy, edit the source and run the command again. -->\n")
    if text.startswith("---\n"):
        end = text.index("\n---\n", 4) + 5 if "\n---\n" in text[3:] else 0
        return text[:end] + banner + text[end:]
    return banner + text


def released_notebook(text: str, notebook: str) -> str:
    """The book's student notebook ``book/assignments/<notebook>`` made from its instructor notebook's
    ``text``: the solutions dropped (:func:`student_version`) and a banner naming the instructor notebook
    and :data:`RELEASE_COMMAND` on top (:func:`with_banner`)."""
    source = f"book/assignments/instructor/{check_str(notebook, 'notebook')}"
    return with_banner(student_version(text), source, RELEASE_COMMAND)


def book_assignments_folder() -> Path:
    """The book's `book/assignments` folder (student notebooks; solutions in `instructor/`)."""
    return Path(__file__).resolve().parents[2] / "book" / "assignments"


def release(folder: Path | str | None = None) -> list[Path]:
    """Rewrite each student notebook ``<folder>/<name>.md`` from ``<folder>/instructor/<name>.md``."""
    if folder is not None and not isinstance(folder, (str, Path)):
        raise TypeError(f"folder must be a path, got {type(folder).__name__}")
    folder = Path(folder) if folder is not None else book_assignments_folder()
    found = look_named(folder / "instructor", name="folder")  # ValueError naming folder if it cannot be looked at
    if found is None or not stat.S_ISDIR(found.st_mode):
        raise ValueError(f"folder: {folder} has no instructor/ subfolder")
    texts = {}  # every notebook is read and checked before any is written
    for a in ASSIGNMENTS.values():
        source = folder / "instructor" / a.notebook
        # read once (no check before): missing, a FIFO, a folder, unreadable are one ValueError naming folder
        data = read_named(source, 16 << 20, role="the instructor notebook", name="folder", follow_links=True)
        try:
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
        except UnicodeDecodeError as exc:
            raise ValueError(f"folder: {source} cannot be read ({exc})") from None
        texts[folder / a.notebook] = released_notebook(text, a.notebook)
    for target, text in texts.items():
        atomic_write_text(target, text)  # an interrupted run leaves the old notebook, never a part
    return list(texts)
