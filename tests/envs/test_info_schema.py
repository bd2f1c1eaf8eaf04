"""A fixed info schema, the env version bump, and never an empty mask.

* Every info of the AEC env (`cf_env.env`) and of the single-agent env (`cf_env/ChickenFoot-v1`)
  has reset's keys, in reset's order, with reset's value types, at every step: the schema
  tests fail on the first step that differs (TorchRL builds its info spec from reset's infos and
  crashed on v0's keys that came and went). Values are plain numbers (and the single-agent's
  fixed-shape mask), checked against the engine.
* The single-agent mask is never empty: while no episode runs it is the terminal placeholder
  (PASS) alone, and Gymnasium's vector envs (sync and async, next-step autoreset) never send it
  to the engine — a plain env raises on any step after `terminated`, so a vector env that sent
  it would fail.
* v1 is the only version (v0 was removed in 0.2.0) and warns nothing.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pettingzoo
import pytest

import cf_env
from cf_env import IllegalActionError, chicken_foot_v1
from cf_env.envs.env import INFO_KEYS as AEC_INFO_KEYS
from cf_env.envs.single_agent import ENV_ID, INFO_KEYS, ChickenFootSingleAgentEnv

AEC_CONFIGS = {
    "default": {},
    "2p-double-6": {"num_players": 2, "max_pips": 6, "num_rounds": 3},
    "skip-forced-win": {"num_players": 3, "skip_forced": True, "reward_mode": "win", "num_rounds": 2},
    "target-score": {"num_players": 3, "max_pips": 6, "start_search": "lower_double", "target_score": 60},
    "8p-double-12": {"num_players": 8, "max_pips": 12, "num_rounds": 1, "spinner_arms": 6},
    "shared-wins": {"num_players": 4, "max_pips": 6, "num_rounds": 1, "tie_break": "none"},
}
PENALIZE = {"2p-double-6": AEC_CONFIGS["2p-double-6"], "default": {}}


def signature(info: dict) -> list[tuple[str, type]]:
    """What must never change between steps: the keys, their order and their values' types."""
    return [(key, type(value)) for key, value in info.items()]


def illegal_action(rng: np.random.Generator, mask: np.ndarray):
    """An illegal int, or sometimes a malformed action (penalised the same way)."""
    if rng.random() < 0.2:
        return [3.5, None, "1", True][int(rng.integers(4))]
    return int(rng.choice(np.flatnonzero(mask == 0)))


# ============================================================================ info schema: AEC
def play_aec(config: dict, seed: int, illegal_rate: float = 0.0):
    """A random game; yields (env, acting agent or None at reset, penalised) after every step."""
    env = cf_env.env(**config)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    yield env, None, False
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        if illegal_rate and rng.random() < illegal_rate:
            env.step(illegal_action(rng, obs["action_mask"]))
            yield env, agent, True
        else:
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            yield env, agent, False


def check_aec_schema(config: dict, seeds: range, illegal_rate: float = 0.0) -> int:
    steps = 0
    for seed in seeds:
        reference = None
        for env, _, _ in play_aec(config, seed, illegal_rate):
            raw = env.unwrapped
            if not raw.agents:
                continue  # the wind-down removed every agent: no infos left to read
            if reference is None:  # at reset: the documented schema, the same for every agent
                reference = signature(raw.infos[raw.agents[0]])
                assert reference == list(AEC_INFO_KEYS.items())
            for agent, info in raw.infos.items():
                assert signature(info) == reference, f"seed {seed} step {steps} {agent}: {info}"
            # ... and what `last()` hands the next agent (TorchRL and RLlib read both).
            assert signature(env.last()[4]) == reference
            steps += 1
    return steps


@pytest.mark.parametrize("name", list(AEC_CONFIGS))
def test_aec_infos_keep_resets_keys_and_types_at_every_step(name):
    assert check_aec_schema(AEC_CONFIGS[name], range(20)) > 500


