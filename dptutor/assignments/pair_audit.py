"""Assignment ``pair_audit``: audit a mystery mechanism with :func:`dptutor.audit.audit_pair` and write the attack.

The mystery mechanism releases a noisy count as a row of reals and claims epsilon = 0.5.  Students
write a statistic that makes ``audit_pair`` flag it (q1), the attack itself as an event (q2), and the
true epsilon (q3), which the grader derives from the mechanism's noise law.  The mechanism is the
active member of the family in :mod:`dptutor.assignments.instances`: the book's public self-study member,
or the member a course's token selects.  Each check draws the
mechanism's runs with seeds fixed for the feedback and drawn per question for grading.

The statistic and the attack must be functions of one output: the checks pool the runs of both
datasets, shuffle them, split them into batches in two different ways and call the student's
function on every batch; a function whose value for an output changes with the batch it comes in
(one that looks at the whole batch, or keeps state between calls) fails.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor.assignments.instances import PAIR_EPSILON, answer_member, pair_mystery
from dptutor.audit import audit_pair
from dptutor.assignments.feedback import Assignment, Finding, NotAnswered, Question, call, describe, grading_rng
from dptutor.assignments.record import call_many

__all__ = [
    "ASSIGNMENT",
    "PAIR_EPSILON",
    "PAIR_X",
    "PAIR_X_PRIME",
    "PAIR_TRIALS",
    "PAIR_CONFIDENCE",
    "mystery_pair",
]

#: The neighbouring counts the mystery mechanism (claiming PAIR_EPSILON) is audited on.
PAIR_X, PAIR_X_PRIME = 0.0, 1.0
#: Runs per dataset in each check, and the confidence of every bound.
PAIR_TRIALS = 200_000
PAIR_CONFIDENCE = 0.95
#: How close an answer for the true epsilon must be.
_TOLERANCE = 0.1
_FEEDBACK_SEEDS = {"q1": 2022, "q2": 2023}


def mystery_pair(data: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """The mystery mechanism: ``size`` noisy releases of the count ``data``, each a row of reals,
    claiming ``PAIR_EPSILON``-DP for counts that differ by 1."""
    return pair_mystery(data, size, rng)


def _true_epsilon() -> float:
    """The mechanism's privacy loss, sup over outputs of ln p(y | x) / p(y | x'), from its noise law
    (independent Laplace coordinates): attained far in the tail, where every coordinate's ratio is largest."""
    member = answer_member("pair_audit")
    from scipy import stats

    law = stats.laplace(scale=member.scale)
    far = np.full(member.columns, max(PAIR_X, PAIR_X_PRIME) + 50 * member.scale)
    return float(np.sum(law.logpdf(far - PAIR_X_PRIME) - law.logpdf(far - PAIR_X)))


def _seed(question: str, grading_seed: int | None) -> int:
    rng = grading_rng(grading_seed)
    return _FEEDBACK_SEEDS[question] if rng is None else int(rng.integers(0, 2**32))


def _event_lower_bound(k: int, k_prime: int, n: int) -> float:
    """95% lower bound on the loss of a fixed event seen ``k`` and ``k_prime`` times in ``n`` runs of each
    dataset: exact Clopper-Pearson intervals with error (1 - confidence)/4 per side, both directions."""
    a = (1.0 - PAIR_CONFIDENCE) / 4.0
    from scipy import stats

    lo, hi = {}, {}
    for key, count in (("x", k), ("x'", k_prime)):
        ci = stats.binomtest(count, n).proportion_ci(confidence_level=1.0 - 2.0 * a, method="exact")
        lo[key], hi[key] = ci.low, ci.high
    bounds = [math.log(lo[u] / hi[v]) for u, v in (("x", "x'"), ("x'", "x")) if lo[u] > 0]
    return max([0.0, *bounds])


