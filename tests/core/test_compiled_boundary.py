"""The checked boundary in front of the compiled core (cf_env.core.checks): every public call
that hands arrays or indices to compiled code refuses a bad one with a `ValueError` naming it,
and a refused call changes nothing (the state is compared whole, before and after).

Each case here once reached compiled code unchecked: a short `out` was written past its end,
a seat out of range read other memory, a refused snapshot left the engine on a blank buffer,
a refused batch reset had already replaced a game's RNG."""

from __future__ import annotations

import copy
import tracemalloc

import numpy as np
import pytest

from cf_env import ChickenFootConfig, Engine, IllegalActionError, SnapshotError
from cf_env.agents.kernel_search import play_round, rule_tables
from cf_env.core import checks
from cf_env.core.kernel import (
    KernelBatch,
    _random_actions,
    batch_bytes_per_game,
    batch_random_actions,
    max_games,
    num_words,
)
from cf_env.core.observation import Encoder
from cf_env.core.snapshot import max_round_points

CFG = ChickenFootConfig()


def engine_after_rounds(rounds: int, seed: int = 3, config: ChickenFootConfig = CFG) -> Engine:
    """An engine whose first `rounds` rounds were played (lowest legal action each time)."""
    engine = Engine(config, seed=seed)
    while len(engine.scores[0]) < rounds:
        engine.step(engine.legal_actions()[0])
    engine.step(engine.legal_actions()[-1])
    return engine


def engine_state(engine: Engine) -> tuple:
    return (engine.game.buffer.copy(), engine.snapshot(), engine.legal_actions(),
            engine.rng.bit_generator.state)


def batch_state(batch: KernelBatch) -> list:
    return [a.copy() for a in batch.state] + [
        batch._ahead.copy(), batch._ahead_pos.copy(),
        [None if r is None else r.bit_generator.state for r in batch.rngs]]


def same(a: list, b: list) -> bool:
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
               for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------------------- observations
def test_write_observation_refuses_a_short_or_foreign_out_and_writes_nothing():
    engine = Engine(seed=1)
    size = Encoder(CFG).layout.size
    buffer = np.full(size + 64, 7.0, np.float32)
    bad_outs = [buffer[:4], np.empty(1, np.float32), np.empty(size, np.float64),
                np.empty(size + 1, np.float32), buffer[: 2 * size : 2],  # not contiguous
                np.empty((1, size), np.float32), [0.0] * size]
    readonly = np.empty(size, np.float32)
    readonly.flags.writeable = False
    for out in [*bad_outs, readonly]:
        with pytest.raises(ValueError, match="out must be a C-contiguous float32"):
            engine.write_observation(0, out)
    assert (buffer == 7.0).all()  # nothing written past the 4-float view


@pytest.mark.parametrize("seat", [4, -1, 10**8, 1.0, True, None, np.int64(9)])
def test_observation_seats_out_of_range_are_refused(seat):
    engine = Engine(seed=1)
    row = np.empty(Encoder(CFG).layout.size, np.float32)
    with pytest.raises(ValueError, match=r"seat must be an int in \[0, 4\)"):
        engine.write_observation(seat, row)
    with pytest.raises(ValueError, match=r"seat must be an int in \[0, 4\)"):
        Encoder(CFG).observe(engine, seat)


def test_encoder_observe_refuses_an_out_of_another_shape_and_accepts_numpy_seats():
    engine, encoder = Engine(seed=1), Encoder(CFG)
    for out in (np.empty(1, np.float32), np.empty((2, encoder.layout.size), np.float32),
                np.empty(encoder.layout.size, np.int64)):
        with pytest.raises(ValueError, match="out must be a writable float numpy array"):
            encoder.observe(engine, 0, out=out)
    strided = np.zeros(2 * encoder.layout.size, np.float32)[::2]  # copied into, as before
    assert np.array_equal(encoder.observe(engine, np.int64(2), out=strided),
                          encoder.encode(engine, 2))


# ---------------------------------------------------------------------------- random actions
def only_action_67() -> np.ndarray:
    legal = np.zeros((1, 2), np.uint64)
    legal[0, 1] = np.uint64(1 << 3)  # bit 67
    return legal


