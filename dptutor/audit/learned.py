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
:func:`dptutor.audit.audit_pair` fits every candidate instead (:func:`fit_candidates`) and chooses on the rest of
its selection half, by the bound each candidate's best event projects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_int, renamed_parameters
import dptutor.audit._learned_maps as maps
from dptutor.audit._learned_maps import (
    AdditiveMap,
    AdditiveScore,
    as_rows,
    fit_additive_map,
)
from dptutor.audit._threads import one_thread
from dptutor.audit.template import NoiseTemplate, fit_template, template_of

__all__ = ["LearnedStatistic", "fit_statistic", "fit_candidates", "AdditiveMap", "fit_additive_map", "LEARN_TRIALS", "LEARN_MAX_TRIALS",
           "ATOM_FRACTION", "SPLINE_KNOTS", "MAX_KNOTS", "TAILS", "AUTO_CANDIDATES", "MODELS"]

# The additive model's constants live with it in ``_learned_maps``; they are bound here again, with their
# descriptions, so that the API page documents them under this module.
#: A value held by at least this fraction of the fitting sample in one coordinate is an atom (a sentinel
#: such as "not answered", or each value of a bit): the additive model gives it an indicator of its own.
ATOM_FRACTION: float = maps.ATOM_FRACTION
#: Knots per output value of the additive model's piecewise-linear part, that many quantiles of the fitting
#: sample's values (atoms left out), evenly spread in probability (see :func:`fit_additive_map`).
SPLINE_KNOTS: int = maps.SPLINE_KNOTS
#: The additive model's two shapes beyond the outer knots, constant or linear (see :class:`AdditiveMap`).
TAILS: tuple[str, ...] = maps.TAILS
#: The most knots per output value.
MAX_KNOTS: int = maps.MAX_KNOTS

#: Runs per dataset that :func:`dptutor.audit.audit_pair` spends on fitting a statistic, a sixteenth of its
#: selection half, at least LEARN_TRIALS (2^15 per dataset fits in about a second on one core) and at most
#: LEARN_MAX_TRIALS, and never more than half of the selection half.
LEARN_TRIALS: int = 1 << 15

#: Output values whose largest finite magnitude lies outside [2**-_SCALE_FREE, 2**_SCALE_FREE] are scaled by a
#: power of two (exactly) before fitting, so that their squares neither overflow nor underflow.
_SCALE_FREE = 256

#: The most runs per dataset spent on fitting, 2^19 (a few seconds for logistic regression, about a
#: minute for boosting on a loaded 2-core machine).
LEARN_MAX_TRIALS: int = 1 << 19

