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
import dataclasses
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
    check_float_array,
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


# =============================================================================================
# audit_pair: a general auditor for one pair of neighbouring datasets
# =============================================================================================
#
# How it works (see the docstring of :func:`audit_pair`):
#
# 1. One *probe* block (the first block of the selection half, always run in this process) fixes
#    the kind of output and the *cells* of a partition of the output space: histogram bins of a
#    real output (or of ``statistic(output)``), or the distinct values of a discrete output.
# 2. Every other block, of both halves, is independent (seeded by ``SeedSequence.spawn``) and only
#    counts how many outputs of ``x`` and of ``x_prime`` fall in each cell; integer counts add up
#    in any order, so the result does not depend on ``workers`` or ``executor``.
# 3. The selection half's counts order the cells (by value, or by estimated likelihood ratio) and
#    choose the cut: the event S is a prefix of that order (or its complement).
# 4. The estimation half's counts of S, with Clopper-Pearson bounds, give the lower bound.

#: Outputs drawn per mechanism call are capped at this many elements (rows x width), so that a
#: vector-valued mechanism never needs more than a few MB per call.
PAIR_CALL_ELEMENTS: int = 1 << 20

#: Central histogram bins (uniform between the 1% and 99% quantiles of the probe block).
PAIR_CENTRAL_BINS: int = 4096

#: Bins in each tail (quantiles of the probe block's outputs beyond the 1% / 99% quantiles).
PAIR_TAIL_BINS: int = 256

#: A discrete output with more distinct values than this must be audited through ``statistic``.
PAIR_MAX_CATEGORIES: int = 1 << 16

#: A one-dimensional integer output with more distinct values than this in the probe block is
#: audited with threshold events (as a real number) instead of as categories.
PAIR_MAX_INT_CATEGORIES: int = 4096

#: Blocks submitted to an executor at any one time (bounds memory; an interrupt loses these).
PAIR_IN_FLIGHT: int = 64

__all__ += [
    "PairAudit",
    "audit_pair",
    "PAIR_CALL_ELEMENTS",
    "PAIR_IN_FLIGHT",
    "PAIR_CENTRAL_BINS",
    "PAIR_TAIL_BINS",
    "PAIR_MAX_CATEGORIES",
    "PAIR_MAX_INT_CATEGORIES",
]


def _callable_name(fn: object) -> str:
    """A readable name for a user's callable (a ``functools.partial`` shows its function)."""
    if isinstance(fn, functools.partial):
        return _callable_name(fn.func)
    name = getattr(fn, "__name__", None) or getattr(fn, "__qualname__", None)
    return str(name) if name else type(fn).__name__


@dataclass(frozen=True)
class _Layout:
    """How outputs are turned into cells: fixed by the probe block, shared by every block.

    ``mode`` is ``"real"`` (histogram cells of a real value: the output itself, or
    ``statistic(output)``) or ``"discrete"`` (one cell per distinct output row).
    """

    mode: str
    row_shape: tuple[int, ...]
    floating: bool
    statistic: Any = None
    stat_floating: bool = True  # whether ``statistic`` returns floats (thresholds) or integers (categories)
    lo: float = 0.0
    hi: float = 1.0
    bins: int = 1
    lower_edges: Any = None  # sorted float64 array, all < lo
    upper_edges: Any = None  # sorted float64 array, all > hi

    @property
    def width(self) -> int:
        return int(math.prod(self.row_shape))

    @property
    def cells(self) -> int:
        return len(self.lower_edges) + 1 + self.bins + len(self.upper_edges) + 1

    def boundary(self, j: int) -> float:
        """The threshold t with ``{cell >= j} = {value >= t}`` (up to rounding), 1 <= j < cells."""
        nl = len(self.lower_edges) + 1
        if j < nl:
            return float(self.lower_edges[j - 1])
        if j < nl + self.bins:
            return self.lo + (j - nl) * (self.hi - self.lo) / self.bins
        i = j - nl - self.bins
        return self.hi if i == 0 else float(self.upper_edges[i - 1])


