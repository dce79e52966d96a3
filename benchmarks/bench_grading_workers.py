"""Benchmark: ``python -m dptutor grade --workers 2`` against one worker, side by side in one run.

One folder holds ``--copies`` sampler submissions (half the reference solution, half the blank
notebook).  It is graded with ``--workers 1`` and ``--workers 2``, alternating ``--rounds`` times (so
that load from other processes hits both alike), each run regrading every submission in the sandbox
(bubblewrap, or ``--no-sandbox`` when it is missing).  Prints the wall time of each run, the best of
each mode, their ratio, and whether both modes gave the same scores.

    .venv/bin/python benchmarks/bench_grading_workers.py [--copies 6] [--rounds 2]

On an idle 2-core machine the ratio approaches 2; kernels start and stop in both modes alike.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def grade(folder: Path, csv_path: Path, workers: int) -> tuple[float, dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    flags = [] if shutil.which("bwrap") else ["--no-sandbox"]
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dptutor", "grade", "sampler", str(folder), "--csv", str(csv_path),
                           "--regrade", "--workers", str(workers), *flags], cwd=folder.parent, env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"grading with {workers} worker(s) failed:\n{proc.stdout}\n{proc.stderr}")
    with open(csv_path, newline="", encoding="utf-8") as fh:
        return elapsed, {row["file"]: row["total"] for row in csv.DictReader(fh)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    solution = (ROOT / "book" / "assignments" / "instructor" / "sampler.md").read_text(encoding="utf-8")
    blank = (ROOT / "book" / "assignments" / "sampler.md").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="dptutor-bench-workers-") as tmp:
        folder = Path(tmp) / "subs"
        folder.mkdir()
        for i in range(args.copies):
            (folder / f"s{i:02d}.md").write_text(solution if i % 2 == 0 else blank, encoding="utf-8")
        best = {1: float("inf"), 2: float("inf")}
        scores = {}
        for r in range(args.rounds):
            for workers in (1, 2):
                seconds, scores[workers] = grade(folder, Path(tmp) / f"w{workers}.csv", workers)
                best[workers] = min(best[workers], seconds)
                print(f"round {r + 1}: --workers {workers}: {seconds:.1f} s for {args.copies} submissions", flush=True)
        print(f"best: 1 worker {best[1]:.1f} s, 2 workers {best[2]:.1f} s; speed-up {best[1] / best[2]:.2f}x "
              f"on {os.cpu_count()} CPUs; same totals: {scores[1] == scores[2]}")
        return 0 if scores[1] == scores[2] else 1


if __name__ == "__main__":
    raise SystemExit(main())
