"""The grader fails loudly (issue 36, item 1): a broken environment stops grading before anyone is scored.

A kernel that cannot start, a sandbox that cannot run the interpreter, a package the sandbox cannot
see, bubblewrap missing: ``python -m dptutor grade`` exits non-zero with a message naming the cause
and the fix, before any score or feedback file is written.  A submission's own failures (an endless
loop) stay that submission's zero with feedback that says what happened.  The sandboxed tests skip
when bubblewrap is missing (``.ci/run`` installs it).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT
from test_hostile_sandbox import REFERENCE, STUB, notebook, rows

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed (sudo apt-get install bubblewrap); "
                                        ".ci/run installs it so CI runs these tests")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR")}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


@needs_bwrap
def test_grading_from_a_folder_beside_the_clone_with_a_relative_interpreter_grades_correctly(tmp_path: Path) -> None:
    """The reported bug: `python -m dptutor grade ...` run from a folder beside the clone with the clone's interpreter
    named by a relative path (up one folder, then into the clone's .venv) made the interpreter's path run through a
    folder the sandbox does not have, every kernel died, everyone got 0 and the command exited 0. The interpreter is
    resolved to an absolute path of folders the sandbox has."""
    course = tmp_path / "course"
    (course / "subs").mkdir(parents=True)
    (course / "subs" / "ref.md").write_text(notebook(REFERENCE))
    python = os.path.relpath(sys.executable, course)
    assert python.startswith("..")
    proc = subprocess.run([python, "-m", "dptutor", "grade", "sampler", "subs", "--csv", "scores.csv",
                           "--timeout", "60", "--total-timeout", "300"],
                          cwd=course, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = rows(course / "scores.csv")["ref.md"]
    assert float(row["total"]) == 4.0, row


@needs_bwrap
def test_a_package_the_sandbox_cannot_see_stops_grading_before_any_score(tmp_path: Path) -> None:
    """The sandbox's kernel finds no dptutor (here: the folder mounted for it is an empty one): the
    pre-flight notebook fails, the grader exits 2 naming the cause and the fix, and neither the CSV nor a
    feedback file exists."""
    subs, feedback, empty = tmp_path / "subs", tmp_path / "feedback", tmp_path / "empty"
    subs.mkdir()
    (empty / "dptutor").mkdir(parents=True)
    for name in ("a.md", "b.md"):
        (subs / name).write_text(notebook(REFERENCE))
    script = ("import sys\nfrom pathlib import Path\nimport dptutor.course.sandbox as s\n"
              f"s.package_root = lambda: Path({str(empty)!r})\n"
              "from dptutor.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", script, "grade", "sampler", str(subs), "--csv",
                           str(tmp_path / "scores.csv"), "--feedback", str(feedback)],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "before any submission was graded" in proc.stderr and "dptutor.assignments" in proc.stderr, proc.stderr
    assert "with the Python of the environment where dptutor" in proc.stderr  # what to do
    assert not (tmp_path / "scores.csv").exists() and list(feedback.iterdir()) == []
    assert "grading a.md" not in proc.stdout


def test_bubblewrap_missing_stops_grading_before_any_score(tmp_path: Path) -> None:
    """No bwrap on the PATH: exit 2 with the install command, no CSV and no feedback file."""
    subs, feedback = tmp_path / "subs", tmp_path / "feedback"
    subs.mkdir()
    (subs / "a.md").write_text(notebook(STUB))
    proc = subprocess.run([sys.executable, "-m", "dptutor", "grade", "sampler", str(subs), "--csv",
                           str(tmp_path / "scores.csv"), "--feedback", str(feedback)],
                          cwd=tmp_path, env=_env(PATH=str(tmp_path)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "sudo apt-get install bubblewrap" in proc.stderr, proc.stderr
    assert not (tmp_path / "scores.csv").exists() and not any(feedback.glob("*"))


def test_a_kernel_that_cannot_start_stops_the_run_instead_of_scoring_zero(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the pre-flight (here: the interpreter vanishes), a kernel that dies before it answers is the
    environment's failure: grade_notebook raises EnvironmentFailure instead of returning a zero."""
    from dptutor.course import executor, sandbox

    path = tmp_path / "a.md"
    path.write_text(notebook(REFERENCE))
    monkeypatch.setattr(sandbox, "interpreter", lambda: str(tmp_path / "no-such-python"))
    with pytest.raises(sandbox.EnvironmentFailure, match="environment's fault, not the student's"):
        executor.grade_notebook(path, "sampler", sandbox="none", timeout=30, total_timeout=120)


def test_an_endless_loop_is_reported_as_the_time_limit_not_as_keyboardinterrupt(tmp_path: Path) -> None:
    """Issue 36, item 6: the grader's interrupt at the cell's time limit reached the student as
    "raised KeyboardInterrupt"."""
    from dptutor.course.executor import grade_notebook

    path = tmp_path / "loop.md"
    path.write_text(notebook(REFERENCE, "while True:\n    pass"))
    kind = "bwrap" if shutil.which("bwrap") else "none"
    result = grade_notebook(path, "sampler", sandbox=kind, timeout=2, total_timeout=120)
    text = " ".join(result.notes)
    # In bubblewrap the limits count the sandbox's own CPU time (dptutor.course.cputime), and say so.
    said = "went past its time limit of 2 s of CPU time" if kind == "bwrap" else "ran past the 2 s time limit"
    assert said in text and "KeyboardInterrupt" not in text, result.notes
