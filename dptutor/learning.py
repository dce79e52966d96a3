"""DP-SGD from scratch: differentially private training of small classifiers in numpy.

Two models, both classifiers of ``K`` classes:

- ``"logistic"``: logistic regression (a sigmoid on one score for two classes, a softmax over K
  scores for more);
- ``"mlp"``: a network with one hidden layer of ``hidden_units`` tanh units before that output.

Each weight matrix carries its bias as a last row: its input gets a column of ones.

DP-SGD (Abadi et al. 2016) differs from stochastic gradient descent in three places, and nowhere
else: every step draws its batch by Poisson subsampling (each example independently with probability
``q``), clips every example's gradient to l2 norm at most ``C``, and adds Gaussian noise of standard
deviation ``sigma C`` to the sum of the clipped gradients.  The sum changes by at most ``C`` (in l2)
when one example is added or removed, so each step is a Poisson-subsampled Gaussian mechanism with
noise multiplier ``sigma``; the book's accountant (:mod:`dptutor.accounting`) turns ``steps`` of them
into (epsilon, delta).  That accountant assumes exactly this sampler and add/remove neighbours:
shuffled fixed-size batches, or a gradient normalised by the actual batch size, are other mechanisms.

Per-example gradients are never looped over.  For a weight matrix ``W`` applied to inputs ``a_i``,
example i's gradient is the outer product ``a_i b_i^T`` with ``b_i`` the loss's gradient at the
layer's output, so its squared norm is ``|a_i|^2 |b_i|^2`` and the sum of the clipped gradients is
``A^T (c * B)`` (Goodfellow 2015): clipping costs two row norms and a rescaling.
:func:`per_example_gradients` materialises them instead, to show and test the identity.

Caveat: the noise is numpy's floating-point normal, so "private" here means private in real
arithmetic; the floating-point chapter's attacks apply to it as to any textbook Gaussian sampler.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dptutor._validate import (
    check_choice,
    check_float_array,
    check_int,
    check_labels,
    check_positive,
    check_real,
    check_rng,
    renamed_parameters,
)
from dptutor.accounting import ORDERS, rdp_subsampled_gaussian, rdp_to_dp
from dptutor.renyi import round_up

__all__ = [
    "Classifier",
    "TrainingResult",
    "initial_classifier",
    "per_example_gradients",
    "clipped_gradient_sum",
    "dp_sgd_epsilon",
    "noise_multiplier",
    "dp_sgd",
    "sgd",
]

#: The largest noise multiplier the bisection tries; a target needing more is refused.
MAX_NOISE_MULTIPLIER: float = 1e4

#: The most steps one training run may take (epochs / sampling_rate).
MAX_STEPS: int = 10**6

Layer = tuple[NDArray[np.float64], NDArray[np.float64]]


def _with_ones(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a`` with a column of ones appended (the bias input)."""
    return np.hstack([a, np.ones((a.shape[0], 1))])


