"""Audits: estimate and bound the privacy loss of a mechanism from its outputs.

One module per idea:

- :mod:`dptutor.audit.sanity`: the paper's empirical sanity check (Habernal, ACL 2022, Section 4),
  :func:`estimate_loss` with exact closed forms (:func:`exact_loss`) and Clopper-Pearson bounds;
- :mod:`dptutor.audit.pair`: :func:`audit_pair`, a sound lower bound on epsilon from one pair of
  neighbouring datasets, for any mechanism;
- :mod:`dptutor.audit.learned`: a statistic learned from samples (a classifier of "which dataset
  produced this output"), which :func:`audit_pair` fits on its selection half when none is given;
- :mod:`dptutor.audit.search`: :func:`search_pairs`, which ranks candidate pairs on a pilot budget
  and confirms the best on fresh runs;
- :mod:`dptutor.audit.pair_search`: :func:`audit_mechanism`, the audit with no pair handed in: a search over
  the inputs (starting pairs, a local search) on a stated share of a total run budget, then a fresh confirmation;
- :mod:`dptutor.audit.pair_pool`: the pairs that search starts from (:func:`vector_pairs`, :func:`value_pairs`) and
  the local moves it may try (:func:`pair_moves`);
- :mod:`dptutor.audit.paired`: :func:`paired_ratio_bound`, the lower bound ``bounds="joint"`` uses for frequent
  events (a paired difference with a Berry-Esseen allowance);
- :mod:`dptutor.audit.limits`: :func:`reach_probability`, a Neyman-Pearson limit on what any valid audit
  can report from a given number of runs, and :func:`reach_count_probability`, the same for how many of
  several independent audits reach their targets;
- :mod:`dptutor.audit.one_run`: :func:`audit_one_run`, the lower bound on epsilon from one training run
  with many canaries (Steinke, Nasr and Jagielski, 2023).

Every public name of these modules is importable from ``dptutor.audit``.
"""

from __future__ import annotations

from dptutor.audit import learned, limits, one_run, pair, pair_pool, pair_search, paired, sanity, search
from dptutor.audit.learned import *  # noqa: F401,F403
from dptutor.audit.limits import *  # noqa: F401,F403
from dptutor.audit.one_run import *  # noqa: F401,F403
from dptutor.audit.pair import *  # noqa: F401,F403
from dptutor.audit.pair_pool import *  # noqa: F401,F403
from dptutor.audit.pair_search import *  # noqa: F401,F403
from dptutor.audit.paired import *  # noqa: F401,F403
from dptutor.audit.sanity import *  # noqa: F401,F403
from dptutor.audit.search import *  # noqa: F401,F403

__all__ = [*sanity.__all__, *pair.__all__, *learned.__all__, *search.__all__, *pair_pool.__all__, *pair_search.__all__,
           *paired.__all__, *limits.__all__, *one_run.__all__]
