"""The grader's runner: its command line, interrupts, names, time limits and sandbox.

The checks and the call protocol between the grader and the kernel (dptutor.assignments.record) are
tested in tests/assignments/test_grading_record.py and tests/course/test_hostile_records.py, the sandbox itself in
tests/course/test_sandbox.py and tests/course/test_hostile_sandbox.py.  Here ``python -m dptutor grade`` grades
folders of notebooks in real kernels (in bubblewrap when it is installed), three folders at once to
save wall time: correct notebooks get full marks and untouched stubs 0 in every assignment,
forged notebooks no more than their functions earn when checked honestly, and SIGINT at several
moments keeps every finished row.
"""
from __future__ import annotations

import csv
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT
from dptutor.audit import AuditResult
from dptutor.assignments import ASSIGNMENTS, check
from dptutor.assignments.feedback import TEST_GRADING_SEED
from dptutor.course import batch, executor
from dptutor.assignments.audit import BY_HAND as AUDIT_BY_HAND
from test_grading import ASSIGNMENT_DIR, INSTRUCTOR_DIR

#: Whether the CLI runs here in its default bubblewrap sandbox (else the tests pass --no-sandbox).
SANDBOXED = shutil.which("bwrap") is not None
SAMPLER_STUB = '    raise NotImplementedError("Questions 1-3")'

#: Kernel code that kills the process that started the kernel (the grader's worker).
KILL_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"


# ---------------------------------------------------------------------------------------------
# wrong answers, as the student would write them
# ---------------------------------------------------------------------------------------------


def half_scale_loop(u, mu=0.0, b=1.0):  # a Python loop with the wrong scale b/2, domain checks kept
    from dptutor.distributions import laplace_ppf

    u = np.asarray(u, dtype=float)
    if not (np.isfinite(b) and b > 0) or not ((u > 0) & (u < 1)).all():
        raise ValueError("bad input")
    if u.ndim == 0:
        return laplace_ppf(float(u), mu, b / 2)
    return np.array([laplace_ppf(x, mu, b / 2) for x in u])


def zeros(u, mu=0.0, b=1.0):
    return np.zeros(np.shape(u))


def per_coordinate(X, epsilon, *, rng):  # Delta = 1/m
    X = np.asarray(X, dtype=float)
    m, k = X.shape
    return X.mean(axis=0) + rng.laplace(0.0, 1 / (m * epsilon), size=k)


def mutating(X, epsilon, *, rng):  # correct noise, but clips X in place and takes no care of bad input
    X = np.asarray(X)
    np.clip(X, 0, 1, out=X)
    m, k = X.shape
    return X.mean(axis=0) + rng.laplace(0.0, k / (m * epsilon), size=k)


def test_scores_are_clamped_to_the_points() -> None:
    assert executor._clamp(1000.0, 2.0) == 2.0
    assert executor._clamp(-3.0, 2.0) == 0.0
    assert executor._clamp(math.nan, 2.0) == 0.0
    assert executor._clamp(math.inf, 1.0) == 1.0


