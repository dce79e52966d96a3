"""The course assignments and their autograder (dptutor.grading).

Fast tests run the checks in this process on the reference solutions (the instructor notebooks'
code), on the blank student notebooks, and on planted wrong answers.  Grading submitted notebooks
in kernels (the runner, its trust model, Ctrl-C) is tested in test_grading_runner.py.
"""
from __future__ import annotations

import math
from pathlib import Path

import jupytext
import numpy as np
import pytest

from conftest import ROOT
from dptutor import grading
from dptutor.audit import estimate_loss
from dptutor.distributions import dptext_transform, laplace_ppf
from dptutor.grading import ASSIGNMENTS, FEEDBACK_TAG, check, mystery_a, mystery_b, student_version

ASSIGNMENT_DIR = ROOT / "book" / "assignments"
INSTRUCTOR_DIR = ASSIGNMENT_DIR / "instructor"


def run_notebook_code(path: Path, *, feedback_cells: bool) -> dict:
    """Execute the code cells of a MyST notebook in a fresh namespace (in this process)."""
    nb = jupytext.read(path)
    namespace: dict = {"__name__": "__notebook__"}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if not feedback_cells and FEEDBACK_TAG in cell.metadata.get("tags", []):
            continue
        exec(compile(cell.source, f"{path.name}", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def reference() -> dict[str, dict]:
    return {name: run_notebook_code(INSTRUCTOR_DIR / a.notebook, feedback_cells=False)
            for name, a in ASSIGNMENTS.items()}


def answers(assignment: str, question: str, namespace: dict) -> list:
    return [namespace[n] for n in ASSIGNMENTS[assignment].question(question).needs]


# ---------------------------------------------------------------------------------------------
# the notebooks
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_student_notebook_is_generated_from_the_instructor_version(name: str) -> None:
    notebook = ASSIGNMENTS[name].notebook
    instructor = (INSTRUCTOR_DIR / notebook).read_text()
    student = (ASSIGNMENT_DIR / notebook).read_text()
    assert student == student_version(instructor), "run `python -m dptutor release`"
    assert "SOLUTION" not in student and "STUB" not in student
    assert "BEGIN SOLUTION" in instructor


def test_student_version_markers() -> None:
    text = ("a\n<!-- BEGIN SOLUTION -->\nsecret prose\n<!-- END SOLUTION -->\n"
            "def f():\n    # BEGIN SOLUTION\n    return 42\n    # END SOLUTION\n"
            "    # STUB: raise NotImplementedError\nb\n")
    assert student_version(text) == "a\ndef f():\n    raise NotImplementedError\nb\n"
    with pytest.raises(ValueError, match="never closed"):
        student_version("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without BEGIN"):
        student_version("x = 1\n# END SOLUTION\n")


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_reference_solutions_get_full_marks(reference: dict, name: str) -> None:
    for q in ASSIGNMENTS[name].questions:
        for hidden in (False, True):
            fb = check(name, q.name, *answers(name, q.name, reference[name]), hidden=hidden)
            assert fb.status == "graded" and not fb.messages, fb.report()
            if hidden:  # the notebook feedback withholds verdicts (passed=None), grading does not
                assert fb.score == q.points, fb.report()


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_blank_student_notebooks_score_zero_and_say_so(name: str) -> None:
    # Runs every cell, check cells included, as the book build does: nothing may raise.
    namespace = run_notebook_code(ASSIGNMENT_DIR / ASSIGNMENTS[name].notebook, feedback_cells=True)
    for q in ASSIGNMENTS[name].questions:
        fb = check(name, q.name, *answers(name, q.name, namespace), hidden=True)
        assert fb.score == 0 and fb.status == "not implemented", fb.report()
        assert "not implemented yet" in fb.report() or "not answered yet" in fb.report()


def test_other_correct_answers_get_full_marks() -> None:
    from scipy import stats

    def eq4(u, mu=0.0, b=1.0):  # Eq. 4 as printed, with the domain checks
        u = np.asarray(u, dtype=float)
        if not 0 < b < math.inf or not ((u > 0) & (u < 1)).all():
            raise ValueError("u must lie in (0, 1) and b must be > 0")
        return mu - b * np.sign(u - 0.5) * np.log(1 - 2 * np.abs(u - 0.5))

    def scipy_ppf(u, mu=0.0, b=1.0):
        u = np.asarray(u, dtype=float)
        if not 0 < b < math.inf or np.isnan(u).any() or (u <= 0).any() or (u >= 1).any():
            raise ValueError("out of the domain")
        return stats.laplace.ppf(u, loc=mu, scale=b)

    for sampler in (eq4, scipy_ppf):
        for q in ASSIGNMENTS["sampler"].questions:
            fb = check("sampler", q.name, sampler, hidden=True)
            assert fb.score == q.points, fb.report()

    def exponential_with_sign(X, epsilon, *, rng):  # Lap(0, b) as a signed exponential
        X = np.array(X, dtype=float)
        if X.ndim != 2 or len(X) == 0 or not (X.min() >= 0 and X.max() <= 1) or not 0 < epsilon < math.inf:
            raise ValueError("bad input")
        m, k = X.shape
        sign = rng.choice([-1.0, 1.0], size=k)
        return X.mean(axis=0) + sign * rng.exponential(k / (m * epsilon), size=k)

    for q in ("q2", "q3"):
        fb = check("mechanism", q, exponential_with_sign, hidden=True)
        assert fb.score == ASSIGNMENTS["mechanism"].question(q).points, fb.report()


# ---------------------------------------------------------------------------------------------
# assignment 1: planted wrong answers
# ---------------------------------------------------------------------------------------------


def test_dptext_sampler_fails_the_law_with_a_pointer_to_eq9() -> None:
    fb = check("sampler", "q1", dptext_transform, hidden=True)
    assert fb.score == 0
    assert any("NaN" in m and "Eq. 7/9" in m and "Theorem 3.1" in m for m in fb.messages), fb.report()


def test_nonnegative_noise_gets_the_never_negative_hint() -> None:
    def dptext_nan_to_zero(u, mu=0.0, b=1.0):  # DPText with its NaN noise replaced by 0
        return mu + b * np.nan_to_num(dptext_transform(u), nan=0.0, posinf=0.0)

    fb = check("sampler", "q1", dptext_nan_to_zero, hidden=True)
    assert fb.score == 0
    assert any("never below mu" in m and "Eq. 9" in m for m in fb.messages), fb.report()


def test_wrong_scale_fails_the_ks_test_with_a_scale_hint() -> None:
    fb = check("sampler", "q1", lambda u, mu=0.0, b=1.0: laplace_ppf(u, mu, 2 * b))
    assert fb.score < 2
    assert any("does not follow" in m and "how b multiplies" in m for m in fb.messages), fb.report()


def test_fresh_randomness_is_not_an_inverse_cdf() -> None:
    rng = np.random.default_rng(0)
    fb = check("sampler", "q1", lambda u, mu=0.0, b=1.0: rng.laplace(mu, b, size=np.shape(u)))
    assert any("different outputs for the same u" in m for m in fb.messages), fb.report()


def test_unchecked_domain_fails_q2() -> None:
    def naive(u, mu=0.0, b=1.0):  # Eq. 4 without any input check
        u = np.asarray(u, dtype=float)
        return mu - b * np.sign(u - 0.5) * np.log(1 - 2 * np.abs(u - 0.5))

    fb = check("sampler", "q2", naive)
    assert fb.score < 1
    assert any("with u = 0 (u = 0.0) returned" in m and "open interval (0, 1)" in m for m in fb.messages)
    assert any("b=0" in m for m in fb.messages), fb.report()


def test_python_loops_fail_q3() -> None:
    def element_loop(u, mu=0.0, b=1.0):  # iterates over the caller's array
        if np.ndim(u) == 0:
            return laplace_ppf(u, mu, b)
        return np.array([laplace_ppf(x, mu, b) for x in u])

    fb = check("sampler", "q3", element_loop)
    assert any("element by element" in m for m in fb.messages), fb.report()

    def hidden_loop(u, mu=0.0, b=1.0):  # converts first, so only the timing can see the loop
        u = np.asarray(u, dtype=float)
        flat = [float(laplace_ppf(x, mu, b)) for x in u.reshape(-1)]
        return np.array(flat).reshape(u.shape)

    fb = check("sampler", "q3", hidden_loop)
    # The loop costs ~30 us per element against ~0.02 us for numpy: over 100 times the
    # reference, far beyond the allowed factor of 10.
    assert any("times the reference" in m and "Python loop" in m for m in fb.messages), fb.report()


# ---------------------------------------------------------------------------------------------
# assignment 2: planted wrong answers
# ---------------------------------------------------------------------------------------------


def test_sensitivity_hints() -> None:
    fb = check("mechanism", "q1", lambda m, k: math.sqrt(k) / m)
    assert any("l2 sensitivity" in m for m in fb.messages), fb.report()
    fb = check("mechanism", "q1", lambda m, k: k)
    assert any("how does m enter" in m for m in fb.messages), fb.report()


def test_mechanism_with_one_coordinate_sensitivity_gets_a_scale_diagnosis(reference: dict) -> None:
    def per_coordinate(X, epsilon, *, rng):  # Delta = 1/m: forgot to add up the k coordinates
        X = np.asarray(X, dtype=float)
        m, k = X.shape
        return X.mean(axis=0) + rng.laplace(0.0, 1 / (m * epsilon), size=k)

    fb = check("mechanism", "q2", per_coordinate, hidden=True)
    assert fb.score == 0
    assert all("Delta = 1/m" in m and "question 1" in m for m in fb.messages), fb.report()


def test_mechanism_with_shared_noise_fails() -> None:
    def shared(X, epsilon, *, rng):  # one noise value for every coordinate
        m, k = X.shape
        return X.mean(axis=0) + rng.laplace(0.0, k / (m * epsilon))

    fb = check("mechanism", "q2", shared, hidden=True)
    assert any("same noise value" in m for m in fb.messages), fb.report()


def test_mechanism_without_input_checks_fails_q3() -> None:
    def unchecked(X, epsilon, *, rng):
        X = np.asarray(X, dtype=float)
        return X.mean(axis=0) + rng.laplace(0.0, X.shape[1] / (X.shape[0] * epsilon), size=X.shape[1])

    fb = check("mechanism", "q3", unchecked)
    assert 0 < fb.score < 1
    assert any("a value above 1" in m and "ValueError" in m for m in fb.messages), fb.report()


# ---------------------------------------------------------------------------------------------
# assignment 3
# ---------------------------------------------------------------------------------------------


def test_mystery_a_violates_only_at_small_even_n() -> None:
    # The attack's exact loss for Laplace noise of scale b = sqrt(n)/epsilon (mystery A): each
    # coordinate rounds to 1 with probability p0 = exp(-1/(2b))/2 on the zeros and 1 - p0 on the
    # ones, the guess is 1 when more than n/2 coordinates do (scipy.stats.binom), and the loss is the
    # largest |log ratio| of the guess probabilities: > 1 at n = 2 and 4, < 1 at n = 1 and 8.  Each
    # 200 000-trial estimate's own 99.9% confidence interval must contain it.
    from scipy import stats

    for n in (1, 2, 4, 8):
        b = math.sqrt(n) / grading.AUDIT_EPSILON
        p0 = 0.5 * math.exp(-0.5 / b)
        guess1 = [stats.binom.sf(n // 2, n, p) for p in (p0, 1 - p0)]
        exact = max(abs(math.log(guess1[0] / guess1[1])), abs(math.log((1 - guess1[0]) / (1 - guess1[1]))))
        result = estimate_loss(mystery_a, n, grading.AUDIT_EPSILON, 200_000, seed=n)
        low, high = result.confidence_interval(0.999)
        assert low <= exact <= high, (n, exact, low, high)
        assert (exact > grading.AUDIT_EPSILON) == (n in (2, 4))


def test_mystery_b_is_the_laplace_mechanism() -> None:
    from dptutor.audit import exact_loss

    for n in (1, 2, 8):
        result = estimate_loss(mystery_b, n, grading.AUDIT_EPSILON, 200_000, seed=10 + n)
        low, high = result.confidence_interval(0.999)
        assert low <= exact_loss("laplace", n, grading.AUDIT_EPSILON) <= high


def test_audit_evidence_is_replayed(reference: dict) -> None:
    ns = reference["audit"]
    swapped = {"A": ns["evidence"]["B"], "B": ns["evidence"]["A"]}
    fb = check("audit", "q1", ns["verdicts"], swapped, hidden=True)
    assert any("does not reproduce your counts" in m for m in fb.messages), fb.report()
    assert any("shows no violation" in m for m in fb.messages), fb.report()


def test_audit_verdict_from_weak_evidence_is_rejected(reference: dict) -> None:
    ns = reference["audit"]
    weak = estimate_loss(mystery_b, ns["evidence"]["A"].n, grading.AUDIT_EPSILON, 1_000, seed=3)
    fb = check("audit", "q2", {"A": "violates", "B": "violates"}, {"A": ns["evidence"]["A"], "B": weak},
               hidden=True)
    assert fb.score < 1
    assert any("at least 100,000 trials" in m for m in fb.messages), fb.report()
    assert any("verdict for B" in m for m in fb.messages), fb.report()


def test_feedback_withholds_verdicts_but_grading_does_not(reference: dict) -> None:
    fb = check("audit", "q3", "half-scale")
    assert fb.status == "graded" and not fb.messages and fb.score == 0  # recorded, not revealed
    assert "graded after you submit" in fb.report()
    fb = check("audit", "q3", "half-scale", hidden=True)
    assert fb.score == 0 and fb.messages
