"""Input-pair search: rank candidate pairs of neighbouring inputs on a pilot budget, confirm the best.

:func:`search_pairs` runs :func:`dptutor.audit.audit_pair` on every candidate pair with a small pilot
budget, ranks the pairs by their pilot lower bounds, and audits the ``confirm`` best again on fresh runs
(new seeds, independent of the pilot).  :func:`candidate_pairs` gives the standard candidates for a vector
of ``k`` query answers: the patterns of StatDP (Ding et al., CCS 2018) as DP-Sniper (Bichsel et al., IEEE
S&P 2021) uses them, each in both orders.

The multiple-testing correction.  The pilot chooses which pairs to confirm; it is then thrown away, so the
choice is a function of the pilot runs only, which are independent of the confirmation runs (the same
argument as the split between selection and estimation halves in one audit).  Each of the ``confirm``
confirmation audits runs at error ``(1 - confidence) / confirm`` (Bonferroni), so that, by the union
bound, all of them hold together with probability at least ``confidence``, and so does their maximum,
the reported bound.  The pilot bounds themselves are ranking scores, not confidence statements: with
``K`` candidates each at error ``gamma``, some pilot bound can be too high with probability up to
``K gamma``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_callable,
    check_float_array,
    check_int,
    check_probability,
    check_real,
    check_seed_sequence,
    check_sequence,
    renamed_parameters,
)
from dptutor.audit.pair import PairAudit, audit_pair

__all__ = ["PairSearch", "search_pairs", "candidate_pairs"]


def candidate_pairs(k: int, *, componentwise: bool = True) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    """StatDP's candidate pairs for ``k`` query answers of sensitivity 1, each pair in both orders.

    With ``componentwise=False`` (one entry changes by at most 1: counts, histograms) only "one above"
    and "one below"; with ``True`` (every answer may change by at most 1: report-noisy-max, the sparse
    vector technique) also "one above, rest below", "one below, rest above", "half and half", "all
    above", "all below" and the "X shape".

    Parameters
    ----------
    k : int
        The number of query answers, 1 to 65,536.
    componentwise : bool, optional
        Whether every answer may change (the larger set of pairs) or only one.

    Returns
    -------
    list of (tuple of float, tuple of float)
        The distinct pairs ``(x, x_prime)``.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.

    Examples
    --------
    >>> candidate_pairs(2, componentwise=False)
    [((1.0, 1.0), (0.0, 1.0)), ((0.0, 1.0), (1.0, 1.0)), ((1.0, 1.0), (2.0, 1.0)), ((2.0, 1.0), (1.0, 1.0))]
    """
    k = check_int(k, "k", minimum=1, maximum=1 << 16)
    if not isinstance(componentwise, bool):
        raise TypeError(f"componentwise must be a bool, got {type(componentwise).__name__}")
    ones = [1.0] * k
    h = k // 2
    raw = [(ones, [0.0] + ones[1:]), (ones, [2.0] + ones[1:])]
    if componentwise:
        raw += [
            (ones, [2.0] + [0.0] * (k - 1)),
            (ones, [0.0] + [2.0] * (k - 1)),
            (ones, [2.0] * h + [0.0] * (k - h)),
            (ones, [2.0] * k),
            (ones, [0.0] * k),
            ([1.0] * h + [0.0] * (k - h), [0.0] * h + [1.0] * (k - h)),
        ]
    out: list[tuple[tuple[float, ...], tuple[float, ...]]] = []
    for a, b in raw:
        for pair in ((tuple(a), tuple(b)), (tuple(b), tuple(a))):
            if pair[0] != pair[1] and pair not in out:
                out.append(pair)
    return out


@dataclass(frozen=True, eq=False)
class PairSearch:
    """Outcome of :func:`search_pairs`.

    ``best`` is the confirmation audit with the largest lower bound, on the pair ``candidates[index]``;
    its ``lower_bound`` (also ``lower_bound`` here) holds at the search's ``confidence`` after the
    Bonferroni correction over the ``confirmed`` audits.  ``pilot_bounds[i]`` is the pilot lower bound of
    candidate ``i`` (a ranking score, not a confidence statement).

    Parameters
    ----------
    best : PairAudit
        The confirmation audit with the largest lower bound.
    index : int
        Its candidate's index.
    pair : tuple
        Its candidate ``(x, x_prime)``.
    pilot_bounds : array_like
        The pilot lower bound of every candidate.
    confirmed : tuple of PairAudit
        Every confirmation audit.
    confidence : float
        The search's confidence level.

    Raises
    ------
    TypeError, ValueError
        Naming the bad field.
    """

    best: PairAudit
    index: int
    pair: tuple[Any, Any]
    pilot_bounds: NDArray[np.float64]
    confirmed: tuple[PairAudit, ...]
    confidence: float

    def __post_init__(self) -> None:
        if not isinstance(self.best, PairAudit):
            raise TypeError(f"best must be a PairAudit, got {type(self.best).__name__}")
        if not isinstance(self.confirmed, tuple) or not self.confirmed or not all(
            isinstance(r, PairAudit) for r in self.confirmed
        ):
            raise TypeError("confirmed must be a non-empty tuple of PairAudit")
        bounds = check_float_array(self.pilot_bounds, "pilot_bounds", finite=True, ndim=1, min_size=1).copy()
        bounds.setflags(write=False)
        object.__setattr__(self, "pilot_bounds", bounds)
        check_int(self.index, "index", minimum=0, maximum=bounds.size - 1)
        if not isinstance(self.pair, tuple) or len(self.pair) != 2:
            raise TypeError(f"pair must be a tuple (x, x_prime), got {type(self.pair).__name__}")
        for item in self.pair:
            if not _finite_input(item):
                raise ValueError(f"pair must hold finite inputs, got {item!r:.80}")
        check_probability(self.confidence, "confidence")

    @property
    def lower_bound(self) -> float:
        """The best confirmed audit's lower bound (valid at :attr:`confidence`)."""
        return self.best.lower_bound

    def summary(self) -> str:
        """A short report: the pilot ranking, the confirmation and the best audit.

        Returns
        -------
        str
            The pilot ranking, the confirmation, and the best audit's :meth:`~dptutor.audit.pair.PairAudit.summary`.
        """
        order = np.argsort(-self.pilot_bounds, kind="stable")[:5]
        pilot = ", ".join(f"#{i}: {self.pilot_bounds[i]:.4g}" for i in order)
        return (
            f"Pair search over {self.pilot_bounds.size} candidates (best pilot bounds {pilot}); "
            f"{len(self.confirmed)} confirmed on fresh runs, each at error {(1 - self.confidence) / len(self.confirmed):.3g}.\n"
            f"best pair #{self.index}: x = {self.pair[0]}, x_prime = {self.pair[1]}\n"
            + self.best.summary()
        )