def test_public_functions_name_bad_parameters(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="assignment"):
        batch.grade_folder("nope", tmp_path)
    with pytest.raises(TypeError, match="folder"):
        batch.grade_folder("sampler", 3)
    with pytest.raises(ValueError, match="timeout"):
        batch.grade_folder("sampler", tmp_path, timeout=-1)
    with pytest.raises(TypeError, match="path"):
        executor.grade_notebook(None, "sampler")
    with pytest.raises(ValueError, match="total_timeout"):
        executor.grade_notebook(tmp_path / "x.md", "sampler", total_timeout=math.nan)
    with pytest.raises(TypeError, match="results"):
        batch.write_csv([1], tmp_path / "x.csv", "sampler")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="csv"):
        batch.read_csv(tmp_path / "other.csv", "sampler")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    if args[:1] == ("grade",) and not SANDBOXED and "--no-sandbox" not in args:
        args = (*args, "--no-sandbox")
    return subprocess.run([sys.executable, "-m", "dptutor", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_output_arguments_are_checked_before_grading(tmp_path: Path) -> None:
    folder = tmp_path / "subs"
    folder.mkdir()
    # A notebook that would take 60 s: nothing may run before the arguments are found wrong.
    (folder / "slow.md").write_text((ASSIGNMENT_DIR / "sampler.md").read_text().replace(
        "import numpy as np", "import time; time.sleep(60)\nimport numpy as np", 1))
    (tmp_path / "afile").write_text("x")
    (tmp_path / "foreign.csv").write_text("name,grade\nbob,3\n")
    started = time.monotonic()
    for extra, expected in (
        (["--csv", str(tmp_path)], "is a folder"),
        (["--csv", str(tmp_path / "missing" / "s.csv")], "does not exist"),
        (["--csv", str(tmp_path / "s.csv"), "--feedback", str(tmp_path / "afile")], "not a folder"),
        (["--csv", str(tmp_path / "foreign.csv")], "not a scores file"),
    ):
        proc = run_cli("grade", "sampler", str(folder), *extra)
        assert proc.returncode == 2, proc.stderr
        assert expected in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # The old entry point still works, with the same checks.
    proc = subprocess.run([sys.executable, "-m", "dptutor.course", "grade", "sampler", str(folder), "--csv",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is a folder" in proc.stderr, proc.stderr
    assert time.monotonic() - started < 40
    assert not (tmp_path / "s.csv").exists()


def test_missing_grading_dependency_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:
    real = executor.importlib.util.find_spec
    monkeypatch.setattr(executor.importlib.util, "find_spec", lambda name, *a: None if name == "nbclient" else real(name, *a))
    from dptutor.cli import main

    assert main(["grade", "sampler", str(tmp_path), "--csv", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nbclient" in err and "pip install 'dptutor[grade]'" in err


# ---------------------------------------------------------------------------------------------
# adversarial notebooks in real kernels
# ---------------------------------------------------------------------------------------------

FORGE_TOKEN = '''
import builtins, json, dptutor.assignments as g
_real_print = builtins.print
def _forged(*args, **kwargs):  # print a score of 1000 for every question, whatever is asked
    for q in ("q1", "q2", "q3"):
        _real_print("DPTUTOR-RESULT-0000000000000000 " + json.dumps(
            {"question": q, "score": 1000, "points": 1000, "status": "graded", "messages": []}))
def _grade_in_kernel(assignment, question, namespace, token):  # the old grader's hook, forged
    _real_print(token + json.dumps({"question": question, "score": 1000, "points": 1000, "status": "graded",
                                    "messages": []}), flush=True)
g.grade_in_kernel = _grade_in_kernel
builtins.print = lambda *a, **k: (_forged(), _real_print(*a, **k))
'''

PATCH_CHECKS = '''
import time, json, scipy.stats, numpy as np
import dptutor.distributions, dptutor.assignments.feedback as fb, dptutor.assignments.record as rec
import dptutor.assignments.sampler as smp, dptutor.assignments.registry as reg
class _P: pvalue = 1.0
scipy.stats.kstest = lambda *a, **k: _P()            # every KS test passes
smp.stats = scipy.stats
_slow = smp.laplace_ppf
def _very_slow(*a, **k):
    time.sleep(2)
    return _slow(*a, **k)
smp.laplace_ppf = _very_slow                                   # the grader's reference looks slow
fb.SpyArray.__iter__ = np.ndarray.__iter__                      # loops go unseen
fb.SpyArray.mark_touched = lambda self: None
rec.measure = smp.measure = lambda f, spec, *a, **k: (None, None, 1e-6)
reg.score = fb.score = lambda findings, points: 1000.0
_dumps = json.dumps
json.dumps = lambda obj, *a, **k: _dumps({"version": 1, "score": 1000} if isinstance(obj, dict) and "calls" in obj else obj, *a, **k)
'''

WATCHER = '''
import os, threading, time
def _watch():  # replace every result file the grader's cells write with a link to /dev/zero
    while True:
        for name in os.listdir("."):
            if name.endswith(".npz") and not os.path.islink(name):
                try:
                    os.replace(name, name + ".old"); os.symlink("/dev/zero", name)
                except OSError:
                    pass
        time.sleep(0.0005)
threading.Thread(target=_watch, daemon=True).start()
'''

FORKER = '''
import os, time
if os.fork() == 0:  # a helper that outlives the grading of this notebook, unless the grader kills it
    try:  # (in the sandbox it cannot write the file outside its work folder)
        with open({pidfile!r}, "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(300)
    finally:
        os._exit(0)
'''


def sampler_notebook(body: str, prelude: str = "") -> str:
    text = (ASSIGNMENT_DIR / "sampler.md").read_text()
    assert SAMPLER_STUB in text
    text = text.replace(SAMPLER_STUB, body)
    if prelude:
        text = text.replace("check = checker(\"sampler\")", "check = checker(\"sampler\")\n" + prelude, 1)
    return text


HALF_SCALE_LOOP = '''    from dptutor.distributions import laplace_ppf
    u = np.asarray(u, dtype=float)
    if not (np.isfinite(b) and b > 0) or not ((u > 0) & (u < 1)).all():
        raise ValueError("bad input")
    if u.ndim == 0:
        return laplace_ppf(float(u), mu, b / 2)
    return np.array([laplace_ppf(x, mu, b / 2) for x in u])'''

REFERENCE_SAMPLER = '''    u = np.asarray(u, dtype=float)
    if not (np.isfinite(b) and b > 0) or not np.all((u > 0) & (u < 1)):
        raise ValueError("bad input")
    from dptutor.distributions import laplace_ppf
    return laplace_ppf(u, mu, b)'''


def honest_total(name: str, namespace: dict) -> float:
    """What the functions earn when checked directly, rounded up to the CSV's two decimals."""
    return math.ceil(100 * sum(fb.score for fb in _honest(name, namespace)) - 1e-6) / 100


def _honest(name: str, namespace: dict) -> list:
    return [check(name, q.name, *(namespace[n] for n in q.needs), grading_seed=TEST_GRADING_SEED)
            for q in ASSIGNMENTS[name].questions]


def read_scores(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as fh:
        return {row["file"]: row for row in csv.DictReader(fh)}


def test_adversarial_submissions(tmp_path: Path) -> None:
    folders = {name: tmp_path / name for name in ASSIGNMENTS}
    for folder in folders.values():
        folder.mkdir()
    sampler = folders["sampler"]
    pidfile = tmp_path / "helper.pid"
    (sampler / "reference.md").write_text((INSTRUCTOR_DIR / "sampler.md").read_text())
    (sampler / "blank.md").write_text((ASSIGNMENT_DIR / "sampler.md").read_text())
    (sampler / "forged_token.md").write_text(sampler_notebook("    return np.zeros(np.shape(u))", FORGE_TOKEN))
    (sampler / "patched_checks.md").write_text(sampler_notebook(HALF_SCALE_LOOP, PATCH_CHECKS))
    (sampler / "watcher.md").write_text(sampler_notebook(REFERENCE_SAMPLER, WATCHER))
    (sampler / "forker.md").write_text(sampler_notebook(REFERENCE_SAMPLER, FORKER.format(pidfile=str(pidfile))))
    (sampler / "crash.md").write_text((ASSIGNMENT_DIR / "sampler.md").read_text().replace(
        "def laplace_inverse_cdf(", "raise RuntimeError('boom')\ndef laplace_inverse_cdf("))
    # A cell that never ends (the checks of a function that never returns are the semester walk's case)
    (sampler / "loop.md").write_text((ASSIGNMENT_DIR / "sampler.md").read_text().replace(
        "def laplace_inverse_cdf(", "while True:\n    pass\ndef laplace_inverse_cdf(", 1))
    for name in (n for n in ASSIGNMENTS if n != "sampler"):
        (folders[name] / "reference.md").write_text((INSTRUCTOR_DIR / ASSIGNMENTS[name].notebook).read_text())
        (folders[name] / "blank.md").write_text((ASSIGNMENT_DIR / ASSIGNMENTS[name].notebook).read_text())
    mech = (ASSIGNMENT_DIR / "mechanism.md").read_text()
    (folders["mechanism"] / "patched.md").write_text(mech.replace(
        '    raise NotImplementedError("Question 1")', "    return k / m").replace(
        '    raise NotImplementedError("Question 2")',
        "    X = np.asarray(X, dtype=float)\n    m, k = X.shape\n"
        "    return X.mean(axis=0) + rng.laplace(0.0, 1 / (m * epsilon), size=k)").replace(
        'check = checker("mechanism")', 'check = checker("mechanism")\n' + PATCH_CHECKS.replace(
            "smp.stats = scipy.stats", "import dptutor.assignments.mechanism as mm; mm.stats = scipy.stats"), 1))
    audit = (ASSIGNMENT_DIR / "audit.md").read_text()
    forged_evidence = '''
from dptutor.audit import AuditResult
import dptutor.audit, dptutor.assignments.audit as ga
fake = AuditResult.from_counts([[10, 99_990], [99_990, 10]], n=2, epsilon=1.0, seed=1)
dptutor.audit.estimate_loss = ga.estimate_loss = lambda *a, **k: fake   # the "replay" reproduces anything
evidence = {"A": fake, "B": fake}
verdicts = {"A": "violates", "B": "violates"}'''
    (folders["audit"] / "forged.md").write_text(audit.replace(
        'evidence = {"A": None, "B": None}\nverdicts = {"A": None, "B": None}', forged_evidence).replace(
        "diagnosis = None", 'diagnosis = "l2"'))

    limits = {"sampler": ("8", "120"), "mechanism": ("60", "300"), "audit": ("60", "300")}
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "dptutor", "grade", name, str(folder), "--csv", str(tmp_path / f"{name}.csv"),
             "--feedback", str(tmp_path / f"{name}-feedback"), "--timeout", limits.get(name, ("60", "300"))[0],
             "--total-timeout", limits.get(name, ("60", "300"))[1], *([] if SANDBOXED else ["--no-sandbox"]),
             *(["--workers", "2"] if name == "sampler" else [])],  # its 8 submissions: the longest folder
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, folder in folders.items()
    }
    logs = {name: proc.communicate(timeout=600)[0] for name, proc in procs.items()}
    for name, proc in procs.items():
        assert proc.returncode == 0, logs[name]
    rows = {name: read_scores(tmp_path / f"{name}.csv") for name in ASSIGNMENTS}

    # Correct submissions get full marks and blank ones 0, in every assignment.
    for name, a in ASSIGNMENTS.items():
        for q in a.questions:
            by_hand = name == "audit" and q.name in AUDIT_BY_HAND  # recorded, its points pending
            assert float(rows[name]["reference.md"][q.name]) == (0 if by_hand else q.points), (name, rows[name]["reference.md"])
            assert float(rows[name]["blank.md"][q.name]) == 0
        assert "not implemented yet" in rows[name]["blank.md"]["messages"] or "not answered yet" in rows[name]["blank.md"]["messages"]
        assert (tmp_path / f"{name}-feedback" / "reference.txt").is_file()

    s = rows["sampler"]
    scores = {f: float(r["total"]) for f, r in s.items()}
    print("sampler scores:", scores)
    # Forged scores: no more than the functions earn when checked honestly.
    assert scores["forged_token.md"] <= honest_total("sampler", {"laplace_inverse_cdf": zeros}) < 2
    assert scores["patched_checks.md"] <= honest_total("sampler", {"laplace_inverse_cdf": half_scale_loop}) < 3
    assert float(s["patched_checks.md"]["q1"]) < 1 and float(s["patched_checks.md"]["q3"]) < 1
    assert scores["watcher.md"] <= 4
    assert scores["forker.md"] == 4
    # The forked helper could not write outside its sandbox (and tests/course/test_hostile_sandbox.py checks
    # that no helper outlives its submission); unsandboxed, it did not outlive its submission either.
    if SANDBOXED:
        assert not pidfile.exists()
    else:
        helper = int(pidfile.read_text())
        time.sleep(0.5)
        with pytest.raises(ProcessLookupError):
            os.kill(helper, 0)
    assert scores["crash.md"] == 0 and "RuntimeError: boom" in s["crash.md"]["messages"]
    # In bubblewrap the time limits count the sandbox's own CPU time (dptutor.course.cputime), and say so.
    said = "went past its time limit of 8 s of CPU time" if SANDBOXED else "ran past the 8 s time limit"
    assert scores["loop.md"] == 0 and said in s["loop.md"]["messages"], s["loop.md"]["messages"]

    m = rows["mechanism"]["patched.md"]
    honest = {"mean_sensitivity": lambda m, k: k / m, "private_mean": per_coordinate}
    assert float(m["total"]) <= honest_total("mechanism", honest) and float(m["q2"]) == 0, m
    f = rows["audit"]["forged.md"]
    honest = {"verdicts": {"A": "violates", "B": "violates"},
              "evidence": {"A": AuditResult.from_counts([[10, 99_990], [99_990, 10]], n=2, epsilon=1.0, seed=1)} | {
                  "B": AuditResult.from_counts([[10, 99_990], [99_990, 10]], n=2, epsilon=1.0, seed=1)},
              "diagnosis": "l2", "justification": None}
    assert float(f["total"]) <= honest_total("audit", honest) and "does not reproduce" in f["messages"], f


# ---------------------------------------------------------------------------------------------
# Ctrl-C
# ---------------------------------------------------------------------------------------------


def grade_until(folder: Path, csv_path: Path, trigger, delay: float = 0.3) -> tuple[int, str, str]:
    """Run ``grade``, send SIGINT ``delay`` s after ``trigger(line)`` is true for a line of its output."""
    proc = subprocess.Popen([sys.executable, "-u", "-m", "dptutor", "grade", "sampler", str(folder), "--csv",
                             str(csv_path), *([] if SANDBOXED else ["--no-sandbox"])], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out = []
    for line in proc.stdout:
        out.append(line)
        if trigger(line):
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGINT)
            break
    rest, err = proc.communicate(timeout=120)
    return proc.returncode, "".join(out) + rest, err


#: How an interrupted ``grade`` ends: it returns 130 after its message, but when Ctrl-C lands while a
#: kernel starts, CPython sometimes still ends the process by SIGINT after that message (seen in 5 of
#: 12 runs at a 0.2 s delay; a shell shows both as status 130). Either way the interrupt is reported.
INTERRUPTED = (130, -signal.SIGINT)


def valid_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    from dptutor.course.scores import scores_header

    header = scores_header(ASSIGNMENTS["sampler"])  # file, q1-q3, total, messages, then the row's record
    assert rows[0] == header and header[:6] == ["file", "q1", "q2", "q3", "total", "messages"]
    assert all(len(r) == len(header) for r in rows)
    return rows[1:]


def test_sigint_keeps_every_finished_submission(tmp_path: Path) -> None:
    folder = tmp_path / "subs"
    folder.mkdir()
    names = [f"s{i}.md" for i in range(3)]
    for name in names:
        (folder / name).write_text((ASSIGNMENT_DIR / "sampler.md").read_text())
    csv_path = tmp_path / "scores.csv"
    # 1. While the first notebook is in flight: nothing finished, a valid (empty) CSV.
    code, out, err = grade_until(folder, csv_path, lambda line: line.startswith("grading s0.md"))
    assert code in INTERRUPTED and "interrupted: 0 submission(s) graded" in err and "Traceback" not in err, err
    assert valid_rows(csv_path) == []
    # 2. Just after the first result: it is in the CSV.
    code, out, err = grade_until(folder, csv_path, lambda line: line.startswith("s0.md:"))
    assert code in INTERRUPTED and "interrupted:" in err and "Traceback" not in err, err
    done = [r[0] for r in valid_rows(csv_path)]
    assert done[:1] == ["s0.md"] and len(done) == len(set(done))
    # 3. During the last notebook: every earlier one is in the CSV, none graded twice.
    code, out, err = grade_until(folder, csv_path, lambda line: line.startswith("grading s2.md"))
    assert code in INTERRUPTED and "Traceback" not in err, err
    assert [r[0] for r in valid_rows(csv_path)] == names[:2]
    assert "already in" in out
    # 4. A rerun finishes the rest and skips the graded ones.
    proc = run_cli("grade", "sampler", str(folder), "--csv", str(csv_path))
    assert proc.returncode == 0, proc.stderr
    assert "1 submission(s) graded" in proc.stdout
    rows = valid_rows(csv_path)
    assert [r[0] for r in rows] == names and all(float(r[4]) == 0 for r in rows)


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.2, 0.4, 0.6])
def test_sigint_while_a_kernel_starts_prints_no_traceback(tmp_path: Path, delay: float) -> None:
    # Ctrl-C while the kernel starts once left nbclient's clean-up task racing jupyter_client's start-up
    # future, and asyncio printed that task's traceback at exit (4 of 15 tries at these delays).
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "s0.md").write_text((ASSIGNMENT_DIR / "sampler.md").read_text())
    code, out, err = grade_until(folder, tmp_path / "scores.csv", lambda line: line.startswith("grading s0.md"), delay)
    assert code in INTERRUPTED and "interrupted: 0 submission(s) graded" in err, err
    assert "Traceback" not in err and "exception was never retrieved" not in err, err


@pytest.mark.parametrize("name", ["b.md", " \\b=.md"])
def test_a_submission_that_kills_the_grader_costs_only_itself(tmp_path: Path, name: str) -> None:
    # Only possible without the sandbox (inside it, the kernel's parent is the sandbox's init); the
    # crash marker must survive any file name (a leading space, a backslash).
    folder = tmp_path / "subs"
    folder.mkdir()
    blank = (ASSIGNMENT_DIR / "sampler.md").read_text()
    (folder / "a.md").write_text(blank)
    (folder / name).write_text(blank.replace("import numpy as np", KILL_PARENT + "import numpy as np", 1))
    csv_path = tmp_path / "scores.csv"
    first = run_cli("grade", "sampler", str(folder), "--csv", str(csv_path), "--no-sandbox")
    assert first.returncode == -signal.SIGKILL
    assert [r[0] for r in valid_rows(csv_path)] == [n for n in ["a.md"] if n < name]  # graded in name order
    second = run_cli("grade", "sampler", str(folder), "--csv", str(csv_path), "--no-sandbox")
    assert second.returncode == 0, second.stderr
    rows = {r[0]: r for r in valid_rows(csv_path)}
    assert sorted(rows) == sorted(["a.md", name])
    assert "stopped abruptly" in rows[name][5] and float(rows[name][4]) == 0


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (sudo apt-get install bubblewrap)")
def test_in_the_sandbox_killing_the_parent_kills_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "subs"
    folder.mkdir()
    blank = (ASSIGNMENT_DIR / "sampler.md").read_text()
    (folder / "a.md").write_text(blank)
    (folder / "b.md").write_text(blank.replace("import numpy as np", KILL_PARENT + "import numpy as np", 1))
    csv_path = tmp_path / "scores.csv"
    proc = run_cli("grade", "sampler", str(folder), "--csv", str(csv_path))
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r for r in valid_rows(csv_path)}
    assert sorted(rows) == ["a.md", "b.md"] and float(rows["b.md"][4]) == 0 and "not implemented" in rows["b.md"][5]


# ---------------------------------------------------------------------------------------------
# Gradescope: the otter-grader export (skipped unless the dptutor[otter] extra is installed)
# ---------------------------------------------------------------------------------------------


def otter_results(jobs: dict[str, tuple[Path, Path]], cwd: Path, env: dict[str, str]) -> dict[str, dict]:
    """``otter run`` of each ``label -> (submission, autograder zip)``, side by side, each into the folder
    ``cwd / f"run-{label}"`` (its output in ``otter-{label}.log``); label -> the results.json it wrote."""
    def start(label: str) -> subprocess.Popen:
        submission, autograder = jobs[label]
        out = cwd / f"run-{label}"
        with open(cwd / f"otter-{label}.log", "wb") as log:
            return subprocess.Popen([sys.executable, "-m", "otter", "run", "-a", str(autograder), "-o", str(out),
                                     str(submission)], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)

    runs = {label: start(label) for label in jobs}
    results = {}
    for label, proc in runs.items():
        proc.wait(timeout=600)
        result_file = cwd / f"run-{label}" / "results.json"
        log = (cwd / f"otter-{label}.log").read_text(errors="replace")
        if not result_file.is_file() and "Address already in use" in log:
            # Kernels started side by side can draw the same TCP ports (jupyter_client picks free ports, then
            # the kernel binds them: a known race between processes, never met on Gradescope, which grades one
            # submission per container). Only this failure is run again, alone.
            start(label).wait(timeout=600)
            log = (cwd / f"otter-{label}.log").read_text(errors="replace")
        assert result_file.is_file(), f"otter run of the {label} submission wrote no results:\n{log[-4000:]}"
        results[label] = json.loads(result_file.read_text())
    return results


def test_otter_export_is_self_contained_and_grades_correct_blank_and_looping_submissions(tmp_path: Path) -> None:
    """The export, through otter's own ``otter assign`` and ``otter run`` (offline): the autograder zip
    carries the dptutor wheel and its requirements install dptutor from there (no index); the grading
    runs on the dptutor installed from that wheel alone; students read dptutor's messages; the student
    notebook is plain Markdown; partial credit and the time limit work."""
    pytest.importorskip("otter", reason="the Gradescope export test needs otter-grader: pip install "
                                        "'dptutor[otter]' (.ci/run installs it, so CI runs this test)")
    import zipfile
    from importlib import metadata

    import nbformat
    import yaml

    otter = [sys.executable, "-m", "otter"]
    export = run_cli("export-otter", "sampler", str(tmp_path), "--time-limit", "5")
    assert export.returncode == 0, export.stderr
    wheels = list(tmp_path.glob("dptutor-*.whl"))
    assert len(wheels) == 1 and wheels[0].stat().st_size < 2_000_000, wheels
    subprocess.run([*otter, "assign", "sampler.ipynb", "dist"], cwd=tmp_path, check=True, capture_output=True,
                   timeout=300)
    zips = list((tmp_path / "dist" / "autograder").glob("*.zip"))
    assert len(zips) == 1
    unpacked = tmp_path / "source"  # what Gradescope unpacks to /autograder/source
    with zipfile.ZipFile(zips[0]) as zf:
        zf.extractall(unpacked)
    assert (unpacked / "files" / wheels[0].name).read_bytes() == wheels[0].read_bytes()
    pip_lines = next(d["pip"] for d in yaml.safe_load((unpacked / "environment.yml").read_text())["dependencies"]
                     if isinstance(d, dict))
    assert f"dptutor @ file:///autograder/source/files/{wheels[0].name}" in pip_lines
    for dep in ("numpy", "scipy", "sympy", "matplotlib", "tqdm"):
        assert f"{dep}=={metadata.version(dep)}" in pip_lines
    # The requirements resolve with no index at all here (the pins are installed; dptutor comes from the zip).
    requirements = tmp_path / "requirements-local.txt"
    requirements.write_text("\n".join(line.replace("/autograder/source", str(unpacked)) for line in pip_lines
                                      if not line.startswith("otter-grader")) + "\n")
    dry = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--disable-pip-version-check",
                          "-r", str(requirements)], capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    # Grade with the dptutor of the zip's wheel, not the repository's.
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--disable-pip-version-check", "--target", str(site), str(unpacked / "files" / wheels[0].name)],
                   check=True, capture_output=True, timeout=120)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import dptutor; print(dptutor.__file__)"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(site)), where.stdout
    student = nbformat.read(tmp_path / "dist" / "student" / "sampler.ipynb", as_version=4)
    text = json.dumps(student)
    assert "BEGIN SOLUTION" not in text and "np.where(lower" not in text
    markdown = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    assert "{admonition}" not in markdown and "{ref}`" not in markdown and "(assignment-sampler)=" not in markdown
    assert "> **Learning objectives**" in markdown
    looping = tmp_path / "looping.ipynb"
    for cell in student.cells:
        if cell.cell_type == "code" and "def laplace_inverse_cdf" in cell.source:
            # The student notebook shows dptutor's stub, as the book's student notebook does.
            assert '    raise NotImplementedError("Questions 1-3")' in cell.source and "    ..." not in cell.source
            cell.source = cell.source.replace('    raise NotImplementedError("Questions 1-3")', "    while True:\n        pass")
    nbformat.write(student, looping)
    # The looping notebook runs on a copy of the zip whose plugin allows 1 s (each of its six checks waits
    # out the limit); the other two on the exported zip (5 s). The three runs go side by side.
    quick = tmp_path / "quick.zip"
    with zipfile.ZipFile(zips[0]) as zf, zipfile.ZipFile(quick, "w") as out:
        for item in zf.infolist():
            data = zf.read(item)
            if item.filename == "otter_config.json":
                config = json.loads(data)
                (plugin,) = config["plugins"]
                assert plugin == {"dptutor.course.otter_plugin.TimeLimit": {"seconds": 5.0}}
                plugin["dptutor.course.otter_plugin.TimeLimit"]["seconds"] = 1.0
                data = json.dumps(config).encode()
            out.writestr(item, data)
    submissions = {"correct": (tmp_path / "dist" / "autograder" / "sampler.ipynb", zips[0]),
                   "blank": (tmp_path / "dist" / "student" / "sampler.ipynb", zips[0]), "looping": (looping, quick)}
    jobs = {}
    for label, (path, autograder) in submissions.items():
        (tmp_path / f"run-{label}").mkdir()
        jobs[label] = (tmp_path / f"run-{label}" / "submission.ipynb", autograder)
        shutil.copy(path, jobs[label][0])
    scores, outputs = {}, {}
    for label, results in otter_results(jobs, tmp_path, env).items():
        scores[label] = sum(t.get("score", 0) for t in results["tests"])
        outputs[label] = "\n".join(t.get("output", "") for t in results["tests"])
    print("otter scores:", scores)
    assert scores["correct"] == 4 and scores["blank"] == 0 and scores["looping"] == 0
    # The messages of dptutor's checks (the notebook's feedback and the grading report), not a bare assert.
    assert "AssertionError" not in outputs["blank"]
    assert "q1 (law of the samples): 0 / 2 points" in outputs["blank"]
    assert "not implemented yet: `laplace_inverse_cdf` still raises NotImplementedError" in outputs["blank"]
    assert "ran longer than 1 s (the grader's time limit)" in outputs["looping"]


