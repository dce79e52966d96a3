"""dptutor.reference (the authors' numbers, as package data) and audit.simulated_losses."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dptutor.audit import exact_guess_probabilities, exact_loss, loss_from_counts, simulated_losses
from dptutor.experiments import PAPER_DIMS, PAPER_EPSILONS
from dptutor.mechanisms import AUTHORS_NAMES, MECHANISMS
from dptutor.reference import paper_loss, paper_results, paper_trials


def test_paper_results_has_every_cell_of_the_grid() -> None:
    results = paper_results()
    assert set(results) == set(AUTHORS_NAMES.values())
    for cells in results.values():
        assert set(cells) == {repr(e) for e in PAPER_EPSILONS}
        for row in cells.values():
            assert set(row) == {str(n) for n in PAPER_DIMS}
    results["LaplaceMechanism"]["1.0"]["1"] = -1.0  # a caller's change does not leak into the next call
    assert paper_results()["LaplaceMechanism"]["1.0"]["1"] >= 0.0


def test_paper_loss_reads_the_authors_cells() -> None:
    assert paper_loss("dptext", 0.1, 1) == math.inf
    assert paper_loss("copy_input", 10.0, 128) == math.inf
    assert paper_loss("laplace", 1.0, 2) == paper_results()["LaplaceMechanism"]["1.0"]["2"]
    # The authors' Laplace estimate at n = 1, epsilon = 1 comes from 10**7 trials per dataset; by the
    # delta method its sd is sqrt((1/T) * sum_d (1 - q_d) / q_d), so it lies within 5 sd of the exact loss.
    q = np.exp(exact_guess_probabilities("laplace", 1, 1.0)[:, 1])
    sd = math.sqrt(sum((1 - qd) / (paper_trials(1) * qd) for qd in q))
    assert abs(paper_loss("laplace", 1.0, 1) - exact_loss("laplace", 1, 1.0)) < 5 * sd


def test_paper_trials_rule() -> None:
    assert [paper_trials(n) for n in (1, 2, 8, 16, 17, 32, 128)] == [10**7] * 4 + [10**6] * 3


@pytest.mark.parametrize("call,param", [
    (lambda: paper_loss("gauss", 1.0, 1), "name"),
    (lambda: paper_loss(3, 1.0, 1), "name"),
    (lambda: paper_loss("laplace", 0.3, 1), "epsilon"),
    (lambda: paper_loss("laplace", float("nan"), 1), "epsilon"),
    (lambda: paper_loss("laplace", "1", 1), "epsilon"),
    (lambda: paper_loss("laplace", 1.0, 3), "n"),
    (lambda: paper_loss("laplace", 1.0, 2.0), "n"),
    (lambda: paper_trials(0), "n"),
    (lambda: paper_trials(True), "n"),
])
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises((TypeError, ValueError), match=param):
        call()


@pytest.mark.parametrize("name,n,epsilon,trials", [
    ("laplace", 1, 1.0, 1_000), ("adept", 32, 5.0, 1_000_000), ("dptext", 2, 0.5, 100),
    ("random_output", 8, 1.0, 50), ("copy_input", 1, 1.0, 10),
])
def test_simulated_losses_apply_loss_from_counts_to_binomial_counts(name, n, epsilon, trials) -> None:
    sims = simulated_losses(name, n, epsilon, trials, reps=300, rng=np.random.default_rng(4))
    # The same draws, made by hand: counts of guess 1 are Binomial(trials, q_d).
    q = np.clip(np.exp(exact_guess_probabilities(name, n, epsilon)[:, 1]), 0.0, 1.0)
    ones = np.random.default_rng(4).binomial(trials, q[:, None], size=(2, 300))
    expected = [loss_from_counts([[trials - a, a], [trials - b, b]]) for a, b in ones.T]
    assert sims.tolist() == expected


def test_simulated_losses_scatter_around_the_exact_loss() -> None:
    # ADePT, n = 2, epsilon = 0.1 (footnote 7's cell), T = 10**5: guess 1 attains the maximum by a margin
    # of ~17 sd, so the estimate is ln c_11 - ln c_01, nearly unbiased (O(1/T)), with the delta-method
    # sd below. The mean of 4000 draws has sd sd/sqrt(4000); 5 of those bound it (p ~ 6e-7).
    trials, reps = 100_000, 4_000
    sims = simulated_losses("adept", 2, 0.1, trials, reps, rng=np.random.default_rng(11))
    q = np.exp(exact_guess_probabilities("adept", 2, 0.1)[:, 1])
    sd = math.sqrt(sum((1 - qd) / (trials * qd) for qd in q))
    assert abs(sims.mean() - exact_loss("adept", 2, 0.1)) < 5 * sd / math.sqrt(reps)
    # and the spread is that sd (relative sd of a sample sd: 1/sqrt(2 (reps - 1)), 5 of them)
    assert abs(sims.std(ddof=1) / sd - 1) < 5 / math.sqrt(2 * (reps - 1))


@pytest.mark.parametrize("kwargs,param", [
    (dict(name="gauss"), "name"), (dict(n=0), "n"), (dict(epsilon=-1.0), "epsilon"),
    (dict(epsilon=math.nan), "epsilon"), (dict(trials=0), "trials"), (dict(trials=1e3), "trials"),
    (dict(reps=0), "reps"), (dict(rng=-3), "rng"), (dict(rng="3"), "rng"), (dict(rng=1.5), "rng"),
])
def test_simulated_losses_bad_input(kwargs, param: str) -> None:  # rng may be an int seed (scipy's vocabulary)
    args = dict(name="laplace", n=1, epsilon=1.0, trials=100, reps=10, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises((TypeError, ValueError), match=param):
        simulated_losses(**args)


def test_every_mechanism_can_be_simulated() -> None:
    for name in MECHANISMS:
        sims = simulated_losses(name, 2, 1.0, 1_000, reps=5, rng=np.random.default_rng(1))
        assert sims.shape == (5,) and not np.isnan(sims).any()


def test_simulated_losses_take_a_seed_a_seed_sequence_or_a_generator_alike() -> None:
    by_int = simulated_losses("adept", 2, 0.1, 1000, 50, rng=11)
    by_generator = simulated_losses("adept", 2, 0.1, 1000, 50, rng=np.random.default_rng(11))
    by_sequence = simulated_losses("adept", 2, 0.1, 1000, 50, rng=np.random.SeedSequence(11))
    assert np.array_equal(by_int, by_generator) and np.array_equal(by_int, by_sequence)
