"""Search-distilled self-play (expert iteration, `selfplay.search_share`): the collector's search
targets, the distillation loss, the config checks, a tiny run end to end, and that share 0 is
plain PPO (docs/training.md, "Search-distilled self-play")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

try:  # pytest.importorskip's skip, written so that the imports below may follow it
    import torch
except ImportError:
    pytest.skip("the train extra (torch) is not installed", allow_module_level=True)

from variants import FIXED

from cf_env import ChickenFootConfig
from cf_env.agents import ismcts, lookahead
from cf_env.core.observation import observation_layout
from cf_env.envs.env import raw_env
from training import ppo
from training.artifacts import checkpoints as ckpt
from training.config import (
    MAX_SEARCH_DETERMINIZATIONS,
    MAX_SEARCH_ITERATIONS,
    SEARCH_TARGETS,
    load_config,
)
from training.selfplay.collection import build_mlp, build_networks
from training.selfplay.collector import ILLEGAL_LOGIT, Collector, compute_gae, privileged_size
from training.selfplay.learner import load_critic, ppo_update
from training.selfplay.targets import C_VISIT, TargetPlayer, best_target, improved_target

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "configs" / "smoke.yaml")
BOTS = {"greedy": 1.0, "random": 1.0, "heuristic": 1.0}
TEACHER = str(ROOT / "checkpoints" / "selfplay-4p-d9")  # ships a value head (value.npz)


def nets(config: ChickenFootConfig, seed: int = 0):
    torch.manual_seed(seed)
    obs = observation_layout(config).size
    actor = build_mlp([obs, 16, config.num_actions], "tanh", 1.0)  # gain 1: a peaked prior
    critic = build_mlp([obs + privileged_size(config), 16, 1], "tanh", 1.0)
    return actor, critic


# One table per set and player count the variants' fixed configs cover, a variant rule in each.
TABLES = [ChickenFootConfig(**fixed) for fixed in FIXED[:6]]


@pytest.mark.parametrize("form", SEARCH_TARGETS)
@pytest.mark.parametrize("config", TABLES, ids=lambda c: f"d{c.max_pips}-{c.num_players}p")
def test_search_targets_are_distributions_over_the_legal_actions(config, form):
    actor, critic = nets(config)
    collector = Collector(config, 2, seed=3, pool_share=0.3, bots=BOTS, search_share=1.0,
                          search_iterations=12, search_target=form, search_scale=1.0)
    roll = collector.collect(actor, critic, 4)
    assert roll.searched.all()
    target, mask = roll.target.astype(np.float64), roll.mask
    np.testing.assert_allclose(target.sum(1), 1.0, atol=1e-6)
    assert (target >= 0).all() and not target[~mask].any()  # no mass on an illegal action
    rows = np.arange(len(roll.action))
    assert mask[rows, roll.action].all() and (target[rows, roll.action] > 0).all()
    # The behaviour log-probability is the actor's, of the action the search played.
    obs = torch.from_numpy(roll.state[:, : observation_layout(config).size])
    with torch.no_grad():
        logits = actor(obs).masked_fill(~torch.from_numpy(mask), ILLEGAL_LOGIT)
        logp = torch.log_softmax(logits, 1)[rows, roll.action].numpy()
    np.testing.assert_allclose(roll.logp, logp, rtol=1e-5, atol=1e-5)


def test_the_target_is_the_root_visit_counts_sharpened_by_the_temperature():
    config = ChickenFootConfig()
    actor, critic = nets(config)
    warm = Collector(config, 2, seed=4, pool_share=0.3, bots=BOTS, search_share=1.0,
                     search_iterations=40, search_temperature=1.0)
    cold = Collector(config, 2, seed=4, pool_share=0.3, bots=BOTS, search_share=1.0,
                     search_iterations=40, search_temperature=0.25)
    a, b = warm.collect(actor, critic, 1), cold.collect(actor, critic, 1)
    # The same seeds search the same trees: visits^(1/T) normalised.
    expected = a.target.astype(np.float64) ** 4
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(b.target, expected, atol=1e-5)
    np.testing.assert_allclose(a.target * 40, np.round(a.target * 40), atol=1e-4)  # counts / 40


def test_the_improved_target_tilts_the_prior_by_the_searchs_mean_rewards():
    mask = np.array([True, True, False, True, True])
    prior = np.array([0.4, 0.3, 0.0, 0.2, 0.1])
    visits = np.array([6, 3, 0, 1, 0])
    totals = np.array([0.6, -0.3, 0.0, 0.5, 0.0])  # Q = 0.1, -0.1, -, 0.5; action 4 unvisited
    # Scale 0 is the prior itself; illegal actions get nothing at any scale.
    np.testing.assert_allclose(improved_target(visits, totals, mask, prior, 0.0), prior, atol=1e-6)
    target = improved_target(visits, totals, mask, prior, 0.2).astype(np.float64)
    assert target[2] == 0 and target.sum() == pytest.approx(1.0)
    q = np.array([0.1, -0.1, 0.0, 0.5, 0.0])
    q[4] = (0.4 * 0.1 + 0.3 * -0.1 + 0.2 * 0.5) / 0.9  # unvisited: the prior-weighted mean
    logits = np.log(prior[mask]) + (C_VISIT + 6) * 0.2 * q[mask]
    expected = np.exp(logits - logits.max())
    np.testing.assert_allclose(target[mask], expected / expected.sum(), rtol=1e-5)
    assert target.argmax() == 3  # the best mean reward beats the prior's favourite


def test_the_best_target_splits_its_mass_over_the_moves_of_highest_mean_reward():
    mask = np.array([True, True, False, True, True])
    prior = np.array([0.4, 0.3, 0.0, 0.2, 0.1])
    visits = np.array([4, 4, 0, 4, 0])
    totals = np.array([2.0, -1.0, 9.0, 2.0, 0.0])  # Q = 0.5, -0.25, (illegal), 0.5, unvisited
    np.testing.assert_array_equal(best_target(visits, totals, mask, prior), [0.5, 0, 0, 0.5, 0])
    totals[3] = 2.4
    np.testing.assert_array_equal(best_target(visits, totals, mask, prior), [0, 0, 0, 1, 0])
    # Nothing visited: the prior over the legal actions.
    nothing = np.zeros(5, np.int64)
    np.testing.assert_allclose(best_target(nothing, totals, mask, prior), prior, atol=1e-6)


def test_the_lookahead_operator_labels_each_searched_row_with_its_best_move():
    """With the flat search as the operator, each searched row's target is one-hot (or split
    over ties) on a legal move, and the move played is drawn from that target."""
    config = ChickenFootConfig()
    actor, critic = nets(config)
    collector = Collector(config, 2, seed=6, pool_share=0.3, bots=BOTS, search_share=1.0,
                          search_iterations=3, search_operator="lookahead",
                          search_teacher=TEACHER, search_target="best")
    assert isinstance(collector.search, lookahead.LookaheadPolicy)
    assert collector.search.iterations == 3
    roll = collector.collect(actor, critic, 4)
    assert roll.searched.all()
    target, mask = roll.target.astype(np.float64), roll.mask
    rows = np.arange(len(roll.action))
    assert not target[~mask].any() and (target[rows, roll.action] > 0).all()
    top = target.max(1, keepdims=True)
    np.testing.assert_allclose(target[target > 0], np.broadcast_to(top, target.shape)[target > 0])
    assert (target.max(1) == 1).sum() >= len(rows) // 2  # ties are rare among scored moves


@pytest.mark.parametrize("assignments, field", [
    (["selfplay.search_operator=mcts"], "selfplay.search_operator"),
    (["selfplay.search_share=0.1", "selfplay.search_operator=lookahead"],
     "selfplay.search_teacher"),
    (["selfplay.search_teacher=''"], "selfplay.search_teacher"),
    (["selfplay.search_share=0.1", "selfplay.search_operator=lookahead",
      f"selfplay.search_teacher={TEACHER}", "selfplay.search_target=visits"],
     "selfplay.search_target"),
    (["selfplay.search_operator=lookahead", f"selfplay.search_teacher={TEACHER}",
      "selfplay.search_target=best", f"selfplay.search_iterations={MAX_SEARCH_DETERMINIZATIONS + 1}"],
     "selfplay.search_iterations"),
])
def test_bad_lookahead_operator_settings_are_refused_naming_the_field(assignments, field):
    with pytest.raises(ValueError, match=rf"^{field} must be"):
        load_config(SMOKE, assignments)


@pytest.mark.parametrize("teacher, problem", [
    ("selfplay-4p-d9-v2", "no value head"),  # an actor only
    ("selfplay-2p-d6", "num_players"),  # another game
])
def test_a_lookahead_teacher_that_cannot_score_this_game_is_refused_before_collection(
        teacher, problem):
    from training.selfplay.learner import SelfPlayTrainer

    path = str(ROOT / "checkpoints" / teacher)
    config = load_config(SMOKE, ["selfplay.search_share=0.5", "selfplay.search_operator=lookahead",
                                 f"selfplay.search_teacher={path}", "selfplay.search_target=best"])
    with pytest.raises(ValueError, match=rf"^selfplay.search_teacher {path}: .*{problem}"):
        SelfPlayTrainer(config, seed=0)


def test_the_target_player_plays_legal_moves_by_its_target():
    config = ChickenFootConfig(num_players=2, max_pips=6)
    path = str(ROOT / "checkpoints" / "selfplay-2p-d6")
    env = raw_env(num_players=2, max_pips=6)
    players = [TargetPlayer(config, seed=seed, checkpoint=path, iterations=8, form=form,
                            play=play)
               for seed, (form, play) in enumerate([("improved", "sample"), ("visits", "argmax")])]
    env.reset(seed=2)
    decisions = 0
    for _ in env.agent_iter(max_iter=200):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = players[decisions % 2].act(obs)
        assert obs["action_mask"][action]
        decisions += 1
        env.step(action)
    assert decisions > 10
    with pytest.raises(ValueError, match="search target must be one of visits, improved"):
        TargetPlayer(config, checkpoint=path, iterations=8, form="gumbel")


def test_the_critic_can_start_from_a_shipped_value_head():
    from cf_env.agents.checkpoint import load_value_head

    shipped = str(ROOT / "checkpoints" / "selfplay-4p-d9")
    config = load_config(ROOT / "configs" / "selfplay-4p-d9-xit.yaml",
                         [f"selfplay.init_critic={shipped}"])
    _, critic = build_networks(config)
    load_critic(critic, shipped, config)
    head = load_value_head(shipped, config.rules())
    rows = np.random.default_rng(0).random((6, head.input_size)).astype(np.float32)
    with torch.no_grad():
        np.testing.assert_allclose(critic(torch.from_numpy(rows))[:, 0].numpy(),
                                   head.values(rows), atol=1e-5)
    other = load_config(ROOT / "configs" / "selfplay-4p-d9-xit.yaml", ["selfplay.win_bonus=0"])
    with pytest.raises(ValueError, match=r"init_critic .*fitted for the reward .*'win_bonus': 3.0"):
        load_critic(build_networks(other)[1], shipped, other)
    blind = load_config(ROOT / "configs" / "selfplay-4p-d9-xit.yaml",
                        ["selfplay.privileged_critic=false"])
    with pytest.raises(ValueError, match="set selfplay.privileged_critic=true"):
        load_critic(build_networks(blind)[1], shipped, blind)


def test_distillation_loss_falls_on_a_fixed_batch_of_targets():
    """A deterministic tiny fit: updates on one rollout of search targets, PPO's surrogate off,
    bring the actor's cross-entropy to the targets down."""
    config = load_config(SMOKE, ["ppo.net_arch=[16]", "selfplay.search_share=1.0",
                                 "selfplay.search_ppo_loss=false", "ppo.n_epochs=4",
                                 "ppo.learning_rate=0.01", "ppo.ent_coef=0.0",
                                 "ppo.target_kl=null"])
    torch.manual_seed(0)
    actor, critic = build_networks(config)
    collector = Collector(config.rules(), 4, seed=1, pool_share=0.3, bots=BOTS, search_share=1.0,
                          search_iterations=16)
    roll = collector.collect(actor, critic, 16)
    compute_gae(roll, 0.99, 0.95)
    optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=0.01)
    generator = torch.Generator().manual_seed(0)
    losses = [ppo_update(actor, critic, optimizer, roll, config, generator)["distill_loss"]
              for _ in range(6)]
    assert losses[-1] < 0.8 * losses[0], losses
    assert all(np.isfinite(losses))


