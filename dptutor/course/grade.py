"""``python -m dptutor grade``: grade a folder of submissions into a scores CSV, resumably.

The command line (:mod:`dptutor.cli`) builds one :class:`GradeOptions` from its arguments;
:func:`run_grade` checks everything it can before any notebook runs (:func:`plan_grading`: the
course folder and its answer key, the configuration, the CSV of an earlier run, the overrides, the
submission times), then grades what is left to grade (:func:`grade_plan`), saving each finished
submission's row (and feedback file) at once.

Interrupts
----------
Ctrl-C (or SIGTERM) at any moment, also during a cell, stops grading cleanly: the sandbox in
flight is killed, the submission in flight is not scored, and the CSV (rewritten atomically after
every finished submission) holds every submission graded before.  Rerunning the same command
skips the submissions already in the CSV (``--regrade`` grades everything again).  The exit code
is 130.  A run killed outright leaves a marker naming the submission in flight (which scores 0 on
the next run) and its work folder, which the next run deletes.  With ``--workers N`` each submission
is graded in a child process of its own (:mod:`dptutor.course.batch`).  When several submissions
were in flight in a run killed outright, the next run grades them one at a time first.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptutor._validate import check_path, check_str, is_bool
from dptutor.assignments.feedback import Assignment, fmt_points
from dptutor.assignments.instances import INSTANCE_ASSIGNMENTS
from dptutor.assignments.registry import get_assignment
from dptutor.course.batch import grade_folder
from dptutor.course.config import GradingConfig, Override, load_config, read_overrides
from dptutor.course.executor import check_grade_dependencies, remove_stale_workdirs
from dptutor.course.folders import CourseFolder, load_course
from dptutor.course.intake import look_named, read_named
from dptutor.course.keys import course_scope
from dptutor.course.result import SubmissionResult
from dptutor.course.preflight import check_environment
from dptutor.course.rescore import rescored, submission_times, write_reports
from dptutor.course.sandbox import SANDBOXES, EnvironmentFailure, Limits, Sandbox, SandboxUnavailable, find_sandbox
from dptutor.course.scores import ScoreRecord, default_scores_name, read_scores, write_scores
from dptutor.course.signals import deferred_interrupts, kept_interrupts, raise_interrupt, raise_kept_interrupt
from dptutor.course.submissions import Submission, find_submissions
from dptutor.course.textsafe import one_line
from dptutor.grid_files import atomic_write_text

#: :func:`plan_grading`, :class:`GradingPlan` and :func:`grade_plan` are the two halves of :func:`run_grade`,
#: public for the command line's tests, outside ``__all__`` (their inputs are :func:`run_grade`'s own).
__all__ = ["GradeOptions", "run_grade"]


@dataclass(frozen=True)
class GradeOptions:
    """What ``python -m dptutor grade`` is asked to do (one field per command-line option; see
    ``python -m dptutor grade --help`` for each)."""

    assignment: str
    submissions: Path
    csv: Path | None = None
    feedback: Path | None = None
    #: Time limits per cell and per notebook (seconds); None: the configuration's, else 60 and 600.
    timeout: float | None = None
    total_timeout: float | None = None
    regrade: bool = False
    only: str | None = None
    workers: int = 1
    config: Path | None = None
    course: str | None = None
    overrides: Path | None = None
    sandbox: str = "auto"
    no_sandbox: bool = False
    #: The address-space limit of each process in the sandbox, in MiB.
    memory: int = Limits().memory >> 20
    image: str | None = None
    #: The wall-clock cap of a time limit counted in CPU time, in multiples of the limit.
    wall_factor: int = Limits().wall_factor

    def __post_init__(self) -> None:
        check_str(self.assignment, "assignment")
        check_str(self.sandbox, "sandbox")
        for name in ("submissions", "csv", "feedback", "config", "overrides"):
            value = getattr(self, name)
            if value is not None or name == "submissions":
                object.__setattr__(self, name, Path(check_path(value, name)))
        for name in ("only", "course", "image"):
            if getattr(self, name) is not None:
                check_str(getattr(self, name), name, allow_empty=False)
        for name in ("regrade", "no_sandbox"):
            if not is_bool(getattr(self, name)):
                raise TypeError(f"{name} must be True or False, got {type(getattr(self, name)).__name__}")
        if self.sandbox not in SANDBOXES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {self.sandbox!r}")
        for name in ("workers", "memory", "wall_factor"):
            if isinstance(getattr(self, name), bool) or not isinstance(getattr(self, name), int):
                raise TypeError(f"{name} must be an int, got {type(getattr(self, name)).__name__}")
        for name in ("timeout", "total_timeout"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
                raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")


class _Usage(Exception):
    """A problem with the command's arguments or files, found before grading: exit code 2."""


