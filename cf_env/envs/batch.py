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

Final observations (`final_observation=True`): `final_observation` is an (N, D) float32 buffer
whose row i, where the step returned `terminated[i]`, is the observation of the position the
episode ended in, for the seat that made the step's decision (`current_player` before the step;
in the vector env, the learner): the table and hands as the last move left them, before the next
round or game is dealt (`Encoder.observe` of an `Engine` with `auto_deal=False`, a finished game
included: its last position, with no playable value). Other rows are stale. Gymnasium's SAME_STEP contract
puts it in the infos as `final_obs`; the vector env does. To take it, the adapter runs the kernel
with tables that stop at a round's end (`kernel_tables(config, deal_at_end=False)`) and deals the
next round itself from the same queued shuffle: the games are the same either way (the
differential of tests/envs/test_batch.py).

Episodes: `episode="game"` (default) ends an episode with the game; `episode="round"` with every
round (R4; the game carries on into the next round, as in the single-agent env), and the game's
end is a round end too. Rewards (`reward_mode`, cf_env/core/rewards.py): "zero_sum" (default)
and "score" pay every seat at each round end (R12), "win" at the game's end (R13; "game" episodes
only). All rewards of the step up to the episode's end are paid; what ends after it before an
outside seat's first decision of the next episode (a round of forced moves and bots only) is part
of no episode and is not paid, as the single-agent env skips such rounds in `reset`.
`win_bonus=b` (default 0; self-play's `selfplay.win_bonus`) adds to every paid round the zero-sum
bonus of `cf_env.core.rewards.win_bonus` (b shared by the round's winners, minus b / P for every
seat); `round_wins` gives each seat's share of the wins of the rounds a call paid.

Seats: `bots` maps seats to bot kinds ("random", "greedy", "heuristic": the compiled twins of
cf_env/agents/bots.py); the other seats are outside seats, whose decisions `step` takes. `bots`
may also be an (N, P) array of kind codes (`cf_env.agents.kernel_bots`: OUTSIDE=0, RANDOM,
GREEDY, HEURISTIC), or a callable `bots(rng) -> P kind names or codes` that draws a game's seats
from that game's seeder for every game (ahead of it: see Bad input; the vector env draws its
learner's seat that way). With `skip_forced=True` an outside seat's decision with exactly one legal action is taken
for it (bots always take those without deciding). Several outside seats per game are allowed
(self-play: `training.selfplay.collector`); `step` takes the decision of whichever is to move.

Policy seats: a callable `bots` may also give, for a seat, a *policy*: any object with a method
`choose(observation, action_mask) -> actions` ((k, D) float32 and (k, A) bool in, k integer
actions out), e.g. a frozen network (`cf_env.agents.checkpoint.NumpyPolicy` behind an adapter
such as the collector's). A policy seat is played inside `reset`/`step` like a bot seat, between
the outside decisions: at each turn of the loop every policy is asked once, for all the games
whose seat to move it holds with a real choice (forced decisions are taken for it, as for bots),
so one forward pass serves them all. The seats `step` plays are then the outside seats no policy
holds (`learner_seats`); at least one per game. A policy is outside code run while the games
move, so it is the exception to all-or-nothing below: a policy that raises, or gives an illegal
action (`IllegalActionError` naming the game) or a wrong shape (`ValueError`), leaves games
half-moved; the error propagates and the batch refuses `step` (`RuntimeError`) until a full
`reset()`. Rewards and flags cover policy moves as bot moves; the final observation stays the
view of the seat that made the step's decision. For the look-ahead of seat draws (Bad input), a
policy seat's decision counts as an outside decision.

Seeding ("same seed, same games"): every game has its own seeder, a `numpy.random.Generator`,
as one AEC env (`cf_env.raw_env`) has: game i's engine seed is `seeder_i.integers(2**63)`
(`game_seeds[i]`), drawn afresh for each of its games, so that game i with seeder seed s plays the
games that an AEC env reset with `reset(seed=s)` and then `reset()` plays, one per auto-reset.
`reset(seed=s)` with an int s gives game i the seeder seed
`int(np.random.SeedSequence(s).generate_state(N, np.uint64)[i])` (a prefix of the games does not
depend on N); `reset(seed=[s_0, ..., s_{N-1}])` gives them as listed; `reset()` without a seed
starts each game's next game from its seeder (fresh entropy before the first seeded reset). Seeds
are non-negative ints (Python or numpy integers; not bools, floats or strings). A
callable `bots` draws from the seeder before the engine seed. The bots' ties are
broken by a splitmix64 stream per game seeded with the game's engine seed.

`reset(seed=..., options={"reset_mask": mask})` (Gymnasium's partial reset): `mask` is a bool
numpy array of shape (N,) with at least one True; only those games are dealt a new game, each
with the seed a full reset would give it (an int s: its `SeedSequence` entry; a list: its own
entry; None: its seeder's next game), the others keep their game, their seeders and their
decision (returned again, with zero rewards and flags). Any other option key is refused.

Size: `num_envs` is at most `max_num_envs(config)`: `MAX_BATCH_BYTES` (4 GiB) over the bytes
one game holds (`per_game_bytes(config)`: its arrays, from the batch's own `nbytes`, plus
`PYTHON_BYTES_PER_GAME` for its two `numpy.random.Generator`s, about 870 bytes each by
tracemalloc), counted with final observations and privileged rows so as to bound every
option. The default config (double-nine, 4 players) holds 9,745 bytes a game (7,697 in arrays):
at most 440,735 games; double-six 6,338 (677,653 games); double-twelve 14,322 (299,886);
double-eighteen 27,366 (156,945). The check runs before anything is allocated for the games.

Bad input, all-or-nothing: `step` raises `ValueError` for actions that are not an integer array of
shape (N,), and `IllegalActionError` naming the first game whose action is not legal, its action
and its legal ones; `reset` raises `ValueError` for a bad seed or option. Either way no game, no
seeder and no field of the adapter has changed. Policy seats aside (above), a callable `bots` is
the only outside code a call runs, and it runs before anything changes: each game keeps a queue
of its next games drawn ahead from its seeder (seats and engine seed, in the order of the stream
above), long enough to reach a game in which an outside seat decides (a drawn game's opening, which its seats and seed decide, is
played ahead on a scratch game of one to know whether it ends first: common on tiny configs, e.g.
one round of two-tile hands). `reset` fills the queues (the game it deals, then up to the next
call's), `step` tops up those its last call used, before the kernel moves; a draw that raises or
gives an invalid seat set (a wrong length, an unknown kind, no outside seat) refuses the call with
the seeders restored. So the sampler is called ahead of the games it seats, and a call never
draws once the games move. (A sampler with the attribute `always_valid = True`, the vector env's,
which cannot give a bad seat set, is trusted: its games are not played ahead, as its draws cannot
fail.) More than `MAX_CHAIN` (1000) games in a row that end before any
outside decision are refused (`ValueError`): no call could reach one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from cf_env.agents.kernel_bots import (
    BOT_KINDS,
    OUTSIDE,
    ROUND_ENDED,
    WAITING,
    batch_advance,
    bot_scratch,
    heuristic_weights,
)
from cf_env.core.checks import MAX_BATCH_BYTES
from cf_env.core.config import OPTION_FIELDS, REWARD_MODES, ChickenFootConfig, split_options
from cf_env.core.kernel import (
    O_PLAYABLE,
    KernelBatch,
    KernelState,
    batch_observe,
    jit,
    kernel_tables,
    next_round,
)
from cf_env.core.raw import raw
from cf_env.core.rewards import game_rewards_batch, round_rewards_batch

EPISODES = ("game", "round")
KIND_NAMES = {"outside": OUTSIDE, **BOT_KINDS}
RESET_OPTIONS = ("reset_mask",)
MAX_CHAIN = 1000  # games in a row that end before an outside decision: refused beyond
# Final observations: observe all N games when N <= a + b * (games ended), else copy out the
# ended games' rows first. Copying a game's rows (one fancy index per state array) costs about
# ten times observing a game in compiled code, and the copy has a larger fixed cost: hence the
# bounds (docs/speed/kernel.md, "Final observations").
FULL_OBSERVE = [128, 8]

# Sizes (module docstring: Size). A game's arrays are measured on the batch itself (per_game_bytes);
# its Python objects are two Generators, the seeder and the kernel's shuffle stream (~870 bytes
# each by tracemalloc, rounded up).
PYTHON_BYTES_PER_GAME = 2048


@functools.lru_cache(maxsize=64)
def per_game_bytes(config: ChickenFootConfig) -> int:
    """Bytes one game of `config` holds in a `ChickenFootBatch` (with final observations and
    privileged rows): the growth of `nbytes` from one game to two, plus PYTHON_BYTES_PER_GAME."""
    one = ChickenFootBatch(config, 1, final_observation=True, privileged=True)
    two = ChickenFootBatch(config, 2, final_observation=True, privileged=True)
    return two.nbytes - one.nbytes + PYTHON_BYTES_PER_GAME


def max_num_envs(config: ChickenFootConfig) -> int:
    """The most games one `ChickenFootBatch` of `config` takes: MAX_BATCH_BYTES // per game."""
    return MAX_BATCH_BYTES // per_game_bytes(config)


@jit
def _deal_next_rounds(st, tb, games, perms):
    """R4 for games whose round ended (not their game) under tables without `deal_at_end`: the
    next round dealt from perms[j] for games[j], as the kernel's own round end deals it from
    next_perm (`cf_env.core.kernel._end_round`)."""
    st, tb, games, perms = raw(st), raw(tb), raw(games), raw(perms)
    for j in range(games.shape[0]):
        i = games[j]
        for k in range(st.boneyard.shape[1]):
            st.boneyard[i, k] = perms[j, k]
        next_round(st, tb, i)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _seeder_seeds(seed, n: int) -> list[int] | None:
    """The N seeder seeds `reset(seed=...)` gives (module docstring: Seeding); None for None."""
    if seed is None:
        return None
    problem = f"seed must be None, an int or {n} ints, each non-negative; got "
    if isinstance(seed, np.ndarray) and seed.ndim == 0:
        seed = seed[()]  # a numpy scalar, as a 0-d array holds it
    if _is_int(seed):
        if seed < 0:
            raise ValueError(problem + repr(seed))
        return np.random.SeedSequence(int(seed)).generate_state(n, np.uint64).tolist()
    if isinstance(seed, (str, bytes)) or not isinstance(seed, (Sequence, np.ndarray)) \
            or (isinstance(seed, np.ndarray) and seed.ndim != 1):
        raise ValueError(problem + f"{type(seed).__name__} {seed!r}")
    seeds = list(seed)
    if len(seeds) != n or not all(_is_int(s) and s >= 0 for s in seeds):
        raise ValueError(problem + repr(seed))
    return [int(s) for s in seeds]


def _reset_mask(options, n: int) -> np.ndarray | None:
    """The games `reset(options=...)` resets: None (all) or a bool mask (module docstring)."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise ValueError(f"options must be None or a dict; got {type(options).__name__}")
    unknown = sorted(map(str, set(options) - set(RESET_OPTIONS)))
    if unknown:
        raise ValueError(f"reset options {unknown} are not supported; the only option is "
                         "'reset_mask'")
    if "reset_mask" not in options:
        return None
    mask = options["reset_mask"]
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (n,):
        raise ValueError(f"options['reset_mask'] must be a bool numpy array of shape ({n},); got "
                         f"{type(mask).__name__} {getattr(mask, 'dtype', '')} "
                         f"{getattr(mask, 'shape', '')}")
    if not mask.any():
        raise ValueError("options['reset_mask'] must have at least one True (the games to reset)")
    return mask


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


def _is_policy(kind) -> bool:
    """A seat sampler's entry that is a policy (an object with a `choose` method), not a kind
    (numpy scalars have a `choose` method of their own: they are kinds)."""
    return (not isinstance(kind, (str, bytes, int, np.generic, np.ndarray))
            and callable(getattr(kind, "choose", None)))


def _kind_code(kind) -> int:
    if isinstance(kind, str):
        if kind not in KIND_NAMES:
            raise ValueError(f"bot kind must be one of {sorted(KIND_NAMES)}; got {kind!r}")
        return KIND_NAMES[kind]
    if not _is_int(kind) or int(kind) not in KIND_NAMES.values():
        raise ValueError(f"bot kind must be one of {sorted(KIND_NAMES)} or a code in "
                         f"{sorted(KIND_NAMES.values())}; got {kind!r}")
    return int(kind)


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
        final_observation: bool = False,
        win_bonus: float = 0.0,
        **rules,
    ):
        self.config = cfg = _rules(config, rules)
        if not _is_int(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int; got {num_envs!r}")
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}; got {reward_mode!r}")
        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}; got {episode!r}")
        if episode == "round" and reward_mode == "win":
            raise ValueError("reward_mode='win' pays only at the end of a game; use episode='game' with it")
        for name, flag in (("skip_forced", skip_forced), ("privileged", privileged),
                           ("auto_reset", auto_reset), ("final_observation", final_observation)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be a bool; got {flag!r}")
        if (isinstance(win_bonus, bool) or not isinstance(win_bonus, (int, float, np.floating))
                or not math.isfinite(win_bonus) or win_bonus < 0):
            raise ValueError(f"win_bonus must be a finite number >= 0; got {win_bonus!r}")
        if num_envs > 2 and num_envs > max_num_envs(cfg):  # before anything is allocated
            raise ValueError(
                f"num_envs must be at most {max_num_envs(cfg)} for this config "
                f"({per_game_bytes(cfg)} bytes a game, {MAX_BATCH_BYTES // 2**30} GiB a batch); "
                f"got {num_envs}")
        n, players = int(num_envs), cfg.num_players
        self.num_envs, self.num_players, self.num_actions = n, players, cfg.num_actions
        self.reward_mode, self.episode = reward_mode, episode
        self.skip_forced, self.auto_reset = skip_forced, auto_reset
        self.win_bonus = float(win_bonus)
        self._kb = KernelBatch(cfg, n)
        # Rounds stop at their end, for the final observations; this adapter deals the next round
        # (`_deal_next_rounds`) from the shuffle the kernel had queued (module docstring).
        self._kb.tables = kernel_tables(cfg, deal_at_end=False)
        self.observation_size = self._kb.obs_tables.size
        self.privileged_size = self._kb.priv_tables.size
        self._seat_kind = np.zeros((n, players), np.int8)
        # Policy seats (module docstring: Seats): the policy object of each such seat, and a
        # mask of them for the vectorised test "is the seat to move a policy's".
        self._seat_policy = np.full((n, players), None, dtype=object)
        self._policy_seat = np.zeros((n, players), bool)
        self._policy_key = np.zeros((n, players), np.int64)  # id() of the seat's policy: grouping
        self._seat_sampler: Callable | None = None
        self._broken: str | None = None  # a policy raised while the games moved (step refuses)
        self._set_bots(bots)
        self._bot_rng = np.zeros(n, np.uint64)
        self._weights = heuristic_weights()
        self._scores, self._counts = bot_scratch(cfg)
        self._legal = np.zeros_like(self._kb.legal_words)
        self._stop = np.zeros(n, np.int8)
        self._acc = np.zeros((n, players), np.float64)  # the step's rewards, summed as the AEC env sums
        self._closed = np.zeros(n, bool)  # the episode ended earlier in this step: pay nothing more
        self._wins = np.zeros((n, players), np.float32)  # the step's paid round wins (`round_wins`)
        self._seeders: list[np.random.Generator] = [np.random.default_rng() for _ in range(n)]
        # Each game's next game drawn ahead from its seeder (module docstring: Bad input).
        # A game's queue: the head in these arrays, any later ones in `_extra` (game -> list of
        # (kinds, seed, waits)); `waits`: that game reaches an outside decision before it ends;
        # `_covered`: the queue holds such a game, so that no call needs a draw of its own.
        self._ahead = np.zeros(n, bool)
        self._ahead_kinds = np.zeros((n, players), np.int8)
        self._ahead_seed = np.zeros(n, np.int64)
        self._ahead_waits = np.zeros(n, bool)
        self._ahead_policies: list = [None] * n  # the head's policies (a P-list) or None
        self._covered = np.zeros(n, bool)
        self._extra: dict[int, list] = {}
        self._opening = None  # scratch of `_opening_waits`, built on first use
        self._no_games = np.zeros(0, np.int64)
        # Scratch of one step, written before the kernel moves: the seat that made the step's
        # decision, and the queued shuffles (the next round's, for the games whose round ends).
        self._actor = np.zeros(n, np.int32)
        self._perms = np.zeros_like(self._kb.state.next_perm)
        self._final = (np.zeros((n, self.observation_size), np.float32) if final_observation
                       else None)
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
                if not _is_int(seat) or not 0 <= seat < players:
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
        self._check_outside(self._seat_kind, np.arange(n))

    @staticmethod
    def _check_outside(kinds: np.ndarray, games: np.ndarray, policies=None) -> None:
        outside = kinds == OUTSIDE
        if policies is not None:
            outside &= np.array([[p is None for p in policies]])
        lacking = games[~outside.any(axis=1)]
        if lacking.size:
            raise ValueError(f"bots: game {int(lacking[0])} has no outside seat; at least one seat "
                             "per game must be played from outside (not by a bot or a policy)")

    @property
    def seat_kinds(self) -> np.ndarray:
        """(N, P) int8 copy of each game's seat kinds (OUTSIDE=0 or a bot code)."""
        return self._seat_kind.copy()

    @property
    def seat_policies(self) -> np.ndarray:
        """(N, P) object copy: the policy playing each seat of each running game (module
        docstring: Seats), None for outside and bot seats."""
        return self._seat_policy.copy()

    @property
    def learner_seats(self) -> np.ndarray:
        """(N, P) bool: the seats of each running game that `step` plays (outside seats that
        no policy plays)."""
        return (self._seat_kind == OUTSIDE) & ~self._policy_seat

    @property
    def round_wins(self) -> np.ndarray:
        """(N, P) float32: each seat's share of the wins of the rounds the last call paid (1 for
        a round's sole lowest score, 1/k each for k tied); the buffer the next call overwrites."""
        return self._wins

    @property
    def legal_words(self) -> np.ndarray:
        """(N, W) uint64: the legal bitsets behind `action_mask` (bit a of row i: action a is
        legal; W = ceil(A / 64)), for compiled samplers (`cf_env.core.kernel.batch_random_actions`).
        A buffer the next call overwrites, not the games' state."""
        return self._legal

    @property
    def kernel(self) -> KernelBatch:
        """The compiled core's batch under this adapter (its `state` is the games' state: read
        it, never write it; its tables stop at a round's end, which this adapter deals)."""
        return self._kb

    @property
    def bot_rng(self) -> np.ndarray:
        """(N,) uint64 copy of each game's bot tie-break stream state."""
        return self._bot_rng.copy()

    @property
    def final_observation(self) -> np.ndarray | None:
        """(N, D) float32 buffer of the final observations (module docstring), rows valid where
        the last step returned `terminated`; None without `final_observation=True`."""
        return self._final

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays: the games' state, the kernel's tables, buffers and queued
        shuffles, and this adapter's buffers (the per-game Generators are Python objects beside:
        about 870 bytes each, two a game; see `per_game_bytes`)."""
        arrays = [self._seat_kind, self._seat_policy, self._policy_seat, self._policy_key,
                  self._wins,
                  self._bot_rng, self._weights, self._scores, self._counts,
                  self._legal, self._stop, self._acc, self._closed, self.game_seeds, self._ahead,
                  self._ahead_kinds, self._ahead_seed, self._ahead_waits, self._covered,
                  self._actor, self._perms]
        arrays += [a for name, a in self._out._asdict().items()
                   if a is not None and name not in ("observation", "privileged")]
        if self._final is not None:
            arrays.append(self._final)
        return self._kb.nbytes + int(sum(a.nbytes for a in arrays))

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | Sequence[int] | None = None, options: dict | None = None) -> BatchOutput:
        """Deal every game (or, with options={"reset_mask": mask}, the masked ones) a new game
        (module docstring: Seeding); returns every game's outside decision, with zero rewards.
        A bad seed or option raises `ValueError` with nothing changed."""
        n = self.num_envs
        seeds = _seeder_seeds(seed, n)
        mask = _reset_mask(options, n)
        if mask is not None and not self._started:
            raise ValueError("options['reset_mask'] needs games to keep: call reset() without it "
                             "first")
        if mask is not None and self._broken is not None:
            raise ValueError("options['reset_mask'] cannot repair a batch whose seat policy "
                             f"raised ({self._broken}): call reset() without it")
        games = np.arange(n) if mask is None else np.flatnonzero(mask)
        # Everything that can fail first, on copies: the games' seeders and queues, filled with
        # the game to deal now and its successors up to two games that reach an outside decision
        # (the one this call leaves waiting, and the next call's).
        seeders = list(self._seeders)
        if seeds is not None:
            for game in games.tolist():
                seeders[game] = np.random.default_rng(seeds[game])
        queues = {game: [] if seeds is not None else self._queue(game) for game in games.tolist()}
        saved = [] if seeds is not None else self._save_seeders(seeders, games)  # new ones: dropped
        try:
            self._fill(seeders, queues, 2)
        except BaseException:
            self._restore_seeders(seeders, saved)
            raise
        # Nothing can fail from here on.
        self._seeders = seeders
        for game, queue in queues.items():
            self._store(game, queue)
        first = self._pop(games)
        if mask is None:
            self._broken = None
        self._begin_step()
        self._closed[:] = True  # rounds ending before the first outside decision belong to no episode
        self._deal(games, *first)
        self._advance()
        self._started = True
        return self._output()

    def step(self, actions) -> BatchOutput:
        """One action per game for its seat to move (`current_player`); bots and forced moves run
        until every game's next outside decision. See the module docstring for bad input."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self._broken is not None:
            raise RuntimeError(f"a seat policy raised while the games moved ({self._broken}); "
                               "call reset() (all games) before step()")
        # The games that started a game in the last call: their queues topped up.
        missing = self._no_games if self._covered.all() else np.flatnonzero(~self._covered)
        saved = self._save_seeders(self._seeders, missing)
        try:
            if missing.size:
                queues = {game: self._queue(game) for game in missing.tolist()}
                self._fill(self._seeders, queues, 1)
            st = self._kb.state
            np.copyto(self._perms, st.next_perm)
            np.copyto(self._actor, st.current)
            self._kb.step(actions)  # checks every game before any moves (ValueError / IllegalActionError)
        except BaseException:
            self._restore_seeders(self._seeders, saved)
            raise
        if missing.size:
            for game, queue in queues.items():
                self._store(game, queue)
        self._begin_step()
        ended = np.flatnonzero(st.round_ended)
        if ended.size:
            self._pay(ended, self._perms[ended])
        self._advance()
        return self._output()

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _save_seeders(seeders: list, games: np.ndarray) -> list:
        return [(game, seeders[game].bit_generator.state) for game in games.tolist()]

    @staticmethod
    def _restore_seeders(seeders: list, saved: list) -> None:
        for game, state in saved:
            seeders[game].bit_generator.state = state

    def _queue(self, game: int) -> list:
        """A copy of `game`'s queue of games drawn ahead, oldest first: (kinds, seed, waits,
        policies: a P-list or None)."""
        if not self._ahead[game]:
            return []
        head = (self._ahead_kinds[game].copy(), int(self._ahead_seed[game]),
                bool(self._ahead_waits[game]), self._ahead_policies[game])
        return [head, *self._extra.get(game, ())]

    def _store(self, game: int, queue: list) -> None:
        self._ahead[game] = bool(queue)
        if queue:
            (self._ahead_kinds[game], self._ahead_seed[game], self._ahead_waits[game],
             self._ahead_policies[game]) = queue[0]
        else:
            self._ahead_policies[game] = None
        if len(queue) > 1:
            self._extra[game] = queue[1:]
        else:
            self._extra.pop(game, None)
        self._covered[game] = any(entry[2] for entry in queue)

    def _fill(self, seeders: list, queues: dict, waiting: int) -> None:
        """Draw into each `queues[game]` (a list, changed in place) until it holds `waiting`
        games that reach an outside decision. Changes nothing else but the seeders drawn from;
        raises `ValueError` for a bad draw."""
        for game, queue in queues.items():
            have = sum(entry[2] for entry in queue)
            drawn = 0
            while have < waiting:
                if drawn == MAX_CHAIN:
                    raise ValueError(f"bots: {MAX_CHAIN} games in a row of game {game} end before "
                                     "any outside seat decides; no call can reach a decision")
                kinds, seed, policies = self._draw(seeders[game], game)
                waits = self._opening_waits(kinds, seed)
                queue.append((kinds, seed, waits, policies))
                have += waits
                drawn += 1

    def _draw(self, rng: np.random.Generator, game: int) -> tuple[np.ndarray, int, list | None]:
        """`game`'s next game from its seeder `rng`: its seat kinds (from the seat sampler, checked;
        else the fixed ones), its engine seed and its seat policies (a P-list, None where a seat
        has none; None if no seat has one)."""
        kinds = self._seat_kind[game].copy()
        policies = None
        if self._seat_sampler is not None:
            drawn = self._seat_sampler(rng)
            try:
                drawn = list(drawn)
            except TypeError:
                raise ValueError(f"bots(rng) must give {self.num_players} kinds; got "
                                 f"{drawn!r}") from None
            if len(drawn) != self.num_players:
                raise ValueError(f"bots(rng) must give {self.num_players} kinds; got {drawn!r}")
            if any(_is_policy(k) for k in drawn):
                policies = [k if _is_policy(k) else None for k in drawn]
            kinds[:] = [OUTSIDE if _is_policy(k) else _kind_code(k) for k in drawn]
            self._check_outside(kinds[None], np.array([game]), policies)
        return kinds, int(rng.integers(2**63)), policies

    def _opening_waits(self, kinds: np.ndarray, seed: int) -> bool:
        """Whether a game of these seats and engine seed reaches an outside decision before it
        ends: its opening played on a scratch game of one, exactly as the batch will play it
        (the deal, the bots' stream, forced moves). Only a seat sampler's draws can fail, so only
        with one does this matter; without one, or with a trusted one (module docstring), every
        game counts as reaching a decision."""
        if self._seat_sampler is None or getattr(self._seat_sampler, "always_valid", False):
            return True
        if self._opening is None:
            scratch = KernelBatch(self.config, 1)
            self._opening = (scratch, np.zeros((1, self.num_players), np.int8),
                             np.zeros(1, np.uint64), np.zeros_like(scratch.legal_words),
                             np.zeros(1, np.int8), *bot_scratch(self.config))
        scratch, seat_kind, bot_rng, legal, stop, scores, counts = self._opening
        scratch.reset([seed], np.zeros(1, np.int64))
        seat_kind[0], bot_rng[0] = kinds, seed
        while True:
            batch_advance(scratch.state, scratch.tables, self._weights, seat_kind, bot_rng,
                          self.skip_forced, legal, stop, scores, counts)
            if stop[0] == WAITING:
                return True
            if scratch.state.game_over[0]:
                return False
            scratch.refill()  # its tables deal the next round at once: the shuffle after it

    def _pop(self, games: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
        """The next game of each of `games` from its queue (kinds (k, P) int8, seeds (k,) int64,
        k policy lists or None), taken off it. An empty queue is drawn from now: only without a
        seat sampler (whose draws cannot fail), or for a game past its queue."""
        kinds = np.empty((len(games), self.num_players), np.int8)
        seeds = np.empty(len(games), np.int64)
        policies = []
        for j, game in enumerate(games.tolist()):
            if self._ahead[game]:
                queue = self._queue(game)
            else:
                kind, seed, drawn = self._draw(self._seeders[game], game)
                queue = [(kind, seed, True, drawn)]
            kinds[j], seeds[j], _, chosen = queue[0]
            policies.append(chosen)
            self._store(game, queue[1:])
        return kinds, seeds, policies

    def _deal(self, games: np.ndarray, kinds: np.ndarray, seeds: np.ndarray,
              policies: list) -> None:
        """Deal each of `games` its game (kinds, engine seed, seat policies)."""
        for game, chosen in zip(games.tolist(), policies):
            if chosen is None:
                if self._policy_seat[game].any():
                    self._seat_policy[game] = None
                    self._policy_seat[game] = False
            else:
                for seat, policy in enumerate(chosen):
                    self._seat_policy[game, seat] = policy
                    self._policy_seat[game, seat] = policy is not None
                    self._policy_key[game, seat] = id(policy)  # alive: `_seat_policy` holds it
        self._seat_kind[games] = kinds
        self.game_seeds[games] = seeds
        self._bot_rng[games] = seeds.astype(np.uint64)
        self._kb.reset(seeds.tolist(), games)

    def _new_games(self, games: np.ndarray) -> None:
        """Deal each of `games` its next game, drawn ahead (module docstring: Seeding)."""
        self._deal(games, *self._pop(games))

    def _begin_step(self) -> None:
        out = self._out
        self._acc.fill(0.0)
        self._wins.fill(0.0)
        self._closed.fill(False)
        for flags in (out.terminated, out.truncated, out.round_over, out.game_over):
            flags.fill(False)

    def _advance(self) -> None:
        """Bots, forced decisions and policy seats until every game waits on a learner seat (or
        is over), paying each round that ends on the way (the kernel's next shuffle handed in
        first). A policy that raises marks the batch broken (module docstring: Seats)."""
        kb = self._kb
        st = kb.state
        while True:
            batch_advance(st, kb.tables, self._weights, self._seat_kind, self._bot_rng,
                          self.skip_forced, self._legal, self._stop, self._scores, self._counts)
            ended = np.flatnonzero(self._stop == ROUND_ENDED)
            if ended.size:
                perms = st.next_perm[ended]  # a copy: the shuffle of the next round, before refill
                kb.refill()
                self._pay(ended, perms)
                continue
            if not self._policy_seat.any():
                return
            waiting = np.flatnonzero(self._policy_seat[np.arange(self.num_envs), st.current]
                                     & ~st.game_over)
            if not waiting.size:
                return
            try:
                self._play_policies(waiting)
            except BaseException as error:
                self._broken = f"{type(error).__name__}: {error}"
                raise

    def _play_policies(self, waiting: np.ndarray) -> None:
        """One move of each game of `waiting` (its seat to move a policy seat with a real choice):
        every policy asked once, with the (k, D) observations and (k, A) masks of its games."""
        kb = self._kb
        st = kb.state
        observations = kb.observe()
        raw = self._legal[waiting].view(np.uint8)
        masks = np.unpackbits(raw, axis=1, count=self.num_actions, bitorder="little").view(bool)
        seats = st.current[waiting]
        keys = self._policy_key[waiting, seats]
        _, first, which = np.unique(keys, return_index=True, return_inverse=True)
        actions = np.empty(len(waiting), np.int64)
        for j, k in enumerate(first.tolist()):
            policy = self._seat_policy[waiting[k], seats[k]]
            rows = np.flatnonzero(which == j) if len(first) > 1 else np.arange(len(waiting))
            games = waiting[rows]
            chosen = np.asarray(policy.choose(observations[games], masks[rows]))
            if chosen.shape != (len(rows),) or chosen.dtype.kind not in "iu":
                raise ValueError(f"a seat policy's choose() must give {len(rows)} integer actions; "
                                 f"got {chosen.dtype} {chosen.shape}")
            actions[rows] = chosen
        perms = st.next_perm[waiting]  # before the step: a round end uses it, refill replaces it
        kb.step_games(waiting, actions)  # IllegalActionError naming the game
        ended = np.flatnonzero(st.round_ended[waiting])
        if ended.size:
            self._pay(waiting[ended], perms[ended])

    def _pay(self, games: np.ndarray, perms: np.ndarray) -> None:
        """Rewards and flags of the rounds just ended in `games` (R12; R13 at a game's end), the
        final observations of the episodes they end, then the next round (from `perms`, the
        games' queued shuffles) or, with auto_reset, a new game for those whose game ended."""
        st, out = self._kb.state, self._out
        points = st.round_points[games]
        reward = round_rewards_batch(self.config, self.reward_mode, points)
        won = points == points.min(axis=1, keepdims=True)
        share = won / won.sum(axis=1, keepdims=True)  # the round's winners share 1
        if self.win_bonus:  # zero-sum (`cf_env.core.rewards.win_bonus`)
            reward += self.win_bonus * share - self.win_bonus / self.num_players
        over = st.game_over[games]
        reward[over] += game_rewards_batch(self.reward_mode, st.winners[games[over]])
        paid = ~self._closed[games]
        live = games[paid]
        self._acc[live] += reward[paid]
        self._wins[live] += share[paid]
        out.round_over[live] = True
        out.game_over[live] |= over[paid]
        ends = paid if self.episode == "round" else paid & over
        closing = games[ends]
        out.terminated[closing] = True
        self._closed[closing] = True
        if self._final is not None and closing.size:
            self._observe_final(closing)
        going = ~over
        if going.any():
            _deal_next_rounds(st, self._kb.tables, games[going], perms[going])
        finished = games[over]
        if finished.size and self.auto_reset:
            self._new_games(finished)

    def _observe_final(self, games: np.ndarray) -> None:
        """The final observations of `games` (module docstring). `batch_observe` writes zeros for
        a finished game where `Encoder` writes its last position with no playable value: so the
        finished ones are observed marked not over, and their playable values cleared after.
        Small batches observe every game into the output buffer (which `_output` rewrites);
        larger ones a copy of the ended games' rows (the cheaper of the two; FULL_OBSERVE)."""
        kb = self._kb
        st = kb.state
        if self.num_envs <= FULL_OBSERVE[0] + FULL_OBSERVE[1] * len(games):
            over = st.game_over[games]  # a copy: fancy indexing
            st.game_over[games] = False
            try:
                batch_observe(st, kb.tables, kb.obs_tables, self._actor, kb.observations)
            finally:
                st.game_over[games] = over
            out = kb.observations[games]
        else:
            rows = KernelState(*(array[games] for array in st))
            over = rows.game_over.copy()
            rows.game_over[:] = False
            out = np.zeros((len(games), self.observation_size), np.float32)
            batch_observe(rows, kb.tables, kb.obs_tables, self._actor[games], out)
        start, stop = (int(kb.obs_tables.starts[O_PLAYABLE]), int(kb.obs_tables.stops[O_PLAYABLE]))
        out[over, start:stop] = 0.0
        self._final[games] = out

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
