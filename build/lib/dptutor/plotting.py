"""The book's figures (one function per figure kind; each returns a :class:`matplotlib.figure.Figure`).

Chapters call these, glue the figure with myst-nb and close it.  Functions never call
``plt.show()``.  Inputs are checked with :mod:`dptutor._validate` before anything is drawn, so a bad
argument costs no figure and its error names the parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from dptutor._validate import (
    check_bool,
    check_callable,
    check_float_array,
    check_int,
    check_interval,
    check_mapping,
    check_positive,
    check_probability,
    check_real,
    check_sequence,
    check_str,
)

__all__ = [
    "plot_inverse_cdfs",
    "plot_sampling_strategies",
    "plot_histograms_with_pdf",
    "plot_ecdfs",
    "plot_neighbouring_densities",
    "plot_uniform_distributions",
    "plot_laplace_family",
    "plot_loss_regions",
    "plot_laplace_mechanism",
    "plot_sanity_check",
    "plot_seed_estimates",
    "plot_loss_agreement",
    "fp_plot_impossible_fractions",
    "SANITY_PANELS",
]

#: Most histogram bins, grid points, panels or dimensions a figure draws (more is a mistake).
MAX_BINS: int = 100_000
MAX_PANELS: int = 64
#: Largest magnitude of a location or scale drawn: the grids around them must stay finite.
MAX_DRAWN: float = 1e100


def _samples(values: object, name: str) -> np.ndarray:
    """Samples to histogram, flattened; NaN and inf allowed (they are counted, not drawn)."""
    return check_float_array(values, name, allow_nan=True, min_size=1).reshape(-1)


def _losses(values: object, name: str) -> np.ndarray:
    """A 1-D array of losses: each >= 0 or +inf, never NaN."""
    return check_float_array(values, name, min_size=1, low=0.0).reshape(-1)


def _curve(fn: Callable, grid: np.ndarray, name: str) -> np.ndarray:
    """``fn(grid)`` as float64 values, one per grid point (a user function's output, checked by name)."""
    values = check_float_array(fn(grid), f"{name}(x)", allow_nan=True)
    if values.shape != grid.shape:
        raise ValueError(f"{name} must return one value per point of its input, got shape {values.shape}")
    return values


# ---------------------------------------------------------------------------------------------
# Part II, chapters "Sampling by inverse CDF" and "How DPText broke differential privacy"
# (the paper's Figures 1 and 3, and the histogram / ECDF / neighbouring-density checks)
# ---------------------------------------------------------------------------------------------


def plot_inverse_cdfs(mu: float = 0.0, b: float = 1.0, *, num: int = 2001, ylim: float = 5.0) -> Figure:
    """The paper's Figure 1: inverse CDFs for Laplace sampling, in two panels.

    Left: Eq. 4 on ``u`` in (0, 1) and Eq. 7 on ``v`` in (-1/2, 1/2): the same curve, shifted by 1/2.
    Right: DPText's Eq. 9 on ``v`` in [0, 1) (Eq. 8).  On [0, 1/2) it is the finite, increasing part;
    on (1/2, 1) numpy returns NaN, which cannot be drawn: the region is shaded and the *real part*
    of the complex value ``mu - b ln(1 - 2v)`` (principal branch, ``ln|1 - 2v| + i pi``) is drawn
    dotted, to show that it decreases.  Values are clipped to ``mu +- ylim * b`` for display.
    """
    from dptutor.distributions import dptext_transform, laplace_ppf, laplace_ppf_centered

    mu = check_real(mu, "mu", low=-MAX_DRAWN, high=MAX_DRAWN)
    b = check_positive(b, "b")
    num = check_int(num, "num", minimum=11, maximum=MAX_BINS)
    ylim = check_positive(ylim, "ylim")
    if not (b <= MAX_DRAWN and ylim * b <= MAX_DRAWN and ylim * b > 1e-9 * max(1.0, abs(mu))):
        raise ValueError(f"b = {b:g} and ylim = {ylim:g} give a y range that cannot be drawn around mu = {mu:g}")
    # Open grids: the end points map to +-inf.
    u = np.linspace(0.0, 1.0, num + 2)[1:-1]
    v_centred = u - 0.5
    v_half = np.linspace(0.0, 0.5, num + 1)[:-1]
    v_upper = np.linspace(0.5, 1.0, num + 2)[1:-1]
    lo, hi = mu - ylim * b, mu + ylim * b

    fig, (ax_ok, ax_bad) = plt.subplots(1, 2, figsize=(8.6, 4.4), sharey=True, layout="constrained")

    ax_ok.plot(u, laplace_ppf(u, mu, b), color="C0", lw=2.5, label=r"paper's Eq. 4, $u \sim \mathrm{Uni}(0, 1)$")
    ax_ok.plot(v_centred, laplace_ppf_centered(v_centred, mu, b), color="C1", lw=2.5, ls="--",
               label=r"paper's Eq. 7, $v \sim \mathrm{Uni}(-\frac{1}{2}, \frac{1}{2})$")
    ax_ok.set_title("Correct: each formula with its own uniform")
    ax_ok.set_xlabel("uniform draw ($u$ or $v$)")
    ax_ok.set_ylabel(r"sample $F^{-1}$")
    ax_ok.set_xlim(-0.55, 1.05)

    ax_bad.plot(u, laplace_ppf(u, mu, b), color="0.75", lw=2.0, label="paper's Eq. 4, for comparison")
    ax_bad.plot(v_half, dptext_transform(v_half, mu, b), color="C3", lw=2.5,
                label=r"paper's Eq. 9, $v \in [0, \frac{1}{2})$: finite, $\geq \mu$")
    real_part = np.real(mu - b * np.sign(v_upper) * np.log((1.0 - 2.0 * np.abs(v_upper)).astype(complex)))
    ax_bad.plot(v_upper, real_part, color="C3", lw=1.5, ls=":",
                label=r"paper's Eq. 9, $v > \frac{1}{2}$: real part of a complex number")
    ax_bad.axvspan(0.5, 1.0, color="C3", alpha=0.08, lw=0)
    ax_bad.text(0.75, lo + 0.12 * (hi - lo), "NaN in numpy", ha="center", va="center", color="C3")
    ax_bad.set_title(r"DPText: the paper's Eq. 9 with $v \sim \mathrm{Uni}(0, 1)$")
    ax_bad.set_xlabel("uniform draw $v$")
    ax_bad.set_xlim(-0.05, 1.05)

    for ax in (ax_ok, ax_bad):
        ax.axhline(mu, color="0.5", lw=0.8)
        ax.axvline(0.5, color="0.5", lw=0.8, ls="--")
        ax.set_ylim(lo, hi)
        ax.grid(alpha=0.3)
        # Below the axes: inside, the legend would hide the curves' steep ends.
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize="small", frameon=False)
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
    panel_list = check_sequence(panels, "panels")
    if len(panel_list) > MAX_PANELS:
        raise ValueError(f"panels must hold at most {MAX_PANELS} panels, got {len(panel_list)}")
    bins = check_int(bins, "bins", minimum=1, maximum=MAX_BINS)
    default = check_interval(limits, "limits")
    ncols = check_int(ncols, "ncols", minimum=1, maximum=MAX_PANELS)
    specs = []
    for i, panel in enumerate(panel_list):
        if not isinstance(panel, tuple) or len(panel) not in (2, 3) or not isinstance(panel[0], str):
            raise ValueError(f"panels[{i}] must be (title, samples) or (title, samples, (low, high))")
        rng_ = check_interval(panel[2], f"panels[{i}] range") if len(panel) == 3 else default
        specs.append((panel[0], _samples(panel[1], f"panels[{i}] samples"), rng_))

    ncols = min(int(ncols), len(specs))
    nrows = -(-len(specs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.6 * nrows), layout="constrained",
                             squeeze=False)
    for ax, (title, x, (lo, hi)) in zip(axes.flat, specs):
        finite = np.isfinite(x)
        ax.hist(x[finite], bins=bins, range=(lo, hi), color="C0")
        ax.set_title(title, fontsize="medium")
        ax.set_xlim(lo, hi)
        ax.set_xlabel("noise value")
        ax.grid(alpha=0.3)
        bad = 1.0 - finite.mean()
        if bad > 0:
            ax.text(0.03, 0.95, f"not finite (NaN):\n{100 * bad:.1f}% of draws,\nnot drawn",
                    transform=ax.transAxes, ha="left", va="top", fontsize="small", color="C3")
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
    xlabel: str = "sample value $x$",
) -> Figure:
    """One density-scaled histogram per entry of ``samples``, with ``pdf`` drawn over each.

    Heights are ``count / (n * bin width)`` with ``n`` the *total* number of samples, so they
    estimate the density even though the samples outside ``limits`` are not drawn.
    """
    check_mapping(samples, "samples")
    if len(samples) > MAX_PANELS:
        raise ValueError(f"samples must hold at most {MAX_PANELS} entries, got {len(samples)}")
    check_callable(pdf, "pdf", "pdf(x)")
    lo, hi = check_interval(limits, "limits")
    bins = check_int(bins, "bins", minimum=1, maximum=MAX_BINS)
    pdf_label = check_str(pdf_label, "pdf_label")
    xlabel = check_str(xlabel, "xlabel")
    data = {label: _samples(values, f"samples[{label!r}]") for label, values in samples.items()}
    grid = np.linspace(lo, hi, 801)
    with np.errstate(over="ignore", under="ignore"):  # limits near the float range: steps overflow to inf
        width = (hi - lo) / bins
    if not (np.isfinite(grid).all() and np.isfinite(width) and width > 0):
        raise ValueError(f"limits {(lo, hi)} are too wide or too narrow to draw {bins} bins")
    density = _curve(pdf, grid, "pdf")
    fig, axes = plt.subplots(1, len(samples), figsize=(2.9 * len(samples), 2.8), sharey=True,
                             layout="constrained", squeeze=False)
    for ax, (label, x) in zip(axes.flat, data.items()):
        ax.hist(x, bins=bins, range=(lo, hi), weights=np.full(x.size, 1.0 / (x.size * width)),
                color="C0", alpha=0.7, label="histogram")
        ax.plot(grid, density, color="C3", lw=1.5, label=pdf_label)
        ax.set_title(str(label), fontsize="medium")
        ax.set_xlim(lo, hi)
        ax.set_xlabel(str(xlabel))
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
    check_mapping(samples, "samples")
    check_mapping(cdfs, "cdfs", min_len=0)
    if len(samples) + len(cdfs) > MAX_PANELS:
        raise ValueError(f"samples and cdfs must hold at most {MAX_PANELS} curves in all")
    for label, cdf in cdfs.items():
        check_callable(cdf, f"cdfs[{label!r}]", "cdf(x)")
    lo, hi = check_interval(limits, "limits")
    grid = np.linspace(lo, hi, 1001)
    if not np.isfinite(grid).all():
        raise ValueError(f"limits {(lo, hi)} are too wide to draw")
    data = {label: _samples(values, f"samples[{label!r}]") for label, values in samples.items()}
    curves = {label: _curve(cdf, grid, f"cdfs[{label!r}]") for label, cdf in cdfs.items()}
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    for i, (label, x) in enumerate(data.items()):
        finite = np.sort(x[np.isfinite(x)])
        ecdf = np.searchsorted(finite, grid, side="right") / x.size
        ax.step(grid, ecdf, where="post", color=f"C{i}", lw=2.5, alpha=0.5, label=f"{label} (samples)")
    for j, (label, values) in enumerate(curves.items()):
        ax.plot(grid, values, color=f"C{j}", lw=1.2, ls="--",
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
    panel_list = check_sequence(panels, "panels")
    if len(panel_list) > MAX_PANELS:
        raise ValueError(f"panels must hold at most {MAX_PANELS} panels, got {len(panel_list)}")
    for i, panel in enumerate(panel_list):
        if not (isinstance(panel, tuple) and len(panel) == 3 and callable(panel[1]) and callable(panel[2])):
            raise ValueError(f"panels[{i}] must be (title, pdf_x, pdf_x_prime) with two callables")
    lo, hi = check_interval(limits, "limits")
    z = check_real(z, "z")
    if not lo < z < hi:
        raise ValueError(f"z must lie inside limits {(lo, hi)}, got {z!r}")
    label_list = [check_str(s, "labels") for s in check_sequence(labels, "labels", min_len=2)]
    if len(label_list) != 2:
        raise ValueError(f"labels must be two strings, got {len(label_list)}")
    labels = (label_list[0], label_list[1])
    grid = np.linspace(lo, hi, 1001)
    if not np.isfinite(grid).all():
        raise ValueError(f"limits {(lo, hi)} are too wide to draw")
    point = np.array([z])
    drawn = [
        (str(title), [(_curve(pdf, grid, f"panels[{i}] pdf"), float(_curve(pdf, point, f"panels[{i}] pdf")[0]))
                      for pdf in (pdf_x, pdf_xp)])
        for i, (title, pdf_x, pdf_xp) in enumerate(panel_list)
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.0), sharey=True,
                             layout="constrained", squeeze=False)
    for ax, (title, curves) in zip(axes.flat, drawn):
        for k, ((values, at_z), lab) in enumerate(zip(curves, labels)):
            ax.plot(grid, values, color=f"C{k}", lw=2, label=lab)
            ax.plot([z], [at_z], "o", color=f"C{k}")
        ax.axvline(z, color="0.3", lw=0.8, ls="--")
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("output $z$")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("density")
    axes[0, 0].legend(loc="upper right", fontsize="small")
    return fig


