"""The PettingZoo AEC adapter: API conformance, seeding, spaces, rewards, leaks and errors.

Asserted once elsewhere, not repeated here: determinism and unseeded resets
(`test_determinism.py`), illegal and malformed actions, penalize mode, bad configs and foreign
snapshots (`test_invalid_input.py`), rewards per mode and snapshot/restore continuation over
random configs (`test_fuzz.py`)."""

from __future__ import annotations

import json
import random

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, render_test, seed_test

import cf_env
from cf_env import ChickenFootConfig, chicken_foot_v1

CONFIGS = [
    {},
    {"num_players": 2, "max_pips": 6, "num_rounds": 2},
    {"num_players": 8, "max_pips": 12, "num_rounds": 1, "spinner_arms": 6},
    {"num_players": 3, "skip_forced": True, "reward_mode": "win", "num_rounds": 2},
    # The R5 and R4/R13 variants: a game to a target, a lower double starts.
    {"num_players": 3, "max_pips": 6, "start_search": "lower_double", "target_score": 60},
    {"num_players": 4, "max_pips": 6, "hand_size": 5, "start_search": "all_draw", "num_rounds": 3},
]


def random_game(env, seed: int, on_step=None) -> list[int]:
    """Play a game with random legal actions; returns the actions taken."""
    rng = np.random.default_rng(seed)
    taken = []
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        taken.append(action)
        if on_step:
            on_step(env, agent, obs)
        env.step(action)
    return taken


@pytest.mark.parametrize("config", CONFIGS)
def test_pettingzoo_api_test(config):
    api_test(cf_env.env(**config), num_cycles=300)


@pytest.mark.parametrize("config", CONFIGS[:2])
def test_pettingzoo_seed_test(config):
    seed_test(lambda: cf_env.env(**config), num_cycles=300)


@pytest.mark.parametrize("config", [CONFIGS[1], CONFIGS[2]])
def test_pettingzoo_render_test(config):
    render_test(lambda render_mode=None: cf_env.env(render_mode=render_mode, **config))


def test_entry_points_and_registry():
    # v0 (deprecated, its old infos) is tested in tests/envs/test_info_schema.py.
    assert isinstance(chicken_foot_v1.env(), pettingzoo.AECEnv)
    assert chicken_foot_v1.raw_env is cf_env.raw_env
    made = pettingzoo.make("aec", "cf_env/chicken_foot-v1", num_players=3)
    assert made.unwrapped.config.num_players == 3
    raw = cf_env.raw_env()
    assert raw.metadata["name"] == "chicken_foot_v1"
    assert raw.metadata["is_parallelizable"] is False
    assert raw.possible_agents == ["player_0", "player_1", "player_2", "player_3"]


def test_the_wrapped_last_enforces_order_and_returns_the_raw_envs_last():
    env = chicken_foot_v1.env()
    with pytest.raises(AttributeError, match="agent_selection cannot be accessed before reset"):
        env.last()
    env.reset(seed=3)
    for _ in range(6):
        obs, reward, terminated, truncated, info = env.last()
        raw = env.unwrapped.last()
        np.testing.assert_array_equal(obs["observation"], raw[0]["observation"])
        np.testing.assert_array_equal(obs["action_mask"], raw[0]["action_mask"])
        assert (reward, terminated, truncated, info) == raw[1:]
        assert env.last(observe=False)[0] is None
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_spaces_match_what_is_returned():
    env = cf_env.env(num_players=5)
    env.reset(seed=1)
    cfg = env.unwrapped.config
    for agent in env.agents:
        obs = env.observe(agent)
        space = env.observation_space(agent)
        assert space.contains(obs)
        assert obs["observation"].dtype == space["observation"].dtype == np.float32
        assert obs["action_mask"].dtype == np.int8
        assert obs["action_mask"].shape == (2 * cfg.num_tiles + 2,)
    assert env.action_space("player_0").n == 2 * 55 + 2


