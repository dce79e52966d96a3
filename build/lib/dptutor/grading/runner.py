"""The runner: the only code that executes student notebooks.

How a submission is graded
--------------------------
Each submission runs in a fresh Jupyter kernel (nbclient), cell by cell, with a time limit per
cell and one for the whole notebook.  Then, for every question, the runner adds one cell that
*records* what the student's code does on inputs the grader chose (hidden parameters drawn fresh
for this submission with :mod:`secrets`) and writes it, as plain data (``.npz`` of numeric arrays
and one JSON string, never a pickle), to a file whose random name appears only in that cell's
source.  Questions that time a function get extra cells that run just that call; the runner times
those cells with its own clock, outside the kernel.  When the kernel is gone, the grader parses
each file strictly and *replays* the question's check in its own process, against its own
references (:mod:`dptutor.grading.record`).  Scores are clamped to each question's points.

Threat model: what a student can and cannot do
----------------------------------------------
The student's code runs in the kernel, a separate process with the instructor's user id, and can
patch anything in that process: ``dptutor`` and its checks, ``numpy``, ``scipy``, ``json``,
builtins, ``print``, the output streams.

- None of that changes a verdict.  Nothing the kernel prints is read (there is no token to
  forge), and nothing the kernel *concludes* is used: it only reports data (what the student's
  functions returned, raised or modified on given inputs, and the student's answer values).  The
  grader parses it (regular file only, size limits, stored zip members, numeric dtypes, every field
  type-checked), checks that each recorded call was made with the inputs the grader's own run
  makes (a digest), and computes every score itself.  A file that cannot be parsed, is missing, or
  does not match scores 0 for that question, with a message saying so.
- Forged data is judged as the student's answer.  A kernel that writes *correct* outputs earns
  what a correct function earns: it had to compute them on inputs drawn fresh for this
  submission, inside the time limits, which is what a correct function does (copying
  ``dptutor``'s own sampler is plagiarism, for a human to judge, not a way around the grader).
- The result file cannot be written early: its name is random and first appears in the source
  of the cell that writes it; each file is read once, right after its cell.
- Timing comes from the runner's clock around a cell that only draws the uniforms (from a seed
  in the cell's source), calls the function and saves the output.  Work cannot be moved out of
  that cell, because the input is unknown before it runs, and the timed output must agree with
  what the function returned for the same uniforms earlier.  The reference is timed in the
  grader's process.  A student *can* make timing noisy by loading the machine (like any other
  process can); the limit is a factor 10.
- Reading the grader's files gains nothing: the checks ship with ``dptutor``, but the hidden
  parameters are drawn when grading, not stored.
- Process-level attacks are contained only partly, because the kernel runs as your user.  The
  kernel runs in its own session; at the end of each submission the runner kills that session's
  process group, so forked helpers die too (unless they start a new session).  Ctrl-C in the
  terminal does not reach the kernel.  The CSV is rewritten from the runner's memory after every
  submission.  But code running as your user *can* kill the grader (``os.kill(os.getppid(), 9)``),
  overwrite your files (the CSV included) or, with a helper that escaped the process group, a
  later submission's result file.  The CSV keeps every submission finished before such a crash.
  **Grade in a container or a throw-away account** when this matters.

Interrupts
----------
Ctrl-C stops grading cleanly: the kernel in flight is shut down, the submission in flight is not
scored, and the CSV (rewritten atomically after every finished submission) holds every
submission graded before.  Rerunning the same command skips the submissions already in the CSV
(``--regrade`` grades everything again).  The exit code is 130.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import importlib.util
import logging
import math
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptutor._validate import check_path, check_real, check_sequence
from dptutor.grading.feedback import Assignment, fmt_points
from dptutor.grading.record import grade_question
from dptutor.grading.registry import ASSIGNMENTS, get_assignment

__all__ = [
    "FEEDBACK_TAG",
    "GRADE_DEPENDENCIES",
    "SubmissionResult",
    "check_grade_dependencies",
    "grade_notebook",
    "grade_folder",
    "read_csv",
    "write_csv",
    "add_grade_arguments",
    "run_grade",
]

_GRADING_TAG = "dptutor-grading"
#: Cells with this tag (the template's feedback calls) are not run when grading.
FEEDBACK_TAG = "dptutor-check"
#: The modules grading needs beyond dptutor's own dependencies (the ``dptutor[grade]`` extra).
GRADE_DEPENDENCIES = ("nbclient", "nbformat", "jupytext", "ipykernel")
#: Timed calls run at most this long (seconds) before the kernel is interrupted.
TIMED_CELL_CAP = 5.0


#: The range of a time limit (seconds): the kernel client counts whole seconds (a shorter limit would
#: silently become 1 s), and a limit over a day is a typo.
MIN_TIMEOUT, MAX_TIMEOUT = 1.0, 86400.0


def _check_limits(timeout: object, total_timeout: object) -> tuple[float, float]:
    """``timeout`` (per cell) and ``total_timeout`` (per notebook) as floats in [1 s, 1 day]."""
    return (check_real(timeout, "timeout", low=MIN_TIMEOUT, high=MAX_TIMEOUT),
            check_real(total_timeout, "total_timeout", low=MIN_TIMEOUT, high=MAX_TIMEOUT))


def check_grade_dependencies() -> None:
    """Raise ``ImportError`` with a one-line "install dptutor[grade]" message if a module is missing."""
    missing = [m for m in GRADE_DEPENDENCIES if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"grading needs {', '.join(missing)}: pip install 'dptutor[grade]'")


@dataclass
class SubmissionResult:
    """Scores of one submitted notebook."""

    file: str
    assignment: str
    scores: dict[str, float]
    points: dict[str, float]
    messages: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in ("file", "assignment"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        for name in ("scores", "points"):
            table = getattr(self, name)
            if not isinstance(table, dict) or not all(isinstance(k, str) for k in table):
                raise TypeError(f"{name} must be a dict from question names to numbers")
            for value in table.values():
                check_real(value, name, low=0.0)
        if not isinstance(self.messages, dict) or not all(
                isinstance(k, str) and isinstance(v, list) and all(isinstance(m, str) for m in v)
                for k, v in self.messages.items()):
            raise TypeError("messages must be a dict from question names to lists of str")
        if not isinstance(self.notes, list) or not all(isinstance(n, str) for n in self.notes):
            raise TypeError("notes must be a list of str")

    @property
    def total(self) -> float:
        return round(sum(self.scores.values()), 2)

    def feedback_text(self) -> str:
        lines = [f"{self.file}: {fmt_points(self.total)} / {fmt_points(sum(self.points.values()))} points"]
        lines += [f"  note: {n}" for n in self.notes]
        for q, score in self.scores.items():
            lines.append(f"{q}: {fmt_points(score)} / {fmt_points(self.points[q])}")
            lines += [f"  - {m}" for m in self.messages.get(q, [])]
        return "\n".join(lines)

    def row(self, assignment: Assignment) -> list[str]:
        if not isinstance(assignment, Assignment):
            raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
        messages = list(self.notes) + [f"{q}: {m}" for q, ms in self.messages.items() for m in ms]
        return [self.file, *(fmt_points(self.scores[q.name]) for q in assignment.questions),
                fmt_points(self.total), " | ".join(messages)]


def _clamp(value: float, points: float) -> float:
    """A score inside [0, points] (NaN counts as 0)."""
    value = float(value)
    return 0.0 if not value > 0 else min(value, float(points))


def _read_notebook(path: Path) -> Any:
    import nbformat

    if path.suffix == ".ipynb":
        return nbformat.read(path, as_version=4)
    import jupytext

    return jupytext.read(path)


def _first_error(cells: Sequence) -> str | None:
    for index, cell in enumerate(cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"your code cell {index + 1} raised {out.get('ename')}: {out.get('evalue')}"
    return None


def _cell_error(cell: Any) -> dict[str, Any] | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _stray_task_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: drop the races that Ctrl-C or a time limit leaves behind.

    When grading is interrupted while a kernel starts or stops, nbclient's clean-up task can find
    jupyter_client's start-up future already settled (``InvalidStateError``) or cancelled; asyncio
    would print that task's traceback when it is collected. The outcome is already decided by the
    interrupt, so such a task has nothing to report. Anything else goes to asyncio's default handler.
    """
    if isinstance(context.get("exception"), (asyncio.InvalidStateError, asyncio.CancelledError)):
        return
    loop.default_exception_handler(context)


