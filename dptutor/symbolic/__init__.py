"""Symbolic (sympy) derivations behind the book: Laplace CDF and inverse CDF, Theorem A.1,
DPText's transform (Theorem 3.1 and its output law), the Laplace mechanism's privacy loss, and
Theorem 3.2.  Equation numbers refer to Habernal (ACL 2022).

Every function *derives* its result with sympy (``integrate``, ``solve``, ``diff``, substitution and
``simplify``) instead of typing the answer, and returns sympy objects, or small frozen dataclasses of
them, for the chapters to display and the tests to check.

Assumption trick used throughout: sympy simplifies ``Abs`` and ``sign`` only when it knows the sign of
the argument, so a branch such as ``u < 1/2`` is handled by writing ``u = 1/2 - d`` with a *positive*
symbol ``d``; then ``sign(u - 1/2)`` becomes ``-1`` and ``|u - 1/2|`` becomes ``d`` by themselves.

The package: :mod:`dptutor.symbolic.laplace` (the symbols; the Laplace pdf, CDF and inverse CDF),
:mod:`dptutor.symbolic.dptext` (DPText's transform and output law) and
:mod:`dptutor.symbolic.privacy_loss` (the Laplace mechanism's privacy loss, Theorem 3.2); every
public name is re-exported here.
"""

from __future__ import annotations

from dptutor.symbolic.dptext import dptext_analysis, dptext_expr, dptext_law
from dptutor.symbolic.laplace import (
    Symbols,
    check_ppf_equivalences,
    laplace_cdf_derivation,
    laplace_cdf_expr,
    laplace_pdf_expr,
    laplace_ppf_branches,
    laplace_ppf_centered_expr,
    laplace_ppf_sgn_expr,
    symbols,
    verify_inverse,
)
from dptutor.symbolic.privacy_loss import laplace_mechanism_privacy_loss, privacy_loss_expr, theorem_3_2

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
