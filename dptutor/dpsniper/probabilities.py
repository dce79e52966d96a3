"""Exact output probabilities of DP-Sniper's mechanisms on a pair (see :mod:`dptutor.dpsniper`).

One-dimensional integrals over the threshold noise (or the maximum), computed with
:func:`scipy.integrate.quad` to a relative error of about 1e-12 (an absolute one below 1e-298 for a
probability below about 1e-288, which float64 cannot hold to that relative precision).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_int, check_mechanism_epsilon, check_real, shown

__all__ = ["rnm_index_probabilities", "svt_pattern_probabilities"]

#: The largest epsilon the exact-probability functions integrate at (beyond it the noise is a spike
#: narrower than the quadrature can resolve), and the largest query answer in absolute value.
MAX_EXACT_EPSILON = 50.0
MAX_EXACT_ANSWER = 1e6
#: The most query answers the exact-probability functions integrate over (their cost grows as its square).
MAX_EXACT_SIZE = 64


def exact_answers(data: object, name: str = "data") -> NDArray[np.float64]:
    """Query answers that the exact-probability functions accept: finite, at most MAX_EXACT_ANSWER in size.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        Query answers, at most ``MAX_EXACT_SIZE`` (64) of them.
    name : str, default 'data'
        The parameter's name, for the messages.

    Returns
    -------
    numpy.ndarray of float64, shape (k,)
        The answers.

    Raises
    ------
    TypeError
        If ``data`` does not hold real numbers.
    ValueError
        If ``data`` is empty, not 1-D, not finite, longer than ``MAX_EXACT_SIZE`` or has an answer above
        ``MAX_EXACT_ANSWER`` in absolute value.
    """
    q = check_float_array(data, name, finite=True, ndim=1, min_size=1)
    if q.size > MAX_EXACT_SIZE:
        raise ValueError(f"{name} must hold at most {MAX_EXACT_SIZE} answers, got {q.size}")
    if np.abs(q).max() > MAX_EXACT_ANSWER:
        raise ValueError(f"{name} must hold answers of at most {MAX_EXACT_ANSWER:g} in absolute value")
    return q


def _exact_inputs(data: object, epsilon: object) -> tuple[NDArray[np.float64], float]:
    return exact_answers(data), check_mechanism_epsilon(epsilon, high=MAX_EXACT_EPSILON)


def _laplace_cdf(z: Any, b: float) -> Any:
    z = np.asarray(z, dtype=np.float64)
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0) / b), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0) / b))


def _lcdf(z: float, b: float) -> float:
    """The Laplace(0, b) CDF at one point (math, not numpy: the integrands call it millions of times)."""
    return 0.5 * math.exp(z / b) if z < 0 else 1.0 - 0.5 * math.exp(-z / b)


def _exp_cdf(z: Any, b: float) -> Any:
    z = np.asarray(z, dtype=np.float64)
    return np.where(z > 0, -np.expm1(-np.maximum(z, 0.0) / b), 0.0)


def _lsf(z: float, b: float) -> float:
    """The Laplace(0, b) survival function ``1 - F(z)`` at one point, without cancellation: ``1 - _lcdf`` loses
    every digit of a tail probability below 1e-16 (and with it the accuracy of the integrals)."""
    return 0.5 * math.exp(-z / b) if z >= 0 else 1.0 - 0.5 * math.exp(z / b)


#: The absolute error the quadrature may make on each piece of an integral near its kinks: a probability above
#: about 1e-288 is computed to a relative error of about 1e-12, a smaller one (reaching float64's subnormal range,
#: where a relative error that small cannot be had) to an absolute error below 1e-298.
_EPSABS = 1e-300


def _integrate(fn: Any, kinks: list[float], scale: float, names: str) -> float:
    """``int fn(r) dr`` over the real line with :func:`scipy.integrate.quad`, one piece between each two ``kinks``.

    Between the kinks ``log fn`` is concave and, beyond ``scale`` of them, linear with a slope of 0 or at least
    ``1 / scale`` in size; beyond the outermost kinks it falls at least as fast as ``exp(-|r| / scale)``.  So the
    line is cut 60 scales beyond the outermost kinks (what lies further is below ``e**-60`` of the integral
    there), and the middle of a gap of more than 120 scales is integrated last, to an absolute error of 1e-15 of
    the rest: there ``fn`` is flat (quad is exact) or below ``e**-60`` of its values at the gap's ends (quad on
    such a long piece may miss that spike, but not the digits that matter).  ``ValueError`` naming ``names`` if
    quad cannot reach its tolerance.
    """
    from scipy import integrate

    points, reach = sorted(set(kinks)), 60.0 * scale
    near, middles = [(points[0] - reach, points[0]), (points[-1], points[-1] + reach)], []
    for a, b in zip(points[:-1], points[1:]):
        if b - a > 2.0 * reach:
            near += [(a, a + reach), (b - reach, b)]
            middles.append((a + reach, b - reach))
        else:
            near.append((a, b))
    total = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", integrate.IntegrationWarning)
        try:
            total = math.fsum(integrate.quad(fn, a, b, epsabs=_EPSABS, epsrel=1e-12, limit=200)[0] for a, b in near)
            epsabs = max(_EPSABS, 1e-15 * total)
            total += math.fsum(integrate.quad(fn, a, b, epsabs=epsabs, epsrel=1e-12, limit=200)[0] for a, b in middles)
        except integrate.IntegrationWarning as exc:
            raise ValueError(f"{names}: the integral cannot be computed accurately at these values "
                             f"({shown(str(exc), str)})") from None
    return total


def rnm_index_probabilities(data: Any, *, epsilon: float, noise: str = "laplace") -> NDArray[np.float64]:
    """``P(index i is reported)`` for :func:`dptutor.zoo.noisy_max.report_noisy_max` on the answers ``data``:
    ``int f(t - q_i) prod_{j != i} F(t - q_j) dt``, integrated numerically (noise scale ``2/epsilon``).

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The query answers (at most 64), at most ``1e6`` in absolute value.
    epsilon : float
        The epsilon, in ``[1e-12, 50]``.
    noise : {'laplace', 'exponential'}, default 'laplace'
        The noise of :func:`dptutor.zoo.noisy_max.report_noisy_max`.

    Returns
    -------
    numpy.ndarray of float64, shape (k,)
        ``P(index i is reported)`` for each ``i``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    q, eps = _exact_inputs(data, epsilon)
    noise = check_choice(noise, "noise", ("laplace", "exponential"))
    q = q - q.max()  # the probabilities depend on differences only; near 0, the quadrature loses no digits to roundoff
    b = 2.0 / eps
    cdf = _laplace_cdf if noise == "laplace" else _exp_cdf

    def pdf(z: float) -> float:
        if noise == "laplace":
            return math.exp(-abs(z) / b) / (2 * b)
        return math.exp(-z / b) / b if z >= 0 else 0.0

    out = []
    for i in range(q.size):
        others = np.delete(q, i)

        def fn(t: float, i: int = i, others: NDArray[np.float64] = others) -> float:
            return pdf(t - q[i]) * float(np.prod(cdf(t - others, b)))

        out.append(_integrate(fn, [float(v) for v in q], b, "data and epsilon"))
    return np.array(out)


