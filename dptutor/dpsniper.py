"""DP-Sniper's benchmark: its 20 mechanisms with its exact settings, in :func:`dptutor.audit.audit_pair`'s interface.

Bichsel, Steffen, Bogunovic and Vechev (IEEE S&P 2021, {cite}`bichsel2021dpsniper`) evaluate DP-Sniper on
20 mechanisms at claimed epsilon = 0.1, each searched over StatDP's input patterns.  :func:`benchmark`
returns one :class:`~dptutor.zoo.ZooEntry` per mechanism with

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
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_int, check_real, check_rng
from dptutor.selection import max_log_ratio
from dptutor.zoo import (
    PRIVACY,
    ZooEntry,
    laplace_count,
    noisy_histogram,
    histogram_eps,
    report_noisy_max,
    report_noisy_max_value,
    svt,
    svt_numerical_value,
)

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

_MIN_EPSILON = 1e-12


def _common(size: object, rng: object, epsilon: object) -> tuple[int, np.random.Generator, float]:
    return (check_int(size, "size", minimum=0, maximum=1 << 28), check_rng(rng),
            check_real(epsilon, "epsilon", low=_MIN_EPSILON))


def _vector(data: object) -> NDArray[np.float64]:
    return check_float_array(data, "data", finite=True, ndim=1, min_size=1)


def _integer(data: object, low: int, high: int, name: str = "data") -> int:
    value = check_real(data, name)
    if value != round(value) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {data!r}")
    return int(value)


#: The largest epsilon the exact-probability functions integrate at (beyond it the noise is a spike
#: narrower than the quadrature can resolve), and the largest query answer in absolute value.
_MAX_EXACT_EPSILON = 50.0
_MAX_EXACT_ANSWER = 1e6


def _answers(data: object, name: str = "data") -> NDArray[np.float64]:
    """Query answers that the exact-probability functions accept: finite, at most _MAX_EXACT_ANSWER in size."""
    q = check_float_array(data, name, finite=True, ndim=1, min_size=1)
    if np.abs(q).max() > _MAX_EXACT_ANSWER:
        raise ValueError(f"{name} must hold answers of at most {_MAX_EXACT_ANSWER:g} in absolute value")
    return q


def _exact_inputs(data: object, epsilon: object) -> tuple[NDArray[np.float64], float]:
    return _answers(data), check_real(epsilon, "epsilon", low=_MIN_EPSILON, high=_MAX_EXACT_EPSILON)


# ---------------------------------------------------------------------------------------------
# mechanisms not already in the zoo
# ---------------------------------------------------------------------------------------------


def _geometric_parameters(epsilon: float, n: int) -> tuple[int, int]:
    """Balcer and Vadhan's (2018) ``k = ceil(ln(2 / epsilon))`` and ``d = (2^(k+1) + 1)(2^k + 1)^(n-1)``."""
    if not epsilon < 2.0:
        raise ValueError(f"epsilon must be below 2 for the truncated geometric (k = ceil(ln(2/epsilon)) >= 1), got {epsilon!r}")
    k = math.ceil(math.log(2.0 / epsilon))
    if k > 60 or n * k > 4000:
        raise ValueError(f"epsilon = {epsilon!r} and n = {n} make the truncated geometric's integers too large")
    return k, (2 ** (k + 1) + 1) * (2**k + 1) ** (n - 1)


def _geometric_cdf(count: int, k: int, d: int, n: int) -> list[int]:
    """``F(z)`` for z = 0..n (Balcer and Vadhan's Algorithm 4.8, step 2), exact integers; ``F(n) = d``."""
    f = []
    for z in range(n + 1):
        if z == n:
            f.append(d)
        elif z < count:
            f.append(2 ** (k * (count - z)) * (2**k + 1) ** (n - (count - z)))
        else:
            f.append(d - 2 ** (k * (z - count + 1)) * (2**k + 1) ** (n - 1 - (z - count)))
    return f


