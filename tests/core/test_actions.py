"""The action codec (`cf_env.core.actions`), a public contract: every action id of every set
round-trips through decode / encode_play / describe, and the engine's moves mean what the codec
says."""

from __future__ import annotations

import numpy as np
import pytest

from cf_env.core.actions import DRAW, PASS, PLAY, actions_in, decode, describe, encode_play
from cf_env.core.config import SUPPORTED_SETS, ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.tiles import tile_tables


@pytest.mark.parametrize("max_pips", SUPPORTED_SETS)
def test_every_action_id_round_trips(max_pips):
    tables = tile_tables(max_pips)
    cfg = ChickenFootConfig(max_pips=max_pips)
    count = tables.num_tiles
    # The id contract: for lo in 0..N, for hi in lo..N -> tile (lo, hi); 2T + 2 actions.
    assert list(tables.pairs) == [(lo, hi) for lo in range(max_pips + 1) for hi in range(lo, max_pips + 1)]
    assert cfg.num_actions == 2 * count + 2
    assert (cfg.draw_action, cfg.pass_action) == (2 * count, 2 * count + 1)
    names = set()
    for action in range(2 * count):
        move = decode(tables, action)
        tile, side = divmod(action, 2)
        lo, hi = tables.pairs[tile]
        assert move.kind == PLAY and move.tile == tile
        # 2t attaches the lo half, 2t+1 the hi half; the other half is the new open end.
        assert (move.attached, move.free_end) == ((hi, lo) if side else (lo, hi))
        name = describe(tables, action)
        assert name == f"play {move.attached}|{move.free_end} on a {move.attached}"
        if lo != hi:
            assert encode_play(tables, tile, move.attached) == action
            names.add(name)
        else:  # a double attaches one way: both ids decode alike, encode gives 2t
            assert encode_play(tables, tile, lo) == 2 * tile
            assert describe(tables, 2 * tile + 1) == describe(tables, 2 * tile)
            names.add(name)
        missing = next(v for v in range(max_pips + 1) if v not in (lo, hi))
        with pytest.raises(ValueError):
            encode_play(tables, tile, missing)
    assert len(names) == 2 * count - (max_pips + 1)  # every distinct move has its own name
    assert decode(tables, cfg.draw_action).kind == DRAW and describe(tables, cfg.draw_action) == "draw"
    assert decode(tables, cfg.pass_action).kind == PASS and describe(tables, cfg.pass_action) == "pass"
    for outside in (-1, 2 * count + 2, 10**6):
        with pytest.raises(ValueError):
            decode(tables, outside)


@pytest.mark.parametrize("max_pips", SUPPORTED_SETS)
def test_actions_in_reads_a_legal_set_bitset(max_pips):
    rng = np.random.default_rng(max_pips)
    count = 2 * tile_tables(max_pips).num_tiles + 2
    assert actions_in(0) == []
    for _ in range(50):
        chosen = sorted(set(rng.integers(0, count, size=int(rng.integers(1, 12))).tolist()))
        assert actions_in(sum(1 << a for a in chosen)) == chosen


@pytest.mark.parametrize(
    "config", [{}, {"max_pips": 6, "num_players": 2}, {"max_pips": 12, "num_players": 6, "spinner_arms": 6}]
)
def test_engine_moves_mean_what_the_codec_says(config):
    """A played id lays exactly the decoded tile from the mover's hand, its attached half
    against the table (the new open end is the other half, R6); draw adds to the hand."""
    cfg = ChickenFootConfig(num_rounds=1, **config)
    engine = Engine(cfg, seed=3)
    tables = tile_tables(cfg.max_pips)
    policy = np.random.default_rng(3)
    while not engine.game_over:
        seat = engine.current
        legal = engine.legal_actions()
        action = int(policy.choice(legal))
        before = engine.hand(seat)
        move = decode(tables, action)
        engine.step(action)
        if engine.game_over:  # the round (and game) ended: the layout is gone
            break
        if move.kind == PLAY:
            assert move.tile in before and move.tile not in engine.hand(seat)
            laid = [
                tuple(tile)
                for arm in engine.snapshot()["arms"]
                for tile in arm["tiles"]
                if sorted(tile) == list(tables.pairs[move.tile])
            ]
            assert laid == [(move.attached, move.free_end)]  # layout tiles read (attached, free)
        elif move.kind == DRAW:
            assert len(engine.hand(seat)) > len(before)
