"""The black-box auditor on DP-Sniper's 20 mechanisms, next to DP-Sniper's published bounds, in one run.

    .venv/bin/python benchmarks/bench_blackbox.py                 # 10^5 runs per dataset, handed-in pairs (~1 min)
    .venv/bin/python benchmarks/bench_blackbox.py --full          # 10^7 runs per dataset (about an hour on 2 cores)
    .venv/bin/python benchmarks/bench_blackbox.py --search        # also search the pair (StatDP's candidates)
    .venv/bin/python benchmarks/bench_blackbox.py --trials 220000000 --only SVT1   # DP-Sniper's own budget
    .venv/bin/python benchmarks/bench_blackbox.py --soundness 20  # 20 seeds on every entry with an exact epsilon
    .venv/bin/python benchmarks/bench_blackbox.py --soundness 20 --only Rappor   # ... on the entries named
    .venv/bin/python benchmarks/bench_blackbox.py --soundness 20 --search --rounds 3  # ... on the pairs found
    .venv/bin/python benchmarks/bench_blackbox.py --classic       # audit_pair's default split and bounds
    .venv/bin/python benchmarks/bench_blackbox.py --full --ceiling  # the best bound any event could give
    .venv/bin/python benchmarks/bench_blackbox.py --full --ceiling --search  # ... and the limit over the pairs searched
    .venv/bin/python benchmarks/bench_blackbox.py --full --seeds 1 2 3 4 5   # reach rates over five base seeds
    .venv/bin/python benchmarks/bench_blackbox.py --inputs --seeds 1 --only SVT1 --out runs.jsonl   # no pair handed in
    .venv/bin/python benchmarks/bench_blackbox.py --report runs.jsonl   # summarise what the parts appended
    .venv/bin/python benchmarks/bench_blackbox.py --ceiling --inputs   # the best an --inputs search could reach

Every audit uses no hand-written statistic: ``audit_pair`` counts discrete outputs one by one, thresholds real
scalars, and learns a statistic (a classifier fitted on its selection half) for vectors.  For each mechanism
it prints the 95% lower bound, the exact epsilon on the pair where known (:mod:`dptutor.dpsniper`), DP-Sniper's
published 90% bound, and the CPU seconds of the audit (process time: the learned models' threads count).
With ``--search`` the pair is not handed in: :func:`dptutor.audit.search_pairs` ranks StatDP's candidate
pairs on a pilot of about half the budget and confirms the best on ``trials`` fresh runs.

Independent audits: entry ``i`` of :func:`dptutor.dpsniper.benchmark` (its place in the full list, whatever
``--only`` selects) is audited with the seed ``SeedSequence([seed, i])`` (:func:`entry_seed`), which also seeds
its learned statistic, its pilot and confirmation runs, and the joint bound's Poisson thinning draws.  So the
20 audits of one run are independent, as the Poisson-binomial combination of ``--ceiling`` assumes, and
``--seeds`` repeats the whole benchmark over several base seeds to report reach *rates*, never one seed's count.

With ``--inputs`` no pair is handed in either: :func:`dptutor.audit.audit_mechanism` searches the inputs (a
vector of the entry's length, or the values 0-5 of the entries whose input is a bounded count or a category) on
``--share`` (``PAIR_SEARCH_SHARE`` by default) of ``--runs`` total runs (pilot and confirmation, both inputs,
counted together; 2*10^7 by default, the equivalent of 10^7 per dataset) and confirms the best pair on fresh
runs, with the joint bound (``INPUTS_BOUNDS``) unless ``--bounds`` says otherwise.  Each
(entry, seed) audit appends one JSON line to ``--out``, so a run may be split into parts (per seed with
``--seeds``, per mechanism with ``--only``) that accumulate in one file; ``--report`` summarises the file:
each entry's reach rate at 95% and at 90% (DP-Sniper's own level, recomputed from the same counts),
beside the Neyman-Pearson reach limit on the pair found, the mean number of the 20 reached, the fraction of
seeds with at least 16, the soundness count with its binomial test, and the CPU time.

If DP-Sniper is installed (``import dpsniper``; never required), nothing here calls it: its own command
(``python -m dpsniper.experiments``) runs the same mechanisms at its budget, for a side-by-side timing.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dptutor.audit import (  # noqa: E402
    PAIR_BOUNDS,
    PAIR_SEARCH_SHARE,
    audit_mechanism,
    candidate_pairs,
    reach_count_probability,
    reach_probability,
    search_pairs,
    value_pairs,
    vector_pairs,
)
from dptutor.dpsniper import benchmark, exact_output_laws  # noqa: E402
from dptutor.selection import max_log_ratio  # noqa: E402

#: How every audit here is run: 30% of the runs choose the event (the learned statistic's fitting sample
#: included), 70% measure it, and the selection part also fixes the event's direction and side, so
#: the estimation part needs two one-sided bounds at error gamma/2 instead of four at gamma/4 (the chapter's
#: two-bound variant).  ``--classic`` uses audit_pair's defaults (halves, four bounds) instead.
SETTINGS: dict = {"selection": 0.3, "bounds": "two"}

#: ``--inputs`` bounds the event jointly instead (one Clopper-Pearson bound at the whole error on the
#: numerator's share of the event's runs): it is the bound whose margin is that of the Neyman-Pearson test
#: behind the reach limit (one test at gamma, not two at gamma/2), measured before the pre-registered
#: re-run on seeds 201-204 (benchmarks/README.md).  ``--bounds`` overrides it.
INPUTS_BOUNDS: str = "joint"

#: Mechanisms whose neighbourhood changes one entry by at most 1 (the others: every answer by at most 1).
_ONE_ENTRY = {"NoisyHist1", "NoisyHist2"}


def entry_seed(seed: int, index: int) -> tuple[int, int]:
    """The seed of entry ``index`` in a run with base seed ``seed``: ``SeedSequence([seed, index])`` as
    ``audit_pair`` and ``search_pairs`` take it, so that every entry's runs, thinning draws included, are
    independent of every other entry's."""
    return (int(seed), int(index))


