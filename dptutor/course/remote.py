"""The grader's half of the call protocol: checks run in the grader; the kernel only answers calls.

A check is ordinary Python that calls the student's functions and inspects the student's values
(:mod:`dptutor.assignments.record`).  When grading, every check runs **in the grader's process** (a
worker thread of :func:`grade_question`), never in the kernel:

- A grading run's parameters, seeds and random generators are drawn in the grader, fresh for every
  question (:mod:`secrets`); they never appear in a cell the kernel runs.
- A call of a student function is a proxy (:class:`~dptutor.assignments.record.RemoteFunction`):
  the grader writes the call's inputs as plain data (an ``.npz`` of numeric arrays plus one JSON
  string: arrays, numbers, strings, the state of a ``numpy.random.Generator``;
  :mod:`dptutor.assignments.encoding`) to a file with a random name, and runs a cell
  (:data:`CALL_CELL`) that loads them, calls the function from the cell itself (no grader frame on
  the stack, the same call shape as the student's own cells) and writes what it returned or
  raised, the arrays it modified, the state it left in a generator and whether it read a spy array
  element by element (:mod:`dptutor.assignments.kernel`).  A check may send many calls in one cell
  (:func:`~dptutor.assignments.record.call_many`).
- The answer file is parsed strictly and compared with the request (:mod:`dptutor.course.answers`).
  Values are rebuilt only as plain data or as one of the types the assignment declares in its
  ``RECORD_TYPES`` allow-list (through the grader's own constructor); the grader never imports a
  module or resolves a name taken from the kernel's data.  NaN and infinity are data like any
  other number: the check judges them.
- Timing (:func:`~dptutor.assignments.record.measure`): each repeat is a cell of its own on fresh
  inputs drawn in the grader, timed from outside the kernel: by the sandbox's CPU time where the
  runner counts it (the kernel cannot stop that clock, and a loop cannot use less of it), else by the
  wall clock; the reference runs the same harness in the grader's process, timed the same way
  (:func:`~dptutor.assignments.record.reference_seconds`).
- The grader's own work is bounded: every check makes a fixed number of cells, each under the
  runner's time limit, and replays of student evidence check their size before they start and
  their time while they run (see :mod:`dptutor.assignments.audit`).

Nothing the kernel concludes is used, and the kernel never sees a cell whose outcome it could
change by knowing what comes next: it learns the inputs of each call when it has to answer it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dptutor._validate import check_choice, check_int, check_path, check_positive, is_bool, renamed_parameters
from dptutor.assignments.encoding import MAX_CALLS_PER_CELL, MAX_CELLS_PER_QUESTION, Writer, array_args, generator_args
from dptutor.assignments.feedback import INSTRUCTOR_NOTE, UNSCORED, Assignment, Feedback, Finding, SpyArray
from dptutor.assignments.record import GradingSession, RemoteFunction, session_scope
from dptutor.assignments.registry import check, get_assignment, record_types
from dptutor.course.cputime import limit_text
from dptutor.course.answers import RecordError, check_value, decode, expect, load_answer, raise_recorded, validate_answer

__all__ = ["CALL_CELL", "NEEDS_CELL", "grade_question", "grade_in_process"]


def check_carry_forward(carry_forward: object, assignment: Assignment) -> bool:
    """``carry_forward`` as a bool; a ValueError naming it if ``assignment`` has no error to carry forward."""
    if not is_bool(carry_forward):
        raise TypeError(f"carry_forward must be True or False, got {type(carry_forward).__name__}")
    if carry_forward and not assignment.carry_forward:
        raise ValueError(f"carry_forward: assignment {assignment.name!r} has no error to carry forward: "
                         f"{assignment.independent}")
    return bool(carry_forward)


class _Abort(BaseException):
    """Stops a check in the grader when the kernel's answer is unusable (a BaseException: no check's
    ``except Exception`` swallows it)."""


class _Remote(GradingSession):
    """A grading session: a check thread asks, the driver (on the event loop) runs kernel cells."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: "asyncio.Queue[Any]", types: Mapping[str, Callable],
                 clock: str = "wall") -> None:
        super().__init__()
        self.loop, self.queue, self.types, self.clock = loop, queue, types, clock
        self.cells = 0

    def _ask(self, kind: str, payload: Any) -> Any:
        self.cells += 1
        if self.cells > MAX_CELLS_PER_QUESTION:
            raise RuntimeError("a check made more kernel cells than MAX_CELLS_PER_QUESTION")  # a grader bug
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, payload, fut))
        return fut.result()

    def calls(self, name: str, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]], *,
              reraise: bool = False) -> list[tuple[Any, BaseException | None]]:
        out: list[tuple[Any, BaseException | None]] = []
        for start in range(0, len(calls), MAX_CALLS_PER_CELL):
            chunk = [(tuple(a), dict(k)) for a, k in calls[start:start + MAX_CALLS_PER_CELL]]
            results = self._ask("calls", (name, chunk))
            for (args, kwargs), entry in zip(chunk, results):
                out.append(self._apply(args, kwargs, entry, reraise))
        return out

    def _apply(self, args: tuple, kwargs: dict, entry: dict[str, Any], reraise: bool) -> tuple[Any, BaseException | None]:
        arrays = dict(array_args(args, kwargs))
        for key, new in entry["changed"].items():
            with np.errstate(all="ignore"):
                np.copyto(arrays[key], new, casting="unsafe")
        if entry["touched"]:
            for arr in arrays.values():
                if isinstance(arr, SpyArray):
                    arr.mark_touched()
        gens = dict(generator_args(args, kwargs))
        for key, state in entry["rng"].items():
            gens[key].bit_generator.state = state
        if "raised" in entry:
            try:
                raise_recorded(entry["raised"])
            except NotImplementedError:
                raise
            except Exception as exc:
                if reraise:
                    raise
                return None, exc
        return decode(entry["value"], entry["arrays"], self.types), None

    def timed(self, name: str, inputs: list[np.ndarray], args: tuple, cap: float) -> tuple[list[tuple[Any, BaseException | None]], float]:
        results: list[tuple[Any, BaseException | None]] = []
        best = math.inf
        for u in inputs:
            seconds, entry = self._ask("timed", (name, u, args, cap))
            best = min(best, seconds)
            if entry is None:  # stopped at the cap
                results.append((None, None))
                return results, max(best, cap)
            value, exc = self._apply((u,), {}, entry, False)
            results.append((value, exc))
            if exc is not None or seconds > cap:
                break
        return results, best


