"""Figures of the chapters "Composition", "Stronger audits", "Approximate DP and the Gaussian mechanism" and
"The bits matter" (Okabe-Ito colours, safe for colour-blind readers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from dptutor._validate import (
    check_callable,
    check_float_array,
    check_int,
    check_mapping,
    check_probability,
    check_real,
    check_sequence,
    check_str,
)
from dptutor.plotting._checks import MAX_DRAWN, MIN_LOG_DRAWN, drawn_values, positive_array, user_call

__all__ = ["plot_attack_comparison", "plot_composition", "plot_gaussian_sigmas", "plot_pure_epsilon_growth", "plot_tradeoff",
           "fp_plot_impossible_fractions", "FP_COLOURS"]


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
    :func:`dptutor.audit.estimate_loss`), both divided by epsilon.  A bound of 0 has no place on the log
    axis: it is drawn as a triangle on the bottom edge (filled or open, as its attack), apart from the
    data, and the lines break there.
    ``true_ratio[mechanism](n)`` (optional) draws the true epsilon / claimed epsilon as a grey line; the
    green line is 1, the claim.

    Parameters
    ----------
    rows : sequence of tuple
        ``(mechanism, n, epsilon, likelihood_ratio_bound, rounding_loss)``: a name, a positive dimension, a
        positive budget (at most four different) and two finite, non-negative bounds.
    true_ratio : mapping of str to callable, optional
        ``true_ratio[mechanism](n)``, the true epsilon divided by the claimed one.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter (for ``rows``, the bad entry).
    """
    table = _attack_rows(rows)
    if true_ratio is not None:
        check_mapping(true_ratio, "true_ratio", min_len=0)
    mechs = list(dict.fromkeys(m for m, *_ in table))
    epsilons = sorted({e for _, _, e, _, _ in table})
    if len(epsilons) > len(_SA_COLOURS):
        raise ValueError(f"at most {len(_SA_COLOURS)} budgets fit in one figure, got {len(epsilons)}")
    import matplotlib.transforms as mtransforms

    fig, axes = plt.subplots(1, len(mechs), figsize=(4.2 * len(mechs) + 1.6, 3.8), layout="constrained", squeeze=False)
    any_zero = False
    for ax, mech in zip(axes[0], mechs):
        dims = sorted({n for m, n, *_ in table if m == mech})
        bottom = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
        for k, (colour, eps) in enumerate(zip(_SA_COLOURS, epsilons)):
            pts = sorted((n, lr, ro) for m, n, e, lr, ro in table if m == mech and e == eps)
            if not pts:
                continue
            n_arr = np.array([p[0] for p in pts], dtype=float)
            lr = np.array([p[1] for p in pts]) / eps
            ro = np.array([p[2] for p in pts]) / eps
            ax.plot(n_arr, np.where(lr > 0, lr, np.nan), color=colour, lw=1.8, marker="o", ms=5)
            ax.plot(n_arr, np.where(ro > 0, ro, np.nan), color=colour, lw=1.2, ls="--", marker="o", ms=5, mfc="white")
            # zero bounds: triangles on the bottom edge, staggered by budget so that they do not overlap
            shift = 1.0 + 0.07 * (k - (len(epsilons) - 1) / 2)
            for values, face, offset in ((lr, colour, 0.03), (ro, "white", 0.075)):
                zero = values == 0
                if zero.any():
                    any_zero = True
                    ax.plot(n_arr[zero] * shift, np.full(zero.sum(), offset), transform=bottom, ls="none",
                            marker="v", ms=6, color=colour, mfc=face, clip_on=False)
        if true_ratio and mech in true_ratio:
            ax.plot(dims, _true_ratios(true_ratio, mech, dims), color="0.45", lw=3, alpha=0.5, zorder=1)
        ax.axhline(1.0, color="#009E73", lw=2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        ax.set_ylim(low / 4, high)  # room above the bottom edge, where the zero bounds sit
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
    if any_zero:
        handles.append(Line2D([], [], color="0.2", ls="none", marker="v", ms=6,
                              label="bound 0 (bottom edge;\nfilled: likelihood ratio,\nopen: rounding)"))
    if true_ratio:
        handles.append(Line2D([], [], color="0.45", lw=3, alpha=0.5, label=r"true $\varepsilon$"))
    fig.legend(handles=handles, loc="outside right center", fontsize="small")
    return fig


def _true_ratios(true_ratio: Mapping[str, Callable[[int], float]], mech: str, dims: list[int]) -> np.ndarray:
    """``true_ratio[mech](n)`` for each of ``dims``, checked: positive values that a log axis can draw."""
    name = f"true_ratio[{mech!r}]"
    ratio = check_callable(true_ratio[mech], name, f"{name}(n)")
    return positive_array([user_call(ratio, n, f"{name}(n)") for n in dims], f"{name}(n)", positive=True, log=True)


def _attack_rows(rows: object) -> list[tuple[str, int, float, float, float]]:
    """``rows`` of :func:`plot_attack_comparison` checked: a name, a dimension in [1, 2**53], a budget and two
    bounds whose ratios to it can be drawn on a log axis."""
    table = []
    for i, row in enumerate(check_sequence(rows, "rows")):
        if not (isinstance(row, (tuple, list)) and len(row) == 5):
            raise TypeError(f"rows[{i}] must be (mechanism, n, epsilon, likelihood_ratio_bound, rounding_loss)")
        m, n, e, lr, ro = row
        eps = check_real(e, f"rows[{i}] epsilon", low=MIN_LOG_DRAWN, high=MAX_DRAWN)
        bounds = [check_real(v, f"rows[{i}] {what} (non-negative, 0 for no evidence)", low=0.0, high=MAX_DRAWN)
                  for v, what in ((lr, "likelihood_ratio_bound"), (ro, "rounding_loss"))]
        drawn_values(np.array(bounds) / eps, f"rows[{i}] bounds divided by epsilon", log=True)
        table.append((check_str(m, f"rows[{i}] mechanism"), check_int(n, f"rows[{i}] n", minimum=1, maximum=2**53),
                      eps, bounds[0], bounds[1]))
    return table


# ---------------------------------------------------------------------------------------------
# Part I, chapter "Composition", and Part III, chapter "Approximate DP and the Gaussian mechanism"
# (Okabe-Ito colours, safe for colour-blind readers)
# ---------------------------------------------------------------------------------------------

_CB_BLUE, _CB_VERMILLION, _CB_GREEN, _CB_ORANGE, _CB_PURPLE = "#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7"


def plot_composition(ks: Sequence[int], epsilon: float, majority: Sequence[float]) -> Figure:
    """Privacy loss of k composed Laplace releases of one bit against k, all exact.

    Draws the composition bound ``k * epsilon``, which the event "all k outputs <= 0" attains
    (``dptutor.composition.repeated_laplace_box_loss``), and the exact loss of the majority-vote
    attack (``majority``, ``dptutor.composition.majority_vote_loss``).  Log-log axes.

    Parameters
    ----------
    ks : sequence of int
        The numbers of releases, positive.
    epsilon : float
        The budget of each release, positive.
    majority : sequence of float
        The exact loss of the majority-vote attack at each ``k``, positive.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """

    k = positive_array(ks, "ks", positive=True, log=True)
    eps = check_real(epsilon, "epsilon", low=MIN_LOG_DRAWN, high=MAX_DRAWN)
    exact = positive_array(majority, "majority", ("ks", k.size), positive=True, log=True)
    positive_array(k * eps, "ks times epsilon", log=True)
    fig, ax = plt.subplots(figsize=(8.6, 4.6), layout="constrained")
    ax.plot(k, k * eps, "-o", color=_CB_GREEN, lw=2.5, ms=5,
            label=r"composition bound $k\varepsilon$ = loss of the event 'all outputs $\leq 0$'")
    ax.plot(k, exact, "--s", color=_CB_BLUE, lw=2, ms=5, label="majority-vote attack, exact loss")
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

    Parameters
    ----------
    epsilons : sequence of float
        The budgets, positive.
    classic : sequence of float
        The classic calibration's sigma at each budget (positive, or NaN where it does not apply).
    analytic : sequence of float
        The analytic calibration's sigma at each budget, positive.
    delta : float
        The delta of both calibrations, in (0, 1).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    from dptutor._validate import check_probability

    eps = positive_array(epsilons, "epsilons", positive=True, log=True)
    cls = check_float_array(classic, "classic", ndim=1, allow_nan=True)
    ana = positive_array(analytic, "analytic", ("epsilons", eps.size), positive=True, log=True)
    drawn_values(cls, "classic", log=True)
    if cls.size != eps.size:
        raise ValueError(f"classic must have one value per entry of epsilons ({eps.size}), got {cls.size}")
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

    Parameters
    ----------
    trials : sequence of int
        Samples per dataset of each audit, positive.
    pure_bounds, delta_bounds : sequence of float
        The lower bounds at delta = 0 and at ``delta``, one per entry of ``trials``, finite and non-negative.
    epsilon : float
        The claimed epsilon, positive.
    delta : float
        The delta of the second series, in (0, 1).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    from dptutor._validate import check_probability

    t = positive_array(trials, "trials", positive=True, log=True)
    pure = positive_array(pure_bounds, "pure_bounds", ("trials", t.size))
    with_delta = positive_array(delta_bounds, "delta_bounds", ("trials", t.size))
    eps = check_real(epsilon, "epsilon", low=0.0, low_open=True, high=MAX_DRAWN)
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

    Parameters
    ----------
    mu : float
        The Gaussian trade-off's ``mu = Delta / sigma``, positive.
    alpha_points, beta_points : sequence of float
        The empirical type I and type II errors of the audit's tests, in [0, 1], of equal length.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    from scipy import stats


    m = check_real(mu, "mu", low=0.0, low_open=True, high=MAX_DRAWN)
    a = positive_array(alpha_points, "alpha_points")
    b = positive_array(beta_points, "beta_points", ("alpha_points", a.size))
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

    Parameters
    ----------
    series : mapping of str to sequence of AttackResult
        ``label -> results``, one result per noise scale.
    confidence : float, optional
        The level of the error bars, in (0, 1).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
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