def truncated_geometric_pmf(data: int, *, epsilon: float, n: int = 5) -> list[Fraction]:
    """The exact output distribution of :func:`truncated_geometric` on the count ``data``: ``P(z)`` for
    z = 0..n as fractions."""
    eps = check_real(epsilon, "epsilon", low=_MIN_EPSILON)
    n = check_int(n, "n", minimum=1, maximum=1000)
    count = _integer(data, 0, n)
    k, d = _geometric_parameters(eps, n)
    f = _geometric_cdf(count, k, d, n)
    return [Fraction(f[z] - (f[z - 1] if z else 0), d) for z in range(n + 1)]


def truncated_geometric(
    data: int, size: int, rng: np.random.Generator, *, epsilon: float, n: int = 5
) -> NDArray[np.int64]:
    """Balcer and Vadhan's (2018) GeoSample: a count in [0, n] released on [0, n] with exact integer
    arithmetic; ``ln(1 + 2^-ceil(ln(2/epsilon)))``-DP as implemented (DP-Sniper's TruncatedGeometric)."""
    size, rng, eps = _common(size, rng, epsilon)
    n = check_int(n, "n", minimum=1, maximum=1000)
    count = _integer(data, 0, n)
    k, d = _geometric_parameters(eps, n)
    if d >= 2**62:
        raise ValueError(f"epsilon = {eps!r} and n = {n} make d = {d} too large for int64 sampling")
    f = np.array(_geometric_cdf(count, k, d, n), dtype=np.int64)
    u = rng.integers(1, d + 1, size=size, dtype=np.int64)
    return np.searchsorted(f, u, side="left").astype(np.int64)  # the smallest z with F(z) >= u


def laplace_parallel(
    data: float, size: int, rng: np.random.Generator, *, epsilon: float, copies: int = 20
) -> NDArray[np.float64]:
    """``copies`` independent Laplace mechanisms on one count, each at ``epsilon / copies``: epsilon-DP by
    composition (DP-Sniper's LaplaceParallel: 20 copies at 0.005 each)."""
    size, rng, eps = _common(size, rng, epsilon)
    copies = check_int(copies, "copies", minimum=1, maximum=1 << 12)
    return check_real(data, "data") + rng.laplace(0.0, copies / eps, (size, copies))


