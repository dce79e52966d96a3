"""The zoo's registry: :class:`ZooEntry` and :data:`ZOO` (see :mod:`dptutor.zoo`)."""

from __future__ import annotations

import functools
import inspect
import keyword
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from numpy.typing import NDArray

from dptutor._validate import (
    check_bool,
    check_callable,
    check_choice,
    check_float_array,
    check_mechanism_epsilon,
    check_real,
    renamed_parameters,
    recordable_seed,
    shown,
)
from dptutor.approximate_dp import discrete_gaussian_epsilon
from dptutor.audit import PairAudit, audit_pair
from dptutor.exact import granular_loss, granular_parameters
from dptutor.zoo.counts import (
    classic_sigma,
    discrete_gaussian_count,
    exact_laplace_count,
    exact_noisy_histogram,
    exact_scale,
    granular_laplace_vector,
    histogram_eps,
    randomized_response,
)
from dptutor.zoo.noisy_max import report_noisy_max, report_noisy_max_value
from dptutor.zoo.sparse_vector import SVT_ALGORITHMS, svt, svt_log_likelihood_ratio, svt_numerical_value
from dptutor.zoo.vectors import adept_vector, clipped_sum, dptext_vector, first_coordinate, minimum

__all__ = ["PRIVACY", "ZooEntry", "ZOO"]


#: What an entry's ``privacy`` says; private as the code runs on a real computer, private only in real
#: arithmetic (the algorithm is correct, its floating-point implementation is not), or not private.
PRIVACY: tuple[str, str, str] = ("as implemented", "in real arithmetic only", "not private")


