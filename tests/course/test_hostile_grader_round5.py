"""Hostile inputs, round 5: forged answers that crash or inflate the grader's parsing, and instructor-side
files (overrides, manifest, hand grades, answer key, in-flight marker) that are FIFOs, links or garbled.

The contract: a forged answer costs its question (a ``RecordError``), never the rest of the notebook nor
the grader's memory; a file that is not a bounded regular file is refused with a ValueError naming it,
never waited on; a garbled scores record is a ValueError naming the line, never a traceback.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import re
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dptutor.assignments import get_assignment
from dptutor.assignments.encoding import Writer
from dptutor.course.answers import RecordError, check_value, validate_answer
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, write_scores

SAMPLER = get_assignment("sampler")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _without_blocking(call: Callable[[], object], fifo: Path) -> BaseException | None:
    """What ``call()`` raised (None if nothing), failing the test if it waits on ``fifo`` (then unblocked)."""
    out: dict[str, BaseException] = {}

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 -- handed to the test
            out["exc"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():  # the old code waits for a writer: give it one, and an empty file
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"reading {fifo.name} waited on the FIFO")
    return out.get("exc")


# ---------------------------------------------------------------------------------------------
# forged answers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("v", [[1.0], {"x": 1}])
def test_a_float_whose_value_is_a_list_is_a_record_error(v: object) -> None:
    # `v in FLOAT_WORDS` raised TypeError (unhashable), which escaped the question: every later
    # question of the notebook scored 0 as if the kernel had died.
    with pytest.raises(RecordError, match="float is malformed"):
        check_value({"k": "float", "v": v}, {})


def test_an_array_named_by_many_values_is_refused() -> None:
    # One 8 Mi-element array named by 1000 dict entries decoded to 1000 copies (64 GiB): the grader's
    # memory, not the kernel's, paid for it.  Each array of an answer is one value.
    arrays = {0: np.zeros(3)}
    tree = {"k": "dict", "items": [[f"k{i}", {"k": "ndarray", "a": 0}] for i in range(2)]}
    with pytest.raises(RecordError, match="another value uses"):
        check_value(tree, arrays)
    listed = {"k": "list", "items": [{"k": "list", "a": 0}, {"k": "npscalar", "a": 0}]}
    with pytest.raises(RecordError):
        check_value(listed, {0: np.zeros(3)})
    check_value({"k": "dict", "items": [["a", {"k": "ndarray", "a": 0}], ["b", {"k": "ndarray", "a": 1}]]},
                {0: np.zeros(3), 1: np.zeros(3)})  # distinct arrays are fine


def test_results_of_one_answer_cannot_share_an_array() -> None:
    x = np.zeros(3)
    chunk = [((x,), {}), ((x.copy(),), {})]
    entry = {"touched": False, "changed": {}, "rng": {}, "value": {"k": "ndarray", "a": 0}}
    with pytest.raises(RecordError):
        validate_answer({"results": [dict(entry), dict(entry)]}, {0: np.zeros(3)}, chunk)
    changed = {"touched": False, "changed": {"0": 0}, "rng": {}, "value": {"k": "ndarray", "a": 0}}
    with pytest.raises(RecordError):
        validate_answer({"results": [changed]}, {0: np.zeros(3)}, chunk[:1])
    honest = [{"touched": False, "changed": {"0": 1}, "rng": {}, "value": {"k": "ndarray", "a": 0}}]
    assert len(validate_answer({"results": honest}, {0: np.zeros(3), 1: np.ones(3)}, chunk[:1])) == 1


def test_the_first_cell_cannot_name_one_array_for_two_answers(tmp_path: Path) -> None:
    from dptutor.course.remote import _fetch_needs

    async def run_cell(source: str, limit: float) -> tuple[dict, float]:
        name = re.search(r"needs-[0-9a-f]{32}\.npz", source).group()
        writer = Writer()
        a = writer.array(np.zeros(4))
        writer.save(str(tmp_path / name), {"version": 2, "missing": [],
                                           "needs": {"x": {"k": "ndarray", "a": a}, "y": {"k": "ndarray", "a": a}}})
        return {"outputs": []}, 0.0

    with pytest.raises(RecordError):
        asyncio.run(_fetch_needs(run_cell, str(tmp_path), ("x", "y"), 10.0))


# ---------------------------------------------------------------------------------------------
# garbled scores records
# ---------------------------------------------------------------------------------------------


def _scores_with(tmp_path: Path, edit: Callable[[dict], None]) -> Path:
    result = SubmissionResult("alice.md", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []})
    path = tmp_path / "scores-sampler.csv"
    write_scores(path, SAMPLER, [ScoreRecord(result, "dp")])
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    record = json.loads(rows[1][-1])
    edit(record)
    rows[1][-1] = json.dumps(record)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


@pytest.mark.parametrize("edit", [
    lambda r: r["points"].update(q1=10**400) or r["scores"].update(q1=10**399),
    lambda r: r["configured"].update(q1=10**400),
], ids=["points", "configured"])
def test_a_record_with_a_huge_integer_is_a_value_error_naming_the_line(tmp_path: Path, edit) -> None:
    # OverflowError (int too large to convert to float) escaped as a traceback of every command.
    path = _scores_with(tmp_path, edit)
    with pytest.raises(ValueError, match=r"scores-sampler\.csv line 2 \(alice\.md\) is corrupted"):
        read_scores(path, SAMPLER)


# ---------------------------------------------------------------------------------------------
# instructor-side files that are FIFOs, too large, or links
# ---------------------------------------------------------------------------------------------


@needs_fifo
@pytest.mark.parametrize("which", ["overrides", "manifest", "handgrades"])
def test_csv_tables_that_are_fifos_are_refused_naming_them(tmp_path: Path, which: str) -> None:
    from dptutor.course.config import read_manifest, read_overrides
    from dptutor.course.handgrade import read_hand_grades

    fifo = tmp_path / f"{which}.csv"
    os.mkfifo(fifo)
    call = {"overrides": lambda: read_overrides(fifo, SAMPLER), "manifest": lambda: read_manifest(fifo),
            "handgrades": lambda: read_hand_grades(fifo, "sampler", [])}[which]
    exc = _without_blocking(call, fifo)
    assert isinstance(exc, ValueError) and f"{which}.csv" in str(exc) and "regular file" in str(exc), exc


def test_csv_tables_over_the_size_limit_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dptutor.course.config as config_module

    monkeypatch.setattr(config_module, "_MAX_TABLE_BYTES", 64)
    path = tmp_path / "overrides.csv"
    path.write_text("student,question,score,reason\n" + "alice,q1,1,fixed\n" * 10, encoding="utf-8")
    with pytest.raises(ValueError, match=r"overrides\.csv must be a regular file"):
        config_module.read_overrides(path, SAMPLER)


@needs_fifo
def test_an_answer_key_that_is_a_fifo_is_refused_naming_it(tmp_path: Path) -> None:
    from dptutor.course.folders import load_course

    (tmp_path / "course" / "private").mkdir(parents=True)
    fifo = tmp_path / "course" / "private" / "answer-key.toml"
    os.mkfifo(fifo)
    exc = _without_blocking(lambda: load_course(tmp_path / "course"), fifo)
    assert isinstance(exc, ValueError) and "answer-key.toml" in str(exc) and "regular file" in str(exc), exc


@needs_fifo
def test_an_inflight_marker_that_is_a_fifo_is_ignored_not_waited_on(tmp_path: Path) -> None:
    from dptutor.course.grade import _read_inflight

    fifo = tmp_path / ".scores.csv.inflight"
    os.mkfifo(fifo)
    found: list = []
    assert _without_blocking(lambda: found.append(_read_inflight(fifo)), fifo) is None
    assert found == [[]]


def test_the_inflight_marker_never_writes_through_a_link(tmp_path: Path) -> None:
    from dptutor.course.grade import _read_inflight, _write_inflight

    victim = tmp_path / "precious.txt"
    victim.write_text("PRECIOUS\n", encoding="utf-8")
    marker = tmp_path / ".scores.csv.inflight"
    (tmp_path / ".scores.csv.inflight.tmp").symlink_to(victim)  # the old fixed temporary name
    _write_inflight(marker, ["alice.md"])
    assert victim.read_text(encoding="utf-8") == "PRECIOUS\n"
    assert _read_inflight(marker) == ["alice.md"] and not marker.is_symlink()
    marker.unlink()
    marker.symlink_to(victim)  # a marker that is a link is not read through either
    assert _read_inflight(marker) == []


def test_an_empty_array_of_a_billion_rows_is_refused_before_it_is_listed(tmp_path: Path) -> None:
    # An answer of 666 bytes held an array of shape (3e7, 0): size 0 passed the size limit, and decoding it
    # as a list made 3e7 lists (2 GiB of the grader's memory, 27 s; shape (1e9, 0) exhausts any machine).
    from dptutor.course.answers import load_answer

    writer = Writer()
    writer.array(np.empty((10**9, 0)))
    writer.save(str(tmp_path / "out.npz"), {"version": 2, "results": []})
    with pytest.raises(RecordError, match=r"shape \(1000000000, 0\)"):
        load_answer(str(tmp_path / "out.npz"))
    # the kernel's writer makes such a returned value an inert placeholder: only its call fails
    assert Writer().encode(np.empty((10**9, 0)))["k"] == "opaque"
    assert Writer().encode([[] for _ in range(3)])["k"] == "list"


# ---------------------------------------------------------------------------------------------
# Ctrl-C and SIGTERM before the first submission starts
# ---------------------------------------------------------------------------------------------


class _Killed(Exception):
    """What the test's own SIGTERM handler raises (the default action would end pytest)."""


