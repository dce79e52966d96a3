"""Hostile inputs to the privacy-loss modules (PLD, amplification, Gaussian and discrete-Gaussian
accounting, ...): extreme but legal parameters that once gave a too-small (optimistic) privacy bound,
ran for minutes, warned, or raised an exception that names no parameter."""

import math

import numpy as np
import pytest
from scipy import special

from dptutor.composition import majority_vote_loss, repeated_laplace_box_loss
from dptutor.approximate_dp import GaussianRelease, gaussian_epsilon, gaussian_privacy_loss, gaussian_tradeoff
from dptutor.discrete_gaussian import discrete_gaussian_delta, discrete_gaussian_epsilon
from dptutor.granular import granular_parameters, granular_reachable
from dptutor.snapping import snapping_loss, snapping_parameters, snapping_pmf, snapping_reachable
from dptutor.dptext import dptext_cdf, dptext_pdf
from dptutor.libraries import (
    DiffprivlibGaussian,
    OpenDPGaussian,
    opendp_integer_gaussian,
    opendp_integer_laplace,
    opendp_laplace_mechanism,
)
from dptutor.amplification import subsampled_epsilon
from dptutor.gaussian import gaussian_delta, gaussian_sigma_analytic
from dptutor.pld import PrivacyLossDistribution, gaussian_composition_epsilon, pld_gaussian
from dptutor.renyi import rdp_subsampled_gaussian

pytestmark = pytest.mark.filterwarnings("error")


def test_subsampled_gaussian_pld_keeps_losses_above_709():
    """sigma = 0.02: the subsampled Gaussian's losses reach ~1500, where expm1 overflowed and the loss
    was capped at ~709 (an epsilon three times too small).  For the "remove" pair,
    epsilon_q(delta) = ln(1 - q + q e^{epsilon_1(delta / q)}) >= epsilon_1(delta / q) + ln q."""
    sigma, q, h = 0.02, 0.5, 1e-2
    lower = pld_gaussian(sigma, grid=h, pessimistic=False).epsilon(1e-5 / q) + math.log(q)
    upper = pld_gaussian(sigma, grid=h).epsilon(1e-5 / q) + math.log(q) + 1e-9
    assert lower > 1400.0
    assert lower <= pld_gaussian(sigma, sampling_probability=q, grid=h).epsilon(1e-5)
    assert pld_gaussian(sigma, sampling_probability=q, grid=h, pessimistic=False).epsilon(1e-5) <= upper
    assert lower <= gaussian_composition_epsilon(sigma, 1, 1e-5, sampling_probability=q, grid=h)


def test_pld_compose_refuses_a_huge_grid_instead_of_running_for_minutes():
    pld = PrivacyLossDistribution(1e-3, 0, np.full(5_000_000, 2e-7))
    with pytest.raises(ValueError, match=r"\bk\b.*coarser grid"):
        pld.compose(2)


@pytest.mark.parametrize(("epsilon", "delta", "sensitivity"), [
    (0.05188872340305859, 2.030318115793132e-09, 1.0),  # the root finder's last bits, on the wrong side
    (0.0015360571628656044, 6.070518994862758e-13, 1.0),
    (0.001790315178530399, 4.02762951417436e-13, 1.0),
    (5.0, 1e-5, 1e-320),  # a subnormal sigma rounded down
    (5.0, 1e-3, 3e-310),
])
def test_analytic_sigma_meets_the_target_delta(epsilon, delta, sensitivity):
    sigma = gaussian_sigma_analytic(epsilon, delta, sensitivity)
    assert gaussian_delta(epsilon, sigma, sensitivity) <= delta
    assert gaussian_delta(epsilon, sigma, sensitivity) == pytest.approx(delta, rel=2.5e-9, abs=0.0) or sensitivity < 1e-300


