"""Privacy-loss distributions (PLD): discretised pessimistically, composed by FFT.

A PLD on a grid holds the law of the privacy loss rounded up to the grid, so every delta computed from
it is an upper bound (:class:`PrivacyLossDistribution`); :func:`pld_gaussian` builds the Gaussian's
(optionally Poisson-subsampled), and :func:`gaussian_composition_epsilon` compares the accountants on
k compositions.  Labels refer to the chapter "Composition and accounting".  The names are also
importable from :mod:`dptutor.accounting`.

Every step rounds outward: a pessimistic PLD's mass above any loss is never below the exact one (the
Gaussian's cell masses are differences of outward bounds on its tail probabilities; the FFT's round-off
is bounded and added to the infinite loss), so its delta is never below the exact delta of the
mechanism, after any number of compositions; an optimistic PLD's is never above it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.fft
from numpy.typing import NDArray
from scipy import special

from dptutor._validate import check_bool, check_choice, check_float_array, check_int, check_real, checked_toward, shown
from dptutor._validate.rounding import exact_rational, toward, toward_positive
from dptutor.renyi import ORDERS, nudge_down, nudge_up, rdp_subsampled_gaussian, rdp_to_dp, round_down, round_up

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
# The FFT runs in x87 extended precision where numpy has it (unit roundoff 2^-64: its error bound is 2048
# times smaller, at three times the time); a long double that is a double, or a software quad, is not used.
_FFT_DTYPE = np.longdouble if np.finfo(np.longdouble).nmant == 63 else np.float64
_FFT_U = float(np.finfo(_FFT_DTYPE).eps) / 2.0
_FLOOR = 1e-306  # absolute allowance for scipy's normal CDF where it is subnormal (below tail / 2 >= 5e-301)


def _rounded(exact: Fraction, up: bool) -> float:
    """``exact`` rounded up (``up``) or down to a double."""
    return round_up(exact) if up else round_down(exact)


def smallest_epsilon(delta_of: Callable[[float], float], target: float, hi: float, *, lower: bool = False) -> float:
    """Bisection for the smallest epsilon in (0, ``hi``] with ``delta_of(epsilon) <= target``, for a
    non-increasing ``delta_of`` with ``delta_of(0) > target >= delta_of(hi)``; to 1e-12 relative.  Returns the
    bracket's upper end (where ``delta_of <= target``: an upper bound), or its lower end when ``lower``
    (where ``delta_of > target``: a lower bound)."""
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if delta_of(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo if lower else hi


def _mass_excess(pmf: NDArray[np.float64], mass: float, up: bool) -> float:
    """A bound on ``sum(pmf) + mass - 1``, above it (``up``) or below it: exact (``math.fsum`` rounds
    correctly, so it is 0 exactly when the sum is 1) for up to 4096 entries, else a pairwise sum in the FFT's
    precision, within ``(log2(n) + 20)`` of its units of roundoff."""
    if pmf.size <= 4096:
        r = math.fsum([*pmf.tolist(), mass, -1.0])
        return r if r == 0.0 else (nudge_up(r, 1) if up else nudge_down(r, 1))
    total = Fraction(*np.sum(pmf.astype(_FFT_DTYPE)).as_integer_ratio())
    err = Fraction((math.log2(pmf.size) + 20.0) * _FFT_U) * total
    return _rounded(total + Fraction(mass) - 1 + (err if up else -err), up)


@dataclass(frozen=True)
class PrivacyLossDistribution:
    """A privacy-loss distribution on the grid ``{(offset + m) * grid}``: ``pmf[m]`` is the probability,
    under the first dataset, that the privacy loss rounded *up* to the grid equals ``(offset + m) *
    grid``; ``infinity_mass`` is the probability of an infinite (or truncated) loss.  Rounding up
    makes every delta computed from it an upper bound; a PLD with ``pessimistic=False``
    rounds down instead and gives lower bounds.

    Masses that sum to less than 1 are completed pessimistically: the missing mass is added to
    ``infinity_mass`` (an optimistic PLD may lack mass: it lies below every loss).  An optimistic PLD whose
    masses sum to more than 1 is scaled down to sum to at most 1.

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
        if (pmf > 1.0 + 1e-6).any():  # before the sum, which overflowed (with a warning) for entries near 1e308
            raise ValueError(f"pmf must hold probabilities in [0, 1] (within 1e-6), got a largest entry of {float(pmf.max())!r}")
        if pmf.size > MAX_PLD_CELLS:  # each delta allocates a few copies; epsilon calls delta ~40 times
            raise ValueError(f"pmf has {pmf.size:,} entries, more than the limit of {MAX_PLD_CELLS:,}")
        mass = check_real(self.infinity_mass, "infinity_mass", low=0.0, high=1.0)
        check_bool(self.pessimistic, "pessimistic")
        if not abs(pmf.sum() + mass - 1.0) <= 1e-6:
            raise ValueError(f"pmf and infinity_mass must sum to 1, got {pmf.sum() + mass!r}")
        pmf = pmf.copy()
        excess = _mass_excess(pmf, mass, not self.pessimistic)
        if self.pessimistic and excess < 0.0:  # the missing mass counts as an infinite loss
            object.__setattr__(self, "infinity_mass", min(1.0, round_up(Fraction(mass) - Fraction(excess))))
        elif not self.pessimistic and excess > 0.0:  # scaled down by a factor at most 1 / (1 + excess)
            scale = _rounded(1 / (1 + Fraction(excess)), False)
            pmf = np.nextafter(pmf * scale, 0.0)
            object.__setattr__(self, "infinity_mass", max(0.0, math.nextafter(mass * scale, 0.0)))
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
        # a Fraction epsilon on the safe side: down for an upper bound on delta (its nearest double may be above it)
        eps = checked_toward(epsilon, "epsilon", check_real, up=not self.pessimistic, allow_inf=True)
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
        """The smallest epsilon >= 0 with :meth:`delta` <= ``delta`` (``math.inf`` if none), by bisection: the
        upper end of the final bracket for a pessimistic PLD (an upper bound), its lower end for an optimistic
        one (a lower bound).

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
        target = checked_toward(delta, "delta", check_real, up=not self.pessimistic, low=0.0, high=1.0)
        if self.infinity_mass > target:
            return math.inf
        if self.delta(0.0) <= target:
            return 0.0
        top = float(self.losses[-1])  # > 0 here; above it by more than its rounding error, delta is the infinity mass
        return smallest_epsilon(self.delta, target, nudge_up(top * (1.0 + 8.0 * _U), 1), lower=not self.pessimistic)

    def compose(self, k: int, *, tail: float = 1e-15) -> "PrivacyLossDistribution":
        """The PLD of k independent releases (the k-fold convolution), by FFT and binary powers.

        After each convolution, the lower tail of mass at most ``tail / 2`` is moved up to the first
        kept loss and the upper tail of mass at most ``tail / 2`` is moved to infinity: both are
        pessimistic, so :meth:`delta` stays an upper bound.  (An optimistic PLD moves its upper tail
        down to the last kept loss instead, and drops a lower tail of at most ``min(tail, 1e-12) / 2``.)  The
        infinity masses combine exactly and rounded up, and the truncated tail is summed from the top and
        rounded up.  The FFT runs in extended precision where numpy has it; each cell is rounded to a double
        outward and a bound on the sum of the cells' errors (per convolution about 1e-16 in extended
        precision, 1e-12 where numpy's long double is a double) is added to the infinity mass (an optimistic
        PLD removes it from its top cells).

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
    """(first kept index, kept pmf, upper tail mass to add to infinity), rounded outward.  Pessimistic: the
    lower tail (at most ``tail / 2``) is added to the first kept entry, the upper tail (at most ``tail / 2``)
    goes to infinity.  Optimistic: the lower tail (at most ``min(tail, 1e-12) / 2``) is dropped and the upper
    tail is added to the last kept entry; the third value is 0."""
    cum = np.cumsum(pmf)
    first = int(np.searchsorted(cum, (tail if pessimistic else min(tail, 1e-12)) / 2.0, side="right"))
    # upper[m]: the mass above index m, summed from the top (total - cum[m] cancelled: it said 4e-16 for a true
    # 1.4e-14 above the last kept entry of pld_gaussian(5.0), and the difference vanished from the PLD)
    upper = np.append(np.cumsum(pmf[::-1])[::-1][1:], 0.0)
    last = int(np.argmax(upper <= tail / 2.0))  # the first index whose mass above it is small
    first = min(first, last)
    kept = pmf[first:last + 1].copy()
    grow = 1.0 + (pmf.size + 2.0) * _U  # sequential sums: within n units of roundoff
    if pessimistic:
        if first > 0:
            kept[0] = nudge_up((kept[0] + cum[first - 1]) * grow, 2)
        upper_mass = float(upper[last]) * grow
        return first, kept, nudge_up(upper_mass, 1) if upper_mass > 0.0 else 0.0
    if upper[last] > 0.0:
        kept[-1] = max(0.0, nudge_down(kept[-1] + float(upper[last]) * (2.0 - grow), 2))
    return first, kept, 0.0


