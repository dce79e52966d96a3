"""The runner: the only code that executes student notebooks.

How a submission is graded
--------------------------
Each submission runs in a fresh Jupyter kernel (nbclient) in a sandbox of its own, cell by cell,
with a time limit per cell and one for the whole notebook.  Then every question is graded by its
check, which runs *here*, in the grader's process, with hidden parameters drawn fresh for that
question with :mod:`secrets` (:func:`dptutor.assignments.record.grade_question`).  The kernel never
sees a check, a seed or a hidden parameter: whenever a check calls a student function, the grader
writes that call's inputs as data (``.npz`` of numeric arrays and one JSON string, never a
pickle) to a file in the work folder, runs a cell that only calls the function on them, and reads
back what it returned, raised or modified.  Those cells name their files by a random base name
in the kernel's working folder, which is the work folder in every sandbox.  The grader parses each
answer strictly and rebuilds only the types its assignment allow-lists (never importing a module
or resolving a name taken from the kernel).  Timed questions time cells that make one call each,
with fresh inputs per repeat, by the runner's clock.  Replays the grader does itself (the audit's
evidence) are bounded in work and time before they start.  Scores are clamped to each question's
points.

Threat model: what a student can and cannot do
----------------------------------------------
The student's code runs in the kernel, and the kernel runs in a sandbox of its own, one per
submission (:mod:`dptutor.course.sandbox`; bubblewrap by default): new user, PID, IPC, UTS and
network namespaces, ``/usr``, the Python installation and ``dptutor`` mounted read-only, a private
writable work folder (the cwd, where the result files are written) and a size-capped private
``/tmp`` holding ``HOME`` and ``IPYTHONDIR``, limits on memory, file size, open files, CPU time and
(when the grader is not root) processes.  The grader talks to the kernel over unix sockets in a
folder shared with the sandbox (Jupyter's ``ipc`` transport; there is no network).

- Inside its kernel the student can patch anything: ``dptutor`` and its checks, ``numpy``,
  ``scipy``, ``json``, builtins, ``print``, the output streams.  None of that changes a verdict.
  Nothing the kernel prints is read (there is no token to forge), and nothing the kernel
  *concludes* is used: it only answers calls (what the student's functions returned, raised or
  modified on the grader's inputs) and reports the student's answer values.  The grader parses
  each answer (regular file only, size limits, numeric dtypes, allow-listed types, every field
  type-checked; see :mod:`dptutor.assignments.record`) and computes every score itself.  An answer
  that cannot be parsed, is missing or does not fit the call scores 0 for that question.
- Forged data is judged as the student's answer: it earns marks only if it is correct on inputs
  drawn fresh for this submission, inside the time limits, which is what a correct function does.
- Outside its kernel the student can reach nothing that matters: the installed package and the
  Python environment are read-only; the instructor's files, the solutions, the other submissions,
  the CSV and the grader's processes are not in the sandbox's file system or PID namespace;
  files written anywhere (IPython startup files in the home folder included) vanish with the sandbox.  The
  kernel cannot signal the grader or a later submission.  Everything the submission started,
  ``start_new_session`` and double-forked helpers included, dies with the sandbox when the
  submission ends: the grader kills the sandbox's launcher, and ``--die-with-parent`` takes the
  PID namespace's init, hence every process in it, along (also when the grader itself is killed).
- The grader keeps at most :attr:`~dptutor.course.sandbox.Limits.output` characters of the
  kernel's output and drops any single message over :attr:`~dptutor.course.sandbox.Limits.message`
  bytes, so an output flood costs the student's own time, not the grader's memory.
- Timing comes from the runner's clock around cells that only call the function; a student *can*
  make timing noisy by loading the CPU (the sandbox does not reserve cores), which only hurts
  that student's own timing questions; the limit is a factor 10.
- Not covered (out of scope of a user-space sandbox; grade on a machine you can afford to lose
  if they matter): kernel exploits and bugs in bubblewrap, CPU side channels, filling the disk
  through the work folder within the time limit (each file is capped, the folder is deleted
  after the submission), memory held outside the address space (in-memory files such as
  ``memfd``, each under the file-size cap) until the time limit (bubblewrap sets no cgroup
  limits; as root the grader adds its own, below), and, when the grader runs as root on a machine
  whose cgroup pids controller it cannot write, fork bombs (Linux does not apply ``RLIMIT_NPROC``
  to root; ``grade`` then warns once: grade as an ordinary user, or use ``--sandbox podman`` with
  its ``--pids-limit``).  When the grader is root and a pids controller (cgroup v1 or v2) is
  writable, each sandbox runs in a cgroup of its own with ``pids.max`` = the process limit and a
  memory limit of ``--memory`` for the whole sandbox, removed when the submission ends.  With ``--no-sandbox`` none of the above holds: the kernel runs as your
  user, next to the grader, and can read or overwrite your files and kill your processes.

Interrupts
----------
Ctrl-C (or SIGTERM) at any moment, also during a cell, stops grading cleanly: the sandbox in
flight is killed, the submission in flight is not scored, and the CSV (rewritten atomically after
every finished submission) holds every submission graded before.  Rerunning the same command
skips the submissions already in the CSV (``--regrade`` grades everything again).  The exit code
is 130.  A run killed outright leaves a marker naming the submission in flight (which scores 0 on
the next run) and its work folder, which the next run deletes.  With ``--workers N`` each submission
is graded in a child process of its own (forked, in its own sandbox); on Ctrl-C or SIGTERM the
children kill their sandboxes and exit, the parent waits for them, and only the submissions in
flight are lost; a child also stops when the parent dies (``PR_SET_PDEATHSIG``).  When several
submissions were in flight in a run killed outright, the next run grades them one at a time first.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import logging
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptutor._validate import check_int, check_path, check_real, check_sequence, check_str, check_workers, is_bool
from dptutor.assignments.feedback import UNSCORED, Assignment, fmt_points
from dptutor.assignments.record import grade_question
from dptutor.assignments.registry import ASSIGNMENTS, get_assignment
from dptutor.course.sandbox import (INSTALL_HINT, SANDBOXES, Limits, Sandbox, SandboxUnavailable, find_sandbox,
                                      kernel_manager)

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


#: Hidden values (seeds of a question's hidden parameters) lie in [2, 2**63).
_HIDDEN_RANGE = (2, 2**63 - 1)


def _check_hidden(hidden: object, name: str, questions: Any) -> dict[str, int]:
    """``hidden`` as a dict from question names (of ``questions``) to seeds in :data:`_HIDDEN_RANGE`."""
    if not isinstance(hidden, dict) or not all(isinstance(k, str) and k in questions for k in hidden):
        raise TypeError(f"{name} must be a dict from question names to ints")
    for value in hidden.values():
        check_int(value, name, minimum=_HIDDEN_RANGE[0], maximum=_HIDDEN_RANGE[1])
    return dict(hidden)


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
    #: The seed of each question's hidden parameters (the scores CSV keeps them for regrades).
    hidden: dict[str, int] = field(default_factory=dict)
    #: Per graded question, each scored finding's check name and outcome, ``[[check, passed], ...]``
    #: (what configured weights re-score; empty when the question was not graded).
    checks: dict[str, list[list[Any]]] = field(default_factory=dict)
    #: Whether the questions were graded with error carried forward.
    carry_forward: bool = False

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
        _check_hidden(self.hidden, "hidden", self.scores)
        if not isinstance(self.checks, dict) or not all(
                k in self.scores and isinstance(v, list) and all(
                    isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and isinstance(c[1], bool) for c in v)
                for k, v in self.checks.items()):
            raise TypeError("checks must be a dict from question names to lists of [check name, passed]")
        if not isinstance(self.carry_forward, bool):
            raise TypeError(f"carry_forward must be True or False, got {type(self.carry_forward).__name__}")

    @property
    def total(self) -> float:
        return round(sum(self.scores.values()), 2)

    def feedback_text(self) -> str:
        """The student's report; every text from the submission is shown on one line (no forged lines)."""
        lines = [f"{one_line(self.file)}: {fmt_points(self.total)} / {fmt_points(sum(self.points.values()))} points"]
        lines += [f"  note: {one_line(n)}" for n in self.notes]
        for q, score in self.scores.items():
            lines.append(f"{one_line(q)}: {fmt_points(score)} / {fmt_points(self.points[q])}")
            lines += [f"  - {one_line(m)}" for m in self.messages.get(q, [])]
        return "\n".join(lines)

    def row(self, assignment: Assignment) -> list[str]:
        """The CSV row; text cells are escaped against formula injection (see :func:`csv_cell`)."""
        if not isinstance(assignment, Assignment):
            raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
        messages = list(self.notes) + [f"{q}: {m}" for q, ms in self.messages.items() for m in ms]
        return [csv_cell(self.file), *(fmt_points(self.scores[q.name]) for q in assignment.questions),
                fmt_points(self.total), csv_cell(" | ".join(one_line(m) for m in messages))]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: First characters that make a spreadsheet read a cell as a formula (OWASP's CSV injection list),
#: and the quote that escapes them.
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "'")


