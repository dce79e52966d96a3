"""A general auditor for one pair of neighbouring datasets: :func:`audit_pair` and :class:`PairAudit`."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import itertools
import math
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_callable,
    check_choice,
    check_float_array,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_seed,
    check_workers,
)
from dptutor.audit.learned import LEARN_MAX_TRIALS, LEARN_TRIALS, fit_statistic
from dptutor.audit.sanity import BLOCK_TRIALS

__all__: list[str] = []


def _fmt(x: float) -> str:
    return "inf" if x == math.inf else f"{x:.4g}"


# =============================================================================================
# audit_pair: a general auditor for one pair of neighbouring datasets
# =============================================================================================
#
# How it works (see the docstring of :func:`audit_pair`):
#
# 1. One *probe* block (the first block of the selection half, always run in this process) fixes
#    the kind of output and the *cells* of a partition of the output space: histogram bins of a
#    real output (or of ``statistic(output)``), or the distinct values of a discrete output.
# 2. Every other block, of both halves, is independent (seeded by ``SeedSequence.spawn``) and only
#    counts how many outputs of ``x`` and of ``x_prime`` fall in each cell; integer counts add up
#    in any order, so the result does not depend on ``workers`` or ``executor``.
# 3. The selection half's counts order the cells (by value, or by estimated likelihood ratio) and
#    choose the cut: the event S is a prefix of that order (or its complement).
# 4. The estimation half's counts of S, with Clopper-Pearson bounds, give the lower bound.

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

#: Blocks submitted to an executor at any one time (bounds memory; an interrupt loses these).
PAIR_IN_FLIGHT: int = 64

#: The ways :func:`audit_pair` bounds the chosen event's probabilities (``bounds=``).
PAIR_BOUNDS: tuple[str, ...] = ("four", "two", "joint")
#: ``bounds="joint"`` measures the event on a Poisson number of the estimation half's runs, with mean
#: ``T_est - POISSON_MARGIN * sqrt(T_est)``; when the draw exceeds ``T_est`` (probability about 1e-9) the
#: bound is 0, so the statement stays exact.
POISSON_MARGIN: float = 6.0
#: The fractions of the runs that may choose the event (``selection``): outside it one of the two parts
#: is too small to be worth its runs, and the cut's score (which widens by their ratio) degenerates.
SELECTION_RANGE = (0.01, 0.99)

__all__ += [
    "PAIR_BOUNDS",
    "POISSON_MARGIN",
    "SELECTION_RANGE",
    "PairAudit",
    "audit_pair",
    "PAIR_CALL_ELEMENTS",
    "PAIR_IN_FLIGHT",
    "PAIR_CENTRAL_BINS",
    "PAIR_TAIL_BINS",
    "PAIR_MAX_CATEGORIES",
    "PAIR_MAX_INT_CATEGORIES",
]


def _callable_name(fn: object) -> str:
    """A readable name for a user's callable (a ``functools.partial`` shows its function)."""
    if isinstance(fn, functools.partial):
        return _callable_name(fn.func)
    name = getattr(fn, "__name__", None) or getattr(fn, "__qualname__", None)
    return str(name) if name else type(fn).__name__


@dataclass(frozen=True)
class _Layout:
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


def _checked_outputs(out: object, size: int, layout_shape: tuple[int, ...] | None, floating: bool | None, name: str) -> np.ndarray:
    """The mechanism's outputs as an array with ``size`` rows, or a ValueError naming it."""
    if not isinstance(out, np.ndarray):
        try:
            out = np.asarray(out)
        except Exception as exc:
            raise ValueError(f"mechanism {name!r} returned {type(out).__name__}, not an array of outputs") from exc
    if out.ndim == 0 or out.shape[0] != size:
        got = "a scalar" if out.ndim == 0 else f"{out.shape[0]} outputs (shape {out.shape})"
        raise ValueError(f"mechanism {name!r} returned {got} when asked for size={size}")
    if out.dtype.kind not in "biuf":
        raise ValueError(f"mechanism {name!r} returned non-numeric outputs (dtype {out.dtype})")
    if out.dtype.kind == "f" and out.size and np.isnan(out).any():
        raise ValueError(f"mechanism {name!r} returned NaN")
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
    sname = _callable_name(statistic)
    try:
        values = np.asarray(statistic(out))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"statistic {sname!r} failed on the outputs of mechanism {name!r}: {exc}") from exc
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


def _observe(out: np.ndarray, layout: _Layout, name: str) -> np.ndarray:
    """What the events look at: ``statistic(out)`` if there is a statistic, else the outputs."""
    if layout.statistic is None:
        return out
    return _statistic_values(layout.statistic, out, name, layout.stat_floating)


def _values(out: np.ndarray, layout: _Layout, name: str) -> NDArray[np.float64]:
    """The real value of each output that the threshold events look at."""
    obs = _observe(out, layout, name)
    return obs.reshape(obs.shape[0]).astype(np.float64, copy=False)


