"""What a check returns (:class:`Finding`, :class:`Feedback`), the shape of an assignment
(:class:`Question`, :class:`Assignment`), and the helpers every check uses to call student code.

A check is a plain function ``check(*objects, grading_seed=None) -> list[Finding]``: it receives the
student's objects (the names listed in :attr:`Question.needs`), calls or inspects them, and says
what holds.  By default every finding weighs the same: the score is ``points * passed / len(findings)``.
A finding may name the property it checks (:attr:`Finding.check`, one of the question's declared
:attr:`Question.checks`); an instructor's grading configuration can then weigh those checks
(:func:`score` with ``weights``; ``[weights.q3]`` in ``dptutor.course.config``).
"""

from __future__ import annotations

import dataclasses
import numbers
import textwrap
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (MAX_ELEMENTS, check_callable, check_choice, check_float_array, check_int,
                               check_positive, check_real, check_sequence, is_bool, shown)

__all__ = [
    "Finding",
    "Feedback",
    "Question",
    "Assignment",
    "NotAnswered",
    "REPORT_WIDTH",
    "UNSCORED",
    "KS_ALPHA",
    "fmt_points",
    "score",
    "named",
    "call",
    "describe",
    "as_floats",
    "returned",
    "INSTRUCTOR_NOTE",
    "is_instructor_note",
    "expect_value_error",
    "spy_array",
    "uniforms",
    "TEST_GRADING_SEED",
    "grading_rng",
]  # deprecated and not listed: DEFAULT_HIDDEN_SEED, hidden_rng

#: Line width of a feedback report (it fits the book's code cells).
REPORT_WIDTH = 86
#: Significance level of every Kolmogorov-Smirnov test in the checks.
KS_ALPHA = 1e-3
#: The check name of a finding that is reported to the instructor and never scored.
UNSCORED = "unscored"
#: How every note for the instructor begins (the grader turns each ``record.flag_for_review`` text
#: into a finding :data:`UNSCORED` whose message is this prefix and the text).  A student's report,
#: the feedback file, never shows such a message (:func:`is_instructor_note`); the scores CSV and
#: the instructor's report do.  Other :data:`UNSCORED` findings (error carried forward, say) are
#: notes for the student.
INSTRUCTOR_NOTE = "for the instructor (not scored): "
#: What a Feedback's status can be.
STATUSES = ("graded", "not implemented", "missing", "error", "timeout", "not run")


@dataclass(frozen=True)
class Finding:
    """One property checked: whether it holds, and a sentence for the student.

    ``passed=None`` marks an answer that the notebook's feedback records but does not reveal (a
    verdict, say): it is graded after submission and earns no points in the feedback.  ``check``
    names the property (one of its question's :attr:`Question.checks`, for weights; ``""``: unnamed,
    weight 1; :data:`UNSCORED`: a note for the instructor that no score counts).
    """

    passed: bool | None
    message: str
    check: str = ""

    def __post_init__(self) -> None:
        if self.passed is not None and not is_bool(self.passed):
            raise TypeError(f"passed must be True, False or None, got {type(self.passed).__name__}")
        if not isinstance(self.message, str):
            raise TypeError(f"message must be a str, got {type(self.message).__name__}")
        if not isinstance(self.check, str) or (self.check and not self.check.isidentifier()):
            raise TypeError(f"check must be an identifier or empty, got {shown(self.check)}")


@dataclass(frozen=True)
class Feedback:
    """The outcome of one question: score out of ``points``, findings, and a status.

    ``status`` is ``"graded"``, ``"not implemented"`` (the template's stub is still there),
    ``"missing"`` (a name the question needs is not defined), ``"error"`` (the check could not run
    the student's code), ``"timeout"`` or ``"not run"`` (the grader's time limits).
    """

    assignment: str
    question: str
    title: str
    score: float
    points: float
    findings: tuple[Finding, ...] = ()
    status: str = "graded"

    def __post_init__(self) -> None:
        for name in ("assignment", "question", "title"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        points = check_real(self.points, "points", low=0.0)
        if not 0.0 <= check_real(self.score, "score", low=0.0) <= points:
            raise ValueError(f"score must lie in [0, points] = [0, {points:g}], got {shown(self.score)}")
        if not isinstance(self.findings, tuple) or not all(isinstance(f, Finding) for f in self.findings):
            raise TypeError("findings must be a tuple of Finding")
        check_choice(self.status, "status", STATUSES)

    @property
    def messages(self) -> list[str]:
        """The sentences of the failed findings (or why nothing was graded).  When grading, these include
        the notes for the instructor (:func:`is_instructor_note`), which the scores CSV keeps and a
        student's feedback file leaves out."""
        return [f.message for f in self.findings if f.passed is False]

    @property
    def pending(self) -> bool:
        """Whether part of the answer is only recorded here and graded after submission."""
        return any(f.passed is None for f in self.findings)

    def report(self) -> str:
        """The text a student reads.  A question with a part graded after submission shows no score
        (a partial score there would contradict the final grade)."""
        if self.pending and self.status == "graded":
            head = f"{self.question} ({self.title}): recorded; graded after submission"
        else:
            head = f"{self.question} ({self.title}): {fmt_points(self.score)} / {fmt_points(self.points)} points"
        if self.status != "graded":
            head += f" [{self.status}]"
        lines = [head]
        for f in self.findings:
            mark = {True: "✓", False: "✗", None: "?"}[f.passed]
            lines += textwrap.wrap(f.message, width=REPORT_WIDTH, initial_indent=f"  {mark} ",
                                   subsequent_indent="    ", break_on_hyphens=False)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.report()

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "score": self.score,
            "points": self.points,
            "status": self.status,
            "messages": self.messages,
        }


