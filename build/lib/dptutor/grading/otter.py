"""Export an assignment for otter-grader 7.0.0 (Gradescope): ``python -m dptutor export-otter``.

:func:`export_otter` turns an instructor notebook into an otter "master" notebook: the solution
blocks become otter's ``# BEGIN SOLUTION`` blocks, and each feedback check cell becomes an otter
question whose tests call the same :func:`dptutor.grading.check`.  Stock otter gives all or nothing
per test and has no cell time limit, so:

- partial credit: each question's points are split into :data:`STEPS` hidden test cases; test ``i``
  passes when the dptutor score reaches ``i / STEPS`` of the points (:func:`reaches`), so otter's
  total is the dptutor score rounded down to a tenth of the question.  The check runs once per
  question (:func:`hidden_score` caches it);
- a time limit: the plugin :class:`dptutor.grading.otter_plugin.TimeLimit` adds a first cell that
  calls :func:`arm_time_limit`, which stops any cell, and any one question's check, that runs
  longer than the limit.

Otter runs the tests in the student's own process, so the trust model of :mod:`dptutor.grading.runner`
does not hold there; use ``dptutor grade`` when that matters.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

from dptutor._validate import check_int, check_real
from dptutor.grading.registry import check, get_assignment

__all__ = ["STEPS", "TimeLimitExceeded", "arm_time_limit", "export_otter", "hidden_score", "reaches",
           "feedback_clean"]

#: Hidden test cases per question (partial credit in steps of a tenth of the question).
STEPS = 10
_CACHE: dict[tuple[str, str, tuple[int, ...]], float] = {}
_HIDDEN = secrets.randbits(62) + 2  # hidden parameters drawn once per grading process
_CHECK_CALL = re.compile(r"^\s*check\.(q\d+)\((.*)\)\s*$")


#: The range of a time limit in seconds: the interval timer counts microseconds, and a limit longer
#: than a day is a typo.
MIN_TIME_LIMIT, MAX_TIME_LIMIT = 1e-3, 86400.0
#: Seconds one cell, or one question's check, may run (set by :func:`arm_time_limit`; None: no limit).
TIME_LIMIT: float | None = None


class TimeLimitExceeded(BaseException):
    """Raised in the student's code at the time limit (a BaseException: no ``except Exception`` stops it)."""


def _expire(signum: int, frame: Any) -> None:
    raise TimeLimitExceeded(f"this ran longer than {TIME_LIMIT:g} s (the grader's time limit)")


def arm_time_limit(seconds: float) -> None:
    """Stop any later cell (IPython) and any check that runs longer than ``seconds``."""
    import signal

    global TIME_LIMIT
    TIME_LIMIT = check_real(seconds, "seconds", low=MIN_TIME_LIMIT, high=MAX_TIME_LIMIT)
    signal.signal(signal.SIGALRM, _expire)
    try:
        ip = get_ipython()  # type: ignore[name-defined]  # noqa: F821 -- defined in IPython kernels
    except NameError:
        return
    ip.events.register("pre_run_cell", lambda *a: signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT))
    ip.events.register("post_run_cell", lambda *a: signal.setitimer(signal.ITIMER_REAL, 0))