def test_layout_is_queryable_and_covers_the_vector():
    env = cf_env.raw_env()
    env.reset(seed=0)
    layout = env.observation_layout
    size = env.observation_space("player_0")["observation"].shape[0]
    covered = sorted((s.start, s.stop) for s in layout.values())
    assert covered[0][0] == 0 and covered[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
    seat = env.engine.current
    obs = env.observe(env.agent_selection)["observation"]
    assert np.array_equal(obs[layout["hand"]], env.engine.hands[seat])
    assert obs[layout["center"]][9] == 1


def test_every_observation_piece_is_used_in_a_playout():
    env = cf_env.raw_env(num_rounds=3)
    env.reset(seed=4)
    seen = dict.fromkeys(env.observation_layout, False)

    def look(env, agent, obs):
        for name, piece in env.unwrapped.observation_layout.items():
            seen[name] |= bool(obs["observation"][piece].any())

    random_game(env, 4, look)
    assert all(seen.values()), [n for n, v in seen.items() if not v]


def test_mask_is_the_engines_and_never_empty_for_the_actor():
    env = cf_env.env(num_players=3, num_rounds=2)
    env.reset(seed=2)

    def check(env, agent, obs):
        engine = env.unwrapped.engine
        assert obs["action_mask"].any()
        assert np.array_equal(obs["action_mask"], engine.legal_action_mask())
        for other in env.agents:
            if other != agent:
                assert not env.observe(other)["action_mask"].any()

    random_game(env, 2, check)


def test_returned_arrays_never_alias_state():
    env = cf_env.raw_env()
    env.reset(seed=0)
    before = json.dumps(env.snapshot())
    obs = env.observe(env.agent_selection)
    obs["observation"][:] = 1
    obs["action_mask"][:] = 1
    env.state()[:] = 7
    again = env.observe(env.agent_selection)
    assert json.dumps(env.snapshot()) == before
    assert again["action_mask"].sum() < again["action_mask"].size


@pytest.mark.parametrize("config", [{}, {"max_pips": 6, "num_players": 3, "num_rounds": 3}])
def test_observations_are_the_encoders_whenever_asked(config):
    """Whatever agent is asked, whenever, across rounds, games and restores, the env's
    observation (the compiled core's) is what `Encoder.encode` (numpy) builds from the engine."""
    env = cf_env.raw_env(**config)
    env.reset(seed=3)
    rng = random.Random(3)
    saved = env.snapshot()
    for _ in range(1500):
        for agent in rng.sample(env.possible_agents, rng.randint(0, len(env.possible_agents))):
            seat = env.agent_name_mapping[agent]
            expected = env.encoder.encode(env.engine, seat)
            np.testing.assert_array_equal(env.observe(agent)["observation"], expected)
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.reset()
            continue
        if rng.random() < 0.02:
            env.restore(saved)
        elif rng.random() < 0.02:
            saved = env.snapshot()
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(rng.choice(np.flatnonzero(mask).tolist()))


def test_observation_ignores_hidden_tiles():
    """Swapping tiles between two opponents, or an opponent and the boneyard, changes nothing."""
    env = cf_env.raw_env(num_players=4)
    env.reset(seed=8)
    rng = np.random.default_rng(8)
    for _ in range(25):  # get into the middle of a round with a history of voids and plays
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
    viewer = env.agent_selection
    seat = env.agent_name_mapping[viewer]
    before = env.observe(viewer)
    snap = env.snapshot()
    a, b = (seat + 1) % 4, (seat + 2) % 4
    swapped = json.loads(json.dumps(snap))
    swapped["hands"][a][0], swapped["hands"][b][0] = snap["hands"][b][0], snap["hands"][a][0]
    env.restore(swapped)
    after = env.observe(viewer)
    assert np.array_equal(before["observation"], after["observation"])
    assert np.array_equal(before["action_mask"], after["action_mask"])
    swapped = json.loads(json.dumps(snap))
    swapped["hands"][a][0], swapped["boneyard"][-1] = snap["boneyard"][-1], snap["hands"][a][0]
    env.restore(swapped)
    assert np.array_equal(before["observation"], env.observe(viewer)["observation"])
    # ... while the state vector (full information) does see it.
    env.restore(snap)
    full = env.state()
    env.restore(swapped)
    assert not np.array_equal(full, env.state())


def test_max_cycles_truncates_everyone_after_that_many_cycles_of_actions():
    env = cf_env.env(max_cycles=7)  # 7 cycles of 4 players: 28 actions
    env.reset(seed=0)
    steps = 0
    for _agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        if term or trunc:
            assert trunc and not term
            env.step(None)
            continue
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        steps += 1
    assert steps == 28 and env.agents == []


def test_state_vector_holds_hidden_information():
    env = cf_env.raw_env()
    env.reset(seed=0)
    layout = env.encoder.state_layout.slices
    state = env.state()
    assert env.state_space.contains(state)
    assert state[layout["hands"]].sum() == sum(env.engine.hand_counts)
    assert state[layout["boneyard"]].sum() == len(env.engine.boneyard)


def test_default_hand_sizes_follow_the_rules_table():
    assert [ChickenFootConfig(num_players=n).hand_size for n in range(2, 9)] == [7] * 6 + [6]
    assert ChickenFootConfig().num_rounds == 10
    with pytest.raises(ValueError, match="unknown config field"):
        ChickenFootConfig.from_dict({"players": 3})


@pytest.mark.parametrize("reward_mode", ["zero_sum", "win"])
def test_pending_rewards_survive_snapshot_and_restore(reward_mode):
    """After a round (or the game) ends, every seat's reward waits in `_cumulative_rewards`
    until that agent's next `last()`. A snapshot taken then, restored into another env (via
    JSON), hands each agent exactly what the original does."""
    cfg = {"num_players": 3, "max_pips": 6, "num_rounds": 2, "reward_mode": reward_mode}
    original = cf_env.env(**cfg)
    original.reset(seed=5)
    raw = original.unwrapped
    rng = np.random.default_rng(5)
    rounds = 0
    while rounds < (1 if reward_mode == "zero_sum" else 2):  # the game's end for "win"
        mask = original.last()[0]["action_mask"]
        original.step(int(rng.choice(np.flatnonzero(mask))))
        rounds = len(raw.engine.scores[0])
    pending = dict(raw._cumulative_rewards)
    assert sum(1 for r in pending.values() if r != 0) >= 2  # seats that have not yet seen theirs
    copy = cf_env.env(**cfg)
    copy.reset(seed=99)
    copy.unwrapped.restore(json.loads(json.dumps(raw.snapshot())))
    assert copy.unwrapped._cumulative_rewards == pending
    assert copy.unwrapped.rewards == raw.rewards
    # Each agent, at its next turn, gets the same reward from both.
    for _ in range(2 * cfg["num_players"]):
        if not original.agents:
            break
        assert copy.agent_selection == original.agent_selection
        got, want = copy.last(), original.last()
        assert got[1] == want[1]
        action = None if want[2] or want[3] else int(np.flatnonzero(want[0]["action_mask"])[0])
        original.step(action)
        copy.step(action)
    assert copy.agents == original.agents


@pytest.mark.parametrize(
    "key, value, fragment",
    [
        ("rewards", [0.5], "'rewards' must map agents"),
        ("cumulative_rewards", {"player_9": 1.0}, "'cumulative_rewards' must map agents"),
        ("cumulative_rewards", {"player_0": float("nan")}, "finite number"),
        ("rewards", {"player_1": "1"}, "finite number"),
        ("rewards", {"player_1": True}, "finite number"),
    ],
)
def test_bad_pending_rewards_are_refused_and_change_nothing(key, value, fragment):
    env = cf_env.raw_env(num_players=3)
    env.reset(seed=2)
    snap = env.snapshot()
    before = json.dumps(snap, sort_keys=True)
    with pytest.raises(cf_env.SnapshotError, match=fragment):
        env.restore({**snap, key: value})
    assert json.dumps(env.snapshot(), sort_keys=True) == before


def test_rewards_of_rounds_finished_inside_reset_reach_last():
    """skip_forced can play a whole tiny game inside reset (found by test_fuzz): the rewards of
    the rounds it finishes are handed out by last(), as after any step (R12 round points)."""
    cfg = ChickenFootConfig(max_pips=6, num_players=2, hand_size=2, num_rounds=1,
                            double_blank_value=0)
    env = cf_env.env(**cfg.to_dict(), reward_mode="score", skip_forced=True)
    env.reset(seed=182)
    raw = env.unwrapped
    assert raw.engine.game_over  # the scenario: nothing left to decide after reset
    totals = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        _, reward, term, trunc, _ = env.last()
        totals[env.agent_selection] += reward
        env.step(None)
    expected = {agent: -sum(raw.engine.scores[seat]) / cfg.points_scale
                for seat, agent in enumerate(env.possible_agents)}
    assert totals == pytest.approx(expected) and any(expected.values())
