"""Report noisy max and its buggy value-releasing variant (see :mod:`dptutor.zoo`).

Every query answer may change by at most 1 between neighbours (sensitivity 1, component-wise).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_answer_vector, check_choice, check_mechanism_call, check_size

__all__ = ["report_noisy_max", "report_noisy_max_value"]


def _noisy_answers(data: Any, size: int, rng: np.random.Generator, epsilon: float, noise: str) -> NDArray[np.float64]:
    noise = check_choice(noise, "noise", ("laplace", "exponential"))
    answers = check_answer_vector(data)
    shape = check_size((size, answers.size), "size * len(data)")
    if noise == "laplace":
        return answers + rng.laplace(0.0, 2.0 / epsilon, shape)
    if noise == "exponential":
        return answers + rng.exponential(2.0 / epsilon, shape)
    raise ValueError(f"noise must be 'laplace' or 'exponential', got {noise!r}")


def report_noisy_max(
    data: Any, size: int, rng: np.random.Generator, *, epsilon: float, noise: str = "laplace"
) -> NDArray[np.int64]:
    """The index of the largest noisy query answer, noise ``Lap(2/epsilon)`` or ``Exp(2/epsilon)``:
    epsilon-DP (StatDP's ``noisy_max_v1a`` and ``v2a``; DP-Sniper's ReportNoisyMax1 and 2).

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
    noise : {'laplace', 'exponential'}, default 'laplace'
        The noise added to every answer, of scale ``2 / epsilon``.

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
        The index of the largest noisy answer, one per output.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
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
    noise : {'laplace', 'exponential'}, default 'laplace'
        The noise added to every answer, of scale ``2 / epsilon``.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The largest noisy answer, one per output.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    return np.max(_noisy_answers(data, size, rng, eps, noise), axis=1)
