"""Source-level editorial guards of issue 34 for the chapters (no book build: they read the ``.md`` files).

- The evidence stays out of the prose: no commit hashes, dates, machine descriptions, CPU seconds, paths under
  ``benchmarks/`` or ``tests/``, test file names, the word README or "an earlier version" history in a chapter
  of Parts I to III or the conclusion, except inside a folded ``{dropdown} Reproduce this`` box, which holds
  the one command that reproduces a full-size run.
- Every exercise has a title (``{exercise-start} Title``).
- A duration is never a glued number followed by "seconds" (which renders "1 seconds"): glue the whole phrase.
- Wherever a chapter states the reach limit on 16 of DP-Sniper's 20, it says on which pairs.

Each check returns a list of precise problems, and each has a test that feeds it a deliberately broken
sample, so that none of them can pass vacuously.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"

#: Chapters skipped by the lab-notebook check: none (each name would be a file of book/ without ``.md``).
LAB_WORDS_PENDING: frozenset[str] = frozenset()

#: Chapters skipped by the exercise-title check: none.
UNTITLED_PENDING: frozenset[str] = frozenset()


def chapters() -> list[str]:
    """The chapters of Parts I to III and the conclusion, in the order of _toc.yml (``book/x`` -> ``x``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out = []
    for part in toc.get("parts", []):
        caption = part.get("caption", "")
        if caption.startswith("Part") or caption == "Conclusion":
            out += [c["file"].removeprefix("book/") for c in part.get("chapters", [])]
    return out


# ---------------------------------------------------------------------------------------------
# Reading a chapter: what the reader sees as prose
# ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^(`{3,}|~{3,}|:{3,})(.*)$")


def _strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return "\n" * text[:end + 4].count("\n") + text[end + 4:]
    return text


def blocks(text: str) -> list[tuple[int, str, str]]:
    """``(line, kind, content)`` for the top-level parts of a MyST notebook: kind is ``"prose"``, ``"code"``
    (a code cell), ``"reproduce"`` (a ``{dropdown} Reproduce this`` box) or ``"fence"`` (any other fenced
    block, whose content is prose read by the reader, such as an admonition or a proof).  Lines are 1-based."""
    lines = _strip_front_matter(text).split("\n")
    out: list[tuple[int, str, str]] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            start = i
            while i < len(lines) and not _FENCE.match(lines[i]):
                i += 1
            out.append((start + 1, "prose", "\n".join(lines[start:i])))
            continue
        fence, rest = m.group(1), m.group(2).strip()
        start = i
        i += 1
        while i < len(lines) and lines[i].rstrip() != fence:
            i += 1
        body = "\n".join(lines[start + 1:i])
        i += 1
        if rest.startswith("{code-cell}"):
            kind = "code"
        elif rest.startswith("{dropdown}") and rest.removeprefix("{dropdown}").strip() == "Reproduce this":
            kind = "reproduce"
        else:
            kind = "fence"
        out.append((start + 1, kind, body))
    return out


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_ROLE_TARGET = re.compile(r"\{[a-zA-Z:-]+\}`[^`]*`")
_INLINE_CODE = re.compile(r"`[^`\n]+`")

#: Words of a lab notebook, with what each catches.
LAB_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a commit hash", re.compile(r"\bcommits?\s+`?[0-9a-f]{7,40}\b|`[0-9a-f]{7,40}`")),
    ("a date", re.compile(r"\b\d{1,2}\s+(January|February|March|April|May|June|July|August|September|October|"
                          r"November|December)\s+20\d\d\b|\b(January|February|March|April|May|June|July|August|"
                          r"September|October|November|December)\s+20\d\d\b|\b20\d\d-\d\d-\d\d\b")),
    ("a machine", re.compile(r"\b(\d+|two|four|eight)[- ]core\b|\bon (the|a|this) machine\b|\bquiet machine\b", re.I)),
    ("CPU seconds", re.compile(r"\bCPU[- ](s|sec|secs|seconds?|hours?|minutes?)\b", re.I)),
    ("the README", re.compile(r"\bREADME\b")),
    ("a benchmark or test path", re.compile(r"\b(benchmarks|tests)/[\w./-]*")),
    ("a test file name", re.compile(r"\btest_\w+\.py\b")),
    ("a benchmark flag", re.compile(r"(?<![\w-])--(full|search|rounds|bounds|soundness|ceiling|only|trials|seeds?|"
                                    r"workers|quick|classic)\b")),
    ("history of earlier versions", re.compile(r"\ban earlier version\b|\bused to (print|say|give)\b", re.I)),
)


def lab_words(text: str) -> list[str]:
    """Lab-notebook words outside ``Reproduce this`` boxes (prose, fenced prose, and code the reader sees)."""
    problems = []
    for line, kind, body in blocks(text):
        if kind == "reproduce":
            continue
        if kind == "code" and re.search(r"^:tags:.*remove-(cell|input)|^\s*tags:.*remove-(cell|input)", body, re.M):
            continue
        seen = body if kind == "code" else _ROLE_TARGET.sub(" ", _MATH.sub(" ", body))
        for what, pattern in LAB_WORDS:
            for m in pattern.finditer(seen):
                at = line + seen[:m.start()].count("\n") + (1 if kind != "prose" else 0)
                problems.append(f"line {at}: {what} outside a Reproduce-this box: {m.group(0)!r}")
    return problems


def reproduce_boxes(text: str) -> list[str]:
    """Every ``Reproduce this`` box holds exactly one command line (in one fenced code block)."""
    problems = []
    for line, kind, body in blocks(text):
        if kind != "reproduce":
            continue
        commands = [b for _, k, b in blocks(body) if k == "fence"]
        lines = [ln for c in commands for ln in c.split("\n") if ln.strip() and not ln.startswith(":")]
        if len(lines) != 1:
            problems.append(f"line {line}: a Reproduce-this box must hold one command, found {len(lines)}")
    return problems


_EXERCISE = re.compile(r"^```\{exercise-start\}(.*)$", re.M)


def untitled_exercises(text: str) -> list[str]:
    """Exercises without a title after ``{exercise-start}``."""
    return [f"line {text[:m.start()].count(chr(10)) + 1}: an exercise without a title"
            for m in _EXERCISE.finditer(text) if not m.group(1).strip()]


_GLUED_SECONDS = re.compile(r"\{glue:text\}`[^`]*`\s*(CPU\s+)?seconds?\b")


def glued_seconds(text: str) -> list[str]:
    """A glued number followed by "seconds" renders "1 seconds" when the number is 1: glue the whole phrase."""
    problems = [f"line {text[:m.start()].count(chr(10)) + 1}: a glued number followed by a unit: {m.group(0)!r}"
                for m in _GLUED_SECONDS.finditer(text)]
    problems += [f"line {text[:m.start()].count(chr(10)) + 1}: {m.group(0)!r}"
                 for m in re.finditer(r"(?<![\d.,])1 seconds\b", text)]
    return problems


def unqualified_reach_limits(text: str) -> list[str]:
    """A paragraph that states the reach limit on 16 of DP-Sniper's 20 (the glued ``sa_lim_16``, or "16 of
    the 20" next to "probability") must say on which pairs: "on DP-Sniper's pairs" or "on StatDP's candidates"."""
    problems = []
    for line, kind, body in blocks(text):
        if kind not in ("prose", "fence"):
            continue
        for para in re.split(r"\n\s*\n", body):
            states = "sa_lim_16" in para or (re.search(r"\b16 of (the )?20\b", para) and "probabilit" in para)
            if states and "on DP-Sniper's pairs" not in para and "on StatDP's candidates" not in para:
                first = para.strip().split("\n")[0][:60]
                problems.append(f"near line {line}: a reach limit without its pairs: {first!r}")
    return problems


# ---------------------------------------------------------------------------------------------
# The checks fed broken samples
# ---------------------------------------------------------------------------------------------

BROKEN = """
Some prose measured at commit `db16420` on 24 November 2026 on the 2-core machine: 532 CPU seconds.
The README lists every entry; run `python benchmarks/bench_blackbox.py --full` (see tests/library/test_blackbox.py).
An earlier version of this check used to say otherwise.

```{code-cell} ipython3
x = 1  # benchmarks/bench_audit.py
```

````{dropdown} Reproduce this
```bash
python benchmarks/bench_blackbox.py --full
```
````

````{dropdown} Reproduce this
```bash
python benchmarks/a.py
python benchmarks/b.py
```
````

```{exercise-start}
:label: ex-a
```
```{exercise-start} Titled (code)
:label: ex-b
```
The whole zoo took {glue:text}`sa_zoo_seconds:.0f` seconds, or 1 seconds.

No valid audit reaches 16 of the 20 with probability above {glue:text}`sa_lim_16:.2f`.
"""


def test_lab_word_check_catches_each_kind() -> None:
    found = "\n".join(lab_words(BROKEN))
    for what, _ in LAB_WORDS:
        assert what in found, what
    code_line = BROKEN.split("\n").index("x = 1  # benchmarks/bench_audit.py") + 1
    assert f"line {code_line}: a benchmark or test path" in found  # the visible code cell
    assert "bench_blackbox.py --full" not in "".join(p for p in lab_words(BROKEN) if "line 12" in p)


def test_reproduce_box_check_counts_commands() -> None:
    problems = reproduce_boxes(BROKEN)
    assert len(problems) == 1 and "found 2" in problems[0]


def test_title_check_catches_an_untitled_exercise() -> None:
    problems = untitled_exercises(BROKEN)
    untitled = BROKEN.split("\n").index("```{exercise-start}") + 1
    assert problems == [f"line {untitled}: an exercise without a title"]


def test_seconds_check_catches_a_glued_duration() -> None:
    problems = glued_seconds(BROKEN)
    assert len(problems) == 2


def test_reach_check_catches_an_unqualified_limit() -> None:
    assert len(unqualified_reach_limits(BROKEN)) == 1
    assert unqualified_reach_limits(BROKEN.replace("with probability", "on DP-Sniper's pairs with probability")) == []


# ---------------------------------------------------------------------------------------------
# The chapters
# ---------------------------------------------------------------------------------------------

CHAPTERS = chapters()


def test_chapters_are_found() -> None:
    assert {"sanity_check", "reading_audits", "stronger_audits", "blackbox_audits", "conclusion"} <= set(CHAPTERS)


@pytest.mark.parametrize("name", [c for c in CHAPTERS if c not in LAB_WORDS_PENDING])
def test_no_lab_notebook_words_in_the_prose(name: str) -> None:
    text = (BOOK / f"{name}.md").read_text()
    assert lab_words(text) + reproduce_boxes(text) == []


@pytest.mark.parametrize("name", [c for c in CHAPTERS if c not in UNTITLED_PENDING])
def test_every_exercise_has_a_title(name: str) -> None:
    assert untitled_exercises((BOOK / f"{name}.md").read_text()) == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_glued_number_of_seconds(name: str) -> None:
    assert glued_seconds((BOOK / f"{name}.md").read_text()) == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_reach_limits_name_their_pairs(name: str) -> None:
    assert unqualified_reach_limits((BOOK / f"{name}.md").read_text()) == []
