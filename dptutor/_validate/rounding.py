"""Inputs on the safe side of their exact value (re-exported by ``dptutor._validate``).

A privacy parameter given as a ``Fraction``, a long double or an int beyond 2**53 has an exact value that the
nearest double (what ``float`` gives) may undershoot or overshoot.  A bound computed from the nearest double can
then fall on the optimistic side of the bound at the exact input.  :func:`toward` moves the checked double one
step to the safe side when it lies on the wrong one; a plain double is returned as it is.  ``checked_toward`` is
the check of ``dptutor._validate`` and that step in one call.

``round_up`` and ``round_down`` (the smallest double at least, or the largest at most, an exact rational) are the
core of ``dptutor.renyi.round_up`` and ``dptutor.renyi.round_down``, here so that ``toward`` can use them too;
``add_rounded`` and ``mul_rounded`` are the sum and product rounded up (or down) that accounting, composition and
the epsilon module share.
"""

from __future__ import annotations

import math
import numbers
import operator
from fractions import Fraction
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["exact_rational", "toward", "toward_positive", "checked_toward", "round_up", "round_down", "add_rounded",
           "mul_rounded"]

_MAX_FLOAT = Fraction(1.7976931348623157e308)


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
        return checked  # -0.0 stays -0.0
    moved = round_up(exact) if up else round_down(exact)
    if not math.isfinite(moved):
        side = "above the largest" if up else "below the smallest"
        raise ValueError(f"{name} must be representable as a float, got a value {side} double")
    return moved


def toward_positive(value: object, checked: float, name: str, *, up: bool) -> float:
    """``toward`` for a ``checked`` > 0 that must stay positive: a ``value`` whose largest double at most it is 0.0
    (a positive value below the smallest positive double, rounded down) is a ``ValueError`` naming ``name``."""
    moved = toward(value, checked, name, up=up)
    if moved == 0.0 and checked != 0.0:
        raise ValueError(f"{name} must be representable as a positive float, got a {type(value).__name__} below the "
                         "smallest positive double")
    return moved


def checked_toward(value: object, name: str, check: Callable[..., float], *, up: bool, positive: bool = False,
                   **check_kwargs: Any) -> float:
    """``value`` checked by ``check``, then as the double on the safe side of its exact value: one call for
    ``toward(value, check(value, name, **check_kwargs), name, up=up)`` (``toward_positive`` with ``positive``).

    Parameters
    ----------
    value : object
        The argument as the caller got it: a float, an int (beyond 2**53 too), a ``Fraction``, a numpy scalar
        (a long double too), ...
    name : str
        The parameter's name, which every error message starts with.
    check : callable
        A check of ``dptutor._validate`` called as ``check(value, name, **check_kwargs)`` and returning a float:
        ``check_real``, ``check_positive`` or ``check_probability``.
    up : bool
        True for the smallest double at least the exact value, False for the largest double at most it.
    positive : bool, optional
        If True, a nonzero checked value whose double on the safe side is 0.0 (a positive value below the
        smallest positive double, rounded down) is a ``ValueError``, as in ``toward_positive``; if False (the
        default), it is returned as 0.0, as in ``toward``.
    **check_kwargs
        The keyword arguments of ``check``, such as ``low=0.0``, ``high=1.0``, ``allow_inf=True`` or
        ``closed=True``.

    Returns
    -------
    float
        The checked double, moved one step up (or down) where it lies below (or above) the exact value; a
        plain double (and an infinity ``check`` allowed) as ``check`` returned it.

    Raises
    ------
    TypeError, ValueError
        What ``check`` raises for a bad ``value``, naming ``name``; a ``ValueError`` naming it, too, for a
        value with no finite double on the safe side (or, with ``positive``, no positive one).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from dptutor._validate import check_positive, check_real
    >>> checked_toward(Fraction(1, 3), "sigma", check_positive, up=True)  # the nearest double is below 1/3
    0.33333333333333337
    >>> checked_toward(Fraction(1, 3), "epsilon", check_real, up=False, low=0.0)
    0.3333333333333333
    """
    checked = check(value, name, **check_kwargs)
    return (toward_positive if positive else toward)(value, checked, name, up=up)


def round_up(exact: Fraction) -> float:
    """The smallest double at least ``exact`` (an int, ``Fraction``, other rational, float or numpy number, taken at
    its exact value, a long double included): ``0.0`` only for 0, ``inf`` above the largest double, and the most
    negative double below it.  A bool or another type is a ``TypeError``, a NaN or an infinity a ``ValueError``.
    ``dptutor.renyi.round_up`` is its public face."""
    if type(exact) is not Fraction and type(exact) is not int:  # the checks below cost more than the rest
        exact = _as_fraction(exact)
    if exact == 0:
        return 0.0
    if exact > _MAX_FLOAT:
        return math.inf
    if exact < -_MAX_FLOAT:
        return -1.7976931348623157e308
    v = float(exact)  # correctly rounded to nearest (0.0 below half the smallest subnormal)
    return math.nextafter(v, math.inf) if Fraction(v) < exact else v


