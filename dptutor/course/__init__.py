"""The grader's side of the course assignments: what runs only on the instructor's machine.

The student's side (the checks, the mysteries, the kernel's half of the call protocol) is
:mod:`dptutor.assignments`, which never imports this package.  Here, one idea per module:

- :mod:`~dptutor.course.runner`: the only code that executes student notebooks (its docstring
  holds the threat model);
- :mod:`~dptutor.course.sandbox`: one bubblewrap sandbox (or podman/docker container) per
  submission's kernel, with its resource limits;
- :mod:`~dptutor.course.release`: instructor notebook -> student notebook;
- :mod:`~dptutor.course.folders`: a course folder (``python -m dptutor course new``): private answer
  key and instructor notebooks, student notebooks to hand out, grading configuration;
- :mod:`~dptutor.course.submissions`: the layouts of a submissions folder and the student
  identifier rule;
- :mod:`~dptutor.course.scores`: the scores CSV;
- :mod:`~dptutor.course.config`: the grading configuration file and the override file;
- :mod:`~dptutor.course.lms`, :mod:`~dptutor.course.otter`: exports for Canvas, Moodle and Gradescope.

The command line (``python -m dptutor grade``, ``release``, ``course``, ``export-lms``,
``export-otter``) is :mod:`dptutor.cli`.
"""

from __future__ import annotations

from dptutor.course.release import BEGIN_MARKER, release, student_version
from dptutor.course.runner import FEEDBACK_TAG, SubmissionResult, grade_folder, grade_notebook, read_csv, write_csv

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
