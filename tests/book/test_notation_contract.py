"""The notation contract of book/notation.md, enforced on the chapters' sources (no book build).

The appendix promises that every symbol it lists has the one meaning given there in every chapter, and that a
symbol it does not list is local to the proof or example that introduces it. Two checks keep that true:

- No symbol is listed twice (a primed symbol, gamma', is another entry than gamma).
- A phrase that defines a listed symbol ("let $s$ be", "where $s$ is", "write $q = ...$", "with $c$ the",
  "$n$ denotes", "call ... $h$") appears only at the symbol's defining place (the target of its entry), in a
  clause that names the entry's kind ("let $\\mathcal{M}$ be a mechanism", "let $F$ be a CDF"), or in a
  chapter of the short allow-list below, where the sentence restates the appendix's meaning.

Each check is a function returning precise problems, and each is fed a broken sample so it cannot pass
vacuously. The parsing helpers (entries, reading order, math atoms) are those of test_editorial.py.
"""
from __future__ import annotations

import re

from test_editorial import (BOOK, NOTATION, Atom, Entry, atoms, chapters, label_definitions, notation_entries,
                            reading_text, symbol_of)


# ---------------------------------------------------------------------------------------------
# The listed symbols
# ---------------------------------------------------------------------------------------------

def listed_symbols(entries: list[Entry]) -> list[tuple[str, Atom, Entry]]:
    """(key, atom, entry) for every symbol an entry lists. A head may list several, comma-separated
    ("$\\varepsilon_1, \\varepsilon_2$"), and a function's head names its arguments ("$h(o)$", "$q(X, r)$"):
    the symbol is the first atom of each comma-separated part that is not inside parentheses. The key adds
    the primes, which atoms() folds into the symbol (X' is a use of X), so that gamma' is not gamma."""
    found = []
    for e in entries:
        if e.kind != "symbol":
            continue
        head = e.head.strip("$")
        depth, parts, start = 0, [], 0
        for i, ch in enumerate(head):
            depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(head[start:i])
                start = i + 1
        parts.append(head[start:])
        for part in parts:
            parsed = atoms(part)
            if not parsed:
                continue
            base_end = part.find("(")
            primes = (part if base_end < 0 else part[:base_end]).count("'") + part.count(r"\prime")
            a = parsed[0]
            found.append((f"{a.decoration}|{a.base}|{a.sub}|{primes}", a, e))
    return found


def duplicate_problems(entries: list[Entry]) -> list[str]:
    """Each symbol that two entries list."""
    seen: dict[str, Entry] = {}
    problems = []
    for key, _, e in listed_symbols(entries):
        if key in seen:
            problems.append(f"notation.md:{e.line}: {e.head} lists a symbol already listed at line "
                            f"{seen[key].line} ({seen[key].head})")
        seen.setdefault(key, e)
    return problems


# ---------------------------------------------------------------------------------------------
# Definition-like phrases
# ---------------------------------------------------------------------------------------------

SPAN = r"\$(?P<m>[^$\n]+?)\$"
PLAIN = r"\$(?P<m>(?:(?!=|<|>|\\le|\\ge|\\ne)[^$\n])+?)\$"        # no relation: a name, not a value
# What the chapters write when they give a symbol a meaning. A phrase that assigns a number ("with $m = 5$")
# only uses the symbol; "let"/"write" followed by an equation defines it ("let $m(X) = ...$", "write $q = ...$").
DEFINING = [re.compile(p, re.S) for p in (
    r"\b[Ll]et\s+" + SPAN + r"\s+(?:be|denote)s?\b",
    r"\b[Ll]et\s+" + r"\$(?P<m>[^$\n]*?[^<>!\\]=[^$\n]*?)\$",
    r"\b[Ww]rit(?:e|ing)\s+" + SPAN + r"\s+for\b",
    r"\b[Ww]rit(?:e|ing)\s+" + r"\$(?P<m>[^$\n]*?[^<>!\\]=[^$\n]*[A-Za-z\\][^$\n]*)\$",
    SPAN + r"\s+(?:denotes|stands\s+for)\b",
    r"\bwhere\s+" + PLAIN + r"\s+(?:is|are)\s+(?:the|a|an)\b",
    r"\bwith\s+" + PLAIN + r"\s+the\b",
    r"\bcall(?:s|ed)?\s+(?:it|this|them|the\s+\w+)?\s*" + SPAN,
    r"\(" + PLAIN + r"\s+(?:is\s+)?the\s+(?:number|probability|scale|size|count|shift|threshold|error)\b",
    # "..., $z = (a + 2C)/(\sigma C)$ for a threshold $a$": an equation with letters on the right, then "for a"
    # (not "for every", which states where a formula holds: "$\sigma = ...$ for every $\varepsilon$").
    r"\$(?P<m>[^$\n]*?[^<>!\\]=[^$\n]*[A-Za-z\\][^$\n]*)\$\s+for\s+(?:a|an|the)\b",
)]

