"""A statistic learned from samples: a classifier's log-odds of "which dataset produced this output".

:func:`dptutor.audit.audit_pair` needs one real per output to cut its events on.  When no statistic is
given and the outputs are real vectors (or when ``statistic="learned"``), it draws a fitting sample
that is part of its *selection half*, fits a probabilistic classifier on it with :func:`fit_statistic`,
and uses the fitted :class:`LearnedStatistic` as the statistic.  The classifier never sees the
estimation half, so the soundness argument of the split-sample audit is untouched: the event is
still a function of the selection half only.

Two models, as DP-Sniper (Bichsel et al., IEEE S&P 2021) uses a classifier for the same purpose:

- ``"logistic"``: logistic regression on the standardised output coordinates.  Its score is linear in
  the output, which is the exact log-likelihood ratio for shifted exponential-family noise on each
  coordinate, and a monotone stand-in for shifted Laplace noise;
- ``"boosting"``: gradient-boosted trees (scikit-learn's histogram gradient boosting), for outputs that
  mix real values with sentinels (a released value or "not answered"), where no linear score fits.

``"auto"`` picks ``"boosting"`` when some coordinate of a real output has an atom (one value held by at
least :data:`ATOM_FRACTION` of the fitting sample), else ``"logistic"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_float_array, check_int

__all__ = ["LearnedStatistic", "fit_statistic", "LEARN_TRIALS", "LEARN_MAX_TRIALS", "ATOM_FRACTION", "MODELS"]

#: Runs per dataset that :func:`dptutor.audit.audit_pair` spends on fitting a statistic: a sixteenth of its
#: selection half, at least LEARN_TRIALS (2^15 per dataset fits in about a second on one core) and at most
#: LEARN_MAX_TRIALS, and never more than half of the selection half.
LEARN_TRIALS: int = 1 << 15

#: The most runs per dataset spent on fitting (2^19: a few seconds for logistic regression, about a
#: minute for boosting on a loaded 2-core machine).
LEARN_MAX_TRIALS: int = 1 << 19

#: A coordinate whose most common value holds at least this fraction of the fitting sample has an atom
#: (a sentinel such as "not answered"): ``model="auto"`` then fits gradient-boosted trees.
ATOM_FRACTION: float = 0.01

#: The models :func:`fit_statistic` knows.
MODELS: tuple[str, ...] = ("auto", "logistic", "boosting")


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
class LearnedStatistic:
    """A fitted classifier as a statistic: ``statistic(outputs)`` returns one real per output, the
    classifier's log-odds that the output came from the second dataset (``x_prime``).

    Built by :func:`fit_statistic`.  Picklable (it runs in worker processes with the audit's blocks).
    """

    model: Any
    kind: str
    width: int
    infinite: Any

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", MODELS[1:])
        width = check_int(self.width, "width", minimum=1, maximum=1 << 24)
        infinite = np.asarray(self.infinite)
        if infinite.dtype != np.bool_ or infinite.shape != (width,):
            raise ValueError(
                f"infinite must be a boolean array with one entry per output value (width {width}), "
                f"got {infinite.dtype} {infinite.shape}"
            )
        if not callable(getattr(self.model, "decision_function", None)):
            raise TypeError(f"model must be a fitted classifier with decision_function, got {type(self.model).__name__}")

    def __call__(self, outputs: Any) -> NDArray[np.float64]:
        rows = _as_rows(outputs, "outputs")
        if rows.shape[1] != self.width:
            raise ValueError(f"outputs must have {self.width} value(s) per output, got {rows.shape[1]}")
        with _one_thread():
            score = np.asarray(self.model.decision_function(_features(rows, self.infinite)), dtype=np.float64)
        return np.nan_to_num(score.reshape(rows.shape[0]), nan=0.0, posinf=1e300, neginf=-1e300)

    def __repr__(self) -> str:
        return f"LearnedStatistic(kind={self.kind!r}, width={self.width})"


def fit_statistic(outputs_x: Any, outputs_x_prime: Any, *, model: str = "auto", seed: int = 0) -> LearnedStatistic:
    """Fit a classifier of "``x`` or ``x_prime``" on outputs of each and return it as a statistic.

    ``outputs_x`` and ``outputs_x_prime`` are arrays of outputs (first axis: one output each, the same
    shape per output), typically the fitting sample of :func:`dptutor.audit.audit_pair`'s selection half.
    ``model`` is one of :data:`MODELS`; ``seed`` fixes the boosting model's internal randomness.
    """
    a, b = _as_rows(outputs_x, "outputs_x"), _as_rows(outputs_x_prime, "outputs_x_prime")
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"outputs_x_prime must have the shape of outputs_x per output ({a.shape[1]} values), got {b.shape[1]}"
        )
    model = check_choice(model, "model", MODELS)
    seed = check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    rows = np.concatenate([a, b])
    labels = np.concatenate([np.zeros(a.shape[0], dtype=np.int64), np.ones(b.shape[0], dtype=np.int64)])
    infinite = ~np.isfinite(rows).all(axis=0)
    features = _features(rows, infinite)
    if model == "auto":
        model = "boosting" if _has_atom(rows) else "logistic"
    spread = features.std(axis=0)
    if features.shape[0] < 2 or not (spread > 0).any():
        # Every output identical (or one output): nothing to learn; a constant score.
        from sklearn.dummy import DummyClassifier

        est: Any = DummyClassifier(strategy="prior")
        est.decision_function = _ConstantScore()
        est.fit(features, labels)
        return LearnedStatistic(model=est, kind="logistic", width=a.shape[1], infinite=infinite)
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        est = HistGradientBoostingClassifier(max_iter=200, early_stopping=True, random_state=seed)
    import warnings

    with np.errstate(all="ignore"), warnings.catch_warnings(), _one_thread():
        warnings.simplefilter("ignore")  # convergence chatter: the score is used as it is, never trusted
        est.fit(features, labels)
    return LearnedStatistic(model=est, kind=model, width=a.shape[1], infinite=infinite)


def _one_thread() -> Any:
    """One OpenMP/BLAS thread while fitting or scoring: the audit parallelises over blocks, and OpenMP's
    busy-waiting threads cost many times their work on a machine whose cores are already busy."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


class _ConstantScore:
    """``decision_function`` of a classifier that learned nothing: 0 for every output (picklable)."""

    def __call__(self, features: Any) -> NDArray[np.float64]:
        return np.zeros(np.asarray(features).shape[0])


def _has_atom(rows: NDArray[np.float64]) -> bool:
    """True when a column of real values has a value held by at least ATOM_FRACTION of the rows (and
    the column is not entirely integer-valued, which logistic regression handles)."""
    n = rows.shape[0]
    for col in rows.T:
        if np.all(col == np.round(col)):
            continue
        _, counts = np.unique(col, return_counts=True)
        if counts.max() >= max(2, math.ceil(ATOM_FRACTION * n)):
            return True
    return False