@renamed_parameters(seed="rng", confidence="confidence_level")
def search_pairs(
    mechanism: Any,
    candidates: Sequence[tuple[Any, Any]],
    *,
    epsilon: float,
    trials: int,
    pilot_trials: int | None = None,
    confirm: int = 1,
    rng: int | Sequence[int] | np.random.SeedSequence | np.random.Generator | None = None,
    confidence_level: float = 0.95,
    statistic: Any = None,
    delta: float = 0.0,
    selection: float = 0.5,
    bounds: str = "four",
    rounds: int = 1,
) -> PairSearch:
    """Find the pair of ``candidates`` with the largest lower bound on epsilon, soundly.

    Every candidate ``(x, x_prime)`` is audited with ``pilot_trials`` runs per dataset; the ``confirm``
    pairs with the largest pilot bounds (ties broken by the larger pilot estimate) are audited again
    with ``trials`` fresh runs per dataset, each at error ``(1 - confidence_level) / confirm``, and the
    largest confirmed bound is returned (see the module docstring for why this holds at
    ``confidence_level``).

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, size, rng)``, as in :func:`~dptutor.audit.pair.audit_pair`.
    candidates : sequence of (x, x_prime)
        The candidate pairs of neighbouring datasets.
    epsilon : float
        The claimed epsilon, positive.
    trials : int
        Runs per dataset of each confirmation audit, at least 4.
    pilot_trials : int or None, optional
        Runs per dataset of each pilot audit (default ``max(2000, trials // (2 * len(candidates)))``,
        so the pilot costs about half the confirmation).
    confirm : int, optional
        How many of the best pilot pairs are confirmed, 1 to ``len(candidates)``.
    rng : int, sequence of int, numpy.random.SeedSequence, numpy.random.Generator or None, optional
        The seed (``None``: fresh entropy).  (Deprecated alias: ``seed``.)
    confidence_level : float, optional
        The probability, in (0, 1), with which the returned bound holds.  (Deprecated alias: ``confidence``.)
    statistic, delta, selection, bounds
        Passed to :func:`~dptutor.audit.pair.audit_pair`.
    rounds : int, optional
        ``rounds > 1`` spends the same pilot budget by successive halving: the budget is split evenly
        among the rounds; each round audits the remaining candidates on fresh runs, sharing its part
        equally, and keeps the better half (never fewer than ``confirm``), so that the last rounds measure
        the few best pairs with many runs.  A candidate's pilot bound is that of the last round it took
        part in.

    Returns
    -------
    PairSearch
        The best confirmed audit, its pair and every pilot bound.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter (for a candidate, its index).
    """
    check_callable(mechanism, "mechanism", "mechanism(data, size, rng)")
    pairs = check_sequence(candidates, "candidates")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"candidates[{i}] must be a pair (x, x_prime), got {type(pair).__name__}")
        if not all(_finite_input(item) for item in pair):
            raise ValueError(f"candidates[{i}] must hold finite inputs (no NaN or inf), got {pair!r:.80}")
    trials = check_int(trials, "trials", minimum=4, maximum=10**12)
    if pilot_trials is None:
        pilot_trials = max(2000, trials // (2 * len(pairs)))
    pilot_trials = check_int(pilot_trials, "pilot_trials", minimum=4, maximum=10**12)
    confirm = check_int(confirm, "confirm", minimum=1, maximum=len(pairs))
    rounds = check_int(rounds, "rounds", minimum=1, maximum=64)
    root = check_seed_sequence(rng, "rng")
    conf = check_probability(confidence_level, "confidence_level")
    check_real(delta, "delta", low=0.0, high=1.0, high_open=True)
    check_real(epsilon, "epsilon", low=0.0, low_open=True)

    pilot_seq, confirm_seq = root.spawn(2)
    options = dict(epsilon=epsilon, statistic=statistic, delta=delta, selection=selection, bounds=bounds)
    pilots, alive, estimates = _pilot(mechanism, pairs, pilot_seq, pilot_trials, rounds, confirm, conf, options)
    chosen = alive[np.lexsort((-estimates[alive], -pilots[alive]))][:confirm]
    each = 1.0 - (1.0 - conf) / confirm
    confirm_seeds = confirm_seq.spawn(confirm)
    confirmed = []
    for j, i in enumerate(chosen):
        confirmed.append(_audit(mechanism, pairs, int(i), trials, each, confirm_seeds[j], options))
    k = int(np.argmax([r.lower_bound for r in confirmed]))
    return PairSearch(best=confirmed[k], index=int(chosen[k]), pair=tuple(pairs[int(chosen[k])]),
                      pilot_bounds=pilots, confirmed=tuple(confirmed), confidence=conf)


def _pilot(
    mechanism: Any, pairs: list, pilot_seq: np.random.SeedSequence, pilot_trials: int, rounds: int, confirm: int,
    conf: float, options: dict[str, Any],
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """The pilot rounds of :func:`search_pairs`: ``(pilot bounds, candidates still alive, pilot estimates)``."""
    pilots = np.zeros(len(pairs))
    estimates = np.zeros(len(pairs))
    alive = np.arange(len(pairs))
    budget = pilot_trials * len(pairs)  # pilot runs per dataset, over all candidates and rounds
    for r, round_seq in enumerate(pilot_seq.spawn(rounds) if rounds > 1 else [pilot_seq]):
        size = pilot_trials if rounds == 1 else max(4, budget // (rounds * alive.size))
        seeds = round_seq.spawn(len(pairs))
        for i in alive:
            result = _audit(mechanism, pairs, int(i), size, conf, seeds[int(i)], options)
            pilots[i] = result.lower_bound
            estimates[i] = min(result.estimate, 1e300)
        if r < rounds - 1:
            ranked = alive[np.lexsort((-estimates[alive], -pilots[alive]))]
            alive = np.sort(ranked[:max(confirm, -(-alive.size // 2))])
    return pilots, alive, estimates


def _audit(mechanism: Any, pairs: list, i: int, trials: int, conf: float, seq: np.random.SeedSequence,
           options: dict[str, Any]) -> PairAudit:
    """``audit_pair`` of candidate ``i``; any exception (the mechanism's own included, whatever its class)
    becomes a ``TypeError`` (if it was one) or a ``ValueError`` naming the candidate."""
    x, x_prime = pairs[i]
    try:
        return audit_pair(mechanism, x, x_prime, trials=trials, confidence_level=conf, rng=_entropy(seq), **options)
    except Exception as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        detail = str(exc) if isinstance(exc, (TypeError, ValueError)) else f"mechanism raised {type(exc).__name__}: {exc}"
        raise kind(f"candidates[{i}]: {detail}") from exc


def _finite_input(item: Any) -> bool:
    """False for an input holding a NaN or an infinity (a number, or an array or list of them); other inputs
    (strings, ragged lists, objects) are the mechanism's to judge."""
    try:
        arr = np.asarray(item)
    except (TypeError, ValueError, OverflowError):
        return True
    return not (arr.dtype.kind in "fc" and not np.isfinite(arr).all())


def _entropy(seq: np.random.SeedSequence) -> tuple[int, ...]:
    """A child seed sequence as a plain seed that ``audit_pair`` accepts and records: its state words."""
    return tuple(int(v) for v in seq.generate_state(4))
