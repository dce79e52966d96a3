"""The discrete Gaussian mechanism of Canonne, Kamath and Steinke (2020), private as implemented.

:func:`discrete_gaussian_delta` is its exact (epsilon, delta) profile, summed over the integers and
rounded up; :func:`discrete_gaussian_epsilon` inverts it; :func:`discrete_gaussian_sigma` is the
analytic calibration for the discrete law; :class:`DiscreteGaussianRelease` and
:func:`discrete_gaussian_release` release integer queries, and real ones through a power-of-two
granularity, with noise drawn exactly (:func:`dptutor.exact.sample_discrete_gaussian`).  The names are
also importable from :mod:`dptutor.approximate_dp`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_int, check_positive, check_probability, check_real, check_rng, check_size, checked_toward
from dptutor._validate.rounding import exact_rational
from dptutor.exact import check_sigma, sample_discrete_gaussian
from dptutor.gaussian import calibration_targets, gaussian_sigma_analytic

__all__ = [
    "discrete_gaussian_delta",
    "discrete_gaussian_epsilon",
    "discrete_gaussian_sigma",
    "DiscreteGaussianRelease",
    "discrete_gaussian_release",
]

#: Relative error of one computed weight ``exp(-x^2 / (2 sigma^2))``: the exponent (at most 750) carries
#: three roundings (2^-53 each), numpy's ``exp`` at most 4 ulp; 1e-12 covers both with a wide margin.
_WEIGHT_RTOL: float = 1e-12
#: Weights are summed for ``|x| <= K`` with ``K^2 / (2 sigma^2) >= 750``: every omitted weight is below
#: ``e^-750`` (under a double's smallest subnormal), and their sum below ``e^-750 sigma^2`` (a geometric
#: tail bound), which the returned bound adds.
_LOG_TAIL: float = 750.0
#: The most terms on each side of 0 that a delta sums (2^21: ~0.3 s and ~100 MB per delta; 5e7 took GiBs).
_MAX_HALF: int = 1 << 21


def _sensitivity_steps(sensitivity: object) -> int:
    return check_int(sensitivity, "sensitivity", minimum=1, maximum=1 << 40)


def _dg_profile(epsilon: float, sig: Fraction, steps: int) -> tuple[float, float]:
    """``(delta, err)``: the discrete Gaussian's delta at ``epsilon`` and a bound on its error."""
    var = sig * sig
    var_f = float(var)
    half = math.ceil(math.sqrt(2.0 * _LOG_TAIL * var_f)) + steps + 1
    if half > _MAX_HALF:
        raise ValueError(f"sigma = {float(sig):g} with sensitivity = {steps} is too large for the exact sum "
                         f"(more than {2 * _MAX_HALF:,} terms)")
    xs = np.arange(-half, half + 1, dtype=np.float64)
    with np.errstate(under="ignore"):
        w = np.exp(-(xs * xs) / (2.0 * var_f))
    norm = float(w.sum())
    # L(x) = (steps^2 - 2 steps x) / (2 sigma^2) > epsilon  <=>  x < c = steps / 2 - epsilon sigma^2 / steps
    c = Fraction(steps, 2) - Fraction(epsilon) * var / steps
    m = math.ceil(c) - 1  # the largest integer x with x < c
    def cdf(top: int) -> float:
        i = top + half
        return float(w[: i + 1].sum()) / norm if i >= 0 else 0.0
    a = cdf(min(m, half))
    b = cdf(min(m - steps, half))
    eb = math.exp(epsilon + math.log(b)) if b > 0.0 else 0.0
    tail = math.exp(-_LOG_TAIL) * (var_f + 1.0)
    # each sum of n positive terms is off by at most n 2^-53 relative (numpy sums pairwise: less)
    rtol = _WEIGHT_RTOL + xs.size * 2.0**-53
    err = 4.0 * rtol * (a + eb) + tail + 1e-300
    return a - eb, err


