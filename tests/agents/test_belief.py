"""`belief:` search (issue 14): the opponents' decisions rebuilt from my own observations alone
(`cf_env.agents.belief`) are the ones they really faced, a deal's weight is the actor's
probability of the moves they made with that deal's hands, and the agent reads nothing hidden."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cf_env import ChickenFootConfig
from cf_env.agents.belief import OpponentEvidence
from cf_env.agents.ismcts import NetworkGuide
from cf_env.agents.policies import load_policy, spec_checkpoint, validate_policy_spec
from cf_env.core.actions import actions_in
from cf_env.core.deals import DealSampler
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from training.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(ROOT / "checkpoints" / "selfplay-4p-d9")  # actor + value head
ROUND = ChickenFootConfig(num_rounds=1)


def _game(seed: int, budget: int = 4, opponents=("random", "greedy", f"ppo:{CKPT}")):
    """One seeded round, `belief:` at seat 0 and `opponents` after it. Yields, after each of seat
    0's real choices, (engine, policy, truth): truth[seat] lists what the seat really saw at each
    play from its hand (observation, action)."""
    engine, encoder = Engine(ROUND, seed=seed), Encoder(ROUND)
    policy = load_policy(f"belief:{CKPT}:{budget}", ROUND, seed)
    players = [policy] + [load_policy(spec, ROUND, seed + k) for k, spec in enumerate(opponents)]
    truth: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(4)]
    while not engine.game_over:
        seat, legal = engine.current, engine.legal_bits()
        obs = {"observation": encoder.observe(engine, seat), "action_mask": engine.legal_action_mask()}
        # Forced decisions: the arena asks only the seats that want them (belief: does).
        action = players[seat].act(obs) if not seat or legal & (legal - 1) else actions_in(legal)[0]
        if seat and action < ROUND.draw_action and engine.drawn_tile < 0:
            truth[seat].append((obs["observation"], action))
        engine.step(action)
        if seat == 0:
            yield engine, policy, truth


def _match(evidence: OpponentEvidence, seat: int, event, truth) -> np.ndarray:
    """The true observation an event stands for: equal but for the hand, bit for bit."""
    hand = evidence._hand
    for observed, action in truth[seat]:
        zeroed = observed.copy()
        zeroed[hand] = 0.0
        if action == event.action and np.array_equal(zeroed, event.public):
            assert np.allclose(zeroed @ evidence._w1 + evidence._b1, event.base, atol=1e-5)
            return observed
    raise AssertionError(f"seat {seat}: no real decision matches an event (action {event.action})")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_i14_events_are_the_decisions_the_opponents_really_faced(seed):
    """Every event is an opponent's real observation at a play from its hand (the public part
    rebuilt by the replay, bit for bit), and its hand then is the seat's hand now plus the tiles
    it has played since; every interval of a game is explained."""
    checked = 0
    for engine, policy, truth in _game(seed):
        evidence = policy.evidence
        for seat in range(1, 4):
            for event in evidence.events[seat]:
                observed = _match(evidence, seat, event, truth)
                held = np.flatnonzero(observed[evidence._hand]).tolist()
                assert sorted(engine.hand(seat) + event.later) == held
                checked += 1
    assert evidence.replays > 5 and evidence.failures == evidence.ambiguous == 0
    assert checked > 10


def test_i14_a_deals_weight_is_the_actors_probability_of_the_moves_seen():
    """log_weights of the true deal = the sum over events of the actor's masked log-softmax of
    the action taken, computed directly from the real observation and legal set."""
    compared = 0
    for engine, policy, truth in _game(3):
        evidence, guide = policy.evidence, policy.evidence.guide
        if not evidence.count:
            continue
        expected = 0.0
        for seat in range(1, 4):
            for event in evidence.events[seat]:
                observed = _match(evidence, seat, event, truth)
                held = np.flatnonzero(observed[evidence._hand]).tolist()
                legal = [a for a in range(ROUND.num_actions)
                         if event.attach[a] and a < ROUND.draw_action and a // 2 in held]
                z = guide.logits(observed[None, :])[0][legal].astype(np.float64)
                expected += z[legal.index(event.action)] - np.log(np.exp(z - z.max()).sum()) - z.max()
        true_deal = [engine.hand(s) for s in range(1, 4)]
        assert evidence.log_weights([true_deal])[0] == pytest.approx(expected, abs=1e-3)
        compared += 1
    assert compared > 3


def test_i14_the_true_deal_weighs_more_than_a_uniform_one_against_the_modelled_actor():
    """Against copies of the actor it models, the deal the opponents really hold is on average
    more likely than the sampler's uniform consistent deals."""
    gaps = []
    for seed in (4, 5):
        for engine, policy, _ in _game(seed, opponents=(f"ppo:{CKPT}",) * 3):
            evidence = policy.evidence
            if not evidence.count:
                continue
            state = policy.decoder.decode(Encoder(ROUND).observe(engine, 0))
            sampler = DealSampler.from_state(state, policy.tables, np.random.default_rng(0))
            sampled = evidence.log_weights([sampler.sample()[0] for _ in range(64)])
            true_deal = evidence.log_weights([[engine.hand(s) for s in range(1, 4)]])[0]
            gaps.append(true_deal - sampled.mean())
    assert len(gaps) > 5 and np.mean(gaps) > 0.5


def test_i14_belief_decisions_depend_only_on_my_observations_and_the_seed():
    """The same sequence of my observations, the same actions; reset() forgets the game."""
    seen, made = [], []
    engine, encoder = Engine(ROUND, seed=7), Encoder(ROUND)
    policy = load_policy(f"belief:{CKPT}:4", ROUND, 11)
    others = [load_policy("greedy", ROUND, k) for k in range(3)]
    while not engine.game_over:
        seat = engine.current
        obs = {"observation": encoder.observe(engine, seat), "action_mask": engine.legal_action_mask()}
        if seat == 0:
            seen.append(obs)
            made.append(policy.act(obs))
            engine.step(made[-1])
        else:
            engine.step(others[seat - 1].act(obs))
    assert policy.evidence.replays > 3
    again = load_policy(f"belief:{CKPT}:4", ROUND, 11)
    assert [again.act(obs) for obs in seen] == made
    again.reset()
    assert again.evidence.count == 0 and again.evidence._prev is None


def test_i14_belief_spec_forms_and_errors():
    policy = load_policy(f"belief:{CKPT}", ROUND, 0)
    assert policy.evidence is not None and policy.iterations == 64 and policy.ask_forced
    assert load_policy(f"belief:{CKPT}:ms=30", ROUND, 0).ms == 30.0
    assert spec_checkpoint(f"belief:{CKPT}:8") == CKPT
    validate_policy_spec(f"belief:{CKPT}:8", ROUND)
    with pytest.raises(ValueError, match="iterations must be a positive int"):
        load_policy(f"belief:{CKPT}:0", ROUND, 0)
    with pytest.raises(ValueError, match="needs a checkpoint path"):
        load_policy("belief", ROUND, 0)
    guide = NetworkGuide(load_policy(f"ppo:{CKPT}", ROUND, 0), ROUND)
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        OpponentEvidence(ROUND, guide, temperature=0.0)
    with pytest.raises(ValueError, match="max_events must be a positive int"):
        OpponentEvidence(ROUND, guide, max_events=0)


def test_i14_belief_results_are_identical_for_any_workers():
    specs = [f"belief:{CKPT}:4", "heuristic"]
    one = evaluate(specs, ROUND, deals=4, seed=2, workers=1, single_round=True)
    two = evaluate(specs, ROUND, deals=4, seed=2, workers=2, single_round=True)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
