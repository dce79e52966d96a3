"""Which doubles can a floating-point Laplace sampler output?  Exact answers, and the attack.

A Laplace sampler on a computer does not draw from the Laplace density: it maps a random integer
to a double.  numpy's ``Generator.random()`` returns ``u = k 2^-53`` for ``k`` uniform on
``{0, ..., 2^53 - 1}`` (the top 53 bits of a 64-bit word), and every inverse-CDF sampler then
computes a double from ``u``.  The samplers covered here (``sampler=``):

``"numpy"``        numpy's ``Generator.laplace`` (``random_laplace`` in numpy's C source): draw ``u``,
                   redraw ``u = 0``; if ``u >= 1/2`` return ``loc - scale * log(2.0 - u - u)``,
                   else ``loc + scale * log(u + u)``, with the C library's ``log``.
``"textbook"``     the paper's Eq. 5, ``b ln(2u) + mu`` / ``mu - b ln(2(1 - u))``, with ``np.log``
                   on the same ``u`` (:func:`dptutor.distributions.laplace_ppf_piecewise`).
``"inverse_cdf"``  ``dptutor.distributions.sample_laplace(method="inverse_cdf")``: the paper's Eq. 4
                   for ``mu = 0, b = 1`` on ``u``, then times ``scale``, then plus ``loc``.
``"fast"``         ``sample_laplace(method="fast")`` (numpy's ziggurat exponential with a random sign,
                   the noise of :func:`dptutor.mechanisms.laplace_mechanism`): see below.

For the first three, the map ``k -> output`` never decreases (each step, ``log``, a product by
``scale > 0``, a sum with ``loc``, rounds monotonically), so whether an output ``y`` can occur at
all is decided exactly by a binary search for the smallest ``k`` whose output is ``>= y``
(:func:`reachable`).  The fourth draws a 64-bit word whose low bits pick one of 256 ziggurat layers
and whose high bits pick a point inside it, and it may reject and draw again: there is no single
monotone integer to search; :func:`~dptutor.ziggurat.fast_possible` searches each layer instead and certifies
impossibility (a sound over-approximation of the outputs).  For any sampler at all,
:func:`off_grid` gives a weaker certificate that needs no knowledge of the sampler: ``loc + z`` rounded to a double is always a
multiple of ``2^(e - 53)`` where ``2^e <= |loc| < 2^(e+1)``, whatever the double ``z`` is.

Assumptions, stated once: the ``log`` functions are monotone (true of glibc's and numpy's), and nothing overflows:
:func:`laplace_from_index`, :func:`reachable` and the samplers refuse a ``scale`` with ``|loc| + scale * M`` infinite,
``M = 52 ln 2 ~ 36.04`` bounding the standard output (``M ~ 44.43`` for ``"fast"``): ``scale < 4.98e306`` (resp.
``4.04e306``) for ``loc = 0``.  :func:`laplace_from_index` is a replica checked draw for draw against numpy in the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._laplace_args import FAST_MAX, GRID_MAX, check_draws
from dptutor._validate import (
    MAX_ELEMENTS,
    check_choice,
    check_count,
    check_float_array,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_rng,
    shown,
)
from dptutor.distributions import CHUNK, laplace_ppf, laplace_ppf_piecewise, sample_laplace
from dptutor.snapping import (
    SnappingParameters,
    log_ratio,
    sample_uniform_double,
    snap,
    snapping_loss,
    snapping_outputs,
    snapping_parameters,
    snapping_pmf,
    snapping_reachable,
)
from dptutor.ziggurat import ZIGGURAT_R, fast_possible, same_double, ziggurat_widths

__all__ = [
    "EXACT_SAMPLERS",
    "SAMPLERS",
    "TESTS",
    "K_MAX",
    "laplace_from_index",
    "reachable",
    "off_grid",
    "ZIGGURAT_R",
    "ziggurat_widths",
    "fast_possible",
    "sample_floating_laplace",
    "AttackResult",
    "attack",
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

#: Samplers whose outputs :func:`reachable` decides exactly.
EXACT_SAMPLERS: tuple[str, ...] = ("numpy", "textbook", "inverse_cdf")
#: Every sampler :func:`sample_floating_laplace` can draw from.
SAMPLERS: tuple[str, ...] = EXACT_SAMPLERS + ("fast",)
#: The tests :func:`attack` can run.
TESTS: tuple[str, ...] = ("exact", "ziggurat", "grid")
#: The largest ``k`` (``u = k 2^-53`` runs over ``k = 1, ..., 2^53 - 1``; ``k = 0`` is redrawn).
K_MAX: int = (1 << 53) - 1
#: The most outputs per location :func:`attack` draws, by test; and the most :func:`reachable` decides.
_MAX_ATTACK_SIZE: dict[str, int] = {"exact": 1 << 20, "ziggurat": 1 << 16, "grid": MAX_ELEMENTS // 2}
_MAX_REACHABLE: int = 1 << 22
_TWO_M53 = 2.0**-53


# ---------------------------------------------------------------------------------------------
# the samplers as functions of the integer k
# ---------------------------------------------------------------------------------------------


def _libm_log(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """The C library's ``log`` (what numpy's C code calls), elementwise; ``np.log`` may differ.

    In chunks of 2**14: a list of 2**28 Python floats at once would take 8 GiB."""
    flat, out = a.ravel(), np.empty(a.size, dtype=np.float64)
    for start in range(0, a.size, 1 << 14):
        out[start : start + (1 << 14)] = [math.log(v) for v in flat[start : start + (1 << 14)].tolist()]
    return out.reshape(a.shape)


def _numpy_branches(u: NDArray[np.float64], loc: float, scale: float, log: Callable) -> NDArray[np.float64]:
    upper = u >= 0.5
    arg = np.where(upper, (2.0 - u) - u, u + u)  # both arguments in (0, 1]
    with np.errstate(over="ignore"):
        term = scale * log(arg)
        return np.where(upper, loc - term, loc + term)


def _as_u(k: NDArray[np.int64]) -> NDArray[np.float64]:
    return k.astype(np.float64) * _TWO_M53  # exact: k < 2^53


def _textbook(k: NDArray[np.int64], loc: float, scale: float) -> NDArray[np.float64]:
    return np.asarray(laplace_ppf_piecewise(_as_u(k), loc, scale), dtype=np.float64)


def _inverse_cdf(k: NDArray[np.int64], loc: float, scale: float) -> NDArray[np.float64]:
    out = np.array(laplace_ppf(_as_u(k)), dtype=np.float64, ndmin=1).reshape(k.shape)
    with np.errstate(over="ignore"):
        if scale != 1.0:  # the steps of sample_laplace, in its order, skipped when it skips them
            out *= scale
        if loc != 0.0:
            out += loc
    return out


def _functions(sampler: str, loc: float, scale: float) -> tuple[Callable, Callable]:
    """``(fast, exact)`` versions of ``k -> output``; they differ only for numpy (``np.log`` vs libm)."""
    if sampler == "numpy":
        return (
            lambda k: _numpy_branches(_as_u(k), loc, scale, np.log),
            lambda k: _numpy_branches(_as_u(k), loc, scale, _libm_log),
        )
    f = _textbook if sampler == "textbook" else _inverse_cdf
    g = lambda k: f(k, loc, scale)  # noqa: E731
    return g, g


def _check_loc_scale(loc: object, scale: object, sampler: str) -> tuple[float, float]:
    """``loc`` and ``scale``, refusing a scale with which ``sampler`` could output +-inf (module docstring)."""
    loc, scale = check_real(loc, "loc"), check_positive(scale, "scale")
    check_draws(np.asarray(loc), np.asarray(scale), FAST_MAX if sampler == "fast" else GRID_MAX, "loc", "scale")
    return loc, scale


def laplace_from_index(
    k: ArrayLike, loc: float = 0.0, scale: float = 1.0, sampler: str = "numpy"
) -> NDArray[np.float64]:
    """The double that ``sampler`` outputs when its uniform is ``u = k 2^-53``, ``1 <= k <= 2^53 - 1``.

    ``sampler="numpy"`` uses the C library's ``log``, exactly as numpy's ``random_laplace`` does.

    Parameters
    ----------
    k : array_like of int
        Indices in ``[1, 2^53 - 1]``.
    loc : float, optional
        Location, finite (default 0).
    scale : float, optional
        Scale, ``> 0``, with ``|loc| + 36.04 scale`` finite (default 1; see the module docstring).
    sampler : {"numpy", "textbook", "inverse_cdf"}, optional
        The sampler (default ``"numpy"``).

    Returns
    -------
    numpy.ndarray of float64
        The outputs, shaped like ``k``.

    Raises
    ------
    TypeError, ValueError
        For non-integer or out-of-range ``k``, or a bad ``loc``, ``scale`` or ``sampler``.
    """
    check_choice(sampler, "sampler", EXACT_SAMPLERS)
    loc, scale = _check_loc_scale(loc, scale, sampler)
    try:
        arr = np.asarray(k)
    except (TypeError, ValueError) as exc:  # ragged lists
        raise TypeError(f"k must be an array of integers ({shown(exc, str)})") from None
    if arr.dtype.kind not in "iu":
        raise TypeError(f"k must hold integers, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 1 or arr.max() > K_MAX):
        raise ValueError("k must lie in [1, 2**53 - 1]")
    return _functions(sampler, loc, scale)[1](arr.astype(np.int64))


# ---------------------------------------------------------------------------------------------
# exact reachability
# ---------------------------------------------------------------------------------------------


def _first_at_least(f: Callable, y: NDArray[np.float64]) -> NDArray[np.int64]:
    """Smallest ``k`` in [1, K_MAX] with ``f(k) >= y``, or ``K_MAX + 1`` if none (f non-decreasing)."""
    lo = np.ones(y.shape, dtype=np.int64)
    hi = np.full(y.shape, K_MAX + 1, dtype=np.int64)
    for _ in range(54):  # ceil(log2(2^53)) + 1 halvings close every interval
        open_ = lo < hi
        if not open_.any():
            break
        mid = np.minimum((lo + hi) // 2, K_MAX)
        ge = f(mid) >= y
        hi = np.where(open_ & ge, mid, hi)
        lo = np.where(open_ & ~ge, mid + 1, lo)
    return lo


def reachable(y: ArrayLike, loc: float, scale: float, sampler: str = "numpy") -> NDArray[np.bool_]:
    """For each double ``y``: can ``sampler`` with location ``loc`` and scale ``scale`` output exactly ``y``?

    Exact, not statistical: a vectorised binary search over ``k`` finds the first ``k`` whose
    output is ``>= y``; the answer is whether one of the ``k`` around it outputs ``y`` itself
    (same value and sign bit).  For ``"numpy"`` the search runs on ``np.log`` and the final check
    on the C library's ``log``; if the two disagree near the answer (the neighbourhood does not
    bracket ``y``), the search is redone with the C ``log`` for that element.  Infinite ``y`` is
    never reachable; NaN is refused.

    Parameters
    ----------
    y : array_like
        Candidate outputs (doubles), at most 2**22 of them.
    loc : float
        Location, finite.
    scale : float
        Scale, ``> 0`` and finite.
    sampler : {"numpy", "textbook", "inverse_cdf"}, optional
        The sampler (default ``"numpy"``).

    Returns
    -------
    numpy.ndarray of bool
        True where ``y`` can be output.

    Raises
    ------
    TypeError, ValueError
        For a bad ``y``, ``loc``, ``scale`` or ``sampler``.
    """
    check_choice(sampler, "sampler", EXACT_SAMPLERS)
    loc, scale = _check_loc_scale(loc, scale, sampler)
    y_arr = check_float_array(y, "y")
    if y_arr.size > _MAX_REACHABLE:  # a binary search of 54 steps per output: 2**22 take a minute or so
        raise ValueError(f"y has {y_arr.size:,} outputs, more than the limit of {_MAX_REACHABLE:,}")
    shape = y_arr.shape
    y_flat = y_arr.reshape(-1)
    out = np.zeros(y_flat.shape, dtype=np.bool_)
    finite = np.flatnonzero(np.isfinite(y_flat))
    if finite.size == 0:
        return out.reshape(shape)
    yf = y_flat[finite]
    fast, exact = _functions(sampler, loc, scale)
    with np.errstate(over="ignore", invalid="ignore"):
        k0 = _first_at_least(fast, yf)
        width = 3  # window [k0 - 3, k0 + 3]; it holds every solution if its neighbours bracket y
        offsets = np.arange(-width - 1, width + 2)
        ks = k0[:, None] + offsets[None, :]
        valid = (ks >= 1) & (ks <= K_MAX)
        vals = exact(np.clip(ks, 1, K_MAX))
        below_ok = ~valid[:, 0] | (vals[:, 0] < yf)
        above_ok = ~valid[:, -1] | (vals[:, -1] > yf)
        hit = (same_double(vals[:, 1:-1], yf[:, None]) & valid[:, 1:-1]).any(axis=1)
        bad = np.flatnonzero(~(below_ok & above_ok))
        if bad.size:  # rare: redo the search with the exact function, then check its neighbours
            kb = _first_at_least(exact, yf[bad])
            hit[bad] = _exact_hit(exact, kb, yf[bad])
    out[finite] = hit
    return out.reshape(shape)


def _exact_hit(f: Callable, k: NDArray[np.int64], y: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether some ``k' >= k`` with ``f(k') == y`` exists, walking forward while ``f == y`` in value.

    ``k`` is the first index with ``f(k) >= y``; solutions form a run starting there.  Signed zeros:
    the run of values equal to ``y`` is walked until a matching sign bit is found.  Only a run of
    zeros can disagree in sign, and it can be ~2^52 long (a subnormal ``scale``): after 1024 steps its
    last element, the first ``k`` with ``f(k) > 0`` minus one, is checked instead (the sign goes from
    ``-0.0`` to ``+0.0`` at most once along the run, as ``f`` is non-decreasing).
    """
    bits = np.ascontiguousarray(y).view(np.int64)  # equal doubles, same sign bit: the same k and the same answer
    uniq, first, inverse = np.unique(bits, return_index=True, return_inverse=True)
    if uniq.size < y.size:  # walk each distinct y once (10**5 zeros took 1024 steps each: hours)
        return _exact_hit(f, k[first], y[first])[inverse.reshape(-1)]
    res = np.zeros(k.shape, dtype=np.bool_)
    for i in range(k.size):
        kk = int(k[i])
        for _ in range(1024):
            if kk > K_MAX:
                break
            v = f(np.array([kk], dtype=np.int64))[0]
            if v != y[i]:
                break
            if np.signbit(v) == np.signbit(y[i]):
                res[i] = True
                break
            kk += 1
        else:  # a long run of zeros
            last = min(int(_first_at_least(f, np.array([5e-324]))[0]) - 1, K_MAX)
            res[i] = bool(np.signbit(f(np.array([last], dtype=np.int64))[0]) == np.signbit(y[i]))
    return res


