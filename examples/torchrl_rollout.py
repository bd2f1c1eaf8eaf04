"""TorchRL: a rollout through TorchRL's own PettingZoo wrapper, actions sampled from the mask.

    python examples/torchrl_rollout.py --steps 500

`PettingZooWrapper(env=..., use_mask=True)` turns the AEC env into a TensorDict env with one
group per player (`player_0`, ...). Each group carries `mask` (is this player the one to act?)
and `action_mask` (its legal actions; TorchRL fills non-acting players' with True). The policy
below samples every group's action from a `MaskedCategorical` over its `action_mask`; the wrapper
sends only the acting player's to the env, which raises on an illegal one. TorchRL builds its
info spec from reset's infos: v1's fixed numeric info schema is what makes this work.
"""

from __future__ import annotations

import argparse
import warnings

import torch
from tensordict import TensorDictBase
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import check_env_specs
from torchrl.modules import MaskedCategorical

from cf_env import chicken_foot_v1
from cf_env.tools.cli import HelpFormatter


def masked_random_policy(groups):
    """A policy for `env.rollout`: per group, a uniform choice among the legal actions."""

    def policy(td: TensorDictBase) -> TensorDictBase:
        for group in groups:
            mask = td[group, "action_mask"]
            dist = MaskedCategorical(logits=torch.zeros(mask.shape), mask=mask)
            td[group, "action"] = dist.sample()
        return td

    return policy


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--steps", type=int, default=500, help="AEC steps (decisions)")
    parser.add_argument("--players", type=int, default=2, help="players")
    parser.add_argument("--max-pips", type=int, default=6, help="double-N set")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds per game (default: max-pips + 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the env and the policy")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # small tensors: one thread beats one per core
    torch.manual_seed(args.seed)
    # TorchRL warns on every PettingZoo version but the one it was tested with (1.24.3); the
    # wrapper works with ours, and the rollout below checks it.
    warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested using version",
                            category=UserWarning)

    env = PettingZooWrapper(
        env=chicken_foot_v1.env(num_players=args.players, max_pips=args.max_pips,
                            num_rounds=args.rounds),
        use_mask=True,  # compulsory for AEC envs: one player acts per step
        seed=args.seed,
    )
    check_env_specs(env)  # TorchRL's own consistency check of specs against real steps
    groups = list(env.group_map)
    # break_when_any_done=False: the rollout resets the env after each game and keeps going.
    rollout = env.rollout(args.steps, policy=masked_random_policy(groups),
                          break_when_any_done=False)

    # What happened: who acted, whether it was legal, rewards (zero-sum round points, R12).
    acting = torch.stack([rollout[g, "mask"].squeeze(-1) for g in groups], -1)
    actions = torch.stack([rollout[g, "action"].squeeze(-1) for g in groups], -1)
    masks = torch.stack([rollout[g, "action_mask"].squeeze(-2) for g in groups], -2)
    legal = masks.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    rewards = torch.stack([rollout["next", g, "reward"].reshape(-1) for g in groups], -1)
    games = int(rollout["next", "done"].sum())
    print(f"{rollout.batch_size[0]} steps, {games} games finished, "
          f"{int(acting.sum())} decisions, all legal: {bool(legal[acting].all())}, "
          f"returns per player {[round(x, 3) for x in rewards.sum(0).tolist()]}")
    env.close()
    return {"rollout": rollout, "groups": groups, "acting": acting, "legal": legal,
            "masks": masks, "rewards": rewards, "games": games}


if __name__ == "__main__":
    main()
