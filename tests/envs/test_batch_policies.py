"""Policy seats of `ChickenFootBatch` (cf_env/envs/batch.py, "Policy seats"): Python policies drawn
by the seat sampler play inside `step`, every policy asked once per turn for all its games; the
games are the engine's games with those moves; a failing policy breaks the batch until reset."""

from __future__ import annotations

import numpy as np
import pytest

from cf_env import ChickenFootConfig, Engine
from cf_env.core.engine import IllegalActionError
from cf_env.core.observation import Encoder
from cf_env.envs.batch import ChickenFootBatch

CFG = ChickenFootConfig(max_pips=6, num_players=3, spinner_arms=6, num_rounds=2)
CFG_OBS = Encoder(CFG).observe(Engine(CFG, seed=0), 0).size


class Lowest:
    """Plays each game's lowest legal action; records the sizes of the batches it was asked."""

    def __init__(self):
        self.batches: list[int] = []

    def choose(self, observation, action_mask):
        assert observation.shape == (len(action_mask), CFG_OBS) and observation.dtype == np.float32
        self.batches.append(len(action_mask))
        return action_mask.argmax(axis=1)


def seat_sampler(policy, bot: str | None = None):
    """One learner seat per game, drawn from the game's seeder; the others `policy` (one of them
    the compiled `bot`, when given)."""

    def seats(rng):
        learner = int(rng.integers(CFG.num_players))
        kinds = [policy] * CFG.num_players
        kinds[learner] = "outside"
        if bot is not None:
            kinds[(learner + 1) % CFG.num_players] = bot
        return kinds

    return seats


def _settle(engine: Engine, learner: int, policy_moves: list) -> None:
    """Play `engine` as the batch plays it: forced moves and the policy's (lowest legal action)
    until the learner has a real choice or the game is over."""
    while not engine.game_over:
        legal = engine.legal_actions()
        if engine.current == learner and len(legal) > 1:
            return
        engine.step(min(legal))
        policy_moves.append(len(legal) > 1)


def test_policy_seats_play_inside_step_as_the_engine_plays_them():
    policy = Lowest()
    n = 12
    batch = ChickenFootBatch(CFG, n, bots=seat_sampler(policy), skip_forced=True)
    out = batch.reset(seed=5)
    assert (batch.learner_seats.sum(axis=1) == 1).all()
    assert (batch.seat_policies[~batch.learner_seats] == policy).all()
    encoder = Encoder(CFG)
    engines, seeds, moves = [None] * n, [None] * n, []
    rng = np.random.default_rng(0)
    games = 0
    for _ in range(150):
        for i in range(n):
            learner = int(np.flatnonzero(batch.learner_seats[i])[0])
            if seeds[i] != batch.game_seeds[i]:  # a new game was dealt (the old one ended)
                games += engines[i] is not None
                seeds[i] = int(batch.game_seeds[i])
                engines[i] = Engine(CFG, seed=seeds[i])
                _settle(engines[i], learner, moves)
            engine = engines[i]
            assert out.current_player[i] == engine.current == learner
            assert np.array_equal(out.observation[i], encoder.observe(engine, learner))
            assert np.array_equal(out.action_mask[i], engine.legal_action_mask().astype(bool))
        actions = (rng.random(out.action_mask.shape) * out.action_mask).argmax(axis=1)
        learners = out.current_player.copy()
        out = batch.step(actions)
        for i in range(n):
            engines[i].step(int(actions[i]))
            _settle(engines[i], int(learners[i]), moves)
            assert engines[i].game_over == (seeds[i] != batch.game_seeds[i])
    for i in range(n):  # the games dealt in the last step: their openings were played too
        if seeds[i] != batch.game_seeds[i]:
            learner = int(np.flatnonzero(batch.learner_seats[i])[0])
            _settle(Engine(CFG, seed=int(batch.game_seeds[i])), learner, moves)
    assert games >= 5 and sum(moves) > 500
    assert max(policy.batches) > 1  # one call served several games
    assert sum(policy.batches) == sum(moves)  # asked exactly at its real choices


