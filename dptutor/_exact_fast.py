"""The fast exact samplers: discrete Laplace by inversion, discrete Gaussian by inversion and lazy bits.

Both read uniform reals a few bits at a time (:mod:`dptutor._lazy_bits`).  The discrete Laplace magnitude
``X = floor(t E)``, ``E = -ln U``, has ``P(X >= x) = P(U < exp(-x / t)) = exp(-x / t)``; a float proposes it
from 53 bits of ``U`` and integer bounds prove it (:func:`dptutor._lazy_bits.exact_magnitudes`).  The
discrete Gaussian (Canonne, Kamath and Steinke 2020, Algorithm 3) keeps such a proposal ``Y`` with
probability ``exp(-gamma(|Y|))``; its test compares a second uniform ``U'`` with integer bounds of
``exp(-gamma)`` from an exact table (:func:`gauss_table`), first on 10 bits, then on 63, then exactly.
Every branch is decided by integers, so the draws are exact and do not depend on the float library.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dptutor._lazy_bits import PREFIX_BITS, LazyUniform, exact_magnitudes, exp_neg_bounds

__all__ = [
    "MAX_FAST_SCALE",
    "fast_laplace_ok",
    "sample_laplace_fast",
    "GaussTable",
    "gauss_table",
    "sample_gaussian_fast",
    "gauss_test_exact",
]

#: The fast discrete Laplace serves scales 1 <= t <= 2^24.
MAX_FAST_SCALE: int = 1 << 24
#: Largest acceptance table of the fast discrete Gaussian (entries), and the int64 bound on its integers.
_MAX_TABLE: int = 1 << 20
_MAX_FAST_INT: int = 1 << 53
#: Lanes per round of the fast samplers (their arrays stay in the CPU cache).
_CHUNK: int = 1 << 16
#: Bits of the test's uniform ``U'`` that the first stage of the fast discrete Gaussian looks at.
_TEST_BITS: int = 10
#: The first stage's bounds are loosened by a relative 2^-_STAGE_ONE_MARGIN_BITS (see gauss_table).
_STAGE_ONE_MARGIN_BITS: int = 36
#: Sentinel threshold: the proposal (negative, 0) is never kept and never open.
_NEVER: int = -(1 << 62)


def fast_laplace_ok(s: int, d: int) -> bool:
    """Whether the scale ``t = s / d`` is in the fast path's range ``1 <= t <= 2^24``.

    Parameters
    ----------
    s, d : int
        The scale ``t = s / d`` in lowest terms.

    Returns
    -------
    bool
        True in the fast range.
    """
    return d <= s <= MAX_FAST_SCALE * d


def _draw_signed_prefixes(m: int, rng: np.random.Generator) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``m`` 53-bit prefixes ``v`` of uniform reals and ``m`` independent fair sign bits, from one draw."""
    w = rng.integers(0, 1 << (PREFIX_BITS + 1), size=m, dtype=np.int64)
    return w >> 1, w & 1


def _emit_signed(out: NDArray[np.int64], filled: int, x: NDArray[np.int64], sign: NDArray[np.int64],
                 keep: NDArray[np.bool_]) -> int:
    """Negate the magnitudes ``x`` whose ``sign`` bit is set (in place), copy the kept ones into ``out``
    from ``filled`` on, as many as fit; return the new fill level."""
    x ^= -sign
    x += sign  # x -> -x where the sign bit is set
    y = np.compress(keep, x)
    take = min(out.size - filled, y.size)
    out[filled : filled + take] = y[:take]
    return filled + take


def sample_laplace_fast(s: int, d: int, total: int, rng: np.random.Generator, accept: float) -> NDArray[np.int64]:
    """Discrete Laplace of scale ``t = s / d`` (``1 <= t <= 2^24``) by exact inversion.

    A fair sign and ``X = floor(t E)`` (:func:`dptutor._lazy_bits.exact_magnitudes`), the outcome
    (negative, 0) rejected so that 0 is not counted twice.  Chunks of at most 2^16 lanes keep the arrays
    in cache.

    Parameters
    ----------
    s, d : int
        The scale in lowest terms, in the fast range (:func:`fast_laplace_ok`).
    total : int
        Number of draws.
    rng : numpy.random.Generator
        The source of bits (``rng.integers`` only).
    accept : float
        ``P(not (negative, 0))``, which only sizes the chunks.

    Returns
    -------
    numpy.ndarray of int64
        ``total`` draws.
    """
    out = np.empty(total, dtype=np.int64)
    filled = 0
    while filled < total:
        m = min(_CHUNK, int((total - filled) / accept * 1.01) + 64)
        v, sign = _draw_signed_prefixes(m, rng)
        x = exact_magnitudes(v, s, d, rng)
        keep = (x - sign) != -1  # not (x = 0 and negative); x >= 0
        filled = _emit_signed(out, filled, x, sign, keep)
    return out


