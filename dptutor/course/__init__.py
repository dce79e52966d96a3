"""The grader's side of the course assignments: what runs only on the instructor's machine.

The student's side (the checks, the mysteries, the kernel's half of the call protocol) is
:mod:`dptutor.assignments`, which never imports this package.  Here, one idea per module:

- :mod:`~dptutor.course.executor`: the only code that executes student notebooks, one kernel per
  submission in a sandbox (its docstring holds the threat model); :mod:`~dptutor.course.batch`: a
  folder of submissions, one after another or by worker processes; :mod:`~dptutor.course.signals`:
  Ctrl-C and SIGTERM while grading; :mod:`~dptutor.course.intake`: a submission read, and the
  kernel's output kept, within bounds;
- :mod:`~dptutor.course.remote`: the grader's half of the call protocol (every check runs here; the
  kernel only answers calls); :mod:`~dptutor.course.answers`: the strict reading of the kernel's answers;
- :mod:`~dptutor.course.sandbox`: one bubblewrap sandbox (or podman/docker container) per
  submission's kernel, with its resource limits;
- :mod:`~dptutor.course.grade`: ``python -m dptutor grade`` (:class:`~dptutor.course.grade.GradeOptions`,
  resumable runs); :mod:`~dptutor.course.result`: one submission's scores;
  :mod:`~dptutor.course.textsafe`: text from a submission made valid, visible and safe for reports,
  terminals and spreadsheets;
- :mod:`~dptutor.course.scores`: the scores CSV; :mod:`~dptutor.course.config`: the grading
  configuration file and the override file; :mod:`~dptutor.course.submissions`: the layouts of a
  submissions folder and the student identifier rule;
- :mod:`~dptutor.course.reports`: each student's feedback file and the instructor's report, written from
  the recorded rows; :mod:`~dptutor.course.rescore`: ``python -m dptutor rescore`` (scoring the rows
  again without running a notebook); :mod:`~dptutor.course.handgrade`: ``python -m dptutor handgrade``
  (the answers graded by hand, for a teaching assistant, and the points back);
- :mod:`~dptutor.course.keys`: course keys and tokens (the instructor's half of
  :mod:`dptutor.assignments.instances`); :mod:`~dptutor.course.folders`: a course folder
  (``python -m dptutor course new``); :mod:`~dptutor.course.release`: instructor notebook -> student
  notebook;
- :mod:`~dptutor.course.lms`, :mod:`~dptutor.course.otter` (with :mod:`~dptutor.course.otter_plugin`):
  exports for Canvas, Moodle and Gradescope.

The command line (``python -m dptutor grade``, ``rescore``, ``handgrade``, ``release``, ``course``,
``export-lms``, ``export-otter``) is :mod:`dptutor.cli`.
"""

from __future__ import annotations

from dptutor.course.release import BEGIN_MARKER, release, student_version
from dptutor.course.batch import grade_folder, read_csv, write_csv
from dptutor.course.executor import FEEDBACK_TAG, grade_notebook
from dptutor.course.result import SubmissionResult

__all__ = [
    "FEEDBACK_TAG",
    "SubmissionResult",
    "grade_notebook",
    "grade_folder",
    "read_csv",
    "write_csv",
    "BEGIN_MARKER",
    "student_version",
    "release",
]
