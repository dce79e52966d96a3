"""Hostile submissions against what the grader reads and writes (issue 36, round 3, findings 3, 4 and 7).

- Finding 3: a lone surrogate in a message made writing the scores CSV raise; with two workers the
  parent died and the neighbour in flight was lost.
- Finding 4: reading a notebook was unbounded (YAML aliases in its header, hundreds of thousands of
  cells) and empty display messages did not count against the output cap.
- Finding 7: Unicode format characters (bidi overrides, zero-width joiners) reached the CSV, the
  feedback files and the LMS exports.

Most tests need no kernel: the reading limits are tested on ``read_student_cells`` and through
``grade_notebook`` (a refused notebook never starts one), the output cap on the notebook client's
message handler, and the batch runner with a stand-in for ``grade_notebook`` that returns hostile
text.  One end-to-end run of the ``grade`` command with two workers closes the file.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from helpers import ROOT
from dptutor.assignments import get_assignment
from dptutor.course import batch, executor, intake
from dptutor.course.lms import lms_rows
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, write_scores
from dptutor.course.submissions import find_submissions
from dptutor.course.textsafe import csv_cell, display_name, one_line, safe_text

SAMPLER = get_assignment("sampler")
STUB = (ROOT / "book" / "assignments" / "sampler.md").read_text(encoding="utf-8")
#: Format characters a reader cannot see: bidi embeddings, overrides and isolates, zero-width
#: space, joiners and marks, word joiner, byte-order mark, soft hyphen, Arabic letter mark.
FORMAT = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u00ad\u061c"
HOSTILE = "x\ud800y" + FORMAT + "\udfffz"


def hidden_characters(text: str) -> list[str]:
    """The characters of ``text`` that are lone surrogates or format characters (should be none)."""
    return [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in ("Cf", "Cs")]


def result_of(name: str, message: str) -> SubmissionResult:
    questions = SAMPLER.questions
    return SubmissionResult(name, SAMPLER.name, {q.name: 0.0 for q in questions}, {q.name: q.points for q in questions},
                            messages={q.name: [message] for q in questions}, notes=[f"note {message}"],
                            grading_seeds={q.name: 7 for q in questions})


# ---------------------------------------------------------------------------------------------
# finding 7: format characters and lone surrogates are written visibly, everywhere
# ---------------------------------------------------------------------------------------------


def test_every_format_character_and_surrogate_is_made_visible() -> None:
    for text in (safe_text(HOSTILE), one_line(HOSTILE), csv_cell(HOSTILE), display_name(HOSTILE)):
        assert hidden_characters(text) == [], text
        text.encode("utf-8")  # valid text: no lone surrogate left
    assert safe_text("a\u202eb\ud800") == "a\\u{202e}b\\u{d800}"
    assert safe_text(safe_text(HOSTILE)) == safe_text(HOSTILE)  # idempotent: a CSV row reads back as written
    assert safe_text("naïve Σ ε-DP 日本") == "naïve Σ ε-DP 日本"  # visible text is kept as it is
    assert display_name(os.fsdecode(b"\xff\xe2\x80\xae.md")) == "\\xff\\u{202e}.md"


def test_feedback_and_csv_row_of_a_hostile_result_hold_no_hidden_character(tmp_path: Path) -> None:
    result = result_of("a\u202egp.md", HOSTILE)
    assert hidden_characters(result.feedback_text()) == []
    assert all(hidden_characters(cell) == [] for cell in result.row(SAMPLER))
    path = tmp_path / "scores.csv"
    write_scores(path, SAMPLER, [ScoreRecord(result.made_safe())])
    text = path.read_text(encoding="utf-8")
    assert hidden_characters(text) == [] and "\\u{202e}" in text
    assert [r.result.file for r in read_scores(path, SAMPLER)] == ["a\\u{202e}gp.md"]  # reads back unchanged


def test_submission_names_show_format_characters(tmp_path: Path) -> None:
    (tmp_path / "ann\u202ecod.md").write_text(STUB, encoding="utf-8")
    (tmp_path / "Bo\u200bb_77_assignsubmission_file_").mkdir()
    (tmp_path / "Bo\u200bb_77_assignsubmission_file_" / "x.md").write_text(STUB, encoding="utf-8")
    names = [s.name for s in find_submissions(tmp_path)]
    assert names == ["Bo\\u{200b}b_77_assignsubmission_file_/x.md", "ann\\u{202e}cod.md"]


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_lms_exports_hold_no_hidden_character(tmp_path: Path, lms: str) -> None:
    name = ("smith\u202ejane_12345_678_sampler.md" if lms == "canvas"
            else "Jane\u2066 Smith_12345_assignsubmission_file_/sampler.md")
    path = tmp_path / "scores.csv"
    write_scores(path, SAMPLER, [ScoreRecord(result_of(name, HOSTILE))])
    rows = lms_rows(lms, "sampler", path)
    assert all(hidden_characters(cell) == [] for row in rows for cell in row), rows
    assert "\\u{" in rows[1][0 if lms == "canvas" else 1]


# ---------------------------------------------------------------------------------------------
# finding 3: a lone surrogate never stops the run nor loses a neighbour
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_a_lone_surrogate_in_a_message_is_written_and_the_neighbour_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """A stand-in grade_notebook returns the hostile messages a kernel can send (the workers are forked
    children: they inherit it); the CSV is rewritten after each result, as the grade command does."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("a.md", "b.md"):
        (subs / name).write_text(STUB, encoding="utf-8")

    def hostile_grade(path: Path, assignment: str, **kwargs: object) -> SubmissionResult:
        time.sleep(0.5 if path.name == "b.md" else 0)  # b.md is still in flight when a.md is written
        return result_of(str(kwargs["name"]), HOSTILE if path.name == "a.md" else "fine")

    monkeypatch.setattr(batch, "grade_notebook", hostile_grade)
    out = tmp_path / "scores.csv"
    done: list[SubmissionResult] = []

    def save(result: SubmissionResult) -> None:
        done.append(result)
        batch.write_csv(done, out, "sampler")

    batch.grade_folder("sampler", subs, sandbox="none", workers=workers, on_result=save)
    rows = read_scores(out, SAMPLER)
    assert sorted(r.result.file for r in rows) == ["a.md", "b.md"]
    text = out.read_text(encoding="utf-8")
    assert hidden_characters(text) == [] and "x\\u{d800}y\\u{202a}" in text
    assert all(hidden_characters(m) == [] for r in done for ms in r.messages.values() for m in ms)


