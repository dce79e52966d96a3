"""The graders' replays of a student's evidence: :class:`ReplayTooLong`, and the deadline that raises it.

The ``audit`` and ``bughunt`` checks re-run a student's audit with its recorded settings and seed, each
within a time limit: the mechanism they replay is wrapped to call :func:`check_deadline` before each
chunk of trials, so a replay that would run too long stops within one chunk and the check says so.
"""

from __future__ import annotations

import time

__all__ = ["ReplayTooLong"]
# check_deadline serves the graders' wrappers of a replayed mechanism (audit, bughunt), hence outside __all__:
# its whole point is to raise ReplayTooLong, a BaseException, for a deadline that has passed.


class ReplayTooLong(BaseException):  # not an Exception: the audit's wrapping of mechanism errors lets it through
    """A replay of a student's evidence ran past its deadline (a BaseException, so that the audit does not
    report it as the mechanism's own error)."""


def check_deadline(deadline: float) -> None:
    """Raise :class:`ReplayTooLong` once ``time.monotonic()`` has passed ``deadline``.

    Parameters
    ----------
    deadline : float
        A time of ``time.monotonic()`` (the callers' own: not checked).

    Returns
    -------
    None

    Raises
    ------
    ReplayTooLong
        If ``deadline`` has passed.
    """
    if time.monotonic() > deadline:
        raise ReplayTooLong
