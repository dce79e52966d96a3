"""The registry of assignments, and the notebook-side feedback (:func:`check`, :func:`checker`).

Each assignment is one module of this package that defines ``ASSIGNMENT`` (an
:class:`~dptutor.assignments.feedback.Assignment`); :data:`ASSIGNMENT_MODULES` lists them, in the order
the CLI shows them.  See the package docstring for how to add one.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable
from typing import Any

from dptutor._validate import check_choice, check_int
from dptutor.assignments.feedback import (Assignment, Feedback, Finding, NotAnswered, Question, describe,
                                          grading_seed_from_hidden, score, student_error)
from dptutor.assignments.instances import INSTANCE_ASSIGNMENTS, answer_member

__all__ = ["ASSIGNMENT_MODULES", "ASSIGNMENTS", "RECORD_TYPES", "get_assignment", "record_types", "check", "checker"]

#: The modules of ``dptutor.assignments`` that define an assignment (one line per assignment).
ASSIGNMENT_MODULES: tuple[str, ...] = (
    "sampler",
    "mechanism",
    "audit",
    "pair_audit",
    "selection",
    "bughunt",
)

#: The assignments by name, each module's ``ASSIGNMENT`` (filled below from :data:`ASSIGNMENT_MODULES`).
ASSIGNMENTS: dict[str, Assignment] = {}
#: Per assignment, the allow-list of object types the grader rebuilds from a kernel's data; a type's
#: bare name -> the grader's own constructor, called with the decoded fields (a dict).  Declared by
#: each assignment module as ``RECORD_TYPES``; anything else a kernel sends stays inert data.
RECORD_TYPES: dict[str, dict[str, Callable[[dict[str, Any]], Any]]] = {}
for _module in ASSIGNMENT_MODULES:
    _mod = importlib.import_module(f"dptutor.assignments.{_module}")
    _a = _mod.ASSIGNMENT
    if _a.name in ASSIGNMENTS:
        raise ValueError(f"assignment name {_a.name!r} is defined twice")
    ASSIGNMENTS[_a.name] = _a
    RECORD_TYPES[_a.name] = dict(getattr(_mod, "RECORD_TYPES", {}))


def get_assignment(name: object) -> Assignment:
    """The registered assignment called ``name`` (ValueError naming ``assignment`` otherwise)."""
    return ASSIGNMENTS[check_choice(name, "assignment name", ASSIGNMENTS)]


def record_types(assignment: object) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """The object types ``assignment`` lets the grader rebuild from a kernel's data (a copy)."""
    return dict(RECORD_TYPES[get_assignment(assignment).name])


def _hidden_alias(fn: Callable[..., Feedback]) -> Callable[..., Feedback]:
    """``fn`` taking the deprecated ``hidden=`` (see :func:`~dptutor.assignments.feedback.grading_seed_from_hidden`)
    as ``grading_seed=``, with a DeprecationWarning; its signature is ``fn``'s."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Feedback:
        if "hidden" in kwargs:
            if "grading_seed" in kwargs:
                raise TypeError("check() got both grading_seed= and its deprecated alias hidden=; pass grading_seed= only")
            grading_seed = grading_seed_from_hidden(kwargs.pop("hidden"))
            warnings.warn("check(): hidden= is deprecated and will be removed in the next release; use grading_seed= "
                          "(None for the feedback run, an int for a grading run)", DeprecationWarning, stacklevel=2)
            kwargs["grading_seed"] = grading_seed
        return fn(*args, **kwargs)

    return wrapper


@_hidden_alias
def check(assignment: str, question: str, *objects: Any, grading_seed: int | None = None,
          carried: dict[str, Any] | None = None) -> Feedback:
    """Run one question's check on the student's objects and return the :class:`~dptutor.assignments.feedback.Feedback`.

    ``grading_seed`` None is the feedback run (the notebook's); an int is a grading run, whose
    parameters are drawn from that seed (the runner draws one per question and submission; the tests
    use :data:`~dptutor.assignments.feedback.TEST_GRADING_SEED`).  ``hidden`` is its deprecated
    alias (False: the feedback run, True: ``TEST_GRADING_SEED``, an int: that seed).
    ``carried`` (error carried forward) maps some of the names in the question's ``carried`` to the
    student's earlier answers; the check then judges the question against them where it can.
    Never raises because of the student's code: a stub still in place gives status
    ``"not implemented"``, any other failure a message.
    """
    a = get_assignment(assignment)
    q = a.question(question)
    if grading_seed is not None:
        grading_seed = check_int(grading_seed, "grading_seed", minimum=0)
        if a.name in INSTANCE_ASSIGNMENTS:
            answer_member(a.name)  # a course's answers need its key: ValueError naming grading_seed otherwise
    if len(objects) != len(q.needs):
        raise TypeError(f"objects: {assignment} {question} checks {', '.join(q.needs)}: "
                        f"pass {len(q.needs)} object(s)")
    if carried is not None:
        if not isinstance(carried, dict):
            raise TypeError(f"carried must be a dict from names to objects, got {type(carried).__name__}")
        if not q.carried:
            raise ValueError(f"carried: {a.name} {q.name} reads no earlier answer ({a.name}: {a.independent})")
        unknown = [k for k in carried if k not in q.carried]
        if unknown:
            raise ValueError(f"carried: {a.name} {q.name} can carry forward {', '.join(q.carried)}, not {unknown[0]!r}")
    extra = {"carried": carried} if carried is not None else {}
    base = dict(assignment=a.name, question=q.name, title=q.title, points=q.points)
    try:
        findings = q.check(*objects, grading_seed=grading_seed, **extra)
    except NotImplementedError:
        names = " and ".join(f"`{n}`" for n in q.needs)
        return Feedback(**base, score=0.0, status="not implemented", findings=(Finding(
            False, f"not implemented yet: {names} still raises NotImplementedError; replace the "
                   "`raise NotImplementedError(...)` line with your code"),))
    except NotAnswered as exc:
        return Feedback(**base, score=0.0, status="not implemented",
                        findings=(Finding(False, f"not answered yet: {exc}"),))
    except BaseException as exc:  # a student object that breaks the check itself (SystemExit in a __repr__, say)
        if not student_error(exc):
            raise
        return Feedback(**base, score=0.0, status="error",
                        findings=(Finding(False, f"could not check your answer: {describe(exc)}"),))
    return Feedback(**base, score=score(findings, q.points), findings=tuple(findings))


class _Checker:
    """``checker(name).q1(obj, ...)``: the notebook-side feedback for one assignment."""

    def __init__(self, assignment: Assignment) -> None:
        self._assignment = assignment
        for q in assignment.questions:
            setattr(self, q.name, self._make(q))

    def _make(self, q: Question) -> Callable[..., Feedback]:
        def run(*objects: Any) -> Feedback:
            return check(self._assignment.name, q.name, *objects)

        run.__name__ = q.name
        run.__doc__ = f"Check {q.name} ({q.title}) of {self._assignment.name!r}: pass {', '.join(q.needs)}."
        return run

    def __repr__(self) -> str:
        qs = ", ".join(f"{q.name}({', '.join(q.needs)})" for q in self._assignment.questions)
        return f"checks for {self._assignment.title!r}: {qs}"


def checker(assignment: str) -> _Checker:
    """The feedback checks of ``assignment``, as attributes ``q1``, ``q2``, ...."""
    return _Checker(get_assignment(assignment))
