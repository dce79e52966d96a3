"""Per-check weights and error carried forward in the grading configuration (issue 25).

Weights: a question's checks are named (``Question.checks``); ``[weights.qN]`` weighs them, the
scores CSV keeps every check's outcome and the weights, and a row is scored from them.  Error carried
forward: ``mechanism`` question 2 is judged against the student's own sensitivity when
``carry_forward = true``; the other assignments refuse it and say why.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT
from dptutor.assignments import check, get_assignment
from dptutor.course.config import load_config
from dptutor.assignments.feedback import UNSCORED, Finding, score
from dptutor.course.remote import grade_in_process
from dptutor.course.result import SubmissionResult
from dptutor.course.scores import ScoreRecord, read_scores, write_scores
from test_course_grading import run_cli, sandbox_flags, table

MECHANISM = get_assignment("mechanism")
SAMPLER = get_assignment("sampler")


def _mechanism(sensitivity, scale_of):
    """A student's two functions: ``mean_sensitivity`` and a ``private_mean`` with noise scale
    ``scale_of(m, k, epsilon)`` that refuses every input outside the proof."""

    def private_mean(X, epsilon, *, rng):
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[0] < 1 or not math.isfinite(epsilon) or epsilon <= 0 \
                or not np.isfinite(X).all() or (X < 0).any() or (X > 1).any():
            raise ValueError("outside the proof")
        m, k = X.shape
        return X.mean(axis=0) + rng.laplace(0.0, scale_of(m, k, epsilon), size=k)

    return sensitivity, private_mean


def test_score_weighs_named_checks_and_skips_unscored_notes() -> None:
    findings = [Finding(True, "a", "shape"), Finding(False, "b", "loop"), Finding(True, "c", "scalar"),
                Finding(False, "for the instructor", UNSCORED)]
    assert score(findings, 1.0) == 0.67                                  # the note does not count
    assert score(findings, 1.0, {"loop": 4.0}) == round(2 / 6, 2)        # 1 + 1 passed of 1 + 4 + 1
    assert score(findings, 1.0, {"shape": 0.0, "scalar": 0.0}) == 0.0    # only the failed check weighs
    assert score(findings, 1.0, {"shape": 0.0, "scalar": 0.0, "loop": 0.0}) == 0.0
    with pytest.raises(TypeError, match="check"):
        Finding(True, "x", "not a name")
    with pytest.raises(ValueError, match="weights"):
        score(findings, 1.0, {"loop": -1.0})


def test_every_finding_of_the_named_questions_names_a_declared_check() -> None:
    sensitivity, private_mean = _mechanism(lambda m, k: k / m, lambda m, k, eps: k / (m * eps))
    for q, obj in (("q1", sensitivity), ("q2", private_mean), ("q3", private_mean)):
        for grading_seed in (None, 5):
            fb = check("mechanism", q, obj, grading_seed=grading_seed)
            assert fb.score == MECHANISM.question(q).points, fb.report()
            assert [f.check for f in fb.findings] and all(f.check in MECHANISM.question(q).checks for f in fb.findings)
    slow = lambda u, mu, b: np.array([mu - b * np.sign(x - 0.5) * math.log1p(-2 * abs(x - 0.5)) for x in np.ravel(u)]
                                     ).reshape(np.shape(u))[()]  # noqa: E731 -- a Python loop
    fb = check("sampler", "q3", slow)
    assert {f.check for f in fb.findings} <= set(SAMPLER.question("q3").checks)
    assert [f.check for f in fb.findings if f.passed is False] == ["loop"]


def test_the_configuration_validates_weights_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "grading.toml"
    path.write_text('[weights.q3]\nshape = 2\nepsilon_inf = 3\n[weights.q1]\nrandom_sizes = 0.5\n')
    assert load_config(path, MECHANISM).weights == {"q3": {"shape": 2.0, "epsilon_inf": 3.0},
                                                    "q1": {"random_sizes": 0.5}}
    for text, key in (('[weights.q3]\nshap = 1\n', r"weights\.q3\.shap .*epsilon_inf"),
                      ('[weights.q9]\nshape = 1\n', r"weights\.q9"),
                      ('[weights.q3]\nshape = -1\n', r"weights\.q3\.shape"),
                      ('[weights.q3]\nshape = "2"\n', r"weights\.q3\.shape"),
                      ('[weights.q2]\none_call = 0\nacross_calls = 0\n', r"weights\.q2: .* not all be 0"),
                      ('weights = 3\n', r"weights must be a table")):
        path.write_text(text)
        with pytest.raises((ValueError, TypeError), match=key):
            load_config(path, MECHANISM)
    # A question with a single, unnamed check cannot be weighted; the others name theirs.
    path.write_text('[weights.q3]\ndiagnosis = 2\n')
    with pytest.raises(ValueError, match=r"weights\.q3: .*does not name its checks"):
        load_config(path, get_assignment("audit"))
    for name, text, expected in (("audit", '[weights.q2]\nverdict = 2\nsame_dimension = 0\n',
                                  {"q2": {"verdict": 2.0, "same_dimension": 0.0}}),
                                 ("pair_audit", '[weights.q1]\nform = 0\n', {"q1": {"form": 0.0}}),
                                 ("selection", '[weights.q3]\nlaw = 2\n', {"q3": {"law": 2.0}})):
        path.write_text(text)
        assert load_config(path, get_assignment(name)).weights == expected
        path.write_text('[weights.q1]\nloop = 1\n')
        with pytest.raises(ValueError, match=r"weights\.q1\.loop"):
            load_config(path, get_assignment(name))


def test_a_row_is_scored_from_its_recorded_checks_and_round_trips(tmp_path: Path) -> None:
    outcomes = [[c, c != "epsilon_inf"] for c in MECHANISM.question("q3").checks]
    result = SubmissionResult("alice.ipynb", "mechanism", {"q1": 1.0, "q2": 2.0, "q3": round(11 / 12, 2)},
                              {"q1": 1.0, "q2": 2.0, "q3": 1.0}, {"q3": ["epsilon = inf"]},
                              grading_seeds={"q1": 5, "q2": 6, "q3": 7}, checks={"q3": outcomes})
    plain = ScoreRecord(result)
    weighted = ScoreRecord(result, points={"q3": 2.0}, weights={"q3": {"epsilon_inf": 3.0}})
    assert plain.final_scores()["q3"] == 0.92
    assert weighted.final_scores()["q3"] == round(2.0 * 11 / 14, 2) and weighted.total == round(3 + 2.0 * 11 / 14, 2)
    csv_path = tmp_path / "scores-mechanism.csv"
    write_scores(csv_path, MECHANISM, [weighted])
    (back,) = read_scores(csv_path, MECHANISM)
    assert back == weighted
    record = json.loads(table(csv_path)["alice.ipynb"]["record"])
    assert record["weights"] == {"q3": {"epsilon_inf": 3.0}} and record["checks"]["q3"] == outcomes
    assert record["carry_forward"] is False


def test_carry_forward_judges_question_2_with_the_students_own_sensitivity() -> None:
    wrong = lambda m, k: 1 / m  # noqa: E731 -- one coordinate's change: the commonest slip
    consistent = _mechanism(wrong, lambda m, k, eps: 1 / (m * eps))       # uses its own (wrong) sensitivity
    right_anyway = _mechanism(wrong, lambda m, k, eps: k / (m * eps))     # q1 wrong, the mechanism right
    other = _mechanism(wrong, lambda m, k, eps: 2 * k / (m * eps))        # wrong in q2 in another way
    for grading_seed in (None, 11):
        sens, pm = consistent
        assert check("mechanism", "q2", pm, grading_seed=grading_seed).score == 0
        fb = check("mechanism", "q2", pm, grading_seed=grading_seed, carried={"mean_sensitivity": sens})
        assert fb.score == 2 and all("error carried forward" in f.message for f in fb.findings), fb.report()
        assert fb.messages == ["note (not scored): error carried forward: question 2 was judged with your own "
                               "mean_sensitivity, which question 1 grades"]
        sens, pm = right_anyway
        fb = check("mechanism", "q2", pm, grading_seed=grading_seed, carried={"mean_sensitivity": sens})
        assert fb.score == 2 and not any("carried" in f.message for f in fb.findings)
        sens, pm = other
        assert check("mechanism", "q2", pm, grading_seed=grading_seed, carried={"mean_sensitivity": sens}).score == 0
    with pytest.raises(ValueError, match="carried"):
        check("mechanism", "q3", consistent[1], carried={"mean_sensitivity": wrong})
    with pytest.raises(ValueError, match="carried"):
        check("mechanism", "q2", consistent[1], carried={"private_mean": wrong})


def test_every_assignment_without_carry_forward_says_why(tmp_path: Path) -> None:
    path = tmp_path / "grading.toml"
    path.write_text("carry_forward = true\n")
    assert load_config(path, MECHANISM).carry_forward
    for name in ("sampler", "audit", "pair_audit", "selection"):
        a = get_assignment(name)
        assert not a.carry_forward and a.independent
        with pytest.raises(ValueError, match=f"carry_forward: assignment '{name}' has no error to carry forward: "):
            load_config(path, a)
        with pytest.raises(ValueError, match=f"carry_forward: assignment '{name}' .*{a.independent[:20]}"):
            grade_in_process({}, name, carry_forward=True)  # refused before anything runs


def test_the_grader_applies_weights_and_carry_forward_and_refuses_to_mix(tmp_path: Path) -> None:
    """``grade --config`` end to end on a notebook whose one wrong sensitivity feeds question 2."""
    solution = (ROOT / "book" / "assignments" / "instructor" / "mechanism.md").read_text(encoding="utf-8")
    wrong = solution.replace("    return k / m\n", "    return 1 / m\n", 1)  # private_mean calls it
    assert "    return 1 / m\n" in wrong and "b = mean_sensitivity(m, k) / epsilon" in wrong
    subs = tmp_path / "submissions"
    subs.mkdir()
    (subs / "dana.md").write_text(wrong, encoding="utf-8")
    (tmp_path / "ecf.toml").write_text('carry_forward = true\n[weights.q3]\nepsilon_inf = 3\n')
    proc = run_cli("grade", "mechanism", "submissions", "--config", "ecf.toml", *sandbox_flags(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = table(tmp_path / "scores-mechanism.csv")["dana.md"]
    assert (row["q1"], row["q2"], row["q3"]) == ("0.25", "2", "1"), row
    assert "error carried forward" in row["messages"]
    record = json.loads(row["record"])
    assert record["carry_forward"] is True and record["weights"] == {"q3": {"epsilon_inf": 3.0}}
    assert [c for c, _ in record["checks"]["q3"]] == list(MECHANISM.question("q3").checks)
    # Without error carried forward the same file would mix two gradings: refused, with the way out.
    (tmp_path / "plain.toml").write_text('carry_forward = false\n')
    proc = run_cli("grade", "mechanism", "submissions", "--config", "plain.toml", *sandbox_flags(), cwd=tmp_path)
    assert proc.returncode != 0 and "--regrade" in proc.stderr and "carry_forward" in proc.stderr
