"""Amplification by Poisson subsampling (dptutor.amplification): the closed forms against a brute-force
computation in exact rational arithmetic on randomized response run on a Poisson subsample, and bad input.

The brute force enumerates every subsample of a small dataset, with its probability under Poisson
sampling, and computes the output laws of the subsampled mechanism on a pair of add/remove neighbours.
Randomized response on the parity of the subsample's size is epsilon-DP for add/remove neighbours (one
record more flips the parity), and on the pair (empty dataset, one record) it attains the bound exactly.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from dptutor.amplification import subsampled_delta, subsampled_dp, subsampled_epsilon


def _rr_parity_law(size: int, base: Fraction, leak: Fraction) -> dict[object, Fraction]:
    """Output law of the mechanism on a subsample of ``size`` records.

    With probability ``leak`` it publishes the parity itself (output ("leak", parity)); otherwise it runs
    randomized response on the parity, reporting the truth with probability base / (1 + base).  It is
    (ln base, leak)-DP for add/remove neighbours, exactly.
    """
    bit = size % 2
    truth = base / (1 + base)
    law: dict[object, Fraction] = {("rr", bit): (1 - leak) * truth, ("rr", 1 - bit): (1 - leak) * (1 - truth)}
    if leak:
        law[("leak", bit)] = leak
    return law


def _subsampled_law(n: int, theta: Fraction, base: Fraction, leak: Fraction) -> dict[object, Fraction]:
    """The law of the mechanism on a Poisson subsample of n records, by enumerating all 2^n subsamples."""
    law: dict[object, Fraction] = {}
    for kept in itertools.product((0, 1), repeat=n):
        size = sum(kept)
        weight = theta**size * (1 - theta) ** (n - size)
        for y, p in _rr_parity_law(size, base, leak).items():
            law[y] = law.get(y, Fraction(0)) + weight * p
    return law


def _hockey(p: dict[object, Fraction], q: dict[object, Fraction], factor: Fraction) -> Fraction:
    """max over events E of p(E) - factor q(E): the smallest delta at e^epsilon = factor."""
    return sum((max(Fraction(0), p[y] - factor * q.get(y, Fraction(0))) for y in p), Fraction(0))


def _brute_force(n: int, theta: Fraction, base: Fraction, leak: Fraction = Fraction(0)):
    """(largest ratio, delta at the amplified factor) over both orders of the pair (n records, n + 1)."""
    small, large = _subsampled_law(n, theta, base, leak), _subsampled_law(n + 1, theta, base, leak)
    factor = 1 + theta * (base - 1)  # e^{epsilon'} of the theorem, exactly
    ratios = [p[y] / q[y] for p, q in ((small, large), (large, small)) for y in p if q.get(y)]
    delta = max(_hockey(small, large, factor), _hockey(large, small, factor))
    return max(ratios), delta, factor


@pytest.mark.parametrize("theta", [Fraction(1, 100), Fraction(1, 7), Fraction(1, 2), Fraction(9, 10)])
@pytest.mark.parametrize("base", [Fraction(2), Fraction(3), Fraction(11, 4)])
def test_pure_bound_attained_on_empty_pair(theta, base):
    """On (empty dataset, one record) the subsampled randomized response's largest ratio is exactly
    1 + theta (e^epsilon - 1), the theorem's e^{epsilon'}: the bound is tight."""
    ratio, delta, factor = _brute_force(0, theta, base)
    assert ratio == factor
    assert delta == 0
    assert subsampled_epsilon(math.log(base), float(theta)) == pytest.approx(math.log(factor), rel=1e-13)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_pure_bound_holds_on_larger_datasets(n):
    """On larger pairs the exact ratio never exceeds the bound (and the exact delta there is 0)."""
    rnd = random.Random(n)
    for _ in range(5):
        theta = Fraction(rnd.randint(1, 99), 100)
        base = Fraction(rnd.randint(11, 60), 10)
        ratio, delta, factor = _brute_force(n, theta, base)
        assert ratio <= factor
        assert delta == 0


@pytest.mark.parametrize("theta", [Fraction(1, 50), Fraction(1, 3), Fraction(4, 5)])
@pytest.mark.parametrize("leak", [Fraction(1, 1000), Fraction(1, 20)])
def test_approximate_bound_exact_on_empty_pair(theta, leak):
    """A mechanism with exact delta = leak at epsilon, subsampled: its exact delta at epsilon' is theta * leak."""
    base = Fraction(3)
    _, delta, _ = _brute_force(0, theta, base, leak)
    assert delta == theta * leak
    eps, dlt = subsampled_dp(math.log(base), float(leak), float(theta))
    assert dlt == pytest.approx(float(theta * leak), rel=1e-15)
    assert eps == pytest.approx(math.log(1 + theta * (base - 1)), rel=1e-13)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_approximate_bound_holds_on_larger_datasets(n):
    rnd = random.Random(100 + n)
    for _ in range(4):
        theta = Fraction(rnd.randint(1, 99), 100)
        leak = Fraction(rnd.randint(1, 50), 1000)
        _, delta, _ = _brute_force(n, theta, Fraction(2), leak)
        assert delta <= theta * leak


