"""Hostile submissions against what crosses from the kernel to the grader, and against the checks.

One test (at least) per attack class of issue 20 items 2, 3, 4 and 6.  Most run the grading
protocol in this process (:func:`dptutor.course.remote.grade_in_process`: the same cells, files and
parsing as the runner, with the cells executed here); a kernel that forges files is simulated by a
``run_cell`` that rewrites each answer after its cell, as a kernel can.  The attacks that need a
real kernel (IPython hooks, the call stack a kernel sees, a NaN answer followed by more questions)
go through the runner's public entry point :func:`dptutor.course.executor.grade_notebook`.  Each test
asserts the score, and that the grader survives (returns a result, imports nothing it was told to).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dptutor.audit import AuditResult, estimate_loss
from dptutor.distributions import laplace_ppf
from dptutor.assignments import ASSIGNMENTS
from dptutor.assignments import audit as audit_module
from dptutor.course.remote import grade_in_process, grade_question
from dptutor.mechanisms import add_laplace_noise
from test_grading import ASSIGNMENT_DIR, INSTRUCTOR_DIR, run_notebook_code


@pytest.fixture(scope="module")
def reference() -> dict[str, dict]:
    return {name: run_notebook_code(INSTRUCTOR_DIR / a.notebook, feedback_cells=False)
            for name, a in ASSIGNMENTS.items()}


def scores(fbs: dict) -> dict[str, float]:
    return {q: fb.score for q, fb in fbs.items()}


def messages(fbs: dict, q: str) -> str:
    return " | ".join(fbs[q].messages)


def full(name: str) -> dict[str, float]:
    return {q.name: q.points for q in ASSIGNMENTS[name].questions}


# ---------------------------------------------------------------------------------------------
# a kernel that forges its answers: run each cell, then rewrite the answer file it wrote
# ---------------------------------------------------------------------------------------------

_ANSWER = re.compile(r"'((?:out|needs)-[0-9a-f]{32}\.npz)'")  # a bare name in the working folder


def grade_with_tampering(namespace: dict, assignment: str, tamper, sources: list | None = None,
                         questions: tuple[str, ...] | None = None) -> dict:
    """Grade ``namespace`` as the runner does, but after every cell ``tamper(meta, arrays)`` may rewrite
    the answer file (``meta`` the JSON, ``arrays`` the list of arrays); it returns the new pair, or
    ``(bytes, None)`` for raw file contents."""
    a = ASSIGNMENTS[assignment]

    async def run_cell(source: str, limit: float):
        if sources is not None:
            sources.append(source)
        cell = {"outputs": []}
        t0 = time.perf_counter()
        exec(compile(source, "<cell>", "exec"), namespace)
        match = _ANSWER.search(source)
        if match and Path(match[1]).exists():
            path = Path(match[1])
            with np.load(path, allow_pickle=False) as npz:
                meta = json.loads(str(npz["meta"][()]))
                arrays = [npz[f"a{i}"] for i in range(len(npz.files) - 1)]
            new_meta, new_arrays = tamper(meta, arrays)
            if new_arrays is None:
                path.write_bytes(new_meta)
            else:
                np.savez(path, meta=np.array(json.dumps(new_meta)), **{f"a{i}": x for i, x in enumerate(new_arrays)})
        return cell, time.perf_counter() - t0

    async def main():
        with tempfile.TemporaryDirectory() as workdir, contextlib.chdir(workdir):  # the kernel's working folder
            return {q.name: await grade_question(run_cell, a.name, q.name, workdir, timeout=60) for q in a.questions
                    if questions is None or q.name in questions}

    return asyncio.run(main())


def test_forged_records_naming_modules_import_nothing(reference: dict) -> None:
    """A value that names a module and a class (the old 'dataclass' kind, and an object of a
    dptutor type the assignment does not allow) is refused or stays inert data."""
    for name in ("dptutor.__main__", "dptutor.cli"):
        sys.modules.pop(name, None)

    def forge(meta, arrays):
        if "needs" in meta and "evidence" in meta["needs"]:
            meta["needs"]["evidence"] = {"k": "dict", "items": [
                ["A", {"k": "dataclass", "module": "dptutor.__main__", "name": "main", "fields": []}],
                ["B", {"k": "object", "type": "Budget", "fields": [["epsilon", {"k": "float", "v": 1.0}]]}]]}
        if "needs" in meta and "diagnosis" in meta["needs"]:
            meta["needs"]["diagnosis"] = {"k": "object", "type": "main", "fields": [["module", {"k": "str", "v": "dptutor.__main__"}]]}
        return meta, arrays

    fbs = grade_with_tampering(dict(reference["audit"]), "audit", forge)
    assert "dptutor.__main__" not in sys.modules and "dptutor.cli" not in sys.modules
    assert fbs["q1"].score == 0 and "unknown kind" in messages(fbs, "q1"), fbs["q1"].report()
    assert fbs["q3"].score == 0 and "diagnosis should be one of" in messages(fbs, "q3"), fbs["q3"].report()


def test_pickles_and_unlisted_objects_are_refused(reference: dict) -> None:
    def pickle_member(meta, arrays):
        import io

        buf = io.BytesIO()
        np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            zf.writestr("meta.npy", _npy(np.array(json.dumps(meta))))
            zf.writestr("a0.npy", buf.getvalue())
        return out.getvalue(), None

    fbs = grade_with_tampering(dict(reference["sampler"]), "sampler", pickle_member)
    assert scores(fbs) == {"q1": 0, "q2": 0, "q3": 0}
    assert all("not graded" in messages(fbs, q) for q in fbs), [fb.report() for fb in fbs.values()]

    # An AuditResult is allowed in the audit assignment only: elsewhere it stays an inert object.
    def audit_object(meta, arrays):
        if "results" in meta:
            for entry in meta["results"]:
                entry.pop("raised", None)
                entry["value"] = {"k": "object", "type": "AuditResult", "fields": [["counts", {"k": "ndarray", "a": 0}]]}
            arrays = [np.array([[1, 0], [0, 1]], dtype=np.int64)]
            for entry in meta["results"]:
                entry["changed"] = {}
        return meta, arrays

    fbs = grade_with_tampering(dict(reference["mechanism"]), "mechanism", audit_object)
    assert fbs["q1"].score == 0 and fbs["q2"].score == 0 and fbs["q3"].score < 0.2, [fb.report() for fb in fbs.values()]
    assert "not a type this assignment accepts" in messages(fbs, "q1")


def _npy(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def test_nan_and_inf_answers_are_judged_not_fatal(reference: dict) -> None:
    ns = dict(reference["pair_audit"], true_epsilon=float("nan"))
    fbs = grade_in_process(ns, "pair_audit")
    assert scores(fbs) == {"q1": 2, "q2": 2, "q3": 0}, [fb.report() for fb in fbs.values()]
    assert "not nan" in messages(fbs, "q3")
    ns = dict(reference["mechanism"], mean_sensitivity=lambda m, k: math.inf)
    fbs = grade_in_process(ns, "mechanism")
    assert scores(fbs) == {"q1": 0, "q2": 2, "q3": 1}, [fb.report() for fb in fbs.values()]

    def infinite(X, epsilon, *, rng):
        return reference["mechanism"]["private_mean"](X, epsilon, rng=rng) * np.inf

    fbs = grade_in_process(dict(reference["mechanism"], private_mean=infinite), "mechanism")
    assert fbs["q2"].score == 0 and "NaN or infinite" in messages(fbs, "q2")
    ns = dict(reference["audit"], verdicts={"A": float("nan"), "B": float("inf")}, diagnosis=float("-inf"))
    fbs = grade_in_process(ns, "audit")
    assert fbs["q1"].score < 2 and fbs["q3"].score == 0 and fbs["q1"].status == "graded"


def test_cells_carry_no_seed_or_grading_parameter(reference: dict) -> None:
    """The kernel sees only the inputs of each call: the cells are fixed templates with file names."""
    sources: list[str] = []
    fbs = grade_with_tampering(dict(reference["pair_audit"]), "pair_audit", lambda m, a: (m, a), sources)
    assert scores(fbs) == full("pair_audit")
    for source in sources:
        stripped = re.sub(r"'[^']*(?:in|out|needs)-[0-9a-f]{32}\.npz'", "PATH", source)
        assert not re.search(r"\d{2,}", stripped.replace("__dptutor", "")), source


def test_memorising_the_graders_samples_gains_nothing(reference: dict) -> None:
    """An attack that regenerates the mechanism's runs from every seed it can find (the feedback's,
    and any number in a cell) and marks the runs of x' gets no more than an honest event."""
    from dptutor.assignments.pair_audit import PAIR_TRIALS, PAIR_X_PRIME, mystery_pair

    seen: set[int] = {2022, 2023}
    sources: list[str] = []

    def attack(outputs):
        for source in sources:
            seen.update(int(n) for n in re.findall(r"\d+", source))
        known = set()
        for seed in sorted(seen)[:20]:
            rng = np.random.default_rng(seed)
            mystery_pair(0.0, PAIR_TRIALS, rng)
            known.update(map(tuple, np.round(mystery_pair(PAIR_X_PRIME, PAIR_TRIALS, rng), 12)[:2000].tolist()))
        return np.array([row in known for row in map(tuple, np.round(np.asarray(outputs), 12).tolist())])

    fbs = grade_with_tampering(dict(reference["pair_audit"], attack=attack), "pair_audit", lambda m, a: (m, a), sources)
    assert fbs["q2"].score < 2 and "certifies only" in messages(fbs, "q2"), fbs["q2"].report()


