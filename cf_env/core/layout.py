"""The table's physical layout: which line of tiles each placed tile sits on (`Arm`).

The rules need only the open ends' values (`Engine.open_count`); the layout is kept alongside for
pictures, move names and exact snapshots. Its own module so that the engine and the snapshot
format (`cf_env.core.snapshot`) both build arms without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Arm:
    """One line of tiles: a spinner arm (parent -1) or a toe of the foot double ending arm `parent`.

    `tiles` are (tile id, attached value) from the inner end outward; `tip` is the open value,
    or -1 while the arm is empty (an empty spinner arm) or closed by a chicken-foot double (R10).
    """

    parent: int
    tiles: list[tuple[int, int]] = field(default_factory=list)
    tip: int = -1