def test_searched_decisions_are_left_out_of_the_ppo_surrogate():
    """The PPO policy loss reads only the decisions the actor played: changing the advantages
    of the searched rows does not change it."""
    config = load_config(SMOKE, ["ppo.net_arch=[16]", "selfplay.search_share=0.5",
                                 "ppo.n_epochs=1", "ppo.batch_size=1024"])
    torch.manual_seed(0)
    actor, critic = build_networks(config)
    collector = Collector(config.rules(), 4, seed=2, pool_share=0.3, bots=BOTS, search_share=0.5,
                          search_iterations=8)
    roll = collector.collect(actor, critic, 8)
    compute_gae(roll, 0.99, 0.95)
    assert 0 < roll.searched.sum() < len(roll.searched)
    assert not roll.target[~roll.searched].any()

    def policy_loss(advantage):
        roll.advantage = advantage.astype(np.float32)
        a, c = build_networks(config)
        a.load_state_dict(actor.state_dict())
        c.load_state_dict(critic.state_dict())
        opt = torch.optim.Adam([*a.parameters(), *c.parameters()], lr=0.0)
        return ppo_update(a, c, opt, roll, config, torch.Generator().manual_seed(0))["policy_loss"]

    # Behaviour log-probabilities off the actor's, so that the ratios are not all 1 (where the
    # surrogate is the normalised advantages' mean, 0 whatever they are).
    roll.logp = roll.logp - np.random.default_rng(0).uniform(0, 0.1, len(roll.logp)).astype(np.float32)
    base = roll.advantage.copy()
    changed = base.copy()
    changed[roll.searched] += 100.0
    assert policy_loss(changed) == pytest.approx(policy_loss(base), abs=1e-7)
    changed = base.copy()
    changed[np.flatnonzero(~roll.searched)[:5]] += 3.0
    assert policy_loss(changed) != pytest.approx(policy_loss(base), abs=1e-4)


