"""The Stable-Baselines3 learner (`algo: maskable_ppo`): sb3-contrib's `MaskablePPO` on the
single-agent view `cf_env.envs.single_agent`.

One seat per game learns; the opponents play inside `step` (drawn from
`training.selfplay.opponents.OpponentPool`: bots and frozen snapshots of the learner), and the
masks come from `action_masks()`. The run directory, console, evaluations and the schedule are
the ones the self-play learner uses (`training.session`, `training.schedule`). `--resume`
unpickles the run's own `model.zip` (SB3's format): resume only run folders you created.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import numpy as np

from cf_env import ChickenFootConfig
from cf_env.envs.single_agent import ChickenFootSingleAgentEnv
from training.artifacts import checkpoints as ckpt
from training.artifacts.provenance import git_revision
from training.config import TrainConfig, config_from_dict
from training.schedule import Evaluations, Schedule
from training.selfplay.opponents import OpponentPool
from training.session import (
    Console,
    TrainResult,
    clean_for_resume,
    snapshot_paths,
    summary,
    write_run_info,
)


# ------------------------------------------------------------------------------- envs
def make_training_env(config_dict: dict, snapshots: list[str], rank: int, seed: int):
    """One training env (module-level so that SubprocVecEnv can pickle it)."""
    config = config_from_dict(config_dict)
    rules = config.rules()
    pool = OpponentPool(
        rules,
        bots=config.opponents.bots,
        snapshot_weight=config.opponents.snapshot_weight,
        max_snapshots=config.opponents.max_snapshots,
        snapshots=snapshots,
        snapshot_greedy=config.opponents.snapshot_greedy,
    )
    env = ChickenFootSingleAgentEnv(
        rules,
        opponents=pool,
        episode=config.env.episode,
        learner_skip_forced=config.env.learner_skip_forced,
        **config.options().to_dict(),  # env.rules' driver options (reward_mode, ...)
    )
    env.reset(seed=seed + rank)
    return env


def make_vec_env(config: TrainConfig, snapshots: list[str], seed: int):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    fns = [
        functools.partial(make_training_env, config.to_dict(), list(snapshots), rank, seed)
        for rank in range(config.num_envs)
    ]
    vec = SubprocVecEnv(fns) if config.vec_env == "subproc" else DummyVecEnv(fns)
    vec.seed(seed)
    return VecMonitor(vec)


# ------------------------------------------------------------------------------- callbacks
def _callbacks(config: TrainConfig, run_dir: Path, rules: ChickenFootConfig, started: float,
               console: Console):
    from stable_baselines3.common.callbacks import BaseCallback

    class RunCallback(BaseCallback):
        """Checkpoints, snapshots for the opponent pool and evaluations on the shared schedule;
        the training win rate and the progress bar."""

        def __init__(self):
            super().__init__()
            self.wins: list[float] = []
            self.evaluations = Evaluations(run_dir, rules, config, console)
            self.schedule: Schedule | None = None

        def _on_training_start(self) -> None:
            self.schedule = Schedule(config, self.model.num_timesteps)
            if config.progress_bar:
                console.start_bar(self.model.num_timesteps, config.total_steps, run_dir.name)

        def _on_training_end(self) -> None:
            console.close_bar()

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done and "win" in info:
                    self.wins.append(info["win"])
            steps = self.num_timesteps
            console.update(steps)
            due = self.schedule.due(steps)
            if due.snapshot:
                self._snapshot()
            if due.evaluate:
                self._evaluate()  # writes the latest checkpoint first
            elif due.checkpoint:
                save(self.model, run_dir, rules, config, started)
            return True

        def _on_rollout_end(self) -> None:
            if self.wins:
                self.logger.record("rollout/win_rate", float(np.mean(self.wins)))
                self.wins.clear()

        def _snapshot(self) -> None:
            card = ckpt.make_card(self.model, rules, config.ppo.activation)
            path = run_dir / "snapshots" / f"step_{self.num_timesteps:09d}"
            ckpt.write_checkpoint(path, self.model, card, with_model=False, replace=True)
            self.training_env.env_method("call_opponents", "add_snapshot", str(path))
            self.logger.record("opponents/snapshots", len(snapshot_paths(run_dir, config)))

        def _evaluate(self) -> None:
            target = save(self.model, run_dir, rules, config, started)
            metrics = self.evaluations.run(target, self.num_timesteps)
            for name, value in (metrics or {}).items():
                self.logger.record(f"eval/{name}", value)
            if metrics:
                self.logger.dump(self.num_timesteps)

    return RunCallback()


def _card(model, rules: ChickenFootConfig, config: TrainConfig, started: float) -> dict:
    return ckpt.make_card(
        model, rules, config.ppo.activation,
        episode=config.env.episode,
        train_config=config.to_dict(),
        git=git_revision(),
        wall_time_s=round(time.time() - started, 1),
    )


def save(model, run_dir: Path, rules: ChickenFootConfig, config: TrainConfig, started: float) -> Path:
    """Write the latest checkpoint (atomic; see training.artifacts.checkpoints)."""
    return ckpt.save_run_checkpoint(run_dir / "checkpoints", model,
                                    _card(model, rules, config, started))


def ppo_hyperparameters(p) -> dict:
    """The `MaskablePPO` arguments taken from `ppo.*` that a loaded model accepts too.

    Passed to the constructor for a new run and to `MaskablePPO.load` on `--resume`: SB3's load
    sets them on the model before `_setup_model`, which rebuilds the learning-rate and clip-range
    schedules and the rollout buffer (gamma, gae_lambda) from them. Without this a resumed model
    trains with the values it was saved with, whatever config.yaml says. (`n_steps`, `net_arch`
    and `activation` fix the saved model's shapes: `config.RESUME_FIXED`.)
    """
    return {
        "learning_rate": p.learning_rate,
        "batch_size": p.batch_size,
        "n_epochs": p.n_epochs,
        "gamma": p.gamma,
        "gae_lambda": p.gae_lambda,
        "clip_range": p.clip_range,
        "ent_coef": p.ent_coef,
        "vf_coef": p.vf_coef,
        "max_grad_norm": p.max_grad_norm,
        "target_kl": p.target_kl,
    }


def train_maskable_ppo(config: TrainConfig, run_dir: Path, *, resume: bool = False,
                       argv: list[str] = (), console: Console | None = None) -> TrainResult:
    """Train (or continue) a MaskablePPO run in `run_dir` up to `config.total_steps`."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.utils import set_random_seed

    console = console or Console()
    started = session_started = time.time()
    rules = config.rules()
    write_run_info(run_dir, config, list(argv))

    # ---- seeding: everything random in the run derives from config.seed (and, on resume, the
    # step count, so that a resumed run does not replay the deals it has already seen).
    torch.set_num_threads(config.torch_threads)
    latest = card = None
    if resume:
        latest = ckpt.resolve_checkpoint(run_dir)
        card = ckpt.read_card(latest)
        clean_for_resume(run_dir, int(card["steps"]))
    first_step = card["steps"] if resume else 0
    seed = config.seed + first_step
    set_random_seed(seed)
    # ----

    venv = make_vec_env(config, snapshot_paths(run_dir, config), seed)
    p = config.ppo
    if resume:
        # `seed` too: SB3's load re-seeds torch with the seed saved in the model otherwise.
        model = MaskablePPO.load(latest / "model.zip", env=venv, device="cpu",
                                 tensorboard_log=str(run_dir / "tb"), seed=seed,
                                 **ppo_hyperparameters(p))
        started -= card.get("wall_time_s", 0.0)
    else:
        activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[p.activation]
        model = MaskablePPO(
            "MlpPolicy",
            venv,
            **ppo_hyperparameters(p),
            n_steps=p.n_steps,
            policy_kwargs={"net_arch": {"pi": list(p.net_arch), "vf": list(p.net_arch)},
                           "activation_fn": activation},
            tensorboard_log=str(run_dir / "tb"),
            seed=seed,
            device="cpu",
            verbose=0,
        )
    remaining = config.total_steps - model.num_timesteps
    callback = _callbacks(config, run_dir, rules, started, console)
    try:
        if remaining > 0:
            model.learn(remaining, callback=callback, tb_log_name="ppo",
                        reset_num_timesteps=not resume)
    except KeyboardInterrupt:
        console.close_bar()
        console.say(f"\ninterrupted at step {model.num_timesteps}; writing a checkpoint")
        final = save(model, run_dir, rules, config, started)
        console.say(f"saved {final}; continue with: python -m training.ppo --resume {run_dir}")
        venv.close()
        raise
    final = save(model, run_dir, rules, config, started)
    if callback.evaluations.final_due(model.num_timesteps):
        callback.evaluations.run(final, model.num_timesteps)
    venv.close()
    result = TrainResult(final, int(model.num_timesteps), callback.evaluations.failed)
    console.say(summary(run_dir, config, result, first_step,
                        session_s=time.time() - session_started, total_s=time.time() - started))
    return result
