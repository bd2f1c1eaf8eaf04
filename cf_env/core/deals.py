"""Sampling the hidden tiles: deals consistent with what one player has seen (for search).

A player sees its own hand, the table, every hand's size, the boneyard's size and, per opponent,
the values that opponent showed it lacks (it drew or passed while they were playable, R8). A
**consistent deal** gives the unseen tiles (neither in my hand nor on the table) to the opponents,
in their sizes, and to the boneyard, in an order, with no opponent holding a tile that carries a
value it is void in. `DealSampler` draws deals **exactly uniformly** over the consistent ones:

* Tiles that no void excludes anywhere ("free" tiles) are interchangeable, and so are the
  opponents without voids and the boneyard (the "pool"): only the constrained opponents need
  counting. The number of ways to finish a deal from "the constrained opponents still need r_j
  tiles" is a coefficient of a product of polynomials, one factor (pool + Σ allowed x_j) per
  constrained tile times the free tiles' multinomial. It is tabulated once per decision over the
  grid of r (numpy, one array per constrained tile, each scaled to its maximum: only ratios
  within one array are ever used).
* A sample then places the constrained tiles one by one, each where it goes with probability
  proportional to the completions (exact sequential sampling), gives the constrained opponents
  their remaining counts from the free tiles in random order, and deals the pool (the rest)
  to the unconstrained opponents and the boneyard in a uniformly random order.

Per sample that is one pass over the constrained tiles and one or two permutations; the table
is built once per decision (timings: docs/search/results.md).

Two situations leave the exact method:
* **No consistent deal.** The void record can be stale: a player who draws a playable tile may
  keep it (R8), and its hand then holds one tile of a value it is recorded as lacking. When the
  voids admit no deal, the sampler drops the voids of the opponent whose voids exclude the most
  unseen tiles, then the next, until deals exist (`relaxed` lists the egocentric seats, 1..n-1).
* **A grid too large** (more than `max_cells` counts: many constrained opponents with big
  hands, e.g. 8 players late in a round): up to `REJECTION_TRIES` uniform deals are drawn and
  the first consistent one kept (exact when one is found), else the most constrained opponent is
  filled first (approximate; `method` says which was set up).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from cf_env.core.tiles import TileTables

REJECTION_TRIES = 64
MAX_CELLS = 1 << 18  # counts tabulated per decision (grid cells x constrained tiles)


class Uniforms:
    """Uniform floats in [0, 1) from one numpy Generator, drawn in blocks.

    One Generator call fills a block, so a float costs a list pop instead of a call into numpy.
    The numbers are the generator's own in its own order, so everything stays reproducible from
    the policy's seed (one RNG per policy)."""

    __slots__ = ("rng", "_block", "_buffer", "_next")

    def __init__(self, rng: np.random.Generator, block: int = 2048):
        self.rng, self._block = rng, block
        self._buffer: list[float] = []
        self._next = 0

    def __call__(self) -> float:
        i = self._next
        if i == len(self._buffer):
            self._buffer, i = self.rng.random(self._block).tolist(), 0
        self._next = i + 1
        return self._buffer[i]

    def permutation(self, n: int) -> list[int]:
        """A uniformly random order of range(n): the indices sorted by n fresh uniforms."""
        i = self._next
        if i + n > len(self._buffer):
            self._buffer, i = self.rng.random(max(self._block, n)).tolist(), 0
        self._next = i + n
        return sorted(range(n), key=self._buffer[i : i + n].__getitem__)


