"""Hostile inputs to the zoo, dpsniper, gaussian, symbolic and sanity functions (regressions of found defects)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dptutor.zoo import svt_log_likelihood_ratio

_X, _XP = np.arange(3.0), np.arange(3.0) + 1.0


@pytest.mark.parametrize("epsilon", [0.1, 10.0, 1e3])
def test_svt_llr_extreme_released_values_are_finite_without_warnings(epsilon):
    # one released value at the edge of the float range (a cap far below or above the integration grid)
    outputs = np.array([[-1.79e308, -np.inf, -np.inf], [-1e300, 1.0, np.inf], [1.79e308, 1.79e308, 1.79e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        llr = svt_log_likelihood_ratio(outputs, x=_X, x_prime=_XP, epsilon=epsilon, decimals=None)
    assert np.isfinite(llr).all()
    # the first row's ratio does not depend on how far below the grid its released value lies
    near = svt_log_likelihood_ratio(np.array([[-1e3, -np.inf, -np.inf]]), x=_X, x_prime=_XP, epsilon=epsilon,
                                    decimals=None)
    assert llr[0] == pytest.approx(near[0], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(("name", "kwargs"), [("epsilon", {"epsilon": 1e300}), ("epsilon", {"epsilon": 1.79e308}),
                                              ("threshold", {"epsilon": 0.1, "threshold": 1.79e308})])
def test_svt_llr_refuses_overflowing_parameters(name, kwargs):
    outputs = np.array([[34.0, -np.inf, 57.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=name):
            svt_log_likelihood_ratio(outputs, x=_X, x_prime=_XP, **kwargs)


@pytest.mark.parametrize("which", ["rnm", "svt"])
def test_exact_probabilities_refuse_huge_answer_vectors(which):
    # the quadrature's cost grows as the square of the answers: a million answers must be refused, not run for days
    from dptutor.dpsniper import rnm_index_probabilities, svt_pattern_probabilities

    data = np.zeros(1_000_000)
    with pytest.raises(ValueError, match="data"):
        if which == "rnm":
            rnm_index_probabilities(data, epsilon=0.1)
        else:
            svt_pattern_probabilities(data, epsilon=0.1, algorithm=1)