def test_unsubsampled_mechanism_is_not_amplified():
    """Randomized response itself (theta = 1) has its own epsilon: the formula returns it unchanged."""
    ratio, _, factor = _brute_force(0, Fraction(1), Fraction(5))
    assert ratio == factor == 5
    assert subsampled_epsilon(math.log(5), 1.0) == math.log(5)


def test_limits_and_monotonicity():
    assert subsampled_epsilon(3.0, 0.0) == 0.0
    assert subsampled_epsilon(0.0, 0.5) == 0.0
    assert subsampled_delta(0.5, 0.0) == 0.0
    eps = np.linspace(0.0, 20.0, 81)
    for theta in (1e-6, 0.01, 0.3, 0.99):
        values = [subsampled_epsilon(float(e), theta) for e in eps]
        assert all(a <= b for a, b in zip(values, values[1:]))
        assert all(v <= e for v, e in zip(values, eps))
    # small epsilon: about theta (e^epsilon - 1); large epsilon: about epsilon + ln(theta)
    assert subsampled_epsilon(1e-9, 0.01) == pytest.approx(0.01 * math.expm1(1e-9), rel=1e-12)
    assert subsampled_epsilon(50.0, 0.01) == pytest.approx(50.0 + math.log(0.01), rel=1e-12)


def test_large_epsilon_branch_is_continuous():
    """Across the switch to the overflow-free form the value is continuous and never infinite."""
    for theta in (1e-3, 0.5):
        below = subsampled_epsilon(699.999999, theta)
        above = subsampled_epsilon(700.000001, theta)
        assert above > below
        assert above - below == pytest.approx(2e-6, rel=1e-3)
        assert math.isfinite(subsampled_epsilon(1e300, theta))


@pytest.mark.parametrize("func, args, name", [
    (subsampled_epsilon, (-0.1, 0.5), "epsilon"),
    (subsampled_epsilon, (math.inf, 0.5), "epsilon"),
    (subsampled_epsilon, (math.nan, 0.5), "epsilon"),
    (subsampled_epsilon, (1.0, -0.01), "sampling_rate"),
    (subsampled_epsilon, (1.0, 1.5), "sampling_rate"),
    (subsampled_epsilon, (1.0, math.nan), "sampling_rate"),
    (subsampled_delta, (-1e-9, 0.5), "delta"),
    (subsampled_delta, (1.01, 0.5), "delta"),
    (subsampled_delta, (1e-5, 2.0), "sampling_rate"),
    (subsampled_dp, (1.0, 2.0, 0.5), "delta"),
    (subsampled_dp, (-1.0, 1e-5, 0.5), "epsilon"),
    (subsampled_dp, (1.0, 1e-5, -0.5), "sampling_rate"),
])
def test_bad_values_raise_value_error_naming_parameter(func, args, name):
    with pytest.raises(ValueError, match=name):
        func(*args)


@pytest.mark.parametrize("bad", [True, "0.5", None, [0.5], np.array([0.5, 0.1]), 1 + 2j, object()])
def test_bad_types_raise_type_error_naming_parameter(bad):
    with pytest.raises(TypeError, match="sampling_rate"):
        subsampled_epsilon(1.0, bad)
    with pytest.raises(TypeError, match="epsilon"):
        subsampled_epsilon(bad, 0.5)
    with pytest.raises(TypeError, match="delta"):
        subsampled_delta(bad, 0.5)


def test_fuzz_random_inputs():
    """Random values of every kind: a result in range, or ValueError/TypeError naming a parameter."""
    rnd = random.Random(2018)
    pool = [0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, math.inf, -math.inf, math.nan, 2, Fraction(1, 3),
            np.float32(0.25), np.int64(1), np.array(0.3), True, "x", None]
    for _ in range(500):
        eps, dlt, theta = (rnd.choice(pool) for _ in range(3))
        try:
            out_eps, out_dlt = subsampled_dp(eps, dlt, theta)
        except (ValueError, TypeError) as exc:
            assert any(name in str(exc) for name in ("epsilon", "delta", "sampling_rate"))
        else:
            assert 0.0 <= out_eps <= float(eps)
            assert 0.0 <= out_dlt <= float(dlt)
            assert not math.isnan(out_eps)


def test_docstring_examples():
    import doctest

    import dptutor.amplification

    result = doctest.testmod(dptutor.amplification)
    assert result.attempted >= 5 and result.failed == 0
