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
