"""Hostile inputs to the audit tools, the zoo, DP-Sniper's mechanisms and the figures (regressions of found defects).

Every call runs with warnings turned into errors: a warning must never reach the user.
"""

from __future__ import annotations

import json
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import dptutor.dpsniper as dpsniper  # noqa: E402
import dptutor.zoo as zoo  # noqa: E402
from dptutor import plotting  # noqa: E402
from dptutor.audit import (  # noqa: E402
    estimate_loss,
    pair_moves,
    reach_count_probability,
    search_pairs,
    simulated_losses,
    value_pairs,
)
from dptutor.distributions import laplace_cdf, laplace_pdf  # noqa: E402


pytestmark = pytest.mark.filterwarnings("error")  # every warning is an error here: none may reach a user


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------------------------------------
# estimate_loss: a user's mechanism that raises, or returns a masked array
# ---------------------------------------------------------------------------------------------


def _divides_by_zero(x, epsilon, rng):
    return x / 0 if isinstance(x, int) else 1 // 0


def _looks_up_a_missing_key(x, epsilon, rng):
    return {}["noise"]


@pytest.mark.parametrize("mechanism", [_divides_by_zero, _looks_up_a_missing_key])
def test_estimate_loss_names_a_mechanism_that_raises(mechanism):
    with pytest.raises(ValueError, match=f"mechanism '{mechanism.__name__}' raised"):
        estimate_loss(mechanism, 2, 1.0, 20, rng=0)


def test_estimate_loss_refuses_masked_outputs_without_a_warning():
    def masked(x, epsilon, rng):
        return np.ma.masked_array(np.asarray(x, dtype=float), mask=np.ones(x.shape, dtype=bool))

    with pytest.raises(ValueError, match="masked"):
        estimate_loss(masked, 2, 1.0, 20, rng=0)


# ---------------------------------------------------------------------------------------------
# search_pairs: the mechanism's exceptions, non-finite and non-numeric candidates
# ---------------------------------------------------------------------------------------------


def _failing_after_first_call(error):
    calls = {"n": 0}

    def mechanism(data, size, rng):
        calls["n"] += 1
        if calls["n"] > 2:
            raise error
        return data + rng.laplace(0.0, 1.0, size)

    return mechanism


@pytest.mark.parametrize("error", [json.JSONDecodeError("bad", "doc", 0), ZeroDivisionError("boom")])
def test_search_pairs_names_the_candidate_whatever_the_mechanism_raises(error):
    mechanism = _failing_after_first_call(error)
    with pytest.raises(ValueError, match=r"candidates\[0\]"):
        search_pairs(mechanism, [(0.0, 1.0), (1.0, 0.0)], epsilon=1.0, trials=100, pilot_trials=100, rng=0)


@pytest.mark.parametrize("bad", [np.inf, np.float32("nan"), np.array([1.0, np.inf])])
def test_search_pairs_refuses_non_finite_candidates_before_running(bad):
    calls = []

    def mechanism(data, size, rng):
        calls.append(size)
        return rng.laplace(0.0, 1.0, size)

    with pytest.raises(ValueError, match=r"candidates\[1\]"):
        search_pairs(mechanism, [(0.0, 1.0), (bad, 1.0)], epsilon=1.0, trials=100, rng=0)
    assert calls == []


def test_search_pairs_accepts_non_numeric_candidates():
    def mechanism(data, size, rng):
        return rng.integers(0, 2, size) + (data == ["a"])

    found = search_pairs(mechanism, [(["a"], ["b"])], epsilon=1.0, trials=100, pilot_trials=100, rng=0)
    assert found.pair == (["a"], ["b"]) and np.isfinite(found.lower_bound)


# ---------------------------------------------------------------------------------------------
# pair_pool, limits, simulated_losses
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "x_prime"), [(1e308, -1e308), ([1.7e308], [1.79e308])])
def test_pair_moves_refuses_values_whose_moves_overflow(x, x_prime):
    with pytest.raises(ValueError, match="x and x_prime"):
        pair_moves(x, x_prime)


def test_pair_moves_refuses_vectors_too_long_to_list_their_moves():
    with pytest.raises(ValueError, match="x must have at most"):
        pair_moves(np.zeros(5000), np.ones(5000))


@pytest.mark.parametrize("bad", [np.float32("nan"), np.array([np.nan, 1.0]), complex(np.inf, 0.0),
                                 __import__("decimal").Decimal("nan")])
def test_value_pairs_refuses_non_finite_values_of_any_type(bad):
    with pytest.raises(ValueError, match="values"):
        value_pairs([bad, 0.0])


def test_reach_count_probability_refuses_too_many_limits_cheaply():
    with pytest.raises(ValueError, match="limits"):
        reach_count_probability(np.full(10**6, 0.5), 500_000)


def test_simulated_losses_refuses_gigabytes_of_reps():
    with pytest.raises(ValueError, match="reps"):
        simulated_losses("laplace", 1, 1.0, 10, reps=1 << 27, rng=0)


# ---------------------------------------------------------------------------------------------
# zoo and DP-Sniper mechanisms: outputs too large, parameters that overflow
# ---------------------------------------------------------------------------------------------

_HUGE = np.zeros(1 << 20)
_SIZE = 1 << 28

