"""Selection mechanisms: the exponential mechanism, report-noisy-max and the sparse vector technique.

Each sampler takes an explicit ``rng`` and returns one output (``size=None``) or ``size`` independent
outputs, so that ``lambda data, size, rng: sampler(data, ..., rng, size=size)`` is a mechanism for
:func:`dptutor.audit.audit_pair`.  Each has an exact (or numerically integrated) output distribution
beside it, for checking privacy losses without sampling (the exact laws are defined in
``dptutor._selection_laws`` and importable from here).  Labels (``thm-...``, ``alg-...``,
``sel-eq-...``) refer to the chapter "Selection mechanisms" (book/selection.md).

Conventions.  ``scores`` / ``answers`` hold one real number per candidate or query; neighbouring
datasets change each of them by at most ``sensitivity`` (the component-wise neighbourhood of
Dwork and Roth 2014, Section 3.3).  ``threshold`` is the threshold tau of the sparse vector technique
and ``c`` its cut-off.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dptutor._selection_args import MAX_CANDIDATES, NOISES, answer_array, draw_shape, noise_scale
from dptutor._selection_laws import (  # the exact laws: defined there, re-exported here
    MAX_EXACT_SCORE,  # noqa: F401 (re-exported)
    above_threshold_probabilities,
    exponential_mechanism_exact,
    exponential_mechanism_probabilities,
    max_log_ratio,
    report_noisy_max_probabilities,
)
from dptutor._validate import as_generator, check_choice, check_int, check_positive, check_real

__all__ = [
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "exponential_mechanism_exact",
    "report_noisy_max",
    "report_noisy_max_probabilities",
    "above_threshold",
    "above_threshold_probabilities",
    "sparse_vector",
    "max_log_ratio",
]


def _in_noise_units(scale: float, *values: Any) -> tuple[Any, ...]:
    """``values`` (noise scales, answers, thresholds) divided by ``unit = max(scale, 1)``, for comparing noisy answers.

    With a noise scale of at least 1 the samplers compare in units of the noise (``q / scale + Z`` for
    ``q + scale * Z``), so that nothing overflows to inf for answers near ``1e308`` and a huge scale; below 1 they
    compare as they are (``unit = 1``: no answer underflows).  Dividing both sides of a comparison by one positive
    unit leaves its outcome as it is."""
    unit = max(scale, 1.0)
    return tuple(v / unit for v in values)


# ---------------------------------------------------------------------------------------------
# the exponential mechanism
# ---------------------------------------------------------------------------------------------


def exponential_mechanism(
    scores: Any, epsilon: float, rng: np.random.Generator, *, sensitivity: float = 1.0, size: int | None = None
) -> Any:
    """The index of one candidate drawn with the probabilities of equation ``sel-eq-exponential`` (``size`` draws if given).

    Parameters
    ----------
    scores : array_like of float, shape (k,)
        The candidates' scores (finite; at most ``10**6``).
    epsilon : float
        The privacy budget (positive).
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    sensitivity : float, default 1.0
        The queries' (or scores') sensitivity ``Delta`` (positive).
    size : int or None, default None
        The number of independent draws; ``None`` draws one and returns it as a scalar (or one row).

    Returns
    -------
    int or numpy.ndarray of int64, shape (size,)
        The drawn index (``size=None``) or indices.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.selection import exponential_mechanism
    >>> exponential_mechanism([0.0, 50.0], 10.0, rng=0)
    1
    """
    p = exponential_mechanism_probabilities(scores, epsilon, sensitivity)
    rng = as_generator(rng)
    shape = draw_shape(size, 1)
    # Inverse-CDF sampling on the cumulative probabilities (rng.choice would recheck the sum).
    cdf = np.cumsum(p)
    u = rng.random(shape) * cdf[-1]
    out = np.minimum(np.searchsorted(cdf, u, side="right"), p.size - 1)
    return int(out) if size is None else out.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# report-noisy-max
# ---------------------------------------------------------------------------------------------


def report_noisy_max(answers: Any, epsilon: float, rng: np.random.Generator, *, noise: str = "laplace",
                     sensitivity: float = 1.0, size: int | None = None) -> Any:
    """The index (only) of the largest ``answers[i] + Z_i``, ``Z_i`` i.i.d. ``Lap(2 Delta / epsilon)``
    or ``Exp(2 Delta / epsilon)`` (the selection chapter's theorem): epsilon-DP.

    Parameters
    ----------
    answers : array_like of float, shape (k,)
        The query answers (finite; at most ``10**6``).
    epsilon : float
        The privacy budget (positive).
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    noise : {'laplace', 'exponential'}, default 'laplace'
        The noise, of scale ``2 Delta / epsilon``.
    sensitivity : float, default 1.0
        The queries' (or scores') sensitivity ``Delta`` (positive).
    size : int or None, default None
        The number of independent draws; ``None`` draws one and returns it as a scalar (or one row).

    Returns
    -------
    int or numpy.ndarray of int64, shape (size,)
        The index of the largest noisy answer (``size=None``), or one per draw.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    q = answer_array(answers, "answers")
    noise = check_choice(noise, "noise", NOISES)
    eps = check_positive(epsilon, "epsilon")
    scale = noise_scale(2.0, check_positive(sensitivity, "sensitivity"), eps)
    rng = as_generator(rng)
    shape = draw_shape(size, q.size) + (q.size,)
    z = rng.laplace(0.0, 1.0, shape) if noise == "laplace" else rng.standard_exponential(shape)  # = rng's scaled draws / scale
    z_scale, q_units = _in_noise_units(scale, scale, q)
    out = np.argmax(q_units + z_scale * z, axis=-1)  # never inf: no ties at +-inf
    return int(out) if size is None else out.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# the sparse vector technique
