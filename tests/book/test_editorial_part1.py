"""Editorial guards of issue 34 for chapters 1-7 (Parts I and II up to DPText), read from the sources.

Each check is a function from chapter text to a list of precise problems, and each has a test that feeds
it a deliberately broken sample (the old text), so that none of them can pass vacuously:

- Part I (the chapters of _toc.yml's first part) uses nothing taught later: no ``audit_pair``, no zoo, no
  audit printouts ("event S", "95% lower bound", "numerator dataset").
- Every exercise has a title; each chapter has learning objectives, at least three exercises with dropdown
  solutions, one of them a bug hunt, and ends with its Summary, after the Exercises.
- No evidence in the prose: no path under ``tests/`` or ``benchmarks/``, no README, no commit hash, no CPU
  seconds, no history of earlier versions.
- sympy output in the book's names: composition.md maps every symbol of the composition proof, and
  dptext.md glues the book's varepsilon, not sympy's epsilon.
- Chapter 1 keeps X for datasets: no code cell names a random variable ``X``.
- The one table of the sparse vector variants (``svt-variants``) agrees with ``dptutor.zoo.svt``.
"""
from __future__ import annotations

import ast
import re

import numpy as np
import pytest
import sympy as sp
import yaml

from helpers import ROOT

BOOK = ROOT / "book"
#: The chapters this file guards, in reading order.
CHAPTERS = ("probability", "dp_primer", "laplace_mechanism", "epsilon", "composition", "selection", "inverse_cdf",
            "dptext")


def part_one() -> list[str]:
    """The chapter names of _toc.yml's first part."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [entry["file"].removeprefix("book/") for entry in toc["parts"][0]["chapters"]]


def text(name: str) -> str:
    return (BOOK / f"{name}.md").read_text()


CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


# ---------------------------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------------------------

#: What Part I may not use: the audits and the zoo are taught in Part III.
LATER = (r"audit_pair", r"dptutor\.zoo", r"\bthe zoo\b", r"zoo's", r"estimate_loss", r"event S\b",
         r"95\s?% lower bound", r"numerator dataset", r"is_violation")


def later_material(source: str) -> list[str]:
    return [f"line {source[:m.start()].count(chr(10)) + 1}: {m.group(0)!r}"
            for pattern in LATER for m in re.finditer(pattern, source)]


def exercise_problems(source: str) -> list[str]:
    """Untitled exercises, fewer than three, solutions not in dropdowns, no bug hunt."""
    problems = []
    starts = re.findall(r"^```\{exercise-start\}(.*)$", source, re.M)
    problems += [f"exercise {i + 1} has no title" for i, title in enumerate(starts) if not title.strip()]
    if len(starts) < 3:
        problems.append(f"{len(starts)} exercises, fewer than 3")
    solutions = re.findall(r"^```\{solution-start\}[^\n]*\n((?::[^\n]*\n)*)", source, re.M)
    if len(solutions) < len(starts) or not all(":class: dropdown" in opts for opts in solutions):
        problems.append("not every exercise has a dropdown solution")
    if not any(t.strip().lower().startswith("bug hunt") for t in starts):
        problems.append("no exercise titled 'Bug hunt: ...'")
    return problems


def structure_problems(source: str) -> list[str]:
    """Learning objectives first, Exercises then Summary, and the Summary the last section."""
    problems = []
    if "```{admonition} Learning objectives" not in source:
        problems.append("no learning objectives")
    sections = re.findall(r"^## (.+)$", source, re.M)
    if "Exercises" not in sections or "Summary" not in sections:
        problems.append("no Exercises or no Summary section")
    elif sections.index("Exercises") > sections.index("Summary") or sections[-1] != "Summary":
        problems.append(f"sections end {sections[-3:]}: the Summary must follow the Exercises and end the chapter")
    return problems


EVIDENCE = (r"\btests/", r"\bbenchmarks/", r"README", r"CPU[ -]second", r"earlier version", r"`[0-9a-f]{7,40}`",
            r"\bcommit\b")


def evidence(source: str) -> list[str]:
    return [f"line {source[:m.start()].count(chr(10)) + 1}: {m.group(0)!r}"
            for pattern in EVIDENCE for m in re.finditer(pattern, source)]


def composition_name_problems(source: str) -> list[str]:
    """Every free symbol of the composition proof's displayed expressions must be in the chapter's
    ``book_names`` map, and no expression of the proof may be printed with sympy's own names."""
    from dptutor.composition import sequential_composition_proof

    match = re.search(r"^book_names = (\{.*?\})$", source, re.S | re.M)
    if not match:
        return ["no book_names map"]
    names = ast.literal_eval(match.group(1))
    proof = sequential_composition_proof()
    problems = [f"sympy name {s.name!r} has no book name" for e in (proof.joint_loss, proof.bound_gap)
                for s in sorted(e.free_symbols, key=str) if s.name not in names]
    problems += [f"unmapped sympy output: {m.group(0)!r}" for m in re.finditer(r"sp\.latex\(proof\.\w+\)", source)]
    return problems


