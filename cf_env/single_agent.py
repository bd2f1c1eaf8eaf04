"""The learner's view: a single-agent `gymnasium.Env` in which the other seats play inside `step`.

    import gymnasium as gym
    import cf_env  # registers the id (cf_env/__init__.py)
    env = gym.make("cf_env/ChickenFoot-v0", opponents=["greedy"], episode="round")
    obs, info = env.reset(seed=0)
    action = int(np.flatnonzero(env.unwrapped.action_masks())[0])

| | |
|---|---|
| Observation | the learner's own `Box(float32, (D,))` vector (`cf_env.observation`), nothing else |
| Action | `Discrete(2T + 2)`, the codec of `cf_env.actions`; `action_masks()` gives the legal ones |
| Reward | the learner's own reward (`cf_env.rewards`) summed over everything since its last decision |
| Episode | `"round"`: one round (R4) — the game carries on into the next episode's round; `"game"`: a whole game |

The learner's seat and the opponents' policies are drawn at the start of every game from the env's
own RNG (seeded by `reset(seed=...)`), so seat effects average out and runs are reproducible.
`action_masks()` is a method of the env itself, which is what sb3-contrib's `MaskablePPO` looks
for, so it works under `SubprocVecEnv` without an `ActionMasker` wrapper.

Why `episode="round"` is the default for training: with the default `reward_mode="zero_sum"` the
game's return is the sum of independent per-round returns (every round is re-dealt, R4), so
ending the episode at the round boundary loses nothing, removes the other rounds' luck from each
decision's return, and lets `gamma` be ~1. The game still advances between episodes, so the
learner sees every round's centre double. `reward_mode="win"` pays only at the end of a game and
therefore requires `episode="game"`.

Illegal actions follow `config.illegal_action`: `"raise"` (default) raises `IllegalActionError`
and changes nothing; `"penalize"` ends the episode with reward -1 and `info["illegal_action"]`
(needed only by checkers that step with unmasked random actions).

Skipping forced decisions (`learner_skip_forced=True`): when the learner has exactly one legal
action the adapter takes it, so every decision the learner is asked about is a real choice.
Opponents' decisions with exactly one legal action are always taken without asking their policy,
as `training.evaluate` does (the convention of `cf_env.policies`).

Speed: a learner step carries about nine engine decisions (opponents' turns, forced draws and
passes), so the opponents' path dominates the adapter's cost. Forced decisions and the choices
of policies with the mask-only fast path (`act_bits`, e.g. `random`, `greedy`: given the
engine's legal bitset, no observation built) are all made inside one `Engine.advance` call;
other policies (the heuristic, frozen snapshots) get the full observation dict. The
learner's observation (and an observation-reading opponent's) is kept current between its turns
by a `cf_env.observation.SeatView` instead of being built afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .config import ChickenFootConfig
from .engine import Engine
from .observation import OBSERVATION_VERSION, Encoder, SeatView
from .policies import Policy, legal_fast_path, load_policy
from .rewards import game_rewards, round_rewards

ENV_ID = "cf_env/ChickenFoot-v0"
EPISODES = ("round", "game")


@runtime_checkable
class OpponentSampler(Protocol):
    """Draws the policies for the other seats of a new game (`num` of them) with `rng`."""

    def sample(self, rng: np.random.Generator, num: int) -> list[Policy]: ...


class SpecOpponents:
    """Each opponent seat draws uniformly (or by `weights`) from a list of policy specs/factories.

    Policies are built lazily, one per (seat slot, spec), and reused across games; their seeds come
    from the env's RNG, so the same env seed replays the same opponents.
    """

    def __init__(
        self,
        specs: Sequence[str | Callable[..., Policy]],
        config: ChickenFootConfig,
        weights: Sequence[float] | None = None,
    ):
        if isinstance(specs, str) or not specs:
            raise ValueError(f"opponents must be a non-empty list of policy specs; got {specs!r}")
        self.specs = list(specs)
        self.config = config
        if weights is None:
            weights = [1.0] * len(self.specs)
        probs = np.asarray(weights, dtype=np.float64)
        if probs.shape != (len(self.specs),) or (probs < 0).any() or probs.sum() <= 0:
            raise ValueError(
                f"opponent weights must be {len(self.specs)} non-negative numbers with a positive "
                f"sum; got {list(weights)!r}"
            )
        self.probs = probs / probs.sum()
        self._cdf = self.probs.cumsum()
        self._cdf /= self._cdf[-1]
        self._built: dict[tuple[int, int], Policy] = {}

    def sample(self, rng: np.random.Generator, num: int) -> list[Policy]:
        # Inverse-CDF sampling, one uniform per seat: exactly the draws and the result of
        # `rng.choice(len(specs), size=num, p=probs)` (tests check it) at a fraction of its cost.
        chosen = self._cdf.searchsorted(rng.random(num), side="right").tolist()
        out = []
        for slot, index in enumerate(chosen):
            key = (slot, index)
            if key not in self._built:
                spec = self.specs[index]
                seed = int(rng.integers(2**31))
                if isinstance(spec, str):
                    self._built[key] = load_policy(spec, self.config, seed=seed)
                else:
                    self._built[key] = spec(config=self.config, seed=seed)
            out.append(self._built[key])
        return out


class ChickenFootSingleAgentEnv(gym.Env):
    """One learner seat against opponent policies; see the module docstring for the contract."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        config: ChickenFootConfig | dict | None = None,
        opponents: Sequence[str | Callable[..., Policy]] | OpponentSampler = ("random",),
        episode: str = "round",
        learner_skip_forced: bool = True,
        render_mode: str | None = None,
        **rules,
    ):
        if config is None:
            config = ChickenFootConfig(**rules)
        elif isinstance(config, dict):
            config = ChickenFootConfig.from_dict({**config, **rules})
        elif rules:
            config = config.replace(**rules)
        if config.skip_forced:
            # The adapter decides which learner decisions to skip; engine-level skipping would
            # also take opponents' turns away from their policies.
            raise ValueError(
                "config.skip_forced must be False here; use learner_skip_forced=True instead"
            )
        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}; got {episode!r}")
        if episode == "round" and config.reward_mode == "win":
            raise ValueError(
                "reward_mode='win' pays only at the end of a game; use episode='game' with it"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi'; got {render_mode!r}")
        self.config = config
        self.episode = episode
        self.learner_skip_forced = bool(learner_skip_forced)
        self.render_mode = render_mode
        self.observation_version = OBSERVATION_VERSION
        if isinstance(opponents, OpponentSampler):
            self.opponents: OpponentSampler = opponents
        else:
            self.opponents = SpecOpponents(opponents, config)
        self.engine = Engine(config, seed=0)
        self.encoder = Encoder(config)
        # Each seat's observation kept up to date between its turns (the learner's every step;
        # observation-reading opponents', such as the heuristic or frozen snapshots, per choice).
        self._views = [SeatView(self.encoder) for _ in range(config.num_players)]
        layout = self.encoder.layout
        self.observation_space = spaces.Box(0.0, layout.high, (layout.size,), np.float32)
        self.action_space = spaces.Discrete(config.num_actions)
        self._rng = np.random.default_rng()
        self._need_new_game = True
        self._last_round: list[int] = []
        self.learner = 0
        self.seat_policies: list[Policy | None] = []
        # Per seat: the policy's mask-only fast path (on the legal bitset) or None (observations).
        self._seat_fast: list[Callable[[int], int] | None] = []

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self._need_new_game = True
        while True:
            if self._need_new_game or self.engine.game_over:
                self._new_game()
            # A round can end before the learner has a real choice (only forced moves); such a
            # round holds no decision, so it is skipped and the next one starts the episode.
            _, ended = self._advance()
            if not ended:
                return self._observe(), self._info()

    def step(self, action):
        if self.engine.game_over or self.engine.current != self.learner:
            raise RuntimeError("step() called on a finished episode; call reset()")
        if self.config.illegal_action == "penalize" and not self._is_legal(action):
            # PettingZoo classic semantics (config.illegal_action): -1 and the game is abandoned.
            self._need_new_game = True
            info = {**self._info(), "illegal_action": True}
            return self._observe(), -1.0, True, False, info
        reward, ended = self._play(int(action))  # raises IllegalActionError on a masked action
        if not ended:
            more, ended = self._advance()
            reward += more
        info = self._info()
        if ended:
            info.update(self._result())
        return self._observe(), float(reward), ended, False, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now (bool); all False once the episode has ended."""
        mask = np.zeros(self.config.num_actions, dtype=bool)
        if not self.engine.game_over and self.engine.current == self.learner:
            for action in self.engine.legal_actions():  # a handful: cheaper than fancy indexing
                mask[action] = True
        return mask

    def render(self):
        if self.render_mode == "ansi":
            from .render import render_text

            return render_text(self.engine, viewer=self.learner)
        return None

    # ------------------------------------------------------------------ training hooks
    def set_opponents(self, opponents: Sequence[str | Callable[..., Policy]] | OpponentSampler):
        """Swap the opponent source (takes effect from the next game)."""
        if isinstance(opponents, OpponentSampler):
            self.opponents = opponents
        else:
            self.opponents = SpecOpponents(opponents, self.config)

    def call_opponents(self, method: str, *args, **kwargs):
        """Call `method` on the opponent sampler (VecEnv.env_method reaches it this way)."""
        return getattr(self.opponents, method)(*args, **kwargs)

    # ------------------------------------------------------------------ internals
    def _new_game(self) -> None:
        n = self.config.num_players
        self.learner = int(self._rng.integers(n))
        others = self.opponents.sample(self._rng, n - 1)
        self.seat_policies = [None] * n
        for k, policy in enumerate(others):
            self.seat_policies[(self.learner + 1 + k) % n] = policy
        self._seat_fast = [None if p is None else legal_fast_path(p) for p in self.seat_policies]
        for policy in others:
            if callable(getattr(policy, "reset", None)):
                policy.reset()
        self._need_new_game = False
        # Rounds ending inside reset (no decision at all) are not the learner's to be paid for.
        self.engine.reset(int(self._rng.integers(2**63)))

    def _advance(self) -> tuple[float, bool]:
        """Play opponents (and the learner's forced moves) until the learner has a real choice.

        Returns the learner's reward collected meanwhile and whether the episode ended.
        """
        engine, learner, reward = self.engine, self.learner, 0.0
        # Forced decisions (most of them: draws, passes) are taken without asking anyone, as
        # training.evaluate does, the learner's too unless it wants to see them; fast-path
        # opponents choose inside the same engine call.
        stop_seat = -1 if self.learner_skip_forced else learner
        while True:
            finished = engine.advance(stop_seat, self._seat_fast)
            if not finished:
                seat = engine.current
                if engine.game_over:
                    return reward, True
                if seat == learner:
                    return reward, False
                obs = {  # an opponent that reads observations
                    "observation": self._views[seat].observe(engine, seat),
                    "action_mask": engine.legal_action_mask(),
                }
                finished = engine.step(self.seat_policies[seat].act(obs))
            if finished:  # a round ended (rare): pay the learner, maybe end the episode
                more, ended = self._rounds_ended(finished)
                reward += more
                if ended:
                    return reward, True

    def _is_legal(self, action) -> bool:
        mask = self.engine.legal_action_mask()
        try:
            index = int(action)
        except (TypeError, ValueError):
            return False
        return 0 <= index < mask.size and bool(mask[index])

    def _play(self, action: int) -> tuple[float, bool]:
        """One engine step; returns the learner's reward from it and whether the episode ended."""
        finished = self.engine.step(action)
        return self._rounds_ended(finished) if finished else (0.0, False)

    def _rounds_ended(self, finished: list[list[int]]) -> tuple[float, bool]:
        """The learner's reward for rounds that just ended (a game ends only with a round) and
        whether the episode ended."""
        cfg, seat = self.config, self.learner
        reward = sum(round_rewards(cfg, points)[seat] for points in finished)
        self._last_round = finished[-1]
        if self.engine.game_over:
            reward += game_rewards(cfg, self.engine.winners)[seat]
            return float(reward), True
        return float(reward), self.episode == "round"

    def _observe(self) -> np.ndarray:
        return self._views[self.learner].observe(self.engine, self.learner)

    def _info(self) -> dict:
        return {"learner_seat": self.learner, "round": self.engine.round}

    def _result(self) -> dict:
        """Episode summary: the learner's points and its share of the win (ties split, R13)."""
        if self.episode == "round":
            points = self._last_round
            low = min(points)
            winners = [s for s, p in enumerate(points) if p == low]
            return {
                "round_points": points[self.learner],
                "win": (1.0 / len(winners)) if self.learner in winners else 0.0,
            }
        winners = self.engine.winners
        return {
            "game_total": self.engine.totals()[self.learner],
            "win": (1.0 / len(winners)) if self.learner in winners else 0.0,
        }


def make_env(**kwargs) -> ChickenFootSingleAgentEnv:
    """Entry point for `gymnasium.make(ENV_ID, **kwargs)`."""
    return ChickenFootSingleAgentEnv(**kwargs)