def _candidates(entry) -> list:
    """StatDP's candidate pairs shaped like the entry's inputs (scalars stay scalars)."""
    k = 1 if isinstance(entry.x, float) else len(entry.x)
    pairs = candidate_pairs(k, componentwise=entry.name not in _ONE_ENTRY and k > 1)
    if k == 1:
        pairs = [(a[0], b[0]) for a, b in pairs]
    return pairs


def _same_pair(pair: tuple, entry) -> bool:
    as_tuple = [tuple(v) if isinstance(v, (tuple, list)) else (float(v),) for v in pair]
    ref = [tuple(v) if isinstance(v, (tuple, list)) else (float(v),) for v in (entry.x, entry.x_prime)]
    return as_tuple == ref or as_tuple == ref[::-1]


def _exact_epsilon(entry, pair: tuple) -> float | None:
    """The exact epsilon of the entry on the pair audited: the entry's own (DP-Sniper's pair, in either order),
    else from the pair's output laws where they are computed (:func:`dptutor.dpsniper.exact_output_laws`)."""
    if _same_pair(pair, entry):
        return entry.true_epsilon
    laws = exact_output_laws(entry.name, *pair)
    return None if laws is None else max_log_ratio(*laws)


def _audit(entry, trials: int, seed: int, settings: dict, search: bool, rounds: int) -> tuple:
    """``(result, pair)``: the entry audited on its own pair, or (``search``) on the pair that
    :func:`dptutor.audit.search_pairs` finds among StatDP's candidates."""
    if search:
        found = search_pairs(entry.release(), _candidates(entry), epsilon=entry.epsilon, trials=trials,
                             rng=seed, rounds=rounds, **settings)
        return found.best, found.pair
    return entry.audit(trials, rng=seed, **settings), (entry.x, entry.x_prime)


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    return "inf" if x == math.inf else f"{x:.4f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=10**5, help="runs per dataset (default 10^5)")
    parser.add_argument("--full", action="store_true", help="10^7 runs per dataset")
    parser.add_argument("--search", action="store_true", help="search the pair instead of using DP-Sniper's")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --search: rounds of successive halving in the pilot (default 1, a plain pilot)")
    parser.add_argument("--only", nargs="*", default=None, help="mechanism names (default: all 20)")
    parser.add_argument("--seed", type=int, default=2021,
                        help="base seed: entry i is audited with SeedSequence([seed, i]) (default 2021)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, metavar="SEED",
                        help="run the benchmark once per base seed and report each entry's reach rate over them")
    parser.add_argument("--classic", action="store_true",
                        help="audit_pair's default settings (halves, four bounds) instead of SETTINGS")
    parser.add_argument("--bounds", choices=PAIR_BOUNDS, default=None,
                        help=f"audit_pair's bounds= (default: {SETTINGS['bounds']!r}, as SETTINGS)")
    parser.add_argument("--soundness", type=int, default=0, metavar="SEEDS",
                        help="instead: audit every entry with a known exact epsilon with SEEDS seeds, count bounds above it "
                             "(with --search: above that of the pair found)")
    parser.add_argument("--ceiling", action="store_true",
                        help="instead: the largest bound any event could give, from the exact output distributions "
                             "(with --inputs: the best reach limit over the search's starting pool, at --runs and --share)")
    parser.add_argument("--inputs", action="store_true",
                        help="instead: no pair handed in, search the inputs (audit_mechanism); needs --out")
    parser.add_argument("--runs", type=int, default=2 * 10**7,
                        help="with --inputs: total runs per mechanism, pilot and confirmation (default 2*10^7)")
    parser.add_argument("--share", type=float, default=PAIR_SEARCH_SHARE,
                        help=f"with --inputs: the pilot's share of --runs (default {PAIR_SEARCH_SHARE})")
    parser.add_argument("--out", type=Path, default=None, help="with --inputs: the JSON-lines file to append to")
    parser.add_argument("--report", type=Path, default=None, help="instead: summarise a file written by --inputs")
    args = parser.parse_args(argv)
    if args.report is not None:
        return report(args.report, args.seeds, args.only)
    trials = 10**7 if args.full else args.trials
    entries = benchmark()
    settings = {} if args.classic else dict(SETTINGS)
    if args.bounds is not None:
        settings["bounds"] = args.bounds
    names = args.only or list(entries)
    unknown = [n for n in names if n not in entries]
    if unknown:
        parser.error(f"unknown mechanism(s) {unknown}; known: {list(entries)}")
    if args.ceiling and args.inputs:
        return search_ceiling({n: entries[n] for n in names}, args.runs, args.share, settings.get("selection", 0.5))
    if args.ceiling:
        return ceiling({n: entries[n] for n in names}, trials, settings, args.search)
    index = {n: i for i, n in enumerate(entries)}
    if args.inputs:
        if args.out is None:
            parser.error("--inputs needs --out FILE (its results are appended there)")
        if args.bounds is None and not args.classic:
            settings["bounds"] = INPUTS_BOUNDS
        return inputs_run({n: entries[n] for n in names}, args.runs, args.seeds or [args.seed], settings, index,
                          args.out, args.share)
    if args.soundness:
        return soundness({n: entries[n] for n in names}, trials, args.soundness, settings, args.search, args.rounds,
                         index)
    if args.seeds:
        return rates({n: entries[n] for n in names}, trials, args.seeds, settings, args.search, args.rounds, index)

    print(f"bench_blackbox: {trials:,} runs per dataset, pair "
          f"{f'searched ({args.rounds} pilot round(s))' if args.search else 'handed in'}, "
          f"seed {args.seed}, settings {settings or 'audit_pair defaults'}, 95% bounds against DP-Sniper's "
          "published 90% bounds")
    print(f"{'mechanism':20s} {'bound':>8s} {'exact':>8s} {'DP-Sniper':>9s} {'>= pub':>6s} {'CPU s':>7s}  pair / event")
    ahead = sound = known = 0
    total_cpu = 0.0
    for name in names:
        entry = entries[name]
        start = time.process_time()
        result, pair = _audit(entry, trials, entry_seed(args.seed, index[name]), settings, args.search, args.rounds)
        cpu = time.process_time() - start
        total_cpu += cpu
        bound = result.lower_bound
        ahead += bound >= entry.dpsniper
        exact = _exact_epsilon(entry, pair)
        if exact is not None:
            known += 1
            sound += bound <= exact
        print(f"{name:20s} {bound:8.4f} {_fmt(exact):>8s} {entry.dpsniper:9.4f} "
              f"{'yes' if bound >= entry.dpsniper else 'no':>6s} {cpu:7.1f}  {pair} {result.event[:50]}", flush=True)
    print(f"at least DP-Sniper's published bound on {ahead} of {len(names)}; at most the exact epsilon on "
          f"{sound} of {known} with a known exact epsilon on the pair audited; {total_cpu:.0f} CPU s in all")
    return 0


