"""Privacy-loss distributions (PLD): discretised pessimistically, composed by FFT.

A PLD on a grid holds the law of the privacy loss rounded up to the grid, so every delta computed from
it is an upper bound (:class:`PrivacyLossDistribution`); :func:`pld_gaussian` builds the Gaussian's
(optionally Poisson-subsampled), and :func:`gaussian_composition_epsilon` compares the accountants on
k compositions.  Labels refer to the chapter "Composition and accounting".  The names are also
importable from :mod:`dptutor.accounting`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import signal, stats

from dptutor._validate import check_bool, check_choice, check_float_array, check_int, check_real
from dptutor.renyi import ORDERS, nudge_up, rdp_subsampled_gaussian, rdp_to_dp, round_up

__all__ = [
    "PrivacyLossDistribution",
    "pld_gaussian",
    "gaussian_composition_epsilon",
]

#: The most releases a PLD is composed over (binary powers: log2(k) convolutions).
MAX_PLD_K: int = 10**6

#: The most grid cells a PLD is built or composed on (2^23 float64: 64 MiB, a few seconds of FFT); more is refused.
MAX_PLD_CELLS: int = 1 << 23

_U = 2.0**-53  # the unit roundoff


def _rounded(exact: Fraction, up: bool) -> float:
    """``exact`` rounded up (``up``) or down to a double."""
    return round_up(exact) if up else 0.0 - round_up(-exact)  # not -round_up: -0.0


def smallest_epsilon(delta_of: Callable[[float], float], target: float, hi: float) -> float:
    """Bisection for the smallest epsilon in (0, ``hi``] with ``delta_of(epsilon) <= target``, for a
    non-increasing ``delta_of`` with ``delta_of(0) > target >= delta_of(hi)``; to 1e-12 relative."""
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if delta_of(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


@dataclass(frozen=True)
class PrivacyLossDistribution:
    """A privacy-loss distribution on the grid ``{(offset + m) * grid}``: ``pmf[m]`` is the probability,
    under the first dataset, that the privacy loss rounded *up* to the grid equals ``(offset + m) *
    grid``; ``infinity_mass`` is the probability of an infinite (or truncated) loss.  Rounding up
    makes every delta computed from it an upper bound; a PLD with ``pessimistic=False``
    rounds down instead and gives lower bounds.

    Parameters
    ----------
    grid : float
        The grid step, 1e-8 to 1.
    offset : int
        The index of ``pmf[0]`` on the grid.
    pmf : array_like
        Non-negative probabilities, 1-D, at most 2^23 entries (``MAX_PLD_CELLS``).
    infinity_mass : float, optional
        Probability of an infinite loss (default 0); with ``pmf`` it sums to 1 (within 1e-6).
    pessimistic : bool, optional
        Whether losses were rounded up (default True).

    Raises
    ------
    TypeError, ValueError
        For a field of the wrong type or out of range, or masses that do not sum to 1.
    """

    grid: float
    offset: int
    pmf: NDArray[np.float64] = field(repr=False)
    infinity_mass: float = 0.0
    pessimistic: bool = True

    def __post_init__(self) -> None:
        check_real(self.grid, "grid", low=1e-8, high=1.0)
        check_int(self.offset, "offset", minimum=-(10**9), maximum=10**9)
        pmf = check_float_array(self.pmf, "pmf", finite=True, ndim=1, min_size=1, low=0.0)
        if pmf.size > MAX_PLD_CELLS:  # each delta allocates a few copies; epsilon calls delta ~40 times
            raise ValueError(f"pmf has {pmf.size:,} entries, more than the limit of {MAX_PLD_CELLS:,}")
        mass = check_real(self.infinity_mass, "infinity_mass", low=0.0, high=1.0)
        check_bool(self.pessimistic, "pessimistic")
        if not abs(pmf.sum() + mass - 1.0) <= 1e-6:
            raise ValueError(f"pmf and infinity_mass must sum to 1, got {pmf.sum() + mass!r}")
        pmf = pmf.copy()
        pmf.setflags(write=False)
        object.__setattr__(self, "pmf", pmf)

    @property
    def losses(self) -> NDArray[np.float64]:
        """The loss of each entry of ``pmf``.

        Returns
        -------
        numpy.ndarray of float64
            ``(offset + m) * grid`` for each index ``m``.
        """
        return (self.offset + np.arange(self.pmf.size)) * self.grid

    def delta(self, epsilon: float) -> float:
        """``infinity_mass + sum_m pmf[m] (1 - e^{epsilon - l_m})_+`` (the approximate-DP chapter's lemma on delta from the privacy loss).

        Parameters
        ----------
        epsilon : float
            Any real (``inf`` allowed).

        Returns
        -------
        float
            delta at ``epsilon``, in [0, 1], with the losses ``(offset + m) * grid`` taken in real arithmetic:
            rounded up for a pessimistic PLD (never below the exact sum; above it by a few ulps times
            ``log2(pmf.size)``), down for an optimistic one (never above it).

        Raises
        ------
        TypeError, ValueError
            For a bad ``epsilon``.
        """
        eps = check_real(epsilon, "epsilon", allow_inf=True)
        if eps == math.inf:
            return self.infinity_mass
        eps = max(eps, -1.7976931348623157e308)  # -inf: every finite loss counts fully
        up = self.pessimistic
        l = self.losses  # each within _U |l| of (offset + m) grid; sorted
        cut = eps - 4.0 * _U * (abs(eps) + max(abs(float(l[0])), abs(float(l[-1]))))  # Python floats: no warning
        start = int(np.searchsorted(l, cut, side="right"))
        l = l[start:]
        with np.errstate(under="ignore", over="ignore"):
            gap = l - eps  # the exact gap is within 2 _U (|l| + |gap|) of it: decided outward (a loss an ulp
            slack = 2.0 * _U * (np.abs(l) + np.abs(gap)) + 5e-324  # above epsilon counted as 0 gave delta 0)
            gap = gap + slack if up else gap - slack
            keep = gap > 0.0
            terms = self.pmf[start:][keep] * -np.expm1(-gap[keep])  # each within 4 units of roundoff
        # numpy's pairwise sum is within (log2(n) + 19) units of roundoff, the terms within 4 (and a subnormal
        # product within the smallest double), the scaling within 1
        scale, floor = (24.0 + math.log2(terms.size + 1)) * _U, terms.size * 5e-324
        value = float(np.sum(terms))
        value = value * (1.0 + scale) + floor if up else max(0.0, value * (1.0 - scale) - floor)
        return min(1.0, _rounded(Fraction(value) + Fraction(self.infinity_mass), up))

    def epsilon(self, delta: float) -> float:
        """The smallest epsilon >= 0 with :meth:`delta` <= ``delta`` (``math.inf`` if none), by bisection.

        Parameters
        ----------
        delta : float
            In [0, 1].

        Returns
        -------
        float
            epsilon, possibly ``inf``.

        Raises
        ------
        TypeError, ValueError
            For a bad ``delta``.
        """
        target = check_real(delta, "delta", low=0.0, high=1.0)
        if self.infinity_mass > target:
            return math.inf
        if self.delta(0.0) <= target:
            return 0.0
        top = float(self.losses[-1])  # > 0 here; above it by more than its rounding error, delta is the infinity mass
        return smallest_epsilon(self.delta, target, nudge_up(top * (1.0 + 8.0 * _U), 1))

    def compose(self, k: int, *, tail: float = 1e-15) -> "PrivacyLossDistribution":
        """The PLD of k independent releases (the k-fold convolution), by FFT and binary powers.

        After each convolution, the lower tail of mass at most ``tail / 2`` is moved up to the first
        kept loss and the upper tail of mass at most ``tail / 2`` is moved to infinity: both are
        pessimistic, so :meth:`delta` stays an upper bound.  (An optimistic PLD moves its upper tail
        down to the last kept loss instead.)  The infinity masses combine exactly (``a + b - a b``,
        rounded up) and the truncated tail is summed from the top and rounded up; the FFT itself has an
        absolute round-off of about 1e-16 per cell, which is not bounded outward.

        Parameters
        ----------
        k : int
            Number of releases, 1 to 10^6.
        tail : float, optional
            Mass truncated per convolution, 0 to 1e-3 (default 1e-15).

        Returns
        -------
        PrivacyLossDistribution
            The composed PLD.

        Raises
        ------
        TypeError, ValueError
            For a bad ``k`` or ``tail``, or a composed PLD of more than 2^23 cells (a coarser grid is needed).
        """
        k = check_int(k, "k", minimum=1, maximum=MAX_PLD_K)
        t = check_real(tail, "tail", low=0.0, high=1e-3)
        result: PrivacyLossDistribution | None = None
        base: PrivacyLossDistribution = self
        releases = k
        while k:
            if k & 1:
                result = base if result is None else _convolve(result, base, t, releases)
            k >>= 1
            if k:
                base = _convolve(base, base, t, releases)
        assert result is not None
        return result


def _truncate(pmf: NDArray[np.float64], tail: float, pessimistic: bool) -> tuple[int, NDArray[np.float64], float]:
    """(first kept index, kept pmf with the lower tail added to its first entry, upper tail mass to
    add to infinity): for ``pessimistic=False`` the upper tail is added to the last entry instead
    and the third value is 0."""
    cum = np.cumsum(pmf)
    first = int(np.searchsorted(cum, tail / 2.0, side="right"))  # cum[first - 1] <= tail / 2
    # upper[m]: the mass above index m, summed from the top (total - cum[m] cancelled: it said 4e-16 for a true
    # 1.4e-14 above the last kept entry of pld_gaussian(5.0), and the difference vanished from the PLD)
    upper = np.append(np.cumsum(pmf[::-1])[::-1][1:], 0.0)
    last = int(np.argmax(upper <= tail / 2.0))  # the first index whose mass above it is small
    first = min(first, last)
    kept = pmf[first:last + 1].copy()
    kept[0] += cum[first - 1] if first > 0 else 0.0
    upper_mass = float(upper[last]) * (1.0 + (pmf.size + 2.0) * _U)  # a sequential sum: within n units of roundoff
    if not pessimistic:
        kept[-1] += upper_mass
        return first, kept, 0.0
    return first, kept, nudge_up(upper_mass, 1) if upper_mass > 0.0 else 0.0


def _convolve(a: PrivacyLossDistribution, b: PrivacyLossDistribution, tail: float, k: int) -> PrivacyLossDistribution:
    if a.grid != b.grid or a.pessimistic != b.pessimistic:
        raise ValueError("the two PLDs must share their grid and their rounding")
    if a.pmf.size + b.pmf.size - 1 > MAX_PLD_CELLS:
        raise ValueError(f"k = {k} releases need a PLD of more than {MAX_PLD_CELLS:,} cells on grid {a.grid:g}: "
                         "use a coarser grid or fewer releases")
    pmf = np.clip(signal.fftconvolve(a.pmf, b.pmf), 0.0, None)
    first, kept, upper = _truncate(pmf, tail, a.pessimistic)
    # a + b - a b exactly, rounded outward (1 - (1 - a)(1 - b) in floats cancelled: 0 for a = b = 1e-20)
    inf_a, inf_b = Fraction(a.infinity_mass), Fraction(b.infinity_mass)
    inf_mass = min(1.0, _rounded(inf_a + inf_b - inf_a * inf_b + Fraction(upper), a.pessimistic))
    kept = kept * ((1.0 - inf_mass) / kept.sum()) if kept.sum() > 0 else kept
    offset = a.offset + b.offset + first
    if abs(offset) > 10**9:
        raise ValueError(f"k = {k} releases move the losses beyond the offsets of the grid (|offset| <= 10^9)")
    return PrivacyLossDistribution(a.grid, offset, kept, inf_mass, a.pessimistic)


def pld_gaussian(
    sigma: float,
    *,
    sampling_probability: float = 1.0,
    direction: str = "remove",
    grid: float = 1e-4,
    tail: float = 1e-15,
    pessimistic: bool = True,
) -> PrivacyLossDistribution:
    """The PLD of the (Poisson-subsampled) Gaussian mechanism, sensitivity 1, discretised exactly and
    pessimistically.

    ``"remove"``: the pair ``P = (1 - q) N(0, sigma^2) + q N(1, sigma^2)``, ``Q = N(0, sigma^2)``;
    ``"add"``: ``P = N(0, sigma^2)``, ``Q`` the mixture.  The loss ``ln(p/q)(y)`` is monotone in y, so
    ``P[L <= l]`` is a CDF of P at the inverse image of l: each grid cell's mass is exact, then put at
    the cell's upper end.  Mass below ``tail / 2`` goes to the first cell, above it to infinity.
    ``pessimistic=False`` puts each cell's mass at its lower end instead (and the upper tail on the
    last cell): the deltas it gives are lower bounds, up to the ``tail`` mass.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, 1e-3 to 1e6.
    sampling_probability : float, optional
        ``q`` in (0, 1] (default 1: no subsampling).
    direction : {"remove", "add"}, optional
        Which neighbour pair (default ``"remove"``).
    grid : float, optional
        The grid step, 1e-6 to 1 (default 1e-4).
    tail : float, optional
        Mass truncated at each end, 1e-300 to 1e-3 (default 1e-15).
    pessimistic : bool, optional
        Round losses up (default True) or down.

    Returns
    -------
    PrivacyLossDistribution
        The discretised PLD.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range, or a grid too fine (more than 2^23 cells).
    """
    s = check_real(sigma, "sigma", low=1e-3, high=1e6)
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    direction = check_choice(direction, "direction", ("remove", "add"))
    h = check_real(grid, "grid", low=1e-6, high=1.0)
    t = check_real(tail, "tail", low=1e-300, high=1e-3)
    pessimistic = check_bool(pessimistic, "pessimistic")
    below, above, l_lo, l_hi = _gaussian_loss_law(s, q, direction)
    # The range: the losses whose lower and upper tails are below tail / 2, by doubling a bracket.
    l_top = _loss_edge(above, 0.5 * h + 1e-3, l_hi, t)
    l_bottom = _loss_edge(below, -(0.5 * h + 1e-3), l_lo, t)
    m_lo, m_hi = math.floor(l_bottom / h) - 1, math.ceil(l_top / h) + 1
    if m_hi - m_lo > MAX_PLD_CELLS:
        raise ValueError(f"grid is too fine for this sigma: more than {MAX_PLD_CELLS:,} cells")
    l = np.arange(m_lo, m_hi + 1) * h
    with np.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
        cdf = below(l)
        sf = above(l)
    if math.isfinite(l_lo):
        cdf = np.where(l <= l_lo, 0.0, cdf)
        sf = np.where(l <= l_lo, 1.0, sf)
    if math.isfinite(l_hi):
        cdf = np.where(l >= l_hi, 1.0, cdf)
        sf = np.where(l >= l_hi, 0.0, sf)
    # Mass of (l_{m-1}, l_m], from whichever side is more accurate.
    mass = np.clip(np.where(cdf[1:] < 0.5, cdf[1:] - cdf[:-1], sf[:-1] - sf[1:]), 0.0, None)
    if pessimistic:  # the cell's mass at its upper end l_m; below l_{m_lo}: at l_{m_lo}
        pmf = np.concatenate([[cdf[0]], mass])
    else:  # at its lower end l_{m-1}; above l_{m_hi}: at l_{m_hi}
        pmf = np.concatenate([mass, [sf[-1]]])
        pmf[0] += cdf[0]
    inf_mass = float(sf[-1]) if pessimistic else 0.0
    first, kept, upper = _truncate(pmf, t, pessimistic)
    inf_mass = min(1.0, round_up(Fraction(inf_mass) + Fraction(upper)))
    if kept.sum() > 0:
        kept = kept * ((1.0 - inf_mass) / kept.sum())
    return PrivacyLossDistribution(h, int(m_lo) + first, kept, inf_mass, pessimistic)


def _gaussian_loss_law(s: float, q: float, direction: str) -> tuple[Callable, Callable, float, float]:
    """``(below, above, l_lo, l_hi)``: ``P[L <= l]`` and ``P[L > l]`` under the first distribution of the
    pair, and the range of the loss ``L`` (see :func:`pld_gaussian`)."""
    s2 = s * s

    def p_cdf(y: NDArray, upper: bool) -> NDArray:
        """P[Y <= y] (or P[Y > y] when ``upper``), for P the first distribution of the pair."""
        f = stats.norm.sf if upper else stats.norm.cdf
        if direction == "add" or q == 1.0:
            return f(y / s) if direction == "add" else f((y - 1.0) / s)
        return (1.0 - q) * f(y / s) + q * f((y - 1.0) / s)

    # Inverse of the loss: y(l) with L(y) = l.  L increases in y for "remove", decreases for "add".
    if q == 1.0:
        sign = 1.0 if direction == "remove" else -1.0

        def y_of(l: NDArray) -> NDArray:
            return 0.5 + sign * s2 * l

        l_lo, l_hi = -math.inf, math.inf
    else:
        log1mq = math.log1p(-q)

        def y_of(l: NDArray) -> NDArray:
            x = l if direction == "remove" else -l
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                # e^x - (1 - q) > 0, computed as e^{log(1-q)} expm1(x - log(1-q)); ln(expm1(z)) as
                # z + ln(1 - e^-z) for large z, where expm1 overflows (losses above ~709).
                z = np.asarray(x - log1mq, dtype=float)
                log_expm1 = np.where(z > 30.0, z + np.log1p(-np.exp(-z)), np.log(np.expm1(np.minimum(z, 30.0))))
                inner = log_expm1 + log1mq - math.log(q)
            return 0.5 + s2 * inner

        l_lo, l_hi = (log1mq, math.inf) if direction == "remove" else (-math.inf, -log1mq)
    increasing = direction == "remove"

    def below(l: NDArray) -> NDArray:
        """P[L <= l]."""
        return p_cdf(y_of(l), upper=not increasing)

    def above(l: NDArray) -> NDArray:
        """P[L > l]."""
        return p_cdf(y_of(l), upper=increasing)

    return below, above, l_lo, l_hi


def _loss_edge(tail_of: Any, step: float, limit: float, t: float) -> float:
    """From 0, doubling steps towards ``limit`` until ``tail_of`` is at most ``t / 2`` (or ``|x| >= 1e6``)."""
    x = 0.0
    with np.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
        while abs(x) < 1e6 and not (x * step >= limit * step) and not tail_of(np.array([x]))[0] <= t / 2:
            x += step
            step *= 2.0
    return min(x, limit) if step > 0 else max(x, limit)


def gaussian_composition_epsilon(
    sigma: float,
    k: int,
    delta: float,
    *,
    sampling_probability: float = 1.0,
    method: str = "pld",
    grid: float = 1e-4,
    pessimistic: bool = True,
) -> float:
    """epsilon at ``delta`` of k Poisson-subsampled Gaussian releases (DP-SGD's steps), sensitivity 1.

    ``"pld"``: both directions' PLDs composed (:func:`pld_gaussian`), the larger epsilon (an upper
    bound, tight to the grid; ``pessimistic=False`` gives the matching lower bound).  ``"rdp"``: the subsampled
    Gaussian's RDP at the orders ``dptutor.renyi.ORDERS``, times k (rounded up), converted with
    :func:`~dptutor.renyi.rdp_to_dp` (``"improved"``).  Both are rounded up: never below the exact value of
    the accountant (the PLD's epsilon up to the FFT's round-off, see :meth:`PrivacyLossDistribution.compose`).

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, 1e-3 to 1e6.
    k : int
        Number of releases, 1 to 10^6.
    delta : float
        In (0, 1).
    sampling_probability : float, optional
        ``q`` in (0, 1] (default 1).
    method : {"pld", "rdp"}, optional
        The accountant (default ``"pld"``).
    grid : float, optional
        The PLD's grid step, 1e-6 to 1 (default 1e-4).
    pessimistic : bool, optional
        Round losses up (default True) or down.

    Returns
    -------
    float
        epsilon, possibly ``inf``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range, or a PLD of more than 2^23 cells (a coarser grid is needed).
    """
    s = check_real(sigma, "sigma", low=1e-3, high=1e6)
    k = check_int(k, "k", minimum=1, maximum=MAX_PLD_K)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    method = check_choice(method, "method", ("pld", "rdp"))
    h = check_real(grid, "grid", low=1e-6, high=1.0)  # checked for "rdp" too, where they are not used
    pes = check_bool(pessimistic, "pessimistic")
    if method == "rdp":
        rdp = np.array([rdp_subsampled_gaussian(a, s, q) for a in ORDERS], dtype=float)
        with np.errstate(over="ignore"):
            total = np.where(rdp > 0.0, np.nextafter(rdp * k, np.inf), 0.0)  # k rdp rounded up (to nearest was low)
        return rdp_to_dp(ORDERS, total, dlt)[0]
    directions = ("remove", "add") if q < 1.0 else ("remove",)
    return max(pld_gaussian(s, sampling_probability=q, direction=d, grid=h, pessimistic=pes).compose(k).epsilon(dlt)
               for d in directions)
