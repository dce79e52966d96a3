"""Hostile inputs for the exact samplers, the floating-point attack, the ziggurat test and the symbolic pdf.

Each test pins a defect that an adversarial probe found: a silently inexact conversion, a size that ran for
hours, a ``chunk`` that exhausted memory, a message that did not name the parameter, a NaN returned.  Where
the unfixed code would run for minutes or hours, the work it would do is replaced by a function that fails
at once, so that these tests stay fast whichever way they go.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from dptutor import distributions, exact, floating, ziggurat
from dptutor.symbolic import laplace_pdf_expr


def _names(message: str, param: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", message) is not None


def _never(*args, **kwargs):
    raise AssertionError("the call should have been refused before doing this work")


pytestmark = pytest.mark.filterwarnings("error")  # every warning is an error here: none may reach a user


# ---------------------------------------------------------------------------------------------
# dptutor.exact
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is a double on this platform")
def test_check_scale_converts_a_long_double_exactly():
    # Used to go through float(): 1/3 in long double was rounded to a double and accepted as that double.
    assert exact.check_scale(np.longdouble(0.5)) == Fraction(1, 2)
    third = np.longdouble(1) / np.longdouble(3)
    assert Fraction(*third.as_integer_ratio()).numerator >= 2**53
    with pytest.raises(ValueError, match="scale"):
        exact.check_scale(third)
    with pytest.raises(ValueError, match="sigma"):
        exact.sample_discrete_gaussian(third, 3, np.random.default_rng(0))


@pytest.mark.parametrize("sampler", [exact.sample_discrete_laplace_python, exact.sample_discrete_gaussian_python])
def test_python_references_refuse_a_size_that_takes_hours(monkeypatch, sampler):
    # One draw at a time in Python (30-150 us each): 2**28 draws used to be accepted, hours of work.
    monkeypatch.setattr(exact, "discrete_laplace_one", _never)  # the work of both
    with pytest.raises(ValueError) as info:
        sampler(3, (2**11, 2**10 + 1), np.random.default_rng(0))
    assert _names(str(info.value), "size")


def test_python_references_still_take_a_legal_size():
    assert exact.sample_discrete_laplace_python(3, (2, 3), np.random.default_rng(0)).shape == (2, 3)
    assert exact.sample_discrete_gaussian_python(2**31, 4, np.random.default_rng(0)).shape == (4,)


@pytest.mark.parametrize("sigma", [2**31, 2.3, Fraction(1, 2**31), Fraction(2**53 - 1, 2**22)])
def test_discrete_gaussian_slow_path_refuses_a_size_that_takes_hours(monkeypatch, sigma):
    # Without an acceptance table every test runs in Python integers (~100 us a draw): 2**28 draws took days.
    monkeypatch.setattr(exact, "gauss_accept", _never)
    monkeypatch.setattr(exact, "sample_discrete_laplace", _never)
    with pytest.raises(ValueError) as info:
        exact.sample_discrete_gaussian(sigma, 2**20 + 1, np.random.default_rng(0))
    assert _names(str(info.value), "size")


def test_discrete_gaussian_fast_path_keeps_large_sizes():
    draws = exact.sample_discrete_gaussian(Fraction(23, 10), 2**20 + 1, np.random.default_rng(0))
    assert draws.shape == (2**20 + 1,)
    assert abs(float(draws.std()) - 2.3) < 0.01


def test_discrete_gaussian_batch_sizing_at_a_huge_sigma():
    # The normaliser was summed over at most 2e6 terms: at sigma = 2**31 it came out ~1000x short, the
    # acceptance estimate was clipped to 0.05, and 20 times too many proposals went through the Python test.
    sig, t = 2.0**31, 2**31 + 1
    lap_norm = (1.0 + math.exp(-1.0 / t)) / -math.expm1(-1.0 / t)
    expected = math.sqrt(2.0 * math.pi) * sig * math.exp(-sig * sig / (2.0 * t * t)) / lap_norm
    assert exact._gauss_acceptance(sig, t) == pytest.approx(expected, rel=1e-9)
    assert exact._gauss_acceptance(sig, t) > 0.5


@pytest.mark.parametrize("scale", [Fraction(2**53 - 2, 2**53 - 1), Fraction(2**53 - 1, 2**29 - 1), Fraction(3, 2**40),
                                   5e-324, Fraction(2**53 - 1, 2**62 + 1)])
def test_discrete_laplace_at_extreme_rational_scales_follows_its_law(scale):
    n = 40_000
    draws = exact.sample_discrete_laplace(scale, n, np.random.default_rng(5))
    r = math.exp(-1.0 / float(scale))
    p0 = (1.0 - r) / (1.0 + r)
    assert abs(float(np.mean(draws == 0)) - p0) <= 5 * math.sqrt(p0 * (1 - p0) / n) + 1e-12
    assert abs(int((draws > 0).sum()) - int((draws < 0).sum())) <= 5 * math.sqrt(n) + 1


# ---------------------------------------------------------------------------------------------
# dptutor.ziggurat and dptutor.floating
# ---------------------------------------------------------------------------------------------


def test_fast_possible_refuses_a_chunk_that_exhausts_memory():
    # chunk = 2**20 with as many outputs allocated 2**20 x 256 x 7 doubles per array (15 GB): MemoryError.
    with pytest.raises(ValueError) as info:
        ziggurat.fast_possible(np.array([0.25, 1.5]), 0.0, 1.0, chunk=2**20)
    assert _names(str(info.value), "chunk")
    assert ziggurat.fast_possible(np.array([0.25, 1.5]), 0.0, 1.0, chunk=4096).shape == (2,)


def test_fast_possible_refuses_too_many_outputs(monkeypatch):
    # ~100 us an output: the 2**28 outputs that check_float_array allows took hours.
    monkeypatch.setattr(ziggurat, "ziggurat_widths", _never)
    with pytest.raises(ValueError) as info:
        ziggurat.fast_possible(np.zeros(ziggurat.MAX_OUTPUTS + 1), 0.0, 1.0)
    assert _names(str(info.value), "y")


def test_reachable_refuses_too_many_outputs(monkeypatch):
    monkeypatch.setattr(floating, "_first_at_least", _never)
    with pytest.raises(ValueError) as info:
        floating.reachable(np.zeros((1 << 22) + 1), 0.0, 1.0)
    assert _names(str(info.value), "y")


@pytest.mark.parametrize("sampler, test, size", [("fast", "ziggurat", 2**16 + 1), ("numpy", "exact", 2**20 + 1),
                                                 ("inverse_cdf", "exact", 2**27)])
def test_attack_refuses_a_size_that_takes_hours(monkeypatch, sampler, test, size):
    # attack accepted 2**27 outputs per location for every test: hours for the exact test, days for the ziggurat one.
    monkeypatch.setattr(floating, "sample_floating_laplace", _never)
    with pytest.raises(ValueError) as info:
        floating.attack(sampler, 1.0, size, rng=np.random.default_rng(0), test=test)
    assert _names(str(info.value), "size")


def test_attack_result_count_above_size_names_size():
    # "impossible0 must be <= 2, got 3" did not say what the 2 was.
    for field in ("impossible0", "impossible1"):
        counts = {"impossible0": 0, "impossible1": 0, field: 3}
        with pytest.raises(ValueError) as info:
            floating.AttackResult("numpy", "exact", 1.0, 0.0, 1.0, size=2, **counts)
        assert _names(str(info.value), "size") and _names(str(info.value), field)


# ---------------------------------------------------------------------------------------------
# dptutor.symbolic
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [sp.nan, sp.oo, -sp.oo, sp.zoo, sp.I, 1 + sp.I, sp.Symbol("w") + sp.oo])
def test_laplace_pdf_expr_refuses_a_non_real_sympy_x(x):
    # sympy nan came back as nan, oo and zoo as a density of 0, I as a complex "density".
    with pytest.raises(ValueError) as info:
        laplace_pdf_expr(x)
    assert _names(str(info.value), "x")


def test_laplace_pdf_expr_keeps_symbolic_and_exact_x():
    mu, b = sp.Symbol("mu", real=True), sp.Symbol("b", positive=True)
    assert laplace_pdf_expr(sp.Rational(1, 3)).subs({mu: sp.Rational(1, 3), b: 1}) == sp.Rational(1, 2)
    z = sp.Symbol("z")
    assert laplace_pdf_expr(z).has(z)


# ---------------------------------------------------------------------------------------------
# numbers past Python's 4300-digit int -> str limit, in error messages
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, param", [
    (lambda: exact.check_scale(Fraction(10**5000)), "scale"),
    (lambda: exact.sample_discrete_laplace(-(10**5000), 3, np.random.default_rng(0)), "scale"),
    (lambda: exact.sample_discrete_gaussian(Fraction(1, 10**5000), 3, np.random.default_rng(0)), "sigma"),
    (lambda: exact.discrete_gaussian_pmf(0, Fraction(2**40, 10**5000)), "sigma"),
    (lambda: laplace_pdf_expr(sp.I * sp.Integer(10) ** 5000), "x"),
])
def test_a_huge_number_in_the_message_still_names_the_parameter(call, param):
    # Formatting the value raised "Exceeds the limit (4300 digits) for integer string conversion": a
    # ValueError, but about Python's printer, not the parameter.
    with pytest.raises(ValueError) as info:
        call()
    assert _names(str(info.value), param)


def test_theorem_3_2_with_a_huge_rational_names_y():
    from dptutor.symbolic import theorem_3_2

    with pytest.raises(ValueError) as info:
        theorem_3_2(sp.Rational(10**5000 + 1, 10**5000))
    assert _names(str(info.value), "y")


# ---------------------------------------------------------------------------------------------
# dptutor.epsilon
# ---------------------------------------------------------------------------------------------


def test_tpr_bound_refuses_a_broadcast_that_exhausts_memory(monkeypatch):
    # Two 2**15-element inputs broadcast to 2**30 rates: MemoryError ("Unable to allocate 8.00 GiB").
    from dptutor.epsilon import tpr_bound

    monkeypatch.setattr(np, "broadcast_arrays", _never)
    with pytest.raises(ValueError) as info:
        tpr_bound(np.full((2**15, 1), 0.1), np.full((1, 2**15), 0.5))
    assert _names(str(info.value), "fpr") and _names(str(info.value), "epsilon")


def test_reachable_walks_each_run_of_signed_zeros_once(monkeypatch):
    # At a subnormal scale every -0.0 / 0.0 walks a run of ~2**52 zeros, 1024 steps each (~0.1 s an output):
    # 10**5 zeros took hours.  Equal doubles (sign bit included) now share one walk.
    calls = []
    textbook = floating._textbook

    def counting(k, loc, scale):
        calls.append(1)
        if len(calls) > 5000:
            raise AssertionError("reachable walks the same run of zeros again and again")
        return textbook(k, loc, scale)

    monkeypatch.setattr(floating, "_textbook", counting)
    y = np.where(np.arange(400) % 2 == 0, -0.0, 0.0)
    got = floating.reachable(y, 0.0, 5e-324, sampler="textbook")
    assert not got[0::2].any() and got[1::2].all()  # u = 1/2 gives +0.0; no u gives -0.0


def test_libm_log_does_not_hold_every_input_as_a_python_float():
    # laplace_from_index(sampler="numpy") made one list of all its inputs as Python floats: 32 bytes each,
    # 8 GiB for the 2**28 indices check_float_array allows.
    import tracemalloc

    a = np.full(1 << 17, 0.5)
    tracemalloc.start()
    try:
        out = floating._libm_log(a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.shape == a.shape and out[0] == math.log(0.5)
    assert peak < 3 * 2**20  # the output (1 MiB) and one chunk, not 2**17 Python floats (~5 MiB)


@pytest.mark.parametrize("scale", [Fraction(1, 3)])
def test_discrete_laplace_outside_the_fast_range_draws_in_bounded_rounds(scale):
    # Scales outside [1, 2^24] drew all their candidates in one round, ~8 arrays of 2 to 3 times the output:
    # 15 GB for the 2^28 draws that check_size allows.
    import tracemalloc

    tracemalloc.start()
    try:
        draws = exact.sample_discrete_laplace(scale, 1 << 22, np.random.default_rng(0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert draws.shape == (1 << 22,)
    assert peak < 3 * draws.nbytes  # the output (32 MiB) and rounds of 2^20 candidates


@pytest.mark.parametrize("make", [lambda: sp.Rational(1, 10**100000), lambda: sp.Rational(10**5000 - 1, 10**5000),
                                  lambda: sp.Float("0.5", 20000)])
def test_theorem_3_2_refuses_numbers_sympy_cannot_handle(make):
    # 1 / 10**100000 failed inside sympy with "Exceeds the limit (4300 digits)"; a float of 10**5 digits took
    # seconds, one of 10**6 digits minutes.
    from dptutor.symbolic import theorem_3_2

    with pytest.raises(ValueError) as info:
        theorem_3_2(make())
    assert _names(str(info.value), "y")


def test_theorem_3_2_keeps_exact_and_long_inputs():
    from dptutor.symbolic import privacy_loss

    assert privacy_loss._check_y(sp.Rational(1, 10**400)) == sp.Rational(1, 10**400)
    assert privacy_loss._check_y(sp.Float("0.25", 300)) == sp.Float("0.25", 300)


# ---------------------------------------------------------------------------------------------
# inverse-CDF samplers: temporaries of the whole output
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("draw", [
    lambda n: distributions.sample_laplace(n, 0.5, 2.0, rng=np.random.default_rng(0), method="inverse_cdf"),
    lambda n: floating.sample_floating_laplace(n, 0.5, 2.0, rng=np.random.default_rng(0), sampler="textbook"),
], ids=["sample_laplace", "sample_floating_laplace"])
def test_inverse_cdf_samplers_work_in_place(draw):
    # Eq. 4 / Eq. 5 on the whole array held ~4 temporaries of its size: 8 GiB for the 2**28 draws allowed.
    import tracemalloc

    tracemalloc.start()
    try:
        out = draw(1 << 19)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.shape == (1 << 19,) and np.isfinite(out).all()
    assert peak < 2 * out.nbytes
