"""Batched evaluation (`training.evaluation.batched`, `evaluate(batch=...)`): the same deals as
the per-game path, the same games where the policies are deterministic, the same distribution
where they draw; per-game results; what cannot be batched is refused with a reason; the
ratings' fast update equals OpenSkill's.

What "the same" means here. Both paths deal deal d from engine seed `deal_seed(seed, d)` and
replay it once per rotation with the lineup rotated; the compiled rules core plays exactly the
engine's game for the same actions, and forced decisions are never asked on either path. So:

* a network played greedily (`ppo:`) chooses the same action from the same position on both
  paths (the argmax of its masked logits; a batch's matrix product may round differently from a
  matrix-vector one, so only a near-tie could break otherwise: none occurs in these games);
* a compiled bot chooses among the same best actions as its Python twin, but breaks ties (and
  `random` draws) from a splitmix64 stream per game instead of the Python bot's numpy Generator
  seeded per block of deals. A game in which no bot broke a tie is therefore the same game on
  both paths, and the set of such games is the same on both (a tie is a property of the
  position); the other games are other draws of the same distribution, compared with a paired
  test over the deals (each deal played on both paths).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_errors import user_error

from cf_env import ChickenFootConfig, Engine
from cf_env.agents.bots import GreedyPolicy, HeuristicPolicy, RandomPolicy
from cf_env.agents.checkpoint import NumpyPolicy, load_ppo_policy
from cf_env.agents.kernel_bots import GREEDY, HEURISTIC, RANDOM
from cf_env.agents.policies import load_policy
from cf_env.core.observation import Encoder
from cf_env.viz.record import read_record, record_config
from training.evaluation import evaluate as evaluate_module
from training.evaluation.batched import NETWORK, batch_kind, play_batched
from training.evaluation.evaluate import deal_seed, evaluate, lineup, main, record_name
from training.evaluation.stats import fractional_ranks, openskill_ratings

SHIPPED = "checkpoints/selfplay-4p-d9"
TABLE = ChickenFootConfig(num_players=4)  # the shipped agents' table (played as single rounds)
SMALL = ChickenFootConfig(num_players=3, max_pips=6, num_rounds=2)


def without_play(result: dict) -> dict:
    """The result less what names the path that played it."""
    rest = {k: v for k, v in result.items() if k != "play"}
    rest["method"] = {k: v for k, v in result["method"].items() if k != "play"}
    return rest


# --------------------------------------------------------------------------- the same games
@pytest.mark.parametrize("specs, config, deals, single_round", [
    ([f"ppo:{SHIPPED}", f"ppo:{SHIPPED}-v2", f"ppo:{SHIPPED}-v3"], TABLE, 6, True),
    # Whole games of 7 rounds: every round's points, in the batch's own round bookkeeping.
    (["ppo:checkpoints/selfplay-2p-d6"] * 2, ChickenFootConfig(num_players=2, max_pips=6), 2,
     False),
])
def test_networks_play_the_same_games_batched_and_one_at_a_time(specs, config, deals,
                                                                 single_round):
    one = evaluate(specs, config, deals, seed=5, single_round=single_round, batch=False)
    many = evaluate(specs, config, deals, seed=5, single_round=single_round, batch=True,
                    batch_size=7)
    assert (one["play"], many["play"]) == ("per-game", "batched")
    assert many["per_game"] == one["per_game"]
    # Every other number of the result follows from the games: identical too.
    assert json.dumps(without_play(many), sort_keys=True) == json.dumps(without_play(one),
                                                                        sort_keys=True)


class TieRecorder:
    """A stand-in for a bot's Generator that records that a tie was broken."""

    def __init__(self):
        self.broken = 0

    def choice(self, options):
        self.broken += 1
        return options[0]


def ties_broken(record: dict, bot: HeuristicPolicy) -> int:
    """How many ties the heuristic seats of a recorded game broke: the game replayed, each of
    their real decisions asked again of a heuristic whose Generator records its use."""
    engine, encoder = Engine(record_config(record), record["seed"]), None
    encoder = Encoder(engine.config)
    bot.rng = recorder = TieRecorder()
    for action in record["actions"]:
        seat = engine.current
        legal = engine.legal_actions()
        if record["players"][seat] == "heuristic" and len(legal) > 1:
            mask = np.zeros(engine.config.num_actions, np.int8)
            mask[legal] = 1
            bot.act({"observation": encoder.observe(engine, seat), "action_mask": mask})
        engine.step(action)
    return recorder.broken