# ---------------------------------------------------------------------------------------------
# Part I, chapters "A probability primer" and "The Laplace mechanism"
# ---------------------------------------------------------------------------------------------


def plot_uniform_distributions(
    k: int = 6, intervals: Sequence[tuple[float, float]] = ((0.0, 1.0), (-0.5, 0.5))
) -> Figure:
    """Left: the PMF of the discrete uniform law on {1, ..., k}.  Right: the PDFs of Uni(low, high).

    The default intervals are the paper's two uniforms, Uni(0, 1) (Eq. 8) and Uni(-1/2, 1/2) (Eq. 6).
    """
    k = check_int(k, "k", minimum=1, maximum=1000)
    interval_list = check_sequence(intervals, "intervals")
    if len(interval_list) > MAX_PANELS:
        raise ValueError(f"intervals must hold at most {MAX_PANELS} pairs, got {len(interval_list)}")
    pairs = [check_interval(iv, f"intervals[{i}]") for i, iv in enumerate(interval_list)]
    low, high = min(lo for lo, _ in pairs), max(hi for _, hi in pairs)
    with np.errstate(over="ignore"):
        spans = [hi - lo for lo, hi in pairs] + [high - low]
    if not all(np.isfinite(s) and 1.0 / s < np.inf for s in spans):
        raise ValueError("intervals must have widths that can be drawn (not near 0 or the float range)")

    fig, (ax_pmf, ax_pdf) = plt.subplots(1, 2, figsize=(9.5, 3.4), layout="constrained")
    values = np.arange(1, k + 1)
    ax_pmf.vlines(values, 0, 1 / k, color="C0", lw=2)
    ax_pmf.plot(values, np.full(k, 1 / k), "o", color="C0")
    ax_pmf.set(xlabel="$x$", ylabel="$p_X(x)$", title=f"Discrete uniform on $\\{{1, \\dots, {k}\\}}$",
               ylim=(0, 1.5 / k), xticks=values)

    low = min(lo for lo, _ in pairs)
    high = max(hi for _, hi in pairs)
    pad = 0.25 * (high - low)
    for i, (lo, hi) in enumerate(pairs):
        height = 1.0 / (hi - lo)
        # The density as a step: 0 outside [lo, hi], 1 / (hi - lo) inside.
        ax_pdf.plot([low - pad, lo, lo, hi, hi, high + pad], [0, 0, height, height, 0, 0],
                    color=f"C{i}", lw=2.5 if i == 0 else 2, ls="-" if i == 0 else "--",
                    label=f"Uni({lo:g}, {hi:g})")
    ax_pdf.set(xlabel="$x$", ylabel="$f_X(x)$", title="Continuous uniform densities",
               ylim=(0, 1.35 * max(1.0 / (hi - lo) for lo, hi in pairs)))
    ax_pdf.legend(loc="upper right", fontsize="small")
    for ax in (ax_pmf, ax_pdf):
        ax.grid(alpha=0.3)
    return fig


