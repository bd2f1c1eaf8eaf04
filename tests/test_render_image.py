"""Table pictures (`cf_env.render_image`): array contract, what is drawn, and a layout in which no
two tiles ever overlap (R7 cross/star, R9 feet), for small and big sets."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cf_env
from cf_env import ChickenFootConfig, Engine
from cf_env.render_image import canvas_size, render_image, render_rgb, table_layout


def play(config: ChickenFootConfig, seed: int, steps: int | None = None) -> Engine:
    """Random legal play from a fresh game, for `steps` actions (or to the end)."""
    engine = Engine(config, seed=seed)
    rng = np.random.default_rng(seed)
    taken = 0
    while not engine.game_over and (steps is None or taken < steps):
        engine.step(int(rng.choice(engine.legal_actions())))
        taken += 1
    return engine


def busy_position(config: ChickenFootConfig, seed: int) -> Engine:
    """The fullest table seen in a one-round random game (the round's last position)."""
    return play(config.replace(num_rounds=1), seed)


def _overlap(a, b, shrink: float = 0.01) -> bool:
    """Separating-axis test for two convex quadrilaterals, each shrunk a little (touching is ok)."""

    def shrunk(poly):
        cx = sum(p[0] for p in poly) / 4
        cy = sum(p[1] for p in poly) / 4
        return [(cx + (x - cx) * (1 - shrink), cy + (y - cy) * (1 - shrink)) for x, y in poly]

    pa, pb = shrunk(a), shrunk(b)
    for poly in (pa, pb):
        for k in range(4):
            (x0, y0), (x1, y1) = poly[k], poly[(k + 1) % 4]
            nx, ny = y1 - y0, x0 - x1
            da = [nx * x + ny * y for x, y in pa]
            db = [nx * x + ny * y for x, y in pb]
            if max(da) < min(db) or max(db) < min(da):
                return False
    return True


def _check_layout(engine: Engine) -> list:
    pieces = table_layout(engine)
    tables = engine.tables
    # Every tile on the table is drawn exactly once, the centre double included.
    drawn = sorted(int(tables.tile_id[p.values]) for p in pieces if p.values is not None)
    assert drawn == np.flatnonzero(engine.on_table).tolist()
    # Every open end is marked; empty spinner arms (R7) and owed toes (R9) are dashed slots.
    opened = sum(1 for p in pieces if "open" in p.flags or "end" in p.flags)
    assert opened == sum(engine.open_count)
    assert sum(1 for p in pieces if "spinner" in p.flags) == engine.spinner_empty
    assert sum(1 for p in pieces if "toe" in p.flags) == engine.toes_left
    assert sum(1 for p in pieces if "pending" in p.flags) == (1 if engine.foot_value >= 0 else 0)
    # No two pieces overlap, however the arms grow.
    for i, a in enumerate(pieces):
        for b in pieces[i + 1 :]:
            assert not _overlap(a.corners, b.corners), (a, b)
    return pieces


def test_rgb_array_shape_and_dtype():
    engine = play(ChickenFootConfig(), seed=0, steps=10)
    image = render_rgb(engine)
    width, height = canvas_size(engine.config)
    assert image.shape == (height, width, 3)
    assert image.dtype == np.uint8
    # Every frame of a game has the same size (video recorders need it), whatever the table.
    later = play(ChickenFootConfig(), seed=0, steps=120)
    assert render_rgb(later).shape == image.shape


def test_image_changes_when_a_tile_is_played():
    engine = Engine(ChickenFootConfig(), seed=3)
    before = render_rgb(engine)
    plays = [a for a in engine.legal_actions() if a < 2 * engine.config.num_tiles]
    assert plays
    engine.step(plays[0])
    after = render_rgb(engine)
    table = canvas_size(engine.config)[1]  # the table area is the left square
    assert not np.array_equal(before[:, :table], after[:, :table])


@pytest.mark.parametrize(
    "config",
    [
        ChickenFootConfig(),
        ChickenFootConfig(spinner_arms=6),
        ChickenFootConfig(max_pips=6, num_players=2),
        ChickenFootConfig(toes=5),
        ChickenFootConfig(max_pips=15, num_players=8),
    ],
    ids=["double9", "six_arms", "double6_2p", "five_toes", "double15_8p"],
)
def test_no_two_tiles_overlap_and_everything_is_drawn(config):
    for seed in range(3):
        engine = Engine(config.replace(num_rounds=1), seed=seed)
        rng = np.random.default_rng(seed)
        step = 0
        while not engine.game_over:
            if step % 5 == 0:
                _check_layout(engine)
            engine.step(int(rng.choice(engine.legal_actions())))
            step += 1
        _check_layout(engine)


def test_six_arm_star_renders():
    engine = busy_position(ChickenFootConfig(spinner_arms=6), seed=1)
    assert sum(1 for arm in engine.arms if arm.parent < 0) == 6
    image = render_rgb(engine, viewer=0)
    assert image.shape == (*canvas_size(engine.config)[::-1], 3)
    # The six spinner arms point every 60 degrees, clockwise from north.
    firsts = {p.label: p.angle for p in table_layout(engine) if p.label in "ABCDEF" and p.label}
    assert sorted(firsts) == list("ABCDEF")
    for index, label in enumerate("ABCDEF"):
        assert math.isclose(firsts[label], index * math.pi / 3, abs_tol=1e-9)


def test_double15_eight_players_far_into_a_game_renders():
    engine = busy_position(ChickenFootConfig(max_pips=15, num_players=8), seed=2)
    assert engine.on_table.sum() > 40
    image = render_rgb(engine, viewer=3)
    assert image.shape == (*canvas_size(engine.config)[::-1], 3)
    _check_layout(engine)


def test_double18_renders_every_step_of_a_round():
    config = ChickenFootConfig(max_pips=18, num_players=6, num_rounds=1)
    engine = Engine(config, seed=4)
    rng = np.random.default_rng(4)
    shape = render_rgb(engine).shape
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
        if len(engine.history) % 25 == 0:
            assert render_rgb(engine, scale=0.5).shape[2] == 3
    assert render_rgb(engine).shape == shape


def test_hidden_information_is_not_drawn():
    # A position past the spinner phase where seats 1 and 2 hold equally many tiles.
    engine = Engine(ChickenFootConfig(), seed=5)
    rng = np.random.default_rng(5)
    while len(engine.history) < 20 or engine.hand_counts[1] != engine.hand_counts[2]:
        engine.step(int(rng.choice(engine.legal_actions())))
    public = render_rgb(engine)
    mine = render_rgb(engine, viewer=0)
    table = canvas_size(engine.config)[1]
    # Showing seat 0's hand changes only the side panel.
    assert np.array_equal(public[:, :table], mine[:, :table])
    assert not np.array_equal(public, mine)
    # Swapping the hidden hands of seats 1 and 2 and reordering the boneyard changes nothing
    # that a spectator or seat 0 may see.
    snap = engine.snapshot()
    snap["hands"][1], snap["hands"][2] = snap["hands"][2], snap["hands"][1]
    snap["boneyard"].reverse()
    other = Engine(engine.config, seed=99)
    other.restore(snap)
    assert other.hand(1) == engine.hand(2)
    assert np.array_equal(render_rgb(other), public)
    assert np.array_equal(render_rgb(other, viewer=0), mine)


def test_pending_foot_and_empty_arms_are_marked():
    engine = Engine(ChickenFootConfig(), seed=0)
    pieces = table_layout(engine)
    assert sum(1 for p in pieces if "spinner" in p.flags) == 4
    # Play on until a chicken foot is pending (R9).
    rng = np.random.default_rng(0)
    while engine.foot_value < 0:
        engine.step(int(rng.choice(engine.legal_actions())))
    pieces = _check_layout(engine)
    pending = [p for p in pieces if "pending" in p.flags]
    assert len(pending) == 1 and pending[0].values == (engine.foot_value, engine.foot_value)


def test_snapshot_without_layout_renders():
    engine = play(ChickenFootConfig(), seed=6, steps=40)
    snap = engine.snapshot()
    del snap["arms"]
    bare = Engine(engine.config, seed=0)
    bare.restore(snap)
    image = render_rgb(bare)
    assert image.dtype == np.uint8
    pieces = table_layout(bare)
    assert sum(1 for p in pieces if "end" in p.flags) == sum(bare.open_count)


def test_bad_arguments_are_refused():
    engine = Engine(ChickenFootConfig(), seed=0)
    with pytest.raises(ValueError, match="viewer must be None or a seat 0..3"):
        render_rgb(engine, viewer=4)
    with pytest.raises(ValueError, match="scale must be > 0"):
        render_image(engine, scale=0)


def test_env_rgb_array_mode_matches_render_rgb():
    env = cf_env.env(render_mode="rgb_array", num_rounds=1)
    env.reset(seed=0)
    for _ in range(6):
        agent = env.agent_selection
        mask = env.observe(agent)["action_mask"]
        env.step(int(np.flatnonzero(mask)[0]))
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.ndim == 3
    assert np.array_equal(frame, render_rgb(env.unwrapped.engine))
