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
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import MAX_ELEMENTS, check_batch, check_int, check_positive, check_rng

__all__ = [
    "opendp_version",
    "diffprivlib_version",
    "opendp_laplace_mechanism",
    "opendp_integer_laplace",
    "diffprivlib_laplace_mechanism",
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
    return _version("opendp")


def diffprivlib_version() -> str:
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


def _checked(x: object, epsilon: object, rng: object) -> tuple[NDArray[np.float64], float, np.random.Generator]:
    """A mechanism's three arguments, checked; ``x`` as float64, and a scale ``n / epsilon`` that is finite."""
    arr = check_batch(x).astype(np.float64, copy=False)
    eps = check_positive(epsilon, "epsilon")
    if not np.isfinite(arr.shape[1] / eps):
        raise ValueError(f"epsilon = {eps!r} is too small: the noise scale n / epsilon overflows")
    return arr, eps, check_rng(rng)


def opendp_laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """OpenDP's float Laplace mechanism, scale ``n / epsilon`` per coordinate (``rng`` is not used)."""
    arr, eps, _ = _checked(x, epsilon, rng)
    meas = _opendp_measurement(arr.shape[1] / eps, False, "epsilon")
    try:
        out = meas(arr.reshape(-1).tolist())
    except Exception as exc:
        raise ValueError(f"x: OpenDP could not release these values ({exc})") from exc
    return np.asarray(out, dtype=np.float64).reshape(arr.shape)


def opendp_integer_laplace(scale: float, size: int) -> NDArray[np.int64]:
    """``size`` draws of OpenDP's integer Laplace mechanism on zeros: discrete Laplace noise of ``scale``."""
    scale = check_positive(scale, "scale")
    size = check_int(size, "size", minimum=0, maximum=MAX_ELEMENTS)
    meas = _opendp_measurement(scale, True, "scale")
    return np.asarray(meas([0] * size), dtype=np.int64)


def diffprivlib_laplace_mechanism(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """diffprivlib's ``Laplace`` (sensitivity ``n``), one call per coordinate, seeded from ``rng``."""
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
