"""Hostile inputs, round 4, for the accounts: composition, the PLD and the audit limits (helper-54).

Each test failed on the modules before the fix: a ``MemoryError`` or an ``OverflowError`` where a
``ValueError`` naming the parameter was due, a silent ``inf`` from the PLD for a small delta, and an overflow
warning from summing a probability vector before its entries were checked.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest

from dptutor._validate import MAX_ELEMENTS
from dptutor.audit.limits import nearest_pair, reach_probability
from dptutor.composition import Budget, repeated_laplace_box_loss
from dptutor.pld import PrivacyLossDistribution, gaussian_composition_epsilon


def test_split_refuses_more_shares_than_the_element_limit():
    # old: 10**9 was allowed and built a list of 10**9 floats (MemoryError, or the machine's memory exhausted)
    for k in (10**9, MAX_ELEMENTS + 1):
        with pytest.raises(ValueError, match="k must be <="):
            Budget(1.0).split(k)
    assert Budget(1.0).split(4) == [0.25] * 4


def test_budget_overspent_beyond_the_largest_double_is_a_value_error():
    # old: OverflowError from float() of the exact sum 2e308 in the error message
    with pytest.raises(ValueError, match="spent adds up to more than the largest double"):
        Budget(1.0, spent=(1e308, 1e308))
    with pytest.raises(ValueError, match="spent adds up to 1.25"):
        Budget(1.0, spent=(0.75, 0.5))


def _box_loss_exact(k: int, eps: float, t: float) -> mpmath.mpf:
    with mpmath.workprec(3000):  # subnormal epsilon times a huge t: far beyond a double's range and precision
        e, x = mpmath.mpf(eps), mpmath.mpf(t)

        def cdf(y: mpmath.mpf) -> mpmath.mpf:
            return 1 - mpmath.exp(-y * e) / 2 if y >= 0 else mpmath.exp(y * e) / 2

        return k * (mpmath.log(cdf(x)) - mpmath.log(cdf(x - 1)))


@pytest.mark.parametrize("k, eps, t", [(3, 5e-324, 1.7e308), (1, 1.5e-323, 1.7976931348623157e308), (2, 1e-300, 1e308)])
def test_box_loss_with_a_threshold_near_the_largest_double(k, eps, t):
    # old: 4 (t - 1) overflowed to inf before the product with epsilon: OverflowError from Fraction(inf)
    loss, log_prob = repeated_laplace_box_loss(k, eps, t=t)
    assert math.isfinite(loss) and math.isfinite(log_prob)
    with mpmath.workprec(3000):
        assert mpmath.mpf(loss) >= _box_loss_exact(k, eps, t)  # outward: never below the exact loss
    assert loss <= max(2 * k * eps, 1e-300)


def test_pld_epsilon_is_finite_below_the_old_fixed_tail():
    # old: the tail truncated per step was fixed at 1e-15, so delta = 3e-15 gave inf (RDP: 15.147)
    value = gaussian_composition_epsilon(1.0, 3, 3e-15)
    exact = 14.638794298406241  # the Gaussian with sigma / sqrt(3), by bisection in mpmath
    assert exact <= value <= gaussian_composition_epsilon(1.0, 3, 3e-15, method="rdp")
    assert value <= exact + 0.1
    assert gaussian_composition_epsilon(1.0, 3, 3e-15, pessimistic=False) <= exact
    # k = 1 needs no FFT: a delta far below the old tail is resolved too (exact 15.247865...)
    assert 15.2478 <= gaussian_composition_epsilon(1.0, 1, 1e-50) <= 15.2481


def test_pld_epsilon_at_usual_deltas_is_unchanged():
    # the tail stays 1e-15 for delta >= 1e-12: the values of the module before the fix, to the bit
    assert gaussian_composition_epsilon(1.0, 3, 1e-5) == 8.38556892807241
    assert gaussian_composition_epsilon(0.8, 100, 1e-5, sampling_probability=0.01) == 1.515837880589579
    assert gaussian_composition_epsilon(2.0, 1, 1e-12) == 3.4491192278470946


def test_pld_refuses_a_delta_below_its_resolution():
    # old: inf, silently; the FFT's round-off bound (about 1e-16 per convolution) makes such a delta unreachable
    with pytest.raises(ValueError, match=r"delta = 1e-16 .*method='rdp'"):
        gaussian_composition_epsilon(1.0, 3, 1e-16)
    assert math.isfinite(gaussian_composition_epsilon(1.0, 3, 1e-16, method="rdp"))


def test_pmf_entries_above_one_are_refused_before_the_sum():
    # old: RuntimeWarning "overflow encountered in reduce" from pmf.sum() before any range check
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="pmf must hold probabilities in"):
            PrivacyLossDistribution(0.5, -1, np.array([1e308, 1e308]))
        with pytest.raises(ValueError, match="pmf must hold probabilities in"):
            PrivacyLossDistribution(0.5, 0, np.array([1.5, 0.0]))
        # an entry rounded outward an ulp above 1 (as pld_gaussian's first cell can be) is still a probability
        assert PrivacyLossDistribution(0.5, 0, np.array([1.0000000000000002])).infinity_mass == 0.0


@pytest.mark.parametrize("bad", ["p", "q"])
def test_audit_limit_laws_above_one_are_refused_before_the_sum(bad):
    huge, good = [1e308, 1e308], [0.3, 0.7]
    p, q = (huge, good) if bad == "p" else (good, huge)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"{bad} must hold probabilities in"):
            nearest_pair(p, q, 0.5)
        with pytest.raises(ValueError, match=f"{bad} must hold probabilities in"):
            reach_probability(p, q, 10, 0.5)
    assert np.array_equal(nearest_pair([0.5, 0.5], [0.25, 0.75], 10.0)[0], [0.5, 0.5])  # valid laws still pass
