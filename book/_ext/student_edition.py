"""The student edition of the book: the same site with every exercise's solution left out.

Two parts:

* a Sphinx extension (loaded by ``_config.yml``), inactive unless ``hide_solutions`` is true.
  sphinx-exercise's ``hide_solutions`` drops plain ``{solution}`` directives, but for the *gated*
  form this book uses (``{solution-start}`` ... ``{solution-end}``, needed for code cells inside a
  solution) sphinx-exercise 1.2.1 drops only the start marker: the solution's content stays on the
  page and the orphaned end marker crashes the HTML writer ("departing unknown node type:
  solution_end_node", executablebooks/sphinx-exercise#89).  With ``hide_solutions`` on, this
  extension replaces each ``{solution-start}`` by a marker and removes everything from the marker
  through its ``{solution-end}``.  It also strips the solution blocks from the page sources and
  executed notebooks copied to ``_sources/`` (the download button), so no solution leaves the build.

* a build script, ``python book/_ext/student_edition.py`` (what ``make student`` runs): builds the
  book with ``hide_solutions = True`` into ``_build/student``, with warnings as errors and
  nit-picky references, reusing the Jupyter cache of ``make book`` (``_build/.jupyter_cache``), so
  no notebook is executed twice.  Jupyter Book 1's command line has no option to override one
  Sphinx setting, so the script calls the same function as ``jupyter-book build`` does
  (``jupyter_book.sphinx.build_sphinx``) with two overrides on top of ``_config.yml``.

Three editions come from the same sources, chosen by the Sphinx setting ``dptutor_edition``:

* ``full`` (``make book``): every chapter with its exercises' solutions in dropdowns; the assignment
  pages are the blank student notebooks.
* ``student`` (``make student``, ``--edition student``): no solution anywhere.
* ``solutions`` (``make solutions``, ``--edition solutions``): the teaching assistants' edition, the full
  edition in which each assignment page is rendered from its instructor notebook
  (``book/assignments/instructor/<name>.md``, with the reference solutions), under the same page
  name, so every link and label stays valid.  An announcement on every page says what it is.  It is
  built into ``_build/solutions/html``, not beside the other editions: myst-nb keeps the executed
  notebooks in the ``jupyter_execute`` folder beside ``<output>``, and the downloads of the full and the student edition
  come from ``_build/jupyter_execute``, which must never hold an instructor notebook.

**Edition-specific text.** Each build sets the Sphinx tag ``<edition>_edition`` (``full_edition``,
``student_edition`` or ``solutions_edition``), so Sphinx's own ``only`` directive keeps or drops a
passage, e.g. in MyST::

    :::{only} not student_edition
    Solutions are folded: try the exercise before you click.
    :::

Blocks whose condition is false are also removed from the page sources copied to ``_sources/``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from dptutor.course.release import with_banner

logger = logging.getLogger(__name__)

# An opening fence of a solution directive, e.g. ```{solution-start} ex-1 or :::{solution} ex-1.
_SOLUTION_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>solution-start|solution)\}")
_SOLUTION_END = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-end\}")
#: What a removed solution block becomes in the student edition's page sources.
OMITTED = "(The solution is not part of the student edition.)"

#: The editions (``dptutor_edition``), each also a Sphinx tag ``<edition>_edition``.
EDITIONS = ("full", "student", "solutions")
#: The assignment pages and the instructor notebooks that the solutions edition renders in their place.
ASSIGNMENTS_DIR = "book/assignments"
INSTRUCTOR_DIR = "book/assignments/instructor"
#: The announcement at the top of every page of the solutions edition.
SOLUTIONS_BANNER = ("Teaching assistants' edition: the assignment pages show the reference solutions. "
                    "Do not publish it to students.")

_ONLY_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{only\}\s*(?P<expr>.*?)\s*$")


class _SolutionStripper:
    """Drops solution blocks from lines fed to it, remembering across calls where it is.

    A gated block runs from its ``{solution-start}`` line through the fence closing its
    ``{solution-end}`` directive; a plain ``{solution}`` block through the line that closes its
    opening fence.  Each block becomes the one line :data:`OMITTED`.  The state survives between
    calls, so a notebook can be fed cell by cell (a gated solution spans several cells).
    """

    def __init__(self) -> None:
        self.state = "out"  # "out", "in" (gated body), "closing" (after solution-end), "plain"
        self.fence = ""

    def feed(self, lines: list[str]) -> list[str]:
        kept: list[str] = []
        for line in lines:
            if self.state == "out":
                match = _SOLUTION_OPEN.match(line)
                if not match:
                    kept.append(line)
                    continue
                kept.append(OMITTED + ("\n" if line.endswith("\n") else ""))
                self.fence = match["fence"]
                self.state = "in" if match["name"] == "solution-start" else "plain"
                if self.state == "plain":
                    continue
                # The gated start directive's own options and closing fence are dropped as "in".
            elif self.state == "in":
                end = _SOLUTION_END.match(line)
                if end:
                    self.state, self.fence = "closing", end["fence"]
            elif line.strip() == self.fence:  # "closing" or "plain": the fence ends the block
                self.state = "out"
        return kept

    @property
    def inside(self) -> bool:
        return self.state != "out"


def strip_solutions(text: str) -> str:
    """Remove every solution block from a MyST Markdown source (see :class:`_SolutionStripper`)."""
    stripper = _SolutionStripper()
    out = stripper.feed(text.splitlines(keepends=True))
    if stripper.inside:
        raise ValueError("a solution block is never closed")
    return "".join(out)


def strip_solutions_notebook(nb: dict) -> dict:
    """Remove the solution blocks from a notebook (nbformat 4 JSON): their text and code cells."""
    stripper = _SolutionStripper()
    cells = []
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        lines = source.splitlines(keepends=True) if isinstance(source, str) else list(source)
        if cell.get("cell_type") == "markdown":
            kept = stripper.feed(lines)
            if kept:
                cells.append({**cell, "source": kept})
        elif not stripper.inside:
            cells.append(cell)
    return {**nb, "cells": cells}


#: The command that writes the student edition; the banner of each notebook it rewrites names it.
STUDENT_COMMAND = "make student"


def with_student_banner(content: str | dict, source: str) -> str | dict:
    """A page source (MyST text) or executed notebook (nbformat 4 JSON) of the student edition with the banner
    of generated notebooks on top, naming ``source`` and :data:`STUDENT_COMMAND`."""
    if isinstance(content, str):
        return with_banner(content, source, STUDENT_COMMAND)
    cells = content.get("cells", [])
    banner = {"cell_type": "markdown", "metadata": {}, "source": with_banner("", source, STUDENT_COMMAND)}
    if any("id" in cell for cell in cells):     # nbformat 4.5: every cell has an id
        banner["id"] = "generated-banner"
    return {**content, "cells": [banner, *cells]}


def strip_only_blocks(text: str, keep: Callable[[str], bool]) -> str:
    """Remove each ``{only} EXPR`` block (fenced with backticks or colons) for which ``keep(EXPR)`` is
    false: its opening line through the line that repeats its fence.  Blocks that are kept stay as
    they are (Sphinx evaluates them on the page; this is for the page sources offered for download)."""
    out: list[str] = []
    fence = ""
    for line in text.splitlines(keepends=True):
        if fence:
            if line.strip() == fence:
                fence = ""
            continue
        match = _ONLY_OPEN.match(line)
        if match and not keep(match["expr"]):
            fence = match["fence"]
            continue
        out.append(line)
    if fence:
        raise ValueError("an {only} block is never closed")
    return "".join(out)


def edition(config: Any) -> str:
    """The edition a build makes: ``dptutor_edition``, or ``student`` when ``hide_solutions`` is set."""
    name = getattr(config, "dptutor_edition", "full") or "full"
    if name not in EDITIONS:
        raise ValueError(f"dptutor_edition must be one of {', '.join(EDITIONS)}, not {name!r}")
    if getattr(config, "hide_solutions", False):
        if name == "solutions":
            raise ValueError("dptutor_edition 'solutions' shows the solutions: hide_solutions must be false")
        return "student"
    return name


def instructor_folder(srcdir: str | Path, course_folder: str | Path | None = None) -> Path:
    """Where the solutions edition reads the instructor notebooks: a course's ``private/instructor``
    (``dptutor_instructor_dir``, set by ``--course FOLDER``), else the book's ``book/assignments/instructor``."""
    return Path(course_folder) if course_folder else Path(srcdir) / INSTRUCTOR_DIR