@dataclass
class GradingPlan:
    """Everything :func:`plan_grading` checked and loaded, that :func:`grade_plan` grades with."""

    options: GradeOptions
    assignment: Assignment
    config: GradingConfig
    configured: bool
    folder: CourseFolder | None
    course: str
    timeout: float
    total_timeout: float
    csv_path: Path
    submissions: list[Submission]
    records: list[ScoreRecord]
    overrides: list[Override] | None
    times: dict[str, Any]
    only: Submission | None
    sandbox: Sandbox
    finished: list[SubmissionResult] = field(default_factory=list)

    def scored(self, result: SubmissionResult, old: ScoreRecord | None) -> ScoreRecord:
        """The row of ``result`` under this run's configuration and overrides (else its old row's)."""
        return rescored(old or ScoreRecord(result, self.course), self.assignment, result=result, course=self.course,
                        config=self.config if self.configured else None, when=self.times.get(result.file),
                        overrides=self.overrides)

    def write_reports(self, records: Sequence[ScoreRecord]) -> None:
        """With ``--feedback``: the feedback files of ``records`` and the instructor's report of every row."""
        if self.options.feedback is not None:
            write_reports(self.csv_path, self.assignment, self.records, self.options.feedback,
                          [s.name for s in self.submissions], only=[r.result.file for r in records])


def run_grade(options: GradeOptions) -> int:
    """Handler of ``python -m dptutor grade``: exit code 0, 2 (bad arguments, or an environment in which
    a kernel cannot run: nothing is scored for it) or 130 (Ctrl-C)."""
    if not isinstance(options, GradeOptions):
        raise TypeError(f"options must be a GradeOptions, got {type(options).__name__}")
    try:
        plan = plan_grading(options)
    except _Usage as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    return grade_plan(plan)


def _course_and_config(options: GradeOptions, a: Assignment) -> tuple[CourseFolder | None, str | None, GradingConfig, Path | None]:
    """The course folder (if ``--course`` names one), the course, the configuration and its file."""
    course, folder, config_path, optional = options.course, None, options.config, False
    is_folder = course is not None and _kind(course, "--course") == stat.S_IFDIR
    if course is not None and not is_folder and ("/" in course or os.sep in course):
        raise _Usage(f"--course {course}: no such course folder (make one with `python -m dptutor course new`)")
    if is_folder:  # a course folder: its answer key (and config)
        try:
            folder = load_course(course)
        except ValueError as exc:
            raise _Usage(f"--course {course}: {str(exc).replace('folder: ', '', 1)}") from None
        course = folder.name
        if config_path is None:  # its configuration, if it has one (one look: no check before the read)
            config_path, optional = folder.config, True
    config: GradingConfig | None = GradingConfig()
    if config_path is not None:
        try:
            config = load_config(config_path, a, missing_ok=optional)
        except (ValueError, TypeError) as exc:
            raise _Usage(f"--config {config_path}: {str(exc).replace('path: ', '', 1)}") from None
        if config is None:  # the course folder has none
            config, config_path = GradingConfig(), None
    if course is not None and config.course and course != config.course:
        raise _Usage(f"--course {course!r} differs from the config's course {config.course!r}")
    if folder is not None:  # its rows record its name and key fingerprint
        course = folder.identifier
    return folder, (course if course is not None else (config.course or None)), config, config_path


def _load(flag: str, load: Any) -> Any:
    """``load()``, its ValueError or TypeError as a usage error naming ``flag``."""
    try:
        return load()
    except (ValueError, TypeError) as exc:
        text = str(exc)
        raise _Usage(text.replace("path: ", f"{flag} ", 1) if text.startswith("path: ") else text) from None


