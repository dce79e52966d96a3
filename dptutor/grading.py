"""Autograding for the book's course assignments (``book/assignments/``).

Three assignments, each a MyST Markdown notebook that students fill in:

========================  =====================================================================
``sampler``               inverse-CDF Laplace sampling (Eq. 4/5): law, domain, vectorisation
``mechanism``             a vector Laplace mechanism for the mean of m records in [0, 1]^k
``audit``                 audit two mystery mechanisms with :mod:`dptutor.audit` at 95 %
========================  =====================================================================

Students get feedback in the notebook from small check calls::

    from dptutor.grading import checker
    check = checker("sampler")
    check.q1(laplace_inverse_cdf)      # -> a Feedback, shown as a short report

Instructors grade a folder of submissions (``.ipynb``, or ``.md`` Jupytext notebooks) with
``python -m dptutor grade sampler submissions/ --csv scores.csv``: every submission runs in a
fresh Jupyter kernel (nbclient) with a per-cell and a total time limit, after which *hidden*
checks run in the same kernel, on the student's own namespace.  They are the notebook checks with
other seeds and parameters, and each runs in its own cell, so a function that loops forever or
crashes costs only the questions that use it.  Each hidden cell prints one line, a random token
followed by JSON, which the grader reads back.

Grading executes the students' code with your privileges: grade in a container or a throw-away
account if that matters.  Students can read this module (it ships with ``dptutor``), so the
hidden checks are a guard against overfitting the feedback seeds, not a secret.

The instructor notebooks (``book/assignments/instructor/``) hold the solutions between
``# BEGIN SOLUTION`` / ``# END SOLUTION`` lines (``<!-- BEGIN SOLUTION -->`` / ``<!-- END
SOLUTION -->`` in Markdown); :func:`student_version` turns one into the student notebook, and
``python -m dptutor.grading release`` rewrites ``book/assignments/*.md`` from them.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import numbers
import re
import secrets
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dptutor.audit import AuditResult, estimate_loss
from dptutor.distributions import laplace_ppf
from dptutor._validate import check_batch, check_positive
from dptutor.mechanisms import add_laplace_noise

__all__ = [
    "Finding",
    "Feedback",
    "Question",
    "Assignment",
    "ASSIGNMENTS",
    "checker",
    "check",
    "mystery_a",
    "mystery_b",
    "AUDIT_EPSILON",
    "VERDICTS",
    "DIAGNOSES",
    "SubmissionResult",
    "grade_notebook",
    "grade_folder",
    "write_csv",
    "student_version",
    "release",
    "add_grade_arguments",
    "run_grade",
    "main",
]

#: Line width of a feedback report (it fits the book's code cells).
REPORT_WIDTH = 86
#: Significance level of every Kolmogorov-Smirnov test in the checks.
KS_ALPHA = 1e-3


# ---------------------------------------------------------------------------------------------
# results of a check
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One property checked: whether it holds, and a sentence for the student.

    ``passed=None`` marks an answer that the notebook's feedback records but does not reveal (a
    verdict, say): it is graded after submission and earns no points in the feedback.
    """

    passed: bool | None
    message: str


@dataclass(frozen=True)
class Feedback:
    """The outcome of one question: score out of ``points``, findings, and a status.

    ``status`` is ``"graded"``, ``"not implemented"`` (the template's stub is still there),
    ``"missing"`` (a name the question needs is not defined), ``"error"`` (the check could not run
    the student's code), ``"timeout"`` or ``"not run"`` (the grader's time limits).
    """

    assignment: str
    question: str
    title: str
    score: float
    points: float
    findings: tuple[Finding, ...] = ()
    status: str = "graded"

    @property
    def messages(self) -> list[str]:
        """The sentences a student should read: failed findings, or why nothing was graded."""
        return [f.message for f in self.findings if f.passed is False]

    def report(self) -> str:
        head = f"{self.question} ({self.title}): {_fmt_points(self.score)} / {_fmt_points(self.points)} points"
        if self.status != "graded":
            head += f" [{self.status}]"
        lines = [head]
        for f in self.findings:
            mark = {True: "✓", False: "✗", None: "?"}[f.passed]
            lines += textwrap.wrap(f.message, width=REPORT_WIDTH, initial_indent=f"  {mark} ",
                                   subsequent_indent="    ", break_on_hyphens=False)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.report()

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "score": self.score,
            "points": self.points,
            "status": self.status,
            "messages": self.messages,
        }


def _fmt_points(x: float) -> str:
    return f"{x:g}"


def _score(findings: Sequence[Finding], points: float) -> float:
    """Equal weight per finding, rounded to hundredths of a point."""
    if not findings:
        return 0.0
    return round(points * sum(f.passed is True for f in findings) / len(findings), 2)


class _NotAnswered(Exception):
    """Raised by a check when the student left the template's placeholder in place."""


# ---------------------------------------------------------------------------------------------
# calling student code safely
# ---------------------------------------------------------------------------------------------


