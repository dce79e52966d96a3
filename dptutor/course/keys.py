"""Course keys: the instructor's half of the course instances (:mod:`dptutor.assignments.instances`).

The instructor's secret gives a course key, ``HMAC-SHA256(secret, "dptutor course instance v1")``,
and the course key one *token* per assignment (``dptutor-course-1:<assignment>:<32 hex digits of
HMAC-SHA256(course key, assignment)>``).  The tokens go into the course's student notebooks, which
select their mysteries by the public rule :func:`~dptutor.assignments.instances.member_of`; the
course key stays in the course folder's ``private/`` part and selects the answers when grading
(:func:`use_answer_key`, :func:`course_scope`).  A token is a one-way HMAC of the key, so it reveals
neither the secret, the key nor the other assignment's member (the threat model:
:mod:`dptutor.assignments.instances`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re

from dptutor._validate import check_str
from dptutor.assignments.instances import INSTANCE_ASSIGNMENTS, TOKEN_PREFIX, answers_scope, member_of, use_answers

__all__ = [
    "MIN_SECRET_LENGTH", "COURSE_KEY_LENGTH", "course_key", "course_tokens", "tokens_of_key", "members_of_key",
    "use_answer_key", "course_scope",
]

#: The shortest secret ``course_tokens`` accepts.
MIN_SECRET_LENGTH = 12
#: Hex digits in a course key (HMAC-SHA256 of the secret).
COURSE_KEY_LENGTH = 64
_KEY = re.compile(r"^[0-9a-f]{64}$")
_COURSE_KEY_LABEL = b"dptutor course instance v1"


def course_key(secret: str) -> str:
    """The course key of ``secret`` (64 hex digits): ``HMAC-SHA256(secret, "dptutor course instance v1")``.

    It selects the course's answers when grading (:func:`use_answer_key`), so it stays in the course
    folder's ``private/`` part; the student notebooks hold only the tokens derived from it.
    """
    secret = check_str(secret, "secret")
    if len(secret.strip()) < MIN_SECRET_LENGTH:
        raise ValueError(f"secret must have at least {MIN_SECRET_LENGTH} characters (not counting spaces at "
                         "the ends); use a long random phrase")
    return hmac.new(secret.encode("utf-8"), _COURSE_KEY_LABEL, hashlib.sha256).hexdigest()


def _check_key(key: object) -> str:
    key = check_str(key, "key").strip()
    if _KEY.match(key) is None:
        raise ValueError(f"key must be a course key of {COURSE_KEY_LENGTH} lower-case hex digits (the `key` line of "
                         "the course folder's private/answer-key.toml), got a string that is not")
    return key


def tokens_of_key(key: str) -> dict[str, str]:
    """The token of each assignment in :data:`INSTANCE_ASSIGNMENTS` for the course key ``key``."""
    raw = bytes.fromhex(_check_key(key))
    return {a: f"{TOKEN_PREFIX}:{a}:{hmac.new(raw, a.encode('ascii'), hashlib.sha256).hexdigest()[:32]}"
            for a in INSTANCE_ASSIGNMENTS}


def course_tokens(secret: str) -> dict[str, str]:
    """The token of each assignment in :data:`INSTANCE_ASSIGNMENTS` for the course of ``secret``."""
    return tokens_of_key(course_key(secret))


def members_of_key(key: str) -> dict[str, object]:
    """The member of each assignment in :data:`INSTANCE_ASSIGNMENTS` for the course key ``key``."""
    return {a: member_of(t)[1] for a, t in tokens_of_key(key).items()}


def use_answer_key(key: str) -> None:
    """Grade with the course of the course key ``key``: its mysteries, and its answers for the checks that
    grade (the grader's process does this; a Gradescope autograder's hidden tests too)."""
    use_answers(members_of_key(key))


def course_scope(key: str) -> contextlib.AbstractContextManager[None]:
    """Grade with the course of the course key ``key`` inside a ``with`` block (see :func:`use_answer_key`),
    then restore the mysteries and answers used before.  The key is checked at once, not when the
    block starts."""
    return answers_scope(members_of_key(key))