@pytest.mark.parametrize("assignment, field", [
    ("selfplay.search_share=1.5", "selfplay.search_share"),
    ("selfplay.search_share=-0.1", "selfplay.search_share"),
    ("selfplay.search_iterations=0", "selfplay.search_iterations"),
    (f"selfplay.search_iterations={MAX_SEARCH_ITERATIONS + 1}", "selfplay.search_iterations"),
    ("selfplay.search_temperature=0", "selfplay.search_temperature"),
    ("selfplay.search_temperature=.nan", "selfplay.search_temperature"),
    ("selfplay.search_play=best", "selfplay.search_play"),
    ("selfplay.search_target=gumbel", "selfplay.search_target"),
    ("selfplay.search_scale=-0.5", "selfplay.search_scale"),
    ("selfplay.search_scale=11", "selfplay.search_scale"),
    ("selfplay.distill_coef=-1", "selfplay.distill_coef"),
    ("selfplay.search_ppo_loss=false", "selfplay.search_ppo_loss"),  # share 0: nothing trains
])
def test_bad_search_settings_are_refused_naming_the_field(assignment, field):
    with pytest.raises(ValueError, match=rf"^{field} must be"):
        load_config(SMOKE, [assignment])


def test_the_iteration_bound_is_the_searchs_own_cap():
    assert MAX_SEARCH_ITERATIONS == ismcts.MAX_ITERATIONS
    assert MAX_SEARCH_DETERMINIZATIONS == lookahead.MAX_DETERMINIZATIONS


