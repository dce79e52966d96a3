"""The eleven defects of issue 12 ("a package that fails loudly"), one test (or a few) per defect.

Each test failed on the code before the fix.  The fuzz suite (``test_fuzz.py``) covers bad values in
general; these tests pin the specific failures that were measured.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pytest

import dptutor
from dptutor import audit
from dptutor.audit import AuditResult, estimate_loss, exact_loss, loss_from_counts
from dptutor.distributions import dptext_pdf, laplace_pdf, sample_dptext, sample_laplace
from dptutor.experiments import read_rows_csv, repeat_loss, run_grid, save_figure
from dptutor.mechanisms import MECHANISMS, copy_input_mechanism, dptext_mechanism, laplace_mechanism
from dptutor.symbolic import theorem_3_2

matplotlib.use("Agg")

#: The folder holding the package under test, so that subprocesses import the same code.
PACKAGE_ROOT = str(Path(dptutor.__file__).resolve().parents[1])


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([PACKAGE_ROOT, *extra.pop("PYTHONPATH", "").split(os.pathsep)]).rstrip(os.pathsep)
    return dict(os.environ, PYTHONPATH=path, PYTHONWARNINGS="error::RuntimeWarning", **extra)


def _children(pid: int) -> list[int]:
    """Live (non-zombie) processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


# ---------------------------------------------------------------------------------------------
# 1. unbounded workers
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def pool_sizes(monkeypatch):
    """Record (and bound) the size of every process pool started, whatever class starts it."""
    sizes: list[int] = []
    original = concurrent.futures.ProcessPoolExecutor.__init__

    def guarded(self, max_workers=None, *args, **kwargs):
        sizes.append(max_workers)
        if max_workers is None or max_workers > (os.cpu_count() or 1):
            raise AssertionError(f"a pool of {max_workers} workers was started on {os.cpu_count()} CPUs")
        original(self, max_workers, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "__init__", guarded)
    return sizes


@pytest.mark.parametrize("call", ["run_grid", "repeat_loss", "estimate_loss"])
def test_workers_beyond_the_limit_are_refused(pool_sizes, call):
    with pytest.raises(ValueError, match="workers"):
        if call == "run_grid":
            run_grid(["laplace"], [1.0], [1], 300_000, workers=10**9)
        elif call == "repeat_loss":
            repeat_loss("adept", 2, 0.1, 300_000, 2, workers=10**9)
        else:
            estimate_loss(laplace_mechanism, 1, 1.0, 300_000, rng=1, workers=10**9)
    assert pool_sizes == []


def test_workers_are_capped_at_the_cpus(pool_sizes):
    """256 workers asked (the limit): the pool gets at most one per CPU, and the counts do not change."""
    one = run_grid(["laplace"], [1.0], [1], 2 * audit.BLOCK_TRIALS + 5, rng=3, workers=1)
    many = run_grid(["laplace"], [1.0], [1], 2 * audit.BLOCK_TRIALS + 5, rng=3, workers=256)
    assert [r.counts for r in one] == [r.counts for r in many]
    assert all(size <= (os.cpu_count() or 1) for size in pool_sizes)


