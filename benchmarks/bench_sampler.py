"""Benchmark: dptutor's fast Laplace sampler against numpy's ``rng.laplace``.

All timings are taken side by side in one run (best of several repeats, interleaved so that load from
other processes hits every contender alike) and reported as ratios.  Exits with status 1 if the
fast sampler is not at least ``--min-speedup`` (default 3) times faster than ``rng.laplace``.

    .venv/bin/python benchmarks/bench_sampler.py [--n 10000000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np

from dptutor.distributions import CHUNK, sample_laplace, standard_laplace_fill


def best_times(contenders: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` wall time of each contender; rounds are interleaved across contenders."""
    best = {name: float("inf") for name in contenders}
    for fn in contenders.values():  # warm-up (page faults, first-call overhead)
        fn()
    for _ in range(repeats):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="draws per call (default 1e7)")
    parser.add_argument("--repeats", type=int, default=7, help="repeats, best-of (default 7)")
    parser.add_argument("--min-speedup", type=float, default=3.0, help="required fast vs rng.laplace")
    args = parser.parse_args(argv)
    n, repeats = args.n, args.repeats
    rng = np.random.default_rng(20220522)

    # 1) whole-array samplers, n draws each: the user-facing API against numpy's own Laplace.
    big = np.empty(n)
    full = best_times(
        {
            "rng.laplace(size=n)": lambda: rng.laplace(size=n),
            "sample_laplace(n, method='fast')": lambda: sample_laplace(n, rng=rng, method="fast"),
            "sample_laplace(n, method='inverse_cdf')": lambda: sample_laplace(n, rng=rng, method="inverse_cdf"),
            "standard_laplace_fill(buf[n])": lambda: standard_laplace_fill(big, rng=rng),
            "rng.standard_exponential(out=buf[n])": lambda: rng.standard_exponential(out=big),
        },
        repeats,
    )
    # 2) the auditor's hot path: one cache-sized buffer refilled many times (n draws in total).
    buf = np.empty(CHUNK)
    calls = max(1, n // CHUNK)

    def loop(fn: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                fn()

        return run

    chunked = best_times(
        {
            "rng.laplace(size=chunk)": loop(lambda: rng.laplace(size=CHUNK)),
            "standard_laplace_fill(buf[chunk])": loop(lambda: standard_laplace_fill(buf, rng=rng)),
            "rng.standard_exponential(out=buf[chunk])": loop(lambda: rng.standard_exponential(out=buf)),
        },
        repeats,
    )

    print(f"n = {n:,} draws per timing, best of {repeats}; chunk = {CHUNK:,} elements")
    print("\nwhole arrays:")
    for name, t in full.items():
        print(f"  {name:<42s} {t * 1e3:9.1f} ms  {t / n * 1e9:6.2f} ns/draw")
    print(f"\nchunked ({calls} calls of {CHUNK:,}):")
    for name, t in chunked.items():
        print(f"  {name:<42s} {t * 1e3:9.1f} ms  {t / (calls * CHUNK) * 1e9:6.2f} ns/draw")

    speedup = full["rng.laplace(size=n)"] / full["sample_laplace(n, method='fast')"]
    fill_vs_laplace = chunked["rng.laplace(size=chunk)"] / chunked["standard_laplace_fill(buf[chunk])"]
    fill_vs_floor = chunked["standard_laplace_fill(buf[chunk])"] / chunked["rng.standard_exponential(out=buf[chunk])"]
    big_fill_vs_floor = full["standard_laplace_fill(buf[n])"] / full["rng.standard_exponential(out=buf[n])"]
    inv_vs_laplace = full["sample_laplace(n, method='inverse_cdf')"] / full["rng.laplace(size=n)"]
    print("\nratios (same run):")
    print(f"  rng.laplace / sample_laplace(fast)                     = {speedup:5.2f}x  (required >= {args.min_speedup})")
    print(f"  rng.laplace / standard_laplace_fill   (chunk)          = {fill_vs_laplace:5.2f}x")
    print(f"  standard_laplace_fill / standard_exponential (chunk)   = {fill_vs_floor:5.2f}x  (goal <= 1.3)")
    print(f"  standard_laplace_fill / standard_exponential (n)       = {big_fill_vs_floor:5.2f}x")
    print(f"  sample_laplace(inverse_cdf) / rng.laplace              = {inv_vs_laplace:5.2f}x")
    if speedup < args.min_speedup:
        print(f"FAIL: fast sampler only {speedup:.2f}x faster than rng.laplace", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
