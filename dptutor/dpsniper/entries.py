"""DP-Sniper's benchmark entries, its published bounds and the exact output laws (see :mod:`dptutor.dpsniper`)."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_integer_value
from dptutor.dpsniper.mechanisms import (
    BLOOM_VALUES,
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
from dptutor.dpsniper.probabilities import (
    exact_answers,
    rnm_index_probabilities,
    svt5_epsilon,
    svt6_epsilon,
    svt_pattern_probabilities,
)
from dptutor.selection import max_log_ratio
from dptutor.zoo import (
    PRIVACY,
    ZooEntry,
    histogram_eps,
    laplace_count,
    noisy_histogram,
    report_noisy_max,
    report_noisy_max_value,
    svt,
    svt_numerical_value,
)

__all__ = ["PUBLISHED", "benchmark", "exact_output_laws"]

#: DP-Sniper's published 90% lower confidence bounds (its reference results, logistic-regression run,
#: ``eps_lcb``), by mechanism, at claimed epsilon = 0.1 and about 2.2e8 runs per dataset (Bichsel et al.,
#: IEEE S&P 2021).  Published values, copied from the authors' results, not measured here.
PUBLISHED: dict[str, float] = {
    "LaplaceMechanism": 0.0968, "TruncatedGeometric": 0.1156, "NoisyHist1": 0.0978, "NoisyHist2": 4.602,
    "ReportNoisyMax1": 0.0923, "ReportNoisyMax2": 0.0975, "ReportNoisyMax3": 0.2478, "ReportNoisyMax4": 0.3463,
    "SVT1": 0.0858, "SVT2": 0.0859, "SVT3": 0.1716, "SVT4": 0.1687, "SVT5": 1.761, "SVT6": 0.2720,
    "Rappor": 0.2930, "OneTimeRappor": 0.5978, "LaplaceParallel": 0.0350, "SVT34Parallel": 0.2610,
    "PrefixSum": 0.5040, "NumericalSVT": 0.0343,
}

#: P(a bit reports 1 | set in the Bloom filter) and P(1 | clear): RAPPOR with f = 0.75, p = 0.45, q = 0.55,
#: and one-time RAPPOR with f = 0.95.
_BIT_KEEP = {"Rappor": (0.5125, 0.4875), "OneTimeRappor": (0.525, 0.475)}


def _bit_epsilon(x: int, xp: int, keep1: float, keep0: float) -> float:
    """Epsilon of independent bits over Bloom filters: each bit set in one filter only costs
    ``ln(P(1 | set) / P(1 | clear))`` or that of 0, whichever is larger."""
    differ = set(bloom_bits(x)) ^ set(bloom_bits(xp))
    per_bit = max(math.log(keep1 / keep0), math.log((1 - keep0) / (1 - keep1)))
    return len(differ) * per_bit


@functools.lru_cache(maxsize=1)
def benchmark() -> dict[str, ZooEntry]:
    """DP-Sniper's 20 mechanisms at claimed epsilon = 0.1 with their pairs, exact epsilons and published bounds.

    The exact epsilons take about a second to integrate, so they are computed on first call and cached.

    Returns
    -------
    dict of str to dptutor.zoo.ZooEntry
        The 20 entries, keyed by DP-Sniper's names.

    Notes
    -----
    It raises no exception: the function takes no arguments.

    Examples
    --------
    >>> from dptutor.dpsniper import benchmark
    >>> len(benchmark())
    20
    """
    e = 0.1
    entry = functools.partial(ZooEntry, epsilon=e, source="bichsel2021dpsniper")
    out = _counting_entries(e, entry) + _svt_entries(e, entry) + _other_entries(e, entry)
    return {x.name: x for x in out}


def _counting_entries(e: float, entry: Any) -> list[ZooEntry]:
    """LaplaceMechanism, TruncatedGeometric, NoisyHist1-2 and ReportNoisyMax1-4 (``entry`` makes a ZooEntry)."""
    out: list[ZooEntry] = []
    one, two = (1.0,) * 5, (2.0,) * 5
    out.append(entry(name="LaplaceMechanism", mechanism=laplace_count, x=1.0, x_prime=2.0, private=True,
                     true_epsilon=1.0 * e, known="epsilon-DP: a count plus Lap(1/epsilon); the shift 1 costs epsilon",
                     dpsniper=PUBLISHED["LaplaceMechanism"],
                     why="floating-point Laplace noise (the attacks of the chapter on floating point apply)"))
    geo = [truncated_geometric_pmf(c, epsilon=e) for c in (2, 1)]
    out.append(entry(name="TruncatedGeometric", mechanism=truncated_geometric, x=2.0, x_prime=1.0, private=True,
                     true_epsilon=max_log_ratio([float(v) for v in geo[0]], [float(v) for v in geo[1]]), privacy=PRIVACY[0],
                     known="ln(1 + 2^-ceil(ln(2/epsilon)))-DP (Balcer and Vadhan 2018, Theorem 4.7): more than "
                           "the claimed epsilon; exact pmf in integer arithmetic",
                     dpsniper=PUBLISHED["TruncatedGeometric"]))
    hist_x, hist_xp = (0.0,) + one[1:], one
    out.append(entry(name="NoisyHist1", mechanism=noisy_histogram, x=hist_x, x_prime=hist_xp, private=True,
                     true_epsilon=1.0 * e, known="epsilon-DP: one bin changes by 1, noise Lap(1/epsilon)",
                     dpsniper=PUBLISHED["NoisyHist1"], why="floating-point Laplace noise"))
    out.append(entry(name="NoisyHist2", mechanism=histogram_eps, x=hist_x, x_prime=hist_xp, private=False,
                     true_epsilon=1.0 / e, known="noise Lap(epsilon) instead of Lap(1/epsilon): 1/epsilon",
                     dpsniper=PUBLISHED["NoisyHist2"]))
    rnm_x, rnm_xp = one, (0.0,) + two[1:]
    for i, noise in ((1, "laplace"), (2, "exponential")):
        p = rnm_index_probabilities(rnm_x, epsilon=e, noise=noise)
        pp = rnm_index_probabilities(rnm_xp, epsilon=e, noise=noise)
        out.append(entry(name=f"ReportNoisyMax{i}", mechanism=report_noisy_max, x=rnm_x, x_prime=rnm_xp, private=True,
                         true_epsilon=max_log_ratio(p, pp), options=(("noise", noise),),
                         known=f"epsilon-DP (the index only, {noise} noise); exact epsilon on the pair by integration",
                         dpsniper=PUBLISHED[f"ReportNoisyMax{i}"], why="floating-point noise"))
    out.append(entry(name="ReportNoisyMax3", mechanism=report_noisy_max_value, x=(0.0,) * 5, x_prime=one,
                     private=False, true_epsilon=5 * e / 2,
                     known="releases the noisy maximum: its density ratio tends to e^(k epsilon / 2) in the left tail",
                     dpsniper=PUBLISHED["ReportNoisyMax3"]))
    out.append(entry(name="ReportNoisyMax4", mechanism=report_noisy_max_value, x=one, x_prime=two, private=False,
                     true_epsilon=math.inf, options=(("noise", "exponential"),),
                     known="releases the noisy maximum of one-sided noise: outputs below 2 are impossible under x'",
                     dpsniper=PUBLISHED["ReportNoisyMax4"]))
    return out


def _svt_entries(e: float, entry: Any) -> list[ZooEntry]:
    """SVT1-6 (Lyu, Su and Li's Algorithms 1-6 at DP-Sniper's settings)."""
    out: list[ZooEntry] = []
    one, two = (1.0,) * 5, (2.0,) * 5
    low_high, high_low = (0.0,) * 5 + one, one + (0.0,) * 5
    flat, split = (1.0,) * 10, two + (0.0,) * 5
    svt_pairs = {1: (low_high, high_low, 0.5), 2: (low_high, high_low, 1.0), 4: (flat, split, 1.0)}
    for alg, (x, xp, t) in svt_pairs.items():
        p = svt_pattern_probabilities(x, epsilon=e, algorithm=alg, threshold=t)
        pp = svt_pattern_probabilities(xp, epsilon=e, algorithm=alg, threshold=t)
        out.append(entry(name=f"SVT{alg}", mechanism=svt, x=x, x_prime=xp, private=alg in (1, 2),
                         true_epsilon=max_log_ratio([p[k] for k in p], [pp[k] for k in p]),
                         options=(("algorithm", alg), ("c", 1), ("threshold", t)),
                         known=f"Lyu, Su and Li's Algorithm {alg} at c = 1; exact epsilon on the pair by integration",
                         dpsniper=PUBLISHED[f"SVT{alg}"], why="floating-point Laplace noise" if alg in (1, 2) else ""))
    out.append(entry(name="SVT3", mechanism=svt_numerical_value, x=flat, x_prime=split, private=False, true_epsilon=None,
                     options=(("c", 1), ("threshold", 1.0)), known="Lyu, Su and Li's Algorithm 3 at c = 1: releases "
                     "the noisy answer when above", dpsniper=PUBLISHED["SVT3"]))
    out.append(entry(name="SVT5", mechanism=svt, x=split, x_prime=flat, private=False,
                     true_epsilon=svt5_epsilon(np.array(split), np.array(flat), 1.0),
                     options=(("algorithm", 5), ("c", 1), ("threshold", 1.0)),
                     known="Algorithm 5: no noise on the queries; some outputs are impossible under one input",
                     dpsniper=PUBLISHED["SVT5"]))
    out.append(entry(name="SVT6", mechanism=svt, x=high_low, x_prime=low_high, private=False,
                     true_epsilon=svt6_epsilon(np.array(high_low), np.array(low_high), e, 1.0),
                     options=(("algorithm", 6), ("c", 1), ("threshold", 1.0)),
                     known="Algorithm 6: no cut-off; exact epsilon on the pair by integration over 36 count classes",
                     dpsniper=PUBLISHED["SVT6"]))
    return out


def _other_entries(e: float, entry: Any) -> list[ZooEntry]:
    """Rappor, OneTimeRappor, LaplaceParallel, SVT34Parallel, PrefixSum and NumericalSVT."""
    out: list[ZooEntry] = []
    flat, split = (1.0,) * 10, (2.0,) * 5 + (0.0,) * 5
    out.append(entry(name="Rappor", mechanism=rappor, x=1.0, x_prime=0.0, private=True,
                     true_epsilon=_bit_epsilon(1, 0, *_BIT_KEEP["Rappor"]), known="RAPPOR with f = 0.75, p = 0.45, q = 0.55: "
                     "each bit set for one value only reports 1 with probability 0.5125 against 0.4875",
                     dpsniper=PUBLISHED["Rappor"], options=(), why="floating-point uniforms in the randomized responses"))
    out.append(entry(name="OneTimeRappor", mechanism=one_time_rappor, x=1.0, x_prime=0.0, private=True,
                     true_epsilon=_bit_epsilon(1, 0, *_BIT_KEEP["OneTimeRappor"]), known="one-time RAPPOR with f = 0.95: each "
                     "differing bit reports 1 with probability 0.525 against 0.475", dpsniper=PUBLISHED["OneTimeRappor"],
                     why="floating-point uniforms in the randomized response"))
    out.append(entry(name="LaplaceParallel", mechanism=laplace_parallel, x=1.0, x_prime=0.0, private=True,
                     true_epsilon=20 * (e / 20), options=(("copies", 20),),
                     known="20 Laplace mechanisms at epsilon 0.005 on one count: 0.1 by composition, exactly",
                     dpsniper=PUBLISHED["LaplaceParallel"], why="floating-point Laplace noise"))
    out.append(entry(name="SVT34Parallel", mechanism=svt34_parallel, x=flat, x_prime=split, private=False,
                     true_epsilon=None, options=(("c", 2), ("threshold", 1.0)),
                     known="Algorithms 3 and 4 side by side at c = 2: neither is epsilon-DP", dpsniper=PUBLISHED["SVT34Parallel"]))
    out.append(entry(name="PrefixSum", mechanism=prefix_sum, x=flat, x_prime=(0.0,) * 10, private=False,
                     true_epsilon=10 * e, known="prefix sums of 10 noisy answers that all move by 1: the sums are an "
                     "invertible map of the answers, so 10 epsilon", dpsniper=PUBLISHED["PrefixSum"]))
    out.append(entry(name="NumericalSVT", mechanism=numerical_svt, x=(2.0,) * 10, x_prime=flat, private=True,
                     true_epsilon=None, options=(("c", 2), ("threshold", 1.0)),
                     known="epsilon-DP in real arithmetic (Wang et al. 2019)", dpsniper=PUBLISHED["NumericalSVT"],
                     why="floating-point Laplace noise; it releases noisy values"))
    return out


#: Cells of the binned laws of :func:`exact_output_laws` for real outputs (LaplaceMechanism, NoisyHist1,
#: NoisyHist2, ReportNoisyMax3): uniform between the answers' range widened by BINNED_TAIL noise scales on
#: each side, plus the two infinite end cells.
BINNED_CELLS: int = 200_000
BINNED_TAIL: float = 60.0


def _binned_laws(log_cdfs: list[Any], lo: float, hi: float) -> list[NDArray[np.float64]]:
    """Exact cell probabilities of real outputs whose log-CDFs are ``log_cdfs``: differences of the CDF
    below the median and of the survival function above it (no cancellation in either tail)."""
    edges = np.linspace(lo, hi, BINNED_CELLS - 1)
    laws = []
    for log_cdf in log_cdfs:
        lc = log_cdf(edges)
        cdf, sf = np.exp(lc), -np.expm1(lc)
        below = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
        above = -np.diff(np.concatenate([[1.0], sf, [0.0]]))
        upper = np.concatenate([[False], cdf > 0.5])  # cells whose left edge is past the median
        laws.append(np.where(upper, above, below))
    return laws


def _pair_vectors(name: str, x: object, x_prime: object) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a, b = exact_answers(x, "x"), exact_answers(x_prime, "x_prime")
    if a.shape != b.shape:
        raise ValueError(f"x and x_prime must have the same length for {name}, got {a.size} and {b.size}")
    return a, b


def exact_output_laws(
    name: str, x: Any = None, x_prime: Any = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """The output laws of the benchmark entry ``name`` on the pair ``x``, ``x_prime`` (default: the entry's
    own pair), as two probability vectors over the same outcomes, where they are computed here (else None).

    Exact: the truncated geometric's pmf, report-noisy-max's index probabilities, the sparse vector
    technique's patterns (SVT1, 2 and 4), and for RAPPOR's two entries a sufficient summary (outputs are
    independent bits, so the likelihood ratio depends only on how many of the bits set in one Bloom filter
    alone report that filter's value).  Binned: for the real outputs of LaplaceMechanism, NoisyHist1 and
    NoisyHist2 (the one changed bin, a sufficient summary; None when the pair changes several bins) and
    ReportNoisyMax3 (the maximum of the noisy answers, CDF ``prod_i F(t - q_i)``), the exact probabilities of
    BINNED_CELLS cells.
    A binned law is that of a coarser output, so the limits computed from it are those of audits that see
    the cell only; cells a few thousandths of a noise scale wide leave little out: ten times coarser ones
    lower ReportNoisyMax3's reach limit at 10^7 runs by about 1e-4 (tested: by less than 1e-3).

    Parameters
    ----------
    name : str
        A key of :func:`benchmark`.
    x, x_prime : float or array_like of float, optional
        The pair (both or neither; default: the entry's own pair).

    Returns
    -------
    tuple of two numpy.ndarray of float64, or None
        The laws on ``x`` and on ``x_prime`` over the same outcomes, or ``None`` where they are not computed here.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    from scipy import stats

    entries = benchmark()
    check_choice(name, "name", tuple(entries))
    entry = entries[name]
    if (x is None) != (x_prime is None):
        raise ValueError("x and x_prime must be given together (or neither, for the entry's own pair)")
    if x is None:
        x, x_prime = entry.x, entry.x_prime
    opts = dict(entry.options)
    eps = entry.epsilon
    laws: list[Any]
    if name == "TruncatedGeometric":
        pair = [check_integer_value(d, 0, 5, label) for d, label in ((x, "x"), (x_prime, "x_prime"))]
        laws = [[float(v) for v in truncated_geometric_pmf(d, epsilon=eps)] for d in pair]
    elif name in ("ReportNoisyMax1", "ReportNoisyMax2"):
        laws = [rnm_index_probabilities(d, epsilon=eps, noise=opts["noise"]) for d in _pair_vectors(name, x, x_prime)]
    elif name in _BIT_KEEP:
        keep1, keep0 = _BIT_KEEP[name]
        a_bits, b_bits = (set(bloom_bits(check_integer_value(d, -BLOOM_VALUES, BLOOM_VALUES, label)))
                          for d, label in ((x, "x"), (x_prime, "x_prime")))
        only_x, only_xp = len(a_bits - b_bits), len(b_bits - a_bits)
        a, b = np.arange(only_x + 1), np.arange(only_xp + 1)
        laws = [np.outer(stats.binom.pmf(a, only_x, keep1), stats.binom.pmf(b, only_xp, 1 - keep0)).ravel(),
                np.outer(stats.binom.pmf(a, only_x, keep0), stats.binom.pmf(b, only_xp, 1 - keep1)).ravel()]
    elif name in ("SVT1", "SVT2", "SVT4"):
        patterns = [svt_pattern_probabilities(d, epsilon=eps, algorithm=opts["algorithm"], threshold=opts["threshold"])
                    for d in _pair_vectors(name, x, x_prime)]
        laws = [[law[k] for k in patterns[0]] for law in patterns]
    elif name in ("LaplaceMechanism", "NoisyHist1", "NoisyHist2", "ReportNoisyMax3"):
        if name == "LaplaceMechanism":
            a, b = (np.atleast_1d(check_float_array(d, label, finite=True, ndim=0))
                    for d, label in ((x, "x"), (x_prime, "x_prime")))
            scale = 1.0 / eps
        elif name in ("NoisyHist1", "NoisyHist2"):
            a, b = _pair_vectors(name, x, x_prime)
            changed = np.flatnonzero(a != b)
            if changed.size != 1:
                return None  # several bins change: the likelihood ratio is a sum, not one coordinate's
            # NoisyHist2's bug: noise Lap(epsilon) where NoisyHist1 has Lap(1/epsilon)
            a, b, scale = a[changed], b[changed], (1.0 / eps if name == "NoisyHist1" else eps)
        else:
            a, b = _pair_vectors(name, x, x_prime)
            scale = 2.0 / eps
        lo = min(a.min(), b.min()) - BINNED_TAIL * scale
        hi = max(a.max(), b.max()) + BINNED_TAIL * scale
        laws = _binned_laws([lambda t, q=q: stats.laplace.logcdf(t[:, None] - q, scale=scale).sum(axis=1)
                             for q in (a, b)], lo, hi)
    else:
        return None
    p, q = (np.asarray(law, dtype=np.float64) for law in laws)
    return p, q