def test_batch_random_actions_refuses_bad_uniforms_and_short_outs():
    legal = only_action_67()
    for uniforms in (np.array([np.nan]), np.array([-0.5]), np.array([1.0]), np.array([np.inf])):
        with pytest.raises(ValueError, match=r"uniforms must be finite numbers in \[0, 1\)"):
            batch_random_actions(legal, uniforms)
    with pytest.raises(ValueError, match="out must be"):
        batch_random_actions(np.repeat(legal, 8, axis=0), np.zeros(8), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="uniforms must be"):
        batch_random_actions(legal, np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="legal_words must be"):
        batch_random_actions(legal.astype(np.int64), np.zeros(1))
    assert batch_random_actions(legal, np.array([0.999])).tolist() == [67]


def test_the_random_action_kernel_never_names_an_action_outside_the_legal_row():
    out = np.zeros(1, np.int64)
    for u in (np.nan, -0.5, 1.0, 7.0, -np.inf):
        _random_actions(only_action_67(), np.array([u]), out)
        assert out[0] == 67


# ---------------------------------------------------------------------------- snapshots
def test_a_round_score_out_of_range_is_a_snapshot_error_and_the_engine_keeps_its_game():
    engine = engine_after_rounds(1)
    most = max_round_points(CFG, engine.tables)
    before = engine_state(engine)
    for value in (2**31, 2**62, most + 1, -1):
        snap = engine.snapshot()
        snap["scores"][0][-1] = value
        with pytest.raises(SnapshotError, match=f"ints in 0..{most}"):
            engine.restore(snap)
        after = engine_state(engine)
        assert np.array_equal(before[0], after[0]) and before[1:] == after[1:]
    snap = engine.snapshot()
    snap["scores"][0][-1] = most  # the bound itself is a score the rules allow
    engine.restore(snap)
    assert engine.scores[0][-1] == most and engine.totals()[0] == most


def test_max_round_points_is_every_tile_but_the_cheapest_double():
    tables = Engine(CFG, seed=0).tables
    points = tables.points(CFG.double_blank_value)
    assert max_round_points(CFG, tables) == points.sum() - min(points[tables.double_id])
    blank0 = ChickenFootConfig(double_blank_value=0)
    assert max_round_points(blank0, tables) == points.sum() - 50  # every double-blank point


@pytest.mark.parametrize("state", [
    {"state": 2**200, "inc": 1}, {"state": -1, "inc": 1}, {"state": 1, "inc": 2**128},
    {"state": 1.5, "inc": 1}, {"state": 1}])
def test_an_rng_state_out_of_range_is_a_snapshot_error_and_changes_nothing(state):
    engine = engine_after_rounds(1)
    before = engine_state(engine)
    snap = engine.snapshot()
    snap["rng"]["state"] = state
    with pytest.raises(SnapshotError, match="rng must be a PCG64 state"):
        engine.restore(snap)
    after = engine_state(engine)
    assert np.array_equal(before[0], after[0]) and before[1:] == after[1:]


def test_an_arm_tile_with_a_value_out_of_range_is_refused():
    engine = Engine(seed=4)
    while sum(len(arm["tiles"]) for arm in engine.snapshot()["arms"]) < 3:
        engine.step(engine.legal_actions()[0])
    before = engine_state(engine)
    for bad in (-1, -9, CFG.max_pips + 1):
        snap = engine.snapshot()
        arm = next(a for a in snap["arms"] if a["tiles"])
        arm["tiles"][-1][1] = bad
        with pytest.raises(SnapshotError, match="is not a tile"):
            engine.restore(snap)
    after = engine_state(engine)
    assert np.array_equal(before[0], after[0]) and before[1:] == after[1:]


def test_history_entries_out_of_range_are_refused():
    engine = engine_after_rounds(1)
    for entry in ([0, 9, 0], [0, 0, CFG.num_actions], [CFG.num_rounds, 0, 0], [0, 0, -1]):
        snap = engine.snapshot()
        snap["history"].append(entry)
        with pytest.raises(SnapshotError, match="history entries"):
            engine.restore(snap)