# ---------------------------------------------------------------------------------------------
# finding 4: reading a notebook is bounded before it is parsed
# ---------------------------------------------------------------------------------------------


def alias_header(levels: int) -> str:
    """A jupytext Markdown header whose YAML aliases repeat a list ten times per level."""
    lines = ["  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(["---", "jupyter:", "  kernelspec:", "    name: python3", "    display_name: Python 3",
                      *lines, "---", "", "```python", "x = 1", "```", ""])


@pytest.mark.parametrize("where", ["header", "cell options", "anchor only"])
def test_yaml_aliases_are_refused_before_they_expand(tmp_path: Path, where: str) -> None:
    path = tmp_path / "bomb.md"
    if where == "header":
        path.write_text(alias_header(4), encoding="utf-8")
    elif where == "cell options":
        path.write_text(STUB + "\n```{code-cell} ipython3\n---\na: &a [1, 2]\nb: [*a, *a]\n---\nx = 1\n```\n",
                        encoding="utf-8")
    else:
        path.write_text(STUB.replace("---\n", "---\nauthor: &me Ann\n", 1), encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(ValueError, match="anchors or aliases"):
        executor._student_cells(path)
    assert time.monotonic() - started < 5
    import yaml

    assert yaml.safe_load("a: &a [1]\nb: *a") == {"a": [1], "b": [1]}  # the grader's YAML is untouched afterwards


def test_notebooks_with_too_many_cells_are_refused_before_parsing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intake, "MAX_CELLS", 200)  # the default, read when called
    many = 50_000  # jupytext needs over a minute for these; counting them, milliseconds
    md = tmp_path / "many.md"
    md.write_text("\n".join(["```{code-cell} ipython3\nx = 1\n```"] * many), encoding="utf-8")
    ipynb = tmp_path / "many.ipynb"
    cell = {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], "execution_count": None}
    ipynb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell] * many}))
    for path in (md, ipynb):
        started = time.monotonic()
        with pytest.raises(ValueError, match="more than the grader reads"):
            executor._student_cells(path)
        assert time.monotonic() - started < 2, path  # refused before the cells are built
    md.write_text("\n".join(["```{code-cell} ipython3\nx = 1\n```"] * 200), encoding="utf-8")
    assert len(executor._student_cells(md)) == 200  # a limit, not a broken reader
    assert len(intake.read_student_cells(md, max_cells=199 * 2)) == 200


