"""The learner's single-agent view (`cf_env.envs.single_agent`): its own observation and reward only,
legal masks, the env checkers, seeding, and clear errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

from cf_env import ChickenFootConfig, IllegalActionError
from cf_env.core.rewards import round_rewards
from cf_env.envs.single_agent import ENV_ID, ChickenFootSingleAgentEnv, SpecOpponents


def _play(env, seed: int, episodes: int, check):
    """Random legal learner actions; `check(env, obs, reward, terminated, info)` after each step."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    done = 0
    while done < episodes:
        mask = env.action_masks()
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert not truncated
        check(env, obs, reward, terminated, info)
        if terminated:
            done += 1
            obs, info = env.reset()


@pytest.mark.slow
def test_env_checkers_pass():
    # The checkers step with unmasked random actions: illegal_action="penalize" lets them.
    gym_check_env(gym.make(ENV_ID, opponents=["greedy"], illegal_action="penalize").unwrapped)
    checker = pytest.importorskip(
        "stable_baselines3.common.env_checker", reason="SB3's checker: the train extra"
    )
    sb3_check_env = checker.check_env
    sb3_check_env(ChickenFootSingleAgentEnv(opponents=["random"], illegal_action="penalize"))
    sb3_check_env(ChickenFootSingleAgentEnv(
        opponents=["greedy"], episode="game", num_rounds=2, illegal_action="penalize"))


@pytest.mark.parametrize("episode", ["round", "game"])
def test_observation_is_the_learners_own(episode):
    env = ChickenFootSingleAgentEnv(opponents=["greedy", "random"], episode=episode, num_rounds=3)
    hand = env.encoder.layout.slices["hand"]

    def check(env, obs, reward, terminated, info):
        engine = env.engine
        assert info["learner_seat"] == env.learner
        np.testing.assert_array_equal(obs, env.encoder.observe(engine, env.learner))
        # The hand piece is the learner's hand, never the seat that happens to act.
        np.testing.assert_array_equal(obs[hand], engine.hands[env.learner])
        if not terminated:
            assert engine.current == env.learner

    _play(env, seed=1, episodes=12, check=check)


def test_round_episode_reward_is_the_learners_zero_sum():
    cfg = ChickenFootConfig(num_rounds=4)
    env = ChickenFootSingleAgentEnv(cfg, opponents=["greedy"], episode="round")
    returns = {"sum": 0.0, "differs": 0}

    def check(env, obs, reward, terminated, info):
        returns["sum"] += reward
        if not terminated:
            assert reward == 0.0  # zero_sum pays only when a round ends
            return
        engine = env.engine
        # The round that just ended is the last one scored.
        points = [engine.scores[s][-1] for s in range(cfg.num_players)]
        assert info["round_points"] == points[env.learner]
        expected = round_rewards(cfg, "zero_sum", points)
        assert returns["sum"] == pytest.approx(expected[env.learner])
        if any(abs(r - expected[env.learner]) > 1e-9 for r in expected):
            returns["differs"] += 1
        low = min(points)
        winners = [s for s, p in enumerate(points) if p == low]
        assert info["win"] == (1 / len(winners) if env.learner in winners else 0.0)
        returns["sum"] = 0.0

    _play(env, seed=3, episodes=30, check=check)
    assert returns["differs"] > 10  # the test would catch an opponent's reward returned instead


def test_game_episode_return_sums_the_learners_rounds():
    cfg = ChickenFootConfig(num_rounds=3)
    env = ChickenFootSingleAgentEnv(cfg, opponents=["random"], episode="game")
    total = {"r": 0.0}

    def check(env, obs, reward, terminated, info):
        total["r"] += reward
        if terminated:
            engine = env.engine
            assert engine.game_over
            expected = sum(
                round_rewards(cfg, "zero_sum", [engine.scores[s][r] for s in range(cfg.num_players)])[env.learner]
                for r in range(cfg.num_rounds)
            )
            assert total["r"] == pytest.approx(expected)
            assert info["game_total"] == engine.totals()[env.learner]
            assert info["win"] > 0 or env.learner not in engine.winners
            total["r"] = 0.0

    _play(env, seed=5, episodes=6, check=check)


