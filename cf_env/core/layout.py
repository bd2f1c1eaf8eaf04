"""The table's physical layout: which line of tiles each placed tile sits on (`Arm`).

The rules need only the open ends' values (`Engine.open_count`); the layout is kept alongside for
pictures, move names and exact snapshots. `Placement` says where a move lays its tile
(`Engine.placement`). Its own module so that the engine and the snapshot format
(`cf_env.core.snapshot`) both build arms without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass(slots=True)
class Arm:
    """One line of tiles: a spinner arm (parent -1) or a toe of the foot double ending arm `parent`.

    `tiles` are (tile id, attached value) from the inner end outward; `tip` is the open value,
    or -1 while the arm is empty (an empty spinner arm) or closed by a chicken-foot double (R10).
    """

    parent: int
    tiles: list[tuple[int, int]] = field(default_factory=list)
    tip: int = -1


class Placement(NamedTuple):
    """Where a tile action puts its tile (`Engine.placement`), by R6, R7 or R9.

    `rule` is the rule that places it now: "R9" a toe of the pending chicken foot, "R7" an empty
    arm of the centre double, "R6" the oldest open arm tip of the attached value. `arm` is the
    index in `engine.arms` the tile lands on (`len(engine.arms)` when it starts a new arm:
    `new_arm`), `parent` that arm's parent (-1: the centre double; else the arm that ends in the
    foot's double). `toe` numbers the toe (1..toes) under R9, else 0. `leaves_open` is the value
    the tile leaves open: its free end, or -1 for a double, which closes its arm and starts a
    chicken foot (R9)."""

    tile: int
    attached: int
    free_end: int
    rule: str
    arm: int
    parent: int
    new_arm: bool
    toe: int
    leaves_open: int
