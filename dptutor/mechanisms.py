"""The six mechanisms audited in Habernal (ACL 2022), Section 4 and Figure 2.

A *mechanism* here is a synthetic-data release (local DP): it takes a batch of true values
``x`` of shape ``(trials, n)`` (each row one dataset, values in [0, 1]) and returns a privatised
array of the same shape.  Every mechanism has the signature ``mechanism(x, epsilon, rng)`` with
``rng`` a :class:`numpy.random.Generator`, so the auditor in :mod:`dptutor.audit` can run any of
them, or any user-written callable with that signature.

The l1 sensitivity of the identity query on [0, 1]^n is ``n`` (changing every coordinate by at
most 1), so the correct Laplace scale is ``b = n / epsilon``.  The other mechanisms reproduce
the mistakes the paper discusses:

========================  ==============================================================
``laplace``               Laplace mechanism, ``b = n / epsilon`` (correct).
``adept``                 ADePT's Laplace mechanism: ``b = 1 / epsilon`` whatever ``n`` is.
``dptext``                DPText: noise from Eq. 9 with ``v ~ Uni(0, 1)`` (Eq. 8), NaN noise
                          set to 0, ``b = n / epsilon`` (Theorems 3.1 and 3.2).
``wrong_sensitivity``     The correct Laplace output multiplied by 0.5 (the authors' code).
``copy_input``            Returns the input unchanged (no privacy).
``random_output``         Each coordinate 0 or 1 with probability 1/2 (perfect privacy).
========================  ==============================================================

The names of the authors' classes map to ours as in :data:`AUTHORS_NAMES`; their published numbers
are read by :func:`dptutor.reference.paper_results`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_batch, check_int, check_positive, check_rng
from dptutor.distributions import sample_dptext, standard_laplace_fill
from dptutor.exact import granular_parameters, granular_round, sample_discrete_laplace
from dptutor.gaussian import gaussian_delta, gaussian_mechanism, gaussian_sigma_analytic, gaussian_sigma_classic
from dptutor.renyi import round_up
from dptutor.snapping import sample_uniform_double, snap, snapping_parameters

__all__ = [
    "Mechanism",
    "MECHANISMS",
    "AUTHORS_NAMES",
    "laplace_mechanism",
    "adept_mechanism",
    "dptext_mechanism",
    "wrong_sensitivity_mechanism",
    "copy_input_mechanism",
    "random_output_mechanism",
    "add_laplace_noise",
    "numpy_laplace_mechanism",
    "snapping_mechanism",
    "granular_laplace_mechanism",
    "gaussian_delta",
    "gaussian_sigma_classic",
    "gaussian_sigma_analytic",
    "gaussian_mechanism",
]


class Mechanism(Protocol):
    """Anything callable as ``mechanism(x, epsilon, rng) -> ndarray``.

    ``x`` is a float64 array of shape ``(trials, n)`` holding the true values, ``epsilon`` the
    privacy budget, ``rng`` a :class:`numpy.random.Generator`; the result has the shape of ``x``.
    A mechanism must not modify ``x`` (the auditor passes a read-only array).

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``.
    epsilon : float
        The privacy budget.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray
        The released values, with the shape of ``x``.
    """

    def __call__(
        self, x: NDArray[np.float64], epsilon: float, rng: np.random.Generator
    ) -> NDArray: ...


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _scale(numerator: int | float, epsilon: float) -> float:
    """The Laplace scale ``numerator / epsilon`` rounded up (never below the exact quotient: less noise than
    needed would break the guarantee); a tiny epsilon that overflows it is refused by name."""
    b = round_up(Fraction(numerator) / Fraction(epsilon))
    if not math.isfinite(b):
        raise ValueError(f"epsilon = {epsilon!r} is too small: the noise scale {numerator}/epsilon overflows")
    return b


def _noise_added(noise: NDArray[np.float64], x: NDArray, b: float) -> NDArray[np.float64]:
    """``noise += x`` in place; an overflow (huge ``|x|`` or ``b``) is a ValueError, not a warning or inf."""
    with np.errstate(over="raise"):
        try:
            np.add(noise, x, out=noise)
            if b > 1e300 and not np.isfinite(noise).all():  # a sampler that itself returned inf
                raise FloatingPointError
        except FloatingPointError:
            raise ValueError(f"x + noise overflows float64 (noise scale b = {b:g}): |x| or b too large (epsilon too small)") from None
    return noise


def _laplace_noise_added(x: NDArray, b: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """``x + Lap(0, b)`` elementwise, with one output allocation and in-place passes only."""
    out = np.empty(x.shape, dtype=np.float64)
    standard_laplace_fill(out, rng=rng)
    with np.errstate(over="ignore"):  # b * E overflowing to inf is caught by _noise_added
        np.multiply(out, b, out=out)
    return _noise_added(out, x, b)


def add_laplace_noise(x: NDArray, b: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """``x + Lap(0, b)`` elementwise for a batch ``x`` of shape ``(trials, n)``: the building block of
    every Laplace-type mechanism (the scale ``b`` is the caller's choice, e.g. ``n / epsilon``).

    Parameters
    ----------
    x : numpy.ndarray
        A batch of shape ``(trials, n)``, finite.
    b : float
        The Laplace scale, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        ``x`` plus the noise, a new array.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``b`` or ``rng`` (the message names it).
    """
    return _laplace_noise_added(check_batch(x), check_positive(b, "b"), check_rng(rng))


# ---------------------------------------------------------------------------------------------
# the mechanisms
# ---------------------------------------------------------------------------------------------


def laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """The Laplace mechanism with the correct l1 sensitivity ``n``: ``x + Lap(0, n / epsilon)``.

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), or an ``epsilon`` so small that
        the noise scale overflows.
    """
    x = check_batch(x)
    eps = check_positive(epsilon, "epsilon")
    return _laplace_noise_added(x, _scale(x.shape[1], eps), check_rng(rng))


def adept_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """ADePT's Laplace mechanism: ``x + Lap(0, 1 / epsilon)``, sensitivity 1 whatever ``n`` is.

    For ``n > 1`` this under-noises by a factor ``n`` (Habernal 2021), so the privacy loss grows
    with the dimension (Figure 2, third panel).

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), or an ``epsilon`` so small that
        the noise scale overflows.
    """
    x = check_batch(x)
    eps = check_positive(epsilon, "epsilon")
    return _laplace_noise_added(x, _scale(1.0, eps), check_rng(rng))


def dptext_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """DPText: ``x`` plus Eq. 9 noise from ``v ~ Uni(0, 1)`` (Eq. 8), NaN noise set to 0.

    Scale ``b = n / epsilon``.  The noise is never negative (Theorem 3.1), so an output below 1
    can only come from ``x = 0``: infinite privacy loss (Theorem 3.2).

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), or an ``epsilon`` so small that
        the noise scale overflows.
    """
    x = check_batch(x)
    eps = check_positive(epsilon, "epsilon")
    rng = check_rng(rng)
    b = _scale(x.shape[1], eps)
    if x.size == 0:  # no columns: nothing to noise (and b = 0 is no Laplace scale)
        return np.zeros(x.shape)
    return _noise_added(sample_dptext(x.shape, 0.0, b, rng=rng, nan="zero"), x, b)


def wrong_sensitivity_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """The correct Laplace output multiplied by 0.5, as in the authors' code.

    The factor shrinks the output towards 0, so the attack's threshold 0.5 on the output is a
    threshold 1 on ``x + noise``: the attack is weaker, not the mechanism less private (scaling is
    post-processing).  At ``n = 1`` its loss is exactly ``epsilon`` (see
    :func:`dptutor.audit.exact_loss`), a boundary case for testing the auditor's bounds.

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), or an ``epsilon`` so small that
        the noise scale overflows.
    """
    out = laplace_mechanism(x, epsilon, rng)
    np.multiply(out, 0.5, out=out)
    return out


def copy_input_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """No privacy: return a copy of ``x`` (``epsilon`` and ``rng`` are checked, then ignored).

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), or an ``epsilon`` so small that
        the noise scale overflows.
    """
    x = check_batch(x)
    check_positive(epsilon, "epsilon")
    check_rng(rng)
    return np.array(x, dtype=np.float64, copy=True)


def random_output_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Perfect privacy, no utility: each coordinate 0 or 1 with probability 1/2, whatever ``x`` is.

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), or an ``epsilon`` so small that
        the noise scale overflows.
    """
    x = check_batch(x)
    check_positive(epsilon, "epsilon")
    rng = check_rng(rng)
    # One random byte per coordinate, its top bit as the coin (as fast as it gets in numpy).
    raw = rng.bit_generator.random_raw((x.size + 7) // 8).view(np.uint8)[: x.size]
    out = np.empty(x.shape, dtype=np.float64)
    np.right_shift(raw, 7, out=raw)
    out.reshape(-1)[:] = raw
    return out


# ---------------------------------------------------------------------------------------------
# floating-point safe mechanisms (chapter "The bits matter"): numpy's sampler and two fixes
# ---------------------------------------------------------------------------------------------
# Not in MECHANISMS (the paper's six).  Inputs are checked with dptutor._validate.  The Gaussian
# mechanism (approximate DP) lives in dptutor.gaussian; its names are importable from here.


def _checked(x: object, epsilon: object, rng: object) -> tuple[NDArray[np.float64], float, np.random.Generator]:
    """The three arguments of a mechanism, checked, with ``x`` as float64."""
    arr = check_batch(x).astype(np.float64, copy=False)
    return arr, check_positive(epsilon, "epsilon"), check_rng(rng)


def numpy_laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """The Laplace mechanism with numpy's own sampler: ``x + rng.laplace(0, n / epsilon)``.

    Correct in distribution, but its outputs are a porous set of doubles (see
    :func:`dptutor.floating.reachable`): not epsilon-DP on a real computer.

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), or an ``epsilon`` so small that
        the noise scale overflows.
    """
    arr, eps, rng = _checked(x, epsilon, rng)
    b = _scale(arr.shape[1], eps)
    return _noise_added(rng.laplace(0.0, b, size=arr.shape), arr, b)


def snapping_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator, *, bound: float | None = None
) -> NDArray[np.float64]:
    """Mironov's (2012) snapping mechanism, coordinate by coordinate, for data in [0, 1]^n.

    ``clamp_B(round_Lambda(clamp_B(x) + S lambda ln U*))`` with ``U*`` a uniform double rounded
    down (:func:`dptutor.snapping.sample_uniform_double`), ``S`` a fair sign,
    ``lambda = n (1 + 2^-49 B) / epsilon`` and ``Lambda`` the smallest power of two ``>= lambda``;
    ``bound`` is ``B`` (default ``32 n / epsilon``, see :func:`dptutor.snapping.snapping_parameters`).
    Its exact privacy loss: :func:`dptutor.snapping.snapping_loss`.

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.
    bound : float, optional
        The clamping bound ``B > 0`` (default ``32 n / epsilon``).

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon`` or ``rng`` (the message names it), an ``epsilon`` so small that
        the noise scale overflows, or a ``bound`` B (or, with the default bound, an ``epsilon``) outside
        Mironov's condition ``Lambda < B < 2**46 Lambda``.
    """
    arr, eps, rng = _checked(x, epsilon, rng)
    params = snapping_parameters(eps, max(arr.shape[1], 1), bound)  # x of shape (trials, 0): bound still checked
    if arr.size == 0:
        return np.zeros(arr.shape)
    u = sample_uniform_double(arr.size, rng=rng).reshape(arr.shape)
    negative = rng.integers(0, 2, size=arr.shape, dtype=np.int8) == 1
    return snap(arr, u, negative, params)


