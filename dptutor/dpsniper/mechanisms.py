"""DP-Sniper's mechanisms that are not already in :mod:`dptutor.zoo` (see :mod:`dptutor.dpsniper`).

Each is ``mechanism(data, size, rng, *, ...)``, returning ``size`` independent outputs for the
dataset ``data``; ``rng`` is a ``numpy.random.Generator``, a ``SeedSequence`` or an int seed.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    MAX_MECHANISM_SIZE,
    as_generator,
    check_answer_vector,
    check_int,
    check_integer_value,
    check_mechanism_call,
    check_mechanism_epsilon,
    check_real,
    check_size,
)
from dptutor.zoo import svt, svt_numerical_value

__all__ = [
    "truncated_geometric",
    "truncated_geometric_pmf",
    "laplace_parallel",
    "prefix_sum",
    "numerical_svt",
    "svt34_parallel",
    "rappor",
    "one_time_rappor",
    "bloom_bits",
]


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
    z = 0..n as fractions.

    Parameters
    ----------
    data : int
        The true count, in ``[0, n]`` (a whole float is accepted).
    epsilon : float
        The claimed epsilon, in ``[1e-12, 2)``.
    n : int, default 5
        The largest count, in ``[1, 1000]``.

    Returns
    -------
    list of fractions.Fraction
        ``P(z)`` for ``z = 0, ..., n``; they sum to 1.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.dpsniper import truncated_geometric_pmf
    >>> sum(truncated_geometric_pmf(2, epsilon=0.1))
    Fraction(1, 1)
    """
    eps = check_mechanism_epsilon(epsilon)
    n = check_int(n, "n", minimum=1, maximum=1000)
    count = check_integer_value(data, 0, n)
    k, d = _geometric_parameters(eps, n)
    f = _geometric_cdf(count, k, d, n)
    return [Fraction(f[z] - (f[z - 1] if z else 0), d) for z in range(n + 1)]


