"""The Gaussian mechanism and its two calibrations, for (epsilon, delta)-DP.

The classic calibration (Dwork and Roth 2014, Theorem A.1) and the analytic one (Balle and Wang 2018,
Theorem 8 and Algorithm 1): :func:`gaussian_delta` is the exact delta of the Gaussian mechanism at a
given epsilon, :func:`gaussian_sigma_analytic` the least sigma that meets a target.  The names are also
importable from :mod:`dptutor.mechanisms`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_positive, check_probability, check_real, check_rng, checked_toward
from dptutor.renyi import round_up

__all__ = [
    "gaussian_delta",
    "gaussian_sigma_classic",
    "gaussian_sigma_analytic",
    "gaussian_mechanism",
    "scale_noise",
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
_ULP: float = float(np.finfo(float).eps)


def gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The smallest ``delta`` for which ``N(0, sigma^2)`` noise is (epsilon, delta)-DP.

    Balle and Wang (2018), Theorem 8: for a query of l2 sensitivity ``sensitivity``,
    ``delta(epsilon) = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)``
    (the privacy profile of the Gaussian mechanism; it is exact, not a bound).  Computed with mpmath, with
    the digits that a log-space evaluation in doubles says are lost to cancellation, and rounded up: the
    result is never below the exact delta (at most an ulp or so above it).  An exact input (a ``Fraction``,
    a long double, an int beyond 2**53) is first rounded to the double on its safe side: ``epsilon`` and
    ``sigma`` down, ``sensitivity`` up.

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    sigma : float
        The noise's standard deviation, ``> 0``.
    sensitivity : float, optional
        The query's l2 sensitivity, ``> 0`` (default 1).

    Returns
    -------
    float
        ``delta`` in [0, 1].

    Raises
    ------
    TypeError, ValueError
        For a bad ``epsilon``, ``sigma`` or ``sensitivity`` (the message names it).

    Examples
    --------
    >>> 0.0 < gaussian_delta(1.0, 4.0) < 1e-3
    True
    """
    # epsilon = 0: the total variation distance, as documented.  Exact inputs to the side of a larger delta (their
    # nearest doubles gave a delta below the exact one: a sigma of 11/10, a sensitivity of 1/3, an epsilon of 4/5)
    eps = checked_toward(epsilon, "epsilon", check_real, up=False, low=0.0)
    sig = checked_toward(sigma, "sigma", check_positive, up=False, positive=True)
    sens = checked_toward(sensitivity, "sensitivity", check_positive, up=True)
    s = sig / sens
    if not math.isfinite(s) or s == 0.0:
        raise ValueError(f"sigma / sensitivity must be a positive finite number, got {sig!r} / {sens!r}")
    log_delta, err = _gaussian_log_delta(eps, s)
    if err <= _GAUSSIAN_RTOL and log_delta + 2.0 * err < -745.2:  # below half the least subnormal, yet positive
        return 5e-324
    # Recomputed in mpmath with the digits the doubles' error estimate says they lose (a small difference of
    # large log-CDFs), and rounded up: the double result is below the exact delta about half the time.
    lost = math.log10(max(err, 1e-300) / np.finfo(float).eps) if math.isfinite(err) else 400.0
    result = _delta_up(eps, sig, sens, 30 + int(min(max(lost, 0.0), 400.0)))
    if not 0.0 <= result <= 1.0:
        raise ValueError(
            f"epsilon={epsilon!r} with sigma/sensitivity={s!r} is outside the range where delta can be computed"
        )
    return result


def _delta_up(eps: float, sig: float, sens: float, digits: int) -> float:
    """Theorem 8's delta for the exact ratio ``sig / sens`` in mpmath at ``digits`` digits, plus a bound on the
    working precision's error, rounded up to a double: never below the exact value; NaN when mpmath fails."""
    import mpmath

    try:
        with mpmath.workdps(digits):
            e, r = mpmath.mpf(eps), mpmath.mpf(sig) / mpmath.mpf(sens)
            upper = mpmath.ncdf(1 / (2 * r) - e * r)
            value = upper - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * r) - e * r)
            bound = max(value, 0) + upper * mpmath.mpf(10) ** (10 - digits)
    except (OverflowError, ValueError, ZeroDivisionError):
        return math.nan
    if bound >= 1:
        return 1.0
    if bound < mpmath.mpf(2) ** -1076:  # positive, below half the least subnormal (and its exponent may be huge)
        return 5e-324
    man, exp = bound.man_exp
    return round_up(Fraction(int(man)) * Fraction(2) ** int(exp))


