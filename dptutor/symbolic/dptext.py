"""DPText's transform (Eq. 9 with ``v ~ Uni(0, 1)``), Theorem 3.1 and DPText's output law, derived
with sympy (see :mod:`dptutor.symbolic`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from dptutor.symbolic.laplace import HALF, laplace_ppf_centered_expr, nonnegative_symbol, positive_symbol, symbols

__all__ = ["dptext_expr", "dptext_analysis", "dptext_law"]


def dptext_expr() -> sp.Expr:
    """Eq. 9, DPText's transform, ``mu - b sgn(v) ln(1 - 2|v|)`` with ``v ~ Uni(0, 1)`` (Eq. 8).

    Returns
    -------
    sympy.Expr
        Eq. 9 in the symbols ``v``, ``mu`` and ``b``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    return laplace_ppf_centered_expr()


@dataclass(frozen=True)
class DPTextAnalysis:
    """Theorem 3.1: where Eq. 9 is increasing, where it leaves the reals, and how.

    Lower region ``v = 1/2 - w`` and upper region ``v = 1/2 + w``, both with ``0 < w < 1/2``.

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`dptext_analysis`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``dptext_analysis`` derived).
    """

    lower_value: sp.Expr  # g(v) on (0, 1/2)
    lower_derivative: sp.Expr  # dg/dv on (0, 1/2)
    increasing_on_lower: bool  # dg/dv > 0 there (decided with v = 1/2 - w)
    log_argument_upper: sp.Expr  # 1 - 2|v| on (1/2, 1): 1 - 2v
    log_argument_negative: bool  # 1 - 2v = -2w < 0
    upper_value: sp.Expr  # g(v) on (1/2, 1) over the complex numbers: mu - b ln(2v - 1) - i pi b
    upper_imaginary_part: sp.Expr  # -pi b (i.e. -sgn(v) pi b)
    upper_real_part: sp.Expr  # mu - b ln(2v - 1)
    upper_real_derivative: sp.Expr  # d Re g / dv on (1/2, 1)
    real_part_decreasing_on_upper: bool
    value_at_zero: sp.Expr  # g(0) = mu
    minimum_on_lower_is_mu: bool  # g(v) - mu >= 0 on [0, 1/2)


