"""Ctrl-C that Python drops: a KeyboardInterrupt raised inside a finalizer or a weakref callback is printed
as "Exception ignored" and lost, so a grader interrupted at that moment went on grading and exited 0.
While grading, such an interrupt is kept and raised at the grader's next safe point."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from dptutor.course.signals import kept_interrupts, raise_kept_interrupt


class _InterruptedFinalizer:
    def __del__(self) -> None:
        raise KeyboardInterrupt


def test_a_dropped_interrupt_is_kept_and_raised_at_the_next_safe_point(capsys: pytest.CaptureFixture[str]) -> None:
    with kept_interrupts():
        _InterruptedFinalizer()  # collected at once: its KeyboardInterrupt is "ignored" by Python
        gc.collect()
        with pytest.raises(KeyboardInterrupt):
            raise_kept_interrupt()
        raise_kept_interrupt()  # raised once, then forgotten
    assert "Exception ignored" not in capsys.readouterr().err


def _run(body: str) -> subprocess.CompletedProcess[str]:
    """``body`` in a fresh interpreter, after a class ``A`` whose finalizer raises ``A.error``."""
    code = ("from dptutor.course.signals import kept_interrupts, raise_kept_interrupt\n"
            "class A:\n    def __del__(self):\n        raise self.error\n" + body + "print('went on')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_other_unraisable_errors_still_reach_the_previous_hook() -> None:
    out = _run("A.error = ValueError('boom')\nwith kept_interrupts():\n    A()\n    raise_kept_interrupt()\n")
    assert out.returncode == 0 and "went on" in out.stdout, out
    assert "Exception ignored" in out.stderr and "ValueError: boom" in out.stderr, out.stderr


def test_outside_the_block_nothing_is_kept() -> None:
    out = _run("A.error = KeyboardInterrupt\nwith kept_interrupts():\n    pass\nA()\nraise_kept_interrupt()\n")
    assert out.returncode == 0 and "went on" in out.stdout, out
    assert "Exception ignored" in out.stderr, out.stderr
