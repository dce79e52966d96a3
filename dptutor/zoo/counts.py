"""Counts, randomized response and histograms of the zoo (see :mod:`dptutor.zoo`).

Each mechanism is ``mechanism(data, size, rng, *, epsilon, ...)`` and returns ``size`` independent
outputs for the dataset ``data``; ``rng`` is a ``numpy.random.Generator``, a ``SeedSequence`` or an
int seed.  A count changes by 1 between neighbours; a histogram by 1 in one bin.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_answer_vector,
    check_int,
    check_mechanism_call,
    check_probability,
    check_real,
    check_size,
)
from dptutor.exact import granular_parameters, granular_round, sample_discrete_gaussian, sample_discrete_laplace

__all__ = [
    "laplace_count",
    "gaussian_count",
    "exact_laplace_count",
    "discrete_gaussian_count",
    "exact_noisy_histogram",
    "granular_laplace_vector",
    "randomized_response",
    "noisy_histogram",
    "histogram_eps",
]


def laplace_count(data: float, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """A count (sensitivity 1) plus ``Lap(0, 1/epsilon)``: epsilon-DP (the paper's Eq. 2 with ``n = 1``).

    Parameters
    ----------
    data : float
        The true count (sensitivity 1).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy counts.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> import numpy as np
    >>> from dptutor.zoo import laplace_count
    >>> laplace_count(3.0, 4, 0, epsilon=1.0).shape
    (4,)
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    return check_real(data, "data") + rng.laplace(0.0, 1.0 / eps, size)


def gaussian_count(
    data: float, size: int, rng: np.random.Generator, *, epsilon: float, delta: float
) -> NDArray[np.float64]:
    """A count plus ``N(0, sigma^2)`` with the classic calibration ``sigma = sqrt(2 ln(1.25/delta)) / epsilon``
    (Dwork and Roth 2014, Theorem A.1; (epsilon, delta)-DP for epsilon < 1, never epsilon-DP).

    Parameters
    ----------
    data : float
        The true count (sensitivity 1).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.
    delta : float
        The claimed delta, in ``(0, 1)``.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy counts.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    dlt = check_probability(delta, "delta")
    sigma = math.sqrt(2.0 * (math.log(1.25) - math.log(dlt))) / eps  # 1.25 / dlt overflows for a subnormal dlt
    return check_real(data, "data") + rng.normal(0.0, sigma, size)


def _integer_answer(data: object) -> int:
    value = check_real(data, "data")
    if value != round(value) or abs(value) >= 2**52:
        raise ValueError(f"data must be an integer count (below 2**52 in magnitude), got {data!r}")
    return int(value)


def exact_scale(epsilon: float) -> Fraction:
    """A rational scale ``t >= 1 / epsilon`` with denominator 2^20 (so ``1 / t <= epsilon`` exactly).

    Parameters
    ----------
    epsilon : float
        The privacy budget (positive).

    Returns
    -------
    fractions.Fraction
        The smallest multiple of ``2**-20`` that is at least ``1 / epsilon``.

    Raises
    ------
    ValueError
        If ``epsilon`` is so small that the scale's numerator reaches ``2**53``.
    """
    t = Fraction(math.ceil(Fraction(1) / Fraction(epsilon) * 2**20), 2**20)
    if t.numerator >= 1 << 53:
        raise ValueError(f"epsilon = {epsilon!r} is too small for the exact sampler (scale numerator above 2**53)")
    return t


def exact_laplace_count(data: float, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """A count plus exact discrete Laplace noise of scale ``t >= 1/epsilon`` (Canonne, Kamath and Steinke
    2020): epsilon-DP as implemented (every integer is a possible output of every count).  The output is
    the integer as a float64, so that threshold events apply.

    Parameters
    ----------
    data : float
        The true count, a whole number below ``2**52`` in magnitude.
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy counts, integers stored as floats.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    count = _integer_answer(data)
    return (sample_discrete_laplace(exact_scale(eps), size, rng) + count).astype(np.float64)


def classic_sigma(epsilon: float, delta: float) -> Fraction:
    """The classic sigma ``sqrt(2 ln(1.25/delta)) / epsilon``, rounded up to a multiple of 1/32 (a small
    denominator keeps the exact sampler's integers in int64).

    Parameters
    ----------
    epsilon : float
        The privacy budget (positive).
    delta : float
        The delta, in ``(0, 1)``.

    Returns
    -------
    fractions.Fraction
        The classic sigma rounded up to a multiple of 1/32.

    Raises
    ------
    ValueError
        If sigma reaches ``2**25``.
    """
    sigma = math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    if not sigma < 2.0**25:
        raise ValueError(f"epsilon={epsilon!r}, delta={delta!r} give sigma={sigma:g}: too large")
    return Fraction(math.ceil(sigma * 32 * (1 + 2**-40)), 32)


def discrete_gaussian_count(
    data: float, size: int, rng: np.random.Generator, *, epsilon: float, delta: float
) -> NDArray[np.float64]:
    """A count plus exact discrete Gaussian noise (:func:`dptutor.exact.sample_discrete_gaussian`) with the
    classic calibration ``sigma = sqrt(2 ln(1.25/delta)) / epsilon`` rounded up to a multiple of 1/32: its
    exact epsilon at ``delta`` comes from :func:`dptutor.discrete_gaussian.discrete_gaussian_epsilon`.

    Parameters
    ----------
    data : float
        The true count, a whole number below ``2**52`` in magnitude.
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.
    delta : float
        The claimed delta, in ``(0, 1)``.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy counts, integers stored as floats.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    dlt = check_probability(delta, "delta")
    count = _integer_answer(data)
    return (sample_discrete_gaussian(classic_sigma(eps, dlt), size, rng) + count).astype(np.float64)


def exact_noisy_histogram(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """Each bin of an integer histogram plus exact discrete Laplace noise of scale ``t >= 1/epsilon``:
    epsilon-DP as implemented when one person changes one bin by 1.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The histogram's bins, whole numbers below ``2**52`` in magnitude.
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.

    Returns
    -------
    numpy.ndarray of float64, shape (size, k)
        The noisy histograms, one per row (integers stored as floats).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    counts = check_answer_vector(data)
    if not (np.all(counts == np.round(counts)) and np.all(np.abs(counts) < 2**52)):
        raise ValueError("data must hold integer counts (below 2**52 in magnitude)")
    noise = sample_discrete_laplace(exact_scale(eps), check_size((size, counts.size), "size * len(data)"), rng)
    return (noise + counts.astype(np.int64)).astype(np.float64)


def granular_laplace_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """The paper's Laplace mechanism on ``[0, 1]^n`` made private as implemented: Google's granular
    Laplace (:func:`dptutor.mechanisms.granular_laplace_mechanism`), ``r (round(x / r) + Z)`` with exact
    discrete Laplace ``Z``; its exact loss is :func:`dptutor.granular.granular_loss` (below epsilon).

    Parameters
    ----------
    data : array_like of float, shape (n,)
        One person's vector (finite; in ``[0, 1]^n`` for the privacy claim).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.

    Returns
    -------
    numpy.ndarray of float64, shape (size, n)
        The noisy vectors, one per row, on the grid of multiples of ``r``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    x = check_answer_vector(data)
    params = granular_parameters(eps, x.size)
    try:
        rounded = granular_round(x, params)
    except ValueError as exc:
        raise ValueError(f"epsilon = {eps!r} makes the granularity r = {params.r:g} too fine for data ({exc})") from exc
    steps = rounded + sample_discrete_laplace(params.t, check_size((size, x.size), "size * len(data)"), rng)
    return steps.astype(np.float64) * params.r  # exact: |steps| < 2^53, r a power of two


def randomized_response(data: int, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.bool_]:
    """Report the bit ``data`` with probability ``e^eps / (1 + e^eps)``, else its negation: exactly epsilon-DP.

    Parameters
    ----------
    data : int
        The true bit, 0 or 1.
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.

    Returns
    -------
    numpy.ndarray of bool, shape (size,)
        The reported bits.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    bit = check_int(data, "data", minimum=0, maximum=1)
    keep = rng.random(size) < 1.0 / (1.0 + math.exp(-eps))
    return keep if bit else ~keep


def noisy_histogram(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """Each bin of the histogram ``data`` plus ``Lap(0, 1/epsilon)``: epsilon-DP when one person changes one
    bin by 1 (StatDP's ``histogram``, DP-Sniper's NoisyHist1).

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The histogram's bins (finite).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.

    Returns
    -------
    numpy.ndarray of float64, shape (size, k)
        The noisy histograms, one per row.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    counts = check_answer_vector(data)
    return counts + rng.laplace(0.0, 1.0 / eps, check_size((size, counts.size), "size * len(data)"))


def histogram_eps(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """BUG: the histogram with noise ``Lap(0, epsilon)`` instead of ``Lap(0, 1/epsilon)`` (StatDP's
    ``histogram_eps``, DP-Sniper's NoisyHist2).  Its true epsilon is ``1/epsilon``.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The histogram's bins (finite).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, in ``[1e-12, 1e300]``.

    Returns
    -------
    numpy.ndarray of float64, shape (size, k)
        The noisy histograms, one per row.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    if eps > 1e300:  # the noise's scale is epsilon itself: beyond this, counts + noise overflow to inf
        raise ValueError(f"epsilon must be at most 1e300 for histogram_eps (its noise scale), got {eps!r}")
    counts = check_answer_vector(data, summed=True)
    return counts + rng.laplace(0.0, eps, check_size((size, counts.size), "size * len(data)"))