class DealSampler:
    """Uniform consistent deals of the unseen tiles (module docstring) for one information set.

    `sizes[k]` is opponent k's hand size and `voids[k]` its void values (egocentric: opponent 0
    is the seat after the observer). `sample()` returns (hands, boneyard): one tile-id list per
    opponent and the boneyard with the next tile drawn first.
    """

    def __init__(
        self,
        unseen: list[int],
        sizes: list[int],
        boneyard: int,
        voids: list[set[int]],
        tables: TileTables,
        rng: np.random.Generator,
        max_cells: int = MAX_CELLS,
    ):
        if sum(sizes) + boneyard != len(unseen):
            raise ValueError(
                f"inconsistent view: {len(unseen)} unseen tiles but the opponents hold {sizes} "
                f"and the boneyard {boneyard}"
            )
        self.unseen, self.sizes, self.boneyard = list(unseen), list(sizes), boneyard
        self.pairs = tables.pairs
        self.rng = rng
        self.uniform = Uniforms(rng)
        self.voids = [set(v) for v in voids]
        self.relaxed: list[int] = []
        while not self._setup(max_cells):
            # No consistent deal: the void record is stale (a kept playable drawn tile, R8).
            k = max(
                (k for k in range(len(sizes)) if self.voids[k]),
                key=lambda k: sum(1 for t in unseen if not self.allowed(t, k)),
            )
            self.voids[k] = set()
            self.relaxed.append(k + 1)

    @classmethod
    def from_state(cls, state, tables: TileTables, rng: np.random.Generator, **kw) -> DealSampler:
        """From an `ObservedState` (`cf_env.core.observation.ObservationDecoder`)."""
        unseen = np.flatnonzero(~(state.hand | state.table)).tolist()
        voids = [set(np.flatnonzero(row).tolist()) for row in state.voids]
        sizes = [int(k) for k in state.hand_sizes[1:]]
        return cls(unseen, sizes, int(state.boneyard), voids, tables, rng, **kw)

    # ------------------------------------------------------------------ set-up
    def allowed(self, t: int, k: int) -> bool:
        """Whether unseen tile t may be in hidden hand k: it carries no value that seat showed
        it lacks (R8)."""
        lo, hi = self.pairs[t]
        return lo not in self.voids[k] and hi not in self.voids[k]

    def _setup(self, max_cells: int) -> bool:
        """Tabulate the completion counts; False when no consistent deal exists."""
        m = len(self.sizes)
        excluded = [[t for t in self.unseen if not self.allowed(t, k)] for k in range(m)]
        self.held = [k for k in range(m) if excluded[k] and self.sizes[k]]  # constrained opponents
        self.pool_seats = [k for k in range(m) if k not in self.held]
        held = self.held
        self.free = [t for t in self.unseen if all(self.allowed(t, k) for k in held)]
        constrained = [t for t in self.unseen if not all(self.allowed(t, k) for k in held)]
        dims = [self.sizes[k] + 1 for k in held]
        cells = math.prod(dims)
        if cells * (len(constrained) + 1) > max_cells:
            self.method = "rejection"
            return self._rejection_feasible()
        self.method = "exact"
        strides = [math.prod(dims[j + 1 :]) for j in range(len(held))]
        # Free tiles fill the remaining counts r, the rest go to the pool:
        # F! / (prod r_j! (F - sum r)!) ways, kept as logs until scaled (F! itself can overflow).
        F = len(self.free)
        lg = np.array([math.lgamma(i + 1) for i in range(max(F, max(dims, default=1)) + 1)])
        grid = np.indices(dims).reshape(len(dims), -1) if dims else np.zeros((0, 1), np.int64)
        rest = F - grid.sum(axis=0)
        logw = np.where(rest >= 0, -lg[grid].sum(axis=0) - lg[np.maximum(rest, 0)], -np.inf)
        table = np.exp(logw - logw.max()) if np.isfinite(logw).any() else np.zeros_like(logw)
        table = table.reshape(dims) if dims else table.reshape(())
        # Backwards over the constrained tiles: a tile goes to the pool, or to an allowed
        # opponent with room (one grid step down along its axis).
        suffix = [table]
        allowed = []
        for t in reversed(constrained):
            ways = [j for j, k in enumerate(held) if self.allowed(t, k)]
            nxt = table.copy()
            for j in ways:
                dst = [slice(None)] * len(dims)
                src = [slice(None)] * len(dims)
                dst[j], src[j] = slice(1, None), slice(None, -1)
                nxt[tuple(dst)] += table[tuple(src)]
            top = nxt.max()
            table = nxt / top if top > 0 else nxt
            suffix.append(table)
            allowed.append([(j, strides[j]) for j in ways])
        suffix.reverse()
        allowed.reverse()
        start = sum(s * (self.sizes[k]) for s, k in zip(strides, held))
        if suffix[0].reshape(-1)[start] <= 0:
            return False
        self.constrained = list(zip(constrained, allowed))
        # Python lists: a sample reads a few cells per tile, and list indexing is the cheapest.
        self.suffix = [s.reshape(-1).tolist() for s in suffix]
        self.start = start
        return True

    def _rejection_feasible(self) -> bool:
        """Whether some consistent deal exists, from a greedy fill (a sufficient check)."""
        self.constrained = []
        return self._fill(list(self.unseen), strict=True) is not None

    # ------------------------------------------------------------------ sampling
    def sample(self) -> tuple[list[list[int]], list[int]]:
        if self.method != "exact":
            return self._sample_rejection()
        sizes, held, u = self.sizes, self.held, self.uniform
        hands: list[list[int]] = [[] for _ in sizes]
        need = [sizes[k] for k in held]
        pool: list[int] = []
        idx, suffix = self.start, self.suffix
        for i, (t, ways) in enumerate(self.constrained):
            cells = suffix[i + 1]
            total = w_pool = cells[idx]
            for j, stride in ways:
                if need[j]:
                    total += cells[idx - stride]
            x = u() * total - w_pool
            if x < 0 or total == w_pool:
                pool.append(t)
                continue
            for j, stride in ways:  # the last opponent with a positive weight absorbs rounding
                if need[j] and cells[idx - stride] > 0:
                    pick, step = j, stride
                    x -= cells[idx - stride]
                    if x < 0:
                        break
            need[pick] -= 1
            idx -= step
            hands[held[pick]].append(t)
        free = self.free
        order = self.uniform.permutation(len(free))
        at = 0
        for j, k in enumerate(held):
            take = order[at : at + need[j]]
            hands[k].extend(free[i] for i in take)
            at += need[j]
        if pool:
            pool.extend(free[i] for i in order[at:])
            pool = [pool[i] for i in self.uniform.permutation(len(pool))]
        else:  # the free tiles left are in uniformly random order already
            pool = [free[i] for i in order[at:]]
        at = 0
        for k in self.pool_seats:
            hands[k] = pool[at : at + sizes[k]]
            at += sizes[k]
        return hands, pool[at:]

    def _sample_rejection(self) -> tuple[list[list[int]], list[int]]:
        tiles = self.unseen
        for _ in range(REJECTION_TRIES):
            order = [tiles[i] for i in self.rng.permutation(len(tiles)).tolist()]
            hands, at = [], 0
            for size in self.sizes:
                hands.append(order[at : at + size])
                at += size
            if all(self.allowed(t, k) for k, hand in enumerate(hands) for t in hand):
                return hands, order[at:]
        shuffled = [tiles[i] for i in self.rng.permutation(len(tiles)).tolist()]
        dealt = self._fill(shuffled, strict=False)
        assert dealt is not None  # a non-strict fill always succeeds
        return dealt

    def _fill(self, tiles: list[int], strict: bool) -> tuple[list[list[int]], list[int]] | None:
        """The most constrained opponent picks first from `tiles` (in their order), taking
        tiles it may hold; strict: None when one cannot be served, else it takes any tiles."""
        m = len(self.sizes)
        fits = [[self.allowed(t, k) for t in tiles] for k in range(m)]
        taken = [False] * len(tiles)
        hands: list[list[int]] = [[] for _ in range(m)]
        for k in sorted(range(m), key=lambda k: sum(fits[k])):
            want = self.sizes[k]
            for i, t in enumerate(tiles):
                if len(hands[k]) == want:
                    break
                if fits[k][i] and not taken[i]:
                    taken[i] = True
                    hands[k].append(t)
            if len(hands[k]) < want:
                if strict:
                    return None
                for i, t in enumerate(tiles):
                    if len(hands[k]) == want:
                        break
                    if not taken[i]:
                        taken[i] = True
                        hands[k].append(t)
        return hands, [t for i, t in enumerate(tiles) if not taken[i]]


