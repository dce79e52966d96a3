"""The Laplace mechanism's privacy loss (the recitation's "sliding property") and the paper's
Theorem 3.2, derived with sympy (see :mod:`dptutor.symbolic`)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from dptutor._validate import check_real, is_bool, renamed_parameters, shown
from dptutor.symbolic.dptext import dptext_law
from dptutor.symbolic.laplace import nonnegative_symbol, positive_symbol, symbols

__all__ = ["privacy_loss_expr", "laplace_mechanism_privacy_loss", "theorem_3_2"]


# ---------------------------------------------------------------------------------------------
# the Laplace mechanism's privacy loss (recitation's "sliding property")
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _query_symbols() -> tuple[sp.Symbol, sp.Symbol]:
    return sp.Symbol("f_x", real=True), sp.Symbol("f_xp", real=True)


def privacy_loss_expr() -> sp.Expr:
    """``ln(h(y - f(x)) / h(y - f(x')))`` for the Lap(b) density ``h``, simplified to
    ``(|y - f(x')| - |y - f(x)|) / b``.  Symbols: ``y``, ``f_x``, ``f_xp``, ``b``.

    Returns
    -------
    sympy.Expr
        ``(|y - f_xp| - |y - f_x|) / b``.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    fx, fxp = _query_symbols()
    h = lambda z: sp.exp(-sp.Abs(z) / s.b) / (2 * s.b)  # noqa: E731 - the recitation's h
    return sp.simplify(sp.expand_log(sp.log(h(s.y - fx) / h(s.y - fxp)), force=True))


@dataclass(frozen=True)
class LossRegion:
    """The privacy loss on one region of ``y``, with the two one-sided bounds.

    ``y`` and ``f(x')`` are written as ``f(x)`` plus non-negative offsets so that sympy can open the
    absolute values; ``delta = |f(x) - f(x')|`` in those offsets.

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`laplace_mechanism_privacy_loss`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``laplace_mechanism_privacy_loss`` derived).
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
    """The steps of the proof that the Laplace mechanism's privacy loss is at most ``Delta / b``.

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`laplace_mechanism_privacy_loss`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``laplace_mechanism_privacy_loss`` derived).
    """

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

    Returns
    -------
    LaplaceMechanismProof
        The proof's steps; ``bound_by_delta_over_b`` and ``attained`` are True.

    Notes
    -----
    It raises no exception: the function takes no arguments.
    """
    s = symbols()
    fx, fxp = _query_symbols()
    loss = privacy_loss_expr()
    w, r, delta = nonnegative_symbol("w"), nonnegative_symbol("r"), nonnegative_symbol("delta")
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
    slack = nonnegative_symbol("s")
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
    """Densities of DPText's output at ``y`` for ``X = 0`` and ``X' = 1`` (identity query).

    Parameters
    ----------
    **fields
        The steps, one field each (the comment beside each field says what it holds); made by
        :func:`theorem_3_2`, not by hand.

    Notes
    -----
    It raises no exception (the fields are not checked: the record only carries what ``theorem_3_2`` derived).
    The read-only property ``z`` is the old name of the field ``y``, kept for existing callers.
    """

    y: sp.Expr  # the witness output, in (0, 1)
    density_x: sp.Expr  # continuous-part density at y with mu = f(X) = 0 (NaN discarded)
    density_xprime: sp.Expr  # ... with mu = f(X') = 1: zero
    density_x_nan_zero: sp.Expr  # the same under the NaN -> 0 policy
    density_xprime_nan_zero: sp.Expr
    density_x_positive: bool
    density_xprime_zero: bool
    atom_at_zero_x: sp.Expr  # NaN -> 0 policy: P(M(X) = 0) = 1/2 (the CDF's jump at 0 when mu = 0)
    atom_at_zero_xprime: sp.Expr  # P(M(X') = 0) = 0: even a single output value separates X and X'
    privacy_loss: sp.Expr  # ln(p / 0) = oo
    laplace_loss: sp.Expr  # the correct Laplace mechanism's loss at the same y: finite
    laplace_loss_with_b_1_over_eps: sp.Expr
    violates_dp: bool  # privacy loss exceeds every finite epsilon

    @property
    def z(self) -> sp.Expr:
        """The witness output ``y``, under its old name ``z`` (read-only; use ``y``)."""
        return self.y


@renamed_parameters(z="y")
def theorem_3_2(y: sp.Expr | float = sp.Rational(1, 10)) -> Theorem32:
    """Theorem 3.2 with symbolic positive ``b``: at the output ``y = 0.1`` the density is positive for
    ``X = 0`` and zero for ``X' = 1``, so the likelihood ratio and the privacy loss are infinite.

    The ratio ``p / 0`` is ``zoo`` in sympy (complex infinity); since both densities are real and
    ``p > 0``, the privacy loss ``ln(p / 0)`` is the limit ``ln(p / q)`` as ``q -> 0+``, i.e. ``+oo``.

    The theorem is about outputs ``y`` in (0, 1), where DPText's output on ``X' = 1`` has no
    density; any other ``y`` (or a non-number) is refused with a ``ValueError`` or ``TypeError``.

    Parameters
    ----------
    y : sympy.Expr or float, default 1/10
        The output, in the open interval (0, 1).  (Deprecated alias: ``z``.)

    Returns
    -------
    Theorem32
        The two densities, the likelihood ratio's privacy loss (``+oo``) and the comparison with Laplace.

    Raises
    ------
    TypeError
        If ``y`` is not a real number, or if both ``y`` and its alias ``z`` are passed.
    ValueError
        If ``y`` is not in (0, 1).
    """
    return _theorem_3_2(_check_y(y))


#: The most bits of a number in ``y`` (a float of 10**6 digits took minutes, 1 / 10**100000 failed to print).
_MAX_Y_BITS: int = 4096


def _too_long(n: sp.Number) -> bool:
    if isinstance(n, sp.Float):
        return n._prec > _MAX_Y_BITS
    return isinstance(n, sp.Rational) and max(abs(n.p), n.q).bit_length() > _MAX_Y_BITS


def _check_y(y: object) -> sp.Expr:
    """``y`` as a sympy number in the open interval (0, 1)."""
    if isinstance(y, sp.Basic):
        if not (isinstance(y, sp.Expr) and y.is_number and y.is_extended_real):
            raise TypeError(f"y must be a real number, got {shown(y, str)}")
        value = y
        if any(_too_long(n) for n in y.atoms(sp.Number)):  # sympy takes minutes, or cannot print, beyond
            raise ValueError(f"y must be built of numbers of at most {_MAX_Y_BITS} bits (numerators, denominators, "
                             "float precisions)")  # (not printed: a float of 10**6 digits takes 10 s to print)
    elif isinstance(y, numbers.Integral) and not is_bool(y):
        value = sp.Integer(int(y))
    else:
        value = sp.sympify(check_real(y, "y"))
    if not (bool(value.is_positive) and bool((value - 1).is_negative)):
        raise ValueError(f"y must lie in the open interval (0, 1), where Theorem 3.2 applies, got {shown(y, str)}")
    return value


@lru_cache(maxsize=None)
def _theorem_3_2(y: sp.Expr) -> Theorem32:
    s = symbols()
    law = dptext_law()
    at = lambda pdf, mu_val: sp.simplify(pdf.subs({s.mu: mu_val, s.t: y}))  # noqa: E731
    p_x, p_xp = at(law.pdf_nan_discard, 0), at(law.pdf_nan_discard, 1)
    p_x0, p_xp0 = at(law.pdf_nan_zero, 0), at(law.pdf_nan_zero, 1)
    q = positive_symbol("q")
    loss = sp.limit(sp.log(p_x / q), q, 0, "+")
    cdf0 = law.cdf_nan_zero

    def atom(mu_val: int) -> sp.Expr:  # F(0) - F(0-), the left limit taken along t = -h, h -> 0+
        f = cdf0.subs(s.mu, mu_val)
        h = positive_symbol("h")  # (sympy's limit(..., "-") of a Piecewise at its breakpoint is unreliable)
        return sp.simplify(f.subs(s.t, 0) - sp.limit(f.subs(s.t, -h), h, 0, "+"))

    fx, fxp = _query_symbols()
    lap = sp.simplify(privacy_loss_expr().subs({s.y: y, fx: 0, fxp: 1}))
    lap_eps = sp.simplify(lap.subs(s.b, 1 / s.epsilon))
    return Theorem32(
        y=y,
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
