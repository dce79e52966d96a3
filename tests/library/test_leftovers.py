"""Regression tests for three leftovers: audit_pair's errors on NaN or infinite datasets, exponential_mechanism_exact
built through public ``Fraction`` construction only, and reconstruct's predictable cost."""

from __future__ import annotations

import ast
import inspect
import math
import random
import warnings
from fractions import Fraction

import numpy as np
import pytest

import dptutor._selection_laws as laws
import dptutor.attacks as attacks
from dptutor.attacks import reconstruct, subset_queries, subset_sum_answers
from dptutor.audit import audit_pair
import dptutor.audit._pair_cells as cells
from dptutor.mechanisms import laplace_mechanism
from dptutor.selection import exponential_mechanism_exact

# ---------------------------------------------------------------------------------------------
# 1. audit_pair: a NaN (or infinite) dataset is named, not blamed on the mechanism
# ---------------------------------------------------------------------------------------------


def shift(data, size, rng):
    return data + rng.laplace(0.0, 1.0, size)


def vector(data, size, rng):
    return np.asarray(data, dtype=float) + rng.laplace(0.0, 1.0, (size, 2))


def library_laplace(data, size, rng):
    return laplace_mechanism(np.full((size, 1), data), 1.0, rng)[:, 0]


def nan_later(data, size, rng):
    out = data + rng.laplace(0.0, 1.0, size)
    if size > 64:  # a broken mechanism: NaN after the probe, whatever the data
        out[3] = np.nan
    return out


def inf_minus_inf(data, size, rng):  # NaN exactly when the data are infinite
    return data - data + rng.laplace(0.0, 1.0, size)


def nan_tolerant(data, size, rng):
    return np.nan_to_num(np.asarray(data, dtype=float)) + rng.laplace(0.0, 1.0, size)


@pytest.mark.parametrize(
    "mechanism, x, x_prime, kind, pattern",
    [
        (shift, math.nan, 1.0, ValueError, r"^x: mechanism 'shift' returned NaN on x, which holds NaN: check x"),
        (shift, np.array([math.nan]), np.array([1.0]), ValueError, r"^x: .*returned NaN on x, which holds NaN"),
        (shift, 1.0, math.nan, ValueError, r"^x_prime: mechanism 'shift' returned NaN on x_prime, which holds NaN"),
        (inf_minus_inf, math.inf, -math.inf, ValueError, r"^x: .*returned NaN on x, which holds an infinite value"),
        (vector, np.zeros(2), np.array([0.0, math.nan]), ValueError, r"^x_prime: .*returned NaN on x_prime, which holds NaN"),
        (vector, np.array([math.nan, 0.0]), np.zeros(2), ValueError, r"^x: .*returned NaN on x, which holds NaN"),
        (library_laplace, math.nan, 1.0, ValueError, r"^x: mechanism 'library_laplace' failed on x, which holds NaN"),
        (library_laplace, 1.0, math.inf, ValueError, r"^x_prime: .*failed on x_prime, which holds an infinite value"),
        (nan_later, 0.0, 1.0, ValueError, r"^mechanism 'nan_later' returned NaN on x$"),
    ],
)
def test_audit_pair_names_the_dataset_a_nan_came_from(mechanism, x, x_prime, kind, pattern):
    with pytest.raises(kind, match=pattern):
        audit_pair(mechanism, x, x_prime, epsilon=1.0, trials=2000, rng=1)


def test_audit_pair_names_x_prime_in_later_blocks():
    def nan_on_one(data, size, rng):
        out = data + rng.laplace(0.0, 1.0, size)
        if size > 64 and data == 1.0:
            out[3] = np.nan
        return out

    with pytest.raises(ValueError, match=r"mechanism 'nan_on_one' returned NaN on x_prime$"):
        audit_pair(nan_on_one, 0.0, 1.0, epsilon=1.0, trials=2000, rng=1)


def test_audit_pair_runs_a_mechanism_that_accepts_nan():
    # Black-box: a NaN dataset is fine when the mechanism makes sense of it.
    result = audit_pair(nan_tolerant, math.nan, 1.0, epsilon=1.0, trials=4000, rng=3)
    assert 0.0 <= result.lower_bound <= 1.0


