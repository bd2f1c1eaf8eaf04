"""`python -m training.ppo`: masked PPO with self-play, one recorded run directory per run.

    python -m training.ppo                                  # configs/default.yaml
    python -m training.ppo --config configs/smoke.yaml --set ppo.learning_rate=1e-4
    python -m training.ppo --resume runs/<run-name>         # continue from the latest checkpoint

Two learners, picked by the config's `algo`: `selfplay` (the default; `training.selfplay`:
every seat of many batched games learns, with a privileged critic) and `maskable_ppo`
(sb3-contrib's `MaskablePPO` on the single-agent view `cf_env.single_agent`: one seat per game,
opponents playing inside `step`, masks from `action_masks()`, opponents from
`training.opponents.OpponentPool`). Both share everything around the learner
(`training.session`: run directory, console, evaluation, summary; `training.checkpoints`). The run directory
The run directory
(`<runs_dir>/<run-name>/`) records everything needed to reproduce or continue the run:

    config.yaml        the resolved training config
    run.json           git revision, package versions, env config, OBSERVATION_VERSION, command
    tb/                TensorBoard logs (losses, rollout/win_rate, eval/*, ...)
    checkpoints/       step_<N>/ checkpoints (see training.checkpoints); latest.json, best.json
    snapshots/         frozen learners used as opponents (policy weights + card)
    evals.jsonl        one line per periodic evaluation (training.evaluate results)

Ctrl-C writes a checkpoint before exiting; `--resume` continues the step count, the optimiser and
the opponent pool (the envs are re-seeded from `seed` and the step count, so no deal repeats).
For `maskable_ppo`, `--resume` unpickles the run's own `model.zip` (SB3 format); resume only run
folders you created (README, "Security: loading checkpoints"). A self-play run resumes from
`trainer.pt`, read with `torch.load(weights_only=True)` (no arbitrary unpickling).

Every check on the user's input (the config and its `--set` overrides, each policy spec, on
`--resume` the run's config, checkpoint and which fields may change: `config.RESUME_FIXED`) runs
before anything is written, in `prepare`. A failed check prints one `error:` line and exits 2;
a new run that fails before its first checkpoint removes its folder, so a rerun is not blocked.
Hyperparameters changed on `--resume` are passed to the loaded model (`ppo_hyperparameters`), so
what config.yaml and the cards say is what trains. The session reports the run's step count
(a progress bar over the run's total, not the session's), each evaluation and a summary.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import shutil
import sys
import time
from pathlib import Path
from typing import NoReturn

import numpy as np

from cf_env import ChickenFootConfig
from cf_env.envs.single_agent import ChickenFootSingleAgentEnv

from . import checkpoints as ckpt
from .config import (
    TrainConfig,
    apply_override,
    config_from_dict,
    load_config,
    read_yaml,
    resume_changes,
    validate_policies,
)
from .opponents import OpponentPool
from .processes import CollectorError
from .provenance import (
    git_revision,
    has_checkpoint,
    lock_run,
    release_run,
    restart_run_dir,
    write_config,
)
from .session import (  # noqa: F401  (shared by both algorithms; re-exported for callers)
    PACKAGES,
    Console,
    TrainResult,
    best_so_far,
    clean_for_resume,
    evaluate_checkpoint,
    new_run_dir,
    read_run_info,
    snapshot_paths,
    step_text,
    summary,
    write_run_info,
)

# The names this module used before the shared pieces moved to training.session.
_best_so_far = best_so_far
_snapshot_paths = snapshot_paths


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
        """Checkpoints, snapshots for the opponent pool, evaluations, the training win rate and
        the progress bar."""

        def __init__(self):
            super().__init__()
            self.wins: list[float] = []
            self.best = _best_so_far(run_dir)
            self.last_eval = -1
            self.failed_evals = 0
            self.next_ckpt = self.next_snap = self.next_eval = 0

        def _on_training_start(self) -> None:
            steps = self.model.num_timesteps
            o, e = config.opponents, config.eval
            self.next_ckpt = steps + config.checkpoint_every
            self.next_snap = (steps // o.snapshot_every + 1) * o.snapshot_every
            self.next_eval = (steps // e.every_steps + 1) * e.every_steps if e.every_steps else None
            if config.progress_bar:
                console.start_bar(steps, config.total_steps, run_dir.name)

        def _on_training_end(self) -> None:
            console.close_bar()

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done and "win" in info:
                    self.wins.append(info["win"])
            steps = self.num_timesteps
            console.update(steps)
            if steps >= self.next_snap:
                self.next_snap += config.opponents.snapshot_every
                self._snapshot()
            evaluate_now = self.next_eval is not None and steps >= self.next_eval
            if evaluate_now:
                self.next_eval += config.eval.every_steps
                self._evaluate()  # writes the latest checkpoint first
            if steps >= self.next_ckpt:
                while self.next_ckpt <= steps:
                    self.next_ckpt += config.checkpoint_every
                if not evaluate_now:
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
            self.logger.record("opponents/snapshots", len(_snapshot_paths(run_dir, config)))

        def _evaluate(self) -> None:
            target = save(self.model, run_dir, rules, config, started)
            self.last_eval = self.num_timesteps
            metrics = evaluate_checkpoint(target, rules, config, self.num_timesteps, console)
            if metrics is None:
                self.failed_evals += 1
                return
            for name, value in metrics.items():
                self.logger.record(f"eval/{name}", value)
            self.logger.dump(self.num_timesteps)
            score = metrics.get(f"win_rate_vs_{config.eval.best_metric}")
            if score is not None and score > self.best:
                self.best = score
                ckpt.write_pointer(run_dir / "checkpoints", "best", target,
                                   steps=self.num_timesteps, value=score,
                                   metric=f"win_rate_vs_{config.eval.best_metric}")

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
    """Write the latest checkpoint (atomic; see training.checkpoints)."""
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


# ------------------------------------------------------------------------------- training
def train(config: TrainConfig, run_dir: Path, *, resume: bool = False, argv: list[str] = (),
          console: Console | None = None) -> TrainResult:
    """Train (or continue) the run in `run_dir` up to `config.total_steps`, then print a summary.

    `config.algo` picks the learner: "selfplay" (`training.selfplay`) or "maskable_ppo" (below).
    """
    if config.algo == "selfplay":
        from .selfplay import train_selfplay

        return train_selfplay(config, run_dir, resume=resume, argv=argv, console=console)
    return train_maskable_ppo(config, run_dir, resume=resume, argv=argv, console=console)


def train_maskable_ppo(config: TrainConfig, run_dir: Path, *, resume: bool = False,
                       argv: list[str] = (), console: Console | None = None) -> TrainResult:
    """The sb3-contrib MaskablePPO learner on the single-agent env (`algo: maskable_ppo`)."""
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

    venv = make_vec_env(config, _snapshot_paths(run_dir, config), seed)
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
    failed = getattr(callback, "failed_evals", 0)
    if config.eval.every_steps and getattr(callback, "last_eval", -1) != model.num_timesteps:
        metrics = evaluate_checkpoint(final, rules, config, model.num_timesteps, console)
        failed += metrics is None
        if metrics:
            best = metrics.get(f"win_rate_vs_{config.eval.best_metric}", -1.0)
            if best > _best_so_far(run_dir):
                ckpt.write_pointer(run_dir / "checkpoints", "best", final,
                                   steps=model.num_timesteps, value=best,
                                   metric=f"win_rate_vs_{config.eval.best_metric}")
    venv.close()
    result = TrainResult(final, int(model.num_timesteps), failed)
    console.say(summary(run_dir, config, result, first_step,
                        session_s=time.time() - session_started, total_s=time.time() - started))
    return result


# ------------------------------------------------------------------------------- command line
DEFAULT_CONFIG = "configs/default.yaml"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m training.ppo", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", default=None,
                        help=f"YAML config file (default: {DEFAULT_CONFIG}; not with --resume, "
                        "which reads the run's own config.yaml)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override a config field, e.g. --set ppo.learning_rate=1e-4")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR")
    return parser.parse_args(argv)


@dataclasses.dataclass
class Start:
    """What a session will do, decided and checked before anything is written."""

    config: TrainConfig
    config_name: str
    run_dir: Path | None = None
    """None for a new run until every check has passed and its folder is created."""
    checkpoint: Path | None = None
    """On --resume: the checkpoint the run continues from."""
    steps: int = 0
    """The run's step count when the session starts."""
    changes: dict = dataclasses.field(default_factory=dict)
    """On --resume: {field: (saved, new)} for each field `--set` changes."""
    restart: bool = False
    """On --resume of a run with no checkpoint (killed before its first): start it again."""