# (chapter, symbol as the appendix writes it): sentences outside the defining place that restate the
# appendix's meaning, as a reminder to a reader who starts there. Keep this list short.
RESTATES = {
    ("composition", "$X$"),         # the neighbours and the parts of a partition in the composition proofs
    ("dptext", "$W$"),              # the law of DPText's sampler, stated for its output W = g(V)
    ("dptext", "$\\mathcal{M}$"),   # "let M(X) = f(X) + W": the mechanism built on DPText's sampler
    ("approximate_dp", "$f$"),      # "let f be integer-valued": a numeric query with integer answers
    ("laplace_mechanism", "$b$"),   # "write $b = \\Delta/\\varepsilon$": the Laplace scale the mechanism uses
    ("sanity_check", "$\\varphi$"),  # the post-processing map and its preimage, "let $\\varphi^{-1}(S) = ...$"
}


GENERIC = {"number", "probability", "value"}
# Words that name an entry's kind without its noun: "let $X, X'$ be neighbouring", "let $\\mathcal{M}$ be
# $\\varepsilon$-DP" (only a mechanism is DP).
SYNONYMS = {"dataset": {"neighbouring"}, "mechanism": {"dp"}}


def kinds_of(entry: Entry, notation: str) -> set[str]:
    """The words that name what an entry's symbol is: the head noun its definition opens with ("A dataset;
    ..." -> dataset, "The privacy loss at ..." -> loss), qualified when generic ("The number of people" ->
    people), and the words of its first parentheses ("A cumulative distribution function (CDF)" -> cdf)."""
    body = notation.split("\n")[entry.line][2:]                     # the line after the head: ": A dataset; ..."
    opening = re.split(r"[:;,.]", body, maxsplit=1)[0]
    words = re.findall(r"[A-Za-z-]+", re.sub(r"\$[^$]*\$|\(.*", " ", opening).lower())
    stop = {"at", "of", "in", "on", "that", "for", "with", "from", "whose", "which", "to", "applied"}
    head = next((i for i, w in enumerate(words) if w in stop), len(words))
    kinds = set(words[head - 1:head]) if head else set()
    if kinds & GENERIC:                                             # "number of people" -> people
        kinds = {w for w in words[head + 1:] if w not in {"a", "an", "the"}} or set(words[head - 2:head - 1])
    kinds |= set(re.findall(r"[a-z-]+", " ".join(re.findall(r"\(([^)$]*)\)", opening)).lower()))
    for k in list(kinds):
        kinds |= SYNONYMS.get(k, set())
    return kinds - {"a", "an", "the"}


def restates(text: str, end: int, kinds: set[str]) -> bool:
    """Whether the words right after a defining phrase name the entry's kind ("let $X, X'$ be neighbouring
    datasets", "let $F$ be a CDF"): the sentence gives the symbol its listed meaning."""
    after = re.split(r"[.;:?!](?:\s|$)", text[end:end + 120])[0]      # the rest of the clause only
    words = re.sub(r"\$[^$]*\$", " ", after).lower().split()[:6]
    return any(re.search(r"\b" + re.escape(k) + r"s?\b", " ".join(words)) for k in kinds)


PRIMED = re.compile(r"\s*(?:\\[a-z]+\s*\{?\s*)?\\?[A-Za-z]+\}?\s*(?:'|\^\{?\\prime)")


def defined_symbol(latex: str) -> Atom | None:
    """The symbol a defining phrase defines: the first atom of its math span, if the span opens with it
    ("write $|f(x) - f(x')| = \\Delta - \\xi$" defines the slack, not f)."""
    if re.match(r"\s*(?:\\(?:left|lvert|lVert|big|Big)\b|[|(\[{])", latex):
        return None
    parsed = atoms(latex)
    return parsed[0] if parsed else None


