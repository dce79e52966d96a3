"""Laplace distribution, its inverse CDF in three forms, and DPText's broken transform.

Equation numbers refer to Habernal (ACL 2022), Section 3.2-3.3:

* Eq. 4  -- the inverse CDF in "sgn" form, ``mu - b sgn(u - 1/2) ln(1 - 2|u - 1/2|)`` for ``u`` in (0, 1);
* Eq. 5  -- the same inverse CDF written piecewise (``u < 1/2`` and ``u >= 1/2``);
* Eq. 7  -- the centred form ``mu - b sgn(v) ln(1 - 2|v|)`` for ``v`` in (-1/2, 1/2) (Eq. 6);
* Eq. 9  -- DPText's transform: Eq. 7's formula applied to ``v ~ Uni(0, 1)`` (Eq. 8), which is wrong.

All functions are vectorised over numpy arrays, work in float64 and return numpy scalars for
scalar input.  Bad input raises ``ValueError`` (or ``TypeError``) naming the parameter: ``b <= 0``,
non-finite ``mu``, ``b`` or ``x``, NaN anywhere, ``u``/``v`` outside their documented domain.
No numpy ``RuntimeWarning`` escapes: the only place a log of a non-positive number is taken on
purpose (:func:`~dptutor.dptext.dptext_transform`, whose contract is to return NaN there) silences it locally with
``np.errstate``; overflow of ``(x - mu)/b`` gives the correct limit (density 0, CDF 0 or 1) and is
silenced the same way.  A quantile or a draw that would overflow to +-inf (a scale near the float
max) is refused with a ``ValueError`` naming ``b``: a Laplace law with finite ``mu`` and ``b`` has
no infinite quantile.

Samplers take an explicit, keyword-only ``rng`` (a :class:`numpy.random.Generator`).  DPText's
transform, its law and its sampler live in :mod:`dptutor.dptext` and are importable from here.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._laplace_args import (
    FAST_MAX,
    GRID_MAX,
    SamplerMethod,
    broadcast_to_size,
    broadcast_together,
    check_draws,
    finite,
    finite_quantiles,
    location_scale,
    open_unit,
    scalar_or_array,
    standardize,
)
from dptutor._validate import check_choice, check_rng, check_size
from dptutor.dptext import dptext_cdf, dptext_pdf, dptext_transform, sample_dptext

__all__ = [
    "laplace_pdf",
    "laplace_cdf",
    "laplace_ppf",
    "laplace_ppf_piecewise",
    "laplace_ppf_centered",
    "dptext_transform",
    "dptext_pdf",
    "dptext_cdf",
    "standard_laplace_fill",
    "sample_laplace",
    "sample_dptext",
    "CHUNK",
]

#: Elements per chunk in :func:`standard_laplace_fill`, 2**16 float64 = 512 KiB, which fits in L2,
#: so the sign pass reads the exponentials from cache instead of from main memory.
CHUNK: int = 1 << 16

# Index of the byte holding the IEEE-754 sign bit inside a native float64.
_SIGN_BYTE: int = 7 if sys.byteorder == "little" else 0
#: The scalar types for which :func:`laplace_ppf` takes its fast path (``np.float64`` is a float).
_FLOATS = (float, np.float64)



# ---------------------------------------------------------------------------------------------
# Laplace(mu, b): pdf, cdf and three inverse CDFs
# ---------------------------------------------------------------------------------------------


def laplace_pdf(x: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Density of Lap(mu, b): ``exp(-|x - mu| / b) / (2 b)``.

    Parameters
    ----------
    x : array_like
        Points, finite.
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``x``.

    Returns
    -------
    numpy.float64 or numpy.ndarray
        The density, a scalar for scalar input.

    Raises
    ------
    TypeError, ValueError
        For a non-numeric, NaN or infinite ``x``, a bad ``mu`` or ``b``, or shapes that do not broadcast
        (the message names the parameter).
    """
    x_arr = finite(x, "x")
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(x=x_arr, mu=mu_arr, b=b_arr)
    z = standardize(x_arr, mu_arr, b_arr)  # |z| may overflow to inf: density 0, correctly
    with np.errstate(over="ignore"):  # b near the smallest float: the density overflows to inf, correctly
        res = np.exp(-np.abs(z)) / b_arr * 0.5  # not / (2 b): 2 b overflows for b > 9e307
    return scalar_or_array(np.asarray(res))