def round_down(exact: Fraction) -> float:
    """The largest double at most ``exact``: ``round_up``'s mirror (``0.0``, never ``-0.0``, for 0; ``-inf`` below
    the most negative double, the largest double above it).  ``dptutor.renyi.round_down`` is its public face."""
    if type(exact) is not Fraction and type(exact) is not int:
        exact = _as_fraction(exact)
    return 0.0 - round_up(-exact)  # 0.0 - x, not -x: 0 gives 0.0, not -0.0


def _as_fraction(exact: object) -> Fraction:
    """``exact`` (a rational number or a finite float, not a bool) as a Fraction, or an error naming it.  A numpy
    float is taken at its exact value (``float`` rounded a long double to the nearest double first)."""
    if isinstance(exact, (bool, np.bool_)) or not isinstance(exact, (numbers.Rational, float, np.floating)):
        raise TypeError(f"exact must be a rational number (an int or a fractions.Fraction) or a float, "
                        f"got {type(exact).__name__}")
    if isinstance(exact, numbers.Rational):
        return Fraction(int(exact.numerator), int(exact.denominator))
    if not math.isfinite(exact):
        raise ValueError(f"exact must be finite, got {float(exact)}")
    return Fraction(*exact.as_integer_ratio())


def add_rounded(a: Any, b: Any, up: bool = True) -> Any:
    """``a + b`` rounded up (or down): the smallest double at least (the largest at most) the exact sum.

    Two scalars (an int beyond 2**53 included) are added as ``Fraction``s and give a float; an ``inf`` beyond the
    largest double when ``up``, the largest double when not.  Anything else is a float64 array (broadcast): the
    nearest sum, moved one double only where it fell on the wrong side (Knuth's TwoSum gives its rounding error
    exactly; an overflow is moved anyway).  An infinite operand gives the infinite sum, a NaN a NaN.
    """
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        return _scalar_rounded(operator.add, a, b, up)
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        s = x + y
        bb = s - x
        err = (x - (s - bb)) + (y - bb)
    wrong = (err > 0) if up else (err < 0)
    wrong |= ~np.isfinite(err) & np.isfinite(x) & np.isfinite(y)
    return np.where(wrong, np.nextafter(s, np.inf if up else -np.inf), s)


def mul_rounded(a: Any, b: Any, up: bool = True) -> Any:
    """``a * b`` rounded up (or down), as ``add_rounded``; 0.0 where either factor is 0 (an infinite other one
    included), an infinity where either is infinite.

    For arrays, Dekker's TwoProduct gives the nearest product's error exactly, except near the ends of the double
    range (a product below 1e-280 or above 1e290, or an overflow), where that element is done in ``Fraction``s.
    """
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        return _scalar_rounded(operator.mul, a, b, up)
    x, y = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        p = x * y
        ca, cb = 134217729.0 * x, 134217729.0 * y
        ah, bh = ca - (ca - x), cb - (cb - y)
        al, bl = x - ah, y - bh
        err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    out = np.where((err > 0) if up else (err < 0), np.nextafter(p, np.inf if up else -np.inf), p)
    zero, infinite = (x == 0) | (y == 0), ~(np.isfinite(x) & np.isfinite(y))
    out = np.where(zero, 0.0, out)
    unsure = (~np.isfinite(err) | (np.abs(p) < 1e-280) | (np.abs(p) > 1e290)) & ~zero & ~infinite
    for i in np.flatnonzero(unsure):
        out.flat[i] = _scalar_rounded(operator.mul, float(x.flat[i]), float(y.flat[i]), up)
    return out


def _scalar_rounded(op: Any, a: Any, b: Any, up: bool) -> float:
    """``op(a, b)`` (+ or *) on the exact values of two real scalars, rounded up or down (see ``mul_rounded``)."""
    ea, eb = exact_rational(a), exact_rational(b)
    if op is operator.mul and (ea == 0 or eb == 0):
        return 0.0
    if ea is None or eb is None:  # an infinity or a NaN: what the doubles give (a huge int taken outward)
        fa, fb = (float(v) if e is None else (round_up(e) if up else round_down(e)) for v, e in ((a, ea), (b, eb)))
        with np.errstate(invalid="ignore"):
            return float(op(np.float64(fa), np.float64(fb)))
    exact = op(ea, eb)
    return round_up(exact) if up else round_down(exact)
