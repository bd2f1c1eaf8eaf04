"""`python -m training.plot <run-dir> [<run-dir> ...]`: learning curves as a PNG.

One run: the periodic evaluations it logged to `evals.jsonl` (win rate against each opponent
with its 95% interval, vs learner steps) and, from TensorBoard, the training-time win rate against
the opponent pool. Parity (1 / players) is drawn as a dashed line.

Several runs (an ablation): one panel per evaluation opponent, one curve per run, against learner
steps or (`--x hours`) the run's wall-clock hours at each evaluation: the `wall_time_s` of the
evaluated checkpoint's card where the line records it, else the TensorBoard event's time since
the run's first event (which counts the gaps between resumed sessions too).

    python -m training.plot runs/ppo-4p-d9 --out checkpoints/ppo-4p-d9/learning_curve.png
    python -m training.plot runs/a runs/b --x hours --out docs/img/ablation.png
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


def _players(run_dir: Path) -> int:
    info = read_run_info(run_dir)
    if info is None:
        raise ValueError(f"{run_dir}: no run.json; expected a run directory written by "
                         "python -m training.ppo")
    return info["env_config"]["num_players"]


def _curve(ax, where: list, entries: list[dict], label: str, alpha: float) -> None:
    """One opponent's evaluations: the win rate and its 95% band."""
    ax.plot(where, [e["win_rate"]["mean"] for e in entries], marker="o", ms=3, label=label)
    ax.fill_between(where, [e["win_rate"]["ci_low"] for e in entries],
                    [e["win_rate"]["ci_high"] for e in entries], alpha=alpha)


def _save(fig, out: Path) -> Path:
    import matplotlib.pyplot as plt

    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    with atomic.atomic_path(out) as temporary:
        fig.savefig(temporary, dpi=120, format="png", bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return out


def plot_run(run_dir: str | Path, out: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir, out = Path(run_dir), Path(out)
    evals = load_evals(run_dir)
    players = _players(run_dir)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for opponent, entries in evals.items():
        _curve(ax, [e["steps"] for e in entries], entries,
               f"vs {players - 1}× {opponent} (eval)", alpha=0.2)
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
    return _save(fig, out)


def evaluation_hours(run_dir: Path, entries: list[dict]) -> list[float]:
    """Wall-clock hours of the run at each of `entries` (one opponent's evaluations)."""
    if all("wall_time_s" in e for e in entries):
        return [e["wall_time_s"] / 3600 for e in entries]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    times: dict[int, float] = {}
    first = None
    tag = f"eval/win_rate_vs_{entries[0]['opponent']}" if entries else ""
    for folder in sorted((run_dir / "tb").glob("*")):
        acc = EventAccumulator(str(folder))
        acc.Reload()
        scalars = acc.Tags().get("scalars", [])
        for name in scalars:
            start = acc.Scalars(name)[0].wall_time
            first = start if first is None else min(first, start)
        if tag in scalars:
            times.update({s.step: s.wall_time for s in acc.Scalars(tag)})
    missing = [e["steps"] for e in entries if e["steps"] not in times]
    if missing:
        raise ValueError(f"{run_dir}: evaluations at steps {missing} have no wall time (neither "
                         "wall_time_s in evals.jsonl nor a TensorBoard event); use --x steps")
    return [(times[e["steps"]] - first) / 3600 for e in entries]


def plot_runs(run_dirs: list[str | Path], out: str | Path, x: str = "steps") -> Path:
    """Several runs' evaluations side by side: a panel per opponent, a curve per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if x not in X_AXES:
        raise ValueError(f"x must be one of {', '.join(X_AXES)}; got {x!r}")
    runs = [Path(r) for r in run_dirs]
    evals = {run: load_evals(run) for run in runs}
    players = {_players(run) for run in runs}
    for run in runs:
        if not evals[run]:
            raise ValueError(f"{run}: no evaluations in evals.jsonl to plot")
    if len(players) > 1:
        raise ValueError(f"runs of different player counts ({sorted(players)}) are not comparable")
    players = players.pop()
    opponents = sorted({o for run in runs for o in evals[run]})
    fig, axes = plt.subplots(1, len(opponents), figsize=(5.5 * len(opponents), 4.2),
                             squeeze=False, sharey=False)
    for ax, opponent in zip(axes[0], opponents):
        for run in runs:
            entries = evals[run].get(opponent, [])
            if not entries:
                continue
            where = ([e["steps"] for e in entries] if x == "steps"
                     else evaluation_hours(run, entries))
            _curve(ax, where, entries, run.name, alpha=0.15)
        ax.axhline(1 / players, color="black", ls="--", lw=1, label=f"parity ({1 / players:.0%})")
        ax.set_title(f"vs {players - 1}× {opponent} (95% CI over duplicate deals)", fontsize=10)
        ax.set_xlabel("learner steps" if x == "steps" else "wall-clock hours")
        ax.set_ylabel("win rate (ties split)")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    return _save(fig, Path(out))


X_AXES = ("steps", "hours")


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m training.plot", description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("run_dir", nargs="+",
                        help="run directories written by python -m training.ppo (several: compared)")
    parser.add_argument("--out", default=None,
                        help="PNG path (default: <first run_dir>/learning_curve.png, or "
                             "comparison.png for several runs)")
    parser.add_argument("--x", default="steps", choices=X_AXES,
                        help="x axis of a comparison: learner steps or wall-clock hours")
    args = parser.parse_args(argv)
    first = Path(args.run_dir[0])
    try:
        if len(args.run_dir) == 1 and args.x == "steps":
            out = plot_run(first, args.out or first / "learning_curve.png")
        else:
            out = plot_runs(args.run_dir, args.out or first / "comparison.png", args.x)
    except (ValueError, OSError) as err:
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        raise SystemExit(2) from None
    print(f"wrote {out}")
    return out
