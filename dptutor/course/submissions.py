"""Where the submissions are: the layouts of a submissions folder, and who each one belongs to.

Layouts
-------
A submissions folder holds, in any mix:

- notebooks (``.ipynb`` or ``.md``) directly in it: one submission each, named by its file name
  (``alice.ipynb``), as in a Canvas "Download Submissions" zip once unpacked;
- one sub-folder per student holding exactly one notebook, as Moodle's "Download all submissions"
  with "Download submissions in folders" gives: the submission is named ``<folder>/<file>``.

Hidden files and folders (``.ipynb_checkpoints``) and other files (PDFs, images) are ignored.  A
folder with no notebook at all, a sub-folder with no notebook or with several, and a notebook
deeper than one sub-folder are refused by :func:`find_submissions` with a ``ValueError`` that says
what to fix: the grader never guesses which notebook counts.

The student identifier (documented rule, :func:`student_identity`)
-------------------------------------------------------------------
The identifier comes from the sub-folder's name (folder layout) or the file name without its
extension (flat layout):

1. Moodle's folder name ``<Full Name>_<number>_assignsubmission_<plugin>_``: the identifier is
   ``<number>``, Moodle's participant number (the grading worksheet's ``Participant <number>``),
   the name ``<Full Name>``;
2. Canvas's file name ``<lastfirst>[_LATE]_<user id>_<attachment id>_<original name>``: the
   identifier is ``<user id>`` (Canvas's ``ID`` column), the name ``<lastfirst>``;
3. anything else (``alice.ipynb``, ``s1234567/``): the identifier and the name are the whole stem
   (``alice``, ``s1234567``); name the files or folders by your LMS's student identifier.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass
from pathlib import Path

from dptutor._validate import check_path, check_str
from dptutor.course.intake import look_named
from dptutor.course.textsafe import display_name

__all__ = ["NOTEBOOK_SUFFIXES", "Submission", "find_submissions", "student_identity"]

#: The files the grader reads as notebooks.
NOTEBOOK_SUFFIXES = (".ipynb", ".md")

_MOODLE = re.compile(r"(?P<name>.+?)_(?P<id>\d+)_assignsubmission_[A-Za-z]*_?")
_CANVAS = re.compile(r"(?P<name>[^_]+)(?:_LATE)?_(?P<id>\d+)_(?P<attachment>\d+)_(?P<rest>.+)")


def student_identity(name: str) -> tuple[str, str, str]:
    """``(identifier, full name, source)`` of a submission named ``name`` (the rule in the module
    docstring); ``source`` is ``"moodle"``, ``"canvas"`` or ``"plain"``."""
    name = check_str(name, "name", allow_empty=False)
    first = name.split("/", 1)[0]
    nested = "/" in name
    if nested:
        match = _MOODLE.fullmatch(first)
        if match:
            return match.group("id"), match.group("name"), "moodle"
        return first, first, "plain"
    stem = first.rsplit(".", 1)[0] if "." in first[1:] else first
    match = _CANVAS.fullmatch(stem)
    if match:
        return match.group("id"), match.group("name"), "canvas"
    return stem, stem, "plain"


@dataclass(frozen=True)
class Submission:
    """One submission: its name (``file`` in the scores CSV), its path and its student identifier."""

    name: str
    path: Path

    def __post_init__(self) -> None:
        check_str(self.name, "name", allow_empty=False)
        if not isinstance(self.path, Path):
            raise TypeError(f"path must be a pathlib.Path, got {type(self.path).__name__}")

    @property
    def student(self) -> str:
        return student_identity(self.name)[0]


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix in NOTEBOOK_SUFFIXES and not p.name.startswith(".")
                  and (p.is_symlink() or p.is_file()))


def find_submissions(folder: Path | str) -> list[Submission]:
    """The submissions in ``folder`` (layouts in the module docstring), in name order.

    ValueError (naming ``folder``) when there is none, or when a sub-folder does not hold exactly one
    notebook: the message lists every problem found; also when it, or a sub-folder, cannot be read.
    """
    folder = Path(check_path(folder, "folder"))
    status = look_named(folder, name="folder")
    if status is None or not stat.S_ISDIR(status.st_mode):
        raise ValueError(f"folder: {folder} is not a folder")
    try:
        return _found(folder)
    except OSError as exc:  # a folder that cannot be listed, an entry that cannot be looked at (EACCES)
        where = f" ({exc.filename})" if exc.filename is not None else ""
        raise ValueError(f"folder: {folder} cannot be read{where}: {exc.strerror or exc}") from None


def _found(folder: Path) -> list[Submission]:
    """What :func:`find_submissions` finds in the folder ``folder``."""
    found = [Submission(display_name(p.name), p) for p in _notebooks(folder)]
    problems = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")):
        inside = _notebooks(sub)
        label = display_name(sub.name)
        if len(inside) == 1:
            found.append(Submission(f"{label}/{display_name(inside[0].name)}", inside[0]))
        elif not inside:
            deeper = any(p.suffix in NOTEBOOK_SUFFIXES for p in sub.rglob("*"))
            problems.append(f"{label}/ holds no notebook" + (" at its top level (only deeper down: move it up)"
                                                               if deeper else ""))
        else:
            names = ", ".join(display_name(p.name) for p in inside)
            problems.append(f"{label}/ holds {len(inside)} notebooks ({names}): keep the one to grade")
    if problems:
        shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise ValueError(f"folder: {folder} has sub-folders that are not one student's submission: {shown}")
    if not found:
        zips = [p.name for p in folder.iterdir() if p.suffix.lower() == ".zip"]
        hint = f" (unzip {display_name(zips[0])} first)" if zips else ""
        raise ValueError(f"folder: {folder} holds no submission{hint}: expected notebooks (.ipynb or .md) "
                         "in it, or one sub-folder per student holding one notebook")
    names = [s.name for s in found]
    if len(set(names)) != len(names):  # cannot happen with one level, kept as a guard
        raise ValueError(f"folder: {folder} has two submissions with the same name")
    return sorted(found, key=lambda s: s.name)
