"""The native vector env (`cf_env.envs.vector_env.ChickenFootVectorEnv`, the vector entry point of
`cf_env/ChickenFoot-v1`): made through `gymnasium.make_vec`, its batched spaces, a CleanRL-style
masked loop under Gymnasium's episode-statistics wrapper (SAME_STEP autoreset), the learner's
seat and rewards, seeding, opponent weights and bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import cf_env  # noqa: F401  (registers the ids)
from cf_env.agents.kernel_bots import BOT_KINDS, OUTSIDE
from cf_env.core.engine import IllegalActionError
from cf_env.envs.single_agent import ENV_ID
from cf_env.envs.vector_env import ChickenFootVectorEnv


def make(num_envs: int, **kwargs) -> ChickenFootVectorEnv:
    return gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def masked_random(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    return (rng.random(mask.shape) * mask).argmax(axis=1)


def test_make_vec_builds_the_native_env_with_batched_spaces():
    envs = make(6, opponents=["greedy"], max_pips=6, num_players=3)
    assert isinstance(envs, ChickenFootVectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    cfg = envs.config
    assert (cfg.max_pips, cfg.num_players) == (6, 3)
    obs, info = envs.reset(seed=0)
    assert envs.single_action_space == gym.spaces.Discrete(cfg.num_actions)
    assert envs.action_space == gym.spaces.MultiDiscrete([cfg.num_actions] * 6)
    assert obs.shape == envs.observation_space.shape == (6,) + envs.single_observation_space.shape
    assert envs.observation_space.contains(obs)
    assert info["action_mask"].shape == (6, cfg.num_actions) and info["action_mask"].dtype == bool
    assert np.array_equal(envs.action_masks(), info["action_mask"])


def test_a_cleanrl_style_masked_loop_runs_through_make_vec():
    """CleanRL's rollout shape: storage per (step, env), actions sampled from the masks, the next
    observation and done fed back, episode returns from RecordEpisodeStatistics."""
    num_envs, num_steps, iterations = 16, 64, 3
    envs = RecordEpisodeStatistics(make(num_envs, opponents=["random", "greedy", "heuristic"]))
    single = envs.single_observation_space
    obs_buf = np.zeros((num_steps, num_envs) + single.shape, np.float32)
    actions_buf = np.zeros((num_steps, num_envs), np.int64)
    rewards_buf = np.zeros((num_steps, num_envs), np.float32)
    dones_buf = np.zeros((num_steps, num_envs), bool)
    rng = np.random.default_rng(0)
    next_obs, info = envs.reset(seed=1)
    next_done = np.zeros(num_envs, bool)
    episodes = []
    for _ in range(iterations):
        for step in range(num_steps):
            obs_buf[step], dones_buf[step] = next_obs, next_done
            mask = info["action_mask"]
            assert (mask.sum(axis=1) >= 2).all()  # learner_skip_forced: only real choices
            action = masked_random(rng, mask)
            actions_buf[step] = action
            next_obs, reward, terminations, truncations, info = envs.step(action)
            rewards_buf[step] = reward
            next_done = terminations | truncations
            assert not truncations.any()
            assert not reward[~terminations].any()  # round episodes: paid at the round's end only
            if "episode" in info:
                episodes += info["episode"]["r"][info["_episode"]].tolist()
    assert len(episodes) > 10 and np.isfinite(episodes).all()
    assert np.abs(rewards_buf).sum() > 0
    assert all(single.contains(o) for o in obs_buf[-1])
    envs.close()


def test_the_learner_is_the_one_outside_seat_and_is_paid_its_own_round_score():
    envs = make(12, opponents=["greedy", "heuristic"], reward_mode="score", max_pips=6, num_players=4)
    _, info = envs.reset(seed=3)
    rng = np.random.default_rng(1)
    scale = envs.config.points_scale
    paid = 0
    for _ in range(300):
        seat = info["learner_seat"]
        kinds = envs.batch.seat_kinds
        assert (kinds[np.arange(12), seat] == OUTSIDE).all()
        assert ((kinds == OUTSIDE).sum(axis=1) == 1).all()
        state = envs.batch.kernel.state
        before = state.rounds_played.copy()
        _, reward, terminated, _, info = envs.step(masked_random(rng, info["action_mask"]))
        assert (terminated == info["round_over"]).all()
        # Where exactly one round ended and no game, that round's points are still in the state.
        one = terminated & (state.rounds_played == before + 1)
        for i in np.flatnonzero(one):
            points = state.round_points
            assert reward[i] == np.float32(-points[i, seat[i]] / scale)
            paid += 1
    assert paid > 10
    assert len(set(info["learner_seat"].tolist())) > 1  # seats drawn per game


def test_opponent_weights_decide_which_bots_are_seated():
    envs = make(20, opponents=["greedy", "heuristic"], weights=[0.0, 1.0])
    envs.reset(seed=0)
    kinds = envs.batch.seat_kinds
    assert set(kinds.ravel().tolist()) == {OUTSIDE, BOT_KINDS["heuristic"]}
    with pytest.raises(ValueError, match="opponents must be a non-empty list of"):
        make(2, opponents=["ismcts"])
    with pytest.raises(ValueError, match="opponent weights must be 2 non-negative numbers"):
        make(2, opponents=["greedy", "random"], weights=[1.0])
    with pytest.raises(ValueError, match="use episode='game'"):
        make(2, reward_mode="win")


def test_same_seed_same_trajectory():
    def run(seed):
        envs = make(8, opponents=["random", "heuristic"], episode="game")
        obs, info = envs.reset(seed=seed)
        rng = np.random.default_rng(0)
        trace = [obs]
        for _ in range(100):
            obs, reward, terminated, _, info = envs.step(masked_random(rng, info["action_mask"]))
            trace += [obs, reward, terminated, info["learner_seat"]]
        return trace

    a, b, c = run(5), run(5), run(6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_an_illegal_action_raises_naming_the_game_and_outputs_are_copies():
    envs = make(4, opponents=["greedy"])
    obs, info = envs.reset(seed=2)
    actions = info["action_mask"].argmax(axis=1)
    bad = actions.copy()
    bad[2] = envs.config.num_actions
    with pytest.raises(IllegalActionError, match=rf"game 2: action {envs.config.num_actions} is not legal"):
        envs.step(bad)
    with pytest.raises(ValueError, match="actions must be an integer array"):
        envs.step(actions.astype(float))
    mask = envs.action_masks()
    mask[:] = False  # a copy: the env's mask is unchanged
    assert envs.action_masks().any(axis=1).all()
    obs[:] = -1.0
    next_obs, *_ = envs.step(actions)  # the legal actions still apply
    assert (next_obs >= 0).all()
