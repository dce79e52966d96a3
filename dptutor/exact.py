"""Exact sampling of the discrete Laplace and discrete Gaussian distributions.

The discrete Laplace distribution with scale ``t > 0`` puts mass ``P(k) ∝ exp(-|k| / t)`` on every
integer ``k`` (scipy calls it ``dlaplace`` with ``a = 1 / t``).  Canonne, Kamath and Steinke (2020)
sample it *exactly*: every decision is a comparison of integers drawn uniformly at random, so no
floating-point rounding can make an output more (or less) likely than the formula says, and no
output is impossible.  Their three steps, for ``t = s / d`` in lowest terms:

1. ``Bernoulli(exp(-gamma))`` for a rational ``gamma = num / den`` in [0, 1]: draw
   ``A_k ~ Bernoulli(gamma / k)`` for ``k = 1, 2, ...`` until the first failure, and return 1 if the
   number of draws ``K`` is odd.  (``P(K > k) = gamma^k / k!``, so ``P(K odd)`` is the alternating
   series of ``exp(-gamma)``.)  ``Bernoulli(gamma / k)`` is "a uniform integer in
   ``{0, ..., den k - 1}`` is below ``num``".
2. A geometric variable ``V`` with ``P(V >= v) = exp(-v)``: the number of successes of
   ``Bernoulli(exp(-1))`` before the first failure.
3. Discrete Laplace: ``U`` uniform on ``{0, ..., s - 1}``, kept with probability ``exp(-U / s)``
   (step 1); then ``X = U + s V`` has ``P(X = x) ∝ exp(-x / s)`` on ``x >= 0``, and ``Y = floor(X / d)``
   has ``P(Y = y) ∝ exp(-y d / s) = exp(-y / t)``.  A fair sign ``B`` makes it two-sided; the
   outcome ``(B = 1, Y = 0)`` is rejected so that 0 is not counted twice.

:func:`sample_discrete_laplace_python` is this algorithm one draw at a time in plain Python, the
reference and the baseline of ``benchmarks/bench_exact.py``.  :func:`sample_discrete_laplace`
samples the same law on whole numpy arrays.  For scales ``1 <= t <= 2^24`` it takes a shorter exact
route (the *fast path*, see "the fast path" below): a fair sign and the magnitude ``X = floor(t E)``
with ``E = -ln U`` for a uniform real ``U`` (inversion: ``P(X >= x) = P(U < exp(-x / t)) = exp(-x / t)``),
where ``X`` is read off 53 random bits of ``U`` and a float interval around ``t E`` that provably
contains it, and the rare lanes whose interval straddles an integer are settled in exact integer
arithmetic.  Other scales run the three steps above on arrays (every lane of a loop shares the same
``k``, so each round is one call of ``rng.integers`` with a scalar bound).  The discrete Gaussian
(Algorithm 3, below) uses the same fast path for its proposal and for its acceptance test.
Randomness comes only from ``rng.integers``, so a seed reproduces the draws on every platform.

Why the fast path is exact (the *lazy comparison* of a random real with a number ``c``): a uniform
real ``U`` in [0, 1) is an infinite string of fair bits; its first ``b`` bits, the integer ``P``, put
it in ``[P / 2^b, (P + 1) / 2^b)``.  If ``lo <= c <= hi`` is proven and ``(P + 1) / 2^b <= lo``, then
``U < c`` whatever the later bits are; if ``P / 2^b >= hi``, then ``U >= c``.  Either way the answer
is the value of the event ``{U < c}`` for the whole string, so ``P(answer is yes) = c`` exactly.  Only
when ``P / 2^b`` falls in the short gap is the answer open; then more bits are drawn and ``c`` is
bounded more tightly with integers (:func:`_exp_neg_bounds`), which ends with probability 1 since
``exp(-gamma)`` is irrational for rational ``gamma > 0``.  Floats only choose how many bits are read.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import (
    MAX_ELEMENTS,
    check_float_array,
    check_int,
    check_positive,
    check_real,
    check_rng,
    check_size,
    is_bool,
)

__all__ = [
    "MAX_SCALE_NUMERATOR",
    "check_scale",
    "sample_discrete_laplace",
    "sample_discrete_laplace_python",
    "check_sigma",
    "sample_discrete_gaussian",
    "sample_discrete_gaussian_python",
    "discrete_gaussian_pmf",
    "GranularParameters",
    "granular_parameters",
    "granular_round",
    "granular_loss",
    "granular_reachable",
]

#: The numerator ``s`` of the scale ``t = s / d`` must stay below this (2**53), so that every
#: integer the vectorised sampler forms (``s k`` in step 1, ``U + s V`` in step 3) fits in int64.
MAX_SCALE_NUMERATOR: int = 1 << 53

# A geometric V above this bound has probability exp(-512): it never happens, but if it did,
# U + s V could overflow int64, so the sampler stops with an error instead of wrapping around.
_MAX_V: int = 512


def check_scale(scale: object, name: str = "scale") -> Fraction:
    """``scale`` as a positive :class:`~fractions.Fraction` (from an int or a Fraction, not a float).

    A float is refused: its value is rarely the number that was meant (``0.1`` is
    ``3602879701896397 / 2**55``); pass ``Fraction(1, 10)`` to say what you mean.
    """
    if isinstance(scale, np.ndarray) and scale.ndim == 0:
        scale = scale[()]
    if is_bool(scale) or not isinstance(scale, (numbers.Integral, Fraction)):
        raise TypeError(
            f"{name} must be a positive int or fractions.Fraction (exact), got {type(scale).__name__}"
        )
    t = Fraction(int(scale)) if isinstance(scale, numbers.Integral) else scale
    if t <= 0:
        raise ValueError(f"{name} must be > 0, got {scale}")
    if t.numerator >= MAX_SCALE_NUMERATOR:
        raise ValueError(f"{name} must have a numerator below 2**53, got {t}")
    return t


# ---------------------------------------------------------------------------------------------
# vectorised steps
# ---------------------------------------------------------------------------------------------


def _bernoulli_exp(num: NDArray[np.int64], den: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Step 1, elementwise: ``Bernoulli(exp(-num / den))`` for integers ``0 <= num < den``.

    All lanes start at ``k = 1`` and stay in step, so round ``k`` is a single call
    ``rng.integers(0, den k, size=active)`` with a scalar bound.  Lanes whose first failure comes at
    an odd ``k`` return 1.
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


def _bernoulli_exp_neg_one(m: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Step 1 with ``gamma = 1``, ``m`` times, the first 12 rounds merged into one draw (see above)."""
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


