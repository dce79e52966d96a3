"""A general auditor for one pair of neighbouring datasets: :func:`audit_pair` and :class:`PairAudit`."""

from __future__ import annotations

import concurrent.futures
import copy
import itertools
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    check_callable,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_real,
    check_seed_sequence,
    check_tallies,
    check_workers,
    MAX_SEQUENCE_LENGTH,
    renamed_parameters,
    seed_entropy,
)
from dptutor.audit._pair_blocks import Counts, blocks, run_pair_blocks
from dptutor.audit._pair_bounds import (
    BACKUP_SHARE,
    BACKUP_Z,
    PAIR_BOUNDS,
    POISSON_MARGIN,
    PairAudit,
    bound_from_counts,
    selection_score,
)
from dptutor.audit._pair_cells import (
    PAIR_CALL_ELEMENTS,
    PAIR_CENTRAL_BINS,
    PAIR_MAX_CATEGORIES,
    PAIR_MAX_INT_CATEGORIES,
    PAIR_TAIL_BINS,
    Layout,
    callable_name,
    checked_outputs,
    draw_outputs,
    first_call,
    multi_block,
    multi_probe,
    probe_block,
)
from dptutor.audit._sanity_runs import BLOCK_TRIALS
from dptutor.audit.learned import LEARN_MAX_TRIALS, LEARN_TRIALS, LearnedStatistic, fit_candidates
from dptutor.audit.template import CalibratedTemplate, template_of

# =============================================================================================
# audit_pair: a general auditor for one pair of neighbouring datasets
# =============================================================================================
#
# How it works (see the docstring of :func:`audit_pair`):
#
# 1. One *probe* block (the first block of the selection half, always run in this process) fixes
#    the kind of output and the *cells* of a partition of the output space: histogram bins of a
#    real output (or of ``statistic(output)``), or the distinct values of a discrete output.
# 2. Every other block, of both halves, is independent (seeded by ``SeedSequence.spawn``) and only
#    counts how many outputs of ``x`` and of ``x_prime`` fall in each cell; integer counts add up
#    in any order, so the result does not depend on ``workers`` or ``executor`` (the blocks are seeded,
#    run and counted in ``dptutor.audit._pair_blocks``).
# 3. The selection half's counts order the cells (by value, or by estimated likelihood ratio) and
#    choose the cut: the event S is a prefix of that order (or its complement).
# 4. The estimation half's counts of S, with Clopper-Pearson bounds, give the lower bound.


#: Blocks submitted to an executor at any one time (bounds memory; an interrupt loses these).
PAIR_IN_FLIGHT: int = 64
#: The fractions of the runs that may choose the event (``selection``); outside it one of the two parts
#: is too small to be worth its runs, and the cut's score (which widens by their ratio) degenerates.
SELECTION_RANGE = (0.01, 0.99)
#: The named statistics: a classifier fitted on part of the selection half, or the noise template (no fit).
STATISTIC_NAMES = ("learned", "template")

__all__ = [
    "BACKUP_SHARE",
    "BACKUP_Z",
    "PAIR_BOUNDS",
    "POISSON_MARGIN",
    "SELECTION_RANGE",
    "PairAudit",
    "audit_pair",
    "PAIR_CALL_ELEMENTS",
    "PAIR_IN_FLIGHT",
    "PAIR_CENTRAL_BINS",
    "PAIR_TAIL_BINS",
    "PAIR_MAX_CATEGORIES",
    "PAIR_MAX_INT_CATEGORIES",
]

PairAudit.__module__ = __name__  # documented, pickled and shown under this module's name, as before


