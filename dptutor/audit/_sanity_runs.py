"""The sanity check's Monte Carlo runs: :func:`estimate_loss` and :func:`estimate_losses`, in seeded blocks.

See :mod:`dptutor.audit.sanity` for the experiment.  Trials run in blocks of ``BLOCK_TRIALS``, each
seeded by a child of one ``SeedSequence``, so a seed fixes the counts whatever the parallelism.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import math
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_bool,
    check_callable,
    check_int,
    check_positive,
    check_seed,
    check_seed_sequence,
    check_sequence,
    check_str,
    check_workers,
    immutable_finite_array,
    is_bool,
    renamed_parameters,
    seed_entropy,
    shown,
)
from dptutor._workers import WorkerPool
from dptutor.audit._sanity_result import MAX_N, MAX_TRIALS, AuditResult, loss_from_counts
from dptutor.mechanisms import MECHANISMS, Mechanism

__all__ = ["AuditCell", "estimate_loss", "estimate_losses", "plain_outputs", "BLOCK_TRIALS", "CHUNK_ELEMENTS"]

#: Trials per independently seeded block.  Fixed (independent of ``workers`` and ``n``), so a seed
#: determines the counts whatever the parallelism.  2**17 trials at n = 128 is ~0.1-0.2 s of work.
BLOCK_TRIALS: int = 1 << 17

#: Target elements per chunk (rows = CHUNK_ELEMENTS // n, at least 1): 2**16 float64 = 512 KiB,
#: which stays in L2 cache.  Measured with ``benchmarks/bench_audit.py --chunks`` (Laplace, n = 128):
#: 2**14-2**16 fastest; from 2**17 up the buffers fall out of cache and it gets slower (and below
#: 2**13 per-call overhead dominates).
CHUNK_ELEMENTS: int = 1 << 16

#: Trials per dataset above this are refused (10^10 is a thousand times the paper's 10^7 and days

def _mechanism_name(mechanism: object) -> str:
    for key, fn in MECHANISMS.items():
        if fn is mechanism:
            return key
    name = getattr(mechanism, "__qualname__", None) or getattr(mechanism, "__name__", None)
    return str(name) if name else repr(mechanism)


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


def _call(mechanism: Mechanism, x: NDArray[np.float64], epsilon: float, rng: np.random.Generator, name: str) -> object:
    """``mechanism(x, epsilon, rng)``; an exception it raises becomes a ``TypeError`` (if it was one) or a
    ``ValueError`` naming it, never a bare ``ZeroDivisionError`` or ``KeyError`` from the user's code."""
    try:
        return mechanism(x, epsilon, rng)
    except Exception as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(f"mechanism {name!r} raised {type(exc).__name__} (called as mechanism(x, epsilon, rng)): {exc}") from exc


def plain_outputs(out: object, name: str) -> np.ndarray:
    """A mechanism's return value ``out`` as a plain ndarray (shared by ``estimate_loss`` and ``audit_pair``):
    ndarray subclasses (``np.matrix``, masked arrays) are read as their plain data, a masked array with masked
    (missing) entries is refused, and so is anything numpy cannot read (a ValueError naming mechanism ``name``)."""
    if isinstance(out, np.ma.MaskedArray) and np.ma.getmaskarray(out).any():
        raise ValueError(f"mechanism {name!r} returned a masked array with masked (missing) outputs")
    if type(out) is np.ndarray:
        return out
    try:
        return np.asarray(out)
    except Exception as exc:
        raise ValueError(f"mechanism {name!r} returned {type(out).__name__}, not an array of outputs") from exc


def _check_output(out: object, shape: tuple[int, int], name: str) -> np.ndarray:
    out = plain_outputs(out, name)
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
            out = _check_output(_call(mechanism, xm, epsilon, rng, name), xm.shape, name)
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



@dataclass(frozen=True)
class AuditCell:
    """One audit to run: ``trials`` trials per dataset of ``mechanism`` at dimension ``n`` and ``epsilon``.

    All fields are checked when the cell is made.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(x, epsilon, rng)``, as in :func:`estimate_loss`.
    n : int
        The dimension, 1 to ``MAX_N``.
    epsilon : float
        The claimed epsilon, positive.
    trials : int
        Trials per dataset, 1 to ``MAX_TRIALS``.
    seed : int, tuple of int or None, optional
        The seed entropy of the cell's ``SeedSequence`` (a recordable seed, as in ``AuditResult.seed``);
        ``None`` draws fresh entropy when the cell runs.
    name : str or None, optional
        Labels the result (default: the built-in name or the callable's qualified name).

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind or out of range (naming it).
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
    """Run several audits, sharing one process pool.

    Each cell gives exactly what :func:`estimate_loss` gives for it alone (same blocks, same seeds).
    With ``workers > 1`` the blocks of all cells go to one pool of worker processes (at
    most a few blocks per worker queued at a time, so memory does not grow with ``trials``); on an
    exception or Ctrl-C its workers stop at once, losing only the blocks in flight.

    Parameters
    ----------
    cells : sequence of AuditCell
        The audits, at least one.
    workers : int, optional
        Worker processes (capped at the CPUs and the blocks; more than
        ``dptutor._validate.MAX_WORKERS`` is refused).  Mechanisms must then be picklable.
    executor : concurrent.futures.Executor or None, optional
        An existing executor to use instead (then ``workers`` is ignored and the executor is left running).
    on_result : callable or None, optional
        ``on_result(i, result)`` is called as soon as cell ``i`` is complete (cells finish roughly in
        order), e.g. to save it.
    progress : bool, optional
        Show a tqdm bar over blocks.

    Returns
    -------
    list of AuditResult
        One result per cell, in the order of ``cells``.

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong kind or out of range (naming it), or a mechanism is not
        picklable with ``workers > 1``; ``ValueError`` naming a mechanism that returns the wrong
        shape, non-numeric values or NaN.
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
            results[i] = _result_from_guesses(guessed[i], c.trials, c.n, c.epsilon, seed_entropy(seed_seqs[i]), c.name)
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
        _run_cells(cell_list, tasks, add, workers if total_blocks > 1 else 1, executor)
    finally:
        bar.close()
    return results  # type: ignore[return-value]


