"""The grader looks at every path it is given once, and never with a traceback.

A path the grader is given (a folder, an output file, the instructor's tables) was looked at with
``Path.exists``/``is_file``/``is_dir`` and then used: under a folder that cannot be searched those raise
``PermissionError`` (Python 3.11: EACCES is not "missing"), a traceback instead of a ``ValueError`` naming
the parameter (or the command-line option) and the path; and a file removed or written between the look
and the read gave a wrong error, or lost the instructor's rows.  A followed link that loops said "a
symbolic link, not a file".  Running as root, EACCES is made by patching the ``os`` calls.
"""

from __future__ import annotations

import errno
import os
import pathlib
import re
from pathlib import Path

import pytest

from dptutor.assignments.registry import get_assignment
from dptutor.course.config import load_config, read_overrides
from dptutor.course.intake import MissingFile, look_named, read_named
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, write_scores
from dptutor.course.textsafe import csv_cell, csv_document

SAMPLER = get_assignment("sampler")
AUDIT = get_assignment("audit")


def _lock(monkeypatch: pytest.MonkeyPatch, folder: Path, *, itself: bool = False,
          calls: tuple[str, ...] = ("stat", "lstat", "open", "listdir", "scandir")) -> None:
    """Make the ``os`` calls on paths under ``folder`` (and on ``folder`` itself with ``itself``) fail with EACCES,
    as for a folder the grader cannot search (root ignores the permission bits)."""
    top = os.fspath(folder)

    def refused(path: object) -> bool:
        if not isinstance(path, (str, os.PathLike)):
            return False
        text = os.fspath(path)
        return text.startswith(top + os.sep) or (itself and text == top)

    for name in calls:
        real = getattr(os, name)

        def fake(path: object, *args: object, _real: object = real, **kwargs: object) -> object:
            if refused(path):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, fake)


def _pretend(monkeypatch: pytest.MonkeyPatch, method: str, path: Path, answer: bool) -> None:
    """``Path.<method>()`` answers ``answer`` for ``path`` (a file removed or made between a check and its use)."""
    real = getattr(pathlib.Path, method)
    monkeypatch.setattr(pathlib.Path, method, lambda self, *a, **k: answer if self == path else real(self, *a, **k))


def _audit_scores(tmp_path: Path) -> tuple[Path, list[ScoreRecord]]:
    points = {q.name: q.points for q in AUDIT.questions}
    records = [ScoreRecord(SubmissionResult(f, "audit", points | {"q4": 0.0}, points, {}), "c")
               for f in ("alice.md", "bob.md")]
    scores = tmp_path / "scores-audit.csv"
    write_scores(scores, AUDIT, records)
    return scores, records


def _filled(tmp_path: Path, record: ScoreRecord) -> Path:
    from dptutor.course.handgrade import HANDGRADE_COLUMNS

    filled = tmp_path / "handgrade-audit.csv"
    filled.write_text(csv_document([HANDGRADE_COLUMNS, [csv_cell(record.result.file), csv_cell(record.student), "q4",
                                                        "1", "1", "well argued"]]), encoding="utf-8")
    return filled


def _sampler_scores(path: Path) -> Path:
    result = SubmissionResult("alice.md", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []})
    write_scores(path, SAMPLER, [ScoreRecord(result, "")])
    return path


# ---------------------------------------------------------------------------------------------
# 1. the instructor's files are read once: the overrides (handgrade apply), the scores file (rescore)
# ---------------------------------------------------------------------------------------------


def test_read_overrides_takes_a_missing_file_as_none_when_asked(tmp_path: Path) -> None:
    assert read_overrides(tmp_path / "none.csv", AUDIT, missing_ok=True) == []
    with pytest.raises(MissingFile, match="does not exist"):
        read_overrides(tmp_path / "none.csv", AUDIT)
    os.mkfifo(tmp_path / "fifo.csv")
    with pytest.raises(ValueError, match="not a regular file"):  # absent is only absent
        read_overrides(tmp_path / "fifo.csv", AUDIT, missing_ok=True)


