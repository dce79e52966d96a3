"""The CPU time a submission's sandbox has used, and time limits that count it.

A submission's time limits count the CPU time of its own sandbox, not the time on the wall: a
neighbour graded beside it (``--workers 2``) that keeps every core busy slows its cells down but
does not use up their limits.  A cell is over its limit when the sandbox (every process in it, the
kernel and whatever it started) has used more CPU time during that cell than the limit; the whole
notebook when the sandbox's total passes the notebook's limit.  Wall-clock time stays as a hard cap
of :attr:`~dptutor.course.sandbox.Limits.wall_factor` times each limit, so that a cell that sleeps
or waits still ends.

Where the CPU time comes from:

* when the sandbox runs in a cgroup of its own (the grader is root and may make cgroups,
  :mod:`dptutor.course.cgroups`), the cgroup's own CPU usage counter;
* otherwise ``/proc``, which needs no privilege: every ``/proc/<pid>/stat`` of the sandbox's launcher
  and its descendants (bubblewrap's init adopts every orphan of the sandbox), summing each process's
  user and system time and the time of the children it has reaped (``utime``, ``stime``,
  ``cutime``, ``cstime``).  :class:`CpuClock` samples them every :data:`POLL` seconds and adds what
  each process has used since the last sample, so that a process that exits keeps the time it was
  last seen with, and its parent's reaped time is not counted twice.  What escapes it: the CPU time a
  short-lived process uses after its last sample when nobody reaps it (a parent that ignores
  ``SIGCHLD``); such a submission still ends at the wall-clock cap.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dptutor._validate import check_int, check_positive
from dptutor.course.intake import TIMED_OUT_KEY

#: Nothing here is API: :mod:`~dptutor.course.executor` and :mod:`~dptutor.course.remote` use these names.
__all__: list[str] = []

#: Seconds between two samples of a sandbox's CPU time.
POLL = 0.2
#: The metadata key that says which clock stopped a cell: "cpu" (its CPU time) or "wall" (the wall-clock cap).
CLOCK_KEY = "dptutor_timed_out_clock"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_Key = tuple[int, int]  # (pid, start time): a pid the system hands out again is another process


@dataclass(frozen=True)
class _Seen:
    parent: _Key | None
    own: float      # utime + stime, seconds
    reaped: float   # cutime + cstime, seconds


def _processes() -> dict[_Key, tuple[int, float, float]]:
    """Every process now: (pid, start time) -> (parent pid, own CPU seconds, reaped children's CPU seconds)."""
    table: dict[_Key, tuple[int, float, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = text[text.rfind(b")") + 2:].split()  # fields[0] is the state (field 3 of proc(5))
        if len(fields) < 20:
            continue
        utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
        table[(int(entry), int(fields[19]))] = (int(fields[1]), (utime + stime) / _TICKS, (cutime + cstime) / _TICKS)
    return table


class CpuClock:
    """The CPU seconds used by process ``root`` and all its descendants since the first sample, or by a
    cgroup (``usage``: a function returning its CPU seconds, or None when it cannot be read)."""

    def __init__(self, root: int, usage: Callable[[], float | None] | None = None) -> None:
        self.root = check_int(root, "root", minimum=1)
        if usage is not None and not callable(usage):
            raise TypeError(f"usage must be callable or None, got {type(usage).__name__}")
        self._usage = usage
        self._seen: dict[_Key, _Seen] = {}
        self._total = 0.0

    def seconds(self) -> float:
        """The CPU seconds used so far (never decreasing).  The source is chosen at the first call: the
        cgroup's counter if it can be read then (later unreadable: the last value), else ``/proc``."""
        if self._usage is not None:
            used = self._usage()
            if used is not None:
                self._total = max(self._total, used)
            elif not self._seen and self._total == 0.0:
                self._usage = None  # no counter from the start: /proc from now on
            if self._usage is not None:
                return self._total
        self._sample()
        return self._total

    def _sample(self) -> None:
        table = _processes()
        live = _descendants(table, self.root)
        owed: dict[_Key, float] = {}  # the time of vanished processes that their reaper's c-times now hold
        for key, seen in self._seen.items():
            if key in live:
                continue
            parent = seen.parent
            while parent is not None and parent not in live and parent in self._seen:
                parent = self._seen[parent].parent
            if parent in live:
                owed[parent] = owed.get(parent, 0.0) + seen.own + seen.reaped
        seen_now: dict[_Key, _Seen] = {}
        for key, parent in live.items():
            _, own, reaped = table[key]
            before = self._seen.get(key, _Seen(None, 0.0, 0.0))
            self._total += max(0.0, own - before.own) + max(0.0, reaped - before.reaped - owed.get(key, 0.0))
            seen_now[key] = _Seen(parent, own, reaped)
        self._seen = seen_now


def _descendants(table: dict[_Key, tuple[int, float, float]], root: int) -> dict[_Key, _Key | None]:
    """``root``'s process and its descendants in ``table``: key -> the parent's key (None for the root)."""
    children: dict[int, list[_Key]] = {}
    for key, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(key)
    found: dict[_Key, _Key | None] = {key: None for key in table if key[0] == root}
    todo = list(found)
    while todo:
        key = todo.pop()
        for child in children.get(key[0], []):
            if child not in found:
                found[child] = key
                todo.append(child)
    return found


def limit_text(cell: Any) -> str | None:
    """How a cell went past its time limit ("went past its time limit of 60 s of CPU time"), or None if it did not."""
    metadata = (cell.get("metadata") if hasattr(cell, "get") else None) or {}
    limit = metadata.get(TIMED_OUT_KEY)
    if limit is None:
        return None
    clock = metadata.get(CLOCK_KEY)
    if clock == "cpu":
        return f"went past its time limit of {limit:g} s of CPU time"
    if clock == "wall":
        return f"ran for {limit:g} s of wall-clock time (the cap for a cell that waits or sleeps)"
    return f"ran past the {limit:g} s time limit"


class Watchdog:
    """Enforces a sandbox's CPU time limits while its cells run: a cell that uses more CPU time than its
    limit is marked (:data:`CLOCK_KEY`) and interrupted; when the whole sandbox has used more than
    ``total`` seconds, ``on_total`` is called (it stops the notebook).  ``factor``: the wall-clock cap of a
    cell, in multiples of its limit (the kernel client enforces it)."""

    def __init__(self, clock: CpuClock, total: float, interrupt: Callable[[], Any],
                 on_total: Callable[[], None], factor: int = 1) -> None:
        if not isinstance(clock, CpuClock):
            raise TypeError(f"clock must be a CpuClock, got {type(clock).__name__}")
        self.clock, self.total = clock, check_positive(total, "total")
        self.factor = check_int(factor, "factor", minimum=1)
        self._interrupt, self._on_total = interrupt, on_total
        self._cell: Any = None
        self._limit = 0.0
        self._start = 0.0

    def start_cell(self, cell: Any, limit: float) -> None:
        """``cell`` runs now, with ``limit`` seconds of CPU time."""
        self._cell, self._limit, self._start = cell, check_positive(limit, "limit"), self.clock.seconds()

    def end_cell(self) -> None:
        self._cell = None

    async def run(self) -> None:
        """Sample the clock until cancelled."""
        while True:
            await asyncio.sleep(POLL)
            used = self.clock.seconds()
            if used > self.total:
                self._on_total()
                return
            cell = self._cell
            if cell is not None and used - self._start > self._limit:
                metadata = cell.setdefault("metadata", {})
                if TIMED_OUT_KEY not in metadata:
                    metadata[TIMED_OUT_KEY], metadata[CLOCK_KEY] = float(self._limit), "cpu"
                    try:
                        result = self._interrupt()
                        if asyncio.iscoroutine(result):
                            await result
                    except Exception:  # noqa: BLE001 - a kernel that is gone: the wall-clock cap still ends the cell
                        pass


def wall_capped_client(base: type) -> type:
    """``base`` (an nbclient ``NotebookClient`` class) whose cell time-outs say they are the wall-clock cap."""

    class WallCapped(base):  # type: ignore[misc, valid-type]
        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            before = dict(cell.get("metadata") or {}) if cell is not None else {}
            reply = await super()._async_handle_timeout(timeout, cell)
            if cell is not None:
                metadata = cell.setdefault("metadata", {})
                if before.get(CLOCK_KEY) == "cpu":  # stopped for its CPU time already: that is the reason
                    metadata[TIMED_OUT_KEY] = before[TIMED_OUT_KEY]
                else:
                    metadata[CLOCK_KEY] = "wall"
            return reply

    return WallCapped