def test_gaussian_epsilon_is_never_below_the_exact_epsilon():
    """The root finder's answer could sit on the wrong side of the root: delta(epsilon) above the target."""
    rng = np.random.default_rng(0)
    for _ in range(25):
        sigma, delta = 10 ** rng.uniform(-1.5, 1.5), 10 ** rng.uniform(-12, -0.5)
        epsilon = gaussian_epsilon(delta, sigma)
        assert epsilon == 0.0 or gaussian_delta(epsilon, sigma) <= delta
        assert epsilon == pytest.approx(gaussian_epsilon(delta, sigma * 7.0, 7.0), abs=1e-9)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_gaussian_epsilon_with_delta_just_below_the_total_variation(sigma):
    """delta(0+) is the total variation distance; just below it, brentq's bracket [1e-12, hi] had no
    sign change ("f(a) and f(b) must have different signs", naming no parameter)."""
    tv = math.erf(1.0 / sigma / (2.0 * math.sqrt(2.0)))
    epsilon = gaussian_epsilon(tv * (1 - 1e-15), sigma)
    assert 0.0 < epsilon <= 1e-12
    assert gaussian_delta(epsilon, sigma) <= tv * (1 - 1e-15)


def test_gaussian_epsilon_is_not_zero_when_the_total_variation_underflows_in_cdf_differences():
    """mu = 1e-300: Phi(mu/2) - Phi(-mu/2) rounds to 0 <= delta, and epsilon 0 was returned, but the
    total variation, ~4e-301, exceeds delta = 1e-305."""
    try:
        assert gaussian_epsilon(1e-305, 1e300) > 0.0
    except ValueError as exc:
        assert "sigma" in str(exc)
    assert gaussian_epsilon(1e-300, 1e300) == 0.0  # delta above the total variation


