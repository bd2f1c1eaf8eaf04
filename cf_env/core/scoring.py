"""R13's standings: who wins a game from every seat's round points (R12)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def r13_key(rounds: Sequence[int], tie_break: str = "r13") -> tuple:
    """R13: one seat's standing from its round points, lower is better: the total; then, with
    `tie_break="r13"`, more zero rounds; then the lowest non-zero round. Equal keys share."""
    total = sum(rounds)
    if tie_break != "r13":
        return (total,)
    return (total, -list(rounds).count(0), min((s for s in rounds if s), default=math.inf))


def r13_winners(scores: Sequence[Sequence[int]], tie_break: str = "r13") -> list[int]:
    """R13: the seats whose standing (`r13_key`) is best; more than one share the win."""
    keys = [r13_key(rounds, tie_break) for rounds in scores]
    best = min(keys)
    return [seat for seat, key in enumerate(keys) if key == best]
