"""Input checks shared by every dptutor module (in the spirit of scipy's ``_lib/_util.py``).

Each helper takes the value and the parameter's ``name``, returns the value in a canonical form, and
raises ``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind, bad value) with a message
that starts with the parameter's name.  The module is private to the package, but its helpers are
public names: other modules import them as ``from dptutor._validate import check_int``.

Booleans are never accepted where a number is expected (``True`` is an ``int`` to Python, but
``epsilon=True`` is always a mistake), and arrays are never accepted where a scalar or a string is
expected (so no "truth value of an array is ambiguous" reaches the user).
"""

from __future__ import annotations

import itertools
import math
import numbers
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate.arrays import MAX_ELEMENTS, check_batch, check_broadcast, immutable_finite_array
from dptutor._validate.rounding import checked_toward, exact_rational, toward

__all__ = ["MAX_ELEMENTS", "MAX_WORKERS", "is_bool", "shown", "check_bool", "check_real", "check_positive",
           "check_probability", "check_int", "check_choice", "check_callable", "check_rng", "check_seed",
           "check_size", "check_float_array", "check_workers", "check_str", "check_path", "check_interval",
           "check_broadcast", "check_mapping", "check_sequence", "check_batch", "immutable_finite_array",
           "check_labels", "check_count",  # check_labels and check_count: for dptutor.learning
           "MAX_SEQUENCE_LENGTH", "MAX_SEED_LENGTH", "MAX_SEED_BITS", "exact_rational", "toward", "checked_toward"]

#: The longest sequence (list, tuple, 1-D array) ``check_sequence`` accepts: its items are then checked one by
#: one in Python (about a second per million), so a longer one is refused at once with a ValueError naming it.
MAX_SEQUENCE_LENGTH: int = 1 << 20

#: The most integers a seed sequence may hold (``numpy.random.SeedSequence`` hashes them all into 128 bits, so
#: more than a few is already pointless), and the most bits each may have (an int seed too).
MAX_SEED_LENGTH: int = 4096
MAX_SEED_BITS: int = 4096

#: More worker processes than this is a mistake, whatever the machine (each costs ~100 MB).
MAX_WORKERS: int = 256


def is_bool(value: object) -> bool:
    """True for Python and numpy booleans (which ``numbers.Integral`` would otherwise admit)."""
    return isinstance(value, (bool, np.bool_))


def shown(value: object, printer: Callable[[object], str] = repr) -> str:
    """``printer(value)`` for an error message, on one line and cut to 60 characters; a value that cannot be
    printed (an integer past Python's 4300-digit limit, an object whose ``__repr__`` raises) is described instead."""
    try:
        text = " ".join(str(printer(value)).split())
    except ValueError:  # an int, a Fraction, a sympy Rational past the 4300-digit limit
        text = "too long to print"
    except Exception:
        text = "that cannot be printed"
    else:
        return text if len(text) <= 60 else text[:57] + "..."
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} {text}"


