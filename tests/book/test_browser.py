"""Headless Chromium renders the built site offline: MathJax typesets the math, the figures are there."""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import BookBuild

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install chromium); .ci/run installs it",
)
# Pages whose math must be typeset, and the reproduction chapters whose figures must be present.
MATH_PAGES = ["probability", "dp_primer", "laplace_mechanism", "inverse_cdf", "dptext", "sanity_check",
              "reading_audits", "floating_point", "stronger_audits", "blackbox_audits", "composition", "approximate_dp"]
FIGURE_PAGES = {"inverse_cdf": 1, "dptext": 1, "sanity_check": 1, "reading_audits": 1, "stronger_audits": 1,
                "composition": 1, "approximate_dp": 3}


def dump_dom(page: Path, profile: Path) -> str:
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
         f"--user-data-dir={profile}", "--allow-file-access-from-files",
         "--virtual-time-budget=20000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def rendered(book_build: BookBuild, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    """The DOM of a built chapter after Chromium ran its scripts; each page is rendered once."""
    assert book_build.returncode == 0, "the book did not build"

    @functools.cache
    def dom(name: str) -> str:
        return dump_dom(book_build.html / "book" / f"{name}.html", tmp_path_factory.mktemp("chromium"))

    return dom


@pytest.mark.parametrize("name", MATH_PAGES)
def test_math_is_typeset(rendered: Callable[[str], str], name: str) -> None:
    dom = rendered(name)
    assert "<mjx-container" in dom, f"MathJax did not typeset {name}"
    article = dom.split('<article', 1)[-1]
    raw = re.findall(r"\\\(|\\\[", re.sub(r"<(pre|code)[^>]*>.*?</\1>", "", article, flags=re.S))
    assert not raw, f"raw TeX delimiters left on {name}: {len(raw)}"


@pytest.mark.parametrize("name,minimum", sorted(FIGURE_PAGES.items()))
def test_reproduction_figures_are_rendered(book_build: BookBuild, rendered: Callable[[str], str], name: str,
                                           minimum: int) -> None:
    dom = rendered(name)
    images = re.findall(r'<img[^>]+src="([^"]+\.(?:png|svg))"', dom)
    assert len(images) >= minimum, f"{name}: expected figures, found {images}"
    for src in images:
        assert (book_build.html / "book" / src).resolve().is_file(), src
    assert "<figcaption" in dom, f"{name}: figures need captions"
