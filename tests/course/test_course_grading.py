"""The instructor's grading path (book/instructors/grading.md), walked on a small folder of mixed layouts.

One module-scoped run grades three sampler submissions (a flat correct notebook, a partial one in
Moodle's one-folder-per-student layout, a blank one) with ``--workers 2``, a grading configuration
(points, late policy from a manifest) and a course; then the tests check the CSV, regrade one student
with ``--only`` (the row comes back identical: same scores, messages and grading seeds), override one
score, export to Canvas and Moodle, and check that files of another assignment, corrupted files and
folders the grader cannot read are refused, never overwritten.  Each notebook is graded once, the
regraded one twice.  The configuration, override and identifier rules are also tested without kernels.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT
from dptutor.assignments import get_assignment
from dptutor.course.config import GradingConfig, Override, load_config, read_manifest, read_overrides
from dptutor.course.lms import lms_rows
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, write_scores
from dptutor.course.submissions import find_submissions, student_identity

SANDBOXED = shutil.which("bwrap") is not None
SAMPLER = get_assignment("sampler")
BOB = "Bob Lee_4242_assignsubmission_file_"


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "dptutor", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=env)


def run_here(*args: str, cwd: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """``python -m dptutor ARGS`` in this process (for the runs that start no kernel): code, stdout, stderr."""
    from dptutor.cli import main

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def sandbox_flags() -> list[str]:
    return [] if SANDBOXED else ["--no-sandbox"]


def table(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["file"]: row for row in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The grading page's path up to the first grading run, shared by the tests below."""
    home = tmp_path_factory.mktemp("course")
    solution = (ROOT / "book" / "assignments" / "instructor" / "sampler.md").read_text(encoding="utf-8")
    stub = (ROOT / "book" / "assignments" / "sampler.md").read_text(encoding="utf-8")
    partial = solution.replace("    lower = u < 0.5\n", "    b = b / 2  # the wrong scale\n    lower = u < 0.5\n", 1)
    assert partial != solution
    subs = home / "submissions"
    (subs / BOB).mkdir(parents=True)
    (subs / "alice.md").write_text(solution, encoding="utf-8")
    (subs / BOB / "sampler.md").write_text(partial, encoding="utf-8")
    (subs / "carol.md").write_text(stub, encoding="utf-8")
    (subs / ".ipynb_checkpoints").mkdir()
    (subs / ".ipynb_checkpoints" / "alice-checkpoint.md").write_text(stub, encoding="utf-8")
    (subs / "notes.pdf").write_bytes(b"%PDF")
    (home / "times.csv").write_text("student,submitted\nalice,2026-03-02T23:50:00Z\n"
                                    "4242,2026-03-03T09:00:00+01:00\ncarol,2026-03-03T00:10:00Z\n")
    (home / "grading.toml").write_text('assignment = "sampler"\ncourse = "dp-2026"\n[points]\nq1 = 4\n'
                                       '[limits]\ncell = 60\nnotebook = 300\n'
                                       '[late]\ndeadline = 2026-03-02T23:59:00Z\ngrace_minutes = 15\n'
                                       'multiplier = 0.8\ntimes = "times.csv"\n')
    started = time.monotonic()
    proc = run_cli("grade", "sampler", "submissions", "--workers", "2", "--config", "grading.toml",
                   "--feedback", "feedback", *sandbox_flags(), cwd=home)
    seconds = time.monotonic() - started
    print(f"graded 3 submissions with --workers 2 in {seconds:.1f} s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"home": home, "subs": subs, "csv": home / "scores-sampler.csv", "first": proc,
            "rows": table(home / "scores-sampler.csv")}


