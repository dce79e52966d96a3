"""Per-cell execution times of the book's chapters: the guard behind "no cell runs longer than 20 s".

    python benchmarks/cell_times.py book/stronger_audits.md book/floating_point.md   # execute and time
    python benchmarks/cell_times.py --all                                             # every chapter
    python benchmarks/cell_times.py _build/jupyter_execute/book/*.ipynb               # already executed

A MyST chapter (``.md``) is converted with jupytext and executed with nbclient, one kernel per chapter,
from the repository root with the repository on ``PYTHONPATH`` (so the kernel imports this checkout's
``dptutor``).  An ``.ipynb`` that already holds outputs is only read.  Either way, the duration of a cell
is the time between the kernel's ``execute_input`` and its ``execute_reply``, which nbclient records in
each cell's ``metadata.execution`` (``record_timing``).  The script prints the slowest cells and exits
with status 1 if one of them took longer than ``--limit`` seconds (default 20).

Wall times depend on the machine and its load: run it on a quiet machine to check the 20 s rule, and
compare cells within one run.  When it executes a chapter, the script also records the CPU time each cell
used in the kernel and in the kernel's finished child processes (``cpu`` column), which a loaded machine
inflates far less: on a shared machine, read the rule against that column.  ``--json FILE`` writes every
cell's times for later comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT_SECONDS = 20.0  # the guide's rule, on a quiet 2-core machine


@dataclass(frozen=True)
class CellTime:
    """The time one code cell took: ``chapter`` and the cell's position among its code cells (from 1)."""

    chapter: str
    cell: int
    seconds: float
    first_line: str
    cpu_seconds: float | None = None


def _timestamp(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"a cell's execution timestamp must be a string, got {value!r}")
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def cell_times(notebook: dict, chapter: str) -> list[CellTime]:
    """The duration of every timed code cell of an executed notebook (nbformat JSON as a dict).

    Cells without timing metadata (not executed, or executed by a client that does not record it) are
    skipped; a cell whose timestamps are malformed raises ``ValueError``.
    """
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError(f"{chapter}: not a notebook (no list of cells)")
    out = []
    code_cells = [c for c in notebook["cells"] if isinstance(c, dict) and c.get("cell_type") == "code"]
    for number, cell in enumerate(code_cells, 1):
        timing = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" not in timing or "shell.execute_reply" not in timing:
            continue
        seconds = (_timestamp(timing["shell.execute_reply"]) - _timestamp(timing["iopub.execute_input"])).total_seconds()
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        first = next((line for line in source.splitlines() if line.strip() and not line.startswith("#")), "")
        cpu = cell.get("metadata", {}).get("cell_times_cpu")
        out.append(CellTime(chapter, number, seconds, first[:70], float(cpu) if isinstance(cpu, (int, float)) else None))
    return out


# Run in the kernel before the chapter: CPU seconds (kernel + finished children) of every cell, in order.
_CPU_HOOK = """
def _cell_times_hooks():
    import resource, time
    cpu = []
    def now():
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + child.ru_utime + child.ru_stime
    def pre(info):
        cpu.append(-now())
    def post(result):
        if cpu and cpu[-1] < 0:  # a cell in progress (not the cell that registered the hooks)
            cpu[-1] += now()
    get_ipython().events.register("pre_run_cell", pre)
    get_ipython().events.register("post_run_cell", post)
    return cpu
_CELL_TIMES_CPU = _cell_times_hooks()
"""
_CPU_MARK = "CELL_TIMES_CPU="


def execute(path: Path, timeout: int) -> dict:
    """Execute a MyST chapter (or a notebook) with nbclient and return the executed notebook as a dict.

    Each code cell's CPU seconds are added to its metadata as ``cell_times_cpu``.
    """
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    notebook = jupytext.read(path) if path.suffix == ".md" else nbformat.read(path, as_version=4)
    env_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    os.environ["PYTHONPATH"] = env_path
    cells = notebook.cells
    notebook.cells = ([nbformat.v4.new_code_cell(_CPU_HOOK)] + cells
                      + [nbformat.v4.new_code_cell(f"print('{_CPU_MARK}' + repr(_CELL_TIMES_CPU[:-1]))")])
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    report = "".join(out.get("text", "") for out in notebook.cells[-1].outputs)
    cpu = json.loads(report.split(_CPU_MARK, 1)[1].strip()) if _CPU_MARK in report else []
    notebook.cells = cells
    for cell, seconds in zip([c for c in cells if c.cell_type == "code"], cpu):
        cell.metadata["cell_times_cpu"] = seconds
    return json.loads(nbformat.writes(notebook))


def chapters() -> list[Path]:
    """Every chapter of the table of contents that has code cells, in reading order."""
    import re

    toc = (ROOT / "_toc.yml").read_text()
    paths = [ROOT / f"{name}.md" for name in re.findall(r"file:\s*(\S+)", toc)]
    return [p for p in paths if p.exists() and "```{code-cell}" in p.read_text()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="chapters (.md) to execute or executed .ipynb to read")
    parser.add_argument("--all", action="store_true", help="execute every chapter of _toc.yml")
    parser.add_argument("--limit", type=float, default=LIMIT_SECONDS, help="seconds a cell may take (default 20)")
    parser.add_argument("--timeout", type=int, default=600, help="nbclient's per-cell timeout when executing")
    parser.add_argument("--top", type=int, default=10, help="how many of the slowest cells to print")
    parser.add_argument("--json", type=Path, help="write every cell's time to this file")
    args = parser.parse_args(argv)
    if args.limit <= 0 or args.top < 1 or args.timeout < 1:
        parser.error("--limit, --top and --timeout must be positive")
    paths = chapters() if args.all else args.paths
    if not paths:
        parser.error("give chapters or executed notebooks, or --all")
    times: list[CellTime] = []
    for path in paths:
        name = path.stem
        if path.suffix == ".ipynb":
            notebook = json.loads(path.read_text())
            wall = None
        else:
            start = time.perf_counter()
            notebook = execute(path, args.timeout)
            wall = time.perf_counter() - start
        found = cell_times(notebook, name)
        times += found
        total = sum(t.seconds for t in found)
        print(f"{name}: {len(found)} timed cells, {total:.1f} s in cells"
              + (f", {wall:.1f} s with kernel start" if wall is not None else ""), flush=True)
    slow = sorted(times, key=lambda t: t.seconds, reverse=True)
    print(f"\nslowest {min(args.top, len(slow))} cells (limit {args.limit:g} s):")
    print("   wall      cpu  chapter, code cell, first line")
    for t in slow[: args.top]:
        flag = "  OVER" if t.seconds > args.limit else ""
        cpu = "       -" if t.cpu_seconds is None else f"{t.cpu_seconds:6.1f} s"
        print(f"{t.seconds:6.1f} s  {cpu}  {t.chapter} cell {t.cell:2d}  {t.first_line}{flag}")
    if args.json:
        args.json.write_text(json.dumps([asdict(t) for t in times], indent=1))
    over = [t for t in times if t.seconds > args.limit]
    if over:
        print(f"\n{len(over)} cell(s) over {args.limit:g} s")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
