"""A semester walked through the real batch grader (issue 36): 43 submissions of four assignments, in
the Canvas and Moodle download layouts, graded for a course with ``--workers 2 --feedback``; then a
late policy and an override are applied by ``rescore`` and the grades exported for both LMSs.

Each submission is the course's student notebook (``release/<assignment>.md`` of a course made by
``python -m dptutor course new``) with one code cell appended, the file
``semester/<assignment>-<name>.txt`` (a blank submission appends nothing; ``audit-no_use_course`` also
deletes the notebook's ``use_course(...)`` line).  ``semester/roster.csv`` says how each arrives:
Canvas's ``lastfirst[_LATE]_<id>_<attachment>_<assignment>.md`` or Moodle's
``<Full Name>_<number>_assignsubmission_file_/<assignment>.md``, and how many hours after its
assignment's deadline it was submitted (the course's late policy: 15 minutes' grace, then x 0.8).
The course's configuration sets ``carry_forward = true`` for ``mechanism`` and an 8 s cell limit for
``sampler``.  The override: the audit's hand-graded justification (q4) of ``audit-correct``, read by
hand and given its point.

The rubric's arithmetic (the rubric tables of the instructor notebooks), per submission, before the
late multiplier.  Where the rubric's tables leave a case open, the rule applied is: a question whose checks
run past the cell limit, or that a crash stops, is not graded and scores 0; a ``ValueError`` counts as a
refusal whoever raises it (numpy's own, for a negative scale or a 1-D array, too); output that is not
well formed leaves nothing to audit (selection q2 scores 0); calling the package or drawing from the exact
law earns what the outputs earn, with a note for the instructor, who decides (an override).

============================  ============  ============================================================================
submission                    scores        why (the rubric)
============================  ============  ============================================================================
sampler-correct               2, 1, 1       every finding passes
sampler-correct_eq5           2, 1, 1       Eq. (5) branch by branch is as right; 26 h late: total x 0.8
sampler-wrong_scale           0, 1, 1       both law tests fail, so monotone earns nothing; 6 min late: in the grace
sampler-ignores_mu            0, 0.92, 1    law fails at mu != 0; u = 1/2 does not give mu (12 of 13)
sampler-cauchy_law            0, 1, 1       another law, though increasing: no law point
sampler-memo_loop             2, 1, 0.8     a memoised loop: `loop` in place of `speed` (4 of 5)
sampler-for_loop              2, 1, 0.8     a Python loop: `loop` fails (4 of 5)
sampler-no_domain_check       2, 0.08, 1    only valid input passes (1 of 13)
sampler-atleast_1d            2, 1, 0.4     a number in gives an array of one: `scalar` x3 fails (2 of 5)
sampler-infinite_loop         0, 0, 0       every check runs past the 8 s cell limit: a question not graded scores 0
sampler-crash                 0, 0, 0       the kernel dies: nothing graded
sampler-blank                 0, 0, 0       the stubs are in place
mechanism-correct             1, 2, 1       every finding passes
mechanism-correct_late        1, 2, 1       20 h late: total x 0.8
mechanism-one_coordinate      0.25, 2, 1    Delta = 1/m is right only at k = 1 (1 of 4); carried forward into q2, noted
mechanism-gaussian            1, 0, 1       Gaussian noise: both law findings fail
mechanism-noise_tiny          1, 0, 1       noise 1000x too small with the right sensitivity: nothing to carry forward
mechanism-returns_list        1, 2, 0.92    a list for an array: `shape` fails (11 of 12)
mechanism-no_validation       1, 2, 0.42    no checks: 5 of 12 (numpy's own ValueError for epsilon < 0 and 1-D X counts)
mechanism-same_noise          1, 0, 1       one draw for every coordinate: both law findings fail
mechanism-global_rng          1, 2, 0.92    np.random, not rng: `rng` fails (11 of 12)
mechanism-epsilon_times       1, 0, 1       scale Delta * epsilon: both law findings fail
mechanism-clips               1, 2, 0.83    clips instead of refusing: above_one, below_zero fail (10 of 12)
mechanism-crash               0, 0, 0       the kernel dies: nothing graded
selection-correct             2, 2, 2       every finding passes
selection-correct_late        2, 2, 2       30 h late: total x 0.8
selection-no_threshold_noise  1.33, 0, 2    the law fails (2 of 3), the audit flags it
selection-shared_noise        1.33, 0, 2    the classic bug (one query noise for all): law fails, audit flags it
selection-package             2, 2, 2       calls dptutor.selection: outputs are right; noted for the instructor
selection-exact_law           2, 2, 2       draws from the exact law: outputs are right; noted for the instructor
selection-loop                2, 2, 2       a loop over the runs is allowed
selection-first_index         0, 0, 2       malformed rows end q1 at 0; the audit of q2 cannot run on them
selection-rnm_small_noise     2, 2, 0.67    noise 1/(4 epsilon): law and audit fail (1 of 3)
selection-rnm_argmin          2, 2, 1.33    argmin: law fails (2 of 3), still private
selection-crash               0, 0, 0       the kernel dies: nothing graded
selection-blank               0, 0, 0       the stubs are in place
audit-correct                 2, 2, 1, 1    q4 (pending) given 1 by the override
audit-contradicting_verdict   1, 2, 1, 0    A: wrong verdict, so no agreement either: 2 of 4
audit-wrong_diagnosis         2, 2, 0, 0    l2 is not the course's bug
audit-no_use_course           1.5, 2, 1, 0  A's evidence is of the book's mystery: its replay fails (3 of 4)
audit-weak_evidence           1, 2, 1, 0    n = 1 only: wrong verdict on A; agreeing with weak evidence earns nothing
audit-crash                   0, 0, 0, 0    the kernel dies: nothing graded
audit-blank                   0, 0, 0, 0    nothing answered
============================  ============  ============================================================================
"""
from __future__ import annotations

