"""Timing helper shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_times(contenders: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` wall time of each contender; rounds are interleaved across contenders.

    Each contender runs once first (warm-up: page faults, imports, first-call overhead), so the
    ratios printed by a benchmark compare steady states measured side by side in one run.
    """
    best = {name: float("inf") for name in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(repeats):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best
