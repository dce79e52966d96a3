"""Sphinx extension: keep the published site free of network loads.

Jupyter Book 1 always enables sphinx-thebe, which writes the address of its JavaScript bundle (on
unpkg.com) and a Binder configuration into every page, although this book has no live-code button.
This extension removes both, so that no page refers to a script outside the site. It also offers
every executed chapter as a ``.ipynb`` download and, next to the notebooks, a wheel of the ``dptutor``
package that the notebooks import (built from the repository at the start of every build, so a reader who
downloads a notebook can ``pip install`` what it needs). The role ``{wheel}`text``` links to that wheel.
MathJax itself comes from the site through sphinx-mathjax-offline (see _config.yml).
"""
from __future__ import annotations

import posixpath
import shutil
import subprocess
import sys
import tempfile
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


def _build_wheel(app: Sphinx) -> None:
    """Build the ``dptutor`` wheel from the repository root (the book's source folder) into
    ``<build>/wheel``; no network (``--no-deps --no-build-isolation``), a few seconds."""
    root = Path(app.srcdir)
    target = Path(app.outdir).parent / "wheel"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        # Build from a copy, so that setuptools' build/ and egg-info folders never land in the repository.
        src = Path(scratch) / "src"
        shutil.copytree(root, src, ignore=shutil.ignore_patterns(
            ".git", ".venv", "_build", "book", "tests", "benchmarks", "results", "*.egg-info", "build",
            "__pycache__", ".pytest_cache", ".hypothesis", ".jupyter_cache", "jupyter_execute"))
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--disable-pip-version-check", "-w", str(target), str(src)],
            capture_output=True, text=True,
        )
    wheels = sorted(target.glob("dptutor-*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        raise RuntimeError(f"building the dptutor wheel failed:\n{proc.stdout}\n{proc.stderr}")
    app.config.dptutor_wheel_path = str(wheels[0])


def _wheel_name(app: Sphinx) -> str:
    return Path(app.config.dptutor_wheel_path).name


def _wheel_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{wheel}`text```: a link from the page to the wheel, offered in ``_sources`` next to the notebooks."""
    env = inliner.document.settings.env
    wheel = Path(env.app.config.dptutor_wheel_path).name
    page_folder = posixpath.dirname(env.docname) or "."
    node = nodes.reference(rawtext, f"{text} ({wheel})", refuri=posixpath.relpath(f"_sources/{wheel}", page_folder))
    return [node], []


def _offer_wheel_download(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Add the wheel to each page's download menu, after the notebook and the source."""
    wheel = _wheel_name(app)
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].append({
                "type": "link",
                "url": f"{context['pathto']('_sources', 1)}/{wheel}",
                "text": ".whl (dptutor)",
                "icon": "fas fa-box",
                "tooltip": "Download the dptutor package that the notebooks import (pip install it)",
                "label": "download-wheel-button",
            })


def _copy_wheel(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_sources"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(app.config.dptutor_wheel_path, target / _wheel_name(app))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("dptutor_wheel_path", "", "")
    app.connect("builder-inited", _build_wheel)
    app.add_role("wheel", _wheel_role)
    app.connect("html-page-context", _offer_wheel_download, priority=502)  # after the theme's buttons
    app.connect("build-finished", _copy_wheel)
    # Run after sphinx-thebe's own handlers (default priority 500).
    app.connect("doctree-resolved", _drop_thebe_config, priority=900)
    app.connect("html-page-context", _drop_thebe_scripts, priority=900)
    # Before the theme builds its header buttons (priority 501).
    app.connect("html-page-context", _offer_ipynb_download, priority=499)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
