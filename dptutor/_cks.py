"""Canonne, Kamath and Steinke's (2020) exact samplers, step by step, on integers only.

The steps (see :mod:`dptutor.exact` for the whole story): ``Bernoulli(exp(-gamma))`` for a rational
``gamma`` in [0, 1] by the alternating series (:func:`bernoulli_exp`), the geometric variable with
``P(V >= v) = exp(-v)`` (:func:`geometric_exp_neg_one`), the discrete Laplace built from them
(:func:`sample_laplace_cks`), and the discrete Gaussian's acceptance test (:func:`gauss_accept`), both on
whole numpy arrays (every lane of a loop shares the same ``k``, so each round is one call of
``rng.integers`` with a scalar bound) and one draw at a time in Python integers.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "bernoulli_exp",
    "bernoulli_exp_neg_one",
    "geometric_exp_neg_one",
    "sample_laplace_cks",
    "uniform_below",
    "bernoulli_exp_python",
    "bernoulli_exp_big_python",
    "discrete_laplace_one",
    "gauss_accept",
]

# A geometric V above this bound has probability exp(-512): it never happens, but if it did,
# U + s V could overflow int64, so the sampler stops with an error instead of wrapping around.
_MAX_V: int = 512
#: Candidates per round of :func:`sample_laplace_cks` (the memory of a round grows with it).
_MAX_BATCH: int = 1 << 20


# ---------------------------------------------------------------------------------------------
# vectorised steps
# ---------------------------------------------------------------------------------------------


def bernoulli_exp(num: NDArray[np.int64], den: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Step 1, elementwise: ``Bernoulli(exp(-num / den))`` for integers ``0 <= num < den``.

    All lanes start at ``k = 1`` and stay in step, so round ``k`` is a single call
    ``rng.integers(0, den k, size=active)`` with a scalar bound.  Lanes whose first failure comes at
    an odd ``k`` return 1.

    Parameters
    ----------
    num : numpy.ndarray of int64
        Numerators, ``0 <= num < den``.
    den : int
        The common denominator, ``>= 1``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of bool
        One draw per lane.
    """
    success = rng.integers(0, den, size=num.size) < num  # A_1 ~ Bernoulli(gamma)
    result = ~success  # K = 1 (odd) for the lanes that fail at once
    active = np.flatnonzero(success)
    k = 2
    while active.size:
        success = rng.integers(0, den * k, size=active.size) < num[active]  # A_k ~ Bernoulli(gamma / k)
        if k % 2 == 1:
            result[active[~success]] = True
        active = active[success]
        k += 1
    return result


