"""Deprecated: `chicken_foot_v0`, the envs with the infos of their first release. Use v1.

    from cf_env import chicken_foot_v1            # or cf_env.env(); gym id cf_env/ChickenFoot-v1

Importing this module warns `DeprecationWarning` (once, as Python imports a module once), and so
does making any of its envs: `env()`, `raw_env()`, `pettingzoo.make("aec",
"cf_env/chicken_foot-v0")` and `gymnasium.make("cf_env/ChickenFoot-v0")` (`make_single_agent_env`;
Gymnasium adds its own "out of date" warning). It is kept, as PettingZoo keeps old versions
importable, so that code written against v0 runs unchanged while it migrates: the games, actions,
observations, rewards and masks are v1's — only the infos are v0's, which change keys between
steps (a spec built from reset's infos, as TorchRL builds one, breaks at the first round end):

* AEC (`env`, `raw_env`): `{"round": int}` at reset and after each step; `"round_points"` (this
  agent's points) added on a step that ends a round; `"winners"` (a list of agent names) added
  at the game's end; on a penalised illegal action the offender's info is replaced by
  `{"illegal_action": True}`.
* Single agent (`ChickenFootSingleAgentEnvV0`): `{"learner_seat", "round"}`; at the end of an
  episode also `"round_points"` (round episodes) or `"game_total"` (game episodes) and `"win"`;
  on a penalty `"illegal_action": True` instead of those.

Migrating to v1: read `info["round_over"]` / `info["game_over"]` instead of testing for keys,
`info["win"]` (this agent's share of the win) or `env.unwrapped.winners()` (the names) instead of
`info["winners"]`, and `info["illegal_action"]` (now always present, False unless penalised).
"""

from __future__ import annotations

from pettingzoo.utils import wrappers

from cf_env.core.deprecation import warn_deprecated
from cf_env.envs import single_agent as _single
from cf_env.envs.env import raw_env as _RawEnvV1

_MESSAGE = (
    "cf_env.envs.chicken_foot_v0 is deprecated: its infos change keys between steps, which "
    "breaks libraries that build a spec from reset's infos (TorchRL). Use "
    "cf_env.envs.chicken_foot_v1 (cf_env.env(), pettingzoo id 'cf_env/chicken_foot-v1') or the "
    "gymnasium id 'cf_env/ChickenFoot-v1'; the environment card's version history "
    "(docs/environment.md) says what changed and how to migrate"
)


def _deprecated() -> None:
    warn_deprecated(_MESSAGE)


_deprecated()  # on import: the importing line


def env(**kwargs) -> wrappers.OrderEnforcingWrapper:
    """v0's AEC env, wrapped as `cf_env.env()` is."""
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))


class raw_env(_RawEnvV1):
    """The v1 AEC env with v0's infos (module docstring)."""

    metadata = {**_RawEnvV1.metadata, "name": "chicken_foot_v0"}

    def __init__(self, *args, **kwargs):
        _deprecated()
        super().__init__(*args, **kwargs)

    def _write_infos(self, finished: list[list[int]], offender: str | None = None) -> None:
        engine = self.engine
        if offender is not None:
            self.infos[offender] = {"illegal_action": True}  # the others' infos stay as they were
            return
        for agent in self.agents:
            self.infos[agent] = {"round": engine.round}
        if finished:
            for agent in self.agents:
                self.infos[agent]["round_points"] = finished[-1][self.agent_name_mapping[agent]]
        if engine.game_over:
            for agent in self.agents:
                self.infos[agent]["winners"] = self.winners()


class ChickenFootSingleAgentEnvV0(_single.ChickenFootSingleAgentEnv):
    """The v1 single-agent env with v0's infos (module docstring)."""

    def __init__(self, *args, **kwargs):
        _deprecated()
        super().__init__(*args, **kwargs)

    def _info(self, ended: bool, illegal: bool = False) -> dict:
        info = {"learner_seat": self.learner, "round": self.engine.round}
        if illegal:
            info["illegal_action"] = True
        elif ended:
            if self.episode == "round":
                info["round_points"] = self._step_round[self.learner]
            else:
                info["game_total"] = self.engine.totals()[self.learner]
            info["win"] = self._win_share()
        return info


def make_single_agent_env(config=None, **kwargs) -> ChickenFootSingleAgentEnvV0:
    """Entry point of the gymnasium id `cf_env/ChickenFoot-v0`: `make_env`'s defaults, v0's infos."""
    config, kwargs = _single.with_make_defaults(config, kwargs)
    return ChickenFootSingleAgentEnvV0(config, **kwargs)


__all__ = ["ChickenFootSingleAgentEnvV0", "env", "make_single_agent_env", "raw_env"]