#: The models :func:`fit_statistic` knows.
MODELS: tuple[str, ...] = ("auto", "logistic", "additive", "boosting", "template", "running")


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
    exponents : numpy.ndarray of int or None, optional
        One per output value: the model sees value ``j`` times ``2**-exponents[j]`` (exact, by ``numpy.ldexp``),
        so that outputs of any magnitude, from subnormal to near the float range, fit like outputs near 1
        (:func:`fit_statistic` sets it only for outputs far from 1).  None: the values as they are.

    Raises
    ------
    TypeError, ValueError
        Naming the bad field.
    """

    model: Any
    kind: str
    width: int
    infinite: Any
    exponents: Any = None

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
        if self.exponents is not None:
            exponents = np.asarray(self.exponents)
            if exponents.dtype.kind not in "iu" or exponents.shape != (width,) or np.abs(exponents).max() > 2200:
                raise ValueError(f"exponents must be None or one int in [-2200, 2200] per output value (width {width}), "
                                 f"got {exponents.dtype} {exponents.shape}")
            object.__setattr__(self, "exponents", exponents.astype(np.int32))
        if not callable(getattr(self.model, "decision_function", None)):
            raise TypeError(f"model must be a fitted classifier with decision_function, got {type(self.model).__name__}")

    def __call__(self, outputs: Any) -> NDArray[np.float64]:
        rows = as_rows(outputs, "outputs")
        if rows.shape[1] != self.width:
            raise ValueError(f"outputs must have {self.width} value(s) per output, got {rows.shape[1]}")
        if self.exponents is not None:
            rows = np.ldexp(rows, -self.exponents)
        if self.kind in ("additive", "template", "running"):  # numpy only: no thread pool to limit
            with np.errstate(over="ignore", invalid="ignore"):  # the templates' differences of values near the float range
                score = np.asarray(self.model.decision_function(rows), dtype=np.float64)
        else:
            with one_thread():
                score = np.asarray(self.model.decision_function(_features(rows, self.infinite)), dtype=np.float64)
        return np.nan_to_num(score.reshape(rows.shape[0]), nan=0.0, posinf=1e300, neginf=-1e300)

    def __repr__(self) -> str:
        return f"LearnedStatistic(kind={self.kind!r}, width={self.width})"

    @property
    def __name__(self) -> str:  # how an audit's event names it: "learned_additive(output) >= 0.12"
        return f"learned_{self.kind}"


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
        fitting sample of :func:`dptutor.audit.audit_pair`'s selection half.  Real or bool (read as 0 and 1), of any magnitude:
        values far from 1 are scaled by a power of two first (see :class:`LearnedStatistic`).
    model : str, optional
        One of :data:`MODELS`.
    knots : int, optional
        Knots per output value of the additive model (see :func:`fit_additive_map`), 2 to ``MAX_KNOTS``.
    tails : str, optional
        The additive model's tails, one of ``TAILS``.
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
    model = check_choice(model, "model", MODELS)
    knots = check_int(knots, "knots", minimum=2, maximum=MAX_KNOTS)
    tails = check_choice(tails, "tails", TAILS)
    a, b, seed, template, rows, labels, constant = _prepared(outputs_x, outputs_x_prime, rng, inputs)
    if model in ("template", "running") and template is None:
        raise ValueError("inputs must be two distinct numeric datasets (scalars, or vectors whose length divides the output's) "
                         f"for model={model!r}, got {inputs!r:.80}")
    if constant is not None:
        return constant
    with one_thread():
        if model == "auto":
            model, knots, tails = _choose(a, b, seed, template)
        return _fit(rows, labels, model, knots, tails, seed, template)


def fit_candidates(
    outputs_x: Any,
    outputs_x_prime: Any,
    *,
    rng: int | np.random.SeedSequence | np.random.Generator = 0,
    inputs: tuple[Any, Any] | None = None,
) -> tuple[LearnedStatistic, ...]:
    """Every candidate of ``model="auto"`` fitted on the whole sample, for a choice made on other runs.

    :func:`fit_statistic` chooses by cross-validated log-loss on the fitting sample itself, which at the
    sizes an audit fits on often cannot tell the candidates apart.  :func:`dptutor.audit.audit_pair` instead
    counts every candidate's values on its selection half and keeps the one whose best event scores highest.

    Parameters
    ----------
    outputs_x, outputs_x_prime, rng, inputs
        As for :func:`fit_statistic`.

    Returns
    -------
    tuple of LearnedStatistic
        The models of :data:`AUTO_CANDIDATES` in order, then the noise template and (outputs of several values)
        the running template when ``inputs`` give one; a single constant statistic when every output is the same.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    a, _, seed, template, rows, labels, constant = _prepared(outputs_x, outputs_x_prime, rng, inputs)
    if constant is not None:
        return (constant,)
    with one_thread():
        return tuple(_fit(rows, labels, *candidate, seed, template) for candidate in _candidates(a.shape[1], template))


def _candidates(width: int, template: NoiseTemplate | None) -> tuple[tuple[str, int, str], ...]:
    """:data:`AUTO_CANDIDATES`, then the templates that apply (the running one only to outputs of several values)."""
    extra = () if template is None else tuple((m, SPLINE_KNOTS, "flat") for m in ("template", "running")[:1 + (width > 1)])
    return (*AUTO_CANDIDATES, *extra)