def _bin_counts(values: NDArray[np.float64], layout: _Layout) -> NDArray[np.int64]:
    """Counts per histogram cell; the cell index is non-decreasing in the value."""
    nl = len(layout.lower_edges) + 1
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.subtract(values, layout.lo)
        np.multiply(t, layout.bins / (layout.hi - layout.lo), out=t)
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


def _draw(mechanism: Any, data: Any, size: int, rng: np.random.Generator, layout: _Layout, name: str):
    """Yield the outputs of ``size`` runs on ``data``, in calls of at most PAIR_CALL_ELEMENTS elements."""
    rows = max(1, PAIR_CALL_ELEMENTS // max(1, layout.width))
    done = 0
    while done < size:
        m = min(rows, size - done)
        yield _checked_outputs(mechanism(data, m, rng), m, layout.row_shape, layout.floating, name)
        done += m


def _pair_block(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence, layout: _Layout
) -> Any:
    """One independent block: ``size`` runs on ``x`` then on ``x_prime`` with one generator.

    Returns a ``(2, cells)`` count array (real mode) or two dicts of category counts (discrete).
    """
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    if layout.mode == "real":
        counts = np.zeros((2, layout.cells), dtype=np.int64)
        for d, data in enumerate((x, x_prime)):
            for out in _draw(mechanism, data, size, rng, layout, name):
                counts[d] += _bin_counts(_values(out, layout, name), layout)
        return counts
    result: list[dict[Any, int]] = [{}, {}]
    for d, data in enumerate((x, x_prime)):
        acc = result[d]
        for out in _draw(mechanism, data, size, rng, layout, name):
            for key, c in _category_counts(_observe(out, layout, name)).items():
                acc[key] = acc.get(key, 0) + c
            if len(acc) > PAIR_MAX_CATEGORIES:
                raise ValueError(
                    f"mechanism {name!r} returned more than {PAIR_MAX_CATEGORIES} distinct outputs; "
                    "audit it through statistic=... (a function from outputs to reals) or statistic='learned'"
                )
    return result


def _real_layout(values: NDArray[np.float64], row_shape: tuple[int, ...], floating: bool, statistic: Any) -> _Layout:
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
    return _Layout(
        mode="real", row_shape=row_shape, floating=floating, statistic=statistic, lo=lo, hi=hi,
        bins=PAIR_CENTRAL_BINS, lower_edges=lower.astype(np.float64), upper_edges=upper.astype(np.float64),
    )


def _first_call(mechanism: Any, data: Any, size: int, rng: np.random.Generator, label: str, name: str) -> Any:
    """The very first call on ``data``: an error there is most often bad ``data`` or a wrong signature."""
    try:
        return mechanism(data, size, rng)
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"{label}: mechanism {name!r} failed on {label} (called as mechanism(data, size, rng)): {exc}"
        ) from exc


def _probe_block(
    mechanism: Any, name: str, x: Any, x_prime: Any, size: int, seed_seq: np.random.SeedSequence, statistic: Any,
    first: Any = None,
) -> tuple[_Layout, Any]:
    """The first selection block: learn the outputs' kind and shape, fix the cells, count them.

    Its first call asks for at most 64 outputs (to learn the row width before asking for many), unless
    ``first`` already holds such outputs of ``x`` (from :func:`_learned_statistic`'s probe, which is
    independent of the estimation half like every selection run).
    """
    rng = np.random.Generator(np.random.PCG64(seed_seq))
    if first is None or first.shape[0] > size:
        first = _checked_outputs(_first_call(mechanism, x, min(size, 64), rng, "x", name), min(size, 64), None, None,
                                 name)
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
    layout = _Layout(mode=mode, row_shape=row_shape, floating=floating, statistic=statistic, stat_floating=stat_floating)
    # Only what the events look at is kept (never a block of wide raw outputs).
    obs: list[list[np.ndarray]] = [[first_obs], []]
    rest = size - first.shape[0]
    if rest:
        obs[0].extend(_observe(o, layout, name) for o in _draw(mechanism, x, rest, rng, layout, name))
    draws = _draw(mechanism, x_prime, size, rng, layout, name)
    try:
        first_prime = next(draws)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"x_prime: mechanism {name!r} failed on x_prime: {exc}") from exc
    obs[1].append(_observe(first_prime, layout, name))
    obs[1].extend(_observe(o, layout, name) for o in draws)

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


def _wilson(p: NDArray[np.float64], n: int, z: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score bounds for proportions ``p`` at sample size ``n``: a cheap, vectorised
    stand-in for Clopper-Pearson, used only to *choose* the event on the selection half."""
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return np.maximum(centre - half, 0.0), np.minimum(centre + half, 1.0)


def _log_ratio(num: Any, den: Any) -> Any:
    """``ln(num / den)`` elementwise, ``-inf`` where ``num <= 0`` (``den`` is always > 0)."""
    num = np.asarray(num, dtype=np.float64)
    out = np.full(num.shape, -np.inf)
    ok = num > 0
    out[ok] = np.log(num[ok]) - np.log(np.asarray(den, dtype=np.float64)[ok] if np.ndim(den) else den)
    return out


def _exact_interval(k: int, n: int, alpha_each_side: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion, ``alpha_each_side`` per side: the two
    one-sided bounds of :func:`_exact_one_sided` (beta quantiles; ``scipy.stats.binomtest``'s
    ``proportion_ci(method="exact")`` finds the same bounds by a root search, some 18 times slower)."""
    return (_exact_one_sided(k, n, alpha_each_side, lower=True), _exact_one_sided(k, n, alpha_each_side, lower=False))


def _exact_one_sided(k: int, n: int, alpha: float, *, lower: bool) -> float:
    """The one-sided Clopper-Pearson bound at error ``alpha`` for ``k`` successes in ``n`` trials: the lower
    bound ``Beta(k, n - k + 1).ppf(alpha)`` (0 when ``k = 0``), or the upper ``Beta(k + 1, n - k).isf(alpha)``
    (1 when ``k = n``)."""
    from scipy import stats

    if lower:
        return 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    return 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))


