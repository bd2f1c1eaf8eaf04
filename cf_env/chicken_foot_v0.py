"""PettingZoo-style versioned entry point: `from cf_env import chicken_foot_v0; chicken_foot_v0.env()`."""

from .env import env, raw_env

__all__ = ["env", "raw_env"]
