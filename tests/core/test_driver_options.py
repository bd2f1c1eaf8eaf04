"""The rules (`ChickenFootConfig`) apart from the driver options
(`DriverOptions`: reward_mode, skip_forced, illegal_action).

The envs, training YAML `env.rules` and the CLIs keep taking one flat set of keywords
(`split_options` separates them); snapshots, records and checkpoint cards hold and compare the
rules only, and the ones written before the split (their config also naming the three options)
still read.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import cf_env
from cf_env import ChickenFootConfig, Engine
from cf_env.agents import checkpoint as ckpt
from cf_env.core.config import OPTION_FIELDS, RULE_FIELDS, DriverOptions, split_options
from cf_env.core.observation import Encoder
from cf_env.viz.record import record_from_engine, replay_engine, validate_record

ROOT = Path(__file__).resolve().parents[2]
OLD_OPTIONS = {"reward_mode": "zero_sum", "skip_forced": False, "illegal_action": "raise"}


# ------------------------------------------------------------------------------ the split
def test_split_options_takes_one_flat_mapping_and_returns_rules_and_options():
    rules, options = split_options(
        {"num_players": 3, "max_pips": 6, "reward_mode": "win", "skip_forced": True,
         "illegal_action": "penalize"}
    )
    assert rules == ChickenFootConfig(num_players=3, max_pips=6)
    assert options == DriverOptions(reward_mode="win", skip_forced=True, illegal_action="penalize")
    assert set(rules.to_dict()) == set(RULE_FIELDS) and not set(rules.to_dict()) & set(OPTION_FIELDS)
    # Over a base config: its rules kept, the mapping's rules changed, the defaults re-derived.
    rules, options = split_options({"num_players": 8, "reward_mode": "score"}, ChickenFootConfig())
    assert (rules.num_players, rules.hand_size, options.reward_mode) == (8, 6, "score")


def test_an_unknown_keyword_lists_rules_and_options_with_a_hint():
    with pytest.raises(ValueError) as err:
        split_options({"reward_mod": "score"})
    message = str(err.value)
    assert "'reward_mod' -> 'reward_mode'" in message
    assert "'max_pips'" in message and "'illegal_action'" in message  # both kinds are valid


def test_the_rules_no_longer_carry_the_options():
    with pytest.raises(TypeError):
        ChickenFootConfig(reward_mode="score")
    with pytest.raises(AttributeError, match="driver option.*options"):
        ChickenFootConfig().skip_forced  # noqa: B018 (the access is the test)
    with pytest.raises(ValueError, match="skip_forced: driver option"):
        ChickenFootConfig().replace(skip_forced=True)
    # A stored config naming them (an old card, snapshot, record) reads as its rules; the values
    # are still checked.
    assert ChickenFootConfig.from_dict({"max_pips": 6, **OLD_OPTIONS}) == ChickenFootConfig(max_pips=6)
    with pytest.raises(ValueError, match="reward_mode must be one of"):
        ChickenFootConfig.from_dict({"reward_mode": "points"})


# ------------------------------------------------------------------------------ envs
def test_env_keywords_still_reach_the_driver():
    env = cf_env.env(num_players=3, reward_mode="win", skip_forced=True, illegal_action="penalize")
    raw = env.unwrapped
    assert raw.config == ChickenFootConfig(num_players=3)
    assert raw.options == DriverOptions("win", True, "penalize")
    assert raw.engine.skip_forced and raw.engine.config is raw.config
    env.reset(seed=0)
    offender = env.agent_selection
    env.step(raw.config.num_actions)  # out of range: penalised, not raised
    assert raw.infos[offender]["illegal_action"] and raw.rewards[offender] == -1.0
    assert all(env.terminations.values())
    assert cf_env.env().unwrapped.options == DriverOptions()


def test_single_agent_env_keywords_and_config_objects():
    from cf_env.envs.single_agent import ChickenFootSingleAgentEnv, make_env

    env = ChickenFootSingleAgentEnv(ChickenFootConfig(max_pips=6, num_players=2),
                                    episode="game", reward_mode="win")
    assert env.config == ChickenFootConfig(max_pips=6, num_players=2)
    assert env.options == DriverOptions(reward_mode="win")
    assert not env.engine.skip_forced
    assert make_env().options.illegal_action == "penalize"  # gymnasium.make's default
    assert make_env({"num_players": 3, "reward_mode": "score"}).options == DriverOptions(
        reward_mode="score", illegal_action="penalize"
    )


# ------------------------------------------------------------------------------ snapshots
def _play(env, policy: np.random.Generator, steps: int) -> list[int]:
    taken = []
    for _ in range(steps):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            break
        action = int(policy.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        taken.append(action)
    return taken


def test_a_snapshot_from_a_score_env_restores_into_a_default_env_and_continues_identically():
    scored = cf_env.env(num_players=3, max_pips=6, num_rounds=3, reward_mode="score")
    default = cf_env.env(num_players=3, max_pips=6, num_rounds=3)
    scored.reset(seed=4)
    default.reset(seed=99)  # another game: the restore replaces it
    policy = np.random.default_rng(4)
    _play(scored, policy, 60)
    snap = json.loads(json.dumps(scored.unwrapped.snapshot()))
    assert not set(snap["config"]) & set(OPTION_FIELDS)  # the rules only
    default.unwrapped.restore(snap)
    a, b = scored.unwrapped, default.unwrapped
    assert a.engine.snapshot() == b.engine.snapshot()
    while not a.engine.game_over:
        for agent in a.possible_agents:
            np.testing.assert_array_equal(a.observe(agent)["observation"], b.observe(agent)["observation"])
        obs = scored.last()[0]
        action = int(policy.choice(np.flatnonzero(obs["action_mask"])))
        for env in (scored, default):
            env.step(None if env.last()[2] else action)
        assert a.engine.scores == b.engine.scores and a.engine.current == b.engine.current
    assert a.engine.snapshot() == b.engine.snapshot()
    assert a.engine.winners == b.engine.winners
    # Each env paid its own mode: the same points, different rewards.
    assert any(a.rewards[x] != b.rewards[x] for x in a.possible_agents)


def test_an_old_snapshot_naming_the_options_restores_rules_compared():
    engine = Engine(ChickenFootConfig(max_pips=6, num_players=2), seed=1)
    engine.step(engine.legal_actions()[0])
    snap = engine.snapshot()
    old = {**snap, "config": {**snap["config"], "reward_mode": "win", "skip_forced": True,
                              "illegal_action": "penalize"}}
    other = Engine(ChickenFootConfig(max_pips=6, num_players=2), seed=5)
    other.restore(old)
    assert other.snapshot() == snap
    assert not other.skip_forced  # a driver option of the engine, not of the snapshot
    ruled = {**old, "config": {**old["config"], "double_blank_value": 25}}
    with pytest.raises(cf_env.SnapshotError, match="double_blank_value"):
        other.restore(ruled)


def test_skip_forced_is_kept_by_restore_and_clone():
    engine = Engine(ChickenFootConfig(max_pips=6, num_players=2), seed=2, skip_forced=True)
    snap = engine.snapshot()
    engine.restore(snap)
    assert engine.skip_forced and engine.clone().skip_forced
    with pytest.raises(ValueError, match="skip_forced must be True or False"):
        Engine(ChickenFootConfig(), skip_forced=1)


# ------------------------------------------------------------------------------ records
def test_an_old_record_naming_the_options_replays():
    engine = Engine(ChickenFootConfig(max_pips=6, num_players=2, num_rounds=2), seed=3, skip_forced=True)
    rng = np.random.default_rng(3)
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    record = record_from_engine(engine)
    assert not set(record["config"]) & set(OPTION_FIELDS)
    old = {**record, "config": {**record["config"], "reward_mode": "score", "skip_forced": True,
                                "illegal_action": "raise"}}
    assert validate_record(old)["config"] == record["config"]
    assert replay_engine(old).scores == engine.scores


# ------------------------------------------------------------------------------ checkpoints
@pytest.mark.parametrize("name", ["ppo-4p-d9", "selfplay-2p-d6", "selfplay-4p-d9-v2"])  # cards from before the split
def test_shipped_cards_naming_the_options_load_and_compare_by_rules(name):
    card = ckpt.read_card(ROOT / "checkpoints" / name)
    assert set(OPTION_FIELDS) <= set(card["env_config"])  # written before the split
    rules = ChickenFootConfig.from_dict(card["env_config"])
    ckpt.check_compatible(card, rules, strict=True)  # every rule equal: the options ignored
    policy = ckpt.load_ppo_policy(ROOT / "checkpoints" / name, config=rules)
    engine = Engine(rules, seed=0)
    assert engine.legal_action_mask()[policy.act({
        "observation": Encoder(rules).observe(engine, engine.current),
        "action_mask": engine.legal_action_mask(),
    })]
    other = rules.replace(double_blank_value=25)
    with pytest.raises(ckpt.CheckpointMismatchError, match="double_blank_value"):
        ckpt.check_compatible(card, other)


# ------------------------------------------------------------------------------ YAML keys
def test_training_yaml_env_rules_still_take_the_options():
    from training.config import config_from_dict
    from training.rllib import config as rllib_config

    config = config_from_dict({"env": {"rules": {"num_players": 3, "reward_mode": "win"},
                                       "episode": "game"}})
    assert config.rules() == ChickenFootConfig(num_players=3)
    assert config.options() == DriverOptions(reward_mode="win")
    with pytest.raises(ValueError, match="reward_mode 'win'"):
        config_from_dict({"env": {"rules": {"reward_mode": "win"}}})  # episode "round"
    with pytest.raises(ValueError, match="'skip_forcd' -> 'skip_forced'"):
        config_from_dict({"env": {"rules": {"skip_forcd": True}}})

    rl = rllib_config.config_from_dict({"env": {"rules": {"num_players": 2, "max_pips": 6,
                                                          "skip_forced": True}}})
    assert rl.rules() == ChickenFootConfig(num_players=2, max_pips=6)
    assert rl.env_keywords() == {**rl.rules().to_dict(), **DriverOptions(skip_forced=True).to_dict()}
    with pytest.raises(ValueError, match="illegal_action must be 'raise'"):
        rllib_config.config_from_dict({"env": {"rules": {"illegal_action": "penalize"}}})
