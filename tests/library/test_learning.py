"""DP-SGD from scratch (dptutor.learning): gradients, clipping, noise, accounting and accuracy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dptutor.learning import (
    Classifier,
    clipped_gradient_sum,
    dp_sgd,
    dp_sgd_epsilon,
    initial_classifier,
    noise_multiplier,
    per_example_gradients,
    sgd,
)


def _random_classifier(kind: str, features: int, classes: int, seed: int) -> Classifier:
    """A classifier with random (not zero) weights, so every gradient term is exercised."""
    rng = np.random.default_rng(seed)
    start = initial_classifier(features, np.arange(classes), model=kind, hidden_units=4, rng=rng)
    return Classifier(tuple(rng.normal(0.0, 0.7, size=w.shape) for w in start.weights), kind, start.classes)


def _problem(kind: str, *, examples: int, classes: int, scale: float, seed: int):
    """Random features (6 of them, times ``scale``), random labels and a random classifier."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(examples, 6)) * scale
    return X, rng.integers(0, classes, size=examples), _random_classifier(kind, 6, classes, seed=seed + 100)


def _loss(model: Classifier, x: np.ndarray, label: int) -> float:
    """Cross-entropy of one example, from the model's probabilities (the loss the gradients are of)."""
    p = model.predict_proba(x[None, :])[0]
    return -math.log(p[int(np.searchsorted(model.classes, label))])


def _finite_difference_gradient(model: Classifier, x: np.ndarray, label: int, h: float = 1e-6) -> np.ndarray:
    """The loop reference: central differences, one parameter at a time, flattened like the library."""
    out = []
    for k, w in enumerate(model.weights):
        for idx in np.ndindex(w.shape):
            shifted = []
            for sign in (1.0, -1.0):
                ws = [v.copy() for v in model.weights]
                ws[k][idx] += sign * h
                shifted.append(_loss(Classifier(tuple(ws), model.kind, model.classes), x, label))
            out.append((shifted[0] - shifted[1]) / (2 * h))
    return np.array(out)


@pytest.mark.parametrize(("kind", "classes"), [("logistic", 2), ("logistic", 3), ("mlp", 2), ("mlp", 3)])
def test_per_example_gradients_equal_a_loop_reference(kind, classes):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(5, 3))
    y = np.arange(5) % classes
    model = _random_classifier(kind, 3, classes, seed=classes)
    G = per_example_gradients(model, X, y)
    reference = np.array([_finite_difference_gradient(model, X[i], y[i]) for i in range(len(X))])
    # central differences err by O(h^2) plus rounding ~1e-16 / h: 1e-7 absolute is ample and tight
    np.testing.assert_allclose(G, reference, atol=1e-7, rtol=0)


@pytest.mark.parametrize("kind", ["logistic", "mlp"])
def test_clipped_sum_equals_the_materialised_clipped_gradients(kind):
    X, y, model = _problem(kind, examples=40, classes=4, scale=3.0, seed=3)
    G = per_example_gradients(model, X, y)
    norms = np.linalg.norm(G, axis=1)
    clip = float(np.median(norms))  # half the examples are clipped
    total, got_norms = clipped_gradient_sum(model, X, y, clip)
    np.testing.assert_allclose(got_norms, norms, rtol=1e-12)
    expected = (G * np.minimum(1.0, clip / norms)[:, None]).sum(axis=0)
    np.testing.assert_allclose(np.concatenate([t.ravel() for t in total]), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["logistic", "mlp"])
def test_clipping_bounds_every_per_example_norm(kind):
    X, y, model = _problem(kind, examples=30, classes=3, scale=10.0, seed=5)
    clip = 0.5
    for i in range(len(X)):  # the clipped "sum" of one example is its clipped gradient
        total, norm = clipped_gradient_sum(model, X[i:i + 1], y[i:i + 1], clip)
        clipped = math.sqrt(sum(float((t * t).sum()) for t in total))
        assert clipped <= clip * (1 + 1e-12)
        assert clipped == pytest.approx(min(norm[0], clip), rel=1e-12)


