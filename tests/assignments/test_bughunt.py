"""The ``bughunt`` assignment: its family of buggy mechanisms, its checks, and its grading in the sandbox.

The reference solution (the instructor notebook) and the blank student notebook are graded by the real
grader in a sandbox; typical wrong answers are graded in this process in a grading run.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from helpers import ASSIGNMENT_DIR, INSTRUCTOR_DIR
from test_grading import answers, run_notebook_code
from dptutor.assignments import ASSIGNMENTS, check, use_self_study
from dptutor.assignments.feedback import TEST_GRADING_SEED
from dptutor.assignments import bughunt
from dptutor.assignments.bug_family import HUNT_BUGS, HUNT_LABELS, BughuntMember, hunt_release
from dptutor.assignments.instances import COURSE_FAMILIES, FAMILIES, SELF_STUDY, answers_scope


@pytest.fixture(scope="module")
def reference() -> dict:
    use_self_study()  # the answers below are the self-study member's
    return run_notebook_code(INSTRUCTOR_DIR / "bughunt.md", feedback_cells=False)


def score(question: str, namespace: dict, grading_seed: int | None = TEST_GRADING_SEED) -> float:
    return check("bughunt", question, *answers("bughunt", question, namespace), grading_seed=grading_seed).score


# ---------------------------------------------------------------------------------------------
# the family
# ---------------------------------------------------------------------------------------------


def test_the_family_has_every_combination_with_a_bug_and_the_self_study_member_is_not_drawn() -> None:
    members = FAMILIES["bughunt"]
    assert len(members) == len(set(members)) == 3 * 4 * 3 - 1
    assert all(any(m.bug(label) != "none" for label in HUNT_LABELS) for m in members)
    assert SELF_STUDY["bughunt"] in members and SELF_STUDY["bughunt"] not in COURSE_FAMILIES["bughunt"]


def test_true_epsilons_follow_the_calibration() -> None:
    claim = bughunt.HUNT_EPSILON
    expected = {"none": 1.0, "ignores-epsilon": 1.0 / claim, "half-sensitivity": 2.0, "wrong-bound": 9.0}
    for label, bugs in HUNT_BUGS.items():
        for bug in bugs:
            member = BughuntMember(**{**{lab: "none" for lab in HUNT_LABELS}, label: bug})
            assert member.true_epsilon(label) == pytest.approx(claim * expected[bug])
            assert member.verdict(label) == ("no evidence" if bug == "none" else "broken")


def test_errors_and_generator_calls_do_not_depend_on_the_member() -> None:
    members = FAMILIES["bughunt"][:6]
    for label, bad in (("histogram", [1.5]), ("squares", []), ("selection", [1.0])):
        messages = set()
        for member in members:
            with pytest.raises(ValueError) as info:
                hunt_release(member, label, bad, 3, np.random.default_rng(0))
            messages.add(str(info.value))
        assert len(messages) == 1, messages
    for label, data in (("histogram", [3, 1]), ("squares", [2.0]), ("selection", [0.0, 1.0, 2.0])):
        states = set()
        for member in members:
            rng = np.random.default_rng(5)
            hunt_release(member, label, data, 100, rng)
            states.add(str(rng.bit_generator.state))
        assert len(states) == 1


def test_evidence_must_be_a_pair_of_neighbours() -> None:
    good = {"x": [2.0], "x_prime": [2.0, 3.0], "trials": 50_000, "seed": 1}
    assert bughunt.hunt_audit("squares", good).trials == 50_000
    for bad in ({**good, "x_prime": [2.0, 3.0, 3.0]}, {**good, "x_prime": [1.0, 3.0]}, {**good, "trials": 10},
                {**good, "seed": -1}):
        with pytest.raises(ValueError, match="spec"):
            bughunt.hunt_audit("squares", bad)
    with pytest.raises(ValueError, match="one bin"):
        bughunt.hunt_audit("histogram", {"x": [3, 1], "x_prime": [4, 2], "trials": 50_000, "seed": 1})
    with pytest.raises(ValueError, match="at most 4"):
        bughunt.hunt_audit("selection", {"x": [0, 0], "x_prime": [0, 5], "trials": 50_000, "seed": 1})


# ---------------------------------------------------------------------------------------------
# the reference solution finds every bug of the family
# ---------------------------------------------------------------------------------------------

#: Four members that, between them, give each mechanism each of its bugs.
COVER = (BughuntMember("ignores-epsilon", "wrong-bound", "ignores-epsilon"),
         BughuntMember("half-sensitivity", "ignores-epsilon", "half-sensitivity"),
         BughuntMember("none", "half-sensitivity", "none"),
         BughuntMember("ignores-epsilon", "none", "half-sensitivity"))


def test_the_cover_covers_every_bug() -> None:
    assert {(label, m.bug(label)) for m in COVER for label in HUNT_LABELS} == {
        (label, bug) for label, bugs in HUNT_BUGS.items() for bug in bugs}


@pytest.mark.parametrize("member", COVER, ids=lambda m: "-".join(dataclasses.astuple(m)))
def test_the_reference_solution_solves_every_member(member: BughuntMember) -> None:
    with answers_scope({"bughunt": member}):
        ns = run_notebook_code(INSTRUCTOR_DIR / "bughunt.md", feedback_cells=False)
        assert ns["verdicts"] == {label: member.verdict(label) for label in HUNT_LABELS}
        assert ns["diagnoses"] == {label: member.bug(label) for label in HUNT_LABELS}
        for q in ("q1", "q2", "q3"):
            assert score(q, ns) == 2.0


# ---------------------------------------------------------------------------------------------
# typical wrong answers
# ---------------------------------------------------------------------------------------------


def with_answer(reference: dict, label: str, verdict: str, diagnosis: str) -> dict:
    """The reference answers with another verdict and diagnosis on mechanism ``label``."""
    return dict(reference, verdicts={**reference["verdicts"], label: verdict},
                diagnoses={**reference["diagnoses"], label: diagnosis})


def test_a_wrong_verdict_on_the_broken_mechanism_costs_the_verdict_diagnosis_and_agreement(reference: dict) -> None:
    assert SELF_STUDY["bughunt"].bug("squares") == "wrong-bound"
    ns = with_answer(reference, "squares", "no evidence", "none")
    fb = check("bughunt", "q2", *answers("bughunt", "q2", ns), grading_seed=TEST_GRADING_SEED)
    assert fb.score == 0.5, fb.report()
    assert {f.check for f in fb.findings if f.passed is False} == {"verdict", "diagnosis", "agreement"}
    # The same wrong verdict with evidence that does not show the bug (a value added at the lower bound).
    weak = {"x": [2.0], "x_prime": [2.0, 1.0], "trials": 50_000, "seed": 0}
    ns["evidence"] = {**reference["evidence"], "squares": weak}
    assert score("q2", ns) == 0.5
    # The other questions keep their points.
    assert score("q1", ns) == score("q3", ns) == 2.0


def test_a_verdict_broken_on_a_correct_mechanism_loses_its_points(reference: dict) -> None:
    assert SELF_STUDY["bughunt"].bug("histogram") == "none"
    ns = with_answer(reference, "histogram", "broken", "ignores-epsilon")
    fb = check("bughunt", "q1", *answers("bughunt", "q1", ns), grading_seed=TEST_GRADING_SEED)
    assert fb.score == 0.5, fb.report()
    assert "shows no violation" in fb.report()


def test_the_right_verdict_with_the_wrong_bug_loses_the_diagnosis(reference: dict) -> None:
    ns = dict(reference, diagnoses={**reference["diagnoses"], "selection": "ignores-epsilon"})
    fb = check("bughunt", "q3", *answers("bughunt", "q3", ns), grading_seed=TEST_GRADING_SEED)
    assert fb.score == 1.5 and [f.check for f in fb.findings if f.passed is False] == ["diagnosis"], fb.report()


def test_evidence_on_datasets_that_are_not_neighbours_supports_nothing(reference: dict) -> None:
    far = {"x": [1.0], "x_prime": [1.0, 3.0, 3.0], "trials": 50_000, "seed": 0}
    ns = dict(reference, evidence={**reference["evidence"], "squares": far})
    fb = check("bughunt", "q2", *answers("bughunt", "q2", ns), grading_seed=TEST_GRADING_SEED)
    assert fb.score == 1.0 and "not neighbours" in fb.report(), fb.report()


@pytest.mark.parametrize("sensitivity, points", [
    (lambda lo, hi: max(abs(lo), abs(hi)) ** 2, 2.0),
    (lambda lo, hi: abs(lo) ** 2, 1.0),         # the bug itself: right only when |lo| > |hi|
    (lambda lo, hi: hi ** 2, 1.0),              # forgets negative bounds
    (lambda lo, hi: (hi - lo) ** 2, 0.0),       # the width, not the largest value
], ids=["right", "lower-bound", "upper-bound", "width"])
def test_the_fix_is_tested_for_its_law_on_grading_bounds(sensitivity, points: float) -> None:
    def fixed_squares(data, size, rng, *, epsilon, bounds):
        lo, hi = bounds
        return np.sum(np.clip(np.asarray(data, float), lo, hi) ** 2) + rng.laplace(0, sensitivity(lo, hi) / epsilon,
                                                                                  size)

    for grading_seed in (TEST_GRADING_SEED, 7, 123456789):
        fb = check("bughunt", "q4", fixed_squares, grading_seed=grading_seed)
        assert fb.score == points, fb.report()


def test_grading_parameters_change_with_the_submission() -> None:
    cases = [bughunt._fix_cases(seed) for seed in (2, 3)]
    assert cases[0][0][0] != cases[1][0][0] and cases[0][1][1] != cases[1][1][1]
    assert bughunt._fix_cases(None)[0][:2] != bughunt._fix_cases(0)[0][:2]


# ---------------------------------------------------------------------------------------------
# the real grader, in the sandbox
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("folder, total", [(INSTRUCTOR_DIR, 8.0), (ASSIGNMENT_DIR, 0.0)], ids=["reference", "blank"])
def test_graded_in_the_sandbox(folder, total: float) -> None:
    from dptutor.course.executor import grade_notebook

    result = grade_notebook(folder / "bughunt.md", "bughunt", timeout=60, total_timeout=300)
    assert ASSIGNMENTS["bughunt"].points == 8.0
    assert result.total == total, result.feedback_text()
    if total == 0:
        assert "not answered yet" in result.feedback_text() and "not implemented yet" in result.feedback_text()


def test_a_replay_that_runs_too_long_is_stopped(reference: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bughunt, "HUNT_REPLAY_SECONDS", -1.0)
    fb = check("bughunt", "q2", *answers("bughunt", "q2", reference), grading_seed=TEST_GRADING_SEED)
    assert fb.score == 1.0 and "longer than" in fb.report(), fb.report()