CALL_CELL = """\
__dptutor_io = __import__('dptutor.assignments.kernel', fromlist=['KernelCalls']).KernelCalls(globals(), {request!r}, {answer!r})
with __dptutor_io:
    for __dptutor_c in __dptutor_io:
        try:
            __dptutor_c.value = __dptutor_c.fn(*__dptutor_c.args, **__dptutor_c.kwargs)
        except BaseException as __dptutor_e:  # SystemExit too, as in the student's kernel; an interrupt is re-raised
            __dptutor_c.raised = __dptutor_e
"""
NEEDS_CELL = "__import__('dptutor.assignments.kernel', fromlist=['kernel_needs']).kernel_needs(globals(), {names!r}, {answer!r})"

#: ``run_cell(source, time_limit) -> (cell, seconds)``: the runner executes one cell in the kernel.
RunCell = Callable[[str, float], Awaitable[tuple[Any, float]]]


def _cell_failure(cell: Any, limit: float) -> str | None:
    """``"timeout"`` when the cell was stopped at its time limit, else its first error (``"Name: value"``) or None.

    A cell the grader interrupted is a time-out even when its outputs do not say so: an interrupt that reaches
    ipykernel while it finishes a cell, or while it reports an earlier interrupt (the CPU-time watchdog and the
    wall-clock cap may both interrupt one cell), is caught inside the kernel, which then publishes no error and
    sends no reply (measured: 17 of 240 interrupts sent as a 50 ms cell ended).  The cell's metadata keeps the
    mark the watchdog or the cap set, which :func:`~dptutor.course.cputime.limit_text` reads.
    """
    if limit_text(cell) is not None:
        return "timeout"
    outputs = cell.get("outputs", []) if isinstance(cell, Mapping) else getattr(cell, "outputs", [])
    err = next((o for o in outputs if o.get("output_type") == "error"), None)
    if err is None:
        return None
    if err.get("ename") in ("CellTimeoutError", "KeyboardInterrupt"):
        return "timeout"
    return f"{err.get('ename')}: {str(err.get('evalue'))[:300]}"


