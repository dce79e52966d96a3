"""The scores CSV: one row per submission, that records what it needs to be checked, reproduced and re-scored.

Columns, in order::

    file, q1, ..., qN, total, messages,           # as a spreadsheet shows them
    student, assignment, course, max, late, submitted, overrides, record

``file`` is the submission's name (``alice.ipynb``, or ``<folder>/<notebook>`` for one sub-folder
per student), ``student`` its identifier (:func:`dptutor.course.submissions.student_identity`),
``q1`` ... the question scores after rescaling to the configured points and after overrides,
``total`` their sum times ``late`` (the late multiplier, 1 when on time), ``max`` the configured
total, ``submitted`` the submission time used (ISO 8601, empty without a late policy) and
``overrides`` the instructor's changes with their reasons.  ``record`` is JSON: the scores as
graded, the messages, the grading seed drawn for each question (``grading_seeds``; a file written
before that name has them as ``hidden`` and reads the same), so that ``grade --only`` reproduces a
row exactly, each check's outcome (``checks``), the configured weights of the checks (``weights``;
a question with weights is scored from its checks' outcomes) and whether error was carried forward (``carry_forward``).

Every row names its assignment and course; :func:`read_scores` refuses a file of another
assignment or course, and a row whose visible cells do not follow from its record (edited by hand
or corrupted): record changes in an override file instead (:mod:`dptutor.course.config`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dptutor._validate import check_path, check_real, check_sequence, check_str
from dptutor.course.config import Override
from dptutor.course.intake import look_named, read_named
from dptutor.assignments.feedback import Assignment, fmt_points
from dptutor.course.result import SubmissionResult
from dptutor.course.textsafe import csv_cell, csv_document, csv_text, one_line
from dptutor.course.submissions import student_identity
from dptutor.grid_files import atomic_write_text

__all__ = ["ScoreRecord", "scores_header", "read_scores", "write_scores", "default_scores_name"]

# The largest scores file read: far above any class (a row is a few kilobytes), far below a memory problem.
MAX_SCORES_BYTES = 256 << 20

_EXTRA = ["student", "assignment", "course", "max", "late", "submitted", "overrides", "record"]
#: Beyond the largest grading seed (the runner draws them below 2**62 + 2).
_MAX_SEED = 2**63
#: The record's key of the grading seeds, and its older name (files written before the rename).
_SEEDS, _OLD_SEEDS = "grading_seeds", "hidden"
_JSON = dict(sort_keys=True, ensure_ascii=True, allow_nan=False)


def default_scores_name(assignment: Assignment) -> str:
    """The default scores file of ``assignment``: ``scores-<name>.csv``."""
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    return f"scores-{assignment.name}.csv"


def scores_header(assignment: Assignment) -> list[str]:
    """The header row of ``assignment``'s scores CSV."""
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    return ["file", *(q.name for q in assignment.questions), "total", "messages", *_EXTRA]


