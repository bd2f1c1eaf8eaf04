"""`lookahead:` search and the value head it reads: the spec forms and their errors,
legal and seed-reproducible decisions that never read hidden information, lines scored on the
critic's own reward scale, the privileged vector's layout, and a value entry checked as
strictly as the policy."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from positions import decisions

from cf_env import ChickenFootConfig
from cf_env.agents.checkpoint import CheckpointError, load_value_head
from cf_env.agents.ismcts import NetworkGuide
from cf_env.agents.lookahead import LookaheadPolicy
from cf_env.agents.policies import load_policy, spec_checkpoint, validate_policy_spec
from cf_env.core.observation import Encoder, privileged_layout
from cf_env.core.rewards import round_rewards, win_bonus

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(ROOT / "checkpoints" / "selfplay-4p-d9-v3")  # ships a value head (value.npz)
NO_VALUE = str(ROOT / "checkpoints" / "selfplay-4p-d9-v2")  # actor only
D9 = ChickenFootConfig()
ROUND = D9.replace(num_rounds=1)


def test_lookahead_spec_forms_load_through_load_policy():
    default = load_policy(f"lookahead:{CKPT}", D9, 0)
    assert isinstance(default, LookaheadPolicy)
    assert default.iterations == 64 and default.ms is None and default.horizon == 0
    assert load_policy(f"lookahead:{CKPT}:12", D9, 0).iterations == 12
    assert load_policy(f"lookahead:{CKPT}:ms=40", D9, 0).ms == 40.0
    assert spec_checkpoint(f"lookahead:{CKPT}:ms=40") == CKPT
    validate_policy_spec(f"lookahead:{CKPT}:4", ROUND)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("lookahead", "needs a checkpoint path"),
        (f"lookahead:{CKPT}:0", "iterations must be a positive int"),
        (f"lookahead:{CKPT}:ms=0", "ms must be a positive number"),
        (f"lookahead:{NO_VALUE}:8", "has no value head"),
        ("lookahead:no/such/checkpoint", "no checkpoint at"),
    ],
)
def test_bad_lookahead_specs_name_the_problem(spec, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        load_policy(spec, D9, 0)


def test_lookahead_checks_the_checkpoint_against_the_game():
    with pytest.raises(ValueError, match="num_players"):
        load_policy(f"lookahead:{CKPT}:5", ChickenFootConfig(num_players=3), 0)


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "agent"
    folder.mkdir()
    for name in ("card.json", "policy.npz", "value.npz"):
        shutil.copy2(Path(CKPT) / name, folder / name)
    return folder


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda c, f: c["value"].pop("sha256"), "missing 'sha256'"),
        (lambda c, f: c["value"]["reward"].update(episode="game"), "needs 'round'"),
        (lambda c, f: c["value"].update(inputs=["observation"]), "value inputs"),
        (lambda c, f: c["value"].update(net_arch=[256]), "layer sizes"),
        (lambda c, f: c["value"].update(activation="gelu"), "activation must be one of"),
        (lambda c, f: c["value"]["reward"].update(win_bonus="1"), "wrong type"),
        (lambda c, f: (f / "value.npz").write_bytes((f / "value.npz").read_bytes()[:-9]),
         "value.npz"),
        (lambda c, f: (f / "value.npz").unlink(), "missing, but card.json has a value entry"),
    ],
)
def test_a_bad_value_entry_or_file_is_refused_by_name(tmp_path, damage, message):
    folder = _copy(tmp_path)
    card = json.loads((folder / "card.json").read_text())
    damage(card, folder)
    (folder / "card.json").write_text(json.dumps(card))
    with pytest.raises(CheckpointError, match=message):
        load_value_head(folder, D9)


def test_value_head_drops_the_round_padding_exactly():
    """Single rounds: the folded first layer gives what the checkpoint's own layer gives on the
    zero-padded observation."""
    full, single = load_value_head(CKPT, D9), load_value_head(CKPT, ROUND)
    encoder, padded_encoder = Encoder(ROUND), Encoder(D9)
    rows, padded = [], []
    for engine, _ in itertools.islice(decisions(ROUND, seed=2), 5):
        seat = engine.current
        rows.append(np.concatenate([encoder.observe(engine, seat),
                                    encoder.privileged(engine, seat)]))
        obs = encoder.observe(engine, seat)
        stop = encoder.layout.slices["round"].stop
        obs = np.concatenate([obs[:stop], np.zeros(9, np.float32), obs[stop:]])
        assert obs.size == padded_encoder.layout.size
        padded.append(np.concatenate([obs, encoder.privileged(engine, seat)]))
    assert np.allclose(single.values(np.stack(rows)), full.values(np.stack(padded)), atol=1e-5)


def test_privileged_vector_is_the_hidden_tiles_egocentric():
    encoder, layout = Encoder(D9), privileged_layout(D9)
    for engine, _ in itertools.islice(decisions(D9, seed=3, share=1.0), 6):
        seat = engine.current
        view = layout.view(encoder.privileged(engine, seat))
        others = [(seat + k) % 4 for k in (1, 2, 3)]
        assert np.array_equal(view["opponent_hands"].reshape(3, -1), engine.hands[others])
        assert set(np.flatnonzero(view["boneyard"]).tolist()) == set(engine.boneyard)


def test_win_bonus_is_zero_sum_and_shared_by_tied_winners():
    assert win_bonus([3, 10, 20, 7], 1.0) == [0.75, -0.25, -0.25, -0.25]
    tied = win_bonus([3, 3, 20, 7], 2.0)
    assert tied == [0.5, 0.5, -0.5, -0.5] and abs(sum(tied)) < 1e-12


def test_lookahead_plays_legal_moves_reproducibly_with_batched_calls():
    moves = []
    for seed in (0, 0, 1):
        policy = load_policy(f"lookahead:{CKPT}:16", ROUND, seed)
        made = []
        for _, obs in itertools.islice(decisions(ROUND, seed=4, share=1.0), 6):
            action = policy.act(obs)
            assert obs["action_mask"][action] == 1
            made.append(action)
        moves.append(made)
        # One actor pass per batched step and one value pass per chunk, not one per line.
        assert 0 < policy.network_calls < 6 * 16
    assert moves[0] == moves[1]


def test_lookahead_scores_a_finished_round_on_the_critics_scale():
    policy = load_policy(f"lookahead:{CKPT}:4", ROUND, 0)
    assert policy.bonus == 1.0 and policy.reward_mode == "zero_sum"
    value, waiting = np.zeros(2), []
    policy._score_or_wait([[0, 12, 30, 6]], 1, value, waiting)
    policy._score_or_wait([], 0, value, waiting)
    assert waiting == [0]
    expected = round_rewards(ROUND, "zero_sum", [0, 12, 30, 6])[0] + 0.75
    assert value[1] == pytest.approx(expected)


def test_lookahead_to_the_rounds_end_needs_no_value_head():
    network = load_policy(f"ppo:{NO_VALUE}", ROUND, 0)
    policy = LookaheadPolicy(ROUND, 0, NetworkGuide(network, ROUND), None, 8, horizon=None)
    for _, obs in itertools.islice(decisions(ROUND, seed=5, share=1.0), 3):
        assert obs["action_mask"][policy.act(obs)] == 1
    with pytest.raises(ValueError, match="must play to the round's end"):
        LookaheadPolicy(ROUND, 0, NetworkGuide(network, ROUND), None, 8)
    with pytest.raises(ValueError, match="horizon must be"):
        LookaheadPolicy(ROUND, 0, NetworkGuide(network, ROUND), None, 8, horizon=-1)


def test_a_heavy_prior_weight_plays_the_actors_own_choice():
    network = load_policy(f"ppo:{CKPT}", ROUND, 0)
    policy = LookaheadPolicy(ROUND, 0, NetworkGuide(network, ROUND), load_value_head(CKPT, ROUND),
                             4, prior_weight=1e6)
    for _, obs in itertools.islice(decisions(ROUND, seed=6, share=1.0), 5):
        assert policy.act(obs) == network.act(obs)
    with pytest.raises(ValueError, match="prior_weight must be"):
        LookaheadPolicy(ROUND, 0, NetworkGuide(network, ROUND), load_value_head(CKPT, ROUND), 4,
                        prior_weight=-1.0)


def test_root_statistics_score_every_legal_move_on_the_search_act_plays():
    """Every legal move is scored on each determinization (a flat search visits them all
    equally) and the move of highest mean value is the one `act` plays from the same seed."""
    network = load_policy(f"ppo:{CKPT}", ROUND, 0)
    value = load_value_head(CKPT, ROUND)

    def search(seed):
        return LookaheadPolicy(ROUND, seed, NetworkGuide(network, ROUND), value, 6)

    checked = 0
    for _, obs in itertools.islice(decisions(ROUND, seed=8, share=1.0), 6):
        mask = obs["action_mask"].astype(bool)
        visits, totals = search(3).root_statistics(obs)
        if mask.sum() == 1:
            assert visits[mask].tolist() == [1] and not totals.any()
            continue
        assert (visits[mask] == 6).all() and not visits[~mask].any() and not totals[~mask].any()
        mean = totals[mask] / 6
        best = np.flatnonzero(mask)[mean == mean.max()]
        assert search(3).act(obs) in best.tolist()
        checked += 1
    assert checked >= 3


def test_root_statistics_refuse_a_belief_search():
    policy = load_policy(f"belief:{CKPT}:4", ROUND, 0)
    _, obs = next(iter(decisions(ROUND, seed=8, share=1.0)))
    with pytest.raises(ValueError, match="uniform deals only"):
        policy.root_statistics(obs)
