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

from dptutor._validate import (
    check_bool,
    check_callable,
    check_choice,
    check_int,
    check_path,
    check_positive,
    check_real,
    check_sequence,
    check_str,
    check_workers,
)
from dptutor.audit import MAX_N, MAX_TRIALS, AuditCell, AuditResult, estimate_losses, exact_loss, loss_from_counts
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

#: More repeats of one cell than this is refused (the paper's footnote 7 uses 100).
MAX_REPEATS: int = 10**6

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

    def __post_init__(self) -> None:
        """Check every field, and that the derived ones (loss, bound, exact loss) match what the
        counts and the cell give: a row edited by hand, or half written, is refused."""
        v: dict[str, object] = {
            "mechanism": check_str(self.mechanism, "mechanism", allow_empty=False),
            "epsilon": check_positive(self.epsilon, "epsilon"),
            "n": check_int(self.n, "n", minimum=1, maximum=MAX_N),
            "trials": check_int(self.trials, "trials", minimum=0, maximum=MAX_TRIALS),
            "loss": check_real(self.loss, "loss", low=0.0, allow_inf=True),
        }
        for key in ("lower_bound_95", "exact_loss", "seconds"):
            value = getattr(self, key)
            v[key] = None if value is None else check_real(value, key, low=0.0, allow_inf=key != "seconds")
        v["seed"] = None if self.seed is None else check_int(self.seed, "seed", minimum=0)
        if self.finished_at is not None:
            v["finished_at"] = check_str(self.finished_at, "finished_at")
        if self.counts is None:
            if v["trials"] != 0:
                raise ValueError("counts must be given for a Monte Carlo row (trials > 0)")
        else:
            items = check_sequence(self.counts, "counts", min_len=4)
            if len(items) != 4:
                raise ValueError(f"counts must be 4 integers (c00, c01, c10, c11), got {len(items)}")
            counts = tuple(check_int(c, "counts", minimum=0) for c in items)
            if counts[0] + counts[1] != v["trials"] or counts[2] + counts[3] != v["trials"]:
                raise ValueError(f"counts must sum to trials = {v['trials']} on each dataset, got {counts}")
            v["counts"] = counts
            expected = loss_from_counts([counts[:2], counts[2:]])
            if not _same(v["loss"], expected):
                raise ValueError(f"loss must be the loss its counts give ({expected!r}), got {v['loss']!r}")
            if v["lower_bound_95"] is not None:
                result = AuditResult(expected, [counts[:2], counts[2:]], v["trials"], v["n"], v["epsilon"])
                if not _same(v["lower_bound_95"], result.lower_bound(0.95)):
                    raise ValueError("lower_bound_95 must be the 95% lower bound its counts give")
        if self.mechanism in MECHANISMS and v["exact_loss"] is not None:
            truth = exact_loss(self.mechanism, v["n"], v["epsilon"])
            if not _same(v["exact_loss"], truth):
                raise ValueError(f"exact_loss must be the closed form's {truth!r}, got {v['exact_loss']!r}")
        if v["trials"] == 0 and not (v["exact_loss"] is not None and _same(v["loss"], v["exact_loss"])):
            raise ValueError("an exact row (trials = 0) must have loss == exact_loss")
        for key, value in v.items():
            object.__setattr__(self, key, value)

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
        seeds = tuple(check_int(s, "seeds", minimum=0) for s in check_sequence(self.seeds, "seeds"))
        losses = tuple(check_real(x, "losses", low=0.0, allow_inf=True) for x in check_sequence(self.losses, "losses"))
        if len(seeds) != len(losses):
            raise ValueError(f"seeds and losses must have the same length, got {len(seeds)} and {len(losses)}")
        fields = {
            "mechanism": check_str(self.mechanism, "mechanism", allow_empty=False),
            "n": check_int(self.n, "n", minimum=1, maximum=MAX_N),
            "epsilon": check_positive(self.epsilon, "epsilon"),
            "trials": check_int(self.trials, "trials", minimum=1, maximum=MAX_TRIALS),
            "seeds": seeds,
            "losses": losses,
            "exact": None if self.exact is None else check_real(self.exact, "exact", low=0.0, allow_inf=True),
        }
        for key, value in fields.items():
            object.__setattr__(self, key, value)
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


def _same(a: float, b: float) -> bool:
    """Equal floats up to a few ulps of rounding (``inf == inf``)."""
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


def epsilon_key(epsilon: float) -> str:
    """The JSON key of an epsilon as in the authors' file: ``repr(float(epsilon))`` ("0.1", "1.0")."""
    return repr(check_positive(epsilon, "epsilon"))