def test_otter_export_of_a_course_grades_with_the_course_key(tmp_path: Path) -> None:
    """``export-otter pair_audit --course FOLDER`` through ``otter assign`` and ``otter run``: the course's
    answers score full even in a submission that deleted its ``use_course`` line (each hidden test
    selects the course with its key), and the self-study answer, right for the book's mystery, loses
    the true-epsilon point; the student notebook holds the token and never the key."""
    pytest.importorskip("otter", reason="the Gradescope export test needs otter-grader: pip install "
                                        "'dptutor[otter]' (.ci/run installs it, so CI runs this test)")

    import nbformat

    from dptutor.course.folders import new_course
    from dptutor.assignments.instances import SELF_STUDY

    course = new_course(tmp_path / "course", "a secret for the otter course run")
    truth = course.members["pair_audit"].true_epsilon
    public = SELF_STUDY["pair_audit"].true_epsilon
    assert abs(truth - public) > 0.2
    out = tmp_path / "out"
    export = run_cli("export-otter", "pair_audit", str(out), "--course", str(course.folder), "--time-limit", "120")
    assert export.returncode == 0, export.stderr
    otter = [sys.executable, "-m", "otter"]
    subprocess.run([*otter, "assign", "pair_audit.ipynb", "dist"], cwd=out, check=True, capture_output=True,
                   timeout=300)
    (zipped,) = (out / "dist" / "autograder").glob("*.zip")
    student = json.dumps(nbformat.read(out / "dist" / "student" / "pair_audit.ipynb", as_version=4))
    assert course.tokens["pair_audit"] in student and course.key not in student
    site = tmp_path / "site"
    (wheel,) = out.glob("dptutor-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--disable-pip-version-check", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=120)
    env = {**os.environ, "PYTHONPATH": str(site)}
    reference = nbformat.read(out / "dist" / "autograder" / "pair_audit.ipynb", as_version=4)
    jobs = {}
    for label, value in (("course", truth), ("self-study", public)):
        nb = nbformat.from_dict(json.loads(json.dumps(reference)))
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            lines = [line for line in cell.source.splitlines() if "use_course(" not in line]
            lines = [f"true_epsilon = {value!r}" if line.startswith("true_epsilon =") else line for line in lines]
            cell.source = "\n".join(lines)
        assert sum(c.source.count("true_epsilon = ") for c in nb.cells if c.cell_type == "code") >= 1
        run_dir = tmp_path / f"run-{label}"
        run_dir.mkdir()
        nbformat.write(nb, run_dir / "submission.ipynb")
        jobs[label] = (run_dir / "submission.ipynb", zipped)
    scores = {label: sum(t.get("score", 0) for t in results["tests"])
              for label, results in otter_results(jobs, tmp_path, env).items()}
    print("otter scores:", scores)
    assert scores["course"] == pytest.approx(5.0) and scores["self-study"] == pytest.approx(4.0), scores


