"""Hostile instructor-side files: nesting too deep for the parsers, and symbolic links where outputs go.

A file whose JSON or TOML nests deeper than Python's recursion limit is refused with a ValueError naming
the file (not a RecursionError, which the command line would show as a traceback), and the hand-grading
files are written atomically: a symbolic link where an output (or its temporary file) goes is replaced,
never written through to a file outside the folder the instructor named.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from dptutor.assignments.registry import get_assignment
from dptutor.course.config import load_config
from dptutor.course.folders import load_course
from dptutor.course.handgrade import apply, collect
from dptutor.course.reports import write_feedback, write_instructor_report
from dptutor.course.rescore import RescoreOptions
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, scores_header, write_scores

AUDIT = get_assignment("audit")
MECHANISM = get_assignment("mechanism")
DEEP = 100_000


def _audit_record(file: str) -> ScoreRecord:
    points = {q.name: q.points for q in AUDIT.questions}
    return ScoreRecord(SubmissionResult(file, "audit", points | {"q4": 0.0}, points, {}), "c")


@pytest.mark.parametrize("name, text", [
    ("deep.json", "[" * DEEP),
    ("deep.toml", "a = " + "[" * DEEP),
    ("inline.toml", "a = " + "{b = " * DEEP),
    ("digits.json", '{"points": {"q1": ' + "9" * 5000 + "}}"),
])
def test_a_config_nested_too_deep_is_a_value_error_naming_it(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"{name} is not valid"):
        load_config(path, MECHANISM)


def test_a_scores_record_nested_too_deep_is_a_value_error_naming_the_line(tmp_path: Path) -> None:
    header = scores_header(MECHANISM)
    cells = ["alice.ipynb"] + ["0"] * (len(header) - 2) + ["[" * DEEP]
    cells[header.index("assignment")] = "mechanism"
    path = tmp_path / "scores.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, cells])
    with pytest.raises(ValueError, match=r"scores\.csv line 2 \(alice\.ipynb\) is corrupted"):
        read_scores(path, MECHANISM)


def test_a_course_key_nested_too_deep_is_a_value_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "answer-key.toml").write_text("key = " + "[" * DEEP, encoding="utf-8")
    with pytest.raises(ValueError, match="answer-key.toml is not valid TOML"):
        load_course(tmp_path)


def test_collect_replaces_a_link_where_its_outputs_go(tmp_path: Path) -> None:
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    out.mkdir()
    (subs / "alice.md").write_text("x = 1\n", encoding="utf-8")
    outside = tmp_path / "outside.csv"
    outside.write_text("PRECIOUS\n", encoding="utf-8")
    (out / "handgrade-audit.csv").symlink_to(outside)
    (out / "handgrade-audit.html").symlink_to(outside)
    page, table = collect("audit", subs, [_audit_record("alice.md")], out)
    assert outside.read_text(encoding="utf-8") == "PRECIOUS\n"
    assert not table.is_symlink() and table.read_text(encoding="utf-8").startswith("file,student,question")
    assert not page.is_symlink() and "<" in page.read_text(encoding="utf-8")
    assert sorted(p.name for p in out.iterdir()) == ["handgrade-audit.csv", "handgrade-audit.html"]


def test_apply_never_writes_through_a_link_at_a_temporary_name(tmp_path: Path) -> None:
    scores = tmp_path / "scores-audit.csv"
    write_scores(scores, AUDIT, [_audit_record("alice.md")])
    filled = tmp_path / "filled.csv"
    filled.write_text("file,student,question,max,points,reason\nalice.md,alice,q4,1,0.5,half\n", encoding="utf-8")
    overrides = tmp_path / "ov.csv"
    outside = tmp_path / "elsewhere" / "outside.csv"
    outside.parent.mkdir()
    outside.write_text("PRECIOUS\n", encoding="utf-8")
    (tmp_path / ".ov.csv.tmp").symlink_to(outside)  # the temporary file's name before the fix
    apply(filled, RescoreOptions("audit", scores, overrides=overrides))
    assert outside.read_text(encoding="utf-8") == "PRECIOUS\n"
    assert not overrides.is_symlink() and "alice.md,q4,0.5,half" in overrides.read_text(encoding="utf-8")
    assert os.stat(overrides).st_mode & 0o644 == 0o644
    assert read_scores(scores, AUDIT)[0].final_scores()["q4"] == 0.5


def test_feedback_and_the_report_never_write_through_a_link_at_a_temporary_name(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "outside.txt"
    outside.parent.mkdir()
    outside.write_text("PRECIOUS\n", encoding="utf-8")
    folder = tmp_path / "feedback"
    folder.mkdir()
    (folder / ".alice.txt.tmp").symlink_to(outside)  # the temporary files' names before the fix
    (tmp_path / ".scores-audit-instructor.md.tmp").symlink_to(outside)
    record = _audit_record("alice.md")
    target = write_feedback(folder, "alice.txt", record)
    report = write_instructor_report(tmp_path / "scores-audit.csv", AUDIT, [record])
    assert outside.read_text(encoding="utf-8") == "PRECIOUS\n"
    assert not target.is_symlink() and "alice.md" in target.read_text(encoding="utf-8")
    assert not report.is_symlink() and report.read_text(encoding="utf-8").startswith("# For the instructor")


def test_a_config_that_is_a_fifo_or_too_large_is_refused_without_reading_it(tmp_path: Path) -> None:
    # load_config read the whole file: a FIFO blocked forever and /dev/zero exhausted memory.
    assignment = get_assignment("sampler")
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="regular file"):
        load_config(fifo, assignment)
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * 200_000, encoding="utf-8")
    with pytest.raises(ValueError, match="at most 1 MiB"):
        load_config(big, assignment)


def test_a_column_given_twice_is_refused_naming_it(tmp_path: Path) -> None:
    # csv.DictReader kept the last of two equal columns: an override's second score column silently won.
    from dptutor.course.config import read_manifest, read_overrides
    from dptutor.course.handgrade import read_hand_grades

    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,question,score,reason,score\nalice,q1,1,late fix,0\n", encoding="utf-8")
    with pytest.raises(ValueError, match="score twice"):
        read_overrides(overrides, get_assignment("sampler"))
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("file,submitted,file\na.md,2026-01-01T00:00:00+00:00,b.md\n", encoding="utf-8")
    with pytest.raises(ValueError, match="file twice"):
        read_manifest(manifest)
    hand = tmp_path / "handgrade-sampler.csv"
    hand.write_text("file,student,question,max,points,reason,points\n", encoding="utf-8")
    with pytest.raises(ValueError, match="points twice"):
        read_hand_grades(hand, "sampler", [])


def test_config_and_scores_read_through_a_link_but_never_block(tmp_path: Path, monkeypatch) -> None:
    # Both are read with intake.read_regular, which checks the open file: a link to a regular file is
    # followed, a device or a folder is refused naming path, and a scores file over the cap is not read.
    import dptutor.course.scores as scores_module

    sampler = get_assignment("sampler")
    (tmp_path / "real.toml").write_text('course = "dp"\n', encoding="utf-8")
    (tmp_path / "link.toml").symlink_to(tmp_path / "real.toml")
    assert load_config(tmp_path / "link.toml", sampler).course == "dp"
    result = SubmissionResult("alice.md", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []})
    write_scores(tmp_path / "real.csv", sampler, [ScoreRecord(result, "dp")])
    (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
    assert [r.result.file for r in read_scores(tmp_path / "link.csv", sampler)] == ["alice.md"]
    for bad in (Path("/dev/zero"), tmp_path):
        with pytest.raises(ValueError, match="^path: .*regular file"):
            read_scores(bad, sampler)
        with pytest.raises(ValueError, match="^path: .*regular file"):
            load_config(bad, sampler)
    with pytest.raises(ValueError, match="^path: .* does not exist"):
        read_scores(tmp_path / "missing.csv", sampler)
    monkeypatch.setattr(scores_module, "MAX_SCORES_BYTES", 64)
    with pytest.raises(ValueError, match="more than the limit"):
        read_scores(tmp_path / "real.csv", sampler)
