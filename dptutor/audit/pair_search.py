"""A search over the input space for the pair of neighbouring inputs on which a mechanism leaks most.

:func:`audit_mechanism` audits a mechanism with no pair handed in: it spends a stated share of a total run budget
on a *pilot* that searches the inputs, and the rest on one fresh confirmation audit of the pair the pilot liked
best (:func:`dptutor.audit.pair.audit_pair`). The pilot

1. starts from a pool of pairs (:mod:`dptutor.audit.pair_pool`): for numeric query vectors,
   :func:`~dptutor.audit.pair_pool.vector_pairs` (StatDP's patterns, as :func:`dptutor.audit.search.candidate_pairs`
   lists them, and *crossing* pairs: one answer moves by 1 one way while every other answer moves by 1 the other
   way, so that it overtakes them or crosses a threshold); for categorical or bounded inputs,
   :func:`~dptutor.audit.pair_pool.value_pairs` (every pair of distinct values); or the user's own ``candidates``;
2. runs rounds of successive halving that share the pilot's runs equally: each round audits the surviving pairs on
   fresh runs and keeps the better half;
3. searches locally in the first ``steps`` rounds: a random sample of untried neighbours of the best few
   (:func:`~dptutor.audit.pair_pool.pair_moves`: one answer's change turned, one answer moved, every answer moved)
   joins the survivors. Off by default (``steps = 0``): measured on DP-Sniper's benchmark at 2*10^7 runs, the
   neighbours it adds share the pilot's runs and cost more in ranking noise than they find (benchmarks/README.md).

Every pilot audit is scored by the bound its pair projects for the confirmation's budget: the largest, over the
audit's candidate events (its trade-off points on the estimation half), of the estimated log-ratio minus a normal
margin at the confirmation's size. If the first audit finds discrete outputs with so many values that it saw each
fewer than 100 times on average, that pair is audited again and the whole pilot ranks through a
learned statistic (the later rounds pay for the extra audit; the confirmation still counts the outputs one by one).
Where the outputs are counted value by value, a pair's score reads its counts pooled over all its rounds so far (each
audit's :attr:`~dptutor.audit.pair.PairAudit.tallies`), so that it sharpens as the pair survives. Where the outputs
need a statistic and the user gave none, pilot audits of fewer than 100,000 runs
per input use the noise template (``statistic="template"``), which fits nothing: a learned statistic overfits at that
size and ranks the pairs by noise.

The pilot's runs of the chosen pair are not thrown away. Where its outputs are counted value by value, the pilot
pools their counts over the rounds (each audit's :attr:`~dptutor.audit.pair.PairAudit.tallies`) and hands them to the
confirmation as ``prior``: they help choose the event, and the confirmation chooses it on 5% of its
own runs (or on the ``selection`` asked, if smaller), so that more of them measure it.

The multiple-testing correction. The pilot's choice, however adaptive, is a function of the pilot's runs only, which
are independent of the confirmation's. Conditioned on the pilot, the confirmation audits one fixed pair at
``confidence_level``, and its event is fixed by the pilot's counts and the confirmation's selection runs, never by the
runs that measure it, so no correction is needed for the pairs the pilot tried; with ``confirm = J > 1`` pairs
confirmed, each at error ``(1 - confidence_level) / J`` (Bonferroni), their maximum holds at ``confidence_level`` by
the union bound. The bound is on the mechanism's epsilon over every pair the search could return, so the pool and
the moves must only make pairs that are neighbours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_callable,
    check_choice,
    check_float_array,
    check_int,
    check_pair_list,
    check_positive,
    check_probability,
    check_real,
    check_seed_sequence,
    renamed_parameters,
    shown,
)
from dptutor.audit._pair_cells import discrete_order
from dptutor.audit.pair import PairAudit, audit_pair
from dptutor.audit.pair_pool import NEIGHBOURS, oriented_key, pair_key, pair_moves, unique_pairs, value_pairs, vector_pairs

__all__ = ["PAIR_SEARCH_SHARE", "MechanismAudit", "audit_mechanism"]

#: The default share of the total runs that the pilot spends (the rest goes to the confirmation).
PAIR_SEARCH_SHARE: float = 0.3
#: Counted one value at a time, hundreds of rare output values rank pairs by noise at a pilot's size (SVT6, 1,024
#: patterns: DP-Sniper's bound reached in 2 of 10 development seeds, in 10 of 10 with a learned pilot statistic).
_PILOT_RUNS_PER_VALUE = 100
#: Pilot audits of fewer runs per input use statistic="template" (module docstring; measured in benchmarks/README.md).
_PILOT_TEMPLATE_TRIALS = 100_000
#: Beyond _MANY_POINTS trade-off points (a real output, a learned statistic) the pilot's score subtracts _MANY_POINTS_SE
#: pilot standard errors, not 1: the best of thousands of nested events is a tail of a few runs (benchmarks/README.md).
_MANY_POINTS, _MANY_POINTS_SE = 256, 3.0
#: The confirmation's own selection share when the pilot hands it counts of the pair's outputs (``prior``).
_PRIOR_SELECTION = 0.05


@dataclass(frozen=True, eq=False)
class MechanismAudit:
    """Outcome of :func:`audit_mechanism`.

    ``best`` is the confirmation audit with the largest lower bound, on ``pair``; its ``lower_bound`` (also
    ``lower_bound`` here) holds at ``confidence``.  ``piloted[i]`` is a pair the pilot audited, ``scores[i]`` its
    last pilot score (a ranking, not a confidence statement) and ``stages[i]`` the pilot round of that score.

    Parameters
    ----------
    best : PairAudit
        The confirmation audit with the largest lower bound.
    pair : tuple
        Its pair ``(x, x_prime)``.
    piloted : tuple of (x, x_prime)
        Every pair the pilot audited.
    scores : array_like of float
        The last pilot score of each.
    stages : array_like of int
        The pilot round of that score (0: the starting pool, then the rounds of successive halving).
    runs : int
        The runs spent in all (both inputs, pilot and confirmation).
    pilot_runs : int
        The runs of the pilot.
    confidence : float
        The confidence level of ``lower_bound``.

    Raises
    ------
    TypeError, ValueError
        Naming the bad field.
    """

    best: PairAudit
    pair: tuple[Any, Any]
    piloted: tuple[tuple[Any, Any], ...]
    scores: NDArray[np.float64]
    stages: NDArray[np.int64]
    runs: int
    pilot_runs: int
    confidence: float

    def __post_init__(self) -> None:
        if not isinstance(self.best, PairAudit):
            raise TypeError(f"best must be a PairAudit, got {type(self.best).__name__}")
        for name in ("pair", "piloted"):
            if not isinstance(getattr(self, name), tuple):
                raise TypeError(f"{name} must be a tuple, got {type(getattr(self, name)).__name__}")
        check_pair_list([self.pair], "pair")
        check_pair_list(self.piloted, "piloted")
        scores = check_float_array(self.scores, "scores", finite=True, ndim=1, min_size=1)
        stages = check_float_array(self.stages, "stages", finite=True, ndim=1, low=0.0)
        if scores.size != len(self.piloted) or stages.size != scores.size:
            raise ValueError(f"scores and stages must have one entry per piloted pair ({len(self.piloted)})")
        object.__setattr__(self, "scores", scores.copy())
        object.__setattr__(self, "stages", stages.astype(np.int64))
        runs = check_int(self.runs, "runs", minimum=1)
        if check_int(self.pilot_runs, "pilot_runs", minimum=0) > runs:
            raise ValueError(f"pilot_runs must be <= runs (the pilot's runs count in them), got {shown(self.pilot_runs)} > runs={runs}")
        check_probability(self.confidence, "confidence")

    @property
    def lower_bound(self) -> float:
        """The confirmed lower bound on epsilon (valid at :attr:`confidence`)."""
        return self.best.lower_bound

    def summary(self) -> str:
        """A short report: the pilot's spending and best pairs, and the confirmation.

        Returns
        -------
        str
            The summary, ending with the best audit's :meth:`~dptutor.audit.pair.PairAudit.summary`.
        """
        order = np.argsort(-self.scores, kind="stable")[:3]
        top = "; ".join(f"{self.piloted[i][0]} vs {self.piloted[i][1]}: {self.scores[i]:.4g}" for i in order)
        return (f"Input search: {len(self.piloted)} pairs piloted on {self.pilot_runs:,} of {self.runs:,} runs "
                f"(best scores {top}).\nconfirmed on fresh runs: x = {self.pair[0]}, x_prime = {self.pair[1]}\n"
                + self.best.summary())


class _Pilot:
    """The pilot's bookkeeping: the pairs audited, their latest scores and rounds, the runs spent."""

    def __init__(self, mechanism: Any, options: dict[str, Any], confirm_trials: int, seq: np.random.SeedSequence):
        self.mechanism, self.options, self.confirm_trials = mechanism, options, confirm_trials
        self.seq, self.rounds = seq, 0
        self.pairs: list[tuple[Any, Any]] = []
        self.index: dict[Any, int] = {}
        self.scores: list[float] = []
        self.stages: list[int] = []
        self.spent = 0
        self.learned = False  # the first audit switched the pilot to a learned statistic
        self.tallies: dict[tuple[str, str], dict[Any, tuple[int, int]]] = {}  # per ordered pair: counts of its outputs

    def _one(self, pair: tuple[Any, Any], trials: int, seed: np.random.SeedSequence) -> PairAudit:
        small = trials < _PILOT_TEMPLATE_TRIALS and self.options.get("statistic") is None
        options = {**self.options, "statistic": "template"} if small else self.options  # see _PILOT_TEMPLATE_TRIALS
        try:
            result = audit_pair(self.mechanism, pair[0], pair[1], trials=trials,
                                rng=tuple(int(v) for v in seed.generate_state(4)), **options)
        except (TypeError, ValueError) as exc:
            raise (TypeError if isinstance(exc, TypeError) else ValueError)(
                f"auditing the pair {pair!r} (made from length, values, candidates or moves) failed: {exc}") from exc
        self.spent += 2 * trials
        return result

    def _too_many_values(self, result: PairAudit, trials: int) -> bool:
        """Discrete outputs (no threshold) counted one by one, seen fewer than ``_PILOT_RUNS_PER_VALUE`` times each
        on average: the trade-off points of ``c`` cells number ``2 (c + 1)``.  Two cells never switch: every
        statistic of a two-valued output is the output itself or a constant, so a learned one only costs its fit."""
        if self.options.get("statistic") is not None or result.threshold is not None:
            return False
        cells = len(result.false_positive_rates) // 2 - 1
        return cells > 2 and trials < _PILOT_RUNS_PER_VALUE * cells

    def audit(self, pairs: list[tuple[Any, Any]], trials: int, *, last: bool = False) -> None:
        """One round: audit every pair with ``trials`` runs per input on fresh seeds, and record its score.  The
        very first audit may switch the pilot to a learned statistic (:meth:`_too_many_values`); its pair is then
        audited again on fresh runs, paid for by the later rounds, or in the ``last`` round by this round's other
        audits (each then gets ``trials * (n - 1) // n`` runs, so that the round spends ``n * trials``)."""
        base = np.random.SeedSequence(self.seq.entropy, spawn_key=self.seq.spawn_key + (self.rounds,))
        for pair, seed in zip(pairs, base.spawn(len(pairs))):
            first = self.spent == 0
            result = self._one(pair, trials, seed)
            if first and self._too_many_values(result, trials):
                self.options["statistic"], self.learned = "learned", True
                if last:
                    trials = max(2, trials * (len(pairs) - 1) // len(pairs))
                result = self._one(pair, trials, base.spawn(1)[0])  # a child the round's pairs do not use
            if result.tallies is not None:  # outputs counted value by value: pooled over the pair's audits
                acc = self.tallies.setdefault(oriented_key(pair), {})
                for value, (a, b) in result.tallies.items():
                    old = acc.get(value, (0, 0))
                    acc[value] = (old[0] + a, old[1] + b)
            i = self.index.setdefault(pair_key(pair), len(self.pairs))
            if i == len(self.pairs):
                self.pairs.append(pair)
                self.scores.append(0.0)
                self.stages.append(0)
            pooled = self.tallies.get(oriented_key(pair))
            self.scores[i], self.stages[i] = _score(result, self.confirm_trials, pooled), self.rounds
        self.rounds += 1


def _pooled_rates(tallies: dict[Any, tuple[int, int]]) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """``(P[M(x) in E], P[M(x') in E], runs per input)`` on counts pooled over a pair's pilot audits, for every prefix E of
    the output values in the audit's own order (:func:`discrete_order`: by estimated likelihood ratio), then for its
    complement."""
    _, counts, _ = discrete_order({k: np.array([a, b, 0, 0], dtype=np.int64) for k, (a, b) in tallies.items()})
    n = int(counts[0].sum())
    cum = np.cumsum(counts, axis=1)
    return np.concatenate([cum[0], n - cum[0]]) / n, np.concatenate([cum[1], n - cum[1]]) / n, n


def _score(result: PairAudit, confirm_trials: int, pooled: dict[Any, tuple[int, int]] | None = None) -> float:
    """The bound ``result``'s pair projects at ``confirm_trials`` runs per input: over every candidate event of its estimation
    half (its trade-off points) and both directions, the largest ``ln(p / p')`` minus the normal margin of a bound at the
    confirmation's estimation size (``z`` at the audit's error split over two bounds) and one pilot standard error
    (``_MANY_POINTS_SE`` beyond ``_MANY_POINTS`` points), so that rare events, whose estimated ratio is mostly noise, score low.
    Never clipped at 0, so that pairs still rank when no bound would be positive.  With ``pooled`` counts of at most
    ``_MANY_POINTS // 2`` values (the pair's runs over all its rounds so far), the same from those counts, at the size of a
    confirmation that chooses its event on ``_PRIOR_SELECTION`` of its runs: a pair's score sharpens as it survives.

    The pilot's own bound would not do: at a pilot's size its cut favours large, uninformative events."""
    from scipy import stats

    if result.false_positive_rates.size == 0:  # no trade-off points recorded (PairAudit stores an empty array)
        return result.lower_bound
    if pooled and 2 * len(pooled) <= _MANY_POINTS:
        a, b, n = _pooled_rates(pooled)
        big = max(1.0, confirm_trials * (1.0 - _PRIOR_SELECTION))
    else:
        n = result.estimation_trials
        big = max(1.0, confirm_trials * n / result.trials)
        a = np.asarray(result.false_positive_rates, dtype=np.float64)
        b = 1.0 - np.asarray(result.false_negative_rates, dtype=np.float64)
    floor = 0.5 / n  # an event never seen under one input: as if seen half a time
    a, b = np.maximum(a, floor), np.maximum(b, floor)
    z = float(stats.norm.isf((1.0 - result.confidence) / 2.0))
    pilot_se = _MANY_POINTS_SE if a.size > _MANY_POINTS else 1.0
    useful = (np.minimum(a, b) < 1.0) & (np.maximum(a, b) > floor)  # not every output, nor none seen
    if not np.any(useful):
        return result.lower_bound
    a, b = a[useful], b[useful]
    best = -math.inf
    for num, den in ((a, b), (b, a)):
        spread = np.sqrt((1.0 - num) / num + (1.0 - den) / den)
        margin = spread * (z / math.sqrt(big) + pilot_se / math.sqrt(n))
        best = max(best, float(np.max(np.log(num / den) - margin)))
    return best


def _moves_of(moves: Any, pair: tuple[Any, Any], neighbours: str) -> list[tuple[Any, Any]]:
    """The local-search neighbours of ``pair``: the user's ``moves(x, x_prime)``, else :func:`~dptutor.audit.pair_pool.pair_moves` on
    numeric pairs, else none."""
    if moves is not None:
        return check_pair_list(moves(*pair), "moves")
    numeric = all(isinstance(v, (float, tuple)) for v in pair) and not any(isinstance(v, bool) for v in pair)
    if not numeric or (isinstance(pair[0], tuple) and not all(isinstance(t, float) for t in pair[0] + pair[1])):
        return []
    return pair_moves(*pair, neighbours=neighbours)


def _pool(length: Any, values: Any, adjacent: bool, candidates: Any, neighbours: str, rng: np.random.Generator) -> list:
    """The starting pairs: ``vector_pairs``, ``value_pairs`` and the user's ``candidates`` (a sequence of pairs, or a
    callable ``candidates(rng)`` returning one), deduplicated."""
    if length is None and values is None and candidates is None:
        raise ValueError("candidates must be given when neither length nor values is (the search needs a starting pool)")
    pool: list = []
    if length is not None:
        pool += vector_pairs(check_int(length, "length", minimum=1, maximum=1 << 12), neighbours=neighbours)
    if values is not None:
        pool += value_pairs(values, adjacent=adjacent)
    if candidates is not None:
        pool += check_pair_list(candidates(rng) if callable(candidates) else candidates, "candidates")
    pool = unique_pairs(pool)
    if not pool:  # length and values always give distinct pairs: only the candidates can be all equal
        raise ValueError("candidates must hold at least one pair of distinct inputs (x != x_prime), got only equal pairs")
    return pool


def _sizes(pool: int, steps: int, keep: int, width: int, confirm: int) -> list[int]:
    """How many pairs each round audits at most: the better half survives (never fewer than ``confirm``), and in the first
    ``steps`` rounds up to ``width`` neighbours of each of the ``keep`` best join them.  The rounds end with the one that
    leaves ``confirm`` pairs: those go to the confirmation unaudited."""
    sizes, alive = [pool], pool
    while alive > confirm:
        alive = max(confirm, -(-alive // 2)) + (keep * width if len(sizes) <= steps else 0)
        sizes.append(alive)
    if len(sizes) > 1 and sizes[-1] <= confirm:
        sizes.pop()  # the last halving leaves only pairs that are confirmed anyway: no round to audit them
    return sizes


def _halving(pilot: _Pilot, pool: list, budget: int, steps: int, keep: int, width: int, confirm: int, moves: Any,
             neighbours: str, rng: np.random.Generator) -> list:
    """The pilot: rounds of successive halving that share ``budget`` runs per input equally, the first ``steps`` of them also
    trying untried neighbours of the best (the local search); returns the ``confirm`` best pairs of the last round."""
    if moves is None and not _moves_of(None, pool[0], neighbours):
        steps = 0  # no local search on pairs without moves (values): the rounds halve from the start
    sizes = _sizes(len(pool), steps, keep, width, confirm)
    per_round = budget // len(sizes)
    alive = list(pool)
    for r in range(len(sizes)):
        pilot.audit(alive, max(2, per_round // len(alive)), last=len(sizes) == 1)
        if r == 0 and pilot.learned and len(sizes) > 1:  # the later rounds pay for the first pair's second audit
            per_round = max(0, budget - pilot.spent // 2) // (len(sizes) - 1)
        ranked = sorted(alive, key=lambda p: -pilot.scores[pilot.index[pair_key(p)]])
        if r == len(sizes) - 1 or len(ranked) <= confirm:
            return ranked[:confirm]
        alive = ranked[:max(confirm, -(-len(ranked) // 2))]
        kept = {oriented_key(p) for p in alive}  # only the confirmed pairs' counts are used: free the rest
        pilot.tallies = {k: v for k, v in pilot.tallies.items() if k in kept}
        if r < steps:
            tried = set(pilot.index)
            for pair in ranked[:keep]:
                near = [p for p in unique_pairs(_moves_of(moves, pair, neighbours)) if pair_key(p) not in tried]
                picked = [near[int(i)] for i in np.sort(rng.permutation(len(near))[:width])]
                tried.update(pair_key(p) for p in picked)
                alive += picked
    return alive[:confirm]


def _confirm_options(options: dict[str, Any], prior: dict[Any, tuple[int, int]] | None) -> dict[str, Any]:
    """``audit_pair``'s options for a confirmation: with the pilot's counts of the pair's outputs (``prior``), they join
    its selection half, which shrinks to ``_PRIOR_SELECTION`` of its runs (or the share asked, if smaller)."""
    if not prior:
        return options
    return {**options, "prior": prior, "selection": min(options.get("selection", 0.5), _PRIOR_SELECTION)}


@renamed_parameters(seed="rng", confidence="confidence_level")
def audit_mechanism(
    mechanism: Any,
    *,
    epsilon: float,
    runs: int,
    length: int | None = None,
    values: Sequence[Any] | None = None,
    adjacent: bool = False,
    candidates: Any = None,
    moves: Any = None,
    neighbours: str = "componentwise",
    share: float = PAIR_SEARCH_SHARE,
    steps: int = 0,
    keep: int = 3,
    width: int = 8,
    confirm: int = 1,
    rng: int | Sequence[int] | np.random.SeedSequence | np.random.Generator | None = None,
    confidence_level: float = 0.95,
    **options: Any,
) -> MechanismAudit:
    """A sound lower bound on the epsilon of ``mechanism`` with no pair handed in: search the inputs, then confirm.

    ``share`` of the ``runs`` (both inputs, pilot and confirmation counted together) go to the pilot
    (the module docstring: successive halving over a pool of starting pairs, joined by neighbours of the best
    in the first ``steps`` rounds); the rest to ``confirm`` fresh audits of the pilot's best pairs, each at error
    ``(1 - confidence_level) / confirm``.  Where a pair's outputs are counted value by value, its confirmation
    chooses the event with the pilot's counts of that pair as well (``prior``), on 5% of its own runs, or on
    ``selection`` if smaller.  The largest confirmed bound holds at ``confidence_level`` (the
    pilot's choice and counts depend on its own runs only).

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, size, rng)``, as in :func:`~dptutor.audit.pair.audit_pair`.
    epsilon : float
        The claimed epsilon, positive.
    runs : int
        The total runs, at least 1,000: the sum over every audit of its runs of both inputs.
    length : int or None, optional
        Numeric query vectors of this length (floats when 1): start from :func:`~dptutor.audit.pair_pool.vector_pairs`, refine by
        :func:`~dptutor.audit.pair_pool.pair_moves`.
    values : sequence or None, optional
        Categorical or bounded inputs: start from :func:`~dptutor.audit.pair_pool.value_pairs`.
    adjacent : bool, optional
        With ``values``: only values next to each other are neighbours (a bounded count).
    candidates : sequence of (x, x_prime), callable or None, optional
        The user's own starting pairs, or ``candidates(rng)`` returning them (``rng`` a numpy Generator).
    moves : callable or None, optional
        ``moves(x, x_prime)`` returning the local-search neighbours of a pair (default :func:`~dptutor.audit.pair_pool.pair_moves` for
        numeric pairs, none otherwise).
    neighbours : {"componentwise", "one"}, optional
        The neighbour relation of numeric vectors (see :func:`~dptutor.audit.pair_pool.vector_pairs`).
    share : float, optional
        The pilot's share of ``runs``, in [0.01, 0.9].
    steps, keep, width : int, optional
        Rounds with a local search (0 to 16; default none), pairs whose neighbours are tried in each (1 to 64), neighbours
        tried per such pair and round (1 to 1,000).
    confirm : int, optional
        Pairs confirmed (1 to 64), Bonferroni-corrected.
    rng : int, sequence of int, numpy.random.SeedSequence, numpy.random.Generator or None, optional
        The seed (``None``: fresh entropy).
    confidence_level : float, optional
        The probability, in (0, 1), with which the bound holds.
    **options
        ``statistic``, ``delta``, ``selection``, ``bounds`` of :func:`~dptutor.audit.pair.audit_pair`.

    Returns
    -------
    MechanismAudit
        The confirmed audit, its pair, and every pair the pilot audited with its score.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter (the pair, for an error of the mechanism on a candidate).

    Examples
    --------
    >>> def leaky(data, size, rng):  # value 3 is told apart from the others
    ...     return (rng.random(size) < (0.7 if data == 3 else 0.5)).astype(int)
    >>> found = audit_mechanism(leaky, epsilon=0.1, runs=200_000, values=range(5), rng=1)
    >>> 3 in found.pair
    True
    """
    check_callable(mechanism, "mechanism", "mechanism(data, size, rng)")
    check_positive(epsilon, "epsilon")
    runs = check_int(runs, "runs", minimum=1000, maximum=10**13)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    share = check_real(share, "share", low=0.01, high=0.9)
    steps = check_int(steps, "steps", minimum=0, maximum=16)
    keep = check_int(keep, "keep", minimum=1, maximum=64)
    width = check_int(width, "width", minimum=1, maximum=1000)
    confirm = check_int(confirm, "confirm", minimum=1, maximum=64)
    conf = check_probability(confidence_level, "confidence_level")
    if moves is not None:
        check_callable(moves, "moves", "moves(x, x_prime) -> pairs")
    unknown = set(options) - {"statistic", "delta", "selection", "bounds"}
    if unknown:
        raise TypeError(f"audit_mechanism got unexpected keyword argument(s) {sorted(unknown)}")
    root = check_seed_sequence(rng, "rng")
    pilot_seq, move_seq, confirm_seq = root.spawn(3)
    move_rng = np.random.default_rng(move_seq)
    pool = _pool(length, values, adjacent, candidates, neighbours, move_rng)
    budget = int(share * runs) // 2  # pilot runs per input
    confirm_trials = (runs - 2 * budget) // (2 * confirm)
    if budget // len(_sizes(len(pool), steps, keep, width, confirm)) < 2 * len(pool):
        raise ValueError(f"runs must give the pilot at least 2 runs per input on each of the {len(pool)} starting pairs, "
                         f"got {runs} (share {share})")
    pilot = _Pilot(mechanism, {"epsilon": epsilon, **options}, confirm_trials, pilot_seq)
    chosen = _halving(pilot, pool, budget, steps, keep, width, confirm, moves, neighbours, move_rng)
    confirm_trials = max(2, (runs - pilot.spent) // (2 * len(chosen)))
    each = 1.0 - (1.0 - conf) / len(chosen)
    confirmed = [audit_pair(mechanism, x, x_prime, epsilon=epsilon, trials=confirm_trials, confidence_level=each,
                            rng=tuple(int(v) for v in seed.generate_state(4)),
                            **_confirm_options(options, pilot.tallies.get(oriented_key((x, x_prime)))))
                 for (x, x_prime), seed in zip(chosen, confirm_seq.spawn(len(chosen)))]
    k = int(np.argmax([r.lower_bound for r in confirmed]))
    return MechanismAudit(best=confirmed[k], pair=tuple(chosen[k]), piloted=tuple(pilot.pairs),
                          scores=np.array(pilot.scores), stages=np.array(pilot.stages), runs=pilot.spent
                          + 2 * confirm_trials * len(chosen), pilot_runs=pilot.spent, confidence=conf)
