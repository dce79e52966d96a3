"""Approximate (epsilon, delta)-DP and the Gaussian mechanism, seen through its privacy loss.

- :func:`gaussian_privacy_loss`: the privacy-loss random variable of the Gaussian mechanism,
  ``L ~ N(mu^2/2, mu^2)`` with ``mu = sensitivity / sigma`` (Dwork and Roth 2014, Appendix A).
- :func:`delta_from_losses`: ``delta(epsilon) = E[(1 - e^(epsilon - L))_+]`` from loss samples,
  the identity behind Balle and Wang's (2018) Theorem 8 (:func:`dptutor.gaussian.gaussian_delta`).
- :func:`gaussian_epsilon`: the smallest epsilon for a given sigma and delta (inverse of the profile).
- :func:`gaussian_tradeoff`: the f-DP trade-off curve ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``
  of Dong, Roth and Su (2022).
- :class:`GaussianRelease`: a scalar or vector query answer plus ``N(0, sigma^2)`` noise, in the
  ``mechanism(data, size, rng)`` interface of :func:`dptutor.audit.audit_pair`, with constructors
  for the correct calibration and two buggy ones (:func:`gaussian_release`).
- :func:`name_and_shame`: the (0, delta)-DP mechanism that publishes each record with probability
  delta, which shows why delta must be much smaller than 1/n.
- The discrete Gaussian mechanism of Canonne, Kamath and Steinke (2020), private as implemented:
  :func:`~dptutor.discrete_gaussian.discrete_gaussian_delta` (its exact (epsilon, delta) profile, summed over the
  integers), :func:`~dptutor.discrete_gaussian.discrete_gaussian_epsilon`,
  :func:`~dptutor.discrete_gaussian.discrete_gaussian_sigma` (the analytic calibration for the discrete law) and
  :class:`~dptutor.discrete_gaussian.DiscreteGaussianRelease` / :func:`~dptutor.discrete_gaussian.discrete_gaussian_release`
  (integer queries, and real ones through a power-of-two granularity); they live in
  :mod:`dptutor.discrete_gaussian` and are importable from here.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_choice,
    check_float_array,
    check_positive,
    check_probability,
    check_real,
    check_rng,
    check_size,
    checked_toward,
)
from dptutor.discrete_gaussian import (
    DiscreteGaussianRelease,
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    discrete_gaussian_release,
    discrete_gaussian_sigma,
)
from dptutor.gaussian import (calibration_targets, gaussian_delta, gaussian_sigma_analytic, gaussian_sigma_classic,
                              scale_noise)
from dptutor.renyi import round_down, round_up

__all__ = [
    "gaussian_privacy_loss",
    "delta_from_losses",
    "gaussian_epsilon",
    "gaussian_tradeoff",
    "GaussianRelease",
    "CALIBRATIONS",
    "gaussian_release",
    "name_and_shame",
    "discrete_gaussian_delta",
    "discrete_gaussian_epsilon",
    "discrete_gaussian_sigma",
    "DiscreteGaussianRelease",
    "discrete_gaussian_release",
]


def gaussian_privacy_loss(sigma: float, sensitivity: float = 1.0) -> Any:
    """The privacy-loss random variable of ``N(0, sigma^2)`` noise on a query of l2 sensitivity
    ``sensitivity``, for the worst pair of neighbours: ``L ~ N(mu^2 / 2, mu^2)``, ``mu = sensitivity / sigma``.

    Returned as a frozen ``scipy.stats.norm`` (so ``.sf(epsilon)`` is P[L > epsilon]).

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, ``> 0``.
    sensitivity : float, optional
        The query's l2 sensitivity, ``> 0`` (default 1).

    Returns
    -------
    scipy.stats.rv_continuous_frozen
        The law of ``L``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``sigma`` or ``sensitivity``, or a ratio that is 0 or not finite.
    """
    from scipy import stats

    sens = checked_toward(sensitivity, "sensitivity", check_positive, up=True)
    sig = checked_toward(sigma, "sigma", check_positive, up=False, positive=True)
    mu = round_up(Fraction(sens) / Fraction(sig))  # the worst case: sensitivity up, sigma down, their ratio up
    if not math.isfinite(mu) or mu < sys.float_info.min:  # a subnormal scale overflows scipy's (x - loc) / scale
        raise ValueError(f"sensitivity / sigma must be a positive finite (normal) number, got {mu!r}")
    return stats.norm(loc=mu * mu / 2, scale=mu)


def delta_from_losses(losses: Any, epsilon: float) -> float:
    """``mean((1 - exp(epsilon - L))_+)`` over privacy-loss samples ``losses`` drawn under ``x``.

    For any mechanism, the smallest delta at ``epsilon`` for the pair (x, x') is
    ``E[(1 - e^(epsilon - L))_+]`` with ``L`` the privacy loss of an output of ``M(x)``: the
    best event is ``{L > epsilon}``, and ``P[M(x) in S] - e^eps P[M(x') in S] = E[(1 - e^(eps - L)) 1{L > eps}]``.

    Parameters
    ----------
    losses : array_like
        Privacy-loss samples, 1-D and not empty (``+inf`` allowed, no NaN).
    epsilon : float
        ``> 0``.

    Returns
    -------
    float
        The Monte Carlo estimate of delta.

    Raises
    ------
    TypeError, ValueError
        For a bad ``losses`` or ``epsilon``.
    """
    arr = check_float_array(losses, "losses", ndim=1, min_size=1)
    eps = checked_toward(epsilon, "epsilon", check_positive, up=False, positive=True)  # delta is larger below
    with np.errstate(over="ignore"):  # a gap (or its exp) overflowing to inf is where the term is 0 anyway
        gap = eps - arr
        terms = np.where(gap < 0.0, -np.expm1(np.minimum(gap, 0.0)), 0.0)
    return float(terms.mean())


def gaussian_epsilon(delta: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The smallest epsilon for which ``N(0, sigma^2)`` noise is (epsilon, delta)-DP.

    Solves ``gaussian_delta(epsilon, sigma, sensitivity) = delta`` (decreasing in epsilon) with
    ``scipy.optimize.brentq``; 0.0 when even epsilon -> 0 needs less than ``delta``.

    Parameters
    ----------
    delta : float
        In (0, 1).
    sigma : float
        The noise's standard deviation, ``> 0``.
    sensitivity : float, optional
        The query's l2 sensitivity, ``> 0`` (default 1).

    Returns
    -------
    float
        The smallest epsilon, ``>= 0``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``delta``, ``sigma`` or ``sensitivity``.
    """
    from scipy import optimize

    # the target delta and sigma rounded down, the sensitivity up: never an epsilon below the exact one
    dlt = checked_toward(delta, "delta", check_probability, up=False, positive=True)
    sig = checked_toward(sigma, "sigma", check_positive, up=False, positive=True)
    sens = checked_toward(sensitivity, "sensitivity", check_positive, up=True)
    mu = sens / sig
    if not math.isfinite(mu) or mu == 0.0:
        raise ValueError(f"sensitivity / sigma must be a positive finite number, got {mu!r}")
    # delta(0+) = Phi(mu/2) - Phi(-mu/2), the total variation distance: rounded up by gaussian_delta
    if gaussian_delta(0.0, sig, sens) <= dlt:
        return 0.0
    lo, hi = 1e-12, 1.0
    if gaussian_delta(lo, sig, sens) <= dlt:  # the least epsilon is below 1e-12: 1e-12 is a valid (upper) value
        return lo
    while gaussian_delta(hi, sig, sens) > dlt:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"delta={delta!r} needs an epsilon above 1e6 for sigma/sensitivity={1 / mu!r}")
    eps = float(optimize.brentq(lambda e: gaussian_delta(e, sig, sens) - dlt, lo, hi, xtol=1e-13, rtol=1e-13))
    step = 1e-13 * (1.0 + eps)
    while gaussian_delta(eps, sig, sens) > dlt and eps < hi:  # the root's last bits on the wrong side
        eps, step = min(hi, eps + step), 2.0 * step
    return eps


def gaussian_tradeoff(alpha: Any, mu: float) -> NDArray[np.float64]:
    """``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``: the smallest type II error of any test of
    ``N(0, 1)`` against ``N(mu, 1)`` at type I error ``alpha`` (Dong, Roth and Su 2022).

    A privacy statement (a test cannot do better than this), so it is rounded down: each value is
    computed in mpmath with a proven bound on its error (``_tradeoff_down``) and is the largest double
    at most that bound, never above the exact ``G_mu(alpha)`` and at most an ulp or so below it.  It takes
    0.1 to 0.4 ms per distinct value of ``alpha`` (scipy's rounded-to-nearest formula took 50 ns).

    Parameters
    ----------
    alpha : array_like
        Type I errors in [0, 1].
    mu : float
        The shift, ``>= 0``.

    Returns
    -------
    numpy.ndarray of float64
        ``G_mu(alpha)``, shaped like ``alpha``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``alpha`` or ``mu``.
    """
    a = check_float_array(alpha, "alpha")
    if np.any((a < 0) | (a > 1)):
        raise ValueError("alpha must lie in [0, 1]")
    m = checked_toward(mu, "mu", check_real, up=True, low=0.0)  # mu = 0: perfect privacy, G_0(alpha) = 1 - alpha
    values, inverse = np.unique(a, return_inverse=True)
    out = np.array([_tradeoff_down(float(v), m) for v in values], dtype=np.float64)
    result = out[inverse.ravel()].reshape(a.shape)
    return result[()] if result.ndim == 0 else result  # a scalar alpha: a numpy float, as ``ndtr`` gave


#: Working precision (bits) of ``_tradeoff_down``; each mpmath result is trusted to ``2^(8 - bits)`` relative.
_TRADEOFF_BITS: int = 80


def _tradeoff_down(a: float, m: float) -> float:
    """``G_m(a)`` rounded down, from a rigorous lower bound computed in mpmath.

    ``w = Phi^-1(1 - a)`` is ``-y`` (for ``a <= 1/2``) or ``y`` (``a > 1/2``) with ``y <= 0`` the root of
    ``g(y) = ln Phi(y) - ln p``, ``p = min(a, 1 - a)`` (exact in doubles).  Newton's method from scipy's
    ``ndtri``, with ``g' >= 0.7`` and ``|g''| < 1`` on ``y <= 0.1``: the residual bounds the error ``e`` of
    ``y`` (mean value theorem) and a Newton step squares it (``e^2 / 1.4``).  Then ``Phi(w - e - m)``,
    less a margin for the working precision, rounded down.  The error terms are kept in doubles, each
    with a generous factor.
    """
    import mpmath
    from scipy import special

    if a == 0.0 or a == 1.0:  # Phi(+inf) = 1 and Phi(-inf) = 0
        return 1.0 - a
    if m == 0.0:  # G_0(a) = 1 - a
        return round_down(Fraction(1) - Fraction(a))
    p = a if a <= 0.5 else 1.0 - a  # Sterbenz: 1 - a is exact for a >= 1/2
    unit = 2.0 ** (8 - _TRADEOFF_BITS)
    with mpmath.workprec(_TRADEOFF_BITS):
        y, e = mpmath.mpf(min(float(special.ndtri(p)), 0.0)), math.inf
        for _ in range(8):
            yf = float(y)
            if yf > 0.1:  # outside the range of the bounds on g' and g'' (not reached from ndtri's start)
                return 0.0
            rho = float(mpmath.ncdf(y) / p - 1)  # Phi(y) / p - 1, with an absolute error below 2 unit (1 + |rho|)
            slack = 2.0 * unit * (1.0 + abs(rho))
            if abs(rho) + slack >= 0.5:
                return 0.0  # not reached from ndtri's start
            r_bound = 1.01 * (abs(rho) + slack) / (1.0 - abs(rho) - slack)  # |g(y)| <= |ln(1 + rho)| + error
            e = r_bound / 0.7  # |y - root|
            mills = math.exp(-0.5 * yf * yf - 0.5 * math.log(2.0 * math.pi) - float(special.log_ndtr(yf)))
            step = math.log1p(rho) / mills  # g(y) / g'(y) to about 1e-12 relative
            y -= step
            e = 1.01 * (e * e / 1.4 + 1e-9 * abs(step) + slack / 0.7 + unit * (abs(yf) + 1.0))  # + the step's error
            if e < 2.0**-60:
                break
        t = (-y if a <= 0.5 else y) - m - e * 1.01
        t -= unit * (abs(t) + m + 1)  # the rounding of those subtractions
        if t < -40:  # G < Phi(-39.99) < 1e-348: below half the least subnormal
            return 0.0
        bound = mpmath.ncdf(t) * (1 - mpmath.mpf(unit))
    man, exp = bound.man_exp
    return round_down(Fraction(int(man)) * Fraction(2) ** int(exp)) if man else 0.0



@dataclass(frozen=True)
class GaussianRelease:
    """``mechanism(data, size, rng)``: ``size`` releases of ``data + N(0, sigma^2)`` noise.

    ``data`` is a real scalar or 1-D vector (the query's exact answer); the result has shape
    ``(size,)`` or ``(size, len(data))``.  Picklable, so it runs with ``audit_pair(workers=2)``.  An exact
    ``sigma`` (a ``Fraction``, a long double) is rounded up to a double: the noise is never below it.  Each noise
    value is the standard normal draw times ``sigma`` rounded away from zero (``dptutor.gaussian.scale_noise``), never
    smaller in magnitude than the exact product; the sum ``data + noise`` is rounded to nearest (see
    ``dptutor.gaussian.gaussian_mechanism`` for what that does and does not guarantee).

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, ``> 0``.
    name : str, optional
        A label (default ``"gaussian"``).

    Raises
    ------
    TypeError, ValueError
        For a bad ``sigma`` or ``name``.
    """

    sigma: float
    name: str = "gaussian"

    def __post_init__(self) -> None:
        # the noise added is never below the exact sigma (the nearest double was below a Fraction(1, 3))
        object.__setattr__(self, "sigma", checked_toward(self.sigma, "sigma", check_positive, up=True))
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        value = check_float_array(data, "data", finite=True, ndim=(0, 1))
        shape = check_size(size, "size")
        if len(shape) != 1:
            raise ValueError(f"size must be a non-negative int, got {size!r}")
        (rows,) = shape
        rng = check_rng(rng)
        out = scale_noise(rng.standard_normal((rows,) + value.shape), self.sigma)  # |noise| >= |z| sigma, exactly
        with np.errstate(over="ignore"):  # an overflow is reported below, as a ValueError
            out += value
        if not np.isfinite(out).all():
            raise ValueError(f"data + noise overflows: |data| too large for sigma={self.sigma:g}")
        return out


#: The calibrations :func:`gaussian_release` knows, and what each computes for ``sigma``.
CALIBRATIONS: dict[str, str] = {
    "analytic": "Balle and Wang's exact calibration (correct, least noise)",
    "classic": "sensitivity * sqrt(2 ln(1.25/delta)) / epsilon (correct for epsilon < 1)",
    "laplace_rule": "BUG: sensitivity / epsilon, the Laplace mechanism's scale (l1 sensitivity over epsilon)",
    "dropped_sqrt": "BUG: the analytic variance sigma^2 passed as the standard deviation (np.sqrt forgotten)",
}


def gaussian_release(
    epsilon: float, delta: float, sensitivity: float, calibration: str = "analytic"
) -> GaussianRelease:
    """A :class:`GaussianRelease` whose ``sigma`` comes from ``calibration`` (see :data:`CALIBRATIONS`).

    The two buggy calibrations are there to be audited: ``"laplace_rule"`` takes the Laplace
    recipe ``b = Delta_1 / epsilon`` as ``sigma`` (for a scalar query Delta_1 = Delta_2); and
    ``"dropped_sqrt"`` uses ``sigma^2`` where numpy's ``normal(loc, scale)`` wants the standard
    deviation, which is too little noise whenever ``sigma < 1`` (small sensitivities, e.g. means).

    Parameters
    ----------
    epsilon : float
        ``> 0``.
    delta : float
        In (0, 1).
    sensitivity : float
        The query's sensitivity, ``> 0``.
    calibration : str, optional
        A key of :data:`CALIBRATIONS` (default ``"analytic"``).

    Returns
    -------
    GaussianRelease
        The calibrated mechanism.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    how = check_choice(calibration, "calibration", tuple(CALIBRATIONS))
    # the targets rounded down and the sensitivity up: sigma is never below the exact calibration's
    eps, dlt = calibration_targets(epsilon, delta)
    sens = checked_toward(sensitivity, "sensitivity", check_positive, up=True)
    if how == "classic":
        sigma = gaussian_sigma_classic(eps, dlt, sens)
    elif how == "laplace_rule":
        sigma = sens / eps
    else:
        sigma = gaussian_sigma_analytic(eps, dlt, sens)
        if how == "dropped_sqrt":
            sigma = sigma * sigma
    if not (math.isfinite(sigma) and sigma > 0.0):
        raise ValueError(f"sensitivity={sensitivity!r} with epsilon={epsilon!r} gives sigma={sigma!r}")
    return GaussianRelease(sigma, name=f"gaussian[{how}]")


def name_and_shame(records: Any, delta: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Publish each record (row) independently with probability ``delta``.

    It is (0, delta)-DP: changing one record changes the output distribution only on the event
    that this record is published, which has probability ``delta``.  Yet with ``delta = 1/n`` it
    publishes about one whole record per run.  Each record is published with probability at most ``delta``:
    numpy's uniforms are multiples of 2^-53, and ``delta`` is cut down to one (a ``Fraction`` rounded down first).

    Parameters
    ----------
    records : array_like
        The dataset, one record per row (1-D or 2-D).
    delta : float
        The publication probability, in (0, 1).
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        The published rows.

    Raises
    ------
    TypeError, ValueError
        For a bad ``records``, ``delta`` or ``rng``.
    """
    arr = check_float_array(records, "records", ndim=(1, 2))
    dlt = checked_toward(delta, "delta", check_probability, up=False)
    rng = check_rng(rng)
    # ``random`` draws multiples of 2^-53, so P[U < d] is d rounded UP to one: cut at d rounded down to one
    cut = math.floor(dlt * 2.0**53) * 2.0**-53  # exact (a power-of-two scaling): P[U < cut] = cut <= delta
    keep = rng.random(arr.shape[0]) < cut
    return arr[keep]
