"""Hostile input for the lab modules: buglab, text_privacy, grid_files, experiments and reference.

Each test pins a defect found by probing (the comment says what happened before the fix): a bare
OverflowError, MemoryError, UnicodeError or OSError, a hang, a silent inf, a warning, or a wrong answer
where a ValueError or TypeError naming the parameter belongs.
"""

from __future__ import annotations

import math
import os
import threading
from fractions import Fraction

import numpy as np
import pytest

from dptutor import buglab, grid_files, text_privacy
from dptutor.experiments import cell_seed, repeat_loss, run_grid
from dptutor.reference import paper_loss

pytestmark = pytest.mark.filterwarnings("error")

_ROW = dict(mechanism="zz", epsilon=1.0, n=1, trials=10, loss=0.0, counts=(5, 5, 5, 5))


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---------------------------------------------------------------------------------------------
# grid_files and the grid's resume
# ---------------------------------------------------------------------------------------------


def _outcome_unless_blocked_on(fifo, call):
    """``call()``'s result or exception, run in a thread; a call still blocked on ``fifo`` after 3 s fails the test."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # noqa: BLE001 (handed to the main thread)
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(3.0)
    if worker.is_alive():  # let the blocked reader go before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(3.0)
        pytest.fail("blocked on a FIFO")
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_read_rows_csv_and_run_grid_refuse_a_fifo_instead_of_blocking(tmp_path):
    # Before: path.read_bytes() waited forever for a writer on the FIFO, in read_rows_csv and in
    # run_grid's resume.
    fifo = tmp_path / "results.csv"
    os.mkfifo(fifo)
    outcome = _outcome_unless_blocked_on(fifo, lambda: grid_files.read_rows_csv(fifo))
    assert isinstance(outcome, ValueError) and "path" in str(outcome)
    outcome = _outcome_unless_blocked_on(fifo, lambda: run_grid(["laplace"], [1.0], [1], exact=True, out=tmp_path))
    assert isinstance(outcome, ValueError) and "out" in str(outcome)


def test_run_grid_refuses_a_folder_in_place_of_results_csv_naming_out(tmp_path):
    # Before: the message named "path", not run_grid's "out".
    (tmp_path / "results.csv").mkdir()
    with pytest.raises(ValueError, match="out"):
        run_grid(["laplace"], [1.0], [1], exact=True, out=tmp_path)


def test_read_rows_csv_refuses_a_huge_file_unread(tmp_path):
    # Before: the whole file was read into memory (then parsed, row by row), whatever its size.
    path = tmp_path / "results.csv"
    with open(path, "wb") as fh:
        fh.truncate(64 << 20)  # sparse: 64 MiB of nothing
    with pytest.raises(ValueError, match="path .* at most"):
        grid_files.read_rows_csv(path)


def test_read_rows_csv_refuses_duplicated_columns(tmp_path):
    # Before: the last "loss" column silently won (a wrong row).
    text = grid_files.rows_to_csv_text([grid_files.GridRow(**_ROW)])
    header, line = text.splitlines()
    path = tmp_path / "results.csv"
    path.write_text(f"{header},mechanism\n{line},other\n", encoding="utf-8")
    with pytest.raises(ValueError, match="duplicated column"):
        grid_files.read_rows_csv(path)
    messages: list[str] = []
    assert grid_files.read_rows_csv(path, on_invalid=messages.append) == [] and len(messages) == 1


def test_lone_surrogates_are_refused_naming_the_parameter(tmp_path):
    # Before: UnicodeEncodeError from the write (and from cell_seed's hash).
    with pytest.raises(ValueError, match="text"):
        grid_files.atomic_write_text(tmp_path / "x.txt", "a\ud800")
    with pytest.raises(ValueError, match="mechanism"):
        grid_files.GridRow(**{**_ROW, "mechanism": "zz\ud800"})
    with pytest.raises(ValueError, match="mechanisms"):
        run_grid({"a\ud800": lambda x, e, r: 0}, [1.0], [1], trials=10)
    assert os.listdir(tmp_path) == []
    assert isinstance(cell_seed(1, "a\ud800", 1.0, 1), int)


def test_a_carriage_return_in_a_name_is_refused_and_other_names_round_trip(tmp_path):
    # Before: "a\rb" was written unquoted and read back as a broken row (the cell lost on resume);
    # a name holding U+FFFD was written, then refused on reading as "not UTF-8 text".
    with pytest.raises(ValueError, match="mechanism"):
        grid_files.GridRow(**{**_ROW, "mechanism": "a\rb"})
    rows = [grid_files.GridRow(**{**_ROW, "mechanism": m}) for m in ("x\ufffd", "a\nb", "q,\"r\"")]
    grid_files.write_results(rows, tmp_path)
    assert grid_files.read_rows_csv(tmp_path / "results.csv") == rows


def test_atomic_write_text_turns_os_errors_into_value_errors(tmp_path):
    # Before: a bare OSError (File name too long) from path.is_dir().
    with pytest.raises(ValueError, match="path"):
        grid_files.atomic_write_text(tmp_path / ("a" * 300), "x")
    with pytest.raises(ValueError, match="out"):
        grid_files.write_results([], tmp_path / ("b" * 300))


def test_grid_row_huge_integers_are_refused_naming_the_field():
    # Before: seed=10**5000 was accepted and broke repr() and the CSV writer ("Exceeds the limit (4300
    # digits)"); counts of that size made the error message itself raise that unnamed error.
    with pytest.raises(ValueError, match="seed"):
        grid_files.GridRow(**_ROW, seed=10**5000)
    with pytest.raises(ValueError, match="counts"):
        grid_files.GridRow(**{**_ROW, "counts": (10**5000, 0, 0, 0)})


# ---------------------------------------------------------------------------------------------
# experiments and reference
# ---------------------------------------------------------------------------------------------


def test_huge_integers_are_refused_naming_the_parameter():
    # Before: ValueError "Exceeds the limit (4300 digits) for integer string conversion", naming nothing.
    with pytest.raises(ValueError, match="first_seed"):
        repeat_loss("laplace", 1, 1.0, 10, 1, first_seed=10**5000)
    with pytest.raises(ValueError, match=r"\bn\b"):
        cell_seed(1, "laplace", 1.0, 10**5000)
    with pytest.raises(ValueError, match=r"\bn\b"):
        paper_loss("laplace", 1.0, 10**5000)


# ---------------------------------------------------------------------------------------------
# buglab
# ---------------------------------------------------------------------------------------------


def test_advanced_composition_as_coded_near_float_limits():
    # Before: OverflowError for a huge k, and a silent inf for a huge epsilon or a subnormal delta_prime.
    for args in ((1.0, 10**400, 0.1), (1e308, 3, 0.1), (1e300, 10**300, 0.1)):
        with pytest.raises(ValueError, match="epsilon, k and delta_prime"):
            buglab.advanced_composition_as_coded(*args)
    expected = 2.0 * 1e300 * math.sqrt(2.0 * 10 * -math.log(5e-324))
    assert buglab.advanced_composition_as_coded(1e300, 10, 5e-324) == pytest.approx(expected)
    assert buglab.advanced_composition_as_coded(1.0, 3, 0.1) == 2.0 * math.sqrt(6.0 * math.log(10.0))


def test_buglab_mechanisms_refuse_outputs_beyond_the_float_range():
    # Before: sum_of_squares returned +-inf (noise scale 1e300 / 1e-10), gaussian_count warned
    # "overflow encountered in add" and returned inf.
    with pytest.raises(ValueError, match="bounds"):
        buglab.sum_of_squares([1e150] * 3, 3, _rng(), epsilon=1e-10, bounds=(-1e150, 1e150))
    with pytest.raises(ValueError, match="sigma"):
        buglab.gaussian_count(1.79e308, 5, _rng(), epsilon=1.0, sigma=1e307)


def test_histogram_default_epsilon_refuses_a_huge_output_cheaply():
    # Before: MemoryError (745 GiB for size 10**8 times 1000 bins).
    with pytest.raises(ValueError, match="size"):
        buglab.histogram_default_epsilon([0.5] * 1000, 10**8, _rng(), epsilon=1.0)


def test_analytic_sigma_sign_error_converges_where_brentq_needs_more_steps():
    # Before: scipy's RuntimeError "Failed to converge after 100 iterations".
    sigma = buglab.analytic_sigma_sign_error(1e-10, 1e-300, 1.0)
    assert math.isfinite(sigma) and sigma > 0


# ---------------------------------------------------------------------------------------------
# text_privacy
# ---------------------------------------------------------------------------------------------


def test_text_privacy_refuses_huge_arrays_cheaply():
    # Before: MemoryError (74.5 GiB) from both.
    with pytest.raises(ValueError, match="words"):
        text_privacy.generated_corpus(10**6, words=10**4)
    with pytest.raises(ValueError, match="vocabulary"):
        text_privacy.bag_of_words(["a"] * 100_000, [str(i) for i in range(100_000)])


def test_sensitivity_near_float_limits():
    # Before: OverflowError from math.sqrt(10**400), and a silent inf for bound=1e308.
    with pytest.raises(ValueError, match="dimension"):
        text_privacy.sensitivity("l2", "laplace", bound=1.0, dimension=10**400)
    with pytest.raises(ValueError, match="bound"):
        text_privacy.sensitivity("l1", "laplace", bound=1e308, dimension=1)
    assert text_privacy.sensitivity("l2", "laplace", bound=1.0, dimension=16) == 8.0


def test_a_release_refuses_unclipped_grid_vectors_that_wrap_around():
    # Before: all three were released: uint64 2**64 - 1 became -1, and the int64 norms wrapped to
    # small numbers, so vectors far outside the clip got the noise calibrated for the clip.
    l1 = text_privacy.calibrate("l1", "laplace", bound=1.0, steps=1, dimension=2, epsilon=1.0)
    l2 = text_privacy.calibrate("l2", "gaussian", bound=1.0, steps=1, dimension=1, epsilon=1.0, delta=1e-5)
    for release, k in ((l1, np.array([2**64 - 1, 0], dtype=np.uint64)), (l1, np.array([-(2**63), -(2**63)])),
                       (l2, np.array([2**32]))):
        with pytest.raises(ValueError, match="k must be clipped"):
            release(k, 2, _rng())
    assert l1(np.array([1, 0], dtype=np.uint8), 2, _rng()).shape == (2, 2)


def test_releases_refuse_bounds_whose_outputs_overflow():
    # Before: "overflow encountered in multiply" (inf outputs) for bound=1e308, DPText's unnamed
    # "b must be finite" and "b (the Laplace scale) must be > 0", and an OverflowError from TextRelease.epsilon.
    with pytest.raises(ValueError, match="bound"):
        text_privacy.calibrate("l1", "laplace", bound=1e308, steps=1, dimension=1, epsilon=1.0)
    for bound, claimed_epsilon in ((1e280, 1e-30), (1e-300, 1e308)):  # DPText's scale overflows, or underflows to 0
        with pytest.raises(ValueError, match="claimed_epsilon"):
            text_privacy.DPTextRelease(bound, 1, 1, claimed_epsilon)
    with pytest.raises(ValueError, match="claimed_sensitivity"):
        text_privacy.wrong_sensitivity_release(bound=1e280, steps=1, dimension=4, epsilon=1.0, claimed_sensitivity=1e-300)
    with pytest.raises(ValueError, match="scale"):
        text_privacy.TextRelease("l1", "laplace", 1.0, 1, 1, Fraction(1, 10**400), 1, 1.0)


def test_nearest_centroid_accuracy_with_values_near_the_float_limit():
    # Before: "overflow encountered in subtract / reduce" (and inf distances).
    assert text_privacy.nearest_centroid_accuracy([[1.7e308], [-1.7e308]], [0, 1], [[1.7e308], [-1e308]], [0, 1]) == 1.0
    train = [[1.7e308, 1.7e308], [1.7e308, 1.6e308], [0.0, 0.0]]
    assert text_privacy.nearest_centroid_accuracy(train, [0, 0, 1], [[1.7e308, 1.0e308], [1e307, 0.0]], [0, 1]) == 1.0


def test_bag_of_words_refuses_vocabulary_words_no_token_can_match():
    # Before: [[0.0]] for the document "A" and the vocabulary ("A",): tokens are lower-cased, so the
    # word was silently never counted.
    for vocabulary in (["A"], ["a b"]):
        with pytest.raises(ValueError, match="vocabulary"):
            text_privacy.bag_of_words(["A"], vocabulary)
    assert text_privacy.bag_of_words(["A a"], ["a"]).tolist() == [[1.0]]


def test_exponential_probabilities_with_a_sensitivity_near_the_float_limit():
    # Before: [0.5, 0.5]: 2 * sensitivity overflowed to inf and every logit became 0.
    p = buglab.exponential_probabilities([0.0, 1e308], 1.0, 1e308)
    assert p == pytest.approx([1 / (1 + math.exp(0.5)), 1 / (1 + math.exp(-0.5))])


def test_repeat_result_with_huge_losses_and_seeds():
    # Before: "overflow encountered in reduce / square" (an inf mean or std), and a str() that raised
    # "Exceeds the limit (4300 digits)".
    from dptutor.experiments import RepeatResult

    r = RepeatResult("laplace", 1, 1.0, 10, (1, 2), (1e308, 1e308))
    assert (r.mean, r.std) == (1e308, 0.0)
    assert RepeatResult("laplace", 1, 1.0, 10, (1, 2), (1e200, 0.0)).std == pytest.approx(5e199)
    assert RepeatResult("laplace", 1, 1.0, 10, (1, 2), (0.1, 0.2)).mean == np.mean([0.1, 0.2])
    with pytest.raises(ValueError, match="seeds"):
        RepeatResult("laplace", 1, 1.0, 10, (10**5000,), (0.1,))


def test_save_figure_turns_os_errors_into_value_errors_naming_stem(tmp_path):
    # Before: a bare OSError (name too long), IsADirectoryError (a folder named like the file), and a
    # message naming "out" for a stem under a file.
    from matplotlib.figure import Figure

    from dptutor.experiments import save_figure

    fig = Figure()
    (tmp_path / "x.svg").mkdir()
    (tmp_path / "f").write_text("", encoding="utf-8")
    for stem in (tmp_path / ("a" * 300), tmp_path / "x", tmp_path / "f" / "y"):
        with pytest.raises(ValueError, match="stem"):
            save_figure(fig, stem, formats=("svg",))
    assert sorted(os.listdir(tmp_path)) == ["f", "x.svg"]


def test_clip_to_grid_with_subnormal_vectors():
    # Before: "overflow encountered in divide" (1 / an l1 norm of 5e-309).
    v = np.full((2, 50), 1e-310)
    v[1, 0] = 0.5
    assert text_privacy.clip_to_grid(v, norm="l1", steps=1 << 20).tolist() == [[0] * 50, [1 << 19] + [0] * 49]
