"""Game records (`cf_env.record`) and `python -m cf_env.replay`: a recorded game re-simulates to
the recorded result; broken records are refused with a message saying what is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from cf_env import ChickenFootConfig, Engine
from cf_env.record import (
    FORMAT,
    VERSION,
    RecordError,
    engine_actions,
    final_of,
    iter_replay,
    make_record,
    read_record,
    record_from_engine,
    replay_engine,
    round_end_view,
    write_record,
)
from cf_env.render_image import canvas_size, render_rgb
from cf_env.replay import main as replay_main

SMALL = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=3)


def random_game(config: ChickenFootConfig, seed: int) -> Engine:
    engine = Engine(config, seed=seed)
    rng = np.random.default_rng(seed + 1)
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    return engine


def test_record_round_trip_replays_to_the_same_result(tmp_path):
    engine = random_game(SMALL, seed=11)
    path = tmp_path / "game.json"
    write_record(path, SMALL, 11, engine_actions(engine), final_of(engine), ["a", "b", "c"])
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["version"] == VERSION
    record = read_record(path)
    replayed = replay_engine(record)
    assert replayed.scores == engine.scores == record["final"]["scores"]
    assert replayed.winners == engine.winners == record["final"]["winners"]
    # Not just the scores: the whole end state is the same, RNG included.
    assert replayed.snapshot() == engine.snapshot()


def test_skip_forced_games_replay_from_the_engine_history():
    config = SMALL.replace(skip_forced=True)
    engine = random_game(config, seed=3)
    record = record_from_engine(engine, seed=3)
    # The engine took forced actions itself; the record lists them all.
    assert len(record["actions"]) == len(engine.history)
    replayed = replay_engine(record)
    assert replayed.scores == engine.scores and replayed.winners == engine.winners


def test_record_from_engine_uses_the_engines_seed_and_needs_one():
    engine = random_game(SMALL, seed=2)
    assert record_from_engine(engine)["seed"] == 2
    unseeded = Engine(SMALL, seed=None)
    with pytest.raises(RecordError, match="seed is unknown"):
        record_from_engine(unseeded)


def test_unfinished_games_are_recorded_without_a_result():
    engine = Engine(SMALL, seed=5)
    rng = np.random.default_rng(0)
    for _ in range(15):
        engine.step(int(rng.choice(engine.legal_actions())))
    record = record_from_engine(engine, seed=5)
    assert record["final"] is None
    replayed = replay_engine(record)
    assert replayed.snapshot() == engine.snapshot()


def test_iter_replay_shows_each_finished_round_before_the_next_deal():
    engine = random_game(SMALL, seed=7)
    record = record_from_engine(engine, seed=7)
    steps = list(iter_replay(record))
    ends = [s for s in steps if s.round_over]
    # One state per action plus the opening deal, plus a finished-table state per round but
    # the last (whose table the engine keeps at the end of the game).
    assert len(steps) == 1 + len(record["actions"]) + SMALL.num_rounds - 1
    assert len(ends) == SMALL.num_rounds
    for rnd, step in enumerate(ends):
        view = step.engine
        assert view.round == rnd
        assert step.points == [engine.scores[s][rnd] for s in range(SMALL.num_players)]
        # The finished table: R11 — somebody went out, or nobody could play on.
        assert min(view.hand_counts) == 0 or not view.boneyard


def test_round_end_view_leaves_the_engine_alone():
    engine = Engine(SMALL, seed=1)
    before = engine.snapshot()
    action = engine.legal_actions()[0]
    assert round_end_view(engine, action) is None  # the first move ends no round
    assert round_end_view(engine, 10**6) is None
    assert engine.snapshot() == before


def _record(**changes) -> dict:
    engine = random_game(SMALL, seed=9)
    record = make_record(SMALL, 9, engine_actions(engine), final_of(engine))
    record.update(changes)
    return record


@pytest.mark.parametrize(
    "change, message",
    [
        ({"format": "something-else"}, "not a game record"),
        ({"version": VERSION + 1}, "newer than this reader"),
        ({"seed": -1}, "seed must be a non-negative int"),
        ({"seed": "7"}, "seed must be a non-negative int"),
        ({"actions": [0, "x"]}, r"action #1 is 'x'"),
        ({"actions": [10**6]}, r"actions are ints 0\.\.57"),
        ({"config": {"max_pips": 7}}, "config is invalid"),
        ({"extra": 1}, "unknown field"),
        ({"final": {"scores": [[1]]}}, "final must be null"),
        ({"players": ["a"]}, "players must list 3 names"),
    ],
)
def test_malformed_records_are_refused(change, message):
    with pytest.raises(RecordError, match=message):
        replay_engine(_record(**change))


def test_records_that_do_not_replay_are_refused():
    good = _record()
    actions = good["actions"]
    wrong = dict(
        good, actions=actions[:3] + [actions[3] ^ 1 if actions[3] < 56 else 0] + actions[4:]
    )
    with pytest.raises(RecordError, match="does not replay|does not reach|comes after"):
        replay_engine(wrong)
    scores = [list(row) for row in good["final"]["scores"]]
    scores[0][0] += 1
    with pytest.raises(RecordError, match="does not reach the recorded result"):
        replay_engine(dict(good, final={"scores": scores, "winners": good["final"]["winners"]}))
    with pytest.raises(RecordError, match="comes after the end of the game"):
        replay_engine(dict(good, actions=actions + [actions[-1]]))
    with pytest.raises(RecordError, match="claims a finished game"):
        replay_engine(dict(good, actions=actions[:-5]))


def test_replay_cli_writes_a_gif_and_pngs(tmp_path, capsys):
    engine = random_game(SMALL.replace(num_rounds=2), seed=4)
    path = tmp_path / "game.json"
    write_record(path, engine.config, 4, engine_actions(engine), final_of(engine))
    gif = tmp_path / "game.gif"
    assert replay_main([str(path), "--out", str(gif), "--scale", "0.3"]) == 0
    out = capsys.readouterr().out
    totals = engine.totals()
    assert f"totals: player_0 {totals[0]}, player_1 {totals[1]}" in out
    states = 1 + len(engine.history) + 1
    with Image.open(gif) as image:
        assert image.n_frames == states
        assert image.size == canvas_size(engine.config, 0.3)
    frames = tmp_path / "frames"
    assert replay_main([str(path), "--out", str(frames), "--scale", "0.25", "--rounds", "2"]) == 0
    pngs = sorted(frames.glob("turn_*.png"))
    assert 0 < len(pngs) < states
    assert Image.open(pngs[0]).size == canvas_size(engine.config, 0.25)


def test_replay_cli_reports_bad_records(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    assert replay_main([str(path)]) == 1
    assert "is not JSON" in capsys.readouterr().err
    path.write_text(json.dumps(_record(seed=-3)))
    assert replay_main([str(path)]) == 1
    assert "seed must be" in capsys.readouterr().err
    assert replay_main([str(tmp_path / "missing.json")]) == 1
    assert "cannot read record" in capsys.readouterr().err


def test_replay_cli_single_picture_and_move_list(tmp_path, capsys):
    engine = Engine(SMALL, seed=2)
    rng = np.random.default_rng(2)
    for _ in range(12):
        engine.step(int(rng.choice(engine.legal_actions())))
    path = tmp_path / "game.json"
    write_record(path, SMALL, 2, engine_actions(engine))
    png = tmp_path / "table.png"
    assert replay_main([str(path), "--out", str(png), "--viewer", "1"]) == 0
    with Image.open(png) as image:
        picture = np.asarray(image.convert("RGB"))
    # The picture of the record's end is the picture of the engine that played it.
    assert np.array_equal(picture, render_rgb(engine, viewer=1))
    assert replay_main([str(path), "--moves"]) == 0
    moves = [line for line in capsys.readouterr().out.splitlines() if "round 1  player_" in line]
    assert len(moves) == 12
    assert "empty spinner arm of the 6|6" in moves[0]
    assert replay_main([str(path), "--out", str(png), "--step", "13"]) == 1
    assert "--step must be 0..12" in capsys.readouterr().err