def granular_laplace_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator, *, bits: int = 40
) -> NDArray[np.float64]:
    """Google's secure Laplace mechanism: ``r (round(x / r) + Z)`` with ``r = 2^k`` and exact noise.

    ``r`` is the smallest power of two ``>= (n / epsilon) 2^-bits`` and ``Z`` is discrete Laplace
    with integer scale ``t >= (n / r + n) / epsilon``, drawn exactly
    (:func:`dptutor.exact.sample_discrete_laplace`); see :func:`dptutor.granular.granular_parameters`.
    Every output is a multiple of ``r`` and every multiple of ``r`` is possible from every input.
    Exact privacy loss: :func:`dptutor.granular.granular_loss`.

    Parameters
    ----------
    x : numpy.ndarray
        True values, shape ``(trials, n)``, finite.
    epsilon : float
        The privacy budget, ``> 0``.
    rng : numpy.random.Generator
        The source of randomness.
    bits : int, optional
        Bits of resolution below the scale ``n / epsilon``, 0 to 48 (default 40).

    Returns
    -------
    numpy.ndarray of float64
        The released values, with the shape of ``x``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``epsilon``, ``rng`` or ``bits`` (the message names it), an ``epsilon`` so small that
        the noise scale overflows, or one so large (for ``bits``) that the granularity ``r`` cannot represent
        data in [0, 1] (``x / r`` reaches ``2^62``).
    """
    arr, eps, rng = _checked(x, epsilon, rng)
    bits = check_int(bits, "bits", minimum=0, maximum=48)
    params = granular_parameters(eps, max(arr.shape[1], 1), bits)  # x of shape (trials, 0): no n = 0 error
    if arr.size == 0:
        return np.zeros(arr.shape)
    try:
        rounded = granular_round(arr, params)
    except ValueError:
        if params.r > 2.0**-62:  # values in [0, 1] fit in steps of r: x itself is too large
            raise
        raise ValueError(f"epsilon = {eps!r} is too large for bits = {bits} and n = {arr.shape[1]}: the granularity "
                         f"r = {params.r!r} makes x / r reach 2**62 for data in [0, 1]; use a smaller epsilon or fewer bits") from None
    steps = rounded + sample_discrete_laplace(params.t, arr.shape, rng)
    return steps.astype(np.float64) * params.r  # exact: |steps| < 2^53 and r is a power of two


#: The six built-in mechanisms, keyed by the names used throughout the book and the CLI.
MECHANISMS: dict[str, Mechanism] = {
    "laplace": laplace_mechanism,
    "adept": adept_mechanism,
    "dptext": dptext_mechanism,
    "wrong_sensitivity": wrong_sensitivity_mechanism,
    "copy_input": copy_input_mechanism,
    "random_output": random_output_mechanism,
}

#: Our mechanism names -> the class names in the authors' code and ``paper-results.json``.
AUTHORS_NAMES: dict[str, str] = {
    "laplace": "LaplaceMechanism",
    "adept": "LaplaceMechanismADePT",
    "dptext": "BeigiEtAlLaplaceMechanism",
    "wrong_sensitivity": "LaplaceMechanismWrongSensitivity",
    "copy_input": "NoPrivacyMechanism",
    "random_output": "CompletelyRandomMechanism",
}
