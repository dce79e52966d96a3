"""The bounds of :func:`dptutor.audit.pair.audit_pair`: choose the event on the selection half, bound it on the
estimation half, and the result, :class:`PairAudit`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_choice,
    check_float_array,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_seed,
    check_tallies,
    shown,
)
from dptutor.audit._binomial import exact_interval, exact_one_sided
from dptutor.audit._pair_cells import Layout, callable_name
from dptutor.audit._sanity_result import format_loss
from dptutor.audit.paired import paired_projection, paired_ratio_bound

#: The ways :func:`audit_pair` bounds the chosen event's probabilities (``bounds=``).
PAIR_BOUNDS: tuple[str, ...] = ("four", "two", "joint")
#: ``bounds="joint"`` measures the event on a Poisson number of the estimation half's runs, with mean
#: ``T_est - POISSON_MARGIN * sqrt(T_est)``; when the draw exceeds ``T_est`` (probability about 1e-9) the
#: bound is 0, so the statement stays exact.
POISSON_MARGIN: float = 6.0
#: ``bounds="joint"`` also lets the selection half propose a cautious event: the cut whose score counts the
#: selection half's own noise at BACKUP_Z standard errors instead of at the bound's ``z``.  When it differs
#: from the first, the first is bounded at error ``(1 - BACKUP_SHARE) gamma``, the cautious one at
#: ``BACKUP_SHARE gamma``, and the larger bound is reported (a union bound over two events that the selection
#: half fixed).  Among the thousands of nested cuts of a real output, many of equal loss, the first cut
#: is sometimes a thin tail that won on the selection half's noise (see ``benchmarks/README.md``).
BACKUP_Z: float = 3.0
BACKUP_SHARE: float = 0.1

__all__ = ["BACKUP_SHARE", "BACKUP_Z", "PAIR_BOUNDS", "POISSON_MARGIN", "PairAudit"]


def _count_tables(value: Any, name: str, shape: tuple[int, ...], what: str) -> NDArray[np.int64]:
    """``value`` as a read-only int64 array of ``shape`` holding non-negative integer counts, else a ValueError
    naming ``name`` (the counts of :class:`PairAudit` and its candidates)."""
    table = check_float_array(value, name, finite=True)
    if table.shape != shape or (table < 0).any() or (table != np.round(table)).any() or table.max() >= 2.0**62:
        shown = table.tolist() if table.size <= 8 else f"an array of shape {table.shape}"
        raise ValueError(f"{name} must be {what} of non-negative integers, got {shown}")
    out = table.astype(np.int64)
    out.setflags(write=False)
    return out


def _wilson(p: NDArray[np.float64], n: int, z: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score bounds for proportions ``p`` at sample size ``n``: a cheap, vectorised
    stand-in for Clopper-Pearson, used only to *choose* the event on the selection half."""
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return np.maximum(centre - half, 0.0), np.minimum(centre + half, 1.0)


def _log_ratio(num: Any, den: Any) -> Any:
    """``ln(num / den)`` elementwise, ``-inf`` where ``num <= 0`` (``den`` is always > 0)."""
    num = np.asarray(num, dtype=np.float64)
    out = np.full(num.shape, -np.inf)
    ok = num > 0
    out[ok] = np.log(num[ok]) - np.log(np.asarray(den, dtype=np.float64)[ok] if np.ndim(den) else den)
    return out


