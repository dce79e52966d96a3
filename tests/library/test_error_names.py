"""Every error a public function raises for bad input names the right parameter, on one line, on every call.

Each test failed on the code before the fix: ``granular_laplace_mechanism`` blamed ``x`` for an epsilon too
large for its granularity; messages of ``dptutor._validate`` that formatted a user's integer failed past
Python's 4300-digit limit (or on an object whose ``__repr__`` raises, or spread over several lines); and
``audit_pair`` named a mechanism's exception on its first call only.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
from fractions import Fraction

import numpy as np
import pytest

from dptutor import mechanisms
from dptutor._validate import (
    as_generator,
    check_count,
    check_float_array,
    check_int,
    check_integer_value,
    check_path,
    check_seed,
    check_size,
    check_tallies,
    shown,
)
from dptutor.audit.pair import audit_pair

pytestmark = pytest.mark.filterwarnings("error")

HUGE = 10**5000  # past Python's 4300-digit limit for int -> str


class _Unprintable:
    """An object whose ``repr`` and ``str`` raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


def _message(excinfo: pytest.ExceptionInfo) -> str:
    text = str(excinfo.value)
    assert "\n" not in text, text
    return text


# ---------------------------------------------------------------------------------------------
# defect 1: granular_laplace_mechanism with an extreme epsilon
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1e308, 1e20, np.float64(1e10), 2**63])
def test_granular_laplace_blames_epsilon_too_large_for_its_granularity(epsilon):
    x = np.full((4, 3), 0.5)
    with pytest.raises(ValueError) as excinfo:
        mechanisms.granular_laplace_mechanism(x, epsilon, np.random.default_rng(0))
    assert _message(excinfo).startswith("epsilon = ") and "bits" in str(excinfo.value)


def test_granular_laplace_still_blames_a_huge_x_and_works_at_a_large_epsilon():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="^x is too large"):
        mechanisms.granular_laplace_mechanism(np.full((2, 2), 1e300), 1.0, rng)
    out = mechanisms.granular_laplace_mechanism(np.full((2, 2), 0.5), 1e6, rng)
    assert np.isfinite(out).all() and np.allclose(out, 0.5, atol=1e-3)
    # with x = 0 the granularity does not matter: even epsilon = 1e308 succeeds
    assert np.isfinite(mechanisms.granular_laplace_mechanism(np.zeros((2, 2)), 1e308, rng)).all()
    with pytest.raises(ValueError, match="^epsilon = "):  # fewer bits: a coarser r, yet still too fine
        mechanisms.granular_laplace_mechanism(np.ones((2, 2)), 1e300, rng, bits=0)


# ---------------------------------------------------------------------------------------------
# defect 2: messages of dptutor._validate that print a user's value
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: check_int(HUGE, "k", maximum=10), "^k must be <= 10, got an int too long to print$"),
        (lambda: check_int(-HUGE, "k", minimum=0), "^k must be >= 0, got an int too long to print$"),
        (lambda: check_seed(-HUGE), "^seed must be non-negative"),
        (lambda: check_seed([1, -HUGE], "rng"), "^rng must hold only non-negative integers"),
        (lambda: as_generator(-HUGE), "^rng must be a non-negative int seed"),
        (lambda: check_size((HUGE, 2)), "^size asks for an int too long to print elements"),
        (lambda: check_count(HUGE, "correct", at_most=3, bound_name="guesses"), "^correct must be at most guesses"),
        (lambda: check_integer_value(Fraction(15 * HUGE + 1, 2 * HUGE), 0, 3), "^data must be an integer in"),
        (lambda: check_tallies({(HUGE,): 5}, "prior"), r"^prior\[a tuple too long to print\] must be a pair"),
        (lambda: check_tallies({1: (1, -HUGE)}, "prior"), r"^prior\[1\] must be >= 0"),
    ],
)
def test_validate_messages_survive_integers_too_long_to_print(call, pattern):
    with pytest.raises((TypeError, ValueError), match=pattern) as excinfo:
        call()
    _message(excinfo)


def test_validate_messages_survive_unprintable_values_and_stay_on_one_line():
    assert shown(_Unprintable()) == "a _Unprintable that cannot be printed"
    assert shown(HUGE) == "an int too long to print"

    class BadPath(os.PathLike):
        def __fspath__(self) -> str:
            return ""

        __repr__ = _Unprintable.__repr__

    with pytest.raises(ValueError, match="^path must be a non-empty path") as excinfo:
        check_path(BadPath())
    _message(excinfo)
    with pytest.raises(TypeError, match="^size must be a non-negative int") as excinfo:
        check_size(np.zeros((3, 3)))  # a numpy array's repr spans lines
    _message(excinfo)

    class Refuses:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("first line\nsecond line")

    with pytest.raises(TypeError, match="^values must be array-like") as excinfo:
        check_float_array(Refuses(), "values")
    _message(excinfo)


# ---------------------------------------------------------------------------------------------
# defect 3: audit_pair names the mechanism's exception on every call
# ---------------------------------------------------------------------------------------------


class _Stop(BaseException):
    """Not an Exception (as the graders' ``_ReplayTooLong``): must pass through unchanged."""


def _failing_after(error: BaseException, calls_before: int):
    calls = {"n": 0}

    def broken(data, size, rng):
        calls["n"] += 1
        if calls["n"] > calls_before:
            raise error
        return data + rng.laplace(0.0, 1.0, size)

    return broken


