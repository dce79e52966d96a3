"""Selection mechanisms (dptutor.selection): exact values, the privacy proofs' steps, samplers against
their exact output laws (seeded, tolerances from the sampling error), and input checks."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from scipy import stats

from dptutor.selection import (
    above_threshold,
    above_threshold_probabilities,
    exponential_mechanism,
    exponential_mechanism_exact,
    exponential_mechanism_probabilities,
    max_log_ratio,
    report_noisy_max,
    report_noisy_max_probabilities,
    sparse_vector,
)


def _neighbours(values, radius=1.0):
    """Every vector that moves each entry by -radius, 0 or +radius (the component-wise neighbourhood)."""
    for moves in itertools.product((-radius, 0.0, radius), repeat=len(values)):
        yield tuple(v + m for v, m in zip(values, moves))


def _within_sampling_error(counts, probabilities, n, z=5.0):
    """Each count within z binomial standard deviations of n p (z = 5: a false alarm about 1 in 10^6)."""
    sd = np.sqrt(n * probabilities * (1 - probabilities))
    return np.all(np.abs(counts - n * probabilities) <= z * sd + 1e-9)


# ---------------------------------------------------------------------------------------------
# the exponential mechanism
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scores", "base", "expected"), [
    ((0, 1, 2), 2, (Fraction(1, 7), Fraction(2, 7), Fraction(4, 7))),
    ((3, 3), Fraction(3, 2), (Fraction(1, 2), Fraction(1, 2))),
    ((0, 2), 3, (Fraction(1, 10), Fraction(9, 10))),
    ((-1, 0, 1), Fraction(5, 4), (Fraction(16, 61), Fraction(20, 61), Fraction(25, 61))),
])
def test_exponential_mechanism_exact_table(scores, base, expected):
    assert tuple(exponential_mechanism_exact(scores, base)) == expected
    eps = 2 * math.log(base)  # base = e^{eps / (2 Delta)} with Delta = 1
    assert np.allclose(exponential_mechanism_probabilities(scores, eps), [float(p) for p in expected], rtol=1e-13)


@pytest.mark.parametrize("base", [2, Fraction(3, 2), Fraction(11, 10)])
def test_exponential_mechanism_loss_is_at_most_epsilon_exactly(base):
    """Theorem thm-exponential-mechanism, in exact arithmetic: every ratio over every neighbour of
    a small integer score vector is at most base^2 = e^epsilon, and the largest exceeds base (so the
    factor 2 in the exponent is needed for these neighbours)."""
    b = Fraction(base)
    worst = Fraction(0)
    for scores in [(0, 1, 2), (0, 0, 5), (2, -1, 0)]:
        p = exponential_mechanism_exact(scores, b)
        for other in _neighbours(scores):
            q = exponential_mechanism_exact(tuple(int(v) for v in other), b)
            worst = max(worst, *(x / y for x, y in zip(p, q)))
    assert worst <= b**2
    assert worst > b


def test_exponential_mechanism_proof_steps_in_sympy():
    """The proof's two factors: the numerator's ratio is e^{eps (u - u') / (2 Delta)} <= e^{eps/2},
    and each term of the normaliser changes by at most the same factor."""
    eps, d, u, s = sp.symbols("epsilon Delta u s", positive=True)
    ratio = sp.exp(eps * u / (2 * d)) / sp.exp(eps * (u - s) / (2 * d))
    assert sp.simplify(ratio - sp.exp(eps * s / (2 * d))) == 0
    # |s| <= Delta: the exponent eps s / (2 Delta) is at most eps / 2
    assert sp.simplify((eps * s / (2 * d)).subs(s, d) - eps / 2) == 0


def test_exponential_mechanism_sampler_matches_probabilities():
    rng = np.random.default_rng(2007)
    scores, eps, n = (0.0, 1.0, 3.0, 2.5), 1.3, 200_000
    p = exponential_mechanism_probabilities(scores, eps)
    draws = exponential_mechanism(scores, eps, rng, size=n)
    assert _within_sampling_error(np.bincount(draws, minlength=4), p, n)
    assert isinstance(exponential_mechanism(scores, eps, rng), int)


def test_exponential_mechanism_extreme_scores_no_nan():
    p = exponential_mechanism_probabilities([1e308, -1e308, 0.0], 1e308)
    assert np.array_equal(p, [1.0, 0.0, 0.0])
    assert np.allclose(exponential_mechanism_probabilities([5.0, 5.0], 1e-300), [0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# report-noisy-max
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_report_noisy_max_probabilities_symmetry_and_sum(noise):
    p = report_noisy_max_probabilities((1.0, 1.0, 1.0, 1.0), 0.5, noise=noise)
    assert np.allclose(p, 0.25, atol=1e-12)
    p = report_noisy_max_probabilities((0.0, 2.0, 1.0), 1.0, noise=noise)
    assert abs(p.sum() - 1) < 1e-12 and p[1] > p[2] > p[0]


def test_report_noisy_max_two_candidates_closed_form():
    """Two candidates with Laplace noise: P[first wins] = P[Z_1 - Z_2 > q_2 - q_1], Z_1 - Z_2 the
    difference of two Laplace(b) variables, whose survival function is known in closed form."""
    b, gap = 2.0, 1.5  # epsilon = 1, answers (0, 1.5)
    x = gap / b
    sf_difference = 0.5 * math.exp(-x) * (1 + x / 2)  # P[Z_1 - Z_2 > gap] for gap >= 0
    p = report_noisy_max_probabilities((0.0, gap), 1.0)
    assert p[0] == pytest.approx(sf_difference, abs=1e-13)


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_report_noisy_max_sampler_matches_probabilities(noise):
    rng = np.random.default_rng(23)
    answers, eps, n = (0.0, 2.0, 1.0, 1.5), 1.0, 200_000
    p = report_noisy_max_probabilities(answers, eps, noise=noise)
    draws = report_noisy_max(answers, eps, rng, noise=noise, size=n)
    assert _within_sampling_error(np.bincount(draws, minlength=4), p, n)


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
@pytest.mark.parametrize("answers", [(0.0, 1.0, 2.0), (1.0, 1.0, 1.0), (3.0, 0.0, 0.5)])
def test_report_noisy_max_index_is_epsilon_dp(noise, answers):
    """Theorem thm-report-noisy-max on every component-wise neighbour: the loss of the index law
    is at most epsilon (up to the quadrature's 1e-9)."""
    eps = 0.8
    p = report_noisy_max_probabilities(answers, eps, noise=noise)
    worst = max(max_log_ratio(p, report_noisy_max_probabilities(o, eps, noise=noise)) for o in _neighbours(answers))
    assert worst <= eps + 1e-9
    assert worst > 0.5 * eps  # the neighbourhood does move the law


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_report_noisy_max_proof_step_survival_shift(noise):
    """The proof's key step: the noise's survival function S satisfies S(t + 2 Delta) >= e^-eps S(t)."""
    eps, delta_u = 0.7, 1.0
    scale = 2 * delta_u / eps
    law = stats.laplace(0, scale) if noise == "laplace" else stats.expon(0, scale)
    t = np.linspace(-30, 30, 6001)
    assert np.all(law.sf(t + 2 * delta_u) >= math.exp(-eps) * law.sf(t) * (1 - 1e-12))


def test_report_noisy_max_survival_shift_in_sympy():
    eps, d, t = sp.symbols("epsilon Delta t", positive=True)
    survival = sp.exp(-t * eps / (2 * d))  # exponential noise, t >= 0 (and the Laplace upper tail / 2)
    assert sp.simplify(survival.subs(t, t + 2 * d) / survival - sp.exp(-eps)) == 0


# ---------------------------------------------------------------------------------------------
# AboveThreshold and the sparse vector technique
# ---------------------------------------------------------------------------------------------


def test_above_threshold_probabilities_sum_and_sampler():
    rng = np.random.default_rng(317)
    answers, tau, eps, n = (0.0, 1.0, 2.0, 0.0), 1.0, 1.0, 200_000
    p = above_threshold_probabilities(answers, tau, eps)
    assert p.shape == (5,) and abs(p.sum() - 1) < 1e-12
    draws = above_threshold(answers, tau, eps, rng, size=n)
    assert _within_sampling_error(np.bincount(draws, minlength=5), p, n)
    assert isinstance(above_threshold(answers, tau, eps, rng), int)


def test_above_threshold_one_query_closed_form():
    """One query: P[above] = P[nu - rho >= tau - q], a difference of Laplace(4/eps) and Laplace(2/eps)
    variables; checked against a direct quadrature of that convolution."""
    eps, q, tau = 1.0, 0.5, 1.0
    rho, nu = stats.laplace(0, 2 / eps), stats.laplace(0, 4 / eps)
    from scipy import integrate

    direct = integrate.quad(lambda r: rho.pdf(r) * nu.sf(tau + r - q), -80, 80, points=[0.0, q - tau], limit=200)[0]
    p = above_threshold_probabilities((q,), tau, eps)
    assert p[0] == pytest.approx(direct, abs=1e-10)


@pytest.mark.parametrize("answers", [(0.0, 1.0, 2.0), (2.0, 2.0, 0.0), (0.0, 0.0, 0.0)])
def test_above_threshold_is_epsilon_dp(answers):
    """Theorem thm-above-threshold on every component-wise neighbour of small inputs."""
    eps, tau = 0.9, 1.0
    p = above_threshold_probabilities(answers, tau, eps)
    worst = max(max_log_ratio(p, above_threshold_probabilities(o, tau, eps)) for o in _neighbours(answers))
    assert worst <= eps + 1e-9
    assert worst > 0.3 * eps


def test_above_threshold_proof_steps():
    """The proof's steps 2-4 on a grid: below factors do not decrease when the threshold moves up by
    Delta and the answers by at most Delta (step 2); above factors lose at most e^{eps_2 / c} (step 3);
    the threshold's density loses at most e^{eps_1} when shifted by Delta (step 4)."""
    eps, c, d = 1.0, 3, 1.0
    eps1 = eps2 = eps / 2
    nu, rho = stats.laplace(0, 2 * c * d / eps2), stats.laplace(0, d / eps1)
    t = np.linspace(-40, 40, 4001)[:, None]
    moves = np.array([-d, 0.0, d])[None, :]  # q_i(x') - q_i(x)
    # step 2: F_nu(t) <= F_nu(t + Delta - move)
    assert np.all(nu.cdf(t) <= nu.cdf(t + d - moves) + 1e-15)
    # step 3: S_nu(t) <= e^{eps2 / c} S_nu(t + Delta - move)
    assert np.all(nu.sf(t) <= math.exp(eps2 / c) * nu.sf(t + d - moves) * (1 + 1e-12))
    # step 4: f_rho(r - Delta) <= e^{eps1} f_rho(r)
    r = t[:, 0]
    assert np.all(rho.pdf(r - d) <= math.exp(eps1) * rho.pdf(r) * (1 + 1e-12))


def test_sparse_vector_cut_off_and_format():
    rng = np.random.default_rng(5)
    rows = sparse_vector((10.0, 10.0, 10.0, 10.0), 0.0, 50.0, rng, c=2, size=100)
    assert rows.shape == (100, 4) and rows.dtype == np.int8
    assert np.all((rows == 1).sum(axis=1) <= 2)
    # after the second 1 only -1
    for row in rows:
        ones = np.flatnonzero(row == 1)
        if ones.size == 2:
            assert np.all(row[ones[1] + 1:] == -1)
    single = sparse_vector((0.0, 1.0), 0.5, 1.0, rng, c=1)
    assert single.shape == (2,)


def test_sparse_vector_c1_matches_above_threshold_law():
    rng = np.random.default_rng(11)
    answers, tau, eps, n = (0.0, 1.5, 1.0), 1.0, 1.0, 200_000
    rows = sparse_vector(answers, tau, eps, rng, c=1, size=n)
    first = np.where((rows == 1).any(axis=1), np.argmax(rows == 1, axis=1), len(answers))
    p = above_threshold_probabilities(answers, tau, eps)
    assert _within_sampling_error(np.bincount(first, minlength=4), p, n)


def test_max_log_ratio():
    assert max_log_ratio([0.5, 0.5], [0.25, 0.75]) == pytest.approx(math.log(2))
    assert max_log_ratio([0.5, 0.5, 0.0], [0.5, 0.25, 0.25]) == math.inf
    assert max_log_ratio([1.0], [1.0]) == 0.0


@pytest.mark.parametrize(("call", "name"), [
    (lambda: exponential_mechanism_probabilities([], 1.0), "scores"),
    (lambda: exponential_mechanism_probabilities([1.0], -1.0), "epsilon"),
    (lambda: exponential_mechanism_probabilities([1.0], 1.0, 0.0), "sensitivity"),
    (lambda: exponential_mechanism_exact([1.5], 2), "scores"),
    (lambda: exponential_mechanism_exact([1], 1), "base"),
    (lambda: exponential_mechanism_exact([1], 1.5), "base"),
    (lambda: report_noisy_max([1.0], 1.0, np.random.default_rng(0), noise="gumbel"), "noise"),
    (lambda: report_noisy_max([1.0], 1.0, 3.5), "rng"),
    (lambda: sparse_vector([1.0], math.nan, 1.0, np.random.default_rng(0)), "threshold"),
    (lambda: sparse_vector([1.0], 0.0, 1.0, np.random.default_rng(0), c=0), "c"),
    (lambda: above_threshold([1.0], 0.0, 1.0, np.random.default_rng(0), size=-1), "size"),
    (lambda: max_log_ratio([1.0], [0.5, 0.5]), "p_prime"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


# ---------------------------------------------------------------------------------------------
# rng, as scipy takes it: an int seed, a SeedSequence or a Generator
# ---------------------------------------------------------------------------------------------

_SAMPLERS = {
    "exponential_mechanism": lambda rng: exponential_mechanism([1.0, 2.0, 0.5], 1.0, rng, size=50),
    "report_noisy_max": lambda rng: report_noisy_max([1.0, 2.0, 0.5], 1.0, rng, size=50),
    "sparse_vector": lambda rng: sparse_vector([1.0, 2.0, 0.5], 1.0, 1.0, rng, c=2, size=50),
    "above_threshold": lambda rng: above_threshold([1.0, 2.0, 0.5], 1.0, 1.0, rng, size=50),
}


@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_rng_takes_an_int_a_seed_sequence_or_a_generator(name):
    sample = _SAMPLERS[name]
    expected = sample(np.random.default_rng(2022))
    assert np.array_equal(sample(2022), expected)
    assert np.array_equal(sample(np.random.SeedSequence(2022)), expected)
    gen = np.random.default_rng(2022)
    first, second = sample(gen), sample(gen)  # a Generator is used, not copied: its state advances
    assert np.array_equal(first, expected) and not np.array_equal(second, expected)
    for bad, exc in ((-1, ValueError), (1.5, TypeError), (None, TypeError), (np.random.RandomState(0), TypeError)):
        with pytest.raises(exc, match="rng"):
            sample(bad)
