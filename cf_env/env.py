"""# Chicken Foot — PettingZoo AEC environment (`chicken_foot_v0`)

A thin adapter over `cf_env.engine.Engine`: it translates the engine to the AEC API and holds no
rules. Rule numbers refer to docs/rules.md.

| | |
|---|---|
| Agents | `player_0 … player_{n-1}`; seat = index, clockwise = increasing index (R2) |
| Actions | `Discrete(2T + 2)`: `2t` lo half, `2t+1` hi half of tile t, `2T` DRAW, `2T+1` PASS |
| Observations | `{"observation": Box(float32, (D,)), "action_mask": Box(int8, (2T+2,))}` |
| Layout | `env.unwrapped.observation_layout` → `{piece name: slice}` (see `observation.py`) |
| Rewards | at round ends (`"score"`, `"zero_sum"`) or game end (`"win"`), see `rewards.py` |
| Turn order | follows the engine: the same agent acts again after a DRAW (R8) |

Version history: v0 — first release.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from .config import ChickenFootConfig
from .engine import Engine, IllegalActionError, SnapshotError
from .observation import OBSERVATION_VERSION, Encoder, SeatView
from .render import render_text
from .rewards import game_rewards, round_rewards


def env(**kwargs) -> AECEnv:
    """The raw env wrapped the way PettingZoo classic envs are (order enforcing)."""
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))


class raw_env(AECEnv):
    metadata = {
        "name": "chicken_foot_v0",
        "render_modes": ["ansi", "human", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(self, render_mode: str | None = None, max_cycles: int | None = None, **config):
        super().__init__()
        self.config = ChickenFootConfig.from_dict(config)  # unknown fields: ValueError
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}; got {render_mode!r}"
            )
        if max_cycles is not None and (
            isinstance(max_cycles, bool) or not isinstance(max_cycles, int) or max_cycles < 1
        ):
            raise ValueError(f"max_cycles must be None or a positive int; got {max_cycles!r}")
        self.render_mode = render_mode
        self.max_cycles = max_cycles
        self.engine = Engine(self.config, seed=0)
        self.encoder = Encoder(self.config)
        # One incrementally kept observation per seat (cf_env.observation.SeatView).
        self._seat_views = [SeatView(self.encoder) for _ in range(self.config.num_players)]
        self.observation_version = OBSERVATION_VERSION
        n, layout = self.config.num_players, self.encoder.layout
        self.possible_agents = [f"player_{seat}" for seat in range(n)]
        self.agent_name_mapping = {agent: seat for seat, agent in enumerate(self.possible_agents)}
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, layout.high, (layout.size,), np.float32),
                "action_mask": spaces.Box(0, 1, (self.config.num_actions,), np.int8),
            }
        )
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = {a: spaces.Discrete(self.config.num_actions) for a in self.possible_agents}
        self.state_space = spaces.Box(
            0.0, self.encoder.state_layout.high, (self.encoder.state_layout.size,), np.float32
        )
        self._seeder = np.random.default_rng()
        self.agents = []

    # PettingZoo looks these up per agent.
    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    @property
    def observation_layout(self) -> dict[str, slice]:
        return dict(self.encoder.layout.slices)

    # ------------------------------------------------------------------ AEC API
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None:
            self._seeder = np.random.default_rng(seed)
        # Each game gets its own engine seed from the env's seeder: same seed, same games.
        finished = self.engine.reset(int(self._seeder.integers(2**63)))
        self._begin_game(num_steps=0)
        self._after_engine_step(finished)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self.agent_name_mapping[agent]
        engine = self.engine
        if engine.current == seat and not engine.game_over:
            mask = engine.legal_action_mask()
        else:
            mask = np.zeros(self.config.num_actions, dtype=np.int8)
        return {"observation": self._seat_views[seat].observe(engine, seat), "action_mask": mask}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        try:
            finished = self.engine.step(action)
        except IllegalActionError:
            if self.config.illegal_action == "raise":
                raise  # before any bookkeeping: the env, pending rewards included, is unchanged
            self._cumulative_rewards[agent] = 0.0
            self._clear_rewards()
            # PettingZoo classic semantics: the offender is penalised and the game ends.
            self.rewards[agent] = -1.0
            self._rewards_pending = True
            self.terminations = dict.fromkeys(self.agents, True)
            self.infos[agent] = {"illegal_action": True}
            self._accumulate_rewards()
            return
        self._cumulative_rewards[agent] = 0.0
        # Most steps end no round: then .rewards stays all int 0 (as _clear_rewards leaves it) and
        # accumulating it would add nothing, so both loops over the agents are skipped.
        if self._rewards_pending:
            self._clear_rewards()
            self._rewards_pending = False
        self.num_steps += 1
        self._after_engine_step(finished)
        if self._rewards_pending:
            self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _after_engine_step(self, finished: list[list[int]]) -> None:
        cfg, engine = self.config, self.engine
        for points in finished:
            self._rewards_pending = True
            for agent, reward in zip(self.agents, round_rewards(cfg, points)):
                self.rewards[agent] += reward
        for agent in self.agents:
            self.infos[agent] = {"round": engine.round}
        if finished:
            for agent in self.agents:
                self.infos[agent]["round_points"] = finished[-1][self.agent_name_mapping[agent]]
        if engine.game_over:
            self._rewards_pending = True
            for agent, reward in zip(self.agents, game_rewards(cfg, engine.winners)):
                self.rewards[agent] += reward
            self.terminations = dict.fromkeys(self.agents, True)
            for agent in self.agents:
                self.infos[agent]["winners"] = [self.possible_agents[s] for s in engine.winners]
        elif self.max_cycles is not None and self.num_steps >= self.max_cycles * cfg.num_players:
            self.truncations = dict.fromkeys(self.agents, True)
        self.agent_selection = self.possible_agents[engine.current]

    def _begin_game(self, num_steps: int) -> None:
        """Fresh AEC bookkeeping for the engine's current game (after reset or restore)."""
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._rewards_pending = True  # .rewards may hold more than the int 0s _clear_rewards sets
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}
        self.num_steps = num_steps

    def state(self) -> np.ndarray:
        """Full-information global state (all hands, the boneyard) for centralised critics."""
        return self.encoder.state(self.engine)

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        if self.render_mode == "ansi":
            return render_text(self.engine)
        if self.render_mode == "rgb_array":
            from .render_image import render_rgb  # Pillow is only needed for pictures

            return render_rgb(self.engine)
        # "human" shows the acting player its own hand only.
        print(render_text(self.engine, viewer=None if self.engine.game_over else self.engine.current))
        return None

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict:
        snap = self.engine.snapshot()
        snap["seeder"] = self._seeder.bit_generator.state
        snap["num_steps"] = getattr(self, "num_steps", 0)
        # Rewards not yet handed out: `last()` gives each agent its cumulative reward at its next
        # turn, so after a round end most seats' rewards are still waiting (snapshot version 2).
        snap["rewards"] = {a: float(r) for a, r in getattr(self, "rewards", {}).items()}
        snap["cumulative_rewards"] = {
            a: float(r) for a, r in getattr(self, "_cumulative_rewards", {}).items()
        }
        return snap

    def restore(self, snapshot: dict) -> None:
        """Continue from `snapshot`; the env's agents and flags follow the restored game."""
        if not isinstance(snapshot, dict):
            raise SnapshotError(f"a snapshot is a dict; got {type(snapshot).__name__}")
        steps = snapshot.get("num_steps", 0)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise SnapshotError(f"num_steps must be a non-negative int; got {steps!r}")
        seeder = np.random.default_rng()
        if "seeder" in snapshot:  # checked before the engine changes, so a bad one changes nothing
            try:
                seeder.bit_generator.state = snapshot["seeder"]
            except (TypeError, ValueError, KeyError) as err:
                raise SnapshotError("snapshot 'seeder' is not a valid PCG64 state") from err
        else:
            seeder = self._seeder
        pending = {key: self._pending_rewards(snapshot, key) for key in ("rewards", "cumulative_rewards")}
        self.engine.restore(snapshot)
        self._seeder = seeder
        self._begin_game(num_steps=steps)
        self._after_engine_step([])
        self.rewards.update(pending["rewards"])
        self._cumulative_rewards.update(pending["cumulative_rewards"])

    def _pending_rewards(self, snapshot: dict, key: str) -> dict[str, float]:
        """`snapshot[key]` checked: {agent: finite number}; absent (version 1) means none."""
        rewards = snapshot.get(key, {})
        if not isinstance(rewards, dict) or not set(rewards) <= set(self.possible_agents):
            raise SnapshotError(
                f"snapshot {key!r} must map agents of {self.possible_agents} to rewards; got {rewards!r}"
            )
        for agent, value in rewards.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise SnapshotError(f"snapshot {key!r}[{agent!r}] must be a finite number; got {value!r}")
        return {agent: float(value) for agent, value in rewards.items()}


__all__ = ["env", "raw_env", "IllegalActionError"]
