"""The sanity check in closed form: the attack's exact guess probabilities and loss for the built-in mechanisms.

See :mod:`dptutor.audit.sanity` for the experiment; :func:`simulated_losses` draws the Monte Carlo
estimate's sampling distribution from these closed forms without running a mechanism.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_choice, check_int, check_positive
from dptutor.audit._sanity_result import MAX_N, MAX_TRIALS, loss_from_logs
from dptutor.mechanisms import MECHANISMS

__all__ = ["exact_loss", "exact_guess_probabilities", "rounding_probabilities", "simulated_losses"]

#: The most virtual audits :func:`simulated_losses` draws in one call: its work arrays take ~70 bytes per audit.
MAX_REPS = 10**7

NEG_INF = -math.inf
LOG_HALF = -math.log(2.0)

# ---------------------------------------------------------------------------------------------
# exact closed forms
# ---------------------------------------------------------------------------------------------


def rounding_probabilities(name: str, n: int, epsilon: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """Per-coordinate probability that the attack rounds an output coordinate to 1.

    Returns ``((p_0, 1 - p_0), (p_1, 1 - p_1))`` for ``D`` (zeros) and ``D'`` (ones), each
    complement computed without cancellation.  With ``b`` the Laplace scale and
    ``P(Lap(0, b) >= t) = exp(-t / b) / 2`` for ``t >= 0``:

    * ``laplace`` (``b = n/epsilon``), ``adept`` (``b = 1/epsilon``): ``p_0 = P(noise >= 1/2) =
      exp(-1/(2b))/2`` and ``p_1 = P(noise >= -1/2) = 1 - p_0``;
    * ``dptext`` (``b = n/epsilon``): the noise is 0 (NaN replaced) or ``-b ln(1 - 2v)`` for
      ``v < 1/2``, which exceeds 1/2 iff ``v > (1 - exp(-1/(2b)))/2``: ``p_0 = exp(-1/(2b))/2``
      again, but ``p_1 = 1`` since the noise is never negative;
    * ``wrong_sensitivity`` (``b = n/epsilon``): ``0.5 (x + noise) >= 1/2`` iff ``x + noise >= 1``,
      so ``p_0 = exp(-1/b)/2`` and ``p_1 = P(noise >= 0) = 1/2``;
    * ``copy_input``: ``p_0 = 0``, ``p_1 = 1``; ``random_output``: ``p_0 = p_1 = 1/2``.

    Parameters
    ----------
    name : str
        A built-in mechanism (a key of ``dptutor.mechanisms.MECHANISMS``).
    n : int
        The dimension, 1 to ``MAX_N``.
    epsilon : float
        The privacy budget, positive.

    Returns
    -------
    tuple of tuple of float
        ``((p_0, 1 - p_0), (p_1, 1 - p_1))``.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    name, n, eps = _check_exact_args(name, n, epsilon)
    if name in ("laplace", "adept"):
        b = n / eps if name == "laplace" else 1.0 / eps
        tail = 0.5 * math.exp(-0.5 / b)
        return (tail, 1.0 - tail), (1.0 - tail, tail)
    if name == "dptext":
        tail = 0.5 * math.exp(-0.5 * eps / n)
        return (tail, 1.0 - tail), (1.0, 0.0)
    if name == "wrong_sensitivity":
        tail = 0.5 * math.exp(-eps / n)
        return (tail, 1.0 - tail), (0.5, 0.5)
    if name == "copy_input":
        return (0.0, 1.0), (1.0, 0.0)
    return (0.5, 0.5), (0.5, 0.5)  # random_output


def _check_exact_args(name: object, n: object, epsilon: object) -> tuple[str, int, float]:
    return (
        check_choice(name, "name", MECHANISMS),
        check_int(n, "n", minimum=1, maximum=MAX_N),
        check_positive(epsilon, "epsilon"),
    )


