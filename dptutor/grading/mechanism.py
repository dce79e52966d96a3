"""Assignment ``mechanism``: a vector Laplace mechanism for the mean of m records in [0, 1]^k.

Questions: the l1 sensitivity ``mean_sensitivity(m, k)`` (k/m), the law of the noise that
``private_mean(X, epsilon, rng=rng)`` adds (KS tests against Lap(0, k/(m epsilon))), and its
interface (shape, input left unchanged, reproducible from ``rng``, ``ValueError`` outside the proof).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dptutor.grading.feedback import (KS_ALPHA, Assignment, Finding, Question, as_floats, call, describe,
                                      expect_value_error, hidden_rng)

__all__ = ["ASSIGNMENT"]


def _sensitivity_cases(hidden: bool | int) -> list[tuple[int, int]]:
    rng = hidden_rng(hidden)
    if rng is None:
        return [(1, 4), (10, 1), (100, 3), (50, 20)]
    # One record, one coordinate, and random sizes: m in [2, 2000], k in [2, 64].
    return [(1, int(rng.integers(2, 65))), (int(rng.integers(2, 2001)), 1),
            *((int(rng.integers(2, 2001)), int(rng.integers(2, 65))) for _ in range(2))]


def _mechanism_sensitivity(f: Callable, *, hidden: bool | int = False) -> list[Finding]:
    cases = _sensitivity_cases(hidden)
    findings = []
    for m, k in cases:
        value, exc = call(f, m, k)
        want = k / m
        if exc is not None:
            findings.append(Finding(False, f"mean_sensitivity({m}, {k}) raised {describe(exc)}"))
            continue
        got = as_floats(value)
        if got is None or got.size != 1:
            findings.append(Finding(False, f"mean_sensitivity({m}, {k}) returned {value!r}, not a number"))
            continue
        got_f = float(got.reshape(-1)[0])
        if math.isclose(got_f, want, rel_tol=1e-9):
            findings.append(Finding(True, f"mean_sensitivity({m}, {k}) = {want:g}"))
            continue
        hint = {
            1 / m: "that is one coordinate's change; the l1 norm counts every coordinate of the change",
            float(k): "a record's change is diluted in the mean: how does m enter?",
            math.sqrt(k) / m: "that is the l2 sensitivity; the Laplace mechanism is calibrated with the l1 sensitivity",
            2 * k / m: "a coordinate of a record moves by at most 1 (from 0 to 1), not 2",
            1.0: "the mean's sensitivity depends on m and k",
        }
        reason = next((h for v, h in hint.items() if math.isclose(got_f, v, rel_tol=1e-9)),
                      "replace one record by another: how far can the mean move, summed over coordinates?")
        findings.append(Finding(False, f"mean_sensitivity({m}, {k}) returned {got_f:g}: {reason}"))
    return findings


def _mechanism_noise(f: Callable, *, hidden: bool | int = False) -> list[Finding]:
    """KS tests of the noise (output minus the true mean) against Lap(0, k / (m epsilon)).

    Each case is run with two independent seeds and passes if either KS test passes at level
    ``KS_ALPHA``: a correct mechanism then fails with probability ``KS_ALPHA**2 = 1e-6`` whatever
    way it draws its noise, while a wrong scale (factor 2 or more, 1000+ draws) gives p-values
    far below 1e-6 with both seeds.
    """
    rng_hidden = hidden_rng(hidden)
    base = 400 if rng_hidden is None else int(rng_hidden.integers(0, 2**32))
    cases = (
        # (m, k, epsilon, calls): one call with many coordinates, and many calls with few.
        (40, 1000, 0.5, 1),
        (200, 3, 2.0, 400),
    )
    findings = []
    for index, (m, k, eps, calls) in enumerate(cases):
        data_rng = np.random.default_rng(base + 10 * index)
        X = data_rng.random((m, k))
        b = k / (m * eps)
        where = f"private_mean(X, epsilon={eps:g}) with X of shape ({m}, {k})"
        outcomes: list[Finding] = []
        for rep in range(2):
            rng = np.random.default_rng(base + 10 * index + 1 + rep)
            noise_parts = []
            failure = None
            for _ in range(calls):
                value, exc = call(f, X.copy(), eps, rng=rng)
                if exc is not None:
                    failure = f"{where} raised {describe(exc)}"
                    break
                out = as_floats(value)
                if out is None or out.shape != (k,):
                    failure = (f"{where} returned shape {getattr(out, 'shape', None)}, expected ({k},): "
                               "one noisy value per coordinate of the mean")
                    break
                noise_parts.append(out - X.mean(axis=0))
            if failure:
                outcomes.append(Finding(False, failure))
                break
            noise = np.concatenate(noise_parts)
            if not np.isfinite(noise).all():
                outcomes.append(Finding(False, f"{where} returned NaN or infinite values"))
                break
            if np.all(np.abs(noise) < 1e-12 * max(1.0, b)):
                outcomes.append(Finding(False, f"{where} returned the exact mean: no noise was added"))
                break
            if k > 1 and calls == 1 and np.ptp(noise) == 0:
                outcomes.append(Finding(False, (
                    f"{where}: every coordinate got the same noise value; the Laplace mechanism (Eq. 2-3) "
                    "adds an independent Lap(0, b) draw to each coordinate (size=k).")))
                break
            p = stats.kstest(noise, stats.laplace(loc=0.0, scale=b).cdf).pvalue
            if p > KS_ALPHA:
                outcomes.append(Finding(True, f"{where}: the noise follows the Laplace law with the scale "
                                              f"that matches the sensitivity (KS p-value {p:.2g})"))
                break
            outcomes.append(Finding(False, _noise_diagnosis(noise, m, k, eps, p, where)))
        findings.append(next((o for o in outcomes if o.passed), outcomes[-1]))
    return findings


def _noise_diagnosis(noise: NDArray[np.float64], m: int, k: int, eps: float, p: float, where: str) -> str:
    # mean |noise| is the maximum-likelihood estimate of a centred Laplace scale; its standard error
    # is b / sqrt(N) (3% of b at N = 1000), so matching a candidate within 15% is 5 standard errors.
    b = k / (m * eps)
    b_hat = float(np.mean(np.abs(noise)))
    candidates = {
        "Delta = 1/m (one coordinate only)": 1 / (m * eps),
        "Delta = k (no division by m)": k / eps,
        "Delta = 1": 1 / eps,
        "Delta = sqrt(k)/m (the l2 sensitivity)": math.sqrt(k) / (m * eps),
        "Delta = 2k/m": 2 * k / (m * eps),
        "b = Delta * epsilon (multiplied instead of divided)": k / m * eps,
    }
    text = (f"{where}: the noise does not follow the Laplace law with the scale that matches the "
            f"sensitivity (KS p-value {p:.1e}); its scale is about {b_hat:.3g} (mean |noise|)")
    if abs(float(np.median(noise))) > 0.15 * b:
        text += f" and it is not centred at 0 (median {float(np.median(noise)):.3g})"
    match = [name for name, value in candidates.items() if abs(b_hat / value - 1) < 0.15]
    if match and abs(b_hat / b - 1) >= 0.15:
        text += f", which is what {match[0]} gives"
    return text + ". Check your sensitivity (question 1) and how b follows from it and epsilon (Eq. 3)."


def _mechanism_interface(f: Callable, *, hidden: bool | int = False) -> list[Finding]:
    findings = []
    rng_hidden = hidden_rng(hidden)
    seed = 16 if rng_hidden is None else int(rng_hidden.integers(0, 2**32))
    data = np.random.default_rng(seed).random((30, 4))
    # shapes
    shapes_ok = True
    for X in (data, data[:, :1]):
        value, exc = call(f, X.copy(), 1.0, rng=np.random.default_rng(0))
        if exc is not None or getattr(value, "shape", None) != (X.shape[1],):
            shapes_ok = False
            got = describe(exc) if exc is not None else f"shape {getattr(value, 'shape', None)}"
            findings.append(Finding(False, f"private_mean(X of shape {X.shape}) should return an array of shape "
                                           f"({X.shape[1]},), got {got}"))
            break
    if shapes_ok:
        findings.append(Finding(True, "returns one value per coordinate, shape (k,)"))
    # X untouched
    X = data.copy()
    call(f, X, 1.0, rng=np.random.default_rng(1))
    findings.append(Finding(True, "leaves X unchanged") if np.array_equal(X, data)
                    else Finding(False, "private_mean modified its input X in place: compute on a copy"))
    # reproducible with the rng it is given
    calls = [call(f, data.copy(), 1.0, rng=np.random.default_rng(s)) for s in (seed + 5, seed + 5, seed + 6)]
    a, b, c = (as_floats(value) for value, _ in calls)
    if any(exc is not None for _, exc in calls) or a is None or b is None or c is None:
        findings.append(Finding(False, "private_mean failed on a valid dataset"))
    elif not np.array_equal(a, b):
        findings.append(Finding(False, "two calls with the same seed gave different outputs: draw the noise "
                                       "from the rng argument (rng.laplace or rng.random), not np.random"))
    elif np.array_equal(a, c):
        findings.append(Finding(False, "two different seeds gave the same output: is any noise drawn from rng?"))
    else:
        findings.append(Finding(True, "uses the rng it is given (reproducible)"))
    # bad input: each kind of input the proof does not cover, with one value for the feedback and
    # another for grading.  epsilon = inf is refused: it would release the exact mean (b = 0).
    other = np.full((1, 4), 0.5)
    kinds: list[tuple[str, tuple[Any, Any], tuple[Any, Any]]] = [
        ("epsilon = 0", (data, 0.0), (data, 0.0)),
        ("epsilon < 0", (data, -1.0), (data, -0.25)),
        ("epsilon = nan", (data, math.nan), (data, math.nan)),
        ("epsilon = inf", (data, math.inf), (data, math.inf)),
        ("a value above 1", (np.vstack([data, np.full((1, 4), 1.5)]), 1.0),
         (np.vstack([other, data, other + 0.5 + 1e-9]), 1.0)),
        ("a value below 0", (np.vstack([data, np.full((1, 4), -0.1)]), 1.0), (np.vstack([other - 0.5 - 1e-9, data]), 1.0)),
        ("a nan record", (np.vstack([data, np.full((1, 4), math.nan)]), 1.0),
         (np.vstack([data[:3], [[0.2, math.nan, 0.1, 0.3]], data[3:]]), 1.0)),
        ("a 1-D X", (data[:, 0], 1.0), (data[0], 1.0)),
        ("an empty dataset (m = 0)", (np.empty((0, 4)), 1.0), (np.empty((0, 2)), 1.0)),
    ]
    for label, shown, secret in kinds:
        X, eps = secret if hidden else shown
        value, exc = call(f, np.array(X, copy=True), eps, rng=np.random.default_rng(seed + 2))
        findings.append(expect_value_error(f"private_mean with {label}", value, exc,
                                           "the proof only covers records in [0, 1]^k, X of shape (m, k) with "
                                           "m >= 1, and a finite epsilon > 0"))
    return findings


ASSIGNMENT = Assignment("mechanism", "A Laplace mechanism for a mean", "mechanism.md", (
    Question("q1", "sensitivity of the mean", 1.0, ("mean_sensitivity",), _mechanism_sensitivity),
    Question("q2", "law of the noise", 2.0, ("private_mean",), _mechanism_noise),
    Question("q3", "shapes and input checks", 1.0, ("private_mean",), _mechanism_interface),
))