def _call(fn: Callable, *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
    """``fn(*args, **kwargs)`` with warnings silenced; returns ``(value, None)`` or ``(None, exc)``.

    ``NotImplementedError`` propagates: it means the stub is still in place.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return fn(*args, **kwargs), None
            except NotImplementedError:
                raise
            except Exception as exc:  # the student's bug: reported, never fatal
                return None, exc


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "truth value of an array" in str(exc):
        text += " (an `if` on a whole array: use (u <= 0).any() or np.where)"
    return text


def _as_floats(value: Any) -> NDArray[np.float64] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# assignment 1: inverse-CDF Laplace sampling
# ---------------------------------------------------------------------------------------------

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
        value, exc = _call(f, u, mu, b)
        if exc is not None:
            findings.append(Finding(False, f"{where} raised {_describe(exc)}"))
            continue
        x = _as_floats(value)
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
        first, exc1 = _call(f, u, 0.0, 1.0)
        second, exc2 = _call(f, u, 0.0, 1.0)
        a, c = _as_floats(first), _as_floats(second)
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
        value, exc = _call(f, u, 0.0, 1.0)
        findings.append(_expect_value_error(f"laplace_inverse_cdf({label})", value, exc,
                                            "u must lie in the open interval (0, 1)"))
    for b in (0.0, -1.0) if not hidden else (0.0, -2.5):
        value, exc = _call(f, 0.3, 0.0, b)
        findings.append(_expect_value_error(f"laplace_inverse_cdf(0.3, b={b:g})", value, exc,
                                            "the scale b must be > 0"))
    # Valid input must still work: u = 1/2 is the median.
    value, exc = _call(f, 0.5, 1.25, 2.0)
    x = _as_floats(value)
    if exc is not None:
        findings.append(Finding(False, f"laplace_inverse_cdf(0.5, mu=1.25, b=2) raised {_describe(exc)} "
                                       "on valid input"))
    elif x is None or x.size != 1 or not np.isclose(float(x.reshape(-1)[0]), 1.25, rtol=0, atol=1e-12):
        findings.append(Finding(False, f"laplace_inverse_cdf(0.5, mu=1.25, b=2) returned {value!r}, "
                                       "not the median mu = 1.25"))
    else:
        findings.append(Finding(True, "valid input still works (u = 1/2 gives mu)"))
    return findings


def _expect_value_error(call: str, value: Any, exc: BaseException | None, why: str) -> Finding:
    if isinstance(exc, ValueError):
        return Finding(True, f"{call} raises ValueError")
    if exc is not None:
        return Finding(False, f"{call} raised {type(exc).__name__} ({exc}), expected ValueError: {why}")
    return Finding(False, f"{call} returned {value!r} instead of raising ValueError: {why}")


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
    value, exc = _call(f, u2, 0.0, 1.0)
    if exc is not None:
        findings.append(Finding(False, f"laplace_inverse_cdf on a 3x4 array raised {_describe(exc)}"))
    elif not isinstance(value, np.ndarray) or value.shape != (3, 4):
        shape = getattr(value, "shape", None)
        findings.append(Finding(False, f"laplace_inverse_cdf on a 3x4 array returned {type(value).__name__} "
                                       f"of shape {shape}: array in, array of the same shape out"))
    else:
        findings.append(Finding(True, "array in, array of the same shape out"))
    value, exc = _call(f, 0.75, 0.0, 1.0)
    if exc is not None or _as_floats(value) is None or np.ndim(value) != 0:
        what = _describe(exc) if exc is not None else f"{type(value).__name__} {value!r}"
        findings.append(Finding(False, f"laplace_inverse_cdf(0.75) should return a single number, got {what}"))
    else:
        findings.append(Finding(True, "a number in, a number out"))
    spy, touched = _spy_array(_uniforms(rng_seed + 1, 1000))
    _call(f, spy, 0.0, 1.0)
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
    _, exc = _call(f, small, 0.0, 1.0)
    t_f = 100 * (time.perf_counter() - t0)  # extrapolated to 10^6
    if exc is None and t_f <= 20 * SAMPLER_TIMING_RATIO * t_ref:
        t_f = math.inf
        for _ in range(3):
            t_ref = min(t_ref, _best_time(lambda: laplace_ppf(u), 1))
            t0 = time.perf_counter()
            _, exc = _call(f, u, 0.0, 1.0)
            t_f = min(t_f, time.perf_counter() - t0)
            if exc is not None or t_f <= SAMPLER_TIMING_RATIO * t_ref or t_f > 20 * SAMPLER_TIMING_RATIO * t_ref:
                break  # decided
    if exc is not None:
        findings.append(Finding(False, f"laplace_inverse_cdf on many uniforms raised {_describe(exc)}"))
    elif t_f > SAMPLER_TIMING_RATIO * t_ref:
        findings.append(Finding(False, (
            f"laplace_inverse_cdf takes about {t_f:.3g} s for 10^6 uniforms, {t_f / t_ref:.0f} times the reference "
            f"({t_ref:.2g} s): is there a Python loop or np.vectorize inside? Use whole-array numpy operations.")))
    else:
        findings.append(Finding(True, f"fast on 10^6 uniforms ({t_f / t_ref:.1f} x the reference)"))
    return findings


# ---------------------------------------------------------------------------------------------
# assignment 2: the Laplace mechanism for a mean of m records in [0, 1]^k
# ---------------------------------------------------------------------------------------------


def _mechanism_sensitivity(f: Callable, *, hidden: bool = False) -> list[Finding]:
    cases = ((1, 1), (10, 1), (100, 3), (50, 20)) if not hidden else ((4, 1), (25, 2), (1000, 7), (8, 64))
    findings = []
    for m, k in cases:
        value, exc = _call(f, m, k)
        want = k / m
        if exc is not None:
            findings.append(Finding(False, f"mean_sensitivity({m}, {k}) raised {_describe(exc)}"))
            continue
        got = _as_floats(value)
        if got is None or got.size != 1:
            findings.append(Finding(False, f"mean_sensitivity({m}, {k}) returned {value!r}, not a number"))
            continue
        got_f = float(got.reshape(-1)[0])
        if math.isclose(got_f, want, rel_tol=1e-9):
            findings.append(Finding(True, f"mean_sensitivity({m}, {k}) = {want:g}"))
            continue
        hint = {
            1 / m: "that is one coordinate's change; the l1 sensitivity adds up all k coordinates",
            float(k): "changing one record moves the mean by at most 1/m per coordinate, not 1",
            math.sqrt(k) / m: "that is the l2 sensitivity; the Laplace mechanism is calibrated with the l1 sensitivity",
            2 * k / m: "a coordinate of a record moves by at most 1 (from 0 to 1), so the mean moves by 1/m",
            1.0: "the mean's sensitivity depends on m and k",
        }
        reason = next((h for v, h in hint.items() if math.isclose(got_f, v, rel_tol=1e-9)),
                      "replace one record by another: how far can the mean move, summed over coordinates?")
        findings.append(Finding(False, f"mean_sensitivity({m}, {k}) returned {got_f:g}: {reason}"))
    return findings


def _mechanism_noise(f: Callable, *, hidden: bool = False) -> list[Finding]:
    """KS tests of the noise (output minus the true mean) against Lap(0, k / (m epsilon)).

    Each case is run with two independent seeds and passes if either KS test passes at level
    ``KS_ALPHA``: a correct mechanism then fails with probability ``KS_ALPHA**2 = 1e-6`` whatever
    way it draws its noise, while a wrong scale (factor 2 or more, 1000+ draws) gives p-values
    far below 1e-6 with both seeds.
    """
    base = 500 if hidden else 400
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
                value, exc = _call(f, X.copy(), eps, rng=rng)
                if exc is not None:
                    failure = f"{where} raised {_describe(exc)}"
                    break
                out = _as_floats(value)
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
                outcomes.append(Finding(True, f"{where}: the noise follows Lap(0, k/(m epsilon) = {b:.3g}) "
                                              f"(KS p-value {p:.2g})"))
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
    text = (f"{where}: the noise does not follow Lap(0, {b:.3g}) (KS p-value {p:.1e}); its scale is about "
            f"{b_hat:.3g} (mean |noise|)")
    if abs(float(np.median(noise))) > 0.15 * b:
        text += f" and it is not centred at 0 (median {float(np.median(noise)):.3g})"
    match = [name for name, value in candidates.items() if abs(b_hat / value - 1) < 0.15]
    if match and abs(b_hat / b - 1) >= 0.15:
        text += f", which is what {match[0]} gives"
    return text + f". The mean's l1 sensitivity is k/m, so b = k/(m epsilon) = {b:.3g}."


def _mechanism_interface(f: Callable, *, hidden: bool = False) -> list[Finding]:
    findings = []
    seed = 17 if hidden else 16
    data = np.random.default_rng(seed).random((30, 4))
    # shapes
    shapes_ok = True
    for X in (data, data[:, :1]):
        value, exc = _call(f, X.copy(), 1.0, rng=np.random.default_rng(0))
        if exc is not None or getattr(value, "shape", None) != (X.shape[1],):
            shapes_ok = False
            got = _describe(exc) if exc is not None else f"shape {getattr(value, 'shape', None)}"
            findings.append(Finding(False, f"private_mean(X of shape {X.shape}) should return an array of shape "
                                           f"({X.shape[1]},), got {got}"))
            break
    if shapes_ok:
        findings.append(Finding(True, "returns one value per coordinate, shape (k,)"))
    # X untouched
    X = data.copy()
    _call(f, X, 1.0, rng=np.random.default_rng(1))
    findings.append(Finding(True, "leaves X unchanged") if np.array_equal(X, data)
                    else Finding(False, "private_mean modified its input X in place: compute on a copy"))
    # reproducible with the rng it is given
    calls = [_call(f, data.copy(), 1.0, rng=np.random.default_rng(seed)) for seed in (5, 5, 6)]
    a, b, c = (_as_floats(value) for value, _ in calls)
    if any(exc is not None for _, exc in calls) or a is None or b is None or c is None:
        findings.append(Finding(False, "private_mean failed on a valid dataset"))
    elif not np.array_equal(a, b):
        findings.append(Finding(False, "two calls with the same seed gave different outputs: draw the noise "
                                       "from the rng argument (rng.laplace or rng.random), not np.random"))
    elif np.array_equal(a, c):
        findings.append(Finding(False, "two different seeds gave the same output: is any noise drawn from rng?"))
    else:
        findings.append(Finding(True, "uses the rng it is given (reproducible)"))
    # bad input
    bad: list[tuple[str, Any, Any]] = [
        ("epsilon = 0", data, 0.0),
        ("epsilon = -1", data, -1.0),
        ("a record with a value 1.5", np.vstack([data, np.full((1, 4), 1.5)]), 1.0),
        ("a record with a value -0.1", np.vstack([data, np.full((1, 4), -0.1)]), 1.0),
        ("a 1-D X", data[:, 0], 1.0),
    ]
    if hidden:
        bad.append(("an empty dataset (m = 0)", np.empty((0, 4)), 1.0))
    for label, X, eps in bad:
        value, exc = _call(f, np.array(X, copy=True), eps, rng=np.random.default_rng(2))
        findings.append(_expect_value_error(f"private_mean with {label}", value, exc,
                                            "the sensitivity k/m only holds for records in [0, 1]^k, "
                                            "X of shape (m, k) with m >= 1, and epsilon > 0"))
    return findings


# ---------------------------------------------------------------------------------------------
# assignment 3: audit two mystery mechanisms
# ---------------------------------------------------------------------------------------------

#: The privacy budget both mystery mechanisms claim.
AUDIT_EPSILON = 1.0
#: Confidence level of the verdicts.
AUDIT_CONFIDENCE = 0.95
#: Allowed verdicts.
VERDICTS = ("violates", "no evidence")
#: The possible explanations of mystery A's behaviour, by key.
DIAGNOSES = {
    "one-sided": "the noise is never negative",
    "sensitivity-1": "the scale is 1/epsilon whatever n is (sensitivity 1 instead of n)",
    "l2": "the scale is sqrt(n)/epsilon (the l2 sensitivity instead of the l1 sensitivity n)",
    "half-scale": "the scale is n/(2 epsilon) (half the noise)",
}
_AUDIT_MIN_TRIALS = 100_000
_AUDIT_MAX_TRIALS = 5_000_000


def _mystery(x: NDArray, epsilon: float, rng: np.random.Generator, scale: Callable[[int], float]) -> NDArray:
    """``x + Lap(0, scale(n) / epsilon)``, checked and drawn as :mod:`dptutor.mechanisms` does."""
    return add_laplace_noise(x, scale(check_batch(x).shape[1]) / check_positive(epsilon, "epsilon"), rng)


def mystery_a(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Mystery mechanism A: a local-DP release of ``x`` (shape ``(trials, n)``) claiming epsilon-DP."""
    return _mystery(x, epsilon, rng, math.sqrt)


def mystery_b(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Mystery mechanism B: a local-DP release of ``x`` (shape ``(trials, n)``) claiming epsilon-DP."""
    return _mystery(x, epsilon, rng, float)


def _verdict(verdicts: Any, key: str) -> str:
    if not isinstance(verdicts, Mapping):
        raise _NotAnswered(f"verdicts should be a dict like {{'A': ..., 'B': ...}}, got {type(verdicts).__name__}")
    value = verdicts.get(key)
    if value is None:
        raise _NotAnswered(f"no verdict for mechanism {key} yet")
    return str(value).strip().lower()


def _replay(result: Any, mechanism: Callable, label: str, minimum_trials: int) -> list[Finding]:
    """Check that ``result`` is a genuine 95% audit of ``mechanism`` at epsilon = AUDIT_EPSILON."""
    if result is None:
        raise _NotAnswered(f"no evidence for mechanism {label} yet")
    if not isinstance(result, AuditResult):
        return [Finding(False, f"evidence['{label}'] should be the AuditResult returned by estimate_loss, "
                               f"got {type(result).__name__}")]
    findings = []
    if result.epsilon != AUDIT_EPSILON or result.trials < minimum_trials:
        findings.append(Finding(False, f"audit mechanism {label} at epsilon = {AUDIT_EPSILON:g} (the budget it claims) "
                                       f"with at least {minimum_trials:,} trials per dataset; your evidence has "
                                       f"epsilon = {result.epsilon:g} and {result.trials:,} trials"))
    else:
        findings.append(Finding(True, f"audited at epsilon = {AUDIT_EPSILON:g} with {result.trials:,} trials"))
    if result.trials > _AUDIT_MAX_TRIALS:
        findings.append(Finding(False, f"use at most {_AUDIT_MAX_TRIALS:,} trials so that the grader can replay "
                                       "your audit"))
        return findings
    seed = list(result.seed) if isinstance(result.seed, tuple) else result.seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replay = estimate_loss(mechanism, result.n, result.epsilon, result.trials, seed=seed)
    name = mechanism.__name__
    if np.array_equal(replay.counts, result.counts):
        findings.append(Finding(True, f"replaying estimate_loss({name}, n={result.n}, ...) reproduces your counts"))
    else:
        findings.append(Finding(False, (
            f"replaying estimate_loss({name}, n={result.n}, epsilon={result.epsilon:g}, trials={result.trials}, "
            f"seed={result.seed}) does not reproduce your counts: is evidence['{label}'] an audit of {name}?")))
    return findings


def _pending(what: str, value: str) -> Finding:
    return Finding(None, f"{what} recorded ({value!r}); whether it is right is graded after you submit")


def _bound_agrees(result: Any, verdict: str, label: str) -> Finding:
    lower = result.lower_bound(AUDIT_CONFIDENCE)
    shows = lower > AUDIT_EPSILON
    if shows == (verdict == "violates"):
        return Finding(True, f"your verdict for {label} agrees with your evidence: 95% lower bound {lower:.3g} "
                             f"{'>' if shows else '<='} epsilon = {AUDIT_EPSILON:g}")
    if verdict == "violates":
        return Finding(False, (
            f"your evidence for {label} has a 95% lower bound of {lower:.3g} <= epsilon = {AUDIT_EPSILON:g}: it "
            "shows no violation. A violation needs the lower bound above epsilon (an estimate above epsilon is "
            "not enough); find a dimension n and enough trials where it is, or change the verdict."))
    return Finding(False, f"your evidence for {label} has a 95% lower bound of {lower:.3g} > epsilon = "
                          f"{AUDIT_EPSILON:g}, which shows a violation, but your verdict is {verdict!r}")


def _evidence(evidence: Any, label: str) -> Any:
    if not isinstance(evidence, Mapping):
        raise _NotAnswered("evidence should be a dict like {'A': audit_a, 'B': audit_b}")
    return evidence.get(label)


def _verdict_and_replay(verdicts: Any, evidence: Any, label: str, truth: str, wrong_hint: str,
                        mechanism: Callable, minimum_trials: int, *, hidden: bool) -> tuple[str, Any, list[Finding]]:
    """What both audit questions check of mechanism ``label``: the verdict (``wrong_hint`` if it is
    not ``truth``; withheld unless ``hidden``) and a replay of the evidence (:func:`_replay`).

    Returns the normalised verdict, the evidence and the findings.
    """
    verdict = _verdict(verdicts, label)
    if verdict not in VERDICTS:
        finding = Finding(False, f"verdicts['{label}'] = {verdict!r} is not one of {VERDICTS}")
    elif not hidden:
        finding = _pending(f"verdict for {label}", verdict)
    elif verdict == truth:
        finding = Finding(True, f"verdict for {label}: {truth}")
    else:
        finding = Finding(False, f"verdict for {label}: {wrong_hint}")
    result = _evidence(evidence, label)
    return verdict, result, [finding, *_replay(result, mechanism, label, minimum_trials)]


def _audit_a(verdicts: Any, evidence: Any, *, hidden: bool = False) -> list[Finding]:
    """Mechanism A violates its claim; the evidence must be a replayable audit whose bound shows it."""
    verdict, result, findings = _verdict_and_replay(verdicts, evidence, "A", "violates", (
        "A does violate its claim. At n = 1 the attack sees nothing wrong, so audit it at other "
        "dimensions n too (the paper scans n = 1 to 128)."), mystery_a, 1, hidden=hidden)
    if isinstance(result, AuditResult) and verdict in VERDICTS:
        findings.append(_bound_agrees(result, verdict if not hidden else "violates", "A"))
    return findings


def _audit_b(verdicts: Any, evidence: Any, *, hidden: bool = False) -> list[Finding]:
    """Mechanism B is correct; the evidence must be a replayable audit at A's dimension, bound <= epsilon."""
    verdict, result, findings = _verdict_and_replay(verdicts, evidence, "B", "no evidence", (
        "B shows no violation. A violation needs a 95% lower bound above epsilon; an estimate above "
        "epsilon is not enough (sampling error)."), mystery_b, _AUDIT_MIN_TRIALS, hidden=hidden)
    if isinstance(result, AuditResult):
        a = _evidence(evidence, "A")
        if isinstance(a, AuditResult) and result.n != a.n:
            findings.append(Finding(False, f"compare like with like: audit B at the dimension where you audited A "
                                           f"(n = {a.n}), not n = {result.n}"))
        else:
            findings.append(Finding(True, f"audited at the same dimension as A (n = {result.n})"))
        if verdict in VERDICTS:
            findings.append(_bound_agrees(result, verdict, "B"))
    return findings


def _audit_diagnosis(diagnosis: Any, *, hidden: bool = False) -> list[Finding]:
    if diagnosis is None:
        raise _NotAnswered("no diagnosis yet")
    key = str(diagnosis).strip().lower()
    if key not in DIAGNOSES:
        return [Finding(False, f"diagnosis should be one of {sorted(DIAGNOSES)}, got {diagnosis!r}")]
    if not hidden:
        return [_pending("diagnosis", key)]
    if key == "l2":
        return [Finding(True, "A calibrates its noise with the l2 sensitivity sqrt(n)")]
    hints = {
        "one-sided": "one-sided noise gives an infinite loss at every n (like DPText); what does A give at n = 1?",
        "sensitivity-1": "with scale 1/epsilon the loss would grow with n without bound (like ADePT); does A's?",
        "half-scale": "half the noise would already violate the claim at n = 1; does A at n = 1?",
    }
    return [Finding(False, f"not {key!r}: {hints[key]} Write the candidate as a mechanism and audit it "
                           "at the same n and seed to compare the count tables.")]


# ---------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One graded question: the names it reads from the student's notebook, and its check."""

    name: str
    title: str
    points: float
    needs: tuple[str, ...]
    check: Callable[..., list[Finding]]


@dataclass(frozen=True)
class Assignment:
    name: str
    title: str
    notebook: str  # the student notebook, relative to book/assignments/
    questions: tuple[Question, ...]

    @property
    def points(self) -> float:
        return sum(q.points for q in self.questions)

    def question(self, name: str) -> Question:
        for q in self.questions:
            if q.name == name:
                return q
        raise ValueError(f"assignment {self.name!r} has no question {name!r} "
                         f"(it has {[q.name for q in self.questions]})")


ASSIGNMENTS: dict[str, Assignment] = {
    a.name: a
    for a in (
        Assignment("sampler", "Inverse-CDF Laplace sampling", "sampler.md", (
            Question("q1", "law of the samples", 2.0, ("laplace_inverse_cdf",), _sampler_law),
            Question("q2", "domain checks", 1.0, ("laplace_inverse_cdf",), _sampler_domain),
            Question("q3", "vectorisation", 1.0, ("laplace_inverse_cdf",), _sampler_vectorized),
        )),
        Assignment("mechanism", "A Laplace mechanism for a mean", "mechanism.md", (
            Question("q1", "sensitivity of the mean", 1.0, ("mean_sensitivity",), _mechanism_sensitivity),
            Question("q2", "law of the noise", 2.0, ("private_mean",), _mechanism_noise),
            Question("q3", "shapes and input checks", 1.0, ("private_mean",), _mechanism_interface),
        )),
        Assignment("audit", "Auditing two mystery mechanisms", "audit.md", (
            Question("q1", "mechanism A", 2.0, ("verdicts", "evidence"), _audit_a),
            Question("q2", "mechanism B", 2.0, ("verdicts", "evidence"), _audit_b),
            Question("q3", "diagnosis of A", 1.0, ("diagnosis",), _audit_diagnosis),
        )),
    )
}


def _assignment(name: str) -> Assignment:
    try:
        return ASSIGNMENTS[name]
    except KeyError:
        raise ValueError(f"assignment must be one of {sorted(ASSIGNMENTS)}, got {name!r}") from None


def check(assignment: str, question: str, *objects: Any, hidden: bool = False) -> Feedback:
    """Run one question's check on the student's objects and return the :class:`Feedback`.

    Never raises because of the student's code: a stub still in place gives status
    ``"not implemented"``, any other failure a message.
    """
    a = _assignment(assignment)
    q = a.question(question)
    if len(objects) != len(q.needs):
        raise TypeError(f"{assignment} {question} checks {', '.join(q.needs)}: pass {len(q.needs)} object(s)")
    base = dict(assignment=a.name, question=q.name, title=q.title, points=q.points)
    try:
        findings = q.check(*objects, hidden=hidden)
    except NotImplementedError:
        names = " and ".join(f"`{n}`" for n in q.needs)
        return Feedback(**base, score=0.0, status="not implemented", findings=(Finding(
            False, f"not implemented yet: {names} still raises NotImplementedError; replace the "
                   "`raise NotImplementedError(...)` line with your code"),))
    except _NotAnswered as exc:
        return Feedback(**base, score=0.0, status="not implemented",
                        findings=(Finding(False, f"not answered yet: {exc}"),))
    except Exception as exc:  # a student object that breaks the check itself
        return Feedback(**base, score=0.0, status="error",
                        findings=(Finding(False, f"could not check your answer: {_describe(exc)}"),))
    return Feedback(**base, score=_score(findings, q.points), findings=tuple(findings))


class _Checker:
    """``checker(name).q1(obj, ...)``: the notebook-side feedback for one assignment."""

    def __init__(self, assignment: Assignment) -> None:
        self._assignment = assignment
        for q in assignment.questions:
            setattr(self, q.name, self._make(q))

    def _make(self, q: Question) -> Callable[..., Feedback]:
        def run(*objects: Any) -> Feedback:
            return check(self._assignment.name, q.name, *objects)

        run.__name__ = q.name
        run.__doc__ = f"Check {q.name} ({q.title}) of {self._assignment.name!r}: pass {', '.join(q.needs)}."
        return run

    def __repr__(self) -> str:
        qs = ", ".join(f"{q.name}({', '.join(q.needs)})" for q in self._assignment.questions)
        return f"checks for {self._assignment.title!r}: {qs}"


def checker(assignment: str) -> _Checker:
    """The feedback checks of ``assignment``, as attributes ``q1``, ``q2``, ...."""
    return _Checker(_assignment(assignment))


def grade_in_kernel(assignment: str, question: str, namespace: Mapping[str, Any], token: str) -> None:
    """Hidden check, run in the student's kernel: print ``token`` and the Feedback as JSON."""
    a = _assignment(assignment)
    q = a.question(question)
    missing = [n for n in q.needs if n not in namespace]
    if missing:
        fb = Feedback(a.name, q.name, q.title, 0.0, q.points, status="missing", findings=(Finding(
            False, f"{', '.join(missing)} is not defined in your notebook: keep the template's names, and "
                   "check that the cell defining it runs without error"),))
    else:
        fb = check(assignment, question, *(namespace[n] for n in q.needs), hidden=True)
    print(token + json.dumps(fb.to_json()), flush=True)


# ---------------------------------------------------------------------------------------------
# grading submissions
# ---------------------------------------------------------------------------------------------

_GRADING_TAG = "dptutor-grading"
#: Cells with this tag (the template's feedback calls) are not run when grading.
FEEDBACK_TAG = "dptutor-check"


@dataclass
class SubmissionResult:
    """Scores of one submitted notebook."""

    file: str
    assignment: str
    scores: dict[str, float]
    points: dict[str, float]
    messages: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return round(sum(self.scores.values()), 2)

    def feedback_text(self) -> str:
        lines = [f"{self.file}: {_fmt_points(self.total)} / {_fmt_points(sum(self.points.values()))} points"]
        lines += [f"  note: {n}" for n in self.notes]
        for q, score in self.scores.items():
            lines.append(f"{q}: {_fmt_points(score)} / {_fmt_points(self.points[q])}")
            lines += [f"  - {m}" for m in self.messages.get(q, [])]
        return "\n".join(lines)


def _read_notebook(path: Path):
    import nbformat

    if path.suffix == ".ipynb":
        return nbformat.read(path, as_version=4)
    import jupytext

    return jupytext.read(path)


def _grading_cells(assignment: Assignment, token: str) -> list:
    import nbformat

    cells = []
    for q in assignment.questions:
        source = (f"__import__('dptutor.grading', fromlist=['grade_in_kernel']).grade_in_kernel("
                  f"{assignment.name!r}, {q.name!r}, globals(), {token!r})")
        cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": [_GRADING_TAG]}))
    return cells


def _first_error(cells: Sequence) -> str | None:
    for index, cell in enumerate(cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"your code cell {index + 1} raised {out.get('ename')}: {out.get('evalue')}"
    return None


def _hidden_feedback(cell: Mapping, token: str) -> dict[str, Any] | None:
    """The Feedback JSON that :func:`grade_in_kernel` printed in ``cell``, or None.

    The token need not start a line: the student's code, run by the check, may have printed
    something without a newline just before.
    """
    fb = None
    for out in cell.get("outputs", []):
        text = out.get("text", "") if out.get("output_type") == "stream" else ""
        if token in text:
            fb = json.loads(text.rsplit(token, 1)[1].split("\n", 1)[0])
    return fb


def _run_coroutine(factory: Callable[[], Any]) -> None:
    """``asyncio.run(factory())``, in a helper thread when an event loop already runs here (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(factory())
        return
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(factory())).result()


def grade_notebook(path: Path | str, assignment: str, *, timeout: float = 60,
                   total_timeout: float = 600) -> SubmissionResult:
    """Execute one submission in a fresh kernel and grade it with the hidden checks.

    ``timeout`` limits every cell (seconds; the kernel is interrupted and grading goes on),
    ``total_timeout`` the whole notebook (the kernel is shut down; questions not graded by then
    score 0).  A submission that cannot be read, crashes or loops scores 0 on the questions it
    affects, with a note saying why; it never raises.
    """
    import nbformat
    from nbclient import NotebookClient

    a = _assignment(assignment)
    path = Path(path)
    result = SubmissionResult(path.name, a.name, {q.name: 0.0 for q in a.questions},
                              {q.name: q.points for q in a.questions})
    try:
        nb = _read_notebook(path)
    except Exception as exc:
        result.notes.append(f"could not read the notebook: {_describe(exc)}")
        for q in a.questions:
            result.messages[q.name] = ["not graded: the notebook could not be read"]
        return result
    student = [c for c in nb.cells if c.cell_type == "code" and FEEDBACK_TAG not in c.get("metadata", {}).get("tags", [])]
    for cell in student:
        cell.outputs = []
        cell.execution_count = None
    token = f"DPTUTOR-RESULT-{secrets.token_hex(8)} "
    grading = _grading_cells(a, token)
    run_nb = nbformat.v4.new_notebook(cells=student + grading)
    run_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with tempfile.TemporaryDirectory(prefix="dptutor-grade-") as workdir:
        client = NotebookClient(
            run_nb,
            timeout=max(1, int(math.ceil(timeout))),
            kernel_name="python3",
            allow_errors=True,
            interrupt_on_timeout=True,
            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"the cell ran longer than {timeout:g} s",
                              "traceback": []},
            shutdown_kernel="immediate",
            record_timing=False,
            resources={"metadata": {"path": workdir}},
        )

        async def run() -> None:
            # The kernel's own stderr (start-up chatter) is not the student's output: that comes
            # through the kernel's messages.
            await asyncio.wait_for(client.async_execute(stderr=subprocess.DEVNULL), timeout=total_timeout)

        started = time.monotonic()
        try:
            _run_coroutine(run)
        except Exception as exc:  # time limit, dead kernel, kernel failed to start, ...
            # Cancelling at the time limit shuts the kernel down, which may surface as a dead kernel.
            if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or time.monotonic() - started >= total_timeout:
                result.notes.append(f"the notebook was stopped at the total time limit of {total_timeout:g} s")
            else:
                result.notes.append(f"execution stopped: {_describe(exc)}")
    error = _first_error(student)
    if error:
        result.notes.append(error)
    for q, cell in zip(a.questions, grading):
        fb = _hidden_feedback(cell, token)
        if fb is not None:
            result.scores[q.name] = float(fb["score"])
            result.messages[q.name] = list(fb["messages"])
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if any(e.get("ename") in ("CellTimeoutError", "KeyboardInterrupt") for e in errors):
            why = f"not graded: checking it ran longer than {timeout:g} s (an endless loop?)"
        elif errors:
            why = f"not graded: the check crashed with {errors[0].get('ename')}: {errors[0].get('evalue')}"
        else:
            why = "not graded: the notebook ran out of time or its kernel died before this check"
        result.messages[q.name] = [why]
    return result


def grade_folder(assignment: str, folder: Path | str, *, timeout: float = 60, total_timeout: float = 600,
                 progress: Callable[[str], None] | None = None) -> list[SubmissionResult]:
    """Grade every ``.ipynb`` and ``.md`` notebook in ``folder`` (not recursive), in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"submissions folder {folder} does not exist")
    _assignment(assignment)
    paths = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".ipynb", ".md"))
    results = []
    for path in paths:
        if progress:
            progress(path.name)
        results.append(grade_notebook(path, assignment, timeout=timeout, total_timeout=total_timeout))
    return results


