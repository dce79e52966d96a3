"""Assignment ``sampler``: inverse-CDF Laplace sampling (the paper's Eq. 4/5).

Three questions on one student function, ``laplace_inverse_cdf(u, mu, b)``: its law (KS tests
against Lap(mu, b)), its domain checks (``ValueError`` outside (0, 1) and for b <= 0), and
vectorisation (no element-by-element access; time within a factor of the reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor.distributions import laplace_ppf
from dptutor.assignments.feedback import (KS_ALPHA, Assignment, Finding, Question, as_floats, call, describe,
                                      expect_value_error, returned, grading_rng, short_repr, spy_array,
                                      uniforms)
from dptutor.assignments.record import call_many, flag_for_review, grading, measure, reference_seconds

__all__ = ["ASSIGNMENT", "SAMPLER_TIMING_SIZE", "SAMPLER_TIMING_RATIO"]


# Parameters: the notebook's feedback uses fixed seeds; grading draws (mu, b) and the seeds from
# grading_rng(grading_seed), fresh for each submission.  Every correct inverse CDF maps the same u to the
# same x (up to rounding), so all correct answers give the same KS p-values.  Each case is tried with
# two independent seeds and passes if either KS test passes at KS_ALPHA: a correct sampler then
# fails a case with probability KS_ALPHA**2 = 1e-6, while a wrong scale or sign (5000 draws) gives
# p-values far below that with both seeds.
_FEEDBACK_CASES = (((20220, 20230), 0.0, 1.0), ((20221, 20231), 2.0, 0.5))
_SAMPLER_N = 5000
#: Uniforms in the vectorisation check, and the allowed time ratio to dptutor's reference.  Measured
#: in the grader (bubblewrap sandbox, one cell per repeat, each side's CPU time: the sandbox's and
#: the grader thread's; benchmarks/bench_speed_check.py), a vectorised answer takes 1.9-2.9 times the
#: reference, the fastest loop (``math.log`` over ``u.tolist()``) 12-13 times and a loop over
#: ``np.ndenumerate`` 15-22 times, quiet or with three busy processes on the two cores.  The ratio is
#: the only unforgeable evidence of a loop (the kernel can rewrite what the spy array reports), so it
#: sits between the two in log scale.
SAMPLER_TIMING_SIZE = 1_000_000
SAMPLER_TIMING_RATIO = 5.0
#: The reference's calls per timed input: its best time of 3 calls varies from 0.024 to 0.040 s between gradings
#: (fresh memory for every array), of 9 mostly from 0.024 to 0.027 s: a steadier yardstick.
SAMPLER_REFERENCE_REPEATS = 3
#: A timed call stops counting here (seconds): a Python loop over 10^6 uniforms takes far longer.
SAMPLER_TIMING_CAP = 5.0


def _law_cases(grading_seed: int | None) -> list[tuple[tuple[int, int], float, float]]:
    rng = grading_rng(grading_seed)
    if rng is None:
        return list(_FEEDBACK_CASES)
    cases = []
    for _ in range(2):
        seeds = tuple(int(s) for s in rng.integers(0, 2**32, size=2))
        mu = round(float(rng.uniform(-3, 3)), 2)
        b = float(f"{math.exp(rng.uniform(math.log(0.2), math.log(5))):.3g}")
        if abs(mu) < b / 2:  # mu at least b / 2 from 0, so that a sampler ignoring mu fails the test
            mu = round(math.copysign(abs(mu) + b / 2, mu), 2)
        cases.append((seeds, mu, b))
    return cases


def _sampler_law(f: Callable, *, grading_seed: int | None = None) -> list[Finding]:
    findings: list[Finding] = []
    monotone_u: NDArray[np.float64] | None = None
    for seeds, mu, b in _law_cases(grading_seed):
        outcome = Finding(False, "not checked")
        for seed in seeds:
            outcome, u, ks_failure = _law_case(f, seed, mu, b)
            if u is not None and monotone_u is None:
                monotone_u = u
            if outcome.passed or not ks_failure:  # another seed only helps against sampling error
                break
        findings.append(Finding(outcome.passed, outcome.message, "law"))
    # An inverse CDF is a deterministic, nondecreasing function of u.
    if monotone_u is None:
        findings.append(Finding(False, "not checked whether the output is nondecreasing in u (see above)", "monotone"))
    else:
        u = np.sort(monotone_u)
        first, exc1 = call(f, u, 0.0, 1.0)
        second, exc2 = call(f, u, 0.0, 1.0)
        a, c = as_floats(first), as_floats(second)
        if exc1 or exc2 or a is None or c is None or a.shape != u.shape or c.shape != u.shape:
            findings.append(Finding(False, "laplace_inverse_cdf(u) failed on sorted uniforms", "monotone"))
        elif not np.array_equal(a, c):
            findings.append(Finding(False, (
                "laplace_inverse_cdf gives different outputs for the same u: an inverse CDF is a function "
                "of u alone. Do you draw fresh random numbers inside instead of transforming u?"), "monotone"))
        elif (np.diff(a) < 0).any():
            findings.append(Finding(False, (
                "laplace_inverse_cdf is not nondecreasing in u, but an inverse CDF is (small u gives the "
                "left tail): check the sign in front of b and of u - 1/2."), "monotone"))
        elif not all(f.passed for f in findings):
            # A sampler of another law can be nondecreasing too: monotonicity earns its point only with the law.
            findings.append(Finding(False, "nondecreasing in u, as an inverse CDF must be, but that counts only for "
                                           "a sampler of the right law (see above)", "monotone"))
        else:
            findings.append(Finding(True, "nondecreasing in u, as an inverse CDF must be", "monotone"))
    return findings


def _law_case(f: Callable, seed: int, mu: float, b: float) -> tuple[Finding, NDArray[np.float64] | None, bool]:
    """One KS test: the finding, the uniforms if the output was a valid sample, whether it was a KS failure."""
    u = uniforms(seed, _SAMPLER_N)
    where = f"laplace_inverse_cdf(u, mu={mu:g}, b={b:g}) for u ~ U(0, 1)"
    value, exc = call(f, u, mu, b)
    if exc is not None:
        return Finding(False, f"{where} raised {describe(exc)}"), None, False
    x = as_floats(value)
    if x is None or x.shape != u.shape:
        return Finding(False, f"{where} returned {returned(value)}, not an array of the shape of u "
                              f"{u.shape}"), None, False
    nan = np.isnan(x)
    if nan.any():
        return Finding(False, (
            f"{where}: {100 * nan.mean():.0f}% of the outputs are NaN. A log of a negative number? "
            "Eq. 7/9 are meant for v ~ U(-1/2, 1/2) (Eq. 6); fed with u ~ U(0, 1) (Eq. 8) they break "
            "for u > 1/2 (DPText's bug, Theorem 3.1). With u ~ U(0, 1) use Eq. 4 or Eq. 5.")), None, False
    if not np.isfinite(x).all():
        return Finding(False, f"{where} returned infinite values for u strictly inside (0, 1)"), None, False
    if (x >= mu).all() and float(np.min(x)) - mu < 0.05 * b:
        return Finding(False, (
            f"{where}: your samples are never below mu = {mu:g} (never negative noise). Did you use "
            "Eq. 9 with u ~ U(0, 1)? That is DPText's sampler (Theorem 3.1); with u ~ U(0, 1) the "
            "inverse CDF is Eq. 4 (or Eq. 5), with u - 1/2 inside.")), None, False
    from scipy import stats

    p = stats.kstest(x, stats.laplace(loc=mu, scale=b).cdf).pvalue
    if p > KS_ALPHA:
        return Finding(True, f"{where} follows Lap({mu:g}, {b:g}) (KS p-value {p:.2g})"), u, False
    # Diagnostics only (the KS test decides): the sample median and the mean absolute deviation
    # from that median estimate mu and b with standard errors b / sqrt(N) (~1.4% of b at N = 5000),
    # so the 10% thresholds below are about 7 standard errors.
    med = float(np.median(x))
    mad = float(np.mean(np.abs(x - med)))  # about b around the median, wherever the samples are centred
    hints = []
    if abs(med - mu) > 0.1 * b and abs(med) <= 0.1 * b:
        hints.append(f"your samples are centred at 0, but Lap(mu, b) is centred at mu = {mu:g}: does your function "
                     "add mu?")
    elif abs(med - mu) > 0.1 * b:
        hints.append(f"the median of your samples is {med:.3g}, but Lap(mu, b) has median mu = {mu:g}: "
                     "check the sign in front of b and where mu enters")
    # A Laplace law's quartiles are its median -/+ b ln 2: a scale from them that disagrees with the mean
    # distance says the shape is wrong (a Cauchy, a Gaussian), not only the scale.
    q25, q75 = np.percentile(x, [25, 75])
    laplace_like = q75 > q25 and abs(mad * 2 * math.log(2) / (q75 - q25) - 1) <= 0.1
    if abs(mad / b - 1) > 0.1 and laplace_like:
        hints.append(f"your samples' mean distance from their median is {mad:.3g}, but for Lap(mu, b) it is b = {b:g}: "
                     "check how b multiplies the logarithm")
    if not hints or not laplace_like:
        hints.append("the shape is not Laplace: compare a histogram of your samples with laplace_pdf")
    return Finding(False, f"{where} does not follow Lap({mu:g}, {b:g}) (KS p-value {p:.1e}): "
                          + "; ".join(hints)), u, True


# The kinds of invalid input, each with one value for the feedback and another for grading.
_BAD_U = (
    ("u = 0", 0.0, 0.0),
    ("u = 1", 1.0, 1.0),
    ("u below 0", -0.25, -1e-9),
    ("u above 1", 1.5, 1.0 + 1e-12),
    ("u = nan", math.nan, math.nan),
    ("an array holding a 0", [0.3, 0.0, 0.7], [0.0, 0.9]),
    ("an array holding a 1", [0.2, 1.0], [0.6, 0.4, 1.0]),
    ("an array holding a nan", [0.5, math.nan], [math.nan, 0.1, 0.2]),
)
_BAD_B = (
    ("b = 0", 0.0, 0.0),
    ("b < 0", -1.0, -2.5),
    ("b = nan", math.nan, math.nan),
    ("b = inf", math.inf, math.inf),
)


def _sampler_domain(f: Callable, *, grading_seed: int | None = None) -> list[Finding]:
    findings: list[Finding] = []
    mu, b = (1.25, 2.0) if grading_seed is None else (1.75, 3.0)
    cases = []
    for kind, shown, secret in _BAD_U:
        u = secret if grading_seed is not None else shown
        u = np.array(u) if isinstance(u, list) else u
        cases.append((f"laplace_inverse_cdf with {kind} ({_show(u)})", (u, 0.0, 1.0), "u must lie in the open interval (0, 1)"))
    for kind, shown, secret in _BAD_B:
        bad_b = secret if grading_seed is not None else shown
        cases.append((f"laplace_inverse_cdf(0.3, b={bad_b:g}) ({kind})", (0.3, 0.0, bad_b),
                      "the scale b must be finite and > 0"))
    # Valid input must still work: u = 1/2 is the median.  All calls go in one batch.
    answers = call_many(f, [(args, {}) for _, args, _ in cases] + [((0.5, mu, b), {})])
    for (where, _, why), (value, exc) in zip(cases, answers):
        found = expect_value_error(where, value, exc, why)
        findings.append(Finding(found.passed, found.message, "bad_u" if why.startswith("u ") else "bad_b"))
    value, exc = answers[-1]
    x = as_floats(value)
    where = f"laplace_inverse_cdf(0.5, mu={mu:g}, b={b:g})"
    if exc is not None:
        findings.append(Finding(False, f"{where} raised {describe(exc)} on valid input", "valid_input"))
    elif x is None or x.size != 1 or not np.isclose(float(x.reshape(-1)[0]), mu, rtol=0, atol=1e-12):
        findings.append(Finding(False, f"{where} returned {short_repr(value)}, not the median mu = {mu:g}", "valid_input"))
    else:
        findings.append(Finding(True, "valid input still works (u = 1/2 gives mu)", "valid_input"))
    _flag_reference(cases, answers)
    return findings


def _flag_reference(cases: list, answers: list) -> None:
    """Flag (for a human, not a score) a sampler whose every refusal is word for word the one of
    dptutor's own inverse CDF: it most likely calls :func:`dptutor.distributions.laplace_ppf` (a
    correct Eq. 4/5 gives the same numbers, so the outputs cannot tell)."""
    if not grading():
        return
    same = 0
    for (_, args, _), (_, exc) in zip(cases, answers):
        ref_value, ref_exc = call(laplace_ppf, *args)
        if exc is None or ref_exc is None or type(exc).__name__ != type(ref_exc).__name__ or str(exc) != str(ref_exc):
            return
        same += 1
    if same:
        flag_for_review("laplace_inverse_cdf refuses every bad input with exactly the messages of "
                        "dptutor.distributions.laplace_ppf: does it call the package's inverse CDF instead of "
                        "implementing Eq. 5?")


def _show(u: Any) -> str:
    return f"u = {u!r}" if not isinstance(u, np.ndarray) else f"u = np.array({u.tolist()!r})"


def _sampler_vectorized(f: Callable, *, grading_seed: int | None = None) -> list[Finding]:
    rng = grading_rng(grading_seed)
    seeds = [98, 99, 100] if rng is None else [int(s) for s in rng.integers(0, 2**32, size=3)]
    findings = _shape_findings(f, uniforms(seeds[0], 12).reshape(3, 4), 0.75 if rng is None else 0.2)
    u_spy = uniforms(seeds[1], 1000)
    spy = spy_array(u_spy.copy())  # a function that writes into its input must not change u_spy
    spied, _ = call(f, spy, 0.0, 1.0)
    if spy.touched:
        findings.append(Finding(False, (
            "laplace_inverse_cdf visits u element by element in Python (a for loop, a comprehension, "
            "u[i] or tolist()): apply numpy's elementwise functions (np.log, np.abs, np.sign, "
            "np.where) to the whole array instead."), "loop"))
        return findings  # the timing below would take long and say the same
    findings.append(_speed_finding(f, u_spy, spied, np.random.default_rng(seeds[2])))
    return findings


def _shape_findings(f: Callable, u2: NDArray[np.float64], x0: float) -> list[Finding]:
    """Array in, array of the same shape out; a number in, a number out."""
    findings: list[Finding] = []
    value, exc = call(f, u2, 0.0, 1.0)
    if exc is not None:
        findings.append(Finding(False, f"laplace_inverse_cdf on a 3x4 array raised {describe(exc)}", "shape"))
    elif not isinstance(value, np.ndarray) or value.shape != (3, 4) or value.dtype.kind not in "iuf":
        findings.append(Finding(False, f"laplace_inverse_cdf on a 3x4 array returned {returned(value)}: array in, "
                                       "an array of the same shape out", "shape"))
    else:
        findings.append(Finding(True, "array in, array of the same shape out", "shape"))
    # "A number for a number": a Python float, a numpy scalar or a 0-d array in; anything with
    # np.ndim(...) == 0 out (a Python float, a numpy scalar or a 0-d array).
    for label, number in (("a Python float", x0), ("a numpy scalar", np.float64(x0)), ("a 0-d array", np.array(x0))):
        value, exc = call(f, number, 0.0, 1.0)
        out = as_floats(value) if exc is None and not isinstance(value, (bool, np.bool_)) else None
        if out is None or out.ndim != 0 or not np.isfinite(out) or np.ndim(value) != 0:
            what = describe(exc) if exc is not None else f"{short_repr(value, 60)} ({type(value).__name__})"
            findings.append(Finding(False, f"laplace_inverse_cdf({label} {x0:g}) should return a single number "
                                           f"(np.ndim(...) == 0), got {what}", "scalar"))
        else:
            findings.append(Finding(True, f"{label} in, a number out", "scalar"))
    return findings


def _speed_finding(f: Callable, u_spy: NDArray[np.float64], spied: Any, draw: np.random.Generator) -> Finding:
    """Fast on 10^6 uniforms, and the same values as for the 1000 uniforms ``u_spy`` (``spied``)."""
    # Timing: the student's function and dptutor's reference, each in the same harness (load the
    # input, call, save the output), on 10^6 uniforms, best of 3.  Every repeat gets fresh uniforms
    # (a memoising function gains nothing), with the 1000 uniforms above mixed in at random places:
    # the timed output must agree there with what the function returned for them (and everywhere
    # with the inverse CDF when those are right: _timed_values_agree).  When grading,
    # each repeat is a cell of its own, timed from outside the kernel, and the reference runs in the
    # grader's process.  A vectorised answer is within a small factor of the reference; a Python
    # loop (or np.vectorize) is 10-1000 times slower (see SAMPLER_TIMING_RATIO).
    inputs, places = _timed_inputs(u_spy, draw)
    results, t_f = measure(f, inputs, 0.0, 1.0, cap=SAMPLER_TIMING_CAP)
    t_ref = reference_seconds(laplace_ppf, inputs, 0.0, 1.0, repeats=SAMPLER_REFERENCE_REPEATS)
    exc = next((e for _, e in results if e is not None), None)
    if exc is None and SAMPLER_TIMING_RATIO * t_ref < t_f < SAMPLER_TIMING_CAP:
        # Slow but under the cap: a busy grading machine can slow one series of one side, so before failing
        # time both again, on fresh uniforms, and keep each side's best (a loop stays 10-1000 times slower).
        # A repeat over twice the passing time cannot pass, so the second series stops there: a function
        # that sleeps just under the cap costs the grader no second series.
        more, more_places = _timed_inputs(u_spy, draw)
        again, t_again = measure(f, more, 0.0, 1.0, cap=min(SAMPLER_TIMING_CAP, 2 * SAMPLER_TIMING_RATIO * t_ref))
        t_f, t_ref = min(t_f, t_again), min(t_ref, reference_seconds(laplace_ppf, more, 0.0, 1.0,
                                                                        repeats=SAMPLER_REFERENCE_REPEATS))
        results, inputs, places = results + again, inputs + more, places + more_places
        exc = next((e for _, e in again if e is not None), None)
    if exc is not None:
        return Finding(False, f"laplace_inverse_cdf on many uniforms raised {describe(exc)}", "speed")
    if not t_f <= SAMPLER_TIMING_RATIO * t_ref:
        slow = f"more than {SAMPLER_TIMING_CAP:g} s" if t_f >= SAMPLER_TIMING_CAP else f"about {t_f:.3g} s"
        return Finding(False, (
            f"laplace_inverse_cdf takes {slow} for 10^6 uniforms, {t_f / t_ref:.0f} times the reference "
            f"({t_ref:.2g} s): is there a Python loop or np.vectorize inside? Use whole-array numpy operations."),
            "speed")
    if not _timed_values_agree(results, inputs, places, u_spy, spied):
        return Finding(False, "laplace_inverse_cdf on 10^6 uniforms did not return the values it "
                              "returns for the same uniforms in a smaller array", "speed")
    return Finding(True, f"fast on 10^6 uniforms ({t_f / t_ref:.1f} x the reference)", "speed")


def _timed_inputs(u_spy: NDArray[np.float64], draw: np.random.Generator) -> tuple[list, list]:
    """Three fresh arrays of SAMPLER_TIMING_SIZE uniforms with ``u_spy`` mixed in at random places, and the places."""
    inputs, places = [], []
    for _ in range(3):
        u = uniforms(int(draw.integers(2**62)), SAMPLER_TIMING_SIZE)
        where = np.sort(draw.choice(SAMPLER_TIMING_SIZE, size=u_spy.size, replace=False))
        u[where] = u_spy
        inputs.append(u)
        places.append(where)
    return inputs, places


def _timed_values_agree(results: list, inputs: list[NDArray[np.float64]], places: list[NDArray[np.int64]],
                        u_spy: NDArray[np.float64], spied: Any) -> bool:
    """Whether the timed outputs are the values the function computes: where the 1000 uniforms ``u_spy``
    were mixed in, what it returned for them (``spied``); and everywhere, when those 1000 values are
    the inverse CDF's (every correct inverse CDF maps u to the same x, up to rounding), the inverse
    CDF of every timed uniform, so that no output seen before can be replayed fast in place of work."""
    y = as_floats(spied)
    agree = y is not None and y.shape == u_spy.shape and len(results) == len(inputs)
    exact = agree and np.allclose(y, laplace_ppf(u_spy, 0.0, 1.0), rtol=1e-9, atol=1e-12)
    for (value, _), u, where in zip(results, inputs, places):
        x = as_floats(value)
        agree = agree and x is not None and x.shape == (SAMPLER_TIMING_SIZE,) and np.allclose(
            x[where], y, rtol=1e-12, atol=1e-12, equal_nan=True)
        agree = agree and (not exact or np.allclose(x, laplace_ppf(u, 0.0, 1.0), rtol=1e-9, atol=1e-12))
    return bool(agree)


ASSIGNMENT = Assignment("sampler", "Inverse-CDF Laplace sampling", "sampler.md", (
    Question("q1", "law of the samples", 2.0, ("laplace_inverse_cdf",), _sampler_law, ("law", "monotone")),
    Question("q2", "domain checks", 1.0, ("laplace_inverse_cdf",), _sampler_domain, ("bad_u", "bad_b", "valid_input")),
    Question("q3", "vectorisation", 1.0, ("laplace_inverse_cdf",), _sampler_vectorized, ("shape", "scalar", "loop", "speed")),
), independent="its three questions check properties of one function, laplace_inverse_cdf, and none of them "
                "uses the answer to another")
