"""The RLlib trainer's config (`python -m training.rllib_ppo`, `configs/rllib_ppo.yaml`): typed
frozen dataclasses with a docstring per field, read by the project's one config loader
(`training.config.dataclass_from_dict`: unknown keys and wrong types refused naming the dotted
key, sections merged over their defaults, "1e-4" read as a number) and checked by `validate`.

Ray-free: a config can be written, loaded and checked (bot seats included) without the `rllib`
extra; only `training.rllib.algorithm` turns it into RLlib's `PPOConfig`.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from cf_env.core.config import ChickenFootConfig, split_options
from training.artifacts.checkpoints import ACTIVATIONS
from training.config import dataclass_from_dict, read_config_data
from training.rllib.compat import make_bot

LEARNER = "learner"  # the env.seats entry for the trained shared policy


@dataclass(frozen=True)
class EnvSection:
    rules: dict = field(default_factory=dict)
    """Overrides of `cf_env.ChickenFootConfig` and of the env's driver options (`skip_forced`,
    `reward_mode`, `illegal_action`) in one mapping (empty = the default 4-player double-9 game)."""
    seats: list | None = None
    """One entry per seat: "learner" (the shared trained policy) or a bot spec; None = self-play."""


@dataclass(frozen=True)
class EnvRunnerSection:
    num_env_runners: int = 2
    """Sampling actors (processes, on any node of the cluster); 0 samples in the driver."""
    num_envs_per_env_runner: int = 1
    """Envs stepped in lockstep inside each runner (batches the RLModule's forward pass)."""
    num_cpus_per_env_runner: float = 1
    """CPUs Ray reserves for each runner."""
    rollout_fragment_length: int | str = "auto"
    """Steps per runner per sample call; "auto" splits the train batch evenly among runners."""


@dataclass(frozen=True)
class LearnerSection:
    num_learners: int = 0
    """Learner actors (data-parallel PPO updates); 0 learns in the driver process."""
    num_gpus_per_learner: float = 0
    """GPUs per learner actor (0: CPU)."""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class ModelSection:
    fcnet_hiddens: list = field(default_factory=lambda: [256, 256])
    """Hidden layer sizes of the MLP encoder."""
    fcnet_activation: str = "tanh"
    """"tanh" or "relu" (the exported format supports these two)."""
    vf_share_layers: bool = False
    """Share the encoder between policy and value function."""


@dataclass(frozen=True)
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
        return split_options(self.env.rules)[0]

    def env_keywords(self) -> dict:
        """`env.rules` resolved: every rule and driver option, the env's keywords."""
        rules, options = split_options(self.env.rules)
        return {**rules.to_dict(), **options.to_dict()}

    def seat_specs(self) -> list[str]:
        """The policy of each seat: LEARNER or a bot spec."""
        n = self.rules().num_players
        return [LEARNER] * n if self.env.seats is None else list(self.env.seats)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def config_from_dict(data: dict) -> RLlibTrainConfig:
    """The config a nested dict describes, checked (types, ranges, seats)."""
    config = dataclass_from_dict(RLlibTrainConfig, data)
    validate(config)
    return config


def load_config(path: str | os.PathLike | None = None, overrides=()) -> RLlibTrainConfig:
    """The config from a YAML file (or the defaults) with `section.field=value` overrides."""
    return config_from_dict(read_config_data(path, overrides))


def validate(config: RLlibTrainConfig) -> None:
    """Cross-field checks; raises ValueError naming the field and what would be valid."""
    rules, options = split_options(config.env.rules)
    if options.illegal_action != "raise":
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
    if model.fcnet_activation not in ACTIVATIONS:
        raise ValueError(
            f"model.fcnet_activation must be one of {ACTIVATIONS} (the exported policy "
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
