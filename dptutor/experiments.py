"""The paper-scale reproduction of Habernal (ACL 2022), Section 5 / Figure 2, and footnote 7.

:func:`run_grid` audits every (mechanism, epsilon, n) cell of a grid with
:func:`dptutor.audit.estimate_loss` (or fills it from :func:`dptutor.audit.exact_loss`) and returns
tidy :class:`GridRow` rows.  Given an output folder it also keeps ``results.csv`` (one row per
cell: counts, loss, 95% lower bound, exact loss, per-cell seed and trials) and ``results.json``
(nested ``{mechanism: {epsilon: {n: loss}}}`` like the authors' file) up to date after every
cell, each written atomically; a rerun skips the cells already there with the same trials and
seed, so an interrupted run resumes where it stopped.

:func:`repeat_loss` repeats one cell over seeds 0, 1, ... (the paper's footnote 7).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import hashlib
import io
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from dptutor import audit
from dptutor.audit import AuditResult, estimate_loss, exact_loss
from dptutor.mechanisms import MECHANISMS, Mechanism

__all__ = [
    "PAPER_MECHANISMS",
    "PAPER_EPSILONS",
    "PAPER_DIMS",
    "PAPER_TRIALS",
    "PAPER_SEED",
    "GridRow",
    "RepeatResult",
    "cell_seed",
    "epsilon_key",
    "run_grid",
    "rows_to_nested",
    "read_rows_csv",
    "write_results",
    "repeat_loss",
    "atomic_write_text",
    "save_figure",
]

#: The paper's grid (Figure 2 and the authors' ``results.json``).
PAPER_MECHANISMS: tuple[str, ...] = tuple(MECHANISMS)
PAPER_EPSILONS: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
PAPER_DIMS: tuple[int, ...] = (1, 2, 8, 32, 64, 128)
PAPER_TRIALS: int = 10_000_000
PAPER_SEED: int = 1234

RESULTS_JSON = "results.json"
_FILE_MODE = 0o644  # mkstemp creates 0600 files; results are meant to be shared
RESULTS_CSV = "results.csv"

CSV_COLUMNS: tuple[str, ...] = (
    "mechanism",
    "epsilon",
    "n",
    "trials",
    "count_d0_y0",
    "count_d0_y1",
    "count_d1_y0",
    "count_d1_y1",
    "loss",
    "lower_bound_95",
    "exact_loss",
    "seed",
    "seconds",
    "finished_at",
)


@dataclass(frozen=True)
class GridRow:
    """One cell of the grid.

    ``trials`` is per dataset; ``counts`` is ``(c00, c01, c10, c11)`` with ``c_dy`` as in
    :class:`dptutor.audit.AuditResult`.  Rows filled from the closed form (``exact=True``) have
    ``trials == 0``, ``counts``, ``seed`` and ``lower_bound_95`` set to ``None`` and
    ``loss == exact_loss``.  ``exact_loss`` is ``None`` for a mechanism that is not built in.
    ``seconds`` is the wall time the cell took and ``finished_at`` an ISO timestamp (UTC).
    """

    mechanism: str
    epsilon: float
    n: int
    trials: int
    loss: float
    counts: tuple[int, int, int, int] | None = None
    lower_bound_95: float | None = None
    exact_loss: float | None = None
    seed: int | None = None
    seconds: float | None = None
    finished_at: str | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """``(mechanism, epsilon_key(epsilon), n)``: identifies the cell."""
        return self.mechanism, epsilon_key(self.epsilon), self.n

    @property
    def is_exact(self) -> bool:
        return self.trials == 0

    def audit_result(self) -> AuditResult:
        """The Monte Carlo row as an :class:`AuditResult` (for its bounds and summary)."""
        if self.counts is None:
            raise ValueError("an exact row has no counts")
        c = self.counts
        return AuditResult.from_counts(
            [[c[0], c[1]], [c[2], c[3]]], n=self.n, epsilon=self.epsilon, seed=self.seed, mechanism=self.mechanism
        )


@dataclass(frozen=True)
class RepeatResult:
    """Losses of one cell over seeds ``first_seed, first_seed + 1, ...`` (footnote 7).

    ``std`` is the population standard deviation (``ddof=0``, as ``numpy.std``); ``exact`` the
    closed form for a built-in mechanism.
    """

    mechanism: str
    n: int
    epsilon: float
    trials: int
    seeds: tuple[int, ...]
    losses: tuple[float, ...]
    exact: float | None = None
    mean: float = field(init=False)
    std: float = field(init=False)

    def __post_init__(self) -> None:
        arr = np.asarray(self.losses, dtype=np.float64)
        if np.isinf(arr).any():
            mean = std = math.inf
        else:
            mean, std = float(arr.mean()), float(arr.std())
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)

    def __str__(self) -> str:
        exact = "" if self.exact is None else f"; exact loss {self.exact:.6g}"
        return (
            f"{self.mechanism} n={self.n} epsilon={self.epsilon:g}: {len(self.losses)} runs of "
            f"{self.trials} trials (seeds {self.seeds[0]}..{self.seeds[-1]}): "
            f"mean loss {self.mean:.6g}, std {self.std:.3g}{exact}"
        )


# ---------------------------------------------------------------------------------------------
# keys, seeds, validation
# ---------------------------------------------------------------------------------------------


def epsilon_key(epsilon: float) -> str:
    """The JSON key of an epsilon as in the authors' file: ``repr(float(epsilon))`` ("0.1", "1.0")."""
    return repr(float(epsilon))