def _checked_outputs(out: object, size: int, layout_shape: tuple[int, ...] | None, floating: bool | None, name: str) -> np.ndarray:
    """The mechanism's outputs as an array with ``size`` rows, or a ValueError naming it."""
    if not isinstance(out, np.ndarray):
        try:
            out = np.asarray(out)
        except Exception as exc:
            raise ValueError(f"mechanism {name!r} returned {type(out).__name__}, not an array of outputs") from exc
    if out.ndim == 0 or out.shape[0] != size:
        got = "a scalar" if out.ndim == 0 else f"{out.shape[0]} outputs (shape {out.shape})"
        raise ValueError(f"mechanism {name!r} returned {got} when asked for size={size}")
    if out.dtype.kind not in "biuf":
        raise ValueError(f"mechanism {name!r} returned non-numeric outputs (dtype {out.dtype})")
    if out.dtype.kind == "f" and out.size and np.isnan(out).any():
        raise ValueError(f"mechanism {name!r} returned NaN")
    if layout_shape is not None:
        if out.shape[1:] != layout_shape:
            raise ValueError(
                f"mechanism {name!r} changed the shape of its outputs: {out.shape[1:]} instead of {layout_shape}"
            )
        if (out.dtype.kind == "f") != floating:
            raise ValueError(f"mechanism {name!r} changed the type of its outputs (now {out.dtype})")
    return out


def _statistic_values(statistic: Any, out: np.ndarray, name: str, floating: bool | None = None) -> np.ndarray:
    """``statistic(out)`` checked: one real per output (floats, never NaN), or one integer or boolean
    (or one row of them) per output, which are then audited as categories.  ``floating`` (once known)
    is the kind that every call must keep returning."""
    sname = _callable_name(statistic)
    try:
        values = np.asarray(statistic(out))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"statistic {sname!r} failed on the outputs of mechanism {name!r}: {exc}") from exc
    if values.dtype.kind not in "biuf":
        raise ValueError(f"statistic {sname!r} must return real numbers, got dtype {values.dtype}")
    is_float = values.dtype.kind == "f"
    rows_ok = values.ndim == 1 or (values.ndim == 2 and not is_float)
    if not rows_ok or values.shape[0] != out.shape[0]:
        raise ValueError(
            f"statistic {sname!r} must return one real per output, shape ({out.shape[0]},), got {values.shape}"
        )
    if floating is not None and is_float != floating:
        raise ValueError(f"statistic {sname!r} changed the type of its values (now {values.dtype})")
    if is_float and np.isnan(values).any():
        raise ValueError(f"statistic {sname!r} returned NaN")
    return values


def _observe(out: np.ndarray, layout: _Layout, name: str) -> np.ndarray:
    """What the events look at: ``statistic(out)`` if there is a statistic, else the outputs."""
    if layout.statistic is None:
        return out
    return _statistic_values(layout.statistic, out, name, layout.stat_floating)


def _values(out: np.ndarray, layout: _Layout, name: str) -> NDArray[np.float64]:
    """The real value of each output that the threshold events look at."""
    obs = _observe(out, layout, name)
    return obs.reshape(obs.shape[0]).astype(np.float64, copy=False)


def _bin_counts(values: NDArray[np.float64], layout: _Layout) -> NDArray[np.int64]:
    """Counts per histogram cell; the cell index is non-decreasing in the value."""
    nl = len(layout.lower_edges) + 1
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.subtract(values, layout.lo)
        np.multiply(t, layout.bins / (layout.hi - layout.lo), out=t)
    np.clip(t, 0.0, layout.bins - 0.5, out=t)
    idx = t.astype(np.int64)
    idx += nl
    low = values < layout.lo
    if low.any():
        idx[low] = np.searchsorted(layout.lower_edges, values[low], side="right")
    high = values >= layout.hi
    if high.any():
        idx[high] = nl + layout.bins + np.searchsorted(layout.upper_edges, values[high], side="right")
    return np.bincount(idx, minlength=layout.cells).astype(np.int64, copy=False)


