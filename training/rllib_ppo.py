"""`python -m training.rllib_ppo`: multi-agent masked PPO on Ray RLlib, local or on a cluster.

    python -m training.rllib_ppo                                   # configs/rllib_ppo.yaml, local Ray
    python -m training.rllib_ppo --set env_runners.num_env_runners=8 --address auto   # a cluster
    python -m training.rllib_ppo --bench-sampling 1,2              # env steps/s per runner count

Needs the `rllib` extra (`pip install -e '.[rllib]'`); nothing else in the project imports Ray.
RLlib's new API stack throughout (RLModules, `MultiAgentEnvRunner`, connectors v2):

* **env** — our AEC env (`cf_env.env.raw_env`) behind `RLlibKeysWrapper` (observation keys
  renamed to the ones RLlib's action-masking module reads, see `training.rllib_compat`) behind
  RLlib's `PettingZooEnv`. `illegal_action` must stay "raise": an illegal action is never
  replaced or penalised, it stops the run. RLlib's random-action env check is switched off (it
  samples without the mask and would trip exactly that).
* **masking** — every learned seat runs RLlib's `ActionMaskingTorchRLModule` (logits of illegal
  actions pushed to the float minimum before sampling, in exploration, inference and training).
* **policy mapping** — `env.seats` lists one entry per seat: `learner` is the one shared policy
  (module `shared`); any other entry is a bot spec (`cf_env.policies.load_policy`), run by
  `BotRLModule` as module `bot<seat>` and never trained. `null` = every seat `learner`
  (shared-policy self-play).
* **seeding** — `seed` seeds RLlib (torch, per-runner seeds), every env (`runner_env_seed`: each
  runner and sub-env its own deal stream) and every bot (seed, runner, seat).
* **scale** — `env_runners.num_env_runners` sampling actors (0: sample in the driver),
  `learners.num_learners` learner actors (0: learn in the driver). `--address` joins a running
  Ray cluster (the `cf_env` and `training` packages are shipped to it); without it a local Ray
  instance starts.

Run directory (`<runs_dir>/<run-name>/`):

    config.yaml        the resolved config
    run.json           git revision, package versions (Ray included), env config, command
    progress.jsonl     one line per training iteration (steps, returns, win rate, losses, time)
    rllib/iter_<N>/    RLlib checkpoints (`Algorithm.from_checkpoint`), the last `keep_checkpoints`
    checkpoints/       exports of the shared policy in the project format (`step_<N>/` with
                       `card.json` + `policy.npz`, and `latest.json`): `ppo:<run dir>` plays it,
                       e.g. `python -m training.evaluate --agent ppo:runs/<run> --opponents greedy`
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import platform
import shutil
import sys
import time
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.agents.policies import load_policy
from cf_env.envs.env import raw_env

from . import checkpoints as ckpt
from .config import apply_override
from .provenance import create_run_dir, git_revision, package_versions
from .rllib_compat import (
    RLlibKeysWrapper,
    export_policy,
    from_rllib_observation,
    runner_env_seed,
)

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
        "training.rllib_ppo needs Ray RLlib: pip install -e '.[rllib]' "
        f"(the optional extra pinning a tested Ray version); import failed with: {_err}"
    ) from _err

LEARNER = "learner"  # the env.seats entry for the trained shared policy
SHARED = "shared"  # its RLModule id
ENV_NAME = "chicken_foot_v1"  # RLlib's registry name for `make_env`: the env's version
# Checkpoints written before v1 name the env "chicken_foot_v0"; it is registered too (the same
# creator, v1's infos: only this module's callback reads them) so that they still load.
LEGACY_ENV_NAMES = ("chicken_foot_v0",)
PACKAGES = ("numpy", "torch", "gymnasium", "pettingzoo", "ray")


# ------------------------------------------------------------------------------- config
@dataclass
class EnvSection:
    rules: dict = field(default_factory=dict)
    """Overrides of `cf_env.ChickenFootConfig` (empty = the default 4-player double-9 game)."""
    seats: list | None = None
    """One entry per seat: "learner" (the shared trained policy) or a bot spec; None = self-play."""


@dataclass
class EnvRunnerSection:
    num_env_runners: int = 2
    """Sampling actors (processes, on any node of the cluster); 0 samples in the driver."""
    num_envs_per_env_runner: int = 1
    """Envs stepped in lockstep inside each runner (batches the RLModule's forward pass)."""
    num_cpus_per_env_runner: float = 1
    """CPUs Ray reserves for each runner."""
    rollout_fragment_length: int | str = "auto"
    """Steps per runner per sample call; "auto" splits the train batch evenly among runners."""


@dataclass
class LearnerSection:
    num_learners: int = 0
    """Learner actors (data-parallel PPO updates); 0 learns in the driver process."""
    num_gpus_per_learner: float = 0
    """GPUs per learner actor (0: CPU)."""


@dataclass
class PPOSection:
    lr: float = 3e-4
    """Adam step size."""
    gamma: float = 0.995
    """Discount (a round is a few dozen decisions; rewards come at its end)."""
    lambda_: float = 0.95
    """GAE lambda."""
    clip_param: float = 0.2
    """PPO ratio clip."""
    entropy_coeff: float = 0.01
    """Entropy bonus."""
    vf_loss_coeff: float = 0.5
    """Value-loss weight."""
    vf_clip_param: float = 10.0
    """Value-loss clip (in reward units)."""
    kl_coeff: float = 0.0
    """Initial KL penalty coefficient (0: clipping only, as in training.ppo)."""
    grad_clip: float | None = 0.5
    """Global gradient-norm clip (None: none)."""
    train_batch_size_per_learner: int = 4000
    """Env steps per training iteration and learner."""
    minibatch_size: int = 512
    """SGD minibatch size."""
    num_epochs: int = 4
    """Passes over each train batch."""


@dataclass
class ModelSection:
    fcnet_hiddens: list = field(default_factory=lambda: [256, 256])
    """Hidden layer sizes of the MLP encoder."""
    fcnet_activation: str = "tanh"
    """"tanh" or "relu" (the exported format supports these two)."""
    vf_share_layers: bool = False
    """Share the encoder between policy and value function."""


@dataclass
class RLlibTrainConfig:
    run_name: str | None = None
    """Run directory name under `runs_dir`; None makes one from the config name and the time."""
    runs_dir: str = "runs"
    """Parent folder of run directories."""
    seed: int = 0
    """Seeds RLlib (torch, per-runner seeds), the envs and the bots."""
    iterations: int = 100
    """Training iterations (each samples `ppo.train_batch_size_per_learner` env steps per learner)."""
    checkpoint_every: int = 10
    """Iterations between checkpoints (the last iteration always writes one)."""
    keep_checkpoints: int = 3
    """Most recent RLlib checkpoints and exports kept on disk."""
    torch_threads: int = 1
    """torch.set_num_threads in the driver (the learner when num_learners is 0)."""
    object_store_memory_mb: int | None = None
    """Object store of a locally started Ray (None: Ray's default); ignored with --address."""
    env: EnvSection = field(default_factory=EnvSection)
    env_runners: EnvRunnerSection = field(default_factory=EnvRunnerSection)
    learners: LearnerSection = field(default_factory=LearnerSection)
    ppo: PPOSection = field(default_factory=PPOSection)
    model: ModelSection = field(default_factory=ModelSection)

    def rules(self) -> ChickenFootConfig:
        return ChickenFootConfig.from_dict(dict(self.env.rules))

    def seat_specs(self) -> list[str]:
        """The policy of each seat: LEARNER or a bot spec."""
        n = self.rules().num_players
        return [LEARNER] * n if self.env.seats is None else list(self.env.seats)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _coerce(value, kind, where: str):
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be a mapping of {kind.__name__} fields; got {value!r}")
        return _build(kind, value, where)
    options = (
        typing.get_args(kind)
        if typing.get_origin(kind) in (typing.Union, types.UnionType)
        else (kind,)
    )
    if value is None and type(None) in options:
        return None
    for option in options:
        base = typing.get_origin(option) or option
        if option is type(None):
            continue
        if base is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if base is int and isinstance(value, bool):
            continue
        if isinstance(value, base):
            return value
    names = " or ".join(getattr(o, "__name__", str(o)) for o in options)
    raise ValueError(f"{where} must be {names}; got {value!r}")


def _build(cls, data: dict, where: str = ""):
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in {where or 'config'}; valid: {sorted(names)}")
    return cls(**{
        name: _coerce(data[name], hints[name], f"{where}.{name}" if where else name)
        for name in names if name in data
    })


def config_from_dict(data: dict) -> RLlibTrainConfig:
    config = _build(RLlibTrainConfig, data)
    validate(config)
    return config


def load_config(path: str | os.PathLike | None = None, overrides=()) -> RLlibTrainConfig:
    """The config from a YAML file (or the defaults) with `section.field=value` overrides."""
    data: dict = {}
    if path is not None:
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a config file holds a mapping of sections")
    for assignment in overrides:
        apply_override(data, assignment)
    return config_from_dict(data)


def validate(config: RLlibTrainConfig) -> None:
    """Cross-field checks; raises ValueError naming the field and what would be valid."""
    rules = config.rules()
    if rules.illegal_action != "raise":
        raise ValueError(
            "env.rules.illegal_action must be 'raise' for RLlib training: actions are masked, so "
            "an illegal one is a bug to surface, never a move to penalise or replace"
        )
    positive = {
        "iterations": config.iterations,
        "checkpoint_every": config.checkpoint_every,
        "keep_checkpoints": config.keep_checkpoints,
        "torch_threads": config.torch_threads,
        "env_runners.num_envs_per_env_runner": config.env_runners.num_envs_per_env_runner,
        "ppo.train_batch_size_per_learner": config.ppo.train_batch_size_per_learner,
        "ppo.minibatch_size": config.ppo.minibatch_size,
        "ppo.num_epochs": config.ppo.num_epochs,
    }
    for name, value in positive.items():
        if value < 1:
            raise ValueError(f"{name} must be >= 1; got {value}")
    for name, value in (("env_runners.num_env_runners", config.env_runners.num_env_runners),
                        ("learners.num_learners", config.learners.num_learners),
                        ("seed", config.seed)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0; got {value}")
    fragment = config.env_runners.rollout_fragment_length
    if fragment != "auto" and (not isinstance(fragment, int) or fragment < 1):
        raise ValueError(f"env_runners.rollout_fragment_length must be 'auto' or >= 1; got {fragment!r}")
    model = config.model
    if model.fcnet_activation not in ckpt.ACTIVATIONS:
        raise ValueError(
            f"model.fcnet_activation must be one of {ckpt.ACTIVATIONS} (the exported policy "
            f"format); got {model.fcnet_activation!r}"
        )
    if not model.fcnet_hiddens or not all(
        isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in model.fcnet_hiddens
    ):
        raise ValueError(f"model.fcnet_hiddens must list positive layer sizes; got {model.fcnet_hiddens!r}")
    seats = config.seat_specs()
    if len(seats) != rules.num_players:
        raise ValueError(
            f"env.seats lists {len(seats)} seats for a {rules.num_players}-player game; give one "
            f"entry per seat ('{LEARNER}' or a bot spec) or null for self-play"
        )
    if LEARNER not in seats:
        raise ValueError(f"env.seats {seats!r}: at least one seat must be '{LEARNER}'")
    for seat, spec in enumerate(seats):
        if spec != LEARNER:
            make_bot(spec, rules, seed=0, where=f"env.seats[{seat}]")  # fails early, here
    if config.run_name is not None and ("/" in config.run_name or config.run_name in ("", ".", "..")):
        raise ValueError(f"run_name must be a plain folder name; got {config.run_name!r}")


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


# ------------------------------------------------------------------------------- bots
def make_bot(spec: str, rules: ChickenFootConfig, seed: int, where: str = "bot"):
    """A bot from its spec; refuses policies with per-game state (they need `reset()` calls)."""
    try:
        policy = load_policy(spec, rules, seed)
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(f"{where}: {err}") from err
    if callable(getattr(policy, "reset", None)):
        raise ValueError(
            f"{where}: policy {spec!r} keeps per-game state (it has reset()); a batched RLlib "
            "module cannot tell games apart, so use a stateless bot (random, greedy, ppo:<path>)"
        )
    return policy


def bot_seed(seed: int, worker_index: int, seat: int) -> int:
    state = np.random.SeedSequence(seed, spawn_key=(2, worker_index, seat)).generate_state(1)
    return int(state[0])


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
        for module_id in rl_module.keys():
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
            env_config={"rules": rules.to_dict(), "seed": config.seed,
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


# ------------------------------------------------------------------------------- run directory
def new_run_dir(config: RLlibTrainConfig, config_name: str, argv: list[str]) -> Path:
    run_dir = create_run_dir(config.runs_dir, config.run_name, f"{config_name}-s{config.seed}",
                             config.to_dict())
    info = {
        "trainer": "ray-rllib PPO (new API stack)",
        "env_config": config.rules().to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "packages": package_versions(PACKAGES),
        "platform": platform.platform(),
        "started": datetime.now().isoformat(timespec="seconds"),
        "argv": argv,
        "git": git_revision(),
    }
    (run_dir / "run.json").write_text(json.dumps(info, indent=2) + "\n")
    return run_dir


def summarize(result: dict, started: float) -> dict:
    """The few numbers of an RLlib result dict worth a progress line."""
    runners = result.get("env_runners", {})
    learner = result.get("learners", {}).get(SHARED, {})
    steps = int(result.get("num_env_steps_sampled_lifetime",
                           runners.get("num_env_steps_sampled_lifetime", 0)))
    line = {
        "iteration": int(result["training_iteration"]),
        "env_steps": steps,
        "episodes": int(runners.get("num_episodes_lifetime", 0)),
        "episode_len_mean": runners.get("episode_len_mean"),
        "return_mean_shared": runners.get("module_episode_returns_mean", {}).get(SHARED),
        "learner_win_rate": runners.get("learner_win_rate"),
        "entropy": learner.get("entropy"),
        "policy_loss": learner.get("policy_loss"),
        "vf_loss": learner.get("vf_loss"),
        "sample_s": result.get("timers", {}).get("env_runner_sampling_timer"),
        "iteration_s": result.get("time_this_iter_s"),
        "wall_s": round(time.time() - started, 1),
    }
    return {k: (float(v) if isinstance(v, (np.floating, float)) else v) for k, v in line.items()}


def save(algo, run_dir: Path, config: RLlibTrainConfig, iteration: int, steps: int) -> Path:
    """Write an RLlib checkpoint and the project-format export; move `latest`; prune old ones."""
    rllib_dir = run_dir / "rllib"
    rllib_dir.mkdir(exist_ok=True)
    target = rllib_dir / f"iter_{iteration:06d}"
    if not target.exists():
        tmp = rllib_dir / f".iter_{iteration:06d}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        algo.save_to_path(str(tmp.resolve()))
        os.rename(tmp, target)  # a complete checkpoint or none
    folder = run_dir / "checkpoints"
    export = folder / f"step_{steps:09d}"
    if not export.exists():
        export_policy(
            export, algo.get_module(SHARED), config.rules(), steps=steps,
            iteration=iteration, rllib_checkpoint=str(target.relative_to(run_dir)),
            train_config=config.to_dict(), git=git_revision(),
            ray_version=metadata.version("ray"),
        )
    ckpt.write_pointer(folder, "latest", export, steps=steps, iteration=iteration)
    for parent, prefix in ((rllib_dir, "iter_"), (folder, "step_")):
        old = sorted(p for p in parent.iterdir() if p.is_dir() and p.name.startswith(prefix))
        for path in old[: -config.keep_checkpoints]:
            if path != export:
                shutil.rmtree(path, ignore_errors=True)
    return export


# ------------------------------------------------------------------------------- training
def train(config: RLlibTrainConfig, run_dir: Path, *, address: str | None = None,
          log=print) -> Path:
    """Train for `config.iterations`; returns the last export (a `ppo:`-playable checkpoint)."""
    import torch

    torch.set_num_threads(config.torch_threads)
    init_ray(address, config)
    started = time.time()
    algo = algorithm_config(config).build_algo()
    export = None
    try:
        for iteration in range(1, config.iterations + 1):
            line = summarize(algo.train(), started)
            with open(run_dir / "progress.jsonl", "a") as handle:
                handle.write(json.dumps(line) + "\n")
            log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in line.items() if v is not None))
            if iteration % config.checkpoint_every == 0 or iteration == config.iterations:
                export = save(algo, run_dir, config, iteration, line["env_steps"])
    finally:
        algo.stop()
    return export


def _sample_steps(runner, n: int) -> int:
    return sum(e.env_steps() for e in runner.sample(num_timesteps=n, explore=True))


def _sample_all(group, count: int, n: int) -> list[int]:
    """`n` env steps on each runner (in parallel); on the driver's runner when `count` is 0."""
    if count == 0:
        return [_sample_steps(group.local_env_runner, n)]
    return group.foreach_env_runner(functools.partial(_sample_steps, n=n), local_env_runner=False)


def bench_sampling(config: RLlibTrainConfig, runner_counts: list[int], steps: int,
                   *, address: str | None = None) -> list[dict]:
    """Env steps/s sampled (exploration forward passes included, no learning) per runner count.

    Each count builds the algorithm, warms every runner up with one sample call, then times
    `steps` env steps split evenly over the runners (0: the driver samples).
    """
    init_ray(address, config)
    results = []
    for count in runner_counts:
        algo = algorithm_config(config, num_env_runners=count).build_algo()
        group = algo.env_runner_group
        per_runner = max(1, steps // max(count, 1))
        _sample_all(group, count, min(per_runner, 200))  # warm-up: envs built, modules traced
        start = time.perf_counter()
        sampled = sum(_sample_all(group, count, per_runner))
        wall = time.perf_counter() - start
        algo.stop()
        results.append({"env_runners": count, "env_steps": sampled, "seconds": round(wall, 2),
                        "env_steps_per_s": round(sampled / wall, 1)})
    return results


# ------------------------------------------------------------------------------- CLI
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m training.rllib_ppo",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="configs/rllib_ppo.yaml", help="YAML config file")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override a config field, e.g. --set env_runners.num_env_runners=4")
    parser.add_argument("--address", default=None,
                        help="Ray cluster to join ('auto' or host:port); a local Ray when absent")
    parser.add_argument("--bench-sampling", metavar="COUNTS", default=None,
                        help="measure sampling only: comma-separated env-runner counts, e.g. 1,2")
    parser.add_argument("--bench-steps", type=int, default=20_000,
                        help="env steps per measurement of --bench-sampling")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None):
    args = parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)
    config = load_config(args.config, args.set)
    if args.bench_sampling is not None:
        try:
            counts = [int(c) for c in args.bench_sampling.split(",")]
        except ValueError as err:
            raise SystemExit(f"--bench-sampling takes counts like 1,2; got {args.bench_sampling!r}") from err
        for row in bench_sampling(config, counts, args.bench_steps, address=args.address):
            print(json.dumps(row))
        return None
    run_dir = new_run_dir(config, Path(args.config).stem, argv)
    print(f"run directory: {run_dir}", file=sys.stderr)
    export = train(config, run_dir, address=args.address)
    print(f"exported policy: {export}  (play it as ppo:{run_dir})", file=sys.stderr)
    return export


if __name__ == "__main__":
    # Run through the importable module, not __main__, so that the classes Ray ships to its
    # workers (env, bot module, callbacks) are pickled by reference to `training.rllib_ppo`.
    from training.rllib_ppo import main as _main

    _main()
