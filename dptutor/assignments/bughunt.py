"""Assignment ``bughunt``: find the bugs in three mechanisms, support each verdict with an audit, fix one.

The three mechanisms (:data:`MECHANISMS`) are the active member of the ``bughunt`` family
(:mod:`dptutor.assignments.bug_family`, selected per course in :mod:`dptutor.assignments.instances`);
each claims :data:`~dptutor.assignments.bug_family.HUNT_EPSILON` and is correct or broken by a bug of
the book's lab of real bugs.  For each mechanism the student gives a verdict, a diagnosis (a key of
:data:`DIAGNOSES`) and evidence: the specification of one :func:`~dptutor.audit.audit_pair` run (two
neighbouring datasets, trials, seed), which the check re-runs with :func:`hunt_audit` under a size
limit and a time limit.  The verdict must agree with that run's 95 % lower bound and, when grading,
with the member.  The fix (q4) is a correct sum-of-squares mechanism for any bounds and epsilon: its
noise law is tested on parameters drawn per submission from the grading run's generator.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice
from dptutor.assignments.bug_family import (HUNT_BOUNDS, HUNT_EPSILON, HUNT_LABELS, HUNT_MAX_ENTRIES,
                                            SCORE_SENSITIVITY, hunt_release, neighbour_problem)
from dptutor.assignments.feedback import (KS_ALPHA, Assignment, Finding, NotAnswered, Question, as_floats, describe,
                                          grading_rng, named)
from dptutor.assignments.instances import active_member, answer_member
from dptutor.assignments.record import call_many
from dptutor.assignments.replay import ReplayTooLong, check_deadline
from dptutor.audit import PairAudit, audit_pair

__all__ = ["ASSIGNMENT", "HUNT_EPSILON", "HUNT_BOUNDS", "SCORE_SENSITIVITY", "HUNT_LABELS", "HUNT_VERDICTS",
           "DIAGNOSES", "HUNT_MIN_TRIALS", "HUNT_MAX_TRIALS", "HUNT_MAX_WORK", "HUNT_REPLAY_SECONDS", "MECHANISMS",
           "mechanism_histogram", "mechanism_squares", "mechanism_selection", "hunt_audit"]

#: Allowed verdicts.
HUNT_VERDICTS = ("broken", "no evidence")
#: Allowed diagnoses: the key of each bug, and what it is.
DIAGNOSES = {
    "none": "no bug found: the mechanism behaves as its claim says",
    "ignores-epsilon": "the noise is calibrated to epsilon = 1, whatever epsilon the mechanism claims",
    "half-sensitivity": "the noise is calibrated to half the sensitivity",
    "wrong-bound": "the sum of squares' sensitivity is computed from the lower bound twice (lo^2, not "
                   "max(|lo|, |hi|)^2)",
}
#: Trials per dataset an evidence run must have, at least and at most; the most trials times entries the
#: grader re-runs (decided before the run starts), and the longest it lets a run last (seconds).
HUNT_MIN_TRIALS = 50_000
HUNT_MAX_TRIALS = 1_000_000
HUNT_MAX_WORK = 2**24
HUNT_REPLAY_SECONDS = 60.0
_FIX_DRAWS = 20_000
_FEEDBACK_FIX = (((-2.0, 1.0), 0.5), ((0.5, 2.0), 2.0))


def mechanism_histogram(data: Any, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """A noisy histogram of the integer counts ``data`` (one per bin), claiming HUNT_EPSILON-DP when one
    person changes one bin by 1: ``size`` rows of noisy counts."""
    return hunt_release(active_member("bughunt"), "histogram", data, size, rng)


def mechanism_squares(data: Any, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """The noisy sum of squares of ``data`` clipped to HUNT_BOUNDS, claiming HUNT_EPSILON-DP when one value
    is added or removed: ``size`` noisy sums."""
    return hunt_release(active_member("bughunt"), "squares", data, size, rng)


def mechanism_selection(data: Any, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """The exponential mechanism on the scores ``data`` (each moves by at most SCORE_SENSITIVITY between
    neighbours), claiming HUNT_EPSILON-DP: ``size`` indices of chosen candidates."""
    return hunt_release(active_member("bughunt"), "selection", data, size, rng)


#: The mechanisms by label.
MECHANISMS: dict[str, Callable] = {"histogram": mechanism_histogram, "squares": mechanism_squares,
                                   "selection": mechanism_selection}


def _spec_problem(label: str, spec: Any) -> str:
    """Why ``spec`` is not an evidence run the grader can re-run ("" if it is one)."""
    if not isinstance(spec, Mapping) or not {"x", "x_prime", "trials", "seed"} <= set(spec):
        return (f"evidence['{label}'] should be a dict with keys 'x', 'x_prime', 'trials' and 'seed' (the "
                "arguments of hunt_audit)")
    trials, seed = spec["trials"], spec["seed"]
    if type(trials) is not int or not HUNT_MIN_TRIALS <= trials <= HUNT_MAX_TRIALS:
        return f"evidence['{label}']['trials'] must be an int from {HUNT_MIN_TRIALS:,} to {HUNT_MAX_TRIALS:,}"
    if type(seed) is not int or seed < 0:
        return f"evidence['{label}']['seed'] must be a non-negative int (so that the run can be repeated)"
    problem = neighbour_problem(label, spec["x"], spec["x_prime"])
    if problem:
        return f"evidence['{label}']: x and x_prime are not neighbours ({problem})"
    if trials * min(np.size(spec["x"]), HUNT_MAX_ENTRIES) > HUNT_MAX_WORK:
        return f"evidence['{label}']: trials times entries must be at most {HUNT_MAX_WORK:,} (the grader re-runs it)"
    return ""


def hunt_audit(label: str, spec: Mapping[str, Any]) -> PairAudit:
    """The evidence run the checks replay: ``audit_pair`` of mechanism ``label`` on ``spec["x"]`` and
    ``spec["x_prime"]`` at HUNT_EPSILON, with ``spec["trials"]`` runs per dataset and ``rng=spec["seed"]``.

    ValueError naming ``spec`` if it is not a valid evidence run (neighbouring datasets, trials in range).
    """
    return _run(check_choice(label, "label", HUNT_LABELS), spec, math.inf)


def _run(label: str, spec: Mapping[str, Any], deadline: float) -> PairAudit:
    """:func:`hunt_audit`, stopped with ``ReplayTooLong`` once ``time.monotonic()`` passes ``deadline``."""
    problem = _spec_problem(label, spec)
    if problem:
        raise ValueError(f"spec: {problem}")
    mechanism = MECHANISMS[label]

    def bounded(data: Any, size: int, rng: np.random.Generator) -> NDArray:
        check_deadline(deadline)
        return mechanism(data, size, rng)

    bounded.__name__ = mechanism.__name__
    x, x_prime = (np.asarray(spec[k], dtype=np.float64) for k in ("x", "x_prime"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_pair(bounded, x, x_prime, epsilon=HUNT_EPSILON, trials=spec["trials"], rng=spec["seed"])


def _answer(answers: Any, what: str, label: str) -> str:
    if not isinstance(answers, Mapping):
        raise NotAnswered(f"{what} should be a dict like {{'histogram': ..., 'squares': ..., 'selection': ...}}, "
                          f"got {type(answers).__name__}")
    value = answers.get(label)
    if value is None:
        raise NotAnswered(f"no {'diagnosis' if what == 'diagnoses' else 'verdict'} for {label} yet")
    return str(value).strip().lower()


def _graded(what: str, value: str, allowed: Any, truth: str | None, hint: str, *, grading: bool) -> Finding:
    """The finding for a verdict or a diagnosis: recorded only in the feedback, judged when grading."""
    if value not in allowed:
        return Finding(False, f"{what} = {value!r} is not one of {tuple(allowed)}")
    if not grading:
        return Finding(None, f"{what} recorded ({value!r}); graded after submission")
    if value == truth:
        return Finding(True, f"{what}: {value}")
    return Finding(False, f"{what}: not {value!r}. {hint}")


def _replay(label: str, evidence: Any) -> tuple[PairAudit | None, list[Finding]]:
    """Re-run the student's evidence for ``label``: the audit (None if it could not run) and the finding."""
    if not isinstance(evidence, Mapping):
        raise NotAnswered("evidence should be a dict like {'histogram': {...}, 'squares': {...}, 'selection': {...}}")
    spec = evidence.get(label)
    if spec is None:
        raise NotAnswered(f"no evidence for {label} yet")
    problem = _spec_problem(label, spec)
    if problem:
        return None, [Finding(False, problem + ": not replayed")]
    try:
        result = _run(label, spec, time.monotonic() + HUNT_REPLAY_SECONDS)
    except ReplayTooLong:
        return None, [Finding(False, f"re-running your evidence took longer than {HUNT_REPLAY_SECONDS:g} s: use "
                                     "fewer trials")]
    except (TypeError, ValueError) as exc:
        return None, [Finding(False, f"re-running your evidence failed: {describe(exc)}")]
    return result, [Finding(True, f"re-ran hunt_audit('{label}', ...) on neighbouring datasets: 95% lower bound "
                                  f"{result.lower_bound:.3g} (claim {HUNT_EPSILON:g})")]