def _log_rounding(name: str, n: int, eps: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """:func:`rounding_probabilities` in log space: ``((ln p_0, ln(1 - p_0)), (ln p_1, ln(1 - p_1)))``.

    Every tail ``exp(-t)/2`` is kept as its log ``-ln 2 - t``, so it never underflows to 0 (which
    would turn a finite loss such as 745 into infinity).
    """

    def tail(t: float) -> tuple[float, float]:  # (ln(exp(-t)/2), ln(1 - exp(-t)/2))
        return LOG_HALF - t, math.log1p(-0.5 * math.exp(-t))

    if name in ("laplace", "adept"):
        lt, lc = tail(0.5 * eps / n if name == "laplace" else 0.5 * eps)  # 1/(2b)
        return (lt, lc), (lc, lt)
    if name == "dptext":
        return tail(0.5 * eps / n), (0.0, NEG_INF)
    if name == "wrong_sensitivity":
        return tail(eps / n), (LOG_HALF, LOG_HALF)
    if name == "copy_input":
        return (NEG_INF, 0.0), (0.0, NEG_INF)
    return (LOG_HALF, LOG_HALF), (LOG_HALF, LOG_HALF)  # random_output


def _log_majority(n: int, log_p: float, log_q: float) -> tuple[float, float]:
    """``(ln P(K <= n//2), ln P(K > n//2))`` for ``K ~ Binomial(n, p)``, given ``ln p`` and ``ln(1 - p)``.

    Sums ``scipy.stats.binom.logpmf`` terms with ``scipy.special.logsumexp``, so tails far below
    the float range stay finite.  For ``p > 1/2`` the pmf is evaluated as that of ``n - K'`` with
    ``K' ~ Binomial(n, q)``, so a ``p`` within rounding of 1 loses nothing.  When the smaller of
    ``p`` and ``q`` is below the smallest normal float, the log-pmf is summed from its logs
    (``ln C(n, k) + k ln p + (n - k) ln q``) instead, so nothing underflows.
    """
    from scipy import special, stats

    if log_p == NEG_INF:
        return 0.0, NEG_INF
    if log_q == NEG_INF:
        return NEG_INF, 0.0
    k = np.arange(n + 1)
    small = min(log_p, log_q)
    if small > math.log(np.finfo(np.float64).tiny):
        p, q = math.exp(log_p), math.exp(log_q)
        logpmf = stats.binom.logpmf(k, n, p) if p <= 0.5 else stats.binom.logpmf(n - k, n, q)
    else:
        logpmf = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1) + k * log_p + (n - k) * log_q
    half = n // 2
    return float(special.logsumexp(logpmf[: half + 1])), float(special.logsumexp(logpmf[half + 1 :]))