_TOO_MANY = [
    *[(getattr(zoo, name), (_HUGE,), {"epsilon": 1.0}) for name in (
        "laplace_vector", "adept_vector", "report_noisy_max", "report_noisy_max_value",
        "noisy_histogram", "histogram_eps", "svt", "svt_numerical_value")],
    *[(getattr(dpsniper, name), (_HUGE,), {"epsilon": 1.0}) for name in ("prefix_sum", "numerical_svt")],
    (dpsniper.laplace_parallel, (0.0,), {"epsilon": 1.0, "copies": 4096}),
    (dpsniper.one_time_rappor, (0,), {"bits": 4096}),
    (dpsniper.rappor, (0,), {"bits": 4096}),
]


@pytest.mark.parametrize(("fn", "args", "kwargs"), _TOO_MANY, ids=[f.__name__ for f, _, _ in _TOO_MANY])
def test_mechanisms_refuse_outputs_beyond_the_element_limit(fn, args, kwargs):
    with pytest.raises(ValueError, match="size"):
        fn(*args, _SIZE, 0, **kwargs)


@pytest.mark.parametrize("fn", [zoo.svt, zoo.svt_numerical_value])
def test_svt_refuses_a_cut_off_beyond_float_range(fn):
    with pytest.raises(ValueError, match="c must be"):
        fn(np.zeros(3), 3, 0, epsilon=1.0, c=10**400)


def test_gaussian_count_with_a_subnormal_delta_stays_finite():
    out = zoo.gaussian_count(0.0, 5, 0, epsilon=1.0, delta=5e-324)
    assert np.isfinite(out).all()


def test_histogram_eps_refuses_a_noise_scale_that_overflows():
    with pytest.raises(ValueError, match="epsilon"):
        zoo.histogram_eps(np.array([1.0]), 3, 0, epsilon=1.7e308)


# ---------------------------------------------------------------------------------------------
# figures: nothing to draw, non-finite curves, user functions that raise
# ---------------------------------------------------------------------------------------------


def _raises(x):
    return 1 // 0


@pytest.mark.parametrize(("call", "word"), [
    (lambda: plotting.plot_histograms_with_pdf({"a": [np.nan, np.inf]}, laplace_pdf), "samples"),
    (lambda: plotting.plot_ecdfs({"a": [np.nan]}, {"L": laplace_cdf}), "samples"),
    (lambda: plotting.plot_histograms_with_pdf({"a": [1.0]}, lambda x: np.full(x.shape, np.inf)), "pdf"),
    (lambda: plotting.plot_histograms_with_pdf({"a": [1.0]}, lambda x: np.full(x.shape, np.nan)), "pdf"),
    (lambda: plotting.plot_histograms_with_pdf({"a": [1.0]}, _raises), "pdf"),
    (lambda: plotting.plot_ecdfs({"a": [1.0]}, {"L": _raises}), "cdfs"),
    (lambda: plotting.plot_neighbouring_densities([("t", _raises, laplace_pdf)], y=0.5), "panels"),
    (lambda: plotting.plot_attack_comparison([("laplace", 2, 1.0, 1.0, 1.0)], true_ratio={"laplace": _raises}),
     "true_ratio"),
    (lambda: plotting.plot_sanity_check([]), "results"),
    (lambda: plotting.plot_sanity_check({"unknown": {1.0: {2: 0.5}}}), "results"),
])
def test_figures_refuse_data_with_nothing_to_draw(call, word):
    with pytest.raises(ValueError, match=word):
        call()


# ---------------------------------------------------------------------------------------------
# DP-Sniper's exact probabilities: answers far from the threshold, or both large
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "threshold"), [([1e6, -1e6], 0.0), ([-1e6, -1e6], 1e6), ([1e6] * 12, 1e6)])
def test_svt_pattern_probabilities_sum_to_one_far_from_the_threshold(data, threshold):
    from dptutor.dpsniper import svt_pattern_probabilities

    probabilities = svt_pattern_probabilities(data, epsilon=50.0, algorithm=1, threshold=threshold)
    assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-9)


def test_audit_pair_names_the_input_whatever_valueerror_subclass_the_mechanism_raises():
    # the error was rebuilt as type(exc)(message): JSONDecodeError needs two more arguments, so a TypeError about its
    # constructor replaced the mechanism's own message
    from dptutor.audit import audit_pair

    def broken(data, size, rng):
        raise json.JSONDecodeError("bad document", "doc", 0)

    with pytest.raises(ValueError, match="^x: mechanism 'broken' failed on x .*bad document"):
        audit_pair(broken, 0.0, 1.0, epsilon=1.0, trials=1000, rng=1)


@pytest.mark.parametrize("statistic", [lambda o: np.where(o > 0.5, 5e-324, -5e-324),
                                       lambda o: np.where(o > 0.5, 1.7e308, -1.7e308)])
def test_audit_pair_bins_statistics_whose_range_is_subnormal_or_beyond_the_floats(statistic):
    # bins / (hi - lo) overflowed for a subnormal range (a NaN cell index, cast with a warning, then bincount failed);
    # hi - lo overflowed for a range near the float maximum. Both are two-valued statistics of a threshold event.
    from dptutor.audit import audit_pair

    def laplace(data, size, rng):
        return rng.laplace(data, 1.0, size=size)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = audit_pair(laplace, 0.0, 1.0, epsilon=1.0, trials=20_000, rng=3, statistic=statistic)
        plain = audit_pair(laplace, 0.0, 1.0, epsilon=1.0, trials=20_000, rng=3, statistic=lambda o: (o > 0.5) * 1.0)
    assert result.lower_bound == plain.lower_bound > 0