def test_share_zero_collects_exactly_the_plain_ppo_rollout():
    """search_share 0 draws nothing new: the same seed gives the same numbers in every array as
    a collector built without any search setting, and no row is searched."""
    config = ChickenFootConfig()
    actor, critic = nets(config)
    plain = Collector(config, 4, seed=5, pool_share=0.5, bots=BOTS)
    zero = Collector(config, 4, seed=5, pool_share=0.5, bots=BOTS, search_share=0.0,
                     search_iterations=500, search_temperature=0.1, search_play="argmax")
    assert zero.search is None
    for _ in range(2):
        a, b = plain.collect(actor, critic, 12), zero.collect(actor, critic, 12)
        for name, array in vars(a).items():
            if array is not None:
                np.testing.assert_array_equal(getattr(b, name), array, err_msg=name)
        assert not b.searched.any() and not b.target.any()


@pytest.mark.slow
def test_a_tiny_expert_iteration_run_writes_a_checkpoint_that_plays(tmp_path):
    args = ["--config", SMOKE, "--set", f"runs_dir={tmp_path}", "--set", "run_name=xit",
            "--set", "progress_bar=false", "--set", "total_steps=1024",
            "--set", "eval.every_steps=0", "--set", "selfplay.search_share=0.5",
            "--set", "selfplay.search_iterations=8"]
    ppo.main(args)
    run = tmp_path / "xit"
    card = ckpt.read_card(ckpt.resolve_checkpoint(run))
    assert card["steps"] == 1024
    assert card["train_config"]["selfplay"]["search_share"] == 0.5
    from cf_env.agents.policies import load_policy

    policy = load_policy(f"ppo:{run}", ChickenFootConfig(), seed=0)
    env = raw_env()
    env.reset(seed=7)
    for _ in env.agent_iter(max_iter=150):
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else policy.act(obs)
        assert action is None or obs["action_mask"][action]
        env.step(action)


