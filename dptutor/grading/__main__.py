"""``python -m dptutor.grading grade|release ...``: see :mod:`dptutor.cli`."""

from dptutor.grading import main

raise SystemExit(main())