def _run_coroutine(factory: Callable[[], Any]) -> None:
    """``asyncio.run(factory())``, in a helper thread when an event loop already runs here (Jupyter)."""

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(_stray_task_errors)
        await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main())
        return
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(main())).result()


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("dptutor.grading.nbclient")
    log.propagate = False
    log.addHandler(logging.NullHandler())
    return log


@dataclass
class _Run:
    """What the kernel produced: one record (or the reason there is none) per question."""

    records: dict[str, Any] = field(default_factory=dict)
    kernel_pid: int | None = None


async def _execute(client: Any, nb: Any, source: str, timeout: float) -> tuple[Any, float]:
    import nbformat

    cell = nbformat.v4.new_code_cell(source, metadata={"tags": [_GRADING_TAG]})
    nb.cells.append(cell)
    client.timeout = max(1, int(math.ceil(timeout)))
    started = time.monotonic()
    await client.async_execute_cell(cell, len(nb.cells) - 1)
    return cell, time.monotonic() - started


async def _run_hidden(client: Any, nb: Any, a: Assignment, hidden: int, workdir: str, timeout: float,
                      run: _Run) -> None:
    async def run_cell(source: str, limit: float) -> tuple[Any, float]:
        return await _execute(client, nb, source, limit)

    for q in a.questions:  # each check runs here; the kernel only answers calls (dptutor.grading.record)
        run.records[q.name] = await grade_question(run_cell, a.name, q.name, workdir, timeout=timeout,
                                                   timed_cap=min(TIMED_CELL_CAP, timeout))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _kill_group(pid: int | None) -> None:
    """Kill the kernel's process group (the kernel runs in a session of its own): forked helpers die too.

    Called while the kernel is still alive, so that the group id cannot belong to anyone else yet.
    """
    if pid is None or pid <= 1 or pid == os.getpgrp():
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def grade_notebook(path: Path | str, assignment: str, *, timeout: float = 60,
                   total_timeout: float = 600) -> SubmissionResult:
    """Execute one submission in a fresh kernel and grade it (see the module docstring).

    ``timeout`` limits every cell (seconds; the kernel is interrupted and grading goes on),
    ``total_timeout`` the whole notebook (the kernel is shut down; questions not recorded by then
    score 0).  A submission that cannot be read, crashes or loops scores 0 on the questions it
    affects, with a note saying why; it never raises, except ``KeyboardInterrupt`` (Ctrl-C), after
    shutting its kernel down.
    """
    a = get_assignment(assignment)
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    timeout, total_timeout = _check_limits(timeout, total_timeout)
    check_grade_dependencies()
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    result = SubmissionResult(path.name, a.name, {q.name: 0.0 for q in a.questions},
                              {q.name: q.points for q in a.questions})
    try:
        nb = _read_notebook(path)
    except Exception as exc:
        result.notes.append(f"could not read the notebook: {type(exc).__name__}: {exc}")
        for q in a.questions:
            result.messages[q.name] = ["not graded: the notebook could not be read"]
        return result
    student = [c for c in nb.cells
               if c.cell_type == "code" and FEEDBACK_TAG not in c.get("metadata", {}).get("tags", [])]
    for cell in student:
        cell.outputs = []
        cell.execution_count = None
    run_nb = nbformat.v4.new_notebook(cells=list(student))
    run_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    hidden = secrets.randbits(62) + 2  # never 0 or 1: hidden parameters drawn for this submission
    run = _Run()
    with tempfile.TemporaryDirectory(prefix="dptutor-grade-") as workdir:
        client = NotebookClient(
            run_nb, timeout=max(1, int(math.ceil(timeout))), kernel_name="python3", allow_errors=True,
            interrupt_on_timeout=True, shutdown_kernel="immediate", record_timing=False,
            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"the cell ran longer than {timeout:g} s",
                              "traceback": []},
            resources={"metadata": {"path": workdir}},
        )
        client.log = _quiet_logger()

        async def execute() -> None:
            # The kernel's own stderr (start-up chatter) is not the student's output: that comes
            # through the kernel's messages.
            async with client.async_setup_kernel(stderr=subprocess.DEVNULL):
                run.kernel_pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
                try:
                    for index, cell in enumerate(student):
                        client.timeout = max(1, int(math.ceil(timeout)))
                        await client.async_execute_cell(cell, index)
                    await _run_hidden(client, run_nb, a, hidden, workdir, timeout, run)
                finally:
                    _kill_group(run.kernel_pid)

        async def limited() -> None:
            await asyncio.wait_for(execute(), timeout=total_timeout)

        started = time.monotonic()
        try:
            _run_coroutine(limited)
        except (KeyboardInterrupt, asyncio.CancelledError):
            # The kernel's group was killed (and the kernel shut down) while cancelling execute().
            raise KeyboardInterrupt from None
        except Exception as exc:  # time limit, dead kernel, kernel failed to start, ...
            if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or time.monotonic() - started >= total_timeout:
                result.notes.append(f"the notebook was stopped at the total time limit of {total_timeout:g} s")
            else:
                result.notes.append(f"execution stopped: {type(exc).__name__}: {exc}")
    error = _first_error(student)
    if error:
        result.notes.append(error)
    for q in a.questions:
        record = run.records.get(q.name)
        if record is None:
            result.messages[q.name] = ["not graded: the notebook ran out of time or its kernel died before this check"]
        elif isinstance(record, str):
            result.messages[q.name] = [record]
        else:
            fb = record
            result.scores[q.name] = _clamp(fb.score, q.points)
            result.messages[q.name] = list(fb.messages)
    return result


