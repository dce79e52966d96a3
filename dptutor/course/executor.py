"""The notebook executor: the only code that executes student notebooks.

How a submission is graded
--------------------------
Each submission runs in a fresh Jupyter kernel (nbclient) in a sandbox of its own, cell by cell,
with a time limit per cell and one for the whole notebook.  Then every question is graded by its
check, which runs *here*, in the grader's process, in a grading run whose seed is drawn fresh for that
question with :mod:`secrets` (:func:`dptutor.course.remote.grade_question`).  The kernel never
sees a check, a seed or a grading run's parameter: whenever a check calls a student function, the grader
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
  type-checked; see :mod:`dptutor.course.answers`) and computes every score itself.  An answer
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
  kernel's output (every message counts, empty ones too: :mod:`dptutor.course.intake`) and drops any
  single message over :attr:`~dptutor.course.sandbox.Limits.message` bytes, so an output flood costs
  the student's own time, not the grader's memory.  The notebook file itself is bounded in size,
  cells and YAML before it is parsed (:func:`~dptutor.course.intake.read_student_cells`).
- Timing comes from the runner's clock around cells that only call the function; a student *can*
  make timing noisy by loading the CPU (the sandbox does not reserve cores), which only hurts
  that student's own timing questions; the limit is a factor 10.  Where the grader may make cgroups
  (below), each sandbox also gets a CPU share of its own, so that its busy processes cannot starve a
  neighbour graded beside it.
- In bubblewrap, the time limits (per cell and per notebook) count the sandbox's own CPU time
  (:mod:`dptutor.course.cputime`: the cgroup's counter, else ``/proc``, no privilege needed), with
  wall-clock time capped at :attr:`~dptutor.course.sandbox.Limits.wall_factor` times each limit.
  Without cgroups, a submission's busy processes still slow a neighbour down (Linux shares the CPU
  between sessions), but cannot use up the neighbour's limits, and use up their own at the pace of
  the cores they take.  Not counted: CPU time of short-lived processes that nobody in the sandbox
  waits for (they end at the wall-clock cap).  Other sandboxes' limits are wall-clock time.
- The kernel starts with a minimal environment of its own, and bubblewrap (the sandbox's PID 1) with
  an empty one: nothing of the grader's environment (a course secret, say) is readable inside.
- A kernel that cannot start (before any code of the submission runs) is the environment's failure,
  never a submission's zero: :class:`~dptutor.course.sandbox.EnvironmentFailure` stops the run.
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
  memory limit of ``--memory`` for the whole sandbox, removed when the submission ends.  With
  ``--no-sandbox`` none of the above holds: the kernel runs as your
  user, next to the grader, and can read or overwrite your files and kill your processes.

Interrupts
----------
Ctrl-C (or SIGTERM) at any moment, also during a cell, kills the sandbox in flight and raises
``KeyboardInterrupt`` (:mod:`dptutor.course.signals`); what happens to a run of many submissions is
in :mod:`dptutor.course.grade` and :mod:`dptutor.course.batch`.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import importlib.util
import logging
import math
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptutor._validate import check_real, check_str, renamed_parameters
from dptutor.assignments.feedback import UNSCORED, Assignment
from dptutor.assignments.registry import get_assignment
from dptutor.course.remote import check_carry_forward, grade_question
from dptutor.course import cgroups
from dptutor.course.cputime import CpuClock, Watchdog, limit_text, wall_capped_client
from dptutor.course.intake import FEEDBACK_TAG, MAX_NOTEBOOK_BYTES, capped_client, read_student_cells
from dptutor.course.result import SubmissionResult, check_grading_seeds
from dptutor.course.sandbox import SANDBOXES, EnvironmentFailure, Sandbox, find_sandbox, kernel_manager
from dptutor.course.signals import deferred_interrupts, run_coroutine
from dptutor.course.textsafe import display_name
from dptutor.course.workdirs import new_workdir, remove_stale_workdirs, remove_tree

__all__ = [
    "FEEDBACK_TAG",
    "GRADE_DEPENDENCIES",
    "MAX_NOTEBOOK_BYTES",
    "check_grade_dependencies",
    "remove_stale_workdirs",
    "grade_notebook",
]

_GRADING_TAG = "dptutor-grading"
#: The modules grading needs beyond dptutor's own dependencies (the ``dptutor[grade]`` extra).
GRADE_DEPENDENCIES = ("nbclient", "nbformat", "jupytext", "ipykernel")
#: Timed calls run at most this long (seconds) before the kernel is interrupted.
TIMED_CELL_CAP = 5.0
#: A kernel must answer within this many seconds of its start (nbclient's default), times the wall-clock factor.
_STARTUP_SECONDS = 60


#: The range of a time limit (seconds): the kernel client counts whole seconds (a shorter limit would
#: silently become 1 s), and a limit over a day is a typo.
MIN_TIMEOUT, MAX_TIMEOUT = 1.0, 86400.0


def check_limits(timeout: object, total_timeout: object) -> tuple[float, float]:
    """``timeout`` (per cell) and ``total_timeout`` (per notebook) as floats in [1 s, 1 day]."""
    return (check_real(timeout, "timeout", low=MIN_TIMEOUT, high=MAX_TIMEOUT),
            check_real(total_timeout, "total_timeout", low=MIN_TIMEOUT, high=MAX_TIMEOUT))


def check_grade_dependencies() -> None:
    """Raise ``ImportError`` with a one-line "install dptutor[grade]" message if a module is missing."""
    missing = [m for m in GRADE_DEPENDENCIES if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"grading needs {', '.join(missing)}: pip install 'dptutor[grade]'")


def _clamp(value: float, points: float) -> float:
    """A score inside [0, points] (NaN counts as 0)."""
    value = float(value)
    return 0.0 if not value > 0 else min(value, float(points))


def _first_error(cells: Sequence) -> str | None:
    for index, cell in enumerate(cells):
        over = limit_text(cell)
        if over is not None:  # the kernel reports the grader's interrupt as KeyboardInterrupt: not the student's
            return f"your code cell {index + 1} {over} and was stopped"
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"your code cell {index + 1} raised {out.get('ename')}: {out.get('evalue')}"
    return None


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
    #: Whether the kernel answered (kernel_info) before anything of the submission ran.
    started: bool = False
    #: Whether the sandbox used more CPU time than the notebook's time limit.
    over_cpu: bool = False


def _counts_cpu(box: Sandbox) -> bool:
    """Whether ``box``'s time limits count its own CPU time (bubblewrap: every process of the sandbox
    descends from the launcher), with wall-clock time capped at ``wall_factor`` times each limit."""
    return box.kind == "bwrap"


def _wall_factor(box: Sandbox) -> int:
    """The wall-clock cap of ``box``'s time limits, in multiples of each limit (1 where they are wall-clock time)."""
    return box.limits.wall_factor if _counts_cpu(box) else 1


