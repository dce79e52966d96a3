"""Sphinx extension: the settings a maintainer fills in when publishing, and the page header.

* **The repository link.** The book's source repository is one setting, ``repository: url:`` in
  ``_config.yml`` (empty in the repository), or the environment variable ``DPTUTOR_REPOSITORY_URL``,
  which wins (the publishing workflow sets it to the GitHub repository it runs in).  While the address
  is empty the site has no repository button; once it is set, every page has one.  ``_config.yml``
  keeps ``html.use_repository_button: false`` because Jupyter Book 1 refuses that option without an
  address; this extension turns the button on when there is one.  An address that is not
  ``https://<host>/<owner>/<repository>``, or that still holds the placeholder ``OWNER``, stops the
  build with a message saying where to fix it.

  Pages can name the repository through the MyST substitution ``{{ repository }}``: a link to the
  repository when the address is set, plain words ("the book's source repository") otherwise, so no
  page ever links to a placeholder.

* **One search box.** pydata-sphinx-theme 0.17 (under sphinx-book-theme 1.3) puts a search field into
  a top navigation bar unless ``navbar_persistent`` is set, although sphinx-book-theme already has one
  at the top of the primary sidebar (and a search button in the article header on narrow screens,
  where the sidebar is folded away): two search boxes on every page.  An empty ``navbar_persistent``
  leaves the bar empty, and the theme then omits it.
"""
from __future__ import annotations

import os
import re
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

#: The environment variable that overrides ``repository: url:`` in ``_config.yml``.
ENV_VAR = "DPTUTOR_REPOSITORY_URL"

_URL = re.compile(r"^https://[A-Za-z0-9.-]+(?::[0-9]+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/?$")

#: What ``{{ repository }}`` says when no address is set.
NO_REPOSITORY = "the book's source repository"


def repository_url(configured: Any, environ: dict[str, str] | None = None) -> str:
    """The repository's address: ``$DPTUTOR_REPOSITORY_URL`` if set and non-empty, else
    ``configured`` (``repository: url:``); ``""`` when neither is set.

    Raises :class:`sphinx.errors.ConfigError` for an address that is not
    ``https://<host>/<owner>/<repository>`` or that still holds the placeholder ``OWNER``.
    """
    environ = os.environ if environ is None else environ
    from_env = str(environ.get(ENV_VAR, "") or "").strip()
    if from_env:
        url, where = from_env, f"the environment variable {ENV_VAR}"
    else:
        if configured is None:
            configured = ""
        if not isinstance(configured, str):
            raise ConfigError(f"_config.yml: repository: url must be a string, not {type(configured).__name__}")
        url, where = configured.strip(), "_config.yml, repository: url"
    if not url:
        return ""
    if not _URL.match(url):
        raise ConfigError(
            f"{where} is {url!r}: expected the repository's public address, https://<host>/<owner>/<repository> "
            "(e.g. https://github.com/someone/dptutor), or leave it empty for a site without a repository button"
        )
    if "OWNER" in url.split("/")[3:]:
        raise ConfigError(f"{where} still holds the placeholder OWNER ({url}): put in the repository's real address")
    return url.rstrip("/")


def _configure(app: Sphinx, config: Config) -> None:
    options = dict(config.html_theme_options or {})
    url = repository_url(options.get("repository_url", ""))
    options["repository_url"] = url
    options["use_repository_button"] = bool(url)
    # One search box: sphinx-book-theme's own (sidebar, or the header button on narrow screens).
    options.setdefault("navbar_persistent", [])
    config.html_theme_options = options
    substitutions = dict(getattr(config, "myst_substitutions", None) or {})
    substitutions.setdefault("repository", f"[the book's repository]({url})" if url else NO_REPOSITORY)
    config.myst_substitutions = substitutions


def setup(app: Sphinx) -> dict[str, Any]:
    # Before the themes read their options (builder-inited) and before MyST reads its substitutions.
    app.connect("config-inited", _configure, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
