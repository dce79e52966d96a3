"""Hostile submissions against the grader's operating-system sandbox (dptutor.course.sandbox, .runner).

Each attack is a notebook of the sampler assignment, graded by ``python -m dptutor grade`` in a
bubblewrap sandbox, in one folder with two victims (a correct and a blank notebook, named to be
graded after the attackers).  For every attack the tests assert its score (no more than its own
functions earn), that the grader survives, that the victims get exactly what they get when graded
alone, that no file outside the sandbox's work folder changed (a temporary instructor home, the
instructor's solutions, the other submissions, the repository's package and the Python
environment) and that no process a submission started outlives it.

The tests skip when bubblewrap is missing (``sudo apt-get install bubblewrap``; ``.ci/run``
installs it, so CI always runs them).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy
import pytest

from dptutor.course.sandbox import Limits
from helpers import ROOT
from test_grading import ASSIGNMENT_DIR, INSTRUCTOR_DIR

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap is not installed (sudo apt-get install bubblewrap); "
                                       ".ci/run installs it so CI runs these tests")

STUB = '    raise NotImplementedError("Questions 1-3")'
REFERENCE = '''    u = np.asarray(u, dtype=float)
    if not (np.isfinite(b) and b > 0) or not np.all((u > 0) & (u < 1)):
        raise ValueError("bad input")
    from dptutor.distributions import laplace_ppf
    return laplace_ppf(u, mu, b)'''
#: A number no other process on the machine passes to `sleep`: the helpers the attacks start.
SLEEP = str(86400 + secrets.randbelow(10**6))


def notebook(body: str = STUB, *cells: str) -> str:
    """The sampler template with ``body`` as the function and ``cells`` run after it (in order)."""
    text = (ASSIGNMENT_DIR / "sampler.md").read_text()
    assert STUB in text
    text = text.replace(STUB, body)
    return text + "".join(f"\n```{{code-cell}} ipython3\n{cell.strip()}\n```\n" for cell in cells)


def snapshot(*roots: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple]:
    """Every file and folder under ``roots``: kind, size, modification time and content digest."""
    out: dict[str, tuple] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            dirnames[:] = [d for d in dirnames if here / d not in skip and d != "__pycache__"]
            out[str(here)] = ("dir", sorted(dirnames), sorted(f for f in filenames if here / f not in skip))
            for f in filenames:
                p = here / f
                if p in skip:
                    continue
                st = p.lstat()
                digest = hashlib.sha1(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else ""
                out[str(p)] = (st.st_size, st.st_mtime_ns, digest)
    return out


def helpers_alive() -> list[str]:
    """Command lines of processes the attacks started that are still running."""
    alive = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if SLEEP.encode() in cmd:
                alive.append(cmd.replace(b"\0", b" ").decode(errors="replace"))
    return alive


def grade(folder: Path, csv_path: Path, home: Path, *extra: str, timeout: float = 600) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "dptutor", "grade", "sampler", str(folder), "--csv", str(csv_path),
                             "--timeout", "30", "--total-timeout", "120", *extra],
                            cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["file"]: row for row in csv.DictReader(fh)}


def grader_workdirs(*procs: subprocess.Popen) -> set[str]:
    """The work folders that the graders ``procs`` left in the temporary folder."""
    return {p.name for proc in procs for p in Path(tempfile.gettempdir()).glob(f"dptutor-grade-{proc.pid}-*")}


@pytest.fixture()
def instructor(tmp_path: Path) -> dict[str, Path]:
    """A temporary instructor: home (with solutions, a secret and an IPython folder), submissions, outputs."""
    home = tmp_path / "home"
    (home / "solutions").mkdir(parents=True)
    (home / "solutions" / "sampler.md").write_text((INSTRUCTOR_DIR / "sampler.md").read_text())
    (home / "secret.txt").write_text("the instructor's secret\n")
    (home / ".ipython" / "profile_default" / "startup").mkdir(parents=True)
    subs = home / "subs"
    subs.mkdir()
    return {"home": home, "subs": subs, "csv": home / "scores.csv"}


def attacks(inst: dict[str, Path]) -> dict[str, tuple[str, float]]:
    """name -> (notebook, what its own functions earn when checked honestly)."""
    home, subs, csv_path = inst["home"], inst["subs"], inst["csv"]
    package = Path(__import__("dptutor").__file__).parent
    solution = INSTRUCTOR_DIR / "sampler.md"
    write_everywhere = f'''
import os, sys, glob, numpy, dptutor
targets = [os.path.join(os.path.dirname(dptutor.__file__), "assignments", "kernel.py"),
           os.path.join(os.path.dirname(dptutor.__file__), "course", "evil.py"),
           os.path.join(os.path.dirname(numpy.__file__), "__init__.py"),
           os.path.join(os.path.dirname(numpy.__file__), "sitecustomize.py"),
           os.path.join(sys.prefix, "pyvenv.cfg"), {str(package / "__init__.py")!r}, {str(ROOT / "README.md")!r},
           {str(home / "secret.txt")!r}, {str(csv_path)!r}, {str(subs / "zz_victim_ref.md")!r}]
for t in targets:
    try:
        with open(t, "a") as fh:
            fh.write("\\nraise SystemExit('hostile')\\n")
    except OSError:
        pass
'''
    steal = f'''
import os
places = [{str(solution)!r}, {str(home)!r}, {str(subs)!r}, {str(INSTRUCTOR_DIR)!r}, "/root", "/home", os.path.expanduser("~")]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            places += open(f"/proc/{{pid}}/cmdline", "rb").read().decode(errors="ignore").split("\\0")
            places.append(os.readlink(f"/proc/{{pid}}/cwd"))
        except OSError:
            pass
def markdown_under(place):  # every .md file, hidden folders included; not into /proc, /sys or /dev (endless)
    if not os.path.isdir(place):
        yield place
        return
    for root, dirs, files in os.walk(place):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev")]
        yield from (os.path.join(root, f) for f in files if f.endswith(".md"))
stolen, walked = None, []
for place in places:
    place = os.path.abspath(place) if place else ""
    if not place or any(place == w or place.startswith(w.rstrip("/") + "/") for w in walked):
        continue  # already searched (the sandbox's command line names "/" among its mounts)
    walked.append(place)
    for f in markdown_under(place):
        try:
            text = open(f).read()
        except (OSError, UnicodeDecodeError):
            continue
        if "laplace_ppf(u, mu, b)" in text:
            stolen = f
if stolen:
    def laplace_inverse_cdf(u, mu=0.0, b=1.0):
        from dptutor.distributions import laplace_ppf
        u = np.asarray(u, dtype=float)
        if not (np.isfinite(b) and b > 0) or not np.all((u > 0) & (u < 1)):
            raise ValueError("bad input")
        return laplace_ppf(u, mu, b)
'''
    startup = f'''
import os
evil = "import builtins\\nbuiltins.laplace_inverse_cdf = lambda *a, **k: 0\\nraise SystemExit('startup')\\n"
for base in [os.environ.get("IPYTHONDIR", ""), os.path.expanduser("~/.ipython"), {str(home / ".ipython")!r},
             "/root/.ipython", "/tmp/.ipython"]:
    d = os.path.join(base, "profile_default", "startup")
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "00-evil.py"), "w") as fh:
            fh.write(evil)
    except OSError:
        pass
'''
    escape = f'''
import os, subprocess, sys
helper = """
import os, signal, time
end = time.time() + 90
kernel = os.getppid()  # spared: interrupting its own kernel only costs the attacker (up to its time limit)
while time.time() < end:
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in (os.getpid(), kernel):
            try:
                os.kill(int(pid), signal.SIGINT)
            except OSError:
                pass
    for path in [{str(csv_path)!r}, {str(subs / "zz_victim_ref.md")!r}]:
        try:
            with open(path, "w") as fh:
                fh.write("file,q1,q2,q3,total,messages\\\\nzz_victim_ref.md,0,0,0,0,forged\\\\n")
        except OSError:
            pass
    time.sleep(0.2)
