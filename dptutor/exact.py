"""Exact sampling of the discrete Laplace and discrete Gaussian distributions.

The discrete Laplace distribution with scale ``t > 0`` puts mass ``P(k) ∝ exp(-|k| / t)`` on every
integer ``k`` (scipy calls it ``dlaplace`` with ``a = 1 / t``).  Canonne, Kamath and Steinke (2020)
sample it *exactly*: every decision is a comparison of integers drawn uniformly at random, so no
floating-point rounding can make an output more (or less) likely than the formula says, and no
output is impossible.  Their three steps, for ``t = s / d`` in lowest terms (:mod:`dptutor._cks`):

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
route (the *fast path*, :mod:`dptutor._exact_fast`): a fair sign and the magnitude ``X = floor(t E)``
with ``E = -ln U`` for a uniform real ``U`` (inversion: ``P(X >= x) = P(U < exp(-x / t)) = exp(-x / t)``),
where ``X`` is read off 53 random bits of ``U``.  Other scales run the three steps above on arrays.  The
discrete Gaussian (Algorithm 3, :func:`sample_discrete_gaussian`) uses the same fast path for its
proposal and compares the random bits of its acceptance test with an exact integer table.

What is exact, and under which assumption.  Every output is a function of the integers that
``rng.integers`` returns, and every comparison that decides an output compares integers: the random
bits with integer bounds of ``exp(-gamma)`` computed in integer arithmetic (:mod:`dptutor._lazy_bits`).
On the fast path, floating point (numpy's ``log``) only *proposes* each magnitude; a proposal is used
only when integer bounds prove it, and any other lane is settled from the same bits by the exact
integer search, drawing more bits only where 53 do not decide.  So the draws follow the discrete
Laplace (discrete Gaussian) law exactly, with no assumption on the accuracy of the platform's ``log`` or
``exp``: the only assumption is that ``rng.integers`` returns independent uniform integers.  A poor
float ``log`` only makes the sampler slower (the tests skew ``log`` and ``exp`` by a relative 2^-30 and
2^-10 and get the same draws from the same seed).  Floats also size the batches (how many integers are
drawn per round), which never changes the law.  The argument (the lazy comparison of a random real
with a number known to lie between two integers over a power of two) is in :mod:`dptutor._lazy_bits`.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import check_float_array, check_rng, check_size, is_bool, shown
from dptutor._cks import (
    bernoulli_exp_big_python,
    discrete_laplace_one,
    gauss_accept,
    sample_laplace_cks,
)
from dptutor._exact_fast import fast_laplace_ok, gauss_table, sample_gaussian_fast, sample_laplace_fast
from dptutor.granular import (
    GranularParameters,
    granular_loss,
    granular_parameters,
    granular_reachable,
    granular_round,
)
from dptutor._lazy_bits import MAX_SCALE_NUMERATOR

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


#: The most draws one call may ask of a sampler that works one draw at a time in Python integers (the
#: ``_python`` references, and :func:`sample_discrete_gaussian` when its acceptance table does not fit):
#: at 30-150 us a draw, 2**20 draws take up to a few minutes, and the 2**28 of ``check_size`` would take hours.
_MAX_SLOW_DRAWS: int = 1 << 20


def check_scale(scale: object, name: str = "scale") -> Fraction:
    """``scale`` as a positive :class:`~fractions.Fraction`, converted exactly.

    An int or a Fraction is taken as it is.  A float is converted exactly, as OpenDP does:
    ``Fraction(x)`` of a finite float is the number the float holds, so ``0.1`` becomes
    ``3602879701896397 / 2**55``, not ``1 / 10`` (pass ``Fraction(1, 10)`` for that).

    Parameters
    ----------
    scale : int, fractions.Fraction or float
        A positive, finite number (a numpy scalar or 0-d array of these types also works).
    name : str, optional
        The parameter's name in error messages.

    Returns
    -------
    fractions.Fraction
        The exact value, with a numerator below ``2**53``.

    Raises
    ------
    TypeError
        If ``scale`` is a bool or not a real number of these types.
    ValueError
        If ``scale`` is NaN, infinite, ``<= 0``, or its numerator is ``2**53`` or more.

    Examples
    --------
    >>> check_scale(0.5)
    Fraction(1, 2)
    """
    if isinstance(scale, np.ndarray) and scale.ndim == 0:
        scale = scale[()]
    if is_bool(scale) or not isinstance(scale, (numbers.Integral, Fraction, float, np.floating)):
        raise TypeError(
            f"{name} must be a positive int, fractions.Fraction or float, got {type(scale).__name__}"
        )
    if isinstance(scale, (float, np.floating)):
        if not np.isfinite(scale):
            raise ValueError(f"{name} must be finite, got {shown(scale, str)}")
        t = Fraction(*scale.as_integer_ratio())  # exact: the value the float holds (a longdouble's too)
    else:
        t = Fraction(int(scale)) if isinstance(scale, numbers.Integral) else scale
    if t <= 0:
        raise ValueError(f"{name} must be > 0, got {shown(scale, str)}")
    if t.numerator >= MAX_SCALE_NUMERATOR:
        raise ValueError(f"{name} must have a numerator below 2**53, got {shown(t, str)}")
    return t


def _acceptance(t: Fraction) -> float:
    """Probability that one candidate of :func:`dptutor._cks.sample_laplace_cks` is kept (batch sizing only).

    ``P(keep U) = (1 - 1/e) / (s (1 - exp(-1/s)))`` and ``P(not (B = 1 and Y = 0)) = (1 + exp(-1/t)) / 2``.
    A float is fine here: it only chooses how many candidates to draw per round, never a draw.
    """
    s = t.numerator
    keep_u = -math.expm1(-1.0) / (s * -math.expm1(-1.0 / s))
    return keep_u * (1.0 + math.exp(-float(min(1 / t, 1000)))) / 2.0  # exp(-1/t); a tiny t would give 1/0.0


def sample_discrete_laplace(scale: int | Fraction | float, size: int | tuple[int, ...],
                            rng: np.random.Generator) -> NDArray[np.int64]:
    """Exact discrete Laplace draws, ``P(k) ∝ exp(-|k| / scale)``, as an int64 array of shape ``size``.

    The law of Canonne, Kamath and Steinke (2020), Algorithm 2, vectorised: by exact inversion for
    ``1 <= scale <= 2^24`` (:func:`dptutor._exact_fast.sample_laplace_fast`), by the algorithm's own steps
    otherwise (see the module docstring).  Every decision compares integers; floats only propose
    candidates that integers then check, so the law is exact whatever the float library does.

    Parameters
    ----------
    scale : int, fractions.Fraction or float
        The scale ``t > 0``, converted exactly (:func:`check_scale`).
    size : int or tuple of int
        Output shape.
    rng : numpy.random.Generator
        The source of randomness (only ``rng.integers`` is called).

    Returns
    -------
    numpy.ndarray of int64
        Draws of shape ``size``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``scale``, ``size`` or ``rng`` (the message names the parameter).

    Examples
    --------
    >>> import numpy as np
    >>> sample_discrete_laplace(10, 3, np.random.default_rng(0)).shape
    (3,)
    """
    t = check_scale(scale)
    shape = check_size(size)
    rng = check_rng(rng)
    s, d = t.numerator, t.denominator
    total = math.prod(shape)
    if fast_laplace_ok(s, d):
        accept = (1.0 + math.exp(-1.0 / float(t))) / 2.0  # P(not (negative, 0)); sizes the chunks only
        return sample_laplace_fast(s, d, total, rng, accept).reshape(shape)
    return sample_laplace_cks(s, d, total, rng, _acceptance(t)).reshape(shape)


def sample_discrete_laplace_python(
    scale: int | Fraction | float, size: int | tuple[int, ...], rng: np.random.Generator
) -> NDArray[np.int64]:
    """The reference: Canonne-Kamath-Steinke's Algorithm 2 in plain Python, one draw at a time.

    Same law as :func:`sample_discrete_laplace` (not the same draws for a seed: the vectorised
    version consumes the random integers in a different order).

    Parameters
    ----------
    scale : int, fractions.Fraction or float
        The scale ``t > 0``, converted exactly (:func:`check_scale`).
    size : int or tuple of int
        Output shape, at most 2**20 draws (one at a time in Python).
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of int64
        Draws of shape ``size``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``scale``, ``size`` or ``rng``.
    """
    t = check_scale(scale)
    shape = check_size(size, max_elements=_MAX_SLOW_DRAWS)
    rng = check_rng(rng)
    s, d = t.numerator, t.denominator
    total = math.prod(shape)
    return np.array([discrete_laplace_one(s, d, rng) for _ in range(total)], dtype=np.int64).reshape(shape)


# ---------------------------------------------------------------------------------------------
# the discrete Gaussian: Canonne, Kamath and Steinke (2020), Algorithm 3
# ---------------------------------------------------------------------------------------------


def check_sigma(sigma: object, name: str = "sigma") -> Fraction:
    """``sigma`` as a positive :class:`~fractions.Fraction`, converted exactly (see :func:`check_scale`).

    The sampler is exact for a rational ``sigma^2``; a rational ``sigma`` gives one.  When ``sigma^2 = p / q``
    has large ``p`` or ``q`` (a float such as ``2.3`` has ``q = 2^100``), every acceptance test runs on
    Python integers: exact, but slower.

    Parameters
    ----------
    sigma : int, fractions.Fraction or float
        The scale parameter, positive and finite.
    name : str, optional
        The parameter's name in error messages.

    Returns
    -------
    fractions.Fraction
        The exact value.

    Raises
    ------
    TypeError
        If ``sigma`` is a bool or not a number of these types.
    ValueError
        If ``sigma`` is NaN, infinite, or outside ``[2**-31, 2**31]``.
    """
    sig = check_scale(sigma, name)
    if not Fraction(1, 1 << 31) <= sig <= 1 << 31:
        raise ValueError(f"{name} must lie in [2**-31, 2**31], got {shown(sig, str)}")
    return sig


def _gauss_parameters(sig: Fraction) -> tuple[int, int, int]:
    """``(p, q, t)`` with ``sigma^2 = p / q`` in lowest terms and ``t = floor(sigma) + 1``."""
    var = sig * sig
    return var.numerator, var.denominator, math.floor(sig) + 1


def sample_discrete_gaussian(sigma: int | Fraction | float, size: int | tuple[int, ...],
                             rng: np.random.Generator) -> NDArray[np.int64]:
    """Exact discrete Gaussian draws, ``P(k) ∝ exp(-k^2 / (2 sigma^2))`` on the integers, as int64.

    Canonne, Kamath and Steinke (2020), Algorithm 3, vectorised: propose ``Y`` discrete Laplace of
    scale ``t = floor(sigma) + 1`` and keep it with probability ``exp(-(|Y| - sigma^2 / t)^2 / (2 sigma^2))``.
    When the acceptance table fits (``sigma`` up to about 10^5, :func:`dptutor._exact_fast.gauss_table`),
    both steps take the fast path (:func:`dptutor._exact_fast.sample_gaussian_fast`: inversion and lazy
    comparison of random bits with integer bounds); otherwise the proposal is
    :func:`sample_discrete_laplace` and the test runs the Bernoulli(exp(-gamma)) loops on integers
    (:func:`dptutor._cks.gauss_accept`).  Same exact law either way (see the module docstring).
    ``sigma`` is the scale parameter (the variance of the discrete law is slightly below ``sigma^2``).

    Parameters
    ----------
    sigma : int, fractions.Fraction or float
        The scale, converted exactly (:func:`check_sigma`).
    size : int or tuple of int
        Output shape; at most 2**20 draws when the acceptance table does not fit (then every
        test runs in Python integers: ``sigma`` above about 1e5, or ``sigma^2`` with a large
        numerator or denominator, e.g. a float).
    rng : numpy.random.Generator
        The source of randomness (only ``rng.integers`` is called).

    Returns
    -------
    numpy.ndarray of int64
        Draws of shape ``size``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``sigma``, ``size`` or ``rng`` (the message names the parameter).

    Examples
    --------
    >>> import numpy as np
    >>> sample_discrete_gaussian(3, (2, 2), np.random.default_rng(0)).shape
    (2, 2)
    """
    sig = check_sigma(sigma)
    shape = check_size(size)
    rng = check_rng(rng)
    p, q, t = _gauss_parameters(sig)
    total = math.prod(shape)
    table = gauss_table(p, q, t)
    if table is None and total > _MAX_SLOW_DRAWS:
        raise ValueError(f"size asks for {total:,} draws, more than the limit of {_MAX_SLOW_DRAWS:,} for sigma = {sig}, "
                         "whose draws are tested in Python integers (a sigma up to about 1e5 with a small numerator "
                         "and denominator, such as Fraction(23, 10) for 2.3, takes the fast path)")
    # A float is fine here: the acceptance probability only sizes the batches, never decides a draw.
    accept = _gauss_acceptance(float(sig), t)
    if table is not None:
        per_candidate = accept * (1.0 + math.exp(-1.0 / t)) / 2.0  # the proposal's own (negative, 0) rejection
        return sample_gaussian_fast(p, q, t, total, table, rng, per_candidate).reshape(shape)
    out = np.empty(total, dtype=np.int64)
    filled = 0
    while filled < total:
        need = total - filled
        batch = int(need / accept * 1.03) + 64
        y = sample_discrete_laplace(t, batch, rng)
        y = y[gauss_accept(y, p, q, t, rng)]
        take = min(need, y.size)
        out[filled : filled + take] = y[:take]
        filled += take
    return out.reshape(shape)


def _gauss_acceptance(sig: float, t: int) -> float:
    """The acceptance probability of Algorithm 3, from the two normalisers (batch sizing only)."""
    if sig > 1e4:  # Poisson summation, exact in double (the sum below, cut at 1e6 terms, was 20x short at 2**31)
        gauss = math.sqrt(2.0 * math.pi) * sig
    else:
        half = int(40.0 * max(sig, float(t))) + 1
        k = np.arange(-half, half + 1, dtype=np.float64)
        gauss = np.exp(-k * k / (2.0 * sig * sig)).sum()
    lap_norm = (1.0 + math.exp(-1.0 / t)) / -math.expm1(-1.0 / t)
    # P(accept) = sum_k Lap(k) exp(-(|k| - s^2/t)^2 / 2 s^2) = gauss * exp(-s^2 / (2 t^2)) / lap_norm
    return float(max(0.05, min(1.0, gauss * math.exp(-sig * sig / (2.0 * t * t)) / lap_norm)))


def sample_discrete_gaussian_python(
    sigma: int | Fraction | float, size: int | tuple[int, ...], rng: np.random.Generator
) -> NDArray[np.int64]:
    """The reference: Canonne-Kamath-Steinke's Algorithm 3 in plain Python, one draw at a time.

    Parameters
    ----------
    sigma : int, fractions.Fraction or float
        The scale, converted exactly (:func:`check_sigma`).
    size : int or tuple of int
        Output shape, at most 2**20 draws (one at a time in Python).
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of int64
        Draws of shape ``size``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``sigma``, ``size`` or ``rng``.
    """
    sig = check_sigma(sigma)
    shape = check_size(size, max_elements=_MAX_SLOW_DRAWS)
    rng = check_rng(rng)
    p, q, t = _gauss_parameters(sig)
    den = 2 * p * q * t * t
    total = math.prod(shape)
    out: list[int] = []
    while len(out) < total:
        y = discrete_laplace_one(t, 1, rng)
        if bernoulli_exp_big_python((q * t * abs(y) - p) ** 2, den, rng):
            out.append(y)
    return np.array(out, dtype=np.int64).reshape(shape)


def discrete_gaussian_pmf(k: ArrayLike, sigma: int | Fraction | float) -> NDArray[np.float64]:
    """``P(K = k)`` for the discrete Gaussian of scale ``sigma``: ``exp(-k^2 / 2 sigma^2) / N``, in floats.

    The normaliser ``N = sum_k exp(-k^2 / 2 sigma^2)`` is summed over ``|k| <= K`` with
    ``K = ceil(40 sigma) + 1``; the rest is below ``2 exp(-800) / (1 - exp(-40 / sigma))``, far below
    a double's resolution of ``N >= 1``.

    Parameters
    ----------
    k : array_like
        Integers (as ints or integral floats).
    sigma : int, fractions.Fraction or float
        The scale (:func:`check_sigma`).

    Returns
    -------
    numpy.ndarray of float64
        The probabilities, shaped like ``k``.

    Raises
    ------
    ValueError
        If ``k`` holds a non-integer, NaN or inf, or ``sigma`` is invalid.
    TypeError
        If ``sigma`` has a wrong type.
    """
    sig = float(check_sigma(sigma))
    arr = check_float_array(k, "k", finite=True)
    if not np.all(arr == np.round(arr)):
        raise ValueError("k must hold integers")
    if sig > 1e4:  # Poisson summation: N = sqrt(2 pi) sigma (1 + 2 exp(-2 pi^2 sigma^2) + ...), exact in double
        norm = math.sqrt(2.0 * math.pi) * sig  # (summing 80 sigma terms would exhaust memory near 2**31)
    else:
        half = math.ceil(40.0 * sig) + 1
        grid = np.arange(-half, half + 1, dtype=np.float64)
        norm = math.fsum(np.exp(-grid * grid / (2.0 * sig * sig)))
    with np.errstate(over="ignore"):  # k^2 overflowing to inf has probability exp(-inf) = 0, correctly
        return np.exp(-arr * arr / (2.0 * sig * sig)) / norm