def check_bool(value: object, name: str) -> bool:
    """``value`` as a bool; only ``True``/``False`` (Python or numpy) are accepted."""
    if not is_bool(value):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_real(
    value: object,
    name: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """``value`` as a float: a real, non-bool scalar, never NaN, inside ``[low, high]``.

    ``low_open``/``high_open`` exclude the end points; infinities are refused unless ``allow_inf``.
    0-d numpy arrays count as scalars.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        x = float(value)
    except (OverflowError, ValueError) as exc:  # e.g. a huge Fraction
        raise ValueError(f"{name} must be representable as a float, got {shown(value)}") from exc
    if math.isnan(x):
        raise ValueError(f"{name} must not be NaN")
    if math.isinf(x) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {x}")
    too_low = x <= low if low_open else x < low
    too_high = x >= high if high_open else x > high
    if too_low or too_high:
        left, right = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {left}{low:g}, {high:g}{right}, got {shown(value)}")
    return x


def check_positive(value: object, name: str, *, allow_inf: bool = False) -> float:
    """A real number > 0 (finite unless ``allow_inf``)."""
    return check_real(value, name, low=0.0, low_open=True, allow_inf=allow_inf)


def check_probability(value: object, name: str, *, closed: bool = False) -> float:
    """A probability in (0, 1), or in [0, 1] with ``closed=True`` (confidence levels, delta, ...)."""
    return check_real(value, name, low=0.0, high=1.0, low_open=not closed, high_open=not closed)


def check_int(value: object, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int: an integral, non-bool scalar inside ``[minimum, maximum]``.

    Floats are refused even when whole (``trials=1e6`` is a TypeError: say ``10**6``).
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if is_bool(value) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {shown(minimum)}, got {shown(v)}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {shown(maximum)}, got {shown(v)}")
    return v


def check_choice(value: object, name: str, choices: Iterable[str]) -> str:
    """One of the strings in ``choices``."""
    options = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {options}, got {type(value).__name__}")
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {shown(value)}")
    return value


def check_callable(value: object, name: str, signature: str = "") -> Any:
    """A callable; ``signature`` (e.g. ``"mechanism(x, epsilon, rng)"``) goes into the message."""
    if not callable(value):
        how = f" as {signature}" if signature else ""
        raise TypeError(f"{name} must be callable{how}, got {type(value).__name__}")
    return value


def check_rng(value: object, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator`` (never the legacy global state or a seed)."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), "
            f"got {type(value).__name__}"
        )
    return value


def check_seed(value: object, name: str = "seed") -> int | tuple[int, ...] | None:
    """None, a non-negative int, or a non-empty sequence of them (what ``SeedSequence`` takes).

    Floats, bools and ``SeedSequence`` objects are refused: a recorded seed must repeat the run.  A sequence
    holds at most ``MAX_SEED_LENGTH`` (4096) integers, each (and an int seed) below ``2**MAX_SEED_BITS``
    (``2**4096``): the length is checked before anything is copied.
    """
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, numbers.Integral) and not is_bool(value):
        return _seed_int(value, name, "be")
    if isinstance(value, (list, tuple, np.ndarray)):
        items = _bounded_list(value.flat if isinstance(value, np.ndarray) else value, name, MAX_SEED_LENGTH)
        if not items:
            raise ValueError(f"{name} must not be an empty sequence")
        for item in items:
            if is_bool(item) or not isinstance(item, numbers.Integral):
                raise TypeError(f"{name} must hold only integers, got {type(item).__name__}")
        return tuple(_seed_int(item, name, "hold only") for item in items)
    raise TypeError(f"{name} must be None, a non-negative int or a sequence of them, got {type(value).__name__}")


def _seed_int(value: numbers.Integral, name: str, verb: str) -> int:
    v, what = int(value), ("" if verb == "be" else " integers")
    if v < 0:
        raise ValueError(f"{name} must {verb} non-negative{what}, got {shown(v)}")
    if v.bit_length() > MAX_SEED_BITS:
        raise ValueError(f"{name} must {verb}{what} below 2**{MAX_SEED_BITS}, got {shown(v)}")
    return v


def check_size(value: object, name: str = "size", *, max_elements: int = MAX_ELEMENTS) -> tuple[int, ...]:
    """A numpy-style size (an int or a tuple of ints, each >= 0) as a shape tuple.

    The total number of elements may not exceed ``max_elements`` (see :data:`MAX_ELEMENTS`).
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, numbers.Integral) and not is_bool(value):
        shape: tuple[int, ...] = (int(value),)
    elif isinstance(value, tuple) and all(isinstance(s, numbers.Integral) and not is_bool(s) for s in value):
        shape = tuple(int(s) for s in value)
    else:
        raise TypeError(f"{name} must be a non-negative int or a tuple of them, got {shown(value)}")
    if any(s < 0 for s in shape):
        raise ValueError(f"{name} must be non-negative, got {shown(value)}")
    if math.prod(shape) > max_elements:
        raise ValueError(f"{name} asks for {shown(math.prod(shape), '{:,}'.format)} elements, more than the limit of {max_elements:,}")
    return shape


