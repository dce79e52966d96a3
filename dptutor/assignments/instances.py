"""Course instances: the mystery mechanisms of assignments 3, 4 and 6, drawn for each course by its secret.

Each of these assignments has a public *family* of mystery mechanisms:

* ``audit``: one of the two mechanisms (``A`` or ``B``) is broken by one of the four bugs listed in
  :data:`~dptutor.assignments.audit.DIAGNOSES`, the other is the correct Laplace mechanism (scale
  ``n / epsilon``): 8 members;
* ``pair_audit``: every release is ``columns`` copies of the count, each with its own Laplace noise
  of scale ``spread / PAIR_EPSILON`` (2, 3 or 4 columns; spread 1 or 0.8): 6 members, whose true
  epsilon is ``columns * PAIR_EPSILON / spread``;
* ``bughunt``: three mechanisms, each correct or broken by one of the bugs
  :mod:`~dptutor.assignments.bug_family` allows it, at least one broken: 35 members.

The book's notebooks use the *self-study* member (:data:`SELF_STUDY`), whose answers the book's
instructor notebooks state in public.  A course draws its members from the other members
(:data:`COURSE_FAMILIES`): the instructor's secret gives a course key, ``HMAC-SHA256(secret,
"dptutor course instance v1")``, and the course key one *token* per assignment
(``dptutor-course-1:<assignment>:<32 hex digits of HMAC-SHA256(course key, assignment)>``).  A token
selects its member by a public rule (:func:`member_of`): the SHA-256 of the token, modulo the size of
the family.  The same secret always gives the same tokens; different secrets give independent,
uniformly drawn members.

Threat model.  A student's notebook runs the mystery on the student's own computer, so it holds the
token (``use_course(token)`` in the course's student notebooks) and this module, which turns the token
into the mystery's behaviour.  What this protects:

* the answers are written nowhere a student gets them: not in the wheel, the public repository or a
  course's student notebooks (a test searches them); the course's answer key stays in the course
  folder's ``private/`` part;
* the grader's checks cannot be used as an oracle: a check that grades (a grading run, ``grading_seed=``) takes the
  answers from the course's answer key, which only the *course key* selects
  (``dptutor.course.keys.use_answer_key``, ``dptutor.course.keys.course_scope``; the key is in
  ``private/answer-key.toml``, and a token
  is a one-way HMAC of it).  With only a token in use, a grading check refuses to run instead of
  grading against the token's mysteries;
* the answers change with the course: last semester's solutions say nothing about this one, and a
  token reveals neither the secret, the course key nor the other assignment's member;
* errors do not depend on the member: a mystery validates every input with the same rules (the widest
  any member needs) *before* it looks up its member, so a bad input raises the same error, after the
  same work, whatever the member;
* the random generator a student passes is never given a member's scale (the draws are standard Laplace,
  scaled afterwards; in ``audit`` the calls are the same for every member), so a generator that records
  its calls learns no more than the output's shape.

What it does not protect: a student who reads this module can repeat :func:`member_of` on the token
and learn the member, as a student who measures the noise of the outputs learns its scale.  Any
mechanism that runs on the student's computer can be read there (only a mechanism run as a remote
service could not).  Reading the code is not an audit, though: the graded questions ask for
replayable evidence that supports each verdict, and the justification is read by hand.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dptutor.assignments.bug_family import HUNT_BUGS, BughuntMember
from dptutor._validate import MAX_ELEMENTS, check_batch, check_choice, check_int, check_real, check_rng, check_str
from dptutor.distributions import standard_laplace_fill
from dptutor.renyi import round_up

__all__ = [
    "INSTANCE_ASSIGNMENTS", "AUDIT_BUGS", "AuditMember", "PairMember", "FAMILIES", "SELF_STUDY",
    "COURSE_FAMILIES", "TOKEN_PREFIX", "MYSTERY_EPSILON_RANGE", "PAIR_EPSILON", "member_of", "use_course",
    "use_self_study", "active_member", "use_answers", "answers_scope", "answer_member", "audit_mystery",
    "pair_mystery",
]

#: The assignments whose mystery mechanisms are drawn per course.
INSTANCE_ASSIGNMENTS = ("audit", "pair_audit", "bughunt")
#: The bugs a broken ``audit`` mechanism may have (the keys of ``audit.DIAGNOSES``).
AUDIT_BUGS = ("one-sided", "sensitivity-1", "l2", "half-scale")
#: The budget the ``pair_audit`` mystery claims.
PAIR_EPSILON = 0.5
#: A mystery accepts epsilon in this range, whatever its member (every member's scale is then finite
#: and positive for every n).
MYSTERY_EPSILON_RANGE = (1e-6, 1e6)
#: The first part of every token (the version of the family and of the derivation).
TOKEN_PREFIX = "dptutor-course-1"
_TOKEN = re.compile(r"^dptutor-course-1:(audit|pair_audit|bughunt):([0-9a-f]{32})$")
_MAX_PAIR_SIZE = 1 << 24


@dataclass(frozen=True)
class AuditMember:
    """A member of the ``audit`` family: mechanism ``broken`` has bug ``bug``; the other is correct."""

    broken: str
    bug: str

    def __post_init__(self) -> None:
        check_choice(self.broken, "broken", ("A", "B"))
        check_choice(self.bug, "bug", AUDIT_BUGS)

    def scale(self, label: str, n: int, epsilon: float) -> float:
        """The noise scale of mechanism ``label`` at dimension ``n`` (one-sided noise: of the magnitude);
        ``n`` is a batch's column count, at most ``MAX_ELEMENTS``."""
        label = check_choice(label, "label", ("A", "B"))
        n = check_int(n, "n", minimum=1, maximum=MAX_ELEMENTS)
        eps = check_real(epsilon, "epsilon", low=MYSTERY_EPSILON_RANGE[0], high=MYSTERY_EPSILON_RANGE[1])
        if label != self.broken or self.bug == "one-sided":
            return round_up(Fraction(n) / Fraction(eps))  # never below n / epsilon: the private one stays private
        return {"sensitivity-1": 1.0, "l2": n ** 0.5, "half-scale": n / 2}[self.bug] / eps

    def one_sided(self, label: str) -> bool:
        """Whether mechanism ``label`` adds only non-negative noise."""
        return check_choice(label, "label", ("A", "B")) == self.broken and self.bug == "one-sided"

    def verdict(self, label: str) -> str:
        """The right verdict on mechanism ``label``: ``"violates"`` or ``"no evidence"``."""
        return "violates" if check_choice(label, "label", ("A", "B")) == self.broken else "no evidence"