def _agreement(result: PairAudit, verdict: str, label: str) -> Finding:
    shows = result.lower_bound > HUNT_EPSILON
    if shows == (verdict == "broken"):
        return Finding(True, f"your verdict on {label} agrees with your evidence (95% lower bound "
                             f"{result.lower_bound:.3g} {'>' if shows else '<='} {HUNT_EPSILON:g})")
    if verdict == "broken":
        return Finding(False, f"your evidence on {label} shows no violation (95% lower bound {result.lower_bound:.3g}"
                              f" <= {HUNT_EPSILON:g}): find a pair of neighbours where the bug shows, or more trials")
    return Finding(False, f"your evidence on {label} shows a violation (95% lower bound {result.lower_bound:.3g} > "
                          f"{HUNT_EPSILON:g}) but your verdict is {verdict!r}")


_HINTS = {
    "verdict": "A verdict 'broken' needs an audit whose 95% lower bound exceeds the claim; an audit on the wrong "
               "neighbours (the bug may show only for some) finds nothing.",
    "none": "Compare the lower bound of your audits with what each candidate bug would allow.",
    "ignores-epsilon": "Calibrated to epsilon = 1, the loss would reach 1, four times the claim; does it?",
    "half-sensitivity": "With half the sensitivity the loss would reach twice the claim, not more; does it?",
    "wrong-bound": "With lo^2 as sensitivity, adding a value at the upper bound would show a loss of nine "
                   "times the claim; does it?",
}


