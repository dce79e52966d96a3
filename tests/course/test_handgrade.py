"""Hand grading with the course's rubric (issue 36): collect the answers graded by hand of the audit
assignment for a teaching assistant, fill in the points, read them back, and the scores CSV and every
feedback file agree.  The round trip grades two audit notebooks of a course (one module-scoped run);
the strict reading of the filled file is tested without kernels."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from dptutor.assignments import get_assignment
from dptutor.course.folders import new_course
from dptutor.course.handgrade import hand_questions, read_answers, read_hand_grades, rubrics
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores
from test_course_grading import run_cli, sandbox_flags

AUDIT = get_assignment("audit")
SECRET = "hand grading course secret"
OTHER = ("At n = 3 the candidates differ; the l2 candidate's loss lies inside the confidence interval of the "
         "mystery's loss <script>alert(1)</script> and the others do not. \u202eevil")


def _record(file: str) -> ScoreRecord:
    scores = {q.name: q.points for q in AUDIT.questions} | {"q4": 0.0}
    result = SubmissionResult(file, "audit", scores, {q.name: q.points for q in AUDIT.questions},
                              {"q4": ["graded by hand: the instructor reads your justification (40 words)"]})
    return ScoreRecord(result, "c")


def _filled(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["file", "student", "question", "max", "points", "reason"], *rows])
    return path


def test_the_audit_rubric_and_answers_are_read_without_running_anything(tmp_path: Path) -> None:
    assert hand_questions(AUDIT) == ["q4"]
    source, found = rubrics(AUDIT)
    assert source.name == "audit.md" and "0.25" in found["q4"] and found["q4"].startswith("Rubric")
    md = tmp_path / "a.md"
    md.write_text('```{code-cell} ipython3\n:tags: [x]\njustification = """\nsome text\n"""\n```\n'
                  "```{code-cell} ipython3\nx = (\n```\n", encoding="utf-8")
    assert read_answers(md, ["justification"]) == {"justification": "some text"}
    md.write_text("```{code-cell} ipython3\n---\ntags: [x]\n---\njustification = 'yaml options'\n```\n", encoding="utf-8")
    assert read_answers(md, ["justification"]) == {"justification": "yaml options"}
    nb = tmp_path / "b.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["justification = ' '.join(\n", "['a'])"],
                                         "metadata": {}, "outputs": [], "execution_count": None}],
                              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    assert "not a plain string" in read_answers(nb, ["justification"])["justification"]


@pytest.mark.parametrize("row, column", [
    (["mallory.md", "mallory", "q4", "1", "1", "ok"], "file"),
    (["alice.md", "bob", "q4", "1", "1", "ok"], "student"),
    (["alice.md", "alice", "q9", "1", "1", "ok"], "question"),
    (["alice.md", "alice", "q4", "1", "one", "ok"], "points"),
    (["alice.md", "alice", "q4", "1", "nan", "ok"], "points"),
    (["alice.md", "alice", "q4", "1", "1.5", "ok"], "points"),
    (["alice.md", "alice", "q4", "1", "-0.25", "ok"], "points"),
    (["alice.md", "alice", "q4", "1", "0.5", ""], "reason"),
])
def test_a_filled_file_is_read_strictly(tmp_path: Path, row: list[str], column: str) -> None:
    path = _filled(tmp_path / "h.csv", [["alice.md", "alice", "q4", "1", "", ""], row])
    with pytest.raises(ValueError, match=f"line 3, column {column}:"):
        read_hand_grades(path, "audit", [_record("alice.md")])


def test_blank_rows_keep_the_graders_score(tmp_path: Path) -> None:
    path = _filled(tmp_path / "h.csv", [["alice.md", "alice", "q4", "1", "", ""],
                                        ["'=bob.md", "'=bob", "q4", "1", "0.75", "good"]])
    (got,) = read_hand_grades(path, "audit", [_record("alice.md"), _record("=bob.md")])
    assert (got.student, got.question, got.score, got.reason) == ("=bob.md", "q4", 0.75, "good")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A course, two audit submissions (the course's solution, and the same with another justification),
    graded with --course and --feedback."""
    home = tmp_path_factory.mktemp("handgrade")
    course = new_course(home / "course", SECRET)
    solution = (course.folder / "private" / "instructor" / "audit.md").read_text(encoding="utf-8")
    start = solution.index('justification = """') + len('justification = """')
    other = solution[:start] + "\n" + OTHER + "\n" + solution[solution.index('"""', start):]
    subs = home / "submissions"
    subs.mkdir()
    (subs / "alice.md").write_text(solution, encoding="utf-8")
    (subs / "bob.md").write_text(other, encoding="utf-8")
    proc = run_cli("grade", "audit", "submissions", "--course", "course", "--csv", "scores-audit.csv",
                   "--feedback", "feedback", *sandbox_flags(), cwd=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"home": home, "course": course}


