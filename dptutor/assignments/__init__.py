"""The book's course assignments (``book/assignments/``): what runs in the student's kernel.

Six assignments, each a MyST Markdown notebook that students fill in:

========================  =====================================================================
``sampler``               inverse-CDF Laplace sampling (Eq. 4/5): law, domain, vectorisation
``mechanism``             a vector Laplace mechanism for the mean of m records in [0, 1]^k
``audit``                 audit two mystery mechanisms with :mod:`dptutor.audit` at 95 %
``pair_audit``            audit a mystery mechanism with ``audit_pair`` and write the attack
``selection``             AboveThreshold and report-noisy-max: their exact laws, and an audit of each
``bughunt``               find the bugs in three mechanisms, back each verdict with an audit, fix one
========================  =====================================================================

Students get feedback in the notebook from small check calls::

    from dptutor.assignments import checker
    check = checker("sampler")
    check.q1(laplace_inverse_cdf)      # -> a Feedback, shown as a short report

This package is the student's side of the trust boundary: the check framework, the assignments'
checks, the public mysteries and the kernel's half of the call protocol.  It never imports
``dptutor.course``, the grader's side (``python -m dptutor grade sampler submissions/`` grades a
folder of submissions, each in a sandbox of its own; ``python -m dptutor release`` regenerates the
student notebooks); ``tests/library/test_import_contract.py`` checks that.

Modules, one idea each:

- :mod:`~dptutor.assignments.feedback`: :class:`~dptutor.assignments.feedback.Finding`,
  :class:`~dptutor.assignments.feedback.Feedback`, :class:`~dptutor.assignments.feedback.Question`,
  :class:`~dptutor.assignments.feedback.Assignment`, and the helpers checks use to call student code;
- :mod:`~dptutor.assignments.registry`: :data:`~dptutor.assignments.registry.ASSIGNMENTS`,
  :func:`~dptutor.assignments.registry.check`, :func:`~dptutor.assignments.registry.checker`;
- :mod:`~dptutor.assignments.record`: the helpers a check calls student code with (the same check
  gives the feedback here and grades in the grader, where each call becomes a call protocol's cell);
- :mod:`~dptutor.assignments.kernel`: the kernel's half of the call protocol (it answers the
  grader's calls); :mod:`~dptutor.assignments.encoding`: the protocol's data format;
- :mod:`~dptutor.assignments.instances`: the families of mystery mechanisms of ``audit`` and
  ``pair_audit``, the course tokens' public rule, and their threat model;
- ``dptutor.assignments.replay``: the deadline of the ``audit`` and ``bughunt`` checks' replays of a
  student's evidence (``ReplayTooLong``);
- one module per assignment (:mod:`~dptutor.assignments.sampler`, :mod:`~dptutor.assignments.mechanism`,
  :mod:`~dptutor.assignments.audit`, :mod:`~dptutor.assignments.pair_audit`,
  :mod:`~dptutor.assignments.selection`), holding its seeds, parameters and checks.

Adding an assignment (say ``pair_audit``)
-----------------------------------------
1. Write ``dptutor/assignments/pair_audit.py``.  It defines the checks, plain functions
   ``check(*objects, grading_seed=None) -> list[Finding]`` that receive the notebook objects a question
   needs (``grading_seed`` None in the feedback run, an int in a grading run: use other seeds and
   parameters than the feedback), and
   ends with::

       ASSIGNMENT = Assignment("pair_audit", "Auditing a pair of mechanisms", "pair_audit.md", (
           Question("q1", "a neutral title", 2.0, ("names", "it", "needs"), _check_q1),
           ...
       ))

   A check raises :class:`~dptutor.assignments.feedback.NotAnswered` while the template's placeholder is in place, and returns a
   ``Finding(None, ...)`` for an answer that the feedback records but only grading judges.  To let
   instructors weigh its checks, name them (``Question(..., checks=("shape", "loop"))``) and give
   each finding its name (``Finding(True, "...", "shape")``).  For error carried forward, list the
   earlier answers a question may be judged against (``carried=("mean_sensitivity",)``): its check
   then takes ``carried={name: object}`` when the configuration asks for it (``mechanism`` q2);
   otherwise say in ``Assignment(..., independent="...")`` why no question builds on another.
2. Add one line, ``"pair_audit",``, to :data:`~dptutor.assignments.registry.ASSIGNMENT_MODULES`.

When grading, every check runs in the grader's process (``dptutor.course.remote``); the
student's kernel only answers calls.  A student function reaches the check as a proxy: each call's
inputs (numbers, strings, numpy arrays, a ``numpy.random.Generator``'s state, lists and dicts of
these) go to the kernel as data, and what it returned or raised comes back as data.  Values reach the
check as plain data too: ``str``, numbers (NaN and infinity included: the check judges them), lists,
dicts, numpy arrays, and objects only of the types the assignment module lists in ``RECORD_TYPES``
(a bare type name -> the grader's own constructor; ``audit`` allows ``AuditResult``); anything else
stays an inert placeholder.  Send many independent calls in one kernel cell with
:func:`~dptutor.assignments.record.call_many`, time with :func:`~dptutor.assignments.record.measure` (fresh
inputs per repeat), and note what a human should look at with
:func:`~dptutor.assignments.record.flag_for_review`.  A grading run's parameters come from
``grading_rng(grading_seed)`` (:mod:`~dptutor.assignments.feedback`): the grading seed is an int drawn
fresh for each question, in the grader; it never reaches the kernel.  Bound every replay of student data (a size limit checked
before it starts, a time limit while it runs: see :mod:`~dptutor.assignments.audit`).

That is all the code: the CLI (``grade pair_audit``), ``release`` and the tests that loop over
:data:`~dptutor.assignments.registry.ASSIGNMENTS` pick it up.  The notebooks are content, not code: write
``book/assignments/instructor/pair_audit.md`` (solutions between ``BEGIN SOLUTION`` / ``END
SOLUTION`` markers), run ``python -m dptutor release`` to write ``book/assignments/pair_audit.md``,
and list that page in ``_toc.yml``.
"""

from __future__ import annotations

from dptutor.assignments.audit import AUDIT_EPSILON, DIAGNOSES, VERDICTS, mystery_a, mystery_b
from dptutor.assignments.feedback import Assignment, Feedback, Finding, NotAnswered, Question
from dptutor.assignments.instances import use_course, use_self_study
from dptutor.assignments.registry import ASSIGNMENTS, check, checker, get_assignment

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
]
