"""Gymnasium vector envs: `gym.make_vec` on the single-agent env, actions sampled from the masks.

    python examples/gymnasium_vector.py --mode sync --steps 300
    python examples/gymnasium_vector.py --mode async --steps 300

The masks come back stacked in `info["action_mask"]` (one row per sub-env), as every info key of
the fixed schema does. Gymnasium autoresets a finished sub-env on the step after its terminal one
("next-step" autoreset): the terminal observation's mask is not empty but holds exactly one
action, PASS (`env.terminal_action`), a placeholder that the autoreset step ignores. So a masked
sampler never sees an empty set (a masked categorical over one would be NaN).
`illegal_action="raise"` makes any action the env does play and the rules refuse an error.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import cf_env  # noqa: F401  (registers the gymnasium ids)
from cf_env.tools.cli import HelpFormatter


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--mode", choices=["sync", "async"], default="sync",
                        help="Gymnasium's vectorization mode")
    parser.add_argument("--envs", type=int, default=2, help="sub-envs")
    parser.add_argument("--steps", type=int, default=300, help="vector steps")
    parser.add_argument("--seed", type=int, default=0, help="reset seed")
    args = parser.parse_args(argv)

    # Keywords reach every sub-env's gym.make: the env's own and any ChickenFootConfig field.
    envs = gym.make_vec("cf_env/ChickenFoot-v1", num_envs=args.envs,
                        vectorization_mode=args.mode, opponents=["greedy"],
                        num_players=2, max_pips=6, illegal_action="raise")
    rng = np.random.default_rng(args.seed)
    obs, info = envs.reset(seed=args.seed)
    episodes, terminal_masks, smallest = 0, [], np.inf
    returns, running = [], np.zeros(args.envs)
    for _ in range(args.steps):
        masks = info["action_mask"]  # (envs, actions) bool
        smallest = min(smallest, int(masks.sum(1).min()))
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
        obs, reward, terminated, truncated, info = envs.step(actions)
        running += reward
        for i in np.flatnonzero(terminated | truncated):
            episodes += 1
            returns.append(running[i])
            running[i] = 0.0
            terminal_masks.append(info["action_mask"][i].copy())  # sampled from next step
    print(f"{args.mode}: {args.steps} steps x {args.envs} envs, {episodes} episodes (rounds), "
          f"mean return {np.mean(returns) if returns else float('nan'):+.3f}, "
          f"smallest mask sampled from: {smallest} action(s)")
    envs.close()
    return {"episodes": episodes, "returns": returns, "terminal_masks": terminal_masks,
            "smallest_mask": smallest}


if __name__ == "__main__":
    main()
