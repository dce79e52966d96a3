"""``python -m dptutor handgrade``: the questions graded by hand, collected for a teaching assistant and read back.

``handgrade collect ASSIGNMENT SUBMISSIONS --csv SCORES --out DIR`` (:func:`collect`) writes two files:

- ``DIR/handgrade-ASSIGNMENT.html``: for each question graded by hand, the rubric of the course's
  instructor notebook (``--course FOLDER``: its ``private/instructor/``; else the book's), then every
  submission's answer (read from the notebook's source, never run), with its student and the grader's
  messages.  Every text from a submission is escaped: it shows as text, never as markup.
- ``DIR/handgrade-ASSIGNMENT.csv``: one row per submission and question, columns
  ``file,student,question,max,points,reason``, to fill in: ``points`` in ``[0, max]`` (the configured
  points of the question) and a ``reason`` the student reads.  A row left with both empty keeps the
  grader's score.

``handgrade apply ASSIGNMENT FILLED --csv SCORES --overrides FILE`` (:func:`apply`) checks the filled
file strictly (:func:`read_hand_grades`: an unknown submission, a student who does not match it,
points that are not a number or out of range, a missing reason are errors naming the line and the
column), adds its rows to the overrides file (replacing earlier changes of the same question), and
re-scores the scores CSV, the feedback files and the instructor's report from the recorded checks
(:func:`dptutor.course.rescore.rescore`).

A question is graded by hand when its assignment module lists it in ``BY_HAND`` or when the grader's
message of some row says "graded by hand".
"""

from __future__ import annotations

import ast
import html
import importlib
import math
import re
import stat
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from dptutor._validate import check_path
from dptutor.assignments.feedback import Assignment
from dptutor.assignments.registry import get_assignment
from dptutor.course.config import GradingConfig, Override, read_csv_table, read_overrides
from dptutor.course.folders import load_course
from dptutor.course.intake import look_named, read_named, read_student_cells
from dptutor.course.release import book_assignments_folder
from dptutor.course.reports import check_records
from dptutor.course.rescore import RescoreOptions, rescore
from dptutor.course.scores import ScoreRecord, read_scores
from dptutor.course.submissions import find_submissions
from dptutor.grid_files import atomic_write_text
from dptutor.course.textsafe import csv_cell, csv_document, csv_text, one_line

#: :func:`hand_questions`, :func:`read_answers`, :func:`rubrics`, :func:`run_collect` and :func:`run_apply` serve
#: :func:`collect`, :func:`apply` and the command line (their inputs are what those checked), hence outside ``__all__``.
__all__ = ["HANDGRADE_COLUMNS", "collect", "read_hand_grades", "apply"]

#: The columns of the file a teaching assistant fills in.
HANDGRADE_COLUMNS = ["file", "student", "question", "max", "points", "reason"]
#: An answer longer than this is shown cut.
_MAX_ANSWER_CHARS = 20_000
_QUESTION = re.compile(r"^#{2,3}\s+Question\s+(\d+)\b", re.M)
_RUBRIC = re.compile(r"^(`{3,}|:{3,})\{admonition\}\s*(Rubric[^\n]*)\n(.*?)^\1[ \t]*$", re.M | re.S)


def hand_questions(assignment: Assignment, records: Sequence[ScoreRecord] = ()) -> list[str]:
    """The questions of ``assignment`` graded by hand (its module's ``BY_HAND``, and any question whose
    recorded messages say "graded by hand"), in the assignment's order."""
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    module = importlib.import_module(f"dptutor.assignments.{assignment.name}")
    wanted = set(getattr(module, "BY_HAND", ()))
    wanted |= {q for r in records for q, ms in r.result.messages.items() if any("graded by hand" in m for m in ms)}
    return [q.name for q in assignment.questions if q.name in wanted]


def _code_cells(path: Path) -> list[str]:
    """The code cells' sources of a notebook, read as the grader reads it (:func:`~dptutor.course.intake.read_student_cells`:
    bounded in size and cells before parsing, YAML aliases refused, nothing run)."""
    return [cell["source"] for cell in read_student_cells(path)]


