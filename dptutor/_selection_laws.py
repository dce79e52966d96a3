"""The exact (or numerically integrated) output laws of the selection mechanisms (:mod:`dptutor.selection`).

The exponential mechanism's probabilities, in floating point and in exact arithmetic, report-noisy-max's
and AboveThreshold's by quadrature, and :func:`max_log_ratio`, the pure-DP loss of two such laws.  Their
samplers live in :mod:`dptutor.selection`, which re-exports every name here (import them from there).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._selection_args import NOISES, answer_array, noise_scale
from dptutor._validate import check_choice, check_float_array, check_positive, check_real, check_sequence, is_bool, shown

__all__ = [
    "MAX_EXACT_SCORE",
    "exponential_mechanism_probabilities",
    "exponential_mechanism_exact",
    "report_noisy_max_probabilities",
    "above_threshold_probabilities",
    "max_log_ratio",
]

#: The largest absolute integer score :func:`exponential_mechanism_exact` accepts (its fractions
#: have ``|score|``-th powers of ``base`` in them).
MAX_EXACT_SCORE: int = 1000


def _piecewise_quadrature(fn: Any, points: list[float], lo: float, hi: float, width: float) -> NDArray[np.float64]:
    """``integral_lo^hi fn(r) dr`` for a vectorised ``fn`` smooth between ``points`` (one column per integrand, all at
    once): Gauss-Legendre with 40 nodes on every piece of width at most ``width`` (exact to rounding for these)."""
    edges = sorted({lo, hi, *(p for p in points if lo < p < hi)})
    nodes, weights = np.polynomial.legendre.leggauss(40)
    cuts = []
    for a, b in zip(edges[:-1], edges[1:]):
        pieces = max(1, math.ceil((b - a) / width))
        cuts.append(np.linspace(a, b, pieces + 1))
    grid = np.concatenate([np.stack([c[:-1], c[1:]], axis=1) for c in cuts])
    mid, half = grid.mean(axis=1), (grid[:, 1] - grid[:, 0]) / 2
    r, w = (mid[:, None] + half[:, None] * nodes[None, :]).ravel(), (half[:, None] * weights[None, :]).ravel()
    sums = []
    with np.errstate(under="ignore"):
        for s in range(0, r.size, 1 << 14):  # in blocks: (nodes, integrands) arrays of 2**14 rows at most
            values = fn(r[s:s + (1 << 14)])
            sums.append(np.ascontiguousarray((values.reshape(values.shape[0], -1) * w[s:s + (1 << 14), None]).T).sum(axis=1))
    return np.sum(sums, axis=0)  # each block's rows by numpy's pairwise sums


# ---------------------------------------------------------------------------------------------
# the exponential mechanism
# ---------------------------------------------------------------------------------------------


def exponential_mechanism_probabilities(scores: Any, epsilon: float, sensitivity: float = 1.0) -> NDArray[np.float64]:
    """``P[output = i] = exp(epsilon u_i / (2 Delta)) / sum_j exp(epsilon u_j / (2 Delta))`` (equation ``sel-eq-exponential``).

    McSherry and Talwar (2007); computed in log space, so no score is too large.

    Parameters
    ----------
    scores : array_like of float, shape (k,)
        The candidates' scores (finite; at most ``10**6``).
    epsilon : float
        The privacy budget (positive).
    sensitivity : float, default 1.0
        The queries' (or scores') sensitivity ``Delta`` (positive).

    Returns
    -------
    numpy.ndarray of float64, shape (k,)
        The probability of each candidate (they sum to 1).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.selection import exponential_mechanism_probabilities
    >>> exponential_mechanism_probabilities([0.0, 0.0], 1.0).tolist()
    [0.5, 0.5]
    """
    u = answer_array(scores, "scores")
    eps = check_positive(epsilon, "epsilon")
    delta_u = check_positive(sensitivity, "sensitivity")
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        factor = eps / delta_u  # times half the gap: eps / (2 Delta) would underflow to 0 (and 0 * -inf is NaN)
        gap = u / 2 - u.max() / 2  # <= 0 and finite, even for scores +-1e308 apart
        logits = np.where(gap == 0, 0.0, gap * factor)
    if not math.isfinite(factor):
        logits = np.where(gap == 0, 0.0, -np.inf)
    from scipy import special

    return special.softmax(logits)


def exponential_mechanism_exact(scores: Any, base: Any) -> list[Fraction]:
    """Equation ``sel-eq-exponential`` in exact arithmetic: ``P[i] = base^{u_i} / sum_j base^{u_j}`` with integer scores.

    ``base`` is ``exp(epsilon / (2 Delta))`` given as a rational number > 1 (an int or a
    ``Fraction`` with numerator and denominator below 2**64), so every probability is a Fraction;
    the mechanism is then ``epsilon = 2 Delta ln(base)``-DP for scores of sensitivity ``Delta``.

    Parameters
    ----------
    scores : sequence of int
        The scores, integers in ``[-1000, 1000]`` (at most 1000 of them).
    base : int or fractions.Fraction
        ``exp(epsilon / (2 Delta))`` as a rational number > 1 (numerator and denominator below ``2**64``).

    Returns
    -------
    list of fractions.Fraction
        The probability of each candidate (they sum to 1 exactly).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.selection import exponential_mechanism_exact
    >>> exponential_mechanism_exact([0, 1], 3)
    [Fraction(1, 4), Fraction(3, 4)]
    """
    items = check_sequence(scores, "scores")
    if len(items) > 1000:
        raise ValueError(f"scores must have at most 1000 entries for exact arithmetic, got {len(items)}")
    ints = []
    for item in items:
        if is_bool(item) or not isinstance(item, numbers.Integral):
            raise TypeError(f"scores must hold integers, got {type(item).__name__}")
        if abs(int(item)) > MAX_EXACT_SCORE:
            raise ValueError(f"scores must lie in [-{MAX_EXACT_SCORE}, {MAX_EXACT_SCORE}], got {shown(int(item))}")
        ints.append(int(item))
    if is_bool(base) or not isinstance(base, (numbers.Integral, Fraction)):
        raise TypeError(f"base must be an int or a fractions.Fraction, got {type(base).__name__}")
    b = Fraction(base)
    if not b > 1:
        raise ValueError(f"base must be > 1, got {shown(b)}")
    if b.numerator >= 2**64 or b.denominator >= 2**64:
        raise ValueError("base must have a numerator and a denominator below 2**64")
    # Integer weights p^e q^(H-e) over one denominator, e = u - min: no Fraction sums (30+ s for 1000 distinct scores).
    low, top, p, q = min(ints), max(ints) - min(ints), int(b.numerator), int(b.denominator)  # numpy ints: Python ints
    weights, w, exps = {}, q**top, sorted({u - low for u in ints})
    for a, e in zip([0, *exps], exps):
        weights[e] = w = w * p ** (e - a) // q ** (e - a)  # p^e q^(H-e) from the previous one: linear-time steps
    total = sum(weights[u - low] for u in ints)
    gp, gq = math.gcd(p**top, total), math.gcd(q**top, total)  # gcd(w_e, total) = gcd(p^e, gp) gcd(q^(H-e), gq)
    probs = {}
    for e, w in weights.items():
        g = (1 if gp == 1 else math.gcd(p**e, gp)) * (1 if gq == 1 else math.gcd(q ** (top - e), gq))
        probs[e] = Fraction(_LowestTerms(w // g, total // g))  # in lowest terms already: no second costly gcd
    return [probs[u - low] for u in ints]


class _LowestTerms:
    """A rational number known to be in lowest terms (denominator positive), to hand to ``Fraction``.

    ``Fraction(r)`` for a ``numbers.Rational`` ``r`` is public API returning a Fraction of the same value, and
    ``numbers.Rational`` asks ``r.numerator`` and ``r.denominator`` to be in lowest terms, so ``fractions`` takes
    them as they are, where ``Fraction(n, d)`` would recompute their gcd (tens of milliseconds each for the
    128,000-bit integers of 1000 distinct scores).  Registered with ``numbers.Rational``, never returned.
    """

    __slots__ = ("numerator", "denominator")

    def __init__(self, numerator: int, denominator: int) -> None:
        self.numerator, self.denominator = numerator, denominator


numbers.Rational.register(_LowestTerms)


# ---------------------------------------------------------------------------------------------
# report-noisy-max and AboveThreshold
# ---------------------------------------------------------------------------------------------


def _integral_answers(answers: object) -> NDArray[np.float64]:
    """The answers of report-noisy-max or AboveThreshold whose law is integrated: at most 50 (one quadrature each)."""
    q = answer_array(answers, "answers")
    if q.size > 50:
        raise ValueError(f"answers must have at most 50 entries for the integrals, got {q.size}")
    return q


def _noise_law(noise: str, scale: float) -> Any:
    from scipy import stats

    return stats.laplace(0.0, scale) if noise == "laplace" else stats.expon(0.0, scale)


def report_noisy_max_probabilities(
    answers: Any, epsilon: float, *, noise: str = "laplace", sensitivity: float = 1.0
) -> NDArray[np.float64]:
    """``P[i] = integral f(z - q_i) prod_{j != i} F(z - q_j) dz`` for each index (step 1 of the
    proof that report-noisy-max is private), by quadrature.

    ``f`` and ``F`` are the density and CDF of the noise; Gauss-Legendre on the pieces between kinks,
    accurate to about 1e-13 absolute.
    At most 50 answers (one quadrature per answer).

    Parameters
    ----------
    answers : array_like of float, shape (k,)
        The query answers (finite; at most 50).
    epsilon : float
        The privacy budget (positive).
    noise : {'laplace', 'exponential'}, default 'laplace'
        The noise, of scale ``2 Delta / epsilon``.
    sensitivity : float, default 1.0
        The queries' (or scores') sensitivity ``Delta`` (positive).

    Returns
    -------
    numpy.ndarray of float64, shape (k,)
        ``P[i]``, the probability that index ``i`` is reported.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    q = _integral_answers(answers)
    noise = check_choice(noise, "noise", NOISES)
    eps = check_positive(epsilon, "epsilon")
    scale = noise_scale(2.0, check_positive(sensitivity, "sensitivity"), eps)
    if not q.max() / 2 - q.min() / 2 <= 500.0 * scale < 1e300:  # halves: no overflow for answers near +-1e308
        raise ValueError("answers, epsilon and sensitivity put the answers more than 1000 noise scales apart (or the "
                         "noise scale above 1e297): the integrals would be too costly")
    q = q - (q.max() / 2 + q.min() / 2)  # only differences matter: centred, no precision is lost far from 0
    law = _noise_law(noise, scale)
    lo = q.min() - (60.0 * scale if noise == "laplace" else 0.0)
    hi = q.max() + 60.0 * scale

    def integrand(z: NDArray) -> NDArray:  # column i: f(z - q_i) prod_{j != i} F(z - q_j), by cumulative products
        shifted = z[:, None] - q[None, :]
        cdf, ones = law.cdf(shifted), np.ones((z.size, 1))
        left = np.cumprod(np.hstack([ones, cdf[:, :-1]]), axis=1)
        right = np.cumprod(np.hstack([ones, cdf[:, :0:-1]]), axis=1)[:, ::-1]
        return law.pdf(shifted) * left * right

    return np.clip(_piecewise_quadrature(integrand, sorted(set(q.tolist())), lo, hi, scale / 2), 0.0, 1.0)


