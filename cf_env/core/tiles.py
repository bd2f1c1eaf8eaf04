"""Tile ids and the tables built once per set size (R1).

Tile id order is a public contract: for lo in 0..N, for hi in lo..N -> tile (lo, hi).
Action ids (see `actions.py`) are built on these ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from cf_env.core.config import num_tiles


@dataclass(frozen=True, eq=False)
class TileTables:
    """Precomputed per-set lookups; arrays are read-only so they can be shared safely."""

    max_pips: int
    num_tiles: int
    lo: np.ndarray  # (T,) int64: low pips of each tile
    hi: np.ndarray  # (T,) int64: high pips
    pips: np.ndarray  # (T,) int64: lo + hi
    is_double: np.ndarray  # (T,) bool
    tile_id: np.ndarray  # (N+1, N+1) int64: id of tile {a, b}, symmetric
    double_id: np.ndarray  # (N+1,) int64: id of the double (v, v)
    # Per attached value v: the tiles holding v and, for each, the action that attaches its v half.
    tiles_with: tuple[np.ndarray, ...]
    attach_actions: tuple[np.ndarray, ...]
    # Per tile: (attached value, action id) for each way it can be attached. One way for a double.
    placements: tuple[tuple[tuple[int, int], ...], ...]
    pairs: tuple[tuple[int, int], ...]  # (lo, hi) per id, as Python ints for hot paths
    # The same tables as bitsets over action ids (Python ints, bit a = action a), which is how the
    # engine decides legality: (hand's actions) & (actions attaching a playable value) is one AND.
    tile_bits: tuple[int, ...]  # per tile: the bits of the actions that play it
    attach_bits: tuple[int, ...]  # per value v: the bits of every action attaching a v half

    def other_end(self, tile: int, attached: int) -> int:
        lo, hi = self.pairs[tile]
        return hi if attached == lo else lo

    def points(self, double_blank_value: int) -> np.ndarray:
        """R12: points per tile; the double-blank counts `double_blank_value`."""
        pts = self.pips.copy()
        pts[self.double_id[0]] = double_blank_value
        return pts


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@cache
def tile_tables(max_pips: int) -> TileTables:
    pairs = tuple((lo, hi) for lo in range(max_pips + 1) for hi in range(lo, max_pips + 1))
    count = num_tiles(max_pips)
    assert len(pairs) == count
    lo = np.array([p[0] for p in pairs], dtype=np.int64)
    hi = np.array([p[1] for p in pairs], dtype=np.int64)
    tile_id = np.empty((max_pips + 1, max_pips + 1), dtype=np.int64)
    for t, (a, b) in enumerate(pairs):
        tile_id[a, b] = tile_id[b, a] = t
    tiles_with, attach_actions = [], []
    for v in range(max_pips + 1):
        ids = np.array([t for t, (a, b) in enumerate(pairs) if v in (a, b)], dtype=np.int64)
        # Attaching the lo half is action 2t, the hi half 2t+1; a double only ever uses 2t.
        acts = np.array([2 * t + (0 if pairs[t][0] == v else 1) for t in ids], dtype=np.int64)
        tiles_with.append(_readonly(ids))
        attach_actions.append(_readonly(acts))
    placements = tuple(
        ((a, 2 * t),) if a == b else ((a, 2 * t), (b, 2 * t + 1)) for t, (a, b) in enumerate(pairs)
    )
    tile_bits = tuple(sum(1 << action for _, action in ways) for ways in placements)
    attach_bits = tuple(sum(1 << int(action) for action in acts) for acts in attach_actions)
    return TileTables(
        max_pips=max_pips,
        num_tiles=count,
        lo=_readonly(lo),
        hi=_readonly(hi),
        pips=_readonly(lo + hi),
        is_double=_readonly(lo == hi),
        tile_id=_readonly(tile_id),
        double_id=_readonly(np.array([tile_id[v, v] for v in range(max_pips + 1)])),
        tiles_with=tuple(tiles_with),
        attach_actions=tuple(attach_actions),
        placements=placements,
        pairs=pairs,
        tile_bits=tile_bits,
        attach_bits=attach_bits,
    )


def tile_ids(values: object, count: int, what: str) -> list[int]:
    """`values` as a list of plain tile ids 0..count-1 (numpy integers accepted)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{what} must be a sequence of tile ids; got {values!r}")
    ids = list(values)
    for t in ids:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)) or not 0 <= t < count:
            raise ValueError(f"{what}: {t!r} is not a tile id (an int 0..{count - 1})")
    return [int(t) for t in ids]
