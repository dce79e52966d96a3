"""Composition: how privacy budgets add up (Dwork and Roth 2014, Section 3.5; McSherry 2009).

- :func:`sequential_epsilon`: k mechanisms on the *same* data with budgets eps_1..eps_k are
  (eps_1 + ... + eps_k)-DP.
- :func:`parallel_epsilon`: mechanisms on *disjoint* parts of the data are max(eps_i)-DP.
- :class:`Budget`: a budget as something spent, one release at a time, refusing to overspend.
- :func:`repeated_laplace_box_loss`: the exact privacy loss of the event "all k outputs <= t" for
  k Laplace releases of one bit (0 vs 1), the event that attains k * epsilon.
- :func:`sequential_composition_proof`: the steps of the composition proof, checked in sympy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import sympy as sp

from dptutor._validate import check_bool, check_int, check_positive, check_real, check_sequence

__all__ = [
    "sequential_epsilon",
    "parallel_epsilon",
    "Budget",
    "repeated_laplace_box_loss",
    "CompositionProof",
    "sequential_composition_proof",
]


def _check_epsilons(epsilons: Iterable[float], name: str) -> list[float]:
    return [check_positive(e, f"{name}[{i}]") for i, e in enumerate(check_sequence(epsilons, name))]


def sequential_epsilon(epsilons: Iterable[float]) -> float:
    """The budget of running mechanisms with budgets ``epsilons`` on the same data: their sum."""
    values = _check_epsilons(epsilons, "epsilons")
    try:
        total = math.fsum(values)
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("epsilons add up to more than the largest float")
    return total


def parallel_epsilon(epsilons: Iterable[float]) -> float:
    """The budget of mechanisms run on disjoint parts of the data: the largest of ``epsilons``."""
    return max(_check_epsilons(epsilons, "epsilons"))


@dataclass(frozen=True)
class Budget:
    """A privacy budget ``total`` of which ``spent`` (one entry per release) has been used.

    Immutable: :meth:`spend` returns a new ``Budget`` and raises ``ValueError`` (naming
    ``epsilon``) when a release would exceed the total, so an overspending loop fails loudly
    before the release instead of after it.
    """

    total: float
    spent: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", check_positive(self.total, "total"))
        spent = tuple(check_positive(e, f"spent[{i}]") for i, e in enumerate(check_sequence(self.spent, "spent", min_len=0)))
        if sum(spent) > self.total * (1 + 1e-12):  # (a finite total bounds each term: no overflow)
            raise ValueError(f"spent adds up to {sum(spent):g}, more than total = {self.total:g}")
        object.__setattr__(self, "spent", spent)

    @property
    def used(self) -> float:
        """The budget used so far (sequential composition: the sum of ``spent``)."""
        return math.fsum(self.spent)

    @property
    def remaining(self) -> float:
        """What is left; never negative."""
        return max(0.0, self.total - self.used)

    def spend(self, epsilon: float) -> "Budget":
        """The budget after one more release with budget ``epsilon``.

        A relative slack of 1e-12 absorbs the rounding of splits such as ten times ``total / 10``.
        """
        eps = check_positive(epsilon, "epsilon")
        if self.used + eps > self.total * (1 + 1e-12):
            raise ValueError(
                f"epsilon = {eps:g} exceeds the remaining budget {self.remaining:g} "
                f"(total {self.total:g}, {len(self.spent)} releases so far)"
            )
        return Budget(self.total, self.spent + (eps,))


def repeated_laplace_box_loss(k: int, epsilon: float, t: float = 0.0) -> tuple[float, float]:
    """``(loss, log_prob)`` of the event "all k outputs <= t" for k releases of one bit.

    Each release adds ``Lap(0, 1/epsilon)`` noise to the bit (0 on ``D``, 1 on ``D'``), so the
    event has probability ``F(t)^k`` on ``D`` and ``F(t - 1)^k`` on ``D'`` (``F`` the Laplace CDF),
    and ``loss = k (ln F(t) - ln F(t - 1))``, which is exactly ``k * epsilon`` for ``t <= 0``:
    the composition bound is attained.  ``log_prob = k ln F(t)`` is the event's log-probability on
    ``D`` (how rarely an attacker sees it).  Computed with ``scipy.stats.laplace.logcdf``.
    """
    from scipy import stats

    k = check_int(k, "k", minimum=1, maximum=10**15)
    eps = check_positive(epsilon, "epsilon")
    t = check_real(t, "t")
    if t <= 0.0:  # both CDFs are e^((t - loc) eps) / 2: the ratio is e^eps exactly, even far in the tail
        return k * eps, k * (eps * t - math.log(2.0))
    b = 1.0 / eps
    log_f0 = float(stats.laplace.logcdf(t, loc=0.0, scale=b))
    log_f1 = float(stats.laplace.logcdf(t, loc=1.0, scale=b))
    return k * (log_f0 - log_f1), k * log_f0


@dataclass(frozen=True)
class CompositionProof:
    """The steps of the sequential composition proof for two Laplace releases, in sympy.

    ``joint_loss``: ln of the ratio of the joint densities of ``(y1, y2)``; ``sum_of_losses``: the
    sum of the two single-release losses; ``factorizes``: sympy proves their difference is 0
    (steps 1-2); ``bound_gap``: ``eps1 + eps2 - (L1 + L2)`` written with the slacks
    ``g_i = eps_i - L_i >= 0``; ``bounded``: sympy proves it non-negative (steps 3-4).
    """

    joint_loss: sp.Expr
    sum_of_losses: sp.Expr
    factorizes: bool
    bound_gap: sp.Expr
    bounded: bool

    def __post_init__(self) -> None:
        for field in ("joint_loss", "sum_of_losses", "bound_gap"):
            if not isinstance(getattr(self, field), sp.Expr):
                raise TypeError(f"{field} must be a sympy expression, got {type(getattr(self, field)).__name__}")
        check_bool(self.factorizes, "factorizes")
        check_bool(self.bounded, "bounded")


def sequential_composition_proof() -> CompositionProof:
    """Check the steps of the sequential composition theorem for two Laplace mechanisms in sympy.

    Step 1-2: with independent noise the joint density is the product of the two densities, so
    the joint privacy loss ``ln(p(y1) q(y2) / (p'(y1) q'(y2)))`` equals ``L1(y1) + L2(y2)``.
    Step 3-4: each single loss is at most its budget (the Laplace chapter's theorem), i.e.
    ``L_i = eps_i - g_i`` with ``g_i >= 0``; then ``eps1 + eps2 - (L1 + L2) = g1 + g2 >= 0``.
    """
    y1, y2, fx1, fxp1, fx2, fxp2 = sp.symbols("y1 y2 f1 f1p f2 f2p", real=True)
    b1, b2, eps1, eps2 = sp.symbols("b1 b2 epsilon1 epsilon2", positive=True)
    g1, g2 = sp.symbols("g1 g2", nonnegative=True)

    def lap(y: sp.Expr, mu: sp.Expr, b: sp.Expr) -> sp.Expr:
        return sp.exp(-sp.Abs(y - mu) / b) / (2 * b)

    joint = sp.expand_log(
        sp.log(lap(y1, fx1, b1) * lap(y2, fx2, b2) / (lap(y1, fxp1, b1) * lap(y2, fxp2, b2))), force=True
    )
    loss1 = sp.expand_log(sp.log(lap(y1, fx1, b1) / lap(y1, fxp1, b1)), force=True)
    loss2 = sp.expand_log(sp.log(lap(y2, fx2, b2) / lap(y2, fxp2, b2)), force=True)
    total = loss1 + loss2
    factorizes = sp.simplify(joint - total) == 0
    gap = sp.simplify((eps1 + eps2) - ((eps1 - g1) + (eps2 - g2)))
    return CompositionProof(
        joint_loss=sp.simplify(joint),
        sum_of_losses=sp.simplify(total),
        factorizes=bool(factorizes),
        bound_gap=gap,
        bounded=bool(gap.is_nonnegative),
    )
