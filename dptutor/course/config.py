"""A grading configuration file, late submissions, and manual overrides.

The configuration file (TOML, or JSON with the same keys) of one assignment::

    assignment = "mechanism"          # optional; must match the command line's assignment
    course = "dp-2026-spring"         # optional; recorded in every row of the scores CSV

    [points]                          # optional: the points of each question (default: the
    q1 = 2                            # assignment's own); a score is rescaled to them
    q2 = 3

    [weights.q3]                      # optional: the weight of each check within a question
    shape = 1                         # (default 1 for every check not listed); a question's
    epsilon_inf = 3                   # score is its points times the weighted share of its
    unchanged = 0                     # passed checks; a weight of 0 leaves a check unscored

    [limits]                          # optional time limits, in seconds
    cell = 60                         # per cell (the command line's --timeout wins)
    notebook = 600                    # per notebook (--total-timeout wins)

    [late]                            # optional late policy
    deadline = 2026-03-02T23:59:00Z   # TOML date-time (or an ISO 8601 string) WITH a time zone
    grace_minutes = 15                # submissions up to this late count as on time
    multiplier = 0.8                  # a late submission's total is multiplied by this ...
    per_day = false                   # ... once, or once per started day late (0.8, 0.64, ...)
    times = "mtime"                   # where submission times come from: "mtime" (the notebook
                                      # file's modification time) or a manifest CSV (path
                                      # relative to this file) with columns file,submitted

    carry_forward = false             # error carried forward (see below)

One file for the whole course: the keys above apply to every assignment, and a table
``[assignments.NAME]`` per assignment sets that assignment's own (its tables merged key by key over
the top-level ones; ``deadline`` is short for ``late.deadline``)::

    course = "dp-2026-spring"
    [late]                            # the policy of every assignment
    multiplier = 0.8
    grace_minutes = 15
    [assignments.sampler]
    deadline = 2026-03-02T23:59:00Z
    [assignments.mechanism]
    deadline = 2026-03-09T23:59:00Z
    points = {q1 = 2, q2 = 3}

Questions' points and checks' weights differ between assignments: in a course file, give them in
the assignment's table.

Unknown keys and wrong types are refused with a ``ValueError`` naming the key (``late.multiplier``,
``weights.q3.shape``).  Each question's score is first graded on the assignment's own points (with
the configured weights of its checks), then rescaled to ``points``; an override replaces it; the late
multiplier applies to the total.

Weights: the checks a question can weigh are the names in its ``Question.checks`` (an unknown
name is refused with the list; ``mechanism`` q3 has ``shape``, ``unchanged``, ``rng``,
``epsilon_zero``, ...; each assignment's instructor page lists them); a question with a single,
unnamed check cannot be weighted (its key is refused).  The scores CSV keeps every check's outcome, so a changed weight re-scores every row.

Error carried forward (``carry_forward = true``): a later question is judged against the student's
own earlier answer where that is meaningful.  ``mechanism``: question 2 (the noise of
``private_mean``) also passes when the noise follows the Laplace law with scale
``mean_sensitivity(m, k) / epsilon``, the student's own sensitivity in place of the right one, so one
wrong sensitivity costs question 1 only; the message says so.
Assignments whose questions do not build on one another (``sampler``, ``audit``, ``pair_audit``,
``selection``) refuse it with the reason.

The override file (CSV, one row per change, header ``student,question,score,reason``) records
the instructor's decisions: ``student`` is a submission's name (the scores CSV's ``file``) or its
student identifier (the ``student`` column), ``score`` is in the configured points of
``question``, and ``reason`` is required and kept in the scores CSV.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import stat
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptutor._validate import check_path, check_real, check_str
from dptutor.assignments.feedback import Assignment
from dptutor.assignments.registry import ASSIGNMENTS
from dptutor.course.intake import look_named, read_named
from dptutor.course.textsafe import csv_text

__all__ = ["GradingConfig", "Override", "load_config", "read_overrides", "read_manifest"]
# read_csv_table serves dptutor.course.handgrade's reader of the hand grades too, hence outside __all__.

_KEYS = {"assignment", "course", "points", "weights", "limits", "late", "carry_forward", "assignments"}
#: What an ``[assignments.NAME]`` table may set (``deadline`` is short for ``late.deadline``).
_SECTION_KEYS = {"points", "weights", "limits", "late", "carry_forward", "deadline"}
_LIMIT_KEYS = {"cell", "notebook"}
_LATE_KEYS = {"deadline", "grace_minutes", "multiplier", "per_day", "times"}
#: Time limits (seconds), as the command line allows them.
_LIMIT_RANGE = (1.0, 86400.0)


def _parse_time(value: object, name: str) -> dt.datetime:
    """A time zone-aware ``datetime`` from a ``datetime`` or an ISO 8601 string (ValueError naming ``name``)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{name}: {value!r} is not an ISO 8601 date and time "
                             "(e.g. 2026-03-02T23:59:00+01:00)") from None
    if not isinstance(value, dt.datetime):
        raise TypeError(f"{name} must be a date and time, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name}: {value.isoformat()} has no time zone; add one (Z or +01:00)")
    return value


