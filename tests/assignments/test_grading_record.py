"""The grading protocol (dptutor.assignments.record): checks in the grader, calls answered by the kernel.

Runs the protocol in this process (grade_in_process, or grade_question with a run_cell of the
test's own); real kernels are exercised in test_hostile_records.py and test_grading_runner.py.
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import json
import os
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dptutor.assignments import ASSIGNMENTS, check
from dptutor.assignments.feedback import TEST_GRADING_SEED
from dptutor.assignments import kernel, record
from dptutor.assignments.encoding import Writer
from dptutor.course.remote import CALL_CELL, grade_in_process, grade_question
from dptutor.assignments.registry import record_types
from test_grading import INSTRUCTOR_DIR, run_notebook_code, wrong_answers
from test_hostile_records import grade_with_tampering


@pytest.fixture(scope="module")
def reference() -> dict[str, dict]:
    return {name: run_notebook_code(INSTRUCTOR_DIR / a.notebook, feedback_cells=False)
            for name, a in ASSIGNMENTS.items()}


def test_the_protocol_reaches_the_direct_checks_verdicts(reference: dict) -> None:
    # A grading run's parameters are drawn afresh by each grading, so a wrong answer's partial credit may differ
    # between two draws; the verdict (full marks or not) and the status may not. The references are exact.
    wrong = wrong_answers(reference)
    cases = [(name, ns, True) for name, ns in reference.items()] + [(name, ns, False) for name, ns in wrong]
    for name, ns, exact in cases:
        graded = grade_in_process(dict(ns), name)
        for q in ASSIGNMENTS[name].questions:
            direct = check(name, q.name, *(ns[n] for n in q.needs), grading_seed=TEST_GRADING_SEED)
            got = graded[q.name]
            if exact:
                assert (got.score, got.status) == (direct.score, direct.status), (name, got.report(), direct.report())
            else:
                assert got.status == direct.status, (name, got.report(), direct.report())
                assert (got.score == q.points) == (direct.score == q.points), (name, got.report(), direct.report())


def test_only_the_declared_types_are_rebuilt() -> None:
    assert set(record_types("audit")) == {"AuditResult"}
    for name in ("sampler", "mechanism", "pair_audit"):
        assert record_types(name) == {}


def _tamper_results(edit):
    def tamper(meta, arrays):
        if "results" in meta:
            edit(meta, arrays)
        return meta, arrays
    return tamper


def _raw(make):
    def tamper(meta, arrays):
        out = io.BytesIO()
        make(out, meta, arrays)
        return out.getvalue(), None
    return tamper


def _compressed(out, meta, arrays):
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("meta.npy", _npy(np.array(json.dumps(meta))))


def _extra_member(out, meta, arrays):
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("meta.npy", _npy(np.array(json.dumps(meta))))
        zf.writestr("../evil.npy", _npy(np.zeros(1)))


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


@pytest.mark.parametrize("attack,tamper", [
    ("not an archive", _raw(lambda out, m, a: out.write(b"PK\x03\x04garbage"))),
    ("compressed member", _raw(_compressed)),
    ("member outside the pattern", _raw(_extra_member)),
    ("bad JSON", _raw(lambda out, m, a: np.savez(out, meta=np.array("{not json")))),
    ("wrong version", lambda m, a: ({**m, "version": 1}, a)),
    ("a result too many", _tamper_results(lambda m, a: m["results"].append(m["results"][-1]))),
    ("unknown kind", _tamper_results(lambda m, a: m["results"][0].update(value={"k": "pickle", "v": "x"}))),
    ("changed argument of another shape", _tamper_results(
        lambda m, a: (a.append(np.zeros(3)), m["results"][0].update(changed={"0": len(a) - 1})))),
    ("deep nesting", _tamper_results(lambda m, a: m["results"][0].update(value=_deep(50)))),
])
def test_answer_files_are_parsed_strictly(reference: dict, attack: str, tamper) -> None:
    fbs = grade_with_tampering(dict(reference["sampler"]), "sampler", tamper, questions=("q1",))
    for q, fb in fbs.items():
        assert fb.score == 0 and fb.status in ("error",), (attack, fb.report())
        assert fb.messages[0].startswith("not graded"), (attack, fb.report())


def _deep(n: int) -> dict:
    tree: dict = {"k": "none"}
    for _ in range(n):
        tree = {"k": "list", "items": [tree]}
    return tree


def test_an_invalid_generator_state_is_refused(reference: dict) -> None:
    def bad_state(meta, arrays):
        if "results" in meta:
            for entry in meta["results"]:
                if entry["rng"]:
                    entry["rng"] = {key: json.dumps({"bit_generator": "MT19937", "state": {}}) for key in entry["rng"]}
        return meta, arrays

    fbs = grade_with_tampering(dict(reference["mechanism"]), "mechanism", bad_state, questions=("q1", "q2"))
    assert fbs["q1"].score == 1 and fbs["q2"].score == 0
    assert "generator state is not valid" in fbs["q2"].messages[0]


def test_the_student_function_is_called_from_the_cell_itself() -> None:
    """No frame of the grader's modules is on the stack while the student's function runs."""
    seen: list[list[str]] = []

    def f(u, mu=0.0, b=1.0):
        seen.append([frame.filename for frame in inspect.stack()])
        return np.asarray(u) + mu

    with tempfile.TemporaryDirectory() as tmp:
        request, answer = "in.npz", "out.npz"  # bare names, in the kernel's working folder
        writer = Writer()
        namespace = {"f": f}
        with contextlib.chdir(tmp):
            writer.save(request, {"version": 2, "calls": [{"fn": "f", "args": [writer.encode(np.array([0.5]))],
                                                         "kwargs": []}]})
            exec(compile(CALL_CELL.format(request=request, answer=answer), "<cell>", "exec"), namespace)
        with np.load(os.path.join(tmp, answer)) as npz:
            meta = json.loads(str(npz["meta"][()]))
    assert len(meta["results"]) == 1 and "value" in meta["results"][0]
    package = os.path.dirname(os.path.abspath(record.__file__))      # dptutor/assignments, wherever the clone is
    assert seen and not any(os.path.abspath(name).startswith(os.path.dirname(package) + os.sep)
                            for name in seen[0][:2]), seen[0]


def test_a_kernel_that_never_answers_stops_at_the_cell_limit(reference: dict) -> None:
    """run_cell reports a timeout (as the runner does at its limit): the question scores 0, with a message."""
    async def run_cell(source: str, limit: float):
        if "KernelCalls" in source:
            return {"outputs": [{"output_type": "error", "ename": "CellTimeoutError", "evalue": ""}]}, limit
        exec(compile(source, "<cell>", "exec"), dict(reference["sampler"]))
        return {"outputs": []}, 0.0

    async def main():
        with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):  # the kernel's working folder
            return await grade_question(run_cell, "sampler", "q2", tmp, timeout=2.0)

    fb = asyncio.run(main())
    assert fb.score == 0 and "ran past the 2 s time limit" in fb.messages[0], fb.report()


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_kernel_releases_the_check_thread(reference: dict) -> None:
    """The check thread ends, and ends cleanly: when the kernel died the grader's event loop has closed, and
    the thread's last signal to it must not crash the thread."""
    class Dead(Exception):
        pass

    calls = {"n": 0}

    async def run_cell(source: str, limit: float):
        calls["n"] += 1
        if calls["n"] > 1:
            raise Dead("kernel died")
        exec(compile(source, "<cell>", "exec"), dict(reference["sampler"]))
        return {"outputs": []}, 0.0

    async def main():
        with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):  # the kernel's working folder
            return await grade_question(run_cell, "sampler", "q1", tmp, timeout=5.0)

    before = {t.name for t in __import__("threading").enumerate()}
    with pytest.raises(Dead):
        asyncio.run(main())
    time.sleep(0.5)
    left = {t.name for t in __import__("threading").enumerate()} - before
    assert not any(name.startswith("dptutor-check") for name in left), left


