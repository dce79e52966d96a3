"""Assignment ``mechanism``: a vector Laplace mechanism for the mean of m records in [0, 1]^k.

Questions: the l1 sensitivity ``mean_sensitivity(m, k)`` (k/m), the law of the noise that
``private_mean(X, epsilon, rng=rng)`` adds (KS tests against Lap(0, k/(m epsilon))), and its
interface (shape, input left unchanged, reproducible from ``rng``, ``ValueError`` outside the proof).

Error carried forward (``carry_forward = true`` in the grading configuration): question 2 also reads
the student's ``mean_sensitivity``: noise that fails against the right law passes when it follows
``Lap(0, Delta_s / epsilon)``, where ``Delta_s = mean_sensitivity(m, k)`` is the student's own
sensitivity for that case (when it is a finite positive number and one consistent error: see
``_carried_sensitivities``), so a wrong sensitivity costs
question 1 only, and a right mechanism still passes whatever question 1 returns.  Question 3 does not depend on the
sensitivity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor.distributions import standard_laplace_fill
from dptutor.assignments.feedback import (KS_ALPHA, UNSCORED, Assignment, Finding, Question, as_floats, call, describe,
                                      expect_value_error, grading_rng, returned, short_repr)
from dptutor.assignments.record import call_many, flag_for_review, grading

__all__ = ["ASSIGNMENT", "NOISE_CALLS", "SENSITIVITY_CHECKS", "NOISE_CHECKS", "INTERFACE_CHECKS"]

#: The checks of each question, in the order of its findings (what ``[weights.qN]`` can weigh).
SENSITIVITY_CHECKS = ("one_record", "one_coordinate", "random_sizes")
NOISE_CHECKS = ("one_call", "across_calls")
INTERFACE_CHECKS = ("shape", "unchanged", "rng", "epsilon_zero", "epsilon_negative", "epsilon_nan", "epsilon_inf",
                    "above_one", "below_zero", "nan_record", "one_dimensional", "empty")


def _sensitivity_cases(grading_seed: int | None) -> list[tuple[int, int]]:
    rng = grading_rng(grading_seed)
    if rng is None:
        return [(1, 4), (10, 1), (100, 3), (50, 20)]
    # One record, one coordinate, and random sizes: m in [2, 2000], k in [2, 64].
    return [(1, int(rng.integers(2, 65))), (int(rng.integers(2, 2001)), 1),
            *((int(rng.integers(2, 2001)), int(rng.integers(2, 65))) for _ in range(2))]


def _mechanism_sensitivity(f: Callable, *, grading_seed: int | None = None) -> list[Finding]:
    cases = _sensitivity_cases(grading_seed)
    findings = []
    for (m, k), name in zip(cases, (*SENSITIVITY_CHECKS, SENSITIVITY_CHECKS[-1])):
        value, exc = call(f, m, k)
        want = k / m
        if exc is not None:
            findings.append(Finding(False, f"mean_sensitivity({m}, {k}) raised {describe(exc)}", name))
            continue
        got = as_floats(value)
        if got is None or got.size != 1:
            findings.append(Finding(False, f"mean_sensitivity({m}, {k}) returned {short_repr(value)}, not a number", name))
            continue
        got_f = float(got.reshape(-1)[0])
        if math.isclose(got_f, want, rel_tol=1e-9):
            findings.append(Finding(True, f"mean_sensitivity({m}, {k}) = {want:g}", name))
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
        findings.append(Finding(False, f"mean_sensitivity({m}, {k}) returned {got_f:g}: {reason}", name))
    return findings


#: Calls per case of the per-coordinate noise test.
NOISE_CALLS = 800


def _noise_cases(grading_seed: int | None) -> list[tuple[int, int, float, int, int]]:
    """``(m, k, epsilon, calls, seed)``: one call with many coordinates (the noise's scale within a
    call), and many calls with a few coordinates (each coordinate's own law, across calls).  Grading
    draws the sizes and seeds fresh, so no shape or value marks a grading call."""
    rng = grading_rng(grading_seed)
    if rng is None:
        return [(40, 1000, 0.5, 1, 400), (200, 3, 2.0, NOISE_CALLS, 410)]
    eps = (0.5, 1.5, 2.0)  # never 1, where Delta * epsilon, Delta / epsilon**2 and Delta / epsilon agree
    return [(int(rng.integers(20, 61)), int(rng.integers(500, 1001)), float(eps[int(rng.integers(3))]), 1,
             int(rng.integers(2**62))),
            (int(rng.integers(50, 301)), int(rng.integers(3, 7)), float(eps[int(rng.integers(3))]), NOISE_CALLS,
             int(rng.integers(2**62)))]


def _case_calls(case: tuple[int, int, float, int, int], rep: int) -> tuple[list, list[np.ndarray], list[int]]:
    """The calls of one case: a fresh dataset and a fresh generator for every call."""
    m, k, eps, calls, seed = case
    seeds = np.random.SeedSequence([seed, rep]).generate_state(2 * calls, dtype=np.uint64).tolist()
    datasets = [np.random.default_rng(seeds[2 * i]).random((m, k)) for i in range(calls)]
    rng_seeds = [int(s) for s in seeds[1::2]]
    return ([((X.copy(), eps), {"rng": np.random.default_rng(s)}) for X, s in zip(datasets, rng_seeds)],
            datasets, rng_seeds)


#: Sizes (m, k) at which error carried forward also asks the student's sensitivity, drawn like question 1's
#: random sizes and like question 2's datasets (m, k >= 2 and k != m: every usual slip is wrong there).
_CARRY_PROBES = 6


def _carried_sensitivities(carried: dict[str, Any] | None, cases: list[tuple[int, int, float, int, int]]) -> list[float | None]:
    """Error carried forward: the student's own ``mean_sensitivity(m, k)`` for each case, where it is a
    finite positive number that differs from k/m (None: judge the case with the right sensitivity).

    It is carried only when it is one consistent error: asked in one shuffled batch, twice at each case
    and at :data:`_CARRY_PROBES` other sizes drawn like question 1's, it gives the same answer each time
    and is wrong at every probe (a sensitivity right at some sizes and wrong at the datasets of
    question 2 would let question 1 pass and question 2 pass with the wrong noise).
    """
    sensitivity = (carried or {}).get("mean_sensitivity")
    if sensitivity is None:
        return [None] * len(cases)
    rng = np.random.default_rng([c[4] for c in cases] + [1])
    probes = []
    while len(probes) < _CARRY_PROBES:
        m, k = int(rng.integers(2, 2001)), int(rng.integers(2, 65 if len(probes) % 2 else 1001))
        if k != m:
            probes.append((m, k))
    sizes = [(m, k) for m, k, *_ in cases] * 2 + probes
    order = rng.permutation(len(sizes))
    answers = call_many(sensitivity, [(sizes[i], {}) for i in order])
    got: list[float | None] = [None] * len(sizes)
    for position, i in enumerate(order):
        value, exc = answers[position]
        x = as_floats(value) if exc is None else None
        m, k = sizes[i]
        if x is not None and x.size == 1 and math.isfinite(float(x.reshape(-1)[0])) and \
                0 < float(x.reshape(-1)[0]) < 1e12 * k / m:
            got[i] = float(x.reshape(-1)[0])
    n = len(cases)
    wrong = [v is not None and not math.isclose(v, k / m, rel_tol=1e-9) for v, (m, k) in zip(got, sizes)]
    out = [got[i] if wrong[i] and got[i] == got[i + n] else None for i in range(n)]
    if any(v is not None for v in out) and not all(wrong[2 * n:]):
        flag_for_review("mean_sensitivity is k/m at some sizes and not at question 2's datasets (or not the same "
                        "twice): error carried forward was not applied; compare question 1 with its noise")
        return [None] * n
    return out


def _mechanism_noise(f: Callable, *, grading_seed: int | None = None, carried: dict[str, Any] | None = None) -> list[Finding]:
    """The noise (output minus the true mean) against Lap(0, k / (m epsilon)); with error carried
    forward (``carried`` holds the student's ``mean_sensitivity``) a case that fails there passes
    when its noise follows Lap(0, Delta_s / epsilon) with the student's own sensitivity Delta_s.

    A case with one call tests the pooled coordinates of that call (KS).  A case with many calls
    tests every coordinate on its own across calls (KS), all coordinates pooled (KS), every pair
    of coordinates for independence (Kendall's tau) and the sum of each call's
    noise against sums of k independent Laplace draws (its spread, Levene's test), with a Bonferroni level
    ``KS_ALPHA / (k + 2 + k (k - 1) / 2)`` for each of these tests, so noise that is Laplace only when
    pooled (stratified, or shared between coordinates) fails.  Each case is run with two independent draws and passes if either passes:
    a correct mechanism fails with probability at most ``KS_ALPHA**2 = 1e-6``.  All calls of a draw
    go to the student's function in one shuffled batch.
    """
    cases = _noise_cases(grading_seed)
    deltas = _carried_sensitivities(carried, cases)
    carried_pass = [False] * len(cases)  # passed only against the student's own sensitivity
    outcomes: dict[int, list[Finding]] = {i: [] for i in range(len(cases))}
    todo = list(range(len(cases)))
    order_rng = np.random.default_rng([c[4] for c in cases])
    for rep in range(2):
        batch, where = [], []
        built = {}
        for i in todo:
            calls, datasets, seeds = _case_calls(cases[i], rep)
            built[i] = (datasets, seeds)
            batch += calls
            where += [(i, j) for j in range(len(calls))]
        order = order_rng.permutation(len(batch))
        answers = call_many(f, [batch[j] for j in order])
        results: dict[int, list[Any]] = {i: [None] * cases[i][3] for i in todo}
        for position, j in enumerate(order):
            i, index = where[j]
            results[i][index] = answers[position]
        for i in todo:
            outcome = _judge_case(cases[i], results[i], *built[i])
            if not outcome.passed and deltas[i] is not None:
                carried_outcome = _judge_case(cases[i], results[i], *built[i], delta=deltas[i])
                if carried_outcome.passed:
                    outcome, carried_pass[i] = carried_outcome, True
            outcomes[i].append(outcome)
        todo = [i for i in todo if not outcomes[i][-1].passed and outcomes[i][-1].message.startswith("KS:")]
        if not todo:
            break
    findings = []
    for i, name in zip(range(len(cases)), NOISE_CHECKS):
        best = next((o for o in outcomes[i] if o.passed), outcomes[i][-1])
        message = best.message.removeprefix("KS:")
        if best.passed and carried_pass[i]:
            m, k, eps = cases[i][:3]
            message += (f" [error carried forward: judged with your own sensitivity mean_sensitivity({m}, {k}) = "
                        f"{deltas[i]:.6g}, so b = {deltas[i] / eps:.6g}; question 1 grades the sensitivity]")
        findings.append(Finding(best.passed, message, name))
    if findings[0].passed and not findings[1].passed:
        # Noise that is Laplace only when pooled (stratified, or coordinates that share their noise)
        # protects nobody: the pooled test's pass does not count then.
        findings[0] = Finding(False, "the noise of one call passed its test, but that pass does not count while "
                                     "the test across calls (below) fails: see what that test found", NOISE_CHECKS[0])
    if any(f.passed and used for f, used in zip(findings, carried_pass)):
        flag_for_review("question 2 passed with error carried forward (the noise follows the student's own "
                        "mean_sensitivity, not k/m): question 1 should have lost points for it")
        # Said where every report shows it (the scores CSV and the feedback list failed findings only).
        findings.append(Finding(False, "note (not scored): error carried forward: question 2 was judged with "
                                       "your own mean_sensitivity, which question 1 grades", UNSCORED))
    return findings


def _judge_case(case: tuple[int, int, float, int, int], answers: list[Any], datasets: list[np.ndarray],
                seeds: list[int], delta: float | None = None) -> Finding:
    """One case's finding, against the sensitivity ``delta`` (None: the right one, k/m); a message
    starting with ``KS:`` is a statistical failure (worth a retry)."""
    m, k, eps, calls, _ = case
    b = (k / m if delta is None else delta) / eps
    where = f"private_mean(X, epsilon={eps:g}) with X of shape ({m}, {k})"
    rows = []
    for (value, exc), X in zip(answers, datasets):
        if exc is not None:
            return Finding(False, f"{where} raised {describe(exc)}")
        out = as_floats(value)
        if out is None or out.shape != (k,):
            got = f"an array of shape {out.shape}" if out is not None else returned(value)
            return Finding(False, f"{where} returned {got}, expected shape ({k},): "
                                  "one noisy value per coordinate of the mean")
        rows.append(out - X.mean(axis=0))
    noise = np.array(rows)
    if not np.isfinite(noise).all():
        return Finding(False, f"{where} returned NaN or infinite values")
    if np.all(np.abs(noise) < 1e-12 * max(1.0, b)):
        return Finding(False, f"{where} returned the exact mean: no noise was added")
    if k > 1 and np.all(np.ptp(noise, axis=1) == 0):
        return Finding(False, (
            f"{where}: every coordinate got the same noise value; the Laplace mechanism (Eq. 2-3) "
            "adds an independent Lap(0, b) draw to each coordinate (size=k)."))
    _flag_reference(noise, b, k, seeds)
    from scipy import stats

    law = stats.laplace(loc=0.0, scale=b)
    if calls == 1:
        p = stats.kstest(noise.ravel(), law.cdf).pvalue
        if p > KS_ALPHA:
            return Finding(True, f"{where}: the noise follows the Laplace law with the scale that matches the "
                                 f"sensitivity (KS p-value {p:.2g})")
        return Finding(False, "KS:" + _noise_diagnosis(noise.ravel(), m, k, eps, p, where, b))
    level = KS_ALPHA / (k + 2 + k * (k - 1) // 2)  # Bonferroni over every test below
    p_coord = [stats.kstest(noise[:, j], law.cdf).pvalue for j in range(k)]
    worst = int(np.argmin(p_coord))
    if p_coord[worst] <= level:
        return Finding(False, "KS:" + _noise_diagnosis(noise[:, worst], m, k, eps, p_coord[worst], where, b).replace(
            "the noise does not follow", f"across {calls} calls, the noise of coordinate {worst} does not follow", 1))
    # The law of all coordinates pooled (k times the draws of one coordinate): a wrong shape (Gaussian noise
    # of a close spread, say) shows here before it shows in the sum of the coordinates below.
    p_pool = stats.kstest(noise.ravel(), law.cdf).pvalue
    if p_pool <= level:
        return Finding(False, "KS:" + _noise_diagnosis(noise.ravel(), m, k, eps, p_pool, where, b).replace(
            "the noise does not follow", f"across {calls} calls, the noise does not follow", 1))
    # Independence: Kendall's tau for every pair of coordinates, and the sum of one call's noise over
    # its coordinates against sums of k independent draws.
    for j in range(k):
        for l in range(j + 1, k):
            tau = stats.kendalltau(noise[:, j], noise[:, l])
            if tau.pvalue <= level:
                return Finding(False, (
                    f"KS:{where}: the noise of coordinates {j} and {l} is not independent across calls (Kendall's "
                    f"tau {tau.statistic:.2f}, p-value {tau.pvalue:.1e}). Draw every coordinate's noise independently."))
    reference = law.rvs(size=(10 * calls, k), random_state=np.random.default_rng(seeds[0])).sum(axis=1)
    p_sum = stats.levene(noise.sum(axis=1), reference).pvalue
    if p_sum <= level:
        return Finding(False, (
            f"KS:{where}: each coordinate's noise looks right on its own, but the coordinates are not independent: "
            f"the sum of one call's noise does not spread like a sum of {k} independent Laplace draws (Levene's "
            f"test, p-value {p_sum:.1e}). Draw every coordinate's noise independently (size=k)."))
    return Finding(True, f"{where}: each coordinate's noise follows the Laplace law with the scale that matches "
                         f"the sensitivity, independently ({calls} calls; smallest KS p-value {p_coord[worst]:.2g})")


def _flag_reference(noise: NDArray[np.float64], b: float, k: int, seeds: list[int]) -> None:
    """Flag (for a human, not a score) noise that is exactly what dptutor's own Laplace samplers draw
    from the same generator: the question asks the student to write the mechanism."""
    if not grading():
        return
    # numpy's rng.laplace is Eq. 4 on rng.random(), draw for draw the stream of dptutor's inverse-CDF
    # sampler: only the fast sampler (exponential and a random sign bit) is distinguishable.
    fast = [b * standard_laplace_fill(np.empty(k), rng=np.random.default_rng(s)) for s in seeds]
    if all(np.allclose(row, ref, rtol=1e-9, atol=1e-12 * b) for row, ref in zip(noise, fast)):
        flag_for_review("private_mean's noise is exactly what dptutor's own Laplace sampler (add_laplace_noise, "
                        "laplace_mechanism, sample_laplace(method='fast')) draws from the same generator: does it "
                        "call the package instead of drawing the noise itself?")


def _noise_diagnosis(noise: NDArray[np.float64], m: int, k: int, eps: float, p: float, where: str,
                     b: float) -> str:
    # mean |noise| is the maximum-likelihood estimate of a centred Laplace scale; its standard error
    # is b / sqrt(N) (3% of b at N = 1000), so matching a candidate within 15% is 5 standard errors.
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
    # Excess kurtosis: 3 for any Laplace law, 0 for a Gaussian; its standard error is about
    # sqrt(24 / N) for a Gaussian (0.15 at N = 1000), so below 1.5 is far from Laplace.
    z = noise - float(np.mean(noise))
    kurtosis = float(np.mean(z**4) / np.mean(z**2) ** 2 - 3.0) if np.any(z) else 0.0
    if noise.size >= 200 and kurtosis < 1.5:
        return text + (f". Its tails are lighter than Laplace's (excess kurtosis {kurtosis:.2g}; a Laplace law has 3, "
                       "a Gaussian 0): is it Gaussian noise? The Laplace mechanism (Eq. 2) draws Laplace noise "
                       "(rng.laplace).")
    return text + ". Check your sensitivity (question 1) and how b follows from it and epsilon (Eq. 3)."


def _unchanged_finding(untouched: np.ndarray, data: np.ndarray, answer: tuple[Any, BaseException | None]) -> Finding:
    """Whether private_mean left ``untouched`` (a copy of ``data``) unchanged; credited only when that call
    (``answer``) returned a finite real vector of one value per column (no credit for a call that failed)."""
    if not np.array_equal(untouched, data):
        return Finding(False, "private_mean modified its input X in place: compute on a copy")
    value, exc = answer
    out = as_floats(value) if exc is None and not isinstance(value, (bool, np.bool_)) else None
    if out is None or out.shape != (data.shape[1],) or not np.isfinite(out).all():
        return Finding(False, "not checked whether private_mean leaves X unchanged: it failed on a valid dataset "
                              "(see above)")
    return Finding(True, "leaves X unchanged")


def _mechanism_interface(f: Callable, *, grading_seed: int | None = None) -> list[Finding]:
    findings = []
    rng_grading = grading_rng(grading_seed)
    seed = 16 if rng_grading is None else int(rng_grading.integers(0, 2**32))
    data = np.random.default_rng(seed).random((30, 4))
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
    # Every call in one batch: two shapes, X left unchanged, the same seed twice and another seed,
    # then the inputs outside the proof.
    untouched = data.copy()
    batch = [((data.copy(), 1.0), {"rng": np.random.default_rng(0)}),
             ((data[:, :1].copy(), 1.0), {"rng": np.random.default_rng(0)}),
             ((untouched, 1.0), {"rng": np.random.default_rng(1)})]
    batch += [((data.copy(), 1.0), {"rng": np.random.default_rng(s)}) for s in (seed + 5, seed + 5, seed + 6)]
    bad = [secret if grading_seed is not None else shown for _, shown, secret in kinds]
    batch += [((np.array(X, copy=True), eps), {"rng": np.random.default_rng(seed + 2)}) for X, eps in bad]
    answers = call_many(f, batch)
    # shapes
    for (value, exc), X in zip(answers[:2], (data, data[:, :1])):
        if exc is not None or getattr(value, "shape", None) != (X.shape[1],):
            got = describe(exc) if exc is not None else returned(value)
            findings.append(Finding(False, f"private_mean(X of shape {X.shape}) should return an array of shape "
                                           f"({X.shape[1]},), got {got}"))
            break
    else:
        findings.append(Finding(True, "returns one value per coordinate, shape (k,)"))
    findings.append(_unchanged_finding(untouched, data, answers[2]))
    # reproducible with the rng it is given
    calls = answers[3:6]
    a, b, c = (as_floats(value) for value, _ in calls)
    if any(exc is not None for _, exc in calls) or a is None or b is None or c is None:
        findings.append(Finding(False, "private_mean failed on a valid dataset"))
    elif a.shape != b.shape or not np.array_equal(a, b):
        findings.append(Finding(False, "two calls with the same seed gave different outputs: draw the noise "
                                       "from the rng argument (rng.laplace or rng.random), not np.random"))
    elif a.shape == c.shape and np.array_equal(a, c):
        findings.append(Finding(False, "two different seeds gave the same output: is any noise drawn from rng?"))
    else:
        findings.append(Finding(True, "uses the rng it is given (reproducible)"))
    for (label, _, _), (value, exc) in zip(kinds, answers[6:]):
        findings.append(expect_value_error(f"private_mean with {label}", value, exc,
                                           "the proof only covers records in [0, 1]^k, X of shape (m, k) with "
                                           "m >= 1, and a finite epsilon > 0"))
    # One finding per check, in the order of INTERFACE_CHECKS (the kinds of bad input follow the first three).
    assert len(findings) == len(INTERFACE_CHECKS) and [k[0] for k in kinds] == [
        "epsilon = 0", "epsilon < 0", "epsilon = nan", "epsilon = inf", "a value above 1", "a value below 0",
        "a nan record", "a 1-D X", "an empty dataset (m = 0)"]
    return [Finding(f.passed, f.message, name) for f, name in zip(findings, INTERFACE_CHECKS)]


ASSIGNMENT = Assignment("mechanism", "A Laplace mechanism for a mean", "mechanism.md", (
    Question("q1", "sensitivity of the mean", 1.0, ("mean_sensitivity",), _mechanism_sensitivity, SENSITIVITY_CHECKS),
    Question("q2", "law of the noise", 2.0, ("private_mean",), _mechanism_noise, NOISE_CHECKS,
             carried=("mean_sensitivity",)),
    Question("q3", "shapes and input checks", 1.0, ("private_mean",), _mechanism_interface, INTERFACE_CHECKS),
), independent="")