@pytest.mark.parametrize("log", ["np.log", "math.log"])
def test_post_run_cell_hook_that_rewrites_answers(tmp_path: Path, log: str) -> None:
    """A real kernel whose hook clears the 'read element by element' flag after every grader cell:
    the loop is still caught, because the grader times fresh inputs itself.  ``math.log`` on Python
    floats is the fastest loop (the ratios measured: SAMPLER_TIMING_RATIO's comment in dptutor.assignments.sampler)."""
    from dptutor.course.executor import grade_notebook

    source = (INSTRUCTOR_DIR / "sampler.md").read_text(encoding="utf-8")
    hook = textwrap.dedent('''
        ```{code-cell} ipython3
        import glob, json, math, numpy as np

        def _laplace_loop(u, mu=0.0, b=1.0):
            u = np.asarray(u, dtype=float)
            if not (np.isfinite(b) and b > 0) or not np.all((u > 0) & (u < 1)):
                raise ValueError("bad input")
            flat = u.reshape(-1).tolist()
            out = [mu + b * LOG(2 * x) if x < 0.5 else mu - b * LOG(2 * (1 - x)) for x in flat]
            return np.array(out).reshape(u.shape)[()]

        laplace_inverse_cdf = _laplace_loop

        def _rewrite(result):
            for path in glob.glob("out-*.npz") + glob.glob("/tmp/dptutor-grade-*/out-*.npz"):
                with np.load(path) as npz:
                    meta = json.loads(str(npz["meta"][()]))
                    arrays = {k: npz[k] for k in npz.files if k != "meta"}
                for entry in meta.get("results", []):
                    entry["touched"] = False
                np.savez(path, meta=np.array(json.dumps(meta)), **arrays)

        get_ipython().events.register("post_run_cell", _rewrite)
        ```
        ''')
    (tmp_path / "hook.md").write_text(source + hook.replace("LOG", log), encoding="utf-8")
    result = grade_notebook(tmp_path / "hook.md", "sampler", timeout=60, total_timeout=600)
    assert result.scores["q1"] == 2 and result.scores["q2"] == 1, result.feedback_text()
    assert result.scores["q3"] < 1, result.feedback_text()


