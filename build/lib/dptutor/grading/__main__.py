"""``python -m dptutor.grading grade|release ...``: see :mod:`dptutor.cli`."""

from dptutor.grading import main

if __name__ == "__main__":  # importing this module (as tests/test_wheel.py does) runs nothing
    raise SystemExit(main())
