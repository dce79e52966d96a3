"""The noise template: the log-likelihood ratio of Laplace noise added to each output value, for outputs that
are noisy copies of numeric inputs, or running totals of such copies (prefix sums, as a continual counter
releases them).  Candidates of :func:`dptutor.audit.learned.fit_statistic` (``model="template"`` and
``model="running"``, tried by ``"auto"`` when the inputs are given); internal, reached through it."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__: list[str] = []  # internal: fit_statistic(model="template", inputs=...) is the public way in


class NoiseTemplate:
    """The log-likelihood ratio of Laplace noise added to each output value, up to its scale: the outputs are
    read as noisy copies of the inputs (the input difference broadcast to the output's width), and each value
    counts ``sign(d_j) * clip(v_j - m_j, -h_j, h_j) / h_j`` with ``d = x_prime - x``, ``m`` its midpoint and
    ``h = |d| / 2`` (0 where ``d_j = 0``; infinities clip to the ends).  A template, not a fit: nothing is
    estimated but the calibration of :class:`CalibratedTemplate` (a scale and an offset), so it needs few fitting runs.

    With ``running=True`` it reads each output's first differences instead (its first value, then each value
    minus the one before): the exact log-likelihood ratio, up to scale, when the outputs are running totals of
    noisy copies, whose coordinates are all correlated and which no sum of one function per coordinate fits."""

    def __init__(self, low: NDArray[np.float64], high: NDArray[np.float64], running: bool = False) -> None:
        self.low, self.high, self.running = low, high, bool(running)
        self.sign = np.sign(high - low)
        self.mid, self.half = (low + high) / 2.0, np.abs(high - low) / 2.0

    def of_running_totals(self) -> NoiseTemplate:
        """The same template read on the outputs' first differences."""
        return NoiseTemplate(self.low, self.high, running=True)

    def __call__(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        half = np.where(self.half > 0, self.half, 1.0)
        with np.errstate(invalid="ignore"):
            if self.running:  # inf - inf is NaN, counted 0 below as any NaN
                rows = np.diff(rows, axis=1, prepend=0.0)
            part = np.clip(rows - self.mid, -self.half, self.half) / half
        return np.nan_to_num(part, nan=0.0) @ self.sign


class CalibratedTemplate:
    """``slope * template(rows) + intercept``: the template's log-odds after a one-variable logistic fit."""

    def __init__(self, template: NoiseTemplate, slope: float, intercept: float) -> None:
        self.template, self.slope, self.intercept = template, float(slope), float(intercept)

    def decision_function(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.slope * self.template(rows) + self.intercept


def template_of(inputs: Any, width: int) -> NoiseTemplate | None:
    """The noise template of ``inputs = (x, x_prime)`` for outputs of ``width`` values, or None when it does
    not apply: the inputs are not finite numbers of one shape, equal, or not broadcastable to the width (a
    scalar input fits any width; a vector input a multiple of its length, repeated: outputs that release the
    same queries several times side by side)."""
    if not isinstance(inputs, tuple) or len(inputs) != 2:
        raise TypeError(f"inputs must be a pair (x, x_prime) or None, got {type(inputs).__name__}")
    try:
        a, b = (np.asarray(v, dtype=np.float64) for v in inputs)
    except (TypeError, ValueError, OverflowError):  # an integer beyond the float range has no template either
        return None  # categories or other non-numeric datasets: no template
    if a.shape != b.shape or not (np.isfinite(a).all() and np.isfinite(b).all()) or np.array_equal(a, b):
        return None
    if a.ndim == 0:
        a, b = np.full(width, float(a)), np.full(width, float(b))
    elif width % a.size:
        return None
    else:  # several releases of the same queries side by side (e.g. two sparse vectors in parallel): tiled
        a, b = np.tile(a.reshape(-1), width // a.size), np.tile(b.reshape(-1), width // b.size)
    return NoiseTemplate(a.reshape(width), b.reshape(width))


def fit_template(rows: NDArray[np.float64], labels: NDArray[np.int64], template: NoiseTemplate) -> Any:
    """The template calibrated by a one-variable logistic regression of ``labels`` on its value."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    values = template(rows).reshape(-1, 1)
    if values.std() == 0:  # every output on the same level: the template tells nothing
        return CalibratedTemplate(template, 0.0, 0.0)
    est = LogisticRegression(max_iter=1000)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(values, labels)
    slope = float(np.nan_to_num(np.asarray(est.coef_, dtype=np.float64).reshape(-1)[0]))
    intercept = float(np.nan_to_num(np.asarray(est.intercept_, dtype=np.float64).reshape(-1)[0]))
    return CalibratedTemplate(template, slope, intercept)
