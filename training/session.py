"""What both learners' sessions share (`training.selfplay` and `training.sb3`): the run directory
and its `run.json`, the console (messages and one progress bar over the run's steps), the
evaluation of a checkpoint (`evals.jsonl`), the snapshot pool on disk, and the end-of-session
summary. When to evaluate, and the best checkpoint, are `training.schedule`'s."""

from __future__ import annotations

import dataclasses
import functools
import json
import platform
import shutil
import sys
import traceback
from datetime import datetime
from pathlib import Path

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.core import atomic
from training.artifacts import checkpoints as ckpt
from training.artifacts.provenance import (
    create_run_dir,
    git_revision,
    package_versions,
    read_run_info,
)
from training.config import TrainConfig
from training.evaluation.plot import load_evals, plot_run

PACKAGES = ("numpy", "torch", "gymnasium", "pettingzoo", "stable-baselines3", "sb3-contrib")


# ------------------------------------------------------------------------------- run directory
def new_run_dir(config: TrainConfig, config_name: str) -> tuple[Path, bool]:
    """The new run's directory, and whether it is an earlier run started again
    (`provenance.create_run_dir`)."""
    return create_run_dir(config.runs_dir, config.run_name, f"{config_name}-s{config.seed}",
                          config.to_dict(), "pick another run_name or --resume it")


def write_run_info(run_dir: Path, config: TrainConfig, argv: list[str]) -> None:
    info_path = run_dir / "run.json"
    previous = read_run_info(run_dir)
    history = previous["sessions"] if previous else []
    history.append({"started": datetime.now().isoformat(timespec="seconds"), "argv": argv,
                    "git": git_revision()})
    info = {
        "env_config": config.rules().to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "packages": package_versions(PACKAGES),
        "platform": platform.platform(),
        "sessions": history,
    }
    atomic.write_json(info_path, info)


def clean_for_resume(run_dir: Path, steps: int) -> None:
    """Drop what a killed session wrote past the checkpoint a run resumes from (step `steps`):
    snapshots of later steps (the resumed run writes its own), evaluations of later steps and a
    torn last line of `evals.jsonl`. Step folders no pointer names go at the next checkpoint."""
    for snapshot in sorted((run_dir / "snapshots").glob("step_*")):
        step = snapshot.name[len("step_"):]
        if step.isdigit() and int(step) > steps:
            shutil.rmtree(snapshot)
    atomic.clear_leftovers(run_dir / "snapshots")
    atomic.clear_leftovers(run_dir / "checkpoints")
    atomic.repair_jsonl(run_dir / "evals.jsonl",
                        keep=lambda entry: isinstance(entry, dict) and entry.get("steps", 0) <= steps)


# ------------------------------------------------------------------------------- console
class Console:
    """What the session prints on stderr: messages, and one progress bar over the run's steps."""

    def __init__(self) -> None:
        self.bar = None

    def start_bar(self, steps: int, total: int, name: str) -> None:
        from tqdm import tqdm

        # The bar counts the run's steps (a resumed run starts part-way), not the session's.
        self.bar = tqdm(total=total, initial=steps, unit="step", desc=name, file=sys.stderr,
                        dynamic_ncols=True)

    def update(self, steps: int) -> None:
        if self.bar is not None and steps > self.bar.n:
            self.bar.update(min(steps, self.bar.total) - self.bar.n)

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def say(self, message: str) -> None:
        if self.bar is not None:
            self.bar.write(message, file=sys.stderr)
        else:
            print(message, file=sys.stderr)


# ------------------------------------------------------------------------------- run state
def best_so_far(run_dir: Path) -> float:
    pointer = run_dir / "checkpoints" / "best.json"
    if pointer.is_file():
        return float(json.loads(pointer.read_text()).get("value", -1.0))
    return -1.0


def snapshot_paths(run_dir: Path, config: TrainConfig) -> list[str]:
    folder = run_dir / "snapshots"
    if not folder.is_dir():
        return []
    done = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "card.json").is_file())
    return [str(p) for p in done[-config.opponents.max_snapshots :]]



# ------------------------------------------------------------------------------- evaluation
def evaluate_checkpoint(path: Path, rules: ChickenFootConfig, config: TrainConfig,
                        steps: int, console: Console | None = None) -> dict | None:
    """Evaluate checkpoint `path` against each `eval.opponents` spec; log a line to evals.jsonl.

    An evaluation failure is reported on stderr and skipped: it must not end a long run (the
    session's summary counts failures, and the command then exits 1). The specs were built once
    before the run started (`config.validate_policies`), so a typo cannot fail every evaluation.
    """
    console = console or Console()
    try:
        from training.evaluation.evaluate import evaluate

        agent = functools.partial(ckpt.load_ppo_policy, str(path))
        metrics, lines = {}, []
        wall = ckpt.read_card(path).get("wall_time_s")  # the run's time when it was written
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
                          "single_round": config.eval.single_round,
                          **({} if wall is None else {"wall_time_s": wall})})
    except Exception:  # noqa: BLE001 — reported, then training goes on
        console.say(f"[training.ppo] evaluation at step {steps} failed:\n{traceback.format_exc()}")
        return None
    atomic.append_lines(path.parent.parent / "evals.jsonl", [json.dumps(line) for line in lines])
    console.say(f"step {steps:,} of {config.total_steps:,}: "
                f"{_describe_evals(lines, rules.num_players)}")
    return metrics


