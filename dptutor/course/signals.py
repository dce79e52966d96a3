"""Ctrl-C and SIGTERM while grading: an event loop that stops at once, and blocks that finish first."""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

#: Nothing here is API: :func:`run_coroutine`, :func:`raise_interrupt` and :class:`deferred_interrupts` serve
#: the grader's own modules (:mod:`~dptutor.course.executor`, :mod:`~dptutor.course.batch`,
#: :mod:`~dptutor.course.grade`).
__all__: list[str] = []


def _stray_task_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: drop the races that Ctrl-C or a time limit leaves behind.

    When grading is interrupted while a kernel starts or stops, nbclient's clean-up task can find
    jupyter_client's start-up future already settled (``InvalidStateError``) or cancelled; asyncio
    would print that task's traceback when it is collected. The outcome is already decided by the
    interrupt, so such a task has nothing to report. Anything else goes to asyncio's default handler.
    """
    if isinstance(context.get("exception"), (asyncio.InvalidStateError, asyncio.CancelledError)):
        return
    loop.default_exception_handler(context)


def run_coroutine(factory: Callable[[], Any]) -> None:
    """``asyncio.run(factory())``, in a helper thread when an event loop already runs here (Jupyter).

    In the main thread, Ctrl-C (SIGINT) and SIGTERM cancel the run and raise ``KeyboardInterrupt``
    at any moment, also while a cell executes: nbclient's own handlers (which shut the kernel down
    and let grading go on as if the kernel had died) are never installed.
    """

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_stray_task_errors)
        task = asyncio.current_task()
        interrupted: list[int] = []

        def on_signal(signum: int) -> None:
            interrupted.append(signum)
            if task is not None:
                task.cancel()

        ours = (signal.SIGINT, signal.SIGTERM)
        before = {signum: signal.getsignal(signum) for signum in ours}
        real_add, real_remove = loop.add_signal_handler, loop.remove_signal_handler
        try:
            for signum in ours:
                real_add(signum, on_signal, signum)
        except (RuntimeError, ValueError):  # not the main thread: the caller's own handling applies
            ours = ()
        else:
            loop.add_signal_handler = lambda sig, cb, *args: None if sig in ours else real_add(sig, cb, *args)  # type: ignore[method-assign]
            loop.remove_signal_handler = lambda sig: False if sig in ours else real_remove(sig)  # type: ignore[method-assign]
        try:
            await factory()
        except BaseException:
            if interrupted:  # whatever the cancelled run raised (a dead kernel, ...), it was Ctrl-C
                raise KeyboardInterrupt from None
            raise
        finally:
            for signum in ours:
                real_remove(signum)
                signal.signal(signum, before[signum])  # e.g. the CLI's SIGTERM handler
            for name in ("add_signal_handler", "remove_signal_handler"):
                loop.__dict__.pop(name, None)
        if interrupted:
            raise KeyboardInterrupt

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main())
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(main())).result()


def raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class deferred_interrupts:
    """A block that Ctrl-C (or SIGTERM) does not cut: the signal is raised when the block ends."""

    def __enter__(self) -> None:
        self.pending: list[int] = []
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            self.previous = {s: signal.signal(s, lambda signum, frame: self.pending.append(signum))
                             for s in (signal.SIGINT, signal.SIGTERM)}

    def __exit__(self, *exc: object) -> None:
        if self.main:
            for s, handler in self.previous.items():
                signal.signal(s, handler)
        if self.pending:
            raise KeyboardInterrupt


#: Ctrl-C that Python dropped: a KeyboardInterrupt raised inside a finalizer or a weakref callback is
#: "ignored" (printed and lost), and grading would go on as if nothing had happened.
_DROPPED: list[int] = []


class kept_interrupts:
    """A block in which a Ctrl-C that Python drops (``sys.unraisablehook`` sees a KeyboardInterrupt) is
    kept, not printed: :func:`raise_kept_interrupt` raises it at the grader's next safe point."""

    def __enter__(self) -> None:
        _DROPPED.clear()
        self.previous = sys.unraisablehook
        previous = self.previous

        def hook(unraisable: Any) -> None:
            if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
                _DROPPED.append(1)
                return
            previous(unraisable)

        sys.unraisablehook = hook

    def __exit__(self, *exc: object) -> None:
        sys.unraisablehook = self.previous


def raise_kept_interrupt() -> None:
    """Raise ``KeyboardInterrupt`` if a Ctrl-C was dropped inside :class:`kept_interrupts` since the last call."""
    if _DROPPED:
        _DROPPED.clear()
        raise KeyboardInterrupt