def cell_seed(seed: int, mechanism: str, epsilon: float, n: int) -> int:
    """A 64-bit seed for one cell, derived deterministically from the run's ``seed`` and the cell.

    SHA-256 of ``"seed|mechanism|epsilon|n"``: stable across platforms, Python versions and grid
    shapes (adding a cell never changes another cell's seed).
    """
    seed = check_int(seed, "seed", minimum=0)
    mechanism = check_str(mechanism, "mechanism")
    n = check_int(n, "n", minimum=1)
    text = f"{seed}|{mechanism}|{epsilon_key(epsilon)}|{n}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _resolve_mechanisms(mechanisms: Iterable[str] | Mapping[str, Mechanism]) -> dict[str, Mechanism]:
    if isinstance(mechanisms, Mapping):
        resolved = dict(mechanisms)
        for name, fn in resolved.items():
            if not isinstance(name, str) or not name or not callable(fn):
                raise TypeError("mechanisms mapping must map names (non-empty str) to callables")
    else:
        resolved = {}
        for name in check_sequence(mechanisms, "mechanisms"):
            if not isinstance(name, str):
                raise TypeError(f"mechanisms must hold mechanism names (str), got {type(name).__name__}")
            if name not in MECHANISMS:
                raise ValueError(f"mechanisms: unknown mechanism {name!r}; choose from {list(MECHANISMS)}")
            if name in resolved:
                raise ValueError(f"mechanisms must not contain duplicates, got {name!r} twice")
            resolved[name] = MECHANISMS[name]
    if not resolved:
        raise ValueError("mechanisms must not be empty")
    return resolved


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
    path = check_path(path, "path")
    text = check_str(text, "text")
    if path.is_dir():
        raise ValueError(f"path must be a file, but {path} is a folder")
    if not path.parent.is_dir():
        raise ValueError(f"path must be in an existing folder, got {path}")
    with _atomic_target(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
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


def read_rows_csv(path: str | os.PathLike, *, on_invalid: Callable[[str], None] | None = None) -> list[GridRow]:
    """Read ``results.csv`` written by :func:`write_results` back into :class:`GridRow` rows.

    Every row is checked as it is read (:class:`GridRow` refuses a loss, bound or exact loss that
    its counts and cell do not give, and half-written rows).  With ``on_invalid=None`` the first
    invalid row raises ``ValueError``; otherwise ``on_invalid(message)`` is called for each invalid
    row (or unreadable file), which is skipped.  A UTF-8 byte-order mark is accepted.
    """
    path = check_path(path, "path")
    if on_invalid is not None:
        check_callable(on_invalid, "on_invalid", "on_invalid(message)")

    def invalid(message: str) -> None:
        if on_invalid is None:
            raise ValueError(f"path {path}: {message}")
        on_invalid(f"{path}: {message}")

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"path {path} cannot be read ({exc.strerror or exc})") from exc
    text = raw.decode("utf-8-sig", errors="replace")  # undecodable bytes become U+FFFD: that row is refused
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        invalid(f"missing column(s) {', '.join(missing)}; no row read")
        return []
    rows = []
    for rec in reader:
        line = reader.line_num
        if None in rec or any(v is None for v in rec.values()):
            invalid(f"line {line}: {len(rec) - (None in rec)} field(s) instead of {len(reader.fieldnames or ())}; row skipped")
            continue
        if any("\ufffd" in v for v in rec.values()):
            invalid(f"line {line}: not UTF-8 text; row skipped")
            continue
        try:
            counts_raw = [rec[c] for c in CSV_COLUMNS[4:8]]
            rows.append(
                GridRow(
                    mechanism=rec["mechanism"],
                    epsilon=float(rec["epsilon"]),
                    n=int(rec["n"]),
                    trials=int(rec["trials"]),
                    loss=float(rec["loss"]),
                    counts=None if all(c == "" for c in counts_raw) else tuple(int(c) for c in counts_raw),  # type: ignore[arg-type]
                    lower_bound_95=_parse_float(rec["lower_bound_95"]),
                    exact_loss=_parse_float(rec["exact_loss"]),
                    seed=_parse_int(rec["seed"]),
                    seconds=_parse_float(rec["seconds"]),
                    finished_at=rec["finished_at"] or None,
                )
            )
        except (TypeError, ValueError) as exc:
            invalid(f"line {line}: {exc}; row skipped")
    return rows


