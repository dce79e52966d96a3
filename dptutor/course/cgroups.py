"""A control group of its own for each submission's sandbox, when the grader may make one.

Bubblewrap sets no cgroup limits.  When the grader runs as root and a cgroup hierarchy (v1 or v2)
with the ``pids`` controller is writable, each sandbox runs in a cgroup of its own with:

* ``pids.max`` = the process limit (as root, ``RLIMIT_NPROC`` does not bind);
* a memory limit of the sandbox's ``memory`` for the whole sandbox;
* a CPU share equal to every other sandbox's, whatever the number of processes (or sessions) inside:
  the ``cpu`` controller schedules the group as one (Linux's per-session "autogroups" would give a
  submission that starts 48 sessions 48 shares), so that one submission cannot starve a neighbour
  graded beside it.

The cgroups are removed (with anything left in them) when the submission ends.  The sandbox's CPU
time, which its time limits count (:mod:`dptutor.course.cputime`), is read from its cgroup's usage
counter (v1: ``cpuacct.usage``; v2: ``cpu.stat``).  Setting :data:`NO_CGROUPS_VARIABLE` in the
grader's environment makes the grader use no cgroup, as when it is not root (the tests use it to
try that path as root; the sandbox never sees the grader's environment).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Nothing here is API: :mod:`~dptutor.course.sandbox` uses these functions.
__all__: list[str] = []

#: Where the cgroup file systems are mounted (v1: one folder per controller; v2: the root or ``unified``).
CGROUP_ROOT = "/sys/fs/cgroup"
#: The CPU weight of every sandbox (cgroup v1 ``cpu.shares``; v2's ``cpu.weight`` keeps its default).
CPU_SHARES = 1024
#: The environment variable that, set to a non-empty value, makes the grader use no cgroup.
NO_CGROUPS_VARIABLE = "DPTUTOR_NO_CGROUPS"
_CGROUPS: dict[str, list[str]] = {}
_CGROUP_WARNED: list[bool] = []


def own_cgroups() -> dict[str, str]:
    """This process's cgroup per v1 controller (``"0"`` for the v2 hierarchy)."""
    own: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and not controllers:
            own["0"] = path
        for c in controllers.split(","):
            if c:
                own[c] = path
    return own


def parents() -> dict[str, str] | None:
    """The folders under which a submission's cgroups are made: ``{"pids": ..., "memory": ..., "cpu": ...}``
    for cgroup v1 (memory and cpu optional), ``{"v2": ...}`` for a v2 hierarchy with the pids
    controller; None when the grader cannot limit processes with cgroups here (not root, or nothing
    writable)."""
    if os.geteuid() != 0 or os.environ.get(NO_CGROUPS_VARIABLE):
        return None
    own = own_cgroups()
    found: dict[str, str] = {}
    for controller in ("pids", "memory", "cpu", "cpuacct"):
        folder = os.path.join(CGROUP_ROOT, controller, own.get(controller, "/").lstrip("/"))
        if controller in own and os.path.isdir(folder) and os.access(folder, os.W_OK):
            # cpu and cpuacct are often one hierarchy ("cpu,cpuacct"): one folder, made once
            if os.path.realpath(folder) not in {os.path.realpath(f) for f in found.values()}:
                found[controller] = folder
    if "pids" in found:
        return found
    for root in (os.path.join(CGROUP_ROOT, "unified"), CGROUP_ROOT):
        folder = os.path.join(root, own.get("0", "/").lstrip("/"))
        try:
            available = Path(folder, "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if "pids" in available and os.access(folder, os.W_OK):
            return {"v2": folder}
    return None


def _configure(controller: str, folder: str, limits: Any) -> None:
    """Write one new cgroup's limits (``limits``: a :class:`~dptutor.course.sandbox.Limits`)."""
    if controller in ("pids", "v2"):
        Path(folder, "pids.max").write_text(str(limits.processes))
    if controller == "memory":
        Path(folder, "memory.limit_in_bytes").write_text(str(limits.memory))
    if controller == "cpu":
        Path(folder, "cpu.shares").write_text(str(CPU_SHARES))
    if controller == "v2" and Path(folder, "memory.max").exists():
        Path(folder, "memory.max").write_text(str(limits.memory))


def create(name: str, limits: Any) -> list[str]:
    """Make the cgroups of one submission (pids.max, a memory limit, a CPU share of its own); their
    ``cgroup.procs`` files, or [] (with a warning, once, when the grader is root) when cgroups are not
    usable."""
    found = parents()
    made: list[str] = []
    try:
        if found is None:
            raise OSError("no writable pids controller")
        for controller, parent in found.items():
            folder = os.path.join(parent, f"dptutor-{name}")
            os.mkdir(folder)
            made.append(folder)
            _configure(controller, folder, limits)
    except OSError as exc:
        for folder in reversed(made):
            _remove(folder)
        if os.geteuid() == 0 and not _CGROUP_WARNED:
            _CGROUP_WARNED.append(True)
            print(f"warning: grading as root without a cgroup process limit ({exc}): Linux does not apply "
                  "RLIMIT_NPROC to root, so a fork bomb can load this machine until the notebook's time limit; "
                  "grade as an ordinary user, or where /sys/fs/cgroup's pids controller is writable",
                  file=sys.stderr, flush=True)
        return []
    _CGROUPS[name] = made
    return [os.path.join(folder, "cgroup.procs") for folder in made]


def cpu_seconds(name: str) -> float | None:
    """The CPU seconds used so far by the cgroups of submission ``name``, or None without a readable counter."""
    for folder in _CGROUPS.get(name, []):
        try:
            if os.path.exists(os.path.join(folder, "cpuacct.usage")):
                return int(Path(folder, "cpuacct.usage").read_text()) / 1e9
            for line in Path(folder, "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            continue
    return None


def remove(name: str) -> None:
    """Kill what is left in the cgroups of submission ``name`` and remove them (safe to call twice)."""
    for folder in _CGROUPS.pop(name, []):
        _remove(folder)


def _remove(folder: str) -> None:
    """Kill what is left in ``folder``'s cgroup and remove it (waits up to 10 s for it to empty)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            pids = [int(p) for p in Path(folder, "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.rmdir(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)


def wrap(procs: Sequence[str], cmd: list[str]) -> list[str]:
    """``cmd``, started by a shell that first moves itself into the cgroups (children inherit them)."""
    if not procs:
        return cmd
    script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 126; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *procs, "--", *cmd]
