"""The rubrics of the assignments as the instructor notebooks state them, tested with typical mistakes,
and the feedback that names the real mistake (issue 36: scoring an instructor accepts, round-3 scores
that did not match the work, feedback misfires, instructor notes kept out of the student's file).

Every check runs here, in this process; ``graded`` stands in for the grader's session where a check
only notes something for the instructor while grading (``flag_for_review``).
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator

import numpy as np
import pytest

from dptutor.assignments import check, mystery_a, mystery_b
from dptutor.assignments.feedback import INSTRUCTOR_NOTE, TEST_GRADING_SEED, is_instructor_note
from dptutor.assignments.instances import SELF_STUDY, AuditMember, answers_scope
from dptutor.assignments import sampler
from dptutor.assignments.record import EARLY_STOP_SECONDS, GradingSession, measure, session_scope
from dptutor.audit import estimate_loss
from dptutor.distributions import laplace_ppf
from dptutor.selection import report_noisy_max as package_rnm
from dptutor.selection import sparse_vector


@contextlib.contextmanager
def graded() -> Iterator[GradingSession]:
    """Checks inside run as when grading: what they flag for the instructor is in the session's ``flags``
    (the student's functions are called here, not in a kernel)."""
    session = GradingSession()
    with session_scope(session):
        yield session


def messages(fb) -> str:
    """The failed findings' messages, unwrapped (a report wraps its lines)."""
    return " ".join(fb.messages)


def every(fb) -> str:
    """Every finding's message, unwrapped."""
    return " ".join(f.message for f in fb.findings)


# ---------------------------------------------------------------------------------------------
# audit: the verdict agrees with the student's own evidence; a wrong verdict costs its points
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audits() -> dict:
    """Self-study audits: A (broken, l2 scale) at n = 2 shows its violation, at n = 1 it does not."""
    return {"A2": estimate_loss(mystery_a, 2, 1.0, 200_000, rng=7), "B2": estimate_loss(mystery_b, 2, 1.0, 200_000, rng=8),
            "A1": estimate_loss(mystery_a, 1, 1.0, 200_000, rng=7)}


def test_a_verdict_that_contradicts_its_own_evidence_loses_the_verdict_and_the_agreement(audits: dict) -> None:
    assert audits["A2"].lower_bound(0.95) > 1.0 >= audits["A1"].lower_bound(0.95)
    evidence = {"A": audits["A2"], "B": audits["B2"]}
    wrong = {"A": "no evidence", "B": "no evidence"}
    # The feedback judges the agreement against the student's own evidence, before any answer is known.
    fb = check("audit", "q1", wrong, evidence)
    assert [f.passed for f in fb.findings if f.check == "agreement"] == [False], fb.report()
    assert "which shows a violation, but your verdict is 'no evidence'" in messages(fb)
    # Grading: the rubric gives the evidence's two checks only, 2 * 2/4 (it kept 1.5 before).
    fb = check("audit", "q1", wrong, evidence, grading_seed=TEST_GRADING_SEED)
    assert fb.score == 1.0, fb.report()
    assert "or change the verdict" not in every(fb)
    # Weak evidence and the wrong verdict agree with each other, but the verdict is wrong: 1 point too.
    fb = check("audit", "q1", wrong, {"A": audits["A1"], "B": audits["B2"]}, grading_seed=TEST_GRADING_SEED)
    assert fb.score == 1.0 and "the agreement counts only for a right verdict" in messages(fb), fb.report()
    # The right verdict on weak evidence loses the agreement only, and is not told to change its verdict.
    fb = check("audit", "q1", {"A": "violates", "B": "no evidence"}, {"A": audits["A1"], "B": audits["B2"]},
               grading_seed=TEST_GRADING_SEED)
    assert fb.score == 1.5 and "shows no violation" in messages(fb), fb.report()
    assert "or change the verdict" not in every(fb)
    fb = check("audit", "q1", {"A": "violates", "B": "no evidence"}, evidence, grading_seed=TEST_GRADING_SEED)
    assert fb.score == 2.0, fb.report()


def test_b_with_a_wrong_verdict_keeps_only_its_evidence_points(audits: dict) -> None:
    evidence = {"A": audits["A2"], "B": audits["B2"]}
    fb = check("audit", "q2", {"A": "violates", "B": "violates"}, evidence, grading_seed=TEST_GRADING_SEED)
    assert fb.score == round(2 * 3 / 5, 2), fb.report()  # replay twice and same_dimension of five checks
    fb = check("audit", "q2", {"A": "violates", "B": "no evidence"}, evidence, grading_seed=TEST_GRADING_SEED)
    assert fb.score == 2.0, fb.report()


def test_no_student_with_the_verdict_no_evidence_is_told_to_change_it(audits: dict) -> None:
    for label, ev in (("A", audits["A1"]), ("A", audits["A2"]), ("B", audits["B2"])):
        for seed in (None, TEST_GRADING_SEED):
            fb = check("audit", "q1" if label == "A" else "q2", {"A": "no evidence", "B": "no evidence"},
                       {"A": ev, "B": audits["B2"]} if label == "A" else {"A": audits["A2"], "B": ev}, grading_seed=seed)
            assert "or change the verdict" not in every(fb), fb.report()


def test_every_diagnosis_hint_reads_as_sentences() -> None:
    # The self-study answer is l2: every other candidate gets its hint; a course whose bug is not l2
    # gives the l2 hint (it read "... with this candidate's Write the candidate ..." before).
    shown = [check("audit", "q3", key, grading_seed=TEST_GRADING_SEED) for key in ("one-sided", "sensitivity-1", "half-scale")]
    with answers_scope({"audit": AuditMember("A", "half-scale")}):
        shown.append(check("audit", "q3", "l2", grading_seed=TEST_GRADING_SEED))
    for fb in shown:
        (text,) = fb.messages
        assert fb.score == 0 and "candidate's Write" not in text, text
        first, _, rest = text.partition("? ")
        assert first.endswith(("?", ".")) or rest, text
        assert text.endswith("sampling error."), text


def test_a_missing_use_course_line_is_named(audits: dict) -> None:
    course = AuditMember("B", "half-scale")
    assert course != SELF_STUDY["audit"]
    evidence = {"A": audits["A2"], "B": audits["B2"]}  # audits of the self-study mysteries
    with answers_scope({"audit": course}):
        fb = check("audit", "q1", {"A": "no evidence", "B": "violates"}, evidence, grading_seed=TEST_GRADING_SEED)
        assert "the `use_course(...)` line is missing" in messages(fb), fb.report()
        # Evidence of another mechanism altogether is still a replay mismatch, not a missing line.
        def other(x, epsilon, rng):
            return x + rng.laplace(0.0, 5.0, size=x.shape)

        other_audit = estimate_loss(other, 2, 1.0, 100_000, rng=7)
        fb = check("audit", "q1", {"A": "no evidence", "B": "violates"}, {"A": other_audit, "B": audits["B2"]},
                   grading_seed=TEST_GRADING_SEED)
        assert "use_course" not in every(fb) and "does not reproduce" in messages(fb), fb.report()


# ---------------------------------------------------------------------------------------------
# sampler: a wrong law earns no law points; vectorisation timed on inputs it has not seen
# ---------------------------------------------------------------------------------------------


def twice_the_scale(u, mu, b):
    u = np.asarray(u, dtype=float)
    return laplace_ppf(u, mu, 2 * b)


def without_mu(u, mu, b):
    u = np.asarray(u, dtype=float)
    return laplace_ppf(u, 0.0, b)


def test_a_sampler_of_the_wrong_law_earns_no_law_points() -> None:
    for seed in (None, TEST_GRADING_SEED):
        fb = check("sampler", "q1", twice_the_scale, grading_seed=seed)
        assert fb.score == 0, fb.report()
        assert "counts only for a sampler of the right law" in messages(fb), fb.report()
    # A sampler of the right law that is not an inverse CDF (decreasing in u) loses the monotone point only.
    fb = check("sampler", "q1", lambda u, mu, b: laplace_ppf(1 - np.asarray(u, dtype=float), mu, b), grading_seed=TEST_GRADING_SEED)
    assert fb.score == round(2 * 2 / 3, 2) and "not nondecreasing" in messages(fb), fb.report()


def test_ignoring_mu_is_named_and_not_called_dptexts_bug() -> None:
    for seed in (None, TEST_GRADING_SEED, 5, 6, 7):
        fb = check("sampler", "q1", without_mu, grading_seed=seed)
        # The feedback's first case has mu = 0, where ignoring mu is right; grading draws mu != 0.
        assert fb.score == (0 if seed is not None else round(2 / 3, 2)) and "DPText" not in every(fb), fb.report()
        assert "mean distance" not in every(fb), fb.report()
        assert "does your function add mu?" in messages(fb), fb.report()


def test_a_returned_list_is_named_as_a_list() -> None:
    fb = check("sampler", "q3", lambda u, mu, b: np.atleast_1d(laplace_ppf(u, mu, b)).tolist(), grading_seed=TEST_GRADING_SEED)
    assert "shape None" not in every(fb) and "a list of" in messages(fb), fb.report()
    fb = check("mechanism", "q3", lambda X, epsilon, *, rng: list(np.mean(X, axis=0)), grading_seed=TEST_GRADING_SEED)
    assert "shape None" not in every(fb) and "a list of" in messages(fb), fb.report()


class Memoising:
    """A Python loop that remembers what it computed and, on a large array, fills in only the uniforms it
    has seen (fast: a searchsorted), leaving zeros elsewhere."""

    def __init__(self) -> None:
        self.seen_u, self.seen_x = np.empty(0), np.empty(0)

    def __call__(self, u, mu, b):
        plain = np.asarray(u, dtype=float).view(np.ndarray)  # no element access on the spy array itself
        if plain.ndim == 0 or plain.size <= 5000:
            flat = np.array([mu - b * math.copysign(1.0, v - 0.5) * math.log(1 - 2 * abs(v - 0.5))
                             for v in plain.ravel().tolist()])
            order = np.argsort(np.concatenate([self.seen_u, plain.ravel()]))
            self.seen_u = np.concatenate([self.seen_u, plain.ravel()])[order]
            self.seen_x = np.concatenate([self.seen_x, flat])[order]
            return flat.reshape(plain.shape) if plain.ndim else float(flat[0])
        where = np.clip(np.searchsorted(self.seen_u, plain), 0, self.seen_u.size - 1)
        return np.where(self.seen_u[where] == plain, self.seen_x[where], 0.0)


def test_a_memoising_loop_fails_the_vectorisation_check() -> None:
    fb = check("sampler", "q3", Memoising(), grading_seed=TEST_GRADING_SEED)
    speed = [f for f in fb.findings if f.check == "speed"]
    assert speed and speed[0].passed is False, fb.report()
    assert fb.score < 1


def busy(seconds: float) -> None:
    """Spend ``seconds`` of this thread's CPU time (the feedback's timing counts CPU time, not sleep)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class SlowFor:
    """A vectorised inverse CDF that works ``pause`` more seconds of CPU time on each of its first ``calls``
    arrays of a million uniforms: how a series slowed by something else looks to the timing."""

    def __init__(self, calls: int, pause: float = 0.5) -> None:
        self.calls, self.pause, self.large = calls, pause, 0

    def __call__(self, u, mu, b):
        u = np.asarray(u, dtype=float)
        self.large += u.size >= 500_000
        if u.size >= 500_000 and self.calls > 0:
            self.calls -= 1
            busy(self.pause)
        return mu - b * np.sign(u - 0.5) * np.log(1 - 2 * np.abs(u - 0.5))


def test_one_slow_series_gets_a_second_look_and_a_slow_function_still_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # Half a second per million uniforms is over SAMPLER_TIMING_RATIO times numpy's: slowed for the first
    # series only (a busy machine), the function is timed again on fresh uniforms and passes; slowed for
    # both, it fails with the time it took.
    references: list[float] = []
    reference_seconds = sampler.reference_seconds

    def recorded(*args, **kwargs):
        references.append(reference_seconds(*args, **kwargs))
        return references[-1]

    monkeypatch.setattr(sampler, "reference_seconds", recorded)
    passed = check("sampler", "q3", SlowFor(calls=3), grading_seed=TEST_GRADING_SEED)
    speed = [f for f in passed.findings if f.check == "speed"]
    assert speed and speed[0].passed, passed.report()
    slow = SlowFor(calls=6)
    references.clear()
    failed = check("sampler", "q3", slow, grading_seed=TEST_GRADING_SEED)
    speed = [f for f in failed.findings if f.check == "speed"]
    assert speed and not speed[0].passed and "times the reference" in speed[0].message, failed.report()
    # The second series stops at its first repeat over twice the passing time (10 times the reference's first
    # time): 3 + 1 timed calls, not 3 + 3, unless the machine is so busy that the reference took over 0.05 s.
    if 2 * sampler.SAMPLER_TIMING_RATIO * references[0] < slow.pause:
        assert slow.large == 4, (slow.large, references)
    else:
        assert slow.large in (4, 5, 6), (slow.large, references)


def test_a_fast_function_with_a_fixed_cost_per_call_is_not_cut_short_by_its_scaled_first_run() -> None:
    # The first run on 1 % of the uniforms is scaled up a hundredfold, its fixed cost too: 20 ms more per
    # call read as 2 s and ended a series capped at 0.5 s before any full-size call (a fast function's second
    # look failed that way on a busy machine).
    calls: list[int] = []

    def paused(u, mu, b):
        calls.append(np.size(u))
        busy(0.02)
        return laplace_ppf(u, mu, b)

    inputs = [np.random.default_rng(i).random(1_000_000) for i in range(2)]
    results, best = measure(paused, inputs, 0.0, 1.0, cap=0.5)
    assert calls.count(1_000_000) == 2 and best < 0.5, (calls, best)
    # A hopeless case still stops after the small run: 0.1 s per 1 % reads as 10 s, over EARLY_STOP_SECONDS.
    calls.clear()

    def hopeless(u, mu, b):
        calls.append(np.size(u))
        busy(np.size(u) * 1e-5)
        return laplace_ppf(u, mu, b)

    results, best = measure(hopeless, inputs, 0.0, 1.0, cap=0.5)
    assert calls == [10_000] and best > EARLY_STOP_SECONDS and len(results) == 1, (calls, best)


# ---------------------------------------------------------------------------------------------
# mechanism: error carried forward only for one consistent error; Gaussian noise named
# ---------------------------------------------------------------------------------------------


def sensitivity_small_at_large_k(m, k):
    """k/m at question 1's sizes (k <= 64), 1000 times too small at question 2's large datasets."""
    return k / m if k < 100 else k / m / 1000


def noise_of_that_sensitivity(X, epsilon, *, rng):
    X = np.asarray(X, dtype=float)
    m, k = X.shape
    return X.mean(axis=0) + rng.laplace(0.0, sensitivity_small_at_large_k(m, k) / epsilon, size=k)


def test_carry_forward_does_not_credit_noise_1000_times_too_small() -> None:
    for seed in (TEST_GRADING_SEED, 11):
        assert check("mechanism", "q1", sensitivity_small_at_large_k, grading_seed=seed).score == 1
        with graded() as session:
            fb = check("mechanism", "q2", noise_of_that_sensitivity, grading_seed=seed,
                       carried={"mean_sensitivity": sensitivity_small_at_large_k})
        assert fb.score < 2 and "error carried forward" not in every(fb), fb.report()
        assert any("error carried forward was not applied" in text for text in session.flags), session.flags


def test_carry_forward_credit_is_noted_for_the_instructor() -> None:
    wrong = lambda m, k: 1 / m  # noqa: E731 -- one coordinate's change

    def mean(X, epsilon, *, rng):
        X = np.asarray(X, dtype=float)
        return X.mean(axis=0) + rng.laplace(0.0, wrong(*X.shape) / epsilon, size=X.shape[1])

    with graded() as session:
        fb = check("mechanism", "q2", mean, grading_seed=TEST_GRADING_SEED, carried={"mean_sensitivity": wrong})
    assert fb.score == 2, fb.report()
    assert any("question 1 should have lost points" in text for text in session.flags), session.flags


def test_gaussian_noise_is_named_not_called_dependent() -> None:
    def gaussian(X, epsilon, *, rng):
        X = np.asarray(X, dtype=float)
        m, k = X.shape
        return X.mean(axis=0) + rng.normal(0.0, math.sqrt(2) * k / (m * epsilon), size=k)

    for seed in (None, TEST_GRADING_SEED):
        fb = check("mechanism", "q2", gaussian, grading_seed=seed)
        assert fb.score < 2 and "not independent" not in every(fb), fb.report()
        assert "Gaussian" in messages(fb), fb.report()


# ---------------------------------------------------------------------------------------------
# selection: the law is tested on the audit's calls too; the package and the exact law are noted
# ---------------------------------------------------------------------------------------------


def _rows(index: np.ndarray, m: int) -> np.ndarray:
    column = np.arange(m)
    return np.where(column < index[:, None], 0, np.where(column == index[:, None], 1, -1))


def correct_unless_audited(answers, threshold, epsilon, *, size, rng):
    """AboveThreshold, but without threshold noise (the classic bug) in calls of the audit's size."""
    q = np.asarray(answers, dtype=float)
    rho = 0.0 if size == 50_000 else rng.laplace(0.0, 2.0 / epsilon, size=(size, 1))
    above = q + rng.laplace(0.0, 4.0 / epsilon, size=(size, q.size)) >= threshold + rho
    return _rows(np.where(above.any(axis=1), np.argmax(above, axis=1), q.size), q.size)


def test_a_bug_only_in_the_audits_calls_fails_the_law_question() -> None:
    fb = check("selection", "q1", correct_unless_audited, grading_seed=TEST_GRADING_SEED)
    law = [f for f in fb.findings if f.check == "law"]
    assert law and law[0].passed is False and fb.score < 2, fb.report()


def test_calling_the_package_or_sampling_the_exact_law_is_noted_for_the_instructor() -> None:
    from dptutor.selection import above_threshold_probabilities

    def package_at(answers, threshold, epsilon, *, size, rng):
        return sparse_vector(answers, threshold, epsilon, rng, size=size)

    def exact_law_at(answers, threshold, epsilon, *, size, rng):
        p = above_threshold_probabilities(answers, threshold, epsilon)
        return _rows(rng.choice(p.size, size=size, p=p / p.sum()), len(answers))

    def package_max(answers, epsilon, *, size, rng):
        return package_rnm(answers, epsilon, rng, size=size)

    for question, fn, words in (("q1", package_at, "exactly the messages"), ("q1", exact_law_at, "exact law"),
                                ("q3", package_max, "exactly the messages")):
        with graded() as session:
            fb = check("selection", question, fn, grading_seed=TEST_GRADING_SEED)
        assert fb.score == 2, fb.report()
        assert any(words in text for text in session.flags), (question, session.flags)
    from test_grading import INSTRUCTOR_DIR, run_notebook_code
    reference = run_notebook_code(INSTRUCTOR_DIR / "selection.md", feedback_cells=False)
    with graded() as session:
        for question, name in (("q1", "above_threshold"), ("q3", "report_noisy_max")):
            assert check("selection", question, reference[name], grading_seed=TEST_GRADING_SEED).score == 2
    assert session.flags == []


# ---------------------------------------------------------------------------------------------
# instructor notes: marked in the recorded messages, kept out of the student's feedback file
# ---------------------------------------------------------------------------------------------


def test_instructor_notes_are_marked_and_left_out_of_the_feedback_file() -> None:
    from dptutor.course.reports import student_feedback
    from dptutor.course.result import SubmissionResult
    from dptutor.course.scores import ScoreRecord

    note = INSTRUCTOR_NOTE + "calls the package instead of writing the code"
    assert is_instructor_note(note) and not is_instructor_note("note (not scored): error carried forward: ...")
    result = SubmissionResult("alice.ipynb", "sampler", {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": 2.0, "q2": 1.0, "q3": 1.0},
                              {"q1": [], "q2": [note, "a message for the student"], "q3": []}, [])
    text = student_feedback(ScoreRecord(result))
    assert "calls the package" not in text and "for the instructor" not in text, text
    assert "a message for the student" in text
    assert note in result.row(__import__("dptutor.assignments", fromlist=["ASSIGNMENTS"]).ASSIGNMENTS["sampler"])[-1]
