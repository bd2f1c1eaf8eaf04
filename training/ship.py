"""`python -m training.ship <run-dir> <dest>`: package a run's checkpoint as a shipped agent.

Copies the run's chosen checkpoint (`--which best|latest`) to `<dest>/` in the weights-only
format (card.json, policy.npz; never model.zip, which unpickles on load: see `training.export`),
evaluates it with `training.evaluate` against each baseline — three copies of the bot, duplicate
deals with seat rotation — over single rounds and over full games, draws the learning curve, and
writes the card: `card.json` (the checkpoint card plus `training` and
`evaluation` sections) and `card.md` (the same for people).

    python -m training.ship runs/ppo-4p-d9 checkpoints/ppo-4p-d9 --deals 2000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from cf_env import ChickenFootConfig

from . import checkpoints as ckpt
from .evaluate import evaluate
from .plot import plot_run

BASELINES = ("random", "greedy", "heuristic")


def _pick(run_dir: Path, which: str) -> Path:
    pointer = run_dir / "checkpoints" / f"{which}.json"
    if not pointer.is_file():
        raise FileNotFoundError(f"{pointer} does not exist; try --which latest")
    return run_dir / "checkpoints" / json.loads(pointer.read_text())["path"]


def ship(run_dir: Path, dest: Path, which: str, deals: int, workers: int, seed: int) -> dict:
    source = _pick(run_dir, which)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in ("card.json", "policy.npz"):  # weights only: a shipped agent holds no pickle
        shutil.copy2(source / name, dest / name)
    card = ckpt.read_card(dest)
    config = ChickenFootConfig.from_dict(card["env_config"])
    info = json.loads((run_dir / "run.json").read_text())
    card["training"] = {
        "run": run_dir.name,
        "checkpoint": f"{which} ({source.name})",
        "commands": ["python -m training.ppo " + " ".join(session["argv"])
                     for session in info["sessions"]],
        "steps": card["steps"],
        "wall_time_s": card.get("wall_time_s"),
        "hardware": "2 CPU cores shared with other jobs, torch.set_num_threads(1)",
        "packages": info["packages"],
    }
    evaluation = {"deals": deals, "seed": seed, "method": "training.evaluate, duplicate deals, "
                  "each deal replayed with seats rotated; 95% Student-t CI over deals",
                  "results": []}
    agent = f"ppo:{dest}"
    for single_round in (True, False):
        for bot in BASELINES:
            started = time.perf_counter()
            result = evaluate([agent, bot], config, deals, seed=seed, workers=workers,
                              single_round=single_round)
            me, diff = result["policies"][0], result["differences"][0]
            evaluation["results"].append({
                "opponents": f"3× {bot}",
                "single_round": single_round,
                "win_rate": me["win_rate"],
                "round_score": me["round_score"],
                "rank": me["rank"],
                "win_rate_minus_opponent": diff["win_rate"],
                "seconds": round(time.perf_counter() - started, 1),
            })
            print(f"{'round' if single_round else 'game '} vs {bot}: win {me['win_rate']['mean']:.3f} "
                  f"[{me['win_rate']['ci_low']:.3f}, {me['win_rate']['ci_high']:.3f}]", flush=True)
    card["evaluation"] = evaluation
    (dest / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    plot_run(run_dir, dest / "learning_curve.png")
    (dest / "card.md").write_text(card_markdown(card, dest))
    return card


def _pct(ci: dict) -> str:
    return f"{ci['mean']:.1%} [{ci['ci_low']:.1%}, {ci['ci_high']:.1%}]"


def card_markdown(card: dict, dest: Path) -> str:
    t, e = card["training"], card["evaluation"]
    cfg = card["env_config"]
    lines = [
        f"# Shipped agent `{dest.name}`",
        "",
        f"Masked PPO (sb3-contrib), MLP {card['net_arch']} ({card['activation']}), trained for "
        f"**{t['steps']:,} learner steps** in **{t['wall_time_s'] / 60:.0f} min** on "
        f"{t['hardware']}.",
        "",
        f"- game: {cfg['num_players']} players, double-{cfg['max_pips']}, {cfg['num_rounds']} "
        f"rounds (default rules); observation version {card['observation_version']}",
        "- command" + ("s, in order" if len(t["commands"]) > 1 else "") + ": "
        + "; then ".join(f"`{c}`" for c in t["commands"])
        + f" (run `{t['run']}`, checkpoint {t['checkpoint']})",
        f"- play it: `ppo:{dest}` in any policy spec, e.g. `python -m training.evaluate --agent "
        f"ppo:{dest} --opponents greedy --single-round`",
        "- files: `card.json` + `policy.npz` (weights only, loaded without pickle; see README "
        "\"Security: loading checkpoints\"). No `model.zip`: to resume training, use the run "
        "directory's own checkpoint",
        "",
        f"## Evaluation ({e['deals']} duplicate deals, seed {e['seed']}, parity "
        f"{1 / cfg['num_players']:.0%})",
        "",
        "| opponents | unit | win rate [95% CI] | agent − opponent win rate | mean round score |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in e["results"]:
        unit = "single round" if r["single_round"] else "full game"
        lines.append(f"| {r['opponents']} | {unit} | {_pct(r['win_rate'])} | "
                     f"{_pct(r['win_rate_minus_opponent'])} | {r['round_score']['mean']:.2f} |")
    lines += ["", "![learning curve](learning_curve.png)", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m training.ship", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("dest")
    parser.add_argument("--which", choices=("best", "latest"), default="latest")
    parser.add_argument("--deals", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    return ship(Path(args.run_dir), Path(args.dest), args.which, args.deals, args.workers, args.seed)


if __name__ == "__main__":
    main()