def _fft_convolve(x: NDArray[np.float64], y: NDArray[np.float64], up: bool) -> tuple[NDArray[np.float64], float]:
    """The convolution of non-negative ``x`` and ``y`` by FFT, and a bound on the sum of its entries' absolute
    errors.  Each entry is rounded to a double outward (``up`` or down) and negatives are clamped to 0, which
    only brings them closer to the exact (non-negative) values.

    The bound: a radix FFT of length n has a relative 2-norm error of at most ``log2(n) eta`` with ``eta``
    about 6 units of roundoff plus the twiddle factors' error (Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2nd ed., Theorem 24.2); ``eta`` is taken as 16 units, with 2 extra stages for the real
    transform.  Since ``|fft(y)| <= sum(y)``, the convolution's 2-norm error is at most about
    ``3 log2(n) eta (|x|_2 |y|_1 + |x|_1 |y|_2)`` (taken with 4), and the sum of absolute errors at most
    ``sqrt(n)`` times that.
    """
    size = x.size + y.size - 1
    n = scipy.fft.next_fast_len(size, real=True)
    fx = scipy.fft.rfft(x.astype(_FFT_DTYPE), n)
    fy = fx if y is x else scipy.fft.rfft(y.astype(_FFT_DTYPE), n)  # squaring: one transform
    wide = scipy.fft.irfft(fx * fy, n)[:size]
    out = wide.astype(np.float64)
    off = out < wide if up else out > wide  # compared in the wide type: exact
    out = np.clip(np.where(off, np.nextafter(out, math.inf if up else -math.inf), out), 0.0, None)
    norms = [(float(np.sqrt(np.sum(v * v))), float(np.sum(v))) for v in (x, y)]
    eps = (math.log2(n) + 2.0) * 16.0 * _FFT_U
    two_norm = 4.0 * eps * (norms[0][0] * norms[1][1] + norms[0][1] * norms[1][0])
    return out, nudge_up(math.sqrt(size) * two_norm * (1.0 + 1e-6), 1)


