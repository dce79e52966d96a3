"""Autograding for the book's course assignments (``book/assignments/``).

Five assignments, each a MyST Markdown notebook that students fill in:

========================  =====================================================================
``sampler``               inverse-CDF Laplace sampling (Eq. 4/5): law, domain, vectorisation
``mechanism``             a vector Laplace mechanism for the mean of m records in [0, 1]^k
``audit``                 audit two mystery mechanisms with :mod:`dptutor.audit` at 95 %
``pair_audit``            audit a mystery mechanism with ``audit_pair`` and write the attack
``selection``             AboveThreshold and report-noisy-max: their exact laws, and an audit of each
========================  =====================================================================

Students get feedback in the notebook from small check calls::

    from dptutor.grading import checker
    check = checker("sampler")
    check.q1(laplace_inverse_cdf)      # -> a Feedback, shown as a short report

Instructors grade a folder of submissions with ``python -m dptutor grade sampler submissions/``,
each submission in a sandbox of its own (see :mod:`dptutor.grading.runner`) and regenerate the student notebooks with
``python -m dptutor release``.

Modules, one idea each:

- :mod:`~dptutor.grading.feedback`: :class:`Finding`, :class:`Feedback`, :class:`Question`,
  :class:`Assignment`, and the helpers checks use to call student code;
- :mod:`~dptutor.grading.registry`: :data:`ASSIGNMENTS`, :func:`check`, :func:`checker`;
- :mod:`~dptutor.grading.runner`: the only code that executes student notebooks (its docstring
  holds the threat model);
- :mod:`~dptutor.grading.record`: the checks run in the grader; the kernel only answers calls whose
  inputs are written as data, and the grader rebuilds only allow-listed types from its answers;
- :mod:`~dptutor.grading.sandbox`: one bubblewrap sandbox (or podman/docker container) per
  submission's kernel, with its resource limits;
- :mod:`~dptutor.grading.release`: instructor notebook -> student notebook;
- :mod:`~dptutor.grading.instances`: the families of mystery mechanisms of ``audit`` and ``pair_audit``,
  the course tokens drawn from a course secret, and their threat model;
- :mod:`~dptutor.grading.course`: a course folder (``python -m dptutor course new``): private answer key
  and instructor notebooks, student notebooks to hand out, grading configuration;
- :mod:`~dptutor.grading.submissions`: the layouts of a submissions folder (flat, or one sub-folder per
  student) and the student identifier rule;
- :mod:`~dptutor.grading.scores`: the scores CSV (assignment, course, hidden values and overrides in
  every row; checked on resume);
- :mod:`~dptutor.grading.config`: the grading configuration file (points, time limits, late policy)
  and the override file;
- :mod:`~dptutor.grading.lms`: grade imports for Canvas and Moodle;
- one module per assignment (:mod:`~dptutor.grading.sampler`, :mod:`~dptutor.grading.mechanism`,
  :mod:`~dptutor.grading.audit`, :mod:`~dptutor.grading.pair_audit`, :mod:`~dptutor.grading.selection`), holding
  its seeds, parameters and checks.

Adding an assignment (say ``pair_audit``)
-----------------------------------------
1. Write ``dptutor/grading/pair_audit.py``.  It defines the checks, plain functions
   ``check(*objects, hidden=False) -> list[Finding]`` that receive the notebook objects a question
   needs (``hidden=True`` when grading: use other seeds and parameters than the feedback), and
   ends with::

       ASSIGNMENT = Assignment("pair_audit", "Auditing a pair of mechanisms", "pair_audit.md", (
           Question("q1", "a neutral title", 2.0, ("names", "it", "needs"), _check_q1),
           ...
       ))

   A check raises :class:`NotAnswered` while the template's placeholder is in place, and returns a
   ``Finding(None, ...)`` for an answer that the feedback records but only grading judges.  To let
   instructors weigh its checks, name them (``Question(..., checks=("shape", "loop"))``) and give
   each finding its name (``Finding(True, "...", "shape")``).  For error carried forward, list the
   earlier answers a question may be judged against (``carried=("mean_sensitivity",)``): its check
   then takes ``carried={name: object}`` when the configuration asks for it (``mechanism`` q2);
   otherwise say in ``Assignment(..., independent="...")`` why no question builds on another.
2. Add one line, ``"pair_audit",``, to :data:`~dptutor.grading.registry.ASSIGNMENT_MODULES`.

When grading, every check runs in the grader's process (:mod:`~dptutor.grading.record`); the
student's kernel only answers calls.  A student function reaches the check as a proxy: each call's
inputs (numbers, strings, numpy arrays, a ``numpy.random.Generator``'s state, lists and dicts of
these) go to the kernel as data, and what it returned or raised comes back as data.  Values reach the
check as plain data too: ``str``, numbers (NaN and infinity included: the check judges them), lists,
dicts, numpy arrays, and objects only of the types the assignment module lists in ``RECORD_TYPES``
(a bare type name -> the grader's own constructor; ``audit`` allows ``AuditResult``); anything else
stays an inert placeholder.  Send many independent calls in one kernel cell with
:func:`~dptutor.grading.record.call_many`, time with :func:`~dptutor.grading.record.measure` (fresh
inputs per repeat), and note what a human should look at with
:func:`~dptutor.grading.record.flag_for_review`.  Hidden parameters come from ``hidden_rng(hidden)``
(:mod:`~dptutor.grading.feedback`): ``hidden`` is an int drawn fresh for each question, in the
grader; it never reaches the kernel.  Bound every replay of student data (a size limit checked
before it starts, a time limit while it runs: see :mod:`~dptutor.grading.audit`).

That is all the code: the CLI (``grade pair_audit``), ``release`` and the tests that loop over
:data:`ASSIGNMENTS` pick it up.  The notebooks are content, not code: write
``book/assignments/instructor/pair_audit.md`` (solutions between ``BEGIN SOLUTION`` / ``END
SOLUTION`` markers), run ``python -m dptutor release`` to write ``book/assignments/pair_audit.md``,
and list that page in ``_toc.yml``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from dptutor._validate import check_sequence
from dptutor.grading.audit import AUDIT_EPSILON, DIAGNOSES, VERDICTS, mystery_a, mystery_b
from dptutor.grading.feedback import Assignment, Feedback, Finding, NotAnswered, Question
from dptutor.grading.instances import use_course, use_self_study
from dptutor.grading.registry import ASSIGNMENTS, check, checker, get_assignment
from dptutor.grading.release import BEGIN_MARKER, release, student_version
from dptutor.grading.runner import (FEEDBACK_TAG, SubmissionResult, add_grade_arguments, grade_folder,
                                    grade_notebook, read_csv, run_grade, write_csv)

__all__ = [
    "Finding",
    "Feedback",
    "Question",
    "Assignment",
    "NotAnswered",
    "ASSIGNMENTS",
    "get_assignment",
    "checker",
    "check",
    "mystery_a",
    "mystery_b",
    "use_course",
    "use_self_study",
    "AUDIT_EPSILON",
    "VERDICTS",
    "DIAGNOSES",
    "FEEDBACK_TAG",
    "SubmissionResult",
    "grade_notebook",
    "grade_folder",
    "read_csv",
    "write_csv",
    "student_version",
    "release",
    "add_grade_arguments",
    "run_grade",
    "main",
]

#: The marker line that opens a solution block (kept under its old name for the student-edition test).
_BEGIN = BEGIN_MARKER


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dptutor.grading grade ...`` or ``release``: the same as ``python -m dptutor ...``."""
    from dptutor.cli import main as cli_main

    if argv is not None and not all(isinstance(a, str) for a in check_sequence(argv, "argv", min_len=0)):
        raise TypeError("argv must be a sequence of str")
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("grade", "release", "-h", "--help"):
        got = repr(args[0]) if args else "nothing"
        print(f"python -m dptutor.grading: expected 'grade' or 'release', got {got}", file=sys.stderr)
        return 2
    try:
        return cli_main(args)
    except SystemExit as exc:  # argparse's usage errors and --help: returned as the exit code
        return exc.code if isinstance(exc.code, int) else 2
