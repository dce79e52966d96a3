"""The book's figures (one function per figure kind; each returns a :class:`matplotlib.figure.Figure`).

Chapters call these, glue the figure with myst-nb and close it.  Functions never call
``plt.show()``.  Several helpers append to this module: keep each section's helpers prefixed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


# ---------------------------------------------------------------------------------------------
# Part II, chapters "Sampling by inverse CDF" and "How DPText broke differential privacy"
# (the paper's Figures 1 and 3, and the histogram / ECDF / neighbouring-density checks)
# ---------------------------------------------------------------------------------------------


def _icdf_check_limits(limits: object, name: str = "limits") -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in limits)  # type: ignore[union-attr]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a pair of real numbers (low, high)") from exc
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"{name} must be finite with low < high, got {(lo, hi)!r}")
    return lo, hi


def _icdf_check_bins(bins: object) -> int:
    if isinstance(bins, (bool, np.bool_)) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"bins must be a positive int, got {bins!r}")
    return int(bins)


def _icdf_samples(values: object, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real-valued samples (got dtype {arr.dtype})")
    arr = arr.astype(np.float64, copy=False).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    return arr


def plot_inverse_cdfs(mu: float = 0.0, b: float = 1.0, *, num: int = 2001, ylim: float = 5.0) -> Figure:
    """The paper's Figure 1: inverse CDFs for Laplace sampling, in two panels.

    Left: Eq. 4 on ``u`` in (0, 1) and Eq. 7 on ``v`` in (-1/2, 1/2): the same curve, shifted by 1/2.
    Right: DPText's Eq. 9 on ``v`` in [0, 1) (Eq. 8).  On [0, 1/2) it is the finite, increasing part;
    on (1/2, 1) numpy returns NaN, which cannot be drawn: the region is shaded and the *real part*
    of the complex value ``mu - b ln(1 - 2v)`` (principal branch, ``ln|1 - 2v| + i pi``) is drawn
    dotted, to show that it decreases.  Values are clipped to ``mu +- ylim * b`` for display.
    """
    from dptutor.distributions import dptext_transform, laplace_ppf, laplace_ppf_centered

    if isinstance(num, (bool, np.bool_)) or not isinstance(num, (int, np.integer)) or num < 11:
        raise ValueError(f"num must be an int >= 11, got {num!r}")
    if not (isinstance(ylim, (int, float)) and np.isfinite(ylim) and ylim > 0):
        raise ValueError(f"ylim must be a positive finite number, got {ylim!r}")
    # Open grids: the end points map to +-inf.
    u = np.linspace(0.0, 1.0, num + 2)[1:-1]
    v_centred = u - 0.5
    v_half = np.linspace(0.0, 0.5, num + 1)[:-1]
    v_upper = np.linspace(0.5, 1.0, num + 2)[1:-1]
    lo, hi = mu - ylim * b, mu + ylim * b

    fig, (ax_ok, ax_bad) = plt.subplots(1, 2, figsize=(10.5, 4.0), sharey=True, layout="constrained")

    ax_ok.plot(u, laplace_ppf(u, mu, b), color="C0", lw=2.5, label=r"Eq. (4), $u \sim \mathrm{Uni}(0, 1)$")
    ax_ok.plot(v_centred, laplace_ppf_centered(v_centred, mu, b), color="C1", lw=2.5, ls="--",
               label=r"Eq. (7), $v \sim \mathrm{Uni}(-\frac{1}{2}, \frac{1}{2})$")
    ax_ok.set_title("Correct: each formula with its own uniform")
    ax_ok.set_xlabel("uniform draw ($u$ or $v$)")
    ax_ok.set_ylabel(r"sample $F^{-1}$")
    ax_ok.set_xlim(-0.55, 1.05)

    ax_bad.plot(u, laplace_ppf(u, mu, b), color="0.75", lw=2.0, label="Eq. (4), for comparison")
    ax_bad.plot(v_half, dptext_transform(v_half, mu, b), color="C3", lw=2.5,
                label=r"Eq. (9), $v \in [0, \frac{1}{2})$: finite, $\geq \mu$")
    real_part = np.real(mu - b * np.sign(v_upper) * np.log((1.0 - 2.0 * np.abs(v_upper)).astype(complex)))
    ax_bad.plot(v_upper, real_part, color="C3", lw=1.5, ls=":",
                label=r"Eq. (9), $v > \frac{1}{2}$: real part of a complex number")
    ax_bad.axvspan(0.5, 1.0, color="C3", alpha=0.08, lw=0)
    ax_bad.text(0.75, lo + 0.12 * (hi - lo), "NaN in numpy", ha="center", va="center", color="C3")
    ax_bad.set_title(r"DPText: Eq. (9) with $v \sim \mathrm{Uni}(0, 1)$")
    ax_bad.set_xlabel("uniform draw $v$")
    ax_bad.set_xlim(-0.05, 1.05)

    for ax in (ax_ok, ax_bad):
        ax.axhline(mu, color="0.5", lw=0.8)
        ax.axvline(0.5, color="0.5", lw=0.8, ls="--")
        ax.set_ylim(lo, hi)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize="small")
    return fig


def plot_sampling_strategies(
    panels: Sequence[tuple], *, bins: int = 100, limits: tuple[float, float] = (-8.0, 8.0), ncols: int = 3
) -> Figure:
    """The paper's Figure 3: one histogram (counts) per sampling strategy.

    ``panels`` is a sequence of ``(title, samples)`` or ``(title, samples, (low, high))``; the
    default range is ``limits``.  Only finite samples are plotted; when a panel holds NaN or
    infinite values, their fraction is written in the panel (NaNs cannot be binned).  Samples
    outside the range are not drawn.
    """
    if not isinstance(panels, Sequence) or isinstance(panels, (str, bytes)) or len(panels) == 0:
        raise ValueError("panels must be a non-empty sequence of (title, samples[, (low, high)])")
    bins = _icdf_check_bins(bins)
    default = _icdf_check_limits(limits)
    if isinstance(ncols, (bool, np.bool_)) or not isinstance(ncols, (int, np.integer)) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    specs = []
    for i, panel in enumerate(panels):
        if not isinstance(panel, tuple) or len(panel) not in (2, 3) or not isinstance(panel[0], str):
            raise ValueError(f"panels[{i}] must be (title, samples) or (title, samples, (low, high))")
        rng_ = _icdf_check_limits(panel[2], f"panels[{i}] range") if len(panel) == 3 else default
        specs.append((panel[0], _icdf_samples(panel[1], f"panels[{i}] samples"), rng_))

    ncols = min(int(ncols), len(specs))
    nrows = -(-len(specs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.9 * nrows), layout="constrained",
                             squeeze=False)
    for ax, (title, x, (lo, hi)) in zip(axes.flat, specs):
        finite = np.isfinite(x)
        ax.hist(x[finite], bins=bins, range=(lo, hi), color="C0")
        ax.set_title(title, fontsize="medium")
        ax.set_xlim(lo, hi)
        ax.grid(alpha=0.3)
        bad = 1.0 - finite.mean()
        if bad > 0:
            ax.text(0.97, 0.95, f"not finite (NaN): {100 * bad:.1f}%\nnot drawn", transform=ax.transAxes,
                    ha="right", va="top", fontsize="small", color="C3")
    for ax in axes.flat[len(specs):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("count")
    return fig


def plot_histograms_with_pdf(
    samples: Mapping[str, object],
    pdf: Callable[[np.ndarray], np.ndarray],
    *,
    limits: tuple[float, float] = (-6.0, 6.0),
    bins: int = 80,
    pdf_label: str = "density",
) -> Figure:
    """One density-scaled histogram per entry of ``samples``, with ``pdf`` drawn over each.

    Heights are ``count / (n * bin width)`` with ``n`` the *total* number of samples, so they
    estimate the density even though the samples outside ``limits`` are not drawn.
    """
    if not isinstance(samples, Mapping) or len(samples) == 0:
        raise ValueError("samples must be a non-empty mapping label -> samples")
    if not callable(pdf):
        raise TypeError("pdf must be callable")
    lo, hi = _icdf_check_limits(limits)
    bins = _icdf_check_bins(bins)
    grid = np.linspace(lo, hi, 801)
    density = np.asarray(pdf(grid), dtype=np.float64)
    fig, axes = plt.subplots(1, len(samples), figsize=(3.8 * len(samples), 3.0), sharey=True,
                             layout="constrained", squeeze=False)
    width = (hi - lo) / bins
    for ax, (label, values) in zip(axes.flat, samples.items()):
        x = _icdf_samples(values, f"samples[{label!r}]")
        ax.hist(x, bins=bins, range=(lo, hi), weights=np.full(x.size, 1.0 / (x.size * width)),
                color="C0", alpha=0.7, label="histogram")
        ax.plot(grid, density, color="C3", lw=1.5, label=pdf_label)
        ax.set_title(str(label), fontsize="medium")
        ax.set_xlim(lo, hi)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("density")
    axes[0, 0].legend(loc="upper left", fontsize="small")
    return fig


def plot_ecdfs(
    samples: Mapping[str, object],
    cdfs: Mapping[str, Callable[[np.ndarray], np.ndarray]],
    *,
    limits: tuple[float, float] = (-4.0, 6.0),
) -> Figure:
    """Empirical CDFs of ``samples`` (steps) against closed-form CDFs (``cdfs``, smooth lines).

    NaN samples count in the denominator but are never ``<= x``, so a sampler that returns NaN
    shows as an ECDF that never reaches 1 (a defective law).
    """
    if not isinstance(samples, Mapping) or len(samples) == 0:
        raise ValueError("samples must be a non-empty mapping label -> samples")
    if not isinstance(cdfs, Mapping):
        raise TypeError("cdfs must be a mapping label -> callable")
    for label, cdf in cdfs.items():
        if not callable(cdf):
            raise TypeError(f"cdfs[{label!r}] must be callable")
    lo, hi = _icdf_check_limits(limits)
    grid = np.linspace(lo, hi, 1001)
    fig, ax = plt.subplots(figsize=(7.0, 4.0), layout="constrained")
    for i, (label, values) in enumerate(samples.items()):
        x = _icdf_samples(values, f"samples[{label!r}]")
        finite = np.sort(x[np.isfinite(x)])
        ecdf = np.searchsorted(finite, grid, side="right") / x.size
        ax.step(grid, ecdf, where="post", color=f"C{i}", lw=2.5, alpha=0.5, label=f"{label} (samples)")
    for j, (label, cdf) in enumerate(cdfs.items()):
        ax.plot(grid, np.asarray(cdf(grid), dtype=np.float64), color=f"C{j}", lw=1.2, ls="--",
                label=f"{label} (closed form)")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("$x$")
    ax.set_ylabel(r"$\Pr(\mathrm{output} \leq x)$")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    return fig


def plot_neighbouring_densities(
    panels: Sequence[tuple[str, Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]],
    *,
    z: float,
    limits: tuple[float, float] = (-4.0, 6.0),
    labels: tuple[str, str] = ("$X = 0$", "$X' = 1$"),
) -> Figure:
    """Output densities of a mechanism on two neighbouring inputs, one panel per mechanism.

    ``panels`` holds ``(title, pdf_x, pdf_x_prime)``.  The output ``z`` is marked, with the two
    density values at ``z`` as dots: the privacy loss at ``z`` is the log of their ratio.
    """
    if not isinstance(panels, Sequence) or len(panels) == 0:
        raise ValueError("panels must be a non-empty sequence of (title, pdf_x, pdf_x_prime)")
    for i, panel in enumerate(panels):
        if not (isinstance(panel, tuple) and len(panel) == 3 and callable(panel[1]) and callable(panel[2])):
            raise ValueError(f"panels[{i}] must be (title, pdf_x, pdf_x_prime) with two callables")
    lo, hi = _icdf_check_limits(limits)
    if not (isinstance(z, (int, float, np.floating)) and lo < float(z) < hi):
        raise ValueError(f"z must be a real number inside limits {(lo, hi)}, got {z!r}")
    grid = np.linspace(lo, hi, 1001)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.2), sharey=True,
                             layout="constrained", squeeze=False)
    for ax, (title, pdf_x, pdf_xp) in zip(axes.flat, panels):
        for k, (pdf, lab) in enumerate(((pdf_x, labels[0]), (pdf_xp, labels[1]))):
            ax.plot(grid, np.asarray(pdf(grid), dtype=np.float64), color=f"C{k}", lw=2, label=lab)
            ax.plot([z], [float(np.asarray(pdf(np.array([z], dtype=np.float64)))[0])], "o", color=f"C{k}")
        ax.axvline(z, color="0.3", lw=0.8, ls="--")
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("output $z$")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("density")
    axes[0, 0].legend(loc="upper right", fontsize="small")
    return fig
