"""Membership inference, its ROC against the DP bound, reconstruction, and the DP-SGD variants."""

import math

import numpy as np
import pytest

from dptutor.attacks import example_losses, likelihood_ratio_scores, reconstruct, roc_curve, roc_excess, subset_queries, subset_sum_answers
from dptutor.epsilon import tpr_bound
from dptutor.learning import initial_classifier, sgd
from dptutor.learning_variants import dp_sgd_variant, noiseless_step


def test_roc_curve_counts_scores_at_or_above_each_threshold():
    fpr, tpr = roc_curve([3.0, 2.0, 1.0], [0.0, 1.5])
    assert fpr.tolist() == [0.0, 0.0, 0.0, 0.5, 0.5, 1.0]
    assert tpr.tolist() == pytest.approx([0.0, 1 / 3, 2 / 3, 2 / 3, 1.0, 1.0])


def _rr_roc(epsilon, people, rng):
    """ROC of the optimal attack on randomized response (epsilon-DP): members answer 1 with
    probability e^eps / (1 + e^eps), non-members with 1 / (1 + e^eps); a uniform tie-breaking score."""
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    members = (rng.random(people) < p) + rng.random(people) * 0.5
    others = (rng.random(people) < 1 - p) + rng.random(people) * 0.5
    return roc_curve(members, others)


def test_roc_of_a_dp_mechanism_lies_under_the_bound_over_seeds():
    # At each seed the excess is the largest of many empirical rates' deviations: its sampling error
    # is about 2.5 binomial standard errors at the worst point, sqrt(p (1 - p) / people) <= 0.5 / sqrt(people).
    people, epsilon = 4000, 1.0
    tolerance = 3 * 0.5 / math.sqrt(people) * math.exp(epsilon)
    excesses = [roc_excess(*_rr_roc(epsilon, people, np.random.default_rng(seed)), epsilon) for seed in range(20)]
    assert np.median(excesses) < tolerance
    assert max(excesses) < 2 * tolerance
    # The same curves lie well above the bound of a smaller epsilon: the test can fail.
    assert min(roc_excess(*_rr_roc(epsilon, people, np.random.default_rng(s)), 0.5) for s in range(5)) > tolerance


@pytest.fixture(scope="module")
def overfit():
    """A non-private model trained long on few examples (members) and fresh examples (non-members)."""
    rng = np.random.default_rng(3)
    d = 40
    X = rng.normal(size=(120, d))
    y = (X[:, 0] + rng.normal(scale=2.0, size=120) > 0).astype(int)
    model = sgd(X[:60], y[:60], epochs=200, sampling_rate=0.5, rng=np.random.default_rng(4), learning_rate=1.0)
    return model, X, y


def test_loss_threshold_attack_beats_the_bound_on_an_overfit_model(overfit):
    model, X, y = overfit
    fpr, tpr = roc_curve(-example_losses(model, X[:60], y[:60]), -example_losses(model, X[60:], y[60:]))
    # 60 members and 60 non-members: a rate's standard error is at most 0.5 / sqrt(60) = 0.065.
    assert roc_excess(fpr, tpr, 0.5) > 3 * 0.5 / math.sqrt(60)


