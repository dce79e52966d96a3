"""Editorial guards for three Part III chapters (issue 34): The bits matter, Approximate DP, Accounting.

Source-level checks only (they read the ``.md`` files; no book build). Each check is a function that returns a
list of precise problems, and each has a test that feeds it a deliberately broken sample, so that none of them
can pass vacuously:

- chapter shape: learning objectives first, at least three exercises, every exercise titled and solved in a
  dropdown, one of them a bug hunt, Exercises before Summary and Summary last;
- no lab-notebook evidence in the prose (commit hashes, dates, CPU seconds, benchmark or test paths, README,
  machine descriptions, history), except inside a folded "Reproduce this" box;
- no wording that makes exactness depend on float functions ("floats never decide ...");
- one glued value for advanced composition's crossing, computed on every integer k (not on the figure's grid);
- a section heading that counts the fixes agrees with the mechanisms its cell audits;
- the numbers an alt text states for the accounting figures agree with the values the library computes.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from helpers import figure_cells

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
CHAPTERS = ("floating_point", "approximate_dp", "accounting")


def source(name: str) -> str:
    return (BOOK / f"{name}.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Prose: the text outside code cells, fenced blocks and "Reproduce this" boxes
# ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the Markdown prose: code cells, code blocks, "Reproduce this" dropdowns and
    figure options are left out; directive bodies such as proofs and exercises are kept, and so are the captions
    of figure cells (code cells with ``mystnb`` figure metadata; numbered from the cell's first line)."""
    out: list[tuple[int, str]] = []
    stack: list[tuple[str, bool]] = []   # (fence, skipped?)
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line.strip())
        if match:
            fence, info = match.group(1), match.group(2).strip()
            if stack and fence == stack[-1][0] and not info:
                stack.pop()
                continue
            if info:
                skip = (not info.startswith("{") or info.startswith("{code-cell")
                        or (info.startswith("{dropdown}") and "Reproduce this" in info))
                stack.append((fence, skip or any(s for _, s in stack)))
                continue
        if any(s for _, s in stack) or line.startswith(":"):
            continue
        out.append((number, line))
    for cell in figure_cells(text):
        out += [(cell.line + i, line) for i, line in enumerate(cell.caption.splitlines(), 1)]
    return sorted(out)


EVIDENCE = {
    "commit hash": re.compile(r"(?<![\w.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w.])"),
    "date": re.compile(r"\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|November|"
                       r"December) \d{4}\b|\b20\d\d-\d\d-\d\d\b"),
    "CPU seconds": re.compile(r"CPU[ -]seconds?", re.I),
    "benchmark path": re.compile(r"benchmarks/"),
    "test path": re.compile(r"\btests/|\btest_\w+\.py"),
    "README": re.compile(r"README"),
    "machine": re.compile(r"\b\d+-core\b|other jobs ran", re.I),
    "history": re.compile(r"\ban earlier version\b", re.I),
    "script flag": re.compile(r"(?<![\w-])--[a-z][a-z-]+"),
}


def evidence_problems(text: str) -> list[str]:
    problems = []
    for number, line in prose_lines(text):
        for kind, pattern in EVIDENCE.items():
            if pattern.search(line):
                problems.append(f"line {number}: {kind} in prose: {line.strip()[:80]}")
    return problems


FLOAT_DECIDES = re.compile(r"floats never decide|never what the answer is|no step's answer depends on a rounding"
                           r"|exact (only )?if numpy's `?log", re.I)


def float_wording_problems(text: str) -> list[str]:
    return [f"line {n}: exactness made to depend on float functions: {line.strip()[:80]}"
            for n, line in prose_lines(text) if FLOAT_DECIDES.search(line)]


# ---------------------------------------------------------------------------------------------
# Chapter shape
# ---------------------------------------------------------------------------------------------

_EXERCISE = re.compile(r"^```\{exercise-start\}(.*)$\n:label: (\S+)", re.M)


