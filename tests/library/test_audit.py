"""Tests for dptutor.audit: the paper's Section 4 sanity check, its bounds and closed forms."""

from __future__ import annotations

import math
import pickle

import mpmath
import numpy as np
import pytest
from scipy import stats

from dptutor.audit import _sanity_runs
from dptutor.audit import (
    BLOCK_TRIALS,
    AuditResult,
    estimate_loss,
    exact_guess_probabilities,
    exact_loss,
    loss_from_counts,
)
from dptutor.mechanisms import MECHANISMS

NAMES = list(MECHANISMS)


# ---------------------------------------------------------------------------------------------
# exact_loss against 50-digit arithmetic
# ---------------------------------------------------------------------------------------------


def _mp_loss(name: str, n: int, epsilon: float) -> mpmath.mpf:
    """Reference: exact binomial sums at 50 significant digits (mpmath), independent of scipy.

    Per-coordinate probabilities of rounding to 1 (Section 4 attack, threshold 0.5), derived from
    the Laplace tail P(Lap(0, b) >= t) = exp(-t/b)/2, t >= 0.
    """
    with mpmath.workdps(50):
        eps = mpmath.mpf(epsilon)
        half = mpmath.mpf(1) / 2
        one = mpmath.mpf(1)
        # (p, 1 - p) pairs; complements written out so that 1 - tiny is never formed.
        if name in ("laplace", "adept"):
            b = n / eps if name == "laplace" else 1 / eps
            tail = mpmath.exp(-half / b) / 2
            pq0, pq1 = (tail, 1 - tail), (1 - tail, tail)
        elif name == "dptext":
            tail = mpmath.exp(-half * eps / n) / 2
            pq0, pq1 = (tail, 1 - tail), (one, mpmath.mpf(0))
        elif name == "wrong_sensitivity":
            tail = mpmath.exp(-eps / n) / 2
            pq0, pq1 = (tail, 1 - tail), (half, half)
        elif name == "copy_input":
            pq0, pq1 = (mpmath.mpf(0), one), (one, mpmath.mpf(0))
        else:
            pq0 = pq1 = (half, half)

        def guess_probs(pq):
            p, q = pq
            terms = [mpmath.binomial(n, k) * p**k * q ** (n - k) for k in range(n + 1)]
            return mpmath.fsum(terms[: n // 2 + 1]), mpmath.fsum(terms[n // 2 + 1 :])

        rows = [guess_probs(pq0), guess_probs(pq1)]
        loss = mpmath.mpf(0)
        for y in (0, 1):
            a, c = rows[0][y], rows[1][y]
            if a == 0 and c == 0:
                continue
            if a == 0 or c == 0:
                return mpmath.inf
            loss = max(loss, abs(mpmath.log(a) - mpmath.log(c)))
        return loss


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 2, 3, 8, 31, 128])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0, 50.0])
def test_exact_loss_matches_50_digit_reference(name, n, epsilon):
    ours = exact_loss(name, n, epsilon)
    ref = _mp_loss(name, n, epsilon)
    if ref == mpmath.inf:
        assert ours == math.inf
    elif ref == 0:
        assert ours == 0.0
    else:
        assert math.isclose(ours, float(ref), rel_tol=1e-9, abs_tol=0.0), (ours, float(ref))


def test_exact_loss_known_values():
    # ADePT at n=128, epsilon=10: finite although every feasible Monte Carlo run sees infinity.
    v = exact_loss("adept", 128, 10.0)
    assert math.isfinite(v) and 280 < v < 290
    # wrong_sensitivity at n = 1: ln(p_1 / p_0) = ln(e^eps) = eps exactly (the boundary case).
    for eps in (0.1, 1.0, 7.0):
        assert math.isclose(exact_loss("wrong_sensitivity", 1, eps), eps, rel_tol=1e-12)
    assert exact_loss("dptext", 64, 0.1) == math.inf
    assert exact_loss("copy_input", 1, 1.0) == math.inf
    assert exact_loss("random_output", 8, 1.0) == 0.0
    # Far tails stay finite in log space (p_0 = e^-500 / 2 underflows nothing here).
    big = exact_loss("adept", 1, 1000.0)
    assert math.isclose(big, float(_mp_loss("adept", 1, 1000.0)), rel_tol=1e-9)


def test_exact_guess_probabilities_are_log_probabilities():
    for name in NAMES:
        lp = exact_guess_probabilities(name, 5, 1.0)
        np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, rtol=1e-12)


