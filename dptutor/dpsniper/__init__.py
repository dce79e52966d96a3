"""DP-Sniper's benchmark: its 20 mechanisms with its exact settings, in :func:`dptutor.audit.audit_pair`'s interface.

Bichsel, Steffen, Bogunovic and Vechev (IEEE S&P 2021, {cite}`bichsel2021dpsniper`) evaluate DP-Sniper on
20 mechanisms at claimed epsilon = 0.1, each searched over StatDP's input patterns.  :func:`~dptutor.dpsniper.entries.benchmark`
returns one :class:`~dptutor.zoo.registry.ZooEntry` per mechanism with

- the mechanism at DP-Sniper's settings (the sparse vector technique at cut-off ``c = 1`` with threshold
  ``0.5`` for SVT1 and ``1`` for SVT2-6, SVT34Parallel and NumericalSVT at their default ``c = 2``,
  LaplaceParallel as 20 copies at epsilon 0.005, RAPPOR with 4 hashes into a 20-bit Bloom filter);
- the input pair on which DP-Sniper's published reference run found its largest bound;
- ``true_epsilon``: the exact epsilon of the mechanism *on that pair*, computed here (closed forms, exact
  rational arithmetic, or numerical integration of one-dimensional integrals with error below 1e-9),
  ``None`` where no computation is available (SVT3, SVT34Parallel, NumericalSVT);
- ``dpsniper``: the 90% lower confidence bound that DP-Sniper's published reference results report for
  it (``eps_lcb`` in ``eval_sp2021/reference-results/dd_search_reg_data.log`` of the authors' repository,
  logistic-regression run), a published value, not one measured here.

The mechanisms use floating-point noise like DP-Sniper's, so the private ones are private in real
arithmetic only.

The package: :mod:`dptutor.dpsniper.mechanisms` (the mechanisms not already in the zoo),
:mod:`dptutor.dpsniper.probabilities` (exact output probabilities by integration) and
:mod:`dptutor.dpsniper.entries` (:func:`~dptutor.dpsniper.entries.benchmark`, :data:`~dptutor.dpsniper.entries.PUBLISHED`,
:func:`~dptutor.dpsniper.entries.exact_output_laws`);
every public name is re-exported here.
"""

from __future__ import annotations

from dptutor.dpsniper.entries import BINNED_CELLS, BINNED_TAIL, PUBLISHED, benchmark, exact_output_laws  # noqa: F401
from dptutor.dpsniper.mechanisms import (
    bloom_bits,
    laplace_parallel,
    numerical_svt,
    one_time_rappor,
    prefix_sum,
    rappor,
    svt34_parallel,
    truncated_geometric,
    truncated_geometric_pmf,
)
from dptutor.dpsniper.probabilities import rnm_index_probabilities, svt_pattern_probabilities

__all__ = [
    "benchmark",
    "PUBLISHED",
    "truncated_geometric",
    "truncated_geometric_pmf",
    "laplace_parallel",
    "prefix_sum",
    "numerical_svt",
    "svt34_parallel",
    "rappor",
    "one_time_rappor",
    "bloom_bits",
    "rnm_index_probabilities",
    "svt_pattern_probabilities",
    "exact_output_laws",
]
