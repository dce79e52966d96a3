"""The batch runner: a folder of submissions graded one after another, or by several worker processes.

Each submission is graded by :func:`~dptutor.course.executor.grade_notebook` in a sandbox of its
own.  With ``workers`` > 1 each runs in a forked child process; on Ctrl-C or SIGTERM the children
kill their sandboxes and exit, the parent waits for them, and only the submissions in flight are
lost; a child also stops when the parent dies (``PR_SET_PDEATHSIG``), and the parent deletes any work
folder a child leaves (its name carries the child's process id).  A kernel that cannot start
(:class:`~dptutor.course.sandbox.EnvironmentFailure`) stops the whole run, in either mode.  :func:`read_csv` and
:func:`write_csv` read and write a scores CSV of plain results (:mod:`dptutor.course.scores`).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dptutor._validate import check_path, check_sequence, check_workers, renamed_parameters
from dptutor.assignments.registry import get_assignment
from dptutor.course.intake import look_named
from dptutor.course.executor import check_limits, grade_notebook, remove_stale_workdirs, resolve_sandbox
from dptutor.course.remote import check_carry_forward
from dptutor.course.result import SubmissionResult, check_grading_seeds
from dptutor.course.sandbox import EnvironmentFailure, Sandbox
from dptutor.course.scores import ScoreRecord, read_scores, write_scores
from dptutor.course.signals import raise_interrupt
from dptutor.course.submissions import find_submissions
from dptutor.course.workdirs import remove_workdirs_of

__all__ = ["grade_folder", "read_csv", "write_csv"]


@renamed_parameters(hidden="grading_seeds")
def grade_folder(assignment: str, folder: Path | str, *, timeout: float = 60, total_timeout: float = 600,
                 progress: Callable[[str], None] | None = None,
                 on_result: Callable[[SubmissionResult], None] | None = None,
                 skip: Sequence[str] = (), sandbox: Sandbox | str | None = None, workers: int = 1,
                 only: Sequence[str] | None = None,
                 grading_seeds: dict[str, dict[str, int]] | None = None,
                 carry_forward: bool = False) -> list[SubmissionResult]:
    """Grade the submissions in ``folder`` (its layouts: :func:`~dptutor.course.submissions.find_submissions`),
    in name order; ValueError naming ``folder`` if it holds none or a sub-folder is ambiguous.

    ``on_result`` is called in this process as soon as each submission is graded (the CLI writes it to
    the CSV); submissions named in ``skip`` are left out, and only those named in ``only`` are graded
    when it is given.  ``grading_seeds`` maps a submission's name to the grading seeds to reuse (a regrade;
    ``hidden`` is its deprecated alias).
    Each submission runs in its own ``sandbox`` (see :func:`~dptutor.course.executor.grade_notebook`); ``workers`` > 1 grades
    that many at once, each in a child process of its own (at most one per CPU), with the same
    results.  Ctrl-C raises ``KeyboardInterrupt`` after the finished submissions have gone through
    ``on_result``; the submissions in flight are stopped (their sandboxes killed) and not reported.
    """
    a = get_assignment(assignment)
    if not isinstance(folder, (str, Path)):
        raise TypeError(f"folder must be a path, got {type(folder).__name__}")
    folder = Path(folder)
    status = look_named(folder, name="folder")  # a ValueError naming folder if it cannot be looked at
    if status is None or not stat.S_ISDIR(status.st_mode):
        raise ValueError(f"folder: submissions folder {folder} does not exist")
    timeout, total_timeout = check_limits(timeout, total_timeout)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, got {type(progress).__name__}")
    if on_result is not None and not callable(on_result):
        raise TypeError(f"on_result must be callable, got {type(on_result).__name__}")
    skip = check_sequence(skip, "skip", min_len=0)
    if not all(isinstance(s, str) for s in skip):
        raise TypeError("skip must be a sequence of file names")
    if only is not None and not all(isinstance(s, str) for s in check_sequence(only, "only", min_len=0)):
        raise TypeError("only must be a sequence of submission names")
    grading_seeds = {} if grading_seeds is None else grading_seeds
    if not isinstance(grading_seeds, dict) or not all(isinstance(k, str) for k in grading_seeds):
        raise TypeError("grading_seeds must be a dict from submission names to dicts of grading seeds")
    questions = {q.name for q in a.questions}
    grading_seeds = {k: check_grading_seeds(v, "grading_seeds", questions) for k, v in grading_seeds.items()}
    sandbox = resolve_sandbox(sandbox)
    done = set(skip)
    todo = [s for s in find_submissions(folder) if s.name not in done and (only is None or s.name in only)]
    workers = check_workers(workers, "workers", tasks=len(todo))
    remove_stale_workdirs()
    carry_forward = check_carry_forward(carry_forward, a)
    jobs = [(s.path, a.name, timeout, total_timeout, sandbox, grading_seeds.get(s.name), bool(carry_forward), s.name)
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
    """One submission graded; its texts made safe before they go anywhere (a pipe, the CSV, a terminal)."""
    path, assignment, timeout, total_timeout, sandbox, grading_seeds, carry_forward, name = job
    return grade_notebook(path, assignment, timeout=timeout, total_timeout=total_timeout, sandbox=sandbox,
                          grading_seeds=grading_seeds, name=name, carry_forward=carry_forward).made_safe()


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent dies (prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the child still ends with its submission's time limit
        pass


def _child(job: tuple, conn: Any, parent: int) -> None:
    """A worker process: grade one submission and send the result (or nothing, if interrupted)."""
    signal.signal(signal.SIGTERM, raise_interrupt)  # the parent's stop, or its death, stops grading
    _die_with_parent()
    try:
        if os.getppid() != parent:
            raise KeyboardInterrupt
        conn.send(_grade_job(job))
    except EnvironmentFailure as exc:  # the parent stops the run with this message
        conn.send(exc)
    except KeyboardInterrupt:
        os._exit(130)
    finally:
        conn.close()


def _grade_parallel(jobs: list[tuple], workers: int, progress: Callable[[str], None] | None,
                    on_result: Callable[[SubmissionResult], None] | None) -> list[SubmissionResult]:
    """``jobs`` graded by up to ``workers`` child processes at once, one per submission; results in finishing order."""
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
                    remove_workdirs_of(proc.pid)
                    if proc.exitcode == 130:
                        raise KeyboardInterrupt from None
                    a = get_assignment(job[1])
                    result = SubmissionResult(job[-1], a.name, {q.name: 0.0 for q in a.questions},
                                              {q.name: q.points for q in a.questions},
                                              grading_seeds=dict(job[5] or {}),
                                              notes=[f"the grading process of this notebook died (exit code "
                                                     f"{proc.exitcode}): scored 0; regrade it with --only"])
                finally:
                    receive.close()
                proc.join()
                remove_workdirs_of(proc.pid)
                if isinstance(result, EnvironmentFailure):
                    raise result
                if not isinstance(result, SubmissionResult):
                    raise RuntimeError("a grading process returned something other than a result")
                result = result.made_safe()
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
            remove_workdirs_of(proc.pid)  # whatever the child could not remove before it exited
        raise
    return results


# ---------------------------------------------------------------------------------------------
# the CSV: rewritten atomically after every submission
# ---------------------------------------------------------------------------------------------


def read_csv(path: Path | str, assignment: str) -> list[list[str]]:
    """The rows of an existing scores CSV of ``assignment`` (ValueError naming ``path`` if it is not
    one, belongs to another assignment or is corrupted; see :mod:`dptutor.course.scores`)."""
    a = get_assignment(assignment)
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    return [r.row(a) for r in read_scores(path, a)]


def write_csv(results: Sequence[SubmissionResult], path: Path | str, assignment: str) -> None:
    """One row per submission (:mod:`dptutor.course.scores`), written atomically."""
    a = get_assignment(assignment)
    path = check_path(path, "path")
    if any(not isinstance(r, SubmissionResult) for r in check_sequence(results, "results", min_len=0)):
        raise TypeError("results must be SubmissionResult objects")
    write_scores(path, a, [ScoreRecord(r) for r in results])