@pytest.mark.parametrize("name", list(PENALIZE))
def test_aec_infos_keep_the_schema_with_penalised_illegal_actions(name):
    config = {**PENALIZE[name], "illegal_action": "penalize"}
    check_aec_schema(config, range(30), illegal_rate=0.02)


@pytest.mark.parametrize("name", ["default", "2p-double-6", "skip-forced-win", "shared-wins"])
def test_aec_info_values_follow_the_engine(name):
    """round_over / round_points on the step that scores a round (R12), game_total, game_over,
    the win shares (R13, ties split) summing to 1, and the names through `winners()`."""
    config = AEC_CONFIGS[name]
    shared = 0
    # Seed 21 of "shared-wins" ends in a tie for the lowest total (R13 with tie_break="none").
    for seed in [*range(6), 21]:
        rounds_seen = 0
        for env, _, _ in play_aec(config, seed):
            raw, engine = env.unwrapped, env.unwrapped.engine
            if not raw.agents:
                continue
            scored = len(engine.scores[0])
            for seat, agent in enumerate(raw.possible_agents):
                info = raw.infos[agent]
                assert info["round"] == engine.round
                assert info["game_total"] == sum(engine.scores[seat])
                assert info["game_over"] is engine.game_over
                assert info["illegal_action"] is False
                if info["round_over"]:
                    assert info["round_points"] == engine.scores[seat][-1]
                else:
                    assert info["round_points"] == 0
            if raw.infos[raw.possible_agents[0]]["round_over"]:
                rounds_seen = scored  # rounds that end on one step (skip_forced) count once
            if engine.game_over:
                wins = {a: raw.infos[a]["win"] for a in raw.possible_agents}
                assert sum(wins.values()) == pytest.approx(1.0)
                assert raw.winners() == [a for a, w in wins.items() if w > 0]
                assert all(w == pytest.approx(1 / len(raw.winners())) for w in wins.values() if w)
                shared += len(raw.winners()) > 1
            else:
                assert raw.winners() == []
                assert all(raw.infos[a]["win"] == 0.0 for a in raw.possible_agents)
        assert rounds_seen == len(engine.scores[0])  # the last round's end was reported
    assert shared or name != "shared-wins"


def test_aec_penalty_marks_only_the_offender():
    env = cf_env.env(num_players=3, illegal_action="penalize")
    env.reset(seed=0)
    offender = env.agent_selection
    env.step(int(np.flatnonzero(env.last()[0]["action_mask"] == 0)[0]))
    raw = env.unwrapped
    assert all(env.terminations.values())
    for agent, info in raw.infos.items():
        assert info["illegal_action"] is (agent == offender)
        assert (info["game_over"], info["round_over"], info["win"]) == (False, False, 0.0)


def test_aec_infos_are_new_dicts_every_step():
    """A caller keeping (or changing) an info never sees it change, nor changes the next one."""
    env = cf_env.env(num_players=2, max_pips=6)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(40):
        kept = env.unwrapped.infos["player_0"]
        snapshot = dict(kept)
        kept["round"] = -7
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            break
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert env.unwrapped.infos["player_0"] is not kept
        assert env.unwrapped.infos["player_0"]["round"] != -7
        assert {**kept, "round": snapshot["round"]} == snapshot


def test_aec_masks_follow_pettingzoo_convention():
    """Only the acting agent has legal actions; the others, and everyone once the game is
    over, get an all-zero mask (a terminated agent steps None)."""
    for seed in range(3):
        for env, _, _ in play_aec({"num_players": 3, "max_pips": 6}, seed):
            raw = env.unwrapped
            if not raw.agents:
                continue
            for agent in raw.agents:
                mask = raw.observe(agent)["action_mask"]
                acting = agent == env.agent_selection and not raw.engine.game_over
                assert mask.any() == acting