def test_memoised_timing_gains_nothing(reference: dict) -> None:
    """A Python loop that memoises its last input: every timing repeat has fresh inputs, so it is slow."""
    cache: dict = {}

    def memo(u, mu=0.0, b=1.0):
        u = np.asarray(u, dtype=float)
        key = (u.tobytes()[:4096], u.shape, mu, b)
        if key not in cache:
            cache.clear()
            cache[key] = np.array([mu + b * np.log(2 * x) if x < 0.5 else mu - b * np.log(2 * (1 - x))
                                   for x in u.reshape(-1).tolist()]).reshape(u.shape)
        return cache[key][()] if u.ndim == 0 else cache[key]

    def sampler(u, mu=0.0, b=1.0):
        u = np.asarray(u, dtype=float)
        if not (np.isfinite(b) and b > 0) or not np.all((u > 0) & (u < 1)):
            raise ValueError("bad input")
        if u.size <= 5000:  # vectorised where the law is tested, the loop only on big arrays
            return reference["sampler"]["laplace_inverse_cdf"](u, mu, b)
        return memo(u, mu, b)

    fbs = grade_in_process({"laplace_inverse_cdf": sampler}, "sampler", timed_cap=3.0)
    assert fbs["q1"].score == 2 and fbs["q3"].score < 1, fbs["q3"].report()
    assert "times the reference" in messages(fbs, "q3")


