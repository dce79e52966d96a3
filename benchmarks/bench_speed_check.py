"""The sampler's speed check in the grader, quiet and on a busy machine: the time ratios it measures.

    .venv/bin/python benchmarks/bench_speed_check.py              # 3 rounds, quiet and with 3 busy processes
    .venv/bin/python benchmarks/bench_speed_check.py --busy 0 6   # other loads

The sampler assignment's question 3 times the student's ``laplace_inverse_cdf`` on 10^6 fresh uniforms against
dptutor's reference and fails it above ``SAMPLER_TIMING_RATIO`` times the reference (a Python loop).  This grades
three notebooks in the grader's sandbox (bubblewrap when it is installed, else none): the instructor notebook's
vectorised answer, the fastest loop (``math.log`` over ``u.tolist()``) and a loop over ``np.ndenumerate``; each
``--rounds`` times with no other load and with ``--busy`` processes spinning on the CPU, and prints the ratio the
check measured each time.  The check is sound on a busy machine when every loop stays above the threshold and
every vectorised answer below it, whatever the load.

The ratio is read from the check's finding (its message states it), by wrapping the sampler's speed finding in
this process: the grader runs the checks here, the kernel only answers calls.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dptutor.assignments.sampler as sampler  # noqa: E402
from dptutor.course.executor import grade_notebook  # noqa: E402

LOOPS = {
    "tolist loop": """import math


def laplace_inverse_cdf(u, mu=0.0, b=1.0):
    u = np.asarray(u, dtype=float)
    if not (np.isfinite(b) and b > 0) or not np.all((u > 0) & (u < 1)):
        raise ValueError("u must lie in (0, 1) and b > 0")
    out = [mu + b * math.log(2 * x) if x < 0.5 else mu - b * math.log(2 * (1 - x)) for x in u.ravel().tolist()]
    return np.array(out).reshape(u.shape)[()]""",
    "ndenumerate loop": """import math


def laplace_inverse_cdf(u, mu=0.0, b=1.0):
    u = np.asarray(u, dtype=float)
    if not (np.isfinite(b) and b > 0) or not np.all((u > 0) & (u < 1)):
        raise ValueError("u must lie in (0, 1) and b > 0")
    out = np.empty(u.shape)
    for i, v in np.ndenumerate(u):
        out[i] = mu + b * math.log(2 * v) if v < 0.5 else mu - b * math.log(2 * (1 - v))
    return out if out.ndim else out[()]""",
}


def _spin() -> None:
    while True:
        pass


def _notebooks(folder: Path) -> dict[str, Path]:
    base = (ROOT / "book" / "assignments" / "instructor" / "sampler.md").read_text(encoding="utf-8")
    paths = {"vectorised": folder / "vectorised.md"}
    paths["vectorised"].write_text(base, encoding="utf-8")
    for name, code in LOOPS.items():
        paths[name] = folder / f"{name.replace(' ', '_')}.md"
        paths[name].write_text(base + "\n```{code-cell} ipython3\n" + code + "\n```\n", encoding="utf-8")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="gradings per notebook and load (default %(default)s)")
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 3], help="spinning processes (default 0 3)")
    parser.add_argument("--notebooks", nargs="+", default=["vectorised", *LOOPS], choices=["vectorised", *LOOPS])
    parser.add_argument("--verbose", action="store_true", help="print each speed finding")
    args = parser.parse_args(argv)
    seen: list[str] = []
    original = sampler._speed_finding

    def wrapped(*a, **k):
        finding = original(*a, **k)
        seen.append(finding.message)
        return finding

    sampler._speed_finding = wrapped
    box = "bwrap" if shutil.which("bwrap") else "none"
    print(f"sandbox {box}; threshold {sampler.SAMPLER_TIMING_RATIO:g} x the reference")
    print("| notebook | busy processes | ratios measured | verdicts |\n| --- | --- | --- | --- |")
    worst = {"vectorised": 0.0, "loop": float("inf")}
    with tempfile.TemporaryDirectory() as tmp:
        paths = _notebooks(Path(tmp))
        for busy in args.busy:
            spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
            for p in spinners:
                p.start()
            try:
                for name, path in paths.items():
                    if name not in args.notebooks:
                        continue
                    ratios, verdicts = [], []
                    for _ in range(args.rounds):
                        seen.clear()
                        result = grade_notebook(path, "sampler", sandbox=box, timeout=60, total_timeout=600)
                        ratio = [float(m.group(1)) for m in map(re.compile(r"([\d.]+) ?(?:x|times) the reference").search, seen) if m]
                        ratios += ratio[-1:]
                        if args.verbose:
                            print("   ", seen[-1][:150], flush=True)
                        verdicts.append(dict(map(tuple, result.checks.get("q3", []))).get("speed", "-"))
                    kind = "vectorised" if name == "vectorised" else "loop"
                    worst[kind] = max(worst[kind], *ratios) if kind == "vectorised" else min(worst[kind], *ratios)
                    print(f"| {name} | {busy} | {', '.join(f'{r:g}' for r in ratios)} | "
                          f"{', '.join('pass' if v is True else 'fail' if v is False else str(v) for v in verdicts)} |",
                          flush=True)
            finally:
                for p in spinners:
                    p.terminate()
    if worst["vectorised"] > 0:
        print(f"largest vectorised ratio {worst['vectorised']:g}: margin "
              f"{sampler.SAMPLER_TIMING_RATIO / worst['vectorised']:.2f} below the threshold")
    if worst["loop"] < float("inf"):
        print(f"smallest loop ratio {worst['loop']:g}: margin {worst['loop'] / sampler.SAMPLER_TIMING_RATIO:.2f} above it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
