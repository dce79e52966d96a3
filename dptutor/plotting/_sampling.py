"""Figures of Part II's chapters "Sampling by inverse CDF" and "How DPText broke differential privacy": the
paper's Figures 1 and 3, and the histogram, ECDF and neighbouring-density checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from dptutor._validate import (
    check_callable,
    check_int,
    check_mapping,
    check_positive,
    check_real,
    check_sequence,
    check_str,
    renamed_parameters,
)
from dptutor.plotting._checks import MAX_BINS, MAX_DRAWN, MAX_PANELS, curve_values, drawn_interval, samples_array

__all__ = ["plot_inverse_cdfs", "plot_sampling_strategies", "plot_histograms_with_pdf", "plot_ecdfs", "plot_neighbouring_densities"]


#: The default x-axis label of :func:`plot_histograms_with_pdf` (matplotlib math text).
HISTOGRAM_XLABEL = "sample value $x$"
#: The default legend entries of :func:`plot_neighbouring_densities`, the two neighbouring inputs.
NEIGHBOUR_LABELS: tuple[str, str] = ("$X = 0$", "$X' = 1$")

def plot_inverse_cdfs(mu: float = 0.0, b: float = 1.0, *, num: int = 2001, ylim: float = 5.0) -> Figure:
    """The paper's Figure 1: inverse CDFs for Laplace sampling, in two panels.

    Left: Eq. 4 on ``u`` in (0, 1) and Eq. 7 on ``v`` in (-1/2, 1/2): the same curve, shifted by 1/2.
    Right: DPText's Eq. 9 on ``v`` in [0, 1) (Eq. 8).  On [0, 1/2) it is the finite, increasing part;
    on (1/2, 1) numpy returns NaN, which cannot be drawn: the region is shaded and the *real part*
    of the complex value ``mu - b ln(1 - 2v)`` (principal branch, ``ln|1 - 2v| + i pi``) is drawn
    dotted, to show that it decreases.  Values are clipped to ``mu +- ylim * b`` for display.

    Parameters
    ----------
    mu : float, optional
        The location, at most ``MAX_DRAWN`` in magnitude.
    b : float, optional
        The scale, positive.
    num : int, optional
        Grid points per curve, 11 to ``MAX_BINS``.
    ylim : float, optional
        Half the height of the y range, in scales, positive.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter; ``ValueError`` when ``b`` and ``ylim`` give a y range that cannot be drawn around ``mu``.
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

    Parameters
    ----------
    panels : sequence of tuple
        ``(title, samples)`` or ``(title, samples, (low, high))``, at most ``MAX_PANELS``.
    bins : int, optional
        Histogram bins per panel, 1 to ``MAX_BINS``.
    limits : (float, float), optional
        The default range of a panel: finite, ``low < high``, with bins that can be drawn.
    ncols : int, optional
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter (for a panel, its index).
    """
    panel_list = check_sequence(panels, "panels")
    if len(panel_list) > MAX_PANELS:
        raise ValueError(f"panels must hold at most {MAX_PANELS} panels, got {len(panel_list)}")
    bins = check_int(bins, "bins", minimum=1, maximum=MAX_BINS)
    default = drawn_interval(limits, "limits")
    ncols = check_int(ncols, "ncols", minimum=1, maximum=MAX_PANELS)
    specs = []
    for i, panel in enumerate(panel_list):
        if not isinstance(panel, tuple) or len(panel) not in (2, 3) or not isinstance(panel[0], str):
            raise ValueError(f"panels[{i}] must be (title, samples) or (title, samples, (low, high))")
        rng_ = drawn_interval(panel[2], f"panels[{i}] range") if len(panel) == 3 else default
        specs.append((panel[0], samples_array(panel[1], f"panels[{i}] samples", some_finite=False), rng_))

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
    xlabel: str = HISTOGRAM_XLABEL,
) -> Figure:
    """One density-scaled histogram per entry of ``samples``, with ``pdf`` drawn over each.

    Heights are ``count / (n * bin width)`` with ``n`` the *total* number of samples, so they
    estimate the density even though the samples outside ``limits`` are not drawn.

    Parameters
    ----------
    samples : mapping of str to array_like
        One panel per entry: its label and its samples (NaN and inf allowed, counted but not drawn).
    pdf : callable
        ``pdf(x)`` returns one density value per point of ``x``.
    limits : (float, float), optional
        The range drawn: finite, ``low < high``.
    bins : int, optional
        Histogram bins, 1 to ``MAX_BINS``.
    pdf_label, xlabel : str, optional
        The legend entry of the density and the x-axis label.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter; ``ValueError`` when ``limits`` are too wide or too narrow for ``bins`` bins.
    """
    check_mapping(samples, "samples")
    if len(samples) > MAX_PANELS:
        raise ValueError(f"samples must hold at most {MAX_PANELS} entries, got {len(samples)}")
    check_callable(pdf, "pdf", "pdf(x)")
    lo, hi = drawn_interval(limits, "limits")
    bins = check_int(bins, "bins", minimum=1, maximum=MAX_BINS)
    pdf_label = check_str(pdf_label, "pdf_label")
    xlabel = check_str(xlabel, "xlabel")
    data = {label: samples_array(values, f"samples[{label!r}]") for label, values in samples.items()}
    grid = np.linspace(lo, hi, 801)
    with np.errstate(over="ignore", under="ignore"):  # limits near the float range: steps overflow to inf
        width = (hi - lo) / bins
    if not (np.isfinite(grid).all() and np.isfinite(width) and width > 0):
        raise ValueError(f"limits {(lo, hi)} are too wide or too narrow to draw {bins} bins")
    density = curve_values(pdf, grid, "pdf")
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

    Parameters
    ----------
    samples : mapping of str to array_like
        Labelled samples (NaN allowed).
    cdfs : mapping of str to callable
        Labelled closed-form CDFs, ``cdf(x)`` one value per point of ``x``.
    limits : (float, float), optional
        The range drawn: finite, ``low < high``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    check_mapping(samples, "samples")
    check_mapping(cdfs, "cdfs", min_len=0)
    if len(samples) + len(cdfs) > MAX_PANELS:
        raise ValueError(f"samples and cdfs must hold at most {MAX_PANELS} curves in all")
    for label, cdf in cdfs.items():
        check_callable(cdf, f"cdfs[{label!r}]", "cdf(x)")
    lo, hi = drawn_interval(limits, "limits")
    grid = np.linspace(lo, hi, 1001)
    if not np.isfinite(grid).all():
        raise ValueError(f"limits {(lo, hi)} are too wide to draw")
    data = {label: samples_array(values, f"samples[{label!r}]") for label, values in samples.items()}
    curves = {label: curve_values(cdf, grid, f"cdfs[{label!r}]") for label, cdf in cdfs.items()}
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


@renamed_parameters(z="y")
def plot_neighbouring_densities(
    panels: Sequence[tuple[str, Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]],
    *,
    y: float,
    limits: tuple[float, float] = (-4.0, 6.0),
    labels: tuple[str, str] = NEIGHBOUR_LABELS,
) -> Figure:
    """Output densities of a mechanism on two neighbouring inputs, one panel per mechanism.

    ``panels`` holds ``(title, pdf_x, pdf_x_prime)``.  The output ``y`` is marked, with the two
    density values at ``y`` as dots: the privacy loss at ``y`` is the log of their ratio.

    Parameters
    ----------
    panels : sequence of (str, callable, callable)
        ``(title, pdf_x, pdf_x_prime)``, one panel each.
    y : float
        The output marked, strictly inside ``limits``.  (Deprecated alias: ``z``.)
    limits : (float, float), optional
        The range drawn: finite, ``low < high``.
    labels : (str, str), optional
        The legend entries of the two inputs.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter (a ``TypeError`` also if both ``y`` and its alias ``z`` are passed).
    """
    panel_list = check_sequence(panels, "panels")
    if len(panel_list) > MAX_PANELS:
        raise ValueError(f"panels must hold at most {MAX_PANELS} panels, got {len(panel_list)}")
    for i, panel in enumerate(panel_list):
        if not (isinstance(panel, tuple) and len(panel) == 3 and callable(panel[1]) and callable(panel[2])):
            raise ValueError(f"panels[{i}] must be (title, pdf_x, pdf_x_prime) with two callables")
    lo, hi = drawn_interval(limits, "limits")
    y = check_real(y, "y")
    if not lo < y < hi:
        raise ValueError(f"y must lie inside limits {(lo, hi)}, got {y!r}")
    label_list = [check_str(s, "labels") for s in check_sequence(labels, "labels", min_len=2)]
    if len(label_list) != 2:
        raise ValueError(f"labels must be two strings, got {len(label_list)}")
    labels = (label_list[0], label_list[1])
    grid = np.linspace(lo, hi, 1001)
    if not np.isfinite(grid).all():
        raise ValueError(f"limits {(lo, hi)} are too wide to draw")
    point = np.array([y])
    drawn = [
        (str(title), [(curve_values(pdf, grid, f"panels[{i}] pdf"), float(curve_values(pdf, point, f"panels[{i}] pdf")[0]))
                      for pdf in (pdf_x, pdf_xp)])
        for i, (title, pdf_x, pdf_xp) in enumerate(panel_list)
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.0), sharey=True,
                             layout="constrained", squeeze=False)
    for ax, (title, curves) in zip(axes.flat, drawn):
        for k, ((values, at_y), lab) in enumerate(zip(curves, labels)):
            ax.plot(grid, values, color=f"C{k}", lw=2, label=lab)
            ax.plot([y], [at_y], "o", color=f"C{k}")
        ax.axvline(y, color="0.3", lw=0.8, ls="--")
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("output $y$")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("density")
    axes[0, 0].legend(loc="upper right", fontsize="small")
    return fig
