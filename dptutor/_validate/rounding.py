"""Inputs on the safe side of their exact value (re-exported by ``dptutor._validate``).

A privacy parameter given as a ``Fraction``, a long double or an int beyond 2**53 has an exact value that the
nearest double (what ``float`` gives) may undershoot or overshoot.  A bound computed from the nearest double can
then fall on the optimistic side of the bound at the exact input.  :func:`toward` moves the checked double one
step to the safe side when it lies on the wrong one; a plain double is returned as it is.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["exact_rational", "toward"]


def exact_rational(value: object) -> Fraction | None:
    """The exact rational value of an int, float, ``Fraction``, ``Decimal`` or numpy scalar (None if it has none,
    or is not finite)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return Fraction(int(value))
    try:
        numerator, denominator = value.as_integer_ratio()  # type: ignore[attr-defined]
        return Fraction(numerator, denominator)
    except (AttributeError, TypeError, ValueError, OverflowError, ArithmeticError):
        return None


def toward(value: object, checked: float, name: str, *, up: bool) -> float:
    """``checked`` (the double a check made of ``value``) moved one step up (``up``) or down where it lies below
    (or above) the exact value of ``value``: the smallest double at least it, or the largest at most it.

    A finite ``value`` that has no such finite double (beyond the largest double) is a ``ValueError`` naming
    ``name``.  Bounds a check enforced stay enforced: a double bound at or beyond the exact value is never
    crossed by the step.
    """
    exact = exact_rational(value)
    if exact is None or not math.isfinite(checked) or Fraction(checked) == exact:
        return checked
    if up and Fraction(checked) < exact:
        moved = math.nextafter(checked, math.inf)
    elif not up and Fraction(checked) > exact:
        moved = math.nextafter(checked, -math.inf)
    else:
        return checked
    if not math.isfinite(moved):
        side = "above the largest" if up else "below the smallest"
        raise ValueError(f"{name} must be representable as a float, got a value {side} double")
    return moved
