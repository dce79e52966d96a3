"""The attacks differential privacy stops: membership inference and reconstruction.

Membership inference (Shokri et al. 2017; Yeom et al. 2018).  An attacker holds a trained model and a
candidate example and asks whether it was in the training data.  The loss-threshold attack answers
"member" when the model's loss on the example is below a threshold: a model fits its training data
better than fresh data.  Sweeping the threshold traces a ROC curve, true-positive rate (members
flagged) against false-positive rate (non-members flagged).  For an (epsilon, delta)-DP training run
every such test obeys ``TPR <= e^epsilon FPR + delta`` and the symmetric bound; the curve is
:func:`dptutor.epsilon.tpr_bound`.  The likelihood-ratio attack (Carlini et al. 2022) calibrates
each example: reference models trained with and without it show how its confidence is distributed in
each case, and the score is the ratio of the two densities at the target model's confidence.

Reconstruction (Dinur and Nissim 2003).  A database holds one secret bit per person; a curator
answers subset-sum queries, "how many of these people have the bit set?".  From about as many random
queries as people, least squares on the exact answers, rounded to {0, 1}, recovers the secret bits.
Laplace noise of scale ``1 / epsilon`` on each answer, with the queries' total budget split over them,
buries the signal: the attack falls to chance.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import MAX_ELEMENTS, check_float_array, check_int, check_real, check_rng
from dptutor.epsilon import tpr_bound
from dptutor.learning import Classifier, TrainingResult

__all__ = [
    "example_losses",
    "likelihood_ratio_scores",
    "roc_curve",
    "roc_excess",
    "subset_queries",
    "subset_sum_answers",
    "reconstruct",
]

#: The most people a reconstruction may have (the least-squares system is dense).
MAX_PEOPLE: int = 5000
#: The most work, ``rows * columns * min(rows, columns)`` multiply-adds, that ``reconstruct`` spends on an SVD
#: (``numpy.linalg.lstsq``), its fallback for a query matrix too close to rank-deficient for its Gram matrix: about
#: ten seconds on two cores (a 2000 x 2000 matrix), where 5,000 x 5,000 takes minutes.
MAX_SVD_WORK: int = 2000**3
#: The smallest reciprocal condition number (LAPACK's 1-norm estimate) of the Gram matrix that ``reconstruct``
#: solves through, below which it takes the SVD: square random 0/1 queries about 5000 people have about 1e-12.
MIN_GRAM_RCOND: float = 1e-14
#: Refinement steps of the Gram solution at most; it is kept only if the last step moved it by at most
#: ``GRAM_TOLERANCE`` times its largest entry (or 1), which a Gram matrix at ``MIN_GRAM_RCOND`` reaches in 2 or 3.
GRAM_STEPS: int = 6
GRAM_TOLERANCE: float = 1e-9


def example_losses(model: Classifier | TrainingResult, X: object, y: object) -> NDArray[np.float64]:
    """Each example's cross-entropy loss under ``model``: ``-log`` of the probability of its label.

    Parameters
    ----------
    model : Classifier or TrainingResult
        A trained model (``predict_proba`` and ``classes`` are used).
    X, y : array_like
        Examples ``(n, d)`` and their labels ``(n,)``, each label among the model's classes.

    Returns
    -------
    numpy.ndarray
        The ``n`` losses, each ``>= 0`` (probabilities are floored at 1e-300, so never ``inf``).
    """
    if isinstance(model, TrainingResult):
        model = model.model
    if not isinstance(model, Classifier):
        raise TypeError(f"model must be a Classifier or a TrainingResult, got {type(model).__name__}")
    proba = model.predict_proba(X)
    labels = check_float_array(y, "y", finite=True, ndim=1)
    if labels.size != proba.shape[0]:
        raise ValueError(f"y must have one label per row of X ({proba.shape[0]}), got {labels.size}")
    index = np.searchsorted(model.classes, labels)
    known = (index < model.classes.size) & (model.classes[np.minimum(index, model.classes.size - 1)] == labels)
    if not known.all():
        raise ValueError("y must hold only labels among the model's classes")
    return -np.log(np.maximum(proba[np.arange(labels.size), index], 1e-300))


def _confidence(losses: NDArray[np.float64]) -> NDArray[np.float64]:
    """The logit of the probability of the true label, ``log(p / (1 - p))`` with ``p = e^-loss``."""
    p_log = -losses
    rest = np.log(np.maximum(-np.expm1(p_log), 1e-300))
    return p_log - rest


def likelihood_ratio_scores(target_losses: object, reference_losses: object, reference_in: object) -> NDArray[np.float64]:
    """The likelihood-ratio membership score of each example (Carlini et al. 2022, with a fixed variance).

    Each example's confidence ``log(p / (1 - p))`` (``p`` the probability of its label) is modelled as
    Gaussian across reference models, with one mean among the models trained with it and another among
    those trained without it, and a standard deviation pooled over all examples for each of the two
    cases; the score is the log-ratio of the two densities at the target model's confidence.

    Parameters
    ----------
    target_losses : array_like
        The target model's losses on the ``n`` examples (:func:`example_losses`), each >= 0.
    reference_losses : array_like
        Shape ``(models, n)``: each reference model's losses on the same examples.
    reference_in : array_like of bool
        Shape ``(models, n)``: whether each example was in each reference model's training data; every
        example must be in at least one reference model and out of at least one.

    Returns
    -------
    numpy.ndarray
        ``n`` scores; higher means "more likely a member".
    """
    target = check_float_array(target_losses, "target_losses", finite=True, ndim=1, min_size=1, low=0.0)
    refs = check_float_array(reference_losses, "reference_losses", finite=True, ndim=2, min_size=2, low=0.0)
    try:
        inside = np.asarray(reference_in)
    except ValueError as exc:  # ragged nested lists
        raise TypeError(f"reference_in must be a boolean array ({exc})") from exc
    if inside.dtype != np.bool_:
        raise TypeError(f"reference_in must be a boolean array, got dtype {inside.dtype}")
    if refs.shape[1] != target.size or inside.shape != refs.shape:
        raise ValueError(f"reference_losses and reference_in must have shape (models, {target.size}), one column per "
                         "entry of target_losses, "
                         f"got {refs.shape} and {inside.shape}")
    if not (inside.any(axis=0) & (~inside).any(axis=0)).all():
        raise ValueError("reference_in must put every example in at least one reference model and out of another")
    phi, observed = _confidence(refs), _confidence(target)
    means, spreads = [], []
    for mask in (inside, ~inside):
        mean = np.sum(np.where(mask, phi, 0.0) / mask.sum(axis=0), axis=0)  # divided first: no overflow
        deviation = np.where(mask, phi - mean, 0.0)
        peak = float(np.max(np.abs(deviation))) or 1.0  # squares of deviation / peak cannot overflow
        spread = peak * float(np.sqrt(np.sum((deviation / peak) ** 2) / mask.sum()))
        means.append(mean)
        spreads.append(max(spread, 1e-6))
    return _log_ratio(observed, means, spreads)


def _log_ratio(x: NDArray[np.float64], means: list, spreads: list[float]) -> NDArray[np.float64]:
    """``log N(x; m_in, s_in^2) - log N(x; m_out, s_out^2)``; where it leaves the double range, the
    largest double of its sign (the sign from comparing ``|x - m| / s`` in logarithms)."""
    (m_in, m_out), (s_in, s_out) = means, spreads
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        z_in, z_out = (x - m_in) / s_in, (x - m_out) / s_out
        ratio = math.log(s_out) - math.log(s_in) + 0.5 * (z_out * z_out - z_in * z_in)
        bigger = np.log(np.abs(x - m_out)) - math.log(s_out) - np.log(np.abs(x - m_in)) + math.log(s_in)
        return np.where(np.isfinite(ratio), ratio, np.sign(bigger) * np.finfo(np.float64).max)


def roc_curve(member_scores: object, nonmember_scores: object) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ROC curve of the test "member when the score is at least t", over every threshold t.

    Parameters
    ----------
    member_scores, nonmember_scores : array_like
        Scores (higher means "more likely a member", e.g. minus the loss) of examples known to be in
        and out; one-dimensional, finite, at least one each.

    Returns
    -------
    fpr, tpr : numpy.ndarray
        Increasing from (0, 0) to (1, 1): the fraction of non-members and of members whose score is at
        least each distinct score (ties move both rates together).
    """
    members = check_float_array(member_scores, "member_scores", finite=True, ndim=1, min_size=1)
    others = check_float_array(nonmember_scores, "nonmember_scores", finite=True, ndim=1, min_size=1)
    thresholds = np.unique(np.concatenate([members, others]))[::-1]
    tpr = np.searchsorted(-np.sort(members)[::-1], -thresholds, side="right") / members.size
    fpr = np.searchsorted(-np.sort(others)[::-1], -thresholds, side="right") / others.size
    return np.concatenate([[0.0], fpr]), np.concatenate([[0.0], tpr])