def test_policy_seats_beside_compiled_bots_keep_rewards_zero_sum():
    policy = Lowest()
    batch = ChickenFootBatch(CFG, 8, bots=seat_sampler(policy, "greedy"), skip_forced=True)
    out = batch.reset(seed=1)
    total, rng = np.zeros(8), np.random.default_rng(1)
    for _ in range(200):
        out = batch.step((rng.random(out.action_mask.shape) * out.action_mask).argmax(axis=1))
        total += out.rewards.sum(axis=1)
        assert batch.learner_seats[np.arange(8), out.current_player].all()
    assert np.allclose(total, 0.0, atol=1e-4) and policy.batches


class Bad:
    """Plays the lowest legal action for a while, then fails as `how` says."""

    def __init__(self, how: str):
        self.how, self.calls = how, 0

    def choose(self, observation, action_mask):
        self.calls += 1
        if self.calls < 30:
            return action_mask.argmax(axis=1)
        if self.how == "raise":
            raise KeyError("no such thing")
        if self.how == "illegal":
            return np.where(action_mask, -1, np.arange(action_mask.shape[1])).max(axis=1)
        return np.zeros(len(action_mask) + 1, np.int64)


@pytest.mark.parametrize("how, error", [("raise", KeyError), ("illegal", IllegalActionError),
                                        ("shape", ValueError)])
def test_a_failing_policy_breaks_the_batch_until_a_full_reset(how, error):
    batch = ChickenFootBatch(CFG, 4, bots=seat_sampler(Bad(how)), skip_forced=True)
    out = batch.reset(seed=0)
    with pytest.raises(error):
        for _ in range(300):
            out = batch.step(out.action_mask.argmax(axis=1))
    with pytest.raises(RuntimeError, match="seat policy raised"):
        batch.step(np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="reset_mask"):
        batch.reset(options={"reset_mask": np.ones(4, bool)})
    with pytest.raises(error):  # a full reset is allowed (and asks the policy again)
        batch.reset(seed=0)


def test_a_sampler_giving_only_policies_and_bots_is_refused_with_nothing_changed():
    policy = Lowest()
    batch = ChickenFootBatch(CFG, 2, bots=lambda rng: [policy, policy, "greedy"])
    with pytest.raises(ValueError, match="no outside seat"):
        batch.reset(seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        batch.step(np.zeros(2, np.int64))


def test_win_bonus_adds_the_zero_sum_round_win_bonus_of_the_rewards_module():
    plain = ChickenFootBatch(CFG, 6, episode="round")
    bonus = ChickenFootBatch(CFG, 6, episode="round", win_bonus=0.5)
    a, b = plain.reset(seed=3), bonus.reset(seed=3)
    rng, paid = np.random.default_rng(3), 0
    for _ in range(300):
        actions = (rng.random(a.action_mask.shape) * a.action_mask).argmax(axis=1)
        a, b = plain.step(actions), bonus.step(actions)
        np.testing.assert_array_equal(plain.round_wins, bonus.round_wins)
        ended = a.round_over
        assert np.allclose(plain.round_wins[ended].sum(axis=1), 1.0)  # the winners share 1
        assert not plain.round_wins[~ended].any()
        expected = a.rewards + np.where(ended[:, None], 0.5 * plain.round_wins - 0.5 / 3, 0.0)
        np.testing.assert_allclose(b.rewards, expected, atol=1e-6)
        paid += int(ended.sum())
    assert paid >= 20


@pytest.mark.parametrize("bad", [-1.0, float("nan"), True, "1"])
def test_a_bad_win_bonus_is_refused(bad):
    with pytest.raises(ValueError, match="win_bonus"):
        ChickenFootBatch(CFG, 2, win_bonus=bad)