def shape_problems(text: str) -> list[str]:
    problems = []
    body = text.split("\n---\n", 1)[-1] if text.startswith("---") else text
    first_admonition = body.find("```{admonition}")
    if first_admonition == -1 or "Learning objectives" not in body[first_admonition:first_admonition + 80]:
        problems.append("no learning objectives admonition")
    elif body.find("\n## ") != -1 and body.find("\n## ") < first_admonition:
        problems.append("learning objectives do not open the chapter")
    exercises = _EXERCISE.findall(text)
    if len(exercises) < 3:
        problems.append(f"{len(exercises)} exercises, at least 3 wanted")
    for title, label in exercises:
        if not title.strip():
            problems.append(f"exercise {label} has no title")
        solution = re.search(r"^```\{solution-start\} " + re.escape(label) + r"\n:class: dropdown$", text, re.M)
        if not solution:
            problems.append(f"exercise {label} has no dropdown solution")
    if not any(title.strip().lower().startswith("bug hunt") for title, _ in exercises):
        problems.append("no bug-hunt exercise")
    headings = re.findall(r"^## (.+)$", text, re.M)
    if "Exercises" not in headings or "Summary" not in headings:
        problems.append("missing Exercises or Summary section")
    elif headings.index("Exercises") > headings.index("Summary") or headings[-1] != "Summary":
        problems.append(f"sections end {headings[-2:]}, want Exercises then Summary last")
    return problems


# ---------------------------------------------------------------------------------------------
# Specific consistency checks
# ---------------------------------------------------------------------------------------------

def crossing_problems(text: str) -> list[str]:
    """Advanced composition's crossing: computed on every integer k, stated only through its glue."""
    problems = []
    cell = re.search(r"^cross = (.*)$", text, re.M)
    if not cell:
        return ["no `cross = ...` line computing the crossing"]
    if re.search(r"\bks\b|geomspace", cell.group(1)):
        problems.append("the crossing is computed on the figure's geometric grid, not on every integer k")
    mentions = [(n, line) for n, line in prose_lines(text)
                if re.search(r"beats the sum|crossing is", line) and re.search(r"k =|acc_cross", line)]
    if len(mentions) < 2:
        problems.append(f"the crossing is stated {len(mentions)} times; the section and the exercise should both")
    for n, line in mentions:
        if re.search(r"\$k =\$? ?\d|k = \d", line):
            problems.append(f"line {n}: the crossing restated by hand: {line.strip()[:80]}")
    if not all("acc_cross" in "\n".join(text.splitlines()[n - 1:n + 2]) for n, _ in mentions):
        problems.append("a statement of the crossing does not use the glued value acc_cross")
    return problems


_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5}


def fixes_problems(text: str) -> list[str]:
    """The heading 'The <n> fixes under the paper's attack' and the mechanisms its code cell audits."""
    heading = re.search(r"^### The (\w+) fixes under the paper's attack\n+```\{code-cell\}[^\n]*\n(.*?)^```",
                        text, re.M | re.S)
    if not heading:
        return ["no section 'The <n> fixes under the paper's attack' followed by its code cell"]
    announced = _NUMBER_WORDS.get(heading.group(1).lower())
    fixes = re.search(r"fixes = \{(.*?)\}", heading.group(2), re.S)
    audited = len(re.findall(r'"[^"]+":', fixes.group(1))) if fixes else 0
    if announced != audited:
        return [f"the heading announces {heading.group(1)} fixes, the cell audits {audited}"]
    return []


def alt_text(text: str, name: str) -> str:
    """The alt text of the figure ``name``: a figure cell's ``mystnb: image: alt`` or a directive's ``:alt:``."""
    for cell in figure_cells(text):
        if cell.name == name:
            return cell.alt
    match = re.search(r"^:name: " + re.escape(name) + r"\n:alt: (.*)$", text, re.M)
    return match.group(1) if match else ""


def alt_pairs(alt: str) -> list[tuple[float, int]]:
    """The (value, steps) pairs an alt text states as 'about <value> at <steps>'."""
    return [(float(v.replace(",", "")), int(k)) for v, k in re.findall(r"about ([\d.,]*\d) at (\d+)", alt)]


