"""Ray RLlib integration: key adapter, seeds and export (no Ray needed), then training on RLlib.

The first group runs everywhere. The second needs the `rllib` extra and is skipped, with the
reason, when Ray is not installed; it trains a tiny game (2 players, double-6, one round) for two
iterations in the driver (no remote runners) and checks the run directory, that every sampled
action was legal in its observation's mask, seeding, and that the exported policy plays in
`training.evaluation.evaluate`.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cf_env import ChickenFootConfig
from cf_env.core.observation import observation_layout
from cf_env.envs.env import raw_env
from training.artifacts.checkpoints import load_ppo_policy, read_card
from training.rllib.compat import (
    MASK_KEY,
    RLLIB_OBS_KEY,
    RLlibKeysWrapper,
    actor_layers,
    export_policy,
    from_rllib_observation,
    runner_env_seed,
    to_rllib_observation,
)

TINY = {"num_players": 2, "max_pips": 6, "num_rounds": 1}
RAY_REASON = "Ray RLlib is not installed (optional extra: pip install -e '.[rllib]')"


def play_random(env, seed: int, on_observe) -> int:
    """Random legal game through an AEC env; `on_observe(env, agent, obs)` for each decision."""
    rng = np.random.default_rng(seed)
    steps = 0
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        on_observe(env, agent, obs)
        env.step(int(rng.choice(np.flatnonzero(obs[MASK_KEY]))))
        steps += 1
    return steps


# ----------------------------------------------------------------------------- key adapter
def test_adapter_renames_keys_and_round_trips_a_real_observation():
    env = raw_env(**TINY)
    env.reset(seed=3)
    original = env.observe(env.agent_selection)
    adapted = to_rllib_observation(original)
    assert set(adapted) == {RLLIB_OBS_KEY, MASK_KEY}
    assert adapted[MASK_KEY].dtype == np.float32  # RLlib's module takes log(mask)
    np.testing.assert_array_equal(adapted[RLLIB_OBS_KEY], original["observation"])
    np.testing.assert_array_equal(adapted[MASK_KEY], original[MASK_KEY])
    back = from_rllib_observation(adapted)
    assert back[MASK_KEY].dtype == np.int8
    np.testing.assert_array_equal(back["observation"], original["observation"])
    np.testing.assert_array_equal(back[MASK_KEY], original[MASK_KEY])


def test_adapter_rejects_wrong_keys_and_non_binary_masks():
    with pytest.raises(KeyError, match="'observation'"):
        to_rllib_observation({"observations": np.zeros(3), MASK_KEY: np.ones(2)})
    with pytest.raises(KeyError, match="'observations'"):
        from_rllib_observation({"observation": np.zeros(3), MASK_KEY: np.ones(2)})
    with pytest.raises(ValueError, match="only 0 and 1"):
        from_rllib_observation({RLLIB_OBS_KEY: np.zeros(3), MASK_KEY: np.array([0.0, 0.5])})


def test_keys_wrapper_observations_fit_its_spaces_and_carry_the_engine_mask():
    env = RLlibKeysWrapper(raw_env(**TINY))
    env.reset(seed=11)
    engine = env.unwrapped.engine

    def check(env, agent, obs):
        assert env.observation_space(agent).contains(obs)
        np.testing.assert_array_equal(obs[MASK_KEY], engine.legal_action_mask())

    assert play_random(env, 0, check) > 0


# ----------------------------------------------------------------------------- seeds
def test_runner_env_seeds_are_distinct_for_every_runner_and_sub_env():
    # RLlib hands sub-env i of runner w the seed `seed + w + i`; ours must tell them apart.
    base = 7
    seeds = {(w, i): runner_env_seed(base + w + i, w) for w in range(6) for i in range(6)}
    assert len(set(seeds.values())) == len(seeds)
    assert runner_env_seed(base + 1, 0) != runner_env_seed(base + 1, 1)  # RLlib's collision
    assert runner_env_seed(5, 2) == runner_env_seed(5, 2)
    with pytest.raises(ValueError, match="worker_index"):
        runner_env_seed(5, -1)


# ----------------------------------------------------------------------------- export
def _fake_rllib_module(sizes, activation):
    """A torch module shaped like RLlib's default PPO module (encoder MLP + pi head)."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    torch.manual_seed(0)
    act = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[activation]
    hidden = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        hidden += [torch.nn.Linear(a, b), act()]
    encoder = torch.nn.Sequential(*hidden)
    head = torch.nn.Sequential(torch.nn.Linear(sizes[-2], sizes[-1]))
    module = SimpleNamespace(
        encoder=SimpleNamespace(encoder=SimpleNamespace(net=SimpleNamespace(mlp=encoder))),
        pi=SimpleNamespace(net=SimpleNamespace(mlp=head)),
    )
    return module, lambda x: head(encoder(x))


