"""The whole book builds with -W -n from a clean cache, and the site works offline."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT, BookBuild

CHAPTERS = ["intro", "probability", "dp_primer", "laplace_mechanism", "composition",
            "inverse_cdf", "dptext", "sanity_check", "conclusion", "floating_point", "stronger_audits",
            "approximate_dp"]
CDN = re.compile(r"cdn\.jsdelivr|mathjax@|cdnjs|unpkg\.com|googleapis|fonts\.gstatic")
REMOTE_ASSET = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)


def test_book_builds_without_warnings(book_build: BookBuild) -> None:
    assert book_build.returncode == 0, book_build.log[-6000:]
    assert "build succeeded" in book_build.log


def test_every_chapter_is_built(book_build: BookBuild) -> None:
    for name in CHAPTERS:
        assert (book_build.html / "book" / f"{name}.html").is_file(), name
    index = (book_build.html / "index.html").read_text()
    assert "book/intro.html" in index


def test_no_page_loads_from_the_network(book_build: BookBuild) -> None:
    pages = list(book_build.html.rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(errors="replace")
        assert not CDN.search(text), f"{page} references a CDN"
        # Plain <a href> links (citations, DOIs) are fine; assets must be served by the site itself.
        bad = [m.group(0) for m in REMOTE_ASSET.finditer(text) if not m.group(0).lower().startswith("<a")]
        assert not bad, f"{page} loads remote assets: {bad[:3]}"


def test_mathjax_is_served_by_the_site(book_build: BookBuild) -> None:
    page = (book_build.html / "book" / "laplace_mechanism.html").read_text()
    match = re.search(r'<script[^>]+src="([^"]*mathjax[^"]*)"', page)
    assert match, "no MathJax script on a page with math"
    src = match.group(1).split("?")[0]
    assert not src.startswith(("http:", "https:", "//")), src
    assert (book_build.html / "book" / src).resolve().is_file(), src


def test_no_notebook_outputs_are_committed() -> None:
    assert not list((ROOT / "book").rglob("*.ipynb")), "chapters are MyST Markdown notebooks"
