"""Chicken Foot dominoes for reinforcement learning: a pure rules engine and a PettingZoo AEC env.

    import cf_env
    env = cf_env.env(num_players=4)          # raw_env wrapped like PettingZoo classic envs
    env.reset(seed=0)

The subpackages are the layers, lowest first; each imports only from its own layer and those
listed before it (`tests/test_architecture.py` checks this and that no imports form a cycle):

- `core`: the rules (`config`), the id contracts (`tiles`, `actions`), the `engine` (the only code
  that changes game state) with its `layout` types and `snapshot` format, the `observation`
  encoder and decoder, `rewards`, and `deals` (deals consistent with what a player saw). numpy
  and the standard library only.
- `agents`: the policy protocol and spec table (`policies`), baseline `bots`, `ismcts` search,
  the weights-only checkpoint reader (`checkpoint`) and `arena`, the one loop that plays
  policies through a game.
- `viz`: text (`render`) and pictures (`render_image` over `image_geometry`, `image_paint`,
  `image_panel`; `svg`, the same picture as SVG), game records (`record`) and `replay`.
- `envs`: adapters to other APIs: the PettingZoo AEC env (`env`; `chicken_foot_v1` its versioned
  entry point, `chicken_foot_v0` the deprecated first version), the Gymnasium learner's view
  (`single_agent`) and the OpenSpiel game (`openspiel_game`).
- `tools`: command-line programs: `play`, `demo`, `soak` (with `reference`, the independent rules
  model it and the tests check the engine against), `bench`, `search_bench`, `openspiel_bots`,
  and the web app `serve` (its games: `web_games`; its load test: `web_load`).

Adapters import gymnasium/pettingzoo, so this package imports them only when used:
`import cf_env.core.engine` needs numpy alone. The old flat paths (`cf_env.engine`,
`python -m cf_env.play`, ...) still work, deprecated: each use warns `DeprecationWarning` with the
new path and the release that removes the old one (`cf_env._moved`).
"""

import importlib

from cf_env import _moved
from cf_env.core.config import ChickenFootConfig, DriverOptions
from cf_env.core.engine import Engine, IllegalActionError, SnapshotError
from cf_env.core.observation import OBSERVATION_VERSION

_moved.install()


def _table_svg(engine: Engine) -> str:
    # Jupyter's picture of an engine (`Engine._repr_svg_`): the viz layer, imported on first use.
    from cf_env.viz.svg import engine_svg

    return engine_svg(engine)


Engine.svg_renderer = _table_svg

__all__ = [
    "ChickenFootBatch",
    "ChickenFootConfig",
    "DriverOptions",
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
    # Adapters load on first use: they import gymnasium/pettingzoo, which the engine must not
    # need; `chicken_foot_v0` also warns DeprecationWarning on import, which `import cf_env`
    # must not.
    if name == "ChickenFootBatch":  # N games stepped together (cf_env.envs.batch)
        from cf_env.envs.batch import ChickenFootBatch

        return ChickenFootBatch
    if name in ("env", "raw_env"):  # the AEC env: `env()` wrapped like PettingZoo classic envs
        from cf_env.envs import env as aec

        return getattr(aec, name)
    if name in ("chicken_foot_v1", "chicken_foot_v0"):
        # The versioned entry points (`from cf_env import chicken_foot_v1`, PettingZoo's style),
        # imported on first use by their own path: no deprecated alias is involved.
        return importlib.import_module(f"cf_env.envs.{name}")
    if f"cf_env.{name}" in _moved.MOVED:
        # Old flat paths (`cf_env.engine.Engine` as before the move): imported through the
        # alias, which warns DeprecationWarning (cf_env._moved).
        return importlib.import_module(f"cf_env.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register() -> None:
    # The single-agent learner's view: gymnasium.make("cf_env/ChickenFoot-v1", ...). String entry
    # points keep the adapters (and the deprecated v0 module, whose import warns) unimported until
    # an env is made; `make_env` is the class with illegal_action defaulting to "penalize"
    # (generic tools step unmasked random actions). v0 (its old infos) stays, deprecated:
    # making it warns, and Gymnasium adds that v1 exists.
    try:
        import gymnasium
    except ImportError:  # the engine alone (numpy) is usable without the adapters' libraries
        return
    # v1's vector entry point is the native batched env (compiled bots): make_vec(...,
    # vectorization_mode="vector_entry_point"); "sync"/"async" still vectorize make_env.
    single_agent = {
        "cf_env/ChickenFoot-v1": ("cf_env.envs.single_agent:make_env",
                                  "cf_env.envs.vector_env:make_vector_env"),
        "cf_env/ChickenFoot-v0": ("cf_env.envs.chicken_foot_v0:make_single_agent_env", None),
    }
    for env_id, (entry_point, vector_entry_point) in single_agent.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point,
                               vector_entry_point=vector_entry_point)
    # PettingZoo >= 1.26 has a registry (`pettingzoo.make("aec", "cf_env/chicken_foot-v1")`).
    try:
        from pettingzoo import aec_registry, register
    except ImportError:
        return
    for version in ("v1", "v0"):
        env_id = f"cf_env/chicken_foot-{version}"
        if env_id not in aec_registry:
            register("aec", env_id, entry_point=f"cf_env.envs.chicken_foot_{version}:env")


_register()
