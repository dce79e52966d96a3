"""Hostile inputs, round 4: sizes checked before copying, seeds, exact DP-Sniper integrals, zoo options."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence

import numpy as np
import pytest

from dptutor import _validate as v
from dptutor.composition import sequential_epsilon
from dptutor.dpsniper import rnm_index_probabilities, svt_pattern_probabilities
from dptutor.experiments import cell_seed, run_grid
from dptutor.zoo import ZooEntry, laplace_count
from dptutor.zoo.noisy_max import report_noisy_max


def _refused_fast(fn, match):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        fn()
    assert time.perf_counter() - start < 0.5


# --- 1. sequences and seeds: the length is checked before anything is copied --------------------------------


@pytest.mark.parametrize("value", [np.broadcast_to(0.5, (2**40,)), range(10**20), range(2**20 + 1)],
                         ids=["array 2**40", "range 10**20", "range limit+1"])
def test_check_sequence_refuses_a_huge_sequence_before_copying(value):
    _refused_fast(lambda: v.check_sequence(value, "values"), r"^values must have at most 1,048,576 items")


def test_sequential_epsilon_refuses_a_long_sequence_naming_it():
    _refused_fast(lambda: sequential_epsilon(np.broadcast_to(0.5, (2**21,))), r"^epsilons must have at most")
    _refused_fast(lambda: sequential_epsilon(np.broadcast_to(0.5, (2**40,))), r"^epsilons must have at most")
    assert sequential_epsilon(np.broadcast_to(0.5, (4,))) == 2.0


class _LyingLength(Sequence):
    """Claims two items, yields forever."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return 1.0

    def __iter__(self):
        while True:
            yield 1.0


def test_a_sequence_whose_length_lies_is_not_copied_past_the_limit():
    with pytest.raises(ValueError, match="^values must have at most 10 items"):
        v.check_sequence(_LyingLength(), "values", max_len=10)
    with pytest.raises(ValueError, match=r"^pair must be a pair of real numbers \(low, high\), got 3 item"):
        v.check_interval(_LyingLength(), "pair")


def test_check_interval_refuses_a_huge_array_before_copying():
    _refused_fast(lambda: v.check_interval(np.broadcast_to(0.5, (2**40,)), "pair"), r"^pair must be a pair")


@pytest.mark.parametrize(("seed", "match"), [
    (np.broadcast_to(1, (2**40,)), r"^rng must have at most 4,096 items"),
    (np.broadcast_to(1, (2**20, 2**20)), r"^rng must have at most 4,096 items"),
    ([1] * 4097, r"^rng must have at most 4,096 items"),
    (2**4096, r"^rng must be below 2\*\*4096"),
    ([1, 2**5000], r"^rng must hold only integers below 2\*\*4096"),
], ids=["2**40", "2**40 2-d", "4097 items", "2**4096", "2**5000 item"])
def test_check_seed_refuses_huge_seeds_fast(seed, match):
    _refused_fast(lambda: v.check_seed(seed, "rng"), match)
    _refused_fast(lambda: v.check_seed_sequence(seed, "rng"), match)


def test_check_seed_still_takes_ordinary_seeds():
    assert v.check_seed(2**4096 - 1) == 2**4096 - 1
    assert v.check_seed(np.arange(6).reshape(2, 3)) == (0, 1, 2, 3, 4, 5)
    assert v.check_seed([7] * v.MAX_SEED_LENGTH) == (7,) * v.MAX_SEED_LENGTH
    with pytest.raises(TypeError, match="^seed must hold only integers"):
        v.check_seed(np.array([1.5]))


def test_moved_array_checks_are_still_exported_by_validate():
    from dptutor._validate import arrays

    for name in ("MAX_ELEMENTS", "check_broadcast", "check_batch", "immutable_finite_array"):
        assert getattr(v, name) is getattr(arrays, name) and name in v.__all__
    frozen = v.immutable_finite_array(np.ones((2, 3)))
    assert v.check_batch(frozen[:1]) is not None and not frozen.flags.writeable
    with pytest.raises(ValueError, match="^values must be finite"):
        v.immutable_finite_array(np.array([1.0, np.nan]))


# --- 2. run_grid names rng ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rng", [10**5000, [1, 10**5000], [1] * 5000], ids=["huge int", "huge item", "5000 items"])
def test_run_grid_names_rng_for_an_unusable_seed(rng):
    with pytest.raises(ValueError, match=r"^rng must ") as info:
        run_grid(rng=rng)
    assert "seed and n" not in str(info.value)


def test_cell_seed_names_n_when_it_cannot_be_printed():
    with pytest.raises(ValueError, match=r"^n must be an integer of at most 4300 digits, got an int too long to print"):
        cell_seed(1, "laplace", 0.1, 10**5000)
    with pytest.raises(ValueError, match=r"^seed must be below 2\*\*4096"):
        cell_seed(10**5000, "laplace", 0.1, 2)


# --- 3. exact DP-Sniper probabilities: accurate and free of IntegrationWarning --------------------------------
# References: the integrands are, between their kinks, finite sums of c * exp(lam * r); integrated in closed form
# with mpmath at 80 digits (a probability below 1e-288 is compared to an absolute 1e-298).

