"""Figures of the chapter "The empirical sanity check": the paper's Figure 2, point estimates against bounds, and
the agreement of estimated and exact losses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from dptutor._validate import (
    check_bool,
    check_int,
    check_interval,
    check_mapping,
    check_probability,
    check_real,
    check_sequence,
    check_str,
)
from dptutor.plotting._checks import MAX_BINS, MAX_DRAWN, MAX_PANELS, MIN_LOG_DRAWN, drawn_values, losses_array

__all__ = ["plot_sanity_check", "plot_seed_estimates", "plot_loss_agreement", "SANITY_PANELS", "SANITY_DIM_COLOURS", "SANITY_BOUND_COLOUR"]


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
    eps_value = check_real(eps_value, "results: epsilon", low=MIN_LOG_DRAWN, high=MAX_DRAWN)
    n_value = check_int(n_value, "results: n", minimum=1, maximum=MAX_BINS)
    what = f"results: loss of {name} at epsilon={eps_value:g}, n={n_value}"
    value = check_real(loss, what, low=0.0, allow_inf=True)
    drawn_values(np.array([value]), what, log=True)
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

    One line per dimension ``n`` (colour), markers per mechanism.  Log-log axes; infinite losses are
    drawn on an extra "∞" row at the top, zero losses on a "0" row at the bottom.  The green line is
    the bound ``loss = epsilon``: a point above it shows a DP violation.

    Parameters
    ----------
    results : mapping, iterable of rows, or None
        Monte Carlo (or exact) losses, nested ``{mechanism: {epsilon: {n: loss}}}`` (e.g. the authors'
        ``results.json``, whose class names are mapped to ours) or rows with ``mechanism``, ``epsilon``,
        ``n`` and ``loss`` such as :func:`dptutor.experiments.run_grid` returns.  May be ``None`` when
        ``exact`` is true.
    exact : bool, optional
        Add the closed form (:func:`dptutor.audit.exact_loss`) as thin dashed lines over ``epsilon_range``.
    panels : sequence of (title, mechanism names), optional
        The panels and the mechanisms drawn in each (default ``SANITY_PANELS``).
    dims : sequence of int or None, optional
        The dimensions drawn (default: those of ``results``, or the paper's).
    epsilon_range : (float, float), optional
        The epsilons of the exact curves and the bound's line: positive, at most six decades apart,
        below 1e100.
    title : str or None, optional
        A title over the figure.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter (for ``results``, the bad entry).
    """
    from dptutor.audit import exact_loss

    exact = check_bool(exact, "exact")
    if results is None and not exact:
        raise ValueError("results must be given unless exact=True")
    table = _results_table(results) if results is not None else []
    e_lo, e_hi = check_interval(epsilon_range, "epsilon_range", low=0.0, low_open=True)
    if e_hi > 1e6 * e_lo or e_hi > MAX_DRAWN or e_lo < MIN_LOG_DRAWN:
        raise ValueError(f"epsilon_range must span at most six decades within [{MIN_LOG_DRAWN:g}, {MAX_DRAWN:g}], "
                         f"got {(e_lo, e_hi)}")
    if title is not None:
        title = check_str(title, "title")
    panel_list = _sanity_panels(panels, exact)
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
    if not curves:  # nothing but the bound to draw
        raise ValueError("results must hold at least one loss of a mechanism in panels at a dimension in dims "
                         "(or pass exact=True)")

    finite = np.concatenate([c[4][np.isfinite(c[4]) & (c[4] > 0)] for c in curves] + [np.array([e_lo, e_hi])])
    # The ∞ row is kept even when empty, so panels and figures line up.
    rows = _SanityLossAxis.around(finite, has_zero=any((c[4] == 0).any() for c in curves))
    # Okabe-Ito colours in an order where neighbouring dimensions differ in hue and in lightness; their
    # bluish green is kept for the bound loss = epsilon.
    colour = {n: SANITY_DIM_COLOURS[i % len(SANITY_DIM_COLOURS)] for i, n in enumerate(dim_list)}
    fig = _draw_sanity_panels(panel_list, curves, rows, colour, (e_lo, e_hi))
    _sanity_legend(fig, dim_list, colour, bool(table), exact)
    if title:
        fig.suptitle(title)
    return fig


def _sanity_panels(panels: object, exact: bool) -> list[tuple[str, tuple[str, ...]]]:
    """``panels`` checked: ``(title, mechanism names)`` each, built-in mechanisms when ``exact``."""
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
    return panel_list


def _draw_sanity_panels(
    panel_list: list[tuple[str, tuple[str, ...]]], curves: list, rows: "_SanityLossAxis", colour: dict[int, str],
    e_range: tuple[float, float],
) -> Figure:
    """The panels of :func:`plot_sanity_check`, with their curves, the bound and the shared loss axis."""
    from matplotlib.lines import Line2D

    e_lo, e_hi = e_range
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
    axes[0].set_ylim(rows.lo / 10**1.0 if rows.has_zero else rows.lo, rows.top)
    rows.set_ticks(axes[0], max_decades=7)
    for ax in grid_axes[:, 0]:
        ax.set_ylabel("privacy loss of the attack")
    return fig


def _sanity_legend(fig: Figure, dim_list: list[int], colour: dict[int, str], estimates: bool, exact: bool) -> None:
    """The figure legend of :func:`plot_sanity_check`: dimensions, the bound, and the kinds of curve."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colour[n], lw=2.5, label=f"n = {n}") for n in dim_list]
    handles.append(Line2D([], [], color=SANITY_BOUND_COLOUR, lw=2.2, label=r"loss = $\varepsilon$ (the budget)"))
    if estimates:
        handles.append(Line2D([], [], color="0.3", lw=1.6, marker="o", ms=4.5, label="Monte Carlo estimate"))
    if exact:
        handles.append(Line2D([], [], color="0.3", lw=0.9, ls="--", label="exact loss"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(5, len(handles)), fontsize="small")


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

    Parameters
    ----------
    losses : sequence of float
        The point estimate of each run, finite and non-negative.
    lower_bounds : sequence of float
        The lower bound of each run, finite, non-negative and at most its estimate.
    epsilon : float
        The budget, positive.
    exact : float or None, optional
        The exact loss, drawn as a dashed line.
    confidence : float, optional
        The level of the bounds, for the legend.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    est = drawn_values(losses_array(losses, "losses"), "losses")
    low = drawn_values(losses_array(lower_bounds, "lower_bounds"), "lower_bounds")
    if est.shape != low.shape:
        raise ValueError(f"losses and lower_bounds must have the same length, got {est.size} and {low.size}")
    if np.isinf(est).any() or np.isinf(low).any():
        raise ValueError("losses and lower_bounds must be finite for this plot")
    if (low > est).any():
        raise ValueError("lower_bounds must not exceed losses (each bound at most its point estimate)")
    epsilon = check_real(epsilon, "epsilon", low=0.0, low_open=True, high=MAX_DRAWN)
    if exact is not None:
        exact = check_real(exact, "exact", low=0.0, high=MAX_DRAWN)
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

    Parameters
    ----------
    series : mapping of str to (sequence of float, sequence of float)
        ``label -> (exact, estimates)``, two equal-length sequences of non-negative losses (inf allowed).
    xlabel, ylabel : str, optional
        The axis labels.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller closes it).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter; ``ValueError`` when no cell has a finite, positive exact loss.
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
        ex = drawn_values(losses_array(ex_raw, f"series[{label!r}] exact"), f"series[{label!r}] exact", log=True)
        es = drawn_values(losses_array(es_raw, f"series[{label!r}] estimates"), f"series[{label!r}] estimates", log=True)
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
