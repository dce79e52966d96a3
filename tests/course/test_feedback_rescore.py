"""Feedback follows the score (issue 36): a re-scoring rewrites each student's feedback file from the
recorded checks, instructor notes go to the instructor's report only, and one course file configures
each assignment.  No kernel runs here: the rows are written as a grading run records them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dptutor.assignments import get_assignment
from dptutor.course.config import load_config
from dptutor.course.folders import new_course
from dptutor.course.reports import instructor_report_path, student_feedback
from dptutor.course.rescore import RescoreOptions, rescore
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, write_scores

SAMPLER = get_assignment("sampler")
NOTE = "for the instructor (not scored): calls the package instead of writing the code"


def _row(file: str, q1: float, *, note: bool = False, submitted: str = "") -> ScoreRecord:
    messages = {"q1": ["the sampler's law is wrong"] if q1 < 2 else [], "q2": [], "q3": []}
    if note:
        messages["q2"].append(NOTE)
    result = SubmissionResult(file, "sampler", {"q1": q1, "q2": 1.0, "q3": 1.0}, {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              messages)
    return ScoreRecord(result, "dp-2026", submitted=submitted)


@pytest.fixture
def graded(tmp_path: Path) -> dict:
    """A scores CSV of three rows as `grade` writes them, and stale feedback files."""
    csv_path = tmp_path / "scores-sampler.csv"
    rows = [_row("alice.md", 2.0, submitted="2026-03-02T23:00:00+00:00"),
            _row("bob.md", 1.0, note=True, submitted="2026-03-03T12:00:00+00:00"),
            _row("carol.md", 2.0, submitted="2026-03-05T12:00:00+00:00")]
    write_scores(csv_path, SAMPLER, rows)
    feedback = tmp_path / "feedback"
    feedback.mkdir()
    for r in rows:
        (feedback / f"{r.student}.txt").write_text("stale: 4/4\n", encoding="utf-8")
    return {"csv": csv_path, "feedback": feedback, "home": tmp_path}


def _header_total(text: str) -> str:
    return text.splitlines()[0].split(": ", 1)[1].split(" / ")[0]


def test_an_instructor_note_never_reaches_the_student() -> None:
    record = _row("bob.md", 1.0, note=True)
    text = student_feedback(record)
    assert "for the instructor" not in text and "calls the package" not in text, text
    assert "the sampler's law is wrong" in text


def test_a_late_policy_and_overrides_rewrite_every_feedback_file(graded: dict) -> None:
    home = graded["home"]
    (home / "grading.toml").write_text('course = "dp-2026"\n[late]\nmultiplier = 0.5\n'
                                       '[assignments.sampler]\ndeadline = 2026-03-03T00:00:00Z\n', encoding="utf-8")
    (home / "overrides.csv").write_text("student,question,score,reason\nalice,q3,0,copied the speed test\n",
                                        encoding="utf-8")
    new = rescore(RescoreOptions("sampler", graded["csv"], config=home / "grading.toml",
                                 overrides=home / "overrides.csv", feedback=graded["feedback"]))
    rows = {r.result.file: r for r in read_scores(graded["csv"], SAMPLER)}
    assert rows == {r.result.file: r for r in new}
    assert (rows["alice.md"].total, rows["bob.md"].total, rows["carol.md"].total) == (3.0, 1.5, 2.0)
    for r in rows.values():
        text = (graded["feedback"] / f"{r.student}.txt").read_text(encoding="utf-8")
        assert "stale" not in text and _header_total(text) == f"{r.total:g}", text
        assert "for the instructor" not in text
    assert "score set by the instructor: copied the speed test" in (graded["feedback"] / "alice.txt").read_text()
    assert "multiplied by 0.5" in (graded["feedback"] / "carol.txt").read_text()
    report = instructor_report_path(graded["csv"]).read_text(encoding="utf-8")
    assert "calls the package" in report and "bob.md" in report and "copied the speed test" in report


def test_rescoring_without_times_names_the_row(graded: dict) -> None:
    records = read_scores(graded["csv"], SAMPLER)
    write_scores(graded["csv"], SAMPLER, [_row(r.result.file, 2.0) for r in records])
    config = graded["home"] / "grading.toml"
    config.write_text('[late]\nmultiplier = 0.5\ndeadline = 2026-03-03T00:00:00Z\n', encoding="utf-8")
    with pytest.raises(ValueError, match="alice.md.*--submissions"):
        rescore(RescoreOptions("sampler", graded["csv"], config=config))


def test_the_rescore_command_rewrites_the_feedback(graded: dict, capsys: pytest.CaptureFixture) -> None:
    from dptutor.cli import main

    (graded["home"] / "o.csv").write_text("student,question,score,reason\nbob.md,q1,2,regraded by hand\n")
    code = main(["rescore", "sampler", "--csv", str(graded["csv"]), "--overrides", str(graded["home"] / "o.csv"),
                 "--feedback", str(graded["feedback"])])
    assert code == 0, capsys.readouterr()
    assert _header_total((graded["feedback"] / "bob.txt").read_text()) == "4"
    (graded["home"] / "o.csv").write_text("student,question,score,reason\nnobody,q1,2,who\n")
    code = main(["rescore", "sampler", "--csv", str(graded["csv"]), "--overrides", str(graded["home"] / "o.csv")])
    assert code == 2 and "'nobody' is no row" in capsys.readouterr().err


def test_one_course_file_configures_each_assignment(tmp_path: Path) -> None:
    path = tmp_path / "grading.toml"
    path.write_text('course = "dp"\n[late]\nmultiplier = 0.8\ngrace_minutes = 10\n'
                    '[assignments.sampler]\ndeadline = 2026-03-02T23:59:00Z\npoints = {q1 = 4}\n'
                    '[assignments.mechanism]\ndeadline = 2026-03-09T23:59:00Z\n'
                    '[assignments.mechanism.late]\nmultiplier = 0.5\n', encoding="utf-8")
    sampler, mechanism = load_config(path, SAMPLER), load_config(path, get_assignment("mechanism"))
    assert (sampler.deadline.day, sampler.multiplier, sampler.grace_minutes, sampler.points) == (2, 0.8, 10, {"q1": 4})
    assert (mechanism.deadline.day, mechanism.multiplier, mechanism.grace_minutes, mechanism.points) == (9, 0.5, 10, {})
    with pytest.raises(ValueError, match="late.deadline is required"):
        load_config(path, get_assignment("audit"))  # a policy, but no deadline for this assignment
    path.write_text('[assignments.nosuch]\ndeadline = 2026-03-02T23:59:00Z\n', encoding="utf-8")
    with pytest.raises(ValueError, match="assignments.nosuch"):
        load_config(path, SAMPLER)
    path.write_text('[assignments.sampler]\ndue = 2026-03-02T23:59:00Z\n', encoding="utf-8")
    with pytest.raises(ValueError, match="assignments.sampler.due"):
        load_config(path, SAMPLER)
    path.write_text('assignment = "sampler"\n[late]\ndeadline = 2026-03-02T23:59:00Z\nmultiplier = 0.9\n')
    assert load_config(path, SAMPLER).multiplier == 0.9  # the one-assignment format still works


def test_a_course_folder_keeps_git_out(tmp_path: Path) -> None:
    course = new_course(tmp_path / "dp-2026", "a course secret for the tests")
    assert (course.folder / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    load_config(course.config, SAMPLER)  # the commented example is valid TOML


def test_the_record_keeps_the_note_for_the_instructor(graded: dict) -> None:
    """The CSV row (the instructor's) keeps the note in its record; only the student's file drops it."""
    bob = next(r for r in read_scores(graded["csv"], SAMPLER) if r.result.file == "bob.md")
    assert NOTE in json.loads(bob.row(SAMPLER)[-1])["messages"]["q2"]


def test_grade_rewrites_the_feedback_of_rows_it_does_not_grade_again(graded: dict, capsys: pytest.CaptureFixture,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun of `grade` with a late policy (every submission already graded: no kernel starts) rewrites
    every feedback file, and the instructor's note goes to the instructor's report only."""
    from dptutor.cli import main

    home = graded["home"]
    subs = home / "submissions"
    subs.mkdir()
    for name in ("alice.md", "bob.md", "carol.md"):
        (subs / name).write_text("# a notebook\n", encoding="utf-8")
    (home / "times.csv").write_text("file,submitted\nalice.md,2026-03-02T23:00:00Z\nbob.md,2026-03-03T12:00:00Z\n"
                                    "carol.md,2026-03-05T12:00:00Z\n", encoding="utf-8")
    (home / "late.toml").write_text('course = "dp-2026"\n[late]\nmultiplier = 0.5\ntimes = "times.csv"\n'
                                    'deadline = 2026-03-03T00:00:00Z\n', encoding="utf-8")
    monkeypatch.chdir(home)
    code = main(["grade", "sampler", "submissions", "--csv", str(graded["csv"]), "--config", "late.toml",
                 "--feedback", str(graded["feedback"])])
    assert code == 0, capsys.readouterr()
    rows = {r.result.file: r for r in read_scores(graded["csv"], SAMPLER)}
    assert (rows["alice.md"].late, rows["bob.md"].late, rows["carol.md"].late) == (1.0, 0.5, 0.5)
    for r in rows.values():
        text = (graded["feedback"] / f"{r.student}.txt").read_text(encoding="utf-8")
        assert "stale" not in text and _header_total(text) == f"{r.total:g}" and "calls the package" not in text
    assert "calls the package" in instructor_report_path(graded["csv"]).read_text(encoding="utf-8")


def test_the_report_knows_every_note_the_assignments_mark_for_the_instructor():
    # The assignments mark instructor notes with feedback.INSTRUCTOR_NOTE; the feedback writer must hide
    # every such note from the student, whatever else it also treats as an instructor's note.
    from dptutor.assignments.feedback import INSTRUCTOR_NOTE, is_instructor_note as marked
    from dptutor.course.reports import is_instructor_note as hidden
    note = f"{INSTRUCTOR_NOTE}calls the package instead of writing the code"
    assert marked(note) and hidden(note)
    assert not hidden("graded by hand: pending") and not marked("graded by hand: pending")