def above_threshold_probabilities(
    answers: Any, threshold: float, epsilon: float, *, sensitivity: float = 1.0
) -> NDArray[np.float64]:
    """The output distribution of :func:`above_threshold`: ``len(answers) + 1`` probabilities (step 1
    of the proof that the sparse vector technique is private, integrated over rho).

    ``P[k] = integral f_rho(r) prod_{i<k} F_nu(tau + r - q_i) (1 - F_nu(tau + r - q_k)) dr``, and the
    last entry (no query above) ``integral f_rho(r) prod_i F_nu(tau + r - q_i) dr``, by Gauss-Legendre
    quadrature between the kinks (about 1e-13 absolute).  At most 50 answers.

    Parameters
    ----------
    answers : array_like of float, shape (k,)
        The query answers (finite; at most 50).
    threshold : float
        The threshold ``tau``.
    epsilon : float
        The privacy budget (positive).
    sensitivity : float, default 1.0
        The queries' (or scores') sensitivity ``Delta`` (positive).

    Returns
    -------
    numpy.ndarray of float64, shape (k + 1,)
        ``P[k]`` for each output ``k`` of :func:`above_threshold`.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    q = _integral_answers(answers)
    t = check_real(threshold, "threshold")
    eps = check_positive(epsilon, "epsilon")
    sens = check_positive(sensitivity, "sensitivity")
    b_rho, b_nu = noise_scale(2.0, sens, eps), noise_scale(4.0, sens, eps)
    if not np.abs(q / 2 - t / 2).max() <= 500.0 * b_nu < 1e300:  # halves: no overflow for answers near +-1e308
        raise ValueError("answers, threshold, epsilon and sensitivity put the answers more than 1000 noise scales from "
                         "the threshold (or the noise scale above 1e297): the integrals would be too costly")
    shifts = q - t  # rho's kinks: r = 0, and F_nu's kinks at r = q_i - tau
    from scipy import stats

    rho_law, nu_law = stats.laplace(0.0, b_rho), stats.laplace(0.0, b_nu)
    lo = min(0.0, shifts.min()) - 60.0 * b_nu
    hi = max(0.0, shifts.max()) + 60.0 * b_nu
    points = sorted(set([0.0, *shifts.tolist()]))

    def integrand(r: NDArray) -> NDArray:  # column k: f_rho(r) prod_{i<k} F_nu(r - s_i) (1 - F_nu(r - s_k)), 1 at k = n
        shifted, ones = r[:, None] - shifts[None, :], np.ones((r.size, 1))  # t + r - q_i, precise far from 0
        below = np.cumprod(np.hstack([ones, nu_law.cdf(shifted)]), axis=1)
        return rho_law.pdf(r)[:, None] * below * np.hstack([nu_law.sf(shifted), ones])

    return np.clip(_piecewise_quadrature(integrand, points, lo, hi, b_rho / 2), 0.0, 1.0)


def max_log_ratio(p: Any, p_prime: Any) -> float:
    """``max_i |ln(p_i / p'_i)|`` over two distributions on the same finite outputs: the pure-DP
    privacy loss of the pair (``math.inf`` if an output is possible under one only).

    Parameters
    ----------
    p, p_prime : array_like of float, shape (k,)
        Two distributions on the same outputs (non-negative, finite, each with positive mass).

    Returns
    -------
    float
        ``max_i |ln(p_i / p'_i)|`` over the outputs possible under both, or ``math.inf``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.selection import max_log_ratio
    >>> round(max_log_ratio([0.5, 0.5], [0.25, 0.75]), 6)
    0.693147
    """
    a = check_float_array(p, "p", finite=True, ndim=1, min_size=1, low=0.0)
    b = check_float_array(p_prime, "p_prime", finite=True, ndim=1, min_size=1, low=0.0)
    if a.shape != b.shape:
        raise ValueError(f"p and p_prime must have the same length, got {a.size} and {b.size}")
    if not (a.any() and b.any()):  # positive mass (the sum of huge entries would overflow)
        raise ValueError("p and p_prime must each have positive total mass")
    both = (a > 0) & (b > 0)
    if np.any((a > 0) != (b > 0)):
        return math.inf
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        ratios = np.abs(np.log(a[both]) - np.log(b[both]))
    return float(ratios.max()) if ratios.size else 0.0
