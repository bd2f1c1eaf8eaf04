"""Self-play masked PPO with a privileged critic: every learner seat of every game learns
(`algo: selfplay`, the default of `python -m training.ppo`).

Design, top to bottom as the code runs:

1. **Collect** (`training.selfplay.collector.Collector`): `selfplay.num_games` games stepped in one
   process; every seat is the current policy except a `selfplay.pool_share` of seats played
   by bots and frozen past learners (`opponents.*` weights); all waiting learner decisions go
   through one batched forward pass; forced decisions are skipped. A rollout is
   `selfplay.rollout_steps` batched steps, i.e. `rollout_steps x num_games` learner decisions,
   each with its own (game, seat) chain, rewards (zero-sum per round, `cf_env.core.rewards`, plus an
   optional zero-sum `win_bonus`) and GAE.
2. **Update** (`ppo_update`): CleanRL-style PPO: clipped ratio against the behaviour
   log-probability, value loss (optionally clipped), entropy over the masked distribution
   (illegal logits = -1e8, not -inf: no NaN), one Adam over actor and critic, gradient
   clipping, advantages normalised per minibatch, early stop at `ppo.target_kl`.
   With `selfplay.search_share` > 0 (expert iteration: docs/training.md, "Search-distilled
   self-play") the rows the collector searched are left out of the clipped surrogate (their
   action came from the search) and the loss adds `selfplay.distill_coef` x the cross-entropy
   between their search target and the actor's masked distribution; the value loss reads every
   row.
3. **Actor and critic are separate MLPs** (`ppo.net_arch` each). The actor reads only the
   player's observation — what ships (`policy.npz`, the same `ppo:` format as before) and what
   plays. The critic also reads, during training only, the privileged vector: the other seats'
   hands (egocentric) and the boneyard's contents (`selfplay.privileged_critic`; false gives it
   the observation only, for the ablation).
4. **Processes** (`selfplay.workers`, `selfplay.overlap`): 1 worker without overlap collects in
   the trainer's process and updates in turn (`torch_threads` threads for the update). With
   `overlap: true` the collectors run in `workers` processes and collect rollout k+1 with the
   weights before the update that rollout k is feeding (a one-iteration policy lag, corrected by
   PPO's ratio against the behaviour log-probabilities) while the trainer's process updates.
   With `workers >= 2` and no overlap, the workers collect in parallel and then wait for the
   update. Each worker owns `num_games / workers` games seeded from (seed, worker index), so a
   run is deterministic for a fixed `workers` and `overlap`; different values deal different
   games (and `overlap` adds the lag), so their runs differ. The collections and the networks
   are `training.selfplay.collection`'s: the collectors are a `training.processes.WorkerPool`
   served typed jobs (`CollectJob`: the weights and new
   snapshots); a worker writes each rollout into its pool block (`SharedRollout`, memory no
   path names) and answers only its statistics; a worker that dies or fails raises
   `CollectorError` naming it.
   With `selfplay.ray_address` the same collectors run as Ray actors anywhere in a Ray cluster
   (`training.selfplay.ray_collection.RayCollection`: the same games as `workers` processes).
5. **Precision** (`selfplay.update_dtype`): the update's matmuls in float32, or in bfloat16
   under `torch.autocast` ("auto": where the CPU multiplies bf16 in hardware); everything else
   (weights, Adam, losses, collection) is float32.

Resume: `trainer.pt` (plain state dicts: actor, critic, optimiser, counters, the pool's
snapshot paths; read with `torch.load(weights_only=True)`, no arbitrary unpickling) restores the
networks, the optimiser, the step count and the pool; the collectors are re-seeded from
seed + steps and deal new games (as the MaskablePPO path re-seeds its envs), so a resumed run
is reproducible from its checkpoint but is not bit-identical to one that was never stopped.

Library choice: the update is written here (CleanRL's ppo.py, ~60 lines) rather than taken from
a library. SB3's PPO/MaskablePPO policy classes and rollout buffer assume one env step per
`VecEnv` index and one trajectory per env, not many seats' chains interleaved in one game,
and cost ~200 µs per learner step of their own (bench: MaskablePPO on a constant-cost env runs
~4.9k steps/CPU-s, i.e. more than the whole budget of this trainer per decision). TorchRL's
ClipPPOLoss/GAE over tensordicts would fit the math but is not installed, and its tensordict
plumbing adds per-call overhead that only pays off at much larger batches; the loss here is a
dozen tensor ops on preallocated arrays.

Speed: the update, not the collection, is the cost now that the collector runs on the compiled core
(`training/selfplay/collector.py`); figures, the commands that measure them and the history of the
process layout's choices are in docs/speed/training.md (`python -m training.bench`).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.agents.checkpoint import load_value_head
from cf_env.core.observation import observation_layout
from training.artifacts import checkpoints as ckpt
from training.artifacts.provenance import git_revision
from training.config import TrainConfig
from training.schedule import Evaluations, Schedule
from training.selfplay.collection import LocalCollection, ProcessCollection, build_networks
from training.selfplay.collector import (
    ILLEGAL_LOGIT,
    Rollout,
)
from training.session import (
    Console,
    TrainResult,
    clean_for_resume,
    snapshot_paths,
    summary,
    write_run_info,
)

TRAINER_FILE = "trainer.pt"
TRAINER_FORMAT = 1


# ------------------------------------------------------------------------------- networks
def actor_weights(actor: nn.Sequential) -> list[tuple[np.ndarray, np.ndarray]]:
    """The actor's (W, b) pairs in the weights-only `policy.npz` layout (`NumpyPolicy`)."""
    return [(m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy())
            for m in actor if isinstance(m, nn.Linear)]


