"""A private text representation done right (dptutor.text_privacy): encoder, clip, sensitivity, noise, audits."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import audit_pair
from dptutor.exact import discrete_gaussian_pmf
from dptutor.renyi import round_up, zcdp_to_dp
from dptutor.text_privacy import (
    DPTextRelease,
    TextRelease,
    SHARED_WORDS,
    TOPIC_WORDS,
    adversarial_pair,
    bag_of_words,
    build_vocabulary,
    calibrate,
    clip_to_grid,
    generated_corpus,
    grid_sensitivity,
    nearest_centroid_accuracy,
    sensitivity,
    wrong_sensitivity_release,
)

PAIRS = [("l1", "laplace"), ("l2", "laplace"), ("l2", "gaussian")]


def test_generated_corpus_is_seeded_and_uses_its_words():
    docs, labels = generated_corpus(50, words=7, seed=3)
    again, labels_again = generated_corpus(50, words=7, seed=3)
    assert docs == again and np.array_equal(labels, labels_again)
    assert len(docs) == 50 and set(labels.tolist()) == {0, 1}
    for doc, label in zip(docs, labels):
        words = doc.split()
        assert len(words) == 7
        assert set(words) <= set(TOPIC_WORDS[label]) | set(SHARED_WORDS)
    assert generated_corpus(50, words=7, seed=4)[0] != docs


def test_corpus_topic_share_one_uses_only_topic_words():
    docs, labels = generated_corpus(20, topic_share=1.0, seed=0)
    for doc, label in zip(docs, labels):
        assert set(doc.split()) <= set(TOPIC_WORDS[label])


def test_vocabulary_is_ranked_by_frequency_then_alphabet():
    assert build_vocabulary(["b a c", "a c", "a"]) == ("a", "c", "b")
    assert build_vocabulary(["b a c", "a c", "a"], size=2) == ("a", "c")


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_encoder_rows_have_norm_one_and_the_right_counts(norm):
    docs, _ = generated_corpus(40, seed=2)
    vocab = build_vocabulary(docs[:20])
    x = bag_of_words(docs, vocab, norm=norm)
    sizes = np.abs(x).sum(axis=1) if norm == "l1" else np.sqrt((x * x).sum(axis=1))
    nonempty = sizes > 0
    np.testing.assert_allclose(sizes[nonempty], 1.0, rtol=1e-12)
    counts = [sum(w == vocab[0] for w in d.split()) for d in docs]
    ratio = x[:, 0] / np.where(nonempty, sizes, 1.0)
    assert np.all((np.array(counts) == 0) == (ratio == 0))
    assert bag_of_words(["zzz unknown"], vocab, norm=norm).sum() == 0.0


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_clip_keeps_the_grid_norm_exactly_and_shrinks_only_long_rows(norm):
    rng = np.random.default_rng(5)
    v = rng.normal(size=(300, 9)) * rng.choice([0.01, 1.0, 100.0], size=(300, 1))
    k = clip_to_grid(v, norm=norm, steps=997)
    exact = np.abs(k).sum(axis=1) if norm == "l1" else (k * k).sum(axis=1)
    assert exact.max() <= (997 if norm == "l1" else 997**2)
    assert np.all(np.abs(k) <= np.abs(v) * 997 + 1e-9) and np.all(np.sign(k) * np.sign(v) >= 0)
    short = (np.abs(v).sum(axis=1) if norm == "l1" else np.linalg.norm(v, axis=1)) <= 1
    np.testing.assert_array_equal(k[short], np.trunc(v[short] * 997).astype(np.int64))


def test_clip_fixes_a_row_that_float_rounding_leaves_outside():
    # 0.1 * 10 rounds to exactly 1.0 per coordinate, so floor leaves 10 ones: l1 norm 10 = steps, in the clip.
    k = clip_to_grid(np.full((1, 10), 0.1), norm="l1", steps=10)
    assert np.abs(k).sum() <= 10


def test_sensitivity_table_values():
    assert sensitivity("l1", "laplace", bound=0.5, dimension=16) == 1.0
    assert sensitivity("l2", "laplace", bound=0.5, dimension=16) == 4.0
    assert sensitivity("l2", "gaussian", bound=0.5, dimension=16) == 1.0
    assert grid_sensitivity("l2", "laplace", steps=10, dimension=2) == math.isqrt(800) == 28
    with pytest.raises(ValueError, match="noise"):
        sensitivity("l1", "gaussian", bound=1.0, dimension=3)


@pytest.mark.parametrize(("norm", "noise"), PAIRS)
def test_adversarial_pair_attains_the_grid_sensitivity(norm, noise):
    # steps / sqrt(d) is an integer (steps = 12, d = 16), so the l2-Laplace bound is attained too.
    steps, d = 12, 16
    x, y = adversarial_pair(norm, noise, steps=steps, dimension=d)
    for v in (x, y):
        assert clip_to_grid(v[None, :].astype(float) / steps, norm=norm, steps=steps).tolist() == [v.tolist()]
    diff = x - y
    distance = np.abs(diff).sum() if noise == "laplace" else math.isqrt(int((diff * diff).sum()))
    assert distance == grid_sensitivity(norm, noise, steps=steps, dimension=d)


@pytest.mark.parametrize(("norm", "noise"), PAIRS)
def test_no_pair_of_clipped_vectors_exceeds_the_sensitivity(norm, noise):
    # Exhaustive over the clipped grid vectors of dimension 3 with steps 3.
    steps, d = 3, 3
    pts = [np.array(p) for p in itertools.product(range(-steps, steps + 1), repeat=d)]
    inside = [p for p in pts if (np.abs(p).sum() <= steps if norm == "l1" else (p * p).sum() <= steps**2)]
    sens = grid_sensitivity(norm, noise, steps=steps, dimension=d)
    worst = max(np.abs(a - b).sum() if noise == "laplace" else (a - b) @ (a - b) for a in inside for b in inside)
    assert worst <= (sens if noise == "laplace" else sens**2)


def test_calibration_reports_the_honest_epsilon():
    lap = calibrate("l2", "laplace", bound=1.0, steps=12, dimension=16, epsilon=2.0)
    assert lap.scale == Fraction(grid_sensitivity("l2", "laplace", steps=12, dimension=16)) / 2 and lap.epsilon == 2.0
    gauss = calibrate("l2", "gaussian", bound=1.0, steps=50, dimension=16, epsilon=3.0, delta=1e-5)
    rho = Fraction((2 * 50) ** 2) / (2 * gauss.scale**2)  # rounded up to a double: never below the exact rho
    assert gauss.scale.denominator == 1 and gauss.epsilon == zcdp_to_dp(round_up(rho), 1e-5) >= zcdp_to_dp(float(rho), 1e-5)
    assert 2.9 <= gauss.epsilon <= 3.0 < zcdp_to_dp((2 * 50) ** 2 / (2 * float(gauss.scale - 1) ** 2), 1e-5)
    wrong = wrong_sensitivity_release(bound=1.0, steps=12, dimension=16, epsilon=1.0)
    assert wrong.claimed_epsilon == 1.0 and wrong.epsilon == pytest.approx(2 * math.sqrt(16), rel=1e-12)
    with pytest.raises(ValueError, match="delta"):
        calibrate("l1", "laplace", bound=1.0, steps=5, dimension=3, epsilon=1.0, delta=1e-5)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_noise_follows_the_exact_law(noise):
    release = calibrate("l2", noise, bound=1.0, steps=3, dimension=4, epsilon=1.5,
                        delta=1e-3 if noise == "gaussian" else 0.0)
    k = np.array([3, 0, 0, 0])
    out = release(k, 20_000, np.random.default_rng(11))
    z = np.rint(out * release.steps / release.bound).astype(np.int64) - k
    values = np.arange(-60, 61)
    if noise == "laplace":
        t = float(release.scale)
        pmf = np.exp(-np.abs(values) / t) * math.tanh(1 / (2 * t))
    else:
        pmf = discrete_gaussian_pmf(values, release.scale)
    observed = np.array([(z == v).sum() for v in values])
    keep = pmf * z.size >= 5
    expected = np.append(pmf[keep], 1.0 - pmf[keep].sum()) * z.size
    counts = np.append(observed[keep], z.size - observed[keep].sum())
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def _audit(release, norm, noise, statistic, trials=4_000):
    x, y = adversarial_pair(norm, noise, steps=release.steps, dimension=release.dimension)
    return audit_pair(release, x, y, epsilon=release.claimed_epsilon, trials=trials, rng=7, statistic=statistic,
                      delta=getattr(release, "delta", 0.0))


def test_audits_pass_the_repaired_release_and_fail_the_broken_ones():
    steps, d, eps = 12, 16, 1.0
    total = lambda out: out.sum(axis=1)  # noqa: E731 (the direction that separates the l2-Laplace pair)
    repaired = calibrate("l2", "laplace", bound=1.0, steps=steps, dimension=d, epsilon=eps)
    assert not _audit(repaired, "l2", "laplace", total).is_violation()
    wrong = wrong_sensitivity_release(bound=1.0, steps=steps, dimension=d, epsilon=eps)
    assert _audit(wrong, "l2", "laplace", total).is_violation()
    first = lambda out: np.isclose(out[:, 0], 1.0, rtol=0.0, atol=1e-9).astype(np.int64)  # noqa: E731 (the unperturbed first coordinate)
    l1 = calibrate("l1", "laplace", bound=1.0, steps=steps, dimension=d, epsilon=eps)
    assert not _audit(l1, "l1", "laplace", first).is_violation()
    dptext = DPTextRelease(1.0, steps, d, eps)
    assert _audit(dptext, "l1", "laplace", first, trials=1_000).is_violation()


def test_classifier_accuracy_and_checks():
    train = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [0.9, 1.0]])
    assert nearest_centroid_accuracy(train, [0, 0, 1, 1], [[0.05, 0.1], [1.0, 0.8]], [0, 1]) == 1.0
    assert nearest_centroid_accuracy(train, [0, 0, 1, 1], [[0.05, 0.1], [1.0, 0.8]], [1, 0]) == 0.0
    with pytest.raises(ValueError, match="train_labels"):
        nearest_centroid_accuracy(train, [0, 0, 0, 0], train, [0, 0, 0, 0])


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="norm"):
        bag_of_words(["a"], ("a",), norm="l3")
    with pytest.raises(ValueError, match="vocabulary"):
        bag_of_words(["a"], ("a", "a"))
    with pytest.raises(TypeError, match="documents"):
        build_vocabulary(["a", 3])
    with pytest.raises(ValueError, match="steps"):
        clip_to_grid([[1.0]], norm="l1", steps=0)
    with pytest.raises(ValueError, match="vectors"):
        clip_to_grid([[np.nan]], norm="l1", steps=3)
    release = calibrate("l1", "laplace", bound=1.0, steps=3, dimension=2, epsilon=1.0)
    with pytest.raises(ValueError, match="k must be clipped"):
        release(np.array([3, 1]), 2, np.random.default_rng(0))
    with pytest.raises(TypeError, match="k"):
        release(np.array([0.5, 0.0]), 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="size"):
        release(np.array([[1, 1], [0, 1]]), 2, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        release(np.array([1, 1]), 2, None)
    with pytest.raises(ValueError, match="epsilon"):
        calibrate("l1", "laplace", bound=1.0, steps=3, dimension=2, epsilon=-1.0)
    with pytest.raises(ValueError, match="delta"):
        TextRelease("l2", "gaussian", 1.0, 3, 2, Fraction(4), 6, 1.0, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        calibrate("l1", "laplace", bound=1.0, steps=3, dimension=2, epsilon=1e-300)


def test_clip_to_grid_takes_entries_near_the_float_limit_without_warnings():
    # The norm of a row of 1e308 entries overflowed (an overflow warning, then every entry clipped to 0).
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        huge = clip_to_grid(np.array([[1e308, -1e308, 5e307]]), norm="l2", steps=10)
        small = clip_to_grid(np.array([[2.0, -2.0, 1.0]]), norm="l2", steps=10)
    assert huge.tolist() == small.tolist() == [[6, -6, 3]]