def prepare(args: argparse.Namespace) -> Start:
    """Check everything the user gave (config, overrides, specs, the resumed run); write nothing.

    Raises `ValueError` or `OSError` (`FileNotFoundError` included) with a message naming the
    problem and what would be valid.
    """
    if args.resume:
        if args.config is not None:
            # A resumed run trains on its own config.yaml; another file would be ignored.
            raise ValueError(f"--config {args.config} with --resume {args.resume}: a resumed run "
                             f"keeps its own config ({Path(args.resume) / 'config.yaml'}); change "
                             "fields with --set (python -m training.ppo --resume "
                             f"{args.resume} --set total_steps=<more>), or start a new run with "
                             "--config")
        return _prepare_resume(Path(args.resume), args.set)
    path = args.config or DEFAULT_CONFIG
    config = load_config(path, args.set)
    validate_policies(config)
    return Start(config, Path(path).stem)


def _prepare_resume(run_dir: Path, overrides: list[str]) -> Start:
    saved_file = run_dir / "config.yaml"
    if not saved_file.is_file():
        raise FileNotFoundError(f"--resume {run_dir}: no config.yaml there; expected a run "
                                "directory written by python -m training.ppo (runs/<name>)")
    data = read_yaml(saved_file)
    if not isinstance(data, dict):
        raise ValueError(f"{saved_file}: expected a mapping of config sections")
    saved = config_from_dict(copy.deepcopy(data), checked=False)  # `config` below is checked
    for assignment in overrides:
        apply_override(data, assignment)
    config = config_from_dict(data)
    changes = resume_changes(saved, config)  # refuses seed, num_envs, shapes, env.*, ...
    read_run_info(run_dir)  # a damaged run.json is refused now, not after the first step
    if not has_checkpoint(run_dir):
        validate_policies(config)
        return Start(config, run_dir.name, run_dir, changes=changes, restart=True)
    latest = ckpt.resolve_checkpoint(run_dir)
    card = ckpt.read_card(latest)
    ckpt.check_compatible(card, config.rules(), strict=True)
    needed = "trainer.pt" if config.algo == "selfplay" else "model.zip"
    if not (latest / needed).is_file():
        raise FileNotFoundError(f"--resume {run_dir}: checkpoint {latest} has no {needed} (the "
                                "optimiser state); a weights-only checkpoint cannot be resumed")
    validate_policies(config)
    return Start(config, run_dir.name, run_dir, latest, int(card["steps"]), changes)