def test_grade_question_checks_its_arguments_before_running(tmp_path: Path) -> None:
    async def run_cell(source, limit):
        raise AssertionError("must not run")

    with pytest.raises(ValueError, match="assignment"):
        grade_question(run_cell, "nope", "q1", str(tmp_path), timeout=1.0)
    with pytest.raises(ValueError, match="workdir"):
        grade_question(run_cell, "sampler", "q1", str(tmp_path / "missing"), timeout=1.0)
    with pytest.raises(ValueError, match="timeout"):
        grade_question(run_cell, "sampler", "q1", str(tmp_path), timeout=-1.0)


def test_the_kernel_is_told_bare_file_names_in_its_working_folder(reference: dict, tmp_path: Path) -> None:
    """By design the grader's cells name their files without a folder: the kernel runs in the work
    folder (every sandbox mounts it and starts the kernel there), so no path of the grader's reaches
    the kernel, and a cell naming a file elsewhere is refused by the kernel's side."""
    sources: list[str] = []
    fbs = grade_with_tampering(dict(reference["sampler"]), "sampler", lambda m, a: (m, a), sources, questions=("q2",))
    assert fbs["q2"].score == ASSIGNMENTS["sampler"].question("q2").points, fbs["q2"].report()
    assert sources and not any("/" in s for s in sources), sources[:2]
    for bad in (str(tmp_path / "in.npz"), "../in.npz", "..", "sub/in.npz"):
        with pytest.raises(ValueError, match="request"):
            kernel.KernelCalls({}, bad, "out.npz")
        with pytest.raises(ValueError, match="answer"):
            kernel.kernel_needs({}, ["f"], bad)


