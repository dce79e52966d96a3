"""Reading time and prerequisites of each chapter, computed when the book builds.

One formula for the whole book (:func:`estimate`), from what a chapter's source holds:

- prose words (Markdown outside code cells and display math, exercises and solutions included) read at
  :data:`WORDS_PER_MINUTE`;
- display equations, each :data:`MINUTES_PER_EQUATION` (a derivation is read slower than prose);
- code cells, each :data:`MINUTES_PER_CELL` (read the code, look at what it prints);
- exercises: a reader works :data:`EXERCISES_WORKED` of them, :data:`MINUTES_PER_EXERCISE` each.

The chapters' prerequisites and the reading paths live in ``book/_data/reading.yml``. The extension puts
a line under each chapter's title ("Prerequisites: … · Reading time: about … min") and renders the
``reading-paths`` directive (the intro's table of paths with their times).

Run as a script, it prints the table for every chapter of ``_toc.yml`` (``python book/_ext/reading_time.py``)
or for the files given (``python book/_ext/reading_time.py book/selection.md``).
"""
from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # the extension needs docutils/Sphinx; the word counter (``main``) does not
    from docutils import nodes as _nodes
    from docutils.parsers.rst import Directive as _DirectiveBase

    class reading_paths_node(_nodes.General, _nodes.Element):  # noqa: N801 (docutils' node naming)
        """Where the ``reading-paths`` directive stands until the document is resolved."""
except ImportError:  # pragma: no cover
    _DirectiveBase = object
    reading_paths_node = None


WORDS_PER_MINUTE = 130
MINUTES_PER_EQUATION = 0.5
MINUTES_PER_CELL = 0.75
EXERCISES_WORKED = 2
MINUTES_PER_EXERCISE = 10
#: The most prose words a chapter may have (exercises and solutions included).
MAX_PROSE_WORDS = 5000

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "book" / "_data" / "reading.yml"

_FENCE = re.compile(r"^(`{3,}|~{3,}|:{3,})\s*(\{[^}]*\})?(.*)$")
_INLINE_MATH = re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$")
_ROLE = re.compile(r"\{[a-zA-Z:-]+\}`([^`]*)`")
_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F\u0370-\u03FF][\w'\u2019\u00C0-\u024F\u0370-\u03FF.,-]*")


@dataclass(frozen=True)
class Counts:
    """What a chapter's source holds, as the reading-time formula counts it."""

    prose_words: int
    equations: int
    code_cells: int
    exercises: int

    @property
    def minutes(self) -> int:
        """The estimated reading time in minutes (rounded up to 5 minutes)."""
        m = (self.prose_words / WORDS_PER_MINUTE + self.equations * MINUTES_PER_EQUATION
             + self.code_cells * MINUTES_PER_CELL + min(self.exercises, EXERCISES_WORKED) * MINUTES_PER_EXERCISE)
        return int(5 * math.ceil(m / 5))


def _strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4:]
    return text


def _role_text(match: re.Match[str]) -> str:
    """The words a role shows: ``{ref}`the text <label>``` -> the text; a bare target counts as one word."""
    inner = match.group(1)
    if "<" in inner and inner.rstrip().endswith(">"):
        return inner[: inner.rfind("<")]
    return "ref"


def count(text: str) -> Counts:
    """Count a MyST notebook's prose words, display equations, code cells and exercises."""
    lines = _strip_front_matter(text).splitlines()
    prose: list[str] = []
    equations = code_cells = exercises = 0
    skip_until: str | None = None  # closing fence of a block whose body is not prose
    in_dollars = False
    for line in lines:
        stripped = line.strip()
        if skip_until is not None:
            if stripped == skip_until:
                skip_until = None
            continue
        if in_dollars:
            if stripped.startswith("$$") or stripped.endswith("$$"):
                in_dollars = False
            continue
        if stripped.startswith("$$"):
            equations += 1
            if not (len(stripped) > 2 and "$$" in stripped[2:]):
                in_dollars = True
            continue
        fence = _FENCE.match(stripped)
        if fence and fence.group(2):
            name = fence.group(2)
            if name in ("{code-cell}", "{math}", "{glue:figure}", "{figure}", "{image}", "{raw}"):
                code_cells += name == "{code-cell}"
                equations += name == "{math}"
                if name in ("{code-cell}", "{math}", "{raw}"):
                    skip_until = fence.group(1)
                continue
            if name in ("{exercise}", "{exercise-start}"):
                exercises += 1
            title = fence.group(3).strip()
            if title:
                prose.append(title)
            continue
        if fence or stripped.startswith(":") and re.match(r"^:[a-z-]+:", stripped):
            continue  # a closing fence, or a directive option such as :label:
        if stripped.startswith("%") or stripped.startswith("(") and stripped.endswith(")="):
            continue  # a MyST comment or a target label
        if stripped.startswith("<!--"):
            continue
        prose.append(line)
    body = "\n".join(prose)
    body = _ROLE.sub(_role_text, body)
    body = _INLINE_MATH.sub(" x ", body)
    body = re.sub(r"\]\([^)]*\)", "]", body)  # link targets
    body = re.sub(r"<[^>\n]+>", " ", body)     # HTML tags
    words = len(_WORD.findall(body))
    return Counts(words, equations, code_cells, exercises)


def toc_chapters(root: Path = ROOT) -> list[str]:
    """The book's documents in reading order, as named in ``_toc.yml`` (without suffix)."""
    names: list[str] = []
    for line in (root / "_toc.yml").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\s*(?:-\s*)?(?:file|root):\s*(\S+)", line)
        if m:
            names.append(m.group(1))
    return names