def load_actor(actor: nn.Sequential, path: str, config: TrainConfig) -> None:
    """Copy the actor of checkpoint `path` (`selfplay.init_actor`) into `actor`; `ValueError`
    naming the checkpoint and the fields to set when its network is another shape."""
    policy = ckpt.load_ppo_policy(path, config=config.rules())  # checks the game
    card = ckpt.read_card(ckpt.resolve_checkpoint(path))
    linears = [m for m in actor if isinstance(m, nn.Linear)]
    shapes = [tuple(w.shape) for w, _ in policy.weights]
    if (card["activation"] != config.ppo.activation or policy.adapt is not None
            or shapes != [tuple(m.weight.shape) for m in linears]):
        raise ValueError(f"selfplay.init_actor {path}: its actor has layers {shapes} with "
                         f"{card['activation']} (net_arch {card.get('net_arch')}), this run's "
                         f"{[tuple(m.weight.shape) for m in linears]} with "
                         f"{config.ppo.activation}; set ppo.net_arch={card.get('net_arch')} and "
                         f"ppo.activation={card['activation']} (and the checkpoint's env.rules)")
    copy_layers(linears, policy.weights)


def copy_layers(linears: list[nn.Linear], weights) -> None:
    """Copy (W (out, in), b) pairs into `linears`, in order (the shapes were checked)."""
    with torch.no_grad():
        for linear, (w, b) in zip(linears, weights):
            linear.weight.copy_(torch.from_numpy(np.asarray(w, np.float32)))
            linear.bias.copy_(torch.from_numpy(np.asarray(b, np.float32)))


def load_critic(critic: nn.Sequential, path: str, config: TrainConfig) -> None:
    """Copy the value head of checkpoint `path` (`selfplay.init_critic`) into `critic`;
    `ValueError` naming what differs when the head is another network or was fitted for another
    reward."""
    head = load_value_head(path, config.rules())  # checks the game and the file
    entry = ckpt.read_card(ckpt.resolve_checkpoint(path))["value"]
    s = config.selfplay
    run = {"reward_mode": config.options().reward_mode, "win_bonus": s.win_bonus,
           "episode": config.env.episode}
    fitted = {k: entry["reward"].get(k) for k in run}
    linears = [m for m in critic if isinstance(m, nn.Linear)]
    shapes = [tuple(W.T.shape) for W, _ in head.layers]
    wanted = [tuple(m.weight.shape) for m in linears]
    problems = []
    if not s.privileged_critic:
        problems.append("it reads the hidden tiles: set selfplay.privileged_critic=true")
    elif shapes != wanted or entry["activation"] != config.ppo.activation:
        problems.append(f"its layers are {shapes} with {entry['activation']}, this run's {wanted} "
                        f"with {config.ppo.activation}: set ppo.net_arch={entry['net_arch']} and "
                        f"ppo.activation={entry['activation']}")
    if fitted != run:
        problems.append(f"it was fitted for the reward {fitted}, this run's is {run}")
    if problems:
        raise ValueError(f"selfplay.init_critic {path}: " + "; ".join(problems))
    copy_layers(linears, [(W.T, b) for W, b in head.layers])  # ValueHead keeps W as (in, out)