def rates(entries: dict, trials: int, seeds: list[int], settings: dict, search: bool, rounds: int,
          index: dict) -> int:
    """Run the benchmark once per base seed; print each entry's reach rate and the distribution of the count."""
    print(f"bench_blackbox --seeds: {len(entries)} entries x {len(seeds)} base seeds at {trials:,} runs per dataset, "
          f"pair {f'searched ({rounds} pilot round(s))' if search else 'handed in'}, "
          f"settings {settings or 'audit_pair defaults'}; entry i seeded by SeedSequence([seed, i])")
    counts = dict.fromkeys(seeds, 0)
    start = time.process_time()
    for name, entry in entries.items():
        reached = 0
        for seed in seeds:
            result, _ = _audit(entry, trials, entry_seed(seed, index[name]), settings, search, rounds)
            hit = result.lower_bound >= entry.dpsniper
            reached += hit
            counts[seed] += hit
        print(f"{name:20s} reaches DP-Sniper's bound in {reached} of {len(seeds)} seeds", flush=True)
    per_seed = [counts[s] for s in seeds]
    print(f"number reached per seed: {per_seed}; mean {np.mean(per_seed):.2f} of {len(entries)}; "
          f"seeds with at least {min(16, len(entries))}: {sum(c >= min(16, len(entries)) for c in per_seed)} "
          f"of {len(seeds)} ({time.process_time() - start:.0f} CPU s)")
    return 0