def _joint_bound(k_num: int, k_den: int, n: int, alpha: float, seed: Any) -> float:
    """The ``bounds="joint"`` lower bound on ``ln(p_num / p_den)`` from the event's counts ``k_num`` and
    ``k_den`` among ``n`` runs of each dataset (the joint variant of the book's split-sample audit).

    Each dataset keeps a uniformly random subset of its runs whose size ``R`` is Poisson with mean
    ``R_bar = n - POISSON_MARGIN * sqrt(n)`` (a draw seeded by ``seed``, independent of the runs).  The counts
    of the event in the kept runs are then independent Poisson variables with means ``R_bar p_num`` and
    ``R_bar p_den``, so given their sum ``m`` the numerator's count is ``Binomial(m, w)`` with the share
    ``w = p_num / (p_num + p_den)`` (the book's varpi).  The one-sided Clopper-Pearson bound at error ``alpha`` on
    ``w`` gives ``ln(w_lo / (1 - w_lo))``.  If either ``R`` exceeds ``n`` (probability about 1e-9), the bound is 0."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3,)))
    lam = max(0.0, n - POISSON_MARGIN * math.sqrt(n))
    kept = []
    for k in (k_num, k_den):
        size = int(rng.poisson(lam))
        if size > n:
            return 0.0
        kept.append(int(rng.hypergeometric(k, n - k, size)) if size > 0 else 0)
    m = kept[0] + kept[1]
    share_lo = exact_one_sided(kept[0], m, alpha, lower=True) if m > 0 else 0.0
    if share_lo <= 0.0:
        return 0.0
    return max(0.0, math.log(share_lo) - math.log1p(-share_lo))


#: The four (event, direction) pairs compared for a prefix P of the cells: (complement?, numerator).
_COMBOS = ((False, 0), (False, 1), (True, 0), (True, 1))


@dataclass(frozen=True, eq=False)
class PairAudit:
    """Outcome of :func:`audit_pair`.

    Parameters
    ----------
    lower_bound : float
        With probability at least ``confidence``, the mechanism's true epsilon (at ``delta``) is at
        least this value; never negative, never NaN.
    estimate : float
        The plug-in value ``ln((p - delta) / p')`` of the chosen event on the estimation half
        (``math.inf`` when ``p' = 0``); a point estimate, not a bound.
    event : str
        The chosen event S, in words, with the dataset under which it is more likely.
    counts : array_like, shape (2, 2)
        Read-only 2x2 int array from the estimation half: row 0 is the dataset under which S is
        more likely (the numerator), row 1 the other; column 0 counts outputs in S, column 1 not in S.
    trials, selection_trials, estimation_trials : int
        Runs per dataset in all, used to choose S, and used to estimate its probabilities.
    epsilon, delta, confidence : float
        The claimed epsilon, the delta of the bound, and the confidence level.
    seed : int, tuple of int or None
        The SeedSequence entropy: ``audit_pair(..., rng=result.seed)`` repeats the run exactly.
    mechanism : str
        The mechanism's name.
    threshold : float or None
        For threshold events, the threshold t (S is ``value >= t`` or ``value < t``); else None.
    false_positive_rates, false_negative_rates : array_like or None
        Read-only arrays: the empirical trade-off points (type I error ``P[M(x) in E]``, type II
        error ``P[M(x') not in E]``) of every candidate event E on the estimation half, for a test
        that rejects "the data is x" when the output lands in E (see :meth:`tradeoff`).
    bounds : {"four", "two", "joint"}, optional
        How the event's probabilities were bounded (``audit_pair``'s ``bounds``), for :meth:`bound_at`.
    candidates : array_like or None, optional
        ``bounds="joint"`` with two candidate events (the first cut and a different cautious one): their
        estimation counts, shape ``(2, 2, 2)``, each table oriented like ``counts``, the first cut's first;
        ``counts`` is one of the two.  None when one event was bounded.
    paired : tuple of bool or None, optional
        ``bounds="joint"``: for each event bounded (the first cut's first), whether its bound is the paired difference
        bound (``dptutor.audit.paired``, chosen by the selection half for frequent events) rather than the share
        after a Poisson thinning.  None: the share (as for results made before the choice existed).
    tallies : mapping or None, optional
        For outputs counted value by value: each output value seen (an int, or a tuple of ints) mapped to how
        often it came out under ``x`` and under ``x_prime`` over all the audit's runs, both halves (a new dict;
        ``audit_pair(..., prior=result.tallies)`` lets a later audit of the same pair choose its event with them).
        None for real outputs, counted in histogram cells.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind or out of range (naming it).
    """

    lower_bound: float
    estimate: float
    event: str
    counts: NDArray[np.int64]
    trials: int
    epsilon: float
    delta: float = 0.0
    confidence: float = 0.95
    seed: int | tuple[int, ...] | None = None
    mechanism: str = ""
    selection_trials: int = 0
    estimation_trials: int = 0
    threshold: float | None = None
    false_positive_rates: Any = None
    false_negative_rates: Any = None
    bounds: str = "four"
    candidates: Any = None
    tallies: Any = None
    paired: Any = None

    def __post_init__(self) -> None:
        check_real(self.lower_bound, "lower_bound", low=0.0)
        check_real(self.estimate, "estimate", low=0.0, allow_inf=True)
        check_positive(self.epsilon, "epsilon")
        check_real(self.delta, "delta", low=0.0, high=1.0, high_open=True)
        check_probability(self.confidence, "confidence")
        check_int(self.trials, "trials", minimum=1)
        if not isinstance(self.event, str):
            raise TypeError(f"event must be a string, got {type(self.event).__name__}")
        if not isinstance(self.mechanism, str):
            raise TypeError(f"mechanism must be a string, got {type(self.mechanism).__name__}")
        check_seed(self.seed, "seed")
        check_int(self.selection_trials, "selection_trials", minimum=0)
        check_int(self.estimation_trials, "estimation_trials", minimum=0)
        if self.threshold is not None:
            check_real(self.threshold, "threshold", allow_inf=True)
        counts = _count_tables(self.counts, "counts", (2, 2), "a 2x2 table")
        object.__setattr__(self, "counts", counts)
        for field in ("false_positive_rates", "false_negative_rates"):
            value = getattr(self, field)
            arr = np.empty(0) if value is None else check_float_array(value, field, finite=True, ndim=1).copy()
            arr.setflags(write=False)
            object.__setattr__(self, field, arr)
        if self.false_positive_rates.shape != self.false_negative_rates.shape:
            raise ValueError("false_positive_rates and false_negative_rates must have the same length")
        check_choice(self.bounds, "bounds", PAIR_BOUNDS)
        if self.candidates is not None:
            both = _count_tables(self.candidates, "candidates", (2, 2, 2), "two 2x2 tables")
            if self.bounds != "joint":
                raise ValueError(f"candidates go with bounds='joint' only, got bounds={self.bounds!r}")
            if not any((table == counts).all() for table in both):
                raise ValueError("counts must be one of the candidates' tables")
            object.__setattr__(self, "candidates", both)
        if self.tallies is not None:
            object.__setattr__(self, "tallies", check_tallies(self.tallies, "tallies"))
        if self.paired is not None:
            object.__setattr__(self, "paired", _check_paired(self.paired, self.bounds, self.candidates))

    def bound_at(self, confidence_level: float) -> float:
        """The lower bound at another confidence level, from the same event and estimation counts.

        The event, its direction and its side were fixed by the selection half whatever the level, so only
        the last step changes: the two exact one-sided bounds (``"two"``: each at ``(1 - confidence_level) / 2``;
        ``"four"``: the reported combination's, each at a quarter of the error), or the joint bound on the
        numerator's share after the same seeded Poisson thinning or the paired difference bound, as
        :attr:`paired` records (``"joint"``).  At :attr:`confidence` it is
        :attr:`lower_bound` (for ``"four"``, when that is positive).

        Parameters
        ----------
        confidence_level : float
            The probability, in (0, 1), with which the new bound holds.

        Returns
        -------
        float
            The lower bound on epsilon at ``confidence_level``, never negative.

        Raises
        ------
        TypeError, ValueError
            Naming the bad parameter.
        """
        alpha = 1.0 - check_probability(confidence_level, "confidence_level")
        n = self.estimation_trials or int(self.counts[0].sum())
        flags = self.paired or (False, False)
        if self.candidates is None:
            return _fixed_event_bound(int(self.counts[0, 0]), int(self.counts[1, 0]), n, alpha, self.delta, self.bounds,
                                      self.seed, paired=flags[0])
        return max(_fixed_event_bound(int(t[0, 0]), int(t[1, 0]), n, share * alpha, self.delta, self.bounds, self.seed,
                                      paired=flag)
                   for t, share, flag in zip(self.candidates, _candidate_shares(), flags))

    def is_violation(self) -> bool:
        """True when the lower bound exceeds the claimed ``epsilon``: the mechanism is not
        (epsilon, delta)-DP, with error probability at most ``1 - confidence``.

        Returns
        -------
        bool
        """
        return self.lower_bound > self.epsilon

    def tradeoff(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The empirical trade-off points ``(alpha, beta)``, sorted by ``alpha``.

        ``alpha`` is the false-positive rate ``P[M(x) in E]`` and ``beta`` the false-negative rate
        ``P[M(x') not in E]`` of each candidate event E, on the estimation half (plug-in values, not
        bounds).  For an f-DP mechanism the points lie above its trade-off curve f, up to sampling
        error; for the Gaussian mechanism f(alpha) = Phi(Phi^-1(1 - alpha) - mu).

        Returns
        -------
        tuple of numpy.ndarray
            ``(alpha, beta)``, read-only arrays of equal length.
        """
        order = np.argsort(self.false_positive_rates, kind="stable")
        return self.false_positive_rates[order], self.false_negative_rates[order]

    def summary(self) -> str:
        """A short multi-line report: parameters, the event, its counts, the bound and the verdict.

        Returns
        -------
        str
            Five lines of text.
        """
        n = self.estimation_trials or int(self.counts[0].sum())
        pct = f"{100 * self.confidence:g}%"
        eps_name = f"({self.epsilon:g}, {self.delta:g})" if self.delta else f"{self.epsilon:g}"
        verdict = (
            f"lower bound > epsilon = {self.epsilon:g}: NOT {eps_name}-DP"
            if self.is_violation()
            else f"no violation detected at epsilon = {self.epsilon:g} (which does not prove DP)"
        )
        return "\n".join(
            [
                f"Pair audit of {self.mechanism or 'mechanism'}: claimed epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"trials={self.trials} per dataset ({self.selection_trials} to choose S, {n} to estimate), seed={self.seed}",
                f"event S: {self.event}" + ("" if self.candidates is None else
                                            " (the larger bound of two candidate events, at {:g} and {:g} of the error)"
                                            .format(*_candidate_shares())),
                f"in S: {self.counts[0, 0]} of {n} (numerator dataset), {self.counts[1, 0]} of {n} (other)",
                f"estimated loss {format_loss(self.estimate)}; {pct} lower bound {self.lower_bound:.4g}",
                verdict,
            ]
        )

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (
            f"PairAudit(mechanism={self.mechanism!r}, epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"lower_bound={self.lower_bound!r}, estimate={self.estimate!r}, event={self.event!r}, "
            f"counts={self.counts.tolist()}, trials={self.trials}, seed={self.seed!r})"
        )


def _check_paired(value: Any, bounds: str, candidates: Any) -> tuple[bool, ...]:
    """``PairAudit.paired``: a tuple of bools, one per event bounded, with ``bounds="joint"`` only."""
    if not isinstance(value, tuple) or not all(isinstance(v, bool) for v in value):
        raise TypeError(f"paired must be a tuple of bools, got {shown(value)}")
    if bounds != "joint":
        raise ValueError(f"paired goes with bounds='joint' only, got bounds={bounds!r}")
    if len(value) != (1 if candidates is None else 2):
        raise ValueError(f"paired must have one entry per event bounded ({1 if candidates is None else 2}), got {len(value)}")
    return value


def _describe_set(keys: list[Any]) -> str:
    shown = ", ".join(map(str, keys[:8]))
    if len(keys) <= 8:
        return f"output in {{{shown}}}"
    return f"output in a set of {len(keys)} values {{{shown}, ...}}"


def bound_from_counts(
    sel: NDArray[np.int64], est: NDArray[np.int64], n_sel: int, n_est: int, layout: Layout, keys: list[Any],
    epsilon: float, delta: float, confidence: float, trials: int, seed: Any, name: str, n_fit: int = 0,
    bounds: str = "four", selection: float = 0.5, prior_runs: int = 0, tallies: Any = None,
) -> PairAudit:
    """Choose the cut on the selection counts, bound its probabilities on the estimation counts.

    ``sel`` and ``est`` are ``(2, cells)`` counts (row 0 for ``x``, row 1 for ``x_prime``) with
    the cells in the order whose prefixes are the candidate events.  ``bounds="four"``: the estimation
    half bounds both probabilities of the cut's prefix on both sides (four one-sided bounds at error
    ``gamma / 4``) and takes the best of the four (direction, S or its complement); ``"two"``: the
    selection half also chooses the direction and the side, and the estimation half needs only a lower
    bound on the numerator and an upper bound on the denominator, each at error ``gamma / 2``.
    ``sel`` may include ``prior_runs`` earlier runs of each dataset (``audit_pair``'s ``prior``): they choose the cut
    with the rest of ``sel``; ``tallies`` (this audit's own counts, discrete outputs) is stored in the result.
    """
    alpha = 1.0 - confidence
    cells = sel.shape[1]
    zero = np.zeros((2, 1), dtype=np.int64)
    cum_sel = np.concatenate([zero, np.cumsum(sel, axis=1)], axis=1)
    cum_est = np.concatenate([zero, np.cumsum(est, axis=1)], axis=1)
    fpr = np.concatenate([cum_est[0], n_est - cum_est[0]]) / n_est
    fnr = np.concatenate([n_est - cum_est[1], cum_est[1]]) / n_est

    if cells < 2:  # every output identical: no event tells the datasets apart
        counts = np.array([[n_est, 0], [n_est, 0]])
        return PairAudit(
            lower_bound=0.0, estimate=0.0, event="none (every output was the same value)", counts=counts,
            trials=trials, epsilon=epsilon, delta=delta, confidence=confidence, seed=seed, mechanism=name,
            selection_trials=n_sel + n_fit, estimation_trials=n_est, false_positive_rates=fpr, false_negative_rates=fnr,
            bounds=bounds, tallies=tallies,
        )

    each = alpha / 4.0 if bounds == "four" else alpha / 2.0
    n_choose = n_sel + prior_runs  # with a prior, bounds="four" scores by the runs' split, not the fraction asked
    share = selection if prior_runs == 0 else n_choose / (n_choose + n_est)
    picks = _candidate_cuts(cum_sel, n_choose, n_est, each, alpha, delta, bounds, share)

    # 2. Estimation: exact (Clopper-Pearson) bounds on the estimation half's counts; the larger of two candidates.
    found = []
    for combo_sel, cut, paired, alpha_i in picks:
        k = [int(cum_est[0, cut]), int(cum_est[1, cut])]
        combo, lower = _estimate(k, n_est, each, alpha_i, delta, bounds, combo_sel, seed, paired)
        complement, num = _COMBOS[combo]
        k_in = [n_est - k[d] if complement else k[d] for d in (0, 1)]
        table = np.array([[k_in[num], n_est - k_in[num]], [k_in[1 - num], n_est - k_in[1 - num]]])  # numerator first
        found.append((lower, cut, combo, table))
    won = int(np.argmax([f[0] for f in found]))  # the first cut's on a tie
    lower, cut, combo, counts = found[won]
    complement, num = _COMBOS[combo]
    p_num, p_den = counts[0, 0] / n_est, counts[1, 0] / n_est
    if p_num - delta <= 0:
        estimate = 0.0
    elif p_den == 0:
        estimate = math.inf
    else:
        estimate = max(0.0, math.log((p_num - delta) / p_den))

    more_likely = "x" if num == 0 else "x_prime"
    threshold = None
    if layout.mode == "real":
        threshold = layout.boundary(cut)
        label = "output" if layout.statistic is None else f"{callable_name(layout.statistic)}(output)"
        event = f"{label} {'>=' if complement else '<'} {threshold:.6g}"
    else:
        event = _describe_set(keys[cut:] if complement else keys[:cut])
    return PairAudit(
        lower_bound=lower, estimate=estimate, event=f"{event} (more likely under {more_likely})", counts=counts,
        trials=trials, epsilon=epsilon, delta=delta, confidence=confidence, seed=seed, mechanism=name,
        selection_trials=n_sel + n_fit, estimation_trials=n_est, threshold=threshold,
        false_positive_rates=fpr, false_negative_rates=fnr, bounds=bounds,
        candidates=np.stack([f[3] for f in found]) if len(found) == 2 else None, tallies=tallies,
        paired=tuple(pick[2] for pick in picks) if bounds == "joint" else None,
    )


def _candidate_cuts(
    cum_sel: NDArray[np.int64], n_sel: int, n_est: int, each: float, alpha: float, delta: float, bounds: str,
    selection: float,
) -> list[tuple[int, int, bool, float]]:
    """The events to bound, as ``(combination, cut, paired, error)``: the selection half's cut at the whole error, or
    with ``bounds="joint"`` and a different cautious cut (:data:`BACKUP_Z`), both, the error split by
    :data:`BACKUP_SHARE`; ``paired`` says which bound ``"joint"`` uses for the event (:func:`_best_cut`)."""
    first = _choose_cut(cum_sel, n_sel, n_est, each, delta, bounds, selection)
    shares = _candidate_shares()
    if bounds == "joint" and shares[1] > 0:  # 0: no cautious candidate (how the benchmarks compare the two)
        z_backup = check_real(BACKUP_Z, "BACKUP_Z", low=0.0, low_open=True)
        backup = _choose_cut(cum_sel, n_sel, n_est, each, delta, bounds, selection, z_sel=z_backup)
        if backup[:2] != first[:2]:
            return [(*cut, share * alpha) for cut, share in zip((first, backup), shares)]
    return [(*first, alpha)]


def _candidate_shares() -> tuple[float, float]:
    """The error shares of the first and the cautious event (read at call time: BACKUP_SHARE may be changed, to a
    share in [0, 1))."""
    share = check_real(BACKUP_SHARE, "BACKUP_SHARE", low=0.0, high=1.0, high_open=True)
    return (1.0 - share, share)


def _choose_cut(
    cum_sel: NDArray[np.int64], n_sel: int, n_est: int, each: float, delta: float, bounds: str, selection: float,
    z_sel: float | None = None,
) -> tuple[int, int, bool]:
    """:func:`_best_cut` without its score."""
    combo_sel, cut, _, paired = _best_cut(cum_sel, n_sel, n_est, each, delta, bounds, selection, z_sel)
    return combo_sel, cut, paired


def _best_cut(
    cum_sel: NDArray[np.int64], n_sel: int, n_est: int, each: float, delta: float, bounds: str, selection: float,
    z_sel: float | None = None,
) -> tuple[int, int, float, bool]:
    """Selection: ``(combination, cut, score, paired)`` that maximise the projected lower bound (the score) of each cut j (prefix = first
    j cells) and combination, at the estimation half's size, with Wilson bounds in place of the exact ones.
    ``z_sel`` (the cautious candidate of ``bounds="joint"``) counts the selection half's noise at that many
    standard errors instead of at the bound's ``z``.

    ``cum_sel`` holds the selection half's cumulative counts ``(2, cells + 1)``; ``each`` is the error of each
    final one-sided bound.  With ``bounds="joint"`` each cut is also scored for the paired difference bound
    (``paired_projection``), and ``paired`` says whether that score won: the bound the estimation half will use.
    """
    from scipy import stats

    cells = cum_sel.shape[1] - 1
    # The score widens the final z by the selection half's own noise, by the factor 1 + sqrt(n_est / n_sel)
    # (so the half-width is z times the estimation half's standard error plus z times that of the runs
    # that choose the cut): a cautious score that prefers events with larger probabilities where the
    # estimated ratios tie, so that noise in the selection counts rarely picks a cut in a thin tail.
    # (Measured on DP-Sniper's benchmark at 10^7 runs with 30% for selection: half that selection term
    # let RAPPOR's learned statistic choose a tail with 1,567 runs in it, bound 0.173 instead of 0.287.)
    # bounds="four" keeps the rule the book's results were recorded with: the requested fractions in
    # place of the counts, so the factor is exactly 2 at the default split, learned statistic or not.
    # bounds="joint" scores a cut by the Wilson bound on the share of the numerator among the event's runs
    # (the quantity its estimation step bounds), at the expected number of such runs, with the caution of
    # the two-bound score (z at gamma/2): at z(gamma) it chose a tail of 1,262 runs of 7*10^6 for
    # LaplaceParallel's learned statistic at 10^7 runs, bound 0; with this caution, 0.045.
    ratio = (1.0 - selection) / selection if bounds == "four" else n_est / n_sel
    z = float(stats.norm.isf(each))
    z += (z if z_sel is None else z_sel) * math.sqrt(ratio)
    j = np.arange(1, cells)
    p = cum_sel[:, 1:cells] / n_sel  # (2, cells - 1): P[prefix] under x and x_prime
    scores, paired = [], []
    for complement, num in _COMBOS:
        q = 1.0 - p if complement else p
        if bounds == "joint":
            both = q[num] + q[1 - num]
            share = np.divide(q[num], both, out=np.zeros_like(both), where=both > 0)
            lo, _ = _wilson(share, np.maximum(both * n_est, 1.0), z)
            score = _log_ratio(lo, np.maximum(1.0 - lo, 1e-300))
            score[both <= 0] = -np.inf
            other = paired_projection(q[num], q[1 - num], n_est, z, 2.0 * each)
            paired.append(other > score)
            scores.append(np.maximum(score, other))
            continue
        lo, _ = _wilson(q[num], n_est, z)
        _, hi = _wilson(q[1 - num], n_est, z)
        scores.append(_log_ratio(lo - delta, hi))
    scores_arr = np.stack(scores)
    # A cut whose prefix is empty or everything on the selection half tells nothing: never choose it
    # (its score, about -1/n, would otherwise beat informative cuts whose scores are all negative).
    seen = cum_sel[0, 1:cells] + cum_sel[1, 1:cells]
    scores_arr[:, (seen == 0) | (seen == 2 * n_sel)] = -np.inf
    best = int(np.argmax(scores_arr))
    combo_sel, cut = divmod(best, cells - 1)
    return combo_sel, int(j[cut]), float(scores_arr.flat[best]), bool(paired and np.stack(paired).flat[best])


def selection_score(sel: NDArray[np.int64], n_sel: int, n_est: int, confidence: float, delta: float, bounds: str,
                    selection: float, z_sel: float | None = None) -> float:
    """The projected lower bound of the cut that :func:`bound_from_counts` would choose on the selection counts
    ``sel`` (``(2, cells)``, real cells in value order): how ``audit_pair`` compares candidate statistics on its
    selection half; ``z_sel`` as for the cautious cut.  ``-inf`` when no cut tells the datasets apart."""
    if sel.shape[1] < 2:
        return -math.inf
    alpha = 1.0 - confidence
    each = alpha / 4.0 if bounds == "four" else alpha / 2.0
    cum_sel = np.concatenate([np.zeros((2, 1), dtype=np.int64), np.cumsum(sel, axis=1)], axis=1)
    return _best_cut(cum_sel, n_sel, n_est, each, delta, bounds, selection, z_sel)[2]


def _estimate(
    k: list[int], n_est: int, each: float, alpha: float, delta: float, bounds: str, combo_sel: int, seed: Any,
    paired: bool = False,
) -> tuple[int, float]:
    """Estimation: ``(combination, lower bound)`` from the event's counts ``k`` (of ``x``, of ``x_prime``) among
    ``n_est`` runs of each dataset, with exact (Clopper-Pearson) one-sided bounds."""
    if bounds == "four":
        # Both probabilities, both sides, at alpha/4 each: any of the four combinations may be reported.
        inside = [exact_interval(k[d], n_est, each) for d in (0, 1)]
        outside = [exact_interval(n_est - k[d], n_est, each) for d in (0, 1)]
        found = []
        for complement, num in _COMBOS:
            iv = outside if complement else inside
            found.append(float(_log_ratio(iv[num][0] - delta, iv[1 - num][1])))
        combo = int(np.argmax(found)) if max(found) > 0 else combo_sel
        lower = max(0.0, found[combo])
    else:
        # The combination was fixed on the selection half: one lower and one upper bound at alpha/2 each
        # ("two"), or one bound at alpha on the numerator's share of the event's runs ("joint").
        combo = combo_sel
        complement, num = _COMBOS[combo]
        k_c = [n_est - k[d] if complement else k[d] for d in (0, 1)]
        lower = _fixed_event_bound(k_c[num], k_c[1 - num], n_est, alpha, delta, bounds, seed, paired=paired)
    return combo, lower


def _fixed_event_bound(k_num: int, k_den: int, n: int, alpha: float, delta: float, bounds: str, seed: Any, *,
                       paired: bool = False) -> float:
    """The lower bound on ``ln((p_num - delta) / p_den)`` for an event, direction and side fixed in advance,
    from its counts ``k_num`` and ``k_den`` among ``n`` runs of each dataset at total error ``alpha``: the joint
    bound (``"joint"``: the share after a Poisson thinning, or the paired difference bound if ``paired``), or an
    exact lower bound on the numerator and upper bound on the denominator, each at ``alpha / 2`` (``"two"``) or
    ``alpha / 4`` (``"four"``, the reported combination of the four)."""
    if bounds == "joint":
        return paired_ratio_bound(k_num, k_den, n, 1.0 - alpha) if paired else _joint_bound(k_num, k_den, n, alpha, seed)
    each = alpha / 4.0 if bounds == "four" else alpha / 2.0
    low = exact_one_sided(k_num, n, each, lower=True)
    high = exact_one_sided(k_den, n, each, lower=False)
    return max(0.0, float(_log_ratio(low - delta, high)))