def one_line(text: str) -> str:
    """``text`` with control characters (newlines, terminal escapes) written as ``\\n``, ``\\x1b``, ..."""
    return _CONTROL.sub(lambda m: _SHORT.get(m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256
                                             else f"\\u{ord(m.group()):04x}"), text)


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: a quote before a leading ``= + - @``, tab, CR or quote."""
    return "'" + text if text.startswith(_FORMULA) else text


def csv_text(cell: str) -> str:
    """The text :func:`csv_cell` escaped (its inverse)."""
    return cell[1:] if cell.startswith("'") else cell


def display_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (surrogate escapes) become ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def feedback_name(file: str, *, shared: bool = False) -> str:
    """The feedback file of a submission: ``<stem>.txt``, or a short safe name plus a hash of the
    whole file name for odd names and for a stem that ``shared`` says another submission also has
    (``a.md`` and ``a.ipynb`` get different files)."""
    stem = file.rsplit(".", 1)[0] if "." in file[1:] else file
    if not shared and re.fullmatch(r"[\w][\w .,()+-]{0,99}", stem) and not stem.endswith((" ", ".")):
        return f"{stem}.txt"
    digest = hashlib.sha256(file.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    safe = re.sub(r"[^\w.-]+", "_", stem, flags=re.ASCII).strip("._")[:60]
    return f"{safe}-{digest}.txt" if safe else f"{digest}.txt"


def _clamp(value: float, points: float) -> float:
    """A score inside [0, points] (NaN counts as 0)."""
    value = float(value)
    return 0.0 if not value > 0 else min(value, float(points))


def _read_notebook(path: Path) -> Any:
    import nbformat

    with warnings.catch_warnings():  # nbformat's validation warnings are about the student's file
        warnings.simplefilter("ignore")
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
    """``asyncio.run(factory())``, in a helper thread when an event loop already runs here (Jupyter).

    In the main thread, Ctrl-C (SIGINT) and SIGTERM cancel the run and raise ``KeyboardInterrupt``
    at any moment, also while a cell executes: nbclient's own handlers (which shut the kernel down
    and let grading go on as if the kernel had died) are never installed.
    """

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_stray_task_errors)
        task = asyncio.current_task()
        interrupted: list[int] = []

        def on_signal(signum: int) -> None:
            interrupted.append(signum)
            if task is not None:
                task.cancel()

        ours = (signal.SIGINT, signal.SIGTERM)
        before = {signum: signal.getsignal(signum) for signum in ours}
        real_add, real_remove = loop.add_signal_handler, loop.remove_signal_handler
        try:
            for signum in ours:
                real_add(signum, on_signal, signum)
        except (RuntimeError, ValueError):  # not the main thread: the caller's own handling applies
            ours = ()
        else:
            loop.add_signal_handler = lambda sig, cb, *args: None if sig in ours else real_add(sig, cb, *args)  # type: ignore[method-assign]
            loop.remove_signal_handler = lambda sig: False if sig in ours else real_remove(sig)  # type: ignore[method-assign]
        try:
            await factory()
        except BaseException:
            if interrupted:  # whatever the cancelled run raised (a dead kernel, ...), it was Ctrl-C
                raise KeyboardInterrupt from None
            raise
        finally:
            for signum in ours:
                real_remove(signum)
                signal.signal(signum, before[signum])  # e.g. the CLI's SIGTERM handler
            for name in ("add_signal_handler", "remove_signal_handler"):
                loop.__dict__.pop(name, None)
        if interrupted:
            raise KeyboardInterrupt

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main())
        return
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(main())).result()


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("dptutor.course.nbclient")
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


async def _run_hidden(client: Any, nb: Any, a: Assignment, hidden: dict[str, int], workdir: str, timeout: float,
                      run: _Run, carry_forward: bool = False) -> None:
    async def run_cell(source: str, limit: float) -> tuple[Any, float]:
        return await _execute(client, nb, source, limit)

    for q in a.questions:  # each check runs here; the kernel only answers calls (dptutor.assignments.record)
        run.records[q.name] = await grade_question(run_cell, a.name, q.name, workdir, timeout=timeout,
                                                   timed_cap=min(TIMED_CELL_CAP, timeout), hidden=hidden[q.name],
                                                   carry_forward=carry_forward)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


#: The largest notebook file the grader reads.
MAX_NOTEBOOK_BYTES = 16 << 20


def _tags(cell: Any) -> list[str]:
    """A cell's tags (a malformed ``metadata.tags`` counts as none)."""
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _student_cells(path: Path) -> list[Any]:
    """The submission's code cells, outputs cleared, feedback cells left out (any error: unreadable)."""
    if path.is_symlink():
        raise ValueError("it is a symbolic link, not a file")
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"it is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
    nb = _read_notebook(path)
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("it has no list of cells")
    student = []
    for cell in cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise ValueError("a cell is not a notebook cell")
        if cell["cell_type"] != "code" or FEEDBACK_TAG in _tags(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise ValueError("a code cell's source is not text")
        student.append({"source": source, "metadata": {"tags": _tags(cell)}})
    return student


def _message_size(content: dict[str, Any]) -> int:
    """About how many characters an output message carries."""
    parts = [content.get("text"), content.get("evalue"), *(content.get("traceback") or [])]
    data = content.get("data")
    if isinstance(data, dict):
        parts += list(data.values())
    return sum(len(p) if isinstance(p, (str, bytes)) else len(str(p)) for p in parts if p is not None)


def _capped_client(limit: int) -> Any:
    """An nbclient ``NotebookClient`` that keeps at most ``limit`` characters of the kernel's output."""
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):
        kept = 0

        def output(self, outs: list, msg: dict, display_id: str | None, cell_index: int) -> Any:
            content = msg.get("content") or {}
            if msg.get("msg_type") == "error":  # always kept (the grader reads errors), but short
                content["evalue"] = str(content.get("evalue", ""))[:2000]
                content["traceback"] = []
                return super().output(outs, msg, display_id, cell_index)
            self.kept += _message_size(content)
            if self.kept > limit:
                if self.kept - _message_size(content) <= limit:
                    import nbformat

                    outs.append(nbformat.v4.new_output("stream", name="stderr",
                                                       text=f"[output over {limit} characters dropped by the grader]"))
                return None
            return super().output(outs, msg, display_id, cell_index)

    return CappedClient


