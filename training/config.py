"""The training configuration: typed frozen dataclasses with a docstring per field (CleanRL
style), and the one YAML loader every trainer's config goes through (`dataclass_from_dict`,
`read_config_data`; `training.rllib.config` uses them too).

A run is configured by `configs/<name>.yaml` (any subset of the fields below, nested by section)
plus command-line overrides `--set section.field=value` (values parsed as YAML, so `1e-4`,
`true`, `[256, 256]` and `{greedy: 1.0}` work). `load_config` validates every key, type and
range and raises `ValueError` naming the bad key and what would be valid; `validate_policies`
builds every policy spec the config names (the slower check, done once before a run starts).
`resume_changes` says which fields a resumed run may change (`RESUME_FIXED` lists the others).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cf_env.core.config import ChickenFootConfig, DriverOptions, split_options
from cf_env.core.observation import observation_layout, privileged_layout


@dataclass(frozen=True)
class EnvSettings:
    rules: dict = field(default_factory=dict)
    """Overrides of `cf_env.ChickenFootConfig` and of the env's driver options (`reward_mode`,
    `skip_forced`, `illegal_action`; `DriverOptions`) in one mapping, as the env's keywords
    take them (empty = the default 4-player double-9 game)."""
    episode: str = "round"
    """"round" (one round per episode; the game carries on between episodes) or "game"."""
    learner_skip_forced: bool = True
    """Take the learner's decisions that have exactly one legal action without asking it."""


@dataclass(frozen=True)
class OpponentSettings:
    bots: dict = field(default_factory=lambda: {"greedy": 0.5, "heuristic": 0.2, "random": 0.1})
    """Bot specs and their sampling weights for each opponent seat."""
    snapshot_weight: float = 0.2
    """Total sampling weight of the frozen past learners (split evenly among them)."""
    snapshot_every: int = 100_000
    """Learner steps between freezing the current learner into the opponent pool."""
    max_snapshots: int = 8
    """Most recent snapshots kept in the pool (older ones stay on disk, out of the pool); >= 1
    (snapshot_weight 0 keeps snapshots out of play)."""
    snapshot_greedy: bool = False
    """Snapshots play their argmax action (True) or sample from their policy (False)."""


@dataclass(frozen=True)
class PPOSettings:
    learning_rate: float = 3e-4
    """Adam step size; > 0. May change on --resume, like every ppo.* field except n_steps,
    net_arch and activation."""
    anneal_lr: bool = False
    """Self-play only: decay the step size linearly from learning_rate to 0 over total_steps
    (each update uses learning_rate * (1 - steps / total_steps)), as CleanRL's PPO does; the
    last policies move less, so the final checkpoint is less noisy. False: constant."""
    n_steps: int = 256
    """maskable_ppo only: steps per env per rollout; a rollout holds n_steps * num_envs learner
    decisions (self-play: selfplay.rollout_steps)."""
    batch_size: int = 512
    """Minibatch size for the PPO update (both algos)."""
    n_epochs: int = 4
    """Passes over each rollout (the update's CPU cost is proportional)."""
    gamma: float = 0.995
    """Discount, in (0, 1]; rounds are ~7 learner decisions long, so ~1 keeps the round's result
    in view."""
    gae_lambda: float = 0.95
    """GAE bias/variance trade-off."""
    clip_range: float = 0.2
    """PPO ratio clip, in (0, 1]."""
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


