"""What a check returns (:class:`Finding`, :class:`Feedback`), the shape of an assignment
(:class:`Question`, :class:`Assignment`), and the helpers every check uses to call student code.

A check is a plain function ``check(*objects, hidden=False) -> list[Finding]``: it receives the
student's objects (the names listed in :attr:`Question.needs`), calls or inspects them, and says
what holds.  Equal weight per finding: the score is ``points * passed / len(findings)``.
"""

from __future__ import annotations

import numbers
import textwrap
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Finding",
    "Feedback",
    "Question",
    "Assignment",
    "NotAnswered",
    "REPORT_WIDTH",
    "KS_ALPHA",
    "fmt_points",
    "score",
    "call",
    "describe",
    "as_floats",
    "expect_value_error",
    "SpyArray",
    "spy_array",
    "uniforms",
    "hidden_rng",
]

#: Line width of a feedback report (it fits the book's code cells).
REPORT_WIDTH = 86
#: Significance level of every Kolmogorov-Smirnov test in the checks.
KS_ALPHA = 1e-3


@dataclass(frozen=True)
class Finding:
    """One property checked: whether it holds, and a sentence for the student.

    ``passed=None`` marks an answer that the notebook's feedback records but does not reveal (a
    verdict, say): it is graded after submission and earns no points in the feedback.
    """

    passed: bool | None
    message: str


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

    @property
    def messages(self) -> list[str]:
        """The sentences a student should read: failed findings, or why nothing was graded."""
        return [f.message for f in self.findings if f.passed is False]

    def report(self) -> str:
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
    """One graded question: the names it reads from the student's notebook, and its check."""

    name: str
    title: str
    points: float
    needs: tuple[str, ...]
    check: Callable[..., list[Finding]]


@dataclass(frozen=True)
class Assignment:
    """An assignment: its name (the CLI's ``ASSIGNMENT``), title, notebook and questions."""

    name: str
    title: str
    notebook: str  # the student notebook, relative to book/assignments/
    questions: tuple[Question, ...]

    @property
    def points(self) -> float:
        return sum(q.points for q in self.questions)

    def question(self, name: str) -> Question:
        for q in self.questions:
            if q.name == name:
                return q
        raise ValueError(f"question: assignment {self.name!r} has no question {name!r} "
                         f"(it has {[q.name for q in self.questions]})")


class NotAnswered(Exception):
    """Raised by a check when the student left the template's placeholder in place."""


def fmt_points(x: float) -> str:
    return f"{x:g}"


def score(findings: Sequence[Finding], points: float) -> float:
    """Equal weight per finding, rounded to hundredths of a point."""
    if not findings:
        return 0.0
    return round(points * sum(f.passed is True for f in findings) / len(findings), 2)


def call(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
    """``fn(*args, **kwargs)`` with warnings silenced; returns ``(value, None)`` or ``(None, exc)``.

    ``NotImplementedError`` propagates: it means the stub is still in place.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return fn(*args, **kwargs), None
            except NotImplementedError:
                raise
            except Exception as exc:  # the student's bug: reported, never fatal
                return None, exc


def describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "truth value of an array" in str(exc):
        text += " (an `if` on a whole array: use (u <= 0).any() or np.where)"
    return text


def as_floats(value: Any) -> NDArray[np.float64] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def expect_value_error(call: str, value: Any, exc: BaseException | None, why: str) -> Finding:
    if isinstance(exc, ValueError):
        return Finding(True, f"{call} raises ValueError")
    if exc is not None:
        return Finding(False, f"{call} raised {type(exc).__name__} ({exc}), expected ValueError: {why}")
    return Finding(False, f"{call} returned {value!r} instead of raising ValueError: {why}")


class SpyArray(np.ndarray):
    """An array view that notes element-by-element access from Python (a loop, ``u[i]``, ``tolist()``).

    Views and results derived from it share the note (:attr:`touched`).
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
    spy = np.asarray(values).view(SpyArray)
    spy._flag = [False]
    return spy


def uniforms(seed: int, size: int) -> NDArray[np.float64]:
    """``size`` uniforms in the open interval (0, 1) (``rng.random`` can return 0, never 1)."""
    u = np.random.default_rng(seed).random(size)
    u[u == 0.0] = 0.5  # probability 2^-53 per draw; keeps u inside the open interval
    return u


#: The seed behind ``hidden=True`` (the tests' fixed hidden run).
DEFAULT_HIDDEN_SEED = 20221105


def hidden_rng(hidden: bool | int) -> np.random.Generator | None:
    """Where a check draws its hidden parameters: None for the notebook's feedback (``hidden`` false),
    else a Generator seeded by ``hidden`` (an int drawn fresh per submission by the runner; ``True``
    means a fixed seed, for tests)."""
    if not hidden:
        return None
    return np.random.default_rng(DEFAULT_HIDDEN_SEED if hidden is True else int(hidden))
