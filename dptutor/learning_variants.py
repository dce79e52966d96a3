"""Variants of DP-SGD that the Poisson accountant does not describe, for auditing them.

:func:`dptutor.learning.dp_sgd` samples Poisson batches, clips each example's gradient and divides
the noisy sum by the expected batch size: exactly the mechanism its accountant composes.  Three common
departures each make a different mechanism, while the code still quotes the same epsilon:

- ``batching="shuffle"``: each epoch shuffles the data and cuts it into batches of fixed size
  ``round(q N)``, so every example is in exactly one step of each epoch (no subsampling to amplify);
- ``microbatch=b > 1``: the gradient of each group of ``b`` consecutive batch examples is averaged and
  the average clipped to ``C``, so adding or removing one example can move one group's clipped average
  from one side to the other: the sum changes by up to ``2 C``;
- ``normalise="actual"``: the noisy sum is divided by the batch's actual size, which depends on the
  data; the released average moves by up to about ``2 C`` over the batch size (in units of the noise).

Everything is built from :mod:`dptutor.learning`'s public functions.  The noise is floating-point, as
there: statements hold in real arithmetic.

:func:`released_sums` is the part of DP-SGD that an auditor with gradient canaries sees: when every
example's gradient is fixed (it does not depend on the weights), the released noisy clipped-gradient sums
of all the steps, for many runs at once, on the same batch schedules as :func:`dp_sgd_variant`.  The
accountant bounds the privacy loss of this sequence (the trained weights are computed from it), so a
lower bound on its epsilon is a lower bound for the training loop.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import (
    MAX_ELEMENTS,
    check_choice,
    check_float_array,
    check_int,
    check_labels,
    check_positive,
    check_real,
    check_rng,
    check_size,
)
from dptutor.learning import Classifier, clipped_gradient_sum, initial_classifier, per_example_gradients

__all__ = ["noiseless_step", "dp_sgd_variant", "released_sums"]

#: The most steps one run of :func:`dp_sgd_variant` may take.
MAX_VARIANT_STEPS: int = 10**5
#: The most runs one call of :func:`released_sums` may draw.
MAX_RUNS: int = 10**7
#: Array elements :func:`released_sums` holds at once (runs are drawn in chunks of this many membership cells).
SUMS_CHUNK_ELEMENTS: int = 1 << 22


def _check_model(model: object) -> Classifier:
    if not isinstance(model, Classifier):
        raise TypeError(f"model must be a Classifier, got {type(model).__name__}")
    return model


def noiseless_step(
    model: Classifier, X: object, y: object, *, clip: float, microbatch: int = 1, normalise: str = "expected",
    expected_size: float | None = None,
) -> NDArray[np.float64]:
    """The part of one DP-SGD step that does not depend on the noise: the clipped gradient sum of the
    batch ``(X, y)``, flattened like :func:`dptutor.learning.per_example_gradients`, divided by the
    normaliser.

    Parameters
    ----------
    model : Classifier
        The current weights.
    X, y : array_like
        The batch (``X`` may have no rows: the sum is then zero).
    clip : float
        C > 0, applied to each example (``microbatch=1``) or to each group's average gradient.
    microbatch : int
        Examples per group; the last group may be smaller.
    normalise : {"expected", "actual"}
        Divide by ``expected_size`` (a constant, as the accountant assumes) or by ``len(X)`` (at least 1).
    expected_size : float, optional
        The expected batch size q N (> 0); required for ``normalise="expected"``.

    Returns
    -------
    numpy.ndarray
        The flattened normalised sum.  DP-SGD adds ``N(0, (sigma C / normaliser)^2)`` to each coordinate.
    """
    net = _check_model(model)
    x = check_float_array(X, "X", finite=True, ndim=2)
    c = check_positive(clip, "clip")
    b = check_int(microbatch, "microbatch", minimum=1, maximum=10**6)
    how = check_choice(normalise, "normalise", ("expected", "actual"))
    if how == "expected":
        if expected_size is None:
            raise ValueError("expected_size must be given when normalise='expected'")
        divisor = check_positive(expected_size, "expected_size")
    else:
        divisor = float(max(1, x.shape[0]))
    labels = check_float_array(y, "y", finite=True, ndim=1)
    width = sum(w.size for w in net.weights)
    if x.shape[0] == 0:
        per_example_gradients(net, x, labels)  # checks X's columns and y's length even for an empty batch
        return np.zeros(width)
    if b == 1:
        sums, _ = clipped_gradient_sum(net, x, labels, c)
        total = np.concatenate([s.ravel() for s in sums])
    else:
        grads = per_example_gradients(net, x, labels)
        starts = np.arange(0, x.shape[0], b)
        sizes = np.diff(np.append(starts, x.shape[0]))
        means = np.add.reduceat(grads / np.repeat(sizes, sizes)[:, None], starts, axis=0)  # divided first: no overflow
        scale = c / np.maximum(np.hypot.reduce(means, axis=1), c)
        total = (means * scale[:, None]).sum(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        step = total / divisor
    if not np.isfinite(step).all():
        raise ValueError("the step overflows: clip is too large for expected_size (or the batch's size)")
    return step


def _check_schedule(
    noise_multiplier: object, steps: object, sampling_rate: object, clip: object, rng: object, batching: object,
) -> tuple[float, int, float, float, np.random.Generator, str]:
    """The checks shared by :func:`released_sums` and :func:`dp_sgd_variant`: ``(sigma, k, q, C, rng, batching)``."""
    return (check_real(noise_multiplier, "noise_multiplier", low=0.0),
            check_int(steps, "steps", minimum=1, maximum=MAX_VARIANT_STEPS),
            check_real(sampling_rate, "sampling_rate", low=0.0, high=1.0, low_open=True),
            check_positive(clip, "clip"), check_rng(rng), check_choice(batching, "batching", ("poisson", "shuffle")))


def _shuffle_seats(n: int, steps: int, q: float, rng: np.random.Generator, runs: int) -> NDArray[np.int64]:
    """The row indices ``(runs, steps, size)`` of each step's batch under shuffling: every epoch is a fresh
    permutation of the ``n`` rows cut into consecutive batches of ``size = round(q n)`` (at least 1); the
    rows left over after the last full batch sit out that epoch."""
    size = max(1, round(q * n))
    per_epoch = n // size
    epochs = -(-steps // per_epoch)
    order = rng.permuted(np.tile(np.arange(n), (runs, epochs, 1)), axis=-1)
    return order[..., :per_epoch * size].reshape(runs, epochs * per_epoch, size)[:, :steps]


def _batches(n: int, steps: int, q: float, batching: str, rng: np.random.Generator) -> list[NDArray[np.int64]]:
    """The row indices of each step's batch: Poisson, or consecutive slices of per-epoch shuffles."""
    if batching == "poisson":
        return [np.flatnonzero(rng.random(n) < q) for _ in range(steps)]
    return list(_shuffle_seats(n, steps, q, rng, 1)[0])