# {SLEEP}
"""
subprocess.Popen([sys.executable, "-c", helper], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(["sleep", "{SLEEP}"], start_new_session=True)
if os.fork() == 0:  # a double-forked daemon
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{SLEEP}"])
    os._exit(0)
'''
    big_files = f'''
import os
chunk = b"x" * (1 << 20)
for target in ["/tmp/big", os.path.expanduser("~/big"), "big", {str(home / "big")!r}, {str(subs / "big.md")!r},
               "/dev/shm/big", "/var/tmp/big"]:
    try:
        with open(target, "wb") as fh:
            for _ in range(512):
                fh.write(chunk)
    except OSError:
        pass
'''
    forks = f'''
import os, subprocess, numpy as np
children = []
for _ in range(300):
    try:
        children.append(subprocess.Popen(["sleep", "{SLEEP}"], start_new_session=True))
    except OSError:
        break
try:
    hog = np.ones(2**31)   # 16 GiB: over the sandbox's memory limit
except MemoryError:
    hog = None
'''
    kill = '''
import os, signal
for pid in (os.getppid(), 1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
'''
    return {
        "attack_write.md": (notebook(STUB, write_everywhere), 0.0),
        "attack_steal.md": (notebook(STUB, steal), 0.0),
        "attack_startup.md": (notebook(STUB, startup), 0.0),
        "attack_escape.md": (notebook(REFERENCE, escape), 4.0),
        "attack_big_files.md": (notebook(STUB, big_files), 0.0),
        "attack_forks.md": (notebook(STUB, forks), 0.0),
        "attack_kill.md": (notebook(REFERENCE, kill), 4.0),
    }


def test_hostile_submissions_gain_nothing_and_touch_nothing(instructor: dict[str, Path], record_property) -> None:
    home, subs, csv_path = instructor["home"], instructor["subs"], instructor["csv"]
    for name, (text, _) in attacks(instructor).items():
        (subs / name).write_text(text)
    victims = {"zz_victim_ref.md": notebook(REFERENCE), "zz_victim_blank.md": notebook(STUB)}
    for name, text in victims.items():
        (subs / name).write_text(text)
    alone_home = home.parent / "alone"
    (alone_home / "subs").mkdir(parents=True)
    for name, text in victims.items():
        (alone_home / "subs" / name).write_text(text)

    package = Path(__import__("dptutor").__file__).parent
    environment = [Path(numpy.__file__).parent / "__init__.py", Path(sys.prefix) / "pyvenv.cfg"]
    outputs = (csv_path, csv_path.with_name(f".{csv_path.name}.inflight"))
    before = snapshot(home, package, INSTRUCTOR_DIR, skip=outputs)
    before_env = {str(p): p.stat().st_mtime_ns for p in environment}
    before_ipython = snapshot(Path.home() / ".ipython") if (Path.home() / ".ipython").exists() else {}
    started = time.monotonic()
    attacked = grade(subs, csv_path, home)
    alone = grade(alone_home / "subs", alone_home / "scores.csv", alone_home)
    out, err = attacked.communicate(timeout=900)
    alone_out, alone_err = alone.communicate(timeout=900)
    print(f"graded {len(list(subs.iterdir()))} hostile-folder notebooks in {time.monotonic() - started:.0f} s")
    record_property("timeline", f"the attacked folder:\n{out}\nalone:\n{alone_out}")
    assert attacked.returncode == 0, out + err
    assert alone.returncode == 0, alone_out + alone_err

    got = rows(csv_path)
    assert sorted(got) == sorted(p.name for p in subs.iterdir()), got.keys()
    for name, (_, honest) in attacks(instructor).items():
        assert float(got[name]["total"]) <= honest, (name, got[name])
    reference_alone = rows(alone_home / "scores.csv")
    def visible(row: dict[str, str]) -> dict[str, str]:  # the record differs by its fresh grading seeds only
        return {k: v for k, v in row.items() if k != "record"}

    for name in victims:  # exactly what they get alone
        assert visible(got[name]) == visible(reference_alone[name]), (name, got[name], reference_alone[name])
    assert float(got["zz_victim_ref.md"]["total"]) == 4.0 and float(got["zz_victim_blank.md"]["total"]) == 0.0

    # Nothing outside the sandbox's work folder changed; no work folder is left; no helper survives.
    assert snapshot(home, package, INSTRUCTOR_DIR, skip=outputs) == before
    assert {str(p): p.stat().st_mtime_ns for p in environment} == before_env
    if before_ipython:
        assert snapshot(Path.home() / ".ipython") == before_ipython
    assert not (Path("/tmp/.ipython").exists() and any(Path("/tmp/.ipython").rglob("00-evil.py")))
    assert grader_workdirs(attacked, alone) == set()
    time.sleep(0.5)
    assert helpers_alive() == []


def test_ctrl_c_during_a_cell_stops_grading_and_keeps_finished_rows(instructor: dict[str, Path]) -> None:
    home, subs, csv_path = instructor["home"], instructor["subs"], instructor["csv"]
    (subs / "s0.md").write_text(notebook(STUB))
    (subs / "s1.md").write_text(notebook(STUB, f"import subprocess, time\nsubprocess.Popen(['sleep', '{SLEEP}'], "
                                               "start_new_session=True)\ntime.sleep(60)"))
    (subs / "s2.md").write_text(notebook(STUB))
    proc = grade(subs, csv_path, home)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("grading s1.md"):
            break
    deadline = time.monotonic() + 60
    while not helpers_alive() and time.monotonic() < deadline:  # the cell with the sleep runs now
        time.sleep(0.2)
    assert helpers_alive(), "the notebook's cell never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(lines) + out + err
    assert "interrupted: 1 submission(s) graded" in err and "Traceback" not in err, err
    assert list(rows(csv_path)) == ["s0.md"]
    time.sleep(0.5)
    assert helpers_alive() == [] and grader_workdirs(proc) == set()


HOSTILE_NAMES = [" leading space.md", "back\\slash.md", "quo\"te's.md", "=HYPERLINK(1).md", "-2+3.md", "@SUM.md",
                 "new\nline\n4 - 4 points.md", "a" * 252 + ".md", "\udcff\udcfebytes.md"]


def test_any_file_name_is_graded_and_written_safely(instructor: dict[str, Path]) -> None:
    home, subs, csv_path = instructor["home"], instructor["subs"], instructor["csv"]
    blank = notebook(STUB)
    for name in HOSTILE_NAMES:
        (subs / name).write_text(blank)
    feedback = home / "feedback"
    proc = grade(subs, csv_path, home, "--feedback", str(feedback))
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, out + err
    with open(csv_path, newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))[1:]
    names = [r[0] for r in table]
    assert len(names) == len(HOSTILE_NAMES) and all(float(r[4]) == 0 for r in table)
    # No cell starts a formula; the escaped names are the file names behind a quote.
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for r in table for cell in r)
    assert "'=HYPERLINK(1).md" in names and "'-2+3.md" in names and "'@SUM.md" in names
    assert " leading space.md" in names and "back\\slash.md" in names and "new\nline\n4 - 4 points.md" in names
    assert "\\xff\\xfebytes.md" in names
    # One feedback file per submission; a name cannot forge lines in it.
    reports = [p.read_text(encoding="utf-8") for p in feedback.iterdir()]
    assert len(reports) == len(HOSTILE_NAMES) and all(len(p.name.encode()) <= 255 for p in feedback.iterdir())
    for text in reports:
        assert [line for line in text.splitlines() if line.endswith(" points")] == [text.splitlines()[0]]
    # A rerun skips every one of them.
    proc = grade(subs, csv_path, home)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "0 submission(s) graded" in out, out + err


def test_malformed_notebooks_are_unreadable_not_crashes(instructor: dict[str, Path]) -> None:
    import nbformat
    import jupytext

    home, subs, csv_path = instructor["home"], instructor["subs"], instructor["csv"]
    nb = jupytext.reads((INSTRUCTOR_DIR / "sampler.md").read_text(), fmt="md:myst")
    for cell in nb.cells:
        cell.metadata["tags"] = None
    (subs / "tags_null.ipynb").write_text(nbformat.writes(nb))
    (subs / "invalid_json.ipynb").write_text('{"cells": [')
    (subs / "nbformat_99.ipynb").write_text(json.dumps({"nbformat": 99, "nbformat_minor": 0, "metadata": {}, "cells": []}))
    (subs / "cells_not_a_list.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": 3}))
    (subs / "binary.ipynb").write_bytes(bytes(range(256)) * 4)
    (subs / "link.md").symlink_to(INSTRUCTOR_DIR / "sampler.md")
    proc = grade(subs, csv_path, home)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    got = rows(csv_path)
    assert float(got["tags_null.ipynb"]["total"]) == 4.0, got["tags_null.ipynb"]
    for name in ("invalid_json.ipynb", "nbformat_99.ipynb", "cells_not_a_list.ipynb", "binary.ipynb", "link.md"):
        assert float(got[name]["total"]) == 0 and "could not read the notebook" in got[name]["messages"], got[name]
        assert "stopped abruptly" not in got[name]["messages"]


def test_an_output_flood_does_not_raise_the_graders_memory(tmp_path: Path) -> None:
    """A 40 MiB flood of printed lines and one 40 MiB message (over the 32 MiB a message may have): the grader
    keeps at most a capped part of the output, so its peak grows by less than half the flood (400 MiB raised it
    by about 1.3 GB before the cap; with the cap, 264 MiB raised it by under 1 MiB). The baseline is the same
    grading of a notebook that prints nothing, in a fresh process."""
    script = ("import resource, sys\nfrom dptutor.course.executor import grade_notebook\n"
              "r = grade_notebook(sys.argv[1], 'sampler', timeout=120, total_timeout=300)\n"
              "print(r.total, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")

    def peak_mib(name: str, *cells: str) -> int:
        path = tmp_path / name
        path.write_text(notebook(STUB, *cells))
        proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr
        total, peak_kib = proc.stdout.split()[-2:]
        assert float(total) == 0
        return int(peak_kib) >> 10

    quiet = peak_mib("quiet.md", "x = 1")
    assert Limits().message < 40 << 20  # the single message below is one the grader must drop
    flood = peak_mib("flood.md", "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(40):\n    print(chunk)",
                     "print('y' * (40 << 20))")
    assert flood - quiet < 40, f"the grader peaked at {flood} MiB, {flood - quiet} MiB above a quiet notebook's {quiet}"


def test_grade_refuses_without_a_sandbox_and_warns_with_no_sandbox(instructor: dict[str, Path]) -> None:
    home, subs, csv_path = instructor["home"], instructor["subs"], instructor["csv"]
    (subs / "s0.md").write_text(notebook(STUB))
    env = {**os.environ, "PATH": str(home), "PYTHONPATH": str(ROOT), "HOME": str(home)}
    cmd = [sys.executable, "-m", "dptutor", "grade", "sampler", str(subs), "--csv", str(csv_path)]
    refused = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "sudo apt-get install bubblewrap" in refused.stderr, refused.stderr
    assert not csv_path.exists()
    trusted = subprocess.run(cmd + ["--no-sandbox"], env=env, capture_output=True, text=True, timeout=300)
    assert trusted.returncode == 0 and "warning: --no-sandbox" in trusted.stderr, trusted.stderr
    assert "WITHOUT a sandbox" in rows(csv_path)["s0.md"]["messages"]


def test_a_killed_grader_takes_its_sandbox_along_and_the_next_run_cleans_up(instructor: dict[str, Path]) -> None:
    home, subs, csv_path = instructor["home"], instructor["subs"], instructor["csv"]
    (subs / " \\=s0.md").write_text(notebook(STUB, f"import subprocess, time\nsubprocess.Popen(['sleep', '{SLEEP}'], "
                                                     "start_new_session=True)\ntime.sleep(60)"))
    proc = grade(subs, csv_path, home)
    deadline = time.monotonic() + 120
    while not helpers_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert helpers_alive(), "the notebook's cell never started"
    proc.kill()  # SIGKILL: no clean-up code of the grader runs
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while helpers_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert helpers_alive() == []  # --die-with-parent: the sandbox died with the grader
    assert grader_workdirs(proc)  # its work folder is left behind ...
    rerun = grade(subs, csv_path, home)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out + err
    assert grader_workdirs(proc, rerun) == set()  # ... until the next run deletes it
    row = rows(csv_path)[" \\=s0.md"]
    assert "stopped abruptly" in row["messages"] and float(row["total"]) == 0