def redeal_rows(engine, hands: Sequence[Sequence[int]], boneyard: Sequence[int]) -> list[bytes]:
    """The hands of a re-deal of `engine`'s hidden tiles (`Engine.redeal`) as rows of its 0/1
    hand board (`count` bytes per seat), once checked: it keeps everything public (every hand's
    size, the boneyard's size, the table: each tile off the table dealt exactly once, R1, R3)
    and a drawn tile in the hand of the seat that drew it (R8). Raises `ValueError` naming the
    problem."""
    n, count = engine.config.num_players, engine.config.num_tiles
    if len(hands) != n:
        raise ValueError(f"redeal: {len(hands)} hands given for {n} seats")
    sizes = engine.hand_counts
    for seat, hand in enumerate(hands):
        if len(hand) != sizes[seat]:
            raise ValueError(
                f"redeal: hand {seat} gets {len(hand)} tiles but holds "
                f"{sizes[seat]} (hand sizes are public and stay as they are)"
            )
    stock = len(engine.boneyard)
    if len(boneyard) != stock:
        raise ValueError(f"redeal: the boneyard gets {len(boneyard)} tiles but holds {stock}")
    # Each place's tiles as one int with byte t set to 1 for tile t: the layout of the board, so
    # a hand's row is its int's bytes, and the check is one sum: every byte of (deal + table)
    # must be exactly 1.
    spread = _byte_spread(count)
    try:
        rows = [sum(map(spread.__getitem__, hand)) for hand in hands]
        dealt = sum(rows) + sum(map(spread.__getitem__, boneyard))
    except (KeyError, TypeError):
        dealt = -1
    table = int.from_bytes(engine.on_table.tobytes(), "little")
    if dealt < 0 or dealt + table != spread[count]:
        raise ValueError(_redeal_error(engine, hands, boneyard))
    drawn, current = engine.drawn_tile, engine.current
    if drawn >= 0 and not rows[current] >> 8 * drawn & 1:
        raise ValueError(
            f"redeal: the drawn tile {list(engine.tables.pairs[drawn])} must stay in "
            f"the hand of seat {current}, which drew it (R8)"
        )
    return [row.to_bytes(count, "little") for row in rows]


def _redeal_error(engine, hands: Sequence[Sequence[int]], boneyard: Sequence[int]) -> str:
    """What is wrong with a deal `redeal_rows` refused (the slow path: names the first culprit)."""
    count, seen = engine.config.num_tiles, {}
    for place, tiles in [*((f"hand {s}", h) for s, h in enumerate(hands)), ("the boneyard", boneyard)]:
        for t in tiles:
            if type(t) is not int or not 0 <= t < count:
                return f"redeal: {place} names {t!r}, not a tile id (an int 0..{count - 1})"
            pair = list(engine.tables.pairs[t])
            if engine.on_table[t]:
                return f"redeal: {place} names tile {pair}, which is on the table (public)"
            if t in seen:
                return f"redeal: tile {pair} is dealt twice ({seen[t]} and {place})"
            seen[t] = place
    return "redeal: the deal does not hold exactly the tiles off the table"


@functools.cache
def _byte_spread(count: int) -> dict[int, int]:
    """{tile id: 1 << 8 * id} for ids 0..count-1, and [count]: every tile's byte set."""
    spread = {t: 1 << 8 * t for t in range(count)}
    spread[count] = int.from_bytes(b"\x01" * count, "little")
    return spread