def alt_problems(alt: str, computed: dict[int, float], rel: float = 0.1) -> list[str]:
    pairs = alt_pairs(alt)
    if len(pairs) < 2:
        return [f"alt text states {len(pairs)} 'about <value> at <steps>' numbers: {alt[:60]}"]
    return [f"alt text says about {v} at {k}, the library computes {computed[k]:.4g}"
            for v, k in pairs if k not in computed or abs(v - computed[k]) > rel * computed[k]]


# ---------------------------------------------------------------------------------------------
# The checks on the chapters
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_shape(name):
    assert shape_problems(source(name)) == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_lab_notebook_evidence_in_prose(name):
    assert evidence_problems(source(name)) == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_exactness_does_not_rest_on_float_functions(name):
    assert float_wording_problems(source(name)) == []


def test_advanced_composition_crossing_is_one_glued_value():
    assert crossing_problems(source("accounting")) == []


def test_fixes_heading_counts_what_it_audits():
    assert fixes_problems(source("floating_point")) == []


def test_dpsgd_alt_text_agrees_with_rdp_accountant():
    from dptutor.accounting import gaussian_composition_epsilon
    alt = alt_text(source("accounting"), "fig-acc-dpsgd")
    computed = {k: gaussian_composition_epsilon(1.0, k, 1e-5, sampling_probability=0.01, method="rdp")
                for _, k in alt_pairs(alt)}
    assert alt_problems(alt, computed) == []
    assert "thick" not in alt   # the 100-step interval is 0.01 high: nothing about it is thick


def test_amplification_alt_text_agrees_with_amplified_composition():
    from dptutor.accounting import optimal_composition_epsilon
    from dptutor.amplification import subsampled_delta, subsampled_epsilon
    from dptutor.mechanisms import gaussian_delta
    alt = alt_text(source("accounting"), "fig-acc-amplification")

    def amplified(k):   # the chapter's accountant: each step's (eps0, delta0), amplified, composed optimally
        best = math.inf
        for e0 in np.linspace(0.25, 8.0, 32):
            d1 = subsampled_delta(gaussian_delta(float(e0), 1.0), 0.01)
            if k * d1 < 1e-5:
                best = min(best, optimal_composition_epsilon(subsampled_epsilon(float(e0), 0.01), k, 1e-5, d1))
        return best

    computed = {k: amplified(k) for _, k in alt_pairs(alt)}
    assert alt_problems(alt, computed) == []


# ---------------------------------------------------------------------------------------------
# Each check catches what it is meant to catch
# ---------------------------------------------------------------------------------------------

def _exercise(title: str, label: str) -> str:
    return (f"```{{exercise-start}} {title}\n:label: {label}\n```\n```{{exercise-end}}\n```\n"
            f"```{{solution-start}} {label}\n:class: dropdown\n```\n```{{solution-end}}\n```\n")


GOOD_SHAPE = ("# T\n\n```{admonition} Learning objectives\n:class: tip\n- a\n```\n\n## Body\n\n## Exercises\n\n"
              + "".join(_exercise(t, lab) for t, lab in (("One (code)", "ex-a"), ("Two (code)", "ex-b"),
                                                          ("Bug hunt: three", "ex-c")))
              + "\n## Summary\n")


def test_shape_check_accepts_good_and_catches_each_fault():
    assert shape_problems(GOOD_SHAPE) == []
    untitled = GOOD_SHAPE.replace("```{exercise-start} Two (code)", "```{exercise-start}")
    assert any("ex-b has no title" in p for p in shape_problems(untitled))
    no_bug = GOOD_SHAPE.replace("Bug hunt: three", "Three")
    assert any("bug-hunt" in p for p in shape_problems(no_bug))
    swapped = GOOD_SHAPE.replace("## Exercises", "## X").replace("## Summary", "## Exercises").replace("## X", "## Summary")
    assert any("Exercises then Summary" in p for p in shape_problems(swapped))
    unfolded = GOOD_SHAPE.replace("```{solution-start} ex-a\n:class: dropdown", "```{solution-start} ex-a")
    assert any("ex-a has no dropdown" in p for p in shape_problems(unfolded))
    assert any("learning objectives" in p for p in shape_problems(GOOD_SHAPE.replace("Learning objectives", "Goals")))