@dataclass(frozen=True)
class PairMember:
    """A member of the ``pair_audit`` family: ``columns`` noisy copies of the count, each with Laplace
    noise of scale ``spread / PAIR_EPSILON``."""

    columns: int
    spread: float

    def __post_init__(self) -> None:
        check_int(self.columns, "columns", minimum=1, maximum=16)
        check_real(self.spread, "spread", low=0.1, high=10.0)

    @property
    def scale(self) -> float:
        """The Laplace scale of each column (rounded up, so each column spends at most ``1 / scale``)."""
        return round_up(Fraction(self.spread) / Fraction(PAIR_EPSILON))

    @property
    def true_epsilon(self) -> float:
        """The privacy loss for counts that differ by 1 (each column spends 1 / scale), rounded up."""
        return round_up(Fraction(self.columns) / Fraction(self.scale))


#: Every member of each family, in a fixed order.
FAMILIES: dict[str, tuple] = {
    "audit": tuple(AuditMember(label, bug) for label in "AB" for bug in AUDIT_BUGS),
    "pair_audit": tuple(PairMember(columns, spread) for columns in (2, 3, 4) for spread in (1.0, 0.8)),
    # bughunt: every combination of the mechanisms' bugs with at least one broken mechanism (35 members)
    "bughunt": tuple(BughuntMember(h, s, c) for h in HUNT_BUGS["histogram"] for s in HUNT_BUGS["squares"]
                     for c in HUNT_BUGS["selection"] if (h, s, c) != ("none", "none", "none")),
}
#: The members of the book's self-study instance (their answers are public).
SELF_STUDY: dict[str, object] = {"audit": AuditMember("A", "l2"), "pair_audit": PairMember(2, 1.0),
                                 "bughunt": BughuntMember("none", "wrong-bound", "half-sensitivity")}
#: The members a course may draw (every member except the public self-study one).
COURSE_FAMILIES: dict[str, tuple] = {a: tuple(m for m in FAMILIES[a] if m != SELF_STUDY[a]) for a in FAMILIES}

_ACTIVE: dict[str, object] = dict(SELF_STUDY)
#: The members whose answers grading checks use, by assignment: set only from a course key.
_ANSWERS: dict[str, object] = {}


def member_of(token: str) -> tuple[str, object]:
    """The assignment and the member a token selects (the public rule: SHA-256 of the token modulo the
    size of the assignment's course family)."""
    token = check_str(token, "token").strip()
    match = _TOKEN.match(token)
    if match is None:
        raise ValueError(f"token must look like '{TOKEN_PREFIX}:audit:<32 hex digits>' (as the course's student "
                         "notebooks write it), got a string that does not")
    assignment = match[1]
    family = COURSE_FAMILIES[assignment]
    index = int.from_bytes(hashlib.sha256(token.encode("ascii")).digest()[:8], "big") % len(family)
    return assignment, family[index]


def use_course(token: str) -> None:
    """Make the mystery mechanisms (and the feedback checks) of the token's assignment those of its course.

    The checks that grade (``grading_seed=``) then refuse to run: they need the course key
    (``dptutor.course.keys.use_answer_key``).
    """
    assignment, member = member_of(token)
    _ACTIVE[assignment] = member
    _ANSWERS.pop(assignment, None)  # a token selects the mysteries only; grading needs the course key


