"""Table pictures (`cf_env.viz.render_image`): array contract, what is drawn, and a layout in which no
two tiles ever overlap (R7 cross/star, R9 feet), for small and big sets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import ImageDraw

import cf_env
from cf_env import ChickenFootConfig, Engine
from cf_env.viz.image_paint import Painter
from cf_env.viz.render_image import canvas_size, render_image, render_rgb, table_layout


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


@pytest.mark.slow
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
    with pytest.raises(ValueError, match="scale must be a number 0.25..2.0"):
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


# ------------------------------------------- hardening: names, reveal, scale, target games
def _panel_text(monkeypatch, engine) -> list[tuple[float, str, object]]:
    """(x, text, font) of every text the next pictures write into the side panel."""
    drawn = []
    original = ImageDraw.ImageDraw.text
    table = canvas_size(engine.config)[1]

    def spy(self, xy, text, *args, **kwargs):
        if xy[0] >= table:  # (the table's arm labels and pip digits are left of it)
            drawn.append((xy[0], text, kwargs.get("font")))
        return original(self, xy, text, *args, **kwargs)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", spy)
    return drawn


def test_names_label_the_panel_and_are_shortened_to_fit(monkeypatch):
    engine = play(ChickenFootConfig(), seed=0, steps=30)
    table, width = canvas_size(engine.config)[1], canvas_size(engine.config)[0]
    plain = render_rgb(engine, viewer=1)
    # The default labels, given as names (a record without player names), change nothing.
    defaults = [f"player_{s}" for s in range(4)]
    assert np.array_equal(render_rgb(engine, viewer=1, names=defaults), plain)
    names = ["Ann", "ppo:" + "a_very_long_checkpoint_name_" * 4, "greedy", "Bo\nb"]
    public = render_rgb(engine)
    drawn = _panel_text(monkeypatch, engine)
    named = render_rgb(engine, names=names)
    # Only the side panel changes.
    assert np.array_equal(named[:, :table], public[:, :table])
    assert not np.array_equal(named[:, table:], public[:, table:])
    texts = [text for _x, text, _font in drawn]
    assert {"Ann", "greedy", "Bo?b"} <= set(texts)  # table cells; control characters as "?"
    longs = [t for t in texts if t.startswith("ppo:a_very_long")]
    assert longs and all(t.endswith("…") for t in longs)
    assert not any(t.startswith("player_") for t in texts)
    shown = ["Ann", "ppo:a_very_long", "greedy", "Bo?b"]
    assert any(t.startswith(f"To play: {shown[engine.current]}") for t in texts)
    assert any(t.startswith(f"last: {shown[engine.history[-1][1]]}") for t in texts)
    # Nothing runs past the panel's right edge, however long a name is.
    for x, text, font in drawn:
        assert x + font.getlength(text) <= width, text
    drawn.clear()
    render_rgb(engine, viewer=3, names=names)
    assert {"Bo?b (you)", "Bo?b (you) hand:"} <= {text for _x, text, _font in drawn}


def test_bad_names_and_reveal_are_refused():
    engine = play(ChickenFootConfig(), seed=1, steps=10)
    before = engine.snapshot()
    with pytest.raises(ValueError, match=r"names must list 4 strings, one per seat .* got \['a'"):
        render_rgb(engine, names=["a", "b"])
    with pytest.raises(ValueError, match="names must list 4 strings"):
        render_rgb(engine, names="abcd")  # a string is not a list of names
    with pytest.raises(ValueError, match=r"names\[2\] must be a string; got 7"):
        render_rgb(engine, names=["a", "b", 7, "d"])
    with pytest.raises(ValueError, match="reveal must be True or False; got 'yes'"):
        render_rgb(engine, reveal="yes")
    assert engine.snapshot() == before


def test_reveal_draws_every_hand_with_its_points(monkeypatch):
    engine = play(ChickenFootConfig(num_rounds=1), seed=2)  # a finished game: hands are left
    assert engine.game_over and sum(engine.hand_counts) > 0 and 0 in engine.hand_counts
    table = canvas_size(engine.config)[1]
    hidden = render_rgb(engine)
    tiles = []
    original = Painter.tile

    def spy(self, item):
        tiles.append(item.values)
        return original(self, item)

    monkeypatch.setattr(Painter, "tile", spy)
    drawn = _panel_text(monkeypatch, engine)
    revealed = render_rgb(engine, reveal=True)
    assert np.array_equal(revealed[:, :table], hidden[:, :table])
    assert not np.array_equal(revealed[:, table:], hidden[:, table:])
    # The table's tiles, then every seat's hand in seat order.
    on_table = int(engine.on_table.sum())
    pairs = engine.tables.pairs
    hands = [tuple(int(v) for v in pairs[t]) for s in range(4) for t in engine.hand(s)]
    assert [tuple(int(v) for v in pair) for pair in tiles[on_table:]] == hands
    # Each hand is headed by the points R12 scored it in the round just ended.
    texts = {text for _x, text, _font in drawn}
    for seat in range(4):
        points = engine.scores[seat][-1]
        head = f"player_{seat}: {points} points" if engine.hand(seat) else f"player_{seat}: out"
        assert head in texts
        assert points or not engine.hand(seat)  # (this set counts every tile, 0|0 as 50)


def test_scales_out_of_range_are_value_errors_not_unbound_locals():
    engine = play(ChickenFootConfig(), seed=2, steps=5)
    # A hand was drawn at tile size int(44 * scale) <= 9 with its size never chosen.
    for scale in (0.2, 0.1, 0, -1, 2.5, float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match=r"scale must be a number 0\.25\.\.2\.0 .* got"):
            render_rgb(engine, viewer=0, scale=scale)
    # The ends of the range draw the viewer's hand, and every hand, at the canvas size.
    for scale in (0.25, 2.0):
        for reveal in (False, True):
            image = render_rgb(engine, viewer=0, scale=scale, reveal=reveal)
            assert image.shape == (*canvas_size(engine.config, scale)[::-1], 3)


def test_target_games_count_rounds_not_the_countdown(monkeypatch):
    config = ChickenFootConfig(max_pips=6, num_players=2, target_score=200, double_blank_value=0)
    engine = Engine(config, seed=0)
    rng = np.random.default_rng(0)
    # Play past the double-blank round: the countdown of start doubles restarts.
    while len(engine.scores[0]) < config.num_rounds + 1:
        engine.step(int(rng.choice(engine.legal_actions())))
    assert not engine.game_over and engine.round == 1 and engine.center == 5
    drawn = _panel_text(monkeypatch, engine)
    render_rgb(engine)
    texts = [text for _x, text, _font in drawn]
    assert "Round 9 (game to 200)   centre 5|5" in texts
    assert not any(text.startswith("Round") and " of " in text for text in texts)
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    # At the end the last round is scored already: it is the count, not one past it.
    drawn.clear()
    render_rgb(engine)
    rounds = [text for _x, text, _font in drawn if text.startswith("Round")]
    assert rounds == [
        f"Round {len(engine.scores[0])} (game to 200)   centre {engine.center}|{engine.center}"
    ]
    drawn.clear()
    render_rgb(Engine(ChickenFootConfig(), seed=0))
    assert "Round 1 of 10   centre 9|9" in [text for _x, text, _font in drawn]
