"""The cells of :func:`dptutor.audit.pair.audit_pair`: how a mechanism's outputs are drawn, checked and counted.

One *probe* block fixes the kind of output and a partition of the output space into cells (histogram bins
of a real output or of ``statistic(output)``, or the distinct values of a discrete output); every other
block only counts how many outputs of ``x`` and of ``x_prime`` fall in each cell.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor.audit._sanity_runs import plain_outputs

#: Outputs drawn per mechanism call are capped at this many elements (rows x width), so that a
#: vector-valued mechanism never needs more than a few MB per call.
PAIR_CALL_ELEMENTS: int = 1 << 20
#: Discrete outputs whose value ranges span at most this many mixed-radix cells are counted with bincount.
PAIR_BINCOUNT_CELLS: int = 1 << 22

#: Central histogram bins (uniform between the 1% and 99% quantiles of the probe block).
PAIR_CENTRAL_BINS: int = 4096

#: Bins in each tail (quantiles of the probe block's outputs beyond the 1% / 99% quantiles).
PAIR_TAIL_BINS: int = 256

#: A discrete output with more distinct values than this must be audited through ``statistic``.
PAIR_MAX_CATEGORIES: int = 1 << 16

#: A one-dimensional integer output with more distinct values than this in the probe block is
#: audited with threshold events (as a real number) instead of as categories.
PAIR_MAX_INT_CATEGORIES: int = 4096

__all__ = [
    "PAIR_CALL_ELEMENTS",
    "PAIR_CENTRAL_BINS",
    "PAIR_TAIL_BINS",
    "PAIR_MAX_CATEGORIES",
    "PAIR_MAX_INT_CATEGORIES",
]


def callable_name(fn: object) -> str:
    """A readable name for a user's callable (a ``functools.partial`` shows its function)."""
    if isinstance(fn, functools.partial):
        return callable_name(fn.func)
    name = getattr(fn, "__name__", None) or getattr(fn, "__qualname__", None)
    return str(name) if name else type(fn).__name__


@dataclass(frozen=True)
class Layout:
    """How outputs are turned into cells: fixed by the probe block, shared by every block.

    ``mode`` is ``"real"`` (histogram cells of a real value: the output itself, or
    ``statistic(output)``) or ``"discrete"`` (one cell per distinct output row).
    """

    mode: str
    row_shape: tuple[int, ...]
    floating: bool
    statistic: Any = None
    stat_floating: bool = True  # whether ``statistic`` returns floats (thresholds) or integers (categories)
    lo: float = 0.0
    hi: float = 1.0
    bins: int = 1
    lower_edges: Any = None  # sorted float64 array, all < lo
    upper_edges: Any = None  # sorted float64 array, all > hi

    @property
    def width(self) -> int:
        return int(math.prod(self.row_shape))

    @property
    def cells(self) -> int:
        return len(self.lower_edges) + 1 + self.bins + len(self.upper_edges) + 1

    def boundary(self, j: int) -> float:
        """The threshold t with ``{cell >= j} = {value >= t}`` (up to rounding), 1 <= j < cells."""
        nl = len(self.lower_edges) + 1
        if j < nl:
            return float(self.lower_edges[j - 1])
        if j < nl + self.bins:
            return self.lo + (j - nl) * (self.hi - self.lo) / self.bins
        i = j - nl - self.bins
        return self.hi if i == 0 else float(self.upper_edges[i - 1])


def input_note(data: Any, label: str) -> str:
    """``"NaN"`` or ``"an infinite value"`` if the dataset ``data`` holds one as far as numpy reads it, else ``""``.

    Only called once something has gone wrong, to tell a bad dataset from a broken mechanism: ``data`` may be
    any object the mechanism accepts, so anything numpy cannot read as numbers has nothing to note.
    """
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            arr = np.asarray(data)
            if arr.dtype.kind == "O":  # only its numbers (None would read as NaN)
                arr = np.array([v for v in arr.flat if isinstance(v, numbers.Number)], dtype=np.complex128)
            if arr.dtype.kind not in "fc":
                return ""
            if np.isnan(arr).any():
                return "NaN"
            return "an infinite value" if np.isinf(arr).any() else ""
    except Exception:  # not numbers (a ragged list, a string, a custom object): nothing to note
        return ""


