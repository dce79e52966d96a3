"""Regression tests for two more duplications removed, and two helpers made public API.

1. ``dptutor.epsilon``'s private ``_up``/``_down`` (array versions of ``renyi.nudge_up``) are gone:
   ``renyi.nudge_up`` and ``renyi.nudge_down`` take arrays too, bit for bit what the copies gave, and
   still return a Python float for a scalar.  ``posterior_bound`` no longer warns where the copy's
   ``np.nextafter`` overflowed (the largest epsilon).
2. ``renyi.round_up``, ``nudge_up`` and ``nudge_down`` are in ``renyi.__all__``, with numpydoc docstrings
   whose examples run, and refuse bad input naming the parameter.
3. The grader's ``course.intake.read_regular`` is a thin wrapper over the library's
   ``_safe_files.read_regular_file`` (one implementation), each keeping its messages and exceptions; a
   folder no longer leaks a file descriptor in the library's reader.
"""

from __future__ import annotations

import doctest
import inspect
import math
import os
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dptutor.epsilon as epsilon_module
import dptutor.renyi as renyi
from dptutor import grid_files
from dptutor._safe_files import read_regular_file
from dptutor.course import intake
from dptutor.epsilon import laplace_interval, posterior_bound, tpr_bound
from dptutor.renyi import round_up

pytestmark = pytest.mark.filterwarnings("error")

_MAX = 1.7976931348623157e308
#: Values where moving by one double is special: zeros, subnormals, the normal range's ends, infinities.
_SPECIAL = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, -1e-310, 2.2250738585072014e-308, 1e-300, 0.1, 0.5, 1.0,
                     2.0, 1 - 2**-53, -3.5, 1e300, _MAX, -_MAX, math.inf, -math.inf])


def _old_up(x, steps=1):
    """``dptutor.epsilon._up`` as it was."""
    out = np.asarray(x, dtype=np.float64)
    for _ in range(steps):
        out = np.nextafter(out, np.inf)
    return out


def _old_down(x, steps=1):
    """``dptutor.epsilon._down`` as it was."""
    out = np.asarray(x, dtype=np.float64)
    for _ in range(steps):
        out = np.nextafter(out, -np.inf)
    return out


def _old_nudge_up(x, steps=2):
    """``renyi.nudge_up`` as it was (scalars only)."""
    for _ in range(steps):
        x = math.nextafter(x, math.inf)
    return x


def _values() -> np.ndarray:
    rng = np.random.default_rng(2026)
    scaled = rng.standard_normal(3000) * 10.0 ** rng.integers(-323, 308, 3000)
    return np.concatenate([_SPECIAL, scaled[np.isfinite(scaled)]])


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