def _plan(tmp_path: Path):
    from dptutor.course.grade import GradeOptions, plan_grading

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "bob.md").write_text("# not run\n", encoding="utf-8")
    csv_path = tmp_path / "scores-sampler.csv"
    result = SubmissionResult("alice.md", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []})
    write_scores(csv_path, SAMPLER, [ScoreRecord(result, "")])
    return plan_grading(GradeOptions("sampler", subs, csv=csv_path, no_sandbox=True)), csv_path


@pytest.mark.parametrize("moment", ["preflight", "rescoring"])
def test_an_interrupt_before_the_first_submission_exits_130_and_keeps_the_csv(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], moment: str) -> None:
    # Ctrl-C in the pre-flight (a kernel start, seconds) escaped as a KeyboardInterrupt traceback, and a
    # SIGTERM while the earlier rows were rescored took the default action (the grader died at once):
    # the SIGTERM handler was installed only after both.
    import signal

    import dptutor.course.grade as grade_module

    plan, csv_path = _plan(tmp_path)
    before = csv_path.read_bytes()

    def ctrl_c(*args: object) -> None:
        raise KeyboardInterrupt

    def sigterm(*args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(grade_module, "check_environment", ctrl_c if moment == "preflight" else lambda sandbox: {})
    if moment == "rescoring":
        monkeypatch.setattr(grade_module, "remove_stale_workdirs", sigterm)

    def killed(signum: int, frame: object) -> None:
        raise _Killed

    previous = signal.signal(signal.SIGTERM, killed)
    try:
        code = grade_module.grade_plan(plan)
    except (KeyboardInterrupt, _Killed) as exc:
        pytest.fail(f"{type(exc).__name__} escaped grade_plan")
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert code == 130 and "interrupted" in err and "Traceback" not in err
    assert csv_path.read_bytes() == before
    assert signal.getsignal(signal.SIGTERM) is previous


# ---------------------------------------------------------------------------------------------
# hand grades: a submission's name reaches the overrides file as a spreadsheet's text
# ---------------------------------------------------------------------------------------------


def test_handgrade_apply_writes_no_formula_into_the_overrides_file(tmp_path: Path) -> None:
    # `handgrade apply` wrote the submission's file name (the student's choice) raw into the overrides
    # CSV: a name such as =HYPERLINK(...).md became a formula when the instructor opened the file.
    from dptutor.course.handgrade import HANDGRADE_COLUMNS, apply
    from dptutor.course.rescore import RescoreOptions
    from dptutor.course.textsafe import csv_cell, csv_document

    audit = get_assignment("audit")
    points = {q.name: q.points for q in audit.questions}
    file = '=HYPERLINK("http://x.invalid","see").md'
    record = ScoreRecord(SubmissionResult(file, "audit", points | {"q4": 0.0}, points, {}), "c")
    scores = tmp_path / "scores-audit.csv"
    write_scores(scores, audit, [record])
    filled = tmp_path / "handgrade-audit.csv"
    filled.write_text(csv_document([HANDGRADE_COLUMNS, [csv_cell(file), csv_cell(record.student), "q4", "1", "1",
                                                        "-0 deducted: a clear argument"]]), encoding="utf-8")
    overrides = tmp_path / "overrides.csv"
    options = RescoreOptions("audit", csv=scores, overrides=overrides)
    apply(filled, options)
    first = overrides.read_text(encoding="utf-8")
    with open(overrides, newline="", encoding="utf-8") as fh:
        cells = [cell for row in list(csv.reader(fh))[1:] for cell in row]
    assert cells and not any(cell.startswith(("=", "+", "-", "@")) for cell in cells), cells
    (row,) = read_scores(scores, audit)
    assert row.final_scores()["q4"] == 1.0
    assert row.overrides[0].student == file and row.overrides[0].reason == "-0 deducted: a clear argument"
    apply(filled, options)  # read back and written again: the same file, no quote added each time
    assert overrides.read_text(encoding="utf-8") == first


def test_a_scores_file_that_cannot_be_saved_stops_the_run_with_an_error_and_no_marker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # A full disk while a finished submission was saved escaped as a traceback and left the in-flight
    # marker naming it: the next run scored that (innocent) submission 0 as the one that "killed the grader".
    import errno

    import dptutor.course.grade as grade_module

    plan, csv_path = _plan(tmp_path)
    real_write = grade_module.write_scores

    def full_disk(path: Path, assignment: object, records: list) -> None:
        if len(records) > 1:  # the row of the submission just graded
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, assignment, records)

    def graded(assignment: str, folder: Path, *, progress, on_result, only, **kwargs: object) -> list:
        for name in only:
            progress(name)
            on_result(SubmissionResult(name, "sampler", {"q1": 1.0, "q2": 1.0, "q3": 1.0},
                                       {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []}))
        return []

    monkeypatch.setattr(grade_module, "check_environment", lambda sandbox: {})
    monkeypatch.setattr(grade_module, "write_scores", full_disk)
    monkeypatch.setattr(grade_module, "grade_folder", graded)
    try:
        code = grade_module.grade_plan(plan)
    except OSError as exc:
        pytest.fail(f"{exc!r} escaped grade_plan")
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("error: grading stopped")  # one line (after the --no-sandbox warning)
    assert not (tmp_path / ".scores-sampler.csv.inflight").exists()
    assert [r.result.file for r in read_scores(csv_path, SAMPLER)] == ["alice.md"]