def discrete_gaussian_delta(epsilon: float, sigma: int | Fraction, sensitivity: int = 1) -> float:
    """The smallest delta for which the discrete Gaussian mechanism is (epsilon, delta)-DP, rounded up.

    For an integer query of sensitivity ``Delta`` (``sensitivity``) and noise ``N_Z(0, sigma^2)``, the
    privacy loss of output ``x`` is ``L(x) = (Delta^2 - 2 Delta x) / (2 sigma^2)``, so by the lemma
    ``delta(eps) = E[(1 - e^(eps - L))_+]`` this is ``P[X < c] - e^eps P[X < c - Delta]`` with
    ``X ~ N_Z(0, sigma^2)`` and ``c = Delta / 2 - eps sigma^2 / Delta`` (Canonne, Kamath and Steinke 2020,
    Theorem 7).  Both probabilities are summed over the integers (the threshold found in exact rational
    arithmetic) and the tail beyond ``e^-750`` is bounded; the value returned is the sum
    plus a bound on every rounding and truncation error, so it is never below the true delta.  An exact
    ``epsilon`` (a ``Fraction``, a long double) is rounded down to a double first.

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    sigma : int, fractions.Fraction or float
        The scale, converted exactly (:func:`dptutor.exact.check_sigma`).
    sensitivity : int, optional
        The integer query's sensitivity, 1 to ``2^40`` (default 1).

    Returns
    -------
    float
        An upper bound on delta, within about 1e-12 relative of it.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, or a ``sigma`` and ``sensitivity`` that need more than 2^22 terms (sigma above ~54000).
    """
    # an exact epsilon rounded down: its nearest double could skip a term just above the threshold (24 - 2^-50
    # with sigma 1/4 gave a delta 2.4e-5 relative below the exact one, past the error bound)
    eps = checked_toward(epsilon, "epsilon", check_real, up=False, low=0.0)
    sig = check_sigma(sigma)
    steps = _sensitivity_steps(sensitivity)
    value, err = _dg_profile(eps, sig, steps)
    return float(min(1.0, max(0.0, value) + err))


def discrete_gaussian_epsilon(delta: float, sigma: int | Fraction, sensitivity: int = 1) -> float:
    """The smallest epsilon (to 1e-12) with ``discrete_gaussian_delta(epsilon, sigma, sensitivity) <= delta``.

    ``delta(eps)`` is continuous and decreasing; solved with ``scipy.optimize.brentq``, then moved up
    until the rounded-up delta is within the target (so the answer is never too small; an exact target
    ``delta`` is rounded down first).

    Parameters
    ----------
    delta : float
        In (0, 1).
    sigma : int, fractions.Fraction or float
        The scale, converted exactly.
    sensitivity : int, optional
        The integer query's sensitivity (default 1).

    Returns
    -------
    float
        The smallest epsilon found, ``>= 0``.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, or a ``delta`` that needs an epsilon above 1e4.
    """
    from scipy import optimize

    dlt = checked_toward(delta, "delta", check_probability, up=False, positive=True)  # the target rounded down
    sig = check_sigma(sigma)
    steps = _sensitivity_steps(sensitivity)
    f = lambda e: discrete_gaussian_delta(e, sig, steps) - dlt  # noqa: E731
    if f(0.0) <= 0.0:
        return 0.0
    hi = 1.0
    while f(hi) > 0.0:
        hi *= 2.0
        if hi > 1e4:
            raise ValueError(f"delta={delta!r} needs an epsilon above 1e4 for sigma={sig}, sensitivity={steps}")
    eps = float(optimize.brentq(f, 0.0, hi, xtol=1e-13, rtol=1e-13))
    while f(eps) > 0.0:
        eps += max(1e-13, eps * 1e-13)
    return eps


def _sigma_on_grid(x: float) -> Fraction:
    """The smallest ``m 2^k >= x`` with ``2^10 <= m < 2^11`` (or an integer, for ``x >= 2^10``): a
    relative resolution of 2^-10 with a small ``sigma^2 = p / q`` (fast exact sampling)."""
    if x >= 1024.0:
        return Fraction(math.ceil(x))
    k = 10 - math.frexp(x)[1]  # x 2^k lies in [2^9, 2^10)
    return Fraction(math.ceil(Fraction(x) * 2 ** (k + 1)), 2 ** (k + 1))


def _next_on_grid(g: Fraction) -> Fraction:
    """The smallest grid point of :func:`_sigma_on_grid` above the grid point ``g`` (a float exactly: at
    most 11 significant bits), so no grid point lies between ``g`` and the next float."""
    return _sigma_on_grid(math.nextafter(float(g), math.inf))