# ---------------------------------------------------------------------------------------------
# 1. one nudge, arrays included
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("steps", [0, 1, 2, 4])
def test_nudges_of_arrays_are_bit_for_bit_the_old_copies(steps):
    values = _values()[:3018]
    with np.errstate(over="ignore"):  # the old copies overflowed the largest double to inf with a warning
        old_up, old_down = _old_up(values, steps), _old_down(values, steps)
    for shape in (values.shape, (values.size // 3, 3)):
        up, down = renyi.nudge_up(values.reshape(shape), steps), renyi.nudge_down(values.reshape(shape), steps)
        assert isinstance(up, np.ndarray) and up.dtype == np.float64 and up.shape == shape
        np.testing.assert_array_equal(_bits(up), _bits(old_up).reshape(shape))
        np.testing.assert_array_equal(_bits(down), _bits(old_down).reshape(shape))
    assert renyi.nudge_up([0.0, -0.0, _MAX], 1).tolist() == [5e-324, 5e-324, math.inf]
    assert renyi.nudge_down([0.0, -math.inf, math.inf], 1).tolist() == [-5e-324, -math.inf, _MAX]


@pytest.mark.parametrize("steps", [0, 1, 2, 3])
def test_nudges_of_scalars_are_python_floats_as_before(steps):
    for v in _values()[:400]:
        old = _old_nudge_up(float(v), steps)
        for x in (float(v), np.float64(v), np.array(v)):
            up, down = renyi.nudge_up(x, steps), renyi.nudge_down(x, steps)
            assert type(up) is float and type(down) is float
            with np.errstate(over="ignore"):
                old_down = _old_down(v, steps)
            assert _bits(up) == _bits(old) and _bits(down) == _bits(old_down)
    assert renyi.nudge_up(1) == _old_nudge_up(1) and type(renyi.nudge_up(1)) is float


def test_the_array_nudge_does_not_alias_its_input_and_never_warns():
    x = np.array([1.0, _MAX])
    with np.errstate(all="raise"):  # the largest double to inf, a subnormal to 0: what is asked for
        assert renyi.nudge_up(x, 1)[1] == math.inf and renyi.nudge_down(np.array([5e-324]), 1)[0] == 0.0
    out = renyi.nudge_up(x, 0)
    out[0] = 7.0
    assert x[0] == 1.0


def test_epsilon_has_no_private_nudge_and_uses_renyis():
    assert not hasattr(epsilon_module, "_up") and not hasattr(epsilon_module, "_down")
    assert epsilon_module.nudge_up is renyi.nudge_up and epsilon_module.nudge_down is renyi.nudge_down


#: ``(call, result)``: the bounds as the old module computed them (hex: bit for bit).
_EPSILON_GOLDEN = [
    (lambda: tpr_bound(0.1, 1.0), "0x1.165a208dd12bdp-2"),
    (lambda: tpr_bound(0.3, 0.5, 1e-5), "0x1.fa7f568c24cebp-2"),
    (lambda: posterior_bound(1.0), "0x1.764d4f5d5a2bfp-1"),
    (lambda: posterior_bound(2.0, 1e-310), "0x0.0880541d0e7b1p-1022"),
    (lambda: laplace_interval(1.0, 0.5), "0x1.7f7427b73e393p+2"),
    (lambda: laplace_interval(3.0, 1e-3, 0.999999), "0x1.43cd10378c96cp+15"),
]


def test_the_epsilon_bounds_are_unchanged_bit_for_bit():
    for call, expected in _EPSILON_GOLDEN:
        got = call()
        assert type(got) is float and got.hex() == float.fromhex(expected).hex(), (inspect.getsource(call), got.hex())
    eps = np.array([0.0, 1e-300, 0.1, 1.0, 30.0, 745.0, 1e300])
    arrays = (tpr_bound(0.2, eps, 1e-6), posterior_bound(eps[:-1], 1e-301), laplace_interval(2.0, eps[1:]))
    assert all(isinstance(a, np.ndarray) and a.shape == s for a, s in zip(arrays, [(7,), (6,), (6,)]))
    assert tpr_bound(0.2, eps, 1e-6)[0] == pytest.approx(0.2 + 1e-6) and posterior_bound(eps, 0.3)[0] == 0.3


def test_posterior_bound_at_a_huge_epsilon_does_not_warn():
    # the old _up moved eps + ln(odds) (the largest double) to inf through np.nextafter: an overflow warning;
    # at epsilon 1e300 the slack of 4 ulps (~5e284) overflowed exp: another one
    assert posterior_bound(_MAX, 1e-310) == 1.0
    assert posterior_bound(np.array([_MAX, 1.0]), 1e-310)[0] == 1.0
    assert posterior_bound(1e300, 1e-301) == 1.0 and posterior_bound(np.array([1e300, 1e5]), 1e-310).tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------------------------
# 2. public helpers
# ---------------------------------------------------------------------------------------------


def test_the_rounding_helpers_are_public_and_documented():
    for name in ("round_up", "nudge_up", "nudge_down"):
        assert name in renyi.__all__
        doc = getattr(renyi, name).__doc__
        for section in ("Parameters\n    ----------", "Returns\n    -------", "Examples\n    --------"):
            assert section in doc, (name, section)
        assert ":func:" not in doc and ":data:" not in doc and ":mod:" not in doc  # the nitpicky book build
        tests = doctest.DocTestFinder().find(getattr(renyi, name), name, globs=vars(renyi).copy())
        runner = doctest.DocTestRunner()
        for test in tests:
            runner.run(test)
        assert runner.summarize(verbose=False) == (0, sum(len(t.examples) for t in tests)) and tests[0].examples


def test_round_up_is_unchanged_for_rationals_and_refuses_bad_input_naming_exact():
    assert round_up(Fraction(1, 3)) == math.nextafter(1 / 3, 1) and round_up(Fraction(1, 4)) == 0.25
    assert round_up(Fraction(-1, 3)) == -1 / 3 and round_up(0) == 0.0 and round_up(7) == 7.0
    assert round_up(Fraction(1, 10**400)) == 5e-324 and round_up(Fraction(10**400)) == math.inf
    assert round_up(-Fraction(10**400)) == -_MAX
    assert round_up(0.1) == 0.1 and round_up(np.float32(0.5)) == 0.5 and round_up(np.int64(3)) == 3.0
    for bad in (None, "1", 1 + 2j, True, np.array([1.0]), [Fraction(1)]):
        with pytest.raises(TypeError, match="exact"):
            round_up(bad)
    for bad in (math.nan, math.inf, -math.inf, np.float64("nan")):
        with pytest.raises(ValueError, match="exact"):
            round_up(bad)


def test_the_nudges_refuse_bad_input_naming_the_parameter():
    for f in (renyi.nudge_up, renyi.nudge_down):
        for bad in (math.nan, np.array(math.nan), np.array([1.0, math.nan])):
            with pytest.raises(ValueError, match=r"\bx\b"):
                f(bad)
        for bad in (None, "a", True, 1 + 2j, np.array(["a"]), np.array([1 + 1j])):
            with pytest.raises(TypeError, match=r"\bx\b"):
                f(bad)
        for bad in (-1, 10**15):
            with pytest.raises(ValueError, match="steps"):
                f(1.0, bad)
        for bad in (1.5, None, True):
            with pytest.raises(TypeError, match="steps"):
                f(1.0, bad)


# ---------------------------------------------------------------------------------------------
# 3. one bounded reader
# ---------------------------------------------------------------------------------------------


def test_the_graders_reader_is_a_wrapper_of_the_librarys():
    source = inspect.getsource(intake)
    assert "os.open" not in source and "os.fstat" not in source and "read_regular_file(" in source


def test_the_librarys_reader_keeps_its_messages(tmp_path: Path):
    (tmp_path / "ten").write_bytes(b"0123456789")
    os.mkfifo(tmp_path / "fifo")
    assert read_regular_file(tmp_path / "ten", 10) == b"0123456789"
    for name in ("ten", "fifo"):
        with pytest.raises(ValueError, match=rf"^path {tmp_path / name} must be a regular file of at most 9 bytes$"):
            read_regular_file(tmp_path / name, 9)
    with pytest.raises(ValueError, match=r"^path .*missing cannot be read \(No such file or directory\)$"):
        read_regular_file(tmp_path / "missing", 9)


def test_the_graders_reader_keeps_its_messages_and_missing_file(tmp_path: Path):
    (tmp_path / "ten").write_bytes(b"0123456789")
    (tmp_path / "link").symlink_to(tmp_path / "ten")
    os.mkfifo(tmp_path / "fifo")
    assert intake.read_regular(tmp_path / "ten", 10) == b"0123456789"
    assert intake.read_regular(str(tmp_path / "link"), 10, follow_links=True) == b"0123456789"
    with pytest.raises(intake.MissingFile, match=r"^path: the answer does not exist \(.*missing\)$"):
        intake.read_regular(tmp_path / "missing", 10, what="the answer")
    cases = [("link", 10, "^it is a symbolic link, not a file$"), ("fifo", 10, "^it is not a regular file$"),
             ("ten", 9, "^it has 10 bytes, more than the limit of 9$")]
    for name, limit, message in cases:
        with pytest.raises(ValueError, match=message) as info:
            intake.read_regular(tmp_path / name, limit, what="it")
        assert type(info.value) is ValueError
    # the library's reader, given what the grader passes, says the same (a missing file: FileNotFoundError)
    with pytest.raises(ValueError, match="^it is not a regular file$"):
        read_regular_file(tmp_path / "fifo", 10, what="it", follow_links=False)
    with pytest.raises(FileNotFoundError, match=r"^path: it does not exist"):
        read_regular_file(tmp_path / "missing", 10, what="it")
    for kwargs, name in (({"what": ""}, "what"), ({"what": 3}, "what"), ({"follow_links": 1}, "follow_links")):
        with pytest.raises((TypeError, ValueError), match=name):
            intake.read_regular(tmp_path / "ten", 10, **kwargs)
        with pytest.raises((TypeError, ValueError), match=name):
            read_regular_file(tmp_path / "ten", 10, **kwargs)


def test_a_file_that_grows_while_read_is_refused_by_both(tmp_path: Path, monkeypatch):
    path = tmp_path / "grows"
    path.write_bytes(b"abc")
    real_fstat = os.fstat

    def stale_fstat(fd):  # the size seen before the file grew
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, 0, 0, 0, 0, 0, 2) + tuple(info)[7:])

    monkeypatch.setattr(os, "fstat", stale_fstat)
    with pytest.raises(ValueError, match=r"^path .*grows grew beyond 2 bytes while being read$"):
        read_regular_file(path, 2)
    with pytest.raises(ValueError, match="^it grew beyond the size limit of 2 bytes while being read$"):
        intake.read_regular(path, 2, what="it")
    assert read_regular_file(path, 3) == b"abc" and intake.read_regular(path, 3) == b"abc"


