"""Per-sample random draws under a strategy (``tt.utils.random.keep_mask``/``normal`` inside
``replica_draws``): the replicas' rows of a split global batch, put together, are exactly what
one process draws for the whole batch, and every replica leaves its generator in one process's
state (its buffered 32-bit half included), whatever its rows. Without known rows the replicas
draw apart (the bug this fixes: ranks seeded alike drew the same dropout mask for their parts).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tnp_train.distribute.input_lib import part_bounds
from tnp_train.utils.random import ReplicaGenerators, keep_mask, normal, replica_draws


def _state(g):
    return g.bit_generator.state


def _fresh(seed, buffered):
    g = np.random.default_rng(seed)
    if buffered:                 # leave a buffered 32-bit half, as a bounded integer draw does
        g.integers(0, 7)
        assert _state(g)["has_uint32"] == 1
    return g


DRAWS = {
    "mask": lambda shape, g, **k: keep_mask(shape, 0.37, g, **k),
    "normal": lambda shape, g, **k: normal(shape, g, **k),
}


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 23), replicas=st.integers(1, 5), width=st.integers(1, 7),
       buffered=st.booleans(), kind=st.sampled_from(sorted(DRAWS)), seed=st.integers(0, 99))
def test_replica_rows_put_together_are_one_process_draw(n, replicas, width, buffered, kind,
                                                        seed):
    draw = DRAWS[kind]
    ref_gen = _fresh(seed, buffered)
    ref = draw((n, width), ref_gen)
    # a second draw after the first: the generators must go on alike too
    ref2 = draw((n, 3), ref_gen)
    parts, parts2, states = [], [], []
    for r in range(replicas):
        lo, hi = part_bounds(n, replicas, r)
        g = _fresh(seed, buffered)
        with replica_draws(r, replicas, (n, lo, hi)):
            parts.append(draw((hi - lo, width), g))
            parts2.append(draw((hi - lo, 3), g))
        states.append(_state(g))
    np.testing.assert_array_equal(np.concatenate(parts), ref)
    np.testing.assert_array_equal(np.concatenate(parts2), ref2)
    for s in states:
        assert s == _state(ref_gen)


def test_a_mask_shared_by_the_batch_is_the_same_on_every_replica():
    ref = keep_mask((1, 9), 0.5, np.random.default_rng(3), per_sample=False)
    for r in range(3):
        with replica_draws(r, 3, (12, 4 * r, 4 * r + 4)):
            got = keep_mask((1, 9), 0.5, np.random.default_rng(3), per_sample=False)
        np.testing.assert_array_equal(got, ref)


def test_without_known_rows_the_replicas_draw_apart_and_stay_in_step():
    masks, states = [], []
    for r in range(3):
        g = np.random.default_rng(11)
        with replica_draws(r, 3):
            masks.append(keep_mask((16, 32), 0.5, g))
        states.append(_state(g))
    assert not np.array_equal(masks[0], masks[1])
    assert not np.array_equal(masks[1], masks[2])
    assert states[0] == states[1] == states[2]
    # rows that are not this batch's (a layer called on something else) count as unknown
    g = np.random.default_rng(11)
    with replica_draws(1, 3, (12, 4, 8)):
        odd = keep_mask((5, 32), 0.5, g)
    assert odd.shape == (5, 32)


def test_keep_mask_and_normal_have_the_right_distribution():
    g = np.random.default_rng(0)
    m = keep_mask((400, 500), 0.3, g)
    assert m.dtype == np.bool_ and abs(m.mean() - 0.7) < 0.005
    assert keep_mask((10, 10), 0.0, g).all()
    z = normal((400, 500), g)
    assert z.dtype == np.float32 and abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs(np.mean(np.abs(z) > 2) - 0.0455) < 0.003
    assert normal((3, 2), g, dtype=np.float64).dtype == np.float64


def test_replica_generators_copy_the_callers_state_and_hand_back_replica_zeros():
    from tnp_train.utils.random import _own, get_rng, set_random_seed
    set_random_seed(5)
    before = _state(get_rng())
    owner = np.random.default_rng(9)                # a layer's own generator
    owner_before = _state(owner)
    gens = ReplicaGenerators()
    streams = gens.begin(2)
    assert _state(streams[0].main) == _state(streams[1].main) == before
    for i, s in enumerate(streams):
        with replica_draws(i, 2, None, s):
            _own(None).random(3)
            mine = _own(owner)
            assert mine is not owner and _state(mine) == owner_before
            mine.random(2)
    gens.end()
    assert _state(get_rng()) == _state(streams[0].main) != before
    assert _state(owner) == _state(streams[0].copies[id(owner)][1]) != owner_before
    # the next run's copies start from there
    again = gens.begin(2)
    assert _state(again[1].main) == _state(get_rng())
    with replica_draws(1, 2, None, again[1]):
        assert _state(_own(owner)) == _state(owner)
    gens.end()


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_keep_probability_follows_rate(rate):
    m = keep_mask((1000, 100), rate, np.random.default_rng(1))
    assert abs(m.mean() - (1 - rate)) < 0.01


def test_per_sample_draws_take_the_replicas_rows_of_one_draw():
    from tnp_train.utils.random import per_sample

    def draw(g, m):
        return g.uniform(-1, 1, m), g.integers(0, 5, (m, 2))
    ref = draw(np.random.default_rng(4), 10)
    got_u, got_i, states = [], [], []
    for r in range(3):
        lo, hi = part_bounds(10, 3, r)
        g = np.random.default_rng(4)
        with replica_draws(r, 3, (10, lo, hi)):
            u, i = per_sample(draw, hi - lo, g)
        got_u.append(u)
        got_i.append(i)
        states.append(_state(g))
    np.testing.assert_array_equal(np.concatenate(got_u), ref[0])
    np.testing.assert_array_equal(np.concatenate(got_i), ref[1])
    assert states[0] == states[1] == states[2]
    # rows unknown: each replica its own
    apart = []
    for r in range(2):
        with replica_draws(r, 2):
            apart.append(per_sample(lambda g, m: g.random(m), 6, np.random.default_rng(4)))
    assert not np.array_equal(apart[0], apart[1])
