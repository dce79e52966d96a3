"""The operating-system sandbox in which the grader runs each submission's kernel.

Every submission gets a fresh kernel inside its own sandbox, made by an existing isolation tool:

* ``bwrap`` (bubblewrap, Debian package ``bubblewrap``, the sandbox of Flatpak; the default and the
  tested one): new user, PID, IPC, UTS, cgroup and network namespaces; ``/usr``, the Python
  installation and the ``dptutor`` package mounted read-only; a private writable work folder and a
  size-capped ``/tmp`` holding a private ``HOME`` and ``IPYTHONDIR``; nothing else of the machine's
  file system (no instructor files, solutions, other submissions, CSV, grader processes); resource
  limits set inside the sandbox (address space, processes, file size, CPU time, open files);
  ``--die-with-parent``; bubblewrap is started with an empty environment (its process is the PID
  namespace's init, whose ``/proc/1/environ`` the kernel can read) and the kernel with a minimal one;
  the interpreter is named by an absolute path of folders the sandbox has (:func:`interpreter`).
  The kernel is the sandbox's only child of its PID namespace's init, so
  killing the sandbox kills everything the submission started, ``start_new_session`` helpers included.
* ``podman`` or ``docker``: the same layout in a container (``--network none``, read-only root, the
  same mounts, ``--pids-limit``, ``--memory``), for instructors who prefer a container engine.  The
  container image must be able to run the grader's Python from its path (by default the Python
  installation is mounted from the host into ``python:3.11-slim``).  Not exercised by the tests.
* ``none``: the kernel runs as the instructor's user, next to the grader (``--no-sandbox``: only for
  submissions you trust).

The network namespace leaves the grader no TCP route to the kernel, so every kernel, sandboxed or
not, talks to the grader over Jupyter's ``ipc`` transport: unix sockets in a folder shared by the
two (``KERNEL_DIR``), with a kernel manager whose launch command wraps
``python -m ipykernel_launcher -f {connection_file}`` in the sandbox.  Interrupts are sent as
messages on the control channel (a signal from outside would not reach into the namespace).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptutor._validate import check_choice, check_int
from dptutor.course import cgroups

__all__ = [
    "SANDBOXES",
    "INSTALL_HINT",
    "Limits",
    "Sandbox",
    "SandboxUnavailable",
    "EnvironmentFailure",
    "find_sandbox",
    "kernel_manager",
]

#: The sandbox kinds ``grade --sandbox`` accepts ("auto" picks bwrap).
SANDBOXES = ("auto", "bwrap", "podman", "docker", "none")
#: What to run when no sandbox is installed.
INSTALL_HINT = "sudo apt-get install bubblewrap"
#: The default image of the container engines (it only needs a C library compatible with the host's Python).
DEFAULT_IMAGE = "python:3.11-slim"
MIB = 1 << 20
#: The size of the sandbox's /dev/shm (POSIX shared memory, semaphores).
SHM_SIZE = 64 * MIB
#: The largest process id Linux hands out.
PID_MAX = 1 << 22
#: The program that starts bubblewrap with an empty environment.
_ENV = "/usr/bin/env" if os.path.exists("/usr/bin/env") else "/bin/env"


class SandboxUnavailable(RuntimeError):
    """No sandbox of the kind asked for can run on this machine (the message says how to install one)."""


class EnvironmentFailure(SandboxUnavailable):
    """The grader's environment cannot run a kernel (not a submission's fault; the message names the cause
    and the fix): grading stops before anyone is scored."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one submission's sandbox (bytes, counts, seconds).

    ``memory`` is the address space of each process (``RLIMIT_AS``), ``processes`` the number of
    processes and threads of the sandbox's user (``RLIMIT_NPROC``; the kernel ignores it for a
    sandbox started by root: see the book's page "Grading"), ``file_size`` the largest file a process
    may write,
    ``tmp_size`` the size of the private ``/tmp``, ``cpu_seconds`` the CPU time of each process,
    ``output`` the kernel output (text) the grader keeps per notebook and ``message`` the largest
    single message the grader accepts from the kernel (a larger one is dropped by ZeroMQ).
    ``wall_factor``: in bubblewrap, a cell's and a notebook's time limits count the sandbox's own
    CPU time (:mod:`dptutor.course.cputime`), and wall-clock time stops them at ``wall_factor``
    times their limit (a cell that sleeps or waits); elsewhere the limits are wall-clock time.
    """

    memory: int = 3072 * MIB
    processes: int = 512
    file_size: int = 128 * MIB
    tmp_size: int = 256 * MIB
    open_files: int = 1024
    cpu_seconds: int = 900
    output: int = 2 * MIB
    message: int = 32 * MIB
    wall_factor: int = 5

    def __post_init__(self) -> None:
        for name, low in (("memory", 256 * MIB), ("processes", 16), ("file_size", MIB), ("tmp_size", MIB),
                          ("open_files", 64), ("cpu_seconds", 1), ("output", 1024), ("message", 64 * 1024)):
            check_int(getattr(self, name), name, minimum=low)
        # Bounded: the cap must stay a time a grader waits (a factor of 10**12 made a cap of millennia).
        check_int(self.wall_factor, "wall_factor", minimum=1, maximum=MAX_WALL_FACTOR)


#: The largest ``wall_factor``: the wall-clock cap of a time limit counted in CPU time.
MAX_WALL_FACTOR = 100

#: The kernel's start: set the limits inside the sandbox (after its user namespace exists, so that
#: RLIMIT_NPROC counts only the sandbox's processes), then become the kernel.
_PRELUDE = ("import os, resource, sys\n"
            "for name, value in zip(('AS', 'NPROC', 'FSIZE', 'NOFILE', 'CPU'), map(int, sys.argv[1:6])):\n"
            "    limit = getattr(resource, 'RLIMIT_' + name)\n"
            "    hard = resource.getrlimit(limit)[1]\n"
            "    if value >= 0:\n"
            "        value = value if hard == resource.RLIM_INFINITY else min(value, hard)\n"
            "        resource.setrlimit(limit, (value, value))\n"
            "os.execv(sys.executable, [sys.executable, '-m', 'ipykernel_launcher', *sys.argv[6:]])\n")


def interpreter() -> str:
    """The grader's Python as an absolute path without ``..`` or symbolic-link folders (the interpreter's
    own name is kept: a virtual environment is found from it).  ``sys.executable`` can read
    ``/home/me/course/../dptutor/.venv/bin/python`` when the grader was started by a relative path,
    and ``/home/me/course`` does not exist in the sandbox."""
    exe = sys.executable
    if not exe:
        raise SandboxUnavailable("this Python does not know its own interpreter (sys.executable is empty); "
                                 "start the grader as `/absolute/path/to/python -m dptutor grade ...`")
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(exe))), os.path.basename(exe))


def package_root() -> Path:
    """The folder whose ``dptutor`` subfolder is this package (it goes on the sandbox's PYTHONPATH)."""
    return Path(__file__).resolve().parents[2]


def _python_roots() -> list[str]:
    """The folders the grader's Python needs, outside /usr: its installation and the environment."""
    roots: list[str] = []
    for p in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(interpreter()),
              os.path.dirname(os.path.realpath(interpreter()))):
        p = os.path.realpath(p)
        if p.startswith("/usr/") or p == "/usr":
            continue
        if not any(p == r or p.startswith(r + "/") for r in roots):
            roots = [r for r in roots if not r.startswith(p + "/")] + [p]
    return sorted(roots)


