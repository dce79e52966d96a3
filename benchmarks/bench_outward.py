"""What the outward-rounding and hostile-input fixes cost: the "now" columns of the section "Outward rounding
and hostile input, round 4" of benchmarks/README.md (the "before" columns were measured on the code before
those commits, and cannot be re-run from this one).

    .venv/bin/python benchmarks/bench_outward.py                 # every part (a few minutes)
    .venv/bin/python benchmarks/bench_outward.py --part pld      # one part: pld, tradeoff, reconstruct, one_run

Parts:

* ``pld``: the pessimistic PLD's relative slack over the exact Gaussian delta (sigma / sqrt(k), exact from
  ``dptutor.approximate_dp.gaussian_delta``) at grid 1e-4, at the epsilon where the exact delta is 1e-3, 1e-6,
  1e-10 and 1e-14; the time of each composition; and ``gaussian_composition_epsilon`` at small deltas beside
  the exact value and RDP.
* ``tradeoff``: the time per distinct alpha of ``gaussian_tradeoff`` (evaluated in mpmath, rounded down).
* ``reconstruct``: ``dptutor.attacks.reconstruct`` on random 0/1 query matrices with noisy answers, its time
  and the fraction of bits recovered.
* ``one_run``: ``audit_one_run(0.6 m, m, m, delta=1e-5)`` for m = 10^5 to 10^8, its time and bound.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import optimize

from dptutor.accounting import gaussian_composition_epsilon, pld_gaussian
from dptutor.approximate_dp import gaussian_delta, gaussian_epsilon, gaussian_tradeoff
from dptutor.attacks import reconstruct
from dptutor.audit import audit_one_run


def _exact_epsilon(sigma: float, delta: float) -> float:
    return optimize.brentq(lambda e: gaussian_delta(e, sigma) - delta, 0.0, 200.0, xtol=1e-12)


def part_pld() -> None:
    print("PLD slack (pessimistic delta - exact) / exact, grid 1e-4")
    for sigma, k in ((1.0, 1), (1.0, 10), (1.0, 100)):
        start = time.perf_counter()
        pld = pld_gaussian(sigma, grid=1e-4).compose(k) if k > 1 else pld_gaussian(sigma, grid=1e-4)
        took = time.perf_counter() - start
        s = sigma / math.sqrt(k)
        cells = []
        for target in (1e-3, 1e-6, 1e-10, 1e-14):
            eps = _exact_epsilon(s, target)
            exact = gaussian_delta(eps, s)
            cells.append(f"{(pld.delta(eps) - exact) / exact:.4g}")
        print(f"  sigma {sigma:g}, k {k:>3}: " + "  ".join(cells) + f"   (build {took:.2f} s, "
              f"infinity mass {pld.infinity_mass:.3g})")
    print("gaussian_composition_epsilon at small delta (sigma, k, delta): PLD, exact, RDP")
    for sigma, k, delta in ((1.0, 3, 3e-15), (1.0, 3, 1e-14), (1.0, 1, 1e-50), (1.0, 3, 1e-16)):
        try:
            got = f"{gaussian_composition_epsilon(sigma, k, delta):.6g}"
        except ValueError as exc:
            got = f"ValueError ({str(exc)[:60]}...)"
        exact = gaussian_epsilon(delta, sigma / math.sqrt(k))
        rdp = gaussian_composition_epsilon(sigma, k, delta, method="rdp")
        print(f"  {sigma:g}, {k}, {delta:g}: {got}, exact {exact:.6g}, RDP {rdp:.5g}")


def part_tradeoff() -> None:
    alphas = np.linspace(1e-4, 1 - 1e-4, 2000)
    start = time.perf_counter()
    gaussian_tradeoff(alphas, 1.0)
    took = time.perf_counter() - start
    print(f"gaussian_tradeoff: {took / alphas.size * 1e3:.3f} ms per distinct alpha ({alphas.size} alphas)")


def part_reconstruct() -> None:
    rng = np.random.default_rng(0)
    for rows, cols in ((4000, 1000), (2000, 2000), (20000, 2500), (5000, 5000)):
        bits = rng.integers(0, 2, cols)
        queries = rng.integers(0, 2, (rows, cols)).astype(float)
        answers = queries @ bits + rng.uniform(-0.5, 0.5, rows)
        start = time.perf_counter()
        got = reconstruct(queries, answers)
        took = time.perf_counter() - start
        print(f"reconstruct {rows} x {cols}: {took:.2f} s, bits recovered {np.mean(got == bits):.4f}")


def part_one_run() -> None:
    for m in (10**5, 10**6, 10**7, 10**8):
        start = time.perf_counter()
        bound = audit_one_run(6 * m // 10, m, m, delta=1e-5)
        print(f"audit_one_run(0.6 m, m, m, delta=1e-5), m = {m:.0e}: {time.perf_counter() - start:.2f} s, "
              f"bound {bound!r}")


PARTS = {"pld": part_pld, "tradeoff": part_tradeoff, "reconstruct": part_reconstruct, "one_run": part_one_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=sorted(PARTS), action="append", help="run only these parts")
    for name in parser.parse_args().part or list(PARTS):
        PARTS[name]()


if __name__ == "__main__":
    main()
