"""The gradient-release mechanism of :mod:`dptutor.learning_variants` and the audit that catches shuffled batches.

The audit test repeats the chapter's construction (learning_attacks, "Catching shuffled batches") on a seed of
its own: N = 20 examples with clipped gradient -C in the canary's coordinate, the canary +C, theta = 0.1,
one epoch of 10 steps at sigma = 1, delta = 1e-5, 10^6 runs per dataset, the largest sum as statistic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dptutor.audit import audit_pair
from dptutor.learning import dp_sgd_epsilon
from dptutor.learning_variants import released_sums

SIGMA, N, THETA, STEPS, DELTA = 1.0, 20, 0.1, 10, 1e-5


def _released(batching: str):
    def mechanism(data, size, rng):
        gradients = np.vstack([np.ones((data, 1)), -np.ones((N - 1, 1))])
        return released_sums(gradients, noise_multiplier=SIGMA, steps=STEPS, sampling_rate=THETA, clip=1.0, rng=rng,
                             batching=batching, runs=size)[:, :, 0]
    return mechanism


def _largest(outputs):
    return outputs.max(axis=1)


def test_audit_catches_shuffle_and_not_poisson():
    claim = dp_sgd_epsilon(SIGMA, STEPS, THETA, DELTA)
    shuffle = audit_pair(_released("shuffle"), 1, 0, epsilon=claim, delta=DELTA, trials=10**6, statistic=_largest,
                         rng=2024)
    poisson = audit_pair(_released("poisson"), 1, 0, epsilon=claim, delta=DELTA, trials=10**6, statistic=_largest,
                         rng=2024)
    assert shuffle.lower_bound > claim and shuffle.is_violation()
    assert poisson.lower_bound < claim and not poisson.is_violation()


@pytest.mark.parametrize("data", [0, 1])
def test_largest_sum_law_matches_the_closed_form(data):
    """P[max_t Y_t >= tau] from the runs against the chapter's formula, within 4.5 binomial standard errors."""
    runs, tau = 200_000, 0.5
    sums = _released("shuffle")(data, runs, np.random.default_rng([38, data]))
    z = (tau + 2.0) / SIGMA
    exact = 1 - norm.cdf(z) ** STEPS if data == 0 else 1 - norm.cdf(z) ** (STEPS - 1) * norm.cdf(z - 2 / SIGMA)
    seen = np.mean(sums.max(axis=1) >= tau)
    assert abs(seen - exact) <= 4.5 * math.sqrt(exact * (1 - exact) / runs)


def test_shuffle_puts_every_example_in_one_step_per_epoch():
    n, q, epochs = 12, 0.25, 3  # batches of 3, 4 steps an epoch
    sums = released_sums(np.eye(n), noise_multiplier=0.0, steps=4 * epochs, sampling_rate=q, clip=1.0,
                         rng=np.random.default_rng(1), batching="shuffle", runs=50)
    per_epoch = sums.reshape(50, epochs, 4, n).sum(axis=2)
    assert np.array_equal(per_epoch, np.ones_like(per_epoch))
    assert np.array_equal(sums.sum(axis=2), np.full((50, 4 * epochs), 3.0))


def test_shuffle_leftover_rows_sit_out_and_batch_size_stays_fixed():
    n = 19  # round(0.1 * 19) = 2: nine batches an epoch, one row left over
    sums = released_sums(np.ones((n, 1)), noise_multiplier=0.0, steps=10, sampling_rate=0.1, clip=1.0,
                         rng=np.random.default_rng(2), batching="shuffle", runs=100)
    assert np.array_equal(sums, np.full((100, 10, 1), 2.0))


def test_poisson_batches_and_noise_have_the_right_laws():
    runs, n, q, sigma = 20_000, 30, 0.2, 1.5
    rng = np.random.default_rng(3)
    counts = released_sums(np.ones((n, 1)), noise_multiplier=0.0, steps=5, sampling_rate=q, clip=1.0, rng=rng,
                           runs=runs)
    mean_se = math.sqrt(n * q * (1 - q) / (5 * runs))
    assert abs(counts.mean() - n * q) <= 4.5 * mean_se
    noise = released_sums(np.zeros((n, 2)), noise_multiplier=sigma, steps=5, sampling_rate=q, clip=2.0, rng=rng,
                          runs=runs)
    variance_se = (sigma * 2.0) ** 2 * math.sqrt(2 / noise.size)
    assert abs(noise.var() - (sigma * 2.0) ** 2) <= 4.5 * variance_se


def test_gradients_are_clipped():
    sums = released_sums(np.array([[3.0, 4.0]]), noise_multiplier=0.0, steps=2, sampling_rate=1.0, clip=1.0,
                         rng=np.random.default_rng(4))
    assert np.allclose(sums, [[[0.6, 0.8], [0.6, 0.8]]])


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"gradients": np.ones(3)}, "gradients"), ({"runs": 0}, "runs"), ({"batching": "cyclic"}, "batching"),
    ({"clip": 0.0}, "clip"), ({"steps": 0}, "steps"), ({"sampling_rate": 0.0}, "sampling_rate"),
    ({"noise_multiplier": -1.0}, "noise_multiplier"), ({"rng": 3}, "rng"),
    ({"gradients": np.array([[1e308, 1e308]])}, "gradients"),
])
def test_bad_inputs_name_the_parameter(kwargs, name):
    args = {"gradients": np.ones((3, 1)), "noise_multiplier": 1.0, "steps": 2, "sampling_rate": 0.5, "clip": 1.0,
            "rng": np.random.default_rng(0)} | kwargs
    with pytest.raises((ValueError, TypeError), match=name):
        released_sums(**args)
