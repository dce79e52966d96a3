"""Sphinx extension: keep the published site free of network loads.

Jupyter Book 1 always enables sphinx-thebe, which writes the address of its JavaScript bundle (on
unpkg.com) and a Binder configuration into every page, although this book has no live-code button.
This extension removes both, so that no page refers to a script outside the site. It also offers
every executed chapter as a ``.ipynb`` download. MathJax itself comes
from the site through sphinx-mathjax-offline (see _config.yml).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx


def _is_thebe_script(script: Any) -> bool:
    filename = str(getattr(script, "filename", script) or "")
    body = str(getattr(script, "attributes", {}).get("body", ""))
    return "thebe" in filename.lower() or "THEBE_JS_URL" in body


def _drop_thebe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not _is_thebe_script(s)]
    if "css_files" in context:
        context["css_files"] = [c for c in context["css_files"] if "thebe" not in str(getattr(c, "filename", c))]


def _drop_thebe_config(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(nodes.raw)):
        if "x-thebe-config" in node.astext():
            node.parent.remove(node)


def _offer_ipynb_download(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Offer each executed chapter as a .ipynb download.

    sphinx-book-theme only copies the executed notebook into ``_sources`` when a launch service (Binder,
    Colab, ...) is configured; this offline site has none, so do the copy here.
    """
    if not str(context.get("sourcename", "")).endswith((".md", ".md.txt")):
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def setup(app: Sphinx) -> dict[str, Any]:
    # Run after sphinx-thebe's own handlers (default priority 500).
    app.connect("doctree-resolved", _drop_thebe_config, priority=900)
    app.connect("html-page-context", _drop_thebe_scripts, priority=900)
    # Before the theme builds its header buttons (priority 501).
    app.connect("html-page-context", _offer_ipynb_download, priority=499)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
