"""One book, one voice: the editorial guards of issue 21.

Static checks read the chapters' sources (fast); the rest read the pages of the session's book build
(conftest's ``book_build``). Each check is a function that returns a list of precise problems, and each has a
test that feeds it a deliberately broken sample, so that none of them can pass vacuously.

- The notation appendix (book/notation.md): every entry names the place of its definition, that place exists,
  and in reading order (_toc.yml) the first use of each symbol and term comes at or after its definition or
  sits in a paragraph that links to it.
- Glue bookkeeping: no visible code cell calls ``glue(``; the calls go in a ``remove-cell`` cell after it. A figure
  whose caption holds no glued value is one code cell with ``mystnb`` figure metadata (name, caption, alt text),
  not a glued figure.
- No internal label (``thm-prob-bayes``, ``fig-...``) in a code cell's source or in any rendered text.
- Every built page: no literal Markdown table, no ``$``-delimited math left as text, no ``{glue`` remnant.
"""
from __future__ import annotations

import ast
import html.parser
import re
import unicodedata
from dataclasses import dataclass

import pytest
import yaml

from helpers import ROOT, BookBuild, figure_cells, reading_order

BOOK = ROOT / "book"
NOTATION = BOOK / "notation.md"


# ---------------------------------------------------------------------------------------------
# Sources: reading order, cells, labels
# ---------------------------------------------------------------------------------------------

CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
TAGS = re.compile(r"^:tags:\s*\[([^\]]*)\]|^\s*tags:\s*\[([^\]]*)\]", re.M)


@dataclass(frozen=True)
class Cell:
    line: int               # 1-based line of the ```{code-cell} fence
    tags: frozenset[str]
    source: str             # without the cell's option block


def code_cells(text: str) -> list[Cell]:
    """The code cells of a MyST notebook, with their tags (``:tags: [...]`` or a ``---`` yaml block)."""
    cells = []
    for m in CODE_CELL.finditer(text):
        body = m.group(1)
        options = ""
        if body.startswith("---\n"):
            end = body.find("\n---\n", 4)
            options, body = body[:end + 5], body[end + 5:]
        else:
            lines = body.split("\n")
            taken = 0
            while taken < len(lines) and lines[taken].startswith(":"):
                taken += 1
            options, body = "\n".join(lines[:taken]), "\n".join(lines[taken:])
        tags = set()
        for t in TAGS.finditer(options):
            tags |= {x.strip().strip("'\"") for x in (t.group(1) or t.group(2)).split(",") if x.strip()}
        cells.append(Cell(text.count("\n", 0, m.start()) + 1, frozenset(tags), body))
    return cells


LABEL_DEF = re.compile(r"^\(([\w-]+)\)=\s*$|^\s*:(?:label|name):\s*([\w-]+)\s*$", re.M)


def definition_line(lines: list[str], index: int) -> int:
    """Where the definition that a label names begins (1-based): a directive's label belongs to the line that
    opens the directive (its title names the term), and a heading right above that counts too."""
    if lines[index].lstrip().startswith(":"):
        while index > 0 and not lines[index].startswith("```"):
            index -= 1
    above = index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above >= 0 and lines[above].startswith("#"):
        index = above
    return index + 1


def label_definitions(files: list[str]) -> dict[str, tuple[str, int]]:
    """Every target defined in the sources: label -> (chapter, 1-based line where its definition begins)."""
    found: dict[str, tuple[str, int]] = {}
    for name in files:
        text = (BOOK / f"{name}.md").read_text()
        lines = text.split("\n")
        for m in LABEL_DEF.finditer(text):
            line = text.count("\n", 0, m.start())
            found.setdefault(m.group(1) or m.group(2), (name, definition_line(lines, line)))
        for cell in figure_cells(text):         # a figure cell's name is a label too (mystnb metadata)
            found.setdefault(cell.name, (name, cell.line))
    return found


def chapters() -> list[str]:
    """The chapters in reading order whose text the checks read (the appendix itself and the bibliography
    are not read: the first only restates, the second has no prose)."""
    return [name for name in reading_order() if name not in ("notation", "bibliography")
            and (BOOK / f"{name}.md").is_file()]


# ---------------------------------------------------------------------------------------------
# The notation appendix
# ---------------------------------------------------------------------------------------------

DEFINED_IN = re.compile(r"\*Defined in\*\s*\{(prf:ref|ref|doc)\}`(?:[^`<]*<)?([\w/.-]+)>?`\s*\.?\s*$")


@dataclass(frozen=True)
class Entry:
    kind: str               # "symbol" or "term"
    head: str               # the entry's first line
    role: str               # prf:ref, ref or doc
    target: str
    line: int