def test_hand_grades_of_a_name_that_starts_with_a_space_are_applied(tmp_path: Path) -> None:
    # `collect` wrote " alice.md"; `apply` trimmed the cell to "alice.md", "no submission of the scores
    # CSV": one such name stopped the hand grades of the whole class (and read_overrides trimmed it too).
    from dptutor.course.handgrade import HANDGRADE_COLUMNS, apply
    from dptutor.course.rescore import RescoreOptions
    from dptutor.course.textsafe import csv_cell, csv_document

    audit = get_assignment("audit")
    points = {q.name: q.points for q in audit.questions}
    records = [ScoreRecord(SubmissionResult(f, "audit", points | {"q4": 0.0}, points, {}), "c")
               for f in (" alice.md", "bob.md")]
    scores = tmp_path / "scores-audit.csv"
    write_scores(scores, audit, records)
    filled = tmp_path / "handgrade-audit.csv"
    filled.write_text(csv_document([HANDGRADE_COLUMNS, *([csv_cell(r.result.file), csv_cell(r.student), "q4", "1", "1",
                                                          "well argued"] for r in records)]), encoding="utf-8")
    overrides = tmp_path / "overrides.csv"
    apply(filled, RescoreOptions("audit", csv=scores, overrides=overrides))
    rows = {r.result.file: r for r in read_scores(scores, audit)}
    assert rows[" alice.md"].final_scores()["q4"] == 1.0 and rows["bob.md"].final_scores()["q4"] == 1.0