def plot_laplace_family(
    mus: Sequence[float] = (-2.0, 0.0, 2.0), bs: Sequence[float] = (0.5, 1.0, 2.0), *, span: float = 7.0
) -> Figure:
    """Left: Lap(mu, 1) for each ``mu`` (changing mu translates the curve).  Right: Lap(0, b) for each ``b``."""
    from dptutor.distributions import laplace_pdf

    mus = [float(m) for m in check_float_array(mus, "mus", finite=True, ndim=1, min_size=1)]
    bs = [float(b) for b in check_float_array(bs, "bs", finite=True, ndim=1, min_size=1, low=0.0)]
    if len(mus) > MAX_PANELS or len(bs) > MAX_PANELS:
        raise ValueError(f"mus and bs must hold at most {MAX_PANELS} values each")
    if min(bs) <= 0 or max(bs) > MAX_DRAWN:
        raise ValueError(f"bs must lie in (0, {MAX_DRAWN:g}], got {bs}")
    if max(abs(m) for m in mus) > MAX_DRAWN:
        raise ValueError(f"mus must lie in [-{MAX_DRAWN:g}, {MAX_DRAWN:g}], got {mus}")
    span = check_real(span, "span", low=0.0, low_open=True, high=MAX_DRAWN)
    fig, (ax_mu, ax_b) = plt.subplots(1, 2, figsize=(9.5, 3.4), layout="constrained")
    y = np.linspace(min(mus) - span, max(mus) + span, 1201)
    for i, mu in enumerate(mus):
        ax_mu.plot(y, laplace_pdf(y, mu, 1.0), color=f"C{i}", lw=2, label=rf"$\mu = {mu:g}$")
        ax_mu.axvline(mu, color=f"C{i}", lw=0.8, ls=":")
    ax_mu.set(xlabel="$y$", ylabel="density", title=r"Lap($\mu$, $b = 1$): moving $\mu$")
    y = np.linspace(-span, span, 1201)
    for i, b in enumerate(bs):
        ax_b.plot(y, laplace_pdf(y, 0.0, b), color=f"C{i}", lw=2, label=f"$b = {b:g}$")
    ax_b.set(xlabel="$y$", ylabel="density", title=r"Lap($\mu = 0$, $b$): changing the scale $b$")
    for ax in (ax_mu, ax_b):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    return fig


def plot_loss_regions() -> Figure:
    """A number line for each ordering of ``f(x)`` and ``f(x')``, with the three regions of the output
    ``y`` that :func:`dptutor.symbolic.laplace_mechanism_privacy_loss` uses, the non-negative offsets
    ``w``, ``r``, ``delta`` that place ``y`` and ``f(x')``, and the privacy loss ``L(y)`` on each region."""
    regions = ("#E69F00", "#56B4E9", "#CC79A7")  # Okabe-Ito: below both, between, above both
    fig, axes = plt.subplots(2, 1, figsize=(8.6, 4.4), layout="constrained")
    cases = (
        (r"case $f(x) \leq f(x')$: $f(x') = f(x) + \delta$", 0.0, 1.0,
         (r"$L = \delta / b$", r"$L = (r - w)/b$", r"$L = -\delta / b$")),
        (r"case $f(x) \geq f(x')$: $f(x') = f(x) - \delta$", 1.0, 0.0,
         (r"$L = -\delta / b$", r"$L = (r - w)/b$", r"$L = \delta / b$")),
    )
    for ax, (title, fx, fxp, losses) in zip(axes, cases):
        lo, hi = min(fx, fxp), max(fx, fxp)
        spans = ((-1.3, lo, "$y$ below both"), (lo, hi, "$y$ between"), (hi, 2.3, "$y$ above both"))
        for (a, b, name), colour, loss in zip(spans, regions, losses):
            ax.axvspan(a, b, ymin=0.0, ymax=1.0, color=colour, alpha=0.25, lw=0)
            ax.text((a + b) / 2, 0.82, name, ha="center", va="center", fontsize="small")
            ax.text((a + b) / 2, -0.62, loss, ha="center", va="center", fontsize="small")
        ax.axhline(0.0, color="k", lw=1.2)
        for value, label in ((fx, "$f(x)$"), (fxp, "$f(x')$")):
            ax.plot([value], [0.0], "o", color="k", ms=6, zorder=3)
            ax.text(value, -0.25, label, ha="center", va="top")

        def offset(a: float, b: float, height: float, label: str) -> None:
            ax.annotate("", xy=(b, height), xytext=(a, height),
                        arrowprops=dict(arrowstyle="<->", color="0.25", lw=1.0, shrinkA=0, shrinkB=0))
            ax.text((a + b) / 2, height + 0.08, label, ha="center", va="bottom", fontsize="small")

        offset(lo, hi, 0.5, r"$\delta$")
        ys = (-0.7, 0.4, 1.7)  # one example output y in each region, marked with a cross
        for y in ys:
            ax.plot([y], [0.0], "x", color="0.2", ms=7, mew=1.5, zorder=3)
        offset(ys[0], lo, 0.2, "$w$")
        offset(ys[2], hi, 0.2, "$w$")
        near, far = (fx, fxp)
        offset(near, ys[1], 0.2, "$w$")
        offset(ys[1], far, 0.2, "$r$")
        ax.set(xlim=(-1.3, 2.3), ylim=(-0.85, 1.0), yticks=[], title=title, xticks=[])
        ax.set_xlabel("output $y$ (crosses: one example output in each region)")
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
    return fig


