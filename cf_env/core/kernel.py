"""A compiled, batched rules core: N Chicken Foot games as one struct-of-arrays value, stepped by
numba `@njit(cache=True)` functions written once for every variant `ChickenFootConfig` allows.

This is where the rules are stated: the single-game `Engine` (cf_env/core/engine.py) is a facade
over one game of it (`GameBuffer` and the `one_*` entry points, at the end), and the independent
oracle the tests hold it to is cf_env/tools/reference.py. Game i of a batch seeded s plays
exactly the game `Engine(config, seed=s)` plays given the same actions (same deals, draws, legal
sets, round points, winners), with the engine's defaults (`auto_deal=True`,
`skip_forced=False`): a round's end deals the next round at once, and forced decisions are asked
like any other. tests/core/test_kernel.py checks this game by game against Engine over random
configs (the batch's own chance handling, auto-deal and per-game loops against the engine's).

Chance ("same seed, same games")
--------------------------------
The engine's only use of its RNG is one `rng.permutation(num_tiles)` at the start of every round
(R3/R4); the start-double search (R5) and every draw (R8) take tiles from the front of what that
permutation leaves after the deal, so no draw depends on anything but the round's permutation.
`KernelBatch` (the Python wrapper) therefore keeps one `numpy.random.Generator` per game, seeded
as the engine seeds its own (`np.random.default_rng(seed)`), and hands the compiled code each
round's permutation: round 0's at `reset`, and always the *next* round's in `next_perm` (drawn
ahead; the shuffles do not depend on play). When a round ends, the compiled code deals from
`next_perm` and raises `need_perm`; the wrapper then hands those games their following
permutation. The wrapper draws a game's shuffles `num_rounds` at a time, with one
`rng.permuted(rows, axis=1)` over that many rows of 0..T-1, which draws exactly the sequence that
as many `rng.permutation(T)` calls draw (row by row, the same shuffle), at a third of the cost.
The compiled code itself holds no RNG and no Python object.

State (`KernelState`, batch dimension first): the arrays listed in `STATE_FIELDS` below, each
with its shape over N games, P seats, T tiles, V = max_pips + 1 values, W = ceil((2T + 2) / 64)
words (bit a of a row of words is action id a) and A = `max_arms` arms; the docs site renders
the same table (docs/architecture.md). `KernelState` and `new_state` are made from it.

on_table, played and voids are read only by the observation (`batch_observe`), held only by
the `Engine` (its `hands` board); the rules never read them. The layout (the arm_* and tile_*
fields and `foot_arm`) is laid by the same placement (`_place`) that moves the open ends, when
the tables ask for it (P_LAYOUT: the engine's do; a batch's, whose games nobody draws, do not,
which saves a fifth of a random-play step): R6 extends the oldest arm whose tip has the
attached value, R7 starts a spinner arm, R9 a toe; a double on an open end closes its arm and
starts a foot. The rules never read it; the engine's `arms`, `placement` and snapshots,
pictures and game records do.
Per-round scores are kept as the R13 aggregates (total, zero rounds, lowest non-zero round) and
the last round's points, which is all R13 reads; a driver that wants every round's points reads
`round_points` where `round_ended` is set.

Tables (`KernelTables`, from `kernel_tables(config)`): tile_bits (T, W) uint64, attach_bits
(V, W) uint64 (every action attaching a v half), tile_lo / tile_hi / points (T,) int32,
double_id (V,) int32, and `params` (int64) holding the config as integers at the P_* indices
(start_search and tie_break as codes, target_score -1 for none).

Hot loop: `batch_legal(state, tables, out_words)` writes every game's legal bitset (exactly
`Engine.legal_bits()`, R6-R9; zero once the game is over) and `batch_step(state, tables, actions)`
applies one action per game for the seat to move (R8-R11, R12 scoring and R13 winners at the
ends, the next round's deal and R5 start included). `batch_observe(state, tables, obs_tables,
seats, out)` writes every game's observation for seat seats[i] (the seat to move, in
`KernelBatch.observe` unless told otherwise), (N, observation size) float32, bit for bit
`Encoder.observe(engine, seat)` (what the envs return; zeros once the game is
over); `obs_tables(config)` (`ObsTables`) holds each
piece's start and stop in the row and the divisor of the count pieces, read from
`observation_layout(config)` and the Encoder's divisors, so that the layout is stated in
cf_env/core/observation.py only. tests/core/test_kernel_observation.py checks every decision of
the differential's games against the Encoder. `batch_privileged(state, tables, priv_tables,
seats, out)` writes the critic's privileged vector the same way, (N, privileged size) float32,
bit for bit `Encoder.privileged(engine, seat)` (the opponents' hands egocentric, then the
boneyard's tiles; zeros once the game is over), its offsets read from `privileged_layout(config)`
by `priv_tables(config)` (`PrivTables`); tests/core/test_kernel_privileged.py checks it. Everything here also runs as plain Python
under NUMBA_DISABLE_JIT=1 (the same functions).

Compilation: every function is `@njit(cache=True, error_model="numpy")` (`jit`; error_model:
no division-by-zero branch on the seat arithmetic). The entry points (the functions the Python
side calls) take plain arrays and turn them, and the state and table tuples, into `RawArray`
views once at their top (`cf_env.core.raw.raw`): numba counts no references to those, so a
helper that takes the state costs no incref/decref pair per array on every call, which with
plain arrays cost many times the rules themselves (docs/speed/kernel.md). The compiled code
allocates nothing; every array comes in from the wrapper, which keeps it alive. One compilation
serves every config: the types (dtypes and ranks of the arrays) do not depend on the config,
only the shapes and `params` do.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numba import njit

from cf_env.core import checks
from cf_env.core.actions import IllegalActionError, actions_in
from cf_env.core.config import START_SEARCHES, TIE_BREAKS, ChickenFootConfig
from cf_env.core.observation import (
    OBSERVATION_VERSION,
    count_divisors,
    observation_layout,
    privileged_layout,
)
from cf_env.core.raw import raw, reshape, view
from cf_env.core.tiles import tile_tables

if TYPE_CHECKING:
    from cf_env.core.snapshot import Position

# Indices into KernelTables.params.
P_PLAYERS = 0
P_TILES = 1
P_VALUES = 2
P_HAND = 3
P_ROUNDS = 4
P_ARMS = 5
P_TOES = 6
P_UNTIL = 7  # draw_until_playable
P_MUST = 8  # must_play_drawn
P_SEARCH = 9  # start_search code: index in START_SEARCHES
P_TARGET = 10  # target_score, -1 for None
P_TIE = 11  # tie_break code: index in TIE_BREAKS
P_DRAW = 12  # draw action id (2T)
P_PASS = 13  # pass action id (2T + 1)
P_DEAL = 14  # 1: a round's end deals the next round from next_perm at once; 0: it stops there
P_WORDS = 15  # W, uint64 words per action bitset
P_LAYOUT = 16  # 1: lay the arms (the layout fields) as tiles are placed; 0: the open ends only
NUM_PARAMS = 17

SEARCH_TURNS = START_SEARCHES.index("turns")
SEARCH_ALL_DRAW = START_SEARCHES.index("all_draw")
SEARCH_LOWER = START_SEARCHES.index("lower_double")
TIE_R13 = TIE_BREAKS.index("r13")
NO_ROUND = 2**62  # min_nonzero of a seat without a non-zero round (R13: "infinity")

jit = njit(cache=True, error_model="numpy")
# Helpers that only make views or are too small to be worth a call: inlined into their callers.
inline_jit = njit(cache=True, error_model="numpy", inline="always")

ZERO = np.uint64(0)
ONE = np.uint64(1)


class KernelTables(NamedTuple):
    tile_bits: np.ndarray
    attach_bits: np.ndarray
    tile_lo: np.ndarray
    tile_hi: np.ndarray
    points: np.ndarray
    double_id: np.ndarray
    params: np.ndarray


class StateField(NamedTuple):
    """One array of the compiled state: its name, its shape after the batch dimension (letters
    of "PTVWA": seats, tiles, values, words, arms), its dtype, what a new game slot holds, and
    what it means."""

    name: str
    dims: str
    dtype: type
    fill: int | bool
    meaning: str


STATE_FIELDS = (
    StateField("hands", "PW", np.uint64, 0,
               "each seat's hand as action bits (tile t sets 2t and, when t is not a double, 2t "
               "+ 1: `TileTables.tile_bits`)"),
    StateField("hand_count", "P", np.int32, 0,
               "tiles in each hand"),
    StateField("hand_points", "P", np.int32, 0,
               "R12 points in each hand (double-blank per config)"),
    StateField("open_count", "V", np.int32, 0,
               "open arm tips of each value (R6)"),
    StateField("open_attach", "W", np.uint64, 0,
               "OR of attach_bits[v] over the values with open_count > 0"),
    StateField("spinner_empty", "", np.int32, 0,
               "empty arms of the centre double (R7)"),
    StateField("center", "", np.int32, 0,
               "value of the round's centre double (R4, R5 lower_double)"),
    StateField("foot_value", "", np.int32, -1,
               "value of the pending chicken foot, -1 if none (R9)"),
    StateField("toes_left", "", np.int32, 0,
               "toes still owed to the pending foot (R9)"),
    StateField("boneyard", "T", np.int32, 0,
               "the round's permutation; the boneyard is boneyard[i, bone_pos[i]:], drawn from "
               "the front"),
    StateField("bone_pos", "", np.int32, 0,
               "index of the next tile drawn; boneyard size T - bone_pos"),
    StateField("drawn_tile", "", np.int32, -1,
               "tile just drawn by the seat to move (R8), -1 if none"),
    StateField("current", "", np.int32, 0,
               "seat to move"),
    StateField("start_seat", "", np.int32, 0,
               "seat that placed the round's start double (R5)"),
    StateField("round", "", np.int32, 0,
               "place in the countdown of doubles (R4; restarts with target)"),
    StateField("rounds_played", "", np.int32, 0,
               "rounds finished in this game"),
    StateField("round_points", "P", np.int32, 0,
               "points of the last finished round (R12)"),
    StateField("round_ended", "", np.bool_, 0,
               "a round ended during the last batch_step"),
    StateField("totals", "P", np.int64, 0,
               "sum of the round points (R13)"),
    StateField("zero_rounds", "P", np.int32, 0,
               "rounds scored 0 (R13 tie-break)"),
    StateField("min_nonzero", "P", np.int64, NO_ROUND,
               "lowest non-zero round score, NO_ROUND (2**62) if none"),
    StateField("game_over", "", np.bool_, True,
               "the game has ended (R4 / target_score)"),
    StateField("winners", "P", np.bool_, 0,
               "R13 winners once game_over"),
    StateField("next_perm", "T", np.int32, 0,
               "the permutation the next round is dealt from"),
    StateField("need_perm", "", np.bool_, 0,
               "next_perm was used: the wrapper must draw a new one"),
    StateField("on_table", "T", np.bool_, 0,
               "tiles on the table this round, start double included"),
    StateField("played", "PT", np.bool_, 0,
               "tiles each seat placed this round"),
    StateField("voids", "PV", np.bool_, 0,
               "values each seat showed it lacks this round: a DRAW first clears the seat's row, "
               "then DRAW and a PASS not after a draw mark the playable values"),
    StateField("held", "PT", np.bool_, 0,
               "the hands as 0/1 boards (`hands` in another form)"),
    StateField("arm_count", "", np.int32, 0,
               "arms laid this round (the layout: A = `max_arms`)"),
    StateField("arm_parent", "A", np.int32, -1,
               "each arm's parent: -1 the centre double (R7), else the arm that ends in the foot "
               "double it is a toe of (R9)"),
    StateField("arm_tip", "A", np.int32, -1,
               "each arm's open value, -1 when closed by a double (R9)"),
    StateField("arm_len", "A", np.int32, 0,
               "tiles on each arm"),
    StateField("foot_arm", "", np.int32, -1,
               "the arm that ends in the pending foot's double, -1 if none"),
    StateField("tile_arm", "T", np.int32, -1,
               "the arm each tile lies on, -1 (in a hand, the boneyard, or the centre double)"),
    StateField("tile_pos", "T", np.int32, 0,
               "a tile's place on its arm, 0 at the inner end"),
    StateField("tile_attached", "T", np.int32, 0,
               "the value a tile was attached to (the arm's inner side)"),
)
KernelState = NamedTuple("KernelState", [(f.name, np.ndarray) for f in STATE_FIELDS])
KernelState.__doc__ = "The compiled state of N games: one array per `STATE_FIELDS` entry."


def max_arms(config: ChickenFootConfig) -> int:
    """A bound on a round's arms: the spinner's (R7) and every foot's toes (R9), each double
    but the centre a possible foot; a snapshot without a layout has one arm per open end,
    fewer."""
    return config.spinner_arms + config.toes * (config.max_pips + 1)


def num_words(config: ChickenFootConfig) -> int:
    """uint64 words per action bitset: ceil(num_actions / 64) (2 on double-9, 6 on double-18)."""
    return (config.num_actions + 63) // 64


def _words(bits: int, width: int) -> np.ndarray:
    return np.array([(bits >> (64 * k)) & (2**64 - 1) for k in range(width)], dtype=np.uint64)


def words_to_int(words: np.ndarray) -> int:
    """A row of uint64 words as the Python int bitset the engine uses (`Engine.legal_bits`)."""
    return sum(int(w) << (64 * k) for k, w in enumerate(words.tolist()))


def kernel_tables(config: ChickenFootConfig, deal_at_end: bool = True,
                  layout: bool = False) -> KernelTables:
    """The config's constants and per-set tables as arrays for the compiled code. With
    `deal_at_end` a round's end deals the next round at once from `next_perm` (the batches);
    without, the game stops after the round's scoring, `need_perm` raised, until the wrapper
    deals it (`one_game`'s deals: the single-game `Engine`, which may stop between rounds).
    With `layout` the placement also lays the arms (the layout fields; the engine's tables)."""
    tables = tile_tables(config.max_pips)
    width = num_words(config)
    params = np.zeros(NUM_PARAMS, dtype=np.int64)
    params[P_PLAYERS] = config.num_players
    params[P_TILES] = config.num_tiles
    params[P_VALUES] = config.max_pips + 1
    params[P_HAND] = config.hand_size
    params[P_ROUNDS] = config.num_rounds
    params[P_ARMS] = config.spinner_arms
    params[P_TOES] = config.toes
    params[P_UNTIL] = int(config.draw_until_playable)
    params[P_MUST] = int(config.must_play_drawn)
    params[P_SEARCH] = START_SEARCHES.index(config.start_search)
    params[P_TARGET] = -1 if config.target_score is None else config.target_score
    params[P_TIE] = TIE_BREAKS.index(config.tie_break)
    params[P_DRAW] = config.draw_action
    params[P_PASS] = config.pass_action
    params[P_DEAL] = int(deal_at_end)
    params[P_WORDS] = width
    params[P_LAYOUT] = int(layout)
    return KernelTables(
        tile_bits=np.stack([_words(b, width) for b in tables.tile_bits]),
        attach_bits=np.stack([_words(b, width) for b in tables.attach_bits]),
        tile_lo=tables.lo.astype(np.int32),
        tile_hi=tables.hi.astype(np.int32),
        points=tables.points(config.double_blank_value).astype(np.int32),
        double_id=tables.double_id.astype(np.int32),
        params=params,
    )


class ObsTables(NamedTuple):
    starts: np.ndarray  # (len(OBS_PIECES),) uint64: each piece's first position in the row
    stops: np.ndarray  # (len(OBS_PIECES),) uint64: one past each piece's last position
    divisors: np.ndarray  # (len(OBS_PIECES),) float64: what a count piece is divided by
    size: int


# The observation's pieces, by their index in ObsTables (names of `observation_layout`).
OBS_PIECES = ("hand", "table", "open_ends", "playable_values", "spinner_arms_empty", "foot_double",
              "foot_toes_left", "drawn_tile", "boneyard_size", "hand_sizes", "opponent_voids",
              "opponent_played", "round", "center", "scores")
(O_HAND, O_TABLE, O_OPEN, O_PLAYABLE, O_SPINNER, O_FOOT, O_TOES, O_DRAWN, O_BONEYARD, O_SIZES,
 O_VOIDS, O_PLAYED, O_ROUND, O_CENTER, O_SCORES) = range(len(OBS_PIECES))


def obs_tables(config: ChickenFootConfig) -> ObsTables:
    """Where `batch_observe` writes each piece and what it divides counts by, read from
    `observation_layout(config)` and the Encoder's divisors (the layout is not restated here)."""
    layout = observation_layout(config)
    if set(layout.slices) != set(OBS_PIECES):
        raise ValueError(f"batch_observe knows the pieces {OBS_PIECES}; the layout has "
                         f"{tuple(layout.slices)} (OBSERVATION_VERSION {OBSERVATION_VERSION})")
    divisor = count_divisors(config)
    return ObsTables(
        starts=np.array([layout.slices[name].start for name in OBS_PIECES], np.uint64),
        stops=np.array([layout.slices[name].stop for name in OBS_PIECES], np.uint64),
        divisors=np.array([float(divisor.get(name, 1)) for name in OBS_PIECES], np.float64),
        size=layout.size,
    )


class PrivTables(NamedTuple):
    starts: np.ndarray  # (len(PRIV_PIECES),) uint64: each piece's first position in the row
    stops: np.ndarray  # (len(PRIV_PIECES),) uint64: one past each piece's last position
    size: int


# The privileged vector's pieces, by their index in PrivTables (names of `privileged_layout`);
# both are 0/1 boards, so there is no divisor to carry.
PRIV_PIECES = ("opponent_hands", "boneyard")
V_HANDS, V_BONEYARD = range(len(PRIV_PIECES))


def priv_tables(config: ChickenFootConfig) -> PrivTables:
    """Where `batch_privileged` writes each piece, read from `privileged_layout(config)` (the
    layout is not restated here)."""
    layout = privileged_layout(config)
    if set(layout.slices) != set(PRIV_PIECES):
        raise ValueError(f"batch_privileged knows the pieces {PRIV_PIECES}; the layout has "
                         f"{tuple(layout.slices)} (OBSERVATION_VERSION {OBSERVATION_VERSION})")
    divisor = count_divisors(config)
    if any(name in divisor for name in PRIV_PIECES):
        raise ValueError(f"batch_privileged writes 0/1 boards; {PRIV_PIECES} now has a count piece")
    return PrivTables(
        starts=np.array([layout.slices[name].start for name in PRIV_PIECES], np.uint64),
        stops=np.array([layout.slices[name].stop for name in PRIV_PIECES], np.uint64),
        size=layout.size,
    )


def new_state(config: ChickenFootConfig, num_games: int) -> KernelState:
    """`num_games` games' arrays as `STATE_FIELDS` declares them (deal them with `batch_reset`)."""
    sizes = {"P": config.num_players, "T": config.num_tiles, "V": config.max_pips + 1,
             "W": num_words(config), "A": max_arms(config)}
    return KernelState(*(np.full((num_games, *(sizes[d] for d in f.dims)), f.fill, f.dtype)
                         for f in STATE_FIELDS))


def batch_bytes_per_game(config: ChickenFootConfig) -> int:
    """Bytes one game of a `KernelBatch` holds: its state arrays, its legal words, its
    observation and privileged rows, its queued shuffles, and its Generator."""
    state = sum(a.nbytes for a in new_state(config, 1))
    words = num_words(config) * 8
    rows = 4 * (observation_layout(config).size + privileged_layout(config).size)
    ahead = config.num_rounds * config.num_tiles + 8
    return state + words + rows + ahead + checks.GENERATOR_BYTES


def max_games(config: ChickenFootConfig) -> int:
    """The most games one batch of `config` may hold: `checks.MAX_BATCH_BYTES` over the bytes a
    game holds."""
    return checks.MAX_BATCH_BYTES // batch_bytes_per_game(config)


# ---------------------------------------------------------------------------- compiled rules
@inline_jit
def _set_bit(out, i, action):
    out[i, action >> 6] |= ONE << np.uint64(action & 63)


# The phases of play (`play_phase`), also what `one_game` (OP_STEP) and `placement_into` report.
PHASE_R6, PHASE_R7, PHASE_R9 = 0, 1, 2


@inline_jit
def play_phase(st, i):
    """Where tiles go now, stated here only: R9 a pending foot's toes first, else R7 the
    centre's empty arms, else R6 any open end."""
    if st.foot_value[i] >= 0:
        return PHASE_R9
    if st.spinner_empty[i] > 0:
        return PHASE_R7
    return PHASE_R6


@inline_jit
def _attach_word(st, tb, i, k):
    """Word k of the playable values' attach bitset, by the phase of play (`play_phase`)."""
    phase = play_phase(st, i)
    if phase == PHASE_R9:
        return tb.attach_bits[st.foot_value[i], k]
    if phase == PHASE_R7:
        return tb.attach_bits[st.center[i], k]
    return st.open_attach[i, k]


@inline_jit
def _fits(st, tb, i, tile):
    for k in range(tb.tile_bits.shape[1]):
        if tb.tile_bits[tile, k] & _attach_word(st, tb, i, k) != ZERO:
            return True
    return False


@inline_jit
def _can_place(st, tb, i, seat):
    for k in range(st.hands.shape[2]):
        if st.hands[i, seat, k] & _attach_word(st, tb, i, k) != ZERO:
            return True
    return False


@inline_jit
def legal_into(st, tb, i, out):
    """Game i's legal bitset into out[i] (R6-R9; exactly `Engine.legal_bits`)."""
    width = out.shape[1]
    for k in range(width):
        out[i, k] = ZERO
    if st.game_over[i]:
        return
    drawn = st.drawn_tile[i]
    found = False
    if drawn >= 0:
        # R8: after a draw only the drawn tile may be placed; PASS ends the turn unless the
        # must-play variant forces a playable drawn tile.
        for k in range(width):
            word = tb.tile_bits[drawn, k] & _attach_word(st, tb, i, k)
            out[i, k] = word
            if word != ZERO:
                found = True
        if not (found and tb.params[P_MUST] != 0):
            _set_bit(out, i, tb.params[P_PASS])
    else:
        seat = st.current[i]
        for k in range(width):
            word = st.hands[i, seat, k] & _attach_word(st, tb, i, k)
            out[i, k] = word
            if word != ZERO:
                found = True
        if not found:  # R8: draw only when you cannot place; pass once the boneyard is empty
            if st.bone_pos[i] < tb.params[P_TILES]:
                _set_bit(out, i, tb.params[P_DRAW])
            else:
                _set_bit(out, i, tb.params[P_PASS])


@jit
def is_legal(st, tb, i, action):
    """Whether `action` is legal for game i's seat to move (the same decision as legal_into)."""
    if st.game_over[i] or action < 0 or action > tb.params[P_PASS]:
        return False
    draw, pas = tb.params[P_DRAW], tb.params[P_PASS]
    drawn = st.drawn_tile[i]
    if drawn >= 0:
        if action == draw:
            return False
        fits = _fits(st, tb, i, drawn)
        if action == pas:
            return not (fits and tb.params[P_MUST] != 0)
        k = action >> 6
        word = tb.tile_bits[drawn, k] & _attach_word(st, tb, i, k)
        return (word >> np.uint64(action & 63)) & ONE != ZERO
    seat = st.current[i]
    can = _can_place(st, tb, i, seat)
    if action == draw:
        return (not can) and st.bone_pos[i] < tb.params[P_TILES]
    if action == pas:
        return (not can) and st.bone_pos[i] >= tb.params[P_TILES]
    k = action >> 6
    word = st.hands[i, seat, k] & _attach_word(st, tb, i, k)
    return (word >> np.uint64(action & 63)) & ONE != ZERO


@inline_jit
def _give(st, tb, i, seat, tile):
    for k in range(st.hands.shape[2]):
        st.hands[i, seat, k] |= tb.tile_bits[tile, k]
    st.held[i, seat, tile] = True
    st.hand_count[i, seat] += 1
    st.hand_points[i, seat] += tb.points[tile]


@inline_jit
def _take(st, tb, i, seat, tile):
    for k in range(st.hands.shape[2]):
        st.hands[i, seat, k] ^= tb.tile_bits[tile, k]
    st.held[i, seat, tile] = False
    st.hand_count[i, seat] -= 1
    st.hand_points[i, seat] -= tb.points[tile]


@inline_jit
def _draw(st, tb, i, seat):
    """R5/R8: the boneyard's front tile goes to `seat`'s hand."""
    tile = st.boneyard[i, st.bone_pos[i]]
    st.bone_pos[i] += 1
    _give(st, tb, i, seat, tile)
    return tile


@inline_jit
def _holder(st, tb, i, tile):
    """The seat holding `tile`, or -1."""
    k = (2 * tile) >> 6
    bit = ONE << np.uint64((2 * tile) & 63)
    for seat in range(st.hands.shape[1]):
        if st.hands[i, seat, k] & bit != ZERO:
            return seat
    return -1


@inline_jit
def _clear_table(st, tb, i):
    """An empty table for a new round: no open end, the spinner's arms all empty (R7), no foot,
    no drawn tile, no arm laid."""
    for k in range(st.open_attach.shape[1]):
        st.open_attach[i, k] = ZERO
    st.spinner_empty[i] = tb.params[P_ARMS]
    st.foot_value[i] = -1
    st.toes_left[i] = 0
    st.drawn_tile[i] = -1
    st.arm_count[i] = 0
    st.foot_arm[i] = -1
    if tb.params[P_LAYOUT] == 0:
        return
    for arm in range(st.arm_tip.shape[1]):
        st.arm_parent[i, arm] = -1
        st.arm_tip[i, arm] = -1
        st.arm_len[i, arm] = 0
    for t in range(st.tile_arm.shape[1]):
        st.tile_arm[i, t] = -1
        st.tile_pos[i, t] = 0
        st.tile_attached[i, t] = 0


@jit
def _start_round(st, tb, i):
    """R3-R5: deal round st.round[i] from boneyard[i] (its permutation) and place the start."""
    n = tb.params[P_PLAYERS]
    size = tb.params[P_HAND]
    st.center[i] = tb.params[P_VALUES] - 1 - st.round[i]  # R4
    for seat in range(n):
        for k in range(st.hands.shape[2]):
            st.hands[i, seat, k] = ZERO
        for t in range(st.held.shape[2]):
            st.held[i, seat, t] = False
        st.hand_count[i, seat] = 0
        st.hand_points[i, seat] = 0
        for j in range(seat * size, (seat + 1) * size):  # R3: seat s takes perm[s*size:(s+1)*size]
            _give(st, tb, i, seat, st.boneyard[i, j])
    st.bone_pos[i] = n * size
    for v in range(st.open_count.shape[1]):
        st.open_count[i, v] = 0
        for seat in range(n):
            st.voids[i, seat, v] = False
    for t in range(st.on_table.shape[1]):
        st.on_table[i, t] = False
        for seat in range(n):
            st.played[i, seat, t] = False
    _clear_table(st, tb, i)
    # R5: whoever holds the start double places it.
    start = tb.double_id[st.center[i]]
    holder = _holder(st, tb, i, start)
    search = tb.params[P_SEARCH]
    if holder < 0 and search == SEARCH_LOWER:
        # Variant: the highest lower double someone holds starts the round; when nobody holds
        # any, the round's own double is searched for as R5 says ("turns").
        for value in range(st.center[i] - 1, -1, -1):
            holder = _holder(st, tb, i, tb.double_id[value])
            if holder >= 0:
                st.center[i] = value
                start = tb.double_id[value]
                break
    if holder < 0 and search == SEARCH_ALL_DRAW:
        # Variant: every seat draws one tile at once, from seat round % n on, until it appears;
        # a batch the boneyard cannot fill goes to the first seats in that order.
        first = st.round[i] % n
        while holder < 0:
            batch = min(n, tb.params[P_TILES] - st.bone_pos[i])
            for j in range(batch):
                seat = (first + j) % n
                if _draw(st, tb, i, seat) == start:
                    holder = seat
    elif holder < 0:
        # R5: seats draw in turn, beginning with seat round % n, until it is drawn.
        holder = st.round[i] % n
        while True:
            if _draw(st, tb, i, holder) == start:
                break
            holder = (holder + 1) % n
    _take(st, tb, i, holder, start)
    st.on_table[i, start] = True
    st.start_seat[i] = holder
    st.current[i] = (holder + 1) % n


@inline_jit
def _open_inc(st, tb, i, value):
    st.open_count[i, value] += 1
    if st.open_count[i, value] == 1:  # a value newly open
        for k in range(st.open_attach.shape[1]):
            st.open_attach[i, k] |= tb.attach_bits[value, k]


@inline_jit
def _open_dec(st, tb, i, value):
    st.open_count[i, value] -= 1
    if st.open_count[i, value] == 0:  # the last open end of that value is covered
        for k in range(st.open_attach.shape[1]):
            st.open_attach[i, k] ^= tb.attach_bits[value, k]


@inline_jit
def _oldest_tip(st, i, value):
    """R6: the arm a tile attached to `value` extends: the oldest arm whose tip is `value`
    (-1 if none is open)."""
    for arm in range(st.arm_count[i]):
        if st.arm_tip[i, arm] == value:
            return arm
    return -1


@inline_jit
def _lay(st, i, arm, tile, attached):
    """The tile at the outer end of `arm`."""
    st.tile_arm[i, tile] = arm
    st.tile_pos[i, tile] = st.arm_len[i, arm]
    st.tile_attached[i, tile] = attached
    st.arm_len[i, arm] += 1


@inline_jit
def _place(st, tb, i, tile, attached, free_end):
    """R6, R7, R9, R10: lay `tile` attached to `attached`, on the arm the phase of play gives
    (when the tables keep the layout: P_LAYOUT), and update the open ends."""
    phase = play_phase(st, i)
    layout = tb.params[P_LAYOUT] != 0
    if phase == PHASE_R6:  # on the oldest open arm tip of that value
        _open_dec(st, tb, i, attached)
        arm = _oldest_tip(st, i, attached) if layout else -1
        if layout:
            _lay(st, i, arm, tile, attached)
        if free_end == attached:  # R9: a double closes its arm and starts a chicken foot
            if layout:
                st.arm_tip[i, arm] = -1
                st.foot_arm[i] = arm
            st.foot_value[i] = attached
            st.toes_left[i] = tb.params[P_TOES]
            return
        if layout:
            st.arm_tip[i, arm] = free_end
    else:  # a new arm: a toe of the pending foot (R9) or a spinner arm (R7)
        if layout:
            arm = st.arm_count[i]
            st.arm_count[i] = arm + 1
            st.arm_parent[i, arm] = st.foot_arm[i] if phase == PHASE_R9 else -1
            st.arm_tip[i, arm] = free_end
            st.arm_len[i, arm] = 0
            _lay(st, i, arm, tile, attached)
        if phase == PHASE_R9:
            st.toes_left[i] -= 1
            if st.toes_left[i] == 0:  # R10: the foot is filled; its toes are ordinary ends
                st.foot_value[i] = -1
                st.foot_arm[i] = -1
        else:
            st.spinner_empty[i] -= 1
    _open_inc(st, tb, i, free_end)


@jit
def placement_into(st, tb, i, action, out):
    """Where tile action `action` lays its tile in game i if played now, into out (6,) int32:
    the phase (PHASE_*), the arm, its parent, 1 if the arm is new, the toe (1..toes under R9,
    else 0), and the value the tile leaves open (-1 for a double on an open end, which starts a
    foot). Returns False, out untouched, when the tile's attached half is not playable now."""
    tile = action >> 1
    lo, hi = tb.tile_lo[tile], tb.tile_hi[tile]
    attached, free_end = (hi, lo) if action & 1 else (lo, hi)
    k = action >> 6
    if (_attach_word(st, tb, i, k) >> np.uint64(action & 63)) & ONE == ZERO:
        return False
    phase = play_phase(st, i)
    out[0] = phase
    if phase == PHASE_R6:
        arm = _oldest_tip(st, i, attached)
        out[1], out[2], out[3], out[4] = arm, st.arm_parent[i, arm], 0, 0
        out[5] = -1 if free_end == attached else free_end
    else:
        out[1], out[3], out[5] = st.arm_count[i], 1, free_end
        out[2] = st.foot_arm[i] if phase == PHASE_R9 else -1
        out[4] = tb.params[P_TOES] - st.toes_left[i] + 1 if phase == PHASE_R9 else 0
    return True


@inline_jit
def _set_winners(st, tb, i):
    """R13: lowest total; with tie_break r13 then most zero rounds, then the lowest non-zero
    round; seats still equal share the win."""
    n = tb.params[P_PLAYERS]
    r13 = tb.params[P_TIE] == TIE_R13
    best = 0
    for seat in range(1, n):
        better = st.totals[i, seat] < st.totals[i, best]
        if r13 and st.totals[i, seat] == st.totals[i, best]:
            if st.zero_rounds[i, seat] != st.zero_rounds[i, best]:
                better = st.zero_rounds[i, seat] > st.zero_rounds[i, best]
            else:
                better = st.min_nonzero[i, seat] < st.min_nonzero[i, best]
        if better:
            best = seat
    for seat in range(n):
        same = st.totals[i, seat] == st.totals[i, best]
        if r13:
            same = (same and st.zero_rounds[i, seat] == st.zero_rounds[i, best]
                    and st.min_nonzero[i, seat] == st.min_nonzero[i, best])
        st.winners[i, seat] = same


@inline_jit
def _end_round(st, tb, i):
    """R12: score the hands; then the game ends (R4's last round, or a total past the target),
    or need_perm asks the wrapper for a permutation: with P_DEAL the next round is dealt at
    once from next_perm (R4), else the game waits for a deal (`one_game`)."""
    n = tb.params[P_PLAYERS]
    top = -1
    for seat in range(n):
        points = st.hand_points[i, seat]
        st.round_points[i, seat] = points
        st.totals[i, seat] += points
        if points == 0:
            st.zero_rounds[i, seat] += 1
        elif points < st.min_nonzero[i, seat]:
            st.min_nonzero[i, seat] = points
        if st.totals[i, seat] > top:
            top = st.totals[i, seat]
    st.rounds_played[i] += 1
    st.round_ended[i] = True
    target = tb.params[P_TARGET]
    ends = st.round[i] + 1 >= tb.params[P_ROUNDS] if target < 0 else top > target
    if ends:
        st.game_over[i] = True
        st.drawn_tile[i] = -1
        _set_winners(st, tb, i)
    else:
        st.need_perm[i] = True
        if tb.params[P_DEAL] != 0:
            for j in range(st.boneyard.shape[1]):
                st.boneyard[i, j] = st.next_perm[i, j]
            next_round(st, tb, i)


@inline_jit
def next_round(st, tb, i):
    """R4: deal the next round (the countdown restarts after the double-blank with a target
    score) from boneyard[i]."""
    st.round[i] = (st.round[i] + 1) % tb.params[P_ROUNDS]
    _start_round(st, tb, i)


@inline_jit
def _mark_voids(st, i, seat):
    """`seat` showed it holds none of the playable values (R9 the pending foot's, else R7 the
    centre's, else R6 every open end's: `play_phase`): mark them in its voids."""
    phase = play_phase(st, i)
    if phase == PHASE_R9:
        st.voids[i, seat, st.foot_value[i]] = True
    elif phase == PHASE_R7:
        st.voids[i, seat, st.center[i]] = True
    else:
        for v in range(st.open_count.shape[1]):
            if st.open_count[i, v] > 0:
                st.voids[i, seat, v] = True


@jit
def apply_action(st, tb, i, action):
    """R8-R11: one (legal) action of game i's seat to move."""
    n = tb.params[P_PLAYERS]
    seat = st.current[i]
    draw = action == tb.params[P_DRAW]
    if draw:
        # The draw adds an unseen tile, so the voids the seat showed before are dropped.
        for v in range(st.voids.shape[2]):
            st.voids[i, seat, v] = False
    if draw or (action == tb.params[P_PASS] and st.drawn_tile[i] < 0):
        _mark_voids(st, i, seat)  # it showed it holds none of the playable values
    ended = False
    if draw:
        tile = _draw(st, tb, i, seat)
        # Variant: one DRAW keeps drawing until a playable tile comes or the boneyard is empty.
        while (tb.params[P_UNTIL] != 0 and st.bone_pos[i] < tb.params[P_TILES]
               and not _fits(st, tb, i, tile)):
            tile = _draw(st, tb, i, seat)
        st.drawn_tile[i] = tile
    elif action == tb.params[P_PASS]:
        st.drawn_tile[i] = -1
        st.current[i] = (seat + 1) % n
    else:
        tile = action >> 1  # action 2t + side (cf_env.core.actions)
        lo, hi = tb.tile_lo[tile], tb.tile_hi[tile]
        attached, free = (hi, lo) if action & 1 else (lo, hi)
        _take(st, tb, i, seat, tile)
        st.on_table[i, tile] = True
        st.played[i, seat, tile] = True
        _place(st, tb, i, tile, attached, free)
        st.drawn_tile[i] = -1
        st.current[i] = (seat + 1) % n
        ended = st.hand_count[i, seat] == 0  # R11: a hand emptied
    if not ended and st.bone_pos[i] >= tb.params[P_TILES]:
        # R11: nobody can place and nobody can draw.
        ended = True
        for other in range(n):
            if _can_place(st, tb, i, other):
                ended = False
                break
    if ended:
        _end_round(st, tb, i)


@jit
def batch_legal(st, tb, out_words):
    """Every game's legal bitset into out_words (N, W) uint64; all zero for a finished game."""
    st, tb, out_words = raw(st), raw(tb), raw(out_words)
    for i in range(st.current.shape[0]):
        legal_into(st, tb, i, out_words)


@jit
def batch_first_illegal(st, tb, actions):
    """The first game i (not over) whose actions[i] is not legal now, or -1 when all are."""
    st, tb, actions = raw(st), raw(tb), raw(actions)
    for i in range(st.current.shape[0]):
        if not st.game_over[i] and not is_legal(st, tb, i, actions[i]):
            return i
    return -1


@jit
def batch_step(st, tb, actions):
    """Apply actions[i] for game i's seat to move, for every game not over. An illegal action
    leaves its game unchanged; returns how many were illegal (0 when all were applied).
    `KernelBatch.step` checks the whole batch first (`batch_first_illegal`), so that a bad
    action there changes no game at all."""
    st, tb, actions = raw(st), raw(tb), raw(actions)
    bad = 0
    for i in range(st.current.shape[0]):
        st.round_ended[i] = False
        if st.game_over[i]:
            continue
        action = actions[i]
        if not is_legal(st, tb, i, action):
            bad += 1
            continue
        apply_action(st, tb, i, action)
    return bad


@jit
def games_first_illegal(st, tb, games, actions):
    """The first j whose actions[j] is not legal in game games[j] (over or not), or -1."""
    st, tb, games, actions = raw(st), raw(tb), raw(games), raw(actions)
    for j in range(games.shape[0]):
        if not is_legal(st, tb, games[j], actions[j]):
            return j
    return -1


@jit
def games_step(st, tb, games, actions):
    """Apply actions[j] in game games[j] (each legal: `games_first_illegal` first), the other
    games untouched; round_ended is set or cleared for the stepped games only."""
    st, tb, games, actions = raw(st), raw(tb), raw(games), raw(actions)
    for j in range(games.shape[0]):
        i = games[j]
        st.round_ended[i] = False
        apply_action(st, tb, i, actions[j])


@jit
def batch_reset(st, tb, games, perms):
    """Start a new game in each of `games` (indices), round 0 dealt from perms[j] for games[j];
    need_perm is raised so that the wrapper draws each game's next permutation."""
    st, tb, games, perms = raw(st), raw(tb), raw(games), raw(perms)
    for j in range(games.shape[0]):
        i = games[j]
        for k in range(st.boneyard.shape[1]):
            st.boneyard[i, k] = perms[j, k]
        _new_game(st, tb, i)


@jit
def _new_game(st, tb, i):
    """A new game in slot i: scores cleared, round 0 dealt from boneyard[i]."""
    for seat in range(st.totals.shape[1]):
        st.totals[i, seat] = 0
        st.zero_rounds[i, seat] = 0
        st.min_nonzero[i, seat] = NO_ROUND
        st.round_points[i, seat] = 0
        st.winners[i, seat] = False
    st.round[i] = 0
    st.rounds_played[i] = 0
    st.round_ended[i] = False
    st.game_over[i] = False
    st.need_perm[i] = True
    _start_round(st, tb, i)


M1 = np.uint64(0x5555555555555555)
M2 = np.uint64(0x3333333333333333)
M4 = np.uint64(0x0F0F0F0F0F0F0F0F)


@inline_jit
def popcount(word):
    """Set bits of a uint64 in a fixed number of steps (SWAR, no multiply: nothing overflows,
    also as plain Python)."""
    word = word - ((word >> ONE) & M1)
    word = (word & M2) + ((word >> np.uint64(2)) & M2)
    word = (word + (word >> np.uint64(4))) & M4
    word = word + (word >> np.uint64(8))
    word = word + (word >> np.uint64(16))
    word = word + (word >> np.uint64(32))
    return int(word & np.uint64(0x7F))


@jit
def count_bits(words, i):
    """Set bits of row i of a (N, W) uint64 bitset array (legal actions, say)."""
    total = 0
    for k in range(words.shape[1]):
        total += popcount(words[i, k])
    return total


@jit
def nth_bit(words, i, pick):
    """The pick-th (0-based) set bit of words[i], ascending; -1 if there are fewer."""
    for k in range(words.shape[1]):
        word = words[i, k]
        here = popcount(word)
        if pick >= here:
            pick -= here
            continue
        for _ in range(pick):
            word &= word - ONE  # drop the lowest set bit
        return 64 * k + popcount((word & (~word + ONE)) - ONE)
    return -1


@jit
def _random_actions(legal_words, uniforms, out):
    """Unchecked kernel of `batch_random_actions`: the int(u * k)-th of each row's k legal
    actions, the pick clamped into [0, k) so that no uniform can name an action outside the
    row."""
    legal_words, uniforms, out = raw(legal_words), raw(uniforms), raw(out)
    for i in range(legal_words.shape[0]):
        total = count_bits(legal_words, i)
        if total == 0:
            out[i] = -1
            continue
        pick = int(uniforms[i] * total)
        out[i] = nth_bit(legal_words, i, min(max(pick, 0), total - 1))


def batch_random_actions(legal_words: np.ndarray, uniforms: np.ndarray,
                         out: np.ndarray | None = None) -> np.ndarray:
    """For each game a uniformly random legal action: the int(u * k)-th of its k legal actions
    in ascending order (u = uniforms[i], in [0, 1)); -1 where none is legal. `legal_words` is
    (N, W) uint64 (`KernelBatch.legal()`, `ChickenFootBatch.legal_words`), `uniforms` (N,)
    float64, `out` an (N,) int64 array to write into (a new one when omitted); returns it.
    Raises `ValueError` naming the argument when a shape, dtype or layout is not that, or a
    uniform is not a finite number in [0, 1)."""
    legal_words = checks.array(legal_words, "legal_words", np.shape(legal_words), np.uint64)
    if legal_words.ndim != 2 or legal_words.shape[1] == 0:
        raise ValueError(f"legal_words must be an (N, W) uint64 array, W >= 1; got shape "
                         f"{legal_words.shape}")
    n = legal_words.shape[0]
    uniforms = checks.array(uniforms, "uniforms", (n,), np.float64)
    if n and not (np.all(uniforms >= 0.0) and np.all(uniforms < 1.0)):  # NaN fails both
        bad = uniforms[~((uniforms >= 0.0) & (uniforms < 1.0))]
        raise ValueError(f"uniforms must be finite numbers in [0, 1); got {bad[:8].tolist()}")
    out = np.empty(n, np.int64) if out is None else checks.array(out, "out", (n,), np.int64,
                                                                 writable=True)
    _random_actions(legal_words, uniforms, out)
    return out


# ---------------------------------------------------------------------------- observations
@inline_jit
def _board(row, base, src, size):
    """row[base:base + size] = src[:size] as 0.0 / 1.0, branch-free, with unsigned indices
    (numba checks every signed index for wraparound, which keeps LLVM from vectorizing the
    loop)."""
    for t in range(np.uint64(size)):  # np.uint64(t): numpy 1.x makes uint64 + int a float
        row[base + np.uint64(t)] = np.float32(src[t])


@inline_jit
def _clear(row, start, stop):
    for j in range(start, stop):
        row[j] = np.float32(0.0)


@jit
def batch_observe(st, tb, ob, seats, out):
    """Every game's observation for seat seats[i] into out (N, observation size) float32,
    exactly `Encoder.observe(engine, seats[i])` (the drawn tile shown only to the seat to move);
    all zero for a finished game. Each count piece is the float64 quotient count / divisor
    rounded to float32, as Encoder writes it; the 0/1 boards are written whole without
    branches, the one-hot pieces cleared first. Offsets are uint64 (ob.starts / ob.stops): a
    signed operand would make a position float64."""
    st, tb, ob, seats, out = raw(st), raw(tb), raw(ob), raw(seats), raw(out)
    start, stop, div = ob.starts, ob.stops, ob.divisors
    n, count, values = tb.params[P_PLAYERS], tb.params[P_TILES], tb.params[P_VALUES]
    one, two, k32 = np.float32(1.0), np.uint64(2), np.uint64(32)
    for i in range(st.current.shape[0]):
        row = out[i]
        if st.game_over[i]:
            _clear(row, np.uint64(0), np.uint64(row.shape[0]))
            continue
        for piece in (O_PLAYABLE, O_FOOT, O_DRAWN, O_ROUND, O_CENTER):  # the one-hot pieces
            _clear(row, start[piece], stop[piece])
        seat = seats[i]
        hand = start[O_HAND]
        for k in range(st.hands.shape[2]):  # tile t is bit 2t: word k holds tiles 32k..32k+31
            word = st.hands[i, seat, k]
            base = hand + k32 * np.uint64(k)
            for b in range(np.uint64(min(32, count - 32 * k))):
                ub = np.uint64(b)
                row[base + ub] = np.float32((word >> (two * ub)) & ONE)
        _board(row, start[O_TABLE], st.on_table[i], count)
        opens = start[O_OPEN]
        for v in range(values):
            row[opens + np.uint64(v)] = np.float32(st.open_count[i, v] / div[O_OPEN])
        foot = st.foot_value[i]
        phase = play_phase(st, i)  # the playable values: R9, else R7, else R6
        if phase == PHASE_R9:
            row[start[O_PLAYABLE] + np.uint64(foot)] = one
            row[start[O_FOOT] + np.uint64(foot)] = one
        elif phase == PHASE_R7:
            row[start[O_PLAYABLE] + np.uint64(st.center[i])] = one
        else:
            playable = start[O_PLAYABLE]
            for v in range(values):
                row[playable + np.uint64(v)] = np.float32(st.open_count[i, v] > 0)
        row[start[O_SPINNER]] = np.float32(st.spinner_empty[i] / div[O_SPINNER])
        row[start[O_TOES]] = np.float32(st.toes_left[i] / div[O_TOES])
        if st.drawn_tile[i] >= 0 and seat == st.current[i]:
            row[start[O_DRAWN] + np.uint64(st.drawn_tile[i])] = one
        row[start[O_BONEYARD]] = np.float32((count - st.bone_pos[i]) / div[O_BONEYARD])
        for k in range(n):  # egocentric: self, then clockwise
            other = seat + k
            if other >= n:
                other -= n
            uk = np.uint64(k)
            row[start[O_SIZES] + uk] = np.float32(st.hand_count[i, other] / div[O_SIZES])
            row[start[O_SCORES] + uk] = np.float32(st.totals[i, other] / div[O_SCORES])
            if k > 0:
                voids = start[O_VOIDS] + (uk - ONE) * np.uint64(values)
                _board(row, voids, st.voids[i, other], values)
                _board(row, start[O_PLAYED] + (uk - ONE) * np.uint64(count), st.played[i, other], count)
        row[start[O_ROUND] + np.uint64(st.round[i])] = one
        row[start[O_CENTER] + np.uint64(st.center[i])] = one


@jit
def batch_privileged(st, tb, pv, seats, out):
    """Every game's privileged vector for seat seats[i] into out (N, privileged size) float32,
    exactly `Encoder.privileged(engine, seats[i])`: the opponents' hands,
    egocentric (left neighbour first, clockwise), then 1 for each tile in the boneyard (neither
    on the table nor in a hand); all zero for a finished game. As batch_observe: unsigned
    positions, every board written whole without branches, the per-game loop inside."""
    st, tb, pv, seats, out = raw(st), raw(tb), raw(pv), raw(seats), raw(out)
    start = pv.starts
    n, count = tb.params[P_PLAYERS], tb.params[P_TILES]
    two, k32, ucount = np.uint64(2), np.uint64(32), np.uint64(count)
    hands, bone = start[V_HANDS], start[V_BONEYARD]
    for i in range(st.current.shape[0]):
        row = out[i]
        if st.game_over[i]:
            _clear(row, np.uint64(0), np.uint64(row.shape[0]))
            continue
        seat = seats[i]
        for k in range(st.hands.shape[2]):  # tile t is bit 2t: word k holds tiles 32k..32k+31
            tiles = k32 * np.uint64(k)
            width = np.uint64(min(32, count - 32 * k))
            held = st.hands[i, seat, k]
            for o in range(1, n):
                other = seat + o
                if other >= n:
                    other -= n
                word = st.hands[i, other, k]
                held |= word
                base = hands + np.uint64(o - 1) * ucount + tiles
                for b in range(width):
                    ub = np.uint64(b)
                    row[base + ub] = np.float32((word >> (two * ub)) & ONE)
            base = bone + tiles
            for b in range(width):
                ub = np.uint64(b)
                seen = ((held >> (two * ub)) & ONE) | np.uint64(st.on_table[i, tiles + ub])
                row[base + ub] = np.float32(seen ^ ONE)


# ---------------------------------------------------------------------------- Python wrapper
def write_position(st: KernelState, i: int, p: Position) -> None:
    """Make game i of `st` the validated position `p` (`cf_env.core.snapshot.read`): every field
    of the game, the R13 aggregates from the per-round scores, the layout from the arms; then
    `sync_game` (or `one_game`'s OP_SYNC) rebuilds what follows from the hands and the open ends. The one
    writer of a position: `Engine.restore` and `KernelBatch.load_position` use it."""
    for array in st:  # nothing of the slot's old game stays
        array[i] = 0
    st.foot_value[i] = st.drawn_tile[i] = st.foot_arm[i] = -1
    st.arm_parent[i] = st.arm_tip[i] = st.tile_arm[i] = -1
    for name in ("current", "round", "center", "start_seat", "drawn_tile", "foot_value",
                 "toes_left", "spinner_empty", "foot_arm", "game_over"):
        getattr(st, name)[i] = getattr(p, name)
    st.open_count[i] = p.open_count
    count = st.boneyard.shape[1]
    stock = p.boneyard[::-1]  # the position lists the next tile drawn last
    st.bone_pos[i] = count - len(stock)
    st.boneyard[i, count - len(stock):] = stock
    for seat, rounds in enumerate(p.scores):  # R13 reads these aggregates
        st.totals[i, seat] = sum(rounds)
        st.zero_rounds[i, seat] = rounds.count(0)
        st.min_nonzero[i, seat] = min((r for r in rounds if r), default=NO_ROUND)
        st.round_points[i, seat] = rounds[-1] if rounds else 0
        st.winners[i, seat] = seat in p.winners
    st.rounds_played[i] = len(p.scores[0])
    st.held[i], st.on_table[i], st.played[i], st.voids[i] = (
        p.hands, p.on_table, p.played_by, p.voids)
    st.arm_count[i] = len(p.arms)
    for index, arm in enumerate(p.arms):
        st.arm_parent[i, index], st.arm_tip[i, index] = arm.parent, arm.tip
        st.arm_len[i, index] = len(arm.tiles)
        for place, (tile, attached) in enumerate(arm.tiles):
            st.tile_arm[i, tile], st.tile_pos[i, tile] = index, place
            st.tile_attached[i, tile] = attached


class KernelBatch:
    """N games of one config: the state, the tables, and one `np.random.Generator` per game that
    supplies each round's shuffle exactly as `Engine(config, seed=s)` draws it."""

    def __init__(self, config: ChickenFootConfig, num_games: int):
        """`num_games` games of `config`, none started (`reset` them). Raises `ValueError`
        before allocating anything when `num_games` is not an int in [1, max_games(config)]
        (`cf_env.core.checks`: a memory cap)."""
        if not isinstance(config, ChickenFootConfig):
            raise ValueError(f"config must be a ChickenFootConfig; got {type(config).__name__}")
        num_games = checks.size(num_games, "num_games", max_games(config),
                                f"a game of this config holds {batch_bytes_per_game(config)} "
                                f"bytes; a batch is capped at {checks.MAX_BATCH_BYTES // 2**30} GiB")
        self.config = config
        self.num_games = num_games
        self.tables = kernel_tables(config)
        self.state = new_state(config, num_games)
        self.legal_words = np.zeros((num_games, num_words(config)), np.uint64)
        self.obs_tables = obs_tables(config)
        self.observations = np.zeros((num_games, self.obs_tables.size), np.float32)
        self.priv_tables = priv_tables(config)
        self.privileged_rows = np.zeros((num_games, self.priv_tables.size), np.float32)
        self.rngs: list[np.random.Generator | None] = [None] * num_games
        # Each game's next shuffles, drawn a game's rounds at a time: one `permuted` call over
        # R rows of 0..T-1 draws exactly what R successive `permutation(T)` calls draw (the
        # same shuffle per row, in row order), at a third of the cost.
        rounds, count = config.num_rounds, config.num_tiles
        self._rows = np.tile(np.arange(count, dtype=np.uint8), (rounds, 1))
        self._ahead = np.zeros((num_games, rounds, count), np.uint8)
        self._ahead_pos = np.full(num_games, rounds, np.int64)  # rows used; = rounds: none left

    def reset(self, seeds, games=None) -> None:
        """Start new games seeded `seeds` (one per game in `games`, distinct indices; all games
        by default; each seed None or an int in [0, 2**128)). All or nothing: `ValueError`
        naming the argument, and no game changed, when an index or a seed is not valid."""
        games = (np.arange(self.num_games) if games is None
                 else checks.indices(games, "games", self.num_games))
        seeds = checks.seeds(seeds, len(games))
        count = self.config.num_tiles
        perms = np.empty((len(games), count), np.int32)
        rngs = [np.random.default_rng(seed) for seed in seeds]
        ahead = np.stack([rng.permuted(self._rows, axis=1) for rng in rngs]) if rngs else None
        # Nothing below can fail: every game changes, or (above) none.
        for j, game in enumerate(games.tolist()):
            self.rngs[game] = rngs[j]
            self._ahead[game] = ahead[j]
            perms[j] = ahead[j, 0]  # R3/R4: round 0's shuffle, as Engine.reset draws it
        self._ahead_pos[games] = 1
        batch_reset(self.state, self.tables, games, perms)
        self.refill()

    def refill(self) -> None:
        """Give every game whose `next_perm` was used its next round's permutation: after
        anything that can end a round outside `step` (`cf_env.agents.kernel_bots.batch_advance`),
        before the next round can end."""
        need = self.state.need_perm
        if need.any():
            games = np.flatnonzero(need)
            rounds = self._rows.shape[0]
            for game in games[self._ahead_pos[games] >= rounds].tolist():  # only with target_score
                self._ahead[game] = self.rngs[game].permuted(self._rows, axis=1)
                self._ahead_pos[game] = 0
            self.state.next_perm[games] = self._ahead[games, self._ahead_pos[games]]
            self._ahead_pos[games] += 1
            need[games] = False

    def load(self, game: int, engine) -> None:
        """Make game `game` the position `engine` (an `Engine` of the same config, a round in
        play or a finished game) is in, its later rounds dealt by a copy of the engine's RNG:
        scenario tests build a position once (tests/positions.py) and play it in both. All or
        nothing: `ValueError`, no game changed, for a bad index, another config, or an engine
        stopped between rounds."""
        game = checks.index(game, "game", self.num_games)
        if not isinstance(getattr(engine, "game", None), GameBuffer):  # an Engine's own game
            raise ValueError(f"load: engine must be an Engine; got {type(engine).__name__}")
        if engine.config != self.config:
            raise ValueError("load: the engine's config differs from the batch's")
        if engine.between_rounds:
            raise ValueError("load: the engine is between rounds; deal_next() first")
        one = engine.game.state  # the engine's game is a batch of one in the same layout
        rng = np.random.default_rng()
        rng.bit_generator.state = engine.rng.bit_generator.state
        for name, source in zip(KernelState._fields, one, strict=True):
            getattr(self.state, name)[game] = source[0]
        st = self.state
        st.round_ended[game] = False
        self.rngs[game] = rng
        self._ahead_pos[game] = self._rows.shape[0]  # draw the next shuffles from the copy
        st.need_perm[game] = True
        self.refill()

    def load_position(self, game: int, position: Position) -> None:
        """Make game `game` a validated position (`cf_env.core.snapshot.read` of a snapshot of
        this config), its later rounds dealt by the position's RNG, or by the game's own where
        the snapshot had none (`write_position`). All or nothing: `ValueError`, no game changed,
        for a bad index, another config's position, or no RNG at all."""
        from cf_env.core.snapshot import Position  # (the snapshot format imports no kernel)

        game = checks.index(game, "game", self.num_games)
        if not isinstance(position, Position) or position.hands.shape != self.state.held.shape[1:]:
            raise ValueError("load_position: position must be a Position of this config "
                             "(cf_env.core.snapshot.read)")
        rng = self.rngs[game]  # a position without an RNG state deals on from this game's
        if position.rng is None and rng is None:
            raise ValueError(f"load_position: the position has no RNG state (its snapshot had no "
                             f"'rng') and game {game} has never been reset to deal from its own")
        if position.rng is not None:
            rng = np.random.default_rng()
            rng.bit_generator.state = position.rng.bit_generator.state
        write_position(self.state, game, position)
        sync_game(self.state, self.tables, game)
        self.rngs[game] = rng
        self._ahead_pos[game] = self._rows.shape[0]  # draw the next shuffles from the copy
        self.state.need_perm[game] = True
        self.refill()

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays: the games' state, the tables, the output buffers and the queued
        shuffles (the per-game Generators are Python objects beside)."""
        arrays = [*self.state, *self.tables, self.legal_words, self.observations,
                  self.privileged_rows, self._rows, self._ahead, self._ahead_pos,
                  *self.obs_tables[:3], *self.priv_tables[:2]]
        return int(sum(a.nbytes for a in arrays))

    def legal(self) -> np.ndarray:
        """(N, W) uint64 legal bitsets (`Engine.legal_bits` per game)."""
        batch_legal(self.state, self.tables, self.legal_words)
        return self.legal_words

    def observe(self, out: np.ndarray | None = None, seats: np.ndarray | None = None) -> np.ndarray:
        """(N, observation size) float32: each game's observation for its seat to move, or for
        seats[i] when given (`Encoder.observe(engine, seat)`; zeros for a finished game),
        written into `out` when given (C-contiguous, that shape and dtype), else into the
        batch's own buffer (overwritten by the next call)."""
        out = _rows_out(out, self.observations)
        batch_observe(self.state, self.tables, self.obs_tables, self._seats(seats), out)
        return out

    def privileged(self, out: np.ndarray | None = None,
                   seats: np.ndarray | None = None) -> np.ndarray:
        """(N, privileged size) float32: each game's privileged vector for its seat to move, or
        for seats[i] when given (`Encoder.privileged(engine, seat)`; zeros for a finished
        game), written into `out` when given (C-contiguous, that shape and dtype), else into
        the batch's own buffer (overwritten by the next call)."""
        out = _rows_out(out, self.privileged_rows)
        batch_privileged(self.state, self.tables, self.priv_tables, self._seats(seats), out)
        return out

    def _seats(self, seats: np.ndarray | None) -> np.ndarray:
        if seats is None:
            return self.state.current
        seats = np.asarray(seats)
        players = self.config.num_players
        if (seats.shape != (self.num_games,) or seats.dtype.kind not in "iu"
                or (seats.size and (seats.min() < 0 or seats.max() >= players))):
            raise ValueError(f"seats must be an integer array of shape ({self.num_games},) with "
                             f"values in [0, {players}); got {seats.dtype} {seats.shape}")
        return seats.astype(np.int32, copy=False)

    def step(self, actions: np.ndarray) -> None:
        """One action per game (ignored for finished games): an integer array of shape (N,).

        Raises `ValueError` for another shape or dtype, and `IllegalActionError` naming the first
        game whose action is not legal and that game's legal actions; either way no game has
        changed."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_games,) or actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be an integer array of shape ({self.num_games},); "
                             f"got {actions.dtype} {actions.shape}")
        given, actions = actions, _as_action_ids(actions)
        game = batch_first_illegal(self.state, self.tables, actions)
        if game >= 0:
            batch_legal(self.state, self.tables, self.legal_words)
            legal = actions_in(words_to_int(self.legal_words[game]))
            raise IllegalActionError(f"game {game}: action {int(given[game])} is not legal for "
                                     f"seat {int(self.state.current[game])}; legal: {legal}; no "
                                     "game of the batch was changed")
        batch_step(self.state, self.tables, actions)
        self.refill()

    def step_games(self, games: np.ndarray, actions: np.ndarray) -> None:
        """One action for each game of `games` (distinct indices of games not over), the others
        untouched: the drivers that step only the games waiting for them (bots or a network
        seat in some games, `cf_env.agents.kernel_bots.batch_advance`). The same checks as
        `step`: a bad game index or action raises, no game changed."""
        games, actions = np.asarray(games), np.asarray(actions)
        if (games.ndim != 1 or actions.shape != games.shape or games.dtype.kind not in "iu"
                or actions.dtype.kind not in "iu"):
            raise ValueError("games and actions must be integer arrays of one shape (k,); got "
                             f"{games.dtype} {games.shape} and {actions.dtype} {actions.shape}")
        games = checks.indices(games, "games", self.num_games)
        given, actions = actions, _as_action_ids(actions)
        j = games_first_illegal(self.state, self.tables, games, actions)
        if j >= 0:
            game = int(games[j])
            if self.state.game_over[game]:
                raise IllegalActionError(f"game {game} is over: no action is legal; no game of "
                                         "the batch was changed")
            batch_legal(self.state, self.tables, self.legal_words)
            legal = actions_in(words_to_int(self.legal_words[game]))
            raise IllegalActionError(f"game {game}: action {int(given[j])} is not legal for "
                                     f"seat {int(self.state.current[game])}; legal: {legal}; no "
                                     "game of the batch was changed")
        games_step(self.state, self.tables, games, actions)
        self.refill()

    def legal_mask(self) -> np.ndarray:
        """(N, num_actions) bool masks of the legal actions."""
        raw = self.legal().view(np.uint8)  # little-endian words: bit a of byte a // 8
        bits = np.unpackbits(raw.reshape(self.num_games, -1), axis=1, bitorder="little")
        return bits[:, : self.config.num_actions].astype(bool)


def _rows_out(out: np.ndarray | None, own: np.ndarray) -> np.ndarray:
    """Where `KernelBatch.observe`/`privileged` write: `own` (the batch's buffer), or `out` if it
    is a C-contiguous writable float32 array of `own`'s shape (else `ValueError`)."""
    return own if out is None else checks.array(out, "out", own.shape, np.float32, writable=True)


def _as_action_ids(actions: np.ndarray) -> np.ndarray:
    """Integer actions as int64 for the kernel, any value past the largest action id (a uint64
    above 2**63 included, which a cast would wrap to a negative id) mapped to -1: illegal."""
    if actions.dtype == np.uint64:
        return np.where(actions > np.uint64(2**62), -1, actions).astype(np.int64)
    return actions.astype(np.int64, copy=False)


# ---------------------------------------------------------------------------- one game, packed
# `Engine` steps one game at a time from Python, where numba's check of every array handed in
# (each array of a KernelState and its KernelTables) would cost more than the rules. So one game lives in a single int64 buffer (its KernelState as a batch of one, then its
# legal words) and its tables in another; each buffer begins with its arrays' offsets, and the
# one_* entry points rebuild the same KernelState and KernelTables from the two buffers in
# compiled code, at no cost worth measuring, before calling the batch's own functions on game 0.
# Python reads and writes the game through numpy views over the same buffer (`GameBuffer`).


def _pack(arrays, first=()) -> tuple[np.ndarray, list[np.ndarray]]:
    """One int64 buffer holding copies of `arrays` (header: each array's offset in words), and
    views over it shaped as the arrays. The arrays whose indices are in `first` are laid first
    (a game's state scalars: each then lies at the same place whatever the config,
    `GameBuffer.SCALAR_AT`)."""
    offsets, at = [0] * len(arrays), len(arrays)
    for k in [*first, *(k for k in range(len(arrays)) if k not in first)]:
        offsets[k] = at
        at += (arrays[k].nbytes + 7) // 8
    buffer = np.zeros(at, np.int64)
    buffer[: len(arrays)] = offsets
    views = []
    for a, start in zip(arrays, offsets, strict=True):
        view = buffer[start : start + (a.nbytes + 7) // 8].view(a.dtype)[: a.size].reshape(a.shape)
        view[...] = a
        views.append(view)
    return buffer, views


class GameBuffer:
    """One game's `KernelState` (a batch of one) packed in `buffer` with its legal words and a
    seat for `one_observe`; its tables (`kernel_tables(config, deal_at_end=False)`: the game
    stops at each round's end for its wrapper to deal) and observation tables in
    `table_buffer`, shared by every game of the config. `state`, `legal_words` and `tables` are
    numpy views over the buffers. Copying `buffer` copies the whole game."""

    __slots__ = ("buffer", "legal_words", "observation_size", "state", "table_buffer", "tables")

    # Each state scalar's int32 index in `buffer` (viewed as int32; a bool reads 0 or 1): what
    # the engine reads its scalars by, from a memoryview, at a fraction of a numpy item's cost.
    SCALAR_AT = {f.name: 2 * (len(STATE_FIELDS) + 2 + k)
                 for k, f in enumerate(f for f in STATE_FIELDS if not f.dims)}

    def __init__(self, config: ChickenFootConfig, copy_of: GameBuffer | None = None):
        """A game not yet dealt (deal it with `one_game`'s OP_NEW_GAME), or a copy of `copy_of`'s."""
        self.table_buffer, self.tables, template, specs, self.observation_size = (
            _game_layout(config))
        self.buffer = (template if copy_of is None else copy_of.buffer).copy()
        views = [self.buffer[self.buffer[k] : self.buffer[k] + words].view(dtype)[:size]
                 .reshape(shape) for k, (dtype, shape, size, words) in enumerate(specs)]
        self.state, self.legal_words = KernelState(*views[:-2]), views[-2]


@functools.lru_cache(maxsize=32)
def _game_layout(config: ChickenFootConfig):
    """Per config, built once: the packed tables (shared: the compiled code never writes them),
    an undealt game's buffer to copy, and each packed array's (dtype, shape, size, words)."""
    ob = obs_tables(config)
    table_buffer, tables = _pack([*kernel_tables(config, deal_at_end=False, layout=True),
                                  ob.starts, ob.stops,
                                  ob.divisors])
    arrays = [*new_state(config, 1), np.zeros((1, num_words(config)), np.uint64),
              np.zeros(1, np.int32)]
    scalars = [k for k, f in enumerate(STATE_FIELDS) if not f.dims]
    template, _ = _pack(arrays, first=scalars)
    for name, at in GameBuffer.SCALAR_AT.items():  # what the engine's scalar reads rely on
        assert 2 * template[KernelState._fields.index(name)] == at, name
    specs = [(a.dtype, a.shape, a.size, (a.nbytes + 7) // 8) for a in arrays]
    return (table_buffer, KernelTables(*tables[: len(KernelTables._fields)]), template, specs,
            ob.size)


@inline_jit
def _i32(buf, k, shape):
    return view(buf, buf[k], np.int32, shape)


@inline_jit
def _u64(buf, k, shape):
    return view(buf, buf[k], np.uint64, shape)


@inline_jit
def _bools(buf, k, shape):
    return view(buf, buf[k], np.bool_, shape)


@inline_jit
def _i64(buf, k, shape):
    return view(buf, buf[k], np.int64, shape)


# Where each array of a game lies in a GameBuffer's header, by the state field's name (a new
# field shifts nothing here): its index in KernelState; then the legal words and the seat that
# `one_observe` writes for.
_FIELD = {name: k for k, name in enumerate(KernelState._fields)}
_S_HANDS = _FIELD["hands"]
_S_HAND_COUNT = _FIELD["hand_count"]
_S_HAND_POINTS = _FIELD["hand_points"]
_S_OPEN_COUNT = _FIELD["open_count"]
_S_OPEN_ATTACH = _FIELD["open_attach"]
_S_SPINNER_EMPTY = _FIELD["spinner_empty"]
_S_CENTER = _FIELD["center"]
_S_FOOT_VALUE = _FIELD["foot_value"]
_S_TOES_LEFT = _FIELD["toes_left"]
_S_BONEYARD = _FIELD["boneyard"]
_S_BONE_POS = _FIELD["bone_pos"]
_S_DRAWN_TILE = _FIELD["drawn_tile"]
_S_CURRENT = _FIELD["current"]
_S_START_SEAT = _FIELD["start_seat"]
_S_ROUND = _FIELD["round"]
_S_ROUNDS_PLAYED = _FIELD["rounds_played"]
_S_ROUND_POINTS = _FIELD["round_points"]
_S_ROUND_ENDED = _FIELD["round_ended"]
_S_TOTALS = _FIELD["totals"]
_S_ZERO_ROUNDS = _FIELD["zero_rounds"]
_S_MIN_NONZERO = _FIELD["min_nonzero"]
_S_GAME_OVER = _FIELD["game_over"]
_S_WINNERS = _FIELD["winners"]
_S_NEXT_PERM = _FIELD["next_perm"]
_S_NEED_PERM = _FIELD["need_perm"]
_S_ON_TABLE = _FIELD["on_table"]
_S_PLAYED = _FIELD["played"]
_S_VOIDS = _FIELD["voids"]
_S_HELD = _FIELD["held"]
_S_ARM_COUNT = _FIELD["arm_count"]
_S_ARM_PARENT = _FIELD["arm_parent"]
_S_ARM_TIP = _FIELD["arm_tip"]
_S_ARM_LEN = _FIELD["arm_len"]
_S_FOOT_ARM = _FIELD["foot_arm"]
_S_TILE_ARM = _FIELD["tile_arm"]
_S_TILE_POS = _FIELD["tile_pos"]
_S_TILE_ATTACHED = _FIELD["tile_attached"]
_S_LEGAL = len(KernelState._fields)
_S_SEAT = _S_LEGAL + 1


@inline_jit
def _unpack(sb, tbuf):
    """The KernelState, KernelTables and legal words (1, W) that `GameBuffer` packed, as views
    of the two buffers (RawArrays: `sb` and `tbuf` are the raw buffers)."""
    params = _i64(tbuf, 6, (NUM_PARAMS,))
    p, t, v, w = params[P_PLAYERS], params[P_TILES], params[P_VALUES], params[P_WORDS]
    a = params[P_ARMS] + params[P_TOES] * v  # max_arms
    tb = KernelTables(
        tile_bits=_u64(tbuf, 0, (t, w)),
        attach_bits=_u64(tbuf, 1, (v, w)),
        tile_lo=_i32(tbuf, 2, (t,)),
        tile_hi=_i32(tbuf, 3, (t,)),
        points=_i32(tbuf, 4, (t,)),
        double_id=_i32(tbuf, 5, (v,)),
        params=params,
    )
    st = KernelState(
        hands=_u64(sb, _S_HANDS, (1, p, w)),
        hand_count=_i32(sb, _S_HAND_COUNT, (1, p)),
        hand_points=_i32(sb, _S_HAND_POINTS, (1, p)),
        open_count=_i32(sb, _S_OPEN_COUNT, (1, v)),
        open_attach=_u64(sb, _S_OPEN_ATTACH, (1, w)),
        spinner_empty=_i32(sb, _S_SPINNER_EMPTY, (1,)),
        center=_i32(sb, _S_CENTER, (1,)),
        foot_value=_i32(sb, _S_FOOT_VALUE, (1,)),
        toes_left=_i32(sb, _S_TOES_LEFT, (1,)),
        boneyard=_i32(sb, _S_BONEYARD, (1, t)),
        bone_pos=_i32(sb, _S_BONE_POS, (1,)),
        drawn_tile=_i32(sb, _S_DRAWN_TILE, (1,)),
        current=_i32(sb, _S_CURRENT, (1,)),
        start_seat=_i32(sb, _S_START_SEAT, (1,)),
        round=_i32(sb, _S_ROUND, (1,)),
        rounds_played=_i32(sb, _S_ROUNDS_PLAYED, (1,)),
        round_points=_i32(sb, _S_ROUND_POINTS, (1, p)),
        round_ended=_bools(sb, _S_ROUND_ENDED, (1,)),
        totals=_i64(sb, _S_TOTALS, (1, p)),
        zero_rounds=_i32(sb, _S_ZERO_ROUNDS, (1, p)),
        min_nonzero=_i64(sb, _S_MIN_NONZERO, (1, p)),
        game_over=_bools(sb, _S_GAME_OVER, (1,)),
        winners=_bools(sb, _S_WINNERS, (1, p)),
        next_perm=_i32(sb, _S_NEXT_PERM, (1, t)),
        need_perm=_bools(sb, _S_NEED_PERM, (1,)),
        on_table=_bools(sb, _S_ON_TABLE, (1, t)),
        played=_bools(sb, _S_PLAYED, (1, p, t)),
        voids=_bools(sb, _S_VOIDS, (1, p, v)),
        held=_bools(sb, _S_HELD, (1, p, t)),
        arm_count=_i32(sb, _S_ARM_COUNT, (1,)),
        arm_parent=_i32(sb, _S_ARM_PARENT, (1, a)),
        arm_tip=_i32(sb, _S_ARM_TIP, (1, a)),
        arm_len=_i32(sb, _S_ARM_LEN, (1, a)),
        foot_arm=_i32(sb, _S_FOOT_ARM, (1,)),
        tile_arm=_i32(sb, _S_TILE_ARM, (1, t)),
        tile_pos=_i32(sb, _S_TILE_POS, (1, t)),
        tile_attached=_i32(sb, _S_TILE_ATTACHED, (1, t)),
    )
    return st, tb, _u64(sb, _S_LEGAL, (1, w))


# What `one_game` does to the engine's game (its `op`): one compiled entry point for the four,
# so that the packed state's views and the rules they call are compiled once, not four times.
OP_NEW_GAME, OP_DEAL_AGAIN, OP_DEAL_NEXT, OP_STEP, OP_SYNC = range(5)


@jit
def one_game(sb, tbuf, op, action):
    """The engine's game (`GameBuffer`), then its legal words:
    OP_NEW_GAME: a new game, round 0 dealt from the state's boneyard (the round's permutation);
    OP_DEAL_AGAIN / OP_DEAL_NEXT: deal the current round again (an external deal before its
    first decision) or the next round (R4) from the state's boneyard;
    OP_SYNC: `sync_game` after the hands or open ends were written from outside;
    OP_STEP: apply `action` if it is legal. Returns -1 when it is not (nothing changed), else
    a code for the engine's records: bit 0 the move ended a round (the game is then over, or
    waits for a deal); bits 1-2 the phase of play it was made in (PHASE_*, `play_phase`);
    bit 3 it filled the pending foot (R10); bits 4-9 the seat that moved; the bits from 10 the
    round it was made in. The other ops return 0."""
    st, tb, legal = _unpack(raw(sb), raw(tbuf))
    game = np.int64(0)  # not the literal 0: the helpers are then the batch's compilations
    code = 0
    if op == OP_STEP:
        if not is_legal(st, tb, game, action):
            return -1
        phase = play_phase(st, 0)
        code = (st.round[0] << 10) | (st.current[0] << 4) | (phase << 1)
        st.round_ended[0] = False
        apply_action(st, tb, game, action)
        if phase == PHASE_R9 and st.foot_value[0] < 0:
            code |= 8
        if st.round_ended[0]:
            code |= 1
    elif op == OP_SYNC:
        sync_game(st, tb, game)
    else:
        if op == OP_NEW_GAME:
            _new_game(st, tb, game)
        elif op == OP_DEAL_NEXT:
            next_round(st, tb, game)
        else:
            _start_round(st, tb, game)
        st.round_ended[0] = False
        st.need_perm[0] = False
    legal_into(st, tb, game, legal)
    return code


@jit
def one_placement(sb, tbuf, action, out):
    """`placement_into` for the game: where tile action `action` lays its tile now."""
    st, tb, _ = _unpack(raw(sb), raw(tbuf))
    game = np.int64(0)
    return placement_into(st, tb, game, action, raw(out))


@jit
def one_playable(sb, tbuf, out):
    """The values a tile may be attached to now (by `play_phase`) into out[:count]; returns count."""
    st, tb, _ = _unpack(raw(sb), raw(tbuf))
    out = raw(out)
    phase = play_phase(st, 0)
    if phase == PHASE_R9:
        out[0] = st.foot_value[0]
        return 1
    if phase == PHASE_R7:
        out[0] = st.center[0]
        return 1
    count = 0
    for value in range(st.open_count.shape[1]):
        if st.open_count[0, value] > 0:
            out[count] = value
            count += 1
    return count


@jit
def sync_game(st, tb, i):
    """After game i's hands (`held`) or open ends (`open_count`) were written from outside (a
    position written, a re-deal): rebuild what follows from them (the hands' bits, sizes and
    points, the open ends' attach bits)."""
    for seat in range(tb.params[P_PLAYERS]):
        for k in range(st.hands.shape[2]):
            st.hands[i, seat, k] = ZERO
        st.hand_count[i, seat] = 0
        st.hand_points[i, seat] = 0
        for tile in range(tb.params[P_TILES]):
            if st.held[i, seat, tile]:
                _give(st, tb, i, seat, tile)
    for k in range(st.open_attach.shape[1]):
        st.open_attach[i, k] = ZERO
    for value in range(tb.params[P_VALUES]):
        if st.open_count[i, value] > 0:
            for k in range(st.open_attach.shape[1]):
                st.open_attach[i, k] |= tb.attach_bits[value, k]


@jit
def one_observe(sb, tbuf, seat, out):
    """The game's observation for `seat` into out (observation size,) float32, exactly as
    `batch_observe` writes it."""
    buffer, tables = raw(sb), raw(tbuf)
    st, tb, _ = _unpack(buffer, tables)
    seats = _i32(buffer, _S_SEAT, (1,))
    seats[0] = seat
    n = len(OBS_PIECES)
    ob = ObsTables(_u64(tables, 7, (n,)), _u64(tables, 8, (n,)),
                   view(tables, tables[9], np.float64, (n,)), 0)
    row = raw(out)
    batch_observe(st, tb, ob, seats, reshape(row, (1, row.shape[0])))
    seats[0] = 0  # the buffer is the game: equal games have equal buffers (pickles, copies)