def write_csv(results: Sequence[SubmissionResult], path: Path | str, assignment: str) -> None:
    """One row per submission: file, one column per question, total, and the messages."""
    a = _assignment(assignment)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["file", *(q.name for q in a.questions), "total", "messages"])
        for r in results:
            messages = list(r.notes) + [f"{q}: {m}" for q, ms in r.messages.items() for m in ms]
            writer.writerow([r.file, *(_fmt_points(r.scores[q.name]) for q in a.questions),
                             _fmt_points(r.total), " | ".join(messages)])


# ---------------------------------------------------------------------------------------------
# instructor notebook -> student notebook
# ---------------------------------------------------------------------------------------------

_BEGIN = re.compile(r"^(\s*)(#|<!--)\s*BEGIN SOLUTION\s*(-->)?\s*$")
_END = re.compile(r"^\s*(#|<!--)\s*END SOLUTION\s*(-->)?\s*$")
_STUB = re.compile(r"^(\s*)#\s?STUB:\s?(.*)$")


def student_version(text: str) -> str:
    """The student notebook: ``text`` with every solution block replaced by its stub lines.

    A block runs from a ``# BEGIN SOLUTION`` line to a ``# END SOLUTION`` line (in Markdown:
    ``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->``) and is dropped, markers included.  A
    comment line ``# STUB: <code>`` (a comment in the instructor version, usually right after a
    block) becomes ``<code>``, at the same indentation, in the student version.
    """
    out: list[str] = []
    inside = False
    start = 0
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if _BEGIN.match(line):
            if inside:
                raise ValueError(f"line {number}: BEGIN SOLUTION inside the block opened on line {start}")
            inside, start = True, number
            continue
        if _END.match(line):
            if not inside:
                raise ValueError(f"line {number}: END SOLUTION without BEGIN SOLUTION")
            inside = False
            continue
        stub = _STUB.match(line)
        if stub:
            out.append(stub[1] + stub[2] + "\n")
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"the solution block opened on line {start} is never closed")
    return "".join(out)