def test_evidence_check_catches_each_kind_and_spares_reproduce_boxes():
    bad = ["At commit db16420 the sampler", "on 24 November 2026 we ran", "it took 12 CPU seconds",
           "run benchmarks/bench_exact.py", "see tests/library/test_exact.py", "the README lists", "on the 2-core machine",
           "an earlier version of this check", "pass --ceiling to it"]
    for line in bad:
        assert evidence_problems(f"Text.\n\n{line}.\n"), line
    box = "Text.\n\n````{dropdown} Reproduce this\n```console\n$ python benchmarks/x.py --n 10\n```\nSee the README.\n````\n"
    assert evidence_problems(box) == []
    code = "```{code-cell} ipython3\nprint(float.hex(0.1))  # 0x1.999999999999ap-4, benchmarks/\n```\n"
    assert evidence_problems(code) == []
    assert evidence_problems("The value 2^{-1074} and the scale 1e-5 are fine, as is 0.31092821216278.\n") == []
    figure = ("```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    name: fig-x\n    caption: |\n"
              "      Samples drawn WHEN.\n---\nfig\n```\n")
    assert evidence_problems(figure.replace("WHEN", "on 24 November 2026"))
    assert not evidence_problems(figure.replace("WHEN", "once"))


def test_float_wording_check_catches_the_old_claim():
    assert float_wording_problems("The floats decide how many bits are read, never what the answer is.\n")
    assert float_wording_problems("Floats propose, exact arithmetic decides.\n") == []


def test_crossing_check_catches_grid_and_hand_restatement():
    good = ("```{code-cell} ipython3\ncross = next(k for k in itertools.count(1) if f(k) < k * e)\n```\n\n"
            "It only beats the sum from $k =$ {glue:text}`acc_cross` on.\n\nAt 0.1 the crossing is "
            "{glue:text}`acc_cross`.\n")
    assert crossing_problems(good) == []
    assert any("geometric grid" in p for p in crossing_problems(good.replace("itertools.count(1)", "ks")))
    by_hand = good.replace("At 0.1 the crossing is {glue:text}`acc_cross`.", "At 0.1 the crossing is k = 35.")
    assert any("by hand" in p for p in crossing_problems(by_hand))


def test_fixes_check_catches_a_miscount():
    text = ("### The three fixes under the paper's attack\n\n```{code-cell} ipython3\n"
            'fixes = {"granular Laplace": g, "snapping": s}\n```\n')
    assert fixes_problems(text) == ["the heading announces three fixes, the cell audits 2"]
    assert fixes_problems(text.replace("three", "two")) == []


def test_alt_check_catches_a_wrong_number():
    alt = "The line rises from about 1.1 at 10 steps to about 3.5 at 3000."
    assert alt_problems(alt, {10: 1.064, 3000: 3.512}) == []
    assert alt_problems(alt.replace("3.5", "4.5"), {10: 1.064, 3000: 3.512})
    assert alt_problems("A line.", {})


def test_alt_text_is_read_from_a_figure_cell_and_from_a_directive():
    cell = ("```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    name: fig-a\n  image:\n    alt: >-\n"
            "      About 1.1 at 10.\n---\nfig\n```\n")
    directive = "```{glue:figure} fig_b\n:name: fig-b\n:alt: About 2 at 3.\n\nCaption.\n```\n"
    assert alt_text(cell + directive, "fig-a") == "About 1.1 at 10."
    assert alt_text(cell + directive, "fig-b") == "About 2 at 3."
    assert alt_text(cell, "fig-c") == ""