@dataclass(frozen=True)
class Classifier:
    """A trained model: its weight matrices (bias as last row), its kind and the class labels.

    ``weights`` is ``(W,)`` for ``"logistic"``, ``(W1, W2)`` for ``"mlp"``; the output layer has one
    column for two classes (a sigmoid) and K columns for K > 2 classes (a softmax).
    """

    weights: tuple[NDArray[np.float64], ...]
    kind: str
    classes: NDArray[np.int64]

    def __post_init__(self) -> None:
        kind = check_choice(self.kind, "kind", ("logistic", "mlp"))
        if not isinstance(self.weights, tuple) or len(self.weights) != (1 if kind == "logistic" else 2):
            raise TypeError("weights must be a tuple of one (logistic) or two (mlp) weight matrices")
        weights = tuple(check_float_array(w, "weights", finite=True, ndim=2, min_size=2) for w in self.weights)
        labels = check_float_array(self.classes, "classes", finite=True, ndim=1, min_size=2)
        classes, _ = check_labels(labels, "classes", labels.size)  # integers, exact as floats
        if classes.size != labels.size:
            raise ValueError("classes must hold distinct integer labels")
        outputs = 1 if labels.size == 2 else labels.size
        if weights[-1].shape[1] != outputs or (kind == "mlp" and weights[1].shape[0] != weights[0].shape[1] + 1):
            raise ValueError("weights must have shapes (d + 1, h), (h + 1, K) matching classes")
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "classes", classes)

    def scores(self, X: object) -> NDArray[np.float64]:
        """The output layer's scores (logits), shape ``(n, 1)`` or ``(n, K)``."""
        with np.errstate(over="ignore", invalid="ignore"):
            z = self._forward(self._inputs(X))[-1]
        if not np.isfinite(z).all():
            raise ValueError("X is so large that the model's scores overflow")
        return z

    def predict_proba(self, X: object) -> NDArray[np.float64]:
        """Class probabilities, shape ``(n, K)``, columns in the order of :attr:`classes`."""
        z = self.scores(X)
        if z.shape[1] == 1:
            p = special.expit(z[:, 0])
            return np.column_stack([1.0 - p, p])
        return special.softmax(z, axis=1)

    def predict(self, X: object) -> NDArray[np.int64]:
        """The most probable class label of each row of ``X``."""
        return self.classes[np.argmax(self.predict_proba(X), axis=1)]

    def _inputs(self, X: object) -> NDArray[np.float64]:
        x = check_float_array(X, "X", finite=True, ndim=2)
        if x.shape[1] != self.weights[0].shape[0] - 1:
            raise ValueError(f"X must have {self.weights[0].shape[0] - 1} columns, got {x.shape[1]}")
        return x

    def _forward(self, x: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        """The layer inputs with ones appended, then the scores: ``[a_1, (a_2,) z]``."""
        a = [_with_ones(x)]
        if self.kind == "mlp":
            a.append(_with_ones(np.tanh(a[0] @ self.weights[0])))
        return [*a, a[-1] @ self.weights[-1]]

    def _layers(self, X: NDArray[np.float64], index: NDArray[np.int64]) -> list[Layer]:
        """For each weight matrix, ``(A, B)``: example i's gradient of its own loss is the outer
        product ``A[i] B[i]^T`` (cross-entropy loss, labels given by their ``index`` in :attr:`classes`)."""
        *a, z = self._forward(X)
        if z.shape[1] == 1:  # d/dz of log(1 + e^z) - y z
            b = special.expit(z) - index[:, None]
        else:  # d/dz of logsumexp(z) - z_y
            b = special.softmax(z, axis=1)
            b[np.arange(len(index)), index] -= 1.0
        out = [(a[-1], b)]
        if self.kind == "mlp":  # back through W2 (without its bias row) and tanh
            h = a[1][:, :-1]
            out.insert(0, (a[0], (b @ self.weights[1][:-1].T) * (1.0 - h * h)))
        return out


@dataclass(frozen=True)
class TrainingResult:
    """What :func:`dp_sgd` (or :func:`sgd`) returns.

    ``epsilon``/``delta``: the privacy spent by the accountant (``inf``/``0`` for :func:`sgd`);
    ``noise_multiplier``: sigma (0 for :func:`sgd`); ``steps``: the number of noisy steps taken.
    """

    model: Classifier
    noise_multiplier: float
    epsilon: float
    delta: float
    steps: int
    clip: float
    sampling_rate: float

    def __post_init__(self) -> None:
        if not isinstance(self.model, Classifier):
            raise TypeError(f"model must be a Classifier, got {type(self.model).__name__}")
        check_real(self.noise_multiplier, "noise_multiplier", low=0.0)
        check_real(self.epsilon, "epsilon", low=0.0, allow_inf=True)
        check_real(self.delta, "delta", low=0.0, high=1.0)
        check_int(self.steps, "steps", minimum=1, maximum=MAX_STEPS)
        check_real(self.clip, "clip", low=0.0, low_open=True, allow_inf=True)
        check_real(self.sampling_rate, "sampling_rate", low=0.0, high=1.0, low_open=True)

    def predict(self, X: object) -> NDArray[np.int64]:
        """:meth:`Classifier.predict` of the trained model."""
        return self.model.predict(X)

    def predict_proba(self, X: object) -> NDArray[np.float64]:
        """:meth:`Classifier.predict_proba` of the trained model."""
        return self.model.predict_proba(X)


@renamed_parameters(hidden="hidden_units")
def initial_classifier(
    features: int, classes: object, *, model: str = "logistic", hidden_units: int = 32, rng: np.random.Generator
) -> Classifier:
    """The starting point of training: zero weights for ``"logistic"``; for ``"mlp"`` a hidden layer
    drawn from ``N(0, 1/features)`` (from ``rng``, independent of the data) and a zero output layer."""
    d = check_int(features, "features", minimum=1, maximum=10**5)
    labels = np.unique(check_float_array(classes, "classes", finite=True, ndim=1, min_size=2))
    if labels.size < 2:
        raise ValueError("classes must hold at least two distinct labels")  # integers: Classifier checks
    kind = check_choice(model, "model", ("logistic", "mlp"))
    width = check_int(hidden_units, "hidden_units", minimum=1, maximum=10**4)
    gen = check_rng(rng)
    k = 1 if labels.size == 2 else labels.size
    if kind == "logistic":
        return Classifier((np.zeros((d + 1, k)),), kind, labels)
    w1 = np.vstack([gen.normal(0.0, 1.0 / math.sqrt(d), size=(d, width)), np.zeros((1, width))])
    return Classifier((w1, np.zeros((width + 1, k))), kind, labels)


def per_example_gradients(model: Classifier, X: object, y: object) -> NDArray[np.float64]:
    """Every example's gradient of its cross-entropy loss, flattened: shape ``(n, parameters)``,
    the weight matrices in order, each row-major.  Vectorised (one ``einsum`` per layer)."""
    if not isinstance(model, Classifier):
        raise TypeError(f"model must be a Classifier, got {type(model).__name__}")
    x = model._inputs(X)
    index = _label_index(model, y, x.shape[0])
    blocks = [np.einsum("ni,nj->nij", a, b).reshape(len(x), a.shape[1] * b.shape[1]) for a, b in model._layers(x, index)]
    return np.hstack(blocks)


def _label_index(model: Classifier, y: object, n: int) -> NDArray[np.int64]:
    """Each label's position in ``model.classes`` (a label the model does not know is refused)."""
    labels = check_float_array(y, "y", finite=True, ndim=1)
    if labels.size != n:
        raise ValueError(f"y must have one label per row of X ({n}), got {labels.size}")
    index = np.searchsorted(model.classes, labels)
    if np.any(index >= model.classes.size) or np.any(model.classes[np.minimum(index, model.classes.size - 1)] != labels):
        raise ValueError("y must hold only labels among the model's classes")
    return index.astype(np.int64)


def clipped_gradient_sum(
    model: Classifier, X: object, y: object, clip: float
) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
    """The sum over the rows of ``(X, y)`` of the per-example gradients clipped to l2 norm ``clip``,
    one array per weight matrix (shaped like it), and the per-example norms before clipping.

    Example i's gradient is ``A[i] B[i]^T`` in each layer, so its squared norm is the sum over layers
    of ``|A[i]|^2 |B[i]|^2``; it is multiplied by ``c_i = min(1, clip / norm_i)``, and the clipped sum
    of a layer is ``A^T (c B)``: no per-example gradient is ever stored.
    """
    if not isinstance(model, Classifier):
        raise TypeError(f"model must be a Classifier, got {type(model).__name__}")
    x = model._inputs(X)
    c_max = check_positive(clip, "clip")
    return _clipped_sum(model._layers(x, _label_index(model, y, x.shape[0])), c_max)


def _clipped_sum(layers: list[Layer], c_max: float) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
    """:func:`clipped_gradient_sum` from the layers' ``(A, B)`` (inputs already checked)."""
    with np.errstate(over="ignore"):
        norms = np.sqrt(sum(np.einsum("ij,ij->i", a, a) * np.einsum("ij,ij->i", b, b) for a, b in layers))
    if not np.isfinite(norms).all():  # a squared norm overflowed: recompute without squaring the large values
        with np.errstate(over="ignore"):
            norms = functools.reduce(np.hypot, [np.hypot.reduce(a, axis=1) * np.hypot.reduce(b, axis=1) for a, b in layers])
    scale = c_max / np.maximum(norms, c_max)  # min(1, C / norm), and 1 for a zero gradient
    return [a.T @ (b * scale[:, None]) for a, b in layers], norms


def dp_sgd_epsilon(noise_multiplier: float, steps: int, sampling_rate: float, delta: float) -> float:
    """The accountant's epsilon at ``delta`` after ``steps`` Poisson-subsampled Gaussian steps.

    Renyi DP of the subsampled Gaussian (:func:`dptutor.renyi.rdp_subsampled_gaussian`) at the
    integer orders :data:`dptutor.renyi.ORDERS`, times ``steps``, converted by
    :func:`dptutor.renyi.rdp_to_dp`.  Valid for Poisson subsampling and add/remove neighbours only.
    """
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    k = check_int(steps, "steps", minimum=1, maximum=MAX_STEPS)
    q = check_real(sampling_rate, "sampling_rate", low=0.0, high=1.0, low_open=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return _rdp_epsilon(sigma, k, q, dlt)


@functools.lru_cache(maxsize=1024)
def _rdp_epsilon(sigma: float, steps: int, q: float, delta: float) -> float:
    """:func:`dp_sgd_epsilon` on checked inputs (cached: the bisection and :func:`dp_sgd` repeat calls)."""
    rdp = np.array([rdp_subsampled_gaussian(a, sigma, q) for a in ORDERS], dtype=np.float64)
    with np.errstate(over="ignore"):
        total = np.nextafter(rdp * steps, np.inf)  # the product rounded to nearest, moved up: never below k * rdp
    return rdp_to_dp(np.asarray(ORDERS, dtype=np.float64), total, delta)[0]


def noise_multiplier(epsilon: float, delta: float, steps: int, sampling_rate: float, *, tolerance: float = 1e-4) -> float:
    """The smallest noise multiplier sigma (to relative ``tolerance``) whose accountant epsilon
    (:func:`dp_sgd_epsilon`) after ``steps`` steps is at most ``epsilon``: bisection on ``log sigma``,
    returning the upper end, so the guarantee holds for the sigma returned."""
    eps = check_positive(epsilon, "epsilon")
    tol = check_real(tolerance, "tolerance", low=1e-12, high=0.5)
    k = check_int(steps, "steps", minimum=1, maximum=MAX_STEPS)
    q = check_real(sampling_rate, "sampling_rate", low=0.0, high=1.0, low_open=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    return _bisect_noise(eps, dlt, k, q, tol)


@functools.lru_cache(maxsize=256)
def _bisect_noise(eps: float, delta: float, steps: int, sampling_rate: float, tol: float) -> float:
    """:func:`noise_multiplier` on checked inputs (cached: a search costs about 30 accountant calls)."""

    def spent(sigma: float) -> float:
        return _rdp_epsilon(sigma, steps, sampling_rate, delta)

    lo, hi = 0.1, 1.0
    while spent(hi) > eps:
        lo, hi = hi, hi * 2.0
        if hi > MAX_NOISE_MULTIPLIER:
            raise ValueError(f"epsilon={eps:g} at delta={delta:g}, steps={steps}, sampling_rate={sampling_rate:g} "
                             f"needs a noise multiplier above {MAX_NOISE_MULTIPLIER:g}")
    while spent(lo) <= eps and lo > 1e-3:
        lo, hi = lo / 2.0, lo
    while hi / lo > 1.0 + tol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if spent(mid) <= eps else (mid, hi)
    return hi


def _training_inputs(X: object, y: object, epochs: float, sampling_rate: float, learning_rate: float) -> tuple:
    """Checked ``(X, classes, label index, steps, q, learning rate)``; steps = round(epochs / q) >= 1."""
    x = check_float_array(X, "X", finite=True, ndim=2, min_size=1)
    classes, index = check_labels(y, "y", x.shape[0])
    e = check_positive(epochs, "epochs")
    q = check_real(sampling_rate, "sampling_rate", low=0.0, high=1.0, low_open=True)
    lr = check_positive(learning_rate, "learning_rate")
    ratio = e / q
    if not ratio <= MAX_STEPS:  # also catches an overflow to inf
        raise ValueError(f"epochs / sampling_rate asks for {ratio:.3g} steps, more than {MAX_STEPS:,}")
    return x, classes, index, max(1, round(ratio)), q, lr


def _train(
    start: Classifier, x: NDArray, index: NDArray, steps: int, q: float, lr: float,
    gradient: Callable[[list[Layer]], list[NDArray[np.float64]]], batch_rng: np.random.Generator,
) -> Classifier:
    """``steps`` steps of ``w -= lr * gradient(layers of the batch) / (q n)`` on Poisson batches.

    The divisor is the expected batch size ``q n``, a constant: dividing by the batch's actual size
    would make the sensitivity depend on the batch, which the accountant does not allow.
    """
    model = Classifier(tuple(w.copy() for w in start.weights), start.kind, start.classes)
    expected = q * x.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):  # divergence is caught below, not warned about
        for _ in range(steps):
            batch = batch_rng.random(x.shape[0]) < q
            step = gradient(model._layers(x[batch], index[batch]))
            for w, g in zip(model.weights, step):  # in place: the model is trained, not rebuilt
                w -= (lr / expected) * g
    if not all(np.isfinite(w).all() for w in model.weights):
        raise ValueError("training diverged to non-finite weights: lower learning_rate (or clip)")
    return model


def _generators(rng: object) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator]:
    """Three independent generators (initial weights, batches, noise) from ``rng``: :func:`dp_sgd`
    and :func:`sgd` with equal seeds start from the same weights and draw the same batches."""
    seeds = check_rng(rng).integers(0, 2**63, size=3)
    return tuple(np.random.default_rng(int(s)) for s in seeds)  # type: ignore[return-value]


@renamed_parameters(hidden="hidden_units")
def dp_sgd(
    X: object,
    y: object,
    *,
    epsilon: float,
    delta: float,
    epochs: float,
    sampling_rate: float,
    clip: float,
    model: str = "logistic",
    rng: np.random.Generator,
    learning_rate: float = 1.0,
    hidden_units: int = 32,
) -> TrainingResult:
    """Train a classifier by DP-SGD for (``epsilon``, ``delta``)-DP with respect to adding or removing
    one row of ``(X, y)``, in real arithmetic.

    Parameters
    ----------
    X, y : array_like
        Features ``(n, d)`` (finite reals) and integer class labels ``(n,)`` (at least two classes).
    epsilon, delta : float
        The privacy target; ``delta`` in (0, 1).
    epochs : float
        Passes over the data in expectation; the run takes ``steps = round(epochs / sampling_rate)``.
    sampling_rate : float
        q in (0, 1]: each step includes each example independently with probability q (Poisson).
    clip : float
        C > 0: every example's gradient is scaled to l2 norm at most C.
    model : {"logistic", "mlp"}
        Logistic regression, or a network with one hidden layer of ``hidden_units`` tanh units.
    rng : numpy.random.Generator
        The only source of randomness (initial weights, batches, noise).
    learning_rate : float
        Step size; the noisy gradient sum is divided by the expected batch size ``q n``.
    hidden_units : int
        Width of the hidden layer of ``"mlp"``.  ``hidden=`` is its deprecated alias.

    Returns
    -------
    TrainingResult
        The model (``predict``, ``predict_proba``), the noise multiplier sigma, the accountant's
        epsilon at ``delta`` (at most the target) and the number of steps.

    Notes
    -----
    Each step adds ``N(0, (sigma C)^2)`` to every coordinate of the sum of clipped gradients, then
    divides by ``q n``.  sigma is the smallest (to 0.01%) whose Renyi-DP accountant epsilon
    (:func:`dp_sgd_epsilon`) for ``steps`` Poisson-subsampled Gaussian steps is at most ``epsilon``.
    The noise is numpy's floating-point Gaussian: private in real arithmetic, not as implemented
    (see the floating-point chapter).  The initial weights and the size n are treated as public.
    """
    x, classes, index, steps, q, lr = _training_inputs(X, y, epochs, sampling_rate, learning_rate)
    eps = check_positive(epsilon, "epsilon")
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    c = check_positive(clip, "clip")
    init_rng, batch_rng, noise_rng = _generators(rng)
    start = initial_classifier(x.shape[1], classes, model=model, hidden_units=hidden_units, rng=init_rng)
    sigma = noise_multiplier(eps, dlt, steps, q)
    std = round_up(Fraction(sigma) * Fraction(c))  # the noise's standard deviation sigma C, never below it

    def noisy_sum(layers: list[Layer]) -> list[NDArray[np.float64]]:
        total, _ = _clipped_sum(layers, c)
        return [g + std * noise_rng.standard_normal(g.shape) for g in total]

    trained = _train(start, x, index, steps, q, lr, noisy_sum, batch_rng)
    return TrainingResult(trained, sigma, _rdp_epsilon(sigma, steps, q, dlt), dlt, steps, c, q)


@renamed_parameters(hidden="hidden_units")
def sgd(
    X: object,
    y: object,
    *,
    epochs: float,
    sampling_rate: float,
    model: str = "logistic",
    rng: np.random.Generator,
    learning_rate: float = 1.0,
    hidden_units: int = 32,
) -> TrainingResult:
    """Non-private SGD with the same initial weights, Poisson batches and normalisation as
    :func:`dp_sgd` given an equal ``rng``, without clipping or noise (parameters as there).

    The result has ``noise_multiplier=0``, ``epsilon=inf``, ``delta=0`` and ``clip=inf``.
    """
    x, classes, index, steps, q, lr = _training_inputs(X, y, epochs, sampling_rate, learning_rate)
    init_rng, batch_rng, _ = _generators(rng)
    start = initial_classifier(x.shape[1], classes, model=model, hidden_units=hidden_units, rng=init_rng)

    def plain_sum(layers: list[Layer]) -> list[NDArray[np.float64]]:
        return [a.T @ b for a, b in layers]

    trained = _train(start, x, index, steps, q, lr, plain_sum, batch_rng)
    return TrainingResult(trained, 0.0, math.inf, 0.0, steps, math.inf, q)