@dataclass(frozen=True)
class ZooEntry:
    """One mechanism with its claim, its standard neighbouring inputs and what is known about it.

    ``private`` says whether the algorithm meets its claim (in real arithmetic); ``privacy`` (one of
    :data:`PRIVACY`) says whether the code does, as implemented, and ``why`` gives the reason when it
    does not.  ``privacy`` defaults to ``"in real arithmetic only"`` for a private entry and ``"not
    private"`` otherwise.  ``true_epsilon`` is the exact epsilon for the stated neighbourhood where known,
    at the claimed ``delta`` (``math.inf`` when the mechanism is not (epsilon, delta)-DP for any epsilon),
    else ``None``; for the float samplers it is the epsilon in real arithmetic.  ``dpsniper`` is the lower
    bound published by Bichsel et al. (2021) at claimed epsilon = 0.1, where one exists: a 90% lower
    confidence bound, the larger of their logistic-regression and neural-network runs (by the union bound,
    both hold with probability at least 80%).

    Parameters
    ----------
    name : str
        The entry's name (non-empty).
    mechanism : callable
        ``mechanism(data, size, rng, *, epsilon, ...)``.
    epsilon : float
        The claimed epsilon, at least ``1e-12``.
    x, x_prime : float or tuple of float
        The standard neighbouring inputs.
    private : bool
        Whether the algorithm meets its claim in real arithmetic.
    true_epsilon : float or None
        The exact epsilon on the neighbourhood (``math.inf`` if none exists), or ``None`` if unknown.
    known : str
        What is known about its privacy, in words.
    source : str
        The bibliography key of its source.
    delta : float, default 0.0
        The claimed delta, in ``[0, 1)``.
    statistic : callable or None, default None
        ``statistic(outputs)``, one real per output, for mechanisms with vector outputs.
    dpsniper : float or None, default None
        DP-Sniper's published lower bound, where one exists.
    options : tuple of (str, object) pairs, default ()
        Keyword arguments bound into :meth:`release`: each a ``(name, value)`` tuple, the names distinct keyword
        arguments of ``mechanism`` other than ``data``, ``size``, ``rng``, ``epsilon`` and ``delta``.
    privacy : str or None, default None
        One of :data:`PRIVACY` (``None``: from ``private``).
    why : str, default ''
        Why the code is not private as implemented, where it is not.

    Raises
    ------
    TypeError
        If a field is of the wrong kind (the message names it).
    ValueError
        If a field is out of range, or ``privacy`` contradicts ``private``.
    """

    name: str
    mechanism: Callable[..., Any]
    epsilon: float
    x: tuple[float, ...] | float
    x_prime: tuple[float, ...] | float
    private: bool
    true_epsilon: float | None
    known: str
    source: str
    delta: float = 0.0
    statistic: Callable[[NDArray], NDArray] | None = None
    dpsniper: float | None = None
    options: tuple[tuple[str, Any], ...] = field(default=())
    privacy: str | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {type(self.name).__name__}")
        check_callable(self.mechanism, "mechanism", "mechanism(data, size, rng, *, epsilon)")
        check_mechanism_epsilon(self.epsilon)
        for field_name in ("x", "x_prime"):
            check_float_array(getattr(self, field_name), field_name, finite=True, ndim=(0, 1), min_size=1)
        for field_name in ("known", "source"):
            if not isinstance(getattr(self, field_name), str):
                raise TypeError(f"{field_name} must be a string, got {type(getattr(self, field_name)).__name__}")
        check_real(self.delta, "delta", low=0.0, high=1.0, high_open=True)
        check_bool(self.private, "private")
        if self.privacy is None:
            object.__setattr__(self, "privacy", PRIVACY[1] if self.private else PRIVACY[2])
        check_choice(self.privacy, "privacy", PRIVACY)
        if (self.privacy == PRIVACY[2]) == self.private:
            raise ValueError(f"privacy {self.privacy!r} contradicts private={self.private}")
        if not isinstance(self.why, str):
            raise TypeError(f"why must be a string, got {type(self.why).__name__}")
        for field_name in ("true_epsilon", "dpsniper"):
            value = getattr(self, field_name)
            if value is not None:
                check_real(value, field_name, low=0.0, allow_inf=True)
        if self.statistic is not None:
            check_callable(self.statistic, "statistic", "statistic(outputs)")
        _check_options(self.options, self.mechanism)

    def release(self) -> Callable[..., Any]:
        """The mechanism as ``release(data, size, rng)``, with the claimed epsilon (and delta) bound in
        (epsilon only if the mechanism takes it: RAPPOR's privacy is set by its own parameters).

        Returns
        -------
        callable
            ``release(data, size, rng)`` (a :func:`functools.partial` of the mechanism).

        Notes
        -----
        It raises no exception: the fields were checked when the entry was made.
        """
        kwargs = dict(self.options)
        if _takes(self.mechanism, "epsilon"):
            kwargs["epsilon"] = self.epsilon
        if self.delta:
            kwargs["delta"] = self.delta
        return functools.partial(self.mechanism, **kwargs)

    @renamed_parameters(seed="rng")
    def audit(self, trials: int, *, rng: Any = None, **kwargs: Any) -> PairAudit:
        """:func:`dptutor.audit.audit_pair` on the standard inputs, at the claimed epsilon and delta.

        Parameters
        ----------
        trials : int
            The runs per dataset.
        rng : int, sequence of int, numpy.random.SeedSequence, numpy.random.Generator or None, default None
            What seeds the audit; the audit records a seed that repeats it (a Generator gives four words
            drawn from it; ``None`` fresh entropy).  ``seed=`` is its deprecated alias.
        **kwargs
            Further keyword arguments of :func:`dptutor.audit.audit_pair`.

        Returns
        -------
        dptutor.audit.PairAudit
            The audit's lower bound and its evidence.

        Raises
        ------
        TypeError
            If ``rng`` and its alias ``seed`` are both given, or an argument is of the wrong kind.
        ValueError
            As :func:`dptutor.audit.audit_pair`, naming the parameter.
        """
        seed = recordable_seed(rng)
        return audit_pair(
            self.release(), self.x, self.x_prime, epsilon=self.epsilon, delta=self.delta, trials=trials,
            statistic=self.statistic, **{_AUDIT_SEED: seed}, **kwargs,
        )


#: Keywords that ``options`` may not hold: ``release(data, size, rng)`` passes the first three, and the
#: entry's own ``epsilon`` and ``delta`` fields bind the last two.
_RESERVED_OPTIONS = ("data", "size", "rng", "epsilon", "delta")