def test_a_mixed_folder_is_graded_with_two_workers(course: dict) -> None:
    rows, out = course["rows"], course["first"].stdout
    assert sorted(rows) == sorted(["alice.md", f"{BOB}/sampler.md", "carol.md"])  # checkpoints, pdf ignored
    alice, bob, carol = rows["alice.md"], rows[f"{BOB}/sampler.md"], rows["carol.md"]
    assert [alice["student"], bob["student"], carol["student"]] == ["alice", "4242", "carol"]
    assert {r["assignment"] for r in rows.values()} == {"sampler"} and {r["course"] for r in rows.values()} == {"dp-2026"}
    # Configured points: q1 is worth 4 (the assignment's own 2, rescaled), 6 in all.
    assert (alice["q1"], alice["q2"], alice["q3"], alice["total"], alice["max"]) == ("4", "1", "1", "6", "6")
    # Bob's sampler has the wrong scale: q1 lost, the domain checks and the speed kept; he is late (8:00 UTC).
    assert float(bob["q1"]) < 4 and (bob["q2"], bob["q3"]) == ("1", "1") and bob["late"] == "0.8"
    assert float(bob["total"]) == pytest.approx(round((float(bob["q1"]) + 2) * 0.8, 2))
    # Carol is 11 minutes late: inside the 15-minute grace period. Her blank notebook scores 0.
    assert carol["late"] == "1" and carol["total"] == "0" and "not implemented" in carol["messages"]
    for r in rows.values():
        seeds = json.loads(r["record"])["grading_seeds"]
        assert sorted(seeds) == ["q1", "q2", "q3"] and all(isinstance(v, int) and v >= 2 for v in seeds.values())
    # Progress: k of N, an estimate, and a summary.
    assert "[1 of 3, " in out and "[3 of 3, " in out and "left]" in out, out
    assert "summary: 3 row(s); mean " in out and "1 zero" in out and "0 notebook(s) failed" in out, out
    assert sorted(p.name for p in (course["home"] / "feedback").iterdir()) == sorted(
        ["alice.txt", f"{BOB}-sampler.txt", "carol.txt"])
    # The student's report scores as the CSV does: configured points, and the late multiplier.
    report = (course["home"] / "feedback" / f"{BOB}-sampler.txt").read_text(encoding="utf-8")
    assert report.splitlines()[0].endswith(" / 6 points") and "q1: " in report and " / 4" in report
    assert f"multiplied by 0.8, giving {bob['total']}" in report, report


