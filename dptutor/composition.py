"""Composition: how privacy budgets add up (Dwork and Roth 2014, Section 3.5; McSherry 2009).

- :func:`sequential_epsilon`: k mechanisms on the *same* data with budgets eps_1..eps_k are
  (eps_1 + ... + eps_k)-DP.
- :func:`parallel_epsilon`: mechanisms on *disjoint* parts of the data are max(eps_i)-DP.
- :class:`Budget`: a budget as something spent, one release at a time, refusing to overspend
  (exact rational arithmetic: an account never overspends by rounding).
- :func:`repeated_laplace_box_loss`: the exact privacy loss of the event "all k outputs <= t" for
  k Laplace releases of one bit (0 vs 1), the event that attains k * epsilon.
- :func:`majority_vote_loss`: the exact privacy loss of a majority vote over the k releases.
- :func:`sequential_composition_proof`: the steps of the composition proof, checked in sympy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable

import numpy as np
import sympy as sp

from dptutor._validate import MAX_ELEMENTS, check_bool, check_int, check_positive, check_real, check_sequence, checked_toward, shown
from dptutor._validate.rounding import mul_rounded
from dptutor.renyi import round_up

_EPS = 2.0**-52  # one unit in the last place of 1
_LINEAR_BELOW = 1e-100  # below this epsilon the vote's loss is slope * epsilon to far below an ulp

__all__ = [
    "sequential_epsilon",
    "parallel_epsilon",
    "Budget",
    "repeated_laplace_box_loss",
    "majority_vote_loss",
    "CompositionProof",
    "sequential_composition_proof",
]


def _epsilon(value: object, name: str, *, up: bool = True) -> float:
    """``value`` checked positive, as the double on the safe side of its exact value: at least it (a budget
    spent) or at most it (``up=False``: a total).  The nearest double (what ``float`` gives) was below a
    ``Fraction(1, 3)`` or a long double ``1 + 2**-60``, so their sum understated the budget spent."""
    eps = checked_toward(value, name, check_positive, up=up)
    if eps == 0.0:
        raise ValueError(f"{name} must be representable as a positive float, got {shown(value)} (below the smallest "
                         "positive double)")
    return eps


def _check_epsilons(epsilons: Iterable[float], name: str) -> list[float]:
    return [_epsilon(e, f"{name}[{i}]") for i, e in enumerate(check_sequence(epsilons, name))]


def sequential_epsilon(epsilons: Iterable[float]) -> float:
    """The budget of running mechanisms with budgets ``epsilons`` on the same data: their sum.

    Parameters
    ----------
    epsilons : sequence of float
        The budgets (each positive).

    Returns
    -------
    float
        Their exact sum rounded UP (the smallest double at least the exact sum: never below it); an epsilon
        that is no double (a ``Fraction``, a long double, an int above 2**53) counts as the double above it.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.composition import sequential_epsilon
    >>> sequential_epsilon([0.5, 0.25])
    0.75
    """
    values = _check_epsilons(epsilons, "epsilons")
    try:
        total = math.fsum(values)  # correctly rounded to nearest: possibly below the exact sum
        if total < math.inf and math.fsum(values + [-total]) > 0.0:  # fsum is exact inside: the residual's sign
            total = math.nextafter(total, math.inf)
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("epsilons add up to more than the largest float")
    return total


def parallel_epsilon(epsilons: Iterable[float]) -> float:
    """The budget of mechanisms run on disjoint parts of the data: the largest of ``epsilons``.

    Parameters
    ----------
    epsilons : sequence of float
        The budgets (each positive).

    Returns
    -------
    float
        The largest of them.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.composition import parallel_epsilon
    >>> parallel_epsilon([0.5, 0.25])
    0.5
    """
    return max(_check_epsilons(epsilons, "epsilons"))


@dataclass(frozen=True)
class Budget:
    """A privacy budget ``total`` of which ``spent`` (one entry per release) has been used.

    Immutable: :meth:`spend` returns a new ``Budget`` and raises ``ValueError`` (naming
    ``epsilon``) when a release would exceed the total, so an overspending loop fails loudly
    before the release instead of after it.  The account is kept in exact rational arithmetic
    (each float counts as the ``Fraction`` it exactly equals), so rounding never lets a release
    through: the double ``0.1`` is slightly more than 1/10, so ten releases of ``0.1`` overdraw a
    total of ``1.0`` and the tenth is refused.  :meth:`split` hands out shares that fit exactly.  A value that
    is no double (a ``Fraction``, a long double) is stored as the double on the safe side of it: above it for a
    release, below it for ``total``.

    Parameters
    ----------
    total : float
        The whole budget (positive).
    spent : tuple of float, default ()
        The budgets already used, one per release (each positive; at most ``total`` in all).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.composition import Budget
    >>> Budget(1.0).spend(0.25).remaining
    0.75
    """

    total: float
    spent: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", _epsilon(self.total, "total", up=False))
        spent = tuple(_epsilon(e, f"spent[{i}]") for i, e in enumerate(check_sequence(self.spent, "spent", min_len=0)))
        used = sum((Fraction(e) for e in spent), Fraction(0))
        if used > Fraction(self.total):  # rounded up for the message: float() raised OverflowError past the largest double
            shown = f"{round_up(used):g}" if round_up(used) < math.inf else "more than the largest double"
            raise ValueError(f"spent adds up to {shown}, more than total = {self.total:g}")
        object.__setattr__(self, "spent", spent)

    @property
    def used_exactly(self) -> Fraction:
        """The exact sum of ``spent``, the budget used so far (sequential composition).

        Returns
        -------
        fractions.Fraction
            The exact sum of ``spent``.

        Notes
        -----
        It raises no exception: the fields were checked when the budget was made.
        """
        return sum((Fraction(e) for e in self.spent), Fraction(0))

    @property
    def remaining_exactly(self) -> Fraction:
        """What is left, exactly; never negative.

        Returns
        -------
        fractions.Fraction
            ``total`` minus the exact sum of ``spent``.

        Notes
        -----
        It raises no exception: the fields were checked when the budget was made.
        """
        return Fraction(self.total) - self.used_exactly

    @property
    def used(self) -> float:
        """The budget used so far, rounded up to a double, so that it never understates the privacy spent.

        Returns
        -------
        float
            The smallest double at least :attr:`used_exactly`.

        Notes
        -----
        It raises no exception: the fields were checked when the budget was made.
        """
        used = self.used_exactly
        value = float(used)
        if Fraction(value) < used:
            value = math.nextafter(value, math.inf)
        return value

    @property
    def remaining(self) -> float:
        """What is left, rounded down to a double, so that spending it never overdraws the account.

        Returns
        -------
        float
            The largest double at most :attr:`remaining_exactly`.

        Notes
        -----
        It raises no exception: the fields were checked when the budget was made.
        """
        left = self.remaining_exactly
        value = float(left)
        if Fraction(value) > left:
            value = math.nextafter(value, 0.0)
        return value

    def spend(self, epsilon: float) -> "Budget":
        """The budget after one more release with budget ``epsilon``; refuses to overdraw, exactly.

        Parameters
        ----------
        epsilon : float
            The release's budget (positive).

        Returns
        -------
        Budget
            A new budget with ``epsilon`` appended to ``spent``.

        Raises
        ------
        TypeError
            If ``epsilon`` is not a real number.
        ValueError
            If ``epsilon`` is not positive, or exceeds the remaining budget exactly.
        """
        eps = _epsilon(epsilon, "epsilon")
        if Fraction(eps) > self.remaining_exactly:
            raise ValueError(
                f"epsilon = {eps!r} exceeds the remaining budget {float(self.remaining_exactly)!r} "
                f"(total {self.total:g}, {len(self.spent)} releases so far)"
            )
        return Budget(self.total, self.spent + (eps,))

    def split(self, k: int) -> list[float]:
        """``k`` shares of what remains, each a double, that add up to at most the remainder exactly.

        ``remaining / k`` rounded to the nearest double can exceed the exact ``k``-th part (``1 / 10``
        does), so each share is rounded down: spending all ``k`` shares never overdraws.

        Parameters
        ----------
        k : int
            The number of shares, in ``[1, 2**28]`` (``dptutor._validate.MAX_ELEMENTS``: the list is
            built in memory, 8 bytes a share).

        Returns
        -------
        list of float
            ``k`` equal shares, rounded down.

        Raises
        ------
        TypeError
            If ``k`` is not an integer.
        ValueError
            If ``k`` is out of range, or the shares would be zero.
        """
        k = check_int(k, "k", minimum=1, maximum=MAX_ELEMENTS)  # 10**9 shares exhausted the memory
        exact = self.remaining_exactly / k
        share = float(exact)
        if Fraction(share) > exact:
            share = math.nextafter(share, 0.0)
        if share <= 0.0:
            raise ValueError(f"k = {k} shares of the remaining budget would each be zero")
        return [share] * k


def repeated_laplace_box_loss(k: int, epsilon: float, t: float = 0.0) -> tuple[float, float]:
    """``(loss, log_prob)`` of the event "all k outputs <= t" for k releases of one bit.

    Each release adds ``Lap(0, 1/epsilon)`` noise to the bit (0 on ``D``, 1 on ``D'``), so the
    event has probability ``F(t)^k`` on ``D`` and ``F(t - 1)^k`` on ``D'`` (``F`` the Laplace CDF),
    and ``loss = k (ln F(t) - ln F(t - 1))``, which is exactly ``k * epsilon`` for ``t <= 0``:
    the composition bound is attained.  ``log_prob = k ln F(t)`` is the event's log-probability on
    ``D`` (how rarely an attacker sees it).  Computed in closed form (log1p, expm1); the loss is rounded
    UP (outward) by a few ulps, never below its exact value (it underflows to 0 only where the exact loss
    is below ``e^-700``, with epsilon and t near the largest floats).

    Parameters
    ----------
    k : int
        The number of releases, in ``[1, 10**15]``.
    epsilon : float
        Each release's budget (positive).
    t : float, default 0.0
        The event's threshold.

    Returns
    -------
    tuple of float
        ``(loss, log_prob)``: the event's privacy loss and its log-probability on ``D``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.composition import repeated_laplace_box_loss
    >>> repeated_laplace_box_loss(3, 0.5)[0]
    1.5
    """
    k = check_int(k, "k", minimum=1, maximum=10**15)
    eps = check_positive(epsilon, "epsilon")
    t = check_real(t, "t")
    if t <= 0.0:  # both CDFs are e^((t - loc) eps) / 2: the ratio is e^eps exactly, even far in the tail
        return mul_rounded(k, eps), k * (eps * t - math.log(2.0))
    # F(t) = 1 - e^(-t eps) / 2; F(t - 1) = e^((t - 1) eps) / 2 for t <= 1, else 1 - e^(-(t - 1) eps) / 2.
    # Their log-ratio in closed forms free of cancellation (scipy's two log-CDFs lost it all for tiny
    # epsilon or large t, giving a loss of 0) and of overflow.
    log_f0 = math.log1p(-0.5 * math.exp(-t * eps))
    if t <= 1.0:  # ln(2 - e^(-t eps)) + (1 - t) eps
        loss = math.log1p(-math.expm1(-t * eps)) + (1.0 - t) * eps
    else:  # ln(1 + (e^(-(t - 1) eps) - e^(-t eps)) / (2 - e^(-(t - 1) eps)))
        shifted = math.exp(-(t - 1.0) * eps)
        loss = math.log1p(shifted * -math.expm1(-eps) / (2.0 - shifted))
    if loss == 0.0:  # underflowed (epsilon and t near the largest floats): below every positive double
        return 0.0, k * log_f0
    # each closed form is good to a few ulps, plus (for t > 1) e^-(t - 1) eps's error, 2 ulps of its exponent
    # (4 * ((t - 1) eps), not (4 (t - 1)) eps: that overflowed to inf for t near the largest double)
    up = 1.0 + _EPS * (16.0 + (4.0 * ((t - 1.0) * eps) if t > 1.0 else 0.0))
    return mul_rounded(k, math.nextafter(loss * up, math.inf)), k * log_f0


def majority_vote_loss(k: int, epsilon: float) -> float:
    """The exact privacy loss of a majority vote over k Laplace releases of one bit.

    Each release adds ``Lap(0, 1/epsilon)`` noise to the bit (0 on ``X``, 1 on ``X'``); the attacker
    rounds each output (``>= 1/2`` counts as 1) and guesses 1 when more than half are ones (a tie
    is guessed 0).  A release is rounded to 1 with probability ``p0 = e^(-epsilon/2) / 2`` on ``X``
    and ``p1 = 1 - p0`` on ``X'``, independently, so the number of ones is binomial and
    ``loss = max over the two guesses of |ln P(guess | X) - ln P(guess | X')|``, computed with
    ``scipy.stats.binom``'s log survival and log CDF (no underflow for large k).  The result is rounded
    UP (outward) by a bound on its error (about 1e-14 absolute, a few ulps relative for tiny epsilon) and
    capped at ``k * epsilon`` rounded up: it is never below the exact loss.  For epsilon below 1e-100 the
    loss is linear in epsilon to far below an ulp and is computed from its slope, so it is never 0.

    Parameters
    ----------
    k : int
        The number of releases, in ``[1, 10**7]``.
    epsilon : float
        Each release's budget (positive).

    Returns
    -------
    float
        The vote's exact privacy loss (at most ``k * epsilon``).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    k = check_int(k, "k", minimum=1, maximum=10**7)
    eps = check_positive(epsilon, "epsilon")
    cap = mul_rounded(k, eps)  # the exact loss is at most k epsilon (composition, then post-processing)
    cut = k // 2  # guess 1 iff ones > k/2, i.e. ones >= cut + 1
    if eps < _LINEAR_BELOW:  # loss = slope eps (1 + O(eps)): from the slope, free of underflow (was 0 at 5e-324)
        slope = _close_tails_loss(k, cut, _LINEAR_BELOW) / _LINEAR_BELOW
        return min(cap, mul_rounded(slope * (1.0 + 64.0 * _EPS), eps))
    loss, error = _vote_loss(k, cut, eps)
    return min(cap, math.nextafter(loss + error, math.inf))


def _vote_loss(k: int, cut: int, eps: float) -> tuple[float, float]:
    """The vote's loss as computed, and a bound on its error (scipy's tails are good to about 1e-15 relative,
    so each log to about 1e-15 absolute; the sums in logs to a few ulps of their terms' size)."""
    from scipy import special, stats

    p0 = 0.5 * math.exp(-eps / 2.0)
    if -math.expm1(-eps / 2.0) * math.sqrt(k) < 1e-3:  # p0 and 1 - p0 too close: the logs' difference cancels
        loss = _close_tails_loss(k, cut, eps)
        return loss, 64.0 * _EPS * loss
    # under X' the number of zeros is Bin(k, p0): its tails need no 1 - (1 - p0), which lost p0's digits (for
    # epsilon = 63.2 and k = 1 the loss was 1.6e-4 relative off, as 1 - p0 happened to round)
    with np.errstate(divide="ignore", under="ignore"):
        log_one = [float(stats.binom.logsf(cut, k, p0)), float(stats.binom.logcdf(k - cut - 1, k, p0))]
        log_zero = [float(stats.binom.logcdf(cut, k, p0)), float(stats.binom.logsf(k - cut - 1, k, p0))]
    size = max(abs(v) for v in log_one + log_zero)
    if math.isfinite(size):
        error = 64.0 * _EPS * (1.0 + size)
    else:  # a tail (or p0) underflowed: sum it in logs
        log_p0 = -eps / 2.0 - math.log(2.0)
        log_one, log_zero = _log_binomial_tails(k, cut, log_p0)
        size = max(abs(v) for v in log_one + log_zero)
        error = 16.0 * _EPS * (1.0 + size + 3.0 * float(special.gammaln(k + 1.0)) + k * (abs(log_p0) + 1.0))
    return max(abs(log_one[0] - log_one[1]), abs(log_zero[0] - log_zero[1])), error


def _close_tails_loss(k: int, cut: int, eps: float) -> float:
    """The vote's loss when ``w = (1 - p0) - p0 = 1 - e^(-eps/2)`` is small (``w sqrt(k) < 1e-3``): the gap
    ``P(B > cut | 1 - p0) - P(B > cut | p0)`` is the integral over [p0, 1 - p0] of the Beta(cut + 1, k - cut)
    density (the derivative of the binomial tail in p), by 5-point Gauss-Legendre (error ~(w sqrt(k))^10), and
    each loss is ``ln(1 + gap / tail)``, with no difference of logs (which cancelled to 0 for eps = 1e-300)."""
    from scipy import stats

    w = -math.expm1(-eps / 2.0)
    nodes, weights = np.polynomial.legendre.leggauss(5)
    gap = 0.5 * w * float(np.dot(weights, stats.beta.pdf(0.5 + 0.5 * w * nodes, cut + 1, k - cut)))
    tail0 = float(stats.binom.sf(cut, k, 0.5 * math.exp(-eps / 2.0)))  # P(B > cut | p0), near 1/2: no underflow
    return max(math.log1p(gap / tail0), math.log1p(gap / (1.0 - tail0 - gap)))


def _log_binomial_tails(k: int, cut: int, log_p0: float) -> tuple[list[float], list[float]]:
    """``([ln P(B > cut) for p0, 1 - p0], [ln P(B <= cut) for p0, 1 - p0])`` for ``B ~ Bin(k, p)``, in log space."""
    from scipy import special

    i = np.arange(k + 1, dtype=np.float64)
    log_comb = special.gammaln(k + 1.0) - special.gammaln(i + 1.0) - special.gammaln(k - i + 1.0)
    log_q0 = math.log1p(-math.exp(log_p0))
    one, zero = [], []
    for lp, lq in ((log_p0, log_q0), (log_q0, log_p0)):
        with np.errstate(over="ignore"):  # i ln p0 below -1e308 for a huge epsilon: -inf, a zero term
            log_pmf = log_comb + i * lp + (k - i) * lq
        one.append(float(special.logsumexp(log_pmf[cut + 1:])))
        zero.append(float(special.logsumexp(log_pmf[:cut + 1])))
    return one, zero


@dataclass(frozen=True)
class CompositionProof:
    """The steps of the sequential composition proof for two Laplace releases, in sympy.

    ``joint_loss``: ln of the ratio of the joint densities of ``(y1, y2)``; ``sum_of_losses``: the
    sum of the two single-release losses; ``factorizes``: sympy proves their difference is 0
    (steps 1-2).  ``region_gaps``: ``(eps1 + eps2) - (L1 + L2)`` for every pair of regions of the
    two outputs (the Laplace chapter's regions, where each loss is a known expression), with
    ``eps_i = Delta_i / b_i`` and ``Delta_i = |f_i(X) - f_i(X')| + g_i`` (``g_i >= 0``: the
    sensitivity bounds the change); ``bound_gap``: the pair "y between the answers" for both outputs;
    ``bounded``: sympy proves every gap non-negative (steps 3-4).

    Parameters
    ----------
    joint_loss, sum_of_losses, bound_gap : sympy.Expr
        The expressions described above.
    factorizes, bounded : bool
        What sympy proved.
    region_gaps : tuple of sympy.Expr, default ()
        ``epsilon_1 + epsilon_2 - loss`` on each region.

    Raises
    ------
    TypeError
        If a field is not of its type.
    """

    joint_loss: sp.Expr
    sum_of_losses: sp.Expr
    factorizes: bool
    bound_gap: sp.Expr
    bounded: bool
    region_gaps: tuple[sp.Expr, ...] = ()

    def __post_init__(self) -> None:
        for field in ("joint_loss", "sum_of_losses", "bound_gap"):
            if not isinstance(getattr(self, field), sp.Expr):
                raise TypeError(f"{field} must be a sympy expression, got {type(getattr(self, field)).__name__}")
        check_bool(self.factorizes, "factorizes")
        check_bool(self.bounded, "bounded")
        if not isinstance(self.region_gaps, tuple) or not all(isinstance(g, sp.Expr) for g in self.region_gaps):
            raise TypeError("region_gaps must be a tuple of sympy expressions")


def sequential_composition_proof() -> CompositionProof:
    """Check the steps of the sequential composition theorem for two Laplace mechanisms in sympy.

    Steps 1-2: with independent noise the joint density is the product of the two densities, so
    the joint privacy loss ``ln(p(y1) q(y2) / (p'(y1) q'(y2)))`` equals ``L1(y1) + L2(y2)``.
    Steps 3-4: on each region of each output the single loss is the closed form of
    :func:`dptutor.symbolic.privacy_loss.laplace_mechanism_privacy_loss` (offsets ``w, r`` and the shift
    ``s = |f(X) - f(X')|``, sympy's ``delta``); with ``b_i = Delta_i / eps_i`` and
    ``Delta_i = s_i + g_i``, ``g_i >= 0``, the gap ``(eps1 + eps2) - (L1 + L2)`` is written over
    the positive ``b_i`` and sympy decides its sign for all 36 pairs of regions.

    Returns
    -------
    CompositionProof
        The proof's steps; ``factorizes`` and ``bounded`` are True.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    from dptutor.symbolic import laplace_mechanism_privacy_loss

    y1, y2, fx1, fxp1, fx2, fxp2 = sp.symbols("y1 y2 f1 f1p f2 f2p", real=True)
    b1, b2 = sp.symbols("b1 b2", positive=True)

    def lap(y: sp.Expr, mu: sp.Expr, b: sp.Expr) -> sp.Expr:
        return sp.exp(-sp.Abs(y - mu) / b) / (2 * b)

    joint = sp.expand_log(
        sp.log(lap(y1, fx1, b1) * lap(y2, fx2, b2) / (lap(y1, fxp1, b1) * lap(y2, fxp2, b2))), force=True
    )
    loss1 = sp.expand_log(sp.log(lap(y1, fx1, b1) / lap(y1, fxp1, b1)), force=True)
    loss2 = sp.expand_log(sp.log(lap(y2, fx2, b2) / lap(y2, fxp2, b2)), force=True)
    total = loss1 + loss2
    factorizes = sp.simplify(joint - total) == 0

    regions = laplace_mechanism_privacy_loss().regions
    b = sp.Symbol("b", positive=True)

    def renamed(expr: sp.Expr, i: int) -> sp.Expr:
        names = {sym: sp.Symbol(f"{sym.name}{i}", **sym.assumptions0) for sym in expr.free_symbols}
        names[b] = (b1, b2)[i - 1]
        return expr.xreplace(names)

    def epsilon_minus_loss(reg, i: int) -> sp.Expr:
        """eps_i - L_i = (Delta_i - L_i b_i) / b_i with Delta_i = s_i + g_i, over the positive b_i."""
        b_i = (b1, b2)[i - 1]
        g_i = sp.Symbol(f"g{i}", nonnegative=True)
        numerator = sp.expand(renamed(reg.delta, i) + g_i - renamed(reg.loss, i) * b_i)
        return numerator / b_i

    gaps = []
    for r1 in regions:
        for r2 in regions:
            gaps.append(epsilon_minus_loss(r1, 1) + epsilon_minus_loss(r2, 2))
    between = [reg for reg in regions if reg.region == "y between"][0]
    return CompositionProof(
        joint_loss=sp.simplify(joint),
        sum_of_losses=sp.simplify(total),
        factorizes=bool(factorizes),
        bound_gap=epsilon_minus_loss(between, 1) + epsilon_minus_loss(between, 2),
        bounded=all(bool(g.is_nonnegative) for g in gaps),
        region_gaps=tuple(gaps),
    )
