"""A zoo of correct and buggy mechanisms from the literature, in :func:`dptutor.audit.audit_pair`'s interface.

Every mechanism here is a function ``mechanism(data, size, rng, *, epsilon, ...)`` that returns
``size`` independent outputs for one dataset ``data``.  Each :class:`~dptutor.zoo.registry.ZooEntry` fixes the claimed
epsilon, the standard neighbouring inputs (mostly those on which DP-Sniper found its largest loss,
{cite}`bichsel2021dpsniper`), a statistic where the outputs are real vectors, and what is known about
the true privacy: exact where it can be derived, ``math.inf`` where none exists, ``None`` where only
bounds are known.  :data:`~dptutor.zoo.registry.ZOO` holds the entries at claimed epsilon = 0.1, the setting of StatDP
(Ding et al., 2018) and DP-Sniper (Bichsel et al., 2021), whose published lower bounds are recorded in
``dpsniper``: 90% lower confidence bounds, each the larger of two runs (a logistic-regression and a
neural-network classifier), so they hold with confidence at least 80% jointly, not 95%.

Neighbouring inputs follow the papers: a count or a histogram changes by 1 in one entry; for
report-noisy-max and the sparse vector technique every query answer may change by at most 1 (the
queries have sensitivity 1 and the neighbourhood is component-wise).

The sparse vector technique (SVT) variants are Algorithms 1-6 of Lyu, Su and Li (2017), with their
parameters: cut-off ``c = 2``, threshold ``tau = 1`` (the argument ``threshold``), ten queries,
``epsilon_1 = epsilon / 2`` (``/ 4`` for Algorithm 4).  Outputs are integer vectors, one entry per query: 1 for "above", 0 for "below",
-1 for a query not answered because the algorithm stopped after ``c`` answers "above".  Algorithm 3
releases numbers and runs at ``c = 1``, the cut-off of DP-Sniper's experiments (which used ``c = 1``
for every variant): its leak per answer is ``epsilon_2 / c`` and shrinks as ``c`` grows, while
Algorithm 4's ``((1 + 6c) / 4) epsilon`` grows with ``c``.  Each entry thus sits where its bug is largest.
Its inputs are ours, not DP-Sniper's ten answers: a rising staircase of 28 answers (-59, -54, ..., 76)
against the same staircase one higher, audited through :func:`~dptutor.zoo.sparse_vector.svt_log_likelihood_ratio`.

The package holds one module per family, and re-exports every public name here, so that
``from dptutor.zoo import svt`` and ``dptutor.zoo.ZOO`` keep working: :mod:`dptutor.zoo.counts`
(counts, randomized response, histograms), :mod:`dptutor.zoo.noisy_max`,
:mod:`dptutor.zoo.sparse_vector` (the SVT family), :mod:`dptutor.zoo.vectors` (the paper's vector
mechanisms and the statistics) and :mod:`dptutor.zoo.registry` (:class:`~dptutor.zoo.registry.ZooEntry`, :data:`~dptutor.zoo.registry.ZOO`).
"""

from __future__ import annotations

from dptutor.zoo.counts import (
    discrete_gaussian_count,
    exact_laplace_count,
    exact_noisy_histogram,
    gaussian_count,
    granular_laplace_vector,
    histogram_eps,
    laplace_count,
    noisy_histogram,
    randomized_response,
)
from dptutor.zoo.noisy_max import report_noisy_max, report_noisy_max_value
from dptutor.zoo.registry import PRIVACY, ZOO, ZooEntry
from dptutor.zoo.sparse_vector import SVT_ALGORITHMS, svt, svt_log_likelihood_ratio, svt_numerical_value, svt_pattern
from dptutor.zoo.vectors import adept_vector, clipped_sum, dptext_vector, first_coordinate, laplace_vector, minimum

__all__ = [
    "ZooEntry",
    "ZOO",
    "PRIVACY",
    "laplace_count",
    "gaussian_count",
    "exact_laplace_count",
    "discrete_gaussian_count",
    "exact_noisy_histogram",
    "granular_laplace_vector",
    "randomized_response",
    "noisy_histogram",
    "histogram_eps",
    "report_noisy_max",
    "report_noisy_max_value",
    "svt",
    "svt_numerical_value",
    "laplace_vector",
    "adept_vector",
    "dptext_vector",
    "first_coordinate",
    "clipped_sum",
    "minimum",
    "svt_pattern",
    "svt_log_likelihood_ratio",
    "SVT_ALGORITHMS",
]