def off_grid(y: ArrayLike, loc: float) -> NDArray[np.bool_]:
    """Outputs that the floating-point sum ``loc + z`` can never produce, for *any* double ``z``.

    With ``2^e <= |loc| < 2^(e+1)``, the rounded sum ``fl(loc + z)`` is always a multiple of
    ``2^(e-53)``.  (If ``|z| >= 2^(e-1)``, ``z`` and ``loc`` are multiples of it, so is the exact
    sum, and a sum that small is exact while a larger one rounds to a double that is such a
    multiple; if ``|z| < 2^(e-1)``, the sum exceeds ``2^(e-1)`` and rounds to a multiple.)  So an
    output that is not a multiple did not come from ``loc``, whatever sampler made the noise, *if*
    the mechanism adds the noise to ``loc`` in double arithmetic.  (A mechanism that forms the sum
    exactly and rounds once, as OpenDP does, is not covered.)  For ``loc = 0`` nothing is excluded.

    Parameters
    ----------
    y : array_like
        Candidate outputs (doubles).
    loc : float
        The location that would have produced them, finite.

    Returns
    -------
    numpy.ndarray of bool
        True where ``y`` is certainly not ``fl(loc + z)`` for any double ``z``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``y`` or ``loc``.
    """
    loc = check_real(loc, "loc")
    y_arr = check_float_array(y, "y")
    if loc == 0.0:
        return np.zeros(y_arr.shape, dtype=np.bool_)
    e = math.frexp(abs(loc))[1] - 1
    if e - 53 < -1074:  # every double is a multiple of 2^-1074: nothing to exclude
        return np.zeros(y_arr.shape, dtype=np.bool_)
    q = math.ldexp(1.0, e - 53)
    finite = np.isfinite(y_arr)
    with np.errstate(invalid="ignore"):
        return finite & (np.fmod(np.where(finite, y_arr, 0.0), q) != 0.0)


