"""The ``selection`` assignment: AboveThreshold and report-noisy-max, their law tests and their audits.

Every variant is graded once (module-scoped fixtures, fixed grading seeds); the tests read the feedback.
The design's sample sizes are checked from the exact laws: each bug is flagged at the 1e-5 quantiles of
its counts, and a correct implementation's loss on the audited pair is below the claim.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dptutor.assignments import ASSIGNMENTS, check
from dptutor.assignments.encoding import MAX_ARRAY_ELEMENTS
from dptutor.course.remote import grade_in_process
from dptutor.assignments.selection import (AT_EPSILON, AT_TRIALS, AUDIT_CONFIDENCE, RNM_EPSILON, RNM_TRIALS,
                                       above_threshold_law, audit_pairs)
from dptutor.selection import above_threshold_probabilities, report_noisy_max_probabilities
from test_grading import INSTRUCTOR_DIR, run_notebook_code

GRADING_SEED = 20230917  # one fixed grading draw: every variant is graded on the same inputs


def _rows(above: np.ndarray) -> np.ndarray:
    m = above.shape[1]
    first = np.where(above.any(axis=1), np.argmax(above, axis=1), m)[:, None]
    column = np.arange(m)
    return np.where(column < first, 0, np.where(column == first, 1, -1))


def _at(rho_scale: float, nu_scale: float, *, shared: bool = False):
    """AboveThreshold with the given noise scales (in units of 1/epsilon); rho_scale 0: no threshold noise."""
    def above_threshold(answers, threshold, epsilon, *, size, rng):
        q = np.asarray(answers, dtype=float)
        rho = rng.laplace(0.0, rho_scale / epsilon, size=(size, 1)) if rho_scale else 0.0
        nu = rng.laplace(0.0, nu_scale / epsilon, size=(size, 1 if shared else q.size))
        return _rows(q + nu >= threshold + rho)
    return above_threshold


def _rnm(scale: float, *, value: bool = False):
    def report_noisy_max(answers, epsilon, *, size, rng):
        noisy = np.asarray(answers, dtype=float) + rng.laplace(0.0, scale / epsilon, size=(size, len(answers)))
        return noisy.max(axis=1) if value else np.argmax(noisy, axis=1)
    return report_noisy_max


def _stub(*args, **kwargs):
    raise NotImplementedError("Question 1")


AT_BUGS = {
    "no threshold noise": (_at(0.0, 4.0), "no threshold noise"),
    "shared query noise": (_at(2.0, 4.0, shared=True), "one query noise shared by all the queries"),
    "Laplace-mechanism scale": (_at(1.0, 1.0), "the Laplace mechanism's scale"),
    "half the noise": (_at(1.0, 2.0), "half the noise"),
}


@pytest.fixture(scope="module")
def reference() -> dict:
    return run_notebook_code(INSTRUCTOR_DIR / "selection.md", feedback_cells=False)


def _grade(ns: dict) -> dict:
    return {q.name: check("selection", q.name, *(ns[n] for n in q.needs), grading_seed=GRADING_SEED)
            for q in ASSIGNMENTS["selection"].questions}


@pytest.fixture(scope="module")
def graded(reference: dict) -> dict:
    variants = {"reference": reference, "blank": {"above_threshold": _stub, "report_noisy_max": _stub}}
    for name, (fn, _) in AT_BUGS.items():
        variants[name] = {"above_threshold": fn, "report_noisy_max": reference["report_noisy_max"]}
    variants["RNM scale Delta/epsilon"] = {"above_threshold": reference["above_threshold"], "report_noisy_max": _rnm(1.0)}
    variants["RNM value"] = {"above_threshold": reference["above_threshold"], "report_noisy_max": _rnm(2.0, value=True)}
    return {name: _grade(ns) for name, ns in variants.items()}


def test_reference_gets_full_marks_and_a_blank_gets_zero(graded: dict) -> None:
    points = {q.name: q.points for q in ASSIGNMENTS["selection"].questions}
    assert {q: fb.score for q, fb in graded["reference"].items()} == points, [
        fb.report() for fb in graded["reference"].values()]
    for q, fb in graded["blank"].items():
        assert fb.score == 0 and fb.status == "not implemented", fb.report()


@pytest.mark.parametrize("bug", sorted(AT_BUGS))
def test_each_above_threshold_bug_fails_the_law_and_is_flagged_by_the_audit(graded: dict, bug: str) -> None:
    fbs = graded[bug]
    law = [f for f in fbs["q1"].findings if "exact law" in f.message or "algorithm's law" in f.message]
    assert len(law) == 1 and law[0].passed is False, fbs["q1"].report()
    assert fbs["q1"].score < 2
    audit = fbs["q2"]
    assert audit.score == 0, audit.report()
    text = " ".join(audit.messages)
    pct = f"{100 * AUDIT_CONFIDENCE:g}%"
    bound = float(text.split("a lower bound of ")[1].split(" ")[0])
    assert bound > AT_EPSILON, text
    assert pct in text and f"not {AT_EPSILON:g}-DP" in text, text
    assert AT_BUGS[bug][1] in text, text  # the diagnosis names the bug
    assert "step 4" in text and "step 3" in text, text
    # report-noisy-max is the reference's: untouched
    assert fbs["q3"].score == 2, fbs["q3"].report()


def test_report_noisy_max_bugs(graded: dict) -> None:
    scale = graded["RNM scale Delta/epsilon"]["q3"]
    assert [f.passed for f in scale.findings] == [True, False, False], scale.report()
    text = scale.findings[2].message
    assert f"{100 * AUDIT_CONFIDENCE:g}%" in text and float(text.split("a lower bound of ")[1].split(" ")[0]) > RNM_EPSILON
    assert "2 Delta/epsilon" in text
    value = graded["RNM value"]["q3"]
    assert value.score == 0 and "index" in value.messages[0] and "value is not private" in value.messages[0], value.report()
    for name in ("RNM scale Delta/epsilon", "RNM value"):
        assert graded[name]["q1"].score == graded[name]["q2"].score == 2


def test_malformed_outputs_get_a_message_not_a_crash() -> None:
    def no_stop(answers, threshold, epsilon, *, size, rng):  # answers every query: no -1 after the first 1
        q = np.asarray(answers, dtype=float)
        return (q + rng.laplace(0.0, 4 / epsilon, (size, q.size)) >= threshold + rng.laplace(0.0, 2 / epsilon, (size, 1))).astype(int)

    cases = {
        "stops at the first": no_stop,
        "expected (": lambda answers, threshold, epsilon, *, size, rng: np.zeros((size, len(answers) + 1), int),
        "0 (below), 1 (above) and -1": lambda answers, threshold, epsilon, *, size, rng: np.full((size, len(answers)), 2),
        "the integers 0, 1 and -1": lambda answers, threshold, epsilon, *, size, rng: np.full((size, len(answers)), np.nan),
        "not an array": lambda answers, threshold, epsilon, *, size, rng: "above",
        "raised ZeroDivisionError": lambda answers, threshold, epsilon, *, size, rng: 1 / 0,
    }
    for expected, fn in cases.items():
        for q in ("q1", "q2"):
            fb = check("selection", q, fn)
            assert fb.score == 0 and fb.status == "graded", fb.report()
            assert expected in fb.messages[0], (expected, fb.report())


def test_a_mechanism_that_ignores_its_answers_is_not_credited_for_privacy() -> None:
    def never_above(answers, threshold, epsilon, *, size, rng):
        rng.laplace(size=size)
        return np.zeros((size, len(answers)), dtype=int)

    q1, q2 = check("selection", "q1", never_above), check("selection", "q2", never_above)
    assert q1.score < 2 and q2.score == 0, (q1.report(), q2.report())
    assert "ignores its answers" in q2.messages[0]


def test_randomness_must_come_from_rng(reference: dict) -> None:
    correct = reference["above_threshold"]
    own = np.random.default_rng(0)

    def global_noise(answers, threshold, epsilon, *, size, rng):
        return correct(answers, threshold, epsilon, size=size, rng=own)

    fb = check("selection", "q1", global_noise)
    assert fb.findings[-1].passed is False and "same seed" in fb.findings[-1].message, fb.report()


# ---------------------------------------------------------------------------------------------
# the design: exact laws, and sample sizes derived from them
# ---------------------------------------------------------------------------------------------


def test_exact_law_of_the_correct_algorithm_matches_the_books() -> None:
    for answers, tau, eps in (((0.0,) * 7 + (1.0,), 0.5, 2.0), ((-1.0, 0.5, 0.0, 2.0), 1.0, 1.0), ((3.0,), -2.0, 0.5)):
        ours = above_threshold_law(answers, tau, rho_scale=2 / eps, nu_scale=4 / eps)
        assert np.abs(ours - above_threshold_probabilities(answers, tau, eps)).max() < 1e-10


@pytest.mark.parametrize("bug", sorted(AT_BUGS))
def test_exact_laws_of_the_bugs_match_their_samples(bug: str) -> None:
    fn = AT_BUGS[bug][0]
    answers, tau, eps, n = np.array([0.0, 1.5, -0.5, 1.0]), 0.7, 1.0, 200_000
    kw = {"no threshold noise": dict(rho_scale=0.0, nu_scale=4.0),
          "shared query noise": dict(rho_scale=2.0, nu_scale=4.0, shared_noise=True),
          "Laplace-mechanism scale": dict(rho_scale=1.0, nu_scale=1.0),
          "half the noise": dict(rho_scale=1.0, nu_scale=2.0)}[bug]
    law = above_threshold_law(answers, tau, **kw)
    rows = fn(answers, tau, eps, size=n, rng=np.random.default_rng(91))
    index = np.where((rows == 1).any(axis=1), np.argmax(rows == 1, axis=1), answers.size)
    freq = np.bincount(index, minlength=answers.size + 1) / n
    se = np.sqrt(np.maximum(law * (1 - law), 1e-12) / n)
    assert math.isclose(law.sum(), 1.0, abs_tol=1e-9)
    assert np.all(np.abs(freq - law) <= 5 * se + 1e-12), (freq, law)  # 5 standard errors per cell


def _bound_at_quantiles(p: np.ndarray, p_prime: np.ndarray, n: int, tail: float = 1e-5) -> float:
    """The largest audit bound over the likelihood-ratio-ordered events, with each count at its adverse
    ``tail`` quantile (so that the real audit's bound is at least this with probability ~1 - 2 tail per event)."""
    a = (1 - AUDIT_CONFIDENCE) / 4
    best = 0.0
    for u_law, v_law in ((p, p_prime), (p_prime, p)):
        order = np.argsort(-(np.log(u_law + 1e-300) - np.log(v_law + 1e-300)))
        for k in range(1, u_law.size):
            u, v = min(1.0, u_law[order[:k]].sum()), min(1.0, v_law[order[:k]].sum())
            low_k, high_k = int(stats.binom.ppf(tail, n, u)), int(stats.binom.isf(tail, n, v))
            low = stats.beta.ppf(a, low_k, n - low_k + 1) if low_k > 0 else 0.0
            high = stats.beta.ppf(1 - a, high_k + 1, n - high_k) if high_k < n else 1.0
            if low > 0:
                best = max(best, math.log(low / high))
    return best


def test_the_audits_flag_every_bug_with_overwhelming_probability_and_not_the_algorithm() -> None:
    x, x_prime, tau = audit_pairs(0.0)["above_threshold"]
    eps = AT_EPSILON
    correct = [above_threshold_probabilities(d, tau, eps) for d in (x, x_prime)]
    assert np.max(np.abs(np.log(correct[0]) - np.log(correct[1]))) <= eps  # Theorem thm-above-threshold
    n = AT_TRIALS // 2  # the estimation half of audit_pair
    for kw, margin in ((dict(rho_scale=0.0, nu_scale=4 / eps), 1.2), (dict(rho_scale=1 / eps, nu_scale=1 / eps), 2.0),
                       (dict(rho_scale=2 / eps, nu_scale=4 / eps, shared_noise=True), 3.0),
                       (dict(rho_scale=1 / eps, nu_scale=2 / eps), 1.2)):
        laws = [above_threshold_law(d, tau, **kw) for d in (x, x_prime)]
        assert _bound_at_quantiles(*laws, n) > margin * eps, kw
    x, x_prime, _ = audit_pairs(0.0)["report_noisy_max"]
    ok = [report_noisy_max_probabilities(d, RNM_EPSILON) for d in (x, x_prime)]
    assert np.max(np.abs(np.log(ok[0]) - np.log(ok[1]))) <= RNM_EPSILON
    wrong = [report_noisy_max_probabilities(d, 2 * RNM_EPSILON) for d in (x, x_prime)]  # scale Delta/epsilon
    assert _bound_at_quantiles(*wrong, RNM_TRIALS // 2) > 1.5 * RNM_EPSILON


# ---------------------------------------------------------------------------------------------
# through the grading protocol: outputs are data, and hostile answers cost only their author
# ---------------------------------------------------------------------------------------------


def test_the_protocol_gives_the_same_verdicts(reference: dict) -> None:
    for ns, want in ((reference, {"q1": 2.0, "q2": 2.0, "q3": 2.0}),
                     ({"above_threshold": AT_BUGS["shared query noise"][0], "report_noisy_max": _rnm(2.0, value=True)},
                      {"q2": 0.0, "q3": 0.0})):
        fbs = grade_in_process(dict(ns), "selection")
        for q, score in want.items():
            assert fbs[q].score == score, fbs[q].report()


def test_hostile_answers_are_contained(reference: dict) -> None:
    calls = {"n": 0}

    def huge(answers, threshold, epsilon, *, size, rng):  # more elements than the grader reads
        return np.zeros(MAX_ARRAY_ELEMENTS + 1, dtype=np.int8)

    def memo(answers, threshold, epsilon, *, size, rng):  # the first call's rows, forever
        calls["n"] += 1
        if "rows" not in calls:
            calls["rows"] = reference["above_threshold"](answers, threshold, epsilon, size=size, rng=rng)
        return calls["rows"][:size] if len(calls["rows"]) >= size else np.resize(calls["rows"], (size, len(answers)))

    class Sneaky:  # an object whose methods would run code if the grader called them
        def __array__(self, *args, **kwargs):
            raise RuntimeError("the grader touched me")

    fbs = grade_in_process({"above_threshold": huge, "report_noisy_max": lambda answers, epsilon, *, size, rng: Sneaky()},
                           "selection")
    assert all(fb.score == 0 for fb in fbs.values()), [fb.report() for fb in fbs.values()]
    assert "not graded" in fbs["q1"].messages[0] or "shape" in fbs["q1"].messages[0], fbs["q1"].report()
    assert "not an array" in fbs["q3"].messages[0], fbs["q3"].report()
    fbs = grade_in_process({"above_threshold": memo, "report_noisy_max": reference["report_noisy_max"]}, "selection")
    assert fbs["q1"].score < 2 and fbs["q2"].score == 0, (fbs["q1"].report(), fbs["q2"].report())