def calibration_targets(epsilon: object, delta: object) -> tuple[float, float]:
    """A target ``epsilon`` > 0 and ``delta`` in (0, 1) that a noise scale must meet, checked and rounded down (an
    exact input, such as a ``Fraction``, to the double at most it: its nearest double may lie above it, and a
    sigma that meets that double then misses the exact target).  The discrete Gaussian's and ``approximate_dp``'s
    calibrations use it too."""
    return (checked_toward(epsilon, "epsilon", check_positive, up=False, positive=True),
            checked_toward(delta, "delta", check_probability, up=False, positive=True))


def _check_gaussian_parameters(epsilon: object, delta: object, sensitivity: object) -> tuple[float, float, float]:
    """The checked targets rounded down (:func:`calibration_targets`) and the sensitivity up (an exact input to the
    double on the side of more noise: its nearest double gave a sigma below the exact calibration's)."""
    return (*calibration_targets(epsilon, delta),
            checked_toward(sensitivity, "sensitivity", check_positive, up=True))


def gaussian_sigma_classic(epsilon: float, delta: float, sensitivity: float) -> float:
    """The classic calibration ``sigma = sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon``.

    Dwork and Roth (2014), Theorem A.1, which proves (epsilon, delta)-DP only for
    ``0 < epsilon < 1``.  For ``epsilon >= 1`` the formula is not a theorem (and for large
    ``epsilon`` with large ``delta`` it gives too little noise), so this function refuses it with a
    ``ValueError`` naming ``epsilon``: use :func:`gaussian_sigma_analytic`, valid for every epsilon.

    Parameters
    ----------
    epsilon : float
        In (0, 1).
    delta : float
        In (0, 1).
    sensitivity : float
        The query's l2 sensitivity, ``> 0``.

    Returns
    -------
    float
        ``sigma``, rounded up: never below the formula's exact value (at the exact inputs: a ``Fraction``
        ``epsilon`` or ``delta`` is rounded down first, a ``sensitivity`` up).

    Raises
    ------
    TypeError, ValueError
        For a bad ``epsilon`` (including ``epsilon >= 1``), ``delta`` or ``sensitivity``.
    """
    eps, dlt, sens = _check_gaussian_parameters(epsilon, delta, sensitivity)
    if eps >= 1.0:
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian bound (Dwork and Roth 2014, Theorem A.1), "
            f"got {epsilon!r}; use gaussian_sigma_analytic for epsilon >= 1"
        )
    sigma = _classic_up(eps, dlt, sens)
    if not math.isfinite(sigma):
        raise ValueError(f"sensitivity / epsilon is too large: sigma overflows ({sensitivity!r} / {epsilon!r})")
    return sigma


def _classic_up(eps: float, dlt: float, sens: float) -> float:
    """``sens sqrt(2 ln(1.25 / dlt)) / eps`` in mpmath at 40 digits, moved past their error and rounded up to a
    double (in doubles, three roundings and two libm calls leave it below the exact value about half the time)."""
    import mpmath

    with mpmath.workdps(40):
        value = mpmath.mpf(sens) * mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / mpmath.mpf(dlt))) / mpmath.mpf(eps)
        man, exp = (value * (1 + mpmath.mpf(10) ** -30)).man_exp
    return round_up(Fraction(int(man)) * Fraction(2) ** int(exp))


