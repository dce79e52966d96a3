"""``python -m dptutor``: see :mod:`dptutor.cli`."""

from dptutor.cli import main

raise SystemExit(main())
