"""`ChickenFootBatch`: N Chicken Foot games stepped together, every seat playable from outside,
bot seats played in compiled code between the outside decisions (pgx / PufferLib style).

    import numpy as np
    from cf_env.envs.batch import ChickenFootBatch

    games = ChickenFootBatch(num_envs=1024, bots={1: "greedy", 3: "heuristic"})
    out = games.reset(seed=0)             # seats 0 and 2 are played from outside
    rng = np.random.default_rng(0)
    returns = np.zeros((1024, games.num_players))
    for _ in range(1000):
        # one masked random action per game, for its seat to move (out.current_player)
        actions = (rng.random(out.action_mask.shape) * out.action_mask).argmax(axis=1)
        out = games.step(actions)         # out.observation: (1024, D) float32
        returns += out.rewards            # (1024, P): every seat's reward of this step
    print(out.terminated.sum(), returns.mean(axis=0))

This module owns the adapter only: the rules are the compiled core's (`cf_env.core.kernel`,
R1-R13: game i seeded s plays exactly `Engine(config, seed=s)`), the bots and the loop that plays
them are `cf_env.agents.kernel_bots` (`batch_advance`), the rewards are `cf_env.core.rewards`'s
(its batch forms; the differential of tests/envs/test_batch.py checks them against the AEC env).

Outputs (`BatchOutput`, from `reset` and `step`): preallocated arrays, returned as views that the
next call overwrites (copy what you keep); none of them is the games' state, so writing into
them changes no game.

==================  ===========  ========  ================================================
field               shape        dtype     value
==================  ===========  ========  ================================================
current_player      (N,)         int32     the seat to move (an outside seat); -1 once over
observation         (N, D)       float32   its observation (`Encoder.observe`); zeros once over
action_mask         (N, A)       bool      its legal actions (R6-R9); all False once over
rewards             (N, P)       float32   every seat's reward from what this step ended
terminated          (N,)         bool      the episode ended in this step (below)
truncated           (N,)         bool      always False (no step limit)
round_over          (N,)         bool      a round ended in this step (R11) and was paid
game_over           (N,)         bool      the game ended in this step (R4 / target_score)
privileged          (N, Dp)      float32   `Encoder.privileged` for the seat to move, with
                                           `privileged=True`; else None
==================  ===========  ========  ================================================

"Once over" applies with `auto_reset=False` only: a finished game then stays finished, its
action is ignored, until `reset`. With `auto_reset=True` (the default) a game that ends is dealt
its next game in the same step (the next seed of its stream, below), and the step returns that
new game's first decision (observation, mask, current player) beside the finished game's
rewards and `terminated=True` (pgx's convention, Gymnasium's SAME_STEP autoreset).

Episodes: `episode="game"` (default) ends an episode with the game; `episode="round"` with every
round (R4; the game carries on into the next round, as in the single-agent env), and the game's
end is a round end too. Rewards (`reward_mode`, cf_env/core/rewards.py): "zero_sum" (default)
and "score" pay every seat at each round end (R12), "win" at the game's end (R13; "game" episodes
only). All rewards of the step up to the episode's end are paid; what ends after it before an
outside seat's first decision of the next episode (a round of forced moves and bots only) is part
of no episode and is not paid, as the single-agent env skips such rounds in `reset`.

Seats: `bots` maps seats to bot kinds ("random", "greedy", "heuristic": the compiled twins of
cf_env/agents/bots.py); the other seats are outside seats, whose decisions `step` takes. `bots`
may also be an (N, P) array of kind codes (`cf_env.agents.kernel_bots`: OUTSIDE=0, RANDOM,
GREEDY, HEURISTIC), or a callable `bots(rng) -> P kind names or codes` that draws a game's seats
from that game's seeder at the start of every game (the vector env draws its learner's seat that
way). With `skip_forced=True` an outside seat's decision with exactly one legal action is taken
for it (bots always take those without deciding).

Seeding ("same seed, same games"): every game has its own seeder, a `numpy.random.Generator`,
as one AEC env (`cf_env.raw_env`) has: game i's engine seed is `seeder_i.integers(2**63)`
(`game_seeds[i]`), drawn afresh for each of its games, so that game i with seeder seed s plays the
games that an AEC env reset with `reset(seed=s)` and then `reset()` plays, one per auto-reset.
`reset(seed=s)` with an int s gives game i the seeder seed
`int(np.random.SeedSequence(s).generate_state(N, np.uint64)[i])` (a prefix of the games does not
depend on N); `reset(seed=[s_0, ..., s_{N-1}])` gives them as listed; `reset()` without a seed
starts each game's next game from its seeder (fresh entropy before the first seeded reset). A
callable `bots` draws from the seeder before the engine seed. The bots' ties are
broken by a splitmix64 stream per game seeded with the game's engine seed.

Bad input: `step` raises `ValueError` for actions that are not an integer array of shape (N,),
and `IllegalActionError` naming the first game whose action is not legal, its action and its
legal ones; either way no game has changed (`KernelBatch.step` checks the whole batch before any
game moves, and nothing else runs before it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from cf_env.agents.kernel_bots import (
    BOT_KINDS,
    OUTSIDE,
    ROUND_ENDED,
    batch_advance,
    bot_scratch,
    heuristic_weights,
)
from cf_env.core.config import OPTION_FIELDS, REWARD_MODES, ChickenFootConfig, split_options
from cf_env.core.kernel import KernelBatch
from cf_env.core.rewards import game_rewards_batch, round_rewards_batch

EPISODES = ("game", "round")
KIND_NAMES = {"outside": OUTSIDE, **BOT_KINDS}


class BatchOutput(NamedTuple):
    """What `reset` and `step` return (module docstring): views of the batch's output buffers."""

    current_player: np.ndarray
    observation: np.ndarray
    action_mask: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    round_over: np.ndarray
    game_over: np.ndarray
    privileged: np.ndarray | None