def test_noise_has_standard_deviation_sigma_times_clip():
    """One step on the whole data set (q = 1) from zero weights: the update is
    -(lr / n) (clipped sum + noise), so the noise is recovered exactly and its coordinates must be
    N(0, (sigma C)^2).  20,010 coordinates: the sample variance is judged by its chi-square law."""
    rng = np.random.default_rng(0)
    n, d, k = 20, 2000, 10
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = np.arange(n) % k
    clip, lr = 0.7, 1.0
    result = dp_sgd(X, y, epsilon=2.0, delta=1e-5, epochs=1, sampling_rate=1.0, clip=clip,
                    rng=np.random.default_rng(1), learning_rate=lr)
    assert result.steps == 1
    zero = initial_classifier(d, np.arange(k), rng=np.random.default_rng(0))
    (clipped,), _ = clipped_gradient_sum(zero, X, y, clip)
    noise = (-(n / lr) * result.model.weights[0] - clipped).ravel()
    scale = result.noise_multiplier * clip
    m = noise.size
    # two-sided 1e-6 acceptance regions for the mean (normal) and the variance (chi-square, m dof)
    assert abs(noise.mean()) <= stats.norm.isf(5e-7) * scale / math.sqrt(m)
    ratio = float((noise**2).sum() / scale**2)
    assert stats.chi2.ppf(5e-7, m) <= ratio <= stats.chi2.isf(5e-7, m)


@pytest.mark.parametrize(("epsilon", "q", "steps"), [(1.0, 0.05, 100), (8.0, 0.05, 100), (1.0, 0.01, 2000)])
def test_noise_multiplier_meets_the_target(epsilon, q, steps):
    sigma = noise_multiplier(epsilon, 1e-5, steps, q)
    assert dp_sgd_epsilon(sigma, steps, q, 1e-5) <= epsilon
    # the smallest such sigma to 0.01%: one step of the tolerance below already overspends
    assert dp_sgd_epsilon(sigma / (1 + 2e-4), steps, q, 1e-5) > epsilon


@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_noise_multiplier_agrees_with_dp_accounting(epsilon):
    dp_accounting = pytest.importorskip(
        "dp_accounting", reason="optional extra dp-accounting not installed (pip install 'dptutor[accounting]')")
    from dp_accounting import rdp

    q, steps, delta = 0.05, 100, 1e-5  # the chapter's setting on digits: 5 epochs
    sigma = noise_multiplier(epsilon, delta, steps, q)
    theirs = rdp.RdpAccountant()  # their default orders, fractional ones included
    theirs.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
    their_eps = theirs.get_epsilon(delta)
    assert abs(dp_sgd_epsilon(sigma, steps, q, delta) - their_eps) <= 0.01 * their_eps


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    selection = pytest.importorskip("sklearn.model_selection")
    X, y = datasets.load_digits(return_X_y=True)
    return selection.train_test_split(X / 16.0, y, test_size=0.25, random_state=0)


def test_accuracy_on_digits_is_well_above_chance(digits):
    Xtr, Xte, ytr, yte = digits
    result = dp_sgd(Xtr, ytr, epsilon=8.0, delta=1e-5, epochs=5, sampling_rate=0.05, clip=1.0,
                    rng=np.random.default_rng(2026), learning_rate=2.0)
    assert result.epsilon <= 8.0 and result.delta == 1e-5 and result.steps == 100
    correct = int((result.predict(Xte) == yte).sum())
    # chance is 10% on ten balanced classes; the 99.9% lower Clopper-Pearson limit must clear 70%
    lower = stats.binomtest(correct, len(yte)).proportion_ci(0.999).low
    assert lower > 0.7