def instructor_source(app: Sphinx, docname: str) -> Path | None:
    """The instructor notebook rendered in place of ``docname`` in the solutions edition, if any."""
    folder, _, stem = docname.rpartition("/")
    if folder != ASSIGNMENTS_DIR or not stem:
        return None
    path = instructor_folder(app.srcdir, app.config.dptutor_instructor_dir) / f"{stem}.md"
    return path if path.is_file() else None


class hidden_solution(nodes.Element):
    """Placeholder for a ``{solution-start}`` in the student edition; removed before writing."""


def _solution_start_directive() -> type:
    from sphinx_exercise.directive import SolutionStartDirective

    class StudentSolutionStart(SolutionStartDirective):
        """``{solution-start}`` that leaves a :class:`hidden_solution` marker when solutions are hidden."""

        def run(self) -> list[nodes.Node]:
            result = super().run()  # records the gated-directive bookkeeping in every case
            if self.env.app.config.hide_solutions:
                return [hidden_solution()]
            return result

    return StudentSolutionStart


class RemoveHiddenSolutions(SphinxTransform):
    """Delete each :class:`hidden_solution` marker and its siblings through the next solution-end.

    Runs before sphinx-exercise merges gated directives (priority 10), on the same sibling list that
    sphinx-exercise itself uses to collect a gated solution's content.
    """

    default_priority = 9

    def apply(self, **kwargs: Any) -> None:
        from sphinx_exercise.nodes import solution_end_node

        for marker in list(self.document.findall(hidden_solution)):
            parent = marker.parent
            start = parent.index(marker)
            end = next(
                (i for i in range(start + 1, len(parent)) if isinstance(parent[i], solution_end_node)),
                None,
            )
            if end is None:  # sphinx-exercise reports the unbalanced directives itself
                parent.remove(marker)
                continue
            for child in list(parent.children[start : end + 1]):
                parent.remove(child)