def _check_options(options: object, mechanism: Callable[..., Any]) -> None:
    """``options`` as :class:`ZooEntry` takes it: a tuple of ``(name, value)`` tuples, each name a distinct keyword
    of ``mechanism`` (an identifier, not one of ``_RESERVED_OPTIONS``); ``TypeError``/``ValueError`` naming it."""
    if not isinstance(options, tuple):
        raise TypeError(f"options must be a tuple of (name, value) pairs, got {type(options).__name__}")
    seen: set[str] = set()
    for i, pair in enumerate(options):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"options[{i}] must be a (name, value) tuple, got {shown(pair)}")
        key = pair[0]
        if not isinstance(key, str):
            raise TypeError(f"options[{i}] must be named by a str, got {type(key).__name__}")
        if not key.isidentifier() or keyword.iskeyword(key):
            raise ValueError(f"options[{i}] must be named by a keyword argument, got {shown(key)}")
        if key in _RESERVED_OPTIONS:
            raise ValueError(f"options[{i}] must not set {key!r} (release() passes data, size and rng; "
                             "the entry's fields bind epsilon and delta)")
        if key in seen:
            raise ValueError(f"options names {key!r} twice")
        if not _takes(mechanism, key):
            raise ValueError(f"options[{i}]: the mechanism takes no keyword argument {key!r}")
        seen.add(key)


def _takes(fn: Callable[..., Any], name: str) -> bool:
    """True when ``fn`` has a parameter ``name`` (or ``**kwargs``, or a signature that cannot be read)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


#: :func:`dptutor.audit.audit_pair`'s keyword for its seed: ``rng`` where it speaks scipy's vocabulary
#: (``seed`` is then its deprecated alias), else ``seed``.
_AUDIT_SEED = "rng" if _takes(audit_pair, "rng") else "seed"


def _count_entries(e: float) -> list[ZooEntry]:
    """The counts, randomized response, histograms and report-noisy-max entries at claimed epsilon ``e``."""
    ones5 = (1.0,) * 5
    return [
        ZooEntry("laplace_count", exact_laplace_count, e, 0.0, 1.0, True, float(1 / exact_scale(e)),
                 "epsilon-DP; exact discrete Laplace noise, the event output >= 1 attains e^epsilon",
                 "dwork2006calibrating", dpsniper=0.098, privacy=PRIVACY[0]),
        ZooEntry("gaussian_count", discrete_gaussian_count, e, 0.0, 1.0, True,
                 discrete_gaussian_epsilon(1e-5, classic_sigma(e, 1e-5), 1),
                 "(epsilon, delta)-DP with delta = 1e-5: exact discrete Gaussian noise, classic calibration; true "
                 "epsilon given at delta = 1e-5 (not epsilon-DP for any epsilon at delta = 0)",
                 "canonne2020discrete", delta=1e-5, privacy=PRIVACY[0]),
        ZooEntry("randomized_response", randomized_response, e, 1, 0, True, e, "exactly epsilon-DP", "dwork2014algorithmic",
                 why="the keep probability e^eps / (1 + e^eps) is rounded to a double and compared with a "
                     "53-bit uniform: epsilon is off by about 1e-16, and no output is impossible"),
        ZooEntry("noisy_histogram", exact_noisy_histogram, e, ones5, (2.0,) + ones5[1:], True, float(1 / exact_scale(e)),
                 "epsilon-DP; exact discrete Laplace noise on each bin",
                 "ding2018detecting", statistic=first_coordinate, dpsniper=0.098, privacy=PRIVACY[0]),
        ZooEntry("histogram_eps", histogram_eps, e, ones5, (2.0,) + ones5[1:], False, 1.0 / e,
                 "noise scale epsilon instead of 1/epsilon: true epsilon 1/epsilon", "ding2018detecting",
                 statistic=first_coordinate, dpsniper=4.60),
        ZooEntry("report_noisy_max", report_noisy_max, e, ones5, (0.0,) + (2.0,) * 4, True, None,
                 "epsilon-DP (the index only)", "ding2018detecting", dpsniper=0.092,
                 why="floating-point Laplace noise; only the index is released, so no output is impossible, "
                     "but the probabilities are those of rounded noise (no proof as implemented)"),
        ZooEntry("report_noisy_max_exponential", report_noisy_max, e, ones5, (0.0,) + (2.0,) * 4, True, None,
                 "epsilon-DP (the index only)", "ding2018detecting", dpsniper=0.098, options=(("noise", "exponential"),),
                 why="floating-point exponential noise; the index hides the low bits, but no proof as implemented"),
        ZooEntry("report_noisy_max_value", report_noisy_max_value, e, (0.0,) * 5, ones5, False, 5 * e / 2,
                 "releases the maximum's value: true epsilon k epsilon / 2 = 0.25 for k = 5 answers", "ding2018detecting",
                 dpsniper=0.249),
        ZooEntry("report_noisy_max_value_exponential", report_noisy_max_value, e, ones5, (2.0,) * 5, False, math.inf,
                 "releases the maximum's value with one-sided noise: not epsilon-DP for any epsilon", "ding2018detecting",
                 dpsniper=0.353, options=(("noise", "exponential"),)),
    ]


def _svt_entries(e: float) -> list[ZooEntry]:
    """Lyu, Su and Li's Algorithms 1-6 at claimed epsilon ``e``."""
    out = []
    ones10 = (1.0,) * 10
    split = (2.0,) * 5 + (0.0,) * 5
    svt_pairs = {1: ((0.0,) * 5 + ones10[:5], ones10[:5] + (0.0,) * 5), 2: ((0.0,) * 5 + ones10[:5], ones10[:5] + (0.0,) * 5),
                 4: (ones10, split), 5: (split, ones10), 6: (ones10[:5] + (0.0,) * 5, (0.0,) * 5 + ones10[:5])}
    dps = {1: 0.086, 2: 0.086, 3: 0.182, 4: 0.170, 5: 1.761, 6: 0.272}
    for alg in (1, 2, 4, 5, 6):
        x, xp = svt_pairs[alg]
        # Algorithms 3 and 6 are not epsilon-DP for any epsilon as the number of queries grows; with
        # ten queries their loss is finite but not known in closed form, like Algorithm 4's.
        true = math.inf if alg == 5 else None
        why = ("floating-point Laplace noise in the comparisons; only above / below is released, but no proof "
               "as implemented") if alg in (1, 2) else ""
        out.append(ZooEntry(f"svt{alg}", svt, e, x, xp, alg in (1, 2), true,
                            SVT_ALGORITHMS[alg], "lyu2017understanding", dpsniper=dps[alg], options=(("algorithm", alg),),
                            why=why))
    # Algorithm 3 at c = 1 (DP-Sniper's setting): its leak per answer is epsilon_2 / c, so it shrinks as c
    # grows, unlike Algorithm 4's.  Its loss grows with the answers "below" that come before a released
    # value and sit just above the noisy threshold; a staircase of 28 answers puts some step there
    # whatever the threshold noise.  Outputs are real vectors, audited through the exact likelihood ratio.
    stairs = tuple(float(v) for v in range(-59, 81, 5))
    stairs_up = tuple(v + 1.0 for v in stairs)
    llr3 = functools.partial(svt_log_likelihood_ratio, x=stairs, x_prime=stairs_up, epsilon=e, c=1, threshold=1.0)
    out.append(ZooEntry("svt3", svt_numerical_value, e, stairs, stairs_up, False, None, SVT_ALGORITHMS[3],
                        "lyu2017understanding", statistic=llr3, dpsniper=dps[3], options=(("c", 1), ("threshold", 1.0))))
    return out