def exact_guess_probabilities(name: str, n: int, epsilon: float) -> NDArray[np.float64]:
    """``log P(guess y | dataset d)`` as a 2x2 array ``[d, y]`` for a built-in mechanism.

    Coordinates round independently, so the number of ones is Binomial(n, p_d) (see
    :func:`rounding_probabilities`) and the guess is 1 iff it exceeds n/2.

    Parameters
    ----------
    name : str
        A built-in mechanism (a key of ``dptutor.mechanisms.MECHANISMS``).
    n : int
        The dimension, 1 to ``MAX_N``.
    epsilon : float
        The privacy budget, positive.

    Returns
    -------
    numpy.ndarray
        The 2x2 array of natural logs (``-inf`` for an impossible guess).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    name, n, eps = _check_exact_args(name, n, epsilon)
    (p0, q0), (p1, q1) = _log_rounding(name, n, eps)
    return np.array([_log_majority(n, p0, q0), _log_majority(n, p1, q1)])


def exact_loss(name: str, n: int, epsilon: float) -> float:
    """The attack's true privacy loss for built-in mechanism ``name``, in closed form.

    ``max_y |ln P(y | D) - ln P(y | D')|`` with the guess probabilities of
    :func:`exact_guess_probabilities`, computed in log space (no underflow: e.g. ADePT at
    n = 128, epsilon = 10 has a finite loss of about 284 although no Monte Carlo run of feasible
    size ever sees a trial on the rare side).  ``math.inf`` for ``dptext`` and ``copy_input``,
    0 for ``random_output``.

    Parameters
    ----------
    name : str
        A built-in mechanism (a key of ``dptutor.mechanisms.MECHANISMS``).
    n : int
        The dimension, 1 to ``MAX_N``.
    epsilon : float
        The privacy budget, positive.

    Returns
    -------
    float
        The true loss of the attack, never NaN.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.

    Examples
    --------
    >>> exact_loss("laplace", 1, 1.0)  # doctest: +ELLIPSIS
    0.83...
    >>> exact_loss("dptext", 8, 1.0)
    inf
    """
    return loss_from_logs(exact_guess_probabilities(name, n, epsilon).tolist())


def _loss_of_guess(a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.float64]:
    """``|ln a - ln b|`` elementwise: 0 where both counts are 0 (guess skipped), inf where one is."""
    both, one = (a == 0) & (b == 0), (a == 0) ^ (b == 0)
    safe_a, safe_b = np.where(a > 0, a, 1), np.where(b > 0, b, 1)
    loss = np.abs(np.log(safe_a) - np.log(safe_b))
    return np.where(one, math.inf, np.where(both, 0.0, loss))


def simulated_losses(
    name: str, n: int, epsilon: float, trials: int, reps: int = 10_000, *,
    rng: int | np.random.SeedSequence | np.random.Generator,
) -> NDArray[np.float64]:
    """The estimated loss (the paper's Eq. 12) of ``reps`` virtual audits of ``trials`` trials per dataset.

    No mechanism runs: a run's counts of guess 1 are exactly ``Binomial(trials, q_d)`` with the
    closed-form ``q_d`` of :func:`exact_guess_probabilities`, so drawing the two counts and applying
    :func:`loss_from_counts` gives a draw from the sampling distribution of the estimate.

    Parameters
    ----------
    name : str
        A built-in mechanism (a key of :data:`dptutor.mechanisms.MECHANISMS`).
    n : int
        The dimension, 1 to ``MAX_N``.
    epsilon : float
        The claimed epsilon, positive.
    trials : int
        Trials per dataset of each virtual audit, 1 to ``MAX_TRIALS``.
    reps : int, optional
        The number of virtual audits, 1 to ``MAX_REPS`` (10^7).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator
        The source of randomness (a Generator is used as it is, so its state advances; an int or a
        SeedSequence seeds a new one).

    Returns
    -------
    numpy.ndarray
        ``reps`` estimated losses, each >= 0 or ``inf``.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.

    Examples
    --------
    >>> losses = simulated_losses("laplace", 1, 1.0, 1000, reps=5, rng=0)
    >>> losses.shape
    (5,)
    """
    name = check_choice(name, "name", MECHANISMS)
    n = check_int(n, "n", minimum=1, maximum=MAX_N)
    epsilon = check_positive(epsilon, "epsilon")
    trials = check_int(trials, "trials", minimum=1, maximum=MAX_TRIALS)
    reps = check_int(reps, "reps", minimum=1, maximum=MAX_REPS)
    if not isinstance(rng, (np.random.Generator, np.random.SeedSequence)):
        rng = check_int(rng, "rng", minimum=0)
    rng = np.random.default_rng(rng)
    q = np.clip(np.exp(exact_guess_probabilities(name, n, epsilon)[:, 1]), 0.0, 1.0)
    ones = rng.binomial(trials, q[:, None], size=(2, reps))  # counts[d, 1] of each virtual run
    zeros = trials - ones
    return np.maximum(_loss_of_guess(ones[0], ones[1]), _loss_of_guess(zeros[0], zeros[1]))
