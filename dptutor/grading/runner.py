"""The runner: the only code that executes student notebooks.

Every submission runs in a fresh Jupyter kernel (nbclient) with a per-cell and a total time
limit, after which *hidden* checks run in the same kernel, on the student's own namespace.  They
are the notebook checks with other seeds and parameters, and each runs in its own cell, so a
function that loops forever or crashes costs only the questions that use it.  Each hidden cell
prints one line, a random token followed by JSON, which the grader reads back.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptutor.grading.feedback import Assignment, Feedback, Finding, describe, fmt_points
from dptutor.grading.registry import ASSIGNMENTS, check, get_assignment

__all__ = ["FEEDBACK_TAG", "SubmissionResult", "grade_in_kernel", "grade_notebook", "grade_folder",
           "write_csv", "add_grade_arguments", "run_grade"]

_GRADING_TAG = "dptutor-grading"
#: Cells with this tag (the template's feedback calls) are not run when grading.
FEEDBACK_TAG = "dptutor-check"


def grade_in_kernel(assignment: str, question: str, namespace: Mapping[str, Any], token: str) -> None:
    """Hidden check, run in the student's kernel: print ``token`` and the Feedback as JSON."""
    a = get_assignment(assignment)
    q = a.question(question)
    missing = [n for n in q.needs if n not in namespace]
    if missing:
        fb = Feedback(a.name, q.name, q.title, 0.0, q.points, status="missing", findings=(Finding(
            False, f"{', '.join(missing)} is not defined in your notebook: keep the template's names, and "
                   "check that the cell defining it runs without error"),))
    else:
        fb = check(assignment, question, *(namespace[n] for n in q.needs), hidden=True)
    print(token + json.dumps(fb.to_json()), flush=True)


@dataclass
class SubmissionResult:
    """Scores of one submitted notebook."""

    file: str
    assignment: str
    scores: dict[str, float]
    points: dict[str, float]
    messages: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

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


def _read_notebook(path: Path):
    import nbformat

    if path.suffix == ".ipynb":
        return nbformat.read(path, as_version=4)
    import jupytext

    return jupytext.read(path)


def _grading_cells(assignment: Assignment, token: str) -> list:
    import nbformat

    cells = []
    for q in assignment.questions:
        source = (f"__import__('dptutor.grading', fromlist=['grade_in_kernel']).grade_in_kernel("
                  f"{assignment.name!r}, {q.name!r}, globals(), {token!r})")
        cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": [_GRADING_TAG]}))
    return cells


