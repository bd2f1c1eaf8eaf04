"""`python -m training.rllib_ppo`: multi-agent masked PPO on Ray RLlib, local or on a cluster.

The command; its code is `training.rllib.trainer`.
"""

from training.rllib.trainer import main, parse_args  # noqa: F401  (the command's entry points)

if __name__ == "__main__":
    main()