def test_the_size_cap_is_configurable_and_applies_before_parsing(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.md"
    path.write_text(STUB, encoding="utf-8")
    size = path.stat().st_size
    assert intake.read_student_cells(path, max_bytes=size)
    with pytest.raises(ValueError, match="bytes, more than the limit of"):
        intake.read_student_cells(path, max_bytes=size - 1)
    monkeypatch.setattr(intake, "MAX_NOTEBOOK_BYTES", size - 1)  # the default, read when called
    result = executor.grade_notebook(path, "sampler", sandbox="none")
    assert result.total == 0 and "bytes, more than the limit of" in result.notes[-1]
    with pytest.raises(ValueError, match="max_bytes"):
        intake.read_student_cells(path, max_bytes=0)


def test_a_refused_notebook_scores_zero_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "bomb.md"
    path.write_text(alias_header(6), encoding="utf-8")
    started = time.monotonic()
    result = executor.grade_notebook(path, "sampler", sandbox="none")  # refused: no kernel is started
    assert time.monotonic() - started < 5
    assert result.total == 0 and "anchors or aliases" in result.notes[-1], result.notes
    assert all(ms == ["not graded: the notebook could not be read"] for ms in result.messages.values())


def test_every_output_message_counts_against_the_cap() -> None:
    """Empty display messages, widget messages and errors all count (with an overhead each)."""
    import nbformat

    limit = 100 * intake.MESSAGE_OVERHEAD
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")])
    client = intake.capped_client(limit)(nb)
    client.reset_execution_trackers()
    client.clear_before_next_output = False  # as nbclient sets it when a cell starts
    cell = nb.cells[0]
    cell.outputs = []

    def send(msg_type: str, content: dict) -> None:
        client.process_message({"msg_type": msg_type, "content": content, "header": {"msg_type": msg_type},
                                "parent_header": {}, "metadata": {}}, cell, 0)

    for _ in range(10_000):
        send("display_data", {"data": {}, "metadata": {}})
        send("stream", {"name": "stdout", "text": ""})
    assert 50 <= len(cell.outputs) <= 101  # the rest dropped, with one line saying so
    assert cell.outputs[-1]["text"].startswith("[output over")
    for _ in range(1000):
        send("comm_open", {"comm_id": "c", "target_name": "jupyter.widget", "data": {"state": {}}})
        send("error", {"ename": "E", "evalue": "x" * 10_000, "traceback": ["t"]})
    errors = [o for o in cell.outputs if o["output_type"] == "error"]
    assert len(errors) == 1 and len(errors[0]["evalue"]) == 2000  # the cell's first error, shortened
    assert client.kept > 2000 * intake.MESSAGE_OVERHEAD


# ---------------------------------------------------------------------------------------------
# end to end: the grade command with two workers, hostile text and refused notebooks beside a plain one
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap to run the students' kernels")
def test_the_grade_command_survives_hostile_text_and_refused_notebooks(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    raising = STUB.replace('raise NotImplementedError("Questions 1-3")', "raise ValueError('x\\ud800\\u202ey')", 1)
    assert raising != STUB
    (subs / "a.md").write_text(raising, encoding="utf-8")
    (subs / "b.md").write_text(alias_header(7), encoding="utf-8")
    (subs / "c\u2067.md").write_text(STUB, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "dptutor", "grade", "sampler", "subs", "--workers", "2",
                           "--feedback", "feedback"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert hidden_characters(proc.stdout + proc.stderr) == []
    with open(tmp_path / "scores-sampler.csv", newline="", encoding="utf-8") as fh:
        rows = {row["file"]: row for row in csv.DictReader(fh)}
    assert sorted(rows) == ["a.md", "b.md", "c\\u{2067}.md"]
    assert "x\\u{d800}\\u{202e}y" in rows["a.md"]["messages"], rows["a.md"]["messages"]
    assert "anchors or aliases" in rows["b.md"]["messages"] and rows["b.md"]["total"] == "0"
    for feedback in (tmp_path / "feedback").iterdir():
        assert hidden_characters(feedback.read_text(encoding="utf-8")) == [], feedback.name
    assert len(list((tmp_path / "feedback").iterdir())) == 3


def test_links_fifos_and_folders_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.md")  # opening it for reading would wait for a writer forever
    (tmp_path / "folder.md").mkdir()
    (tmp_path / "link.md").symlink_to(ROOT / "book" / "assignments" / "sampler.md")
    for name, reason in (("fifo.md", "not a regular file"), ("folder.md", "not a regular file"),
                         ("link.md", "symbolic link")):
        with pytest.raises(ValueError, match=reason):
            intake.read_student_cells(tmp_path / name)


def test_outputs_and_metadata_are_dropped_before_the_notebook_is_checked(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """nbformat checks every output of a ``.ipynb`` against its schema (30 s for 200,000 tiny ones); the
    grader never reads outputs, so they are gone before nbformat sees the notebook."""
    import nbformat

    out = {"output_type": "stream", "name": "stdout", "text": "x"}
    cell = {"cell_type": "code", "source": "x = 1", "metadata": {"tags": ["a"], "junk": [[0]] * 1000},
            "outputs": [out] * 100_000, "execution_count": None}
    path = tmp_path / "outputs.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {"junk": [[0]] * 100_000},
                                "cells": [cell]}))
    seen: list[int] = []
    reads = nbformat.reads
    monkeypatch.setattr(nbformat, "reads", lambda text, *args, **kwargs: seen.append(len(text)) or reads(text, *args, **kwargs))
    assert executor._student_cells(path) == [{"source": "x = 1", "metadata": {"tags": ["a"]}}]
    assert seen and max(seen) < 1000, seen


def test_markdown_notebooks_with_too_many_lines_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "long.md"
    path.write_text(STUB, encoding="utf-8")
    monkeypatch.setattr(intake, "MAX_LINES", STUB.count("\n"))
    with pytest.raises(ValueError, match="lines, more than the grader reads"):
        executor._student_cells(path)
    monkeypatch.setattr(intake, "MAX_LINES", STUB.count("\n") + 1)
    assert executor._student_cells(path)


def test_the_threat_model_page_states_the_reading_limits_of_the_code() -> None:
    page = (ROOT / "book" / "instructors" / "threat_model.md").read_text(encoding="utf-8")
    for stated in (f"over {intake.MAX_NOTEBOOK_BYTES >> 20} MiB", f"than {intake.MAX_CELLS:,} cells",
                   f"{intake.MAX_LINES:,} lines"):
        assert stated in page, stated