def _limited(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` under the time limit, which restarts for it (None if it expired)."""
    import signal

    if TIME_LIMIT is None:
        return fn(*args, **kwargs)
    previous = signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        return fn(*args, **kwargs)
    except TimeLimitExceeded:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, *previous) if previous[0] else signal.setitimer(signal.ITIMER_REAL, 0)


def hidden_score(assignment: str, question: str, *objects: Any) -> float:
    """The dptutor score of ``question`` with hidden parameters, computed once per set of objects
    (0 if the check runs past the time limit)."""
    q = get_assignment(assignment).question(question)  # TypeError/ValueError before the cache lookup
    key = (assignment, q.name, tuple(id(o) for o in objects))
    if key not in _CACHE:
        fb = _limited(check, assignment, question, *objects, hidden=_HIDDEN)
        _CACHE[key] = 0.0 if fb is None else fb.score
    return _CACHE[key]


def reaches(assignment: str, question: str, step: int, *objects: Any) -> bool:
    """Whether the hidden score reaches ``step / STEPS`` of the question's points (otter test ``step``)."""
    step = check_int(step, "step", minimum=1, maximum=STEPS)
    points = get_assignment(assignment).question(question).points
    return hidden_score(assignment, question, *objects) >= points * step / STEPS - 1e-9


def feedback_clean(assignment: str, question: str, *objects: Any) -> bool:
    """The public test: the notebook's own feedback check finds nothing wrong (in the time limit)."""
    fb = _limited(check, assignment, question, *objects)
    return fb is not None and not fb.messages


def _raw(text: str) -> dict[str, Any]:
    import nbformat

    return nbformat.v4.new_raw_cell(text)


def _test_cell(code: str, points: float, hidden: bool) -> Any:
    import nbformat

    config = f'""" # BEGIN TEST CONFIG\npoints: {points:g}\nhidden: {"true" if hidden else "false"}\n""" # END TEST CONFIG\n'
    return nbformat.v4.new_code_cell(config + code)


def _otter_source(source: str) -> str:
    """A code cell for otter: dptutor's ``# STUB:`` lines dropped (otter puts ``...`` in the block)."""
    return "\n".join(line for line in source.splitlines() if not re.match(r"^\s*#\s?STUB:", line))


def export_otter(assignment: str, outdir: Path | str, *, time_limit: float = 60) -> Path:
    """Write ``<outdir>/<assignment>.ipynb`` (an otter master notebook) and ``requirements.txt``."""
    import jupytext
    import nbformat

    from dptutor.grading.release import book_assignments_folder

    a = get_assignment(assignment)
    if not isinstance(outdir, (str, Path)):
        raise TypeError(f"outdir must be a path, got {type(outdir).__name__}")
    time_limit = check_real(time_limit, "time_limit", low=MIN_TIME_LIMIT, high=MAX_TIME_LIMIT)
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise ValueError(f"outdir: {outdir} exists and is not a folder")
    source = jupytext.read(book_assignments_folder() / "instructor" / a.notebook)
    config = {
        "name": a.name,
        "requirements": "requirements.txt",
        "init_cell": True,
        "check_all_cell": False,
        "export_cell": False,
        "run_tests": False,
        "strip_solutions_from_all_cells": True,
        "generate": {"plugins": [{"dptutor.grading.otter_plugin.TimeLimit": {"seconds": time_limit}}]},
        "tests": {"files": False, "ok_format": True},
    }
    cells = [_raw("# ASSIGNMENT CONFIG\n" + _yaml(config))]
    for cell in source.cells:
        text = cell.source
        if cell.cell_type == "markdown":
            text = re.sub(r"<!-- BEGIN SOLUTION -->.*?<!-- END SOLUTION -->\n?", "", text, flags=re.S)
            if text.strip():
                cells.append(nbformat.v4.new_markdown_cell(text))
            continue
        if cell.cell_type != "code":
            continue
        match = _CHECK_CALL.match(text.strip())
        if match is None:
            cells.append(nbformat.v4.new_code_cell(_otter_source(text)))
            continue
        q = a.question(match[1])
        args = match[2]
        cells.append(_raw(f"# BEGIN QUESTION\nname: {q.name}\npoints: {q.points:g}"))
        cells.append(nbformat.v4.new_markdown_cell(f"Question {q.name} ({q.title}): the check below runs "
                                                   "the same feedback as the dptutor notebook."))
        cells.append(_raw("# BEGIN TESTS"))
        cells.append(_test_cell(f"import dptutor.grading.otter as _dpt\n"
                                f"assert _dpt.feedback_clean({a.name!r}, {q.name!r}, {args})", 0, False))
        for step in range(1, STEPS + 1):
            cells.append(_test_cell(f"import dptutor.grading.otter as _dpt\n"
                                    f"assert _dpt.reaches({a.name!r}, {q.name!r}, {step}, {args})",
                                    q.points / STEPS, True))
        cells.append(_raw("# END TESTS"))
        cells.append(_raw("# END QUESTION"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    outdir.mkdir(parents=True, exist_ok=True)
    target = outdir / f"{a.name}.ipynb"
    nbformat.write(nb, target)
    # The autograder image needs dptutor: build a wheel (pip wheel . -w OUTDIR) and list it here
    # instead when dptutor is not installable by name where you grade.
    (outdir / "requirements.txt").write_text("dptutor\n", encoding="utf-8")
    return target


def _yaml(value: Any, indent: int = 0) -> str:
    """A tiny YAML writer for the config above (JSON scalars are valid YAML)."""
    pad = " " * indent
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                lines.append(f"{pad}{key}:")
                lines.append(_yaml(item, indent + 2))
            else:
                lines.append(f"{pad}{key}: {json.dumps(item)}")
    else:
        for item in value:
            if isinstance(item, dict):
                (key, sub), = item.items()
                lines.append(f"{pad}- {key}:")
                lines.append(_yaml(sub, indent + 4))
            else:
                lines.append(f"{pad}- {json.dumps(item)}")
    return "\n".join(lines)
