"""The one-run audit (Steinke, Nasr and Jagielski 2023): its p-value, soundness, tightness and the
soundness trap of choosing the number of guesses after looking."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy import optimize, stats

from dptutor.audit.one_run import audit_one_run, one_run_p_value

#: Canaries per audit, and audits per soundness check.
CANARIES = 1000
AUDITS = 200
#: A soundness check fails when the one-sided binomial test of "at most the nominal error rate"
#: rejects at this level (the count of bounds above the true epsilon is too large to be chance).
SOUNDNESS_LEVEL = 0.01


def _reference_p_value(v: int, r: int, m: int, eps: float, delta: float) -> float:
    """The theorem's right-hand side written out term by term (a loop over i = 1..m)."""
    p = math.exp(eps) / (1 + math.exp(eps))

    def f(u: int) -> float:
        return float(stats.binom.sf(u - 1, r, p))

    worst = max((f(v - i) - f(v)) / i for i in range(1, m + 1))
    return min(1.0, f(v) + 2 * m * delta * worst)


@pytest.mark.parametrize(("v", "r", "m", "eps", "delta"), [
    (60, 100, 1000, 0.5, 0.0), (60, 100, 1000, 0.5, 1e-4), (95, 100, 200, 2.0, 1e-3), (3, 10, 10, 0.0, 0.01),
    (700, 1000, 1000, 1.0, 1e-5),
])
def test_p_value_is_the_theorem_written_out(v, r, m, eps, delta):
    assert one_run_p_value(v, r, m, eps, delta=delta) == pytest.approx(_reference_p_value(v, r, m, eps, delta),
                                                                       rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("delta", [0.0, 1e-5, 1e-4])
def test_bound_is_where_the_p_value_crosses_the_error_rate(delta):
    bound = audit_one_run(80, 100, CANARIES, delta=delta, confidence_level=0.95)
    assert bound > 0
    assert one_run_p_value(80, 100, CANARIES, bound, delta=delta) <= 0.05 + 1e-9
    assert one_run_p_value(80, 100, CANARIES, bound + 1e-6, delta=delta) >= 0.05


def test_nothing_learned_gives_zero():
    assert audit_one_run(0, 0, CANARIES) == 0.0
    assert audit_one_run(50, 100, CANARIES) == 0.0  # half right: no evidence against epsilon = 0
    assert audit_one_run(100, 100, CANARIES, delta=0.01) < audit_one_run(100, 100, CANARIES)


def _top_bottom_guesses(included: np.ndarray, scores: np.ndarray, k: int) -> tuple[int, int]:
    """(correct, guesses): "in" for the k/2 highest scores, "out" for the k/2 lowest."""
    order = np.argsort(scores)
    half = k // 2
    correct = int(included[order[-half:]].sum()) + int((~included[order[:half]]).sum())
    return correct, 2 * half


def _gaussian_epsilon(sigma: float, delta: float) -> float:
    """The exact epsilon at delta of the Gaussian mechanism with sensitivity 1 (Balle and Wang 2018)."""
    def excess(eps: float) -> float:
        a = 1 / (2 * sigma)
        return stats.norm.cdf(a - eps * sigma) - math.exp(eps) * stats.norm.cdf(-a - eps * sigma) - delta
    return optimize.brentq(excess, 0.0, 100.0, xtol=1e-12)


def _assert_sound(exceed: int, audits: int, alpha: float) -> None:
    test = stats.binomtest(exceed, audits, alpha, alternative="greater")
    assert test.pvalue > SOUNDNESS_LEVEL, f"{exceed} of {audits} bounds above the true epsilon (nominal {alpha})"


def test_sound_on_randomized_response():
    """Every canary's bit goes through epsilon-randomized response; the auditor guesses the output on
    all of them.  The count of correct guesses is then exactly Binomial(m, e^eps / (1 + e^eps)), the
    theorem's worst case."""
    eps = 1.0
    exceed = 0
    for audit in range(AUDITS):
        rng = np.random.default_rng([38, 1, audit])
        included = rng.random(CANARIES) < 0.5
        kept = rng.random(CANARIES) < math.exp(eps) / (1 + math.exp(eps))
        output = np.where(kept, included, ~included)
        exceed += audit_one_run(int((output == included).sum()), CANARIES, CANARIES) > eps
    _assert_sound(exceed, AUDITS, 0.05)


def test_sound_on_the_gaussian_mechanism():
    """Canary i adds 1 to coordinate i when included; the release adds N(0, sigma^2) to every
    coordinate, so changing one canary is a Gaussian mechanism of sensitivity 1."""
    sigma, delta = 1.0, 1e-5
    true_eps = _gaussian_epsilon(sigma, delta)
    exceed = 0
    for audit in range(AUDITS):
        rng = np.random.default_rng([38, 2, audit])
        included = rng.random(CANARIES) < 0.5
        scores = included + rng.normal(0.0, sigma, CANARIES)
        correct, guesses = _top_bottom_guesses(included, scores, 100)
        exceed += audit_one_run(correct, guesses, CANARIES, delta=delta) > true_eps
    _assert_sound(exceed, AUDITS, 0.05)


def test_tight_at_epsilon_one():
    eps = 1.0
    bounds = []
    for audit in range(AUDITS):
        rng = np.random.default_rng([38, 3, audit])
        correct = int((rng.random(CANARIES) < math.exp(eps) / (1 + math.exp(eps))).sum())
        bounds.append(audit_one_run(correct, CANARIES, CANARIES))
    assert np.median(bounds) >= 0.6


#: The guess counts an auditor might try, and the audits of the trap test.
GUESS_COUNTS = (10, 20, 50, 100, 200)
TRAP_AUDITS = 400


def _laplace_best_bound(audit: int, confidence_level: float) -> tuple[float, float]:
    """The Laplace mechanism (scale 1/epsilon, epsilon = 1) on 1,000 canaries; the auditor guesses
    "in" on the k highest scores for each k of GUESS_COUNTS: (largest bound, bound at k = 20)."""
    rng = np.random.default_rng([38, 4, audit])
    included = rng.random(CANARIES) < 0.5
    order = np.argsort(-(included + rng.laplace(0.0, 1.0, CANARIES)))
    bounds = [audit_one_run(int(included[order[:k]].sum()), k, CANARIES, confidence_level=confidence_level)
              for k in GUESS_COUNTS]
    return max(bounds), bounds[GUESS_COUNTS.index(20)]


def test_choosing_the_guess_count_after_looking_is_unsound_and_bonferroni_fixes_it():
    eps, alpha = 1.0, 0.05
    trap = fixed = bonferroni = 0
    for audit in range(TRAP_AUDITS):
        best, at_20 = _laplace_best_bound(audit, 1 - alpha)
        trap += best > eps
        fixed += at_20 > eps
        bonferroni += _laplace_best_bound(audit, 1 - alpha / len(GUESS_COUNTS))[0] > eps
    # the best of five: the binomial test rejects "at most alpha" (the trap is real) ...
    assert stats.binomtest(trap, TRAP_AUDITS, alpha, alternative="greater").pvalue < SOUNDNESS_LEVEL
    # ... while one count fixed in advance, and the best of five at alpha / 5 each, are sound
    _assert_sound(fixed, TRAP_AUDITS, alpha)
    _assert_sound(bonferroni, TRAP_AUDITS, alpha)


def test_a_thousand_canaries_take_under_a_second():
    start = time.process_time()
    audit_one_run(700, 1000, 1000, delta=1e-5)
    audit_one_run(700, 1000, 1000)
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize(("kwargs", "error", "name"), [
    ({"correct": 11}, ValueError, "correct"),
    ({"correct": -1}, ValueError, "correct"),
    ({"correct": 5.0}, TypeError, "correct"),
    ({"guesses": 2000}, ValueError, "guesses"),
    ({"canaries": 0}, ValueError, "canaries"),
    ({"delta": -0.1}, ValueError, "delta"),
    ({"delta": float("nan")}, ValueError, "delta"),
    ({"confidence_level": 1.0}, ValueError, "confidence_level"),
    ({"confidence_level": "high"}, TypeError, "confidence_level"),
])
def test_bad_inputs_name_the_parameter(kwargs, error, name):
    args = {"correct": 5, "guesses": 10, "canaries": 1000, **kwargs}
    with pytest.raises(error, match=rf"\b{name}\b"):
        audit_one_run(args.pop("correct"), args.pop("guesses"), args.pop("canaries"), **args)