def _cell_cap(client: Any, limit: float) -> int:
    """The kernel client's time-out (whole seconds of wall-clock time) of a cell limited to ``limit``."""
    watchdog = getattr(client, "watchdog", None)
    return max(1, int(math.ceil(limit * (watchdog.factor if watchdog is not None else 1))))


async def _execute(client: Any, nb: Any, source: str, timeout: float) -> tuple[Any, float]:
    import nbformat

    cell = nbformat.v4.new_code_cell(source, metadata={"tags": [_GRADING_TAG]})
    nb.cells.append(cell)
    clock = _cell_clock(client)
    started = clock()
    await _execute_cell(client, cell, len(nb.cells) - 1, timeout)
    return cell, clock() - started


def _clock_kind(client: Any) -> str:
    """How a grading cell's seconds are counted: ``"cpu"`` (the sandbox's CPU time) where its watchdog counts it,
    else ``"wall"``; the grading session times the reference the same way."""
    return "wall" if getattr(client, "watchdog", None) is None else "cpu"


def _cell_clock(client: Any) -> Callable[[], float]:
    """The clock of a grading cell's seconds (:func:`_clock_kind`)."""
    return client.watchdog.clock.seconds if _clock_kind(client) == "cpu" else time.monotonic


async def _execute_cell(client: Any, cell: Any, index: int, limit: float) -> None:
    """Run one cell within ``limit`` seconds (of the sandbox's CPU time where it is counted)."""
    client.timeout = _cell_cap(client, limit)
    watchdog = getattr(client, "watchdog", None)
    if watchdog is not None:
        watchdog.start_cell(cell, limit)
    try:
        await client.async_execute_cell(cell, index)
    finally:
        if watchdog is not None:
            watchdog.end_cell()


