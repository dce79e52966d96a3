"""How :func:`dptutor.audit.pair.audit_pair` draws and counts its runs, block by block.

Each half's runs are made in blocks of ``BLOCK_TRIALS`` per dataset, block ``i`` seeded by the ``i``-th child of
the half's ``SeedSequence`` (``blocks``).  ``run_pair_blocks`` runs them in this process, in a process pool or on
any ``concurrent.futures.Executor``, at most ``in_flight`` at a time, and checks what a pool or an executor hands
back (``_checked_block``); ``Counts`` adds the blocks' integer counts per cell, which add up in any order, so the
result does not depend on how the blocks were run.  Choosing the statistic, the event and the bound is left to
``dptutor.audit.pair`` and ``dptutor.audit._pair_bounds``.
"""

from __future__ import annotations

import concurrent.futures
import pickle
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor.audit._pair_cells import PAIR_MAX_CATEGORIES, Layout, Layouts, discrete_order, pair_block
from dptutor.audit._sanity_runs import BLOCK_TRIALS

__all__ = ["Counts", "blocks", "run_pair_blocks"]


def blocks(half: int, parent: np.random.SeedSequence, total: int, start: int) -> Any:
    """Block ``i`` of a half: ``(half, min(BLOCK_TRIALS, rest), seed)``, seeded by ``parent.spawn``'s i-th child
    (made lazily, so that 10^12 runs need no list of 10^7 seeds)."""
    for i in range(start, -(-total // BLOCK_TRIALS)):
        child = np.random.SeedSequence(parent.entropy, spawn_key=parent.spawn_key + (i,), pool_size=parent.pool_size)
        yield half, min(BLOCK_TRIALS, total - i * BLOCK_TRIALS), child


class Counts:
    """The counts of both halves: ``(2, cells)`` arrays of histogram cells (real outputs), or a table
    ``value -> (selection x, selection x', estimation x, estimation x')`` (discrete outputs)."""

    def __init__(self, layout: Layout, probe: Any, name: str) -> None:
        self.real = layout.mode == "real"
        self.name = name
        self.totals: Any = [probe, np.zeros_like(probe)] if self.real else None
        self.table: dict[Any, NDArray[np.int64]] = {}
        if not self.real:
            self.add(0, probe)

    def add(self, half: int, block: Any) -> None:
        """Add one block's counts to ``half`` (0: selection, 1: estimation)."""
        if self.real:
            self.totals[half] += block
            return
        for d in (0, 1):
            for key, c in block[d].items():
                self._row(key)[2 * half + d] += c

    def _row(self, key: Any, prior: bool = False) -> NDArray[np.int64]:
        """The counts of the output value ``key``: a new row of zeros the first time, unless the table already holds
        ``PAIR_MAX_CATEGORIES`` values (an error naming the mechanism, or ``prior`` for a value it brought)."""
        row = self.table.get(key)
        if row is None:
            if len(self.table) >= PAIR_MAX_CATEGORIES:
                if prior:
                    raise ValueError(f"prior and the audit's outputs hold more than {PAIR_MAX_CATEGORIES} distinct values")
                raise ValueError(
                    f"mechanism {self.name!r} returned more than {PAIR_MAX_CATEGORIES} distinct outputs; "
                    "audit it through statistic=... (a function from outputs to reals) or statistic='learned'"
                )
            row = self.table[key] = np.zeros(4, dtype=np.int64)
        return row

    def tallies(self) -> dict[Any, tuple[int, int]] | None:
        """Each output value's counts under x and x_prime over both halves; None for real outputs."""
        return None if self.real else {k: (int(r[0] + r[2]), int(r[1] + r[3])) for k, r in self.table.items()}

    def add_prior(self, prior: dict[Any, tuple[int, int]] | None) -> int:
        """Add earlier runs' counts (checked) to the selection half's, for discrete outputs; the runs per dataset added."""
        if self.real or not prior:
            return 0
        for key, (a, b) in prior.items():
            row = self._row(key, prior=True)
            row[0] += a
            row[1] += b
        return sum(a for a, _ in prior.values())

    def ordered(self) -> tuple[list[Any], NDArray[np.int64], NDArray[np.int64]]:
        """``(keys, selection counts, estimation counts)``, the cells in the order of the candidate events."""
        if self.real:
            return [], self.totals[0], self.totals[1]
        return discrete_order(self.table)


def _checked_block(block: Any, size: int, layout: Layout) -> Any:
    """A block's counts from a pool or an executor, checked to be what ``pair_block`` returns for ``size`` runs
    of each dataset (an executor that did not run it, returning None, made a numpy casting error naming nothing)."""
    if layout.mode == "real":
        ok = (isinstance(block, np.ndarray) and block.dtype == np.int64 and block.shape == (2, layout.cells)
              and bool((block >= 0).all()) and bool((block.sum(axis=1) == size).all()))
    else:
        ok = (isinstance(block, (list, tuple)) and len(block) == 2 and all(isinstance(d, dict) for d in block)
              and all(isinstance(c, (int, np.integer)) and c >= 0 for d in block for c in d.values())
              and all(sum(d.values()) == size for d in block))
    if not ok:
        raise TypeError(f"executor must return each block's counts ({size} runs of each dataset), got {type(block).__name__}")
    return block


def run_pair_blocks(
    mechanism: Any, name: str, x: Any, x_prime: Any, layout: Layout | Layouts, tasks: Any, workers: int,
    executor: concurrent.futures.Executor | None, add: Any, statistic: Any, block: Any = pair_block, *, in_flight: int,
) -> None:
    """Run the blocks of the iterator ``tasks`` (half, size, seed) here, in a process pool or on ``executor``
    (``block``: ``pair_block``, or ``multi_block`` with the cells of several statistics), handing each block's
    counts to ``add(half, counts)``; at most ``in_flight`` blocks are submitted at a time (``PAIR_IN_FLIGHT``)."""
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
            add(half, block(mechanism, name, x, x_prime, size, child, layout))
        return
    pending: dict[concurrent.futures.Future, tuple[int, int]] = {}
    it = iter(tasks)
    try:
        while True:
            while len(pending) < in_flight:
                task = next(it, None)
                if task is None:
                    break
                half, size, child = task
                pending[pool.submit(block, mechanism, name, x, x_prime, size, child, layout)] = (half, size)
            if not pending:
                break
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                half, size = pending.pop(fut)
                add(half, _checked_block(fut.result(), size, layout))
    except BaseException:
        for fut in pending:
            fut.cancel()
        raise
    finally:
        if own_pool is not None:
            own_pool.shutdown(wait=True, cancel_futures=True)
