"""The helpers a check uses to call student code: the same check gives feedback and grades.

A check is ordinary Python that calls the student's functions (``f(u, mu, b)``) and inspects the
student's values (``verdicts``).  In the notebook (the feedback) it runs in the student's kernel and
calls the functions directly.  When grading, every check runs **in the grader's process**, never in
the kernel, inside a :class:`GradingSession` (:func:`session_scope`): each student function is a
:class:`RemoteFunction` whose calls the session sends to the kernel as data and whose answers it
parses strictly (the grader's side: ``dptutor.course.remote``, which holds the protocol's threat
model; the kernel's side: :mod:`dptutor.assignments.kernel`; the data format:
:mod:`dptutor.assignments.encoding`).

- :func:`call_many` sends many independent calls in one kernel cell;
- :func:`measure` times a function, each repeat on fresh inputs (when grading, a cell of its own
  timed from outside the kernel); :func:`reference_seconds` times trusted code with the same harness
  here, by the same kind of clock (:attr:`GradingSession.clock`);
- :func:`flag_for_review` notes what a human should look at; :func:`grading` tells a check which of
  the two situations it is in.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dptutor._validate import check_callable, check_float_array, check_int, check_positive, check_sequence, check_str
from dptutor.assignments.encoding import MAX_ARRAY_ELEMENTS, MAX_TEXT, Writer
from dptutor.assignments.feedback import call

#: The checks' helpers.  :class:`GradingSession`, :class:`RemoteFunction` and :func:`session_scope` are
#: the hooks of the grader's half (``dptutor.course.remote``) only, hence outside ``__all__``.
__all__ = [
    "call_many",
    "measure",
    "reference_seconds",
    "flag_for_review",
    "grading",
]


# ---------------------------------------------------------------------------------------------
# the grading session, as the checks see it (the grader's side subclasses both classes)
# ---------------------------------------------------------------------------------------------


class GradingSession:
    """A grading session as the check helpers see it: it answers the calls of student functions.

    The grader's session (``dptutor.course.remote``) subclasses it and sends each batch of calls
    to the kernel; here it only defines what the helpers call.
    """

    #: How the seconds of :meth:`timed` are counted: ``"wall"`` (wall-clock time) or ``"cpu"`` (the CPU
    #: time the kernel's sandbox used).  :func:`reference_seconds` counts the reference's time the same
    #: way (``"cpu"``: the CPU time of the thread running it), so that neither side counts the time a busy
    #: machine takes away: on the wall clock, a sandbox in a cgroup of its own keeps its share of the CPU while the
    #: grader's process shares the rest, and a loop 20 times slower than the reference measured 7 times.
    clock: str = "wall"

    def __init__(self) -> None:
        #: What :func:`flag_for_review` noted for the instructor during this session.
        self.flags: list[str] = []

    def calls(self, name: str, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]], *,
              reraise: bool = False) -> list[tuple[Any, BaseException | None]]:
        """``(value, exception)`` of each call of the student function ``name``."""
        raise NotImplementedError

    def timed(self, name: str, inputs: list[np.ndarray], args: tuple,
              cap: float) -> tuple[list[tuple[Any, BaseException | None]], float]:
        """What :func:`measure` returns, for the student function ``name``."""
        raise NotImplementedError


class RemoteFunction:
    """Stands for a student function during a grading session: each call is answered by the session."""

    def __init__(self, name: str, session: GradingSession) -> None:
        if not isinstance(session, GradingSession):
            raise TypeError(f"session must be a GradingSession, got {type(session).__name__}")
        self.name, self.session = check_str(name, "name", allow_empty=False), session
        self.__name__ = self.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        value, exc = self.session.calls(self.name, [(args, kwargs)], reraise=True)[0]
        return value


_SESSION: contextvars.ContextVar[GradingSession | None] = contextvars.ContextVar("dptutor_grading_session",
                                                                                 default=None)


@contextlib.contextmanager
def session_scope(session: GradingSession) -> Iterator[None]:
    """Run the checks inside the ``with`` block under ``session`` (in this thread's context)."""
    if not isinstance(session, GradingSession):
        raise TypeError(f"session must be a GradingSession, got {type(session).__name__}")
    token = _SESSION.set(session)
    try:
        yield
    finally:
        _SESSION.reset(token)


# ---------------------------------------------------------------------------------------------
# the helpers checks use: call_many, measure, reference_seconds, flag_for_review
# ---------------------------------------------------------------------------------------------


def call_many(f: Callable, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]]) -> list[tuple[Any, BaseException | None]]:
    """``[call(f, *args, **kwargs) for args, kwargs in calls]``, sent to the kernel as one cell when grading.

    ``NotImplementedError`` propagates (the stub is still in place), as in :func:`~dptutor.assignments.feedback.call`.
    """
    check_callable(f, "f")
    calls = list(check_sequence(calls, "calls", min_len=0))
    for item in calls:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping)):
            raise TypeError("calls must be a sequence of (args, kwargs) pairs")
    if isinstance(f, RemoteFunction):
        return f.session.calls(f.name, calls)
    return [call(f, *args, **kwargs) for args, kwargs in calls]


def flag_for_review(text: str) -> None:
    """Note, for the instructor, something a human should look at (not a score change).

    Only recorded while grading; the feedback in the notebook never shows it.
    """
    if not isinstance(text, str) or not text:
        raise TypeError("text must be a non-empty str")
    session = _SESSION.get()
    if isinstance(session, GradingSession) and text[:MAX_TEXT] not in session.flags:
        session.flags.append(text[:MAX_TEXT])