@pytest.mark.parametrize(
    ("calls_before", "label"), [(0, "x"), (1, "x"), (2, "x_prime"), (3, "x"), (6, "x_prime")]
)
def test_audit_pair_names_the_mechanism_whatever_call_fails(calls_before, label):
    # 300,000 trials: blocks of 2**17 runs, so calls 4 to 7 are the later blocks of both halves
    for error, kind in ((ZeroDivisionError("boom"), ValueError), (KeyError("k"), ValueError),
                        (TypeError("two\nlines"), TypeError)):
        with pytest.raises(kind, match=f"mechanism 'broken' failed on {label} ") as excinfo:
            audit_pair(_failing_after(error, calls_before), 0.0, 1.0, epsilon=1.0, trials=300_000, rng=0)
        assert excinfo.value.__cause__ is error
        assert excinfo.type is kind and _message(excinfo)
    for stop in (_Stop(), KeyboardInterrupt()):
        with pytest.raises(type(stop)) as raised:
            audit_pair(_failing_after(stop, calls_before), 0.0, 1.0, epsilon=1.0, trials=300_000, rng=0)
        assert raised.value is stop


def test_audit_pair_names_the_mechanism_on_an_executor_and_the_statistic_on_every_call():
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(ValueError, match=r"^mechanism 'broken' failed on .*ZeroDivisionError: boom$"):
            audit_pair(_failing_after(ZeroDivisionError("boom"), 3), 0.0, 1.0, epsilon=1.0, trials=300_000, rng=0,
                       executor=pool)
    calls = {"n": 0}

    def statistic(out):
        calls["n"] += 1
        if calls["n"] > 1:
            raise ZeroDivisionError("stat")
        return out.astype(np.float64)

    def mech(data, size, rng):
        return data + rng.laplace(0.0, 1.0, size)

    with pytest.raises(ValueError, match=r"^statistic 'statistic' failed .*ZeroDivisionError: stat$"):
        audit_pair(mech, 0.0, 1.0, epsilon=1.0, trials=1000, rng=0, statistic=statistic)


# ---------------------------------------------------------------------------------------------
# fuzz: every mechanism, parameter by parameter
# ---------------------------------------------------------------------------------------------

_EXTREMES = [0, -0.0, 5e-324, 1e-300, 1e308, math.inf, -math.inf, math.nan, HUGE, -HUGE, 2**63, True,
             np.float64(1e308), np.int64(2**62), np.float32(1e-45), "a", None, [1.0], _Unprintable(), -1.0]

_MECHANISM_NAMES = ["laplace_mechanism", "adept_mechanism", "dptext_mechanism", "wrong_sensitivity_mechanism",
                    "copy_input_mechanism", "random_output_mechanism", "numpy_laplace_mechanism", "snapping_mechanism",
                    "granular_laplace_mechanism"]


def _named_or_fine(fn, kwargs: dict, name: str) -> None:
    try:
        out = fn(**kwargs)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        assert name in text and "\n" not in text, f"{fn.__name__}({name}=...): {text}"
        return
    assert np.isfinite(np.asarray(out, dtype=np.float64)).all(), f"{fn.__name__}({name}=...) returned {out!r}"


def test_fuzz_mechanisms_name_the_bad_parameter():
    rng = np.random.default_rng(2024)
    for fname in _MECHANISM_NAMES:
        fn = getattr(mechanisms, fname)
        base = {"x": np.full((3, 2), 0.5), "epsilon": 1.0, "rng": rng}
        base.update({"snapping_mechanism": {"bound": None}, "granular_laplace_mechanism": {"bits": 40}}.get(fname, {}))
        for name in base:
            for value in _EXTREMES:
                if name == "x" and isinstance(value, float):
                    value = np.full((2, 2), value)
                _named_or_fine(fn, {**base, name: value}, name)
        for epsilon in (1e308, 1e20, 1e10, 1e-300):
            _named_or_fine(fn, {**base, "epsilon": epsilon}, "epsilon")
    for name, value in (("b", 1e308), ("b", HUGE), ("x", np.full((2, 2), 1e308)), ("rng", _Unprintable())):
        _named_or_fine(mechanisms.add_laplace_noise, {"x": np.zeros((2, 2)), "b": 1.0, "rng": rng, name: value}, name)


def test_fuzz_audit_pair_names_the_bad_parameter():
    def mech(data, size, rng):
        return data + rng.laplace(0.0, 1.0, size)

    base = {"mechanism": mech, "x": 0.0, "x_prime": 1.0, "epsilon": 1.0, "trials": 200, "rng": 0,
            "confidence_level": 0.95, "delta": 0.0, "workers": 1, "selection": 0.5, "bounds": "four"}
    extremes = _EXTREMES + [{(HUGE,): (1, 1)}, {1: _Unprintable()}]
    for name in ("epsilon", "trials", "rng", "confidence_level", "delta", "workers", "selection", "bounds", "prior",
                 "statistic", "executor"):
        for value in extremes:
            if name in ("prior", "statistic", "executor") and value is None:
                continue
            try:
                result = audit_pair(**{**base, name: value})
            except (TypeError, ValueError) as exc:
                text = str(exc)
                assert name in text and "\n" not in text, f"audit_pair({name}=...): {text}"
            else:
                assert math.isfinite(result.lower_bound)
