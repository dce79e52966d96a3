"""The empirical sanity check of Habernal (ACL 2022), Section 4, with exact closed forms and bounds.

The experiment
--------------
Two neighbouring datasets, ``D = (0, ..., 0)`` and ``D' = (1, ..., 1)`` in [0, 1]^n (l1 sensitivity
``n``), are privatised ``trials`` times each by a mechanism (:mod:`dptutor.mechanisms`).  The
attacker rounds each output coordinate (below 0.5 -> 0, otherwise 1) and takes a majority vote;
exactly ``n/2`` ones is guessed as 0 (the authors' code rounds the mean half-to-even).  With
``counts[d, y]`` the number of trials on dataset ``d`` (0 = zeros, 1 = ones) guessed as ``y``, the
estimated privacy loss (Eq. 12 with maximum-likelihood estimates, equal priors) is

    max over guesses y that occurred of |ln(counts[0, y] / counts[1, y])|,

infinite when exactly one of the two counts is zero.  Post-processing cannot increase privacy
loss, so an epsilon-DP mechanism has true loss at most ``epsilon``.

Main entry points: :func:`estimate_loss` (Monte Carlo, constant memory, reproducible, optionally
in parallel), :class:`AuditResult` (with Clopper-Pearson confidence bounds), and
:func:`exact_loss` (the closed form for the six built-in mechanisms).
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import math
import numbers
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    MAX_ELEMENTS,
    check_bool,
    check_callable,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_rng,
    check_seed,
    check_sequence,
    check_str,
    check_workers,
    immutable_finite_array,
    is_bool,
)
from dptutor._workers import WorkerPool
from dptutor.mechanisms import MECHANISMS, Mechanism

__all__ = [
    "AuditResult",
    "AuditCell",
    "estimate_loss",
    "estimate_losses",
    "exact_loss",
    "exact_guess_probabilities",
    "rounding_probabilities",
    "loss_from_counts",
    "simulated_losses",
    "BLOCK_TRIALS",
    "CHUNK_ELEMENTS",
    "MAX_TRIALS",
    "MAX_N",
]

#: Trials per independently seeded block.  Fixed (independent of ``workers`` and ``n``), so a seed
#: determines the counts whatever the parallelism.  2**17 trials at n = 128 is ~0.1-0.2 s of work.
BLOCK_TRIALS: int = 1 << 17

#: Target elements per chunk (rows = CHUNK_ELEMENTS // n, at least 1): 2**16 float64 = 512 KiB,
#: which stays in L2 cache.  Measured with ``benchmarks/bench_audit.py --chunks`` (Laplace, n = 128):
#: 2**14-2**16 fastest; from 2**17 up the buffers fall out of cache and it gets slower (and below
#: 2**13 per-call overhead dominates).
CHUNK_ELEMENTS: int = 1 << 16

#: Trials per dataset above this are refused (10^10 is a thousand times the paper's 10^7 and days
#: of work on a laptop); it also keeps every count and row total far inside int64.
MAX_TRIALS: int = 10**10

#: Dimensions above this are refused: 2**20 coordinates per dataset is far beyond the paper's 128,
#: and the exact closed form allocates arrays of ``n + 1`` elements.
MAX_N: int = 1 << 20

_NEG_INF = -math.inf
_LOG_HALF = -math.log(2.0)

#: Anything ``numpy.asarray`` turns into a 2x2 integer table.
ArrayLike2x2 = Any


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------


def _mechanism_name(mechanism: object) -> str:
    for key, fn in MECHANISMS.items():
        if fn is mechanism:
            return key
    name = getattr(mechanism, "__qualname__", None) or getattr(mechanism, "__name__", None)
    return str(name) if name else repr(mechanism)


def _log(x: float) -> float:
    """Natural log with ``log(0) = -inf`` (no exception, no warning)."""
    return math.log(x) if x > 0 else _NEG_INF


def _loss_from_logs(log_p: Sequence[Sequence[float]]) -> float:
    """``max_y |log_p[0][y] - log_p[1][y]|`` over guesses y with a finite log in some row.

    Infinite when exactly one of the two is ``-inf``; a guess impossible under both is skipped.
    """
    loss = 0.0
    for y in (0, 1):
        a, b = log_p[0][y], log_p[1][y]
        if a == _NEG_INF and b == _NEG_INF:
            continue
        if a == _NEG_INF or b == _NEG_INF:
            return math.inf
        loss = max(loss, abs(a - b))
    return loss


def loss_from_counts(counts: ArrayLike2x2) -> float:
    """The estimated privacy loss from a 2x2 table ``counts[d, y]`` (equal trials per dataset).

    With equal trials the ratio of the maximum-likelihood estimates ``P(y | D) / P(y | D')`` is the
    ratio of counts, which also equals ``P(D | y) / P(D' | y)`` under equal priors (Eq. 12).
    """
    c = _check_counts(counts)
    return _loss_from_logs([[_log(float(v)) for v in row] for row in c])



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

    Attributes
    ----------
    loss:
        Estimated privacy loss, ``max_y |ln(counts[0, y] / counts[1, y])|`` over guesses that
        occurred; ``math.inf`` when one count of a pair is zero.  Never NaN.
    counts:
        Read-only 2x2 int array ``counts[d, y]``: dataset ``d`` (0 = all zeros ``D``, 1 = all
        ones ``D'``), guess ``y``.  Each row sums to ``trials``.
    trials, n, epsilon:
        The experiment's parameters (trials per dataset).
    seed:
        The entropy of the :class:`numpy.random.SeedSequence` used (the ``seed`` argument, or the
        fresh entropy drawn when it was ``None``): ``estimate_loss(..., seed=result.seed)``
        repeats the run exactly.
    mechanism:
        The mechanism's name.
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
        """Build a result from a 2x2 count table (e.g. one read back from a CSV file)."""
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

    def _box(self, confidence: float) -> tuple[list[list[float]], list[list[float]]]:
        """Log lower/upper bounds ``lo[d][y]``, ``hi[d][y]`` on ``P(y | d)``, each at error alpha/4.

        For each dataset d the two one-sided intervals on ``P(y=1 | d)`` (lower and upper) are the
        only random events; the bounds on ``P(y=0 | d) = 1 - P(y=1 | d)`` are the same events
        (the Clopper-Pearson bounds are symmetric), computed directly so that nothing loses
        precision near 0 or 1.  Four one-sided intervals in all.
        """
        alpha = 1.0 - check_probability(confidence, "confidence")
        a = alpha / 4.0
        t = self.trials
        lo = [[_log(_cp_lower(int(self.counts[d, y]), t, a)) for y in (0, 1)] for d in (0, 1)]
        hi = [[_log(_cp_upper(int(self.counts[d, y]), t, a)) for y in (0, 1)] for d in (0, 1)]
        return lo, hi

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Simultaneous ``(lower, upper)`` confidence bounds on the true loss at ``confidence``.

        Construction.  Write ``p_d = P(guess 1 | dataset d)``; the true loss is
        ``L(p_0, p_1) = max(|ln(p_0 / p_1)|, |ln((1 - p_0) / (1 - p_1))|)``.  ``counts[d, 1]`` is
        Binomial(trials, p_d), independently for d = 0, 1.  Take the exact Clopper-Pearson
        one-sided lower and upper bounds (beta quantiles, ``scipy.stats.beta.ppf``) for ``p_0``
        and for ``p_1``, each with error ``alpha / 4`` (``alpha = 1 - confidence``).  By the union
        (Bonferroni) bound over these four one-sided intervals, the true ``(p_0, p_1)`` lies in
        the box ``[lo_0, hi_0] x [lo_1, hi_1]`` with probability at least ``1 - alpha``.  On that
        event the true loss lies between the minimum and the maximum of ``L`` over the box:

        * lower: if the intervals overlap, ``p_0 = p_1`` is possible and the bound is 0.  If
          ``hi_0 < lo_1``, both terms of ``L`` are smallest at the corner ``(hi_0, lo_1)``; in
          general the minimum is ``max(0, max over y and d != d' of ln lo(P(y|d)) -
          ln hi(P(y|d')))``, which is what is computed;
        * upper: for fixed ``p_1`` each term is quasi-convex in ``p_0`` (and vice versa), so the
          maximum is attained at one of the four corners.

        The lower end can be 0 (nothing can be said) and the upper end infinite (a count of 0 or
        ``trials`` leaves ``P(y | d) = 0`` possible).
        """
        lo, hi = self._box(confidence)
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
                upper = max(upper, _loss_from_logs([row0, row1]))
        return lower, upper

    def lower_bound(self, confidence: float = 0.95) -> float:
        """One-sided lower confidence bound on the true privacy loss of the attack.

        The lower end of :meth:`confidence_interval` (see there for the construction: exact
        Clopper-Pearson bounds on ``P(guess 1 | D)`` and ``P(guess 1 | D')``, four one-sided
        intervals, each with error ``(1 - confidence) / 4``, combined by a union bound).  With
        probability at least ``confidence`` the true loss is at least this value.  It is 0 when
        the data cannot rule out a loss of 0.
        """
        return self.confidence_interval(confidence)[0]

    def is_violation(self, confidence: float = 0.95) -> bool:
        """True when the lower confidence bound exceeds ``epsilon``: the mechanism is not epsilon-DP
        (with error probability at most ``1 - confidence``)."""
        return self.lower_bound(confidence) > self.epsilon

    # -- display -----------------------------------------------------------------------------

    def summary(self, confidence: float = 0.95) -> str:
        """A short multi-line description: parameters, count table, loss, bound and verdict."""
        confidence = check_probability(confidence, "confidence")
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
            f"estimated loss {_fmt(self.loss)}; {pct} interval [{_fmt(lower)}, {_fmt(upper)}]",
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


def _fmt(x: float) -> str:
    return "inf" if x == math.inf else f"{x:.4g}"


# ---------------------------------------------------------------------------------------------
# Monte Carlo
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _datasets(rows: int, n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Read-only ``(rows, n)`` arrays of zeros (D) and ones (D'), shared by every audit in the process.

    Their memory is an immutable ``bytes`` object (:func:`dptutor._validate.immutable_finite_array`),
    so no mechanism can make them writeable (``x.setflags(write=True)`` raises on them and on their
    base): a mechanism that tries to write into its input cannot corrupt later audits.  The built-in
    mechanisms recognise them and skip their finiteness check.
    """
    return immutable_finite_array(np.zeros((rows, n))), immutable_finite_array(np.ones((rows, n)))


def _chunk_rows(n: int) -> int:
    return max(1, CHUNK_ELEMENTS // n)


def _check_output(out: object, shape: tuple[int, int], name: str) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        try:
            out = np.asarray(out)
        except Exception as exc:
            raise ValueError(f"mechanism {name!r} returned {type(out).__name__}, not an array") from exc
    if out.shape != shape:
        raise ValueError(f"mechanism {name!r} returned shape {out.shape}, expected {shape}")
    kind = out.dtype.kind
    if kind not in "biuf":
        raise ValueError(f"mechanism {name!r} returned non-numeric values (dtype {out.dtype})")
    # max propagates NaN: one fast SIMD pass instead of isnan + any.
    if kind == "f" and math.isnan(out.max()):
        raise ValueError(f"mechanism {name!r} returned NaN")
    return out


def _majority_counter(rows: int, n: int) -> tuple[NDArray[np.bool_], Any]:
    """A reusable ``(rows, n)`` bool buffer and a function counting its rows with more than n/2 ones.

    ``count(m)`` looks at the first ``m`` rows.  numpy reductions along a short last axis are
    slow (several ns per element for n = 2), so short rows are counted differently: the bool bytes
    are viewed as the widest unsigned integer dividing the row (8, 4, 2 or 1 bytes), each word's
    set bits counted with ``np.bitwise_count`` (a byte of a bool is 0 or 1, so a word's popcount
    is its number of True bytes), and the few words per row added column by column.  Long rows
    (more than 8 words) are summed over a uint8 view.  A row is guessed 1 iff its count exceeds
    ``n // 2``, so a tie at exactly n/2 is guessed 0.
    """
    above = np.empty((rows, n), dtype=np.bool_)
    u8 = above.view(np.uint8)
    half = n // 2
    width = next(w for w in (8, 4, 2, 1) if n % w == 0)
    words_per_row = n // width
    if words_per_row > 8:
        sum_dtype = np.uint16 if n < (1 << 16) else np.int64

        def count(m: int) -> int:
            return int(np.count_nonzero(u8[:m].sum(axis=1, dtype=sum_dtype) > half))

        return above, count

    wide = u8.view({8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}[width])
    acc = np.empty(rows, dtype=np.uint16)
    popcounts = np.empty((rows, words_per_row), dtype=np.uint8)

    def count(m: int) -> int:
        pc = popcounts[:m]
        np.bitwise_count(wide[:m], out=pc)
        if words_per_row == 1:
            return int(np.count_nonzero(pc.reshape(-1) > half))
        total = acc[:m]
        np.add(pc[:, 0], pc[:, 1], out=total, dtype=np.uint16)
        for j in range(2, words_per_row):
            np.add(total, pc[:, j], out=total)
        return int(np.count_nonzero(total > half))

    return above, count


def _count_block(
    mechanism: Mechanism,
    name: str,
    n: int,
    epsilon: float,
    trials: int,
    seed_seq: np.random.SeedSequence,
) -> tuple[int, int]:
    """Run ``trials`` trials on D and D' with one generator; return the number of guesses 1 on each.

    Chunks of ``CHUNK_ELEMENTS // n`` rows alternate between D and D'.  The attack: threshold the
    output at 0.5 into a reused bool buffer, then count rows with more than n/2 ones
    (:func:`_majority_counter`).
    """
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    rows = _chunk_rows(n)
    zeros, ones = _datasets(rows, n)
    above, count = _majority_counter(rows, n)
    guessed_one = [0, 0]
    done = 0
    while done < trials:
        m = min(rows, trials - done)
        for d, x in ((0, zeros), (1, ones)):
            xm = x[:m] if m < rows else x
            out = _check_output(mechanism(xm, epsilon, rng), xm.shape, name)
            np.greater_equal(out, 0.5, out=above[:m] if m < rows else above)
            guessed_one[d] += count(m)
        done += m
    return guessed_one[0], guessed_one[1]


def _blocks(trials: int, seed_seq: np.random.SeedSequence) -> Iterator[tuple[int, np.random.SeedSequence]]:
    """``(size, child seed)`` of each block, made lazily: block ``i`` gets the ``i``-th child of ``seed_seq``.

    ``seed_seq.spawn(1)`` called k times gives the same children as ``seed_seq.spawn(k)``.
    """
    full, rest = divmod(trials, BLOCK_TRIALS)
    for size in itertools.chain(itertools.repeat(BLOCK_TRIALS, full), [rest] if rest else []):
        yield size, seed_seq.spawn(1)[0]


def _n_blocks(trials: int) -> int:
    return -(-trials // BLOCK_TRIALS)


def _block_sizes(trials: int) -> list[int]:
    """The sizes of the blocks of ``trials`` trials (all :data:`BLOCK_TRIALS` but maybe the last)."""
    full, rest = divmod(trials, BLOCK_TRIALS)
    return [BLOCK_TRIALS] * full + ([rest] if rest else [])


@dataclass(frozen=True)
class AuditCell:
    """One audit to run: ``trials`` trials per dataset of ``mechanism`` at dimension ``n`` and ``epsilon``.

    ``seed`` as in :func:`estimate_loss`; ``name`` labels the result (default: the built-in name or
    the callable's qualified name).  All fields are checked when the cell is made.
    """

    mechanism: Mechanism
    n: int
    epsilon: float
    trials: int
    seed: int | tuple[int, ...] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        check_callable(self.mechanism, "mechanism", "mechanism(x, epsilon, rng)")
        values = {
            "n": check_int(self.n, "n", minimum=1, maximum=MAX_N),
            "epsilon": check_positive(self.epsilon, "epsilon"),
            "trials": check_int(self.trials, "trials", minimum=1, maximum=MAX_TRIALS),
            "seed": check_seed(self.seed),
            "name": _mechanism_name(self.mechanism) if self.name is None else check_str(self.name, "name"),
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)


def estimate_losses(
    cells: Sequence[AuditCell],
    *,
    workers: int = 1,
    executor: concurrent.futures.Executor | None = None,
    on_result: Callable[[int, AuditResult], None] | None = None,
    progress: bool = False,
) -> list[AuditResult]:
    """Run several audits, sharing one process pool; return their results in the order of ``cells``.

    Each cell gives exactly what :func:`estimate_loss` gives for it alone (same blocks, same seeds).
    ``on_result(i, result)`` is called as soon as cell ``i`` is complete (cells finish roughly in
    order), e.g. to save it.  With ``workers > 1`` the blocks of all cells go to one
    :class:`dptutor._workers.WorkerPool` (at most a few blocks per worker queued at a time, so memory
    does not grow with ``trials``); on an exception or Ctrl-C its workers stop at once, losing only the
    blocks in flight.  ``executor`` uses an existing executor instead (then ``workers`` is ignored and
    the executor is left running).  ``progress=True`` shows a tqdm bar over blocks.
    """
    cell_list = check_sequence(cells, "cells")
    for i, cell in enumerate(cell_list):
        if not isinstance(cell, AuditCell):
            raise TypeError(f"cells[{i}] must be an AuditCell, got {type(cell).__name__}")
    total_blocks = sum(_n_blocks(c.trials) for c in cell_list)
    workers = check_workers(workers, tasks=total_blocks)
    if executor is not None and not isinstance(executor, concurrent.futures.Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
    if on_result is not None:
        check_callable(on_result, "on_result", "on_result(index, result)")
    progress = check_bool(progress, "progress")

    seed_seqs = [np.random.SeedSequence(c.seed) for c in cell_list]
    guessed = [np.zeros(2, dtype=np.int64) for _ in cell_list]
    left = [_n_blocks(c.trials) for c in cell_list]
    results: list[AuditResult | None] = [None] * len(cell_list)

    def add(i: int, counts: tuple[int, int]) -> None:
        guessed[i] += counts
        left[i] -= 1
        bar.update(1)
        if left[i] == 0:
            c = cell_list[i]
            results[i] = _result_from_guesses(guessed[i], c.trials, c.n, c.epsilon, _entropy(seed_seqs[i]), c.name)
            if on_result is not None:
                on_result(i, results[i])

    tasks = (
        (i, (c.mechanism, c.name, c.n, c.epsilon, size, child))
        for i, c in enumerate(cell_list)
        for size, child in _blocks(c.trials, seed_seqs[i])
    )
    from tqdm import tqdm  # the terminal bar: tqdm.auto warns inside Jupyter without ipywidgets

    first = cell_list[0]
    desc = f"{first.name} n={first.n} eps={first.epsilon:g}" if len(cell_list) == 1 else "audits"
    bar = tqdm(total=total_blocks, disable=not progress, desc=desc, unit="block", leave=False)
    try:
        if executor is None and (workers == 1 or total_blocks == 1):
            for i, args in tasks:
                add(i, _count_block(*args))
        elif executor is not None:
            for i, counts in _run_bounded(executor, tasks, max_pending=64):
                add(i, counts)
        else:
            for c in {id(c.mechanism): c for c in cell_list}.values():
                try:
                    pickle.dumps(c.mechanism)
                except Exception as exc:
                    raise TypeError(
                        f"mechanism {c.name!r} must be picklable to run with workers > 1 (define it at module level)"
                    ) from exc
            pool = WorkerPool(workers)
            try:
                for i, counts in _run_bounded(pool, tasks, max_pending=2 * workers):
                    add(i, counts)
            except BaseException:
                pool.stop()  # Ctrl-C or an error: do not wait for the blocks in flight
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
    finally:
        bar.close()
    return results  # type: ignore[return-value]


def _run_bounded(
    pool: concurrent.futures.Executor, tasks: Iterator[tuple[int, tuple]], max_pending: int
) -> Iterator[tuple[int, tuple[int, int]]]:
    """Submit ``_count_block(*args)`` for each ``(tag, args)``, at most ``max_pending`` at a time;
    yield ``(tag, counts)`` as blocks complete.  Pending blocks are cancelled on any exception."""
    pending: dict[concurrent.futures.Future, int] = {}
    try:
        for tag, args in itertools.islice(tasks, max_pending):
            pending[pool.submit(_count_block, *args)] = tag
        while pending:
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                tag = pending.pop(fut)
                for next_tag, args in itertools.islice(tasks, 1):
                    pending[pool.submit(_count_block, *args)] = next_tag
                yield tag, fut.result()
    finally:
        for fut in pending:
            fut.cancel()


def _entropy(seed_seq: np.random.SeedSequence) -> int | tuple[int, ...]:
    entropy = seed_seq.entropy
    return tuple(int(v) for v in entropy) if isinstance(entropy, (list, tuple, np.ndarray)) else int(entropy)


def estimate_loss(
    mechanism: Mechanism,
    n: int,
    epsilon: float,
    trials: int,
    *,
    seed: int | Sequence[int] | None = None,
    progress: bool = False,
    workers: int = 1,
    executor: concurrent.futures.Executor | None = None,
) -> AuditResult:
    """Monte Carlo estimate of the attack's privacy loss (Section 4) for ``mechanism``.

    ``mechanism(x, epsilon, rng)`` runs ``trials`` times on ``D`` = zeros and ``trials`` times on
    ``D'`` = ones, both of dimension ``n``, in cache-sized chunks, so memory does not grow with
    ``trials``.  Trials are split into blocks of :data:`BLOCK_TRIALS`, block ``i`` seeded by the
    ``i``-th child of ``SeedSequence(seed).spawn``: the same seed gives the same counts whatever
    ``workers`` is.  ``seed=None`` draws fresh entropy, recorded in ``result.seed``.

    ``workers > 1`` runs blocks in a process pool (the mechanism must be picklable; the built-in
    ones are module-level functions); ``workers`` is capped at the CPUs and the blocks, and more
    than :data:`dptutor._validate.MAX_WORKERS` is refused.  ``executor`` reuses an existing
    executor instead (then ``workers`` is ignored).  ``progress=True`` shows a tqdm bar over blocks.
    The mechanism receives read-only inputs that it cannot make writeable.

    Raises ``TypeError``/``ValueError`` naming the bad parameter, and ``ValueError`` naming the
    mechanism if it returns the wrong shape, non-numeric values or NaN.
    """
    cell = AuditCell(mechanism, n, epsilon, trials, seed=seed)
    return estimate_losses([cell], workers=workers, executor=executor, progress=progress)[0]


def _result_from_guesses(
    guessed: Sequence[int], trials: int, n: int, epsilon: float, seed: int | tuple[int, ...] | None, name: str
) -> AuditResult:
    """The result of ``trials`` trials per dataset, ``guessed[d]`` of them guessed 1 on dataset ``d``."""
    counts = np.array([[trials - guessed[0], guessed[0]], [trials - guessed[1], guessed[1]]], dtype=np.int64)
    return AuditResult(
        loss=loss_from_counts(counts), counts=counts, trials=trials, n=n, epsilon=epsilon, seed=seed, mechanism=name
    )


# ---------------------------------------------------------------------------------------------
# exact closed forms
# ---------------------------------------------------------------------------------------------


def rounding_probabilities(name: str, n: int, epsilon: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """Per-coordinate probability that the attack rounds an output coordinate to 1.

    Returns ``((p_0, 1 - p_0), (p_1, 1 - p_1))`` for ``D`` (zeros) and ``D'`` (ones), each
    complement computed without cancellation.  With ``b`` the Laplace scale and
    ``P(Lap(0, b) >= t) = exp(-t / b) / 2`` for ``t >= 0``:

    * ``laplace`` (``b = n/epsilon``), ``adept`` (``b = 1/epsilon``): ``p_0 = P(noise >= 1/2) =
      exp(-1/(2b))/2`` and ``p_1 = P(noise >= -1/2) = 1 - p_0``;
    * ``dptext`` (``b = n/epsilon``): the noise is 0 (NaN replaced) or ``-b ln(1 - 2v)`` for
      ``v < 1/2``, which exceeds 1/2 iff ``v > (1 - exp(-1/(2b)))/2``: ``p_0 = exp(-1/(2b))/2``
      again, but ``p_1 = 1`` since the noise is never negative;
    * ``wrong_sensitivity`` (``b = n/epsilon``): ``0.5 (x + noise) >= 1/2`` iff ``x + noise >= 1``,
      so ``p_0 = exp(-1/b)/2`` and ``p_1 = P(noise >= 0) = 1/2``;
    * ``copy_input``: ``p_0 = 0``, ``p_1 = 1``; ``random_output``: ``p_0 = p_1 = 1/2``.
    """
    name, n, eps = _check_exact_args(name, n, epsilon)
    if name in ("laplace", "adept"):
        b = n / eps if name == "laplace" else 1.0 / eps
        tail = 0.5 * math.exp(-0.5 / b)
        return (tail, 1.0 - tail), (1.0 - tail, tail)
    if name == "dptext":
        tail = 0.5 * math.exp(-0.5 * eps / n)
        return (tail, 1.0 - tail), (1.0, 0.0)
    if name == "wrong_sensitivity":
        tail = 0.5 * math.exp(-eps / n)
        return (tail, 1.0 - tail), (0.5, 0.5)
    if name == "copy_input":
        return (0.0, 1.0), (1.0, 0.0)
    return (0.5, 0.5), (0.5, 0.5)  # random_output


def _check_exact_args(name: object, n: object, epsilon: object) -> tuple[str, int, float]:
    return (
        check_choice(name, "name", MECHANISMS),
        check_int(n, "n", minimum=1, maximum=MAX_N),
        check_positive(epsilon, "epsilon"),
    )


def _log_rounding(name: str, n: int, eps: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """:func:`rounding_probabilities` in log space: ``((ln p_0, ln(1 - p_0)), (ln p_1, ln(1 - p_1)))``.

    Every tail ``exp(-t)/2`` is kept as its log ``-ln 2 - t``, so it never underflows to 0 (which
    would turn a finite loss such as 745 into infinity).
    """

    def tail(t: float) -> tuple[float, float]:  # (ln(exp(-t)/2), ln(1 - exp(-t)/2))
        return _LOG_HALF - t, math.log1p(-0.5 * math.exp(-t))

    if name in ("laplace", "adept"):
        lt, lc = tail(0.5 * eps / n if name == "laplace" else 0.5 * eps)  # 1/(2b)
        return (lt, lc), (lc, lt)
    if name == "dptext":
        return tail(0.5 * eps / n), (0.0, _NEG_INF)
    if name == "wrong_sensitivity":
        return tail(eps / n), (_LOG_HALF, _LOG_HALF)
    if name == "copy_input":
        return (_NEG_INF, 0.0), (0.0, _NEG_INF)
    return (_LOG_HALF, _LOG_HALF), (_LOG_HALF, _LOG_HALF)  # random_output


def _log_majority(n: int, log_p: float, log_q: float) -> tuple[float, float]:
    """``(ln P(K <= n//2), ln P(K > n//2))`` for ``K ~ Binomial(n, p)``, given ``ln p`` and ``ln(1 - p)``.

    Sums ``scipy.stats.binom.logpmf`` terms with ``scipy.special.logsumexp``, so tails far below
    the float range stay finite.  For ``p > 1/2`` the pmf is evaluated as that of ``n - K'`` with
    ``K' ~ Binomial(n, q)``, so a ``p`` within rounding of 1 loses nothing.  When the smaller of
    ``p`` and ``q`` is below the smallest normal float, the log-pmf is summed from its logs
    (``ln C(n, k) + k ln p + (n - k) ln q``) instead, so nothing underflows.
    """
    from scipy import special, stats

    if log_p == _NEG_INF:
        return 0.0, _NEG_INF
    if log_q == _NEG_INF:
        return _NEG_INF, 0.0
    k = np.arange(n + 1)
    small = min(log_p, log_q)
    if small > math.log(np.finfo(np.float64).tiny):
        p, q = math.exp(log_p), math.exp(log_q)
        logpmf = stats.binom.logpmf(k, n, p) if p <= 0.5 else stats.binom.logpmf(n - k, n, q)
    else:
        logpmf = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1) + k * log_p + (n - k) * log_q
    half = n // 2
    return float(special.logsumexp(logpmf[: half + 1])), float(special.logsumexp(logpmf[half + 1 :]))


def exact_guess_probabilities(name: str, n: int, epsilon: float) -> NDArray[np.float64]:
    """``log P(guess y | dataset d)`` as a 2x2 array ``[d, y]`` for a built-in mechanism.

    Coordinates round independently, so the number of ones is Binomial(n, p_d) (see
    :func:`rounding_probabilities`) and the guess is 1 iff it exceeds n/2.
    """
    name, n, eps = _check_exact_args(name, n, epsilon)
    (p0, q0), (p1, q1) = _log_rounding(name, n, eps)
    return np.array([_log_majority(n, p0, q0), _log_majority(n, p1, q1)])


def exact_loss(name: str, n: int, epsilon: float) -> float:
    """The attack's true privacy loss for built-in mechanism ``name``, in closed form.

    ``max_y |ln P(y | D) - ln P(y | D')|`` with the guess probabilities of
    :func:`exact_guess_probabilities`, computed in log space (no underflow: e.g. ADePT at
    n = 128, epsilon = 10 has a finite loss of about 284 although no Monte Carlo run of feasible
    size ever sees a trial on the rare side).  ``math.inf`` for ``dptext`` and ``copy_input``,
    0 for ``random_output``.
    """
    return _loss_from_logs(exact_guess_probabilities(name, n, epsilon).tolist())


def _loss_of_guess(a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.float64]:
    """``|ln a - ln b|`` elementwise: 0 where both counts are 0 (guess skipped), inf where one is."""
    both, one = (a == 0) & (b == 0), (a == 0) ^ (b == 0)
    safe_a, safe_b = np.where(a > 0, a, 1), np.where(b > 0, b, 1)
    loss = np.abs(np.log(safe_a) - np.log(safe_b))
    return np.where(one, math.inf, np.where(both, 0.0, loss))


def simulated_losses(
    name: str, n: int, epsilon: float, trials: int, reps: int = 10_000, *, rng: np.random.Generator
) -> NDArray[np.float64]:
    """The estimated loss (Eq. 12) of ``reps`` virtual audits of ``trials`` trials per dataset.

    No mechanism runs: a run's counts of guess 1 are exactly ``Binomial(trials, q_d)`` with the
    closed-form ``q_d`` of :func:`exact_guess_probabilities`, so drawing the two counts and applying
    :func:`loss_from_counts` gives a draw from the sampling distribution of the estimate.
    """
    name = check_choice(name, "name", MECHANISMS)
    n = check_int(n, "n", minimum=1, maximum=MAX_N)
    epsilon = check_positive(epsilon, "epsilon")
    trials = check_int(trials, "trials", minimum=1, maximum=MAX_TRIALS)
    reps = check_int(reps, "reps", minimum=1, maximum=MAX_ELEMENTS // 2)
    rng = check_rng(rng)
    q = np.clip(np.exp(exact_guess_probabilities(name, n, epsilon)[:, 1]), 0.0, 1.0)
    ones = rng.binomial(trials, q[:, None], size=(2, reps))  # counts[d, 1] of each virtual run
    zeros = trials - ones
    return np.maximum(_loss_of_guess(ones[0], ones[1]), _loss_of_guess(zeros[0], zeros[1]))