def check_teacher(path: str, config: TrainConfig) -> None:
    """Load the lookahead operator's teacher (`selfplay.search_teacher`) as the collectors
    will, before any starts; `ValueError` naming the field and what the checkpoint lacks."""
    try:
        ckpt.load_ppo_policy(path, config=config.rules())
        load_value_head(path, config.rules())
    except (FileNotFoundError, ValueError) as error:  # CheckpointError is a ValueError
        raise ValueError(f"selfplay.search_teacher {path}: {error}") from error


# ------------------------------------------------------------------------------- the update
def update_dtype(setting: str) -> str:
    """`selfplay.update_dtype` resolved: "auto" is bfloat16 where the CPU multiplies bf16 in
    hardware (AVX512-BF16 or AMX; elsewhere torch emulates it, several times slower)."""
    if setting != "auto":
        return setting
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private, hence getattr
    native = any(getattr(torch.cpu, name, lambda: False)() for name in probes)
    return "bfloat16" if native else "float32"


def precision_line(setting: str) -> str:
    """The one line a run prints about its update's matmul precision (`selfplay.update_dtype`)."""
    resolved = update_dtype(setting)
    if resolved == "bfloat16":
        return ("update: bfloat16 matmuls under autocast (the CPU has AVX512-BF16 or AMX)"
                if setting == "auto" else "update: bfloat16 matmuls under autocast")
    if setting == "auto":
        return ("update: float32 (this CPU has no bf16 matmul instructions, where bfloat16 "
                "would be emulated and slower)")
    return "update: float32"