def _number(value: object, name: str, low: float, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return check_real(value, name, low=low, high=high)


@dataclass(frozen=True)
class GradingConfig:
    """A validated grading configuration (see the module docstring); ``GradingConfig()`` is the default."""

    course: str = ""
    points: dict[str, float] = field(default_factory=dict)
    #: question -> check -> weight (checks not listed weigh 1)
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    cell_timeout: float | None = None
    notebook_timeout: float | None = None
    deadline: dt.datetime | None = None
    grace_minutes: float = 0.0
    multiplier: float = 1.0
    per_day: bool = False
    times: str = "mtime"  # "mtime" or the manifest's path
    carry_forward: bool = False

    def __post_init__(self) -> None:
        check_str(self.course, "course")
        if not isinstance(self.points, dict) or not all(isinstance(k, str) for k in self.points):
            raise TypeError("points must be a dict from question names to numbers")
        for q, p in self.points.items():
            _number(p, f"points.{q}", 0.0)
        if not isinstance(self.weights, dict) or not all(
                isinstance(q, str) and isinstance(w, dict) and all(isinstance(c, str) for c in w)
                for q, w in self.weights.items()):
            raise TypeError("weights must be a dict from question names to dicts from check names to numbers")
        for q, table in self.weights.items():
            for c, w in table.items():
                _number(w, f"weights.{q}.{c}", 0.0)
        for name in ("cell_timeout", "notebook_timeout"):
            if getattr(self, name) is not None:
                _number(getattr(self, name), name, *_LIMIT_RANGE)
        if self.deadline is not None:
            object.__setattr__(self, "deadline", _parse_time(self.deadline, "deadline"))
        _number(self.grace_minutes, "grace_minutes", 0.0)
        _number(self.multiplier, "multiplier", 0.0, 1.0)
        for name in ("per_day", "carry_forward"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be true or false, got {type(getattr(self, name)).__name__}")
        check_str(self.times, "times", allow_empty=False)

    def question_points(self, assignment: Assignment) -> dict[str, float]:
        """The points of each question of ``assignment`` under this configuration."""
        if not isinstance(assignment, Assignment):
            raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
        return {q.name: float(self.points.get(q.name, q.points)) for q in assignment.questions}

    def late_factor(self, submitted: dt.datetime | None) -> float:
        """The multiplier of a submission made at ``submitted`` (1 when on time or with no late policy)."""
        if submitted is not None:
            submitted = _parse_time(submitted, "submitted")
        if self.deadline is None:
            return 1.0
        if submitted is None:
            raise ValueError("submitted: the late policy needs the submission's time")
        late = (submitted - self.deadline).total_seconds() - 60.0 * self.grace_minutes
        if late <= 0:
            return 1.0
        periods = math.ceil(late / 86400.0) if self.per_day else 1
        return round(self.multiplier ** periods, 6)


def _table(value: object, name: str, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a table, got {type(value).__name__}")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise ValueError(f"{name}.{unknown[0]} is not a known key (expected one of {', '.join(sorted(keys))})")
    return value


def load_config(path: Path | str, assignment: Assignment, *, missing_ok: bool = False) -> GradingConfig | None:
    """The grading configuration in ``path`` (``.toml`` or ``.json``) for ``assignment``, validated; with
    ``missing_ok``, ``None`` if there is no file at ``path`` (one look at the file: no check before the read).

    Errors are ``ValueError``/``TypeError`` whose message starts with the key at fault
    (``late.multiplier``); a relative manifest path is resolved against the file's folder.
    """
    path = Path(check_path(path, "path"))
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    # A FIFO or a device (/dev/zero) would block or never end: only a regular file of at most 1 MiB is read.
    raw = read_named(path, 1 << 20, role="the grading configuration", follow_links=True, missing_ok=missing_ok)
    if raw is None:
        return None
    if path.suffix not in (".json", ".toml"):
        raise ValueError(f"path: {path} must be a .toml or .json file")
    try:  # ValueError: also a number too long to convert; RecursionError: nesting too deep
        text = raw.decode("utf-8")
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"path: {path} is not valid {path.suffix[1:].upper()} ({exc})") from None
    data = _for_assignment(_table(data, "config", _KEYS), assignment)
    if "assignment" in data and data["assignment"] != assignment.name:
        raise ValueError(f"assignment: {path} configures {data['assignment']!r}, not {assignment.name!r}")
    kwargs: dict[str, Any] = {"course": check_str(data.get("course", ""), "course")}
    names = [q.name for q in assignment.questions]
    points = _table(data.get("points", {}), "points", set(names))
    kwargs["points"] = {q: _number(p, f"points.{q}", 0.0, 1e6) for q, p in points.items()}
    if kwargs["points"] and sum(kwargs["points"].get(q, assignment.question(q).points) for q in names) <= 0:
        raise ValueError("points: the questions' points must not all be 0")
    kwargs["weights"] = _weights(data.get("weights", {}), assignment)
    limits = _table(data.get("limits", {}), "limits", _LIMIT_KEYS)
    if "cell" in limits:
        kwargs["cell_timeout"] = _number(limits["cell"], "limits.cell", *_LIMIT_RANGE)
    if "notebook" in limits:
        kwargs["notebook_timeout"] = _number(limits["notebook"], "limits.notebook", *_LIMIT_RANGE)
    late = _table(data.get("late", {}), "late", _LATE_KEYS)
    if late:
        if "deadline" not in late:
            raise ValueError("late.deadline is required when [late] is given")
        kwargs["deadline"] = _parse_time(late["deadline"], "late.deadline")
        kwargs["grace_minutes"] = _number(late.get("grace_minutes", 0), "late.grace_minutes", 0.0, 1e6)
        if "multiplier" not in late:
            raise ValueError("late.multiplier is required when [late] is given")
        kwargs["multiplier"] = _number(late["multiplier"], "late.multiplier", 0.0, 1.0)
        if not isinstance(late.get("per_day", False), bool):
            raise TypeError("late.per_day must be true or false")
        kwargs["per_day"] = late.get("per_day", False)
        times = check_str(late.get("times", "mtime"), "late.times", allow_empty=False)
        if times != "mtime":
            manifest = (path.parent / times) if not Path(times).is_absolute() else Path(times)
            found = look_named(manifest, name="late.times")  # checked early; read (once) when grading
            if found is None or not stat.S_ISREG(found.st_mode):
                raise ValueError(f"late.times: the manifest {manifest} does not exist or is not a file (or use \"mtime\")")
            times = str(manifest)
        kwargs["times"] = times
    carry = data.get("carry_forward", False)
    if not isinstance(carry, bool):
        raise TypeError("carry_forward must be true or false")
    if carry and not assignment.carry_forward:
        raise ValueError(f"carry_forward: assignment {assignment.name!r} has no error to carry forward: "
                         f"{assignment.independent}")
    kwargs["carry_forward"] = carry
    return GradingConfig(**kwargs)


def _for_assignment(data: dict[str, Any], assignment: Assignment) -> dict[str, Any]:
    """The configuration of ``assignment`` in a course file: the top-level keys, with its
    ``[assignments.NAME]`` table's on top (tables merged key by key, ``deadline`` into ``late``)."""
    sections = _table(data.get("assignments", {}), "assignments", set(ASSIGNMENTS))
    section = dict(_table(sections.get(assignment.name, {}), f"assignments.{assignment.name}", _SECTION_KEYS))
    merged = {k: v for k, v in data.items() if k != "assignments"}
    if "deadline" in section:
        late = section.get("late", {})
        if not isinstance(late, dict):
            raise TypeError(f"assignments.{assignment.name}.late must be a table, got {type(late).__name__}")
        section["late"] = {**late, "deadline": section.pop("deadline")}
    for key, value in section.items():
        top = merged.get(key, {})
        if key == "carry_forward":
            merged[key] = value
        elif not isinstance(top, dict) or not isinstance(value, dict):
            raise TypeError(f"assignments.{assignment.name}.{key} and {key} must be tables")
        else:
            merged[key] = {**top, **value}
    return merged


def _weights(value: object, assignment: Assignment) -> dict[str, dict[str, float]]:
    """The ``[weights.qN]`` tables, each key a check of question qN (ValueError naming the key)."""
    names = [q.name for q in assignment.questions]
    tables = _table(value, "weights", set(names))
    out: dict[str, dict[str, float]] = {}
    for q, table in tables.items():
        checks = assignment.question(q).checks
        if not checks:
            raise ValueError(f"weights.{q}: question {q} of {assignment.name!r} does not name its checks, so "
                             "they cannot be weighted (its findings weigh the same)")
        table = _table(table, f"weights.{q}", set(checks))
        out[q] = {c: _number(w, f"weights.{q}.{c}", 0.0, 1e6) for c, w in table.items()}
        if all(out[q].get(c, 1.0) == 0 for c in checks):
            raise ValueError(f"weights.{q}: the weights of {q}'s checks must not all be 0")
    return out


#: The largest overrides, manifest or hand-grades CSV read (bytes): far above any class.
_MAX_TABLE_BYTES = 64 << 20


def read_csv_table(path: Path, name: str, required: Sequence[str], *, role: str = "the CSV file",
                   missing_ok: bool = False) -> list[dict[str, str]] | None:
    """The rows of the CSV ``path`` (``role``) as dicts, checked: readable UTF-8, the ``required`` columns, none of them
    twice, and every row complete; ValueError naming ``name`` and the file (the overrides, the manifest, the hand grades).
    With ``missing_ok``, ``None`` if there is no file at ``path`` (one look at the file: no check before the read)."""
    # A FIFO would block the open forever, a device (/dev/zero) never end: a bounded regular file only.
    raw = read_named(path, _MAX_TABLE_BYTES, role=role, name=name, follow_links=True, missing_ok=missing_ok)
    if raw is None:
        return None
    try:
        reader = csv.DictReader(io.StringIO(raw.decode("utf-8-sig"), newline=""))
        rows = list(reader)
        header = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{name}: {path} cannot be read as a CSV ({exc})") from None
    missing = [c for c in required if c not in header]
    if missing:
        raise ValueError(f"{name}: {path} needs the columns {', '.join(required)} (missing: {', '.join(missing)})")
    if len(set(header)) < len(header):  # csv.DictReader would keep the last of them, silently
        raise ValueError(f"{name}: {path} has the column(s) {', '.join(sorted({c for c in header if header.count(c) > 1}))} twice")
    for number, row in enumerate(rows, start=2):
        if None in row or any(v is None for v in row.values()):
            raise ValueError(f"{name}: {path} line {number} does not have {len(header)} cells")
    return rows


def read_manifest(path: Path | str) -> dict[str, dt.datetime]:
    """Submission times from a manifest CSV with columns ``file`` (or ``student``) and ``submitted``
    (ISO 8601 with a time zone): a map from each ``file``/``student`` value to its time."""
    path = Path(check_path(path, "path"))
    with_file = read_csv_table(path, "path", ["submitted"], role="the manifest")
    times: dict[str, dt.datetime] = {}
    for number, row in enumerate(with_file, start=2):
        key = row.get("file") or row.get("student")
        if not key:
            raise ValueError(f"path: {path} line {number}: give the submission in a file or student column")
        if key in times:
            raise ValueError(f"path: {path} line {number}: {key!r} is listed twice")
        times[key] = _parse_time(row["submitted"], f"path: {path} line {number}: submitted")
    return times


@dataclass(frozen=True)
class Override:
    """An instructor's decision: ``question`` of ``student`` scores ``score`` (configured points), because ``reason``."""

    student: str
    question: str
    score: float
    reason: str

    def __post_init__(self) -> None:
        check_str(self.student, "student", allow_empty=False)
        check_str(self.question, "question", allow_empty=False)
        _number(self.score, "score", 0.0)
        if not check_str(self.reason, "reason").strip():
            raise ValueError("reason must not be empty: say why the score changes")


def read_overrides(path: Path | str, assignment: Assignment, config: GradingConfig | None = None, *,
                   missing_ok: bool = False) -> list[Override]:
    """The overrides in the CSV ``path`` (header ``student,question,score,reason``), each checked
    against ``assignment``'s questions and their points under ``config``; ValueError naming the line.
    With ``missing_ok``, none if there is no file at ``path`` (one look at the file: no check before the read).
    A student or reason cell that starts with a quote is read without it (``handgrade apply`` writes a
    quote before a leading ``= + - @``, so that a spreadsheet shows a submission's name as text)."""
    path = Path(check_path(path, "path"))
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    if config is not None and not isinstance(config, GradingConfig):
        raise TypeError(f"config must be a GradingConfig or None, got {type(config).__name__}")
    points = (config or GradingConfig()).question_points(assignment)
    rows = read_csv_table(path, "path", ["student", "question", "score", "reason"], role="the overrides file",
                          missing_ok=missing_ok)
    out: list[Override] = []
    seen: set[tuple[str, str]] = set()
    for number, row in enumerate(rows or [], start=2):
        where = f"path: {path} line {number}"
        student, question = csv_text(row["student"].strip()), row["question"].strip()
        reason = csv_text(row["reason"].strip()).strip()
        if question not in points:
            raise ValueError(f"{where}: question {question!r} is not one of {', '.join(points)}")
        try:
            value = float(row["score"])
        except ValueError:
            raise ValueError(f"{where}: score {row['score']!r} is not a number") from None
        if not 0 <= value <= points[question]:
            raise ValueError(f"{where}: score {row['score']} is outside [0, {points[question]:g}] for {question}")
        if not student:
            raise ValueError(f"{where}: student is empty")
        if not reason:
            raise ValueError(f"{where}: reason is empty: say why the score changes")
        if (student, question) in seen:
            raise ValueError(f"{where}: {student} {question} is overridden twice")
        seen.add((student, question))
        out.append(Override(student, question, value, reason))
    return out
