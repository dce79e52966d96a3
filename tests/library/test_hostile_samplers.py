"""Hostile inputs for the samplers and mechanisms: extreme but legal parameters that used to leak a
numpy warning, a Python exception from inside, a silent inf, a MemoryError or a hang."""

from __future__ import annotations

import contextlib
import math
import signal
from fractions import Fraction

import numpy as np
import pytest

from dptutor import mechanisms
from dptutor.discrete_gaussian import discrete_gaussian_release
from dptutor.distributions import laplace_pdf, sample_laplace
from dptutor.exact import discrete_gaussian_pmf, sample_discrete_laplace
from dptutor.floating import reachable
from dptutor.granular import granular_parameters
from dptutor.snapping import SnappingParameters, snap, snapping_loss, snapping_outputs, snapping_parameters, snapping_reachable

pytestmark = pytest.mark.filterwarnings("error")


@contextlib.contextmanager
def _deadline(seconds: int):
    """Fail (instead of hanging the suite) if the block runs longer than ``seconds``."""
    def expire(*_):
        raise TimeoutError(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


ADDITIVE = ["laplace_mechanism", "adept_mechanism", "dptext_mechanism", "wrong_sensitivity_mechanism",
            "numpy_laplace_mechanism"]


@pytest.mark.parametrize("name", ADDITIVE)
def test_mechanism_overflow_of_x_plus_noise_is_a_value_error(name):
    # A legal epsilon giving a scale near 1e307 and a legal |x| near the float max: x + noise overflows.
    x = np.tile([1.79e308, -1.79e308], (64, 1))
    with pytest.raises(ValueError, match="overflows"):
        getattr(mechanisms, name)(x, 1e-307, np.random.default_rng(0))


def test_add_laplace_noise_huge_scale_is_a_value_error():
    with pytest.raises(ValueError, match=r"\bb\b"):
        mechanisms.add_laplace_noise(np.zeros((4, 2)), 1.7e308, np.random.default_rng(0))


def test_numpy_laplace_mechanism_refuses_a_scale_that_overflows():
    # n / epsilon = inf used to reach rng.laplace and come back as silent +-inf.
    with pytest.raises(ValueError, match="epsilon"):
        mechanisms.numpy_laplace_mechanism(np.zeros((3, 2)), 5e-324, np.random.default_rng(0))


def test_mechanisms_still_fine_at_tiny_legal_epsilon():
    out = mechanisms.laplace_mechanism(np.zeros((3, 2)), 1e-300, np.random.default_rng(0))
    assert np.isfinite(out).all()


def test_discrete_laplace_with_a_tiny_fractional_scale():
    # float(Fraction(1, 2**2000)) is 0.0: the batch sizing divided by it (ZeroDivisionError).
    out = sample_discrete_laplace(Fraction(1, 2**2000), 7, np.random.default_rng(0))
    assert out.shape == (7,) and not out.any()


def test_discrete_gaussian_pmf_at_the_largest_sigma():
    # Used to sum 80 sigma terms: 1.25 TiB at sigma = 2**31 (MemoryError), minutes at 2**20.
    with _deadline(20):
        p = discrete_gaussian_pmf([0, 1, 2**40], 2**31)
    assert p[0] == pytest.approx(1.0 / (math.sqrt(2.0 * math.pi) * 2**31), rel=1e-12)
    assert p[2] == 0.0


def test_discrete_gaussian_pmf_continuous_across_the_normaliser_switch():
    below, above = discrete_gaussian_pmf([0], 1e4)[0], discrete_gaussian_pmf([0], 1e4 * (1 + 2**-40))[0]
    assert above == pytest.approx(below, rel=1e-11)


def test_snapping_outputs_with_a_huge_bound_is_refused():
    params = snapping_parameters(1.0, bound=1e13)  # valid (B < 2**46 lam), yet too many outputs to list
    with pytest.raises(ValueError, match="params"):
        snapping_outputs(params)
    with pytest.raises(ValueError, match="params"):
        snapping_loss(params)


def test_discrete_gaussian_release_output_overflow_is_a_value_error():
    release = discrete_gaussian_release(1.0, 1e-5, 1.0, 2.0**1023)
    with pytest.raises(ValueError, match="granularity"):
        release(0, 50, np.random.default_rng(0))


def test_discrete_gaussian_release_size_tuple_names_size():
    release = discrete_gaussian_release(1.0, 1e-5, 1)
    with pytest.raises(TypeError, match="size"):
        release(0, (2, 2), np.random.default_rng(0))
    assert release(0, 0, np.random.default_rng(0)).shape == (0,)


@pytest.mark.parametrize(("sampler", "expected"), [("numpy", [False, True]), ("textbook", [False, True]),
                                                   ("inverse_cdf", [True, True])])
def test_reachable_signed_zero_with_a_subnormal_scale_terminates(sampler, expected):
    # The run of outputs equal to 0 is ~2**52 long; it used to be walked one index at a time.
    with _deadline(30):
        got = reachable([-0.0, 0.0], 0.0, 5e-324, sampler=sampler)
    assert got.tolist() == expected


@pytest.mark.parametrize("method", ["inverse_cdf", "fast"])
@pytest.mark.parametrize("mu", [1.7e308, np.full(8, 1.7e308)])
def test_sample_laplace_shift_overflow_is_refused(method, mu):
    # The scaling was silenced but the shift by mu was not: a RuntimeWarning escaped.  Draws that can overflow
    # float64 are now refused before sampling, naming b.
    with pytest.raises(ValueError, match="^b is too large"):
        sample_laplace(8, mu, 1e308, rng=np.random.default_rng(0), method=method)


def test_laplace_pdf_with_a_scale_near_the_float_max():
    # 2 b overflowed to inf, so the density came out 0 instead of 1 / (2 b), a subnormal.
    assert laplace_pdf(0.0, 0.0, 1.5e308) == pytest.approx(1.0 / 3e308, rel=1e-6)
    assert laplace_pdf(np.array([0.0]), 0.0, np.array([1.5e308]))[0] > 0.0


def test_granular_parameters_tiny_epsilon_blames_epsilon_not_bits():
    # With bits = 0 the message said "use fewer bits", which is impossible; epsilon is the cause.
    with pytest.raises(ValueError, match="epsilon"):
        granular_parameters(1e-300, 1, 0)


def test_snapping_with_a_huge_epsilon_and_bound():
    # Lambda ~ 2.6e-23 and B = 1e300: B / Lambda is inf, which math.floor turned into an OverflowError,
    # and |y| / Lambda overflowed inside snap (a RuntimeWarning) although the clamp makes the answer exact.
    # snapping_parameters now refuses B > 2**46 Lambda (Mironov's condition), so the parameters are built
    # directly: the samplers must still refuse or clamp them cleanly.
    params = SnappingParameters(epsilon=1e308, n=1, bound=1e300, lam=1.7763568394002508e-23,
                                grid=2.6469779601696886e-23)
    with pytest.raises(ValueError, match="params"):
        snapping_outputs(params)
    with pytest.raises(ValueError, match="params"):
        snapping_reachable([0.5], 0.5, params)
    out = snap(np.array([0.5, 1e300, -1e300]), np.full(3, 0.5), np.array([True, False, True]), params)
    assert out[1] == 1e300 and out[2] == -1e300


@pytest.mark.parametrize("grid", [2.0**-1074, 2.0])
def test_snapping_parameters_grid_must_match_lam(grid):
    # The documented invariant (grid = smallest power of two >= lam) was not checked: a subnormal grid
    # made snap overflow and snapping_outputs raise OverflowError.
    with pytest.raises(ValueError, match="grid"):
        SnappingParameters(epsilon=1.0, n=1, bound=32.0, lam=1.0, grid=grid)


def test_laplace_pdf_and_cdf_where_x_minus_mu_overflows_but_z_does_not():
    # (x - mu) / b with x = 1e308, mu = -1e308, b = 1e308 is z = 2: x - mu overflowed, giving a CDF of 1 and a density of 0
    import warnings

    from dptutor.distributions import laplace_cdf

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(laplace_cdf(1e308, -1e308, 1e308)) == pytest.approx(1 - math.exp(-2) / 2, rel=1e-15)
        assert float(laplace_cdf(-1e308, 1e308, 1e308)) == pytest.approx(math.exp(-2) / 2, rel=1e-15)
        assert float(laplace_pdf(1e308, -1e308, 1e308)) == pytest.approx(math.exp(-2) / 1e308 / 2, rel=1e-12)