def plot_laplace_mechanism(
    fx: float = 0.0, fx_prime: float = 1.0, epsilon: float = 1.0, sensitivity: float = 1.0
) -> Figure:
    """The Laplace mechanism (Eq. 2-3) on two neighbouring datasets, in one dimension.

    Left: the output densities Lap(f(x), b) and Lap(f(x'), b), ``b = sensitivity / epsilon``.
    Right: the privacy loss ``ln h(y - f(x)) - ln h(y - f(x'))``, computed from the two
    log-densities of scipy.stats (no closed form used), over the band ``[-epsilon, epsilon]``.
    """
    from scipy import stats

    from dptutor.distributions import laplace_pdf

    fx = check_real(fx, "fx", low=-MAX_DRAWN, high=MAX_DRAWN)
    fx_prime = check_real(fx_prime, "fx_prime", low=-MAX_DRAWN, high=MAX_DRAWN)
    epsilon = check_real(epsilon, "epsilon", low=1.0 / MAX_DRAWN, high=MAX_DRAWN)
    sensitivity = check_real(sensitivity, "sensitivity", low=1.0 / MAX_DRAWN, high=MAX_DRAWN)
    b = sensitivity / epsilon
    if not (1e-9 * max(1.0, abs(fx), abs(fx_prime)) < b < MAX_DRAWN and abs(fx - fx_prime) <= 500 * b):
        # Beyond 500 scales apart the two densities underflow where the other is drawn, and a scale
        # below 1e-9 of the location cannot be resolved in float64.
        raise ValueError(f"sensitivity / epsilon = {b:g} is a noise scale that cannot be drawn around "
                         f"fx = {fx:g} and fx_prime = {fx_prime:g} (|fx - fx_prime| must be at most 500 scales)")
    y = np.linspace(min(fx, fx_prime) - 4 * b, max(fx, fx_prime) + 4 * b, 1201)
    fig, (ax_d, ax_l) = plt.subplots(1, 2, figsize=(10.5, 3.6), layout="constrained")
    ax_d.plot(y, laplace_pdf(y, fx, b), color="C0", lw=2, label=f"$\\mathcal{{M}}(x)$, $f(x) = {fx:g}$")
    ax_d.plot(y, laplace_pdf(y, fx_prime, b), color="C3", lw=2, ls="--",
              label=f"$\\mathcal{{M}}(x')$, $f(x') = {fx_prime:g}$")
    ax_d.set(xlabel="output $y$", ylabel="density", title=f"Output densities, $b = {b:g}$")

    loss = stats.laplace.logpdf(y, loc=fx, scale=b) - stats.laplace.logpdf(y, loc=fx_prime, scale=b)
    ax_l.axhspan(-epsilon, epsilon, color="C2", alpha=0.15, label=r"$[-\varepsilon, \varepsilon]$")
    ax_l.plot(y, loss, color="k", lw=2, label=r"$\ln h(y - f(x)) - \ln h(y - f(x'))$")
    ax_l.set(xlabel="output $y$", ylabel="privacy loss", title=f"Privacy loss, $\\varepsilon = {epsilon:g}$",
             ylim=(-1.7 * epsilon, 1.7 * epsilon))
    ax_d.legend(loc="upper right", fontsize="small")
    ax_l.legend(loc="lower left", fontsize="small")  # the loss sits at +epsilon on the left: free space below
    for ax in (ax_d, ax_l):
        ax.grid(alpha=0.3)
    return fig


# ---------------------------------------------------------------------------------------------
# Part II, chapter "The empirical sanity check" (the paper's Figure 2)
# ---------------------------------------------------------------------------------------------

#: The paper's four panels: (title, mechanisms drawn in it).
SANITY_PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Extreme baselines", ("random_output", "copy_input")),
    ("Laplace mechanism", ("laplace",)),
    ("ADePT", ("adept",)),
    ("DPText", ("dptext",)),
)

_SANITY_LABELS = {
    "laplace": "Laplace",
    "adept": "ADePT",
    "dptext": "DPText",
    "wrong_sensitivity": "wrong sensitivity",
    "copy_input": "copy input",
    "random_output": "random output",
}
#: Colours of the dimensions n (Okabe-Ito: orange, blue, vermillion, sky blue, reddish purple, black),
#: ordered so that neighbouring n differ in hue and lightness; no green, reserved for the bound.
SANITY_DIM_COLOURS: tuple[str, ...] = ("#E69F00", "#0072B2", "#D55E00", "#56B4E9", "#CC79A7", "#000000")
#: Okabe-Ito bluish green: the line loss = epsilon.
SANITY_BOUND_COLOUR = "#009E73"
_SANITY_MARKERS = ("o", "s", "^", "D")
_SANITY_STYLES = ("-", ":", "-.", "--")


@dataclass(frozen=True)
class _SanityLossAxis:
    """A log-scale loss axis from decade ``lo`` to decade ``hi``, plus an "∞" row above ``hi`` and,
    when ``has_zero``, a "0" row below ``lo`` (log axes cannot show inf or 0).  Shared by
    :func:`plot_sanity_check` and :func:`plot_loss_agreement`."""

    lo: float
    hi: float
    has_zero: bool

    @classmethod
    def around(cls, positive: np.ndarray, has_zero: bool) -> "_SanityLossAxis":
        """The decades enclosing ``positive`` (finite values > 0, not empty)."""
        return cls(10.0 ** np.floor(np.log10(positive.min())), 10.0 ** np.ceil(np.log10(positive.max())), has_zero)

    @property
    def y_inf(self) -> float:
        return self.hi * 10**0.6

    @property
    def y_zero(self) -> float:
        return self.lo / 10**0.6

    @property
    def top(self) -> float:
        return self.hi * 10**1.0

    def to_plot(self, v: np.ndarray) -> np.ndarray:
        """Losses as drawn: inf on the "∞" row, 0 on the "0" row."""
        return np.where(np.isinf(v), self.y_inf, np.where(v == 0, self.y_zero, v))

    def shade(self, ax) -> None:
        """Grey bands behind the "∞" row (and the "0" row)."""
        ax.axhspan(self.hi * 10**0.3, self.top, color="0.93", zorder=0)
        if self.has_zero:
            ax.axhspan(self.lo / 10**1.0, self.lo / 10**0.3, color="0.93", zorder=0)

    def set_ticks(self, ax, max_decades: int | None = None) -> None:
        """Decade ticks (every k-th, so at most ``max_decades`` of them), then "∞" (and "0")."""
        from matplotlib import ticker

        decades = np.arange(int(np.log10(self.lo)), int(np.log10(self.hi)) + 1)
        step = 1 if max_decades is None else max(1, int(np.ceil(len(decades) / max_decades)))
        ticks = [10.0**d for d in decades[::step]] + [self.y_inf]
        labels = [f"$10^{{{d}}}$" for d in decades[::step]] + ["∞"]
        if self.has_zero:
            ticks.insert(0, self.y_zero)
            labels.insert(0, "0")
        ax.yaxis.set_major_locator(ticker.FixedLocator(ticks))
        ax.yaxis.set_major_formatter(ticker.FixedFormatter(labels))
        ax.yaxis.set_minor_locator(ticker.NullLocator())


