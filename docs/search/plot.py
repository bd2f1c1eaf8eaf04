"""Draws <out>/curve.png from the curve evaluations docs/search/run.sh writes: single-round win
rate against 3x heuristic (duplicate deals, 95% interval) of `ismcts` and `guided` search at 50,
200 and 800 iterations per decision, with the checkpoint alone and parity for reference.

    python docs/search/plot.py [out]      # default out: docs/search
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

LINES = {"ismcts": "ismcts (no network)", "guided": "guided (checkpoint prior at the root)"}
SHIFT = {"ismcts": 0.97, "guided": 1.03}  # side by side at each iteration count


def point(path: Path) -> tuple[float, float, float, int]:
    result = json.loads(path.read_text())
    w = result["policies"][0]["win_rate"]
    return 100 * w["mean"], 100 * w["ci_low"], 100 * w["ci_high"], result["deals"]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    curve = out / "curve"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    deals = set()
    for kind, label in LINES.items():
        runs = sorted(curve.glob(f"{kind}-*.json"), key=lambda p: int(p.stem.split("-")[1]))
        if not runs:
            continue
        x = [int(p.stem.split("-")[1]) for p in runs]
        pts = [point(p) for p in runs]
        deals.update(p[3] for p in pts)
        ax.errorbar([v * SHIFT[kind] for v in x], [p[0] for p in pts], yerr=[[p[0] - p[1] for p in pts], [p[2] - p[0] for p in pts]],
                    marker="o", capsize=3, label=label)
    alone = curve / "ppo-0.json"
    if alone.is_file():
        mean, low, high, n = point(alone)
        deals.add(n)
        ax.axhspan(low, high, color="tab:green", alpha=0.15)
        ax.axhline(mean, color="tab:green", linestyle="--", label="the checkpoint alone (no search)")
    ax.axhline(25, color="grey", linestyle=":", label="parity (25%)")
    ax.set_xscale("log")
    ax.set_xticks([50, 200, 800], ["50", "200", "800"])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("iterations per decision")
    ax.set_ylabel("single-round win rate vs 3x heuristic (%)")
    n = "/".join(str(d) for d in sorted(deals))
    ax.set_title(f"Search strength vs iterations (4p double-9, {n} duplicate deals)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=120)
    print(f"wrote {out / 'curve.png'}")


if __name__ == "__main__":
    main()