@pytest.mark.parametrize(
    "data", ["text", [[1.0], [1.0, 2.0]], object(), None, [None, 1.0], {"a": 1.0}, 3, np.array([1, 2]), [1.0, "nan"]]
)
def test_input_note_is_silent_for_data_without_nan(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cells.input_note(data, "x") == ""


def test_input_note_finds_nan_and_inf_in_numbers():
    assert cells.input_note([1.0, math.nan], "x") == "NaN"
    assert cells.input_note(np.array([[1.0, -math.inf]]), "x") == "an infinite value"
    assert cells.input_note(np.array([1, math.nan], dtype=object), "x") == "NaN"
    assert cells.input_note(complex(1.0, math.nan), "x") == "NaN"
    assert cells.input_note([None, math.inf], "x") == "an infinite value"


# ---------------------------------------------------------------------------------------------
# 2. exponential_mechanism_exact: public Fraction construction only, same results
# ---------------------------------------------------------------------------------------------


def test_exact_exponential_mechanism_touches_no_private_fraction_field():
    tree = ast.parse(inspect.getsource(laws))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr not in ("_numerator", "_denominator", "_from_coprime_ints"), ast.unparse(node)
            assert not (node.attr == "__new__" and ast.unparse(node.value) == "Fraction"), ast.unparse(node)


def _reference(scores, base):
    """The definition in plain Fraction arithmetic (slow, obviously right)."""
    b = Fraction(base)
    powers = [b**u for u in scores]
    total = sum(powers)
    return [w / total for w in powers]


@pytest.mark.parametrize(
    "scores, base",
    [
        ([0, 1], 3),
        ([0, 0, 0], 2),
        ([-3, 5, 5, 0, -3, 2], Fraction(3, 2)),
        ([4, 2, 0], Fraction(6, 5)),  # gcds of both p and q with the total
        ([-7, 7, 1], Fraction(10, 3)),
        (list(range(-40, 41, 3)), Fraction(2**64 - 59, 2**64 - 83)),
        ([1000, -1000, 0, 999], Fraction(4, 3)),
    ],
)
def test_exact_exponential_mechanism_matches_the_definition(scores, base):
    got = exponential_mechanism_exact(scores, base)
    assert got == _reference(scores, base)
    assert sum(got) == 1
    for f in got:
        assert type(f) is Fraction and f.denominator > 0 and math.gcd(f.numerator, f.denominator) == 1
        assert f == Fraction(f.numerator, f.denominator) and hash(f) == hash(Fraction(f.numerator, f.denominator))


def test_exact_exponential_mechanism_matches_on_random_scores():
    gen = random.Random(7)
    for _ in range(20):
        scores = [gen.randint(-30, 30) for _ in range(gen.randint(1, 12))]
        base = Fraction(gen.randint(2, 50), gen.randint(1, 49)) + 1
        assert exponential_mechanism_exact(scores, base) == _reference(scores, base)


# ---------------------------------------------------------------------------------------------
# 3. reconstruct: least squares through the Gram matrix, the SVD only where needed and bounded
# ---------------------------------------------------------------------------------------------


def _lstsq_bits(q, a):
    return (np.linalg.lstsq(q, a, rcond=None)[0] >= 0.5).astype(np.int64)


@pytest.mark.parametrize("people, count", [(200, 800), (200, 200), (200, 201), (200, 199), (200, 50), (300, 1200)])
@pytest.mark.parametrize("epsilon", [None, 1.0, 1e3])
def test_reconstruct_agrees_with_lstsq(people, count, epsilon):
    rng = np.random.default_rng([people, count, 0 if epsilon is None else int(epsilon)])
    secret = rng.integers(0, 2, people)
    q = subset_queries(people, count, rng)
    a = subset_sum_answers(secret, q, rng=rng, epsilon=epsilon)
    exact = np.linalg.lstsq(q, a, rcond=None)[0]
    fast = attacks._gram_solution(q, a)
    assert fast is not None  # random 0/1 queries are well conditioned: no SVD
    assert np.max(np.abs(fast - exact)) <= 1e-9 * max(1.0, np.max(np.abs(exact)))
    assert np.array_equal(reconstruct(q, a), _lstsq_bits(q, a))


def test_reconstruct_of_full_rank_queries_needs_no_svd(monkeypatch):
    rng = np.random.default_rng(11)
    secret = rng.integers(0, 2, 300)
    q = subset_queries(300, 1200, rng)
    a = subset_sum_answers(secret, q, rng=rng)
    expected = _lstsq_bits(q, a)

    def no_svd(*args, **kwargs):
        raise AssertionError("numpy.linalg.lstsq called on a well-conditioned query matrix")

    monkeypatch.setattr(np.linalg, "lstsq", no_svd)
    assert np.array_equal(reconstruct(q, a), expected)
    assert np.array_equal(expected, secret)


@pytest.mark.parametrize("shape", [(200, 50), (30, 50)])
def test_reconstruct_of_rank_deficient_queries_is_the_minimum_norm_solution(shape):
    rng = np.random.default_rng(4)
    q = subset_queries(shape[1], shape[0], rng)
    q[:, 3] = q[:, 7]  # a repeated person: a singular Gram matrix q^T q (more queries than people)
    q[:, 5] = 0.0  # a person in no query
    q[1] = q[0]  # a repeated query: a singular Gram matrix q q^T (fewer queries than people)
    a = q @ rng.integers(0, 2, shape[1]) + rng.laplace(0.0, 0.5, shape[0])
    assert attacks._gram_solution(q, a) is None
    assert np.array_equal(reconstruct(q, a), _lstsq_bits(q, a))


def test_reconstruct_refuses_a_too_costly_svd_by_name(monkeypatch):
    rng = np.random.default_rng(5)
    q = subset_queries(40, 60, rng)
    q[:, 1] = q[:, 0]
    a = q @ rng.integers(0, 2, 40)
    monkeypatch.setattr(attacks, "MAX_SVD_WORK", 60 * 40 * 40 - 1)
    with pytest.raises(ValueError, match=r"^queries \(60 x 40\) is too close to rank-deficient.*MAX_SVD_WORK"):
        reconstruct(q, a)
    monkeypatch.setattr(attacks, "MAX_SVD_WORK", 60 * 40 * 40)
    assert np.array_equal(reconstruct(q, a), _lstsq_bits(q, a))


def test_max_svd_work_admits_the_documented_sizes():
    assert 4000 * 1000 * 1000 <= attacks.MAX_SVD_WORK < 53_687 * 5000 * 5000


@pytest.mark.parametrize("scale", [1e308, -1e308, 1e-320, 1e300])
def test_reconstruct_of_extreme_answers_neither_overflows_nor_warns(scale):
    rng = np.random.default_rng(6)
    q = subset_queries(50, 200, rng)
    a = np.clip(rng.normal(size=200) * scale, -1.7e308, 1.7e308) if abs(scale) < 1e308 else np.full(200, scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(reconstruct(q, a), _lstsq_bits(q, a))


def test_reconstruct_falls_back_to_the_svd_when_refinement_does_not_settle(monkeypatch):
    rng = np.random.default_rng(8)
    q = subset_queries(60, 90, rng)
    a = subset_sum_answers(rng.integers(0, 2, 60), q, rng=rng, epsilon=10.0)
    monkeypatch.setattr(attacks, "GRAM_TOLERANCE", 0.0)  # no step is ever small enough
    assert attacks._gram_solution(q, a) is None
    assert np.array_equal(reconstruct(q, a), _lstsq_bits(q, a))


@pytest.mark.parametrize(("scores", "base", "name"), [([0, 1, 2], -10**5000, "base"), ([10**5000, 0, 1], 2, "scores")],
                         ids=["huge-base", "huge-score"])
def test_exact_exponential_mechanism_messages_survive_huge_ints(scores, base, name):
    # Both messages used to fail while being built, on Python's 4300-digit limit for printing an int.
    with pytest.raises(ValueError, match=f"{name} must .*too long to print"):
        laws.exponential_mechanism_exact(scores, base)