def _per_output(fn: Any, outputs: NDArray[np.float64], rng: np.random.Generator,
                what: str) -> tuple[NDArray | None, Finding | None]:
    """``fn``'s value for every row of ``outputs``, checked to be a function of the row alone.

    The rows are shuffled and cut into two batches at one place, then shuffled again and cut at
    another; ``fn`` is called on all four batches (one cell when grading).  Its two values for each
    row must agree.  Returns the values in the rows' order, or a failed finding.
    """
    total = len(outputs)
    splits = []
    for _ in range(2):
        order = rng.permutation(total)
        cut = int(rng.integers(total // 4, 3 * total // 4))
        splits.append((order[:cut], order[cut:]))
    batches = [outputs[part] for split in splits for part in split]
    answers = call_many(fn, [((b.copy(),), {}) for b in batches])
    values = []
    for (value, exc), batch in zip(answers, batches):
        if exc is not None:
            return None, Finding(False, f"{what}(outputs) raised {describe(exc)}", "form")
        try:
            arr = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) else None
        except Exception:  # noqa: BLE001 -- a ragged list: not one number per output
            arr = None
        if arr is None or arr.shape != (len(batch),) or arr.dtype.kind not in "biuf":
            got = type(value).__name__ if arr is None else f"shape {arr.shape}, dtype {arr.dtype}"
            return None, Finding(False, f"{what}(outputs) on {len(batch):,} outputs (shape {outputs[:len(batch)].shape}) must "
                                        f"return one number per output; got {got}", "form")
        values.append(arr)
    per_split = []
    for k, (first, second) in enumerate(splits):
        out = np.empty(total, dtype=np.result_type(values[2 * k], values[2 * k + 1]))
        out[first], out[second] = values[2 * k], values[2 * k + 1]
        per_split.append(out)
    a, b = per_split
    same = np.array_equal(a, b) if a.dtype.kind in "biu" and b.dtype.kind in "biu" else np.allclose(
        a.astype(float), b.astype(float), rtol=1e-9, atol=1e-12, equal_nan=True)
    if not same:
        return None, Finding(False, (
            f"{what} gave different values for the same output depending on the batch it came in (the grader "
            "calls it on shuffled batches): its value for an output must depend on that output alone, not on the "
            "other outputs of the batch and not on earlier calls"), "form")
    return a, None


class _Values:
    """A mechanism whose outputs are precomputed values, handed out in order per dataset (the grader's
    way to audit a statistic it has already evaluated on fresh runs)."""

    def __init__(self, values: dict[float, NDArray[np.float64]]) -> None:
        self.values, self.used = values, {key: 0 for key in values}
        self.__name__ = "mystery_pair"

    def __call__(self, data: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        start = self.used[data]
        self.used[data] = start + size
        if start + size > len(self.values[data]):
            raise RuntimeError("the audit asked for more runs than were drawn")
        return self.values[data][start:start + size]


def _statistic_check(statistic: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q1: one real per output (a function of that output alone), and audit_pair with it flags the
    mechanism at PAIR_TRIALS fresh runs per dataset."""
    if statistic is None:
        raise NotAnswered("statistic is None")
    if not callable(statistic):
        return [Finding(False, f"statistic should be a function of an array of outputs, got {type(statistic).__name__}", "form")]
    seed = _seed("q1", grading_seed)
    rng = np.random.default_rng(seed)
    runs = {data: mystery_pair(data, PAIR_TRIALS, rng) for data in (PAIR_X, PAIR_X_PRIME)}
    pooled = np.concatenate([runs[PAIR_X], runs[PAIR_X_PRIME]])
    values, failure = _per_output(statistic, pooled, rng, "statistic")
    if failure is not None:
        return [failure]
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        return [Finding(False, "statistic(outputs) returned NaN or infinite values: it must return one real per output", "form")]
    findings = [Finding(True, "statistic returns one real per output, whatever batch the output comes in", "form")]
    mechanism = _Values({PAIR_X: values[:PAIR_TRIALS], PAIR_X_PRIME: values[PAIR_TRIALS:]})
    result, exc = call(audit_pair, mechanism, PAIR_X, PAIR_X_PRIME, epsilon=PAIR_EPSILON, trials=PAIR_TRIALS,
                       rng=seed, confidence_level=PAIR_CONFIDENCE)
    if exc is not None:
        return findings + [Finding(False, f"audit_pair(..., statistic=statistic) failed: {describe(exc)}", "flags")]
    if result.is_violation():
        findings.append(Finding(True, f"audit_pair with your statistic flags the mechanism: 95% lower bound "
                                      f"{result.lower_bound:.3f} > claimed epsilon {PAIR_EPSILON:g}", "flags"))
    else:
        findings.append(Finding(False, (
            f"audit_pair with your statistic at {PAIR_TRIALS:,} runs gives a 95% lower bound of "
            f"{result.lower_bound:.3f} <= claimed epsilon {PAIR_EPSILON:g}: no violation shown. Does your statistic "
            "use both coordinates? Compare the densities of an output under the two counts."), "flags"))
    return findings


def _attack_check(attack: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q2: the event, evaluated output by output on fresh runs of both datasets, certifies a loss above the claim."""
    if attack is None:
        raise NotAnswered("attack is None")
    if not callable(attack):
        return [Finding(False, f"attack should be a function of an array of outputs, got {type(attack).__name__}", "form")]
    rng = np.random.default_rng(_seed("q2", grading_seed))
    pooled = np.concatenate([mystery_pair(data, PAIR_TRIALS, rng) for data in (PAIR_X, PAIR_X_PRIME)])
    flags, failure = _per_output(attack, pooled, rng, "attack")
    if failure is not None:
        return [failure]
    if flags.dtype.kind not in "biu" or not np.isin(flags, (0, 1)).all():
        return [Finding(False, f"attack(outputs) must return one bool per output, got dtype {flags.dtype}", "form")]
    k, k_prime = int(np.count_nonzero(flags[:PAIR_TRIALS])), int(np.count_nonzero(flags[PAIR_TRIALS:]))
    bound = _event_lower_bound(k, k_prime, PAIR_TRIALS)
    rates = f"P[M({PAIR_X:g}) in S] = {k / PAIR_TRIALS:.4f}, P[M({PAIR_X_PRIME:g}) in S] = {k_prime / PAIR_TRIALS:.4f}"
    findings = [Finding(True, "attack returns one bool per output, whatever batch the output comes in", "form")]
    if bound > PAIR_EPSILON:
        findings.append(Finding(True, f"your event ({rates}) certifies a loss of at least {bound:.3f} > "
                                      f"claimed epsilon {PAIR_EPSILON:g} at 95%", "certifies"))
    else:
        findings.append(Finding(False, (
            f"your event ({rates}) certifies only {bound:.3f} <= claimed epsilon {PAIR_EPSILON:g} at 95%: "
            "look for outputs whose likelihood ratio is largest, and keep the event likely enough to measure"),
            "certifies"))
    return findings


def _true_epsilon_check(true_epsilon: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q3: the mechanism's true epsilon, to within 0.1."""
    if true_epsilon is None:
        raise NotAnswered("true_epsilon is None")
    if isinstance(true_epsilon, bool) or not isinstance(true_epsilon, (int, float, np.integer, np.floating)):
        return [Finding(False, f"true_epsilon should be a number, got {type(true_epsilon).__name__}")]
    value = float(true_epsilon)
    if grading_seed is None:
        return [Finding(None, f"true_epsilon recorded ({value:g}); whether it is right is graded after you submit")]
    truth = _true_epsilon()
    if abs(value - truth) <= _TOLERANCE:
        return [Finding(True, f"true epsilon {value:g}, within {_TOLERANCE:g} of the mechanism's")]
    return [Finding(False, f"not {value:g}: how many times does one output spend the budget?")]


ASSIGNMENT = Assignment("pair_audit", "Auditing a mechanism with audit_pair", "pair_audit.md", (
    Question("q1", "a statistic that exposes the mechanism", 2.0, ("statistic",), _statistic_check,
             checks=("form", "flags")),
    Question("q2", "the attack", 2.0, ("attack",), _attack_check, checks=("form", "certifies")),
    Question("q3", "the true epsilon", 1.0, ("true_epsilon",), _true_epsilon_check),
))