def test_the_expert_iteration_recipe_loads_and_starts_from_the_shipped_actor():
    from training.selfplay.learner import load_actor

    config = load_config(ROOT / "configs" / "selfplay-4p-d9-xit.yaml")
    assert 0 < config.selfplay.search_share < 1 and config.selfplay.search_ppo_loss
    actor, _ = build_networks(config)
    load_actor(actor, str(ROOT / config.selfplay.init_actor), config)  # shapes match


def test_a_collector_process_hands_over_the_search_targets_too():
    """The targets and flags travel through the worker's shared-memory block unchanged."""
    from training.selfplay.collection import LocalCollection, ProcessCollection

    config = load_config(SMOKE, ["ppo.net_arch=[16]", "selfplay.num_games=4",
                                 "selfplay.rollout_steps=6", "selfplay.search_share=0.5",
                                 "selfplay.search_iterations=8"])
    actor, critic = build_networks(config)
    local = LocalCollection(config, seed=3, snapshots=[])
    remote = ProcessCollection(config, seed=3, snapshots=[])
    try:
        mine, _ = local.collect(actor, critic, [])
        theirs, _ = remote.collect(actor, critic, [])
    finally:
        remote.close()
    assert mine.searched.any()
    for name, array in vars(mine).items():
        np.testing.assert_array_equal(getattr(theirs, name), array, err_msg=name)


def test_root_visits_count_the_search_that_act_plays_the_most_visited_of():
    config = ChickenFootConfig()
    env = raw_env()
    env.reset(seed=11)
    for _ in env.agent_iter(max_iter=40):
        obs, _, term, trunc, _ = env.last()
        if not term and not trunc and obs["action_mask"].sum() > 1:
            break
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    visits = ismcts.ISMCTSPolicy(config, seed=5, iterations=50).root_visits(obs)
    played = ismcts.ISMCTSPolicy(config, seed=5, iterations=50).act(obs)
    assert visits.sum() == 50 and not visits[obs["action_mask"] == 0].any()
    assert visits[played] == visits.max()