def soundness(entries: dict, trials: int, seeds: int, settings: dict, search: bool = False, rounds: int = 1,
              index: dict | None = None) -> int:
    """Audit every entry with a known exact epsilon with ``seeds`` seeds; print how many bounds exceed it.

    With ``search``, each seed also searches the pair (:func:`dptutor.audit.search_pairs`, ``rounds``) and the
    bound is compared with the exact epsilon of the pair it found, where that is known (DP-Sniper's own pair,
    or any pair of an entry whose output laws are computed); audits of pairs with no known value are counted
    apart, never as sound."""
    # Every entry whose output laws are computed has a known exact epsilon on its own pair, so the entries
    # without one could never be compared, searched or not.
    known = [e for e in entries.values() if e.true_epsilon is not None]
    index = index or {e.name: i for i, e in enumerate(entries.values())}
    print(f"bench_blackbox --soundness: {len(known)} entries x {seeds} seeds at {trials:,} runs per dataset, "
          f"pair {f'searched ({rounds} pilot round(s))' if search else 'handed in'}, "
          f"settings {settings or 'audit_pair defaults'}")
    above = checked = unknown = 0
    start = time.process_time()
    for entry in known:
        bad = compared = 0
        largest = -math.inf
        for s in range(seeds):
            result, pair = _audit(entry, trials, entry_seed(s, index[entry.name]), settings, search, rounds)
            bound, exact = result.lower_bound, _exact_epsilon(entry, pair)
            if exact is None:
                unknown += 1
                continue
            compared += 1
            if math.isfinite(exact):  # an infinite exact epsilon has no gap to report
                largest = max(largest, bound - exact)
            bad += bound > exact
        above += bad
        checked += compared
        gap = "-" if largest == -math.inf else f"{largest:+.4f}"
        print(f"{entry.name:20s} compared {compared:3d}  largest bound - exact {gap:>8s}  above exact: {bad}",
              flush=True)
    print(f"{above} of {checked} bounds above the exact epsilon of their pair"
          f"{f'; {unknown} audits of pairs with no known exact epsilon' if unknown else ''} "
          f"({time.process_time() - start:.0f} CPU s)")
    return 0


