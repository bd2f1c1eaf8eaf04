"""Chicken Foot dominoes for reinforcement learning: a compiled rules core, a PettingZoo AEC env,
Gymnasium and batched views of it, and the agents trained on it.

    import cf_env
    env = cf_env.env(num_players=4)          # raw_env wrapped like PettingZoo classic envs
    env.reset(seed=0)

The subpackages are the layers, lowest first; each imports only from its own layer and those
listed before it (`tests/test_architecture.py` checks this and that no imports form a cycle):

- `core`: the rules (`config`), the id contracts (`tiles`, `actions`), the compiled rules core
  over N games' state (`kernel`, numba) and the single-game `engine` over it, with its `layout`
  types and `snapshot` format, the `observation` encoder and decoder, `rewards`, `deals` (deals
  consistent with what a player saw) and `checks` (the argument checks in front of the compiled
  code). numpy, numba and the standard library only.
- `agents`: the policy protocol and spec table (`policies`), baseline `bots` and their compiled
  twins (`kernel_bots`), search (`ismcts`, `kernel_search`, `lookahead`, `belief`), the
  weights-only checkpoint reader (`checkpoint`) and `arena`, the one loop that plays policies
  through a game.
- `viz`: text (`render`) and pictures (`render_image` over `image_geometry`, `image_paint`,
  `image_panel`; `svg`, the same picture as SVG), game records (`record`) and `replay`.
- `envs`: adapters to other APIs: the PettingZoo AEC env (`env`; `chicken_foot_v1` its versioned
  entry point), the Gymnasium learner's view (`single_agent`), N games at once (`batch`) and the
  native Gymnasium vector env over them (`vector_env`), and the OpenSpiel game (`openspiel_game`).
- `tools`: command-line programs: `play`, `demo`, `soak` (with `reference`, the independent rules
  model it and the tests check the engine against), `bench`, `search_bench`, `openspiel_bots`,
  `compile`, `fuzz_boundary`, and the web app `serve` (its games: `web_games`; its load test:
  `web_load`).

Adapters import gymnasium/pettingzoo, so this package imports them only when used:
`import cf_env.core.engine` needs numpy and numba alone.
"""

import importlib

from cf_env.core.actions import IllegalActionError
from cf_env.core.config import ChickenFootConfig, DriverOptions
from cf_env.core.engine import Engine
from cf_env.core.observation import OBSERVATION_VERSION
from cf_env.core.snapshot import SnapshotError


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
__version__ = "0.2.0"


def __getattr__(name: str):
    # Adapters load on first use: they import gymnasium/pettingzoo, which the engine must not
    # need.
    if name == "ChickenFootBatch":  # N games stepped together (cf_env.envs.batch)
        from cf_env.envs.batch import ChickenFootBatch

        return ChickenFootBatch
    if name in ("env", "raw_env"):  # the AEC env: `env()` wrapped like PettingZoo classic envs
        from cf_env.envs import env as aec

        return getattr(aec, name)
    if name == "chicken_foot_v1":  # the versioned entry point, PettingZoo's style
        return importlib.import_module("cf_env.envs.chicken_foot_v1")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register() -> None:
    # The single-agent learner's view: gymnasium.make("cf_env/ChickenFoot-v1", ...). String entry
    # points keep the adapters unimported until an env is made; `make_env` is the class with
    # illegal_action defaulting to "penalize" (generic tools step unmasked random actions).
    try:
        import gymnasium
    except ImportError:  # the engine alone (numpy) is usable without the adapters' libraries
        return
    # v1's vector entry point is the native batched env (compiled bots): make_vec(...,
    # vectorization_mode="vector_entry_point"); "sync"/"async" still vectorize make_env.
    single_agent = {
        "cf_env/ChickenFoot-v1": ("cf_env.envs.single_agent:make_env",
                                  "cf_env.envs.vector_env:make_vector_env"),
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
    if "cf_env/chicken_foot-v1" not in aec_registry:
        register("aec", "cf_env/chicken_foot-v1", entry_point="cf_env.envs.chicken_foot_v1:env")


_register()