# ---------------------------------------------------------------------------------------------
# sampling and the attack
# ---------------------------------------------------------------------------------------------


def sample_floating_laplace(
    size: int, loc: float = 0.0, scale: float = 1.0, *, rng: np.random.Generator, sampler: str = "numpy"
) -> NDArray[np.float64]:
    """``size`` draws of Lap(loc, scale) from the named sampler (see the module docstring).

    Parameters
    ----------
    size : int
        Number of draws, ``>= 0``.
    loc : float, optional
        Location, finite (default 0).
    scale : float, optional
        Scale, ``> 0``, with no output overflowing (default 1; see the module docstring).
    rng : numpy.random.Generator
        The source of randomness.
    sampler : {"numpy", "textbook", "inverse_cdf", "fast"}, optional
        The sampler (default ``"numpy"``).

    Returns
    -------
    numpy.ndarray of float64
        ``size`` draws.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    check_choice(sampler, "sampler", SAMPLERS)
    size = check_int(size, "size", minimum=0, maximum=MAX_ELEMENTS)
    loc, scale = _check_loc_scale(loc, scale, sampler)
    rng = check_rng(rng)
    if sampler == "numpy":
        return rng.laplace(loc, scale, size)
    if sampler == "textbook":
        u = rng.random(size)
        zero = u == 0.0
        while zero.any():  # as numpy does: u = 0 is redrawn
            u[zero] = rng.random(int(zero.sum()))
            zero = u == 0.0
        for start in range(0, size, CHUNK):  # in place: the whole array at once took 4 times its size (8 GiB)
            u[start : start + CHUNK] = laplace_ppf_piecewise(u[start : start + CHUNK], loc, scale)
        return u
    method = "inverse_cdf" if sampler == "inverse_cdf" else "fast"
    return sample_laplace(size, loc, scale, rng=rng, method=method)


@dataclass(frozen=True)
class AttackResult:
    """Outcome of :func:`attack`: how many outputs give their input away.

    ``impossible0`` of the ``size`` outputs drawn with location ``loc0`` cannot be produced with
    ``loc1`` (and ``impossible1`` the other way round).  ``test`` is ``"exact"`` (:func:`reachable`),
    ``"ziggurat"`` (:func:`~dptutor.ziggurat.fast_possible`) or ``"grid"`` (:func:`off_grid`, which only certifies
    outputs of ``loc0``).

    Parameters
    ----------
    sampler : str
        One of :data:`SAMPLERS`.
    test : str
        One of :data:`TESTS`.
    scale, loc0, loc1 : float
        The scale (``> 0``) and the two locations.
    size : int
        Outputs drawn per location, ``>= 1``.
    impossible0, impossible1 : int
        The counts, between 0 and ``size`` (``impossible1 = 0`` for the grid test).

    Raises
    ------
    TypeError, ValueError
        For a field out of range (the message names it).
    """

    sampler: str
    test: str
    scale: float
    loc0: float
    loc1: float
    size: int
    impossible0: int
    impossible1: int

    def __post_init__(self) -> None:
        check_choice(self.test, "test", TESTS)
        check_choice(self.sampler, "sampler", SAMPLERS)
        check_positive(self.scale, "scale")
        check_real(self.loc0, "loc0")
        check_real(self.loc1, "loc1")
        size = check_int(self.size, "size", minimum=1)
        check_count(self.impossible0, "impossible0", at_most=size, bound_name="size")
        if self.test == "grid":
            check_int(self.impossible1, "impossible1", minimum=0, maximum=0)  # the grid test counts one way only
        else:
            check_count(self.impossible1, "impossible1", at_most=size, bound_name="size")

    @property
    def outputs(self) -> int:
        """Outputs tested: ``size`` per input (both directions), ``size`` for the grid test.

        Returns
        -------
        int
            The number of outputs tested.
        """
        return self.size if self.test == "grid" else 2 * self.size

    @property
    def impossible(self) -> int:
        """Outputs that gave their input away (both directions).

        Returns
        -------
        int
            ``impossible0 + impossible1``.
        """
        return self.impossible0 + self.impossible1

    @property
    def fraction(self) -> float:
        """The share of tested outputs that gave their input away.

        Returns
        -------
        float
            ``impossible / outputs`` (0 when nothing was tested).
        """
        return self.impossible / self.outputs if self.outputs else 0.0

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Clopper-Pearson interval for the probability that an output gives its input away.

        Parameters
        ----------
        confidence : float, optional
            The confidence level, in (0, 1) (default 0.95).

        Returns
        -------
        tuple of float
            ``(low, high)``.

        Raises
        ------
        TypeError, ValueError
            For a bad ``confidence``.
        """
        from scipy import stats

        confidence = check_probability(confidence, "confidence")
        ci = stats.binomtest(self.impossible, self.outputs).proportion_ci(confidence_level=confidence, method="exact")
        return float(ci.low), float(ci.high)

    def counts(self) -> NDArray[np.int64]:
        """The 2x2 table of :mod:`dptutor.audit` for the attacker "guess ``loc0`` iff impossible
        under ``loc1``": rows are the inputs, columns the guesses (``loc0``, ``loc1``).  An output of
        ``loc1`` is never impossible under ``loc1``, so ``counts[1, 0] = 0``.

        Returns
        -------
        numpy.ndarray of int64
            The 2x2 table.
        """
        return np.array([[self.impossible0, self.size - self.impossible0], [0, self.size]], dtype=np.int64)


