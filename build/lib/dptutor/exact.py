"""Exact sampling of the discrete Laplace distribution with integer arithmetic only.

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

:func:`sample_discrete_laplace` runs these steps on whole numpy arrays at once (every lane of a
loop shares the same ``k``, so each round is one call of ``rng.integers`` with a scalar bound);
:func:`sample_discrete_laplace_python` is the same algorithm one draw at a time in plain Python,
the reference and the baseline of ``benchmarks/bench_exact.py``.  Randomness comes only from
``rng.integers``, so a seed reproduces the draws on every platform.
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

    Canonne, Kamath and Steinke (2020), Algorithm 2, vectorised (see the module docstring).
    ``scale`` is a positive int or :class:`~fractions.Fraction` (numerator below 2**53);
    randomness comes only from ``rng.integers``.
    """
    t = check_scale(scale)
    shape = check_size(size)
    rng = check_rng(rng)
    s, d = t.numerator, t.denominator
    total = math.prod(shape)
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


def _bernoulli_exp_python(num: int, den: int, rng: np.random.Generator) -> bool:
    """``Bernoulli(exp(-num / den))`` for ``0 <= num <= den``, one draw (step 1)."""
    k = 2 if num == den else 1  # A_1 ~ Bernoulli(1) is certain: skip its draw, as the vectorised code does
    while int(rng.integers(0, den * k)) < num:
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
    out = []
    while len(out) < total:
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
        out.append(-y if negative else y)
    return np.array(out, dtype=np.int64).reshape(shape)


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