def test_likelihood_ratio_beats_the_loss_threshold_on_examples_of_varied_difficulty():
    # Each example's confidence is its own difficulty (sd 3) plus a member's shift of 1 and unit noise:
    # calibrating by the reference models removes the difficulty, which hides the shift from a global threshold.
    rng = np.random.default_rng(8)
    n, models = 2000, 16
    difficulty = rng.normal(0.0, 3.0, n)
    member = np.arange(n) < n // 2
    inside = rng.random((models, n)) < 0.5
    inside[0], inside[1] = True, False
    def losses(shift):  # loss = log(1 + e^-phi) for a confidence phi
        return np.logaddexp(0.0, -(difficulty + shift + rng.normal(size=shift.shape)))
    reference = losses(inside * 1.0)
    target = losses(member * 1.0)
    at_10 = []
    for scores in (likelihood_ratio_scores(target, reference, inside), -target):
        fpr, tpr = roc_curve(scores[member], scores[~member])
        at_10.append(tpr[np.searchsorted(fpr, 0.1, side="right") - 1])
    # 1000 members: a TPR's standard error is at most 0.5 / sqrt(1000) = 0.016; demand 5 of them.
    assert at_10[0] - at_10[1] > 5 * 0.5 / math.sqrt(n // 2)


def test_reconstruction_from_exact_answers_recovers_the_secret():
    rng = np.random.default_rng(0)
    people = 200
    secret = rng.integers(0, 2, people)
    queries = subset_queries(people, 4 * people, rng)
    guess = reconstruct(queries, subset_sum_answers(secret, queries, rng=rng))
    assert np.mean(guess == secret) >= 0.95


def test_reconstruction_falls_to_chance_under_dp_noise():
    # Over 10 seeds of 200 bits: the fraction right is binomial(2000, 1/2) at chance, sd 0.011.
    rng = np.random.default_rng(1)
    people, right = 200, []
    for _ in range(10):
        secret = rng.integers(0, 2, people)
        queries = subset_queries(people, 4 * people, rng)
        right.append(np.mean(reconstruct(queries, subset_sum_answers(secret, queries, rng=rng, epsilon=1.0)) == secret))
    assert abs(np.mean(right) - 0.5) < 3 * 0.5 / math.sqrt(10 * people)


def test_microbatches_double_the_sensitivity():
    model = initial_classifier(2, [0, 1], rng=np.random.default_rng(0))
    X = np.array([[5.0, 0.0], [-20.0, 0.0]])
    y = np.array([1, 1])
    with_both = noiseless_step(model, X, y, clip=1.0, microbatch=2, expected_size=1.0)
    without = noiseless_step(model, X[:1], y[:1], clip=1.0, microbatch=2, expected_size=1.0)
    per_example = (noiseless_step(model, X, y, clip=1.0, expected_size=1.0)
                   - noiseless_step(model, X[:1], y[:1], clip=1.0, expected_size=1.0))
    # opposite directions up to the bias coordinate: nearly 2 C, where one clipped example moves it by C
    assert 1.9 < np.linalg.norm(with_both - without) <= 2.0 + 1e-12
    assert np.linalg.norm(per_example) <= 1.0 + 1e-12


def test_default_variant_trains():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] > 0).astype(int)
    model = dp_sgd_variant(X, y, noise_multiplier=0.5, steps=50, sampling_rate=0.1, clip=1.0, rng=rng)
    # 300 examples: chance accuracy has sd 0.03; the separable data give far more.
    assert np.mean(model.predict(X) == y) > 0.5 + 4 * 0.03


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: roc_curve([], [1.0]), "member_scores"),
        (lambda: roc_curve([1.0], [np.nan]), "nonmember_scores"),
        (lambda: roc_excess([0.1], [0.2, 0.3], 1.0), "fpr and tpr"),
        (lambda: roc_excess([0.1], [1.5], 1.0), "tpr"),
        (lambda: roc_excess([0.1], [0.5], -1.0), "epsilon"),
        (lambda: subset_queries(0, 5, np.random.default_rng()), "people"),
        (lambda: subset_queries(5, 5, 3), "rng"),
        (lambda: subset_sum_answers([0, 2], [[1, 0]], rng=np.random.default_rng()), "secret"),
        (lambda: subset_sum_answers([0, 1], [[1, 0, 1]], rng=np.random.default_rng()), "queries"),
        (lambda: subset_sum_answers([0, 1], [[1, 0]], rng=np.random.default_rng(), epsilon=0.0), "epsilon"),
        (lambda: reconstruct([[1, 0]], [1.0, 2.0]), "answers"),
        (lambda: example_losses("model", [[0.0]], [0]), "model"),
        (lambda: likelihood_ratio_scores([0.1, 0.2], [[0.1, 0.2], [0.3, 0.4]], [[True, False], [True, False]]),
         "reference_in"),
        (lambda: likelihood_ratio_scores([0.1, 0.2], [[0.1], [0.2]], [[True, False], [False, True]]), "reference_losses"),
        (lambda: likelihood_ratio_scores([-0.1], [[0.1], [0.2]], [[True], [False]]), "target_losses"),
        (lambda: noiseless_step(initial_classifier(1, [0, 1], rng=np.random.default_rng()), [[0.0]], [0], clip=1.0), "expected_size"),
        (lambda: dp_sgd_variant([[0.0], [1.0]], [0, 1], noise_multiplier=1.0, steps=1, sampling_rate=0.5, clip=1.0,
                                rng=np.random.default_rng(), batching="random"), "batching"),
        (lambda: dp_sgd_variant([[0.0], [1.0]], [0, 1], noise_multiplier=-1.0, steps=1, sampling_rate=0.5, clip=1.0,
                                rng=np.random.default_rng()), "noise_multiplier"),
    ],
)
def test_bad_inputs_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_tpr_bound_is_reused_not_copied():
    # roc_excess is measured against dptutor.epsilon's curve itself.
    fpr = np.linspace(0, 1, 11)
    assert roc_excess(fpr, tpr_bound(fpr, 1.0, 1e-3), 1.0, 1e-3) == pytest.approx(0.0, abs=1e-15)
