"""OpenSpiel: OpenSpiel's ISMCTS bot against our `heuristic`, played by OpenSpiel's `evaluate_bots`.

    python examples/openspiel_ismcts.py --games 4 --simulations 20

`import cf_env.envs.openspiel_game` registers the game `python_chicken_foot` with pyspiel (explicit
chance nodes for the deal and every draw, R13 returns, `resample_from_infostate` for ISMCTS).
`openspiel_ismcts_bot` is OpenSpiel's `open_spiel.python.algorithms.ismcts.ISMCTSBot` (random
rollouts, determinizations from the game's resampler); `policy_bot` seats any policy spec of ours
("heuristic", "greedy", "ismcts:200", "ppo:<checkpoint>") as a `pyspiel.Bot`. The ISMCTS seat
moves round the table from game to game. The measured match (200 games, 200 simulations) is
`python -m cf_env.tools.openspiel_bots`.
"""

from __future__ import annotations

import argparse

import numpy as np
import pyspiel
from open_spiel.python.algorithms import evaluate_bots

import cf_env.envs.openspiel_game  # noqa: F401  (registers "python_chicken_foot")
from cf_env import ChickenFootConfig
from cf_env.tools.cli import HelpFormatter
from cf_env.tools.openspiel_bots import openspiel_ismcts_bot, policy_bot


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--games", type=int, default=4, help="games (seats alternate)")
    parser.add_argument("--simulations", type=int, default=20, help="ISMCTS simulations/decision")
    parser.add_argument("--opponent", default="heuristic", help="a policy spec of ours")
    parser.add_argument("--players", type=int, default=2, help="players")
    parser.add_argument("--max-pips", type=int, default=6, help="double-N set")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per game")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games and bots")
    args = parser.parse_args(argv)

    # The game's parameters are ChickenFootConfig's rule fields.
    params = {"num_players": args.players, "max_pips": args.max_pips, "num_rounds": args.rounds}
    game = pyspiel.load_game("python_chicken_foot", params)
    config = ChickenFootConfig(**params)  # what our policies are built for
    n, results = args.players, []
    for g in range(args.games):
        ismcts_seat = g % n
        bots = [
            openspiel_ismcts_bot(game, args.simulations, seed=args.seed + g)
            if seat == ismcts_seat
            else policy_bot(args.opponent, config, seat, seed=(args.seed + g) * n + seat)
            for seat in range(n)
        ]
        # evaluate_bots samples the chance nodes (deals, draws) and plays to the end.
        returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots,
                                              np.random.RandomState(args.seed + g))
        results.append((ismcts_seat, list(returns)))
        print(f"game {g}: ISMCTS at seat {ismcts_seat}, returns {np.round(returns, 3).tolist()}")
    ismcts_return = np.mean([returns[seat] for seat, returns in results])
    print(f"OpenSpiel ISMCTS ({args.simulations} simulations) vs {args.opponent}: mean return "
          f"{ismcts_return:+.3f} over {args.games} games (zero-sum: 0 is par)")
    return {"results": results, "ismcts_return": float(ismcts_return)}


if __name__ == "__main__":
    main()
