"""The baseline bots in compiled code, and `batch_advance`: play every game of a kernel batch
(`cf_env.core.kernel`) until a seat the caller plays must choose.

Seat kinds (`seat_kind[i, seat]`, int8): `OUTSIDE` (0) is a seat the caller plays (a learner, a
network, a person); `RANDOM`, `GREEDY` and `HEURISTIC` are the bots of cf_env/agents/bots.py,
choosing as `RandomPolicy`, `GreedyPolicy` and `HeuristicPolicy` choose: the same legal actions
are best (tests/agents/test_kernel_bots.py checks the heuristic's scores, to 1e-9, against
`HeuristicPolicy.scores` on the decoded observation of every decision of random games). Only ties
are broken differently: by a splitmix64 stream per game (`bot_rng[i]`, uint64, seeded by the
caller) instead of numpy Generators, so a compiled bot plays the same moves as its Python twin
wherever no tie is broken. The bots read the state only where the seat's own observation does:
its hand, the table, the open ends, the pending foot and spinner, the hand sizes and the voids
the others showed (R8) — never another hand or the boneyard.

`batch_advance(st, tb, weights, seat_kind, bot_rng, skip_forced, legal_out, stop, scores, counts)`
loops over the games; in each it plays bot seats (and, with skip_forced, any decision that has exactly one
legal action) until one of these, written to stop[i]:

* `WAITING`     — an outside seat must choose; legal_out[i] holds its legal bitset;
* `ROUND_ENDED` — the last action ended a round (its points are in round_points; the next round is
  dealt unless game_over[i]): the caller pays rewards and, if need_perm, hands the next shuffle,
  then calls again (so no second round can end before the wrapper has seen the first);
* `GAME_OVER`   — the game was over before the call; nothing was played.

`weights` is `heuristic_weights()`: HeuristicPolicy's constants, read from the class so that they
are stated once; `scores` and `counts` are the bots' scratch (`bot_scratch(config)`: the compiled
code allocates nothing, see cf_env/core/kernel.py's "Compilation").
"""

from __future__ import annotations

import numpy as np

from cf_env.agents.bots import HeuristicPolicy
from cf_env.core.kernel import (
    ONE,
    P_DRAW,
    P_PLAYERS,
    P_TOES,
    PHASE_R6,
    ZERO,
    apply_action,
    count_bits,
    inline_jit,
    jit,
    legal_into,
    nth_bit,
    play_phase,
)
from cf_env.core.raw import raw

OUTSIDE, RANDOM, GREEDY, HEURISTIC = 0, 1, 2, 3
BOT_KINDS = {"random": RANDOM, "greedy": GREEDY, "heuristic": HEURISTIC}
WAITING, ROUND_ENDED, GAME_OVER = 0, 1, 2

# Index of each of HeuristicPolicy's constants in `heuristic_weights()`.
H_DANGER, H_FOLLOW, H_KEEP, H_VOID_END, H_DOUBLE, H_FOOT_VOID, H_FOOT_HELD, H_FOOT_ALONE = range(8)
_WEIGHT_NAMES = ("DANGER_TILES", "W_FOLLOW", "W_KEEP", "W_VOID_END", "W_DOUBLE", "W_FOOT_VOID",
                 "W_FOOT_HELD", "W_FOOT_ALONE")
TIE = 1e-9  # HeuristicPolicy.act: scores within this of the best are tied


def bot_scratch(config) -> tuple[np.ndarray, np.ndarray]:
    """The scratch arrays `batch_advance` and the score functions write: (num_actions,) float64
    scores and (3, values) int64 counts."""
    return (np.zeros(config.num_actions, np.float64),
            np.zeros((3, config.max_pips + 1), np.int64))


def heuristic_weights() -> np.ndarray:
    """HeuristicPolicy's constants as the float64 array `batch_advance` reads."""
    return np.array([getattr(HeuristicPolicy, name) for name in _WEIGHT_NAMES], np.float64)