def _results_table(results: object) -> list[tuple[str, float, int, float]]:
    """Normalise results to ``(mechanism, epsilon, n, loss)`` tuples.

    Accepts the nested form ``{mechanism: {epsilon: {n: loss}}}`` (keys may be strings, the
    authors' class names are mapped to ours) or an iterable of rows with ``mechanism``,
    ``epsilon``, ``n`` and ``loss`` as attributes (:class:`dptutor.experiments.GridRow`) or keys.
    """
    from collections.abc import Iterable

    from dptutor.mechanisms import AUTHORS_NAMES

    ours = {theirs: name for name, theirs in AUTHORS_NAMES.items()}
    table: list[tuple[str, float, int, float]] = []
    if isinstance(results, Mapping):
        for mech, by_eps in results.items():
            if not isinstance(by_eps, Mapping):
                raise TypeError("results: nested form must be {mechanism: {epsilon: {n: loss}}}")
            for eps, by_n in by_eps.items():
                if not isinstance(by_n, Mapping):
                    raise TypeError("results: nested form must be {mechanism: {epsilon: {n: loss}}}")
                for n, loss in by_n.items():
                    table.append(_result_entry(ours, mech, eps, n, loss))
    elif isinstance(results, Iterable) and not isinstance(results, (str, bytes)):
        for row in check_sequence(results, "results", min_len=0):
            get = row.__getitem__ if isinstance(row, Mapping) else lambda k, r=row: getattr(r, k)
            try:
                mech, eps, n, loss = get("mechanism"), get("epsilon"), get("n"), get("loss")
            except (KeyError, AttributeError, TypeError) as exc:
                raise TypeError("results: each row needs mechanism, epsilon, n and loss") from exc
            table.append(_result_entry(ours, mech, eps, n, loss))
    else:
        raise TypeError(
            "results must be a nested mapping {mechanism: {epsilon: {n: loss}}} or an iterable of rows, "
            f"got {type(results).__name__}"
        )
    return table


def _result_entry(ours: Mapping[str, str], mech: object, eps: object, n: object, loss: object) -> tuple[str, float, int, float]:
    """One ``(mechanism, epsilon, n, loss)`` of ``results``, each checked (keys may be strings)."""
    if not isinstance(mech, str):
        raise TypeError(f"results: mechanism names must be str, got {type(mech).__name__}")
    try:
        eps_value = float(eps) if isinstance(eps, str) else eps
        n_value = int(n) if isinstance(n, str) else n
    except ValueError as exc:
        raise ValueError(f"results: keys must be numbers, got epsilon {eps!r} and n {n!r}") from exc
    name = ours.get(mech, mech)
    eps_value = check_positive(eps_value, "results: epsilon")
    n_value = check_int(n_value, "results: n", minimum=1, maximum=MAX_BINS)
    value = check_real(loss, f"results: loss of {name} at epsilon={eps_value:g}, n={n_value}", low=0.0, allow_inf=True)
    return name, eps_value, n_value, value