def plan_grading(options: GradeOptions) -> GradingPlan:
    """Check the command's arguments and load its files, before any notebook runs (a usage error,
    exit code 2, for anything wrong).  A CSV of another assignment or course, or a corrupted one, is
    refused, never overwritten (with ``--regrade`` too)."""
    try:
        check_grade_dependencies()
    except ImportError as exc:
        raise _Usage(str(exc)) from None
    a = get_assignment(options.assignment)
    if _kind(options.submissions, "submissions") != stat.S_IFDIR:
        raise _Usage(f"{options.submissions} is not a folder")
    folder, course, config, config_path = _course_and_config(options, a)
    csv_path = options.csv if options.csv is not None else Path(default_scores_name(a))
    try:
        submissions = find_submissions(options.submissions)
    except ValueError as exc:
        raise _Usage(str(exc).replace("folder: ", "", 1)) from None
    problem = _validate_outputs(csv_path, options.feedback)
    if problem:
        raise _Usage(problem)
    records = _load("--csv", lambda: read_scores(csv_path, a, course=course, missing_ok=True))
    overrides = _load("--overrides", lambda: read_overrides(options.overrides, a, config)
                      if options.overrides is not None else None)
    times = _load("--config", lambda: submission_times(config, submissions))
    only = _load("--only", lambda: _pick_only(options.only, submissions) if options.only else None)
    mixed = [r.result.file for r in records if r.result.carry_forward != config.carry_forward]
    if mixed and not options.regrade:
        flag = "true" if config.carry_forward else "false"
        raise _Usage(f"carry_forward is {flag} now, but {len(mixed)} row(s) of {csv_path} ({one_line(mixed[0])}, ...) "
                     f"were graded with carry_forward = {'false' if config.carry_forward else 'true'}: regrade them "
                     "all (--regrade) or write to another --csv, so that no file mixes the two")
    try:
        sandbox = _sandbox_of(options)
    except SandboxUnavailable as exc:
        raise _Usage(str(exc)) from None
    if course is None:  # no course given: rows keep the course the CSV already records
        course = records[0].course if records else ""
    return GradingPlan(options, a, config, config_path is not None, folder, course,
                       options.timeout if options.timeout is not None else (config.cell_timeout or 60.0),
                       options.total_timeout if options.total_timeout is not None else (config.notebook_timeout or 600.0),
                       csv_path, submissions, records, overrides, times, only, sandbox)


class _Gradebook:
    """The CSV (and feedback files) of a run, saved after each finished submission, with the marker
    of the submissions in flight."""

    def __init__(self, plan: GradingPlan, todo: int) -> None:
        self.plan, self.count = plan, todo
        self.by_file = {r.result.file: i for i, r in enumerate(plan.records)}
        self.marker = plan.csv_path.with_name(f".{plan.csv_path.name}.inflight")
        self.in_flight: set[str] = set()
        self.started = time.monotonic()

    def progress(self, name: str) -> None:
        self.in_flight.add(name)
        _write_inflight(self.marker, sorted(self.in_flight))
        print(f"grading {one_line(name)} ...", flush=True)

    def save(self, result: SubmissionResult) -> None:
        plan = self.plan
        raise_kept_interrupt()  # a Ctrl-C that Python dropped while this submission ran: it was in flight
        with deferred_interrupts():  # a finished submission is saved whole, Ctrl-C or not
            index = self.by_file.get(result.file)
            record = plan.scored(result, plan.records[index] if index is not None else None)
            if index is None:
                self.by_file[result.file] = len(plan.records)
                plan.records.append(record)
            else:
                plan.records[index] = record
            write_scores(plan.csv_path, plan.assignment, plan.records)
            plan.write_reports([record])
            plan.finished.append(result)
            self.in_flight.discard(result.file)
            _write_inflight(self.marker, sorted(self.in_flight))
        k, n = len(plan.finished), self.count
        elapsed = time.monotonic() - self.started
        left = f", about {_clock(elapsed / k * (n - k))} left" if k < n else ""
        print(f"{one_line(result.file)}: {fmt_points(record.total)} / {fmt_points(sum(record.question_points().values()))}"
              f"  [{k} of {n}, {_clock(elapsed)}{left}]", flush=True)


