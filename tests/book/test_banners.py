"""Every notebook the project writes from another starts with a banner that names its source and the command
that writes it again: the book's student notebooks (``python -m dptutor release``, from the instructor
notebooks) and the page sources and notebooks of the student edition (``make student``, from the chapters).
A course's notebooks (``python -m dptutor course new``) are checked with the course folders
(tests/course/test_course_instances.py).  Source-level checks; no book build.
"""
from __future__ import annotations

import shutil
import sys

import nbformat
import pytest

from helpers import ASSIGNMENT_DIR, INSTRUCTOR_DIR, ROOT

from dptutor.assignments import ASSIGNMENTS
from dptutor.course.release import RELEASE_COMMAND, release, released_notebook

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from student_edition import STUDENT_COMMAND, with_student_banner  # noqa: E402


def banner(text: str) -> str:
    """The first line after a MyST notebook's front matter (or its first line)."""
    if text.startswith("---\n"):
        text = text.split("\n---\n", 1)[1]
    return text.split("\n", 1)[0]


def names(line: str, source: str, command: str) -> bool:
    return line.startswith("<!-- Generated from ") and f" {source} " in line and f"`{command}`" in line


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_each_book_student_notebook_names_its_instructor_notebook_and_the_release_command(name: str) -> None:
    notebook = ASSIGNMENTS[name].notebook
    line = banner((ASSIGNMENT_DIR / notebook).read_text(encoding="utf-8"))
    assert names(line, f"book/assignments/instructor/{notebook}", RELEASE_COMMAND), line


def test_release_writes_the_banner_once(tmp_path) -> None:
    shutil.copytree(INSTRUCTOR_DIR, tmp_path / "instructor")
    first = {p.name: p.read_text(encoding="utf-8") for p in release(tmp_path)}
    again = {p.name: p.read_text(encoding="utf-8") for p in release(tmp_path)}
    assert first == again and sorted(first) == sorted(a.notebook for a in ASSIGNMENTS.values())
    for notebook, text in first.items():
        assert text.count("<!-- Generated from") == 1
        assert names(banner(text), f"book/assignments/instructor/{notebook}", RELEASE_COMMAND)


def test_check_catches_a_notebook_without_its_banner() -> None:
    text = (INSTRUCTOR_DIR / "sampler.md").read_text(encoding="utf-8")
    assert not names(banner(text), "book/assignments/instructor/sampler.md", RELEASE_COMMAND)
    assert names(banner(released_notebook(text, "sampler.md")), "book/assignments/instructor/sampler.md",
                 RELEASE_COMMAND)
    assert not names(banner(released_notebook(text, "sampler.md")), "book/assignments/instructor/audit.md",
                     RELEASE_COMMAND)


def test_student_edition_banner_on_a_page_source_and_on_a_notebook() -> None:
    source = "---\njupytext: {}\n---\n# Probability\n"
    line = banner(with_student_banner(source, "book/probability.md"))
    assert names(line, "book/probability.md", STUDENT_COMMAND), line
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Probability"),
                                         nbformat.v4.new_code_cell("x = 1")])
    out = with_student_banner(nbformat.from_dict(nb), "book/probability.md")
    nbformat.validate(nbformat.from_dict(out))       # still a valid notebook: the banner cell has an id
    assert [c["cell_type"] for c in out["cells"]] == ["markdown", "markdown", "code"]
    assert names(out["cells"][0]["source"].rstrip("\n"), "book/probability.md", STUDENT_COMMAND)
    assert out["cells"][1:] == nb["cells"]