def _remove_from_top(pmf: NDArray[np.float64], amount: float) -> NDArray[np.float64]:
    """``pmf`` with at least ``amount`` of mass removed from its highest entries (every upper tail falls by
    ``amount`` or to 0): an optimistic PLD's allowance for the FFT's round-off."""
    if amount <= 0.0:
        return pmf
    amount *= 1.0 + (pmf.size + 2.0) * _U  # the sequential sums below: within n units of roundoff
    tops = np.cumsum(pmf[::-1])
    j = int(np.searchsorted(tops, amount, side="left"))  # the top j entries hold less than amount
    out = pmf.copy()
    if j >= pmf.size:
        return np.zeros_like(pmf)
    i = pmf.size - 1 - j
    rest = nudge_up(amount - (float(tops[j - 1]) if j else 0.0), 1)
    out[i + 1:] = 0.0
    out[i] = max(0.0, nudge_down(out[i] - rest, 1))
    return out


def _convolve(a: PrivacyLossDistribution, b: PrivacyLossDistribution, tail: float, k: int) -> PrivacyLossDistribution:
    if a.grid != b.grid or a.pessimistic != b.pessimistic:
        raise ValueError("the two PLDs must share their grid and their rounding")
    if a.pmf.size + b.pmf.size - 1 > MAX_PLD_CELLS:
        raise ValueError(f"k = {k} releases need a PLD of more than {MAX_PLD_CELLS:,} cells on grid {a.grid:g}: "
                         "use a coarser grid or fewer releases")
    up = a.pessimistic
    pmf, error = _fft_convolve(a.pmf, b.pmf, up)
    if not up:
        pmf = _remove_from_top(pmf, error)
    first, kept, upper = _truncate(pmf, tail, up)
    # The product measure's mass at infinity, a (F_b + b) + F_a b with F the finite masses, exactly and rounded
    # outward (1 - (1 - a)(1 - b) in floats cancelled: 0 for a = b = 1e-20); with the FFT's error for pessimism.
    inf_a, inf_b = Fraction(a.infinity_mass), Fraction(b.infinity_mass)
    inf_exact = Fraction(upper) + Fraction(error) if up else Fraction(0)
    if inf_a or inf_b:
        grow = (math.log2(max(a.pmf.size, b.pmf.size)) + 20.0) * _U  # numpy's pairwise sums
        fin_a, fin_b = (Fraction(float(np.sum(v.pmf))) * Fraction(1.0 + grow if up else 1.0 - grow) for v in (a, b))
        inf_exact += inf_a * (fin_b + inf_b) + fin_a * inf_b
    inf_mass = min(1.0, _rounded(inf_exact, up))
    offset = a.offset + b.offset + first
    if abs(offset) > 10**9:
        raise ValueError(f"k = {k} releases move the losses beyond the offsets of the grid (|offset| <= 10^9)")
    return PrivacyLossDistribution(a.grid, offset, kept, inf_mass, up)