def _start(plan: GradingPlan) -> tuple[_Gradebook, list[str], list[str]]:
    """Rescore the CSV's rows under this run's configuration, write it, and say what is left to grade:
    ``(gradebook, todo, crashed)``."""
    a, options = plan.assignment, plan.options
    if not plan.sandbox.isolated:
        print("warning: --no-sandbox: every submission runs as your user with access to your files and "
              "processes; grade this way only notebooks you trust (the CSV notes it in every row)",
              file=sys.stderr, flush=True)
    remove_stale_workdirs()  # of runs killed earlier, also when this run has nothing left to grade
    plan.records[:] = [plan.scored(r.result, r) for r in plan.records]
    if plan.overrides is not None:
        known = {r.result.file for r in plan.records} | {r.student for r in plan.records} | \
            {s.name for s in plan.submissions} | {s.student for s in plan.submissions}
        for o in plan.overrides:
            if o.student not in known:
                print(f"warning: --overrides: {o.student!r} is no submission here (neither a file nor a student "
                      "identifier); its override is not applied", file=sys.stderr)
    write_scores(plan.csv_path, a, plan.records)  # the CSV exists (and is valid) from the start
    plan.write_reports(plan.records)  # the feedback of every row follows its (re)scored row
    done = {r.result.file for r in plan.records}
    if plan.only is not None:
        todo = [plan.only.name]
    else:
        todo = [s.name for s in plan.submissions if options.regrade or s.name not in done]
    book = _Gradebook(plan, len(todo))
    crashed = [n for n in _read_inflight(book.marker) if n not in done and n in todo]
    if len(crashed) == 1:
        # The previous run died (SIGKILL, power loss, or this submission killed the grader) while
        # grading it alone: score it 0 rather than let it kill every rerun.
        todo.remove(crashed[0])
        book.count = len(todo) + 1
        book.save(SubmissionResult(crashed[0], a.name, {q.name: 0.0 for q in a.questions},
                                   {q.name: q.points for q in a.questions},
                                   notes=["the previous grading run stopped abruptly while running this notebook (did "
                                          "it kill the grader?): scored 0; regrade it with --only to grade it again"]))
    skipped = len(plan.submissions) - len(todo) - (len(crashed) == 1)
    if skipped and plan.only is None:
        print(f"{skipped} submission(s) already in {plan.csv_path}: skipped (--regrade to grade them again)")
    return book, todo, crashed


def grade_plan(plan: GradingPlan) -> int:
    """Grade what ``plan`` leaves to grade, saving each submission as it finishes: exit code 0, or
    130 after Ctrl-C or SIGTERM (the submissions in flight are not scored; before the first one starts,
    nothing is lost: the files are the old ones or the rescored ones, each whole)."""
    if not isinstance(plan, GradingPlan):
        raise TypeError(f"plan must be a GradingPlan, got {type(plan).__name__}")
    previous_term = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_interrupt)  # `kill` stops grading as Ctrl-C does, from the start
    try:
        return _grade_started(plan)
    except KeyboardInterrupt:  # during the pre-flight or the rescoring of the earlier rows
        return _interrupted(plan)
    except (OSError, ValueError) as exc:  # the rescored rows could not be written
        return _not_saved(plan, exc)
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous_term)


def _interrupted(plan: GradingPlan) -> int:
    """Say what a Ctrl-C or SIGTERM left (every finished submission is in the CSV): exit code 130."""
    print(f"\ninterrupted: {len(plan.finished)} submission(s) graded in this run, {len(plan.records)} in "
          f"{plan.csv_path} in all; the submission(s) in flight were not scored. Rerun the same command to grade "
          "the rest.", file=sys.stderr, flush=True)
    return 130


def _not_saved(plan: GradingPlan, exc: BaseException) -> int:
    """Say why grading stopped, most often an output that could not be written (every submission saved before is in
    the CSV): exit code 2."""
    print(f"error: grading stopped: {one_line(str(exc))}; {len(plan.finished)} "
          f"submission(s) graded in this run are saved in {plan.csv_path}, the submission(s) in flight were not "
          "scored. Fix the problem and rerun the same command to grade the rest.", file=sys.stderr, flush=True)
    return 2


