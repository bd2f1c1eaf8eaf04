"""The learner's view, batched natively: a `gymnasium.vector.VectorEnv` of N games, one learner
seat per game, the other seats played by compiled bots (`cf_env.envs.batch.ChickenFootBatch`).

    import gymnasium as gym
    import cf_env  # registers the id, with this class as its vector entry point
    envs = gym.make_vec("cf_env/ChickenFoot-v1", num_envs=256, vectorization_mode="vector_entry_point",
                        opponents=["greedy", "heuristic"])
    obs, info = envs.reset(seed=0)
    actions = info["action_mask"].argmax(axis=1)  # any legal action per game
    obs, rewards, terminated, truncated, info = envs.step(actions)

It mirrors `cf_env/ChickenFoot-v1` (cf_env/envs/single_agent.py) where it can: per game the
learner's seat is drawn uniformly, then each opponent seat's bot from `opponents` (uniformly, or
by `weights`), from that game's own seeder at the start of every game; the same episodes
(`episode="round"`, the default, or `"game"`), rewards (`reward_mode`) and forced decisions
(`learner_skip_forced=True` takes the learner's one-action decisions for it; bots always take
theirs); the observation is the learner's `Box(float32, (D,))`, the action `Discrete(2T + 2)`.
Unlike it: opponents are the compiled bots only ("random", "greedy", "heuristic"; their ties are
broken by their own stream, see cf_env/agents/kernel_bots.py), and an illegal action always
raises `IllegalActionError` naming the game (no game changed; there is no "penalize").

Autoreset: `AutoresetMode.SAME_STEP` (`metadata["autoreset_mode"]`), with its contract's final
observations: a sub-env whose episode ends returns `terminated=True`, the episode's last reward,
and already the next episode's first observation and mask (the next round of the same game, or the
game's next deal), and the info holds what the ended episode's last step gave, as Gymnasium's own
SAME_STEP vector envs put it: `final_obs` (an object array of N, row i the learner's observation of
the position the episode ended in, before the next deal, where `_final_obs[i]`; None elsewhere) and
`final_info` (a dict of arrays of N: `learner_seat`, `round_over`, `game_over` and `action_mask`,
the terminal mask, PASS alone as in the single-agent env; each with its `_key` twin), present, as
there, on the steps where some sub-env's episode ended. SAME_STEP rather than NEXT_STEP because
every step is then a real decision: a CleanRL- or SB3-style rollout stores (observation, mask,
action, reward, done) per step with no dead step to mask out, and SB3's `terminal_observation` is
`final_obs`. The env never truncates (`truncated` is always False), so a learner bootstraps only
where its own rollout is cut, from the observation returned; `final_obs` is there for the
contract and for learners that read it on any episode end. Gymnasium's wrappers that read the
mode work with it (`RecordEpisodeStatistics`, `NormalizeReward`: tests/envs/test_batch_safety.py);
Gymnasium 1.4's observation wrappers (`DtypeObservation` and the other
`VectorObservationWrapper`s, `NormalizeObservation`) accept NEXT_STEP only: with those, use `vectorization_mode="sync"`
(the single-agent env in Gymnasium's NEXT_STEP vector env).

Seeding: `reset(seed=s)` seeds every sub-env's seeder as `ChickenFootBatch.reset(seed=s)` does (an
int, or one non-negative int per sub-env); same seed, same games. `reset(options={"reset_mask":
mask})` (a bool numpy array of N, at least one True) resets only the masked sub-envs, each with the
seed a full reset would give it; the others carry on. Any other option is refused (`ValueError`),
as are bad seeds, with nothing changed.

Sizes: `num_envs` is bounded as `ChickenFootBatch`'s (`cf_env.envs.batch.max_num_envs`); `weights`
(one per opponent) must be finite, non-negative and not all zero, and are normalised (by their
largest, then their sum) before the cumulative sum that draws from them.

Masks: `action_masks()` returns the (N, 2T + 2) bool masks of the learner's legal actions (never
empty: the learner always has a decision to make), and every info holds them as
`info["action_mask"]`. Infos are arrays of N, each with its Gymnasium `_key` twin (all True):

| key | dtype | value |
|---|---|---|
| `action_mask` | bool (N, 2T+2) | the learner's legal actions for the observation returned |
| `learner_seat` | int32 | the learner's seat in the game now being played |
| `round_over` | bool | a round ended during this step (R11) |
| `game_over` | bool | a game ended during this step (R4 / target_score) |

With `copy=True` (the default, as Gymnasium's vector envs) the observation, the rewards, the flags
and the infos are new arrays at every call; with `copy=False` they are the batch's buffers,
overwritten by the next call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from cf_env.agents.kernel_bots import BOT_KINDS, OUTSIDE
from cf_env.core.observation import OBSERVATION_VERSION, observation_layout
from cf_env.envs.batch import ChickenFootBatch


class ChickenFootVectorEnv(VectorEnv):
    """N learner-vs-bots games; see the module docstring for the contract."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 1,
        config=None,
        opponents: Sequence[str] = ("random",),
        weights: Sequence[float] | None = None,
        episode: str = "round",
        learner_skip_forced: bool = True,
        reward_mode: str = "zero_sum",
        copy: bool = True,
        **rules,
    ):
        if isinstance(opponents, str) or not opponents or not all(o in BOT_KINDS for o in opponents):
            raise ValueError(f"opponents must be a non-empty list of {sorted(BOT_KINDS)} (the "
                             f"compiled bots); got {opponents!r}")
        self._cdf = _opponent_cdf(weights, len(opponents))
        self._codes = np.array([BOT_KINDS[o] for o in opponents], np.int8)
        self.opponents = list(opponents)
        self.batch = ChickenFootBatch(config, num_envs, bots=self._seats, reward_mode=reward_mode,
                                      episode=episode, skip_forced=bool(learner_skip_forced),
                                      final_observation=True, **rules)
        cfg = self.config = self.batch.config
        self.num_envs = self.batch.num_envs
        self.episode, self.copy = episode, bool(copy)
        self.observation_version = OBSERVATION_VERSION
        layout = observation_layout(cfg)
        self.single_observation_space = spaces.Box(0.0, layout.high, (layout.size,), np.float32)
        self.single_action_space = spaces.Discrete(cfg.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        self._seat = np.zeros(self.num_envs, np.int32)  # the learner's seat in each running game
        self._all = np.ones(self.num_envs, bool)
        self._out = None

    def _seats(self, rng: np.random.Generator) -> np.ndarray:
        """A new game's seat kinds, drawn from its seeder: the learner's seat, then each opponent's
        bot (the order of the single-agent env's draws)."""
        n = self.config.num_players
        learner = int(rng.integers(n))
        chosen = self._cdf.searchsorted(rng.random(n - 1), side="right")
        kinds = np.empty(n, np.int8)
        kinds[learner] = OUTSIDE
        kinds[(learner + 1 + np.arange(n - 1)) % n] = self._codes[chosen]
        return kinds

    # Its seat sets are valid by construction (one outside seat, checked bot codes): the batch
    # need not play its games' openings ahead to draw safely (cf_env/envs/batch.py).
    _seats.always_valid = True

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        """Deal every sub-env (or the `reset_mask` ones) a new episode (module docstring)."""
        out = self._out = self.batch.reset(seed=seed, options=options)  # checks, then changes
        np.copyto(self._seat, out.current_player)
        return self._give(out.observation), self._info(out)

    def step(self, actions):
        if self._out is None:
            raise RuntimeError("call reset() before step()")
        seat = self._seat.copy()  # the learner's seat in the games the actions are for
        out = self._out = self.batch.step(actions)  # checks, then changes (no game on refusal)
        reward = out.rewards[np.arange(self.num_envs), seat]  # a new array: fancy indexing
        np.copyto(self._seat, out.current_player)
        info = self._info(out)
        if out.terminated.any():
            self._add_final(info, out, seat)
        return (self._give(out.observation), reward, self._give(out.terminated),
                self._give(out.truncated), info)

    def action_masks(self) -> np.ndarray:
        """(N, 2T + 2) bool: the learner's legal actions in each game (a new array)."""
        if self._out is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._out.action_mask.copy()

    def _give(self, array: np.ndarray) -> np.ndarray:
        return array.copy() if self.copy else array

    def _add_final(self, info: dict, out, seat: np.ndarray) -> None:
        """SAME_STEP's `final_obs` and `final_info` for the sub-envs whose episode ended (module
        docstring), laid out as Gymnasium's `VectorEnv._add_info` lays them out."""
        ended = out.terminated.copy()
        final_obs = np.empty(self.num_envs, dtype=object)  # None where no episode ended
        observations = self.batch.final_observation
        for i in np.flatnonzero(ended).tolist():
            final_obs[i] = observations[i].copy()
        mask = np.zeros((self.num_envs, self.config.num_actions), bool)
        mask[:, self.config.pass_action] = ended  # the terminal placeholder, as the single-agent env
        final_info = {"learner_seat": seat * ended, "round_over": out.round_over & ended,
                      "game_over": out.game_over & ended, "action_mask": mask}
        for key in list(final_info):
            final_info[f"_{key}"] = ended.copy()
        info.update(final_obs=final_obs, _final_obs=ended.copy(), final_info=final_info,
                    _final_info=ended.copy())

    def _info(self, out) -> dict:
        info = {"action_mask": self._give(out.action_mask), "learner_seat": self._seat.copy(),
                "round_over": self._give(out.round_over), "game_over": self._give(out.game_over)}
        for key in list(info):
            info[f"_{key}"] = self._all.copy()
        return info


def _opponent_cdf(weights, count: int) -> np.ndarray:
    """The cumulative distribution `_seats` draws opponents from: uniform without weights; else
    `count` finite, non-negative weights, not all zero, scaled by their largest then their sum
    (so that neither 1e308s nor subnormals overflow or vanish), ending at exactly 1."""
    problem = (f"opponent weights must be {count} non-negative numbers, finite and not all zero "
               f"(one per opponent); got {weights!r}")
    if weights is None:
        probs = np.ones(count)
    else:
        if isinstance(weights, (str, bytes)):
            raise ValueError(problem)
        try:
            probs = np.asarray(weights, np.float64)
        except (TypeError, ValueError):
            raise ValueError(problem) from None
        if (probs.shape != (count,) or not np.isfinite(probs).all() or (probs < 0).any()
                or not probs.any()):
            raise ValueError(problem)
        probs = probs / probs.max()
    cdf = (probs / probs.sum()).cumsum()
    cdf[-1] = 1.0  # exactly 1 at the end: searchsorted never runs past it
    return cdf


def make_vector_env(num_envs: int = 1, config=None, **kwargs) -> ChickenFootVectorEnv:
    """Vector entry point of `cf_env/ChickenFoot-v1`:
    `gymnasium.make_vec(ENV_ID, num_envs=N, vectorization_mode="vector_entry_point", ...)`."""
    return ChickenFootVectorEnv(num_envs, config, **kwargs)