# Step 1 with gamma = 1 has P(K > k) = 1 / k!, so the first 12 rounds of its loop can be merged into
# one integer: with R uniform on {0, ..., 12! - 1}, the event "A_1, ..., A_k all succeed" is
# "R < 12! / k!", of probability exactly 1 / k! (k <= 12).  K is then the first k with
# R >= 12! / k!; only R = 0 (probability 1 / 12!, about 2e-9) needs the loop to go on from k = 13.
# 12! < 2^32, so R is one 32-bit draw.
_MERGED_ROUNDS: int = 12
_FACT: int = math.factorial(_MERGED_ROUNDS)
# thresholds 12!/k! for k = 12, 11, ..., 1 (increasing, for searchsorted)
_THRESHOLDS = np.array([_FACT // math.factorial(k) for k in range(_MERGED_ROUNDS, 0, -1)], dtype=np.uint32)
# _ODD_K[c] says whether K = 13 - c is odd, where c = #{thresholds <= R}.
_ODD_K = np.array([(_MERGED_ROUNDS + 1 - c) % 2 == 1 for c in range(_MERGED_ROUNDS + 1)])


def bernoulli_exp_neg_one(m: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Step 1 with ``gamma = 1``, ``m`` times, the first 12 rounds merged into one draw (see above).

    Parameters
    ----------
    m : int
        Number of draws.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of bool
        ``m`` draws of ``Bernoulli(exp(-1))``.
    """
    r = rng.integers(0, _FACT, size=m, dtype=np.uint32)
    # c = #{k : 12!/k! <= r}, so K = first k with r >= 12!/k! is 13 - c (K = 13 means "go on")
    result = _ODD_K[np.searchsorted(_THRESHOLDS, r, side="right")]
    if r.all():
        return result
    rest = np.flatnonzero(r == 0)  # all of A_1..A_12 succeeded: continue the loop at k = 13
    k = _MERGED_ROUNDS + 1
    while rest.size:
        success = rng.integers(0, k, size=rest.size) == 0
        result[rest[~success]] = k % 2 == 1
        rest = rest[success]
        k += 1
    return result


def geometric_exp_neg_one(m: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Step 2, ``m`` times: successes of ``Bernoulli(exp(-1))`` before the first failure.

    Parameters
    ----------
    m : int
        Number of draws.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of int64
        ``m`` draws of ``V``.

    Raises
    ------
    OverflowError
        If a draw exceeds 512 (probability ``exp(-512)``).
    """
    ok = bernoulli_exp_neg_one(m, rng)
    v = ok.astype(np.int64)
    active = np.flatnonzero(ok)
    count = 1
    while active.size:
        active = active[bernoulli_exp_neg_one(active.size, rng)]
        count += 1
        v[active] = count
        if count > _MAX_V and active.size:
            raise OverflowError("geometric draw above 512 (probability exp(-512)): refusing to overflow")
    return v



# ---------------------------------------------------------------------------------------------
# the same algorithm, one draw at a time
# ---------------------------------------------------------------------------------------------


def sample_laplace_cks(s: int, d: int, total: int, rng: np.random.Generator, accept: float) -> NDArray[np.int64]:
    """Discrete Laplace of scale ``t = s / d`` by the algorithm's own steps, vectorised.

    ``U`` uniform on ``{0, ..., s - 1}`` kept with probability ``exp(-U / s)``, ``V`` geometric,
    ``Y = floor((U + s V) / d)``, a fair sign, the outcome (negative, 0) rejected.

    Parameters
    ----------
    s, d : int
        The scale in lowest terms, ``s < 2^53``.
    total : int
        Number of draws.
    rng : numpy.random.Generator
        The source of randomness (``rng.integers`` only).
    accept : float
        Probability that a candidate is kept, which only sizes the batches.

    Returns
    -------
    numpy.ndarray of int64
        ``total`` draws.
    """
    out = np.empty(total, dtype=np.int64)
    filled = 0
    while filled < total:
        need = total - filled
        # About need / acceptance candidates finish in one round; a few per cent more makes a
        # second round rare (and a second round costs only the missing draws).  At most 2^20 candidates
        # a round: a round holds ~8 arrays of its size, 15 GB for the 2^28 draws check_size allows.
        batch = min(int(need / accept * 1.03) + 64, _MAX_BATCH)
        u = rng.integers(0, s, size=batch, dtype=np.int64)
        u = u[bernoulli_exp(u, s, rng)]  # keep U with probability exp(-U / s)
        v = geometric_exp_neg_one(u.size, rng)
        if d == 1:
            y = u + s * v
        else:  # u + s v < 2^53 (1 + 512) < 2^63, so a denominator beyond int64 makes every Y zero
            y = (u + s * v) // d if d < 1 << 63 else np.zeros_like(u)
        negative = rng.integers(0, 2, size=u.size, dtype=np.int8) == 1
        np.negative(y, out=y, where=negative)
        y = y[~(negative & (y == 0))]  # (B = 1, Y = 0) is rejected
        take = min(need, y.size)
        out[filled : filled + take] = y[:take]
        filled += take
    return out


def uniform_below(n: int, rng: np.random.Generator) -> int:
    """A uniform integer in ``{0, ..., n - 1}`` for any Python int ``n >= 1`` (``rng.integers`` below 2^62;
    above, random bytes cut to ``n``'s bit length and redrawn when ``>= n``: exact, and on average fewer
    than two rounds).

    Parameters
    ----------
    n : int
        The bound, ``>= 1``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    int
        The draw.
    """
    if n <= 1 << 62:
        return int(rng.integers(0, n))
    bits = n.bit_length()
    while True:
        r = int.from_bytes(rng.bytes((bits + 7) // 8), "little") >> (8 * ((bits + 7) // 8) - bits)
        if r < n:
            return r


def bernoulli_exp_python(num: int, den: int, rng: np.random.Generator) -> bool:
    """``Bernoulli(exp(-num / den))`` for ``0 <= num <= den``, one draw (step 1).

    Parameters
    ----------
    num, den : int
        ``gamma = num / den`` in [0, 1].
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    bool
        The draw.
    """
    k = 2 if num == den else 1  # A_1 ~ Bernoulli(1) is certain: skip its draw, as the vectorised code does
    while uniform_below(den * k, rng) < num:
        k += 1
    return k % 2 == 1


def discrete_laplace_one(s: int, d: int, rng: np.random.Generator) -> int:
    """One discrete Laplace draw of scale ``s / d`` (Algorithm 2 as written, Python integers).

    Parameters
    ----------
    s, d : int
        The scale ``s / d``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    int
        The draw.
    """
    while True:
        u = int(rng.integers(0, s))
        if not bernoulli_exp_python(u, s, rng):
            continue
        v = 0
        while bernoulli_exp_python(1, 1, rng):
            v += 1
        y = (u + s * v) // d
        negative = int(rng.integers(0, 2)) == 1
        if negative and y == 0:
            continue
        return -y if negative else y



#: ``2 p q t^2`` (the denominator of the acceptance exponent, for ``sigma^2 = p / q``) must stay below
#: this for the vectorised acceptance step; larger parameters fall back to Python integers (exact, slow).
_MAX_GAUSS_DEN: int = 1 << 56
#: Lanes whose ``|q t |Y| - p|`` reaches this are accepted or rejected with Python integers (the square
#: must fit in int64).
_MAX_GAUSS_GAP: int = 1 << 31


def bernoulli_exp_big_python(num: int, den: int, rng: np.random.Generator) -> bool:
    """``Bernoulli(exp(-num / den))`` for any ``num >= 0`` (Python integers): ``floor(num / den)`` times
    ``Bernoulli(exp(-1))``, then ``Bernoulli(exp(-(num mod den) / den))`` (CKS Algorithm 1).

    Parameters
    ----------
    num, den : int
        ``gamma = num / den >= 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    bool
        The draw.
    """
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not bernoulli_exp_python(1, 1, rng):
            return False
    return bernoulli_exp_python(rest, den, rng)


def gauss_accept(y: NDArray[np.int64], p: int, q: int, t: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """CKS Algorithm 3's test, elementwise: ``Bernoulli(exp(-(|y| - sigma^2 / t)^2 / (2 sigma^2)))``.

    With ``sigma^2 = p / q`` the exponent is ``gamma = (q t |y| - p)^2 / (2 p q t^2)``, a ratio of integers.
    ``Bernoulli(exp(-gamma))`` is ``floor(gamma)`` independent ``Bernoulli(exp(-1))`` successes followed by
    ``Bernoulli(exp(-(gamma - floor(gamma))))``: every step compares uniform random integers.

    Parameters
    ----------
    y : numpy.ndarray of int64
        The proposals.
    p, q, t : int
        ``sigma^2 = p / q`` and the proposal's scale ``t``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of bool
        Which proposals are kept.
    """
    den = 2 * p * q * t * t
    out = np.zeros(y.size, dtype=bool)
    a = np.abs(y)
    if den < _MAX_GAUSS_DEN:
        limit = (_MAX_GAUSS_GAP - 1 - p) // (q * t) if p < _MAX_GAUSS_GAP else -1
        fast = np.flatnonzero(a <= limit)  # |q t |y| - p| < 2^31: the square fits in int64
    else:
        fast = np.empty(0, dtype=np.int64)
    if fast.size:
        gap = a[fast] * (q * t) - p
        num = gap * gap
        whole, rest = np.divmod(num, den)
        alive = np.ones(fast.size, dtype=bool)
        j = 1
        pending = np.flatnonzero(whole >= j)
        while pending.size:  # the j-th Bernoulli(exp(-1)) for the lanes with floor(gamma) >= j
            alive[pending[~bernoulli_exp_neg_one(pending.size, rng)]] = False
            j += 1
            pending = pending[alive[pending] & (whole[pending] >= j)]
        live = np.flatnonzero(alive)
        if live.size:
            out[fast[live]] = bernoulli_exp(rest[live], den, rng)
    slow = np.ones(y.size, dtype=bool)
    slow[fast] = False
    for i in np.flatnonzero(slow):  # rare (or every lane, for huge parameters): exact Python integers
        out[i] = bernoulli_exp_big_python((q * t * int(a[i]) - p) ** 2, den, rng)
    return out
