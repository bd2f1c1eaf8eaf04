"""Search on the compiled rules core (`cf_env.core.kernel`): the rollout rule, a round played to
its end by it, and whole ISMCTS iterations with the tree in arrays.

Rollouts play the rules as the kernel plays them (`legal_into`, `apply_action`: R6-R11, R12 at
the round's end); nothing here restates a rule. What is here is the search's own logic.

**The rollout rule** (`rule_action`): at every decision with more than one legal action, the
legal action of highest score(a) = value[a] + weight · popcount(hand & follow[a]), where `hand`
is the mover's hand as action bits (the kernel's `hands` row: the tile played included) and
`value` (A,) float64, `follow` (A, W) uint64 are tables over action ids (`rule_tables` builds
`follow` from Python int bitsets). Ties go to the int(u · k)-th of the k tied actions in
ascending order, u from a splitmix64 stream (`cf_env.agents.kernel_bots.next_uniform`, drawn only
when there is a tie). A single legal action is played without a draw.

**`playout(st, tb, i, value, follow, weight, rng, first, legal, moves)`** plays game i's round to
its end by that rule, `first` (a legal action of the seat to move, or -1) played first instead of
the rule's choice (search: the move that expanded its tree). It stops when `apply_action` ends the
round: `round_points[i]` then holds the seats' R12 points, written before any next deal
(`apply_action` deals the next round at once unless the game is over; a search gives the
kernel tables of a config whose last round is the current one, `search_tables`, so nothing is
dealt). It plays on the slot it is given: copy the root there first (`copy_game`), so that the
root is unchanged. tests/core/test_playout.py checks it against `Engine.advance` with the same
rule as every seat's chooser: the same moves and the same points.

**`search(...)`** runs ISMCTS iterations (cf_env/agents/ismcts.py says which search and why) on
a root slot and a work slot: per iteration it copies the root to the work slot, gives the hidden
tiles one sampled deal (`deal_hidden`: the opponents' hands and the boneyard from a row of
`deals`), descends the tree (availability counted UCB1, or PUCT with a prior at the root),
expands one untried action, plays out, and backs each seat's zero-sum round reward up the path. Forced decisions are not tree nodes (the
engine's `skip_forced`): after a tree move every decision with one legal action is played. The
tree is a `Tree` of arrays (one row per node, children as a linked list in the order they were
added, so that UCB's ties go to the earlier child as a dict's iteration order gives them); its
capacity is the caller's (one node per iteration at most). tests/agents/test_ismcts.py checks it
against the same search with the tree in Python over `Engine` (`ISMCTSPolicy(search_on=
"engine")`): the same decisions and the same random draws.

**Deals** (`sample_deal`): `cf_env.core.deals.DealSampler`'s exact method, its tables built in
Python once per decision (`deal_tables`) and each deal drawn from them in compiled code with a
splitmix64 stream; permutations are Fisher-Yates shuffles instead of the sampler's sort by
uniforms (the same distribution: a uniformly random order). `Deals` falls back to the sampler
itself where it does not sample exactly. tests/agents/test_ismcts.py checks the deals against
an exact enumeration of the consistent ones.

The Python side: `KernelSearch` holds a search config's two slots, its tables, the tree and the
scratch (`load` an engine's position as the root, `run` a block of deals); `play_round` plays
one round out on a copy of a game and returns its points and moves (the tests' entry).

The compiled code allocates nothing (see cf_env/core/kernel.py's "Compilation"): the tree, the
deals and the scratch (`legal`, `path`, `moves`, `DealTables.scratch`) come from the caller.
Helpers take the arrays they read, not the whole state, where they are called per move: a call
that is not inlined passes every array of a state (a pointer and the shape of each).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import literal_unroll
from numba.extending import overload

from cf_env.agents.kernel_bots import next_uniform
from cf_env.core import checks
from cf_env.core.actions import IllegalActionError
from cf_env.core.kernel import (
    ONE,
    P_PLAYERS,
    P_ROUNDS,
    P_TARGET,
    P_TILES,
    ZERO,
    KernelBatch,
    KernelTables,
    apply_action,
    count_bits,
    is_legal,
    jit,
    legal_into,
    nth_bit,
    num_words,
    popcount,
)
from cf_env.core.raw import raw

# Columns of Tree.ints.
PLAYER, ACTION, VISITS, AVAIL, FIRST, LAST, NEXT = range(7)
NO_NODE = -1


class Tree(NamedTuple):
    """A search tree as arrays, row 0 the root. ints (C, 7) int64: the seat whose action led to
    the node (PLAYER), that action (ACTION), VISITS, AVAIL (iterations in which the action was
    legal), the FIRST and LAST child and the NEXT sibling (NO_NODE for none); total (C,) float64:
    the sum of PLAYER's rewards; tried (C, W) uint64: the actions with a child; size (1,) int64:
    rows in use."""

    ints: np.ndarray
    total: np.ndarray
    tried: np.ndarray
    size: np.ndarray


class DealTables(NamedTuple):
    """A `DealSampler`'s tables (method "exact") as `sample_deal` reads them. tiles (C,) int64:
    the constrained tiles in the sampler's order; ways (C, H) int64: the grid stride of held
    opponent j where tile i may go to it, else 0; suffix (C + 1, cells) float64: the completion
    counts; start (1,) int64; held (H,) int64: the constrained opponents (0 = seat 1); free (F,)
    int64; sizes (m,) int64: every opponent's hand size; in_pool (m,) bool: dealt from the pool;
    scratch (4, unseen + 1) int64."""

    tiles: np.ndarray
    ways: np.ndarray
    suffix: np.ndarray
    start: np.ndarray
    held: np.ndarray
    free: np.ndarray
    sizes: np.ndarray
    in_pool: np.ndarray
    scratch: np.ndarray


def deal_tables(sampler) -> DealTables | None:
    """`sampler`'s tables for `sample_deal`, or None when it does not sample by its exact
    method (`DealSampler.method`: the rejection fallback stays in Python)."""
    if sampler.method != "exact":
        return None
    held = list(sampler.held)
    cons = sampler.constrained
    ways = np.zeros((len(cons), max(len(held), 1)), np.int64)
    for i, (_, allowed) in enumerate(cons):
        for j, stride in allowed:
            ways[i, j] = stride
    m = len(sampler.sizes)
    return DealTables(
        tiles=np.array([t for t, _ in cons], np.int64),
        ways=ways,
        suffix=np.array(sampler.suffix, np.float64).reshape(len(cons) + 1, -1),
        start=np.array([sampler.start], np.int64),
        held=np.array(held, np.int64),
        free=np.array(sampler.free, np.int64),
        sizes=np.array(sampler.sizes, np.int64),
        in_pool=np.array([k not in held for k in range(m)], np.bool_),
        scratch=np.zeros((4, len(sampler.unseen) + 1), np.int64),
    )


def new_tree(capacity: int, width: int) -> Tree:
    """An empty tree of `capacity` nodes (reset it with `clear_tree` before a search)."""
    return Tree(ints=np.zeros((capacity, 7), np.int64), total=np.zeros(capacity, np.float64),
                tried=np.zeros((capacity, width), np.uint64), size=np.zeros(1, np.int64))


def clear_tree(tree: Tree) -> None:
    """Only the root, unvisited, without children."""
    tree.size[0] = 1
    tree.ints[0] = (NO_NODE, NO_NODE, 0, 1, NO_NODE, NO_NODE, NO_NODE)
    tree.total[0] = 0.0
    tree.tried[0] = 0


def grown(tree: Tree, capacity: int) -> Tree:
    """`tree` with room for at least `capacity` nodes (the same tree if it has it; else twice
    its rows or more, so that a time budget's many small blocks copy the tree rarely)."""
    have = tree.ints.shape[0]
    if have >= capacity:
        return tree
    extra = max(capacity, 2 * have) - have
    return Tree(ints=np.concatenate([tree.ints, np.zeros((extra, 7), np.int64)]),
                total=np.concatenate([tree.total, np.zeros(extra, np.float64)]),
                tried=np.concatenate([tree.tried, np.zeros((extra, tree.tried.shape[1]), np.uint64)]),
                size=tree.size)


def root_children(tree: Tree) -> list[tuple[int, int, float]]:
    """(action, visits, total) of the root's children, in the order they were added."""
    out, node = [], int(tree.ints[0, FIRST])
    while node != NO_NODE:
        row = tree.ints[node]
        out.append((int(row[ACTION]), int(row[VISITS]), float(tree.total[node])))
        node = int(row[NEXT])
    return out


def rule_tables(value, follow, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The rule's tables as the compiled code reads them: value (A,) float64 and follow (A, W)
    uint64 words, from sequences over action ids (follow[a] a Python int bitset over actions)."""
    words = np.array([[(int(bits) >> (64 * k)) & (2**64 - 1) for k in range(width)]
                      for bits in follow], dtype=np.uint64).reshape(len(follow), width)
    return np.asarray(value, np.float64).copy(), words


def search_tables(tables: KernelTables, round_index: int) -> KernelTables:
    """`tables` with the current round as the game's last (R4: rounds, no target score), so that
    `apply_action` ends the game at the round's end instead of dealing the next round."""
    params = tables.params.copy()
    params[P_ROUNDS] = round_index + 1
    params[P_TARGET] = -1
    return tables._replace(params=params)


def max_moves(config) -> int:
    """A bound on the actions of one round (`moves` and `path` rows): every placement and every
    draw takes a tile, a pass follows a draw or, with the boneyard empty, at most n - 1 others
    come before the next placement or the round's end (R8, R11)."""
    return (config.num_players + 3) * (config.num_tiles + 1)


# ---------------------------------------------------------------------------- compiled
def copy_row(a, src, dst):
    """a[dst] = a[src] for an array of any rank (the compiled forms: `_copy_row_compiled`)."""
    a[dst] = a[src]


@overload(copy_row)
def _copy_row_compiled(a, src, dst):
    """copy_row as loops per rank: nothing allocated (a row assignment may copy its source
    first), and cheaper than reshaping every array to two dimensions (docs/search/speed.md)."""
    if a.ndim == 1:
        def copy1(a, src, dst):
            a[dst] = a[src]
        return copy1
    if a.ndim == 2:
        def copy2(a, src, dst):
            for j in range(a.shape[1]):
                a[dst, j] = a[src, j]
        return copy2
    if a.ndim == 3:
        def copy3(a, src, dst):
            for j in range(a.shape[1]):
                for k in range(a.shape[2]):
                    a[dst, j, k] = a[src, j, k]
        return copy3
    return None


@jit
def copy_game(st, src, dst):
    """Game slot src of every state array into slot dst."""
    st = raw(st)
    for a in literal_unroll(st):
        copy_row(a, src, dst)


@jit
def deal_hidden(st, tb, i, deal):
    """Give game i's hidden tiles out as `deal` says: seats 1..n-1 get the next hand_count tiles
    each (their sizes are public and stay), then the boneyard the rest, the next tile drawn first.
    Seat 0's hand (the searcher's, a drawn tile included) and the table stay as they are."""
    at = 0
    for seat in range(1, tb.params[P_PLAYERS]):
        for k in range(st.hands.shape[2]):
            st.hands[i, seat, k] = ZERO
        points = 0
        for j in range(st.hand_count[i, seat]):
            tile = deal[at + j]
            for k in range(st.hands.shape[2]):
                st.hands[i, seat, k] |= tb.tile_bits[tile, k]
            points += tb.points[tile]
        st.hand_points[i, seat] = points
        at += st.hand_count[i, seat]
    start = st.bone_pos[i]
    for j in range(start, tb.params[P_TILES]):
        st.boneyard[i, j] = deal[at + j - start]


@jit
def _score(hands, i, seat, value, follow, weight, a):
    shared = 0
    for k in range(follow.shape[1]):
        shared += popcount(hands[i, seat, k] & follow[a, k])
    return value[a] + weight * shared


@jit
def rule_action(hands, i, seat, value, follow, weight, rng, legal):
    """The rule's action for `seat` (to move) in game i, hands the state's `hands` and legal[i]
    the legal bitset (module docstring). It takes arrays, not the state: a call that is not
    inlined passes every array of a state (several times this function's own work)."""
    top, best, tied = -np.inf, -1, 0
    for k in range(legal.shape[1]):
        word = legal[i, k]
        while word != ZERO:
            low = word & (~word + ONE)
            word ^= low
            a = 64 * k + popcount(low - ONE)
            score = _score(hands, i, seat, value, follow, weight, a)
            if score > top:
                top, best, tied = score, a, 1
            elif score == top:
                tied += 1
    if tied <= 1:
        return best
    pick = int(next_uniform(rng, 0) * tied)
    for k in range(legal.shape[1]):
        word = legal[i, k]
        while word != ZERO:
            low = word & (~word + ONE)
            word ^= low
            a = 64 * k + popcount(low - ONE)
            if _score(hands, i, seat, value, follow, weight, a) == top:
                if pick == 0:
                    return a
                pick -= 1
    return best


@jit
def playout(st, tb, i, value, follow, weight, rng, first, legal, moves):
    """Play game i's round to its end by the rule, `first` first (-1: none); each (seat, action)
    into moves. Returns the number of moves, or -1 (nothing played) when `first` is not legal or
    no round is in play. The seats' R12 points are then in st.round_points[i]."""
    st, tb, rng, legal, moves = raw(st), raw(tb), raw(rng), raw(legal), raw(moves)
    value, follow = raw(value), raw(follow)
    if st.game_over[i]:
        return -1
    if first >= 0 and not is_legal(st, tb, i, first):
        return -1
    count = 0
    action = first
    while True:
        if action < 0:
            legal_into(st, tb, i, legal)
            if count_bits(legal, i) == 1:
                action = nth_bit(legal, i, 0)
            else:
                action = rule_action(st.hands, i, st.current[i], value, follow, weight, rng, legal)
        moves[count, 0] = st.current[i]
        moves[count, 1] = action
        count += 1
        st.round_ended[i] = False
        apply_action(st, tb, i, action)
        if st.round_ended[i]:
            return count
        action = -1


@jit
def _step_settled(st, tb, i, action, legal):
    """A tree move, then every decision with one legal action (skip_forced); True when the round
    ended."""
    st.round_ended[i] = False
    apply_action(st, tb, i, action)
    while not st.round_ended[i]:
        legal_into(st, tb, i, legal)
        if count_bits(legal, i) != 1:
            return False
        apply_action(st, tb, i, nth_bit(legal, i, 0))
    return True


@jit
def _add_child(tree, node, player, action):
    ints = tree.ints
    child = tree.size[0]
    tree.size[0] = child + 1
    ints[child, PLAYER] = player
    ints[child, ACTION] = action
    ints[child, VISITS] = 0
    ints[child, AVAIL] = 1
    ints[child, FIRST] = NO_NODE
    ints[child, LAST] = NO_NODE
    ints[child, NEXT] = NO_NODE
    tree.total[child] = 0.0
    for k in range(tree.tried.shape[1]):
        tree.tried[child, k] = ZERO
    if ints[node, LAST] == NO_NODE:
        ints[node, FIRST] = child
    else:
        ints[ints[node, LAST], NEXT] = child
    ints[node, LAST] = child
    tree.tried[node, action >> 6] |= ONE << np.uint64(action & 63)
    return child


@jit
def _legal_has(legal, i, action):
    return (legal[i, action >> 6] >> np.uint64(action & 63)) & ONE != ZERO


@jit
def _count_avail(tree, node, legal, i):
    child = tree.ints[node, FIRST]
    while child != NO_NODE:
        if _legal_has(legal, i, tree.ints[child, ACTION]):
            tree.ints[child, AVAIL] += 1
        child = tree.ints[child, NEXT]


@jit
def _puct_action(tree, node, legal, i, prior, puct):
    """argmax over the legal actions of Q + c·P·sqrt(N)/(1 + n), unvisited Q = 0, ascending
    order first on ties; a negative prior (unknown) counts as the uniform share."""
    scale = puct * math.sqrt(tree.ints[node, VISITS] + 1)
    options = count_bits(legal, i)
    action, best = -1, -np.inf
    for j in range(options):
        a = nth_bit(legal, i, j)
        p = prior[a]
        if p < 0:
            p = 1.0 / options
        child = tree.ints[node, FIRST]
        while child != NO_NODE and tree.ints[child, ACTION] != a:
            child = tree.ints[child, NEXT]
        if child == NO_NODE or tree.ints[child, VISITS] == 0:
            value = scale * p
        else:
            visits = tree.ints[child, VISITS]
            value = tree.total[child] / visits + scale * p / (1 + visits)
        if value > best:
            action, best = a, value
    return action


@jit
def search(st, tb, root, work, deals, count, tree, rng, value, follow, weight, exploration,
           use_prior, prior, puct, points_scale, legal, path, moves, rewards):
    """`count` ISMCTS iterations from game slot `root` on slot `work`, iteration j on the deal
    deals[j] (module docstring); with `use_prior`, PUCT over prior (A,) at the root, else UCB1.
    legal (N, W), path (max_moves,) int64, moves (max_moves, 2) int32 and rewards (n,) float64
    are scratch."""
    st, tb, deals, tree, rng, prior = raw(st), raw(tb), raw(deals), raw(tree), raw(rng), raw(prior)
    value, follow, legal, path, moves = raw(value), raw(follow), raw(legal), raw(path), raw(moves)
    rewards = raw(rewards)
    n = tb.params[P_PLAYERS]
    ints = tree.ints
    for j in range(count):
        copy_game(st, root, work)
        deal_hidden(st, tb, work, deals[j])
        node, depth, finished, action = 0, 0, False, -1
        while True:  # selection and expansion
            legal_into(st, tb, work, legal)
            child = NO_NODE
            if use_prior and node == 0:
                _count_avail(tree, node, legal, work)
                action = _puct_action(tree, node, legal, work, prior, puct)
                child = ints[node, FIRST]
                while child != NO_NODE and ints[child, ACTION] != action:
                    child = ints[child, NEXT]
            else:
                fresh = 0  # the untried actions, in the root's row of legal (unused there)
                for k in range(legal.shape[1]):
                    legal[root, k] = legal[work, k] & ~tree.tried[node, k]
                    fresh += popcount(legal[root, k])
                if fresh:
                    _count_avail(tree, node, legal, work)
                    pick = 0 if fresh == 1 else int(next_uniform(rng, 0) * fresh)
                    action = nth_bit(legal, root, pick)
                else:  # UCB1 over the legal children, each availability counted as it is read
                    best = -np.inf
                    other = ints[node, FIRST]
                    while other != NO_NODE:
                        if _legal_has(legal, work, ints[other, ACTION]):
                            ints[other, AVAIL] += 1
                            visits = ints[other, VISITS]
                            score = (tree.total[other] / visits
                                     + exploration * math.sqrt(math.log(ints[other, AVAIL]) / visits))
                            if score > best:
                                child, best = other, score
                        other = ints[other, NEXT]
                    action = ints[child, ACTION]
            if child == NO_NODE:  # expansion: the new node's move is the rollout's first
                path[depth] = _add_child(tree, node, st.current[work], action)
                depth += 1
                break
            node = child
            path[depth] = node
            depth += 1
            finished = _step_settled(st, tb, work, action, legal)
            if finished:
                break
        if not finished:
            playout(st, tb, work, value, follow, weight, rng, action, legal, moves)
        total = 0
        for seat in range(n):
            total += st.round_points[work, seat]
        for seat in range(n):
            p = st.round_points[work, seat]
            rewards[seat] = ((total - p) / (n - 1) - p) / points_scale
        ints[0, VISITS] += 1
        for d in range(depth):
            node = path[d]
            ints[node, VISITS] += 1
            tree.total[node] += rewards[ints[node, PLAYER]]



@jit
def _shuffle(a, count, rng):
    """a[:count] in uniformly random order (Fisher-Yates)."""
    for f in range(count - 1, 0, -1):
        r = int(next_uniform(rng, 0) * (f + 1))
        a[f], a[r] = a[r], a[f]


@jit
def sample_deal(dt, rng, row):
    """One deal into row (`deal_hidden`'s layout) by `DealSampler.sample`'s method from its
    tables (`DealTables`): each constrained tile placed where it goes with probability
    proportional to the completions, the held opponents filled up from the free tiles in random
    order, the rest (the pool) shuffled and dealt to the other opponents and the boneyard."""
    sizes, held = dt.sizes, dt.held
    need, fill, pool, perm = dt.scratch[0], dt.scratch[1], dt.scratch[2], dt.scratch[3]
    at = 0
    for k in range(sizes.shape[0]):
        fill[k] = at
        at += sizes[k]
    bone = at
    for j in range(held.shape[0]):
        need[j] = sizes[held[j]]
    idx, npool = dt.start[0], 0
    for i in range(dt.tiles.shape[0]):
        tile = dt.tiles[i]
        w_pool = dt.suffix[i + 1, idx]
        total = w_pool
        for j in range(held.shape[0]):
            if dt.ways[i, j] > 0 and need[j] > 0:
                total += dt.suffix[i + 1, idx - dt.ways[i, j]]
        x = next_uniform(rng, 0) * total - w_pool
        if x < 0 or total == w_pool:
            pool[npool] = tile
            npool += 1
            continue
        pick = -1
        for j in range(held.shape[0]):  # the last opponent with a positive weight absorbs rounding
            stride = dt.ways[i, j]
            if stride > 0 and need[j] > 0 and dt.suffix[i + 1, idx - stride] > 0:
                pick = j
                x -= dt.suffix[i + 1, idx - stride]
                if x < 0:
                    break
        need[pick] -= 1
        idx -= dt.ways[i, pick]
        row[fill[held[pick]]] = tile
        fill[held[pick]] += 1
    free = dt.free.shape[0]
    for f in range(free):
        perm[f] = dt.free[f]
    _shuffle(perm, free, rng)
    at = 0
    for j in range(held.shape[0]):
        k = held[j]
        for _ in range(need[j]):
            row[fill[k]] = perm[at]
            fill[k] += 1
            at += 1
    for f in range(at, free):
        pool[npool] = perm[f]
        npool += 1
    _shuffle(pool, npool, rng)
    at = 0
    for k in range(sizes.shape[0]):
        if dt.in_pool[k]:
            for _ in range(sizes[k]):
                row[fill[k]] = pool[at]
                fill[k] += 1
                at += 1
    for f in range(at, npool):
        row[bone + f - at] = pool[f]


@jit
def sample_deals(dt, rng, rows, count):
    dt, rng, rows = raw(dt), raw(rng), raw(rows)
    for j in range(count):
        sample_deal(dt, rng, rows[j])


# ---------------------------------------------------------------------------- Python side
ROOT, WORK = 0, 1  # the game slots of a `KernelSearch`


class Deals:
    """One decision's deals as rows of `deal_hidden`'s layout: drawn in compiled code from the
    `DealSampler`'s tables (`sample_deal`) with a splitmix64 stream `rng` ((1,) uint64), or by
    the sampler itself where it does not sample exactly (its rejection fallback, from its own
    numpy Generator)."""

    def __init__(self, sampler, rng: np.ndarray):
        self.sampler, self.rng = sampler, rng
        self.tables = deal_tables(sampler)
        self.sizes = list(sampler.sizes)

    def fill(self, rows: np.ndarray, count: int) -> None:
        """Deals into rows[:count]."""
        if self.tables is not None:
            sample_deals(self.tables, self.rng, rows, count)
            return
        for j in range(count):
            hands, boneyard = self.sampler.sample()
            row = [t for hand in hands for t in hand]
            row += boneyard
            rows[j, : len(row)] = row

    def split(self, row: np.ndarray) -> tuple[list[list[int]], list[int]]:
        """A row as `DealSampler.sample` returns a deal: the opponents' hands, the boneyard in
        draw order (what `Engine.redeal` takes)."""
        tiles, hands, at = row.tolist(), [], 0
        for size in self.sizes:
            hands.append(tiles[at : at + size])
            at += size
        return hands, tiles[at : at + self.sampler.boneyard]


class KernelSearch:
    """What one search config's decisions run on: a kernel batch of two games (the root, loaded
    once per decision from an `Engine`, and the work slot iterations play on), kernel tables
    that end the game at the current round's end (`search_tables`), the tree, a block of deals
    and the scratch of `search` and `playout`."""

    def __init__(self, config, round_index: int, chunk: int):
        self.config = config
        self.batch = KernelBatch(config, 2)
        self.tables = search_tables(self.batch.tables, round_index)
        width, moves = num_words(config), max_moves(config)
        self.legal = np.zeros((2, width), np.uint64)
        self.path = np.zeros(moves, np.int64)
        self.moves = np.zeros((moves, 2), np.int32)
        self.rewards = np.zeros(config.num_players, np.float64)
        self.deals = np.zeros((chunk, config.num_tiles), np.int32)
        self.tree = new_tree(chunk + 1, width)

    def load(self, engine) -> None:
        """Make the root the position `engine` (of this search's config) is in; an empty tree."""
        self.batch.load(ROOT, engine)
        clear_tree(self.tree)

    def run(self, deals: Deals, count: int, rule, rng: np.ndarray, exploration: float,
            prior: np.ndarray | None, puct: float, points_scale: float) -> None:
        """`count` iterations, each on a deal from `deals`; rule = (value, follow, weight) as
        `rule_tables` gives them, rng the (1,) uint64 splitmix64 state of the search's draws."""
        count = checks.index(count, "count", 2**31)
        value, follow, weight = _checked_rule(rule, self.config)
        rng = checks.array(rng, "rng", (1,), np.uint64, writable=True)
        if prior is not None:
            prior = checks.array(prior, "prior", (self.config.num_actions,), np.float64)
        if self.deals.shape[0] < count:
            self.deals = np.zeros((count, self.deals.shape[1]), np.int32)
        deals.fill(self.deals, count)
        self.tree = tree = grown(self.tree, int(self.tree.size[0]) + count)
        use_prior = prior is not None
        search(self.batch.state, self.tables, ROOT, WORK, self.deals, count, tree, rng, value,
               follow, weight, exploration, use_prior, prior if use_prior else value, puct,
               points_scale, self.legal, self.path, self.moves, self.rewards)


def play_round(batch: KernelBatch, game: int, work: int, rule, rng: np.ndarray,
               first: int = -1) -> tuple[list[int], list[tuple[int, int]]]:
    """(R12 points of each seat, the (seat, action) moves) when game `game`'s round is played to
    its end by `rule` ((value, follow, weight), `rule_tables`' form) on a copy in slot `work`,
    `first` first, with `search_tables` (the work slot's game ends there: no next round is dealt);
    game `game` is unchanged. Raises ValueError when no round is in play and
    `IllegalActionError` when `first` is not legal."""
    if not isinstance(batch, KernelBatch):
        raise ValueError(f"play_round: batch must be a KernelBatch; got {type(batch).__name__}")
    game = checks.index(game, "play_round: game", batch.num_games)
    work = checks.index(work, "play_round: work", batch.num_games)
    if work == game:
        raise ValueError(f"play_round: work must be another slot than game ({game})")
    value, follow, weight = _checked_rule(rule, batch.config)
    rng = checks.array(rng, "play_round: rng", (1,), np.uint64, writable=True)
    if not checks.is_int(first):
        raise ValueError(f"play_round: first must be an int action id or -1; got {first!r}")
    first = int(first)
    if not -1 <= first < batch.config.num_actions:
        raise IllegalActionError(f"play_round: action {first} is not legal: first must be -1 "
                                 f"or an action id in 0..{batch.config.num_actions - 1}")
    state = batch.state
    if state.game_over[game]:
        raise ValueError("play_round: no round is in play (the game is over)")
    tables = search_tables(batch.tables, int(state.round[game]))
    if first < -1 or (first >= 0 and not is_legal(state, tables, game, first)):
        raise IllegalActionError(f"play_round: action {first} is not legal for seat "
                                 f"{int(state.current[game])}")
    copy_game(state, game, work)
    moves = np.zeros((max_moves(batch.config), 2), np.int32)
    legal = np.zeros((batch.num_games, num_words(batch.config)), np.uint64)
    count = playout(state, tables, work, value, follow, weight, rng, first, legal, moves)
    return state.round_points[work].tolist(), [tuple(m) for m in moves[:count].tolist()]


def _checked_rule(rule, config) -> tuple[np.ndarray, np.ndarray, float]:
    """`rule` as (value (A,) float64, follow (A, W) uint64, weight) for the compiled rollouts,
    else `ValueError` naming the part (A actions, W words of `config`)."""
    if not isinstance(rule, tuple) or len(rule) != 3:
        raise ValueError("rule must be a tuple (value, follow, weight) as rule_tables gives it")
    value, follow, weight = rule
    actions = config.num_actions
    value = checks.array(value, "rule value", (actions,), np.float64)
    follow = checks.array(follow, "rule follow", (actions, num_words(config)), np.uint64)
    if not isinstance(weight, (int, float, np.floating, np.integer)) or not np.isfinite(weight):
        raise ValueError(f"rule weight must be a finite number; got {weight!r}")
    return value, follow, float(weight)