def _describe_evals(lines: list[dict], players: int) -> str:
    """One evaluation (its evals.jsonl lines) in words: win rates with their 95% intervals,
    against what an agent no better than its opponents wins (ties split: 1 / players)."""
    unit = "single-round" if lines[0]["single_round"] else "game"
    rates = ", ".join(
        f"{e['win_rate']['mean']:.1%} [{e['win_rate']['ci_low']:.1%}, {e['win_rate']['ci_high']:.1%}]"
        f" vs {players - 1}× {e['opponent']}" for e in lines
    )
    return (f"win rate {rates} ({lines[0]['deals']} duplicate {unit} deals; parity, an agent "
            f"as good as its opponents, wins {1 / players:.0%})")


# ------------------------------------------------------------------------------- summary
@dataclasses.dataclass
class TrainResult:
    checkpoint: Path
    """The final checkpoint directory."""
    steps: int
    """The run's step count at the end of the session."""
    failed_evals: int
    """Evaluations of this session that raised (reported on stderr)."""


def summary(run_dir: Path, config: TrainConfig, result: TrainResult, first_step: int,
            session_s: float, total_s: float) -> str:
    """The end-of-session report: steps, time, the last evaluation, where the checkpoint is."""
    lines = [
        f"run {run_dir} done: {step_text(result.steps, config.total_steps)} "
        f"({result.steps - first_step:,} steps this session in {_duration(session_s)}; "
        f"{_duration(total_s)} of training in all)"
    ]
    evals = load_evals(run_dir)
    players = config.rules().num_players
    last = max((e[-1]["steps"] for e in evals.values()), default=None)
    if last is None:
        lines.append("last evaluation: none (eval.every_steps is 0)")
    else:
        latest = [e[-1] for e in evals.values() if e[-1]["steps"] == last]
        lines.append(f"last evaluation, step {last:,}: {_describe_evals(latest, players)}")
        curve = plot_run(run_dir, run_dir / "curve.png")
        lines.append(f"learning curve: {curve}")
    if result.failed_evals:
        lines.append(f"{result.failed_evals} evaluation(s) FAILED this session (errors above); "
                     "the command exits 1")
    best = run_dir / "checkpoints" / "best.json"
    best_note = ""
    if best.is_file():
        pointer = json.loads(best.read_text())
        best_note = f"; best: {pointer.get('path')} ({pointer.get('metric')} {pointer.get('value')})"
    lines.append(f"checkpoint: {result.checkpoint}{best_note}")
    lines += next_commands(run_dir)
    return "\n".join(lines)


def next_commands(run_dir: Path) -> list[str]:
    """The commands to run next on a finished run, ready to paste (its rules come from the
    checkpoint's card: no rules flags needed)."""
    agent, games = f"ppo:{run_dir}", run_dir / "games"
    from training.evaluation.evaluate import record_name  # (evaluate imports the training stack)

    return [
        "next:",
        f"  evaluate (2000 duplicate deals per bot): python -m training.evaluate --agent {agent} "
        "--opponents greedy,heuristic --single-round --deals 2000",
        f"  play against it:   python -m cf_env.tools.play --opponents {agent}",
        f"  watch a game:      python -m training.evaluate --agent {agent} --opponents greedy "
        f"--single-round --deals 2 --record {games} && python -m cf_env.viz.replay "
        f"{games / record_name(0, 0, 2)} --out {run_dir / 'game.gif'}",
        f"  ship it:           python -m training.ship {run_dir} checkpoints/<name>",
        f"  its curves live:   tensorboard --logdir {run_dir / 'tb'}",
        f"  train on:          python -m training.ppo --resume {run_dir} --set total_steps=<more>",
    ]


def step_text(steps: int, total: int) -> str:
    """Where a run is, honestly: "step 1,024 of 3,000,000", or once a run has passed its target
    (a trainer stops at the end of the rollout that reaches it) "3,006,464 steps (target
    3,000,000)", never "step 3,006,464 of 3,000,000"."""
    if steps > total:
        return f"{steps:,} steps (target {total:,})"
    return f"step {steps:,} of {total:,}"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