def test_a_link_that_points_nowhere_does_not_stop_a_late_policy(tmp_path: Path) -> None:
    # With a late policy the grader read each submission's time through links: a dangling link named
    # b.md was a FileNotFoundError traceback, and no submission was graded (now it is graded, and refused).
    import datetime as dt

    from dptutor.course.config import GradingConfig
    from dptutor.course.rescore import submission_times
    from dptutor.course.submissions import find_submissions

    (tmp_path / "a.md").write_text("# a\n", encoding="utf-8")
    (tmp_path / "b.md").symlink_to(tmp_path / "nowhere.md")
    config = GradingConfig(deadline=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), multiplier=0.5)
    times = submission_times(config, find_submissions(tmp_path))
    assert sorted(times) == ["a.md", "b.md"] and all(t.tzinfo is not None for t in times.values())


def test_a_row_with_long_error_messages_keeps_the_scores_file_readable(tmp_path: Path) -> None:
    # A function raising ValueError("\x01\u202e" * 2000) made its row's record cell 241,010 characters (made
    # visible and JSON-escaped), over the csv module's field limit of 131,072: the whole class's scores file
    # was then "corrupted" for every later command (grade again, rescore, export-lms, handgrade).
    import csv as csv_module

    evil = "raised ValueError: " + "\x01\u202e" * 2000
    messages = {q: [evil] * 5 for q in ("q1", "q2", "q3")}
    points = {"q1": 2.0, "q2": 1.0, "q3": 1.0}
    mallory = SubmissionResult("mallory.md", "sampler", dict.fromkeys(points, 0.0), points, messages).made_safe()
    alice = SubmissionResult("alice.md", "sampler", points, points, {})
    path = tmp_path / "scores-sampler.csv"
    write_scores(path, SAMPLER, [ScoreRecord(alice, "c"), ScoreRecord(mallory, "c")])
    limit = csv_module.field_size_limit()
    rows = read_scores(path, SAMPLER)
    assert [r.result.file for r in rows] == ["alice.md", "mallory.md"] and rows[1].result.messages == mallory.messages
    assert csv_module.field_size_limit() == limit  # the csv module's limit is restored


