"""The sparse vector technique: Lyu, Su and Li (2017), Algorithms 1-6 (see :mod:`dptutor.zoo`).

Their parameters: cut-off ``c = 2``, threshold ``tau = 1`` (the argument ``threshold``), ten
queries, ``epsilon_1 = epsilon / 2`` (``/ 4`` for Algorithm 4).  Outputs are integer vectors, one
entry per query: 1 for "above", 0 for "below", -1 for a query not answered because the algorithm
stopped after ``c`` answers "above".  Algorithm 3 releases numbers (:func:`svt_numerical_value`);
:func:`svt_log_likelihood_ratio` is the exact statistic through which the zoo audits it.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_answer_vector,
    check_int,
    check_mechanism_call,
    check_mechanism_epsilon,
    check_output_rows,
    check_real,
    check_size,
)

__all__ = ["SVT_ALGORITHMS", "svt", "svt_numerical_value", "svt_pattern", "svt_log_likelihood_ratio"]


#: What Lyu, Su and Li (2017, Figure 1 and Section 3) prove about each algorithm, with ``c`` answers
#: "above" allowed: the privacy actually achieved when each claims epsilon.
SVT_ALGORITHMS: dict[int, str] = {
    1: "epsilon-DP (their corrected SVT)",
    2: "epsilon-DP (Dwork and Roth's version: the threshold noise is redrawn after each answer above)",
    3: "not epsilon-DP for any epsilon (as the number of queries grows): it releases the noisy answer q_i + nu_i when above",
    4: "only ((1 + 6c) / 4) epsilon-DP: the query noise Lap(1/epsilon_2) does not grow with c",
    5: "not epsilon-DP for any epsilon: no noise is added to the queries",
    6: "not epsilon-DP for any epsilon (as the number of queries grows): no cut-off c, so the number of answers above is unbounded",
}


def _cut_off_rows(above: NDArray[np.bool_], c: int) -> NDArray[np.int8]:
    """:func:`_cut_off` row by row: 1 / 0 per query, -1 after the ``c``-th answer above."""
    out = above.astype(np.int8)
    # answers above strictly before each query (int16 suffices below 32767 queries)
    before = np.cumsum(above, axis=1, dtype=np.int16 if above.shape[1] < 32767 else np.int64)
    before -= above
    np.putmask(out, before >= c, -1)
    return out


@functools.lru_cache(maxsize=64)
def _cut_off_table(k: int, c: int) -> NDArray[np.int8]:
    """The cut-off rows of all 2^k above / below patterns, pattern j's bit i being query i."""
    patterns = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(bool)
    table = _cut_off_rows(patterns, c)
    table.setflags(write=False)  # shared by every call (np.take copies out of it)
    return table


def _cut_off(above: NDArray[np.bool_], c: int | None) -> NDArray[np.int8]:
    """1 / 0 per query, and -1 for the queries after the ``c``-th answer above (not answered)."""
    k = above.shape[1]
    if c is None:
        return above.astype(np.int8)
    if not 0 < k <= 16:
        return _cut_off_rows(above, c)
    # Few queries: look each row's pattern up in a table of all 2^k patterns (the same rows, faster).
    code = above[:, k - 1].astype(np.int32)
    for i in range(k - 2, -1, -1):
        code <<= 1
        code |= above[:, i]
    return np.take(_cut_off_table(k, c), code, axis=0)