def best_possible_bound(p: np.ndarray, q: np.ndarray, n: int, gamma_each: float | tuple[float, ...],
                        grid: int = 20) -> float:
    """The largest ``ln(p_lo(E) / q_hi(E))`` over events E, with one-sided Clopper-Pearson bounds at error
    ``gamma_each`` from ``n`` runs at the *expected* counts ``n P[E]``: a ceiling for any split-sample audit
    with these bounds, even one told the exact distributions.  E runs over the likelihood-ratio prefixes in
    both directions, with the next output value included with probability j / grid (a randomised test).
    A tuple ``gamma_each`` lists errors of the lower bound to try, the upper bound getting the rest of
    0.05 each time (the oracle of ``ceiling``, which splits a 95% statement's error between its two bounds
    as it likes)."""
    from scipy import stats

    splits = [(g, 0.05 - g) for g in gamma_each] if isinstance(gamma_each, tuple) else [(gamma_each, gamma_each)]
    best = 0.0
    for pa, pb in _ratio_events(p, q, grid):
        ka, kb = round(pa * n), round(pb * n)
        if ka == 0 or kb >= n:
            continue
        for g_lo, g_hi in splits:
            lo = stats.beta.ppf(g_lo, ka, n - ka + 1)
            hi = stats.beta.isf(g_hi, kb + 1, n - kb)
            best = max(best, math.log(lo / hi))
    return best


def _ratio_events(p: np.ndarray, q: np.ndarray, grid: int):
    """The probabilities (under the numerator, under the denominator) of the likelihood-ratio prefixes in both
    directions, the next output value included with probability j / grid."""
    for a, b in ((p, q), (q, p)):
        order = np.argsort(-(np.log(a) - np.log(b)), kind="stable")
        ca, cb = np.concatenate([[0.0], np.cumsum(a[order])]), np.concatenate([[0.0], np.cumsum(b[order])])
        for i in range(len(order)):
            for f in np.arange(1, grid + 1) / grid:
                yield ca[i] + f * a[order[i]], cb[i] + f * b[order[i]]


def joint_oracle_bound(p: np.ndarray, q: np.ndarray, n: int, gamma: float = 0.05, grid: int = 10) -> float:
    """The largest joint-variant bound (``bounds="joint"``) over the likelihood-ratio events, at the expected
    Poisson counts of ``n`` kept runs: the bound an auditor told the best event before any run would get."""
    from scipy import stats

    best = 0.0
    for pa, pb in _ratio_events(p, q, grid):
        ka, kb = round(pa * n), round(pb * n)
        if ka == 0 or kb == 0:
            continue
        eta = stats.beta.ppf(gamma, ka, kb + 1)
        best = max(best, math.log(eta / (1 - eta)))
    return best


#: The event ceilings below try every likelihood-ratio prefix: only for laws with at most this many outcomes.
_EVENT_CEILING_OUTCOMES = 1000


def _candidate_reach(entry, trials: int) -> float:
    """The largest :func:`reach_probability` over StatDP's candidates other than the entry's own pair that have
    computed laws (0 if none).

    A searched audit confirms its one chosen pair on fresh runs at the full 5% error, and the choice depends only
    on the pilot's runs, so it reaches DP-Sniper's bound at most as often as on its best candidate."""
    reach = 0.0
    for pair in _candidates(entry):
        laws = None if _same_pair(pair, entry) else exact_output_laws(entry.name, *pair)
        if laws is not None:
            reach = max(reach, reach_probability(*laws, trials, entry.dpsniper))
    return reach