@pytest.mark.slow
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_export_plays_the_same_logits_with_numpy_only(tmp_path, activation):
    torch = pytest.importorskip("torch")
    config = ChickenFootConfig(**TINY)
    size = observation_layout(config).size
    module, forward = _fake_rllib_module([size, 16, 8, config.num_actions], activation)
    target = export_policy(tmp_path / "export", module, config, steps=123, iteration=4)
    card = read_card(target)
    assert card["steps"] == 123 and card["iteration"] == 4
    assert card["activation"] == activation and card["net_arch"] == [16, 8]
    policy = load_ppo_policy(target, config=config)
    env = raw_env(**TINY)
    env.reset(seed=5)

    def check(env, agent, obs):
        with torch.no_grad():
            expected = forward(torch.as_tensor(obs["observation"])[None])[0].numpy()
        np.testing.assert_allclose(policy.logits(obs["observation"]), expected, rtol=1e-5,
                                   atol=1e-5)
        legal = np.flatnonzero(obs[MASK_KEY])
        assert policy.act(obs) == legal[np.argmax(expected[legal])]

    play_random(env, 1, check)
    with pytest.raises(FileExistsError):
        export_policy(target, module, config, steps=1)


def test_export_refuses_what_the_format_cannot_hold(tmp_path):
    torch = pytest.importorskip("torch")
    config = ChickenFootConfig(**TINY)
    size = observation_layout(config).size
    module, _ = _fake_rllib_module([size, 16, config.num_actions], "tanh")
    module.encoder.encoder.net.mlp.append(torch.nn.LayerNorm(16))
    with pytest.raises(ValueError, match="LayerNorm"):
        actor_layers(module)
    wrong, _ = _fake_rllib_module([size + 1, 16, config.num_actions], "tanh")
    with pytest.raises(ValueError, match="another config"):
        export_policy(tmp_path / "x", wrong, config, steps=0)
    assert not (tmp_path / "x").exists()


# ----------------------------------------------------------------------------- on RLlib
@pytest.fixture(scope="module")
def rllib():
    ray = pytest.importorskip("ray", reason=RAY_REASON)
    from training.rllib import trainer as rllib_ppo

    if not ray.is_initialized():
        ray.init(num_cpus=1, include_dashboard=False, object_store_memory=100 * 2**20,
                 log_to_driver=False)
    yield rllib_ppo
    ray.shutdown()