def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: int = 1) -> Fraction:
    """The analytic calibration for the discrete law: the smallest ``sigma`` on a grid of relative
    resolution 2^-10 with ``discrete_gaussian_delta(epsilon, sigma, sensitivity) <= delta``.

    Balle and Wang's (2018) idea, with the exact discrete profile in place of the continuous one: a
    bisection on ``sigma`` (started from the continuous analytic sigma), then rounded up to the grid,
    and the result checked against the target (the guarantee does not rest on monotonicity).  An exact
    ``epsilon`` or ``delta`` (a ``Fraction``, a long double) is rounded down to a double first.

    Parameters
    ----------
    epsilon : float
        ``> 0``.
    delta : float
        In (0, 1).
    sensitivity : int, optional
        The integer query's sensitivity (default 1).

    Returns
    -------
    fractions.Fraction
        ``sigma`` on the grid.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, or a target that needs ``sigma`` outside [1e-3, ~49000] (the sums of delta).
    """
    eps, dlt = calibration_targets(epsilon, delta)
    steps = _sensitivity_steps(sensitivity)
    start = gaussian_sigma_analytic(eps, dlt, float(steps))
    ok = lambda s: discrete_gaussian_delta(eps, _sigma_on_grid(s), steps) <= dlt  # noqa: E731
    top = min(4e6, (_MAX_HALF - steps - 2) / math.sqrt(2.0 * _LOG_TAIL) / 1.01)  # the largest sigma summed
    if not 1e-3 <= start <= top / 1.1:
        raise ValueError(f"epsilon={epsilon!r}, delta={delta!r} need sigma={start:g}: outside [1e-3, {top / 1.1:g}] "
                         "steps (sensitivity)")
    lo, hi = start * 0.9, start * 1.1  # the discrete and continuous profiles are close (start's bracket)
    while not ok(hi):
        lo, hi = hi, hi * 1.5
        if hi > top:
            raise ValueError(f"no sigma below {top:g} reaches delta={delta!r} at epsilon={epsilon!r}")
    while ok(lo):
        lo, hi = lo / 1.5, lo
        if lo < 1e-4:
            return _sigma_on_grid(hi)
    # ok(s) depends on s only through _sigma_on_grid(s), so once no grid point lies strictly between those of
    # lo (not ok) and hi (ok), no further halving can change _sigma_on_grid(hi): stop there.  The relative
    # width 0.2 halves to the grid's 2^-10 in about 10 steps; 60 is only a safety cap.
    for _ in range(60):
        if _sigma_on_grid(hi) <= _next_on_grid(_sigma_on_grid(lo)):
            break
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    sig = _sigma_on_grid(hi)
    if discrete_gaussian_delta(eps, sig, steps) > dlt:  # pragma: no cover - the loop keeps ok(hi)
        raise RuntimeError("calibration failed to reach the target delta")
    return sig


def _granularity(value: object) -> float:
    r = check_positive(value, "granularity")
    exact = exact_rational(value)  # the exact value, not only its nearest double: 2^-1 + 2^-61 is not a power of 2
    if math.frexp(r)[0] != 0.5 or exact not in (None, Fraction(r)):
        raise ValueError(f"granularity must be a power of two, got {value!r}")
    return r