def _prepared(outputs_x: Any, outputs_x_prime: Any, rng: Any, inputs: Any) -> tuple:
    """The checked sample of :func:`fit_statistic`: ``(a, b, seed, template, rows, labels, constant)``, where
    ``constant`` is a constant statistic when there is nothing to learn (else None)."""
    a, b = as_rows(outputs_x, "outputs_x"), as_rows(outputs_x_prime, "outputs_x_prime")
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"outputs_x_prime must have the shape of outputs_x per output ({a.shape[1]} values), got {b.shape[1]}"
        )
    if isinstance(rng, np.random.SeedSequence):
        rng = int(rng.generate_state(1)[0])
    elif isinstance(rng, np.random.Generator):
        rng = int(rng.integers(0, 2**32))
    seed = check_int(rng, "rng", minimum=0, maximum=2**32 - 1)
    template = None if inputs is None else template_of(inputs, a.shape[1])
    rows = np.concatenate([a, b])
    labels = np.concatenate([np.zeros(a.shape[0], dtype=np.int64), np.ones(b.shape[0], dtype=np.int64)])
    infinite = ~np.isfinite(rows).all(axis=0)
    features = _features(rows, infinite)
    constant = None
    if features.shape[0] < 2 or not (features.max(axis=0) > features.min(axis=0)).any():  # exact at any magnitude
        # Every output identical (or one output): nothing to learn; a constant score.
        from sklearn.dummy import DummyClassifier

        est: Any = DummyClassifier(strategy="prior")
        est.decision_function = _ConstantScore()
        est.fit(features, labels)
        constant = LearnedStatistic(model=est, kind="logistic", width=a.shape[1], infinite=infinite)
    return a, b, seed, template, rows, labels, constant


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
    for candidate in _candidates(a.shape[1], template):
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
        with np.errstate(over="ignore", invalid="ignore"):  # differences of values near the float range: inf, then 0
            fitted = fit_template(rows, labels, used)
        return LearnedStatistic(model=fitted, kind=model, width=rows.shape[1],
                                infinite=infinite)
    exponents = _exponents(rows)
    if exponents is not None:  # exact: values times powers of two, far from both ends of the float range
        rows = np.ldexp(rows, -exponents)
    if model == "additive":  # its own features (fit_additive_map), not the dense ones below
        return _fit_additive(rows, labels, rows.shape[1], infinite, knots, tails, exponents)
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
    return LearnedStatistic(model=est, kind=model, width=rows.shape[1], infinite=infinite, exponents=exponents)


def _exponents(rows: NDArray[np.float64]) -> NDArray[np.int32] | None:
    """Per output value whose largest finite ``|value|`` is outside [2**-_SCALE_FREE, 2**_SCALE_FREE]: the binary
    exponent ``e`` with that value in ``[2**(e-1), 2**e)``; 0 for the others; None when all are 0.

    A power of two commutes exactly with the fit's arithmetic (quantiles, knot positions, max-abs and standard
    scaling), so the statistic is the one of outputs near 1; values within the range are left as they are."""
    top = np.where(np.isfinite(rows), np.abs(rows), 0.0).max(axis=0)
    exponents = np.frexp(top)[1].astype(np.int32)
    exponents[(top == 0.0) | (np.abs(exponents) <= _SCALE_FREE)] = 0
    return exponents if exponents.any() else None


def _fit_additive(
    rows: NDArray[np.float64], labels: NDArray[np.int64], width: int, infinite: NDArray[np.bool_], knots: int,
    tails: str, exponents: NDArray[np.int32] | None,
) -> LearnedStatistic:
    """Logistic regression on :func:`fit_additive_map`'s features of ``rows`` (already scaled by
    ``2**-exponents``), as a statistic."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    feature_map = fit_additive_map(rows, knots=knots, tails=tails)
    if feature_map.n_features == 0:  # no value repeats and none varies: nothing to fit (n = 1 per coordinate)
        return LearnedStatistic(model=AdditiveScore(feature_map, np.zeros(0), 0.0), kind="additive", width=width,
                                infinite=infinite, exponents=exponents)
    features = feature_map.transform(rows)
    est = LogisticRegression(max_iter=1000)
    with np.errstate(all="ignore"), warnings.catch_warnings():  # one thread: fit_statistic limits it
        warnings.simplefilter("ignore")  # convergence chatter, as above
        est.fit(features, labels)
    coef = np.nan_to_num(np.asarray(est.coef_, dtype=np.float64).reshape(-1))
    intercept = float(np.nan_to_num(np.asarray(est.intercept_, dtype=np.float64).reshape(-1)[0]))
    return LearnedStatistic(model=AdditiveScore(feature_map, coef, intercept), kind="additive", width=width,
                            infinite=infinite, exponents=exponents)


class _ConstantScore:
    """``decision_function`` of a classifier that learned nothing: 0 for every output (picklable)."""

    def __call__(self, features: Any) -> NDArray[np.float64]:
        return np.zeros(np.asarray(features).shape[0])