def svt(
    data: Any,
    size: int,
    rng: np.random.Generator,
    *,
    epsilon: float,
    algorithm: int = 1,
    c: int = 2,
    threshold: float = 1.0,
) -> NDArray[np.int8]:
    """Lyu, Su and Li's (2017) Algorithms 1, 2, 4, 5 and 6 of the sparse vector technique.

    ``data`` holds the answers of sensitivity-1 queries; each output is one row of 1 (above the noisy
    threshold), 0 (below) and -1 (not answered, after ``c`` answers above).  Only Algorithms 1 and 2
    are epsilon-DP; see :data:`SVT_ALGORITHMS`.  Algorithm 3 releases numbers: :func:`svt_numerical_value`.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The answers of ``k`` sensitivity-1 queries (finite).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.
    algorithm : {1, 2, 4, 5, 6}, default 1
        Lyu, Su and Li's algorithm (3 is :func:`svt_numerical_value`).
    c : int, default 2
        The cut-off: the number of answers "above" after which the algorithm stops, in ``[1, 2**20]``.
    threshold : float, default 1.0
        The threshold ``tau``.

    Returns
    -------
    numpy.ndarray of int8, shape (size, k)
        One row per output: 1 (above), 0 (below) or -1 (not answered).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.zoo import svt
    >>> svt([5.0, 0.0, 5.0], 2, 0, epsilon=1.0).shape
    (2, 3)
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    algorithm = check_int(algorithm, "algorithm", minimum=1, maximum=6)
    if algorithm == 3:
        raise ValueError("algorithm 3 releases noisy values: use svt_numerical_value")
    c = check_int(c, "c", minimum=1, maximum=1 << 20)
    t = check_real(threshold, "threshold")
    q = check_answer_vector(data)
    shape = check_size((size, q.size), "size * len(data)")
    eps1 = eps / 4.0 if algorithm == 4 else eps / 2.0
    eps2 = eps - eps1
    if algorithm == 2:
        rho = rng.laplace(0.0, c / eps1, size)
        noisy = q + rng.laplace(0.0, 2.0 * c / eps2, shape)
        above = np.empty(shape, dtype=bool)
        for i in range(q.size):  # the threshold's noise is redrawn after every answer above
            above[:, i] = noisy[:, i] >= t + rho
            fresh = rng.laplace(0.0, c / eps2, size)
            rho = np.where(above[:, i], fresh, rho)
        return _cut_off(above, c)
    rho = rng.laplace(0.0, 1.0 / eps1, (size, 1))
    if algorithm == 5:
        noisy = q  # BUG: no noise on the queries
    else:
        scale = 2.0 * c / eps2 if algorithm == 1 else 1.0 / eps2  # BUG (4, 6): scale does not grow with c
        noisy = rng.laplace(0.0, scale, shape)
        noisy += q  # in place: the same sums as q + noise, one array fewer
    above = noisy >= t + rho
    return _cut_off(above, None if algorithm in (5, 6) else c)


def svt_numerical_value(
    data: Any, size: int, rng: np.random.Generator, *, epsilon: float, c: int = 2, threshold: float = 1.0
) -> NDArray[np.float64]:
    """BUG: Lyu, Su and Li's (2017) Algorithm 3, which releases the noisy answer ``q_i + nu_i`` when it
    is above the noisy threshold.  Each row holds that value, ``-inf`` for "below" and ``+inf`` for
    a query not answered; audit it through a statistic (e.g. :func:`svt_pattern`).

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The answers of ``k`` sensitivity-1 queries (finite).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.
    c : int, default 2
        The cut-off: the number of answers "above" after which the algorithm stops, in ``[1, 2**20]``.
    threshold : float, default 1.0
        The threshold ``tau``.

    Returns
    -------
    numpy.ndarray of float64, shape (size, k)
        One row per output: the released value, ``-inf`` (below) or ``+inf`` (not answered).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    c = check_int(c, "c", minimum=1, maximum=1 << 20)
    t = check_real(threshold, "threshold")
    q = check_answer_vector(data)
    eps1 = eps / 2.0
    shape = check_size((size, q.size), "size * len(data)")
    rho = rng.laplace(0.0, 1.0 / eps1, (size, 1))
    noisy = q + rng.laplace(0.0, c / (eps - eps1), shape)
    above = noisy >= t + rho
    status = _cut_off(above, c)
    return np.where(status == 1, noisy, np.where(status == 0, -np.inf, np.inf))


def svt_pattern(outputs: NDArray) -> NDArray[np.int8]:
    """The above / below / not-answered pattern of :func:`svt_numerical_value`'s rows (1, 0, -1), which
    the auditor then treats as categories.

    Parameters
    ----------
    outputs : array_like, shape (trials, k)
        :func:`svt_numerical_value`'s outputs, one per row.

    Returns
    -------
    numpy.ndarray of int8, shape (trials, k)
        1 where a value was released, 0 for ``-inf``, -1 for ``+inf``.

    Raises
    ------
    TypeError
        If ``outputs`` does not hold real numbers.
    ValueError
        If ``outputs`` is not a non-empty 2-D array or holds NaN.
    """
    arr = check_output_rows(outputs)
    return np.where(np.isfinite(arr), 1, np.where(arr < 0, 0, -1)).astype(np.int8)