def prefix_sum(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """The prefix sums of the answers, each answer plus ``Lap(1/epsilon)`` (Wang et al., PLDI 2019): with
    sensitivity-1 answers that may all change, ``k epsilon``-DP for ``k`` answers (DP-Sniper's PrefixSum)."""
    size, rng, eps = _common(size, rng, epsilon)
    q = _vector(data)
    return np.cumsum(q + rng.laplace(0.0, 1.0 / eps, (size, q.size)), axis=1)


def numerical_svt(
    data: Any, size: int, rng: np.random.Generator, *, epsilon: float, c: int = 2, threshold: float = 1.0
) -> NDArray[np.float64]:
    """Numerical SVT (Wang et al., PLDI 2019): compare ``q_i + Lap(6c/eps)`` with ``threshold + Lap(3/eps)``;
    when above, release ``q_i + Lap(3c/eps)`` (fresh noise), else 0; ``-inf`` for a query not answered
    after ``c`` answers above.  epsilon-DP in real arithmetic."""
    size, rng, eps = _common(size, rng, epsilon)
    c = check_int(c, "c", minimum=1, maximum=1 << 20)
    t = check_real(threshold, "threshold")
    q = _vector(data)
    rho = rng.laplace(0.0, 3.0 / eps, (size, 1))
    above = q + rng.laplace(0.0, 6.0 * c / eps, (size, q.size)) >= t + rho
    released = q + rng.laplace(0.0, 3.0 * c / eps, (size, q.size))
    before = np.cumsum(above, axis=1) - above
    out = np.where(above, released, 0.0)
    out[before >= c] = -np.inf
    return out


def svt34_parallel(
    data: Any, size: int, rng: np.random.Generator, *, epsilon: float, c: int = 2, threshold: float = 1.0
) -> NDArray[np.float64]:
    """Lyu, Su and Li's Algorithms 3 and 4 run side by side on the same answers, their outputs concatenated
    (DP-Sniper's SVT34Parallel): the values of Algorithm 3, then Algorithm 4's 1 / 0 / -1 as reals."""
    size, rng, eps = _common(size, rng, epsilon)
    three = svt_numerical_value(data, size, rng, epsilon=eps, c=c, threshold=threshold)
    four = svt(data, size, rng, epsilon=eps, algorithm=4, c=c, threshold=threshold)
    return np.concatenate([three, four.astype(np.float64)], axis=1)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF


def _murmur3_32(data: bytes, seed: int) -> int:
    """MurmurHash3 (x86, 32-bit) of ``data``, as a signed 32-bit integer (what DP-Sniper's Bloom filter uses)."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed & mask
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = (int.from_bytes(data[i:i + 4], "little") * c1) & mask
        h ^= (_rotl(k, 15) * c2) & mask
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & mask
    if len(data) % 4:
        k = (int.from_bytes(data[whole:], "little") * c1) & mask
        h ^= (_rotl(k, 15) * c2) & mask
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


#: The largest integer, in absolute value, that RAPPOR's entries and their Bloom filters take.
_BLOOM_VALUES = 2**62


def bloom_bits(value: int, *, hashes: int = 4, bits: int = 20) -> tuple[int, ...]:
    """The Bloom-filter positions set for the integer ``value``: MurmurHash3 of its decimal string with
    seeds 0..hashes-1, modulo ``bits`` (RAPPOR's step 1 as DP-Sniper implements it)."""
    value = _integer(value, -_BLOOM_VALUES, _BLOOM_VALUES, "value")
    hashes = check_int(hashes, "hashes", minimum=1, maximum=64)
    bits = check_int(bits, "bits", minimum=1, maximum=1 << 12)
    return tuple(sorted({_murmur3_32(str(value).encode(), i) % bits for i in range(hashes)}))


def _permanent(filt: NDArray[np.bool_], rng: np.random.Generator, f: float) -> NDArray[np.bool_]:
    """RAPPOR's permanent randomized response: each bit set with prob f/2, cleared with f/2, else kept."""
    u = rng.random(filt.shape)
    return np.where(u < 0.5 * f, True, np.where(u < f, False, filt))


def one_time_rappor(
    data: int, size: int, rng: np.random.Generator, *, f: float = 0.95, hashes: int = 4, bits: int = 20
) -> NDArray[np.int8]:
    """RAPPOR's steps 1-2 (Erlingsson et al., CCS 2014): Bloom filter, then permanent randomized response
    with ``f``.  Each differing bit costs ``ln((1 - f/2) / (f/2))`` (DP-Sniper's OneTimeRappor)."""
    size, rng = check_int(size, "size", minimum=0, maximum=1 << 28), check_rng(rng)
    f = check_real(f, "f", low=0.0, high=1.0, low_open=True)
    positions = list(bloom_bits(_integer(data, -_BLOOM_VALUES, _BLOOM_VALUES), hashes=hashes, bits=bits))
    filt = np.zeros((size, int(bits)), dtype=bool)
    filt[:, positions] = True
    return _permanent(filt, rng, f).astype(np.int8)


def rappor(
    data: int, size: int, rng: np.random.Generator, *, f: float = 0.75, p: float = 0.45, q: float = 0.55,
    hashes: int = 4, bits: int = 20,
) -> NDArray[np.int8]:
    """RAPPOR's steps 1-3: :func:`one_time_rappor` with ``f``, then instantaneous randomized response
    (report 1 with probability ``q`` for a set bit, ``p`` for a clear one) (DP-Sniper's Rappor)."""
    size, rng = check_int(size, "size", minimum=0, maximum=1 << 28), check_rng(rng)
    f = check_real(f, "f", low=0.0, high=1.0, low_open=True)
    p = check_real(p, "p", low=0.0, high=1.0)
    q = check_real(q, "q", low=0.0, high=1.0)
    positions = list(bloom_bits(_integer(data, -_BLOOM_VALUES, _BLOOM_VALUES), hashes=hashes, bits=bits))
    filt = np.zeros((size, int(bits)), dtype=bool)
    filt[:, positions] = True
    perm = _permanent(filt, rng, f)
    return (rng.random(perm.shape) < np.where(perm, q, p)).astype(np.int8)


# ---------------------------------------------------------------------------------------------
# exact output probabilities on a pair (numerical integration in one dimension)
# ---------------------------------------------------------------------------------------------


def _laplace_cdf(z: Any, b: float) -> Any:
    z = np.asarray(z, dtype=np.float64)
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0) / b), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0) / b))


