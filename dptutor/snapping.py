"""The snapping mechanism's ingredients and its exact output distribution (Mironov 2012).

Mironov's fix for the floating-point Laplace mechanism: draw a uniform double ``u`` from every binade
(:func:`sample_uniform_double`), compute ``x + S lambda ln(u)`` clamped to ``[-B, B]`` and rounded to a
power-of-two grid ``Lambda >= lambda`` (:func:`snap`).  Its outputs are finitely many grid points, and
:func:`snapping_pmf` gives the exact probability of each (as Fractions), so its privacy loss
(:func:`snapping_loss`) and the set of outputs (:func:`snapping_reachable`) are known exactly.  The
names are also importable from :mod:`dptutor.floating`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import (
    MAX_ELEMENTS,
    check_broadcast,
    check_float_array,
    check_int,
    check_positive,
    check_real,
    check_rng,
    is_bool,
    shown,
)
from dptutor.renyi import round_up

__all__ = [
    "sample_uniform_double",
    "SnappingParameters",
    "snapping_parameters",
    "snap",
    "snapping_outputs",
    "snapping_pmf",
    "snapping_loss",
    "log_ratio",
    "snapping_reachable",
]

#: The smallest binade of :func:`sample_uniform_double`: ``u >= 2^-1022`` (no subnormals).
_LOWEST_BINADE: int = 1022
_U_LOW_BITS = int(np.float64(2.0**-_LOWEST_BINADE).view(np.int64))
_U_HIGH_BITS = int(np.float64(1.0 - 2.0**-53).view(np.int64))


def sample_uniform_double(size: int, *, rng: np.random.Generator) -> NDArray[np.float64]:
    """``U*`` of the snapping mechanism: a uniform real in (0, 1) rounded *down* to a double.

    The binade ``e`` (``2^-e <= u < 2^(1-e)``) is geometric, ``P(e) = 2^-e``, read off the leading
    zeros of random 52-bit integers; the 52 mantissa bits are uniform.  Every double ``u`` in the
    support then has probability ``ulp(u) = 2^-(52 + e)``: the length of the reals that round down
    to it.  Binades below ``2^-1022`` are merged into the lowest one (so no subnormals), which
    :func:`snapping_pmf` accounts for.  Randomness: ``rng.integers`` only.

    Parameters
    ----------
    size : int
        Number of draws, ``>= 0``.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray of float64
        ``size`` doubles in [2^-1022, 1).

    Raises
    ------
    TypeError, ValueError
        For a bad ``size`` or ``rng``.
    """
    size = check_int(size, "size", minimum=0, maximum=MAX_ELEMENTS)
    rng = check_rng(rng)
    e = np.ones(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        w = rng.integers(0, 1 << 52, size=pending.size, dtype=np.int64)
        bit_length = np.frexp(w.astype(np.float64))[1]  # exact: w < 2^53; 0 for w = 0
        e[pending] += 52 - bit_length
        pending = pending[(w == 0) & (e[pending] < _LOWEST_BINADE)]
    np.minimum(e, _LOWEST_BINADE, out=e)
    mantissa = rng.integers(0, 1 << 52, size=size, dtype=np.int64)
    return np.ldexp((mantissa + (1 << 52)).astype(np.float64), -52 - e)


def _uniform_double_cdf(u: float) -> Fraction:
    """``P(U* <= u)`` exactly, for ``u`` in the support of :func:`sample_uniform_double`."""
    from fractions import Fraction

    frac, exp = math.frexp(u)  # u = frac 2^exp, frac in [1/2, 1): binade e = 1 - exp
    e = 1 - exp
    index = int(frac * 2**53) - (1 << 52)  # position of u inside its binade, 0 .. 2^52 - 1
    if e < _LOWEST_BINADE:
        below, per = Fraction(1, 2**e), Fraction(1, 2 ** (52 + e))
    else:  # the merged lowest binade carries the mass of everything below it
        below, per = Fraction(0), Fraction(1, 2 ** (51 + _LOWEST_BINADE))
    return below + (index + 1) * per


@dataclass(frozen=True)
class SnappingParameters:
    """Parameters of the snapping mechanism for the identity on [0, 1]^n (sensitivity 1 per coordinate).

    ``lam`` is the noise scale ``lambda = n (1 + 2^-49 B) / epsilon``, rounded up (Mironov's bound
    ``1/lambda + 2^-49 B / lambda`` per coordinate, times ``n`` coordinates, equals ``epsilon``),
    ``grid`` the output spacing ``Lambda`` (the smallest power of two ``>= lambda``), ``bound`` the
    clamp ``B``.

    Parameters
    ----------
    epsilon : float
        The privacy budget, ``> 0``.
    n : int
        The dimension, ``>= 1``.
    bound : float
        The clamp ``B > 0``.
    lam : float
        The noise scale ``lambda > 0``.
    grid : float
        The output spacing ``Lambda``, a power of two.

    Raises
    ------
    TypeError, ValueError
        For a field out of range (the message names it).
    """

    epsilon: float
    n: int
    bound: float
    lam: float
    grid: float

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon")
        check_int(self.n, "n", minimum=1)
        check_positive(self.bound, "bound")
        check_positive(self.lam, "lam")
        grid = check_positive(self.grid, "grid")
        if math.frexp(grid)[0] != 0.5:
            raise ValueError(f"grid must be a power of two, got {shown(grid)}")
        if not self.lam <= grid < 2.0 * self.lam:
            raise ValueError(f"grid must be the smallest power of two >= lam = {shown(self.lam)}, got {shown(grid)}")


def snapping_parameters(epsilon: float, n: int = 1, bound: float | None = None) -> SnappingParameters:
    """The snapping mechanism's parameters; ``bound=None`` clamps at ``B = 32 n / epsilon``.

    That default keeps Mironov's condition ``lambda < B < 2^46 lambda`` for ``epsilon >= n / 2^48``
    and moves an output only when the noise exceeds about 32 scales (probability ``e^-32``, about 1e-14).
    ``lambda = n (1 + 2^-49 B) / epsilon`` is computed exactly and rounded up, so the guarantee
    ``n (1 + 2^-49 B) / lambda`` is never above ``epsilon``; the condition is checked exactly.

    Parameters
    ----------
    epsilon : float
        The privacy budget, ``> 0``.
    n : int, optional
        The dimension, ``>= 1`` (default 1).
    bound : float or None, optional
        The clamp ``B > 0`` (default ``32 n / epsilon``).

    Returns
    -------
    SnappingParameters
        ``lambda``, ``Lambda`` and ``B`` for these settings.

    Raises
    ------
    TypeError, ValueError
        For a bad ``epsilon``, ``n`` or ``bound``, a scale that overflows, or a ``B`` outside Mironov's
        condition ``lambda < B < 2^46 lambda`` (the message names ``bound``, or ``epsilon`` for the default).
    """
    eps = check_positive(epsilon, "epsilon")
    n = check_int(n, "n", minimum=1, maximum=MAX_ELEMENTS)
    big_b = 32.0 * n / eps if bound is None else check_positive(bound, "bound")
    blame = "epsilon" if bound is None else "bound"
    if not big_b < 2.0**1000:
        what = f"the default bound 32 n / epsilon overflows for n = {n}" if bound is None else f"bound = {big_b!r}"
        raise ValueError(f"{blame} is too {'small' if bound is None else 'large'}: {what} (B must stay below 2**1000)")
    exact = Fraction(n) * (1 + Fraction(big_b) / 2**49) / Fraction(eps)
    lam = round_up(exact)  # rounded to nearest it was below the exact scale about half the time
    if not lam < 2.0**1000:
        raise ValueError(f"epsilon is too small (or bound too large): the scale lambda = {lam:g} is not usable")
    if not Fraction(lam) < Fraction(big_b) < 2**46 * Fraction(lam):  # Mironov (2012), Theorem 1's hypothesis
        raise ValueError(f"{blame} gives B = {big_b!r} outside Mironov's condition lambda < B < 2**46 lambda "
                         f"(lambda = {lam!r} for epsilon = {eps!r}, n = {n})")
    frac, exp = math.frexp(lam)
    grid = math.ldexp(1.0, exp - 1 if frac == 0.5 else exp)
    return SnappingParameters(epsilon=eps, n=n, bound=big_b, lam=lam, grid=grid)


def _check_snapping(params: object) -> SnappingParameters:
    if not isinstance(params, SnappingParameters):
        raise TypeError(f"params must be SnappingParameters (from snapping_parameters), got {type(params).__name__}")
    return params


def snap(x: NDArray[np.float64], u: NDArray[np.float64], negative: NDArray[np.bool_], params: SnappingParameters) -> NDArray[np.float64]:
    """The snapping mechanism's arithmetic: ``clamp_B(round_Lambda(clamp_B(x) + S lambda ln(u)))``.

    ``S = +1`` (noise ``lambda ln u <= 0``) unless ``negative``, where ``S = -1``; ``round_Lambda``
    rounds to the nearest multiple of ``Lambda`` (ties to even; ``y / Lambda`` is exact).
    Shared by :func:`dptutor.mechanisms.snapping_mechanism` and :func:`snapping_pmf`.

    Parameters
    ----------
    x : numpy.ndarray
        Inputs, finite.
    u : numpy.ndarray
        Uniform doubles in (0, 1], broadcast against ``x``.
    negative : numpy.ndarray of bool
        The signs ``S = -1``, broadcast against ``x``.
    params : SnappingParameters
        The mechanism's parameters.

    Returns
    -------
    numpy.ndarray of float64
        The outputs.

    Raises
    ------
    TypeError, ValueError
        For a bad argument or shapes that do not broadcast (the message names it).
    """
    params = _check_snapping(params)
    x = check_float_array(x, "x", finite=True)
    u = check_float_array(u, "u")
    if not ((u > 0.0) & (u <= 1.0)).all():
        raise ValueError("u must lie in (0, 1]")
    try:
        neg = np.asarray(negative)
    except (TypeError, ValueError) as exc:  # ragged lists
        raise TypeError(f"negative must be an array of bools ({shown(exc, str)})") from None
    if neg.dtype != np.bool_:
        raise TypeError(f"negative must be an array of bools, got dtype {neg.dtype}")
    negative = neg
    check_broadcast({"x": x, "u": u, "negative": neg})
    xc = np.clip(x, -params.bound, params.bound)
    z = params.lam * np.log(u)
    y = xc + np.where(negative, -z, z)
    with np.errstate(over="ignore"):  # |y| / Lambda may overflow to inf; the clamp to [-B, B] is then exact
        return np.clip(np.rint(y / params.grid) * params.grid, -params.bound, params.bound)


def snapping_outputs(params: SnappingParameters) -> NDArray[np.float64]:
    """Every output the snapping mechanism can produce: multiples of ``Lambda`` in [-B, B] and ``+-B``.

    Parameters
    ----------
    params : SnappingParameters
        The mechanism's parameters.

    Returns
    -------
    numpy.ndarray of float64
        The possible outputs, sorted.

    Raises
    ------
    TypeError
        If ``params`` is not a :class:`SnappingParameters`.
    ValueError
        If there are more than :data:`~dptutor._validate.MAX_ELEMENTS` outputs (``bound / grid`` huge).
    """
    params = _check_snapping(params)
    ratio = params.bound / params.grid  # may be inf
    if not 2.0 * ratio + 3.0 <= MAX_ELEMENTS:
        raise ValueError(f"params give about {2.0 * ratio + 3.0:.3g} outputs (bound / grid too large), more than {MAX_ELEMENTS:,}")
    j = math.floor(ratio)
    grid = np.arange(-j, j + 1, dtype=np.float64) * params.grid
    return np.unique(np.concatenate([[-params.bound], grid, [params.bound]]))


#: The most outputs :func:`snapping_pmf` (and so :func:`snapping_loss`, :func:`snapping_reachable`) computes.
MAX_PMF_OUTPUTS: int = 1 << 14


def snapping_pmf(x: float, params: SnappingParameters) -> tuple[NDArray[np.float64], list]:
    """Exact output distribution of one coordinate of the snapping mechanism on input ``x``.

    Returns ``(outputs, probabilities)`` with the probabilities as :class:`~fractions.Fraction`.
    For each sign ``S`` the output is monotone in ``U*``, so ``P(output <= v)`` is ``P(U* <= u_v)``
    (or ``P(U* >= u_v)``) for the ``u_v`` found by a binary search over the doubles of the support
    (ordered like their bit patterns), and ``P(U* <= u)`` is exact (:func:`_uniform_double_cdf`).
    Assumes ``np.log`` is monotone.

    Parameters
    ----------
    x : float
        The input coordinate, finite.
    params : SnappingParameters
        The mechanism's parameters.

    Returns
    -------
    outputs : numpy.ndarray of float64
        The possible outputs, sorted.
    probabilities : list of fractions.Fraction
        Their exact probabilities.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x`` or ``params``, or more than ``MAX_PMF_OUTPUTS`` outputs.
    """
    from fractions import Fraction

    x = check_real(x, "x")
    params = _check_snapping(params)
    outputs = snapping_outputs(params)
    m = outputs.size
    if m > MAX_PMF_OUTPUTS:  # ~0.1 ms of exact arithmetic per output: 2e5 outputs took 10 s, 2^28 would take days
        raise ValueError(f"params give {m:,} outputs (bound / grid too large), more than the {MAX_PMF_OUTPUTS:,} "
                         "that the exact pmf handles")
    xs = np.full(m, x)

    def out_of(bits: NDArray[np.int64], negative: bool) -> NDArray[np.float64]:
        return snap(xs, bits.view(np.float64), np.full(m, negative), params)

    def search(negative: bool) -> NDArray[np.int64]:
        # S = +1: output non-decreasing in u; find the last u with output <= v (LOW - 1 if none).
        # S = -1: output non-increasing; find the first u with output <= v (HIGH + 1 if none).
        lo = np.full(m, _U_LOW_BITS, dtype=np.int64)
        hi = np.full(m, _U_HIGH_BITS + 1, dtype=np.int64)
        for _ in range(64):
            open_ = lo < hi
            if not open_.any():
                break
            mid = np.minimum((lo + hi) // 2, _U_HIGH_BITS)
            o = out_of(mid, negative)
            cond = o > outputs if not negative else o <= outputs  # the predicate that turns true
            hi = np.where(open_ & cond, mid, hi)
            lo = np.where(open_ & ~cond, mid + 1, lo)
        return lo  # first u (bits) where the predicate holds, HIGH + 1 if never

    def cdf_below(bits: int) -> Fraction:  # P(U* < u) for u given by its bits (may be HIGH + 1)
        if bits <= _U_LOW_BITS:
            return Fraction(0)
        if bits > _U_HIGH_BITS:
            return Fraction(1)
        return _uniform_double_cdf(float(np.int64(bits - 1).view(np.float64)))

    first_above_pos = search(False)  # S = +1: P(output <= v) = P(U* < first u with output > v)
    first_below_neg = search(True)  # S = -1: P(output <= v) = 1 - P(U* < first u with output <= v)
    cdf = [
        (cdf_below(int(a)) + (1 - cdf_below(int(b)))) / 2
        for a, b in zip(first_above_pos.tolist(), first_below_neg.tolist())
    ]
    probs = [cdf[0]] + [cdf[i] - cdf[i - 1] for i in range(1, m)]
    return outputs, probs


def log_ratio(p: "Fraction", q: "Fraction") -> float:
    """``ln(p / q)`` for non-negative Fractions, evaluated with 50 significant digits (mpmath) and
    rounded once to a float; ``inf``/``-inf`` when exactly one is 0, and 0 when both are.

    Parameters
    ----------
    p, q : fractions.Fraction or int
        Non-negative numbers.

    Returns
    -------
    float
        ``ln(p / q)``, possibly ``inf``, ``-inf`` or 0 as above.

    Raises
    ------
    TypeError
        If ``p`` or ``q`` is not a Fraction or an int.
    ValueError
        If ``p`` or ``q`` is negative.
    """
    import mpmath
    from fractions import Fraction

    for name, value in (("p", p), ("q", q)):
        if is_bool(value) or not isinstance(value, (int, Fraction)):
            raise TypeError(f"{name} must be a Fraction or an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {shown(value)}")
    if p == 0 and q == 0:
        return 0.0
    if q == 0:
        return math.inf
    if p == 0:
        return -math.inf
    with mpmath.workdps(50):
        ratio = (mpmath.mpf(p.numerator) * q.denominator) / (mpmath.mpf(p.denominator) * q.numerator)
        return float(mpmath.log(ratio))


def snapping_loss(params: SnappingParameters, x0: float = 0.0, x1: float = 1.0) -> float:
    """Exact privacy loss ``n max_v |ln P(v | x0) / P(v | x1)|`` of the snapping mechanism between the
    datasets ``(x0, ..., x0)`` and ``(x1, ..., x1)`` of dimension ``params.n`` (coordinates are
    independent, so the worst output vector repeats the worst coordinate).

    Parameters
    ----------
    params : SnappingParameters
        The mechanism's parameters.
    x0, x1 : float, optional
        The two datasets' common coordinate (defaults 0 and 1).

    Returns
    -------
    float
        The exact loss (rounded once), possibly ``inf``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``params``, ``x0`` or ``x1``.
    """
    x0, x1 = check_real(x0, "x0"), check_real(x1, "x1")
    _, p0 = snapping_pmf(x0, params)
    _, p1 = snapping_pmf(x1, params)
    return params.n * max(abs(log_ratio(a, b)) for a, b in zip(p0, p1))


def snapping_reachable(y: ArrayLike, x: float, params: SnappingParameters) -> NDArray[np.bool_]:
    """Exactly: can one coordinate of the snapping mechanism on input ``x`` output ``y``?

    Parameters
    ----------
    y : array_like
        Candidate outputs.
    x : float
        The input coordinate.
    params : SnappingParameters
        The mechanism's parameters.

    Returns
    -------
    numpy.ndarray of bool
        True where ``y`` has positive probability.

    Raises
    ------
    TypeError, ValueError
        For a bad ``y``, ``x`` or ``params``.
    """
    y_arr = check_float_array(y, "y")
    params = _check_snapping(params)
    outputs, probs = snapping_pmf(x, params)
    possible = outputs[np.array([p > 0 for p in probs], dtype=bool)]
    return np.isin(y_arr, possible)
