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


def test_check_str_and_path() -> None:
    assert v.check_str("a", "title") == "a"
    with pytest.raises(TypeError, match="^title"):
        v.check_str(b"a", "title")
    assert str(v.check_path("out/x", "out")) == "out/x"
    for bad, exc in ((1, TypeError), (b"x", TypeError), ("", ValueError), (None, TypeError)):
        with pytest.raises(exc, match="^out"):
            v.check_path(bad, "out")


def test_check_interval() -> None:
    assert v.check_interval((0, 1), "limits") == (0.0, 1.0)
    for bad, exc in (((1, 0), ValueError), ((0, math.nan), ValueError), ("ab", TypeError),
                     (np.array(1.0), ValueError), ((0, 1, 2), ValueError)):
        with pytest.raises(exc, match="^limits"):
            v.check_interval(bad, "limits")
    with pytest.raises(ValueError, match="^epsilon_range"):
        v.check_interval((0, 1), "epsilon_range", low=0.0, low_open=True)


def test_check_broadcast_names_every_array() -> None:
    assert v.check_broadcast({"x": np.zeros(3), "mu": np.zeros(())}) == (3,)
    with pytest.raises(ValueError, match="x, mu"):
        v.check_broadcast({"x": np.zeros(2), "mu": np.zeros(3)})
    with pytest.raises(ValueError, match="size"):
        v.check_broadcast({"b": np.zeros(3)}, (2,))


def test_check_mapping_and_sequence() -> None:
    assert v.check_sequence((1, 2), "dims") == [1, 2]
    for bad, exc in (("ab", TypeError), ({"a": 1}, TypeError), ((i for i in range(2)), TypeError), ([], ValueError)):
        with pytest.raises(exc, match="^dims"):
            v.check_sequence(bad, "dims")
    with pytest.raises(ValueError, match="^samples"):
        v.check_mapping({}, "samples")
    with pytest.raises(TypeError, match="^samples"):
        v.check_mapping([1], "samples")


def test_check_batch_and_immutable_finite_arrays() -> None:
    x = np.zeros((2, 3))
    assert v.check_batch(x) is x
    for bad, exc in ((np.zeros(3), ValueError), ([[0.0]], TypeError), (np.zeros((1, 1), dtype=complex), TypeError),
                     (np.array([[0.0, math.nan]]), ValueError), (np.array([[1e308, 1e308]]), None)):
        if exc is None:
            assert v.check_batch(bad) is bad  # a finite sum overflowing is not an error
            continue
        with pytest.raises(exc, match="^x"):
            v.check_batch(bad)
    frozen = v.immutable_finite_array(np.ones((2, 3)))
    for view in (frozen, frozen[:1], frozen.base):
        with pytest.raises(ValueError):
            view.setflags(write=True)
    assert v.check_batch(frozen[:1]) is not None
    with pytest.raises(ValueError, match="^values"):
        v.immutable_finite_array([math.inf])


def test_check_float_array_low() -> None:
    with pytest.raises(ValueError, match="^losses"):
        v.check_float_array([1.0, -0.5], "losses", low=0.0)
    assert v.check_float_array([0.0, math.inf], "losses", low=0.0).tolist() == [0.0, math.inf]


# (modC) scipy's rng and the zoo's mechanism arguments


def test_as_generator_takes_an_int_a_seed_sequence_or_a_generator() -> None:
    gen = np.random.default_rng(7)
    assert v.as_generator(gen) is gen  # used, not copied
    expected = np.random.default_rng(7).random(5)
    for form in (7, np.int64(7), np.array(7), np.random.SeedSequence(7)):
        assert np.array_equal(v.as_generator(form).random(5), expected)
    for bad, exc in ((-1, ValueError), (True, TypeError), (1.5, TypeError), (None, TypeError), ("7", TypeError),
                     (np.random.RandomState(7), TypeError), ([7], TypeError)):
        with pytest.raises(exc, match="^rng"):
            v.as_generator(bad)


def test_mechanism_arguments() -> None:
    size, rng, eps = v.check_mechanism_call(np.int64(3), 5, 0.5)
    assert (size, eps) == (3, 0.5) and isinstance(rng, np.random.Generator)
    for bad_size in (-1, v.MAX_MECHANISM_SIZE + 1):
        with pytest.raises(ValueError, match="^size"):
            v.check_mechanism_call(bad_size, 5, 0.5)
    with pytest.raises(ValueError, match="^epsilon"):
        v.check_mechanism_call(3, 5, v.MIN_MECHANISM_EPSILON / 2)
    with pytest.raises(ValueError, match="^epsilon"):
        v.check_mechanism_epsilon(60.0, high=50.0)
    assert v.check_answer_vector([1, 2]).dtype == np.float64
    for bad in ([], [[1.0]], [math.inf]):
        with pytest.raises(ValueError, match="^data"):
            v.check_answer_vector(bad)
    assert v.check_output_rows([[1.0, -math.inf]]).shape == (1, 2)
    with pytest.raises(ValueError, match="^outputs"):
        v.check_output_rows([1.0])
    assert v.check_integer_value(2.0, 0, 5) == 2
    for bad in (2.5, 6, -1):
        with pytest.raises(ValueError, match=r"^x must be an integer in \[0, 5\]"):
            v.check_integer_value(bad, 0, 5, "x")


def test_renamed_parameters() -> None:
    @v.renamed_parameters(seed="rng")
    def f(*, rng=None):
        return rng

    assert f(rng=3) == 3
    with pytest.warns(DeprecationWarning, match=r"f\(\): seed= is deprecated .* use rng="):
        assert f(seed=3) == 3
    with pytest.raises(TypeError, match="rng= and its deprecated alias seed="):
        f(rng=3, seed=3)


def test_recordable_seed() -> None:
    fresh = v.recordable_seed(None)  # fresh entropy, recorded so that the run repeats
    assert isinstance(fresh, int) and fresh != v.recordable_seed(None)
    assert v.recordable_seed(5) == 5 and v.recordable_seed([1, 2]) == (1, 2)
    assert v.recordable_seed(np.random.SeedSequence(5)) == 5
    child = np.random.SeedSequence(5).spawn(1)[0]
    assert v.recordable_seed(child) == tuple(int(w) for w in child.generate_state(4))
    gen = np.random.default_rng(5)
    words = v.recordable_seed(gen)
    assert words == tuple(int(w) for w in np.random.default_rng(5).integers(0, 2**32, size=4, dtype=np.uint64))
    for bad, exc in ((-1, ValueError), (1.5, TypeError), (np.random.RandomState(0), TypeError), ([], ValueError)):
        with pytest.raises(exc, match="^rng"):
            v.recordable_seed(bad)
