"""Symbolic (sympy) derivations behind the book: Laplace CDF and inverse CDF, Theorem A.1,
DPText's transform (Theorem 3.1 and its output law), the Laplace mechanism's privacy loss, and
Theorem 3.2.  Equation numbers refer to Habernal (ACL 2022).

Every function *derives* its result with sympy (``integrate``, ``solve``, ``diff``, substitution and
``simplify``) instead of typing the answer, and returns sympy objects, or small frozen dataclasses of
them, for the chapters to display and the tests to check.

Assumption trick used throughout: sympy simplifies ``Abs`` and ``sign`` only when it knows the sign of
the argument, so a branch such as ``u < 1/2`` is handled by writing ``u = 1/2 - d`` with a *positive*
symbol ``d``; then ``sign(u - 1/2)`` becomes ``-1`` and ``|u - 1/2|`` becomes ``d`` by themselves.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from dptutor._validate import check_real, is_bool

__all__ = [
    "Symbols",
    "symbols",
    "laplace_pdf_expr",
    "laplace_cdf_expr",
    "laplace_cdf_derivation",
    "laplace_ppf_branches",
    "laplace_ppf_sgn_expr",
    "laplace_ppf_centered_expr",
    "check_ppf_equivalences",
    "verify_inverse",
    "dptext_expr",
    "dptext_analysis",
    "dptext_law",
    "privacy_loss_expr",
    "laplace_mechanism_privacy_loss",
    "theorem_3_2",
]

HALF = sp.Rational(1, 2)


# ---------------------------------------------------------------------------------------------
# symbols
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Symbols:
    """The standard symbols, with the assumptions the derivations rely on."""

    x: sp.Symbol  # a real value (argument of pdf/cdf)
    mu: sp.Symbol  # location, real
    b: sp.Symbol  # scale, positive
    u: sp.Symbol  # Uni(0, 1) variable, positive (u < 1 is handled by substitution)
    v: sp.Symbol  # Uni(-1/2, 1/2) (Eq. 7) or Uni(0, 1) (Eq. 8-9) variable, real
    epsilon: sp.Symbol  # privacy budget, positive
    y: sp.Symbol  # an output of a mechanism, real
    t: sp.Symbol  # a threshold for a CDF, real
    Delta: sp.Symbol  # sensitivity, positive

    def __post_init__(self) -> None:
        for field, value in vars(self).items():
            if not isinstance(value, sp.Symbol):
                raise TypeError(f"{field} must be a sympy Symbol, got {type(value).__name__}")


@lru_cache(maxsize=None)
def symbols() -> Symbols:
    """Return the standard symbols ``x, mu, b, u, v, epsilon`` (and ``y, t, Delta``)."""
    return Symbols(
        x=sp.Symbol("x", real=True),
        mu=sp.Symbol("mu", real=True),
        b=sp.Symbol("b", positive=True),
        u=sp.Symbol("u", positive=True),
        v=sp.Symbol("v", real=True),
        epsilon=sp.Symbol("epsilon", positive=True),
        y=sp.Symbol("y", real=True),
        t=sp.Symbol("t", real=True),
        Delta=sp.Symbol("Delta", positive=True),
    )


def _pos(name: str) -> sp.Symbol:
    return sp.Symbol(name, positive=True)


def _nonneg(name: str) -> sp.Symbol:
    return sp.Symbol(name, nonnegative=True)


# ---------------------------------------------------------------------------------------------
# Laplace pdf and cdf
# ---------------------------------------------------------------------------------------------


def laplace_pdf_expr(x: sp.Expr | None = None) -> sp.Expr:
    """The Laplace density ``exp(-|x - mu|/b) / (2b)`` (the recitation's PDF)."""
    s = symbols()
    if x is None:
        x = s.x
    elif not isinstance(x, sp.Expr):
        x = sp.Float(check_real(x, "x")) if not isinstance(x, numbers.Integral) or is_bool(x) else sp.Integer(int(x))
    return sp.exp(-sp.Abs(x - s.mu) / s.b) / (2 * s.b)


@dataclass(frozen=True)
class CdfDerivation:
    """The pieces of the CDF derivation, for display."""

    total_mass: sp.Expr  # integral of the pdf over the real line (= 1)
    mass_below_mu: sp.Expr  # integral up to mu (= 1/2)
    lower: sp.Expr  # F(x) for x < mu
    upper: sp.Expr  # F(x) for x >= mu
    cdf: sp.Piecewise


@lru_cache(maxsize=None)
def laplace_cdf_derivation() -> CdfDerivation:
    """Integrate the pdf on each side of ``mu``.

    Below ``mu`` substitute ``s = mu - w`` (``w > 0``), above ``s = mu + w``: then ``|s - mu| = w``
    and sympy integrates plain exponentials.
    ``F(x) = int_{mu-x}^{oo} h(mu - w) dw`` for ``x < mu`` and
    ``F(x) = int_0^{oo} h(mu - w) dw + int_0^{x-mu} h(mu + w) dw`` for ``x >= mu``.
    """
    s = symbols()
    w = _pos("w")
    left = laplace_pdf_expr(s.mu - w)  # density at mu - w: exp(-w/b)/(2b)
    right = laplace_pdf_expr(s.mu + w)
    mass_below = sp.integrate(left, (w, 0, sp.oo))
    total = sp.simplify(mass_below + sp.integrate(right, (w, 0, sp.oo)))
    lower = sp.simplify(sp.integrate(left, (w, s.mu - s.x, sp.oo)))
    upper = sp.simplify(mass_below + sp.integrate(right, (w, 0, s.x - s.mu)))
    cdf = sp.Piecewise((lower, s.x < s.mu), (upper, True))
    return CdfDerivation(total_mass=total, mass_below_mu=mass_below, lower=lower, upper=upper, cdf=cdf)


def laplace_cdf_expr() -> sp.Piecewise:
    """The Laplace CDF as a ``Piecewise`` (``x < mu`` and ``x >= mu``), obtained by integration."""
    return laplace_cdf_derivation().cdf


# ---------------------------------------------------------------------------------------------
# inverse CDF: Eq. 5 (solved), Eq. 4 and Eq. 7 (the paper's forms), and their equivalence
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PpfBranches:
    """Eq. 5 derived by solving ``F(x) = u`` on each branch of the CDF."""

    lower: sp.Expr  # x = F^-1(u) for u < 1/2
    upper: sp.Expr  # x = F^-1(u) for u >= 1/2
    ppf: sp.Piecewise


@lru_cache(maxsize=None)
def laplace_ppf_branches() -> PpfBranches:
    """Solve ``F(x) = u`` on each branch (Eq. 5).

    With ``z = (x - mu)/b``, the lower branch reads ``exp(z)/2 = u`` and the upper branch
    ``1 - exp(-z)/2 = u``; on the upper branch we write ``u = 1 - q`` with ``q > 0`` so that sympy
    returns the real logarithm.  Then ``x = mu + b z``.
    """
    s = symbols()
    d = laplace_cdf_derivation()
    z = sp.Symbol("z", real=True)
    q = _pos("q")
    lower_in_z = sp.simplify(d.lower.subs(s.x, s.mu + s.b * z))
    upper_in_z = sp.simplify(d.upper.subs(s.x, s.mu + s.b * z))
    (z_low,) = sp.solve(sp.Eq(lower_in_z, s.u), z)
    (z_up,) = sp.solve(sp.Eq(upper_in_z, 1 - q), z)
    # sympy returns log(1/(2q)); rewrite z = -ln(exp(-z)) to get the paper's -ln(2q).
    z_up = -sp.log(sp.simplify(sp.exp(-z_up)))
    lower = s.mu + s.b * z_low
    upper = s.mu + s.b * z_up.subs(q, 1 - s.u)
    return PpfBranches(lower=lower, upper=upper, ppf=sp.Piecewise((lower, s.u < HALF), (upper, True)))


def laplace_ppf_sgn_expr() -> sp.Expr:
    """Eq. 4: ``mu - b sgn(u - 1/2) ln(1 - 2|u - 1/2|)``."""
    s = symbols()
    return s.mu - s.b * sp.sign(s.u - HALF) * sp.log(1 - 2 * sp.Abs(s.u - HALF))


def laplace_ppf_centered_expr() -> sp.Expr:
    """Eq. 7: ``mu - b sgn(v) ln(1 - 2|v|)`` for ``v ~ Uni(-1/2, 1/2)``."""
    s = symbols()
    return s.mu - s.b * sp.sign(s.v) * sp.log(1 - 2 * sp.Abs(s.v))


@dataclass(frozen=True)
class PpfEquivalence:
    """One branch of the proof that Eq. 4, Eq. 5 and Eq. 7 (with v = u - 1/2) coincide on (0, 1)."""

    branch: str  # "u < 1/2", "u = 1/2" or "u > 1/2"
    substitution: sp.Expr  # u written with the positive symbol d
    eq4: sp.Expr
    eq5: sp.Expr
    eq7: sp.Expr
    eq4_minus_eq5: sp.Expr  # simplified, 0
    eq7_minus_eq4: sp.Expr  # simplified, 0

    @property
    def holds(self) -> bool:
        return self.eq4_minus_eq5 == 0 and self.eq7_minus_eq4 == 0


@lru_cache(maxsize=None)
def check_ppf_equivalences() -> tuple[PpfEquivalence, ...]:
    """Prove Eq. 4 == Eq. 5 and Eq. 7 (``v = u - 1/2``) == Eq. 4 on (0, 1), branch by branch.

    ``u < 1/2``: ``u = 1/2 - d`` with ``0 < d < 1/2``; ``u > 1/2``: ``u = 1/2 + d``; and ``u = 1/2``.
    On each branch ``sgn`` and ``|.|`` evaluate by themselves and the differences simplify to 0.
    """
    s = symbols()
    d = _pos("d")
    eq4 = laplace_ppf_sgn_expr()
    eq7 = laplace_ppf_centered_expr().subs(s.v, s.u - HALF)
    br = laplace_ppf_branches()
    cases = (("u < 1/2", HALF - d, br.lower), ("u = 1/2", HALF, br.upper), ("u > 1/2", HALF + d, br.upper))
    out = []
    for name, u_val, eq5_branch in cases:
        e4 = sp.simplify(eq4.subs(s.u, u_val))
        e5 = sp.simplify(eq5_branch.subs(s.u, u_val))
        e7 = sp.simplify(eq7.subs(s.u, u_val))
        out.append(
            PpfEquivalence(
                branch=name,
                substitution=u_val,
                eq4=e4,
                eq5=e5,
                eq7=e7,
                eq4_minus_eq5=sp.simplify(sp.expand_log(e4 - e5, force=True)),
                eq7_minus_eq4=sp.simplify(sp.expand_log(e7 - e4, force=True)),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class InverseCheck:
    """Theorem A.1's key facts for the Laplace CDF, branch by branch."""

    branch: str
    f_of_ppf: sp.Expr  # F(F^-1(u)), simplified: u
    ppf_of_f: sp.Expr  # F^-1(F(x)), simplified: x
    ppf_derivative: sp.Expr  # d F^-1 / du: positive, so F^-1 is increasing (Eq. 15-16)
    ppf_derivative_positive: bool
    branch_consistent: bool  # F^-1 maps the u-branch into the matching x-branch (x < mu iff u < 1/2)


@lru_cache(maxsize=None)
def verify_inverse() -> tuple[InverseCheck, ...]:
    """Theorem A.1 for the Laplace law: ``F(F^-1(u)) = u`` and ``F^-1(F(x)) = x`` on each branch,
    ``F^-1`` is strictly increasing, and each branch of ``F^-1`` lands in the matching branch of ``F``.

    Parametrisations (all new symbols positive or non-negative): lower branch ``x = mu - w``
    (``w > 0``) and ``u = exp(-k)/2`` (``k > 0``, i.e. ``0 < u < 1/2``); upper branch ``x = mu + w``
    (``w >= 0``) and ``u = 1 - exp(-k)/2`` (``k >= 0``, i.e. ``1/2 <= u < 1``).
    """
    s = symbols()
    cdf = laplace_cdf_derivation()
    br = laplace_ppf_branches()
    w_pos, w_nn, k_pos, k_nn = _pos("w"), _nonneg("w"), _pos("k"), _nonneg("k")
    out = []
    for name, ppf_b, f_b, x_val, u_val, x_side in (
        ("u < 1/2 (x < mu)", br.lower, cdf.lower, s.mu - w_pos, sp.exp(-k_pos) / 2, "negative"),
        ("u >= 1/2 (x >= mu)", br.upper, cdf.upper, s.mu + w_nn, 1 - sp.exp(-k_nn) / 2, "nonnegative"),
    ):
        f_of_ppf = sp.simplify(f_b.subs(s.x, ppf_b))
        ppf_of_f = sp.simplify(ppf_b.subs(s.u, f_b.subs(s.x, x_val)))
        deriv = sp.simplify(sp.diff(ppf_b, s.u))
        deriv_positive = bool(sp.simplify(deriv.subs(s.u, u_val)).is_positive)
        x_minus_mu = sp.simplify(ppf_b.subs(s.u, u_val) - s.mu)
        consistent = bool(getattr(x_minus_mu, f"is_{x_side}"))
        out.append(
            InverseCheck(
                branch=name,
                f_of_ppf=f_of_ppf,
                ppf_of_f=ppf_of_f,
                ppf_derivative=deriv,
                ppf_derivative_positive=deriv_positive,
                branch_consistent=consistent,
            )
        )
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# DPText: Eq. 9 with v ~ Uni(0, 1) (Theorem 3.1) and its output law
# ---------------------------------------------------------------------------------------------


def dptext_expr() -> sp.Expr:
    """Eq. 9, DPText's transform, ``mu - b sgn(v) ln(1 - 2|v|)`` with ``v ~ Uni(0, 1)`` (Eq. 8)."""
    return laplace_ppf_centered_expr()


@dataclass(frozen=True)
class DPTextAnalysis:
    """Theorem 3.1: where Eq. 9 is increasing, where it leaves the reals, and how.

    Lower region ``v = 1/2 - w`` and upper region ``v = 1/2 + w``, both with ``0 < w < 1/2``.
    """

    lower_value: sp.Expr  # T(v) on (0, 1/2)
    lower_derivative: sp.Expr  # dT/dv on (0, 1/2)
    increasing_on_lower: bool  # dT/dv > 0 there (decided with v = 1/2 - w)
    log_argument_upper: sp.Expr  # 1 - 2|v| on (1/2, 1): 1 - 2v
    log_argument_negative: bool  # 1 - 2v = -2w < 0
    upper_value: sp.Expr  # T(v) on (1/2, 1) over the complex numbers: mu - b ln(2v - 1) - i pi b
    upper_imaginary_part: sp.Expr  # -pi b (i.e. -sgn(v) pi b)
    upper_real_part: sp.Expr  # mu - b ln(2v - 1)
    upper_real_derivative: sp.Expr  # d Re T / dv on (1/2, 1)
    real_part_decreasing_on_upper: bool
    value_at_zero: sp.Expr  # T(0) = mu
    minimum_on_lower_is_mu: bool  # T(v) - mu >= 0 on [0, 1/2)


@lru_cache(maxsize=None)
def dptext_analysis() -> DPTextAnalysis:
    """Theorem 3.1, symbolically."""
    s = symbols()
    w = _pos("w")
    T = dptext_expr()
    # (0, 1/2): v = 1/2 - w.  sgn(v) = 1 and |v| = v there; sympy knows v > 0 once v = 1/2 - w with
    # w < 1/2, which it cannot know, so use the positive symbol p = v for this region instead.
    p = _pos("p")
    t_low = sp.simplify(T.subs(s.v, p))  # valid for any p > 0 as a formula; meaningful for p < 1/2
    deriv_low = sp.simplify(sp.diff(t_low, p))  # 2b / (1 - 2p)
    increasing = bool(sp.simplify(deriv_low.subs(p, HALF - w)).is_positive)
    lower_value = t_low.subs(p, s.v)
    lower_derivative = deriv_low.subs(p, s.v)
    # (1/2, 1): v = 1/2 + w.
    v_up = HALF + w
    arg_up = sp.simplify((1 - 2 * sp.Abs(s.v)).subs(s.v, v_up))  # -2w
    t_up = T.subs(s.v, v_up)  # sympy evaluates log(-2w) = log(2w) + i pi: mu - b (log(2w) + i pi)
    im_up = sp.simplify(sp.im(t_up))
    re_up = sp.re(t_up)
    re_in_v = re_up.subs(w, s.v - HALF)  # mu - b log(2v - 1)
    re_deriv = sp.simplify(sp.diff(re_in_v, s.v))
    decreasing = bool(sp.simplify(re_deriv.subs(s.v, v_up)).is_negative)
    at_zero = T.subs(s.v, 0)
    # T(v) - mu = -b ln(1 - 2v) on [0, 1/2): with 1 - 2v = exp(-k), k >= 0, it is b k >= 0.
    k = _nonneg("k")
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
    """The law of DPText's output, derived from ``P(T(V) <= t) = P(V <= T^-1(t))`` on [0, 1/2)."""

    inverse_on_lower: sp.Expr  # v = T^-1(t) for t >= mu
    finite_cdf: sp.Piecewise  # P(T <= t and T finite) (defective, total 1/2)
    finite_mass: sp.Expr  # 1/2
    cdf_nan_zero: sp.Piecewise  # NaN noise -> 0: atom 1/2 at mu plus half an exponential
    cdf_nan_discard: sp.Piecewise  # NaN redrawn: exponential of scale b above mu
    jump_at_mu_nan_zero: sp.Expr  # 1/2
    pdf_nan_zero: sp.Piecewise  # density of the continuous part (t != mu)
    pdf_nan_discard: sp.Piecewise
    mass_below_mu: sp.Expr  # P(T < mu) = F(mu-) = 0: never below mu


@lru_cache(maxsize=None)
def dptext_law() -> DPTextLaw:
    """Derive the output CDFs of DPText (Theorem 3.1's consequence; Fig. 3 of the paper).

    On [0, 1/2) the transform ``T(v) = mu - b ln(1 - 2v)`` is increasing (:func:`dptext_analysis`), so
    for ``t >= mu``, ``{T(V) <= t} = {V <= T^-1(t)}`` (Eq. 16) and ``P(V <= a) = a`` (Eq. 13).  The
    values ``v > 1/2`` give NaN and never satisfy ``T <= t``; ``T >= mu`` always, so the CDF is 0 below
    ``mu``.
    """
    s = symbols()
    p = _pos("p")
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
    h = _pos("h")  # F(mu-) = P(T < mu): the left limit along t = mu - h, h -> 0+
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


# ---------------------------------------------------------------------------------------------
# the Laplace mechanism's privacy loss (recitation's "sliding property")
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _query_symbols() -> tuple[sp.Symbol, sp.Symbol]:
    return sp.Symbol("f_x", real=True), sp.Symbol("f_xp", real=True)


def privacy_loss_expr() -> sp.Expr:
    """``ln(h(y - f(x)) / h(y - f(x')))`` for the Lap(b) density ``h``, simplified to
    ``(|y - f(x')| - |y - f(x)|) / b``.  Symbols: ``y``, ``f_x``, ``f_xp``, ``b``."""
    s = symbols()
    fx, fxp = _query_symbols()
    h = lambda z: sp.exp(-sp.Abs(z) / s.b) / (2 * s.b)  # noqa: E731 - the recitation's h
    return sp.simplify(sp.expand_log(sp.log(h(s.y - fx) / h(s.y - fxp)), force=True))


@dataclass(frozen=True)
class LossRegion:
    """The privacy loss on one region of ``y``, with the two one-sided bounds.

    ``y`` and ``f(x')`` are written as ``f(x)`` plus non-negative offsets so that sympy can open the
    absolute values; ``delta = |f(x) - f(x')|`` in those offsets.
    """

    case: str  # "f(x) <= f(x')" or "f(x) >= f(x')"
    region: str
    y_value: sp.Expr
    f_xp_value: sp.Expr
    loss: sp.Expr  # simplified privacy loss on the region
    delta: sp.Expr  # |f(x) - f(x')| on this case
    delta_over_b_minus_loss: sp.Expr  # >= 0
    delta_over_b_plus_loss: sp.Expr  # >= 0
    bounded: bool  # |loss| <= delta / b, decided by sympy's assumptions


@dataclass(frozen=True)
class LaplaceMechanismProof:
    loss: sp.Expr  # privacy_loss_expr()
    regions: tuple[LossRegion, ...]
    bound_by_delta_over_b: bool  # every region bounded
    attained: bool  # some region has loss == delta/b exactly (the bound is tight)
    epsilon_gap: sp.Expr  # epsilon - delta/b with b = Delta/epsilon, delta = Delta - s (s >= 0)
    bounded_by_epsilon: bool  # epsilon_gap >= 0


@lru_cache(maxsize=None)
def laplace_mechanism_privacy_loss() -> LaplaceMechanismProof:
    """The Laplace mechanism's proof, region by region.

    Case ``f(x) <= f(x')``: ``f(x') = f(x) + delta``; regions ``y = f(x) - w`` (below both),
    ``y = f(x) + w`` with ``delta = w + r`` (between), ``y = f(x) + delta + w`` (above both), all
    offsets ``>= 0``.  The mirrored case ``f(x) >= f(x')`` swaps the roles.  On every region the loss
    lies in ``[-delta/b, delta/b]``; with ``b = Delta/epsilon`` and ``delta <= Delta`` that is at most
    ``epsilon``.
    """
    s = symbols()
    fx, fxp = _query_symbols()
    loss = privacy_loss_expr()
    w, r, delta = _nonneg("w"), _nonneg("r"), _nonneg("delta")
    layouts = []
    for case, sgn in (("f(x) <= f(x')", 1), ("f(x) >= f(x')", -1)):
        layouts += [
            (case, "y below both", fx - sgn * w, fx + sgn * delta, delta),
            (case, "y between", fx + sgn * w, fx + sgn * (w + r), w + r),
            (case, "y above both", fx + sgn * (delta + w), fx + sgn * delta, delta),
        ]
    # For the mirrored case, "below"/"above" refer to the mirrored axis; rename for clarity.
    regions = []
    for case, region, y_val, fxp_val, dlt in layouts:
        if case.startswith("f(x) >="):
            region = {"y below both": "y above both", "y above both": "y below both"}.get(region, region)
        l_reg = sp.simplify(loss.subs({s.y: y_val, fxp: fxp_val}))
        upper_gap = sp.simplify(dlt / s.b - l_reg)
        lower_gap = sp.simplify(dlt / s.b + l_reg)
        regions.append(
            LossRegion(
                case=case,
                region=region,
                y_value=y_val,
                f_xp_value=fxp_val,
                loss=l_reg,
                delta=dlt,
                delta_over_b_minus_loss=upper_gap,
                delta_over_b_plus_loss=lower_gap,
                bounded=bool(upper_gap.is_nonnegative) and bool(lower_gap.is_nonnegative),
            )
        )
    all_bounded = all(reg.bounded for reg in regions)
    attained = any(sp.simplify(reg.loss - reg.delta / s.b) == 0 for reg in regions)
    slack = _nonneg("s")
    # delta = Delta - slack with 0 <= slack; b = Delta / epsilon.
    gap = sp.simplify(s.epsilon - (s.Delta - slack) / (s.Delta / s.epsilon))
    gap_ok = bool(gap.is_nonnegative)
    return LaplaceMechanismProof(
        loss=loss,
        regions=tuple(regions),
        bound_by_delta_over_b=all_bounded,
        attained=attained,
        epsilon_gap=gap,
        bounded_by_epsilon=gap_ok,
    )


# ---------------------------------------------------------------------------------------------
# Theorem 3.2
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Theorem32:
    """Densities of DPText's output at ``z`` for ``X = 0`` and ``X' = 1`` (identity query)."""

    z: sp.Expr
    density_x: sp.Expr  # continuous-part density at z with mu = f(X) = 0 (NaN discarded)
    density_xprime: sp.Expr  # ... with mu = f(X') = 1: zero
    density_x_nan_zero: sp.Expr  # the same under the NaN -> 0 policy
    density_xprime_nan_zero: sp.Expr
    density_x_positive: bool
    density_xprime_zero: bool
    atom_at_zero_x: sp.Expr  # NaN -> 0 policy: P(M(X) = 0) = 1/2 (the CDF's jump at 0 when mu = 0)
    atom_at_zero_xprime: sp.Expr  # P(M(X') = 0) = 0: even a single output value separates X and X'
    privacy_loss: sp.Expr  # ln(p / 0) = oo
    laplace_loss: sp.Expr  # the correct Laplace mechanism's loss at the same z: finite
    laplace_loss_with_b_1_over_eps: sp.Expr
    violates_dp: bool  # privacy loss exceeds every finite epsilon


def theorem_3_2(z: sp.Expr | float = sp.Rational(1, 10)) -> Theorem32:
    """Theorem 3.2 with symbolic positive ``b``: at ``z = 0.1`` the output density is positive for
    ``X = 0`` and zero for ``X' = 1``, so the likelihood ratio and the privacy loss are infinite.

    The ratio ``p / 0`` is ``zoo`` in sympy (complex infinity); since both densities are real and
    ``p > 0``, the privacy loss ``ln(p / 0)`` is the limit ``ln(p / q)`` as ``q -> 0+``, i.e. ``+oo``.

    The theorem is about outputs ``z`` in (0, 1), where DPText's output on ``X' = 1`` has no
    density; any other ``z`` (or a non-number) is refused with a ``ValueError`` or ``TypeError``.
    """
    return _theorem_3_2(_check_z(z))


def _check_z(z: object) -> sp.Expr:
    """``z`` as a sympy number in the open interval (0, 1)."""
    if isinstance(z, sp.Basic):
        if not (isinstance(z, sp.Expr) and z.is_number and z.is_extended_real):
            raise TypeError(f"z must be a real number, got {z!r}")
        value = z
    elif isinstance(z, numbers.Integral) and not is_bool(z):
        value = sp.Integer(int(z))
    else:
        value = sp.sympify(check_real(z, "z"))
    if not (bool(value.is_positive) and bool((value - 1).is_negative)):
        raise ValueError(f"z must lie in the open interval (0, 1), where Theorem 3.2 applies, got {z!r}")
    return value


@lru_cache(maxsize=None)
def _theorem_3_2(z: sp.Expr) -> Theorem32:
    s = symbols()
    law = dptext_law()
    at = lambda pdf, mu_val: sp.simplify(pdf.subs({s.mu: mu_val, s.t: z}))  # noqa: E731
    p_x, p_xp = at(law.pdf_nan_discard, 0), at(law.pdf_nan_discard, 1)
    p_x0, p_xp0 = at(law.pdf_nan_zero, 0), at(law.pdf_nan_zero, 1)
    q = _pos("q")
    loss = sp.limit(sp.log(p_x / q), q, 0, "+")
    cdf0 = law.cdf_nan_zero

    def atom(mu_val: int) -> sp.Expr:  # F(0) - F(0-), the left limit taken along t = -h, h -> 0+
        f = cdf0.subs(s.mu, mu_val)
        h = _pos("h")  # (sympy's limit(..., "-") of a Piecewise at its breakpoint is unreliable)
        return sp.simplify(f.subs(s.t, 0) - sp.limit(f.subs(s.t, -h), h, 0, "+"))

    fx, fxp = _query_symbols()
    lap = sp.simplify(privacy_loss_expr().subs({s.y: z, fx: 0, fxp: 1}))
    lap_eps = sp.simplify(lap.subs(s.b, 1 / s.epsilon))
    return Theorem32(
        z=z,
        density_x=p_x,
        density_xprime=p_xp,
        density_x_nan_zero=p_x0,
        density_xprime_nan_zero=p_xp0,
        density_x_positive=bool(p_x.is_positive) and bool(p_x0.is_positive),
        density_xprime_zero=(p_xp == 0) and (p_xp0 == 0),
        atom_at_zero_x=atom(0),
        atom_at_zero_xprime=atom(1),
        privacy_loss=loss,
        laplace_loss=lap,
        laplace_loss_with_b_1_over_eps=lap_eps,
        violates_dp=loss == sp.oo,
    )