async def _run_calls(run_cell: RunCell, workdir: str, name: str, chunk: Sequence[tuple[tuple, dict]],
                     timeout: float) -> list[dict[str, Any]]:
    writer = Writer()
    calls = [{"fn": name, "args": [writer.encode(a) for a in args],
              "kwargs": [[k, writer.encode(v)] for k, v in kwargs.items()]} for args, kwargs in chunk]
    request = os.path.join(workdir, f"in-{secrets.token_hex(16)}.npz")
    answer = os.path.join(workdir, f"out-{secrets.token_hex(16)}.npz")
    writer.save(request, {"version": 2, "calls": calls})
    try:
        cell, _ = await run_cell(CALL_CELL.format(request=os.path.basename(request), answer=os.path.basename(answer)),
                                 timeout)
        failure = _cell_failure(cell, timeout)
        if failure == "timeout":
            raise RecordError(f"checking it {limit_text(cell) or f'ran past the {timeout:g} s time limit'} (an endless loop?)")
        try:
            meta, arrays = load_answer(answer)
        except RecordError as exc:
            if failure:
                raise RecordError(f"the check cell crashed with {failure}") from None
            raise exc
        return validate_answer(meta, arrays, chunk)
    finally:
        _unlink(request)
        _unlink(answer)


async def _run_timed(run_cell: RunCell, workdir: str, name: str, u: np.ndarray, args: tuple,
                     cap: float) -> tuple[float, dict[str, Any] | None]:
    writer = Writer()
    request = os.path.join(workdir, f"in-{secrets.token_hex(16)}.npz")
    answer = os.path.join(workdir, f"out-{secrets.token_hex(16)}.npz")
    writer.save(request, {"version": 2, "calls": [{"fn": name, "args": [writer.encode(u)] + [
        writer.encode(a) for a in args], "kwargs": []}]})
    try:
        cell, seconds = await run_cell(CALL_CELL.format(request=os.path.basename(request),
                                                         answer=os.path.basename(answer)), cap)
        if _cell_failure(cell, cap) == "timeout":
            return max(seconds, cap), None
        meta, arrays = load_answer(answer)
        return seconds, validate_answer(meta, arrays, [((u, *args), {})])[0]
    finally:
        _unlink(request)
        _unlink(answer)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


async def _fetch_needs(run_cell: RunCell, workdir: str, needs: Sequence[str], timeout: float) -> tuple[dict[str, Any], list[str]]:
    answer = os.path.join(workdir, f"needs-{secrets.token_hex(16)}.npz")
    try:
        cell, _ = await run_cell(NEEDS_CELL.format(names=list(needs), answer=os.path.basename(answer)), timeout)
        failure = _cell_failure(cell, timeout)
        if failure == "timeout":
            raise RecordError(f"the grader's first cell {limit_text(cell) or f'ran past the {timeout:g} s time limit'} "
                              "(is the kernel busy?)")
        try:
            meta, arrays = load_answer(answer)
        except RecordError:
            if failure:
                raise RecordError(f"the grader's first cell failed ({failure}): was the kernel tampered with?") from None
            raise
    finally:
        _unlink(answer)
    missing = meta.get("missing")
    got = meta.get("needs")
    expect(isinstance(missing, list) and all(m in needs for m in missing) and isinstance(got, dict)
            and set(got) | set(missing) == set(needs) and not set(got) & set(missing), "the names the kernel reported do not match")
    seen: set[int] = set()  # each array is one value: none is decoded twice
    for tree in got.values():
        if tree != {"k": "function"}:
            check_value(tree, arrays, seen=seen)
    return {"trees": got, "arrays": arrays}, missing


class _Deferred:
    """An awaitable that makes its coroutine only when awaited (so that a call never awaited leaves
    no "coroutine was never awaited" warning behind)."""

    def __init__(self, factory: Callable[[], Awaitable[Any]]) -> None:
        self._factory = factory

    def __await__(self) -> Any:
        return self._factory().__await__()