def environment(home: str) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's, except thread counts."""
    env = {
        "PATH": f"{os.path.dirname(interpreter())}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home, "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
        "IPYTHONDIR": f"{home}/.ipython", "JUPYTER_CONFIG_DIR": f"{home}/.jupyter",
        "JUPYTER_DATA_DIR": f"{home}/.local/share/jupyter", "JUPYTER_RUNTIME_DIR": f"{home}/.local/share/jupyter/runtime",
        "MPLCONFIGDIR": f"{home}/.matplotlib", "MPLBACKEND": "Agg",
        "PYTHONPATH": str(package_root()), "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@dataclass(frozen=True)
class Sandbox:
    """One kind of sandbox and its limits; :meth:`command` wraps a kernel's start in it."""

    kind: str
    executable: str | None = None
    limits: Limits = field(default_factory=Limits)
    image: str = DEFAULT_IMAGE

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", SANDBOXES[1:])
        if self.executable is not None:
            _check_text(self.executable, "executable")
        if not isinstance(self.limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(self.limits).__name__}")
        _check_text(self.image, "image")

    @property
    def isolated(self) -> bool:
        return self.kind != "none"

    def command(self, connection_file: str, workdir: str, kernel_dir: str, name: str,
                extra: Sequence[str] = ()) -> list[str]:
        """The command that starts one kernel (connection file in ``kernel_dir``, cwd ``workdir``)."""
        for value, label in ((connection_file, "connection_file"), (workdir, "workdir"), (kernel_dir, "kernel_dir"),
                             (name, "name")):
            _check_text(value, label)
        if isinstance(extra, (str, bytes)) or not isinstance(extra, Sequence) or not all(isinstance(e, str) for e in extra):
            raise TypeError("extra must be a sequence of str")
        lim = self.limits
        # RLIMIT_NPROC counts the processes of a user in a user namespace: only bwrap makes one of the
        # sandbox's own (unsandboxed, or in a container without one, it would count all of yours).
        processes = lim.processes if self.kind == "bwrap" else -1
        kernel = [interpreter(), "-c", _PRELUDE, str(lim.memory), str(processes), str(lim.file_size),
                  str(lim.open_files), str(lim.cpu_seconds), "-f", connection_file, *extra]
        if self.kind == "none":
            return kernel
        home = "/tmp/home"
        env = environment(home)
        if self.kind == "bwrap":
            # bwrap starts with an empty environment (``env -i``): the sandbox's PID 1 is bwrap itself,
            # and its /proc/1/environ would show the grader's (a course secret, say) to the kernel.
            cmd = [_ENV, "-i", self.executable or "bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                   "--unshare-net", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                   "--uid", "1000", "--gid", "1000", "--hostname", "sandbox",
                   # The private /tmp first: the binds below may lie under the host's /tmp (a clone or a
                   # virtual environment there) and must be mounted on top of it, not shadowed by it.
                   "--size", str(lim.tmp_size), "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr"]
            for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
                path = Path("/") / top
                if path.is_symlink():
                    cmd += ["--symlink", os.readlink(path), str(path)]
                elif path.is_dir():
                    cmd += ["--ro-bind", str(path), str(path)]
            for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
                        "/etc/alternatives", "/etc/fonts", "/etc/mime.types"):
                if os.path.exists(etc):
                    cmd += ["--ro-bind", etc, etc]
            for root in [*_python_roots(), str(package_root() / "dptutor")]:
                cmd += ["--ro-bind", root, root]
            # /dev is a tmpfs as large as half the RAM: only its /dev/shm is writable, and size-capped.
            cmd += ["--proc", "/proc", "--dev", "/dev", "--size", str(SHM_SIZE), "--tmpfs", "/dev/shm",
                    "--remount-ro", "/dev",
                    "--dir", home, "--bind", workdir, workdir, "--bind", kernel_dir, kernel_dir,
                    "--remount-ro", "/", "--chdir", workdir, "--clearenv"]
            for key, value in env.items():
                cmd += ["--setenv", key, value]
            return cmd + ["--", *kernel]
        # podman / docker
        cmd = [self.executable or self.kind, "run", "--rm", "--init", "--name", name, "--network", "none",
               "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--ipc", "private",
               "--pids-limit", str(lim.processes), "--memory", str(lim.memory), "--hostname", "sandbox",
               "--user", f"{os.getuid()}:{os.getgid()}",
               "--tmpfs", f"/tmp:rw,size={lim.tmp_size},mode=1777", "-w", workdir]
        for root in [*_python_roots(), str(package_root() / "dptutor")]:
            cmd += ["-v", f"{root}:{root}:ro"]
        cmd += ["-v", f"{workdir}:{workdir}:rw", "-v", f"{kernel_dir}:{kernel_dir}:rw"]
        for key, value in env.items():
            cmd += ["-e", f"{key}={value}"]
        return cmd + [self.image, *kernel]

    def stop(self, name: str, pid: int | None) -> None:
        """Kill everything the sandbox holds (the submission has ended); safe to call twice."""
        _check_text(name, "name")
        if pid is not None:
            check_int(pid, "pid", minimum=1, maximum=PID_MAX)
        if pid is not None and pid > 1 and pid != os.getpgrp():
            # bwrap's child is the init of the sandbox's PID namespace: killing it kills every process
            # in the namespace, and it exits (turns zombie) only once they are all gone.
            inits = _children(pid) if self.kind == "bwrap" else []
            for target in inits:
                _kill(os.kill, target)
            for kill in (os.killpg, os.kill):  # the launcher runs in a session of its own
                _kill(kill, pid)
            deadline = time.monotonic() + 10
            while any(_running(p) for p in inits) and time.monotonic() < deadline:
                time.sleep(0.01)
        cgroups.remove(name)
        if self.kind in ("podman", "docker"):
            subprocess.run([self.executable or self.kind, "rm", "-f", name], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60, check=False)


