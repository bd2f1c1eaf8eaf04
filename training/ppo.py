"""`python -m training.ppo`: masked PPO with self-play, one recorded run directory per run.

    python -m training.ppo                                  # configs/default.yaml
    python -m training.ppo --config configs/smoke.yaml --set ppo.learning_rate=1e-4
    python -m training.ppo --resume runs/<run-name>         # continue from the latest checkpoint

The learner is sb3-contrib's `MaskablePPO` on the single-agent view `cf_env.single_agent` (its
own seat, opponents playing inside `step`, legal-action masks from `action_masks()`). Opponents
come from `training.opponents.OpponentPool`: bots plus frozen past learners. The run directory
(`<runs_dir>/<run-name>/`) records everything needed to reproduce or continue the run:

    config.yaml        the resolved training config
    run.json           git revision, package versions, env config, OBSERVATION_VERSION, command
    tb/                TensorBoard logs (SB3's metrics, rollout/win_rate, eval/*)
    checkpoints/       step_<N>/ checkpoints (see training.checkpoints); latest.json, best.json
    snapshots/         frozen learners used as opponents (policy weights + card)
    evals.jsonl        one line per periodic evaluation (training.evaluate results)

Ctrl-C writes a checkpoint before exiting; `--resume` continues the step count, the optimiser and
the opponent pool (the envs are re-seeded from `seed` and the step count, so no deal repeats).
`--resume` unpickles the run's own `model.zip` (SB3 format); resume only run folders you created
(README, "Security: loading checkpoints").
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import sys
import time
import traceback
from datetime import datetime
from pathlib import Path

import numpy as np
import yaml

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.single_agent import ChickenFootSingleAgentEnv

from . import checkpoints as ckpt
from .config import TrainConfig, config_from_dict, load_config
from .opponents import OpponentPool
from .provenance import create_run_dir, git_revision, package_versions

PACKAGES = ("numpy", "torch", "gymnasium", "pettingzoo", "stable-baselines3", "sb3-contrib")


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


# ------------------------------------------------------------------------------- run directory
def new_run_dir(config: TrainConfig, config_name: str) -> Path:
    return create_run_dir(config.runs_dir, config.run_name, f"{config_name}-s{config.seed}",
                          config.to_dict(), "pick another run_name or --resume it")


def write_run_info(run_dir: Path, config: TrainConfig, argv: list[str]) -> None:
    info_path = run_dir / "run.json"
    history = json.loads(info_path.read_text())["sessions"] if info_path.exists() else []
    history.append({"started": datetime.now().isoformat(timespec="seconds"), "argv": argv,
                    "git": git_revision()})
    info = {
        "env_config": config.rules().to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "packages": package_versions(PACKAGES),
        "platform": platform.platform(),
        "sessions": history,
    }
    info_path.write_text(json.dumps(info, indent=2) + "\n")


# ------------------------------------------------------------------------------- callbacks
def _callbacks(config: TrainConfig, run_dir: Path, rules: ChickenFootConfig, started: float):
    from stable_baselines3.common.callbacks import BaseCallback

    class RunCallback(BaseCallback):
        """Checkpoints, snapshots for the opponent pool, evaluations and the training win rate."""

        def __init__(self):
            super().__init__()
            self.wins: list[float] = []
            self.best = _best_so_far(run_dir)
            self.last_eval = -1
            self.next_ckpt = self.next_snap = self.next_eval = 0

        def _on_training_start(self) -> None:
            steps = self.model.num_timesteps
            o, e = config.opponents, config.eval
            self.next_ckpt = steps + config.checkpoint_every
            self.next_snap = (steps // o.snapshot_every + 1) * o.snapshot_every
            self.next_eval = (steps // e.every_steps + 1) * e.every_steps if e.every_steps else None

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done and "win" in info:
                    self.wins.append(info["win"])
            steps = self.num_timesteps
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
            if not path.exists():
                ckpt.write_checkpoint(path, self.model, card, with_model=False)
            self.training_env.env_method("call_opponents", "add_snapshot", str(path))
            self.logger.record("opponents/snapshots", len(_snapshot_paths(run_dir, config)))

        def _evaluate(self) -> None:
            target = save(self.model, run_dir, rules, config, started)
            self.last_eval = self.num_timesteps
            metrics = evaluate_checkpoint(target, rules, config, self.num_timesteps)
            if metrics is None:
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


def _best_so_far(run_dir: Path) -> float:
    pointer = run_dir / "checkpoints" / "best.json"
    if pointer.is_file():
        return float(json.loads(pointer.read_text()).get("value", -1.0))
    return -1.0


def _snapshot_paths(run_dir: Path, config: TrainConfig) -> list[str]:
    folder = run_dir / "snapshots"
    if not folder.is_dir():
        return []
    done = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "card.json").is_file())
    return [str(p) for p in done[-config.opponents.max_snapshots :]]


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


def evaluate_checkpoint(path: Path, rules: ChickenFootConfig, config: TrainConfig,
                        steps: int) -> dict | None:
    """Evaluate checkpoint `path` against each `eval.opponents` spec; log a line to evals.jsonl.

    An evaluation failure is reported on stderr and skipped: it must not end a long run.
    """
    try:
        from .evaluate import evaluate

        agent = functools.partial(ckpt.load_ppo_policy, str(path))
        metrics, lines = {}, []
        for opponent in config.eval.opponents:
            result = evaluate([agent, opponent], rules, config.eval.deals, seed=config.seed,
                              workers=config.eval.workers, single_round=config.eval.single_round)
            win = result["policies"][0]["win_rate"]
            score = result["policies"][0]["round_score"]
            metrics[f"win_rate_vs_{opponent}"] = win["mean"]
            metrics[f"win_rate_ci_low_vs_{opponent}"] = win["ci_low"]
            metrics[f"round_score_vs_{opponent}"] = score["mean"]
            lines.append({"steps": steps, "opponent": opponent, "win_rate": win,
                          "round_score": score, "deals": config.eval.deals,
                          "single_round": config.eval.single_round})
    except Exception:  # noqa: BLE001 — reported, then training goes on
        print(f"[training.ppo] evaluation at step {steps} failed:\n{traceback.format_exc()}",
              file=sys.stderr)
        return None
    with open(path.parent.parent / "evals.jsonl", "a") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
    return metrics


# ------------------------------------------------------------------------------- training
def train(config: TrainConfig, run_dir: Path, *, resume: bool = False, argv: list[str] = ()) -> Path:
    """Train (or continue) the run in `run_dir`; returns the final checkpoint directory."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.utils import set_random_seed

    started = time.time()
    rules = config.rules()
    write_run_info(run_dir, config, list(argv))

    # ---- seeding: everything random in the run derives from config.seed (and, on resume, the
    # step count, so that a resumed run does not replay the deals it has already seen).
    torch.set_num_threads(config.torch_threads)
    latest = None
    if resume:
        latest = ckpt.resolve_checkpoint(run_dir)
        card = ckpt.read_card(latest)
        ckpt.check_compatible(card, rules, strict=True)
    seed = config.seed + (card["steps"] if resume else 0)
    set_random_seed(seed)
    # ----

    venv = make_vec_env(config, _snapshot_paths(run_dir, config), seed)
    p = config.ppo
    if resume:
        model = MaskablePPO.load(latest / "model.zip", env=venv, device="cpu",
                                 tensorboard_log=str(run_dir / "tb"))
        started -= card.get("wall_time_s", 0.0)
    else:
        activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[p.activation]
        model = MaskablePPO(
            "MlpPolicy",
            venv,
            learning_rate=p.learning_rate,
            n_steps=p.n_steps,
            batch_size=p.batch_size,
            n_epochs=p.n_epochs,
            gamma=p.gamma,
            gae_lambda=p.gae_lambda,
            clip_range=p.clip_range,
            ent_coef=p.ent_coef,
            vf_coef=p.vf_coef,
            max_grad_norm=p.max_grad_norm,
            target_kl=p.target_kl,
            policy_kwargs={"net_arch": {"pi": list(p.net_arch), "vf": list(p.net_arch)},
                           "activation_fn": activation},
            tensorboard_log=str(run_dir / "tb"),
            seed=seed,
            device="cpu",
            verbose=0,
        )
    remaining = config.total_steps - model.num_timesteps
    callback = _callbacks(config, run_dir, rules, started)
    try:
        if remaining > 0:
            model.learn(remaining, callback=callback, progress_bar=config.progress_bar,
                        tb_log_name="ppo", reset_num_timesteps=not resume)
    except KeyboardInterrupt:
        print(f"\ninterrupted at step {model.num_timesteps}; writing a checkpoint", file=sys.stderr)
        final = save(model, run_dir, rules, config, started)
        print(f"saved {final}; continue with: python -m training.ppo --resume {run_dir}",
              file=sys.stderr)
        venv.close()
        raise
    final = save(model, run_dir, rules, config, started)
    if config.eval.every_steps and getattr(callback, "last_eval", -1) != model.num_timesteps:
        metrics = evaluate_checkpoint(final, rules, config, model.num_timesteps)
        if metrics:
            best = metrics.get(f"win_rate_vs_{config.eval.best_metric}", -1.0)
            if best > _best_so_far(run_dir):
                ckpt.write_pointer(run_dir / "checkpoints", "best", final,
                                   steps=model.num_timesteps, value=best,
                                   metric=f"win_rate_vs_{config.eval.best_metric}")
    venv.close()
    return final


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m training.ppo", description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="configs/default.yaml", help="YAML config file")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override a config field, e.g. --set ppo.learning_rate=1e-4")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)
    if args.resume:
        run_dir = Path(args.resume)
        saved = yaml.safe_load((run_dir / "config.yaml").read_text())
        config = _resume_config(saved, args.set)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
        return train(config, run_dir, resume=True, argv=argv)
    config = load_config(args.config, args.set)
    run_dir = new_run_dir(config, Path(args.config).stem)
    print(f"run directory: {run_dir}", file=sys.stderr)
    return train(config, run_dir, argv=argv)


def _resume_config(saved: dict, overrides: list[str]) -> TrainConfig:
    """The saved config with `--set` overrides; the game (env.*) cannot change mid-run."""
    from .config import apply_override

    for assignment in overrides:
        if assignment.strip().startswith("env."):
            raise ValueError(f"--set {assignment}: the env of a run cannot change on --resume")
        apply_override(saved, assignment)
    return config_from_dict(saved)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
