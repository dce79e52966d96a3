"""Assignment ``audit``: audit two mystery mechanisms with :mod:`dptutor.audit` at 95 %.

Mystery A adds Laplace noise of scale sqrt(n)/epsilon (the l2 sensitivity); mystery B is the
correct Laplace mechanism.  The student's answers are data (verdicts, the ``AuditResult`` evidence,
a diagnosis): the checks replay the evidence from its recorded seed.
"""

from __future__ import annotations

import math
import re
import unicodedata
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_batch, check_int, check_positive
from dptutor.audit import AuditResult, estimate_loss
from dptutor.grading.feedback import Assignment, Finding, NotAnswered, Question
from dptutor.mechanisms import add_laplace_noise

__all__ = ["ASSIGNMENT", "AUDIT_EPSILON", "AUDIT_CONFIDENCE", "VERDICTS", "DIAGNOSES", "JUSTIFICATION_WORDS",
           "mystery_a", "mystery_b", "separates_candidates"]

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


def mystery_a(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Mystery mechanism A: a local-DP release of ``x`` (shape ``(trials, n)``) claiming epsilon-DP."""
    b = math.sqrt(check_batch(x).shape[1]) / check_positive(epsilon, "epsilon")
    return add_laplace_noise(x, check_positive(b, "the scale sqrt(n) / epsilon"), rng)


def mystery_b(x: NDArray, epsilon: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Mystery mechanism B: a local-DP release of ``x`` (shape ``(trials, n)``) claiming epsilon-DP."""
    b = check_batch(x).shape[1] / check_positive(epsilon, "epsilon")
    return add_laplace_noise(x, check_positive(b, "the scale n / epsilon"), rng)


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
    if result.trials > _AUDIT_MAX_TRIALS:
        findings.append(Finding(False, f"use at most {_AUDIT_MAX_TRIALS:,} trials so that the grader can replay "
                                       "your audit"))
        return findings
    seed = list(result.seed) if isinstance(result.seed, tuple) else result.seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replay = estimate_loss(mechanism, result.n, result.epsilon, result.trials, seed=seed)
    name = mechanism.__name__
    if np.array_equal(replay.counts, result.counts):
        findings.append(Finding(True, f"replaying estimate_loss({name}, n={result.n}, ...) reproduces your counts"))
    else:
        findings.append(Finding(False, (
            f"replaying estimate_loss({name}, n={result.n}, epsilon={result.epsilon:g}, trials={result.trials}, "
            f"seed={result.seed}) does not reproduce your counts: is evidence['{label}'] an audit of {name}?")))
    return findings


def _pending(what: str, value: str) -> Finding:
    return Finding(None, f"{what} recorded ({value!r}); graded after submission")


def _bound_agrees(result: Any, verdict: str, label: str) -> Finding:
    lower = result.lower_bound(AUDIT_CONFIDENCE)
    shows = lower > AUDIT_EPSILON
    if shows == (verdict == "violates"):
        return Finding(True, f"your verdict for {label} agrees with your evidence: 95% lower bound {lower:.3g} "
                             f"{'>' if shows else '<='} epsilon = {AUDIT_EPSILON:g}")
    if verdict == "violates":
        return Finding(False, (
            f"your evidence for {label} has a 95% lower bound of {lower:.3g} <= epsilon = {AUDIT_EPSILON:g}: it "
            "shows no violation. A violation needs the lower bound above epsilon (an estimate above epsilon is "
            "not enough); find a dimension n and enough trials where it is, or change the verdict."))
    return Finding(False, f"your evidence for {label} has a 95% lower bound of {lower:.3g} > epsilon = "
                          f"{AUDIT_EPSILON:g}, which shows a violation, but your verdict is {verdict!r}")


def _evidence(evidence: Any, label: str) -> Any:
    if not isinstance(evidence, Mapping):
        raise NotAnswered("evidence should be a dict like {'A': audit_a, 'B': audit_b}")
    return evidence.get(label)


def _verdict_and_replay(verdicts: Any, evidence: Any, label: str, truth: str, wrong_hint: str,
                        mechanism: Callable, minimum_trials: int, *, hidden: bool) -> tuple[str, Any, list[Finding]]:
    """What both audit questions check of mechanism ``label``: the verdict (``wrong_hint`` if it is
    not ``truth``; withheld unless ``hidden``) and a replay of the evidence (:func:`_replay`).

    Returns the normalised verdict, the evidence and the findings.
    """
    verdict = _verdict(verdicts, label)
    if verdict not in VERDICTS:
        finding = Finding(False, f"verdicts['{label}'] = {verdict!r} is not one of {VERDICTS}")
    elif not hidden:
        finding = _pending(f"verdict for {label}", verdict)
    elif verdict == truth:
        finding = Finding(True, f"verdict for {label}: {truth}")
    else:
        finding = Finding(False, f"verdict for {label}: {wrong_hint}")
    result = _evidence(evidence, label)
    return verdict, result, [finding, *_replay(result, mechanism, label, minimum_trials)]


def _audit_a(verdicts: Any, evidence: Any, *, hidden: bool = False) -> list[Finding]:
    """Mechanism A violates its claim; the evidence must be a replayable audit whose bound shows it."""
    verdict, result, findings = _verdict_and_replay(verdicts, evidence, "A", "violates", (
        "A does violate its claim. At n = 1 the attack sees nothing wrong, so audit it at other "
        "dimensions n too (the paper scans n = 1 to 128)."), mystery_a, 1, hidden=hidden)
    if isinstance(result, AuditResult) and verdict in VERDICTS:
        findings.append(_bound_agrees(result, verdict if not hidden else "violates", "A"))
    return findings


def _audit_b(verdicts: Any, evidence: Any, *, hidden: bool = False) -> list[Finding]:
    """Mechanism B is correct; the evidence must be a replayable audit at A's dimension, bound <= epsilon."""
    verdict, result, findings = _verdict_and_replay(verdicts, evidence, "B", "no evidence", (
        "B shows no violation. A violation needs a 95% lower bound above epsilon; an estimate above "
        "epsilon is not enough (sampling error)."), mystery_b, _AUDIT_MIN_TRIALS, hidden=hidden)
    if isinstance(result, AuditResult):
        a = _evidence(evidence, "A")
        if isinstance(a, AuditResult) and result.n != a.n:
            findings.append(Finding(False, f"compare like with like: audit B at the dimension where you audited A "
                                           f"(n = {a.n}), not n = {result.n}"))
        else:
            findings.append(Finding(True, f"audited at the same dimension as A (n = {result.n})"))
        if verdict in VERDICTS:
            findings.append(_bound_agrees(result, verdict, "B"))
    return findings


def _audit_diagnosis(diagnosis: Any, *, hidden: bool = False) -> list[Finding]:
    if diagnosis is None:
        raise NotAnswered("no diagnosis yet")
    key = str(diagnosis).strip().lower()
    if key not in DIAGNOSES:
        return [Finding(False, f"diagnosis should be one of {sorted(DIAGNOSES)}, got {diagnosis!r}")]
    if not hidden:
        return [_pending("diagnosis", key)]
    if key == "l2":
        return [Finding(True, "A calibrates its noise with the l2 sensitivity sqrt(n)")]
    hints = {
        "one-sided": "one-sided noise gives an infinite loss at every n (like DPText); what does A give at n = 1?",
        "sensitivity-1": "with scale 1/epsilon the loss would grow with n without bound (like ADePT); does A's?",
        "half-scale": "half the noise would already violate the claim at n = 1; does A at n = 1?",
    }
    return [Finding(False, f"not {key!r}: {hints[key]} Write the candidate as a mechanism and audit it "
                           "at the same n and seed to compare the count tables.")]



def separates_candidates(n: int) -> bool:
    """Whether the four candidates' noise scales (n, 1, sqrt(n), n/2, times 1/epsilon for the
    two-sided ones) are pairwise different at dimension ``n``: not at n = 1 (l2 = sensitivity-1),
    n = 2 (half-scale = sensitivity-1) or n = 4 (half-scale = l2)."""
    n = check_int(n, "n", minimum=1)
    return n >= 3 and n != 4


#: Words a justification should have, at least and at most.
JUSTIFICATION_WORDS = (15, 250)

# The key facts a justification of the diagnosis must state, each with a neutral description (what
# the grader looked for, without the answer) and the ways of saying it that are accepted.  Matching
# is case-insensitive on a normalised text (unicode roots and ells spelled out), generous with
# synonyms, and every fact earns the same share; the CSV lists the facts found so that an
# instructor can read the text and override.
_FACTS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("a dimension n at which the candidates' scales all differ (not n = 1, 2 or 4)",
     lambda text: any(separates_candidates(int(m)) for m in re.findall(r"\bn\s*(?:=|==|of)\s*(\d{1,4})\b", text))),
    ("a comparison with at least two of the other candidates",
     lambda text: sum(bool(re.search(p, text)) for p in (r"one[- ]sided", r"sensitivity[- ]?1", r"half[- ]scale|half the")) >= 2),
    ("that the count tables or losses agree only up to sampling error (confidence intervals, bounds)",
     lambda text: bool(re.search(r"confidence|interval|sampling|statistic|lower bound|upper bound|error|significan|noise in the estimate", text))),
    ("which noise scale the broken mechanism's losses fit",
     lambda text: bool(re.search(r"sqrt|square root|\bl2\b|l_2|l-2", text))),
)


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return text.replace("√", " sqrt ").replace("ℓ", "l").replace("\u2082", "2")