def checked_outputs(out: object, size: int, layout_shape: tuple[int, ...] | None, floating: bool | None, name: str,
                    label: str | None = None, data: Any = None, *, numeric: bool = True) -> np.ndarray:
    """The mechanism's outputs as an array with ``size`` rows, or a ValueError naming it.  With the dataset
    ``data`` it ran on and that dataset's name ``label``, a NaN output names the dataset, and one whose own
    values hold NaN or infinity is blamed first (the message then starts with ``label``).  Outputs must be
    numbers unless ``numeric`` is false (a statistic given by the caller reads them: strings, objects, ...)."""
    if type(out) is not np.ndarray:  # subclasses (matrix, masked arrays) as plain arrays, as estimate_loss does
        raw, out = out, plain_outputs(out, name)
        if out.ndim == 0 and not isinstance(raw, (numbers.Number, np.generic, np.ndarray)):
            # a generator, None, a dict, a string...: numpy reads it as one object, not as outputs
            raise ValueError(f"mechanism {name!r} returned {type(raw).__name__}, not an array of outputs")
    if out.ndim == 0 or out.shape[0] != size:
        got = "a scalar" if out.ndim == 0 else f"{out.shape[0]} outputs (shape {out.shape})"
        raise ValueError(f"mechanism {name!r} returned {got} when asked for size={size}")
    if numeric and out.dtype.kind not in "biuf":
        raise ValueError(f"mechanism {name!r} returned non-numeric outputs (dtype {out.dtype}); pass statistic=... "
                         "(a function from the array of outputs to one number per output, e.g. category codes)")
    if out.dtype.kind == "f" and out.size and np.isnan(out).any():
        if label is None:
            raise ValueError(f"mechanism {name!r} returned NaN")
        held = input_note(data, label)
        if held:
            raise ValueError(f"{label}: mechanism {name!r} returned NaN on {label}, which holds {held}: check {label} "
                             "(audit_pair passes the datasets to the mechanism as they are)")
        raise ValueError(f"mechanism {name!r} returned NaN on {label}")
    if layout_shape is not None:
        if out.shape[1:] != layout_shape:
            raise ValueError(
                f"mechanism {name!r} changed the shape of its outputs: {out.shape[1:]} instead of {layout_shape}"
            )
        if (out.dtype.kind == "f") != floating:
            raise ValueError(f"mechanism {name!r} changed the type of its outputs (now {out.dtype})")
    return out


def _statistic_values(statistic: Any, out: np.ndarray, name: str, floating: bool | None = None) -> np.ndarray:
    """``statistic(out)`` checked: one real per output (floats, never NaN), or one integer or boolean
    (or one row of them) per output, which are then audited as categories.  ``floating`` (once known)
    is the kind that every call must keep returning."""
    sname = callable_name(statistic)
    try:
        raw = statistic(out)
        values = np.asarray(raw)
    except Exception as exc:  # whatever its class (a BaseException such as KeyboardInterrupt passes)
        raise ValueError(f"statistic {sname!r} failed on the outputs of mechanism {name!r}: {_detail(exc)}") from exc
    if isinstance(raw, np.ma.MaskedArray) and np.ma.getmaskarray(raw).any():
        raise ValueError(f"statistic {sname!r} returned a masked array with masked (missing) values")
    if values.dtype.kind not in "biuf":
        raise ValueError(f"statistic {sname!r} must return real numbers, got dtype {values.dtype}")
    is_float = values.dtype.kind == "f"
    rows_ok = values.ndim == 1 or (values.ndim == 2 and not is_float)
    if not rows_ok or values.shape[0] != out.shape[0]:
        raise ValueError(
            f"statistic {sname!r} must return one real per output, shape ({out.shape[0]},), got {values.shape}"
        )
    if floating is not None and is_float != floating:
        raise ValueError(f"statistic {sname!r} changed the type of its values (now {values.dtype})")
    if is_float and np.isnan(values).any():
        raise ValueError(f"statistic {sname!r} returned NaN")
    return values


def _observe(out: np.ndarray, layout: Layout, name: str) -> np.ndarray:
    """What the events look at: ``statistic(out)`` if there is a statistic, else the outputs."""
    if layout.statistic is None:
        return out
    return _statistic_values(layout.statistic, out, name, layout.stat_floating)


def _kept(out: np.ndarray, layout: Layout, name: str) -> np.ndarray:
    """:func:`_observe` as an array of its own, to keep while the mechanism runs again."""
    return np.array(_observe(out, layout, name), copy=True)


