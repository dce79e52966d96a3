"""The reports written from a scores CSV's rows: each student's feedback file and the instructor's report.

Both are written from the recorded checks of each row (:class:`dptutor.course.scores.ScoreRecord`), never
by running a notebook again, so they follow every re-scoring: a late policy, overrides, weights, points
or hand grades change the CSV and the feedback files together.

A student's feedback file (``<submission>.txt`` in the ``--feedback`` folder) shows the final scores,
each question's messages, the instructor's changes with their reasons and the late multiplier.  Notes
meant for the instructor (messages that start with "for the instructor", written by the assignments'
``flag_for_review``) never go there: they go to the instructor's report, ``<scores>-instructor.md``
beside the scores CSV, with the submission and the question they are about.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from dptutor._validate import check_path, check_sequence, check_str
from dptutor.assignments.feedback import Assignment, fmt_points
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord
from dptutor.course.textsafe import feedback_name, one_line
from dptutor.grid_files import atomic_write_text

#: :func:`is_instructor_note`, :func:`instructor_notes`, :func:`feedback_files`, :func:`write_feedback` and
#: :func:`check_records` serve
#: :mod:`dptutor.course.rescore` and :mod:`dptutor.course.grade` (their inputs are the rows those checked), hence
#: outside ``__all__``.
__all__ = ["INSTRUCTOR_PREFIX", "student_feedback", "instructor_report_path", "write_instructor_report"]

#: How a message for the instructor starts (case-insensitive); such a message is never shown to the student.
INSTRUCTOR_PREFIX = "for the instructor"
#: Messages of a question that an override settles: "pending" no longer holds once a score is set.
_PENDING = re.compile(r"\bpending\b", re.IGNORECASE)
_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>()#+!|~&-])")


def is_instructor_note(message: str) -> bool:
    """Whether ``message`` is meant for the instructor only (it starts with :data:`INSTRUCTOR_PREFIX`)."""
    return check_str(message, "message").lstrip().lower().startswith(INSTRUCTOR_PREFIX)


def _check_record(record: object) -> ScoreRecord:
    if not isinstance(record, ScoreRecord):
        raise TypeError(f"record must be a ScoreRecord, got {type(record).__name__}")
    return record


def check_records(records: object, name: str = "records") -> list[ScoreRecord]:
    """``records`` as a list of :class:`ScoreRecord` (TypeError naming ``name`` otherwise)."""
    records = check_sequence(records, name, min_len=0)
    if not all(isinstance(r, ScoreRecord) for r in records):
        raise TypeError(f"{name} must be a sequence of ScoreRecord")
    return list(records)


def student_feedback(record: ScoreRecord) -> str:
    """A student's report as the CSV scores ``record``: configured points, overrides (with their
    reasons), the late multiplier; no note meant for the instructor."""
    record = _check_record(record)
    r = record.result
    overridden = {o.question for o in record.overrides}
    messages = {q: [m for m in ms if not is_instructor_note(m) and not (q in overridden and _PENDING.search(m))]
                for q, ms in r.messages.items()}
    for o in record.overrides:
        messages.setdefault(o.question, []).append(f"score set by the instructor: {o.reason}")
    notes = [n for n in r.notes if not is_instructor_note(n)]
    final = record.final_scores()
    if record.late != 1:
        notes.append(f"submitted late: the total {fmt_points(round(sum(final.values()), 2))} is multiplied by "
                     f"{record.late:g}, giving {fmt_points(record.total)}")
    text = SubmissionResult(r.file, r.assignment, final, record.question_points(), messages, notes).feedback_text()
    # The first line states the total the CSV records (after the late multiplier).
    head = f"{one_line(r.file)}: {fmt_points(record.total)} / {fmt_points(sum(record.question_points().values()))} points"
    return "\n".join([head, *text.split("\n")[1:]])


def instructor_notes(record: ScoreRecord) -> list[tuple[str, str]]:
    """The notes of ``record`` meant for the instructor: ``(question, text)``, question ``""`` for a
    note about the whole notebook."""
    record = _check_record(record)
    out = [("", n) for n in record.result.notes if is_instructor_note(n)]
    out += [(q, m) for q, ms in record.result.messages.items() for m in ms if is_instructor_note(m)]
    return out


def feedback_files(files: Iterable[str]) -> dict[str, str]:
    """The feedback file name of each submission in ``files`` (a sub-folder's notebook ``d/x.ipynb``
    reads as ``d-x``; submissions whose plain names would collide, ``a.md`` and ``a.ipynb``, get hashed names)."""
    files = sorted({check_str(f, "files") for f in files})
    plain = {f: f.replace("/", "-") for f in files}
    stems = collections.Counter(feedback_name(p) for p in plain.values())
    return {f: feedback_name(p, shared=stems[feedback_name(p)] > 1) for f, p in plain.items()}


def write_feedback(folder: Path | str, name: str, record: ScoreRecord) -> Path:
    """Write ``record``'s feedback (:func:`student_feedback`) as ``folder/name``, atomically."""
    folder = Path(check_path(folder, "folder"))
    name = check_str(name, "name", allow_empty=False)
    if "/" in name or name in (".", ".."):
        raise ValueError(f"name must be a file name, got {name!r}")
    target = folder / name
    atomic_write_text(target, student_feedback(record) + "\n")  # a link at target is replaced, never written through
    return target


def instructor_report_path(csv_path: Path | str) -> Path:
    """The instructor's report of the scores CSV ``csv_path``: ``<stem>-instructor.md`` beside it."""
    csv_path = Path(check_path(csv_path, "csv_path"))
    return csv_path.with_name(f"{csv_path.stem}-instructor.md")


def _md(text: str) -> str:
    """``text`` on one line with Markdown's punctuation escaped (a submission's text renders as text)."""
    return _MARKDOWN.sub(r"\\\1", one_line(text))


def write_instructor_report(csv_path: Path | str, assignment: Assignment, records: Sequence[ScoreRecord]) -> Path:
    """Write the instructor's report of ``records`` (:func:`instructor_report_path`): each submission's
    notes for the instructor and the instructor's changes, atomically; returns its path."""
    path = instructor_report_path(csv_path)
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    records = check_records(records)
    lines = [f"# For the instructor: {_md(assignment.name)} ({_md(Path(csv_path).name)})", "",
             "Notes the grader made for you (never shown to the students) and your changes to the scores.", ""]
    count = 0
    for record in records:
        notes = instructor_notes(record)
        changes = [f"{o.question} set to {fmt_points(o.score)}: {o.reason}" for o in record.overrides]
        if not notes and not changes:
            continue
        count += 1
        lines += [f"## {_md(record.result.file)} (student {_md(record.student)})", ""]
        lines += [f"- {_md(q) + ': ' if q else ''}{_md(text)}" for q, text in notes]
        lines += [f"- changed: {_md(c)}" for c in changes]
        lines.append("")
    if not count:
        lines += ["Nothing to report: no notes and no changes.", ""]
    atomic_write_text(path, "\n".join(lines))
    return path
