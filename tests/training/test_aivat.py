"""`training.evaluation.aivat`: the bots' choices are what they draw from, an action term has
mean zero over the actions the policy could have drawn, the rows after each action are the
engine stepped through it, and several controls cross-fit as one does."""

from __future__ import annotations

import numpy as np

from cf_env.agents.bots import GreedyPolicy, HeuristicPolicy, RandomPolicy
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from training.evaluation import aivat
from training.evaluation.variance import cross_fitted

SMALL = ChickenFootConfig(num_players=4, max_pips=6, num_rounds=1)


def tie_positions(config, games=20):
    """(engine, policy, tied actions) at every heuristic decision with several best plays."""
    engine, encoder = Engine(config, seed=0), Encoder(config)
    bot = HeuristicPolicy(config, seed=1)
    for seed in range(games):
        engine.reset(seed)
        while not engine.game_over:
            obs = {"observation": encoder.observe(engine, engine.current),
                   "action_mask": engine.legal_action_mask()}
            tied = bot.choices(obs)
            if tied.size > 1:
                yield engine.clone(), bot, tied
            engine.step(bot.act(obs))


def test_each_bots_act_picks_among_its_choices():
    engine, encoder = Engine(SMALL, seed=0), Encoder(SMALL)
    for cls in (RandomPolicy, GreedyPolicy, HeuristicPolicy):
        bot = cls(SMALL, seed=3)
        for seed in range(5):
            engine.reset(seed)
            while not engine.game_over:
                obs = {"observation": encoder.observe(engine, engine.current),
                       "action_mask": engine.legal_action_mask()}
                tied = bot.choices(obs).tolist()
                action = bot.act(obs)
                assert action in tied and all(obs["action_mask"][a] for a in tied)
                engine.step(action)


def ridge_value(config, seed=0):
    width = Encoder(config).layout.size + Encoder(config).privileged_layout.size
    width += aivat.context_size(config, 2)
    rng = np.random.default_rng(seed)
    return aivat.fit_value(rng.random((200, width)).round(), rng.random(200), "ridge")


def test_an_action_term_has_mean_zero_over_the_actions_the_policy_could_draw():
    corrector = aivat.AivatCorrector(SMALL, ridge_value(SMALL), 2)
    corrector.context = aivat.seat_context([0, 1, 1, 1], 2)
    checked = 0
    for engine, bot, tied in tie_positions(SMALL):
        terms = []
        for taken in tied.tolist():  # exact enumeration: each tied action with probability 1/K
            block, probs = corrector.action_rows(engine, bot, taken)
            assert np.allclose(probs, 1.0 / len(tied))  # a bot's tie-break is uniform
            v = corrector.value.values(block.reshape(-1, corrector.width)).reshape(len(tied), 4)
            terms.append(v[0] - probs @ v)
        assert np.allclose(np.mean(terms, axis=0), 0.0, atol=1e-6)
        assert np.abs(terms).max() > 0  # the positions do differ
        checked += 1
    assert checked > 5


def test_the_rows_after_each_action_are_the_engine_stepped_through_it():
    corrector = aivat.AivatCorrector(SMALL, ridge_value(SMALL), 2)
    corrector.context = aivat.seat_context([1, 0, 1, 1], 2)
    engine, bot, tied = next(tie_positions(SMALL))
    block, _ = corrector.action_rows(engine, bot, int(tied[-1]))
    for k, action in enumerate([int(tied[-1]), *tied[:-1].tolist()]):
        stepped = engine.clone()
        stepped.step(action)
        assert np.array_equal(block[k], corrector.rows(stepped))


def test_several_controls_cross_fit_as_one_does_with_one():
    rng = np.random.default_rng(0)
    control = rng.normal(size=101)
    y = 0.3 * control + rng.normal(size=101)
    one, b_one = cross_fitted(y, control)
    several, b_several = aivat.cross_fitted_multi(y, control[:, None])
    assert np.allclose(one, several) and np.allclose(b_one, [b[0] for b in b_several])
