"""`br:<target>` (cf_env/agents/best_response.py), the search best response: its spec forms
and the errors of bad ones (targets it cannot model, budgets out of bounds), decisions that
depend on the probe's observation only and are the same for a seed, the round's win share
as the score of a line, and that it beats targets that can be beaten (3x random, 3x greedy)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from positions import decisions, hidden_shuffle

from cf_env import ChickenFootConfig
from cf_env.agents.best_response import (
    DEFAULT_DETERMINIZATIONS,
    MAX_DETERMINIZATIONS,
    BestResponsePolicy,
    win_share,
)
from cf_env.agents.policies import load_policy, spec_checkpoint, validate_policy_spec
from cf_env.core.observation import Encoder
from training.evaluation.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(ROOT / "checkpoints" / "selfplay-4p-d9")
ROUND = ChickenFootConfig(num_rounds=1)


def test_br_spec_forms_build_the_policy_with_their_budget_and_target():
    default = load_policy("br:greedy", ROUND, 0)
    assert isinstance(default, BestResponsePolicy)
    assert (default.iterations, default.ms, default.target) == (DEFAULT_DETERMINIZATIONS, None,
                                                                "greedy")
    assert load_policy("br:heuristic:12", ROUND, 0).iterations == 12
    assert load_policy("br:random:ms=40", ROUND, 0).ms == 40.0
    assert load_policy(f"br:greedy:{MAX_DETERMINIZATIONS}", ROUND, 0).iterations == 10_000
    network = load_policy(f"br:ppo:{CKPT}:8", ROUND, 0)
    assert (network.iterations, network.target, network.kind) == (8, f"ppo:{CKPT}", None)
    assert spec_checkpoint(f"br:ppo:{CKPT}:8") == CKPT == spec_checkpoint(f"br:ppo:{CKPT}")
    assert spec_checkpoint("br:greedy:8") is None


@pytest.mark.parametrize(
    "spec, message",
    [
        ("br", "needs a target"),
        ("br:greedy:0", "iterations must be a positive int, at most 10000"),
        ("br:greedy:10001", "at most 10000"),
        ("br:greedy:1000000000000", "at most 10000"),
        ("br:greedy:ms=0", "ms must be a positive number of milliseconds, at most 60000"),
        ("br:greedy:ms=60001", "at most 60000"),
        ("br:greedy:ms=nan", "at most 60000"),
        ("br:ismcts:8", "the target is random, greedy, heuristic or ppo:<checkpoint>"),
        ("br:br:greedy:8", "got 'br:greedy'"),
        ("br:ppo:", "got 'ppo:'"),
        ("br:lookahead:checkpoints/selfplay-4p-d9-v3", "the target is random, greedy"),
        ("br:ppo:no/such/checkpoint:8", "no checkpoint at"),
    ],
)
def test_bad_br_specs_are_refused_naming_the_problem(spec, message):
    with pytest.raises(ValueError, match=message):
        validate_policy_spec(spec, ROUND)


def test_the_constructor_bounds_its_budget_and_its_target():
    with pytest.raises(ValueError, match="br iterations must be a positive int, at most 10000"):
        BestResponsePolicy(ROUND, 0, "greedy", determinizations=10_001)
    with pytest.raises(ValueError, match="br ms must be .* at most 60000"):
        BestResponsePolicy(ROUND, 0, "greedy", ms=1e9)
    with pytest.raises(ValueError, match="the target is random, greedy"):
        BestResponsePolicy(ROUND, 0, "ismcts")


def test_a_line_scores_the_probes_win_share_of_the_round():
    assert win_share([3, 10, 4, 8]) == 1.0
    assert win_share([3, 3, 4, 3]) == pytest.approx(1 / 3)
    assert win_share([4, 3, 4, 3]) == 0.0


@pytest.mark.parametrize("target", ["greedy", "heuristic", f"ppo:{CKPT}"])
def test_a_decision_reads_the_probes_observation_only_and_is_the_same_for_a_seed(target):
    """The same observation with the hidden tiles dealt again (another real game the probe
    cannot tell apart) gets the same move from a policy of the same seed; every move is legal."""
    encoder, rng = Encoder(ROUND), np.random.default_rng(5)
    checked = changed = 0
    for engine, obs in itertools.islice(decisions(ROUND, seed=6, share=1.0), 8):
        seat = engine.current
        twin = engine.clone()
        hands, boneyard = hidden_shuffle(engine, seat, rng)
        twin.redeal(hands, boneyard)
        changed += any(twin.hand(s) != engine.hand(s) for s in range(ROUND.num_players))
        seen = {"observation": encoder.observe(twin, seat),
                "action_mask": twin.legal_action_mask()}
        assert np.array_equal(seen["observation"], obs["observation"])
        first = load_policy(f"br:{target}:8", ROUND, seed=11).act(obs)
        again = load_policy(f"br:{target}:8", ROUND, seed=11).act(seen)
        assert first == again and obs["action_mask"][first] == 1
        checked += 1
    assert checked == 8 and changed >= 4


def test_a_game_of_decisions_is_the_same_for_a_seed():
    made = []
    for seed in (3, 3):
        policy = load_policy("br:heuristic:16", ROUND, seed)
        made.append([policy.act(obs) for _, obs in decisions(ROUND, seed=2, share=1.0)])
    assert made[0] == made[1] and len(made[0]) >= 5


def test_a_time_budget_runs_whole_chunks_until_the_time_is_spent():
    policy = load_policy("br:greedy:ms=5", ROUND, 0)
    for _, obs in itertools.islice(decisions(ROUND, seed=1, share=1.0), 3):
        assert obs["action_mask"][policy.act(obs)] == 1
        assert policy.last_iterations >= policy.CHUNK
        assert policy.last_iterations % policy.CHUNK == 0


def test_network_lines_go_through_one_forward_pass_per_step():
    policy = load_policy(f"br:ppo:{CKPT}:16", ROUND, 0)
    for _, obs in itertools.islice(decisions(ROUND, seed=4, share=1.0), 3):
        assert obs["action_mask"][policy.act(obs)] == 1
    # A round of ~30 steps per line: one pass per step for every line, not one per line.
    assert 0 < policy.network_calls < 3 * 16 * 4


@pytest.mark.parametrize("target, deals, floor", [("random", 40, 0.35), ("greedy", 40, 0.33)])
def test_it_beats_a_target_that_can_be_beaten(target, deals, floor):
    """Against 3x a beatable bot on duplicate single-round deals it wins well above parity
    (25%): the 95% interval's low end is above it (both measured at 50% on these 40 deals)."""
    result = evaluate([f"br:{target}:32", target], ROUND, deals, seed=0, single_round=True)
    rate = result["policies"][0]["win_rate"]
    assert rate["mean"] > floor and rate["ci_low"] > 0.25, rate