def update_autocast(setting: str) -> torch.autocast:
    """The autocast context of an update's forward passes for `selfplay.update_dtype` `setting`
    (bf16 matmuls, or a no-op in float32)."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=update_dtype(setting) == "bfloat16")


def ppo_update(actor, critic, optimizer, roll: Rollout, config: TrainConfig,
               generator: torch.Generator) -> dict:
    """PPO epochs over one rollout (CleanRL's update, masked); returns the losses and stats."""
    p, s = config.ppo, config.selfplay
    obs_size = actor[0].in_features
    state = torch.from_numpy(roll.state)
    mask = torch.from_numpy(roll.mask)
    actions = torch.from_numpy(roll.action)
    old_logp = torch.from_numpy(roll.logp)
    old_value = torch.from_numpy(roll.value)
    advantages = torch.from_numpy(roll.advantage)
    returns = torch.from_numpy(roll.returns)
    # Expert iteration (`selfplay.search_share`): searched rows train the actor through the
    # distillation loss only; the PPO surrogate (and its KL and clip statistics) reads the others.
    searched = torch.from_numpy(roll.searched)
    target = torch.from_numpy(roll.target)
    any_searched = bool(searched.any())
    params = [*actor.parameters(), *critic.parameters()]
    n = len(actions)
    batch = min(p.batch_size, n)
    stats = {"policy_loss": [], "value_loss": [], "entropy": [], "approx_kl": [], "clip_fraction": [],
             "distill_loss": []}
    epochs = 0
    autocast = update_autocast(s.update_dtype)
    for _ in range(p.n_epochs):
        order = torch.randperm(n, generator=generator)
        kls = []
        for start in range(0, n, batch):
            idx = order[start : start + batch]
            x = state[idx]
            with autocast:  # only the matmuls: everything after .float() is float32
                logits, value = actor(x[:, :obs_size]).float(), critic(x).float().squeeze(1)
            logits = logits.masked_fill(~mask[idx], ILLEGAL_LOGIT)
            log_probs = torch.log_softmax(logits, dim=1)
            new_logp = log_probs.gather(1, actions[idx, None]).squeeze(1)
            entropy = -(log_probs.exp() * log_probs).sum(1).mean()
            log_ratio = new_logp - old_logp[idx]
            adv = advantages[idx]
            distill = torch.zeros(())
            if any_searched:
                mine = searched[idx]
                if mine.any():
                    # Cross-entropy to the search target over the searched rows (illegal
                    # actions carry no target mass: 0 * ILLEGAL_LOGIT-ish log-probs = 0).
                    distill = -(target[idx][mine] * log_probs[mine]).sum(1).mean()
                log_ratio, adv = log_ratio[~mine], adv[~mine]
            ratio = log_ratio.exp()
            if len(adv) > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            if len(adv) and (s.search_ppo_loss or not any_searched):
                pg_loss = torch.max(-adv * ratio,
                                    -adv * ratio.clamp(1 - p.clip_range, 1 + p.clip_range)).mean()
            else:
                pg_loss = torch.zeros(())
            if s.clip_value_loss:
                clipped = old_value[idx] + (value - old_value[idx]).clamp(-p.clip_range, p.clip_range)
                v_loss = 0.5 * torch.max((value - returns[idx]) ** 2,
                                         (clipped - returns[idx]) ** 2).mean()
            else:
                v_loss = 0.5 * ((value - returns[idx]) ** 2).mean()
            loss = pg_loss - p.ent_coef * entropy + p.vf_coef * v_loss
            if any_searched:
                loss = loss + s.distill_coef * distill
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(params, p.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                kl = ((ratio - 1) - log_ratio).mean().item() if len(ratio) else 0.0
                stats["clip_fraction"].append(((ratio - 1).abs() > p.clip_range).float().mean().item()
                                              if len(ratio) else 0.0)
            kls.append(kl)
            stats["policy_loss"].append(pg_loss.item())
            stats["value_loss"].append(v_loss.item())
            stats["entropy"].append(entropy.item())
            stats["approx_kl"].append(kl)
            stats["distill_loss"].append(distill.item())
        epochs += 1
        if p.target_kl is not None and np.mean(kls) > p.target_kl:
            break
    out = {k: float(np.mean(v)) for k, v in stats.items()}
    out["epochs"] = epochs
    var = float(np.var(roll.returns))
    out["explained_variance"] = float("nan") if var == 0 else float(
        1 - np.var(roll.returns - roll.value) / var)
    return out


# ------------------------------------------------------------------------------- the trainer
class SelfPlayTrainer:
    """Networks, optimiser, collection and counters of a self-play run; `iterate()` is one
    rollout and its update. No files: `train_selfplay` adds the run directory around it."""

    def __init__(self, config: TrainConfig, *, seed: int, snapshots: list[str] = (),
                 state: dict | None = None):
        self.config = config
        torch.set_num_threads(config.torch_threads)
        torch.manual_seed(seed)
        self.actor, self.critic = build_networks(config)
        params = [*self.actor.parameters(), *self.critic.parameters()]
        self.optimizer = torch.optim.Adam(params, lr=config.ppo.learning_rate, eps=1e-5)
        self.steps = 0
        self.updates = 0
        self.snapshots = list(snapshots)
        if state is not None:
            self.actor.load_state_dict(state["actor"])
            self.critic.load_state_dict(state["critic"])
            self.optimizer.load_state_dict(state["optimizer"])  # iterate() sets each update's lr
            self.steps, self.updates = int(state["steps"]), int(state["updates"])
        else:
            if config.selfplay.init_actor:
                load_actor(self.actor, config.selfplay.init_actor, config)
            if config.selfplay.init_critic:
                load_critic(self.critic, config.selfplay.init_critic, config)
        s = config.selfplay
        if s.search_share > 0 and s.search_operator == "lookahead":
            check_teacher(s.search_teacher, config)
        self.snapshots = self.snapshots[-config.opponents.max_snapshots:]
        self.generator = torch.Generator().manual_seed(seed)
        self.overlap = s.overlap
        if s.ray_address is not None:
            from training.selfplay.ray_collection import RayCollection

            self.collection = RayCollection(config, seed, self.snapshots)
        elif s.workers == 1 and not s.overlap:
            self.collection = LocalCollection(config, seed, self.snapshots)
        else:
            self.collection = ProcessCollection(config, seed, self.snapshots)
        self._pending_snapshots: list[str] = []
        self._started = False

    def add_snapshot(self, path: str) -> None:
        self.snapshots = [*self.snapshots, str(path)][-self.config.opponents.max_snapshots:]
        self._pending_snapshots.append(str(path))

    def _take_pending(self) -> list[str]:
        pending, self._pending_snapshots = self._pending_snapshots, []
        return pending

    def iterate(self) -> dict:
        """Collect one rollout and update on it; returns the iteration's statistics."""
        started = time.perf_counter()
        if not self.overlap:
            roll, stats = self.collection.collect(self.actor, self.critic, self._take_pending())
        else:
            if not self._started:
                self.collection.start(self.actor, self.critic, self._take_pending())
                self._started = True
            roll, stats = self.collection.result()
            # The next rollout is collected with these weights while they are being updated.
            self.collection.start(self.actor, self.critic, self._take_pending())
        collected = time.perf_counter()
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate()
        update = ppo_update(self.actor, self.critic, self.optimizer, roll, self.config,
                            self.generator)
        self.updates += 1
        self.steps += len(roll.action)
        done = time.perf_counter()
        update.update({
            "decisions": len(roll.action),
            "searched": float(roll.searched.mean()) if len(roll.searched) else 0.0,
            "win_rate": stats["wins"] / max(stats["seats"], 1),
            "rounds": stats["rounds"],
            "learning_rate": self.optimizer.param_groups[0]["lr"],
            "collect_s": collected - started,
            "update_s": done - collected,
            "mean_reward": float(roll.reward.sum() / max(stats["seats"], 1)),
        })
        return update

    def learning_rate(self) -> float:
        """The step size of the next update: ppo.learning_rate, or its linear decay to 0 over
        total_steps with ppo.anneal_lr."""
        base = self.config.ppo.learning_rate
        if not self.config.ppo.anneal_lr:
            return base
        return base * min(max(1.0 - self.steps / self.config.total_steps, 0.0), 1.0)

    def state(self) -> dict:
        """What `trainer.pt` holds (tensors, numbers, strings only: weights_only loading). The
        pool's snapshots are kept by folder name (they live in the run's `snapshots/`), so a
        moved or copied run folder resumes with its own."""
        return {"format": TRAINER_FORMAT, "actor": self.actor.state_dict(),
                "critic": self.critic.state_dict(), "optimizer": self.optimizer.state_dict(),
                "steps": self.steps, "updates": self.updates,
                "snapshots": [Path(p).name for p in self.snapshots]}

    def close(self) -> None:
        self.collection.close()


def load_trainer_state(checkpoint: Path) -> dict:
    """`trainer.pt` of a checkpoint, read with `weights_only=True` (never unpickles code)."""
    file = Path(checkpoint) / TRAINER_FILE
    if not file.is_file():
        raise FileNotFoundError(f"{file}: missing; a self-play checkpoint needs it to resume")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 — any failure means a bad file
        raise ckpt.CheckpointError(f"{file}: cannot be read as a trainer state "
                                   f"({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or state.get("format") != TRAINER_FORMAT:
        raise ckpt.CheckpointError(f"{file}: not a trainer state of format {TRAINER_FORMAT}")
    return state


# ------------------------------------------------------------------------------- checkpoints
def make_card(trainer: SelfPlayTrainer, rules: ChickenFootConfig, config: TrainConfig,
              started: float) -> dict:
    layout = observation_layout(rules)
    return {
        "format": ckpt.CHECKPOINT_FORMAT,
        "kind": "self-play masked PPO (training.selfplay.learner), actor MLP",
        "algo": "selfplay",
        "steps": int(trainer.steps),
        "env_config": rules.to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "observation_size": layout.size,
        "num_actions": rules.num_actions,
        "activation": config.ppo.activation,
        "net_arch": list(config.ppo.net_arch),
        "episode": config.env.episode,
        "update_dtype": update_dtype(config.selfplay.update_dtype),
        "train_config": config.to_dict(),
        "git": git_revision(),
        "wall_time_s": round(time.time() - started, 1),
    }


def save(trainer: SelfPlayTrainer, run_dir: Path, rules: ChickenFootConfig, config: TrainConfig,
         started: float) -> Path:
    """The latest checkpoint: weights-only actor + card + trainer.pt (atomic, pruned)."""
    card = make_card(trainer, rules, config, started)
    state = trainer.state()

    def write(target: Path) -> Path:
        return ckpt.write_weights_checkpoint(
            target, actor_weights(trainer.actor), card,
            writers={TRAINER_FILE: lambda path: torch.save(state, path)})

    return ckpt.save_checkpoint_as_latest(run_dir / "checkpoints", trainer.steps, write)


def write_snapshot(trainer: SelfPlayTrainer, run_dir: Path, rules: ChickenFootConfig,
                   config: TrainConfig, started: float) -> Path:
    """Write the actor as `snapshots/step_<N>/` for the opponent pool (replacing a folder of
    that name: only a killed session's, which no checkpoint's pool names)."""
    path = run_dir / "snapshots" / f"step_{trainer.steps:09d}"
    ckpt.write_weights_checkpoint(path, actor_weights(trainer.actor),
                                  make_card(trainer, rules, config, started), replace=True)
    return path


# ------------------------------------------------------------------------------- training
def train_selfplay(config: TrainConfig, run_dir: Path, *, resume: bool = False,
                   argv: list[str] = (), console: Console | None = None) -> TrainResult:
    """Train (or continue) a self-play run in `run_dir` up to `config.total_steps`."""
    from torch.utils.tensorboard import SummaryWriter

    console = console or Console()
    started = session_started = time.time()
    rules = config.rules()
    write_run_info(run_dir, config, list(argv))

    # ---- seeding: everything random derives from config.seed (and, on resume, the step count,
    # so a resumed run deals new games).
    state = None
    if resume:
        latest = ckpt.resolve_checkpoint(run_dir)
        state = load_trainer_state(latest)
        started -= ckpt.read_card(latest).get("wall_time_s", 0.0)
        clean_for_resume(run_dir, int(state["steps"]))
    first_step = int(state["steps"]) if state else 0
    seed = config.seed + first_step
    # ----

    if state:
        snapshots = [str(run_dir / "snapshots" / name) for name in state["snapshots"]]
        missing = [p for p in snapshots if not (Path(p) / "card.json").is_file()]
        if missing:
            raise FileNotFoundError(f"--resume {run_dir}: the opponent pool's snapshot(s) "
                                    f"{missing} are missing")
    else:
        snapshots = snapshot_paths(run_dir, config)
    trainer = SelfPlayTrainer(config, seed=seed, snapshots=snapshots, state=state)
    console.say(precision_line(config.selfplay.update_dtype))
    writer = SummaryWriter(str(run_dir / "tb" / "selfplay"))
    schedule = Schedule(config, trainer.steps)
    evaluations = Evaluations(run_dir, rules, config, console)

    def evaluate_now() -> None:
        target = save(trainer, run_dir, rules, config, started)
        for name, value in (evaluations.run(target, trainer.steps) or {}).items():
            writer.add_scalar(f"eval/{name}", value, trainer.steps)

    if config.progress_bar:
        console.start_bar(trainer.steps, config.total_steps, run_dir.name)
    session_steps, session_clock = 0, time.perf_counter()
    try:
        while trainer.steps < config.total_steps:
            stats = trainer.iterate()
            session_steps += stats["decisions"]
            rate = session_steps / (time.perf_counter() - session_clock)
            console.update(trainer.steps)
            for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction",
                         "explained_variance", "epochs", "learning_rate", "distill_loss",
                         "searched"):
                writer.add_scalar(f"train/{name}", stats[name], trainer.steps)
            writer.add_scalar("rollout/win_rate", stats["win_rate"], trainer.steps)
            writer.add_scalar("rollout/mean_reward_per_seat", stats["mean_reward"], trainer.steps)
            writer.add_scalar("time/decisions_per_s", rate, trainer.steps)
            writer.add_scalar("time/collect_s", stats["collect_s"], trainer.steps)
            writer.add_scalar("time/update_s", stats["update_s"], trainer.steps)
            due = schedule.due(trainer.steps)
            if due.snapshot:
                trainer.add_snapshot(str(write_snapshot(trainer, run_dir, rules, config, started)))
                writer.add_scalar("opponents/snapshots", len(trainer.snapshots), trainer.steps)
            if due.evaluate:
                evaluate_now()  # writes the latest checkpoint first
            elif due.checkpoint:
                save(trainer, run_dir, rules, config, started)
    except KeyboardInterrupt:
        console.close_bar()
        console.say(f"\ninterrupted at step {trainer.steps}; writing a checkpoint")
        final = save(trainer, run_dir, rules, config, started)
        console.say(f"saved {final}; continue with: python -m training.ppo --resume {run_dir}")
        trainer.close()
        writer.close()
        raise
    except BaseException:
        trainer.close()
        writer.close()
        raise
    console.close_bar()
    final = save(trainer, run_dir, rules, config, started)
    if evaluations.final_due(trainer.steps):
        evaluate_now()
    trainer.close()
    writer.close()
    result = TrainResult(final, int(trainer.steps), evaluations.failed)
    console.say(summary(run_dir, config, result, first_step,
                        session_s=time.time() - session_started, total_s=time.time() - started))
    return result

