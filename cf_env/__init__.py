"""Chicken Foot dominoes for reinforcement learning: a pure rules engine and a PettingZoo AEC env.

    import cf_env
    env = cf_env.env(num_players=4)          # raw_env wrapped like PettingZoo classic envs
    env.reset(seed=0)

Modules: `config` (rules and variants), `tiles` and `actions` (the id contracts), `engine` (the
only code that changes game state), `observation`, `rewards`, `env` (AEC adapter;
`chicken_foot_v1` its versioned entry point, `chicken_foot_v0` the deprecated first version,
imported only when used), `single_agent` (the gymnasium learner's view), `policies` and `bots`
(the policy protocol and baselines), `render` and `render_image` (text and pictures), `record`,
`replay` and `play` (game records, replays, a terminal game against any policies), `bench` and
`soak`.
"""

from . import chicken_foot_v1
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
    "chicken_foot_v1",
    "env",
    "raw_env",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    # `cf_env.chicken_foot_v0` stays reachable as an attribute, imported on first use only:
    # importing it warns DeprecationWarning, which `import cf_env` must not.
    if name == "chicken_foot_v0":
        import importlib

        return importlib.import_module(f"{__name__}.chicken_foot_v0")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register() -> None:
    # The single-agent learner's view: gymnasium.make("cf_env/ChickenFoot-v1", ...). String entry
    # points keep the adapters (and the deprecated v0 module, whose import warns) unimported until
    # an env is made; `make_env` is the class with illegal_action defaulting to "penalize"
    # (generic tools step unmasked random actions). v0 (its old infos) stays, deprecated:
    # making it warns, and Gymnasium adds that v1 exists.
    import gymnasium

    single_agent = {
        "cf_env/ChickenFoot-v1": "cf_env.single_agent:make_env",
        "cf_env/ChickenFoot-v0": "cf_env.chicken_foot_v0:make_single_agent_env",
    }
    for env_id, entry_point in single_agent.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)
    # PettingZoo >= 1.26 has a registry (`pettingzoo.make("aec", "cf_env/chicken_foot-v1")`).
    try:
        from pettingzoo import aec_registry, register
    except ImportError:
        return
    for version in ("v1", "v0"):
        env_id = f"cf_env/chicken_foot-{version}"
        if env_id not in aec_registry:
            register("aec", env_id, entry_point=f"cf_env.chicken_foot_{version}:env")


_register()
