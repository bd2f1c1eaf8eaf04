"""`chicken_foot_v1`: the current Chicken Foot AEC env, as a PettingZoo-style versioned module.

    from cf_env import chicken_foot_v1
    env = chicken_foot_v1.env(num_players=4)      # the same as cf_env.env(...)

Also `pettingzoo.make("aec", "cf_env/chicken_foot-v1")`. The env itself is `cf_env.env.raw_env`
(spaces, rewards and the info schema `INFO_KEYS` in that module's docstring). What changed from
v0: every info has the same keys and numeric types at reset and at every step (README, Versions).
"""

from cf_env.envs.env import INFO_KEYS, env, raw_env

__all__ = ["INFO_KEYS", "env", "raw_env"]
