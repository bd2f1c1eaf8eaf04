"""`python -m cf_env.demo`: play and print one game between random legal players.

A bad option (an impossible config, a negative seed) prints one ``error:`` line and exits 2.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.viz.render import render_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cf_env.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        if args.seed < 0:
            raise ValueError(f"--seed must be >= 0; got {args.seed}")
        cfg = ChickenFootConfig(num_players=args.players, num_rounds=args.rounds)
    except ValueError as err:  # the config names the field and what would be valid
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    engine = Engine(cfg, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    round_seen = 0
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
        if engine.round != round_seen or engine.game_over:
            print(f"round {round_seen + 1}: points {[s[round_seen] for s in engine.scores]}")
            round_seen = engine.round
    print(render_text(engine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
