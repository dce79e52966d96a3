"""Benchmark: ``python -m dptutor grade`` time per notebook, this version against an earlier one.

The earlier grader (by default the last commit before ``dptutor.grading`` became a package, which
ran the hidden checks inside the student's kernel) is extracted with ``git archive`` into a
temporary folder and run from there (``PYTHONPATH``), on the same folders: for each assignment, its
reference solution and its blank notebook.  Runs alternate between the two versions, ``--rounds``
times, and the best time per assignment is kept, so that load from other processes hits both alike.

Exit status 1 if the new grader takes more than ``--max-ratio`` (default 2) times as long per
notebook as the old one on any assignment.

    .venv/bin/python benchmarks/bench_grading.py [--old 7fe6ffe] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ("sampler", "mechanism", "audit")


def extract(commit: str, target: Path) -> None:
    archive = subprocess.run(["git", "archive", commit, "dptutor"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)


def grade(pythonpath: Path | None, assignment: str, folder: Path, csv_path: Path) -> float:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dptutor", "grade", assignment, str(folder), "--csv",
                           str(csv_path)] + (["--regrade"] if pythonpath is None else []),
                          cwd=folder.parent, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"grading {assignment} failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="7fe6ffe", help="the commit to compare with (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default: %(default)s)")
    parser.add_argument("--max-ratio", type=float, default=2.0)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from dptutor.grading import ASSIGNMENTS as REGISTRY

    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        tmp_path = Path(tmp)
        old = tmp_path / "old"
        old.mkdir()
        extract(args.old, old)
        where = subprocess.run([sys.executable, "-c", "import dptutor.grading as g; print(g.__file__)"], cwd=tmp,
                               env={**os.environ, "PYTHONPATH": str(old)}, capture_output=True, text=True).stdout.strip()
        if not where.startswith(str(old)):
            raise SystemExit(f"the old grader is not the one imported ({where})")
        folders = {}
        for name in ASSIGNMENTS:
            folder = tmp_path / name
            folder.mkdir()
            notebook = REGISTRY[name].notebook
            (folder / "reference.md").write_text((ROOT / "book/assignments/instructor" / notebook).read_text())
            (folder / "blank.md").write_text((ROOT / "book/assignments" / notebook).read_text())
            folders[name] = folder
        best = {(v, name): float("inf") for v in ("old", "new") for name in ASSIGNMENTS}
        for _ in range(args.rounds):
            for name in ASSIGNMENTS:
                for version, path in (("old", old), ("new", None)):
                    csv_path = tmp_path / f"{version}-{name}.csv"
                    csv_path.unlink(missing_ok=True)
                    best[version, name] = min(best[version, name], grade(path, name, folders[name], csv_path))
    print(f"{'assignment':<12}{'old s/notebook':>16}{'new s/notebook':>16}{'ratio':>8}")
    worst = 0.0
    for name in ASSIGNMENTS:
        o, n = best["old", name] / 2, best["new", name] / 2
        worst = max(worst, n / o)
        print(f"{name:<12}{o:>16.2f}{n:>16.2f}{n / o:>8.2f}")
    print(f"worst ratio {worst:.2f} (limit {args.max_ratio:g})")
    return 0 if worst <= args.max_ratio else 1


if __name__ == "__main__":
    raise SystemExit(main())