def check_float_array(
    value: object,
    name: str,
    *,
    finite: bool = False,
    allow_nan: bool = False,
    ndim: int | Sequence[int] | None = None,
    min_size: int = 0,
    low: float | None = None,
) -> NDArray[np.float64]:
    """``value`` as a float64 array of real numbers (bools, complex, strings and objects refused).

    NaN is refused unless ``allow_nan``; infinities too when ``finite``.  ``ndim`` restricts the
    number of dimensions; ``min_size`` the number of elements; ``low`` the smallest value allowed.
    """
    if is_bool(value):
        raise TypeError(f"{name} must be a real number or an array of real numbers, got a bool")
    if ndim is None and min_size <= 1 and low is None and isinstance(value, (float, int, np.floating, np.integer)):
        # Scalar fast path (the array path below costs ~10 us a call).
        x = check_real(value, name, allow_inf=not finite) if not (allow_nan and value != value) else math.nan
        return np.asarray(x)
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and other exotic objects
        raise TypeError(f"{name} must be array-like of real numbers ({shown(exc, str)})") from exc
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimension(s), got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} element(s), got {arr.size}")
    if arr.size > MAX_ELEMENTS:
        raise ValueError(f"{name} has {arr.size:,} elements, more than the limit of {MAX_ELEMENTS:,}")
    with np.errstate(over="ignore"):  # float128 or huge ints overflowing to inf is caught below
        arr = arr.astype(np.float64, copy=False)
    if not allow_nan and np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    if finite and not np.isfinite(arr[~np.isnan(arr)] if allow_nan else arr).all():
        raise ValueError(f"{name} must be finite")
    if low is not None and (arr < low).any():
        raise ValueError(f"{name} must hold values >= {low:g}")
    return arr


def check_workers(value: object, name: str = "workers", *, tasks: int | None = None) -> int:
    """A number of worker processes in ``[1, MAX_WORKERS]``, capped at the CPUs and the tasks.

    The returned value is what a pool should use: never more processes than CPUs or tasks.
    """
    w = check_int(value, name, minimum=1, maximum=MAX_WORKERS)
    w = min(w, os.cpu_count() or 1)
    if tasks is not None:
        w = min(w, max(1, int(tasks)))
    return w


def check_str(value: object, name: str, *, allow_empty: bool = True) -> str:
    """A ``str`` (not bytes, not an array of strings)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not allow_empty and not value:
        raise ValueError(f"{name} must not be empty")
    return value


def check_path(value: object, name: str = "path") -> "os.PathLike[str]":
    """A file-system path given as ``str`` or ``os.PathLike`` (never an int: ``open(1)`` is stdout).

    Returns a :class:`pathlib.Path`.
    """
    from pathlib import Path

    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or os.PathLike path, got {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text or "\x00" in text:
        raise ValueError(f"{name} must be a non-empty path without NUL characters, got {shown(value)}")
    return Path(text)


def check_interval(value: object, name: str, *, low: float = -math.inf, low_open: bool = False,
                   limit: float = math.inf) -> tuple[float, float]:
    """A pair ``(lo, hi)`` of finite reals with ``lo < hi`` (and ``lo > low``, or ``>=`` unless ``low_open``), both at most
    ``limit`` in absolute value."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a pair of real numbers (low, high), got {type(value).__name__}")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{name} must be a pair of real numbers (low, high), got an array of shape {value.shape}")
    items = list(itertools.islice(value, 3)) if _length(value) == 2 else []  # a long one is not copied to be refused
    if len(items) != 2:
        n = len(items) if _length(value) == 2 else _length(value)
        raise ValueError(f"{name} must be a pair of real numbers (low, high), got {'more' if n is math.inf else n} item(s)")
    lo = check_real(items[0], f"{name}[0]", low=low, low_open=low_open)
    hi = check_real(items[1], f"{name}[1]")
    if not lo < hi:
        raise ValueError(f"{name} must have low < high, got {(lo, hi)!r}")
    if max(abs(lo), abs(hi)) > limit:
        raise ValueError(f"{name} must lie within [-{limit:g}, {limit:g}], got {(lo, hi)!r}")
    return lo, hi


