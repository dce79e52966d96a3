"""Exact comparisons of a lazily drawn uniform real with ``exp(-gamma)``, and exact integer tables of such bounds.

Every decision of the exact samplers of :mod:`dptutor.exact` is "is ``U`` below ``exp(-gamma)``?" for a
uniform real ``U`` in [0, 1) and a rational ``gamma >= 0`` (the event has probability ``exp(-gamma)``), or a
function of such comparisons.  ``U`` is an infinite string of fair bits, drawn lazily: its first ``b`` bits,
the integer ``P``, place it in ``[P / 2^b, (P + 1) / 2^b)``.  If integers ``lo <= exp(-gamma) 2^b <= hi`` are
proven and ``P + 1 <= lo``, then ``U < exp(-gamma)`` whatever the later bits are; if ``P >= hi``, then
``U >= exp(-gamma)``.  Otherwise more bits are drawn and the bounds are recomputed with more bits
(:class:`LazyUniform`); this ends with probability 1, since ``exp(-gamma)`` is irrational for rational
``gamma > 0``.  The answer is the value of the event for the whole infinite string, so its probability is
exactly ``exp(-gamma)``: how many bits are looked at never changes the answer.

The bounds are integers computed with integer arithmetic only (:func:`exp_neg_bounds`, and the tables
:func:`magnitude_table` and :func:`power_bounds` built from it by floor and ceiling products); no
floating-point function takes part in them.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "MAX_SCALE_NUMERATOR",
    "PREFIX_BITS",
    "exp_neg_bounds",
    "power_bounds",
    "LazyUniform",
    "geometric_exact",
    "MagnitudeTable",
    "magnitude_table",
    "propose_magnitudes",
    "certify_magnitudes",
    "exact_magnitudes",
]

#: The numerator ``s`` of the scale ``t = s / d`` must stay below this (2**53), so that every
#: integer the vectorised sampler forms (``s k`` in step 1, ``U + s V`` in step 3) fits in int64.
MAX_SCALE_NUMERATOR: int = 1 << 53
#: Bits of a uniform real that one 64-bit draw of the vectorised samplers provides.
PREFIX_BITS: int = 53
#: Fraction bits of the magnitude tables (values ``exp(-k / t) 2^62 <= 2^62`` fit int64 with room for sums).
_FIX: int = 62
_LIMB: int = 31
_LIMB_MASK: int = (1 << _LIMB) - 1


def exp_neg_bounds(num: int, den: int, bits: int) -> tuple[int, int]:
    """Integers ``lo <= exp(-num / den) 2^bits <= hi``, a few units apart (``num >= 0``, ``den >= 1``).

    ``exp(-gamma) = exp(-x)^n`` with ``n = ceil(gamma)`` and ``x = gamma / n`` in (0, 1].  The series
    ``sum_k (-x)^k / k!`` alternates with decreasing terms, so ``exp(-x)`` is within the next term of each
    partial sum.  Each term is bounded from below and above in fixed point with ``w`` fractional bits
    (floor and ceiling divisions); the sum stops when a term's upper bound is at most ``2^-w``.  The
    ``n``-th powers of the two bounds, floored and ceiled to ``bits`` bits, bound ``exp(-gamma)``.

    Parameters
    ----------
    num, den : int
        The exponent ``gamma = num / den``, ``num >= 0`` and ``den >= 1``.
    bits : int
        The fixed-point precision of the answer, ``>= 0``.

    Returns
    -------
    tuple of int
        ``(lo, hi)`` with ``lo <= exp(-num / den) 2^bits <= hi``.
    """
    if num == 0:
        return 1 << bits, 1 << bits
    n = -(-num // den)
    dn = den * n
    w = bits + n.bit_length() + 16
    one = 1 << w
    term_lo = term_hi = s_lo = s_hi = one
    k = 0
    while term_hi > 1:
        k += 1
        term_lo = term_lo * num // (dn * k)
        term_hi = -(-term_hi * num // (dn * k))
        if k % 2:
            s_lo, s_hi = s_lo - term_hi, s_hi - term_lo
        else:
            s_lo, s_hi = s_lo + term_lo, s_hi + term_hi
    lo, hi = max(s_lo - 1, 0), s_hi + 1  # the remainder after term k is at most term k <= 2^-w
    shift = w * n - bits
    return (lo**n) >> shift, -((-(hi**n)) >> shift)


def power_bounds(num: int, den: int, count: int, bits: int) -> tuple[list[int], list[int]]:
    """Integer bounds ``lo[i] <= exp(-i num / den) 2^bits <= hi[i]`` for ``i = 0, ..., count - 1``.

    Products are taken in fixed point with ``w = bits + 64 + log2(count)`` bits, the lower bounds floored
    and the upper bounds ceiled at every step, so by induction each pair brackets the true value; the guard
    bits keep the pairs a few units apart at ``bits`` bits.

    Parameters
    ----------
    num, den : int
        The step ``num / den >= 0`` of the exponent (``den >= 1``).
    count : int
        Number of entries, ``>= 0``.
    bits : int
        Fixed-point precision of the entries.

    Returns
    -------
    tuple of list of int
        The lists ``lo`` and ``hi``.
    """
    guard = 64 + count.bit_length()
    w = bits + guard
    c_lo, c_hi = exp_neg_bounds(num, den, w)
    e_lo = e_hi = 1 << w
    lo: list[int] = []
    hi: list[int] = []
    for _ in range(count):
        lo.append(e_lo >> guard)
        hi.append(-((-e_hi) >> guard))
        e_lo = (e_lo * c_lo) >> w
        e_hi = -((-(e_hi * c_hi)) >> w)
    return lo, hi


class LazyUniform:
    """A uniform real ``U`` in [0, 1) of which the first ``bits`` bits (the integer ``prefix``) are drawn.

    :meth:`below_exp_neg` decides ``U < exp(-num / den)`` exactly, drawing 64 more bits at a time
    while the bits so far do not settle it (see the module docstring).

    Parameters
    ----------
    prefix : int
        The bits drawn so far, as an integer in ``[0, 2^bits)``.
    bits : int
        How many bits have been drawn.
    rng : numpy.random.Generator
        The source of further bits (``rng.integers`` only).
    """

    def __init__(self, prefix: int, bits: int, rng: np.random.Generator) -> None:
        self.prefix, self.bits, self.rng = prefix, bits, rng

    def extend(self) -> None:
        """Draw 64 more bits of ``U``."""
        self.prefix = (self.prefix << 64) | int(self.rng.integers(0, 1 << 64, dtype=np.uint64))
        self.bits += 64

    def below_exp_neg(self, num: int, den: int) -> bool:
        """Whether ``U < exp(-num / den)``, exactly (``num >= 0``, ``den >= 1``)."""
        while True:
            lo, hi = exp_neg_bounds(num, den, self.bits)
            if self.prefix + 1 <= lo:  # U < (prefix + 1) / 2^bits <= exp(-gamma)
                return True
            if self.prefix >= hi:  # U >= prefix / 2^bits >= exp(-gamma)
                return False
            self.extend()


def geometric_exact(u: LazyUniform, s: int, d: int) -> int:
    """``X = floor(t E)`` with ``E = -ln U`` and ``t = s / d``: the ``x`` with ``exp(-(x+1)/t) < U <= exp(-x/t)``.

    Exact: every step is :meth:`LazyUniform.below_exp_neg`.  A float estimate only picks where the
    search starts (after enough bits that it is off by at most a step or two).

    Parameters
    ----------
    u : LazyUniform
        The uniform real (more of its bits are drawn when needed).
    s, d : int
        The scale ``t = s / d``, both ``>= 1``.

    Returns
    -------
    int
        The magnitude ``X >= 0``.
    """
    while u.prefix * d <= 2 * s:  # then t / P < 1/2: the bits so far pin t E down to within 1/2
        u.extend()
    guess = (s / d) * (u.bits * math.log(2.0) - math.log(u.prefix))
    x = max(0, min(int(guess), 1 << 62) - 1) if math.isfinite(guess) else 0
    while x > 0 and not u.below_exp_neg(x * d, s):  # U >= exp(-x / t): X < x
        x -= 1
    while u.below_exp_neg((x + 1) * d, s):  # U < exp(-(x + 1) / t): X > x
        x += 1
    return x


# ---------------------------------------------------------------------------------------------
# exact tables of exp(-k / t) and the certified magnitude of the fast samplers
# ---------------------------------------------------------------------------------------------
#
# The fast samplers read the magnitude X = floor(t E), E = -ln U, off the first 53 bits v of U: a float
# proposes x (floor(-t ln(v / 2^53))), and integers decide.  X = x holds for every U with those bits as
# soon as exp(-(x + 1) / t) 2^53 <= v and v + 1 <= exp(-x / t) 2^53, which the integer bounds of a
# MagnitudeTable check.  A lane whose proposal fails the check (an open cell, or a wrong float) is settled
# by geometric_exact from the same bits.  So the floats choose only which lanes take the slow exact route.

#: Largest table held entry by entry (larger tables are two-level: one product per bound).
_MAX_FLAT: int = 1 << 19


def _mul_floor(a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
    """Elementwise ``m`` with ``m <= a b / 2^62 < m + 2`` for integers ``0 <= a, b <= 2^62``, in int64.

    With ``a = a1 2^31 + a0`` (``a0 < 2^31``, so ``a1 <= 2^31``) and ``b`` likewise,
    ``a b / 2^62 = a1 b1 + mid / 2^31 + a0 b0 / 2^62`` with ``mid = a1 b0 + a0 b1 < 2^63``; the last term is
    below 1 and dropping the fraction of ``mid / 2^31`` loses less than 1.
    """
    a1, a0 = a >> _LIMB, a & _LIMB_MASK
    b1, b0 = b >> _LIMB, b & _LIMB_MASK
    mid = a1 * b0
    mid += a0 * b1
    mid >>= _LIMB
    mid += a1 * b1
    return mid


class MagnitudeTable:
    """Integer bounds ``lo(k) <= exp(-k / t) 2^62 <= hi(k)`` for ``0 <= k <= kcap`` (``t = s / d``).

    ``kcap = floor(36.75 t) + 2`` covers every magnitude a nonzero 53-bit prefix can have
    (``v >= 1`` gives ``X <= 53 ln(2) t``).  Small tables hold both bounds per entry; larger ones hold
    ``exp(-j 2^b / t)`` and ``exp(-i / t)`` (``i < 2^b``) and multiply (:func:`_mul_floor`, 2 units of slack).

    Parameters
    ----------
    s, d : int
        The scale ``t = s / d``, both ``>= 1``.
    """

    def __init__(self, s: int, d: int) -> None:
        self.kcap = (3675 * s) // (100 * d) + 2
        self.shift = max(0, ((self.kcap + 1).bit_length() + 1) // 2)
        low_lo, low_hi = power_bounds(d, s, 1 << self.shift, _FIX)
        high_lo, high_hi = power_bounds(d << self.shift, s, (self.kcap >> self.shift) + 1, _FIX)
        self.low = (np.array(low_lo, dtype=np.int64), np.array(low_hi, dtype=np.int64))
        self.high = (np.array(high_lo, dtype=np.int64), np.array(high_hi, dtype=np.int64))
        self.flat: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
        if self.kcap < _MAX_FLAT:
            k = np.arange(self.kcap + 1, dtype=np.int64)
            self.flat = (self._product(k, 0), self._product(k, 1) + 2)

    def _product(self, k: NDArray[np.int64], side: int) -> NDArray[np.int64]:
        return _mul_floor(self.high[side][k >> self.shift], self.low[side][k & ((1 << self.shift) - 1)])

    def bounds(self, k: NDArray[np.int64], side: int) -> NDArray[np.int64]:
        """The lower (``side = 0``) or upper (``side = 1``) bounds of ``exp(-k / t) 2^62``, ``0 <= k <= kcap``.

        Parameters
        ----------
        k : numpy.ndarray of int64
            Exponents in ``[0, kcap]``.
        side : {0, 1}
            Which bound.

        Returns
        -------
        numpy.ndarray of int64
            The bounds, elementwise.
        """
        if self.flat is not None:
            return self.flat[side][k]
        out = self._product(k, side)
        if side:
            out += 2
        return out


@functools.lru_cache(maxsize=16)
def magnitude_table(s: int, d: int) -> MagnitudeTable:
    """The (cached) :class:`MagnitudeTable` of the scale ``t = s / d``.

    Parameters
    ----------
    s, d : int
        The scale ``t = s / d``, both ``>= 1``.

    Returns
    -------
    MagnitudeTable
        The table.
    """
    return MagnitudeTable(s, d)


def propose_magnitudes(v: NDArray[np.int64], t: float) -> NDArray[np.int64]:
    """A float proposal ``floor(-t ln(max(v, 1) / 2^53))`` for the magnitude of each 53-bit prefix ``v``.

    Only a candidate: :func:`exact_magnitudes` checks every proposal with integers.

    Parameters
    ----------
    v : numpy.ndarray of int64
        Prefixes in ``[0, 2^53)``.
    t : float
        The scale.

    Returns
    -------
    numpy.ndarray of int64
        The proposals (any values; not trusted).
    """
    vf = v.astype(np.float64)
    np.maximum(vf, 1.0, out=vf)
    vf *= 2.0**-PREFIX_BITS  # exact: a power of two
    np.log(vf, out=vf)
    vf *= -t
    np.floor(vf, out=vf)
    with np.errstate(invalid="ignore"):  # a wrong float (NaN, huge) casts to garbage, which is never certified
        return vf.astype(np.int64)


def certify_magnitudes(v: NDArray[np.int64], x: NDArray[np.int64], table: MagnitudeTable) -> NDArray[np.bool_]:
    """Whether the integer bounds prove ``X = x`` for every ``U`` with 53-bit prefix ``v``, elementwise.

    ``(v + 1) 2^9 <= lo(x)`` gives ``U < (v + 1) / 2^53 <= exp(-x / t)``; ``v 2^9 >= hi(x + 1)`` gives
    ``U >= v / 2^53 >= exp(-(x + 1) / t)`` (and not equal: that number is irrational).  Proposals outside
    ``[0, kcap)`` are not certified.

    Parameters
    ----------
    v : numpy.ndarray of int64
        Prefixes in ``[0, 2^53)``.
    x : numpy.ndarray of int64
        Proposed magnitudes.
    table : MagnitudeTable
        The bounds for the scale.

    Returns
    -------
    numpy.ndarray of bool
        True where ``x`` is proven.
    """
    inside = (x >= 0) & (x < table.kcap)
    k = np.where(inside, x, 0)
    shift = _FIX - PREFIX_BITS
    ok = ((v + 1) << shift) <= table.bounds(k, 0)
    k += 1
    ok &= (v << shift) >= table.bounds(k, 1)
    ok &= inside
    return ok


def exact_magnitudes(v: NDArray[np.int64], s: int, d: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``X = floor(t E)``, ``E = -ln U``, ``t = s / d``, for uniform reals ``U`` with 53-bit prefixes ``v``.

    A float proposes each magnitude (:func:`propose_magnitudes`), integers check it
    (:func:`certify_magnitudes`), and each lane whose proposal is not proven is settled by
    :func:`geometric_exact` from the same prefix, in lane order (drawing more bits of ``U`` from ``rng``
    only where 53 bits do not determine ``X``).  The result is exact whatever the float log returns.

    Parameters
    ----------
    v : numpy.ndarray of int64
        Prefixes in ``[0, 2^53)``.
    s, d : int
        The scale ``t = s / d``, ``1 <= t``, ``s < 2^53``.
    rng : numpy.random.Generator
        Source of further bits.

    Returns
    -------
    numpy.ndarray of int64
        The magnitudes.
    """
    x = propose_magnitudes(v, s / d)
    ok = certify_magnitudes(v, x, magnitude_table(s, d))
    for i in np.flatnonzero(~ok):  # rare unless the float log is poor: exact, in Python integers
        x[i] = geometric_exact(LazyUniform(int(v[i]), PREFIX_BITS, rng), s, d)
    return x