@dataclass(frozen=True)
class SelfPlaySettings:
    """The self-play trainer (`algo: selfplay`, `training.selfplay`); ignored by maskable_ppo."""

    num_games: int = 128
    """Games stepped together in the collector(s); every step batches one learner decision of
    each game into one forward pass. A multiple of `workers`."""
    rollout_steps: int = 64
    """Batched steps per rollout: a rollout holds rollout_steps * num_games learner decisions
    (the self-play counterpart of ppo.n_steps, which only maskable_ppo reads)."""
    pool_share: float = 0.25
    """Probability that a seat of a new game is an opponent (drawn from opponents.bots and the
    snapshots with their weights) instead of a learner seat; in [0, 1). Every game keeps at
    least one learner seat. Not read with one_learner_seat."""
    one_learner_seat: bool = False
    """Each new game has exactly one learner seat (drawn uniformly) and every other seat is an
    opponent drawn from the pool, instead of pool_share's independent draws: training against a
    fixed table, as the exploitability probe does (`python -m training.exploit`: the target as
    the only opponent, opponents.snapshot_weight 0)."""
    privileged_critic: bool = True
    """The critic also reads the other seats' hands and the boneyard (training only; the actor
    never does). False: the critic reads the observation only (the ablation). Fixed for a run."""
    workers: int = 1
    """Collector processes. 1 without overlap: collect in the trainer's own process, then
    update. The run is deterministic for a fixed workers (and overlap); other values deal other
    games."""
    overlap: bool = False
    """Collect the next rollout in the worker process(es) while the trainer's process updates
    (a one-iteration policy lag, corrected by PPO's ratio against the behaviour policy)."""
    ray_address: str | None = None
    """Where the collectors run. None: local processes (`workers`, `overlap`). "auto" (the
    cluster this machine belongs to, or RAY_ADDRESS), "local" (a Ray instance started on this
    machine for the run) or "HOST:PORT" (a cluster's head node): `workers` Ray actors of one
    CPU each, anywhere in that cluster, collect for the learner in this process, with the
    same games as `workers` local processes (docs/training.md, "Collectors on Ray"). Needs Ray
    (the rllib extra); `python -m training.ppo --ray ADDRESS` sets it."""
    win_bonus: float = 0.0
    """Reward shaping: added to the round's winner(s) (lowest points, shared) minus its mean over
    the seats, so rewards stay zero-sum. 0 = the plain zero_sum reward."""
    clip_value_loss: bool = False
    """Clip the value update to ppo.clip_range around the behaviour value (CleanRL's clip_vloss)."""
    init_actor: str | None = None
    """A weights-only checkpoint (card.json + policy.npz) whose actor network starts a new run
    instead of a fresh one (the critic starts fresh); its layers must be ppo.net_arch with
    ppo.activation, for this run's game. None: a fresh actor. `python -m training.exploit
    --warm-start` starts the best response at the target itself."""
    init_critic: str | None = None
    """A checkpoint with a value head (`value.npz`: `training.fit_value`'s privileged critic)
    whose network starts a new run's critic instead of a fresh one; it needs
    selfplay.privileged_critic, ppo.net_arch and ppo.activation as the head's, and the head's
    reward (reward mode, win_bonus, episode) must be this run's. None: a fresh critic."""
    update_dtype: str = "float32"
    """Matmul precision of the update's forward and backward passes: "float32"; "bfloat16"
    (`torch.autocast` mixed precision: weights, optimiser state, losses and log-probabilities
    stay float32; about 1.7x faster on CPUs with AVX512-BF16 or AMX, much slower without); or
    "auto": bfloat16 where the CPU has those instructions, else float32 (the card's
    `update_dtype` says which ran). Collection and the shipped actor always run in float32."""
    search_share: float = 0.0
    """Expert iteration (docs/training.md, "Search-distilled self-play"): the share of learner
    decisions the collector plays with the compiled, network-guided ISMCTS (`guided:`'s search,
    the current actor's softmax as its root prior) and the update fits the actor to the
    search's visit distribution; in [0, 1]. 0 = plain PPO (the default: nothing is searched)."""
    search_operator: str = "guided"
    """The search that plays and labels a searched decision: "guided" (the compiled ISMCTS with
    the current actor's softmax as its root prior, rollouts by the rules' "follow" policy) or
    "lookahead" (`lookahead:`'s flat search: every legal move on the same determinizations,
    the other seats played by search_teacher's actor, the position after them scored by its
    value head; a fixed teacher, not the current actor)."""
    search_teacher: str | None = None
    """The "lookahead" operator's checkpoint: a weights-only checkpoint with a value head
    (value.npz) for this run's game. Required with search_operator "lookahead" (and
    search_share > 0); not read otherwise."""
    search_iterations: int = 64
    """Per searched decision: ISMCTS iterations ("guided"; 1..100000, the search's cap,
    `cf_env.agents.ismcts.MAX_ITERATIONS`) or determinizations ("lookahead"; 1..10000,
    `cf_env.agents.lookahead.MAX_DETERMINIZATIONS`). Read only with search_share > 0."""
    search_target: str = "visits"
    """What the actor fits at a searched decision (`training.selfplay.targets`): "visits" (the
    root visit counts at search_temperature), "improved" (Gumbel MuZero's improved policy:
    the actor's prior tilted by the search's mean rewards, at search_scale) or "best" (all
    mass on the move with the highest mean reward, split among ties: what `lookahead:`
    plays). "visits" needs the "guided" operator (a flat search visits every move equally)."""
    search_temperature: float = 1.0
    """The "visits" target is the root visit counts raised to 1/search_temperature, normalised
    over the legal actions: 1 = the visit distribution, lower = sharper. In [0.05, 10]."""
    search_scale: float = 0.1
    """The "improved" target's c_scale: softmax(log prior + (50 + max visits) · search_scale ·
    Q), Q the mean zero-sum round reward (points_scale units); 0 = the prior. In [0, 10]."""
    search_play: str = "sample"
    """The action played at a searched decision: "sample" (drawn from the target) or "argmax"
    (the target's most likely action)."""
    distill_coef: float = 1.0
    """Weight of the distillation loss: the cross-entropy between the search target and the
    actor's masked distribution, averaged over a minibatch's searched decisions; >= 0."""
    search_ppo_loss: bool = True
    """Keep PPO's clipped policy loss on the decisions that were not searched (searched
    decisions are never in the PPO surrogate: their action came from the search, not the actor).
    False: the actor learns from the distillation loss alone (the critic fits outcomes either
    way)."""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class TrainConfig:
    algo: str = "selfplay"
    """The learner: "selfplay" (training.selfplay.learner: every seat of many batched games learns,
    privileged critic) or "maskable_ppo" (sb3-contrib MaskablePPO, one seat per game). The
    ppo.* hyperparameters mean the same in both. Fixed for a run."""
    run_name: str | None = None
    """Run directory name under `runs_dir`; None makes one from the config name and the time."""
    runs_dir: str = "runs"
    """Parent folder of run directories."""
    seed: int = 0
    """Seeds torch, the envs and the opponents; the same seed replays the same run. 0..2**31-1;
    fixed for the run (--resume refuses to change it, as num_envs, ppo.n_steps, ppo.net_arch,
    ppo.activation and env.*: RESUME_FIXED)."""
    total_steps: int = 3_000_000
    """Learner decisions to train for (in total, counting a resumed run's earlier steps)."""
    num_envs: int = 16
    """maskable_ppo only: parallel envs (self-play: selfplay.num_games)."""
    vec_env: str = "dummy"
    """maskable_ppo only: "dummy" (in-process, best on 1–2 cores) or "subproc" (one process
    per env)."""
    torch_threads: int = 1
    """torch.set_num_threads in the trainer's process (self-play collector processes use 1)."""
    checkpoint_every: int = 50_000
    """Learner steps between writes of the latest checkpoint."""
    progress_bar: bool = True
    """Show a progress bar (tqdm/rich)."""
    env: EnvSettings = field(default_factory=EnvSettings)
    opponents: OpponentSettings = field(default_factory=OpponentSettings)
    ppo: PPOSettings = field(default_factory=PPOSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)
    selfplay: SelfPlaySettings = field(default_factory=SelfPlaySettings)

    def rules(self) -> ChickenFootConfig:
        """The game config the learner trains on (validated by ChickenFootConfig)."""
        return split_options(self.env.rules)[0]

    def options(self) -> DriverOptions:
        """The env's driver options that `env.rules` names (validated by DriverOptions)."""
        return split_options(self.env.rules)[1]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------------------- the loader