def read_answers(path: Path | str, names: Sequence[str]) -> dict[str, str]:
    """The last value each variable of ``names`` is given at the top level of a code cell of the
    notebook ``path``, read from its source without running it: the text of a string literal, else
    the source of the assignment.  A variable never given is missing; ValueError if unreadable."""
    path = Path(check_path(path, "path"))
    try:
        cells = _code_cells(path)
    except Exception as exc:  # noqa: BLE001 - any way a file can fail to be a notebook, as for the grader
        raise ValueError(f"path: {path} cannot be read ({type(exc).__name__}: {str(exc)[:500]})") from None
    found: dict[str, str] = {}
    for source in cells:
        body = "\n".join(line for line in source.splitlines() if not line.startswith(("%", "!", ":")))
        try:
            tree = ast.parse(body)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id in names:
                    value = node.value
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        found[target.id] = value.value.strip()
                    else:
                        found[target.id] = f"(not a plain string; its code:) {ast.get_source_segment(body, node)}"
    return found


def rubrics(assignment: Assignment, course: Path | str | None = None) -> tuple[Path, dict[str, str]]:
    """The instructor notebook of ``assignment`` (the course folder's, else the book's) and the text of
    each question's rubric in it (the ``{admonition} Rubric ...`` under its "Question N" heading)."""
    if not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment, got {type(assignment).__name__}")
    if course is not None:
        path = Path(check_path(course, "course")) / "private" / "instructor" / assignment.notebook
    else:
        path = book_assignments_folder() / "instructor" / assignment.notebook
    # A FIFO would block the open forever: a regular file of at most 16 MiB only.
    data = read_named(path, 16 << 20, role="the instructor notebook", name="course", follow_links=True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"course: the instructor notebook {path} is not UTF-8 text ({exc})") from None
    heads = list(_QUESTION.finditer(text))
    out: dict[str, str] = {}
    for head, after in zip(heads, heads[1:] + [None]):
        section = text[head.end():after.start() if after is not None else len(text)]
        found = _RUBRIC.search(section)
        if found:
            body = "\n".join(line for line in found.group(3).splitlines() if not line.startswith(":"))
            out[f"q{head.group(1)}"] = f"{found.group(2).strip()}\n\n{body.strip()}"
    return path, out


def _shown(text: str) -> str:
    """A submission's text as an HTML block shows it: control and format characters (bidi overrides,
    zero-width joiners) written as ``\\uXXXX``, escaped, cut at :data:`_MAX_ANSWER_CHARS`."""
    cut = text[:_MAX_ANSWER_CHARS] + (" [... cut]" if len(text) > _MAX_ANSWER_CHARS else "")
    visible = "".join(c if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co") else
                      f"\\u{ord(c):04x}" for c in cut)
    return html.escape(visible, quote=True)