def tiny_config(rllib, tmp_path, **sections):
    data = {
        "runs_dir": str(tmp_path), "run_name": "tiny", "seed": 3, "iterations": 2,
        "checkpoint_every": 1, "keep_checkpoints": 1,
        "env": {"rules": dict(TINY), "seats": ["learner", "greedy"]},
        "env_runners": {"num_env_runners": 0},
        "ppo": {"train_batch_size_per_learner": 128, "minibatch_size": 64, "num_epochs": 1},
        "model": {"fcnet_hiddens": [16]},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return rllib.config_from_dict(data)


def assert_actions_legal(episodes) -> int:
    """Every action RLlib sampled was allowed by the mask of the observation it answered."""
    checked = 0
    for episode in episodes:
        for single in episode.agent_episodes.values():
            masks = single.get_observations(slice(None))[MASK_KEY]
            for mask, action in zip(masks, single.get_actions(slice(None))):
                assert mask[int(action)] == 1, (action, np.flatnonzero(mask))
                checked += 1
    return checked


def test_rllib_training_writes_checkpoints_and_an_export_that_evaluate_plays(rllib, tmp_path):
    torch = pytest.importorskip("torch")
    from ray.rllib.core.columns import Columns

    from training.evaluation.evaluate import evaluate

    config = tiny_config(rllib, tmp_path)
    run_dir = rllib.new_run_dir(config, "test", ["--test"])
    export = rllib.train(config, run_dir, log=lambda line: None)

    lines = [json.loads(x) for x in (run_dir / "progress.jsonl").read_text().splitlines()]
    assert [x["iteration"] for x in lines] == [1, 2]
    assert 0 < lines[0]["env_steps"] < lines[1]["env_steps"]
    assert lines[1]["episodes"] > 0 and 0.0 <= lines[1]["learner_win_rate"] <= 1.0
    rllib_ckpts = sorted((run_dir / "rllib").iterdir())
    assert [p.name for p in rllib_ckpts] == ["iter_000002"]  # keep_checkpoints=1 pruned iter 1
    assert (rllib_ckpts[0] / "rllib_checkpoint.json").is_file()
    latest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert latest["path"] == export.name and latest["steps"] == lines[1]["env_steps"]
    card = read_card(run_dir)  # the run directory resolves to its latest export
    assert card["env_config"] == ChickenFootConfig(**TINY).to_dict()
    assert card["rllib_checkpoint"] == "rllib/iter_000002"

    # The exported numpy policy computes the RLlib module's logits (restored from checkpoint).
    from ray.rllib.algorithms.algorithm import Algorithm

    algo = Algorithm.from_checkpoint(str(rllib_ckpts[0]))
    try:
        module = algo.get_module(rllib.SHARED)
        policy = load_ppo_policy(run_dir, config=config.rules())
        episodes = algo.env_runner.sample(num_timesteps=200, explore=True)
        assert assert_actions_legal(episodes) > 100
        obs = episodes[0].agent_episodes["player_0"].get_observations(slice(None))
        with torch.no_grad():
            out = module.forward_inference({Columns.OBS: {
                RLLIB_OBS_KEY: torch.as_tensor(obs[RLLIB_OBS_KEY]),
                MASK_KEY: torch.as_tensor(obs[MASK_KEY]),
            }})[Columns.ACTION_DIST_INPUTS].numpy()
        for row, vector, mask in zip(out, obs[RLLIB_OBS_KEY], obs[MASK_KEY]):
            if mask.any():  # the final observation of a game has an empty mask
                legal = mask.astype(bool)
                np.testing.assert_allclose(policy.logits(vector)[legal], row[legal], rtol=1e-4,
                                           atol=1e-4)
                # masked logits: RLlib can never pick an illegal action, even by sampling
                assert row[~legal].max() < -1e30
    finally:
        algo.stop()

    # ... and plays through training.evaluation.evaluate (which raises on any illegal action).
    result = evaluate([f"ppo:{run_dir}", "greedy"], config.rules(), deals=4, seed=1,
                      single_round=True)
    assert result["games"] == 8
    assert result["policies"][0]["name"] == f"ppo:{run_dir}"


def test_sampling_is_seeded_and_every_runner_deals_its_own_games(rllib, tmp_path):
    # A random bot on seat 0: its choices must follow the seed too.
    config = tiny_config(rllib, tmp_path, env={"seats": ["random", "learner"]})

    def sampled_games(cfg):
        algo = rllib.algorithm_config(cfg).build_algo()
        try:
            episodes = algo.env_runner.sample(num_timesteps=120, explore=True)
        finally:
            algo.stop()
        assert_actions_legal(episodes)
        return [[(aid, e.get_actions(slice(None)).tolist(),
                  e.get_observations(slice(None))[RLLIB_OBS_KEY].tobytes())
                 for aid, e in sorted(ep.agent_episodes.items())] for ep in episodes]

    first = sampled_games(config)
    assert first == sampled_games(config)
    assert first != sampled_games(tiny_config(rllib, tmp_path, seed=4,
                                              env={"seats": ["random", "learner"]}))

    # RLlib resets sub-env i of runner w with seed + w + i: runner 1's first sub-env and runner
    # 0's second get the same number, and must still deal different games.
    def first_hand(worker, vector):
        env = rllib.ChickenFootRLlibEnv(dict(TINY), seed=3, worker_index=worker)
        obs, _ = env.reset(seed=3 + worker + vector)
        return next(iter(obs.values()))[RLLIB_OBS_KEY].tobytes()

    hands = {first_hand(w, i) for w in range(3) for i in range(3)}
    assert len(hands) == 9
    assert first_hand(2, 1) == first_hand(2, 1)


def test_self_play_and_bot_seats_map_to_the_right_modules(rllib, tmp_path):
    selfplay = rllib.algorithm_config(tiny_config(rllib, tmp_path, env={"seats": None}))
    assert set(selfplay.policies) == {rllib.SHARED}
    assert {selfplay.policy_mapping_fn(a, None) for a in ("player_0", "player_1")} == {"shared"}
    bots = rllib.algorithm_config(tiny_config(rllib, tmp_path,
                                              env={"seats": ["random", "learner"]}))
    assert set(bots.policies) == {rllib.SHARED, "bot0"}
    assert bots.policy_mapping_fn("player_0", None) == "bot0"
    assert bots.policy_mapping_fn("player_1", None) == "shared"
    assert bots.policies_to_train == [rllib.SHARED]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"env": {"rules": {**TINY, "illegal_action": "penalize"}}}, "illegal_action"),
        ({"env": {"seats": ["learner"]}}, "one entry per seat"),
        ({"env": {"seats": ["greedy", "greedy"]}}, "at least one seat"),
        ({"env": {"seats": ["learner", "nosuchbot"]}}, "nosuchbot"),
        ({"model": {"fcnet_activation": "elu"}}, "fcnet_activation"),
        ({"env_runners": {"num_env_runners": -1}}, "num_env_runners"),
        ({"ppo": {"lr": "fast"}}, "ppo.lr"),
        ({"ppo": {"learning_rate": 1e-3}}, "unknown key"),
    ],
)
def test_bad_configs_raise_naming_the_field(rllib, tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(rllib, tmp_path, **change)


def test_bots_with_per_game_state_are_refused(rllib, tmp_path):
    from cf_env.agents.bots import RandomPolicy
    from cf_env.agents.policies import register_policy

    class Stateful(RandomPolicy):
        def reset(self):
            pass

    register_policy("test_rllib_stateful", Stateful)
    with pytest.raises(ValueError, match="per-game state"):
        tiny_config(rllib, tmp_path, env={"seats": ["learner", "test_rllib_stateful"]})