@dataclass(frozen=True)
class ScoreRecord:
    """One submission's row: the graded ``result`` and how it is scored (points, late, overrides)."""

    result: SubmissionResult
    course: str = ""
    points: dict[str, float] = field(default_factory=dict)  # configured points; {} = the assignment's own
    submitted: str = ""
    late: float = 1.0
    overrides: tuple[Override, ...] = ()
    #: Configured weights: question -> check -> weight (checks not listed weigh 1); {} = equal weights.
    weights: dict[str, dict[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.result, SubmissionResult):
            raise TypeError(f"result must be a SubmissionResult, got {type(self.result).__name__}")
        check_str(self.course, "course")
        check_str(self.submitted, "submitted")
        check_real(self.late, "late", low=0.0, high=1.0)
        if not isinstance(self.points, dict) or set(self.points) - set(self.result.points):
            raise ValueError("points must be a dict over the result's questions")
        for value in self.points.values():
            check_real(value, "points", low=0.0)
        if not isinstance(self.overrides, tuple) or not all(isinstance(o, Override) for o in self.overrides):
            raise TypeError("overrides must be a tuple of Override")
        if not isinstance(self.weights, dict) or set(self.weights) - set(self.result.points) or not all(
                isinstance(w, dict) and all(isinstance(c, str) for c in w) for w in self.weights.values()):
            raise ValueError("weights must be a dict over the result's questions of dicts from check names to numbers")
        for table in self.weights.values():
            for value in table.values():
                check_real(value, "weights", low=0.0)

    @property
    def student(self) -> str:
        return student_identity(self.result.file)[0]

    def matches(self, override: Override) -> bool:
        """Whether ``override`` is about this submission (by file name or student identifier)."""
        if not isinstance(override, Override):
            raise TypeError(f"override must be an Override, got {type(override).__name__}")
        return override.student in (self.result.file, self.student)

    def question_points(self) -> dict[str, float]:
        return {q: float(self.points.get(q, p)) for q, p in self.result.points.items()}

    def graded_scores(self) -> dict[str, float]:
        """Each question's score as graded: weighted by the configured weights of its checks (when the
        question has weights and was graded), rescaled to the configured points."""
        points = self.question_points()
        out = {}
        for q, graded in self.result.scores.items():
            base = self.result.points[q]
            outcomes = self.result.checks.get(q)
            if q in self.weights and outcomes:
                weights = self.weights[q]
                total = sum(float(weights.get(c, 1.0)) for c, _ in outcomes)
                graded = base * sum(float(weights.get(c, 1.0)) for c, ok in outcomes if ok) / total if total > 0 else 0.0
            out[q] = round(graded * points[q] / base, 2) if base > 0 else 0.0
        return out

    def final_scores(self) -> dict[str, float]:
        """Each question's score: graded (:meth:`graded_scores`), then overridden."""
        points = self.question_points()
        out = self.graded_scores()
        for o in self.overrides:
            out[o.question] = min(float(o.score), points[o.question])
        return out

    @property
    def total(self) -> float:
        return round(sum(self.final_scores().values()) * self.late, 2)

    def row(self, assignment: Assignment) -> list[str]:
        """The CSV row (text cells escaped against formula injection)."""
        if not isinstance(assignment, Assignment):
            raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
        final, points, graded = self.final_scores(), self.question_points(), self.graded_scores()
        r = self.result
        messages = list(r.notes) + [f"{q}: {m}" for q, ms in r.messages.items() for m in ms]
        changes = [f"{o.question}: {fmt_points(graded[o.question])} -> {fmt_points(final[o.question])} ({o.reason})"
                   for o in self.overrides]
        record = {"v": 1, "scores": r.scores, "points": r.points, "messages": r.messages, "notes": r.notes,
                  _SEEDS: r.grading_seeds, "configured": self.points, "checks": r.checks, "weights": self.weights,
                  "carry_forward": r.carry_forward,
                  "overrides": [[o.student, o.question, o.score, o.reason] for o in self.overrides]}
        return [csv_cell(r.file), *(fmt_points(final[q.name]) for q in assignment.questions),
                fmt_points(self.total), csv_cell(" | ".join(one_line(m) for m in messages)),
                csv_cell(self.student), assignment.name, csv_cell(self.course), fmt_points(sum(points.values())),
                f"{self.late:g}", self.submitted, csv_cell(" | ".join(one_line(c) for c in changes)),
                json.dumps(record, **_JSON)]


def _renamed_seeds(data: dict, cells: list[str]) -> tuple[dict, list[str]]:
    """A record written before the grading seeds had their name (key ``hidden``) as today's, with its
    row's record cell rewritten to match (only if that cell is exactly what the writer wrote, so a
    record edited by hand is still refused)."""
    if _OLD_SEEDS not in data:
        return data, cells
    if _SEEDS in data:
        raise ValueError(f"its record has both {_SEEDS} and {_OLD_SEEDS} tables")
    canonical = json.dumps(data, **_JSON) == cells[-1]
    data = {(_SEEDS if k == _OLD_SEEDS else k): v for k, v in data.items()}
    return data, (cells[:-1] + [json.dumps(data, **_JSON)] if canonical else cells)


def _from_row(cells: list[str], assignment: Assignment) -> ScoreRecord:
    """The record of one row (ValueError if a cell is malformed or does not follow from the record)."""
    header = scores_header(assignment)
    col = dict(zip(header, cells))
    data = json.loads(col["record"])
    if not isinstance(data, dict) or data.get("v") != 1:
        raise ValueError("its record is not a version-1 JSON object")
    names = [q.name for q in assignment.questions]
    data, cells = _renamed_seeds(data, cells)
    for key in ("scores", "points", "messages", _SEEDS, "configured"):
        if not isinstance(data.get(key), dict):
            raise ValueError(f"its record has no {key} table")
    if sorted(data["scores"]) != sorted(names) or sorted(data["points"]) != sorted(names):
        raise ValueError("its record does not list this assignment's questions")
    seeds = data[_SEEDS]
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _MAX_SEED and k in names
               for k, v in seeds.items()):
        raise ValueError("its grading seeds are not whole numbers per question")
    for q in names:
        if not isinstance(data["scores"][q], (int, float)) or not isinstance(data["points"][q], (int, float)) \
                or not 0 <= data["scores"][q] <= data["points"][q] or not math.isfinite(data["points"][q]):
            raise ValueError(f"its graded score of {q} is not a number within the question's points")
    overrides = data.get("overrides")
    if not isinstance(overrides, list) or not all(isinstance(o, list) and len(o) == 4 for o in overrides):
        raise ValueError("its overrides are not a list of [student, question, score, reason]")
    checks, weights = data.get("checks", {}), data.get("weights", {})
    if not isinstance(checks, dict) or not isinstance(weights, dict) or not set(checks) | set(weights) <= set(names):
        raise ValueError("its checks or weights are not tables over this assignment's questions")
    carry = data.get("carry_forward", False)
    if not isinstance(carry, bool):
        raise ValueError("its carry_forward is not true or false")
    result = SubmissionResult(csv_text(col["file"]), assignment.name, {q: float(data["scores"][q]) for q in names},
                              {q: float(data["points"][q]) for q in names}, data["messages"], data.get("notes"),
                              grading_seeds=dict(seeds), checks=checks, carry_forward=carry)
    try:
        late = float(col["late"])
    except ValueError:
        raise ValueError(f"its late multiplier {col['late']!r} is not a number") from None
    record = ScoreRecord(result, csv_text(col["course"]), {k: float(v) for k, v in data["configured"].items()},
                         col["submitted"], late, tuple(Override(*o) for o in overrides), weights)
    again = record.row(assignment)
    if again != cells:
        differ = next(h for h, a, b in zip(header, again, cells) if a != b)
        raise ValueError(f"its {differ!r} cell does not follow from its record (edited by hand? record "
                         "score changes in an overrides file instead)")
    return record


