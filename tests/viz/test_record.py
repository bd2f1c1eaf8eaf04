"""Game records of games to a target score (`cf_env.viz.record`).

With `target_score` a game is not `num_rounds` rounds: rounds are played, the countdown of start
doubles (R4) restarting after the double-blank, until a total passes the target (R13 variant).
These tests record such games, write and read them back, replay them, and check the finished
table of every round, the reader's bound on a game's length, and the round labels.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cf_env import ChickenFootConfig, Engine
from cf_env.viz.record import (
    ZERO_ROUND_FACTOR,
    RecordError,
    iter_replay,
    least_round_points,
    make_record,
    max_actions,
    max_rounds,
    read_record,
    record_from_engine,
    replay_engine,
    round_end_view,
    save_record,
)
from cf_env.viz.render import render_text, round_label, round_number

# (config fields, engine seed): games to a target, each a different way through the countdown.
TARGET_GAMES = [
    # The brief's small game: two rounds, over before the countdown ends.
    ({"max_pips": 6, "num_players": 2, "target_score": 30}, 1),
    # 14 rounds: the 7-double countdown is played twice; the game ends in a double-blank round.
    ({"max_pips": 6, "num_players": 2, "target_score": 300}, 3),
    # 9 rounds with the lower_double start (R5 variant): ends in round 2 of the second countdown.
    ({"max_pips": 6, "num_players": 3, "target_score": 250, "start_search": "lower_double"}, 0),
    # 10 rounds, all_draw start, a double-blank worth 0 (rounds can score 0: `max_rounds`).
    (
        {
            "max_pips": 6,
            "num_players": 2,
            "target_score": 200,
            "double_blank_value": 0,
            "start_search": "all_draw",
        },
        4,
    ),
]
GAME_IDS = ["target30", "two-countdowns", "lower_double", "all_draw-blank0"]


def random_game(config: ChickenFootConfig, seed: int) -> Engine:
    engine = Engine(config, seed=seed)
    rng = np.random.default_rng(seed + 1)  # the players' choices: their own RNG, not the engine's
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    return engine


@pytest.mark.parametrize("fields, seed", TARGET_GAMES, ids=GAME_IDS)
def test_target_game_records_write_read_and_replay_to_the_same_end(fields, seed, tmp_path):
    config = ChickenFootConfig(**fields)
    engine = random_game(config, seed)
    played = len(engine.scores[0])
    if fields["target_score"] > 30:
        # The countdown restarted: more rounds than num_rounds, which the reader used to refuse
        # (final.scores rows were capped at num_rounds, actions at num_rounds rounds' worth).
        assert played > config.num_rounds
    assert max(engine.totals()) > config.target_score  # R13 variant: a total passed the target
    record = record_from_engine(engine, players=[f"p{s}" for s in range(config.num_players)])
    path = tmp_path / "game.json"
    save_record(path, record)
    assert json.loads(path.read_text())["config"]["target_score"] == config.target_score
    back = read_record(path)
    assert back == record
    replayed = replay_engine(back)
    assert replayed.game_over
    assert replayed.scores == engine.scores == back["final"]["scores"]
    assert replayed.winners == engine.winners == back["final"]["winners"]
    assert replayed.snapshot() == engine.snapshot()  # the whole end state, RNG included


@pytest.mark.parametrize("fields, seed", TARGET_GAMES, ids=GAME_IDS)
def test_iter_replay_shows_each_rounds_finished_table_including_the_last(fields, seed):
    """`iter_replay` shows every round's finished table once: a `round_end_view` for each round
    after which another is dealt — the double-blank round of a target game included, whose next
    round restarts the countdown — and the live engine for the last, wherever in the countdown
    the target is passed. Each view is its own round (`round` and the count from 1), not the
    next one's or the one before."""
    config = ChickenFootConfig(**fields)
    engine = random_game(config, seed)
    played = len(engine.scores[0])
    record = record_from_engine(engine)
    steps = list(iter_replay(record))
    ends = [step for step in steps if step.round_over]
    assert len(ends) == played
    # One state per action and the opening deal, plus a finished-table state per round but the
    # last (the engine keeps the last table at the end of the game).
    assert len(steps) == 1 + len(record["actions"]) + played - 1
    doubles_seen = set()
    for number, step in enumerate(ends, start=1):
        view = step.engine
        assert view.round == (number - 1) % config.num_rounds  # R4: the countdown restarts
        assert round_number(view) == number
        assert round_label(view) == f"{number} (game to {config.target_score})"
        assert step.points == [engine.scores[s][number - 1] for s in range(config.num_players)]
        assert [len(row) for row in view.scores] == [number] * config.num_players
        assert view.totals() == [sum(engine.scores[s][:number]) for s in range(config.num_players)]
        # R11: the round is finished on this table — somebody went out, or nobody can play.
        assert min(view.hand_counts) == 0 or not view.boneyard
        # The view's hands are what R12 scored.
        points = view.tables.points(config.double_blank_value)
        assert [int(points[view.hand(s)].sum()) for s in range(config.num_players)] == step.points
        assert view.game_over == (number == played)
        doubles_seen.add(view.round)
    assert ends[-1].engine is steps[-1].engine and steps[-1].engine.game_over
    if played > config.num_rounds:
        assert config.num_rounds - 1 in doubles_seen  # the double-blank round's view is there