def grade_folder(assignment: str, folder: Path | str, *, timeout: float = 60, total_timeout: float = 600,
                 progress: Callable[[str], None] | None = None,
                 on_result: Callable[[SubmissionResult], None] | None = None,
                 skip: Sequence[str] = ()) -> list[SubmissionResult]:
    """Grade every ``.ipynb`` and ``.md`` notebook in ``folder`` (not recursive), in name order.

    ``on_result`` is called as soon as each submission is graded (the CLI appends it to the CSV);
    files named in ``skip`` are left out.  Ctrl-C raises ``KeyboardInterrupt`` after the finished
    submissions have gone through ``on_result``.
    """
    a = get_assignment(assignment)
    if not isinstance(folder, (str, Path)):
        raise TypeError(f"folder must be a path, got {type(folder).__name__}")
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder: submissions folder {folder} does not exist")
    timeout, total_timeout = _check_limits(timeout, total_timeout)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, got {type(progress).__name__}")
    if on_result is not None and not callable(on_result):
        raise TypeError(f"on_result must be callable, got {type(on_result).__name__}")
    skip = check_sequence(skip, "skip", min_len=0)
    if not all(isinstance(s, str) for s in skip):
        raise TypeError("skip must be a sequence of file names")
    done = set(skip)
    paths = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".ipynb", ".md") and p.name not in done)
    results = []
    for path in paths:
        if progress:
            progress(path.name)
        result = grade_notebook(path, a.name, timeout=timeout, total_timeout=total_timeout)
        results.append(result)
        if on_result:
            on_result(result)
    return results