def _lcdf(z: float, b: float) -> float:
    """The Laplace(0, b) CDF at one point (math, not numpy: the integrands call it millions of times)."""
    return 0.5 * math.exp(z / b) if z < 0 else 1.0 - 0.5 * math.exp(-z / b)


def _exp_cdf(z: Any, b: float) -> Any:
    z = np.asarray(z, dtype=np.float64)
    return np.where(z > 0, -np.expm1(-np.maximum(z, 0.0) / b), 0.0)


def _integrate(fn: Any, kinks: list[float], scale: float) -> float:
    """``int fn(r) dr`` over the real line with :func:`scipy.integrate.quad`, split at ``kinks``."""
    from scipy import integrate

    pts = sorted(set(kinks))
    edges = [pts[0] - 60.0 * scale, *pts, pts[-1] + 60.0 * scale]
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            total += integrate.quad(fn, a, b, epsabs=0.0, epsrel=1e-12, limit=200)[0]
    return total


def rnm_index_probabilities(data: Any, *, epsilon: float, noise: str = "laplace") -> NDArray[np.float64]:
    """``P(index i is reported)`` for :func:`dptutor.zoo.report_noisy_max` on the answers ``data``:
    ``int f(t - q_i) prod_{j != i} F(t - q_j) dt``, integrated numerically (noise scale ``2/epsilon``)."""
    q, eps = _exact_inputs(data, epsilon)
    noise = check_choice(noise, "noise", ("laplace", "exponential"))
    b = 2.0 / eps
    cdf = _laplace_cdf if noise == "laplace" else _exp_cdf

    def pdf(z: float) -> float:
        if noise == "laplace":
            return math.exp(-abs(z) / b) / (2 * b)
        return math.exp(-z / b) / b if z >= 0 else 0.0

    out = []
    for i in range(q.size):
        others = np.delete(q, i)

        def fn(t: float, i: int = i, others: NDArray[np.float64] = others) -> float:
            return pdf(t - q[i]) * float(np.prod(cdf(t - others, b)))

        out.append(_integrate(fn, [float(v) for v in q], b))
    return np.array(out)


def svt_pattern_probabilities(
    data: Any, *, epsilon: float, algorithm: int, threshold: float = 1.0
) -> dict[tuple[int, ...], float]:
    """Exact probabilities of every output of :func:`dptutor.zoo.svt` with cut-off ``c = 1`` (Algorithms 1,
    2 and 4; Algorithm 2 equals 1 at ``c = 1``) on the answers ``data``: for the first answer "above" at
    query ``k``, ``int f_rho(r) prod_{i<k} F(t + r - q_i) (1 - F(t + r - q_k)) dr``, integrated numerically."""
    q, eps = _exact_inputs(data, epsilon)
    algorithm = check_int(algorithm, "algorithm", minimum=1, maximum=6)
    if algorithm not in (1, 2, 4):
        raise ValueError(f"algorithm must be 1, 2 or 4 (the cut-off variants at c = 1), got {algorithm}")
    t = check_real(threshold, "threshold", low=-_MAX_EXACT_ANSWER, high=_MAX_EXACT_ANSWER)
    eps1 = eps / 4.0 if algorithm == 4 else eps / 2.0
    b_rho = 1.0 / eps1
    b_nu = 1.0 / (eps - eps1) if algorithm == 4 else 2.0 / (eps - eps1)
    kinks = [0.0, *[float(v) - t for v in q]]
    ql = q.tolist()
    out: dict[tuple[int, ...], float] = {}
    for k in range(q.size + 1):
        def fn(r: float, k: int = k) -> float:
            value = math.exp(-abs(r) / b_rho) / (2 * b_rho)
            for v in ql[:k]:
                value *= _lcdf(t + r - v, b_nu)
            if k < len(ql):
                value *= 1.0 - _lcdf(t + r - ql[k], b_nu)
            return value

        pattern = tuple([0] * k + ([1] + [-1] * (q.size - k - 1) if k < q.size else []))
        out[pattern] = _integrate(fn, kinks, max(b_rho, b_nu))
    return out