# ---------------------------------------------------------------------------- batches
def test_a_refused_batch_reset_changes_no_game():
    batch = KernelBatch(CFG, 8)
    batch.reset(list(range(11, 19)))
    before = batch_state(batch)
    bad_calls = [([5, 6], [0, 8]), ([5, -6], [0, 1]), ([5], [1.5]), ([5], [-1]), ([5, 6], [2, 2]),
                 ([5], [True]), ([5, 6], [0]), (5, [0]), ([2**128], [0]), (["5"], [0]),
                 ([5.0], [0])]
    for seeds, games in bad_calls:
        with pytest.raises(ValueError, match="games|seeds"):
            batch.reset(seeds, games)
        assert same(before, batch_state(batch)), (seeds, games)
    # game 0 still plays Engine(seed=11)'s game
    engine = Engine(CFG, seed=11)
    for _ in range(60):
        action = engine.legal_actions()[0]
        engine.step(action)
        actions = np.array([batch_random_actions(batch.legal(), np.zeros(8))[0]] * 8)
        assert actions[0] == action
        batch.step_games([0], actions[:1])
    assert batch.state.current[0] == engine.current


def test_batch_step_names_a_uint64_action_as_given():
    batch = KernelBatch(CFG, 2)
    batch.reset([1, 2])
    before = batch_state(batch)
    with pytest.raises(IllegalActionError, match=f"action {2**64 - 1} is not legal"):
        batch.step(np.full(2, 2**64 - 1, np.uint64))
    assert same(before, batch_state(batch))


def test_batch_sizes_are_capped_before_anything_is_allocated():
    cap = max_games(CFG)
    assert cap * batch_bytes_per_game(CFG) <= checks.MAX_BATCH_BYTES
    tracemalloc.start()
    for size in (10**7, cap + 1, 0, -5, 2.5, True):
        with pytest.raises(ValueError, match=rf"num_games must be an int in \[1, {cap}\]"):
            KernelBatch(CFG, size)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**20


def test_batch_bytes_per_game_covers_what_a_batch_holds():
    batch = KernelBatch(CFG, 64)
    per_game_arrays = batch.nbytes / 64
    # the estimate holds every per-game array, plus the Generator beside them
    assert batch_bytes_per_game(CFG) >= per_game_arrays
    assert batch_bytes_per_game(CFG) <= per_game_arrays + checks.GENERATOR_BYTES + 512


def test_batch_load_refuses_bad_indices_and_engines_and_changes_nothing():
    batch = KernelBatch(CFG, 2)
    batch.reset([1, 2])
    before = batch_state(batch)
    engine = Engine(CFG, seed=5)
    for game, other in [(2, engine), (-1, engine), (0.0, engine), (0, "engine"),
                        (0, Engine(ChickenFootConfig(num_players=3), seed=5))]:
        with pytest.raises(ValueError, match="game must be|engine must be|config differs"):
            batch.load(game, other)
        assert same(before, batch_state(batch))
    between = Engine(CFG, seed=5, auto_deal=False)
    while not between.between_rounds:
        between.step(between.legal_actions()[0])
    with pytest.raises(ValueError, match="between rounds"):
        batch.load(0, between)
    assert same(before, batch_state(batch))


def test_play_round_refuses_slots_and_streams_it_cannot_use():
    batch = KernelBatch(CFG, 2)
    batch.reset([1, 2])
    rule = (*rule_tables([0.0] * CFG.num_actions, [0] * CFG.num_actions, num_words(CFG)), 0.0)
    before = batch_state(batch)
    for game, work, rng, match in [(0, 2, np.zeros(1, np.uint64), "work must be"),
                                   (0, 10**8, np.zeros(1, np.uint64), "work must be"),
                                   (0, 0, np.zeros(1, np.uint64), "another slot"),
                                   (0, 1, np.zeros(0, np.uint64), "rng must be"),
                                   (0, 1, np.zeros(1, np.int64), "rng must be")]:
        with pytest.raises(ValueError, match=match):
            play_round(batch, game, work, rule, rng)
        assert same(before, batch_state(batch))
    with pytest.raises(ValueError, match="rule value"):
        play_round(batch, 0, 1, (rule[0][:3], rule[1], 0.0), np.zeros(1, np.uint64))
    for first in (2**64 - 1, np.uint64(2**64 - 1), CFG.num_actions, -2):
        with pytest.raises(IllegalActionError, match="first must be -1 or an action id"):
            play_round(batch, 0, 1, rule, np.zeros(1, np.uint64), first)
    assert same(before, batch_state(batch))