def test_otter_export_with_a_given_wheel_pins_it_and_writes_plain_markdown(tmp_path: Path) -> None:
    """Without otter: ``--wheel`` ships the given wheel, ``requirements.txt`` installs it from the zip's
    files by a direct reference and pins its dependencies; no assignment's notebook keeps MyST markup."""
    import zipfile
    from importlib import metadata

    import nbformat

    from dptutor.course.otter import export_otter

    wheel = tmp_path / "dptutor-9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("dptutor/course/otter.py", "")
        zf.writestr("dptutor-9.9.dist-info/METADATA", "Name: dptutor\nVersion: 9.9\nRequires-Dist: numpy\n"
                                                       "Requires-Dist: scipy>=1\nRequires-Dist: dask; extra == 'x'\n")
    for name in sorted(ASSIGNMENTS):
        out = tmp_path / name
        target = export_otter(name, out, wheel=wheel)
        assert sorted(p.name for p in out.iterdir()) == sorted([target.name, wheel.name, "requirements.txt"])
        assert (out / "requirements.txt").read_text().splitlines() == [
            f"dptutor @ file:///autograder/source/files/{wheel.name}", f"numpy=={metadata.version('numpy')}",
            f"scipy=={metadata.version('scipy')}"]
        nb = nbformat.read(target, as_version=4)
        assert f"autograder_files:\n  - \"{wheel.name}\"" in nb.cells[0].source
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        for myst in ("```{", "{ref}`", "{doc}`", "{eq}`", ":class:"):
            assert myst not in markdown, (name, myst)
        assert not any(line.rstrip().endswith(")=") and line.startswith("(") for line in markdown.splitlines())
    run = run_cli("export-otter", "sampler", str(tmp_path / "bad"), "--wheel", str(tmp_path / "nope.whl"))
    assert run.returncode == 2 and "wheel:" in run.stderr and "Traceback" not in run.stderr