def notation_entries(text: str) -> tuple[list[Entry], list[str]]:
    """The entries of the appendix and the problems of its format."""
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    lines = text.split("\n")
    entries, problems, section = [], [], None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = {"## Symbols": "symbol", "## Terms": "term"}.get(line.strip())
        elif section and line.strip() and not line.startswith(("#", ":", " ")) and i + 1 < len(lines) \
                and lines[i + 1].startswith(": "):
            body = [lines[i + 1][2:]]
            j = i + 2
            while j < len(lines) and lines[j].startswith("  ") and lines[j].strip():
                body.append(lines[j].strip())
                j += 1
            definition = " ".join(body)
            m = DEFINED_IN.search(definition)
            head = line.strip()
            if section == "symbol" and not re.fullmatch(r"\$[^$]+\$", head):
                problems.append(f"notation.md:{i + 1}: a symbol entry must be one math span: {head!r}")
            if not m:
                problems.append(f"notation.md:{i + 1}: {head!r} does not end with '*Defined in* {{ref}}`label`'")
            else:
                entries.append(Entry(section, head, m.group(1), m.group(2), i + 1))
            i = j
            continue
        i += 1
    return entries, problems


def target_problems(entries: list[Entry], labels: dict[str, tuple[str, int]], files: list[str]) -> list[str]:
    problems = []
    for e in entries:
        if e.role == "doc":
            if e.target.removeprefix("book/") not in files:
                problems.append(f"notation.md:{e.line}: {e.head}: no chapter {e.target!r}")
        elif e.target not in labels:
            problems.append(f"notation.md:{e.line}: {e.head}: no label {e.target!r} in the book")
    return problems


# --- where a symbol or term is used ------------------------------------------------------------

OBJECTIVES = re.compile(r"^```\{admonition\} Learning objectives.*?^```[ \t]*$", re.S | re.M)
DIRECTIVE_OPTION = re.compile(r"^:(label|name|class|tags|width|align|nowrap):.*$", re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)


def blank(text: str, pattern: re.Pattern) -> str:
    """Replace the matches of ``pattern`` by blank lines (line numbers are kept)."""
    return pattern.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def figure_text(cell: re.Match) -> str:
    """A code cell as a reader meets it: nothing, or, for a figure cell, its alt text and caption (on the
    cell's first lines; the cell's other lines become blank, so line numbers are kept)."""
    lines = cell.group(0).count("\n")
    figures = figure_cells(cell.group(0))
    if not figures:
        return "\n" * lines
    words = f"{figures[0].alt}\n{figures[0].caption.strip()}"
    return words + "\n" * (lines - words.count("\n"))


def reading_text(text: str) -> str:
    """A chapter's source as a reader meets it: no code cells (but the captions and alt texts of figure
    cells), comments, options, or learning objectives."""
    text = CODE_CELL.sub(figure_text, text)
    text = blank(text, COMMENT)
    text = blank(text, OBJECTIVES)
    text = re.sub(r"\A---\n.*?\n---\n", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return DIRECTIVE_OPTION.sub("", text)


MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$|\\begin\{(equation|align|gather)\*?\}(.+?)\\end\{\3\*?\}", re.S)


def math_spans(text: str) -> list[tuple[int, str]]:
    """(offset, LaTeX) of each math span of a chapter's reading text."""
    return [(m.start(), m.group(1) or m.group(2) or m.group(4)) for m in MATH.finditer(text)]


# A tiny LaTeX reader: a span becomes atoms (decoration, base, subscript).
OPAQUE = re.compile(r"\\(mathrm|text|operatorname|mathit|textrm|mathbf|mathsf|mathtt|tag|label)\s*\{([^{}]*)\}")
CALLIGRAPHIC = re.compile(r"\\(mathcal|mathbb|mathscr|mathfrak)\s*\{([^{}]*)\}")
TOKEN = re.compile(r"\\[A-Za-z]+|⟨[^⟩]*⟩|\\.|[A-Za-z]|[0-9]|\S")
DECORATIONS = {r"\hat", r"\widehat", r"\tilde", r"\widetilde", r"\bar", r"\overline", r"\check"}
NOT_SYMBOLS = {r"\left", r"\right", r"\big", r"\Big", r"\bigl", r"\bigr", r"\Bigl", r"\Bigr", r"\quad",
               r"\qquad", r"\,", r"\;", r"\!", r"\ ", r"\dfrac", r"\frac", r"\tfrac", r"\sqrt", r"\lVert",
               r"\rVert", r"\lvert", r"\rvert", r"\mid", r"\cdot", r"\dots", r"\ldots", r"\cdots", r"\le",
               r"\ge", r"\in", r"\tag", r"\label"}


@dataclass(frozen=True)
class Atom:
    decoration: str
    base: str
    sub: str | None


def _group(tokens: list[str], i: int) -> tuple[list[str], int]:
    """The tokens of the group starting at ``tokens[i]`` (a brace group or one token) and the next index."""
    if i >= len(tokens):
        return [], i
    if tokens[i] != "{":
        return [tokens[i]], i + 1
    depth, j = 0, i
    while j < len(tokens):
        depth += {"{": 1, "}": -1}.get(tokens[j], 0)
        if depth == 0:
            return tokens[i + 1:j], j + 1
        j += 1
    return tokens[i + 1:], len(tokens)


def atoms(latex: str) -> list[Atom]:
    """The symbols of a LaTeX span: letters and commands with their decoration and subscript.

    ``\\mathrm{Lap}`` is one opaque token (its letters are not symbols), ``\\mathcal{X}`` one symbol.
    """
    latex = OPAQUE.sub(lambda m: f"⟨{m.group(2).strip()}⟩", latex)
    latex = CALLIGRAPHIC.sub(lambda m: f"⟨{m.group(1)}:{m.group(2).strip()}⟩", latex)
    tokens = TOKEN.findall(latex)
    out, i = [], 0
    while i < len(tokens):
        tok, decoration = tokens[i], ""
        if tok in DECORATIONS:
            group, i = _group(tokens, i + 1)
            if not group:
                continue
            decoration, tok = tok.lstrip("\\").removeprefix("wide"), group[0]
            i -= 1
        i += 1
        if not (re.fullmatch(r"[A-Za-z]|\\[A-Za-z]+|⟨[a-z]+:[^⟩]*⟩", tok)) or tok in NOT_SYMBOLS:
            continue
        sub = None
        while i < len(tokens) and tokens[i] in ("'", "^"):      # primes: X' is the same symbol as X
            if tokens[i] == "^":
                group, i = _group(tokens, i + 1)
                if group not in ([r"\prime"], ["'"]):
                    continue
            else:
                i += 1
        if i < len(tokens) and tokens[i] == "_":
            group, i = _group(tokens, i + 1)
            sub = "".join(group)
        out.append(Atom(decoration, tok, sub))
    return out


def is_index(sub: str | None) -> bool:
    """A subscript of lowercase letters only (c_{dy}) is an index, not part of the symbol."""
    return sub is not None and re.fullmatch(r"[a-z]+", sub) is not None


def names_a_variable(sub: str) -> bool:
    """A subscript that is one capital letter, primed or marked (p_X, p_{X'}, p_{X^-}, p_Y), names a dataset or a
    random variable: it is part of the symbol (the FORMAT), never a value of an index such as c_{dy}'s."""
    return re.fullmatch(r"[A-Z](?:'|\\prime|\^[-+'])*", sub) is not None


def symbol_of(atom: Atom, entries: list[Atom]) -> Atom | None:
    """The entry that a use belongs to: the same base and decoration, the most specific subscript."""
    same = [e for e in entries if e.base == atom.base and e.decoration == atom.decoration]
    for e in same:                                  # a literal subscript: Delta_2, L_A, mu_G
        if e.sub is not None and not is_index(e.sub) and e.sub == atom.sub:
            return e
    if atom.sub is not None and not names_a_variable(atom.sub):
        for e in same:                              # an index: c_{dy} stands for c_{01}, c_{1y}, ...
            if is_index(e.sub):
                return e
    for e in same:                                  # the bare symbol, also with other subscripts
        if e.sub is None:
            return e
    return None


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"[\u2010-\u2015\u2212]", "-", text).replace("’", "'")


