"""The assignments' numbers follow the four-week schedule of book/course.md (issue 36): each is handed out
in the order of its number, listed in that order in the table of contents, and due within the four weeks."""

from __future__ import annotations

import re

import yaml

from helpers import ASSIGNMENT_DIR, INSTRUCTOR_DIR, ROOT

NAMES = ("sampler", "mechanism", "audit", "pair_audit", "selection")


def _number(path) -> int:
    match = re.search(r"^# Assignment (\d+):", path.read_text(encoding="utf-8"), re.M)
    assert match, path
    return int(match.group(1))


def test_the_numbers_follow_the_schedule() -> None:
    course = (ROOT / "book" / "course.md").read_text(encoding="utf-8")
    schedule = course[course.index("## A four-week schedule"):]
    rows = [line for line in schedule.splitlines() if re.match(r"\| [1-4]\. ", line)]
    handed_out = [m.group(1) for row in rows for m in re.finditer(r"\{doc\}`assignments/(\w+)`", row)]
    assert sorted(handed_out) == sorted(NAMES)
    numbers = {name: _number(ASSIGNMENT_DIR / f"{name}.md") for name in NAMES}
    assert numbers == {name: _number(INSTRUCTOR_DIR / f"{name}.md") for name in NAMES}
    assert [numbers[name] for name in handed_out] == [1, 2, 3, 4, 5], numbers
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    listed = re.findall(r"file: book/assignments/(\w+)\n", toc)
    assert [n for n in listed if n in NAMES] == handed_out
    yaml.safe_load(toc)


def test_nothing_is_due_after_the_fourth_week() -> None:
    course = (ROOT / "book" / "course.md").read_text(encoding="utf-8")
    last = next(line for line in course.splitlines() if line.startswith("| 4. "))
    assert "due" in last and "after the last session" not in last and "a week after" not in last, last