def cell_seed(seed: int, mechanism: str, epsilon: float, n: int) -> int:
    """A 64-bit seed for one cell, derived deterministically from the run's ``seed`` and the cell.

    SHA-256 of ``"seed|mechanism|epsilon|n"``: stable across platforms, Python versions and grid
    shapes (adding a cell never changes another cell's seed).
    """
    text = f"{int(seed)}|{mechanism}|{epsilon_key(epsilon)}|{int(n)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _resolve_mechanisms(mechanisms: Iterable[str] | Mapping[str, Mechanism]) -> dict[str, Mechanism]:
    if isinstance(mechanisms, str):
        raise TypeError("mechanisms must be a sequence of names or a mapping name -> mechanism, not a str")
    if isinstance(mechanisms, Mapping):
        resolved = dict(mechanisms)
        for name, fn in resolved.items():
            if not isinstance(name, str) or not callable(fn):
                raise TypeError("mechanisms mapping must map names (str) to callables")
    else:
        resolved = {}
        for name in mechanisms:
            if name not in MECHANISMS:
                raise ValueError(f"mechanisms: unknown mechanism {name!r}; choose from {list(MECHANISMS)}")
            resolved[name] = MECHANISMS[name]
    if not resolved:
        raise ValueError("mechanisms must not be empty")
    return resolved


def _check_values(values: Iterable, name: str) -> list:
    vals = list(values)
    if not vals:
        raise ValueError(f"{name} must not be empty")
    return vals


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _atomic_target(path: Path) -> Iterator[str]:
    """Yield a temporary file name beside ``path``; on success it replaces ``path``, else it is removed."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, _FILE_MODE)
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then ``os.replace``."""
    with _atomic_target(Path(path)) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _fmt_float(x: float | None) -> str:
    if x is None:
        return ""
    return repr(float(x))  # 'inf' for infinity; round-trips exactly


def _parse_float(s: str) -> float | None:
    return None if s == "" else float(s)


def _parse_int(s: str) -> int | None:
    return None if s == "" else int(s)