def term_names(head: str) -> list[str]:
    """A term and its aliases: "Kolmogorov–Smirnov test (KS test)" -> both."""
    m = re.fullmatch(r"(.*?)\s*\((.*)\)\s*", head)
    names = [m.group(1), *[a.strip() for a in re.split(r",\s*(?![^()]*\))", m.group(2))]] if m else [head]
    return [normalise(n) for n in names if n]


def term_pattern(names: list[str]) -> re.Pattern:
    alternatives = []
    for name in names:
        escaped = re.sub(r"(?:\\ )+", r"\\s+", re.escape(name))     # a term may break across lines
        if re.search(r"[A-Za-z]$", name):
            escaped += r"s?"            # plural
        alternatives.append(escaped)
    return re.compile(r"(?<![\w-])(?:" + "|".join(alternatives) + r")(?![\w-])", re.I)


PROSE_ONLY = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$|`[^`\n]*`|\{[\w:]+\}`[^`]*`", re.S)
# Math that is part of a term's name ("$\ell_2$ sensitivity", "$(\varepsilon, \delta)$-DP") is read as words.
MATH_WORDS = {r"$\ell_1$": "ℓ1", r"$\ell_2$": "ℓ2", r"$\varepsilon$": "ε", r"$\delta$": "δ",
              r"$(\varepsilon, \delta)$": "(ε, δ)", r"$\chi^2$": "χ²"}


def prose_text(text: str) -> str:
    """The words of a reading text: math, code and roles blanked (line numbers kept), names of terms kept."""
    for latex, word in MATH_WORDS.items():
        text = text.replace(latex, word)
    return normalise(PROSE_ONLY.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text))


@dataclass(frozen=True)
class Use:
    chapter: str
    line: int
    paragraph: str


def paragraph_at(text: str, line: int) -> str:
    """The paragraph (lines between blank lines) around a 1-based line."""
    lines = text.split("\n")
    start = end = line - 1
    while start > 0 and lines[start - 1].strip():
        start -= 1
    while end + 1 < len(lines) and lines[end + 1].strip():
        end += 1
    return "\n".join(lines[start:end + 1])