# ---------------------------------------------------------------------------------------------


def sparse_vector(answers: Any, threshold: float, epsilon: float, rng: np.random.Generator, *, c: int = 1,
                  sensitivity: float = 1.0, size: int | None = None) -> Any:
    """The sparse vector technique with cut-off ``c`` (the selection chapter's algorithm; Lyu, Su and Li
    2017, Algorithm 1): epsilon-DP.

    ``rho ~ Lap(Delta / epsilon_1)`` once, ``nu_i ~ Lap(2 c Delta / epsilon_2)`` per query, with
    ``epsilon_1 = epsilon_2 = epsilon / 2``; answer 1 ("above") when ``q_i + nu_i >= threshold + rho``,
    else 0, and stop after the ``c``-th 1: later queries get -1 (not answered).  Returns an int8 row
    per output (one row for ``size=None``).

    Parameters
    ----------
    answers : array_like of float, shape (k,)
        The query answers (finite; at most ``10**6``).
    threshold : float
        The threshold ``tau``.
    epsilon : float
        The privacy budget (positive).
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    c : int, default 1
        The cut-off, in ``[1, 10**6]``.
    sensitivity : float, default 1.0
        The queries' (or scores') sensitivity ``Delta`` (positive).
    size : int or None, default None
        The number of independent draws; ``None`` draws one and returns it as a scalar (or one row).

    Returns
    -------
    numpy.ndarray of int8, shape (k,) or (size, k)
        1 (above), 0 (below) or -1 (not answered) per query, one row per draw.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    q = answer_array(answers, "answers")
    t = check_real(threshold, "threshold")
    eps = check_positive(epsilon, "epsilon")
    c = check_int(c, "c", minimum=1, maximum=MAX_CANDIDATES)
    sens = check_positive(sensitivity, "sensitivity")
    b_rho = noise_scale(2.0, sens, eps)  # Delta / epsilon_1
    b_nu = noise_scale(4.0 * c, sens, eps)  # 2 c Delta / epsilon_2
    rng = as_generator(rng)
    shape = draw_shape(size, q.size)
    rows = shape[0] if shape else 1
    rho_scale, nu_scale, q_units, t_units = _in_noise_units(b_nu, b_rho, b_nu, q, t)
    rho = rng.laplace(0.0, rho_scale, (rows, 1))
    nu = rng.laplace(0.0, nu_scale, (rows, q.size))
    above = (q_units + nu) >= (t_units + rho)
    before = np.cumsum(above, axis=1) - above  # answers "above" strictly before each query
    out = above.astype(np.int8)
    out[before >= c] = -1
    return out[0] if size is None else out


def above_threshold(
    answers: Any,
    threshold: float,
    epsilon: float,
    rng: np.random.Generator,
    *,
    sensitivity: float = 1.0,
    size: int | None = None,
) -> Any:
    """AboveThreshold (the selection chapter's algorithm; Dwork and Roth 2014, Algorithm 1): the index of
    the first query with ``q_i + nu_i >= threshold + rho``, or ``len(answers)`` if there is none.

    ``rho ~ Lap(2 Delta / epsilon)``, ``nu_i ~ Lap(4 Delta / epsilon)``: the sparse vector technique
    with ``c = 1``.  epsilon-DP (the selection chapter's theorem on the sparse vector technique).

    Parameters
    ----------
    answers : array_like of float, shape (k,)
        The query answers (finite; at most ``10**6``).
    threshold : float
        The threshold ``tau``.
    epsilon : float
        The privacy budget (positive).
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    sensitivity : float, default 1.0
        The queries' (or scores') sensitivity ``Delta`` (positive).
    size : int or None, default None
        The number of independent draws; ``None`` draws one and returns it as a scalar (or one row).

    Returns
    -------
    int or numpy.ndarray of int64, shape (size,)
        The index of the first query above the noisy threshold, or ``len(answers)`` if none is.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    q = answer_array(answers, "answers")
    rows = sparse_vector(q, threshold, epsilon, rng, c=1, sensitivity=sensitivity, size=1 if size is None else size)
    hit = rows == 1
    out = np.where(hit.any(axis=1), np.argmax(hit, axis=1), q.size)
    return int(out[0]) if size is None else out.astype(np.int64)