def test_exact_loss_bad_input():
    with pytest.raises(ValueError, match="name"):
        exact_loss("gauss", 2, 1.0)
    with pytest.raises(ValueError, match="n"):
        exact_loss("laplace", 0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        exact_loss("laplace", 2, -1.0)


# ---------------------------------------------------------------------------------------------
# Monte Carlo against the closed form
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, n, epsilon",
    [
        ("laplace", 1, 1.0),
        ("laplace", 2, 0.5),
        ("laplace", 8, 2.0),
        ("laplace", 128, 1.0),
        ("adept", 1, 0.2),
        ("adept", 2, 0.1),
        ("adept", 8, 1.0),
        ("adept", 32, 0.5),
        ("wrong_sensitivity", 2, 1.0),
    ],
)
def test_monte_carlo_interval_contains_exact_loss(name, n, epsilon):
    """The simultaneous 99.9% interval of the Monte Carlo run contains the closed form.

    The interval holds with probability >= 0.999 (union bound over four one-sided exact
    intervals), so each case fails by chance with probability <= 1e-3 (seeded: deterministic).
    """
    trials = 200_000 if n <= 8 else 40_000
    res = estimate_loss(MECHANISMS[name], n, epsilon, trials, rng=n * 1000 + int(epsilon * 10))
    lower, upper = res.confidence_interval(0.999)
    truth = exact_loss(name, n, epsilon)
    assert lower <= truth <= upper, (res.counts.tolist(), lower, truth, upper)
    assert lower <= res.loss <= upper


@pytest.mark.parametrize("name", ["dptext", "copy_input"])
def test_infinite_loss_mechanisms(name):
    res = estimate_loss(MECHANISMS[name], 8, 1.0, 20_000, rng=11)
    assert res.loss == math.inf
    assert res.counts[1, 0] == 0  # from D' = ones the guess is always 1
    assert res.is_violation(0.95)
    assert res.confidence_interval()[1] == math.inf


def test_random_output_has_nothing_to_report():
    res = estimate_loss(MECHANISMS["random_output"], 8, 0.1, 50_000, rng=5)
    assert res.lower_bound(0.95) <= 0.0
    assert not res.is_violation(0.95)
    assert math.isfinite(res.loss)


def test_adept_violation_detected_and_laplace_not():
    adept = estimate_loss(MECHANISMS["adept"], 32, 0.5, 20_000, rng=2)
    assert adept.is_violation()  # exact loss ~2.47 > 0.5
    laplace = estimate_loss(MECHANISMS["laplace"], 32, 0.5, 20_000, rng=2)
    assert not laplace.is_violation()


# ---------------------------------------------------------------------------------------------
# soundness of the lower bound on a boundary case
# ---------------------------------------------------------------------------------------------


def test_lower_bound_is_sound_on_the_boundary():
    """wrong_sensitivity at n = 1 has true loss exactly epsilon (see exact_loss).  A valid 95%
    lower bound exceeds it in at most 5% of independent runs, so the number of exceedances among
    S seeds is stochastically below Binomial(S, 0.05); we accept up to its 0.999 quantile (a valid
    bound fails this test with probability <= 1e-3).  The same check applied to the plug-in
    estimate, which exceeds the truth about half the time, must fail: the test has power."""
    eps, seeds, trials = 1.0, 400, 20_000
    limit = stats.binom.ppf(0.999, seeds, 0.05)
    bound_over = plug_in_over = 0
    for s in range(seeds):
        res = estimate_loss(MECHANISMS["wrong_sensitivity"], 1, eps, trials, rng=s)
        bound_over += res.lower_bound(0.95) > eps
        plug_in_over += res.loss > eps
    assert bound_over <= limit, (bound_over, limit)
    assert plug_in_over > limit, (plug_in_over, limit)


# ---------------------------------------------------------------------------------------------
# reproducibility, chunking, the attack itself
# ---------------------------------------------------------------------------------------------


def test_counts_identical_for_one_and_two_workers():
    trials = 2 * BLOCK_TRIALS + 12_345  # three blocks, the last one partial
    one = estimate_loss(MECHANISMS["laplace"], 3, 1.0, trials, rng=99, workers=1)
    two = estimate_loss(MECHANISMS["laplace"], 3, 1.0, trials, rng=99, workers=2)
    np.testing.assert_array_equal(one.counts, two.counts)
    assert one.loss == two.loss
    other = estimate_loss(MECHANISMS["laplace"], 3, 1.0, trials, rng=100)
    assert not np.array_equal(one.counts, other.counts)


def test_seed_none_is_recorded_and_repeatable():
    a = estimate_loss(MECHANISMS["adept"], 2, 1.0, 5_000)
    assert isinstance(a.seed, int)
    b = estimate_loss(MECHANISMS["adept"], 2, 1.0, 5_000, rng=a.seed)
    np.testing.assert_array_equal(a.counts, b.counts)


