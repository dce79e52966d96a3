"""A sound impossibility test for numpy's ziggurat Laplace sampler (``sampler="fast"`` of :mod:`dptutor.floating`).

numpy's ``standard_exponential`` maps one 64-bit word to a layer of its ziggurat and a point inside
it; :func:`ziggurat_widths` reads the 256 layer widths from numpy itself and :func:`fast_possible`
certifies, layer by layer, which doubles the fast Laplace sampler can never output.  The names are
also importable from :mod:`dptutor.floating`.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import check_float_array, check_int, check_positive, check_real

__all__ = [
    "ZIGGURAT_R",
    "ziggurat_widths",
    "fast_possible",
]


def same_double(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Equal as doubles, signed zeros told apart (an attacker sees the sign bit too)."""
    return (a == b) & (np.signbit(a) == np.signbit(b))


# numpy's standard_exponential (Marsaglia and Tsang's ziggurat with 256 layers) takes a 64-bit word
# w, drops 3 bits, reads the layer idx from the next 8 and ri from the remaining 53, and returns
# ri * w_idx when ri is below the layer's threshold; otherwise it tests a wedge with one more
# uniform (returning the same ri * w_idx if accepted, or starting again), and for idx = 0 it may go
# to the tail beyond r, where it returns r - log1p(-U).  So every output is ri * w_idx for some
# layer and some 53-bit ri, or lies in the tail.  The widths w_idx are read from numpy itself: a
# PCG64 state can be set so that the next word is any chosen one (the generator steps its 128-bit
# LCG state and outputs hi ^ lo rotated by the top 6 bits, so a state with hi = 0 outputs lo).

#: Marsaglia and Tsang's start of the tail for the 256-layer exponential ziggurat.
ZIGGURAT_R: float = 7.69711747013104972
#: The largest ``chunk`` of :func:`fast_possible` (each output of a round takes 3584 doubles: 4096 of them, 117 MB).
MAX_CHUNK: int = 1 << 12
#: The most outputs one call of :func:`fast_possible` tests.
MAX_OUTPUTS: int = 1 << 18
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_M128 = 1 << 128


def _pcg64_feed(bitgen: np.random.PCG64, word: int) -> int:
    """Set ``bitgen`` so that its next 64-bit output is ``word``; return the state after that step."""
    state = bitgen.state
    inc = state["state"]["inc"]
    state["state"]["state"] = ((word - inc) * pow(_PCG_MULT, -1, _M128)) % _M128
    state["has_uint32"] = 0
    bitgen.state = state
    return word


@functools.lru_cache(maxsize=1)
def ziggurat_widths() -> NDArray[np.float64]:
    """numpy's 256 ziggurat widths ``w_idx``, read from ``standard_exponential`` fed the word ``ri = 1``.

    Raises ``RuntimeError`` if this numpy's PCG64 or ziggurat does not behave as described above.

    Returns
    -------
    numpy.ndarray of float64
        The 256 widths, indexed by layer.

    Raises
    ------
    RuntimeError
        If this numpy does not behave as the module describes.
    """
    bitgen = np.random.PCG64(0)
    gen = np.random.Generator(bitgen)
    inc = bitgen.state["state"]["inc"]
    _pcg64_feed(bitgen, 12345 << 11)
    if gen.random() != 12345 * 2.0**-53:
        raise RuntimeError("numpy's PCG64 does not output the word its state was set to")
    widths = np.empty(256)
    for idx in range(256):
        after = _pcg64_feed(bitgen, ((1 << 8) | idx) << 3)
        x = gen.standard_exponential()
        # one word on the fast path, two if the wedge test ran and accepted (then x is still 1 * w_idx)
        if bitgen.state["state"]["state"] not in (after, (after * _PCG_MULT + inc) % _M128):
            raise RuntimeError(f"numpy's ziggurat rejected ri = 1 in layer {idx}: widths not recoverable")
        widths[idx] = x
    return widths


def fast_possible(y: ArrayLike, loc: float, scale: float, *, chunk: int = 1024) -> NDArray[np.bool_]:
    """Can ``sample_laplace(method="fast")`` (or ``laplace_mechanism``) output ``y`` from ``loc``?

    A sound over-approximation: ``False`` is certain (no layer, no 53-bit ``ri`` and no sign gives
    ``fl(fl(+-ri w_idx) scale) + loc == y``, and ``|y - loc| / scale`` is below the tail), ``True``
    only means "not excluded" (tail values, and the rare case where the searched window does not
    bracket ``y``).  For each of the 512 (layer, sign) pairs the map ``ri -> output`` is monotone,
    so a window of 7 values of ``ri`` around the inverse decides it when its ends bracket ``y``.

    Parameters
    ----------
    y : array_like
        Candidate outputs (doubles), at most 2**18 of them.
    loc : float
        Location, finite.
    scale : float
        Scale, ``> 0`` and finite.
    chunk : int, optional
        Outputs processed per vectorised round, in ``[1, 4096]`` (default 1024; memory only).

    Returns
    -------
    numpy.ndarray of bool
        False where ``y`` is certainly impossible, True where it is not excluded.

    Raises
    ------
    TypeError, ValueError
        For a bad ``y``, ``loc``, ``scale`` or ``chunk``.
    """
    loc, scale = check_real(loc, "loc"), check_positive(scale, "scale")
    chunk = check_int(chunk, "chunk", minimum=1, maximum=MAX_CHUNK)  # a round holds 3584 doubles per output
    y_arr = check_float_array(y, "y")
    if y_arr.size > MAX_OUTPUTS:  # about 80 us an output: 2**18 of them take 20 s or more
        raise ValueError(f"y has {y_arr.size:,} outputs, more than the limit of {MAX_OUTPUTS:,}")
    flat = y_arr.reshape(-1)
    widths = ziggurat_widths()
    hi_ri = float(2**53 - 1)
    offsets = np.arange(-3.0, 4.0)
    out = np.empty(flat.size, dtype=np.bool_)
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, flat.size, chunk):
            yc = flat[start : start + chunk]
            z = (yc - loc) / scale
            possible = ~np.isfinite(yc) | (np.abs(z) >= ZIGGURAT_R * (1 - 1e-9))
            for sign in (1.0, -1.0):
                ri0 = np.rint(np.clip((sign * z)[:, None] / widths[None, :], -8.0, hi_ri + 8.0))
                ri = np.clip(ri0[:, :, None] + offsets, 0.0, hi_ri)
                vals = (sign * (ri * widths[None, :, None])) * scale + loc
                hit = (same_double(vals, yc[:, None, None]) & np.isfinite(vals)).any(axis=2)
                first, last = vals[:, :, 0], vals[:, :, -1]
                below = first < yc[:, None] if sign > 0 else first > yc[:, None]
                above = last > yc[:, None] if sign > 0 else last < yc[:, None]
                bracket = ((ri[:, :, 0] == 0) | below) & ((ri[:, :, -1] == hi_ri) | above)
                possible |= (hit | ~bracket).any(axis=1)
            out[start : start + chunk] = possible
    return out.reshape(y_arr.shape)