@pytest.mark.parametrize("alpha", [1e-17, 1e-300, 5e-324])
def test_gaussian_tradeoff_at_tiny_alpha(alpha):
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu): 1 - alpha rounded to 1, Phi^-1(1) = inf, and
    G_40(1e-17) came out as 1 (perfect privacy) instead of ~1e-218."""
    exact = special.ndtr(special.ndtri(alpha) * -1.0 - 40.0)
    assert gaussian_tradeoff(np.array([alpha]), 40.0)[0] == pytest.approx(exact, rel=1e-9, abs=0.0)
    assert gaussian_tradeoff(np.array([alpha]), 40.0)[0] < 0.1


def test_gaussian_privacy_loss_refuses_a_subnormal_scale():
    with pytest.raises(ValueError, match="sensitivity / sigma"):
        gaussian_privacy_loss(1e300, 1e-10)


@pytest.mark.parametrize(("order", "sigma", "q", "exact"), [
    # exact: the order + 1 terms summed in 60-digit mpmath
    (3, 100.0, 1e-8, 1.5000750025015627e-20),  # was 0.35% too small
    (2, 100.0, 1e-12, 1.0000500016667083e-28),  # was 20 times too large
    (10, 10.0, 1e-8, 5.025083546137798e-18),
    (3, 10.0, 1e-5, 1.5075252146392868e-12),
])
def test_rdp_subsampled_gaussian_keeps_its_digits_when_tiny(order, sigma, q, exact):
    assert rdp_subsampled_gaussian(order, sigma, q) == pytest.approx(exact, rel=1e-9, abs=0.0)


def test_repeated_laplace_box_loss_with_a_tiny_epsilon_is_not_zero():
    """t = 2, epsilon = 1e-300: both log-CDFs are ln(1/2) to the last bit, and their difference
    came out 0; the loss is k (e^(-eps) - e^(-2 eps)) / (2 - e^(-eps)) ~ k epsilon."""
    loss, log_prob = repeated_laplace_box_loss(10**15, 1e-300, 2.0)
    assert loss == pytest.approx(1e-285, rel=1e-12, abs=0.0)
    assert log_prob == pytest.approx(10**15 * math.log(0.5), rel=1e-12)
    # large t: the loss is a difference of two logs of numbers within e^-39 of 1
    assert repeated_laplace_box_loss(1, 1.0, 40.0)[0] == pytest.approx(
        math.log1p(math.exp(-39.0) * -math.expm1(-1.0) / (2.0 - math.exp(-39.0))), rel=1e-12, abs=0.0)


def test_repeated_laplace_box_loss_with_huge_epsilon_and_t_does_not_warn():
    assert repeated_laplace_box_loss(5, 1e308, 1e308) == (0.0, 0.0)
    assert repeated_laplace_box_loss(5, 1e300, 1e300) == (0.0, 0.0)


def test_majority_vote_loss_with_a_huge_epsilon_does_not_warn():
    assert majority_vote_loss(10**6, 1e308) == math.inf  # about 2.5e313: beyond the floats
    assert majority_vote_loss(10, 1e300) == pytest.approx(3e300, rel=1e-12)


def test_discrete_gaussian_delta_refuses_a_sum_of_gibibytes():
    """sigma = 1e6 summed 7.7e7 weights: 1.8 GB and 8 s for one delta (minutes for an epsilon)."""
    with pytest.raises(ValueError, match=r"\bsigma\b"):
        discrete_gaussian_delta(1.0, 10**6)
    assert discrete_gaussian_delta(1.0, 50_000) <= 1e-299  # still summed below the limit


def test_discrete_gaussian_delta_blames_the_sensitivity_when_it_is_the_problem():
    with pytest.raises(ValueError, match=r"\bsensitivity\b"):
        discrete_gaussian_delta(1.0, 1, 2**40)
    with pytest.raises(ValueError, match=r"\bsensitivity\b"):
        discrete_gaussian_epsilon(0.5, 1, 2**40)


def test_granular_reachable_tiny_outputs_with_a_coarse_granularity():
    """r = 16: 5e-324 / 16 underflows to 0, an integer, so 5e-324 was reported reachable (outputs are
    multiples of 16)."""
    params = granular_parameters(1e-13, bits=40)
    assert params.r == 16.0
    reachable = granular_reachable([5e-324, -5e-324, 0.0, -0.0, 16.0, 8.0], params)
    assert reachable.tolist() == [False, False, True, True, True, False]


def test_snapping_exact_pmf_refuses_too_many_outputs_instead_of_running_for_minutes():
    """bound = 1e5 with lambda ~ 1: 1e5 outputs, 20 s of exact arithmetic for one loss (bound = 1e7: hours)."""
    params = snapping_parameters(1.0, bound=1e5)
    for call in (lambda: snapping_pmf(0.0, params), lambda: snapping_loss(params),
                 lambda: snapping_reachable([0.0], 0.0, params)):
        with pytest.raises(ValueError, match=r"\bparams\b"):
            call()


def test_dptext_cdf_and_pdf_when_x_minus_mu_overflows():
    """x = 1e308, mu = -1e308, b = 1e308: x - mu overflows to inf, but (x - mu) / b = 2; the CDF came
    out as 1 and the density as 0."""
    assert dptext_cdf(1e308, -1e308, 1e308) == pytest.approx(1.0 - 0.5 * math.exp(-2.0), rel=1e-14)
    assert dptext_cdf(1e308, -1e308, 1e308, nan="discard") == pytest.approx(-math.expm1(-2.0), rel=1e-14)
    assert dptext_pdf(1e308, -1e308, 1e308) == pytest.approx(0.5 * math.exp(-2.0) / 1e308, rel=1e-14, abs=0.0)
    assert dptext_cdf(-1e308, 1e308, 1e308) == 0.0


@pytest.mark.parametrize("size", [(2, 3), ()])
def test_library_gaussians_name_size_for_a_shape_tuple(size):
    """``(rows,) = check_size(size)`` raised "too many values to unpack", naming nothing."""
    pytest.importorskip("opendp")
    pytest.importorskip("diffprivlib")
    for mechanism in (OpenDPGaussian(2.0), DiffprivlibGaussian("GaussianAnalytic", 0.5, 1e-5, 1.0)):
        with pytest.raises(ValueError, match=r"\bsize\b"):
            mechanism(0, size, np.random.default_rng(0))


def test_library_calls_refuse_hours_of_draws():
    """2^28 draws were accepted: ~20 us each in OpenDP, one Python call each in diffprivlib."""
    pytest.importorskip("opendp")
    for call in (lambda: opendp_integer_laplace(2.0, 2**21), lambda: opendp_integer_gaussian(2.0, 2**21),
                 lambda: OpenDPGaussian(2.0)(0, 2**21, np.random.default_rng(0))):
        with pytest.raises(ValueError, match=r"\bsize\b"):
            call()
    with pytest.raises(ValueError, match=r"\bx\b"):
        opendp_laplace_mechanism(np.zeros((2**21, 1)), 1.0, np.random.default_rng(0))


def test_subsampled_epsilon_tiny_rate_above_the_large_epsilon_switch():
    """epsilon just above 700 with theta = 5e-324: epsilon + ln(theta + (1 - theta) e^-epsilon) cancelled
    to 0, below the value ~5e-20 at epsilon = 700 (not monotone, and far too small)."""
    below = subsampled_epsilon(700.0, 5e-324)
    above = subsampled_epsilon(700.0000001, 5e-324)
    assert below == pytest.approx(5e-324 * math.exp(700.0), rel=1e-6, abs=0.0)
    assert above == pytest.approx(5e-324 * math.exp(700.0000001), rel=1e-6, abs=0.0)
    assert below <= above <= 700.0000001
    assert subsampled_epsilon(800.0, 1e-300) == pytest.approx(800.0 + math.log(1e-300), rel=1e-12)


@pytest.mark.parametrize(("name", "value", "error"), [("grid", "fine", TypeError), ("grid", math.nan, ValueError),
                                                      ("pessimistic", 1, TypeError)])
def test_gaussian_composition_epsilon_checks_its_pld_arguments_for_rdp_too(name, value, error):
    with pytest.raises(error, match=rf"\b{name}\b"):
        gaussian_composition_epsilon(1.0, 10, 1e-5, method="rdp", **{name: value})


@pytest.mark.parametrize(("sigma", "data"), [(1e308, 0.0), (1e307, [1.7e308, -1.7e308])])
def test_gaussian_release_overflow_is_a_value_error(sigma, data):
    """sigma = 1e308: the noise overflowed with a RuntimeWarning and inf outputs."""
    with pytest.raises(ValueError, match=r"\bsigma\b"):
        GaussianRelease(sigma)(data, 100, np.random.default_rng(0))
    assert np.isfinite(GaussianRelease(1e300)(0.0, 100, np.random.default_rng(0))).all()


def test_pld_compose_blames_k_when_the_offsets_overflow():
    with pytest.raises(ValueError, match=r"\bk\b"):
        PrivacyLossDistribution(1.0, 10**9 - 5, [1.0]).compose(2)


@pytest.mark.parametrize(("k", "epsilon", "exact"), [
    # exact: the two binomial tails at p0 = e^(-eps/2) / 2 and 1 - p0 summed in 360-digit mpmath
    (1, 1e-300, 1e-300),
    (3, 1e-12, 1.499999999999625e-12),
    (101, 1e-6, 8.038510966486938e-06),
    (1000, 1e-300, 2.587778579546719e-299),
])
def test_majority_vote_loss_with_a_tiny_epsilon(k, epsilon, exact):
    """p0 and 1 - p0 within 1e-300 of 1/2: the difference of the tails' logs cancelled to 0 (or lost digits)."""
    assert majority_vote_loss(k, epsilon) == pytest.approx(exact, rel=1e-12, abs=0.0)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 10.0])
def test_gaussian_delta_at_epsilon_zero_is_the_total_variation(sigma):
    """Documented for epsilon >= 0, but epsilon = 0 was refused."""
    assert gaussian_delta(0.0, sigma) == pytest.approx(math.erf(1.0 / sigma / (2.0 * math.sqrt(2.0))), rel=1e-12)
    assert gaussian_delta(0.0, sigma) >= gaussian_delta(1e-9, sigma)


def test_pld_refuses_a_pmf_whose_delta_would_allocate_gibibytes():
    """10^8 entries were accepted: every delta then allocated several 800 MB arrays, ~40 times per epsilon."""
    with pytest.raises(ValueError, match=r"\bpmf\b"):
        PrivacyLossDistribution(1e-3, 0, np.full(9_000_000, 1.0 / 9_000_000))
