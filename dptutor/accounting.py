"""Composition and privacy accounting: what k releases cost together.

Basic, advanced (Dwork, Rothblum and Vadhan 2010) and optimal (Kairouz, Oh and Viswanath 2015)
composition of (epsilon, delta)-DP mechanisms; the trade-off curve of (epsilon, delta)-DP; Renyi DP
(Mironov 2017) of the Gaussian and of the Poisson-subsampled Gaussian (Mironov, Talwar and Zhang
2019), its conversion to (epsilon, delta); zero-concentrated DP (Bun and Steinke 2016); privacy-loss
distributions (PLD) discretised pessimistically and composed by FFT; group privacy.  Labels
(``acc-eq-...``, ``thm-...``) refer to the chapter "Composition and accounting" (book/accounting.md).

Every function works in log space where a naive formula would overflow, and returns ``math.inf``
(never NaN) when a bound is infinite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import signal, special, stats

from dptutor._validate import (
    check_bool,
    check_choice,
    check_float_array,
    check_int,
    check_positive,
    check_real,
)

__all__ = [
    "basic_composition",
    "advanced_composition",
    "optimal_composition_delta",
    "optimal_composition_epsilon",
    "tradeoff_beta",
    "group_privacy",
    "rdp_gaussian",
    "rdp_subsampled_gaussian",
    "rdp_to_dp",
    "zcdp_gaussian",
    "zcdp_to_dp",
    "PrivacyLossDistribution",
    "pld_gaussian",
    "gaussian_composition_epsilon",
    "ORDERS",
]

#: The integer Renyi orders an accountant tries by default (as in dp-accounting, integers only).
ORDERS: tuple[int, ...] = tuple(range(2, 65)) + (80, 96, 128, 160, 192, 256)

#: The most releases :func:`optimal_composition_delta` sums over (its cost is linear in k).
MAX_OPTIMAL_K: int = 10**5

#: The most releases a PLD is composed over (binary powers: log2(k) convolutions).
MAX_PLD_K: int = 10**6

#: The largest Renyi order accepted (the subsampled-Gaussian sum has order + 1 terms).
MAX_ORDER: int = 10**4


def _k(k: object, maximum: int | None = None) -> int:
    return check_int(k, "k", minimum=1, maximum=maximum)


def _mul(a: float, b: float) -> float:
    """``a * b`` for a, b >= 0, ``inf`` on overflow (no warning), 0 when either is 0."""
    if a == 0.0 or b == 0.0:
        return 0.0
    with np.errstate(over="ignore"):
        return float(np.float64(a) * np.float64(b))


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


# ---------------------------------------------------------------------------------------------
# composition theorems for (epsilon, delta)-DP
# ---------------------------------------------------------------------------------------------


def basic_composition(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """``(k epsilon, k delta)``: k releases of an (epsilon, delta)-DP mechanism (Theorem ``thm-comp-sequential``, and its (epsilon, delta) form)."""
    eps = check_real(epsilon, "epsilon", low=0.0)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    k = _k(k)
    return _mul(k, eps), min(1.0, _mul(k, dlt))


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    """Dwork, Rothblum and Vadhan (2010), Theorem III.3 (``acc-eq-advanced``): k releases of an (epsilon, delta)-DP
    mechanism are ``(epsilon sqrt(2 k ln(1/delta')) + k epsilon (e^epsilon - 1), k delta + delta')``-DP."""
    eps = check_real(epsilon, "epsilon", low=0.0)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    k = _k(k)
    dp = check_real(delta_prime, "delta_prime", low=0.0, high=1.0, low_open=True, high_open=True)
    first = _mul(eps, math.sqrt(2.0 * k * math.log(1.0 / dp)))
    second = _mul(_mul(k, eps), math.expm1(eps) if eps < 700 else math.inf)
    return first + second, min(1.0, _mul(k, dlt) + dp)


def _log_binomial_pmf_terms(k: int, epsilon: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For the k-fold randomized response at epsilon: ``ln P(i)`` and ``ln Q(i)``, i = 0..k ones."""
    i = np.arange(k + 1, dtype=np.float64)
    log_comb = special.gammaln(k + 1.0) - special.gammaln(i + 1.0) - special.gammaln(k - i + 1.0)
    log_norm = k * np.logaddexp(0.0, epsilon)
    return log_comb + i * epsilon - log_norm, log_comb + (k - i) * epsilon - log_norm


def optimal_composition_delta(epsilon: float, k: int, epsilon_total: float, delta: float = 0.0) -> float:
    """The smallest delta_total such that k releases of any (epsilon, delta)-DP mechanism are
    (epsilon_total, delta_total)-DP (Kairouz, Oh and Viswanath 2015, Theorem 3.3; ``acc-eq-optimal``):

        1 - (1 - delta)^k (1 - sum_i P(i) (1 - e^{epsilon_total} Q(i) / P(i))_+)

    with P, Q the laws of the number of ones in k randomized responses.  Exact up to rounding (each
    term in log space).
    """
    eps = check_real(epsilon, "epsilon", low=0.0, high=1e4)
    k = _k(k, MAX_OPTIMAL_K)
    eps_t = check_real(epsilon_total, "epsilon_total", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    if eps_t == math.inf:
        hockey = 0.0
    else:
        log_p, log_q = _log_binomial_pmf_terms(k, eps)
        gap = log_q + eps_t - log_p  # ln(e^{eps_t} Q / P) <= 0 where the term is positive
        keep = gap < 0
        with np.errstate(under="ignore"):
            terms = np.exp(log_p[keep]) * -np.expm1(gap[keep])
        hockey = float(min(1.0, terms.sum()))
    if dlt == 0.0:
        return hockey
    survive = _exp(k * math.log1p(-dlt)) if dlt < 1.0 else 0.0
    return float(min(1.0, max(0.0, 1.0 - survive * (1.0 - hockey))))


def optimal_composition_epsilon(epsilon: float, k: int, delta_total: float, delta: float = 0.0) -> float:
    """The smallest epsilon_total with :func:`optimal_composition_delta` <= ``delta_total``, by
    bisection on [0, k epsilon] to 1e-12 relative (``math.inf`` if even ``k epsilon`` does not do)."""
    eps = check_real(epsilon, "epsilon", low=0.0, high=1e4)
    k = _k(k, MAX_OPTIMAL_K)
    target = check_real(delta_total, "delta_total", low=0.0, high=1.0)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    hi = k * eps
    if optimal_composition_delta(eps, k, hi, dlt) > target:
        return math.inf
    if optimal_composition_delta(eps, k, 0.0, dlt) <= target:
        return 0.0
    return _smallest_epsilon(lambda e: optimal_composition_delta(eps, k, e, dlt), target, hi)


def _smallest_epsilon(delta_of: Callable[[float], float], target: float, hi: float) -> float:
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


def tradeoff_beta(alpha: Any, epsilon: float, delta: float = 0.0) -> NDArray[np.float64]:
    """The smallest type II error beta of any test at type I error ``alpha`` against an
    (epsilon, delta)-DP mechanism (Kairouz, Oh and Viswanath 2015, Theorem 2.1; ``acc-eq-tradeoff``):

        beta >= max(0, 1 - delta - e^epsilon alpha, e^-epsilon (1 - delta - alpha)).
    """
    a = check_float_array(alpha, "alpha", finite=True)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("alpha must lie in [0, 1]")
    eps = check_real(epsilon, "epsilon", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        first = 1.0 - dlt - np.where(a == 0, 0.0, _exp(eps) * a)
        second = _exp(-eps) * (1.0 - dlt - a)
    return np.maximum(0.0, np.maximum(first, second))


def group_privacy(epsilon: float, k: int, delta: float = 0.0) -> tuple[float, float]:
    """Datasets that differ in k records: ``(k epsilon, delta (e^{k epsilon} - 1) / (e^epsilon - 1))``,
    the second at most ``k e^{(k-1) epsilon} delta`` (Theorem ``thm-group-privacy``)."""
    eps = check_real(epsilon, "epsilon", low=0.0)
    k = _k(k)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    if dlt == 0.0:
        return _mul(k, eps), 0.0
    if eps == 0.0:
        return 0.0, min(1.0, _mul(k, dlt))
    # delta * sum_{i<k} e^{i eps}, in log space: ln delta + ln(e^{k eps} - 1) - ln(e^eps - 1)
    k_eps = _mul(k, eps)
    log_num = k_eps + math.log(-math.expm1(-k_eps)) if k_eps != math.inf else math.inf
    log_den = eps + math.log(-math.expm1(-eps))
    log_total = math.log(dlt) + log_num - log_den
    return k_eps, min(1.0, _exp(log_total)) if log_total < 1.0 else 1.0


# ---------------------------------------------------------------------------------------------
# Renyi DP and zero-concentrated DP
# ---------------------------------------------------------------------------------------------


def rdp_gaussian(order: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The Renyi divergence of order ``order`` between ``N(0, sigma^2)`` and ``N(Delta_2, sigma^2)``:
    ``order Delta_2^2 / (2 sigma^2)`` (Mironov 2017, Proposition 7; ``acc-eq-rdp-gaussian``)."""
    a = check_real(order, "order", low=1.0, low_open=True)
    s = check_positive(sigma, "sigma")
    d = check_positive(sensitivity, "sensitivity")
    with np.errstate(over="ignore", under="ignore"):
        ratio = float(np.float64(d) / np.float64(s))
        value = float(np.float64(a) * np.float64(ratio) ** 2 / 2.0)
    return value if math.isfinite(value) else math.inf


def rdp_subsampled_gaussian(order: int, sigma: float, sampling_probability: float) -> float:
    """RDP of the Poisson-subsampled Gaussian mechanism at an integer ``order`` >= 2 (Mironov, Talwar
    and Zhang 2019, Section 3.3; ``acc-eq-subsampled``), for a query of l2 sensitivity 1 and noise ``N(0, sigma^2)``:

        (1 / (order - 1)) ln sum_{j=0}^{order} C(order, j) (1 - q)^{order - j} q^j exp((j^2 - j) / (2 sigma^2)),

    the divergence ``D_order((1 - q) N(0, sigma^2) + q N(1, sigma^2) || N(0, sigma^2))``, summed in log space.
    """
    a = check_int(order, "order", minimum=2, maximum=MAX_ORDER)
    s = check_positive(sigma, "sigma")
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    if q == 1.0:
        return rdp_gaussian(a, s)
    j = np.arange(a + 1, dtype=np.float64)
    log_comb = special.gammaln(a + 1.0) - special.gammaln(j + 1.0) - special.gammaln(a - j + 1.0)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        log_q = math.log(q)
        log_1mq = math.log1p(-q)
        inv = np.float64(1.0) / (np.float64(2.0) * s * s)
        coef = j * j - j
        terms = log_comb + (a - j) * log_1mq + j * log_q + np.where(coef == 0, 0.0, coef * inv)
    if not np.all(np.isfinite(terms) | (terms == -np.inf)) or np.any(terms == np.inf):
        return math.inf
    value = float(special.logsumexp(terms)) / (a - 1)
    return max(0.0, value) if math.isfinite(value) else math.inf


def rdp_to_dp(orders: Any, rdp: Any, delta: float, *, method: str = "improved") -> tuple[float, float]:
    """``(epsilon, order)``: the smallest epsilon over the orders for which RDP gives (epsilon, delta)-DP.

    ``"classic"``: Mironov (2017), Proposition 3, ``epsilon = rdp + ln(1/delta) / (order - 1)`` (``acc-eq-rdp-classic``).
    ``"improved"``: Canonne, Kamath and Steinke (2020), Proposition 12 (also Asoodeh et al. 2021),
    ``epsilon = rdp + ln(1 - 1/order) - (ln delta + ln order) / (order - 1)`` (``acc-eq-rdp-improved``), the conversion
    dp-accounting uses.  Orders at or below 1 are refused.
    """
    a = check_float_array(orders, "orders", finite=True, ndim=1, min_size=1)
    r = check_float_array(rdp, "rdp", ndim=1, min_size=1)
    if a.shape != r.shape:
        raise ValueError(f"orders and rdp must have the same length, got {a.size} and {r.size}")
    if np.any(a <= 1.0):
        raise ValueError("orders must all be > 1")
    if np.any(r < 0) or np.any(r == -np.inf):
        raise ValueError("rdp must hold non-negative values (inf allowed)")
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    method = check_choice(method, "method", ("classic", "improved"))
    with np.errstate(over="ignore", invalid="ignore"):
        if method == "classic":
            eps = r + math.log(1.0 / dlt) / (a - 1.0)
        else:
            eps = r + np.log1p(-1.0 / a) - (math.log(dlt) + np.log(a)) / (a - 1.0)
    eps = np.where(np.isfinite(r), eps, np.inf)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(a[best])


def zcdp_gaussian(sigma: float, sensitivity: float = 1.0) -> float:
    """The Gaussian mechanism is rho-zCDP with ``rho = Delta_2^2 / (2 sigma^2)`` (Bun and Steinke 2016,
    Proposition 1.6): its RDP curve divided by the order."""
    return rdp_gaussian(2.0, sigma, sensitivity) / 2.0


def zcdp_to_dp(rho: float, delta: float) -> float:
    """rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP (Bun and Steinke 2016, Proposition 1.3;
    ``acc-eq-zcdp``)."""
    r = check_real(rho, "rho", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    if r == math.inf:
        return math.inf
    return r + 2.0 * math.sqrt(r * math.log(1.0 / dlt))


# ---------------------------------------------------------------------------------------------
# privacy-loss distributions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacyLossDistribution:
    """A privacy-loss distribution on the grid ``{(offset + m) * grid}``: ``pmf[m]`` is the probability,
    under the first dataset, that the privacy loss rounded *up* to the grid equals ``(offset + m) *
    grid``; ``infinity_mass`` is the probability of an infinite (or truncated) loss.  Rounding up
    makes every delta computed from it an upper bound; a PLD with ``pessimistic=False``
    rounds down instead and gives lower bounds.
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
        if pmf.size > 10**8:
            raise ValueError(f"pmf has {pmf.size:,} entries, more than the limit of 10^8")
        mass = check_real(self.infinity_mass, "infinity_mass", low=0.0, high=1.0)
        check_bool(self.pessimistic, "pessimistic")
        if not abs(pmf.sum() + mass - 1.0) <= 1e-6:
            raise ValueError(f"pmf and infinity_mass must sum to 1, got {pmf.sum() + mass!r}")
        pmf = pmf.copy()
        pmf.setflags(write=False)
        object.__setattr__(self, "pmf", pmf)

    @property
    def losses(self) -> NDArray[np.float64]:
        """The loss of each entry of ``pmf``."""
        return (self.offset + np.arange(self.pmf.size)) * self.grid

    def delta(self, epsilon: float) -> float:
        """``infinity_mass + sum_m pmf[m] (1 - e^{epsilon - l_m})_+`` (Lemma ``lem-adp-delta-from-loss``)."""
        eps = check_real(epsilon, "epsilon", allow_inf=True)
        if eps == math.inf:
            return self.infinity_mass
        l = self.losses
        keep = l > eps
        with np.errstate(under="ignore"):
            value = float(np.sum(self.pmf[keep] * -np.expm1(eps - l[keep])))
        return min(1.0, value + self.infinity_mass)

    def epsilon(self, delta: float) -> float:
        """The smallest epsilon >= 0 with :meth:`delta` <= ``delta`` (``math.inf`` if none), by bisection."""
        target = check_real(delta, "delta", low=0.0, high=1.0)
        if self.infinity_mass > target:
            return math.inf
        if self.delta(0.0) <= target:
            return 0.0
        return _smallest_epsilon(self.delta, target, float(self.losses[-1]))

    def compose(self, k: int, *, tail: float = 1e-15) -> "PrivacyLossDistribution":
        """The PLD of k independent releases (the k-fold convolution), by FFT and binary powers.

        After each convolution, the lower tail of mass at most ``tail / 2`` is moved up to the first
        kept loss and the upper tail of mass at most ``tail / 2`` is moved to infinity: both are
        pessimistic, so :meth:`delta` stays an upper bound.  (An optimistic PLD moves its upper tail
        down to the last kept loss instead.)
        """
        k = _k(k, MAX_PLD_K)
        t = check_real(tail, "tail", low=0.0, high=1e-3)
        result: PrivacyLossDistribution | None = None
        base: PrivacyLossDistribution = self
        while k:
            if k & 1:
                result = base if result is None else _convolve(result, base, t)
            k >>= 1
            if k:
                base = _convolve(base, base, t)
        assert result is not None
        return result


def _truncate(pmf: NDArray[np.float64], tail: float, pessimistic: bool) -> tuple[int, NDArray[np.float64], float]:
    """(first kept index, kept pmf with the lower tail added to its first entry, upper tail mass to
    add to infinity): for ``pessimistic=False`` the upper tail is added to the last entry instead
    and the third value is 0."""
    cum = np.cumsum(pmf)
    total = cum[-1]
    first = int(np.searchsorted(cum, tail / 2.0, side="right"))  # cum[first - 1] <= tail / 2
    upper = total - cum
    last = int(np.argmax(upper <= tail / 2.0))  # the first index whose mass above it is small
    first = min(first, last)
    kept = pmf[first:last + 1].copy()
    kept[0] += cum[first - 1] if first > 0 else 0.0
    if not pessimistic:
        kept[-1] += float(upper[last])
        return first, kept, 0.0
    return first, kept, float(upper[last])


def _convolve(a: PrivacyLossDistribution, b: PrivacyLossDistribution, tail: float) -> PrivacyLossDistribution:
    if a.grid != b.grid or a.pessimistic != b.pessimistic:
        raise ValueError("the two PLDs must share their grid and their rounding")
    pmf = np.clip(signal.fftconvolve(a.pmf, b.pmf), 0.0, None)
    first, kept, upper = _truncate(pmf, tail, a.pessimistic)
    inf_mass = 1.0 - (1.0 - a.infinity_mass) * (1.0 - b.infinity_mass) + upper
    inf_mass = min(1.0, inf_mass)
    kept = kept * ((1.0 - inf_mass) / kept.sum()) if kept.sum() > 0 else kept
    return PrivacyLossDistribution(a.grid, a.offset + b.offset + first, kept, inf_mass, a.pessimistic)


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
    """
    s = check_real(sigma, "sigma", low=1e-3, high=1e6)
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    direction = check_choice(direction, "direction", ("remove", "add"))
    h = check_real(grid, "grid", low=1e-6, high=1.0)
    t = check_real(tail, "tail", low=1e-300, high=1e-3)
    pessimistic = check_bool(pessimistic, "pessimistic")
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
                # e^x - (1 - q) > 0, computed as e^{log(1-q)} expm1(x - log(1-q))
                inner = np.log(np.expm1(x - log1mq)) + log1mq - math.log(q)
            return 0.5 + s2 * inner

        l_lo, l_hi = (log1mq, math.inf) if direction == "remove" else (-math.inf, -log1mq)

    increasing = direction == "remove"

    def below(l: NDArray) -> NDArray:
        """P[L <= l]."""
        y = y_of(l)
        return p_cdf(y, upper=False) if increasing else p_cdf(y, upper=True)

    def above(l: NDArray) -> NDArray:
        """P[L > l]."""
        y = y_of(l)
        return p_cdf(y, upper=True) if increasing else p_cdf(y, upper=False)

    # The range: the losses whose lower and upper tails are below tail / 2, by doubling a bracket.
    def edge(tail_of: Any, start: float, step: float, limit: float) -> float:
        x = start
        with np.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
            while abs(x) < 1e6 and not (x * step >= limit * step) and not tail_of(np.array([x]))[0] <= t / 2:
                x += step
                step *= 2.0
        return min(x, limit) if step > 0 else max(x, limit)

    l_top = edge(above, 0.0, 0.5 * h + 1e-3, l_hi)
    l_bottom = edge(below, 0.0, -(0.5 * h + 1e-3), l_lo)
    m_lo, m_hi = math.floor(l_bottom / h) - 1, math.ceil(l_top / h) + 1
    if m_hi - m_lo > 5 * 10**7:
        raise ValueError("grid is too fine for this sigma: more than 5e7 cells")
    m = np.arange(m_lo, m_hi + 1)
    l = m * h
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
        offset = int(m_lo)
    else:  # at its lower end l_{m-1}; above l_{m_hi}: at l_{m_hi}
        pmf = np.concatenate([mass, [sf[-1]]])
        pmf[0] += cdf[0]
        offset = int(m_lo)
    inf_mass = float(sf[-1]) if pessimistic else 0.0
    first, kept, upper = _truncate(pmf, t, pessimistic)
    inf_mass = min(1.0, inf_mass + upper)
    if kept.sum() > 0:
        kept = kept * ((1.0 - inf_mass) / kept.sum())
    return PrivacyLossDistribution(h, offset + first, kept, inf_mass, pessimistic)


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
    bound, tight to the grid; ``pessimistic=False`` gives the matching lower bound).  ``"rdp"``: the subsampled Gaussian's RDP at :data:`ORDERS`, times k,
    converted with :func:`rdp_to_dp` (``"improved"``).
    """
    s = check_real(sigma, "sigma", low=1e-3, high=1e6)
    k = _k(k, MAX_PLD_K)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    method = check_choice(method, "method", ("pld", "rdp"))
    if method == "rdp":
        rdp = np.array([rdp_subsampled_gaussian(a, s, q) for a in ORDERS], dtype=float)
        with np.errstate(over="ignore"):
            total = rdp * k
        return rdp_to_dp(ORDERS, total, dlt)[0]
    h = check_real(grid, "grid", low=1e-6, high=1.0)
    pes = check_bool(pessimistic, "pessimistic")
    directions = ("remove", "add") if q < 1.0 else ("remove",)
    return max(pld_gaussian(s, sampling_probability=q, direction=d, grid=h, pessimistic=pes).compose(k).epsilon(dlt)
               for d in directions)