def _workdir_parent() -> str:
    """Where work folders go: the temporary folder, unless its path is too long for the kernel's unix
    sockets (at most 107 bytes in all on Linux), then /tmp."""
    tmp = tempfile.gettempdir()
    return tmp if len(os.fsencode(tmp)) <= 60 else "/tmp"


def _workdir_root() -> str:
    """A new private folder for one submission; its name carries this process's id (see :func:`remove_stale_workdirs`)."""
    return tempfile.mkdtemp(prefix=f"dptutor-grade-{os.getpid()}-", dir=_workdir_parent())


def _remove_tree(root: str) -> None:
    """Delete a work folder (a few tries: a process of the sandbox may still be dying)."""
    for _ in range(50):
        shutil.rmtree(root, ignore_errors=True)
        if not os.path.lexists(root):
            return
        time.sleep(0.1)


def remove_stale_workdirs() -> None:
    """Delete the work folders of grading runs that were killed (their process no longer exists)."""
    tmp = Path(_workdir_parent())
    for folder in tmp.glob("dptutor-grade-*-*"):
        match = re.fullmatch(r"dptutor-grade-(\d+)-\w+", folder.name)
        if not match or not folder.is_dir() or folder.is_symlink():
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
            continue  # still running (or another user's process)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            continue


def _resolve_sandbox(sandbox: Sandbox | str | None) -> Sandbox:
    if sandbox is None:
        return find_sandbox("auto")
    if isinstance(sandbox, str):
        if sandbox not in SANDBOXES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {sandbox!r}")
        return find_sandbox(sandbox)
    if not isinstance(sandbox, Sandbox):
        raise TypeError(f"sandbox must be a Sandbox, a kind in {SANDBOXES} or None, got {type(sandbox).__name__}")
    return sandbox


