"""Course instances: answers drawn per course by a secret, and kept out of everything students get.

The families and the keyed derivation (:mod:`dptutor.assignments.instances`), the course folder
(:mod:`dptutor.course.folders`, ``python -m dptutor course new``), grading with a course's answer key
(``grade --course FOLDER``), and the search of the wheel, the repository and a course's student
notebooks for each course answer.  One wheel build (about 7 s) and two real grading runs of one small
submission; the rest runs in this process.
"""
from __future__ import annotations

import collections
import csv
import hashlib
import hmac
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from helpers import ROOT
from dptutor.audit import estimate_loss
from dptutor.assignments import ASSIGNMENTS, check, checker, mystery_a, mystery_b, use_course, use_self_study
from dptutor.assignments.feedback import TEST_GRADING_SEED
from dptutor.assignments import instances
from dptutor.course.folders import answer_lines, load_course, new_course
from dptutor.assignments.instances import COURSE_FAMILIES, FAMILIES, SELF_STUDY, active_member, member_of
from dptutor.course import keys
from dptutor.course.keys import course_key, course_scope, course_tokens
from dptutor.assignments.pair_audit import mystery_pair

NOTEBOOKS = ("audit", "bughunt", "mechanism", "pair_audit", "sampler", "selection")
#: Secrets of the balance test (deterministic: the test gives the same counts on every run).
SECRETS = [f"course secret number {i:05d}" for i in range(1400)]


@pytest.fixture(autouse=True)
def _book_mysteries():
    """Every test starts and ends with the book's self-study mysteries."""
    use_self_study()
    yield
    use_self_study()


@pytest.fixture(scope="module")
def drawn() -> dict[str, dict[object, str]]:
    """For each assignment, one token of each member the secrets draw (the first secret that draws it)."""
    out: dict[str, dict[object, str]] = {a: {} for a in FAMILIES}
    for secret in SECRETS[:200]:
        for assignment, token in course_tokens(secret).items():
            out[assignment].setdefault(member_of(token)[1], token)
    return out


def _courses_that_differ() -> tuple[str, str]:
    """Two secrets whose courses differ in both assignments (the first such pair among SECRETS)."""
    first = {a: member_of(t)[1] for a, t in course_tokens(SECRETS[0]).items()}
    for secret in SECRETS[1:]:
        other = {a: member_of(t)[1] for a, t in course_tokens(secret).items()}
        if all(first[a] != other[a] for a in first) and first["audit"].bug != other["audit"].bug \
                and abs(first["pair_audit"].true_epsilon - other["pair_audit"].true_epsilon) > 0.2:
            return SECRETS[0], secret
    raise AssertionError("no two courses differ")


# ---------------------------------------------------------------------------------------------
# the keyed derivation
# ---------------------------------------------------------------------------------------------


def test_the_same_secret_reproduces_its_course_and_other_secrets_give_other_keys() -> None:
    a, b = _courses_that_differ()
    assert course_tokens(a) == course_tokens(a)
    assert course_tokens(a) != course_tokens(b)
    # The token is HMAC-SHA256 of the assignment under the course key HMAC-SHA256(secret, label).
    key = hmac.new(a.encode(), b"dptutor course instance v1", hashlib.sha256).digest()
    assert course_tokens(a)["audit"].endswith(hmac.new(key, b"audit", hashlib.sha256).hexdigest()[:32])
    with pytest.raises(ValueError, match="secret"):
        course_tokens("short")


def test_every_member_is_reachable_and_the_draw_is_balanced() -> None:
    counts = {a: collections.Counter() for a in FAMILIES}
    for secret in SECRETS:
        for assignment, token in course_tokens(secret).items():
            counts[assignment][member_of(token)[1]] += 1
    for assignment, family in COURSE_FAMILIES.items():
        assert SELF_STUDY[assignment] not in counts[assignment], "a course drew the public self-study member"
        assert set(counts[assignment]) == set(family), assignment
        observed = [counts[assignment][m] for m in family]
        # Uniform draw: a chi-square test at level 0.001 (deterministic secrets: the same p on every run).
        p = stats.chisquare(observed).pvalue
        assert p > 1e-3, (assignment, observed, p)
    assert len(FAMILIES["audit"]) == 8 and len(FAMILIES["pair_audit"]) == 6