def test_bots_play_the_same_games_wherever_no_tie_is_broken(tmp_path):
    deals, seed = 12, 3
    specs = [f"ppo:{SHIPPED}", "heuristic"]
    folder = tmp_path / "games"
    evaluate(specs, TABLE, deals, seed=seed, single_round=True, record=folder)  # per-game path
    cfg = TABLE.replace(num_rounds=1)
    policies = [load_policy(spec, cfg, 0) for spec in specs]
    batched = play_batched(policies, lineup(2, 4), cfg, {d: deal_seed(seed, d) for d in range(deals)})
    bot, same, total = HeuristicPolicy(cfg), 0, 0
    for deal in batched:
        for rotation, game in enumerate(deal["games"]):
            record = read_record(folder / record_name(deal["deal"], rotation, deals))
            assert record["seed"] == deal["engine_seed"] == deal_seed(seed, deal["deal"])
            tie_free = ties_broken(record, bot) == 0
            assert tie_free == (game["bot_draws"] == 0), (deal["deal"], rotation)
            total += 1
            if tie_free:
                same += 1
                assert game["scores"] == record["final"]["scores"]
                assert game["winners"] == record["final"]["winners"]
    # Both kinds of game occur: here 10 of the 48 games broke no tie.
    assert total == 4 * deals and 5 <= same < total, same


def paired_t(differences: np.ndarray) -> float:
    """The paired t statistic of per-deal differences (mean over its standard error)."""
    return float(differences.mean() / (differences.std(ddof=1) / math.sqrt(differences.size)))


def test_bots_that_draw_play_the_same_distribution_batched():
    """Per deal, the difference between the paths of each policy's mean round score and win
    rate (over the rotation group): a two-sided paired t-test at the 0.1% level, |t| < 3.29,
    must not reject "the same mean". The seeds are fixed, so the test is deterministic; with
    these seeds the six statistics lie between -1.8 and 1.1."""
    deals = 300
    specs = ["random", "greedy", "heuristic"]
    one = evaluate(specs, TABLE, deals, seed=11, single_round=True, batch=False)
    many = evaluate(specs, TABLE, deals, seed=11, single_round=True, batch=True)
    for result in (one, many):
        assert [row[:2] for row in result["per_game"]] == [[d, k] for d in range(deals)
                                                            for k in range(4)]
    per_deal = {}
    for name, result in (("one", one), ("many", many)):
        points = np.zeros((deals, 3))
        wins = np.zeros((deals, 3))
        held = np.zeros((deals, 3))
        for deal, _, seats, scores, winners in result["per_game"]:
            for seat, policy in enumerate(seats):
                held[deal, policy] += 1
                points[deal, policy] += scores[seat]
                wins[deal, policy] += (seat in winners) / len(winners)
        per_deal[name] = (points / held, wins / held)
    for metric in range(2):
        for policy in range(3):
            t = paired_t(per_deal["many"][metric][:, policy] - per_deal["one"][metric][:, policy])
            assert abs(t) < 3.29, (specs[policy], ("round score", "win rate")[metric], t)
    # The strengths the bots are known for hold batched too (random worst by far).
    mean = per_deal["many"][0].mean(axis=0)
    assert mean[0] > mean[1] > mean[2]