def _set_edition(app: Sphinx, config: Any) -> None:
    """Check the edition, set its tag, and give the solutions edition its announcement."""
    try:
        name = edition(config)
    except ValueError as exc:
        from sphinx.errors import ConfigError

        raise ConfigError(str(exc)) from None
    app.tags.add(f"{name}_edition")
    if name == "solutions":
        options = dict(config.html_theme_options or {})
        course = config.dptutor_course_name
        options["announcement"] = SOLUTIONS_BANNER + (f" Answers of course {course}." if course else "")
        config.html_theme_options = options


def _render_instructor_notebooks(app: Sphinx, docname: str, source: list[str]) -> None:
    """In the solutions edition, read each assignment page from its instructor notebook."""
    if edition(app.config) != "solutions":
        return
    path = instructor_source(app, docname)
    if path is not None:
        source[0] = path.read_text(encoding="utf-8")


def _strip_copied_sources(app: Sphinx, exception: Exception | None) -> None:
    """Make the sources copied to ``_sources/`` (the download button) match the edition: no solution
    blocks in the student edition, no ``{only}`` block meant for another edition, and the instructor
    notebooks' sources behind the assignment pages of the solutions edition."""
    if exception is not None or app.builder.format != "html":
        return
    sources = Path(app.outdir) / "_sources"
    if not sources.is_dir():
        return
    name = edition(app.config)
    if name == "solutions":
        suffix = app.config.html_sourcelink_suffix or ""
        for docname in app.env.found_docs:
            path = instructor_source(app, docname)
            target = sources / f"{docname}.md"
            if suffix and not target.name.endswith(suffix):
                target = target.with_name(target.name + suffix)
            if path is not None and target.is_file():
                target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    keep = app.tags.eval_condition
    for path in sources.rglob("*"):
        if not path.is_file() or path.suffix == ".whl":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        solutions = name == "student" and "{solution" in text
        only = "{only}" in text
        if not (solutions or only):
            continue
        origin = str(path.relative_to(sources).with_suffix(".md"))     # the chapter it comes from
        if path.suffix == ".ipynb":  # the executed notebook offered for download
            nb = json.loads(text)
            if solutions:
                nb = with_student_banner(strip_solutions_notebook(nb), origin)
            if only:
                nb = _strip_only_notebook(nb, keep)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        else:
            if solutions:
                text = with_student_banner(strip_solutions(text), origin)
            if only:
                text = strip_only_blocks(text, keep)
            path.write_text(text, encoding="utf-8")