# splitmix64 works modulo 2**64. Compiled uint64 arithmetic wraps silently, but numpy's uint64
# scalars (the same code under NUMBA_DISABLE_JIT=1) warn on every overflow, an error under
# `python -W error`; so the sums and products are built from 32-bit halves, none of which can
# overflow: the same values either way, without a warning.
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


@inline_jit
def add64(a, b):
    """(a + b) mod 2**64 of two uint64, with no intermediate overflow."""
    lo = (a & _LOW32) + (b & _LOW32)
    hi = (a >> _SHIFT32) + (b >> _SHIFT32) + (lo >> _SHIFT32)
    return ((hi & _LOW32) << _SHIFT32) | (lo & _LOW32)


@inline_jit
def mul64(a, b):
    """(a * b) mod 2**64 of two uint64, with no intermediate overflow."""
    a_lo, a_hi = a & _LOW32, a >> _SHIFT32
    b_lo, b_hi = b & _LOW32, b >> _SHIFT32
    cross = (((a_hi * b_lo) & _LOW32) + ((a_lo * b_hi) & _LOW32)) & _LOW32
    return add64(a_lo * b_lo, cross << _SHIFT32)


@jit
def next_uniform(bot_rng, i):
    """splitmix64 step of game i's stream: a float in [0, 1) with 53 random bits."""
    bot_rng = raw(bot_rng)
    x = add64(bot_rng[i], np.uint64(0x9E3779B97F4A7C15))
    bot_rng[i] = x
    z = mul64(x ^ (x >> np.uint64(30)), np.uint64(0xBF58476D1CE4E5B9))
    z = mul64(z ^ (z >> np.uint64(27)), np.uint64(0x94D049BB133111EB))
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@jit
def _has(words, i, action):
    return (words[i, action >> 6] >> np.uint64(action & 63)) & ONE != ZERO


@jit
def _lowest(words, i):
    return nth_bit(words, i, 0)


@jit
def greedy_scores(st, tb, i, legal, out):
    """GreedyPolicy's value of every action of game i: the tile's points (R12) for a legal
    placement, -1.0 for a legal DRAW or PASS, -inf where illegal."""
    draw = tb.params[P_DRAW]
    for a in range(out.shape[0]):
        if not _has(legal, i, a):
            out[a] = -np.inf
        elif a < draw:
            out[a] = float(tb.points[a >> 1])
        else:
            out[a] = -1.0


@jit
def heuristic_scores(st, tb, weights, i, legal, out, counts):
    """HeuristicPolicy.scores for every legal placement of game i's seat to move (-inf for the
    other actions), from what that seat's observation holds (see the module docstring)."""
    n = tb.params[P_PLAYERS]
    draw = tb.params[P_DRAW]
    toes = tb.params[P_TOES]
    seat = st.current[i]
    values = st.open_count.shape[1]
    num_tiles = st.on_table.shape[1]
    held, unseen, opp_void = counts[0], counts[1], counts[2]
    for v in range(values):
        held[v] = 0
        unseen[v] = 0
        opp_void[v] = 0
    smallest = 1 << 30
    for other in range(n):
        if other == seat:
            continue
        if st.hand_count[i, other] < smallest:
            smallest = st.hand_count[i, other]
        for v in range(values):
            if st.voids[i, other, v]:
                opp_void[v] += 1
    for t in range(num_tiles):
        lo, hi = tb.tile_lo[t], tb.tile_hi[t]
        if (st.hands[i, seat, t >> 5] >> np.uint64((2 * t) & 63)) & ONE != ZERO:
            held[lo] += 1
            if hi != lo:
                held[hi] += 1
        elif not st.on_table[i, t]:
            unseen[lo] += 1
            if hi != lo:
                unseen[hi] += 1
    danger = smallest <= weights[H_DANGER]
    normal = play_phase(st, i) == PHASE_R6  # on open ends (not R7's arms, not R9's toes)
    for a in range(out.shape[0]):
        if a >= draw or not _has(legal, i, a):
            out[a] = -np.inf
            continue
        t = a >> 1
        if a & 1:  # side 1 attaches the high end
            end_a, end_b = tb.tile_hi[t], tb.tile_lo[t]
        else:
            end_a, end_b = tb.tile_lo[t], tb.tile_hi[t]
        keep_a, keep_b = held[end_a] - 1, held[end_b] - 1
        value = float(tb.points[t]) * (2.0 if danger else 1.0)
        if not normal:  # summed in HeuristicPolicy.scores's order: the same float64 result
            out[a] = value + weights[H_FOLLOW] * keep_b + weights[H_VOID_END] * opp_void[end_b]
            continue
        other = weights[H_FOLLOW] * keep_b + weights[H_VOID_END] * opp_void[end_b]
        if st.open_count[i, end_a] == 1:
            value -= weights[H_KEEP] * keep_a
        if end_a == end_b:  # a double on an open end starts a chicken foot (R9)
            alone = 1.0 if (keep_a == 0 and unseen[end_a] < toes) else 0.0
            out[a] = value + (weights[H_DOUBLE] + weights[H_FOOT_VOID] * opp_void[end_a]
                              + weights[H_FOOT_HELD] * min(keep_a, toes)
                              - weights[H_FOOT_ALONE] * alone)
        else:
            out[a] = value + other


