"""The sanity check's result: a 2x2 table of guesses, its estimated loss and Clopper-Pearson bounds.

:class:`AuditResult` holds the counts of one audit of :mod:`dptutor.audit.sanity` (see there for the
experiment); :func:`loss_from_counts` is the paper's Eq. 12 with maximum-likelihood estimates.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_seed,
    check_str,
    is_bool,
    renamed_parameters,
)

__all__ = ["AuditResult", "loss_from_counts", "MAX_TRIALS", "MAX_N"]

#: of work on a laptop); it also keeps every count and row total far inside int64.
MAX_TRIALS: int = 10**10

#: Dimensions above this are refused: 2**20 coordinates per dataset is far beyond the paper's 128,
#: and the exact closed form allocates arrays of ``n + 1`` elements.
MAX_N: int = 1 << 20

NEG_INF = -math.inf
_LOG_HALF = -math.log(2.0)

#: Anything ``numpy.asarray`` turns into a 2x2 integer table.
ArrayLike2x2 = Any


def _log(x: float) -> float:
    """Natural log with ``log(0) = -inf`` (no exception, no warning)."""
    return math.log(x) if x > 0 else NEG_INF


def loss_from_logs(log_p: Sequence[Sequence[float]]) -> float:
    """``max_y |log_p[0][y] - log_p[1][y]|`` over guesses y with a finite log in some row.

    Infinite when exactly one of the two is ``-inf``; a guess impossible under both is skipped.
    """
    loss = 0.0
    for y in (0, 1):
        a, b = log_p[0][y], log_p[1][y]
        if a == NEG_INF and b == NEG_INF:
            continue
        if a == NEG_INF or b == NEG_INF:
            return math.inf
        loss = max(loss, abs(a - b))
    return loss


def loss_from_counts(counts: ArrayLike2x2) -> float:
    """The estimated privacy loss from a 2x2 table ``counts[d, y]`` (equal trials per dataset).

    With equal trials the ratio of the maximum-likelihood estimates ``P(y | D) / P(y | D')`` is the
    ratio of counts, which also equals ``P(D | y) / P(D' | y)`` under equal priors (Eq. 12).

    Parameters
    ----------
    counts : array_like, shape (2, 2)
        Non-negative integer counts ``counts[d, y]`` (dataset ``d``, guess ``y``) with equal positive row
        totals, at most ``MAX_TRIALS``.

    Returns
    -------
    float
        ``max_y |ln(counts[0, y] / counts[1, y])|`` over the guesses that occurred; ``inf`` when exactly one
        count of a guess is 0.

    Raises
    ------
    TypeError, ValueError
        If ``counts`` is not such a table.

    Examples
    --------
    >>> loss_from_counts([[75, 25], [25, 75]])  # doctest: +ELLIPSIS
    1.098...
    """
    c = _check_counts(counts)
    return loss_from_logs([[_log(float(v)) for v in row] for row in c])



def _check_counts(counts: ArrayLike2x2, name: str = "counts") -> NDArray[np.int64]:
    """A 2x2 table of non-negative integer counts with equal positive row totals, as int64.

    Values are read as Python ints first, so uint64 or object tables never wrap around.
    """
    if is_bool(counts) or isinstance(counts, (str, bytes)):
        raise TypeError(f"{name} must be a 2x2 table of integers, got {type(counts).__name__}")
    try:
        arr = np.asarray(counts)
    except Exception as exc:  # ragged nested lists and other oddities
        raise TypeError(f"{name} must be a 2x2 table of integers ({exc})") from exc
    if arr.shape != (2, 2):
        raise ValueError(f"{name} must have shape (2, 2), got {arr.shape}")
    if arr.dtype.kind == "f":
        if not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
            raise TypeError(f"{name} must be integers, got dtype {arr.dtype} with non-integral values")
    elif arr.dtype.kind == "O":
        if not all(isinstance(v, numbers.Integral) and not is_bool(v) for v in arr.ravel()):
            raise TypeError(f"{name} must be integers")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got dtype {arr.dtype}")
    values = [[int(v) for v in row] for row in arr.tolist()]
    if any(v < 0 for row in values for v in row):
        raise ValueError(f"{name} must be non-negative")
    totals = [sum(row) for row in values]
    if totals[0] != totals[1] or totals[0] < 1:
        raise ValueError(f"{name} rows must have equal positive totals (trials per dataset), got {totals}")
    if totals[0] > MAX_TRIALS:
        raise ValueError(f"{name} rows total {totals[0]} trials, more than MAX_TRIALS = {MAX_TRIALS}")
    return np.array(values, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# Clopper-Pearson bounds
# ---------------------------------------------------------------------------------------------


def _cp_lower(k: int, t: int, alpha: float) -> float:
    """One-sided exact (Clopper-Pearson) lower bound for a binomial proportion, error ``alpha``."""
    from scipy import stats  # imported lazily: scipy.stats takes ~0.5 s to import

    return 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, t - k + 1))


def _cp_upper(k: int, t: int, alpha: float) -> float:
    """One-sided exact (Clopper-Pearson) upper bound for a binomial proportion, error ``alpha``."""
    from scipy import stats

    return 1.0 if k == t else float(stats.beta.ppf(1.0 - alpha, k + 1, t - k))


# ---------------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AuditResult:
    """Outcome of :func:`estimate_loss`.

    Parameters
    ----------
    loss : float
        Estimated privacy loss, ``max_y |ln(counts[0, y] / counts[1, y])|`` over guesses that
        occurred; ``math.inf`` when one count of a pair is zero.  Never NaN.
    counts : array_like, shape (2, 2)
        Read-only 2x2 int array ``counts[d, y]``: dataset ``d`` (0 = all zeros ``D``, 1 = all
        ones ``D'``), guess ``y``.  Each row sums to ``trials``.
    trials, n, epsilon : int, int, float
        The experiment's parameters (trials per dataset).
    seed : int, tuple of int or None
        The entropy of the :class:`numpy.random.SeedSequence` used (the ``rng`` argument, or the
        fresh entropy drawn when it was ``None``): ``estimate_loss(..., rng=result.seed)``
        repeats the run exactly.
    mechanism : str
        The mechanism's name.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind or out of range, or ``loss`` or ``trials`` disagree with ``counts``.
    """

    loss: float
    counts: NDArray[np.int64]
    trials: int
    n: int
    epsilon: float
    seed: int | tuple[int, ...] | None = None
    mechanism: str = ""

    def __post_init__(self) -> None:
        counts = _check_counts(self.counts)
        counts.setflags(write=False)
        trials = check_int(self.trials, "trials", minimum=1, maximum=MAX_TRIALS)
        if trials != int(counts[0].sum()):
            raise ValueError(f"trials must equal each row total of counts ({int(counts[0].sum())}), got {trials}")
        loss = check_real(self.loss, "loss", low=0.0, allow_inf=True)
        expected = loss_from_counts(counts)
        if not (loss == expected or math.isclose(loss, expected, rel_tol=1e-12, abs_tol=1e-12)):
            raise ValueError(f"loss must be the loss its counts give ({expected!r}), got {loss!r}")
        values = {
            "counts": counts,
            "trials": trials,
            "loss": expected,
            "n": check_int(self.n, "n", minimum=1, maximum=MAX_N),
            "epsilon": check_positive(self.epsilon, "epsilon"),
            "seed": check_seed(self.seed),
            "mechanism": check_str(self.mechanism, "mechanism"),
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    @classmethod
    def from_counts(
        cls,
        counts: ArrayLike2x2,
        *,
        n: int,
        epsilon: float,
        seed: int | tuple[int, ...] | None = None,
        mechanism: str = "",
    ) -> "AuditResult":
        """Build a result from a 2x2 count table (e.g. one read back from a CSV file).

        Parameters
        ----------
        counts : array_like, shape (2, 2)
            Non-negative integer counts ``counts[d, y]`` with equal row totals (the trials per dataset).
        n, epsilon : int, float
            The experiment's dimension and claimed epsilon.
        seed : int, tuple of int or None, optional
            The recorded seed entropy, if known.
        mechanism : str, optional
            The mechanism's name.

        Returns
        -------
        AuditResult
            The result, its loss computed from ``counts``.

        Raises
        ------
        TypeError, ValueError
            If ``counts`` is not such a table, or another parameter is out of range (naming it).

        Examples
        --------
        >>> AuditResult.from_counts([[60, 40], [40, 60]], n=1, epsilon=1.0).loss  # doctest: +ELLIPSIS
        0.405...
        """
        c = _check_counts(counts)
        return cls(
            loss=loss_from_counts(c),
            counts=c,
            trials=int(c[0].sum()),
            n=n,
            epsilon=epsilon,
            seed=seed,
            mechanism=mechanism,
        )

    # -- confidence bounds -------------------------------------------------------------------

    def _box(self, confidence_level: float) -> tuple[list[list[float]], list[list[float]]]:
        """Log lower/upper bounds ``lo[d][y]``, ``hi[d][y]`` on ``P(y | d)``, each at error alpha/4.

        For each dataset d the two one-sided intervals on ``P(y=1 | d)`` (lower and upper) are the
        only random events; the bounds on ``P(y=0 | d) = 1 - P(y=1 | d)`` are the same events
        (the Clopper-Pearson bounds are symmetric), computed directly so that nothing loses
        precision near 0 or 1.  Four one-sided intervals in all.
        """
        alpha = 1.0 - check_probability(confidence_level, "confidence_level")
        a = alpha / 4.0
        t = self.trials
        lo = [[_log(_cp_lower(int(self.counts[d, y]), t, a)) for y in (0, 1)] for d in (0, 1)]
        hi = [[_log(_cp_upper(int(self.counts[d, y]), t, a)) for y in (0, 1)] for d in (0, 1)]
        return lo, hi

    @renamed_parameters(confidence="confidence_level")
    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Simultaneous ``(lower, upper)`` confidence bounds on the true loss at ``confidence_level``.

        Construction.  Write ``p_d = P(guess 1 | dataset d)``; the true loss is
        ``L(p_0, p_1) = max(|ln(p_0 / p_1)|, |ln((1 - p_0) / (1 - p_1))|)``.  ``counts[d, 1]`` is
        Binomial(trials, p_d), independently for d = 0, 1.  Take the exact Clopper-Pearson
        one-sided lower and upper bounds (beta quantiles, ``scipy.stats.beta.ppf``) for ``p_0``
        and for ``p_1``, each with error ``alpha / 4`` (``alpha = 1 - confidence_level``).  By the union
        (Bonferroni) bound over these four one-sided intervals, the true ``(p_0, p_1)`` lies in
        the box ``[lo_0, hi_0] x [lo_1, hi_1]`` with probability at least ``1 - alpha``.  On that
        event the true loss lies between the minimum and the maximum of ``L`` over the box:

        * lower: if the intervals overlap, ``p_0 = p_1`` is possible and the bound is 0.  If
          ``hi_0 < lo_1``, both terms of ``L`` are smallest at the corner ``(hi_0, lo_1)``; in
          general the minimum is ``max(0, max over y and d != d' of ln lo(P(y|d)) -
          ln hi(P(y|d')))``, which is what is computed;
        * upper: for fixed ``p_1`` each term is quasi-convex in ``p_0`` (and vice versa), so the
          maximum is attained at one of the four corners.

        Parameters
        ----------
        confidence_level : float, optional
            The simultaneous coverage probability, in (0, 1).  (Deprecated alias: ``confidence``.)

        Returns
        -------
        tuple of float
            ``(lower, upper)``.  The lower end can be 0 (nothing can be said) and the upper end
            infinite (a count of 0 or ``trials`` leaves ``P(y | d) = 0`` possible).

        Raises
        ------
        TypeError, ValueError
            If ``confidence_level`` is not a probability strictly between 0 and 1.
        """
        lo, hi = self._box(confidence_level)
        lower = 0.0
        for y in (0, 1):
            for d in (0, 1):
                diff = lo[d][y] - hi[1 - d][y]  # lo is finite whenever it matters; hi never -inf
                if diff > lower:
                    lower = diff
        upper = 0.0
        # Corners: (P(1|0), P(0|0)) is (lo, hi) or (hi, lo) jointly, likewise for d = 1.
        for c0 in (0, 1):
            for c1 in (0, 1):
                row0 = [hi[0][0], lo[0][1]] if c0 == 0 else [lo[0][0], hi[0][1]]
                row1 = [hi[1][0], lo[1][1]] if c1 == 0 else [lo[1][0], hi[1][1]]
                upper = max(upper, loss_from_logs([row0, row1]))
        return lower, upper

    @renamed_parameters(confidence="confidence_level")
    def lower_bound(self, confidence_level: float = 0.95) -> float:
        """One-sided lower confidence bound on the true privacy loss of the attack.

        The lower end of :meth:`confidence_interval` (see there for the construction: exact
        Clopper-Pearson bounds on ``P(guess 1 | D)`` and ``P(guess 1 | D')``, four one-sided
        intervals, each with error ``(1 - confidence_level) / 4``, combined by a union bound).

        Parameters
        ----------
        confidence_level : float, optional
            In (0, 1).  (Deprecated alias: ``confidence``.)

        Returns
        -------
        float
            With probability at least ``confidence_level`` the true loss is at least this value.  It
            is 0 when the data cannot rule out a loss of 0.

        Raises
        ------
        TypeError, ValueError
            If ``confidence_level`` is not a probability strictly between 0 and 1.
        """
        return self.confidence_interval(confidence_level)[0]

    @renamed_parameters(confidence="confidence_level")
    def is_violation(self, confidence_level: float = 0.95) -> bool:
        """Whether the lower confidence bound exceeds ``epsilon``.

        Parameters
        ----------
        confidence_level : float, optional
            In (0, 1).  (Deprecated alias: ``confidence``.)

        Returns
        -------
        bool
            True when the mechanism is shown not to be epsilon-DP, with error probability at most
            ``1 - confidence_level``.

        Raises
        ------
        TypeError, ValueError
            If ``confidence_level`` is not a probability strictly between 0 and 1.
        """
        return self.lower_bound(confidence_level) > self.epsilon

    # -- display -----------------------------------------------------------------------------

    @renamed_parameters(confidence="confidence_level")
    def summary(self, confidence_level: float = 0.95) -> str:
        """A short multi-line description: parameters, count table, loss, bound and verdict.

        Parameters
        ----------
        confidence_level : float, optional
            The level of the interval shown, in (0, 1).  (Deprecated alias: ``confidence``.)

        Returns
        -------
        str
            Six lines of text.

        Raises
        ------
        TypeError, ValueError
            If ``confidence_level`` is not a probability strictly between 0 and 1.
        """
        confidence = check_probability(confidence_level, "confidence_level")
        lower, upper = self.confidence_interval(confidence)
        width = max(10, len(str(int(self.counts.max()))) + 2)
        pct = f"{100 * confidence:g}%"
        verdict = (
            f"lower bound > epsilon = {self.epsilon:g}: NOT {self.epsilon:g}-DP"
            if lower > self.epsilon
            else f"no violation detected at epsilon = {self.epsilon:g} (which does not prove DP)"
        )
        name = self.mechanism or "mechanism"
        label0, label1 = "D  (zeros)", "D' (ones)"
        lines = [
            f"Audit of {name}: n={self.n}, epsilon={self.epsilon:g}, trials={self.trials} per dataset, seed={self.seed}",
            f"{'':<14}{'guess 0':>{width}}{'guess 1':>{width}}",
            f"{label0:<14}{self.counts[0, 0]:>{width}}{self.counts[0, 1]:>{width}}",
            f"{label1:<14}{self.counts[1, 0]:>{width}}{self.counts[1, 1]:>{width}}",
            f"estimated loss {format_loss(self.loss)}; {pct} interval [{format_loss(lower)}, {format_loss(upper)}]",
            verdict,
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (
            f"AuditResult(mechanism={self.mechanism!r}, n={self.n}, epsilon={self.epsilon!r}, "
            f"trials={self.trials}, loss={self.loss!r}, counts={self.counts.tolist()}, seed={self.seed!r})"
        )



def format_loss(x: float) -> str:
    return "inf" if x == math.inf else f"{x:.4g}"