def first_uses(texts: dict[str, str], symbols: list[Atom], terms: dict[str, re.Pattern]) -> dict[object, Use]:
    """The first use, in reading order, of each symbol (in math) and term (in prose)."""
    found: dict[object, Use] = {}
    for chapter, raw in texts.items():
        text = reading_text(raw)
        for offset, latex in math_spans(text):
            for atom in atoms(latex):
                entry = symbol_of(atom, symbols)
                if entry is not None and entry not in found:
                    line = text.count("\n", 0, offset) + 1
                    found[entry] = Use(chapter, line, paragraph_at(text, line))
        prose = prose_text(text)
        for head, pattern in terms.items():
            if head in found:
                continue
            m = pattern.search(prose)
            if m:
                line = prose.count("\n", 0, m.start()) + 1
                found[head] = Use(chapter, line, paragraph_at(text, line))
    return found


def links_to(paragraph: str, target: str, chapter: str) -> bool:
    """Whether a paragraph links to a definition's label or to the chapter that holds it."""
    refs = re.findall(r"\{(?:prf:ref|ref|numref|doc)\}`(?:[^`<]*<)?([\w/.-]+)>?`", paragraph)
    return target in refs or chapter in refs or f"book/{chapter}" in refs


def order_problems(entries: list[Entry], texts: dict[str, str], labels: dict[str, tuple[str, int]]) -> list[str]:
    """Each entry whose first use precedes its definition without linking forward to it."""
    order = list(texts)
    symbols: dict[Atom, Entry] = {}
    terms: dict[str, re.Pattern] = {}
    for e in entries:
        if e.kind == "symbol":
            parsed = atoms(e.head.strip("$"))
            if len(parsed) != 1:
                continue
            symbols[parsed[0]] = e
        else:
            terms[e.head] = term_pattern(term_names(e.head))
    uses = first_uses(texts, list(symbols), terms)
    problems = []
    for key, use in uses.items():
        e = symbols[key] if isinstance(key, Atom) else next(x for x in entries if x.head == key)
        if e.role == "doc":
            chapter = e.target.removeprefix("book/")
            place = (chapter, 0)
            text = reading_text(texts.get(chapter, ""))
            if isinstance(key, Atom):       # the first use inside the chapter is its definition
                lines = [text.count("\n", 0, o) + 1 for o, latex in math_spans(text)
                         if any(symbol_of(a, list(symbols)) == key for a in atoms(latex))]
            else:
                prose = prose_text(text)
                lines = [prose.count("\n", 0, m.start()) + 1 for m in terms[key].finditer(prose)][:1]
            place = (chapter, lines[0] if lines else 0)
        else:
            place = labels.get(e.target)
        if place is None or place[0] not in order:
            continue
        defined = (order.index(place[0]), place[1])
        if (order.index(use.chapter), use.line) >= defined:
            continue
        if links_to(use.paragraph, e.target, place[0]):
            continue
        problems.append(f"{use.chapter}.md:{use.line}: {e.head} is used before its definition "
                        f"({place[0]}.md:{place[1]}, {e.role} {e.target}) and the paragraph does not link to it")
    return problems


def test_notation_entries_are_well_formed_and_resolve() -> None:
    # An entry may point into a chapter or into an assignment page (the student's, which the site shows).
    files = [p.stem for p in BOOK.glob("*.md")] + [f"assignments/{p.stem}" for p in (BOOK / "assignments").glob("*.md")]
    entries, problems = notation_entries(NOTATION.read_text())
    assert len(entries) >= 40, "the appendix lists every symbol and term of the book"
    heads = [e.head for e in entries]
    assert len(heads) == len(set(heads)), "an entry appears twice"
    problems += target_problems(entries, label_definitions(files), files)
    assert not problems, "\n".join(problems)


def test_symbols_and_terms_are_defined_before_use() -> None:
    entries, _ = notation_entries(NOTATION.read_text())
    texts = {name: (BOOK / f"{name}.md").read_text() for name in chapters()}
    problems = order_problems(entries, texts, label_definitions(list(texts)))
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


SAMPLE_NOTATION = """\
## Symbols

$\\hat L$
: The estimate. *Defined in* {prf:ref}`def-b`.

$c_{dy}$
: A count. *Defined in* {ref}`sec-b`.

$\\Delta$
: No target.

## Terms

Kolmogorov–Smirnov test (KS test)
: A test. *Defined in* {ref}`sec-b`.
"""