def _strip_only_notebook(nb: dict, keep: Callable[[str], bool]) -> dict:
    cells = []
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        text = source if isinstance(source, str) else "".join(source)
        if cell.get("cell_type") == "markdown" and "{only}" in text:
            text = strip_only_blocks(text, keep)
            if not text.strip():
                continue
            cell = {**cell, "source": text.splitlines(keepends=True)}
        cells.append(cell)
    return {**nb, "cells": cells}


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx_exercise")
    app.add_config_value("dptutor_edition", "full", "env", [str])
    app.add_config_value("dptutor_instructor_dir", "", "env", [str])
    app.add_config_value("dptutor_course_name", "", "env", [str])
    app.connect("config-inited", _set_edition)
    app.connect("source-read", _render_instructor_notebooks)
    app.add_node(hidden_solution)
    app.add_directive("solution-start", _solution_start_directive(), override=True)
    app.add_transform(RemoveHiddenSolutions)
    app.connect("build-finished", _strip_copied_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# ---------------------------------------------------------------------------------------------
# build script
# ---------------------------------------------------------------------------------------------


def course_instructor_dir(course: Path) -> tuple[Path, str]:
    """A course folder's instructor notebooks and its name (ValueError if ``course`` is no course folder
    made by ``python -m dptutor course new``)."""
    import tomllib

    key = course / "private" / "answer-key.toml"
    folder = course / "private" / "instructor"
    try:
        name = tomllib.loads(key.read_text(encoding="utf-8")).get("course")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        name = None
    if not isinstance(name, str) or not folder.is_dir():
        raise ValueError(f"--course {course}: not a course folder (no {key} or no {folder}); make one with "
                         "`python -m dptutor course new`")
    return folder.resolve(), name


def build_overrides(source: Path, cache: Path, edition: str = "student", *, strict: bool = True,
                    course: Path | None = None) -> dict[str, Any]:
    """The Sphinx settings that turn ``_config.yml``'s full edition into ``edition`` (the solutions
    edition of the course folder ``course``, when given)."""
    if edition not in ("student", "solutions"):
        raise ValueError(f"edition must be 'student' or 'solutions', not {edition!r}")
    if course is not None and edition != "solutions":
        raise ValueError("course: only the solutions edition shows a course's answers")
    overrides: dict[str, Any] = {
        "external_toc_path": (source / "_toc.yml").as_posix(),
        "latex_individualpages": False,
        "hide_solutions": edition == "student",
        "dptutor_edition": edition,
        "nb_execution_cache_path": str(cache),
    }
    if strict:
        overrides["nitpicky"] = True
    if course is not None:
        folder, name = course_instructor_dir(Path(course))
        overrides.update(dptutor_instructor_dir=str(folder), dptutor_course_name=name)
    return overrides


def build(source: Path, out: Path, cache: Path, *, strict: bool = True, edition: str = "student",
          course: Path | None = None) -> int:
    """Build the student (or the solutions) edition of the book in ``source`` into ``out``; return 0
    on success.

    ``cache`` is the Jupyter cache to execute notebooks with (``make book`` keeps its cache in
    ``_build/.jupyter_cache``).  Sphinx's doctrees go to ``<out>.doctrees`` next to ``out``, so an
    incremental rebuild only re-reads changed pages and never mixes with the full edition's.
    ``strict`` turns warnings into errors and enables nit-picky references, like ``make book``.
    The solutions edition executes the instructor notebooks (their code differs from the
    student notebooks'), once: the results go into the same cache.  With ``course`` (a course folder),
    it shows that course's instructor notebooks (its own answers) instead of the book's.
    """
    from jupyter_book.sphinx import build_sphinx

    source, out, cache = source.resolve(), out.resolve(), cache.resolve()
    if edition == "solutions":
        # myst-nb writes the executed notebooks to the jupyter_execute folder beside <out>, and each edition offers the
        # ones it finds there for download: the instructor notebooks must not land where the full or the
        # student edition would pick them up.
        shared = [name for name in ("html", "student") if (out.parent / name).is_dir()]
        if shared:
            print(f"The solutions edition needs a build folder of its own: {out.parent} also holds "
                  f"{', '.join(shared)}, whose downloads would offer the instructor notebooks "
                  f"(use e.g. --out {out.parent / 'solutions' / 'html'})", file=sys.stderr)
            return 2
    result = build_sphinx(
        source,
        out,
        noconfig=True,
        path_config=str(source / "_config.yml"),
        confoverrides=build_overrides(source, cache, edition, strict=strict, course=course),
        doctreedir=out.with_name(f".{out.name}.doctrees"),
        builder="html",
        warningiserror=strict,
        keep_going=strict,
    )
    if isinstance(result, Exception):
        print(f"The {edition} edition did not build: {result!r}", file=sys.stderr)
        return 1
    return int(result or 0)


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(
        description="Build the student edition (no solutions) or the teaching assistants' edition (the "
                    "assignments' solutions too) of the book.")
    parser.add_argument("--edition", choices=("student", "solutions"), default="student",
                        help="student (default, `make student`) or solutions (`make solutions`)")
    parser.add_argument("--source", type=Path, default=root, help="the book's folder (with _config.yml)")
    parser.add_argument("--out", type=Path, default=None,
                        help="HTML output folder (default: _build/student, or _build/solutions/html: the solutions "
                             "edition keeps its executed notebooks in a folder of its own)")
    parser.add_argument("--cache", type=Path, default=root / "_build" / ".jupyter_cache",
                        help="Jupyter cache shared with `make book`")
    parser.add_argument("--course", type=Path, default=None, metavar="FOLDER",
                        help="solutions edition only: show the instructor notebooks (answers) of this course folder "
                             "(made by `python -m dptutor course new`) instead of the book's")
    parser.add_argument("--no-strict", dest="strict", action="store_false",
                        help="do not fail on warnings (default: -W -n like `make book`)")
    args = parser.parse_args(argv)
    default = root / "_build" / "student" if args.edition == "student" else root / "_build" / "solutions" / "html"
    out = args.out if args.out is not None else default
    if args.course is not None:
        try:
            build_overrides(args.source, args.cache, args.edition, course=args.course)
        except ValueError as exc:
            parser.error(str(exc))
    status = build(args.source, out, args.cache, strict=args.strict, edition=args.edition, course=args.course)
    if status == 0:
        label = "Student edition" if args.edition == "student" else "Teaching assistants' edition"
        print(f"{label}: {out.resolve() / 'index.html'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
