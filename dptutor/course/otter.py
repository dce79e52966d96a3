"""Export an assignment for otter-grader 7.0.0 (Gradescope): ``python -m dptutor export-otter``.

:func:`export_otter` turns an instructor notebook into an otter "master" notebook: the solution
blocks become otter's ``# BEGIN SOLUTION`` blocks, and each feedback check cell becomes an otter
question whose tests call the same :func:`dptutor.assignments.check`.  Stock otter gives all or nothing
per test and has no cell time limit, so:

- partial credit: each question's points are split into :data:`STEPS` hidden test cases; test ``i``
  passes when the dptutor score reaches ``i / STEPS`` of the points (:func:`reaches`), so otter's
  total is the dptutor score rounded down to a tenth of the question.  The check runs once per
  question (:func:`grading_score` caches it);
- a time limit: the plugin :class:`dptutor.course.otter_plugin.TimeLimit` adds a first cell that
  calls :func:`arm_time_limit`, which stops any cell, and any one question's check, that runs
  longer than the limit.

The export is self-contained: the ``dptutor`` wheel (built from the repository by :func:`_build_wheel`,
or one given) goes into the autograder zip (otter's ``autograder_files``), and ``requirements.txt``
installs it from there by a direct file reference (:data:`AUTOGRADER_FILES`; no index is asked for
``dptutor``) beside its dependencies pinned to the versions installed where the export runs (those
come from PyPI).  Students see the same messages as the local grader: the public test prints the
notebook's feedback report (:func:`show_feedback`) and the first hidden test a question fails prints
the grading report of the grading run (:func:`show_grading_report`); otter shows that output.  The Markdown
is plain Markdown (:func:`myst_to_markdown`): no MyST directive or role reaches the student notebook.

Otter runs the tests in the student's own process, so the trust model of :mod:`dptutor.course.executor`
does not hold there; use ``dptutor grade`` when that matters.
"""

from __future__ import annotations

import functools
import json
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from dptutor._validate import check_int, check_path, check_real, check_str
from dptutor.assignments.feedback import Feedback, fmt_points
from dptutor.assignments.registry import check, get_assignment
from dptutor.course.intake import look_named, read_named

__all__ = ["STEPS", "AUTOGRADER_FILES", "TimeLimitExceeded", "arm_time_limit", "export_otter", "grading_score",
           "reaches", "feedback_clean", "show_feedback", "show_grading_report", "wheel_requirements",
           "myst_to_markdown"]

#: Hidden test cases per question (partial credit in steps of a tenth of the question).
STEPS = 10
#: Where Gradescope unpacks the ``files/`` folder of an autograder zip (otter 7's ``/autograder/source``).
AUTOGRADER_FILES = "/autograder/source/files"
_CACHE: dict[tuple[str, str, tuple[int, ...]], Feedback | None] = {}
_GRADING_SEED = secrets.randbits(62) + 2  # the grading seed, drawn once per grading process
_CHECK_CALL = re.compile(r"^\s*check\.(q\d+)\((.*)\)\s*$")


#: The range of a time limit in seconds: the interval timer counts microseconds, and a limit longer
#: than a day is a typo.
MIN_TIME_LIMIT, MAX_TIME_LIMIT = 1e-3, 86400.0
#: Seconds one cell, or one question's check, may run (set by :func:`arm_time_limit`; None: no limit).
TIME_LIMIT: float | None = None


class TimeLimitExceeded(BaseException):
    """Raised in the student's code at the time limit (a BaseException: no ``except Exception`` stops it)."""


#: Seconds to wait before trying again when the limit expires outside the code it limits.
_RETRY = 0.01


def _run_code_frames() -> tuple[Any, ...]:
    """The code of IPython's ``run_code``, which runs a cell's code and catches whatever it raises (none
    when IPython was never imported: then no cell runs, and a signal handler should not import it)."""
    import sys

    shell = getattr(sys.modules.get("IPython.core.interactiveshell"), "InteractiveShell", None)
    return () if shell is None else (shell.run_code.__code__,)


