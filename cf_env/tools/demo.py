"""`python -m cf_env.tools.demo`: play and print one game between random legal players.

The game is played by the arena (`cf_env.agents.arena`), every seat a `random` bot.

A bad option (an impossible config, a negative seed) prints one ``error:`` line and exits 2.
"""

from __future__ import annotations

import argparse
import sys

from cf_env.agents.arena import Arena
from cf_env.agents.bots import RandomPolicy
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.tools.cli import HelpFormatter
from cf_env.viz.render import render_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cf_env.tools.demo", description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and the bots")
    parser.add_argument("--players", type=int, default=4, help="players (random bots)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds (default: the set's, 10 on double-9)")
    args = parser.parse_args(argv)
    try:
        if args.seed < 0:
            raise ValueError(f"--seed must be >= 0; got {args.seed}")
        cfg = ChickenFootConfig(num_players=args.players, num_rounds=args.rounds)
    except ValueError as err:  # the config names the field and what would be valid
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    engine = Engine(cfg, seed=args.seed)
    # One random player's RNG for every seat, asked every move (forced ones too): the games the
    # demo has always shown for a seed.
    player = RandomPolicy(cfg, seed=args.seed)
    arena = Arena(engine, [player] * cfg.num_players, ask_forced=True)
    played = 0
    while not engine.game_over:
        for points in arena.play(round_end=True):
            played += 1
            print(f"round {played}: points {points}")
    print(render_text(engine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
