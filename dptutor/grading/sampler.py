"""Assignment ``sampler``: inverse-CDF Laplace sampling (the paper's Eq. 4/5).

Three questions on one student function, ``laplace_inverse_cdf(u, mu, b)``: its law (KS tests
against Lap(mu, b)), its domain checks (``ValueError`` outside (0, 1) and for b <= 0), and
vectorisation (no element-by-element access; time within a factor of the reference).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dptutor.distributions import laplace_ppf
from dptutor.grading.feedback import (KS_ALPHA, Assignment, Finding, Question, as_floats, call, describe,
                                      expect_value_error)

__all__ = ["ASSIGNMENT", "SAMPLER_TIMING_SIZE", "SAMPLER_TIMING_RATIO"]


# Seeds and parameters: the notebook's feedback uses the first set, hidden grading the second.
# Every correct inverse CDF maps the same u to the same x (up to rounding), so all correct answers
# give the same KS p-value; tests/test_grading.py checks that dptutor's own laplace_ppf passes.
_SAMPLER_CASES = {
    False: ((20220, 0.0, 1.0), (20221, 2.0, 0.5)),
    True: ((731, 0.0, 1.0), (732, -1.5, 3.0)),
}
_SAMPLER_N = 5000
#: Uniforms in the vectorisation check, and the allowed time ratio to dptutor's reference.
SAMPLER_TIMING_SIZE = 1_000_000
SAMPLER_TIMING_RATIO = 10.0


def _uniforms(seed: int, size: int) -> NDArray[np.float64]:
    """``size`` uniforms in the open interval (0, 1) (``rng.random`` can return 0, never 1)."""
    u = np.random.default_rng(seed).random(size)
    u[u == 0.0] = 0.5  # probability 2^-53 per draw; keeps u inside the open interval
    return u


def _sampler_law(f: Callable, *, hidden: bool = False) -> list[Finding]:
    findings: list[Finding] = []
    monotone_u: NDArray[np.float64] | None = None
    for seed, mu, b in _SAMPLER_CASES[hidden]:
        u = _uniforms(seed, _SAMPLER_N)
        where = f"laplace_inverse_cdf(u, mu={mu:g}, b={b:g}) for u ~ U(0, 1)"
        value, exc = call(f, u, mu, b)
        if exc is not None:
            findings.append(Finding(False, f"{where} raised {describe(exc)}"))
            continue
        x = as_floats(value)
        if x is None or x.shape != u.shape:
            shape = None if x is None else x.shape
            findings.append(Finding(False, f"{where} returned {type(value).__name__} of shape {shape}, "
                                           f"not an array of the shape of u {u.shape}"))
            continue
        nan = np.isnan(x)
        if nan.any():
            findings.append(Finding(False, (
                f"{where}: {100 * nan.mean():.0f}% of the outputs are NaN. A log of a negative number? "
                "Eq. 7/9 are meant for v ~ U(-1/2, 1/2) (Eq. 6); fed with u ~ U(0, 1) (Eq. 8) they break "
                "for u > 1/2 (DPText's bug, Theorem 3.1). With u ~ U(0, 1) use Eq. 4 or Eq. 5.")))
            continue
        if not np.isfinite(x).all():
            findings.append(Finding(False, f"{where} returned infinite values for u strictly inside (0, 1)"))
            continue
        if (x >= mu).all():
            findings.append(Finding(False, (
                f"{where}: your samples are never below mu = {mu:g} (never negative noise). Did you use "
                "Eq. 9 with u ~ U(0, 1)? That is DPText's sampler (Theorem 3.1); with u ~ U(0, 1) the "
                "inverse CDF is Eq. 4 (or Eq. 5), with u - 1/2 inside.")))
            continue
        if monotone_u is None:
            monotone_u = u
        p = stats.kstest(x, stats.laplace(loc=mu, scale=b).cdf).pvalue
        if p > KS_ALPHA:
            findings.append(Finding(True, f"{where} follows Lap({mu:g}, {b:g}) (KS p-value {p:.2g})"))
            continue
        # Diagnostics only (the KS test decides): the sample median and mean absolute deviation
        # from mu estimate mu and b with standard errors b / sqrt(N) (~1.4% of b at N = 5000),
        # so the 10% thresholds below are about 7 standard errors.
        med = float(np.median(x))
        mad = float(np.mean(np.abs(x - mu)))
        hints = []
        if abs(med - mu) > 0.1 * b:
            hints.append(f"the median of your samples is {med:.3g}, but Lap(mu, b) has median mu = {mu:g}: "
                         "check the sign in front of b and where mu enters")
        if abs(mad / b - 1) > 0.1:
            hints.append(f"your samples' mean distance from mu is {mad:.3g}, but for Lap(mu, b) it is b = {b:g}: "
                         "check how b multiplies the logarithm")
        if not hints:
            hints.append("the shape is not Laplace: compare a histogram of your samples with laplace_pdf")
        findings.append(Finding(False, f"{where} does not follow Lap({mu:g}, {b:g}) (KS p-value {p:.1e}): "
                                       + "; ".join(hints)))
    # An inverse CDF is a deterministic, nondecreasing function of u.
    if monotone_u is None:
        findings.append(Finding(False, "not checked whether the output is nondecreasing in u (see above)"))
    else:
        u = np.sort(monotone_u)
        first, exc1 = call(f, u, 0.0, 1.0)
        second, exc2 = call(f, u, 0.0, 1.0)
        a, c = as_floats(first), as_floats(second)
        if exc1 or exc2 or a is None or c is None or a.shape != u.shape or c.shape != u.shape:
            findings.append(Finding(False, "laplace_inverse_cdf(u) failed on sorted uniforms"))
        elif not np.array_equal(a, c):
            findings.append(Finding(False, (
                "laplace_inverse_cdf gives different outputs for the same u: an inverse CDF is a function "
                "of u alone. Do you draw fresh random numbers inside instead of transforming u?")))
        elif (np.diff(a) < 0).any():
            findings.append(Finding(False, (
                "laplace_inverse_cdf is not nondecreasing in u, but an inverse CDF is (small u gives the "
                "left tail): check the sign in front of b and of u - 1/2.")))
        else:
            findings.append(Finding(True, "nondecreasing in u, as an inverse CDF must be"))
    return findings


def _sampler_domain(f: Callable, *, hidden: bool = False) -> list[Finding]:
    findings: list[Finding] = []
    bad_u: list[tuple[str, Any]] = [
        ("u = 0", 0.0),
        ("u = 1", 1.0),
        ("u = -0.25", -0.25),
        ("u = 1.5", 1.5),
        ("u = nan", math.nan),
        ("an array with one 0 among valid values", np.array([0.3, 0.0, 0.7])),
    ]
    if hidden:
        bad_u += [("u = 1 + 1e-12", 1.0 + 1e-12), ("an array with one 1.0", np.array([0.9, 1.0]))]
    for label, u in bad_u:
        value, exc = call(f, u, 0.0, 1.0)
        findings.append(expect_value_error(f"laplace_inverse_cdf({label})", value, exc,
                                            "u must lie in the open interval (0, 1)"))
    for b in (0.0, -1.0) if not hidden else (0.0, -2.5):
        value, exc = call(f, 0.3, 0.0, b)
        findings.append(expect_value_error(f"laplace_inverse_cdf(0.3, b={b:g})", value, exc,
                                            "the scale b must be > 0"))
    # Valid input must still work: u = 1/2 is the median.
    value, exc = call(f, 0.5, 1.25, 2.0)
    x = as_floats(value)
    if exc is not None:
        findings.append(Finding(False, f"laplace_inverse_cdf(0.5, mu=1.25, b=2) raised {describe(exc)} "
                                       "on valid input"))
    elif x is None or x.size != 1 or not np.isclose(float(x.reshape(-1)[0]), 1.25, rtol=0, atol=1e-12):
        findings.append(Finding(False, f"laplace_inverse_cdf(0.5, mu=1.25, b=2) returned {value!r}, "
                                       "not the median mu = 1.25"))
    else:
        findings.append(Finding(True, "valid input still works (u = 1/2 gives mu)"))
    return findings


def _spy_array(values: NDArray[np.float64]) -> tuple[np.ndarray, list[bool]]:
    """A view of ``values`` that records element-by-element access from Python (for loops)."""
    touched = [False]

    class ElementSpy(np.ndarray):
        def __iter__(self):  # type: ignore[override]
            touched[0] = True
            return super().__iter__()

        def __getitem__(self, key):  # type: ignore[override]
            if isinstance(key, (numbers.Integral, np.integer)) or (
                isinstance(key, tuple) and key and all(isinstance(k, (numbers.Integral, np.integer)) for k in key)
            ):
                touched[0] = True
            return super().__getitem__(key)

        def tolist(self):  # type: ignore[override]
            touched[0] = True
            return super().tolist()

    return values.view(ElementSpy), touched


def _best_time(fn: Callable[[], Any], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _sampler_vectorized(f: Callable, *, hidden: bool = False) -> list[Finding]:
    findings: list[Finding] = []
    rng_seed = 99 if hidden else 98
    u2 = _uniforms(rng_seed, 12).reshape(3, 4)
    value, exc = call(f, u2, 0.0, 1.0)
    if exc is not None:
        findings.append(Finding(False, f"laplace_inverse_cdf on a 3x4 array raised {describe(exc)}"))
    elif not isinstance(value, np.ndarray) or value.shape != (3, 4):
        shape = getattr(value, "shape", None)
        findings.append(Finding(False, f"laplace_inverse_cdf on a 3x4 array returned {type(value).__name__} "
                                       f"of shape {shape}: array in, array of the same shape out"))
    else:
        findings.append(Finding(True, "array in, array of the same shape out"))
    value, exc = call(f, 0.75, 0.0, 1.0)
    if exc is not None or as_floats(value) is None or np.ndim(value) != 0:
        what = describe(exc) if exc is not None else f"{type(value).__name__} {value!r}"
        findings.append(Finding(False, f"laplace_inverse_cdf(0.75) should return a single number, got {what}"))
    else:
        findings.append(Finding(True, "a number in, a number out"))
    spy, touched = _spy_array(_uniforms(rng_seed + 1, 1000))
    call(f, spy, 0.0, 1.0)
    if touched[0]:
        findings.append(Finding(False, (
            "laplace_inverse_cdf visits u element by element in Python (a for loop, a comprehension, "
            "u[i] or tolist()): apply numpy's elementwise functions (np.log, np.abs, np.sign, "
            "np.where) to the whole array instead.")))
        return findings  # the timing below would take long and say the same
    # Timing: the student's function and dptutor's reference on the same 10^6 uniforms, best of
    # up to 3 runs each, interleaved in this process so that machine load affects both alike.  A
    # vectorised answer is within a small factor of the reference; a Python loop (or np.vectorize)
    # is 30-1000 times slower.  A first run on 10^4 uniforms, scaled up, stops hopeless cases early.
    u = _uniforms(rng_seed + 2, SAMPLER_TIMING_SIZE)
    t_ref = _best_time(lambda: laplace_ppf(u), 2)
    small = u[: SAMPLER_TIMING_SIZE // 100]
    t0 = time.perf_counter()
    _, exc = call(f, small, 0.0, 1.0)
    t_f = 100 * (time.perf_counter() - t0)  # extrapolated to 10^6
    if exc is None and t_f <= 20 * SAMPLER_TIMING_RATIO * t_ref:
        t_f = math.inf
        for _ in range(3):
            t_ref = min(t_ref, _best_time(lambda: laplace_ppf(u), 1))
            t0 = time.perf_counter()
            _, exc = call(f, u, 0.0, 1.0)
            t_f = min(t_f, time.perf_counter() - t0)
            if exc is not None or t_f <= SAMPLER_TIMING_RATIO * t_ref or t_f > 20 * SAMPLER_TIMING_RATIO * t_ref:
                break  # decided
    if exc is not None:
        findings.append(Finding(False, f"laplace_inverse_cdf on many uniforms raised {describe(exc)}"))
    elif t_f > SAMPLER_TIMING_RATIO * t_ref:
        findings.append(Finding(False, (
            f"laplace_inverse_cdf takes about {t_f:.3g} s for 10^6 uniforms, {t_f / t_ref:.0f} times the reference "
            f"({t_ref:.2g} s): is there a Python loop or np.vectorize inside? Use whole-array numpy operations.")))
    else:
        findings.append(Finding(True, f"fast on 10^6 uniforms ({t_f / t_ref:.1f} x the reference)"))
    return findings


ASSIGNMENT = Assignment("sampler", "Inverse-CDF Laplace sampling", "sampler.md", (
    Question("q1", "law of the samples", 2.0, ("laplace_inverse_cdf",), _sampler_law),
    Question("q2", "domain checks", 1.0, ("laplace_inverse_cdf",), _sampler_domain),
    Question("q3", "vectorisation", 1.0, ("laplace_inverse_cdf",), _sampler_vectorized),
))
