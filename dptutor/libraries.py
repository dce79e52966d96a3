"""The Laplace mechanisms of two DP libraries from PyPI, wrapped as ``mechanism(x, epsilon, rng)``.

* OpenDP (``opendp``): ``make_laplace`` on floats (and on integers, for the benchmark).  OpenDP draws
  its own randomness from the operating system, so ``rng`` is checked and ignored: these runs do not
  repeat from a seed.
* diffprivlib (``diffprivlib``): ``diffprivlib.mechanisms.Laplace``, one value per call, seeded from
  ``rng`` so that a run repeats.

Each wrapper adds noise of scale ``n / epsilon`` to every coordinate of a batch ``x`` of shape
``(trials, n)``, like :func:`dptutor.mechanisms.laplace_mechanism`, so :func:`dptutor.audit.estimate_loss`
and :mod:`dptutor.floating` run on them.  The libraries are imported on first use; a missing one
raises ``ImportError`` with the pip command.

What the book's floating-point chapter finds, as implemented (not in real arithmetic): OpenDP rounds the
input to a fine power-of-two grid, adds exact discrete Laplace noise on it and rounds the sum once, so the
grid test of :func:`dptutor.floating.off_grid` does not apply to it; diffprivlib returns
``value - scale * L`` in double arithmetic, so its outputs carry the input's grid and some of them are
impossible under a neighbouring input: it is epsilon-DP only in real arithmetic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    as_generator,
    check_batch,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_size,
)

__all__ = [
    "opendp_version",
    "diffprivlib_version",
    "opendp_laplace_mechanism",
    "opendp_integer_laplace",
    "diffprivlib_laplace_mechanism",
    "opendp_integer_gaussian",
    "OpenDPGaussian",
    "DIFFPRIVLIB_GAUSSIANS",
    "DiffprivlibGaussian",
]


def _import(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:  # pragma: no cover - the pinned environment has both
        package = {"opendp.prelude": "opendp", "diffprivlib.mechanisms": "diffprivlib"}.get(name, name)
        raise ImportError(f'{package} is not installed: pip install "dptutor[libraries]"') from exc


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError as exc:
        raise ImportError(f'{package} is not installed: pip install "dptutor[libraries]"') from exc


def opendp_version() -> str:
    """The installed opendp's version string.

    Returns
    -------
    str
        The version, e.g. ``'0.12.0'``.

    Raises
    ------
    ImportError
        If OpenDP is not installed (the message says ``pip install "dptutor[libraries]"``).
    """
    return _version("opendp")


def diffprivlib_version() -> str:
    """The installed diffprivlib's version string.

    Returns
    -------
    str
        The version, e.g. ``'0.6.6'``.

    Raises
    ------
    ImportError
        If diffprivlib is not installed (the message says ``pip install "dptutor[libraries]"``).
    """
    return _version("diffprivlib")


@functools.lru_cache(maxsize=64)
def _opendp_measurement(scale: float, integer: bool, name: str) -> Any:
    dp = _import("opendp.prelude")
    dp.enable_features("contrib")  # make_laplace is in OpenDP's "contrib" feature set
    if integer:
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
    else:
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    try:
        return dp.m.make_laplace(*space, scale=scale)
    except Exception as exc:  # OpenDP's own exception type: report it as a bad parameter
        raise ValueError(f"{name}: OpenDP refuses the Laplace scale {scale!r} ({exc})") from exc


#: The most draws one call asks a library for: OpenDP takes ~20 us a draw and diffprivlib is called once per
#: draw from Python, so 2^28 (MAX_ELEMENTS) draws ran for hours; 2^20 take seconds.
MAX_LIBRARY_DRAWS: int = 1 << 20


def _rows(size: object) -> int:
    """A mechanism's ``size``: an int (or a 1-tuple) in ``[0, MAX_LIBRARY_DRAWS]``."""
    shape = check_size(size, "size", max_elements=MAX_LIBRARY_DRAWS)
    if len(shape) != 1:
        raise ValueError(f"size must be a non-negative int, got {size!r}")
    return shape[0]


def _checked(x: object, epsilon: object, rng: object) -> tuple[NDArray[np.float64], float, np.random.Generator]:
    """A mechanism's three arguments, checked; ``x`` as float64, and a scale ``n / epsilon`` that is finite."""
    arr = check_batch(x).astype(np.float64, copy=False)
    if arr.size > MAX_LIBRARY_DRAWS:
        raise ValueError(f"x has {arr.size:,} values, more than the {MAX_LIBRARY_DRAWS:,} draws a library call may take")
    eps = check_positive(epsilon, "epsilon")
    if not np.isfinite(arr.shape[1] / eps):
        raise ValueError(f"epsilon = {eps!r} is too small: the noise scale n / epsilon overflows")
    return arr, eps, as_generator(rng)


