"""The grid's resumable file layer: :class:`GridRow`, ``results.csv`` and ``results.json``, atomic writes.

A :class:`GridRow` checks itself against its counts and cell; :func:`write_results` writes the CSV
(every row) and the JSON (the authors' nested layout) atomically, and :func:`read_rows_csv` reads
the CSV back, refusing rows that do not check out, so that :func:`dptutor.experiments.run_grid`
can resume an interrupted run from its folder.  What any such file must be safe against (text that
is not UTF-8, half-written files, FIFOs and huge files) is checked by the helpers of ``dptutor._safe_files``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from dptutor._safe_files import atomic_target, is_utf8_text, output_folder, read_regular_file
from dptutor._validate import (
    check_callable,
    check_int,
    check_path,
    check_positive,
    check_real,
    check_sequence,
    check_str,
    shown,
)
from dptutor.audit import MAX_N, MAX_TRIALS, AuditResult, exact_loss, loss_from_counts
from dptutor.mechanisms import MECHANISMS

__all__ = [
    "RESULTS_CSV",
    "RESULTS_JSON",
    "CSV_COLUMNS",
    "GridRow",
    "epsilon_key",
    "atomic_write_text",
    "rows_to_csv_text",
    "read_rows_csv",
    "rows_to_nested",
    "write_results",
]

RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
_MAX_CSV_BYTES = 16 << 20  # the paper grid's results.csv is ~50 kB (~200 bytes a row); larger files are refused unread

#: The columns of ``results.csv``, in order.
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

    Parameters
    ----------
    mechanism : str
        The mechanism's name (non-empty).
    epsilon : float
        The budget (positive).
    n : int
        The dimension.
    trials : int
        The runs per dataset (0 for a closed-form row).
    loss : float
        The loss (non-negative; ``inf`` allowed).
    counts : tuple of 4 int or None, default None
        ``(c00, c01, c10, c11)``.
    lower_bound_95 : float or None, default None
        The 95% lower confidence bound its counts give.
    exact_loss : float or None, default None
        The closed form's loss.
    seed : int or None, default None
        The cell's recorded seed.
    seconds : float or None, default None
        The cell's wall time.
    finished_at : str or None, default None
        An ISO timestamp (UTC).

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range, or a derived field (loss, bound, exact loss) is not what the counts and cell give.
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
        if v["seed"] is not None and v["seed"].bit_length() > 128:
            raise ValueError("seed must be below 2**128")
        if self.finished_at is not None:
            v["finished_at"] = check_str(self.finished_at, "finished_at")
        for key in ("mechanism", "finished_at"):
            if key in v and (not is_utf8_text(v[key]) or "\r" in v[key]):
                raise ValueError(f"{key} must be UTF-8 text (no lone surrogates) without a carriage return, got {shown(v[key])}")
        if self.counts is None:
            if v["trials"] != 0:
                raise ValueError("counts must be given for a Monte Carlo row (trials > 0)")
        else:
            items = check_sequence(self.counts, "counts", min_len=4)
            if len(items) != 4:
                raise ValueError(f"counts must be 4 integers (c00, c01, c10, c11), got {len(items)}")
            counts = tuple(check_int(c, "counts", minimum=0) for c in items)
            if counts[0] + counts[1] != v["trials"] or counts[2] + counts[3] != v["trials"]:
                raise ValueError(f"counts must sum to trials = {v['trials']} on each dataset, got {shown(counts)}")
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
        """The tuple that identifies the cell, ``(mechanism, epsilon_key(epsilon), n)`` (no exception: the row is checked)."""
        return self.mechanism, epsilon_key(self.epsilon), self.n

    @property
    def is_exact(self) -> bool:
        """True for a row filled from the closed form (``trials == 0``; no exception: the row is checked)."""
        return self.trials == 0

    def audit_result(self) -> AuditResult:
        """The Monte Carlo row as an :class:`AuditResult` (for its bounds and summary).

        Returns
        -------
        dptutor.audit.AuditResult
            The row's counts as an audit result.

        Raises
        ------
        ValueError
            If the row is exact (it has no counts).
        """
        if self.counts is None:
            raise ValueError("an exact row has no counts")
        c = self.counts
        return AuditResult.from_counts(
            [[c[0], c[1]], [c[2], c[3]]], n=self.n, epsilon=self.epsilon, seed=self.seed, mechanism=self.mechanism
        )


def _same(a: float, b: float) -> bool:
    """Equal floats up to a few ulps of rounding (``inf == inf``)."""
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


def epsilon_key(epsilon: float) -> str:
    """The JSON key of an epsilon as in the authors' file: ``repr(float(epsilon))`` ("0.1", "1.0").

    Parameters
    ----------
    epsilon : float
        The budget (positive).

    Returns
    -------
    str
        ``repr(float(epsilon))``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).

    Examples
    --------
    >>> from dptutor.experiments import epsilon_key
    >>> epsilon_key(1)
    '1.0'
    """
    return repr(check_positive(epsilon, "epsilon"))


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then ``os.replace``.

    Parameters
    ----------
    path : str or os.PathLike
        The file. (in an existing folder)
    text : str
        The text, written as UTF-8.

    Returns
    -------
    None

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is a folder or in a missing folder (the message names ``path``).
    """
    path = check_path(path, "path")
    text = check_str(text, "text")
    if not is_utf8_text(text):
        raise ValueError("text must be UTF-8 text (no lone surrogates)")
    try:
        if path.is_dir():
            raise ValueError(f"path must be a file, but {path} is a folder")
        if not path.parent.is_dir():
            raise ValueError(f"path must be in an existing folder, got {path}")
        with atomic_target(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise ValueError(f"path {path} cannot be written ({exc.strerror or exc})") from exc


def _fmt_float(x: float | None) -> str:
    if x is None:
        return ""
    return repr(float(x))  # 'inf' for infinity; round-trips exactly


def _parse_float(s: str) -> float | None:
    return None if s == "" else float(s)


def _parse_int(s: str) -> int | None:
    return None if s == "" else int(s)


def rows_to_csv_text(rows: Sequence[GridRow]) -> str:
    """The text of ``results.csv`` for ``rows``: a header of :data:`CSV_COLUMNS`, then one line per row.

    Parameters
    ----------
    rows : sequence of GridRow
        The rows.

    Returns
    -------
    str
        The CSV text.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    rows = _check_rows(rows)
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

    Parameters
    ----------
    path : str or os.PathLike
        The file. (a ``results.csv``)
    on_invalid : callable or None, default None
        ``on_invalid(message)`` for each invalid row, which is skipped; ``None``: raise.

    Returns
    -------
    list of GridRow
        The valid rows.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is unreadable, or (with ``on_invalid=None``) a row is invalid.
    """
    path = check_path(path, "path")
    if on_invalid is not None:
        check_callable(on_invalid, "on_invalid", "on_invalid(message)")

    def invalid(message: str) -> None:
        if on_invalid is None:
            raise ValueError(f"path {path}: {message}")
        on_invalid(f"{path}: {message}")

    raw = read_regular_file(path, _MAX_CSV_BYTES)
    text = raw.decode("utf-8-sig", errors="surrogateescape")  # undecodable bytes become lone surrogates: that row is refused
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or ()
    except csv.Error as exc:  # a header the csv module cannot parse (e.g. a field beyond its size limit)
        invalid(f"not a readable CSV file ({exc}); no row read")
        return []
    missing = [c for c in CSV_COLUMNS if c not in header]
    doubled = [c for c in CSV_COLUMNS if list(header).count(c) > 1]  # DictReader would silently keep the last one
    if missing or doubled:
        invalid(f"{'missing' if missing else 'duplicated'} column(s) {', '.join(missing or doubled)}; no row read")
        return []
    rows = []
    for line, rec in _records(reader, invalid):
        if None in rec or any(v is None for v in rec.values()):
            invalid(f"line {line}: {len(rec) - (None in rec)} field(s) instead of {len(reader.fieldnames or ())}; row skipped")
            continue
        if not all(map(is_utf8_text, rec.values())):
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


def _records(reader: csv.DictReader, invalid: Callable[[str], None]) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` for each row of ``reader``; a row the csv module cannot parse ends the file (``invalid``)."""
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            invalid(f"line {reader.line_num}: {exc}; the rest of the file is not read")
            return
        yield reader.line_num, rec


def _check_rows(rows: object, name: str = "rows") -> list[GridRow]:
    items = check_sequence(rows, name, min_len=0)
    for i, r in enumerate(items):
        if not isinstance(r, GridRow):
            raise TypeError(f"{name}[{i}] must be a GridRow, got {type(r).__name__}")
    return items


def rows_to_nested(rows: Sequence[GridRow]) -> dict[str, dict[str, dict[str, float]]]:
    """``{mechanism: {epsilon_key: {str(n): loss}}}``, the layout of the authors' ``results.json``.

    Parameters
    ----------
    rows : sequence of GridRow
        The rows.

    Returns
    -------
    dict
        ``{mechanism: {epsilon_key: {str(n): loss}}}``.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    nested: dict[str, dict[str, dict[str, float]]] = {}
    for r in _check_rows(rows):
        nested.setdefault(r.mechanism, {}).setdefault(epsilon_key(r.epsilon), {})[str(r.n)] = r.loss
    return nested


def sort_rows(rows: Iterable[GridRow], order: Sequence[str]) -> list[GridRow]:
    """``rows`` sorted by mechanism (in ``order``, then unknown ones by name), epsilon and n.

    Parameters
    ----------
    rows : iterable of GridRow
        The rows.
    order : sequence of str
        The mechanisms' order.

    Returns
    -------
    list of GridRow
        The sorted rows (it raises no exception: the rows are checked where they are made).
    """
    rank = {name: i for i, name in enumerate(order)}
    return sorted(rows, key=lambda r: (rank.get(r.mechanism, len(rank)), r.mechanism, r.epsilon, r.n))


def write_results(rows: Sequence[GridRow], out: str | os.PathLike, *, json_rows: Sequence[GridRow] | None = None) -> None:
    """Write ``results.csv`` (all ``rows``) and ``results.json`` into ``out``, each atomically.

    ``results.json`` holds ``json_rows`` (default: ``rows``); :func:`~dptutor.experiments.run_grid` puts only the rows of
    the current run there, so that cells of earlier runs with other trials or seeds, which stay in
    the CSV with their trials and seed, are not mixed in.  Losses are never NaN (:class:`GridRow`);
    an infinite loss is written as ``Infinity``, like the authors' file.

    Parameters
    ----------
    rows : sequence of GridRow
        The rows. of ``results.csv``.
    out : str or os.PathLike
        The folder (created if missing).
    json_rows : sequence of GridRow or None, default None
        The rows of ``results.json`` (default: ``rows``).

    Returns
    -------
    None

    Raises
    ------
    TypeError
        If an argument is of the wrong kind (the message names it).
    ValueError
        If an argument is out of range (the message names it).
    """
    rows = _check_rows(rows)
    json_rows = rows if json_rows is None else _check_rows(json_rows, "json_rows")
    out = output_folder(out)
    for name, text in ((RESULTS_CSV, rows_to_csv_text(rows)), (RESULTS_JSON, json.dumps(rows_to_nested(json_rows), indent=4) + "\n")):
        try:
            atomic_write_text(out / name, text)
        except ValueError as exc:
            raise ValueError(f"out: {exc}") from exc
