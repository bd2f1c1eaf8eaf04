"""Draws docs/ablation/ablation.png from ablation.json (written by run.sh): single-round win rate
against 3x heuristic (200 duplicate deals, 95% CI) of each learner's frozen snapshots, against
the wall-clock time at which each was written.

    python docs/ablation/plot.py
"""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
LABELS = {
    "sb3_single_seat": "MaskablePPO, one learning seat (SB3)",
    "selfplay_critic_false": "self-play, critic sees the observation only",
    "selfplay_critic_true": "self-play, privileged critic",
}


def main() -> None:
    data = json.loads((HERE / "ablation.json").read_text())
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for arm, label in LABELS.items():
        rows = sorted((r for r in data["rows"] if r["arm"] == arm), key=lambda r: r["wall_s"])
        x = [r["wall_s"] / 60 for r in rows]
        y = [100 * r["win_rate"]["mean"] for r in rows]
        err = [[100 * (r["win_rate"]["mean"] - r["win_rate"]["ci_low"]) for r in rows],
               [100 * (r["win_rate"]["ci_high"] - r["win_rate"]["mean"]) for r in rows]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=label)
    ax.axhline(25, color="grey", linestyle=":", label="parity (25%)")
    ax.set_xlabel("wall-clock minutes of training")
    ax.set_ylabel("single-round win rate vs 3x heuristic (%)")
    how = f"one after the other, {data['nproc']} cores" if data.get("sequential") else "side by side"
    ax.set_title(f"Equal wall-clock ablation ({data['secs'] / 60:.0f} min each, {how}; 4p double-9)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(HERE / "ablation.png", dpi=110)


if __name__ == "__main__":
    main()
