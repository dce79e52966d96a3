"""Course folders: one course's private answers, its student notebooks and its grading configuration.

``python -m dptutor course new FOLDER --secret SECRET`` (:func:`new_course`) writes::

    FOLDER/
      README.md               what each part is, and what to hand out
      .gitignore              ``*``: git never adds the folder (if it lies inside a work tree by mistake)
      grading.toml            the grading configuration (``course = NAME``; add deadlines, points, limits per assignment)
      private/                NEVER hand out
        answer-key.toml       this course's key, tokens and answers of assignments 3 and 4
        instructor/*.md       the instructor notebooks with this course's answers
      release/*.md            the student notebooks to hand out (no solution; the course's tokens)

The mysteries of ``audit`` and ``pair_audit`` are drawn from their families by the secret (see
:mod:`dptutor.assignments.instances`, which also states the threat model); the other assignments are the
book's.  The book's instructor notebooks of those two mark each passage that states an answer as a
named slot (``<!-- BEGIN SLOT answers -->`` ... ``<!-- END SLOT answers -->`` in Markdown, ``# BEGIN
SLOT diagnosis`` ... ``# END SLOT diagnosis`` in code, always inside a solution block), which
:func:`course_notebook` fills with the course's answers: the prose around and inside a slot can be
reworded freely.  Every notebook written starts with a banner naming its source and this command.  The
secret is not stored: the same secret and name write the same folder again (after an
update of the book, say).  ``python -m dptutor grade ASSIGNMENT SUBMISSIONS --course FOLDER`` grades
with the folder's answer key and configuration (:func:`load_course`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

from dptutor._validate import check_choice, check_path, check_str
from dptutor.assignments.bug_family import HUNT_LABELS, BughuntMember
from dptutor.assignments.instances import INSTANCE_ASSIGNMENTS, AuditMember, PairMember
from dptutor.course.intake import look_named, read_named
from dptutor.course.keys import course_key, members_of_key, tokens_of_key
from dptutor.assignments.registry import ASSIGNMENTS
from dptutor.course.release import book_assignments_folder, student_version, with_banner

__all__ = ["CourseFolder", "COURSE_NAME", "new_course", "load_course", "course_notebook", "fill_slots", "with_banner",
           "answer_lines"]

#: What a course name may look like (it is recorded in every row of the scores CSV).
COURSE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_KEY_FILE = Path("private") / "answer-key.toml"
_SETUP = {"audit": 'check = checker("audit")\n', "pair_audit": 'check = checker("pair_audit")\n',
          "bughunt": 'check = checker("bughunt")\n'}

#: The commented example of a new course's grading.toml: one deadline (and points) per assignment.
_CONFIG_EXAMPLE = """
# The late policy of every assignment, and each assignment's own deadline (uncomment and edit):
# [late]
# multiplier = 0.8
# grace_minutes = 15
# [assignments.sampler]
# deadline = 2026-03-02T23:59:00Z
# [assignments.mechanism]
# deadline = 2026-03-09T23:59:00Z
# points = {q1 = 2, q2 = 3}
"""

_BUG_TEXT = {
    "one-sided": ("adds the absolute value of Laplace noise of scale $n/\\varepsilon$ (one-sided noise), so its "
                  "loss is infinite at every $n$ and the paper's attack shows it at every $n$"),
    "sensitivity-1": ("adds Laplace noise of scale $1/\\varepsilon$ whatever $n$ is (sensitivity 1 instead of $n$), "
                      "so its loss grows with $n$, like ADePT's"),
    "l2": ("adds Laplace noise of scale $\\sqrt{n}/\\varepsilon$ (the $\\ell_2$ sensitivity), which the paper's "
           "attack exposes only at small even $n$"),
    "half-scale": ("adds Laplace noise of scale $n/(2\\varepsilon)$ (half the noise), so its true $\\varepsilon$ "
                   "is 2 at every $n$"),
}


@dataclass(frozen=True)
class CourseFolder:
    """A course folder: its name and its course key (private: it selects the answers when grading).
    ``tokens`` (one per assignment of ``INSTANCE_ASSIGNMENTS``, what the student notebooks hold) and
    ``members`` follow from the key."""

    folder: Path
    name: str
    key: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "folder", Path(check_path(self.folder, "folder")))
        _check_name(self.name)
        tokens_of_key(self.key)  # TypeError/ValueError naming key

    @property
    def fingerprint(self) -> str:
        """12 hex digits of SHA-256 of the course key: tells two courses of the same name apart."""
        return hashlib.sha256(self.key.encode("ascii")).hexdigest()[:12]

    @property
    def identifier(self) -> str:
        """What every row of a scores CSV graded with this folder records: ``NAME@FINGERPRINT``."""
        return f"{self.name}@{self.fingerprint}"

    @property
    def tokens(self) -> dict[str, str]:
        """The token of each assignment (what the course's student notebooks hold)."""
        return tokens_of_key(self.key)

    @property
    def members(self) -> dict[str, object]:
        """The member each token selects."""
        return members_of_key(self.key)

    @property
    def config(self) -> Path:
        """The folder's grading configuration file."""
        return self.folder / "grading.toml"


def _check_name(name: object) -> str:
    name = check_str(name, "name")
    if not COURSE_NAME.match(name):
        raise ValueError(f"name must be 1 to 64 letters, digits, '.', '_' or '-' (starting with a letter or digit), "
                         f"got {name!r}")
    return name


def answer_lines(assignment: str, member: object) -> list[str]:
    """The answers of ``member`` as the lines of the answer key (``key = value``), the strings a student
    must not find."""
    assignment = check_choice(assignment, "assignment", INSTANCE_ASSIGNMENTS)
    if isinstance(member, AuditMember) and assignment == "audit":
        verdicts = {label: member.verdict(label) for label in "AB"}
        return [f'broken = "{member.broken}"', f'verdicts = {{ A = "{verdicts["A"]}", B = "{verdicts["B"]}" }}',
                f'diagnosis = "{member.bug}"']
    if isinstance(member, PairMember) and assignment == "pair_audit":
        return [f"columns = {member.columns}", f"scale = {member.scale:g}", f"true_epsilon = {member.true_epsilon:g}"]
    if isinstance(member, BughuntMember) and assignment == "bughunt":
        return [f"{key} = {{ " + ", ".join(f'{label} = "{value(label)}"' for label in HUNT_LABELS) + " }"
                for key, value in (("verdicts", member.verdict), ("diagnoses", member.bug))]
    raise ValueError(f"member: not a member of the {assignment!r} family")


def _replace(text: str, old: str, new: str, where: str) -> str:
    if not old or text.count(old) != 1:
        raise ValueError(f"{where}: not the book's notebook (or it changed): cannot find {old[:60]!r} exactly once")
    return text.replace(old, new)


#: A slot of an instructor notebook: the lines from ``BEGIN SLOT <name>`` to ``END SLOT <name>`` (a
#: Markdown comment ``<!-- ... -->`` or a code comment ``# ...``), markers included.
_SLOT_BEGIN = re.compile(r"^\s*(?:<!--|#)\s*BEGIN SLOT ([a-z0-9-]+)\s*(?:-->)?\s*$")
_SLOT_END = re.compile(r"^\s*(?:<!--|#)\s*END SLOT ([a-z0-9-]+)\s*(?:-->)?\s*$")


def fill_slots(text: str, values: dict[str, str]) -> str:
    """``text`` with each named slot filled: a slot named in ``values`` becomes that text, any other
    keeps its lines; the markers go.  A ValueError naming ``text`` if a slot of ``values`` is not in
    it exactly once, or the markers do not pair up."""
    check_str(text, "text")
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise TypeError("values must be a dict from slot names to str")
    out: list[str] = []
    current, seen = None, []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        begin, end = _SLOT_BEGIN.match(line), _SLOT_END.match(line)
        if begin:
            if current is not None:
                raise ValueError(f"text: line {number}: slot {begin[1]!r} opens inside slot {current!r}")
            current = begin[1]
            seen.append(current)
            out.append(values.get(current, ""))
        elif end:
            if end[1] != current:
                raise ValueError(f"text: line {number}: END SLOT {end[1]} does not close an open slot of that name")
            current = None
        elif current is None or current not in values:
            out.append(line)
    if current is not None:
        raise ValueError(f"text: slot {current!r} is never closed")
    for name in values:
        if seen.count(name) != 1:
            raise ValueError(f"text: not the book's instructor notebook: it has {seen.count(name)} slots named "
                             f"{name!r} (BEGIN SLOT {name} ... END SLOT {name}), not one")
    return "".join(out)


def _audit_slots(member: AuditMember) -> dict[str, str]:
    broken, other, bug = member.broken, "B" if member.broken == "A" else "A", member.bug
    return {
        "answers": textwrap.fill(f"Mechanism {broken} {_BUG_TEXT[bug]}; mechanism {other} is the correct Laplace "
                                 "mechanism.", width=110, break_on_hyphens=False) + "\n",
        "q3-comment": ("# Reference solution (audit q3): the candidates side by side with the broken mechanism; "
                       f"only the\n# {bug} candidate matches at every n.\n"),
        "diagnosis": f'diagnosis = "{bug}"\n',
        "justification": (
            'justification = """\nAt n = 3 and n = 8 the four candidates add noise of different scales (at n = 1, 2 '
            f'and 4 two of them\ncoincide). There every candidate but {bug} gives losses outside the '
            "confidence interval of the\nmystery's loss (or, for one-sided noise, an unbounded loss where the "
            f"mystery's is finite), while the {bug}\ncandidate falls inside mechanism {broken}'s 95% "
            'confidence interval at both dimensions.\n"""\n'),
        "notes": ("- Mechanism " + broken + "'s bug shows at some dimensions $n$ and not at others, or more at some "
                  "than others;\n  students who audit at one $n$ only may find nothing. That is the lesson: a sanity "
                  "check can only\n  show a violation, never privacy, and it should scan its parameters.\n"),
    }


def _pair_slots(member: PairMember) -> dict[str, str]:
    k, scale, true = member.columns, member.scale, member.true_epsilon
    return {
        "answers": (f"The mystery mechanism adds $\\mathrm{{Lap}}({scale:g})$ noise to {k} copies of the count, so "
                    f"each copy spends\n$1/{scale:g}$ and its true $\\varepsilon$ is ${k}/{scale:g} = {true:g}$. The "
                    "likelihood-ratio statistic is the sum of the\ncoordinates clipped to $[0, 1]$; the event "
                    f"\"every coordinate at least 1\" has ratio exactly $e^{{{true:g}}}$.\n"),
        "q2-comment": (f"# Reference solution (pair_audit q2): every coordinate at least 1 has probability 2^-{k} "
                       f"under x' = 1 and\n# e^-{true:g} 2^-{k} under x = 0, a ratio of exactly e^{true:g}.\n"),
        "q3-comment": (f"# Reference solution (pair_audit q3): {k} Laplace releases, each spending 1/{scale:g}, "
                       f"compose to {true:g}.\n"),
        "true-epsilon": f"true_epsilon = {true:g}\n",
        "notes": ("- A statistic that uses one coordinate sees only that coordinate's share of the loss and may not "
                  "flag the\n  mechanism; the sum of the raw coordinates works too, more weakly than the clipped "
                  "sum.\n"),
    }


def _bughunt_slots(member: BughuntMember) -> dict[str, str]:
    parts = [f"the {label} is correct" if member.bug(label) == "none" else
             f"the {label} has the bug {member.bug(label)} (true $\\varepsilon$ {member.true_epsilon(label):g})"
             for label in HUNT_LABELS]
    return {"answers": textwrap.fill("In this course " + "; ".join(parts) + ".", width=110) + "\n"}


def course_notebook(assignment: str, text: str, member: object, name: str) -> str:
    """The course's instructor notebook of ``assignment`` from the book's (``text``): its named slots
    (``answers``, ``instance``, ...: see :func:`fill_slots`) filled with ``member``'s answers
    (ValueError if the book's notebook no longer has them)."""
    assignment = check_choice(assignment, "assignment", INSTANCE_ASSIGNMENTS)
    check_str(text, "text")
    name = _check_name(name)
    if assignment == "audit" and isinstance(member, AuditMember):
        slots = _audit_slots(member)
    elif assignment == "pair_audit" and isinstance(member, PairMember):
        slots = _pair_slots(member)
    elif assignment == "bughunt" and isinstance(member, BughuntMember):
        slots = _bughunt_slots(member)
    else:
        raise ValueError(f"member: not a member of the {assignment!r} family")
    slots["instance"] = f"These are the answers of course {name} only (drawn from its secret): keep this file private.\n"
    return fill_slots(text, slots)


def _with_token(assignment: str, text: str, token: str) -> str:
    """``text`` with the course's token set right before the checker is made (the mysteries and the
    feedback then use the course's member)."""
    setup = _SETUP[assignment]
    return _replace(text, setup, ("from dptutor.assignments import use_course\n"
                                  f'use_course("{token}")  # this course\'s mystery mechanisms\n' + setup), "text")


def _readme(name: str) -> str:
    return f"""# Course {name}

Made by `python -m dptutor course new`. Its mystery mechanisms (assignments 3 and 4) were drawn from their
families by the course secret, which is stored nowhere: keep it, and `course new` with the same secret and
name writes this folder again.

- `release/`: the student notebooks. Hand these out (not the book's `book/assignments/*.md`, whose
  mysteries are the public self-study ones). They hold no solution; `audit.md` and `pair_audit.md` call
  `use_course(...)` with this course's tokens.
- `private/`: NEVER hand out. `answer-key.toml` holds the course key (grading needs it: it selects
  this course's answers) and the answers of assignments 3 and 4;
  `instructor/*.md` the reference solutions with this course's answers.
- `grading.toml`: the grading configuration of every assignment (course name; add a late policy and
  each assignment's deadline, points and time limits in an `[assignments.NAME]` table).
- `.gitignore`: keeps git from adding this folder. Keep it outside any repository clone all the same,
  with the scores and feedback files.

Grade with the course's answer key:

    python -m dptutor grade audit SUBMISSIONS --course PATH/OF/THIS/FOLDER --csv scores-audit.csv --feedback feedback-audit

The hand-graded answers, with the rubric of `private/instructor/`, for a teaching assistant:

    python -m dptutor handgrade collect audit SUBMISSIONS --csv scores-audit.csv --course PATH/OF/THIS/FOLDER --out handgrade

A student who reads dptutor's source can decode a token into its member (see the book's page "Threat
model", book/instructors/threat_model.md);
what students cannot find is any written answer, in the wheel, the repository or these notebooks.
"""


def _key_text(name: str, key: str) -> str:
    tokens, members = tokens_of_key(key), members_of_key(key)
    lines = [f"# The answer key of course {name}: PRIVATE. Written by `python -m dptutor course new`.",
             "# `key` selects this course's answers when grading; the student notebooks hold only the tokens.",
             f'course = "{name}"', f'key = "{key}"', ""]
    for assignment in INSTANCE_ASSIGNMENTS:
        lines += [f"[{assignment}]", f'token = "{tokens[assignment]}"',
                  *answer_lines(assignment, members[assignment]), ""]
    return "\n".join(lines)


def _is_folder(path: Path, name: str) -> bool:
    """Whether ``path`` is a folder (links followed); ValueError naming ``name`` if it cannot be looked at."""
    found = look_named(path, name=name)
    return found is not None and stat.S_ISDIR(found.st_mode)


def _listed(folder: Path) -> bool:
    """Whether the folder ``folder`` holds anything; ValueError naming ``folder`` if it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except OSError as exc:
        raise ValueError(f"folder: {folder} cannot be listed ({exc.strerror or exc})") from None


def _book_notebook(path: Path) -> str:
    """The text of a notebook of the book's ``instructor/`` folder (a bounded regular file, UTF-8; ValueError naming
    ``book`` otherwise)."""
    data = read_named(path, 16 << 20, role="the instructor notebook", name="book", follow_links=True)
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
    except UnicodeDecodeError as exc:
        raise ValueError(f"book: the instructor notebook {path} is not UTF-8 text ({exc})") from None


def new_course(folder: Path | str, secret: str, *, name: str | None = None,
               book: Path | str | None = None) -> CourseFolder:
    """Write the course folder ``folder`` for ``secret`` (see the module docstring).

    ``name`` defaults to the folder's name; ``book`` is the book's assignments folder (default: this
    repository's).  A folder that exists must be empty or a course folder of the same secret and name
    (it is then written again); anything else is a ValueError naming ``folder``.
    """
    folder = Path(check_path(folder, "folder"))
    key = course_key(secret)
    tokens, members = tokens_of_key(key), members_of_key(key)
    name = _check_name(folder.resolve().name if name is None else name)
    book = book_assignments_folder() if book is None else Path(check_path(book, "book"))
    if not _is_folder(book / "instructor", "book"):
        raise ValueError(f"book: {book} has no instructor/ subfolder")
    if look_named(folder, name="folder") is not None:
        if not _is_folder(folder, "folder"):
            raise ValueError(f"folder: {folder} exists and is not a folder")
        if _listed(folder):
            try:
                old = load_course(folder)
            except ValueError:
                raise ValueError(f"folder: {folder} is not empty and is not a course folder; choose a new "
                                 "folder") from None
            if old.key != key or old.name != name:
                raise ValueError(f"folder: {folder} is the course folder of another secret or name; choose a new "
                                 "folder") from None
    for sub in ("private/instructor", "release"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    # The key first: a run stopped half-way leaves a course folder that the same command completes.
    (folder / _KEY_FILE).write_text(_key_text(name, key), encoding="utf-8")
    for a in ASSIGNMENTS.values():
        text = _book_notebook(book / "instructor" / a.notebook)
        token = tokens.get(a.name)
        if token is not None:
            text = _with_token(a.name, course_notebook(a.name, text, members[a.name], name), token)
        command = f"python -m dptutor course new FOLDER --name {name}"  # with the course's secret
        (folder / "private" / "instructor" / a.notebook).write_text(
            with_banner(text, f"the book's book/assignments/instructor/{a.notebook}", command), encoding="utf-8")
        (folder / "release" / a.notebook).write_text(
            with_banner(student_version(text), f"private/instructor/{a.notebook}", command), encoding="utf-8")
    # The instructor's edits (points, late policy) survive a rewrite: created only if there is none ("x", no check
    # before the write, so a file made in between is kept too).
    with contextlib.suppress(FileExistsError), open(folder / "grading.toml", "x", encoding="utf-8") as fh:
        fh.write(f'# Grading configuration of course {name} (see dptutor.course.config).\n'
                 f'course = "{name}"\n{_CONFIG_EXAMPLE}')
    # Inside a git work tree, git then ignores the whole folder: its answers are never committed by mistake.
    (folder / ".gitignore").write_text("# A course folder holds the course's answers: never commit it.\n*\n",
                                       encoding="utf-8")
    (folder / "README.md").write_text(_readme(name), encoding="utf-8")
    return CourseFolder(folder, name, key)


#: Course assignments added after course folders were first written: a folder without their table still
#: loads (the course key gives their members; `course new` with the same secret adds their notebooks).
ADDED_LATER = frozenset({"bughunt"})


def load_course(folder: Path | str) -> CourseFolder:
    """The course folder ``folder``, its answer key checked (ValueError naming ``folder`` otherwise)."""
    folder = Path(check_path(folder, "folder"))
    path = folder / _KEY_FILE
    # A FIFO would block the open forever, a device never end: a regular file of at most 1 MiB only.
    data = read_named(path, 1 << 20, role="the answer key", name="folder", follow_links=True, missing_ok=True)
    if data is None:
        raise ValueError(f"folder: {folder} is not a course folder (no {_KEY_FILE}); make one with "
                         "`python -m dptutor course new`")
    try:  # RecursionError: nested too deep
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"folder: {path} is not valid TOML ({exc})") from None
    name = raw.get("course")
    if not isinstance(name, str) or not COURSE_NAME.match(name):
        raise ValueError(f"folder: {path} has no valid course name")
    key = raw.get("key")
    try:
        tokens = tokens_of_key(key)
    except (TypeError, ValueError):
        raise ValueError(f"folder: {path} has no valid course key (a folder written before course keys? write it "
                         "again with `course new` and the course's secret)") from None
    members = members_of_key(key)
    for assignment in INSTANCE_ASSIGNMENTS:
        table = raw.get(assignment)
        if table is None and assignment in ADDED_LATER:
            continue  # a folder from before this assignment existed: its members follow from the key all the same
        if not isinstance(table, dict) or not isinstance(table.get("token"), str):
            raise ValueError(f"folder: {path} has no token for {assignment}")
        if table["token"].strip() != tokens[assignment]:
            raise ValueError(f"folder: {path}: the token of {assignment} does not follow from the course key (edited "
                             "by hand?); write the folder again with `course new` and the course's secret")
        written = {line.split(" = ", 1)[0]: tomllib.loads(line)[line.split(" = ", 1)[0]]
                   for line in answer_lines(assignment, members[assignment])}
        if any(table.get(key) != value for key, value in written.items()):
            raise ValueError(f"folder: {path}: the answers of {assignment} do not match its token (edited by hand?); "
                             "write the folder again with `course new` and the course's secret")
    return CourseFolder(folder, name, key)
