"""Assignment ``audit``: audit two mystery mechanisms with :mod:`dptutor.audit` at 95 %.

The student's answers are data (verdicts, the ``AuditResult`` evidence, a diagnosis, a
justification): the checks replay the evidence from its recorded seed, under a size limit checked
before the replay starts and a time limit while it runs.  The mystery mechanisms are the active member
of the family in :mod:`dptutor.assignments.instances`: the book's public self-study member, or the member
a course's token selects (``use_course``; the grader: ``grade --course FOLDER``).  The right verdicts
and diagnosis come from that member.  The justification is graded by hand, with the rubric in the
instructor's edition.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_int
from dptutor.audit import AuditResult, estimate_loss
from dptutor.assignments.feedback import Assignment, Finding, NotAnswered, Question, named, short_repr
from dptutor.assignments.instances import (AUDIT_BUGS, SELF_STUDY, active_member, answer_member, answers_scope,
                                           audit_mystery)
from dptutor.assignments.replay import ReplayTooLong, check_deadline

__all__ = ["ASSIGNMENT", "AUDIT_EPSILON", "AUDIT_CONFIDENCE", "VERDICTS", "DIAGNOSES", "JUSTIFICATION_WORDS",
           "AUDIT_MAX_WORK", "AUDIT_REPLAY_SECONDS", "BY_HAND", "RECORD_TYPES", "mystery_a", "mystery_b",
           "separates_candidates"]

#: The privacy budget both mystery mechanisms claim.
AUDIT_EPSILON = 1.0
#: Confidence level of the verdicts.
AUDIT_CONFIDENCE = 0.95
#: Allowed verdicts.
VERDICTS = ("violates", "no evidence")
#: The possible explanations of mystery A's behaviour, by key.
DIAGNOSES = {
    "one-sided": "the noise is never negative",
    "sensitivity-1": "the scale is 1/epsilon whatever n is (sensitivity 1 instead of n)",
    "l2": "the scale is sqrt(n)/epsilon (the l2 sensitivity instead of the l1 sensitivity n)",
    "half-scale": "the scale is n/(2 epsilon) (half the noise)",
}
_AUDIT_MIN_TRIALS = 100_000
_AUDIT_MAX_TRIALS = 5_000_000
#: The grader replays a student's evidence only if n * trials is at most this (decided before the
#: replay starts; about 20 s on one core), and stops a replay that runs longer than this many seconds.
AUDIT_MAX_WORK = 2**28
AUDIT_REPLAY_SECONDS = 60.0
#: Questions graded by hand (their points are pending in the grader's output).
BY_HAND = ("q4",)
if set(DIAGNOSES) != set(AUDIT_BUGS):
    raise ValueError("DIAGNOSES must describe exactly the bugs of the audit family")


def mystery_a(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Mystery mechanism A: a local-DP release of ``x`` (shape ``(trials, n)``) claiming epsilon-DP."""
    return audit_mystery("A", x, epsilon, rng)


