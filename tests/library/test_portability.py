"""Nothing in the repository names a file outside it, so a fresh clone works on any machine.

Every tracked file (``git ls-files``) is scanned for absolute paths of a developer's machine (home
folders, ``/work``, ``/tmp`` as a data source, mount points, Windows drives) and for relative paths that
climb out of the repository (a parent folder's ``shared``). The project's data ship inside it (``dptutor/data``).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT

# Absolute paths that exist only on some machine. The lookbehind keeps URLs' and relative paths'
# middles (``https://host/tmp/``, ``docs/tmp/``) from matching; ``/usr/bin/env`` in a shebang is fine.
MACHINE_PATH = re.compile(
    r"(?<![\w.~/-])(?:/(?:work|tmp|root|mnt|media|srv|scratch|opt|Users)/"
    r"|/home/\w"
    r"|~/"
    r"|(?<![A-Za-z\\])[A-Z]:[\\/](?i:users|windows|program files|documents|work|data|te?mp)\b)"
)
# The names of folders that sit beside this repository on the developers' machines.
SIBLING_FOLDER = re.compile(r"(?<![\w.-])(?:shared/(?:reference|seeds)|\.\./shared)\b")
CLIMB = re.compile(r"(?<![\w.])((?:\.\./)+)[\w.-]*")

# Files allowed to name such paths, each with its reason.
ALLOWED = {
    # This test must spell out the patterns it forbids.
    "tests/library/test_portability.py",
    # The grader's sandbox names its own private /tmp and home, which exist only inside the sandbox.
    "dptutor/course/sandbox.py",
    # Hostile submissions and the sandbox's tests aim at paths outside the sandbox on purpose (startup
    # files, the instructor's home, /tmp) or hand the grader names that climb out, which it must refuse.
    "tests/course/test_hostile_sandbox.py",
    "tests/course/test_hostile_records.py",
    "tests/course/test_sandbox.py",
    "tests/assignments/test_grading_record.py",
    # The instructor pages keep a course's private folder outside the clone, in the instructor's home
    # (~/courses/...), and use the clone from there: examples for the reader, never read by the project.
    "book/instructors/setup.md",
    "book/instructors/grading.md",
    "book/instructors/gradescope.md",
}
# Binary or vendored data that is not text a program reads paths from.
SKIP_SUFFIXES = {".png", ".svg", ".pdf", ".ico", ".woff", ".woff2"}


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:  # an unpacked sdist, no git
        pytest.skip(f"not a git checkout: {exc}")
    return [name for name in out.decode().split("\0") if name]


def offending_lines(name: str, text: str) -> list[str]:
    """The lines of tracked file ``name`` that name a path outside the repository."""
    bad = []
    here = (ROOT / name).parent
    for number, line in enumerate(text.splitlines(), 1):
        if MACHINE_PATH.search(line) or SIBLING_FOLDER.search(line):
            bad.append(f"{name}:{number}: {line.strip()[:120]}")
            continue
        for match in CLIMB.finditer(line):
            # A page's links and {doc} targets are relative to the page's folder; code, Makefile and CI
            # may run from the repository root or from the file's folder: they must stay inside from both.
            bases = {here} if name.endswith((".md", ".rst")) else {here, ROOT}
            for base in bases:
                target = (base / match.group(0)).resolve()
                if target != ROOT and ROOT not in target.parents:
                    bad.append(f"{name}:{number}: {line.strip()[:120]}")
                    break
    return bad


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    bad: list[str] = []
    for name in tracked_files():
        if name in ALLOWED or Path(name).suffix in SKIP_SUFFIXES:
            continue
        data = (ROOT / name).read_bytes()
        if b"\0" in data:
            continue
        bad += offending_lines(name, data.decode("utf-8", errors="replace"))
    assert not bad, "paths outside the repository:\n" + "\n".join(bad)


# Samples that must be caught are split into adjacent literals, so that no tracked line names such a
# path itself (other checks, such as a before-stop hook, grep the repository for them).
@pytest.mark.parametrize("line,caught", [
    ('REFERENCE = Path("/' 'work/shared/reference/paper-results.json")', True),
    ("data = open('/home/alice/results.json')", True),
    ("cp /tmp/results.json .", True),
    ("see .." "/shared/reference/README.md", True),
    ("as in ``shared/reference/README.md``", True),
    ("paper = json.load(open('../../../data.json'))", True),
    (r"C:\Users\me\dptutor", True),
    ("~/dptutor/data", True),
    ("#!/usr/bin/env bash", False),
    ("https://github.com/org/" "work/tree", False),
    ("{doc}`../intro`", False),        # from book/assignments/, this is book/intro: inside
    (r"$f:\mathbb{R} \to \mathbb{R}$", False),
])
def test_the_scanner_catches_what_it_should(line: str, caught: bool) -> None:
    assert bool(offending_lines("book/assignments/index.md", line)) is caught


def test_code_may_not_climb_out_from_the_root() -> None:
    # From tests/ this is inside the repository, but code also runs from the root, where it is not.
    assert offending_lines("tests/test_x.py", "Path('../data/results.json')")
    assert not offending_lines("tests/test_x.py", "Path('data/results.json')")


def test_chapters_do_not_open_files() -> None:
    """Chapters get data from dptutor (package data), never by path, so a downloaded notebook runs."""
    for chapter in sorted((ROOT / "book").rglob("*.md")):
        text = chapter.read_text()
        for token in ("__file__", "read_text(", "open(", "json.load("):
            assert token not in text, f"{chapter.relative_to(ROOT)} uses {token}"
