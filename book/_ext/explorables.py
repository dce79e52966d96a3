"""Sphinx extension: serve BokehJS once, from the site itself, to the pages that hold an explorable.

An explorable is an interactive figure made with Bokeh: a chapter's cell emits the ``script`` and ``div``
of ``bokeh.embed.components`` as HTML, inside an element of class ``dptutor-explorable``. Its sliders run
``CustomJS`` callbacks in the reader's browser: no kernel, no server, no network.

The figure needs BokehJS. Instead of inlining the library into every page (``INLINE`` resources, more than a
megabyte each) or loading it from a CDN (which the offline site refuses), this extension copies BokehJS from
the installed ``bokeh`` package into the build's ``_static/bokeh/`` once, and adds the two scripts only to
the pages whose body holds an explorable. The file names carry the version, so a browser never mixes a cached
library with the documents of another Bokeh version.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

MARKER = "dptutor-explorable"
#: The BokehJS bundles an explorable needs: the core library and the widgets (sliders, text).
BUNDLES = ("bokeh", "bokeh-widgets")


def _bokeh() -> tuple[str, Path]:
    """The installed Bokeh's version and the folder of its minified JavaScript bundles."""
    import bokeh
    from bokeh.util.paths import bokehjs_path

    return bokeh.__version__, Path(bokehjs_path()) / "js"


def static_names(version: str) -> list[str]:
    """The files' names under ``_static``, in load order."""
    return [f"bokeh/{bundle}-{version}.min.js" for bundle in BUNDLES]


def _add_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    if MARKER not in str(context.get("body", "")):
        return
    version, _ = _bokeh()
    for name in static_names(version):
        app.add_js_file(name)          # during html-page-context: added to this page only


def _copy_bokehjs(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    version, source = _bokeh()
    target = Path(app.outdir) / "_static"
    for bundle, name in zip(BUNDLES, static_names(version)):
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / f"{bundle}.min.js", dest)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _add_scripts)
    app.connect("build-finished", _copy_bokehjs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
