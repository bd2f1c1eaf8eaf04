"""`python -m training.ppo`: masked PPO with self-play, one recorded run directory per run.

    python -m training.ppo                                  # configs/default.yaml
    python -m training.ppo --config configs/smoke.yaml --set ppo.learning_rate=1e-4
    python -m training.ppo --resume runs/<run-name>         # continue from the latest checkpoint
    python -m training.ppo --ray HOST:PORT                  # self-play collectors on a Ray cluster

Two learners, picked by the config's `algo`: `selfplay` (the default, `training.selfplay`: every
seat of many batched games learns, with a privileged critic) and `maskable_ppo`
(`training.sb3`: sb3-contrib's `MaskablePPO` on the single-agent env). Both share everything
around the learner: the run directory, console, evaluations and summary (`training.session`),
when to checkpoint, snapshot and evaluate (`training.schedule`), and the checkpoints
(`training.artifacts.checkpoints`). The run directory (`<runs_dir>/<run-name>/`) records
everything needed to reproduce or continue the run:

    config.yaml        the resolved training config
    run.json           git revision, package versions, env config, OBSERVATION_VERSION, command
    tb/                TensorBoard logs (losses, rollout/win_rate, eval/*, ...)
    checkpoints/       step_<N>/ checkpoints; latest.json, best.json
    snapshots/         frozen learners used as opponents (policy weights + card)
    evals.jsonl        one line per periodic evaluation (`training.evaluation.evaluate` results)

Ctrl-C writes a checkpoint before exiting; `--resume` continues the step count, the optimiser and
the opponent pool (the envs are re-seeded from `seed` and the step count, so no deal repeats).
A self-play run resumes from `trainer.pt`, read with `torch.load(weights_only=True)` (no
arbitrary unpickling); a `maskable_ppo` run unpickles its own `model.zip` (SB3's format), so
resume only run folders you created.

Every check on the user's input (the config and its `--set` overrides, each policy spec, on
`--resume` the run's config, checkpoint and which fields may change: `config.RESUME_FIXED`) runs
before anything is written, in `prepare`. A failed check prints one `error:` line and exits 2;
a new run that fails before its first checkpoint removes its folder, so a rerun is not blocked.
Hyperparameters changed on `--resume` reach the learner, so what config.yaml and the cards say
is what trains. The session reports the run's step count (a progress bar over the run's total,
not the session's), each evaluation and a summary.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from training.artifacts import checkpoints as ckpt
from training.artifacts.provenance import (
    has_checkpoint,
    lock_run,
    release_run,
    restart_run_dir,
    write_config,
)
from training.config import (
    TrainConfig,
    apply_override,
    config_from_dict,
    load_config,
    read_yaml,
    resume_changes,
    validate_policies,
)
from training.processes import CollectorError
from training.session import Console, TrainResult, new_run_dir, read_run_info, step_text


# ------------------------------------------------------------------------------- training
def train(config: TrainConfig, run_dir: Path, *, resume: bool = False, argv: list[str] = (),
          console: Console | None = None) -> TrainResult:
    """Train (or continue) the run in `run_dir` up to `config.total_steps`, then print a summary.

    `config.algo` picks the learner: "selfplay" (`training.selfplay`) or "maskable_ppo"
    (`training.sb3`); each is imported only when it trains.
    """
    if config.algo == "selfplay":
        from training.selfplay.learner import train_selfplay

        return train_selfplay(config, run_dir, resume=resume, argv=argv, console=console)
    from training.sb3.maskable_ppo import train_maskable_ppo

    return train_maskable_ppo(config, run_dir, resume=resume, argv=argv, console=console)


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
    parser.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="self-play collectors as Ray actors in the Ray cluster at ADDRESS "
                        "('auto', 'local' or HOST:PORT; the same as --set "
                        "selfplay.ray_address=ADDRESS; needs Ray: pip install -e '.[rllib]')")
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
    overrides = list(args.set)
    if args.ray is not None:  # JSON-quoted: a YAML string whatever the address looks like
        overrides.append(f"selfplay.ray_address={json.dumps(args.ray)}")
    if args.resume:
        if args.config is not None:
            # A resumed run trains on its own config.yaml; another file would be ignored.
            raise ValueError(f"--config {args.config} with --resume {args.resume}: a resumed run "
                             f"keeps its own config ({Path(args.resume) / 'config.yaml'}); change "
                             "fields with --set (python -m training.ppo --resume "
                             f"{args.resume} --set total_steps=<more>), or start a new run with "
                             "--config")
        start = _prepare_resume(Path(args.resume), overrides)
    else:
        path = args.config or DEFAULT_CONFIG
        config = load_config(path, overrides)
        validate_policies(config)
        start = Start(config, Path(path).stem)
    _check_ray(start.config)
    return start


def _check_ray(config: TrainConfig) -> None:
    """Ray collectors (`selfplay.ray_address`) need Ray in this Python."""
    if config.selfplay.ray_address is None:
        return
    from training.selfplay.ray_collection import INSTALL_HINT, ray_available

    if not ray_available():
        raise ValueError(f"selfplay.ray_address={config.selfplay.ray_address!r} (--ray) runs the "
                         f"collectors on Ray, which this Python lacks: install it with "
                         f"{INSTALL_HINT}, or leave selfplay.ray_address unset (null) to collect "
                         "in local processes")


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
