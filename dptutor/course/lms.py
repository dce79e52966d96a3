"""Grades for a learning management system: a CSV that Canvas or Moodle imports.

``python -m dptutor export-lms canvas|moodle ASSIGNMENT SCORES.csv OUT.csv`` reads a scores CSV of
the grader (:mod:`dptutor.course.scores`) and writes one row per student, identified by the rule
of :func:`dptutor.course.submissions.student_identity` applied to the submission's name:

``canvas``
    Canvas's gradebook import ("Gradebook > Import"): columns ``Student``, ``ID``, ``SIS User
    ID``, ``SIS Login ID``, ``Section`` and one assignment column holding the total.  A
    submission downloaded from Canvas (``smithjane_12345_678_sampler.ipynb``) fills ``ID`` with
    the Canvas user id; any other name fills ``SIS User ID`` with the identifier (name the files
    by your institution's student number).  Name the assignment column as Canvas shows it
    (``--column "Sampler (123)"``, the Canvas export's header) to update that assignment; another
    name makes Canvas create a new column.
``moodle``
    Moodle's assignment grading worksheet ("Grading action > Upload grading worksheet"):
    columns ``Identifier`` (``Participant <number>``, from a "submissions in folders" download
    ``Jane Smith_12345_assignsubmission_file_/``), ``Full name``, ``Grade``, ``Maximum Grade``,
    ``Last modified (grade)`` (left empty: Moodle then never skips a row as older than its grade)
    and ``Feedback comments``.  Identifiers that are not Moodle participant numbers are refused:
    use Moodle's download layout.

Two submissions of one student are refused (regrade or remove one first): the export never
guesses which counts.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dptutor._validate import check_choice, check_path, check_real, check_str
from dptutor.assignments.feedback import fmt_points
from dptutor.assignments.registry import get_assignment
from dptutor.course.intake import look_named
from dptutor.course.textsafe import csv_cell, csv_document
from dptutor.course.scores import read_scores
from dptutor.course.submissions import student_identity
from dptutor.grid_files import atomic_write_text

__all__ = ["LMS_FORMATS", "lms_rows", "export_lms"]

#: The grade-import formats :func:`export_lms` writes.
LMS_FORMATS = ("canvas", "moodle")

_CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
_MOODLE_HEADER = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)", "Feedback comments"]


def lms_rows(lms: str, assignment: str, scores: Path | str, *, column: str | None = None,
             out_of: float | None = None) -> list[list[str]]:
    """The rows (header first) of the ``lms`` grade import for the scores CSV ``scores`` of ``assignment``;
    ``out_of`` rescales each total to that many points (the LMS assignment's maximum grade)."""
    lms = check_choice(lms, "lms", LMS_FORMATS)
    a = get_assignment(assignment)
    try:
        records = read_scores(check_path(scores, "scores"), a)
    except ValueError as exc:
        raise ValueError(str(exc).replace("path: ", "scores: ", 1)) from None
    if column is not None and not check_str(column, "column").strip():
        raise ValueError("column must not be blank")
    if out_of is not None:
        out_of = check_real(out_of, "out_of", low=0.0)
        if not out_of > 0:
            raise ValueError("out_of must be positive")
    if not records:
        raise ValueError(f"scores: {scores} has no rows to export")
    seen: dict[str, str] = {}
    out = []
    for r in records:
        ident, name, source = student_identity(r.result.file)
        if ident in seen:
            raise ValueError(f"scores: student {ident!r} has two submissions ({seen[ident]} and {r.result.file}): "
                             "remove one from the scores file's folder and regrade, then export")
        seen[ident] = r.result.file
        top_points = sum(r.question_points().values())
        scale = out_of / top_points if out_of is not None and top_points > 0 else 1.0
        total, top = fmt_points(round(r.total * scale, 2)), fmt_points(out_of if out_of is not None else top_points)
        if lms == "canvas":
            out.append([csv_cell(name), ident if source == "canvas" else "", "" if source == "canvas" else csv_cell(ident),
                        "", "", total])
        else:
            if source != "moodle":
                raise ValueError(f"scores: {r.result.file} is not in Moodle's download layout "
                                 "(<Full Name>_<number>_assignsubmission_file_/<notebook>), so it has no Moodle "
                                 "participant number; export it for canvas, or grade Moodle's download")
            changes = "; ".join(f"{o.question}: {o.reason}" for o in r.overrides)
            comment = f"{total} / {top} points (dptutor {a.name})" + (f"; changed by hand: {changes}" if changes else "")
            out.append([f"Participant {ident}", csv_cell(name), total, top, "", csv_cell(comment)])
    header = _CANVAS_HEADER + [column or f"{a.title} ({a.name})"] if lms == "canvas" else _MOODLE_HEADER
    return [header, *out]


def export_lms(lms: str, assignment: str, scores: Path | str, out: Path | str, *, column: str | None = None,
               out_of: float | None = None) -> int:
    """Write the ``lms`` grade import of ``scores`` to ``out`` (atomically); return the number of students."""
    out = Path(check_path(out, "out"))
    rows = lms_rows(lms, assignment, scores, column=column, out_of=out_of)
    here, above = look_named(out, name="out"), look_named(out.parent, name="out")  # ValueError if they cannot be looked at
    if here is not None and stat.S_ISDIR(here.st_mode):
        raise ValueError(f"out: {out} is a folder; give a file name")
    if above is None or not stat.S_ISDIR(above.st_mode):
        raise ValueError(f"out: the folder {out.parent} does not exist")
    if here is not None and not stat.S_ISREG(here.st_mode):
        raise ValueError(f"out: {out} is not a regular file (a FIFO, socket or device); give a file name")
    source = look_named(scores, name="scores") if here is not None else None
    if here is not None and source is not None and os.path.samestat(here, source):
        raise ValueError(f"out: {out} is the scores file itself; writing it would destroy the scores")
    atomic_write_text(out, csv_document(rows))  # synced, 0644 as other outputs
    return len(rows) - 1
