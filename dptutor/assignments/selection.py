"""Assignment ``selection``: AboveThreshold and report-noisy-max, checked by their law and audited.

Students write two mechanisms of the chapter "Selection mechanisms" (book/selection.md), each as a
mechanism for :func:`dptutor.audit.audit_pair` that makes ``size`` independent runs per call:

- ``above_threshold(answers, threshold, epsilon, *, size, rng)`` (AboveThreshold, the book's selection chapter):
  one row per run, one entry per query: 0 for "below", 1 for the first "above", -1 for the queries
  after it (not answered), the format of :func:`dptutor.selection.sparse_vector`;
- ``report_noisy_max(answers, epsilon, *, size, rng)`` (the selection chapter's algorithm, Laplace
  noise): one index per run.

Each mechanism is checked three ways, on inputs the grader draws (fresh per question when grading):
its outputs are well formed; their frequencies follow the exact law (chi-square against
:func:`dptutor.selection.above_threshold_probabilities` or
:func:`~dptutor.selection.report_noisy_max_probabilities`); and ``audit_pair`` on a neighbouring pair of
the grader's choosing, at :data:`AUDIT_CONFIDENCE`, does not show a loss above the claimed epsilon.

Sample sizes.  ``audit_pair`` is sound: an epsilon-DP implementation is flagged with probability at
most ``1 - AUDIT_CONFIDENCE`` = 1e-4, whatever the pair.  The pairs and trial counts are chosen so
that the classic bugs are flagged with overwhelming probability: on the AboveThreshold pair
(:data:`AT_PATTERN`, threshold :data:`AT_GAP` above the zeros, epsilon = :data:`AT_EPSILON`) the best
event's bound at the 1e-5 quantiles of its counts (``AT_TRIALS / 2`` estimation runs per dataset) is
about 1.25 epsilon without threshold noise, 2.2 epsilon with the Laplace mechanism's scale Delta /
epsilon for both noises, and 3.6 epsilon with one query noise shared by all queries (an output the
correct algorithm gives with positive probability becomes impossible on one dataset).  On the
report-noisy-max pair, noise of scale Delta / epsilon (instead of 2 Delta / epsilon) gives about 1.6
epsilon.  ``tests/assignments/test_grading_selection.py`` checks these numbers from the exact laws.

The student's functions run in the sandboxed kernel when grading; only their outputs (integer
arrays) come back, and every replay here is bounded (:data:`MAX_RUNS` runs per call).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_bool, check_float_array, check_real
from dptutor.audit import audit_pair
from dptutor.assignments.feedback import Assignment, Finding, Question, call, describe, grading_rng, named
from dptutor import selection
from dptutor.assignments.record import call_many, flag_for_review, grading
from dptutor.selection import above_threshold_probabilities, report_noisy_max_probabilities

__all__ = [
    "ASSIGNMENT",
    "AUDIT_CONFIDENCE",
    "AT_EPSILON",
    "AT_GAP",
    "AT_PATTERN",
    "AT_TRIALS",
    "RNM_EPSILON",
    "RNM_PATTERN",
    "RNM_TRIALS",
    "LAW_RUNS",
    "LAW_ALPHA",
    "MAX_RUNS",
    "above_threshold_law",
    "audit_pairs",
]

#: The confidence of every audit (a correct implementation is flagged with probability at most 1e-4).
AUDIT_CONFIDENCE = 0.9999
#: The AboveThreshold audit's claimed epsilon; then the pair's pattern (x = offset + pattern, x' = offset +
#: 1 - pattern: every answer moves by the sensitivity 1), the threshold's height above the zeros, runs.
AT_EPSILON = 2.0
#: The AboveThreshold pair's pattern (x = offset + pattern, x' = offset + 1 - pattern).
AT_PATTERN = (0.0,) * 7 + (1.0,)
#: The AboveThreshold audit's threshold, its height above the zeros.
AT_GAP = 0.5
AT_TRIALS = 200_000
#: The report-noisy-max audit's claimed epsilon; then its pattern (x = offset + pattern, x' = offset + 1 - pattern), runs.
RNM_EPSILON = 1.0
RNM_PATTERN = (0.0,) + (1.0,) * 4
RNM_TRIALS = 100_000
#: Runs per law test, and its level (a correct implementation fails it with probability LAW_ALPHA).
LAW_RUNS = 20_000
LAW_ALPHA = 1e-6
#: Calls per dataset in an audit (each with a generator of its own), and the most runs one call may ask for.
_AUDIT_CALLS = 4
#: The most runs one call of an audit may ask for.
MAX_RUNS = 100_000
_FEEDBACK_SEEDS = {"q1": 5301, "q2": 5302, "q3": 5303}
_EPSILONS = (0.5, 1.0, 2.0)


def _seed(question: str, grading_seed: int | None) -> int:
    rng = grading_rng(grading_seed)
    return _FEEDBACK_SEEDS[question] if rng is None else int(rng.integers(0, 2**62))


def audit_pairs(offset: float = 0.0) -> dict[str, tuple[tuple[float, ...], tuple[float, ...], float | None]]:
    """The audited neighbouring pairs, shifted by ``offset``: ``{name: (x, x', threshold)}`` (the
    threshold is None for report-noisy-max).  Every answer of x' is 1 away from the same answer of x."""
    s = check_real(offset, "offset", low=-1e6, high=1e6)
    pairs: dict[str, tuple[tuple[float, ...], tuple[float, ...], float | None]] = {}
    for name, pattern, tau in (("above_threshold", AT_PATTERN, s + AT_GAP), ("report_noisy_max", RNM_PATTERN, None)):
        pairs[name] = (tuple(s + p for p in pattern), tuple(s + 1.0 - p for p in pattern), tau)
    return pairs


# ---------------------------------------------------------------------------------------------
# exact laws (AboveThreshold and its classic bugs), for the diagnosis
# ---------------------------------------------------------------------------------------------


def above_threshold_law(answers: Any, threshold: float, *, rho_scale: float, nu_scale: float,
                        shared_noise: bool = False) -> NDArray[np.float64]:
    """``P[first "above" at query k]`` for k = 0..m-1 and ``P[none]`` (entry m), for AboveThreshold run with
    threshold noise ``Lap(rho_scale)`` (``rho_scale = 0``: none) and query noise ``Lap(nu_scale)``,
    fresh per query or, with ``shared_noise``, one draw for every query (a classic bug).  The scales must be
    within a factor 20 of each other, and the answers within 100 ``nu_scale`` of the threshold.

    With fresh noise: ``integral f_rho(r) prod_{i<k} F_nu(tau + r - q_i) S_nu(tau + r - q_k) dr``.
    With shared noise the comparisons are ``nu - rho >= tau - q_i``: ``P[k] = P[tau - q_k <= D < min_{i<k}(tau - q_i)]``
    for ``D = nu - rho``.  By Gauss-Legendre quadrature between the kinks (about 1e-12), at most 20 answers.
    """
    q = check_float_array(answers, "answers", finite=True, ndim=1, min_size=1)
    if q.size > 20:
        raise ValueError(f"answers must have at most 20 entries, got {q.size}")
    t = check_real(threshold, "threshold", low=-1e6, high=1e6)
    b_nu = check_real(nu_scale, "nu_scale", low=1e-6, high=1e6)
    b_rho = check_real(rho_scale, "rho_scale", low=0.0, high=20.0 * b_nu)
    if 0.0 < b_rho < b_nu / 20.0:
        raise ValueError(f"rho_scale must be 0 or within a factor 20 of nu_scale (the quadrature's step), got {b_rho!r}")
    shared = check_bool(shared_noise, "shared_noise")
    if np.abs(q - t).max() > 100.0 * b_nu:
        raise ValueError("answers, threshold and nu_scale: the answers are more than 100 noise scales (nu_scale) "
                         "from the threshold")
    from scipy import stats

    nu = stats.laplace(0.0, b_nu)
    m = q.size
    if b_rho == 0.0:
        F = nu.cdf(t - q)
        below = np.concatenate([[1.0], np.cumprod(F)])
        return np.clip(np.append(below[:m] * (1.0 - F), below[m]), 0.0, 1.0)
    rho = stats.laplace(0.0, b_rho)
    r, w = _nodes(sorted({0.0, *(q - t).tolist()}), 60.0 * max(b_rho, b_nu), min(b_rho, b_nu) / 2)
    f_rho = w * rho.pdf(r)
    out = np.empty(m + 1)
    if shared:
        # P[D < x] = integral f_rho(r) F_nu(x + r) dr at every x = tau - q_k; the kinks of F_nu(x + r) are
        # at r = -x = q_k - tau: nodes already.
        cdf = f_rho @ nu.cdf((t - q)[None, :] + r[:, None])  # P[D < tau - q_k], one per k
        upper, upper_cdf = math.inf, 1.0
        for k in range(m):
            lo = t - q[k]
            out[k] = max(0.0, upper_cdf - cdf[k]) if lo < upper else 0.0
            if lo < upper:
                upper, upper_cdf = lo, cdf[k]
        out[m] = upper_cdf
    else:
        F = nu.cdf(t + r[:, None] - q[None, :])
        below = np.concatenate([np.ones((r.size, 1)), np.cumprod(F, axis=1)], axis=1)
        out[:m] = f_rho @ (below[:, :m] * (1.0 - F))
        out[m] = f_rho @ below[:, m]
    return np.clip(out, 0.0, 1.0)


def _nodes(kinks: list[float], span: float, width: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Gauss-Legendre nodes and weights (20 per piece) on [kinks[0] - span, kinks[-1] + span], with a break at
    every kink and pieces at most ``width`` wide: exact to about 1e-12 for the piecewise-smooth Laplace integrands."""
    x, wx = np.polynomial.legendre.leggauss(20)
    edges = [kinks[0] - span, *kinks, kinks[-1] + span]
    nodes, weights = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        pieces = max(1, math.ceil((b - a) / width))
        cuts = np.linspace(a, b, pieces + 1)
        half = np.diff(cuts)[:, None] / 2
        nodes.append((cuts[:-1, None] + half * (x[None, :] + 1)).ravel())
        weights.append((half * wx[None, :]).ravel())
    return np.concatenate(nodes), np.concatenate(weights)


def _bug_laws(x: tuple[float, ...], x_prime: tuple[float, ...], tau: float, eps: float) -> dict[str, tuple[NDArray, NDArray]]:
    """The laws on the AboveThreshold pair of the correct algorithm and of the bugs the diagnosis names."""
    variants = {
        "correct": dict(rho_scale=2 / eps, nu_scale=4 / eps),
        "no threshold noise (rho = 0)": dict(rho_scale=0.0, nu_scale=4 / eps),
        "one query noise shared by all the queries (nu drawn once, not per query)": dict(
            rho_scale=2 / eps, nu_scale=4 / eps, shared_noise=True),
        "noise of the Laplace mechanism's scale, Delta/epsilon, for rho and nu": dict(rho_scale=1 / eps, nu_scale=1 / eps),
        "half the noise: rho ~ Lap(Delta/epsilon), nu ~ Lap(2 Delta/epsilon)": dict(rho_scale=1 / eps, nu_scale=2 / eps),
    }
    return {name: (above_threshold_law(x, tau, **kw), above_threshold_law(x_prime, tau, **kw))
            for name, kw in variants.items()}


# ---------------------------------------------------------------------------------------------
# calling the student's mechanisms, and reading their outputs
# ---------------------------------------------------------------------------------------------


def _at_indices(value: Any, size: int, m: int, where: str) -> tuple[NDArray[np.int64] | None, str | None]:
    """The index of the first "above" per row (m: none), or a message saying why ``value`` is not
    ``size`` valid AboveThreshold rows of ``m`` queries."""
    if not isinstance(value, (np.ndarray, list, tuple)):
        return None, f"{where} returned {type(value).__name__}, not an array of shape ({size}, {m})"
    arr = _as_array(value)
    if arr is None:
        return None, f"{where} returned a ragged {type(value).__name__}, not an array of shape ({size}, {m})"
    if arr.shape != (size, m):
        return None, (f"{where} returned shape {arr.shape}, expected ({size}, {m}): one row per run, one entry per "
                      "query (0 below, 1 above, -1 not answered)")
    if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and not np.isfinite(arr).all()):
        return None, f"{where} returned dtype {arr.dtype}: the entries must be the integers 0, 1 and -1"
    if not np.isin(arr, (-1, 0, 1)).all():
        return None, f"{where} returned entries other than 0 (below), 1 (above) and -1 (not answered)"
    arr = arr.astype(np.int64)
    hit = arr == 1
    index = np.where(hit.any(axis=1), np.argmax(hit, axis=1), m)
    cols = np.arange(m)[None, :]
    want = np.where(cols < index[:, None], 0, np.where(cols == index[:, None], 1, -1))
    bad = np.flatnonzero((arr != want).any(axis=1))
    if bad.size:
        row = arr[bad[0]]
        if (row == 1).sum() > 1 or ((row[index[bad[0]] + 1:] == 0).any() if index[bad[0]] < m else False):
            why = ("it answers queries after the first 1: AboveThreshold stops at the first 'above', and the later "
                   "queries get -1 (not answered)")
        else:
            why = "a row must be 0s (below), then at most one 1 (the first above), then -1s; without a 1, every entry is 0"
        return None, f"{where}: {bad.size:,} of {size:,} rows are not valid outputs, e.g. {row.tolist()}: {why}"
    return index.astype(np.int64), None


def _rnm_indices(value: Any, size: int, m: int, where: str) -> tuple[NDArray[np.int64] | None, str | None]:
    """The indices of ``value`` (``size`` runs over ``m`` answers), or a message saying why not."""
    if not isinstance(value, (np.ndarray, list, tuple)):
        return None, f"{where} returned {type(value).__name__}, not an array of {size} indices"
    arr = _as_array(value)
    if arr is None:
        return None, f"{where} returned a ragged {type(value).__name__}, not an array of {size} indices"
    if arr.shape != (size,):
        return None, f"{where} returned shape {arr.shape}, expected ({size},): one index per run"
    if arr.dtype.kind == "f" and np.isfinite(arr).all() and not np.array_equal(arr, np.round(arr)):
        return None, (f"{where} returned non-integer numbers: release the index of the largest noisy answer, not the "
                      "noisy value (the value is not private: see the theorem on report-noisy-max)")
    if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and not np.isfinite(arr).all()):
        return None, f"{where} returned dtype {arr.dtype}: one integer index per run"
    if arr.size and (arr.min() < 0 or arr.max() > m - 1):
        return None, f"{where} returned indices outside 0..{m - 1}"
    return arr.astype(np.int64), None


def _as_array(value: Any) -> np.ndarray | None:
    """``np.asarray(value)`` of a student's list, tuple or array; None if it is ragged (or will not convert)."""
    try:
        return np.asarray(value)
    except Exception:  # noqa: BLE001 -- a ragged list, or a student's object whose conversion fails
        return None


def _runs(f: Any, kind: str, cases: list[tuple[tuple, int, int]]) -> list[tuple[NDArray | None, str | None]]:
    """Call ``f`` once per case ``(args, size, seed)`` (one shuffled batch; a fresh generator each), and read
    each answer as indices."""
    order = np.random.default_rng([seed for _, _, seed in cases]).permutation(len(cases))
    batch = [(cases[i][0], {"size": cases[i][1], "rng": np.random.default_rng(cases[i][2])}) for i in order]
    answers = call_many(f, batch)
    out: list[Any] = [None] * len(cases)
    for position, i in enumerate(order):
        args, size, _ = cases[i]
        value, exc = answers[position]
        name = "above_threshold" if kind == "at" else "report_noisy_max"
        where = f"{name}({', '.join(_short(a) for a in args)}, size={size:,})"
        if exc is not None:
            out[i] = (None, f"{where} raised {describe(exc)}")
        else:
            m = len(args[0])
            out[i] = (_at_indices if kind == "at" else _rnm_indices)(value, size, m, where)
    return out


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return "[" + ", ".join(f"{v:.3g}" for v in value.tolist()) + "]"
    return f"{value:.3g}" if isinstance(value, float) else repr(value)


def _law_finding(indices: NDArray[np.int64], law: NDArray[np.float64], what: str) -> Finding:
    """Chi-square test of the index frequencies against ``law`` (cells with fewer than 5 expected
    counts merged into their neighbour), at level LAW_ALPHA."""
    n = indices.size
    observed = np.bincount(indices, minlength=law.size).astype(float)
    expected = law / law.sum() * n
    obs_cells, exp_cells, o, e = [], [], 0.0, 0.0
    for oi, ei in zip(observed, expected):
        o, e = o + oi, e + ei
        if e >= 5:
            obs_cells.append(o)
            exp_cells.append(e)
            o, e = 0.0, 0.0
    if e > 0 or o > 0:
        if exp_cells:
            obs_cells[-1] += o
            exp_cells[-1] += e
        else:
            obs_cells, exp_cells = [o], [e]
    if len(exp_cells) < 2:
        return Finding(True, f"{what}: the frequencies of the outputs match the exact law")
    from scipy import stats

    p = float(stats.chisquare(obs_cells, exp_cells).pvalue)
    freq = ", ".join(f"{v:.3f}" for v in observed / n)
    exact = ", ".join(f"{v:.3f}" for v in law)
    if p > LAW_ALPHA:
        return Finding(True, f"{what}: over {n:,} runs the outputs follow the exact law (chi-square p-value {p:.2g})")
    return Finding(False, (f"{what}: over {n:,} runs the outputs do not follow the algorithm's law (chi-square "
                           f"p-value {p:.1e}): frequencies [{freq}], exact [{exact}]"))


class _Outputs:
    """A mechanism whose outputs were drawn already (by the student's code, in the kernel): handed out in
    order per dataset, so that ``audit_pair`` audits them."""

    def __init__(self, values: dict[tuple[float, ...], NDArray[np.int64]], name: str) -> None:
        self.values, self.used = values, {key: 0 for key in values}
        self.__name__ = name

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        key = tuple(float(v) for v in data)
        start = self.used[key]
        self.used[key] = start + size
        if start + size > len(self.values[key]):
            raise RuntimeError("the audit asked for more runs than were drawn")
        return self.values[key][start:start + size]


def _audit(f: Any, kind: str, x: tuple, x_prime: tuple, args: tuple, eps: float, trials: int,
           seed: int) -> tuple[Any, dict[tuple, NDArray] | None, str | None]:
    """Run the student's mechanism ``trials`` times on each dataset (``_AUDIT_CALLS`` calls each, shuffled),
    then ``audit_pair`` on those outputs: ``(result, outputs, None)`` or ``(None, None, message)``."""
    seeds = np.random.SeedSequence(seed).generate_state(2 * _AUDIT_CALLS, dtype=np.uint64).tolist()
    per_call = trials // _AUDIT_CALLS
    cases = [((np.array(data), *args), per_call, int(seeds[2 * j + d]))
             for d, data in enumerate((x, x_prime)) for j in range(_AUDIT_CALLS)]
    answers = _runs(f, kind, cases)
    for value, message in answers:
        if message is not None:
            return None, None, message
    outputs = {x: np.concatenate([v for v, _ in answers[:_AUDIT_CALLS]]),
               x_prime: np.concatenate([v for v, _ in answers[_AUDIT_CALLS:]])}
    table = np.array([np.bincount(outputs[d], minlength=len(x) + 1) for d in (x, x_prime)])
    table = table[:, table.sum(axis=0) > 0]
    from scipy import stats

    if table.shape[1] < 2 or stats.chi2_contingency(table).pvalue > LAW_ALPHA:
        return None, None, ("the outputs on the two datasets follow the same law: the mechanism ignores its answers "
                            "(private, but useless: an audit of it shows nothing)")
    name = "above_threshold" if kind == "at" else "report_noisy_max"
    result, exc = call(audit_pair, _Outputs(outputs, name), x, x_prime, epsilon=eps, trials=trials, rng=seed,
                       confidence_level=AUDIT_CONFIDENCE)
    if exc is not None:
        return None, None, f"audit_pair on your outputs failed: {describe(exc)}"
    return result, outputs, None


def _audit_message(result: Any, name: str, x: tuple, x_prime: tuple, eps: float, extra: str) -> Finding:
    pct = f"{100 * AUDIT_CONFIDENCE:g}%"
    pair = f"x = {_short(np.array(x))}, x' = {_short(np.array(x_prime))}{extra}"
    if not result.is_violation():
        return Finding(True, (f"audit_pair on {AT_TRIALS if name == 'above_threshold' else RNM_TRIALS:,} runs per "
                              f"dataset ({pair}): {pct} lower bound {result.lower_bound:.3f} <= claimed epsilon "
                              f"{eps:g}, no violation shown"))
    return Finding(False, (
        f"audit_pair flags your {name}: on {pair}, with claimed epsilon {eps:g}, the event {result.event} gives "
        f"a lower bound of {result.lower_bound:.3f} on epsilon at {pct} confidence (counts {result.counts.tolist()}): "
        f"your implementation is not {eps:g}-DP, with an error probability of at most {1 - AUDIT_CONFIDENCE:.0e}."))


# ---------------------------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------------------------


def _law_case(rng: np.random.Generator | None, kind: str) -> tuple[tuple, NDArray[np.float64], str]:
    """The input of a law test (args after the answers), its exact law, and a label."""
    if rng is None:
        answers, tau, eps = np.array([-1.0, 0.5, 0.0, 2.0]), 1.0, 1.0
    else:
        m, eps = int(rng.integers(3, 7)), float(_EPSILONS[int(rng.integers(3))])
        tau = float(rng.uniform(-10.0, 10.0))
        answers = tau + rng.uniform(-1.5, 0.5, m) * 4.0 / eps
    if kind == "at":
        return (answers, tau, eps), above_threshold_probabilities(answers, tau, eps), f"threshold {tau:.3g}, epsilon {eps:g}"
    return (answers, eps), report_noisy_max_probabilities(answers, eps), f"epsilon {eps:g}"


def _at_outputs_check(above_threshold: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q1: well-formed rows, the exact law, and randomness drawn from ``rng`` (same seed, same output).

    The law is tested on the grader's random answers and also on a pair like question 2's audit, with
    the audit's number of runs per call, all in one shuffled batch: a mechanism cannot follow the law
    in the law test and break it in the audit's calls only."""
    seed = _seed("q1", grading_seed)
    rng = grading_rng(grading_seed)
    args, law, label = _law_case(rng, "at")
    offset = 0.0 if rng is None else float(rng.uniform(-20.0, 20.0))
    x, x_prime, tau = audit_pairs(offset)["above_threshold"]
    a, b, c, d = (int(s) for s in np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64))
    per_call = AT_TRIALS // _AUDIT_CALLS
    pair = [((np.array(data), tau, AT_EPSILON), per_call, s) for data, s in ((x, c), (x_prime, d))]
    (ia, ma), (ib, mb), (ic, mc), (ix, mx), (iy, my) = _runs(
        above_threshold, "at", [(args, LAW_RUNS, a), (args, LAW_RUNS, b), (args, LAW_RUNS, a), *pair])
    message = ma or mb or mc or mx or my
    if message is not None:
        return [Finding(False, message, "form")]
    findings = [Finding(True, "returns one valid row per run: 0s (below), at most one 1 (above), then -1s", "form")]
    laws = [_law_finding(np.concatenate([ia, ib]), law, f"above_threshold({label})")]
    laws += [_law_finding(i, above_threshold_probabilities(np.array(data), tau, AT_EPSILON),
                          f"above_threshold({_short(np.array(data))}, threshold {tau:.3g}, epsilon {AT_EPSILON:g})")
             for i, data in ((ix, x), (iy, x_prime))]
    findings += named("law", next((f for f in laws if not f.passed), laws[0]))
    if not np.array_equal(ia, ic):
        findings.append(Finding(False, "two calls with the same seed gave different outputs: draw every noise from "
                                       "the rng argument (rng.laplace), not np.random", "rng"))
    elif np.array_equal(ia, ib):
        findings.append(Finding(False, "two different seeds gave the same outputs: is any noise drawn from rng?", "rng"))
    else:
        findings.append(Finding(True, "draws its noise from the rng it is given (reproducible)", "rng"))
    _flag_package(above_threshold, "at", args, law, a, ia)
    return findings


def _flag_package(f: Any, kind: str, args: tuple, law: NDArray[np.float64], seed: int, indices: NDArray) -> None:
    """Flag (for a human, not a score) a mechanism that draws its outputs from the exact law, or whose
    refusals of bad input are word for word those of :mod:`dptutor.selection` (it calls the package: a
    correct implementation draws the same outputs, so the outputs cannot tell)."""
    if not grading():
        return
    name = "above_threshold" if kind == "at" else "report_noisy_max"
    size = indices.size
    exact = [np.random.default_rng(seed).choice(law.size, size=size, p=law / law.sum())]
    cdf = np.cumsum(law)
    exact.append(np.minimum(np.searchsorted(cdf, np.random.default_rng(seed).random(size) * cdf[-1], side="right"),
                            law.size - 1))
    if any(np.array_equal(e, indices) for e in exact):
        flag_for_review(f"{name}'s outputs are draws from the exact law (rng.choice over the probabilities), not "
                        "runs of the algorithm: does it sample from dptutor.selection's exact probabilities?")
    answers, rest = np.asarray(args[0], dtype=float), args[1:]
    bad = [((np.append(answers, np.nan), *rest), {}), ((answers, *rest[:-1], -1.0), {})]
    mine = call_many(f, [(a, {"size": 3, "rng": np.random.default_rng(0)}) for a, _ in bad])
    package = selection.sparse_vector if kind == "at" else selection.report_noisy_max
    theirs = [call(package, *a, rng=np.random.default_rng(0), size=3) for a, _ in bad]
    if all(e is not None and r is not None and type(e).__name__ == type(r).__name__ and str(e) == str(r)
           for (_, e), (_, r) in zip(mine, theirs)):
        flag_for_review(f"{name} refuses bad input with exactly the messages of dptutor.selection's "
                        f"{package.__name__}: does it call the package instead of implementing the algorithm?")


def _diagnosis(outputs: dict[tuple, NDArray], x: tuple, x_prime: tuple, tau: float, eps: float) -> str:
    """The variant whose exact law explains the outputs best (log-likelihood), if not the correct one."""
    laws = _bug_laws(x, x_prime, tau, eps)
    counts = [np.bincount(outputs[d], minlength=len(x) + 1) for d in (x, x_prime)]
    loglik = {name: float(sum(np.sum(c * np.log(np.maximum(p, 1e-300))) for c, p in zip(counts, pair)))
              for name, pair in laws.items()}
    best = max(loglik, key=loglik.__getitem__)
    if best == "correct" or loglik[best] - loglik["correct"] < 20:
        return ""
    return f" Your outputs' frequencies fit the law of AboveThreshold with {best}."


def _at_audit_check(above_threshold: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q2: ``audit_pair`` on the grader's pair does not show a loss above the claimed epsilon."""
    seed = _seed("q2", grading_seed)
    rng = grading_rng(grading_seed)
    offset = 0.0 if rng is None else float(rng.uniform(-20.0, 20.0))
    x, x_prime, tau = audit_pairs(offset)["above_threshold"]
    if rng is not None and rng.random() < 0.5:
        x, x_prime = x_prime, x
    result, outputs, message = _audit(above_threshold, "at", x, x_prime, (tau, AT_EPSILON), AT_EPSILON, AT_TRIALS, seed)
    if message is not None:
        return [Finding(False, message)]
    finding = _audit_message(result, "above_threshold", x, x_prime, AT_EPSILON, f", threshold {tau:.3g}")
    if finding.passed:
        return [finding]
    hint = _diagnosis(outputs, x, x_prime, tau, AT_EPSILON)
    return [Finding(False, finding.message + hint + (
        " The proof needs one threshold noise rho ~ Lap(2 Delta/epsilon), drawn once per run (step 4), and a "
        "fresh nu_i ~ Lap(4 Delta/epsilon) for every query (step 3)."))]


def _rnm_check(report_noisy_max: Any, *, grading_seed: int | None = None) -> list[Finding]:
    """q3: indices, the exact law, and ``audit_pair`` on the grader's pair."""
    seed = _seed("q3", grading_seed)
    rng = grading_rng(grading_seed)
    args, law, label = _law_case(rng, "rnm")
    a = int(np.random.SeedSequence(seed).generate_state(1, dtype=np.uint64)[0])
    [(indices, message)] = _runs(report_noisy_max, "rnm", [(args, LAW_RUNS, a)])
    if message is not None:
        return [Finding(False, message, "form")]
    findings = [Finding(True, "returns one index per run", "form"),
                *named("law", _law_finding(indices, law, f"report_noisy_max({label})"))]
    _flag_package(report_noisy_max, "rnm", args, law, a, indices)
    offset = 0.0 if rng is None else float(rng.uniform(-20.0, 20.0))
    x, x_prime, _ = audit_pairs(offset)["report_noisy_max"]
    if rng is not None and rng.random() < 0.5:
        x, x_prime = x_prime, x
    result, _, message = _audit(report_noisy_max, "rnm", x, x_prime, (RNM_EPSILON,), RNM_EPSILON, RNM_TRIALS, seed + 1)
    if message is not None:
        return findings + [Finding(False, message, "audit")]
    finding = _audit_message(result, "report_noisy_max", x, x_prime, RNM_EPSILON, "")
    if not finding.passed:
        finding = Finding(False, finding.message + (
            " Step 2 of the proof: the cut moves by up to 2 Delta, so the noise needs scale 2 Delta/epsilon."))
    return findings + named("audit", finding)


ASSIGNMENT = Assignment("selection", "AboveThreshold and report-noisy-max", "selection.md", (
    Question("q1", "above_threshold: its outputs", 2.0, ("above_threshold",), _at_outputs_check,
             checks=("form", "law", "rng")),
    Question("q2", "above_threshold: an audit", 2.0, ("above_threshold",), _at_audit_check),
    Question("q3", "report_noisy_max", 2.0, ("report_noisy_max",), _rnm_check, checks=("form", "law", "audit")),
))
