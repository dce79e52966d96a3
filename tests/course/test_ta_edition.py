"""The teaching assistants' edition built for a course (issue 36): its assignment pages are the course
folder's instructor notebooks, with the course's answers.  The page selection is tested here; the book
build itself is the same as ``make solutions``."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import ROOT
from dptutor.course.folders import new_course

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from student_edition import build_overrides, instructor_source  # noqa: E402


def _app(instructor_dir: str = "") -> SimpleNamespace:
    return SimpleNamespace(srcdir=str(ROOT), config=SimpleNamespace(dptutor_instructor_dir=instructor_dir))


def test_a_course_edition_shows_the_course_notebooks(tmp_path: Path) -> None:
    course = new_course(tmp_path / "dp-ta", "a secret for the TA edition")
    overrides = build_overrides(ROOT, tmp_path / "cache", "solutions", course=course.folder)
    folder = overrides["dptutor_instructor_dir"]
    assert Path(folder) == (course.folder / "private" / "instructor").resolve()
    assert overrides["dptutor_course_name"] == "dp-ta"
    page = instructor_source(_app(folder), "book/assignments/audit")
    assert page == Path(folder) / "audit.md"
    assert course.tokens["audit"] in page.read_text(encoding="utf-8")  # the course's own notebook
    assert instructor_source(_app(folder), "book/intro") is None
    # Without a course: the book's instructor notebooks, as before.
    assert instructor_source(_app(), "book/assignments/audit") == ROOT / "book" / "assignments" / "instructor" / "audit.md"
    assert "dptutor_instructor_dir" not in build_overrides(ROOT, tmp_path / "cache", "solutions")


def test_a_course_edition_is_refused_where_it_makes_no_sense(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a course folder"):
        build_overrides(ROOT, tmp_path / "cache", "solutions", course=tmp_path)
    with pytest.raises(ValueError, match="only the solutions edition"):
        build_overrides(ROOT, tmp_path / "cache", "student", course=tmp_path)