def test_regrading_one_student_reproduces_the_row(course: dict) -> None:
    """--only by student identifier: graded alone (serially), with the grading seeds saved in the row."""
    home, before = course["home"], course["rows"]
    proc = run_cli("grade", "sampler", "submissions", "--only", "4242", "--config", "grading.toml",
                   *sandbox_flags(), cwd=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "grading 1 submission(s)" in proc.stdout and "[1 of 1, " in proc.stdout
    after = table(course["csv"])
    assert list(after) == list(before)  # the row is replaced in place, the others untouched
    assert after == before  # scores, messages, grading seeds: the whole row


def test_a_scores_file_written_before_the_rename_reads_and_regrades_the_same(course: dict) -> None:
    """A CSV whose records name the grading seeds ``hidden`` (as before they had their name) reads as
    the same records, and ``--only`` regrades its row with those seeds: the rows come back identical."""
    path, before = course["csv"], course["rows"]
    new = read_scores(path, SAMPLER)
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    for row in rows[1:]:
        data = json.loads(row[-1])
        data["hidden"] = data.pop("grading_seeds")
        row[-1] = json.dumps(data, sort_keys=True, ensure_ascii=True, allow_nan=False)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    assert all("hidden" in json.loads(r["record"]) for r in table(path).values())
    assert read_scores(path, SAMPLER) == new
    proc = run_cli("grade", "sampler", "submissions", "--only", "4242", "--config", "grading.toml",
                   *sandbox_flags(), cwd=course["home"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert table(path) == before  # same scores, messages and seeds, now under grading_seeds


def test_an_override_is_applied_and_recorded(course: dict, tmp_path: Path, capsys, monkeypatch) -> None:
    home = course["home"]
    work = tmp_path / "scores.csv"
    shutil.copy(course["csv"], work)
    (home / "overrides.csv").write_text('student,question,score,reason\nalice,q3,0.5,"copied the loop, says so"\n'
                                        "nobody,q1,1,typo\n")
    code, out, err = run_here("grade", "sampler", "submissions", "--config", "grading.toml", "--csv", str(work),
                              "--overrides", "overrides.csv", *sandbox_flags(), cwd=home, capsys=capsys,
                              monkeypatch=monkeypatch)
    assert code == 0, err
    assert "0 submission(s) graded" in out and "'nobody' is no submission here" in err
    rows = table(work)
    alice = rows["alice.md"]
    assert (alice["q3"], alice["total"]) == ("0.5", "5.5")
    assert alice["overrides"] == "q3: 1 -> 0.5 (copied the loop, says so)"
    assert {k: v for k, v in rows.items() if k != "alice.md"} == {k: v for k, v in course["rows"].items() if k != "alice.md"}
    # A later run without --overrides keeps the row's overrides.
    code, out, err = run_here("grade", "sampler", "submissions", "--config", "grading.toml", "--csv", str(work),
                              *sandbox_flags(), cwd=home, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and table(work)["alice.md"]["overrides"] == alice["overrides"], err


def test_export_to_canvas_and_moodle(course: dict, tmp_path: Path, capsys, monkeypatch) -> None:
    home = course["home"]
    code, out, err = run_here("export-lms", "canvas", "sampler", str(course["csv"]), str(tmp_path / "canvas.csv"),
                              "--column", "Sampler (1234)", cwd=home, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "3 student(s)" in out, err
    with open(tmp_path / "canvas.csv", newline="", encoding="utf-8") as fh:
        canvas = list(csv.reader(fh))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Sampler (1234)"]
    bob_total = course["rows"][f"{BOB}/sampler.md"]["total"]
    assert sorted(canvas[1:]) == sorted([["alice", "", "alice", "", "", "6"], ["Bob Lee", "", "4242", "", "", bob_total],
                                         ["carol", "", "carol", "", "", "0"]])
    # Moodle needs participant numbers: the flat files have none, and the export says so.
    code, out, err = run_here("export-lms", "moodle", "sampler", str(course["csv"]), str(tmp_path / "moodle.csv"),
                              cwd=home, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 2 and "alice.md is not in Moodle's download layout" in err
    assert not (tmp_path / "moodle.csv").exists()
    only_bob = tmp_path / "bob.csv"
    write_scores(only_bob, SAMPLER, [r for r in read_scores(course["csv"], SAMPLER) if r.student == "4242"])
    rows = lms_rows("moodle", "sampler", only_bob, out_of=100)
    assert rows[0][:4] == ["Identifier", "Full name", "Grade", "Maximum Grade"] and "Last modified (grade)" in rows[0]
    assert rows[1][:4] == ["Participant 4242", "Bob Lee", f"{round(float(bob_total) / 6 * 100, 2):g}", "100"]


def test_files_that_cannot_mix_are_refused(course: dict, tmp_path: Path, capsys, monkeypatch) -> None:
    home, scores = course["home"], course["csv"]
    before = scores.read_bytes()
    # Another assignment into this assignment's file: refused before anything runs, naming the file.
    proc = run_cli("grade", "mechanism", "submissions", "--csv", str(scores), "--regrade", *sandbox_flags(), cwd=home)
    assert proc.returncode == 2 and str(scores) in proc.stderr and "'sampler'" in proc.stderr, proc.stderr
    # Another course.
    code, out, err = run_here("grade", "sampler", "submissions", "--course", "other", *sandbox_flags(), cwd=home,
                              capsys=capsys, monkeypatch=monkeypatch)
    assert code == 2 and "course 'dp-2026'" in err, err
    assert scores.read_bytes() == before
    # Neither --course nor --config: the file keeps its course (and its points, late multipliers).
    copy = tmp_path / "copy.csv"
    copy.write_bytes(before)
    code, out, err = run_here("grade", "sampler", "submissions", "--csv", str(copy), *sandbox_flags(), cwd=home,
                              capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "3 submission(s) already in" in out and copy.read_bytes() == before, err
    # A score edited by hand, a truncated file: corrupted, refused, left as it is.
    for damage in (lambda t: t.replace("alice.md,4,", "alice.md,3,", 1), lambda t: t[: len(t) // 2]):
        broken = tmp_path / "broken.csv"
        broken.write_text(damage(before.decode("utf-8")), encoding="utf-8")
        kept = broken.read_bytes()
        code, out, err = run_here("grade", "sampler", "submissions", "--csv", str(broken), "--config", "grading.toml",
                                  *sandbox_flags(), cwd=home, capsys=capsys, monkeypatch=monkeypatch)
        assert code == 2 and "corrupted" in err, err
        assert broken.read_bytes() == kept


def test_folders_the_grader_cannot_read_are_refused(tmp_path: Path, capsys, monkeypatch) -> None:
    (tmp_path / "empty").mkdir()
    two = tmp_path / "two" / "Ann_7_assignsubmission_file_"
    two.mkdir(parents=True)
    (two / "a.ipynb").write_text("{}")
    (two / "b.ipynb").write_text("{}")
    (tmp_path / "zipped").mkdir()
    (tmp_path / "zipped" / "submissions.zip").write_bytes(b"PK")
    for folder, expected in (("empty", "holds no submission"), ("two", "holds 2 notebooks (a.ipynb, b.ipynb)"),
                             ("zipped", "unzip submissions.zip first")):
        code, out, err = run_here("grade", "sampler", folder, *sandbox_flags(), cwd=tmp_path, capsys=capsys,
                                  monkeypatch=monkeypatch)
        assert code == 2 and expected in err, err
    assert not (tmp_path / "scores-sampler.csv").exists()


def test_an_interrupt_with_two_workers_keeps_the_finished_rows(tmp_path: Path) -> None:
    """Ctrl-C while two notebooks run: exit 130, a valid CSV with the one that finished, no sandbox left."""
    stub = (ROOT / "book" / "assignments" / "sampler.md").read_text(encoding="utf-8")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.md").write_text(stub, encoding="utf-8")
    slow = stub.replace("import numpy as np", "import time; time.sleep(300)\nimport numpy as np", 1)
    (subs / "b.md").write_text(slow, encoding="utf-8")
    (subs / "c.md").write_text(slow, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stale = set(leaked_workdirs())  # left by runs killed earlier on this machine: not this test's
    proc = subprocess.Popen([sys.executable, "-u", "-m", "dptutor", "grade", "sampler", "subs", "--workers", "2",
                             *sandbox_flags()], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    lines = []
    for line in proc.stdout:  # a.md finishes while b.md sleeps; then c.md starts and sleeps too
        lines.append(line)
        if line.startswith("grading c.md"):
            break
    time.sleep(1.0)
    ours = own_workdirs(proc.pid)  # the work folders of b.md and c.md, in flight
    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C reaches the whole process group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(lines) + out + err
    assert "interrupted: 1 submission(s) graded" in err and "Traceback" not in err, err
    rows = read_scores(tmp_path / "scores-sampler.csv", SAMPLER)
    assert [r.result.file for r in rows] == ["a.md"]
    assert not (tmp_path / ".scores-sampler.csv.inflight").exists()
    assert set(leaked_workdirs()) <= stale, leaked_workdirs()  # each worker killed its sandbox and removed its folder
    assert ours and not [f for f in ours if f.exists()], ours  # (else the parent did, once the worker had exited)


def own_workdirs(parent: int) -> list[Path]:
    """The work folders of the grader ``parent`` and of its worker processes (their names carry the pid)."""
    from dptutor.course.workdirs import workdir_parent as _workdir_parent

    found = []
    for folder in Path(_workdir_parent()).glob("dptutor-grade-*-*"):
        pid = folder.name.split("-")[2]
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(pid) == parent or stat[stat.rfind(")") + 2:].split()[1] == str(parent):
            found.append(folder)
    return found


def leaked_workdirs() -> list[str]:
    """Work folders of grading processes that no longer exist (another user's live run is not a leak)."""
    from dptutor.course.workdirs import workdir_parent as _workdir_parent

    leaked = []
    for folder in Path(_workdir_parent()).glob("dptutor-grade-*-*"):
        pid = folder.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            leaked.append(folder.name)
    return leaked


# ---------------------------------------------------------------------------------------------
# the rules, without kernels
# ---------------------------------------------------------------------------------------------


def test_student_identifiers_follow_the_documented_rule() -> None:
    assert student_identity("Jane Smith_12345_assignsubmission_file_/sampler.ipynb") == ("12345", "Jane Smith", "moodle")
    assert student_identity("smithjane_67890_1112_sampler.ipynb") == ("67890", "smithjane", "canvas")
    assert student_identity("smithjane_LATE_67890_1112_sampler-1.ipynb") == ("67890", "smithjane", "canvas")
    assert student_identity("alice.ipynb") == ("alice", "alice", "plain")
    assert student_identity("s1234567/work.md") == ("s1234567", "s1234567", "plain")
    with pytest.raises(ValueError, match="name"):
        student_identity("")


def test_layouts(tmp_path: Path) -> None:
    (tmp_path / "z.ipynb").write_text("{}")
    (tmp_path / "Ann_7_assignsubmission_file_").mkdir()
    (tmp_path / "Ann_7_assignsubmission_file_" / "x.md").write_text("")
    (tmp_path / "Ann_7_assignsubmission_file_" / "readme.txt").write_text("")
    found = find_submissions(tmp_path)
    assert [(s.name, s.student) for s in found] == [("Ann_7_assignsubmission_file_/x.md", "7"), ("z.ipynb", "z")]
    (tmp_path / "deep" / "inner").mkdir(parents=True)
    (tmp_path / "deep" / "inner" / "y.md").write_text("")
    with pytest.raises(ValueError, match="deep/ holds no notebook at its top level"):
        find_submissions(tmp_path)


def test_the_configuration_is_validated_naming_the_key(tmp_path: Path) -> None:
    good = tmp_path / "g.toml"
    good.write_text('[late]\ndeadline = 2026-03-02T23:59:00+01:00\ngrace_minutes = 60\nmultiplier = 0.5\nper_day = true\n')
    config = load_config(good, SAMPLER)
    deadline = dt.datetime(2026, 3, 2, 22, 59, tzinfo=dt.timezone.utc)
    assert config.late_factor(deadline + dt.timedelta(minutes=60)) == 1.0          # inside the grace period
    assert config.late_factor(deadline + dt.timedelta(minutes=61)) == 0.5          # first day late
    assert config.late_factor(deadline + dt.timedelta(days=1, minutes=61)) == 0.25  # second day
    as_json = tmp_path / "g.json"
    as_json.write_text(json.dumps({"points": {"q2": 3}, "limits": {"cell": 30}}))
    config = load_config(as_json, SAMPLER)
    assert config.question_points(SAMPLER) == {"q1": 2.0, "q2": 3.0, "q3": 1.0} and config.cell_timeout == 30
    for text, key in (('[late]\ndeadline = 2026-03-02T23:59:00\nmultiplier = 0.5\n', "late.deadline"),
                      ('[late]\ndeadline = 2026-03-02T23:59:00Z\nmultiplier = 1.5\n', "late.multiplier"),
                      ('[late]\ndeadline = 2026-03-02T23:59:00Z\n', "late.multiplier"),
                      ('[late]\ndeadline = 2026-03-02T23:59:00Z\nmultiplier = 0.5\ntimes = "nope.csv"\n', "late.times"),
                      ('[points]\nq9 = 1\n', "points.q9"), ('[points]\nq1 = "two"\n', "points.q1"),
                      ('[limits]\ncell = 0\n', "limits.cell"), ('graceminutes = 3\n', "config.graceminutes"),
                      ('carry_forward = true\n', "carry_forward"), ('assignment = "audit"\n', "assignment"),
                      ('points = [\n', "not valid TOML")):
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises((ValueError, TypeError), match=key.replace(".", r"\.")):
            load_config(bad, SAMPLER)


def test_overrides_and_manifests_are_validated(tmp_path: Path) -> None:
    path = tmp_path / "o.csv"
    path.write_text("student,question,score,reason\nalice,q1,1.5,fair\n")
    assert read_overrides(path, SAMPLER) == [Override("alice", "q1", 1.5, "fair")]
    for line, message in (("alice,q7,1,x", "question 'q7'"), ("alice,q1,3,x", r"outside \[0, 2\]"),
                          ("alice,q1,one,x", "not a number"), ("alice,q1,1,", "reason is empty"),
                          ("alice,q1", "line 2")):
        path.write_text(f"student,question,score,reason\n{line}\n")
        with pytest.raises(ValueError, match=message):
            read_overrides(path, SAMPLER)
    path.write_text("student,question,score,reason\nalice,q1,3,fair\n")  # q1 is worth 4 under this config
    assert read_overrides(path, SAMPLER, GradingConfig(points={"q1": 4.0})) == [Override("alice", "q1", 3.0, "fair")]
    manifest = tmp_path / "m.csv"
    manifest.write_text("file,submitted\na.md,2026-03-02T10:00:00Z\n")
    assert read_manifest(manifest) == {"a.md": dt.datetime(2026, 3, 2, 10, tzinfo=dt.timezone.utc)}
    manifest.write_text("file,submitted\na.md,2026-03-02 10:00\n")
    with pytest.raises(ValueError, match="no time zone"):
        read_manifest(manifest)


def test_score_rows_round_trip_and_refuse_edits(tmp_path: Path) -> None:
    result = SubmissionResult("=cmd.md", "sampler", {"q1": 1.0, "q2": 1.0, "q3": 0.0}, {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q3": ["slow\nloop"]}, grading_seeds={"q1": 5, "q2": 6, "q3": 7})
    record = ScoreRecord(result, "c1", {"q1": 4.0}, "2026-03-02T10:00:00+00:00", 0.8,
                         (Override("=cmd", "q3", 0.5, "by hand"),))
    path = tmp_path / "s.csv"
    write_scores(path, SAMPLER, [record])
    assert read_scores(path, SAMPLER, course="c1") == [record]
    with pytest.warns(DeprecationWarning, match="use grading_seeds"):
        assert result.hidden == result.grading_seeds == {"q1": 5, "q2": 6, "q3": 7}
    row = table(path)["'=cmd.md"]
    assert (row["q1"], row["q3"], row["total"], row["max"]) == ("2", "0.5", "2.8", "6")  # (2 + 1 + 0.5) * 0.8
    with pytest.raises(ValueError, match="course 'c1'"):
        read_scores(path, SAMPLER, course="c2")
    with pytest.raises(ValueError, match="'sampler'"):
        read_scores(path, get_assignment("audit"))