def test_the_hand_grading_round_trip(graded: dict) -> None:
    home = graded["home"]
    proc = run_cli("handgrade", "collect", "audit", "submissions", "--csv", "scores-audit.csv", "--course", "course",
                   "--out", "hand", cwd=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (home / "hand" / "handgrade-audit.html").read_text(encoding="utf-8")
    assert "the candidates differ" in page and "At n = 3 and n = 8 the four candidates" in page  # both answers
    assert "&lt;script&gt;" in page and "<script>" not in page and "\u202e" not in page and "\\u202e" in page
    assert "0.25: it names a dimension" in page  # the rubric of the course's instructor notebook
    with open(home / "hand" / "handgrade-audit.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["file"], r["question"], r["max"], r["points"]) for r in rows] == [
        ("alice.md", "q4", "1", ""), ("bob.md", "q4", "1", "")]
    rows[0].update(points="1", reason="all four rubric items")
    rows[1].update(points="0.5", reason="no sampling error, no second candidate ruled out")
    with open(home / "hand" / "filled.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (home / "overrides.csv").write_text("student,question,score,reason\nbob,q1,0,copied\nbob,q4,0,old\n")
    proc = run_cli("handgrade", "apply", "audit", "hand/filled.csv", "--csv", "scores-audit.csv", "--course", "course",
                   "--overrides", "overrides.csv", "--feedback", "feedback", cwd=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = {r.result.file: r for r in read_scores(home / "scores-audit.csv", AUDIT,
                                                      course=graded["course"].identifier)}
    assert records["alice.md"].final_scores()["q4"] == 1 and records["bob.md"].final_scores()["q4"] == 0.5
    assert records["bob.md"].final_scores()["q1"] == 0  # the earlier override stays; its old q4 is replaced
    assert "bob,q4,0,old" not in (home / "overrides.csv").read_text()
    for file, record in records.items():
        text = (home / "feedback" / file.replace(".md", ".txt")).read_text(encoding="utf-8")
        assert text.splitlines()[0] == f"{file}: {record.total:g} / {sum(record.question_points().values()):g} points"
        q4 = text.split("\nq4: ", 1)[1]
        assert q4.startswith(f"{record.final_scores()['q4']:g} / 1") and "pending" not in q4, text
    assert "score set by the instructor: all four rubric items" in (home / "feedback" / "alice.txt").read_text()
    # A filled file with an unknown student is refused before anything is written.
    before = (home / "scores-audit.csv").read_bytes()
    _filled(home / "bad.csv", [["mallory.md", "mallory", "q4", "1", "1", "x"]])
    proc = run_cli("handgrade", "apply", "audit", "bad.csv", "--csv", "scores-audit.csv", "--course", "course",
                   "--overrides", "overrides.csv", cwd=home)
    assert proc.returncode == 2 and "line 2, column file" in proc.stderr
    assert (home / "scores-audit.csv").read_bytes() == before