def check_mapping(value: object, name: str, *, min_len: int = 1) -> Mapping:
    """A mapping with at least ``min_len`` entries."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping, got {type(value).__name__}")
    if len(value) < min_len:
        raise ValueError(f"{name} must have at least {min_len} entr{'y' if min_len == 1 else 'ies'}")
    return value


def check_sequence(value: object, name: str, *, min_len: int = 1, max_len: int = MAX_SEQUENCE_LENGTH) -> list:
    """A list/tuple/1-D array (never a str, a mapping or a one-shot iterator) as a list of ``min_len`` to
    ``max_len`` items; the length is checked before any item is copied (see ``MAX_SEQUENCE_LENGTH``)."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {value.shape}")
    elif isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list or tuple, got {type(value).__name__}")
    items = _bounded_list(value, name, max_len)
    if len(items) < min_len:
        raise ValueError(f"{name} must have at least {min_len} item(s), got {len(items)}")
    return items


def _length(value: Any) -> float | None:
    """``len(value)`` (an array's ``size``) without copying anything: ``math.inf`` when it overflows an index
    (``range(10**20)``), ``None`` when ``value`` has no length."""
    try:
        return value.size if isinstance(value, np.ndarray) else len(value)
    except OverflowError:
        return math.inf
    except TypeError:
        return None


def _bounded_list(value: Any, name: str, max_len: int) -> list:
    """The items of ``value`` as a list; ``ValueError`` naming ``name`` when there are more than ``max_len``, found
    from ``_length`` before copying, or by copying at most ``max_len + 1`` of them."""
    n = _length(value)
    if n is None or n <= max_len:
        items = list(itertools.islice(value, max_len + 1))  # a __len__ that lies cannot make it copy more
        n = len(items)
    if n > max_len:
        raise ValueError(f"{name} must have at most {max_len:,} items, got {'more' if n is math.inf else format(n, ',')}")
    return items


# ---------------------------------------------------------------------------------------------
# (modC) scipy's ``rng`` and the arguments of the zoo's and DP-Sniper's mechanisms
# ---------------------------------------------------------------------------------------------

__all__ += ["MIN_MECHANISM_EPSILON", "MAX_MECHANISM_SIZE", "as_generator", "check_mechanism_epsilon", "check_mechanism_call",
            "check_answer_vector", "check_output_rows", "check_integer_value", "recordable_seed"]

#: The smallest epsilon the mechanisms of :mod:`dptutor.zoo` and :mod:`dptutor.dpsniper` accept
#: (below it, noise scales such as ``2c / epsilon`` overflow).
MIN_MECHANISM_EPSILON: float = 1e-12

#: The most outputs one call of a zoo or DP-Sniper mechanism may draw.
MAX_MECHANISM_SIZE: int = 1 << 28


def as_generator(value: object, name: str = "rng") -> np.random.Generator:
    """scipy's ``rng``: a ``numpy.random.Generator`` as it is, else ``numpy.random.default_rng(value)``.

    ``value`` may be a ``Generator`` (used, not copied: its state advances), a ``SeedSequence`` or a
    non-negative int seed; an int seed gives the same draws as ``np.random.default_rng(seed)``.
    ``None`` (fresh entropy), floats, bools and the legacy ``RandomState`` are refused: a run must
    repeat.
    """
    if isinstance(value, np.random.Generator):
        return value
    if isinstance(value, np.random.SeedSequence):
        return np.random.default_rng(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, numbers.Integral) and not is_bool(value):
        if int(value) < 0:
            raise ValueError(f"{name} must be a non-negative int seed, got {shown(int(value))}")
        return np.random.default_rng(int(value))
    raise TypeError(
        f"{name} must be a numpy.random.Generator, a numpy.random.SeedSequence or a non-negative int seed, "
        f"got {type(value).__name__}"
    )


def check_mechanism_epsilon(value: object, name: str = "epsilon", *, high: float = math.inf) -> float:
    """A mechanism's epsilon: a real in ``[MIN_MECHANISM_EPSILON, high]``."""
    return check_real(value, name, low=MIN_MECHANISM_EPSILON, high=high)


def check_mechanism_call(size: object, rng: object, epsilon: object) -> tuple[int, np.random.Generator, float]:
    """The common arguments of ``mechanism(data, size, rng, *, epsilon)``: ``size`` in
    ``[0, MAX_MECHANISM_SIZE]``, ``rng`` through :func:`as_generator`, and the epsilon."""
    return (check_int(size, "size", minimum=0, maximum=MAX_MECHANISM_SIZE), as_generator(rng),
            check_mechanism_epsilon(epsilon))