@renamed_parameters(seed="rng", confidence="confidence_level")
def audit_pair(
    mechanism: Any,
    x: Any,
    x_prime: Any,
    *,
    epsilon: float,
    trials: int,
    rng: int | Sequence[int] | np.random.SeedSequence | np.random.Generator | None = None,
    confidence_level: float = 0.95,
    statistic: Any = None,
    delta: float = 0.0,
    workers: int = 1,
    executor: concurrent.futures.Executor | None = None,
    selection: float = 0.5,
    bounds: str = "four",
    prior: Mapping[Any, tuple[int, int]] | None = None,
) -> PairAudit:
    """A sound lower bound on the (epsilon, delta) of ``mechanism`` from the pair ``x``, ``x_prime``.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, size, rng)`` returns ``size`` independent outputs for the dataset ``data``
        as an array whose first axis has length ``size``: real scalars, integers or booleans
        (categories), integer or boolean vectors (each row one category), or real vectors.
    x, x_prime : object
        The two neighbouring datasets, passed to ``mechanism`` unchecked: numbers, strings and tuples of them as
        they are, plain arrays as read-only copies, anything else (lists, dicts, object arrays) as a fresh deep
        copy for every call, so that a mechanism that changes its input changes neither the caller's dataset
        nor later calls.
    epsilon : float
        The claimed epsilon, positive: the verdict compares the bound with it.
    trials : int
        Runs per dataset, 2 to 10^12.
    rng : int, sequence of int, numpy.random.SeedSequence, numpy.random.Generator or None, optional
        The seed.  An int (or a recorded ``result.seed``) repeats a run exactly; ``None`` draws fresh
        entropy, recorded in ``result.seed``.  (Deprecated alias: ``seed``.)
    confidence_level : float, optional
        The probability, in (0, 1), with which the bound holds.  (Deprecated alias: ``confidence``.)
    statistic : callable, "learned", "template" or None, optional
        A function from an array of outputs to one real per output (the events threshold it), or one integer
        per output (audited as categories); the outputs it reads may be of any dtype (strings or objects too,
        which are refused without it).  Or ``"learned"``; ``None`` audits the outputs themselves (learning a statistic when they are real
        vectors or too many integer values); ``"template"`` as ``None``, but where real outputs need a
        statistic and the datasets are numeric, the noise template (:mod:`dptutor.audit.template`) with nothing
        fitted, which ranks pairs from few runs (how :func:`~dptutor.audit.pair_search.audit_mechanism`'s
        pilot uses it).
    delta : float, optional
        The delta of the bound, in [0, 1).
    workers : int, optional
        Worker processes (``mechanism``, ``statistic``, ``x`` and ``x_prime`` must then be picklable).
    executor : concurrent.futures.Executor or None, optional
        Any executor to run the blocks on instead of ``workers``.
    selection : float, optional
        The fraction of the runs that chooses the event, in :data:`SELECTION_RANGE`.
    bounds : {"four", "two", "joint"}, optional
        How the chosen event's probabilities are bounded (see Notes).
    prior : mapping or None, optional
        Counts from earlier runs of the same pair, made apart from this audit's, as ``{value: (count under x,
        count under x_prime)}`` (such as an earlier result's :attr:`~dptutor.audit.pair.PairAudit.tallies`).  Where
        the outputs are counted value by value, they join the selection half's counts to choose the event, so a
        smaller ``selection`` leaves more runs to measure it; they are ignored for real outputs.  They never
        touch the estimation half, so the bound is sound whatever they hold.

    Returns
    -------
    PairAudit
        The lower bound, the event, its counts and the recorded seed.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter; ``ValueError`` naming the mechanism if it returns the wrong number
        of outputs, NaN, non-numeric values, or outputs that change shape or type between calls.  A failure
        or NaN output also names the dataset (``x`` or ``x_prime``) it came from, first in the message when
        that dataset itself holds NaN or infinity (the datasets reach the mechanism unchecked: any object
        it accepts, NaN included, is a valid dataset).

    Notes
    -----

    ``mechanism(data, size, rng)`` returns ``size`` independent outputs for the dataset ``data``
    as an array whose first axis has length ``size``: real scalars, integers or booleans
    (categories), integer or boolean vectors (each row one category), or real vectors.  ``statistic``
    is a function from such an array of outputs to one real per output, or ``"learned"``.

    Learned statistic.  With no ``statistic`` and outputs that are real vectors or integer vectors with
    too many possible values to count one by one (or with ``statistic="learned"`` for any output), a
    sixteenth of the selection half (at least ``LEARN_TRIALS``, at most ``LEARN_MAX_TRIALS``, never more
    than half of it) runs of each dataset, taken out of the selection half, fit a classifier of "which dataset produced this output"
    (:func:`dptutor.audit.learned.fit_candidates`: logistic regression, the additive model at several numbers of
    knots and, for numeric inputs, the noise templates), whose log-odds are the candidate statistics.  The rest
    of the selection half counts the values of every candidate, and the one whose best cut projects the highest
    bound (its selection noise counted at ``BACKUP_Z`` standard errors) is the statistic (held-out log-loss on the
    fitting sample, which ``fit_statistic``'s ``"auto"`` uses, often cannot rank them at that size).  Neither step
    sees a run of the estimation half, so the bound below stays sound.

    Method.  Each dataset is run ``trials`` times.  The first ``int(selection * trials)`` runs (the
    selection half; ``trials // 2`` by default) choose an event S: a threshold ``value >= t`` or ``value < t`` on a real output (or on the
    statistic), or, for discrete outputs, the set of output values with the largest estimated
    likelihood ratio (the Neyman-Pearson form; values never seen in the selection half come last and
    never belong to S, only to its complement, so both are fixed by the selection half).  The cut is the one that maximises the projected
    lower bound.  The other runs (the estimation half), independent of the choice, count how often
    S occurs.  With exact Clopper-Pearson intervals (``scipy.stats.binomtest``) on ``p = P[M(x) in
    S]`` and ``p' = P[M(x') in S]``, each side at error ``(1 - confidence_level) / 4``, a union bound
    covers both directions (x over x', and x' over x) and S as well as its complement, so

        lower_bound = max(0, max over the four of ln((p_lower - delta) / p'_upper))

    is below the true epsilon with probability at least ``confidence_level``: (epsilon, delta)-DP
    says ``p <= e^epsilon p' + delta`` for every event.

    ``bounds="two"`` (the two-bound variant of the book's split-sample audit): the selection half also
    chooses the direction and whether to report S or its complement, so the estimation half needs only a
    one-sided lower bound on the numerator's probability and an upper bound on the denominator's
    (``scipy.stats.beta`` quantiles), each at error ``(1 - confidence_level) / 2``.  ``bounds="joint"`` (only with
    ``delta = 0``): the direction and side are chosen the same way, and one Clopper-Pearson bound at error
    ``1 - confidence_level`` on the numerator's share of the event's runs bounds the ratio itself, after a Poisson
    thinning of each dataset's estimation runs that makes that share exactly binomial (its own seeded draw;
    ``counts`` still reports the whole estimation half).  The thinning inflates the variance by ``1 / (1 - p)`` for an
    event of probability ``p``, so the selection half also scores each cut for the paired difference bound
    (``dptutor.audit.paired``, on the whole estimation half) and the event is bounded by whichever scored higher
    (recorded in ``paired``): the paired bound on frequent events, the share on rare ones.  It is tighter, and where the event's loss is
    exactly epsilon it errs upward more often, up to ``1 - confidence_level``.  The selection half also proposes a
    cautious cut, whose score counts its own noise at ``BACKUP_Z`` standard errors; when that cut differs, the two
    events are bounded at errors ``(1 - BACKUP_SHARE)`` and ``BACKUP_SHARE`` times ``1 - confidence_level``, the larger
    bound is reported and ``candidates`` holds both tables (a union bound, so the level holds).  With a smaller
    ``selection`` (e.g. 0.2) more runs measure the event; the bound is sound for any fraction in
    :data:`SELECTION_RANGE`.

    Reproducibility and scale.  Runs are made in blocks of ``BLOCK_TRIALS`` per dataset, block
    ``i`` of each half seeded by a child of the ``SeedSequence`` of ``rng`` (without a ``statistic``, the
    first at most 64 runs of ``x`` come from the probe that decides whether to learn one, on its own seed); each block only counts
    outputs per cell (histogram bins, or distinct values), so the counts are the same whatever
    ``workers`` or ``executor``, and memory does not grow with ``trials``.  ``workers > 1`` runs
    blocks in a process pool (``mechanism``, ``statistic``, ``x`` and ``x_prime`` must be
    picklable); ``executor`` takes any :class:`concurrent.futures.Executor` instead, for example
    ``dask.distributed.Client(...).get_executor()``.  A 10^10-trial audit on a cluster::

        from dask.distributed import Client          # pip install "dptutor[distributed]"
        client = Client("tcp://scheduler:8786")      # workers need dptutor and the mechanism's module
        result = audit_pair(mech, x, x_prime, epsilon=1.0, trials=10**10, rng=2022,
                            executor=client.get_executor())

    That is about 38,000 blocks per half (76,000 in all), at most :data:`PAIR_IN_FLIGHT` in flight at a time; an
    interrupt loses only those.

    Examples
    --------
    >>> import numpy as np
    >>> def mech(data, size, rng):
    ...     return data + rng.laplace(0.0, 1.0, size)
    >>> result = audit_pair(mech, 0.0, 1.0, epsilon=1.0, trials=20_000, rng=1)
    >>> bool(result.lower_bound <= 1.0)
    True
    """
    eps, trials, conf, dlt, frac, named = _check_audit_args(
        mechanism, epsilon, trials, confidence_level, statistic, delta, selection, bounds, executor)
    name = callable_name(mechanism)
    prior = None if prior is None else check_tallies(prior, "prior")
    x, x_prime = (_read_only(value) for value in (x, x_prime))
    if any(_needs_fresh_copies(value) for value in (x, x_prime)):
        mechanism = _FreshCopies(mechanism)
    seed_seq = check_seed_sequence(rng, "rng")
    n_sel = min(trials - 1, max(1, int(trials * frac)))
    n_est = trials - n_sel
    sel_seq, est_seq = seed_seq.spawn(2)
    n_fit = 0
    probed: Any = None
    if statistic is None or named:
        # A statistic learned on a fitting sample that is part of the selection half (its own seed, the
        # third child of the seed sequence, so the two halves' seeds are those of an audit without it).
        fit_seq = np.random.SeedSequence(seed_seq.entropy, spawn_key=seed_seq.spawn_key + (2,),
                                         pool_size=seed_seq.pool_size)
        statistic, n_fit, probed = _learned_statistic(mechanism, name, x, x_prime, n_sel, trials, fit_seq,
                                                      statistic == "learned", statistic == "template")
    if isinstance(statistic, tuple) and len(statistic) == 1:
        statistic = statistic[0]  # a constant: every output was the same
    n_sel_blocks = n_sel - n_fit
    n_tasks = -(-n_sel_blocks // BLOCK_TRIALS) - 1 + -(-n_est // BLOCK_TRIALS)
    workers = check_workers(workers, "workers", tasks=max(1, n_tasks))
    if isinstance(statistic, tuple):  # the learned candidates: the selection half chooses one, then the estimation
        statistic, layout, probe = _chosen_statistic(mechanism, name, x, x_prime, statistic, sel_seq, (n_sel_blocks, n_est),
                                                     workers, executor, (conf, dlt, bounds, frac))
        tasks: Any = blocks(1, est_seq, n_est, 0)
    else:
        tasks = itertools.chain(blocks(0, sel_seq, n_sel_blocks, 1), blocks(1, est_seq, n_est, 0))
        _, first_size, first_seed = next(blocks(0, sel_seq, n_sel_blocks, 0))
        # The outputs that showed no statistic is needed open the selection half, so the audit asks for
        # exactly ``trials`` runs of each dataset (a grader replaying recorded outputs has no more).
        layout, probe = probe_block(mechanism, name, x, x_prime, first_size, first_seed, statistic, probed)
    counter = Counts(layout, probe, name)
    run_pair_blocks(mechanism, name, x, x_prime, layout, tasks, workers, executor, counter.add, statistic,
                    in_flight=PAIR_IN_FLIGHT)
    tallies = counter.tallies()
    extra = counter.add_prior(prior)
    keys, sel, est = counter.ordered()
    return bound_from_counts(sel, est, n_sel_blocks, n_est, layout, keys, eps, dlt, conf, trials,
                             seed_entropy(seed_seq), name, n_fit, bounds, frac, extra, tallies)


def _check_audit_args(
    mechanism: Any, epsilon: object, trials: object, confidence_level: object, statistic: Any, delta: object,
    selection: object, bounds: object, executor: object,
) -> tuple[float, int, float, float, float, bool]:
    """:func:`audit_pair`'s checks: ``(epsilon, trials, confidence_level, delta, selection, named)``, the last
    whether ``statistic`` is one of :data:`STATISTIC_NAMES`."""
    check_callable(mechanism, "mechanism", "mechanism(data, size, rng)")
    eps = check_positive(epsilon, "epsilon")
    n = check_int(trials, "trials", minimum=2, maximum=10**12)
    conf = check_probability(confidence_level, "confidence_level")
    named = isinstance(statistic, str)
    if named:
        check_choice(statistic, "statistic", STATISTIC_NAMES)
    elif statistic is not None:
        check_callable(statistic, "statistic", "statistic(outputs) -> one real per output, 'learned' or 'template'")
    dlt = check_real(delta, "delta", low=0.0, high=1.0, high_open=True)
    frac = check_real(selection, "selection", low=SELECTION_RANGE[0], high=SELECTION_RANGE[1])
    check_choice(bounds, "bounds", PAIR_BOUNDS)
    if bounds == "joint" and dlt > 0:
        raise ValueError("bounds='joint' bounds a ratio of probabilities and needs delta = 0; use bounds='two' with delta > 0")
    if executor is not None and not isinstance(executor, concurrent.futures.Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
    return eps, n, conf, dlt, frac, named


#: Types whose values no mechanism can change: such datasets reach the mechanism as they are.
_IMMUTABLE_TYPES = frozenset({bool, int, float, complex, str, bytes, type(None), range, Fraction, Decimal})


def _immutable(value: Any) -> bool:
    """True for a value of ``_IMMUTABLE_TYPES``, a numpy scalar of a plain dtype, or a tuple or frozenset of such
    (at most ``MAX_SEQUENCE_LENGTH`` items in all, looked at without recursion)."""
    stack, seen = [value], 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > MAX_SEQUENCE_LENGTH:
            return False
        if type(item) in (tuple, frozenset):
            stack.extend(item)
        elif not (type(item) in _IMMUTABLE_TYPES or isinstance(item, np.generic) and not item.dtype.hasobject):
            return False
    return True


def _read_only(value: Any) -> Any:
    """A dataset as a private copy that no mechanism can change for later calls; an immutable value as it is.

    A plain array's copy lives in an immutable ``bytes`` object, so ``setflags(write=True)`` raises on it and on its
    base (a mechanism that writes into its input fails, named, instead of changing what later blocks see).  Any
    other dataset (a list, a dict, an array of Python objects, an ndarray subclass) is deep-copied here and again
    for every call (``_FreshCopies``), so a mechanism that changes its input, even an object nested inside it,
    changes neither the caller's dataset nor what later calls see.  A dataset that cannot be deep-copied is handed
    over as it is.
    """
    if isinstance(value, np.ndarray) and not _needs_fresh_copies(value):
        return np.frombuffer(value.tobytes(), dtype=value.dtype).reshape(value.shape)
    if not _needs_fresh_copies(value):
        return value
    try:
        snapshot = copy.deepcopy(value)
    except Exception:  # noqa: BLE001 (a lock, a generator, a raising __deepcopy__: nothing to protect it with)
        return value
    if isinstance(snapshot, np.ndarray):  # a read-only view of a read-only copy, as for any array
        snapshot.setflags(write=False)
        snapshot = snapshot.view()
        snapshot.setflags(write=False)
    return snapshot


def _needs_fresh_copies(value: Any) -> bool:
    """True for a dataset ``_read_only`` cannot make immutable: anything but a plain array of a plain dtype (objects,
    subclasses and zero-size items count as not plain) and the values ``_immutable`` accepts."""
    if isinstance(value, np.ndarray):
        return type(value) is not np.ndarray or value.dtype.hasobject or not value.dtype.itemsize
    return not _immutable(value)


class _FreshCopies:
    """A mechanism called on a fresh deep copy of each dataset ``_needs_fresh_copies`` names, so that a mechanism
    which changes its input (or an object inside it) cannot change what later calls (later blocks) see.

    It pickles when the mechanism does.
    """

    def __init__(self, mechanism: Any) -> None:
        self.mechanism = mechanism

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> Any:
        return self.mechanism(_read_only(data) if _needs_fresh_copies(data) else data, size, rng)


def _learned_statistic(
    mechanism: Any, name: str, x: Any, x_prime: Any, n_sel: int, trials: int, fit_seq: np.random.SeedSequence,
    force: bool, template: bool = False,
) -> tuple[Any, int, Any]:
    """``(statistics, runs per dataset spent, None)``: the candidate statistics
    (:func:`~dptutor.audit.learned.fit_candidates`, a tuple of :class:`~dptutor.audit.learned.LearnedStatistic`) fitted on
    ``min(n_sel // 2, max(LEARN_TRIALS, trials // 32), LEARN_MAX_TRIALS)`` runs of each dataset (a sixteenth of
    the selection half when it is half of the runs), or ``(None, 0)`` when the outputs need none
    (unless ``force``): a scalar, or an integer vector whose output space (distinct values per coordinate
    in at most 64 probe outputs, multiplied) has at most PAIR_MAX_CATEGORIES cells.  Then the third item
    holds the probe's outputs (of ``x``), which the caller counts as the first runs of the selection half.
    With ``template``, real outputs that need a statistic get the noise template of the inputs instead, when it
    applies (:func:`~dptutor.audit.template.template_of`): nothing is fitted, and the probe's outputs are kept."""
    rng = np.random.Generator(np.random.PCG64(fit_seq))
    m = min(64, n_sel)
    first = checked_outputs(first_call(mechanism, x, m, rng, "x", name), m, None, None, name, "x", x)
    row_shape, floating = first.shape[1:], first.dtype.kind == "f"
    width = int(math.prod(row_shape))
    if width == 0:
        raise ValueError(f"mechanism {name!r} returned empty outputs (shape {first.shape})")
    if not force:
        if width == 1:
            return None, 0, first
        if not floating:
            # An integer vector is audited as categories unless its output space, as far as the probe
            # shows (distinct values per coordinate, multiplied), has more cells than the discrete mode allows.
            rows = first.reshape(first.shape[0], -1)
            space = math.prod(np.unique(col).size for col in rows.T)
            if space <= PAIR_MAX_CATEGORIES:
                return None, 0, first
    fixed = template_of((x, x_prime), width) if template and floating else None  # a template reads real values
    if fixed is not None:
        return (LearnedStatistic(model=CalibratedTemplate(fixed, 1.0, 0.0), kind="template", width=width,
                                 infinite=np.zeros(width, dtype=bool)), 0, first)
    n_fit = min(n_sel // 2, max(LEARN_TRIALS, trials // 32), LEARN_MAX_TRIALS)
    if n_fit < 1:
        raise ValueError(f"trials must be at least 4 to learn a statistic, got {trials}")
    probe = Layout(mode="real", row_shape=row_shape, floating=floating)
    samples = []
    for label, data in (("x", x), ("x_prime", x_prime)):
        # Each call's outputs copied as it comes (astype copies): a later call may reuse the buffer of a view.
        outs = [o.reshape(o.shape[0], -1).astype(np.float64)
                for o in draw_outputs(mechanism, data, n_fit, rng, probe, name, label)]
        samples.append(outs[0] if len(outs) == 1 else np.concatenate(outs))
    return (fit_candidates(samples[0], samples[1], rng=int(fit_seq.generate_state(1)[0]), inputs=(x, x_prime)),
            n_fit, None)


def _chosen_statistic(
    mechanism: Any, name: str, x: Any, x_prime: Any, candidates: tuple[Any, ...], sel_seq: np.random.SeedSequence,
    sizes: tuple[int, int], workers: int, executor: concurrent.futures.Executor | None, settings: tuple,
) -> tuple[Any, Layout, NDArray[np.int64]]:
    """``(statistic, layout, selection counts)``: the candidate whose best cut scores highest on the selection half
    (``sizes[0]`` runs of each dataset, every candidate counted on the same runs, each cut scored as the cautious
    cut of ``bounds="joint"`` is, at :data:`BACKUP_Z`; the first on a tie), with its
    cells and counts.  The choice, like the cut, is a function of the selection half only."""
    n_sel, n_est = sizes
    confidence, delta, bounds, selection = settings
    _, first_size, first_seed = next(blocks(0, sel_seq, n_sel, 0))
    layouts, total = multi_probe(mechanism, name, x, x_prime, first_size, first_seed, candidates)

    def add(half: int, block: Any) -> None:
        total[...] += block

    run_pair_blocks(mechanism, name, x, x_prime, layouts, blocks(0, sel_seq, n_sel, 1), workers, executor, add,
                    candidates, block=multi_block, in_flight=PAIR_IN_FLIGHT)
    parts = layouts.split(total)
    # Each score counts the selection half's noise at BACKUP_Z standard errors, the cautious cut's rule: with many
    # candidates' thousands of cuts, the plain score let an overfitted model's thin tail win (benchmarks/README.md).
    scores = [selection_score(part, n_sel, n_est, confidence, delta, bounds, selection, z_sel=BACKUP_Z) for part in parts]
    k = int(np.argmax(scores))
    return candidates[k], layouts.layouts[k], np.array(parts[k])
