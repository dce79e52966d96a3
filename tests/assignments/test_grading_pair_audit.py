"""The fourth assignment, pair_audit: the mystery mechanism's truth and the checks' verdicts on wrong answers.

Full marks for the reference solution and 0 for the blank notebook are tested for every assignment in
test_grading.py and test_grading_runner.py.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from dptutor.assignments import check
from dptutor.assignments.feedback import TEST_GRADING_SEED
from dptutor.assignments.pair_audit import PAIR_EPSILON, PAIR_TRIALS, PAIR_X, PAIR_X_PRIME, mystery_pair


def test_mystery_is_two_laplace_releases_with_true_epsilon_twice_the_claim():
    # Each coordinate is the count plus Lap(1/epsilon), independently: KS test per coordinate, and the
    # event "both >= 1" has probability 1/4 under x' = 1 and e^{-2 eps}/4 under x = 0 (ratio e^{2 eps}).
    rng = np.random.default_rng(1)
    out = mystery_pair(PAIR_X, 50_000, rng)
    for j in range(2):
        assert stats.kstest(out[:, j], stats.laplace(scale=1 / PAIR_EPSILON).cdf).pvalue > 1e-3
    assert abs(np.corrcoef(out.T)[0, 1]) < 5 / math.sqrt(50_000)  # 5 standard errors of a zero correlation
    p_x = 0.25 * math.exp(-2 * PAIR_EPSILON)
    assert math.isclose(math.log(0.25 / p_x), 2 * PAIR_EPSILON)


def test_one_coordinate_is_not_enough():
    fb = check("pair_audit", "q1", lambda o: o[:, 0], grading_seed=TEST_GRADING_SEED)
    assert fb.score < fb.points and "both coordinates" in " ".join(fb.messages)
    fb = check("pair_audit", "q2", lambda o: o[:, 0] >= 1.0, grading_seed=TEST_GRADING_SEED)
    assert fb.score < fb.points and "certifies only" in " ".join(fb.messages)


def test_other_good_answers_pass():
    fb = check("pair_audit", "q1", lambda o: o.sum(axis=1), grading_seed=TEST_GRADING_SEED)
    assert fb.score == fb.points, fb.report()
    fb = check("pair_audit", "q2", lambda o: o.sum(axis=1) < 0.0, grading_seed=TEST_GRADING_SEED)  # the other direction
    assert fb.score == fb.points, fb.report()


def test_bad_answers_get_messages_not_crashes():
    assert check("pair_audit", "q1", lambda o: o, grading_seed=TEST_GRADING_SEED).score == 0
    assert check("pair_audit", "q1", 3, grading_seed=TEST_GRADING_SEED).score == 0
    assert check("pair_audit", "q2", lambda o: np.ones(5, dtype=bool), grading_seed=TEST_GRADING_SEED).score == 0
    assert check("pair_audit", "q2", lambda o: 1 / 0, grading_seed=TEST_GRADING_SEED).status == "graded"
    assert check("pair_audit", "q3", 0.5, grading_seed=TEST_GRADING_SEED).score == 0
    assert check("pair_audit", "q3", "1.0", grading_seed=TEST_GRADING_SEED).score == 0
    assert check("pair_audit", "q3", 1.02, grading_seed=TEST_GRADING_SEED).score == 1
    fb = check("pair_audit", "q3", 0.5)  # the feedback withholds the verdict
    assert fb.score == 0 and not fb.messages
    assert PAIR_TRIALS >= 100_000 and PAIR_X_PRIME - PAIR_X == 1
