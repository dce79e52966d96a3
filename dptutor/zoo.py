"""A zoo of correct and buggy mechanisms from the literature, in :func:`dptutor.audit.audit_pair`'s interface.

Every mechanism here is a function ``mechanism(data, size, rng, *, epsilon, ...)`` that returns
``size`` independent outputs for one dataset ``data``.  Each :class:`ZooEntry` fixes the claimed
epsilon, the standard neighbouring inputs (mostly those on which DP-Sniper found its largest loss,
{cite}`bichsel2021dpsniper`), a statistic where the outputs are real vectors, and what is known about
the true privacy: exact where it can be derived, ``math.inf`` where none exists, ``None`` where only
bounds are known.  :data:`ZOO` holds the entries at claimed epsilon = 0.1, the setting of StatDP
(Ding et al., 2018) and DP-Sniper (Bichsel et al., 2021), whose published lower bounds are recorded in
``dpsniper``: 90% lower confidence bounds, each the larger of two runs (a logistic-regression and a
neural-network classifier), so they hold with confidence at least 80% jointly, not 95%.

Neighbouring inputs follow the papers: a count or a histogram changes by 1 in one entry; for
report-noisy-max and the sparse vector technique every query answer may change by at most 1 (the
queries have sensitivity 1 and the neighbourhood is component-wise).

The sparse vector technique (SVT) variants are Algorithms 1-6 of Lyu, Su and Li (2017), with their
parameters: cut-off ``c = 2``, threshold ``tau = 1`` (the argument ``threshold``), ten queries,
``epsilon_1 = epsilon / 2`` (``/ 4`` for Algorithm 4).  Outputs are integer vectors, one entry per query: 1 for "above", 0 for "below",
-1 for a query not answered because the algorithm stopped after ``c`` answers "above".  Algorithm 3
releases numbers and runs at ``c = 1``, the cut-off of DP-Sniper's experiments (which used ``c = 1``
for every variant): its leak per answer is ``epsilon_2 / c`` and shrinks as ``c`` grows, while
Algorithm 4's ``((1 + 6c) / 4) epsilon`` grows with ``c``.  Each entry thus sits where its bug is largest.
Its inputs are ours, not DP-Sniper's ten answers: a rising staircase of 28 answers (-59, -54, ..., 76)
against the same staircase one higher, audited through :func:`svt_log_likelihood_ratio`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_bool,
    check_callable,
    check_choice,
    check_float_array,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_rng,
    check_seed,
)
from fractions import Fraction

from dptutor.approximate_dp import discrete_gaussian_epsilon
from dptutor.audit import PairAudit, audit_pair
from dptutor.distributions import sample_dptext
from dptutor.exact import (
    granular_loss,
    granular_parameters,
    granular_round,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

__all__ = [
    "ZooEntry",
    "ZOO",
    "PRIVACY",
    "laplace_count",
    "gaussian_count",
    "exact_laplace_count",
    "discrete_gaussian_count",
    "exact_noisy_histogram",
    "granular_laplace_vector",
    "randomized_response",
    "noisy_histogram",
    "histogram_eps",
    "report_noisy_max",
    "report_noisy_max_value",
    "svt",
    "svt_numerical_value",
    "laplace_vector",
    "adept_vector",
    "dptext_vector",
    "first_coordinate",
    "clipped_sum",
    "minimum",
    "svt_pattern",
    "svt_log_likelihood_ratio",
    "SVT_ALGORITHMS",
]


# ---------------------------------------------------------------------------------------------
# shared checks
# ---------------------------------------------------------------------------------------------


#: The smallest epsilon the zoo accepts (below it, noise scales such as 2c / epsilon overflow).
_MIN_EPSILON = 1e-12


def _epsilon(epsilon: object) -> float:
    return check_real(epsilon, "epsilon", low=_MIN_EPSILON)


def _common(size: object, rng: object, epsilon: object) -> tuple[int, np.random.Generator, float]:
    return check_int(size, "size", minimum=0, maximum=1 << 28), check_rng(rng), _epsilon(epsilon)


def _vector(data: object, name: str = "data") -> NDArray[np.float64]:
    return check_float_array(data, name, finite=True, ndim=1, min_size=1)


def _scalar(data: object) -> float:
    return check_real(data, "data")


# ---------------------------------------------------------------------------------------------
# counts, randomized response and histograms
# ---------------------------------------------------------------------------------------------


def laplace_count(data: float, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """A count (sensitivity 1) plus ``Lap(0, 1/epsilon)``: epsilon-DP (the paper's Eq. 2 with ``n = 1``)."""
    size, rng, eps = _common(size, rng, epsilon)
    return _scalar(data) + rng.laplace(0.0, 1.0 / eps, size)


def gaussian_count(
    data: float, size: int, rng: np.random.Generator, *, epsilon: float, delta: float
) -> NDArray[np.float64]:
    """A count plus ``N(0, sigma^2)`` with the classic calibration ``sigma = sqrt(2 ln(1.25/delta)) / epsilon``
    (Dwork and Roth 2014, Theorem A.1; (epsilon, delta)-DP for epsilon < 1, never epsilon-DP)."""
    size, rng, eps = _common(size, rng, epsilon)
    dlt = check_probability(delta, "delta")
    sigma = math.sqrt(2.0 * math.log(1.25 / dlt)) / eps
    return _scalar(data) + rng.normal(0.0, sigma, size)


def _integer_answer(data: object) -> int:
    value = _scalar(data)
    if value != round(value) or abs(value) >= 2**52:
        raise ValueError(f"data must be an integer count (below 2**52 in magnitude), got {data!r}")
    return int(value)


def _exact_scale(epsilon: float) -> Fraction:
    """A rational scale ``t >= 1 / epsilon`` with denominator 2^20 (so ``1 / t <= epsilon`` exactly)."""
    t = Fraction(math.ceil(Fraction(1) / Fraction(epsilon) * 2**20), 2**20)
    if t.numerator >= 1 << 53:
        raise ValueError(f"epsilon = {epsilon!r} is too small for the exact sampler (scale numerator above 2**53)")
    return t


def exact_laplace_count(data: float, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """A count plus exact discrete Laplace noise of scale ``t >= 1/epsilon`` (Canonne, Kamath and Steinke
    2020): epsilon-DP as implemented (every integer is a possible output of every count).  The output is
    the integer as a float64, so that threshold events apply."""
    size, rng, eps = _common(size, rng, epsilon)
    count = _integer_answer(data)
    return (sample_discrete_laplace(_exact_scale(eps), size, rng) + count).astype(np.float64)


def _classic_sigma(epsilon: float, delta: float) -> Fraction:
    """The classic sigma ``sqrt(2 ln(1.25/delta)) / epsilon``, rounded up to a multiple of 1/32 (a small
    denominator keeps the exact sampler's integers in int64)."""
    sigma = math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    if not sigma < 2.0**25:
        raise ValueError(f"epsilon={epsilon!r}, delta={delta!r} give sigma={sigma:g}: too large")
    return Fraction(math.ceil(sigma * 32 * (1 + 2**-40)), 32)


def discrete_gaussian_count(
    data: float, size: int, rng: np.random.Generator, *, epsilon: float, delta: float
) -> NDArray[np.float64]:
    """A count plus exact discrete Gaussian noise (:func:`dptutor.exact.sample_discrete_gaussian`) with the
    classic calibration ``sigma = sqrt(2 ln(1.25/delta)) / epsilon`` rounded up to a multiple of 1/32: its
    exact epsilon at ``delta`` comes from :func:`dptutor.approximate_dp.discrete_gaussian_epsilon`."""
    size, rng, eps = _common(size, rng, epsilon)
    dlt = check_probability(delta, "delta")
    count = _integer_answer(data)
    return (sample_discrete_gaussian(_classic_sigma(eps, dlt), size, rng) + count).astype(np.float64)


def exact_noisy_histogram(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """Each bin of an integer histogram plus exact discrete Laplace noise of scale ``t >= 1/epsilon``:
    epsilon-DP as implemented when one person changes one bin by 1."""
    size, rng, eps = _common(size, rng, epsilon)
    counts = _vector(data)
    if not (np.all(counts == np.round(counts)) and np.all(np.abs(counts) < 2**52)):
        raise ValueError("data must hold integer counts (below 2**52 in magnitude)")
    noise = sample_discrete_laplace(_exact_scale(eps), (size, counts.size), rng)
    return (noise + counts.astype(np.int64)).astype(np.float64)


def granular_laplace_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """The paper's Laplace mechanism on ``[0, 1]^n`` made private as implemented: Google's granular
    Laplace (:func:`dptutor.mechanisms.granular_laplace_mechanism`), ``r (round(x / r) + Z)`` with exact
    discrete Laplace ``Z``; its exact loss is :func:`dptutor.exact.granular_loss` (below epsilon)."""
    size, rng, eps = _common(size, rng, epsilon)
    x = _vector(data)
    params = granular_parameters(eps, x.size)
    try:
        rounded = granular_round(x, params)
    except ValueError as exc:
        raise ValueError(f"epsilon = {eps!r} makes the granularity r = {params.r:g} too fine for data ({exc})") from exc
    steps = rounded + sample_discrete_laplace(params.t, (size, x.size), rng)
    return steps.astype(np.float64) * params.r  # exact: |steps| < 2^53, r a power of two


def randomized_response(data: int, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.bool_]:
    """Report the bit ``data`` with probability ``e^eps / (1 + e^eps)``, else its negation: exactly epsilon-DP."""
    size, rng, eps = _common(size, rng, epsilon)
    bit = check_int(data, "data", minimum=0, maximum=1)
    keep = rng.random(size) < 1.0 / (1.0 + math.exp(-eps))
    return keep if bit else ~keep


def noisy_histogram(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """Each bin of the histogram ``data`` plus ``Lap(0, 1/epsilon)``: epsilon-DP when one person changes one
    bin by 1 (StatDP's ``histogram``, DP-Sniper's NoisyHist1)."""
    size, rng, eps = _common(size, rng, epsilon)
    counts = _vector(data)
    return counts + rng.laplace(0.0, 1.0 / eps, (size, counts.size))


def histogram_eps(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """BUG: the histogram with noise ``Lap(0, epsilon)`` instead of ``Lap(0, 1/epsilon)`` (StatDP's
    ``histogram_eps``, DP-Sniper's NoisyHist2).  Its true epsilon is ``1/epsilon``."""
    size, rng, eps = _common(size, rng, epsilon)
    counts = _vector(data)
    return counts + rng.laplace(0.0, eps, (size, counts.size))


# ---------------------------------------------------------------------------------------------
# report noisy max
# ---------------------------------------------------------------------------------------------


def _noisy_answers(data: Any, size: int, rng: np.random.Generator, epsilon: float, noise: str) -> NDArray[np.float64]:
    noise = check_choice(noise, "noise", ("laplace", "exponential"))
    answers = _vector(data)
    shape = (size, answers.size)
    if noise == "laplace":
        return answers + rng.laplace(0.0, 2.0 / epsilon, shape)
    if noise == "exponential":
        return answers + rng.exponential(2.0 / epsilon, shape)
    raise ValueError(f"noise must be 'laplace' or 'exponential', got {noise!r}")


def report_noisy_max(
    data: Any, size: int, rng: np.random.Generator, *, epsilon: float, noise: str = "laplace"
) -> NDArray[np.int64]:
    """The index of the largest noisy query answer, noise ``Lap(2/epsilon)`` or ``Exp(2/epsilon)``:
    epsilon-DP (StatDP's ``noisy_max_v1a`` and ``v2a``; DP-Sniper's ReportNoisyMax1 and 2)."""
    size, rng, eps = _common(size, rng, epsilon)
    return np.argmax(_noisy_answers(data, size, rng, eps, noise), axis=1)


def report_noisy_max_value(
    data: Any, size: int, rng: np.random.Generator, *, epsilon: float, noise: str = "laplace"
) -> NDArray[np.float64]:
    """BUG: the *value* of the largest noisy answer instead of its index (StatDP's ``noisy_max_v1b`` and
    ``v2b``; DP-Sniper's ReportNoisyMax3 and 4).

    With Laplace noise and ``k`` answers that all move by 1, the density of the maximum changes by a
    factor up to ``e^(k epsilon / 2)`` (in its left tail), so the true epsilon is ``k epsilon / 2``.
    Exponential noise is one-sided: if every answer grows by 1, an output below the smallest new answer
    is impossible, and the true epsilon is infinite.
    """
    size, rng, eps = _common(size, rng, epsilon)
    return np.max(_noisy_answers(data, size, rng, eps, noise), axis=1)


# ---------------------------------------------------------------------------------------------
# the sparse vector technique: Lyu, Su and Li (2017), Algorithms 1-6
# ---------------------------------------------------------------------------------------------

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
    """
    size, rng, eps = _common(size, rng, epsilon)
    algorithm = check_int(algorithm, "algorithm", minimum=1, maximum=6)
    if algorithm == 3:
        raise ValueError("algorithm 3 releases noisy values: use svt_numerical_value")
    c = check_int(c, "c", minimum=1)
    t = check_real(threshold, "threshold")
    q = _vector(data)
    shape = (size, q.size)
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
    a query not answered; audit it through a statistic (e.g. :func:`svt_pattern`)."""
    size, rng, eps = _common(size, rng, epsilon)
    c = check_int(c, "c", minimum=1)
    t = check_real(threshold, "threshold")
    q = _vector(data)
    eps1 = eps / 2.0
    rho = rng.laplace(0.0, 1.0 / eps1, (size, 1))
    noisy = q + rng.laplace(0.0, c / (eps - eps1), (size, q.size))
    above = noisy >= t + rho
    status = _cut_off(above, c)
    return np.where(status == 1, noisy, np.where(status == 0, -np.inf, np.inf))


# ---------------------------------------------------------------------------------------------
# the paper's mechanisms on one person's n-dimensional vector
# ---------------------------------------------------------------------------------------------


def laplace_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """The paper's correct Laplace mechanism on ``[0, 1]^n``: ``Lap(0, n/epsilon)`` per coordinate."""
    size, rng, eps = _common(size, rng, epsilon)
    x = _vector(data)
    return x + rng.laplace(0.0, x.size / eps, (size, x.size))


def adept_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """BUG: ADePT's noise ``Lap(0, 1/epsilon)`` on ``[0, 1]^n``, sensitivity 1 instead of ``n``: true epsilon
    ``n epsilon`` (the paper's Section 2, after Habernal 2021)."""
    size, rng, eps = _common(size, rng, epsilon)
    x = _vector(data)
    return x + rng.laplace(0.0, 1.0 / eps, (size, x.size))


def dptext_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """BUG: DPText's noise (the paper's Eq. 9 with ``v ~ Uni(0, 1)``, NaN replaced by 0), scale ``n/epsilon``:
    the noise is never negative (the paper's Theorem 3.1), so the true epsilon is infinite (Theorem 3.2)."""
    size, rng, eps = _common(size, rng, epsilon)
    x = _vector(data)
    return x + sample_dptext((size, x.size), 0.0, x.size / eps, rng=rng, nan="zero")


# ---------------------------------------------------------------------------------------------
# statistics for real vectors (functions from an array of outputs to one real per output)
# ---------------------------------------------------------------------------------------------


def _outputs(outputs: object) -> NDArray[np.float64]:
    return check_float_array(outputs, "outputs", ndim=2, min_size=1)


def first_coordinate(outputs: NDArray) -> NDArray[np.float64]:
    """The first coordinate of each output: the bin that differs in the histogram pairs."""
    return _outputs(outputs)[:, 0]


def clipped_sum(outputs: NDArray) -> NDArray[np.float64]:
    """``sum_i clip(o_i, 0, 1)``: with Laplace noise of one scale on every coordinate, the privacy loss between
    the all-zeros and the all-ones vector is an increasing function of it (the likelihood-ratio statistic)."""
    return np.clip(_outputs(outputs), 0.0, 1.0).sum(axis=1)


def minimum(outputs: NDArray) -> NDArray[np.float64]:
    """The smallest coordinate of each output (below 1 is impossible for DPText on the all-ones vector)."""
    return _outputs(outputs).min(axis=1)


def svt_pattern(outputs: NDArray) -> NDArray[np.int8]:
    """The above / below / not-answered pattern of :func:`svt_numerical_value`'s rows (1, 0, -1), which
    the auditor then treats as categories."""
    arr = _outputs(outputs)
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
    """
    arr = _outputs(outputs)
    grid = check_int(grid, "grid", minimum=2, maximum=1 << 16)
    if decimals is not None:
        decimals = check_int(decimals, "decimals", minimum=0, maximum=15)
    c = check_int(c, "c", minimum=1, maximum=1 << 20)
    threshold = check_real(threshold, "threshold")
    eps = _epsilon(epsilon)
    q, qp = _vector(x, "x"), _vector(x_prime, "x_prime")
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


# ---------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------


#: What an entry's ``privacy`` says: private as the code runs on a real computer, private only in real
#: arithmetic (the algorithm is correct, its floating-point implementation is not), or not private.
PRIVACY: tuple[str, str, str] = ("as implemented", "in real arithmetic only", "not private")


@dataclass(frozen=True)
class ZooEntry:
    """One mechanism with its claim, its standard neighbouring inputs and what is known about it.

    ``private`` says whether the algorithm meets its claim (in real arithmetic); ``privacy`` (one of
    :data:`PRIVACY`) says whether the code does, as implemented, and ``why`` gives the reason when it
    does not.  ``privacy`` defaults to ``"in real arithmetic only"`` for a private entry and ``"not
    private"`` otherwise.  ``true_epsilon`` is the exact epsilon for the stated neighbourhood where known,
    at the claimed ``delta`` (``math.inf`` when the mechanism is not (epsilon, delta)-DP for any epsilon),
    else ``None``; for the float samplers it is the epsilon in real arithmetic.  ``dpsniper`` is the lower
    bound published by Bichsel et al. (2021) at claimed epsilon = 0.1, where one exists: a 90% lower
    confidence bound, the larger of their logistic-regression and neural-network runs (by the union bound,
    both hold with probability at least 80%).
    """

    name: str
    mechanism: Callable[..., Any]
    epsilon: float
    x: tuple[float, ...] | float
    x_prime: tuple[float, ...] | float
    private: bool
    true_epsilon: float | None
    known: str
    source: str
    delta: float = 0.0
    statistic: Callable[[NDArray], NDArray] | None = None
    dpsniper: float | None = None
    options: tuple[tuple[str, Any], ...] = field(default=())
    privacy: str | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {type(self.name).__name__}")
        check_callable(self.mechanism, "mechanism", "mechanism(data, size, rng, *, epsilon)")
        _epsilon(self.epsilon)
        for field_name in ("x", "x_prime"):
            check_float_array(getattr(self, field_name), field_name, finite=True, ndim=(0, 1), min_size=1)
        for field_name in ("known", "source"):
            if not isinstance(getattr(self, field_name), str):
                raise TypeError(f"{field_name} must be a string, got {type(getattr(self, field_name)).__name__}")
        check_real(self.delta, "delta", low=0.0, high=1.0, high_open=True)
        check_bool(self.private, "private")
        if self.privacy is None:
            object.__setattr__(self, "privacy", PRIVACY[1] if self.private else PRIVACY[2])
        check_choice(self.privacy, "privacy", PRIVACY)
        if (self.privacy == PRIVACY[2]) == self.private:
            raise ValueError(f"privacy {self.privacy!r} contradicts private={self.private}")
        if not isinstance(self.why, str):
            raise TypeError(f"why must be a string, got {type(self.why).__name__}")
        for field_name in ("true_epsilon", "dpsniper"):
            value = getattr(self, field_name)
            if value is not None:
                check_real(value, field_name, low=0.0, allow_inf=True)
        if self.statistic is not None:
            check_callable(self.statistic, "statistic", "statistic(outputs)")
        if not isinstance(self.options, tuple):
            raise TypeError(f"options must be a tuple of (name, value) pairs, got {type(self.options).__name__}")

    def release(self) -> Callable[..., Any]:
        """The mechanism as ``release(data, size, rng)``, with the claimed epsilon (and delta) bound in
        (epsilon only if the mechanism takes it: RAPPOR's privacy is set by its own parameters)."""
        kwargs = dict(self.options)
        if _takes(self.mechanism, "epsilon"):
            kwargs["epsilon"] = self.epsilon
        if self.delta:
            kwargs["delta"] = self.delta
        return functools.partial(self.mechanism, **kwargs)

    def audit(self, trials: int, *, seed: int | None = None, **kwargs: Any) -> PairAudit:
        """:func:`dptutor.audit.audit_pair` on the standard inputs, at the claimed epsilon and delta."""
        return audit_pair(
            self.release(), self.x, self.x_prime, epsilon=self.epsilon, delta=self.delta, trials=trials,
            rng=check_seed(seed, "seed"), statistic=self.statistic, **kwargs,
        )


def _takes(fn: Callable[..., Any], name: str) -> bool:
    """True when ``fn`` has a parameter ``name`` (or ``**kwargs``, or a signature that cannot be read)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _entries(epsilon: float = 0.1) -> dict[str, ZooEntry]:
    e = epsilon
    ones5, ones10 = (1.0,) * 5, (1.0,) * 10
    split = (2.0,) * 5 + (0.0,) * 5
    svt_pairs = {1: ((0.0,) * 5 + ones10[:5], ones10[:5] + (0.0,) * 5), 2: ((0.0,) * 5 + ones10[:5], ones10[:5] + (0.0,) * 5),
                 4: (ones10, split), 5: (split, ones10), 6: (ones10[:5] + (0.0,) * 5, (0.0,) * 5 + ones10[:5])}
    dps = {1: 0.086, 2: 0.086, 3: 0.182, 4: 0.170, 5: 1.761, 6: 0.272}
    out = [
        ZooEntry("laplace_count", exact_laplace_count, e, 0.0, 1.0, True, float(1 / _exact_scale(e)),
                 "epsilon-DP; exact discrete Laplace noise, the event output >= 1 attains e^epsilon",
                 "dwork2006calibrating", dpsniper=0.098, privacy=PRIVACY[0]),
        ZooEntry("gaussian_count", discrete_gaussian_count, e, 0.0, 1.0, True,
                 discrete_gaussian_epsilon(1e-5, _classic_sigma(e, 1e-5), 1),
                 "(epsilon, delta)-DP with delta = 1e-5: exact discrete Gaussian noise, classic calibration; true "
                 "epsilon given at delta = 1e-5 (not epsilon-DP for any epsilon at delta = 0)",
                 "canonne2020discrete", delta=1e-5, privacy=PRIVACY[0]),
        ZooEntry("randomized_response", randomized_response, e, 1, 0, True, e, "exactly epsilon-DP", "dwork2014algorithmic",
                 why="the keep probability e^eps / (1 + e^eps) is rounded to a double and compared with a "
                     "53-bit uniform: epsilon is off by about 1e-16, and no output is impossible"),
        ZooEntry("noisy_histogram", exact_noisy_histogram, e, ones5, (2.0,) + ones5[1:], True, float(1 / _exact_scale(e)),
                 "epsilon-DP; exact discrete Laplace noise on each bin",
                 "ding2018detecting", statistic=first_coordinate, dpsniper=0.098, privacy=PRIVACY[0]),
        ZooEntry("histogram_eps", histogram_eps, e, ones5, (2.0,) + ones5[1:], False, 1.0 / e,
                 "noise scale epsilon instead of 1/epsilon: true epsilon 1/epsilon", "ding2018detecting",
                 statistic=first_coordinate, dpsniper=4.60),
        ZooEntry("report_noisy_max", report_noisy_max, e, ones5, (0.0,) + (2.0,) * 4, True, None,
                 "epsilon-DP (the index only)", "ding2018detecting", dpsniper=0.092,
                 why="floating-point Laplace noise; only the index is released, so no output is impossible, "
                     "but the probabilities are those of rounded noise (no proof as implemented)"),
        ZooEntry("report_noisy_max_exponential", report_noisy_max, e, ones5, (0.0,) + (2.0,) * 4, True, None,
                 "epsilon-DP (the index only)", "ding2018detecting", dpsniper=0.098, options=(("noise", "exponential"),),
                 why="floating-point exponential noise; the index hides the low bits, but no proof as implemented"),
        ZooEntry("report_noisy_max_value", report_noisy_max_value, e, (0.0,) * 5, ones5, False, 5 * e / 2,
                 "releases the maximum's value: true epsilon k epsilon / 2 = 0.25 for k = 5 answers", "ding2018detecting",
                 dpsniper=0.249),
        ZooEntry("report_noisy_max_value_exponential", report_noisy_max_value, e, ones5, (2.0,) * 5, False, math.inf,
                 "releases the maximum's value with one-sided noise: not epsilon-DP for any epsilon", "ding2018detecting",
                 dpsniper=0.353, options=(("noise", "exponential"),)),
    ]
    for alg in (1, 2, 4, 5, 6):
        x, xp = svt_pairs[alg]
        # Algorithms 3 and 6 are not epsilon-DP for any epsilon as the number of queries grows; with
        # ten queries their loss is finite but not known in closed form, like Algorithm 4's.
        true = math.inf if alg == 5 else None
        why = ("floating-point Laplace noise in the comparisons; only above / below is released, but no proof "
               "as implemented") if alg in (1, 2) else ""
        out.append(ZooEntry(f"svt{alg}", svt, e, x, xp, alg in (1, 2), true,
                            SVT_ALGORITHMS[alg], "lyu2017understanding", dpsniper=dps[alg], options=(("algorithm", alg),),
                            why=why))
    # Algorithm 3 at c = 1 (DP-Sniper's setting): its leak per answer is epsilon_2 / c, so it shrinks as c
    # grows, unlike Algorithm 4's.  Its loss grows with the answers "below" that come before a released
    # value and sit just above the noisy threshold; a staircase of 28 answers puts some step there
    # whatever the threshold noise.  Outputs are real vectors, audited through the exact likelihood ratio.
    stairs = tuple(float(v) for v in range(-59, 81, 5))
    stairs_up = tuple(v + 1.0 for v in stairs)
    llr3 = functools.partial(svt_log_likelihood_ratio, x=stairs, x_prime=stairs_up, epsilon=e, c=1, threshold=1.0)
    out.append(ZooEntry("svt3", svt_numerical_value, e, stairs, stairs_up, False, None, SVT_ALGORITHMS[3],
                        "lyu2017understanding", statistic=llr3, dpsniper=dps[3], options=(("c", 1), ("threshold", 1.0))))
    n = 8
    zeros, ones = (0.0,) * n, (1.0,) * n
    out += [
        ZooEntry("laplace_vector", granular_laplace_vector, e, zeros, ones, True, float(granular_loss(granular_parameters(e, n))),
                 "the paper's correct mechanism, b = n / epsilon, made exact: Google's granular Laplace "
                 "(true epsilon: its exact loss, just below epsilon)",
                 "habernal2022reparametrization", statistic=clipped_sum, privacy=PRIVACY[0]),
        ZooEntry("adept_vector", adept_vector, e, zeros, ones, False, n * e, "ADePT: sensitivity 1 instead of n, true epsilon n epsilon",
                 "habernal2021devil", statistic=clipped_sum),
        ZooEntry("dptext_vector", dptext_vector, e, zeros, ones, False, math.inf,
                 "DPText: one-sided noise (the paper's Theorems 3.1 and 3.2)", "habernal2022reparametrization", statistic=minimum),
    ]
    return {entry.name: entry for entry in out}


#: The zoo at claimed epsilon = 0.1 (StatDP's and DP-Sniper's setting), keyed by name.
ZOO: dict[str, ZooEntry] = _entries(0.1)
