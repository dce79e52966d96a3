"""Tests for dptutor.buglab: every bug of the lab is caught by a check the book teaches, and its fixed
form passes the same check (seeded; tolerances from the sampling error)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptutor.accounting import optimal_composition_epsilon
from dptutor.buglab import (
    CHECKS,
    LAB,
    LabBug,
    advanced_composition_as_coded,
    analytic_sigma_sign_error,
    classic_sigma_any_epsilon,
    diagonal_sensitivity,
    exponential_probabilities,
    exponential_selection,
    gaussian_count,
    histogram_default_epsilon,
    mean_laplace,
    mean_sum_over_count,
    sum_of_squares,
)
from dptutor.gaussian import gaussian_delta, gaussian_sigma_analytic

AUDITED = [key for key, bug in LAB.items() if bug.check in ("audit", "spread", "utility", "exact")]


def test_every_entry_is_described_and_releases_outputs():
    assert len(LAB) == 8
    for key, bug in LAB.items():
        assert bug.key == key and bug.check in CHECKS and bug.url.startswith("https://github.com/")
        assert bug.report.split("#")[1] in bug.url
        if bug.x is None:
            continue
        for version in ("buggy", "fixed"):
            out = np.asarray(bug.release(version)(bug.x, 5, np.random.default_rng(0)))
            assert out.shape[0] == 5 and not np.isnan(out.astype(float)).any()


@pytest.mark.parametrize("key", AUDITED)
def test_audit_flags_the_buggy_form_and_not_the_fixed_one(key):
    # A 95% lower bound each; the buggy forms' true epsilon is at least twice the claim, so 20,000 runs
    # per dataset suffice; the fixed forms are epsilon-DP, so a flag would be a <5% event (seeded).
    bug = LAB[key]
    assert bug.audit("buggy", 20_000, rng=39).lower_bound > bug.epsilon
    assert bug.audit("fixed", 20_000, rng=39).lower_bound <= bug.epsilon


def test_spread_check_sees_epsilon_not_reaching_the_histogram_noise():
    # The reporter's check, made quantitative: the noise's spread at epsilon = 1 over that at epsilon = 30
    # should be 30.  With 2,000 draws of 3 bins, the sample SD of Laplace noise has a relative error of
    # about sqrt(5 / (4 * 6000)) = 1.4%, so the ratio is within 10% of its value with overwhelming probability.
    counts = np.array([100.0, 200.0, 300.0])
    rng = np.random.default_rng(99)
    for mechanism, expected in ((histogram_default_epsilon, 1.0), (LAB["diffprivlib-99"].fixed, 30.0)):
        sd = [np.std(mechanism(counts, 2000, rng, epsilon=eps) - counts) for eps in (1.0, 30.0)]
        assert abs(sd[0] / sd[1] / expected - 1.0) < 0.1


def test_utility_check_sees_an_error_that_does_not_fall_with_epsilon():
    # E|Lap(b)| = b and its SD is b: the mean absolute error of 10,000 draws is b within 5 standard
    # errors (5%).  At epsilon = 1000 the fixed mean's b is (1/10)/1000, the buggy mean's stays 1/10.
    data, rng = np.zeros(10), np.random.default_rng(97)
    for mechanism, scale in ((LAB["diffprivlib-97"].buggy, 0.1), (mean_laplace, 1e-4)):
        err = np.mean(np.abs(mechanism(data, 10_000, rng, epsilon=1000.0)))
        assert abs(err / scale - 1.0) < 0.05


def test_exact_sensitivity_of_the_diagonal_term():
    # Brute force over the bounds: the largest |x^2| a single added or removed value contributes.
    grid = np.linspace(0.0, 100.0, 100_001)
    assert diagonal_sensitivity((0.0, 100.0)) == pytest.approx(np.max(grid**2)) == 10_000.0
    assert diagonal_sensitivity((0.0, 100.0), as_coded=True) == 0.0
    assert diagonal_sensitivity((-3.0, 2.0), as_coded=True) == diagonal_sensitivity((-3.0, 2.0)) == 9.0
    out = sum_of_squares((50.0, 20.0), 3, 0, epsilon=1.0, as_coded=True)
    assert np.all(out == 2900.0)  # no noise at all: the exact statistic


def test_exact_loss_of_the_exponential_mechanism_on_scores_that_move_by_four():
    bug = LAB["mbi-65"]

    def loss(sensitivity, k):
        p = exponential_probabilities(np.zeros(k), 1.0, sensitivity)
        q = exponential_probabilities(np.r_[4.0, -4.0 * np.ones(k - 1)], 1.0, sensitivity)
        return float(np.max(np.abs(np.log(p / q))))

    assert loss(2.0, 10) > bug.epsilon and loss(4.0, 10) <= bug.epsilon
    # The buggy loss tends to 2 epsilon (the entry's true epsilon) as the candidates grow, never above.
    assert 1.99 < loss(2.0, 10_000) < bug.true_epsilon
    assert loss(4.0, 10_000) <= bug.epsilon


@pytest.mark.parametrize("key", ["smartnoise-316", "programming-dp-45"])
def test_exact_profile_catches_the_gaussian_calibrations(key):
    bug = LAB[key]
    sigma_bug = bug.buggy.keywords["sigma"]
    sigma_fix = bug.fixed.keywords["sigma"]
    assert gaussian_delta(bug.epsilon, sigma_bug) > 2 * bug.delta
    assert gaussian_delta(bug.epsilon, sigma_fix) <= bug.delta * (1 + 1e-6)
    assert bug.true_epsilon > bug.epsilon


def test_the_classic_formula_fails_only_beyond_epsilon_one():
    # The numbers: at (10, 1e-5) the true delta is about 2.3e-5; below epsilon = 1 the formula holds.
    assert gaussian_delta(10.0, classic_sigma_any_epsilon(10.0, 1e-5)) == pytest.approx(2.3e-5, rel=0.02)
    for eps in (0.1, 0.5, 0.9):
        assert gaussian_delta(eps, classic_sigma_any_epsilon(eps, 1e-5)) <= 1e-5


def test_sign_error_gives_less_noise_than_the_analytic_calibration():
    for eps, delta in ((0.5, 1e-6), (1.0, 1e-5), (4.0, 1e-3)):
        assert analytic_sigma_sign_error(eps, delta) < gaussian_sigma_analytic(eps, delta, 1.0)


def test_add_remove_mean_with_n_in_the_scale_has_unbounded_loss():
    # Exact densities: Lap(1, 1) for the dataset (1,) against Lap(0.5, 0.5) for (1, 0); the log-ratio at
    # y grows like y, so it passes any epsilon.
    def log_ratio(y):
        return (-abs(y - 1.0) - math.log(2.0)) - (-abs(y - 0.5) / 0.5 - math.log(1.0))

    assert log_ratio(20.0) > 10.0 and log_ratio(40.0) > 2 * log_ratio(20.0) - 1.0


def test_accounting_cross_check_catches_the_coded_advanced_composition():
    # An upper bound on k-fold composition can never be below the exact (optimal) composition.
    bug = LAB["programming-dp-56"]
    exact = optimal_composition_epsilon(1.0, 500, 1e-5)
    assert bug.buggy(1.0, 500, 1e-5) < exact <= bug.fixed(1.0, 500, 1e-5)
    assert bug.fixed(1.0, 500, 1e-5) == pytest.approx(966.44, abs=0.01)
    # At small epsilon the coded form is merely loose, which is how it hid.
    assert bug.buggy(0.1, 100, 1e-5) >= optimal_composition_epsilon(0.1, 100, 1e-5)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: histogram_default_epsilon([1.0], 2, 0, epsilon=-1.0), "epsilon"),
        (lambda: mean_laplace([1.0], 2, 0, epsilon=1.0, bounds=(1.0, 0.0)), "bounds"),
        (lambda: mean_laplace([1.0], 2, 0, epsilon=1.0, ignore_epsilon="yes"), "ignore_epsilon"),
        (lambda: mean_sum_over_count([], 2, 0, epsilon=1.0), "data"),
        (lambda: diagonal_sensitivity((0.0, 1.0), as_coded=1), "as_coded"),
        (lambda: sum_of_squares([1.0], -1, 0, epsilon=1.0), "size"),
        (lambda: exponential_probabilities([0.0], 1.0, 0.0), "sensitivity"),
        (lambda: exponential_selection([0.0], 1, 0, epsilon=1.0, sensitivity=-2.0), "sensitivity"),
        (lambda: analytic_sigma_sign_error(1.0, 1.5), "delta"),
        (lambda: classic_sigma_any_epsilon(0.0, 1e-5), "epsilon"),
        (lambda: gaussian_count(0.0, 1, 0, epsilon=1.0, sigma=0.0), "sigma"),
        (lambda: advanced_composition_as_coded(1.0, 0, 1e-5), "k"),
        (lambda: LAB["mbi-65"].release("broken"), "version"),
        (lambda: LAB["programming-dp-56"].release("buggy"), "accountant"),
        (lambda: LabBug("k", "r#1", "u", "f", "vibes", len, len, 1.0, None, "replace one"), "check"),
    ],
)
def test_bad_inputs_are_named(call, name):
    with pytest.raises((TypeError, ValueError), match=name):
        call()


def test_extreme_bounds_and_budgets_are_refused_naming_the_parameter():
    # Bounds near the float limit overflowed (an OverflowError from squaring, an overflow warning from summing,
    # infinite noise); a budget the calibration cannot solve surfaced scipy's "f(a) and f(b) must have different signs".
    import warnings

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for call in (lambda: diagonal_sensitivity((-1e308, 1e308)),
                     lambda: sum_of_squares(np.array([1e200]), 3, rng, epsilon=0.1, bounds=(0.0, 1e200)),
                     lambda: mean_sum_over_count(np.full(5, 1e308), 3, rng, epsilon=0.1, bounds=(0.0, 1e308)),
                     lambda: mean_laplace(np.array([0.5]), 3, rng, epsilon=0.1, bounds=(-1e308, 1e308))):
            with pytest.raises(ValueError, match="bounds"):
                call()
        with pytest.raises(ValueError, match="epsilon"):
            analytic_sigma_sign_error(1e-300, 1e-300)
        assert diagonal_sensitivity((-1e150, 1e150)) == pytest.approx(1e300)
