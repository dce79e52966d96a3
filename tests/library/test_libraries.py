"""The OpenDP and diffprivlib wrappers: the mechanism contract and what the grid lemma says about each."""

from __future__ import annotations

import numpy as np
import pytest

from dptutor.floating import off_grid
from dptutor.libraries import (
    diffprivlib_laplace_mechanism,
    diffprivlib_version,
    opendp_integer_laplace,
    opendp_laplace_mechanism,
    opendp_version,
)


def test_versions_are_the_pinned_ones():
    assert opendp_version() == "0.16.0"
    assert diffprivlib_version() == "0.6.6"


@pytest.mark.parametrize("mechanism", [opendp_laplace_mechanism, diffprivlib_laplace_mechanism])
def test_contract(mechanism):
    x = np.zeros((50, 2))
    x.setflags(write=False)
    out = mechanism(x, 1.0, np.random.default_rng(0))
    assert out.shape == (50, 2) and out.dtype == np.float64 and np.isfinite(out).all()
    # scale n / epsilon = 2: the mean absolute noise of 100 draws is 2 within 6 standard errors (sd = 2)
    assert abs(np.abs(out).mean() - 2.0) < 6 * 2.0 / np.sqrt(out.size)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism(x, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="x"):
        mechanism(np.full((2, 2), np.nan), 1.0, np.random.default_rng(0))


def test_diffprivlib_is_seeded_from_rng():
    x = np.zeros((20, 1))
    a = diffprivlib_laplace_mechanism(x, 1.0, np.random.default_rng(3))
    b = diffprivlib_laplace_mechanism(x, 1.0, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_grid_lemma_applies_to_diffprivlib_not_to_opendp():
    """diffprivlib adds in double arithmetic: its outputs of 1 are all on the 2^-53 grid, and some of
    its outputs of 0 are off it (certified impossible under 1).  OpenDP rounds an exact sum once: its
    outputs of 1 leave the grid too, so the lemma's premise fails there."""
    rng = np.random.default_rng(4)
    ones, zeros = np.ones((2_000, 1)), np.zeros((2_000, 1))
    assert not off_grid(diffprivlib_laplace_mechanism(ones, 1.0, rng), 1.0).any()
    assert off_grid(diffprivlib_laplace_mechanism(zeros, 1.0, rng), 1.0).any()
    assert off_grid(opendp_laplace_mechanism(ones, 1.0, rng), 1.0).any()


def test_opendp_integer_laplace():
    z = opendp_integer_laplace(10.0, 2_000)
    assert z.dtype == np.int64 and z.shape == (2_000,)
    with pytest.raises(ValueError, match="scale"):
        opendp_integer_laplace(0.0, 3)
    with pytest.raises(TypeError, match="size"):
        opendp_integer_laplace(1.0, 2.0)
