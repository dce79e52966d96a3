"""Helpers shared by the test modules of every group (tests/library, tests/book, tests/assignments,
tests/course). Fixtures live in ``conftest.py``; plain values and functions live here.

Import them by name (``from helpers import ROOT, toc_documents``): ``tests/`` is on ``sys.path`` (conftest).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

#: The repository's root folder.
ROOT = Path(__file__).resolve().parents[1]
#: The assignment notebooks students get, and the instructor notebooks they are released from.
ASSIGNMENT_DIR = ROOT / "book" / "assignments"
INSTRUCTOR_DIR = ASSIGNMENT_DIR / "instructor"


@dataclass(frozen=True)
class BookBuild:
    """A book build run by the tests: its exit status, its log and the folder of its HTML."""

    returncode: int
    log: str
    html: Path


def toc_documents() -> list[str]:
    """Every document of the book (``book/x``) in reading order, from ``_toc.yml``, the root first."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    docs = [toc["root"]]

    def walk(entries: list) -> None:
        for entry in entries:
            if "file" in entry:
                docs.append(entry["file"])
            walk(entry.get("sections", []))
            walk(entry.get("chapters", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    return docs


def reading_order() -> list[str]:
    """The documents' file names under book/ (``book/x`` -> ``x``) in reading order, the root first."""
    return [doc.removeprefix("book/") for doc in toc_documents()]


def numbered_chapters() -> list[str]:
    """The numbered chapters (``book/x``: Parts I to IV and the conclusion), in reading order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"] for part in toc["parts"] if part.get("numbered") for c in part["chapters"]]


@dataclass(frozen=True)
class FigureCell:
    """A code cell of a chapter whose output is a figure, from its ``mystnb: figure`` metadata."""

    line: int               # 1-based line of the ```{code-cell} fence
    name: str               # the figure's label, for {numref}
    caption: str
    alt: str                # mystnb: image: alt
    option_lines: int       # how many lines the ``---`` option block takes, fences included


def figure_cells(text: str) -> list[FigureCell]:
    """The code cells of a MyST notebook that carry ``mystnb: figure`` metadata in a ``---`` option block."""
    cells = []
    for m in re.finditer(r"^```\{code-cell\}[^\n]*\n(---\n(.*?)\n---\n)", text, re.S | re.M):
        options = yaml.safe_load(m.group(2)) or {}
        mystnb = options.get("mystnb") or {}
        if "figure" not in mystnb:
            continue
        figure, image = mystnb["figure"] or {}, mystnb.get("image") or {}
        cells.append(FigureCell(text.count("\n", 0, m.start()) + 1, str(figure.get("name", "")),
                                str(figure.get("caption", "")), str(image.get("alt", "")),
                                m.group(1).count("\n")))
    return cells
