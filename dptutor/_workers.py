"""Worker processes for the auditor: a process pool that stops at once and dies with its parent.

A plain :class:`concurrent.futures.ProcessPoolExecutor` has two failure modes with long tasks:

* on Ctrl-C the parent waits for every running task to finish (``shutdown(wait=True)``), and the
  workers themselves receive the terminal's SIGINT and carry on with the next task;
* when the parent is killed (SIGKILL, out of memory), the workers keep running their current task.

:class:`WorkerPool` fixes both: its workers ignore SIGINT (the parent decides), and a watcher thread
in each worker exits the process within :data:`POLL_SECONDS` when the parent is gone or when the
parent calls :meth:`WorkerPool.stop`.  Like :mod:`dptutor._validate`, the module is private to the
package but its names are public to the other modules.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import threading
from multiprocessing.synchronize import Event

__all__ = ["POLL_SECONDS", "WorkerPool"]

#: How often a worker checks that its parent is alive and that it has not been told to stop.
POLL_SECONDS: float = 0.2


def _watch(parent_pid: int, stop: Event) -> None:
    while not stop.wait(POLL_SECONDS):
        if os.getppid() != parent_pid:  # reparented: the process that started this worker died
            os._exit(1)
    os._exit(1)  # told to stop: leave now, without finishing the task in hand


def _init_worker(stop: Event) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # The parent as seen from here (the pool's process, or a fork server that dies with it).
    parent = os.getppid()
    threading.Thread(target=_watch, args=(parent, stop), daemon=True, name="dptutor-watch").start()


class WorkerPool(concurrent.futures.ProcessPoolExecutor):
    """A process pool whose workers die with the parent; :meth:`stop` ends them without waiting.

    Parameters
    ----------
    max_workers : int
        Number of worker processes.
    """

    def __init__(self, max_workers: int) -> None:
        context = multiprocessing.get_context()
        self.stop_event = context.Event()
        super().__init__(
            max_workers=max_workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(self.stop_event,),
        )

    def stop(self) -> None:
        """Cancel pending tasks and make every worker exit now (within :data:`POLL_SECONDS`).

        Returns
        -------
        None
        """
        self.stop_event.set()
        self.shutdown(wait=True, cancel_futures=True)
