"""The record of one graded submission: its scores, messages and the grading seed of each question."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from dptutor._validate import check_int, check_real
from dptutor.assignments.feedback import Assignment, fmt_points
from dptutor.course.textsafe import csv_cell, one_line, safe_text

__all__ = ["GRADING_SEED_RANGE", "SubmissionResult"]  # HIDDEN_RANGE: its deprecated alias

#: Grading seeds (the seed of a question's grading run) lie in [2, 2**63).
GRADING_SEED_RANGE = (2, 2**63 - 1)
#: Deprecated alias of :data:`GRADING_SEED_RANGE`.
HIDDEN_RANGE = GRADING_SEED_RANGE


def check_grading_seeds(grading_seeds: object, name: str, questions: Any) -> dict[str, int]:
    """``grading_seeds`` as a dict from question names (of ``questions``) to seeds in :data:`GRADING_SEED_RANGE`."""
    if not isinstance(grading_seeds, dict) or not all(isinstance(k, str) and k in questions for k in grading_seeds):
        raise TypeError(f"{name} must be a dict from question names to ints")
    for value in grading_seeds.values():
        check_int(value, name, minimum=GRADING_SEED_RANGE[0], maximum=GRADING_SEED_RANGE[1])
    return dict(grading_seeds)


@dataclass
class SubmissionResult:
    """Scores of one submitted notebook."""

    file: str
    assignment: str
    scores: dict[str, float]
    points: dict[str, float]
    messages: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: The grading seed of each question (the scores CSV keeps them for regrades).
    grading_seeds: dict[str, int] = field(default_factory=dict)
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
        check_grading_seeds(self.grading_seeds, "grading_seeds", self.scores)
        if not isinstance(self.checks, dict) or not all(
                k in self.scores and isinstance(v, list) and all(
                    isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and isinstance(c[1], bool) for c in v)
                for k, v in self.checks.items()):
            raise TypeError("checks must be a dict from question names to lists of [check name, passed]")
        if not isinstance(self.carry_forward, bool):
            raise TypeError(f"carry_forward must be True or False, got {type(self.carry_forward).__name__}")

    @property
    def hidden(self) -> dict[str, int]:
        """Deprecated alias of :attr:`grading_seeds`."""
        import warnings

        warnings.warn("SubmissionResult.hidden is deprecated and will be removed in the next release; "
                      "use grading_seeds", DeprecationWarning, stacklevel=2)
        return self.grading_seeds

    def made_safe(self) -> SubmissionResult:
        """A copy with every text a submission can influence (its name, messages and notes) made safe
        (:func:`~dptutor.course.textsafe.safe_text`: no lone surrogate, no invisible format character)."""
        return dataclasses.replace(self, file=safe_text(self.file), notes=[safe_text(n) for n in self.notes],
                                   messages={q: [safe_text(m) for m in ms] for q, ms in self.messages.items()})

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