def _run_cells(
    cell_list: list[AuditCell], tasks: Iterator[tuple[int, tuple]], add: Callable[[int, tuple[int, int]], None],
    workers: int, executor: concurrent.futures.Executor | None,
) -> None:
    """Run every block of ``tasks`` here, on ``executor``, or in a :class:`WorkerPool` of ``workers``."""
    if executor is None and workers == 1:
        for i, args in tasks:
            add(i, _count_block(*args))
        return
    if executor is not None:
        for i, counts in _run_bounded(executor, tasks, max_pending=64):
            add(i, counts)
        return
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


def _executor_counts(counts: object) -> tuple[int, int]:
    """A block's result from an executor, checked: two non-negative integers (an executor that did not run
    the block, returning None, made numpy's "Cannot cast ufunc 'add' output from dtype('O')", naming nothing)."""
    if (not isinstance(counts, tuple) or len(counts) != 2
            or not all(isinstance(c, (int, np.integer)) and not is_bool(c) and c >= 0 for c in counts)):
        raise TypeError(f"executor must return each block's result (two counts), got {shown(counts)[:80]}")
    return int(counts[0]), int(counts[1])


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
                yield tag, _executor_counts(fut.result())
    finally:
        for fut in pending:
            fut.cancel()


@renamed_parameters(seed="rng")
def estimate_loss(
    mechanism: Mechanism,
    n: int,
    epsilon: float,
    trials: int,
    *,
    rng: int | Sequence[int] | np.random.SeedSequence | np.random.Generator | None = None,
    progress: bool = False,
    workers: int = 1,
    executor: concurrent.futures.Executor | None = None,
) -> AuditResult:
    """Monte Carlo estimate of the attack's privacy loss (the paper's Section 4) for ``mechanism``.

    ``mechanism(x, epsilon, rng)`` runs ``trials`` times on ``D`` = zeros and ``trials`` times on
    ``D'`` = ones, both of dimension ``n``, in cache-sized chunks, so memory does not grow with
    ``trials``.  Trials are split into blocks of ``BLOCK_TRIALS``, block ``i`` seeded by the
    ``i``-th child of one ``SeedSequence``: the same seed gives the same counts whatever ``workers``
    is.  The mechanism receives read-only inputs that it cannot make writeable.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(x, epsilon, rng)`` returns an array of the shape of ``x`` (a batch of rows).
    n : int
        The dimension of the two datasets, 1 to ``MAX_N``.
    epsilon : float
        The claimed epsilon, positive.
    trials : int
        Trials per dataset, 1 to ``MAX_TRIALS``.
    rng : int, sequence of int, numpy.random.SeedSequence, numpy.random.Generator or None, optional
        The seed.  An int (or a recorded ``result.seed``) repeats a run exactly; a ``SeedSequence``
        or a ``Generator`` seeds it reproducibly too; ``None`` draws fresh entropy, recorded in
        ``result.seed``.  (Deprecated alias: ``seed``.)
    progress : bool, optional
        Show a tqdm bar over blocks.
    workers : int, optional
        Worker processes for the blocks (the mechanism must be picklable; the built-in ones are
        module-level functions); capped at the CPUs and the blocks, and more than
        ``dptutor._validate.MAX_WORKERS`` is refused.
    executor : concurrent.futures.Executor or None, optional
        An existing executor to use instead (then ``workers`` is ignored).

    Returns
    -------
    AuditResult
        The counts, the estimated loss and the recorded seed.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter; ``ValueError`` naming the mechanism if it returns the wrong
        shape, non-numeric values or NaN.

    Examples
    --------
    >>> from dptutor.mechanisms import MECHANISMS
    >>> result = estimate_loss(MECHANISMS["laplace"], 1, 1.0, 10_000, rng=2022)
    >>> bool(result.lower_bound() <= 1.0)
    True
    """
    seed = seed_entropy(check_seed_sequence(rng, "rng"))
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