def main(argv: list[str] | None = None) -> Path:
    """Run the command; returns the final checkpoint directory.

    Exits 2 (SystemExit) with one `error:` line for a problem in the user's input, 1 when an
    evaluation failed during the session. Any other exception is a bug and propagates.
    """
    args = parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)
    console = Console()
    try:
        start = prepare(args)
        if start.run_dir is None:
            start.run_dir, start.restart = new_run_dir(start.config, start.config_name)
        elif start.restart:
            restart_run_dir(start.run_dir, start.config.to_dict())
        else:
            lock_run(start.run_dir)  # one session at a time; released when it ends or dies
    except (ValueError, OSError) as err:  # the user's input; anything else is a bug: traceback
        print("error: " + " ".join(str(err).split()), file=sys.stderr)  # one line
        raise SystemExit(2) from None
    try:
        return _run_session(start, argv, console)
    finally:
        release_run(start.run_dir)


def _run_session(start: Start, argv: list[str], console: Console) -> Path:
    """Train the checked `start` (its run directory locked); exits as `main` says."""
    config, run_dir = start.config, start.run_dir
    if start.restart:
        console.say(f"run {run_dir} has no checkpoint (its session stopped before the first); "
                    "starting it again from step 0")
    if start.checkpoint is not None:
        if start.steps >= config.total_steps:
            console.say(f"run {run_dir} is already complete: "
                        f"{step_text(start.steps, config.total_steps)}; nothing to do, nothing "
                        "changed. To train on: "
                        f"python -m training.ppo --resume {run_dir} --set total_steps=<more>")
            return start.checkpoint
        console.say(f"resuming run {run_dir} at step {start.steps:,} of {config.total_steps:,}")
        for name, (old, new) in start.changes.items():
            console.say(f"  {name}: {old!r} -> {new!r}")
        if start.changes:
            write_config(run_dir, config.to_dict())
        try:
            result = train(config, run_dir, resume=True, argv=argv, console=console)
        except CollectorError as err:
            _collector_failed(err, run_dir)
    else:
        console.say(f"run directory: {run_dir}")
        console.say(f"starting run {run_dir} at step 0 of {config.total_steps:,}")
        try:
            result = train(config, run_dir, argv=argv, console=console)
        except BaseException as err:
            if not has_checkpoint(run_dir):
                # Nothing to resume: remove the folder so that the same command can run again.
                shutil.rmtree(run_dir, ignore_errors=True)
                console.say(f"removed {run_dir}: the run stopped before its first checkpoint")
            if isinstance(err, CollectorError):
                _collector_failed(err, run_dir)
            raise
    if result.failed_evals:
        raise SystemExit(1)
    return result.checkpoint


def _collector_failed(err: CollectorError, run_dir: Path) -> NoReturn:
    """A collector died: say which and how, and how to go on; exit 1."""
    hint = (f"; its latest checkpoint is intact: python -m training.ppo --resume {run_dir}"
            if has_checkpoint(run_dir) else "")
    print(f"error: the run stopped: {err}{hint}", file=sys.stderr)
    raise SystemExit(1) from None


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
