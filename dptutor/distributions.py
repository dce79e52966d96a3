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
purpose (:func:`dptext_transform`, whose contract is to return NaN there) silences it locally with
``np.errstate``; overflow of ``(x - mu)/b`` or of ``b`` times a quantile gives the correct limit
(density 0, CDF 0 or 1, quantile +-inf) and is silenced the same way.

Samplers take an explicit, keyword-only ``rng`` (a :class:`numpy.random.Generator`).
"""

from __future__ import annotations

import math
import sys
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import check_broadcast, check_choice, check_float_array, check_rng, check_size

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

#: Elements per chunk in :func:`standard_laplace_fill`: 2**16 float64 = 512 KiB, which fits in L2,
#: so the sign pass reads the exponentials from cache instead of from main memory.
CHUNK: int = 1 << 16

# Index of the byte holding the IEEE-754 sign bit inside a native float64.
_SIGN_BYTE: int = 7 if sys.byteorder == "little" else 0
#: The scalar types for which :func:`laplace_ppf` takes its fast path (``np.float64`` is a float).
_FLOATS = (float, np.float64)

SamplerMethod = Literal["inverse_cdf", "fast"]
NanPolicy = Literal["keep", "zero", "discard"]


# ---------------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------------


def _finite(value: ArrayLike, name: str) -> NDArray[np.float64]:
    return check_float_array(value, name, finite=True)


def _location_scale(mu: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    mu_arr = _finite(mu, "mu")
    b_arr = _finite(b, "b")
    if b_arr.ndim == 0:
        if not float(b_arr) > 0:
            raise ValueError("b (the Laplace scale) must be > 0")
    elif not (b_arr > 0).all():
        raise ValueError("b (the Laplace scale) must be > 0")
    return mu_arr, b_arr


def _open_unit(u: ArrayLike, name: str, low: float, high: float) -> NDArray[np.float64]:
    arr = check_float_array(u, name)
    if not ((arr > low) & (arr < high)).all():
        raise ValueError(f"{name} must lie in the open interval ({low}, {high})")
    return arr


def _broadcast(**arrays: np.ndarray) -> None:
    """Refuse inputs that do not broadcast together, naming them (instead of numpy's message)."""
    if any(a.ndim for a in arrays.values()):
        check_broadcast(arrays)


def _broadcast_to_size(shape: tuple[int, ...], mu: np.ndarray, b: np.ndarray) -> None:
    """Array ``mu``/``b`` must broadcast to the sampler's ``size`` (not the other way round)."""
    arrays = {k: a for k, a in (("mu", mu), ("b", b)) if a.ndim}
    if arrays:
        check_broadcast(arrays, shape)


def _standardize(x: np.ndarray, mu: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(x - mu) / b``; overflow to +-inf is the right answer for every use below, so not a warning."""
    with np.errstate(over="ignore"):
        return np.asarray((x - mu) / b)


def _scalar_or_array(arr: np.ndarray):
    """Return a numpy scalar for 0-d results, the array otherwise."""
    return arr[()] if arr.ndim == 0 else arr


# ---------------------------------------------------------------------------------------------
# Laplace(mu, b): pdf, cdf and three inverse CDFs
# ---------------------------------------------------------------------------------------------


def laplace_pdf(x: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Density of Lap(mu, b): ``exp(-|x - mu| / b) / (2 b)``."""
    x_arr = _finite(x, "x")
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(x=x_arr, mu=mu_arr, b=b_arr)
    with np.errstate(over="ignore"):  # |x - mu| / b may overflow to inf: density 0, correctly
        res = np.exp(-np.abs(x_arr - mu_arr) / b_arr) / (2.0 * b_arr)
    return _scalar_or_array(np.asarray(res))


def laplace_cdf(x: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """CDF of Lap(mu, b): ``exp(z)/2`` for ``z = (x - mu)/b < 0``, ``1 - exp(-z)/2`` otherwise.

    Both branches only ever exponentiate a non-positive number, so nothing overflows.
    """
    x_arr = _finite(x, "x")
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(x=x_arr, mu=mu_arr, b=b_arr)
    z = _standardize(x_arr, mu_arr, b_arr)
    half_tail = 0.5 * np.exp(-np.abs(z))
    res = np.where(z < 0, half_tail, 1.0 - half_tail)
    return _scalar_or_array(np.asarray(res))


def laplace_ppf(u: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Inverse CDF of Lap(mu, b), Eq. 4: ``mu - b sgn(u - 1/2) ln(1 - 2|u - 1/2|)``, ``u`` in (0, 1).

    Numerics: in exact arithmetic ``1 - 2|u - 1/2| = 2 min(u, 1 - u)``, and the right-hand side is
    *exact* in float64 for every float ``u`` in (0, 1) (``2u`` is a power-of-two scaling and ``1 - u``
    is exact for ``u >= 1/2`` by Sterbenz's lemma).  Feeding an exact argument to ``log`` gives
    ``ln(1 - 2|u - 1/2|)`` to about an ulp (the value ``log1p(-2|u - 1/2|)`` would return if
    ``u - 1/2`` were exact), whereas forming ``1 - 2|u - 1/2|`` naively loses all digits for tiny
    ``u`` (``u - 1/2`` rounds to ``-1/2``).  The formula itself is Eq. 4, ``sgn`` and all.
    """
    if type(u) in _FLOATS and type(mu) in _FLOATS and type(b) in _FLOATS and 0.0 < u < 1.0 \
            and math.isfinite(mu) and math.isfinite(b) and b > 0.0:
        # Valid float scalars (a student's loop calls this once per element): the same float64
        # operations in the same order as below, without the array checks (~20x faster a call).
        x = float(u)
        log_term = float(np.log(2.0 * min(x, 1.0 - x)))
        return np.float64(float(mu) - float(b) * ((x > 0.5) - (x < 0.5)) * log_term)
    u_arr = _open_unit(u, "u", 0.0, 1.0)
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(u=u_arr, mu=mu_arr, b=b_arr)
    log_term = np.log(2.0 * np.minimum(u_arr, 1.0 - u_arr))  # = ln(1 - 2|u - 1/2|), exact argument
    with np.errstate(over="ignore"):  # huge b: the quantile overflows to +-inf, as it should
        res = mu_arr - b_arr * np.sign(u_arr - 0.5) * log_term
    return _scalar_or_array(np.asarray(res))


def laplace_ppf_piecewise(u: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Inverse CDF of Lap(mu, b), Eq. 5: ``b ln(2u) + mu`` if ``u < 1/2``, else ``mu - b ln(2(1 - u))``."""
    u_arr = _open_unit(u, "u", 0.0, 1.0)
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(u=u_arr, mu=mu_arr, b=b_arr)
    lower = u_arr < 0.5
    # Evaluate each branch only on its own half (the other half gets a harmless filler), so both
    # log arguments stay in (0, 1]: no log ever sees 0 or a negative number, and nothing warns.
    with np.errstate(over="ignore"):
        low_branch = b_arr * np.log(2.0 * np.where(lower, u_arr, 0.25)) + mu_arr
        high_branch = mu_arr - b_arr * np.log(2.0 * (1.0 - np.where(lower, 0.75, u_arr)))
    res = np.where(lower, low_branch, high_branch)
    return _scalar_or_array(np.asarray(res))


def laplace_ppf_centered(v: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """Inverse CDF of Lap(mu, b) for a *centred* uniform, Eq. 7: ``mu - b sgn(v) ln(1 - 2|v|)``.

    Valid for ``v`` in (-1/2, 1/2) (Eq. 6).  ``ln(1 - 2|v|)`` is computed as ``log1p(-2|v|)``, which is
    accurate for every such ``v`` because ``2|v|`` is exact.
    """
    v_arr = _open_unit(v, "v", -0.5, 0.5)
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(v=v_arr, mu=mu_arr, b=b_arr)
    with np.errstate(over="ignore"):
        res = mu_arr - b_arr * np.sign(v_arr) * np.log1p(-2.0 * np.abs(v_arr))
    return _scalar_or_array(np.asarray(res))


# ---------------------------------------------------------------------------------------------
# DPText: Eq. 7's formula fed with v ~ Uni(0, 1) (Eq. 8 + Eq. 9)
# ---------------------------------------------------------------------------------------------


def dptext_transform(v: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0):
    """DPText's transform, Eq. 9, applied as DPText does to ``v`` in [0, 1) (Eq. 8).

    ``mu - b sgn(v) ln(1 - 2|v|)``, evaluated as ``mu - b sgn(v) log1p(-2|v|)``:

    * ``0 <= v < 1/2``: a finite value ``>= mu`` (``v = 0`` gives exactly ``mu`` since ``sgn(0) = 0``);
    * ``v == 1/2``: ``ln(0) = -inf`` so the result is ``+inf`` (IEEE arithmetic, and also the limit
      from the left); it is returned as ``+inf``;
    * ``1/2 < v < 1``: the log of a negative number, NaN in numpy (the real function is undefined;
      over the complex numbers it would be ``ln|.| + i pi``), returned as NaN.

    The numpy warnings for the last two cases are silenced here on purpose: NaN is this function's
    documented output.  ``v`` outside [0, 1) or NaN raises ``ValueError``.
    """
    v_arr = check_float_array(v, "v")
    if not ((v_arr >= 0.0) & (v_arr < 1.0)).all():
        raise ValueError("v must lie in [0, 1) (DPText draws v ~ Uni(0, 1), Eq. 8)")
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(v=v_arr, mu=mu_arr, b=b_arr)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        res = mu_arr - b_arr * np.sign(v_arr) * np.log1p(-2.0 * np.abs(v_arr))
    return _scalar_or_array(np.asarray(res))


def dptext_cdf(x: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0, nan: NanPolicy = "zero"):
    """Exact CDF of DPText's output ``T = dptext_transform(V, mu, b)``, ``V ~ Uni(0, 1)``.

    For ``v`` in [0, 1/2) the transform is increasing with inverse ``v = (1 - exp(-(t - mu)/b)) / 2``,
    so ``P(T <= t, T finite) = (1 - exp(-(t - mu)/b)) / 2`` for ``t >= mu`` and 0 below ``mu``; the
    other half of the mass is NaN.  Hence, by NaN policy:

    * ``"zero"``: NaN noise is set to 0, i.e. the output becomes ``mu``: a point mass 1/2 at ``mu``
      plus half an exponential of scale ``b`` above ``mu``: ``F(t) = 1 - exp(-(t - mu)/b)/2`` for
      ``t >= mu`` (so ``F(mu) = 1/2``), 0 below;
    * ``"discard"``: NaNs are redrawn, leaving an exponential of scale ``b`` shifted to ``mu``:
      ``F(t) = 1 - exp(-(t - mu)/b)`` for ``t >= mu``, 0 below;
    * ``"keep"``: the defective CDF ``P(T <= t)`` with NaN never ``<= t``: total mass 1/2,
      ``F(t) = (1 - exp(-(t - mu)/b))/2``.

    (The event ``V = 1/2`` exactly, giving ``+inf``, has probability 0 and is ignored.)
    """
    check_choice(nan, "nan", ("keep", "zero", "discard"))
    x_arr = _finite(x, "x")
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(x=x_arr, mu=mu_arr, b=b_arr)
    z = _standardize(x_arr, mu_arr, b_arr)
    above = z >= 0
    z_support = np.where(above, z, 0.0)  # exp(-z) is then taken on the support only: never overflows
    if nan == "zero":
        res = np.where(above, 1.0 - 0.5 * np.exp(-z_support), 0.0)
    else:  # discard: 1 - exp(-z); keep: half of it
        mass = 1.0 if nan == "discard" else 0.5
        res = np.where(above, -mass * np.expm1(-z_support), 0.0)
    return _scalar_or_array(np.asarray(res))


def dptext_pdf(x: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0, nan: NanPolicy = "zero"):
    """Density of the *continuous part* of DPText's output law (see :func:`dptext_cdf`).

    ``"zero"`` and ``"keep"``: ``exp(-(x - mu)/b) / (2b)`` for ``x >= mu`` (the atom of mass 1/2 at
    ``mu`` under ``"zero"``, or the missing NaN half under ``"keep"``, is not part of the density);
    ``"discard"``: ``exp(-(x - mu)/b) / b`` for ``x >= mu``.  Zero below ``mu``.
    """
    check_choice(nan, "nan", ("keep", "zero", "discard"))
    x_arr = _finite(x, "x")
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast(x=x_arr, mu=mu_arr, b=b_arr)
    z = _standardize(x_arr, mu_arr, b_arr)
    above = z >= 0
    factor = 1.0 if nan == "discard" else 0.5
    with np.errstate(over="ignore"):  # b near the smallest float: the density overflows to inf, correctly
        res = np.where(above, factor * np.exp(-np.where(above, z, 0.0)) / b_arr, 0.0)
    return _scalar_or_array(np.asarray(res))


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

    ``out`` must be a writeable, C-contiguous, native float64 ``numpy.ndarray`` of any shape.
    """
    rng = check_rng(rng)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
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
        if b != 1.0 or mu != 0.0:
            with np.errstate(over="ignore"):  # b near the float max: draws overflow to +-inf, correctly
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
    return np.asarray(laplace_ppf(u), dtype=np.float64)


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
    """
    check_choice(method, "method", ("inverse_cdf", "fast"))
    rng = check_rng(rng)
    shape = check_size(size)
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast_to_size(shape, mu_arr, b_arr)
    if method == "inverse_cdf":
        out = _inverse_cdf_standard(shape, rng)
    elif method == "fast":
        out = np.empty(shape, dtype=np.float64)
        if mu_arr.ndim == 0 and b_arr.ndim == 0:  # common case: shift and scale chunk by chunk, in cache
            _laplace_fill_flat(out.reshape(-1), rng, float(mu_arr), float(b_arr))
            return out
        standard_laplace_fill(out, rng=rng)
    if not (b_arr.ndim == 0 and b_arr == 1.0):
        with np.errstate(over="ignore"):
            out *= b_arr
    if not (mu_arr.ndim == 0 and mu_arr == 0.0):
        out += mu_arr
    return out


def _dptext_standard_noise(
    shape: int | tuple[int, ...], rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Standard (mu = 0, b = 1) DPText noise from fresh ``v ~ Uni(0, 1)``, with NaN noise set to 0.

    Returns ``(noise, ok)`` where ``ok = v <= 1/2`` marks the draws for which Eq. 9 is defined.  On
    those draws the value equals :func:`dptext_transform` ``(v)`` bit for bit (``-log1p(-2 v)``, since
    ``sgn(v) |v| = v`` for ``v >= 0``); elsewhere it is 0.  The log is evaluated only on valid
    arguments (``v`` is zeroed where ``ok`` is false), which is several times faster than letting
    numpy produce NaNs, and nothing warns.  This is the audits' hot path.
    """
    v = rng.random(shape)
    ok = v <= 0.5
    np.multiply(v, ok, out=v)
    np.multiply(v, -2.0, out=v)
    with np.errstate(divide="ignore"):  # v == 1/2 gives ln(0) = -inf, i.e. +inf noise, as Eq. 9 does
        np.log1p(v, out=v)
    np.negative(v, out=v)
    return v, ok


def sample_dptext(
    size: int | tuple[int, ...],
    mu: ArrayLike = 0.0,
    b: ArrayLike = 1.0,
    *,
    rng: np.random.Generator,
    nan: NanPolicy = "keep",
) -> NDArray[np.float64]:
    """Draw ``size`` outputs of DPText's sampler: ``v ~ Uni(0, 1)`` (Eq. 8) through Eq. 9.

    NaN policies (Section 3.3 leaves open what DPText does with NaNs):

    * ``"keep"``: NaNs (about half the draws, ``v > 1/2``) are returned as NaN;
    * ``"zero"``: NaN *noise* is replaced by 0 noise, so those outputs equal ``mu`` (this is what the
      paper's authors' code does: the noise's NaN becomes 0 before it is added to the query value);
    * ``"discard"``: NaN draws are thrown away and redrawn until ``size`` finite values exist.

    The event ``v = 1/2`` exactly (probability ``2^-53`` per draw) gives ``+inf``; ``"discard"`` drops
    it like a NaN, the other policies keep it.  Law of the result: :func:`dptext_cdf`.
    """
    rng = check_rng(rng)
    shape = check_size(size)
    check_choice(nan, "nan", ("keep", "zero", "discard"))
    mu_arr, b_arr = _location_scale(mu, b)
    _broadcast_to_size(shape, mu_arr, b_arr)
    n = math.prod(shape)
    if nan == "discard":
        noise = np.empty(n, dtype=np.float64)
        filled = 0
        while filled < n:
            need = n - filled
            # P(finite) = 1/2, so draw a bit more than twice what is missing.
            draw, ok = _dptext_standard_noise(2 * need + 16, rng)
            good = draw[ok & np.isfinite(draw)][:need]
            noise[filled : filled + good.size] = good
            filled += good.size
        noise = noise.reshape(shape)
    else:
        noise, ok = _dptext_standard_noise(shape, rng)
        if nan == "keep":
            noise = np.where(ok, noise, np.nan)
    # noise is the standard (mu = 0, b = 1) DPText draw; scale and shift (b > 0 keeps NaN/inf as is).
    with np.errstate(over="ignore"):
        return mu_arr + b_arr * noise
