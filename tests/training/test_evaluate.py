"""`training.evaluation.evaluate`: duplicate deals with seat rotation, worker-independent results, intervals,
bot strength ordering, user-policy errors, and the CLI outputs."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from cli_errors import user_error

from cf_env import ChickenFootConfig, Engine
from cf_env.viz.record import read_record, record_config, replay_engine
from training.evaluation.evaluate import (
    IllegalPolicyActionError,
    evaluate,
    lineup,
    main,
    output_paths,
    rotation_seats,
)
from training.evaluation.stats import fractional_ranks, mean_ci, proportion_ci, t_quantile

SMALL = ChickenFootConfig(num_players=3, max_pips=6, num_rounds=2)


class AlwaysPass:
    """A user policy that ignores the mask: PASS is illegal whenever a tile can be placed."""

    def __init__(self, config, seed=None):
        self.pass_action = config.pass_action

    def act(self, observation):
        return self.pass_action


def always_pass(config, seed=None):
    return AlwaysPass(config, seed)


def returns_a_float(config, seed=None):
    class FloatPolicy:
        def act(self, observation):
            return 1.5

    return FloatPolicy()


def greedy_as_array(config, seed=None):
    """Greedy, returning 0-d integer arrays as SB3's predict() does."""
    from cf_env.agents.bots import GreedyPolicy

    class ArrayGreedy(GreedyPolicy):
        def act(self, observation):
            return np.asarray(super().act(observation), dtype=np.int64)

    return ArrayGreedy(config, seed)


def read_records(folder) -> dict[str, dict]:
    """Every game record in an evaluation's record folder, by file name (cf_env.viz.record)."""
    return {path.name: read_record(path) for path in sorted(folder.iterdir())}


def deals_of(record: dict) -> list[dict]:
    """Each round's deal in a recorded game, found by replaying it: every seat's hand once R5
    placed the start double, and the boneyard in draw order."""
    engine = Engine(record_config(record), record["seed"])

    def deal() -> dict:
        hands = [engine.hand(seat) for seat in range(engine.num_players)]
        return {"round": engine.round, "hands": hands, "boneyard": list(engine.boneyard)}

    seen = [deal()]
    for action in record["actions"]:
        if engine.step(action) and not engine.game_over:
            seen.append(deal())
    return seen


# --------------------------------------------------------------------------- duplicate deals
def test_rotation_replays_identical_deals(tmp_path):
    folder = tmp_path / "games"
    cfg = ChickenFootConfig(num_players=4, num_rounds=2)
    evaluate(["heuristic", "greedy", "random"], cfg, deals=3, seed=9, record=folder)
    games = read_records(folder)
    assert sorted(games) == [f"deal{d:04d}-rot{k}.json" for d in range(3) for k in range(4)]
    for deal in range(3):
        group = [games[f"deal{deal:04d}-rot{k}.json"] for k in range(4)]
        # Every round of every rotation deals the same hands to each seat position and the same
        # boneyard order (R3-R5), while the policies move one seat on each time.
        dealt = deals_of(group[0])
        assert len(dealt) == 2
        for game in group[1:]:
            assert game["seed"] == group[0]["seed"]
            assert deals_of(game) == dealt
        lineups = [g["players"] for g in group]
        for k, seats in enumerate(lineups):
            assert seats == [lineups[0][(s - k) % 4] for s in range(4)]
        # Each policy slot sat at every seat once.
        assert sorted(tuple(sorted(col)) for col in zip(*lineups)) == [tuple(sorted(lineups[0]))] * 4
        # The recorded play is a legal game of exactly that deal reaching the recorded result.
        for game in group:
            assert replay_engine(game).game_over
    # Different deals really are different.
    firsts = [deals_of(games[f"deal{d:04d}-rot0.json"])[0]["hands"] for d in range(3)]
    assert firsts[0] != firsts[1] != firsts[2]


