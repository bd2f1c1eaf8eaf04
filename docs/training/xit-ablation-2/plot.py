"""The second ablation's learning curves against CPU hours: one panel per evaluation opponent.

    python docs/training/xit-ablation-2/plot.py OUT.png CPU.tsv LABEL=RUN_DIR:NAME [...]

Each run's evaluations (`evals.jsonl`: steps, wall_time_s, win rate and interval) are placed at
the CPU seconds its process tree had used by then: the run's start (`run.json`) plus the
evaluation's wall time, read off CPU.tsv's rows for NAME (`cpu_sampler.py`) taken after that start,
interpolated. A run whose evaluations lie past the TSV's last row for it is cut there.
With CPU.tsv given as `-` the x axis is the run's learner decisions instead, on a log scale (NAME
unused): for runs whose CPU was not sampled to their end, or of very different lengths.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

REFERENCE = {"greedy": 0.418, "heuristic": 0.342,  # shipped-vs-*.json: batched, 2000 deals
             "ppo:checkpoints/selfplay-4p-d9": 0.25}
TITLES = {"greedy": "vs 3× greedy", "heuristic": "vs 3× heuristic",
          "ppo:checkpoints/selfplay-4p-d9": "vs 3× selfplay-4p-d9"}


def started(run: Path) -> float:
    text = json.loads((run / "run.json").read_text())["sessions"][0]["started"]
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def cpu_curve(tsv: Path, name: str, start: float) -> tuple[np.ndarray, np.ndarray]:
    rows = [line.split("\t") for line in tsv.read_text().splitlines()]
    pts = [(float(t), float(c)) for t, n, c in rows if n == name and float(t) >= start]
    times, cpu = (np.array(v) for v in zip(*pts))
    keep = np.concatenate([[True], np.diff(cpu) >= 0])  # a restarted arm of the same name
    stop = int(np.argmin(keep)) if not keep.all() else len(cpu)
    return np.concatenate([[start], times[:stop]]), np.concatenate([[0.0], cpu[:stop]])


def main() -> None:
    out, by_decisions = Path(sys.argv[1]), sys.argv[2] == "-"
    tsv = None if by_decisions else Path(sys.argv[2])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), sharex=True)
    for spec in sys.argv[3:]:
        label, rest = spec.split("=", 1)
        run, name = rest.rsplit(":", 1)
        run = Path(run)
        evals = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
        if not by_decisions:
            start = started(run)
            times, cpu = cpu_curve(tsv, name, start)
            evals = [e for e in evals if start + e["wall_time_s"] <= times[-1]]
        for ax, opponent in zip(axes, TITLES):
            mine = [e for e in evals if e["opponent"] == opponent]
            x = [e["steps"] / 1e6 if by_decisions
                 else np.interp(start + e["wall_time_s"], times, cpu) / 3600 for e in mine]
            mean = [e["win_rate"]["mean"] for e in mine]
            low = [e["win_rate"]["ci_low"] for e in mine]
            high = [e["win_rate"]["ci_high"] for e in mine]
            line, = ax.plot(x, mean, marker="o", label=label)
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15)
    for ax, opponent in zip(axes, TITLES):
        ax.axhline(REFERENCE[opponent], color="grey", linestyle="--", linewidth=1,
                   label="selfplay-4p-d9 (the same path, 2000 deals)")
        ax.set_title(TITLES[opponent])
        ax.set_xlabel("learner decisions (millions)" if by_decisions
                      else "CPU hours (the run's processes)")
        if by_decisions:
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("single-round win rate (1000 deals, 95% CI)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