# ---------------------------------------------------------------------------------------------
# errors and the member: no difference a student could see
# ---------------------------------------------------------------------------------------------

_BAD_AUDIT = [
    ("x", [[0.0, 1.0]]), ("x", np.zeros(3)), ("x", np.zeros((2, 0))), ("x", np.full((2, 3), np.nan)),
    ("epsilon", 1e-320), ("epsilon", 0.0), ("epsilon", -1.0), ("epsilon", np.nan), ("epsilon", np.inf),
    ("epsilon", 1e7), ("epsilon", "1"), ("epsilon", True), ("rng", None), ("rng", 0),
    ("rng", np.random.RandomState(0)),
]
_BAD_PAIR = [("data", np.nan), ("data", np.inf), ("data", 1e13), ("data", "1"), ("size", -1), ("size", 1 << 25),
             ("size", 1.5), ("rng", None), ("rng", np.random.RandomState(0))]


def _errors() -> list[tuple[str, str]]:
    """The error (type and message) of each bad call of the three mysteries, in a fixed order."""
    out = []
    for mystery in (mystery_a, mystery_b):
        for name, bad in _BAD_AUDIT:
            kwargs = {"x": np.zeros((2, 3)), "epsilon": 1.0, "rng": np.random.default_rng(0), name: bad}
            with pytest.raises((TypeError, ValueError)) as info:
                mystery(**kwargs)
            out.append((type(info.value).__name__, str(info.value)))
    for name, bad in _BAD_PAIR:
        kwargs = {"data": 0.0, "size": 3, "rng": np.random.default_rng(0), name: bad}
        with pytest.raises((TypeError, ValueError)) as info:
            mystery_pair(**kwargs)
        out.append((type(info.value).__name__, str(info.value)))
    return out


def test_errors_are_the_same_for_every_member(drawn: dict) -> None:
    reference = _errors()  # the self-study members
    assert not any("sqrt" in m or "scale" in m for _, m in reference), reference
    # The leak: this call once named the formula of mystery A's scale.
    assert reference[_BAD_AUDIT.index(("epsilon", 1e-320))] == (
        "ValueError", "epsilon must lie in [1e-06, 1e+06], got 1e-320")
    for assignment in FAMILIES:
        assert set(drawn[assignment]) == set(COURSE_FAMILIES[assignment])
        for member, token in drawn[assignment].items():
            use_course(token)
            assert active_member(assignment) == member
            assert _errors() == reference, member
            use_self_study()