def opendp_laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """OpenDP's float Laplace mechanism, scale ``n / epsilon`` per coordinate (``rng`` is not used).

    Parameters
    ----------
    x : numpy.ndarray, shape (trials, n)
        The inputs, one per row (real, finite).
    epsilon : float
        The privacy budget (positive).
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        Checked, not used (OpenDP draws from the operating system).  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.

    Returns
    -------
    numpy.ndarray of float64, shape (trials, n)
        The noisy inputs.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    ImportError
        If OpenDP is not installed (the message says ``pip install "dptutor[libraries]"``).
    """
    arr, eps, _ = _checked(x, epsilon, rng)
    meas = _opendp_measurement(arr.shape[1] / eps, False, "epsilon")
    try:
        out = meas(arr.reshape(-1).tolist())
    except Exception as exc:
        raise ValueError(f"x: OpenDP could not release these values ({exc})") from exc
    return np.asarray(out, dtype=np.float64).reshape(arr.shape)


def opendp_integer_laplace(scale: float, size: int) -> NDArray[np.int64]:
    """``size`` draws of OpenDP's integer Laplace mechanism on zeros: discrete Laplace noise of ``scale``.

    Parameters
    ----------
    scale : float
        The noise scale (positive).
    size : int
        The number of draws, 0 to ``MAX_LIBRARY_DRAWS`` (2^20).

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
        The noise draws.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    ImportError
        If OpenDP is not installed (the message says ``pip install "dptutor[libraries]"``).
    """
    scale = check_positive(scale, "scale")
    size = check_int(size, "size", minimum=0, maximum=MAX_LIBRARY_DRAWS)
    meas = _opendp_measurement(scale, True, "scale")
    return np.asarray(meas([0] * size), dtype=np.int64)


def diffprivlib_laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """diffprivlib's ``Laplace`` (sensitivity ``n``), one call per coordinate, seeded from ``rng``.

    epsilon-DP in real arithmetic only: the final subtraction in doubles leaves the input's grid on the
    output (:func:`dptutor.floating.off_grid`).

    Parameters
    ----------
    x : numpy.ndarray, shape (trials, n)
        The inputs, one per row (real, finite).
    epsilon : float
        The privacy budget (positive).
    rng : numpy.random.Generator, numpy.random.SeedSequence or int
        The source of randomness.  A Generator is used (its state advances); a SeedSequence or a
        non-negative int seed gives the draws of ``np.random.default_rng(rng)``.

    Returns
    -------
    numpy.ndarray of float64, shape (trials, n)
        The noisy inputs.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    ImportError
        If diffprivlib is not installed (the message says ``pip install "dptutor[libraries]"``).
    """
    arr, eps, rng = _checked(x, epsilon, rng)
    mechanisms = _import("diffprivlib.mechanisms")
    try:
        lap = mechanisms.Laplace(
            epsilon=eps, sensitivity=float(arr.shape[1]), random_state=int(rng.integers(0, 2**32 - 1))
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"epsilon: diffprivlib refuses epsilon = {eps!r} ({exc})") from exc
    flat = arr.reshape(-1)
    return np.fromiter((lap.randomise(float(v)) for v in flat), dtype=np.float64, count=flat.size).reshape(arr.shape)



# ---------------------------------------------------------------------------------------------
# Gaussian mechanisms: OpenDP's discrete Gaussian and diffprivlib's three (issue 22)
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _opendp_gaussian(scale: float) -> Any:
    dp = _import("opendp.prelude")
    dp.enable_features("contrib")  # make_gaussian is in OpenDP's "contrib" feature set
    try:
        return dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), scale=scale)
    except Exception as exc:
        raise ValueError(f"scale: OpenDP refuses the Gaussian scale {scale!r} ({exc})") from exc


def opendp_integer_gaussian(scale: float, size: int) -> NDArray[np.int64]:
    """``size`` draws of OpenDP's Gaussian mechanism on a vector of integer zeros: discrete Gaussian noise
    of scale ``scale``, sampled exactly (OpenDP's ``make_gaussian`` on an integer domain).

    Parameters
    ----------
    scale : float
        The noise scale (positive).
    size : int
        The number of draws, 0 to ``MAX_LIBRARY_DRAWS`` (2^20).

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
        The noise draws.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    ImportError
        If OpenDP is not installed (the message says ``pip install "dptutor[libraries]"``).
    """
    scale = check_positive(scale, "scale")
    size = check_int(size, "size", minimum=0, maximum=MAX_LIBRARY_DRAWS)
    meas = _opendp_gaussian(scale)
    return np.asarray(meas([0] * size), dtype=np.int64)