def _joint_bound(k_num: int, k_den: int, n: int, alpha: float, seed: Any) -> float:
    """The ``bounds="joint"`` lower bound on ``ln(p_num / p_den)`` from the event's counts ``k_num`` and
    ``k_den`` among ``n`` runs of each dataset (the joint variant of the book's split-sample audit).

    Each dataset keeps a uniformly random subset of its runs whose size ``R`` is Poisson with mean
    ``R_bar = n - POISSON_MARGIN * sqrt(n)`` (a draw seeded by ``seed``, independent of the runs).  The counts
    of the event in the kept runs are then independent Poisson variables with means ``R_bar p_num`` and
    ``R_bar p_den``, so given their sum ``m`` the numerator's count is ``Binomial(m, w)`` with the share
    ``w = p_num / (p_num + p_den)`` (the book's varpi).  The one-sided Clopper-Pearson bound at error ``alpha`` on
    ``w`` gives ``ln(w_lo / (1 - w_lo))``.  If either ``R`` exceeds ``n`` (probability about 1e-9), the bound is 0."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3,)))
    lam = max(0.0, n - POISSON_MARGIN * math.sqrt(n))
    kept = []
    for k in (k_num, k_den):
        size = int(rng.poisson(lam))
        if size > n:
            return 0.0
        kept.append(int(rng.hypergeometric(k, n - k, size)) if size > 0 else 0)
    m = kept[0] + kept[1]
    share_lo = _exact_one_sided(kept[0], m, alpha, lower=True) if m > 0 else 0.0
    if share_lo <= 0.0:
        return 0.0
    return max(0.0, math.log(share_lo) - math.log1p(-share_lo))


#: The four (event, direction) pairs compared for a prefix P of the cells: (complement?, numerator).
_COMBOS = ((False, 0), (False, 1), (True, 0), (True, 1))


@dataclass(frozen=True, eq=False)
class PairAudit:
    """Outcome of :func:`audit_pair`.

    Attributes
    ----------
    lower_bound:
        With probability at least ``confidence``, the mechanism's true epsilon (at ``delta``) is at
        least this value; never negative, never NaN.
    estimate:
        The plug-in value ``ln((p - delta) / p')`` of the chosen event on the estimation half
        (``math.inf`` when ``p' = 0``); a point estimate, not a bound.
    event:
        The chosen event S, in words, with the dataset under which it is more likely.
    counts:
        Read-only 2x2 int array from the estimation half: row 0 is the dataset under which S is
        more likely (the numerator), row 1 the other; column 0 counts outputs in S, column 1 not in S.
    trials, selection_trials, estimation_trials:
        Runs per dataset in all, used to choose S, and used to estimate its probabilities.
    epsilon, delta, confidence:
        The claimed epsilon, the delta of the bound, and the confidence level.
    seed:
        The SeedSequence entropy: ``audit_pair(..., seed=result.seed)`` repeats the run exactly.
    mechanism:
        The mechanism's name.
    threshold:
        For threshold events, the threshold t (S is ``value >= t`` or ``value < t``); else None.
    false_positive_rates, false_negative_rates:
        Read-only arrays: the empirical trade-off points (type I error ``P[M(x) in E]``, type II
        error ``P[M(x') not in E]``) of every candidate event E on the estimation half, for a test
        that rejects "the data is x" when the output lands in E (see :meth:`tradeoff`).
    """

    lower_bound: float
    estimate: float
    event: str
    counts: NDArray[np.int64]
    trials: int
    epsilon: float
    delta: float = 0.0
    confidence: float = 0.95
    seed: int | tuple[int, ...] | None = None
    mechanism: str = ""
    selection_trials: int = 0
    estimation_trials: int = 0
    threshold: float | None = None
    false_positive_rates: Any = None
    false_negative_rates: Any = None

    def __post_init__(self) -> None:
        check_real(self.lower_bound, "lower_bound", low=0.0)
        check_real(self.estimate, "estimate", low=0.0, allow_inf=True)
        check_positive(self.epsilon, "epsilon")
        check_real(self.delta, "delta", low=0.0, high=1.0, high_open=True)
        check_probability(self.confidence, "confidence")
        check_int(self.trials, "trials", minimum=1)
        if not isinstance(self.event, str):
            raise TypeError(f"event must be a string, got {type(self.event).__name__}")
        if not isinstance(self.mechanism, str):
            raise TypeError(f"mechanism must be a string, got {type(self.mechanism).__name__}")
        check_seed(self.seed, "seed")
        check_int(self.selection_trials, "selection_trials", minimum=0)
        check_int(self.estimation_trials, "estimation_trials", minimum=0)
        if self.threshold is not None:
            check_real(self.threshold, "threshold", allow_inf=True)
        table = check_float_array(self.counts, "counts", finite=True)
        if table.shape != (2, 2) or (table < 0).any() or (table != np.round(table)).any() or table.max() >= 2.0**62:
            raise ValueError(f"counts must be a 2x2 table of non-negative integers, got {table.tolist()}")
        counts = table.astype(np.int64)
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)
        for field in ("false_positive_rates", "false_negative_rates"):
            value = getattr(self, field)
            arr = np.empty(0) if value is None else check_float_array(value, field, finite=True, ndim=1).copy()
            arr.setflags(write=False)
            object.__setattr__(self, field, arr)
        if self.false_positive_rates.shape != self.false_negative_rates.shape:
            raise ValueError("false_positive_rates and false_negative_rates must have the same length")

    def is_violation(self) -> bool:
        """True when the lower bound exceeds the claimed ``epsilon``: the mechanism is not
        (epsilon, delta)-DP, with error probability at most ``1 - confidence``."""
        return self.lower_bound > self.epsilon

    def tradeoff(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The empirical trade-off points ``(alpha, beta)``, sorted by ``alpha``.

        ``alpha`` is the false-positive rate ``P[M(x) in E]`` and ``beta`` the false-negative rate
        ``P[M(x') not in E]`` of each candidate event E, on the estimation half (plug-in values, not
        bounds).  For an f-DP mechanism the points lie above its trade-off curve f, up to sampling
        error; for the Gaussian mechanism f(alpha) = Phi(Phi^-1(1 - alpha) - mu).
        """
        order = np.argsort(self.false_positive_rates, kind="stable")
        return self.false_positive_rates[order], self.false_negative_rates[order]

    def summary(self) -> str:
        """A short multi-line report: parameters, the event, its counts, the bound and the verdict."""
        n = self.estimation_trials or int(self.counts[0].sum())
        pct = f"{100 * self.confidence:g}%"
        eps_name = f"({self.epsilon:g}, {self.delta:g})" if self.delta else f"{self.epsilon:g}"
        verdict = (
            f"lower bound > epsilon = {self.epsilon:g}: NOT {eps_name}-DP"
            if self.is_violation()
            else f"no violation detected at epsilon = {self.epsilon:g} (which does not prove DP)"
        )
        return "\n".join(
            [
                f"Pair audit of {self.mechanism or 'mechanism'}: claimed epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"trials={self.trials} per dataset ({self.selection_trials} to choose S, {n} to estimate), seed={self.seed}",
                f"event S: {self.event}",
                f"in S: {self.counts[0, 0]} of {n} (numerator dataset), {self.counts[1, 0]} of {n} (other)",
                f"estimated loss {_fmt(self.estimate)}; {pct} lower bound {self.lower_bound:.4g}",
                verdict,
            ]
        )

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (
            f"PairAudit(mechanism={self.mechanism!r}, epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"lower_bound={self.lower_bound!r}, estimate={self.estimate!r}, event={self.event!r}, "
            f"counts={self.counts.tolist()}, trials={self.trials}, seed={self.seed!r})"
        )


def _describe_set(keys: list[Any]) -> str:
    shown = ", ".join(map(str, keys[:8]))
    if len(keys) <= 8:
        return f"output in {{{shown}}}"
    return f"output in a set of {len(keys)} values {{{shown}, ...}}"


def audit_pair(
    mechanism: Any,
    x: Any,
    x_prime: Any,
    *,
    epsilon: float,
    trials: int,
    seed: int | Sequence[int] | None = None,
    confidence: float = 0.95,
    statistic: Any = None,
    delta: float = 0.0,
    workers: int = 1,
    executor: concurrent.futures.Executor | None = None,
    selection: float = 0.5,
    bounds: str = "four",
) -> PairAudit:
    """A sound lower bound on the (epsilon, delta) of ``mechanism`` from the pair ``x``, ``x_prime``.

    ``mechanism(data, size, rng)`` returns ``size`` independent outputs for the dataset ``data``
    as an array whose first axis has length ``size``: real scalars, integers or booleans
    (categories), integer or boolean vectors (each row one category), or real vectors.  ``statistic``
    is a function from such an array of outputs to one real per output, or ``"learned"``.

    Learned statistic.  With no ``statistic`` and outputs that are real vectors or integer vectors with
    too many possible values to count one by one (or with ``statistic="learned"`` for any output), a
    sixteenth of the selection half (at least ``LEARN_TRIALS``, at most ``LEARN_MAX_TRIALS``, never more
    than half of it) runs of each dataset, taken out of the selection half, fit a classifier of "which dataset produced this output"
    (:func:`dptutor.audit.learned.fit_statistic`), whose log-odds is then the statistic.  It sees no run
    of the estimation half, so the bound below stays sound.

    Method.  Each dataset is run ``trials`` times.  The first ``int(selection * trials)`` runs (the
    selection half; ``trials // 2`` by default) choose an event S: a threshold ``value >= t`` or ``value < t`` on a real output (or on the
    statistic), or, for discrete outputs, the set of output values with the largest estimated
    likelihood ratio (the Neyman-Pearson form; values never seen in the selection half come last and
    never belong to S, only to its complement, so both are fixed by the selection half).  The cut is the one that maximises the projected
    lower bound.  The other runs (the estimation half), independent of the choice, count how often
    S occurs.  With exact Clopper-Pearson intervals (``scipy.stats.binomtest``) on ``p = P[M(x) in
    S]`` and ``p' = P[M(x') in S]``, each side at error ``(1 - confidence) / 4``, a union bound
    covers both directions (x over x', and x' over x) and S as well as its complement, so

        lower_bound = max(0, max over the four of ln((p_lower - delta) / p'_upper))

    is below the true epsilon with probability at least ``confidence``: (epsilon, delta)-DP
    says ``p <= e^epsilon p' + delta`` for every event.

    ``bounds="two"`` (the two-bound variant of the book's split-sample audit): the selection half also
    chooses the direction and whether to report S or its complement, so the estimation half needs only a
    one-sided lower bound on the numerator's probability and an upper bound on the denominator's
    (``scipy.stats.beta`` quantiles), each at error ``(1 - confidence) / 2``.  ``bounds="joint"`` (only with
    ``delta = 0``): the direction and side are chosen the same way, and one Clopper-Pearson bound at error
    ``1 - confidence`` on the numerator's share of the event's runs bounds the ratio itself, after a Poisson
    thinning of each dataset's estimation runs that makes that share exactly binomial (its own seeded draw;
    ``counts`` still reports the whole estimation half).  It is tighter, and where the event's loss is
    exactly epsilon it errs upward more often, up to ``1 - confidence``.  With a smaller
    ``selection`` (e.g. 0.2) more runs measure the event; the bound is sound for any fraction in
    :data:`SELECTION_RANGE`.

    Reproducibility and scale.  Runs are made in blocks of :data:`BLOCK_TRIALS` per dataset, block
    ``i`` of each half seeded by a child of ``SeedSequence(seed).spawn`` (without a ``statistic``, the
    first at most 64 runs of ``x`` come from the probe that decides whether to learn one, on its own seed); each block only counts
    outputs per cell (histogram bins, or distinct values), so the counts are the same whatever
    ``workers`` or ``executor``, and memory does not grow with ``trials``.  ``workers > 1`` runs
    blocks in a process pool (``mechanism``, ``statistic``, ``x`` and ``x_prime`` must be
    picklable); ``executor`` takes any :class:`concurrent.futures.Executor` instead, for example
    ``dask.distributed.Client(...).get_executor()``.  A 10^10-trial audit on a cluster::

        from dask.distributed import Client          # pip install "dptutor[distributed]"
        client = Client("tcp://scheduler:8786")      # workers need dptutor and the mechanism's module
        result = audit_pair(mech, x, x_prime, epsilon=1.0, trials=10**10, seed=2022,
                            executor=client.get_executor())

    That is about 38,000 blocks per half (76,000 in all), at most :data:`PAIR_IN_FLIGHT` in flight at a time; an
    interrupt loses only those.

    Raises ``TypeError``/``ValueError`` naming the bad parameter, and ``ValueError`` naming the
    mechanism if it returns the wrong number of outputs, NaN, non-numeric values, or outputs that
    change shape or type between calls.
    """
    check_callable(mechanism, "mechanism", "mechanism(data, size, rng)")
    eps = check_positive(epsilon, "epsilon")
    trials = check_int(trials, "trials", minimum=2, maximum=10**12)
    seed = check_seed(seed, "seed")
    conf = check_probability(confidence, "confidence")
    learn = isinstance(statistic, str)
    if learn:
        check_choice(statistic, "statistic", ("learned",))
    elif statistic is not None:
        check_callable(statistic, "statistic", "statistic(outputs) -> one real per output, or 'learned'")
    dlt = check_real(delta, "delta", low=0.0, high=1.0, high_open=True)
    frac = check_real(selection, "selection", low=SELECTION_RANGE[0], high=SELECTION_RANGE[1])
    check_choice(bounds, "bounds", PAIR_BOUNDS)
    if bounds == "joint" and dlt > 0:
        raise ValueError("bounds='joint' bounds a ratio of probabilities and needs delta = 0; use bounds='two' with delta > 0")
    if executor is not None and not isinstance(executor, concurrent.futures.Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
    name = _callable_name(mechanism)
    data = []
    for label, value in (("x", x), ("x_prime", x_prime)):
        if isinstance(value, np.ndarray):  # a private read-only copy: no block can change the data
            value = value.copy()
            value.setflags(write=False)
        data.append(value)
    x, x_prime = data

    seed_seq = np.random.SeedSequence(seed)
    entropy = seed_seq.entropy
    recorded_seed = tuple(int(v) for v in entropy) if isinstance(entropy, (list, tuple, np.ndarray)) else entropy
    n_sel = min(trials - 1, max(1, int(trials * frac)))
    n_est = trials - n_sel
    sel_seq, est_seq = seed_seq.spawn(2)
    n_fit = 0
    probed: Any = None
    if statistic is None or learn:
        # A statistic learned on a fitting sample that is part of the selection half (its own seed, the
        # third child of the seed sequence, so the two halves' seeds are those of an audit without it).
        fit_seq = np.random.SeedSequence(entropy, spawn_key=seed_seq.spawn_key + (2,), pool_size=seed_seq.pool_size)
        statistic, n_fit, probed = _learned_statistic(mechanism, name, x, x_prime, n_sel, trials, fit_seq, learn)
    n_sel_blocks = n_sel - n_fit
    n_tasks = -(-n_sel_blocks // BLOCK_TRIALS) - 1 + -(-n_est // BLOCK_TRIALS)
    workers = check_workers(workers, "workers", tasks=max(1, n_tasks))

    def blocks(half: int, parent: np.random.SeedSequence, total: int, start: int) -> Any:
        """Block ``i`` of a half: ``min(BLOCK_TRIALS, rest)`` runs, seeded by ``parent.spawn``'s i-th child
        (made lazily, so that 10^12 runs need no list of 10^7 seeds)."""
        for i in range(start, -(-total // BLOCK_TRIALS)):
            child = np.random.SeedSequence(parent.entropy, spawn_key=parent.spawn_key + (i,), pool_size=parent.pool_size)
            yield half, min(BLOCK_TRIALS, total - i * BLOCK_TRIALS), child

    tasks = itertools.chain(blocks(0, sel_seq, n_sel_blocks, 1), blocks(1, est_seq, n_est, 0))
    _, first_size, first_seed = next(blocks(0, sel_seq, n_sel_blocks, 0))
    # The outputs that showed no statistic is needed open the selection half, so the audit asks for
    # exactly ``trials`` runs of each dataset (a grader replaying recorded outputs has no more).
    layout, probe = _probe_block(mechanism, name, x, x_prime, first_size, first_seed, statistic, probed)
    if layout.mode == "real":
        totals: Any = [probe, np.zeros_like(probe)]

        def add(half: int, block: Any) -> None:
            totals[half] += block
    else:
        table: dict[Any, NDArray[np.int64]] = {}

        def add(half: int, block: Any) -> None:
            for d in (0, 1):
                for key, c in block[d].items():
                    row = table.get(key)
                    if row is None:
                        if len(table) >= PAIR_MAX_CATEGORIES:
                            raise ValueError(
                                f"mechanism {name!r} returned more than {PAIR_MAX_CATEGORIES} distinct outputs; "
                                "audit it through statistic=... (a function from outputs to reals) or statistic='learned'"
                            )
                        row = table[key] = np.zeros(4, dtype=np.int64)
                    row[2 * half + d] += c

        add(0, probe)

    _run_pair_blocks(mechanism, name, x, x_prime, layout, tasks, workers, executor, add, statistic)

    if layout.mode == "real":
        sel, est = totals
        keys: list[Any] = []
    else:
        keys, sel, est = _discrete_order(table)
    return _bound_from_counts(sel, est, n_sel_blocks, n_est, layout, keys, eps, dlt, conf, trials, recorded_seed, name, n_fit,
                              bounds, frac)


def _discrete_order(table: dict[Any, NDArray[np.int64]]) -> tuple[list[Any], NDArray[np.int64], NDArray[np.int64]]:
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


def _learned_statistic(
    mechanism: Any, name: str, x: Any, x_prime: Any, n_sel: int, trials: int, fit_seq: np.random.SeedSequence,
    force: bool,
) -> tuple[Any, int, Any]:
    """``(statistic, runs per dataset spent, None)``: a :class:`~dptutor.audit.learned.LearnedStatistic` fitted on
    ``min(n_sel // 2, max(LEARN_TRIALS, trials // 32), LEARN_MAX_TRIALS)`` runs of each dataset (a sixteenth of
    the selection half when it is half of the runs), or ``(None, 0)`` when the outputs need none
    (unless ``force``): a scalar, or an integer vector whose output space (distinct values per coordinate
    in at most 64 probe outputs, multiplied) has at most PAIR_MAX_CATEGORIES cells.  Then the third item
    holds the probe's outputs (of ``x``), which the caller counts as the first runs of the selection half."""
    rng = np.random.Generator(np.random.PCG64(fit_seq))
    m = min(64, n_sel)
    first = _checked_outputs(_first_call(mechanism, x, m, rng, "x", name), m, None, None, name)
    row_shape, floating = first.shape[1:], first.dtype.kind == "f"
    width = int(math.prod(row_shape))
    if width == 0:
        raise ValueError(f"mechanism {name!r} returned empty outputs (shape {first.shape})")
    if not force:
        if width == 1:
            return None, 0, first
        if not floating:
            # An integer vector is audited as categories unless its output space, as far as the probe
            # shows (distinct values per coordinate, multiplied), has more cells than the discrete mode allows.
            rows = first.reshape(first.shape[0], -1)
            space = math.prod(np.unique(col).size for col in rows.T)
            if space <= PAIR_MAX_CATEGORIES:
                return None, 0, first
    n_fit = min(n_sel // 2, max(LEARN_TRIALS, trials // 32), LEARN_MAX_TRIALS)
    if n_fit < 1:
        raise ValueError(f"trials must be at least 4 to learn a statistic, got {trials}")
    probe = _Layout(mode="real", row_shape=row_shape, floating=floating)
    samples = []
    for data in (x, x_prime):
        outs = [o.reshape(o.shape[0], -1) for o in _draw(mechanism, data, n_fit, rng, probe, name)]
        samples.append(np.concatenate(outs).astype(np.float64))
    return fit_statistic(samples[0], samples[1], seed=int(fit_seq.generate_state(1)[0])), n_fit, None


def _run_pair_blocks(
    mechanism: Any, name: str, x: Any, x_prime: Any, layout: _Layout, tasks: Any, workers: int,
    executor: concurrent.futures.Executor | None, add: Any, statistic: Any,
) -> None:
    """Run the blocks of the iterator ``tasks`` (half, size, seed) here, in a process pool or on ``executor``."""
    own_pool = None
    pool = executor
    if pool is None and workers > 1:
        for label, obj in (("mechanism", mechanism), ("statistic", statistic), ("x", x), ("x_prime", x_prime)):
            try:
                pickle.dumps(obj)
            except Exception as exc:
                raise TypeError(
                    f"{label} must be picklable to run with workers > 1 (define {name!r} at module level)"
                ) from exc
        own_pool = pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers)
    if pool is None:
        for half, size, child in tasks:
            add(half, _pair_block(mechanism, name, x, x_prime, size, child, layout))
        return
    pending: dict[concurrent.futures.Future, int] = {}
    it = iter(tasks)
    try:
        while True:
            while len(pending) < PAIR_IN_FLIGHT:
                task = next(it, None)
                if task is None:
                    break
                half, size, child = task
                pending[pool.submit(_pair_block, mechanism, name, x, x_prime, size, child, layout)] = half
            if not pending:
                break
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                add(pending.pop(fut), fut.result())
    except BaseException:
        for fut in pending:
            fut.cancel()
        raise
    finally:
        if own_pool is not None:
            own_pool.shutdown(wait=True, cancel_futures=True)


def _bound_from_counts(
    sel: NDArray[np.int64], est: NDArray[np.int64], n_sel: int, n_est: int, layout: _Layout, keys: list[Any],
    epsilon: float, delta: float, confidence: float, trials: int, seed: Any, name: str, n_fit: int = 0,
    bounds: str = "four", selection: float = 0.5,
) -> PairAudit:
    """Choose the cut on the selection counts, bound its probabilities on the estimation counts.

    ``sel`` and ``est`` are ``(2, cells)`` counts (row 0 for ``x``, row 1 for ``x_prime``) with
    the cells in the order whose prefixes are the candidate events.  ``bounds="four"``: the estimation
    half bounds both probabilities of the cut's prefix on both sides (four one-sided bounds at error
    ``gamma / 4``) and takes the best of the four (direction, S or its complement); ``"two"``: the
    selection half also chooses the direction and the side, and the estimation half needs only a lower
    bound on the numerator and an upper bound on the denominator, each at error ``gamma / 2``.
    """
    from scipy import stats

    alpha = 1.0 - confidence
    cells = sel.shape[1]
    zero = np.zeros((2, 1), dtype=np.int64)
    cum_sel = np.concatenate([zero, np.cumsum(sel, axis=1)], axis=1)
    cum_est = np.concatenate([zero, np.cumsum(est, axis=1)], axis=1)
    fpr = np.concatenate([cum_est[0], n_est - cum_est[0]]) / n_est
    fnr = np.concatenate([n_est - cum_est[1], cum_est[1]]) / n_est

    if cells < 2:  # every output identical: no event tells the datasets apart
        counts = np.array([[n_est, 0], [n_est, 0]])
        return PairAudit(
            lower_bound=0.0, estimate=0.0, event="none (every output was the same value)", counts=counts,
            trials=trials, epsilon=epsilon, delta=delta, confidence=confidence, seed=seed, mechanism=name,
            selection_trials=n_sel + n_fit, estimation_trials=n_est, false_positive_rates=fpr, false_negative_rates=fnr,
        )

    # 1. Selection: the projected lower bound of each cut j (prefix = first j cells) and combination, at
    #    the estimation half's size, with Wilson bounds in place of the exact ones.
    # The score widens the final z by the selection half's own noise, by the factor 1 + sqrt(n_est / n_sel)
    # (so the half-width is z times the estimation half's standard error plus z times that of the runs
    # that choose the cut): a cautious score that prefers events with larger probabilities where the
    # estimated ratios tie, so that noise in the selection counts rarely picks a cut in a thin tail.
    # (Measured on DP-Sniper's benchmark at 10^7 runs with 30% for selection: half that selection term
    # let RAPPOR's learned statistic choose a tail with 1,567 runs in it, bound 0.173 instead of 0.287.)
    # bounds="four" keeps the rule the book's results were recorded with: the requested fractions in
    # place of the counts, so the factor is exactly 2 at the default split, learned statistic or not.
    # bounds="joint" scores a cut by the Wilson bound on the share of the numerator among the event's runs
    # (the quantity its estimation step bounds), at the expected number of such runs, with the caution of
    # the two-bound score (z at gamma/2): at z(gamma) it chose a tail of 1,262 runs of 7*10^6 for
    # LaplaceParallel's learned statistic at 10^7 runs, bound 0; with this caution, 0.045.
    each = alpha / 4.0 if bounds == "four" else alpha / 2.0
    ratio = (1.0 - selection) / selection if bounds == "four" else n_est / n_sel
    z = (1.0 + math.sqrt(ratio)) * float(stats.norm.isf(each))
    j = np.arange(1, cells)
    p = cum_sel[:, 1:cells] / n_sel  # (2, cells - 1): P[prefix] under x and x_prime
    scores = []
    for complement, num in _COMBOS:
        q = 1.0 - p if complement else p
        if bounds == "joint":
            both = q[num] + q[1 - num]
            share = np.divide(q[num], both, out=np.zeros_like(both), where=both > 0)
            lo, _ = _wilson(share, np.maximum(both * n_est, 1.0), z)
            score = _log_ratio(lo, np.maximum(1.0 - lo, 1e-300))
            score[both <= 0] = -np.inf
            scores.append(score)
            continue
        lo, _ = _wilson(q[num], n_est, z)
        _, hi = _wilson(q[1 - num], n_est, z)
        scores.append(_log_ratio(lo - delta, hi))
    scores_arr = np.stack(scores)
    # A cut whose prefix is empty or everything on the selection half tells nothing: never choose it
    # (its score, about -1/n, would otherwise beat informative cuts whose scores are all negative).
    seen = cum_sel[0, 1:cells] + cum_sel[1, 1:cells]
    scores_arr[:, (seen == 0) | (seen == 2 * n_sel)] = -np.inf
    best = int(np.argmax(scores_arr))
    combo_sel, cut = divmod(best, cells - 1)
    cut = int(j[cut])

    # 2. Estimation: exact (Clopper-Pearson) one-sided bounds on the estimation half's counts.
    k = [int(cum_est[0, cut]), int(cum_est[1, cut])]
    if bounds == "four":
        # Both probabilities, both sides, at alpha/4 each: any of the four combinations may be reported.
        inside = [_exact_interval(k[d], n_est, each) for d in (0, 1)]
        outside = [_exact_interval(n_est - k[d], n_est, each) for d in (0, 1)]
        found = []
        for complement, num in _COMBOS:
            iv = outside if complement else inside
            found.append(float(_log_ratio(iv[num][0] - delta, iv[1 - num][1])))
        combo = int(np.argmax(found)) if max(found) > 0 else combo_sel
        lower = max(0.0, found[combo])
    else:
        # The combination was fixed on the selection half: one lower and one upper bound at alpha/2 each
        # ("two"), or one bound at alpha on the numerator's share of the event's runs ("joint").
        combo = combo_sel
        complement, num = _COMBOS[combo]
        k_c = [n_est - k[d] if complement else k[d] for d in (0, 1)]
        if bounds == "joint":
            lower = _joint_bound(k_c[num], k_c[1 - num], n_est, alpha, seed)
        else:
            p_low = _exact_one_sided(k_c[num], n_est, each, lower=True)
            p_high = _exact_one_sided(k_c[1 - num], n_est, each, lower=False)
            lower = max(0.0, float(_log_ratio(p_low - delta, p_high)))
    complement, num = _COMBOS[combo]
    k_in = [n_est - k[d] if complement else k[d] for d in (0, 1)]
    p_num, p_den = k_in[num] / n_est, k_in[1 - num] / n_est
    if p_num - delta <= 0:
        estimate = 0.0
    elif p_den == 0:
        estimate = math.inf
    else:
        estimate = max(0.0, math.log((p_num - delta) / p_den))

    more_likely = "x" if num == 0 else "x_prime"
    threshold = None
    if layout.mode == "real":
        threshold = layout.boundary(cut)
        label = "output" if layout.statistic is None else f"{_callable_name(layout.statistic)}(output)"
        event = f"{label} {'>=' if complement else '<'} {threshold:.6g}"
    else:
        event = _describe_set(keys[cut:] if complement else keys[:cut])
    counts = np.array([[k_in[num], n_est - k_in[num]], [k_in[1 - num], n_est - k_in[1 - num]]])
    return PairAudit(
        lower_bound=lower, estimate=estimate, event=f"{event} (more likely under {more_likely})", counts=counts,
        trials=trials, epsilon=epsilon, delta=delta, confidence=confidence, seed=seed, mechanism=name,
        selection_trials=n_sel + n_fit, estimation_trials=n_est, threshold=threshold,
        false_positive_rates=fpr, false_negative_rates=fnr,
    )
