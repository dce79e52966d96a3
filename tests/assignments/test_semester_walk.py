"""A semester's submissions graded through the real grader: each gets the score its instructor
notebook's rubric says, and no note for the instructor reaches a student's feedback file (issue 36).

Each submission is the book's student notebook with one code cell appended, the file
``semester/<assignment>-<name>.txt`` (a blank submission appends nothing).  The rubric's arithmetic,
per submission:

==========================================  ======================  =========================================
submission                                  scores                  why (the rubric)
==========================================  ======================  =========================================
sampler-correct                             2, 1, 1                 every finding passes
sampler-wrong_scale (b/2)                   0, 1, 1                 both law tests fail, so monotone earns nothing
sampler-blank                               0, 0, 0                 the stubs are in place
mechanism-correct                           1, 2, 1                 every finding passes
mechanism-one_coordinate (Delta = 1/m)      0.25, 0, 1              right only at k = 1 (1 of 4); noise too small
mechanism-one_coordinate, carry_forward     0.25, 2, 1              the same error throughout: carried into q2,
                                                                    with a note for the instructor
mechanism-crash (the kernel dies)           0, 0, 0                 nothing graded
audit-correct                               2, 2, 1, 0              q4 is graded by hand (pending)
audit-contradicting_verdict                 1, 2, 1, 0              A: wrong verdict, so no agreement: 2 of 4
audit-crash                                 0, 0, 0, 0              nothing graded
selection-correct                           2, 2, 2                 every finding passes
selection-no_threshold_noise                1.33, 0, 2              the law fails (2 of 3), the audit flags it
selection-package (calls dptutor.selection) 2, 2, 2                 full marks, and a note for the instructor
selection-blank                             0, 0, 0                 the stubs are in place
==========================================  ======================  =========================================
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dptutor.assignments import ASSIGNMENTS
from dptutor.assignments.feedback import INSTRUCTOR_NOTE
from dptutor.course import executor
from dptutor.course.reports import student_feedback
from dptutor.course.scores import ScoreRecord
from test_grading import ASSIGNMENT_DIR

SEMESTER = Path(__file__).parent / "semester"
SANDBOX = None if shutil.which("bwrap") else "none"

#: (submission, carry_forward) -> the scores the rubric gives, question by question.
EXPECTED = {
    ("sampler-correct", False): (2, 1, 1),
    ("sampler-wrong_scale", False): (0, 1, 1),
    ("sampler-blank", False): (0, 0, 0),
    ("mechanism-correct", False): (1, 2, 1),
    ("mechanism-one_coordinate", False): (0.25, 0, 1),
    ("mechanism-one_coordinate", True): (0.25, 2, 1),
    ("mechanism-crash", False): (0, 0, 0),
    ("audit-correct", False): (2, 2, 1, 0),
    ("audit-contradicting_verdict", False): (1, 2, 1, 0),
    ("audit-crash", False): (0, 0, 0, 0),
    ("selection-correct", False): (2, 2, 2),
    ("selection-no_threshold_noise", False): (1.33, 0, 2),
    ("selection-package", False): (2, 2, 2),
    ("selection-blank", False): (0, 0, 0),
}


def submission(name: str, folder: Path) -> Path:
    """The student notebook of the submission's assignment, with its answer cell appended."""
    assignment = name.split("-")[0]
    text = (ASSIGNMENT_DIR / ASSIGNMENTS[assignment].notebook).read_text(encoding="utf-8")
    answer = SEMESTER / f"{name}.txt"
    if answer.exists():
        text += "\n```{code-cell} ipython3\n" + answer.read_text(encoding="utf-8").rstrip() + "\n```\n"
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_answer_file_is_graded_here() -> None:
    assert {p.stem for p in SEMESTER.glob("*.txt")} == {name for name, _ in EXPECTED if not name.endswith("-blank")}


@pytest.mark.parametrize(("name", "carry_forward"), sorted(EXPECTED))
def test_each_submission_gets_the_rubrics_score(tmp_path: Path, name: str, carry_forward: bool) -> None:
    assignment = name.split("-")[0]
    result = executor.grade_notebook(submission(name, tmp_path), assignment, sandbox=SANDBOX, timeout=120,
                                     carry_forward=carry_forward)
    got = tuple(result.scores[q.name] for q in ASSIGNMENTS[assignment].questions)
    assert got == EXPECTED[name, carry_forward], (got, result.messages, result.notes)
    notes = [m for ms in result.messages.values() for m in ms if m.startswith(INSTRUCTOR_NOTE)]
    # Notes for the instructor: the package's own mechanisms called, error carried forward credited.
    assert bool(notes) == (name == "selection-package" or carry_forward), result.messages
    feedback = student_feedback(ScoreRecord(result))
    assert "for the instructor" not in feedback, feedback
    if name.endswith("-crash"):
        assert "died" in " ".join(result.notes + [m for ms in result.messages.values() for m in ms]), result.notes