async def _run_checks(client: Any, nb: Any, a: Assignment, grading_seeds: dict[str, int], workdir: str, timeout: float,
                      run: _Run, carry_forward: bool = False) -> None:
    async def run_cell(source: str, limit: float) -> tuple[Any, float]:
        return await _execute(client, nb, source, limit)

    for q in a.questions:  # each check runs here; the kernel only answers calls (dptutor.assignments.record)
        run.records[q.name] = await grade_question(run_cell, a.name, q.name, workdir, timeout=timeout,
                                                   timed_cap=min(TIMED_CELL_CAP, timeout), grading_seed=grading_seeds[q.name],
                                                   carry_forward=carry_forward,
                                                   clock=_clock_kind(client))


def _student_cells(path: Path) -> list[Any]:
    """The submission's code cells (:func:`~dptutor.course.intake.read_student_cells`; any error: unreadable)."""
    return read_student_cells(path)


def resolve_sandbox(sandbox: Sandbox | str | None) -> Sandbox:
    if sandbox is None:
        return find_sandbox("auto")
    if isinstance(sandbox, str):
        if sandbox not in SANDBOXES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {sandbox!r}")
        return find_sandbox(sandbox)
    if not isinstance(sandbox, Sandbox):
        raise TypeError(f"sandbox must be a Sandbox, a kind in {SANDBOXES} or None, got {type(sandbox).__name__}")
    return sandbox


@renamed_parameters(hidden="grading_seeds")
def grade_notebook(path: Path | str, assignment: str, *, timeout: float = 60,
                   total_timeout: float = 600, sandbox: Sandbox | str | None = None,
                   grading_seeds: dict[str, int] | None = None, name: str | None = None,
                   carry_forward: bool = False) -> SubmissionResult:
    """Execute one submission in a fresh kernel in ``sandbox`` and grade it (see the module docstring).

    ``timeout`` limits every cell (seconds; the kernel is interrupted and grading goes on),
    ``total_timeout`` the whole notebook (the sandbox is killed; questions not recorded by then
    score 0); in bubblewrap both count the sandbox's own CPU time, with wall-clock time capped at
    the sandbox's ``limits.wall_factor`` times each (:mod:`dptutor.course.cputime`).  ``sandbox`` is a
    :class:`~dptutor.course.sandbox.Sandbox`, a kind ("bwrap", ..., "none") or None for bubblewrap
    (:class:`~dptutor.course.sandbox.SandboxUnavailable` if it cannot run here).  A submission that
    cannot be read, crashes or loops scores 0 on the questions it affects, with a note saying why; it
    never raises, except ``KeyboardInterrupt`` (Ctrl-C or SIGTERM), after killing its sandbox, and
    :class:`~dptutor.course.sandbox.EnvironmentFailure` when a kernel could not start twice (no code
    of the submission ran: the environment is broken, and no score is due).  ``grading_seeds`` gives some questions'
    grading seeds (a regrade passes the ones saved in the scores CSV; ``hidden`` is its deprecated
    alias); the others are drawn fresh with :mod:`secrets`, and the result's ``grading_seeds`` holds them all.  ``name`` is the
    submission's name in the result (default: the file name).  ``carry_forward`` grades with error
    carried forward (refused, naming it, by an assignment that has none to carry).
    """
    a = get_assignment(assignment)
    carry_forward = check_carry_forward(carry_forward, a)
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    timeout, total_timeout = check_limits(timeout, total_timeout)
    seeds = check_grading_seeds({} if grading_seeds is None else grading_seeds, "grading_seeds",
                                {q.name for q in a.questions})
    if name is not None:
        check_str(name, "name", allow_empty=False)
    sandbox = resolve_sandbox(sandbox)
    check_grade_dependencies()
    import nbformat

    path = Path(path)
    for q in a.questions:  # never 0 or 1: grading seeds drawn for this submission
        seeds.setdefault(q.name, secrets.randbits(62) + 2)
    result = SubmissionResult(name or display_name(path.name), a.name, {q.name: 0.0 for q in a.questions},
                              {q.name: q.points for q in a.questions}, grading_seeds=dict(seeds),
                              carry_forward=carry_forward)
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
    run = _run_twice(run_nb, student, _Job(a, seeds, timeout, total_timeout, carry_forward), sandbox, result)
    error = _first_error(student)
    if error:
        result.notes.append(error)
    _record_scores(result, a, run)
    return result