@lru_cache(maxsize=None)
def dptext_analysis() -> DPTextAnalysis:
    """Theorem 3.1, symbolically.

    Returns
    -------
    DPTextAnalysis
        The steps of Theorem 3.1 (the noise is never negative).

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    w = positive_symbol("w")
    g = dptext_expr()
    # (0, 1/2): v = 1/2 - w.  sgn(v) = 1 and |v| = v there; sympy knows v > 0 once v = 1/2 - w with
    # w < 1/2, which it cannot know, so use the positive symbol p = v for this region instead.
    p = positive_symbol("p")
    t_low = sp.simplify(g.subs(s.v, p))  # valid for any p > 0 as a formula; meaningful for p < 1/2
    deriv_low = sp.simplify(sp.diff(t_low, p))  # 2b / (1 - 2p)
    increasing = bool(sp.simplify(deriv_low.subs(p, HALF - w)).is_positive)
    lower_value = t_low.subs(p, s.v)
    lower_derivative = deriv_low.subs(p, s.v)
    # (1/2, 1): v = 1/2 + w.
    v_up = HALF + w
    arg_up = sp.simplify((1 - 2 * sp.Abs(s.v)).subs(s.v, v_up))  # -2w
    t_up = g.subs(s.v, v_up)  # sympy evaluates log(-2w) = log(2w) + i pi: mu - b (log(2w) + i pi)
    im_up = sp.simplify(sp.im(t_up))
    re_up = sp.re(t_up)
    re_in_v = re_up.subs(w, s.v - HALF)  # mu - b log(2v - 1)
    re_deriv = sp.simplify(sp.diff(re_in_v, s.v))
    decreasing = bool(sp.simplify(re_deriv.subs(s.v, v_up)).is_negative)
    at_zero = g.subs(s.v, 0)
    # g(v) - mu = -b ln(1 - 2v) on [0, 1/2): with 1 - 2v = exp(-k), k >= 0, it is b k >= 0.
    k = nonnegative_symbol("k")
    min_ok = bool(sp.simplify((t_low - s.mu).subs(p, (1 - sp.exp(-k)) / 2)).is_nonnegative) and at_zero == s.mu
    return DPTextAnalysis(
        lower_value=lower_value,
        lower_derivative=lower_derivative,
        increasing_on_lower=increasing,
        log_argument_upper=arg_up.subs(w, s.v - HALF),
        log_argument_negative=bool(arg_up.is_negative),
        upper_value=re_in_v + sp.I * im_up,
        upper_imaginary_part=im_up,
        upper_real_part=re_in_v,
        upper_real_derivative=re_deriv,
        real_part_decreasing_on_upper=decreasing,
        value_at_zero=at_zero,
        minimum_on_lower_is_mu=min_ok,
    )


@dataclass(frozen=True)
class DPTextLaw:
    """The law of DPText's output, derived from ``P(g(V) <= t) = P(V <= g^-1(t))`` on [0, 1/2).

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`dptext_law`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``dptext_law`` derived).
    """

    inverse_on_lower: sp.Expr  # v = g^-1(t) for t >= mu
    finite_cdf: sp.Piecewise  # P(W <= t and W finite) (defective, total 1/2)
    finite_mass: sp.Expr  # 1/2
    cdf_nan_zero: sp.Piecewise  # NaN noise -> 0: atom 1/2 at mu plus half an exponential
    cdf_nan_discard: sp.Piecewise  # NaN redrawn: exponential of scale b above mu
    jump_at_mu_nan_zero: sp.Expr  # 1/2
    pdf_nan_zero: sp.Piecewise  # density of the continuous part (t != mu)
    pdf_nan_discard: sp.Piecewise
    mass_below_mu: sp.Expr  # P(W < mu) = F(mu-) = 0: never below mu


@lru_cache(maxsize=None)
def dptext_law() -> DPTextLaw:
    """Derive the output CDFs of DPText (Theorem 3.1's consequence; Fig. 3 of the paper).

    On [0, 1/2) the transform ``g(v) = mu - b ln(1 - 2v)`` is increasing (:func:`dptext_analysis`), so
    for ``t >= mu``, ``{g(V) <= t} = {V <= g^-1(t)}`` (Eq. 16) and ``P(V <= a) = a`` (Eq. 13).  The
    values ``v > 1/2`` give NaN and never satisfy ``W <= t``; ``W >= mu`` always, so the CDF is 0 below
    ``mu``.

    Returns
    -------
    DPTextLaw
        DPText's output CDF and density, and their checks.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    p = positive_symbol("p")
    t_low = sp.simplify(dptext_expr().subs(s.v, p))
    (inv,) = sp.solve(sp.Eq(t_low, s.t), p)
    inv = sp.simplify(inv)
    finite_part = inv  # P(V <= inv) = inv, V ~ Uni(0, 1) (Eq. 13)
    finite_mass = sp.limit(finite_part, s.t, sp.oo)

    def above_mu(expr: sp.Expr) -> sp.Piecewise:  # every law here is 0 below mu
        return sp.Piecewise((0, s.t < s.mu), (expr, True))

    finite_cdf = above_mu(finite_part)
    nan_mass = 1 - finite_mass  # P(V > 1/2)
    cdf_zero_above = sp.simplify(nan_mass + finite_part)
    cdf_discard_above = sp.simplify(finite_part / finite_mass)
    cdf_zero = above_mu(cdf_zero_above)
    cdf_discard = above_mu(cdf_discard_above)
    h = positive_symbol("h")  # F(mu-) = P(W < mu): the left limit along t = mu - h, h -> 0+
    below_mu = sp.limit(cdf_zero.subs(s.t, s.mu - h), h, 0, "+")
    jump = sp.simplify(cdf_zero.subs(s.t, s.mu) - below_mu)  # F(mu) - F(mu-)
    pdf_zero = above_mu(sp.simplify(sp.diff(cdf_zero_above, s.t)))
    pdf_discard = above_mu(sp.simplify(sp.diff(cdf_discard_above, s.t)))
    return DPTextLaw(
        inverse_on_lower=inv,
        finite_cdf=finite_cdf,
        finite_mass=finite_mass,
        cdf_nan_zero=cdf_zero,
        cdf_nan_discard=cdf_discard,
        jump_at_mu_nan_zero=jump,
        pdf_nan_zero=pdf_zero,
        pdf_nan_discard=pdf_discard,
        mass_below_mu=below_mu,
    )
