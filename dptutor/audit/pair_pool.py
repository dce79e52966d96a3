"""The pairs the input search audits: its starting pools and the local moves of its search.

:func:`vector_pairs` starts the search on numeric query vectors, :func:`value_pairs` on categorical or
bounded inputs, and :func:`pair_moves` lists the neighbours of a pair that the local search may try
(:func:`dptutor.audit.pair_search.audit_mechanism`).  Every pair these make is a pair of neighbouring inputs
under the stated relation, which the search's bound needs.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from dptutor._validate import check_bool, check_choice, check_float_array, check_int, check_sequence, shown
from dptutor.audit.search import candidate_pairs

__all__ = ["NEIGHBOURS", "vector_pairs", "value_pairs", "pair_moves"]

#: Neighbour relations of numeric query vectors: every answer may change by at most 1, or one answer only.
NEIGHBOURS = ("componentwise", "one")
_SCALES = (2.0, 5.0)  # base levels of the scaled variants of StatDP's patterns (one answer only)
_HEIGHTS = (-10.0, 0.0, 6.0)  # where the crossing answer starts, above the others (all 2)
_STEPS = (1.0, 4.0)  # how far one answer moves in a local-search step
#: The longest vectors :func:`pair_moves` takes (it returns about ``6 k`` pairs of ``k`` answers).
MAX_MOVE_LENGTH = 1024


def canonical_pair(x: Any, x_prime: Any) -> tuple[Any, Any]:
    """Vectors as tuples of floats (scalars as floats), so that pairs can be compared and deduplicated."""
    def one(v: Any) -> Any:
        arr = np.asarray(v, dtype=np.float64)
        return float(arr) if arr.ndim == 0 else tuple(float(t) for t in arr.ravel())
    return one(x), one(x_prime)


def oriented_key(pair: tuple[Any, Any]) -> tuple[str, str]:
    """A key for a pair in its order: its reverse has another (counts under ``x`` and ``x_prime`` swap with it)."""
    return repr(pair[0]), repr(pair[1])


def pair_key(pair: tuple[Any, Any]) -> Any:
    """The same key for a pair and its reverse (an audit covers both directions)."""
    a, b = oriented_key(pair)
    return (a, b) if a <= b else (b, a)


def unique_pairs(pairs: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The pairs in order, without equal inputs and without repeats (a pair and its reverse count once)."""
    seen: set = set()
    out = []
    for pair in pairs:
        k = pair_key(pair)
        if _distinct(pair) and k not in seen:
            seen.add(k)
            out.append(pair)
    return out


def _distinct(pair: tuple[Any, Any]) -> bool:
    """Whether the pair's two inputs differ; inputs that compare elementwise (arrays, frames) are compared by key."""
    try:
        return bool(pair[0] != pair[1])
    except (TypeError, ValueError):  # "the truth value of an array is ambiguous", or no comparison at all
        a, b = oriented_key(pair)
        return a != b