class _Untouchable:
    """A member whose use fails loudly: a mystery must have rejected a bad input before touching it."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the member was used ({name}) before the inputs were validated")


def test_a_bad_input_is_refused_before_the_member_is_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    """The member-dependent work starts only after every check: the same work, so the same time, for
    every member, whatever the bad input."""
    reference = _errors()
    monkeypatch.setitem(instances._ACTIVE, "audit", _Untouchable())
    monkeypatch.setitem(instances._ACTIVE, "pair_audit", _Untouchable())
    assert _errors() == reference


def test_the_generator_sees_the_same_calls_for_every_audit_member(drawn: dict) -> None:
    """The noise is drawn standard and scaled afterwards: the generator's state after a call is the
    same for every member, and no call passes it the scale."""
    x = np.zeros((50, 3))
    states = set()
    for token in drawn["audit"].values():
        use_course(token)
        rng = np.random.default_rng(5)
        mystery_a(x, 1.0, rng)
        mystery_b(x, 1.0, rng)
        states.add(str(rng.bit_generator.state))
    assert len(states) == 1


def test_self_study_mysteries_are_the_books() -> None:
    """The book's mysteries are unchanged: A adds Laplace noise of scale sqrt(n)/epsilon, B n/epsilon, and the
    pair mechanism two columns of Lap(2)."""
    from dptutor.mechanisms import add_laplace_noise

    x = np.zeros((1000, 5))
    for mystery, scale in ((mystery_a, 5 ** 0.5), (mystery_b, 5.0)):
        assert np.array_equal(mystery(x, 1.0, np.random.default_rng(1)),
                              add_laplace_noise(x, scale, np.random.default_rng(1)))
    assert np.array_equal(mystery_pair(0.0, 100, np.random.default_rng(2)),
                          np.random.default_rng(2).laplace(0.0, 2.0, (100, 2)))


# ---------------------------------------------------------------------------------------------
# grading with a course's answer key
# ---------------------------------------------------------------------------------------------

#: A dimension at which each bug's violation is plain at 200 000 trials.
_SHOWS_AT = {"one-sided": 2, "sensitivity-1": 4, "l2": 2, "half-scale": 2}


def _solve_audit(member) -> tuple[dict, dict, str]:
    """A correct answer to the audit of ``member`` (whose course is in use): verdicts, evidence, diagnosis."""
    n = _SHOWS_AT[member.bug]
    evidence = {label: estimate_loss(mech, n, 1.0, 200_000, rng=11 + i)
                for i, (label, mech) in enumerate((("A", mystery_a), ("B", mystery_b)))}
    verdicts = {label: "violates" if evidence[label].is_violation(0.95) else "no evidence" for label in "AB"}
    return verdicts, evidence, member.bug


def test_a_correct_answer_scores_full_with_its_course_key_only() -> None:
    a, b = _courses_that_differ()
    key_a, key_b = course_key(a), course_key(b)
    with course_scope(key_a):
        member = active_member("audit")
        verdicts, evidence, diagnosis = _solve_audit(member)
        assert verdicts == {label: member.verdict(label) for label in "AB"}
        true_epsilon = active_member("pair_audit").true_epsilon
        # The student's feedback (grading_seed=None) replays the evidence with the same course's mysteries.
        feedback = checker("audit").q1(verdicts, evidence)
        assert all(f.passed is not False for f in feedback.findings) and "reproduces your counts" in str(feedback)
    answers = [("audit", "q1", (verdicts, evidence)), ("audit", "q2", (verdicts, evidence)),
               ("audit", "q3", (diagnosis,)), ("pair_audit", "q3", (true_epsilon,))]
    with course_scope(key_a):
        for assignment, question, objects in answers:
            fb = check(assignment, question, *objects, grading_seed=TEST_GRADING_SEED)
            assert fb.score == fb.points, (assignment, question, fb)
    with course_scope(key_b):  # another course: the diagnosis and the true epsilon are wrong there
        scores = {(a_, q): check(a_, q, *o, grading_seed=TEST_GRADING_SEED).score for a_, q, o in answers}
    assert scores["audit", "q3"] == 0 and scores["pair_audit", "q3"] == 0 and sum(scores.values()) < 7.0


def test_a_student_kernel_cannot_use_the_grading_checks_as_an_oracle() -> None:
    """With only the course's token in use (what a student notebook holds), every check that grades
    refuses to run, for every question that reads an answer and whatever the answer tried; the
    feedback checks still run; and the token is no course key (nor is any string a student can derive
    from it without the secret)."""
    secret = SECRETS[3]
    key, tokens = course_key(secret), course_tokens(secret)
    for assignment, token in tokens.items():
        use_course(token)
        graded = {"audit": [("q3", (d,)) for d in instances.AUDIT_BUGS],
                  "pair_audit": [("q3", (e,)) for e in (1.0, 2.0, 2.5, 3.2, 4.0, 5.0)],
                  "bughunt": [(q, ({label: "broken"}, {label: "none"}, {label: None}))
                              for q, label in (("q1", "histogram"), ("q2", "squares"), ("q3", "selection"))]}[assignment]
        for question, objects in graded:
            with pytest.raises(ValueError, match="only in its private answer key"):
                check(assignment, question, *objects, grading_seed=TEST_GRADING_SEED)
            fb = check(assignment, question, *objects)  # feedback: recorded, graded after submission
            assert fb.score is None or fb.score == 0 or "after" in str(fb)
        for bad in (token, token.rsplit(":", 1)[1]):
            with pytest.raises(ValueError, match="key must be a course key"):
                course_scope(bad)
            with pytest.raises(ValueError, match="key must be a course key"):
                keys.use_answer_key(bad)
        # A string of the key's form made from the token is the key of another course, not this one.
        assert keys.tokens_of_key(token.rsplit(":", 1)[1] * 2) != tokens
    # The verdict questions replay the evidence but read no answer before grading either.
    use_course(tokens["audit"])
    evidence = {label: estimate_loss(m, 2, 1.0, 100_000, rng=3) for label, m in (("A", mystery_a), ("B", mystery_b))}
    verdicts = {"A": "violates", "B": "no evidence"}
    assert "graded after" in str(check("audit", "q1", verdicts, evidence))
    with pytest.raises(ValueError, match="only in its private answer key"):
        check("audit", "q1", verdicts, evidence, grading_seed=TEST_GRADING_SEED)
    # With the key, the same checks grade; self-study answers stay public.
    with course_scope(key):
        assert check("audit", "q3", member_of(tokens["audit"])[1].bug, grading_seed=TEST_GRADING_SEED).score == 1.0
    use_self_study()
    assert check("audit", "q3", SELF_STUDY["audit"].bug, grading_seed=TEST_GRADING_SEED).score == 1.0


def test_the_key_file_must_match_its_key(tmp_path: Path) -> None:
    """An answer key whose key is missing or whose token does not follow from the key is refused."""
    course = new_course(tmp_path / "c", SECRETS[4])
    path = course.folder / "private" / "answer-key.toml"
    text = path.read_text(encoding="utf-8")
    assert f'key = "{course.key}"' in text and course.tokens == course_tokens(SECRETS[4])
    path.write_text(text.replace(f'key = "{course.key}"\n', ""), encoding="utf-8")
    with pytest.raises(ValueError, match="no valid course key"):
        load_course(course.folder)
    other = course_tokens(SECRETS[5])["audit"]
    path.write_text(text.replace(course.tokens["audit"], other), encoding="utf-8")
    with pytest.raises(ValueError, match="folder: "):
        load_course(course.folder)


# ---------------------------------------------------------------------------------------------
# the course folder
# ---------------------------------------------------------------------------------------------


def _answers(folder) -> list[str]:
    """The strings that state the course's answers: its answer key's lines and the instructor notes."""
    out = []
    for assignment, member in folder.members.items():
        out += answer_lines(assignment, member)
    text = (folder.folder / "private" / "instructor" / "audit.md").read_text(encoding="utf-8")
    start = text.index("Mechanism ", text.index("Instructor version"))
    out.append(text[start:text.index(";", start)])
    text = (folder.folder / "private" / "instructor" / "pair_audit.md").read_text(encoding="utf-8")
    start = text.index("The mystery mechanism adds")
    out.append(text[start:text.index(",", start)])
    text = (folder.folder / "private" / "instructor" / "bughunt.md").read_text(encoding="utf-8")
    start = text.index("In this course ")
    out.append(text[start:text.index(";", start)])
    return out


def test_course_folder_round_trip_and_refusals(tmp_path: Path) -> None:
    secret = "a long course secret for the round trip"
    made = new_course(tmp_path / "dp-2026", secret)
    assert made.name == "dp-2026" and load_course(made.folder) == made
    assert made.tokens == course_tokens(secret)
    files = sorted(str(p.relative_to(made.folder)) for p in made.folder.rglob("*") if p.is_file())
    assert files == [".gitignore", "README.md", "grading.toml", "private/answer-key.toml",
                     *[f"private/instructor/{n}.md" for n in NOTEBOOKS], *[f"release/{n}.md" for n in NOTEBOOKS]]
    # The secret is stored nowhere.
    assert not any(secret in p.read_text(encoding="utf-8") for p in made.folder.rglob("*") if p.is_file())
    # The same secret writes the same folder again (the instructor's grading.toml is kept).
    (made.folder / "grading.toml").write_text('course = "dp-2026"\n[points]\nq1 = 3\n', encoding="utf-8")
    before = {p: p.read_bytes() for p in made.folder.rglob("*") if p.is_file()}
    assert new_course(made.folder, secret) == made
    assert {p: p.read_bytes() for p in made.folder.rglob("*") if p.is_file()} == before
    with pytest.raises(ValueError, match="another secret"):
        new_course(made.folder, secret + "!")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not a course folder"):
        new_course(tmp_path / "busy", secret)
    # An answer key edited by hand no longer matches its token.
    key = made.folder / "private" / "answer-key.toml"
    line = answer_lines("pair_audit", made.members["pair_audit"])[-1]
    key.write_text(key.read_text().replace(line, "true_epsilon = 0.25"))
    with pytest.raises(ValueError, match="do not match"):
        load_course(made.folder)
    # The student notebooks are the instructor's without solutions, and carry the course's tokens.
    for name in ("audit", "pair_audit", "bughunt"):
        release = (made.folder / "release" / f"{name}.md").read_text(encoding="utf-8")
        assert f'use_course("{made.tokens[name]}")' in release
        assert "BEGIN SOLUTION" not in release and "Reference solution" not in release


def test_the_course_instructor_notebooks_solve_the_course(tmp_path: Path) -> None:
    """Executed as a teaching assistant would, a course's instructor notebooks (a course whose broken
    mechanism is B) show full points on every feedback line, and their answers grade full with the
    course's key."""
    import jupytext

    from dptutor.course import FEEDBACK_TAG

    secret = next(s for s in SECRETS if member_of(course_tokens(s)["audit"])[1].broken == "B")
    course = new_course(tmp_path / "course", secret)
    for name, graded in (("audit", ("verdicts", "evidence", "diagnosis")), ("pair_audit", ("true_epsilon",)),
                         ("bughunt", ("verdicts", "diagnoses", "evidence"))):
        namespace: dict = {"__name__": "__notebook__"}
        for cell in jupytext.read(course.folder / "private" / "instructor" / f"{name}.md").cells:
            if cell.cell_type != "code":
                continue
            if FEEDBACK_TAG in cell.metadata.get("tags", []):
                report = eval(compile(cell.source, name, "eval"), namespace).report()
                assert "✗" not in report, report
            else:
                exec(compile(cell.source, name, "exec"), namespace)
        assert active_member(name) == course.members[name]
        use_self_study()
        with course_scope(course.key):
            for q in ASSIGNMENTS[name].questions:
                if set(q.needs) <= set(graded):
                    fb = check(name, q.name, *(namespace[n] for n in q.needs), grading_seed=TEST_GRADING_SEED)
                    assert fb.score == fb.points, fb.report()