def grading() -> bool:
    """Whether the current check runs for grading (in the grader) rather than as notebook feedback."""
    return isinstance(_SESSION.get(), GradingSession)


def _input_file(path: str, u: np.ndarray) -> None:
    writer = Writer()
    writer.save(path, {"version": 2, "calls": [{"fn": "_", "args": [writer.encode(u)], "kwargs": []}]})


def _harness(fn: Callable, path: str, out: str, args: Sequence[Any]) -> tuple[Any, BaseException | None]:
    """What a timed cell does, in one place for the kernel and the grader's reference: load the
    input file, call, save the output."""
    with open(path, "rb") as fh:
        u = np.load(fh)["a0"]
    value, exc = call(fn, u, *args)
    writer = Writer()
    writer.save(out, {"version": 2, "value": writer.encode(value)})
    return value, exc


#: The first run of :func:`measure` on 1 % of the input, scaled up a hundredfold, ends a series early only
#: when it is over the cap and over this many seconds: its fixed costs (loading, saving, a busy machine's
#: pause) are scaled up too, and a 4 ms pause alone reads as 0.4 s, more than a tight cap (a fast
#: function's second series was cut that way and failed).  A hopeless case still stops: a loop over the
#: input that takes seconds per 1 % reads as minutes.
EARLY_STOP_SECONDS = 5.0


def measure(f: Callable, inputs: Sequence[np.ndarray], *args: Any,
            cap: float = 5.0) -> tuple[list[tuple[Any, BaseException | None]], float]:
    """Time ``f(u, *args)`` for each ``u`` in ``inputs``: ``(results, best seconds)``.

    Each ``u`` is one timed repeat: give fresh inputs to each (identical inputs let a memoising
    function look fast).  When grading, each repeat is a cell of its own, timed from outside the
    kernel (on the session's :attr:`~GradingSession.clock`), and stops counting at ``cap`` seconds; in
    the feedback, it runs here, timed by the CPU time of this thread, as a sandboxed grading counts the
    sandbox's CPU time: a busy machine slows the wall clock of both sides unevenly (a reference solution
    once measured 6 times itself on oversubscribed cores), not their CPU time.  A first run on 1 % of the
    input, scaled up, stops a hopeless case early (see ``EARLY_STOP_SECONDS``).  A repeat that raises ends
    the series.
    """
    check_callable(f, "f")
    cap = check_positive(cap, "cap")
    inputs = _timing_inputs(inputs)
    args = tuple(_plain(args))
    if isinstance(f, RemoteFunction):
        return f.session.timed(f.name, inputs, args, cap)
    results: list[tuple[Any, BaseException | None]] = []
    with tempfile.TemporaryDirectory(prefix="dptutor-time-") as tmp:
        src, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        small = inputs[0][: max(1, inputs[0].size // 100)]
        _input_file(src, small)
        t0 = time.thread_time()
        value, exc = _harness(f, src, out, args)
        scaled = (time.thread_time() - t0) * inputs[0].size / max(1, small.size)
        if exc is not None or scaled > max(cap, EARLY_STOP_SECONDS):
            return [(value, exc)], scaled
        best = math.inf
        for u in inputs:
            _input_file(src, u)
            t0 = time.thread_time()
            value, exc = _harness(f, src, out, args)
            best = min(best, time.thread_time() - t0)
            results.append((value, exc))
            if exc is not None or best > cap:
                break
    return results, best


def reference_seconds(reference: Callable, inputs: Sequence[np.ndarray], *args: Any, repeats: int = 1) -> float:
    """Best time of the same _harness as :func:`measure` with ``reference`` (trusted code), here, over
    ``repeats`` calls on each input (1 to 100): on the clock the grading session's timed cells use
    (:attr:`GradingSession.clock`: the wall clock for ``"wall"``, the CPU time of this thread for ``"cpu"``),
    else the CPU time of this thread, as :func:`measure` uses in the notebook.  Trusted code may repeat: more
    repeats steady the best time."""
    check_callable(reference, "reference")
    repeats = check_int(repeats, "repeats", minimum=1, maximum=100)
    inputs = [u for u in _timing_inputs(inputs) for _ in range(repeats)]
    args = tuple(_plain(args))
    session = _SESSION.get()
    now = time.perf_counter if isinstance(session, GradingSession) and session.clock == "wall" else time.thread_time
    best = math.inf
    with tempfile.TemporaryDirectory(prefix="dptutor-time-") as tmp:
        src, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        for u in inputs:
            _input_file(src, u)
            t0 = now()
            _harness(reference, src, out, args)
            best = min(best, now() - t0)
    return best


def _timing_inputs(inputs: Any) -> list[np.ndarray]:
    """The inputs of the timed repeats: 1-D float arrays of at most MAX_ARRAY_ELEMENTS numbers."""
    out = [check_float_array(u, "inputs", allow_nan=True, ndim=1) for u in check_sequence(inputs, "inputs", min_len=1)]
    if any(u.size > MAX_ARRAY_ELEMENTS for u in out):
        raise ValueError(f"inputs: at most {MAX_ARRAY_ELEMENTS:,} numbers per timed call")
    return [np.array(u, dtype=np.float64) for u in out]


def _plain(args: Sequence[Any]) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, (bool, np.bool_)):
            out.append(bool(a))
        elif isinstance(a, (int, float, np.integer, np.floating)):
            out.append(float(a))
        else:
            raise TypeError("args: a timed call takes plain numbers only")
    return out


# ---------------------------------------------------------------------------------------------
# encoding: plain data both ways (the grader's requests, the kernel's answers)
# ---------------------------------------------------------------------------------------------