def test_handgrade_apply_keeps_overrides_written_between_a_check_and_the_read(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # apply asked overrides.exists() and read the file only if so: an overrides file that appeared after the
    # look (or one the look could not see) was overwritten with the new hand grades alone, the earlier rows lost.
    from dptutor.course.handgrade import apply
    from dptutor.course.rescore import RescoreOptions

    scores, records = _audit_scores(tmp_path)
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,question,score,reason\nbob.md,q4,1,an earlier decision\n", encoding="utf-8")
    _pretend(monkeypatch, "exists", overrides, False)
    apply(_filled(tmp_path, records[0]), RescoreOptions("audit", csv=scores, overrides=overrides))
    kept = {(o.student, o.reason) for o in read_overrides(overrides, AUDIT)}
    assert kept == {("bob.md", "an earlier decision"), ("alice.md", "well argued")}


def test_handgrade_apply_takes_an_overrides_file_removed_after_a_check_as_none(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from dptutor.course.handgrade import apply
    from dptutor.course.rescore import RescoreOptions

    scores, records = _audit_scores(tmp_path)
    overrides = tmp_path / "overrides.csv"
    _pretend(monkeypatch, "exists", overrides, True)  # seen, then removed: before, "does not exist"
    apply(_filled(tmp_path, records[0]), RescoreOptions("audit", csv=scores, overrides=overrides))
    assert [o.student for o in read_overrides(overrides, AUDIT)] == ["alice.md"]


def test_handgrade_apply_names_filled_for_a_missing_or_unreadable_file(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from dptutor.course.handgrade import apply
    from dptutor.course.rescore import RescoreOptions

    scores, _ = _audit_scores(tmp_path)
    options = RescoreOptions("audit", csv=scores, overrides=tmp_path / "o.csv")
    with pytest.raises(ValueError, match=f"^filled: the hand grades {re.escape(str(tmp_path / 'no.csv'))} does not exist"):
        apply(tmp_path / "no.csv", options)
    locked = tmp_path / "locked"
    locked.mkdir()
    _lock(monkeypatch, locked)
    with pytest.raises(ValueError, match=r"^filled: .*locked/h\.csv .*Permission denied"):
        apply(locked / "h.csv", options)


def test_rescore_reads_the_scores_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rescore asked options.csv.is_file() and then read it: a file removed in between was the reader's error,
    # not "no such scores file"; a scores file under a folder that cannot be searched was a PermissionError.
    from dptutor.course.rescore import RescoreOptions, rescore

    missing = tmp_path / "gone.csv"
    _pretend(monkeypatch, "is_file", missing, True)
    with pytest.raises(ValueError, match=f"^--csv {re.escape(str(missing))}: no such scores file$"):
        rescore(RescoreOptions("sampler", missing))
    locked = tmp_path / "locked"
    locked.mkdir()
    _lock(monkeypatch, locked)
    with pytest.raises(ValueError, match=r"scores file .*locked/s\.csv .*Permission denied"):
        rescore(RescoreOptions("sampler", locked / "s.csv"))


def test_rescore_takes_a_course_configuration_removed_after_a_check_as_none(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from dptutor.course.folders import new_course
    from dptutor.course.rescore import RescoreOptions, rescore

    folder = new_course(tmp_path / "course", "a secret of the course")
    scores = tmp_path / "scores-sampler.csv"
    result = SubmissionResult("alice.md", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []})
    write_scores(scores, SAMPLER, [ScoreRecord(result, folder.identifier)])
    folder.config.unlink()
    _pretend(monkeypatch, "is_file", folder.config, True)
    assert [r.result.file for r in rescore(RescoreOptions("sampler", scores, course=folder.folder))] == ["alice.md"]
    assert load_config(folder.config, SAMPLER, missing_ok=True) is None


# ---------------------------------------------------------------------------------------------
# 2. a path under a folder that cannot be searched: a ValueError (or usage error) naming it
# ---------------------------------------------------------------------------------------------


def test_look_named_is_none_for_nothing_and_a_value_error_for_a_path_it_cannot_look_at(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert look_named(tmp_path / "none") is None
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert look_named(tmp_path / "file" / "below") is None  # a component that is not a folder
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(ValueError, match=r"^--csv: .*/a is a loop of symbolic links \(ELOOP\)$"):
        look_named(tmp_path / "a", name="--csv")
    assert look_named(tmp_path / "a", follow_links=False) is not None
    locked = tmp_path / "locked"
    locked.mkdir()
    _lock(monkeypatch, locked)
    with pytest.raises(ValueError, match=r"^out: .*/locked/x cannot be looked at \(Permission denied\)$"):
        look_named(locked / "x", name="out")


def test_grade_refuses_an_output_under_a_folder_it_cannot_search_naming_the_option(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # _validate_outputs asked csv_path.exists(): a PermissionError traceback from `grade`.
    from dptutor.course.grade import _validate_outputs

    locked = tmp_path / "locked"
    locked.mkdir()
    _lock(monkeypatch, locked)
    problem = _validate_outputs(locked / "scores.csv", None)
    assert problem is not None and problem.startswith("--csv: ") and "Permission denied" in problem
    problem = _validate_outputs(tmp_path / "scores.csv", locked / "feedback")
    assert problem is not None and problem.startswith("--feedback: ") and "Permission denied" in problem
    assert _validate_outputs(tmp_path / "scores.csv", tmp_path / "feedback") is None


def test_grade_refuses_submissions_or_a_course_it_cannot_look_at_as_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dptutor.course.grade import GradeOptions, _pick_only, _Usage, plan_grading

    locked = tmp_path / "locked"
    locked.mkdir()
    _lock(monkeypatch, locked)
    with pytest.raises(_Usage, match=r"^submissions: .*locked/subs cannot be looked at \(Permission denied\)"):
        plan_grading(GradeOptions("sampler", locked / "subs", csv=tmp_path / "s.csv", no_sandbox=True))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "bob.md").write_text("# not run\n", encoding="utf-8")
    with pytest.raises(_Usage, match=r"^--course: .*locked/course cannot be looked at"):
        plan_grading(GradeOptions("sampler", subs, csv=tmp_path / "s.csv", course=str(locked / "course"),
                                  no_sandbox=True))
    with pytest.raises(ValueError, match=r"^--only: .*Permission denied"):
        _pick_only(str(locked / "bob.md"), [])


def test_grade_takes_a_course_configuration_removed_after_a_check_as_none(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from dptutor.course.folders import new_course
    from dptutor.course.grade import GradeOptions, plan_grading

    folder = new_course(tmp_path / "course", "a secret of the course")
    folder.config.unlink()
    _pretend(monkeypatch, "is_file", folder.config, True)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "bob.md").write_text("# not run\n", encoding="utf-8")
    plan = plan_grading(GradeOptions("sampler", subs, csv=tmp_path / "s.csv", course=str(folder.folder),
                                     no_sandbox=True))
    assert plan.config.deadline is None and not plan.config.points


@pytest.mark.parametrize("case", ["write_scores", "export_lms", "find_submissions", "grade_folder", "collect",
                                  "release", "new_course", "outdir", "wheel"])
def test_the_other_readers_and_writers_name_a_path_they_cannot_look_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      case: str) -> None:
    from dptutor.course.batch import grade_folder
    from dptutor.course.folders import new_course
    from dptutor.course.handgrade import collect
    from dptutor.course.lms import export_lms
    from dptutor.course.otter import export_otter
    from dptutor.course.release import release
    from dptutor.course.submissions import find_submissions

    scores = _sampler_scores(tmp_path / "scores-sampler.csv")
    locked = tmp_path / "locked"
    locked.mkdir()
    _lock(monkeypatch, locked)
    cases = {"write_scores": (lambda: write_scores(locked / "s.csv", SAMPLER, []), "path"),
             "export_lms": (lambda: export_lms("canvas", "sampler", scores, locked / "out.csv"), "out"),
             "find_submissions": (lambda: find_submissions(locked / "subs"), "folder"),
             "grade_folder": (lambda: grade_folder("sampler", locked / "subs"), "folder"),
             "collect": (lambda: collect("audit", locked / "subs", [], tmp_path / "out"), "submissions"),
             "release": (lambda: release(locked / "book"), "folder"),
             "new_course": (lambda: new_course(locked / "course", "a secret of the course"), "folder"),
             "outdir": (lambda: export_otter("sampler", locked / "out"), "outdir"),
             "wheel": (lambda: export_otter("sampler", tmp_path / "out", wheel=locked / "dptutor-1.0-py3-none-any.whl"),
                       "wheel")}
    call, name = cases[case]
    with pytest.raises(ValueError, match=f"^{name}: .*Permission denied"):
        call()
    assert not (tmp_path / "out").exists()


def test_a_submissions_folder_that_cannot_be_listed_is_a_value_error(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from dptutor.course.submissions import find_submissions

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.md").write_text("# x\n", encoding="utf-8")
    _lock(monkeypatch, subs, itself=True, calls=("listdir", "scandir"))
    with pytest.raises(ValueError, match=r"^folder: .*subs cannot be read .*Permission denied"):
        find_submissions(subs)


def test_a_manifest_the_config_cannot_look_at_is_named_by_its_key(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    config = tmp_path / "grading.toml"
    config.write_text(f'[late]\ndeadline = 2026-03-02T23:59:00Z\nmultiplier = 0.5\ntimes = "{locked}/m.csv"\n',
                      encoding="utf-8")
    _lock(monkeypatch, locked)
    with pytest.raises(ValueError, match=r"^late\.times: .*Permission denied"):
        load_config(config, SAMPLER)


def test_new_course_keeps_a_configuration_written_between_a_check_and_the_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # new_course asked config.exists() and then wrote the example: one written in between was overwritten.
    from dptutor.course.folders import new_course

    folder = new_course(tmp_path / "course", "a secret of the course")
    folder.config.write_text('course = "course"\n# the instructor\'s edits\n', encoding="utf-8")
    _pretend(monkeypatch, "exists", folder.config, False)
    new_course(tmp_path / "course", "a secret of the course")
    assert "the instructor's edits" in folder.config.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# 3. a loop of links where a followed file should be
# ---------------------------------------------------------------------------------------------


def test_a_followed_link_that_loops_is_named_a_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop = tmp_path / "grading.toml"
    loop.symlink_to(tmp_path / "other.toml")
    (tmp_path / "other.toml").symlink_to(loop)
    with pytest.raises(ValueError, match=r"it is a loop of symbolic links \(ELOOP\)$"):
        read_named(loop, 100, role="the file", follow_links=True)
    with pytest.raises(ValueError, match=r"the grading configuration .* a loop of symbolic links \(ELOOP\)$"):
        load_config(loop, SAMPLER)
    with pytest.raises(ValueError, match="it is a symbolic link, not a file$"):  # a link refused, as asked
        read_named(loop, 100, role="the file")
    target = tmp_path / "target.csv"
    target.write_text("x", encoding="utf-8")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    _lock(monkeypatch, tmp_path, calls=("open",))  # the target (through the link) cannot be opened
    with pytest.raises(ValueError, match=r"it cannot be opened \(Permission denied\)$"):
        read_named(link, 100, role="the file", follow_links=True)