def grade_notebook(path: Path | str, assignment: str, *, timeout: float = 60,
                   total_timeout: float = 600, sandbox: Sandbox | str | None = None,
                   hidden: dict[str, int] | None = None, name: str | None = None,
                   carry_forward: bool = False) -> SubmissionResult:
    """Execute one submission in a fresh kernel in ``sandbox`` and grade it (see the module docstring).

    ``timeout`` limits every cell (seconds; the kernel is interrupted and grading goes on),
    ``total_timeout`` the whole notebook (the sandbox is killed; questions not recorded by then
    score 0).  ``sandbox`` is a :class:`~dptutor.course.sandbox.Sandbox`, a kind ("bwrap", ...,
    "none") or None for bubblewrap (:class:`~dptutor.course.sandbox.SandboxUnavailable` if it
    cannot run here).  A submission that cannot be read, crashes or loops scores 0 on the
    questions it affects, with a note saying why; it never raises, except ``KeyboardInterrupt``
    (Ctrl-C or SIGTERM), after killing its sandbox.  ``hidden`` gives the seed of some questions'
    hidden parameters (a regrade passes the ones saved in the scores CSV); the others are drawn
    fresh with :mod:`secrets`, and the result's ``hidden`` holds them all.  ``name`` is the
    submission's name in the result (default: the file name).  ``carry_forward`` grades with error
    carried forward (refused, naming it, by an assignment that has none to carry).
    """
    a = get_assignment(assignment)
    if not is_bool(carry_forward):
        raise TypeError(f"carry_forward must be True or False, got {type(carry_forward).__name__}")
    if carry_forward and not a.carry_forward:
        raise ValueError(f"carry_forward: assignment {a.name!r} has no error to carry forward: {a.independent}")
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    timeout, total_timeout = _check_limits(timeout, total_timeout)
    seeds = _check_hidden({} if hidden is None else hidden, "hidden", {q.name for q in a.questions})
    if name is not None:
        check_str(name, "name", allow_empty=False)
    sandbox = _resolve_sandbox(sandbox)
    check_grade_dependencies()
    import nbformat

    path = Path(path)
    for q in a.questions:  # never 0 or 1: hidden parameters drawn for this submission
        seeds.setdefault(q.name, secrets.randbits(62) + 2)
    result = SubmissionResult(name or display_name(path.name), a.name, {q.name: 0.0 for q in a.questions},
                              {q.name: q.points for q in a.questions}, hidden=dict(seeds),
                              carry_forward=bool(carry_forward))
    if not sandbox.isolated:
        result.notes.append("graded WITHOUT a sandbox (--no-sandbox): the notebook ran as the grader's user")
    try:
        run_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c["source"], metadata=c["metadata"])
                                                 for c in _student_cells(path)])
    except Exception as exc:  # noqa: BLE001 - any way a file can fail to be a notebook
        result.notes.append(f"could not read the notebook: {type(exc).__name__}: {str(exc)[:500]}")
        for q in a.questions:
            result.messages[q.name] = ["not graded: the notebook could not be read"]
        return result
    student = list(run_nb.cells)  # the grading cells are appended to run_nb only
    run_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    run = _Run()
    root = _workdir_root()
    workdir, kernel_dir = os.path.join(root, "work"), os.path.join(root, "kernel")
    os.mkdir(workdir)
    os.mkdir(kernel_dir)
    box_name = f"dptutor-{os.path.basename(root)}"
    limits = sandbox.limits
    if limits.cpu_seconds < total_timeout + 30:  # the CPU limit never cuts a run the time limits allow
        limits = dataclasses.replace(limits, cpu_seconds=int(total_timeout) + 30)
    box = Sandbox(sandbox.kind, sandbox.executable, limits, sandbox.image)
    client: Any = None
    try:
        client = _capped_client(box.limits.output)(
            run_nb, km=kernel_manager(box, workdir, kernel_dir, box_name), timeout=max(1, int(math.ceil(timeout))),
            allow_errors=True, interrupt_on_timeout=True, shutdown_kernel="immediate", record_timing=False,
            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"the cell ran longer than {timeout:g} s",
                              "traceback": []},
            resources={"metadata": {"path": workdir}},
        )
        client.log = _quiet_logger()

        async def execute() -> None:
            # The kernel's own stderr (start-up chatter) is not the student's output: that comes
            # through the kernel's messages.
            try:
                # cleanup_kc: nbclient stops the client's channels only when it made the kernel manager
                # itself; ours comes from the sandbox, so ask for it (else their sockets leak).
                async with client.async_setup_kernel(cleanup_kc=True, stderr=subprocess.DEVNULL,
                                                     stdout=subprocess.DEVNULL):
                    run.kernel_pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
                    try:
                        for index, cell in enumerate(student):
                            client.timeout = max(1, int(math.ceil(timeout)))
                            await client.async_execute_cell(cell, index)
                        await _run_hidden(client, run_nb, a, seeds, workdir, timeout, run, bool(carry_forward))
                    finally:
                        box.stop(box_name, run.kernel_pid)
            finally:
                box.stop(box_name, getattr(getattr(client.km, "provisioner", None), "pid", None))

        async def limited() -> None:
            async with asyncio.timeout(total_timeout):  # no extra task: Ctrl-C reaches execute() directly
                await execute()

        started = time.monotonic()
        try:
            _run_coroutine(limited)
        except (KeyboardInterrupt, asyncio.CancelledError):
            # The sandbox was killed (and the kernel shut down) while cancelling execute().
            raise KeyboardInterrupt from None
        except Exception as exc:  # time limit, dead kernel, kernel failed to start, ...
            if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or time.monotonic() - started >= total_timeout:
                result.notes.append(f"the notebook was stopped at the total time limit of {total_timeout:g} s")
            else:
                result.notes.append(f"execution stopped: {type(exc).__name__}: {str(exc)[:500]}")
    finally:
        box.stop(box_name, run.kernel_pid)
        kc = getattr(client, "kc", None)
        if kc is not None:  # start-up failed part-way: nbclient left the client's channels open
            kc.stop_channels()
        _remove_tree(root)
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
            if fb.status == "graded":
                result.checks[q.name] = [[f.check, f.passed is True] for f in fb.findings if f.check != UNSCORED]
    return result


