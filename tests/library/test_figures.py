"""Every figure function of dptutor.plotting labels the x axis of every panel, and its legends use words."""
from __future__ import annotations

import inspect
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dptutor import plotting  # noqa: E402
from dptutor.distributions import laplace_cdf, laplace_pdf  # noqa: E402
from dptutor.floating import attack  # noqa: E402

rng = np.random.default_rng(0)
draws = rng.laplace(size=500)
# One call per figure function, with small inputs like the book's.
CALLS = {
    "plot_inverse_cdfs": lambda: plotting.plot_inverse_cdfs(),
    "plot_sampling_strategies": lambda: plotting.plot_sampling_strategies([("a", draws), ("b", draws)]),
    "plot_histograms_with_pdf": lambda: plotting.plot_histograms_with_pdf({"a": draws}, laplace_pdf),
    "plot_ecdfs": lambda: plotting.plot_ecdfs({"a": draws}, {"a": laplace_cdf}),
    "plot_neighbouring_densities": lambda: plotting.plot_neighbouring_densities(
        [("a", lambda t: laplace_pdf(t, 0.0, 1.0), lambda t: laplace_pdf(t, 1.0, 1.0))], y=0.1),
    "plot_uniform_distributions": lambda: plotting.plot_uniform_distributions(),
    "plot_laplace_family": lambda: plotting.plot_laplace_family(),
    "plot_loss_regions": lambda: plotting.plot_loss_regions(),
    "plot_laplace_mechanism": lambda: plotting.plot_laplace_mechanism(),
    "plot_sanity_check": lambda: plotting.plot_sanity_check(None, exact=True, dims=[1, 2]),
    "plot_seed_estimates": lambda: plotting.plot_seed_estimates([1.1, 0.9], [0.8, 0.7], 1.0, exact=1.0),
    "plot_loss_agreement": lambda: plotting.plot_loss_agreement({"laplace": ([0.1, 0.5], [0.11, 0.49])}),
    "fp_plot_impossible_fractions": lambda: plotting.fp_plot_impossible_fractions(
        {"numpy's laplace": [attack("numpy", b, 20, rng=np.random.default_rng(1)) for b in (0.1, 1.0)]}),
    "plot_attack_comparison": lambda: plotting.plot_attack_comparison(
        [("Laplace", 1, 1.0, 0.9, 0.8), ("Laplace", 2, 1.0, 0.8, 0.6)], true_ratio={"Laplace": lambda n: 1.0}),
    "plot_composition": lambda: plotting.plot_composition([1, 2, 4], 0.5, [0.45, 0.9, 1.08]),
    "plot_gaussian_sigmas": lambda: plotting.plot_gaussian_sigmas([0.1, 0.5, 2.0], [48.4, 9.7, np.nan],
                                                                  [30.7, 7.0, 2.0], 1e-5),
    "plot_pure_epsilon_growth": lambda: plotting.plot_pure_epsilon_growth([10**3, 10**4], [0.1, 0.5], [0.1, 0.4],
                                                                          1.0, 1e-3),
    "plot_tradeoff": lambda: plotting.plot_tradeoff(0.39, [0.1, 0.5], [0.8, 0.3]),
}
# A parenthesis in a legend entry says something in words, not only symbols such as "(1 > ε)" or "(4)".
SYMBOLS_ONLY = re.compile(r"(?<![A-Za-z])\([^A-Za-z()]*\)")  # not a call such as "Uni(0, 1)"


def test_every_figure_function_is_covered() -> None:
    public = {name for name, f in inspect.getmembers(plotting, inspect.isfunction)
              if "plot" in name and not name.startswith("_") and f.__module__ == plotting.__name__}
    assert public == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_panel_has_an_x_label_and_legends_in_words(name: str) -> None:
    fig = CALLS[name]()
    try:
        visible = [ax for ax in fig.axes if ax.get_visible()]
        assert visible
        for ax in visible:
            assert ax.get_xlabel().strip(), f"{name}: a panel without an x-axis label ({ax.get_title()!r})"
        legends = [ax.get_legend() for ax in visible if ax.get_legend()] + list(fig.legends)
        for legend in legends:
            for text in legend.get_texts():
                label = re.sub(r"\$[^$]*\$", "", text.get_text())
                assert not SYMBOLS_ONLY.search(label), f"{name}: legend entry {text.get_text()!r} needs words"
    finally:
        plt.close(fig)
