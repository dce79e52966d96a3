"""Hostile command line: a corrupt in-flight marker, a FIFO or the scores file itself given as an
argument of ``export-lms``, and the file mode of the scores and grade-import CSVs.

The contract: a non-zero exit with a one-line message naming the argument, never a traceback, a hang,
or a good file destroyed; outputs are written 0644 like every other output of the package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dptutor.assignments import get_assignment
from dptutor.course.grade import _read_inflight
from dptutor.course.lms import export_lms
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, write_scores

SAMPLER = get_assignment("sampler")
DEEP = 100_000


def _scores(tmp_path: Path) -> Path:
    """A scores CSV of one row, as ``grade`` writes it."""
    result = SubmissionResult("alice.md", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0}, {"q1": [], "q2": [], "q3": []})
    path = tmp_path / "scores-sampler.csv"
    write_scores(path, SAMPLER, [ScoreRecord(result, "dp-2026")])
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dptutor", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=20)


def test_inflight_marker_nested_too_deep_is_ignored(tmp_path: Path) -> None:
    marker = tmp_path / ".scores.csv.inflight"
    marker.write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    assert _read_inflight(marker) == []
    marker.write_text('{"files": ' + "[" * DEEP + "]" * DEEP + "}", encoding="utf-8")
    assert _read_inflight(marker) == []


def test_scores_and_lms_outputs_are_0644(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        scores = _scores(tmp_path)
        out = tmp_path / "canvas.csv"
        assert export_lms("canvas", "sampler", scores, out) == 1
    finally:
        os.umask(old)
    assert os.stat(scores).st_mode & 0o777 == 0o644
    assert os.stat(out).st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["canvas.csv", "scores-sampler.csv"]  # no temporary left


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_export_lms_scores_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.csv")
    done = _cli("export-lms", "canvas", "sampler", "fifo.csv", "out.csv", cwd=tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0 and "fifo.csv" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_export_lms_out_fifo_is_refused(tmp_path: Path) -> None:
    _scores(tmp_path)
    os.mkfifo(tmp_path / "out.csv")
    done = _cli("export-lms", "canvas", "sampler", "scores-sampler.csv", "out.csv", cwd=tmp_path)
    assert done.returncode != 0 and "out" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert not (tmp_path / "out.csv").is_file()  # still the FIFO, not replaced


def test_export_lms_onto_its_own_scores_file_is_refused(tmp_path: Path) -> None:
    scores = _scores(tmp_path)
    before = scores.read_bytes()
    done = _cli("export-lms", "canvas", "sampler", scores.name, scores.name, cwd=tmp_path)
    assert done.returncode != 0 and "out" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert scores.read_bytes() == before


def test_release_without_instructor_notebooks_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "instructor").mkdir()
    (tmp_path / "sampler.md").write_text("the student's good copy\n", encoding="utf-8")
    done = _cli("release", "--folder", str(tmp_path), cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "instructor" in done.stderr
    assert (tmp_path / "sampler.md").read_text(encoding="utf-8") == "the student's good copy\n"


def test_release_checks_every_notebook_before_writing_any(tmp_path: Path) -> None:
    from dptutor.assignments.registry import ASSIGNMENTS
    from dptutor.course.release import release

    names = [a.notebook for a in ASSIGNMENTS.values()]
    (tmp_path / "instructor").mkdir()
    for name in names:
        (tmp_path / "instructor" / name).write_text("x = 1\n", encoding="utf-8")
        (tmp_path / name).write_text("old\n", encoding="utf-8")
    (tmp_path / "instructor" / names[-1]).write_text("# BEGIN SOLUTION\n", encoding="utf-8")  # never closed
    with pytest.raises(ValueError):
        release(tmp_path)
    assert all((tmp_path / name).read_text(encoding="utf-8") == "old\n" for name in names)


def test_a_newline_in_a_folder_name_keeps_grades_error_on_one_line(tmp_path: Path) -> None:
    # The folder's name was printed raw: its newline split the message, and a terminal escape would run.
    folder = tmp_path / "subs\nerror: forged\x1b[2J"
    folder.write_text("not a folder", encoding="utf-8")
    done = _cli("grade", "sampler", str(folder), "--no-sandbox", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "\x1b" not in done.stderr, done.stderr
    assert "\\n" in done.stderr and done.stderr.startswith("error: "), done.stderr


def test_the_other_commands_keep_their_error_on_one_line(tmp_path: Path) -> None:
    scores = _scores(tmp_path)
    for args in (["export-lms", "canvas", "sampler", str(scores), str(tmp_path / "no\nsuch\x1b[2J" / "out.csv")],
                 ["release", "--folder", str(tmp_path / "no\nsuch\x1b[2J")]):
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "\x1b" not in done.stderr and "\\n" in done.stderr, done.stderr


def test_a_function_that_exits_is_graded_call_by_call_as_in_the_students_kernel(tmp_path: Path) -> None:
    # sys.exit instead of raise ValueError: the grader's call cell let SystemExit end the whole cell, so the question
    # was "not graded" (0), while the student's own check() scores it call by call (valid input still passes)
    from dptutor.assignments import check

    root = Path(__file__).resolve().parents[2]
    text = (root / "book" / "assignments" / "instructor" / "sampler.md").read_text(encoding="utf-8")
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "exits.md").write_text(text.replace("raise ValueError", "import sys; sys.exit"),
                                                 encoding="utf-8")
    done = _cli("grade", "sampler", "subs", "--csv", "s.csv", "--no-sandbox", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import csv

    with open(tmp_path / "s.csv", newline="", encoding="utf-8") as fh:
        row = next(csv.DictReader(fh))
    namespace: dict = {}
    code = text.split("def laplace_inverse_cdf", 1)[1].split("```", 1)[0]
    exec("import numpy as np\nfrom dptutor.distributions import laplace_ppf\ndef laplace_inverse_cdf"
         + code.replace("raise ValueError", "import sys; sys.exit"), namespace)
    in_kernel = check("sampler", "q2", namespace["laplace_inverse_cdf"])
    assert float(row["q2"]) == in_kernel.score > 0, (row, in_kernel)