def definition_problems(texts: dict[str, str], entries: list[Entry], labels: dict[str, tuple[str, int]],
                        allowed: set[tuple[str, str]] = RESTATES, notation: str | None = None) -> list[str]:
    """Each defining phrase of a listed symbol away from the symbol's defining place and not allowed."""
    notation = NOTATION.read_text() if notation is None else notation
    listed = listed_symbols(entries)
    by_atom: dict[Atom, Entry] = {}
    primed: dict[Atom, Entry] = {}                  # gamma' has its own entry; X' is a use of X
    for key, a, e in listed:
        (primed if key.endswith("|1") else by_atom).setdefault(a, e)
    problems = []
    for chapter, raw in texts.items():
        text = reading_text(raw)
        seen: set[int] = set()                      # two patterns may match one phrase
        for pattern in DEFINING:
            for m in pattern.finditer(text):
                atom = defined_symbol(m.group("m"))
                key = symbol_of(atom, list(by_atom)) if atom else None
                if key is None:
                    continue
                e = primed[key] if key in primed and PRIMED.match(m.group("m")) else by_atom[key]
                line = text.count("\n", 0, m.start("m")) + 1
                if e.role == "doc":
                    home = (e.target.removeprefix("book/"), None)
                else:
                    home = labels.get(e.target, (None, None))
                if home[0] == chapter and (home[1] is None or 0 <= line - home[1] <= 40):
                    continue
                if (chapter, e.head) in allowed or restates(text, m.end("m") + 1, kinds_of(e, notation)) \
                        or m.start("m") in seen:
                    continue
                seen.add(m.start("m"))
                phrase = " ".join(m.group(0).split())
                problems.append(f"{chapter}.md:{line}: '{phrase}' defines {e.head}, whose meaning is fixed at "
                                f"{e.target} ({home[0]}.md:{home[1]}); rename it or, if it restates that "
                                f"meaning, allow-list it")
    return problems


# A listed symbol that a sentence calls an output ("every output $z$", "the witness output $z = 0.1$") takes the
# meaning of an output; that is its listed meaning only if the first sentence of its entry speaks of outputs
# (y, L, p, R do; the noise value z does not: an output is y, or a symbol local to its chapter).
OUTPUT_ROLE = re.compile(r"\b(?:an?|the|every|each|any|one)\s+(?:[a-z-]+\s+)?outputs?\s+" + SPAN)


def first_sentence(entry: Entry, notation: str) -> str:
    """The opening sentence of an entry's definition (its lines after the head, up to the first full stop)."""
    body = []
    for line in notation.split("\n")[entry.line:]:
        if not line.strip() or not line.startswith((": ", "  ")):
            break
        body.append(line[2:].strip())
    return re.split(r"(?<!\bEq)(?<!\be\.g)\.\s", " ".join(body), maxsplit=1)[0]


def output_problems(texts: dict[str, str], entries: list[Entry], notation: str | None = None) -> list[str]:
    """Each phrase that calls a listed symbol an output when its entry gives it another meaning."""
    notation = NOTATION.read_text() if notation is None else notation
    by_atom: dict[Atom, Entry] = {}
    for key, a, e in listed_symbols(entries):
        if not key.endswith("|1"):
            by_atom.setdefault(a, e)
    problems = []
    for chapter, raw in texts.items():
        text = reading_text(raw)
        for m in OUTPUT_ROLE.finditer(text):
            atom = defined_symbol(m.group("m"))
            key = symbol_of(atom, list(by_atom)) if atom else None
            if key is None or re.search(r"\boutputs?\b", first_sentence(by_atom[key], notation), re.I):
                continue
            line = text.count("\n", 0, m.start("m")) + 1
            problems.append(f"{chapter}.md:{line}: '{' '.join(m.group(0).split())}' calls {by_atom[key].head} an "
                            f"output, which its entry does not make it; an output is $y$ (or a local symbol)")
    return problems


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------

def test_no_symbol_is_listed_twice() -> None:
    entries, _ = notation_entries(NOTATION.read_text())
    assert len(listed_symbols(entries)) >= 60
    problems = duplicate_problems(entries)
    assert not problems, "\n".join(problems)


def test_listed_symbols_are_defined_only_at_their_place() -> None:
    entries, _ = notation_entries(NOTATION.read_text())
    texts = {name: (BOOK / f"{name}.md").read_text() for name in chapters()}
    labels = label_definitions(list(texts))
    problems = definition_problems(texts, entries, labels)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
    # The allow-list names only chapters and symbols that exist, so an entry cannot outlive its reason.
    heads = {e.head for e in entries}
    for chapter, head in RESTATES:
        assert chapter in texts and head in heads, (chapter, head)


SAMPLE = """\
## Symbols

$m$
: The number of people. *Defined in* {ref}`sec-a`.

$\\gamma$
: A confidence error. *Defined in* {ref}`sec-a`.

$\\gamma'$
: A quarter of it. *Defined in* {ref}`sec-a`.

$h(o)$
: A learned statistic. *Defined in* {doc}`b`.

$\\varepsilon_1, \\varepsilon_2$
: The two parts of a budget. *Defined in* {ref}`sec-a`.
"""


