"""The grader's sandbox (dptutor.course.sandbox) and the runner's text safety, without kernels.

The sandbox's command is run directly with a short Python script in place of the kernel, which
checks from inside what the sandbox lets it see and do.  Those tests skip when bubblewrap is
missing (``sudo apt-get install bubblewrap``; ``.ci/run`` installs it).
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT
from dptutor.course import batch, cgroups, executor, grade, sandbox, textsafe, workdirs
from dptutor.course.result import SubmissionResult
from dptutor.course.sandbox import Limits, Sandbox, SandboxUnavailable, find_sandbox

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed (sudo apt-get install bubblewrap); "
                                        ".ci/run installs it so CI runs these tests")

PROBE = r'''
import json, os, socket, sys
out = {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd(), "home": os.environ.get("HOME"),
       "ipythondir": os.environ.get("IPYTHONDIR"), "env": sorted(os.environ),
       "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
def can(f):
    try:
        f()
        return True
    except OSError:
        return False
import dptutor
out["package_writable"] = can(lambda: open(os.path.join(os.path.dirname(dptutor.__file__), "evil.py"), "w"))
out["prefix_writable"] = can(lambda: open(os.path.join(sys.prefix, "evil"), "w"))
out["sees_solutions"] = os.path.exists(sys.argv[1])
out["sees_repo"] = os.path.exists(sys.argv[2])
out["sees_secret"] = os.path.exists(sys.argv[3])
out["work_writable"] = can(lambda: open("here.txt", "w").write("x"))
out["tmp_writable"] = can(lambda: open("/tmp/x", "w").write("x"))
out["network"] = can(lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
out["root_writable"] = can(lambda: open("/evil", "w"))
out["dev_writable"] = can(lambda: open("/dev/evil", "w"))
out["shm_writable"] = can(lambda: open("/dev/shm/x", "w").write("x"))
out["shm_size"] = os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize
out["tmp_size"] = os.statvfs("/tmp").f_blocks * os.statvfs("/tmp").f_frsize
environs = []
for p in os.listdir("/proc"):
    try:
        environs.append(open(f"/proc/{p}/environ", "rb").read().decode(errors="replace"))
    except OSError:
        pass
out["proc_environ"] = "\n".join(environs)
out["init_environ"] = can(lambda: open("/proc/1/environ", "rb").read())
print(json.dumps(out))
'''


def run_probe(tmp_path: Path, box: Sandbox) -> dict:
    work, kernel = tmp_path / "work", tmp_path / "kernel"
    work.mkdir()
    kernel.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    cmd = box.command(str(kernel / "kernel.json"), str(work), str(kernel), "probe")
    cut = cmd.index("--")
    python = cmd.index(sandbox.interpreter(), cut)
    cmd = cmd[:python + 1] + ["-c", PROBE, str(ROOT / "book/assignments/instructor/sampler.md"), str(ROOT / "README.md"),
                              str(secret)]
    # The probe replaces the kernel (and its prelude, which sets the limits: see the next test).
    # The grader's environment holds a course secret (the README suggests setting it in the shell).
    env = {**os.environ, "DPTUTOR_COURSE_SECRET": SECRET}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


SECRET = "course-secret-" + os.urandom(8).hex()


@needs_bwrap
def test_the_sandbox_shows_nothing_of_the_machine_and_keeps_nothing(tmp_path: Path) -> None:
    box = find_sandbox("bwrap")
    got = run_probe(tmp_path, box)
    assert got["uid"] == 1000 and got["cwd"] == str(tmp_path / "work")
    assert got["home"] == "/tmp/home" and got["ipythondir"].startswith("/tmp/home")
    assert max(got["pids"]) <= 3, got["pids"]  # its own PID namespace: init and the probe
    assert not got["package_writable"] and not got["prefix_writable"] and not got["root_writable"]
    assert not got["sees_solutions"] and not got["sees_repo"] and not got["sees_secret"]
    assert got["work_writable"] and got["tmp_writable"] and not got["network"]
    assert not got["dev_writable"] and got["shm_writable"]  # only the size-capped /dev/shm and /tmp
    assert got["shm_size"] <= sandbox.SHM_SIZE and got["tmp_size"] <= box.limits.tmp_size
    assert (tmp_path / "work" / "here.txt").read_text() == "x"
    assert not any(name.startswith(("PYTEST", "VIRTUAL_ENV")) for name in got["env"])


@needs_bwrap
def test_nothing_of_the_graders_environment_is_readable_in_the_sandbox(tmp_path: Path) -> None:
    """Round 3, finding 1: bubblewrap's own process is the sandbox's PID 1, and its /proc/1/environ held the
    grader's whole environment (a course secret set in the instructor's shell, say). bwrap now starts with an
    empty environment and the kernel with a minimal one: no process of the sandbox shows the grader's."""
    got = run_probe(tmp_path, find_sandbox("bwrap"))
    assert got["init_environ"] and got["proc_environ"].strip()  # /proc/*/environ was read, ...
    assert SECRET not in got["proc_environ"] and "DPTUTOR_COURSE_SECRET" not in got["proc_environ"]  # ... without it
    assert "DPTUTOR_COURSE_SECRET" not in got["env"]
    assert set(got["env"]) <= set(sandbox.environment("/tmp/home")) | {"PWD"}, got["env"]  # bwrap sets PWD