@dataclass(frozen=True)
class DiscreteGaussianRelease:
    """``mechanism(data, size, rng)``: ``size`` releases of an answer plus exact discrete Gaussian noise.

    With ``granularity=None`` the query is integer-valued: ``data`` must be an integer and the output is
    ``data + Z`` (int64), ``Z ~ N_Z(0, sigma^2)`` drawn exactly (:func:`dptutor.exact.sample_discrete_gaussian`).
    With a power-of-two ``granularity`` r, a real answer is rounded to a multiple of r first, as Google's
    libraries do for the Laplace mechanism: the output is ``r (round(data / r) + Z)`` as a float64, exact
    (every output is a multiple of r, and every multiple of r is possible from every input).

    Parameters
    ----------
    sigma : int, fractions.Fraction or float
        The scale, converted exactly.
    granularity : float or None, optional
        ``None`` for an integer query, or a power of two ``r``.
    name : str, optional
        A label (default ``"discrete_gaussian"``).

    Raises
    ------
    TypeError, ValueError
        For a bad ``sigma``, ``granularity`` or ``name``.
    """

    sigma: Fraction
    granularity: float | None = None
    name: str = "discrete_gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_sigma(self.sigma))
        if self.granularity is not None:
            object.__setattr__(self, "granularity", _granularity(self.granularity))
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")

    def steps(self, data: object) -> int:
        """The answer in units of the granularity (the integer the noise is added to).

        Parameters
        ----------
        data : float
            The query's answer (an integer when ``granularity`` is None).

        Returns
        -------
        int
            ``round(data / r)``, of the exact value of ``data`` (ties to even).

        Raises
        ------
        TypeError, ValueError
            For a non-real ``data``, a non-integer one without granularity, or ``|data / r| >= 2^52``.
        """
        value = check_real(data, "data")
        r = 1.0 if self.granularity is None else self.granularity
        with np.errstate(over="ignore"):
            q = float(np.rint(value / r))
        exact = exact_rational(data)
        if exact is not None and exact != value and abs(q) < 2.0**52:
            # A Fraction or a long double between two doubles, rounded from its exact value: its nearest double may be
            # a midpoint that rounds the other way (1/2 + 2^-54 to 0, 3/2 - 2^-53 to 2: 2 steps apart at distance
            # below 1, one more than the floor(sensitivity / r) + 1 the calibration assumes).
            q, value = float(round(exact / Fraction(r))), exact
        if self.granularity is None and value != q:
            raise ValueError(f"data must be an integer for an integer query (granularity=None), got {data!r}")
        if not abs(q) < 2.0**52:
            raise ValueError(f"data is too large: |data / granularity| must stay below 2**52, got {data!r}")
        return int(q)

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> NDArray:
        m = self.steps(data)
        (rows,) = check_size(check_int(size, "size", minimum=0), "size")  # an int, not a shape tuple
        rng = check_rng(rng)
        out = sample_discrete_gaussian(self.sigma, rows, rng)
        out += m
        if self.granularity is None:
            return out
        if out.size and not np.abs(out).max() < 2**53:  # pragma: no cover - needs a 2^52-sized draw
            raise ValueError("an output left the range of exactly representable multiples of the granularity")
        with np.errstate(over="raise"):
            try:
                return out.astype(np.float64) * self.granularity  # exact: a power of two times an integer below 2^53
            except FloatingPointError:
                raise ValueError(f"granularity = {self.granularity!r} is too large: an output overflows float64") from None


def discrete_gaussian_release(
    epsilon: float, delta: float, sensitivity: float, granularity: float | None = None
) -> DiscreteGaussianRelease:
    """A :class:`DiscreteGaussianRelease` calibrated to (epsilon, delta) for the exact discrete law.

    With ``granularity=None``, ``sensitivity`` is the integer query's sensitivity.  With a granularity r
    (a power of two), two neighbours' answers at distance at most ``sensitivity`` round to multiples of r
    at most ``floor(sensitivity / r) + 1`` steps apart (each rounding moves by at most r / 2): that is
    the sensitivity in steps that :func:`discrete_gaussian_sigma` calibrates for.

    Parameters
    ----------
    epsilon : float
        ``> 0``.
    delta : float
        In (0, 1).
    sensitivity : float
        The query's sensitivity (an integer when ``granularity`` is None).
    granularity : float or None, optional
        ``None`` for an integer query, or a power of two.

    Returns
    -------
    DiscreteGaussianRelease
        The calibrated mechanism.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    eps, dlt = calibration_targets(epsilon, delta)
    if granularity is None:
        steps = _sensitivity_steps(sensitivity)
        name = "discrete_gaussian"
    else:
        r = _granularity(granularity)
        sens = check_positive(sensitivity, "sensitivity")
        if not sens / r < 2.0**40:
            raise ValueError(f"sensitivity / granularity must stay below 2**40, got {sens / r:g}")
        # the nearest double of an exact sensitivity is safe here: every multiple k r is a double, so none lies
        # strictly between the exact value and its nearest double, and floor(sensitivity / r) is the same or larger
        steps = math.floor(Fraction(sens) / Fraction(r)) + 1
        name = f"discrete_gaussian[r=2^{math.frexp(r)[1] - 1}]"
    sigma = discrete_gaussian_sigma(eps, dlt, steps)
    return DiscreteGaussianRelease(sigma, granularity, name=name)