@pytest.mark.parametrize("kind", ["batch mean", "batch rank", "alternating", "stateful counter"])
def test_batch_dependent_or_stateful_pair_audit_answers_fail(reference: dict, kind: str) -> None:
    calls = {"n": 0}

    def statistic(outputs):
        calls["n"] += 1
        if kind == "batch mean":
            return np.full(len(outputs), outputs.mean())
        if kind == "batch rank":
            return np.argsort(np.argsort(outputs.sum(axis=1))) / len(outputs)
        if kind == "alternating":
            return outputs.sum(axis=1) * (1 if calls["n"] % 2 else -1)
        return outputs.sum(axis=1) + calls["n"]

    def attack(outputs):
        if kind == "batch mean":  # in a batch of one dataset's runs, this marks the batches of x'
            return outputs.mean(axis=1) > outputs.mean()
        return statistic(outputs) >= np.median(statistic(outputs)) if kind == "batch rank" else statistic(outputs) > 1.5

    fbs = grade_in_process(dict(reference["pair_audit"], statistic=statistic, attack=attack), "pair_audit")
    for q in ("q1", "q2"):
        assert fbs[q].score == 0, fbs[q].report()
        assert "depending on the batch" in messages(fbs, q), fbs[q].report()
    assert fbs["q3"].score == 1


def test_a_per_output_function_of_the_batch_shape_is_fine(reference: dict) -> None:
    """The check is no trap for honest code: a correct statistic and attack get full marks."""
    fbs = grade_in_process(dict(reference["pair_audit"]), "pair_audit")
    assert scores(fbs) == full("pair_audit"), [fb.report() for fb in fbs.values()]
    assert not any("for the instructor" in messages(fbs, q) for q in fbs)


def test_keyword_stuffed_justification_earns_nothing(reference: dict) -> None:
    stuffed = ("At n = 3 and n = 8 the one-sided, sensitivity-1, half-scale candidates differ; with confidence "
               "intervals, sampling error and lower bounds, sqrt, square root and l2 all fail, so it is one-sided.")
    fbs = grade_in_process(dict(reference["audit"], justification=stuffed), "audit")
    assert fbs["q4"].score == 0 and messages(fbs, "q4").startswith("graded by hand"), fbs["q4"].report()
    assert scores(fbs) == {"q1": 2, "q2": 2, "q3": 1, "q4": 0}


def _stratified(shared: bool):
    def private_mean(X, epsilon, *, rng):
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[0] < 1 or not np.all((X >= 0) & (X <= 1)) or not (np.isfinite(epsilon) and epsilon > 0):
            raise ValueError("bad input")
        m, k = X.shape
        b = k / (m * epsilon)
        u = (np.arange(k) + rng.random()) / k  # one uniform per call: stratified quantiles
        if not shared:
            u = rng.permutation(u)
        return X.mean(axis=0) + laplace_ppf(np.clip(u, 1e-12, 1 - 1e-12), 0.0, b)

    return private_mean


