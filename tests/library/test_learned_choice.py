"""audit_pair's learned statistic is chosen on its selection half: every candidate of ``fit_candidates`` is counted
on the same selection runs and the one whose best cut projects the highest bound is kept."""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest

from dptutor.audit import AUTO_CANDIDATES, LearnedStatistic, audit_pair, fit_candidates
from dptutor.audit import pair as pair_module


def scale_change(data, size, rng):
    """Three coordinates of Laplace noise whose scale, not whose centre, depends on the dataset."""
    return rng.laplace(0.0, 1.0 if data == "narrow" else 2.0, size=(size, 3))


def shifted_copies(data, size, rng):
    """The three inputs plus Laplace noise of scale 1 on each."""
    return np.asarray(data, dtype=np.float64) + rng.laplace(0.0, 1.0, size=(size, 3))


def test_fit_candidates_fits_every_model_and_the_templates_that_apply():
    rng = np.random.default_rng(0)
    a, b = shifted_copies((0.0, 0.0, 0.0), 2_000, rng), shifted_copies((1.0, 1.0, 1.0), 2_000, rng)
    kinds = [m for m, _, _ in AUTO_CANDIDATES]
    with_inputs = fit_candidates(a, b, rng=1, inputs=((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)))
    assert [s.kind for s in with_inputs] == kinds + ["template", "running"]
    assert all(isinstance(s, LearnedStatistic) and s(a).shape == (2_000,) for s in with_inputs)
    assert [s.kind for s in fit_candidates(a, b, rng=1)] == kinds  # no inputs: no template
    one = fit_candidates(a[:, :1], b[:, :1], rng=1, inputs=(0.0, 1.0))
    assert [s.kind for s in one] == kinds + ["template"]  # one value per output: no running totals
    same = fit_candidates(np.zeros((50, 2)), np.zeros((50, 2)), rng=1)
    assert len(same) == 1 and not same[0](np.ones((3, 2))).any()  # nothing to learn: one constant
    with pytest.raises(ValueError, match="outputs_x_prime"):
        fit_candidates(a, b[:, :2])
    with pytest.raises(ValueError, match="rng"):
        fit_candidates(a, b, rng=-1)


def test_the_statistic_kept_is_the_best_scoring_candidate(monkeypatch):
    scores: list[float] = []
    real = pair_module.selection_score
    monkeypatch.setattr(pair_module, "selection_score", lambda *a, **k: scores.append(real(*a, **k)) or scores[-1])
    r = audit_pair(scale_change, "narrow", "wide", epsilon=3.0, trials=60_000, rng=5)
    kinds = [m for m, _, _ in AUTO_CANDIDATES]  # inputs that are not numbers: no template
    assert len(scores) == len(kinds) and min(scores) < max(scores)
    best = kinds[int(np.argmax(scores))]
    assert r.event.startswith(f"learned_{best}(output)")
    assert r.lower_bound > 1.0  # the loss is unbounded: the wider noise alone reaches far out


def test_the_choice_does_not_depend_on_the_parallelism():
    kw = dict(epsilon=3.0, trials=70_000, rng=11)
    x, x_prime = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    serial = audit_pair(shifted_copies, x, x_prime, **kw)
    pooled = audit_pair(shifted_copies, x, x_prime, **kw, workers=2)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        threaded = audit_pair(shifted_copies, x, x_prime, **kw, executor=pool)
    for other in (pooled, threaded):
        assert (other.lower_bound, other.event, other.counts.tolist()) == (serial.lower_bound, serial.event,
                                                                            serial.counts.tolist())
    assert serial.event.startswith("learned_") and 0.0 < serial.lower_bound <= 3.0


def test_an_executor_returning_wrong_counts_for_the_candidates_is_named():
    class Broken(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            future = concurrent.futures.Future()
            future.set_result(np.zeros((2, 3), dtype=np.int64))
            return future

    with Broken(1) as pool, pytest.raises(TypeError, match="executor"):
        audit_pair(shifted_copies, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), epsilon=3.0, trials=70_000, rng=1, executor=pool)