def test_sgd_is_the_same_loop_without_clipping_or_noise(digits):
    Xtr, Xte, ytr, yte = digits
    plain = sgd(Xtr, ytr, epochs=5, sampling_rate=0.05, rng=np.random.default_rng(2026), learning_rate=2.0)
    assert plain.epsilon == math.inf and plain.noise_multiplier == 0.0 and plain.steps == 100
    # a noiseless reference: the 99.9% lower Clopper-Pearson limit of its accuracy clears 90%
    correct = int((plain.predict(Xte) == yte).sum())
    assert stats.binomtest(correct, len(yte)).proportion_ci(0.999).low > 0.9


def test_no_warning_on_extreme_inputs():
    X = np.array([[1e6, -1e6], [-1e6, 1e6], [1e6, 1e6]])
    y = np.array([0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = dp_sgd(X, y, epsilon=1.0, delta=1e-5, epochs=1, sampling_rate=0.5, clip=1.0,
                        model="mlp", rng=np.random.default_rng(0))
        p = result.predict_proba(X * 10)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)


GOOD = dict(epsilon=1.0, delta=1e-5, epochs=1, sampling_rate=0.5, clip=1.0)


@pytest.mark.parametrize(("change", "error", "name"), [
    ({"X": np.array([[np.nan, 0.0]] * 4)}, ValueError, "X"),
    ({"X": np.zeros(4)}, ValueError, "X"),
    ({"y": np.array([0, 1, 0])}, ValueError, "y"),
    ({"y": np.array([0.5, 1, 0, 1])}, ValueError, "y"),
    ({"y": np.zeros(4)}, ValueError, "y"),
    ({"epsilon": 0.0}, ValueError, "epsilon"),
    ({"delta": 1.0}, ValueError, "delta"),
    ({"epochs": -1.0}, ValueError, "epochs"),
    ({"sampling_rate": 0.0}, ValueError, "sampling_rate"),
    ({"sampling_rate": 1.5}, ValueError, "sampling_rate"),
    ({"clip": 0.0}, ValueError, "clip"),
    ({"clip": True}, TypeError, "clip"),
    ({"model": "svm"}, ValueError, "model"),
    ({"rng": 0}, TypeError, "rng"),
    ({"learning_rate": -0.1}, ValueError, "learning_rate"),
    ({"hidden_units": 0, "model": "mlp"}, ValueError, "hidden_units"),
])
def test_bad_inputs_name_the_parameter(change, error, name):
    kwargs = {"X": np.zeros((4, 2)), "y": np.array([0, 1, 0, 1]), "rng": np.random.default_rng(0), **GOOD}
    kwargs.update(change)
    X, y = kwargs.pop("X"), kwargs.pop("y")
    with pytest.raises(error, match=rf"\b{name}\b"):
        dp_sgd(X, y, **kwargs)


def test_too_small_an_epsilon_is_refused_not_looped_on():
    with pytest.raises(ValueError, match="epsilon"):
        noise_multiplier(1e-6, 1e-5, 10**5, 0.5)


def test_hidden_is_a_deprecated_alias_of_hidden_units():
    """``hidden`` names the grader's run in dptutor.assignments; the layer's width is ``hidden_units``."""
    data = {"X": np.random.default_rng(3).normal(size=(20, 3)), "y": np.arange(20) % 2}
    new = sgd(**data, epochs=1.0, sampling_rate=0.5, model="mlp", hidden_units=5, rng=np.random.default_rng(4))
    with pytest.warns(DeprecationWarning, match="use hidden_units="):
        old = sgd(**data, epochs=1.0, sampling_rate=0.5, model="mlp", hidden=5, rng=np.random.default_rng(4))
    assert all(np.array_equal(a, b) for a, b in zip(old.model.weights, new.model.weights))
    with pytest.warns(DeprecationWarning, match="use hidden_units="):
        start = initial_classifier(3, np.arange(2), model="mlp", hidden=7, rng=np.random.default_rng(0))
    assert start.weights[0].shape == (4, 7)
    with pytest.raises(TypeError, match="hidden_units=.*hidden="):
        dp_sgd(**data, **GOOD, rng=np.random.default_rng(0), hidden=5, hidden_units=5)
