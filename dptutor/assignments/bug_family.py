"""The family of buggy mechanisms of the ``bughunt`` assignment: three mechanisms, each correct or broken.

The three mechanisms follow three bugs of the book's lab of real bugs (:mod:`dptutor.buglab`), all
claiming :data:`HUNT_EPSILON`:

* ``histogram``: a Laplace histogram of integer counts (neighbours: one bin differs by 1);
* ``squares``: the sum of squares of values clipped to :data:`HUNT_BOUNDS`, with Laplace noise
  (neighbours: one value added or removed, so the sensitivity is ``max(|lo|, |hi|)^2``);
* ``selection``: the exponential mechanism on a vector of scores whose every entry moves by at most
  :data:`SCORE_SENSITIVITY` between neighbours.

Each is correct (``"none"``) or has one of the bugs :data:`HUNT_BUGS` allows it: ``ignores-epsilon`` (the
noise is calibrated to epsilon = 1 whatever is claimed), ``half-sensitivity`` (calibrated to half the
sensitivity), ``wrong-bound`` (the sum of squares' sensitivity computed from the lower bound twice).  A
:class:`BughuntMember` says which; :mod:`dptutor.assignments.instances` lists the members and selects
one per course.  :func:`hunt_release` runs a mechanism for a member; it validates every input with the
same rules whatever the member, and its generator calls do not depend on the member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_int, check_rng

__all__ = ["HUNT_EPSILON", "HUNT_BOUNDS", "SCORE_SENSITIVITY", "HUNT_LABELS", "HUNT_BUGS", "HUNT_MAX_ENTRIES",
           "BughuntMember", "hunt_release", "neighbour_problem"]

#: The privacy budget every mechanism of the hunt claims.
HUNT_EPSILON = 0.25
#: The clipping interval of the sum of squares (its correct sensitivity is ``max(|lo|, |hi|)^2`` = 9).
HUNT_BOUNDS = (1.0, 3.0)
#: How far each score of ``selection`` may move between neighbouring datasets.
SCORE_SENSITIVITY = 4.0
#: The three mechanisms, in the order of the questions.
HUNT_LABELS = ("histogram", "squares", "selection")
#: The bugs each mechanism may have, by mechanism (``none`` for a correct one).
HUNT_BUGS = {
    "histogram": ("none", "ignores-epsilon", "half-sensitivity"),
    "squares": ("none", "wrong-bound", "ignores-epsilon", "half-sensitivity"),
    "selection": ("none", "ignores-epsilon", "half-sensitivity"),
}
#: The most entries a dataset of the hunt may have (and the fewest: 1 value, 2 candidates).
HUNT_MAX_ENTRIES = 64
_MAX_SIZE = 1 << 22
_MAX_VALUE = 1e6


@dataclass(frozen=True)
class BughuntMember:
    """A member of the ``bughunt`` family: the bug of each mechanism (``"none"`` when it is correct)."""

    histogram: str
    squares: str
    selection: str

    def __post_init__(self) -> None:
        for label in HUNT_LABELS:
            check_choice(getattr(self, label), label, HUNT_BUGS[label])

    def bug(self, label: str) -> str:
        """The bug of mechanism ``label`` (``"none"``: correct)."""
        return getattr(self, check_choice(label, "label", HUNT_LABELS))

    def calibration(self, label: str) -> tuple[float, float]:
        """The (epsilon, sensitivity) mechanism ``label`` calibrates its noise to."""
        bug = self.bug(label)
        lo, hi = HUNT_BOUNDS
        true = {"histogram": 1.0, "squares": max(abs(lo), abs(hi)) ** 2, "selection": SCORE_SENSITIVITY}[label]
        eps = 1.0 if bug == "ignores-epsilon" else HUNT_EPSILON
        sens = {"half-sensitivity": true / 2, "wrong-bound": abs(lo) ** 2}.get(bug, true)
        return eps, sens

    def true_epsilon(self, label: str) -> float:
        """The privacy loss of mechanism ``label`` in real arithmetic (its calibration's epsilon times the
        ratio of the true sensitivity to the one it uses)."""
        eps, sens = self.calibration(label)
        return eps * BughuntMember("none", "none", "none").calibration(label)[1] / sens

    def verdict(self, label: str) -> str:
        """The right verdict on mechanism ``label``: ``"broken"`` or ``"no evidence"``."""
        return "no evidence" if self.bug(label) == "none" else "broken"


def _entries(data: Any, label: str) -> NDArray[np.float64]:
    values = check_float_array(data, "data", finite=True, ndim=1)
    low = 2 if label == "selection" else 1
    if not low <= values.size <= HUNT_MAX_ENTRIES:
        raise ValueError(f"data must have {low} to {HUNT_MAX_ENTRIES} entries, got {values.size}")
    if np.abs(values).max() > _MAX_VALUE:
        raise ValueError(f"data must lie in [-{_MAX_VALUE:g}, {_MAX_VALUE:g}]")
    if label == "histogram" and (values != np.round(values)).any():
        raise ValueError("data must be integer counts (one per bin) for the histogram")
    return values


def hunt_release(member: BughuntMember, label: str, data: Any, size: int, rng: Any) -> NDArray:
    """``size`` outputs of mechanism ``label`` of ``member`` on ``data`` (validated first, whatever the member).

    ``histogram``: shape ``(size, bins)`` of reals; ``squares``: shape ``(size,)`` of reals; ``selection``:
    shape ``(size,)`` of candidate indices.  The generator draws standard Laplace (or Gumbel) values of the
    same shape for every member; the member only scales them.
    """
    label = check_choice(label, "label", HUNT_LABELS)
    values = _entries(data, label)
    size = check_int(size, "size", minimum=0, maximum=_MAX_SIZE)
    rng = check_rng(rng)
    if not isinstance(member, BughuntMember):
        raise TypeError(f"member must be a BughuntMember, got {type(member).__name__}")
    eps, sens = member.calibration(label)
    if label == "histogram":
        return values + rng.laplace(0.0, 1.0, (size, values.size)) * (sens / eps)
    if label == "squares":
        lo, hi = HUNT_BOUNDS
        exact = float(np.sum(np.clip(values, lo, hi) ** 2))
        return exact + rng.laplace(0.0, 1.0, size) * (sens / eps)
    gumbel = rng.gumbel(0.0, 1.0, (size, values.size))
    return np.argmax(gumbel + values * (eps / (2.0 * sens)), axis=1).astype(np.int64)


def neighbour_problem(label: str, x: Any, x_prime: Any) -> str:
    """Why ``x`` and ``x_prime`` are not neighbouring datasets of mechanism ``label`` ("" if they are)."""
    label = check_choice(label, "label", HUNT_LABELS)
    try:
        a, b = _entries(x, label), _entries(x_prime, label)
    except (TypeError, ValueError) as exc:
        return f"not datasets of {label}: {exc}"
    if label == "squares":
        short, long = (a, b) if a.size < b.size else (b, a)
        if long.size != short.size + 1:
            return "for squares, neighbours differ by one value added or removed: one dataset has one entry more"
        if not any(np.array_equal(np.delete(long, i), short) for i in range(long.size)):
            return "for squares, the longer dataset must be the shorter one with one value added"
        return ""
    if a.size != b.size:
        return f"for {label}, neighbours have the same number of entries"
    diff = np.abs(a - b)
    if label == "histogram" and diff.sum() != 1:
        return "for histogram, neighbours differ by 1 in exactly one bin (one person added or removed)"
    if label == "selection" and diff.max() > SCORE_SENSITIVITY:
        return f"for selection, each score may move by at most {SCORE_SENSITIVITY:g} between neighbours"
    return ""