def test_the_kernel_command_sets_every_limit() -> None:
    limits = Limits(memory=512 << 20, processes=64, file_size=8 << 20, tmp_size=16 << 20, open_files=128, cpu_seconds=99)
    cmd = Sandbox("bwrap", "/usr/bin/bwrap", limits).command("/k/kernel.json", "/w", "/k", "x")
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
                 "--die-with-parent", "--new-session", "--clearenv"):
        assert flag in cmd
    tmpfs = {cmd[i + 1]: cmd[i - 1] for i, a in enumerate(cmd) if a == "--tmpfs"}
    assert tmpfs == {"/dev/shm": str(sandbox.SHM_SIZE), "/tmp": str(16 << 20)}
    kernel = cmd[cmd.index("--") + 1:]
    assert kernel[:2] == [sandbox.interpreter(), "-c"] and "setrlimit" in kernel[2]
    assert kernel[3:8] == [str(512 << 20), "64", str(8 << 20), "128", "99"] and kernel[8:] == ["-f", "/k/kernel.json"]
    binds = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--bind"]
    assert binds == ["/w", "/k"]  # the only writable folders
    plain = Sandbox("none", limits=limits).command("/k/kernel.json", "/w", "/k", "x")
    assert plain[0] == sandbox.interpreter() and plain[3:8] == [str(512 << 20), "-1", str(8 << 20), "128", "99"]


def test_grade_names_the_install_command_when_no_sandbox_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="sudo apt-get install bubblewrap"):
        find_sandbox("auto")
    with pytest.raises(SandboxUnavailable, match="podman"):
        find_sandbox("podman")
    assert find_sandbox("none").kind == "none"
    with pytest.raises(ValueError, match="kind"):
        find_sandbox("chroot")


def test_text_from_a_submission_cannot_forge_lines_or_formulas() -> None:
    assert textsafe.one_line("a\nq1: 2 / 2\r\x1b[2J") == "a\\nq1: 2 / 2\\r\\x1b[2J"
    for text in ("=1+1", "+1", "-1", "@A1", "\tx", "\rx", "'x"):
        cell = textsafe.csv_cell(text)
        assert cell.startswith("'") and textsafe.csv_text(cell) == text
    assert textsafe.csv_cell("plain") == "plain" == textsafe.csv_text("plain")
    result = SubmissionResult("a\nb.md", "sampler", {"q1": 0.0}, {"q1": 2.0},
                                     messages={"q1": ["boom\nq1: 2 / 2\n4 / 4 points"]})
    lines = result.feedback_text().splitlines()
    assert len(lines) == 3 and lines[0].startswith("a\\nb.md: 0 / 2")


@pytest.mark.parametrize("name", ["reference.md", " x.md", "a\\b.md", "=x.md", "a\nb.md", "a" * 252 + ".md",
                                  "\udcff.md", ".md", "..md", "CON.md"])
def test_feedback_file_names_are_safe(tmp_path: Path, name: str) -> None:
    target = textsafe.feedback_name(name)
    assert len(target.encode()) <= 255 and "/" not in target and not target.startswith((".", " ", "-"))
    (tmp_path / target).write_text("ok")
    assert textsafe.feedback_name(name) == target
    if name == "reference.md":
        assert target == "reference.txt"