@dataclass(frozen=True)
class GaussTable:
    """Integer bounds for Algorithm 3's test ``U' < exp(-gamma(x))``, ``gamma(x) = (q t x - p)^2 / (2 p q t^2)``.

    ``lower[x] <= exp(-gamma(x)) 2^B <= upper[x]`` (uint64, ``B = 53 + test_bits``) for ``x < M``.
    ``first[2 x + s]`` (sign bit ``s``) is ``floor(lower[x] / 2^53)``, a lower bound of
    ``exp(-gamma(x)) 2^test_bits``; ``first[1]`` (the proposal (negative, 0)) is a sentinel never reached.
    For the first ``test_bits`` bits ``a`` of ``U'``: ``a < first`` proves acceptance, ``a >= first + width``
    proves rejection (``width`` is the largest ``ceil(upper[x] / 2^53) - first``).
    """

    lower: NDArray[np.uint64]
    upper: NDArray[np.uint64]
    first: NDArray[np.int64]
    width: int
    test_bits: int


def _exp_bounds_signed(num: int, den: int, bits: int) -> tuple[int, int]:
    """Integer bounds of ``exp(-num / den) 2^bits`` for any integer ``num`` (a negative one by inversion)."""
    if num >= 0:
        return exp_neg_bounds(num, den, bits)
    lo, hi = exp_neg_bounds(-num, den, bits)
    return (1 << (2 * bits)) // hi, -((-(1 << (2 * bits))) // lo)


def _gauss_bounds(p: int, q: int, t: int, m: int, bits: int) -> tuple[list[int], list[int]]:
    """Bounds of ``exp(-gamma(x)) 2^bits`` for ``x < m``, by the exact recurrence ``e(x + 1) = e(x) r(x)``,
    ``r(x) = exp(-(2 g qt + (qt)^2) / den)`` with ``g = qt x - p``, ``r(x + 1) = r(x) exp(-q / p)``, in fixed
    point with floors for the lower and ceilings for the upper bounds (so each pair brackets its value)."""
    den, qt = 2 * p * q * t * t, q * t
    w = bits + 64 + 2 * m.bit_length()
    guard = w - bits
    e_lo, e_hi = exp_neg_bounds(p * p, den, w)
    r_lo, r_hi = _exp_bounds_signed(qt * qt - 2 * p * qt, den, w)
    c_lo, c_hi = exp_neg_bounds(q, p, w)
    lower: list[int] = []
    upper: list[int] = []
    for _ in range(m):
        lower.append(e_lo >> guard)
        upper.append(-((-e_hi) >> guard))
        e_lo, e_hi = (e_lo * r_lo) >> w, -((-(e_hi * r_hi)) >> w)
        r_lo, r_hi = (r_lo * c_lo) >> w, -((-(r_hi * c_hi)) >> w)
    return lower, upper


@functools.lru_cache(maxsize=16)
def gauss_table(p: int, q: int, t: int, test_bits: int = _TEST_BITS, loosen: int = 0) -> GaussTable | None:
    """The :class:`GaussTable` for ``x = 0, ..., M - 1`` (None out of the fast range); cached.

    ``M - 1 >= sigma^2 / t + 9 sigma + 1``, so for every ``x >= M - 1`` the exponent is at least 40.5 and
    ``exp(-gamma(x)) 2^53 < 1``; ``gamma`` increases beyond ``sigma^2 / t``, so the last entry's upper
    bound serves every larger ``x``.

    Parameters
    ----------
    p, q : int
        ``sigma^2 = p / q`` in lowest terms.
    t : int
        The proposal's scale ``floor(sigma) + 1``.
    test_bits : int, optional
        Bits of ``U'`` in the first stage (default 10).
    loosen : int, optional
        If positive, widen every bound by a relative ``2^-loosen`` (still bounds; only for tests that
        send many lanes to the exact fallback).

    Returns
    -------
    GaussTable or None
        The table, or None when it would be too large.
    """
    m = p // (q * t) + 9 * (math.isqrt(p // q) + 1) + 3  # isqrt(floor(sigma^2)) + 1 > sigma
    if t > MAX_FAST_SCALE or m > _MAX_TABLE or q * t * m + p >= _MAX_FAST_INT:
        return None
    bits = PREFIX_BITS + test_bits
    lo, hi = _gauss_bounds(p, q, t, m, bits)
    lower, upper = np.array(lo, dtype=np.uint64), np.array(hi, dtype=np.uint64)
    if loosen > 0:
        lower -= lower >> np.uint64(loosen)
        upper += (upper >> np.uint64(loosen)) + np.uint64(1)
    if upper[-1] >> np.uint64(PREFIX_BITS) != 0 or (m - 1) * q * t < p:
        raise AssertionError("discrete Gaussian table too short")  # cannot happen: see the bound on M
    # The first stage uses the bounds loosened by a relative 2^-36 (a looser bound is still a bound): this
    # keeps its choices, and so the draws of a seeded generator, those of the float tables used before.
    margin = np.uint64(_STAGE_ONE_MARGIN_BITS)
    first = ((lower - (lower >> margin)) >> np.uint64(PREFIX_BITS)).astype(np.int64)
    loose = upper + (upper >> margin) + np.uint64(1)  # >= upper (1 + 2^-36)
    ceil = ((loose + np.uint64((1 << PREFIX_BITS) - 1)) >> np.uint64(PREFIX_BITS)).astype(np.int64)
    width = int((ceil - first).max())
    doubled = np.repeat(first, 2)
    doubled[1] = _NEVER
    return GaussTable(lower, upper, doubled, width, test_bits)