@dataclass(frozen=True)
class _Job:
    """What one submission's run needs besides its notebook: the assignment, seeds and limits."""

    assignment: Assignment
    seeds: dict[str, int]
    timeout: float
    total_timeout: float
    carry_forward: bool


def _record_scores(result: SubmissionResult, a: Assignment, run: _Run) -> None:
    """Each question's score and messages from its record (or why there is none)."""
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


def _run_twice(run_nb: Any, student: list[Any], job: _Job, sandbox: Sandbox, result: SubmissionResult) -> _Run:
    """:func:`_run_in_sandbox`, once more if the kernel could not start (a machine under load), then
    :class:`~dptutor.course.sandbox.EnvironmentFailure`."""
    for attempt in (1, 2):
        run = _Run()
        try:
            _run_in_sandbox(run_nb, student, job, sandbox, run, result)
            return run
        except EnvironmentFailure:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _run_in_sandbox(run_nb: Any, student: list[Any], job: _Job, sandbox: Sandbox, run: _Run,
                    result: SubmissionResult) -> None:
    """Run the student's cells, then the grading cells, in a fresh kernel in a sandbox of its own,
    within the total time limit; a time-out or a dead kernel becomes a note of ``result``."""
    root = new_workdir()
    workdir, kernel_dir = os.path.join(root, "work"), os.path.join(root, "kernel")
    os.mkdir(workdir)
    os.mkdir(kernel_dir)
    box_name = f"dptutor-{os.path.basename(root)}"
    limits = sandbox.limits
    if limits.cpu_seconds < job.total_timeout + 30:  # the CPU limit never cuts a run the time limits allow
        limits = dataclasses.replace(limits, cpu_seconds=int(job.total_timeout) + 30)
    box = Sandbox(sandbox.kind, sandbox.executable, limits, sandbox.image)
    client: Any = None
    factor = _wall_factor(box)
    try:
        client_class = capped_client(box.limits.output)
        client = (wall_capped_client(client_class) if _counts_cpu(box) else client_class)(
            run_nb, km=kernel_manager(box, workdir, kernel_dir, box_name), timeout=max(1, int(math.ceil(job.timeout))),
            allow_errors=True, interrupt_on_timeout=True, shutdown_kernel="immediate", record_timing=False,
            # a kernel starting beside a busy neighbour gets a small share of the CPU: the same wall-clock cap
            startup_timeout=_STARTUP_SECONDS * factor,
            error_on_timeout={"ename": "CellTimeoutError", "evalue": "the cell ran past its time limit", "traceback": []},
            resources={"metadata": {"path": workdir}},
        )
        client.log = _quiet_logger()
        started = time.monotonic()
        try:
            run_coroutine(lambda: _execute_all(client, run_nb, student, job, workdir, box, box_name, run))
        except (KeyboardInterrupt, asyncio.CancelledError):
            # The sandbox was killed (and the kernel shut down) while cancelling the run.
            raise KeyboardInterrupt from None
        except Exception as exc:  # time limit, dead kernel, kernel failed to start, ...
            if run.over_cpu:
                result.notes.append(f"the notebook was stopped at its total time limit of {job.total_timeout:g} s "
                                    "of CPU time")
            elif isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or \
                    time.monotonic() - started >= job.total_timeout * factor:
                result.notes.append(_wall_note(job.total_timeout, factor))
            elif not run.started:  # nothing of the submission ran yet: the environment failed, not the student
                raise EnvironmentFailure(_start_failure(exc)) from None
            else:
                result.notes.append(f"execution stopped: {type(exc).__name__}: {str(exc)[:500]}")
    finally:
        with deferred_interrupts():  # a second Ctrl-C (or the batch parent's SIGTERM) must not cut the clean-up
            box.stop(box_name, run.kernel_pid)
            kc = getattr(client, "kc", None)
            if kc is not None:  # start-up failed part-way: nbclient left the client's channels open
                kc.stop_channels()
            if client is not None:  # nbclient's exit hook of a failed start would fail at exit, noisily
                atexit.unregister(client._cleanup_kernel)
            remove_tree(root)


