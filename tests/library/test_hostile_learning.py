"""Hostile inputs to DP-SGD, its variants and the membership attacks: extreme floats, shapes, dtypes."""


import numpy as np
import pytest

from dptutor.attacks import likelihood_ratio_scores
from dptutor.learning import Classifier, clipped_gradient_sum, initial_classifier, per_example_gradients, sgd
from dptutor.learning_variants import noiseless_step, released_sums

X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
Y = np.array([0, 1, 1, 0])


pytestmark = pytest.mark.filterwarnings("error")  # every warning is an error here: none may reach a user


@pytest.mark.parametrize("big", [1e20, -1e19, 2.0**63, 1e300])
def test_huge_integer_labels_are_refused_by_name(big):
    with pytest.raises(ValueError, match="y"):
        sgd(X, np.array([0.0, big, big, 0.0]), epochs=1, sampling_rate=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="classes"):
        initial_classifier(2, [0.0, big], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="classes"):
        Classifier((np.zeros((3, 1)),), "logistic", np.array([0.0, big]))


@pytest.mark.parametrize("scale", [1e160, 1e300])
def test_huge_features_are_clipped_not_dropped(scale):
    model = initial_classifier(2, [0, 1], rng=np.random.default_rng(0))
    sums, norms = clipped_gradient_sum(model, np.array([[scale, 0.0]]), [1], 1.0)
    assert np.isfinite(norms).all() and norms[0] == pytest.approx(0.5 * scale)
    assert np.linalg.norm(sums[0]) == pytest.approx(1.0)  # the example's gradient, scaled to norm clip


def test_microbatch_step_of_huge_features_is_clipped_without_warning():
    model = initial_classifier(2, [0, 1], rng=np.random.default_rng(0))
    step = noiseless_step(model, X * 1e300, Y, clip=1.0, microbatch=2, expected_size=1.0)
    assert np.isfinite(step).all() and 0.0 < np.linalg.norm(step) <= 2.0 + 1e-12


def test_empty_batch_still_checks_labels_and_columns():
    model = initial_classifier(2, [0, 1], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="y"):
        noiseless_step(model, np.zeros((0, 2)), [0, 1], clip=1.0, expected_size=1.0)
    with pytest.raises(ValueError, match="X"):
        noiseless_step(model, np.zeros((0, 5)), [], clip=1.0, expected_size=1.0)


def test_released_sums_refuses_an_output_too_large_by_name():
    with pytest.raises(ValueError, match="runs"):
        released_sums(np.ones((1, 2)), noise_multiplier=1.0, steps=10**5, sampling_rate=1.0, clip=1.0,
                      rng=np.random.default_rng(0), runs=10**7)


@pytest.mark.parametrize(("sigma", "clip"), [(1.0, 1e308), (1e308, 1e10)])
def test_released_sums_refuses_overflowing_noise(sigma, clip):
    with pytest.raises(ValueError, match="noise_multiplier"):
        released_sums(np.ones((1, 2)), noise_multiplier=sigma, steps=3, sampling_rate=1.0, clip=clip,
                      rng=np.random.default_rng(0))


def test_likelihood_ratio_scores_of_huge_losses_are_finite_and_ordered():
    inside = np.array([[True, False], [False, True]])
    scores = likelihood_ratio_scores([1e300, 0.2], [[1e300, 0.2], [1e299, 0.4]], inside)
    assert np.isfinite(scores).all() and scores[0] > 0
    scores = likelihood_ratio_scores([1e308, 1e308], [[1e308, 1e308], [1.7e308, 1.7e308]], inside)
    assert np.isfinite(scores).all() and scores[0] > 0 > scores[1]


def test_likelihood_ratio_scores_names_a_ragged_reference_in():
    with pytest.raises(TypeError, match="reference_in"):
        likelihood_ratio_scores([0.1, 0.2], [[0.1, 0.2], [0.3, 0.4]], [[True], [False, True]])


def test_per_example_gradients_of_an_empty_batch():
    for kind in ("logistic", "mlp"):
        model = initial_classifier(2, [0, 1, 2], model=kind, hidden_units=3, rng=np.random.default_rng(0))
        grads = per_example_gradients(model, np.zeros((0, 2)), [])
        assert grads.shape == (0, sum(w.size for w in model.weights))