def _audit_justification(justification: Any, *, hidden: bool | int = False) -> list[Finding]:
    """Free text, graded after submission on required key facts (:data:`_FACTS`)."""
    if justification is None or (isinstance(justification, str) and not justification.strip()):
        raise NotAnswered("no justification yet")
    if not isinstance(justification, str):
        return [Finding(False, f"justification should be a string (text), got {type(justification).__name__}")]
    words = len(justification.split())
    low, high = JUSTIFICATION_WORDS
    if not low <= words <= high:
        return [Finding(False, f"the justification has {words} words; write between {low} and {high}")]
    if not hidden:
        return [_pending("justification", f"{words} words")]
    text = _normalise(justification)
    return [Finding(True, f"states {what}") if found(text) else Finding(False, f"does not state {what}")
            for what, found in _FACTS]


ASSIGNMENT = Assignment("audit", "Auditing two mystery mechanisms", "audit.md", (
    Question("q1", "mechanism A", 2.0, ("verdicts", "evidence"), _audit_a),
    Question("q2", "mechanism B", 2.0, ("verdicts", "evidence"), _audit_b),
    Question("q3", "diagnosis", 1.0, ("diagnosis",), _audit_diagnosis),
    Question("q4", "justification", 1.0, ("justification",), _audit_justification),
))