def _laplace_logcdf(z: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    """``ln P(Lap(0, b) <= z)``, without cancellation in either tail."""
    neg = np.minimum(z, 0.0)
    pos = np.maximum(z, 0.0)
    return np.where(z < 0, math.log(0.5) + neg / b, np.log1p(-0.5 * np.exp(-pos / b)))


def svt_log_likelihood_ratio(
    outputs: NDArray,
    *,
    x: Any,
    x_prime: Any,
    epsilon: float,
    c: int = 2,
    threshold: float = 1.0,
    grid: int = 1024,
    decimals: int | None = 9,
) -> NDArray[np.float64]:
    """The log-likelihood ratio ``ln p_x(o) - ln p_x'(o)`` of :func:`svt_numerical_value`'s outputs
    (Lyu, Su and Li's Algorithm 3), the Neyman-Pearson statistic for the pair ``x``, ``x_prime``.

    Given the threshold noise ``rho = r`` (threshold ``tau``), the queries are independent: an answer
    above with value v has density ``f_nu(v - q_i)`` and needs ``r <= v - tau``, an answer below has probability
    ``F_nu(tau + r - q_j)``.  The released values' factor does not depend on r; the rest is integrated
    over r up to the smallest released value minus tau: in log space, linear between ``grid`` uniform
    nodes and the kinks ``r = 0`` and ``r = q_j - tau`` (exact where every factor is in its left tail),
    with both tails in closed form.  At the default grid the error is below 1e-4 (the tests compare
    grids and check ``E_x'[e^ratio] = 1``).

    A released value ``v = q + nu`` carries the rounding error of that sum, which differs between ``q``
    and ``q'`` (the floating-point leak of the chapter "The bits matter").  So that an audit through
    this statistic measures the algorithm and not those bits, ``v`` is clipped to ``[q, q']`` before
    its term ``|v - q'| - |v - q|`` (which is constant outside) and the result is rounded to ``decimals``
    places (``None``: not rounded).

    Parameters
    ----------
    outputs : array_like, shape (trials, k)
        :func:`svt_numerical_value`'s outputs, one per row.
    x, x_prime : array_like of float, shape (k,)
        The query answers on the two neighbouring datasets (at most ``1e12`` in absolute value).
    epsilon : float
        The epsilon the outputs were drawn at, in ``[1e-12, 1e6]``.
    c : int, default 2
        The cut-off the outputs were drawn at.
    threshold : float, default 1.0
        The threshold the outputs were drawn at, at most ``1e300`` in absolute value.
    grid : int, default 1024
        The number of uniform integration nodes, in ``[2, 2**16]``.
    decimals : int or None, default 9
        The decimals the ratios are rounded to, in ``[0, 15]`` (``None``: not rounded).

    Returns
    -------
    numpy.ndarray of float64, shape (trials,)
        ``ln p_x(o) - ln p_x'(o)`` for each output ``o``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    arr = check_output_rows(outputs)
    grid = check_int(grid, "grid", minimum=2, maximum=1 << 16)
    if decimals is not None:
        decimals = check_int(decimals, "decimals", minimum=0, maximum=15)
    c = check_int(c, "c", minimum=1, maximum=1 << 20)
    threshold = check_real(threshold, "threshold", low=-_LLR_MAX_THRESHOLD, high=_LLR_MAX_THRESHOLD)
    eps = check_mechanism_epsilon(epsilon, high=_LLR_MAX_EPSILON)
    q, qp = check_answer_vector(x, "x"), check_answer_vector(x_prime, "x_prime")
    if q.size != arr.shape[1]:
        raise ValueError(f"x must hold one answer per column of outputs ({arr.shape[1]}), got {q.size}")
    if qp.size != q.size:
        raise ValueError(f"x_prime must have as many answers as x ({q.size}), got {qp.size}")
    for name, answers in (("x", q), ("x_prime", qp)):
        if np.abs(answers).max() > _LLR_MAX_ANSWER:
            raise ValueError(f"{name} must hold answers of at most {_LLR_MAX_ANSWER:g} in absolute value")
    b_rho, b_nu = 2.0 / eps, c / (eps / 2.0)
    above, below = np.isfinite(arr), arr == -np.inf
    # |v - q'| - |v - q| is constant outside [min(q, q'), max(q, q')]: clip v there first (no cancellation)
    values = np.clip(np.where(above, arr, 0.0), np.minimum(q, qp), np.maximum(q, qp))
    value_part = ((np.abs(values - qp) - np.abs(values - q)) / b_nu * above).sum(axis=1)
    cap = np.where(above, arr, np.inf).min(axis=1) - threshold  # r <= every released value - tau
    # Nodes: a uniform grid, widened so that every query's kink lies inside, plus the kinks
    # themselves (r = 0 and r = q_j - tau), between which the log integrand is exactly linear
    # wherever each "below" factor is in its left tail.
    kinks = np.concatenate([q, qp]) - threshold
    r_lo = min(-12.0 * b_rho, float(kinks.min()) - b_nu)
    r_hi = max(12.0 * b_rho, float(kinks.max()) + 12.0 * b_nu)
    r = np.unique(np.concatenate([np.linspace(r_lo, r_hi, grid), kinks, [0.0]]))  # all inside [r_lo, r_hi]
    # A cap below r[0] only scales both integrals by the same e^(slope (cap - r[0])), and one far above r[-1] adds
    # mass e^-1000 = 0: clip it there, so that extreme released values neither overflow nor give inf - inf.
    cap = np.clip(cap, r[0], r[-1] + 1000.0 * b_rho)
    # Rows with the same set of "below" answers share their integrand up to the cap: integrate once per
    # set, a bounded number of rows at a time (at most _LLR_TABLE elements per table of sets x nodes).
    llr = np.empty(arr.shape[0])
    step = max(1, _LLR_TABLE // r.size)
    for start in range(0, arr.shape[0], step):
        rows = slice(start, start + step)
        sets, which = np.unique(np.packbits(below[rows], axis=1), axis=0, return_inverse=True)
        wt = np.unpackbits(sets, axis=1, count=q.size).astype(np.float64)  # (sets, queries)
        args = (r, wt, which.reshape(-1), below[rows], cap[rows], threshold, b_rho, b_nu)
        llr[rows] = value_part[rows] + _svt_log_integral(q, *args) - _svt_log_integral(qp, *args)
    if decimals is not None:  # beyond 1e15 a double has no decimals left to round (and rounding could overflow)
        small = np.abs(llr) < 1e15
        llr[small] = np.round(llr[small], decimals)
    return llr


#: The largest query answer (in absolute value) that :func:`svt_log_likelihood_ratio` integrates over.
_LLR_MAX_ANSWER = 1e12

#: The largest epsilon and threshold (in absolute value) of :func:`svt_log_likelihood_ratio` (beyond, its
#: integrand's scaled arguments overflow).
_LLR_MAX_EPSILON = 1e6
_LLR_MAX_THRESHOLD = 1e300

#: Elements of one (sets x nodes) table in :func:`svt_log_likelihood_ratio` (bounds its memory).
_LLR_TABLE = 1 << 23


def _log_expm1_ratio(d: NDArray[np.float64]) -> NDArray[np.float64]:
    """``ln((e^d - 1) / d)``, the log of a segment's integral of ``e^(l(r))`` over its width and
    ``e^(l(start))`` when ``l`` is linear with total rise ``d``; stable for every real ``d``
    (``(e^d - 1) / d = e^max(d, 0) (1 - e^-|d|) / |d|``)."""
    a = np.maximum(np.abs(d), 1e-300)
    out = -np.expm1(-a)
    np.divide(out, a, out=out)
    np.log(out, out=out)
    out += np.maximum(d, 0.0)
    return out


def _svt_log_integral(
    answers: NDArray[np.float64], r: NDArray[np.float64], wt: NDArray[np.float64], which: NDArray[np.intp],
    below: NDArray[np.bool_], cap: NDArray[np.float64], threshold: float, b_rho: float, b_nu: float,
) -> NDArray[np.float64]:
    """``ln`` of ``int_{-inf}^{cap} e^(-|r|/b_rho) prod_{j below} F_nu(tau + r - q_j) dr`` for each row.

    ``wt`` holds the distinct sets of "below" answers (0/1 per query) and ``which`` each row's set.
    The log integrand is interpolated linearly between the nodes ``r`` (exact between kinks where each
    factor is in its left tail), the last segment ends at the row's cap, and the two tails are added in
    closed form: below ``r[0]`` every factor is in its left tail (a pure exponential), above ``r[-1]``
    every factor is within ``e^-12`` of 1.
    """
    ell = wt @ _laplace_logcdf(threshold + r[None, :] - answers[:, None], b_nu) - np.abs(r) / b_rho  # (sets, nodes)
    segments = np.log(np.diff(r)) + ell[:, :-1] + _log_expm1_ratio(np.diff(ell, axis=1))
    upto = np.concatenate([np.full((ell.shape[0], 1), -np.inf), np.logaddexp.accumulate(segments, axis=1)], axis=1)
    slope = 1.0 / b_rho + wt.sum(axis=1) / b_nu  # of the log integrand below r[0], per set
    left = ell[:, 0] - np.log(slope)  # the integral from -inf to r[0], per set

    inside = (cap > r[0]) & (cap < r[-1])
    c_in = np.where(inside, cap, r[0])
    k = np.searchsorted(r, c_in, side="right") - 1  # the last node at or below the cap
    ell_k = ell[which, k]
    ell_cap = (below * _laplace_logcdf(threshold + c_in[:, None] - answers[None, :], b_nu)).sum(axis=1) - np.abs(c_in) / b_rho
    width = c_in - r[k]
    with np.errstate(divide="ignore"):
        partial = np.where(inside & (width > 0), np.log(width) + ell_k + _log_expm1_ratio(ell_cap - ell_k), -np.inf)
        reach = -np.expm1(-np.maximum(cap - r[-1], 0.0) / b_rho)  # the mass above r[-1], up to the cap
        right = ell[which, -1] + math.log(b_rho) + np.log(reach)
    middle = np.where(cap >= r[-1], upto[which, -1], upto[which, k])
    total = np.logaddexp(np.logaddexp(left[which], middle), np.logaddexp(partial, right))
    # a cap at or below r[0]: only the left tail, which then ends at the cap
    low = cap <= r[0]
    return np.where(low, left[which] + slope[which] * np.minimum(cap - r[0], 0.0), total)
