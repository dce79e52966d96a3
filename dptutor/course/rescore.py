"""``python -m dptutor rescore``: score a scores CSV's rows again, and rewrite the reports, without running a notebook.

Every row records what grading found (:mod:`dptutor.course.scores`), so a change of the configuration
(points, weights, late policy) or of the overrides (an instructor's changes, hand grades) is applied
to the recorded checks: :func:`run_rescore` rewrites the scores CSV, every student's feedback file
(``--feedback``) and the instructor's report (:mod:`dptutor.course.reports`) together.
``python -m dptutor grade`` scores the rows of an earlier run the same way (:func:`rescored`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dptutor._validate import check_path, check_str
from dptutor.assignments.feedback import Assignment
from dptutor.assignments.registry import get_assignment
from dptutor.course.config import GradingConfig, Override, load_config, read_manifest, read_overrides
from dptutor.course.folders import load_course
from dptutor.course.intake import MissingFile
from dptutor.course.reports import feedback_files, write_feedback, write_instructor_report
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, write_scores
from dptutor.course.submissions import find_submissions
from dptutor.course.textsafe import one_line

#: :func:`rescored`, :func:`submission_times` and :func:`write_reports` serve :mod:`dptutor.course.grade` too
#: (their inputs are what it checked), hence outside ``__all__``.
__all__ = ["RescoreOptions", "run_rescore", "rescore"]


def rescored(record: ScoreRecord, assignment: Assignment, *, config: GradingConfig | None = None,
             when: dt.datetime | None = None, overrides: Sequence[Override] | None = None,
             result: SubmissionResult | None = None, course: str | None = None) -> ScoreRecord:
    """``record`` (with ``result`` in place of its own, if given) scored under ``config`` (None: keep
    its points, weights and late multiplier) with the ``overrides`` about it (None: keep its own);
    ``when`` is its submission time, needed when ``config`` has a deadline."""
    if not isinstance(record, ScoreRecord):
        raise TypeError(f"record must be a ScoreRecord, got {type(record).__name__}")
    changes: dict[str, Any] = {}
    if result is not None:
        changes["result"] = result
    if course is not None:
        changes["course"] = check_str(course, "course")
    file = (result or record.result).file
    if config is not None:
        changes.update(points=dict(config.question_points(assignment)), weights=config.weights,
                       late=config.late_factor(when) if config.deadline else 1.0,
                       submitted=when.isoformat() if when is not None else "")
    if overrides is not None:
        student = dataclasses.replace(record, **changes).student
        changes["overrides"] = tuple(o for o in overrides if o.student in (file, student))
    return dataclasses.replace(record, **changes)


def _mtime(submission: Any) -> dt.datetime:
    """A submission's modification time: its own, not a link's target (a link is refused when graded, and
    one that points nowhere has no other); ValueError naming it if it vanished."""
    try:
        return dt.datetime.fromtimestamp(submission.path.lstat().st_mtime, dt.timezone.utc)
    except OSError as exc:
        raise ValueError(f"late.times: the submission {submission.name} cannot be read ({exc.strerror})") from None


def submission_times(config: GradingConfig, submissions: Sequence[Any]) -> dict[str, Any]:
    """Each submission's time under the late policy: from the manifest, or the notebook's mtime."""
    if config.deadline is None:
        return {}
    if config.times == "mtime":
        return {s.name: _mtime(s) for s in submissions}
    manifest = read_manifest(config.times)
    times, missing = {}, []
    for s in submissions:
        when = manifest.get(s.name, manifest.get(s.student))
        if when is None:
            missing.append(s.name)
        times[s.name] = when
    if missing:
        raise ValueError(f"late.times: the manifest {config.times} gives no time for {', '.join(missing[:5])}"
                         + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    return times


def write_reports(csv_path: Path, assignment: Assignment, records: Sequence[ScoreRecord], feedback: Path | None,
                  files: Sequence[str] = (), *, only: Sequence[str] | None = None) -> None:
    """The instructor's report of ``records`` and, with a ``feedback`` folder, the feedback file of each
    record (of those whose files ``only`` lists, when given), named among ``files``, the other submissions, too."""
    write_instructor_report(csv_path, assignment, records)
    if feedback is not None:
        names = feedback_files([r.result.file for r in records] + list(files))
        for r in records:
            if only is None or r.result.file in only:
                write_feedback(feedback, names[r.result.file], r)


@dataclass(frozen=True)
class RescoreOptions:
    """What ``python -m dptutor rescore`` is asked to do (see ``python -m dptutor rescore --help``)."""

    assignment: str
    csv: Path
    course: Path | None = None
    config: Path | None = None
    overrides: Path | None = None
    feedback: Path | None = None
    submissions: Path | None = None

    def __post_init__(self) -> None:
        check_str(self.assignment, "assignment")
        for name in ("csv", "course", "config", "overrides", "feedback", "submissions"):
            value = getattr(self, name)
            if value is not None or name == "csv":
                object.__setattr__(self, name, Path(check_path(value, name)))


def _times(config: GradingConfig, records: Sequence[ScoreRecord], submissions: Path | None) -> dict[str, Any]:
    """Each row's submission time under ``config``'s late policy: the submissions folder's (mtime or
    manifest), else the time the row records (ValueError naming a row that has none)."""
    if config.deadline is None:
        return {}
    if submissions is not None:
        return submission_times(config, find_submissions(submissions))
    if config.times != "mtime":
        manifest = read_manifest(config.times)
        found = {r.result.file: manifest.get(r.result.file, manifest.get(r.student)) for r in records}
    else:
        found = {r.result.file: dt.datetime.fromisoformat(r.submitted) if r.submitted else None for r in records}
    missing = [f for f, when in found.items() if when is None]
    if missing:
        raise ValueError(f"the late policy needs the submission time of {missing[0]}, which its row does not record: "
                         "give --submissions FOLDER (the notebooks' modification times) or a manifest (late.times)")
    return found


def rescore(options: RescoreOptions) -> list[ScoreRecord]:
    """Score the rows of ``options.csv`` again and rewrite it, the feedback files and the instructor's
    report; the new rows.  ValueError (naming the option at fault) for anything wrong, before writing."""
    if not isinstance(options, RescoreOptions):
        raise TypeError(f"options must be a RescoreOptions, got {type(options).__name__}")
    a = get_assignment(options.assignment)
    course, config_path, optional = None, options.config, False
    if options.course is not None:
        folder = load_course(options.course)
        course = folder.identifier
        if config_path is None:  # the course folder's configuration, if it has one (one look: no check before)
            config_path, optional = folder.config, True
    try:  # one look at the file (no check before the read: a file removed or swapped in between)
        records = read_scores(options.csv, a, course=course)
    except MissingFile:
        raise ValueError(f"--csv {options.csv}: no such scores file") from None
    config = load_config(config_path, a, missing_ok=optional) if config_path is not None else None
    overrides = read_overrides(options.overrides, a, config) if options.overrides is not None else None
    times = _times(config, records, options.submissions) if config is not None else {}
    new = [rescored(r, a, config=config, when=times.get(r.result.file), overrides=overrides) for r in records]
    if overrides is not None:
        known = {r.result.file for r in new} | {r.student for r in new}
        unknown = [o.student for o in overrides if o.student not in known]
        if unknown:
            raise ValueError(f"--overrides {options.overrides}: {unknown[0]!r} is no row of {options.csv} (neither "
                             "a file nor a student identifier)")
    if options.feedback is not None:
        options.feedback.mkdir(parents=True, exist_ok=True)
    write_scores(options.csv, a, new)
    files = [s.name for s in find_submissions(options.submissions)] if options.submissions is not None else []
    write_reports(options.csv, a, new, options.feedback, files)
    return new


def run_rescore(options: RescoreOptions) -> int:
    """Handler of ``python -m dptutor rescore``: exit code 0, or 2 with the error on stderr."""
    try:
        records = rescore(options)
    except (ValueError, TypeError, OSError) as exc:
        print(f"error: {one_line(str(exc).replace('path: ', '', 1))}", file=sys.stderr)
        return 2
    changed = sum(1 for r in records if r.overrides or r.late != 1)
    print(f"rescored {len(records)} row(s) of {options.csv} ({changed} with a change or a late multiplier)"
          + (f"; feedback rewritten in {options.feedback}" if options.feedback is not None else ""))
    return 0
