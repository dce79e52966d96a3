"""The student edition (``make student``) leaves every solution out; the site never shows the
assignments' reference solutions.

The student edition is built from the execution cache of the full build (``book_build``), the way
``make student`` reuses the cache of ``make book``.  Each solution is identified by the first line of
its text (the chapter conventions make it a distinctive sentence), which must appear on the full
site and nowhere in the student edition: not in its pages, nor in the page sources behind the
download button, nor in the search index.
"""
from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest

from helpers import ROOT, BookBuild

BOOK = ROOT / "book"
INSTRUCTOR = BOOK / "assignments" / "instructor"
ASSIGNMENT_PAGES = ["index", "sampler", "mechanism", "audit", "pair_audit", "selection", "bughunt"]

sys.path.insert(0, str(BOOK / "_ext"))
from student_edition import OMITTED, STUDENT_COMMAND, strip_solutions, strip_solutions_notebook  # noqa: E402

from dptutor.course.release import BEGIN_MARKER as _BEGIN  # noqa: E402  (the marker the release step looks for)

_OPEN = re.compile(r"^(`{3,}|:{3,})\{solution-start\}")
_FENCE = re.compile(r"^(`{3,}|:{3,})")
_OPTION = re.compile(r"^:[\w-]+:")


def normalise(text: str) -> str:
    """Undo what rendering does to plain text: entities, smart quotes and dashes, whitespace."""
    text = html.unescape(text)
    for src, dst in (("’", "'"), ("‘", "'"), ("“", '"'), ("”", '"'), ("…", "..."),
                     ("—", "-"), ("–", "-"), ("---", "-"), ("--", "-")):
        text = text.replace(src, dst)
    return re.sub(r"\s+", " ", text).strip()


def page_text(path: Path) -> str:
    """The text of an HTML page (tags removed without spaces, so highlighted code stays intact)."""
    raw = path.read_text(errors="replace")
    raw = re.sub(r"<(script|style)\b.*?</\1>", "", raw, flags=re.S)
    return normalise(re.sub(r"<[^>]+>", "", raw))


def fragment(line: str) -> str:
    """The longest piece of a Markdown line without markup (math, roles, emphasis, links)."""
    line = re.sub(r"^\s*(?:[-*+>#]+|\d+\.)\s+", "", line)
    pieces = [normalise(p).strip(" :;,.") for p in re.split(r"[`$*_{}\[\]()<>\\|]", line)]
    return max(pieces, key=len)