def _wall_note(total: float, factor: int) -> str:
    """The note of a notebook stopped by the wall clock (``factor`` times its ``total`` limit)."""
    if factor == 1:
        return f"the notebook was stopped at the total time limit of {total:g} s"
    return (f"the notebook was stopped after {total * factor:g} s of wall-clock time, the cap of {factor} times its "
            f"total time limit of {total:g} s of CPU time (it waited or slept)")


def _start_failure(exc: BaseException) -> str:
    """The message of a kernel that could not start (twice) for a submission."""
    return (f"grading stopped: a kernel could not start ({type(exc).__name__}: {str(exc)[:300]}) before any code of "
            "the submission ran, so this is the grading environment's fault, not the student's, and the submission "
            "was not scored. Rerun the same command (finished rows are kept); if it fails again, run the grader "
            "with the Python of the environment where dptutor[grade] is installed, by an absolute path, and check "
            "the sandbox (`python -m dptutor grade --help`, --no-sandbox on trusted notebooks to tell the two apart)")


async def _execute_all(client: Any, run_nb: Any, student: list[Any], job: _Job, workdir: str, box: Sandbox,
                       box_name: str, run: _Run) -> None:
    """The student's cells, then each question's check, within the total time limit (no extra task:
    Ctrl-C reaches this coroutine directly, and the CPU time watchdog only reschedules the time-out)."""
    factor = _wall_factor(box)
    async with asyncio.timeout(job.total_timeout * factor) as deadline:
        # The kernel's own stderr (start-up chatter) is not the student's output: that comes
        # through the kernel's messages.
        try:
            # cleanup_kc: nbclient stops the client's channels only when it made the kernel manager
            # itself; ours comes from the sandbox, so ask for it (else their sockets leak).
            async with client.async_setup_kernel(cleanup_kc=True, stderr=subprocess.DEVNULL,
                                                 stdout=subprocess.DEVNULL):
                run.kernel_pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
                run.started = True
                watch = _start_watchdog(client, job, box, box_name, run, deadline) if _counts_cpu(box) else None
                try:
                    for index, cell in enumerate(student):
                        await _execute_cell(client, cell, index, job.timeout)
                    await _run_checks(client, run_nb, job.assignment, job.seeds, workdir, job.timeout, run,
                                      job.carry_forward)
                finally:
                    if watch is not None:
                        watch.cancel()
                    box.stop(box_name, run.kernel_pid)
        finally:
            box.stop(box_name, getattr(getattr(client.km, "provisioner", None), "pid", None))


def _start_watchdog(client: Any, job: _Job, box: Sandbox, box_name: str, run: _Run, deadline: Any) -> Any:
    """Count the sandbox's CPU time against the time limits (:class:`~dptutor.course.cputime.Watchdog`): the
    client's cells are watched from now on; the task is returned (cancel it when the kernel stops)."""
    if run.kernel_pid is None:
        return None
    loop = asyncio.get_running_loop()

    def over_total() -> None:
        run.over_cpu = True
        deadline.reschedule(loop.time())

    clock = CpuClock(run.kernel_pid, lambda: cgroups.cpu_seconds(box_name))
    client.watchdog = Watchdog(clock, job.total_timeout, client.km.interrupt_kernel, over_total, box.limits.wall_factor)
    return asyncio.ensure_future(client.watchdog.run())