def ceiling(entries: dict, trials: int, settings: dict, search: bool = False) -> int:
    """For the entries whose exact output distributions are computed here, the best bound any event could give,
    and the Neyman-Pearson limit on how often any valid 95% audit reaches DP-Sniper's published bound (with
    ``search``: the largest such limit over the pairs a search may confirm)."""
    selection = settings.get("selection", 0.5)
    n_est = trials - int(trials * selection)
    gamma_each = 0.05 / {"two": 2, "joint": 1}.get(settings.get("bounds"), 4)
    print(f"bench_blackbox --ceiling: {trials:,} runs per dataset, {n_est:,} to estimate, "
          f"{'the joint bound' if settings.get('bounds') == 'joint' else 'one-sided bounds'} at "
          f"error {gamma_each:g}; the best event known exactly, expected counts.  'oracle': all runs measure the "
          "best event, two bounds splitting 5% in the best of 17 ways; 'joint': all runs, the joint bound; "
          "'reach': the most often any valid 95% audit can reach DP-Sniper's bound (Neyman-Pearson)"
          f"{', on the best of the pairs a search may confirm' if search else ' on its pair'}")
    reaches = []
    for entry in entries.values():
        laws = exact_output_laws(entry.name)
        if laws is None:
            continue
        reach = reach_probability(*laws, trials, entry.dpsniper)
        if search:
            reach = max(reach, _candidate_reach(entry, trials))
        reaches.append(reach)
        if laws[0].size > _EVENT_CEILING_OUTCOMES:  # binned real outputs: the limit only
            print(f"{entry.name:20s} ceiling      -  oracle      -  joint      -  exact {entry.true_epsilon:.4f}  "
                  f"DP-Sniper {entry.dpsniper:.4f}  reach {reach:.3f}  (binned laws: no event ceilings)", flush=True)
            continue
        if settings.get("bounds") == "joint":
            top = joint_oracle_bound(*laws, n_est)
        else:
            top = best_possible_bound(*laws, n_est, gamma_each)
        # The oracle: the best event known before any run, so all runs measure it, and the 5% error split
        # between the two bounds in the best of 17 ways: a ceiling for every audit made of two
        # Clopper-Pearson bounds on one event's counts.
        oracle = best_possible_bound(*laws, trials, tuple(np.linspace(0.005, 0.045, 17)), grid=10)
        joint = joint_oracle_bound(*laws, trials)
        print(f"{entry.name:20s} ceiling {top:.4f}  oracle {oracle:.4f}  joint {joint:.4f}  exact {entry.true_epsilon:.4f}  "
              f"DP-Sniper {entry.dpsniper:.4f}  reach {reach:.3f}  {'reachable' if top >= entry.dpsniper else 'out of reach'}"
              f"{'' if oracle >= entry.dpsniper else ' (even by the oracle)'}", flush=True)
    free = len(entries) - len(reaches)
    for k in sorted({min(16, len(entries)), len(entries)}):
        top = reach_count_probability(reaches, k, unlimited=free)
        print(f"any valid 95% audit reaches DP-Sniper's bound on at least {k} of these {len(entries)} with probability "
              f"at most {top:.3f} (the {free} without computed laws counted as reached)")
    print(f"the expected number it reaches is at most {sum(reaches) + free:.2f} of {len(entries)}")
    return 0


def _search_pool(entry) -> list:
    """The starting pool :func:`dptutor.audit.audit_mechanism` builds for the entry from :func:`input_space`."""
    space = input_space(entry)
    if "values" in space:
        return value_pairs(space["values"], adjacent=space["adjacent"])
    return vector_pairs(space["length"], neighbours=space["neighbours"])