def test_lineup_and_rotation_helpers():
    assert lineup(4, 4) == [0, 1, 2, 3]
    assert lineup(3, 4) == [0, 1, 2, 1]
    assert lineup(2, 5) == [0, 1, 1, 1, 1]
    assert rotation_seats(4, 1) == [3, 0, 1, 2]  # slot 0 sits at seat 1 in rotation 1
    with pytest.raises(ValueError, match="at most num_players"):
        lineup(5, 4)
    with pytest.raises(ValueError, match="at least one opponent"):
        lineup(1, 4)


@pytest.mark.slow
def test_same_seed_gives_identical_json_whatever_the_workers():
    one = evaluate(["greedy", "random"], SMALL, deals=20, seed=3, workers=1)
    two = evaluate(["greedy", "random"], SMALL, deals=20, seed=3, workers=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    other = evaluate(["greedy", "random"], SMALL, deals=20, seed=4, workers=1)
    assert json.dumps(other) != json.dumps(one)


def test_result_shape_and_invariants():
    result = evaluate(["greedy", "random", "random"], SMALL, deals=12, seed=1)
    json.dumps(result)  # JSON-serialisable
    assert result["lineup"] == ["greedy", "random", "random#2"]
    assert result["config"]["num_rounds"] == 2 and result["deals"] == 12 and result["seed"] == 1
    assert result["games"] == 12 * 3
    names = [p["name"] for p in result["policies"]]
    n = SMALL.num_players
    for policy in result["policies"]:
        for metric in ("win_rate", "round_score", "game_total", "rank"):
            ci = policy[metric]
            assert set(ci) == {"mean", "ci_low", "ci_high"}
            assert ci["ci_low"] <= ci["mean"] <= ci["ci_high"]
        assert policy["game_total"]["mean"] == pytest.approx(2 * policy["round_score"]["mean"])
    seats = [p["seats"] for p in result["policies"]]
    # One unit of win per game, shared between seats (R13); ranks 1..n per game.
    assert sum(s * p["win_rate"]["mean"] for s, p in zip(seats, result["policies"])) == (
        pytest.approx(1.0)
    )
    assert sum(s * p["rank"]["mean"] for s, p in zip(seats, result["policies"])) == (
        pytest.approx(n * (n + 1) / 2)
    )
    for diff, opponent in zip(result["differences"], result["policies"][1:]):
        assert diff["opponent"] == opponent["name"]
        agent = result["policies"][0]
        assert diff["win_rate"]["mean"] == pytest.approx(
            agent["win_rate"]["mean"] - opponent["win_rate"]["mean"]
        )
    assert sorted(r["name"] for r in result["ratings"]) == sorted(names)
    assert [p["rating"]["mu"] for p in result["policies"]] != [25.0] * 3


def test_single_round_mode_plays_one_round_per_game(tmp_path):
    folder = tmp_path / "games"
    result = evaluate(["greedy", "random"], SMALL, deals=4, single_round=True, record=folder)
    assert result["config"]["num_rounds"] == 1 and result["single_round"] is True
    games = read_records(folder).values()
    assert len(games) == 4 * 3
    assert all(len(rows) == 1 for g in games for rows in g["final"]["scores"])


# --------------------------------------------------------------------------- strength
@pytest.mark.slow
def test_bots_are_ordered_random_greedy_heuristic():
    cfg = ChickenFootConfig(num_players=4)
    mixed = evaluate(["heuristic", "greedy", "random"], cfg, deals=300, seed=0, single_round=True)
    plain = evaluate(["greedy", "random"], cfg, deals=60, seed=0, single_round=True)
    beats = {(d["agent"], d["opponent"]): d for d in mixed["differences"] + plain["differences"]}
    for pair in [("heuristic", "greedy"), ("heuristic", "random"), ("greedy", "random")]:
        diff = beats[pair]
        assert diff["round_score"]["ci_high"] < 0, (pair, diff)  # fewer points left in hand
        assert diff["win_rate"]["ci_low"] > 0, (pair, diff)
        assert diff["rank"]["ci_high"] < 0, (pair, diff)


@pytest.mark.slow
def test_ismcts_with_a_small_budget_beats_random():
    cfg = ChickenFootConfig(num_players=4)
    result = evaluate(["ismcts:10", "random"], cfg, deals=16, seed=0, single_round=True)
    diff = result["differences"][0]
    assert diff["round_score"]["ci_high"] < 0, diff
    assert diff["rank"]["ci_high"] < 0, diff


# --------------------------------------------------------------------------- errors
def test_illegal_action_from_a_user_policy_names_the_policy():
    with pytest.raises(IllegalPolicyActionError, match=r"policy 'always_pass' at seat \d") as err:
        evaluate([always_pass, "random"], SMALL, deals=2)
    assert "returned illegal action" in str(err.value) and "legal actions:" in str(err.value)
    with pytest.raises(IllegalPolicyActionError, match="returned_a_float|returns_a_float"):
        evaluate(["greedy", returns_a_float], SMALL, deals=2)


def test_zero_d_integer_arrays_are_accepted_as_actions():
    as_array = evaluate([greedy_as_array, "random"], SMALL, deals=4, seed=5)
    as_int = evaluate(["greedy", "random"], SMALL, deals=4, seed=5)
    assert as_array["policies"][0]["round_score"] == as_int["policies"][0]["round_score"]


@pytest.mark.slow
def test_illegal_action_in_a_worker_process_names_the_spec():
    # The spec form `module:factory`; the error crosses the process boundary intact.
    with pytest.raises(IllegalPolicyActionError, match="policy 'test_evaluate:always_pass'"):
        evaluate(["random", "test_evaluate:always_pass"], SMALL, deals=16, workers=2)


def test_bad_arguments_are_rejected_with_a_reason():
    with pytest.raises(ValueError, match="deals must be an int >= 2"):
        evaluate(["greedy", "random"], SMALL, deals=1)
    with pytest.raises(ValueError, match="unknown policy spec 'nope'"):
        evaluate(["greedy", "nope"], SMALL, deals=2)
    with pytest.raises(ValueError, match="cannot be sent to worker processes"):
        evaluate([lambda config, seed: AlwaysPass(config), "random"], SMALL, deals=2, workers=2)


# --------------------------------------------------------------------------- stats and CLI
def test_t_intervals():
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile(0.975, 10) == pytest.approx(2.2281, abs=1e-4)
    assert t_quantile(0.975, 10_000) == pytest.approx(1.9602, abs=1e-4)
    values = np.array([1.0, 2.0, 4.0, 7.0])
    ci = mean_ci(values)
    half = 3.1824 * values.std(ddof=1) / math.sqrt(4)
    assert ci["mean"] == 3.5
    assert ci["ci_high"] - 3.5 == pytest.approx(half, rel=1e-4)
    assert fractional_ranks([(10,), (3,), (10,), (0,)]) == [3.5, 2.0, 3.5, 1.0]


@pytest.mark.slow
def test_cli_writes_json_markdown_and_png(tmp_path, capsys):
    out = tmp_path / "res" / "eval.json"
    main(["--agent", "greedy", "--opponents", "random", "--players", "3", "--max-pips", "6",
          "--rounds", "2", "--deals", "6", "--seed", "2", "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert "| greedy | 1 |" in printed and "greedy − random" in printed
    result = json.loads(out.read_text())
    assert result["config"]["max_pips"] == 6 and result["config"]["num_rounds"] == 2
    assert out.with_suffix(".md").read_text() in printed
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        main(["--agent", "greedy", "--opponents", "random", "--players", "99", "--deals", "2",
              "--out", str(out), "--no-progress"])


# --------------------------------------------------------------------------- CLI hardening
SMALL_CLI = ["--players", "3", "--max-pips", "6", "--rounds", "2", "--deals", "2", "--no-progress"]




def refuse_to_play(monkeypatch):
    """Make any game played an error: the checks must come before the long work."""
    import training.evaluation.evaluate as ev

    def no_games(job):
        raise AssertionError("a game was played before the inputs were checked")

    monkeypatch.setattr(ev, "_play_block", no_games)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "greedy", "--opponents", "nope"], "unknown policy spec 'nope'"),
        (["--agent", "ppo:no/such/checkpoint", "--opponents", "random"], "no checkpoint at"),
        (["--agent", "greedy", "--opponents", "random", "--set", "nosuch=1"],
         "unknown config field(s) ['nosuch']"),
        (["--agent", "greedy", "--opponents", "random", "--set", "toes"], "--set takes FIELD=VALUE"),
        (["--agent", "greedy", "--opponents", "random", "--set", "toes=many"], "toes must be"),
        (["--agent", "greedy", "--opponents", "random", "--players", "9", "--max-pips", "6"],
         "num_players must be"),
        (["--agent", "greedy", "--opponents", "random", "--deals", "1"], "deals must be an int >= 2"),
        (["--agent", "greedy", "--opponents", "random", "--workers", "0"], "workers must be"),
        (["--agent", "greedy", "--opponents", ","], "at least one opponent"),
    ],
)
def test_evaluate_user_errors_print_one_error_line_and_exit_2(
    args, message, tmp_path, capsys, monkeypatch
):
    refuse_to_play(monkeypatch)
    out = tmp_path / "res" / "eval.json"
    with pytest.raises(SystemExit) as exited:
        main([*SMALL_CLI, *args, "--out", str(out)])
    assert message in user_error(capsys, exited)
    assert not out.exists()


