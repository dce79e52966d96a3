"""The grader's IOPub channel after a kernel message over its size limit (``Limits.message``) was dropped.

ZeroMQ treats a message over ``MAXMSGSIZE`` as a protocol error and closes that connection for good (no
reconnection, unlike a lost connection): before the fix the grader heard nothing more from the kernel's
IOPub, so every later cell waited 4 s (nbclient's ``iopub_timeout``) for its end and lost its output, the
error of a later cell included (grading the sampler stub with one 40 MiB message took 30 s instead of 1.5 s).
Now the client connects a fresh IOPub socket, with the same limit, after the cell whose end never came.

The test skips when bubblewrap is missing (``sudo apt-get install bubblewrap``), as tests/course/test_hostile_sandbox.py.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from dptutor.course import intake
from dptutor.course.executor import grade_notebook
from dptutor.course.sandbox import Limits
from helpers import ASSIGNMENT_DIR

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap is not installed (sudo apt-get install bubblewrap); "
                                       ".ci/run installs it so CI runs these tests")


def test_a_cell_after_an_over_size_message_is_heard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 40 MiB message (over the 32 MiB limit) and, in the next cell, an error: the error reaches the grader's
    notes (it was lost before), and the fresh IOPub socket drops over-size messages too."""
    import zmq

    limits: list[int] = []
    reconnect = getattr(intake, "_reconnect_iopub", None)  # none before the fix: the notes fail first

    async def recording(kc: Any, patience: float) -> bool:
        assert reconnect is not None
        heard = await reconnect(kc, patience)
        limits.append(kc.iopub_channel.socket.getsockopt(zmq.MAXMSGSIZE))
        return heard

    monkeypatch.setattr(intake, "_reconnect_iopub", recording, raising=False)
    assert Limits().message < 40 << 20  # the message below is one the grader must drop
    cells = ['print("y" * (40 << 20))', 'raise ValueError("heard after the drop")']
    text = (ASSIGNMENT_DIR / "sampler.md").read_text()
    path = tmp_path / "big.md"
    path.write_text(text + "".join(f"\n```{{code-cell}} ipython3\n{cell}\n```\n" for cell in cells))
    result = grade_notebook(path, "sampler", timeout=120, total_timeout=300, sandbox="bwrap")
    assert any("raised ValueError: heard after the drop" in note for note in result.notes), result.notes
    assert limits == [Limits().message]  # one reconnection, after the 40 MiB message; the limit still applies
    assert result.total == 0