def test_the_reference_is_timed_by_the_sessions_clock() -> None:
    """Under a wall-clock session the reference counts the wall clock; under a session whose timed cells count
    CPU time, and in the notebook, this thread's CPU time (a reference that sleeps costs none of it)."""
    def sleepy(u, mu, b):
        time.sleep(0.2)
        return u

    class Session(record.GradingSession):
        pass

    inputs = [np.full(10, 0.5), np.full(10, 0.25)]
    assert record.reference_seconds(sleepy, inputs, 0.0, 1.0) < 0.1
    # The student's function in the notebook too: time taken away from it (here, sleeping) is not counted.
    assert record.measure(sleepy, inputs, 0.0, 1.0)[1] < 0.1
    wall, cpu = Session(), Session()
    cpu.clock = "cpu"
    with record.session_scope(wall):
        assert record.reference_seconds(sleepy, inputs, 0.0, 1.0) >= 0.2
    with record.session_scope(cpu):
        assert record.reference_seconds(sleepy, inputs, 0.0, 1.0) < 0.1


def test_the_clock_of_grade_question_is_checked(tmp_path: Path) -> None:
    async def run_cell(source, limit):
        return {"outputs": []}, 0.0

    with pytest.raises(ValueError, match="clock"):
        grade_question(run_cell, "sampler", "q3", str(tmp_path), timeout=1.0, clock="sundial")
    with pytest.raises(TypeError, match="clock"):
        grade_question(run_cell, "sampler", "q3", str(tmp_path), timeout=1.0, clock=1)


def test_the_reference_repeats_each_input() -> None:
    calls = []

    def counted(u, mu, b):
        calls.append(u.size)
        return u

    assert record.reference_seconds(counted, [np.full(3, 0.5), np.full(4, 0.5)], 0.0, 1.0, repeats=3) >= 0
    assert calls == [3, 3, 3, 4, 4, 4]
    for bad, error in ((0, ValueError), (101, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="repeats"):
            record.reference_seconds(counted, [np.full(3, 0.5)], 0.0, 1.0, repeats=bad)