def use_self_study(assignment: str | None = None) -> None:
    """Go back to the book's self-study mysteries and answers (of ``assignment``, or of both when None)."""
    if assignment is not None:
        assignment = check_choice(assignment, "assignment", INSTANCE_ASSIGNMENTS)
    for a in INSTANCE_ASSIGNMENTS:
        if assignment is None or a == assignment:
            _ACTIVE[a] = SELF_STUDY[a]
            _ANSWERS.pop(a, None)


def active_member(assignment: str) -> object:
    """The member the mysteries of ``assignment`` currently use."""
    return _ACTIVE[check_choice(assignment, "assignment", INSTANCE_ASSIGNMENTS)]


def use_answers(members: dict[str, object]) -> None:
    """Grade with ``members`` (assignment -> member of its family): their mysteries, and their answers for
    the checks that grade.  Only the grader knows a course's members (``dptutor.course.keys.use_answer_key``
    derives them from the course key); in a student's kernel this changes that kernel's feedback only."""
    chosen = _check_members(members)
    _ACTIVE.update(chosen)
    _ANSWERS.update(chosen)


def _check_members(members: object) -> dict[str, object]:
    if not isinstance(members, dict) or not all(a in INSTANCE_ASSIGNMENTS for a in members):
        raise TypeError(f"members must be a dict from assignments in {INSTANCE_ASSIGNMENTS} to members")
    for a, member in members.items():
        if member not in FAMILIES[a]:
            raise ValueError(f"members: {member!r} is not a member of the {a!r} family")
    return dict(members)


def answers_scope(members: dict[str, object]) -> contextlib.AbstractContextManager[None]:
    """:func:`use_answers` inside a ``with`` block, then restore the mysteries and answers used before.
    ``members`` is checked at once, not when the block starts."""
    return _scope(_check_members(members))


def answer_member(assignment: str) -> object:
    """The member whose answers a grading check of ``assignment`` uses.

    That is the course's member when a course key is in use (:func:`use_answers`), the book's public
    self-study member when the self-study mysteries are in use, and otherwise (a course's token, without
    its key) a ValueError: a course's answers are only in its private answer key.
    """
    assignment = check_choice(assignment, "assignment", INSTANCE_ASSIGNMENTS)
    if assignment in _ANSWERS:
        return _ANSWERS[assignment]
    if _ACTIVE[assignment] == SELF_STUDY[assignment]:
        return SELF_STUDY[assignment]
    raise ValueError(f"grading_seed: the answers of this course's {assignment!r} are only in its private answer key; "
                     "they are graded by your instructor (`python -m dptutor grade ... --course FOLDER`), so the "
                     "checks in this notebook give feedback only (call them without grading_seed=)")


@contextlib.contextmanager
def _scope(chosen: dict[str, object]) -> Iterator[None]:
    saved, saved_answers = dict(_ACTIVE), dict(_ANSWERS)
    _ACTIVE.update(chosen)
    _ANSWERS.update(chosen)
    try:
        yield
    finally:
        _ACTIVE.clear()
        _ACTIVE.update(saved)
        _ANSWERS.clear()
        _ANSWERS.update(saved_answers)


def audit_mystery(label: str, x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Mystery mechanism ``label`` of the ``audit`` assignment on the batch ``x`` (shape ``(trials, n)``).

    Every input is validated before the member is looked up, with the same rules for all members.
    """
    label = check_choice(label, "label", ("A", "B"))
    if isinstance(x, np.ndarray) and x.size > MAX_ELEMENTS:  # before any pass over it (a broadcast view costs nothing)
        raise ValueError(f"x has {x.size:,} elements, more than the limit of {MAX_ELEMENTS:,}")
    x = check_batch(x)
    if x.shape[1] < 1:
        raise ValueError(f"x must have at least one column (n >= 1), got shape {x.shape}")
    eps = check_real(epsilon, "epsilon", low=MYSTERY_EPSILON_RANGE[0], high=MYSTERY_EPSILON_RANGE[1])
    rng = check_rng(rng)
    member = _ACTIVE["audit"]
    out = np.empty(x.shape, dtype=np.float64)
    standard_laplace_fill(out, rng=rng)
    if member.one_sided(label):
        np.abs(out, out=out)
    np.multiply(out, member.scale(label, x.shape[1], eps), out=out)
    np.add(out, x, out=out)
    return out


def pair_mystery(data: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """The ``pair_audit`` mystery: ``size`` noisy releases of the count ``data``, one row of reals each.

    Every input is validated before the member is looked up, with the same rules for all members.
    """
    count = check_real(data, "data", low=-1e12, high=1e12)
    n = check_int(size, "size", minimum=0, maximum=_MAX_PAIR_SIZE)
    rng = check_rng(rng)
    member = _ACTIVE["pair_audit"]
    noise = rng.laplace(0.0, 1.0, (n, member.columns))
    return count + noise * member.scale
