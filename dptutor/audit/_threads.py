"""One OpenMP/BLAS thread while a learned statistic fits or scores (:mod:`dptutor.audit.learned`).

The audit parallelises over blocks of runs, and OpenMP's busy-waiting threads cost many times their work on a
machine whose cores are already busy.  ``threadpoolctl.threadpool_limits`` finds the loaded libraries anew at every
call (about 3 ms, a quarter of the time of a small audit with a learned statistic); one controller, made at the
first call, finds them once, after importing the libraries the fits use (numpy's and scipy's BLAS, scikit-learn's
OpenMP), so that a first call made before the fit imports scikit-learn limits its OpenMP too.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["one_thread"]


@functools.lru_cache(maxsize=1)
def _controller() -> Any:
    import scipy.linalg  # noqa: F401 -- scipy's BLAS, and below scikit-learn's OpenMP: loaded before the scan
    import sklearn  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_thread() -> Any:
    """A context manager that limits every thread pool of the loaded OpenMP and BLAS libraries to one thread.

    Returns
    -------
    context manager
        ``with one_thread(): ...`` restores the previous limits on exit.
    """
    return _controller().limit(limits=1)
