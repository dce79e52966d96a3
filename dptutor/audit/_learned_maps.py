"""The additive model's feature map and score, for ``dptutor.audit.learned`` (which re-exports the public names).

Per output value, a piecewise-linear function with knots at quantiles of the fitting sample, plus one
indicator per atom (a value many outputs share); see ``AdditiveMap`` and ``fit_additive_map``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_int

__all__ = ["AdditiveMap", "fit_additive_map", "AdditiveScore", "as_rows", "ATOM_FRACTION", "SPLINE_KNOTS", "MAX_KNOTS",
           "TAILS"]

#: A value held by at least this fraction of the fitting sample in one coordinate is an atom (a sentinel
#: such as "not answered", or each value of a bit): the additive model gives it an indicator of its own.
ATOM_FRACTION: float = 0.01

#: Knots per output value of the additive model's piecewise-linear part, that many quantiles of the fitting
#: sample's values (atoms left out), evenly spread in probability (see :func:`fit_additive_map`).
SPLINE_KNOTS: int = 8

#: The most atoms per output value (values held by at least ATOM_FRACTION of the fitting sample, and
#: the infinities); at most 1 / ATOM_FRACTION values can qualify.
MAX_ATOMS = int(1 / ATOM_FRACTION) + 2

#: The additive model's two shapes beyond the outer knots, constant or linear (see :class:`AdditiveMap`).
TAILS: tuple[str, ...] = ("flat", "linear")

#: The most knots per output value.
MAX_KNOTS: int = 256


def as_rows(outputs: object, name: str) -> NDArray[np.float64]:
    """Outputs (one per row of the first axis) as a 2-D float64 array, infinities kept; booleans (valid
    outputs of a mechanism, such as randomized response's) become 0 and 1."""
    if isinstance(outputs, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(outputs)
        except (TypeError, ValueError):  # ragged: check_float_array below says so
            arr = None
        if arr is not None and arr.dtype == np.bool_:
            outputs = arr.astype(np.float64)
    arr = check_float_array(outputs, name, min_size=1)
    if arr.ndim == 0:
        raise ValueError(f"{name} must be an array of outputs (one per row), got a scalar")
    return arr.reshape(arr.shape[0], -1)


@dataclass(frozen=True, eq=False)
class AdditiveMap:
    """The additive model's feature map, fitted on a sample by :func:`fit_additive_map`.

    For output value ``j`` (a coordinate of the flattened output), ``knots[j]`` holds sorted finite knots
    (none, or at least two) and ``atoms[j]`` sorted atom values (infinities allowed).  An output value equal
    to an atom sets that atom's indicator; any other value ``v`` is clipped to the knots' range and spread
    over the two knots around it (the "hat" basis of piecewise-linear functions: weights ``1 - t`` and
    ``t`` where ``t`` is ``v``'s position between them).  With ``tails="linear"``, ``v`` enters once more,
    linearly, as ``(v - c) / h`` with ``c`` and ``h`` the centre and half-width of the knots' range (clipped
    to 10^6; 0 on atoms).  A linear model on these features is a sum over coordinates of
    one continuous piecewise-linear function each, plus a free value per atom; beyond the outer knots the
    function is constant with ``tails="flat"`` (as the log-likelihood ratio of shifted Laplace noise) and
    linear with ``tails="linear"``.

    Parameters
    ----------
    knots, atoms : sequence of array_like
        One array per output value each, as above.
    tails : {"flat", "linear"}, optional
        The model beyond the outer knots.

    Raises
    ------
    TypeError, ValueError
        Naming the bad field.
    """

    knots: tuple[Any, ...]
    atoms: tuple[Any, ...]
    tails: str = "flat"

    def __post_init__(self) -> None:
        knots, atoms = array_tuple(self.knots, "knots"), array_tuple(self.atoms, "atoms")
        if len(knots) != len(atoms) or not knots:
            raise ValueError(f"knots and atoms must hold one array per output value each, got {len(knots)} and {len(atoms)}")
        for j, (k, a) in enumerate(zip(knots, atoms)):
            if k.size == 1 or not np.isfinite(k).all() or (k.size and not (k[1:] > k[:-1]).all()) \
                    or (k.size and math.isinf(float(k[-1]) - float(k[0]))):  # a spread that overflows
                raise ValueError(f"knots[{j}] must be empty or at least two increasing finite values less than the float range "
                                 f"apart, got {k}")
            if a.size > MAX_ATOMS or (a.size and not (a[1:] > a[:-1]).all()):
                raise ValueError(f"atoms[{j}] must be at most {MAX_ATOMS} increasing values, got {a}")
        check_choice(self.tails, "tails", TAILS)
        object.__setattr__(self, "knots", knots)
        object.__setattr__(self, "atoms", atoms)

    @property
    def width(self) -> int:
        """Values per output."""
        return len(self.knots)

    @property
    def n_features(self) -> int:
        """Columns of :meth:`transform`'s matrix, per output value its knots, its linear term (when it
        has knots), then its atoms."""
        return sum(column_count(k, a, self.linear) for k, a in zip(self.knots, self.atoms))

    @property
    def linear(self) -> bool:
        """Whether each output value with knots has a linear term (``tails="linear"``)."""
        return self.tails == "linear"

    def transform(self, outputs: Any) -> Any:
        """The features of ``outputs`` (one per row of the first axis) as a ``scipy.sparse`` CSR matrix with
        :attr:`n_features` columns and at most three non-zero entries per output value.

        Parameters
        ----------
        outputs : array_like
            Outputs with :attr:`width` values each (one per row of the first axis).

        Returns
        -------
        scipy.sparse.csr_matrix
            Shape ``(len(outputs), n_features)``.

        Raises
        ------
        ValueError
            If an output does not have :attr:`width` values.
        """
        from scipy import sparse

        rows = as_rows(outputs, "outputs")
        if rows.shape[1] != self.width:
            raise ValueError(f"outputs must have {self.width} value(s) per output, got {rows.shape[1]}")
        n = rows.shape[0]
        cols, vals, offset = [], [], 0
        for j, (knots, atoms) in enumerate(zip(self.knots, self.atoms)):
            if knots.size == 0 and atoms.size == 0:
                continue
            v = rows[:, j]
            hit, which = atom_index(v, atoms)
            if knots.size:
                left, t = hat(v, knots)
                c0, c1 = offset + left, offset + left + 1
                w0, w1 = 1.0 - t, t
                extra = int(self.linear)
                if atoms.size:
                    atom_col = offset + knots.size + extra + which
                    c0, c1 = np.where(hit, atom_col, c0), np.where(hit, atom_col, c1)
                    w0, w1 = np.where(hit, 1.0, w0), np.where(hit, 0.0, w1)
                cols += [c0, c1]
                vals += [w0, w1]
                if extra:
                    cols.append(np.full(n, offset + knots.size))
                    vals.append(np.where(hit, 0.0, linear_term(v, knots)))
            else:
                cols.append(offset + which)
                vals.append(hit.astype(np.float64))
            offset += column_count(knots, atoms, self.linear)
        if not cols:
            return sparse.csr_matrix((n, max(offset, 0)))
        indices = np.stack(cols, axis=1).astype(np.int32).ravel()
        data = np.stack(vals, axis=1).ravel()
        per_row = len(cols)
        indptr = np.arange(0, n * per_row + 1, per_row, dtype=np.int64)
        return sparse.csr_matrix((data, indices, indptr), shape=(n, offset))


def fit_additive_map(outputs: Any, *, knots: int = SPLINE_KNOTS, tails: str = "flat") -> AdditiveMap:
    """The :class:`AdditiveMap` of a sample of outputs (one per row of the first axis).

    Per output value: its atoms are the infinities that occur and the values held by at least
    ``ATOM_FRACTION`` of the sample (at least two outputs); its knots are the quantiles at levels
    ``(i + 1/2) / knots``, ``i = 0 .. knots - 1``, of the other values (duplicates dropped; none when fewer
    than two remain), so that each tail beyond the outer knots holds ``1 / (2 knots)`` of them.  ``tails``
    is ``"flat"`` or ``"linear"`` (see :class:`AdditiveMap`).  The map depends on this sample only: in
    :func:`dptutor.audit.audit_pair` it is the fitting sample.

    Parameters
    ----------
    outputs : array_like
        The sample, one output per row of the first axis (the same shape per output).
    knots : int, optional
        Knots per output value, 2 to ``MAX_KNOTS``.
    tails : {"flat", "linear"}, optional
        The model beyond the outer knots.

    Returns
    -------
    AdditiveMap

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    rows = as_rows(outputs, "outputs")
    knots = check_int(knots, "knots", minimum=2, maximum=MAX_KNOTS)
    tails = check_choice(tails, "tails", TAILS)
    n = rows.shape[0]
    least = max(2, math.ceil(ATOM_FRACTION * n))
    all_knots, all_atoms = [], []
    for j, col in enumerate(rows.T):
        values, counts = np.unique(col, return_counts=True)
        atoms = values[(counts >= least) | ~np.isfinite(values)]
        if atoms.size > MAX_ATOMS:  # only possible through infinities and ties at the threshold
            atoms = np.sort(values[np.argsort(-counts, kind="stable")[:MAX_ATOMS]])
        rest = col[np.isfinite(col) & ~np.isin(col, atoms)]
        if rest.size and math.isinf(float(rest.max()) - float(rest.min())):  # np.quantile's interpolation would overflow
            raise ValueError(f"outputs: the values of output value {j} (atoms aside) span more than the float range")
        levels = (np.arange(knots) + 0.5) / knots
        grid = np.unique(np.quantile(rest, levels)) if rest.size >= 2 else np.empty(0)
        all_knots.append(grid if grid.size >= 2 else np.empty(0))
        all_atoms.append(atoms)
    return AdditiveMap(knots=tuple(all_knots), atoms=tuple(all_atoms), tails=tails)


def array_tuple(value: object, name: str) -> tuple[NDArray[np.float64], ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of arrays (one per output value), got {type(value).__name__}")
    out = []
    for j, item in enumerate(value):
        arr = check_float_array(item, f"{name}[{j}]")
        if arr.ndim != 1:
            raise ValueError(f"{name}[{j}] must be one-dimensional, got shape {arr.shape}")
        out.append(arr)
    return tuple(out)


def atom_index(v: NDArray[np.float64], atoms: NDArray[np.float64]) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Which entries of ``v`` equal an atom, and the atom's index (0 where none)."""
    if atoms.size == 0:
        return np.zeros(v.shape, dtype=bool), np.zeros(v.shape, dtype=np.int64)
    idx = np.minimum(np.searchsorted(atoms, v), atoms.size - 1)
    hit = atoms[idx] == v
    return hit, np.where(hit, idx, 0)


#: Up to this many atoms per output value, the additive model tests each atom directly instead of a lookup.
FEW_ATOMS = 4

#: The additive model's linear term ``(v - c) / h`` is clipped to [-LINEAR_CLIP, LINEAR_CLIP] (an infinite
#: value that is no atom of the fitting sample would otherwise make the score infinite).
LINEAR_CLIP = 1e6


def column_count(knots: NDArray[np.float64], atoms: NDArray[np.float64], linear: bool) -> int:
    """Feature columns of one output value: its knots and its linear term (if it has knots and ``linear``),
    its atoms."""
    return knots.size + int(linear and knots.size > 0) + atoms.size


def linear_term(v: NDArray[np.float64], knots: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(v - c) / h``, with ``c`` and ``h`` the centre and half-width of the knots' range, clipped (0 for NaN)."""
    centre, half = 0.5 * knots[0] + 0.5 * knots[-1], 0.5 * (knots[-1] - knots[0])  # no overflow: knots[0] + knots[-1] might
    with np.errstate(all="ignore"):
        out = np.subtract(v, centre)
        out /= half
    np.clip(out, -LINEAR_CLIP, LINEAR_CLIP, out=out)  # infinities to the clip; NaN stays NaN ...
    return np.nan_to_num(out, copy=False, nan=0.0)  # ... and becomes 0


def hat(v: NDArray[np.float64], knots: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """For each value (clipped to the knots' range): the knot on its left (never the last) and its position
    ``t`` in [0, 1] towards the next knot."""
    clipped = np.clip(np.where(np.isnan(v), knots[0], v), knots[0], knots[-1])
    left = np.clip(np.searchsorted(knots, clipped, side="right") - 1, 0, knots.size - 2)
    t = (clipped - knots[left]) / (knots[left + 1] - knots[left])
    return left, np.clip(t, 0.0, 1.0)


class AdditiveScore:
    """The fitted additive model: ``intercept + sum_j f_j(v_j)``, with ``f_j`` the piecewise-linear function
    through ``(knots[j], knot_weights[j])`` plus ``linear_weights[j]`` times the linear term outside the
    atoms, and ``atom_weights[j]`` on them.  Scores raw outputs directly (``np.interp``), the same values
    as the logistic regression on :meth:`AdditiveMap.transform`."""

    def __init__(self, feature_map: AdditiveMap, coef: NDArray[np.float64], intercept: float) -> None:
        self.feature_map, self.intercept = feature_map, float(intercept)
        self.knot_weights, self.linear_weights, self.atom_weights = [], [], []
        offset = 0
        for knots, atoms in zip(feature_map.knots, feature_map.atoms):
            lin = int(feature_map.linear and knots.size > 0)
            self.knot_weights.append(coef[offset:offset + knots.size])
            self.linear_weights.append(float(coef[offset + knots.size]) if lin else 0.0)
            self.atom_weights.append(coef[offset + knots.size + lin:offset + knots.size + lin + atoms.size])
            offset += column_count(knots, atoms, feature_map.linear)

    def decision_function(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        score = np.full(rows.shape[0], self.intercept)
        columns = np.ascontiguousarray(rows.T)  # each output value's column, contiguous
        for j, (knots, atoms) in enumerate(zip(self.feature_map.knots, self.feature_map.atoms)):
            v = columns[j]
            if knots.size:
                part = linear_term(v, knots)
                part *= self.linear_weights[j]
                part += np.interp(v, knots, self.knot_weights[j])
            else:
                part = np.zeros(v.shape)
            if atoms.size > FEW_ATOMS:
                hit, which = atom_index(v, atoms)
                part = np.where(hit, self.atom_weights[j][which], part)
            else:  # a few atoms: one comparison each (the same values as the lookup)
                for atom, weight in zip(atoms, self.atom_weights[j]):
                    np.putmask(part, v == atom, weight)
            score += part
        return score


