"""Headless Chromium renders the built site offline: MathJax typesets the math, the figures are there."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BookBuild

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install chromium); .ci/run installs it",
)
# Pages whose math must be typeset, and the reproduction chapters whose figures must be present.
MATH_PAGES = ["probability", "dp_primer", "laplace_mechanism", "inverse_cdf", "dptext", "sanity_check"]
FIGURE_PAGES = {"inverse_cdf": 1, "dptext": 1, "sanity_check": 1}


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


@pytest.mark.parametrize("name", MATH_PAGES)
def test_math_is_typeset(book_build: BookBuild, tmp_path: Path, name: str) -> None:
    assert book_build.returncode == 0, "the book did not build"
    dom = dump_dom(book_build.html / "book" / f"{name}.html", tmp_path)
    assert "<mjx-container" in dom, f"MathJax did not typeset {name}"
    article = dom.split('<article', 1)[-1]
    raw = re.findall(r"\\\(|\\\[", re.sub(r"<(pre|code)[^>]*>.*?</\1>", "", article, flags=re.S))
    assert not raw, f"raw TeX delimiters left on {name}: {len(raw)}"


@pytest.mark.parametrize("name,minimum", sorted(FIGURE_PAGES.items()))
def test_reproduction_figures_are_rendered(book_build: BookBuild, tmp_path: Path, name: str,
                                           minimum: int) -> None:
    assert book_build.returncode == 0, "the book did not build"
    dom = dump_dom(book_build.html / "book" / f"{name}.html", tmp_path)
    images = re.findall(r'<img[^>]+src="([^"]+\.(?:png|svg))"', dom)
    assert len(images) >= minimum, f"{name}: expected figures, found {images}"
    for src in images:
        assert (book_build.html / "book" / src).resolve().is_file(), src
    assert "<figcaption" in dom, f"{name}: figures need captions"