# ======================================================================== info schema: single agent
SINGLE_CONFIGS = {
    "default-round": ({}, "round"),
    "2p-double-6-game": ({"num_players": 2, "max_pips": 6, "num_rounds": 3}, "game"),
    "win-game": ({"num_players": 3, "reward_mode": "win", "num_rounds": 2}, "game"),
    "target-score-round": ({"num_players": 3, "max_pips": 6, "target_score": 60}, "round"),
}


def check_single_schema(env, seeds: range, steps: int, illegal_rate: float = 0.0) -> dict:
    """Random (sometimes illegal) steps; every info against reset's; returns counts."""
    raw = env.unwrapped
    counts = {"steps": 0, "ended": 0, "penalised": 0}
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        reference = signature(info)
        assert reference == list(INFO_KEYS.items())
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            mask = info["action_mask"]
            assert mask.shape == (raw.config.num_actions,) and mask.dtype == bool
            np.testing.assert_array_equal(mask, raw.action_masks())
            if rng.random() < illegal_rate:
                action = illegal_action(rng, mask)
            else:
                action = int(rng.choice(np.flatnonzero(mask)))
            obs, reward, terminated, truncated, info = env.step(action)
            assert signature(info) == reference, f"seed {seed}: {info}"
            assert info["action_mask"].shape == mask.shape
            counts["steps"] += 1
            counts["penalised"] += info["illegal_action"]
            if terminated:
                counts["ended"] += 1
                obs, info = env.reset()
                assert signature(info) == reference
    return counts


@pytest.mark.parametrize("name", list(SINGLE_CONFIGS))
def test_single_agent_infos_keep_resets_keys_and_types(name):
    rules, episode = SINGLE_CONFIGS[name]
    env = ChickenFootSingleAgentEnv(opponents=["random", "greedy"], episode=episode, **rules)
    counts = check_single_schema(env, range(6), steps=60)
    assert counts["ended"] > 3


@pytest.mark.parametrize("name", ["default-round", "2p-double-6-game"])
def test_single_agent_infos_keep_the_schema_when_penalised(name):
    rules, episode = SINGLE_CONFIGS[name]
    # The registered id: illegal actions are penalised by default.
    env = gym.make(ENV_ID, opponents=["random"], episode=episode, **rules)
    counts = check_single_schema(env, range(8), steps=60, illegal_rate=0.05)
    assert counts["penalised"] > 3


@pytest.mark.parametrize("episode", ["round", "game"])
def test_single_agent_info_values_follow_the_engine(episode):
    env = ChickenFootSingleAgentEnv(opponents=["greedy"], episode=episode, num_rounds=3)
    engine = env.engine
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    rounds_over = ends = 0
    for _ in range(400):
        before = len(engine.scores[0])
        obs, reward, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        seat = env.learner
        assert info["learner_seat"] == seat and info["round"] == engine.round
        assert info["game_total"] == sum(engine.scores[seat])
        assert info["game_over"] is engine.game_over and info["illegal_action"] is False
        assert info["round_over"] is (len(engine.scores[0]) > before)
        assert info["round_points"] == (engine.scores[seat][-1] if info["round_over"] else 0)
        rounds_over += info["round_over"]
        if not terminated:
            assert info["win"] == 0.0
            continue
        ends += 1
        if episode == "round":
            points = [s[-1] for s in engine.scores]
        else:
            points = engine.totals()
            assert engine.game_over
        winners = engine.winners if episode == "game" else [s for s, p in enumerate(points) if p == min(points)]
        assert info["win"] == (1 / len(winners) if seat in winners else 0.0)
        obs, info = env.reset()
        assert (info["round_over"], info["round_points"], info["win"]) == (False, 0, 0.0)
    assert ends > 5 and rounds_over >= ends


def test_single_agent_info_mask_is_a_copy():
    env = ChickenFootSingleAgentEnv(opponents=["random"])
    _, info = env.reset(seed=0)
    expected = env.action_masks()
    info["action_mask"][:] = False
    np.testing.assert_array_equal(env.action_masks(), expected)