def svt_pattern_probabilities(
    data: Any, *, epsilon: float, algorithm: int, threshold: float = 1.0
) -> dict[tuple[int, ...], float]:
    """Exact probabilities of every output of :func:`dptutor.zoo.sparse_vector.svt` with cut-off ``c = 1`` (Algorithms 1,
    2 and 4; Algorithm 2 equals 1 at ``c = 1``) on the answers ``data``: for the first answer "above" at
    query ``k``, ``int f_rho(r) prod_{i<k} F(t + r - q_i) (1 - F(t + r - q_k)) dr``, integrated numerically.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The query answers (at most 64), at most ``1e6`` in absolute value.
    epsilon : float
        The epsilon, in ``[1e-12, 50]``.
    algorithm : {1, 2, 4}
        Lyu, Su and Li's algorithm.
    threshold : float, default 1.0
        The threshold, at most ``1e6`` in absolute value.

    Returns
    -------
    dict of tuple of int to float
        The probability of each of the ``k + 1`` possible outputs (1 / 0 / -1 per query).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    q, eps = _exact_inputs(data, epsilon)
    algorithm = check_int(algorithm, "algorithm", minimum=1, maximum=6)
    if algorithm not in (1, 2, 4):
        raise ValueError(f"algorithm must be 1, 2 or 4 (the cut-off variants at c = 1), got {algorithm}")
    t = check_real(threshold, "threshold", low=-MAX_EXACT_ANSWER, high=MAX_EXACT_ANSWER)
    eps1 = eps / 4.0 if algorithm == 4 else eps / 2.0
    b_rho = 1.0 / eps1
    b_nu = 1.0 / (eps - eps1) if algorithm == 4 else 2.0 / (eps - eps1)
    kinks = [0.0, *[float(v) - t for v in q]]
    gaps = [t - v for v in q.tolist()]  # t + r - q_i as (t - q_i) + r: no digits of r lost to a large t
    out: dict[tuple[int, ...], float] = {}
    for k in range(q.size + 1):
        def fn(r: float, k: int = k) -> float:
            value = math.exp(-abs(r) / b_rho) / (2 * b_rho)
            for g in gaps[:k]:
                value *= _lcdf(g + r, b_nu)
            if k < len(gaps):
                value *= _lsf(gaps[k] + r, b_nu)
            return value

        pattern = tuple([0] * k + ([1] + [-1] * (q.size - k - 1) if k < q.size else []))
        out[pattern] = _integrate(fn, kinks, max(b_rho, b_nu), "data, epsilon and threshold")
    return out


def svt6_epsilon(x: NDArray[np.float64], xp: NDArray[np.float64], epsilon: float, threshold: float) -> float:
    """Exact epsilon of Algorithm 6 (no cut-off) on a pair: patterns with the same number of answers above in
    each group of queries with equal (q_i, q'_i) have equal probabilities, so only those counts are enumerated.

    Parameters
    ----------
    x, xp : numpy.ndarray of float64, shape (k,)
        The query answers on the two datasets.
    epsilon : float
        The claimed epsilon.
    threshold : float
        The threshold.

    Returns
    -------
    float
        The largest absolute log ratio of one output's probabilities over all outputs.

    Raises
    ------
    ValueError
        If a probability underflows to 0 (its logarithm is then undefined).
    """
    eps1 = epsilon / 2.0
    b_rho, b_nu = 1.0 / eps1, 1.0 / (epsilon - eps1)
    groups: dict[tuple[float, float], int] = {}
    for a, b in zip(x.tolist(), xp.tolist()):
        groups[(a, b)] = groups.get((a, b), 0) + 1
    keys = list(groups)
    kinks = [0.0, *[v - threshold for v in np.concatenate([x, xp]).tolist()]]
    worst = 0.0
    for counts in np.ndindex(*[groups[k] + 1 for k in keys]):
        logs = []
        for side in (0, 1):
            def fn(r: float, counts: tuple[int, ...] = counts, side: int = side) -> float:
                value = math.exp(-abs(r) / b_rho) / (2 * b_rho)
                for key, m in zip(keys, counts):
                    z = threshold + r - key[side]
                    value *= _lsf(z, b_nu) ** m * _lcdf(z, b_nu) ** (groups[key] - m)
                return value

            logs.append(math.log(_integrate(fn, kinks, b_rho + b_nu, "x, xp, epsilon and threshold")))
        worst = max(worst, abs(logs[0] - logs[1]))
    return worst


def svt5_epsilon(x: NDArray[np.float64], xp: NDArray[np.float64], threshold: float) -> float | None:
    """Algorithm 5 answers ``q_i >= threshold + rho`` without query noise: the output is a step function of
    rho, so each input has a finite set of possible outputs, one per interval of rho.  Infinite when some
    output is possible under one input only; ``None`` (not computed here) otherwise.

    Parameters
    ----------
    x, xp : numpy.ndarray of float64, shape (k,)
        The query answers on the two datasets.
    threshold : float
        The threshold.

    Returns
    -------
    float or None
        ``math.inf`` when some output is possible on one dataset only, else ``None``.

    Notes
    -----
    It raises no exception: the arguments are the benchmark's own.
    """
    edges = sorted({*(x - threshold).tolist(), *(xp - threshold).tolist()})
    cells = [edges[0] - 1.0] + [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])] + edges + [edges[-1] + 1.0]
    seen: list[set[tuple[int, ...]]] = [set(), set()]
    for r in cells:
        for side, q in enumerate((x, xp)):
            seen[side].add(tuple((q >= threshold + r).astype(int).tolist()))
    return math.inf if seen[0] != seen[1] else None
