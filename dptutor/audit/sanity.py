"""The empirical sanity check of Habernal (ACL 2022), Section 4, with exact closed forms and bounds.

The experiment
--------------
Two neighbouring datasets, ``D = (0, ..., 0)`` and ``D' = (1, ..., 1)`` in [0, 1]^n (l1 sensitivity
``n``), are privatised ``trials`` times each by a mechanism (:mod:`dptutor.mechanisms`).  The
attacker rounds each output coordinate (below 0.5 -> 0, otherwise 1) and takes a majority vote;
exactly ``n/2`` ones is guessed as 0 (the authors' code rounds the mean half-to-even).  With
``counts[d, y]`` the number of trials on dataset ``d`` (0 = zeros, 1 = ones) guessed as ``y``, the
estimated privacy loss (Eq. 12 with maximum-likelihood estimates, equal priors) is

    max over guesses y that occurred of ``|ln(counts[0, y] / counts[1, y])|``,

infinite when exactly one of the two counts is zero.  Post-processing cannot increase privacy
loss, so an epsilon-DP mechanism has true loss at most ``epsilon``.

Main entry points: :func:`estimate_loss` (Monte Carlo, constant memory, reproducible, optionally
in parallel), :class:`AuditResult` (with Clopper-Pearson confidence bounds), and
:func:`exact_loss` (the closed form for the six built-in mechanisms).
"""

from __future__ import annotations

from dptutor.audit._sanity_exact import exact_guess_probabilities, exact_loss, rounding_probabilities, simulated_losses
from dptutor.audit._sanity_result import MAX_N, MAX_TRIALS, AuditResult, loss_from_counts
from dptutor.audit._sanity_runs import BLOCK_TRIALS, CHUNK_ELEMENTS, AuditCell, estimate_loss, estimate_losses

__all__ = [
    "AuditResult",
    "AuditCell",
    "estimate_loss",
    "estimate_losses",
    "exact_loss",
    "exact_guess_probabilities",
    "rounding_probabilities",
    "loss_from_counts",
    "simulated_losses",
    "BLOCK_TRIALS",
    "CHUNK_ELEMENTS",
    "MAX_TRIALS",
    "MAX_N",
]

# Documented, pickled and shown under this module's name (as numpy does for its public names).
for _name in __all__:
    if callable(globals()[_name]):
        globals()[_name].__module__ = __name__
