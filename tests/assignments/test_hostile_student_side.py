"""Hostile student code on the student's side of the trust boundary (``dptutor.assignments``).

A student's function may raise anything (``SystemExit`` included), return objects whose conversions,
``repr`` or ``str`` fail, write into its inputs, or return junk: the checks must give a graded,
failing verdict with a message, award nothing for it, and never crash.  The public mysteries refuse
huge inputs before touching them.  Each test here failed before its fix.
"""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest

from dptutor.assignments import check, mystery_a, mystery_b
from dptutor.assignments.encoding import Writer
from dptutor.assignments.feedback import call, describe, expect_value_error
from dptutor.assignments.kernel import KernelCalls


pytestmark = pytest.mark.filterwarnings("error")  # every warning is an error here: none may reach a user


class _UnreadableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


class _Exits:
    """An object every conversion of which exits the interpreter."""

    def __array__(self, *args, **kwargs):
        raise SystemExit("array")

    def __float__(self):
        raise SystemExit("float")

    def __repr__(self):
        raise SystemExit("repr")

    def __str__(self):
        raise SystemExit("str")

    def __len__(self):
        raise SystemExit("len")


class _TimeLimit(BaseException):
    """Stands for the grader's own BaseException signals (time limits, aborts)."""


def _raising(exc: BaseException):
    def f(*args, **kwargs):
        raise exc
    return f


def _returning(value):
    def f(*args, **kwargs):
        return value
    return f


@pytest.mark.parametrize("exc", [SystemExit(3), GeneratorExit(), BaseException("bare")], ids=repr)
@pytest.mark.parametrize("question", [("sampler", "q1"), ("mechanism", "q1"), ("sampler", "q2")])
def test_a_student_function_that_exits_gets_a_failing_verdict(exc, question) -> None:
    fb = check(*question, _raising(exc))
    assert fb.status == "graded" and fb.score == 0.0
    assert any(type(exc).__name__ in m for m in fb.messages), fb.messages


def test_interrupts_and_the_graders_signals_still_stop_a_check() -> None:
    with pytest.raises(KeyboardInterrupt):
        check("mechanism", "q1", _raising(KeyboardInterrupt()))
    with pytest.raises(_TimeLimit):
        check("mechanism", "q1", _raising(_TimeLimit()))
    with pytest.raises(_TimeLimit):
        call(_raising(_TimeLimit()))
    assert isinstance(call(_raising(SystemExit(1)))[1], SystemExit)


def test_an_exception_whose_message_fails_is_still_described() -> None:
    assert describe(_UnreadableError()).startswith("_UnreadableError: ")
    finding = expect_value_error("f(0)", None, _UnreadableError(), "u must be in (0, 1)")
    assert finding.passed is False and "_UnreadableError" in finding.message
    fb = check("sampler", "q2", _raising(_UnreadableError()))
    assert fb.status == "graded" and fb.score == 0.0, fb.report()


@pytest.mark.parametrize("question", [("sampler", "q1"), ("sampler", "q2"), ("mechanism", "q1")])
def test_a_returned_object_whose_conversions_exit_gets_a_failing_verdict(question) -> None:
    fb = check(*question, _returning(_Exits()))
    assert fb.status == "graded" and fb.score == 0.0, fb.report()


def test_the_protocol_encodes_an_object_whose_repr_exits() -> None:
    tree = Writer().encode(_Exits())
    assert tree["k"] == "opaque" and "unreadable" in tree["repr"]


def test_the_kernel_answers_for_an_exception_whose_message_fails(tmp_path) -> None:
    writer = Writer()
    with contextlib.chdir(tmp_path):
        writer.save("in.npz", {"version": 2, "calls": [{"fn": "f", "args": [writer.encode(0.5)], "kwargs": []}]})
        with KernelCalls({"f": _raising(_UnreadableError())}, "in.npz", "out.npz") as io:
            for c in io:
                try:
                    c.value = c.fn(*c.args, **c.kwargs)
                except Exception as exc:
                    c.raised = exc
        with np.load("out.npz") as npz:
            meta = json.loads(str(npz["meta"][()]))
    raised = meta["results"][0]["raised"]
    assert raised["type"] == "_UnreadableError" and "could not be read" in raised["message"]


@pytest.mark.parametrize("value", [None, math.nan, True, "abc", np.full(4, np.inf)], ids=repr)
def test_leaving_x_unchanged_earns_nothing_for_a_mechanism_that_fails(value) -> None:
    f = _returning(value) if value is not None else _raising(ZeroDivisionError())
    fb = check("mechanism", "q3", f)
    assert fb.score == 0.0, fb.report()
    assert any("not checked whether private_mean leaves X unchanged" in m for m in fb.messages)