# ---------------------------------------------------------------------------- copies
def test_a_shallow_copy_of_an_engine_is_an_independent_game():
    engine = Engine(CFG, seed=8)
    rng_before, buffer_before = engine.rng.bit_generator.state, engine.game.buffer.copy()
    other = copy.copy(engine)
    while len(other.scores[0]) < 1:  # the copy deals its next round from its own RNG
        other.step(other.legal_actions()[0])
    assert engine.rng.bit_generator.state == rng_before
    assert np.array_equal(engine.game.buffer, buffer_before)
    assert other.history != engine.history


# ---------------------------------------------------------------------------- the fuzzer
def test_the_boundary_fuzzer_finds_no_fault_and_no_signal():
    # In a child process, so that a segfault is seen as a signal instead of killing the tests.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "cf_env.tools.fuzz_boundary", "--calls", "3000",
                           "--seed", "11"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3,000 calls" in done.stdout and ": 0 faults" in done.stdout


def test_a_position_loaded_into_a_batch_slot_plays_as_the_restored_engine():
    """`KernelBatch.load_position` and `Engine.restore` write a position through the same
    `write_position`; a slot that held another game keeps nothing of it."""
    from cf_env.core.kernel import words_to_int
    from cf_env.core.snapshot import read

    source = engine_after_rounds(1, seed=9)
    for _ in range(7):
        source.step(source.legal_actions()[0])
    snap = source.snapshot()
    engine = Engine(CFG)
    engine.restore(snap)
    batch = KernelBatch(CFG, 3)
    batch.reset([4, 5, 6])
    for _ in range(30):  # slot 1 deep into another game first
        batch.step_games([1], [batch_random_actions(batch.legal(), np.zeros(3))[1]])
    batch.load_position(1, read(CFG, engine.tables, snap))
    for name, field in zip(batch.state._fields, batch.state, strict=True):
        if name not in ("next_perm", "need_perm"):  # the batch's shuffle queue is its own
            assert np.array_equal(field[1], getattr(engine.game.state, name)[0]), name
    for _ in range(200):
        if engine.game_over:
            break
        assert words_to_int(batch.legal()[1]) == engine.legal_bits()
        action = engine.legal_actions()[-1]
        engine.step(action)
        batch.step_games([1], [action])
    with pytest.raises(ValueError, match="position must be a Position of this config"):
        batch.load_position(0, snap)


def test_a_snapshot_without_rng_deals_on_from_the_restoring_engines_own_rng():
    """A hand-built snapshot has no `rng`: the engine keeps its seeded RNG, so the same seed and
    snapshot deal the same next round (a fresh unseeded RNG would not); a batch game keeps its
    own, and a never-reset batch game, with no RNG to keep, is refused whole."""
    from cf_env.core.snapshot import read

    source = engine_after_rounds(1, seed=9)
    snap = source.snapshot()
    del snap["rng"]
    deals = []
    for _ in range(2):
        engine = Engine(CFG, seed=3)
        expected = np.random.default_rng()
        expected.bit_generator.state = engine.rng.bit_generator.state
        engine.restore(snap)
        assert engine.rng.bit_generator.state == expected.bit_generator.state
        while engine.round == snap["round"] and not engine.game_over:
            engine.step(engine.legal_actions()[0])
        deals.append(engine.snapshot())
    assert deals[0] == deals[1]

    batch = KernelBatch(CFG, 2)
    batch.reset([4, None], games=[0, 1])
    kept = batch.rngs[0]
    batch.load_position(0, read(CFG, source.tables, snap))
    assert batch.rngs[0] is kept
    fresh = KernelBatch(CFG, 2)
    before = [field.copy() for field in fresh.state]
    with pytest.raises(ValueError, match="no RNG state .* never been reset"):
        fresh.load_position(1, read(CFG, source.tables, snap))
    assert all(np.array_equal(a, b) for a, b in zip(before, fresh.state, strict=True))
