"""dptutor._validate: every helper names the parameter and returns a canonical value."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dptutor import _validate as v


@pytest.mark.parametrize("bad, exc", [(True, TypeError), ("1", TypeError), (None, TypeError),
                                      (np.array([1.0, 2.0]), TypeError), (math.nan, ValueError),
                                      (math.inf, ValueError), (0.0, ValueError), (-1, ValueError)])
def test_check_positive_names_the_parameter(bad, exc) -> None:
    with pytest.raises(exc, match="^epsilon"):
        v.check_positive(bad, "epsilon")


def test_check_real_accepts_numpy_scalars_and_0d_arrays() -> None:
    assert v.check_real(np.float32(0.5), "x") == 0.5
    assert v.check_real(np.array(3), "x") == 3.0
    assert v.check_positive(math.inf, "epsilon", allow_inf=True) == math.inf


def test_check_probability_bounds() -> None:
    assert v.check_probability(0.95, "confidence") == 0.95
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="^confidence"):
            v.check_probability(bad, "confidence")
    assert v.check_probability(0, "delta", closed=True) == 0.0


def test_check_int() -> None:
    assert v.check_int(np.int64(5), "n", minimum=1) == 5
    for bad, exc in ((5.0, TypeError), (True, TypeError), (0, ValueError), (np.uint64(2**63), ValueError)):
        with pytest.raises(exc, match="^n"):
            v.check_int(bad, "n", minimum=1, maximum=2**62)


def test_check_choice_refuses_arrays_and_unknown_strings() -> None:
    with pytest.raises(TypeError, match="^method"):
        v.check_choice(np.array(["a"]), "method", ("a", "b"))
    with pytest.raises(ValueError, match="^method"):
        v.check_choice("c", "method", ("a", "b"))


def test_check_seed() -> None:
    assert v.check_seed(None) is None
    assert v.check_seed([1, 2]) == (1, 2)
    for bad, exc in ((1.0, TypeError), (-1, ValueError), ([], ValueError), ([1, -2], ValueError),
                     (math.inf, TypeError), (np.random.SeedSequence(1), TypeError)):
        with pytest.raises(exc, match="^seed"):
            v.check_seed(bad)


def test_check_size_limits_memory() -> None:
    assert v.check_size(3) == (3,)
    assert v.check_size((2, 0)) == (2, 0)
    with pytest.raises(ValueError, match="^size"):
        v.check_size(10**9)
    with pytest.raises(TypeError, match="^size"):
        v.check_size([2, 3])


def test_check_float_array() -> None:
    out = v.check_float_array([1, 2], "x", ndim=1)
    assert out.dtype == np.float64
    for bad, exc in (([1, math.nan], ValueError), (["a"], TypeError), ([[1]], ValueError), (True, TypeError)):
        with pytest.raises(exc, match="^x"):
            v.check_float_array(bad, "x", ndim=1)
    with pytest.raises(ValueError, match="^x"):
        v.check_float_array([1, math.inf], "x", finite=True)


def test_check_workers_is_bounded() -> None:
    assert v.check_workers(10**2, tasks=3) <= 3
    with pytest.raises(ValueError, match="^workers"):
        v.check_workers(10**9)