def _values(out: np.ndarray, layout: Layout, name: str) -> NDArray[np.float64]:
    """The real value of each output that the threshold events look at."""
    obs = _observe(out, layout, name)
    return obs.reshape(obs.shape[0]).astype(np.float64, copy=False)


def _bin_counts(values: NDArray[np.float64], layout: Layout) -> NDArray[np.int64]:
    """Counts per histogram cell; the cell index is non-decreasing in the value."""
    nl = len(layout.lower_edges) + 1
    span = layout.hi - layout.lo
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if math.isinf(span):  # a range beyond the floats: halves
            t = (values / 2 - layout.lo / 2) / (layout.hi / 2 - layout.lo / 2) * layout.bins
        elif math.isinf(layout.bins / span):  # a subnormal range, whose reciprocal overflows: divide first
            t = (values - layout.lo) / span * layout.bins
        else:
            t = np.subtract(values, layout.lo)
            np.multiply(t, layout.bins / span, out=t)
    np.clip(t, 0.0, layout.bins - 0.5, out=t)
    idx = t.astype(np.int64)
    idx += nl
    low = values < layout.lo
    if low.any():
        idx[low] = np.searchsorted(layout.lower_edges, values[low], side="right")
    high = values >= layout.hi
    if high.any():
        idx[high] = nl + layout.bins + np.searchsorted(layout.upper_edges, values[high], side="right")
    return np.bincount(idx, minlength=layout.cells).astype(np.int64, copy=False)