def _check_rows(rows: object, name: str = "rows") -> list[GridRow]:
    items = check_sequence(rows, name, min_len=0)
    for i, r in enumerate(items):
        if not isinstance(r, GridRow):
            raise TypeError(f"{name}[{i}] must be a GridRow, got {type(r).__name__}")
    return items


def rows_to_nested(rows: Sequence[GridRow]) -> dict[str, dict[str, dict[str, float]]]:
    """``{mechanism: {epsilon_key: {str(n): loss}}}``, the layout of the authors' ``results.json``."""
    nested: dict[str, dict[str, dict[str, float]]] = {}
    for r in _check_rows(rows):
        nested.setdefault(r.mechanism, {}).setdefault(epsilon_key(r.epsilon), {})[str(r.n)] = r.loss
    return nested


def _sort_rows(rows: Iterable[GridRow], order: Sequence[str]) -> list[GridRow]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(rows, key=lambda r: (rank.get(r.mechanism, len(rank)), r.mechanism, r.epsilon, r.n))


def _output_folder(out: object) -> Path:
    """``out`` as an existing, writeable folder (created if missing), or a ValueError naming ``out``."""
    path = check_path(out, "out")
    if path.exists() and not path.is_dir():
        raise ValueError(f"out must be a folder, but {path} is a file")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"out: cannot create the folder {path} ({exc.strerror or exc})") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"out: the folder {path} is not writeable")
    return path