def _expire(signum: int, frame: Any) -> None:
    """Raise :class:`TimeLimitExceeded` where something catches it: in a cell's code (under IPython's
    ``run_code``) or in a check under :func:`_limited`.  Raised anywhere else (in the kernel's own
    machinery just before or after a cell, or in ``_limited``'s clean-up), it would stop the kernel
    itself, so the alarm fires again a moment later instead; the cell's end disarms it."""
    import signal

    safe = (_call.__code__, *_run_code_frames())
    while frame is not None:
        if frame.f_code in safe:
            raise TimeLimitExceeded(f"this ran longer than {TIME_LIMIT:g} s (the grader's time limit)")
        if frame.f_code is _limited.__code__:
            break  # in _limited but not in the call it limits
        frame = frame.f_back
    signal.setitimer(signal.ITIMER_REAL, _RETRY)


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


def _call(fn: Any, args: tuple, kwargs: dict) -> Any:
    """The frame in which the time limit of :func:`_limited` may raise."""
    return fn(*args, **kwargs)


def _limited(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` under the time limit, which restarts for it (None if it expired)."""
    import signal

    if TIME_LIMIT is None:
        return fn(*args, **kwargs)
    previous = signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        return _call(fn, args, kwargs)
    except TimeLimitExceeded:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, *previous) if previous[0] else signal.setitimer(signal.ITIMER_REAL, 0)


def _grading_feedback(assignment: str, question: str, *objects: Any) -> Feedback | None:
    """The Feedback of ``question``'s grading run, computed once per set of objects (None if
    the check ran past the time limit)."""
    q = get_assignment(assignment).question(question)  # TypeError/ValueError before the cache lookup
    key = (assignment, q.name, tuple(id(o) for o in objects))
    if key not in _CACHE:
        _CACHE[key] = _limited(check, assignment, question, *objects, grading_seed=_GRADING_SEED)
    return _CACHE[key]


def grading_score(assignment: str, question: str, *objects: Any) -> float:
    """The dptutor score of ``question``'s grading run, computed once per set of objects
    (0 if the check runs past the time limit)."""
    fb = _grading_feedback(assignment, question, *objects)
    return 0.0 if fb is None else fb.score


def reaches(assignment: str, question: str, step: int, *objects: Any) -> bool:
    """Whether the grading score reaches ``step / STEPS`` of the question's points (otter test ``step``)."""
    step = check_int(step, "step", minimum=1, maximum=STEPS)
    points = get_assignment(assignment).question(question).points
    return grading_score(assignment, question, *objects) >= points * step / STEPS - 1e-9


def feedback_clean(assignment: str, question: str, *objects: Any) -> bool:
    """The public test: the notebook's own feedback check finds nothing wrong (in the time limit)."""
    fb = _limited(check, assignment, question, *objects)
    return fb is not None and not fb.messages


def _too_long(assignment: str, question: str) -> str:
    q = get_assignment(assignment).question(question)
    return (f"{q.name} ({q.title}): 0 / {fmt_points(q.points)} points\n  - the check ran longer than "
            f"{TIME_LIMIT:g} s (the grader's time limit): is there an endless loop?")


def show_feedback(assignment: str, question: str, *objects: Any) -> None:
    """The public test's output: nothing when the notebook's feedback finds nothing wrong, else the
    report the notebook's own ``check`` cell prints (so otter shows the student the same messages)."""
    fb = _limited(check, assignment, question, *objects)
    if fb is None:
        print(_too_long(assignment, question))
    elif fb.messages:
        print(fb.report())


def show_grading_report(assignment: str, question: str, step: int, *objects: Any) -> None:
    """Hidden test ``step``'s output (otter's word for a test the student does not see): nothing when
    the grading score reaches ``step / STEPS`` of the points; the first test that fails prints the
    grading report (the lines ``dptutor grade`` writes for the question: its score and each failed
    check's message), later ones a short pointer to it."""
    step = check_int(step, "step", minimum=1, maximum=STEPS)
    if reaches(assignment, question, step, *objects):
        return
    fb = _grading_feedback(assignment, question, *objects)
    if step > 1 and not reaches(assignment, question, step - 1, *objects):
        print(f"({step}/{STEPS}: see the first failed case)")  # short: Gradescope lists every failed case
    elif fb is None:
        print(_too_long(assignment, question))
    else:
        lines = [f"{fb.question} ({fb.title}): {fmt_points(fb.score)} / {fmt_points(fb.points)} points"]
        lines += [f"  - {m}" for m in fb.messages]
        print("\n".join(lines))


# Deprecated aliases, kept without a warning: master notebooks exported before the rename call
# ``_dpt.show_hidden`` in their hidden tests, and a warning there would fail the test it prints in.
hidden_score = grading_score
show_hidden = show_grading_report


def _raw(text: str) -> dict[str, Any]:
    import nbformat

    return nbformat.v4.new_raw_cell(text)


def _test_cell(code: str, points: float, hidden: bool) -> Any:
    import nbformat

    config = f'""" # BEGIN TEST CONFIG\npoints: {points:g}\nhidden: {"true" if hidden else "false"}\n""" # END TEST CONFIG\n'
    return nbformat.v4.new_code_cell(config + code)


def _otter_source(source: str) -> str:
    """A code cell for otter: dptutor's ``# STUB:`` lines become otter's prompt (``# BEGIN PROMPT``
    block, what the student notebook shows in place of the solution, as in dptutor's own student
    notebook) and the solution blocks give no other prompt (``# BEGIN SOLUTION NO PROMPT``)."""
    lines = source.splitlines()
    stubs = [re.match(r"^(\s*)#\s?STUB:\s?(.*)$", line) for line in lines]
    if not any(stubs) or any('"""' in m[2] for m in stubs if m):
        return "\n".join(line for line, m in zip(lines, stubs) if m is None)
    out: list[str] = []
    block: list[str] = []
    indent = ""
    for line, m in zip([*lines, ""], [*stubs, None]):
        if m is not None:
            indent = indent if block else m[1]
            block.append(m[1] + m[2])
            continue
        if block:
            out += [f'{indent}""" # BEGIN PROMPT', *block, f'{indent}""" # END PROMPT']
            block = []
        out.append(re.sub(r"# BEGIN SOLUTION\s*$", "# BEGIN SOLUTION NO PROMPT", line))
    return "\n".join(out[:-1])


_WHEEL_NAME = re.compile(r"^dptutor-[0-9][^-]*-[^-]+-[^-]+-[^-]+\.whl$")


def _repository_root() -> Path:
    """The repository this dptutor runs from (ValueError naming ``wheel`` when it is an installed copy)."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    try:
        name = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    except (OSError, KeyError, TypeError, ValueError):
        name = None
    if name != "dptutor":
        raise ValueError(f"wheel: dptutor runs from {root}, not from its repository, so no wheel can be built "
                         "here; pass the path of a dptutor wheel (export-otter --wheel PATH)")
    return root


def _build_wheel(outdir: Path | str) -> Path:
    """Build the ``dptutor`` wheel of the repository this package runs from into ``outdir`` and return
    its path (``pip wheel --no-deps --no-build-isolation``: no network, a few seconds).

    The build runs on a copy of the package's files, so no build folder lands in the repository.
    """
    import shutil
    import subprocess
    import sys
    import tempfile

    outdir = Path(check_path(outdir, "outdir"))
    _check_outdir(outdir)
    root = _repository_root()
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dptutor-wheel-") as scratch, \
            tempfile.TemporaryDirectory(prefix="dptutor-wheel-out-") as built:
        src = Path(scratch) / "src"
        shutil.copytree(root / "dptutor", src / "dptutor",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        for item in root.iterdir():
            if item.is_file() and (item.name in ("pyproject.toml", "README.md") or item.name.startswith("LICENSE")):
                shutil.copy2(item, src / item.name)
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                               "--disable-pip-version-check", "-w", built, str(src)],
                              capture_output=True, text=True)
        wheels = sorted(Path(built).glob("dptutor-*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            raise RuntimeError(f"building the dptutor wheel failed:\n{proc.stdout}\n{proc.stderr}")
        target = outdir / wheels[0].name
        shutil.copy2(wheels[0], target)
    return target


def _check_outdir(outdir: Path) -> None:
    """ValueError naming ``outdir`` if it exists and is not a folder, or cannot be looked at."""
    found = look_named(outdir, name="outdir")
    if found is not None and not stat.S_ISDIR(found.st_mode):
        raise ValueError(f"outdir: {outdir} exists and is not a folder")


#: The largest wheel read (bytes), far above dptutor's own.
_MAX_WHEEL_BYTES = 256 << 20


def _wheel_metadata(wheel: Path) -> str:
    """The METADATA of a dptutor wheel (ValueError naming ``wheel`` if it is not one)."""
    import io
    import zipfile

    if not _WHEEL_NAME.match(wheel.name):
        raise ValueError(f"wheel: {wheel.name} is not the name of a dptutor wheel (dptutor-VERSION-...-....whl)")
    # Read once (no check before; a FIFO would block the zip reader): a ValueError naming wheel if not a regular file.
    data = read_named(wheel, _MAX_WHEEL_BYTES, role="the wheel", name="wheel", follow_links=True)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            meta = [n for n in names if re.fullmatch(r"dptutor-[^/]*\.dist-info/METADATA", n)]
            if "dptutor/course/otter.py" not in names or len(meta) != 1:
                raise ValueError(f"wheel: {wheel} does not hold dptutor's grader (dptutor/course/otter.py)")
            return zf.read(meta[0]).decode("utf-8")
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"wheel: {wheel} is not a readable wheel ({exc})") from None


def wheel_requirements(wheel: Path | str) -> list[str]:
    """The lines of the autograder's ``requirements.txt`` for ``wheel``: dptutor itself by a direct
    reference to the copy in the zip (``dptutor @ file:///autograder/source/files/<wheel>``, so pip
    asks no index for it), then each of its dependencies pinned to the version installed here (the
    versions the export was made and tested with; pip takes them from PyPI)."""
    from importlib import metadata

    wheel = Path(check_path(wheel, "wheel"))
    lines = [f"dptutor @ file://{AUTOGRADER_FILES}/{wheel.name}"]
    for line in _wheel_metadata(wheel).splitlines():
        if not line.startswith("Requires-Dist:") or ";" in line:  # extras (with a marker) stay out
            continue
        name = re.match(r"[A-Za-z0-9._-]+", line.split(":", 1)[1].strip())
        if name is None:
            continue
        try:
            lines.append(f"{name[0]}=={metadata.version(name[0])}")
        except metadata.PackageNotFoundError:
            raise ValueError(f"wheel: its dependency {name[0]} is not installed here, so its version cannot "
                             "be pinned; install dptutor's requirements first") from None
    return lines


_LABEL = re.compile(r"^\(([^()\s]+)\)=\s*$")
_FENCE = re.compile(r"^(`{3,}|~{3,})\{([\w-]+)\}\s*(.*)$")
_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")


