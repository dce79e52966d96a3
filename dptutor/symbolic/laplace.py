"""The Laplace distribution derived with sympy: pdf, CDF (Eq. 4-5), inverse CDF (Eq. 5 and 7) and
Theorem A.1 (see :mod:`dptutor.symbolic`), and the standard symbols every derivation uses."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from dptutor._validate import check_real, is_bool, shown

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
]


HALF = sp.Rational(1, 2)


# ---------------------------------------------------------------------------------------------
# symbols
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Symbols:
    """The standard symbols, with the assumptions the derivations rely on.

    Parameters
    ----------
    x, mu, b, u, v, epsilon, y, t, Delta : sympy.Symbol
        The symbols (see the comments of the fields).

    Raises
    ------
    TypeError
        If a field is not a sympy Symbol (the message names it).
    """

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
    """Return the standard symbols ``x, mu, b, u, v, epsilon`` (and ``y, t, Delta``).

    Returns
    -------
    Symbols
        The same (cached) symbols on every call.

    Notes
    -----
    It raises no exception: the function takes no arguments.

    Examples
    --------
    >>> from dptutor.symbolic import symbols
    >>> symbols().b.is_positive
    True
    """
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


def positive_symbol(name: str) -> sp.Symbol:
    """A sympy symbol assumed positive (how the derivations open ``Abs`` and ``sign``).

    Parameters
    ----------
    name : str
        The symbol's name.

    Returns
    -------
    sympy.Symbol
        A symbol assumed positive.

    Raises
    ------
    TypeError
        If ``name`` is not a string (sympy's own message).
    """
    return sp.Symbol(name, positive=True)


def nonnegative_symbol(name: str) -> sp.Symbol:
    """A sympy symbol assumed non-negative.

    Parameters
    ----------
    name : str
        The symbol's name.

    Returns
    -------
    sympy.Symbol
        A symbol assumed non-negative.

    Raises
    ------
    TypeError
        If ``name`` is not a string (sympy's own message).
    """
    return sp.Symbol(name, nonnegative=True)


# ---------------------------------------------------------------------------------------------
# Laplace pdf and cdf
# ---------------------------------------------------------------------------------------------


def laplace_pdf_expr(x: sp.Expr | None = None) -> sp.Expr:
    """The Laplace density ``exp(-|x - mu|/b) / (2b)`` (the recitation's PDF).

    Parameters
    ----------
    x : sympy.Expr, float or None, default None
        Where the density is taken (``None``: the symbol ``x``).

    Returns
    -------
    sympy.Expr
        The density, in the symbols ``mu`` and ``b``.

    Raises
    ------
    TypeError
        If ``x`` is neither a sympy expression nor a real number.
    ValueError
        If ``x`` is NaN or infinite, or a sympy expression that is not real (``nan``, ``oo``, ``zoo``, ``I``).

    Examples
    --------
    >>> from dptutor.symbolic import laplace_pdf_expr
    >>> laplace_pdf_expr()
    exp(-Abs(mu - x)/b)/(2*b)
    """
    s = symbols()
    if x is None:
        x = s.x
    elif not isinstance(x, sp.Expr):
        x = sp.Float(check_real(x, "x")) if not isinstance(x, numbers.Integral) or is_bool(x) else sp.Integer(int(x))
    elif x.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or x.is_extended_real is False or (x.is_number and not x.is_finite):
        raise ValueError(f"x must be a finite real number or a real expression, got {shown(x, str)}")
    return sp.exp(-sp.Abs(x - s.mu) / s.b) / (2 * s.b)


@dataclass(frozen=True)
class CdfDerivation:
    """The pieces of the CDF derivation, for display.

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`laplace_cdf_derivation`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``laplace_cdf_derivation`` derived).
    """

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

    Returns
    -------
    CdfDerivation
        The integrals on both sides of ``mu`` and their piecewise result.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    w = positive_symbol("w")
    left = laplace_pdf_expr(s.mu - w)  # density at mu - w: exp(-w/b)/(2b)
    right = laplace_pdf_expr(s.mu + w)
    mass_below = sp.integrate(left, (w, 0, sp.oo))
    total = sp.simplify(mass_below + sp.integrate(right, (w, 0, sp.oo)))
    lower = sp.simplify(sp.integrate(left, (w, s.mu - s.x, sp.oo)))
    upper = sp.simplify(mass_below + sp.integrate(right, (w, 0, s.x - s.mu)))
    cdf = sp.Piecewise((lower, s.x < s.mu), (upper, True))
    return CdfDerivation(total_mass=total, mass_below_mu=mass_below, lower=lower, upper=upper, cdf=cdf)


def laplace_cdf_expr() -> sp.Piecewise:
    """The Laplace CDF as a ``Piecewise`` (``x < mu`` and ``x >= mu``), obtained by integration.

    Returns
    -------
    sympy.Piecewise
        The CDF (Eq. 4), in the symbols ``x``, ``mu`` and ``b``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    return laplace_cdf_derivation().cdf


# ---------------------------------------------------------------------------------------------
# inverse CDF: Eq. 5 (solved), Eq. 4 and Eq. 7 (the paper's forms), and their equivalence
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PpfBranches:
    """Eq. 5 derived by solving ``F(x) = u`` on each branch of the CDF.

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`laplace_ppf_branches`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``laplace_ppf_branches`` derived).
    """

    lower: sp.Expr  # x = F^-1(u) for u < 1/2
    upper: sp.Expr  # x = F^-1(u) for u >= 1/2
    ppf: sp.Piecewise


@lru_cache(maxsize=None)
def laplace_ppf_branches() -> PpfBranches:
    """Solve ``F(x) = u`` on each branch (Eq. 5).

    With ``z = (x - mu)/b``, the lower branch reads ``exp(z)/2 = u`` and the upper branch
    ``1 - exp(-z)/2 = u``; on the upper branch we write ``u = 1 - q`` with ``q > 0`` so that sympy
    returns the real logarithm.  Then ``x = mu + b z``.

    Returns
    -------
    PpfBranches
        The solved inverse CDF on each side of ``u = 1/2``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    d = laplace_cdf_derivation()
    z = sp.Symbol("z", real=True)
    q = positive_symbol("q")
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
    """Eq. 4: ``mu - b sgn(u - 1/2) ln(1 - 2|u - 1/2|)``.

    Returns
    -------
    sympy.Expr
        Eq. 5's inverse CDF in the symbols ``u``, ``mu`` and ``b``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    return s.mu - s.b * sp.sign(s.u - HALF) * sp.log(1 - 2 * sp.Abs(s.u - HALF))


def laplace_ppf_centered_expr() -> sp.Expr:
    """Eq. 7: ``mu - b sgn(v) ln(1 - 2|v|)`` for ``v ~ Uni(-1/2, 1/2)``.

    Returns
    -------
    sympy.Expr
        Eq. 7's inverse CDF in the symbols ``v``, ``mu`` and ``b``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    return s.mu - s.b * sp.sign(s.v) * sp.log(1 - 2 * sp.Abs(s.v))


@dataclass(frozen=True)
class PpfEquivalence:
    """One branch of the proof that Eq. 4, Eq. 5 and Eq. 7 (with v = u - 1/2) coincide on (0, 1).

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`check_ppf_equivalences`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``check_ppf_equivalences`` derived).
    """

    branch: str  # "u < 1/2", "u = 1/2" or "u > 1/2"
    substitution: sp.Expr  # u written with the positive symbol d
    eq4: sp.Expr
    eq5: sp.Expr
    eq7: sp.Expr
    eq4_minus_eq5: sp.Expr  # simplified, 0
    eq7_minus_eq4: sp.Expr  # simplified, 0

    @property
    def holds(self) -> bool:
        """Whether both differences simplified to 0.

        Returns
        -------
        bool
            True when Eq. 4 minus Eq. 5 and Eq. 7 minus Eq. 4 are both 0.

        Notes
        -----
        It raises no exception: the property reads the record's own fields.
        """
        return self.eq4_minus_eq5 == 0 and self.eq7_minus_eq4 == 0


@lru_cache(maxsize=None)
def check_ppf_equivalences() -> tuple[PpfEquivalence, ...]:
    """Prove Eq. 4 == Eq. 5 and Eq. 7 (``v = u - 1/2``) == Eq. 4 on (0, 1), branch by branch.

    ``u < 1/2``: ``u = 1/2 - d`` with ``0 < d < 1/2``; ``u > 1/2``: ``u = 1/2 + d``; and ``u = 1/2``.
    On each branch ``sgn`` and ``|.|`` evaluate by themselves and the differences simplify to 0.

    Returns
    -------
    tuple of PpfEquivalence
        One check per pair of forms and branch; each ``holds``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    d = positive_symbol("d")
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
    """Theorem A.1's key facts for the Laplace CDF, branch by branch.

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`verify_inverse`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``verify_inverse`` derived).
    """

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

    Returns
    -------
    tuple of InverseCheck
        One check per branch: ``F(F^-1(u)) = u`` and ``F^-1(F(x)) = x``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    cdf = laplace_cdf_derivation()
    br = laplace_ppf_branches()
    w_pos, w_nn, k_pos, k_nn = positive_symbol("w"), nonnegative_symbol("w"), positive_symbol("k"), nonnegative_symbol("k")
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
