"""The training configuration: typed dataclasses with a docstring per field (CleanRL style).

A run is configured by `configs/<name>.yaml` (any subset of the fields below, nested by section)
plus command-line overrides `--set section.field=value` (values parsed as YAML, so `1e-4`,
`true`, `[256, 256]` and `{greedy: 1.0}` work). `load_config` validates every key and type and
raises `ValueError` naming the bad key and the valid ones.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cf_env import ChickenFootConfig


@dataclass
class EnvSettings:
    rules: dict = field(default_factory=dict)
    """Overrides of `cf_env.ChickenFootConfig` (empty = the default 4-player double-9 game)."""
    episode: str = "round"
    """"round" (one round per episode; the game carries on between episodes) or "game"."""
    learner_skip_forced: bool = True
    """Take the learner's decisions that have exactly one legal action without asking it."""


@dataclass
class OpponentSettings:
    bots: dict = field(default_factory=lambda: {"greedy": 0.5, "heuristic": 0.2, "random": 0.1})
    """Bot specs and their sampling weights for each opponent seat."""
    snapshot_weight: float = 0.2
    """Total sampling weight of the frozen past learners (split evenly among them)."""
    snapshot_every: int = 100_000
    """Learner steps between freezing the current learner into the opponent pool."""
    max_snapshots: int = 8
    """Most recent snapshots kept in the pool (older ones stay on disk, out of the pool)."""
    snapshot_greedy: bool = False
    """Snapshots play their argmax action (True) or sample from their policy (False)."""