def _page(assignment: Assignment, questions: Sequence[str], rubric_file: Path, rubric: dict[str, str],
          items: Sequence[tuple[ScoreRecord, str, str]]) -> str:
    """The HTML page a teaching assistant works through; ``items`` are (row, question, answer)."""
    esc = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Hand grading: {esc(assignment.name)}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:auto}pre{white-space:pre-wrap;"
             "background:#f4f4f4;padding:.5em}.answer{border-top:1px solid #999;margin-top:1.5em}</style>",
             "</head><body>", f"<h1>Hand grading: {esc(assignment.title)} ({esc(assignment.name)})</h1>",
             f"<p>Fill in <code>handgrade-{esc(assignment.name)}.csv</code> (points and a reason the student "
             "reads) and read it back with <code>python -m dptutor handgrade apply</code>. Rubrics from "
             f"<code>{esc(str(rubric_file))}</code>.</p>"]
    for q in questions:
        parts.append(f'<h2 id="{esc(q)}">Question {esc(q)}: {esc(assignment.question(q).title)}</h2>')
        text = rubric.get(q)
        parts.append(f"<pre>{esc(text)}</pre>" if text else f"<p>No rubric for {esc(q)} in {esc(str(rubric_file))}.</p>")
        for record, question, answer in items:
            if question != q:
                continue
            points = record.question_points()[q]
            messages = "".join(f"<li>{_shown(one_line(m))}</li>" for m in record.result.messages.get(q, []))
            parts += [f'<div class="answer"><h3>{_shown(record.result.file)} (student {_shown(record.student)})</h3>',
                      f"<p>Question {esc(q)}, up to {points:g} point(s); the grader's score now: "
                      f"{record.final_scores()[q]:g}.</p>",
                      f"<ul>{messages}</ul>" if messages else "", f"<pre>{_shown(answer)}</pre></div>"]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def collect(assignment: str, submissions: Path | str, records: Sequence[ScoreRecord], out: Path | str, *,
            course: Path | str | None = None) -> tuple[Path, Path]:
    """Write ``out/handgrade-ASSIGNMENT.html`` and ``.csv`` for the rows ``records`` (see the module
    docstring), the answers read from the notebooks in ``submissions``; their paths."""
    a = get_assignment(assignment)
    out = Path(check_path(out, "out"))
    submissions = Path(check_path(submissions, "submissions"))
    records = check_records(records)
    found = look_named(submissions, name="submissions")
    if found is None or not stat.S_ISDIR(found.st_mode):
        raise ValueError(f"submissions: {submissions} is not a folder")
    by_name = {s.name: s.path for s in find_submissions(submissions)}
    questions = hand_questions(a, records)
    if not questions:
        raise ValueError(f"assignment: {a.name!r} has no question graded by hand")
    rubric_file, rubric = rubrics(a, course)
    items = []
    for record in records:
        path = by_name.get(record.result.file)
        names = [n for q in questions for n in a.question(q).needs]
        try:
            answers = read_answers(path, names) if path is not None else {}
        except ValueError as exc:
            answers = {n: f"(the notebook cannot be read: {exc})" for n in names}
        for q in questions:
            needs = a.question(q).needs
            text = "\n\n".join(f"{n}: {answers[n]}" if len(needs) > 1 else answers[n] for n in needs if n in answers)
            if path is None:
                text = f"(the notebook {record.result.file} is not in {submissions})"
            items.append((record, q, text or "(no answer found in the notebook)"))
    out.mkdir(parents=True, exist_ok=True)
    page, table = out / f"handgrade-{a.name}.html", out / f"handgrade-{a.name}.csv"
    atomic_write_text(page, _page(a, questions, rubric_file, rubric, items))
    rows = ([csv_cell(record.result.file), csv_cell(record.student), q, f"{record.question_points()[q]:g}", "", ""]
            for record, q, _ in items)
    atomic_write_text(table, csv_document([HANDGRADE_COLUMNS, *rows]))
    return page, table


def _row_file(row: dict[str, str], by_file: dict[str, ScoreRecord]) -> str:
    """The submission a filled row names: its file cell as written, else trimmed (a name may start with a space)."""
    exact = csv_text(row["file"])
    return exact if exact in by_file else csv_text(row["file"].strip())


def _override_cell(text: str) -> str:
    """A cell of the overrides file: a spreadsheet's text (:func:`csv_cell`), quoted also before a leading
    space, which ``read_overrides`` would trim (it reads the quote as an escape)."""
    cell = csv_cell(text)
    return "'" + cell if cell[:1].isspace() else cell


def _hand_row(row: dict[str, str], where: str, by_file: dict[str, ScoreRecord],
              points: dict[str, float]) -> Override | None:
    """The override of one filled row (None when its points and reason are both empty)."""
    file, student, question = _row_file(row, by_file), csv_text(row["student"].strip()), row["question"].strip()
    if file not in by_file:
        raise ValueError(f"{where}, column file: {file!r} is no submission of the scores CSV (not among its records)")
    if student != by_file[file].student.strip():  # a cell's spaces are trimmed (a name may end with one)
        raise ValueError(f"{where}, column student: {student!r} is not the student of {file!r} "
                         f"({by_file[file].student!r})")
    if question not in points:
        raise ValueError(f"{where}, column question: {question!r} is not one of {', '.join(points)}")
    text, reason = row["points"].strip(), row["reason"].strip()
    if not text and not reason:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}, column points: {text!r} is not a number") from None
    if not math.isfinite(value) or not 0 <= value <= points[question]:
        raise ValueError(f"{where}, column points: {text} is outside [0, {points[question]:g}] for {question}")
    if not reason:
        raise ValueError(f"{where}, column reason: empty; say why (the student reads it)")
    return Override(file, question, value, reason)