def _mechanism_check(label: str, verdicts: Any, diagnoses: Any, evidence: Any, *, grading: bool) -> list[Finding]:
    """q1-q3: the verdict and diagnosis on mechanism ``label``, and the re-run evidence that supports them."""
    verdict = _answer(verdicts, "verdicts", label)
    diagnosis = _answer(diagnoses, "diagnoses", label)
    member = answer_member("bughunt") if grading else None  # the answers are read only when grading
    truth_v = member.verdict(label) if member else None
    truth_d = member.bug(label) if member else None
    findings = named("verdict", _graded(f"verdict on {label}", verdict, HUNT_VERDICTS, truth_v, _HINTS["verdict"],
                                        grading=grading))
    findings += named("diagnosis", _graded(f"diagnosis of {label}", diagnosis, DIAGNOSES, truth_d,
                                           _HINTS.get(diagnosis, ""), grading=grading))
    if not grading and diagnosis in DIAGNOSES and verdict in HUNT_VERDICTS and \
            (diagnosis == "none") != (verdict == "no evidence"):
        findings += named("diagnosis", Finding(False, f"the diagnosis {diagnosis!r} contradicts the verdict "
                                                      f"{verdict!r} on {label}"))
    result, replayed = _replay(label, evidence)
    findings += named("replay", *replayed)
    if result is None:
        findings += named("agreement", Finding(False, f"your verdict on {label} has no evidence the grader could "
                                                      "re-run to support it"))
    elif verdict in HUNT_VERDICTS:
        agrees = _agreement(result, verdict, label)
        if agrees.passed and grading and truth_v == "broken" and result.lower_bound <= HUNT_EPSILON:
            agrees = Finding(False, f"{label} is broken, and your evidence does not show it (95% lower bound "
                                    f"{result.lower_bound:.3g} <= {HUNT_EPSILON:g}): {_HINTS['verdict']}")
        findings += named("agreement", agrees)
    return findings


