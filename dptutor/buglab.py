"""A lab of real bugs: minimal mechanisms modelled on public reports, each in a buggy and a fixed form.

Mechanisms are ``mechanism(data, size, rng, *, epsilon, ...)`` as in :mod:`dptutor.zoo`; formula bugs (a
calibration, an accountant) are plain functions.  None of this is the libraries' code: where a report
quotes the faulty line, the lab reproduces its arithmetic; where it shows only a symptom, the lab models
the *family* of bug behind it, and says so.  :data:`LAB` holds the claims and what is known exactly.
Opacus #571 (an audit of DP-SGD on two or three records above the accountant's epsilon) is not modelled.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (check_answer_vector, check_bool, check_callable, check_choice, check_float_array, check_int, check_interval,
                               check_mechanism_call, check_positive, check_probability, check_real, check_size, check_str,
                               recordable_seed)
from dptutor.accounting import advanced_composition
from dptutor.approximate_dp import gaussian_epsilon
from dptutor.audit import PairAudit, audit_pair
from dptutor.gaussian import gaussian_sigma_analytic
from dptutor.zoo import first_coordinate, noisy_histogram

__all__ = [
    "DEFAULT_EPSILON",
    "CHECKS",
    "LabBug",
    "LAB",
    "histogram_default_epsilon",
    "mean_laplace",
    "diagonal_sensitivity",
    "sum_of_squares",
    "exponential_probabilities",
    "exponential_selection",
    "analytic_sigma_sign_error",
    "gaussian_count",
    "classic_sigma_any_epsilon",
    "mean_sum_over_count",
    "advanced_composition_as_coded",
]

#: The epsilon that the buggy histogram of :func:`histogram_default_epsilon` uses whatever it is given.
DEFAULT_EPSILON: float = 1.0

#: The checks of the book that catch a lab bug (:attr:`LabBug.check`).
CHECKS: tuple[str, ...] = ("spread", "utility", "audit", "exact", "profile", "accounting")


def histogram_default_epsilon(data: Any, size: int, rng: Any, *, epsilon: float) -> NDArray[np.float64]:
    """A Laplace histogram whose noise never sees ``epsilon``: the family of diffprivlib issue #99.

    IBM/differential-privacy-library#99 reports histograms that look the same at epsilon = 1 and 30.
    The report shows the symptom, not a cause; the lab models the family "the epsilon argument does not
    reach the noise": the noise is calibrated to :data:`DEFAULT_EPSILON` (scale 1), so the true epsilon is
    :data:`DEFAULT_EPSILON` whatever is claimed (one person changes one bin by 1).  The fixed form is
    :func:`dptutor.zoo.counts.noisy_histogram`.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The histogram's bins.
    size, rng : int and numpy.random.Generator (or SeedSequence, or int seed)
        The number of independent outputs and the source of randomness.
    epsilon : float
        The claimed epsilon (checked, then ignored: the bug).

    Returns
    -------
    numpy.ndarray of float64, shape (size, k)
        The noisy histograms.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    size, rng, _ = check_mechanism_call(size, rng, epsilon)
    counts = check_answer_vector(data)
    return _finite(lambda: counts + rng.laplace(0.0, 1.0 / DEFAULT_EPSILON, check_size((size, counts.size), "size")), "data")


def _finite(make: Callable[[], Any], names: str) -> Any:
    """``make()`` if it is all finite (overflow silenced), else a ValueError naming the arguments behind it."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = make()
    if not np.isfinite(out).all():
        raise ValueError(f"{names} give(s) outputs beyond the float range")
    return out


def _mean_parts(data: Any, bounds: Any) -> tuple[float, float, int]:
    """The clipped mean of ``data`` in ``bounds``, the bounds' width and the number of values."""
    values, lo, hi = _clipped(data, bounds)
    return float(values.mean()), hi - lo, values.size


def _clipped(data: Any, bounds: Any) -> tuple[NDArray[np.float64], float, float]:
    """``data`` (a non-empty 1-D array of reals) clipped to ``bounds``, and the bounds."""
    lo, hi = check_interval(bounds, "bounds", limit=1e150)  # squares and sums of the clipped values stay finite
    return np.clip(check_answer_vector(data), lo, hi), lo, hi


