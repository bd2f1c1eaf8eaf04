"""`python -m training.plot <run-dir>`: the learning curve of a run as a PNG.

Plots the periodic evaluations the run logged to `evals.jsonl` (win rate against each opponent
with its 95% interval, vs learner steps) and, from TensorBoard, the training-time win rate against
the opponent pool. Parity (1 / players) is drawn as a dashed line.

    python -m training.plot runs/ppo-4p-d9 --out checkpoints/ppo-4p-d9/learning_curve.png
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from cf_env.core import atomic
from cf_env.tools.cli import HelpFormatter
from training.artifacts.provenance import read_run_info


def load_evals(run_dir: Path) -> dict[str, list[dict]]:
    """The run's evaluations from evals.jsonl: {opponent: entries by ascending step}.

    One entry per (opponent, step): a step evaluated twice (a session that re-evaluated the
    checkpoint it resumed from) keeps its latest line, so the curve has no duplicate points. A
    torn last line (a kill while it was appended) is skipped; any other bad line raises
    `ValueError` naming the file and line.
    """
    by_step: dict[str, dict[int, dict]] = defaultdict(dict)
    path = Path(run_dir) / "evals.jsonl"
    if path.is_file():
        for number, entry in enumerate(atomic.read_jsonl(path), 1):
            try:
                by_step[str(entry["opponent"])][int(entry["steps"])] = entry
                float(entry["win_rate"]["mean"]), float(entry["win_rate"]["ci_low"])
                float(entry["win_rate"]["ci_high"])
            except (TypeError, KeyError, ValueError):
                raise ValueError(f"{path}: entry {number} is not an evaluation line "
                                 "(opponent, steps, win_rate) as training writes it") from None
    return {opponent: [entries[step] for step in sorted(entries)]
            for opponent, entries in by_step.items()}


def load_training_win_rate(run_dir: Path) -> list[tuple[int, float]]:
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        return []
    points: dict[int, float] = {}
    for folder in sorted((run_dir / "tb").glob("*")):
        acc = EventAccumulator(str(folder))
        acc.Reload()
        if "rollout/win_rate" in acc.Tags().get("scalars", []):
            points.update({s.step: s.value for s in acc.Scalars("rollout/win_rate")})
    return sorted(points.items())


def plot_run(run_dir: str | Path, out: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir, out = Path(run_dir), Path(out)
    evals = load_evals(run_dir)
    info = read_run_info(run_dir)
    if info is None:
        raise ValueError(f"{run_dir}: no run.json; expected a run directory written by "
                         "python -m training.ppo")
    players = info["env_config"]["num_players"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for opponent, entries in evals.items():
        steps = [e["steps"] for e in entries]
        mean = [e["win_rate"]["mean"] for e in entries]
        ax.plot(steps, mean, marker="o", ms=3, label=f"vs {players - 1}× {opponent} (eval)")
        ax.fill_between(steps, [e["win_rate"]["ci_low"] for e in entries],
                        [e["win_rate"]["ci_high"] for e in entries], alpha=0.2)
    training = load_training_win_rate(run_dir)
    if training:
        steps, values = (np.asarray(x) for x in zip(*training))
        width = max(1, len(values) // 50)  # a moving average: one rollout's rate is noisy
        smooth = np.convolve(values, np.ones(width) / width, mode="valid")
        ax.plot(steps[width - 1 :], smooth, color="grey", lw=1, alpha=0.8,
                label=f"vs opponent pool (training, mean of {width} rollouts)")
    ax.axhline(1 / players, color="black", ls="--", lw=1, label=f"parity ({1 / players:.0%})")
    kind = "single rounds" if any(e[0]["single_round"] for e in evals.values()) else "games"
    ax.set_xlabel("learner steps")
    ax.set_ylabel(f"win rate ({kind}, ties split)")
    ax.set_title(f"{run_dir.name}: win rate vs steps (95% CI over duplicate deals)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    with atomic.atomic_path(out) as temporary:
        fig.savefig(temporary, dpi=120, format="png", bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m training.plot", description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("run_dir", help="a run directory written by python -m training.ppo")
    parser.add_argument("--out", default=None, help="PNG path (default: <run_dir>/learning_curve.png)")
    args = parser.parse_args(argv)
    try:
        out = plot_run(args.run_dir, args.out or Path(args.run_dir) / "learning_curve.png")
    except (ValueError, OSError) as err:
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        raise SystemExit(2) from None
    print(f"wrote {out}")
    return out