def _wheel_text(tmp: Path) -> str:
    """Every file of a wheel built from this repository's package (outside the repository), as text."""
    src = tmp / "src"
    shutil.copytree(ROOT / "dptutor", src / "dptutor", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "LICENSE-text"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                           "--disable-pip-version-check", ".", "-w", str(tmp / "wheel")],
                          cwd=src, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp / "wheel").glob("dptutor-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return "\n".join(zf.read(info).decode("latin-1") for info in zf.infolist())


def _repository_text() -> dict[str, str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    out = {}
    for name in files:
        path = ROOT / name
        if path.is_file() and path.stat().st_size < 5_000_000 and not name.startswith("tests/"):
            out[name] = path.read_bytes().decode("latin-1")
    return out


def test_no_course_answer_is_in_the_wheel_the_repository_or_the_student_notebooks(tmp_path: Path) -> None:
    wheel = _wheel_text(tmp_path)
    repository = _repository_text()
    public_lines = {line for a, m in SELF_STUDY.items() for line in answer_lines(a, m)}
    courses = [new_course(tmp_path / f"course-{i}", secret, name=f"course-{i}")
               for i, secret in enumerate(_courses_that_differ() + ("a third secret for the search",))]
    searched = 0
    for course in courses:
        release = {p.name: p.read_text(encoding="utf-8") for p in (course.folder / "release").iterdir()}
        private = "\n".join(p.read_text(encoding="utf-8") for p in (course.folder / "private").rglob("*.md")) + \
            (course.folder / "private" / "answer-key.toml").read_text(encoding="utf-8")
        for answer in _answers(course):
            assert answer in private, f"{answer!r} is not in the private folder: the search would prove nothing"
            searched += 1
            for name, text in release.items():
                assert answer not in text, f"release/{name} states {course.name}'s answer {answer!r}"
            if answer not in public_lines:  # the self-study answers are public by design
                assert answer not in wheel, f"the wheel states {course.name}'s answer {answer!r}"
                hits = [name for name, text in repository.items() if answer in text]
                assert not hits, f"{hits} state {course.name}'s answer {answer!r}"
    # Nor is any secret anywhere, or the course key (which selects the answers when grading) anywhere but
    # in the course folder's private part.
    handed_out = [p for c in courses for p in c.folder.rglob("*.*") if "private" not in p.relative_to(c.folder).parts]
    assert any(p.parent.name == "release" for p in handed_out)
    for secret in _courses_that_differ():
        key = hmac.new(secret.encode(), b"dptutor course instance v1", hashlib.sha256).hexdigest()
        assert any(key in (c.folder / "private" / "answer-key.toml").read_text() for c in courses)
        for text in [wheel, *repository.values(), *(p.read_text() for p in handed_out)]:
            assert secret not in text and key not in text
        for text in (p.read_text() for c in courses for p in c.folder.rglob("*.*")):
            assert secret not in text
    assert searched >= 3 * 8


# ---------------------------------------------------------------------------------------------
# the command line, and a real grading run with a course folder
# ---------------------------------------------------------------------------------------------


def test_course_new_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from dptutor.cli import main

    monkeypatch.delenv("DPTUTOR_COURSE_SECRET", raising=False)
    assert main(["course", "new", str(tmp_path / "c")]) == 2
    assert "--secret" in capsys.readouterr().err
    assert main(["course", "new", str(tmp_path / "c"), "--secret", "short"]) == 2
    assert "at least 12 characters" in capsys.readouterr().err
    monkeypatch.setenv("DPTUTOR_COURSE_SECRET", "a secret from the environment")
    assert main(["course", "new", str(tmp_path / "c"), "--name", "dp-2026"]) == 0
    assert "hand out" in capsys.readouterr().out
    assert load_course(tmp_path / "c").tokens == course_tokens("a secret from the environment")
    assert main(["course", "new", str(tmp_path / "c"), "--name", "bad name!"]) == 2


_PAIR_SUBMISSION = """\
```{{code-cell}} ipython3
import numpy as np

def statistic(outputs):
    return np.clip(outputs, 0.0, 1.0).sum(axis=1)

def attack(outputs):
    return (outputs >= 1.0).all(axis=1)

true_epsilon = {true_epsilon}
```
"""


def test_grading_with_a_course_folder_uses_its_answer_key(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """One pair_audit submission, right for course A: full marks with --course A, q3 lost with --course B;
    each CSV records its course."""
    secret_a, secret_b = _courses_that_differ()
    a, b = new_course(tmp_path / "course-a", secret_a), new_course(tmp_path / "course-b", secret_b)
    subs = tmp_path / "submissions"
    subs.mkdir()
    (subs / "alice.md").write_text(_PAIR_SUBMISSION.format(true_epsilon=a.members["pair_audit"].true_epsilon))
    flags = [] if shutil.which("bwrap") else ["--no-sandbox"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = {}
    for course in (a, b):
        out = tmp_path / f"{course.name}.csv"
        proc = subprocess.run([sys.executable, "-m", "dptutor", "grade", "pair_audit", str(subs), "--course",
                               str(course.folder), "--csv", str(out), *flags], capture_output=True, text=True,
                              timeout=600, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        with open(out, newline="", encoding="utf-8") as fh:
            (rows[course.name],) = list(csv.DictReader(fh))
    assert rows["course-a"]["course"] == a.identifier and rows["course-b"]["course"] == b.identifier
    assert a.identifier.startswith("course-a@") and len(a.fingerprint) == 12
    assert float(rows["course-a"]["total"]) == 5.0, rows["course-a"]
    # Another course of the same name (another secret) cannot add to, or regrade into, course A's file.
    twin = new_course(tmp_path / "twin" / "course-a", secret_b)
    assert twin.name == a.name and twin.identifier != a.identifier
    proc = subprocess.run([sys.executable, "-m", "dptutor", "grade", "pair_audit", str(subs), "--course",
                           str(twin.folder), "--csv", str(tmp_path / "course-a.csv"), "--regrade", *flags],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 2 and "holds scores of course" in proc.stderr, proc.stderr
    # A course folder that is not one, or does not exist, is refused before anything runs.
    from dptutor.cli import main

    for bad, message in ((subs, "not a course folder"), (tmp_path / "nowhere", "no such course folder")):
        capsys.readouterr()
        code = main(["grade", "pair_audit", str(subs), "--course", f"{bad}/", "--csv", str(tmp_path / "x.csv"), *flags])
        assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
    assert float(rows["course-b"]["q3"]) == 0.0 and float(rows["course-b"]["total"]) < 5.0, rows["course-b"]


def test_the_gradescope_export_of_a_course_grades_against_its_mysteries(tmp_path: Path) -> None:
    """``export-otter --course FOLDER``: the master notebook is the course's, every hidden test of the
    instance assignments selects the course's mysteries itself, and no answer reaches a Markdown cell
    (which otter copies into the student notebook); a path that is no course folder is refused."""
    import nbformat

    from dptutor.course.otter import export_otter

    course = new_course(tmp_path / "course", "a secret for the gradescope export")
    target = export_otter("pair_audit", tmp_path / "otter", course=course.folder)
    nb = nbformat.read(target, as_version=4)
    hidden = [c.source for c in nb.cells if "show_grading_report(" in c.source]
    select = f"use_answer_key({course.key!r})"
    assert hidden and all(select in s for s in hidden)
    student = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert not any(answer in student for answer in _answers(course))
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert f'use_course("{course.tokens["pair_audit"]}")' in code  # the student notebook's own line
    # An assignment without mysteries is exported as before, with no selection line.
    plain = nbformat.read(export_otter("sampler", tmp_path / "otter-s", course=course.folder,
                                       wheel=next((tmp_path / "otter").glob("dptutor-*.whl"))), as_version=4)
    assert not any("use_course" in c.source for c in plain.cells)
    with pytest.raises(ValueError, match="course: .* is not a course folder"):
        export_otter("pair_audit", tmp_path / "otter-x", course=tmp_path)


def test_course_notebooks_fill_named_slots_and_say_where_they_come_from(tmp_path: Path) -> None:
    """``course new`` fills the instructor notebooks' named slots, whatever their wording, refuses a
    notebook without them, and every notebook it writes names its source and the command."""
    from dptutor.course.folders import course_notebook, fill_slots

    book = ROOT / "book" / "assignments" / "instructor"
    member = COURSE_FAMILIES["pair_audit"][0]
    text = (book / "pair_audit.md").read_text(encoding="utf-8")
    reworded = text.replace("The mystery mechanism adds", "Reworded: the mystery adds")
    assert reworded != text and "Reworded" not in course_notebook("pair_audit", reworded, member, "dp-2026")
    with pytest.raises(ValueError, match="'true-epsilon'"):
        course_notebook("pair_audit", text.replace("# BEGIN SLOT true-epsilon\n", "").replace(
            "# END SLOT true-epsilon\n", ""), member, "dp-2026")
    with pytest.raises(ValueError, match="does not close"):
        course_notebook("pair_audit", text.replace("# BEGIN SLOT true-epsilon\n", ""), member, "dp-2026")
    assert fill_slots("a\n# BEGIN SLOT x\nold\n# END SLOT x\nb\n", {"x": "new\n"}) == "a\nnew\nb\n"
    assert fill_slots("a\n<!-- BEGIN SLOT x -->\nkept\n<!-- END SLOT x -->\n", {}) == "a\nkept\n"
    with pytest.raises(ValueError, match="never closed"):
        fill_slots("# BEGIN SLOT x\n", {})
    made = new_course(tmp_path / "dp-2026", "a long course secret for the banners")
    for name in NOTEBOOKS:
        private = (made.folder / "private" / "instructor" / f"{name}.md").read_text(encoding="utf-8")
        release = (made.folder / "release" / f"{name}.md").read_text(encoding="utf-8")
        for text, source in ((private, f"book/assignments/instructor/{name}.md"), (release, f"private/instructor/{name}.md")):
            banner = text.split("\n---\n", 1)[1].splitlines()[0]
            assert banner.startswith("<!-- Generated from") and source in banner, banner
            assert "python -m dptutor course new FOLDER --name dp-2026" in banner, banner
        assert "SLOT" not in private and "SLOT" not in release


def test_a_course_folder_from_before_bughunt_still_loads(tmp_path: Path) -> None:
    # A folder written before the sixth assignment has no [bughunt] table; the key still gives its members.
    made = new_course(tmp_path / "old", "a long course secret written before bughunt")
    key_file = made.folder / "private" / "answer-key.toml"
    text = key_file.read_text(encoding="utf-8")
    start = text.index("[bughunt]")
    end = text.find("\n[", start + 1)
    key_file.write_text(text[:start] + (text[end + 1:] if end >= 0 else ""), encoding="utf-8")
    assert "[bughunt]" not in key_file.read_text(encoding="utf-8")
    assert load_course(made.folder) == made
    # Any other missing table is still refused.
    text = key_file.read_text(encoding="utf-8")
    start = text.index("[audit]")
    end = text.find("\n[", start + 1)
    key_file.write_text(text[:start] + (text[end + 1:] if end >= 0 else ""), encoding="utf-8")
    with pytest.raises(ValueError, match="no token for audit"):
        load_course(made.folder)