def test_evaluate_illegal_policy_action_is_one_error_line_exit_1(tmp_path, capsys):
    # Not a bad argument but a policy that fails during play: reported like cf_env.tools.play does.
    with pytest.raises(SystemExit) as exited:
        main([*SMALL_CLI, "--agent", "test_evaluate:always_pass", "--opponents", "random",
              "--out", str(tmp_path / "eval.json")])
    line = user_error(capsys, exited, code=1)
    assert "policy 'test_evaluate:always_pass'" in line and "legal actions:" in line
    assert not (tmp_path / "eval.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("given", ["x.md", "x.png", "x.json", "x", "X.JSON"])
def test_out_names_three_files_and_never_overwrites_the_json(given, tmp_path, capsys):
    main([*SMALL_CLI, "--agent", "greedy", "--opponents", "random", "--seed", "2",
          "--out", str(tmp_path / given)])
    stem = tmp_path / given.split(".")[0]
    printed = capsys.readouterr().out
    result = json.loads(stem.with_name(stem.name + ".json").read_text())
    assert result["config"]["max_pips"] == 6 and result["deals"] == 2
    assert stem.with_name(stem.name + ".md").read_text() in printed
    assert stem.with_name(stem.name + ".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        stem.name + s for s in (".json", ".md", ".png")
    )


def test_output_paths_keep_other_suffixes_in_the_name():
    assert [p.name for p in output_paths("r/eval-v1.2")] == [
        "eval-v1.2.json", "eval-v1.2.md", "eval-v1.2.png"]
    assert [str(p) for p in output_paths("r/a.md")] == ["r/a.json", "r/a.md", "r/a.png"]
    with pytest.raises(ValueError, match="--out needs a file name"):
        output_paths(".")


def test_unwritable_out_fails_before_playing(tmp_path, capsys, monkeypatch):
    refuse_to_play(monkeypatch)
    (tmp_path / "eval.md").mkdir()  # the Markdown output's name is taken by a folder
    with pytest.raises(SystemExit) as exited:
        main([*SMALL_CLI, "--agent", "greedy", "--opponents", "random",
              "--out", str(tmp_path / "eval.json")])
    line = user_error(capsys, exited)
    assert "cannot write" in line and str(tmp_path / "eval.md") in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.md"]  # nothing left behind


def test_record_folder_holds_one_replayable_record_per_game(tmp_path, capsys):
    from cf_env.viz import replay

    folder = tmp_path / "games"
    result = main([*SMALL_CLI, "--agent", "greedy", "--opponents", "random", "--seed", "4",
                   "--out", str(tmp_path / "eval"), "--record", str(folder)])
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f"deal{d:04d}-rot{k}.json" for d in range(2) for k in range(3)]
    assert len(names) == result["games"]
    capsys.readouterr()
    for name in names:
        record = read_record(folder / name)  # format, version, config, seed, actions, final
        assert record["config"] == result["config"]
        assert sorted(record["players"]) == sorted(result["lineup"])
        assert replay.main([str(folder / name)]) == 0
        assert "winners:" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["jsonl", "not_empty"])