def test_order_check_catches_a_use_before_the_definition() -> None:
    entries, problems = notation_entries(SAMPLE_NOTATION)
    assert [e.head for e in entries] == ["$\\hat L$", "$c_{dy}$", "Kolmogorov–Smirnov test (KS test)"]
    assert problems == ["notation.md:9: '$\\\\Delta$' does not end with '*Defined in* {ref}`label`'"]
    a = "(sec-a)=\n# A\n\nFirst we compute $L$ and $c$, then $\\hat{L} = \\ln c_{01}$.\n\nA KS test follows.\n"
    b = "(sec-b)=\n# B\n\n```{prf:definition} Estimate\n:label: def-b\n\n$\\hat L$ from $c_{dy}$.\n```\n"
    labels = {"sec-a": ("a", 1), "sec-b": ("b", 1), "def-b": ("b", 4)}
    problems = order_problems(entries, {"a": a, "b": b}, labels)
    assert len(problems) == 3 and all(p.startswith("a.md:4") or p.startswith("a.md:6") for p in problems)
    assert any("$\\hat L$" in p for p in problems) and any("c_{dy}" in p for p in problems)
    # A forward link in the same paragraph is fine, and so is the same order the other way round.
    linked = a.replace("$.\n", "$ ({prf:ref}`def-b`, {ref}`sec-b`).\n").replace("follows.", "follows ({doc}`b`).")
    assert order_problems(entries, {"a": linked, "b": b}, labels) == []
    assert order_problems(entries, {"b": b, "a": a}, labels) == []
    # Bare L and a c with no index are other symbols than \hat L and c_{dy}; \mathrm{Lap} holds no L.
    assert [atom.base for atom in atoms(r"\mathrm{Lap}(\mu, b) + \mathcal{X}_1")] == [r"\mu", "b", "⟨mathcal:X⟩"]
    assert atoms(r"\hat{L}") == atoms(r"\hat L") == [Atom("hat", "L", None)]
    # A term broken across two lines is still a use of it.
    assert term_pattern(["group privacy"]).search("the sparse vector technique and group\n   privacy, the")
    assert atoms(r"X' = X^\prime_2") == [Atom("", "X", None), Atom("", "X", "2")]
    # An index stands for its values (c_{01}, c_{1y}), not for a dataset's or a variable's name: p_X and p_{X'}
    # are another symbol than p_d, the bare p's when the appendix lists one (and unlisted when it does not).
    symbols = [Atom("", "p", "d"), Atom("", "c", "dy")]
    assert [symbol_of(a, symbols) for a in atoms(r"p_0 + p_{1} + c_{01} + c_{1y}")] == [
        Atom("", "p", "d"), Atom("", "p", "d"), Atom("", "c", "dy"), Atom("", "c", "dy")]
    densities = [a for a in atoms(r"p_X(y) / p_{X'}(y) + p_{X^-} + p_Y") if a.base == "p"]
    assert len(densities) == 4 and [symbol_of(a, symbols) for a in densities] == [None] * 4
    with_bare = [*symbols, Atom("", "p", None)]
    assert {symbol_of(a, with_bare) for a in densities} == {Atom("", "p", None)}


# ---------------------------------------------------------------------------------------------
# Glue bookkeeping out of the reader's way
# ---------------------------------------------------------------------------------------------

HIDDEN = {"remove-cell", "remove_cell", "remove-input", "remove_input"}


def visible_glue(text: str) -> list[int]:
    """Lines of the code cells that a reader can see (or unfold) and that call glue(."""
    return [c.line for c in code_cells(text) if not (HIDDEN & c.tags) and re.search(r"\bglue\s*\(", c.source)]


def test_glue_check_catches_a_visible_glue_call() -> None:
    bad = "```{code-cell} ipython3\n:tags: [hide-input]\n\nx = 1\nglue('a', x)\n```\n"
    good = "```{code-cell} ipython3\nx = 1\n```\n\n```{code-cell} ipython3\n:tags: [remove-cell]\n\nglue('a', x)\n```\n"
    yaml_tags = "```{code-cell} ipython3\n---\ntags: [remove-cell]\n---\nglue('a', 1)\n```\n"
    assert visible_glue(bad) == [1] and visible_glue(good) == [] and visible_glue(yaml_tags) == []


@pytest.mark.parametrize("name", chapters())
def test_no_visible_code_cell_calls_glue(name: str) -> None:
    lines = visible_glue((BOOK / f"{name}.md").read_text())
    assert not lines, (f"{name}.md: the code cells at lines {lines} call glue(; move the calls into a cell "
                       "tagged remove-cell right after (CONTRIBUTING.md, 'Writing the book')")



#: How many code cells above its glue call a published variable may have been set.
GLUE_DISTANCE = 3


