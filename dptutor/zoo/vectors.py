"""The paper's mechanisms on one person's n-dimensional vector, and statistics of real outputs (see
:mod:`dptutor.zoo`).

A statistic maps an array of outputs (one per row) to one real per output; the auditor thresholds it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_answer_vector, check_mechanism_call, check_output_rows, check_size
from dptutor.distributions import sample_dptext

__all__ = ["laplace_vector", "adept_vector", "dptext_vector", "first_coordinate", "clipped_sum", "minimum"]


def laplace_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """The paper's correct Laplace mechanism on ``[0, 1]^n``: ``Lap(0, n/epsilon)`` per coordinate.

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
        The noisy vectors, one per row.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    x = check_answer_vector(data)
    return x + rng.laplace(0.0, x.size / eps, check_size((size, x.size), "size * len(data)"))


def adept_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """BUG: ADePT's noise ``Lap(0, 1/epsilon)`` on ``[0, 1]^n``, sensitivity 1 instead of ``n``: true epsilon
    ``n epsilon`` (the paper's Section 2, after Habernal 2021).

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
        The noisy vectors, one per row.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    x = check_answer_vector(data)
    return x + rng.laplace(0.0, 1.0 / eps, check_size((size, x.size), "size * len(data)"))


def dptext_vector(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """BUG: DPText's noise (the paper's Eq. 9 with ``v ~ Uni(0, 1)``, NaN replaced by 0), scale ``n/epsilon``:
    the noise is never negative (the paper's Theorem 3.1), so the true epsilon is infinite (Theorem 3.2).

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
        The noisy vectors, one per row (never below ``data``).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    x = check_answer_vector(data)
    return x + sample_dptext(check_size((size, x.size), "size * len(data)"), 0.0, x.size / eps, rng=rng, nan="zero")


def first_coordinate(outputs: NDArray) -> NDArray[np.float64]:
    """The first coordinate of each output: the bin that differs in the histogram pairs.

    Parameters
    ----------
    outputs : array_like, shape (trials, k)
        A mechanism's outputs, one per row.

    Returns
    -------
    numpy.ndarray of float64, shape (trials,)
        The first column.

    Raises
    ------
    TypeError
        If ``outputs`` does not hold real numbers.
    ValueError
        If ``outputs`` is not a non-empty 2-D array or holds NaN.
    """
    return check_output_rows(outputs)[:, 0]


def clipped_sum(outputs: NDArray) -> NDArray[np.float64]:
    """``sum_i clip(o_i, 0, 1)``: with Laplace noise of one scale on every coordinate, the privacy loss between
    the all-zeros and the all-ones vector is an increasing function of it (the likelihood-ratio statistic).

    Parameters
    ----------
    outputs : array_like, shape (trials, k)
        A mechanism's outputs, one per row.

    Returns
    -------
    numpy.ndarray of float64, shape (trials,)
        Each row's sum after clipping to ``[0, 1]``.

    Raises
    ------
    TypeError
        If ``outputs`` does not hold real numbers.
    ValueError
        If ``outputs`` is not a non-empty 2-D array or holds NaN.
    """
    return np.clip(check_output_rows(outputs), 0.0, 1.0).sum(axis=1)


def minimum(outputs: NDArray) -> NDArray[np.float64]:
    """The smallest coordinate of each output (below 1 is impossible for DPText on the all-ones vector).

    Parameters
    ----------
    outputs : array_like, shape (trials, k)
        A mechanism's outputs, one per row.

    Returns
    -------
    numpy.ndarray of float64, shape (trials,)
        Each row's smallest entry.

    Raises
    ------
    TypeError
        If ``outputs`` does not hold real numbers.
    ValueError
        If ``outputs`` is not a non-empty 2-D array or holds NaN.
    """
    return check_output_rows(outputs).min(axis=1)
