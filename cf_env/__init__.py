"""Chicken Foot dominoes for reinforcement learning: a pure rules engine and a PettingZoo AEC env.

    import cf_env
    env = cf_env.env(num_players=4)          # raw_env wrapped like PettingZoo classic envs
    env.reset(seed=0)

Modules: `config` (rules and variants), `tiles` and `actions` (the id contracts), `engine` (the
only code that changes game state), `observation`, `rewards`, `env` (AEC adapter),
`single_agent` (the gymnasium learner's view), `policies` and `bots` (the policy protocol and
baselines), `render` and `render_image` (text and pictures), `record`, `replay` and `play`
(game records, replays, a terminal game against any policies), `bench` and `soak`.
"""

from . import chicken_foot_v0
from .config import ChickenFootConfig
from .engine import Engine, IllegalActionError, SnapshotError
from .env import env, raw_env
from .observation import OBSERVATION_VERSION

__all__ = [
    "ChickenFootConfig",
    "Engine",
    "IllegalActionError",
    "OBSERVATION_VERSION",
    "SnapshotError",
    "chicken_foot_v0",
    "env",
    "raw_env",
]
__version__ = "0.1.0"


def _register() -> None:
    # The single-agent learner's view: gymnasium.make("cf_env/ChickenFoot-v0", ...). The string
    # entry point keeps the adapter unimported until it is made; `make_env` is the class with
    # illegal_action defaulting to "penalize" (generic tools step unmasked random actions).
    import gymnasium

    if "cf_env/ChickenFoot-v0" not in gymnasium.registry:
        gymnasium.register(id="cf_env/ChickenFoot-v0", entry_point="cf_env.single_agent:make_env")
    # PettingZoo >= 1.26 has a registry (`pettingzoo.make("aec", "cf_env/chicken_foot-v0")`).
    try:
        from pettingzoo import aec_registry, register
    except ImportError:
        return
    if "cf_env/chicken_foot-v0" not in aec_registry:
        register("aec", "cf_env/chicken_foot-v0", entry_point="cf_env.env:env")


_register()