def bound_names(source: str) -> set[str]:
    """The names a code cell's source assigns (imports, functions and classes are not values to publish)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:         # an IPython magic: parse the Python lines
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def distant_glue(text: str, limit: int = GLUE_DISTANCE) -> list[str]:
    """Glue calls that publish a variable (``glue("key", name)``) set more than ``limit`` code cells above:
    the glue belongs in the ``remove-cell`` cell right after the cell that computes the value."""
    cells = code_cells(text)
    problems = []
    for i, cell in enumerate(cells):
        if not re.search(r"\bglue\s*\(", cell.source):
            continue
        for call in ast.walk(ast.parse(cell.source)):
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "glue" and len(call.args) > 1
                    and isinstance(call.args[1], ast.Name)) or call.args[1].id in bound_names(cell.source):
                continue
            name = call.args[1].id
            above = next((i - j for j in range(i - 1, -1, -1) if name in bound_names(cells[j].source)), 0)
            if above > limit:
                problems.append(f"line {cell.line}: glue of {name}, set {above} code cells above")
    return problems


def test_glue_distance_check_catches_a_value_published_far_away() -> None:
    cell = "```{{code-cell}} ipython3\n{}\n```\n\n"
    glue_cell = "```{code-cell} ipython3\n:tags: [remove-cell]\n\nglue('m', M, display=False)\n```\n"
    near = cell.format("M = 300") + glue_cell
    far = cell.format("M = 300") + "".join(cell.format(f"x{k} = {k}") for k in range(GLUE_DISTANCE)) + glue_cell
    assert distant_glue(near) == [] and distant_glue(cell.format("%time M = 1") + glue_cell) == []
    assert distant_glue(far) == [f"line {4 * (GLUE_DISTANCE + 1) + 1}: glue of M, set {GLUE_DISTANCE + 1} code cells above"]
    assert distant_glue(cell.format("import math") + "".join(cell.format("y = 1") for _ in range(5))
                        + glue_cell.replace("M", "math")) == []


@pytest.mark.parametrize("name", chapters())
def test_glue_calls_live_next_to_the_values_they_publish(name: str) -> None:
    problems = distant_glue((BOOK / f"{name}.md").read_text())
    assert not problems, f"{name}.md: {problems}; glue a value in the remove-cell cell right after the cell that sets it"


GLUE_FIGURE = re.compile(r"^```\{glue:figure\}\s*(\S+)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
GLUED_VALUE = re.compile(r"\{glue(?::text)?\}`")


def glue_figures_without_glued_value(text: str) -> list[str]:
    """The ``{glue:figure}`` directives whose caption holds no glued value (``{glue}``/``{glue:text}``): such a
    figure is the output of its own code cell, with ``mystnb: figure`` metadata, not a glued figure."""
    return [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(1)}" for m in GLUE_FIGURE.finditer(text)
            if not GLUED_VALUE.search(m.group(2))]


def figure_cell_problems(text: str) -> list[str]:
    """Figure cells without a ``fig-`` name, a caption, or an alt text that describes the figure."""
    problems = []
    for cell in figure_cells(text):
        if not re.fullmatch(r"fig-[\w-]+", cell.name):
            problems.append(f"line {cell.line}: figure name {cell.name!r} (want fig-...)")
        if not cell.caption.strip():
            problems.append(f"line {cell.line}: {cell.name}: no caption")
        if len(cell.alt.split()) < 6:
            problems.append(f"line {cell.line}: {cell.name}: alt text {cell.alt!r} does not describe the figure")
    return problems


FIGURE_CELL = """```{code-cell} ipython3
---
tags: [hide-input]
mystnb:
  figure:
    name: fig-x
    caption: |
      Two densities.
  image:
    alt: >-
      Two Laplace densities centred at 0 and 1.
---
fig = plot()
plt.close(fig)
fig
```
"""


def test_figure_checks_catch_a_glued_figure_without_a_glued_value() -> None:
    plain = "```{glue:figure} fig_x\n:name: fig-x\n:alt: A curve.\n\nThe density of $X$.\n```\n"
    glued = "```{glue:figure} fig_x\n:name: fig-x\n\nThe density of {glue:text}`n_draws:,` draws.\n```\n"
    glued_role = "```{glue:figure} fig_x\n:name: fig-x\n\nThe density at {glue}`eps`.\n```\n"
    assert glue_figures_without_glued_value(plain) == ["line 1: fig_x"]
    assert glue_figures_without_glued_value(glued) == glue_figures_without_glued_value(glued_role) == []
    assert figure_cell_problems(FIGURE_CELL) == []
    assert figure_cells(FIGURE_CELL)[0].name == "fig-x"
    assert len(figure_cell_problems(FIGURE_CELL.replace("fig-x", "x"))) == 1
    assert len(figure_cell_problems(FIGURE_CELL.replace("Two Laplace densities centred at 0 and 1.", "A plot."))) == 1
    assert len(figure_cell_problems(FIGURE_CELL.replace("Two densities.", ""))) == 1


def test_figure_cell_text_is_read_as_prose() -> None:
    text = reading_text("Before.\n\n" + FIGURE_CELL + "\nAfter.\n")
    assert "Two densities." in text and "centred at 0 and 1" in text and "plt.close" not in text
    assert text.count("\n") == ("Before.\n\n" + FIGURE_CELL + "\nAfter.\n").count("\n")


@pytest.mark.parametrize("name", chapters())
def test_figures_without_glued_values_are_figure_cells(name: str) -> None:
    text = (BOOK / f"{name}.md").read_text()
    problems = glue_figures_without_glued_value(text) + figure_cell_problems(text)
    assert not problems, (f"{name}.md: {problems}; a figure whose caption holds no glued value is one code cell "
                          "with mystnb figure metadata (CONTRIBUTING.md, 'Writing the book')")


# ---------------------------------------------------------------------------------------------
# Internal labels never reach the reader
# ---------------------------------------------------------------------------------------------

def internal_labels() -> set[str]:
    """The book's labels that are not plain words: every label except the chapters' own (``floating-point``
    is also a word of the prose)."""
    labels = set(label_definitions([p.stem for p in BOOK.glob("*.md")]))
    chapter_labels = {re.sub(r"_", "-", p.stem) for p in BOOK.glob("*.md")}
    return {label for label in labels if label not in chapter_labels}


def leaked_labels(text: str, labels: set[str]) -> list[str]:
    words = set(re.findall(r"(?<![\w-])[a-z][\w]*(?:-[\w]+)+(?![\w-])", text))
    return sorted(words & labels)


def test_label_check_catches_a_label_in_a_comment() -> None:
    labels = {"thm-prob-bayes", "fig-prob-uniform"}
    assert leaked_labels("# Bayes' rule (Theorem thm-prob-bayes), checked", labels) == ["thm-prob-bayes"]
    assert leaked_labels("x = 1  # see fig-prob-uniform.", labels) == ["fig-prob-uniform"]
    assert leaked_labels("# Bayes' rule (Theorem 1.1); thm-prob-bayes-2 is another word", labels) == []


@pytest.mark.parametrize("name", chapters())
def test_no_internal_label_in_code_cells(name: str) -> None:
    labels = internal_labels()
    problems = [f"{name}.md:{c.line}: {leaked_labels(c.source, labels)}" for c in code_cells(
        (BOOK / f"{name}.md").read_text()) if leaked_labels(c.source, labels)]
    assert not problems, "internal labels in code (write the number, e.g. 'Theorem 1.1'):\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Built pages render: no Markdown tables, $-math, {glue remnants or labels left as text
# ---------------------------------------------------------------------------------------------

class VisibleText(html.parser.HTMLParser):
    """The text a reader sees on a page, split into prose (outside any code) and code (inputs and outputs).

    Math rendered by MathJax sits in ``span.math``/``div.math`` and is skipped, as are scripts and styles.
    """

    SKIP = {"script", "style", "head"}
    VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "source", "col", "area", "base", "embed"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool]] = []     # (tag, skip, code)
        self.prose: list[str] = []
        self.code: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        skip = (self.stack[-1][1] if self.stack else False) or tag in self.SKIP or "math" in classes
        code = (self.stack[-1][2] if self.stack else False) or tag in ("pre", "code") or "highlight" in classes
        self.stack.append((tag, skip, code))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        skip, code = (self.stack[-1][1], self.stack[-1][2]) if self.stack else (False, False)
        if not skip:
            (self.code if code else self.prose).append(data)


def visible_text(page: str) -> tuple[str, str]:
    parser = VisibleText()
    parser.feed(page)
    return " ".join(parser.prose), " ".join(parser.code)


# A delimiter row left as text: "---" as typed, or as the typographer turns it into dashes (em, en).
MD_TABLE = re.compile(r"\|\s*:?(?:-{3,}|[\u2013\u2014]+-*):?\s*\|")
DOLLAR_MATH = re.compile(r"\$\$|\$(?=\S)[^$\n]{1,200}?(?<=\S)\$")
GLUE_REMNANT = re.compile(r"\{glue(?::\w+)?\}")


def page_problems(page: str, labels: set[str]) -> list[str]:
    prose, code = visible_text(page)
    problems = [f"Markdown table syntax: {m.group(0)!r}" for m in MD_TABLE.finditer(prose)]
    problems += [f"$-math left as text: {m.group(0)!r}" for m in DOLLAR_MATH.finditer(prose)]
    problems += [f"glue remnant: {m.group(0)!r}" for m in GLUE_REMNANT.finditer(prose + code)]
    problems += [f"internal label in the text: {label}" for label in leaked_labels(prose + " " + code, labels)]
    return problems


def test_page_check_catches_each_remnant() -> None:
    labels = {"thm-prob-bayes"}
    bad = ('<p>| a | b | |---|---| and $n = 1$ and {glue:text}`x`</p><div class="highlight"><pre>'
           '# Theorem thm-prob-bayes</pre></div>')
    problems = page_problems(bad, labels)
    assert len(problems) == 4, problems
    # The same table after the typographer, which turns its delimiter row into em dashes.
    assert len(page_problems('<p>| a | b |\n|\u2014|\u2014|</p>', set())) == 1
    good = ('<p>The value <span class="math notranslate nohighlight">\\(n = 1\\)</span> costs $5 or more.</p>'
            '<script>var a = "$x$ | --- |";</script><a href="#thm-prob-bayes">Theorem 1.1</a>')
    assert page_problems(good, labels) == []


def test_built_pages_render(book_build: BookBuild) -> None:
    assert book_build.returncode == 0, "the book did not build"
    labels = internal_labels()
    problems = []
    for page in sorted((book_build.html / "book").rglob("*.html")):
        problems += [f"{page.relative_to(book_build.html)}: {p}" for p in page_problems(page.read_text(), labels)]
    assert not problems, "\n".join(problems)


def test_notation_page_links_every_entry(book_build: BookBuild) -> None:
    assert book_build.returncode == 0, "the book did not build"
    entries, _ = notation_entries(NOTATION.read_text())
    page = (book_build.html / "book" / "notation.html").read_text()
    dl = re.findall(r"<dd>(.*?)</dd>", page, flags=re.S)
    assert len(dl) == len(entries)
    for dd in dl:
        hrefs = re.findall(r'<a class="reference internal" href="([^"]+)"', dd)
        assert hrefs, f"an entry without a working link: {dd[:200]}"
        target = hrefs[-1].split("#")
        path = (book_build.html / "book" / target[0]).resolve() if target[0] else book_build.html / "book" / "notation.html"
        assert path.is_file(), hrefs[-1]
        if len(target) > 1:
            assert f'id="{target[1]}"' in path.read_text(), hrefs[-1]


def test_every_chapter_shows_prerequisites_and_reading_time(book_build: BookBuild) -> None:
    """Each numbered chapter's page opens with its prerequisites and reading time; the intro lists the three
    reading paths with their times (book/_ext/reading_time.py, book/_data/reading.yml)."""
    assert book_build.returncode == 0, "the book did not build"
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    chapters = [c["file"] for part in toc["parts"] if part.get("numbered") for c in part["chapters"]]
    for doc in chapters:
        page = (book_build.html / f"{doc}.html").read_text()
        meta = re.search(r'<p class="dptutor-chapter-meta">(.*?)</p>', page, flags=re.S)
        assert meta, f"{doc}: no prerequisites/reading-time line"
        text = re.sub(r"<[^>]+>", "", meta.group(1))
        assert "Prerequisites:" in text and re.search(r"Reading time: about (\d+ h )?\d+ min", text), text
        # The line sits right under the chapter's title, before any other paragraph.
        first_paragraph = page.index("<p", page.index("</h1>"))
        assert page.startswith('<p class="dptutor-chapter-meta"', first_paragraph), doc
    intro = re.sub(r"<[^>]+>", "", (book_build.html / "book" / "intro.html").read_text())
    for title in ("The paper's story (", "A course's DP unit (", "The practitioner's path ("):
        assert title in intro.replace("\u2019", "'"), title


# ---------------------------------------------------------------------------------------------
# A number stated twice comes from one glued value
# ---------------------------------------------------------------------------------------------

#: A decimal literal in the prose: at least one digit after the point, not part of a word or version.
DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.])")
#: Literals that equal a glued value of their chapter and are rightly typed: a formula's constant (the
#: classic Gaussian's 1.25) and the paper's own published number (its footnote 7's mean), quoted as such.
TYPED_ON_PURPOSE = frozenset({("approximate_dp", "1.25"), ("reading_audits", "0.195")})


def glued_numbers(glue_json: str) -> list[tuple[str, float]]:
    """The finite numbers a chapter glues, from myst-nb's ``<chapter>.glue.json`` of an executed build."""
    import json
    import math

    out = []
    for key, output in json.loads(glue_json).items():
        try:
            value = float(output.get("data", {}).get("text/plain", ""))
        except ValueError:
            continue
        if math.isfinite(value):
            out.append((key, value))
    return out