def mean_laplace(
    data: Any, size: int, rng: Any, *, epsilon: float, bounds: Any = (0.0, 1.0), ignore_epsilon: bool = False
) -> NDArray[np.float64]:
    """A mean of ``n`` values clipped to ``bounds`` plus Laplace noise of scale ``(hi - lo) / (n epsilon)``.

    epsilon-DP when neighbours replace one value (sensitivity ``(hi - lo) / n``), and not private at all
    under add/remove neighbours, where ``n`` differs between neighbours (the LAB's smartnoise-356 entry).

    With ``ignore_epsilon=True`` the scale is ``(hi - lo) / n``, whatever the claim: the family of
    IBM/differential-privacy-library#97, which reports a private classifier whose accuracy does not
    change with epsilon up to 10^7.  The report shows the symptom only; the lab models the family "the
    error does not depend on epsilon" with the smallest model there is, a mean: the true epsilon is 1 at
    every claim, and the error never falls.

    Parameters
    ----------
    data : array_like of float, shape (n,)
        The values (clipped to ``bounds``).
    size, rng : int and numpy.random.Generator (or SeedSequence, or int seed)
        The number of independent outputs and the source of randomness.
    epsilon : float
        The claimed epsilon.
    bounds : tuple of float, default (0.0, 1.0)
        The clipping interval ``(lo, hi)``, ``lo < hi``.
    ignore_epsilon : bool, default False
        Leave epsilon out of the noise's scale (the bug).

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy means.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    values, lo, hi = _clipped(data, bounds)
    scale = (hi - lo) / values.size
    return float(values.mean()) + rng.laplace(0.0, scale if check_bool(ignore_epsilon, "ignore_epsilon") else scale / eps, size)


def diagonal_sensitivity(bounds: Any, *, as_coded: bool = False) -> float:
    """How much ``sum x_i^2`` changes when one value in ``[lo, hi]`` is added or removed: ``max(|lo|, |hi|)^2``.

    With ``as_coded=True``, the value that diffprivlib's LinearRegression computed, from the lower bound
    twice: ``max(|lo|, |lo|)^2``, 0 for bounds (0, 100).  IBM/differential-privacy-library#105 (also
    item 1 of #104; fix proposed in pull request #110) quotes the line.

    Parameters
    ----------
    bounds : tuple of float
        The feature's bounds ``(lo, hi)``, ``lo < hi``.
    as_coded : bool, default False
        Compute it as the buggy line did.

    Returns
    -------
    float
        The sensitivity.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    lo, hi = check_interval(bounds, "bounds", limit=1e150)  # its square stays finite
    return max(abs(lo), abs(lo if check_bool(as_coded, "as_coded") else hi)) ** 2


