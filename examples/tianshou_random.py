"""Tianshou: a Collector over Tianshou's own PettingZoo wrapper, with masked random policies.

    python examples/tianshou_random.py --steps 1000

`tianshou.env.PettingZooEnv` turns the AEC env into a gymnasium-style env whose observation is
`{"agent_id", "obs", "mask"}` (the acting player's) and whose reward is every player's, as a
list. A `MultiAgentPolicy` sends each observation to its player's policy; here every player is
Tianshou's `MARLRandomDiscreteMaskedOffPolicyAlgorithm` policy, a uniform choice among the
actions the mask allows. Swap in learning algorithms per player the same way (Tianshou's
`MultiAgentOffPolicyAlgorithm` / `MultiAgentOnPolicyAlgorithm`). The env raises on an illegal
action, so a finished run means every collected action was legal.
"""

from __future__ import annotations

import argparse
import logging

import numpy as np
import torch
from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.data import Collector, ReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv

from cf_env import chicken_foot_v1
from cf_env.tools.cli import HelpFormatter


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--steps", type=int, default=1000, help="AEC steps (decisions)")
    parser.add_argument("--players", type=int, default=2, help="players")
    parser.add_argument("--max-pips", type=int, default=6, help="double-N set")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds per game (default: max-pips + 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random policies")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # small tensors: one thread beats one per core
    np.random.seed(args.seed)  # the random policy draws from numpy's global RNG
    # Tianshou's episode-return summary expects one reward per step and warns about ours (one
    # per player, as its PettingZooEnv returns them); the returns themselves are right.
    logging.getLogger("tianshou.data.stats").setLevel(logging.ERROR)

    def make_env():
        return PettingZooEnv(chicken_foot_v1.env(num_players=args.players,
                                                 max_pips=args.max_pips,
                                                 num_rounds=args.rounds))

    agents = make_env().agents
    policy = MultiAgentPolicy({
        agent: MARLRandomDiscreteMaskedOffPolicyAlgorithm(make_env().action_space).policy
        for agent in agents
    })
    # One env in Tianshou's vector-env interface. Several (DummyVectorEnv([make_env] * n) or
    # SubprocVectorEnv) need a VectorReplayBuffer(size, n), whose numba code compiles on first use.
    envs = DummyVectorEnv([make_env])
    envs.seed(args.seed)
    buffer = ReplayBuffer(args.steps + 100)
    collector = Collector(policy, envs, buffer)
    collector.reset()
    stats = collector.collect(n_step=args.steps)

    # Returns of every finished game, one column per player (zero-sum round points, R12).
    returns = np.asarray(stats.returns).reshape(-1, len(agents))
    batch = buffer[:len(buffer)]  # every stored transition
    legal = batch.obs.mask[np.arange(len(batch)), batch.act]
    print(f"{stats.n_collected_steps} steps, {stats.n_collected_episodes} games finished, "
          f"all actions legal: {bool(legal.all())}, mean returns per player "
          f"{np.round(returns.mean(0), 3).tolist() if len(returns) else []}")
    envs.close()
    return {"steps": stats.n_collected_steps, "games": stats.n_collected_episodes,
            "returns": returns, "batch": batch, "legal": legal, "agents": agents}


if __name__ == "__main__":
    main()
