"""Ray RLlib: shared-policy self-play PPO through RLlib's own PettingZoo wrapper, masks applied.

    python examples/rllib_ppo.py --iterations 2      # needs the `rllib` extra (its own venv)

RLlib's `PettingZooEnv` turns the AEC env into a `MultiAgentEnv`; its `ActionMaskingTorchRLModule`
reads the observation under the key `observations` and the legal actions under `action_mask`,
which is all `training.rllib.compat.RLlibKeysWrapper` changes (a key rename, nothing else). Every
seat maps to one shared module: self-play. The env raises on an illegal action, so RLlib only
ever played legal ones if this finishes. The full pipeline (YAML config, bots on some seats,
remote runners, checkpoints and export to the project's policy format) is
`python -m training.rllib_ppo`.
"""

from __future__ import annotations

import argparse
import sys

try:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env
except ModuleNotFoundError as err:
    if err.name is None or err.name.split(".")[0] != "ray":
        raise
    print("error: examples/rllib_ppo.py needs Ray RLlib, which is not installed in this venv; "
          "it has its own: `make test-rllib` builds .venv-rllib (and runs its tests), then run "
          ".venv-rllib/bin/python examples/rllib_ppo.py", file=sys.stderr)
    raise SystemExit(2) from None
import torch

from cf_env import chicken_foot_v1
from cf_env.tools.cli import HelpFormatter
from training.rllib.compat import RLlibKeysWrapper


def make_env(env_config: dict) -> PettingZooEnv:
    """RLlib's env creator; `env_config` holds ChickenFootConfig fields."""
    return PettingZooEnv(RLlibKeysWrapper(chicken_foot_v1.raw_env(**env_config)))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--iterations", type=int, default=2, help="training iterations")
    parser.add_argument("--batch", type=int, default=256, help="env steps per iteration")
    parser.add_argument("--seed", type=int, default=0, help="RLlib's seed")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # a small network: one thread beats one per core

    rules = {"num_players": 2, "max_pips": 6, "num_rounds": 1}  # a tiny game: quick episodes
    register_env("chicken_foot_v1", make_env)
    config = (
        PPOConfig()
        # RLlib's env checker steps unmasked random actions, which our env rightly refuses.
        .environment("chicken_foot_v1", env_config=rules, disable_env_checking=True)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *a, **k: "shared")
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "shared": RLModuleSpec(module_class=ActionMaskingTorchRLModule,
                                   model_config=DefaultModelConfig(fcnet_hiddens=[64])),
        }))
        .env_runners(num_env_runners=0)  # sample in this process; raise it to scale out
        .training(train_batch_size_per_learner=args.batch, minibatch_size=64, num_epochs=1)
        .debugging(seed=args.seed)
    )
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 2**20)
    algo = config.build_algo()
    try:
        for _ in range(args.iterations):
            result = algo.train()
        runners = result["env_runners"]
        steps = int(runners["num_env_steps_sampled_lifetime"])
        # Sample a few games with the trained module and read back what it chose.
        episodes = algo.env_runner.sample(num_timesteps=100, explore=True)
        chosen, legal = 0, 0
        for episode in episodes:
            for single in episode.agent_episodes.values():
                masks = single.get_observations(slice(None))["action_mask"]
                actions = single.get_actions(slice(None))
                chosen += len(actions)
                legal += int(sum(masks[i][int(a)] == 1 for i, a in enumerate(actions)))
    finally:
        algo.stop()
        ray.shutdown()
    print(f"{args.iterations} iterations, {steps} env steps sampled in training; "
          f"{chosen} sampled actions afterwards, {legal} legal")
    return {"iterations": args.iterations, "env_steps": steps, "actions": chosen, "legal": legal,
            "episodes": len(episodes)}


if __name__ == "__main__":
    main()
