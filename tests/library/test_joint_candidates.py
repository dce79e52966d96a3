"""bounds="joint" with a cautious second event: the union bound over the two candidates, and the fields it adds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptutor.audit import BACKUP_SHARE, PairAudit, audit_pair
from dptutor.audit._pair_bounds import _joint_bound

E = math.e


def plateau(data, size, rng):
    """Density proportional to e on [0, 1/2) and to 1 on [1/2, 1) under ``data == 1``, mirrored under 0.

    Every event ``output < t`` with ``t <= 1/2`` has loss exactly 1, so the many nested cuts of one plateau
    tie, and the thin ones win on the selection half's noise often enough to need the cautious candidate."""
    heavy = rng.random(size) < E / (1 + E)
    low = heavy if data == 1 else ~heavy
    return np.where(low, 0.0, 0.5) + 0.5 * rng.random(size)


@pytest.fixture(scope="module")
def plateau_runs():
    return [audit_pair(plateau, 1, 0, epsilon=1.0, trials=4_000, rng=s, selection=0.3, bounds="joint")
            for s in range(1_000)]


def test_two_candidates_keep_the_error_rate_on_a_plateau_of_boundary_events(plateau_runs):
    # Every candidate event has loss exactly epsilon = 1, so each bound exceeds 1 with probability at most its
    # share of gamma, and the larger of two at most gamma: judged over 1,000 seeds at three standard errors.
    seeds = len(plateau_runs)
    rate = float(np.mean([r.lower_bound > 1.0 for r in plateau_runs]))
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / seeds)
    two = [r for r in plateau_runs if r.candidates is not None]
    assert 0.05 * seeds < len(two) < 0.95 * seeds  # the cautious cut often differs here, so the rule is exercised


def test_the_reported_bound_is_the_larger_of_the_two_at_their_shares(plateau_runs):
    two = [r for r in plateau_runs if r.candidates is not None][:50]
    for r in two:
        n = r.estimation_trials
        shares = (1.0 - BACKUP_SHARE, BACKUP_SHARE)
        each = [_joint_bound(int(t[0, 0]), int(t[1, 0]), n, share * 0.05, r.seed) for t, share in zip(r.candidates, shares)]
        assert r.lower_bound == max(each)
        assert any((t == r.counts).all() for t in r.candidates)
        assert r.bound_at(0.95) == r.lower_bound
        assert r.bound_at(0.9) >= r.lower_bound  # a lower level, the same events and shares
        assert "two candidate events" in r.summary() and len(r.summary().splitlines()) == 5
    one = next(r for r in plateau_runs if r.candidates is None)
    assert one.bound_at(0.95) == one.lower_bound and "candidate" not in one.summary()


def test_other_bounds_never_split_their_error():
    for bounds in ("four", "two"):
        rs = [audit_pair(plateau, 1, 0, epsilon=1.0, trials=4_000, rng=s, selection=0.3, bounds=bounds) for s in range(40)]
        assert all(r.candidates is None for r in rs)


def test_pair_audit_checks_its_candidates():
    base = dict(lower_bound=0.1, estimate=0.2, event="S", counts=[[3, 7], [2, 8]], trials=20, epsilon=1.0)
    good = [[[3, 7], [2, 8]], [[5, 5], [4, 6]]]
    r = PairAudit(**base, bounds="joint", candidates=good)
    assert r.candidates.shape == (2, 2, 2) and not r.candidates.flags.writeable
    with pytest.raises(ValueError, match="candidates"):
        PairAudit(**base, bounds="joint", candidates=[[3, 7], [2, 8]])
    with pytest.raises(ValueError, match="candidates"):
        PairAudit(**base, bounds="joint", candidates=[[[3, 7], [2, -8]], [[5, 5], [4, 6]]])
    with pytest.raises(ValueError, match="candidates"):
        PairAudit(**base, bounds="two", candidates=good)
    with pytest.raises(ValueError, match="counts"):
        PairAudit(**base, bounds="joint", candidates=[[[1, 9], [2, 8]], [[5, 5], [4, 6]]])
    with pytest.raises(TypeError, match="candidates"):
        PairAudit(**base, bounds="joint", candidates="two tables")


def test_the_chapter_states_the_constants_the_code_uses():
    from pathlib import Path

    from dptutor.audit import BACKUP_Z, POISSON_MARGIN

    text = Path(__file__).resolve().parents[2].joinpath("book", "stronger_audits.md").read_text()
    words = {3.0: "three"}
    assert f"at {words[BACKUP_Z]} standard errors" in text
    assert f"${1 - BACKUP_SHARE:g}\\gamma$" in text and f"${BACKUP_SHARE:g}\\gamma$" in text
    assert f"{POISSON_MARGIN:g}\\sqrt{{T_{{\\mathrm{{est}}}}}}" in text


@pytest.mark.parametrize("name, value, error", [("BACKUP_SHARE", 1.5, ValueError), ("BACKUP_SHARE", -0.1, ValueError),
                                                ("BACKUP_SHARE", "0.1", TypeError), ("BACKUP_Z", 0.0, ValueError),
                                                ("BACKUP_Z", float("nan"), ValueError)])
def test_a_changed_backup_constant_is_checked_when_read(monkeypatch, name, value, error):
    """The module's BACKUP_SHARE and BACKUP_Z are read at call time; a value out of range stops the audit, naming it."""
    from dptutor.audit import _pair_bounds

    monkeypatch.setattr(_pair_bounds, name, value)
    with pytest.raises(error, match=name):
        audit_pair(plateau, 1, 0, epsilon=1.0, trials=2_000, rng=1, bounds="joint")
    monkeypatch.setattr(_pair_bounds, "BACKUP_SHARE", 0.0)  # no cautious candidate: BACKUP_Z is not read
    assert audit_pair(plateau, 1, 0, epsilon=1.0, trials=2_000, rng=1, bounds="joint").candidates is None
