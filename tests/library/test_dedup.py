"""Regression tests for four duplications removed without changing behaviour.

1. The UTF-8 text test, once written in four places (``GridRow``, ``atomic_write_text``,
   ``read_rows_csv`` and ``run_grid``'s mechanism names), is :func:`dptutor._safe_files.is_utf8_text`;
   each place still refuses what it refused.
2. ``run_grid`` names its own list arguments (``epsilons[2]``), not the mechanism's ``epsilon``.
3. report-noisy-max and the sparse vector technique compare in noise units through one helper; their
   draws are those of the formulas they had before.
4. ``ReplayTooLong`` is one class, shared by the ``audit`` and ``bughunt`` graders.
"""

from __future__ import annotations

import numpy as np
import pytest

import dptutor.assignments
from dptutor import grid_files, selection
from dptutor._safe_files import is_utf8_text
from dptutor.assignments import audit as audit_assignment
from dptutor.assignments import bughunt
from dptutor.assignments.replay import ReplayTooLong, check_deadline
from dptutor.experiments import run_grid

pytestmark = pytest.mark.filterwarnings("error")

_ROW = dict(mechanism="mine", epsilon=1.0, n=1, trials=0, loss=0.0, exact_loss=0.0)  # not built in: any loss
#: Text no UTF-8 file can hold (a lone surrogate: a literal, or an undecodable byte under surrogateescape).
_NOT_UTF8 = ["a\ud800", "\udfff", "x\udcff y", b"ok \xff".decode("utf-8", "surrogateescape")]
#: Text that is fine, the replacement character and other non-ASCII text included.
_UTF8 = ["", "my_mechanism", "x\ufffd", "caf\u00e9", "\U0001f600", "a\nb", "q,\"r\""]


def _old_test(s: str) -> bool:
    """The test as the four places wrote it (True: refused)."""
    return s.encode("utf-8", "replace").decode("utf-8") != s


# ---------------------------------------------------------------------------------------------
# 1. one UTF-8 test
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", _NOT_UTF8 + _UTF8)
def test_is_utf8_text_is_the_test_the_four_places_wrote(text):
    assert is_utf8_text(text) is (not _old_test(text))


@pytest.mark.parametrize("text", _NOT_UTF8)
def test_the_four_places_still_refuse_text_that_is_not_utf8(tmp_path, text):
    assert not is_utf8_text(text)
    with pytest.raises(ValueError, match="mechanism must be UTF-8 text"):  # GridRow
        grid_files.GridRow(**{**_ROW, "mechanism": text})
    with pytest.raises(ValueError, match="finished_at must be UTF-8 text"):
        grid_files.GridRow(**_ROW, finished_at=text)
    with pytest.raises(ValueError, match="text must be UTF-8 text"):  # atomic_write_text
        grid_files.atomic_write_text(tmp_path / "x.txt", text)
    assert not (tmp_path / "x.txt").exists()
    with pytest.raises(ValueError, match="mechanisms: the name .* must be UTF-8 text"):  # run_grid's names
        run_grid({text: lambda x, e, r: x.copy()}, [1.0], [1], trials=10)
    # read_rows_csv: a row holding bytes that are not UTF-8 (they read back as lone surrogates) is skipped
    good = grid_files.rows_to_csv_text([grid_files.GridRow(**_ROW)])
    bad_line = good.splitlines()[1].replace("mine", "zz", 1)
    path = tmp_path / "results.csv"
    path.write_bytes((good + bad_line + "\n").encode("utf-8").replace(b"zz", text.encode("utf-8", "surrogatepass")))
    messages: list[str] = []
    assert grid_files.read_rows_csv(path, on_invalid=messages.append) == [grid_files.GridRow(**_ROW)]
    assert len(messages) == 1 and "not UTF-8 text" in messages[0]


@pytest.mark.parametrize("text", [t for t in _UTF8 if t and "\n" not in t and "," not in t])
def test_the_four_places_still_accept_utf8_text(tmp_path, text):
    assert is_utf8_text(text)
    row = grid_files.GridRow(**{**_ROW, "mechanism": text})
    grid_files.atomic_write_text(tmp_path / "x.txt", text)
    assert (tmp_path / "x.txt").read_text(encoding="utf-8") == text
    grid_files.write_results([row], tmp_path)
    assert grid_files.read_rows_csv(tmp_path / "results.csv") == [row]
    rows = run_grid({text: lambda x, e, r: x.copy()}, [1.0], [1], trials=10)
    assert [r.mechanism for r in rows] == [text]


def test_the_split_modules_keep_their_names_importable():
    from dptutor.grid_files import (CSV_COLUMNS, RESULTS_CSV, RESULTS_JSON, GridRow, atomic_target,  # noqa: F401
                                    atomic_write_text, epsilon_key, output_folder, read_rows_csv, rows_to_csv_text,
                                    rows_to_nested, sort_rows, write_results)
    from dptutor.selection import MAX_CANDIDATES, MAX_EXACT_SCORE  # noqa: F401

    for name in selection.__all__ + ["MAX_CANDIDATES", "MAX_EXACT_SCORE"]:
        assert hasattr(selection, name), name
    for name in grid_files.__all__:
        assert hasattr(grid_files, name), name


