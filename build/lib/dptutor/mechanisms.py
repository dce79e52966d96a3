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
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_batch, check_positive, check_rng
from dptutor.distributions import sample_dptext, standard_laplace_fill

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
]


class Mechanism(Protocol):
    """Anything callable as ``mechanism(x, epsilon, rng) -> ndarray``.

    ``x`` is a float64 array of shape ``(trials, n)`` holding the true values, ``epsilon`` the
    privacy budget, ``rng`` a :class:`numpy.random.Generator`; the result has the shape of ``x``.
    A mechanism must not modify ``x`` (the auditor passes a read-only array).
    """

    def __call__(
        self, x: NDArray[np.float64], epsilon: float, rng: np.random.Generator
    ) -> NDArray: ...


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _scale(numerator: int | float, epsilon: float) -> float:
    """The Laplace scale ``numerator / epsilon``; a tiny epsilon that overflows it is refused by name."""
    b = numerator / epsilon
    if not math.isfinite(b):
        raise ValueError(f"epsilon = {epsilon!r} is too small: the noise scale {numerator}/epsilon overflows")
    return b


def _laplace_noise_added(x: NDArray, b: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """``x + Lap(0, b)`` elementwise, with one output allocation and in-place passes only."""
    out = np.empty(x.shape, dtype=np.float64)
    standard_laplace_fill(out, rng=rng)
    np.multiply(out, b, out=out)
    np.add(out, x, out=out)
    return out


def add_laplace_noise(x: NDArray, b: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """``x + Lap(0, b)`` elementwise for a batch ``x`` of shape ``(trials, n)``: the building block of
    every Laplace-type mechanism (the scale ``b`` is the caller's choice, e.g. ``n / epsilon``)."""
    return _laplace_noise_added(check_batch(x), check_positive(b, "b"), check_rng(rng))


# ---------------------------------------------------------------------------------------------
# the mechanisms
# ---------------------------------------------------------------------------------------------


def laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """The Laplace mechanism with the correct l1 sensitivity ``n``: ``x + Lap(0, n / epsilon)``."""
    x = check_batch(x)
    eps = check_positive(epsilon, "epsilon")
    return _laplace_noise_added(x, _scale(x.shape[1], eps), check_rng(rng))


def adept_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """ADePT's Laplace mechanism: ``x + Lap(0, 1 / epsilon)``, sensitivity 1 whatever ``n`` is.

    For ``n > 1`` this under-noises by a factor ``n`` (Habernal 2021), so the privacy loss grows
    with the dimension (Figure 2, third panel).
    """
    x = check_batch(x)
    eps = check_positive(epsilon, "epsilon")
    return _laplace_noise_added(x, _scale(1.0, eps), check_rng(rng))


def dptext_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """DPText: ``x`` plus Eq. 9 noise from ``v ~ Uni(0, 1)`` (Eq. 8), NaN noise set to 0.

    Scale ``b = n / epsilon``.  The noise is never negative (Theorem 3.1), so an output below 1
    can only come from ``x = 0``: infinite privacy loss (Theorem 3.2).
    """
    x = check_batch(x)
    eps = check_positive(epsilon, "epsilon")
    rng = check_rng(rng)
    noise = sample_dptext(x.shape, 0.0, _scale(x.shape[1], eps), rng=rng, nan="zero")
    np.add(noise, x, out=noise)
    return noise


def wrong_sensitivity_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """The correct Laplace output multiplied by 0.5, as in the authors' code.

    The factor shrinks the output towards 0, so the attack's threshold 0.5 on the output is a
    threshold 1 on ``x + noise``: the attack is weaker, not the mechanism less private (scaling is
    post-processing).  At ``n = 1`` its loss is exactly ``epsilon`` (see
    :func:`dptutor.audit.exact_loss`), a boundary case for testing the auditor's bounds.
    """
    out = laplace_mechanism(x, epsilon, rng)
    np.multiply(out, 0.5, out=out)
    return out


def copy_input_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """No privacy: return a copy of ``x`` (``epsilon`` and ``rng`` are checked, then ignored)."""
    x = check_batch(x)
    check_positive(epsilon, "epsilon")
    check_rng(rng)
    return np.array(x, dtype=np.float64, copy=True)


def random_output_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Perfect privacy, no utility: each coordinate 0 or 1 with probability 1/2, whatever ``x`` is."""
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
# Not in MECHANISMS (the paper's six).  Inputs are checked with dptutor._validate.

from dptutor._validate import check_int  # noqa: E402
from dptutor.exact import granular_parameters, granular_round, sample_discrete_laplace  # noqa: E402
from dptutor.floating import sample_uniform_double, snap, snapping_parameters  # noqa: E402

__all__ += ["numpy_laplace_mechanism", "snapping_mechanism", "granular_laplace_mechanism"]


def _checked(x: object, epsilon: object, rng: object) -> tuple[NDArray[np.float64], float, np.random.Generator]:
    """The three arguments of a mechanism, checked, with ``x`` as float64."""
    arr = check_batch(x).astype(np.float64, copy=False)
    return arr, check_positive(epsilon, "epsilon"), check_rng(rng)


def numpy_laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """The Laplace mechanism with numpy's own sampler: ``x + rng.laplace(0, n / epsilon)``.

    Correct in distribution, but its outputs are a porous set of doubles (see
    :func:`dptutor.floating.reachable`): not epsilon-DP on a real computer.
    """
    arr, eps, rng = _checked(x, epsilon, rng)
    noise = rng.laplace(0.0, arr.shape[1] / eps, size=arr.shape)
    np.add(noise, arr, out=noise)
    return noise


def snapping_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator, *, bound: float | None = None
) -> NDArray[np.float64]:
    """Mironov's (2012) snapping mechanism, coordinate by coordinate, for data in [0, 1]^n.

    ``clamp_B(round_Lambda(clamp_B(x) + S lambda ln U*))`` with ``U*`` a uniform double rounded
    down (:func:`dptutor.floating.sample_uniform_double`), ``S`` a fair sign,
    ``lambda = n (1 + 2^-49 B) / epsilon`` and ``Lambda`` the smallest power of two ``>= lambda``;
    ``bound`` is ``B`` (default ``32 n / epsilon``, see :func:`dptutor.floating.snapping_parameters`).
    Its exact privacy loss: :func:`dptutor.floating.snapping_loss`.
    """
    arr, eps, rng = _checked(x, epsilon, rng)
    params = snapping_parameters(eps, arr.shape[1], bound)
    u = sample_uniform_double(arr.size, rng=rng).reshape(arr.shape)
    negative = rng.integers(0, 2, size=arr.shape, dtype=np.int8) == 1
    return snap(arr, u, negative, params)


def granular_laplace_mechanism(
    x: NDArray, epsilon: float, rng: np.random.Generator, *, bits: int = 40
) -> NDArray[np.float64]:
    """Google's secure Laplace mechanism: ``r (round(x / r) + Z)`` with ``r = 2^k`` and exact noise.

    ``r`` is the smallest power of two ``>= (n / epsilon) 2^-bits`` and ``Z`` is discrete Laplace
    with integer scale ``t >= (n / r + n) / epsilon``, drawn exactly
    (:func:`dptutor.exact.sample_discrete_laplace`); see :func:`dptutor.exact.granular_parameters`.
    Every output is a multiple of ``r`` and every multiple of ``r`` is possible from every input.
    Exact privacy loss: :func:`dptutor.exact.granular_loss`.
    """
    arr, eps, rng = _checked(x, epsilon, rng)
    bits = check_int(bits, "bits", minimum=0, maximum=48)
    params = granular_parameters(eps, arr.shape[1], bits)
    steps = granular_round(arr, params) + sample_discrete_laplace(params.t, arr.shape, rng)
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


# ---------------------------------------------------------------------------------------------
# approximate DP: the Gaussian mechanism (issue 15)
#
# The classic calibration (Dwork and Roth 2014, Theorem A.1) and the analytic one (Balle and Wang
# 2018, Theorem 8 and Algorithm 1).  Kept in one block so that other work on this module merges
# cleanly.
# ---------------------------------------------------------------------------------------------

from dptutor._validate import (  # noqa: E402  (here, so that this block stays self-contained)
    check_choice,
    check_float_array,
    check_positive,
    check_probability,
    check_rng,
)

__all__ += [
    "gaussian_delta",
    "gaussian_sigma_classic",
    "gaussian_sigma_analytic",
    "gaussian_mechanism",
]


def _gaussian_log_delta(epsilon: float, s: float) -> tuple[float, float]:
    """``(ln delta, err)`` of Balle and Wang's Theorem 8 for ``s = sigma / sensitivity``, in log space.

    ``delta = Phi(A) - e^eps Phi(B)`` with ``A = 1/(2s) - eps s`` and ``B = -1/(2s) - eps s``,
    written as ``ln Phi(A) + ln(1 - exp(x))`` with ``x = eps + ln Phi(B) - ln Phi(A) < 0`` (the
    difference is a hockey-stick divergence, >= 0), using ``scipy.special.log_ndtr`` for both
    log-CDFs, so neither ``e^eps`` overflows nor ``Phi(B)`` underflows for large ``eps``.

    ``err`` bounds the relative error of ``delta`` from rounding (first-order propagation of one
    unit roundoff in ``A``, ``B``, the two log-CDFs and ``x``): large where ``x`` is a small
    difference of large numbers (tiny ``eps`` with tiny ``delta``, or ``eps`` near the float limit).
    """
    from scipy import special

    if s == 0.0:  # sigma underflowed: no noise, delta = 1
        return 0.0, math.inf
    if math.isinf(s):
        return -math.inf, math.inf
    u = 2.0 * np.finfo(float).eps
    a = 0.5 / s - epsilon * s
    b = -0.5 / s - epsilon * s
    log_pa = float(special.log_ndtr(a))
    log_pb = float(special.log_ndtr(b))
    x = epsilon + log_pb - log_pa
    if math.isinf(log_pb) or x >= 0.0:  # rounding at the extremes: no usable value
        return -math.inf, math.inf
    # log(1 - e^x), accurate on both sides of x = -ln 2
    log1m = math.log(-math.expm1(x)) if x > -math.log(2.0) else math.log1p(-math.exp(x))
    # d(ln Phi)/dt = phi/Phi (the inverse Mills ratio), in log space
    mills_a, mills_b = _inverse_mills(a, log_pa), _inverse_mills(b, log_pb)
    err_ab = u * (0.5 / s + epsilon * s)
    err_log_pa = u * abs(log_pa) + err_ab * mills_a
    err_x = u * (abs(log_pa) + abs(log_pb) + epsilon) + err_ab * (mills_a + mills_b)
    sensitivity_of_log1m = math.exp(x - log1m)  # |d ln(1 - e^x) / dx| = e^x / (1 - e^x)
    return log_pa + log1m, err_log_pa + err_x * sensitivity_of_log1m


def _inverse_mills(t: float, log_cdf: float) -> float:
    """``phi(t) / Phi(t)`` given ``ln Phi(t)``; ``|t| + 1/|t|`` (its asymptote) far in the left tail."""
    if t < -30.0:
        return -t - 1.0 / t
    return math.exp(-0.5 * t * t - 0.5 * math.log(2.0 * math.pi) - log_cdf)


#: Largest relative rounding error of delta (estimated by ``_gaussian_log_delta``) that the
#: Gaussian calibrations accept; beyond it they raise instead of returning an inaccurate sigma.
_GAUSSIAN_RTOL: float = 1e-9


def gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The smallest ``delta`` for which ``N(0, sigma^2)`` noise is (epsilon, delta)-DP.

    Balle and Wang (2018), Theorem 8: for a query of l2 sensitivity ``sensitivity``,
    ``delta(epsilon) = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)``
    (the privacy profile of the Gaussian mechanism; it is exact, not a bound).  Computed in log
    space in doubles, or with mpmath where doubles would lose more than ~1e-9 of relative precision.
    """
    eps = check_positive(epsilon, "epsilon")
    sig = check_positive(sigma, "sigma")
    sens = check_positive(sensitivity, "sensitivity")
    s = sig / sens
    if not math.isfinite(s) or s == 0.0:
        raise ValueError(f"sigma / sensitivity must be a positive finite number, got {sig!r} / {sens!r}")
    log_delta, err = _gaussian_log_delta(eps, s)
    if err <= _GAUSSIAN_RTOL:
        return math.exp(log_delta)
    # Ill-conditioned in doubles (a small difference of large log-CDFs): redo it in mpmath with
    # enough digits for the cancellation the error estimate predicts.
    import mpmath

    lost = math.log10(err / np.finfo(float).eps) if math.isfinite(err) else 400.0
    digits = 30 + int(min(max(lost, 0.0), 400.0))
    try:
        with mpmath.workdps(digits):
            e, r = mpmath.mpf(eps), mpmath.mpf(s)
            value = mpmath.ncdf(1 / (2 * r) - e * r) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * r) - e * r)
            result = float(max(value, mpmath.mpf(0)))
    except (OverflowError, ValueError, ZeroDivisionError):
        result = math.nan
    if not 0.0 <= result <= 1.0:
        raise ValueError(
            f"epsilon={epsilon!r} with sigma/sensitivity={s!r} is outside the range where delta can be computed"
        )
    return result


