"""The whole book builds with -W -n from a clean cache, and the site works offline."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from helpers import ROOT, BookBuild, reading_order

CHAPTERS = reading_order()
CDN = re.compile(r"cdn\.jsdelivr|mathjax@|cdnjs|unpkg\.com|googleapis|fonts\.gstatic")
REMOTE_ASSET = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)


def test_book_builds_without_warnings(book_build: BookBuild) -> None:
    assert book_build.returncode == 0, book_build.log[-6000:]
    assert "build succeeded" in book_build.log


def test_every_chapter_is_built(book_build: BookBuild) -> None:
    for name in CHAPTERS:
        assert (book_build.html / "book" / f"{name}.html").is_file(), name
    index = (book_build.html / "index.html").read_text()
    assert "book/intro.html" in index


def test_no_page_loads_from_the_network(book_build: BookBuild) -> None:
    pages = list(book_build.html.rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(errors="replace")
        assert not CDN.search(text), f"{page} references a CDN"
        # Plain <a href> links (citations, DOIs) are fine; assets must be served by the site itself.
        bad = [m.group(0) for m in REMOTE_ASSET.finditer(text) if not m.group(0).lower().startswith("<a")]
        assert not bad, f"{page} loads remote assets: {bad[:3]}"


def test_mathjax_is_served_by_the_site(book_build: BookBuild) -> None:
    page = (book_build.html / "book" / "laplace_mechanism.html").read_text()
    match = re.search(r'<script[^>]+src="([^"]*mathjax[^"]*)"', page)
    assert match, "no MathJax script on a page with math"
    src = match.group(1).split("?")[0]
    assert not src.startswith(("http:", "https:", "//")), src
    assert (book_build.html / "book" / src).resolve().is_file(), src


def test_no_notebook_outputs_are_committed() -> None:
    """What git tracks (or, outside a git checkout, what the folder holds): a student's JupyterLab session
    (``make lab``) may leave ``.ipynb`` files and checkpoints in book/assignments, which .gitignore keeps
    out of the repository, and which this test must not mistake for committed outputs."""
    import subprocess

    try:
        listed = subprocess.run(["git", "ls-files", "-z", "book"], cwd=ROOT, capture_output=True, check=True).stdout
        files = [name for name in listed.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # an unpacked sdist, no git
        files = [str(p.relative_to(ROOT)) for p in (ROOT / "book").rglob("*") if ".ipynb_checkpoints" not in p.parts]
    assert files, "no sources found under book/"
    committed = [name for name in files if name.endswith(".ipynb")]
    assert not committed, f"chapters are MyST Markdown notebooks: {committed}"


# ---------------------------------------------------------------------------------------------
# A downloaded chapter runs from top to bottom: the first code cell shows every import.
# ---------------------------------------------------------------------------------------------

HIDING_TAGS = {"remove-cell", "remove-input", "hide-cell", "hide-input", "remove_cell", "remove_input"}


def chapter_code_cells(path: Path) -> list[tuple[list[str], str]]:
    """(tags, source) of each code cell of a MyST notebook, in order."""
    import jupytext

    notebook = jupytext.read(path, fmt="md:myst")
    return [(list(cell.metadata.get("tags", [])), cell.source) for cell in notebook.cells
            if cell.cell_type == "code"]


def imported_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def import_problems(cells: list[tuple[list[str], str]]) -> list[str]:
    """What keeps a chapter's imports from being all visible in its first code cell."""
    if not cells:
        return []
    problems = []
    tags, first = cells[0]
    hidden = HIDING_TAGS & set(tags)
    if hidden:
        problems.append(f"the first code cell is hidden ({', '.join(sorted(hidden))})")
    imported = imported_names(ast.parse(first))
    used: set[str] = set()
    for number, (_, source) in enumerate(cells[1:], 2):
        tree = ast.parse(source)
        late = imported_names(tree)
        if late:
            problems.append(f"code cell {number} imports {sorted(late)}: move the imports to the first cell")
        used |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.id for n in ast.walk(ast.parse(first)) if isinstance(n, ast.Name)}
    unused = imported - used
    if unused:
        problems.append(f"the first cell imports {sorted(unused)}, which no cell uses")
    return problems


@pytest.mark.parametrize("name", [p.stem for p in sorted((ROOT / "book").glob("*.md"))])
def test_first_code_cell_shows_every_import(name: str) -> None:
    problems = import_problems(chapter_code_cells(ROOT / "book" / f"{name}.md"))
    assert not problems, f"{name}: " + "; ".join(problems)