def epsilon_glue_problems(source: str) -> list[str]:
    """A glued sympy expression in epsilon renders as sympy's \\epsilon (ϵ): dptext.md must substitute a
    symbol named varepsilon before gluing the Laplace loss with b = 1/epsilon."""
    glued = re.search(r'"dptext_lap_loss_eps":\s*([^\n]*)', source)
    if not glued:
        return ["the Laplace loss with b = 1/epsilon is not glued"]
    if "varepsilon" not in glued.group(1) or 'sp.Symbol("varepsilon"' not in source:
        return [f"glued with sympy's epsilon: {glued.group(1).strip()!r}"]
    return []


def random_variable_x(source: str) -> list[str]:
    """Code cells of chapter 1 that name something X (the book's dataset)."""
    return [f"code cell assigns X: {m.group(0).strip()!r}" for cell in CODE_CELL.findall(source)
            for m in re.finditer(r"^\s*X\s*=.*$", cell, re.M)]


def svt_table_rows(source: str) -> dict[int, str]:
    """The rows of the svt-variants list-table: algorithm number -> the row's text."""
    match = re.search(r"```\{list-table\}[^\n]*\n((?::[^\n]*\n)*)(.*?)^```", source, re.S | re.M)
    if not match or ":name: svt-variants" not in match.group(1):
        return {}
    rows = re.split(r"^\* - ", match.group(2), flags=re.M)[1:]
    return {int(m.group(1)): row for row in rows if (m := re.match(r"(\d)", row))}


def svt_table_problems(source: str) -> list[str]:
    """One row per algorithm 1-6, and the cut-off and query noise of each as dptutor.zoo.svt implements it."""
    from dptutor import zoo

    rows = svt_table_rows(source)
    if sorted(rows) != [1, 2, 3, 4, 5, 6]:
        return [f"the svt-variants table has rows {sorted(rows)}, not Algorithms 1-6"]
    problems = []
    answers = np.full(6, 100.0)          # every query far above the threshold: only a cut-off stops the answers
    for algorithm in (1, 2, 4, 5, 6):
        out = zoo.svt(answers, 50, np.random.default_rng(1), epsilon=1.0, algorithm=algorithm, c=2)
        has_cut_off = bool(np.all(out[:, 2:] == -1))
        says_no_cut_off = "no cut-off" in rows[algorithm]
        if has_cut_off == says_no_cut_off:
            problems.append(f"Algorithm {algorithm}: the zoo {'has' if has_cut_off else 'has no'} cut-off, "
                            f"the table says {'no cut-off' if says_no_cut_off else 'nothing of it'}")
    near = np.full(6, 1.0)               # at the threshold: with query noise the answers vary within a run
    for algorithm in (1, 2, 4, 5, 6):
        out = zoo.svt(near, 200, np.random.default_rng(2), epsilon=1.0, algorithm=algorithm, c=6)
        noiseless = bool(np.all(out == out[:, :1]))
        says_noiseless = "no query noise" in rows[algorithm]
        if noiseless != says_noiseless:
            problems.append(f"Algorithm {algorithm}: query noise in the zoo {not noiseless}, "
                            f"the table says 'no query noise' {says_noiseless}")
    return problems