def plot_sanity_check(
    results: object = None,
    *,
    exact: bool = False,
    panels: Sequence[tuple[str, Sequence[str]]] = SANITY_PANELS,
    dims: Sequence[int] | None = None,
    epsilon_range: tuple[float, float] = (0.1, 10.0),
    title: str | None = None,
) -> Figure:
    """The paper's Figure 2: the attack's privacy loss against epsilon, one panel per mechanism group.

    ``results``: Monte Carlo (or exact) losses, nested ``{mechanism: {epsilon: {n: loss}}}`` (e.g.
    the authors' ``results.json``, whose class names are mapped to ours) or rows such as
    :func:`dptutor.experiments.run_grid` returns.  One line per dimension ``n`` (colour), markers
    per mechanism.  Log-log axes; infinite losses are drawn on an extra "∞" row at the top, zero
    losses on a "0" row at the bottom.  The green line is the bound ``loss = epsilon``: a point
    above it shows a DP violation.  ``exact=True`` adds the closed form
    (:func:`dptutor.audit.exact_loss`) as thin dashed lines over ``epsilon_range``; ``results``
    may then be ``None``.
    """
    from matplotlib.lines import Line2D

    from dptutor.audit import exact_loss

    exact = check_bool(exact, "exact")
    if results is None and not exact:
        raise ValueError("results must be given unless exact=True")
    table = _results_table(results) if results is not None else []
    e_lo, e_hi = check_interval(epsilon_range, "epsilon_range", low=0.0, low_open=True)
    if e_hi > 1e6 * e_lo or e_hi > 1e100:
        raise ValueError(f"epsilon_range must span at most six decades below 1e100, got {(e_lo, e_hi)}")
    if title is not None:
        title = check_str(title, "title")
    panel_list = []
    for i, panel in enumerate(check_sequence(panels, "panels")):
        if not (isinstance(panel, (tuple, list)) and len(panel) == 2 and isinstance(panel[0], str)):
            raise TypeError(f"panels[{i}] must be (title, mechanism names)")
        names = [check_str(m, f"panels[{i}] mechanisms") for m in check_sequence(panel[1], f"panels[{i}] mechanisms")]
        if exact:
            from dptutor.mechanisms import MECHANISMS

            unknown = [m for m in names if m not in MECHANISMS]
            if unknown:
                raise ValueError(f"panels: exact=True needs built-in mechanisms, got {unknown}")
        panel_list.append((panel[0], tuple(names)))
    if len(panel_list) > MAX_PANELS:
        raise ValueError(f"panels must hold at most {MAX_PANELS} panels, got {len(panel_list)}")
    if dims is None:
        dim_list = sorted({n for _, _, n, _ in table}) or [1, 2, 8, 32, 64, 128]
    else:
        dim_list = sorted({check_int(n, "dims", minimum=1, maximum=MAX_BINS) for n in check_sequence(dims, "dims")})
    if len(dim_list) > MAX_PANELS:
        raise ValueError(f"dims must hold at most {MAX_PANELS} dimensions, got {len(dim_list)}")

    # Curves to draw: (panel index, mechanism, n, eps array, loss array, is_exact).
    curves: list[tuple[int, str, int, np.ndarray, np.ndarray, bool]] = []
    for p, (_, mechs) in enumerate(panel_list):
        for mech in mechs:
            for n in dim_list:
                pts = sorted((e, loss) for m, e, nn, loss in table if m == mech and nn == n)
                if pts:
                    curves.append((p, mech, n, np.array([e for e, _ in pts]), np.array([v for _, v in pts]), False))
                if exact:
                    grid = np.geomspace(e_lo, e_hi, 41)
                    curves.append((p, mech, n, grid, np.array([exact_loss(mech, n, e) for e in grid]), True))

    finite = np.concatenate([c[4][np.isfinite(c[4]) & (c[4] > 0)] for c in curves] + [np.array([e_lo, e_hi])])
    # The ∞ row is kept even when empty, so panels and figures line up.
    rows = _SanityLossAxis.around(finite, has_zero=any((c[4] == 0).any() for c in curves))

    # Okabe-Ito colours in an order where neighbouring dimensions differ in hue and in lightness; their
    # bluish green is kept for the bound loss = epsilon.
    colour = {n: SANITY_DIM_COLOURS[i % len(SANITY_DIM_COLOURS)] for i, n in enumerate(dim_list)}

    ncols = min(2, len(panel_list))
    nrows = -(-len(panel_list) // ncols)
    fig, grid_axes = plt.subplots(nrows, ncols, figsize=(8.6, 3.6 * nrows + 0.9), sharey=True,
                                  layout="constrained", squeeze=False)
    axes = grid_axes.ravel()
    for ax in axes[len(panel_list):]:
        ax.set_visible(False)
    for p, (ptitle, mechs) in enumerate(panel_list):
        ax = axes[p]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.plot([e_lo, e_hi], [e_lo, e_hi], color=SANITY_BOUND_COLOUR, lw=2.2, zorder=1)
        rows.shade(ax)
        for cp, mech, n, eps, loss, is_exact in curves:
            if cp != p:
                continue
            k = mechs.index(mech)
            if is_exact:
                ax.plot(eps, rows.to_plot(loss), color=colour[n], lw=0.9, ls="--", alpha=0.8, zorder=2)
            else:
                ax.plot(eps, rows.to_plot(loss), color=colour[n], lw=1.6, ls=_SANITY_STYLES[k % 4],
                        marker=_SANITY_MARKERS[k % 4], ms=4.5, zorder=3)
        ax.set_xlim(e_lo / 1.15, e_hi * 1.15)
        ax.set_title(ptitle)
        ax.set_xlabel(r"privacy budget $\varepsilon$")
        ax.grid(alpha=0.3, which="major")
        if len(mechs) > 1:
            handles = [Line2D([], [], color="0.3", ls=_SANITY_STYLES[k % 4], marker=_SANITY_MARKERS[k % 4],
                              label=_SANITY_LABELS.get(m, m)) for k, m in enumerate(mechs)]
            ax.legend(handles=handles, loc="center right", fontsize="small")
    ax0 = axes[0]
    ax0.set_ylim(rows.lo / 10**1.0 if rows.has_zero else rows.lo, rows.top)
    rows.set_ticks(ax0, max_decades=7)
    for ax in grid_axes[:, 0]:
        ax.set_ylabel("privacy loss of the attack")
    handles = [Line2D([], [], color=colour[n], lw=2.5, label=f"n = {n}") for n in dim_list]
    handles.append(Line2D([], [], color=SANITY_BOUND_COLOUR, lw=2.2, label=r"loss = $\varepsilon$ (the budget)"))
    if table:
        handles.append(Line2D([], [], color="0.3", lw=1.6, marker="o", ms=4.5, label="Monte Carlo estimate"))
    if exact:
        handles.append(Line2D([], [], color="0.3", lw=0.9, ls="--", label="exact loss"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(5, len(handles)), fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


# ---------------------------------------------------------------------------------------------
# Chapter "The empirical sanity check": point estimates vs bounds, and agreement with the exact loss
# ---------------------------------------------------------------------------------------------


def plot_seed_estimates(
    losses: Sequence[float],
    lower_bounds: Sequence[float],
    epsilon: float,
    *,
    exact: float | None = None,
    confidence: float = 0.95,
) -> Figure:
    """Point estimates and lower confidence bounds of one audit repeated over seeds.

    The runs are sorted by their point estimate (x axis: rank).  Each run shows its estimate (dot)
    and its lower bound (bar), with the budget ``epsilon`` as a green line and, optionally, the
    exact loss as a dashed line.  Used for a mechanism whose loss equals epsilon, where about half
    of the estimates lie above the line but (almost) no lower bound does.
    """
    est = _losses(losses, "losses")
    low = _losses(lower_bounds, "lower_bounds")
    if est.shape != low.shape:
        raise ValueError(f"losses and lower_bounds must have the same length, got {est.size} and {low.size}")
    if np.isinf(est).any() or np.isinf(low).any():
        raise ValueError("losses and lower_bounds must be finite for this plot")
    if (low > est).any():
        raise ValueError("lower_bounds must not exceed losses (each bound at most its point estimate)")
    epsilon = check_positive(epsilon, "epsilon")
    if exact is not None:
        exact = check_real(exact, "exact", low=0.0)
    confidence = check_probability(confidence, "confidence")

    order = np.argsort(est, kind="stable")
    est, low = est[order], low[order]
    rank = np.arange(1, est.size + 1)
    above = est > epsilon
    fig, ax = plt.subplots(figsize=(7.0, 3.4), layout="constrained")
    ax.vlines(rank, low, est, color="0.75", lw=0.8, zorder=1)
    ax.scatter(rank[~above], est[~above], s=12, color="#0072B2", zorder=3, label="point estimate at or below the budget")
    ax.scatter(rank[above], est[above], s=12, color="#D55E00", zorder=3,
               label=f"point estimate above the budget ({int(above.sum())} of {est.size} runs)")
    ax.scatter(rank, low, s=10, marker="_", color="k", zorder=3,
               label=f"{100 * confidence:g}% lower bound, above the budget in {int((low > epsilon).sum())} "
                     f"of {est.size} runs")
    ax.axhline(epsilon, color=SANITY_BOUND_COLOUR, lw=2.2, zorder=2, label=f"budget $\\varepsilon = {epsilon:g}$")
    if exact is not None:
        ax.axhline(exact, color="k", lw=1.0, ls="--", zorder=2, label="exact loss")
    ax.set(xlabel="run (sorted by estimate)", ylabel="privacy loss", xlim=(0, est.size + 1))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return fig


def plot_loss_agreement(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str = "exact loss",
    ylabel: str = "estimated loss",
) -> Figure:
    """Estimated against exact privacy loss, log-log, one colour per series.

    ``series`` maps a label to ``(exact, estimates)``, two equal-length sequences.  Only cells with
    a finite, positive exact loss are drawn; an infinite estimate goes on an "∞" row at the top, a
    zero estimate on a "0" row at the bottom.  The diagonal is perfect agreement.
    """
    check_mapping(series, "series")
    if len(series) > MAX_PANELS:
        raise ValueError(f"series must hold at most {MAX_PANELS} entries, got {len(series)}")
    xlabel = check_str(xlabel, "xlabel")
    ylabel = check_str(ylabel, "ylabel")
    pts: list[tuple[str, np.ndarray, np.ndarray]] = []
    for label, pair in series.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError(f"series[{label!r}] must be a pair (exact, estimates)")
        ex_raw, es_raw = pair
        ex = _losses(ex_raw, f"series[{label!r}] exact")
        es = _losses(es_raw, f"series[{label!r}] estimates")
        if ex.shape != es.shape:
            raise ValueError(f"series[{label!r}]: exact and estimates must have the same length")
        keep = np.isfinite(ex) & (ex > 0)
        pts.append((str(label), ex[keep], es[keep]))
    drawn = np.concatenate([e for _, e, _ in pts] + [s[np.isfinite(s) & (s > 0)] for _, _, s in pts])
    if drawn.size == 0:
        raise ValueError("series: no cell has a finite, positive exact loss")
    rows = _SanityLossAxis.around(drawn, has_zero=any((s == 0).any() for _, _, s in pts))
    lo, hi = rows.lo, rows.hi

    fig, ax = plt.subplots(figsize=(5.6, 4.6), layout="constrained")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.plot([lo, hi], [lo, hi], color="0.4", lw=1.0, ls="--", zorder=1, label="estimate = exact")
    rows.shade(ax)
    markers = ("o", "s", "^", "D", "v", "P")
    for k, (label, ex, es) in enumerate(pts):
        ax.scatter(ex, rows.to_plot(es), s=22, marker=markers[k % len(markers)], color=f"C{k}", alpha=0.85,
                   zorder=3, label=label)
    ax.set_xlim(lo / 1.5, hi * 1.5)
    ax.set_ylim(lo / 10**1.0 if rows.has_zero else lo / 1.5, rows.top)
    rows.set_ticks(ax)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    return fig


# ---------------------------------------------------------------------------------------------
# Part III, chapter "Stronger audits": the likelihood-ratio attack against the paper's rounding attack
# ---------------------------------------------------------------------------------------------

#: Okabe-Ito colours (colour-blind safe) for up to four budgets; green stays for the bound.
_SA_COLOURS = ("#0072B2", "#D55E00", "#CC79A7", "#E69F00")


def plot_attack_comparison(
    rows: Sequence[tuple[str, int, float, float, float]], *, true_ratio: Mapping[str, Callable[[int], float]] | None = None
) -> Figure:
    """Audited loss divided by epsilon against the dimension n, one panel per mechanism.

    ``rows`` holds ``(mechanism, n, epsilon, likelihood_ratio_bound, rounding_loss)``: the 95% lower bound
    of :func:`dptutor.audit.audit_pair` with the likelihood-ratio statistic (solid lines, filled markers)
    and a loss of the paper's rounding attack (dashed lines, open markers; e.g. its 95% lower bound from
    :func:`dptutor.audit.estimate_loss`), both divided by epsilon.
    ``true_ratio[mechanism](n)`` (optional) draws the true epsilon / claimed epsilon as a grey line; the
    green line is 1, the claim.
    """
    table = [(str(m), int(n), float(e), float(lr), float(ro)) for m, n, e, lr, ro in rows]
    if not table:
        raise ValueError("rows must not be empty")
    mechs = list(dict.fromkeys(m for m, *_ in table))
    epsilons = sorted({e for _, _, e, _, _ in table})
    if len(epsilons) > len(_SA_COLOURS):
        raise ValueError(f"at most {len(_SA_COLOURS)} budgets fit in one figure, got {len(epsilons)}")
    fig, axes = plt.subplots(1, len(mechs), figsize=(4.2 * len(mechs) + 1.6, 3.8), layout="constrained", squeeze=False)
    for ax, mech in zip(axes[0], mechs):
        dims = sorted({n for m, n, *_ in table if m == mech})
        for colour, eps in zip(_SA_COLOURS, epsilons):
            pts = sorted((n, lr, ro) for m, n, e, lr, ro in table if m == mech and e == eps)
            if not pts:
                continue
            n_arr = np.array([p[0] for p in pts], dtype=float)
            lr = np.array([p[1] for p in pts]) / eps
            ro = np.array([p[2] for p in pts]) / eps
            floor = 1e-3  # a zero bound is drawn on the floor of the log axis
            ax.plot(n_arr, np.maximum(lr, floor), color=colour, lw=1.8, marker="o", ms=5)
            ax.plot(n_arr, np.maximum(ro, floor), color=colour, lw=1.2, ls="--", marker="o", ms=5, mfc="white")
        if true_ratio and mech in true_ratio:
            ax.plot(dims, [true_ratio[mech](n) for n in dims], color="0.45", lw=3, alpha=0.5, zorder=1)
        ax.axhline(1.0, color="#009E73", lw=2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(dims, [str(n) for n in dims])
        ax.set_xlabel("dimension $n$")
        ax.set_title(mech)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(r"audited loss / claimed $\varepsilon$")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, lw=2, label=rf"$\varepsilon$ = {e:g}") for c, e in zip(_SA_COLOURS, epsilons)]
    handles += [
        Line2D([], [], color="0.2", lw=1.8, marker="o", label="likelihood-ratio attack\n(95% lower bound)"),
        Line2D([], [], color="0.2", lw=1.2, ls="--", marker="o", mfc="white", label="rounding attack\n(95% lower bound)"),
        Line2D([], [], color="#009E73", lw=2, label=r"claimed $\varepsilon$"),
    ]
    if true_ratio:
        handles.append(Line2D([], [], color="0.45", lw=3, alpha=0.5, label=r"true $\varepsilon$"))
    fig.legend(handles=handles, loc="outside right center", fontsize="small")
    return fig


# ---------------------------------------------------------------------------------------------
# Part I, chapter "Composition", and Part III, chapter "Approximate DP and the Gaussian mechanism"
# (Okabe-Ito colours, safe for colour-blind readers)
# ---------------------------------------------------------------------------------------------

_CB_BLUE, _CB_VERMILLION, _CB_GREEN, _CB_ORANGE, _CB_PURPLE = "#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7"


def _comp_array(values: object, name: str, size: int | None = None, *, positive: bool = False) -> np.ndarray:
    from dptutor._validate import check_float_array

    arr = check_float_array(values, name, ndim=1, min_size=1, allow_nan=False)
    if size is not None and arr.size != size:
        raise ValueError(f"{name} must have {size} values, got {arr.size}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be positive")
    return arr


def plot_composition(
    ks: Sequence[int],
    epsilon: float,
    measured: Sequence[float],
    lower: Sequence[float],
    exact_attack: Sequence[float],
) -> Figure:
    """Privacy loss of k composed Laplace releases against k.

    Draws the composition bound ``k * epsilon`` (line), the majority-vote attack's exact loss
    (dashed) and its Monte Carlo estimates (markers) with their lower confidence bounds
    (downward bars).  Log-log axes.
    """
    from dptutor._validate import check_positive

    k = _comp_array(ks, "ks", positive=True)
    eps = check_positive(epsilon, "epsilon")
    est = _comp_array(measured, "measured", k.size)
    low = _comp_array(lower, "lower", k.size)
    exact = _comp_array(exact_attack, "exact_attack", k.size, positive=True)
    fig, ax = plt.subplots(figsize=(8.6, 4.6), layout="constrained")
    ax.plot(k, k * eps, color=_CB_GREEN, lw=2.5, label=r"composition bound $k\varepsilon$ (attained by the best event)")
    ax.plot(k, exact, color=_CB_BLUE, lw=2, ls="--", label="majority-vote attack, exact loss")
    yerr = np.vstack([np.clip(est - low, 0, None), np.zeros_like(est)])
    ax.errorbar(k, est, yerr=yerr, fmt="o", color=_CB_VERMILLION, ms=7, capsize=4,
                label="majority-vote attack, Monte Carlo estimate (bar: 95% lower bound)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("number of releases $k$ (each with budget $\\varepsilon$)")
    ax.set_ylabel("privacy loss")
    ax.set_title(f"$k$ Laplace releases of one bit, $\\varepsilon = {eps:g}$ each")
    ax.legend(loc="upper left", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    return fig


def plot_gaussian_sigmas(
    epsilons: Sequence[float], classic: Sequence[float], analytic: Sequence[float], delta: float
) -> Figure:
    """Noise ``sigma`` (per unit of l2 sensitivity) of the classic and analytic calibrations.

    Left: both ``sigma`` against ``epsilon`` (log-log); right: the ratio classic / analytic.
    ``classic`` may hold NaN where the classic theorem does not apply (epsilon >= 1): not drawn.
    """
    from dptutor._validate import check_float_array, check_probability

    eps = _comp_array(epsilons, "epsilons", positive=True)
    cls = check_float_array(classic, "classic", ndim=1, allow_nan=True)
    ana = _comp_array(analytic, "analytic", eps.size, positive=True)
    if cls.size != eps.size:
        raise ValueError(f"classic must have {eps.size} values, got {cls.size}")
    dlt = check_probability(delta, "delta")
    ok = np.isfinite(cls)
    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(9.4, 4.2), layout="constrained")
    ax.plot(eps[ok], cls[ok], color=_CB_VERMILLION, lw=2.5, label=r"classic: $\sqrt{2\ln(1.25/\delta)}/\varepsilon$")
    ax.plot(eps, ana, color=_CB_BLUE, lw=2.5, ls="--", label="analytic (Balle and Wang)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"privacy budget $\varepsilon$")
    ax.set_ylabel(r"noise $\sigma$ per unit of $\ell_2$ sensitivity")
    mantissa, exponent = f"{dlt:.1e}".split("e")
    dlt_tex = (f"10^{{{int(exponent)}}}" if float(mantissa) == 1.0
               else f"{float(mantissa):g} \\times 10^{{{int(exponent)}}}")
    ax.set_title(f"Gaussian noise needed, $\\delta = {dlt_tex}$")
    ax.legend(fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax_ratio.plot(eps[ok], cls[ok] / ana[ok], color=_CB_PURPLE, lw=2.5)
    ax_ratio.set_xscale("log")
    ax_ratio.set_xlabel(r"privacy budget $\varepsilon$ (classic bound needs $\varepsilon < 1$)")
    ax_ratio.set_ylabel(r"$\sigma_{\mathrm{classic}} / \sigma_{\mathrm{analytic}}$")
    ax_ratio.set_title("How much more noise the classic bound adds")
    ax_ratio.grid(True, which="both", alpha=0.3)
    return fig


def plot_pure_epsilon_growth(
    trials: Sequence[int], pure_bounds: Sequence[float], delta_bounds: Sequence[float], epsilon: float, delta: float
) -> Figure:
    """Audit lower bounds on epsilon against the number of samples, with delta = 0 and with delta.

    Markers joined by lines; the claimed ``epsilon`` as a horizontal line.
    """
    from dptutor._validate import check_positive, check_probability

    t = _comp_array(trials, "trials", positive=True)
    pure = _comp_array(pure_bounds, "pure_bounds", t.size)
    with_delta = _comp_array(delta_bounds, "delta_bounds", t.size)
    eps = check_positive(epsilon, "epsilon")
    dlt = check_probability(delta, "delta")
    fig, ax = plt.subplots(figsize=(8.6, 4.4), layout="constrained")
    ax.plot(t, pure, "o-", color=_CB_VERMILLION, lw=2, ms=7, label=r"lower bound on pure $\varepsilon$, i.e. at $\delta = 0$")
    ax.plot(t, with_delta, "s--", color=_CB_BLUE, lw=2, ms=7,
            label=f"lower bound on $\\varepsilon$ at $\\delta = {dlt:g}$")
    ax.axhline(eps, color=_CB_GREEN, lw=2.5, label=f"claimed $\\varepsilon = {eps:g}$")
    ax.set_xscale("log")
    ax.set_xlabel("samples per dataset")
    ax.set_ylabel(r"95% lower bound on $\varepsilon$")
    ax.legend(fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    return fig


def plot_tradeoff(mu: float, alpha_points: Sequence[float], beta_points: Sequence[float]) -> Figure:
    """The Gaussian trade-off curve ``beta = Phi(Phi^-1(1 - alpha) - mu)`` with empirical points.

    Also draws the line ``beta = 1 - alpha`` (no information: perfect privacy).
    """
    from scipy import stats

    from dptutor._validate import check_positive

    m = check_positive(mu, "mu")
    a = _comp_array(alpha_points, "alpha_points")
    b = _comp_array(beta_points, "beta_points", a.size)
    grid = np.linspace(0.0, 1.0, 1001)
    fig, ax = plt.subplots(figsize=(6.4, 6.0), layout="constrained")
    ax.plot(grid, 1 - grid, color="0.5", lw=1.5, ls=":", label=r"$\beta = 1 - \alpha$ (perfect privacy)")
    ax.plot(grid, stats.norm.cdf(stats.norm.ppf(1 - grid) - m), color=_CB_BLUE, lw=2.5,
            label=f"$G_\\mu$, $\\mu = \\Delta/\\sigma = {m:.3g}$")
    ax.plot(a, b, "o", color=_CB_VERMILLION, ms=6, label="audit's threshold tests (empirical)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel(r"type I error $\alpha$ (false positive rate)")
    ax.set_ylabel(r"type II error $\beta$ (false negative rate)")
    ax.legend(fontsize=9)
    ax.grid(True, alpha=0.3)
    return fig


# ---------------------------------------------------------------------------------------------
# Part III, chapter "The bits matter" (floating-point attacks): fp_ helpers
# ---------------------------------------------------------------------------------------------

#: Okabe-Ito colours (safe for the common colour-vision deficiencies), in plotting order.
FP_COLOURS: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00")
_FP_MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v")


def fp_plot_impossible_fractions(series: Mapping[str, Sequence[object]], confidence: float = 0.95) -> Figure:
    """Fraction of outputs that give their input away, against the noise scale (log axis).

    ``series`` maps a label to a sequence of :class:`dptutor.floating.AttackResult` (one per scale);
    each point carries its Clopper-Pearson interval at ``confidence`` as an error bar.
    """
    from dptutor.floating import AttackResult

    confidence = check_probability(confidence, "confidence")
    if not isinstance(series, Mapping):
        raise TypeError(f"series must be a mapping from labels to AttackResult sequences, got {type(series).__name__}")
    if not series:
        raise ValueError("series must not be empty")
    for label, results in series.items():
        if isinstance(results, (str, bytes)) or not isinstance(results, Sequence) or not results:
            raise TypeError(f"series[{label!r}] must be a non-empty sequence of AttackResult")
        if not all(isinstance(r, AttackResult) for r in results):
            raise TypeError(f"series[{label!r}] must hold AttackResult objects only")
    fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    for i, (label, results) in enumerate(series.items()):
        scales = np.array([r.scale for r in results], dtype=float)  # type: ignore[attr-defined]
        frac = np.array([r.fraction for r in results], dtype=float)  # type: ignore[attr-defined]
        ci = np.array([r.confidence_interval(confidence) for r in results], dtype=float)  # type: ignore[attr-defined]
        err = np.vstack([frac - ci[:, 0], ci[:, 1] - frac])
        ax.errorbar(scales, frac, yerr=err, color=FP_COLOURS[i % len(FP_COLOURS)],
                    marker=_FP_MARKERS[i % len(_FP_MARKERS)], capsize=3, lw=1.5, label=label)
    ax.set_xscale("log")
    ax.set_ylim(-0.03, 1.0)
    ax.set_xlabel("noise scale $b$ (inputs 0 and 1)")
    ax.set_ylabel("fraction of outputs that\ngive the input away")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="center right", frameon=False)
    return fig