@pytest.mark.parametrize("name", [" lead.md", "back\\slash.md", "quo\"te's.md", "=x.md", "new\nline.md",
                                  "a" * 252 + ".md", "\udcff.md"])
def test_the_crash_marker_survives_any_file_name(tmp_path: Path, name: str) -> None:
    marker = tmp_path / ".scores.csv.inflight"
    grade._write_inflight(marker, [name, f"Ann_7_assignsubmission_file_/{name}"])  # flat and sub-folder names
    assert grade._read_inflight(marker) == [name, f"Ann_7_assignsubmission_file_/{name}"]
    for bad in ("", "../x.md", "a/b/c.md", "/x.md", "a/", "x\0y", 3):
        marker.write_text(json.dumps({"files": [bad]}))
        assert grade._read_inflight(marker) == []
    marker.write_text(json.dumps({"file": name}))  # a marker an earlier version left
    assert grade._read_inflight(marker) == [name]
    marker.write_text("not json")
    assert grade._read_inflight(marker) == []


@pytest.mark.parametrize("text", [
    '{"cells": [',
    json.dumps({"nbformat": 99, "nbformat_minor": 0, "metadata": {}, "cells": []}),
    json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": 3}),
    json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [3]}),
    json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                "cells": [{"cell_type": "code", "source": 3, "metadata": {}, "outputs": []}]}),
    json.dumps([1, 2]),
    json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                "cells": [{"cell_type": "code", "source": "x", "metadata": None, "outputs": []}]}),
])
def test_malformed_notebooks_are_unreadable(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    result = executor.grade_notebook(path, "sampler", sandbox="none")
    assert result.total == 0 and "could not read the notebook" in result.notes[-1]


def test_tags_null_is_a_readable_cell(tmp_path: Path) -> None:
    path = tmp_path / "tags.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": ["x = ", "1"], "metadata": {"tags": None}, "outputs": [], "execution_count": None},
        {"cell_type": "code", "source": "y = 2", "metadata": {"tags": "dptutor-check"}, "outputs": [], "execution_count": None},
        {"cell_type": "code", "source": "check()", "metadata": {"tags": ["dptutor-check"]}, "outputs": []},
        {"cell_type": "markdown", "source": "text", "metadata": {}}]}))
    cells = executor._student_cells(path)
    assert [c["source"] for c in cells] == ["x = 1", "y = 2"]


def test_stale_work_folders_of_dead_graders_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workdirs, "workdir_parent", lambda: str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"dptutor-grade-{dead.pid}-abc"
    live = tmp_path / f"dptutor-grade-{os.getpid()}-abc"
    other = tmp_path / "dptutor-grade-notapid"
    for folder in (stale, live, other):
        (folder / "work").mkdir(parents=True)
    assert workdirs.remove_stale_workdirs() == []
    assert not stale.exists() and live.exists() and other.exists()