@dataclass
class PPOSettings:
    learning_rate: float = 3e-4
    """Adam step size (constant)."""
    n_steps: int = 256
    """Steps per env per rollout; a rollout holds n_steps * num_envs learner decisions."""
    batch_size: int = 512
    """Minibatch size for the PPO update."""
    n_epochs: int = 4
    """Passes over each rollout (the update's CPU cost is proportional)."""
    gamma: float = 0.995
    """Discount; rounds are ~7 learner decisions long, so ~1 keeps the round's result in view."""
    gae_lambda: float = 0.95
    """GAE bias/variance trade-off."""
    clip_range: float = 0.2
    """PPO ratio clip."""
    ent_coef: float = 0.01
    """Entropy bonus (keeps exploring among legal actions)."""
    vf_coef: float = 0.5
    """Value-loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""
    target_kl: float | None = None
    """Stop an update early when the approximate KL exceeds this (None: never)."""
    net_arch: list = field(default_factory=lambda: [256, 256])
    """Hidden layer sizes of the policy and of the (separate) value network."""
    activation: str = "tanh"
    """"tanh" or "relu" between hidden layers."""


@dataclass
class EvalSettings:
    every_steps: int = 100_000
    """Learner steps between evaluations (0 disables periodic evaluation)."""
    opponents: list = field(default_factory=lambda: ["greedy", "heuristic"])
    """Each entry: the learner against three copies of this spec (duplicate deals)."""
    deals: int = 200
    """Duplicate deals per evaluation."""
    single_round: bool = True
    """Evaluate single rounds (faster, lower variance) rather than whole games."""
    workers: int = 1
    """Worker processes for the evaluation."""
    best_metric: str = "greedy"
    """Opponent whose win rate picks the "best" checkpoint."""


@dataclass
class TrainConfig:
    run_name: str | None = None
    """Run directory name under `runs_dir`; None makes one from the config name and the time."""
    runs_dir: str = "runs"
    """Parent folder of run directories."""
    seed: int = 0
    """Seeds torch, the envs and the opponents; the same seed replays the same run."""
    total_steps: int = 3_000_000
    """Learner decisions to train for (in total, counting a resumed run's earlier steps)."""
    num_envs: int = 16
    """Parallel envs."""
    vec_env: str = "dummy"
    """"dummy" (in-process, best on 1–2 cores) or "subproc" (one process per env)."""
    torch_threads: int = 1
    """torch.set_num_threads; 1 avoids oversubscribing a small shared machine."""
    checkpoint_every: int = 50_000
    """Learner steps between writes of the latest checkpoint."""
    progress_bar: bool = True
    """Show a progress bar (tqdm/rich)."""
    env: EnvSettings = field(default_factory=EnvSettings)
    opponents: OpponentSettings = field(default_factory=OpponentSettings)
    ppo: PPOSettings = field(default_factory=PPOSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)

    def rules(self) -> ChickenFootConfig:
        """The game config the learner trains on (validated by ChickenFootConfig)."""
        return ChickenFootConfig.from_dict(dict(self.env.rules))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _field_types(cls) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _coerce(value, kind, where: str):
    """Check `value` against the annotation `kind` (ints accepted for floats)."""
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be a mapping of {kind.__name__} fields; got {value!r}")
        return _build(kind, value, where)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(kind)
        if value is None and type(None) in options:
            return None
        kind = next(k for k in options if k is not type(None))
        origin = typing.get_origin(kind)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is float and isinstance(value, str):
        # YAML 1.1 reads "1e-4" (no dot) as a string; it is meant as a number.
        try:
            return float(value)
        except ValueError:
            pass
    expected = origin or kind
    if expected is int and isinstance(value, bool):
        raise ValueError(f"{where} must be an int; got {value!r}")
    if not isinstance(value, expected):
        raise ValueError(f"{where} must be {getattr(expected, '__name__', expected)}; got {value!r}")
    return value


def _build(cls, data: dict, where: str):
    types_ = _field_types(cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in {where or 'config'}; valid: {sorted(types_)}")
    base = cls()
    kwargs = {}
    for name, kind in types_.items():
        if name in data:
            sub = f"{where}.{name}" if where else name
            if dataclasses.is_dataclass(kind):
                merged = {**dataclasses.asdict(getattr(base, name)), **(data[name] or {})}
                kwargs[name] = _coerce(merged, kind, sub)
            else:
                kwargs[name] = _coerce(data[name], kind, sub)
    return cls(**kwargs)


def apply_override(data: dict, assignment: str) -> None:
    """Apply one `section.field=value` (value parsed as YAML) to a nested dict, in place."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key:
        raise ValueError(f"--set takes section.field=value; got {assignment!r}")
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"--set {key}: {part!r} is not a section")
    node[parts[-1]] = yaml.safe_load(raw)


def load_config(path: str | Path | None = None, overrides: list[str] = ()) -> TrainConfig:
    """The config from a YAML file (or the defaults) with `--set` overrides applied."""
    data: dict = {}
    if path is not None:
        text = Path(path).read_text()
        data = yaml.safe_load(text) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a config file holds a mapping of sections")
    for assignment in overrides:
        apply_override(data, assignment)
    config = _build(TrainConfig, data, "")
    validate(config)
    return config


def config_from_dict(data: dict) -> TrainConfig:
    config = _build(TrainConfig, data, "")
    validate(config)
    return config


def validate(config: TrainConfig) -> None:
    """Cross-field checks that the dataclasses' types cannot express."""
    rules = config.rules()  # raises ValueError naming a bad rules field
    positive = {
        "total_steps": config.total_steps,
        "num_envs": config.num_envs,
        "torch_threads": config.torch_threads,
        "checkpoint_every": config.checkpoint_every,
        "ppo.n_steps": config.ppo.n_steps,
        "ppo.batch_size": config.ppo.batch_size,
        "ppo.n_epochs": config.ppo.n_epochs,
        "opponents.snapshot_every": config.opponents.snapshot_every,
        "eval.deals": config.eval.deals,
    }
    for name, value in positive.items():
        if value < 1:
            raise ValueError(f"{name} must be >= 1; got {value}")
    if config.vec_env not in ("dummy", "subproc"):
        raise ValueError(f"vec_env must be 'dummy' or 'subproc'; got {config.vec_env!r}")
    if config.env.episode not in ("round", "game"):
        raise ValueError(f"env.episode must be 'round' or 'game'; got {config.env.episode!r}")
    if config.ppo.activation not in ("tanh", "relu"):
        raise ValueError(f"ppo.activation must be 'tanh' or 'relu'; got {config.ppo.activation!r}")
    if not config.ppo.net_arch or not all(isinstance(h, int) and h > 0 for h in config.ppo.net_arch):
        raise ValueError(f"ppo.net_arch must list positive layer sizes; got {config.ppo.net_arch!r}")
    bots = config.opponents.bots
    if any(not isinstance(w, (int, float)) or w < 0 for w in bots.values()):
        raise ValueError(f"opponents.bots weights must be >= 0; got {bots!r}")
    if sum(bots.values()) + config.opponents.snapshot_weight <= 0:
        raise ValueError("opponents: the bot weights and snapshot_weight sum to 0")
    if config.eval.every_steps < 0:
        raise ValueError(f"eval.every_steps must be >= 0; got {config.eval.every_steps}")
    if config.eval.every_steps and config.eval.best_metric not in config.eval.opponents:
        raise ValueError(
            f"eval.best_metric {config.eval.best_metric!r} must be one of eval.opponents "
            f"{config.eval.opponents!r}"
        )
    if config.run_name is not None and ("/" in config.run_name or config.run_name in ("", ".", "..")):
        raise ValueError(f"run_name must be a plain folder name; got {config.run_name!r}")
    del rules