# One loader for every trainer's config (this module's `TrainConfig`, `training.rllib.config`'s
# `RLlibTrainConfig`): a YAML file of nested sections plus `--set` overrides, read into typed
# frozen dataclasses. Ranges and cross-field rules are each trainer's own `validate`.
def _field_types(cls) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _coerce(value, kind, where: str):
    """`value` checked against the annotation `kind`; a union takes the first option that fits.

    Ints are accepted for floats, and so are numeric strings: YAML 1.1 reads "1e-4" (no dot) as
    a string, meant as a number. For an int, an integral float or numeric string is accepted
    too (`1e6`, `3.0e6`: a million), and a fractional one (`1.5`) is refused naming the field. A
    bool is never an int.
    """
    union = typing.get_origin(kind) in (typing.Union, types.UnionType)
    if value is None and union and type(None) in typing.get_args(kind):
        return None
    options = [k for k in (typing.get_args(kind) if union else (kind,)) if k is not type(None)]
    for option in options:
        expected = typing.get_origin(option) or option
        if expected is float and not isinstance(value, bool):
            if isinstance(value, int):
                return float(value)
            if isinstance(value, str):
                try:
                    return float(value)
                except ValueError:
                    pass
        if expected is int and isinstance(value, bool):
            continue
        if expected is int and (isinstance(value, float)
                                or (isinstance(value, str) and str not in options)):
            number = _integral(value)
            if number is not None:
                return number
            if len(options) == 1 and (isinstance(value, float) or _is_number(value)):
                raise ValueError(f"{where} must be an int (a whole number such as 1e6); "
                                 f"got {value!r}")
        if isinstance(value, expected):
            return value
    names = " or ".join(getattr(k, "__name__", str(k)) for k in options)
    raise ValueError(f"{where} must be {names}; got {value!r}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _integral(value) -> int | None:
    """The int an integral float or numeric string stands for (1e6, "1e6", 3.0), else None."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            if not _is_number(text):
                return None
            value = float(text)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _nearest(names: list[str], valid, prefix: str = "") -> str:
    """"; did you mean 'ppo.learning_rate'?" for the unknown names close to a valid one."""
    hints = []
    for name in names:
        close = difflib.get_close_matches(name, sorted(valid), n=1)
        if close:
            hints.append(repr(prefix + close[0]))
    return f"; did you mean {' / '.join(hints)}?" if hints else ""


def dataclass_from_dict(cls, data: dict, where: str = "", defaults=None):
    """The dataclass `cls` that the nested dict `data` describes, merged over `defaults` (an
    instance; `cls()` when None): a section (a dataclass-typed field) given in part keeps the
    defaults of the fields it leaves out, however deep. Raises `ValueError` naming the dotted key
    for an unknown key (with the valid ones), a section that is not a mapping, or a wrong type.
    """
    types_ = _field_types(cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in {where or 'config'}; valid: {sorted(types_)}"
                         + _nearest(unknown, types_, f"{where}." if where else ""))
    if defaults is None:
        defaults = cls()
    changes = {}
    for name, value in data.items():
        kind, sub = types_[name], f"{where}.{name}" if where else name
        if dataclasses.is_dataclass(kind):
            if not isinstance(value, (dict, type(None))):
                raise ValueError(f"{sub} is a section: a mapping of {sorted(_field_types(kind))}"
                                 f"; got {value!r}")
            changes[name] = dataclass_from_dict(kind, value or {}, sub, getattr(defaults, name))
        else:
            changes[name] = _coerce(value, kind, sub)
    return dataclasses.replace(defaults, **changes)


def yaml_problem(err: yaml.YAMLError) -> str:
    """A YAML parse error in one line: the problem and where (PyYAML's own text spans lines)."""
    problem = getattr(err, "problem", None)
    mark = getattr(err, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(err).split())


MAX_CONFIG_BYTES = 1 << 20  # a config file (the shipped ones are ~2 KB)


class _DataLoader(yaml.SafeLoader):
    """YAML's safe loader without aliases: a config is data, and an alias (`*name`) is what a
    "billion laughs" file nests to blow up whatever prints or serialises the value."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted in a "
                                              "config", event.start_mark)
        return super().compose_node(parent, index)


def load_yaml_text(text: str):
    """YAML text as data: the safe loader, no aliases, at most `MAX_CONFIG_BYTES`."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ValueError(f"{len(text):,} characters of YAML; a config holds at most "
                         f"{MAX_CONFIG_BYTES:,}")
    return yaml.load(text, Loader=_DataLoader)  # noqa: S506 — a SafeLoader subclass


def read_yaml(path: str | Path):
    """A YAML file's content; `ValueError` naming the file, line and column if it is not YAML
    (or is too big, or uses aliases: `load_yaml_text`)."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"{path}: {path.stat().st_size:,} bytes; a config holds at most "
                         f"{MAX_CONFIG_BYTES:,}")
    try:
        return load_yaml_text(path.read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML ({yaml_problem(err)})") from None


def apply_override(data: dict, assignment: str) -> None:
    """Apply one `section.field=value` (value parsed as YAML) to a nested dict, in place."""
    key, sep, raw = assignment.partition("=")
    parts = key.strip().split(".")
    if not sep or not all(parts):
        raise ValueError(f"--set takes section.field=value; got {assignment!r}")
    try:
        value = load_yaml_text(raw)
    except yaml.YAMLError as err:
        raise ValueError(f"--set {key.strip()}: {raw!r} is not a YAML value "
                         f"({yaml_problem(err)})") from None
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"--set {key}: {part!r} is not a section")
    node[parts[-1]] = value


def read_config_data(path: str | Path | None = None, overrides: list[str] = ()) -> dict:
    """The nested dict a YAML config file (none: `{}`) and `--set` overrides describe."""
    data: dict = {}
    if path is not None:
        if not Path(path).is_file():
            nearby = sorted(str(p) for p in Path(path).parent.glob("*.yaml"))
            raise FileNotFoundError(f"config file {str(path)!r} not found"
                                    + (f"; next to it: {', '.join(nearby)}" if nearby else ""))
        data = read_yaml(path) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a config file holds a mapping of sections")
    for assignment in overrides:
        apply_override(data, assignment)
    return data


# ------------------------------------------------------------------------------- TrainConfig
def load_config(path: str | Path | None = None, overrides: list[str] = ()) -> TrainConfig:
    """The config from a YAML file (or the defaults) with `--set` overrides applied."""
    return config_from_dict(read_config_data(path, overrides))


def config_from_dict(data: dict, *, checked: bool = True) -> TrainConfig:
    """The config a nested dict describes (types always checked; ranges unless `checked=False`,
    used for a saved run config that older code wrote and `--set` may be about to correct)."""
    config = dataclass_from_dict(TrainConfig, data)
    if checked:
        validate(config)
    return config


SEED_MAX = 2**31 - 1
# Upper bounds on the sizes that allocate (checked before anything is built): far above any
# useful run on one machine, low enough that a typo cannot ask for terabytes.
SIZE_LIMITS = {
    "num_envs": 1024,
    "torch_threads": 256,
    "ppo.n_steps": 1 << 20,
    "ppo.batch_size": 1 << 20,
    "ppo.n_epochs": 1000,
    "opponents.max_snapshots": 1000,
    "eval.deals": 1_000_000,
    "eval.workers": 256,
    "selfplay.num_games": 1 << 16,
    "selfplay.rollout_steps": 1 << 16,
    "selfplay.workers": 256,
}
MAX_LAYER_UNITS, MAX_HIDDEN_LAYERS = 8192, 16  # ppo.net_arch (the checkpoint reader allows more)
MAX_ROLLOUT_BYTES = 8 << 30  # a self-play rollout's arrays, all workers together
"""Largest `seed`: a resumed run seeds with seed + steps, and numpy takes seeds below 2**32."""
UPDATE_DTYPES = ("float32", "bfloat16", "auto")
SEARCH_PLAYS = ("sample", "argmax")
SEARCH_TARGETS = ("visits", "improved", "best")
SEARCH_OPERATORS = ("guided", "lookahead")
MAX_SEARCH_ITERATIONS = 100_000  # cf_env.agents.ismcts.MAX_ITERATIONS (checked in the tests)
MAX_SEARCH_DETERMINIZATIONS = 10_000  # cf_env.agents.lookahead.MAX_DETERMINIZATIONS (likewise)


RAY_ADDRESS_KEYWORDS = ("auto", "local")
_RAY_HOST_PORT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?:([0-9]{1,5})")


def valid_ray_address(address) -> bool:
    """`selfplay.ray_address` is null, a keyword of `ray.init` ("auto", "local") or HOST:PORT."""
    if address is None or address in RAY_ADDRESS_KEYWORDS:
        return True
    match = isinstance(address, str) and _RAY_HOST_PORT.fullmatch(address)
    return bool(match) and 1 <= int(match.group(1)) <= 65535


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _require(name: str, value, ok: bool, valid: str) -> None:
    if not ok:
        raise ValueError(f"{name} must be {valid}; got {value!r}")


def validate(config: TrainConfig) -> None:
    """Cross-field and range checks that the dataclasses' types cannot express.

    Cheap (no file is read): it runs wherever a config is built, env processes included.
    """
    options = split_options(config.env.rules)[1]  # ValueError naming a bad rule or option
    positive = {
        "total_steps": config.total_steps,
        "num_envs": config.num_envs,
        "torch_threads": config.torch_threads,
        "checkpoint_every": config.checkpoint_every,
        "ppo.n_steps": config.ppo.n_steps,
        "ppo.batch_size": config.ppo.batch_size,
        "ppo.n_epochs": config.ppo.n_epochs,
        "opponents.snapshot_every": config.opponents.snapshot_every,
        "opponents.max_snapshots": config.opponents.max_snapshots,
        "eval.deals": config.eval.deals,
        "eval.workers": config.eval.workers,
        "selfplay.num_games": config.selfplay.num_games,
        "selfplay.rollout_steps": config.selfplay.rollout_steps,
        "selfplay.workers": config.selfplay.workers,
    }
    for name, value in positive.items():
        if value < 1:
            raise ValueError(f"{name} must be >= 1; got {value}")
        if value > SIZE_LIMITS.get(name, math.inf):
            raise ValueError(f"{name} must be at most {SIZE_LIMITS[name]:,}; got {value:,}")
    _require("seed", config.seed, 0 <= config.seed <= SEED_MAX, f"an int in 0..{SEED_MAX}")
    p = config.ppo
    # NaN fails every comparison, so each check is written as "ok when ...".
    _require("ppo.learning_rate", p.learning_rate, _number(p.learning_rate) and p.learning_rate > 0,
             "a finite number > 0 (e.g. 3e-4)")
    _require("ppo.anneal_lr", p.anneal_lr, not (p.anneal_lr and config.algo == "maskable_ppo"),
             "false for algo maskable_ppo (the schedule is self-play only)")
    _require("ppo.gamma", p.gamma, _number(p.gamma) and 0 < p.gamma <= 1, "in (0, 1]")
    _require("ppo.gae_lambda", p.gae_lambda, _number(p.gae_lambda) and 0 <= p.gae_lambda <= 1,
             "in [0, 1]")
    _require("ppo.clip_range", p.clip_range, _number(p.clip_range) and 0 < p.clip_range <= 1,
             "in (0, 1] (e.g. 0.2)")
    _require("ppo.ent_coef", p.ent_coef, _number(p.ent_coef) and p.ent_coef >= 0, "a number >= 0")
    _require("ppo.vf_coef", p.vf_coef, _number(p.vf_coef) and p.vf_coef >= 0, "a number >= 0")
    _require("ppo.max_grad_norm", p.max_grad_norm, _number(p.max_grad_norm) and p.max_grad_norm > 0,
             "a number > 0")
    _require("ppo.target_kl", p.target_kl,
             p.target_kl is None or (_number(p.target_kl) and p.target_kl > 0), "null or > 0")
    # SB3 asserts both (advantages are normalised per minibatch).
    _require("ppo.batch_size", p.batch_size, p.batch_size >= 2, ">= 2")
    _require("ppo.n_steps * num_envs", p.n_steps * config.num_envs,
             p.n_steps * config.num_envs >= 2, ">= 2")
    if config.algo not in ("selfplay", "maskable_ppo"):
        raise ValueError(f"algo must be 'selfplay' or 'maskable_ppo'; got {config.algo!r}")
    sp = config.selfplay
    _require("selfplay.pool_share", sp.pool_share, _number(sp.pool_share) and 0 <= sp.pool_share < 1,
             "in [0, 1) (every game keeps a learner seat)")
    _require("selfplay.win_bonus", sp.win_bonus, _number(sp.win_bonus) and sp.win_bonus >= 0,
             "a number >= 0")
    _require("selfplay.update_dtype", sp.update_dtype, sp.update_dtype in UPDATE_DTYPES,
             f"one of {', '.join(map(repr, UPDATE_DTYPES))}")
    _require("selfplay.search_share", sp.search_share,
             _number(sp.search_share) and 0 <= sp.search_share <= 1, "in [0, 1] (0: plain PPO)")
    _require("selfplay.search_operator", sp.search_operator,
             sp.search_operator in SEARCH_OPERATORS,
             f"one of {', '.join(map(repr, SEARCH_OPERATORS))}")
    flat = sp.search_operator == "lookahead"
    cap = MAX_SEARCH_DETERMINIZATIONS if flat else MAX_SEARCH_ITERATIONS
    _require("selfplay.search_iterations", sp.search_iterations,
             1 <= sp.search_iterations <= cap,
             f"an int in 1..{cap} (the {sp.search_operator} search's cap)")
    _require("selfplay.search_teacher", sp.search_teacher,
             sp.search_teacher is None or (isinstance(sp.search_teacher, str)
                                           and sp.search_teacher != ""),
             "null or a checkpoint directory's path")
    _require("selfplay.search_teacher", sp.search_teacher,
             not (flat and sp.search_share > 0) or sp.search_teacher is not None,
             "a checkpoint with a value head (value.npz) when selfplay.search_operator is "
             "'lookahead'")
    _require("selfplay.search_target", sp.search_target,
             not (flat and sp.search_target == "visits"),
             "'improved' or 'best' with selfplay.search_operator 'lookahead' (a flat search "
             "visits every move equally)")
    _require("selfplay.search_temperature", sp.search_temperature,
             _number(sp.search_temperature) and 0.05 <= sp.search_temperature <= 10,
             "a number in [0.05, 10]")
    _require("selfplay.search_target", sp.search_target, sp.search_target in SEARCH_TARGETS,
             f"one of {', '.join(map(repr, SEARCH_TARGETS))}")
    _require("selfplay.search_scale", sp.search_scale,
             _number(sp.search_scale) and 0 <= sp.search_scale <= 10, "a number in [0, 10]")
    _require("selfplay.search_play", sp.search_play, sp.search_play in SEARCH_PLAYS,
             f"one of {', '.join(map(repr, SEARCH_PLAYS))}")
    _require("selfplay.distill_coef", sp.distill_coef,
             _number(sp.distill_coef) and sp.distill_coef >= 0, "a number >= 0")
    _require("selfplay.search_ppo_loss", sp.search_ppo_loss,
             sp.search_ppo_loss or sp.search_share > 0,
             "true when selfplay.search_share is 0 (else nothing trains the actor)")
    _require("selfplay.num_games", sp.num_games, sp.num_games % sp.workers == 0,
             f"a multiple of selfplay.workers ({sp.workers})")
    _require("selfplay.ray_address", sp.ray_address, valid_ray_address(sp.ray_address),
             "null (local processes), 'auto', 'local' or 'HOST:PORT' (a Ray head node, port "
             "1..65535)")
    _require("selfplay.ray_address", sp.ray_address,
             sp.ray_address is None or config.algo == "selfplay",
             "null for algo maskable_ppo (Ray collectors are self-play's)")
    if config.algo == "selfplay":
        _require("selfplay.rollout_steps * selfplay.num_games", sp.rollout_steps * sp.num_games,
                 sp.rollout_steps * sp.num_games >= 2, ">= 2")
        if options.reward_mode == "win" and config.env.episode != "game":
            raise ValueError("env.rules reward_mode 'win' pays only at the game's end: it needs "
                             "env.episode 'game'")
    if config.vec_env not in ("dummy", "subproc"):
        raise ValueError(f"vec_env must be 'dummy' or 'subproc'; got {config.vec_env!r}")
    if config.env.episode not in ("round", "game"):
        raise ValueError(f"env.episode must be 'round' or 'game'; got {config.env.episode!r}")
    if p.activation not in ("tanh", "relu"):
        raise ValueError(f"ppo.activation must be 'tanh' or 'relu'; got {p.activation!r}")
    if not p.net_arch or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0
                                 for h in p.net_arch):
        raise ValueError(f"ppo.net_arch must list positive layer sizes; got {p.net_arch!r}")
    if len(p.net_arch) > MAX_HIDDEN_LAYERS or max(p.net_arch) > MAX_LAYER_UNITS:
        raise ValueError(f"ppo.net_arch may list at most {MAX_HIDDEN_LAYERS} layers of at most "
                         f"{MAX_LAYER_UNITS} units; got {p.net_arch!r}")
    if config.algo == "selfplay":
        rows = sp.rollout_steps * sp.num_games
        rules = config.rules()
        width = observation_layout(rules).size + privileged_layout(rules).size
        # state, mask and search target, the per-row scalars
        needed = rows * (width + 2 * rules.num_actions + 16) * 4
        _require("selfplay.rollout_steps * selfplay.num_games", rows, needed <= MAX_ROLLOUT_BYTES,
                 f"small enough for a rollout of at most {MAX_ROLLOUT_BYTES >> 30} GiB "
                 f"({rows:,} rows of {width + 2 * rules.num_actions} values need "
                 f"{needed / (1 << 30):.1f} GiB)")
    o = config.opponents
    if not all(isinstance(k, str) and k for k in o.bots):
        raise ValueError(f"opponents.bots keys must be policy specs (strings); got {o.bots!r}")
    if any(not _number(w) or w < 0 for w in o.bots.values()):
        raise ValueError(f"opponents.bots weights must be numbers >= 0; got {o.bots!r}")
    _require("opponents.snapshot_weight", o.snapshot_weight,
             _number(o.snapshot_weight) and o.snapshot_weight >= 0, "a number >= 0")
    if not any(w > 0 for w in o.bots.values()):
        # The pool is built before the first snapshot exists (training.selfplay.opponents).
        raise ValueError(f"opponents.bots needs a spec with a weight > 0; got {o.bots!r}")
    e = config.eval
    if e.every_steps < 0:
        raise ValueError(f"eval.every_steps must be >= 0; got {e.every_steps}")
    if not all(isinstance(spec, str) and spec for spec in e.opponents):
        raise ValueError(f"eval.opponents must list policy specs (strings); got {e.opponents!r}")
    if e.every_steps and not e.opponents:
        raise ValueError("eval.opponents is empty; list specs to evaluate against, or set "
                         "eval.every_steps=0 to turn evaluation off")
    if e.every_steps and e.best_metric not in e.opponents:
        raise ValueError(
            f"eval.best_metric {e.best_metric!r} must be one of eval.opponents {e.opponents!r}"
        )
    if config.run_name is not None and ("/" in config.run_name or config.run_name in ("", ".", "..")):
        raise ValueError(f"run_name must be a plain folder name; got {config.run_name!r}")


def validate_policies(config: TrainConfig) -> None:
    """Build every policy spec the run will use (opponent bots, evaluation opponents) once.

    A typo, a missing checkpoint or one trained for another game raises `ValueError` naming the
    config field and the spec, before the run directory exists, instead of mid-run.
    """
    from cf_env.agents.policies import validate_policy_spec

    rules = config.rules()
    named = [("opponents.bots", spec) for spec in config.opponents.bots]
    if config.eval.every_steps:
        named += [("eval.opponents", spec) for spec in config.eval.opponents]
    for where, spec in named:
        try:
            validate_policy_spec(spec, rules)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from err


# Fields a resumed run cannot change, and why. Everything else is applied to the loaded model or
# read afresh when the session starts (the opponent pool, evaluation, checkpoints, steps).
RESUME_FIXED = {
    "algo": "the checkpoint holds this learner's state",
    "selfplay.privileged_critic": "the saved critic's input has this size",
    "seed": "the run's random streams derive from it",
    "num_envs": "the saved model's rollout buffer and the env seeds depend on it",
    "ppo.n_steps": "the saved model's rollout buffer has this shape (maskable_ppo)",
    "ppo.net_arch": "the saved network has this shape",
    "ppo.activation": "the saved network uses it",
    "env": "the model was trained on this game (start a new run for another)",
    "run_name": "it names the run directory being resumed",
    "runs_dir": "it names the run directory being resumed",
}


def _flatten(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key in ("env", "opponents", "ppo", "eval", "selfplay"):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def resume_changes(saved: TrainConfig, new: TrainConfig) -> dict[str, tuple]:
    """The fields `new` changes from `saved` ({dotted name: (old, new)}).

    Raises `ValueError` naming each changed field a resumed run cannot change (`RESUME_FIXED`).
    """
    before, after = _flatten(saved.to_dict()), _flatten(new.to_dict())
    changes = {k: (before[k], after[k]) for k in after if before[k] != after[k]}
    fixed = [k for k in changes if k in RESUME_FIXED or k.split(".")[0] in RESUME_FIXED]
    if fixed:
        reasons = "; ".join(
            f"{k} ({changes[k][0]!r} -> {changes[k][1]!r}): "
            f"{RESUME_FIXED.get(k) or RESUME_FIXED[k.split('.')[0]]}" for k in fixed
        )
        raise ValueError(f"cannot change on --resume: {reasons}. Start a new run to change "
                         f"{'it' if len(fixed) == 1 else 'them'}.")
    return changes