def test_counts_shape_and_totals_with_partial_chunks():
    # n = 3: chunks of 2**16 // 3 rows; trials not a multiple of it.
    res = estimate_loss(MECHANISMS["laplace"], 3, 1.0, 50_001, rng=1)
    assert res.counts.shape == (2, 2)
    assert res.counts.dtype.kind == "i"
    assert (res.counts.sum(axis=1) == 50_001).all()
    with pytest.raises(ValueError):
        res.counts[0, 0] = 1  # read-only


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 40, 64, 72, 128, 130])
def test_majority_counter_matches_round_half_even_of_mean(n):
    """The fast row count equals the authors' attack: np.round(mean of rounded coordinates)."""
    rng = np.random.default_rng(n)
    rows = max(2, 3000 // n)
    above, count = _sanity_runs._majority_counter(rows, n)
    for m in (rows, rows // 2):
        above[:] = rng.random((rows, n)) < rng.random((rows, 1))
        above[: rows // 4] = np.arange(n) < n // 2  # exact ties for even n
        assert count(m) == int(np.round(above[:m].mean(axis=1)).sum())


def _tie(x, epsilon, rng):
    """Exactly n/2 coordinates at 0.5 (rounds to 1), the rest just below 0.5."""
    out = np.full(x.shape, np.nextafter(0.5, 0.0))
    out[:, : x.shape[1] // 2] = 0.5
    return out


def _one_more(x, epsilon, rng):
    out = np.zeros(x.shape)
    out[:, : x.shape[1] // 2 + 1] = 1.0
    return out


def test_attack_ties_are_guessed_zero_and_threshold_is_inclusive():
    res = estimate_loss(_tie, 4, 1.0, 1000, rng=0)
    np.testing.assert_array_equal(res.counts, [[1000, 0], [1000, 0]])
    res = estimate_loss(_one_more, 4, 1.0, 1000, rng=0)
    np.testing.assert_array_equal(res.counts, [[0, 1000], [0, 1000]])
    res = estimate_loss(_one_more, 5, 1.0, 1000, rng=0)  # 3 of 5 ones: majority
    np.testing.assert_array_equal(res.counts, [[0, 1000], [0, 1000]])
    assert res.loss == 0.0  # the guess 0 never occurred: skipped, not NaN


# ---------------------------------------------------------------------------------------------
# loss from counts, Clopper-Pearson construction
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "counts, expected",
    [
        ([[10, 0], [10, 0]], 0.0),
        ([[10, 0], [0, 10]], math.inf),
        ([[5, 5], [0, 10]], math.inf),
        ([[6, 4], [3, 7]], max(abs(math.log(6 / 3)), abs(math.log(4 / 7)))),
    ],
)
def test_loss_from_counts(counts, expected):
    assert loss_from_counts(counts) == pytest.approx(expected, rel=1e-15)


def test_lower_bound_matches_clopper_pearson_closed_forms():
    """Copy input with T trials: counts [[T, 0], [0, T]].  With a = (1 - conf)/4 the exact
    one-sided bounds are lo(P(0|D)) = a^(1/T) and hi(P(0|D')) = 1 - a^(1/T), so the lower bound is
    ln(a^(1/T)) - ln(1 - a^(1/T))."""
    t, conf = 1000, 0.95
    res = AuditResult.from_counts([[t, 0], [0, t]], n=1, epsilon=1.0)
    a = (1 - conf) / 4
    expected = math.log(a ** (1 / t)) - math.log(1 - a ** (1 / t))
    assert res.lower_bound(conf) == pytest.approx(expected, rel=1e-10)
    assert res.is_violation(conf)


def test_bounds_agree_with_scipy_binomtest_intervals():
    """Each one-sided bound at error a equals one end of scipy's exact two-sided interval at 1 - 2a."""
    counts = [[7000, 3000], [6000, 4000]]
    res = AuditResult.from_counts(counts, n=2, epsilon=0.1)
    conf = 0.9
    a = (1 - conf) / 4
    ci0 = stats.binomtest(3000, 10_000).proportion_ci(confidence_level=1 - 2 * a, method="exact")
    ci1 = stats.binomtest(4000, 10_000).proportion_ci(confidence_level=1 - 2 * a, method="exact")
    # p_0 < p_1 for sure here; the minimum of the loss over the box is at (hi_0, lo_1).
    expected_lower = max(math.log(ci1.low) - math.log(ci0.high), math.log(1 - ci0.high) - math.log(1 - ci1.low))
    expected_upper = max(math.log(ci1.high) - math.log(ci0.low), math.log(1 - ci0.low) - math.log(1 - ci1.high))
    lower, upper = res.confidence_interval(conf)
    assert lower == pytest.approx(expected_lower, rel=1e-9)
    assert upper == pytest.approx(expected_upper, rel=1e-9)
    assert res.lower_bound(0.99) < res.lower_bound(0.9) < res.loss < upper


def test_result_display_and_from_counts():
    res = estimate_loss(MECHANISMS["adept"], 2, 0.1, 1000, rng=1)
    text = str(res)
    assert "adept" in text and str(res.counts[0, 0]) in text and "n=2" in text
    assert "AuditResult" in repr(res)
    again = AuditResult.from_counts(res.counts, n=2, epsilon=0.1, seed=1, mechanism="adept")
    assert again.loss == res.loss and again.trials == 1000
    with pytest.raises(ValueError, match="counts"):
        AuditResult.from_counts([[1, 2], [3, 4]], n=1, epsilon=1.0)  # unequal totals
    with pytest.raises(ValueError, match="confidence"):
        res.lower_bound(1.0)


# ---------------------------------------------------------------------------------------------
# bad input, bad mechanisms
# ---------------------------------------------------------------------------------------------

LAP = MECHANISMS["laplace"]


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        (dict(n=0), ValueError, "n"),
        (dict(n=1.5), TypeError, "n"),
        (dict(trials=0), ValueError, "trials"),
        (dict(trials=10.0), TypeError, "trials"),
        (dict(trials=True), TypeError, "trials"),
        (dict(epsilon=0.0), ValueError, "epsilon"),
        (dict(epsilon=-1.0), ValueError, "epsilon"),
        (dict(epsilon=math.nan), ValueError, "epsilon"),
        (dict(epsilon=math.inf), ValueError, "epsilon"),
        (dict(epsilon="1"), TypeError, "epsilon"),
        (dict(mechanism="laplace"), TypeError, "mechanism"),
        (dict(workers=0), ValueError, "workers"),
        (dict(rng=-1), ValueError, "rng"),
        (dict(rng=1.5), TypeError, "rng"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, exc, word):
    args = dict(mechanism=LAP, n=2, epsilon=1.0, trials=10)
    args.update(kwargs)
    with pytest.raises(exc, match=word):
        estimate_loss(args.pop("mechanism"), args.pop("n"), args.pop("epsilon"), args.pop("trials"), **args)


def _wrong_shape(x, epsilon, rng):
    return x[:, :1].copy()


def _strings(x, epsilon, rng):
    return np.full(x.shape, "a")


def _nan(x, epsilon, rng):
    out = np.zeros(x.shape)
    out[-1, -1] = np.nan
    return out


def _nan_from_dptext_without_fix(x, epsilon, rng):
    from dptutor.distributions import sample_dptext

    return x + sample_dptext(x.shape, 0.0, x.shape[1] / epsilon, rng=rng, nan="keep")


@pytest.mark.parametrize(
    "mech, word",
    [(_wrong_shape, "shape"), (_strings, "non-numeric"), (_nan, "NaN"), (_nan_from_dptext_without_fix, "NaN")],
)
def test_bad_mechanism_output_is_reported(mech, word):
    with pytest.raises(ValueError, match=word) as info:
        estimate_loss(mech, 3, 1.0, 100, rng=0)
    assert mech.__name__ in str(info.value)


def test_unpicklable_mechanism_with_workers():
    local = lambda x, epsilon, rng: x.copy()  # noqa: E731
    with pytest.raises(TypeError, match="picklable"):
        estimate_loss(local, 1, 1.0, 3 * BLOCK_TRIALS, rng=0, workers=2)
    # ...but fine in-process.
    assert estimate_loss(local, 1, 1.0, 100, rng=0).loss == math.inf


def test_mechanism_errors_propagate_from_workers():
    with pytest.raises(ValueError, match="NaN"):
        estimate_loss(_nan, 1, 1.0, 2 * BLOCK_TRIALS, rng=0, workers=2)


def test_builtin_mechanisms_pickle_by_reference():
    for fn in MECHANISMS.values():
        assert pickle.loads(pickle.dumps(fn)) is fn


def test_estimate_loss_keeps_seed_and_confidence_as_deprecated_aliases():
    new = estimate_loss(LAP, 2, 1.0, 1000, rng=5)
    with pytest.warns(DeprecationWarning, match="use rng="):
        old = estimate_loss(LAP, 2, 1.0, 1000, seed=5)
    assert old.counts.tolist() == new.counts.tolist() and old.seed == new.seed == 5
    with pytest.warns(DeprecationWarning, match="use confidence_level="):
        assert new.lower_bound(confidence=0.9) == new.lower_bound(confidence_level=0.9) == new.lower_bound(0.9)
    with pytest.raises(TypeError, match="confidence_level=.*confidence="):
        new.confidence_interval(confidence=0.9, confidence_level=0.9)
    with pytest.raises(TypeError, match="rng=.*seed="):
        estimate_loss(LAP, 2, 1.0, 1000, seed=5, rng=5)
    by_generator = estimate_loss(LAP, 2, 1.0, 1000, rng=np.random.default_rng(1))
    assert estimate_loss(LAP, 2, 1.0, 1000, rng=by_generator.seed).counts.tolist() == by_generator.counts.tolist()