def test_record_must_be_a_new_or_empty_folder(kind, tmp_path, capsys, monkeypatch):
    refuse_to_play(monkeypatch)
    if kind == "jsonl":
        record, message = tmp_path / "games.jsonl", "must be a folder"
    else:
        record, message = tmp_path / "games", "is not empty"
        record.mkdir()
        (record / "deal0000-rot0.json").write_text("{}")
    with pytest.raises(SystemExit) as exited:
        main([*SMALL_CLI, "--agent", "greedy", "--opponents", "random",
              "--out", str(tmp_path / "eval.json"), "--record", str(record)])
    assert message in user_error(capsys, exited)
    assert not (tmp_path / "eval.json").exists()


# --------------------------------------------------------------------------- intervals
def test_intervals_stay_inside_what_each_metric_can_take():
    # A t-interval of 2 wins in 3 deals was "66.7% [-76.8, 210.1]"; Wilson's stays in [0, 1].
    win = proportion_ci([1.0, 1.0, 0.0])
    assert 0.0 <= win["ci_low"] < win["mean"] < win["ci_high"] <= 1.0
    assert proportion_ci([0.0, 0.0, 0.0])["ci_low"] == 0.0  # no win: the bound is exact
    assert proportion_ci([1.0, 1.0])["ci_high"] == 1.0
    # Many deals, a share away from 0 and 1: the Student-t interval, as before.
    shares = np.random.default_rng(0).binomial(4, 0.3, 2000) / 4
    wilson, student = proportion_ci(shares), mean_ci(shares)
    assert wilson["ci_low"] == pytest.approx(student["ci_low"], abs=5e-4)
    assert wilson["ci_high"] == pytest.approx(student["ci_high"], abs=5e-4)
    result = evaluate(["heuristic", "random"], SMALL, deals=3, seed=1)
    n = SMALL.num_players
    for entry in result["policies"]:
        assert 0.0 <= entry["win_rate"]["ci_low"] <= entry["win_rate"]["ci_high"] <= 1.0
        assert 1.0 <= entry["rank"]["ci_low"] <= entry["rank"]["ci_high"] <= n
        assert entry["round_score"]["ci_low"] >= 0.0
    for diff in result["differences"]:
        assert -1.0 <= diff["win_rate"]["ci_low"] <= diff["win_rate"]["ci_high"] <= 1.0
        assert -(n - 1) <= diff["rank"]["ci_low"] <= diff["rank"]["ci_high"] <= n - 1