def test_import_check_catches_a_hidden_or_late_import() -> None:
    # The case that a reader met: the imports sat in a removed cell, and a later cell imported more.
    hidden = [(["remove-cell"], "import sympy as sp"), ([], "from dptutor import plotting\nsp.Symbol('x')")]
    problems = import_problems(hidden)
    assert any("hidden" in p for p in problems) and any("cell 2 imports" in p for p in problems)
    unused = [([], "import math\nimport numpy as np"), ([], "np.zeros(3)")]
    assert import_problems(unused) == ["the first cell imports ['math'], which no cell uses"]
    assert import_problems([([], "import numpy as np"), ([], "np.ones(2)")]) == []


# ---------------------------------------------------------------------------------------------
# Every image of a chapter has alt text that describes it.
# ---------------------------------------------------------------------------------------------

IMG = re.compile(r"<img\b[^>]*>", re.I)
ALT = re.compile(r"""\balt=(["'])(.*?)\1""", re.I | re.S)
FILE_NAME = re.compile(r"\.(png|svg|jpe?g|gif|webp)\b|^[0-9a-f]{8,}|^[\w.-]+$", re.I)


def alt_text_problems(html: str) -> list[str]:
    """The <img> tags of a page whose alt text is missing, a file name, a hash, or too short to describe."""
    problems = []
    for tag in IMG.findall(html):
        match = ALT.search(tag)
        alt = match.group(2).strip() if match else ""
        if len(alt.split()) < 6 or FILE_NAME.search(alt):
            problems.append(f"{tag[:160]} (alt: {alt!r})")
    return problems


def test_alt_text_check_rejects_file_names() -> None:
    assert alt_text_problems('<img src="a.png" alt="a.png">')
    assert alt_text_problems('<img src="a.png" alt="3f2a9c0b1d2e4f5a6b7c8d9e0f1a2b3c">')
    assert alt_text_problems('<img src="a.png">')
    assert not alt_text_problems('<img src="a.png" alt="Two Laplace densities centred at 0 and 1">')


def test_every_image_has_descriptive_alt_text(book_build: BookBuild) -> None:
    assert book_build.returncode == 0, "the book did not build"
    problems = []
    for page in sorted((book_build.html / "book").rglob("*.html")):
        problems += [f"{page.name}: {p}" for p in alt_text_problems(page.read_text())]
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Numbering: the paper's numbers are always labelled as the paper's; the book's come from labels.
# ---------------------------------------------------------------------------------------------

NUMBERED = re.compile(r"\b(Eqs?\.|Theorems?|Definitions?|Sections?|Figures?|Lemma|Corollary|Proposition|"
                      r"Exercises?|Chapters?|Appendix|[Ff]ootnote)\s+\(?[0-9A-Z]+(?:\.[0-9]+)?\b")
OWNER = re.compile(r"(paper's|paper’s|\bits|\btheir)\W[^.;:]{0,30}$")


def prose(path: Path) -> str:
    """A chapter's text outside code cells, as one line (a label may sit at the end of the previous line)."""
    text = re.sub(r"```\{code-cell\}.*?\n```", " ", path.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", text)


def unlabelled_numbers(text: str) -> list[str]:
    """Typed numbers of equations, theorems, sections, ... not labelled as the paper's."""
    return [text[max(0, m.start() - 40):m.end()] for m in NUMBERED.finditer(text)
            if not OWNER.search(text[max(0, m.start() - 45):m.start()])]


def test_numbering_check_catches_a_bare_number() -> None:
    assert unlabelled_numbers("the proof of Theorem 3.1 shows")
    assert unlabelled_numbers("the Laplace mechanism of Definition 6.1 is")
    assert not unlabelled_numbers("the paper's Theorem 3.1 shows, and its Eqs. 2 and 3")


@pytest.mark.parametrize("name", [p.stem for p in sorted((ROOT / "book").glob("*.md")) if p.stem != "paper_map"])
def test_typed_numbers_are_the_papers(name: str) -> None:
    """The book's own numbers change as chapters move, so they come from {ref}/{numref}/{prf:ref}; a typed
    number is the paper's and says so. (The appendix paper_map is a table of the paper's numbers.)"""
    assert not unlabelled_numbers(prose(ROOT / "book" / f"{name}.md"))


def test_every_paper_equation_is_tagged_and_targeted() -> None:
    tags: dict[int, str] = {}
    for path in sorted((ROOT / "book").glob("*.md")):
        text = path.read_text()
        assert not re.search(r"\\tag\{\d", text), f"{path.name}: a bare \\tag number; write \\tag{{paper's Eq. N}}"
        for match in re.finditer(r"\(paper-eq-(\d+)\)=\n(\$\$|\\begin\{equation\*\})\n(.*?)(\$\$|\\end\{equation\*\})",
                                 text, flags=re.S):
            assert f"\\tag{{paper's Eq. {match.group(1)}}}" in match.group(3), f"{path.name}: paper-eq-{match.group(1)}"
            tags[int(match.group(1))] = path.name
    assert sorted(tags) == list(range(1, 21)), f"the paper's Eqs. 1-20 should each have a target: {sorted(tags)}"