# ---------------------------------------------------------------------------------------------
# 2. run_grid names its own arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tiny", [5e-324, 1e-310])
def test_run_grid_names_epsilons_for_a_subnormal_epsilon(tmp_path, tiny):
    # Before: "mechanism 'laplace' raised ValueError (...): epsilon = 5e-324 is too small", from the mechanism.
    with pytest.raises(ValueError, match=r"^epsilons\[2\] = .* is too small") as info:
        run_grid(["laplace"], [1.0, 0.5, tiny], [1, 2], trials=10, out=tmp_path / "grid")
    assert "mechanism" not in str(info.value)
    assert not (tmp_path / "grid").exists()  # refused before anything ran or was written


def test_run_grid_names_epsilons_where_n_over_epsilon_overflows():
    # 1e-308 is a normal float, but 8 / 1e-308 overflows: the Laplace mechanism's noise scale at n = 8.
    with pytest.raises(ValueError, match=r"^epsilons\[0\] .*n = 8"):
        run_grid(["laplace"], [1e-308], [1, 8], trials=10)


def test_run_grid_exact_accepts_a_tiny_epsilon_as_before():
    rows = run_grid(["laplace"], [1.0, 5e-324], [1], exact=True)
    assert [r.epsilon for r in rows] == [1.0, 5e-324] and rows[1].loss == 0.0


@pytest.mark.parametrize("kwargs, exc, pattern", [
    (dict(epsilons=[1.0, -1.0]), ValueError, r"^epsilons\[1\] "),
    (dict(epsilons=[1.0, "x"]), TypeError, r"^epsilons\[1\] "),
    (dict(epsilons=[1.0, float("nan")]), ValueError, r"^epsilons\[1\] "),
    (dict(dims=[1, 0]), ValueError, r"^dims\[1\] "),
    (dict(dims=[1, 2.0]), TypeError, r"^dims\[1\] "),
    (dict(dims=[1, 10**9]), ValueError, r"^dims\[1\] "),
    (dict(mechanisms=["laplace", "gauss"]), ValueError, r"^mechanisms\[1\]: unknown mechanism"),
    (dict(mechanisms=["laplace", 3]), TypeError, r"^mechanisms\[1\] "),
    (dict(epsilons=[1.0, 1.0]), ValueError, r"^epsilons must not contain duplicates"),
    (dict(dims=[2, 2]), ValueError, r"^dims must not contain duplicates"),
])
def test_run_grid_names_the_item_of_each_list_argument(kwargs, exc, pattern):
    args = {"mechanisms": ["laplace"], "epsilons": [1.0], "dims": [1], **kwargs}
    with pytest.raises(exc, match=pattern):
        run_grid(args["mechanisms"], args["epsilons"], args["dims"], trials=10)


# ---------------------------------------------------------------------------------------------
# 3. one noise-units rewrite
# ---------------------------------------------------------------------------------------------


def _old_report_noisy_max(q, scale, noise, rng, size):
    shape = (size, q.size)
    z = rng.laplace(0.0, 1.0, shape) if noise == "laplace" else rng.standard_exponential(shape)
    return np.argmax(q / scale + z if scale >= 1.0 else q + scale * z, axis=-1)


def _old_sparse_vector(q, t, b_rho, b_nu, c, rng, size):
    unit = max(b_nu, 1.0)
    rho = rng.laplace(0.0, b_rho / unit, (size, 1))
    nu = rng.laplace(0.0, b_nu / unit, (size, q.size))
    above = (q / unit + nu) >= (t / unit + rho)
    before = np.cumsum(above, axis=1) - above
    out = above.astype(np.int8)
    out[before >= c] = -1
    return out


@pytest.mark.parametrize("epsilon", [1e-300, 0.01, 1.0, 2.0, 4.0, 50.0])
@pytest.mark.parametrize("answers", [[0.0, 1.0, 2.0, 2.0], [1e308, -1e308, 0.0], [3e-320, 0.0, -5e-324]])
def test_the_samplers_draw_as_before(epsilon, answers):
    q = np.array(answers)
    for noise in ("laplace", "exponential"):
        new = selection.report_noisy_max(q, epsilon, np.random.default_rng(7), noise=noise, size=300)
        old = _old_report_noisy_max(q, 2.0 / epsilon, noise, np.random.default_rng(7), 300)
        np.testing.assert_array_equal(new, old)
    for c in (1, 2):
        new = selection.sparse_vector(q, 1.0, epsilon, np.random.default_rng(3), c=c, size=300)
        old = _old_sparse_vector(q, 1.0, 2.0 / epsilon, 4.0 * c / epsilon, c, np.random.default_rng(3), 300)
        np.testing.assert_array_equal(new, old)


# ---------------------------------------------------------------------------------------------
# 4. one ReplayTooLong
# ---------------------------------------------------------------------------------------------


def test_the_graders_share_one_replay_too_long():
    assert audit_assignment.ReplayTooLong is ReplayTooLong
    assert bughunt.ReplayTooLong is ReplayTooLong
    assert issubclass(ReplayTooLong, BaseException) and not issubclass(ReplayTooLong, Exception)
    assert "ReplayTooLong" not in dptutor.assignments.__all__


def test_check_deadline():
    check_deadline(float("inf"))
    with pytest.raises(ReplayTooLong):
        check_deadline(-1.0)