def vector_pairs(k: int, *, neighbours: str = "componentwise") -> list[tuple[Any, Any]]:
    """Starting pairs for ``k`` numeric query answers (floats when ``k = 1``), each pair once in one order.

    StatDP's patterns (:func:`~dptutor.audit.search.candidate_pairs`; for ``k = 1`` also their scaled and
    signed variants: the input multiplied by 2 or 5, the change added or subtracted), and *crossing* pairs:
    one answer (the first, the middle or one of the last two), level with the others (all 2), 6 above them or
    10 below, moves by 1 one way while every other answer moves by 1 the other way (``componentwise``), or
    moves by 1 alone (``one``).  The pool is kept short on purpose: the pilot's runs are shared among its
    pairs, and at a budget of 10^7 runs it can rank only a few dozen pairs whose epsilon differ by a hundredth.

    Parameters
    ----------
    k : int
        The number of answers, 1 to 4,096.
    neighbours : {"componentwise", "one"}, optional
        Every answer may change by at most 1, or only one answer may.

    Returns
    -------
    list of (x, x_prime)
        Distinct pairs of neighbouring inputs.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.

    Examples
    --------
    >>> vector_pairs(1)[:2]
    [(1.0, 0.0), (1.0, 2.0)]
    """
    k = check_int(k, "k", minimum=1, maximum=1 << 12)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    wide = neighbours == "componentwise"
    base = [(np.array(a), np.array(b)) for a, b in candidate_pairs(k, componentwise=wide and k > 1)]
    pairs = [(a, b) for a, b in base]
    if k == 1:
        for scale in _SCALES:
            pairs += [(scale * a, scale * a + sign * (b - a)) for a, b in base for sign in (1.0, -1.0)]
    for j in sorted({0, k // 2, k - 2, k - 1}) if k > 1 else ():
        for h in _HEIGHTS:
            x = np.full(k, 2.0)
            x[j] += h
            if wide:
                pairs += [(x, x - d + 2 * d * np.eye(k)[j]) for d in (1.0, -1.0)]
            else:
                pairs += [(x, x + np.eye(k)[j])]
    if k == 1:
        pairs = [(a[0], b[0]) for a, b in pairs]
    return unique_pairs([canonical_pair(a, b) for a, b in pairs])


def value_pairs(values: Sequence[Any], *, adjacent: bool = False) -> list[tuple[Any, Any]]:
    """Every pair of distinct values, each once: the starting pairs for categorical or bounded inputs.

    Parameters
    ----------
    values : sequence
        The possible inputs (at least 2, at most 1,000), passed to the mechanism as they are.
    adjacent : bool, optional
        Only the pairs of values next to each other in ``values`` (a bounded count, whose neighbours
        differ by 1), instead of every pair (a category, which a neighbouring input may change to any other).

    Returns
    -------
    list of (x, x_prime)
        The ``n (n - 1) / 2`` pairs (``n - 1`` with ``adjacent``).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.

    Examples
    --------
    >>> value_pairs([0, 1, 2])
    [(0, 1), (0, 2), (1, 2)]
    """
    items = check_sequence(values, "values", min_len=2)
    check_bool(adjacent, "adjacent")
    if len(items) > 1000:
        raise ValueError(f"values must list at most 1000 inputs, got {len(items)}")
    if not all(_finite(a) for a in items):
        raise ValueError("values must be finite (no NaN or inf)")
    out = []
    for i, a in enumerate(items):
        for j, b in enumerate(items[i + 1:], start=i + 1):
            if repr(a) == repr(b):
                raise ValueError(f"values must be distinct, got {shown(a)} twice")
            if not _distinct((a, b)):  # -0.0 and 0.0, 1 and 1.0: the audit would drop their pair
                raise ValueError(f"values must be distinct, got {shown(a)} and {shown(b)}, which are equal (==)")
            if not adjacent or j == i + 1:
                out.append((a, b))
    return out


def _finite(value: Any) -> bool:
    """False for a value holding a NaN or an infinity (a number of any type, or an array or list of them)."""
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Complex):  # Decimal
        return not (hasattr(value, "is_finite") and not value.is_finite())
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):  # ragged or exotic inputs: the mechanism judges them
        return True
    return not (arr.dtype.kind in "fc" and not np.isfinite(arr).all())


def pair_moves(x: Any, x_prime: Any, *, neighbours: str = "componentwise") -> list[tuple[Any, Any]]:
    """The local-search neighbours of a numeric pair: every pair one step away that is still a pair of neighbours.

    A step turns one answer's change to another allowed value (``componentwise``: -1, 0 or 1; ``one``: the
    change moves to another answer or flips its sign), moves one answer of both inputs by 1 or 4 up or down,
    or moves every answer by 1 up or down.

    Parameters
    ----------
    x, x_prime : float or array_like of float
        The pair, of the same length (at most ``MAX_MOVE_LENGTH``), of values at most 1e307 in absolute value.
    neighbours : {"componentwise", "one"}, optional
        The neighbour relation (see :func:`vector_pairs`).

    Returns
    -------
    list of (x, x_prime)
        The distinct neighbouring pairs (vectors as tuples, scalars as floats).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.

    Examples
    --------
    >>> len(pair_moves(1.0, 0.0))
    4
    """
    a = check_float_array(x, "x", finite=True)
    b = check_float_array(x_prime, "x_prime", finite=True)
    if a.shape != b.shape or a.ndim > 1:
        raise ValueError(f"x and x_prime must be scalars or vectors of the same length, got shapes {a.shape} and {b.shape}")
    if a.size > MAX_MOVE_LENGTH:  # the moves hold about 12 k**2 numbers
        raise ValueError(f"x must have at most {MAX_MOVE_LENGTH} answers to list its moves, got {a.size}")
    if max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0)) > 1e307:  # b - a, 2 a - b: finite below 6e307
        raise ValueError("x and x_prime must hold values of at most 1e307 in absolute value")
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    k, d = a.size, b - a
    out = []
    for i in range(k):
        for step in _STEPS:
            for sign in (1.0, -1.0):
                shift = np.where(np.arange(k) == i, sign * step, 0.0)
                out.append((a + shift, b + shift))
        if neighbours == "componentwise":
            out += [(a, a + np.where(np.arange(k) == i, c, d)) for c in (-1.0, 0.0, 1.0) if c != d[i]]
        elif d[i] == 0 and np.any(d != 0):
            out.append((a, a + np.roll(d, i - int(np.flatnonzero(d)[0]))))
    if neighbours == "one":
        out.append((a, a - d))
    out += [(a + s, b + s) for s in (1.0, -1.0)]
    scalar = np.ndim(x) == 0
    return unique_pairs([canonical_pair(p[0] if scalar else p, q[0] if scalar else q) for p, q in out])
