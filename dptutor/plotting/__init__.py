"""The book's figures (one function per figure kind; each returns a :class:`matplotlib.figure.Figure`).

Chapters call these, glue the figure with myst-nb and close it.  Functions never call
``plt.show()``.  Inputs are checked with :mod:`dptutor._validate` before anything is drawn, so a bad
argument costs no figure and its error names the parameter.
"""

from dptutor.plotting._beyond import *  # noqa: F401,F403
from dptutor.plotting._beyond import __all__ as _beyond_names
from dptutor.plotting._checks import *  # noqa: F401,F403
from dptutor.plotting._checks import __all__ as _checks_names
from dptutor.plotting._foundations import *  # noqa: F401,F403
from dptutor.plotting._foundations import __all__ as _foundations_names
from dptutor.plotting._sampling import *  # noqa: F401,F403
from dptutor.plotting._sampling import __all__ as _sampling_names
from dptutor.plotting._sanity import *  # noqa: F401,F403
from dptutor.plotting._sanity import __all__ as _sanity_names

__all__ = [*_sampling_names, *_foundations_names, *_sanity_names, *_beyond_names, *_checks_names]

# Documented and shown under this package's name (as numpy does for its public names).
for _name in __all__:
    if callable(globals()[_name]):
        globals()[_name].__module__ = __name__