def test_masks_are_legal_real_choices_and_seats_rotate():
    env = ChickenFootSingleAgentEnv(opponents=["heuristic", "random"], num_rounds=2)
    seats = set()

    def check(env, obs, reward, terminated, info):
        seats.add(env.learner)
        mask = env.action_masks()
        if terminated:
            return
        assert mask.dtype == bool
        np.testing.assert_array_equal(mask, env.engine.legal_action_mask().astype(bool))
        assert mask.sum() >= 2  # forced learner moves are taken by the adapter
        assert env.observation_space.contains(obs)

    _play(env, seed=7, episodes=40, check=check)
    assert seats == {0, 1, 2, 3}


@pytest.mark.slow
def test_masks_are_served_through_vec_envs():
    pytest.importorskip("sb3_contrib", reason="SB3 and sb3-contrib: the train extra")
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import SubprocVecEnv

    vec = SubprocVecEnv([lambda: ChickenFootSingleAgentEnv(opponents=["greedy"])] * 2)
    try:
        vec.seed(0)
        vec.reset()
        masks = get_action_masks(vec)
        engines_masks = vec.env_method("action_masks")
        np.testing.assert_array_equal(masks, np.stack(engines_masks))
        assert masks.shape == (2, ChickenFootConfig().num_actions) and masks.any(axis=1).all()
    finally:
        vec.close()


def test_same_seed_same_episodes():
    def trajectory(seed):
        env = ChickenFootSingleAgentEnv(opponents=["random", "greedy"], num_rounds=2)
        out = []
        _play(env, seed, 8, lambda e, o, r, t, i: out.append((o.tobytes(), r, t)))
        return out

    assert trajectory(11) == trajectory(11)
    assert trajectory(11) != trajectory(12)


def test_illegal_action_raises_or_penalizes():
    env = ChickenFootSingleAgentEnv(opponents=["random"])
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(IllegalActionError):
        env.step(illegal)
    env = ChickenFootSingleAgentEnv(opponents=["random"], illegal_action="penalize")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(illegal)
    assert (reward, terminated, info["illegal_action"]) == (-1.0, True, True)


def test_bad_settings_raise_clear_errors():
    with pytest.raises(ValueError, match="episode='game'"):
        ChickenFootSingleAgentEnv(reward_mode="win")
    with pytest.raises(ValueError, match="learner_skip_forced"):
        ChickenFootSingleAgentEnv(skip_forced=True)
    with pytest.raises(ValueError, match="episode must be one of"):
        ChickenFootSingleAgentEnv(episode="hand")
    with pytest.raises(ValueError, match="unknown policy spec"):
        ChickenFootSingleAgentEnv(opponents=["nonesuch"]).reset(seed=0)
    with pytest.raises(ValueError, match="non-empty list"):
        ChickenFootSingleAgentEnv(opponents="greedy")


class _ObservingGreedy:
    """Greedy through `act` only (no fast path): the reference for the adapter's fast path."""

    def __init__(self, config, seed=None):
        from cf_env.agents.bots import GreedyPolicy

        self.inner = GreedyPolicy(config, seed=seed)

    def act(self, observation):
        return self.inner.act(observation)


class _Recorder:
    """A mask-only policy that records how it was asked; `act` must never be called on it."""

    def __init__(self, config, seed=None):
        self.rng = np.random.default_rng(seed)
        self.asked: list[int] = []

    def act(self, observation):
        raise AssertionError("the adapter should use the fast path for a mask-only policy")

    def act_bits(self, legal):
        legal_actions = [a for a in range(legal.bit_length()) if legal >> a & 1]
        self.asked.append(len(legal_actions))
        return legal_actions[int(self.rng.integers(len(legal_actions)))]


class _ListRecorder(_Recorder):
    """The same through the list form of the fast path (`act_legal`)."""

    act_bits = None

    def act_legal(self, legal_actions):
        self.asked.append(len(legal_actions))
        assert legal_actions == sorted(legal_actions)
        return legal_actions[int(self.rng.integers(len(legal_actions)))]