def write_results(rows: Sequence[GridRow], out: str | os.PathLike, *, json_rows: Sequence[GridRow] | None = None) -> None:
    """Write ``results.csv`` (all ``rows``) and ``results.json`` into ``out``, each atomically.

    ``results.json`` holds ``json_rows`` (default: ``rows``); :func:`run_grid` puts only the rows of
    the current run there, so that cells of earlier runs with other trials or seeds, which stay in
    the CSV with their trials and seed, are not mixed in.  Losses are never NaN (:class:`GridRow`);
    an infinite loss is written as ``Infinity``, like the authors' file.
    """
    rows = _check_rows(rows)
    json_rows = rows if json_rows is None else _check_rows(json_rows, "json_rows")
    out = _output_folder(out)
    atomic_write_text(out / RESULTS_CSV, rows_to_csv_text(rows))
    atomic_write_text(out / RESULTS_JSON, json.dumps(rows_to_nested(json_rows), indent=4) + "\n")


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
    on_invalid: Callable[[str], None] | None = None,
) -> list[GridRow]:
    """Audit every (mechanism, epsilon, n) cell; return one :class:`GridRow` per cell.

    Each cell runs ``estimate_loss(mechanism, n, epsilon, trials, seed=cell_seed(seed, ...))``,
    so any single cell can be repeated on its own.  ``exact=True`` fills the grid from
    :func:`dptutor.audit.exact_loss` instead (built-in mechanisms only).  ``workers > 1`` runs
    the blocks of all cells in one process pool (cells still finish roughly in order); it is capped
    at the CPUs and the blocks, and more than :data:`dptutor._validate.MAX_WORKERS` is refused.

    With ``out``, results are written after every cell (:func:`write_results`), and cells already
    in ``out/results.csv`` with the same trials and seed are reused, not recomputed; rows of
    other cells in the file are kept in the CSV, but ``results.json`` holds only this run's cells.
    Rows of the CSV that do not check out (see :func:`read_rows_csv`) are recomputed, and
    ``on_invalid(message)`` is told about each.  ``on_row`` is called with each newly computed row.
    ``progress=True`` shows a tqdm bar over cells.  Ctrl-C loses only the blocks in flight.

    The rows are returned in grid order (mechanisms, then epsilons, then dims).
    """
    mechs = _resolve_mechanisms(mechanisms)
    eps_list = [check_positive(e, "epsilons") for e in check_sequence(epsilons, "epsilons")]
    dim_list = [check_int(d, "dims", minimum=1, maximum=MAX_N) for d in check_sequence(dims, "dims")]
    if len(set(map(epsilon_key, eps_list))) != len(eps_list):
        raise ValueError(f"epsilons must not contain duplicates, got {[float(e) for e in eps_list]}")
    if len(set(dim_list)) != len(dim_list):
        raise ValueError(f"dims must not contain duplicates, got {dim_list}")
    trials = check_int(trials, "trials", minimum=1, maximum=MAX_TRIALS)
    seed = check_int(seed, "seed", minimum=0)
    workers = check_workers(workers)
    exact = check_bool(exact, "exact")
    progress = check_bool(progress, "progress")
    for cb, cb_name in ((on_row, "on_row"), (on_invalid, "on_invalid")):
        if cb is not None:
            check_callable(cb, cb_name)
    if exact:
        unknown = [m for m in mechs if m not in MECHANISMS or mechs[m] is not MECHANISMS[m]]
        if unknown:
            raise ValueError(f"mechanisms: exact=True needs built-in mechanisms, got {unknown}")
    out_path = None if out is None else _output_folder(out)

    cells = [(m, e, n) for m in mechs for e in eps_list for n in dim_list]
    order = list(mechs) + [m for m in PAPER_MECHANISMS if m not in mechs]

    existing: dict[tuple[str, str, int], GridRow] = {}
    if out_path is not None and (out_path / RESULTS_CSV).exists():
        for r in read_rows_csv(out_path / RESULTS_CSV, on_invalid=on_invalid or (lambda message: None)):
            existing[r.key] = r

    done: dict[tuple[str, str, int], GridRow] = {}
    todo: list[tuple[str, float, int]] = []
    for m, e, n in cells:
        key = (m, epsilon_key(e), n)
        old = existing.get(key)
        if not exact and old is not None and old.trials == trials and old.seed == cell_seed(seed, m, e, n):
            done[key] = old
        else:
            todo.append((m, e, n))

    def save() -> None:
        if out_path is not None:
            ours = [r for r in existing.values() if r.key in done]
            write_results(_sort_rows(existing.values(), order), out_path, json_rows=_sort_rows(ours, order))

    def record(row: GridRow) -> None:
        done[row.key] = row
        existing[row.key] = row
        save()
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
        elif todo:
            audit_cells = [AuditCell(mechs[m], n, e, trials, seed=cell_seed(seed, m, e, n), name=m) for m, e, n in todo]
            last_finish = [time.perf_counter()]

            def finished(i: int, result: AuditResult) -> None:
                now = time.perf_counter()
                # Cells overlap in a pool; report the time since the previous cell finished.
                record(_row_from_result(result, todo[i][0], int(result.seed), now - last_finish[0]))  # type: ignore[arg-type]
                last_finish[0] = now
                bar.set_postfix_str(f"{todo[i][0]} eps={todo[i][1]:g} n={todo[i][2]}")
                bar.update(1)

            estimate_losses(audit_cells, workers=workers, on_result=finished)
    finally:
        bar.close()
    if not todo:
        save()
    return [done[(m, epsilon_key(e), n)] for m, e, n in cells]


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
    check_choice(mechanism, "mechanism", MECHANISMS)
    repeats = check_int(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)
    first_seed = check_int(first_seed, "first_seed", minimum=0)
    progress = check_bool(progress, "progress")
    seeds = tuple(range(first_seed, first_seed + repeats))
    cells = [AuditCell(MECHANISMS[mechanism], n, epsilon, trials, seed=s, name=mechanism) for s in seeds]
    n, eps, trials = cells[0].n, cells[0].epsilon, cells[0].trials
    from tqdm import tqdm  # the terminal bar: tqdm.auto warns inside Jupyter without ipywidgets

    with tqdm(total=repeats, disable=not progress, unit="run", desc=f"{mechanism} n={n} eps={eps:g}") as bar:
        results = estimate_losses(cells, workers=workers, on_result=lambda i, r: bar.update(1))
    losses = [r.loss for r in results]
    return RepeatResult(
        mechanism=mechanism, n=n, epsilon=eps, trials=trials, seeds=seeds, losses=tuple(losses),
        exact=exact_loss(mechanism, n, eps),
    )


#: Resolutions above this are refused (a page-wide figure at 2400 dpi is already ~20,000 pixels wide).
MAX_DPI: float = 2400.0


def save_figure(fig, stem: str | os.PathLike, formats: Sequence[str] = ("png", "svg"), dpi: int = 150) -> list[Path]:
    """Save a matplotlib figure as ``stem.<format>`` for each format, each file written atomically."""
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    stem = check_path(stem, "stem")
    fmts = [check_str(f, "formats") for f in check_sequence(formats, "formats")]
    supported = fig.canvas.get_supported_filetypes()
    for f in fmts:
        if f not in supported:
            raise ValueError(f"formats: unknown format {f!r}; choose from {sorted(supported)}")
    dpi = check_real(dpi, "dpi", low=1.0, high=MAX_DPI)
    folder = _output_folder(stem.parent)
    paths = []
    stem = folder / stem.name
    for fmt in fmts:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with _atomic_target(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=dpi)
        paths.append(path)
    return paths