@pytest.mark.parametrize("shared", [True, False], ids=["fixed strata", "permuted strata"])
def test_stratified_noise_fails_the_per_coordinate_tests(reference: dict, shared: bool) -> None:
    fbs = grade_in_process(dict(reference["mechanism"], private_mean=_stratified(shared)), "mechanism")
    assert fbs["q2"].score == 0, fbs["q2"].report()
    assert fbs["q1"].score == 1


def test_noise_only_for_grading_shaped_calls_fails(reference: dict) -> None:
    """A mechanism that adds noise only on the feedback's call shapes (40 x 1000, 200 x 3): grading
    draws other shapes, so it releases the exact mean there and fails."""
    honest = reference["mechanism"]["private_mean"]

    def sneaky(X, epsilon, *, rng):
        X = np.asarray(X, dtype=float)
        if X.shape in ((40, 1000), (200, 3)):
            return honest(X, epsilon, rng=rng)
        honest(X, epsilon, rng=rng)  # the input checks
        return X.mean(axis=0)

    fbs = grade_in_process(dict(reference["mechanism"], private_mean=sneaky), "mechanism")
    assert fbs["q2"].score == 0 and "no noise was added" in messages(fbs, "q2"), fbs["q2"].report()


def test_noise_only_when_the_grader_is_on_the_stack(tmp_path: Path) -> None:
    """In a real kernel, the student's function is called from the grader's cell itself: no grader
    frame, no wrapper to detect, so a mechanism that adds noise only when it sees one adds none."""
    from dptutor.course.executor import grade_notebook

    source = (INSTRUCTOR_DIR / "mechanism.md").read_text(encoding="utf-8")
    sneaky = textwrap.dedent('''
        ```{code-cell} ipython3
        import inspect

        _honest = private_mean

        def private_mean(X, epsilon, *, rng):
            # any frame of the package (not merely a path that happens to hold the word, as a clone named
            # dptutor/ does), or of the grader's protocol
            frames = " ".join(f.filename + " " + f.function for f in inspect.stack())
            graded = ("/dptutor/assignments/" in frames or "/dptutor/course/" in frames or "_Recorded" in frames
                      or "record_cell" in frames)
            X = np.asarray(X, dtype=float)
            out = _honest(X, epsilon, rng=rng)
            return out if graded else X.mean(axis=0)
        ```
        ''')
    (tmp_path / "sneaky.md").write_text(source + sneaky, encoding="utf-8")
    result = grade_notebook(tmp_path / "sneaky.md", "mechanism", timeout=60, total_timeout=600)
    assert result.scores["q1"] == 1 and result.scores["q2"] == 0, result.feedback_text()


def test_forged_huge_evidence_is_not_replayed(reference: dict) -> None:
    huge = AuditResult.from_counts(np.array([[4_000_000, 1_000_000], [1_000_000, 4_000_000]]), n=2**20,
                                   epsilon=1.0, seed=1, mechanism="mystery_a")
    ns = dict(reference["audit"], evidence={"A": huge, "B": huge})
    t0 = time.perf_counter()
    fbs = grade_in_process(ns, "audit")
    assert time.perf_counter() - t0 < 60
    for q in ("q1", "q2"):
        assert "not replayed" in messages(fbs, q), fbs[q].report()
        assert fbs[q].score < 2


def test_a_replay_that_runs_too_long_is_stopped(reference: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_module, "AUDIT_REPLAY_SECONDS", 0.2)
    slow = estimate_loss(audit_module.mystery_a, 64, 1.0, 400_000, rng=3)
    ns = dict(reference["audit"], evidence={"A": slow, "B": reference["audit"]["evidence"]["B"]})
    t0 = time.perf_counter()
    fbs = grade_in_process(ns, "audit")
    assert time.perf_counter() - t0 < 30
    assert "took longer than the grader's limit" in messages(fbs, "q1"), fbs["q1"].report()
    assert fbs["q1"].score < 2


