"""Benchmark: the exact discrete Laplace sampler against OpenDP and a pure-Python version; ``reachable``.

All timings are taken side by side in one run (best of several repeats, interleaved across
contenders), and only ratios from this run are printed:

* ``sample_discrete_laplace`` (vectorised in numpy) against OpenDP's integer Laplace mechanism
  (``make_laplace`` on a vector of ints, the same discrete Laplace law) and against
  ``sample_discrete_laplace_python`` (the same algorithm, one draw at a time), in samples per second.
  The vectorised version samples the same law by exact inversion: a float proposes the magnitude
  floor(t E) (E = -ln U) from 53 random bits of a uniform U, integer bounds of exp(-k / t) confirm it,
  and the rare lanes they do not confirm are settled in integer arithmetic (see ``dptutor.exact``);
  the Python version runs Algorithm 2 as written.
* ``dptutor.floating.reachable`` on 10**5 outputs of numpy's ``Generator.laplace``, in seconds.
* ``sample_discrete_gaussian`` (Canonne-Kamath-Steinke Algorithm 3, vectorised, with the same exact
  inversion for its proposal and a lazy comparison of random bits with integer bounds for its test) at sigma = 10 and
  sigma = 1000, against OpenDP's Gaussian mechanism on integers (``make_gaussian``: the same discrete
  Gaussian law, sampled exactly), against ``sample_discrete_gaussian_python`` (one draw at a time), and
  against numpy's ``standard_normal`` (floating point, not private) with the same number of draws, all
  in the same run.

Exit status 1 if a goal is missed: at least ``--min-opendp`` (10) times OpenDP's rate, at least
``--min-python`` (100) times the pure-Python rate, and ``reachable`` under 2 s for 10**5 outputs; for
the discrete Gaussian, at least ``--min-opendp`` times OpenDP's rate at each sigma, and a cost per
draw within ``--max-normal`` (5) times numpy's ``standard_normal``.

    .venv/bin/python benchmarks/bench_exact.py [--scale 10] [--n 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from timing import best_times

from dptutor.exact import (
    sample_discrete_gaussian,
    sample_discrete_gaussian_python,
    sample_discrete_laplace,
    sample_discrete_laplace_python,
)
from dptutor.floating import reachable
from dptutor.libraries import opendp_integer_gaussian, opendp_integer_laplace, opendp_version



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=10, help="discrete Laplace scale (default 10)")
    parser.add_argument("--n", type=int, default=1_000_000, help="vectorised draws per timing (default 1e6)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats, best-of (default 5)")
    parser.add_argument("--min-opendp", type=float, default=10.0)
    parser.add_argument("--min-python", type=float, default=100.0)
    parser.add_argument("--max-normal", type=float, default=5.0, help="discrete Gaussian cost / standard_normal cost")
    parser.add_argument("--sigmas", type=int, nargs="+", default=[10, 1000], help="discrete Gaussian sigmas")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(2020)
    n, scale = args.n, args.scale
    n_opendp, n_python = max(1, n // 10), max(1, n // 100)  # the slow ones get fewer draws, same rate

    times = best_times(
        {
            "numpy (vectorised)": lambda: sample_discrete_laplace(scale, n, rng),
            f"OpenDP {opendp_version()}": lambda: opendp_integer_laplace(float(scale), n_opendp),
            "pure Python": lambda: sample_discrete_laplace_python(scale, n_python, rng),
        },
        args.repeats,
    )
    draws = dict(zip(times, (n, n_opendp, n_python)))
    rate = {name: draws[name] / t for name, t in times.items()}
    print(f"discrete Laplace, scale {scale}: samples per second (best of {args.repeats})")
    for name, r in rate.items():
        print(f"  {name:22s} {r / 1e6:8.3f} M/s")
    ours, opendp_name = "numpy (vectorised)", next(k for k in rate if k.startswith("OpenDP"))
    vs_opendp = rate[ours] / rate[opendp_name]
    vs_python = rate[ours] / rate["pure Python"]
    print(f"  ratio vs OpenDP:      {vs_opendp:7.1f}x (goal >= {args.min_opendp:g}x)")
    print(f"  ratio vs pure Python: {vs_python:7.1f}x (goal >= {args.min_python:g}x)")

    y = np.random.default_rng(1).laplace(0.0, 1.0, 100_000)
    t_reach = best_times({"reachable": lambda: reachable(y, 1.0, 1.0, "numpy")}, max(1, args.repeats // 2))["reachable"]
    print(f"reachable on 10^5 outputs of Generator.laplace: {t_reach:.2f} s (goal < 2 s)")

    ok = vs_opendp >= args.min_opendp and vs_python >= args.min_python and t_reach < 2.0

    n_gauss_opendp, n_gauss_python = max(1, n // 100), max(1, n // 100)
    for sigma in args.sigmas:
        times = best_times(
            {
                "numpy (vectorised)": lambda: sample_discrete_gaussian(sigma, n, rng),
                f"OpenDP {opendp_version()}": lambda: opendp_integer_gaussian(float(sigma), n_gauss_opendp),
                "pure Python": lambda: sample_discrete_gaussian_python(sigma, n_gauss_python, rng),
                "standard_normal": lambda: rng.standard_normal(n),
            },
            args.repeats,
        )
        draws = dict(zip(times, (n, n_gauss_opendp, n_gauss_python, n)))
        rate = {name: draws[name] / t for name, t in times.items()}
        print(f"discrete Gaussian, sigma {sigma}: samples per second (best of {args.repeats})")
        for name, r in rate.items():
            print(f"  {name:22s} {r / 1e6:8.3f} M/s   ({1e9 / r:9.1f} ns per draw)")
        opendp_name = next(k for k in rate if k.startswith("OpenDP"))
        g_opendp = rate[ours] / rate[opendp_name]
        g_python = rate[ours] / rate["pure Python"]
        g_normal = rate["standard_normal"] / rate[ours]
        print(f"  ratio vs OpenDP:      {g_opendp:7.1f}x (goal >= {args.min_opendp:g}x)")
        print(f"  ratio vs pure Python: {g_python:7.1f}x")
        print(f"  cost vs standard_normal (not private): {g_normal:5.1f}x per draw (goal <= {args.max_normal:g}x)")
        ok = ok and g_opendp >= args.min_opendp and g_normal <= args.max_normal
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