# ---------------------------------------------------------------------------------------------
# the CSV: rewritten atomically after every submission
# ---------------------------------------------------------------------------------------------


def _header(a: Assignment) -> list[str]:
    return ["file", *(q.name for q in a.questions), "total", "messages"]


def read_csv(path: Path | str, assignment: str) -> list[list[str]]:
    """The rows of an existing scores CSV of ``assignment`` (ValueError naming ``csv`` if it is not one)."""
    a = get_assignment(assignment)
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"path: {path} cannot be read as a CSV ({exc})") from None
    if not rows:
        return []
    if rows[0] != _header(a) or any(len(r) != len(rows[0]) for r in rows[1:]):
        raise ValueError(f"path: {path} exists but is not a scores file of assignment {a.name!r}; "
                         "choose another --csv or delete it")
    return rows[1:]


def _write_rows(path: Path, header: list[str], rows: Sequence[Sequence[str]]) -> None:
    """Write the whole CSV to a temporary file beside ``path``, then rename it over ``path`` (atomic)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            writer.writerows(rows)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def write_csv(results: Sequence[SubmissionResult], path: Path | str, assignment: str) -> None:
    """One row per submission: file, one column per question, total, and the messages (atomically)."""
    a = get_assignment(assignment)
    path = check_path(path, "path")
    if any(not isinstance(r, SubmissionResult) for r in check_sequence(results, "results", min_len=0)):
        raise TypeError("results must be SubmissionResult objects")
    _write_rows(Path(path), _header(a), [r.row(a) for r in results])


# ---------------------------------------------------------------------------------------------
# command line (registered in dptutor.cli)
# ---------------------------------------------------------------------------------------------


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not (MIN_TIMEOUT <= value <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(f"expected a number of seconds in [{MIN_TIMEOUT:g}, {MAX_TIMEOUT:g}], got {text!r}")
    return value


def add_grade_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``python -m dptutor grade``."""
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError(f"parser must be an argparse.ArgumentParser, got {type(parser).__name__}")
    parser.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or .md)")
    parser.add_argument("--csv", type=Path, default=Path("scores.csv"),
                        help="output CSV, one row per submission, written after each one; submissions "
                             "already in it are skipped (default: %(default)s)")
    parser.add_argument("--feedback", type=Path, default=None, metavar="DIR",
                        help="also write one <submission>.txt feedback file per submission into DIR")
    parser.add_argument("--timeout", type=_positive, default=60,
                        help="time limit per cell in seconds (default: %(default)s)")
    parser.add_argument("--total-timeout", type=_positive, default=600,
                        help="time limit per notebook in seconds (default: %(default)s)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade every submission again, even those already in --csv")


