"""The floating-point-safe mechanisms (snapping, granular Laplace) and numpy's Laplace mechanism:
the mechanism contract, the attack (0% impossible outputs for the fixes), and the sanity check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptutor.audit import estimate_loss
from dptutor.exact import granular_parameters, granular_reachable
from dptutor.floating import snapping_parameters, snapping_reachable
from dptutor.mechanisms import granular_laplace_mechanism, numpy_laplace_mechanism, snapping_mechanism

NEW = [numpy_laplace_mechanism, snapping_mechanism, granular_laplace_mechanism]


@pytest.mark.parametrize("mechanism", NEW)
def test_contract_shape_readonly_seed(mechanism):
    x = np.full((9, 3), 1.0)
    x.setflags(write=False)
    a = mechanism(x, 0.5, np.random.default_rng(1))
    b = mechanism(x, 0.5, np.random.default_rng(1))
    assert a.shape == (9, 3) and a.dtype == np.float64 and np.isfinite(a).all()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mechanism", NEW)
@pytest.mark.parametrize(
    ("x", "epsilon", "rng", "exc", "word"),
    [(np.full((2, 2), np.nan), 1.0, 0, ValueError, "x"), ([[0.0]], 1.0, 0, TypeError, "x"),
     (np.zeros(3), 1.0, 0, ValueError, "x"), (np.zeros((2, 2)), 0.0, 0, ValueError, "epsilon"),
     (np.zeros((2, 2)), np.nan, 0, ValueError, "epsilon"), (np.zeros((2, 2)), "1", 0, TypeError, "epsilon"),
     (np.zeros((2, 2)), 1.0, None, TypeError, "rng")],
)
def test_bad_input_names_the_parameter(mechanism, x, epsilon, rng, exc, word):
    gen = np.random.default_rng(0) if rng == 0 else rng
    with pytest.raises(exc, match=word):
        mechanism(x, epsilon, gen)


def test_keyword_parameters_are_checked():
    with pytest.raises(ValueError, match="bound"):
        snapping_mechanism(np.zeros((2, 1)), 1.0, np.random.default_rng(0), bound=-1.0)
    with pytest.raises(TypeError, match="bits"):
        granular_laplace_mechanism(np.zeros((2, 1)), 1.0, np.random.default_rng(0), bits=2.5)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_attack_finds_no_impossible_output_in_the_fixes(epsilon):
    """Acceptance: 0% impossible outputs, decided exactly, for the fixes (n = 1, inputs 0 and 1).  (The
    third fix, exact discrete Laplace noise on integers, has every integer in its support from any
    input: see tests/library/test_exact.py.)"""
    rng = np.random.default_rng(3)
    zeros, ones = np.zeros((4_000, 1)), np.ones((4_000, 1))
    snap = snapping_parameters(epsilon, 1)
    y0, y1 = snapping_mechanism(zeros, epsilon, rng).ravel(), snapping_mechanism(ones, epsilon, rng).ravel()
    assert snapping_reachable(y0, 1.0, snap).all() and snapping_reachable(y1, 0.0, snap).all()
    gran = granular_parameters(epsilon, 1)
    y0, y1 = granular_laplace_mechanism(zeros, epsilon, rng), granular_laplace_mechanism(ones, epsilon, rng)
    assert granular_reachable(y0, gran).all() and granular_reachable(y1, gran).all()


def test_reachability_checks_have_teeth():
    snap = snapping_parameters(1.0, 1)
    assert not snapping_reachable(np.array([0.5, 1.0, 1e6]), 0.0, snap).any()  # off the grid of 2
    gran = granular_parameters(1.0, 1)
    assert not granular_reachable(np.array([gran.r / 2, math.pi, np.inf]), gran).any()


@pytest.mark.parametrize("mechanism", NEW)
def test_sanity_check_runs_and_stays_within_epsilon(mechanism):
    """The paper's attack: the 95% interval on the loss reaches down to epsilon or below (all three
    are epsilon-DP against this attack, whose exact loss for Laplace noise is ln(2e^{1/2} - 1) ~ 0.83)."""
    res = estimate_loss(mechanism, n=1, epsilon=1.0, trials=50_000, rng=5)
    low, high = res.confidence_interval()
    assert math.isfinite(res.loss)
    assert low <= 1.0