class _ObservationRecorder:
    """A policy without the fast path: it must get the full observation dict."""

    def __init__(self, config, seed=None):
        self.rng = np.random.default_rng(seed)
        self.masks: list[np.ndarray] = []

    def act(self, observation):
        assert observation["observation"].dtype == np.float32
        self.masks.append(observation["action_mask"].copy())
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))


@pytest.mark.parametrize("fast_path", [_Recorder, _ListRecorder])
def test_opponents_are_asked_only_real_choices_through_the_right_entry_point(fast_path):
    """Forced opponent decisions are taken without asking (as training.evaluation.evaluate does); mask-only
    policies get their fast path (`act_bits` or the list form `act_legal`), others `act` with
    the observation dict."""
    recorders, observers = [], []

    def recorder(config, seed):
        recorders.append(fast_path(config, seed))
        return recorders[-1]

    def observer(config, seed):
        observers.append(_ObservationRecorder(config, seed))
        return observers[-1]

    env = ChickenFootSingleAgentEnv(opponents=[recorder, observer], num_rounds=2)
    _play(env, 5, 20, lambda *args: None)
    asked = [n for r in recorders for n in r.asked]
    masks = [m for o in observers for m in o.masks]
    assert asked and masks
    assert min(asked) >= 2
    assert min(int(np.count_nonzero(m)) for m in masks) >= 2


@pytest.mark.parametrize("episode", ["round", "game"])
def test_fast_path_plays_exactly_like_act(episode):
    """`greedy` through its mask-only fast path and the same bot through `act` (observation
    built) give the learner identical episodes: the fast path changes speed, not play."""

    def trajectory(opponent):
        env = ChickenFootSingleAgentEnv(opponents=[opponent], num_rounds=2, episode=episode)
        out = []
        _play(env, 3, 12, lambda e, o, r, t, i: out.append((o.tobytes(), r, t, e.learner)))
        return out

    assert trajectory("greedy") == trajectory(_ObservingGreedy)


class _Tagged:
    def __init__(self, index: int):
        self.index = index

    def act(self, observation):
        raise AssertionError("not played here")


@pytest.mark.parametrize("weights", [None, [1.0], [0.5, 0.2, 0.3], [0.0, 2.0, 1.0, 1.0]])
def test_opponent_sampling_draws_exactly_what_rng_choice_would(weights):
    """`SpecOpponents.sample` picks seats by inverse-CDF sampling for speed; it must pick what
    `rng.choice(len(specs), size=num, p=probs)` picks and leave the RNG in the same state, so
    env seeds keep their games."""
    count = len(weights) if weights else 3
    factories = [lambda config, seed, k=k: _Tagged(k) for k in range(count)]
    sampler = SpecOpponents(factories, ChickenFootConfig(), weights=weights)
    warm_up = np.random.default_rng(99)
    for _ in range(300):  # build every (seat slot, spec) policy first: building draws seeds
        sampler.sample(warm_up, 7)
    for seed in range(200):
        ours, numpy_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        num = 1 + seed % 7
        expected = numpy_rng.choice(count, size=num, p=sampler.probs).tolist()
        assert [policy.index for policy in sampler.sample(ours, num)] == expected
        assert ours.bit_generator.state == numpy_rng.bit_generator.state


def test_a_bad_opponent_spec_fails_when_the_env_is_made():
    # It used to pass construction and fail at the first reset(), far from the typo.
    with pytest.raises(ValueError, match=r"unknown policy spec 'heurstic'.*did you mean 'heuristic'"):
        gym.make(ENV_ID, opponents=["greedy", "heurstic"])
    with pytest.raises(ValueError, match="no checkpoint at"):
        ChickenFootSingleAgentEnv(opponents=["ppo:no/such/checkpoint"])
    with pytest.raises(ValueError, match="a policy spec or a factory"):
        ChickenFootSingleAgentEnv(opponents=["greedy", 3])