def gaussian_sigma_analytic(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest ``sigma`` for which the Gaussian mechanism is (epsilon, delta)-DP.

    The analytic Gaussian mechanism (Balle and Wang 2018, Theorem 8, solved as in their
    Algorithm 1 but with a bracketing root finder): ``sigma`` solves ``gaussian_delta(epsilon,
    sigma, sensitivity) = delta``.  The profile is decreasing in ``sigma`` and depends only on
    ``s = sigma / sensitivity``, so ``scipy.optimize.brentq`` finds ``ln s`` with
    ``ln delta(s) = ln delta`` in log space (stable for large epsilon and tiny delta).  Valid for
    every epsilon > 0, and never larger than :func:`gaussian_sigma_classic` where that applies.

    Parameters
    ----------
    epsilon : float
        ``> 0``.
    delta : float
        In (0, 1).
    sensitivity : float
        The query's l2 sensitivity, ``> 0``.

    Returns
    -------
    float
        The least ``sigma`` with ``gaussian_delta(epsilon, sigma, sensitivity) <= delta`` (to the root
        finder's tolerance; an exact ``epsilon`` or ``delta`` is rounded down first, a ``sensitivity`` up).

    Raises
    ------
    TypeError, ValueError
        For a bad ``epsilon``, ``delta`` or ``sensitivity``, or a target the solver cannot bracket.
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
    s, step, u = math.exp(log_s), 4.0 * _ULP, 4.0 * _ULP
    for _ in range(60):  # the root may sit a few ulps on the wrong side: raise s until delta <= the target, with
        log_d, err = _gaussian_log_delta(eps, s * (1.0 - u))  # room for delta's rounding and sigma / sensitivity's
        if not err <= _GAUSSIAN_RTOL or log_d + err <= target:
            break
        s, step = s * (1.0 + step), 2.0 * step
    if not err <= _GAUSSIAN_RTOL:
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} is outside the range where the analytic calibration "
            "can be computed accurately in double precision"
        )
    sigma = s * sens
    if not math.isfinite(sigma) or sigma == 0.0:
        raise ValueError(
            f"sensitivity={sensitivity!r} with epsilon={epsilon!r} gives a sigma outside the float range"
        )
    if sigma / sens < s * (1.0 - u):  # a subnormal sigma rounded down
        sigma = math.nextafter(sigma, math.inf)
    return sigma


#: Elements per block in ``scale_noise``: its dozen temporaries stay small (and in cache) for any size of ``z``.
_NOISE_BLOCK: int = 1 << 15


def scale_noise(z: object, sigma: object) -> NDArray[np.float64]:
    """``z * sigma`` elementwise, each product rounded away from zero: noise never smaller than its exact scale.

    A mechanism draws standard noise ``z`` and multiplies it by its scale.  In doubles the product is rounded to
    nearest, and about half the time that is toward zero: the noise added is then up to half an ulp smaller
    in magnitude than ``|z| sigma``, a shrinking that is tiny but systematic, where the privacy proof assumes
    noise of scale at least ``sigma``.  Here each element is instead the double of least magnitude at or
    beyond the exact real product ``z sigma`` (with its sign): the nearest product, moved one ulp away from
    zero exactly where it fell short.  Which products fell short is known exactly: with ``z = m 2^e`` and
    ``sigma = s 2^f`` (``np.frexp``, mantissas in [1/2, 1)), Dekker's TwoProduct gives ``m s = q + err``
    exactly, and the rounded product scaled by ``2^-(e + f)`` equals ``q``, except when it underflowed (or
    overflowed), where the scaled difference is still exact; the sign of ``z sigma`` minus the rounded product
    is then that of ``(q - scaled) + err``.  It costs about 1.5 standard normal draws per element.

    Parameters
    ----------
    z : array_like
        Standard draws (any finite reals).
    sigma : float
        The scale, ``> 0``; an exact value (a ``Fraction``, a long double) is rounded up to a double first.

    Returns
    -------
    numpy.ndarray of float64
        A new array shaped like ``z``: the products, ``+-inf`` where ``|z| sigma`` lies beyond the largest double
        (the mechanisms report that as an overflow).

    Raises
    ------
    TypeError, ValueError
        For a bad ``z`` (not real, or not finite) or ``sigma``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> z, sigma = 0.1, 0.3
    >>> abs(Fraction(z * sigma)) < Fraction(z) * Fraction(sigma)  # round to nearest: a hair too small
    True
    >>> Fraction(float(scale_noise(z, sigma))) >= Fraction(z) * Fraction(sigma)
    True
    """
    arr = check_float_array(z, "z", finite=True)
    sig = checked_toward(sigma, "sigma", check_positive, up=True)
    flat = arr.reshape(-1)
    out = np.empty(flat.shape, dtype=np.float64)
    for start in range(0, flat.size, _NOISE_BLOCK):
        out[start:start + _NOISE_BLOCK] = _away_from_zero(flat[start:start + _NOISE_BLOCK], sig)
    return out.reshape(arr.shape)


