"""Hostile mechanisms and statistics against ``audit_pair``: reused output buffers, ndarray subclasses,
mechanisms that write into their input, and outputs that are not arrays at all."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dptutor.audit import _pair_cells
from dptutor.audit.pair import audit_pair

X, X_PRIME = np.array([0.0]), np.array([1.0])


def _laplace(shift: float):
    def copying(x, size, rng):
        return shift * float(np.sum(x)) + rng.laplace(size=size)

    buffer = np.empty(1 << 18)

    def viewing(x, size, rng):  # every call overwrites the outputs of the one before
        buffer[:size] = shift * float(np.sum(x)) + rng.laplace(size=size)
        return buffer[:size]

    return copying, viewing


def _audit(mechanism, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return audit_pair(mechanism, X, X_PRIME, epsilon=1.0, **kwargs)


def test_mechanism_returning_views_of_one_buffer_audits_as_a_copying_one():
    copying, viewing = _laplace(3.0)
    expected = _audit(copying, trials=20_000, rng=3)
    got = _audit(viewing, trials=20_000, rng=3)
    assert expected.lower_bound > 2.0
    assert got.lower_bound == expected.lower_bound
    assert np.array_equal(got.counts, expected.counts)


def test_statistic_returning_views_of_one_buffer_audits_as_a_copying_one():
    copying, _ = _laplace(2.0)
    buffer = np.empty(1 << 18)

    def stat_view(outputs):
        view = buffer[:outputs.shape[0]]
        view[:] = outputs
        return view

    expected = _audit(copying, trials=1000, rng=2, statistic=lambda o: np.array(o))
    got = _audit(copying, trials=1000, rng=2, statistic=stat_view)
    assert expected.lower_bound > 1.0
    assert got.lower_bound == expected.lower_bound


def test_discrete_mechanism_returning_views_of_one_buffer():
    def copying(x, size, rng):
        return (rng.random(size) < (0.8 if float(np.sum(x)) else 0.2)).astype(np.int64)

    buffer = np.empty(1 << 18, dtype=np.int64)

    def viewing(x, size, rng):
        buffer[:size] = copying(x, size, rng)
        return buffer[:size]

    expected = _audit(copying, trials=2000, rng=5)
    got = _audit(viewing, trials=2000, rng=5)
    assert expected.lower_bound > 0.5
    assert got.lower_bound == expected.lower_bound
    assert got.tallies == expected.tallies


def test_learned_statistic_with_views_over_several_calls(monkeypatch):
    # Small calls, so that the fitting sample of each dataset takes several calls into the one buffer.
    monkeypatch.setattr(_pair_cells, "PAIR_CALL_ELEMENTS", 1 << 10)
    buffer = np.empty((1 << 12, 2))

    def copying(x, size, rng):
        return 1.5 * float(np.sum(x)) + rng.laplace(size=(size, 2))

    def viewing(x, size, rng):
        buffer[:size] = copying(x, size, rng)
        return buffer[:size]

    expected = _audit(copying, trials=4000, rng=7)
    got = _audit(viewing, trials=4000, rng=7)
    assert expected.lower_bound > 0.5
    assert got.lower_bound == expected.lower_bound


def test_masked_outputs_are_refused_and_unmasked_ones_audited_as_plain_arrays():
    copying, _ = _laplace(2.0)

    def masked(x, size, rng):
        return np.ma.masked_array(copying(x, size, rng), mask=np.arange(size) % 7 == 0)

    with pytest.raises(ValueError, match="mechanism 'masked' returned a masked array with masked"):
        _audit(masked, trials=1000, rng=2)

    def unmasked(x, size, rng):
        return np.ma.masked_array(copying(x, size, rng), mask=np.zeros(size, dtype=bool))

    assert _audit(unmasked, trials=1000, rng=2).lower_bound == _audit(copying, trials=1000, rng=2).lower_bound


def test_masked_statistic_values_are_refused():
    copying, _ = _laplace(2.0)

    def masked_stat(outputs):
        return np.ma.masked_array(outputs, mask=np.arange(outputs.shape[0]) % 5 == 0)

    with pytest.raises(ValueError, match="statistic 'masked_stat' returned a masked array"):
        _audit(copying, trials=1000, rng=2, statistic=masked_stat)


def test_matrix_outputs_are_audited_as_plain_arrays():
    copying, _ = _laplace(2.0)

    def matrix(values):
        with warnings.catch_warnings():  # numpy's own advice against np.matrix, not the auditor's
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            return np.matrix(values)

    def column(x, size, rng):
        return matrix(copying(x, size, rng)).T

    def row(x, size, rng):
        return matrix(copying(x, size, rng))

    assert _audit(column, trials=1000, rng=2).lower_bound == _audit(copying, trials=1000, rng=2).lower_bound
    with pytest.raises(ValueError, match=r"mechanism 'row' returned 1 outputs \(shape \(1, 64\)\) when asked for size=64"):
        _audit(row, trials=1000, rng=2)


@pytest.mark.parametrize("reach_base", [False, True])
def test_mechanism_cannot_make_its_input_writeable(reach_base):
    copying, _ = _laplace(2.0)

    def mutating(x, size, rng):
        if reach_base and x.base is not None:
            x.base.setflags(write=True)
        x.setflags(write=True)
        x[0] += 1.0
        return copying(x, size, rng)

    x, x_prime = np.array([0.0]), np.array([1.0])
    with pytest.raises(ValueError, match="mechanism 'mutating' failed on x .*WRITEABLE"):
        audit_pair(mutating, x, x_prime, epsilon=1.0, trials=1000, rng=2)
    assert x[0] == 0.0 and x_prime[0] == 1.0


def test_datasets_reach_the_mechanism_with_their_values_shape_and_dtype():
    seen = []
    x = np.arange(6, dtype=np.int32).reshape(2, 3)

    def recording(data, size, rng):
        seen.append(data)
        return float(np.sum(data)) + rng.laplace(size=size)

    audit_pair(recording, x, x + 1, epsilon=1.0, trials=100, rng=1)
    assert all(not d.flags.writeable and d.dtype == np.int32 and d.shape == (2, 3) for d in seen)
    assert np.array_equal(seen[0], x)
    objects = np.array([1.0, None], dtype=object)
    assert audit_pair(lambda d, s, r: r.laplace(size=s), objects, objects, epsilon=1.0, trials=100, rng=1).lower_bound == 0.0


@pytest.mark.parametrize(
    ("returned", "kind"),
    [(lambda s: (v for v in range(s)), "generator"), (lambda s: None, "NoneType"), (lambda s: {}, "dict"),
     (lambda s: "outputs", "str")],
)
def test_non_array_outputs_are_named(returned, kind):
    def mech(x, size, rng):
        return returned(size)

    with pytest.raises(ValueError, match=f"mechanism 'mech' returned {kind}, not an array of outputs"):
        audit_pair(mech, X, X_PRIME, epsilon=1.0, trials=1000, rng=2)


def test_scalar_outputs_still_named_as_scalars():
    with pytest.raises(ValueError, match="returned a scalar when asked for size=64"):
        audit_pair(lambda x, s, r: 1.0, X, X_PRIME, epsilon=1.0, trials=1000, rng=2)