import concurrent.futures
import csv
import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT
from dptutor.assignments import ASSIGNMENTS
from dptutor.course.reports import feedback_files, instructor_report_path

SEMESTER = Path(__file__).parent / "semester"
SANDBOX_FLAGS = [] if shutil.which("bwrap") else ["--no-sandbox"]
SECRET = "a long course secret for the semester walk"
ORDER = ("sampler", "mechanism", "selection", "audit")
DEADLINES = {"sampler": "2026-03-02T23:59:00Z", "mechanism": "2026-03-09T23:59:00Z",
             "selection": "2026-03-16T23:59:00Z", "audit": "2026-03-23T23:59:00Z"}

#: submission -> the scores the rubric gives, question by question (before the late multiplier).
EXPECTED: dict[str, tuple[float, ...]] = {
    "sampler-correct": (2, 1, 1),
    "sampler-correct_eq5": (2, 1, 1),
    "sampler-wrong_scale": (0, 1, 1),
    "sampler-ignores_mu": (0, 0.92, 1),
    "sampler-cauchy_law": (0, 1, 1),
    "sampler-memo_loop": (2, 1, 0.8),
    "sampler-for_loop": (2, 1, 0.8),
    "sampler-no_domain_check": (2, 0.08, 1),
    "sampler-atleast_1d": (2, 1, 0.4),
    "sampler-infinite_loop": (0, 0, 0),
    "sampler-crash": (0, 0, 0),
    "sampler-blank": (0, 0, 0),
    "mechanism-correct": (1, 2, 1),
    "mechanism-correct_late": (1, 2, 1),
    "mechanism-one_coordinate": (0.25, 2, 1),
    "mechanism-gaussian": (1, 0, 1),
    "mechanism-noise_tiny": (1, 0, 1),
    "mechanism-returns_list": (1, 2, 0.92),
    "mechanism-no_validation": (1, 2, 0.42),
    "mechanism-same_noise": (1, 0, 1),
    "mechanism-global_rng": (1, 2, 0.92),
    "mechanism-epsilon_times": (1, 0, 1),
    "mechanism-clips": (1, 2, 0.83),
    "mechanism-crash": (0, 0, 0),
    "selection-correct": (2, 2, 2),
    "selection-correct_late": (2, 2, 2),
    "selection-no_threshold_noise": (1.33, 0, 2),
    "selection-shared_noise": (1.33, 0, 2),
    "selection-package": (2, 2, 2),
    "selection-exact_law": (2, 2, 2),
    "selection-loop": (2, 2, 2),
    "selection-first_index": (0, 0, 2),
    "selection-rnm_small_noise": (2, 2, 0.67),
    "selection-rnm_argmin": (2, 2, 1.33),
    "selection-crash": (0, 0, 0),
    "selection-blank": (0, 0, 0),
    "audit-correct": (2, 2, 1, 1),
    "audit-contradicting_verdict": (1, 2, 1, 0),
    "audit-wrong_diagnosis": (2, 2, 0, 0),
    "audit-no_use_course": (1.5, 2, 1, 0),
    "audit-weak_evidence": (1, 2, 1, 0),
    "audit-crash": (0, 0, 0, 0),
    "audit-blank": (0, 0, 0, 0),
}

