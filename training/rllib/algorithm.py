"""The RLlib side of `python -m training.rllib_ppo`: everything that touches Ray's API. The env
RLlib steps (`ChickenFootRLlibEnv`, created by name through `make_env`), the never-trained bot
seats (`BotRLModule`), the callbacks (bot seeding, the learner's win rate), `algorithm_config`
(the `PPOConfig` a `training.rllib.config.RLlibTrainConfig` describes) and `init_ray`.

RLlib pickles these classes (and `map_agent`) by reference into its checkpoints;
`training.rllib.trainer` re-exports them under its name, where checkpoints written before this
module existed find them.
"""

from __future__ import annotations

import functools

import numpy as np

from cf_env import ChickenFootConfig
from cf_env.envs.env import raw_env
from training.rllib.compat import (
    RLlibKeysWrapper,
    bot_seed,
    from_rllib_observation,
    make_bot,
    runner_env_seed,
)
from training.rllib.config import LEARNER, RLlibTrainConfig

try:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
except ImportError as _err:  # the rest of the project never needs Ray
    raise ImportError(
        "python -m training.rllib_ppo (training.rllib.algorithm) needs Ray RLlib: pip install -e '.[rllib]' "
        f"(the optional extra pinning a tested Ray version); import failed with: {_err}"
    ) from _err

SHARED = "shared"  # the RLModule id of the trained shared policy (env.seats entry "learner")
ENV_NAME = "chicken_foot_v1"  # RLlib's registry name for `make_env`: the env's version
# Checkpoints written before v1 name the env "chicken_foot_v0"; it is registered too (the same
# creator, v1's infos: only this module's callback reads them) so that they still load.
LEGACY_ENV_NAMES = ("chicken_foot_v0",)


# ------------------------------------------------------------------------------- env
class ChickenFootRLlibEnv(PettingZooEnv):
    """RLlib's PettingZoo wrapper over our AEC env with RLlib's keys and per-runner seeds."""

    def __init__(self, rules: dict, seed: int = 0, worker_index: int = 0):
        self.worker_index = int(worker_index)
        aec = raw_env(**rules)
        # Seeded before RLlib's wrapper resets it, so that no deal is ever unseeded.
        aec.reset(seed=runner_env_seed(seed, self.worker_index))
        super().__init__(RLlibKeysWrapper(aec))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            seed = runner_env_seed(seed, self.worker_index)
        return super().reset(seed=seed, options=options)


def make_env(env_config) -> ChickenFootRLlibEnv:
    """RLlib's env creator: `env_config` is an `EnvContext` (a dict plus the runner's index)."""
    return ChickenFootRLlibEnv(
        dict(env_config.get("rules", {})),
        seed=int(env_config.get("seed", 0)),
        worker_index=int(getattr(env_config, "worker_index", 0) or 0),
    )


class BotRLModule(RLModule):
    """A fixed opponent inside RLlib: a project policy acting on each row of the batch.

    `model_config`: `spec` (policy spec), `env_config` (rules dict), `seed`, `seat`. The bot is
    re-seeded per env runner by `ChickenFootCallbacks.on_episode_created`.
    """

    def setup(self):
        cfg = self.model_config
        self.rules = ChickenFootConfig.from_dict(cfg["env_config"])
        self.spec, self.base_seed, self.seat = cfg["spec"], int(cfg["seed"]), int(cfg["seat"])
        self.reseed(0)

    def reseed(self, worker_index: int) -> None:
        self.worker_index = worker_index
        self.policy = make_bot(self.spec, self.rules,
                               bot_seed(self.base_seed, worker_index, self.seat))

    def _forward_inference(self, batch, **kwargs):
        obs = {k: np.asarray(v.cpu() if hasattr(v, "cpu") else v)
               for k, v in batch[Columns.OBS].items()}
        rows = len(next(iter(obs.values())))
        actions = [self.policy.act(from_rllib_observation({k: v[i] for k, v in obs.items()}))
                   for i in range(rows)]
        return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

    def _forward_exploration(self, batch, **kwargs):
        return self._forward_inference(batch, **kwargs)

    def _forward_train(self, batch, **kwargs):
        raise NotImplementedError(f"bot module ({self.spec}) is not trained")


class ChickenFootCallbacks(RLlibCallback):
    """Seeds bots per env runner; logs the learner seats' win rate (R13) against bots."""

    def on_episode_created(self, *, env_runner=None, rl_module=None, **kwargs):
        if env_runner is None or rl_module is None:
            return
        worker = int(env_runner.worker_index or 0)
        for module_id in rl_module.keys():  # noqa: SIM118 (a MultiRLModule, not a dict)
            module = rl_module[module_id]
            if isinstance(module, BotRLModule) and module.worker_index != worker:
                module.reseed(worker)

    def on_episode_end(self, *, episode, metrics_logger=None, env_runner=None, **kwargs):
        if metrics_logger is None or env_runner is None:
            return
        learners = env_runner.config.env_config.get("learner_agents", [])
        infos = episode.get_infos(-1)
        # The env's infos (chicken_foot_v1's schema): `game_over`, and each agent's `win`, its
        # share of the game's win (R13, ties split). A truncated game has no result.
        over = any(info.get("game_over") for info in infos.values())
        # In self-play every seat learns and the rate is 1/n by construction: not logged.
        if over and learners and len(learners) < len(infos):
            share = [float(infos[a]["win"]) if a in infos else 0.0 for a in learners]
            metrics_logger.log_value("learner_win_rate", float(np.mean(share)), window=200)