def test_reading_a_folder_leaks_no_file_descriptor(tmp_path: Path):
    # os.fdopen refused the folder after os.open had opened it, and nothing closed the descriptor
    folder = tmp_path / "results.csv"
    folder.mkdir()
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(20):
        with pytest.raises(ValueError, match="must be a regular file"):
            grid_files.read_rows_csv(folder)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="^it is not a regular file$"):
            intake.read_regular(folder, 10, what="it")


def test_round_down_is_the_largest_double_at_most_the_exact_value():
    # One rounding down, in renyi beside round_up, now serves pld (pessimistic/optimistic masses) and
    # approximate_dp.gaussian_tradeoff, which each had their own.
    import math
    from fractions import Fraction

    from dptutor.renyi import round_down

    for exact in (Fraction(1, 3), Fraction(2, 3), Fraction(-1, 3), Fraction(0), Fraction(10**400), -Fraction(10**400),
                  Fraction(1, 10**400), Fraction(5e-324) / 3, 0.1, 7):
        v = round_down(exact)
        assert Fraction(v) <= exact if math.isfinite(v) else v == -math.inf
        if math.isfinite(v) and v < 1.7976931348623157e308:
            assert Fraction(math.nextafter(v, math.inf)) > exact
    assert math.copysign(1.0, round_down(Fraction(0))) == 1.0
    assert round_down(-Fraction(10**400)) == -math.inf and round_down(Fraction(10**400)) == 1.7976931348623157e308