def laplace_cdf(x: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """CDF of Lap(mu, b): ``exp(z)/2`` for ``z = (x - mu)/b < 0``, ``1 - exp(-z)/2`` otherwise.

    Both branches only ever exponentiate a non-positive number, so nothing overflows.

    Parameters
    ----------
    x : array_like
        Points, finite.
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``x``.

    Returns
    -------
    numpy.float64 or numpy.ndarray
        ``P(X <= x)``, a scalar for scalar input.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``mu`` or ``b``, or shapes that do not broadcast.
    """
    x_arr = finite(x, "x")
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(x=x_arr, mu=mu_arr, b=b_arr)
    z = standardize(x_arr, mu_arr, b_arr)
    half_tail = 0.5 * np.exp(-np.abs(z))
    res = np.where(z < 0, half_tail, 1.0 - half_tail)
    return scalar_or_array(np.asarray(res))


def laplace_ppf(u: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Inverse CDF of Lap(mu, b), Eq. 4: ``mu - b sgn(u - 1/2) ln(1 - 2|u - 1/2|)``, ``u`` in (0, 1).

    Numerics: in exact arithmetic ``1 - 2|u - 1/2| = 2 min(u, 1 - u)``, and the right-hand side is
    *exact* in float64 for every float ``u`` in (0, 1) (``2u`` is a power-of-two scaling and ``1 - u``
    is exact for ``u >= 1/2`` by Sterbenz's lemma).  Feeding an exact argument to ``log`` gives
    ``ln(1 - 2|u - 1/2|)`` to about an ulp (the value ``log1p(-2|u - 1/2|)`` would return if
    ``u - 1/2`` were exact), whereas forming ``1 - 2|u - 1/2|`` naively loses all digits for tiny
    ``u`` (``u - 1/2`` rounds to ``-1/2``).  The formula itself is Eq. 4, ``sgn`` and all.

    Parameters
    ----------
    u : array_like
        Probabilities in the open interval (0, 1).
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``u``.

    Returns
    -------
    numpy.float64 or numpy.ndarray
        The quantiles, a scalar for scalar input.

    Raises
    ------
    TypeError, ValueError
        For ``u`` outside (0, 1) or NaN, a bad ``mu`` or ``b``, shapes that do not broadcast, or a
        quantile that overflows float64 (``|mu| + b |ln(2 min(u, 1 - u))|`` beyond the float max).

    Examples
    --------
    >>> float(laplace_ppf(0.5, mu=2.0))
    2.0
    """
    if type(u) in _FLOATS and type(mu) in _FLOATS and type(b) in _FLOATS and 0.0 < u < 1.0 \
            and math.isfinite(mu) and math.isfinite(b) and b > 0.0:
        # Valid float scalars (a student's loop calls this once per element): the same float64
        # operations in the same order as below, without the array checks (~20x faster a call).
        x = float(u)
        log_term = float(np.log(2.0 * min(x, 1.0 - x)))
        res = float(mu) - float(b) * ((x > 0.5) - (x < 0.5)) * log_term
        if math.isfinite(res):
            return np.float64(res)
        return finite_quantiles(np.asarray(res))  # raises
    u_arr = open_unit(u, "u", 0.0, 1.0)
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(u=u_arr, mu=mu_arr, b=b_arr)
    log_term = np.log(2.0 * np.minimum(u_arr, 1.0 - u_arr))  # = ln(1 - 2|u - 1/2|), exact argument
    with np.errstate(over="ignore"):  # huge b: the quantile overflows to +-inf, refused just below
        res = mu_arr - b_arr * np.sign(u_arr - 0.5) * log_term
    return scalar_or_array(finite_quantiles(np.asarray(res)))


def laplace_ppf_piecewise(u: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Inverse CDF of Lap(mu, b), Eq. 5: ``b ln(2u) + mu`` if ``u < 1/2``, else ``mu - b ln(2(1 - u))``.

    Parameters
    ----------
    u : array_like
        Probabilities in the open interval (0, 1).
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``u``.

    Returns
    -------
    numpy.float64 or numpy.ndarray
        The quantiles, a scalar for scalar input.

    Raises
    ------
    TypeError, ValueError
        For ``u`` outside (0, 1) or NaN, a bad ``mu`` or ``b``, shapes that do not broadcast, or a
        quantile that overflows float64.
    """
    u_arr = open_unit(u, "u", 0.0, 1.0)
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(u=u_arr, mu=mu_arr, b=b_arr)
    lower = u_arr < 0.5
    # Evaluate each branch only on its own half (the other half gets a harmless filler), so both
    # log arguments stay in (0, 1]: no log ever sees 0 or a negative number, and nothing warns.
    with np.errstate(over="ignore"):
        low_branch = b_arr * np.log(2.0 * np.where(lower, u_arr, 0.25)) + mu_arr
        high_branch = mu_arr - b_arr * np.log(2.0 * (1.0 - np.where(lower, 0.75, u_arr)))
    res = np.where(lower, low_branch, high_branch)
    return scalar_or_array(finite_quantiles(np.asarray(res)))


def laplace_ppf_centered(v: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Inverse CDF of Lap(mu, b) for a *centred* uniform, Eq. 7: ``mu - b sgn(v) ln(1 - 2|v|)``.

    Valid for ``v`` in (-1/2, 1/2) (Eq. 6).  ``ln(1 - 2|v|)`` is computed as ``log1p(-2|v|)``, which is
    accurate for every such ``v`` because ``2|v|`` is exact.

    Parameters
    ----------
    v : array_like
        Centred uniforms in the open interval (-1/2, 1/2).
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``v``.

    Returns
    -------
    numpy.float64 or numpy.ndarray
        The quantiles, a scalar for scalar input.

    Raises
    ------
    TypeError, ValueError
        For ``v`` outside (-1/2, 1/2) or NaN, a bad ``mu`` or ``b``, shapes that do not broadcast, or a
        quantile that overflows float64.
    """
    v_arr = open_unit(v, "v", -0.5, 0.5)
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(v=v_arr, mu=mu_arr, b=b_arr)
    with np.errstate(over="ignore"):
        res = mu_arr - b_arr * np.sign(v_arr) * np.log1p(-2.0 * np.abs(v_arr))
    return scalar_or_array(finite_quantiles(np.asarray(res)))


# ---------------------------------------------------------------------------------------------
# samplers
# ---------------------------------------------------------------------------------------------


def standard_laplace_fill(out: NDArray[np.float64], *, rng: np.random.Generator) -> NDArray[np.float64]:
    """Fill ``out`` in place with iid standard Laplace(0, 1) draws and return it.

    Method: if ``E ~ Exp(1)`` and ``S`` is an independent fair random sign, ``S E ~ Lap(0, 1)``
    (the Laplace density is the exponential density mirrored and halved).  ``E`` comes from
    ``rng.standard_exponential`` (numpy's ziggurat, exact up to float granularity); ``S`` is one raw
    random bit per draw (``rng.bit_generator.random_raw`` unpacked with ``np.unpackbits``), XOR-ed
    directly into the IEEE sign bit of ``E``.  The sign bits come from the same bit generator as the
    exponentials but from disjoint words, so ``S`` and ``E`` are independent.
    Work proceeds in cache-sized chunks of :data:`CHUNK` elements so the sign pass hits L2.

    ``out`` must be a writeable, C-contiguous, native float64 ``numpy.ndarray`` of any shape (not a
    subclass such as a masked array, whose mask would be ignored).

    Parameters
    ----------
    out : numpy.ndarray
        Writeable, C-contiguous, native float64 array of any shape; overwritten.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray
        ``out`` itself, filled.

    Raises
    ------
    TypeError
        If ``out`` is not a plain numpy array (a subclass such as ``numpy.ma.MaskedArray`` is refused) or
        ``rng`` not a Generator.
    ValueError
        If ``out`` is not float64, not C-contiguous or not writeable.
    """
    rng = check_rng(rng)
    if type(out) is not np.ndarray:
        raise TypeError(f"out must be a plain numpy.ndarray (not a subclass such as a masked array), got {type(out).__name__}")
    if out.dtype != np.float64:
        raise ValueError(f"out must have dtype float64 (native byte order), got {out.dtype}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    _laplace_fill_flat(out.reshape(-1), rng, 0.0, 1.0)  # reshape(-1) is a view: out is C-contiguous
    return out


def _laplace_fill_flat(flat: NDArray[np.float64], rng: np.random.Generator, mu: float, b: float) -> None:
    """Chunked core of :func:`standard_laplace_fill`; also applies ``mu + b * x`` while in cache."""
    n = flat.size
    bitgen = rng.bit_generator
    for start in range(0, n, CHUNK):
        chunk = flat[start : start + CHUNK]
        k = chunk.size
        rng.standard_exponential(out=chunk)
        # k fair random bits (0/1 as uint8), from k/64 raw 64-bit words; move each to bit 7 ...
        signs = np.unpackbits(bitgen.random_raw((k + 63) // 64).view(np.uint8), count=k)
        np.multiply(signs, 0x80, out=signs)  # 0/1 -> 0x00/0x80 (SIMD; np.left_shift on uint8 is not)
        # ... and XOR it into the byte of each float64 that holds the IEEE sign bit (E > 0 has it clear).
        top = chunk.view(np.uint8)[_SIGN_BYTE::8]
        np.bitwise_xor(top, signs, out=top)
        if b != 1.0 or mu != 0.0:  # the caller checked that nothing overflows (check_draws)
            np.multiply(chunk, b, out=chunk)
            np.add(chunk, mu, out=chunk)


def _inverse_cdf_standard(shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
    """Standard Laplace draws by Eq. 4 applied to ``u`` uniform on the float grid ``{k 2^-53 : 0 < k < 2^53}``.

    ``rng.random()`` returns ``k 2^-53`` with ``k`` uniform on ``{0, ..., 2^53 - 1}``.  ``u = 0`` would
    give ``-inf``, so zeros (probability ``2^-53`` each) are redrawn.  Conditioning on ``u != 0`` leaves
    ``u`` exactly uniform on ``{k 2^-53 : 1 <= k <= 2^53 - 1}``, a grid symmetric about 1/2, so the
    output is exactly symmetric and Eq. 4 maps it to the Laplace law up to float granularity (the
    draws are truncated at ``|x| <= 52 ln 2 ~ 36``, a tail of probability ``2^-53`` on each side).
    (Reflecting, ``1 - rng.random()``, would instead produce ``u = 1`` and hence ``+inf``.)
    """
    u = rng.random(shape)
    zero = u == 0.0
    while zero.any():
        u[zero] = rng.random(int(zero.sum()))
        zero = u == 0.0
    flat = u.reshape(-1)  # a view (u is C-contiguous): Eq. 4 in place, chunk by chunk, as the temporaries of
    for start in range(0, flat.size, CHUNK):  # the whole array at once took 4 times its size (8 GiB at 2**28)
        part = flat[start : start + CHUNK]
        part[...] = laplace_ppf(part)
    return u


def sample_laplace(
    size: int | tuple[int, ...],
    mu: ArrayLike = 0.0,
    b: ArrayLike = 1.0,
    *,
    rng: np.random.Generator,
    method: SamplerMethod = "inverse_cdf",
) -> NDArray[np.float64]:
    """Draw ``size`` iid Lap(mu, b) samples.

    ``method="inverse_cdf"``: Eq. 4 applied to uniforms (Theorem A.1); see :func:`_inverse_cdf_standard`
    for the handling of ``u = 0``.  ``method="fast"``: ziggurat exponential with a random sign
    (:func:`standard_laplace_fill`), several times faster than ``rng.laplace``.
    ``mu`` and ``b`` may be arrays broadcastable to ``size``.

    No draw is ever +-inf: a standard draw is at most ``52 ln 2 ~ 36.04`` in absolute value for
    ``"inverse_cdf"`` (the uniform is at least ``2^-53`` away from 0 and 1) and ``r + 53 ln 2 ~ 44.43``
    for ``"fast"`` (the ziggurat's tail, ``r ~ 7.697``), so ``b`` must keep ``|mu| + b * 36.04`` (or
    ``|mu| + b * 44.43``) below the float max: ``b < 4.98e306`` (or ``4.04e306``) for ``mu = 0``.

    Parameters
    ----------
    size : int or tuple of int
        Output shape.
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcastable to ``size``.
    rng : numpy.random.Generator
        The source of randomness.
    method : {"inverse_cdf", "fast"}, optional
        The sampler (default ``"inverse_cdf"``).

    Returns
    -------
    numpy.ndarray of float64
        Draws of shape ``size``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``size``, ``mu``, ``b``, ``rng`` or ``method``, ``mu``/``b`` that do not broadcast
        to ``size``, or a ``b`` (with ``mu``) so large that a draw could overflow (see above).

    Examples
    --------
    >>> import numpy as np
    >>> sample_laplace(4, rng=np.random.default_rng(0)).shape
    (4,)
    """
    check_choice(method, "method", ("inverse_cdf", "fast"))
    rng = check_rng(rng)
    shape = check_size(size)
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_to_size(shape, mu_arr, b_arr)
    check_draws(mu_arr, b_arr, GRID_MAX if method == "inverse_cdf" else FAST_MAX)
    if method == "inverse_cdf":
        out = _inverse_cdf_standard(shape, rng)
    elif method == "fast":
        out = np.empty(shape, dtype=np.float64)
        if mu_arr.ndim == 0 and b_arr.ndim == 0:  # common case: shift and scale chunk by chunk, in cache
            _laplace_fill_flat(out.reshape(-1), rng, float(mu_arr), float(b_arr))
            return out
        standard_laplace_fill(out, rng=rng)
    if not (b_arr.ndim == 0 and b_arr == 1.0):  # nothing overflows (check_draws)
        out *= b_arr
    if not (mu_arr.ndim == 0 and mu_arr == 0.0):
        out += mu_arr
    return out