def restated_glue(text: str, glued: list[tuple[str, float]], chapter: str = "") -> list[str]:
    """Hand-typed decimals of the prose (three significant digits or more) that equal, at the precision
    typed, a number the same chapter glues: such a number must be glued where it is stated."""
    problems, in_block = [], False
    for i, line in enumerate(text.split("\n"), 1):
        if line.startswith("```{code-cell}") or line.startswith("````{dropdown}"):
            in_block = True
            continue
        if in_block:
            in_block = not line.startswith("```")
            continue
        for m in DECIMAL.finditer(re.sub(r"\{glue:[a-z]*\}`[^`]*`", "", line)):
            literal = m.group(1)
            digits = len(literal.replace(".", "").lstrip("0"))
            if digits < 3 or (chapter, literal) in TYPED_ON_PURPOSE:
                continue
            keys = [k for k, v in glued if round(v, len(literal.split(".")[1])) == float(literal)]
            if keys:
                problems.append(f"line {i}: {literal} typed by hand, the chapter glues it as {keys[0]}")
    return problems


def test_restated_glue_check_catches_a_hand_typed_number() -> None:
    glued = [("x_bound", 0.09461), ("x_eps", 0.1)]
    bad = "The bound is 0.0946, below 0.1.\n```{code-cell} ipython3\nprint(0.0946)\n```\n"
    assert len(restated_glue(bad, glued)) == 1
    assert restated_glue("The bound is {glue:text}`x_bound:.4f`, version 3.9.2, about 0.095.", glued) == []


def test_no_glued_number_is_typed_again(book_build: BookBuild) -> None:
    assert book_build.returncode == 0, "the book did not build"
    executed = book_build.html.parent / "jupyter_execute" / "book"
    problems = []
    for glue_file in sorted(executed.glob("*.glue.json")):
        chapter = glue_file.name.removesuffix(".glue.json")
        source = BOOK / f"{chapter}.md"
        if source.is_file():
            problems += [f"{chapter}.md {p}" for p in restated_glue(source.read_text(), glued_numbers(
                glue_file.read_text()), chapter)]
    assert not problems, "\n".join(problems)