def _kill(kill: Any, pid: int) -> None:
    try:
        kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and len(fields) > 1 and fields[1] == str(pid):
                found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _check_text(value: object, name: str) -> str:
    """A non-empty str without NUL (a path, a name)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value or "\0" in value:
        raise ValueError(f"{name} must be a non-empty text without NUL characters, got {value!r}")
    return value


def _works(cmd: list[str]) -> str | None:
    """None if ``cmd`` exits 0 within 20 s, else why not."""
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode != 0:
        return (proc.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return None


_PROBED: dict[tuple[str, str], str | None] = {}


def find_sandbox(kind: str = "auto", *, limits: Limits | None = None, image: str = DEFAULT_IMAGE) -> Sandbox:
    """The sandbox of ``kind`` ("auto" = bubblewrap), checked to work here, or :class:`SandboxUnavailable`."""
    check_choice(kind, "kind", SANDBOXES)
    _check_text(image, "image")
    limits = Limits() if limits is None else limits
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
    if kind == "none":
        return Sandbox("none", None, limits)
    tool = "bwrap" if kind == "auto" else kind
    exe = shutil.which(tool)
    if exe is None:
        if tool == "bwrap":
            raise SandboxUnavailable(
                "no sandbox found: grading runs each submission in bubblewrap, which is not installed. "
                f"Install it with `{INSTALL_HINT}` (or choose --sandbox podman|docker if one is installed), "
                "or pass --no-sandbox to run the submissions as your own user (only if you trust them)")
        raise SandboxUnavailable(f"--sandbox {tool}: `{tool}` is not installed (the tested default is bubblewrap: "
                                 f"`{INSTALL_HINT}`)")
    sandbox = Sandbox(tool, exe, limits, image)
    key = (exe, image if tool != "bwrap" else "")
    if key not in _PROBED:
        if tool == "bwrap":
            with tempfile.TemporaryDirectory(prefix="dptutor-probe-") as folder:
                probe = sandbox.command("/dev/null", folder, folder, "probe")
                cut = probe.index("--")
                _PROBED[key] = _works(probe[:cut] + ["--", interpreter(), "-c", "import dptutor"])
        else:
            _PROBED[key] = _works([exe, "run", "--rm", "--network", "none", image, "true"])
    why = _PROBED[key]
    if why is not None:
        hint = ("unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, or "
                "on Ubuntu 24.04 an AppArmor profile for bwrap)") if tool == "bwrap" else f"is the {tool} service running?"
        raise SandboxUnavailable(f"the {tool} sandbox does not work on this machine ({why}); {hint}. "
                                 "--no-sandbox runs the submissions unsandboxed (only if you trust them)")
    return sandbox


def kernel_manager(sandbox: Sandbox, workdir: str, kernel_dir: str, name: str) -> Any:
    """An ``AsyncKernelManager`` whose kernel runs in ``sandbox`` and talks over unix sockets in ``kernel_dir``."""
    if not isinstance(sandbox, Sandbox):
        raise TypeError(f"sandbox must be a Sandbox, got {type(sandbox).__name__}")
    for value, label in ((workdir, "workdir"), (kernel_dir, "kernel_dir"), (name, "name")):
        _check_text(value, label)
    for value, label in ((workdir, "workdir"), (kernel_dir, "kernel_dir")):
        if not os.path.isdir(value):
            raise ValueError(f"{label} must be an existing folder, got {value!r}")
    import zmq
    import zmq.asyncio
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    class SandboxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            cmd = sandbox.command(os.path.realpath(self.connection_file), workdir, kernel_dir, name,
                                  list(extra_arguments or []))
            # bubblewrap sets no cgroup limits: as root, RLIMIT_NPROC does not bind, so the sandbox
            # gets cgroups of its own (pids.max, memory) when this machine lets the grader make them.
            return cgroups.wrap(cgroups.create(name, sandbox.limits), cmd) if sandbox.kind == "bwrap" else cmd

        def client(self, **kwargs: Any) -> Any:
            # The client's own context (it stops its channels, the heartbeat thread included, before
            # destroying it), in which the grader drops any single message larger than the limit
            # (ZeroMQ closes that connection): a kernel cannot make the grader hold one huge output.
            context = zmq.asyncio.Context()
            context.setsockopt(zmq.MAXMSGSIZE, sandbox.limits.message)
            kc = super().client(context=context, **kwargs)
            kc._created_context = True
            return kc

    km = SandboxedKernelManager(transport="ipc", connection_file=os.path.join(kernel_dir, "kernel.json"),
                                ip=os.path.join(kernel_dir, "k"), kernel_name="python3", autorestart=False)
    km._kernel_spec = KernelSpec(argv=[interpreter(), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                 display_name="Python 3 (dptutor sandbox)", language="python",
                                 interrupt_mode="message")
    return km