def gauss_test_exact(x: int, prefix: int, bits: int, p: int, q: int, t: int, den: int, rng: np.random.Generator) -> bool:
    """Algorithm 3's test for magnitude ``x``, exactly: ``U' < exp(-(q t x - p)^2 / den)`` given ``bits``
    bits of ``U'`` (:meth:`dptutor._lazy_bits.LazyUniform.below_exp_neg`).

    Parameters
    ----------
    x : int
        The proposal's magnitude.
    prefix, bits : int
        The bits of ``U'`` drawn so far.
    p, q, t, den : int
        ``sigma^2 = p / q``, the proposal's scale and ``2 p q t^2``.
    rng : numpy.random.Generator
        Source of further bits.

    Returns
    -------
    bool
        Whether the proposal is kept.
    """
    gap = q * t * x - p
    return LazyUniform(prefix, bits, rng).below_exp_neg(gap * gap, den)


def _second_stage(lanes: NDArray[np.intp], x: NDArray[np.int64], low: NDArray[np.int64], keep: NDArray[np.bool_],
                  table: GaussTable, pqt: tuple[int, int, int], rng: np.random.Generator) -> None:
    """53 more bits of ``U'`` for the lanes the first bits left open, compared with the table's 63-bit
    integer bounds; what they leave open (and every ``x`` beyond the table) is settled exactly."""
    p, q, t = pqt
    last = table.lower.size - 1
    xs, a = x[lanes], low[lanes]
    r = rng.integers(0, 1 << PREFIX_BITS, size=lanes.size, dtype=np.int64)
    prefix = (a.astype(np.uint64) << np.uint64(PREFIX_BITS)) | r.astype(np.uint64)
    idx = np.minimum(xs, last)
    beyond = xs >= last
    yes = (prefix < table.lower[idx]) & ~beyond  # U' < (prefix + 1) / 2^B <= exp(-gamma)
    no = prefix >= table.upper[idx]  # U' >= prefix / 2^B >= exp(-gamma) (beyond: gamma only grows)
    keep[lanes] = yes
    bits = table.test_bits + PREFIX_BITS
    for j in np.flatnonzero(~(yes | no) | beyond):
        keep[lanes[j]] = gauss_test_exact(int(xs[j]), int(prefix[j]), bits, p, q, t, 2 * p * q * t * t, rng)


def sample_gaussian_fast(
    p: int, q: int, t: int, total: int, table: GaussTable, rng: np.random.Generator, accept: float
) -> NDArray[np.int64]:
    """Algorithm 3 with the discrete Laplace proposal by exact inversion and the test by lazy bits.

    One 64-bit word per proposal: its top 53 bits are the prefix of ``U`` (the magnitude,
    :func:`dptutor._lazy_bits.exact_magnitudes`), bit 10 the sign, bits 0-9 the first 10 bits ``a`` of the
    test's ``U'`` (disjoint bits of a uniform word are independent fair bits).  Stage 1 decides the test
    from ``a`` and the table (open with probability about 2^-10); stage 2 draws 53 more bits of ``U'`` for
    the open lanes and compares 63 bits with the table's integer bounds; what is left is settled exactly in
    Python integers.  Open lanes are settled in place before the kept lanes are selected, so which lanes
    are kept never depends on which were open.

    Parameters
    ----------
    p, q, t : int
        ``sigma^2 = p / q`` in lowest terms and the proposal's scale ``t = floor(sigma) + 1``.
    total : int
        Number of draws.
    table : GaussTable
        ``gauss_table(p, q, t)``.
    rng : numpy.random.Generator
        The source of bits (``rng.integers`` only).
    accept : float
        Probability that a proposal is kept, which only sizes the chunks.

    Returns
    -------
    numpy.ndarray of int64
        ``total`` draws.
    """
    bits = table.test_bits
    out = np.empty(total, dtype=np.int64)
    filled = 0
    while filled < total:
        m = min(_CHUNK, int((total - filled) / accept * 1.01) + 64)
        w = rng.integers(0, 1 << 64, size=m, dtype=np.uint64)
        v = (w >> 11).view(np.int64)
        low = (w & ((2 << bits) - 1)).view(np.int64)  # bits 0 .. test_bits (<= 10)
        sign = low >> bits
        low &= (1 << bits) - 1  # a: the first bits of U'
        x = exact_magnitudes(v, t, 1, rng)
        idx = np.minimum(x, table.lower.size - 1)
        idx <<= 1
        idx |= sign
        diff = low - table.first[idx]  # < 0 keeps, >= width rejects
        keep = diff < 0
        lanes = np.flatnonzero(diff.view(np.uint64) < np.uint64(table.width))
        if lanes.size:
            _second_stage(lanes, x, low, keep, table, (p, q, t), rng)
        filled = _emit_signed(out, filled, x, sign, keep)
    return out