def _deep_tree(root: Path, depth: int) -> None:
    """A chain of ``depth`` nested folders under ``root`` (each with a file), longer than any path may be."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "w") as fh:
                fh.write("x")
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.chmod(fd, 0)  # the innermost folder made unreadable, as a submission may
    finally:
        os.close(fd)


def test_a_very_deep_work_folder_is_removed_and_never_stops_a_later_grade(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 3, finding 2: a submission that left 5,000 nested folders in its work folder made
    shutil.rmtree raise RecursionError, so the folder stayed and every later grade died at start in
    remove_stale_workdirs. The removal is iterative (and works below the path length limit)."""
    monkeypatch.setattr(workdirs, "workdir_parent", lambda: str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"dptutor-grade-{dead.pid}-deep"
    (stale / "work").mkdir(parents=True)
    _deep_tree(stale / "work", 5000)
    assert workdirs.remove_stale_workdirs() == []
    assert not stale.exists()
    own = tmp_path / "own"
    own.mkdir()
    _deep_tree(own, 3000)
    assert workdirs.remove_tree(own) and not own.exists()


def test_a_work_folder_that_cannot_be_removed_is_reported_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(workdirs, "workdir_parent", lambda: str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"dptutor-grade-{dead.pid}-stuck"
    (stale / "work").mkdir(parents=True)

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(workdirs.os, "rmdir", refuse)
    assert workdirs.remove_stale_workdirs() == [stale]
    assert f"could not remove the grader's old work folder {stale}" in capsys.readouterr().err


def _cgroup_files() -> list[Path]:
    """The pids.current file of every submission cgroup that exists now (cgroup v1 or v2).  Graders run
    beside this test make and remove cgroups: a folder that vanishes during the scan scans again."""
    patterns = ("pids/dptutor-*/pids.current", "pids/*/dptutor-*/pids.current",
                "unified/**/dptutor-*/pids.current", "dptutor-*/pids.current")
    for _ in range(100):
        try:
            return [path for pattern in patterns for path in Path(cgroups.CGROUP_ROOT).glob(pattern)]
        except FileNotFoundError:
            continue
    raise AssertionError("the cgroup folders kept changing during 100 scans")


def _cgroup_counts() -> list[int]:
    """pids.current of every submission cgroup that exists now (cgroup v1 or v2)."""
    counts = []
    for path in _cgroup_files():
        try:
            counts.append(int(path.read_text()))
        except (OSError, ValueError):
            pass
    return counts


@needs_bwrap
@pytest.mark.skipif(cgroups.parents() is None,
                    reason="needs root and a writable cgroup pids controller (v1 or v2) under /sys/fs/cgroup")
def test_a_fork_bomb_as_root_stops_at_the_cgroup_process_limit(tmp_path: Path) -> None:
    """As root RLIMIT_NPROC does not bind, so each sandbox gets a cgroup with pids.max (and a memory
    limit): a fork bomb (bounded at 2**11 processes, should the limit fail) stays under the limit,
    ends at the cell's time limit, and the grader survives and removes the cgroup."""
    folder = tmp_path / "subs"
    folder.mkdir()
    bomb = "import os, time\nfor _ in range(11):\n    try:\n        os.fork()\n    except OSError:\n        break\ntime.sleep(60)\n"
    stub = (ROOT / "book" / "assignments" / "sampler.md").read_text()
    (folder / "bomb.md").write_text(stub.replace("import numpy as np", bomb + "import numpy as np", 1))
    limit = Limits().processes

    def system_processes() -> int:
        return sum(1 for p in os.listdir("/proc") if p.isdigit())

    before = system_processes()
    proc = subprocess.Popen([sys.executable, "-m", "dptutor", "grade", "sampler", str(folder), "--csv",
                             str(tmp_path / "s.csv"), "--timeout", "2", "--total-timeout", "60"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_cgroup, peak_system = 0, 0
    while proc.poll() is None:
        peak_cgroup = max([peak_cgroup, *_cgroup_counts()])
        peak_system = max(peak_system, system_processes())
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    print("processes before", before, "peak", peak_system, "cgroup peak", peak_cgroup)
    assert limit * 0.8 <= peak_cgroup <= limit, peak_cgroup        # the bomb ran, and hit the limit
    assert peak_system <= before + limit + 150                     # margin: other users of this machine
    rows = batch.read_csv(tmp_path / "s.csv", "sampler")
    assert [r[0] for r in rows] == ["bomb.md"] and float(rows[0][4]) == 0
    # Its own cgroups are gone (their names carry the grader's process id; graders that other
    # programs run on this machine at the same time are not this test's).
    mine = [p for p in _cgroup_files() if f"-grade-{proc.pid}-" in str(p)]
    assert not mine and "cgroup" not in err, (mine, err)


def test_submissions_with_the_same_stem_get_different_feedback_files() -> None:
    plain = textsafe.feedback_name("a.md")
    shared = {textsafe.feedback_name(name, shared=True) for name in ("a.md", "a.ipynb")}
    assert plain == "a.txt" and len(shared) == 2 and plain not in shared


def _cpu_controlled() -> bool:
    """Whether the grader can give each sandbox a CPU share of its own here (root, a writable cgroup cpu controller)."""
    found = cgroups.parents()
    if found is None:
        return False
    if "v2" in found:
        return "cpu" in Path(found["v2"], "cgroup.subtree_control").read_text().split()
    return "cpu" in found


BUSY = r'''
import os, subprocess, sys, time
# 8 busy helpers, each in a session of its own (Linux's autogroups would give each session its own share)
helpers = [subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"],
                            start_new_session=True) for _ in range(8)]
print("started", flush=True)
time.sleep(30)
'''


@needs_bwrap
@pytest.mark.skipif(not _cpu_controlled(), reason="needs root and a writable cgroup cpu controller (v1 or v2)")
def test_every_process_of_a_sandbox_shares_one_cpu_cgroup(tmp_path: Path) -> None:
    """Round 3, finding 5: 48 busy processes in separate sessions starved a neighbour graded beside them. Each
    sandbox now runs in a cpu cgroup of its own, which the scheduler treats as one: whatever a submission
    starts, new sessions included, stays in that group (and shares the CPU equally with the neighbour's)."""
    box = find_sandbox("bwrap")
    work = tmp_path / "work"
    work.mkdir()
    procs = cgroups.create("busy-test", box.limits)
    try:
        cpu = [p for p in procs if "/cpu/" in p or "/cpu," in p] or \
              [p for p in procs if "cpu" in Path(p).with_name("cgroup.controllers").read_text().split()]
        assert cpu, procs
        cmd = box.command(str(work / "k.json"), str(work), str(work), "busy-test")
        cmd = cmd[:cmd.index(sandbox.interpreter(), cmd.index("--")) + 1] + ["-c", BUSY]
        proc = subprocess.Popen(cgroups.wrap(procs, cmd), stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "started"
            members = [int(p) for p in Path(cpu[0]).read_text().split()]
            sessions = set()
            for pid in members:
                try:
                    sessions.add(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
                except OSError:
                    pass
            assert len(members) >= 10 and len(sessions) >= 8, (members, sessions)  # bwrap, init, script, 8 helpers
        finally:
            proc.kill()
            proc.wait()
    finally:
        cgroups.remove("busy-test")
    assert not any(Path(p).parent.exists() for p in procs)


# 48 busy processes, each in a session of its own (os.setsid defeats Linux's per-session autogroups),
# started by the first cell and left running behind it.
STARVE = ("import os\nfor _ in range(48):\n    if os.fork() == 0:\n        os.setsid()\n        while True:\n"
          "            pass\n")


@needs_bwrap
def test_a_submission_that_starves_its_neighbour_without_cgroups_stops_at_its_own_cpu_time(tmp_path: Path) -> None:
    """Round 3, finding 5, where the grader makes no cgroup (not root): 48 busy processes in separate sessions
    made a correct notebook graded beside them miss its (wall-clock) time limit and score 0.  The time limits
    now count each sandbox's own CPU time: the hostile submission uses up its own budget within seconds and
    is stopped, and its neighbour, slowed down but not charged for it, gets its full score."""
    subs = tmp_path / "subs"
    subs.mkdir()
    solution = (ROOT / "book" / "assignments" / "instructor" / "sampler.md").read_text(encoding="utf-8")
    stub = (ROOT / "book" / "assignments" / "sampler.md").read_text(encoding="utf-8")
    (subs / "correct.md").write_text(solution, encoding="utf-8")
    hostile = stub.replace("import numpy as np", STARVE + "import numpy as np", 1)
    assert hostile != stub
    (subs / "hostile.md").write_text(hostile, encoding="utf-8")
    env = {**os.environ, cgroups.NO_CGROUPS_VARIABLE: "1"}  # the path of a grader that is not root
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dptutor", "grade", "sampler", str(subs), "--csv",
                             str(tmp_path / "s.csv"), "--workers", "2", "--timeout", "10", "--total-timeout", "10"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    used_cgroups = False
    while proc.poll() is None:
        used_cgroups = used_cgroups or any(f"-grade-{proc.pid}-" in str(p) for p in _cgroup_files())
        time.sleep(0.2)
    out, err = proc.communicate(timeout=60)
    print(f"graded in {time.monotonic() - started:.1f} s")
    assert proc.returncode == 0, out + err
    assert not used_cgroups
    with open(tmp_path / "s.csv", newline="", encoding="utf-8") as fh:
        rows = {row["file"]: row for row in csv.DictReader(fh)}
    assert rows["correct.md"]["total"] == rows["correct.md"]["max"], rows["correct.md"]
    assert rows["hostile.md"]["total"] == "0", rows["hostile.md"]
    assert "total time limit of 10 s of CPU time" in rows["hostile.md"]["messages"], rows["hostile.md"]