def _vector_entries(e: float) -> list[ZooEntry]:
    """The paper's three mechanisms on one person's vector in ``[0, 1]^8`` at claimed epsilon ``e``."""
    n = 8
    zeros, ones = (0.0,) * n, (1.0,) * n
    return [
        ZooEntry("laplace_vector", granular_laplace_vector, e, zeros, ones, True, float(granular_loss(granular_parameters(e, n))),
                 "the paper's correct mechanism, b = n / epsilon, made exact: Google's granular Laplace "
                 "(true epsilon: its exact loss, just below epsilon)",
                 "habernal2022reparametrization", statistic=clipped_sum, privacy=PRIVACY[0]),
        ZooEntry("adept_vector", adept_vector, e, zeros, ones, False, n * e, "ADePT: sensitivity 1 instead of n, true epsilon n epsilon",
                 "habernal2021devil", statistic=clipped_sum),
        ZooEntry("dptext_vector", dptext_vector, e, zeros, ones, False, math.inf,
                 "DPText: one-sided noise (the paper's Theorems 3.1 and 3.2)", "habernal2022reparametrization", statistic=minimum),
    ]


def _entries(epsilon: float = 0.1) -> dict[str, ZooEntry]:
    out = _count_entries(epsilon) + _svt_entries(epsilon) + _vector_entries(epsilon)
    return {entry.name: entry for entry in out}


#: The zoo at claimed epsilon = 0.1 (StatDP's and DP-Sniper's setting), keyed by name.
ZOO: dict[str, ZooEntry] = _entries(0.1)
