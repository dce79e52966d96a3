"""Smoke tests for dptutor.plotting: every figure function draws what it claims, and rejects bad input."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from dptutor import plotting


# --- Part II: inverse CDF and DPText chapters -------------------------------------------------

from dptutor.distributions import (  # noqa: E402
    dptext_pdf,
    laplace_cdf,
    laplace_pdf,
    laplace_ppf,
    sample_dptext,
    sample_laplace,
)


def test_plot_inverse_cdfs_draws_eq4_eq7_and_dptext() -> None:
    fig = plotting.plot_inverse_cdfs(mu=1.0, b=2.0, num=101)
    try:
        assert isinstance(fig, Figure)
        ax_ok, ax_bad = fig.axes
        eq4 = ax_ok.lines[0]
        np.testing.assert_allclose(eq4.get_ydata(), laplace_ppf(eq4.get_xdata(), 1.0, 2.0))
        # Eq. 7 on v is Eq. 4 on u = v + 1/2: same values on the shifted grid.
        eq7 = ax_ok.lines[1]
        np.testing.assert_allclose(eq7.get_ydata(), laplace_ppf(eq7.get_xdata() + 0.5, 1.0, 2.0), atol=1e-12)
        dptext_line, real_part = ax_bad.lines[1], ax_bad.lines[2]
        assert np.all(dptext_line.get_xdata() < 0.5) and np.all(dptext_line.get_ydata() >= 1.0)
        assert np.all(np.diff(dptext_line.get_ydata()) > 0)  # increasing on [0, 1/2)
        assert np.all(real_part.get_xdata() > 0.5)
        assert np.all(np.diff(real_part.get_ydata()) < 0)  # the real part decreases (Theorem 3.1)
    finally:
        plt.close(fig)


def test_plot_inverse_cdfs_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="num"):
        plotting.plot_inverse_cdfs(num=3)
    with pytest.raises(ValueError, match="b"):
        plotting.plot_inverse_cdfs(b=-1.0)


def test_plot_sampling_strategies_reports_nan_fraction() -> None:
    rng = np.random.default_rng(20220301)
    kept = sample_dptext(2000, rng=rng, nan="keep")
    fig = plotting.plot_sampling_strategies(
        [("Laplace", sample_laplace(2000, rng=rng)), ("uniform", rng.random(2000), (0.0, 1.0)),
         ("DPText, NaN kept", kept), ("DPText, NaN -> 0", sample_dptext(2000, rng=rng, nan="zero"))],
        bins=20,
    )
    try:
        visible = [ax for ax in fig.axes if ax.get_visible()]
        assert len(visible) == 4 and len(fig.axes) == 6  # 2 x 3 grid, 2 hidden
        texts = [t.get_text() for t in visible[2].texts]
        assert texts and f"{100 * np.isnan(kept).mean():.1f}%" in texts[0]
        assert not visible[0].texts and not visible[3].texts  # no NaN there, no note
        assert visible[1].get_xlim() == (0.0, 1.0)
        assert sum(p.get_height() for p in visible[2].patches) == np.sum(np.isfinite(kept) & (kept <= 8.0))
    finally:
        plt.close(fig)


def test_plot_sampling_strategies_rejects_bad_panels() -> None:
    with pytest.raises(ValueError, match="panels"):
        plotting.plot_sampling_strategies([])
    with pytest.raises(ValueError, match="panels\\[0\\]"):
        plotting.plot_sampling_strategies([("x",)])
    with pytest.raises(ValueError, match="range"):
        plotting.plot_sampling_strategies([("x", [1.0, 2.0], (1.0, 0.0))])
    with pytest.raises(ValueError, match="bins"):
        plotting.plot_sampling_strategies([("x", [1.0, 2.0])], bins=0)


def test_plot_histograms_with_pdf_is_density_scaled() -> None:
    rng = np.random.default_rng(7)
    x = sample_laplace(5000, rng=rng)
    fig = plotting.plot_histograms_with_pdf({"Eq. 4": x}, laplace_pdf, limits=(-3.0, 3.0), bins=30)
    try:
        ax = fig.axes[0]
        area = sum(p.get_height() * p.get_width() for p in ax.patches)
        # Exact identity: the drawn area is the fraction of samples inside the limits.
        assert area == pytest.approx(np.mean(np.abs(x) <= 3.0), rel=1e-12)
        np.testing.assert_allclose(ax.lines[0].get_ydata(), laplace_pdf(ax.lines[0].get_xdata()))
    finally:
        plt.close(fig)
    with pytest.raises(TypeError, match="pdf"):
        plotting.plot_histograms_with_pdf({"a": x}, pdf=None)  # type: ignore[arg-type]


def test_plot_ecdfs_counts_nan_as_missing_mass() -> None:
    rng = np.random.default_rng(11)
    kept = sample_dptext(1000, rng=rng, nan="keep")
    fig = plotting.plot_ecdfs({"kept": kept}, {"Laplace": laplace_cdf}, limits=(-2.0, 50.0))
    try:
        step = fig.axes[0].lines[0]
        # The ECDF tops out at the finite fraction (about 1/2), never at 1.
        assert step.get_ydata()[-1] == np.isfinite(kept).mean()
        assert np.all(step.get_ydata()[step.get_xdata() < 0] == 0)
    finally:
        plt.close(fig)
    with pytest.raises(TypeError, match="cdfs"):
        plotting.plot_ecdfs({"kept": kept}, {"bad": 3})  # type: ignore[dict-item]


def test_plot_neighbouring_densities_marks_y() -> None:
    fig = plotting.plot_neighbouring_densities(
        [("DPText", lambda x: dptext_pdf(x, 0.0, 1.0, nan="discard"),
          lambda x: dptext_pdf(x, 1.0, 1.0, nan="discard"))], y=0.1)
    try:
        ax = fig.axes[0]
        dots = [line for line in ax.lines if line.get_marker() == "o"]
        assert [d.get_ydata()[0] for d in dots] == pytest.approx([np.exp(-0.1), 0.0])
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match=r"^y must lie inside limits"):
        plotting.plot_neighbouring_densities([("a", laplace_pdf, laplace_pdf)], y=100.0)


# ---------------------------------------------------------------------------------------------
# Part I figures: plot_uniform_distributions, plot_laplace_family, plot_laplace_mechanism
# ---------------------------------------------------------------------------------------------


def test_part1_plot_uniform_distributions_draws_pmf_and_pdfs() -> None:
    import matplotlib.pyplot as plt
    import numpy as np
    import pytest

    from dptutor.plotting import plot_uniform_distributions

    fig = plot_uniform_distributions(k=4, intervals=((0.0, 1.0), (-0.5, 0.5), (0.0, 2.0)))
    try:
        ax_pmf, ax_pdf = fig.axes
        # PMF markers: k points at height 1/k.
        markers = ax_pmf.lines[0]
        np.testing.assert_allclose(markers.get_xdata(), [1, 2, 3, 4])
        np.testing.assert_allclose(markers.get_ydata(), 0.25)
        # One step curve per interval, its plateau at 1 / (high - low).
        assert len(ax_pdf.lines) == 3
        assert max(ax_pdf.lines[2].get_ydata()) == pytest.approx(0.5)
        assert max(ax_pdf.lines[0].get_ydata()) == pytest.approx(1.0)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="k"):
        plot_uniform_distributions(k=0)
    with pytest.raises(ValueError, match="intervals"):
        plot_uniform_distributions(intervals=((1.0, 0.0),))


def test_part1_plot_laplace_family_curves_match_the_density() -> None:
    import matplotlib.pyplot as plt
    import numpy as np
    import pytest
    from scipy import stats

    from dptutor.plotting import plot_laplace_family

    fig = plot_laplace_family(mus=(-1.0, 3.0), bs=(0.5, 2.0))
    try:
        ax_mu, ax_b = fig.axes
        curves_mu = [ln for ln in ax_mu.lines if len(ln.get_xdata()) > 2]
        curves_b = [ln for ln in ax_b.lines if len(ln.get_xdata()) > 2]
        assert len(curves_mu) == 2 and len(curves_b) == 2
        for line, mu in zip(curves_mu, (-1.0, 3.0)):
            x = np.asarray(line.get_xdata())
            np.testing.assert_allclose(line.get_ydata(), stats.laplace.pdf(x, loc=mu, scale=1.0), rtol=1e-12)
        for line, b in zip(curves_b, (0.5, 2.0)):
            x = np.asarray(line.get_xdata())
            np.testing.assert_allclose(line.get_ydata(), stats.laplace.pdf(x, loc=0.0, scale=b), rtol=1e-12)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="bs"):
        plot_laplace_family(bs=(1.0, -1.0))
    with pytest.raises(ValueError, match="mus"):
        plot_laplace_family(mus=())


def test_part1_plot_laplace_mechanism_loss_stays_in_the_band() -> None:
    import matplotlib.pyplot as plt
    import numpy as np
    import pytest

    from dptutor.plotting import plot_laplace_mechanism

    epsilon = 0.7
    fig = plot_laplace_mechanism(fx=0.0, fx_prime=1.0, epsilon=epsilon, sensitivity=1.0)
    try:
        ax_d, ax_l = fig.axes
        assert len(ax_d.lines) == 2
        loss = np.asarray(ax_l.lines[0].get_ydata())
        # The grid reaches beyond both means, where the loss is exactly +-epsilon (up to rounding).
        assert loss.max() == pytest.approx(epsilon, rel=1e-9)
        assert loss.min() == pytest.approx(-epsilon, rel=1e-9)
    finally:
        plt.close(fig)
    # Neighbours further apart than the sensitivity: the loss leaves the band.
    fig = plot_laplace_mechanism(fx=0.0, fx_prime=2.0, epsilon=epsilon, sensitivity=1.0)
    try:
        assert np.asarray(fig.axes[1].lines[0].get_ydata()).max() == pytest.approx(2 * epsilon, rel=1e-9)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="epsilon"):
        plot_laplace_mechanism(epsilon=0.0)
    with pytest.raises(TypeError, match="sensitivity"):
        plot_laplace_mechanism(sensitivity="1")


# --- chapter "The empirical sanity check": seed estimates and agreement plots -------------------


def test_sc_plot_seed_estimates_marks_estimates_above_epsilon() -> None:
    import matplotlib.pyplot as plt
    import numpy as np
    import pytest

    from dptutor.plotting import plot_seed_estimates

    losses = [1.2, 0.8, 1.05, 0.95, 1.3]
    lower = [1.1, 0.7, 0.9, 0.85, 1.01]
    fig = plot_seed_estimates(losses, lower, 1.0, exact=1.0)
    try:
        ax = fig.axes[0]
        below_pts, above_pts, bound_pts = ax.collections[1:4]
        # Sorted by estimate; the red set is exactly the estimates above epsilon.
        assert np.allclose(above_pts.get_offsets()[:, 1], [1.05, 1.2, 1.3])
        assert np.allclose(below_pts.get_offsets()[:, 1], [0.8, 0.95])
        assert np.allclose(bound_pts.get_offsets()[:, 1], sorted(lower, key=lambda v: losses[lower.index(v)]))
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any("3 of 5" in t for t in labels)
        assert any("above the budget in 2 of 5" in t for t in labels)  # lower bounds 1.1 and 1.01 exceed epsilon = 1
        assert [ln.get_ydata()[0] for ln in ax.lines] == [1.0, 1.0]  # epsilon and exact lines
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="same length"):
        plot_seed_estimates([1.0, 2.0], [0.5], 1.0)
    with pytest.raises(ValueError, match="must not exceed"):
        plot_seed_estimates([1.0], [1.5], 1.0)
    with pytest.raises(ValueError, match="NaN"):
        plot_seed_estimates([float("nan")], [0.0], 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        plot_seed_estimates([1.0], [0.5], 0.0)
    with pytest.raises(ValueError, match="confidence"):
        plot_seed_estimates([1.0], [0.5], 1.0, confidence=1.5)
    with pytest.raises(TypeError, match="confidence"):
        plot_seed_estimates([1.0], [0.5], 1.0, confidence="high")
    with pytest.raises(TypeError, match="epsilon"):
        plot_seed_estimates([1.0], [0.5], "1")


def test_sc_plot_loss_agreement_puts_infinity_on_top_and_drops_degenerate_cells() -> None:
    import matplotlib.pyplot as plt
    import numpy as np
    import pytest

    from dptutor.plotting import plot_loss_agreement

    inf = float("inf")
    fig = plot_loss_agreement({
        "adept": ([0.2, 2.0, 284.0], [0.21, 1.9, inf]),
        "random": ([0.0, 0.0], [0.001, 0.0]),   # exact loss 0: not drawable on log axes, dropped
        "dptext": ([inf], [inf]),               # exact loss inf: dropped
        "laplace": ([0.5], [0.0]),              # zero estimate: on the "0" row
    })
    try:
        ax = fig.axes[0]
        offsets = {c.get_label(): c.get_offsets() for c in ax.collections}
        assert len(offsets["adept"]) == 3 and len(offsets["random"]) == 0 and len(offsets["dptext"]) == 0
        y_adept = offsets["adept"][:, 1]
        assert np.allclose(y_adept[:2], [0.21, 1.9])
        assert y_adept[2] > 284.0  # the infinite estimate sits above every finite value
        assert offsets["laplace"][0, 1] < 0.2  # the zero estimate sits below every positive value
        tick_labels = [t.get_text() for t in ax.get_yticklabels()]
        assert "∞" in tick_labels and "0" in tick_labels
        diagonal = ax.lines[0]
        assert np.allclose(diagonal.get_xdata(), diagonal.get_ydata())
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="series"):  # a mapping, but empty
        plot_loss_agreement({})
    with pytest.raises(ValueError, match="same length"):
        plot_loss_agreement({"a": ([1.0, 2.0], [1.0])})
    with pytest.raises(ValueError, match="no cell"):
        plot_loss_agreement({"a": ([0.0, inf], [1.0, 1.0])})
    with pytest.raises(ValueError, match=">= 0"):
        plot_loss_agreement({"a": ([1.0], [-1.0])})


# --- Composition and approximate DP chapters (issue 15) ---------------------------------------


def test_composition_and_gaussian_figures_draw_their_data() -> None:
    figs = [
        plotting.plot_composition([1, 2, 4], 0.5, [0.45, 0.9, 1.08]),
        plotting.plot_gaussian_sigmas([0.1, 0.5, 2.0], [48.4, 9.7, np.nan], [30.7, 7.0, 2.0], 1e-5),
        plotting.plot_pure_epsilon_growth([10**3, 10**4], [0.1, 0.5], [0.1, 0.4], 1.0, 1e-3),
        plotting.plot_tradeoff(0.39, [0.1, 0.5], [0.8, 0.3]),
    ]
    try:
        for fig in figs:
            assert isinstance(fig, Figure)
            for ax in fig.axes:
                assert ax.get_xlabel() and ax.get_ylabel()
        # the classic curve skips the NaN (epsilon >= 1) point
        assert len(figs[1].axes[0].lines[0].get_xdata()) == 2
        assert "10^{-5}" in figs[1].axes[0].get_title()
    finally:
        for fig in figs:
            plt.close(fig)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: plotting.plot_composition([1, 2], 0.5, [0.4]), "majority"),
        (lambda: plotting.plot_composition([0, 2], 0.5, [0.4, 0.8]), "ks"),
        (lambda: plotting.plot_composition([1, 2], -1.0, [0.4, 0.8]), "epsilon"),
        (lambda: plotting.plot_gaussian_sigmas([0.1], [1.0], [1.0], 0.0), "delta"),
        (lambda: plotting.plot_gaussian_sigmas([0.1], [1.0, 2.0], [1.0], 1e-5), "classic"),
        (lambda: plotting.plot_pure_epsilon_growth([10], [0.1, 0.2], [0.1], 1.0, 1e-3), "pure_bounds"),
        (lambda: plotting.plot_tradeoff(0.0, [0.1], [0.8]), "mu"),
        (lambda: plotting.plot_tradeoff(0.4, [0.1, np.nan], [0.8, 0.1]), "alpha_points"),
    ],
)
def test_composition_and_gaussian_figures_reject_bad_input(call, name) -> None:
    with pytest.raises((ValueError, TypeError), match=name):
        call()


# --- Part III: stronger audits ------------------------------------------------------------------


def test_plot_attack_comparison_draws_zero_bounds_apart_from_the_data() -> None:
    rows = [("Laplace", 1, 0.1, 0.08, 0.0), ("Laplace", 8, 0.1, 0.0, 0.0), ("Laplace", 32, 0.1, 0.05, 0.02)]
    fig = plotting.plot_attack_comparison(rows, true_ratio={"Laplace": lambda n: 1.0})
    ax = fig.axes[0]
    data_lines = [line for line in ax.get_lines() if line.get_marker() == "o"]
    triangles = [line for line in ax.get_lines() if line.get_marker() == "v"]
    # the solid and the dashed line break at the zero bounds: no point is drawn on a made-up floor
    ys = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in data_lines])
    assert np.all(np.isnan(ys) | (ys > 0)) and np.isnan(ys).sum() == 3
    # three zero bounds, drawn as triangles in axes coordinates (at the bottom edge), not in data coordinates
    assert sum(len(line.get_xdata()) for line in triangles) == 3
    assert all(line.get_transform() != ax.transData for line in triangles)
    assert all(0 < y < 0.1 for line in triangles for y in line.get_ydata())
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(label.startswith("bound 0") for label in labels)
    plt.close(fig)
    # without zero bounds there is no legend entry for them
    fig = plotting.plot_attack_comparison([("Laplace", 1, 1.0, 0.9, 0.8)])
    assert not any(t.get_text().startswith("bound 0") for t in fig.legends[0].get_texts())
    plt.close(fig)


def test_plot_attack_comparison_rejects_negative_or_nan_bounds() -> None:
    for bad in (-0.1, float("nan")):
        with pytest.raises(ValueError, match="non-negative"):
            plotting.plot_attack_comparison([("Laplace", 1, 1.0, bad, 0.5)])


# --- absurd axis limits: an error naming the parameter, or a figure, never a warning -----------------

ABSURD = (1e308, -1e308, 1e200, 5e-324, 0.0, -1.0, float("inf"), float("-inf"), float("nan"))


def _pdf(x):
    return laplace_pdf(x, 0.0, 1.0)


def _cdf(x):
    return laplace_cdf(x, 0.0, 1.0)


#: For each public figure function, calls that put one absurd value ``v`` where a limit, a location, a scale
#: or a drawn value goes, with the parameter that an error must name.
ABSURD_CALLS = {
    "plot_inverse_cdfs": [("mu", lambda v: plotting.plot_inverse_cdfs(v, 1.0, num=101)),
                          ("b", lambda v: plotting.plot_inverse_cdfs(0.0, v, num=101)),
                          ("ylim", lambda v: plotting.plot_inverse_cdfs(0.0, 1.0, num=101, ylim=v))],
    "plot_sampling_strategies": [("limits", lambda v: plotting.plot_sampling_strategies([("t", np.arange(5.0))], limits=(-1.0, v))),
                                 ("range", lambda v: plotting.plot_sampling_strategies([("t", np.arange(5.0), (v, 1e300))]))],
    "plot_histograms_with_pdf": [("limits", lambda v: plotting.plot_histograms_with_pdf({"a": np.arange(5.0)}, _pdf, limits=(v, 1.0)))],
    "plot_ecdfs": [("limits", lambda v: plotting.plot_ecdfs({"a": np.arange(5.0)}, {"a": _cdf}, limits=(-1.0, v)))],
    "plot_neighbouring_densities": [("limits", lambda v: plotting.plot_neighbouring_densities([("t", _pdf, _pdf)], y=0.5,
                                                                                              limits=(-v, v)))],
    "plot_uniform_distributions": [("intervals", lambda v: plotting.plot_uniform_distributions(3, [(0.0, v)])),
                                   ("intervals", lambda v: plotting.plot_uniform_distributions(3, [(v, 1e300)]))],
    "plot_laplace_family": [("mus", lambda v: plotting.plot_laplace_family([v, 0.0])),
                            ("bs", lambda v: plotting.plot_laplace_family(bs=[v])),
                            ("span", lambda v: plotting.plot_laplace_family(span=v))],
    "plot_loss_regions": [("", lambda v: plotting.plot_loss_regions())],
    "plot_laplace_mechanism": [("fx", lambda v: plotting.plot_laplace_mechanism(v, 1.0)),
                               ("epsilon", lambda v: plotting.plot_laplace_mechanism(0.0, 1.0, v)),
                               ("sensitivity", lambda v: plotting.plot_laplace_mechanism(0.0, 1.0, 1.0, v))],
    "plot_sanity_check": [("results", lambda v: plotting.plot_sanity_check({"laplace": {1.0: {2: v}, 2.0: {2: 0.5}}})),
                          ("results", lambda v: plotting.plot_sanity_check({"laplace": {v: {2: 0.5}}})),
                          ("epsilon_range", lambda v: plotting.plot_sanity_check(None, exact=True, dims=[1],
                                                                                   epsilon_range=(v, 1e200)))],
    "plot_seed_estimates": [("losses", lambda v: plotting.plot_seed_estimates([v, 2.0], [0.0, 0.0], 1.0)),
                            ("epsilon", lambda v: plotting.plot_seed_estimates([1.0, 2.0], [0.0, 0.0], v)),
                            ("exact", lambda v: plotting.plot_seed_estimates([1.0, 2.0], [0.0, 0.0], 1.0, exact=v))],
    "plot_loss_agreement": [("series", lambda v: plotting.plot_loss_agreement({"a": ([v, 1.0], [1.0, v])}))],
    "plot_attack_comparison": [("rows", lambda v: plotting.plot_attack_comparison([("m", 2, 1.0, v, 1.0), ("m", 4, 1.0, 1.0, 0.0)])),
                               ("rows", lambda v: plotting.plot_attack_comparison([("m", 2, v, 1.0, 1.0)])),
                               ("rows", lambda v: plotting.plot_attack_comparison([("m", v, 1.0, 1.0, 1.0)]))],
    "plot_composition": [("epsilon", lambda v: plotting.plot_composition([1, 2], v, [1.0, 2.0])),
                         ("ks", lambda v: plotting.plot_composition([1, v], 1.0, [1.0, 2.0])),
                         ("majority", lambda v: plotting.plot_composition([1, 2], 1.0, [v, 2.0]))],
    "plot_gaussian_sigmas": [("epsilons", lambda v: plotting.plot_gaussian_sigmas([0.1, v], [1.0, 1.0], [1.0, 1.0], 1e-5)),
                             ("classic", lambda v: plotting.plot_gaussian_sigmas([0.1, 1.0], [v, 1.0], [1.0, 1.0], 1e-5)),
                             ("analytic", lambda v: plotting.plot_gaussian_sigmas([0.1, 1.0], [1.0, 1.0], [v, 1.0], 1e-5)),
                             ("delta", lambda v: plotting.plot_gaussian_sigmas([0.1, 1.0], [1.0, 1.0], [1.0, 1.0], v))],
    "plot_pure_epsilon_growth": [("trials", lambda v: plotting.plot_pure_epsilon_growth([10, v], [0.1, 0.2], [0.1, 0.2], 1.0, 1e-3)),
                                 ("pure_bounds", lambda v: plotting.plot_pure_epsilon_growth([10, 100], [v, 0.2], [0.1, 0.2], 1.0, 1e-3)),
                                 ("epsilon", lambda v: plotting.plot_pure_epsilon_growth([10, 100], [0.1, 0.2], [0.1, 0.2], v, 1e-3))],
    "plot_tradeoff": [("mu", lambda v: plotting.plot_tradeoff(v, [0.1, 0.5], [0.8, 0.3])),
                      ("alpha_points", lambda v: plotting.plot_tradeoff(1.0, [0.1, v], [0.8, 0.3]))],
    "fp_plot_impossible_fractions": [("confidence", lambda v: plotting.fp_plot_impossible_fractions({"a": [_attack_result()]}, v))],
}


def _attack_result():
    from dptutor.floating import attack

    return attack("numpy", 1.0, 64, rng=np.random.default_rng(0))


def test_every_figure_function_has_absurd_calls() -> None:
    assert set(ABSURD_CALLS) == {name for name in plotting.__all__ if callable(getattr(plotting, name))}


@pytest.mark.parametrize("name", sorted(ABSURD_CALLS))
def test_absurd_limits_give_an_error_naming_the_parameter_or_a_figure_never_a_warning(name: str) -> None:
    import warnings

    for parameter, call in ABSURD_CALLS[name]:
        for v in ABSURD:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a warning, from numpy or matplotlib, fails the test
                try:
                    fig = call(v)
                except (ValueError, TypeError) as exc:
                    assert parameter in str(exc), f"{name} with {parameter} = {v!r}: {exc}"
                    continue
                try:
                    fig.canvas.draw()  # ticks and transforms are computed here (and when a page saves it)
                finally:
                    plt.close(fig)
