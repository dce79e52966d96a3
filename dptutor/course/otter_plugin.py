"""An otter-grader plugin that stops any notebook cell running longer than a limit (``TimeLimit``).

Imported by otter only (it needs ``otter-grader``, the ``dptutor[otter]`` extra).  Configured in
the assignment's ``generate: plugins:`` as ``dptutor.course.otter_plugin.TimeLimit: {seconds: 60}``.
"""

from __future__ import annotations

from typing import Any

try:
    from otter.plugins import AbstractOtterPlugin
except ImportError:  # the module stays importable; the plugin itself needs otter
    class AbstractOtterPlugin:  # type: ignore[no-redef]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError("the otter plugin needs otter-grader: pip install 'dptutor[otter]'")

__all__ = ["TimeLimit", "time_limit_source"]


def time_limit_source(seconds: float) -> str:
    """The code of the first cell: :func:`dptutor.course.otter.arm_time_limit`."""
    from dptutor._validate import check_real
    from dptutor.course.otter import MAX_TIME_LIMIT, MIN_TIME_LIMIT

    seconds = check_real(seconds, "seconds", low=MIN_TIME_LIMIT, high=MAX_TIME_LIMIT)
    return f"from dptutor.course.otter import arm_time_limit\narm_time_limit({float(seconds)!r})\n"


class TimeLimit(AbstractOtterPlugin):
    """Insert :func:`time_limit_source` as the submission's first cell before otter executes it."""

    def before_execution(self, submission: Any) -> Any:
        import nbformat

        seconds = float((self.plugin_config or {}).get("seconds", 60))
        if isinstance(submission, nbformat.NotebookNode):
            submission.cells.insert(0, nbformat.v4.new_code_cell(time_limit_source(seconds)))
        return submission