def test_duplicate_check_catches_a_symbol_listed_twice() -> None:
    entries, problems = notation_entries(SAMPLE)
    assert not problems and not duplicate_problems(entries)
    keys = [k for k, _, _ in listed_symbols(entries)]
    assert len(keys) == 6 and keys[1] != keys[2], keys       # gamma and gamma' are two symbols
    again = SAMPLE + "\n$h$\n: A density. *Defined in* {ref}`sec-a`.\n"
    again += "\n$\\varepsilon_2$\n: Another. *Defined in* {ref}`sec-a`.\n"
    entries, _ = notation_entries(again)
    found = duplicate_problems(entries)
    assert len(found) == 2 and "$h$" in found[0] and "\\varepsilon_2" in found[1], found


def test_definition_check_catches_a_second_meaning() -> None:
    entries, _ = notation_entries(SAMPLE)
    a = "(sec-a)=\n# A\n\nFrom $m$ people we form datasets; let $\\gamma$ be the error.\n"
    b = "# B\n\nThe fitted $h(o)$ scores outputs, where $h$ is the log-odds.\n"
    labels = {"sec-a": ("a", 1)}
    assert definition_problems({"a": a, "b": b}, entries, labels, set(), SAMPLE) == []
    c = ("# C\n\nLet $m$ be the number of answers, where $\\gamma$ is the exponent, and write $m(X) = |X|$;\n"
         "write $h$ for the density, with $\\varepsilon_2$ the rest, or $\\gamma'$ denotes a part.\n"
         "We call it $m$, and with $m = 5$ answers it holds ($m$ the count) only once.\n")
    far = a.replace("\n\nFrom", "\n" + "\n" * 60 + "Later let $m$ be runs.\n\nFrom")
    found = definition_problems({"a": far, "b": b, "c": c}, entries, labels, set(), SAMPLE)
    assert [p.split(":")[0] for p in found] == ["a.md"] + ["c.md"] * 8, found
    assert sum("defines $m$" in p for p in found) == 5 and sum("$\\gamma'$" in p for p in found) == 1, found
    # The allow-list lets a chapter restate a meaning.
    assert definition_problems({"c": c}, entries, labels, {("c", "$m$"), ("c", "$\\gamma$"), ("c", "$h(o)$"),
                               ("c", "$\\varepsilon_1, \\varepsilon_2$"), ("c", "$\\gamma'$")}, SAMPLE) == []
    # A sentence that names the entry's kind restates its meaning; a generic kind ("number") is qualified.
    assert kinds_of(entries[0], SAMPLE) == {"people"} and kinds_of(entries[3], SAMPLE) == {"statistic"}
    again = "# D\n\nLet $h$ be the learned statistic of the audit, and let $m$ be the number of people.\n"
    assert definition_problems({"d": again}, entries, labels, set(), SAMPLE) == []


def test_no_listed_symbol_is_called_an_output_against_its_entry() -> None:
    entries, _ = notation_entries(NOTATION.read_text())
    texts = {name: (BOOK / f"{name}.md").read_text() for name in chapters()}
    problems = output_problems(texts, entries)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


SAMPLE_OUTPUTS = """\
## Symbols

$y$
: A value of a random variable; above all, an output of a mechanism. *Defined in* {ref}`sec-a`.

$z$
: A value of the noise. Nothing else: an output is $y$. *Defined in* {ref}`sec-a`.
"""


def test_second_meaning_checks_catch_z_as_an_output_or_a_threshold() -> None:
    entries, _ = notation_entries(SAMPLE_OUTPUTS)
    labels = {"sec-a": ("a", 1)}
    a = "(sec-a)=\n# A\n\nLet $z$ be a value of the noise, so that every output $y$ is an answer plus $z$.\n"
    b = ("# B\n\nFix the witness output $z = 0.1$ and take every output $y_i$; writing $Y_t$ for a sum,\n"
         "$z = (a + 2C)/(\\sigma C)$ for a threshold $a$, while $z = 2\\sigma$ for every $\\sigma$ only uses it.\n")
    assert output_problems({"a": a}, entries, SAMPLE_OUTPUTS) == []
    assert definition_problems({"a": a}, entries, labels, set(), SAMPLE_OUTPUTS) == []
    # Only the first sentence of an entry counts: "an output is $y$" later on does not make z an output.
    found = output_problems({"a": a, "b": b}, entries, SAMPLE_OUTPUTS)
    assert len(found) == 1 and found[0].startswith("b.md:3:") and "witness output $z = 0.1$" in found[0], found
    found = definition_problems({"a": a, "b": b}, entries, labels, set(), SAMPLE_OUTPUTS)
    assert len(found) == 1 and found[0].startswith("b.md:4:") and "\\sigma C)$ for a'" in found[0], found
