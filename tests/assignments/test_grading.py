"""The course assignments and their autograder (dptutor.assignments and dptutor.course).

Fast tests run the checks in this process on the reference solutions (the instructor notebooks'
code), on the blank student notebooks, and on planted wrong answers.  Grading submitted notebooks
in kernels (the runner, its trust model, Ctrl-C) is tested in test_grading_runner.py.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import jupytext
import numpy as np
import pytest

from helpers import ASSIGNMENT_DIR, INSTRUCTOR_DIR, ROOT  # noqa: F401 (re-exported to other test modules)
import dptutor.assignments as assignments_package
from dptutor.audit import estimate_loss
from dptutor.distributions import dptext_transform, laplace_ppf
from dptutor.assignments import ASSIGNMENTS, check, mystery_a, mystery_b
from dptutor.assignments.feedback import TEST_GRADING_SEED
from dptutor.course import FEEDBACK_TAG, student_version
from dptutor.course.release import released_notebook



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
    assert student == released_notebook(instructor, notebook), "run `python -m dptutor release`"
    assert "SOLUTION" not in student and "STUB" not in student
    assert "BEGIN SOLUTION" in instructor


def test_importing_the_grader_leaves_scipy_stats_unloaded() -> None:
    """Every notebook the grader runs imports ``dptutor.assignments`` in a fresh kernel; scipy.stats costs
    about 1.5 s of CPU to import, so the checks import it only when they run (in the grader)."""
    import subprocess
    import sys

    code = ("import sys, dptutor.assignments, dptutor.assignments.record, dptutor.selection; "
            "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_student_version_markers() -> None:
    text = ("a\n<!-- BEGIN SOLUTION -->\nsecret prose\n<!-- END SOLUTION -->\n"
            "def f():\n    # BEGIN SOLUTION\n    return 42\n    # END SOLUTION\n"
            "    # STUB: raise NotImplementedError\nb\n")
    assert student_version(text) == "a\ndef f():\n    raise NotImplementedError\nb\n"
    with pytest.raises(ValueError, match="never closed"):
        student_version("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without BEGIN"):
        student_version("x = 1\n# END SOLUTION\n")


def by_hand(name: str) -> tuple[str, ...]:
    """The questions of ``name`` graded by hand (their points stay pending in the grader's output)."""
    return getattr(assignments_package, name).BY_HAND if name == "audit" else ()


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_reference_solutions_get_full_marks(reference: dict, name: str) -> None:
    for q in ASSIGNMENTS[name].questions:
        for grading_seed in (None, TEST_GRADING_SEED):
            fb = check(name, q.name, *answers(name, q.name, reference[name]), grading_seed=grading_seed)
            if grading_seed is not None and q.name in by_hand(name):
                assert fb.score == 0 and fb.messages and fb.messages[0].startswith("graded by hand"), fb.report()
                continue
            assert fb.status == "graded" and not fb.messages, fb.report()
            if grading_seed is not None:  # the notebook feedback withholds verdicts (passed=None), grading does not
                assert fb.score == q.points, fb.report()
            # A question that names its checks (an instructor may weigh them) names every finding.
            if q.checks:
                assert all(f.check in q.checks for f in fb.findings), (q.name, [f.check for f in fb.findings])
            else:
                assert len(fb.findings) == 1, (q.name, fb.report())


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_blank_student_notebooks_score_zero_and_say_so(name: str) -> None:
    # Runs every cell, check cells included, as the book build does: nothing may raise.
    namespace = run_notebook_code(ASSIGNMENT_DIR / ASSIGNMENTS[name].notebook, feedback_cells=True)
    for q in ASSIGNMENTS[name].questions:
        fb = check(name, q.name, *answers(name, q.name, namespace), grading_seed=TEST_GRADING_SEED)
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
            fb = check("sampler", q.name, sampler, grading_seed=TEST_GRADING_SEED)
            assert fb.score == q.points, fb.report()

    def exponential_with_sign(X, epsilon, *, rng):  # Lap(0, b) as a signed exponential
        X = np.array(X, dtype=float)
        if X.ndim != 2 or len(X) == 0 or not (X.min() >= 0 and X.max() <= 1) or not 0 < epsilon < math.inf:
            raise ValueError("bad input")
        m, k = X.shape
        sign = rng.choice([-1.0, 1.0], size=k)
        return X.mean(axis=0) + sign * rng.exponential(k / (m * epsilon), size=k)

    for q in ("q2", "q3"):
        fb = check("mechanism", q, exponential_with_sign, grading_seed=TEST_GRADING_SEED)
        assert fb.score == ASSIGNMENTS["mechanism"].question(q).points, fb.report()


# ---------------------------------------------------------------------------------------------
# assignment 1: planted wrong answers
# ---------------------------------------------------------------------------------------------


def test_dptext_sampler_fails_the_law_with_a_pointer_to_eq9() -> None:
    fb = check("sampler", "q1", dptext_transform, grading_seed=TEST_GRADING_SEED)
    assert fb.score == 0
    assert any("NaN" in m and "Eq. 7/9" in m and "Theorem 3.1" in m for m in fb.messages), fb.report()


def test_nonnegative_noise_gets_the_never_negative_hint() -> None:
    def dptext_nan_to_zero(u, mu=0.0, b=1.0):  # DPText with its NaN noise replaced by 0
        return mu + b * np.nan_to_num(dptext_transform(u), nan=0.0, posinf=0.0)

    fb = check("sampler", "q1", dptext_nan_to_zero, grading_seed=TEST_GRADING_SEED)
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
    # reference, far beyond the allowed factor of 5.
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

    fb = check("mechanism", "q2", per_coordinate, grading_seed=TEST_GRADING_SEED)
    assert fb.score == 0
    assert all("Delta = 1/m" in m and "question 1" in m for m in fb.messages), fb.report()


def test_mechanism_with_shared_noise_fails() -> None:
    def shared(X, epsilon, *, rng):  # one noise value for every coordinate
        m, k = X.shape
        return X.mean(axis=0) + rng.laplace(0.0, k / (m * epsilon))

    fb = check("mechanism", "q2", shared, grading_seed=TEST_GRADING_SEED)
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
        b = math.sqrt(n) / assignments_package.AUDIT_EPSILON
        p0 = 0.5 * math.exp(-0.5 / b)
        guess1 = [stats.binom.sf(n // 2, n, p) for p in (p0, 1 - p0)]
        exact = max(abs(math.log(guess1[0] / guess1[1])), abs(math.log((1 - guess1[0]) / (1 - guess1[1]))))
        result = estimate_loss(mystery_a, n, assignments_package.AUDIT_EPSILON, 200_000, rng=n)
        low, high = result.confidence_interval(0.999)
        assert low <= exact <= high, (n, exact, low, high)
        assert (exact > assignments_package.AUDIT_EPSILON) == (n in (2, 4))


def test_mystery_b_is_the_laplace_mechanism() -> None:
    from dptutor.audit import exact_loss

    for n in (1, 2, 8):
        result = estimate_loss(mystery_b, n, assignments_package.AUDIT_EPSILON, 200_000, rng=10 + n)
        low, high = result.confidence_interval(0.999)
        assert low <= exact_loss("laplace", n, assignments_package.AUDIT_EPSILON) <= high


def test_audit_evidence_is_replayed(reference: dict) -> None:
    ns = reference["audit"]
    swapped = {"A": ns["evidence"]["B"], "B": ns["evidence"]["A"]}
    fb = check("audit", "q1", ns["verdicts"], swapped, grading_seed=TEST_GRADING_SEED)
    assert any("does not reproduce your counts" in m for m in fb.messages), fb.report()
    assert any("shows no violation" in m for m in fb.messages), fb.report()


def test_audit_verdict_from_weak_evidence_is_rejected(reference: dict) -> None:
    ns = reference["audit"]
    weak = estimate_loss(mystery_b, ns["evidence"]["A"].n, assignments_package.AUDIT_EPSILON, 1_000, rng=3)
    fb = check("audit", "q2", {"A": "violates", "B": "violates"}, {"A": ns["evidence"]["A"], "B": weak},
               grading_seed=TEST_GRADING_SEED)
    assert fb.score < 1
    assert any("at least 100,000 trials" in m for m in fb.messages), fb.report()
    assert any("verdict for B" in m for m in fb.messages), fb.report()


def test_feedback_withholds_verdicts_but_grading_does_not(reference: dict) -> None:
    fb = check("audit", "q3", "half-scale")
    assert fb.status == "graded" and not fb.messages and fb.score == 0  # recorded, not revealed
    assert "recorded; graded after submission" in fb.report() and "points" not in fb.report()
    fb = check("audit", "q3", "half-scale", grading_seed=TEST_GRADING_SEED)
    assert fb.score == 0 and fb.messages


# ---------------------------------------------------------------------------------------------
# the assignments as a student meets them (issue 16)
# ---------------------------------------------------------------------------------------------


def feedback_of_notebook(path: Path) -> list:
    """Execute a notebook's code in this process, check cells included; return what each check cell shows."""
    nb = jupytext.read(path)
    namespace: dict = {"__name__": "__notebook__"}
    shown = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if FEEDBACK_TAG in cell.metadata.get("tags", []):
            shown.append(eval(compile(cell.source, path.name, "eval"), namespace))
        else:
            exec(compile(cell.source, path.name, "exec"), namespace)
    return shown


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_instructor_notebooks_show_full_points_on_every_feedback_line(name: str) -> None:
    shown = feedback_of_notebook(INSTRUCTOR_DIR / ASSIGNMENTS[name].notebook)
    assert [fb.question for fb in shown] == [q.name for q in ASSIGNMENTS[name].questions]
    for fb in shown:
        report = fb.report()
        head = report.splitlines()[0]
        assert "✗" not in report, report
        if fb.pending:  # graded after submission: said so, and no score
            assert head.endswith("recorded; graded after submission") and "points" not in report, report
        else:
            assert head.endswith(f"{fb.points:g} / {fb.points:g} points"), report


def test_parts_graded_later_show_no_score(reference: dict) -> None:
    ns = reference["audit"]
    for q, objects in (("q1", (ns["verdicts"], ns["evidence"])), ("q2", (ns["verdicts"], ns["evidence"])),
                       ("q3", (ns["diagnosis"],)), ("q4", (ns["justification"],))):
        report = check("audit", q, *objects).report()
        assert "recorded; graded after submission" in report.splitlines()[0] and "points" not in report, report
        expected = 0 if q in by_hand("audit") else ASSIGNMENTS["audit"].question(q).points
        assert check("audit", q, *objects, grading_seed=TEST_GRADING_SEED).score == expected


def input_kind(value) -> tuple:
    """What kind of input a check passed: type, number of dimensions, and the special values it holds."""
    if isinstance(value, np.random.Generator):
        return ("rng",)
    if isinstance(value, (bool, str)) or value is None:
        return (type(value).__name__,)
    arr = np.asarray(value, dtype=float)
    flags = []
    with np.errstate(invalid="ignore"):
        finite = arr[np.isfinite(arr)]
        flags += ["nan"] * bool(np.isnan(arr).any()) + ["inf"] * bool(np.isinf(arr).any())
        flags += ["negative"] * bool((finite < 0).any()) + ["zero"] * bool((finite == 0).any())
        flags += ["one"] * bool((finite == 1).any()) + ["above one"] * bool((finite > 1).any())
    flags += ["empty"] * (arr.size == 0)
    kind = "ndarray" if isinstance(value, np.ndarray) else type(value).__name__
    return (kind, arr.ndim, *flags)


def kinds_of_calls(name: str, question: str, grading_seed) -> set:
    seen = set()
    ns = run_notebook_code(INSTRUCTOR_DIR / ASSIGNMENTS[name].notebook, feedback_cells=False)
    objects = []
    for need in ASSIGNMENTS[name].question(question).needs:
        fn = ns[need]
        if callable(fn):
            def spy(*args, _fn=fn, **kwargs):
                seen.add(tuple(input_kind(a) for a in args) + tuple((k, input_kind(v)) for k, v in sorted(kwargs.items())))
                return _fn(*args, **kwargs)
            objects.append(spy)
        else:
            objects.append(fn)
    check(name, question, *objects, grading_seed=grading_seed)
    return seen


@pytest.mark.parametrize("name,question", [("sampler", "q2"), ("sampler", "q3"), ("mechanism", "q1"),
                                           ("mechanism", "q3")])
def test_feedback_tries_every_kind_of_input_that_grading_tries(name: str, question: str) -> None:
    # (sampler q1 and mechanism q2 draw valid random inputs only; q3 of sampler times 10^6 uniforms.)
    feedback = kinds_of_calls(name, question, None)
    for seed in (TEST_GRADING_SEED, 7, 8):
        assert kinds_of_calls(name, question, seed) <= feedback


# Text that would give an answer away if a feedback message printed it.
ANSWER_TEXT = {
    "mechanism": ("k/m", "k / m", "k/(m", "k / (m", "1/m per coordinate", "(m epsilon)"),
    "sampler": ("log(2u", "log(2 * u", "ln(2u", "1 - 2|u", "np.log(2"),
    "audit": ("sqrt(n)/epsilon", "sqrt(n)", "l2 sensitivity", "violates its claim", "A is broken", "B is correct"),
    "pair_audit": ("two releases", "np.clip", "true epsilon 1", "clipped"),
    "selection": ("size=(size, 1)", "argmax(above", "np.argmax(q + rng", "first[:, None]"),
    "bughunt": ("has the bug", "is correct", "true epsilon", "times the claim", "max(abs(lo)"),
}


def wrong_answers(reference: dict) -> list[tuple[str, dict]]:
    """Plausible wrong submissions of every assignment."""
    audit = reference["audit"]

    def half_scale_loop(u, mu=0.0, b=1.0):
        u = np.asarray(u, dtype=float)
        if np.any((u <= 0) | (u >= 1) | np.isnan(u)) or not (np.isfinite(b) and b > 0):
            raise ValueError("bad input")
        return np.array([laplace_ppf(x, mu, b / 2) for x in u.reshape(-1)]).reshape(u.shape)

    def no_threshold_noise(answers, threshold, epsilon, *, size, rng):
        q = np.asarray(answers, dtype=float)
        above = q + rng.laplace(0.0, 4.0 / epsilon, size=(size, q.size)) >= threshold
        first = np.where(above.any(axis=1), np.argmax(above, axis=1), q.size)[:, None]
        column = np.arange(q.size)
        return np.where(column < first, 0, np.where(column == first, 1, -1))

    def noisy_value(answers, epsilon, *, size, rng):
        q = np.asarray(answers, dtype=float)
        return np.max(q + rng.laplace(0.0, 2.0 / epsilon, size=(size, q.size)), axis=1)

    def per_coordinate(X, epsilon, *, rng):
        X = np.asarray(X, dtype=float)
        return X.mean(axis=0) + rng.laplace(0.0, 1 / (X.shape[0] * epsilon), size=X.shape[1])

    return [
        ("sampler", {"laplace_inverse_cdf": half_scale_loop}),
        ("sampler", {"laplace_inverse_cdf": lambda u, mu=0.0, b=1.0: np.zeros_like(np.asarray(u, dtype=float))}),
        ("mechanism", {"mean_sensitivity": lambda m, k: np.sqrt(k) / m, "private_mean": per_coordinate}),
        ("audit", {"verdicts": {"A": "no evidence", "B": "violates"},
                   "evidence": {"A": audit["evidence"]["B"], "B": audit["evidence"]["A"]}, "diagnosis": "half-scale",
                   "justification": "At n = 2 the half-scale candidate matched the table exactly, digit for digit, so it is that one."}),
        ("audit", {"verdicts": "violates", "evidence": [1, 2], "diagnosis": 3, "justification": 3}),
        ("selection", {"above_threshold": no_threshold_noise, "report_noisy_max": noisy_value}),
    ]


def test_no_answer_text_in_any_feedback_message(reference: dict) -> None:
    cases = [(name, ns) for name, ns in reference.items()] + wrong_answers(reference) + [
        ("sampler", {"laplace_inverse_cdf": dptext_transform}),
        ("mechanism", {"mean_sensitivity": lambda m, k: k, "private_mean": lambda X, epsilon, *, rng: X.mean(axis=0)}),
        ("audit", {"verdicts": {"A": "no evidence", "B": "no evidence"}, "evidence": reference["audit"]["evidence"],
                   "diagnosis": "one-sided", "justification": "too short"}),
    ]
    for name, ns in cases:
        for q in ASSIGNMENTS[name].questions:
            if not all(n in ns for n in q.needs):
                continue
            report = check(name, q.name, *(ns[n] for n in q.needs)).report()
            for text in ANSWER_TEXT[name]:
                assert text not in report, (name, q.name, text, report)


def test_question_labels_are_neutral() -> None:
    for a in ASSIGNMENTS.values():
        for q in a.questions:
            assert not any(word in q.title.lower() for word in ("broken", "violat", "wrong", " of a", " of b")), q.title


def test_justification_is_graded_by_hand_not_by_keywords() -> None:
    from dptutor.assignments.audit import separates_candidates

    right = ("At n = 3 all candidates add noise of different scales. The one-sided and half-scale candidates "
             "give losses outside the 95% confidence interval of the mystery's loss; the l2 candidate, with "
             "scale sqrt(n)/epsilon, matches it.")
    # Every keyword the old pattern matcher looked for, arguing the wrong answer.
    stuffed = ("At n = 3, n = 8 the one-sided, sensitivity-1 and half-scale candidates differ; sampling error, "
               "confidence intervals and lower bounds aside, sqrt and l2 do not fit: the one-sided candidate "
               "is the answer.")
    for text in (right, stuffed):
        fb = check("audit", "q4", text, grading_seed=TEST_GRADING_SEED)
        assert fb.score == 0 and fb.status == "graded", fb.report()
        assert fb.messages[0].startswith("graded by hand") and "pending" in fb.messages[0], fb.report()
        assert check("audit", "q4", text).pending  # the notebook's feedback: recorded, no score
    assert check("audit", "q4", None).status == "not implemented"
    assert "between 15 and 250" in check("audit", "q4", "l2 because sqrt").report()
    assert [n for n in range(1, 10) if not separates_candidates(n)] == [1, 2, 4]
    instructor = (INSTRUCTOR_DIR / "audit.md").read_text(encoding="utf-8")
    student = (ASSIGNMENT_DIR / "audit.md").read_text(encoding="utf-8")
    assert "Rubric" in instructor and "Rubric" not in student and "graded by hand" in student


def test_make_lab_opens_the_assignments_and_its_environment_executes_a_notebook(tmp_path: Path) -> None:
    import subprocess
    import sys

    # -B: after a real `make lab` or `make lab-check`, the stamp .venv/.lab-installed makes the install
    # step up to date, and a plain dry run would no longer show it.
    dry = subprocess.run(["make", "-n", "-B", "lab", "lab-check"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "jupyterlab==" in dry.stdout and "--notebook-dir=book/assignments" in dry.stdout
    assert "jupytext" in dry.stdout and "jupyter-execute --inplace" in dry.stdout
    # What lab-check runs after installing JupyterLab: the environment's kernel executes a notebook.
    out = tmp_path / "sampler.ipynb"
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run([str(bin_dir / "jupytext"), "--to", "ipynb", str(ASSIGNMENT_DIR / "sampler.md"),
                           "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # jupyter-execute comes with nbclient (pinned), so this needs nothing that only JupyterLab brings.
    proc = subprocess.run([str(bin_dir / "jupyter-execute"), "--inplace", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "not implemented yet" in out.read_text()


def _rubric_rows(name: str) -> dict[str, str]:
    """The rows of the rubric table in an instructor notebook, by question number."""
    text = (INSTRUCTOR_DIR / ASSIGNMENTS[name].notebook).read_text(encoding="utf-8")
    block = text.split("```{admonition} Rubric\n", 1)[1].split("```", 1)[0]
    return {line.split("|")[1].strip(): line for line in block.splitlines() if re.match(r"\| \d+ \|", line)}


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_each_instructor_notebook_states_each_questions_rubric(reference: dict, name: str) -> None:
    """The rubric table says, for every question, its points, each check with its number of findings and
    the share of a finding, as the check gives them on the reference solution."""
    from collections import Counter
    from fractions import Fraction

    from dptutor.assignments.feedback import UNSCORED

    rows = _rubric_rows(name)
    assert sorted(rows) == [q.name[1:] for q in ASSIGNMENTS[name].questions], rows
    for q in ASSIGNMENTS[name].questions:
        row = rows[q.name[1:]]
        assert row.split("|")[2].strip() == f"{q.points:g}", row
        fb = check(name, q.name, *answers(name, q.name, reference[name]))
        counts = Counter(f.check for f in fb.findings if f.check != UNSCORED)
        stated = {c: int(n) for c, n in re.findall(r"`(\w+)` ×(\d+)", row)}
        stated.update({c: 1 for c in re.findall(r"`(\w+)`, ", row.split("|")[3]) if c not in stated})
        if q.checks:
            stated = {c: n for c, n in stated.items() if c in q.checks}
            assert stated == dict(counts), (q.name, row, counts)
        else:
            assert "one finding" in row and sum(counts.values()) == 1, row
        share = Fraction(str(q.points)) / sum(counts.values())
        assert re.search(rf"\b{share}(?:\.0)? points? each\b|one finding: {share} points?", row), (row, share)
