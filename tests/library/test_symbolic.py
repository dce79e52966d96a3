"""Tests for dptutor.symbolic: every derived result is checked two ways,

1. symbolically: sympy simplifies (derived - expected closed form) to 0, and
2. numerically: the derived expression, ``lambdify``-ed, matches scipy.stats (or the numpy
   implementation in dptutor.distributions) on a grid.

Numeric tolerances: lambdify evaluates the same elementary functions in float64 as scipy, so the
results agree to a few ulps of the values involved; rtol = 1e-12 leaves a margin of ~4000 ulps for
the different association orders, and is still far below any formula error (which would be O(1)).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy import stats

from dptutor import distributions as dist
from dptutor.symbolic import (
    check_ppf_equivalences,
    dptext_analysis,
    dptext_expr,
    dptext_law,
    laplace_cdf_derivation,
    laplace_cdf_expr,
    laplace_mechanism_privacy_loss,
    laplace_pdf_expr,
    laplace_ppf_branches,
    laplace_ppf_centered_expr,
    laplace_ppf_sgn_expr,
    privacy_loss_expr,
    symbols,
    theorem_3_2,
    verify_inverse,
)

S = symbols()
x, mu, b, u, v, t, y, eps = S.x, S.mu, S.b, S.u, S.v, S.t, S.y, S.epsilon
HALF = sp.Rational(1, 2)
PARAMS = [(0.0, 1.0), (1.5, 0.5), (-3.0, 4.0)]
RTOL = 1e-12


def zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


def num(expr: sp.Expr, args, *values):
    return np.asarray(sp.lambdify(args, expr, "numpy")(*values), dtype=float)


def test_symbol_assumptions() -> None:
    assert b.is_positive and eps.is_positive and S.Delta.is_positive and u.is_positive
    assert mu.is_real and x.is_real and v.is_real and y.is_real and t.is_real
    assert mu.is_positive is None  # mu is any real number


# ---------------------------------------------------------------------------------------------
# pdf, cdf
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m,s", PARAMS)
def test_pdf(m: float, s: float) -> None:
    assert zero(laplace_pdf_expr() - sp.exp(-sp.Abs(x - mu) / b) / (2 * b))
    grid = np.linspace(m - 20 * s, m + 20 * s, 801)
    np.testing.assert_allclose(num(laplace_pdf_expr(), (x, mu, b), grid, m, s), stats.laplace.pdf(grid, m, s), rtol=RTOL)


def test_cdf_derivation_symbolic() -> None:
    d = laplace_cdf_derivation()
    assert d.total_mass == 1 and d.mass_below_mu == HALF
    assert zero(d.lower - sp.exp((x - mu) / b) / 2)
    assert zero(d.upper - (1 - sp.exp(-(x - mu) / b) / 2))
    # Both branches differentiate back to the pdf, and they meet at x = mu (continuity, value 1/2).
    w = sp.Symbol("w", positive=True)
    assert zero((sp.diff(d.lower, x) - laplace_pdf_expr()).subs(x, mu - w))
    assert zero((sp.diff(d.upper, x) - laplace_pdf_expr()).subs(x, mu + w))
    assert d.lower.subs(x, mu) == HALF and d.upper.subs(x, mu) == HALF
    cdf = laplace_cdf_expr()
    assert isinstance(cdf, sp.Piecewise) and len(cdf.args) == 2


@pytest.mark.parametrize("m,s", PARAMS)
def test_cdf_numeric(m: float, s: float) -> None:
    grid = np.linspace(m - 20 * s, m + 20 * s, 801)
    np.testing.assert_allclose(num(laplace_cdf_expr(), (x, mu, b), grid, m, s), stats.laplace.cdf(grid, m, s), rtol=RTOL)


# ---------------------------------------------------------------------------------------------
# inverse CDF: Eq. 5 solved, Eq. 4, Eq. 7, equivalences, Theorem A.1
# ---------------------------------------------------------------------------------------------

U_GRID = np.concatenate([np.linspace(1e-6, 1 - 1e-6, 1001), [1e-12, 0.5, 1 - 1e-12]])


def test_ppf_branches_symbolic() -> None:
    br = laplace_ppf_branches()
    assert zero(br.lower - (b * sp.log(2 * u) + mu))  # Eq. 5, u < 1/2
    assert zero(br.upper - (mu - b * sp.log(2 * (1 - u))))  # Eq. 5, u >= 1/2
    assert br.ppf.args[0][1] == (u < HALF)


@pytest.mark.parametrize("m,s", PARAMS)
def test_ppf_forms_numeric(m: float, s: float) -> None:
    expected = stats.laplace.ppf(U_GRID, m, s)
    atol = 1e-12 * (abs(m) + s)  # ppf(1/2) = mu: relative tolerance alone is meaningless near 0
    eq5 = laplace_ppf_branches().ppf
    np.testing.assert_allclose(num(eq5, (u, mu, b), U_GRID, m, s), expected, rtol=RTOL, atol=atol)
    np.testing.assert_allclose(num(eq5, (u, mu, b), U_GRID, m, s), dist.laplace_ppf_piecewise(U_GRID, m, s),
                               rtol=RTOL, atol=atol)
    # Eq. 4 and Eq. 7 lambdified literally evaluate 1 - 2|u - 1/2| in float64: that costs up to ~2 eps
    # of absolute error (rounding of u - 1/2 and of the subtraction), which the log turns into an
    # absolute error of up to eps / min(u, 1 - u); times b, with a factor 4 of margin.  (This
    # cancellation is why dist.laplace_ppf evaluates the same formula as log(2 min(u, 1 - u)).)
    eps64 = np.finfo(float).eps
    tol = 4 * s * eps64 / np.minimum(U_GRID, 1 - U_GRID) + RTOL * np.abs(expected) + atol
    assert np.all(np.abs(num(laplace_ppf_sgn_expr(), (u, mu, b), U_GRID, m, s) - expected) <= tol)
    assert np.all(np.abs(num(laplace_ppf_centered_expr(), (v, mu, b), U_GRID - 0.5, m, s) - expected) <= tol)


def test_ppf_equivalences() -> None:
    checks = check_ppf_equivalences()
    assert [c.branch for c in checks] == ["u < 1/2", "u = 1/2", "u > 1/2"]
    assert all(c.holds for c in checks)
    d = sp.Symbol("d", positive=True)
    # On each branch the sgn/abs disappear and all three forms are the same closed form.
    assert zero(checks[0].eq4 - (mu + b * sp.log(1 - 2 * d)))
    assert checks[1].eq4 == mu
    assert zero(checks[2].eq4 - (mu - b * sp.log(1 - 2 * d)))
    # Numerically, at a few d in (0, 1/2), b = 2, mu = 1.
    for c in (checks[0], checks[2]):
        for expr in (c.eq4, c.eq5, c.eq7):
            vals = num(expr, (d, mu, b), np.array([0.1, 0.3, 0.49]), 1.0, 2.0)
            uu = 0.5 - np.array([0.1, 0.3, 0.49]) if c is checks[0] else 0.5 + np.array([0.1, 0.3, 0.49])
            np.testing.assert_allclose(vals, stats.laplace.ppf(uu, 1.0, 2.0), rtol=RTOL)


def test_theorem_a1_inverse() -> None:
    lower, upper = verify_inverse()
    w_pos, w_nn = sp.Symbol("w", positive=True), sp.Symbol("w", nonnegative=True)
    assert lower.f_of_ppf == u and upper.f_of_ppf == u
    assert zero(lower.ppf_of_f - (mu - w_pos)) and zero(upper.ppf_of_f - (mu + w_nn))
    assert zero(lower.ppf_derivative - b / u) and zero(upper.ppf_derivative - b / (1 - u))
    assert lower.ppf_derivative_positive and upper.ppf_derivative_positive
    assert lower.branch_consistent and upper.branch_consistent
    # Numerically: the inverse function theorem, (F^-1)'(u) = 1 / f(F^-1(u)), with scipy.
    for m, s in PARAMS:
        for chk, uu in ((lower, U_GRID[U_GRID < 0.5]), (upper, U_GRID[U_GRID >= 0.5])):
            xx = stats.laplace.ppf(uu, m, s)
            expected = 1.0 / stats.laplace.pdf(xx, m, s)
            got = num(chk.ppf_derivative, (u, mu, b), uu, m, s)
            # ppf then pdf: x carries a few ulps of |mu| + |x - mu| of absolute error, which exp(-|x - mu|/b)
            # turns into a relative error of that over b; 8 eps per unit, plus 8 eps for the arithmetic.
            rel_tol = 8 * np.finfo(float).eps * (1 + (np.abs(xx - m) + abs(m)) / s)
            assert np.all(np.abs(got / expected - 1) <= rel_tol)


# ---------------------------------------------------------------------------------------------
# DPText (Eq. 9), Theorem 3.1, output law
# ---------------------------------------------------------------------------------------------


def test_dptext_expr_is_eq7_formula() -> None:
    assert zero(dptext_expr() - (mu - b * sp.sign(v) * sp.log(1 - 2 * sp.Abs(v))))
    vv = np.linspace(0.0, 0.499, 500)
    np.testing.assert_allclose(num(dptext_expr(), (v, mu, b), vv, 1.0, 2.0), dist.dptext_transform(vv, 1.0, 2.0), rtol=RTOL)


def test_theorem_3_1_symbolic() -> None:
    a = dptext_analysis()
    assert a.increasing_on_lower and a.log_argument_negative and a.real_part_decreasing_on_upper
    assert a.minimum_on_lower_is_mu and a.value_at_zero == mu
    assert zero(a.lower_value - (mu - b * sp.log(1 - 2 * v)))
    assert zero(a.lower_derivative - 2 * b / (1 - 2 * v))
    assert zero(a.log_argument_upper - (1 - 2 * v))
    assert zero(a.upper_imaginary_part + sp.pi * b)  # -sgn(v) * pi * b with sgn(v) = 1
    assert zero(a.upper_real_part - (mu - b * sp.log(2 * v - 1)))
    assert zero(a.upper_real_derivative + 2 * b / (2 * v - 1))
    assert zero(a.upper_value - (mu - b * sp.log(2 * v - 1) - sp.I * sp.pi * b))


def test_theorem_3_1_numeric() -> None:
    a = dptext_analysis()
    m, s = 0.5, 2.0
    lo = np.linspace(0.01, 0.49, 200)
    hi = np.linspace(0.51, 0.99, 200)
    # lower region: the transform equals DPText's numpy implementation, and it increases
    np.testing.assert_allclose(num(a.lower_value, (v, mu, b), lo, m, s), dist.dptext_transform(lo, m, s), rtol=RTOL)
    assert np.all(num(a.lower_derivative, (v, b), lo, s) > 0)
    # upper region: the complex value equals numpy's complex log, whose real part decreases
    complex_eq9 = m - s * np.log((1 - 2 * hi).astype(complex))
    got = sp.lambdify((v, mu, b), a.upper_value, "numpy")(hi, m, s)
    np.testing.assert_allclose(got, complex_eq9, rtol=RTOL)
    assert np.all(np.diff(complex_eq9.real) < 0) and np.allclose(complex_eq9.imag, -np.pi * s)
    assert np.all(num(a.upper_real_derivative, (v, b), hi, s) < 0)


def test_dptext_law_symbolic() -> None:
    law = dptext_law()
    assert law.finite_mass == HALF and law.jump_at_mu_nan_zero == HALF and law.mass_below_mu == 0
    assert zero(law.inverse_on_lower - (1 - sp.exp(-(t - mu) / b)) / 2)
    w = sp.Symbol("w", positive=True)
    above = {t: mu + w}
    assert zero(law.cdf_nan_zero.subs(above) - (1 - sp.exp(-w / b) / 2))
    assert zero(law.cdf_nan_discard.subs(above) - (1 - sp.exp(-w / b)))
    assert zero(law.finite_cdf.subs(above) - (1 - sp.exp(-w / b)) / 2)
    for cdf in (law.cdf_nan_zero, law.cdf_nan_discard, law.finite_cdf):
        assert cdf.subs(t, mu - w) == 0  # never below mu
    # discard is the shifted exponential law (sympy.stats as an independent symbolic oracle)
    from sympy.stats import Exponential, cdf as sstats_cdf

    expo = sstats_cdf(Exponential("E", 1 / b))(w)
    assert zero(law.cdf_nan_discard.subs(above) - expo)
    assert zero(law.pdf_nan_discard.subs(above) - sp.exp(-w / b) / b)
    assert zero(law.pdf_nan_zero.subs(above) - sp.exp(-w / b) / (2 * b))
    # DPText's law is not Laplace: at t = mu - b the Laplace CDF is e^-1 / 2 > 0, DPText's is 0.
    lap_cdf = laplace_cdf_expr().subs(x, mu - b)
    assert sp.simplify(lap_cdf) == sp.exp(-1) / 2 and law.cdf_nan_zero.subs(t, mu - b) == 0


@pytest.mark.parametrize("m,s", PARAMS)
def test_dptext_law_numeric(m: float, s: float) -> None:
    law = dptext_law()
    # atol 1e-15 on the CDFs: near t = mu the lambdified 1 - exp(-(t - mu)/b) cancels, an absolute
    # error of about eps = 2.2e-16 where the value itself tends to 0.
    grid = np.linspace(m - 5 * s, m + 30 * s, 701)
    expo = stats.expon(loc=m, scale=s)
    np.testing.assert_allclose(num(law.cdf_nan_discard, (t, mu, b), grid, m, s), expo.cdf(grid), rtol=RTOL, atol=1e-15)
    zero_cdf = np.where(grid < m, 0.0, 0.5 + 0.5 * expo.cdf(grid))
    np.testing.assert_allclose(num(law.cdf_nan_zero, (t, mu, b), grid, m, s), zero_cdf, rtol=RTOL, atol=1e-15)
    np.testing.assert_allclose(num(law.pdf_nan_discard, (t, mu, b), grid, m, s), expo.pdf(grid), rtol=RTOL, atol=1e-300)
    # NaN -> 0 and the defective "real outputs" CDF carry half the exponential's mass.
    np.testing.assert_allclose(num(law.pdf_nan_zero, (t, mu, b), grid, m, s), 0.5 * expo.pdf(grid), rtol=RTOL, atol=1e-300)
    np.testing.assert_allclose(num(law.finite_cdf, (t, mu, b), grid, m, s), 0.5 * expo.cdf(grid), rtol=RTOL, atol=1e-15)
    above = grid[grid >= m]  # T^-1(t) = P(V <= T^-1(t)) is only meaningful on the support
    np.testing.assert_allclose(num(law.inverse_on_lower, (t, mu, b), above, m, s), 0.5 * expo.cdf(above), rtol=RTOL, atol=1e-15)
    for policy, expr in (("zero", law.cdf_nan_zero), ("discard", law.cdf_nan_discard), ("keep", law.finite_cdf)):
        np.testing.assert_allclose(num(expr, (t, mu, b), grid, m, s), dist.dptext_cdf(grid, m, s, nan=policy), rtol=RTOL, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# Laplace mechanism: privacy loss and the sliding property
# ---------------------------------------------------------------------------------------------


def test_privacy_loss_expr() -> None:
    fx, fxp = sp.Symbol("f_x", real=True), sp.Symbol("f_xp", real=True)
    loss = privacy_loss_expr()
    assert zero(loss - (sp.Abs(y - fxp) - sp.Abs(y - fx)) / b)
    rng = np.random.default_rng(3)
    yy, a, c = rng.normal(size=(3, 500)) * 3
    bb = rng.uniform(0.2, 3.0, size=500)
    expected = np.log(stats.laplace.pdf(yy, a, bb) / stats.laplace.pdf(yy, c, bb))
    # Each scipy density is exp(-|y - f|/b) / (2b) with a relative error of a few ulps of 1 + |y - f|/b;
    # the log turns that into the same absolute error: 8 eps per unit.
    atol = 8 * np.finfo(float).eps * (1 + (np.abs(yy - a) + np.abs(yy - c)) / bb)
    assert np.all(np.abs(num(loss, (y, fx, fxp, b), yy, a, c, bb) - expected) <= atol)


def test_laplace_mechanism_regions_symbolic() -> None:
    proof = laplace_mechanism_privacy_loss()
    assert len(proof.regions) == 6 and all(r.bounded for r in proof.regions)
    assert proof.bound_by_delta_over_b and proof.attained and proof.bounded_by_epsilon
    delta, w, r = (sp.Symbol(n, nonnegative=True) for n in ("delta", "w", "r"))
    losses = {(reg.case, reg.region): reg.loss for reg in proof.regions}
    assert zero(losses[("f(x) <= f(x')", "y below both")] - delta / b)
    assert zero(losses[("f(x) <= f(x')", "y between")] - (r - w) / b)
    assert zero(losses[("f(x) <= f(x')", "y above both")] + delta / b)
    assert zero(losses[("f(x) >= f(x')", "y above both")] - delta / b)
    assert zero(losses[("f(x) >= f(x')", "y below both")] + delta / b)
    slack = sp.Symbol("s", nonnegative=True)
    assert zero(proof.epsilon_gap - eps * slack / S.Delta)


def test_laplace_mechanism_regions_numeric() -> None:
    # Each region's closed form equals the scipy log-density ratio at a point of that region, and
    # the supremum over y of the ratio is |f(x) - f(x')| / b.
    proof = laplace_mechanism_privacy_loss()
    fx_val, bb = 0.3, 0.7
    offsets = {sp.Symbol("delta", nonnegative=True): 0.9, sp.Symbol("w", nonnegative=True): 0.4,
               sp.Symbol("r", nonnegative=True): 1.3}
    for reg in proof.regions:
        subs = {**offsets, sp.Symbol("f_x", real=True): fx_val, b: bb}
        yy = float(reg.y_value.subs(subs))
        fxp_val = float(reg.f_xp_value.subs(subs))
        expected = np.log(stats.laplace.pdf(yy, fx_val, bb) / stats.laplace.pdf(yy, fxp_val, bb))
        assert float(reg.loss.subs(subs)) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert abs(expected) <= abs(fx_val - fxp_val) / bb * (1 + 1e-12)
    ys = np.linspace(-20, 20, 40001)
    ratio = np.log(stats.laplace.pdf(ys, 0.0, bb) / stats.laplace.pdf(ys, 1.0, bb))
    assert ratio.max() == pytest.approx(1.0 / bb, rel=1e-12) and ratio.min() == pytest.approx(-1.0 / bb, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Theorem 3.2
# ---------------------------------------------------------------------------------------------


def test_theorem_3_2_symbolic() -> None:
    th = theorem_3_2()
    assert th.y == sp.Rational(1, 10)
    assert zero(th.density_x - sp.exp(-sp.Rational(1, 10) / b) / b)
    assert zero(th.density_x_nan_zero - sp.exp(-sp.Rational(1, 10) / b) / (2 * b))
    assert th.density_xprime == 0 and th.density_xprime_nan_zero == 0
    assert th.density_x_positive and th.density_xprime_zero
    assert th.privacy_loss == sp.oo and th.violates_dp
    assert th.atom_at_zero_x == HALF and th.atom_at_zero_xprime == 0
    # The correct Laplace mechanism at the same y: (|0.1 - 1| - |0.1 - 0|) / b = 4/(5b); <= epsilon.
    assert zero(th.laplace_loss - sp.Rational(4, 5) / b)
    assert zero(th.laplace_loss_with_b_1_over_eps - sp.Rational(4, 5) * eps)
    assert (eps - th.laplace_loss_with_b_1_over_eps).is_positive


@pytest.mark.parametrize("bb", [0.1, 1.0, 10.0])
def test_theorem_3_2_numeric(bb: float) -> None:
    th = theorem_3_2()
    p_x = float(th.density_x.subs(b, bb))
    assert p_x == pytest.approx(stats.expon(loc=0.0, scale=bb).pdf(0.1), rel=RTOL)
    assert p_x == pytest.approx(float(dist.dptext_pdf(0.1, 0.0, bb, nan="discard")), rel=RTOL)
    p_x0 = float(th.density_x_nan_zero.subs(b, bb))
    assert p_x0 == pytest.approx(0.5 * stats.expon(loc=0.0, scale=bb).pdf(0.1), rel=RTOL)
    assert float(dist.dptext_pdf(0.1, 1.0, bb, nan="discard")) == 0.0 == float(th.density_xprime)
    # The atom under NaN -> 0: empirical P(M(0) = 0) vs 1/2 (binomial test, accept if p > 1e-3) and
    # M(1) never equals 0.
    x0 = dist.sample_dptext(100_000, 0.0, bb, rng=np.random.default_rng(70), nan="zero")
    x1 = dist.sample_dptext(100_000, 1.0, bb, rng=np.random.default_rng(71), nan="zero")
    assert stats.binomtest(int(np.sum(x0 == 0.0)), x0.size, float(th.atom_at_zero_x)).pvalue > 1e-3
    assert np.sum(x1 == 0.0) == 0 == th.atom_at_zero_xprime
    lap = np.log(stats.laplace.pdf(0.1, 0.0, bb) / stats.laplace.pdf(0.1, 1.0, bb))
    assert float(th.laplace_loss.subs(b, bb)) == pytest.approx(lap, rel=1e-9)