def grade_folder(assignment: str, folder: Path | str, *, timeout: float = 60, total_timeout: float = 600,
                 progress: Callable[[str], None] | None = None,
                 on_result: Callable[[SubmissionResult], None] | None = None,
                 skip: Sequence[str] = (), sandbox: Sandbox | str | None = None, workers: int = 1,
                 only: Sequence[str] | None = None,
                 hidden: dict[str, dict[str, int]] | None = None,
                 carry_forward: bool = False) -> list[SubmissionResult]:
    """Grade the submissions in ``folder`` (its layouts: :func:`~dptutor.course.submissions.find_submissions`),
    in name order; ValueError naming ``folder`` if it holds none or a sub-folder is ambiguous.

    ``on_result`` is called in this process as soon as each submission is graded (the CLI writes it to
    the CSV); submissions named in ``skip`` are left out, and only those named in ``only`` are graded
    when it is given.  ``hidden`` maps a submission's name to the hidden values to reuse (a regrade).
    Each submission runs in its own ``sandbox`` (see :func:`grade_notebook`); ``workers`` > 1 grades
    that many at once, each in a child process of its own (at most one per CPU), with the same
    results.  Ctrl-C raises ``KeyboardInterrupt`` after the finished submissions have gone through
    ``on_result``; the submissions in flight are stopped (their sandboxes killed) and not reported.
    """
    from dptutor.course.submissions import find_submissions

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
    if only is not None and not all(isinstance(s, str) for s in check_sequence(only, "only", min_len=0)):
        raise TypeError("only must be a sequence of submission names")
    hidden = {} if hidden is None else hidden
    if not isinstance(hidden, dict) or not all(isinstance(k, str) for k in hidden):
        raise TypeError("hidden must be a dict from submission names to dicts of hidden values")
    questions = {q.name for q in a.questions}
    hidden = {k: _check_hidden(v, "hidden", questions) for k, v in hidden.items()}
    sandbox = _resolve_sandbox(sandbox)
    done = set(skip)
    todo = [s for s in find_submissions(folder) if s.name not in done and (only is None or s.name in only)]
    workers = check_workers(workers, "workers", tasks=len(todo))
    remove_stale_workdirs()
    if not is_bool(carry_forward):
        raise TypeError(f"carry_forward must be True or False, got {type(carry_forward).__name__}")
    if carry_forward and not a.carry_forward:
        raise ValueError(f"carry_forward: assignment {a.name!r} has no error to carry forward: {a.independent}")
    jobs = [(s.path, a.name, timeout, total_timeout, sandbox, hidden.get(s.name), bool(carry_forward), s.name)
            for s in todo]
    if workers == 1:
        results = []
        for job in jobs:
            if progress:
                progress(job[-1])
            result = _grade_job(job)
            results.append(result)
            if on_result:
                on_result(result)
        return results
    return _grade_parallel(jobs, workers, progress, on_result)


def _grade_job(job: tuple) -> SubmissionResult:
    path, assignment, timeout, total_timeout, sandbox, hidden, carry_forward, name = job
    return grade_notebook(path, assignment, timeout=timeout, total_timeout=total_timeout, sandbox=sandbox,
                          hidden=hidden, name=name, carry_forward=carry_forward)


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent dies (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the child still ends with its submission's time limit
        pass


def _child(job: tuple, conn: Any, parent: int) -> None:
    """A worker process: grade one submission and send the result (or nothing, if interrupted)."""
    signal.signal(signal.SIGTERM, _raise_interrupt)  # the parent's stop, or its death, stops grading
    _die_with_parent()
    try:
        if os.getppid() != parent:
            raise KeyboardInterrupt
        conn.send(_grade_job(job))
    except KeyboardInterrupt:
        os._exit(130)
    finally:
        conn.close()


def _grade_parallel(jobs: list[tuple], workers: int, progress: Callable[[str], None] | None,
                    on_result: Callable[[SubmissionResult], None] | None) -> list[SubmissionResult]:
    """``jobs`` graded by up to ``workers`` child processes at once, one per submission; results in finishing order."""
    import multiprocessing
    import multiprocessing.connection

    context = multiprocessing.get_context("fork")  # the grader's modules are loaded already: cheap, fast
    pending = list(jobs)
    running: dict[Any, tuple[Any, tuple]] = {}  # receiving end -> (process, job)
    results: list[SubmissionResult] = []
    try:
        while pending or running:
            while pending and len(running) < workers:
                job = pending.pop(0)
                if progress:
                    progress(job[-1])
                receive, send = context.Pipe(duplex=False)
                proc = context.Process(target=_child, args=(job, send, os.getpid()), daemon=True,
                                       name=f"dptutor-grade-{len(results) + len(running)}")
                proc.start()
                send.close()
                running[receive] = (proc, job)
            for receive in multiprocessing.connection.wait(list(running)):
                proc, job = running.pop(receive)
                try:
                    result = receive.recv()
                except (EOFError, OSError):  # the worker died without a result (killed, out of memory)
                    proc.join()
                    if proc.exitcode == 130:
                        raise KeyboardInterrupt from None
                    a = get_assignment(job[1])
                    result = SubmissionResult(job[-1], a.name, {q.name: 0.0 for q in a.questions},
                                              {q.name: q.points for q in a.questions}, hidden=dict(job[5] or {}),
                                              notes=[f"the grading process of this notebook died (exit code "
                                                     f"{proc.exitcode}): scored 0; regrade it with --only"])
                finally:
                    receive.close()
                proc.join()
                if not isinstance(result, SubmissionResult):
                    raise RuntimeError("a grading process returned something other than a result")
                results.append(result)
                if on_result:
                    on_result(result)
    except BaseException:
        for proc, _ in running.values():  # each kills its sandbox on SIGTERM, then exits
            if proc.is_alive():
                proc.terminate()
        for proc, _ in running.values():
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        raise
    return results


# ---------------------------------------------------------------------------------------------
# the CSV: rewritten atomically after every submission
# ---------------------------------------------------------------------------------------------


def read_csv(path: Path | str, assignment: str) -> list[list[str]]:
    """The rows of an existing scores CSV of ``assignment`` (ValueError naming ``path`` if it is not
    one, belongs to another assignment or is corrupted; see :mod:`dptutor.course.scores`)."""
    from dptutor.course.scores import read_scores

    a = get_assignment(assignment)
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    return [r.row(a) for r in read_scores(path, a)]


def write_csv(results: Sequence[SubmissionResult], path: Path | str, assignment: str) -> None:
    """One row per submission (:mod:`dptutor.course.scores`), written atomically."""
    from dptutor.course.scores import ScoreRecord, write_scores

    a = get_assignment(assignment)
    path = check_path(path, "path")
    if any(not isinstance(r, SubmissionResult) for r in check_sequence(results, "results", min_len=0)):
        raise TypeError("results must be SubmissionResult objects")
    write_scores(path, a, [ScoreRecord(r) for r in results])


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


def _worker_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of workers, got {text!r}") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"expected a number of workers in [1, 256], got {text!r}")
    return value


def _mebibytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of MiB, got {text!r}") from None
    if not 256 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"expected a number of MiB in [256, {1 << 20}], got {text!r}")
    return value