@renamed_parameters(hidden="grading_seed")
def grade_question(run_cell: RunCell, assignment: str, question: str, workdir: str, *,
                   timeout: float, timed_cap: float = 5.0, grading_seed: int | None = None,
                   carry_forward: bool = False, clock: str = "wall") -> Awaitable[Any]:
    """Grade one question of a submission whose kernel runs the cells ``run_cell`` is given: await it
    for the Feedback.

    The check runs in a worker thread of this process with the grading run's parameters drawn here; each call
    of a student function becomes a cell (:data:`CALL_CELL`) limited to ``timeout`` seconds, each
    timed repeat a cell limited to ``timed_cap``.  The cells name the files they read and write in
    ``workdir`` by their base names only: ``run_cell`` must run them with the kernel's working
    folder being ``workdir`` (as the sandbox mounts it).  An unusable answer scores the question 0 with a
    message.  Exceptions of ``run_cell`` (a dead kernel, a cancellation) propagate, after the check
    thread has been released.  ``grading_seed`` is the seed of the grading run (an int >= 2; None:
    drawn fresh with :mod:`secrets`; ``hidden`` is its deprecated alias); a regrade passes the one
    saved in the scores CSV to reproduce the question exactly.  ``carry_forward`` (error carried forward) also hands the check the
    earlier answers the question names in ``carried``.  ``clock`` says how ``run_cell`` counts a cell's
    seconds: ``"wall"`` (wall-clock time) or ``"cpu"`` (the CPU time of the kernel's sandbox); the
    reference of a timed check is then timed the same way.  The arguments are checked when this is
    called, before anything runs.
    """
    a = get_assignment(assignment)
    q = a.question(question)
    if not callable(run_cell):
        raise TypeError(f"run_cell must be callable, got {type(run_cell).__name__}")
    workdir = str(check_path(workdir, "workdir"))
    if not os.path.isdir(workdir):
        raise ValueError(f"workdir: {workdir} is not a folder")
    timeout, timed_cap = check_positive(timeout, "timeout"), check_positive(timed_cap, "timed_cap")
    if grading_seed is not None:
        grading_seed = check_int(grading_seed, "grading_seed", minimum=2, maximum=2**63 - 1)
    if not is_bool(carry_forward):
        raise TypeError(f"carry_forward must be True or False, got {type(carry_forward).__name__}")
    clock = check_choice(clock, "clock", ("wall", "cpu"))
    return _Deferred(lambda: _grade_question(run_cell, a.name, q.name, workdir, timeout, timed_cap, grading_seed,
                                             bool(carry_forward), clock))


def _failed(base: dict[str, Any], text: str) -> Feedback:
    return Feedback(**base, score=0.0, status="error", findings=(Finding(False, f"not graded: {text}"),))


async def _grade_question(run_cell: RunCell, assignment: str, question: str, workdir: str, timeout: float,
                          timed_cap: float, grading_seed: int | None = None, carry_forward: bool = False,
                          clock: str = "wall") -> Feedback:
    a = get_assignment(assignment)
    q = a.question(question)
    base = dict(assignment=a.name, question=q.name, title=q.title, points=q.points)
    carried = q.carried if carry_forward else ()
    try:
        found, missing = await _fetch_needs(run_cell, workdir, q.needs + carried, timeout)
    except RecordError as exc:
        return _failed(base, str(exc))
    carried = tuple(n for n in carried if n not in missing)  # a missing earlier answer: judged as without it
    missing = [n for n in missing if n in q.needs]
    if missing:
        return Feedback(**base, score=0.0, status="missing", findings=(Finding(
            False, f"{', '.join(missing)} is not defined in your notebook: keep the template's names, and "
                   "check that the cell defining it runs without error"),))
    types = record_types(a.name)
    session = _Remote(asyncio.get_running_loop(), asyncio.Queue(), types, clock)

    def rebuilt(name: str) -> Any:
        tree = found["trees"][name]
        return RemoteFunction(name, session) if tree == {"k": "function"} else decode(tree, found["arrays"], types)

    objects = [rebuilt(name) for name in q.needs]
    earlier = {name: rebuilt(name) for name in carried} if carry_forward and q.carried else None
    if grading_seed is None:
        grading_seed = secrets.randbits(62) + 2  # fresh for this question, never sent to the kernel
    outcome = await _drive(session, run_cell, workdir, timeout, timed_cap,
                           lambda: check(a.name, q.name, *objects, grading_seed=grading_seed, carried=earlier),
                           f"dptutor-check-{a.name}-{q.name}")
    if "abort" in outcome:
        return _failed(base, outcome["abort"])
    if "crash" in outcome:
        exc = outcome["crash"]
        return _failed(base, f"the grader's check failed ({type(exc).__name__}: {exc}); please report this")
    fb = outcome["feedback"]
    if session.flags:
        fb = Feedback(**base, score=fb.score, status=fb.status, findings=fb.findings + tuple(
            Finding(False, f"{INSTRUCTOR_NOTE}{text}", UNSCORED) for text in session.flags))
    return fb