def _histogram(verdicts: Any, diagnoses: Any, evidence: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q1: the histogram."""
    return _mechanism_check("histogram", verdicts, diagnoses, evidence, grading=grading_seed is not None)


def _squares(verdicts: Any, diagnoses: Any, evidence: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q2: the sum of squares."""
    return _mechanism_check("squares", verdicts, diagnoses, evidence, grading=grading_seed is not None)


def _selection(verdicts: Any, diagnoses: Any, evidence: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q3: the selection."""
    return _mechanism_check("selection", verdicts, diagnoses, evidence, grading=grading_seed is not None)


def _fix_cases(grading_seed: int | None) -> list[tuple[tuple[float, float], float, NDArray[np.float64], int]]:
    """(bounds, epsilon, data, seed) of each law test: fixed for the feedback, drawn per submission when
    grading; the second always has ``|lo| > |hi|`` (the bound the bug forgets), and the data stray out of bounds."""
    rng = grading_rng(grading_seed)
    if rng is None:
        cases = _FEEDBACK_FIX
    else:
        hi = float(rng.uniform(1.0, 3.0))
        cases = (((float(rng.uniform(0.2, 0.9)) * hi, hi), float(rng.uniform(0.3, 2.0))),
                 ((-hi - float(rng.uniform(0.5, 2.0)), hi), float(rng.uniform(0.3, 2.0))))
    seeds = (11, 12) if rng is None else tuple(int(s) for s in rng.integers(0, 2**31, 2))
    data_rng = np.random.default_rng(seeds[0])
    out = []
    for ((lo, hi), eps), seed in zip(cases, seeds):
        data = np.round(data_rng.uniform(lo - 1.0, hi + 1.0, 12), 3)
        out.append(((round(lo, 3), round(hi, 3)), round(eps, 3), data, seed))
    return out


def _fix_law(value: Any, exc: BaseException | None, bounds: tuple[float, float], eps: float,
             data: NDArray[np.float64]) -> Finding:
    """Whether ``value`` (the fix's outputs) is the clipped sum of squares plus ``Laplace(max(|lo|, |hi|)^2 / eps)``."""
    from scipy import stats

    lo, hi = bounds
    call_text = f"fixed_squares(data, {_FIX_DRAWS}, rng, epsilon={eps:g}, bounds=({lo:g}, {hi:g}))"
    if exc is not None:
        return Finding(False, f"{call_text} raised {describe(exc)}")
    out = as_floats(value)
    if out is None or out.shape != (_FIX_DRAWS,) or not np.isfinite(out).all():
        return Finding(False, f"{call_text} should return {_FIX_DRAWS} finite noisy sums (shape ({_FIX_DRAWS},))")
    exact = float(np.sum(np.clip(data, lo, hi) ** 2))
    scale = max(abs(lo), abs(hi)) ** 2 / eps
    p = stats.kstest(out - exact, stats.laplace(scale=scale).cdf).pvalue
    if p >= KS_ALPHA:
        return Finding(True, f"{call_text}: the clipped sum of squares plus Laplace noise of scale "
                             f"max(|lo|, |hi|)^2 / epsilon (KS p = {p:.2g})")
    median = float(np.median(np.abs(out - np.median(out)))) / math.log(2)
    return Finding(False, f"{call_text}: the outputs are not the clipped sum of squares ({exact:.4g}) plus Laplace "
                          f"noise of the right scale (KS p = {p:.1g}; your noise's scale is about {median:.3g}). "
                          "Which bound gives the largest change when one value is added or removed?")


def _fix(fixed_squares: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q4: a correct sum-of-squares mechanism for any bounds and epsilon."""
    if fixed_squares is None:
        raise NotAnswered("no fixed_squares yet")
    if not callable(fixed_squares):
        return [Finding(False, f"fixed_squares should be a function, got {type(fixed_squares).__name__}", "law")]
    cases = _fix_cases(grading_seed)
    calls = [((data, _FIX_DRAWS, np.random.default_rng(seed)), {"epsilon": eps, "bounds": bounds})
             for bounds, eps, data, seed in cases]
    answers = call_many(fixed_squares, calls)
    return named("law", *(_fix_law(value, exc, bounds, eps, data)
                          for (value, exc), (bounds, eps, data, _) in zip(answers, cases)))


ASSIGNMENT = Assignment("bughunt", "Find the bug", "bughunt.md", (
    Question("q1", "the histogram", 2.0, ("verdicts", "diagnoses", "evidence"), _histogram,
             checks=("verdict", "diagnosis", "replay", "agreement")),
    Question("q2", "the sum of squares", 2.0, ("verdicts", "diagnoses", "evidence"), _squares,
             checks=("verdict", "diagnosis", "replay", "agreement")),
    Question("q3", "the selection", 2.0, ("verdicts", "diagnoses", "evidence"), _selection,
             checks=("verdict", "diagnosis", "replay", "agreement")),
    Question("q4", "the fix", 2.0, ("fixed_squares",), _fix, checks=("law",)),
))