# ------------------------------------------------------------------------------- RLlib config
def map_agent(mapping: dict, agent_id, episode=None, **kwargs) -> str:
    return mapping[agent_id]


def algorithm_config(config: RLlibTrainConfig, num_env_runners: int | None = None) -> PPOConfig:
    """The RLlib `PPOConfig` for `config` (`num_env_runners` overrides the config's)."""
    from ray.tune.registry import register_env

    for name in (ENV_NAME, *LEGACY_ENV_NAMES):
        register_env(name, make_env)  # idempotent; RLlib looks the creator up by name
    rules = config.rules()
    seats = config.seat_specs()
    agents = [f"player_{s}" for s in range(rules.num_players)]
    mapping = {a: SHARED if spec == LEARNER else f"bot{s}"
               for s, (a, spec) in enumerate(zip(agents, seats))}
    probe = RLlibKeysWrapper(raw_env(**rules.to_dict()))
    obs_space, act_space = probe.observation_space(agents[0]), probe.action_space(agents[0])
    model = config.model
    specs = {
        SHARED: RLModuleSpec(
            module_class=ActionMaskingTorchRLModule,
            observation_space=obs_space,
            action_space=act_space,
            model_config=DefaultModelConfig(
                fcnet_hiddens=list(model.fcnet_hiddens),
                fcnet_activation=model.fcnet_activation,
                vf_share_layers=model.vf_share_layers,
                head_fcnet_hiddens=[],  # the policy head is one Linear: the exported format
            ),
        )
    }
    for seat, spec in enumerate(seats):
        if spec != LEARNER:
            specs[f"bot{seat}"] = RLModuleSpec(
                module_class=BotRLModule,
                observation_space=obs_space,
                action_space=act_space,
                model_config={"spec": spec, "env_config": rules.to_dict(), "seed": config.seed,
                              "seat": seat},
            )
    runners, p = config.env_runners, config.ppo
    return (
        PPOConfig()
        .environment(
            ENV_NAME,
            env_config={"rules": config.env_keywords(), "seed": config.seed,
                        "learner_agents": [a for a in agents if mapping[a] == SHARED]},
            # RLlib's checker steps random, unmasked actions: our engine rightly raises on them.
            disable_env_checking=True,
        )
        .multi_agent(
            policies=set(specs),
            policy_mapping_fn=functools.partial(map_agent, mapping),
            policies_to_train=[SHARED],
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .env_runners(
            num_env_runners=runners.num_env_runners if num_env_runners is None else num_env_runners,
            num_envs_per_env_runner=runners.num_envs_per_env_runner,
            num_cpus_per_env_runner=runners.num_cpus_per_env_runner,
            rollout_fragment_length=runners.rollout_fragment_length,
        )
        .learners(num_learners=config.learners.num_learners,
                  num_gpus_per_learner=config.learners.num_gpus_per_learner)
        .training(
            lr=p.lr, gamma=p.gamma, lambda_=p.lambda_, clip_param=p.clip_param,
            entropy_coeff=p.entropy_coeff, vf_loss_coeff=p.vf_loss_coeff,
            vf_clip_param=p.vf_clip_param, kl_coeff=p.kl_coeff, use_kl_loss=p.kl_coeff > 0,
            grad_clip=p.grad_clip, train_batch_size_per_learner=p.train_batch_size_per_learner,
            minibatch_size=p.minibatch_size, num_epochs=p.num_epochs,
        )
        # An env error (an illegal action included) must stop the run, not be retried away.
        .fault_tolerance(restart_failed_sub_environments=False)
        .callbacks(ChickenFootCallbacks)
        .debugging(seed=config.seed)
    )


def init_ray(address: str | None, config: RLlibTrainConfig) -> None:
    """Join the cluster at `address`, or start a local Ray (nothing if Ray is already up)."""
    if not ray.is_initialized():
        if address:
            import cf_env
            import training

            # Ship our two packages to the cluster's workers (they need numpy, gymnasium and
            # pettingzoo installed, which Ray's images have but pettingzoo).
            ray.init(address=address, runtime_env={"py_modules": [cf_env, training]})
        else:
            memory = config.object_store_memory_mb
            ray.init(include_dashboard=False,
                     object_store_memory=memory * 2**20 if memory else None)