@dataclass(frozen=True)
class OpenDPGaussian:
    """``mechanism(data, size, rng)``: OpenDP's discrete Gaussian on an integer answer ``data``, ``size``
    times (``rng`` is checked and not used: OpenDP draws from the operating system).

    Parameters
    ----------
    scale : float
        The discrete Gaussian's scale (positive).

    Raises
    ------
    TypeError, ValueError
        If ``scale`` is not a positive real (the message names it).
    """

    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive(self.scale, "scale"))

    def rho(self, sensitivity: int = 1) -> float:
        """OpenDP's own privacy map: zero-concentrated DP ``rho = sensitivity^2 / (2 scale^2)``.

        Parameters
        ----------
        sensitivity : int, default 1
            The L2 sensitivity of the integer answer, in ``[0, 2**40]``.

        Returns
        -------
        float
            OpenDP's zero-concentrated DP ``rho``.

        Raises
        ------
        TypeError
            If an argument is of the wrong kind (the message names it).
        ValueError
            If an argument is out of range (the message names it).
        ImportError
            If OpenDP is not installed (the message says ``pip install "dptutor[libraries]"``).
        """
        sens = check_int(sensitivity, "sensitivity", minimum=0, maximum=1 << 40)
        return float(_opendp_gaussian(self.scale).map(sens))

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        value = check_real(data, "data")
        if value != round(value) or abs(value) >= 2**52:
            raise ValueError(f"data must be an integer below 2**52 in magnitude, got {data!r}")
        rows = _rows(size)
        as_generator(rng)
        return opendp_integer_gaussian(self.scale, rows) + int(value)


#: diffprivlib's Gaussian mechanisms, and how each draws its noise (diffprivlib 0.6).
DIFFPRIVLIB_GAUSSIANS: dict[str, str] = {
    "Gaussian": "classic calibration; (N1 + N2) / sqrt(2) from two floating-point normal draws, times sigma",
    "GaussianAnalytic": "Balle and Wang's calibration; the same floating-point noise",
    "GaussianDiscrete": "Canonne-Kamath-Steinke's Algorithm 3 on integers, with floating-point Bernoulli(exp(-x)) draws",
}


@dataclass(frozen=True)
class DiffprivlibGaussian:
    """``mechanism(data, size, rng)``: ``size`` calls of a diffprivlib Gaussian mechanism's ``randomise``,
    seeded from ``rng`` (so a run repeats).  ``kind`` is a key of :data:`DIFFPRIVLIB_GAUSSIANS`;
    ``GaussianDiscrete`` needs an integer ``sensitivity`` and integer ``data``.

    Parameters
    ----------
    kind : str
        A key of :data:`DIFFPRIVLIB_GAUSSIANS`.
    epsilon : float
        The privacy budget (positive).
    delta : float
        The delta, in ``(0, 1)``.
    sensitivity : float
        The sensitivity (positive; a positive int for ``GaussianDiscrete``).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range, or diffprivlib refuses the parameters (the message names them).
    ImportError
        If diffprivlib is not installed (the message says ``pip install "dptutor[libraries]"``).
    """

    kind: str
    epsilon: float
    delta: float
    sensitivity: float

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", tuple(DIFFPRIVLIB_GAUSSIANS))
        object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check_probability(self.delta, "delta"))
        sens = check_positive(self.sensitivity, "sensitivity")
        if self.kind == "GaussianDiscrete":
            sens = check_int(self.sensitivity, "sensitivity", minimum=1)
        object.__setattr__(self, "sensitivity", sens)
        self._mechanism(0)  # let diffprivlib refuse bad parameters now (e.g. Gaussian needs epsilon <= 1)

    def _mechanism(self, seed: int) -> Any:
        import warnings

        mechanisms = _import("diffprivlib.mechanisms")
        try:
            with warnings.catch_warnings(), np.errstate(all="raise"):
                warnings.simplefilter("error")  # an overflow inside diffprivlib's calibration is a refusal
                mech = getattr(mechanisms, self.kind)(
                    epsilon=self.epsilon, delta=self.delta, sensitivity=self.sensitivity, random_state=seed
                )
                scale = float(mech._scale)
        except (TypeError, ValueError, ArithmeticError, Warning) as exc:
            raise ValueError(
                f"epsilon, delta, sensitivity: diffprivlib's {self.kind} refuses these parameters ({exc})"
            ) from exc
        if not (np.isfinite(scale) and scale > 0.0):
            raise ValueError(f"epsilon, delta, sensitivity: diffprivlib's {self.kind} gives the scale {scale!r}")
        return mech

    @property
    def sigma(self) -> float:
        """The noise scale diffprivlib calibrated.

        Returns
        -------
        float
            diffprivlib's ``_scale`` for these parameters.

        Notes
        -----
        It raises no exception: the parameters were checked when the mechanism was made.
        """
        return float(self._mechanism(0)._scale)

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> NDArray:
        value = check_real(data, "data")
        rows = _rows(size)
        rng = as_generator(rng)
        mech = self._mechanism(int(rng.integers(0, 2**32 - 1)))
        if self.kind == "GaussianDiscrete":
            if value != round(value) or abs(value) >= 2**52:
                raise ValueError(f"data must be an integer for GaussianDiscrete, got {data!r}")
            v = int(value)
            return np.fromiter((mech.randomise(v) for _ in range(rows)), dtype=np.int64, count=rows)
        return np.fromiter((mech.randomise(value) for _ in range(rows)), dtype=np.float64, count=rows)