def check_answer_vector(value: object, name: str = "data", *, summed: bool = False) -> NDArray[np.float64]:
    """A non-empty 1-D array of finite reals (query answers, a histogram, one person's vector); with ``summed``, whose
    absolute values also sum to less than 1e307, so that running totals of them (and their noise) stay finite."""
    out = check_float_array(value, name, finite=True, ndim=1, min_size=1)
    if summed and float(np.max(np.abs(out))) * out.size >= 1e307:  # a Python float: inf, not an overflow warning
        raise ValueError(f"{name} must sum in absolute value to less than 1e307 (its running totals overflow float64)")
    return out


def check_output_rows(value: object, name: str = "outputs") -> NDArray[np.float64]:
    """A mechanism's outputs, one row each: a non-empty 2-D array of reals (infinities allowed, no NaN)."""
    return check_float_array(value, name, ndim=2, min_size=1)


def check_integer_value(value: object, low: int, high: int, name: str = "data") -> int:
    """A whole number in ``[low, high]`` given as any real (``2.0`` is accepted: datasets are floats)."""
    x = check_real(value, name)
    if x != round(x) or not low <= x <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {shown(value)}")
    return int(x)


def recordable_seed(value: object, name: str = "rng") -> int | tuple[int, ...]:
    """scipy's ``rng`` for a function that records its seed: the seed whose ``SeedSequence`` repeats the run
    (:func:`seed_entropy` of :func:`check_seed_sequence`; ``None`` draws fresh entropy, then recorded)."""
    return seed_entropy(check_seed_sequence(value, name))


# ---------------------------------------------------------------------------------------------
# (learning) checks for dptutor.learning: a design matrix and its class labels
# ---------------------------------------------------------------------------------------------