def pld_gaussian(
    sigma: float,
    *,
    sampling_probability: float = 1.0,
    direction: str = "remove",
    grid: float = 1e-4,
    tail: float = 1e-15,
    pessimistic: bool = True,
) -> PrivacyLossDistribution:
    """The PLD of the (Poisson-subsampled) Gaussian mechanism, sensitivity 1, discretised pessimistically
    with outward rounding.

    ``"remove"``: the pair ``P = (1 - q) N(0, sigma^2) + q N(1, sigma^2)``, ``Q = N(0, sigma^2)``;
    ``"add"``: ``P = N(0, sigma^2)``, ``Q`` the mixture.  The loss ``ln(p/q)(y)`` is monotone in y, so
    ``P[L > l]`` is a tail of P at the inverse image of l.  At each cell edge (a double at most ``m * grid``)
    it is bounded from above: the inverse image is moved by a bound on its rounding error and scipy's
    normal CDF is allowed a relative error of ``16 (4 + x^2)`` units of roundoff at ``x`` (eight times the
    largest measured against mpmath, for ``-38 < x < 9``).  Each cell's mass (the difference of two tail
    bounds, rounded up) is put at its upper end, the mass below ``tail / 2`` on the first cell and above it
    at infinity, so every tail of the PLD is at least the exact one.  ``pessimistic=False`` bounds the tails
    from below and puts each cell's mass at its lower end (the upper tail on the last cell; the lower tail,
    at most ``min(tail, 1e-12) / 2``, is dropped): the deltas it gives are lower bounds.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, 1e-3 to 1e6 (an exact value: ``Fraction(1, 1000)`` is accepted).
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
    exact = exact_rational(sigma)  # the range is the exact value's: 1/1000 is in it (its double, rounded down, not)
    if exact is not None and not Fraction(1, 1000) <= exact <= 10**6:
        raise ValueError(f"sigma must lie in [0.001, 1e+06], got {shown(sigma)}")
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    direction = check_choice(direction, "direction", ("remove", "add"))
    h = check_real(grid, "grid", low=1e-6, high=1.0)
    t = check_real(tail, "tail", low=1e-300, high=1e-3)
    pessimistic = check_bool(pessimistic, "pessimistic")
    # more loss (a pessimistic PLD) with less noise and more sampling: Fractions rounded to that side
    s = toward(sigma, s, "sigma", up=not pessimistic)
    q = toward_positive(sampling_probability, q, "sampling_probability", up=pessimistic)
    log1mq = math.log1p(-q) if q < 1.0 else -math.inf
    l_lo, l_hi = (log1mq, math.inf) if direction == "remove" else (-math.inf, -log1mq)
    # The range: the losses whose lower and upper tails are below tail / 2, by doubling a bracket.
    l_top = _loss_edge(lambda v: _gaussian_bounds(v, s, q, direction, True)[0], 0.5 * h + 1e-3, l_hi, t)
    t_low = t if pessimistic else min(t, 1e-12)
    l_bottom = _loss_edge(lambda v: _gaussian_bounds(v, s, q, direction, True)[1], -(0.5 * h + 1e-3), l_lo, t_low)
    m_lo, m_hi = math.floor(l_bottom / h) - 1, math.ceil(l_top / h) + 1
    if m_hi - m_lo > MAX_PLD_CELLS:
        raise ValueError(f"grid is too fine for this sigma: more than {MAX_PLD_CELLS:,} cells")
    # The cell edges, each a double on the safe side of m h (at most it when pessimistic, at least it otherwise).
    edges = np.nextafter(np.arange(m_lo, m_hi + 1) * h, -math.inf if pessimistic else math.inf)
    above, below = _gaussian_bounds(edges, s, q, direction, pessimistic)
    if pessimistic:  # upper bounds on P[L > edge], the smallest of those at or below it: non-increasing
        tails = np.minimum.accumulate(np.clip(np.minimum(above, np.nextafter(1.0 - below, math.inf)), 0.0, 1.0))
    else:  # lower bounds, the largest of those at or above it
        tails = np.clip(np.maximum(above, np.nextafter(1.0 - below, -math.inf)), 0.0, 1.0)
        tails = np.maximum.accumulate(tails[::-1])[::-1]
    # first: the last edge with at most t_low / 2 below it; last: the first with at most t / 2 above it
    first = max(0, int(np.searchsorted(1.0 - tails, t_low / 2.0, side="right")) - 1)
    last = max(first, min(tails.size - 1, int(np.searchsorted(-tails, -t / 2.0, side="left"))))
    step = tails[first:last] - tails[first + 1:last + 1]  # the cells' masses: rounded up or down below
    if pessimistic:  # mass of (edge_{m-1}, edge_m] at m h; all below edge_first at first h
        step = np.where(step > 0.0, np.nextafter(step, math.inf), 0.0)
        pmf = np.concatenate([[nudge_up(1.0 - tails[first], 1) if tails[first] < 1.0 else 0.0], step])
        return PrivacyLossDistribution(h, int(m_lo) + first, pmf, float(tails[last]), True)
    # mass of (edge_m, edge_{m+1}] at m h; all above edge_last at last h; below edge_first: dropped
    step = np.clip(np.nextafter(step, -math.inf), 0.0, None)
    return PrivacyLossDistribution(h, int(m_lo) + first, np.append(step, tails[last]), 0.0, False)


def _loss_inverse(e: NDArray, s: float, q: float, direction: str) -> tuple[NDArray, NDArray]:
    """For ``q < 1``: ``y(e)`` with ``L(y(e)) = e`` (see :func:`pld_gaussian`) and a bound on its absolute error
    (``inf`` or NaN where the loss cannot reach ``e``, within rounding).  Each libm call is allowed 4 units of
    roundoff, each operation one, with margins."""
    x = e if direction == "remove" else -e
    log1mq, logq = math.log1p(-q), math.log(q)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        # e^x - (1 - q) > 0, computed as e^{log(1-q)} expm1(x - log(1-q)); ln(expm1(z)) as
        # z + ln(1 - e^-z) for large z, where expm1 overflows (losses above ~709).
        z = np.asarray(x - log1mq, dtype=float)
        log_expm1 = np.where(z > 30.0, z + np.log1p(-np.exp(-z)), np.log(np.expm1(np.minimum(z, 30.0))))
        inner = log_expm1 + (log1mq - logq)
        # z's error (log1p's and the subtraction's) moves ln(expm1(z)) by at most its slope 1 / (1 - e^-z),
        # which decreases in z, at the smallest z the exact one can be
        dz = 8.0 * _U * abs(log1mq) + 2.0 * _U * np.abs(z)
        slope = np.where(z - dz > 0.0, -1.0 / np.expm1(-(z - dz)), math.inf)
        err_inner = slope * dz + 16.0 * _U * (1.0 + np.abs(log_expm1) + abs(log1mq) + abs(logq))
        s2 = s * s
        y = 0.5 + s2 * inner
        err_y = (s2 * err_inner + 4.0 * _U * (np.abs(s2 * inner) + np.abs(y))) * 1.01
    return y, err_y


def _gaussian_bounds(e: NDArray, s: float, q: float, direction: str, upper: bool) -> tuple[NDArray, NDArray]:
    """Bounds on ``(P[L > e], P[L <= e])`` under the first distribution of the pair, for each loss ``e``:
    (upper, lower) bounds when ``upper``, else (lower, upper)."""
    e = np.asarray(e, dtype=float)
    if q == 1.0:  # both directions: P[L > e] = Phi(-b) with b = s e - 1 / (2 s)
        parts = [(1.0, s * e - 0.5 / s, 4.0 * _U * (np.abs(s * e) + 0.5 / s))]
    else:
        y, err_y = _loss_inverse(e, s, q, direction)
        sign = 1.0 if direction == "remove" else -1.0  # b = sign (y - mu) / s increases with the loss
        means = [(1.0 - q, 0.0), (q, 1.0)] if direction == "remove" else [(1.0, 0.0)]
        with np.errstate(invalid="ignore", over="ignore"):
            parts = [(w, sign * (y - mu) / s, None) for w, mu in means]
            parts = [(w, b, (err_y / s + 4.0 * _U * np.abs(b)) * 1.01) for w, b, _ in parts]
    worst = -math.inf if upper else math.inf  # b moved towards more mass above e
    above, below = np.zeros_like(e), np.zeros_like(e)
    for w, b, err in parts:
        with np.errstate(invalid="ignore", over="ignore"):
            b = np.nextafter(b - err if upper else b + err, worst)
        b = np.where(np.isfinite(b), b, worst)
        for out, x, sign in ((above, -b, 1.0 if upper else -1.0), (below, b, -1.0 if upper else 1.0)):
            allowance = 16.0 * _U * (4.0 + np.clip(x, -40.0, 0.0) ** 2)  # scipy's ndtr: see pld_gaussian
            out += w * special.ndtr(x) * (1.0 + sign * allowance)
    grow = 1.0 + 32.0 * _U  # the weights' and this arithmetic's rounding
    if upper:
        above, below = above * grow + _FLOOR, np.maximum(below / grow - _FLOOR, 0.0)
    else:
        above, below = np.maximum(above / grow - _FLOOR, 0.0), below * grow + _FLOOR
    if q < 1.0:  # beyond the loss's range (with 2 ulps for log1p's error) the tails are exact
        limit = math.log1p(-q)
        beyond = e < nudge_down(limit, 2) if direction == "remove" else e > nudge_up(-limit, 2)
        above, below = np.where(beyond, float(direction == "remove"), above), np.where(beyond, 0.0, below)
        below = np.where(beyond & (direction == "add"), 1.0, below)
    return above, below


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
    the accountant (for the PLD, the FFT's round-off included, see :meth:`PrivacyLossDistribution.compose`).
    The PLD truncates ``min(1e-15, delta / 1000)`` (at least 1e-300) of mass per step (the ``tail`` of
    :func:`pld_gaussian` and :meth:`PrivacyLossDistribution.compose`); a delta below the mass it counts as an
    infinite loss (the tails and the FFT's round-off, about 1e-16 per convolution) is refused.

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
        epsilon (finite for ``"pld"``; possibly ``inf`` for ``"rdp"``).

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range, a PLD of more than 2^23 cells (a coarser grid is
        needed), or (``"pld"``) a ``delta`` below the PLD's infinite-loss mass (``method="rdp"`` is needed).
    """
    s = check_real(sigma, "sigma", low=1e-3, high=1e6)
    k = check_int(k, "k", minimum=1, maximum=MAX_PLD_K)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    method = check_choice(method, "method", ("pld", "rdp"))
    h = check_real(grid, "grid", low=1e-6, high=1.0)  # checked for "rdp" too, where they are not used
    pes = check_bool(pessimistic, "pessimistic")
    upper = pes or method == "rdp"  # an upper bound: less noise, more sampling, a smaller target delta
    s, dlt = toward(sigma, s, "sigma", up=not upper), toward_positive(delta, dlt, "delta", up=not upper)
    q = toward_positive(sampling_probability, q, "sampling_probability", up=upper)
    if method == "rdp":
        rdp = np.array([rdp_subsampled_gaussian(a, s, q) for a in ORDERS], dtype=float)
        with np.errstate(over="ignore"):
            total = np.where(rdp > 0.0, np.nextafter(rdp * k, np.inf), 0.0)  # k rdp rounded up (to nearest was low)
        return rdp_to_dp(ORDERS, total, dlt)[0]
    # The mass truncated per step, well below delta (fixed at 1e-15, it made every delta below ~3e-15 give inf).
    tail = max(1e-300, min(1e-15, dlt / 1000.0))
    plds = [pld_gaussian(s, sampling_probability=q, direction=d, grid=h, tail=tail, pessimistic=pes).compose(k, tail=tail)
            for d in (("remove", "add") if q < 1.0 else ("remove",))]
    worst = max(p.infinity_mass for p in plds)
    if worst > dlt:  # the truncated tails and the FFT's round-off bound alone exceed delta: no finite epsilon
        raise ValueError(f"delta = {dlt!r} is below the PLD's resolution (its truncated tails and FFT round-off "
                         f"bound add up to {worst:.3g} at k = {k}): use method='rdp'")
    return max(p.epsilon(dlt) for p in plds)
