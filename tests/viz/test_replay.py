"""Game records (`cf_env.viz.record`) and `python -m cf_env.viz.replay`: a recorded game re-simulates to
the recorded result; broken records are refused with a message saying what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cf_env import ChickenFootConfig, Engine
from cf_env.viz.record import (
    FORMAT,
    VERSION,
    RecordError,
    engine_actions,
    final_of,
    iter_replay,
    make_record,
    max_actions,
    read_record,
    read_records,
    record_from_engine,
    replay_engine,
    round_end_view,
    write_record,
)
from cf_env.viz.render_image import canvas_size, render_image, render_rgb
from cf_env.viz.replay import frame_caption, frames, seat_names
from cf_env.viz.replay import main as replay_main

SMALL = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=3)


def random_game(config: ChickenFootConfig, seed: int, skip_forced: bool = False) -> Engine:
    engine = Engine(config, seed=seed, skip_forced=skip_forced)
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
    engine = random_game(SMALL, seed=3, skip_forced=True)
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


@pytest.mark.slow
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


def test_replay_cli_a_record_path_with_no_file_is_a_bad_argument(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        replay_main([str(tmp_path / "missing.json")])
    assert stop.value.code == 2
    assert "no record file at" in capsys.readouterr().err


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
    with pytest.raises(SystemExit) as stop:  # a bad argument (the README's exit code 2)
        replay_main([str(path), "--out", str(png), "--step", "13"])
    assert stop.value.code == 2
    assert "--step must be 0..12" in capsys.readouterr().err


# ------------------------------------------- hardening: hostile records, paths, names
def _record_text(**changes) -> str:
    return json.dumps(_record(**changes))


def test_non_utf8_records_are_record_errors(tmp_path, capsys):
    path = tmp_path / "latin1.json"
    record = _record(players=["Jos\u00e9", "b", "c"])
    path.write_bytes(json.dumps(record, ensure_ascii=False).encode("latin-1"))
    assert b"Jos\xe9" in path.read_bytes()  # a Latin-1 byte: not UTF-8
    with pytest.raises(RecordError, match="is not UTF-8 text"):
        read_record(path)
    assert replay_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not UTF-8" in err and "Traceback" not in err


def test_deeply_nested_records_are_record_errors(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)  # deeper than Python's JSON parser recurses
    with pytest.raises(RecordError, match="nested too deeply"):
        read_record(deep)
    nested = 0
    for _ in range(500):  # parses, but no record field nests like this
        nested = [nested]
    for field in ("seed", "players", "config"):
        path = tmp_path / f"{field}.json"
        value = {"max_pips": nested} if field == "config" else nested
        path.write_text(_record_text(**{field: value}))
        with pytest.raises(RecordError, match="nests lists/objects more than 4 deep") as caught:
            read_record(path)
        assert len(str(caught.value)) < 300


@pytest.mark.parametrize(
    "text_change, message",
    [
        (('"seed": 9', '"seed": 1' + "0" * 10_000), "a number with 10001 digits"),
        (('"seed": 9', '"seed": ' + str(2**129)), "below 2\\*\\*128"),
        (('"seed": 9', '"seed": NaN'), "holds NaN, which is not a JSON number"),
        (('"seed": 9', '"seed": -Infinity'), "holds -Infinity"),
        (('"seed": 9', '"seed": 9.0'), "seed must be a non-negative int"),
        (('"actions": [', '"actions": [1e999, '), r"action #0 is inf"),
        (('"actions": [', '"actions": [' + "9" * 41 + ", "), "a number with 41 digits"),
        (('"actions": [', '"actions": [3.0, '), r"action #0 is 3\.0"),
    ],
)
def test_absurd_numbers_are_record_errors(tmp_path, text_change, message):
    text = _record_text()
    assert text_change[0] in text
    path = tmp_path / "absurd.json"
    path.write_text(text.replace(text_change[0], text_change[1], 1))
    with pytest.raises(RecordError, match=message) as caught:
        read_record(path)
    assert len(str(caught.value)) < 400  # the absurd value is not pasted into the message


def test_records_longer_than_any_game_are_refused_unreplayed():
    most = max_actions(SMALL)
    # Random play uses well under the bound (it is a proof, not a guess: see max_actions).
    longest = max(len(random_game(SMALL, seed).history) for seed in range(20))
    assert longest < most
    with pytest.raises(
        RecordError, match=f"{most + 1} actions; a game of this config holds at most {most}"
    ):
        replay_engine(_record(actions=[0] * (most + 1)))
    scores = [[10**30] * 3] * 3
    with pytest.raises(RecordError, match="final scores must list 3 seats"):
        replay_engine(_record(final={"scores": scores, "winners": [0]}))
    with pytest.raises(RecordError, match=r"seed must be .* got <an int of 33220 bits>"):
        make_record(SMALL, 10**10000, [])


def test_make_record_refuses_floats_instead_of_truncating():
    engine = random_game(SMALL, seed=9)
    actions, final = engine_actions(engine), final_of(engine)
    with pytest.raises(RecordError, match=r"action #1 is 1\.5"):
        make_record(SMALL, 9, [actions[0], 1.5])  # (int() would have made it 1)
    with pytest.raises(RecordError, match="action #0 is nan"):
        make_record(SMALL, 9, [float("nan")])
    bad = {"scores": [[float(x) for x in row] for row in final["scores"]], "winners": [0]}
    with pytest.raises(RecordError, match="final scores must list 3 seats"):
        make_record(SMALL, 9, actions, bad)
    # numpy ints, as engines and arrays hand them out, are fine.
    record = make_record(SMALL, 9, np.array(actions), final)
    assert record["actions"] == actions and all(type(a) is int for a in record["actions"])


# (Without the check, --scale 1000 asks Pillow for tens of GB: not a case to run for real.)
@pytest.mark.parametrize("scale", ["0.1", "0", "-1", "2.5", "inf", "nan"])
def test_replay_scale_is_range_checked(tmp_path, capsys, scale):
    path = tmp_path / "game.json"
    path.write_text(_record_text())
    with pytest.raises(SystemExit) as stop:
        replay_main([str(path), "--out", str(tmp_path / "t.png"), "--scale", scale])
    assert stop.value.code == 2
    assert "--scale must be 0.25..2.0" in capsys.readouterr().err
    assert not (tmp_path / "t.png").exists()


def test_replay_out_with_an_unknown_suffix_is_an_error(tmp_path, capsys):
    path = tmp_path / "game.json"
    path.write_text(_record_text())
    for out in ("x.jpg", "table.PNG.bak"):
        with pytest.raises(SystemExit) as stop:
            replay_main([str(path), "--out", str(tmp_path / out)])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert f"cannot write {Path(out).suffix} files" in err and "a folder" in err
        assert not (tmp_path / out).exists()  # no folder named x.jpg
    # A name without a suffix, or with a trailing slash, is a folder of PNGs.
    assert (
        replay_main(
            [str(path), "--out", f"{tmp_path / 'frames.v2'}/", "--rounds", "1", "--scale", "0.25"]
        )
        == 0
    )
    assert sorted((tmp_path / "frames.v2").glob("turn_*.png"))


@pytest.mark.slow
def test_replay_frames_name_players_and_reveal_hands(tmp_path):
    engine = random_game(SMALL.replace(num_rounds=2), seed=6)
    names = ["alice", "ppo:runs/long/checkpoints/step_1000", "bob"]
    record = record_from_engine(engine, players=names)
    labels = seat_names(record, most=20)
    assert labels == ["player_0 (alice)", "player_1 (ppo:step_1000)", "player_2 (bob)"]
    unnamed = dict(record)
    del unnamed["players"]
    table = canvas_size(engine.config, 0.25)[1]
    count = ends = 0
    for (picture, step), (plain, _) in zip(
        frames(record, scale=0.25), frames(unnamed, scale=0.25), strict=True
    ):
        named, plain = np.asarray(picture), np.asarray(plain)
        # The record's names are in every frame's panel, and only there.
        assert np.array_equal(named[:, :table], plain[:, :table])
        assert not np.array_equal(named[:, table:], plain[:, table:])
        # Every hand is drawn (R12 scores them) at the end of each round and of the game only.
        caption = frame_caption(step, labels)
        hidden = render_image(step.engine, scale=0.25, caption=caption, names=labels)
        assert np.array_equal(named, np.asarray(hidden)) == (not step.round_over)
        count += 1
        ends += step.round_over
    assert ends == 2 and count == 1 + len(engine.history) + 1
    last = [step for step in iter_replay(record) if step.round_over][-1]
    text = frame_caption(last, labels)
    winners = ", ".join(labels[s] for s in engine.winners)
    assert text == f"Round 2 of 2 over. GAME OVER, won by {winners}."
    assert frame_caption(next(iter_replay(record)), labels) is None  # mid-round: whose turn
    # The end-of-game picture is that frame.
    path = tmp_path / "game.json"
    path.write_text(json.dumps(record))
    png = tmp_path / "end.png"
    assert replay_main([str(path), "--out", str(png), "--scale", "0.5"]) == 0
    expected = render_image(last.engine, scale=0.5, caption=text, names=labels, reveal=True)
    with Image.open(png) as image:
        assert np.array_equal(np.asarray(image.convert("RGB")), np.asarray(expected))


def test_replay_counts_rounds_in_target_games(tmp_path, capsys):
    config = ChickenFootConfig(max_pips=6, num_players=2, target_score=200, double_blank_value=0)
    engine = Engine(config, seed=0)
    rng = np.random.default_rng(0)
    # Stop in round 9: the countdown of start doubles restarted after round 7 (double-blank).
    while len(engine.scores[0]) < config.num_rounds + 1 or engine.hand_counts[0] > 5:
        engine.step(int(rng.choice(engine.legal_actions())))
    assert not engine.game_over and engine.round == 1 and len(engine.scores[0]) == 8
    record = record_from_engine(engine, seed=0)
    path = tmp_path / "target.json"
    path.write_text(json.dumps(record))
    assert replay_main([str(path), "--moves"]) == 0
    out = capsys.readouterr().out
    assert "round 8: " in out and "unfinished: stopped in round 9\n" in out
    assert out.splitlines()[-1].split()[1:3] == ["round", "9"]  # the last move's round
    # --rounds picks rounds by their count: round 2 is not round 9 (both start with 5|5).
    played = [len(step.engine.scores[0]) for _image, step in frames(record, rounds={2})]
    assert played and set(played) <= {1, 2}  # round 2 live, or its finished table
    played = [len(step.engine.scores[0]) for _image, step in frames(record, rounds={9})]
    assert played and set(played) == {8}
    # Played out, the end frames' captions count the rounds too (seed 0 plays 10).
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    record = record_from_engine(engine, seed=0)
    names = seat_names(record)
    captions = [frame_caption(step, names) for step in iter_replay(record) if step.round_over]
    winners = ", ".join(names[s] for s in engine.winners)
    assert captions == [f"Round {k} (game to 200) over." for k in range(1, 10)] + [
        f"Round 10 (game to 200) over. GAME OVER, won by {winners}."
    ]


def test_json_lines_files_of_records_replay_by_game(tmp_path, capsys):
    games = [random_game(SMALL, seed=seed) for seed in (1, 2, 3)]
    records = [record_from_engine(g, seed=s) for g, s in zip(games, (1, 2, 3))]
    path = tmp_path / "games.jsonl"
    # One make_record dict per line, as training.evaluation.evaluate --record writes them; blank lines skip.
    path.write_text(
        json.dumps(records[0]) + "\n\n" + "\n".join(map(json.dumps, records[1:])) + "\n"
    )
    assert read_records(path) == records
    assert read_record(path, game=2) == records[1]
    with pytest.raises(
        RecordError, match=r"holds 3 games \(one per line\); choose one with game=1..3"
    ):
        read_record(path)
    with pytest.raises(RecordError, match="holds 3 games"):
        read_record(path, game=4)
    assert replay_main([str(path), "--game", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{len(records[2]['actions'])} actions, seed 3, 3 players")
    assert replay_main([str(path)]) == 1
    assert "--game K" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        replay_main([str(path), "--game", "0"])
    # One bad line spoils only its own game, and the error names the line.
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([json.dumps(records[0]), '{"format": 1}', json.dumps(records[2])]))
    assert read_record(broken, game=3) == records[2]
    with pytest.raises(RecordError, match=r"game 2 of .* \(line 2\): not a game record"):
        read_record(broken, game=2)
    # A one-record file is game 1 and nothing else.
    single = tmp_path / "one.json"
    single.write_text(json.dumps(records[0], indent=2))
    assert read_record(single, game=1) == read_records(single)[0] == records[0]
    with pytest.raises(RecordError, match="holds one game"):
        read_record(single, game=2)


# ------------------------------------------------------------------ labels and text size
def test_a_replayed_play_game_names_the_viewer_you_once():
    # cf_env.tools.play records the human as "you"; the panel adds "(you)" for the viewer's seat.
    from cf_env.viz.image_panel import Seats

    engine = random_game(SMALL, seed=4)
    record = record_from_engine(engine, seed=4, players=["you", "greedy", "greedy"])
    names = seat_names(record, most=20)
    assert names == ["player_0 (you)", "player_1 (greedy)", "player_2 (greedy)"]
    seats = Seats(names, viewer=0)
    assert [seats(s) for s in range(3)] == names  # not "player_0 (you) (you)"
    assert Seats(["player_0 (me)", "b", "c"], viewer=0)(0) == "player_0 (me) (you)"


def test_gif_frames_have_readable_panel_text(monkeypatch):
    # The GIF's default scale (0.6) once drew the panel's text at 8-10 px.
    import cf_env.viz.image_panel as panel

    sizes = []
    real = panel.load_font

    def recording(size):
        sizes.append(size)
        return real(size)

    monkeypatch.setattr(panel, "load_font", recording)
    engine = random_game(SMALL, seed=5)
    render_image(engine, 0, scale=0.6)
    assert min(sizes) >= 10  # the smallest text (legend, last move): 14 px at scale 1
    width, height = canvas_size(engine.config, 0.6)
    assert render_image(engine, 0, scale=0.6).size == (width, height)
