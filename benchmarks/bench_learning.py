"""DP-SGD against non-private SGD, and the one-run audit, timed side by side in one run.

    .venv/bin/python benchmarks/bench_learning.py

Prints, on scikit-learn's digits (the training three quarters, pixels scaled to [0, 1]):

* one epoch of :func:`dptutor.learning.dp_sgd` and of :func:`dptutor.learning.sgd` with the same seed,
  hence the same initial weights and Poisson batches, for logistic regression and the one-hidden-layer
  network, at two sampling rates, and their ratio (the issue's goal: at most 2).  The noise multiplier
  search is timed apart (cold, once); inside the epochs the accountant's answers are cached, so the
  ratio measures what DP-SGD adds to a step: the per-example norms, the rescaling and the noise;
* the one-run audit (:func:`dptutor.audit.one_run.audit_one_run`) of 1,000 canaries, pure and with
  delta = 1e-5 (goal: under 1 s).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best_times  # noqa: E402

from dptutor.audit.one_run import audit_one_run  # noqa: E402
from dptutor.learning import dp_sgd, noise_multiplier, sgd  # noqa: E402

REPEATS = 5
EPSILON, DELTA, CLIP = 8.0, 1e-5, 1.0


def epoch_ratio(X: np.ndarray, y: np.ndarray, model: str, q: float) -> tuple[float, float]:
    """Best-of-REPEATS seconds of one DP-SGD epoch and one SGD epoch (same seed, same batches)."""
    common = dict(epochs=1, sampling_rate=q, model=model, learning_rate=2.0)
    times = best_times({
        "dp": lambda: dp_sgd(X, y, epsilon=EPSILON, delta=DELTA, clip=CLIP, rng=np.random.default_rng(0), **common),
        "plain": lambda: sgd(X, y, rng=np.random.default_rng(0), **common),
    }, REPEATS)
    return times["dp"], times["plain"]


def main() -> None:
    X, y = load_digits(return_X_y=True)
    Xtr, _, ytr, _ = train_test_split(X / 16.0, y, test_size=0.25, random_state=0)
    print(f"digits: {len(Xtr)} training examples, {Xtr.shape[1]} features; (epsilon, delta) = ({EPSILON:g}, {DELTA:g})")
    t0 = time.perf_counter()
    noise_multiplier(EPSILON, DELTA, round(1 / 0.01), 0.01)
    print(f"noise multiplier search (cold, 100 steps at q = 0.01): {time.perf_counter() - t0:.3f} s")
    print("model    q      DP-SGD epoch   SGD epoch   ratio")
    for model in ("logistic", "mlp"):
        for q in (0.01, 0.05):
            dp, plain = epoch_ratio(Xtr, ytr, model, q)
            print(f"{model:8s} {q:<6g} {dp * 1e3:10.2f} ms {plain * 1e3:8.2f} ms  {dp / plain:5.2f}")
    for delta in (0.0, 1e-5):
        t0 = time.perf_counter()
        bound = audit_one_run(700, 1000, 1000, delta=delta)
        print(f"one-run audit, 1,000 canaries, 700 of 1,000 guesses right, delta = {delta:g}: "
              f"epsilon >= {bound:.4f} in {time.perf_counter() - t0:.4f} s")


if __name__ == "__main__":
    main()