def add_grade_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``python -m dptutor grade``."""
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError(f"parser must be an argparse.ArgumentParser, got {type(parser).__name__}")
    parser.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or .md)")
    parser.add_argument("--csv", type=Path, default=None,
                        help="output CSV, one row per submission, written after each one; submissions "
                             "already in it are skipped (default: scores-ASSIGNMENT.csv)")
    parser.add_argument("--feedback", type=Path, default=None, metavar="DIR",
                        help="also write one <submission>.txt feedback file per submission into DIR")
    parser.add_argument("--timeout", type=_positive, default=None,
                        help="time limit per cell in seconds (default: the config's limits.cell, else 60)")
    parser.add_argument("--total-timeout", type=_positive, default=None,
                        help="time limit per notebook in seconds (default: the config's limits.notebook, else 600)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade every submission again, even those already in --csv (with the hidden "
                             "values saved in their rows)")
    parser.add_argument("--only", default=None, metavar="SUBMISSION",
                        help="grade (or regrade) this one submission, given as its name in the CSV, its path or "
                             "its student identifier; its row is replaced, with the same hidden values")
    parser.add_argument("--workers", type=_worker_count, default=1, metavar="N",
                        help="grade N submissions at once, each in its own sandbox (default: %(default)s; "
                             "at most the number of CPUs)")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="grading configuration (.toml or .json): points, time limits, late policy, course")
    parser.add_argument("--course", default=None,
                        help="a course folder made by `course new` (its answer key grades assignments 3 and 4, "
                             "its grading.toml is the default --config), or a course identifier; recorded in "
                             "every row and checked on resume (default: the config's course, else none)")
    parser.add_argument("--overrides", type=Path, default=None, metavar="FILE",
                        help="CSV of manual score changes (student,question,score,reason), applied to every row")
    box = parser.add_mutually_exclusive_group()
    box.add_argument("--sandbox", choices=[k for k in SANDBOXES if k != "none"], default="auto",
                     help="isolation of each submission: bwrap (bubblewrap, the tested default; "
                          f"`{INSTALL_HINT}`), podman or docker (default: %(default)s = bwrap)")
    box.add_argument("--no-sandbox", action="store_true",
                     help="run the submissions as your own user, next to the grader: ONLY for notebooks you "
                          "trust (the CSV says so in every row)")
    parser.add_argument("--memory", type=_mebibytes, default=Limits().memory >> 20, metavar="MIB",
                        help="address-space limit of each process in the sandbox, in MiB (default: %(default)s)")
    parser.add_argument("--image", default=None, metavar="IMAGE",
                        help="container image for --sandbox podman|docker (default: python:3.11-slim; it must "
                             "run this Python, which is mounted read-only from the host)")


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


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _pick_only(wanted: str, submissions: Sequence[Any]) -> Any:
    """The one submission ``--only`` names: by its name, its path, or its student identifier."""
    by_name = [s for s in submissions if s.name == wanted]
    if by_name:
        return by_name[0]
    target = Path(wanted).resolve() if Path(wanted).exists() else None
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


def _submission_times(config: Any, submissions: Sequence[Any]) -> dict[str, Any]:
    """Each submission's time under the late policy: from the manifest, or the notebook's mtime."""
    import datetime as dt

    from dptutor.course.config import read_manifest

    if config.deadline is None:
        return {}
    if config.times == "mtime":
        return {s.name: dt.datetime.fromtimestamp(s.path.stat().st_mtime, dt.timezone.utc) for s in submissions}
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


def _failed(result: SubmissionResult) -> bool:
    """Whether the notebook itself failed: unreadable, crashed, out of time or a dead kernel."""
    return any(not n.startswith("graded WITHOUT a sandbox") for n in result.notes)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def run_grade(args: argparse.Namespace) -> int:
    """Handler of ``python -m dptutor grade``: exit code 0, 2 (bad arguments) or 130 (Ctrl-C)."""
    from dptutor.course.config import GradingConfig, load_config, read_overrides
    from dptutor.course.folders import load_course
    from dptutor.assignments.instances import INSTANCE_ASSIGNMENTS, course_scope
    from dptutor.course.scores import ScoreRecord, default_scores_name, read_scores, write_scores
    from dptutor.course.submissions import find_submissions

    if not isinstance(args, argparse.Namespace):
        raise TypeError(f"args must be an argparse.Namespace, got {type(args).__name__}")
    try:
        check_grade_dependencies()
    except ImportError as exc:
        return _error(str(exc))
    a = get_assignment(args.assignment)
    if not args.submissions.is_dir():
        return _error(f"{args.submissions} is not a folder")
    config = GradingConfig()
    course = getattr(args, "course", None)
    folder = None  # a course folder: its key grades assignments 3 and 4, its identifier goes into every row
    if course is not None and not Path(course).is_dir() and ("/" in course or os.sep in course):
        return _error(f"--course {course}: no such course folder (make one with `python -m dptutor course new`)")
    if course is not None and Path(course).is_dir():  # a course folder: its answer key (and config)
        try:
            folder = load_course(course)
        except ValueError as exc:
            return _error(f"--course {course}: {str(exc).replace('folder: ', '', 1)}")
        course = folder.name
        if getattr(args, "config", None) is None and folder.config.is_file():
            args.config = folder.config
    if getattr(args, "config", None) is not None:
        try:
            config = load_config(args.config, a)
        except (ValueError, TypeError) as exc:
            return _error(f"--config {args.config}: {str(exc).replace('path: ', '', 1)}")
    if course is not None and config.course and course != config.course:
        return _error(f"--course {course!r} differs from the config's course {config.course!r}")
    if folder is not None:  # its rows record its name and key fingerprint
        course = folder.identifier
    course = course if course is not None else (config.course or None)  # None: the CSV's own, if any
    timeout = args.timeout if args.timeout is not None else (config.cell_timeout or 60.0)
    total_timeout = args.total_timeout if args.total_timeout is not None else (config.notebook_timeout or 600.0)
    csv_path = args.csv if args.csv is not None else Path(default_scores_name(a))
    try:
        submissions = find_submissions(args.submissions)
    except ValueError as exc:
        return _error(str(exc).replace("folder: ", "", 1))
    problem = _validate_outputs(csv_path, args.feedback)
    if problem:
        return _error(problem)
    # Read whatever the CSV holds, --regrade or not: a file of another assignment or course, or a
    # corrupted one, is refused, never overwritten.
    overrides = None
    for flag, load in (("--csv", lambda: read_scores(csv_path, a, course=course) if csv_path.exists() else []),
                       ("--overrides", lambda: read_overrides(args.overrides, a, config)
                        if getattr(args, "overrides", None) is not None else None),
                       ("--config", lambda: _submission_times(config, submissions)),
                       ("--only", lambda: _pick_only(args.only, submissions) if getattr(args, "only", None) else None)):
        try:
            value = load()
        except (ValueError, TypeError) as exc:
            text = str(exc)
            return _error(text.replace("path: ", f"{flag} ", 1) if text.startswith("path: ") else text)
        if flag == "--csv":
            records = value
        elif flag == "--overrides":
            overrides = value
        elif flag == "--config":
            times = value
        else:
            only = value
    mixed = [r.result.file for r in records if r.result.carry_forward != config.carry_forward]
    if mixed and not getattr(args, "regrade", False):
        flag = "true" if config.carry_forward else "false"
        return _error(f"carry_forward is {flag} now, but {len(mixed)} row(s) of {csv_path} ({one_line(mixed[0])}, ...) "
                      f"were graded with carry_forward = {'false' if config.carry_forward else 'true'}: regrade them "
                      "all (--regrade) or write to another --csv, so that no file mixes the two")
    try:
        sandbox = _sandbox_of(args)
    except SandboxUnavailable as exc:
        return _error(str(exc))
    if not sandbox.isolated:
        print("warning: --no-sandbox: every submission runs as your user with access to your files and "
              "processes; grade this way only notebooks you trust (the CSV notes it in every row)",
              file=sys.stderr, flush=True)
    remove_stale_workdirs()  # of runs killed earlier, also when this run has nothing left to grade
    if course is None:  # no course given: rows keep the course the CSV already records
        course = records[0].course if records else ""
    configured = getattr(args, "config", None) is not None
    points = {q: p for q, p in config.question_points(a).items()} if configured else None

    def scored(result: SubmissionResult, old: ScoreRecord | None) -> ScoreRecord:
        """The row of ``result`` under this run's configuration and overrides (else its old row's)."""
        record = old or ScoreRecord(result, course)
        when = times.get(result.file)
        changes: dict[str, Any] = {"result": result, "course": course}
        if configured:
            changes.update(points=points, weights=config.weights,
                           late=config.late_factor(when) if config.deadline else 1.0,
                           submitted=when.isoformat() if when is not None else "")
        if overrides is not None:
            changes["overrides"] = tuple(o for o in overrides if o.student in (result.file, record.student))
        return dataclasses.replace(record, **changes)

    records = [scored(r.result, r) for r in records]
    if overrides is not None:
        known = {r.result.file for r in records} | {r.student for r in records} | \
            {s.name for s in submissions} | {s.student for s in submissions}
        for o in overrides:
            if o.student not in known:
                print(f"warning: --overrides: {o.student!r} is no submission here (neither a file nor a student "
                      "identifier); its override is not applied", file=sys.stderr)
    by_file = {r.result.file: i for i, r in enumerate(records)}
    write_scores(csv_path, a, records)  # the CSV exists (and is valid) from the start
    finished: list[SubmissionResult] = []
    started = time.monotonic()

    if only is not None:
        todo = [only.name]
    elif getattr(args, "regrade", False):
        todo = [s.name for s in submissions]
    else:
        todo = [s.name for s in submissions if s.name not in by_file]
    # Submissions whose plain feedback names would collide (a.md and a.ipynb) get hashed names.
    stems = collections.Counter(_feedback_file(s.name) for s in submissions)
    marker = csv_path.with_name(f".{csv_path.name}.inflight")
    crashed = [n for n in _read_inflight(marker) if n not in by_file and n in todo]
    count = {"n": len(todo)}

    def save(result: SubmissionResult) -> None:
        with _deferred_interrupts():  # a finished submission is saved whole, Ctrl-C or not
            index = by_file.get(result.file)
            record = scored(result, records[index] if index is not None else None)
            if index is None:
                by_file[result.file] = len(records)
                records.append(record)
            else:
                records[index] = record
            write_scores(csv_path, a, records)
            if args.feedback is not None:
                target = args.feedback / _feedback_file(result.file, shared=stems[_feedback_file(result.file)] > 1)
                tmp = target.with_name(f".{target.name}.tmp")
                tmp.write_text(_feedback_of(record) + "\n", encoding="utf-8")
                os.replace(tmp, target)
            finished.append(result)
            in_flight.discard(result.file)
            _write_inflight(marker, sorted(in_flight))
        k, n = len(finished), count["n"]
        elapsed = time.monotonic() - started
        left = f", about {_clock(elapsed / k * (n - k))} left" if k < n else ""
        print(f"{one_line(result.file)}: {fmt_points(record.total)} / {fmt_points(sum(record.question_points().values()))}"
              f"  [{k} of {n}, {_clock(elapsed)}{left}]", flush=True)

    in_flight: set[str] = set()
    if len(crashed) == 1:
        # The previous run died (SIGKILL, power loss, or this submission killed the grader) while
        # grading it alone: score it 0 rather than let it kill every rerun.
        todo.remove(crashed[0])
        count["n"] = len(todo) + 1
        save(SubmissionResult(crashed[0], a.name, {q.name: 0.0 for q in a.questions}, {q.name: q.points for q in a.questions},
                              notes=["the previous grading run stopped abruptly while running this notebook (did it kill "
                                     "the grader?): scored 0; regrade it with --only to grade it again"]))
    skipped = len(submissions) - len(todo) - (len(crashed) == 1)
    if skipped and only is None:
        print(f"{skipped} submission(s) already in {csv_path}: skipped (--regrade to grade them again)")
    if todo and a.name in INSTANCE_ASSIGNMENTS and folder is None:
        print(f"note: {a.name!r} is graded with the book's public self-study mysteries; give --course FOLDER (made "
              "by `course new`) to grade a course's submissions with its answer key", file=sys.stderr, flush=True)
    if todo:
        print(f"grading {len(todo)} submission(s) of {a.name!r} into {csv_path}"
              + (f" with {min(args.workers, os.cpu_count() or 1, len(todo))} workers" if getattr(args, "workers", 1) > 1 else ""),
              flush=True)

    def progress(name: str) -> None:
        in_flight.add(name)
        _write_inflight(marker, sorted(in_flight))
        print(f"grading {one_line(name)} ...", flush=True)

    saved_hidden = {r.result.file: dict(r.result.hidden) for r in records if r.result.hidden}
    previous_term = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)  # `kill` stops grading as Ctrl-C does
    try:
        # Several submissions in flight when a run died: grade those alone first (one of them may
        # kill the grader; alone, it is found and scored 0 on the next run).
        first = [n for n in crashed if len(crashed) > 1]
        for names, workers in ((first, 1), ([n for n in todo if n not in first], getattr(args, "workers", 1))):
            if names:
                # the course's mysteries and answers (forked workers inherit them)
                with course_scope(folder.key) if folder is not None else contextlib.nullcontext():
                    grade_folder(a.name, args.submissions, timeout=timeout, total_timeout=total_timeout,
                                 progress=progress, on_result=save, only=names, sandbox=sandbox, workers=workers,
                                 hidden={n: saved_hidden[n] for n in names if n in saved_hidden},
                                 carry_forward=config.carry_forward)
    except KeyboardInterrupt:
        _unlink(str(marker))
        print(f"\ninterrupted: {len(finished)} submission(s) graded in this run, {len(records)} in {csv_path} "
              "in all; the submission(s) in flight were not scored. Rerun the same command to grade the rest.",
              file=sys.stderr, flush=True)
        return 130
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous_term)
    _unlink(str(marker))
    print(f"{len(finished)} submission(s) graded -> {csv_path} ({len(records)} rows)")
    _print_summary(records, finished, time.monotonic() - started)
    return 0


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


def _feedback_of(record: Any) -> str:
    """A student's report as the CSV scores it: configured points, overrides (with their reasons), late multiplier."""
    r = record.result
    messages = {q: list(ms) for q, ms in r.messages.items()}
    for o in record.overrides:
        messages.setdefault(o.question, []).append(f"score set by the instructor: {o.reason}")
    notes = list(r.notes)
    final = record.final_scores()
    if record.late != 1:
        notes.append(f"submitted late: the total {fmt_points(round(sum(final.values()), 2))} is multiplied by "
                     f"{record.late:g}, giving {fmt_points(record.total)}")
    return SubmissionResult(r.file, r.assignment, final, record.question_points(), messages, notes).feedback_text()