def test_leaving_x_unchanged_still_counts_for_a_working_mechanism() -> None:
    fb = check("mechanism", "q3", lambda X, epsilon, rng: np.asarray(X).mean(axis=0))
    unchanged = [f for f in fb.findings if f.check == "unchanged"]
    assert unchanged and unchanged[0].passed is True


@pytest.mark.parametrize("value", [math.nan, math.inf, True, 1j], ids=repr)
def test_a_constant_non_number_earns_no_scalar_point(value) -> None:
    from dptutor.assignments.sampler import _shape_findings

    findings = _shape_findings(_returning(value), np.full((3, 4), 0.5), 0.75)
    assert [f.passed for f in findings if f.check == "scalar"] == [False] * 3, findings


def test_a_numeric_array_is_required_for_the_shape_point() -> None:
    from dptutor.assignments.sampler import _shape_findings

    findings = _shape_findings(_returning(np.full((3, 4), "x")), np.full((3, 4), 0.5), 0.75)
    assert findings[0].check == "shape" and findings[0].passed is False


def test_a_sampler_that_writes_into_u_is_graded_not_crashed() -> None:
    def zeroes_its_input(u, mu, b):
        u = np.asarray(u)
        if u.flags.writeable:
            u[...] = 0.0
        return u

    fb = check("sampler", "q3", zeroes_its_input)
    assert fb.status == "graded", fb.report()


@pytest.mark.parametrize("mystery", [mystery_a, mystery_b])
@pytest.mark.parametrize("shape", [(2**20, 2**10), (1, 2**40)])
def test_the_mysteries_refuse_huge_views_before_reading_them(mystery, shape) -> None:
    x = np.broadcast_to(np.zeros(1), shape)  # costs no memory; reading or copying it would
    with pytest.raises(ValueError, match=r"^x "):
        mystery(x, 1.0, np.random.default_rng(0))


def test_a_ragged_or_boolean_selection_output_is_a_failing_form() -> None:
    from dptutor.assignments.selection import _at_indices, _rnm_indices

    ragged = [[0, 0, 0], [0]] + [[0, 0, 0]] * 2
    index, message = _at_indices(ragged, 4, 3, "above_threshold(...)")
    assert index is None and "ragged" in message
    index, message = _rnm_indices([[0], 1, 2, 0], 4, 3, "report_noisy_max(...)")
    assert index is None and "ragged" in message
    index, message = _rnm_indices(np.zeros(4, dtype=bool), 4, 3, "report_noisy_max(...)")
    assert index is None and "dtype bool" in message
    index, message = _at_indices(np.zeros((4, 3), dtype=bool), 4, 3, "above_threshold(...)")
    assert index is None and "dtype bool" in message
    fb = check("selection", "q3", lambda answers, epsilon, *, size, rng: [[0]] + [0] * (size - 1))
    assert fb.status == "graded" and fb.score == 0.0, fb.report()


def test_a_ragged_statistic_is_a_failing_form() -> None:
    fb = check("pair_audit", "q1", lambda outputs: [[1.0], 2.0] * (len(outputs) // 2))
    assert fb.status == "graded" and fb.score == 0.0, fb.report()


def test_the_protocol_never_copies_a_huge_returned_array() -> None:
    from dptutor.assignments.encoding import MAX_ARRAY_ELEMENTS

    writer = Writer()
    for value in (np.broadcast_to(np.zeros(1), (2**40,)), np.broadcast_to(np.zeros(1), (MAX_ARRAY_ELEMENTS + 1,))):
        tree = writer.encode(value)
        assert tree["k"] == "opaque" and "more than" in tree["repr"] and len(tree["repr"]) <= 200
    assert writer.arrays == []
    assert writer.encode(np.zeros(3))["k"] == "ndarray"


def test_the_protocol_encodes_at_most_100_fields_of_a_dataclass() -> None:
    import dataclasses

    seen = []

    class Counted:
        def __repr__(self) -> str:
            seen.append(1)
            return "x"

    Big = dataclasses.make_dataclass("Big", [f"f{i}" for i in range(300)])
    tree = Writer().encode(Big(*[Counted() for _ in range(300)]))
    assert len(tree["fields"]) == 100 and len(seen) == 100


@pytest.mark.parametrize(("points", "weights", "want"), [
    (2.0, {"a": 1e308}, 2.0),
    (2.0, {"a": 1e308, "b": 1e308}, 1.33),
    (1e308, {"a": 1.0}, 1e308 / 3 * 2),
    (3.0, {"a": 2.0, "b": 1.0}, 2.4),
])
def test_score_is_finite_for_weights_and_points_near_the_float_limit(points, weights, want) -> None:
    from dptutor.assignments.feedback import Finding, score

    findings = [Finding(True, "one", "a"), Finding(True, "two", "a"), Finding(False, "three", "b")]
    got = score(findings, points, weights)
    assert math.isfinite(got) and 0.0 <= got <= points and math.isclose(got, want, rel_tol=1e-12)