_GUARDED_CLI = """
import concurrent.futures, os, sys
original = concurrent.futures.ProcessPoolExecutor.__init__
def guarded(self, max_workers=None, *args, **kwargs):
    if max_workers is None or max_workers > (os.cpu_count() or 1):
        os._exit(3)  # a pool larger than the machine: fail the test without forking
    original(self, max_workers, *args, **kwargs)
concurrent.futures.ProcessPoolExecutor.__init__ = guarded
from dptutor.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_cli_refuses_too_many_workers(tmp_path):
    args = ["reproduce", "--workers", "1000000000", "--trials", "300000", "--dims", "1", "--epsilons", "1",
            "--mechanisms", "laplace", "--quiet", "--out", str(tmp_path)]
    proc = subprocess.run([sys.executable, "-c", _GUARDED_CLI, *args], env=_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "workers" in proc.stderr


# ---------------------------------------------------------------------------------------------
# 2. a mechanism writing into the cached datasets
# ---------------------------------------------------------------------------------------------


def _vandal(x, epsilon, rng):
    """Tries every way numpy offers to make its input (and the input's base) writeable, then writes."""
    arr = x
    while isinstance(arr, np.ndarray):
        try:
            arr.setflags(write=True)
            np.copyto(arr, 0.25)
        except (ValueError, TypeError):
            pass
        arr = arr.base
    return copy_input_mechanism(np.array(x), epsilon, rng)


def test_mechanism_cannot_corrupt_later_audits():
    trials = 1000
    estimate_loss(_vandal, 4, 1.0, trials, rng=0)
    clean = estimate_loss(copy_input_mechanism, 4, 1.0, trials, rng=0)
    assert clean.counts.tolist() == [[trials, 0], [0, trials]]


# ---------------------------------------------------------------------------------------------
# 3. corrupted results.csv
# ---------------------------------------------------------------------------------------------


def _no_nan_json(text: str):
    def refuse(token: str):
        if token == "NaN":
            raise ValueError("NaN in JSON")
        return float(token)

    return json.loads(text, parse_constant=refuse)


def _corrupt(path: Path, how: str) -> None:
    data = path.read_bytes()
    header, first, second = data.decode().splitlines()[:3]
    cols = header.split(",")
    if how == "bom":
        path.write_bytes(b"\xef\xbb\xbf" + data)
        return
    if how == "non_utf8":
        path.write_bytes("\n".join([header, first + "\udcff", second]).encode("utf-8", "surrogateescape") + b"\n")
        return
    if how == "missing_column":
        i = cols.index("loss")
        lines = [",".join(f for j, f in enumerate(line.split(",")) if j != i) for line in (header, first, second)]
        path.write_text("\n".join(lines) + "\n")
        return
    if how == "truncated":
        path.write_text("\n".join([header, first, second[: len(second) // 2]]))
        return
    fields = first.split(",")
    if how == "nan_loss":
        fields[cols.index("loss")] = "nan"
    elif how == "counts":  # move 7 trials from guess 0 to guess 1 on D: row totals still right
        i, j = cols.index("count_d0_y0"), cols.index("count_d0_y1")
        fields[i], fields[j] = str(int(fields[i]) - 7), str(int(fields[j]) + 7)
    path.write_text("\n".join([header, ",".join(fields), second]) + "\n")


@pytest.mark.parametrize("how", ["bom", "non_utf8", "missing_column", "truncated", "nan_loss", "counts"])
def test_corrupted_results_csv_is_checked_and_recomputed(tmp_path, how):
    args = (["laplace", "adept"], [1.0], [2], 2_000)
    fresh = run_grid(*args, rng=5, out=tmp_path)
    _corrupt(tmp_path / "results.csv", how)
    if how != "bom":
        with pytest.raises(ValueError, match="path"):
            read_rows_csv(tmp_path / "results.csv")
    reports: list[str] = []
    again = run_grid(*args, rng=5, out=tmp_path, on_invalid=reports.append)
    assert [r.counts for r in again] == [r.counts for r in fresh]
    assert [r.loss for r in again] == [r.loss for r in fresh]
    assert (len(reports) > 0) == (how != "bom")
    nested = _no_nan_json((tmp_path / "results.json").read_text())
    assert nested["laplace"]["1.0"]["2"] == fresh[0].loss
    assert [r.counts for r in read_rows_csv(tmp_path / "results.csv")] == [r.counts for r in fresh]


# ---------------------------------------------------------------------------------------------
# 4. theorem_3_2 outside (0, 1)
# ---------------------------------------------------------------------------------------------


def test_theorem_3_2_only_for_y_in_the_unit_interval():
    assert theorem_3_2(0.5).violates_dp
    for y in (2, -1, 0, 1):
        with pytest.raises(ValueError, match=r"^y must"):
            theorem_3_2(y)
    for y in ("0.1", [0.1], None):
        with pytest.raises(TypeError, match=r"^y must"):
            theorem_3_2(y)


# ---------------------------------------------------------------------------------------------
# 5. exact_loss underflow
# ---------------------------------------------------------------------------------------------


def test_exact_loss_stays_finite_far_in_the_tails():
    # wrong_sensitivity, n = 1: P(guess 1 | D) = exp(-eps)/2 and P(guess 1 | D') = 1/2, so the loss is eps.
    assert exact_loss("wrong_sensitivity", 1, 745.0) == pytest.approx(745.0, rel=1e-15)
    # laplace, n = 1: p = exp(-eps/2)/2 and the loss ln((1 - p)/p) = eps/2 + ln 2 + ln(1 - p).
    assert exact_loss("laplace", 1, 1500.0) == pytest.approx(750.0 + math.log(2.0), rel=1e-15)


def test_exact_loss_log_space_matches_high_precision():
    """ADePT at n = 3, epsilon = 3000 (p = exp(-1500)/2, far below the float range), against mpmath."""
    import mpmath

    mpmath.mp.dps = 60
    p = mpmath.exp(-1500) / 2
    q = 1 - p
    # K ~ Binomial(3, p) on D and Binomial(3, q) on D'; the guess is 1 iff K >= 2.  Each probability
    # is written as a sum of positive terms, so no cancellation occurs at any precision.
    one_d0, zero_d0 = 3 * p**2 * q + p**3, q**3 + 3 * q**2 * p
    one_d1, zero_d1 = 3 * q**2 * p + q**3, p**3 + 3 * p**2 * q
    truth = max(abs(mpmath.log(one_d0 / one_d1)), abs(mpmath.log(zero_d0 / zero_d1)))
    # The log-space sum rounds a few terms of size ~3000: allow 1e-13 relative.
    assert exact_loss("adept", 3, 3000.0) == pytest.approx(float(truth), rel=1e-13)


# ---------------------------------------------------------------------------------------------
# 6. NaN input to the mechanisms
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_mechanisms_refuse_non_finite_input(name, bad):
    x = np.zeros((3, 2))
    x[1, 1] = bad
    with pytest.raises(ValueError, match="x"):
        MECHANISMS[name](x, 1.0, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------
# 7. warnings and foreign exception types
# ---------------------------------------------------------------------------------------------


def test_extreme_values_raise_no_warning():
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dptext_pdf(0.0, 0.0, 5e-324) == math.inf  # the density 1/(2b) overflows, correctly
        for method in ("inverse_cdf", "fast"):
            draws = sample_laplace(50, 0.0, 4e306, rng=rng, method=method)  # the largest scales still allowed
            assert np.isfinite(draws).all()
        assert exact_loss("laplace", np.uint64(4), 1.0) == exact_loss("laplace", 4, 1.0)


@pytest.mark.parametrize(
    "call, word, exc",
    [
        (lambda: loss_from_counts([[1e300, 0.0], [0.0, 1e300]]), "counts", ValueError),
        (lambda: sample_laplace((10**6, 10**6), rng=np.random.default_rng(0)), "size", ValueError),
        (lambda: estimate_loss(laplace_mechanism, 1, 1.0, 10**15), "trials", ValueError),
        (lambda: estimate_loss(laplace_mechanism, 1, 1.0, 10, rng=math.inf), "rng", TypeError),
        (lambda: save_figure(None, "never-written"), "fig", TypeError),
    ],
)
def test_bad_values_give_value_or_type_errors(call, word, exc):
    with pytest.raises(exc, match=word):
        call()


def test_save_figure_refuses_an_absurd_dpi(tmp_path):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1))
    try:
        with pytest.raises(ValueError, match="dpi"):
            save_figure(fig, tmp_path / "f", formats=("png",), dpi=1e308)
    finally:
        plt.close(fig)


def test_read_rows_csv_of_a_file_descriptor_keeps_stdout_open():
    code = ("from dptutor.experiments import read_rows_csv\n"
            "try:\n    read_rows_csv(1)\nexcept TypeError as exc:\n    print('path' in str(exc))\n"
            "print('stdout still open', flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.stdout.split("\n")[:2] == ["True", "stdout still open"], proc.stderr


# ---------------------------------------------------------------------------------------------
# 8. messages that name the parameter
# ---------------------------------------------------------------------------------------------


def test_messages_name_the_parameter():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="mu"):
        laplace_pdf(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="b"):
        sample_laplace(4, 0.0, np.ones(3), rng=rng)
    with pytest.raises(TypeError, match="nan"):
        sample_dptext(4, rng=rng, nan=np.array(["zero", "keep"]))
    with pytest.raises(TypeError, match="method"):
        sample_laplace(4, rng=rng, method=np.array(["fast", "fast"]))
    with pytest.raises(TypeError, match="name"):
        exact_loss(np.array(["laplace", "adept"]), 1, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        dptext_mechanism(np.zeros((2, 2)), 5e-324, rng)


# ---------------------------------------------------------------------------------------------
# 9. AuditResult validates every field
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [("loss", math.nan), ("loss", 0.1), ("n", -1), ("epsilon", math.nan), ("trials", 7), ("mechanism", 3)],
)
def test_audit_result_checks_every_field(field, value):
    good = dict(loss=loss_from_counts([[6, 4], [3, 7]]), counts=[[6, 4], [3, 7]], trials=10, n=2, epsilon=1.0)
    AuditResult(**good)
    with pytest.raises((ValueError, TypeError), match=field):
        AuditResult(**{**good, field: value})


def test_uint64_counts_do_not_wrap_around():
    wraps = np.array([[2**64 - 3, 5], [1, 1]], dtype=np.uint64)  # row totals wrap to 2 in uint64
    with pytest.raises(ValueError, match="counts"):
        loss_from_counts(wraps)
    with pytest.raises(ValueError, match="counts"):
        AuditResult.from_counts(wraps, n=1, epsilon=1.0)


# ---------------------------------------------------------------------------------------------
# 10. interrupts with workers
# ---------------------------------------------------------------------------------------------

_SLOW = '''
import time

import numpy as np


def slow_mechanism(x, epsilon, rng):
    time.sleep(60)
    return np.zeros(x.shape)
'''

_RUN_SLOW = '''
import sys

from dptutor.experiments import run_grid
from slowmech import slow_mechanism

try:
    run_grid({"slow": slow_mechanism}, [1.0], [1], 600_000, workers=2)
except KeyboardInterrupt:
    sys.exit(130)
'''


def _wait_for_workers(proc: subprocess.Popen, count: int, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        kids = _children(proc.pid)
        if len(kids) >= count:
            time.sleep(0.5)  # let the workers pick up their first (slow) blocks
            return _children(proc.pid)
        time.sleep(0.05)
    raise AssertionError(f"no {count} workers appeared (exit code {proc.poll()})")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_with_workers_stops_promptly(tmp_path):
    """Ctrl-C in a terminal signals the whole process group; the run must end within seconds."""
    (tmp_path / "slowmech.py").write_text(_SLOW)
    proc = subprocess.Popen([sys.executable, "-c", _RUN_SLOW], cwd=tmp_path, env=_env(PYTHONPATH=str(tmp_path)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        workers = _wait_for_workers(proc, 2)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=10)
        assert time.monotonic() - t0 < 5.0
        assert proc.returncode == 130
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_soon_after_reproduce_is_killed(tmp_path):
    args = ["reproduce", "--trials", "2000000", "--mechanisms", "laplace", "--dims", "128", "--epsilons", "1", "2",
            "--workers", "2", "--out", "run", "--quiet"]
    proc = subprocess.Popen([sys.executable, "-m", "dptutor", *args], cwd=tmp_path, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    workers: list[int] = []
    try:
        workers = _wait_for_workers(proc, 2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers), "workers outlived the killed parent by more than 5 s"
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# 11. CLI tracebacks and stale rows in results.json
# ---------------------------------------------------------------------------------------------


def _reproduce(*extra: str, cwd: Path) -> subprocess.CompletedProcess:
    args = ["reproduce", "--trials", "500", "--mechanisms", "laplace", "--epsilons", "1", "--quiet", *extra]
    return subprocess.run([sys.executable, "-m", "dptutor", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120)


def test_cli_reports_bad_arguments_without_a_traceback(tmp_path):
    (tmp_path / "afile").write_text("not a folder")
    for extra, word in ((["--dims", "1", "--out", "afile"], "out"), (["--dims", "1", "--out", "afile/sub"], "out"),
                        (["--dims", "2", "2", "--out", "run"], "dims")):
        proc = _reproduce(*extra, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and word in proc.stderr


def test_results_json_holds_only_this_runs_cells(tmp_path):
    run_grid(["laplace"], [1.0], [1, 2], 1_000, rng=1, out=tmp_path)
    rows = run_grid(["laplace"], [1.0], [1], 2_000, rng=1, out=tmp_path)
    nested = _no_nan_json((tmp_path / "results.json").read_text())
    assert nested == {"laplace": {"1.0": {"1": rows[0].loss}}}
    kept = {r.n: r.trials for r in read_rows_csv(tmp_path / "results.csv")}
    assert kept == {1: 2_000, 2: 1_000}  # the earlier run's cell stays in the CSV, with its trials
