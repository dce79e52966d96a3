"""One reader for the grader's named files: ``dptutor.course.intake.read_named``.

Every file the grader reads by name (the configuration, the CSV tables, the answer key, the instructor
notebook, the scores file, a kernel's answer file, the in-flight marker) is read with ``read_named``:
a missing file, a FIFO, a folder, a refused link, a file over its limit and one that cannot be read
(an input/output error) are each one ``ValueError`` of one wording that names the parameter, the
file's role and its path.  Before, an input/output error escaped ``load_config``, ``read_scores`` and
``load_answer`` as a bare ``OSError`` (a traceback from ``grade``, a crash instead of a
``RecordError`` for a question).
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

import dptutor._safe_files as safe_files
from dptutor.assignments.registry import get_assignment
from dptutor.course.answers import RecordError, load_answer
from dptutor.course.config import load_config, read_manifest, read_overrides
from dptutor.course.folders import load_course
from dptutor.course.grade import _read_inflight
from dptutor.course.handgrade import read_hand_grades, rubrics
from dptutor.course.intake import MissingFile, read_named
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, write_scores

SAMPLER = get_assignment("sampler")
AUDIT = get_assignment("audit")
WORDING = "must be a regular file of at most"


def _eio(fd: int, path: object, max_bytes: int, what: object) -> bytes:
    raise OSError(errno.EIO, os.strerror(errno.EIO))


# ---------------------------------------------------------------------------------------------
# the helper
# ---------------------------------------------------------------------------------------------


def test_every_failure_is_one_value_error_naming_the_role_and_the_path(tmp_path: Path, monkeypatch) -> None:
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * 100)
    link = tmp_path / "link.csv"
    link.symlink_to(big)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    cases = [(big, 10, "it has 100 bytes, more than the limit of 10"), (link, 1 << 20, "symbolic link"),
             (fifo, 1 << 20, "not a regular file"), (tmp_path, 1 << 20, "not a regular file")]
    for path, limit, reason in cases:
        with pytest.raises(ValueError, match=f"^path: the scores file {re.escape(str(path))} {WORDING} ") as info:
            read_named(path, limit, role="the scores file")
        assert reason in str(info.value) and not isinstance(info.value, MissingFile)
    assert "at most 10 bytes:" in str(pytest.raises(ValueError, read_named, big, 10, role="x").value)
    assert "at most 1 MiB:" in str(pytest.raises(ValueError, read_named, fifo, 1 << 20, role="x").value)
    with pytest.raises(MissingFile, match=f"^folder: the answer key {re.escape(str(tmp_path / 'no.toml'))} does not exist$"):
        read_named(tmp_path / "no.toml", 1 << 20, role="the answer key", name="folder")
    assert read_named(tmp_path / "no.toml", 1 << 20, role="the answer key", missing_ok=True) is None
    assert read_named(link, 1 << 20, role="r", follow_links=True) == b"x" * 100
    monkeypatch.setattr(safe_files, "_read_open_file", _eio)
    with pytest.raises(ValueError, match=f"^path: the scores file {re.escape(str(big))} {WORDING} 1 MiB: it cannot be read "
                                         r"\(Input/output error\)$"):
        read_named(big, 1 << 20, role="the scores file")


def test_the_helpers_own_arguments_are_checked_naming_them(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(ValueError, match="^limit"):  # not worded as the file's fault
        read_named(tmp_path / "f", -1, role="the file")
    with pytest.raises(TypeError, match="role"):
        read_named(tmp_path / "f", 1, role=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="missing_ok"):
        read_named(tmp_path / "f", 1, role="r", missing_ok="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path"):
        read_named(3, 1, role="r")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# its callers: the same wording for every one of them
# ---------------------------------------------------------------------------------------------


def _callers(tmp_path: Path) -> dict:
    """Each caller of ``read_named``, as (call, the path it reads, its parameter and role)."""
    course = tmp_path / "course"
    key = course / "private" / "answer-key.toml"
    notebook = course / "private" / "instructor" / AUDIT.notebook
    return {
        "config": (lambda p: load_config(p, SAMPLER), tmp_path / "c.toml", "path: the grading configuration"),
        "overrides": (lambda p: read_overrides(p, SAMPLER), tmp_path / "o.csv", "path: the overrides file"),
        "manifest": (read_manifest, tmp_path / "m.csv", "path: the manifest"),
        "handgrades": (lambda p: read_hand_grades(p, "sampler", []), tmp_path / "h.csv", "path: the hand grades"),
        "scores": (lambda p: read_scores(p, SAMPLER), tmp_path / "s.csv", "path: the scores file"),
        "key": (lambda p: load_course(course), key, "folder: the answer key"),
        "rubrics": (lambda p: rubrics(AUDIT, course), notebook, "course: the instructor notebook"),
    }


@pytest.mark.parametrize("which", ["config", "overrides", "manifest", "handgrades", "scores", "key", "rubrics"])
def test_an_unreadable_file_is_a_value_error_of_the_one_wording(tmp_path: Path, monkeypatch, which: str) -> None:
    # load_config and read_scores let the OSError of an input/output error escape (a traceback from
    # `grade --config` / `--csv`); the others each worded it their own way.
    call, path, start = _callers(tmp_path)[which]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n", encoding="utf-8")
    monkeypatch.setattr(safe_files, "_read_open_file", _eio)
    with pytest.raises(ValueError, match=f"^{start} {re.escape(str(path))} {WORDING} [0-9]+ MiB: it cannot be read "):
        call(path)


@pytest.mark.parametrize("which", ["config", "overrides", "manifest", "handgrades", "scores", "key", "rubrics"])
def test_a_fifo_is_refused_in_the_one_wording(tmp_path: Path, which: str) -> None:
    call, path, start = _callers(tmp_path)[which]
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    with pytest.raises(ValueError, match=f"^{start} {re.escape(str(path))} {WORDING} [0-9]+ MiB: it is not a regular file$"):
        call(path)


@pytest.mark.parametrize("which", ["config", "overrides", "manifest", "handgrades", "scores", "rubrics"])
def test_a_missing_file_is_named_in_the_one_wording(tmp_path: Path, which: str) -> None:
    call, path, start = _callers(tmp_path)[which]
    with pytest.raises(ValueError, match=f"^{start} {re.escape(str(path))} does not exist$"):
        call(path)


def test_a_csv_table_over_a_tiny_limit_states_it_in_bytes(tmp_path: Path, monkeypatch) -> None:
    # The limit was stated as "at most 0 MiB" (64 >> 20) when it is below a MiB.
    import dptutor.course.config as config_module

    monkeypatch.setattr(config_module, "_MAX_TABLE_BYTES", 64)
    path = tmp_path / "overrides.csv"
    path.write_text("student,question,score,reason\n" + "alice,q1,1,fixed\n" * 10, encoding="utf-8")
    with pytest.raises(ValueError, match=r"overrides\.csv must be a regular file of at most 64 bytes: it has 200 "):
        read_overrides(path, SAMPLER)


def test_an_instructor_notebook_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    notebook = tmp_path / "course" / "private" / "instructor" / AUDIT.notebook
    notebook.parent.mkdir(parents=True)
    notebook.write_bytes(b"# Question 1\n\xff\xfe\n")
    with pytest.raises(ValueError, match=f"^course: the instructor notebook {re.escape(str(notebook))} is not UTF-8 text"):
        rubrics(AUDIT, tmp_path / "course")


# ---------------------------------------------------------------------------------------------
# the answer file and the in-flight marker
# ---------------------------------------------------------------------------------------------


def test_an_answer_file_that_cannot_be_read_costs_a_record_error_not_a_crash(tmp_path: Path, monkeypatch) -> None:
    # load_answer let an OSError escape: remote catches RecordError only, so the question crashed.
    answer = tmp_path / "out-0123.npz"
    answer.write_bytes(b"PK")
    monkeypatch.setattr(safe_files, "_read_open_file", _eio)
    with pytest.raises(RecordError, match=r"the answer file out-0123\.npz .*cannot be read") as info:
        load_answer(str(answer))
    assert str(tmp_path) not in str(info.value)  # the student reads it: not the grader's folder


def test_an_answer_file_that_is_missing_or_a_link_is_a_record_error(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="^no answer file was written$"):
        load_answer(str(tmp_path / "out.npz"))
    (tmp_path / "elsewhere.npz").write_bytes(b"PK")
    (tmp_path / "out.npz").symlink_to(tmp_path / "elsewhere.npz")
    with pytest.raises(RecordError, match="symbolic link") as info:
        load_answer(str(tmp_path / "out.npz"))
    assert str(tmp_path) not in str(info.value)


def test_an_inflight_marker_that_cannot_be_read_is_ignored(tmp_path: Path, monkeypatch) -> None:
    marker = tmp_path / ".scores.csv.inflight"
    assert _read_inflight(marker) == []
    marker.write_text('{"files": ["alice.md"]}', encoding="utf-8")
    assert _read_inflight(marker) == ["alice.md"]
    monkeypatch.setattr(safe_files, "_read_open_file", _eio)
    assert _read_inflight(marker) == []


# ---------------------------------------------------------------------------------------------
# a missing scores file: absent in one look, no check before the read
# ---------------------------------------------------------------------------------------------


def test_read_scores_takes_a_missing_file_as_no_rows_when_asked(tmp_path: Path) -> None:
    # `grade` asked csv_path.exists() and then read it: a file removed in between was "does not exist".
    assert read_scores(tmp_path / "s.csv", SAMPLER, missing_ok=True) == []
    with pytest.raises(ValueError, match="does not exist"):
        read_scores(tmp_path / "s.csv", SAMPLER)
    result = SubmissionResult("alice.md", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []})
    write_scores(tmp_path / "s.csv", SAMPLER, [ScoreRecord(result, "dp")])
    assert [r.result.file for r in read_scores(tmp_path / "s.csv", SAMPLER, missing_ok=True)] == ["alice.md"]
    os.mkfifo(tmp_path / "fifo.csv")
    with pytest.raises(ValueError, match="not a regular file"):  # absent is only absent: a FIFO is refused
        read_scores(tmp_path / "fifo.csv", SAMPLER, missing_ok=True)


# ---------------------------------------------------------------------------------------------
# the answer's metadata: at most MAX_META_CHARS characters, on both sides
# ---------------------------------------------------------------------------------------------


def _raised(message: str) -> dict:
    return {"raised": {"type": "ValueError", "value_error": True, "not_implemented": False, "message": message},
            "changed": {}, "touched": False, "rng": {}}


def test_the_grader_reads_the_kernels_cap_from_the_kernels_side() -> None:
    import dptutor.assignments.encoding as encoding
    import dptutor.course.answers as answers

    assert answers.MAX_META_CHARS is encoding.MAX_META_CHARS
    assert encoding.VALUE_ROOM + 2000 * 1000 <= encoding.MAX_META_CHARS  # a cut entry takes < 1000 characters


def test_a_value_past_the_answers_room_becomes_a_placeholder_and_its_arrays_go(tmp_path: Path) -> None:
    # The writer encoded any value whole: a list of 1000 lists of 1000 strings is gigabytes of metadata.
    import numpy as np

    from dptutor.assignments.encoding import VALUE_ROOM, Writer

    writer = Writer()
    kept = writer.encode([np.arange(3.0), "a" * 1000])
    assert kept["items"][0] == {"k": "ndarray", "a": 0}
    huge = [np.arange(3.0)] + ["x" * 4000] * 600  # about 2.4 M characters of JSON, more than the room
    placeholder = writer.encode(huge)
    assert placeholder["k"] == "opaque" and f"past the {VALUE_ROOM:,}" in placeholder["repr"]
    assert len(writer.arrays) == 1 and writer.values == 1  # the huge value's array is not written
    writer.room = 0
    assert writer.encode(2.5) == {"k": "float", "v": 2.5}  # small values are kept when the room is full
    assert writer.encode("y" * 300)["k"] == "opaque"


def test_an_honest_kernel_with_long_messages_writes_an_answer_the_grader_reads(tmp_path: Path, monkeypatch) -> None:
    # 2000 calls raising 4000-character messages: about 8.3 M characters of metadata, which the grader now
    # refuses; the kernel's writer cuts the messages instead (the type, which checks read, is kept).
    from dptutor.assignments.encoding import CUT_MESSAGE, MAX_TEXT, Writer
    from dptutor.assignments.kernel import KernelCalls

    monkeypatch.chdir(tmp_path)
    writer = Writer()
    writer.save("in.npz", {"version": 2, "calls": [{"fn": "f", "args": [writer.encode(1.0)], "kwargs": []}] * 2000})

    def f(x: float) -> float:
        raise ValueError("z" * 5000)

    with KernelCalls({"f": f}, "in.npz", "out.npz") as calls:
        for c in calls:
            try:
                c.value = c.fn(*c.args, **c.kwargs)
            except ValueError as exc:
                c.raised = exc
    meta, _ = load_answer(str(tmp_path / "out.npz"))
    messages = [r["raised"]["message"] for r in meta["results"]]
    assert len(messages) == 2000 and all(m.startswith("z" * CUT_MESSAGE + " [cut") and len(m) <= MAX_TEXT for m in messages)
    assert all(r["raised"]["value_error"] for r in meta["results"])


def test_metadata_over_the_cap_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from dptutor.assignments.encoding import MAX_META_CHARS, Writer

    out = tmp_path / "out.npz"
    with pytest.raises(ValueError, match=f"more than the {MAX_META_CHARS:,} the grader reads"):
        Writer().save(str(out), {"version": 2, "needs": {"x": {"k": "str", "v": "x" * MAX_META_CHARS}}})
    values = [{"value": {"k": "str", "v": "x" * 3000}, "changed": {}, "touched": False, "rng": {}}] * 2000
    with pytest.raises(ValueError, match="the grader reads"):  # no message to cut: refused
        Writer().save(str(out), {"version": 2, "results": values})
    assert list(tmp_path.iterdir()) == []
    # The longest messages (4000 characters, each 12 in JSON) of the most calls fit once cut.
    Writer().save(str(out), {"version": 2, "results": [_raised("\U0001f600" * 4000)] * 2000})
    assert all(r["raised"]["message"].endswith("too long]") for r in load_answer(str(out))[0]["results"])


def test_the_grader_reads_metadata_at_the_cap_and_refuses_one_character_more(tmp_path: Path) -> None:
    # The grader parsed metadata as long as the file's cap allowed (40 Mi characters, over 1 GB of memory).
    import numpy as np

    from dptutor.assignments.encoding import MAX_META_CHARS, Writer

    head = '{"version": 2, "pad": ""}'
    at_cap = {"version": 2, "pad": "x" * (MAX_META_CHARS - len(head))}
    Writer().save(str(tmp_path / "ok.npz"), at_cap)
    assert load_answer(str(tmp_path / "ok.npz"))[0]["pad"] == at_cap["pad"]
    for more, refusal in ((1, f"metadata has {MAX_META_CHARS + 1:,} characters, more than {MAX_META_CHARS:,}$"),
                          (20_000, r"metadata takes [0-9,]+ bytes, more than")):  # the member: refused unread
        with open(tmp_path / "forged.npz", "wb") as fh:  # written without the kernel's writer
            np.savez(fh, meta=np.array('{"version": 2, "pad": "' + "x" * (MAX_META_CHARS - len(head) + more) + '"}'))
        with pytest.raises(RecordError, match=refusal):
            load_answer(str(tmp_path / "forged.npz"))