def sum_of_squares(
    data: Any, size: int, rng: Any, *, epsilon: float, bounds: Any = (0.0, 100.0), as_coded: bool = False
) -> NDArray[np.float64]:
    """``sum x_i^2`` of values clipped to ``bounds`` plus Laplace noise of scale sensitivity / epsilon.

    The sensitivity is :func:`diagonal_sensitivity` (epsilon-DP under adding or removing one value), or
    with ``as_coded=True`` the buggy one: for bounds (0, 100) it is 0, the noise vanishes and the output
    is the exact statistic, so no epsilon holds.

    Parameters
    ----------
    data : array_like of float, shape (n,)
        One feature's values.
    size, rng : int and numpy.random.Generator (or SeedSequence, or int seed)
        The number of independent outputs and the source of randomness.
    epsilon : float
        The claimed epsilon.
    bounds : tuple of float, default (0.0, 100.0)
        The feature's bounds.
    as_coded : bool, default False
        Use the buggy sensitivity.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy sums of squares.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    values, lo, hi = _clipped(data, bounds)
    sens = diagonal_sensitivity(bounds, as_coded=as_coded)
    return _finite(lambda: float(np.sum(values**2)) + rng.laplace(0.0, sens / eps, size), "bounds and epsilon")


def exponential_probabilities(scores: Any, epsilon: float, sensitivity: float) -> NDArray[np.float64]:
    """The exact output distribution of the exponential mechanism: ``P[i] ~ exp(epsilon u_i / (2 sensitivity))``.

    Parameters
    ----------
    scores : array_like of float, shape (k,)
        The candidates' scores ``u_i``.
    epsilon, sensitivity : float
        The claimed epsilon and the sensitivity the calibration assumes, both ``> 0``.

    Returns
    -------
    numpy.ndarray of float64, shape (k,)
        The probabilities (they sum to 1).

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    u = check_answer_vector(scores, "scores")
    eps = check_positive(epsilon, "epsilon")
    sens = check_positive(sensitivity, "sensitivity")
    with np.errstate(over="ignore"):
        logits = eps * u / 2.0 / sens  # not / (2.0 * sens): 2 * 1e308 overflows to inf, and the logits to 0
    if not np.isfinite(logits).all():
        raise ValueError("epsilon * scores / (2 sensitivity) overflows: epsilon, scores or sensitivity is out of range")
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def exponential_selection(data: Any, size: int, rng: Any, *, epsilon: float, sensitivity: float) -> NDArray[np.int64]:
    """The exponential mechanism on the score vector ``data``: the index of the chosen candidate.

    ryan112358/mbi#65 reports that the JAM algorithm's selection step calibrates to a sensitivity of 2
    while its score, a difference of two terms that each move by up to 2 and can move in opposite
    directions, has sensitivity 4.  ``sensitivity=2`` on scores that move by 4 is the bug (true epsilon
    up to twice the claim); ``sensitivity=4`` the fix.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The candidates' scores on the dataset.
    size, rng : int and numpy.random.Generator (or SeedSequence, or int seed)
        The number of independent outputs and the source of randomness.
    epsilon, sensitivity : float
        The claimed epsilon and the sensitivity the calibration assumes.

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
        The chosen indices.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    p = exponential_probabilities(check_answer_vector(data), eps, sensitivity)
    return rng.choice(p.size, size=size, p=p).astype(np.int64)


def _profile_with_sign_error(epsilon: float, s: float) -> float:
    """Balle-Wang's delta(epsilon) at sigma/sensitivity ``s``, the sign of ``epsilon s`` flipped in the second term (#316)."""
    from scipy.stats import norm
    return float(norm.cdf(0.5 / s - epsilon * s) - math.exp(epsilon) * norm.cdf(-0.5 / s + epsilon * s))