def test_a_late_that_is_no_table_beside_an_assignments_deadline_is_named(tmp_path: Path) -> None:
    # `{**late, ...}` raised "TypeError: 'int' object is not a mapping", naming no key.
    from dptutor.course.config import load_config

    path = tmp_path / "grading.toml"
    path.write_text('[assignments.sampler]\ndeadline = "2026-01-01T00:00:00Z"\nlate = 5\n', encoding="utf-8")
    with pytest.raises(TypeError, match=r"assignments\.sampler\.late must be a table"):
        load_config(path, SAMPLER)


@needs_fifo
def test_an_instructor_notebook_that_is_a_fifo_is_refused_by_handgrade(tmp_path: Path) -> None:
    # `handgrade collect --course` read the course's instructor notebook with read_text: a FIFO blocked it.
    from dptutor.course.handgrade import rubrics

    audit = get_assignment("audit")
    folder = tmp_path / "course" / "private" / "instructor"
    folder.mkdir(parents=True)
    fifo = folder / audit.notebook
    os.mkfifo(fifo)
    exc = _without_blocking(lambda: rubrics(audit, tmp_path / "course"), fifo)
    assert isinstance(exc, ValueError) and audit.notebook in str(exc) and "regular file" in str(exc), exc


def test_an_answer_of_too_many_tiny_arrays_is_refused_before_any_is_read(tmp_path: Path) -> None:
    # 100,000 one-element members took 11 s of the grader's own CPU to read (the sandbox's clock does not count it).
    from dptutor.assignments.encoding import MAX_ANSWER_ARRAYS
    from dptutor.course.answers import load_answer

    path = tmp_path / "answer.npz"
    np.savez(path, meta=np.array(json.dumps({"version": 2})),
             **{f"a{i}": np.zeros(1) for i in range(MAX_ANSWER_ARRAYS + 1)})
    with pytest.raises(RecordError, match=f"{MAX_ANSWER_ARRAYS + 1:,} arrays"):
        load_answer(str(path))
    np.savez(path, meta=np.array(json.dumps({"version": 2})), **{f"a{i}": np.zeros(1) for i in range(3)})
    assert len(load_answer(str(path))[1]) == 3


