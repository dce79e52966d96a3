"""dptutor.accounting against Google's dp-accounting, side by side in one run (the optional extra).

    .venv/bin/python -m pip install --no-deps dp-accounting==0.6.0 absl-py==2.5.1 dm-tree==0.1.10
    .venv/bin/python benchmarks/bench_accounting.py

For DP-SGD-like settings (noise multiplier sigma, Poisson sampling probability q, steps k, delta = 1e-5)
prints epsilon from:

* dptutor's RDP accountant (:func:`dptutor.accounting.rdp_subsampled_gaussian` at the integer orders
  :data:`dptutor.accounting.ORDERS`, improved conversion) and dp-accounting's ``RdpAccountant`` at the
  same orders (the same formula: they should agree to rounding), with their relative difference;
* dp-accounting's ``RdpAccountant`` at its default orders (fractional ones too);
* dptutor's PLD, pessimistic and optimistic at grid h = 1e-4 (an interval of width k h that contains the
  exact epsilon), and dp-accounting's ``PLDAccountant`` at the same discretisation interval;
* the time of each.

The book's chapter "Composition and accounting" quotes this output (labelled as such): the book
itself never imports dp-accounting.  tests/library/test_accounting.py asserts the agreement.
"""

from __future__ import annotations

import time

import numpy as np

from dptutor.accounting import ORDERS, gaussian_composition_epsilon, rdp_subsampled_gaussian, rdp_to_dp

CASES = [(1.0, 0.01, 100), (1.0, 0.01, 1000), (0.8, 0.05, 200), (2.0, 0.1, 500)]
DELTA = 1e-5
GRID = 1e-4


def main() -> None:
    import dp_accounting
    from dp_accounting import pld, rdp

    print(f"dp-accounting {getattr(dp_accounting, '__version__', '?')}; delta = {DELTA:g}; PLD grid {GRID:g}")
    header = ("sigma", "q", "k", "rdp ours", "rdp theirs", "rel diff", "rdp theirs(default)", "pld lo", "pld hi",
              "pld theirs", "t ours pld", "t theirs pld")
    print(" | ".join(header))
    for sigma, q, k in CASES:
        event = dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), k)
        ours_rdp = rdp_to_dp(ORDERS, np.array([rdp_subsampled_gaussian(a, sigma, q) for a in ORDERS]) * k, DELTA)[0]
        acc = rdp.RdpAccountant(orders=list(ORDERS))
        acc.compose(event)
        theirs_rdp = float(acc.get_epsilon(DELTA))
        acc_default = rdp.RdpAccountant()
        acc_default.compose(event)
        t0 = time.perf_counter()
        hi = gaussian_composition_epsilon(sigma, k, DELTA, sampling_probability=q, grid=GRID)
        lo = gaussian_composition_epsilon(sigma, k, DELTA, sampling_probability=q, grid=GRID, pessimistic=False)
        t_ours = (time.perf_counter() - t0) / 2
        t0 = time.perf_counter()
        pacc = pld.PLDAccountant(value_discretization_interval=GRID)
        pacc.compose(event)
        theirs_pld = float(pacc.get_epsilon(DELTA))
        t_theirs = time.perf_counter() - t0
        print(f"{sigma:g} | {q:g} | {k} | {ours_rdp!r} | {theirs_rdp!r} | {abs(ours_rdp / theirs_rdp - 1):.1e} | "
              f"{acc_default.get_epsilon(DELTA):.6f} | {lo:.6f} | {hi:.6f} | {theirs_pld!r} | {t_ours:.2f} s | "
              f"{t_theirs:.2f} s")


if __name__ == "__main__":
    main()