def test_the_otter_time_limit_never_fires_in_the_kernels_own_machinery() -> None:
    """The limit stops a cell's code and a limited check, but when it expires while the kernel itself runs
    (here: a ``post_execute`` hook, where matplotlib draws a cell's figures, that outlasts the limit), it
    waits for code
    that catches it, instead of raising where nothing does: that hung or killed the kernel, and otter
    then wrote no results for the submission."""
    import nbformat
    from nbclient import NotebookClient

    cells = [
        "from dptutor.course.otter import arm_time_limit\narm_time_limit(0.3)",
        "import time\ndef slow(*a):  # once, like drawing a figure after a cell\n"
        "    get_ipython().events.unregister('post_execute', slow)\n"
        "    time.sleep(0.6)\nget_ipython().events.register('post_execute', slow)",
        "x = 1",  # the limit expires in the hook above, after this code ended
        "while True:\n    pass",  # still stopped
        "import dptutor.course.otter as o\n"
        "print('limited:', o._limited(lambda: time.sleep(5)))\n"  # stopped, and the cell goes on
        "print('finished:', o._limited(lambda: 7))",
        "print('alive')",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, allow_errors=True, timeout=20, kernel_name="python3").execute()
    text = ["".join(o.get("text", "") + o.get("ename", "") + o.get("evalue", "") for o in cell.outputs)
            for cell in nb.cells]
    assert text[2] == "", text
    assert "TimeLimitExceeded" in text[3] and "ran longer than 0.3 s" in text[3], text
    assert "limited: None" in text[4] and "finished: 7" in text[4], text
    assert text[5].strip() == "alive", text