def search_ceiling(entries: dict, runs: int, share: float, selection: float) -> int:
    """What an ``--inputs`` search could reach at best: for the entries with computed laws, the largest
    Neyman-Pearson reach limit over the search's starting pool, as if the pilot always confirmed the pool's best
    pair and the confirmation always measured the best event, at three sizes (runs per input): the whole budget,
    what the pilot leaves, and what the selection split leaves of that.  The entries without computed laws count
    as reached; the chances of 16 of 20 per seed and of 8 of 10 seeds follow."""
    from scipy import stats

    sizes = {"all runs": runs // 2, "after the pilot": int(runs * (1 - share)) // 2,
             "after pilot and split": int(int(runs * (1 - share)) // 2 * (1 - selection))}
    print(f"bench_blackbox --ceiling --inputs: {runs:,} total runs, pilot {share:.0%}, selection {selection:.0%}; "
          "largest reach limit over the search's starting pool, at " + ", ".join(f"{n:,} ({k})" for k, n in sizes.items())
          + " runs per input")
    limits: dict[str, list[float]] = {k: [] for k in sizes}
    for entry in entries.values():
        if exact_output_laws(entry.name) is None:
            continue
        best = dict.fromkeys(sizes, 0.0)
        top_eps = 0.0
        for pair in _search_pool(entry):
            laws = exact_output_laws(entry.name, *pair)
            if laws is None:
                continue
            top_eps = max(top_eps, max_log_ratio(*laws))
            for k, n in sizes.items():
                best[k] = max(best[k], reach_probability(*laws, n, entry.dpsniper))
        for k in sizes:
            limits[k].append(best[k])
        print(f"{entry.name:20s} best exact eps in pool {top_eps:.4f}  DP-Sniper {entry.dpsniper:.4f}  limit "
              + "  ".join(f"{best[k]:.3f}" for k in sizes), flush=True)
    free = len(entries) - len(limits["all runs"])
    k16 = min(16, len(entries))
    for k, chances in limits.items():
        top = reach_count_probability(chances, k16, unlimited=free)
        print(f"{k:22s}: expected number reached at most {sum(chances) + free:.2f}; at least {k16} of {len(entries)} "
              f"with probability at most {top:.3f}; in at least 8 of 10 seeds at most {stats.binom.sf(7, 10, top):.3f} "
              f"({free} without computed laws counted as reached)")
    return 0


#: The inputs the search is told about: RAPPOR's entries take a category (the values 0-5, any two neighbours),
#: the truncated geometric a count in [0, 5] (neighbours differ by 1), the histograms change one bin by at
#: most 1, every other entry a vector (or a scalar) of its own length whose answers may all change by 1.
_VALUE_INPUTS = {"TruncatedGeometric": True, "Rappor": False, "OneTimeRappor": False}


def input_space(entry) -> dict:
    """What :func:`dptutor.audit.audit_mechanism` is told about the entry's inputs (never its pair)."""
    if entry.name in _VALUE_INPUTS:
        return {"values": list(range(6)), "adjacent": _VALUE_INPUTS[entry.name]}
    length = 1 if isinstance(entry.x, float) else len(entry.x)
    return {"length": length, "neighbours": "one" if entry.name in _ONE_ENTRY else "componentwise"}


def _pair_facts(entry, pair: tuple, trials: int) -> tuple:
    """``(exact epsilon, 95% reach limit, 90% reach limit)`` on the pair found, where its laws are computed."""
    laws = exact_output_laws(entry.name, *pair)
    if laws is None:
        return None, None, None
    exact = max_log_ratio(*laws)
    limits = [reach_probability(*laws, trials, entry.dpsniper, confidence_level=c) for c in (0.95, 0.90)]
    return (exact if math.isfinite(exact) else "inf"), *limits


def inputs_run(entries: dict, runs: int, seeds: list[int], settings: dict, index: dict, out: Path,
               share: float = PAIR_SEARCH_SHARE) -> int:
    """Audit every entry with every base seed, no pair handed in; append one JSON line per audit to ``out``."""
    import json

    print(f"bench_blackbox --inputs: {len(entries)} entries x seeds {seeds}, {runs:,} runs per mechanism in all "
          f"({share:.0%} pilot), settings {settings}; appending to {out}")
    for seed in seeds:
        for name, entry in entries.items():
            start = time.process_time()
            found = audit_mechanism(entry.release(), epsilon=entry.epsilon, runs=runs, rng=entry_seed(seed, index[name]),
                                    share=share, **input_space(entry), **settings)
            cpu = time.process_time() - start
            best = found.best
            exact, limit, limit90 = _pair_facts(entry, found.pair, best.trials)
            row = {"name": name, "index": index[name], "seed": seed, "runs": found.runs, "pilot_runs": found.pilot_runs,
                   "bounds": settings.get("bounds", "four"), "share": share,
                   "trials": best.trials, "selection_trials": best.selection_trials, "bound": best.lower_bound,
                   "bound90": best.bound_at(0.90),
                   "published": entry.dpsniper, "pair": [list(np.atleast_1d(v).tolist()) for v in found.pair],
                   "exact": exact, "limit": limit, "limit90": limit90, "piloted": len(found.piloted), "cpu": cpu}
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"seed {seed:3d} {name:20s} bound {row['bound']:.4f} (90%: {row['bound90']:.4f}) published "
                  f"{entry.dpsniper:.4f} exact {_fmt(exact if exact != 'inf' else math.inf)} limit "
                  f"{'?' if limit is None else f'{limit:.3f}'}  {cpu:6.1f} CPU s  pair {found.pair}", flush=True)
    return 0


def report(path: Path, seeds: list[int] | None, only: list[str] | None) -> int:
    """Summarise a file written by ``--inputs``: per entry, then per seed, then soundness (the last line of each
    (entry, seed) counts)."""
    import json

    from scipy import stats

    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if (seeds is None or row["seed"] in seeds) and (only is None or row["name"] in only):
                rows[row["name"], row["seed"]] = row
    names = sorted({n for n, _ in rows}, key=lambda n: next(r["index"] for (m, _), r in rows.items() if m == n))
    seen = sorted({s for _, s in rows})
    print(f"{'mechanism':20s} {'seeds':>5s} {'reach 95%':>9s} {'limit 95%':>9s} {'reach 90%':>9s} {'limit 90%':>9s} "
          f"{'above exact':>11s} {'CPU s':>7s}")
    for name in names:
        mine = [r for (n, _), r in rows.items() if n == name]
        limits = [r["limit"] for r in mine if r["limit"] is not None]
        limits90 = [r["limit90"] for r in mine if r["limit90"] is not None]
        known = [r for r in mine if r["exact"] is not None and r["exact"] != "inf"]
        print(f"{name:20s} {len(mine):5d} {np.mean([r['bound'] >= r['published'] for r in mine]):9.2f} "
              f"{np.mean(limits) if limits else math.nan:9.3f} {np.mean([r['bound90'] >= r['published'] for r in mine]):9.2f} "
              f"{np.mean(limits90) if limits90 else math.nan:9.3f} "
              f"{sum(r['bound'] > r['exact'] for r in known):5d} of {len(known):3d} {np.mean([r['cpu'] for r in mine]):7.1f}")
    complete = [s for s in seen if all((n, s) in rows for n in names)]
    for level, key in (("95%", "bound"), ("90% (DP-Sniper's level)", "bound90")):
        counts = [sum(rows[n, s][key] >= rows[n, s]["published"] for n in names) for s in complete]
        if counts:
            print(f"at {level}: number reached per seed {counts}; mean {np.mean(counts):.2f} of {len(names)}; "
                  f"seeds with at least {min(16, len(names))}: {sum(c >= min(16, len(names)) for c in counts)} "
                  f"of {len(counts)} (fraction {np.mean([c >= min(16, len(names)) for c in counts]):.2f})")
    known = [r for r in rows.values() if r["exact"] is not None and r["exact"] != "inf"]
    above = sum(r["bound"] > r["exact"] for r in known)
    if known:
        p = stats.binomtest(above, len(known), 0.05, alternative="greater").pvalue
        print(f"soundness: {above} of {len(known)} 95% bounds above the exact epsilon of their pair "
              f"(one-sided binomial test against 5%: p = {p:.3g}); {len(rows) - len(known)} without a finite one")
    print(f"CPU time: {sum(r['cpu'] for r in rows.values()):.0f} s over {len(rows)} audits, seeds {seen}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