def rows_to_csv_text(rows: Sequence[GridRow]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        counts = r.counts if r.counts is not None else (None,) * 4
        writer.writerow(
            [
                r.mechanism,
                epsilon_key(r.epsilon),
                r.n,
                r.trials,
                *("" if c is None else c for c in counts),
                _fmt_float(r.loss),
                _fmt_float(r.lower_bound_95),
                _fmt_float(r.exact_loss),
                "" if r.seed is None else r.seed,
                "" if r.seconds is None else f"{r.seconds:.3f}",
                r.finished_at or "",
            ]
        )
    return buf.getvalue()


def read_rows_csv(path: str | os.PathLike) -> list[GridRow]:
    """Read ``results.csv`` written by :func:`write_results` back into :class:`GridRow` rows."""
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            counts_raw = [rec[c] for c in CSV_COLUMNS[4:8]]
            counts = None if any(c == "" for c in counts_raw) else tuple(int(c) for c in counts_raw)
            rows.append(
                GridRow(
                    mechanism=rec["mechanism"],
                    epsilon=float(rec["epsilon"]),
                    n=int(rec["n"]),
                    trials=int(rec["trials"]),
                    loss=float(rec["loss"]),
                    counts=counts,  # type: ignore[arg-type]
                    lower_bound_95=_parse_float(rec["lower_bound_95"]),
                    exact_loss=_parse_float(rec["exact_loss"]),
                    seed=_parse_int(rec["seed"]),
                    seconds=_parse_float(rec["seconds"]),
                    finished_at=rec["finished_at"] or None,
                )
            )
    return rows


def rows_to_nested(rows: Iterable[GridRow]) -> dict[str, dict[str, dict[str, float]]]:
    """``{mechanism: {epsilon_key: {str(n): loss}}}``, the layout of the authors' ``results.json``."""
    nested: dict[str, dict[str, dict[str, float]]] = {}
    for r in rows:
        nested.setdefault(r.mechanism, {}).setdefault(epsilon_key(r.epsilon), {})[str(r.n)] = r.loss
    return nested


def _sort_rows(rows: Iterable[GridRow], order: Sequence[str]) -> list[GridRow]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(rows, key=lambda r: (rank.get(r.mechanism, len(rank)), r.mechanism, r.epsilon, r.n))


def write_results(rows: Sequence[GridRow], out: str | os.PathLike) -> None:
    """Write ``results.csv`` and ``results.json`` into ``out``, each atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / RESULTS_CSV, rows_to_csv_text(rows))
    atomic_write_text(out / RESULTS_JSON, json.dumps(rows_to_nested(rows), indent=4) + "\n")


# ---------------------------------------------------------------------------------------------
# the grid
# ---------------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _exact_or_none(name: str, n: int, epsilon: float) -> float | None:
    return exact_loss(name, n, epsilon) if name in MECHANISMS else None


def _row_from_result(result: AuditResult, name: str, seed: int, seconds: float) -> GridRow:
    c = result.counts
    return GridRow(
        mechanism=name,
        epsilon=result.epsilon,
        n=result.n,
        trials=result.trials,
        loss=result.loss,
        counts=(int(c[0, 0]), int(c[0, 1]), int(c[1, 0]), int(c[1, 1])),
        lower_bound_95=result.lower_bound(0.95),
        exact_loss=_exact_or_none(name, result.n, result.epsilon),
        seed=seed,
        seconds=round(seconds, 3),  # as stored in the CSV, so rows round-trip exactly
        finished_at=_now(),
    )


def run_grid(
    mechanisms: Iterable[str] | Mapping[str, Mechanism] = PAPER_MECHANISMS,
    epsilons: Iterable[float] = PAPER_EPSILONS,
    dims: Iterable[int] = PAPER_DIMS,
    trials: int = 100_000,
    *,
    seed: int = PAPER_SEED,
    workers: int = 1,
    out: str | os.PathLike | None = None,
    exact: bool = False,
    progress: bool = False,
    on_row: Callable[[GridRow], None] | None = None,
) -> list[GridRow]:
    """Audit every (mechanism, epsilon, n) cell; return one :class:`GridRow` per cell.

    Each cell runs ``estimate_loss(mechanism, n, epsilon, trials, seed=cell_seed(seed, ...))``,
    so any single cell can be repeated on its own.  ``exact=True`` fills the grid from
    :func:`dptutor.audit.exact_loss` instead (built-in mechanisms only).  ``workers > 1`` runs
    the blocks of all cells in one process pool (cells still finish roughly in order).

    With ``out``, results are written after every cell (:func:`write_results`), and cells already
    in ``out/results.csv`` with the same trials and seed are reused, not recomputed; rows of
    other cells in the file are kept.  ``on_row`` is called with each newly computed row.
    ``progress=True`` shows a tqdm bar over cells.

    The rows are returned in grid order (mechanisms, then epsilons, then dims).
    """
    mechs = _resolve_mechanisms(mechanisms)
    try:
        eps_list = [audit._check_epsilon(e) for e in _check_values(epsilons, "epsilons")]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"epsilons: {exc}") from exc
    dim_list = [audit._check_int(d, "dims") for d in _check_values(dims, "dims")]
    if len(set(map(epsilon_key, eps_list))) != len(eps_list) or len(set(dim_list)) != len(dim_list):
        raise ValueError("epsilons and dims must not contain duplicates")
    trials = audit._check_int(trials, "trials")
    seed = audit._check_int(seed, "seed", minimum=0)
    workers = audit._check_int(workers, "workers")
    if exact:
        unknown = [m for m in mechs if m not in MECHANISMS or mechs[m] is not MECHANISMS[m]]
        if unknown:
            raise ValueError(f"mechanisms: exact=True needs built-in mechanisms, got {unknown}")

    cells = [(m, e, n) for m in mechs for e in eps_list for n in dim_list]
    order = list(mechs) + [m for m in PAPER_MECHANISMS if m not in mechs]

    existing: dict[tuple[str, str, int], GridRow] = {}
    out_path = Path(out) if out is not None else None
    if out_path is not None and (out_path / RESULTS_CSV).exists():
        for r in read_rows_csv(out_path / RESULTS_CSV):
            existing[r.key] = r

    done: dict[tuple[str, str, int], GridRow] = {}
    todo: list[tuple[str, float, int]] = []
    for m, e, n in cells:
        key = (m, epsilon_key(e), n)
        old = existing.get(key)
        if exact:
            todo.append((m, e, n))
        elif old is not None and old.trials == trials and old.seed == cell_seed(seed, m, e, n):
            done[key] = old
        else:
            todo.append((m, e, n))

    def record(row: GridRow) -> None:
        done[row.key] = row
        existing[row.key] = row
        if out_path is not None:
            write_results(_sort_rows(existing.values(), order), out_path)
        if on_row is not None:
            on_row(row)

    from tqdm import tqdm  # the terminal bar: tqdm.auto warns inside Jupyter without ipywidgets

    bar = tqdm(total=len(cells), initial=len(cells) - len(todo), disable=not progress, unit="cell", desc="grid")
    try:
        if exact:
            for m, e, n in todo:
                value = exact_loss(m, n, e)
                record(GridRow(mechanism=m, epsilon=e, n=n, trials=0, loss=value, exact_loss=value, finished_at=_now()))
                bar.update(1)
        elif workers == 1:
            for m, e, n in todo:
                bar.set_postfix_str(f"{m} eps={e:g} n={n}")
                s = cell_seed(seed, m, e, n)
                t0 = time.perf_counter()
                result = estimate_loss(mechs[m], n, e, trials, seed=s)
                record(_row_from_result(result, m, s, time.perf_counter() - t0))
                bar.update(1)
        else:
            _run_cells_in_pool(todo, mechs, trials, seed, workers, record, bar)
    finally:
        bar.close()
    if out_path is not None and not todo:
        write_results(_sort_rows(existing.values(), order), out_path)
    return [done[(m, epsilon_key(e), n)] for m, e, n in cells]


def _run_cells_in_pool(
    todo: list[tuple[str, float, int]],
    mechs: Mapping[str, Mechanism],
    trials: int,
    seed: int,
    workers: int,
    record: Callable[[GridRow], None],
    bar,
) -> None:
    """Submit the blocks of all cells to one pool; finish each cell when its blocks are in.

    The blocks and their seeds are exactly those :func:`estimate_loss` would use with
    ``seed=cell_seed(...)``, so the counts do not depend on ``workers``.
    """
    sizes = audit._block_sizes(trials)
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        pending: dict[concurrent.futures.Future, int] = {}
        state = []
        try:
            for idx, (m, e, n) in enumerate(todo):
                s = cell_seed(seed, m, e, n)
                children = np.random.SeedSequence(s).spawn(len(sizes))
                state.append({"left": len(sizes), "guessed": np.zeros(2, dtype=np.int64), "seed": s, "t0": None})
                for size, child in zip(sizes, children):
                    fut = pool.submit(audit._count_block, mechs[m], m, n, e, size, child)
                    pending[fut] = idx
            t_start = time.perf_counter()
            last_finish = t_start
            for fut in concurrent.futures.as_completed(pending):
                idx = pending[fut]
                st = state[idx]
                st["guessed"] += fut.result()
                st["left"] -= 1
                if st["left"] == 0:
                    m, e, n = todo[idx]
                    result = audit._result_from_guesses(st["guessed"], trials, n, e, st["seed"], m)
                    now = time.perf_counter()
                    # Cells overlap in the pool; report the time since the previous cell finished.
                    record(_row_from_result(result, m, st["seed"], now - last_finish))
                    last_finish = now
                    bar.set_postfix_str(f"{m} eps={e:g} n={n}")
                    bar.update(1)
        except BaseException:
            for fut in pending:
                fut.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            raise


# ---------------------------------------------------------------------------------------------
# footnote 7
# ---------------------------------------------------------------------------------------------


def repeat_loss(
    mechanism: str = "adept",
    n: int = 2,
    epsilon: float = 0.1,
    trials: int = PAPER_TRIALS,
    repeats: int = 100,
    *,
    first_seed: int = 0,
    workers: int = 1,
    progress: bool = False,
) -> RepeatResult:
    """Estimate one cell's loss ``repeats`` times with seeds ``first_seed, first_seed + 1, ...``.

    The paper's footnote 7: ADePT at n = 2, epsilon = 0.1, 10 million trials, 100 repeats, mean
    0.195 and standard deviation 0.0008.  (Our seeds feed :func:`estimate_loss`, not numpy's
    legacy global seed, so individual losses differ from the authors'; their spread should not.)
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {list(MECHANISMS)}, got {mechanism!r}")
    n = audit._check_int(n, "n")
    eps = audit._check_epsilon(epsilon)
    trials = audit._check_int(trials, "trials")
    repeats = audit._check_int(repeats, "repeats")
    first_seed = audit._check_int(first_seed, "first_seed", minimum=0)
    workers = audit._check_int(workers, "workers")
    seeds = tuple(range(first_seed, first_seed + repeats))
    from tqdm import tqdm  # the terminal bar: tqdm.auto warns inside Jupyter without ipywidgets

    losses = []
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        for s in tqdm(seeds, disable=not progress, unit="run", desc=f"{mechanism} n={n} eps={eps:g}"):
            losses.append(estimate_loss(MECHANISMS[mechanism], n, eps, trials, seed=s, executor=pool).loss)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return RepeatResult(
        mechanism=mechanism, n=n, epsilon=eps, trials=trials, seeds=seeds, losses=tuple(losses),
        exact=exact_loss(mechanism, n, eps),
    )


def save_figure(fig, stem: str | os.PathLike, formats: Sequence[str] = ("png", "svg"), dpi: int = 150) -> list[Path]:
    """Save a matplotlib figure as ``stem.<format>`` for each format, each file written atomically."""
    paths = []
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with _atomic_target(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=dpi)
        paths.append(path)
    return paths
