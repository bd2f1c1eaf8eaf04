"""# Chicken Foot — PettingZoo AEC environment (`chicken_foot_v1`)

A thin adapter over `cf_env.core.engine.Engine`: it translates the engine to the AEC API and holds no
rules. Rule numbers refer to docs/rules.md.

| | |
|---|---|
| Agents | `player_0 … player_{n-1}`; seat = index, clockwise = increasing index (R2) |
| Actions | `Discrete(2T + 2)`: `2t` lo half, `2t+1` hi half of tile t, `2T` DRAW, `2T+1` PASS |
| Observations | `{"observation": Box(float32, (D,)), "action_mask": Box(int8, (2T+2,))}` |
| Layout | `env.unwrapped.observation_layout` → `{piece name: slice}` (see `observation.py`) |
| Config | keywords name rules and driver options alike: `env.unwrapped.config` (the rules, `ChickenFootConfig`), `env.unwrapped.options` (`DriverOptions`: reward_mode, skip_forced, illegal_action) |
| Rewards | at round ends (`"score"`, `"zero_sum"`) or game end (`"win"`), see `rewards.py` |
| Turn order | follows the engine: the same agent acts again after a DRAW (R8) |
| Infos | the fixed schema `INFO_KEYS` below, the same keys and types at reset and every step |
| Masks | the acting agent's legal actions; all zeros for every other agent and for everyone once the game is over (PettingZoo's convention: a terminated agent steps `None`) |

Infos (`env.infos[agent]`, `last()`'s fifth item) describe the latest step, the same for every
agent except the per-seat values; all are plain Python ints, floats and bools, because libraries
such as TorchRL build a fixed spec from reset's infos and fail on a key or type that appears later:

| key | type | value |
|---|---|---|
| `round` | int | `engine.round`: the round being played (after the game's end, the last one) |
| `round_over` | bool | a round ended on the latest step (R11) |
| `round_points` | int | this agent's points in that round (pips left in hand, R12); 0 if no round ended |
| `game_total` | int | this agent's game total so far (the sum of its round points) |
| `game_over` | bool | the game is over (R4 / the target score, R13); stays True |
| `win` | float | this agent's share of the win once the game is over: 1/k for each of k tied winners (R13), else 0.0 |
| `illegal_action` | bool | this agent's action was illegal and penalised (`illegal_action="penalize"`): every agent is terminated, the game is abandoned (`game_over` stays False) |

What is not a number stays out of the infos: the winners' names are `env.unwrapped.winners()`,
the scores `env.unwrapped.engine.scores`.

Version history: v1 — the fixed info schema above (v0's infos changed keys between steps: a
TorchRL crash). v0 — first release; removed in 0.2.0.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from cf_env.core.actions import IllegalActionError
from cf_env.core.config import split_options
from cf_env.core.engine import Engine
from cf_env.core.observation import OBSERVATION_VERSION, Encoder
from cf_env.core.rewards import game_rewards, round_rewards
from cf_env.core.snapshot import SnapshotError, check_rng_state
from cf_env.viz.render import render_text

# The info schema (module docstring): every agent's info has exactly these keys, at reset and at
# every step, with these types.
INFO_KEYS: dict[str, type] = {
    "round": int,
    "round_over": bool,
    "round_points": int,
    "game_total": int,
    "game_over": bool,
    "win": float,
    "illegal_action": bool,
}


def env(**kwargs) -> AECEnv:
    """The raw env wrapped the way PettingZoo classic envs are (order enforcing)."""
    return _OrderEnforcing(raw_env(**kwargs))


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order enforcing wrapper, which forwards no `_` attribute: Jupyter's
    `_repr_svg_` (the table) is forwarded here."""

    def _repr_svg_(self) -> str:
        return self.unwrapped._repr_svg_()

    def last(self, observe: bool = True):
        """The raw env's `last` once reset (before, PettingZoo's own, with its errors): the
        inherited one reads six attributes, each through the wrapper's `__getattr__` after a
        failed lookup, which was a third of a wrapped step."""
        if not self._has_reset:
            return super().last(observe)
        return self.env.last(observe)