def load_reading_data(path: Path = DATA) -> dict[str, Any]:
    """The prerequisites of each chapter and the reading paths, checked.

    ``prerequisites`` maps a document (``book/selection``) to the documents it builds on; ``paths``
    lists the reading paths, each with a ``title``, a ``summary`` and its ``chapters`` in order.
    """
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or set(data) != {"prerequisites", "paths"}:
        raise ValueError(f"{path}: expected the two keys 'prerequisites' and 'paths'")
    prereq = data["prerequisites"]
    if not isinstance(prereq, dict) or not all(isinstance(v, list) for v in prereq.values()):
        raise ValueError(f"{path}: 'prerequisites' must map each chapter to a list of chapters")
    for p in data["paths"]:
        if not isinstance(p, dict) or set(p) != {"name", "title", "summary", "chapters"}:
            raise ValueError(f"{path}: each path needs exactly name, title, summary and chapters")
    return data


def chapter_counts(docname: str, root: Path = ROOT) -> Counts:
    """The counts of one document of the book (``book/selection``)."""
    return count((root / f"{docname}.md").read_text(encoding="utf-8"))


def path_minutes(chapters: list[str], root: Path = ROOT) -> int:
    """The estimated time of a reading path: the sum of its chapters' reading times."""
    return sum(chapter_counts(doc, root).minutes for doc in chapters)


def _hours(minutes: int) -> str:
    h, m = divmod(minutes, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def _chapter_link(app: Any, fromdoc: str, target: str) -> Any:
    """A reference node to ``target`` showing "Chapter N (Title)", or the title alone if unnumbered."""
    from docutils import nodes

    env = app.builder.env
    if target not in env.titles:
        from sphinx.errors import ExtensionError

        raise ExtensionError(f"book/_data/reading.yml names {target!r}, which is not a page of the book")
    title = env.titles[target].astext()
    number = env.toc_secnumbers.get(target, {}).get("")
    label = f"{'.'.join(map(str, number))}. {title}" if number else title
    ref = nodes.reference("", label, internal=True, refuri=app.builder.get_relative_uri(fromdoc, target))
    return ref


class ReadingPaths(_DirectiveBase):  # type: ignore[misc, valid-type]
    """``reading-paths``: a placeholder that :func:`_resolve` turns into the list of reading paths."""

    has_content = False

    def run(self) -> list[Any]:
        return [reading_paths_node()]


def _meta_paragraph(app: Any, docname: str, prereq: list[str]) -> Any:
    from docutils import nodes

    para = nodes.paragraph(classes=["dptutor-chapter-meta"])
    para += nodes.strong("", "Prerequisites: ")
    if prereq:
        for i, target in enumerate(prereq):
            if i:
                para += nodes.Text("; ")
            para += _chapter_link(app, docname, target)
    else:
        para += nodes.Text("none beyond Python, numpy and some calculus")
    minutes = chapter_counts(docname, Path(app.srcdir)).minutes
    para += nodes.Text(" \u00b7 ")
    para += nodes.strong("", "Reading time: ")
    para += nodes.Text(f"about {_hours(minutes)} (reading, running the cells, two exercises)")
    return para


def _paths_list(app: Any, docname: str, data: dict[str, Any]) -> Any:
    from docutils import nodes

    out = nodes.bullet_list()
    for p in data["paths"]:
        item = nodes.list_item()
        para = nodes.paragraph()
        minutes = path_minutes(p["chapters"], Path(app.srcdir))
        para += nodes.strong("", f"{p['title']} ({_hours(minutes)}). ")
        para += nodes.Text(p["summary"].strip() + " Chapters: ")
        for i, target in enumerate(p["chapters"]):
            if i:
                para += nodes.Text(", ")
            para += _chapter_link(app, docname, target)
        para += nodes.Text(".")
        item += para
        out += item
    return out


def _resolve(app: Any, doctree: Any, docname: str) -> None:
    """Put the prerequisites and reading time under a chapter's title, and render the reading paths."""
    from docutils import nodes

    if app.builder.format != "html":
        return
    data = app.dptutor_reading
    for node in list(doctree.findall(reading_paths_node)):
        node.replace_self(_paths_list(app, docname, data))
    if docname not in data["prerequisites"]:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children or not isinstance(section[0], nodes.title):
        return
    section.insert(1, _meta_paragraph(app, docname, data["prerequisites"][docname]))


def _load(app: Any) -> None:
    """Read ``reading.yml`` once per build, at its start: a malformed file stops the build before any page."""
    app.dptutor_reading = load_reading_data(Path(app.srcdir) / "book" / "_data" / "reading.yml")


def setup(app: Any) -> dict[str, Any]:
    app.add_node(reading_paths_node, html=(_visit_skip, None))
    app.add_directive("reading-paths", ReadingPaths)
    app.connect("builder-inited", _load)
    app.connect("doctree-resolved", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _visit_skip(self: Any, node: Any) -> None:
    from docutils import nodes

    raise nodes.SkipNode


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or [Path(f"{n}.md") for n in toc_chapters()]
    total = 0
    print(f"{'chapter':42s} {'words':>6s} {'eqs':>4s} {'cells':>5s} {'ex':>3s} {'min':>4s}")
    for path in files:
        c = count((path if path.exists() else ROOT / path).read_text(encoding="utf-8"))
        total += c.minutes
        flag = "  OVER" if c.prose_words > MAX_PROSE_WORDS else ""
        print(f"{str(path):42s} {c.prose_words:6d} "
              f"{c.equations:4d} {c.code_cells:5d} {c.exercises:3d} {c.minutes:4d}{flag}")
    print(f"total: {total} min ({total / 60:.1f} h)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