def mystery_b(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Mystery mechanism B: a local-DP release of ``x`` (shape ``(trials, n)``) claiming epsilon-DP."""
    return audit_mystery("B", x, epsilon, rng)


# The candidates' noise scales at dimension n (times 1/epsilon), as DIAGNOSES describes them; the
# one-sided candidate draws |Lap(n/epsilon)|.
_CANDIDATE_SCALES: dict[str, Callable[[int], float]] = {
    "one-sided": lambda n: float(n),
    "sensitivity-1": lambda n: 1.0,
    "l2": lambda n: math.sqrt(n),
    "half-scale": lambda n: n / 2,
}


def _true_verdict(label: str) -> str:
    """The graded member's verdict on mechanism ``label`` (:func:`~dptutor.assignments.instances.answer_member`):
    its broken mechanism violates epsilon-DP (its noise is one-sided, or its scale is below the l1
    calibration n/epsilon at some n)."""
    member = answer_member("audit")
    short = member.one_sided(label) or any(
        member.scale(label, n, AUDIT_EPSILON) < n / AUDIT_EPSILON * (1 - 1e-12) for n in range(1, 129))
    return VERDICTS[0] if short else VERDICTS[1]


def _true_diagnosis() -> str:
    """The candidate that matches the broken mechanism: one-sided noise, else the candidate whose scale
    equals the broken mechanism's at every dimension that separates the candidates."""
    member = answer_member("audit")
    broken = next(label for label in "AB" if _true_verdict(label) == VERDICTS[0])
    if member.one_sided(broken):
        return "one-sided"
    dims = [n for n in range(3, 65) if separates_candidates(n)]
    return next(key for key, scale in _CANDIDATE_SCALES.items() if key != "one-sided" and all(
        math.isclose(scale(n), member.scale(broken, n, 1.0), rel_tol=1e-12) for n in dims))


def _audit_result(fields: dict[str, Any]) -> AuditResult:
    """The grader's constructor of an ``AuditResult`` from a kernel's data (the only object type this
    assignment accepts): rebuilt from its counts, so nothing the kernel computed is kept."""
    seed = fields.get("seed")
    if isinstance(seed, (list, tuple)):
        seed = tuple(seed)
    if not (seed is None or (type(seed) is int) or (isinstance(seed, tuple) and 0 < len(seed) <= 64
                                                     and all(type(v) is int for v in seed))):
        raise ValueError("seed must be None, an int or a tuple of ints")
    if type(fields.get("n")) is not int or not isinstance(fields.get("mechanism", ""), str):
        raise ValueError("n must be an int and mechanism a str")
    eps = fields.get("epsilon")
    if type(eps) not in (int, float):
        raise ValueError("epsilon must be a number")
    counts = np.asarray(fields.get("counts"))
    if counts.shape != (2, 2) or counts.dtype.kind not in "iu":
        raise ValueError("counts must be a 2x2 table of integers")
    return AuditResult.from_counts(counts.astype(np.int64), n=fields["n"], epsilon=float(eps), seed=seed,
                                   mechanism=fields.get("mechanism", "")[:200])


#: The object types the grader rebuilds from a kernel's data for this assignment (see the registry).
RECORD_TYPES = {"AuditResult": _audit_result}


def _bounded(mechanism: Callable, deadline: float) -> Callable:
    """``mechanism`` that stops the replay (``ReplayTooLong``) once ``deadline`` (monotonic) has passed;
    the auditor calls it once per chunk of trials, so the replay stops within one chunk."""

    def run(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
        check_deadline(deadline)
        return mechanism(x, epsilon, rng)

    run.__name__ = mechanism.__name__
    return run


def _verdict(verdicts: Any, key: str) -> str:
    if not isinstance(verdicts, Mapping):
        raise NotAnswered(f"verdicts should be a dict like {{'A': ..., 'B': ...}}, got {type(verdicts).__name__}")
    value = verdicts.get(key)
    if value is None:
        raise NotAnswered(f"no verdict for mechanism {key} yet")
    return str(value).strip().lower()


def _replay(result: Any, mechanism: Callable, label: str, minimum_trials: int) -> list[Finding]:
    """Check that ``result`` is a genuine 95% audit of ``mechanism`` at epsilon = AUDIT_EPSILON."""
    if result is None:
        raise NotAnswered(f"no evidence for mechanism {label} yet")
    if not isinstance(result, AuditResult):
        return [Finding(False, f"evidence['{label}'] should be the AuditResult returned by estimate_loss, "
                               f"got {type(result).__name__}")]
    findings = []
    if result.epsilon != AUDIT_EPSILON or result.trials < minimum_trials:
        findings.append(Finding(False, f"audit mechanism {label} at epsilon = {AUDIT_EPSILON:g} (the budget it claims) "
                                       f"with at least {minimum_trials:,} trials per dataset; your evidence has "
                                       f"epsilon = {result.epsilon:g} and {result.trials:,} trials"))
    else:
        findings.append(Finding(True, f"audited at epsilon = {AUDIT_EPSILON:g} with {result.trials:,} trials"))
    if result.trials > _AUDIT_MAX_TRIALS or result.n * result.trials > AUDIT_MAX_WORK:
        findings.append(Finding(False, f"use at most {_AUDIT_MAX_TRIALS:,} trials and n * trials <= {AUDIT_MAX_WORK:,} "
                                       f"so that the grader can replay your audit (yours: n = {result.n:,}, "
                                       f"{result.trials:,} trials): not replayed"))
        return findings
    try:
        counts = _replayed_counts(mechanism, result)
    except ReplayTooLong:
        findings.append(Finding(False, f"replaying your audit took longer than the grader's limit of "
                                       f"{AUDIT_REPLAY_SECONDS:g} s: not replayed; use fewer trials or a smaller n"))
        return findings
    name = mechanism.__name__
    if np.array_equal(counts, result.counts):
        findings.append(Finding(True, f"replaying estimate_loss({name}, n={result.n}, ...) reproduces your counts"))
    elif _self_study_audit(mechanism, result):
        findings.append(Finding(False, (
            f"the `use_course(...)` line is missing: evidence['{label}'] is an audit of the book's self-study "
            f"{name}, not of your course's. Put back the template's `use_course(...)` line (first code cell), "
            "then rerun the notebook from the top.")))
    else:
        findings.append(Finding(False, (
            f"replaying estimate_loss({name}, n={result.n}, epsilon={result.epsilon:g}, trials={result.trials}, "
            f"rng={result.seed}) does not reproduce your counts: is evidence['{label}'] an audit of {name}?")))
    return findings


def _replayed_counts(mechanism: Callable, result: AuditResult) -> NDArray:
    """The counts of ``estimate_loss`` replayed with the evidence's settings and seed (``ReplayTooLong``
    past :data:`AUDIT_REPLAY_SECONDS`)."""
    seed = list(result.seed) if isinstance(result.seed, tuple) else result.seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimate_loss(_bounded(mechanism, time.monotonic() + AUDIT_REPLAY_SECONDS), result.n,
                             result.epsilon, result.trials, rng=seed).counts


def _self_study_audit(mechanism: Callable, result: AuditResult) -> bool:
    """Whether evidence that does not replay under a course's mysteries replays under the book's
    self-study ones (the notebook ran without its ``use_course`` line)."""
    if active_member("audit") == SELF_STUDY["audit"]:
        return False
    try:
        with answers_scope({"audit": SELF_STUDY["audit"]}):
            return bool(np.array_equal(_replayed_counts(mechanism, result), result.counts))
    except ReplayTooLong:
        return False


def _pending(what: str, value: str) -> Finding:
    return Finding(None, f"{what} recorded ({value!r}); graded after submission")


def _bound_agrees(result: Any, verdict: str, label: str, *, right: bool = False) -> Finding:
    """Whether ``verdict`` agrees with the 95% lower bound of the student's own evidence ``result``
    (``right``: the verdict is known to be right, so the hint does not suggest changing it)."""
    lower = result.lower_bound(AUDIT_CONFIDENCE)
    shows = lower > AUDIT_EPSILON
    if shows == (verdict == "violates"):
        return Finding(True, f"your verdict for {label} agrees with your evidence: 95% lower bound {lower:.3g} "
                             f"{'>' if shows else '<='} epsilon = {AUDIT_EPSILON:g}")
    if verdict == "violates":
        way = "." if right else ", or change the verdict."
        return Finding(False, (
            f"your evidence for {label} has a 95% lower bound of {lower:.3g} <= epsilon = {AUDIT_EPSILON:g}: it "
            "shows no violation. A violation needs the lower bound above epsilon (an estimate above epsilon is "
            f"not enough); find a dimension n and enough trials where it is{way}"))
    return Finding(False, f"your evidence for {label} has a 95% lower bound of {lower:.3g} > epsilon = "
                          f"{AUDIT_EPSILON:g}, which shows a violation, but your verdict is {verdict!r}")


def _agreement(result: Any, verdict: str, truth: str | None, label: str) -> Finding:
    """The ``agreement`` check: the verdict agrees with the student's own evidence (the feedback, and
    grading); when grading (``truth`` known), a wrong verdict earns no agreement point, whatever the
    evidence says, so a wrong verdict costs both of the verdict's checks."""
    found = _bound_agrees(result, verdict, label, right=truth is not None and verdict == truth)
    if truth is None or verdict == truth or not found.passed:
        return found
    return Finding(False, f"your verdict for {label} agrees with your evidence, but the verdict is not right: "
                          "the agreement counts only for a right verdict")


def _evidence(evidence: Any, label: str) -> Any:
    if not isinstance(evidence, Mapping):
        raise NotAnswered("evidence should be a dict like {'A': audit_a, 'B': audit_b}")
    return evidence.get(label)


def _verdict_and_replay(verdicts: Any, evidence: Any, label: str, truth: str | None, wrong_hint: str,
                        mechanism: Callable, minimum_trials: int, *, grading: bool) -> tuple[str, Any, list[Finding]]:
    """What both audit questions check of mechanism ``label``: the verdict (``wrong_hint`` if it is
    not ``truth``; withheld unless ``grading``, and then ``truth`` may be None) and a replay of the
    evidence (:func:`_replay`).

    Returns the normalised verdict, the evidence and the findings.
    """
    verdict = _verdict(verdicts, label)
    if verdict not in VERDICTS:
        finding = Finding(False, f"verdicts['{label}'] = {verdict!r} is not one of {VERDICTS}")
    elif not grading:
        finding = _pending(f"verdict for {label}", verdict)
    elif verdict == truth:
        finding = Finding(True, f"verdict for {label}: {verdict}")
    else:
        finding = Finding(False, f"verdict for {label}: {wrong_hint}")
    result = _evidence(evidence, label)
    return verdict, result, [*named("verdict", finding), *named("replay", *_replay(result, mechanism, label,
                                                                                  minimum_trials))]


#: The hint for a wrong verdict, by the right verdict (shown only when grading).
_WRONG_VERDICT_HINTS = {
    "violates": "audits at one dimension can miss what other dimensions show: scan n (the paper scans n = 1 to "
                "128) and decide from the 95% lower bounds.",
    "no evidence": "a violation needs a 95% lower bound above epsilon; an estimate above epsilon is not enough "
                   "(sampling error).",
}


def _audit_one(label: str, verdicts: Any, evidence: Any, *, grading: bool) -> list[Finding]:
    """The verdict on mechanism ``label`` and a replayable audit that supports it: the verdict must agree
    with the student's own evidence (its 95% lower bound), and when grading, a wrong verdict also loses
    the agreement (so the broken mechanism's evidence must show its violation for full marks)."""
    truth = _true_verdict(label) if grading else None  # the answers are read only when grading
    mechanism = mystery_a if label == "A" else mystery_b
    verdict, result, findings = _verdict_and_replay(verdicts, evidence, label, truth,
                                                    _WRONG_VERDICT_HINTS.get(truth, ""),
                                                    mechanism, _AUDIT_MIN_TRIALS, grading=grading)
    if label == "B" and isinstance(result, AuditResult):
        a = _evidence(evidence, "A")
        if isinstance(a, AuditResult) and result.n != a.n:
            findings.append(Finding(False, f"compare like with like: audit B at the dimension where you audited A "
                                           f"(n = {a.n}), not n = {result.n}", "same_dimension"))
        else:
            findings.append(Finding(True, f"audited at the same dimension as A (n = {result.n})", "same_dimension"))
    if isinstance(result, AuditResult) and verdict in VERDICTS:
        findings += named("agreement", _agreement(result, verdict, truth, label))
    return findings


def _audit_a(verdicts: Any, evidence: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q1: the verdict on mechanism A and a replayable audit that supports it."""
    return _audit_one("A", verdicts, evidence, grading=grading_seed is not None)


def _audit_b(verdicts: Any, evidence: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q2: the verdict on mechanism B and a replayable audit at A's dimension that supports it."""
    return _audit_one("B", verdicts, evidence, grading=grading_seed is not None)


def _audit_diagnosis(diagnosis: Any, *, grading_seed: int | None = None) -> list[Finding]:
    if diagnosis is None:
        raise NotAnswered("no diagnosis yet")
    key = str(diagnosis).strip().lower()
    if key not in DIAGNOSES:
        return [Finding(False, f"diagnosis should be one of {sorted(DIAGNOSES)}, got {short_repr(diagnosis)}")]
    if grading_seed is None:
        return [_pending("diagnosis", key)]
    if key == _true_diagnosis():
        return [Finding(True, f"the broken mechanism's noise: {DIAGNOSES[key]}")]
    hints = {
        "one-sided": "one-sided noise gives an infinite loss at every n (like DPText); is that what your audits show?",
        "sensitivity-1": "with scale 1/epsilon the loss would grow with n without bound (like ADePT); does it?",
        "half-scale": "half the noise would already violate the claim at n = 1; does it?",
        "l2": "the l2 scale sqrt(n)/epsilon matches n/epsilon at n = 1, so its loss shows only at some "
              "dimensions; does the broken mechanism's loss follow it at every dimension that separates the "
              "candidates?",
    }
    return [Finding(False, f"not {key!r}: {hints[key]} To compare, write the candidate as a mechanism of your "
                           "own, audit it at the same n as the mystery, and compare the two losses up to "
                           "sampling error.")]



#: Words a justification should have, at least and at most.
JUSTIFICATION_WORDS = (15, 250)


def separates_candidates(n: int) -> bool:
    """Whether the four candidates' noise scales (n, 1, sqrt(n), n/2, times 1/epsilon for the
    two-sided ones) are pairwise different at dimension ``n``: not at n = 1 (l2 = sensitivity-1),
    n = 2 (half-scale = sensitivity-1) or n = 4 (half-scale = l2)."""
    n = check_int(n, "n", minimum=1)
    return n >= 3 and n != 4



def _audit_justification(justification: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """Free text, graded by hand after submission with the rubric in the instructor's edition: the
    grader only checks that it is a text of a sensible length and records it as pending."""
    if justification is None or (isinstance(justification, str) and not justification.strip()):
        raise NotAnswered("no justification yet")
    if not isinstance(justification, str):
        return [Finding(False, f"justification should be a string (text), got {type(justification).__name__}")]
    words = len(justification.split())
    low, high = JUSTIFICATION_WORDS
    if not low <= words <= high:
        return [Finding(False, f"the justification has {words} words; write between {low} and {high}")]
    if grading_seed is None:
        return [_pending("justification", f"{words} words")]
    return [Finding(False, f"graded by hand: the instructor reads your justification ({words} words) with the "
                           "rubric of the instructor's edition; its points are pending, not lost")]


ASSIGNMENT = Assignment("audit", "Auditing two mystery mechanisms", "audit.md", (
    Question("q1", "mechanism A", 2.0, ("verdicts", "evidence"), _audit_a, checks=("verdict", "replay", "agreement")),
    Question("q2", "mechanism B", 2.0, ("verdicts", "evidence"), _audit_b,
             checks=("verdict", "replay", "same_dimension", "agreement")),
    Question("q3", "diagnosis", 1.0, ("diagnosis",), _audit_diagnosis),
    Question("q4", "justification", 1.0, ("justification",), _audit_justification),
))