# ---------------------------------------------------------------------------------------------
# the tests: the real chapters, then each check against a broken sample
# ---------------------------------------------------------------------------------------------

def test_part_one_is_the_first_six_chapters() -> None:
    assert part_one() == list(CHAPTERS[:6])


@pytest.mark.parametrize("name", CHAPTERS[:6])
def test_part_one_uses_nothing_taught_later(name: str) -> None:
    assert not later_material(text(name))


def test_later_material_check_catches_an_audit() -> None:
    old = ("from dptutor.audit import audit_pair\n"
           "The zoo's `report_noisy_max_value` ...\nIts 95% lower bound, 0.08, stays below 0.1.\n")
    assert len(later_material(old)) == 3


@pytest.mark.parametrize("name", CHAPTERS)
def test_exercises_are_titled_with_a_bug_hunt(name: str) -> None:
    assert not exercise_problems(text(name))


def test_exercise_check_catches_an_untitled_exercise() -> None:
    old = ("```{exercise-start}\n:label: a\n```\n*(Pen and paper.)* ...\n```{exercise-end}\n```\n"
           "```{solution-start} a\n:class: dropdown\n```\n...\n```{solution-end}\n```\n")
    problems = exercise_problems(old)
    assert "exercise 1 has no title" in problems and "no exercise titled 'Bug hunt: ...'" in problems


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_structure(name: str) -> None:
    assert not structure_problems(text(name))


def test_structure_check_catches_summary_before_exercises() -> None:
    old = "```{admonition} Learning objectives\n```\n## Group privacy\n## Summary\n- ...\n## Exercises\n...\n"
    assert structure_problems(old)


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_evidence_in_the_prose(name: str) -> None:
    assert not evidence(text(name))


def test_evidence_check_catches_each_kind() -> None:
    old = ("The tests (`tests/library/test_selection.py`) repeat it. (An earlier version of this check ...) "
           "See `benchmarks/bench.py`, the README, commit `db16420`, 12 CPU seconds.")
    assert len(evidence(old)) >= 6


def test_composition_prints_the_book_names() -> None:
    assert not composition_name_problems(text("composition"))


def test_composition_name_check_catches_internal_names() -> None:
    old = ('book_names = {"delta1": "s_1", "delta2": "s_2", "w1": "w_1", "w2": "w_2", "r1": "r_1", "r2": "r_2",\n'
           '              "g1": r"\\xi_1", "g2": r"\\xi_2", "b1": "b_1", "b2": "b_2"}\n'
           'display(Math(r"..." + sp.latex(proof.joint_loss)))\n')
    problems = composition_name_problems(old)
    assert any("'f1p'" in p for p in problems) and any("unmapped" in p for p in problems)


def test_dptext_glues_the_books_epsilon() -> None:
    assert sp.latex(sp.Symbol("varepsilon")) == r"\varepsilon" != sp.latex(sp.Symbol("epsilon"))
    assert not epsilon_glue_problems(text("dptext"))


def test_epsilon_check_catches_sympys_epsilon() -> None:
    old = '    "dptext_lap_loss_eps": th32.laplace_loss_with_b_1_over_eps,\n'
    assert epsilon_glue_problems(old)


def test_chapter_one_keeps_x_for_datasets() -> None:
    assert not random_variable_x(text("probability"))


def test_random_variable_check_catches_x() -> None:
    old = '```{code-cell} ipython3\nX = {s: s.count("H") for s in S}\npmf = Counter()\n```\n'
    assert random_variable_x(old)


def test_svt_table_agrees_with_the_zoo() -> None:
    assert not svt_table_problems(text("selection"))


def test_svt_table_check_catches_a_disagreement() -> None:
    good = text("selection")
    assert "line 2: no query noise, $\\nu_i = 0$; line 3: no cut-off" in good
    old = good.replace("line 2: no query noise, $\\nu_i = 0$; line 3: no cut-off", "line 2: no query noise, $\\nu_i = 0$")
    assert any(p.startswith("Algorithm 5") for p in svt_table_problems(old))
    assert svt_table_problems(good.replace(":name: svt-variants", ":name: other")) != []
