"""`python -m cf_env.demo`: play and print one game between random legal players."""

from __future__ import annotations

import argparse

import numpy as np

from .config import ChickenFootConfig
from .engine import Engine
from .render import render_text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    cfg = ChickenFootConfig(num_players=args.players, num_rounds=args.rounds)
    engine = Engine(cfg, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    round_seen = 0
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
        if engine.round != round_seen or engine.game_over:
            print(f"round {round_seen + 1}: points {[s[round_seen] for s in engine.scores]}")
            round_seen = engine.round
    print(render_text(engine))


if __name__ == "__main__":
    main()
