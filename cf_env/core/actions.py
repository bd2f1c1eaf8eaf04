"""The action codec — a public contract.

With T = (N+1)(N+2)/2 tiles (ids from `tiles.py`), the action space is Discrete(2T + 2):

* ``2t + 0`` — play tile t attaching its **lo** half to an open end of value lo;
* ``2t + 1`` — play tile t attaching its **hi** half (never legal for a double);
* ``2T``     — DRAW (legal only when the player cannot place and the boneyard is not empty);
* ``2T + 1`` — PASS.

Ends of equal value are interchangeable, so (tile, attached value) is the whole move; the engine
picks the physical place (empty spinner arm, toe slot, or the oldest arm tip of that value).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from cf_env.core.tiles import TileTables

DRAW = "draw"
PASS = "pass"
PLAY = "play"


class IllegalActionError(ValueError):
    """An action that is malformed or not legal now. The game state is unchanged."""


class DecodedAction(NamedTuple):
    kind: str  # PLAY, DRAW or PASS
    tile: int  # tile id, -1 unless PLAY
    attached: int  # value of the half laid against the table, -1 unless PLAY
    free_end: int  # value of the half that becomes the new open end, -1 unless PLAY


def actions_in(bits: int) -> list[int]:
    """The action ids of a legal-set bitset (bit a set <=> action a legal), ascending."""
    out = []
    while bits:
        top = bits.bit_length() - 1
        out.append(top)
        bits ^= 1 << top
    out.reverse()
    return out


def legal_masks(legal: list[int], num_actions: int) -> np.ndarray:
    """(len(legal), num_actions) bool masks from legal bitsets (`Engine.legal_bits`), built with
    one `np.unpackbits` over their bytes: the batched form of `Engine.legal_action_mask`."""
    nbytes = (num_actions + 7) // 8
    raw = b"".join([bits.to_bytes(nbytes, "little") for bits in legal])
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")
    return bits.reshape(len(legal), nbytes * 8)[:, :num_actions].astype(bool)


def encode_play(tables: TileTables, tile: int, attached: int) -> int:
    lo, hi = tables.pairs[tile]
    if attached == lo:
        return 2 * tile
    if attached == hi:
        return 2 * tile + 1
    raise ValueError(f"tile {lo}|{hi} has no {attached} half")


def decode(tables: TileTables, action: int) -> DecodedAction:
    count = tables.num_tiles
    if action == 2 * count:
        return DecodedAction(DRAW, -1, -1, -1)
    if action == 2 * count + 1:
        return DecodedAction(PASS, -1, -1, -1)
    if not 0 <= action < 2 * count:
        raise ValueError(f"action {action} is outside 0..{2 * count + 1}")
    tile, side = divmod(action, 2)
    lo, hi = tables.pairs[tile]
    return DecodedAction(PLAY, tile, hi, lo) if side else DecodedAction(PLAY, tile, lo, hi)


def describe(tables: TileTables, action: int) -> str:
    """A short human name: "play 9|4 on a 9", "draw", "pass"."""
    move = decode(tables, action)
    if move.kind != PLAY:
        return move.kind
    return f"play {move.attached}|{move.free_end} on a {move.attached}"
