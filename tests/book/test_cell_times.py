"""The per-cell time guard: benchmarks/cell_times.py reads nbclient's timings, and the build's timeout fits."""
from __future__ import annotations

import importlib.util
import json
import re
import sys

import pytest
import yaml

from helpers import ROOT


def _load():
    spec = importlib.util.spec_from_file_location("cell_times", ROOT / "benchmarks" / "cell_times.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the module runs
    spec.loader.exec_module(module)
    return module


cell_times = _load()


def _cell(source: str, start: str | None, end: str | None, cell_type: str = "code") -> dict:
    execution = {}
    if start is not None:
        execution["iopub.execute_input"] = start
    if end is not None:
        execution["shell.execute_reply"] = end
    return {"cell_type": cell_type, "source": source, "metadata": {"execution": execution}}


def _notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


NOTEBOOK = _notebook(
    _cell("# a comment\nimport numpy as np", "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:01.500000Z"),
    _cell("Some prose", None, None, cell_type="markdown"),
    _cell("x = 1", None, None),  # not executed: skipped, but still counted in the numbering
    _cell("slow()", "2026-01-01T00:00:02Z", "2026-01-01T00:00:27.250000Z"),
)


def test_durations_come_from_nbclient_timestamps() -> None:
    times = cell_times.cell_times(NOTEBOOK, "ch")
    assert [(t.cell, t.seconds, t.first_line) for t in times] == [(1, 1.5, "import numpy as np"), (3, 25.25, "slow()")]


def test_cpu_seconds_recorded_by_the_script_are_read_back() -> None:
    cell = _cell("work()", "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z")
    cell["metadata"]["cell_times_cpu"] = 2.5
    (time,) = cell_times.cell_times(_notebook(cell), "ch")
    assert (time.seconds, time.cpu_seconds) == (10.0, 2.5)
    assert cell_times.cell_times(NOTEBOOK, "ch")[0].cpu_seconds is None


def test_malformed_notebooks_and_timestamps_are_rejected() -> None:
    with pytest.raises(ValueError, match="not a notebook"):
        cell_times.cell_times({"cells": "no"}, "ch")
    bad = _notebook(_cell("x", "yesterday", "2026-01-01T00:00:00Z"))
    with pytest.raises(ValueError):
        cell_times.cell_times(bad, "ch")
    with pytest.raises(ValueError, match="timestamp"):
        cell_times.cell_times(_notebook(_cell("x", 5, "2026-01-01T00:00:00Z")), "ch")


def test_the_script_reports_the_slowest_cells_and_fails_over_the_limit(tmp_path, capsys) -> None:
    path = tmp_path / "ch.ipynb"
    path.write_text(json.dumps(NOTEBOOK))
    assert cell_times.main([str(path), "--top", "1"]) == 1  # 25.25 s > 20 s
    out = capsys.readouterr().out
    assert "25.2 s         -  ch cell  3  slow()  OVER" in out and "import numpy" not in out
    assert cell_times.main([str(path), "--limit", "30", "--json", str(tmp_path / "t.json")]) == 0
    assert [t["seconds"] for t in json.loads((tmp_path / "t.json").read_text())] == [1.5, 25.25]
    with pytest.raises(SystemExit):
        cell_times.main([str(path), "--limit", "0"])


def test_every_listed_chapter_with_code_is_found() -> None:
    paths = cell_times.chapters()
    assert {"floating_point", "stronger_audits"} <= {p.stem for p in paths}
    assert all(p.exists() and p.suffix == ".md" for p in paths)


def test_the_build_timeout_tolerates_a_loaded_machine_but_stops_runaway_cells() -> None:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    timeout = config["execute"]["timeout"]
    # at least twice the 20 s rule (a loaded CI machine), at most a minute (the old 180 s hid slow cells)
    assert 2 * cell_times.LIMIT_SECONDS <= timeout <= 60
    assert re.search(r"benchmarks/cell_times\.py", (ROOT / "_config.yml").read_text())