def _book_titles(book: Path | None) -> tuple[dict[str, str], dict[str, str]]:
    """Section titles of the book by label, and page titles by file stem."""
    if book is None or not book.is_dir():
        return {}, {}
    return _titles_in(str(book.resolve()))


@functools.lru_cache(maxsize=4)
def _titles_in(book: str) -> tuple[dict[str, str], dict[str, str]]:
    """:func:`_book_titles` of one folder, read once per process (one export reads it per cell)."""
    labels: dict[str, str] = {}
    pages: dict[str, str] = {}
    for page in sorted(Path(book).glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        pending: list[str] = []
        for line in lines:
            match = _LABEL.match(line)
            if match:
                pending.append(match[1])
                continue
            heading = re.match(r"^#{1,6}\s+(.+?)\s*$", line)
            if heading:
                pages.setdefault(page.stem, heading[1])
                labels.update({label: heading[1] for label in pending})
            if line.strip():
                pending = []
    return labels, pages


def _role(name: str, text: str, labels: dict[str, str], pages: dict[str, str]) -> str:
    explicit = re.fullmatch(r"(.+?)\s*<([^<>]+)>", text)
    if explicit:
        return explicit[1]
    if name == "math":
        return f"${text}$"
    if name == "ref":
        return f"*{labels.get(text, text.replace('-', ' '))}*"
    if name == "doc":
        stem = text.rstrip("/").rsplit("/", 1)[-1]
        return f"*{pages.get(stem, stem.replace('_', ' '))}*"
    if name in ("eq", "numref"):
        return f"({text})"
    return f"`{text}`" if name in ("code", "file", "command") else text


def myst_to_markdown(text: str, book: Path | str | None = None) -> str:
    """Plain Markdown for a notebook from MyST Markdown: a target line ``(label)=`` is dropped, a
    directive becomes a block quote headed by its title (``{math}`` becomes ``$$ ... $$``; options such
    as ``:class:`` are dropped), and a role becomes its text (``{ref}`` and ``{doc}`` the title of the
    section or page in ``book``, the folder of the book's pages, when given; ``{math}`` inline math)."""
    text = check_str(text, "text")
    if book is not None:
        book = Path(check_path(book, "book"))
    labels, pages = _book_titles(book)
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if _LABEL.match(line):
            i += 1
            continue
        if fence is None:
            out.append(_ROLE.sub(lambda m: _role(m[1], m[2], labels, pages), line))
            i += 1
            continue
        mark, name, title = fence[1], fence[2], fence[3].strip()
        body: list[str] = []
        i += 1
        depth = 0
        while i < len(lines):
            inner = lines[i]
            if re.match(rf"^{re.escape(mark[0])}{{{len(mark)},}}\s*$", inner) and depth == 0:
                break
            body.append(inner)
            i += 1
        i += 1  # the closing fence
        while body and re.match(r"^:[\w-]+:", body[0]):
            body.pop(0)
        if body and body[0].strip() == "---":  # a YAML option block
            end = next((j for j in range(1, len(body)) if body[j].strip() == "---"), 0)
            body = body[end + 1:]
        converted = myst_to_markdown("\n".join(body), book).splitlines() if body else []
        if name == "math":
            out += ["$$", *converted, "$$"]
            continue
        head = title or name.replace("-", " ").capitalize()
        out.append(f"> **{_ROLE.sub(lambda m: _role(m[1], m[2], labels, pages), head)}**")
        if converted:
            out.append(">")
            out += [f"> {c}" if c.strip() else ">" for c in converted]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def export_otter(assignment: str, outdir: Path | str, *, time_limit: float = 60,
                 wheel: Path | str | None = None, course: Path | str | None = None) -> Path:
    """Write ``<outdir>/<assignment>.ipynb`` (an otter master notebook), the dptutor wheel it needs
    (``wheel``, or one built from the repository by :func:`_build_wheel` when None) and
    ``requirements.txt`` (:func:`wheel_requirements`); ``otter assign`` then puts the wheel into the
    autograder zip.  Returns the notebook's path.

    ``course``: a course folder (``python -m dptutor course new``): the master notebook is the course's
    instructor notebook (its student notebook selects the course's mysteries), and every hidden test of
    ``audit`` and ``pair_audit`` first selects them and the course's answers with the course key
    (:func:`dptutor.course.keys.use_answer_key`), so a submission that drops that line is still
    graded against the course's answers.  The course key then sits in the autograder zip's hidden
    tests, which Gradescope does not show students: keep the zip as private as the course folder."""
    import shutil

    import nbformat

    from dptutor.course.release import book_assignments_folder

    a = get_assignment(assignment)
    outdir = Path(check_path(outdir, "outdir"))
    time_limit = check_real(time_limit, "time_limit", low=MIN_TIME_LIMIT, high=MAX_TIME_LIMIT)
    _check_outdir(outdir)
    if wheel is not None:
        wheel = Path(check_path(wheel, "wheel"))
        _wheel_metadata(wheel)  # ValueError naming wheel before anything is written
    else:
        _repository_root()
    assignments = book_assignments_folder()
    source, select = _master_source(a, assignments, course)
    outdir.mkdir(parents=True, exist_ok=True)
    for old in outdir.glob("dptutor-*.whl"):
        if wheel is None or not old.samefile(wheel):
            old.unlink()  # one wheel only: the one requirements.txt names
    if wheel is None:
        wheel = _build_wheel(outdir)
    elif not (outdir / wheel.name).exists():
        wheel = Path(shutil.copy2(wheel, outdir / wheel.name))
    config = {
        "name": a.name,
        "requirements": "requirements.txt",
        "python_version": "3.11",
        "autograder_files": [wheel.name],
        "init_cell": True,
        "check_all_cell": False,
        "export_cell": False,
        "run_tests": False,
        "strip_solutions_from_all_cells": True,
        "generate": {"plugins": [{"dptutor.course.otter_plugin.TimeLimit": {"seconds": time_limit}}]},
        "tests": {"files": False, "ok_format": True},
    }
    nb = nbformat.v4.new_notebook(cells=_master_cells(a, source, select, assignments.parent, config))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    target = outdir / f"{a.name}.ipynb"
    nbformat.write(nb, target)
    (outdir / "requirements.txt").write_text("\n".join(wheel_requirements(wheel)) + "\n", encoding="utf-8")
    return target


def _master_source(a: Any, assignments: Path, course: Path | str | None) -> tuple[Any, str]:
    """The instructor notebook to export (the book's, or the course folder's) and the line that
    selects the course's mysteries and answers in each hidden test ("" without a course)."""
    import jupytext

    if course is None:
        return jupytext.read(assignments / "instructor" / a.notebook), ""
    from dptutor.assignments.instances import INSTANCE_ASSIGNMENTS
    from dptutor.course.folders import load_course

    try:
        folder = load_course(check_path(course, "course"))
    except ValueError as exc:
        raise ValueError(f"course: {str(exc).replace('folder: ', '', 1)}") from None
    source = jupytext.read(folder.folder / "private" / "instructor" / a.notebook)
    if a.name not in INSTANCE_ASSIGNMENTS:
        return source, ""
    return source, (f"__import__('dptutor.course.keys', fromlist=['use_answer_key'])"
                    f".use_answer_key({folder.key!r})\n")


def _master_cells(a: Any, source: Any, select: str, book: Path, config: dict[str, Any]) -> list[Any]:
    """The otter master notebook's cells: the configuration, the notebook's cells, and each check call
    as an otter question whose tests call the same check."""
    import nbformat

    cells = [_raw("# ASSIGNMENT CONFIG\n" + _yaml(config))]
    for cell in source.cells:
        text = cell.source
        if cell.cell_type == "markdown":
            text = re.sub(r"<!-- BEGIN SOLUTION -->.*?<!-- END SOLUTION -->\n?", "", text, flags=re.S)
            text = myst_to_markdown(text, book).strip("\n")
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
        # No expected output: a test passes when it prints nothing, and otter shows what it printed.
        cells.append(_test_cell(f"import dptutor.course.otter as _dpt\n"
                                f"_dpt.show_feedback({a.name!r}, {q.name!r}, {args})", 0, False))
        for step in range(1, STEPS + 1):
            cells.append(_test_cell(f"{select}import dptutor.course.otter as _dpt\n"
                                    f"_dpt.show_grading_report({a.name!r}, {q.name!r}, {step}, {args})",
                                    q.points / STEPS, True))
        cells.append(_raw("# END TESTS"))
        cells.append(_raw("# END QUESTION"))
    return cells


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