_SVT_CASES = [
    ((1.0, 0.0, 1.0), 1.0, 4, 30.0, {(1, -1, -1): 0.0003994730713380093, (0, 1, -1): 5.448508949196201e-05,
                                     (0, 0, 1): 8.076278969092536e-05, (0, 0, 0): 0.9994652790494791}),
    ((1.0, 0.0, 1.0), 1.0, 1, 200.0, {(1, -1, -1): 1.6510425514788583e-22, (0, 1, -1): 1.2858332319759453e-22,
                                      (0, 0, 1): 1.6510425514788583e-22, (0, 0, 0): 1.0}),
    ((1.0, 0.0, 1.0), 50.0, 1, 30.0, {(1, -1, -1): 2.466942636512186e-158, (0, 1, -1): 9.193439601694259e-164,
                                      (0, 0, 1): 2.466942636512186e-158, (0, 0, 0): 1.0}),
    ((0.0, 0.5, 1.0, 30.0), 1e-12, 2, -128.0, {(1, -1, -1, -1): 0.5000000000106667, (0, 1, -1, -1): 0.20833333333335416,
                                              (0, 0, 1, -1): 0.10416666666481354, (0, 0, 0, 1): 0.058333333331858854,
                                              (0, 0, 0, 0): 0.12916666665930676}),
    ((1001.0, 1001.0), 0.1, 1, 1.0, {(1, -1): 0.9999999999907414, (0, 1): 9.258629242015464e-12,
                                     (0, 0): 1.2617238588763927e-21}),
    ((3.0, -2.0), 1.0, 4, 60.0, {(1, -1): 3.642723098911073e-07, (0, 1): 3.0761100829483947e-09,
                                 (0, 0): 0.99999963265158}),
    ((3.0, -2.0), 1.0, 4, 1e6, {(1, -1): 0.0, (0, 1): 0.0, (0, 0): 1.0}),
]

_RNM_CASES = [
    ((0.0, 0.5, 1.0, 30.0), 50.0, "laplace", [5e-324, 9.2682e-319, 2.48871426686e-313, 1.0]),
    ((0.0, 0.5, 1.0, 30.0), 50.0, "exponential", [0.0, 2.55e-321, 6.84653173e-316, 1.0]),
    ((0.0, 0.5, 1.0, 30.0), 1e-12, "laplace", [0.24999999999885156, 0.24999999999892447, 0.24999999999899739,
                                               0.2500000000032266]),
    ((1e6, -1e6, 999999.9999999999), 0.1, "laplace", [0.5000000000014552, 0.0, 0.49999999999854483]),
]


def _close(got, want):
    return abs(got - want) <= max(1e-11 * abs(want), 1e-298)


@pytest.mark.parametrize(("data", "epsilon", "algorithm", "threshold", "want"), _SVT_CASES)
def test_svt_pattern_probabilities_are_accurate_without_warnings(data, epsilon, algorithm, threshold, want):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = svt_pattern_probabilities(data, epsilon=epsilon, algorithm=algorithm, threshold=threshold)
    assert got.keys() == want.keys()
    assert all(_close(got[k], want[k]) for k in want), (got, want)


@pytest.mark.parametrize(("data", "epsilon", "noise", "want"), _RNM_CASES)
def test_rnm_index_probabilities_are_accurate_without_warnings(data, epsilon, noise, want):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = rnm_index_probabilities(data, epsilon=epsilon, noise=noise)
    assert all(_close(g, w) for g, w in zip(got.tolist(), want)), (got, want)


@pytest.mark.parametrize("epsilon", [1e-12, 50.0])
@pytest.mark.parametrize("algorithm", [1, 2, 4])
@pytest.mark.parametrize("threshold", [60.0, 100.0, 200.0, -128.0])
def test_svt_pattern_probabilities_at_the_documented_extremes_warn_nothing(epsilon, algorithm, threshold):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = svt_pattern_probabilities((1.0, 0.0, 1.0), epsilon=epsilon, algorithm=algorithm, threshold=threshold)
    assert math.isclose(sum(got.values()), 1.0, rel_tol=1e-12)


# --- 4. ZooEntry options ------------------------------------------------------------------------------------


def _entry(options, mechanism=laplace_count):
    return ZooEntry("count", mechanism, 1.0, 0.0, 1.0, True, 1.0, "epsilon-DP", "dwork2006calibrating", options=options)


@pytest.mark.parametrize(("options", "error", "match"), [
    ((math.nan, math.nan), TypeError, r"^options\[0\] must be a \(name, value\) tuple"),
    (((1, 2),), TypeError, r"^options\[0\] must be named by a str, got int"),
    ((("noise", "laplace", 3),), TypeError, r"^options\[0\] must be a \(name, value\) tuple"),
    ([("noise", "laplace")], TypeError, r"^options must be a tuple"),
    ((("not a name", 1),), ValueError, r"^options\[0\] must be named by a keyword argument"),
    ((("epsilon", 2.0),), ValueError, r"^options\[0\] must not set 'epsilon'"),
    ((("rng", 2),), ValueError, r"^options\[0\] must not set 'rng'"),
    ((("noise", "laplace"), ("noise", "exponential")), ValueError, r"^options names 'noise' twice"),
    ((("nosie", "laplace"),), ValueError, r"^options\[0\]: the mechanism takes no keyword argument 'nosie'"),
])
def test_zoo_entry_validates_options_when_made(options, error, match):
    with pytest.raises(error, match=match):
        _entry(options, report_noisy_max)


def test_zoo_entry_with_valid_options_releases():
    entry = _entry((("noise", "exponential"),), report_noisy_max)
    out = entry.release()(np.array([1.0, 0.0]), 3, np.random.default_rng(0))
    assert np.asarray(out).shape[0] == 3
    assert _entry(()).release().keywords == {"epsilon": 1.0}
