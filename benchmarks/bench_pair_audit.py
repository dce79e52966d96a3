"""The four goals of dptutor.audit.audit_pair, measured side by side in one run.

    .venv/bin/python benchmarks/bench_pair_audit.py            # everything (~4-6 minutes on 2 cores)
    .venv/bin/python benchmarks/bench_pair_audit.py --quick    # 10x fewer samples everywhere

1. Tight.     Laplace count (x = 0, x' = 1) at epsilon in {0.1, 1}, 10^7 samples per dataset: the 95% lower
              bound divided by epsilon.  Goal: >= 0.95 (DP-Sniper reports 0.098 at 0.1 with ~2*10^8).
2. Sound.     100 seeds per correct mechanism whose best event has loss exactly epsilon (randomized
              response; the Laplace count), and 100 seeds of a Laplace count that is 0.5-DP but claims 1:
              the fraction of runs with lower bound > claimed epsilon.  Goal: <= 5% at the boundary, 0
              clearly below.  (10^5 samples per run.)
3. Sensitive. Every buggy entry of dptutor.zoo whose true epsilon exceeds 1.5 times its claim (or is
              only bounded from below by published audits), audited at 10^6 samples with --seeds seeds
              (default 10): the smallest and mean bound and how many seeds flag it.  Goal: all, every seed.
4. Fast.      A 10^7-sample audit of the Laplace count against drawing its 2 * 10^7 Laplace variates
              with the same generator type (``rng.laplace(size=2**17)`` in blocks).  Best of 3,
              interleaved.  Goal: ratio <= 3.

5. Zoo.       (--only zoo) The zoo table of the chapter "Stronger audits" at full size: every entry at seed 7,
              10^6 samples per dataset for the sparse vector entries and 3 * 10^5 for the others.  The
              chapter runs it at 10^5 (its cells must stay under 20 s) and quotes these numbers.
6. SVT3.      (--only svt3) The chapter's Algorithm 3 exercise at full size: the zoo's choices (staircase,
              c = 1, likelihood ratio) and each one taken back, 10^6 samples per dataset, seed 5.

    .venv/bin/python benchmarks/bench_pair_audit.py --only zoo svt3   # the chapter's full-size numbers

Timings are noisy when other processes share the machine; only ratios measured in this run mean anything.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dptutor.audit import BLOCK_TRIALS, audit_pair  # noqa: E402
from dptutor.zoo import (ZOO, laplace_count, randomized_response, svt_log_likelihood_ratio,  # noqa: E402
                         svt_numerical_value, svt_pattern)


def tight(samples: int) -> bool:
    print(f"1. TIGHT: Laplace count, {samples:,} samples per dataset, 95% lower bound")
    ok = True
    for eps in (0.1, 1.0):
        r = audit_pair(functools.partial(laplace_count, epsilon=eps), 0.0, 1.0, epsilon=eps, trials=samples, rng=2022)
        ratio = r.lower_bound / eps
        ok &= ratio >= 0.95
        print(f"   epsilon={eps:<4g} bound={r.lower_bound:.5f}  bound/epsilon={ratio:.4f}  (goal >= 0.95)  event: {r.event}")
    return ok


def sound(samples: int, seeds: int = 100) -> bool:
    print(f"2. SOUND: {seeds} seeds, {samples:,} samples per dataset, 95% confidence")
    cases = [
        ("randomized_response eps=1 (boundary)", functools.partial(randomized_response, epsilon=1.0), 1, 0, 0.05),
        ("laplace_count eps=1 (boundary)", functools.partial(laplace_count, epsilon=1.0), 0.0, 1.0, 0.05),
        ("laplace_count true 0.5, claims 1", functools.partial(laplace_count, epsilon=0.5), 0.0, 1.0, 0.0),
    ]
    ok = True
    for label, mech, x, xp, goal in cases:
        flags = [audit_pair(mech, x, xp, epsilon=1.0, trials=samples, rng=s).is_violation() for s in range(seeds)]
        rate = sum(flags) / seeds
        ok &= rate <= goal
        print(f"   {label:<40s} false-violation rate {rate:.2f}  (goal <= {goal:.2f})")
    return ok


def sensitive(samples: int, seeds: int) -> bool:
    print(f"3. SENSITIVE: buggy zoo entries, {samples:,} samples per dataset, {seeds} seeds each")
    ok = True
    for name, entry in ZOO.items():
        if entry.private:
            continue
        known = entry.true_epsilon if entry.true_epsilon is not None else entry.dpsniper
        if known is None or known < 1.5 * entry.epsilon:
            continue
        t0 = time.perf_counter()
        bounds = np.array([entry.audit(samples, rng=s).lower_bound for s in range(1, seeds + 1)])
        flagged = int(np.sum(bounds > entry.epsilon))
        ok &= flagged == seeds
        true = "unknown (DP-Sniper >= %.3g)" % entry.dpsniper if entry.true_epsilon is None else f"{entry.true_epsilon:g}"
        print(f"   {name:<36s} claimed {entry.epsilon:g}, true {true:<26s} bound min {bounds.min():7.3f} "
              f"mean {bounds.mean():7.3f}  flagged {flagged}/{seeds} ({(time.perf_counter() - t0) / seeds:.1f} s each)")
    return ok


def fast(samples: int, repeats: int = 3) -> bool:
    print(f"4. FAST: {samples:,} samples per dataset, best of {repeats}")
    mech = functools.partial(laplace_count, epsilon=1.0)

    def draw() -> None:
        rng = np.random.Generator(np.random.PCG64(0))
        done = 0
        while done < 2 * samples:
            m = min(BLOCK_TRIALS, 2 * samples - done)
            rng.laplace(0.0, 1.0, m)
            done += m

    def audit() -> None:
        audit_pair(mech, 0.0, 1.0, epsilon=1.0, trials=samples, rng=1)

    audit()  # warm-up: imports, caches
    best = {"draw": math.inf, "audit": math.inf}
    for _ in range(repeats):
        for key, fn in (("draw", draw), ("audit", audit)):
            t0 = time.perf_counter()
            fn()
            best[key] = min(best[key], time.perf_counter() - t0)
    ratio = best["audit"] / best["draw"]
    print(f"   drawing the noise {best['draw']:.3f} s, audit_pair {best['audit']:.3f} s: ratio {ratio:.2f}  (goal <= 3)")
    return ratio <= 3


def zoo(scale: int) -> bool:
    print("5. ZOO: the chapter's zoo table at full size, seed 7")
    for name, entry in ZOO.items():
        samples = (10**6 if name.startswith("svt") else 300_000) // scale
        t0 = time.perf_counter()
        r = entry.audit(samples, rng=7)
        print(f"   {name:<36s} {samples:>9,} samples  bound {r.lower_bound:7.3f}  flagged {'yes' if r.is_violation() else 'no '}"
              f"  ({time.perf_counter() - t0:.1f} s)")
    return True


def svt3_choices(samples: int) -> bool:
    print(f"6. SVT3: the chapter's Algorithm 3 exercise, {samples:,} samples per dataset, seed 5")
    e3 = ZOO["svt3"]
    ten, ten_prime = (1.0,) * 10, (2.0,) * 5 + (0.0,) * 5
    cases = [("the zoo: staircase, c = 1, likelihood ratio", e3.x, e3.x_prime, 1, False),
             ("(a) ten answers, c = 1, likelihood ratio", ten, ten_prime, 1, False),
             ("(b) staircase, c = 1, pattern of answers", e3.x, e3.x_prime, 1, True),
             ("(c) staircase, c = 2, likelihood ratio", e3.x, e3.x_prime, 2, False)]
    for label, x, xp, c, pattern in cases:
        mech = functools.partial(svt_numerical_value, epsilon=0.1, c=c)
        stat = svt_pattern if pattern else functools.partial(
            svt_log_likelihood_ratio, x=x, x_prime=xp, epsilon=0.1, c=c)
        t0 = time.perf_counter()
        r = audit_pair(mech, x, xp, epsilon=0.1, trials=samples, rng=5, statistic=stat)
        print(f"   {label:<46s} bound {r.lower_bound:.3f}  (claimed 0.1; {time.perf_counter() - t0:.1f} s)")
    return True


SECTIONS = ("tight", "sound", "sensitive", "fast", "zoo", "svt3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10x fewer samples everywhere")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per buggy mechanism in the sensitivity goal")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, metavar="SECTION",
                        help=f"run only these sections ({', '.join(SECTIONS)}); default: the four goals")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    scale = 10 if args.quick else 1
    runs = {
        "tight": lambda: tight(10**7 // scale),
        "sound": lambda: sound(10**5 // scale),
        "sensitive": lambda: sensitive(10**6 // scale, args.seeds),
        "fast": lambda: fast(10**7 // scale),
        "zoo": lambda: zoo(scale),
        "svt3": lambda: svt3_choices(10**6 // scale),
    }
    results = {name: runs[name]() for name in (args.only or SECTIONS[:4])}
    print("SUMMARY: " + "  ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in results.items()))


if __name__ == "__main__":
    main()
