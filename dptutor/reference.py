"""The authors' published results (Habernal, ACL 2022, Figure 2), shipped with the package.

``dptutor/data/paper-results.json`` is the ``results.json`` of the authors' repository (Apache-2.0),
unchanged: ``{authors' class: {epsilon: {n: estimated loss}}}``. It is package data, so it is in the
wheel and a downloaded notebook can read it; :func:`paper_results` is the only code that opens it.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from dptutor._validate import check_choice, check_int, check_positive, shown
from dptutor.mechanisms import AUTHORS_NAMES

__all__ = [
    "PAPER_RESULTS_FILE",
    "paper_results",
    "paper_loss",
    "paper_trials",
]

#: The file's name inside the package (``importlib.resources.files("dptutor") / PAPER_RESULTS_FILE``).
PAPER_RESULTS_FILE = "data/paper-results.json"

#: The authors' run counted 10**7 trials per dataset for n <= 16 and, by a slip in their loop, only the
#: last 10**6 for larger n.
_SMALL_N, _TRIALS_SMALL_N, _TRIALS_LARGE_N = 16, 10_000_000, 1_000_000


def paper_results() -> dict[str, dict[str, dict[str, float]]]:
    """The authors' published losses, ``{class name: {"0.1": {"1": loss, ...}, ...}}`` (a fresh copy).

    Keys are strings as in their file; ``Infinity`` becomes ``math.inf``. Map our mechanism names to
    their class names with :data:`dptutor.mechanisms.AUTHORS_NAMES`.

    Returns
    -------
    dict
        ``{class name: {epsilon key: {n key: loss}}}``, a fresh copy.

    Notes
    -----
    It raises no exception: the file ships inside the package.

    Examples
    --------
    >>> from dptutor.reference import paper_results
    >>> sorted(paper_results()['LaplaceMechanism'])[:3]
    ['0.1', '0.2', '0.5']
    """
    text = resources.files("dptutor").joinpath(PAPER_RESULTS_FILE).read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def _results() -> dict[str, dict[str, dict[str, float]]]:
    return paper_results()


def paper_loss(name: str, epsilon: float, n: int) -> float:
    """The authors' estimated loss for our mechanism ``name`` at budget ``epsilon`` and dimension ``n``.

    Parameters
    ----------
    name : str
        One of our mechanism names (a key of :data:`dptutor.mechanisms.AUTHORS_NAMES`).
    epsilon : float
        One of the paper's budgets.
    n : int
        One of the paper's dimensions.

    Returns
    -------
    float
        The authors' loss (``math.inf`` where they report ``Infinity``).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is not one of the paper's values (the message names it).
    """
    name = check_choice(name, "name", AUTHORS_NAMES)
    cells = _results()[AUTHORS_NAMES[name]]
    epsilon = check_positive(epsilon, "epsilon")
    eps_key = repr(epsilon)
    if eps_key not in cells:
        raise ValueError(f"epsilon must be one of the paper's budgets {sorted(map(float, cells))}, got {epsilon}")
    n = check_int(n, "n", minimum=1)
    if n.bit_length() > 64 or str(n) not in cells[eps_key]:  # str() of an int past 4300 digits raises
        raise ValueError(f"n must be one of the paper's dimensions {sorted(map(int, cells[eps_key]))}, got {shown(n)}")
    return float(cells[eps_key][str(n)])


def paper_trials(n: int) -> int:
    """Trials per dataset that the authors' run counted at dimension ``n``: 10**7 for n <= 16, else 10**6.

    Parameters
    ----------
    n : int
        The dimension, at least 1.

    Returns
    -------
    int
        ``10**7`` for ``n <= 16``, else ``10**6``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.reference import paper_trials
    >>> paper_trials(64)
    1000000
    """
    n = check_int(n, "n", minimum=1)
    return _TRIALS_SMALL_N if n <= _SMALL_N else _TRIALS_LARGE_N
