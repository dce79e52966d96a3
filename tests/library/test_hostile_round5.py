"""Hostile inputs, round 5: huge ``SeedSequence`` objects, and mechanisms that make an object dataset writeable."""

import numpy as np
import pytest

from dptutor._validate import MAX_SEED_BITS, MAX_SEED_LENGTH
from dptutor._validate import check_seed_sequence
from dptutor.audit.pair import audit_pair


@pytest.mark.parametrize("make", [
    lambda: np.random.SeedSequence(10**100000),
    lambda: np.random.SeedSequence(2**MAX_SEED_BITS),
    lambda: np.random.SeedSequence([1] * (MAX_SEED_LENGTH + 1)),
    lambda: np.random.SeedSequence(list(range(100_000))),
    lambda: np.random.SeedSequence([1, 2**MAX_SEED_BITS]),
    lambda: np.random.SeedSequence(1, spawn_key=(0,) * (MAX_SEED_LENGTH + 1)),
    lambda: np.random.SeedSequence(1, spawn_key=(2**MAX_SEED_BITS,)),
])
def test_check_seed_sequence_refuses_huge_seed_sequences(make):
    seq = make()
    with pytest.raises(ValueError, match=r"^myrng") as info:
        check_seed_sequence(seq, "myrng")
    assert len(str(info.value)) < 200


@pytest.mark.parametrize("seq", [
    np.random.SeedSequence(12345),
    np.random.SeedSequence(),
    np.random.SeedSequence([1, 2, 3]),
    np.random.SeedSequence([]),
    np.random.SeedSequence(np.array([7, 8], dtype=np.uint64)),
    np.random.SeedSequence(2**MAX_SEED_BITS - 1),
    np.random.SeedSequence([1] * MAX_SEED_LENGTH),
    np.random.SeedSequence(5).spawn(3)[2],
    np.random.SeedSequence(5, pool_size=8),
])
def test_check_seed_sequence_still_takes_ordinary_seed_sequences(seq):
    out = check_seed_sequence(seq, "rng")
    if not seq.spawn_key and seq.pool_size == 4:
        assert out is seq
    else:
        assert tuple(out.entropy) == tuple(int(v) for v in seq.generate_state(4))  # a new root, as before


def test_audit_pair_object_dataset_cannot_be_made_writeable_for_later_calls():
    seen = []

    def mutating(data, size, rng):
        seen.append(data[0])
        if data[0] == 1:  # x: make the array behind it writeable again and change it
            data.base.setflags(write=True)
            data.base[0] = 99
        return (rng.random(size) < 0.5).astype(np.int64)

    x, x_prime = np.array([1], dtype=object), np.array([0], dtype=object)
    audit_pair(mutating, x, x_prime, epsilon=1.0, trials=2000, rng=0)
    assert len(seen) > 2 and set(seen) == {0, 1}
    assert x[0] == 1 and x_prime[0] == 0  # the caller's arrays were never handed out


def test_audit_pair_refuses_a_huge_seed_sequence_naming_rng():
    with pytest.raises(ValueError, match=r"^rng\.entropy"):
        audit_pair(lambda d, size, rng: rng.random(size), 0.0, 1.0, epsilon=1.0, trials=100,
                   rng=np.random.SeedSequence(10**100000))


def test_a_mechanism_that_changes_its_list_dataset_changes_neither_the_callers_list_nor_later_calls():
    seen = []

    def mutating(data, size, rng):
        seen.append(list(data))
        out = rng.laplace(sum(data), 10.0, size)  # epsilon 0.1 for sums 1 apart
        data[0] += 1  # a buggy mechanism: it changes its input
        return out

    x, x_prime = [0.0, 0.0], [1.0, 0.0]
    result = audit_pair(mutating, x, x_prime, epsilon=0.1, trials=400_000, rng=1)
    assert x == [0.0, 0.0] and x_prime == [1.0, 0.0]  # was [5.0, 0.0] for both, and the bound 0.0
    assert {tuple(v) for v in seen} == {(0.0, 0.0), (1.0, 0.0)}
    assert result.lower_bound > 0.05


def test_an_object_nested_in_an_object_array_dataset_is_copied_for_every_call():
    seen = []

    def mutating(data, size, rng):
        seen.append(tuple(data[0]))
        data[0].append(7)  # changes the list stored in the array (a shallow copy shares it)
        return (rng.random(size) < 0.5).astype(np.int64)

    x, x_prime = np.empty(1, dtype=object), np.empty(1, dtype=object)
    x[0], x_prime[0] = [1], [0]
    audit_pair(mutating, x, x_prime, epsilon=1.0, trials=300_000, rng=0)
    assert len(seen) > 2 and set(seen) == {(1,), (0,)}
    assert x[0] == [1] and x_prime[0] == [0]


def test_immutable_and_uncopyable_datasets_reach_the_mechanism_unchanged():
    import threading

    lock = threading.Lock()  # cannot be deep-copied: handed over as it is
    got = []

    def mechanism(data, size, rng):
        got.append(data)
        return (rng.random(size) < 0.5).astype(np.int64)

    for x, x_prime in (((1, 2.5, "a"), (1, 2.5, "b")), ((1, lock), (2, lock)), (3, 4)):
        got.clear()
        audit_pair(mechanism, x, x_prime, epsilon=1.0, trials=1000, rng=0)
        assert all(d is x or d is x_prime for d in got)


def _yes_no(data, size, rng):
    """Randomized response as words: "yes" with probability 3/4 on 1, 1/4 on 0 (epsilon ln 3)."""
    return np.where(rng.random(size) < (0.75 if data else 0.25), "yes", "no")


def test_a_statistic_reads_outputs_of_any_dtype_and_without_one_the_refusal_says_so():
    with pytest.raises(ValueError, match=r"non-numeric outputs \(dtype <U3\); pass statistic="):
        audit_pair(_yes_no, 1, 0, epsilon=1.0, trials=20_000, rng=1)
    codes = lambda out: (out == "yes").astype(np.int64)  # noqa: E731
    as_words = audit_pair(_yes_no, 1, 0, epsilon=1.0, trials=200_000, rng=1, statistic=codes)
    as_bits = audit_pair(lambda d, size, rng: codes(_yes_no(d, size, rng)), 1, 0, epsilon=1.0, trials=200_000, rng=1)
    assert as_words.lower_bound == as_bits.lower_bound  # the same draws, counted the same way
    assert 0.9 < as_words.lower_bound < np.log(3)
    # Objects and complex numbers, read by a statistic; a statistic that returns no numbers is still refused.
    pairs = lambda d, size, rng: np.array([("a", 1) if v else ("b", 2) for v in rng.random(size) < 0.5 + 0.1 * d],  # noqa: E731
                                          dtype=object)
    assert audit_pair(pairs, 1, 0, epsilon=1.0, trials=20_000, rng=2, statistic=lambda o: o[:, 1].astype(int)).lower_bound >= 0
    with pytest.raises(ValueError, match="statistic .* must return real numbers"):
        audit_pair(_yes_no, 1, 0, epsilon=1.0, trials=20_000, rng=1, statistic=lambda out: out)
