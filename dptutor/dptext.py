"""DPText's transform (Habernal, ACL 2022, Section 3.3): Eq. 7's formula fed with ``v ~ Uni(0, 1)``.

Eq. 7, ``mu - b sgn(v) ln(1 - 2|v|)``, is the Laplace inverse CDF for a *centred* uniform ``v`` in
(-1/2, 1/2); DPText applies it to ``v`` in [0, 1) (Eq. 8 and Eq. 9), which gives NaN for every
``v > 1/2``.  :func:`dptext_transform` is the transform, :func:`dptext_cdf` and :func:`dptext_pdf` the
exact law of its output under each NaN policy, :func:`sample_dptext` the sampler.  The names are also
importable from :mod:`dptutor.distributions`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._laplace_args import (
    GRID_MAX,
    NanPolicy,
    broadcast_to_size,
    broadcast_together,
    check_draws,
    finite,
    location_scale,
    scalar_or_array,
    standardize,
)
from dptutor._validate import check_choice, check_float_array, check_rng, check_size

__all__ = [
    "dptext_transform",
    "dptext_pdf",
    "dptext_cdf",
    "sample_dptext",
]


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

    Parameters
    ----------
    v : array_like
        Values in [0, 1), as DPText draws them.
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``v``.

    Returns
    -------
    numpy.float64 or numpy.ndarray
        The transformed values: finite, ``+inf`` or NaN as listed above.

    Raises
    ------
    TypeError, ValueError
        For ``v`` outside [0, 1) or NaN, a bad ``mu`` or ``b``, or shapes that do not broadcast.
    """
    v_arr = check_float_array(v, "v")
    if not ((v_arr >= 0.0) & (v_arr < 1.0)).all():
        raise ValueError("v must lie in [0, 1) (DPText draws v ~ Uni(0, 1), Eq. 8)")
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(v=v_arr, mu=mu_arr, b=b_arr)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        res = mu_arr - b_arr * np.sign(v_arr) * np.log1p(-2.0 * np.abs(v_arr))
    return scalar_or_array(np.asarray(res))


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

    Parameters
    ----------
    x : array_like
        Points, finite.
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``x``.
    nan : {"zero", "discard", "keep"}, optional
        What happens to DPText's NaN outputs (default ``"zero"``, as in DPText's code).

    Returns
    -------
    numpy.float64 or numpy.ndarray
        The CDF at ``x``, a scalar for scalar input.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``mu``, ``b`` or ``nan``, or shapes that do not broadcast.
    """
    check_choice(nan, "nan", ("keep", "zero", "discard"))
    x_arr = finite(x, "x")
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(x=x_arr, mu=mu_arr, b=b_arr)
    z = standardize(x_arr, mu_arr, b_arr)
    above = z >= 0
    z_support = np.where(above, z, 0.0)  # exp(-z) is then taken on the support only: never overflows
    if nan == "zero":
        res = np.where(above, 1.0 - 0.5 * np.exp(-z_support), 0.0)
    else:  # discard: 1 - exp(-z); keep: half of it
        mass = 1.0 if nan == "discard" else 0.5
        res = np.where(above, -mass * np.expm1(-z_support), 0.0)
    return scalar_or_array(np.asarray(res))


def dptext_pdf(x: ArrayLike, mu: ArrayLike = 0.0, b: ArrayLike = 1.0, nan: NanPolicy = "zero"):
    """Density of the *continuous part* of DPText's output law (see :func:`dptext_cdf`).

    ``"zero"`` and ``"keep"``: ``exp(-(x - mu)/b) / (2b)`` for ``x >= mu`` (the atom of mass 1/2 at
    ``mu`` under ``"zero"``, or the missing NaN half under ``"keep"``, is not part of the density);
    ``"discard"``: ``exp(-(x - mu)/b) / b`` for ``x >= mu``.  Zero below ``mu``.

    Parameters
    ----------
    x : array_like
        Points, finite.
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcast against ``x``.
    nan : {"zero", "discard", "keep"}, optional
        What happens to DPText's NaN outputs (default ``"zero"``).

    Returns
    -------
    numpy.float64 or numpy.ndarray
        The density of the continuous part at ``x``, a scalar for scalar input.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x``, ``mu``, ``b`` or ``nan``, or shapes that do not broadcast.
    """
    check_choice(nan, "nan", ("keep", "zero", "discard"))
    x_arr = finite(x, "x")
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_together(x=x_arr, mu=mu_arr, b=b_arr)
    z = standardize(x_arr, mu_arr, b_arr)
    above = z >= 0
    factor = 1.0 if nan == "discard" else 0.5
    with np.errstate(over="ignore"):  # b near the smallest float: the density overflows to inf, correctly
        res = np.where(above, factor * np.exp(-np.where(above, z, 0.0)) / b_arr, 0.0)
    return scalar_or_array(np.asarray(res))


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
    it like a NaN, the other policies keep it.  Law of the result: :func:`dptext_cdf`.  Every other
    standard draw is at most ``52 ln 2 ~ 36.04`` (``v <= 1/2 - 2^-53``), and ``b`` must keep
    ``|mu| + b * 36.04`` below the float max (``b < 4.98e306`` for ``mu = 0``), so that no draw overflows.

    Parameters
    ----------
    size : int or tuple of int
        Output shape.
    mu, b : array_like, optional
        Location (finite) and scale (positive, finite), broadcastable to ``size``.
    rng : numpy.random.Generator
        The source of randomness.
    nan : {"zero", "discard", "keep"}, optional
        What happens to the NaN draws (default ``"keep"``; see above).

    Returns
    -------
    numpy.ndarray of float64
        Draws of shape ``size`` (with NaN only under ``nan="keep"``).

    Raises
    ------
    TypeError, ValueError
        For a bad ``size``, ``mu``, ``b``, ``rng`` or ``nan``, or a ``b`` (with ``mu``) so large that a draw
        could overflow (see above).
    """
    rng = check_rng(rng)
    shape = check_size(size)
    check_choice(nan, "nan", ("keep", "zero", "discard"))
    mu_arr, b_arr = location_scale(mu, b)
    broadcast_to_size(shape, mu_arr, b_arr)
    check_draws(mu_arr, b_arr, GRID_MAX)
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
    # noise is the standard (mu = 0, b = 1) DPText draw; scale and shift (b > 0 keeps NaN/inf as is; the
    # +inf of v = 1/2 is the only infinite product, and no finite one overflows: check_draws).
    return mu_arr + b_arr * noise