def _feedback_file(name: str, *, shared: bool = False) -> str:
    """The feedback file of a submission (a sub-folder's notebook ``d/x.ipynb`` reads as ``d-x``)."""
    return feedback_name(name.replace("/", "-"), shared=shared)


def _sandbox_of(args: argparse.Namespace) -> Sandbox:
    """The sandbox the command line asks for (SandboxUnavailable if it cannot run here)."""
    limits = Limits(memory=int(getattr(args, "memory", Limits().memory >> 20)) << 20)
    if getattr(args, "no_sandbox", False):
        return find_sandbox("none", limits=limits)
    image = getattr(args, "image", None)
    return find_sandbox(getattr(args, "sandbox", "auto") or "auto", limits=limits,
                        **({"image": image} if image else {}))


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class _deferred_interrupts:
    """A block that Ctrl-C (or SIGTERM) does not cut: the signal is raised when the block ends."""

    def __enter__(self) -> None:
        self.pending: list[int] = []
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            self.previous = {s: signal.signal(s, lambda signum, frame: self.pending.append(signum))
                             for s in (signal.SIGINT, signal.SIGTERM)}

    def __exit__(self, *exc: object) -> None:
        if self.main:
            for s, handler in self.previous.items():
                signal.signal(s, handler)
        if self.pending:
            raise KeyboardInterrupt


def _write_inflight(marker: Path, names: Sequence[str]) -> None:
    """Remember the submissions in flight (JSON; a run that finishes deletes the marker)."""
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps({"files": list(names)}), encoding="utf-8")
    os.replace(tmp, marker)


def _read_inflight(marker: Path) -> list[str]:
    """The submissions in flight when a run died (either marker format), sane names only."""
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
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