@pytest.mark.slow
def test_batched_results_do_not_depend_on_workers_or_batch_size(monkeypatch):
    monkeypatch.setattr(evaluate_module, "CHUNK_DEALS", 3)  # several jobs from a few deals
    specs = [f"ppo:{SHIPPED}", "greedy", "random"]
    one = evaluate(specs, TABLE, 8, seed=2, single_round=True, batch=True, batch_size=5)
    two = evaluate(specs, TABLE, 8, seed=2, single_round=True, batch=True, batch_size=64,
                   workers=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


# --------------------------------------------------------------------------- per-game results
def test_per_game_results_are_the_games_played(tmp_path):
    folder = tmp_path / "games"
    deals = 3
    result = evaluate(["heuristic", "greedy", "random"], SMALL, deals, seed=4, record=folder)
    assert result["play"] == "per-game" and len(result["game_fields"]) == 5
    rows = result["per_game"]
    assert len(rows) == deals * 3
    names = [p["name"] for p in result["policies"]]
    for deal, rotation, seats, points, winners in rows:
        record = read_record(folder / record_name(deal, rotation, deals))
        assert [names[i] for i in seats] == record["players"]
        assert points == [sum(rounds) for rounds in record["final"]["scores"]]
        assert winners == record["final"]["winners"]
    # The result's means are those of the rows.
    won = np.zeros(3)
    for _, _, seats, _, winners in rows:
        for seat in winners:
            won[seats[seat]] += 1 / len(winners)
    seats_held = [p["seats"] for p in result["policies"]]
    for policy in range(3):
        share = won[policy] / (deals * 3 * seats_held[policy])
        assert share == pytest.approx(result["policies"][policy]["win_rate"]["mean"])


def test_multi_round_games_batched_report_every_round():
    result = evaluate(["heuristic", "greedy", "random"], SMALL, 4, seed=1, batch=True)
    assert result["play"] == "batched"
    per_game = evaluate(["heuristic", "greedy", "random"], SMALL, 4, seed=1, batch=False)
    for policy, other in zip(result["policies"], per_game["policies"]):
        assert policy["game_total"]["mean"] == pytest.approx(2 * policy["round_score"]["mean"])
        assert other["name"] == policy["name"]


# --------------------------------------------------------------------------- what is batched
def test_which_policies_are_batched():
    cfg = TABLE
    assert batch_kind(RandomPolicy(cfg)) == RANDOM
    assert batch_kind(GreedyPolicy(cfg)) == GREEDY
    assert batch_kind(HeuristicPolicy(cfg)) == HEURISTIC
    assert batch_kind(load_policy(f"ppo:{SHIPPED}", cfg)) == NETWORK
    assert batch_kind(load_ppo_policy(SHIPPED, cfg, deterministic=False)) is None

    class MyGreedy(GreedyPolicy):  # may choose otherwise: not its compiled twin
        pass

    assert batch_kind(MyGreedy(cfg)) is None
    assert batch_kind(load_policy("ismcts:5", cfg)) is None
    auto = evaluate(["ismcts:3", "random"], SMALL.replace(num_rounds=1), 2, batch="auto")
    assert auto["play"] == "per-game"


@pytest.mark.parametrize("kwargs, message", [
    ({"batch": "yes"}, "batch must be True, False or 'auto'"),
    ({"batch": True, "batch_size": 0}, r"batch_size must be an int in 1\.\.65536"),
    ({"batch": True, "batch_size": 2.5}, r"batch_size must be an int in 1\.\.65536"),
    ({"batch": True, "policies": ["ismcts:5", "random"]}, "policy 'ismcts:5' is played one game"),
    ({"batch": True, "record": "games"}, "game records are written by the per-game path"),
    ({"batch": True, "variance_reduction": SHIPPED}, "variance reduction"),
])
def test_what_cannot_be_batched_is_refused_with_a_reason(kwargs, message, tmp_path):
    kwargs = dict(kwargs)
    policies = kwargs.pop("policies", [f"ppo:{SHIPPED}", "greedy"])
    if "record" in kwargs:
        kwargs["record"] = tmp_path / kwargs["record"]
    with pytest.raises(ValueError, match=message):
        evaluate(policies, TABLE, 2, single_round=True, **kwargs)


@pytest.mark.parametrize("args, message", [
    (["--batch", "maybe"], "--batch must be one of auto, on, off; got 'maybe'"),
    (["--batch-size", "0"], "--batch-size must be an int in 1..65536"),
    (["--batch-size", "many"], "--batch-size must be an int in 1..65536"),
    (["--batch", "on", "--agent", "ismcts:5"], "policy 'ismcts:5' is played one game"),
    (["--batch", "on", "--record", "games"], "--batch on cannot write --record"),
])
def test_cli_batch_options_are_checked_before_any_game(args, message, tmp_path, capsys):
    argv = ["--agent", "greedy", "--opponents", "random", "--deals", "2", "--no-progress",
            "--out", str(tmp_path / "eval.json"), *args]
    if "--record" in args:
        argv[argv.index("games")] = str(tmp_path / "games")
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert message in user_error(capsys, exited)
    assert not (tmp_path / "eval.json").exists() and not (tmp_path / "games").exists()


def test_cli_plays_batched_by_default_and_says_so(tmp_path, capsys):
    out = tmp_path / "eval.json"
    main(["--agent", "heuristic", "--opponents", "greedy", "--deals", "3", "--single-round",
          "--no-progress", "--out", str(out)])
    assert "12 games (batched)" in capsys.readouterr().out
    written = json.loads(out.read_text())
    assert written["play"] == "batched" and len(written["per_game"]) == 12
    main(["--agent", "heuristic", "--opponents", "greedy", "--deals", "3", "--single-round",
          "--no-progress", "--out", str(out), "--force", "--batch", "off"])
    assert "12 games (per-game)" in capsys.readouterr().out


# --------------------------------------------------------------------------- the network
def test_network_logits_of_a_batch_are_its_rows_logits():
    cfg = TABLE.replace(num_rounds=1)  # fewer rounds than trained: the round piece is padded
    policy = load_policy(f"ppo:{SHIPPED}", cfg, 0)
    assert isinstance(policy, NumpyPolicy) and policy.adapt is not None
    engine, encoder = Engine(cfg, 7), Encoder(cfg)
    rows, masks = [], []
    while not engine.game_over and len(rows) < 12:
        legal = engine.legal_actions()
        rows.append(encoder.observe(engine, engine.current))
        mask = np.zeros(cfg.num_actions, bool)
        mask[legal] = True
        masks.append(mask)
        engine.step(legal[len(rows) % len(legal)])
    batch = np.stack(rows)
    logits = policy.logits(batch)
    assert logits.shape == (len(rows), cfg.num_actions)
    for row, line in zip(rows, logits):
        np.testing.assert_allclose(line, policy.logits(row), rtol=1e-5, atol=1e-5)
    assert policy.act_batch(batch, np.stack(masks)).tolist() == [
        policy.act({"observation": row, "action_mask": mask}) for row, mask in zip(rows, masks)]
    with pytest.raises(ValueError, match="one observation"):
        policy.logits(batch[None])
    sampling = load_ppo_policy(SHIPPED, cfg, deterministic=False)
    with pytest.raises(ValueError, match="argmax only"):
        sampling.act_batch(batch, np.stack(masks))


# --------------------------------------------------------------------------- ratings
def openskill_reference(labels, owners, games) -> list[dict]:
    """The ratings as OpenSkill's own `PlackettLuce.rate` gives them, game by game."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating(name=label) for label in labels]
    for _, game in games:
        seats = [owners[slot] for slot in game["slots"]]
        updated = model.rate([[ratings[i]] for i in seats], ranks=list(game["rank"]))
        for i in set(seats):
            mine = [team[0] for team, owner in zip(updated, seats) if owner == i]
            ratings[i] = model.rating(mu=sum(r.mu for r in mine) / len(mine),
                                      sigma=sum(r.sigma for r in mine) / len(mine))
    return [{"name": label, "mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal()}
            for label, r in zip(labels, ratings)]


def test_ratings_are_openskills_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(2, 6))
        owners = lineup(int(rng.integers(2, n + 1)), n)  # policies on several seats included
        labels = [f"p{i}" for i in range(max(owners) + 1)]
        games = []
        for _ in range(int(rng.integers(1, 40))):
            k = int(rng.integers(n))
            keys = rng.integers(0, 3, n).tolist()  # ties of two, three, every seat
            games.append((k, {"slots": [(s - k) % n for s in range(n)],
                              "rank": fractional_ranks(keys)}))
        assert openskill_ratings(labels, owners, games) == openskill_reference(labels, owners, games)


def test_one_round_ranks_are_r13s():
    from cf_env.core.scoring import r13_key
    from training.evaluation.stats import game_values

    rng = np.random.default_rng(1)
    for tie_break in ("r13", "none"):
        cfg = ChickenFootConfig(tie_break=tie_break)
        for _ in range(200):
            points = rng.choice([0, 0, 3, 5, 5, 12], size=4).tolist()
            scores = [[p] for p in points]
            keys = [r13_key(rows, tie_break) for rows in scores]
            ranks = game_values(cfg, {"scores": scores, "winners": [0]})["rank"]
            assert ranks == fractional_ranks(keys)


def test_speed_script_prints_both_paths_and_the_limit(capsys):
    from training.evaluation import speed

    figures = speed.main(["--deals", "2", "--repeats", "1", "--batch-size", "8"])
    out = capsys.readouterr().out
    for line in ("per-game path (--batch off)", "batched path  (--batch on)", "speed-up:",
                 "limit:", "batched path / limit:"):
        assert line in out
    assert figures["decisions"] > 0 and figures["flops"] > 0 and figures["limit"] > 0
    with pytest.raises(SystemExit) as exited:
        speed.main(["--agent", "greedy"])
    assert "--agent must be a ppo: spec" in user_error(capsys, exited)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_batch_logits_of_either_activation_are_the_rows(activation):
    rng = np.random.default_rng(3)
    weights = [(rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal(8).astype(np.float32)),
               (rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal(4).astype(np.float32))]
    policy = NumpyPolicy(weights, activation)
    rows = rng.standard_normal((6, 5)).astype(np.float32)
    batch = policy.logits(rows)
    for row, line in zip(rows, batch):
        np.testing.assert_allclose(line, policy.logits(row), rtol=1e-5, atol=1e-5)
    assert policy.logits(rows[:0]).shape == (0, 4)