def truncated_geometric(
    data: int, size: int, rng: np.random.Generator, *, epsilon: float, n: int = 5
) -> NDArray[np.int64]:
    """Balcer and Vadhan's (2018) GeoSample: a count in [0, n] released on [0, n] with exact integer
    arithmetic; ``ln(1 + 2^-ceil(ln(2/epsilon)))``-DP as implemented (DP-Sniper's TruncatedGeometric).

    Parameters
    ----------
    data : int
        The true count, in ``[0, n]`` (a whole float is accepted).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, in ``[1e-12, 2)``.
    n : int, default 5
        The largest count, in ``[1, 1000]``.

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
        The released counts, in ``[0, n]``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    n = check_int(n, "n", minimum=1, maximum=1000)
    count = check_integer_value(data, 0, n)
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
    composition (DP-Sniper's LaplaceParallel: 20 copies at 0.005 each).

    Parameters
    ----------
    data : float
        The true count.
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.
    copies : int, default 20
        The number of Laplace mechanisms, in ``[1, 4096]``.

    Returns
    -------
    numpy.ndarray of float64, shape (size, copies)
        One row of ``copies`` noisy counts per output.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    copies = check_int(copies, "copies", minimum=1, maximum=1 << 12)
    return check_real(data, "data") + rng.laplace(0.0, copies / eps, check_size((size, copies), "size * copies"))


def prefix_sum(data: Any, size: int, rng: np.random.Generator, *, epsilon: float) -> NDArray[np.float64]:
    """The prefix sums of the answers, each answer plus ``Lap(1/epsilon)`` (Wang et al., PLDI 2019): with
    sensitivity-1 answers that may all change, ``k epsilon``-DP for ``k`` answers (DP-Sniper's PrefixSum).

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The query answers (finite).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.

    Returns
    -------
    numpy.ndarray of float64, shape (size, k)
        The prefix sums of the noisy answers, one row per output.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    q = check_answer_vector(data, summed=True)
    return np.cumsum(q + rng.laplace(0.0, 1.0 / eps, check_size((size, q.size), "size * len(data)")), axis=1)


def numerical_svt(
    data: Any, size: int, rng: np.random.Generator, *, epsilon: float, c: int = 2, threshold: float = 1.0
) -> NDArray[np.float64]:
    """Numerical SVT (Wang et al., PLDI 2019): compare ``q_i + Lap(6c/eps)`` with ``threshold + Lap(3/eps)``;
    when above, release ``q_i + Lap(3c/eps)`` (fresh noise), else 0; ``-inf`` for a query not answered
    after ``c`` answers above.  epsilon-DP in real arithmetic.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The query answers (finite).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.
    c : int, default 2
        The cut-off: answers "above" after which the algorithm stops, in ``[1, 2**20]``.
    threshold : float, default 1.0
        The threshold.

    Returns
    -------
    numpy.ndarray of float64, shape (size, k)
        One row per output: the released value, 0 (below) or ``-inf`` (not answered).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
    c = check_int(c, "c", minimum=1, maximum=1 << 20)
    t = check_real(threshold, "threshold")
    q = check_answer_vector(data)
    check_size((size, q.size), "size * len(data)")
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
    (DP-Sniper's SVT34Parallel): the values of Algorithm 3, then Algorithm 4's 1 / 0 / -1 as reals.

    Parameters
    ----------
    data : array_like of float, shape (k,)
        The query answers (finite).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    epsilon : float
        The claimed privacy budget, at least ``1e-12``.
    c : int, default 2
        The cut-off: answers "above" after which the algorithm stops, in ``[1, 2**20]``.
    threshold : float, default 1.0
        The threshold.

    Returns
    -------
    numpy.ndarray of float64, shape (size, 2k)
        Algorithm 3's values, then Algorithm 4's 1 / 0 / -1, one row per output.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng, eps = check_mechanism_call(size, rng, epsilon)
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
BLOOM_VALUES = 2**62


def bloom_bits(value: int, *, hashes: int = 4, bits: int = 20) -> tuple[int, ...]:
    """The Bloom-filter positions set for the integer ``value``: MurmurHash3 of its decimal string with
    seeds 0..hashes-1, modulo ``bits`` (RAPPOR's step 1 as DP-Sniper implements it).

    Parameters
    ----------
    value : int
        The value hashed, of at most ``2**62`` in absolute value (a whole float is accepted).
    hashes : int, default 4
        The number of hash functions, in ``[1, 64]``.
    bits : int, default 20
        The Bloom filter's length, in ``[1, 4096]``.

    Returns
    -------
    tuple of int
        The set positions, sorted, without repeats.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.dpsniper import bloom_bits
    >>> all(0 <= b < 20 for b in bloom_bits(1))
    True
    """
    value = check_integer_value(value, -BLOOM_VALUES, BLOOM_VALUES, "value")
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
    with ``f``.  Each differing bit costs ``ln((1 - f/2) / (f/2))`` (DP-Sniper's OneTimeRappor).

    Parameters
    ----------
    data : int
        The reported value, an integer of at most ``2**62`` in absolute value (a whole float is accepted).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    f : float, default 0.95
        The permanent randomized response's probability of replacing a bit, in ``(0, 1]``.
    hashes : int, default 4
        The number of hash functions, in ``[1, 64]``.
    bits : int, default 20
        The Bloom filter's length, in ``[1, 4096]``.

    Returns
    -------
    numpy.ndarray of int8, shape (size, bits)
        The randomized Bloom filters, one row per output.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng = check_int(size, "size", minimum=0, maximum=MAX_MECHANISM_SIZE), as_generator(rng)
    f = check_real(f, "f", low=0.0, high=1.0, low_open=True)
    positions = list(bloom_bits(check_integer_value(data, -BLOOM_VALUES, BLOOM_VALUES), hashes=hashes, bits=bits))
    filt = np.zeros(check_size((size, int(bits)), "size * bits"), dtype=bool)
    filt[:, positions] = True
    return _permanent(filt, rng, f).astype(np.int8)


def rappor(
    data: int, size: int, rng: np.random.Generator, *, f: float = 0.75, p: float = 0.45, q: float = 0.55,
    hashes: int = 4, bits: int = 20,
) -> NDArray[np.int8]:
    """RAPPOR's steps 1-3: :func:`one_time_rappor` with ``f``, then instantaneous randomized response
    (report 1 with probability ``q`` for a set bit, ``p`` for a clear one) (DP-Sniper's Rappor).

    Parameters
    ----------
    data : int
        The reported value, an integer of at most ``2**62`` in absolute value (a whole float is accepted).
    size : int
        The number of independent outputs, in ``[0, 2**28]``.
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.
    f : float, default 0.75
        The permanent randomized response's probability of replacing a bit, in ``(0, 1]``.
    p : float, default 0.45
        The probability of reporting 1 for a clear bit, in ``[0, 1]``.
    q : float, default 0.55
        The probability of reporting 1 for a set bit, in ``[0, 1]``.
    hashes : int, default 4
        The number of hash functions, in ``[1, 64]``.
    bits : int, default 20
        The Bloom filter's length, in ``[1, 4096]``.

    Returns
    -------
    numpy.ndarray of int8, shape (size, bits)
        The reported bits, one row per output.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    size, rng = check_int(size, "size", minimum=0, maximum=MAX_MECHANISM_SIZE), as_generator(rng)
    f = check_real(f, "f", low=0.0, high=1.0, low_open=True)
    p = check_real(p, "p", low=0.0, high=1.0)
    q = check_real(q, "q", low=0.0, high=1.0)
    positions = list(bloom_bits(check_integer_value(data, -BLOOM_VALUES, BLOOM_VALUES), hashes=hashes, bits=bits))
    filt = np.zeros(check_size((size, int(bits)), "size * bits"), dtype=bool)
    filt[:, positions] = True
    perm = _permanent(filt, rng, f)
    return (rng.random(perm.shape) < np.where(perm, q, p)).astype(np.int8)