def test_the_kernels_writer_keeps_an_answer_within_the_array_limit() -> None:
    # A value of many arrays of different shapes (one member each) loses its arrays past MAX_VALUE_ARRAYS, not the
    # whole answer: the grader refuses a file of more than MAX_ANSWER_ARRAYS.
    from dptutor.assignments.encoding import MAX_ANSWER_ARRAYS, MAX_VALUE_ARRAYS

    writer = Writer()
    ragged = [np.zeros(1 + i % 2) for i in range(1000)]
    trees = [writer.encode(ragged) for _ in range(MAX_VALUE_ARRAYS // 1000 + 2)]
    assert len(writer.arrays) == MAX_VALUE_ARRAYS < MAX_ANSWER_ARRAYS
    last = trees[-1]["items"]
    assert last[0]["k"] == "opaque" and "past the" in last[0]["repr"]
    assert trees[0]["items"][0] == {"k": "ndarray", "a": 0}


def test_cleaning_a_work_folder_never_changes_modes_through_a_link_swapped_in(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # A sandbox process that is still dying swaps a locked sub-folder for a link to an outside file between the
    # clean-up's lstat and its chmod: the chmod followed the link and set the file to 0o700 (as root: any file).
    from dptutor.course import workdirs

    victim = tmp_path / "victim.txt"
    victim.write_text("outside the work folder")
    victim.chmod(0o644)
    root = tmp_path / "work"
    (root / "locked").mkdir(parents=True)
    (root / "locked" / "f").write_text("x")
    (root / "locked").chmod(0)
    real_stat = os.stat

    def racing_stat(path, *args, **kwargs):
        st = real_stat(path, *args, **kwargs)
        if path == "locked" and kwargs.get("dir_fd") is not None and stat.S_ISDIR(st.st_mode):
            fd = kwargs["dir_fd"]
            os.rename("locked", f"moved-{len(os.listdir(fd))}", src_dir_fd=fd, dst_dir_fd=fd)
            os.symlink(victim, "locked", dir_fd=fd)  # the swap, after the check
        return st

    monkeypatch.setattr(workdirs.os, "stat", racing_stat)
    removed = workdirs.remove_tree(root, tries=5)
    monkeypatch.undo()
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644 and victim.read_text() == "outside the work folder"
    assert removed and not root.exists()  # the link is unlinked and the moved folder removed on a later try
