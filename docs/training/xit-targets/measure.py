"""How strong a search target is as a policy: `training.selfplay.targets.TargetPlayer` against
three copies of a bot, duplicate single-round deals (4 players, double-9), one JSON per setting.

    python docs/training/xit-targets/measure.py --form improved --scale 0.1 --iterations 64 \
        --play sample --opponent greedy --deals 400 --seed 1

Prints one line per run and writes the evaluation's result to --out (default: this folder, named
by the setting).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import tempfile
import time
from pathlib import Path

from cf_env.core.config import ChickenFootConfig
from training.evaluation.evaluate import evaluate
from training.selfplay.targets import TargetPlayer

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="checkpoints/selfplay-4p-d9")
    parser.add_argument("--form", default="improved", choices=["visits", "improved"])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--iterations", type=int, default=64)
    parser.add_argument("--rollout", default="follow", choices=["follow", "greedy"])
    parser.add_argument("--play", default="sample", choices=["sample", "argmax"])
    parser.add_argument("--opponent", default="greedy")
    parser.add_argument("--deals", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    name = (f"{args.form}-s{args.scale:g}-t{args.temperature:g}-i{args.iterations}-{args.play}"
            f"{'' if args.rollout == 'follow' else '-' + args.rollout}-vs-{args.opponent}-{args.deals}")
    player = functools.partial(TargetPlayer, checkpoint=args.checkpoint,
                               iterations=args.iterations, form=args.form,
                               temperature=args.temperature, scale=args.scale, play=args.play,
                               rollout=args.rollout)
    config = ChickenFootConfig(num_players=4, max_pips=9)
    start = time.time()
    result = evaluate([player, args.opponent], config, args.deals, seed=args.seed,
                      workers=args.workers, single_round=True)
    rate = result["policies"][0]["win_rate"]
    out = Path(args.out) if args.out else HERE / f"{name}.json"
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
    summary = {k: v for k, v in result.items() if k != "per_game"}  # 8,000 rows: left out
    with os.fdopen(fd, "w") as f:
        json.dump({"setting": vars(args), "result": summary}, f, indent=1)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    print(f"{name}: {rate['mean']:.1%} [{rate['ci_low']:.1%}, {rate['ci_high']:.1%}]",
          f"{time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