def _svt6_epsilon(x: NDArray[np.float64], xp: NDArray[np.float64], epsilon: float, threshold: float) -> float:
    """Exact epsilon of Algorithm 6 (no cut-off) on a pair: patterns with the same number of answers above in
    each group of queries with equal (q_i, q'_i) have equal probabilities, so only those counts are enumerated."""
    eps1 = epsilon / 2.0
    b_rho, b_nu = 1.0 / eps1, 1.0 / (epsilon - eps1)
    groups: dict[tuple[float, float], int] = {}
    for a, b in zip(x.tolist(), xp.tolist()):
        groups[(a, b)] = groups.get((a, b), 0) + 1
    keys = list(groups)
    kinks = [0.0, *[v - threshold for v in np.concatenate([x, xp]).tolist()]]
    worst = 0.0
    for counts in np.ndindex(*[groups[k] + 1 for k in keys]):
        logs = []
        for side in (0, 1):
            def fn(r: float, counts: tuple[int, ...] = counts, side: int = side) -> float:
                value = math.exp(-abs(r) / b_rho) / (2 * b_rho)
                for key, m in zip(keys, counts):
                    above = 1.0 - _lcdf(threshold + r - key[side], b_nu)
                    value *= above**m * (1.0 - above) ** (groups[key] - m)
                return value

            logs.append(math.log(_integrate(fn, kinks, b_rho + b_nu)))
        worst = max(worst, abs(logs[0] - logs[1]))
    return worst


def _svt5_epsilon(x: NDArray[np.float64], xp: NDArray[np.float64], threshold: float) -> float | None:
    """Algorithm 5 answers ``q_i >= threshold + rho`` without query noise: the output is a step function of
    rho, so each input has a finite set of possible outputs, one per interval of rho.  Infinite when some
    output is possible under one input only; ``None`` (not computed here) otherwise."""
    edges = sorted({*(x - threshold).tolist(), *(xp - threshold).tolist()})
    cells = [edges[0] - 1.0] + [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])] + edges + [edges[-1] + 1.0]
    seen: list[set[tuple[int, ...]]] = [set(), set()]
    for r in cells:
        for side, q in enumerate((x, xp)):
            seen[side].add(tuple((q >= threshold + r).astype(int).tolist()))
    return math.inf if seen[0] != seen[1] else None


# ---------------------------------------------------------------------------------------------
# the benchmark
# ---------------------------------------------------------------------------------------------


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
    """
    e = 0.1
    src = "bichsel2021dpsniper"
    out: list[ZooEntry] = []
    one, two = (1.0,) * 5, (2.0,) * 5
    entry = functools.partial(ZooEntry, epsilon=e, source=src)

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
                     true_epsilon=_svt5_epsilon(np.array(split), np.array(flat), 1.0),
                     options=(("algorithm", 5), ("c", 1), ("threshold", 1.0)),
                     known="Algorithm 5: no noise on the queries; some outputs are impossible under one input",
                     dpsniper=PUBLISHED["SVT5"]))
    out.append(entry(name="SVT6", mechanism=svt, x=high_low, x_prime=low_high, private=False,
                     true_epsilon=_svt6_epsilon(np.array(high_low), np.array(low_high), e, 1.0),
                     options=(("algorithm", 6), ("c", 1), ("threshold", 1.0)),
                     known="Algorithm 6: no cut-off; exact epsilon on the pair by integration over 36 count classes",
                     dpsniper=PUBLISHED["SVT6"]))
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
    return {x.name: x for x in out}


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
    a, b = _answers(x, "x"), _answers(x_prime, "x_prime")
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
    lower ReportNoisyMax3's reach limit at 10^7 runs by about 1e-4 (tested: by less than 1e-3)."""
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
        pair = [_integer(d, 0, 5, label) for d, label in ((x, "x"), (x_prime, "x_prime"))]
        laws = [[float(v) for v in truncated_geometric_pmf(d, epsilon=eps)] for d in pair]
    elif name in ("ReportNoisyMax1", "ReportNoisyMax2"):
        laws = [rnm_index_probabilities(d, epsilon=eps, noise=opts["noise"]) for d in _pair_vectors(name, x, x_prime)]
    elif name in _BIT_KEEP:
        keep1, keep0 = _BIT_KEEP[name]
        a_bits, b_bits = (set(bloom_bits(_integer(d, -_BLOOM_VALUES, _BLOOM_VALUES, label)))
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