def test_calls_of_the_reference_implementation_are_flagged_not_scored(reference: dict) -> None:
    def lazy_sampler(u, mu=0.0, b=1.0):
        return laplace_ppf(u, mu, b)

    fbs = grade_in_process({"laplace_inverse_cdf": lazy_sampler}, "sampler")
    assert scores(fbs)["q1"] == 2 and scores(fbs)["q2"] == 1
    assert "for the instructor (not scored)" in messages(fbs, "q2") and "laplace_ppf" in messages(fbs, "q2")

    def lazy_mean(X, epsilon, *, rng):
        reference["mechanism"]["private_mean"](X, epsilon, rng=np.random.default_rng(0))  # its input checks
        X = np.asarray(X, dtype=float)
        return add_laplace_noise(X.mean(axis=0)[None, :], X.shape[1] / (X.shape[0] * epsilon), rng)[0]

    fbs = grade_in_process(dict(reference["mechanism"], private_mean=lazy_mean), "mechanism")
    assert fbs["q2"].score == 2 and "for the instructor (not scored)" in messages(fbs, "q2"), fbs["q2"].report()
    # Honest solutions, and the untouched templates, are not flagged.
    for name in ASSIGNMENTS:
        for folder in (INSTRUCTOR_DIR, ASSIGNMENT_DIR):
            ns = run_notebook_code(folder / ASSIGNMENTS[name].notebook, feedback_cells=False)
            got = grade_in_process(ns, name)
            assert not any("for the instructor" in m for fb in got.values() for m in fb.messages), (name, folder)


def test_untouched_pair_audit_template_is_not_flagged_in_a_kernel() -> None:
    from dptutor.course.executor import grade_notebook

    result = grade_notebook(ASSIGNMENT_DIR / "pair_audit.md", "pair_audit", timeout=60, total_timeout=600)
    assert result.total == 0
    text = result.feedback_text()
    assert "review by hand" not in text and "for the instructor" not in text, text


def test_nan_answer_does_not_void_later_questions_in_a_kernel(tmp_path: Path) -> None:
    from dptutor.course.executor import grade_notebook

    source = (INSTRUCTOR_DIR / "mechanism.md").read_text(encoding="utf-8")
    nan_cell = textwrap.dedent('''
        ```{code-cell} ipython3
        _real, _pm = mean_sensitivity, private_mean

        def private_mean(X, epsilon, *, rng):
            global mean_sensitivity
            saved, mean_sensitivity = mean_sensitivity, _real
            try:
                return _pm(X, epsilon, rng=rng)
            finally:
                mean_sensitivity = saved

        mean_sensitivity = lambda m, k: float("nan")
        ```
        ''')
    (tmp_path / "nan.md").write_text(source + nan_cell, encoding="utf-8")
    result = grade_notebook(tmp_path / "nan.md", "mechanism", timeout=60, total_timeout=600)
    assert result.scores == {"q1": 0, "q2": 2, "q3": 1}, result.feedback_text()
    assert "kernel died" not in result.feedback_text()


# Phrases that would give the mystery mechanisms' answers away (the verdicts, the diagnosis, the true
# epsilon) if the package that students install contained them; the instructor's notebooks hold them.
ANSWER_KEY = ("mystery a adds", "mystery b is", "a calibrates its noise", "a does violate", "b shows no violation",
              "key == \"l2\"", "two copies of the count", "spends its budget twice", "_true_epsilon = 2",
              "true epsilon is 1.0", "l2 sensitivity sqrt(n)\")")


def test_answer_key_is_not_in_what_students_install() -> None:
    """Everything the wheel packs from ``dptutor/`` (sources and package data), scanned for the key."""
    from conftest import ROOT

    packaged = [p for p in (ROOT / "dptutor").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.name == "audit.py" and p.parent.name == "assignments" for p in packaged)
    for path in packaged:
        try:
            text = path.read_text(encoding="utf-8").lower()
        except UnicodeDecodeError:
            continue
        for phrase in ANSWER_KEY:
            assert phrase not in text, (path, phrase)
    # The grader still knows the answers: it derives them from the mechanisms.
    from dptutor.assignments.audit import _true_diagnosis, _true_verdict
    from dptutor.assignments.pair_audit import _true_epsilon

    assert (_true_verdict("A"), _true_verdict("B"), _true_diagnosis()) == ("violates", "no evidence", "l2")
    assert math.isclose(_true_epsilon(), 1.0, rel_tol=1e-9)