# ============================================================================ never an empty mask
def placeholder(env) -> np.ndarray:
    mask = np.zeros(env.config.num_actions, dtype=bool)
    mask[env.terminal_action] = True
    return mask


def test_terminal_mask_is_the_pass_placeholder_alone():
    """At a terminal observation the mask (the method's and the info's) is exactly PASS, an
    existing id: the action space and codec are unchanged, and a plain env still refuses it."""
    env = ChickenFootSingleAgentEnv(opponents=["random"], num_rounds=2)
    assert env.terminal_action == env.config.pass_action == env.action_space.n - 1
    np.testing.assert_array_equal(env.action_masks(), placeholder(env))  # before any reset
    rng = np.random.default_rng(0)
    for seed in range(10):
        env.reset(seed=seed)
        terminated = False
        while not terminated:
            _, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        np.testing.assert_array_equal(env.action_masks(), placeholder(env))
        np.testing.assert_array_equal(info["action_mask"], placeholder(env))
        with pytest.raises(IllegalActionError, match="the episode is over"):
            env.step(env.terminal_action)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_samples_from_masks_that_are_never_empty(mode):
    """`gym.make_vec` as a new user writes it: sample every action from the mask the vector env
    returns (the stacked `infos["action_mask"]`, and `call("action_masks")`). Next-step
    autoreset hands back the terminal placeholder, which the next step never plays: the
    sub-env resets instead (a plain step after `terminated` raises, so a vector env that sent
    it would fail here), and no action is ever penalised."""
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode=mode)
    try:
        rng = np.random.default_rng(0)
        _, infos = envs.reset(seed=0)
        ended = placeholders_sent = 0
        for _ in range(300):
            masks = infos["action_mask"]
            assert masks.shape == (2, envs.single_action_space.n) and masks.dtype == bool
            assert masks.any(axis=1).all(), "an empty mask"
            np.testing.assert_array_equal(masks, np.stack(envs.call("action_masks")))
            actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
            placeholders_sent += int(sum(m.sum() == 1 and m[-1] for m in masks))
            _, _, terminated, truncated, infos = envs.step(actions)
            assert not infos["illegal_action"].any()
            ended += int(terminated.sum())
        assert ended > 10 and placeholders_sent >= ended - 2  # the last ends are not stepped on
    finally:
        envs.close()


def test_make_vec_same_step_autoreset_masks_are_never_empty():
    from gymnasium.vector import AutoresetMode

    envs = gym.make_vec(
        ENV_ID, num_envs=2, vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )
    try:
        rng = np.random.default_rng(1)
        _, infos = envs.reset(seed=1)
        for _ in range(150):
            masks = infos["action_mask"]
            assert masks.any(axis=1).all()
            _, _, _, _, infos = envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
            assert not infos["illegal_action"].any()
    finally:
        envs.close()


# ============================================================================ versions
def test_gym_and_pettingzoo_registries_have_v1_and_no_longer_v0():
    assert "cf_env/ChickenFoot-v1" in gym.registry
    assert "cf_env/chicken_foot-v1" in pettingzoo.aec_registry
    assert "cf_env/ChickenFoot-v0" not in gym.registry
    assert "cf_env/chicken_foot-v0" not in pettingzoo.aec_registry
    assert ENV_ID == "cf_env/ChickenFoot-v1"
    assert cf_env.raw_env is chicken_foot_v1.raw_env and cf_env.env is chicken_foot_v1.env


def test_v1_envs_raise_no_deprecation_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for made in (
            cf_env.env(),
            chicken_foot_v1.env(),
            pettingzoo.make("aec", "cf_env/chicken_foot-v1"),
        ):
            made.reset(seed=0)
        gym.make("cf_env/ChickenFoot-v1").reset(seed=0)
