"""A statistic learned from samples: a classifier's log-odds of "which dataset produced this output".

:func:`dptutor.audit.audit_pair` needs one real per output to cut its events on.  When no statistic is
given and the outputs are real vectors (or when ``statistic="learned"``), it draws a fitting sample
that is part of its *selection half*, fits a probabilistic classifier on it with :func:`fit_statistic`,
and uses the fitted :class:`LearnedStatistic` as the statistic.  The classifier never sees the
estimation half, so the soundness argument of the split-sample audit is untouched: the event is
still a function of the selection half only.

Models (DP-Sniper, Bichsel et al., IEEE S&P 2021, uses a classifier for the same purpose):

- ``"logistic"``: logistic regression on the standardised output coordinates, a score linear in the output
  (the exact log-likelihood ratio for shifted exponential-family noise on each coordinate);
- ``"additive"``: logistic regression on a generic feature map (:class:`AdditiveMap`): per output value, a
  piecewise-linear function with knots at quantiles of the fitting sample, plus one indicator per atom (a
  value many outputs share, such as a sentinel).  It can represent the clipped linear log-likelihood ratio
  of independent Laplace noise on each coordinate;
- ``"boosting"``: gradient-boosted trees, for outputs that mix real values with sentinels;
- ``"template"``: the noise template of :mod:`dptutor.audit.template`, which needs the two inputs;
- ``"running"``: the same template on the outputs' first differences, for running totals (prefix sums).

``"auto"`` (the default) chooses among logistic regression, the additive model at a few numbers of knots
(:data:`AUTO_CANDIDATES`) and the two templates (when the inputs are given and fit) by two-fold cross-validated
log-loss on the fitting sample, so the choice too is a function of the selection half only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_int, renamed_parameters
from dptutor.audit._threads import one_thread
from dptutor.audit.template import NoiseTemplate, fit_template, template_of

__all__ = ["LearnedStatistic", "fit_statistic", "AdditiveMap", "fit_additive_map", "LEARN_TRIALS", "LEARN_MAX_TRIALS",
           "ATOM_FRACTION", "SPLINE_KNOTS", "MAX_KNOTS", "TAILS", "AUTO_CANDIDATES", "MODELS"]

#: Runs per dataset that :func:`dptutor.audit.audit_pair` spends on fitting a statistic, a sixteenth of its
#: selection half, at least LEARN_TRIALS (2^15 per dataset fits in about a second on one core) and at most
#: LEARN_MAX_TRIALS, and never more than half of the selection half.
LEARN_TRIALS: int = 1 << 15

#: The most runs per dataset spent on fitting, 2^19 (a few seconds for logistic regression, about a
#: minute for boosting on a loaded 2-core machine).
LEARN_MAX_TRIALS: int = 1 << 19

#: A value held by at least this fraction of the fitting sample in one coordinate is an atom (a sentinel
#: such as "not answered", or each value of a bit): the additive model gives it an indicator of its own.
ATOM_FRACTION: float = 0.01

#: Knots per output value of the additive model's piecewise-linear part, that many quantiles of the fitting
#: sample's values (atoms left out), evenly spread in probability (see :func:`fit_additive_map`).
SPLINE_KNOTS: int = 8

#: The most atoms per output value (values held by at least ATOM_FRACTION of the fitting sample, and
#: the infinities); at most 1 / ATOM_FRACTION values can qualify.
_MAX_ATOMS = int(1 / ATOM_FRACTION) + 2

#: The additive model's two shapes beyond the outer knots, constant or linear (see :class:`AdditiveMap`).
TAILS: tuple[str, ...] = ("flat", "linear")

#: The models :func:`fit_statistic` knows.
MODELS: tuple[str, ...] = ("auto", "logistic", "additive", "boosting", "template", "running")


def _as_rows(outputs: object, name: str) -> NDArray[np.float64]:
    """Outputs (one per row of the first axis) as a 2-D float64 array, infinities kept."""
    arr = check_float_array(outputs, name, min_size=1)
    if arr.ndim == 0:
        raise ValueError(f"{name} must be an array of outputs (one per row), got a scalar")
    return arr.reshape(arr.shape[0], -1)


def _features(rows: NDArray[np.float64], infinite: NDArray[np.bool_]) -> NDArray[np.float64]:
    """The finite part of each coordinate (0 where infinite) and, for the columns flagged in ``infinite``,
    indicators of +inf and of -inf."""
    finite = np.isfinite(rows)
    values = np.where(finite, rows, 0.0)
    if not infinite.any():
        return values
    cols = rows[:, infinite]
    return np.concatenate([values, (cols == np.inf).astype(np.float64), (cols == -np.inf).astype(np.float64)], axis=1)


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
        knots, atoms = _array_tuple(self.knots, "knots"), _array_tuple(self.atoms, "atoms")
        if len(knots) != len(atoms) or not knots:
            raise ValueError(f"knots and atoms must hold one array per output value each, got {len(knots)} and {len(atoms)}")
        for j, (k, a) in enumerate(zip(knots, atoms)):
            if k.size == 1 or not np.isfinite(k).all() or (k.size and not (k[1:] > k[:-1]).all()) \
                    or (k.size and math.isinf(float(k[-1]) - float(k[0]))):  # a spread that overflows
                raise ValueError(f"knots[{j}] must be empty or at least two increasing finite values less than the float range "
                                 f"apart, got {k}")
            if a.size > _MAX_ATOMS or (a.size and not (a[1:] > a[:-1]).all()):
                raise ValueError(f"atoms[{j}] must be at most {_MAX_ATOMS} increasing values, got {a}")
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
        return sum(_columns(k, a, self.linear) for k, a in zip(self.knots, self.atoms))

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

        rows = _as_rows(outputs, "outputs")
        if rows.shape[1] != self.width:
            raise ValueError(f"outputs must have {self.width} value(s) per output, got {rows.shape[1]}")
        n = rows.shape[0]
        cols, vals, offset = [], [], 0
        for j, (knots, atoms) in enumerate(zip(self.knots, self.atoms)):
            if knots.size == 0 and atoms.size == 0:
                continue
            v = rows[:, j]
            hit, which = _atom_index(v, atoms)
            if knots.size:
                left, t = _hat(v, knots)
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
                    vals.append(np.where(hit, 0.0, _linear(v, knots)))
            else:
                cols.append(offset + which)
                vals.append(hit.astype(np.float64))
            offset += _columns(knots, atoms, self.linear)
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
    :data:`ATOM_FRACTION` of the sample (at least two outputs); its knots are the quantiles at levels
    ``(i + 1/2) / knots``, ``i = 0 .. knots - 1``, of the other values (duplicates dropped; none when fewer
    than two remain), so that each tail beyond the outer knots holds ``1 / (2 knots)`` of them.  ``tails``
    is ``"flat"`` or ``"linear"`` (see :class:`AdditiveMap`).  The map depends on this sample only: in
    :func:`dptutor.audit.audit_pair` it is the fitting sample.

    Parameters
    ----------
    outputs : array_like
        The sample, one output per row of the first axis (the same shape per output).
    knots : int, optional
        Knots per output value, 2 to :data:`MAX_KNOTS`.
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
    rows = _as_rows(outputs, "outputs")
    knots = check_int(knots, "knots", minimum=2, maximum=MAX_KNOTS)
    tails = check_choice(tails, "tails", TAILS)
    n = rows.shape[0]
    least = max(2, math.ceil(ATOM_FRACTION * n))
    all_knots, all_atoms = [], []
    for j, col in enumerate(rows.T):
        values, counts = np.unique(col, return_counts=True)
        atoms = values[(counts >= least) | ~np.isfinite(values)]
        if atoms.size > _MAX_ATOMS:  # only possible through infinities and ties at the threshold
            atoms = np.sort(values[np.argsort(-counts, kind="stable")[:_MAX_ATOMS]])
        rest = col[np.isfinite(col) & ~np.isin(col, atoms)]
        if rest.size and math.isinf(float(rest.max()) - float(rest.min())):  # np.quantile's interpolation would overflow
            raise ValueError(f"outputs: the values of output value {j} (atoms aside) span more than the float range")
        levels = (np.arange(knots) + 0.5) / knots
        grid = np.unique(np.quantile(rest, levels)) if rest.size >= 2 else np.empty(0)
        all_knots.append(grid if grid.size >= 2 else np.empty(0))
        all_atoms.append(atoms)
    return AdditiveMap(knots=tuple(all_knots), atoms=tuple(all_atoms), tails=tails)


def _array_tuple(value: object, name: str) -> tuple[NDArray[np.float64], ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of arrays (one per output value), got {type(value).__name__}")
    out = []
    for j, item in enumerate(value):
        arr = check_float_array(item, f"{name}[{j}]")
        if arr.ndim != 1:
            raise ValueError(f"{name}[{j}] must be one-dimensional, got shape {arr.shape}")
        out.append(arr)
    return tuple(out)


def _atom_index(v: NDArray[np.float64], atoms: NDArray[np.float64]) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Which entries of ``v`` equal an atom, and the atom's index (0 where none)."""
    if atoms.size == 0:
        return np.zeros(v.shape, dtype=bool), np.zeros(v.shape, dtype=np.int64)
    idx = np.minimum(np.searchsorted(atoms, v), atoms.size - 1)
    hit = atoms[idx] == v
    return hit, np.where(hit, idx, 0)