def _away_from_zero(z: NDArray[np.float64], sigma: float) -> NDArray[np.float64]:
    """``z * sigma`` (finite ``z``, finite ``sigma > 0``) rounded away from zero: see ``scale_noise``."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        product = z * sigma  # rounded to nearest (0.0 or a subnormal on underflow, inf on overflow)
        m, e = np.frexp(z)
        s, f = math.frexp(sigma)
        q = m * s  # 0 or in [1/4, 1]: exact up to err, and no underflow in TwoProduct's terms
        split = 134217729.0 * m  # Veltkamp's split of m and s into 26-bit halves (2^27 + 1)
        m_hi = split - (split - m)
        m_lo = m - m_hi
        s_split = 134217729.0 * s
        s_hi = s_split - (s_split - s)
        s_lo = s - s_hi
        err = m_hi * s_hi - q
        err += m_hi * s_lo
        err += m_lo * s_hi
        err += m_lo * s_lo  # m s = q + err exactly (Dekker 1971)
        e += f
        np.negative(e, out=e)
        q -= np.ldexp(product, e)  # exact: 0 unless the product under- or overflowed (then Sterbenz, 0 or +-inf)
        q += err  # z sigma - product, scaled by 2^-(e + f): its sign, exactly (a rounded sum keeps its sign)
        q *= m  # positive where that error has the sign of z (m has it): the product fell short
        bits = product.view(np.int64)
        bits += q > 0  # one ulp away from zero: doubles are sign and magnitude (-0.0 + 1 ulp is -5e-324)
    return product


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
    ``sensitivity`` is the query's l2 sensitivity; the default ``None`` means ``sqrt(n)`` (rounded up), the l2
    sensitivity of the identity on [0, 1]^n (the l1 sensitivity ``n`` is what the Laplace
    mechanism needs).  ``calibration`` is ``"analytic"`` (:func:`gaussian_sigma_analytic`, the
    least noise, any epsilon) or ``"classic"`` (:func:`gaussian_sigma_classic`, epsilon < 1).

    Parameters
    ----------
    x : numpy.ndarray
        Query answers, shape ``(trials, n)``, finite.
    epsilon : float
        ``> 0`` (below 1 for the classic calibration).
    delta : float
        In (0, 1).
    rng : numpy.random.Generator
        The source of randomness.
    sensitivity : float or None, optional
        The l2 sensitivity (default ``sqrt(n)``).
    calibration : {"analytic", "classic"}, optional
        How ``sigma`` is chosen (default ``"analytic"``).

    Returns
    -------
    numpy.ndarray of float64
        ``x`` plus the noise.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it), or outputs that overflow.

    Notes
    -----
    What the doubles guarantee: ``sigma`` is never below the calibration's exact value, and each noise value is
    ``z * sigma`` rounded away from zero (:func:`scale_noise`), never smaller in magnitude than the exact product of
    numpy's standard normal draw ``z`` (itself a double, from a ziggurat) and ``sigma``.  The release
    ``x + noise`` is then rounded to nearest, as every floating-point addition is: within half an ulp of the
    exact sum, on either side.  That rounding is not fixed here: as the book's floating-point chapter shows (the
    grid lemma), the doubles a release can take depend on ``x``, so no floating-point Gaussian mechanism is
    exactly (epsilon, delta)-DP as implemented; the discrete Gaussian (``dptutor.discrete_gaussian``) is.
    """
    arr = check_float_array(x, "x", finite=True, ndim=2)
    rng = check_rng(rng)
    if sensitivity is None and arr.shape[1] == 0:
        raise ValueError("x must have at least one column (n >= 1) for the default sensitivity sqrt(n)")
    sens = _sqrt_up(arr.shape[1]) if sensitivity is None else sensitivity
    how = check_choice(calibration, "calibration", ("analytic", "classic"))
    calibrate = gaussian_sigma_analytic if how == "analytic" else gaussian_sigma_classic
    sigma = calibrate(epsilon, delta, sens)
    out = scale_noise(rng.standard_normal(arr.shape), sigma)  # |noise| >= |z| sigma: never shrunk by rounding
    with np.errstate(over="ignore"):  # an overflow is reported below, as a ValueError
        np.add(out, arr, out=out)
    if not np.isfinite(out).all():
        raise ValueError(f"x + noise overflows: |x| too large for sigma={sigma:g}")
    return out


def _sqrt_up(n: int) -> float:
    """The smallest double at least ``sqrt(n)`` (``math.sqrt`` rounds to nearest: ``sqrt(3)`` came out below)."""
    root = math.sqrt(n)
    return math.nextafter(root, math.inf) if Fraction(root) ** 2 < n else root
