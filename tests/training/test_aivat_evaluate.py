"""`evaluate(variance_reduction="fit")`: the rollout value's draw term has mean exactly zero
over every order the boneyard could hold, a sampling network's known distribution, the
estimate's identity, parity on a bot against three of itself, the option changes nothing but
its own entry, the same result for any number of workers, and every bad option refused with
one clear error (exit 2 in the CLI)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from cli_errors import user_error

from cf_env.agents.bots import HeuristicPolicy
from cf_env.agents.policies import load_policy
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from training.evaluation import aivat
from training.evaluation.evaluate import evaluate, main
from training.evaluation.rollout import RolloutValue, rollout_players

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = str(ROOT / "checkpoints" / "selfplay-4p-d9")
SMALL = ChickenFootConfig(num_players=4, max_pips=6, num_rounds=1)  # hands of 5, 8 to draw


def draw_position(config: ChickenFootConfig, most: int):
    """An engine about to DRAW with 2..`most` tiles in the boneyard (heuristic self-play)."""
    engine, encoder = Engine(config, seed=0), Encoder(config)
    bot = HeuristicPolicy(config, seed=0)
    for seed in range(200):
        engine.reset(seed)
        while not engine.game_over:
            legal = engine.legal_actions()
            if legal == [config.draw_action] and 3 <= len(engine.boneyard) <= most:
                return engine
            engine.step(bot.act({"observation": encoder.observe(engine, engine.current),
                                 "action_mask": engine.legal_action_mask()}))
    raise AssertionError("no such draw")


def test_a_rollout_draw_term_has_mean_zero_over_every_order_of_the_boneyard():
    before = draw_position(SMALL, 5)
    value = RolloutValue(SMALL, reps=2)
    value.seat(rollout_players([HeuristicPolicy(SMALL, seed=s) for s in range(4)]))
    tiles = sorted(before.boneyard)
    terms = []
    for order in itertools.permutations(tiles):  # each order of the boneyard is equally likely
        engine = before.clone()
        engine.set_next_draws(list(order))
        v = value.outcome_values(engine, tiles, True, seed=12345)[:, :, 0]
        assert np.allclose(v.sum(axis=1), 1.0)  # win shares: one win split among the winners
        terms.append(v[tiles.index(order[0])] - v.mean(axis=0))
    terms = np.asarray(terms)
    assert np.abs(terms).max() > 0  # the tile drawn does matter to some seat
    assert np.abs(terms.mean(axis=0)).max() < 1e-12
    # The same position and seed give the same values: V is a fixed function of them.
    again = before.clone()
    again.set_next_draws(list(tiles))
    first = value.outcome_values(again, tiles, True, seed=12345)
    assert np.array_equal(first, value.outcome_values(again, tiles, True, seed=12345))


def test_a_sampling_network_names_its_distribution_and_an_argmax_one_none():
    config = ChickenFootConfig(num_rounds=1)
    network = load_policy(f"ppo:{SHIPPED}", config, 0)
    engine, encoder = Engine(config, seed=3), Encoder(config)
    while int(engine.legal_action_mask().sum()) < 2:
        engine.step(engine.legal_actions()[0])
    assert aivat.action_distribution(network, engine, encoder) is None  # argmax: no chance
    network.deterministic = False
    actions, probs = aivat.action_distribution(network, engine, encoder)
    assert set(actions.tolist()) <= set(engine.legal_actions()) and actions.size >= 2
    assert probs.sum() == pytest.approx(1.0) and (probs > 0).all()
    logits = network.logits(encoder.observe(engine, engine.current))[actions]
    assert np.allclose(np.log(probs) - np.log(probs[0]), logits - logits[0], atol=1e-5)


def test_the_estimate_is_the_plain_mean_less_the_fitted_controls():
    rng = np.random.default_rng(1)
    deals, policies = 60, 2
    controls = rng.normal(size=(deals, policies, 4))
    per_deal = {"win_rate": 0.3 + 0.1 * controls[:, :, 0] + 0.01 * rng.normal(size=(deals, 2)),
                "round_score": 10 + controls[:, :, 2] + rng.normal(size=(deals, 2))}
    out = aivat.aivat_estimates({"model": "rollout"}, ["a", "b"], per_deal, controls, 4)
    fold = np.arange(deals) % 2
    for i, entry in enumerate(out["policies"]):
        for metric, columns in aivat.METRIC_COLUMNS.items():
            got = entry[metric]
            y, c = per_deal[metric][:, i], controls[:, i][:, list(columns)]
            shift = sum(c[fold == f] @ np.asarray(b) for f, b in enumerate(got["coefficients"]))
            assert got["mean"] == pytest.approx(y.mean() - shift.sum() / deals)
            assert got["variance_ratio"] >= got["terms"]["actions"]  # the draws carry it here
            assert got["terms"]["both"] == got["variance_ratio"]


@pytest.fixture(scope="module")
def parity():
    return evaluate(["heuristic", "heuristic"], SMALL, 64, seed=6, single_round=True,
                    variance_reduction="fit", rollouts=1)


def test_a_bot_against_three_of_itself_is_estimated_at_parity(parity):
    entry = parity["variance_reduction"]
    assert entry["calibration"]["model"] == "rollout"
    for policy in entry["policies"]:
        assert policy["win_rate"]["ci_low"] <= 0.25 <= policy["win_rate"]["ci_high"], policy
        for control in ("control", "action_control"):  # each an estimate of zero
            assert policy[control]["ci_low"] <= 0.0 <= policy[control]["ci_high"], policy
        assert policy["win_rate"]["variance_ratio"] > 1.0  # a correction that does something
        assert set(policy["win_rate"]["terms"]) == {"draws", "actions", "both"}


def test_the_markdown_report_shows_the_corrected_estimates_and_their_ratios(parity):
    from training.evaluation.report import format_markdown

    text = format_markdown(parity)
    plain_text = format_markdown({k: v for k, v in parity.items() if k != "variance_reduction"})
    assert text.startswith(plain_text.rstrip("\n")) and "Variance-reduced" not in plain_text
    win = parity["variance_reduction"]["policies"][0]["win_rate"]
    row = next(line for line in text.splitlines()[len(plain_text.splitlines()):]
               if line.startswith("| heuristic |"))
    assert f"{win['mean'] * 100:.1f}%" in row and f"{win['variance_ratio']:.2f} (draws" in row


def test_the_option_changes_nothing_but_its_own_entry(parity):
    plain = evaluate(["heuristic", "heuristic"], SMALL, 64, seed=6, single_round=True)
    reduced = dict(parity)
    reduced.pop("variance_reduction")
    assert reduced == plain


def test_the_result_is_the_same_for_any_number_of_workers():
    one, two = (evaluate(["greedy", "heuristic"], SMALL, 16, seed=1, workers=w,
                         single_round=True, variance_reduction="fit", value_model="ridge",
                         calibration_deals=16) for w in (1, 2))
    for result in (one, two):  # CPU seconds differ from run to run
        for key in ("fit_cpu_s", "calibration_cpu_s", "measured_cpu_s"):
            result["variance_reduction"]["calibration"].pop(key)
    assert one == two
    calibration = one["variance_reduction"]["calibration"]
    assert calibration["fit_deals"] + calibration["held_out_deals"] == 16
    assert "r2_held_out" in calibration and "r2_in_sample" in calibration


@pytest.mark.parametrize("options, message", [
    ({"variance_reduction": "fit", "calibration_deals": 0, "value_model": "ridge"},
     r"calibration_deals .* must be an int in 2\.\.100,000; got 0"),
    ({"variance_reduction": "fit", "calibration_deals": 100_001, "value_model": "mlp"},
     r"in 2\.\.100,000; got 100001"),
    ({"variance_reduction": "fit", "calibration_deals": True, "value_model": "ridge"},
     r"must be an int"),
    ({"variance_reduction": "fit", "value_model": "forest"},
     r"value_model must be one of rollout, ridge, mlp; got 'forest'"),
    ({"variance_reduction": "fit", "calibration_deals": 50},
     r"calibration_deals applies to the fitted value models"),
    ({"variance_reduction": "fit", "value_model": "ridge", "rollouts": 2},
     r"rollouts applies to value_model='rollout' only"),
    ({"variance_reduction": "fit", "rollouts": 0}, r"rollouts .* must be an int in 1\.\.64"),
    ({"calibration_deals": 50}, r"calibration_deals applies to variance_reduction='fit'"),
    ({"variance_reduction": "fit", "batch": True},
     r"batched evaluation is not possible here: variance reduction"),
])
def test_bad_options_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        evaluate(["greedy", "heuristic"], SMALL, 4, single_round=True, **options)


def test_batch_auto_plays_the_per_game_path_and_draw_until_playable_is_refused():
    result = evaluate(["greedy", "heuristic"], SMALL, 2, single_round=True, batch="auto",
                      variance_reduction="fit", rollouts=1)
    assert result["play"] == "per-game" and "variance_reduction" in result
    with pytest.raises(ValueError, match="draw_until_playable"):
        evaluate(["greedy", "heuristic"], SMALL.replace(draw_until_playable=True), 2,
                 variance_reduction="fit")


@pytest.mark.parametrize("extra, message", [
    (["--calibration-deals", "100"], "--calibration-deals applies to --variance-reduction fit"),
    (["--variance-reduction", "fit", "--calibration-deals", "0", "--value-model", "ridge"],
     "must be an int in 2..100,000"),
    (["--variance-reduction", "fit", "--value-model", "tree"], "value_model must be one of"),
    (["--variance-reduction", "fit", "--batch", "on"], "batched evaluation is not possible"),
    (["--variance-reduction", SHIPPED], "max_pips: checkpoint 9 vs env 6"),
])
def test_the_cli_refuses_bad_options_with_one_line(capsys, tmp_path, extra, message):
    with pytest.raises(SystemExit) as exited:
        main(["--agent", "greedy", "--opponents", "heuristic", "--max-pips", "6", "--deals", "4",
              "--single-round", "--out", str(tmp_path / "x.json"), "--no-progress", *extra])
    assert message in user_error(capsys, exited)


def test_the_cli_prints_the_reduced_win_rate_and_the_ratio_per_term(capsys, tmp_path):
    main(["--agent", "greedy", "--opponents", "heuristic", "--max-pips", "6", "--deals", "8",
          "--single-round", "--out", str(tmp_path / "x.json"), "--no-progress",
          "--variance-reduction", "fit", "--rollouts", "1"])
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("variance-reduced")]
    assert len(line) == 1 and "draws alone" in line[0] and "actions alone" in line[0]


def test_a_games_rollout_terms_are_its_events_terms_with_the_draws_weighted_by_order():
    bots = [HeuristicPolicy(SMALL, seed=s) for s in range(4)]
    engine, encoder = Engine(SMALL, seed=0), Encoder(SMALL)
    engine.reset(7)
    while not engine.game_over:
        engine.step(bots[engine.current].act({"observation": encoder.observe(engine, engine.current),
                                              "action_mask": engine.legal_action_mask()}))
    actions = [a for _, _, a in engine.history]
    corrector = aivat.RolloutCorrector(SMALL, reps=1)
    got = corrector.game_terms(7, actions, bots, seed=99, scores=engine.scores)
    value = RolloutValue(SMALL, reps=1)
    value.seat(rollout_players(bots))
    replay, expected, draws = Engine(SMALL, seed=0), np.zeros((4, 4)), 0
    replay.reset(7)
    for index, action in enumerate(actions):  # each event by hand, in the order it came
        known = aivat.action_distribution(bots[replay.current], replay, encoder)
        if known is not None:
            options, probs = known
            v = value.outcome_values(replay, options, False, 2 * aivat.event_seed(99, index)
                                     & (2**64 - 1))
            taken = v[options.tolist().index(action)] - np.tensordot(probs, v, axes=1)
            expected[:, 1] += taken[:, 0]
            expected[:, 3] += taken[:, 1]
        if action == SMALL.draw_action and len(replay.boneyard) >= 2:
            tiles = sorted(replay.boneyard)
            v = value.outcome_values(replay, tiles, True, aivat.event_seed(99, index))
            term = (v[tiles.index(replay.boneyard[-1])] - v.mean(axis=0)) / (draws + 1)
            expected[:, 0] += term[:, 0]
            expected[:, 2] += term[:, 1]
            draws += 1
        replay.step(action)
    assert draws >= 2 and corrector.draws == draws
    assert np.allclose(got, expected)
    with pytest.raises(RuntimeError, match="replayed the game"):  # another game's scores
        corrector.game_terms(7, actions, bots, seed=99, scores=[[0]] * 4)