def _geometric_exp_neg_one(m: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Step 2, ``m`` times: successes of ``Bernoulli(exp(-1))`` before the first failure."""
    ok = _bernoulli_exp_neg_one(m, rng)
    v = ok.astype(np.int64)
    active = np.flatnonzero(ok)
    count = 1
    while active.size:
        active = active[_bernoulli_exp_neg_one(active.size, rng)]
        count += 1
        v[active] = count
        if count > _MAX_V and active.size:
            raise OverflowError("geometric draw above 512 (probability exp(-512)): refusing to overflow")
    return v


def _acceptance(t: Fraction) -> float:
    """Probability that one candidate of :func:`sample_discrete_laplace` is kept (batch sizing only).

    ``P(keep U) = (1 - 1/e) / (s (1 - exp(-1/s)))`` and ``P(not (B = 1 and Y = 0)) = (1 + exp(-1/t)) / 2``.
    A float is fine here: it only chooses how many candidates to draw per round, never a draw.
    """
    s = t.numerator
    keep_u = -math.expm1(-1.0) / (s * -math.expm1(-1.0 / s))
    return keep_u * (1.0 + math.exp(-1.0 / float(t))) / 2.0


def sample_discrete_laplace(scale: int | Fraction, size: int | tuple[int, ...], rng: np.random.Generator) -> NDArray[np.int64]:
    """Exact discrete Laplace draws, ``P(k) ∝ exp(-|k| / scale)``, as an int64 array of shape ``size``.

    The law of Canonne, Kamath and Steinke (2020), Algorithm 2, vectorised: by exact inversion with lazy
    comparison for ``1 <= scale <= 2^24`` (:func:`_sample_discrete_laplace_fast`), by the algorithm's own
    steps otherwise (see the module docstring).  ``scale`` is a positive int or
    :class:`~fractions.Fraction` (numerator below 2**53); randomness comes only from ``rng.integers``.
    """
    t = check_scale(scale)
    shape = check_size(size)
    rng = check_rng(rng)
    s, d = t.numerator, t.denominator
    total = math.prod(shape)
    if _fast_laplace_ok(s, d):
        return _sample_discrete_laplace_fast(s, d, total, rng).reshape(shape)
    out = np.empty(total, dtype=np.int64)
    accept = _acceptance(t)
    filled = 0
    while filled < total:
        need = total - filled
        # About need / acceptance candidates finish in one round; a few per cent more makes a
        # second round rare (and a second round costs only the missing draws).
        batch = int(need / accept * 1.03) + 64
        u = rng.integers(0, s, size=batch, dtype=np.int64)
        u = u[_bernoulli_exp(u, s, rng)]  # keep U with probability exp(-U / s)
        v = _geometric_exp_neg_one(u.size, rng)
        y = u + s * v if d == 1 else (u + s * v) // d
        negative = rng.integers(0, 2, size=u.size, dtype=np.int8) == 1
        np.negative(y, out=y, where=negative)
        y = y[~(negative & (y == 0))]  # (B = 1, Y = 0) is rejected
        take = min(need, y.size)
        out[filled : filled + take] = y[:take]
        filled += take
    return out.reshape(shape)


# ---------------------------------------------------------------------------------------------
# the same algorithm, one draw at a time
# ---------------------------------------------------------------------------------------------


def _uniform_below(n: int, rng: np.random.Generator) -> int:
    """A uniform integer in ``{0, ..., n - 1}`` for any Python int ``n >= 1`` (``rng.integers`` below 2^62;
    above, random bytes cut to ``n``'s bit length and redrawn when ``>= n``: exact, and on average fewer
    than two rounds)."""
    if n <= 1 << 62:
        return int(rng.integers(0, n))
    bits = n.bit_length()
    while True:
        r = int.from_bytes(rng.bytes((bits + 7) // 8), "little") >> (8 * ((bits + 7) // 8) - bits)
        if r < n:
            return r


def _bernoulli_exp_python(num: int, den: int, rng: np.random.Generator) -> bool:
    """``Bernoulli(exp(-num / den))`` for ``0 <= num <= den``, one draw (step 1)."""
    k = 2 if num == den else 1  # A_1 ~ Bernoulli(1) is certain: skip its draw, as the vectorised code does
    while _uniform_below(den * k, rng) < num:
        k += 1
    return k % 2 == 1


def sample_discrete_laplace_python(
    scale: int | Fraction, size: int | tuple[int, ...], rng: np.random.Generator
) -> NDArray[np.int64]:
    """The reference: Canonne-Kamath-Steinke's Algorithm 2 in plain Python, one draw at a time.

    Same law as :func:`sample_discrete_laplace` (not the same draws for a seed: the vectorised
    version consumes the random integers in a different order).
    """
    t = check_scale(scale)
    shape = check_size(size)
    rng = check_rng(rng)
    s, d = t.numerator, t.denominator
    total = math.prod(shape)
    return np.array([_discrete_laplace_one(s, d, rng) for _ in range(total)], dtype=np.int64).reshape(shape)


def _discrete_laplace_one(s: int, d: int, rng: np.random.Generator) -> int:
    """One discrete Laplace draw of scale ``s / d`` (Algorithm 2 as written, Python integers)."""
    while True:
        u = int(rng.integers(0, s))
        if not _bernoulli_exp_python(u, s, rng):
            continue
        v = 0
        while _bernoulli_exp_python(1, 1, rng):
            v += 1
        y = (u + s * v) // d
        negative = int(rng.integers(0, 2)) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


# ---------------------------------------------------------------------------------------------
# the fast path: a uniform real, 53 of its bits, and a float interval around the threshold
# ---------------------------------------------------------------------------------------------
#
# Every decision of Algorithms 1-3 is "is U below exp(-gamma)?" for a uniform real U in [0, 1) and a
# rational gamma >= 0 (U < exp(-gamma) has probability exp(-gamma)), or a function of such
# comparisons: the magnitude of the discrete Laplace noise is X = floor(t E) with E = -ln U, that is
# the x with exp(-(x + 1) / t) < U <= exp(-x / t) (inversion: P(X >= x) = P(U < exp(-x / t)) = exp(-x / t)).
# U is an infinite string of fair random bits, drawn lazily.  Knowing its first b bits, the integer P,
# places U in [P / 2^b, (P + 1) / 2^b).  If a number c is known to lie in [lo, hi] and
# (P + 1) / 2^b <= lo, then U < c whatever the other bits are; if P / 2^b >= hi, then U >= c.  Only
# when P / 2^b lands in the gap between the two tests is the answer open, and then more bits are
# drawn and c is bounded more tightly (in exact integer arithmetic, :func:`_exp_neg_bounds`).  The
# result is the comparison of the whole infinite string with c, so its probability is exactly c:
# the shortcut changes how many bits are looked at, never the answer.
#
# The vectorised samplers take b = 53 and bound c in floating point: numpy's exp and log have a
# relative error far below _FLOAT_REL_ERR (tests check this against mpmath on many arguments), and
# the few roundings around them (each at most 2^-53 relative, IEEE round to nearest) fit in the gap
# between _FLOAT_REL_ERR and _MARGIN.  A lane whose 53 bits fall inside [lo, hi] (probability about
# 2^-36 times a small factor) goes to the exact fallback, one lane at a time in Python integers.

#: Bound on the relative error of ``np.exp`` and ``np.log`` where the fast path uses them (tested).
FLOAT_REL_ERR: float = 2.0**-40
#: Relative margin of the fast path's float intervals: FLOAT_REL_ERR plus room for the roundings.
_MARGIN: float = 2.0**-36
_PREFIX_BITS: int = 53
_PREFIX_ONE: int = 1 << _PREFIX_BITS
#: The fast discrete Laplace magnitude serves scales 1 <= t <= 2^24 (a float t E has 29 bits to spare).
_MAX_FAST_SCALE: int = 1 << 24
#: Largest acceptance table of the fast discrete Gaussian (entries), and the int64 bound on its integers.
_MAX_TABLE: int = 1 << 20
_MAX_FAST_INT: int = 1 << 53


def _exp_neg_bounds(num: int, den: int, bits: int) -> tuple[int, int]:
    """Integers ``lo <= exp(-num / den) 2^bits <= hi``, a few units apart (``num >= 0``, ``den >= 1``).

    ``exp(-gamma) = exp(-x)^n`` with ``n = ceil(gamma)`` and ``x = gamma / n`` in (0, 1].  The series
    ``sum_k (-x)^k / k!`` alternates with decreasing terms, so ``exp(-x)`` is within the next term of each
    partial sum.  Each term is bounded from below and above in fixed point with ``w`` fractional bits
    (floor and ceiling divisions); the sum stops when a term's upper bound is at most ``2^-w``.  The
    ``n``-th powers of the two bounds, floored and ceiled to ``bits`` bits, bound ``exp(-gamma)``.
    """
    if num == 0:
        return 1 << bits, 1 << bits
    n = -(-num // den)
    dn = den * n
    w = bits + n.bit_length() + 16
    one = 1 << w
    term_lo = term_hi = s_lo = s_hi = one
    k = 0
    while term_hi > 1:
        k += 1
        term_lo = term_lo * num // (dn * k)
        term_hi = -(-term_hi * num // (dn * k))
        if k % 2:
            s_lo, s_hi = s_lo - term_hi, s_hi - term_lo
        else:
            s_lo, s_hi = s_lo + term_lo, s_hi + term_hi
    lo, hi = max(s_lo - 1, 0), s_hi + 1  # the remainder after term k is at most term k <= 2^-w
    shift = w * n - bits
    return (lo**n) >> shift, -((-(hi**n)) >> shift)


class _LazyUniform:
    """A uniform real ``U`` in [0, 1) of which the first ``bits`` bits (the integer ``prefix``) are drawn.

    :meth:`below_exp_neg` decides ``U < exp(-num / den)`` exactly, drawing 64 more bits at a time
    while the bits so far do not settle it (see the comment above).
    """

    def __init__(self, prefix: int, bits: int, rng: np.random.Generator) -> None:
        self.prefix, self.bits, self.rng = prefix, bits, rng

    def extend(self) -> None:
        self.prefix = (self.prefix << 64) | int(self.rng.integers(0, 1 << 64, dtype=np.uint64))
        self.bits += 64

    def below_exp_neg(self, num: int, den: int) -> bool:
        while True:
            lo, hi = _exp_neg_bounds(num, den, self.bits)
            if self.prefix + 1 <= lo:  # U < (prefix + 1) / 2^bits <= exp(-gamma)
                return True
            if self.prefix >= hi:  # U >= prefix / 2^bits >= exp(-gamma)
                return False
            self.extend()


def _geometric_exact(u: _LazyUniform, s: int, d: int) -> int:
    """``X = floor(t E)`` with ``E = -ln U`` and ``t = s / d``: the ``x`` with ``exp(-(x+1)/t) < U <= exp(-x/t)``.

    Exact: every step is :meth:`_LazyUniform.below_exp_neg`.  A float estimate only picks where the
    search starts (after enough bits that it is off by at most a step or two).
    """
    while u.prefix * d <= 2 * s:  # then t / P < 1/2: the bits so far pin t E down to within 1/2
        u.extend()
    guess = (s / d) * (u.bits * math.log(2.0) - math.log(u.prefix))
    x = max(0, int(guess) - 1)
    while x > 0 and not u.below_exp_neg(x * d, s):  # U >= exp(-x / t): X < x
        x -= 1
    while u.below_exp_neg((x + 1) * d, s):  # U < exp(-(x + 1) / t): X > x
        x += 1
    return x


def _fast_magnitude(v: NDArray[np.int64], t: float) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """``X = floor(t E)``, ``E = -ln U``, for each 53-bit prefix ``v`` of ``U``, and whether the float
    interval decided it (scale ``1 <= t <= 2^24``; undecided lanes go to :func:`_geometric_exact`).

    ``U`` in ``[v / 2^53, (v + 1) / 2^53)`` puts ``t E`` in ``(t a, t b]`` with ``b = -ln(v / 2^53)`` and
    ``a = -ln((v + 1) / 2^53) >= b - 1 / v``.  With ``b`` from ``np.log`` (relative error below
    FLOAT_REL_ERR) and margins of _MARGIN, ``hi >= t b`` and ``lo <= t (b - 1 / v)`` for the floats
    computed below, so when ``floor(hi) <= lo`` the integer ``floor(hi)`` is ``X``.  ``v = 0`` is
    computed as ``v = 1``, whose interval has width ``t >= 1`` and is never decided.
    """
    vf = v.astype(np.float64)
    np.maximum(vf, 1.0, out=vf)
    width = (t * (1.0 + _MARGIN)) / vf  # >= t / v
    vf *= 2.0**-_PREFIX_BITS  # exact: a power of two
    neg_b = np.log(vf, out=vf)  # -b, relative error below FLOAT_REL_ERR
    hi = neg_b * (-t * (1.0 + _MARGIN))  # >= t b
    neg_b *= -t * (1.0 - _MARGIN)
    neg_b -= width  # lo <= t (b - 1 / v)
    np.floor(hi, out=hi)
    decided = neg_b >= hi
    return hi.astype(np.int64), decided


def _fast_laplace_ok(s: int, d: int) -> bool:
    """Whether the scale ``t = s / d`` is in the fast path's range ``1 <= t <= 2^24``."""
    return d <= s <= _MAX_FAST_SCALE * d


def _draw_signed_prefixes(m: int, rng: np.random.Generator) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``m`` 53-bit prefixes ``v`` of uniform reals and ``m`` independent fair sign bits, from one draw."""
    w = rng.integers(0, 1 << (_PREFIX_BITS + 1), size=m, dtype=np.int64)
    return w >> 1, w & 1


def _sample_discrete_laplace_fast(s: int, d: int, total: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Discrete Laplace of scale ``t = s / d`` (``1 <= t <= 2^24``) by exact inversion: a fair sign and
    ``X = floor(t E)`` (:func:`_fast_magnitude`), the outcome (negative, 0) rejected so that 0 is not
    counted twice.  Chunks of _CHUNK lanes keep the arrays in cache."""
    t = s / d
    out = np.empty(total, dtype=np.int64)
    accept = (1.0 + math.exp(-1.0 / t)) / 2.0  # P(not (negative, 0)); sizes the chunks only
    filled = 0
    while filled < total:
        m = min(_CHUNK, int((total - filled) / accept * 1.01) + 64)
        v, sign = _draw_signed_prefixes(m, rng)
        x, decided = _fast_magnitude(v, t)
        for i in np.flatnonzero(~decided):  # rare: exact, in Python integers
            x[i] = _geometric_exact(_LazyUniform(int(v[i]), _PREFIX_BITS, rng), s, d)
        keep = (x - sign) != -1  # not (x = 0 and negative); x >= 0
        filled = _emit_signed(out, filled, x, sign, keep)
    return out


#: Lanes per round of the fast samplers (their arrays stay in the CPU cache).
_CHUNK: int = 1 << 16
#: Bits of the test's uniform ``U'`` that the first stage of the fast discrete Gaussian looks at.
_TEST_BITS: int = 10
#: Sentinel threshold: the proposal (negative, 0) is never kept and never open.
_NEVER: int = -(1 << 62)


@dataclass(frozen=True)
class _GaussTable:
    """Thresholds for Algorithm 3's test ``U' < exp(-gamma(x))``, ``gamma(x) = (q t x - p)^2 / (2 p q t^2)``.

    ``scaled[x]`` is the float ``exp(-gamma(x)) 2^53`` (relative error below 2^-39 where it is normal);
    ``first[2 x + s]`` (sign bit ``s``) is ``floor(A[x] / 2^43)`` with ``A[x] = floor(scaled[x] (1 - _MARGIN))``,
    a lower bound of ``exp(-gamma(x)) 2^10``; ``first[1]`` (the proposal (negative, 0)) is _NEVER.
    For the first 10 bits ``a`` of ``U'``: ``a < first`` proves acceptance, ``a >= first + width`` proves
    rejection (``width`` bounds ``ceil(B[x] / 2^43) - first`` for every ``x``, ``B[x] >= exp(-gamma(x)) 2^53``).
    """

    scaled: NDArray[np.float64]
    first: NDArray[np.int64]
    width: int


def _gauss_table(p: int, q: int, t: int) -> _GaussTable | None:
    """The thresholds of :class:`_GaussTable` for ``x = 0, ..., M - 1`` (None out of the fast range).

    ``M - 1 >= sigma^2 / t + 9 sigma + 1``, so for every ``x >= M - 1`` the exponent is at least 40.5 and
    ``exp(-gamma(x)) 2^53 < 1``: the last entry (``A = 0``, ``B = 1``) serves every larger ``x``.
    The float ``gamma`` has three roundings (``gap^2``, ``den``, the quotient; ``gap`` is exact), so
    ``exp(-gamma_float) = exp(-gamma) (1 + r)`` with ``|r| < gamma 2^-51 + FLOAT_REL_ERR``, below 2^-39 for
    ``gamma <= 700``; beyond, ``exp(-gamma) 2^53 < 1`` and ``B = max(., 1)`` covers it.
    """
    m = p // (q * t) + 9 * (math.isqrt(p // q) + 1) + 3  # isqrt(floor(sigma^2)) + 1 > sigma
    if t > _MAX_FAST_SCALE or m > _MAX_TABLE or q * t * m + p >= _MAX_FAST_INT:
        return None
    gap = np.arange(m, dtype=np.int64) * (q * t) - p
    gapf = gap.astype(np.float64)
    gamma = (gapf * gapf) / float(2 * p * q * t * t)
    scaled = np.exp(-gamma) * float(_PREFIX_ONE)
    a = np.floor(scaled * (1.0 - _MARGIN)).astype(np.int64)
    b = np.maximum(np.ceil(scaled * (1.0 + _MARGIN)), 1.0).astype(np.int64)
    if a[-1] != 0 or b[-1] != 1 or (m - 1) * q * t < p:
        raise AssertionError("discrete Gaussian table too short")  # cannot happen: see the bound on M
    shift = _PREFIX_BITS - _TEST_BITS
    first = a >> shift
    width = int((-((-b) >> shift) - first).max())
    doubled = np.repeat(first, 2)
    doubled[1] = _NEVER
    return _GaussTable(scaled, doubled, width)


def _sample_discrete_gaussian_fast(
    p: int, q: int, t: int, total: int, table: _GaussTable, rng: np.random.Generator, accept: float
) -> NDArray[np.int64]:
    """Algorithm 3 with the discrete Laplace proposal by exact inversion and the test by lazy bits.

    One 64-bit word per proposal: its top 53 bits are the prefix of ``U`` (the magnitude, see
    :func:`_fast_magnitude`), bit 10 the sign, bits 0-9 the first 10 bits ``a`` of the test's ``U'``
    (disjoint bits of a uniform word are independent fair bits).
    Stage 1 decides the test from ``a`` and the table (open with probability about 2^-10); stage 2
    draws 53 more bits of ``U'`` for the open lanes and compares them with float bounds of
    ``exp(-gamma) 2^10 - a``; stage 3 settles what is left (about 2^-26 of those), and every lane whose
    magnitude was open, one at a time in Python integers.  Open lanes are settled in place before the
    kept lanes are selected, so which lanes are kept never depends on which were open.
    """
    first, width, scaled = table.first, table.width, table.scaled
    last = scaled.size - 1
    den = 2 * p * q * t * t
    tf = float(t)
    shift = _PREFIX_BITS - _TEST_BITS
    out = np.empty(total, dtype=np.int64)
    filled = 0
    while filled < total:
        m = min(_CHUNK, int((total - filled) / accept * 1.01) + 64)
        w = rng.integers(0, 1 << 64, size=m, dtype=np.uint64)
        v = (w >> 11).view(np.int64)
        low = (w & ((2 << _TEST_BITS) - 1)).view(np.int64)  # bits 0 .. _TEST_BITS (<= 10)
        sign = low >> _TEST_BITS
        low &= (1 << _TEST_BITS) - 1  # a: the first bits of U'
        x, decided = _fast_magnitude(v, tf)
        idx = np.minimum(x, last)
        idx <<= 1
        idx |= sign
        diff = low - first[idx]  # < 0 keeps, >= width rejects
        keep = diff < 0
        keep &= decided
        open_test = diff.view(np.uint64) < np.uint64(width)
        open_test &= decided
        lanes = np.flatnonzero(open_test)
        if lanes.size:  # stage 2: 53 more bits of U' for the lanes the first 10 bits left open
            xs = x[lanes]
            a = low[lanes]
            r = rng.integers(0, _PREFIX_ONE, size=lanes.size, dtype=np.int64)
            e10 = scaled[np.minimum(xs, last)] * 2.0**-shift  # exp(-gamma) 2^10, relative error < 2^-39
            c_lo = e10 * (1.0 - _MARGIN) - a  # <= exp(-gamma) 2^10 - a
            c_hi = e10 * (1.0 + _MARGIN) - a + 2.0**-60  # >= it (2^-60: exp(-gamma) underflowed to 0)
            rf = r.astype(np.float64)
            yes = (rf + 1.0) * 2.0**-_PREFIX_BITS <= c_lo
            no = rf * 2.0**-_PREFIX_BITS >= c_hi
            keep[lanes] = yes
            still = ~(yes | no) | (xs >= last)  # beyond the table: exact arithmetic
            for j in np.flatnonzero(still):
                prefix = (int(a[j]) << _PREFIX_BITS) | int(r[j])
                keep[lanes[j]] = _gauss_test_exact(int(xs[j]), prefix, _TEST_BITS + _PREFIX_BITS, p, q, t, den, rng)
        for i in np.flatnonzero(~decided):  # the magnitude itself was open (rare)
            xi = _geometric_exact(_LazyUniform(int(v[i]), _PREFIX_BITS, rng), t, 1)
            x[i] = xi
            keep[i] = not (sign[i] and xi == 0) and _gauss_test_exact(xi, int(low[i]), _TEST_BITS, p, q, t, den, rng)
        filled = _emit_signed(out, filled, x, sign, keep)
    return out


def _emit_signed(out: NDArray[np.int64], filled: int, x: NDArray[np.int64], sign: NDArray[np.int64],
                 keep: NDArray[np.bool_]) -> int:
    """Negate the magnitudes ``x`` whose ``sign`` bit is set (in place), copy the kept ones into ``out``
    from ``filled`` on, as many as fit; return the new fill level."""
    x ^= -sign
    x += sign  # x -> -x where the sign bit is set
    y = np.compress(keep, x)
    take = min(out.size - filled, y.size)
    out[filled : filled + take] = y[:take]
    return filled + take


def _gauss_test_exact(x: int, prefix: int, bits: int, p: int, q: int, t: int, den: int, rng: np.random.Generator) -> bool:
    """Algorithm 3's test for magnitude ``x``, exactly: ``U' < exp(-(q t x - p)^2 / den)`` given ``bits``
    bits of ``U'`` (:meth:`_LazyUniform.below_exp_neg`)."""
    gap = q * t * x - p
    return _LazyUniform(prefix, bits, rng).below_exp_neg(gap * gap, den)


# ---------------------------------------------------------------------------------------------
# the discrete Gaussian: Canonne, Kamath and Steinke (2020), Algorithm 3
# ---------------------------------------------------------------------------------------------

#: ``2 p q t^2`` (the denominator of the acceptance exponent, for ``sigma^2 = p / q``) must stay below
#: this for the vectorised acceptance step; larger parameters fall back to Python integers (exact, slow).
_MAX_GAUSS_DEN: int = 1 << 56
#: Lanes whose ``|q t |Y| - p|`` reaches this are accepted or rejected with Python integers (the square
#: must fit in int64).
_MAX_GAUSS_GAP: int = 1 << 31


def check_sigma(sigma: object, name: str = "sigma") -> Fraction:
    """``sigma`` as a positive :class:`~fractions.Fraction` (an int or a Fraction, not a float).

    The sampler is exact for a rational ``sigma^2``; a rational ``sigma`` gives one.  ``sigma^2 = p / q``
    must have ``p`` and ``q`` below 2**62, and ``floor(sigma) + 1`` (the proposal's scale) below 2**53.
    """
    sig = check_scale(sigma, name)
    var = sig * sig
    if var.numerator >= 1 << 62 or var.denominator >= 1 << 62:
        raise ValueError(f"{name}^2 must have a numerator and denominator below 2**62, got {sig}")
    return sig


def _gauss_parameters(sig: Fraction) -> tuple[int, int, int]:
    """``(p, q, t)`` with ``sigma^2 = p / q`` in lowest terms and ``t = floor(sigma) + 1``."""
    var = sig * sig
    return var.numerator, var.denominator, math.floor(sig) + 1


def _bernoulli_exp_big_python(num: int, den: int, rng: np.random.Generator) -> bool:
    """``Bernoulli(exp(-num / den))`` for any ``num >= 0`` (Python integers): ``floor(num / den)`` times
    ``Bernoulli(exp(-1))``, then ``Bernoulli(exp(-(num mod den) / den))`` (CKS Algorithm 1)."""
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_python(1, 1, rng):
            return False
    return _bernoulli_exp_python(rest, den, rng)


def _gauss_accept(y: NDArray[np.int64], p: int, q: int, t: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """CKS Algorithm 3's test, elementwise: ``Bernoulli(exp(-(|y| - sigma^2 / t)^2 / (2 sigma^2)))``.

    With ``sigma^2 = p / q`` the exponent is ``gamma = (q t |y| - p)^2 / (2 p q t^2)``, a ratio of integers.
    ``Bernoulli(exp(-gamma))`` is ``floor(gamma)`` independent ``Bernoulli(exp(-1))`` successes followed by
    ``Bernoulli(exp(-(gamma - floor(gamma))))``: every step compares uniform random integers.
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
            alive[pending[~_bernoulli_exp_neg_one(pending.size, rng)]] = False
            j += 1
            pending = pending[alive[pending] & (whole[pending] >= j)]
        live = np.flatnonzero(alive)
        if live.size:
            out[fast[live]] = _bernoulli_exp(rest[live], den, rng)
    slow = np.ones(y.size, dtype=bool)
    slow[fast] = False
    for i in np.flatnonzero(slow):  # rare (or every lane, for huge parameters): exact Python integers
        out[i] = _bernoulli_exp_big_python((q * t * int(a[i]) - p) ** 2, den, rng)
    return out


def sample_discrete_gaussian(sigma: int | Fraction, size: int | tuple[int, ...], rng: np.random.Generator) -> NDArray[np.int64]:
    """Exact discrete Gaussian draws, ``P(k) ∝ exp(-k^2 / (2 sigma^2))`` on the integers, as int64.

    Canonne, Kamath and Steinke (2020), Algorithm 3, vectorised: propose ``Y`` discrete Laplace of
    scale ``t = floor(sigma) + 1`` and keep it with probability ``exp(-(|Y| - sigma^2 / t)^2 / (2 sigma^2))``.
    When the acceptance table fits (``sigma`` up to about 10^5, :func:`_gauss_table`), both steps take the
    exact fast path (:func:`_sample_discrete_gaussian_fast`: inversion and lazy comparison of random bits,
    exact integer fallback); otherwise the proposal is :func:`sample_discrete_laplace` and the test runs
    the Bernoulli(exp(-gamma)) loops on integers (:func:`_gauss_accept`).  Same law either way.
    ``sigma`` is a positive int or :class:`~fractions.Fraction` (see :func:`check_sigma`); ``sigma`` is
    the scale parameter (the variance of the discrete law is slightly below ``sigma^2``).
    """
    sig = check_sigma(sigma)
    shape = check_size(size)
    rng = check_rng(rng)
    p, q, t = _gauss_parameters(sig)
    total = math.prod(shape)
    # A float is fine here: the acceptance probability only sizes the batches, never decides a draw.
    accept = _gauss_acceptance(float(sig), t)
    table = _gauss_table(p, q, t)
    if table is not None:
        per_candidate = accept * (1.0 + math.exp(-1.0 / t)) / 2.0  # the proposal's own (negative, 0) rejection
        return _sample_discrete_gaussian_fast(p, q, t, total, table, rng, per_candidate).reshape(shape)
    out = np.empty(total, dtype=np.int64)
    filled = 0
    while filled < total:
        need = total - filled
        batch = int(need / accept * 1.03) + 64
        y = sample_discrete_laplace(t, batch, rng)
        y = y[_gauss_accept(y, p, q, t, rng)]
        take = min(need, y.size)
        out[filled : filled + take] = y[:take]
        filled += take
    return out.reshape(shape)


def _gauss_acceptance(sig: float, t: int) -> float:
    """The acceptance probability of Algorithm 3, from the two normalisers (batch sizing only)."""
    half = int(min(40.0 * max(sig, float(t)), 1e6)) + 1
    k = np.arange(-half, half + 1, dtype=np.float64)
    gauss = np.exp(-k * k / (2.0 * sig * sig)).sum()
    lap_norm = (1.0 + math.exp(-1.0 / t)) / -math.expm1(-1.0 / t)
    # P(accept) = sum_k Lap(k) exp(-(|k| - s^2/t)^2 / 2 s^2) = gauss * exp(-s^2 / (2 t^2)) / lap_norm
    return float(max(0.05, min(1.0, gauss * math.exp(-sig * sig / (2.0 * t * t)) / lap_norm)))


def sample_discrete_gaussian_python(
    sigma: int | Fraction, size: int | tuple[int, ...], rng: np.random.Generator
) -> NDArray[np.int64]:
    """The reference: Canonne-Kamath-Steinke's Algorithm 3 in plain Python, one draw at a time."""
    sig = check_sigma(sigma)
    shape = check_size(size)
    rng = check_rng(rng)
    p, q, t = _gauss_parameters(sig)
    den = 2 * p * q * t * t
    total = math.prod(shape)
    out: list[int] = []
    while len(out) < total:
        y = _discrete_laplace_one(t, 1, rng)
        if _bernoulli_exp_big_python((q * t * abs(y) - p) ** 2, den, rng):
            out.append(y)
    return np.array(out, dtype=np.int64).reshape(shape)


def discrete_gaussian_pmf(k: ArrayLike, sigma: int | Fraction) -> NDArray[np.float64]:
    """``P(K = k)`` for the discrete Gaussian of scale ``sigma``: ``exp(-k^2 / 2 sigma^2) / N``.

    The normaliser ``N = sum_k exp(-k^2 / 2 sigma^2)`` is summed over ``|k| <= K`` with
    ``K = ceil(40 sigma) + 1``; the rest is below ``2 exp(-800) / (1 - exp(-40 / sigma))``, far below
    a double's resolution of ``N >= 1``.
    """
    sig = float(check_sigma(sigma))
    arr = check_float_array(k, "k", finite=True)
    if not np.all(arr == np.round(arr)):
        raise ValueError("k must hold integers")
    half = math.ceil(40.0 * sig) + 1
    grid = np.arange(-half, half + 1, dtype=np.float64)
    norm = math.fsum(np.exp(-grid * grid / (2.0 * sig * sig)))
    with np.errstate(over="ignore"):  # k^2 overflowing to inf has probability exp(-inf) = 0, correctly
        return np.exp(-arr * arr / (2.0 * sig * sig)) / norm


# ---------------------------------------------------------------------------------------------
# Google's granular Laplace: round to a multiple of r = 2^k, add r times discrete Laplace noise
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GranularParameters:
    """Parameters of the granular Laplace mechanism for the identity on [0, 1]^n (l1 sensitivity n).

    ``r`` is the granularity, the smallest power of two ``>= (n / epsilon) 2^-bits``; ``t`` the integer
    scale of the discrete Laplace noise, ``t >= (n / r + n) / epsilon``.  Rounding moves each
    coordinate by at most ``r / 2``, so neighbours' rounded values differ by at most ``n + n r`` in
    l1, that is ``n / r + n`` steps of ``r``: Google's accounting (sensitivity ``Delta + r``), with one
    ``r`` per coordinate.
    """

    epsilon: float
    n: int
    r: float
    t: int

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon")
        check_int(self.n, "n", minimum=1)
        r = check_positive(self.r, "r")
        if math.frexp(r)[0] != 0.5:
            raise ValueError(f"r must be a power of two, got {r!r}")
        check_int(self.t, "t", minimum=1, maximum=MAX_SCALE_NUMERATOR - 1)


def granular_parameters(epsilon: float, n: int = 1, bits: int = 40) -> GranularParameters:
    """The granular Laplace mechanism's parameters (``bits = 40`` as in Google's libraries)."""
    eps = check_positive(epsilon, "epsilon")
    n = check_int(n, "n", minimum=1, maximum=MAX_ELEMENTS)
    bits = check_int(bits, "bits", minimum=0, maximum=48)
    lam = n / eps
    if not (math.isfinite(lam) and lam < 2.0**1000):
        raise ValueError(f"epsilon is too small for n = {n}: the scale n / epsilon overflows")
    frac, exp = math.frexp(lam * 2.0**-bits)  # exact: a power-of-two scaling
    r = math.ldexp(1.0, exp - 1 if frac == 0.5 else exp)
    steps = Fraction(n) / Fraction(r) + n  # l1 distance of the rounded neighbours, in units of r
    t = math.ceil(steps / Fraction(eps))  # Fraction(eps) is the exact value of the float epsilon
    if t >= MAX_SCALE_NUMERATOR:
        raise ValueError(f"bits = {bits} makes the noise scale too large; use fewer bits")
    return GranularParameters(epsilon=eps, n=n, r=r, t=t)


def _check_granular(params: object) -> GranularParameters:
    if not isinstance(params, GranularParameters):
        raise TypeError(f"params must be GranularParameters (from granular_parameters), got {type(params).__name__}")
    return params


def granular_round(x: ArrayLike, params: GranularParameters) -> NDArray[np.int64]:
    """``x / r`` rounded to the nearest integer (ties to even); exact, since ``r`` is a power of two."""
    params = _check_granular(params)
    return _granular_steps(check_float_array(x, "x", finite=True), params, "x")


def _granular_steps(x: NDArray[np.float64], params: GranularParameters, name: str) -> NDArray[np.int64]:
    with np.errstate(over="ignore"):  # a quotient overflowing to inf is refused just below
        steps = np.rint(x / params.r)
    if not (np.abs(steps) < 2.0**62).all():
        raise ValueError(f"{name} is too large for this granularity ({name} / r must stay below 2**62)")
    return steps.astype(np.int64)


def granular_loss(params: GranularParameters, x0: float = 0.0, x1: float = 1.0) -> Fraction:
    """Exact privacy loss between the datasets ``(x0, ..., x0)`` and ``(x1, ..., x1)`` in [0, 1]^n.

    The output is ``r (m + Z)`` with ``m = round(x / r)`` and ``Z`` discrete Laplace of scale ``t``, so
    ``ln P(r j | x0) / P(r j | x1) = (|j - m1| - |j - m0|) / t`` per coordinate, at most
    ``|m0 - m1| / t`` (attained for ``j`` beyond both): the loss is ``n |m0 - m1| / t``, a Fraction.
    """
    params = _check_granular(params)
    m0 = int(_granular_steps(np.array(check_real(x0, "x0")), params, "x0"))
    m1 = int(_granular_steps(np.array(check_real(x1, "x1")), params, "x1"))
    return Fraction(params.n * abs(m0 - m1), params.t)


def granular_reachable(y: ArrayLike, params: GranularParameters) -> NDArray[np.bool_]:
    """Exactly: can a coordinate of the granular Laplace mechanism output ``y``, from any input?

    The noise ``Z`` puts positive mass on every integer, so the outputs are all multiples ``r j``
    with ``|j| < 2^53`` (those convert to doubles exactly), whatever the input.
    """
    y_arr = check_float_array(y, "y")
    params = _check_granular(params)
    with np.errstate(over="ignore"):  # |y| / r beyond the float range is not reachable: inf, refused below
        steps = y_arr / params.r  # exact: r is a power of two
    return np.isfinite(steps) & (np.abs(steps) < 2.0**53) & (steps == np.round(steps))
