"""Benchmark: ``python -m dptutor grade`` time per notebook inside the sandbox against without it.

For each assignment, one folder holds its reference solution and its blank notebook.  The same
folders are graded with ``--sandbox bwrap`` and with ``--no-sandbox``, alternating between the two
``--rounds`` times (so that load from other processes hits both alike), and the best time per
assignment and mode is kept.  Prints seconds per notebook for both and their ratio.

Exit status 1 if the sandbox takes more than ``--max-ratio`` (default 1.2) times as long per notebook
as no sandbox on any assignment; 2 if bubblewrap is not installed.

    .venv/bin/python benchmarks/bench_grading.py [--rounds 3] [--assignments sampler mechanism]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {"sandbox": ["--sandbox", "bwrap"], "none": ["--no-sandbox"]}


def grade(mode: str, assignment: str, folder: Path, csv_path: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dptutor", "grade", assignment, str(folder), "--csv", str(csv_path),
                           "--regrade", *MODES[mode]], cwd=folder.parent, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"grading {assignment} ({mode}) failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from dptutor.assignments import ASSIGNMENTS as REGISTRY

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default: %(default)s)")
    parser.add_argument("--assignments", nargs="+", choices=sorted(REGISTRY), default=sorted(REGISTRY))
    parser.add_argument("--max-ratio", type=float, default=1.2)
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed: sudo apt-get install bubblewrap", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        tmp_path = Path(tmp)
        folders = {}
        for name in args.assignments:
            folder = tmp_path / name
            folder.mkdir()
            notebook = REGISTRY[name].notebook
            (folder / "reference.md").write_text((ROOT / "book/assignments/instructor" / notebook).read_text())
            (folder / "blank.md").write_text((ROOT / "book/assignments" / notebook).read_text())
            folders[name] = folder
        best = {(mode, name): float("inf") for mode in MODES for name in args.assignments}
        for r in range(args.rounds):
            for name in args.assignments:
                order = list(MODES) if r % 2 == 0 else list(MODES)[::-1]
                for mode in order:
                    seconds = grade(mode, name, folders[name], tmp_path / f"{mode}-{name}.csv")
                    best[mode, name] = min(best[mode, name], seconds)
    print(f"{'assignment':<12}{'no sandbox s/nb':>16}{'sandbox s/nb':>14}{'ratio':>8}")
    worst = 0.0
    for name in args.assignments:
        plain, boxed = best["none", name] / 2, best["sandbox", name] / 2
        worst = max(worst, boxed / plain)
        print(f"{name:<12}{plain:>16.2f}{boxed:>14.2f}{boxed / plain:>8.2f}")
    print(f"worst ratio {worst:.2f} (limit {args.max_ratio:g}; best of {args.rounds} interleaved rounds)")
    return 0 if worst <= args.max_ratio else 1


if __name__ == "__main__":
    raise SystemExit(main())