def _check_gaussian_parameters(epsilon: object, delta: object, sensitivity: object) -> tuple[float, float, float]:
    return (
        check_positive(epsilon, "epsilon"),
        check_probability(delta, "delta"),
        check_positive(sensitivity, "sensitivity"),
    )


def gaussian_sigma_classic(epsilon: float, delta: float, sensitivity: float) -> float:
    """The classic calibration ``sigma = sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon``.

    Dwork and Roth (2014), Theorem A.1, which proves (epsilon, delta)-DP only for
    ``0 < epsilon < 1``.  For ``epsilon >= 1`` the formula is not a theorem (and for large
    ``epsilon`` with large ``delta`` it gives too little noise), so this function refuses it with a
    ``ValueError`` naming ``epsilon``: use :func:`gaussian_sigma_analytic`, valid for every epsilon.
    """
    eps, dlt, sens = _check_gaussian_parameters(epsilon, delta, sensitivity)
    if eps >= 1.0:
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian bound (Dwork and Roth 2014, Theorem A.1), "
            f"got {epsilon!r}; use gaussian_sigma_analytic for epsilon >= 1"
        )
    sigma = sens * math.sqrt(2.0 * (math.log(1.25) - math.log(dlt))) / eps  # no overflow in 1.25 / delta
    if not math.isfinite(sigma):
        raise ValueError(f"sensitivity / epsilon is too large: sigma overflows ({sensitivity!r} / {epsilon!r})")
    return sigma