def analytic_sigma_sign_error(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The analytic Gaussian calibration with a sign error: the family of opendp/smartnoise-core #316.

    opendp/smartnoise-core#316 says only that "a sign in the analytic gaussian was not being set
    correctly, resulting in reduced sigma".  The lab models that family: it solves Balle and Wang's exact
    profile ``Phi(D/(2 s) - eps s/D) - e^eps Phi(-D/(2 s) - eps s/D) = delta`` with the sign of
    ``eps s / D`` flipped in the second term.  The flipped profile is never above the right one, so the
    sigma it returns is too small; the fix is :func:`dptutor.gaussian.gaussian_sigma_analytic`.

    Parameters
    ----------
    epsilon, delta, sensitivity : float
        ``epsilon > 0``, ``delta`` in (0, 1), the l2 sensitivity ``> 0`` (default 1).

    Returns
    -------
    float
        The (too small) sigma.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    from scipy import optimize
    eps = check_real(epsilon, "epsilon", low=0.0, low_open=True, high=700.0)  # e^epsilon stays a float
    dlt, sens = check_probability(delta, "delta"), check_positive(sensitivity, "sensitivity")
    gap = lambda t: _profile_with_sign_error(eps, math.exp(t)) - dlt  # noqa: E731
    if gap(-30.0) * gap(30.0) > 0:  # the flipped profile does not cross delta for sigma in [e^-30, e^30] sensitivities
        raise ValueError(f"epsilon = {eps!r} and delta = {dlt!r} are out of the range this calibration solves")
    log_s = optimize.brentq(gap, -30.0, 30.0, xtol=1e-14, maxiter=1000)
    return _finite_sigma(math.exp(log_s) * sens)


def _finite_sigma(sigma: float) -> float:
    """``sigma`` if it is a positive float, else a ValueError naming the arguments that produced it."""
    if not (math.isfinite(sigma) and sigma > 0.0):
        raise ValueError(f"sensitivity / epsilon gives a sigma outside the float range ({sigma!r})")
    return sigma


def classic_sigma_any_epsilon(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Dwork and Roth's ``sigma = sensitivity sqrt(2 ln(1.25/delta)) / epsilon`` used at every epsilon:
    the formula of uvm-plaid/programming-dp #45 (their Theorem A.1 proves it only for epsilon < 1).

    :func:`dptutor.gaussian.gaussian_sigma_classic` refuses epsilon >= 1; this is the unguarded formula,
    for the lab.  The fix is :func:`dptutor.gaussian.gaussian_sigma_analytic`.

    Parameters
    ----------
    epsilon, delta, sensitivity : float
        ``epsilon > 0``, ``delta`` in (0, 1), the l2 sensitivity ``> 0`` (default 1).

    Returns
    -------
    float
        sigma.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    eps = check_positive(epsilon, "epsilon")
    dlt = check_probability(delta, "delta")
    sens = check_positive(sensitivity, "sensitivity")
    return _finite_sigma(sens * math.sqrt(2.0 * (math.log(1.25) - math.log(dlt))) / eps)


def gaussian_count(data: Any, size: int, rng: Any, *, epsilon: float, sigma: float) -> NDArray[np.float64]:
    """A count plus ``N(0, sigma^2)``: the mechanism that a Gaussian calibration feeds (``epsilon`` is the
    claim, recorded for the audit; ``sigma`` comes from the calibration under test).

    Parameters
    ----------
    data : float
        The count (sensitivity 1).
    size, rng : int and numpy.random.Generator (or SeedSequence, or int seed)
        The number of independent outputs and the source of randomness.
    epsilon, sigma : float
        The claim, and the noise's standard deviation (``> 0``).

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy counts.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    size, rng, _ = check_mechanism_call(size, rng, epsilon)
    return _finite(lambda: check_real(data, "data") + rng.normal(0.0, check_positive(sigma, "sigma"), size), "data and sigma")


def mean_sum_over_count(data: Any, size: int, rng: Any, *, epsilon: float, bounds: Any = (0.0, 1.0)) -> NDArray[np.float64]:
    """A mean under add/remove neighbours done right: a noisy sum (sensitivity ``max(|lo|, |hi|)``) over a
    noisy count (sensitivity 1), each with half the epsilon; epsilon-DP by composition and post-processing.

    The fix of the family of opendp/smartnoise-core#356 (merged into #355): a whitepaper derived the
    add/remove sensitivity of a mean from the ``n`` of the dataset at hand, considering only that
    dataset's neighbours.  The lab's buggy form is :func:`mean_laplace` under add/remove neighbours: its
    noise's scale differs between ``n`` and ``n + 1`` values, so the log-ratio of the output densities
    grows without bound in the tails and no epsilon holds.

    Parameters
    ----------
    data, size, rng, epsilon, bounds
        As :func:`mean_laplace`.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        The noisy sums divided by the noisy counts.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    values, lo, hi = _clipped(data, bounds)
    total = float(values.sum()) + rng.laplace(0.0, 2.0 * max(abs(lo), abs(hi)) / eps, size)
    count = values.size + rng.laplace(0.0, 2.0 / eps, size)
    return total / count


def advanced_composition_as_coded(epsilon: float, k: int, delta_prime: float) -> float:
    """Advanced composition as uvm-plaid/programming-dp #56 found it coded: ``2 epsilon sqrt(2 k ln(1/delta'))``.

    The theorem (Dwork, Rothblum and Vadhan; :func:`dptutor.accounting.advanced_composition`) is
    ``epsilon sqrt(2 k ln(1/delta')) + k epsilon (e^epsilon - 1)``.  The coded form drops the second
    term, so for large ``k epsilon`` it is below what k releases can really cost.

    Parameters
    ----------
    epsilon, k, delta_prime : float, int, float
        Each release's epsilon (``>= 0``), the number of releases (``>= 1``), the extra delta in (0, 1).

    Returns
    -------
    float
        The total epsilon as coded.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, named in the message.
    """
    eps, k = check_real(epsilon, "epsilon", low=0.0), check_int(k, "k", minimum=1)
    dp = check_probability(delta_prime, "delta_prime")
    log_inv = math.log(1.0 / dp) if dp > 1e-300 else -math.log(dp)  # 1 / dp overflows for a subnormal delta_prime
    return _finite(lambda: 2.0 * eps * math.sqrt(2.0 * (k if k < 2**1000 else math.inf) * log_inv), "epsilon, k and delta_prime")


def _advanced_composition_epsilon(epsilon: float, k: int, delta_prime: float) -> float:
    """:func:`dptutor.accounting.advanced_composition`'s total epsilon for k pure-DP releases."""
    return advanced_composition(epsilon, 0.0, k, delta_prime)[0]


@dataclass(frozen=True)
class LabBug:
    """One bug of the lab: its public report, the claim, the buggy and the fixed form, and the check.

    Parameters
    ----------
    key, report, url, family : str
        A short name (``"diffprivlib-99"``), the public report as ``owner/repository#number``, its
        address, and what the lab models, in words.
    check : str
        The book's check that catches it, one of :data:`CHECKS`.
    buggy, fixed : callable
        Mechanisms ``(data, size, rng, *, epsilon)``, or, for ``check="accounting"``, accountants
        ``(epsilon, k, delta_prime) -> epsilon_total``.
    epsilon : float
        The claimed epsilon (per release for an accountant).
    true_epsilon : float or None
        The buggy form's true epsilon at the claim (``math.inf`` if none holds; ``None`` for an
        accountant or where no closed form is known).
    neighbours, delta : str and float
        ``"replace one"`` or ``"add/remove one"``; the claimed delta (default 0).
    x, x_prime : object, default None
        Neighbouring datasets on which the bug shows (``None`` for an accountant).
    statistic : callable or None, default None
        A statistic for vector outputs, as :func:`dptutor.audit.audit_pair` takes it.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind or out of range (the message names it).
    """
    key: str
    report: str
    url: str
    family: str
    check: str
    buggy: Callable[..., Any]
    fixed: Callable[..., Any]
    epsilon: float
    true_epsilon: float | None
    neighbours: str
    delta: float = 0.0
    x: Any = None
    x_prime: Any = None
    statistic: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        for name in ("key", "report", "url", "family"):
            check_str(getattr(self, name), name, allow_empty=False)
        check_choice(self.check, "check", CHECKS)
        check_choice(self.neighbours, "neighbours", ("replace one", "add/remove one"))
        check_positive(self.epsilon, "epsilon")
        check_real(self.delta, "delta", low=0.0, high=1.0, high_open=True)
        for name in ("buggy", "fixed") + (("statistic",) if self.statistic is not None else ()):
            check_callable(getattr(self, name), name)
        for name in ("x", "x_prime"):
            if getattr(self, name) is not None:
                check_float_array(getattr(self, name), name, finite=True, ndim=(0, 1), min_size=1)
        if self.true_epsilon is not None:
            check_real(self.true_epsilon, "true_epsilon", low=0.0, allow_inf=True)

    def release(self, version: str) -> Callable[..., Any]:
        """The ``"buggy"`` or ``"fixed"`` mechanism (``version``) as ``release(data, size, rng)``, the claim bound in.

        Raises
        ------
        ValueError
            For an unknown ``version``, or an accountant entry.
        """
        check_choice(version, "version", ("buggy", "fixed"))
        if self.x is None:
            raise ValueError(f"{self.key} is an accountant, not a mechanism: call its buggy and fixed forms directly")
        return functools.partial(getattr(self, version), epsilon=self.epsilon)

    def audit(self, version: str, trials: int, *, rng: Any = None, **kwargs: Any) -> PairAudit:
        """:func:`dptutor.audit.audit_pair` of one form on the entry's neighbours, at the claim.

        Parameters
        ----------
        version : str
            ``"buggy"`` or ``"fixed"``.
        trials : int
            The runs per dataset.
        rng, **kwargs
            What seeds the audit (int, sequence of int or None), and further keyword arguments of
            :func:`dptutor.audit.audit_pair`.

        Returns
        -------
        dptutor.audit.PairAudit
            The audit's lower bound and its evidence.

        Raises
        ------
        TypeError, ValueError
            As :meth:`release` and :func:`dptutor.audit.audit_pair`, naming the parameter.
        """
        return audit_pair(
            self.release(version), self.x, self.x_prime, epsilon=self.epsilon, delta=self.delta,
            trials=trials, statistic=self.statistic, **{_SEED_KEYWORD: recordable_seed(rng)}, **kwargs,
        )


_SEED_KEYWORD = "rng" if "rng" in inspect.signature(audit_pair).parameters else "seed"

_GAUSS_EPS, _GAUSS_DELTA, _CLASSIC_EPS = 1.0, 1e-5, 10.0  # the claims of the two Gaussian entries
_SIGMA_SIGN = analytic_sigma_sign_error(_GAUSS_EPS, _GAUSS_DELTA)
_SIGMA_CLASSIC = classic_sigma_any_epsilon(_CLASSIC_EPS, _GAUSS_DELTA)


def _gaussian_entry(key: str, report: str, url: str, family: str, epsilon: float, sigma: float) -> LabBug:
    """An entry whose buggy form is a count with a miscalibrated sigma, fixed by the analytic sigma."""
    return LabBug(
        key, report, url, family, "profile",
        functools.partial(gaussian_count, sigma=sigma),
        functools.partial(gaussian_count, sigma=gaussian_sigma_analytic(epsilon, _GAUSS_DELTA, 1.0)),
        epsilon, gaussian_epsilon(_GAUSS_DELTA, sigma), "add/remove one", delta=_GAUSS_DELTA, x=0.0, x_prime=1.0,
    )


_DIFFPRIVLIB = "https://github.com/IBM/differential-privacy-library"
#: The lab's bugs by key, in the chapter's order (read-only).
LAB: Mapping[str, LabBug] = MappingProxyType({bug.key: bug for bug in (
    LabBug("diffprivlib-99", "IBM/differential-privacy-library#99", f"{_DIFFPRIVLIB}/issues/99",
           "the epsilon argument does not reach the noise of a histogram", "spread",
           histogram_default_epsilon, noisy_histogram, 0.1, DEFAULT_EPSILON, "add/remove one",
           x=(10.0, 20.0, 30.0), x_prime=(11.0, 20.0, 30.0), statistic=first_coordinate),
    LabBug("diffprivlib-97", "IBM/differential-privacy-library#97", f"{_DIFFPRIVLIB}/issues/97",
           "the error of a private model does not depend on epsilon", "utility",
           functools.partial(mean_laplace, ignore_epsilon=True), mean_laplace, 0.5, 1.0, "replace one",
           x=(0.0,) * 10, x_prime=(1.0,) + (0.0,) * 9),
    LabBug("diffprivlib-105", "IBM/differential-privacy-library#105", f"{_DIFFPRIVLIB}/issues/105",
           "a sensitivity computed from the lower bound twice, 0 for bounds (0, 100)", "audit",
           functools.partial(sum_of_squares, as_coded=True), sum_of_squares, 1.0, math.inf, "add/remove one",
           x=(50.0, 20.0), x_prime=(50.0, 20.0, 100.0)),
    LabBug("mbi-65", "ryan112358/mbi#65", "https://github.com/ryan112358/mbi/issues/65",
           "an exponential mechanism calibrated to sensitivity 2 on scores that move by 4", "exact",
           functools.partial(exponential_selection, sensitivity=2.0),
           functools.partial(exponential_selection, sensitivity=4.0), 1.0, 2.0, "replace one",
           x=(0.0,) * 10, x_prime=(4.0,) + (-4.0,) * 9),
    _gaussian_entry("smartnoise-316", "opendp/smartnoise-core#316", "https://github.com/opendp/smartnoise-core/issues/316",
                    "a sign error in the analytic Gaussian calibration that makes sigma too small",
                    _GAUSS_EPS, _SIGMA_SIGN),
    LabBug("smartnoise-356", "opendp/smartnoise-core#356", "https://github.com/opendp/smartnoise-core/issues/356",
           "a mean's noise scaled by the size of the dataset at hand under add/remove neighbours", "audit",
           mean_laplace, mean_sum_over_count, 1.0, math.inf, "add/remove one", x=(1.0,), x_prime=(1.0, 0.0)),
    _gaussian_entry("programming-dp-45", "uvm-plaid/programming-dp#45", "https://github.com/uvm-plaid/programming-dp/issues/45",
                    "the Dwork-Roth Gaussian sigma used beyond epsilon < 1", _CLASSIC_EPS, _SIGMA_CLASSIC),
    LabBug("programming-dp-56", "uvm-plaid/programming-dp#56", "https://github.com/uvm-plaid/programming-dp/issues/56",
           "advanced composition coded with the wrong equation", "accounting",
           advanced_composition_as_coded, _advanced_composition_epsilon, 1.0, None, "add/remove one"),
)})