def read_hand_grades(path: Path | str, assignment: str, records: Sequence[ScoreRecord]) -> list[Override]:
    """The overrides of a filled ``handgrade-ASSIGNMENT.csv`` (keyed by submission file), each row checked
    against the scores CSV's ``records``; ValueError naming the line and the column at fault."""
    path = Path(check_path(path, "path"))
    a = get_assignment(assignment)
    by_file = {r.result.file: r for r in check_records(records)}
    out: list[Override] = []
    seen: set[tuple[str, str]] = set()
    for number, row in enumerate(read_csv_table(path, "path", HANDGRADE_COLUMNS, role="the hand grades"), start=2):
        where = f"path: {path} line {number}"
        record = by_file.get(_row_file(row, by_file))
        points = record.question_points() if record is not None else {q.name: q.points for q in a.questions}
        override = _hand_row(row, where, by_file, points)
        if override is None:
            continue
        if (override.student, override.question) in seen:
            raise ValueError(f"{where}, column question: {override.student} {override.question} is graded twice")
        seen.add((override.student, override.question))
        out.append(override)
    return out


def _merged(old: Sequence[Override], new: Sequence[Override], records: Sequence[ScoreRecord]) -> list[Override]:
    """``old`` without the changes that ``new`` (keyed by file) replaces, then ``new``."""
    student_of = {r.result.file: r.student for r in records}
    replaced = {(who, o.question) for o in new for who in (o.student, student_of.get(o.student))}
    return [o for o in old if (o.student, o.question) not in replaced] + list(new)


def apply(filled: Path | str, options: RescoreOptions) -> list[Override]:
    """Add the hand grades of ``filled`` to ``options.overrides`` (created if missing) and re-score
    ``options.csv`` with them (:func:`dptutor.course.rescore.rescore`); the hand grades read."""
    if not isinstance(options, RescoreOptions):
        raise TypeError(f"options must be a RescoreOptions, got {type(options).__name__}")
    filled = Path(check_path(filled, "filled"))  # read once by read_hand_grades (no check before: a file swapped between)
    if options.overrides is None:
        raise ValueError("overrides: give the overrides file that keeps the hand grades (--overrides FILE)")
    a = get_assignment(options.assignment)
    course = load_course(options.course).identifier if options.course is not None else None
    records = read_scores(options.csv, a, course=course)
    config_points = GradingConfig(points=records[0].question_points()) if records else None
    try:
        hand = read_hand_grades(filled, a.name, records)
    except ValueError as exc:  # its messages name its parameter, path: here it is filled
        text = str(exc)
        raise ValueError(f"filled: {text.removeprefix('path: ')}" if text.startswith("path: ") else text) from None
    old = read_overrides(options.overrides, a, config_points, missing_ok=True)  # one look: none there is none yet
    rows = _merged(old, hand, records)
    # A submission's name is the student's choice: written as a spreadsheet's text (read_overrides reads it back).
    table = [["student", "question", "score", "reason"],
             *([_override_cell(o.student), o.question, f"{o.score:g}", csv_cell(o.reason)] for o in rows)]
    atomic_write_text(options.overrides, csv_document(table))
    rescore(options)
    return hand


def _error(exc: BaseException) -> int:
    print(f"error: {one_line(str(exc).replace('path: ', '', 1))}", file=sys.stderr)
    return 2


def run_collect(assignment: str, submissions: Path, csv_path: Path, out: Path, *, course: Path | None = None) -> int:
    """Handler of ``handgrade collect``: exit code 0, or 2 with the error on stderr."""
    try:
        folder = load_course(course).identifier if course is not None else None
        records = read_scores(csv_path, get_assignment(assignment), course=folder)
        page, table = collect(assignment, submissions, records, out, course=course)
    except (ValueError, TypeError, OSError) as exc:
        return _error(exc)
    print(f"wrote {page} (answers and rubrics) and {table} (fill in points and reason, then `handgrade apply`)")
    return 0


def run_apply(filled: Path, options: RescoreOptions) -> int:
    """Handler of ``handgrade apply``: exit code 0, or 2 with the error on stderr."""
    try:
        hand = apply(filled, options)
    except (ValueError, TypeError, OSError) as exc:
        return _error(exc)
    print(f"{len(hand)} hand grade(s) added to {options.overrides}; {options.csv} rescored"
          + (f", feedback rewritten in {options.feedback}" if options.feedback is not None else ""))
    return 0