@jit
def _best_of(scores, tie, bot_rng, i):
    """The int(u * k)-th of the k actions scoring within `tie` of the best, ascending."""
    top = -np.inf
    for a in range(scores.shape[0]):
        if scores[a] > top:
            top = scores[a]
    tied = 0
    for a in range(scores.shape[0]):
        if scores[a] >= top - tie:
            tied += 1
    pick = 0 if tied == 1 else int(next_uniform(bot_rng, i) * tied)
    for a in range(scores.shape[0]):
        if scores[a] >= top - tie:
            if pick == 0:
                return a
            pick -= 1
    return -1


@jit
def bot_action(st, tb, weights, kind, bot_rng, i, legal, scores, counts):
    """The action bot `kind` takes in game i, given its legal bitset legal[i] (two or more
    actions), with the scratch of `bot_scratch`."""
    if kind == RANDOM:
        return nth_bit(legal, i, int(next_uniform(bot_rng, i) * count_bits(legal, i)))
    if kind == GREEDY:
        greedy_scores(st, tb, i, legal, scores)
        return _best_of(scores, 0.0, bot_rng, i)
    first = _lowest(legal, i)
    if first >= tb.params[P_DRAW]:  # cannot place: DRAW or PASS, whichever is legal (R8)
        return first
    heuristic_scores(st, tb, weights, i, legal, scores, counts)
    return _best_of(scores, TIE, bot_rng, i)


@jit
def batch_advance(st, tb, weights, seat_kind, bot_rng, skip_forced, legal_out, stop, scores,
                  counts):
    """Play each game until an outside seat must choose or a round ends (module docstring)."""
    st, tb, weights, seat_kind, bot_rng = raw(st), raw(tb), raw(weights), raw(seat_kind), raw(bot_rng)
    legal_out, stop, scores, counts = raw(legal_out), raw(stop), raw(scores), raw(counts)
    for i in range(st.current.shape[0]):
        if st.game_over[i]:
            stop[i] = GAME_OVER
            continue
        while True:
            legal_into(st, tb, i, legal_out)
            kind = seat_kind[i, st.current[i]]
            count = count_bits(legal_out, i)
            if kind == OUTSIDE and not (skip_forced and count == 1):
                stop[i] = WAITING
                break
            if count == 1:
                action = _lowest(legal_out, i)
            else:
                action = bot_action(st, tb, weights, kind, bot_rng, i, legal_out, scores,
                                    counts)
            st.round_ended[i] = False
            apply_action(st, tb, i, action)
            if st.round_ended[i]:
                stop[i] = ROUND_ENDED
                break
