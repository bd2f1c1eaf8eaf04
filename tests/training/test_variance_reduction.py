"""`training.evaluation.variance`: the draw control variates of `evaluate(variance_reduction=...)`:
the positions built per outcome against the engine, the zero mean of a draw's term over its
outcomes, unbiased estimates on matches of known value, worker independence, the default path
unchanged, and the errors for a value head that does not fit."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from cli_errors import user_error

from cf_env.agents.checkpoint import load_value_head, sha256_file
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import OBSERVATION_VERSION, observation_layout, privileged_layout
from training.evaluation.evaluate import evaluate, main
from training.evaluation.variance import DrawCorrector, cross_fitted, variance_ratio

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = str(ROOT / "checkpoints" / "selfplay-4p-d9")  # ships a value head
D9 = ChickenFootConfig(num_rounds=1)
SMALL = ChickenFootConfig(num_players=4, max_pips=6, num_rounds=1)  # hands of 5, 8 to draw


def pip_value_checkpoint(folder: Path, config: ChickenFootConfig) -> str:
    """A checkpoint for `config` whose value head is (nearly) minus the seat's own hand pips:
    card.json and value.npz, enough for `load_value_head` (nothing here plays its actor)."""
    obs, priv = observation_layout(config), privileged_layout(config)
    pips = Engine(config, seed=0).points.astype(np.float32)
    W0 = np.zeros((1, obs.size + priv.size), np.float32)
    W0[0, obs.slices["hand"]] = -pips / 1000.0  # tanh is near linear this small
    arrays = {"W0": W0, "b0": np.zeros(1, np.float32),
              "W1": np.full((1, 1), 1000.0, np.float32), "b1": np.zeros(1, np.float32)}
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "value.npz", **arrays)
    card = {
        "format": 1, "steps": 0, "env_config": config.to_dict(),
        "observation_version": OBSERVATION_VERSION, "observation_size": obs.size,
        "num_actions": config.num_actions, "activation": "tanh", "net_arch": [1],
        "policy_sha256": "0" * 64,
        "value": {"sha256": sha256_file(folder / "value.npz"), "net_arch": [1],
                  "activation": "tanh", "inputs": ["observation", "privileged"],
                  "reward": {"reward_mode": "score", "win_bonus": 0.0, "episode": "round"}},
    }
    (folder / "card.json").write_text(json.dumps(card))
    return str(folder)


@pytest.fixture(scope="module")
def small_value(tmp_path_factory) -> str:
    return pip_value_checkpoint(tmp_path_factory.mktemp("pips") / "ckpt", SMALL)


def draw_positions(config: ChickenFootConfig, seeds: range, least: int = 2):
    """(engine before a DRAW, the same engine after it) for every draw from a boneyard of at
    least `least` tiles in seeded games of random legal moves (the engine after it plays on
    when the next item is asked for)."""
    rng = np.random.default_rng(0)
    for seed in seeds:
        engine = Engine(config, seed=seed)
        while not engine.game_over:
            legal = engine.legal_actions()
            if legal == [config.draw_action] and len(engine.boneyard) >= least:
                before = engine.clone()
                engine.step(config.draw_action)
                yield before, engine
            else:
                engine.step(int(rng.choice(legal)))


@pytest.mark.parametrize("config, value", [(D9, "shipped"), (SMALL, "pips")])
def test_the_rows_built_per_outcome_are_the_engine_stepped_through_each_outcome(
        config, value, small_value):
    corrector = DrawCorrector(config, load_value_head(SHIPPED if value == "shipped" else small_value,
                                                      config))
    checked = 0
    for before, after in draw_positions(config, range(3)):
        rows = corrector.outcome_rows(after)
        outcomes = [after.drawn_tile, *after.boneyard]
        assert sorted(outcomes) == sorted(before.boneyard)  # every tile that could come, once
        for k, tile in enumerate(outcomes):
            other = before.clone()
            other.set_next_draws([tile])
            other.step(config.draw_action)
            for seat in range(config.num_players):
                expected = np.concatenate([corrector.encoder.observe(other, seat),
                                           corrector.encoder.privileged(other, seat)])
                assert np.array_equal(rows[k, seat], expected), (k, seat)
        checked += 1
    assert checked >= 3


def test_the_first_layer_shortcut_gives_the_full_passs_values():
    corrector = DrawCorrector(D9, load_value_head(SHIPPED, D9))
    for _, after in itertools.islice(draw_positions(D9, range(2)), 6):  # each before it moves on
        rows = corrector.outcome_rows(after)
        full = corrector.value.values(rows.reshape(-1, corrector.width)).reshape(rows.shape[:2])
        short = corrector.outcome_values(corrector.first_layer(after))
        assert short.shape == full.shape
        assert np.allclose(short, full, atol=1e-4, rtol=0)


def test_a_draws_term_has_mean_zero_over_the_tiles_that_could_come():
    corrector = DrawCorrector(D9, load_value_head(SHIPPED, D9))
    before, after = next(draw_positions(D9, range(20), least=10))
    tiles = before.boneyard
    values = np.zeros((len(tiles), D9.num_players))
    for k, tile in enumerate(tiles):  # each outcome played out on the engine, then valued
        other = before.clone()
        other.set_next_draws([tile])
        other.step(D9.draw_action)
        rows = np.stack([np.concatenate([corrector.encoder.observe(other, seat),
                                         corrector.encoder.privileged(other, seat)])
                         for seat in range(D9.num_players)])
        values[k] = corrector.value.values(rows)
    assert np.ptp(values, axis=0).min() > 0  # the tile drawn matters to every seat's value
    # The term had tile k come: V(k) - mean over the tiles of V. Each tile comes with
    # probability 1/len(tiles) (uniform over the boneyard), so its expectation is the plain mean.
    terms = values - values.mean(axis=0)
    assert np.abs(terms.mean(axis=0)).max() < 1e-6
    # The corrector's own term for the draw that came is the same number.
    rows = corrector.outcome_rows(after)
    v = corrector.value.values(rows.reshape(-1, corrector.width)).reshape(rows.shape[:2])
    came = tiles.index(after.drawn_tile)
    assert np.allclose(v[0] - v.mean(axis=0), terms[came], atol=1e-5)


@pytest.mark.parametrize("bot", ["heuristic", "greedy"])
def test_a_bot_against_three_of_itself_is_estimated_at_parity(bot, small_value):
    result = evaluate([bot, bot], SMALL, 48, seed=3, single_round=True,
                      variance_reduction=small_value)
    corrected = result["variance_reduction"]["policies"]
    for entry in corrected:
        assert entry["win_rate"]["ci_low"] <= 0.25 <= entry["win_rate"]["ci_high"], entry
        assert entry["win_rate"]["coefficients"] != [0.0, 0.0]  # a correction was applied
    assert result["variance_reduction"]["value_head"] == small_value


def test_the_result_is_the_same_for_any_number_of_workers(small_value):
    one, two = (evaluate(["greedy", "heuristic"], SMALL, 16, seed=1, workers=w,
                         single_round=True, variance_reduction=small_value) for w in (1, 2))
    assert one == two


def test_the_option_changes_nothing_but_its_own_entry(small_value):
    plain = evaluate(["heuristic", "greedy"], SMALL, 16, seed=2, single_round=True)
    reduced = evaluate(["heuristic", "greedy"], SMALL, 16, seed=2, single_round=True,
                       variance_reduction=small_value)
    assert "variance_reduction" not in plain
    entry = reduced.pop("variance_reduction")
    assert reduced == plain
    # The corrected means move off the plain ones only by the controls' share.
    for corrected, policy in zip(entry["policies"], plain["policies"]):
        assert corrected["name"] == policy["name"]
        assert corrected["win_rate"]["mean"] != policy["win_rate"]["mean"]


def test_a_value_head_that_does_not_fit_the_table_is_refused_by_name(small_value):
    with pytest.raises(ValueError, match=r"value head of .*selfplay-4p-d9.*max_pips: checkpoint 9 vs env 6"):
        evaluate(["greedy", "greedy"], SMALL, 4, single_round=True, variance_reduction=SHIPPED)
    with pytest.raises(ValueError, match="must be the path of a checkpoint with a value head"):
        evaluate(["greedy", "greedy"], SMALL, 4, variance_reduction=True)
    with pytest.raises(ValueError, match="no checkpoint at"):
        evaluate(["greedy", "greedy"], SMALL, 4, variance_reduction=str(ROOT / "nowhere"))
    until = SMALL.replace(draw_until_playable=True)
    with pytest.raises(ValueError, match="draw_until_playable"):
        DrawCorrector(until, load_value_head(small_value, SMALL))


def test_the_cli_needs_a_checkpoint_for_a_bare_option(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["--agent", "greedy", "--opponents", "heuristic", "--deals", "4",
              "--variance-reduction", "--out", str(tmp_path / "x.json"), "--no-progress"])
    assert "give --variance-reduction CHECKPOINT" in user_error(capsys, exited)


def test_cross_fitting_fits_each_half_on_the_other():
    rng = np.random.default_rng(0)
    control = rng.normal(size=40)
    y = 0.5 * control + rng.normal(scale=0.1, size=40)
    corrected, (even, odd) = cross_fitted(y, control)
    assert even == pytest.approx(0.5, abs=0.1) and odd == pytest.approx(0.5, abs=0.1)
    assert variance_ratio(y, corrected) > 5
    y2 = y.copy()
    y2[0] += 100.0  # an even deal: only the odd deals' coefficient may move
    _, (even2, odd2) = cross_fitted(y2, control)
    assert even2 == even and odd2 != odd
    assert np.array_equal(cross_fitted(y, np.zeros(40))[0], y)  # no spread: no correction