def roc_excess(fpr: object, tpr: object, epsilon: float, delta: float = 0.0) -> float:
    """How far a ROC curve rises above the (``epsilon``, ``delta``) bound: ``max(tpr - tpr_bound(fpr))``.

    A positive value means the test does better than any test against an (epsilon, delta)-DP
    mechanism can; on an empirical curve it is evidence only beyond its sampling error.

    Parameters
    ----------
    fpr, tpr : array_like
        Equal-length rates in [0, 1] (as :func:`roc_curve` returns).
    epsilon : float
        The claimed epsilon (finite, >= 0).
    delta : float
        The claimed delta in [0, 1].
    """
    f = check_float_array(fpr, "fpr", finite=True, ndim=1, min_size=1)
    t = check_float_array(tpr, "tpr", finite=True, ndim=1, min_size=1)
    if f.shape != t.shape:
        raise ValueError(f"fpr and tpr must have the same length, got {f.size} and {t.size}")
    if (t < 0).any() or (t > 1).any():
        raise ValueError("tpr must hold rates in [0, 1]")
    return float(np.max(t - tpr_bound(f, epsilon, delta)))


def subset_queries(people: int, queries: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``queries`` random subsets of ``people`` people, as a 0/1 matrix (each person in each subset
    with probability 1/2, independently).

    Parameters
    ----------
    people : int
        Number of secret bits, 1 to :data:`MAX_PEOPLE`.
    queries : int
        Number of subset-sum queries, 1 to ``20 * MAX_PEOPLE``.
    rng : numpy.random.Generator
    """
    n = check_int(people, "people", minimum=1, maximum=MAX_PEOPLE)
    k = check_int(queries, "queries", minimum=1, maximum=20 * MAX_PEOPLE)
    if k * n > MAX_ELEMENTS:  # refused before allocating (5000 x 100000 would take 8 GB)
        raise ValueError(f"queries * people must be at most {MAX_ELEMENTS:,}, got {k} * {n} = {k * n:,}")
    gen = check_rng(rng)
    out = np.empty((k, n))
    for start in range(0, k, 4096):  # in blocks: no full-size temporaries beside the result
        out[start:start + 4096] = gen.random((min(4096, k - start), n)) < 0.5
    return out


def subset_sum_answers(
    secret: object, queries: object, *, rng: np.random.Generator, epsilon: float | None = None
) -> NDArray[np.float64]:
    """The curator's answers to subset-sum queries: exact, or with Laplace noise for epsilon-DP.

    Parameters
    ----------
    secret : array_like
        The secret bits (0 or 1), one per person.
    queries : array_like
        A 0/1 matrix, one row per query, one column per person (as :func:`subset_queries` returns).
    rng : numpy.random.Generator
    epsilon : float, optional
        None: exact answers.  Otherwise the total budget (> 0) for all the answers: the vector of
        answers has l1-sensitivity equal to the number of queries (one person changes each answer by at
        most 1), so each answer gets ``Laplace(queries / epsilon)`` noise (epsilon-DP in real arithmetic).

    Returns
    -------
    numpy.ndarray
        One answer per query.
    """
    bits = _bits(secret)
    q = _query_matrix(queries, bits.size)
    gen = check_rng(rng)
    exact = q @ bits
    if epsilon is None:
        return exact
    eps = check_real(epsilon, "epsilon", low=0.0, low_open=True)
    scale = q.shape[0] / eps
    if not scale <= 1e306:  # |Lap(b)| draws reach 37 b: beyond this some would overflow to inf
        raise ValueError(f"epsilon = {eps!r} is too small: the noise scale queries / epsilon = {scale:g} exceeds 1e306")
    return exact + gen.laplace(0.0, scale, size=exact.shape)


def _bits(secret: object) -> NDArray[np.float64]:
    bits = check_float_array(secret, "secret", finite=True, ndim=1, min_size=1)
    if not np.isin(bits, (0.0, 1.0)).all():
        raise ValueError("secret must hold only 0 and 1")
    if bits.size > MAX_PEOPLE:
        raise ValueError(f"secret must have at most {MAX_PEOPLE} bits, got {bits.size}")
    return bits


def _query_matrix(queries: object, people: int) -> NDArray[np.float64]:
    q = check_float_array(queries, "queries", finite=True, ndim=2, min_size=1)
    if q.shape[1] != people:
        raise ValueError(f"queries must have one column per bit of secret ({people}), got {q.shape[1]}")
    if not np.isin(q, (0.0, 1.0)).all():
        raise ValueError("queries must hold only 0 and 1")
    return q


def reconstruct(queries: object, answers: object) -> NDArray[np.int64]:
    """Dinur and Nissim's attack: the least-squares solution of ``queries @ bits = answers``, each
    coordinate rounded to the nearer of 0 and 1.

    The solution is the minimum-norm least-squares one (as ``numpy.linalg.lstsq``'s), found through the
    Cholesky factor of the smaller Gram matrix (``queries.T @ queries``, or ``queries @ queries.T`` with fewer
    queries than people) and iterative refinement: about ``k * n * min(k, n)`` multiply-adds for ``k`` queries
    about ``n`` people, in one BLAS call (seconds for 20,000 x 2,500; at most about 1.3e12, for 53,687 x 5,000).
    A query matrix too close to rank-deficient for that (reciprocal condition number of the Gram matrix below
    ``MIN_GRAM_RCOND``, or a refinement that does not settle) is solved by an SVD instead, which is far
    slower and so allowed only up to ``MAX_SVD_WORK``.

    Parameters
    ----------
    queries : array_like
        The 0/1 query matrix ``(k, n)``.
    answers : array_like
        The ``k`` (possibly noisy) answers.

    Returns
    -------
    numpy.ndarray
        The guessed bits, ``n`` integers in {0, 1}.

    Raises
    ------
    TypeError, ValueError
        For bad ``queries`` or ``answers`` (the message names it), or ``queries`` nearly rank-deficient and
        larger than the SVD may take (``k * n * min(k, n) > MAX_SVD_WORK``).
    """
    q = check_float_array(queries, "queries", finite=True, ndim=2, min_size=1)
    q = _query_matrix(q, q.shape[1])
    a = check_float_array(answers, "answers", finite=True, ndim=1)
    if a.size != q.shape[0]:
        raise ValueError(f"answers must have one entry per query ({q.shape[0]}), got {a.size}")
    if q.shape[1] > MAX_PEOPLE:
        raise ValueError(f"queries must have at most {MAX_PEOPLE} columns, got {q.shape[1]}")
    # Answers scaled by a power of two to at most 1 (exact): the Gram path's sums cannot overflow.
    exponent = max(0, math.frexp(float(np.max(np.abs(a), initial=0.0)))[1])
    solution = _gram_solution(q, np.ldexp(a, -exponent))
    if solution is not None:
        return (solution >= math.ldexp(0.5, -exponent)).astype(np.int64)
    k, n = q.shape
    if k * n * min(k, n) > MAX_SVD_WORK:
        raise ValueError(
            f"queries ({k} x {n}) is too close to rank-deficient to solve through its Gram matrix, and the SVD "
            f"that would solve it needs {k} * {n} * {min(k, n)} = {k * n * min(k, n):,} multiply-adds, more than "
            f"MAX_SVD_WORK = {MAX_SVD_WORK:,}: use fewer queries or people, or queries of full rank")
    solution, *_ = np.linalg.lstsq(q, a, rcond=None)
    return (solution >= 0.5).astype(np.int64)


def _gram_solution(q: NDArray[np.float64], a: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """The minimum-norm least-squares solution of ``q @ x = a`` through the Cholesky factor of the smaller Gram
    matrix, refined against the residual until a step moves it by at most ``GRAM_TOLERANCE`` (relative); ``None``
    when that matrix is singular, its reciprocal condition number is below ``MIN_GRAM_RCOND``, or ``GRAM_STEPS``
    steps do not get there (the caller then uses an SVD)."""
    from scipy import linalg

    tall = q.shape[0] >= q.shape[1]
    gram = q.T @ q if tall else q @ q.T  # one BLAS syrk: k n min(k, n) multiply-adds
    try:
        factor = linalg.cho_factor(gram, check_finite=False)
    except linalg.LinAlgError:  # not positive definite: singular
        return None
    norm = float(np.max(gram.sum(axis=0)))  # the 1-norm: 0/1 queries make every entry >= 0
    rcond, info = linalg.lapack.dpocon(factor[0], norm, uplo="L" if factor[1] else "U")
    if info != 0 or not rcond >= MIN_GRAM_RCOND:
        return None

    def solve(residual: NDArray[np.float64]) -> NDArray[np.float64]:
        # Tall: (q^T q)^-1 q^T r.  Wide: q^T (q q^T)^-1 r, which stays in q's row space (the minimum norm).
        if tall:
            return linalg.cho_solve(factor, q.T @ residual, check_finite=False)
        return q.T @ linalg.cho_solve(factor, residual, check_finite=False)

    x = solve(a)
    for _ in range(GRAM_STEPS):
        step = solve(a - q @ x)
        x += step
        if np.max(np.abs(step)) <= GRAM_TOLERANCE * max(1.0, float(np.max(np.abs(x)))):
            return x
    return None
