"""PettingZoo: random masked play through the AEC API, the standard `agent_iter` loop.

    python examples/pettingzoo_random.py --games 3

Every decision picks uniformly among the legal actions of the observation's `action_mask`;
terminated agents step `None`, as PettingZoo requires. The env raises on an illegal action (the
default `illegal_action="raise"`), so a finished run means every sampled action was legal.
"""

from __future__ import annotations

import argparse

import numpy as np

from cf_env import chicken_foot_v1
from cf_env.tools.cli import HelpFormatter


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--games", type=int, default=3, help="games to play")
    parser.add_argument("--players", type=int, default=4, help="players")
    parser.add_argument("--max-pips", type=int, default=9, help="double-N set")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and actions")
    args = parser.parse_args(argv)

    # Any ChickenFootConfig field is a keyword (README, Configuration).
    env = chicken_foot_v1.env(num_players=args.players, max_pips=args.max_pips)
    rng = np.random.default_rng(args.seed)
    steps, returns, winners = 0, [], []
    for game in range(args.games):
        env.reset(seed=args.seed + game)
        total = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            total[agent] += reward  # what the agent earned since its last turn
            if terminated or truncated:
                env.step(None)  # a finished agent leaves the game
                continue
            legal = np.flatnonzero(obs["action_mask"])  # never empty for the acting agent
            env.step(int(rng.choice(legal)))
            steps += 1
        returns.append(total)
        winners.append(env.unwrapped.winners())  # names stay out of the numeric infos
        print(f"game {game}: {info['round'] + 1} rounds, winners {winners[-1]}, returns "
              + ", ".join(f"{a} {r:+.3f}" for a, r in total.items()))
    env.close()
    print(f"{args.games} games, {steps} decisions")
    return {"games": args.games, "steps": steps, "returns": returns, "winners": winners}


if __name__ == "__main__":
    main()