def attack(
    sampler: str,
    scale: float,
    size: int,
    *,
    rng: np.random.Generator,
    loc0: float = 0.0,
    loc1: float = 1.0,
    test: str = "exact",
) -> AttackResult:
    """Draw ``size`` outputs with ``loc0`` and ``size`` with ``loc1``; count those the other cannot produce.

    ``test="exact"`` uses :func:`reachable` (samplers in :data:`EXACT_SAMPLERS`) both ways;
    ``test="ziggurat"`` uses :func:`~dptutor.ziggurat.fast_possible` both ways (``sampler="fast"`` only: impossibility
    certain, so the count is a lower bound); ``test="grid"`` uses :func:`off_grid` on the outputs of
    ``loc0`` only (any sampler).

    Parameters
    ----------
    sampler : str
        The sampler (one allowed by ``test``).
    scale : float
        Scale, ``> 0``.
    size : int
        Outputs per location, ``>= 1`` and at most 2**20 (``"exact"``), 2**16 (``"ziggurat"``) or 2**27 (``"grid"``).
    rng : numpy.random.Generator
        The source of randomness.
    loc0, loc1 : float, optional
        The two locations (defaults 0 and 1).
    test : {"exact", "ziggurat", "grid"}, optional
        The impossibility test (default ``"exact"``).

    Returns
    -------
    AttackResult
        The counts.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, or a ``sampler`` the ``test`` does not cover.
    """
    check_choice(test, "test", TESTS)
    allowed = {"exact": EXACT_SAMPLERS, "ziggurat": ("fast",), "grid": SAMPLERS}[test]
    check_choice(sampler, "sampler", allowed)
    scale = check_positive(scale, "scale")
    # Per output, the exact test takes ~10 us and the ziggurat test ~100 us: the limits keep a call within minutes.
    size = check_int(size, "size", minimum=1, maximum=_MAX_ATTACK_SIZE[test])
    loc0, loc1 = check_real(loc0, "loc0"), check_real(loc1, "loc1")
    rng = check_rng(rng)
    y0 = sample_floating_laplace(size, loc0, scale, rng=rng, sampler=sampler)
    if test == "grid":
        imp0 = int(off_grid(y0, loc1).sum())
        return AttackResult(sampler, test, scale, loc0, loc1, size, imp0, 0)
    y1 = sample_floating_laplace(size, loc1, scale, rng=rng, sampler=sampler)
    if test == "ziggurat":
        imp0 = int((~fast_possible(y0, loc1, scale)).sum())
        imp1 = int((~fast_possible(y1, loc0, scale)).sum())
    else:
        imp0 = int((~reachable(y0, loc1, scale, sampler)).sum())
        imp1 = int((~reachable(y1, loc0, scale, sampler)).sum())
    return AttackResult(sampler, test, scale, loc0, loc1, size, imp0, imp1)