def _book_assignments() -> Path:
    return Path(__file__).resolve().parents[1] / "book" / "assignments"


def release(folder: Path | None = None) -> list[Path]:
    """Rewrite each student notebook ``<folder>/<name>.md`` from ``<folder>/instructor/<name>.md``."""
    folder = folder or _book_assignments()
    written = []
    for a in ASSIGNMENTS.values():
        source = folder / "instructor" / a.notebook
        target = folder / a.notebook
        target.write_text(student_version(source.read_text(encoding="utf-8")), encoding="utf-8")
        written.append(target)
    return written


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------


def _positive(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_grade_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``python -m dptutor grade``."""
    parser.add_argument("assignment", choices=sorted(ASSIGNMENTS), help="which assignment")
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or .md)")
    parser.add_argument("--csv", type=Path, default=Path("scores.csv"),
                        help="output CSV, one row per submission (default: %(default)s)")
    parser.add_argument("--feedback", type=Path, default=None, metavar="DIR",
                        help="also write one <submission>.txt feedback file per submission into DIR")
    parser.add_argument("--timeout", type=_positive, default=60,
                        help="time limit per cell in seconds (default: %(default)s)")
    parser.add_argument("--total-timeout", type=_positive, default=600,
                        help="time limit per notebook in seconds (default: %(default)s)")


def run_grade(args: argparse.Namespace) -> int:
    """Handler of ``python -m dptutor grade``."""
    a = _assignment(args.assignment)
    if not args.submissions.is_dir():
        print(f"error: {args.submissions} is not a folder", file=sys.stderr)
        return 2
    results = grade_folder(a.name, args.submissions, timeout=args.timeout, total_timeout=args.total_timeout,
                           progress=lambda name: print(f"grading {name} ...", flush=True))
    write_csv(results, args.csv, a.name)
    if args.feedback is not None:
        args.feedback.mkdir(parents=True, exist_ok=True)
        for r in results:
            (args.feedback / f"{Path(r.file).stem}.txt").write_text(r.feedback_text() + "\n", encoding="utf-8")
    for r in results:
        print(f"{r.file}: {_fmt_points(r.total)} / {_fmt_points(a.points)}")
    print(f"{len(results)} submission(s) graded -> {args.csv}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dptutor.grading grade ...`` (same as ``python -m dptutor grade``) or ``release``."""
    parser = argparse.ArgumentParser(prog="python -m dptutor.grading")
    sub = parser.add_subparsers(dest="command", required=True)
    add_grade_arguments(sub.add_parser("grade", help="grade a folder of submissions into a CSV"))
    sub.add_parser("release", help="rewrite book/assignments/*.md from book/assignments/instructor/*.md")
    args = parser.parse_args(argv)
    if args.command == "release":
        for path in release():
            print(f"wrote {path}")
        return 0
    return run_grade(args)


if __name__ == "__main__":
    sys.exit(main())