#: Up to this many atoms per output value, the additive model tests each atom directly instead of a lookup.
_FEW_ATOMS = 4

#: The additive model's linear term ``(v - c) / h`` is clipped to [-_LINEAR_CLIP, _LINEAR_CLIP] (an infinite
#: value that is no atom of the fitting sample would otherwise make the score infinite).
_LINEAR_CLIP = 1e6


def _columns(knots: NDArray[np.float64], atoms: NDArray[np.float64], linear: bool) -> int:
    """Feature columns of one output value: its knots and its linear term (if it has knots and ``linear``),
    its atoms."""
    return knots.size + int(linear and knots.size > 0) + atoms.size


def _linear(v: NDArray[np.float64], knots: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(v - c) / h``, with ``c`` and ``h`` the centre and half-width of the knots' range, clipped (0 for NaN)."""
    centre, half = 0.5 * knots[0] + 0.5 * knots[-1], 0.5 * (knots[-1] - knots[0])  # no overflow: knots[0] + knots[-1] might
    with np.errstate(all="ignore"):
        out = np.subtract(v, centre)
        out /= half
    np.clip(out, -_LINEAR_CLIP, _LINEAR_CLIP, out=out)  # infinities to the clip; NaN stays NaN ...
    return np.nan_to_num(out, copy=False, nan=0.0)  # ... and becomes 0


def _hat(v: NDArray[np.float64], knots: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """For each value (clipped to the knots' range): the knot on its left (never the last) and its position
    ``t`` in [0, 1] towards the next knot."""
    clipped = np.clip(np.where(np.isnan(v), knots[0], v), knots[0], knots[-1])
    left = np.clip(np.searchsorted(knots, clipped, side="right") - 1, 0, knots.size - 2)
    t = (clipped - knots[left]) / (knots[left + 1] - knots[left])
    return left, np.clip(t, 0.0, 1.0)


class _AdditiveScore:
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
            offset += _columns(knots, atoms, feature_map.linear)

    def decision_function(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        score = np.full(rows.shape[0], self.intercept)
        columns = np.ascontiguousarray(rows.T)  # each output value's column, contiguous
        for j, (knots, atoms) in enumerate(zip(self.feature_map.knots, self.feature_map.atoms)):
            v = columns[j]
            if knots.size:
                part = _linear(v, knots)
                part *= self.linear_weights[j]
                part += np.interp(v, knots, self.knot_weights[j])
            else:
                part = np.zeros(v.shape)
            if atoms.size > _FEW_ATOMS:
                hit, which = _atom_index(v, atoms)
                part = np.where(hit, self.atom_weights[j][which], part)
            else:  # a few atoms: one comparison each (the same values as the lookup)
                for atom, weight in zip(atoms, self.atom_weights[j]):
                    np.putmask(part, v == atom, weight)
            score += part
        return score


@dataclass(frozen=True, eq=False)
class LearnedStatistic:
    """A fitted classifier as a statistic: ``statistic(outputs)`` returns one real per output, the
    classifier's log-odds that the output came from the second dataset (``x_prime``).

    Built by :func:`fit_statistic`.  Picklable (it runs in worker processes with the audit's blocks).

    Parameters
    ----------
    model : object
        A fitted classifier with a ``decision_function``.
    kind : str
        The model's kind, one of ``MODELS[1:]``.
    width : int
        Values per output.
    infinite : numpy.ndarray of bool
        Which output values are infinite somewhere in the fitting sample (their finiteness is a feature).

    Raises
    ------
    TypeError, ValueError
        Naming the bad field.
    """

    model: Any
    kind: str
    width: int
    infinite: Any

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", MODELS[1:])
        width = check_int(self.width, "width", minimum=1, maximum=1 << 24)
        try:
            infinite = np.asarray(self.infinite)
            got = f"{infinite.dtype} {infinite.shape}"
        except (TypeError, ValueError):  # a ragged nesting of lists
            infinite, got = None, "a ragged sequence"
        if infinite is None or infinite.dtype != np.bool_ or infinite.shape != (width,):
            raise ValueError(f"infinite must be a boolean array with one entry per output value (width {width}), got {got}")
        if not callable(getattr(self.model, "decision_function", None)):
            raise TypeError(f"model must be a fitted classifier with decision_function, got {type(self.model).__name__}")

    def __call__(self, outputs: Any) -> NDArray[np.float64]:
        rows = _as_rows(outputs, "outputs")
        if rows.shape[1] != self.width:
            raise ValueError(f"outputs must have {self.width} value(s) per output, got {rows.shape[1]}")
        if self.kind in ("additive", "template", "running"):  # numpy only: no thread pool to limit
            score = np.asarray(self.model.decision_function(rows), dtype=np.float64)
        else:
            with one_thread():
                score = np.asarray(self.model.decision_function(_features(rows, self.infinite)), dtype=np.float64)
        return np.nan_to_num(score.reshape(rows.shape[0]), nan=0.0, posinf=1e300, neginf=-1e300)

    def __repr__(self) -> str:
        return f"LearnedStatistic(kind={self.kind!r}, width={self.width})"


@renamed_parameters(seed="rng")
def fit_statistic(
    outputs_x: Any,
    outputs_x_prime: Any,
    *,
    model: str = "auto",
    knots: int = SPLINE_KNOTS,
    tails: str = "flat",
    rng: int | np.random.SeedSequence | np.random.Generator = 0,
    inputs: tuple[Any, Any] | None = None,
) -> LearnedStatistic:
    """Fit a classifier of "``x`` or ``x_prime``" on outputs of each and return it as a statistic.

    ``"auto"`` chooses among :data:`AUTO_CANDIDATES` (logistic regression, and the additive model with
    flat tails at several numbers of knots) by two-fold cross-validation on this sample: each candidate is
    fitted on one half of each dataset's outputs and scored by its log-loss on the other half, both ways;
    the best is fitted again on the whole sample.  The choice, like the fit, sees only these outputs.

    With numeric ``inputs``, ``"auto"`` also tries the noise template (:mod:`dptutor.audit.template`: the
    log-likelihood ratio of Laplace noise on outputs that copy the inputs), which fits only a scale, and on
    outputs of several values the template of their running totals (``"running"``: on first differences).

    Parameters
    ----------
    outputs_x, outputs_x_prime : array_like
        Outputs of each dataset (first axis: one output each, the same shape per output), typically the
        fitting sample of :func:`dptutor.audit.audit_pair`'s selection half.
    model : str, optional
        One of :data:`MODELS`.
    knots : int, optional
        Knots per output value of the additive model (see :func:`fit_additive_map`), 2 to :data:`MAX_KNOTS`.
    tails : str, optional
        The additive model's tails, one of :data:`TAILS`.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Fixes the boosting model's internal randomness: an int in [0, 2**32) is its seed; a SeedSequence
        or a Generator gives one.  (Deprecated alias: ``seed``.)
    inputs : tuple (x, x_prime) or None, optional
        The two datasets, for the noise template (ignored unless numeric and fitting the outputs' width).

    Returns
    -------
    LearnedStatistic
        The fitted statistic: call it on an array of outputs for one real per output.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    a, b = _as_rows(outputs_x, "outputs_x"), _as_rows(outputs_x_prime, "outputs_x_prime")
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"outputs_x_prime must have the shape of outputs_x per output ({a.shape[1]} values), got {b.shape[1]}"
        )
    model = check_choice(model, "model", MODELS)
    knots = check_int(knots, "knots", minimum=2, maximum=MAX_KNOTS)
    tails = check_choice(tails, "tails", TAILS)
    if isinstance(rng, np.random.SeedSequence):
        rng = int(rng.generate_state(1)[0])
    elif isinstance(rng, np.random.Generator):
        rng = int(rng.integers(0, 2**32))
    seed = check_int(rng, "rng", minimum=0, maximum=2**32 - 1)
    template = None if inputs is None else template_of(inputs, a.shape[1])
    if model in ("template", "running") and template is None:
        raise ValueError("inputs must be two distinct numeric datasets (scalars, or vectors whose length divides the output's) "
                         f"for model={model!r}, got {inputs!r:.80}")
    rows = np.concatenate([a, b])
    labels = np.concatenate([np.zeros(a.shape[0], dtype=np.int64), np.ones(b.shape[0], dtype=np.int64)])
    infinite = ~np.isfinite(rows).all(axis=0)
    features = _features(rows, infinite)
    with np.errstate(over="ignore", invalid="ignore"):  # values near the float range: an infinite spread is still > 0
        spread = features.std(axis=0)
    if features.shape[0] < 2 or not (spread > 0).any():
        # Every output identical (or one output): nothing to learn; a constant score.
        from sklearn.dummy import DummyClassifier

        est: Any = DummyClassifier(strategy="prior")
        est.decision_function = _ConstantScore()
        est.fit(features, labels)
        return LearnedStatistic(model=est, kind="logistic", width=a.shape[1], infinite=infinite)
    with one_thread():
        if model == "auto":
            model, knots, tails = _choose(a, b, seed, template)
        return _fit(rows, labels, model, knots, tails, seed, template)


#: The candidates of ``model="auto"``, in order of preference on a tie, as (model, knots, tails), the last two
#: used by the additive model only.  Linear tails are not among them: measured on DP-Sniper's benchmark
#: (benchmarks/bench_blackbox.py), they helped the prefix sums but cost LaplaceParallel, SVT3 and
#: NumericalSVT more, and a choice by held-out log-loss cannot tell which tails the audit's events need.
AUTO_CANDIDATES: tuple[tuple[str, int, str], ...] = (
    ("logistic", SPLINE_KNOTS, "flat"),
    ("additive", 2, "flat"),
    ("additive", 4, "flat"),
    ("additive", 8, "flat"),
    ("additive", 16, "flat"),
)

#: The most knots per output value.
MAX_KNOTS: int = 256


def _choose(a: NDArray[np.float64], b: NDArray[np.float64], seed: int,
            template: NoiseTemplate | None = None) -> tuple[str, int, str]:
    """The candidate of :data:`AUTO_CANDIDATES` (and the noise templates, last, when there are any) with the
    smallest two-fold cross-validated log-loss: each candidate fitted on one half of each dataset's outputs
    and scored on the other half, both ways (ties to the earlier, simpler candidate).  Logistic regression
    when a fold would lack a dataset."""
    half_a, half_b = a.shape[0] // 2, b.shape[0] // 2
    if min(half_a, half_b, a.shape[0] - half_a, b.shape[0] - half_b) < 1:
        return AUTO_CANDIDATES[0]
    folds = [(a[:half_a], b[:half_b]), (a[half_a:], b[half_b:])]
    training = [(np.concatenate([fa, fb]),
                 np.concatenate([np.zeros(fa.shape[0], dtype=np.int64), np.ones(fb.shape[0], dtype=np.int64)]))
                for fa, fb in folds]  # the same two training sets for every candidate
    best, best_loss = AUTO_CANDIDATES[0], math.inf
    extra = [] if template is None else [(m, SPLINE_KNOTS, "flat") for m in ("template", "running")[:1 + (a.shape[1] > 1)]]
    for candidate in (*AUTO_CANDIDATES, *extra):
        loss = 0.0
        for k in range(2):
            va, vb = folds[1 - k]
            stat = _fit(*training[k], *candidate, seed, template)
            # log-loss: -log P[label | o] = log(1 + e^(-s)) for x_prime (label 1), log(1 + e^s) for x
            loss += float(np.logaddexp(0.0, stat(va)).sum() + np.logaddexp(0.0, -stat(vb)).sum())
        if loss < best_loss:
            best, best_loss = candidate, loss
    return best


def _fit(
    rows: NDArray[np.float64], labels: NDArray[np.int64], model: str, knots: int, tails: str, seed: int,
    template: NoiseTemplate | None = None,
) -> LearnedStatistic:
    """One model (not ``"auto"``) fitted on ``rows`` with ``labels`` (0 for ``x``, 1 for ``x_prime``); the
    templates need ``template``."""
    infinite = ~np.isfinite(rows).all(axis=0)
    if model in ("template", "running"):  # fit_statistic has checked that the inputs give a template
        used = template.of_running_totals() if model == "running" else template
        return LearnedStatistic(model=fit_template(rows, labels, used), kind=model, width=rows.shape[1],
                                infinite=infinite)
    if model == "additive":  # its own features (fit_additive_map), not the dense ones below
        return _fit_additive(rows, labels, rows.shape[1], infinite, knots, tails)
    features = _features(rows, infinite)
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import MaxAbsScaler, StandardScaler

        est: Any = make_pipeline(MaxAbsScaler(), StandardScaler(), LogisticRegression(max_iter=1000))  # first: no overflow
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        est = HistGradientBoostingClassifier(max_iter=200, early_stopping=True, random_state=seed)
    import warnings

    with np.errstate(all="ignore"), warnings.catch_warnings():  # one thread: fit_statistic limits it
        warnings.simplefilter("ignore")  # convergence chatter: the score is used as it is, never trusted
        est.fit(features, labels)
    return LearnedStatistic(model=est, kind=model, width=rows.shape[1], infinite=infinite)


def _fit_additive(
    rows: NDArray[np.float64], labels: NDArray[np.int64], width: int, infinite: NDArray[np.bool_], knots: int,
    tails: str,
) -> LearnedStatistic:
    """Logistic regression on :func:`fit_additive_map`'s features of ``rows``, as a statistic."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    feature_map = fit_additive_map(rows, knots=knots, tails=tails)
    if feature_map.n_features == 0:  # no value repeats and none varies: nothing to fit (n = 1 per coordinate)
        return LearnedStatistic(model=_AdditiveScore(feature_map, np.zeros(0), 0.0), kind="additive", width=width,
                                infinite=infinite)
    features = feature_map.transform(rows)
    est = LogisticRegression(max_iter=1000)
    with np.errstate(all="ignore"), warnings.catch_warnings():  # one thread: fit_statistic limits it
        warnings.simplefilter("ignore")  # convergence chatter, as above
        est.fit(features, labels)
    coef = np.nan_to_num(np.asarray(est.coef_, dtype=np.float64).reshape(-1))
    intercept = float(np.nan_to_num(np.asarray(est.intercept_, dtype=np.float64).reshape(-1)[0]))
    return LearnedStatistic(model=_AdditiveScore(feature_map, coef, intercept), kind="additive", width=width,
                            infinite=infinite)


class _ConstantScore:
    """``decision_function`` of a classifier that learned nothing: 0 for every output (picklable)."""

    def __call__(self, features: Any) -> NDArray[np.float64]:
        return np.zeros(np.asarray(features).shape[0])