def test_no_round_end_view_when_the_target_is_passed_mid_countdown():
    """The round that ends a target game gets no view (the engine keeps its table): the old view
    came back with `round - 1`, a round that never ended there."""
    config = ChickenFootConfig(max_pips=6, num_players=3, target_score=250, start_search="lower_double")
    replay = Engine(config, seed=0)
    actions = record_from_engine(random_game(config, 0))["actions"]
    for action in actions[:-1]:
        replay.step(action)
    assert replay.round not in (0, config.num_rounds - 1)  # the last round is mid-countdown
    before = replay.snapshot()
    assert round_end_view(replay, actions[-1]) is None
    assert replay.snapshot() == before  # the engine itself is left alone
    replay.step(actions[-1])
    assert replay.game_over


def test_max_rounds_bounds_every_target_game():
    """`max_rounds` (and so `max_actions`) is a proof, not a guess: every round adds at least
    `least_round_points` to the sum of the totals, and all totals are at most the target before
    the last round. Checked against random games of several sizes."""
    for fields in (
        {"max_pips": 6, "num_players": 2, "target_score": 40},
        {"max_pips": 6, "num_players": 4, "target_score": 60, "double_blank_value": 0},
        {"max_pips": 9, "num_players": 3, "target_score": 100, "start_search": "all_draw"},
    ):
        config = ChickenFootConfig(**fields)
        least = least_round_points(config)
        assert least > 0
        for seed in range(6):
            engine = random_game(config, seed)
            rounds = list(zip(*engine.scores))
            assert all(sum(points) >= least for points in rounds), (fields, seed)
            assert len(rounds) <= max_rounds(config)
            assert len(engine.history) <= max_actions(config)
    # The least a round can add: the n-1 lowest-scoring tiles (0|1, then 0|2 and 1|1 = 2 each,
    # the 0|0 counting double_blank_value).
    assert least_round_points(ChickenFootConfig(num_players=4, target_score=100)) == 1 + 2 + 2
    assert (
        least_round_points(ChickenFootConfig(num_players=4, double_blank_value=0, target_score=9))
        == 0 + 1 + 2
    )
    config = ChickenFootConfig(num_players=4, target_score=100)
    assert max_rounds(config) == 4 * 100 // 5 + 1
    assert max_actions(config) == max_rounds(config) * (4 + 2) * (55 + 1)
    # Fixed rounds are unchanged: num_rounds.
    assert max_rounds(ChickenFootConfig(num_rounds=3)) == 3


def test_rounds_that_score_nothing_get_a_documented_cap():
    """Two players and a double-blank worth 0: the loser left with only the 0|0 scores nothing,
    so no number of rounds is certain. Such rounds really happen; the reader caps records at
    ZERO_ROUND_FACTOR × (n·target + 1) rounds and says why when it refuses one."""
    config = ChickenFootConfig(max_pips=6, num_players=2, double_blank_value=0, target_score=600)
    assert least_round_points(config) == 0
    # Seed 24 (27 random rounds) holds such a round: one seat went out, the other kept the 0|0.
    record = record_from_engine(random_game(config, 24))
    zero = [step for step in iter_replay(record) if step.round_over and step.points == [0, 0]]
    assert zero
    view = zero[0].engine
    blank = int(view.tables.double_id[0])
    assert sorted(view.hand(s) for s in range(2)) == [[], [blank]]
    config = config.replace(target_score=50)
    assert max_rounds(config) == ZERO_ROUND_FACTOR * (2 * 50 + 1)
    most = max_actions(config)
    with pytest.raises(RecordError, match=f"holds at most {most} .*a round can score 0 here"):
        make_record(config, 0, [0] * (most + 1))
    rows = [[0] * (max_rounds(config) + 1)] * 2
    with pytest.raises(RecordError, match="final scores must list 2 seats.*can score 0 here"):
        make_record(config, 0, [], {"scores": rows, "winners": [0]})


def test_a_cut_short_target_game_names_its_round_and_totals():
    config = ChickenFootConfig(max_pips=6, num_players=2, target_score=300)
    engine = random_game(config, 3)
    record = record_from_engine(engine)
    record["actions"] = record["actions"][:-1]  # still claims the finished result
    totals = [sum(row) for row in engine.scores]  # (not yet what the replay reaches)
    assert max(totals) > 300
    with pytest.raises(RecordError) as caught:
        replay_engine(record)
    message = str(caught.value)
    assert f"end in round {len(engine.scores[0])}, totals " in message
    assert "none past 300" in message and " of 7" not in message


def test_text_view_counts_rounds_without_a_total_in_target_games():
    config = ChickenFootConfig(max_pips=6, num_players=2, target_score=300)
    engine = random_game(config, 3)
    record = record_from_engine(engine)
    labels = []
    for step in iter_replay(record):
        header = render_text(step.engine).split("\n")[0]
        labels.append(header.split("  ")[0])
    assert labels[0] == "round 1 (game to 300)"
    assert labels[-1] == f"round {len(engine.scores[0])} (game to 300)"
    assert not any("/" in label for label in labels)
    numbers = [int(label.split()[1]) for label in labels]
    assert numbers == sorted(numbers) and set(numbers) == set(range(1, 15))
    fixed = Engine(ChickenFootConfig(max_pips=6, num_players=2), seed=0)
    assert render_text(fixed).startswith("round 1/7  centre 6|6")