def _grade_started(plan: GradingPlan) -> int:
    """:func:`grade_plan` once its SIGTERM handler is in place (a ``KeyboardInterrupt`` before the
    first submission starts is the caller's)."""
    a, options = plan.assignment, plan.options
    done = {r.result.file for r in plan.records}
    if plan.only is not None or any(options.regrade or s.name not in done for s in plan.submissions):
        try:  # pre-flight: a known-good notebook through the very sandbox and interpreter, before any score
            check_environment(plan.sandbox)
        except EnvironmentFailure as exc:
            print(f"error: {one_line(str(exc))}", file=sys.stderr, flush=True)
            return 2
    book, todo, crashed = _start(plan)
    if todo and a.name in INSTANCE_ASSIGNMENTS and plan.folder is None:
        print(f"note: {a.name!r} is graded with the book's public self-study mysteries; give --course FOLDER (made "
              "by `course new`) to grade a course's submissions with its answer key", file=sys.stderr, flush=True)
    if todo:
        print(f"grading {len(todo)} submission(s) of {a.name!r} into {plan.csv_path}"
              + (f" with {min(options.workers, os.cpu_count() or 1, len(todo))} workers" if options.workers > 1 else ""),
              flush=True)
    saved = {r.result.file: dict(r.result.grading_seeds) for r in plan.records if r.result.grading_seeds}
    with kept_interrupts():  # a Ctrl-C that Python drops while grading is kept and raised below
        try:
            # Several submissions in flight when a run died: grade those alone first (one of them may
            # kill the grader; alone, it is found and scored 0 on the next run).
            first = [n for n in crashed if len(crashed) > 1]
            for names, workers in ((first, 1), ([n for n in todo if n not in first], options.workers)):
                raise_kept_interrupt()
                if names:
                    # the course's mysteries and answers (forked workers inherit them)
                    with course_scope(plan.folder.key) if plan.folder is not None else contextlib.nullcontext():
                        grade_folder(a.name, options.submissions, timeout=plan.timeout, total_timeout=plan.total_timeout,
                                     progress=book.progress, on_result=book.save, only=names, sandbox=plan.sandbox,
                                     workers=workers, grading_seeds={n: saved[n] for n in names if n in saved},
                                     carry_forward=plan.config.carry_forward)
            raise_kept_interrupt()
        except EnvironmentFailure as exc:  # a kernel could not start: not the submissions' fault, none scored 0 for it
            _unlink(book.marker)
            print(f"error: {one_line(str(exc))}", file=sys.stderr, flush=True)
            return 2
        except (OSError, ValueError) as exc:  # an output could not be written (a full disk, a folder gone)
            _unlink(book.marker)  # else the next run would score the submission being saved 0, as if it killed the grader
            return _not_saved(plan, exc)
        except KeyboardInterrupt:
            _unlink(book.marker)
            return _interrupted(plan)
    _unlink(book.marker)
    print(f"{len(plan.finished)} submission(s) graded -> {plan.csv_path} ({len(plan.records)} rows)")
    _print_summary(plan.records, plan.finished, time.monotonic() - book.started)
    return 0


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _kind(path: Path | str, option: str) -> int | None:
    """The type of the file at ``path`` (``stat.S_IFMT``: ``stat.S_IFDIR`` for a folder), None if there is none;
    a usage error naming ``option`` if it cannot be looked at (``Path.is_dir`` would raise ``PermissionError``)."""
    try:
        found = look_named(path, name=option)
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    return None if found is None else stat.S_IFMT(found.st_mode)