#: The submissions whose record carries a note for the instructor (never in the student's file).
NOTED = {"mechanism-one_coordinate", "selection-package", "selection-exact_law"}


def roster() -> list[dict[str, str]]:
    lines = [line for line in (SEMESTER / "roster.csv").read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    return list(csv.DictReader(lines))


def arrival(row: dict[str, str]) -> str:
    """The submission's path inside its assignment's download folder, as its LMS names it."""
    assignment = row["submission"].split("-")[0]
    if row["layout"] == "moodle":
        return f"{row['name']}_{row['id']}_assignsubmission_file_/{assignment}.md"
    last_first = "".join(reversed(row["name"].lower().split()))
    late = "_LATE" if float(row["late_hours"]) > 0.25 else ""
    return f"{last_first}{late}_{row['id']}_{700 + len(row['submission'])}_{assignment}.md"


def notebook(row: dict[str, str], folder: Path, *, release: bool = True) -> str:
    """The submitted notebook: the student notebook in ``folder`` (a course's ``release/``, or the book's
    assignments with ``release=False``) with the submission's answer cell appended."""
    name = row["submission"]
    text = ((folder / "release" if release else folder) / f"{name.split('-')[0]}.md").read_text(encoding="utf-8")
    if name == "audit-no_use_course":
        text = "\n".join(line for line in text.splitlines() if "use_course(" not in line) + "\n"
    answer = SEMESTER / f"{name}.txt"
    if answer.exists():
        text += "\n```{code-cell} ipython3\n" + answer.read_text(encoding="utf-8").rstrip() + "\n```\n"
    return text


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "dptutor", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def table(path: Path, key: str) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {row[key]: row for row in csv.DictReader(fh)}


GRADING = """course = "dp-2026"
[assignments.sampler]
limits = {cell = 8}
[assignments.mechanism]
carry_forward = true
"""


@pytest.fixture(scope="module")
def semester(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The semester graded, then rescored with the late policy and the override."""
    home = tmp_path_factory.mktemp("semester")
    course = home / "dp-2026"
    cli("course", "new", str(course), "--secret", SECRET, "--name", "dp-2026", cwd=home)
    key = (course / "private" / "answer-key.toml").read_text(encoding="utf-8")
    assert 'broken = "A"' in key and 'diagnosis = "sensitivity-1"' in key, key  # what the audit answers assume
    (course / "grading.toml").write_text(GRADING, encoding="utf-8")
    rows = roster()
    times = ["file,submitted"]
    for row in rows:
        assignment = row["submission"].split("-")[0]
        path = home / f"downloads-{assignment}" / arrival(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(notebook(row, course), encoding="utf-8")
        deadline = dt_parse(DEADLINES[assignment])
        submitted = deadline - 3600 if float(row["late_hours"]) == 0 else deadline + 3600 * float(row["late_hours"])
        times.append(f"{arrival(row)},{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(submitted))}")
    (course / "times.csv").write_text("\n".join(times) + "\n", encoding="utf-8")
    started = time.monotonic()

    def grade(a: str) -> None:
        cli("grade", a, f"downloads-{a}", "--course", str(course), "--workers", "2", "--feedback", f"feedback-{a}",
            "--csv", f"scores-{a}.csv", *SANDBOX_FLAGS, cwd=home)

    # The sampler (whose infinite loop spends three cell limits) is graded beside the three others, one after
    # another, as two instructors' terminals would: the time limits count each sandbox's own CPU time.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(grade, ORDER[0]), pool.submit(lambda: [grade(a) for a in ORDER[1:]])]
        for run in runs:
            run.result()
    graded = time.monotonic() - started
    print(f"graded {len(rows)} submissions with --workers 2 in {graded:.0f} s")
    # The late policy, added to the course's file after grading, and one override.
    policy = "".join(f"[assignments.{a}.late]\ndeadline = {d}\n" for a, d in DEADLINES.items())
    (course / "grading.toml").write_text(GRADING.replace("[assignments.sampler]", "[late]\nmultiplier = 0.8\n"
                                                         "grace_minutes = 15\ntimes = \"times.csv\"\n"
                                                         "[assignments.sampler]", 1) + policy, encoding="utf-8")

    (home / "overrides.csv").write_text("student,question,score,reason\n"
                                        f"{arrival(by_name(rows)['audit-correct'])},q4,1,justification read by hand\n",
                                        encoding="utf-8")
    def rescore_and_export(a: str) -> None:
        extra = ["--overrides", "overrides.csv"] if a == "audit" else []
        cli("rescore", a, "--csv", f"scores-{a}.csv", "--course", str(course), "--feedback", f"feedback-{a}",
            "--submissions", f"downloads-{a}", *extra, cwd=home)
        lms = "moodle" if a in ("mechanism", "audit") else "canvas"
        cli("export-lms", lms, a, f"scores-{a}.csv", f"{lms}-{a}.csv", cwd=home)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # each assignment's files are its own
        for done in [pool.submit(rescore_and_export, a) for a in ORDER]:
            done.result()
    return {"home": home, "course": course, "rows": rows, "seconds": graded}


def by_name(rows: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {row["submission"]: row for row in rows}


def multiplier(row: dict[str, str]) -> float:
    return 0.8 if float(row["late_hours"]) * 60 > 15 else 1.0


def dt_parse(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()




def test_the_fixture_is_the_table() -> None:
    rows = roster()
    assert len(rows) == 43 and {r["submission"] for r in rows} == set(EXPECTED)
    assert {p.stem for p in SEMESTER.glob("*.txt")} == {n for n in EXPECTED if not n.endswith("-blank")}
    for name, scores in EXPECTED.items():
        assert len(scores) == len(ASSIGNMENTS[name.split("-")[0]].questions), name


@pytest.mark.parametrize("assignment", ORDER)
def test_every_submission_gets_the_rubrics_score(semester: dict, assignment: str) -> None:
    """Per question (the override included), the total with the late multiplier, and the feedback file's total."""
    home, questions = semester["home"], ASSIGNMENTS[assignment].questions
    scores = table(home / f"scores-{assignment}.csv", "file")
    ours = {arrival(r): r for r in semester["rows"] if r["submission"].startswith(f"{assignment}-")}
    assert sorted(scores) == sorted(ours)
    names = feedback_files(scores)
    wrong = {}
    for file, row in scores.items():
        name = ours[file]["submission"]
        got = tuple(float(row[q.name]) for q in questions)
        total = round(sum(EXPECTED[name]) * multiplier(ours[file]), 2)
        if got != tuple(round(x, 2) for x in EXPECTED[name]) or abs(float(row["total"]) - total) > 0.011:
            wrong[name] = (got, row["total"], row["messages"])  # reported with the grader's messages, below
            continue
        assert float(row["late"]) == multiplier(ours[file]), name
        text = (home / f"feedback-{assignment}" / names[file]).read_text(encoding="utf-8")
        assert text.splitlines()[0].endswith(f": {float(row['total']):g} / {row['max']} points"), (name, text[:200])
        assert "for the instructor" not in text and "not scored): calls" not in text, (name, text)
        assert ("for the instructor (not scored)" in row["messages"]) == (name in NOTED), (name, row["messages"])
    assert not wrong, wrong


def test_notes_go_to_the_instructors_report_only(semester: dict) -> None:
    reports = "".join(instructor_report_path(semester["home"] / f"scores-{a}.csv").read_text(encoding="utf-8")
                      for a in ORDER)
    for name in NOTED:
        row = by_name(semester["rows"])[name]
        assert f"(student {row['id']})" in reports, name
    assert "justification read by hand" in reports


def test_crashes_time_limits_and_mistakes_are_named(semester: dict) -> None:
    home = semester["home"]
    for row in semester["rows"]:
        name, assignment = row["submission"], row["submission"].split("-")[0]
        file = arrival(row)
        text = (home / f"feedback-{assignment}" / feedback_files([file])[file]).read_text(encoding="utf-8")
        if name.endswith("-crash"):
            assert "Kernel died" in text, text
        if name.endswith("-infinite_loop"):
            assert "time limit of 8 s" in text and "KeyboardInterrupt" not in text, text
        if name == "mechanism-gaussian":  # named as Gaussian, not as noise that is Laplace only when pooled
            assert "is it Gaussian noise?" in text and "only when" not in text, text
        if name == "sampler-cauchy_law":  # another law, not a scale to fix
            assert "the shape is not Laplace" in text and "multiplies the logarithm" not in text, text
        if name == "audit-no_use_course":
            assert "`use_course(...)` line is missing" in text, text


def test_the_lms_exports_carry_the_ids(semester: dict) -> None:
    home = semester["home"]
    for a in ORDER:
        scores = table(home / f"scores-{a}.csv", "file")
        ours = [r for r in semester["rows"] if r["submission"].startswith(f"{a}-")]
        if a in ("mechanism", "audit"):
            export = table(home / f"moodle-{a}.csv", "Identifier")
            assert sorted(export) == sorted(f"Participant {r['id']}" for r in ours)
            for r in ours:
                line = export[f"Participant {r['id']}"]
                assert (line["Full name"], float(line["Grade"])) == (r["name"], float(scores[arrival(r)]["total"]))
        else:
            export = table(home / f"canvas-{a}.csv", "ID")
            assert sorted(export) == sorted(r["id"] for r in ours)
            for r in ours:
                assert float(export[r["id"]][f"{ASSIGNMENTS[a].title} ({a})"]) == float(scores[arrival(r)]["total"])


def test_without_carry_forward_one_wrong_sensitivity_also_costs_q2(tmp_path: Path) -> None:
    """The row the course above does not grade: ``carry_forward = false`` (the default) for the same
    submission gives 0.25, 0, 1: the noise is judged against the right sensitivity, and no note is made."""
    from dptutor.course import executor

    path = tmp_path / "mechanism.md"
    row = by_name(roster())["mechanism-one_coordinate"]
    path.write_text(notebook(row, ROOT / "book" / "assignments", release=False), encoding="utf-8")
    result = executor.grade_notebook(path, "mechanism", sandbox=None if shutil.which("bwrap") else "none", timeout=120)
    assert tuple(result.scores[q.name] for q in ASSIGNMENTS["mechanism"].questions) == (0.25, 0, 1), result.messages
    assert not [m for ms in result.messages.values() for m in ms if "for the instructor" in m], result.messages


@pytest.mark.parametrize(("name", "question", "function", "score"), [
    ("mechanism-epsilon_times", "q2", "private_mean", 0.0),  # right only at epsilon = 1: never drawn
    ("sampler-ignores_mu", "q1", "laplace_inverse_cdf", 0.0),  # right only at mu = 0: mu kept >= b / 2 from 0
])
def test_a_mistake_invisible_at_one_parameter_is_never_graded_there(name: str, question: str, function: str,
                                                                    score: float) -> None:
    """Grading draws its parameters afresh; over 20 grading seeds (before the fix, 5 of them drew
    epsilon = 1 for ``mechanism`` and 2 a mu close to 0 for ``sampler``) the mistake always costs the question."""
    from dptutor.assignments import check

    namespace: dict = {"np": np}
    exec((SEMESTER / f"{name}.txt").read_text(encoding="utf-8"), namespace)
    scores = {seed: check(name.split("-")[0], question, namespace[function], grading_seed=seed).score
              for seed in range(2, 22)}
    assert set(scores.values()) == {score}, scores


@pytest.mark.parametrize(("name", "hint"), [("sampler-cauchy_law", "the shape is not Laplace"),
                                             ("sampler-wrong_scale", "check how b multiplies the logarithm")])
def test_a_wrong_law_is_told_from_a_wrong_scale(name: str, hint: str) -> None:
    """A Cauchy sampler was told to "check how b multiplies the logarithm"; the quartiles now tell a
    Laplace law of another scale from another law."""
    from dptutor.assignments import check

    namespace: dict = {"np": np}
    exec((SEMESTER / f"{name}.txt").read_text(encoding="utf-8"), namespace)
    for seed in range(2, 7):
        text = " ".join(check("sampler", "q1", namespace["laplace_inverse_cdf"], grading_seed=seed).messages)
        other = {"the shape is not Laplace", "check how b multiplies the logarithm"} - {hint}
        assert hint in text and other.pop() not in text, text
