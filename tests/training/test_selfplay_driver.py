"""Self-play and the vector env share one driver (`cf_env.envs.batch.ChickenFootBatch`): the
collector's games, seated as the vector env seats them, are the vector env's games move for move
(the same deals and seats, the same bot moves given the same learner actions, the same rewards
and episode ends)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cf_env import ChickenFootConfig  # noqa: E402
from cf_env.envs.vector_env import ChickenFootVectorEnv  # noqa: E402
from training.selfplay.collector import Collector  # noqa: E402

CFG = ChickenFootConfig(max_pips=6, num_players=3, spinner_arms=6, num_rounds=2)


@pytest.mark.parametrize("episode", ["round", "game"])
def test_collector_plays_the_vector_envs_episodes(episode):
    games, steps = 16, 60
    collector = Collector(CFG, games, seed=11, pool_share=0.5, one_learner_seat=True,
                          bots={"greedy": 1.0, "heuristic": 1.0}, privileged=False,
                          episode=episode)
    envs = ChickenFootVectorEnv(games, CFG, opponents=["greedy", "heuristic"], episode=episode)
    obs, info = envs.reset(seed=collector.seeder_seeds)
    np.testing.assert_array_equal(envs.batch.game_seeds, collector.batch.game_seeds)
    np.testing.assert_array_equal(envs.batch.seat_kinds, collector.kinds)
    torch.manual_seed(0)
    d, a = collector.obs_size, CFG.num_actions
    roll = collector.collect(torch.nn.Linear(d, a), torch.nn.Linear(d, 1), steps)
    ended = dealt = 0
    for t in range(steps):
        rows = slice(t * games, (t + 1) * games)
        np.testing.assert_array_equal(roll.state[rows], obs)
        np.testing.assert_array_equal(roll.mask[rows], info["action_mask"])
        np.testing.assert_array_equal(roll.seat[rows], info["learner_seat"])
        seeds = envs.batch.game_seeds.copy()
        obs, reward, terminated, truncated, info = envs.step(roll.action[rows])
        np.testing.assert_array_equal(roll.reward[rows], reward)
        np.testing.assert_array_equal(roll.done[rows], terminated)
        ended += int(terminated.sum())
        dealt += int((envs.batch.game_seeds != seeds).sum())
    # Where the rollout ends: the same games, seats and decisions.
    np.testing.assert_array_equal(envs.batch.game_seeds, collector.batch.game_seeds)
    np.testing.assert_array_equal(envs.batch.seat_kinds, collector.kinds)
    assert ended >= games and dealt >= 4  # episodes ended and games were re-dealt on the way
    assert roll.reward.any()
    if episode == "round":  # rewards at round ends, which end the episodes
        assert not roll.reward[~roll.done].any()