def check_labels(value: object, name: str, n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Class labels: a 1-d array of ``n`` integer-valued reals with at least two distinct values, as
    ``(classes, index)``: the sorted distinct labels and each label's position among them."""
    arr = check_float_array(value, name, finite=True, ndim=1)
    if arr.size != n:
        raise ValueError(f"{name} must have one label per row of X ({n}), got {arr.size}")
    if np.any(arr != np.round(arr)) or np.any(np.abs(arr) > 2.0**53):  # beyond 2**53: not exact integers
        raise ValueError(f"{name} must hold integer class labels (of magnitude at most 2**53)")
    classes, index = np.unique(arr.astype(np.int64), return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"{name} must hold at least two distinct classes, got {classes.size}")
    return classes, index.astype(np.int64)


def check_count(value: object, name: str, *, at_most: int, bound_name: str) -> int:
    """A non-negative integer no larger than another parameter's value (``correct <= guesses``)."""
    v = check_int(value, name, minimum=0)
    if v > at_most:
        raise ValueError(f"{name} must be at most {bound_name} ({shown(at_most)}), got {shown(v)}")
    return v


# ---------------------------------------------------------------------------------------------
# scipy's vocabulary: renamed keywords and one ``rng``
# ---------------------------------------------------------------------------------------------

__all__ += ["renamed_parameters", "check_seed_sequence", "seed_entropy"]


def renamed_parameters(**renames: str) -> Any:
    """A decorator that keeps old keyword names working as deprecated aliases of new ones.

    ``@renamed_parameters(confidence="confidence_level", seed="rng")``: a call passing ``confidence=``
    behaves as one passing ``confidence_level=`` and emits a ``DeprecationWarning`` naming the new name;
    passing both names is a ``TypeError`` naming both.  The wrapped function's signature is the new one.
    """
    import functools
    import warnings

    def decorate(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {new}= and its deprecated alias {old}=; pass {new}= only")
                    warnings.warn(f"{fn.__name__}(): {old}= is deprecated and will be removed in the next release; "
                                  f"use {new}=", DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def check_seed_sequence(value: object, name: str = "rng") -> np.random.SeedSequence:
    """``value`` as a ``numpy.random.SeedSequence`` whose ``entropy`` alone repeats it (a recordable seed).

    Accepts what :func:`check_seed` accepts (``None`` draws fresh entropy), a ``SeedSequence`` (used as it
    is when it is a root with the default pool size, else four words of its state seed a new root) or a
    ``numpy.random.Generator`` (four words drawn from it seed a new root).
    """
    if isinstance(value, np.random.Generator):
        return np.random.SeedSequence(tuple(int(v) for v in value.integers(0, 2**32, size=4, dtype=np.uint64)))
    if isinstance(value, np.random.SeedSequence):
        _check_seed_words(value.entropy, f"{name}.entropy")
        _check_seed_words(value.spawn_key, f"{name}.spawn_key")
        if not value.spawn_key and value.pool_size == 4:  # numpy's default pool size: the entropy repeats it
            return value
        return np.random.SeedSequence(tuple(int(v) for v in value.generate_state(4)))
    if value is not None and not isinstance(value, (numbers.Integral, list, tuple, np.ndarray)) or is_bool(value):
        raise TypeError(f"{name} must be None, a non-negative int (or a sequence of them), a numpy.random.SeedSequence "
                        f"or a numpy.random.Generator, got {type(value).__name__}")
    return np.random.SeedSequence(check_seed(value, name))


def _check_seed_words(value: Any, name: str) -> None:
    """A ``SeedSequence``'s ``entropy`` or ``spawn_key`` (an int or a sequence of them, as numpy stored it) within the
    limits of ``check_seed``: at most ``MAX_SEED_LENGTH`` integers, each below ``2**MAX_SEED_BITS``; the length and
    the bit lengths are checked before anything is copied or printed (an empty sequence is numpy's to allow)."""
    if isinstance(value, numbers.Integral):
        _seed_int(value, name, "be")
    elif isinstance(value, (list, tuple, np.ndarray)):
        for item in _bounded_list(value.flat if isinstance(value, np.ndarray) else value, name, MAX_SEED_LENGTH):
            _seed_int(item, name, "hold only")


def seed_entropy(seq: np.random.SeedSequence) -> int | tuple[int, ...]:
    """The entropy of a root ``SeedSequence`` as a plain seed (an int, or a tuple of ints) to record."""
    entropy = seq.entropy
    return tuple(int(v) for v in entropy) if isinstance(entropy, (list, tuple, np.ndarray)) else int(entropy)


def check_pair_list(value: object, name: str) -> list[tuple[Any, Any]]:
    """A non-empty list or tuple of pairs ``(x, x_prime)`` (each a 2-tuple or 2-list), as a list of tuples; a numpy
    array in a pair becomes its ``tolist()`` (so that pairs compare as plain values), and numbers must be finite."""
    items = check_sequence(value, name)
    out = []
    for i, pair in enumerate(items):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{name}[{i}] must be a pair (x, x_prime), got {type(pair).__name__}")
        pair = tuple(item.tolist() if isinstance(item, np.ndarray) else item for item in pair)
        for item in pair:
            try:
                arr = np.asarray(item)
            except Exception:  # ragged or exotic inputs: the mechanism judges them
                continue
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                raise ValueError(f"{name}[{i}] must hold finite inputs, got {shown(item)}")
        out.append(pair)
    return out


def check_tallies(value: object, name: str) -> dict[Any, tuple[int, int]]:
    """Output values (ints or int tuples) mapped to counts under ``x`` and ``x_prime``, as many of each: a dict."""
    out: dict[Any, tuple[int, int]] = {}
    for key, pair in check_mapping(value, name, min_len=0).items():
        parts = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, numbers.Integral) for k in parts):
            raise TypeError(f"{name} must map output values (ints or tuples of ints) to counts, got the key {shown(key)}")
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise TypeError(f"{name}[{shown(key)}] must be a pair of counts (under x, under x_prime), got {shown(pair)}")
        counts = tuple(check_int(c, f"{name}[{shown(key)}]", minimum=0) for c in pair)
        out[tuple(int(k) for k in parts) if isinstance(key, tuple) else int(key)] = counts  # type: ignore[assignment]
    total = sum(a for a, _ in out.values())
    if total != sum(b for _, b in out.values()) or total > 10**13:
        raise ValueError(f"{name} must count as many runs of x as of x_prime, at most 10**13 of each")
    return out