def _rules(config, rules: dict) -> ChickenFootConfig:
    """The rules from a config object, a dict of its fields or None, plus rule keywords (driver
    options are this class's own keywords)."""
    if isinstance(config, ChickenFootConfig):
        fields, base = dict(rules), config
    elif config is None or isinstance(config, Mapping):
        fields, base = {**(config or {}), **rules}, None
    else:
        raise ValueError("config must be a ChickenFootConfig, a dict of its fields or None; got "
                         f"{type(config).__name__}")
    options = sorted(set(fields) & set(OPTION_FIELDS))
    if options:
        raise ValueError(f"{options} are not rules: give reward_mode and skip_forced as keywords "
                         "of ChickenFootBatch (illegal actions always raise here)")
    return split_options(fields, base)[0]


def _kind_code(kind) -> int:
    if isinstance(kind, str):
        if kind not in KIND_NAMES:
            raise ValueError(f"bot kind must be one of {sorted(KIND_NAMES)}; got {kind!r}")
        return KIND_NAMES[kind]
    code = int(kind)
    if code not in KIND_NAMES.values() or isinstance(kind, bool):
        raise ValueError(f"bot kind code must be one of {sorted(KIND_NAMES.values())}; got {kind!r}")
    return code


class ChickenFootBatch:
    """N games of one config; see the module docstring for the contract."""

    def __init__(
        self,
        config: ChickenFootConfig | dict | None = None,
        num_envs: int | None = None,
        *,
        bots: Mapping[int, str] | np.ndarray | Callable | None = None,
        reward_mode: str = "zero_sum",
        episode: str = "game",
        skip_forced: bool = False,
        privileged: bool = False,
        auto_reset: bool = True,
        **rules,
    ):
        self.config = cfg = _rules(config, rules)
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int; got {num_envs!r}")
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}; got {reward_mode!r}")
        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}; got {episode!r}")
        if episode == "round" and reward_mode == "win":
            raise ValueError("reward_mode='win' pays only at the end of a game; use episode='game' with it")
        for name, flag in (("skip_forced", skip_forced), ("privileged", privileged),
                           ("auto_reset", auto_reset)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be a bool; got {flag!r}")
        n, players = int(num_envs), cfg.num_players
        self.num_envs, self.num_players, self.num_actions = n, players, cfg.num_actions
        self.reward_mode, self.episode = reward_mode, episode
        self.skip_forced, self.auto_reset = skip_forced, auto_reset
        self._kb = KernelBatch(cfg, n)
        self.observation_size = self._kb.obs_tables.size
        self.privileged_size = self._kb.priv_tables.size
        self._seat_kind = np.zeros((n, players), np.int8)
        self._seat_sampler: Callable | None = None
        self._set_bots(bots)
        self._bot_rng = np.zeros(n, np.uint64)
        self._weights = heuristic_weights()
        self._scores, self._counts = bot_scratch(cfg)
        self._legal = np.zeros_like(self._kb.legal_words)
        self._stop = np.zeros(n, np.int8)
        self._acc = np.zeros((n, players), np.float64)  # the step's rewards, summed as the AEC env sums
        self._closed = np.zeros(n, bool)  # the episode ended earlier in this step: pay nothing more
        self._seeders: list[np.random.Generator] = [np.random.default_rng() for _ in range(n)]
        self.game_seeds = np.zeros(n, np.int64)  # each game's engine seed (module docstring)
        self._out = BatchOutput(
            current_player=np.zeros(n, np.int32),
            observation=self._kb.observations,  # an output buffer of the kernel, not its state
            action_mask=np.zeros((n, cfg.num_actions), bool),
            rewards=np.zeros((n, players), np.float32),
            terminated=np.zeros(n, bool),
            truncated=np.zeros(n, bool),
            round_over=np.zeros(n, bool),
            game_over=np.zeros(n, bool),
            privileged=self._kb.privileged_rows if privileged else None,
        )
        self._started = False

    def _set_bots(self, bots) -> None:
        n, players = self._seat_kind.shape
        if bots is None:
            return
        if callable(bots):
            self._seat_sampler = bots
        elif isinstance(bots, Mapping):
            for seat, kind in bots.items():
                if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < players:
                    raise ValueError(f"bots: seat must be an int in 0..{players - 1}; got {seat!r}")
                self._seat_kind[:, seat] = _kind_code(kind)
        else:
            kinds = np.asarray(bots)
            if kinds.shape != (n, players) or kinds.dtype.kind not in "iu":
                raise ValueError(f"bots must be a dict seat -> kind, a callable, or an integer array "
                                 f"of shape ({n}, {players}); got {kinds.dtype} {kinds.shape}")
            if not np.isin(kinds, list(KIND_NAMES.values())).all():
                raise ValueError(f"bots: kind codes must be in {sorted(KIND_NAMES.values())}")
            self._seat_kind[:] = kinds
        self._check_outside(np.arange(n))

    def _check_outside(self, games: np.ndarray) -> None:
        lacking = games[(self._seat_kind[games] != OUTSIDE).all(axis=1)]
        if lacking.size:
            raise ValueError(f"bots: game {int(lacking[0])} has no outside seat; at least one seat "
                             "per game must be played from outside")

    @property
    def seat_kinds(self) -> np.ndarray:
        """(N, P) int8 copy of each game's seat kinds (OUTSIDE=0 or a bot code)."""
        return self._seat_kind.copy()

    @property
    def legal_words(self) -> np.ndarray:
        """(N, W) uint64: the legal bitsets behind `action_mask` (bit a of row i: action a is
        legal; W = ceil(A / 64)), for compiled samplers (`cf_env.core.kernel.batch_random_actions`).
        A buffer the next call overwrites, not the games' state."""
        return self._legal

    @property
    def kernel(self) -> KernelBatch:
        """The compiled core's batch under this adapter (its `state` is the games' state: read
        it, never write it)."""
        return self._kb

    @property
    def bot_rng(self) -> np.ndarray:
        """(N,) uint64 copy of each game's bot tie-break stream state."""
        return self._bot_rng.copy()

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays: the games' state, the kernel's tables, buffers and queued
        shuffles, and this adapter's buffers (the per-game Generators are Python objects beside:
        about 1 KiB each, measured with tracemalloc in tests/envs/test_batch.py)."""
        arrays = [self._seat_kind, self._bot_rng, self._weights, self._scores, self._counts,
                  self._legal, self._stop, self._acc, self._closed, self.game_seeds]
        arrays += [a for name, a in self._out._asdict().items()
                   if a is not None and name not in ("observation", "privileged")]
        return self._kb.nbytes + int(sum(a.nbytes for a in arrays))

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | Sequence[int] | None = None) -> BatchOutput:
        """Deal every game a new game (module docstring: Seeding); returns its first outside
        decision, with zero rewards."""
        n = self.num_envs
        if seed is not None:
            if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
                seeds = np.random.SeedSequence(int(seed)).generate_state(n, np.uint64).tolist()
            else:
                seeds = list(seed)
                if len(seeds) != n or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                              for s in seeds):
                    raise ValueError(f"seed must be None, an int or {n} ints; got {seed!r}")
            self._seeders = [np.random.default_rng(int(s)) for s in seeds]
        self._begin_step()
        self._closed[:] = True  # rounds ending before the first outside decision belong to no episode
        self._new_games(np.arange(n))
        self._advance()
        self._started = True
        return self._output()

    def step(self, actions) -> BatchOutput:
        """One action per game for its seat to move (`current_player`); bots and forced moves run
        until every game's next outside decision. See the module docstring for bad input."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        self._kb.step(actions)  # checks every game before any moves (ValueError / IllegalActionError)
        self._begin_step()
        st = self._kb.state
        ended = np.flatnonzero(st.round_ended)
        if ended.size:
            self._pay(ended)
        self._advance()
        return self._output()

    # ------------------------------------------------------------------ internals
    def _begin_step(self) -> None:
        out = self._out
        self._acc.fill(0.0)
        self._closed.fill(False)
        for flags in (out.terminated, out.truncated, out.round_over, out.game_over):
            flags.fill(False)

    def _new_games(self, games: np.ndarray) -> None:
        """Deal each of `games` its next game from its seeder (module docstring: Seeding)."""
        seeds = []
        for game in games.tolist():
            rng = self._seeders[game]
            if self._seat_sampler is not None:
                kinds = list(self._seat_sampler(rng))
                if len(kinds) != self.num_players:
                    raise ValueError(f"bots(rng) must give {self.num_players} kinds; got {kinds!r}")
                self._seat_kind[game] = [_kind_code(k) for k in kinds]
            seeds.append(int(rng.integers(2**63)))
        if self._seat_sampler is not None:
            self._check_outside(games)
        self.game_seeds[games] = seeds
        self._bot_rng[games] = np.array(seeds, np.uint64)
        self._kb.reset(seeds, games)

    def _advance(self) -> None:
        """Bots and forced decisions until every game waits on an outside seat (or is over),
        paying each round that ends on the way (the kernel's next shuffle handed in first)."""
        kb = self._kb
        while True:
            batch_advance(kb.state, kb.tables, self._weights, self._seat_kind, self._bot_rng,
                          self.skip_forced, self._legal, self._stop, self._scores, self._counts)
            ended = np.flatnonzero(self._stop == ROUND_ENDED)
            if not ended.size:
                return
            kb.refill()
            self._pay(ended)

    def _pay(self, games: np.ndarray) -> None:
        """Rewards and flags of the rounds just ended in `games` (R12; R13 at a game's end), then
        a new game for those whose game ended, with auto_reset."""
        st, out = self._kb.state, self._out
        reward = round_rewards_batch(self.config, self.reward_mode, st.round_points[games])
        over = st.game_over[games]
        reward[over] += game_rewards_batch(self.reward_mode, st.winners[games[over]])
        paid = ~self._closed[games]
        live = games[paid]
        self._acc[live] += reward[paid]
        out.round_over[live] = True
        out.game_over[live] |= over[paid]
        ends = paid if self.episode == "round" else paid & over
        out.terminated[games[ends]] = True
        self._closed[games[ends]] = True
        finished = games[over]
        if finished.size and self.auto_reset:
            self._new_games(finished)

    def _output(self) -> BatchOutput:
        kb, out = self._kb, self._out
        st = kb.state
        np.copyto(out.current_player, st.current)
        over = st.game_over
        if over.any():  # only without auto_reset: batch_advance leaves those rows unwritten
            out.current_player[over] = -1
            self._legal[over] = 0
        kb.observe()
        if out.privileged is not None:
            kb.privileged()
        raw = self._legal.view(np.uint8)  # little-endian words: bit a of byte a // 8
        bits = np.unpackbits(raw, axis=1, count=self.num_actions, bitorder="little")
        np.copyto(out.action_mask, bits.view(bool))
        np.copyto(out.rewards, self._acc, casting="same_kind")
        return out
