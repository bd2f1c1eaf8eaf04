"""`python -m training.rllib_ppo`: multi-agent masked PPO on Ray RLlib, local or on a cluster.

    python -m training.rllib_ppo                                   # configs/rllib_ppo.yaml, local Ray
    python -m training.rllib_ppo --set env_runners.num_env_runners=8 --address auto   # a cluster
    python -m training.rllib_ppo --bench-sampling 1,2              # env steps/s per runner count

Needs the `rllib` extra (`pip install -e '.[rllib]'`); nothing else in the project imports Ray.
RLlib's new API stack throughout (RLModules, `MultiAgentEnvRunner`, connectors v2):

* **env** — our AEC env (`cf_env.env.raw_env`) behind `RLlibKeysWrapper` (observation keys
  renamed to the ones RLlib's action-masking module reads, see `training.rllib.compat`) behind
  RLlib's `PettingZooEnv`. `illegal_action` must stay "raise": an illegal action is never
  replaced or penalised, it stops the run. RLlib's random-action env check is switched off (it
  samples without the mask and would trip exactly that).
* **masking** — every learned seat runs RLlib's `ActionMaskingTorchRLModule` (logits of illegal
  actions pushed to the float minimum before sampling, in exploration, inference and training).
* **policy mapping** — `env.seats` lists one entry per seat: `learner` is the one shared policy
  (module `shared`); any other entry is a bot spec (`cf_env.agents.policies.load_policy`), run by
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

The pieces: `training.rllib.config` (the config; Ray-free), `training.rllib.compat` (observation
keys, seeds, bots, the policy export; Ray-free), `training.rllib.algorithm` (what RLlib runs: the
env, bot module, callbacks, `PPOConfig`); this module the run: its directory, the training loop,
checkpoints, the sampling benchmark and the CLI.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import sys
import time
from datetime import datetime
from importlib import metadata
from pathlib import Path

import numpy as np

from cf_env import OBSERVATION_VERSION
from cf_env.core import atomic
from cf_env.tools.cli import HelpFormatter
from training.artifacts import checkpoints as ckpt
from training.artifacts.provenance import create_run_dir, git_revision, package_versions

# Without Ray, importing training.rllib.algorithm raises an ImportError naming the extra to
# install (run as a command: one error line, exit 2). Its classes are re-exported: RLlib
# checkpoints written before the split name them here.
try:
    from training.rllib.algorithm import (
        ENV_NAME,
        LEGACY_ENV_NAMES,
        SHARED,
        BotRLModule,
        ChickenFootCallbacks,
        ChickenFootRLlibEnv,
        algorithm_config,
        init_ray,
        make_env,
        map_agent,
    )
except ImportError as _err:
    if __name__ != "__main__":
        raise
    print(f"error: {_err}; or use the venv that `make test-rllib` builds: "
          ".venv-rllib/bin/python -m training.rllib_ppo", file=sys.stderr)
    raise SystemExit(2) from None
from training.rllib.compat import bot_seed, export_policy, make_bot
from training.rllib.config import (
    LEARNER,
    EnvRunnerSection,
    EnvSection,
    LearnerSection,
    ModelSection,
    PPOSection,
    RLlibTrainConfig,
    config_from_dict,
    load_config,
    validate,
)

PACKAGES = ("numpy", "torch", "gymnasium", "pettingzoo", "ray")


# ------------------------------------------------------------------------------- run directory
def new_run_dir(config: RLlibTrainConfig, config_name: str, argv: list[str]) -> Path:
    run_dir, _ = create_run_dir(config.runs_dir, config.run_name, f"{config_name}-s{config.seed}",
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
    atomic.write_json(run_dir / "run.json", info)
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
            atomic.append_lines(run_dir / "progress.jsonl", [json.dumps(line)])
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
                                     description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
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
    try:
        config = load_config(args.config, args.set)
    except (ValueError, OSError) as err:  # the user's config: one error line, exit 2
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        raise SystemExit(2) from None
    if args.bench_sampling is not None:
        try:
            counts = [int(c) for c in args.bench_sampling.split(",")]
        except ValueError:
            print(f"error: --bench-sampling takes counts like 1,2; got {args.bench_sampling!r}",
                  file=sys.stderr)
            raise SystemExit(2) from None
        for row in bench_sampling(config, counts, args.bench_steps, address=args.address):
            print(json.dumps(row))
        return None
    run_dir = new_run_dir(config, Path(args.config).stem, argv)
    print(f"run directory: {run_dir}", file=sys.stderr)
    export = train(config, run_dir, address=args.address)
    print(f"exported policy: {export}  (play it as ppo:{run_dir})", file=sys.stderr)
    return export


__all__ = [
    "ENV_NAME",
    "LEARNER",
    "LEGACY_ENV_NAMES",
    "PACKAGES",
    "SHARED",
    "BotRLModule",
    "ChickenFootCallbacks",
    "ChickenFootRLlibEnv",
    "EnvRunnerSection",
    "EnvSection",
    "LearnerSection",
    "ModelSection",
    "PPOSection",
    "RLlibTrainConfig",
    "algorithm_config",
    "bench_sampling",
    "bot_seed",
    "config_from_dict",
    "init_ray",
    "load_config",
    "main",
    "make_bot",
    "make_env",
    "map_agent",
    "new_run_dir",
    "save",
    "summarize",
    "train",
    "validate",
]