def _category_counts(out: np.ndarray) -> dict[Any, int]:
    """Distinct output rows (ints, or tuples of ints for vectors) and how often each occurs."""
    rows = out.reshape(out.shape[0], -1).astype(np.int64, copy=False)
    if rows.shape[0] == 0:
        return {}
    if rows.shape[1] > 1:
        # Mixed-radix codes (one int64 per row) make np.unique 1-D and fast; rows are decoded back.
        lo = rows.min(axis=0)
        radix = rows.max(axis=0) - lo + 1
        if float(np.prod(radix.astype(np.float64))) < 2.0**62:
            mult = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)
            codes, counts = np.unique((rows - lo) @ mult, return_counts=True)
            digits = (codes[:, None] // mult) % radix + lo
            return dict(zip(map(tuple, digits.tolist()), counts.tolist()))
    if rows.shape[1] == 1:
        v = rows[:, 0]
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < (1 << 20):
            bc = np.bincount(v - lo)
            nz = np.flatnonzero(bc)
            return dict(zip((nz + lo).tolist(), bc[nz].tolist()))
        keys, counts = np.unique(v, return_counts=True)
        return dict(zip(keys.tolist(), counts.tolist()))
    keys, counts = np.unique(rows, axis=0, return_counts=True)
    return dict(zip(map(tuple, keys.tolist()), counts.tolist()))


def _draw(mechanism: Any, data: Any, size: int, rng: np.random.Generator, layout: _Layout, name: str):
    """Yield the outputs of ``size`` runs on ``data``, in calls of at most PAIR_CALL_ELEMENTS elements."""
    rows = max(1, PAIR_CALL_ELEMENTS // max(1, layout.width))
    done = 0
    while done < size:
        m = min(rows, size - done)
        yield _checked_outputs(mechanism(data, m, rng), m, layout.row_shape, layout.floating, name)
        done += m


def _pair_block(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence, layout: _Layout
) -> Any:
    """One independent block: ``size`` runs on ``x`` then on ``x_prime`` with one generator.

    Returns a ``(2, cells)`` count array (real mode) or two dicts of category counts (discrete).
    """
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    if layout.mode == "real":
        counts = np.zeros((2, layout.cells), dtype=np.int64)
        for d, data in enumerate((x, x_prime)):
            for out in _draw(mechanism, data, size, rng, layout, name):
                counts[d] += _bin_counts(_values(out, layout, name), layout)
        return counts
    result: list[dict[Any, int]] = [{}, {}]
    for d, data in enumerate((x, x_prime)):
        acc = result[d]
        for out in _draw(mechanism, data, size, rng, layout, name):
            for key, c in _category_counts(_observe(out, layout, name)).items():
                acc[key] = acc.get(key, 0) + c
            if len(acc) > PAIR_MAX_CATEGORIES:
                raise ValueError(
                    f"mechanism {name!r} returned more than {PAIR_MAX_CATEGORIES} distinct outputs; "
                    "audit it through statistic=... (a function from outputs to reals)"
                )
    return result


def _real_layout(values: NDArray[np.float64], row_shape: tuple[int, ...], floating: bool, statistic: Any) -> _Layout:
    """Histogram cells from the probe block's values: uniform bins between the 1% and 99%
    quantiles, quantile bins in each tail (all from observed values, so no interpolation)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        lo, hi = 0.0, 1.0
    else:
        q01, q25, q75, q99 = (
            float(q) for q in np.quantile(finite, [0.01, 0.25, 0.75, 0.99], method="inverted_cdf")
        )
        lo, hi = q01, q99
        with np.errstate(over="ignore"):
            iqr, span = q75 - q25, hi - lo
        if 0 < iqr < math.inf and not span <= 50 * iqr:
            # Far outliers (or an overflowing range) would make the uniform bins too coarse for
            # the bulk: bin the bulk uniformly and leave the outliers to the quantile tails.
            lo, hi = max(lo, q25 - 20 * iqr), min(hi, q75 + 20 * iqr)
        if hi <= lo:
            lo, hi = float(finite.min()), float(finite.max())
        if hi <= lo:
            hi = lo + max(1.0, abs(lo)) * 1e-9
        with np.errstate(over="ignore"):
            if not math.isfinite(hi - lo):  # the range still overflows: halve it
                lo, hi = lo / 2.0, hi / 2.0
    levels = np.linspace(0.0, 1.0, PAIR_TAIL_BINS + 1)
    below, above = values[values < lo], values[values > hi]
    lower = np.unique(np.quantile(below, levels, method="inverted_cdf")) if below.size else np.empty(0)
    upper = np.unique(np.quantile(above, levels, method="inverted_cdf")) if above.size else np.empty(0)
    return _Layout(
        mode="real", row_shape=row_shape, floating=floating, statistic=statistic, lo=lo, hi=hi,
        bins=PAIR_CENTRAL_BINS, lower_edges=lower.astype(np.float64), upper_edges=upper.astype(np.float64),
    )


def _first_call(mechanism: Any, data: Any, size: int, rng: np.random.Generator, label: str, name: str) -> Any:
    """The very first call on ``data``: an error there is most often bad ``data`` or a wrong signature."""
    try:
        return mechanism(data, size, rng)
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"{label}: mechanism {name!r} failed on {label} (called as mechanism(data, size, rng)): {exc}"
        ) from exc


def _probe_block(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence, statistic: Any
) -> tuple[_Layout, Any]:
    """The first selection block: learn the outputs' kind and shape, fix the cells, count them.

    Its first call asks for at most 64 outputs (to learn the row width before asking for many).
    """
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    first = _checked_outputs(_first_call(mechanism, x, min(size, 64), rng, "x", name), min(size, 64), None, None, name)
    row_shape, floating = first.shape[1:], first.dtype.kind == "f"
    width = int(math.prod(row_shape))
    if width == 0:
        raise ValueError(f"mechanism {name!r} returned empty outputs (shape {first.shape})")
    stat_floating = True
    if statistic is not None:
        first_obs = _statistic_values(statistic, first, name)
        stat_floating = first_obs.dtype.kind == "f"
        mode = "real" if stat_floating else "discrete"
    elif floating and width > 1:
        raise ValueError(
            f"mechanism {name!r} returns real vectors of shape {row_shape}; pass statistic=... (a function "
            "from an array of outputs to one real per output, e.g. a sum or a log-likelihood ratio)"
        )
    else:
        first_obs = first
        mode = "real" if floating else "discrete"
    layout = _Layout(mode=mode, row_shape=row_shape, floating=floating, statistic=statistic, stat_floating=stat_floating)
    # Only what the events look at is kept (never a block of wide raw outputs).
    obs: list[list[np.ndarray]] = [[first_obs], []]
    rest = size - first.shape[0]
    if rest:
        obs[0].extend(_observe(o, layout, name) for o in _draw(mechanism, x, rest, rng, layout, name))
    draws = _draw(mechanism, x_prime, size, rng, layout, name)
    try:
        first_prime = next(draws)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"x_prime: mechanism {name!r} failed on x_prime: {exc}") from exc
    obs[1].append(_observe(first_prime, layout, name))
    obs[1].extend(_observe(o, layout, name) for o in draws)

    if mode == "discrete" and obs[0][0].ndim == 1:
        distinct = np.unique(np.concatenate(obs[0] + obs[1]))
        if distinct.size > PAIR_MAX_INT_CATEGORIES:
            mode = "real"  # e.g. a noisy integer count with a wide range: threshold it
    if mode == "real":
        values = [np.concatenate([o.reshape(o.shape[0]) for o in obs[d]]).astype(np.float64) for d in (0, 1)]
        layout = _real_layout(np.concatenate(values), row_shape, floating, statistic)
        layout = dataclasses.replace(layout, stat_floating=stat_floating)
        counts = np.stack([_bin_counts(values[d], layout) for d in (0, 1)])
        return layout, counts
    result: list[dict[Any, int]] = [{}, {}]
    for d in (0, 1):
        for o in obs[d]:
            for key, c in _category_counts(o).items():
                result[d][key] = result[d].get(key, 0) + c
    return layout, result


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


def _exact_interval(k: int, n: int, alpha_each_side: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion, ``alpha_each_side`` per side."""
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1.0 - 2.0 * alpha_each_side, method="exact")
    return float(ci.low), float(ci.high)


#: The four (event, direction) pairs compared for a prefix P of the cells: (complement?, numerator).
_COMBOS = ((False, 0), (False, 1), (True, 0), (True, 1))


@dataclass(frozen=True, eq=False)
class PairAudit:
    """Outcome of :func:`audit_pair`.

    Attributes
    ----------
    lower_bound:
        With probability at least ``confidence``, the mechanism's true epsilon (at ``delta``) is at
        least this value; never negative, never NaN.
    estimate:
        The plug-in value ``ln((p - delta) / p')`` of the chosen event on the estimation half
        (``math.inf`` when ``p' = 0``); a point estimate, not a bound.
    event:
        The chosen event S, in words, with the dataset under which it is more likely.
    counts:
        Read-only 2x2 int array from the estimation half: row 0 is the dataset under which S is
        more likely (the numerator), row 1 the other; column 0 counts outputs in S, column 1 not in S.
    trials, selection_trials, estimation_trials:
        Runs per dataset in all, used to choose S, and used to estimate its probabilities.
    epsilon, delta, confidence:
        The claimed epsilon, the delta of the bound, and the confidence level.
    seed:
        The SeedSequence entropy: ``audit_pair(..., seed=result.seed)`` repeats the run exactly.
    mechanism:
        The mechanism's name.
    threshold:
        For threshold events, the threshold t (S is ``value >= t`` or ``value < t``); else None.
    false_positive_rates, false_negative_rates:
        Read-only arrays: the empirical trade-off points (type I error ``P[M(x) in E]``, type II
        error ``P[M(x') not in E]``) of every candidate event E on the estimation half, for a test
        that rejects "the data is x" when the output lands in E (see :meth:`tradeoff`).
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
        table = check_float_array(self.counts, "counts", finite=True)
        if table.shape != (2, 2) or (table < 0).any() or (table != np.round(table)).any() or table.max() >= 2.0**62:
            raise ValueError(f"counts must be a 2x2 table of non-negative integers, got {table.tolist()}")
        counts = table.astype(np.int64)
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)
        for field in ("false_positive_rates", "false_negative_rates"):
            value = getattr(self, field)
            arr = np.empty(0) if value is None else check_float_array(value, field, finite=True, ndim=1).copy()
            arr.setflags(write=False)
            object.__setattr__(self, field, arr)
        if self.false_positive_rates.shape != self.false_negative_rates.shape:
            raise ValueError("false_positive_rates and false_negative_rates must have the same length")

    def is_violation(self) -> bool:
        """True when the lower bound exceeds the claimed ``epsilon``: the mechanism is not
        (epsilon, delta)-DP, with error probability at most ``1 - confidence``."""
        return self.lower_bound > self.epsilon

    def tradeoff(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The empirical trade-off points ``(alpha, beta)``, sorted by ``alpha``.

        ``alpha`` is the false-positive rate ``P[M(x) in E]`` and ``beta`` the false-negative rate
        ``P[M(x') not in E]`` of each candidate event E, on the estimation half (plug-in values, not
        bounds).  For an f-DP mechanism the points lie above its trade-off curve f, up to sampling
        error; for the Gaussian mechanism f(alpha) = Phi(Phi^-1(1 - alpha) - mu).
        """
        order = np.argsort(self.false_positive_rates, kind="stable")
        return self.false_positive_rates[order], self.false_negative_rates[order]

    def summary(self) -> str:
        """A short multi-line report: parameters, the event, its counts, the bound and the verdict."""
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
                f"event S: {self.event}",
                f"in S: {self.counts[0, 0]} of {n} (numerator dataset), {self.counts[1, 0]} of {n} (other)",
                f"estimated loss {_fmt(self.estimate)}; {pct} lower bound {self.lower_bound:.4g}",
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


def _describe_set(keys: list[Any]) -> str:
    shown = ", ".join(map(str, keys[:8]))
    if len(keys) <= 8:
        return f"output in {{{shown}}}"
    return f"output in a set of {len(keys)} values {{{shown}, ...}}"


def audit_pair(
    mechanism: Any,
    x: Any,
    x_prime: Any,
    *,
    epsilon: float,
    trials: int,
    seed: int | Sequence[int] | None = None,
    confidence: float = 0.95,
    statistic: Any = None,
    delta: float = 0.0,
    workers: int = 1,
    executor: concurrent.futures.Executor | None = None,
) -> PairAudit:
    """A sound lower bound on the (epsilon, delta) of ``mechanism`` from the pair ``x``, ``x_prime``.

    ``mechanism(data, size, rng)`` returns ``size`` independent outputs for the dataset ``data``
    as an array whose first axis has length ``size``: real scalars, integers or booleans
    (categories), integer or boolean vectors (each row one category), or real vectors together
    with ``statistic``, a function from such an array of outputs to one real per output.

    Method.  Each dataset is run ``trials`` times.  The first ``trials // 2`` runs (the selection
    half) choose an event S: a threshold ``value >= t`` or ``value < t`` on a real output (or on the
    statistic), or, for discrete outputs, the set of output values with the largest estimated
    likelihood ratio (the Neyman-Pearson form).  The cut is the one that maximises the projected
    lower bound.  The other runs (the estimation half), independent of the choice, count how often
    S occurs.  With exact Clopper-Pearson intervals (``scipy.stats.binomtest``) on ``p = P[M(x) in
    S]`` and ``p' = P[M(x') in S]``, each side at error ``(1 - confidence) / 4``, a union bound
    covers both directions (x over x', and x' over x) and S as well as its complement, so

        lower_bound = max(0, max over the four of ln((p_lower - delta) / p'_upper))

    is below the true epsilon with probability at least ``confidence``: (epsilon, delta)-DP
    says ``p <= e^epsilon p' + delta`` for every event.

    Reproducibility and scale.  Runs are made in blocks of :data:`BLOCK_TRIALS` per dataset, block
    ``i`` of each half seeded by a child of ``SeedSequence(seed).spawn``; each block only counts
    outputs per cell (histogram bins, or distinct values), so the counts are the same whatever
    ``workers`` or ``executor``, and memory does not grow with ``trials``.  ``workers > 1`` runs
    blocks in a process pool (``mechanism``, ``statistic``, ``x`` and ``x_prime`` must be
    picklable); ``executor`` takes any :class:`concurrent.futures.Executor` instead, for example
    ``dask.distributed.Client(...).get_executor()``.  A 10^10-trial audit on a cluster::

        from dask.distributed import Client          # pip install "dptutor[distributed]"
        client = Client("tcp://scheduler:8786")      # workers need dptutor and the mechanism's module
        result = audit_pair(mech, x, x_prime, epsilon=1.0, trials=10**10, seed=2022,
                            executor=client.get_executor())

    That is about 38,000 blocks per half (76,000 in all), at most :data:`PAIR_IN_FLIGHT` in flight at a time; an
    interrupt loses only those.

    Raises ``TypeError``/``ValueError`` naming the bad parameter, and ``ValueError`` naming the
    mechanism if it returns the wrong number of outputs, NaN, non-numeric values, or outputs that
    change shape or type between calls.
    """
    check_callable(mechanism, "mechanism", "mechanism(data, size, rng)")
    eps = check_positive(epsilon, "epsilon")
    trials = check_int(trials, "trials", minimum=2, maximum=10**12)
    seed = check_seed(seed, "seed")
    conf = check_probability(confidence, "confidence")
    if statistic is not None:
        check_callable(statistic, "statistic", "statistic(outputs) -> one real per output")
    dlt = check_real(delta, "delta", low=0.0, high=1.0, high_open=True)
    if executor is not None and not isinstance(executor, concurrent.futures.Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
    name = _callable_name(mechanism)
    data = []
    for label, value in (("x", x), ("x_prime", x_prime)):
        if isinstance(value, np.ndarray):  # a private read-only copy: no block can change the data
            value = value.copy()
            value.setflags(write=False)
        data.append(value)
    x, x_prime = data

    seed_seq = np.random.SeedSequence(seed)
    entropy = seed_seq.entropy
    recorded_seed = tuple(int(v) for v in entropy) if isinstance(entropy, (list, tuple, np.ndarray)) else entropy
    n_sel, n_est = trials // 2, trials - trials // 2
    sel_seq, est_seq = seed_seq.spawn(2)
    n_tasks = -(-n_sel // BLOCK_TRIALS) - 1 + -(-n_est // BLOCK_TRIALS)
    workers = check_workers(workers, "workers", tasks=max(1, n_tasks))

    def blocks(half: int, parent: np.random.SeedSequence, total: int, start: int) -> Any:
        """Block ``i`` of a half: ``min(BLOCK_TRIALS, rest)`` runs, seeded by ``parent.spawn``'s i-th child
        (made lazily, so that 10^12 runs need no list of 10^7 seeds)."""
        for i in range(start, -(-total // BLOCK_TRIALS)):
            child = np.random.SeedSequence(parent.entropy, spawn_key=parent.spawn_key + (i,), pool_size=parent.pool_size)
            yield half, min(BLOCK_TRIALS, total - i * BLOCK_TRIALS), child

    tasks = itertools.chain(blocks(0, sel_seq, n_sel, 1), blocks(1, est_seq, n_est, 0))
    _, first_size, first_seed = next(blocks(0, sel_seq, n_sel, 0))
    layout, probe = _probe_block(mechanism, name, x, x_prime, first_size, first_seed, statistic)
    if layout.mode == "real":
        totals: Any = [probe, np.zeros_like(probe)]

        def add(half: int, block: Any) -> None:
            totals[half] += block
    else:
        table: dict[Any, NDArray[np.int64]] = {}

        def add(half: int, block: Any) -> None:
            for d in (0, 1):
                for key, c in block[d].items():
                    row = table.get(key)
                    if row is None:
                        if len(table) >= PAIR_MAX_CATEGORIES:
                            raise ValueError(
                                f"mechanism {name!r} returned more than {PAIR_MAX_CATEGORIES} distinct outputs; "
                                "audit it through statistic=... (a function from outputs to reals)"
                            )
                        row = table[key] = np.zeros(4, dtype=np.int64)
                    row[2 * half + d] += c

        add(0, probe)

    _run_pair_blocks(mechanism, name, x, x_prime, layout, tasks, workers, executor, add, statistic)

    if layout.mode == "real":
        sel, est = totals
        keys: list[Any] = []
    else:
        # Order the values by their likelihood ratio on the selection half only (add-1/2 smoothing
        # keeps values seen under one dataset finite); ties in the order of the values.
        keys = sorted(table, key=lambda k: (k,) if not isinstance(k, tuple) else k)
        arr = np.array([table[k] for k in keys], dtype=np.int64).reshape(-1, 4)
        ratio = np.log(arr[:, 0] + 0.5) - np.log(arr[:, 1] + 0.5)
        order = np.argsort(-ratio, kind="stable")
        keys = [keys[i] for i in order]
        sel, est = arr[order, 0:2].T, arr[order, 2:4].T
    return _bound_from_counts(sel, est, n_sel, n_est, layout, keys, eps, dlt, conf, trials, recorded_seed, name)


def _run_pair_blocks(
    mechanism: Any, name: str, x: Any, x_prime: Any, layout: _Layout, tasks: Any, workers: int,
    executor: concurrent.futures.Executor | None, add: Any, statistic: Any,
) -> None:
    """Run the blocks of the iterator ``tasks`` (half, size, seed) here, in a process pool or on ``executor``."""
    own_pool = None
    pool = executor
    if pool is None and workers > 1:
        for label, obj in (("mechanism", mechanism), ("statistic", statistic), ("x", x), ("x_prime", x_prime)):
            try:
                pickle.dumps(obj)
            except Exception as exc:
                raise TypeError(
                    f"{label} must be picklable to run with workers > 1 (define {name!r} at module level)"
                ) from exc
        own_pool = pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers)
    if pool is None:
        for half, size, child in tasks:
            add(half, _pair_block(mechanism, name, x, x_prime, size, child, layout))
        return
    pending: dict[concurrent.futures.Future, int] = {}
    it = iter(tasks)
    try:
        while True:
            while len(pending) < PAIR_IN_FLIGHT:
                task = next(it, None)
                if task is None:
                    break
                half, size, child = task
                pending[pool.submit(_pair_block, mechanism, name, x, x_prime, size, child, layout)] = half
            if not pending:
                break
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                add(pending.pop(fut), fut.result())
    except BaseException:
        for fut in pending:
            fut.cancel()
        raise
    finally:
        if own_pool is not None:
            own_pool.shutdown(wait=True, cancel_futures=True)


def _bound_from_counts(
    sel: NDArray[np.int64], est: NDArray[np.int64], n_sel: int, n_est: int, layout: _Layout, keys: list[Any],
    epsilon: float, delta: float, confidence: float, trials: int, seed: Any, name: str,
) -> PairAudit:
    """Choose the cut on the selection counts, bound its probabilities on the estimation counts.

    ``sel`` and ``est`` are ``(2, cells)`` counts (row 0 for ``x``, row 1 for ``x_prime``) with
    the cells in the order whose prefixes are the candidate events.
    """
    from scipy import stats

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
            selection_trials=n_sel, estimation_trials=n_est, false_positive_rates=fpr, false_negative_rates=fnr,
        )

    # 1. Selection: the projected lower bound of each cut j (prefix = first j cells), at the
    #    estimation half's size, with Wilson bounds in place of the exact ones.
    # The score uses twice the final z: a cautious score that prefers events with larger
    # probabilities where the estimated ratios tie, so that noise in the selection half's counts
    # rarely picks a cut in a thin tail (measured: closer to epsilon for the Laplace count).
    z = 2.0 * float(stats.norm.isf(alpha / 4.0))
    j = np.arange(1, cells)
    p = cum_sel[:, 1:cells] / n_sel  # (2, cells - 1): P[prefix] under x and x_prime
    scores = []
    for complement, num in _COMBOS:
        q = 1.0 - p if complement else p
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
    cut = int(j[cut])

    # 2. Estimation: exact intervals on the chosen prefix and its complement, alpha/4 per side.
    a = alpha / 4.0
    k = [int(cum_est[0, cut]), int(cum_est[1, cut])]
    inside = [_exact_interval(k[d], n_est, a) for d in (0, 1)]
    outside = [_exact_interval(n_est - k[d], n_est, a) for d in (0, 1)]
    bounds = []
    for complement, num in _COMBOS:
        iv = outside if complement else inside
        bounds.append(float(_log_ratio(iv[num][0] - delta, iv[1 - num][1])))
    combo = int(np.argmax(bounds)) if max(bounds) > 0 else combo_sel
    lower = max(0.0, bounds[combo])
    complement, num = _COMBOS[combo]
    k_in = [n_est - k[d] if complement else k[d] for d in (0, 1)]
    p_num, p_den = k_in[num] / n_est, k_in[1 - num] / n_est
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
        label = "output" if layout.statistic is None else f"{_callable_name(layout.statistic)}(output)"
        event = f"{label} {'>=' if complement else '<'} {threshold:.6g}"
    else:
        event = _describe_set(keys[cut:] if complement else keys[:cut])
    counts = np.array([[k_in[num], n_est - k_in[num]], [k_in[1 - num], n_est - k_in[1 - num]]])
    return PairAudit(
        lower_bound=lower, estimate=estimate, event=f"{event} (more likely under {more_likely})", counts=counts,
        trials=trials, epsilon=epsilon, delta=delta, confidence=confidence, seed=seed, mechanism=name,
        selection_trials=n_sel, estimation_trials=n_est, threshold=threshold,
        false_positive_rates=fpr, false_negative_rates=fnr,
    )
