"""Round 4 of hostile inputs: error messages that crashed while being built, and errors naming the wrong parameter.

Each test failed before its fix (the old behaviour is in the comment above it).
"""

from __future__ import annotations

import dataclasses
import warnings
from fractions import Fraction

import numpy as np
import pytest

from dptutor.assignments.feedback import Assignment, Finding, Question, named
from dptutor.assignments.instances import answer_member
from dptutor.audit.learned import AdditiveMap, LearnedStatistic, fit_additive_map
from dptutor.audit.pair_pool import value_pairs
from dptutor.audit.pair_search import audit_mechanism
from dptutor.text_privacy import TextRelease, calibrate, wrong_sensitivity_release

HUGE = 10**5000  # past Python's 4300-digit limit for str(int)


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr raised")


def _check(*objects, grading_seed=None):
    return []


def _question(**changes):
    fields = dict(name="q1", title="Title", points=1.0, needs=("a",), check=_check)
    return Question(**{**fields, **changes})


def _assignment(**changes):
    fields = dict(name="hw", title="Title", notebook="hw.md", questions=(_question(),))
    return Assignment(**{**fields, **changes})


# Before: a RuntimeError from the value's __repr__, or "Exceeds the limit (4300 digits) for integer string conversion".
@pytest.mark.parametrize("bad", [BadRepr(), HUGE], ids=["repr-raises", "huge-int"])
@pytest.mark.parametrize("name, build", [
    ("check", lambda bad: Finding(True, "ok", check=bad)),
    ("check", lambda bad: named(bad)),
    ("name", lambda bad: _question(name=bad)),
    ("title", lambda bad: _question(title=bad)),
    ("needs", lambda bad: _question(needs=(bad,))),
    ("needs", lambda bad: _question(needs=bad)),
    ("checks", lambda bad: _question(checks=(bad,))),
    ("carried", lambda bad: _question(carried=(bad,))),
    ("name", lambda bad: _assignment(name=bad)),
])
def test_feedback_messages_show_unprintable_values(bad, name, build):
    with pytest.raises(TypeError, match=rf"^{name} must .*(cannot be printed|too long to print)"):
        build(bad)


# Before: the whole 5,000-character name in the message.
def test_assignment_question_lookup_cuts_long_names():
    with pytest.raises(ValueError, match="question name: assignment 'hw' has no question 'x{10}") as caught:
        _assignment().question("x" * 5000)
    assert len(str(caught.value)) < 200


# Before: OverflowError "int too large to convert to float".
def test_audit_member_scale_bounds_n():
    member = answer_member("audit")
    with pytest.raises(ValueError, match="^n must be <="):
        member.scale("A", 10**400, 1.0)
    assert member.scale("A", 4, 2.0) > 0


# Before: RuntimeWarning "overflow encountered in subtract" (np.quantile), then a ValueError naming knots[0].
def test_fit_additive_map_names_outputs_for_a_spread_past_the_float_range():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="^outputs: .*float range"):
            fit_additive_map(np.array([1e308, -1e308]))
        with pytest.raises(ValueError, match="^outputs: "):
            fit_additive_map(np.array([[0.0, 1e308], [1.0, 0.0], [2.0, -1e308]]))
        # the same extremes as atoms (each held by half the sample) are no spread to interpolate
        assert fit_additive_map(np.array([1e308] * 3 + [-1e308] * 3)).atoms[0].size == 2


# Before: accepted, then "overflow encountered in subtract" when transforming.
def test_additive_map_refuses_knots_wider_than_the_float_range():
    with pytest.raises(ValueError, match=r"^knots\[0\] .*float range"):
        AdditiveMap(knots=(np.array([-1e308, 1e308]),), atoms=(np.empty(0),))


# Before: "overflow encountered in add" in the linear tails' centre (knots[0] + knots[-1]).
def test_linear_tails_near_the_float_limit_do_not_warn():
    sample = np.array([1.7e308, 1.5e308, 1.6e308, 1.65e308, 1.55e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        features = fit_additive_map(sample, tails="linear").transform(sample[:, None])
    assert np.isfinite(features.toarray()).all()


# Before: numpy's "setting an array element with a sequence", not naming infinite.
def test_learned_statistic_names_a_ragged_infinite():
    with pytest.raises(ValueError, match="^infinite must .*ragged"):
        LearnedStatistic(model=None, kind="additive", width=2, infinite=[[False], [False, True]])


# Before: blamed epsilon, then scale.
def test_text_privacy_names_a_huge_dimension():
    with pytest.raises(ValueError, match="^dimension must be <="):
        calibrate("l2", "laplace", bound=1.0, steps=4, dimension=10**400, epsilon=1.0)
    with pytest.raises(ValueError, match="^dimension must be <="):
        TextRelease("l2", "laplace", 1.0, 4, HUGE, Fraction(1), 8, 1.0)
    with pytest.raises(ValueError, match="^dimension must be <="):
        wrong_sensitivity_release(bound=1.0, steps=4, dimension=HUGE, epsilon=1.0)
    with pytest.raises(ValueError, match="^epsilon give"):  # a scale too large because of epsilon still blames it
        calibrate("l2", "laplace", bound=1.0, steps=4, dimension=10, epsilon=1e-300)


def _uniform(data, size, rng):
    return rng.random(size)


# Before: "candidates must hold at least one pair of distinct inputs" (the pair (-0.0, 0.0) was dropped as equal).
def test_equal_values_are_refused_by_name():
    with pytest.raises(ValueError, match="^values must be distinct, got -0.0 and 0.0, which are equal"):
        audit_mechanism(_uniform, epsilon=1.0, values=[-0.0, 0.0], runs=4000, rng=0)
    with pytest.raises(ValueError, match="^values must be distinct, got 1 and 1.0"):
        value_pairs([1, 1.0, 2])
    assert value_pairs(["a", "b"]) == [("a", "b")]


# Before: "pilot_runs must be <= 3, got ...", not naming runs.
def test_mechanism_audit_names_runs_too():
    found = audit_mechanism(_uniform, epsilon=1.0, values=[0, 1], runs=4000, rng=1)
    with pytest.raises(ValueError, match=r"^pilot_runs must be <= runs .*runs=3"):
        dataclasses.replace(found, runs=3)
    with pytest.raises(ValueError, match="^pilot_runs must be <= runs .*too long to print"):
        dataclasses.replace(found, pilot_runs=HUGE)


def test_the_private_mystery_mechanisms_scale_is_never_below_n_over_epsilon():
    # AuditMember.scale was n / epsilon rounded to nearest: below the exact quotient about half the time,
    # so the "correct" mechanism of the audit family spent a hair more than epsilon.
    from fractions import Fraction

    from dptutor.assignments.instances import FAMILIES

    member = FAMILIES["audit"][0]
    correct = "B" if member.broken == "A" else "A"
    below = 0
    for n in (1, 3, 7, 10, 100):
        for eps in (0.3, 0.7, 1.1, 2.9, 3.0):
            scale = member.scale(correct, n, eps)
            assert Fraction(scale) >= Fraction(n) / Fraction(eps)
            below += n / eps < scale  # rounded to nearest would have been an ulp below here
    assert below > 0
    for m in FAMILIES["pair_audit"]:
        assert Fraction(m.scale) >= Fraction(m.spread) / Fraction(0.5)
        assert Fraction(m.true_epsilon) >= m.columns / Fraction(m.scale)