@dataclass(frozen=True)
class Question:
    """One graded question: the names it reads from the student's notebook, and its check.

    ``checks`` names the properties its findings check (:attr:`Finding.check`; an instructor may
    weigh them).  ``carried`` names earlier answers that its check also reads when error carried
    forward is on (``check(*objects, grading_seed=..., carried={name: object})``): the question is then
    judged against the student's own earlier answer where that answer is usable.
    """

    name: str
    title: str
    points: float
    needs: tuple[str, ...]
    check: Callable[..., list[Finding]]
    checks: tuple[str, ...] = ()
    carried: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("name", "title"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(f"{name} must be a non-empty str, got {shown(getattr(self, name))}")
        check_positive(self.points, "points")
        if not isinstance(self.needs, tuple) or not self.needs or not all(
                isinstance(n, str) and n.isidentifier() for n in self.needs):
            raise TypeError(f"needs must be a non-empty tuple of identifiers, got {shown(self.needs)}")
        check_callable(self.check, "check", "check(*objects, grading_seed=None)")
        for name in ("checks", "carried"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(n, str) and n.isidentifier() for n in value) \
                    or len(set(value)) != len(value):
                raise TypeError(f"{name} must be a tuple of distinct identifiers, got {shown(value)}")
        if UNSCORED in self.checks:
            raise ValueError(f"checks: {UNSCORED!r} is reserved for notes that are never scored")


@dataclass(frozen=True)
class Assignment:
    """An assignment: its name (the CLI's ``ASSIGNMENT``), title, notebook and questions.

    ``independent`` says why error carried forward makes no sense for it (no question's check reads
    an earlier answer); it is empty when some question carries an earlier answer forward.
    """

    name: str
    title: str
    notebook: str  # the student notebook, relative to book/assignments/
    questions: tuple[Question, ...]
    independent: str = "each question is judged on its own answer, and no answer is built from another one"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise TypeError(f"name must be an identifier, got {shown(self.name)}")
        if not isinstance(self.title, str) or not isinstance(self.notebook, str) or not self.notebook.endswith(".md"):
            raise TypeError("title must be a str and notebook a .md file name")
        if not isinstance(self.questions, tuple) or not self.questions or not all(
                isinstance(q, Question) for q in self.questions):
            raise TypeError("questions must be a non-empty tuple of Question")
        if len({q.name for q in self.questions}) != len(self.questions):
            raise ValueError("questions must have distinct names")
        if not isinstance(self.independent, str):
            raise TypeError(f"independent must be a str, got {type(self.independent).__name__}")
        known = {n for q in self.questions for n in q.needs}
        for q in self.questions:
            missing = [n for n in q.carried if n not in known]
            if missing:
                raise ValueError(f"questions: {q.name} carries {shown(missing[0])} forward, which no question needs")

    @property
    def carry_forward(self) -> bool:
        """Whether some question can be judged against an earlier answer (error carried forward)."""
        return any(q.carried for q in self.questions)

    @property
    def points(self) -> float:
        return sum(q.points for q in self.questions)

    def question(self, name: str) -> Question:
        if not isinstance(name, str):
            raise TypeError(f"question name must be a str, got {type(name).__name__}")
        for q in self.questions:
            if q.name == name:
                return q
        raise ValueError(f"question name: assignment {shown(self.name)} has no question {shown(name)} "
                         f"(it has {[q.name for q in self.questions]})")


def is_instructor_note(message: str) -> bool:
    """Whether a recorded message is a note for the instructor only (it starts with :data:`INSTRUCTOR_NOTE`),
    which never goes into a student's feedback file."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__}")
    return message.startswith(INSTRUCTOR_NOTE)


class NotAnswered(Exception):
    """Raised by a check when the student left the template's placeholder in place."""


def fmt_points(x: float) -> str:
    """A number of points as printed: ``2``, ``0.67``."""
    return f"{check_real(x, 'x'):g}"


def named(check: str, *findings: Finding) -> list[Finding]:
    """``findings`` as a list, each unnamed one given the check name ``check`` (named ones keep theirs)."""
    if not isinstance(check, str) or not check.isidentifier():
        raise TypeError(f"check must be an identifier, got {shown(check)}")
    if not all(isinstance(f, Finding) for f in findings):
        raise TypeError("findings must be Finding objects")
    return [f if f.check else dataclasses.replace(f, check=check) for f in findings]


def score(findings: Sequence[Finding], points: float, weights: dict[str, float] | None = None) -> float:
    """``points`` times the weighted share of the passed findings, rounded to hundredths of a point.

    A finding weighs ``weights[f.check]`` (1 when its check is not listed, or with no ``weights``);
    findings marked :data:`UNSCORED` do not count; 0 when nothing weighs anything.
    """
    points = check_real(points, "points", low=0.0)
    findings = check_sequence(findings, "findings", min_len=0)
    if not all(isinstance(f, Finding) for f in findings):
        raise TypeError("findings must be a sequence of Finding")
    if weights is None:
        weights = {}
    if not isinstance(weights, dict) or not all(isinstance(k, str) for k in weights):
        raise TypeError("weights must be a dict from check names to numbers")
    for value in weights.values():
        check_real(value, "weights", low=0.0)
    scored = [(float(weights.get(f.check, 1.0)), f.passed is True) for f in findings if f.check != UNSCORED]
    top = max((w for w, _ in scored), default=0.0)
    if top <= 0:
        return 0.0
    # Weights relative to the largest (at most 1 each), so that sums of weights near 1e308 stay finite, and the
    # passed share (at most 1) multiplies points last: the score never exceeds points, however large.
    total = sum(w / top for w, _ in scored)
    return round(points * (sum(w / top for w, ok in scored if ok) / total), 2)


def call(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
    """``fn(*args, **kwargs)`` with warnings silenced; returns ``(value, None)`` or ``(None, exc)``.

    ``NotImplementedError`` propagates: it means the stub is still in place.
    """
    check_callable(fn, "fn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return fn(*args, **kwargs), None
            except NotImplementedError:
                raise
            except BaseException as exc:  # the student's bug (SystemExit too): reported, never fatal
                if not student_error(exc):
                    raise
                return None, exc


def student_error(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a student's code, is the student's failure to report: any ``Exception``,
    ``SystemExit``, ``GeneratorExit`` or a bare ``BaseException``.  Other ``BaseException`` subclasses
    (``KeyboardInterrupt``, the grader's time limits) stop the check."""
    return isinstance(exc, (Exception, SystemExit, GeneratorExit)) or type(exc) is BaseException


def describe(exc: BaseException) -> str:
    """``"TypeName: message"`` for a student's exception, with a hint for the commonest numpy slip."""
    if not isinstance(exc, BaseException):
        raise TypeError(f"exc must be an exception, got {type(exc).__name__}")
    message = exception_text(exc)
    text = f"{type(exc).__name__}: {message}"
    if "truth value of an array" in message:
        text += " (an `if` on a whole array: use (u <= 0).any() or np.where)"
    return text


def exception_text(exc: BaseException) -> str:
    """``str(exc)`` of a student's exception; a placeholder when its ``__str__`` fails (or exits)."""
    try:
        return str(exc)
    except BaseException as failure:
        if not student_error(failure):
            raise
        return "<its message could not be read>"


def as_floats(value: Any) -> NDArray[np.float64] | None:
    """``value`` as a float64 array, or None if it is not numbers (``None`` is not NaN here)."""
    if value is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(value, dtype=np.float64)
    except BaseException as exc:  # a student's object whose conversion raises (or exits) is not numbers
        if not student_error(exc):
            raise
        return None


def returned(value: Any) -> str:
    """What a student's function returned, as a message names it: ``an array of shape (3, 4)``, ``a list of
    12 items, not a numpy array ...``, ``None (is the return statement missing?)``."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if value is None:
        return "None (is the return statement missing?)"
    if isinstance(value, (list, tuple)):
        return (f"a {type(value).__name__} of {len(value)} items, not a numpy array (np.asarray(...) turns it "
                "into one)")
    if isinstance(value, (numbers.Number, np.generic)):
        return f"a single number ({type(value).__name__})"
    return f"a {type(value).__name__}"


def expect_value_error(call: str, value: Any, exc: BaseException | None, why: str) -> Finding:
    """The finding for a call that had to raise ``ValueError``."""
    if not isinstance(call, str) or not isinstance(why, str):
        raise TypeError("call and why must be str")
    if exc is not None and not isinstance(exc, BaseException):
        raise TypeError(f"exc must be an exception or None, got {type(exc).__name__}")
    if isinstance(exc, ValueError):
        return Finding(True, f"{call} raises ValueError")
    if exc is not None:
        return Finding(False, f"{call} raised {type(exc).__name__} ({exception_text(exc)}), expected ValueError: {why}")
    return Finding(False, f"{call} returned {short_repr(value)} instead of raising ValueError: {why}")


def short_repr(value: Any, limit: int = 200) -> str:
    """``repr(value)`` of a student's value, cut to ``limit`` characters (a repr that fails says so)."""
    try:
        text = repr(value)
    except BaseException as exc:  # a student's object whose __repr__ fails (or exits)
        if not student_error(exc):
            raise
        return f"a {type(value).__name__} whose repr fails"
    return text if len(text) <= limit else text[:limit - 3] + "..."


class SpyArray(np.ndarray):
    """An array view that notes element-by-element access from Python (a loop, ``u[i]``, ``tolist()``).

    Views and results derived from it share the note (:attr:`touched`).  Made by :func:`spy_array`,
    never called (hence not in ``__all__``: its constructor is numpy's).
    """

    def __array_finalize__(self, obj: Any) -> None:
        self._flag = getattr(obj, "_flag", None) or [False]

    @property
    def touched(self) -> bool:
        return self._flag[0]

    def mark_touched(self) -> None:
        self._flag[0] = True

    def __iter__(self):  # type: ignore[override]
        self.mark_touched()
        return super().__iter__()

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, (numbers.Integral, np.integer)) or (
            isinstance(key, tuple) and key and all(isinstance(k, (numbers.Integral, np.integer)) for k in key)
        ):
            self.mark_touched()
        return super().__getitem__(key)

    def tolist(self):  # type: ignore[override]
        self.mark_touched()
        return super().tolist()


def spy_array(values: NDArray[np.float64]) -> SpyArray:
    """A fresh :class:`SpyArray` view of ``values`` (not touched yet)."""
    spy = check_float_array(values, "values", allow_nan=True).view(SpyArray)
    spy._flag = [False]
    return spy


def uniforms(seed: int, size: int) -> NDArray[np.float64]:
    """``size`` uniforms in the open interval (0, 1) (``rng.random`` can return 0, never 1)."""
    seed = check_int(seed, "seed", minimum=0)
    size = check_int(size, "size", minimum=0, maximum=MAX_ELEMENTS)
    u = np.random.default_rng(seed).random(size)
    u[u == 0.0] = 0.5  # probability 2^-53 per draw; keeps u inside the open interval
    return u


#: The fixed grading seed of the tests' grading runs (``hidden=True``, the deprecated spelling, means it).
TEST_GRADING_SEED = 20221105
#: Deprecated alias of :data:`TEST_GRADING_SEED`.
DEFAULT_HIDDEN_SEED = TEST_GRADING_SEED


def grading_rng(grading_seed: int | None) -> np.random.Generator | None:
    """Where a check draws the parameters of a grading run: None for the feedback run (``grading_seed``
    None), else a Generator seeded by ``grading_seed`` (an int drawn fresh per submission by the runner;
    the tests use :data:`TEST_GRADING_SEED`)."""
    if grading_seed is None:
        return None
    return np.random.default_rng(check_int(grading_seed, "grading_seed", minimum=0))


def grading_seed_from_hidden(hidden: bool | int) -> int | None:
    """The grading seed that the deprecated ``hidden=`` value meant: False or 0 the feedback run (None),
    True :data:`TEST_GRADING_SEED`, any other int itself."""
    if is_bool(hidden):
        return TEST_GRADING_SEED if hidden else None
    hidden = check_int(hidden, "hidden", minimum=0)
    return hidden if hidden else None


def hidden_rng(hidden: bool | int) -> np.random.Generator | None:
    """Deprecated alias of :func:`grading_rng` taking the old ``hidden`` value (see
    :func:`grading_seed_from_hidden`)."""
    import warnings

    warnings.warn("hidden_rng() is deprecated and will be removed in the next release; use grading_rng(grading_seed)",
                  DeprecationWarning, stacklevel=2)
    return grading_rng(grading_seed_from_hidden(hidden))