def read_scores(path: Path | str, assignment: Assignment, *, course: str | None = None,
                missing_ok: bool = False) -> list[ScoreRecord]:
    """The records of an existing scores CSV of ``assignment`` (and of ``course``, when given); with
    ``missing_ok``, none if there is no file at ``path`` (one look at the file: no check before the read).

    ValueError naming ``path`` and the file if it does not exist (unless ``missing_ok``), cannot be read, is
    a scores file of another assignment or course, not a scores file at all, or corrupted (a row that does
    not follow from its record).
    """
    path = Path(check_path(path, "path"))
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    if course is not None:
        check_str(course, "course")
    # read_named: a FIFO would block the open forever, a device never end
    raw = read_named(path, MAX_SCORES_BYTES, role="the scores file", follow_links=True, missing_ok=missing_ok)
    if raw is None:
        return []
    limit = csv.field_size_limit()  # 128 KiB by default: one student's long error messages exceed it
    csv.field_size_limit(max(limit, MAX_SCORES_BYTES))
    try:
        rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"path: {path} cannot be read as a CSV ({exc}): it is corrupted or not a scores "
                         "file") from None
    finally:
        csv.field_size_limit(limit)
    if not rows:
        return []
    header = scores_header(assignment)
    if rows[0] != header:
        if rows[0][-len(_EXTRA):] == _EXTRA and rows[0][0] == "file":
            other = rows[1][len(rows[0]) - len(_EXTRA) + 1] if len(rows) > 1 and len(rows[1]) == len(rows[0]) else "?"
            raise ValueError(f"path: {path} is the scores file of another assignment ({other!r}), not of "
                             f"{assignment.name!r}; use --csv {default_scores_name(assignment)}")
        raise ValueError(f"path: {path} exists but is not a scores file of assignment {assignment.name!r} "
                         "(another file, or one written by an older dptutor); choose another --csv or move it")
    records, seen = [], set()
    for number, cells in enumerate(rows[1:], start=2):
        where = f"path: {path} line {number}"
        if len(cells) != len(header):
            raise ValueError(f"{where} has {len(cells)} cells, not {len(header)}: the file is corrupted")
        col = dict(zip(header, cells))
        if col["assignment"] != assignment.name:
            raise ValueError(f"path: {path} holds scores of assignment {col['assignment']!r} (line {number}), "
                             f"not of {assignment.name!r}; use --csv {default_scores_name(assignment)}")
        if course is not None and csv_text(col["course"]) != course:
            raise ValueError(f"path: {path} holds scores of course {csv_text(col['course'])!r} (line {number}), "
                             f"not of {course!r}; use another --csv")
        try:
            record = _from_row(cells, assignment)
        except (ValueError, TypeError, KeyError, RecursionError, OverflowError) as exc:  # nested too deep, huge ints
            raise ValueError(f"{where} ({csv_text(col['file'])}) is corrupted: {exc}") from None
        if records and record.course != records[0].course:
            raise ValueError(f"{where}: course {record.course!r} differs from line 2's {records[0].course!r}: "
                             "the file mixes courses")
        if record.result.file in seen:
            raise ValueError(f"{where}: {record.result.file} has two rows: the file is corrupted")
        seen.add(record.result.file)
        records.append(record)
    return records


def write_scores(path: Path | str, assignment: Assignment, records: Sequence[ScoreRecord]) -> None:
    """Write ``records`` as ``assignment``'s scores CSV: to a temporary file beside ``path``, synced,
    then renamed over it (atomic: a reader sees the old file or the new one, never a part)."""
    path = Path(check_path(path, "path"))
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    records = check_sequence(records, "records", min_len=0)
    if not all(isinstance(r, ScoreRecord) for r in records):
        raise TypeError("records must be ScoreRecord objects")
    rows = [r.row(assignment) for r in records]
    above, here = look_named(path.parent), look_named(path)  # a ValueError naming path if one cannot be looked at
    if above is None or not stat.S_ISDIR(above.st_mode):
        raise ValueError(f"path: the folder {path.parent} does not exist")
    if here is not None and stat.S_ISDIR(here.st_mode):
        raise ValueError(f"path: {path} is a folder")
    atomic_write_text(path, csv_document([scores_header(assignment), *rows]))  # synced, 0644 as other outputs


