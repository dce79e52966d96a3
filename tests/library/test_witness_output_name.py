"""The witness output of Theorem 3.2 and of the neighbouring-density figure is ``y`` (book/notation.md: ``z`` is a
value of the noise, ``y`` an output); ``z`` stays a deprecated keyword alias and a read-only property."""
from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import sympy as sp  # noqa: E402

from dptutor import plotting  # noqa: E402
from dptutor.distributions import dptext_pdf, laplace_pdf  # noqa: E402
from dptutor.symbolic import theorem_3_2  # noqa: E402
from dptutor.symbolic.privacy_loss import Theorem32  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error")  # the new name must give no warning at all

BOOK = Path(__file__).resolve().parents[2] / "book"
QUARTER = sp.Rational(1, 4)


def _names(message: str, param: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", message) is not None


# ---------------------------------------------------------------------------------------------
# theorem_3_2 and Theorem32
# ---------------------------------------------------------------------------------------------


def test_theorem_3_2_takes_y_and_records_it_as_y() -> None:
    assert list(inspect.signature(theorem_3_2).parameters) == ["y"]
    th = theorem_3_2(y=QUARTER)
    assert th.y == QUARTER
    assert th.violates_dp and th.density_xprime == 0
    assert theorem_3_2().y == sp.Rational(1, 10)  # the default, unchanged
    assert "y" in {f.name for f in dataclasses.fields(Theorem32)}
    assert "z" not in {f.name for f in dataclasses.fields(Theorem32)}


def test_theorem32_keeps_z_as_a_read_only_property() -> None:
    th = theorem_3_2(y=QUARTER)
    assert th.z == th.y == QUARTER
    with pytest.raises(AttributeError):
        th.z = sp.Rational(1, 3)  # type: ignore[misc]
    assert "old name" in (Theorem32.z.__doc__ or "")


def test_theorem_3_2_old_keyword_still_works_with_the_same_result() -> None:
    new = theorem_3_2(y=QUARTER)
    with pytest.warns(DeprecationWarning, match=r"theorem_3_2\(\): z= is deprecated .* use y="):
        old = theorem_3_2(z=QUARTER)
    assert old == new
    assert theorem_3_2(QUARTER) == new  # positionally as before


def test_theorem_3_2_refuses_both_names() -> None:
    with pytest.raises(TypeError, match=r"both y= and its deprecated alias z="):
        theorem_3_2(y=QUARTER, z=QUARTER)


@pytest.mark.parametrize(("value", "error"), [(2, ValueError), (0, ValueError), (sp.Integer(1), ValueError),
                                              ("0.1", TypeError), (None, TypeError), (sp.I, TypeError)])
def test_theorem_3_2_bad_values_name_y(value: object, error: type) -> None:
    with pytest.raises(error) as info:
        theorem_3_2(y=value)
    assert _names(str(info.value), "y") and not _names(str(info.value), "z")
    # Through the old keyword the decorator has already renamed it: the message names y (the warning says z= -> y=).
    with pytest.warns(DeprecationWarning, match="use y="), pytest.raises(error) as info:
        theorem_3_2(z=value)
    assert _names(str(info.value), "y")


# ---------------------------------------------------------------------------------------------
# plot_neighbouring_densities
# ---------------------------------------------------------------------------------------------

PANELS = [("DPText", lambda t: dptext_pdf(t, 0.0, 1.0, nan="discard"), lambda t: dptext_pdf(t, 1.0, 1.0, nan="discard"))]


def _marks(fig: plt.Figure) -> tuple[list[float], list[float], str]:
    ax = fig.axes[0]
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    return [float(d.get_xdata()[0]) for d in dots], [float(d.get_ydata()[0]) for d in dots], ax.get_xlabel()


def test_plot_neighbouring_densities_takes_y() -> None:
    params = inspect.signature(plotting.plot_neighbouring_densities).parameters
    assert "y" in params and "z" not in params and params["y"].kind is inspect.Parameter.KEYWORD_ONLY
    fig = plotting.plot_neighbouring_densities(PANELS, y=0.1)
    try:
        xs, ys, xlabel = _marks(fig)
    finally:
        plt.close(fig)
    assert xs == [0.1, 0.1]
    assert ys == pytest.approx([np.exp(-0.1), 0.0])
    assert xlabel == "output $y$"


def test_plot_neighbouring_densities_old_keyword_still_works() -> None:
    fig = plotting.plot_neighbouring_densities(PANELS, y=0.1)
    try:
        new = _marks(fig)
    finally:
        plt.close(fig)
    with pytest.warns(DeprecationWarning, match=r"plot_neighbouring_densities\(\): z= is deprecated .* use y="):
        fig = plotting.plot_neighbouring_densities(PANELS, z=0.1)
    try:
        assert _marks(fig) == new
    finally:
        plt.close(fig)
    with pytest.raises(TypeError, match=r"both y= and its deprecated alias z="):
        plotting.plot_neighbouring_densities(PANELS, y=0.1, z=0.1)


@pytest.mark.parametrize(("value", "error"), [(100.0, ValueError), (-4.0, ValueError), (float("nan"), ValueError),
                                              ("0.1", TypeError)])
def test_plot_neighbouring_densities_bad_values_name_y(value: object, error: type) -> None:
    with pytest.raises(error) as info:
        plotting.plot_neighbouring_densities([("a", laplace_pdf, laplace_pdf)], y=value)
    assert _names(str(info.value), "y") and not _names(str(info.value), "z")
    with pytest.warns(DeprecationWarning, match="use y="), pytest.raises(error) as info:
        plotting.plot_neighbouring_densities([("a", laplace_pdf, laplace_pdf)], z=value)
    assert _names(str(info.value), "y")


# ---------------------------------------------------------------------------------------------
# the book uses the new names (a deprecation warning would reach the reader)
# ---------------------------------------------------------------------------------------------


def _calls(text: str, name: str) -> list[str]:
    """The argument text of every call ``name(...)`` in ``text`` (parentheses balanced)."""
    found = []
    for m in re.finditer(rf"\b{name}\(", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        found.append(text[m.end():i - 1])
    return found


def test_the_book_passes_y_and_never_z() -> None:
    seen = 0
    for path in sorted(BOOK.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for name in ("theorem_3_2", "plot_neighbouring_densities"):
            for args in _calls(text, name):
                seen += 1
                assert not re.search(r"(?<![\w.])z\s*=(?!=)", args), f"{path.name}: {name}(... z= ...)"
        assert not re.search(r"\bth32\.z\b", text), f"{path.name} reads Theorem32.z; read .y"
    assert seen >= 2  # the two calls of book/dptext.md