def _validate_outputs(csv_path: Path, feedback: Path | None) -> str | None:
    """Why ``--csv`` or ``--feedback`` cannot be written (checked before any grading), or None."""
    if csv_path.is_dir():
        return f"--csv {csv_path} is a folder; give a file name such as {csv_path / 'scores.csv'}"
    parent = csv_path.parent
    if not parent.is_dir():
        return f"--csv {csv_path}: the folder {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"--csv {csv_path}: the folder {parent} is not writable"
    if csv_path.exists() and not csv_path.is_file():
        return f"--csv {csv_path} is not a regular file"
    if feedback is not None:
        if feedback.exists() and not feedback.is_dir():
            return f"--feedback {feedback} exists and is not a folder"
        try:
            feedback.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"--feedback {feedback} cannot be created ({exc.strerror})"
        if not os.access(feedback, os.W_OK):
            return f"--feedback {feedback} is not writable"
    return None


def run_grade(args: argparse.Namespace) -> int:
    """Handler of ``python -m dptutor grade``: exit code 0, 2 (bad arguments) or 130 (Ctrl-C)."""
    if not isinstance(args, argparse.Namespace):
        raise TypeError(f"args must be an argparse.Namespace, got {type(args).__name__}")
    try:
        check_grade_dependencies()
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    a = get_assignment(args.assignment)
    if not args.submissions.is_dir():
        print(f"error: {args.submissions} is not a folder", file=sys.stderr)
        return 2
    problem = _validate_outputs(args.csv, args.feedback)
    if problem is None and args.csv.exists() and not getattr(args, "regrade", False):
        try:
            rows = read_csv(args.csv, a.name)
        except ValueError as exc:
            problem = str(exc).replace("path: ", "--csv ", 1)
    else:
        rows = []
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    header = _header(a)
    previous = len(rows)
    _write_rows(args.csv, header, rows)  # the CSV exists (and is valid) from the start
    finished: list[SubmissionResult] = []

    def save(result: SubmissionResult) -> None:
        rows.append(result.row(a))
        _write_rows(args.csv, header, rows)
        if args.feedback is not None:
            target = args.feedback / f"{Path(result.file).stem}.txt"
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_text(result.feedback_text() + "\n", encoding="utf-8")
            os.replace(tmp, target)
        finished.append(result)
        print(f"{result.file}: {fmt_points(result.total)} / {fmt_points(a.points)}", flush=True)

    marker = args.csv.with_name(f".{args.csv.name}.inflight")
    crashed = _read_marker(marker)
    if crashed and crashed not in {r[0] for r in rows} and (args.submissions / crashed).is_file():
        # The previous run died (SIGKILL, power loss, or this submission killed the grader) while
        # grading it: score it 0 rather than let it kill every rerun.
        dead = SubmissionResult(crashed, a.name, {q.name: 0.0 for q in a.questions}, {q.name: q.points for q in a.questions},
                                notes=["the previous grading run stopped abruptly while running this notebook (did it kill "
                                       "the grader?): scored 0; delete its row from the CSV to grade it again"])
        save(dead)
    if previous:
        print(f"{previous} submission(s) already in {args.csv}: skipped (--regrade to grade them again)")

    def progress(name: str) -> None:
        _write_marker(marker, name)
        print(f"grading {name} ...", flush=True)

    try:
        grade_folder(a.name, args.submissions, timeout=args.timeout, total_timeout=args.total_timeout,
                     progress=progress, on_result=save, skip=[r[0] for r in rows])
    except KeyboardInterrupt:
        _unlink(str(marker))
        print(f"\ninterrupted: {len(finished)} submission(s) graded in this run, {len(rows)} in {args.csv} "
              "in all; the submission in flight was not scored. Rerun the same command to grade the rest.",
              file=sys.stderr, flush=True)
        return 130
    _unlink(str(marker))
    print(f"{len(finished)} submission(s) graded -> {args.csv} ({len(rows)} rows)")
    return 0


def _write_marker(marker: Path, name: str) -> None:
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(name, encoding="utf-8")
    os.replace(tmp, marker)


def _read_marker(marker: Path) -> str | None:
    try:
        text = marker.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if text and "/" not in text and "\\" not in text else None
