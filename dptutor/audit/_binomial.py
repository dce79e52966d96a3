"""Exact (Clopper-Pearson) bounds on a binomial proportion, shared by the pair audit's bounds and the paired bound.

The one-sided bounds invert the binomial test through beta quantiles: the lower bound at error ``alpha`` for ``k``
successes in ``n`` trials is ``Beta(k, n - k + 1).ppf(alpha)`` (0 when ``k = 0``), the upper one
``Beta(k + 1, n - k).isf(alpha)`` (1 when ``k = n``).  ``scipy.stats.binomtest``'s ``proportion_ci(method="exact")``
finds the same bounds by a root search, some 18 times slower.  No input checks: the callers pass counts they made.
"""

from __future__ import annotations

__all__ = ["exact_interval", "exact_one_sided"]


def exact_one_sided(k: int, n: int, alpha: float, *, lower: bool) -> float:
    """The one-sided Clopper-Pearson bound at error ``alpha`` for ``k`` successes in ``n`` trials (module docstring)."""
    from scipy import stats  # imported lazily: scipy.stats takes ~0.5 s to import

    if lower:
        return 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    return 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))


def exact_interval(k: int, n: int, alpha_each_side: float) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval for ``k`` successes in ``n`` trials, ``alpha_each_side`` per side."""
    return exact_one_sided(k, n, alpha_each_side, lower=True), exact_one_sided(k, n, alpha_each_side, lower=False)
