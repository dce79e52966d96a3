"""Tests for dptutor.experiments, the CLI (python -m dptutor) and plot_sanity_check."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import BLOCK_TRIALS, estimate_loss, exact_loss
from dptutor.experiments import (
    PAPER_DIMS,
    PAPER_EPSILONS,
    GridRow,
    cell_seed,
    read_rows_csv,
    repeat_loss,
    rows_to_nested,
    run_grid,
)
from dptutor.mechanisms import MECHANISMS
from dptutor.reference import paper_results

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, cwd, check=True, timeout=300):
    env = dict(os.environ, PYTHONWARNINGS="error::RuntimeWarning")
    proc = subprocess.run([sys.executable, "-m", "dptutor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


# ---------------------------------------------------------------------------------------------
# run_grid
# ---------------------------------------------------------------------------------------------


def test_grid_rows_are_reproducible_cell_by_cell():
    rows = run_grid(["laplace", "dptext"], [0.5, 2.0], [1, 8], 3_000, rng=7)
    assert [(r.mechanism, r.epsilon, r.n) for r in rows] == [
        (m, e, n) for m in ("laplace", "dptext") for e in (0.5, 2.0) for n in (1, 8)
    ]
    for r in rows:
        assert r.seed == cell_seed(7, r.mechanism, r.epsilon, r.n)
        again = estimate_loss(MECHANISMS[r.mechanism], r.n, r.epsilon, 3_000, rng=r.seed)
        assert r.counts == tuple(again.counts.ravel().tolist())
        assert r.loss == again.loss
        assert r.lower_bound_95 == again.lower_bound(0.95)
        assert r.exact_loss == exact_loss(r.mechanism, r.n, r.epsilon)


def test_cell_seeds_are_distinct_and_stable():
    seeds = {cell_seed(1234, m, e, n) for m in MECHANISMS for e in PAPER_EPSILONS for n in PAPER_DIMS}
    assert len(seeds) == len(MECHANISMS) * len(PAPER_EPSILONS) * len(PAPER_DIMS)
    assert cell_seed(1234, "laplace", 1, 2) == cell_seed(1234, "laplace", 1.0, 2)
    assert cell_seed(1234, "laplace", 1.0, 2) != cell_seed(1235, "laplace", 1.0, 2)


def test_grid_counts_identical_for_one_and_two_workers():
    args = (["adept", "random_output"], [1.0], [1, 2], BLOCK_TRIALS + 1_000)
    one = run_grid(*args, rng=3, workers=1)
    two = run_grid(*args, rng=3, workers=2)
    assert [r.counts for r in one] == [r.counts for r in two]


def test_exact_grid():
    rows = run_grid(list(MECHANISMS), [0.1, 10.0], [1, 128], exact=True)
    for r in rows:
        assert r.trials == 0 and r.counts is None and r.lower_bound_95 is None
        assert r.loss == r.exact_loss == exact_loss(r.mechanism, r.n, r.epsilon)


def test_resume_skips_finished_cells(tmp_path):
    first = run_grid(["laplace", "adept"], [1.0], [1], 2_000, rng=5, out=tmp_path)
    stamps = {r.key: r.finished_at for r in read_rows_csv(tmp_path / "results.csv")}
    assert len(stamps) == 2
    computed: list[GridRow] = []
    full = run_grid(["laplace", "adept"], [1.0], [1, 2], 2_000, rng=5, out=tmp_path, on_row=computed.append)
    assert sorted(r.n for r in computed) == [2, 2]  # only the new cells ran
    after = {r.key: r for r in read_rows_csv(tmp_path / "results.csv")}
    assert len(after) == 4
    for key, stamp in stamps.items():
        assert after[key].finished_at == stamp
    assert [r.counts for r in full if r.n == 1] == [r.counts for r in first]
    # Different trials or seed: recomputed.
    computed.clear()
    run_grid(["laplace"], [1.0], [1], 2_001, rng=5, out=tmp_path, on_row=computed.append)
    assert len(computed) == 1


def test_csv_round_trip_and_json_layout_like_the_authors(tmp_path):
    rows = run_grid(list(MECHANISMS), PAPER_EPSILONS, [1, 2], 500, rng=1, out=tmp_path)
    back = read_rows_csv(tmp_path / "results.csv")
    assert {r.key: r for r in back} == {r.key: r for r in rows}
    header = next(csv.reader(open(tmp_path / "results.csv")))
    for col in ("mechanism", "epsilon", "n", "trials", "count_d0_y0", "count_d0_y1", "count_d1_y0",
                "count_d1_y1", "loss", "lower_bound_95", "exact_loss", "seed"):
        assert col in header
    text = (tmp_path / "results.json").read_text()
    assert "Infinity" in text  # dptext / copy_input
    ours = json.loads(text)
    assert ours == rows_to_nested(rows)
    theirs = paper_results()
    some = next(iter(theirs.values()))
    assert set(ours["laplace"]) == set(some)  # epsilon keys "0.1", ..., "1.0", ..., "10.0"
    assert set(ours["laplace"]["1.0"]) == {"1", "2"}
    assert set(next(iter(some.values()))) == {str(n) for n in PAPER_DIMS}


def test_grid_bad_input():
    with pytest.raises(ValueError, match="mechanisms"):
        run_grid(["gauss"], [1.0], [1], 10)
    with pytest.raises(ValueError, match="epsilon"):
        run_grid(["laplace"], [0.0], [1], 10)
    with pytest.raises(ValueError, match="dims"):
        run_grid(["laplace"], [1.0], [0], 10)
    with pytest.raises(ValueError, match="trials"):
        run_grid(["laplace"], [1.0], [1], 0)
    with pytest.raises(ValueError, match="exact"):
        run_grid({"mine": lambda x, e, r: x.copy()}, [1.0], [1], exact=True)


# ---------------------------------------------------------------------------------------------
# repeat (footnote 7)
# ---------------------------------------------------------------------------------------------


def test_repeat_matches_delta_method_spread():
    """ADePT n=2, epsilon=0.1.  The loss is ln(q_1/q_0) with q_d = P(guess 1 | d) (the guess-0 term
    is smaller); by the delta method its standard deviation at T trials is
    sqrt((1-q_0)/(T q_0) + (1-q_1)/(T q_1)) (0.00078 at T = 10^7, the paper's 0.0008).  With R
    repeats: the mean lies within 4 standard errors of the exact loss, and (R-1) s^2 / sigma^2
    lies between the 0.0005 and 0.9995 quantiles of chi-square(R-1)."""
    trials, repeats = 100_000, 30
    res = repeat_loss("adept", 2, 0.1, trials, repeats)
    losses = np.array(res.losses)
    assert res.seeds == tuple(range(repeats))
    assert res.mean == losses.mean() and res.std == losses.std()
    q0 = math.exp(-0.05) ** 2 / 4  # both coordinates >= 0.5 from zeros
    q1 = (1 - math.exp(-0.05) / 2) ** 2
    sigma = math.sqrt((1 - q0) / (trials * q0) + (1 - q1) / (trials * q1))
    assert abs(res.mean - res.exact) <= 4 * sigma / math.sqrt(repeats)
    stat = (repeats - 1) * losses.var(ddof=1) / sigma**2
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], repeats - 1)
    assert lo <= stat <= hi
    assert math.isclose(res.exact, math.log(q1 / q0), rel_tol=1e-12)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def test_cli_reproduce_smoke(tmp_path):
    proc = _cli("reproduce", "--trials", "2000", "--dims", "1", "2", "--epsilons", "0.5", "1", "--out", "tmp",
                "--quiet", cwd=tmp_path)
    out = tmp_path / "tmp"
    for name in ("results.json", "results.csv", "sanity_check.png", "sanity_check.svg"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "sanity_check.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (out / "sanity_check.svg").read_text()
    rows = read_rows_csv(out / "results.csv")
    assert len(rows) == 6 * 2 * 2 and all(r.trials == 2000 for r in rows)
    assert "24 cells" in proc.stdout
    nested = json.loads((out / "results.json").read_text())
    assert nested["dptext"]["0.5"]["1"] == math.inf


def test_cli_reproduce_exact(tmp_path):
    _cli("reproduce", "--exact", "--mechanisms", "adept", "dptext", "--out", "ex", "--quiet", cwd=tmp_path)
    nested = json.loads((tmp_path / "ex" / "results.json").read_text())
    assert math.isclose(nested["adept"]["10.0"]["128"], exact_loss("adept", 128, 10.0))
    assert len(nested["dptext"]) == 7 and nested["dptext"]["0.1"]["64"] == math.inf


def test_cli_repeat_prints_mean_and_std(tmp_path):
    proc = _cli("repeat", "--trials", "20000", "--repeats", "3", "--quiet", cwd=tmp_path)
    values = dict(line.split() for line in proc.stdout.splitlines() if line.split()[0] in ("mean", "std"))
    losses = [estimate_loss(MECHANISMS["adept"], 2, 0.1, 20_000, rng=s).loss for s in range(3)]
    assert float(values["mean"]) == pytest.approx(np.mean(losses), rel=1e-5)
    assert float(values["std"]) == pytest.approx(np.std(losses), rel=1e-5)


def test_cli_rejects_bad_arguments(tmp_path):
    for args in (["reproduce", "--trials", "0"], ["reproduce", "--epsilons", "-1"],
                 ["reproduce", "--mechanisms", "gauss"], ["repeat", "--n", "0"], ["nonsense"]):
        proc = _cli(*args, cwd=tmp_path, check=False)
        assert proc.returncode == 2, args


def test_cli_killed_run_resumes_without_recomputing(tmp_path):
    """Kill a reproduction (SIGKILL) once its first cells are on disk; the rerun keeps them."""
    args = ["reproduce", "--trials", "60000", "--mechanisms", "laplace", "adept", "--dims", "64",
            "--epsilons", "0.1", "0.2", "0.5", "1", "2", "5", "10", "--workers", "1", "--out", "run", "--quiet"]
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "dptutor", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    csv_path = tmp_path / "run" / "results.csv"
    deadline = time.monotonic() + 120
    first: list[GridRow] = []
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if csv_path.exists():
                first = read_rows_csv(csv_path)  # atomic writes: always a complete file
                if len(first) >= 2:
                    break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert len(first) >= 2
    first = read_rows_csv(csv_path)  # cells finished before the kill
    assert 2 <= len(first) <= 14
    _cli(*args, cwd=tmp_path)
    final = {r.key: r for r in read_rows_csv(csv_path)}
    assert len(final) == 14
    for r in first:
        assert final[r.key].finished_at == r.finished_at  # not recomputed
        assert final[r.key].counts == r.counts


# ---------------------------------------------------------------------------------------------
# plot_sanity_check
# ---------------------------------------------------------------------------------------------


def test_plot_sanity_check_accepts_nested_rows_and_authors_file():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dptutor.plotting import plot_sanity_check

    rows = run_grid(list(MECHANISMS), [0.1, 1.0, 10.0], [1, 8], 1_000, rng=2)
    for results, exact in ((rows, False), (rows_to_nested(rows), True), (paper_results(), False)):
        fig = plot_sanity_check(results, exact=exact)
        axes = [ax for ax in fig.axes]
        assert len(axes) == 4
        labels = [t.get_text() for t in axes[0].get_yticklabels()]
        assert "∞" in labels
        assert axes[1].get_title().startswith("Laplace")
        plt.close(fig)
    fig = plot_sanity_check(None, exact=True, dims=[1, 2])
    plt.close(fig)
    with pytest.raises(ValueError, match="loss"):
        plot_sanity_check({"laplace": {"1.0": {"1": float("nan")}}})
    with pytest.raises(TypeError, match="results"):
        plot_sanity_check(42)
    with pytest.raises(ValueError, match="results"):
        plot_sanity_check(None)


def test_run_grid_seed_is_a_deprecated_alias_of_rng():
    args = (["laplace"], [1.0], [1], 2_000)
    new = run_grid(*args, rng=5)
    with pytest.warns(DeprecationWarning, match="use rng="):
        old = run_grid(*args, seed=5)
    assert [(r.seed, r.counts) for r in old] == [(r.seed, r.counts) for r in new]
    with pytest.raises(TypeError, match="rng=.*seed="):
        run_grid(*args, rng=5, seed=5)


def test_run_grid_rng_takes_a_seed_sequence_or_a_generator():
    args = (["laplace"], [1.0], [1, 2], 2_000)
    by_int = run_grid(*args, rng=5)
    assert by_int[0].seed == cell_seed(5, "laplace", 1.0, 1)
    assert [r.counts for r in run_grid(*args, rng=np.random.SeedSequence(5))] == [r.counts for r in by_int]
    # a Generator gives four recorded words: the same Generator state gives the same cells
    words = tuple(int(w) for w in np.random.default_rng(5).integers(0, 2**32, size=4, dtype=np.uint64))
    by_gen = run_grid(*args, rng=np.random.default_rng(5))
    assert [r.seed for r in by_gen] == [cell_seed(words, "laplace", 1.0, n) for n in (1, 2)]
    with pytest.raises(ValueError, match="rng"):
        run_grid(*args, rng=-1)


def test_a_field_beyond_the_csv_modules_limit_is_an_invalid_row_not_a_csv_error(tmp_path):
    # csv.Error ("field larger than field limit") escaped read_rows_csv, with or without on_invalid.
    from dptutor.grid_files import rows_to_csv_text

    good = GridRow(mechanism="laplace", epsilon=0.1, n=2, trials=100, loss=0.10536051565782634, counts=(10, 90, 9, 91))
    text = rows_to_csv_text([good])
    body = tmp_path / "body.csv"
    body.write_text(text + "laplace," + "9" * 200_000 + "\n" + text.splitlines()[1] + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="field larger than field limit"):
        read_rows_csv(body)
    seen: list[str] = []
    assert read_rows_csv(body, on_invalid=seen.append) == [good] and len(seen) == 1
    header = tmp_path / "header.csv"
    header.write_text("x" * 200_000 + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a readable CSV file"):
        read_rows_csv(header)