def _first_error(cells: Sequence) -> str | None:
    for index, cell in enumerate(cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"your code cell {index + 1} raised {out.get('ename')}: {out.get('evalue')}"
    return None


def _hidden_feedback(cell: Mapping, token: str) -> dict[str, Any] | None:
    """The Feedback JSON that :func:`grade_in_kernel` printed in ``cell``, or None.

    The token need not start a line: the student's code, run by the check, may have printed
    something without a newline just before.
    """
    fb = None
    for out in cell.get("outputs", []):
        text = out.get("text", "") if out.get("output_type") == "stream" else ""
        if token in text:
            fb = json.loads(text.rsplit(token, 1)[1].split("\n", 1)[0])
    return fb


def _run_coroutine(factory: Callable[[], Any]) -> None:
    """``asyncio.run(factory())``, in a helper thread when an event loop already runs here (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(factory())
        return
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(factory())).result()


def grade_notebook(path: Path | str, assignment: str, *, timeout: float = 60,
                   total_timeout: float = 600) -> SubmissionResult:
    """Execute one submission in a fresh kernel and grade it with the hidden checks.

    ``timeout`` limits every cell (seconds; the kernel is interrupted and grading goes on),
    ``total_timeout`` the whole notebook (the kernel is shut down; questions not graded by then
    score 0).  A submission that cannot be read, crashes or loops scores 0 on the questions it
    affects, with a note saying why; it never raises.
    """
    import nbformat
    from nbclient import NotebookClient

    a = get_assignment(assignment)
    path = Path(path)
    result = SubmissionResult(path.name, a.name, {q.name: 0.0 for q in a.questions},
                              {q.name: q.points for q in a.questions})
    try:
        nb = _read_notebook(path)
    except Exception as exc:
        result.notes.append(f"could not read the notebook: {describe(exc)}")
        for q in a.questions:
            result.messages[q.name] = ["not graded: the notebook could not be read"]
        return result
    student = [c for c in nb.cells if c.cell_type == "code" and FEEDBACK_TAG not in c.get("metadata", {}).get("tags", [])]
    for cell in student:
        cell.outputs = []
        cell.execution_count = None
    token = f"DPTUTOR-RESULT-{secrets.token_hex(8)} "
    grading = _grading_cells(a, token)
    run_nb = nbformat.v4.new_notebook(cells=student + grading)
    run_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with tempfile.TemporaryDirectory(prefix="dptutor-grade-") as workdir:
        client = NotebookClient(
            run_nb,
            timeout=max(1, int(math.ceil(timeout))),
            kernel_name="python3",
            allow_errors=True,
            interrupt_on_timeout=True,
            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"the cell ran longer than {timeout:g} s",
                              "traceback": []},
            shutdown_kernel="immediate",
            record_timing=False,
            resources={"metadata": {"path": workdir}},
        )

        async def run() -> None:
            # The kernel's own stderr (start-up chatter) is not the student's output: that comes
            # through the kernel's messages.
            await asyncio.wait_for(client.async_execute(stderr=subprocess.DEVNULL), timeout=total_timeout)

        started = time.monotonic()
        try:
            _run_coroutine(run)
        except Exception as exc:  # time limit, dead kernel, kernel failed to start, ...
            # Cancelling at the time limit shuts the kernel down, which may surface as a dead kernel.
            if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or time.monotonic() - started >= total_timeout:
                result.notes.append(f"the notebook was stopped at the total time limit of {total_timeout:g} s")
            else:
                result.notes.append(f"execution stopped: {describe(exc)}")
    error = _first_error(student)
    if error:
        result.notes.append(error)
    for q, cell in zip(a.questions, grading):
        fb = _hidden_feedback(cell, token)
        if fb is not None:
            result.scores[q.name] = float(fb["score"])
            result.messages[q.name] = list(fb["messages"])
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if any(e.get("ename") in ("CellTimeoutError", "KeyboardInterrupt") for e in errors):
            why = f"not graded: checking it ran longer than {timeout:g} s (an endless loop?)"
        elif errors:
            why = f"not graded: the check crashed with {errors[0].get('ename')}: {errors[0].get('evalue')}"
        else:
            why = "not graded: the notebook ran out of time or its kernel died before this check"
        result.messages[q.name] = [why]
    return result


def grade_folder(assignment: str, folder: Path | str, *, timeout: float = 60, total_timeout: float = 600,
                 progress: Callable[[str], None] | None = None) -> list[SubmissionResult]:
    """Grade every ``.ipynb`` and ``.md`` notebook in ``folder`` (not recursive), in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"submissions folder {folder} does not exist")
    get_assignment(assignment)
    paths = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".ipynb", ".md"))
    results = []
    for path in paths:
        if progress:
            progress(path.name)
        results.append(grade_notebook(path, assignment, timeout=timeout, total_timeout=total_timeout))
    return results


def write_csv(results: Sequence[SubmissionResult], path: Path | str, assignment: str) -> None:
    """One row per submission: file, one column per question, total, and the messages."""
    a = get_assignment(assignment)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["file", *(q.name for q in a.questions), "total", "messages"])
        for r in results:
            messages = list(r.notes) + [f"{q}: {m}" for q, ms in r.messages.items() for m in ms]
            writer.writerow([r.file, *(fmt_points(r.scores[q.name]) for q in a.questions),
                             fmt_points(r.total), " | ".join(messages)])

def _positive(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_grade_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``python -m dptutor grade``."""
    parser.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or .md)")
    parser.add_argument("--csv", type=Path, default=Path("scores.csv"),
                        help="output CSV, one row per submission (default: %(default)s)")
    parser.add_argument("--feedback", type=Path, default=None, metavar="DIR",
                        help="also write one <submission>.txt feedback file per submission into DIR")
    parser.add_argument("--timeout", type=_positive, default=60,
                        help="time limit per cell in seconds (default: %(default)s)")
    parser.add_argument("--total-timeout", type=_positive, default=600,
                        help="time limit per notebook in seconds (default: %(default)s)")


def run_grade(args: argparse.Namespace) -> int:
    """Handler of ``python -m dptutor grade``."""
    a = get_assignment(args.assignment)
    if not args.submissions.is_dir():
        print(f"error: {args.submissions} is not a folder", file=sys.stderr)
        return 2
    results = grade_folder(a.name, args.submissions, timeout=args.timeout, total_timeout=args.total_timeout,
                           progress=lambda name: print(f"grading {name} ...", flush=True))
    write_csv(results, args.csv, a.name)
    if args.feedback is not None:
        args.feedback.mkdir(parents=True, exist_ok=True)
        for r in results:
            (args.feedback / f"{Path(r.file).stem}.txt").write_text(r.feedback_text() + "\n", encoding="utf-8")
    for r in results:
        print(f"{r.file}: {fmt_points(r.total)} / {fmt_points(a.points)}")
    print(f"{len(results)} submission(s) graded -> {args.csv}")
    return 0
