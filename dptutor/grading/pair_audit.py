"""Assignment ``pair_audit``: audit a mystery mechanism with :func:`dptutor.audit.audit_pair` and write the attack.

The mystery mechanism releases a noisy count as a row of two reals and claims epsilon = 0.5.  It adds
``Lap(1/epsilon)`` to *two* copies of the count, so it spends its budget twice: its true epsilon is 1.0
(sequential composition).  Students write a statistic that makes ``audit_pair`` flag it (q1), the
attack itself as an event (q2), and the true epsilon (q3).  Each check draws the mechanism's runs with
seeds fixed for the feedback and drawn per submission for grading.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dptutor._validate import check_int, check_real, check_rng
from dptutor.audit import audit_pair
from dptutor.grading.feedback import Assignment, Finding, NotAnswered, Question, as_floats, call, describe, hidden_rng

__all__ = [
    "ASSIGNMENT",
    "PAIR_EPSILON",
    "PAIR_X",
    "PAIR_X_PRIME",
    "PAIR_TRIALS",
    "PAIR_CONFIDENCE",
    "mystery_pair",
]

#: The budget the mystery mechanism claims, and the neighbouring counts it is audited on.
PAIR_EPSILON = 0.5
PAIR_X, PAIR_X_PRIME = 0.0, 1.0
#: Runs per dataset in each check, and the confidence of every bound.
PAIR_TRIALS = 200_000
PAIR_CONFIDENCE = 0.95
#: The true epsilon (two releases at epsilon each), and how close an answer must be.
_TRUE_EPSILON = 2 * PAIR_EPSILON
_TOLERANCE = 0.1
_FEEDBACK_SEEDS = {"q1": 2022, "q2": 2023}


def mystery_pair(data: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """The mystery mechanism: ``size`` noisy releases of the count ``data``, each a row of two reals,
    claiming ``PAIR_EPSILON``-DP for counts that differ by 1."""
    count = check_real(data, "data")
    n = check_int(size, "size", minimum=0, maximum=1 << 24)
    return count + check_rng(rng).laplace(0.0, 1.0 / PAIR_EPSILON, (n, 2))


def _seed(question: str, hidden: bool | int) -> int:
    rng = hidden_rng(hidden)
    return _FEEDBACK_SEEDS[question] if rng is None else int(rng.integers(0, 2**32))


def _event_lower_bound(k: int, k_prime: int, n: int) -> float:
    """95% lower bound on the loss of a fixed event seen ``k`` and ``k_prime`` times in ``n`` runs of each
    dataset: exact Clopper-Pearson intervals with error (1 - confidence)/4 per side, both directions."""
    a = (1.0 - PAIR_CONFIDENCE) / 4.0
    lo, hi = {}, {}
    for key, count in (("x", k), ("x'", k_prime)):
        ci = stats.binomtest(count, n).proportion_ci(confidence_level=1.0 - 2.0 * a, method="exact")
        lo[key], hi[key] = ci.low, ci.high
    bounds = [math.log(lo[u] / hi[v]) for u, v in (("x", "x'"), ("x'", "x")) if lo[u] > 0]
    return max([0.0, *bounds])


def _statistic_check(statistic: Any, *, hidden: bool | int = False) -> list[Finding]:
    """q1: one real per output, and audit_pair with it flags the mechanism at PAIR_TRIALS runs."""
    if statistic is None:
        raise NotAnswered("statistic is None")
    if not callable(statistic):
        return [Finding(False, f"statistic should be a function of an array of outputs, got {type(statistic).__name__}")]
    seed = _seed("q1", hidden)
    sample = mystery_pair(PAIR_X, 1000, np.random.default_rng(seed))
    value, exc = call(statistic, sample)
    if exc is not None:
        return [Finding(False, f"statistic(outputs) raised {describe(exc)}")]
    values = as_floats(value)
    if values is None or values.shape != (1000,) or np.isnan(values).any():
        got = "something that is not numbers" if values is None else f"shape {values.shape}"
        return [Finding(False, f"statistic(outputs) on 1000 outputs (shape (1000, 2)) must return 1000 reals, "
                               f"not NaN; got {got}")]
    findings = [Finding(True, "statistic returns one real per output")]
    result, exc = call(audit_pair, mystery_pair, PAIR_X, PAIR_X_PRIME, epsilon=PAIR_EPSILON, trials=PAIR_TRIALS,
                       seed=seed, confidence=PAIR_CONFIDENCE, statistic=statistic)
    if exc is not None:
        return findings + [Finding(False, f"audit_pair(..., statistic=statistic) failed: {describe(exc)}")]
    if result.is_violation():
        findings.append(Finding(True, f"audit_pair with your statistic flags the mechanism: 95% lower bound "
                                      f"{result.lower_bound:.3f} > claimed epsilon {PAIR_EPSILON:g}"))
    else:
        findings.append(Finding(False, (
            f"audit_pair with your statistic at {PAIR_TRIALS:,} runs gives a 95% lower bound of "
            f"{result.lower_bound:.3f} <= claimed epsilon {PAIR_EPSILON:g}: no violation shown. Does your statistic "
            "use both coordinates? Compare the densities of an output under the two counts.")))
    return findings


def _attack_check(attack: Any, *, hidden: bool | int = False) -> list[Finding]:
    """q2: the event, evaluated on fresh runs of both datasets, certifies a loss above the claim."""
    if attack is None:
        raise NotAnswered("attack is None")
    if not callable(attack):
        return [Finding(False, f"attack should be a function of an array of outputs, got {type(attack).__name__}")]
    rng = np.random.default_rng(_seed("q2", hidden))
    counts = []
    for data in (PAIR_X, PAIR_X_PRIME):
        outputs = mystery_pair(data, PAIR_TRIALS, rng)
        value, exc = call(attack, outputs)
        if exc is not None:
            return [Finding(False, f"attack(outputs) raised {describe(exc)}")]
        flags = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) else None
        if flags is None or flags.shape != (PAIR_TRIALS,) or flags.dtype.kind not in "biu" or not np.isin(flags, (0, 1)).all():
            return [Finding(False, f"attack(outputs) must return one bool per output (shape ({PAIR_TRIALS},)), "
                                   f"got {type(value).__name__}{'' if flags is None else f' of shape {flags.shape}'}")]
        counts.append(int(np.count_nonzero(flags)))
    k, k_prime = counts
    bound = _event_lower_bound(k, k_prime, PAIR_TRIALS)
    rates = f"P[M({PAIR_X:g}) in S] = {k / PAIR_TRIALS:.4f}, P[M({PAIR_X_PRIME:g}) in S] = {k_prime / PAIR_TRIALS:.4f}"
    findings = [Finding(True, "attack returns one bool per output")]
    if bound > PAIR_EPSILON:
        findings.append(Finding(True, f"your event ({rates}) certifies a loss of at least {bound:.3f} > "
                                      f"claimed epsilon {PAIR_EPSILON:g} at 95%"))
    else:
        findings.append(Finding(False, (
            f"your event ({rates}) certifies only {bound:.3f} <= claimed epsilon {PAIR_EPSILON:g} at 95%: "
            "look for outputs whose likelihood ratio is largest, and keep the event likely enough to measure")))
    return findings


def _true_epsilon_check(true_epsilon: Any, *, hidden: bool | int = False) -> list[Finding]:
    """q3: the mechanism's true epsilon, to within 0.1."""
    if true_epsilon is None:
        raise NotAnswered("true_epsilon is None")
    if isinstance(true_epsilon, bool) or not isinstance(true_epsilon, (int, float, np.integer, np.floating)):
        return [Finding(False, f"true_epsilon should be a number, got {type(true_epsilon).__name__}")]
    value = float(true_epsilon)
    if not hidden:
        return [Finding(None, f"true_epsilon recorded ({value:g}); whether it is right is graded after you submit")]
    if abs(value - _TRUE_EPSILON) <= _TOLERANCE:
        return [Finding(True, f"true epsilon {_TRUE_EPSILON:g}: two releases at epsilon each")]
    return [Finding(False, f"not {value:g}: how many times does one output spend the budget?")]


ASSIGNMENT = Assignment("pair_audit", "Auditing a mechanism with audit_pair", "pair_audit.md", (
    Question("q1", "a statistic that exposes the mechanism", 2.0, ("statistic",), _statistic_check),
    Question("q2", "the attack", 2.0, ("attack",), _attack_check),
    Question("q3", "the true epsilon", 1.0, ("true_epsilon",), _true_epsilon_check),
))