def gaussian_sigma_analytic(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest ``sigma`` for which the Gaussian mechanism is (epsilon, delta)-DP.

    The analytic Gaussian mechanism (Balle and Wang 2018, Theorem 8, solved as in their
    Algorithm 1 but with a bracketing root finder): ``sigma`` solves ``gaussian_delta(epsilon,
    sigma, sensitivity) = delta``.  The profile is decreasing in ``sigma`` and depends only on
    ``s = sigma / sensitivity``, so ``scipy.optimize.brentq`` finds ``ln s`` with
    ``ln delta(s) = ln delta`` in log space (stable for large epsilon and tiny delta).  Valid for
    every epsilon > 0, and never larger than :func:`gaussian_sigma_classic` where that applies.
    """
    from scipy import optimize

    eps, dlt, sens = _check_gaussian_parameters(epsilon, delta, sensitivity)
    target = math.log(dlt)

    def gap(log_s: float) -> float:
        return _gaussian_log_delta(eps, math.exp(log_s))[0] - target

    # Bracket ln s, starting from the classic formula's value and widening by factors of e^2.
    guess = math.log(math.sqrt(2.0 * (math.log(1.25) - math.log(dlt)) + 1e-3) / eps)
    lo, hi = guess - 1.0, guess + 1.0
    for _ in range(400):
        if gap(lo) > 0.0:
            break
        lo -= 2.0
    for _ in range(400):
        if gap(hi) < 0.0:
            break
        hi += 2.0
    if not (gap(lo) > 0.0 > gap(hi)):
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} is outside the range where a sigma can be found in "
            "double precision"
        )
    log_s = optimize.brentq(gap, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    if not _gaussian_log_delta(eps, math.exp(log_s))[1] <= _GAUSSIAN_RTOL:
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} is outside the range where the analytic calibration "
            "can be computed accurately in double precision"
        )
    sigma = math.exp(log_s) * sens
    if not math.isfinite(sigma) or sigma == 0.0:
        raise ValueError(
            f"sensitivity={sensitivity!r} with epsilon={epsilon!r} gives a sigma outside the float range"
        )
    return sigma


def gaussian_mechanism(
    x: NDArray,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    sensitivity: float | None = None,
    calibration: str = "analytic",
) -> NDArray[np.float64]:
    """The Gaussian mechanism: ``x + N(0, sigma^2)`` elementwise, (epsilon, delta)-DP.

    ``x`` is a real array of shape ``(trials, n)`` (each row one dataset's query answer).
    ``sensitivity`` is the query's l2 sensitivity; the default ``None`` means ``sqrt(n)``, the l2
    sensitivity of the identity on [0, 1]^n (the l1 sensitivity ``n`` is what the Laplace
    mechanism needs).  ``calibration`` is ``"analytic"`` (:func:`gaussian_sigma_analytic`, the
    least noise, any epsilon) or ``"classic"`` (:func:`gaussian_sigma_classic`, epsilon < 1).
    """
    arr = check_float_array(x, "x", finite=True, ndim=2)
    rng = check_rng(rng)
    if sensitivity is None and arr.shape[1] == 0:
        raise ValueError("x must have at least one column (n >= 1) for the default sensitivity sqrt(n)")
    sens = math.sqrt(arr.shape[1]) if sensitivity is None else sensitivity
    how = check_choice(calibration, "calibration", ("analytic", "classic"))
    calibrate = gaussian_sigma_analytic if how == "analytic" else gaussian_sigma_classic
    sigma = calibrate(epsilon, delta, sens)
    out = rng.standard_normal(arr.shape)
    with np.errstate(over="ignore"):  # an overflow is reported below, as a ValueError
        np.multiply(out, sigma, out=out)
        np.add(out, arr, out=out)
    if not np.isfinite(out).all():
        raise ValueError(f"x + noise overflows: |x| too large for sigma={sigma:g}")
    return out
