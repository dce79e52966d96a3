"""``python -m dptutor.course grade|release|course ...``: the same as ``python -m dptutor ...`` (:mod:`dptutor.cli`)."""

from dptutor.cli import main

raise SystemExit(main())