class raw_env(AECEnv):
    metadata = {
        "name": "chicken_foot_v1",
        "render_modes": ["ansi", "human", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(self, render_mode: str | None = None, max_cycles: int | None = None, **config):
        super().__init__()
        # The keywords name rules and driver options alike; unknown ones: ValueError.
        self.config, self.options = split_options(config)
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
        self.engine = Engine(self.config, seed=0, skip_forced=self.options.skip_forced)
        self.encoder = Encoder(self.config)
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
            # The action spaces too, apart from the games' seeder, so that PettingZoo's loop
            # (`env.action_space(agent).sample(mask)`) plays the same game for the same seed.
            for k, agent in enumerate(self.possible_agents):
                entropy = np.random.SeedSequence([seed, k]).generate_state(1)[0]
                self.action_spaces[agent].seed(int(entropy))
        # Each game gets its own engine seed from the env's seeder: same seed, same games.
        finished = self.engine.reset(int(self._seeder.integers(2**63)))
        self._begin_game(num_steps=0)
        self._after_engine_step(finished)
        # With skip_forced the engine may finish rounds (even the game) inside reset; their
        # rewards must reach last() like any step's.
        self._accumulate_rewards()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self.agent_name_mapping[agent]
        engine = self.engine
        if engine.current == seat and not engine.game_over:
            mask = engine.legal_action_mask()
        else:
            mask = np.zeros(self.config.num_actions, dtype=np.int8)
        return {"observation": self.encoder.observe(engine, seat), "action_mask": mask}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        try:
            finished = self.engine.step(action)
        except IllegalActionError:
            if self.options.illegal_action == "raise":
                raise  # before any bookkeeping: the env, pending rewards included, is unchanged
            self._cumulative_rewards[agent] = 0.0
            self._clear_rewards()
            # PettingZoo classic semantics: the offender is penalised and the game ends.
            self.rewards[agent] = -1.0
            self._rewards_pending = True
            self.terminations = dict.fromkeys(self.agents, True)
            self._write_infos([], offender=agent)
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
        cfg, engine, mode = self.config, self.engine, self.options.reward_mode
        for points in finished:
            self._rewards_pending = True
            for agent, reward in zip(self.agents, round_rewards(cfg, mode, points)):
                self.rewards[agent] += reward
        if engine.game_over:
            self._rewards_pending = True
            for agent, reward in zip(self.agents, game_rewards(cfg, mode, engine.winners)):
                self.rewards[agent] += reward
            self.terminations = dict.fromkeys(self.agents, True)
        elif self.max_cycles is not None and self.num_steps >= self.max_cycles * cfg.num_players:
            self.truncations = dict.fromkeys(self.agents, True)
        self._write_infos(finished)
        self.agent_selection = self.possible_agents[engine.current]

    def _write_infos(self, finished: list[list[int]], offender: str | None = None) -> None:
        """Every agent's info for the latest step: the fixed schema of `INFO_KEYS`.

        `finished` holds the rounds that ended on the step (the last one is reported);
        `offender` is the agent whose illegal action was just penalised, if any. Each step gets
        new dicts, so an info a caller kept is never changed behind its back.
        """
        infos = self.infos
        if not finished and offender is None:
            # Most steps end no round: their infos are copies of the ones kept since the last
            # round end, cheaper than building n seven-key dicts at every step.
            for agent, quiet in self._quiet_infos.items():
                infos[agent] = quiet.copy()
            return
        if finished:
            self._set_quiet_infos()
        points = finished[-1] if finished else None
        for seat, agent in enumerate(self.possible_agents):
            info = infos[agent] = self._quiet_infos[agent].copy()
            if points is not None:
                info["round_over"], info["round_points"] = True, points[seat]
            info["illegal_action"] = agent == offender

    def _set_quiet_infos(self) -> None:
        """The infos of a step that ends no round, for the engine's scores (they change only at
        round ends, R12) and result."""
        engine = self.engine
        over = engine.game_over
        winners = engine.winners if over else ()
        share = 1.0 / len(winners) if winners else 0.0  # ties split the win (R13)
        totals = engine.totals()
        self._quiet_infos = {
            agent: {
                "round": engine.round,
                "round_over": False,
                "round_points": 0,
                "game_total": totals[seat],
                "game_over": over,
                "win": share if seat in winners else 0.0,
                "illegal_action": False,
            }
            for seat, agent in enumerate(self.possible_agents)
        }

    def winners(self) -> list[str]:
        """The agents who won the game (R13; several on a shared win); [] while it runs. Kept out
        of the infos, which hold numbers only."""
        engine = self.engine
        return [self.possible_agents[s] for s in engine.winners] if engine.game_over else []

    def _begin_game(self, num_steps: int) -> None:
        """Fresh AEC bookkeeping for the engine's current game (after reset or restore)."""
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._rewards_pending = True  # .rewards may hold more than the int 0s _clear_rewards sets
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}  # filled by _write_infos
        self._set_quiet_infos()
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
            from cf_env.viz.render_image import render_rgb  # Pillow is only needed for pictures

            return render_rgb(self.engine)
        # "human" shows the acting player its own hand only.
        print(render_text(self.engine, viewer=None if self.engine.game_over else self.engine.current))
        return None

    def _repr_svg_(self) -> str:
        """The table as SVG (Jupyter shows an env inline): the acting player's hand, every
        hand once the game is over (`cf_env.viz.svg.engine_svg`)."""
        from cf_env.viz.svg import engine_svg

        return engine_svg(self.engine)

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
            check_rng_state(snapshot["seeder"], "snapshot 'seeder'")
            seeder.bit_generator.state = snapshot["seeder"]
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
        """`snapshot[key]` checked: {agent: finite number}; absent means none."""
        rewards = snapshot.get(key, {})
        if not isinstance(rewards, dict) or not set(rewards) <= set(self.possible_agents):
            raise SnapshotError(
                f"snapshot {key!r} must map agents of {self.possible_agents} to rewards; got {rewards!r}"
            )
        for agent, value in rewards.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise SnapshotError(f"snapshot {key!r}[{agent!r}] must be a finite number; got {value!r}")
        return {agent: float(value) for agent, value in rewards.items()}


__all__ = ["INFO_KEYS", "env", "raw_env", "IllegalActionError"]