async def _drive(session: _Remote, run_cell: RunCell, workdir: str, timeout: float, timed_cap: float,
                 run_check: Callable[[], Feedback], thread_name: str) -> dict[str, Any]:
    """Run ``run_check`` in a worker thread under ``session`` and answer its kernel requests here:
    ``{"feedback": ...}``, ``{"abort": reason}`` or ``{"crash": exception}``."""
    outcome: dict[str, Any] = {}
    loop, queue = session.loop, session.queue

    def work() -> None:
        try:
            with session_scope(session):
                outcome["feedback"] = run_check()
        except _Abort as exc:
            outcome["abort"] = str(exc)
        except BaseException as exc:  # noqa: BLE001 -- reported by the caller
            outcome["crash"] = exc
        finally:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, None)
            except RuntimeError:  # the loop has closed (the kernel died): nobody is waiting for the signal
                pass

    thread = threading.Thread(target=work, name=thread_name, daemon=True)
    thread.start()
    pending: concurrent.futures.Future | None = None
    try:
        while True:
            item = await queue.get()
            if item is None:
                break
            kind, payload, pending = item
            try:
                if kind == "calls":
                    response = await _run_calls(run_cell, workdir, payload[0], payload[1], timeout)
                else:
                    response = await _run_timed(run_cell, workdir, *payload[:3], min(payload[3], timed_cap))
            except RecordError as exc:
                pending.set_exception(_Abort(str(exc)))
            else:
                pending.set_result(response)
            pending = None
    finally:
        if pending is not None and not pending.done():
            pending.set_exception(_Abort("grading stopped"))
    thread.join()
    return outcome


def grade_in_process(namespace: Mapping[str, Any], assignment: str, *, timeout: float = 60.0,
                     timed_cap: float = 5.0, carry_forward: bool = False) -> dict[str, Any]:
    """Grade every question of ``assignment`` against the objects in ``namespace``, running the
    kernel's cells here (exec in ``namespace``): the same protocol as the runner, without a kernel
    (``carry_forward``: with error carried forward).

    For tests and for trusted code only: the student's code runs in this process.  A cell's seconds are the
    CPU time of the thread that runs it, and the reference's those of its own thread (``clock="cpu"``), so that a
    busy machine slows neither side's count.
    """
    a = get_assignment(assignment)
    if not isinstance(namespace, dict):
        raise TypeError(f"namespace must be a dict, got {type(namespace).__name__}")
    timeout, timed_cap = check_positive(timeout, "timeout"), check_positive(timed_cap, "timed_cap")
    carry_forward = check_carry_forward(carry_forward, a)

    def cell_runner(workdir: str) -> RunCell:
        async def run_cell(source: str, limit: float) -> tuple[dict[str, Any], float]:
            # As a kernel does, the cell runs in the work folder (the grader names its files there).
            cell: dict[str, Any] = {"outputs": []}
            here = os.getcwd()
            t0 = time.thread_time()
            try:
                os.chdir(workdir)
                exec(compile(source, "<grader cell>", "exec"), namespace)  # noqa: S102 -- trusted by contract
            except Exception as exc:  # noqa: BLE001 -- a cell error, as a kernel reports it
                cell["outputs"].append({"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc)})
            finally:
                os.chdir(here)
            return cell, time.thread_time() - t0
        return run_cell

    async def main() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="dptutor-grade-") as workdir:
            run_cell = cell_runner(workdir)
            return {q.name: await grade_question(run_cell, a.name, q.name, workdir, timeout=timeout,
                                                 timed_cap=timed_cap, carry_forward=bool(carry_forward), clock="cpu")
                    for q in a.questions}

    return asyncio.run(main())