def released_sums(
    gradients: object,
    *,
    noise_multiplier: float,
    steps: int,
    sampling_rate: float,
    clip: float,
    rng: np.random.Generator,
    batching: str = "poisson",
    runs: int = 1,
) -> NDArray[np.float64]:
    """The noisy clipped-gradient sums that ``steps`` DP-SGD steps release when each example's gradient is
    fixed: the gradient-release mechanism, drawn ``runs`` times.

    Each step takes a batch as :func:`dp_sgd_variant` does (Poisson at rate q, or a fixed-size slice of a
    per-epoch shuffle), sums the batch's gradients clipped to norm C, and adds ``N(0, (sigma C)^2)`` to
    each coordinate.  Gradients that do not depend on the weights are what an auditor's gradient
    (Dirac) canaries and a worst-case choice of the other examples give.

    Parameters
    ----------
    gradients : array_like
        ``(N, d)``: one row per example.
    noise_multiplier : float
        sigma >= 0.
    steps : int
        Number of steps per run.
    sampling_rate : float
        q in (0, 1]: Poisson probability, or the fixed batch size ``round(q N)`` when shuffling.
    clip : float
        C > 0.
    rng : numpy.random.Generator
        The only randomness.
    batching : {"poisson", "shuffle"}
    runs : int
        Independent runs, 1 to ``MAX_RUNS`` (10^7).

    Returns
    -------
    numpy.ndarray
        ``(runs, steps, d)``: the released sum of every step of every run.
    """
    g = check_float_array(gradients, "gradients", finite=True, ndim=2, min_size=1)
    sigma, k, q, c, gen, how = _check_schedule(noise_multiplier, steps, sampling_rate, clip, rng, batching)
    r = check_int(runs, "runs", minimum=1, maximum=MAX_RUNS)
    n, d = g.shape
    check_size((r, k, d), "runs")  # the (runs, steps, d) output must fit the element limit
    if not np.isfinite(sigma * c * 40.0):  # 40 standard deviations: no noise draw may overflow
        raise ValueError(f"noise_multiplier * clip = {sigma * c:g} is too large: the noise would overflow")
    with np.errstate(over="ignore"):
        norms = np.linalg.norm(g, axis=1)
    if not np.isfinite(norms).all():
        raise ValueError("gradients: a row's norm overflows; scale the gradients down")
    clipped = g * (c / np.maximum(norms, c))[:, None]
    per_run = k * n if how == "poisson" else k * max(1, round(q * n)) * d + n  # memberships, or gathered rows
    if per_run > MAX_ELEMENTS:  # refused cheaply, not a MemoryError (or swapping) halfway through
        raise ValueError(f"steps and gradients {g.shape} ask for {per_run:,} elements per run, more than {MAX_ELEMENTS:,}")
    out = np.empty((r, k, d))
    chunk = max(1, SUMS_CHUNK_ELEMENTS // max(per_run, k * d))
    for start in range(0, r, chunk):
        part = out[start:start + chunk]
        if how == "poisson":
            part[...] = np.einsum("rkn,nd->rkd", gen.random((part.shape[0], k, n)) < q, clipped)
        else:
            part[...] = clipped[_shuffle_seats(n, k, q, gen, part.shape[0])].sum(axis=2)
        part += (sigma * c) * gen.standard_normal(part.shape)
    return out


def dp_sgd_variant(
    X: object,
    y: object,
    *,
    noise_multiplier: float,
    steps: int,
    sampling_rate: float,
    clip: float,
    rng: np.random.Generator,
    batching: str = "poisson",
    microbatch: int = 1,
    normalise: str = "expected",
    learning_rate: float = 1.0,
    model: str = "logistic",
) -> Classifier:
    """DP-SGD with a chosen sampler, grouping and normaliser, at a given noise multiplier.

    With the defaults this is the mechanism of :func:`dptutor.learning.dp_sgd` (its accountant's
    epsilon is :func:`dptutor.learning.dp_sgd_epsilon` of the same sigma, steps and q); any other
    choice is one of the mismatches of the module docstring, for which that epsilon is not a guarantee.

    Parameters
    ----------
    X, y : array_like
        Features ``(N, d)`` and integer labels ``(N,)``.
    noise_multiplier : float
        sigma >= 0: each step adds ``N(0, (sigma C)^2)`` to each coordinate of the clipped sum.
    steps : int
        Number of steps.
    sampling_rate : float
        q in (0, 1]: Poisson probability, or the fixed batch size ``round(q N)`` when shuffling.
    clip : float
        C > 0.
    rng : numpy.random.Generator
        The only randomness (initial weights, batches, noise).
    batching : {"poisson", "shuffle"}
    microbatch : int
        See :func:`noiseless_step`.
    normalise : {"expected", "actual"}
        See :func:`noiseless_step`; the expected size is ``q N``.
    learning_rate : float
    model : {"logistic", "mlp"}

    Returns
    -------
    Classifier
        The trained model.
    """
    x = check_float_array(X, "X", finite=True, ndim=2, min_size=1)
    classes, _ = check_labels(y, "y", x.shape[0])
    labels = np.asarray(y, dtype=np.float64)
    sigma, k, q, c, gen, how = _check_schedule(noise_multiplier, steps, sampling_rate, clip, rng, batching)
    lr = check_positive(learning_rate, "learning_rate")
    if k * max(1, round(q * x.shape[0])) > MAX_ELEMENTS:  # the batches' row indices, all held at once
        raise ValueError(f"steps * batch size (sampling_rate * rows of X) must be at most {MAX_ELEMENTS:,}")
    net = initial_classifier(x.shape[1], classes, model=model, rng=gen)
    expected = q * x.shape[0]
    diverged = ValueError("training diverged to non-finite weights: lower learning_rate, clip or noise_multiplier, "
                          "or raise sampling_rate")
    with np.errstate(over="ignore", invalid="ignore"):  # divergence is an error below, not a warning
        for batch in _batches(x.shape[0], k, q, how, gen):
            try:
                step = noiseless_step(net, x[batch], labels[batch], clip=c, microbatch=microbatch,
                                      normalise=normalise, expected_size=expected)
            except ValueError as exc:
                if "overflow" in str(exc) or not all(np.isfinite(w).all() for w in net.weights):
                    raise diverged from exc
                raise
            divisor = expected if normalise == "expected" else max(1, batch.size)
            step = step + (sigma * c / divisor) * gen.standard_normal(step.shape)
            start = 0
            for w in net.weights:  # in place, in per_example_gradients' flattened order
                w -= lr * step[start:start + w.size].reshape(w.shape)
                start += w.size
    if not all(np.isfinite(w).all() for w in net.weights):
        raise diverged
    return net