# --------------------------------------------------------------------------- the CLI's lineups
CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"


def test_cli_plays_one_evaluation_per_opponent_as_training_does(tmp_path, capsys):
    results = main([*SMALL_CLI, "--agent", "heuristic", "--opponents", "greedy,random",
                    "--out", str(tmp_path / "res" / "eval"), "--record", str(tmp_path / "games")])
    assert [r["lineup"] for r in results] == [["heuristic", "greedy", "greedy"],
                                             ["heuristic", "random", "random"]]
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == sorted(
        f"eval-vs-{bot}{suffix}" for bot in ("greedy", "random") for suffix in (".json", ".md", ".png"))
    printed = capsys.readouterr().out
    assert "heuristic vs 2× greedy: win rate" in printed and "heuristic vs 2× random" in printed
    assert json.loads((tmp_path / "res" / "eval-vs-random.json").read_text()) == results[1]
    for bot in ("greedy", "random"):  # the records of each lineup in a folder of its own
        records = read_records(tmp_path / "games" / f"vs-{bot}")
        assert len(records) == results[0]["games"]
        assert all(sorted(r["players"]) == sorted(["heuristic", bot, bot]) for r in records.values())


def test_cli_mixed_seats_every_opponent_at_one_table(tmp_path, capsys):
    result = main([*SMALL_CLI, "--agent", "heuristic", "--opponents", "greedy,random", "--mixed",
                   "--out", str(tmp_path / "eval")])
    assert result["lineup"] == ["heuristic", "greedy", "random"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.json", "eval.md", "eval.png"]


def test_cli_takes_the_rules_from_a_checkpoints_card(tmp_path, capsys):
    agent = f"ppo:{CHECKPOINTS / 'selfplay-2p-d6'}"
    result = main(["--agent", agent, "--opponents", "greedy", "--single-round", "--deals", "2",
                   "--no-progress", "--out", str(tmp_path / "eval")])
    assert (result["config"]["num_players"], result["config"]["max_pips"]) == (2, 6)


def test_cli_a_checkpoint_on_another_table_names_its_own_options(tmp_path, capsys, monkeypatch):
    refuse_to_play(monkeypatch)
    agent = f"ppo:{CHECKPOINTS / 'selfplay-2p-d6'}"
    with pytest.raises(SystemExit) as exited:
        main(["--agent", agent, "--opponents", "greedy", "--players", "4", "--deals", "2",
              "--out", str(tmp_path / "eval")])
    line = user_error(capsys, exited)
    assert "--players 4 contradicts" in line and "give --players 2 --max-pips 6" in line


def test_cli_suggests_the_nearest_spec_name(tmp_path, capsys, monkeypatch):
    refuse_to_play(monkeypatch)
    for spec, hint in (("heurstic", "did you mean 'heuristic'?"),
                       (str(CHECKPOINTS / "selfplay-4p-d9"), "did you mean 'ppo:")):
        with pytest.raises(SystemExit) as exited:
            main([*SMALL_CLI, "--agent", "greedy", "--opponents", spec,
                  "--out", str(tmp_path / "eval")])
        assert hint in user_error(capsys, exited)


def test_cli_never_overwrites_results_silently(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [*SMALL_CLI, "--agent", "greedy", "--opponents", "random"]
    main(args)  # no --out: results/eval.*, then the next free name
    main(args)
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [
        "eval-2.json", "eval-2.md", "eval-2.png", "eval.json", "eval.md", "eval.png"]
    assert "wrote results/eval-2.json, results/eval-2.md, results/eval-2.png" in (
        capsys.readouterr().out)
    before = (tmp_path / "results" / "eval.json").read_bytes()
    with pytest.raises(SystemExit) as exited:  # a named output that exists: refused
        main([*args, "--seed", "5", "--out", "results/eval.json"])
    assert "pass --force" in user_error(capsys, exited)
    assert (tmp_path / "results" / "eval.json").read_bytes() == before
    main([*args, "--seed", "5", "--out", "results/eval.json", "--force"])
    assert json.loads((tmp_path / "results" / "eval.json").read_text())["seed"] == 5


def test_plot_keeps_long_names_and_titles_inside_the_picture(tmp_path):
    from PIL import Image

    from training.evaluation.report import plot

    result = evaluate(["greedy", "random"], SMALL, deals=2)
    result["policies"][0]["name"] = "ppo:checkpoints/selfplay-4p-d9-v3-with-a-long-name"
    result["policies"][1]["name"] = "lookahead:checkpoints/selfplay-4p-d9:ms=100"
    plot(result, tmp_path / "p.png")
    pixels = np.asarray(Image.open(tmp_path / "p.png").convert("RGB"))
    edges = np.concatenate([pixels[:2], pixels[-2:], pixels[:, :2].transpose(1, 0, 2),
                            pixels[:, -2:].transpose(1, 0, 2)], axis=1)
    assert (edges >= 250).all(), "something is drawn at the picture's edge: a label is clipped"


def test_cli_runs_torch_with_one_thread(tmp_path, capsys, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("OMP_NUM_THREADS", "")  # (so that the test's end restores it)
    monkeypatch.delenv("OMP_NUM_THREADS")
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    main([*SMALL_CLI, "--agent", "greedy", "--opponents", "random", "--out", str(tmp_path / "e")])
    assert calls == [1]  # torch is imported here: limited now
    assert os.environ["OMP_NUM_THREADS"] == "1"  # and in the processes it starts