def solution_first_lines() -> list[tuple[str, int, str]]:
    """(file, line number, fragment of the first line) of every gated solution in the book."""
    found = []
    for path in sorted(BOOK.rglob("*.md")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            match = _OPEN.match(line)
            if not match:
                continue
            j = i + 1
            while j < len(lines) and lines[j].strip() != match.group(1):  # the directive's options
                j += 1
            j += 1
            # The first line of text; if the solution opens with a code cell, its first code line.
            while j < len(lines) and (not lines[j].strip() or _FENCE.match(lines[j]) or _OPTION.match(lines[j])):
                j += 1
            found.append((str(path.relative_to(ROOT)), j + 1, fragment(lines[j])))
    return found


def all_text(site: Path) -> dict[Path, str]:
    """Every text file of a site: pages as text, everything else (sources, search index) raw."""
    texts = {}
    for path in site.rglob("*"):
        if not path.is_file() or path.suffix in (".png", ".svg", ".woff", ".woff2", ".ttf", ".ico", ".gif", ".jpg"):
            continue
        if path.suffix == ".html":
            texts[path] = page_text(path)
        elif path.suffix == ".ipynb":  # cell sources and text outputs, not JSON-escaped
            texts[path] = normalise(notebook_text(json.loads(path.read_text())))
        else:
            try:
                texts[path] = normalise(path.read_text())
            except UnicodeDecodeError:
                continue
    return texts


def notebook_text(nb: dict) -> str:
    parts = []
    for cell in nb.get("cells", []):
        parts.append("".join(cell.get("source", "")))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            parts += ["".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def full_pages(book_build: BookBuild) -> dict[Path, str]:
    assert book_build.returncode == 0, "the book did not build"
    return {p: page_text(p) for p in (book_build.html / "book").rglob("*.html")}


@pytest.fixture(scope="module")
def student_files(student_build: BookBuild) -> dict[Path, str]:
    assert student_build.returncode == 0, student_build.log[-6000:]
    return all_text(student_build.html)


def test_student_edition_builds_from_the_cache(student_build: BookBuild) -> None:
    assert student_build.returncode == 0, student_build.log[-6000:]
    assert "build succeeded" in student_build.log
    assert "Executing notebook" not in student_build.log, "the student edition re-executed notebooks"
    for page in ["index.html", *(f"book/{name}.html" for name in ("intro", "probability", "sanity_check"))]:
        assert (student_build.html / page).is_file(), page


def test_make_student_runs_the_same_script() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nstudent:", 1)[1].split("\n\n", 1)[0]
    assert "book/_ext/student_edition.py" in recipe and "_build/student" in recipe
    assert "_build/.jupyter_cache" in recipe  # the cache `make book` uses


def test_every_solution_is_on_the_full_site_and_absent_from_the_student_edition(
    full_pages: dict[Path, str], student_files: dict[Path, str]
) -> None:
    solutions = solution_first_lines()
    assert len(solutions) >= 3, "the chapters have exercises with solutions"
    full = "\n".join(full_pages.values())
    for where, line, text in solutions:
        assert len(text) >= 12, f"{where}:{line}: the first line of a solution should be a distinctive sentence"
        assert text in full, f"{where}:{line}: {text!r} is not on the full site (the search is broken)"
        leaks = [str(p) for p, content in student_files.items() if text in content]
        assert not leaks, f"{where}:{line}: solution text {text!r} is in the student edition: {leaks}"


def test_student_edition_keeps_the_exercises(student_build: BookBuild, full_pages: dict[Path, str]) -> None:
    full = (student_build.html.parent / "html" / "book" / "probability.html").read_text()
    student = (student_build.html / "book" / "probability.html").read_text()
    assert 'class="solution' in full and 'class="solution' not in student
    assert student.count('class="exercise') == full.count('class="exercise') > 0


def test_student_sources_have_the_solutions_stripped(student_build: BookBuild) -> None:
    """The downloads (page sources, executed notebooks) keep the exercises, not the solutions."""
    sources = list((student_build.html / "_sources").rglob("*.md"))
    notebooks = list((student_build.html / "_sources").rglob("*.ipynb"))
    assert sources
    stripped = 0
    for path in sources + notebooks:
        text = path.read_text()
        assert "{solution" not in text, path
        assert path.suffix == ".md" or json.loads(text)["cells"], path
        if OMITTED in text:   # rewritten by the student edition: the banner of generated notebooks
            assert f"`{STUDENT_COMMAND}`" in text and "<!-- Generated from book/" in text, path
        stripped += text.count(OMITTED) if path.suffix == ".md" else 0
    assert stripped == len(solution_first_lines())


STRIP_EXAMPLE = ("a\n```{solution-start} ex-1\n:class: dropdown\n```\nsecret\n```{code-cell} ipython3\nx = 1\n```\n"
                 "```{solution-end}\n```\nb\n````{solution} ex-2\nplain secret\n````\nc\n")


def test_strip_solutions() -> None:
    assert strip_solutions(STRIP_EXAMPLE) == f"a\n{OMITTED}\nb\n{OMITTED}\nc\n"
    with pytest.raises(ValueError, match="never closed"):
        strip_solutions("```{solution-start} ex-1\n```\nsecret\n")


def test_strip_solutions_from_a_notebook() -> None:
    import jupytext
    import nbformat

    nb = json.loads(nbformat.writes(jupytext.reads(STRIP_EXAMPLE, fmt="md:myst")))
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "code", "markdown"]  # the solution spans 3 cells
    cells = strip_solutions_notebook(nb)["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "markdown"]
    text = notebook_text({"cells": cells})
    assert "secret" not in text and "x = 1" not in text and text.count(OMITTED) == 2
    assert "a" in text and "b" in text and "c" in text


# ---------------------------------------------------------------------------------------------
# the assignments: blank notebooks on both sites, reference solutions on neither
# ---------------------------------------------------------------------------------------------


def reference_solution_lines() -> list[tuple[str, str]]:
    """(file, fragment) of the first line of every solution block of the instructor notebooks."""
    found = []
    for path in sorted(INSTRUCTOR.glob("*.md")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if _BEGIN.match(line):
                first = next(l for l in lines[i + 1:] if l.strip() and not _FENCE.match(l) and not _OPTION.match(l)
                             and "BEGIN SLOT" not in l)  # a course slot's marker: the solution follows
                found.append((path.name, fragment(first)))
    return found


@pytest.mark.parametrize("edition", ["full", "student"])
def test_assignment_solutions_are_never_published(edition: str, book_build: BookBuild,
                                                  student_files: dict[Path, str]) -> None:
    site = book_build.html if edition == "full" else book_build.html.parent / "student"
    files = all_text(site) if edition == "full" else student_files
    solutions = reference_solution_lines()
    assert len(solutions) >= 6
    for name, text in solutions:
        assert len(text) >= 12, (name, text)
        leaks = [str(p) for p, content in files.items() if text in content]
        assert not leaks, f"instructor solution of {name} ({text!r}) is published: {leaks}"
    # the instructor notebooks never reach a site (the "For instructors" pages, book/instructors/, are public)
    assert not any("instructor" in p.relative_to(site).parts for p in files)
    for page in ASSIGNMENT_PAGES:
        assert (site / "book" / "assignments" / f"{page}.html").is_file(), page
        assert (site / "_sources" / "book" / "assignments" / f"{page}.md").is_file(), page
    assert "not implemented yet" in page_text(site / "book" / "assignments" / "sampler.html")