def _validate_outputs(csv_path: Path, feedback: Path | None) -> str | None:
    """Why ``--csv`` or ``--feedback`` cannot be written (checked before any grading), or None."""
    try:
        kind, above = _kind(csv_path, "--csv"), _kind(csv_path.parent, "--csv")
        made = _kind(feedback, "--feedback") if feedback is not None else None
    except _Usage as exc:  # a path under a folder that cannot be searched, a loop of links
        return str(exc)
    if kind == stat.S_IFDIR:
        return f"--csv {csv_path} is a folder; give a file name such as {csv_path / 'scores.csv'}"
    parent = csv_path.parent
    if above != stat.S_IFDIR:
        return f"--csv {csv_path}: the folder {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"--csv {csv_path}: the folder {parent} is not writable"
    if kind is not None and kind != stat.S_IFREG:
        return f"--csv {csv_path} is not a regular file"
    if feedback is not None:
        if made is not None and made != stat.S_IFDIR:
            return f"--feedback {feedback} exists and is not a folder"
        try:
            feedback.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"--feedback {feedback} cannot be created ({exc.strerror})"
        if not os.access(feedback, os.W_OK):
            return f"--feedback {feedback} is not writable"
    return None


def _pick_only(wanted: str, submissions: Sequence[Any]) -> Any:
    """The one submission ``--only`` names: by its name, its path, or its student identifier."""
    by_name = [s for s in submissions if s.name == wanted]
    if by_name:
        return by_name[0]
    target = Path(wanted).resolve() if look_named(wanted, name="--only") is not None else None
    by_path = [s for s in submissions if target is not None and s.path.resolve() in (target, target / s.path.name)]
    if by_path:
        return by_path[0]
    by_student = [s for s in submissions if s.student == wanted]
    if len(by_student) == 1:
        return by_student[0]
    if len(by_student) > 1:
        raise ValueError(f"--only {wanted}: student {wanted!r} has {len(by_student)} submissions "
                         f"({', '.join(s.name for s in by_student)}); give the submission's name")
    raise ValueError(f"--only {wanted}: no such submission (give its name as in the CSV's file column, "
                     "its path, or its student identifier)")




def _failed(result: SubmissionResult) -> bool:
    """Whether the notebook itself failed: unreadable, crashed, out of time or a dead kernel."""
    return any(not n.startswith("graded WITHOUT a sandbox") for n in result.notes)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def _print_summary(records: Sequence[Any], finished: Sequence[SubmissionResult], seconds: float) -> None:
    """Counts, mean total and the failures of the CSV's rows (and how long this run took)."""
    if not records:
        return
    totals = [r.total for r in records]
    top = sum(records[0].question_points().values())
    failed = [r.result.file for r in records if _failed(r.result)]
    full = sum(t >= top for t in totals)
    zero = sum(t == 0 for t in totals)
    per = f", {seconds / len(finished):.1f} s per submission" if finished else ""
    print(f"summary: {len(records)} row(s); mean {sum(totals) / len(totals):.2f} / {fmt_points(top)}, "
          f"{full} full marks, {zero} zero; {len(failed)} notebook(s) failed (crash, time limit or unreadable)"
          + (": " + ", ".join(one_line(f) for f in failed[:10]) + (" ..." if len(failed) > 10 else "") if failed else "")
          + f"; this run took {_clock(seconds)}{per}", flush=True)






def _sandbox_of(options: GradeOptions) -> Sandbox:
    """The sandbox the command line asks for (SandboxUnavailable if it cannot run here)."""
    limits = Limits(memory=int(options.memory) << 20, wall_factor=options.wall_factor)
    if options.no_sandbox:
        return find_sandbox("none", limits=limits)
    return find_sandbox(options.sandbox or "auto", limits=limits,
                        **({"image": options.image} if options.image else {}))


def _write_inflight(marker: Path, names: Sequence[str]) -> None:
    """Remember the submissions in flight (JSON; a run that finishes deletes the marker)."""
    atomic_write_text(marker, json.dumps({"files": list(names)}))  # a link at a fixed temporary name is never written through


def _read_inflight(marker: Path) -> list[str]:
    """The submissions in flight when a run died (either marker format), sane names only."""
    try:  # a FIFO would block the open forever: a small regular file only, never through a link
        raw = read_named(marker, 1 << 20, role="the in-flight marker", missing_ok=True)
        data = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: nested too deep
        return []
    if not isinstance(data, dict):
        return []
    names = data.get("files", [data.get("file")])
    if not isinstance(names, list):
        return []
    ok = []
    for name in names:
        parts = name.split("/") if isinstance(name, str) else []
        if 1 <= len(parts) <= 2 and all(p and p not in (".", "..") and "\x00" not in p for p in parts):
            ok.append(name)
    return ok
