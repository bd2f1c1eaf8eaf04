"""The learner's view: a single-agent `gymnasium.Env` in which the other seats play inside `step`.

    import gymnasium as gym
    import cf_env  # registers the id (cf_env/__init__.py)
    env = gym.make("cf_env/ChickenFoot-v1", opponents=["greedy"], episode="round")
    obs, info = env.reset(seed=0)
    action = int(np.flatnonzero(env.unwrapped.action_masks())[0])

| | |
|---|---|
| Observation | the learner's own `Box(float32, (D,))` vector (`cf_env.core.observation`), nothing else |
| Action | `Discrete(2T + 2)`, the codec of `cf_env.core.actions`; `action_masks()` gives the legal ones |
| Reward | the learner's own reward (`cf_env.core.rewards`) summed over everything since its last decision |
| Episode | `"round"`: one round (R4) — the game carries on into the next episode's round; `"game"`: a whole game |
| Info | the fixed schema `INFO_KEYS` (below): the same keys and types at reset and at every step |
| Terminal mask | exactly one action, PASS (`2T+1`, `env.terminal_action`), a placeholder that is never played |

Infos (`cf_env/ChickenFoot-v1`) hold numbers only, so that
vector envs stack them into arrays and libraries that build a spec from reset's info (TorchRL)
keep working:

| key | type | value |
|---|---|---|
| `learner_seat` | int | the learner's seat in this game |
| `round` | int | `engine.round`: the round being played (after the game's end, the last one) |
| `round_over` | bool | a round ended during this step (the learner's move or the opponents' after it); False at reset |
| `round_points` | int | the learner's points in that round (pips left in hand, R12); 0 if no round ended |
| `game_total` | int | the learner's game total so far (the sum of its round points) |
| `game_over` | bool | the game is over (R13) |
| `win` | float | on the step that ends the episode, the learner's share of its win (ties split): of the round (lowest points) for `episode="round"`, of the game (R13) for `"game"`; else 0.0 |
| `illegal_action` | bool | the action was illegal and penalised (`illegal_action="penalize"`); the episode ends |
| `action_mask` | bool array `(2T+2,)` | `action_masks()` after this step (a copy) |

Never an empty mask: when no episode is running (a terminal observation, before the first
reset, after an opponent failed) `action_masks()` and `info["action_mask"]` hold exactly one
True, at PASS, the terminal placeholder. A masked categorical over an empty set is NaN, the crash
the classic PPO loops hit at Gymnasium's next-step autoreset: a vector env returns the terminal
observation with its mask, the policy samples from it, and on the next `step` the vector env
resets that sub-env instead of stepping it, so the placeholder is never sent to the engine. A
plain env stepped after `terminated=True` raises `IllegalActionError`, with the placeholder too.

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

Seeding: `reset(seed=s)` replays the same games whatever the env did before, for every kind of
opponent. The env never samples from the opponent source it was given (`self.opponents`): it
plays a deep copy of it, made afresh at every `reset(seed=...)`, so policies that the source built
and cached during earlier games (with RNGs that moved on) are built again, seeded from the env's
RNG exactly as the first time. A custom `OpponentSampler` must therefore be deep-copyable; change
it through `set_opponents` or `call_opponents` (which reach the copy in play too) — changes made
to the object directly take effect at the next `reset(seed=...)`. Policies' `reset()`, if they
have one, is called before every game.

Actions are checked, not coerced, by the engine's rules (`Engine.step`): a plain int (the fast
path), a numpy integer scalar or a 0-d integer array; anything else (a float, a str, a bool,
None, an array) is malformed. The `illegal_action` option decides what an illegal or malformed action
does, as in the AEC env: `"raise"` (the class's default) raises `IllegalActionError` and changes
nothing; `"penalize"` changes no game state either but ends the episode with reward -1 and
`info["illegal_action"]` True (the game is abandoned; the next `reset()` deals a new one).
`gymnasium.make(ENV_ID)` defaults to `"penalize"` (`make_env`), so that generic tools that step
unmasked random actions (Gymnasium's and SB3's `check_env`, plain PPO) work on the registered id.

A step when no episode is running (before the first `reset()`, after `terminated=True`, or after
an opponent's policy failed mid-step) raises `IllegalActionError` saying so, in every
`illegal_action` mode, and `action_masks()` is then the terminal placeholder (PASS only).

Rendering: `render_mode="ansi"` (text) or `"rgb_array"` (the table picture of
`cf_env.viz.render_image`, an H×W×3 uint8 array of a size fixed by the config, as video recorders
need), both from the learner's seat: only its own hand is shown. SB3's `make_vec_env` asks for
`"rgb_array"`.

Under `gymnasium.make`'s wrappers (gymnasium 1.x forwards no attributes), reach the masks with
`env.unwrapped.action_masks()` or `env.get_wrapper_attr("action_masks")()`; SB3's vector envs
and sb3-contrib's `get_action_masks` do the latter, so `MaskablePPO` works on
`make_vec_env(ENV_ID)` as is.

Skipping forced decisions (`learner_skip_forced=True`): when the learner has exactly one legal
action the adapter takes it, so every decision the learner is asked about is a real choice.
The opponents' turns are played by the arena (`cf_env.agents.arena`, as in `training.evaluate`):
their decisions with exactly one legal action are always taken without asking their policy (the
convention of `cf_env.agents.policies`), and an opponent's malformed or illegal action raises
`IllegalPolicyActionError` (an `IllegalActionError`) naming the policy, which halts the episode
as any failure of an opponent does.

Speed: a learner step carries about nine engine decisions (opponents' turns, forced draws and
passes), so the opponents' path dominates the adapter's cost. Forced decisions and the choices
of policies with the mask-only fast path (`act_bits`, e.g. `random`, `greedy`: given the
engine's legal bitset, no observation built) are all made inside one `Engine.advance` call;
other policies (the heuristic, frozen snapshots) get the full observation dict. The
learner's observation (and an observation-reading opponent's) is written by the compiled core
(`cf_env.core.observation.Encoder.observe`; the arena shares the encoder).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from cf_env.agents.arena import Arena
from cf_env.agents.policies import Policy, load_policy, validate_policy_spec
from cf_env.core.actions import IllegalActionError
from cf_env.core.config import ChickenFootConfig, split_options
from cf_env.core.engine import Engine
from cf_env.core.observation import OBSERVATION_VERSION, Encoder
from cf_env.core.rewards import game_rewards, round_rewards
from cf_env.envs.env import INFO_KEYS as AEC_INFO_KEYS

ENV_ID = "cf_env/ChickenFoot-v1"
EPISODES = ("round", "game")

# The info schema (module docstring): every info has exactly these keys, at reset and at every
# step, with these types: the AEC env's, for the learner's seat, between `learner_seat` and the
# mask (`action_mask`: a bool array of shape (2T+2,)).
INFO_KEYS: dict[str, type] = {"learner_seat": int, **AEC_INFO_KEYS, "action_mask": np.ndarray}

# Why `step` cannot run now (`ChickenFootSingleAgentEnv._halted`); None while an episode runs.
_NOT_STARTED = "no episode is running; call reset() first"
_FINISHED = "the episode is over (step returned terminated=True); call reset() to start the next"
_INTERRUPTED = "an opponent's turn failed during the last step; call reset()"


@runtime_checkable
class OpponentSampler(Protocol):
    """Draws the policies for the other seats of a new game (`num` of them) with `rng`."""

    def sample(self, rng: np.random.Generator, num: int) -> list[Policy]: ...


class SpecOpponents:
    """Each opponent seat draws uniformly (or by `weights`) from a list of policy specs/factories.

    Policies are built lazily, one per (seat slot, spec), and reused across games; their seeds come
    from the env's RNG. The env plays a fresh copy of this sampler after every `reset(seed=...)`
    (nothing built yet), so the same env seed replays the same opponents.
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
        for spec in self.specs:  # a bad spec fails when the env is made, not at its first reset
            if isinstance(spec, str):
                validate_policy_spec(spec, config)
            elif not callable(spec):
                raise ValueError(f"opponents: each entry is a policy spec or a factory "
                                 f"f(config=..., seed=...); got {spec!r}")
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

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}

    def __init__(
        self,
        config: ChickenFootConfig | dict | None = None,
        opponents: Sequence[str | Callable[..., Policy]] | OpponentSampler = ("random",),
        episode: str = "round",
        learner_skip_forced: bool = True,
        render_mode: str | None = None,
        **rules,
    ):
        # Every path goes through `split_options`, so that a mistyped keyword gets the AEC env's
        # "unknown config field" message; the keywords name rules and driver options alike.
        if config is None:
            config, options = split_options(rules)
        elif isinstance(config, dict):
            config, options = split_options({**config, **rules})
        elif not isinstance(config, ChickenFootConfig):
            raise ValueError(  # as every config error (cf_env.core.config): ValueError, even for types
                "config must be a ChickenFootConfig, a dict of its fields or None; "
                f"got {type(config).__name__}"
            )
        else:
            config, options = split_options(rules, config)
        if options.skip_forced:
            # The adapter decides which learner decisions to skip; engine-level skipping would
            # also take opponents' turns away from their policies.
            raise ValueError(
                "skip_forced must be False here; use learner_skip_forced=True instead"
            )
        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}; got {episode!r}")
        if episode == "round" and options.reward_mode == "win":
            raise ValueError(
                "reward_mode='win' pays only at the end of a game; use episode='game' with it"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}; "
                f"got {render_mode!r}"
            )
        self.config = config  # the rules
        self.options = options  # reward_mode, illegal_action (skip_forced is always False here)
        self.episode = episode
        self.learner_skip_forced = bool(learner_skip_forced)
        self.render_mode = render_mode
        self.observation_version = OBSERVATION_VERSION
        self.set_opponents(opponents)
        self.engine = Engine(config, seed=0)
        self.encoder = Encoder(config)
        # Each seat's observation kept up to date between its turns (the learner's every step;
        # observation-reading opponents', such as the heuristic or frozen snapshots, per choice).
        layout = self.encoder.layout
        self.observation_space = spaces.Box(0.0, layout.high, (layout.size,), np.float32)
        self.action_space = spaces.Discrete(config.num_actions)
        # The one legal action of the mask while no episode runs (module docstring): PASS, an
        # existing id, so the action space and codec stay as they are.
        self.terminal_action = config.pass_action
        self._rng = np.random.default_rng()
        self._need_new_game = True
        self._halted: str | None = _NOT_STARTED  # why step() cannot run now; None: it can
        self._step_round: list[int] | None = None  # the last round that ended in this step
        self.learner = 0
        self.seat_policies: list[Policy | None] = []
        self._arena: Arena | None = None  # plays the opponents' turns of the current game

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._halted = _NOT_STARTED  # until this reset has finished (a failing one leaves it)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            # Same seed, same games: restart the opponents from the source as it was given, so
            # that policies cached in earlier games are built (and seeded) again.
            self._sampler = self._copy_opponents(self.opponents)
            self._need_new_game = True
        while True:
            if self._need_new_game or self.engine.game_over:
                self._new_game()
            # A round can end before the learner has a real choice (only forced moves); such a
            # round holds no decision, so it is skipped and the next one starts the episode.
            _, ended = self._advance()
            if not ended:
                self._halted = None
                self._step_round = None  # rounds that ended in here are no part of the episode
                return self._observe(), self._info(ended=False)

    def step(self, action):
        if self._halted is not None:  # raises in every illegal_action mode
            raise IllegalActionError(f"step({action!r}) is not possible: {self._halted}")
        if type(action) is not int and isinstance(action, np.integer):
            # A numpy integer scalar (what SB3's vector envs pass) is an int by the rules; made one
            # here it takes the engine's fast path instead of its slower general check.
            action = int(action)
        self._step_round = None
        try:
            # The engine checks the action (a plain legal int is its fast path): an illegal or
            # malformed one raises IllegalActionError and changes nothing.
            reward, ended = self._play(action)
        except IllegalActionError:
            if self.options.illegal_action == "raise":
                raise
            # PettingZoo classic semantics, as the AEC env (a malformed action too): -1, the
            # episode ends and the game is abandoned.
            self._need_new_game = True
            self._halted = _FINISHED
            return self._observe(), -1.0, True, False, self._info(ended=False, illegal=True)
        if not ended:
            self._halted = _INTERRUPTED  # stays if an opponent's policy raises in there
            more, ended = self._advance()
            reward += more
        self._halted = _FINISHED if ended else None
        return self._observe(), float(reward), ended, False, self._info(ended)

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now (bool, a new array); never empty: while no episode is
        running (before the first reset, after the episode has ended) only `terminal_action`."""
        mask = np.zeros(self.config.num_actions, dtype=bool)
        if self._halted is None:
            for action in self.engine.legal_actions():  # a handful: cheaper than fancy indexing
                mask[action] = True
        else:
            # A placeholder that step() refuses and vector envs' autoreset never sends: a policy
            # sampling from an all-False mask gets NaN probabilities.
            mask[self.terminal_action] = True
        return mask

    def render(self):
        """The table from the learner's seat: text (`"ansi"`) or an H×W×3 uint8 picture
        (`"rgb_array"`); None without a render mode."""
        if self.render_mode == "ansi":
            from cf_env.viz.render import render_text

            return render_text(self.engine, viewer=self.learner)
        if self.render_mode == "rgb_array":
            from cf_env.viz.render_image import render_rgb  # Pillow is only needed for pictures

            return render_rgb(self.engine, viewer=self.learner)
        return None

    # ------------------------------------------------------------------ training hooks
    def set_opponents(self, opponents: Sequence[str | Callable[..., Policy]] | OpponentSampler):
        """Swap the opponent source (takes effect from the next game)."""
        if isinstance(opponents, OpponentSampler):
            source: OpponentSampler = opponents
        else:
            source = SpecOpponents(opponents, self.config)
        sampler = self._copy_opponents(source)  # fails here, before anything changes
        self.opponents, self._sampler = source, sampler

    def call_opponents(self, method: str, *args, **kwargs):
        """Call `method` on the opponent source and on the copy in play (VecEnv.env_method
        reaches them this way, e.g. `add_snapshot`); returns the result of the copy in play."""
        getattr(self.opponents, method)(*args, **kwargs)
        return getattr(self._sampler, method)(*args, **kwargs)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _copy_opponents(source: OpponentSampler) -> OpponentSampler:
        """The copy of the opponent source that games are played with (see the module docstring:
        it is made afresh at every seeded reset)."""
        try:
            return copy.deepcopy(source)
        except Exception as err:  # whatever the object's __deepcopy__/__reduce__ raises
            raise TypeError(
                f"opponents: {type(source).__name__} cannot be deep-copied ({err}); the env plays "
                "a copy restarted at every reset(seed=...) so that seeds replay the same games. "
                "Give the sampler __deepcopy__ (or __getstate__) that copies its configuration "
                "and drops built policies"
            ) from err

    def _new_game(self) -> None:
        n = self.config.num_players
        self.learner = int(self._rng.integers(n))
        others = self._sampler.sample(self._rng, n - 1)
        self.seat_policies = [None] * n
        for k, policy in enumerate(others):
            self.seat_policies[(self.learner + 1 + k) % n] = policy
        # The learner's seat has no policy: the arena stops when it has a real choice.
        self._arena = Arena(self.engine, self.seat_policies, encoder=self.encoder)
        self._arena.reset_policies()
        self._need_new_game = False
        # Rounds ending inside reset (no decision at all) are not the learner's to be paid for.
        self.engine.reset(int(self._rng.integers(2**63)))

    def _advance(self) -> tuple[float, bool]:
        """Play opponents (and the learner's forced moves) until the learner has a real choice.

        Returns the learner's reward collected meanwhile and whether the episode ended.
        """
        reward = 0.0
        # Forced decisions (most of them: draws, passes) are taken without asking anyone, as
        # training.evaluate does, the learner's too unless it wants to see them.
        stop_seat = -1 if self.learner_skip_forced else self.learner
        while True:
            finished = self._arena.play(stop_seat, round_end=True)
            if not finished:  # the learner has a choice (or the game is over)
                return reward, self.engine.game_over
            more, ended = self._rounds_ended(finished)  # a round ended (rare): pay the learner
            reward += more
            if ended:
                return reward, True

    def _play(self, action) -> tuple[float, bool]:
        """One engine step (the engine checks `action`); returns the learner's reward from it and
        whether the episode ended."""
        finished = self.engine.step(action)
        return self._rounds_ended(finished) if finished else (0.0, False)

    def _rounds_ended(self, finished: list[list[int]]) -> tuple[float, bool]:
        """The learner's reward for rounds that just ended (a game ends only with a round) and
        whether the episode ended."""
        cfg, seat, mode = self.config, self.learner, self.options.reward_mode
        reward = sum(round_rewards(cfg, mode, points)[seat] for points in finished)
        self._step_round = finished[-1]
        if self.engine.game_over:
            reward += game_rewards(cfg, mode, self.engine.winners)[seat]
            return float(reward), True
        return float(reward), self.episode == "round"

    def _observe(self) -> np.ndarray:
        return self.encoder.observe(self.engine, self.learner)

    def _info(self, ended: bool, illegal: bool = False) -> dict:
        """The step's info: the fixed schema of `INFO_KEYS` (plain Python numbers and the mask).
        `ended`: the episode ended by the rules on this step; `illegal`: it was penalised."""
        engine, seat, points = self.engine, self.learner, self._step_round
        return {
            "learner_seat": seat,
            "round": engine.round,
            "round_over": points is not None,
            "round_points": points[seat] if points is not None else 0,
            "game_total": sum(engine.scores[seat]),
            "game_over": engine.game_over,
            "win": self._win_share() if ended else 0.0,
            "illegal_action": illegal,
            "action_mask": self.action_masks(),
        }

    def _win_share(self) -> float:
        """The learner's share of the episode's win (ties split): of the round that ended the
        episode (lowest points) or of the game (R13)."""
        if self.episode == "round":
            points = self._step_round
            low = min(points)
            winners = [s for s, p in enumerate(points) if p == low]
        else:
            winners = self.engine.winners
        return (1.0 / len(winners)) if self.learner in winners else 0.0


# What `gymnasium.make(ENV_ID)` changes from the class's defaults (see `make_env`).
GYM_MAKE_DEFAULTS = {"illegal_action": "penalize"}


def make_env(config: ChickenFootConfig | dict | None = None, **kwargs) -> ChickenFootSingleAgentEnv:
    """Entry point for `gymnasium.make(ENV_ID, **kwargs)`: the class, except that illegal actions
    default to `"penalize"`, because generic Gymnasium tools (`check_env`, SB3's checker, plain
    PPO) step unmasked random actions. An explicit `illegal_action` (a keyword, a key of a
    `config` dict) is taken as given; with a `ChickenFootConfig` object (rules only) illegal
    actions raise, the class's default, unless the keyword says otherwise."""
    config, kwargs = with_make_defaults(config, kwargs)
    return ChickenFootSingleAgentEnv(config, **kwargs)


def with_make_defaults(config, kwargs: dict) -> tuple:
    """`(config, kwargs)` with `GYM_MAKE_DEFAULTS` filled in where the caller left them out (the
    rule of `make_env`, shared with the deprecated v0 entry point)."""
    if config is None:
        kwargs = {**GYM_MAKE_DEFAULTS, **kwargs}
    elif isinstance(config, dict):
        config = {**GYM_MAKE_DEFAULTS, **config}
    return config, kwargs
