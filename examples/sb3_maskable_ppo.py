"""Stable-Baselines3: sb3-contrib's MaskablePPO on the single-agent env through `make_vec_env`.

    python examples/sb3_maskable_ppo.py --steps 2048

One learner seat against bots that play inside `step` (`cf_env/ChickenFoot-v1`). MaskablePPO
reads the legal actions from the env's `action_masks()` through SB3's vector env, so no wrapper
is needed. `illegal_action="raise"` makes any unmasked action an error instead of a penalty: a
finished run means PPO only ever played legal actions. The full training pipeline (configs,
checkpoints, evaluation) is `python -m training.ppo`; this is the minimal version.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.env_util import make_vec_env

import cf_env  # noqa: F401  (registers the gymnasium ids)
from cf_env.tools.cli import HelpFormatter


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--steps", type=int, default=2048, help="learner steps to train")
    parser.add_argument("--envs", type=int, default=2, help="envs in the vector env")
    parser.add_argument("--eval-episodes", type=int, default=20, help="rounds evaluated")
    parser.add_argument("--seed", type=int, default=0, help="seed of the envs and PPO")
    args = parser.parse_args(argv)
    # A small network: one thread is faster than torch's one per core, many times so when the
    # other cores are busy.
    torch.set_num_threads(1)

    # A small game (2 players, double-6) against the random bot, so a few thousand steps show
    # something; any ChickenFootConfig field and the env's keywords go in env_kwargs.
    env_kwargs = {"num_players": 2, "max_pips": 6, "opponents": ["random"],
                  "illegal_action": "raise"}
    vec = make_vec_env("cf_env/ChickenFoot-v1", n_envs=args.envs, seed=args.seed,
                       env_kwargs=env_kwargs)
    model = MaskablePPO("MlpPolicy", vec, n_steps=256, batch_size=256, n_epochs=4,
                        seed=args.seed,
                        device="cpu", verbose=0)
    model.learn(args.steps)

    # Masked evaluation (episode = one round; reward: zero-sum round points, R12).
    rewards, lengths = evaluate_policy(model, vec, n_eval_episodes=args.eval_episodes,
                                       deterministic=True, use_masking=True,
                                       return_episode_rewards=True)
    print(f"trained {model.num_timesteps} steps; masked evaluation over {len(rewards)} rounds vs "
          f"random: mean return {np.mean(rewards):+.3f}, mean length {np.mean(lengths):.1f}")
    vec.close()
    return {"timesteps": model.num_timesteps, "rewards": list(rewards), "lengths": list(lengths)}


if __name__ == "__main__":
    main()