def _category_counts(out: np.ndarray) -> dict[Any, int]:
    """Distinct output rows (ints, or tuples of ints for vectors) and how often each occurs."""
    rows = out.reshape(out.shape[0], -1)
    if rows.shape[0] == 0:
        return {}
    if rows.dtype.kind not in "iu":
        rows = rows.astype(np.int64)
    width = rows.shape[1]
    low, high = int(rows.min()), int(rows.max())
    if rows.dtype == np.uint64:
        if high >= 2**63:  # beyond int64: count the rows as they are (Python ints keep every label exact)
            return _unique_rows(rows)
        rows = rows.astype(np.int64)
    # Ranges as Python ints (no overflow): one range for every column when it is small enough, else per column.
    r = high - low + 1
    if r == 1 or (width <= PAIR_BINCOUNT_CELLS.bit_length() and r**width <= PAIR_BINCOUNT_CELLS):
        lo, radix = [low] * width, [r] * width
    else:
        lo = rows.min(axis=0).tolist()
        radix = [h - v + 1 for h, v in zip(rows.max(axis=0).tolist(), lo)]
    space = math.prod(radix)
    if space >= 2**62:
        return _unique_rows(rows)
    mult = np.array([math.prod(radix[k + 1:]) for k in range(width)], dtype=np.int64)  # place values
    if space <= PAIR_BINCOUNT_CELLS:
        # Mixed-radix codes (one int per row, built column by column) counted by bincount: no sort.
        code = rows[:, 0].astype(np.int32 if rows.dtype.itemsize < 4 else np.int64)
        code -= lo[0]
        for k in range(1, width):
            code *= radix[k]
            code += rows[:, k]
            code -= lo[k]
        bc = np.bincount(code, minlength=space)
        codes = np.flatnonzero(bc)
        counts = bc[codes]
    else:
        codes, counts = np.unique((rows.astype(np.int64) - np.array(lo, dtype=np.int64)) @ mult, return_counts=True)
    if width == 1:
        return dict(zip((codes + lo[0]).tolist(), counts.tolist()))
    digits = (codes[:, None] // mult) % np.array(radix, dtype=np.int64) + np.array(lo, dtype=np.int64)
    return dict(zip(map(tuple, digits.tolist()), counts.tolist()))


def _unique_rows(rows: np.ndarray) -> dict[Any, int]:
    """:func:`_category_counts` by sorting the rows (for output spaces too large to code in one int64)."""
    keys, counts = np.unique(rows, axis=0, return_counts=True)
    if rows.shape[1] == 1:
        return dict(zip(keys[:, 0].tolist(), counts.tolist()))
    return dict(zip(map(tuple, keys.tolist()), counts.tolist()))


def _detail(exc: BaseException) -> str:
    """An exception's message on one line (``ZeroDivisionError: boom`` unless a TypeError or ValueError)."""
    try:
        text = " ".join(str(exc).split())
    except Exception:  # a __str__ that raises (or an argument too long to print)
        text = "(a message that cannot be printed)"
    return text if isinstance(exc, (TypeError, ValueError)) else f"{type(exc).__name__}: {text}"


def call_mechanism(mechanism: Any, data: Any, size: int, rng: np.random.Generator, label: str, name: str,
                   first: bool = False) -> Any:
    """``mechanism(data, size, rng)``, on every call; any exception it raises (an ``Exception``: KeyboardInterrupt
    and other BaseExceptions pass through) becomes a TypeError (if it was one) or a ValueError naming the
    mechanism and the dataset ``label`` it failed on, which a ``first`` call puts first (most often bad data
    or a wrong signature)."""
    try:
        return mechanism(data, size, rng)
    except Exception as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        held = input_note(data, label)
        where = f"{label}: " if first or held else ""
        which = f"{label}, which holds {held}" if held else label
        raise kind(f"{where}mechanism {name!r} failed on {which} (called as mechanism(data, size, rng)): {_detail(exc)}"
                   ) from exc


def draw_outputs(mechanism: Any, data: Any, size: int, rng: np.random.Generator, layout: Layout, name: str,
                 label: str = "data"):
    """Yield the outputs of ``size`` runs on ``data`` (the dataset ``label``), in calls of at most
    PAIR_CALL_ELEMENTS elements."""
    rows = max(1, PAIR_CALL_ELEMENTS // max(1, layout.width))
    done = 0
    while done < size:
        m = min(rows, size - done)
        yield checked_outputs(call_mechanism(mechanism, data, m, rng, label, name), m, layout.row_shape, layout.floating,
                              name, label, data, numeric=layout.statistic is None)
        done += m


def pair_block(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence, layout: Layout
) -> Any:
    """One independent block: ``size`` runs on ``x`` then on ``x_prime`` with one generator.

    Returns a ``(2, cells)`` count array (real mode) or two dicts of category counts (discrete).
    """
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    if layout.mode == "real":
        counts = np.zeros((2, layout.cells), dtype=np.int64)
        for d, data in enumerate((x, x_prime)):
            for out in draw_outputs(mechanism, data, size, rng, layout, name, ("x", "x_prime")[d]):
                counts[d] += _bin_counts(_values(out, layout, name), layout)
        return counts
    result: list[dict[Any, int]] = [{}, {}]
    for d, data in enumerate((x, x_prime)):
        acc = result[d]
        for out in draw_outputs(mechanism, data, size, rng, layout, name, ("x", "x_prime")[d]):
            for key, c in _category_counts(_observe(out, layout, name)).items():
                acc[key] = acc.get(key, 0) + c
            if len(acc) > PAIR_MAX_CATEGORIES:
                raise ValueError(
                    f"mechanism {name!r} returned more than {PAIR_MAX_CATEGORIES} distinct outputs; "
                    "audit it through statistic=... (a function from outputs to reals) or statistic='learned'"
                )
    return result


def _real_layout(values: NDArray[np.float64], row_shape: tuple[int, ...], floating: bool, statistic: Any) -> Layout:
    """Histogram cells from the probe block's values: uniform bins between the 1% and 99%
    quantiles, quantile bins in each tail (all from observed values, so no interpolation)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        lo, hi = 0.0, 1.0
    else:
        q01, q25, q75, q99 = (
            float(q) for q in np.quantile(finite, [0.01, 0.25, 0.75, 0.99], method="inverted_cdf")
        )
        lo, hi = q01, q99
        with np.errstate(over="ignore"):
            iqr, span = q75 - q25, hi - lo
        if 0 < iqr < math.inf and not span <= 50 * iqr:
            # Far outliers (or an overflowing range) would make the uniform bins too coarse for
            # the bulk: bin the bulk uniformly and leave the outliers to the quantile tails.
            lo, hi = max(lo, q25 - 20 * iqr), min(hi, q75 + 20 * iqr)
        if hi <= lo:
            lo, hi = float(finite.min()), float(finite.max())
        if hi <= lo:
            hi = lo + max(1.0, abs(lo)) * 1e-9
        with np.errstate(over="ignore"):
            if not math.isfinite(hi - lo):  # the range still overflows: halve it
                lo, hi = lo / 2.0, hi / 2.0
    levels = np.linspace(0.0, 1.0, PAIR_TAIL_BINS + 1)
    below, above = values[values < lo], values[values > hi]
    lower = np.unique(np.quantile(below, levels, method="inverted_cdf")) if below.size else np.empty(0)
    upper = np.unique(np.quantile(above, levels, method="inverted_cdf")) if above.size else np.empty(0)
    return Layout(
        mode="real", row_shape=row_shape, floating=floating, statistic=statistic, lo=lo, hi=hi,
        bins=PAIR_CENTRAL_BINS, lower_edges=lower.astype(np.float64), upper_edges=upper.astype(np.float64),
    )


def first_call(mechanism: Any, data: Any, size: int, rng: np.random.Generator, label: str, name: str) -> Any:
    """The very first call on ``data``: an error there is most often bad ``data`` or a wrong signature."""
    return call_mechanism(mechanism, data, size, rng, label, name, first=True)


def probe_block(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence, statistic: Any,
    first: Any = None,
) -> tuple[Layout, Any]:
    """The first selection block: learn the outputs' kind and shape, fix the cells, count them.

    Its first call asks for at most 64 outputs (to learn the row width before asking for many), unless
    ``first`` already holds such outputs of ``x`` (from :func:`_learned_statistic`'s probe, which is
    independent of the estimation half like every selection run).
    """
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    if first is None or first.shape[0] > size:
        first = checked_outputs(first_call(mechanism, x, min(size, 64), rng, "x", name), min(size, 64), None, None,
                                 name, "x", x, numeric=statistic is None)
    row_shape, floating = first.shape[1:], first.dtype.kind == "f"
    width = int(math.prod(row_shape))
    if width == 0:
        raise ValueError(f"mechanism {name!r} returned empty outputs (shape {first.shape})")
    stat_floating = True
    if statistic is not None:
        first_obs = _statistic_values(statistic, first, name)
        stat_floating = first_obs.dtype.kind == "f"
        mode = "real" if stat_floating else "discrete"
    elif floating and width > 1:
        raise ValueError(
            f"mechanism {name!r} returns real vectors of shape {row_shape}; pass statistic=... (a function "
            "from an array of outputs to one real per output, e.g. a sum or a log-likelihood ratio)"
        )
    else:
        first_obs = first
        mode = "real" if floating else "discrete"
    layout = Layout(mode=mode, row_shape=row_shape, floating=floating, statistic=statistic, stat_floating=stat_floating)
    # Only what the events look at is kept (never a block of wide raw outputs), as copies: a mechanism or a
    # statistic may return views of one buffer that it reuses, which later calls would overwrite.
    obs: list[list[np.ndarray]] = [[np.array(first_obs, copy=True)], []]
    rest = size - first.shape[0]
    if rest:
        obs[0].extend(_kept(o, layout, name) for o in draw_outputs(mechanism, x, rest, rng, layout, name, "x"))
    draws = draw_outputs(mechanism, x_prime, size, rng, layout, name, "x_prime")
    try:
        first_prime = next(draws)
    except (TypeError, ValueError) as exc:  # the first call on x_prime: as first_call, the dataset first
        if str(exc).startswith("x_prime: "):
            raise
        raise (TypeError if isinstance(exc, TypeError) else ValueError)(f"x_prime: {exc}") from exc.__cause__ or exc
    obs[1].append(_kept(first_prime, layout, name))
    obs[1].extend(_kept(o, layout, name) for o in draws)

    if mode == "discrete" and obs[0][0].ndim == 1:
        distinct = np.unique(np.concatenate(obs[0] + obs[1]))
        if distinct.size > PAIR_MAX_INT_CATEGORIES:
            mode = "real"  # e.g. a noisy integer count with a wide range: threshold it
    if mode == "real":
        values = [np.concatenate([o.reshape(o.shape[0]) for o in obs[d]]).astype(np.float64) for d in (0, 1)]
        layout = _real_layout(np.concatenate(values), row_shape, floating, statistic)
        layout = dataclasses.replace(layout, stat_floating=stat_floating)
        counts = np.stack([_bin_counts(values[d], layout) for d in (0, 1)])
        return layout, counts
    result: list[dict[Any, int]] = [{}, {}]
    for d in (0, 1):
        for o in obs[d]:
            for key, c in _category_counts(o).items():
                result[d][key] = result[d].get(key, 0) + c
    return layout, result


def discrete_order(table: dict[Any, NDArray[np.int64]]) -> tuple[list[Any], NDArray[np.int64], NDArray[np.int64]]:
    """The distinct output values in the order whose prefixes are the candidate events, with their counts.

    ``table[value]`` holds ``(selection x, selection x', estimation x, estimation x')`` counts.  Values are
    ordered by their likelihood ratio on the selection half only (add-1/2 smoothing keeps values seen under
    one dataset finite), ties in the order of the values.  Values never seen in the selection half (only
    in the estimation half) go last, whatever their counts: no candidate prefix reaches them (a prefix
    holding every seen value is never chosen), so every candidate event S is a set of seen values and S^c
    is everything else, both fixed by the selection half alone, as the soundness argument needs.
    Returns ``(keys, sel, est)``, the counts as ``(2, values)`` arrays in that order.
    """
    keys = sorted(table, key=lambda k: (k,) if not isinstance(k, tuple) else k)
    arr = np.array([table[k] for k in keys], dtype=np.int64).reshape(-1, 4)
    ratio = np.log(arr[:, 0] + 0.5) - np.log(arr[:, 1] + 0.5)
    unseen = (arr[:, 0] + arr[:, 1]) == 0
    order = np.lexsort((-ratio, unseen))  # stable: seen values first, then by ratio, ties by value
    return [keys[i] for i in order], arr[order, 0:2].T, arr[order, 2:4].T



@dataclass(frozen=True)
class Layouts:
    """The cells of several statistics of the same outputs, side by side (their counts concatenated): how the
    selection half counts every candidate statistic of ``audit_pair``'s learned mode."""

    layouts: tuple[Layout, ...]
    mode: str = "real"

    @property
    def cells(self) -> int:
        return sum(layout.cells for layout in self.layouts)

    def split(self, counts: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        """Concatenated ``(2, cells)`` counts cut back into one array per statistic."""
        edges = np.cumsum([layout.cells for layout in self.layouts])[:-1]
        return np.split(counts, edges, axis=1)


def multi_probe(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence,
    statistics: tuple[Any, ...],
) -> tuple[Layouts, NDArray[np.int64]]:
    """:func:`probe_block` for several real-valued statistics of the same outputs: each gets the cells its own
    values call for; the counts of all are concatenated.  The runs are those :func:`probe_block` makes."""
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    first = checked_outputs(first_call(mechanism, x, min(size, 64), rng, "x", name), min(size, 64), None, None,
                            name, "x", x, numeric=False)
    row_shape, floating = first.shape[1:], first.dtype.kind == "f"
    if int(math.prod(row_shape)) == 0:
        raise ValueError(f"mechanism {name!r} returned empty outputs (shape {first.shape})")
    plain = [Layout(mode="real", row_shape=row_shape, floating=floating, statistic=s) for s in statistics]
    values: list[list[list[np.ndarray]]] = [[[_values(first, lay, name).copy()] for lay in plain], [[] for _ in plain]]
    runs = ((x, "x", draw_outputs(mechanism, x, size - first.shape[0], rng, plain[0], name, "x")),
            (x_prime, "x_prime", draw_outputs(mechanism, x_prime, size, rng, plain[0], name, "x_prime")))
    for d, (_, _, draws) in enumerate(runs):
        for out in draws:
            for k, lay in enumerate(plain):
                values[d][k].append(_values(out, lay, name).copy())
    layouts, counts = [], []
    for k, statistic in enumerate(statistics):
        both = [np.concatenate(values[d][k]) for d in (0, 1)]
        layout = _real_layout(np.concatenate(both), row_shape, floating, statistic)
        layouts.append(layout)
        counts.append(np.stack([_bin_counts(both[d], layout) for d in (0, 1)]))
    return Layouts(tuple(layouts)), np.concatenate(counts, axis=1)


def multi_block(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence, layouts: Layouts
) -> NDArray[np.int64]:
    """:func:`pair_block` counting the same runs in the cells of every statistic of ``layouts`` (concatenated)."""
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    parts = [np.zeros((2, layout.cells), dtype=np.int64) for layout in layouts.layouts]
    for d, data in enumerate((x, x_prime)):
        for out in draw_outputs(mechanism, data, size, rng, layouts.layouts[0], name, ("x", "x_prime")[d]):
            for part, layout in zip(parts, layouts.layouts):
                part[d] += _bin_counts(_values(out, layout, name), layout)
    return np.concatenate(parts, axis=1)
