"""Figures of Part I's chapters "A probability primer" and "The Laplace mechanism".
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from dptutor._validate import (
    check_float_array,
    check_int,
    check_real,
    check_sequence,
)
from dptutor.plotting._checks import MAX_DRAWN, MAX_PANELS, drawn_interval

__all__ = ["plot_uniform_distributions", "plot_laplace_family", "plot_loss_regions", "plot_laplace_mechanism"]


def plot_uniform_distributions(
    k: int = 6, intervals: Sequence[tuple[float, float]] = ((0.0, 1.0), (-0.5, 0.5))
) -> Figure:
    """Left: the PMF of the discrete uniform law on {1, ..., k}.  Right: the PDFs of Uni(low, high).

    The default intervals are the paper's two uniforms, Uni(0, 1) (Eq. 8) and Uni(-1/2, 1/2) (Eq. 6).

    Parameters
    ----------
    k : int, optional
        The size of the discrete uniform law's support, 1 to 1000.
    intervals : sequence of (float, float), optional
        ``(low, high)`` of each continuous uniform law: finite, ``low < high``, widths that can be drawn.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    k = check_int(k, "k", minimum=1, maximum=1000)
    interval_list = check_sequence(intervals, "intervals")
    if len(interval_list) > MAX_PANELS:
        raise ValueError(f"intervals must hold at most {MAX_PANELS} pairs, got {len(interval_list)}")
    pairs = [drawn_interval(iv, f"intervals[{i}]") for i, iv in enumerate(interval_list)]
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
    """Left: Lap(mu, 1) for each ``mu`` (changing mu translates the curve).  Right: Lap(0, b) for each ``b``.

    Parameters
    ----------
    mus : sequence of float, optional
        Locations of the left panel's curves, at most ``MAX_DRAWN`` in magnitude.
    bs : sequence of float, optional
        Scales of the right panel's curves, in (0, ``MAX_DRAWN``].
    span : float, optional
        How far either side of the locations the curves are drawn, positive.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
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
    ``y`` that :func:`dptutor.symbolic.privacy_loss.laplace_mechanism_privacy_loss` uses, the non-negative offsets
    ``w``, ``r``, ``s`` (the shift; sympy names it ``delta``) that place ``y`` and ``f(x')``, and the privacy loss ``L(y)`` on each region.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).
    """
    regions = ("#E69F00", "#56B4E9", "#CC79A7")  # Okabe-Ito: below both, between, above both
    fig, axes = plt.subplots(2, 1, figsize=(8.6, 4.4), layout="constrained")
    cases = (
        (r"case $f(x) \leq f(x')$: $f(x') = f(x) + s$", 0.0, 1.0,
         (r"$L = s / b$", r"$L = (r - w)/b$", r"$L = -s / b$")),
        (r"case $f(x) \geq f(x')$: $f(x') = f(x) - s$", 1.0, 0.0,
         (r"$L = -s / b$", r"$L = (r - w)/b$", r"$L = s / b$")),
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

        offset(lo, hi, 0.5, r"$s$")
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

    Parameters
    ----------
    fx, fx_prime : float, optional
        The query's values on the two datasets, at most ``MAX_DRAWN`` in magnitude.
    epsilon : float, optional
        The privacy budget, in [1 / ``MAX_DRAWN``, ``MAX_DRAWN``].
    sensitivity : float, optional
        The query's sensitivity, in [1 / ``MAX_DRAWN``, ``MAX_DRAWN``].

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter; ``ValueError`` when the noise scale cannot be drawn around ``fx`` and
        ``fx_prime`` (more than 500 scales apart, or a scale below 1e-9 of the locations).
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
